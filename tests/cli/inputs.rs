//! Inputs that cannot be rewound — pipes, FIFOs, `<(...)`, `/dev/stdin` — are read once,
//! as standard input is, with the same results as the file itself.

use std::fs;
use std::process::{Command, Stdio};

use crate::QUAKES;
use crate::harness::{Stdin, command, finished, gzip, json, run_with};

/// Runs a command whose input is a FIFO fed by another thread, as `<(...)` gives.
fn through_fifo(args: &[&str]) -> crate::harness::Run {
    let dir = tempfile::Builder::new().prefix("ratelimit-test-").tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || fs::write(fifo, QUAKES).unwrap())
    };
    let out = command().args(args).arg(&fifo).stdin(Stdio::null()).output().unwrap();
    writer.join().unwrap();
    finished(out)
}

/// Parses JSON output, and leaves out the input's name, the one thing that may differ.
fn without_input(text: &str) -> serde_json::Value {
    fn strip(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Array(items) => items.iter_mut().for_each(strip),
            serde_json::Value::Object(map) => {
                map.remove("input");
                map.values_mut().for_each(strip);
            }
            _ => {}
        }
    }
    let mut value = json(text);
    strip(&mut value);
    value
}

#[test]
fn a_fifo_is_read_once_like_a_pipe() {
    // QUAKES is newest first: a file is read twice to sort it; a FIFO is sorted in memory.
    let file = crate::harness::temp_file("quakes-fifo.csv", QUAKES);
    let file = file.to_str().unwrap();
    for args in [
        &["replay", "--algo", "leaky-queue", "--rate", "2/h", "--burst", "2", "--format", "json"][..],
        &["compare", "--rate", "2/h", "--key", "magType", "--format", "json"],
        &["min-bucket", "--rate", "1/h,2/h", "--format", "json"],
        &["min-rate", "--burst", "1,3", "--format", "json"],
    ] {
        let from_file = run_with(&[args, &[file]].concat(), Stdin::Null).ok();
        assert_eq!(without_input(&through_fifo(args).ok()), without_input(&from_file), "{args:?}");
    }
}

#[test]
fn dev_stdin_is_read_as_standard_input() {
    let args = ["min-bucket", "/dev/stdin", "--rate", "2/h"];
    let piped = run_with(&args, Stdin::Pipe(QUAKES)).ok();
    let dash = run_with(&["min-bucket", "-", "--rate", "2/h"], Stdin::Pipe(QUAKES)).ok();
    assert_eq!(piped, dash);
    // Before, this was "cannot rewind the input: Illegal seek", naming no file.
    assert!(piped.contains("2/h"), "{piped}");
}

/// A catalog of `rows` rows a minute apart, each with a quoted place that spans two lines,
/// so that a line start is a row start only every other line, and a piece of the file read
/// on its own thread most often starts inside a quoted field.
fn quoted_line_breaks(rows: usize, bad: Option<usize>) -> String {
    let mut csv = String::from("time,place,net\n");
    for i in 0..rows {
        let (h, m) = (i / 60 % 24, i % 60);
        let day = 1 + i / 1440;
        let time = if bad == Some(i) {
            "never".to_owned()
        } else {
            format!("2025-01-{day:02}T{h:02}:{m:02}:00Z")
        };
        csv.push_str(&format!("{time},\"{i} km N of\n{time},Somewhere\",n{}\n", i % 5));
    }
    csv
}

#[test]
fn a_file_read_in_pieces_gives_what_one_thread_gives_even_across_quoted_line_breaks() {
    // 12,000 rows of about 70 bytes: enough for pieces on every thread.
    let file = crate::harness::temp_file("quoted.csv", &quoted_line_breaks(12_000, None));
    let path = file.to_str().unwrap();
    let args = ["compare", path, "--rate", "20/h", "--key", "net", "--format", "json"];
    let one = run_with(&[&args[..], &["--threads", "1"]].concat(), Stdin::Null).ok();
    assert_eq!(json(&one)[0]["events"], 12_000);
    for threads in ["2", "3", "7"] {
        let many = run_with(&[&args[..], &["--threads", threads]].concat(), Stdin::Null).ok();
        assert!(one == many, "--threads {threads} differs from --threads 1");
    }
    // Through a pipe, cut into blocks of 1 MiB by one thread and parsed by the others:
    // 60,000 rows make five blocks; with a bad row far in, the same error.
    for bad in [None, Some(50_000)] {
        let text = quoted_line_breaks(60_000, bad);
        let file = crate::harness::temp_file("big.csv", &text);
        let path = file.to_str().unwrap();
        let args = ["replay", path, "--algo", "gcra", "--rate", "20/h", "--key", "net"];
        let one = run_with(&[&args[..], &["--threads", "1"]].concat(), Stdin::Null);
        for threads in ["1", "2", "3"] {
            let piped = ["replay", "-", "--algo", "gcra", "--rate", "20/h", "--key", "net"];
            let out = run_with(&[&piped[..], &["--threads", threads]].concat(), Stdin::Pipe(&text));
            assert_eq!(out.code, one.code, "{}", out.stderr);
            assert_eq!(out.stdout.replace("<stdin>", path), one.stdout, "--threads {threads}");
            assert_eq!(out.stderr.replace("<stdin>", path), one.stderr, "--threads {threads}");
        }
    }
    // A bad row far into the file: the same line, and with --skip-bad the same count.
    let file = crate::harness::temp_file("bad.csv", &quoted_line_breaks(12_000, Some(9_000)));
    let path = file.to_str().unwrap();
    for threads in ["1", "2"] {
        let args = ["replay", path, "--algo", "gcra", "--rate", "5/h", "--threads", threads];
        let err = run_with(&args, Stdin::Null).error();
        assert!(err.contains("line 18002, field `time`: \"never\""), "{threads}: {err}");
        let skipped = [&args[..], &["--skip-bad", "1", "--format", "json"]].concat();
        let out = finished(command().args(&skipped).stdin(Stdio::null()).output().unwrap());
        assert_eq!(json(&out.stdout)["events"], 11_999, "{threads}");
        assert!(out.stderr.contains("skipped 1 bad row"), "{}", out.stderr);
    }
}

#[test]
fn pieces_count_lines_as_the_csv_crate_does_with_crlf_and_blank_lines() {
    // The csv crate says a row is on the line where the row before it ended: with CRLF,
    // one less than its own, and before blank lines, that of the first. Every thread count
    // must say what one thread says, in its error and in what it reads.
    let mut csv = String::from("time,net\r\n");
    for i in 0..9_000 {
        let (h, m) = (i / 60 % 24, i % 60);
        let day = 1 + i / 1440;
        let time = if i == 7_777 {
            "never".to_owned()
        } else {
            format!("2025-01-{day:02}T{h:02}:{m:02}:00Z")
        };
        let blank = if i % 7 == 0 { "\r\n\n" } else { "" };
        csv.push_str(&format!("{time},\"n{}\"\r\n{blank}", i % 3));
    }
    let file = crate::harness::temp_file("crlf.csv", &csv);
    let path = file.to_str().unwrap();
    let args = ["replay", path, "--algo", "gcra", "--rate", "5/h", "--key", "net"];
    let one = run_with(&[&args[..], &["--threads", "1"]].concat(), Stdin::Null).error();
    assert!(one.contains("field `time`: \"never\""), "{one}");
    let two = run_with(&[&args[..], &["--threads", "2"]].concat(), Stdin::Null).error();
    assert_eq!(one, two);
    let skip = ["--skip-bad", "1", "--format", "json"];
    let one = run_with(&[&args[..], &skip, &["--threads", "1"]].concat(), Stdin::Null).ok();
    let two = run_with(&[&args[..], &skip, &["--threads", "2"]].concat(), Stdin::Null).ok();
    assert_eq!(one, two);
    assert_eq!(json(&one)["events"], 8_999);
    // And through a pipe, in blocks.
    let piped = ["replay", "-", "--algo", "gcra", "--rate", "5/h", "--key", "net"];
    let error = run_with(&[&args[..], &["--threads", "1"]].concat(), Stdin::Null).error();
    for threads in ["1", "2"] {
        let with = [&piped[..], &["--threads", threads]].concat();
        let err = run_with(&with, Stdin::Pipe(&csv)).error();
        assert_eq!(err, error.replace(path, "<stdin>"), "--threads {threads}");
        let out = run_with(&[&with[..], &skip].concat(), Stdin::Pipe(&csv)).ok();
        assert_eq!(out.replace("<stdin>", path), one, "--threads {threads}");
    }
}

#[test]
fn a_reading_resumed_at_a_bad_piece_keeps_its_line_numbers() {
    // The rows after a bad row are read again on one thread from the piece's start. The
    // csv crate's `seek` does nothing when the place asked for is where its reader thinks
    // it is, which it decides after reading a row from where the file stood: here the
    // header's 64 KiB read left it at byte 65536, and a line break at 65550 makes that row
    // 15 bytes, the header's length, the piece's start. The error must still be on line 4.
    let mut csv = String::from("time,net,place\n");
    csv.push_str(
        "2025-01-01T00:00:00Z,a,x\n2025-01-01T00:01:00Z,a,x\n2025-01-01T00:02:00Z,a,z\rw\n",
    );
    let mut minute = 3;
    let row = |minute: usize, place: &str| {
        format!(
            "2025-01-{:02}T{:02}:{:02}:00Z,a,{place}\n",
            1 + minute / 1440,
            minute / 60 % 24,
            minute % 60
        )
    };
    while csv.len() + 2 * 25 < 65_550 {
        csv.push_str(&row(minute, "x"));
        minute += 1;
    }
    // The row whose line break falls at byte 65550.
    let place = "x".repeat(65_550 - csv.len() - 23);
    csv.push_str(&row(minute, &place));
    assert_eq!(csv.as_bytes()[65_550], b'\n');
    while csv.len() < 200_000 {
        minute += 1;
        csv.push_str(&row(minute, "x"));
    }
    let file = crate::harness::temp_file("resumed.csv", &csv);
    let path = file.to_str().unwrap();
    for threads in ["1", "2"] {
        let args = ["replay", path, "--algo", "gcra", "--rate", "5/h", "--threads", threads];
        let err = run_with(&args, Stdin::Null).error();
        assert_eq!(
            err,
            format!("ratelimit: {path}: line 4: expected 3 fields like the header, found 1")
        );
    }
}

/// A file of random rows, as a fuzzer would make them: quoted commas, quoted line breaks,
/// doubled quotes, quotes inside fields, text after a closing quote, with LF or CRLF line
/// ends; and unless `clean`, now and then a lone CR (which makes a short row), a short
/// row or a bad time.
fn random_catalog(seed: u64, clean: bool) -> String {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        usize::try_from(state % n as u64).unwrap()
    };
    let places = ["x", "\"a, b\"", "\"multi\nline\"", "\"q\"\"q\"", "p\"q", "\"a\"b", ""];
    let bad = move |next: &mut dyn FnMut(usize) -> usize| !clean && next(6000) == 0;
    let nets = ["a", "b", "\"c\"", ""];
    let end = if next(2) == 0 { "\n" } else { "\r\n" };
    let mut csv = format!("time,net,place{end}");
    for i in 0..7_000 {
        let time = if bad(&mut next) {
            "bad".to_owned()
        } else {
            format!("2025-01-{:02}T{:02}:{:02}:00Z", 1 + i / 1440, i / 60 % 24, i % 60)
        };
        let net = nets[next(nets.len())];
        if bad(&mut next) {
            csv.push_str(&format!("{time},{net}{end}"));
        } else if bad(&mut next) {
            csv.push_str(&format!("{time},{net},z\rw{end}"));
        } else {
            csv.push_str(&format!("{time},{net},{}{end}", places[next(places.len())]));
        }
    }
    csv
}

#[test]
fn random_files_read_alike_from_a_file_and_a_pipe_on_any_number_of_threads() {
    // A pipe on one thread is the reading the csv crate does row by row: the reference.
    let mut codes = Vec::new();
    for seed in 1..=6 {
        let text = random_catalog(seed, seed % 3 == 0);
        let file = crate::harness::temp_file("random.csv", &text);
        let path = file.to_str().unwrap();
        let skip: &[&str] = if seed % 2 == 0 { &["--skip-bad", "3"] } else { &[] };
        let run = |input: &str, threads: &str| {
            let args = ["replay", input, "--algo", "gcra", "--rate", "20/h", "--key", "net"];
            let args = [&args[..], &["--format", "json", "--top", "0", "--threads", threads], skip];
            let stdin = if input == "-" { Stdin::Pipe(&text) } else { Stdin::Null };
            let out = run_with(&args.concat(), stdin);
            (out.code, out.stdout.replace("<stdin>", path), out.stderr.replace("<stdin>", path))
        };
        let reference = run("-", "1");
        for (input, threads) in [(path, "1"), (path, "2"), (path, "3"), ("-", "2"), ("-", "3")] {
            assert_eq!(run(input, threads), reference, "seed {seed}, {input} on {threads}");
        }
        codes.push(reference.0);
    }
    // Both whole readings and errors were compared.
    assert!(codes.contains(&0) && codes.contains(&2), "{codes:?}");
}

/// `records` earthquakes a minute apart as JSON Lines (CRLF, a blank line now and then)
/// and as a GeoJSON FeatureCollection, each with a place that holds what a piece's guess
/// of a record start looks for (`},{`, escaped quotes): the pieces of the GeoJSON most
/// often start at a wrong guess. Record `bad`, if any, has no time.
fn json_records(records: usize, bad: Option<usize>) -> (String, String) {
    let (mut lines, mut features) = (String::new(), Vec::new());
    for i in 0..records {
        let time = match bad == Some(i) {
            true => "never".to_owned(),
            false => format!("2025-01-{:02}T{:02}:{:02}:00Z", 1 + i / 1440, i / 60 % 24, i % 60),
        };
        let place = format!("{i} km N of \\\"A\\\"}},{{\\\"x\\\":[{{}}], \\u00e9");
        lines.push_str(&format!(
            "{{\"time\":\"{time}\",\"place\":\"{place}\",\"net\":\"n{}\"}}\r\n",
            i % 5
        ));
        if i % 7 == 0 {
            lines.push_str("  \r\n");
        }
        // GeoJSON's times are epoch milliseconds, as USGS writes them.
        let ms = match bad == Some(i) {
            true => "\"never\"".to_owned(),
            false => (1_735_689_600_000u64 + 60_000 * i as u64).to_string(),
        };
        features.push(format!(
            "{{\"type\":\"Feature\",\"properties\":{{\"time\":{ms},\"place\":\"{place}}},{{\",\"net\":\"n{}\"}},\"geometry\":{{\"coordinates\":[1,2]}}}}",
            i % 5
        ));
    }
    let geojson = format!(
        "{{\"type\":\"FeatureCollection\",\"features\":[\n{}\n],\"bbox\":[0]}}\n",
        features.join(if bad.is_some() { ",\n" } else { "," })
    );
    (lines, geojson)
}

#[test]
fn json_lines_and_geojson_read_in_pieces_give_what_one_thread_gives() {
    // A pipe is read on one thread, record by record: what a file read in pieces must give.
    for bad in [None, Some(9_000)] {
        let (lines, geojson) = json_records(12_000, bad);
        for (name, text) in [("quakes.jsonl", &lines), ("quakes.geojson", &geojson)] {
            let file = crate::harness::temp_file(name, text);
            let path = file.to_str().unwrap();
            let format = if name.ends_with("jsonl") { "jsonl" } else { "geojson" };
            let args = ["compare", "--rate", "20/h", "--key", "net", "--format", "json"];
            let piped = [&args[..], &["-", "--input-format", format]].concat();
            let one = run_with(&piped, Stdin::Pipe(text));
            match bad {
                None => assert!(one.stdout.contains("\"events\": 12000"), "{name}: {one:?}"),
                Some(_) => assert!(one.stderr.contains(": \"never\" is not"), "{one:?}"),
            }
            for threads in ["1", "2", "3"] {
                let out =
                    run_with(&[&args[..], &[path, "--threads", threads]].concat(), Stdin::Null);
                assert_eq!(out.code, one.code, "{name} --threads {threads}: {}", out.stderr);
                assert_eq!(out.stdout.replace(path, "<stdin>"), one.stdout, "{name} {threads}");
                assert_eq!(out.stderr.replace(path, "<stdin>"), one.stderr, "{name} {threads}");
            }
            if bad.is_some() {
                let skip = ["--skip-bad", "1"];
                let one = run_with(&[&piped[..], &skip].concat(), Stdin::Pipe(text)).ok();
                assert_eq!(json(&one)[0]["events"], 11_999, "{name}");
                let out = run_with(&[&args[..], &skip, &[path]].concat(), Stdin::Null).ok();
                assert_eq!(out.replace(path, "<stdin>"), one, "{name}");
            }
        }
    }
}

#[test]
fn a_fifo_is_not_opened_again_for_nginxs_own_burst() {
    // A file is read once more for nginx's own burst; opening a FIFO again would wait for
    // a writer that never comes.
    let args = ["replay", "--algo", "nginx", "--rate", "1r/m", "--burst", "1", "--format", "json"];
    let fifo = through_fifo(&args);
    assert_eq!(fifo.code, 0, "{}", fifo.stderr);
    let file = crate::harness::temp_file("quakes.csv", QUAKES);
    let named = json(&run_with(&[&args[..], &[file.to_str().unwrap()]].concat(), Stdin::Null).ok());
    let fifo = json(&fifo.stdout);
    assert_eq!(fifo["passed"], named["passed"]);
    assert!(named["system_size"]["value"].is_u64() && fifo.get("system_size").is_none(), "{fifo}");
}

#[test]
fn a_fifo_among_several_files_is_opened_once_in_its_turn() {
    // Opened to look before its turn, a FIFO would wait for its writer, take its lines,
    // close, and then wait for a writer that never comes again.
    let dir = tempfile::Builder::new().prefix("ratelimit-test-").tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let first = dir.path().join("first.csv");
    let header = QUAKES.lines().next().unwrap();
    let row = QUAKES.lines().nth(1).unwrap().replacen("2025-07-30T02:30", "2025-07-29T00:00", 1);
    fs::write(&first, format!("{header}\n{row}\n")).unwrap();
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || fs::write(fifo, QUAKES).unwrap())
    };
    let mut child = command()
        .args(["replay", "--algo", "gcra", "--rate", "2/h", "--format", "json"])
        .args([&first, &fifo])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            // Let a writer still waiting for a reader go, without waiting for one ourselves.
            use std::os::unix::fs::OpenOptionsExt;
            let mut release = fs::OpenOptions::new();
            drop(release.read(true).custom_flags(libc::O_NONBLOCK).open(&fifo));
            panic!("replay still waits on the FIFO after 20 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    writer.join().unwrap();
    let out = finished(child.wait_with_output().unwrap());
    let events = QUAKES.lines().count() - 1;
    assert_eq!(json(&out.ok())["events"], events + 1, "the file's row and the FIFO's");
}

#[test]
fn compressed_standard_input_is_decompressed_or_refused_in_one_line() {
    let csv = "time\n2025-01-01T00:00:00Z\n2025-01-01T00:00:01Z\n";
    let args = ["replay", "--algo", "gcra", "--rate", "1/m", "--format", "json"];
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("in.csv.gz");
    std::fs::write(&file, gzip(csv.as_bytes())).unwrap();
    // Piped, and redirected from a file: gzip is read through its decoder.
    for stdin in [Stdin::Bytes(&gzip(csv.as_bytes())), Stdin::File(file)] {
        assert_eq!(json(&run_with(&args, stdin).ok())["events"], 2);
    }
    // xz and bzip2 are known by their magic bytes, and refused in words.
    let xz = b"\xfd7zXZ\x00\x00\x04\xe6\xd6\xb4\x46";
    let bzip2 = b"BZh91AY&SY\x00\x00";
    for (bytes, tool) in [(&xz[..], "xz"), (&bzip2[..], "bzip2")] {
        let error = run_with(&args, Stdin::Bytes(bytes)).error();
        assert_eq!(
            error,
            format!(
                "ratelimit: cannot read <stdin>: it is {tool}-compressed, which is not read here: \
                 decompress it first, as `{tool} -dc FILE | ratelimit …` does"
            )
        );
    }
}
