//! Logs as people have them: a rotated set of files, some compressed, read as one log.

use crate::harness::{Stdin, gzip, json, run, run_with};

/// A replay's JSON report, its input's name left out, there and in its keys' rows.
pub fn report(args: &[&str]) -> serde_json::Value {
    fn unnamed(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Object(object) => {
                object.remove("input");
                object.values_mut().for_each(unnamed);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(unnamed),
            _ => {}
        }
    }
    let mut found = json(&run_with(&[args, &["--format", "json"]].concat(), Stdin::Null).ok());
    unnamed(&mut found);
    found
}

#[test]
fn a_rotated_set_with_a_gzipped_file_reads_as_the_concatenated_log() {
    let log = run(
        &[
            "synth",
            "requests",
            "--clients",
            "200",
            "--requests",
            "6000",
            "--days",
            "0.1",
            "--format",
            "clf",
        ],
        "",
    )
    .ok();
    let lines: Vec<&str> = log.lines().collect();
    let third = lines.len() / 3;
    let part = |from: usize, to: usize| {
        lines[from..to].iter().map(|l| format!("{l}\n")).collect::<String>()
    };
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    std::fs::write(path("access.log.2.gz"), gzip(part(0, third).as_bytes())).unwrap();
    std::fs::write(path("access.log.1"), part(third, 2 * third)).unwrap();
    std::fs::write(path("access.log"), part(2 * third, lines.len())).unwrap();
    std::fs::write(path("whole.log"), &log).unwrap();
    let limit =
        ["--algo", "nginx", "--rate", "1r/s", "--burst", "3", "--key", "$binary_remote_addr"];
    let whole = report(&[&["replay", &path("whole.log")], &limit[..]].concat());
    assert!(whole["dropped"].as_u64().unwrap() > 0, "the limit bites");
    // Named as logrotate names them, newest first, and oldest first: one answer.
    for order in [
        ["access.log", "access.log.1", "access.log.2.gz"],
        ["access.log.2.gz", "access.log.1", "access.log"],
    ] {
        let files: Vec<String> = order.iter().map(|name| path(name)).collect();
        let files: Vec<&str> = files.iter().map(String::as_str).collect();
        assert_eq!(report(&[&["replay"], &files[..], &limit[..]].concat()), whole, "{order:?}");
    }
    // The name says which files were read.
    let named = run_with(
        &["replay", &path("access.log.1"), &path("access.log"), "--algo", "gcra", "--rate", "1/s"],
        Stdin::Null,
    )
    .ok();
    assert!(named.contains("access.log.1 + "), "{named}");
}

#[test]
fn csv_files_are_joined_with_one_header_and_zstd_is_read_as_gzip_is() {
    let csv =
        "time,client\n2025-01-01T00:00:00Z,a\n2025-01-01T00:00:01Z,a\n2025-01-01T00:00:02Z,b\n";
    let (first, second) = csv.split_at(csv.find("2025-01-01T00:00:01Z").unwrap());
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    std::fs::write(path("a.csv"), first).unwrap();
    std::fs::write(
        path("b.csv.zst"),
        zstd::encode_all(format!("time,client\n{second}").as_bytes(), 3).unwrap(),
    )
    .unwrap();
    std::fs::write(path("all.csv.gz"), gzip(csv.as_bytes())).unwrap();
    let limit = ["--algo", "gcra", "--rate", "1/m", "--key", "client"];
    let plain =
        json(&run(&[&["replay"][..], &limit[..], &["--format", "json"]].concat(), csv).ok());
    let joined = report(&[&["replay", &path("a.csv"), &path("b.csv.zst")], &limit[..]].concat());
    let gzipped = report(&[&["replay", &path("all.csv.gz")], &limit[..]].concat());
    for found in [&joined, &gzipped] {
        assert_eq!(
            (found["events"].clone(), found["passed"].clone()),
            (plain["events"].clone(), plain["passed"].clone())
        );
    }
    assert_eq!(plain["events"], 3);
    let alone =
        run(&["replay", "-", &path("a.csv"), "--algo", "gcra", "--rate", "1/m"], "").error();
    assert_eq!(alone, "ratelimit: - (standard input) is read alone, not with other files");
}

#[test]
fn an_access_log_on_stdin_is_known_by_its_first_line_when_stdin_is_a_file() {
    let log = run(
        &[
            "synth",
            "requests",
            "--clients",
            "50",
            "--requests",
            "500",
            "--days",
            "0.02",
            "--format",
            "clf",
        ],
        "",
    )
    .ok();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("access.log.1");
    std::fs::write(&path, &log).unwrap();
    let args = ["replay", "--algo", "nginx", "--rate", "1r/s", "--key", "$binary_remote_addr"];
    let named = report(&[&args[..], &[path.to_str().unwrap()]].concat());
    let args = [&args[..], &["--format", "json"]].concat();
    // `< access.log.1`: read from its start, as the file it is, $msec and all.
    let redirected = json(&run_with(&args, Stdin::File(path.clone())).ok());
    assert_eq!(redirected["events"], named["events"]);
    assert_eq!(redirected["passed"], named["passed"]);
    // Through a pipe it cannot be looked at first: it is read as CSV, and told so.
    let piped = run(&args, &log).error();
    assert!(
        piped.contains("this is an access log read as CSV: give --input-format clf"),
        "{piped}"
    );
}

/// A GeoJSON FeatureCollection of `n` features, a minute apart from `start` (Unix ms).
fn collection(n: u64, start: u64) -> String {
    let features: Vec<String> = (0..n)
        .map(|i| {
            let time = start + i * 60_000;
            format!(
                "{{\"type\":\"Feature\",\"properties\":{{\"time\":{time}}},\"id\":\"e{time}\"}}"
            )
        })
        .collect();
    format!("{{\"type\":\"FeatureCollection\",\"features\":[{}]}}\n", features.join(",\n"))
}

#[test]
fn several_geojson_files_are_each_read_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    std::fs::write(path("g1.geojson"), collection(10, 1_753_831_492_000)).unwrap();
    std::fs::write(path("g2.geojson"), collection(7, 1_753_931_492_000)).unwrap();
    let limit = ["--algo", "gcra", "--rate", "5/h", "--burst", "5"];
    let both =
        report(&[&["replay", &path("g1.geojson"), &path("g2.geojson")], &limit[..]].concat());
    assert_eq!(both["events"], 17, "10 and 7 features, not the first collection alone");
    // A second collection after the first, in one stream, is an error naming the byte.
    let joined = collection(10, 1_753_831_492_000) + &collection(7, 1_753_931_492_000);
    let args = [&["replay", "-", "--input-format", "geojson"][..], &limit[..]].concat();
    let error = run(&args, &joined).error();
    let end = collection(10, 1_753_831_492_000).len();
    assert_eq!(
        error,
        format!(
            "ratelimit: <stdin>: line 11: at byte offset {end}: expected the end of the file \
             after the FeatureCollection, found '{{' (give several collections as several \
             files)"
        )
    );
    let trailing = collection(3, 1_753_831_492_000) + "garbage";
    assert!(run(&args, &trailing).error().contains("found 'g'"));
    // A file whose name says another format is not read as the first's.
    std::fs::write(path("rows.csv"), "time\n2025-07-30T00:00:00Z\n").unwrap();
    let mixed = run_with(
        &[&["replay", &path("g1.geojson"), &path("rows.csv")], &limit[..]].concat(),
        Stdin::Null,
    )
    .error();
    assert!(mixed.contains("rows.csv: its name says csv, but "), "{mixed}");
}

#[test]
fn a_later_first_line_is_left_out_only_where_the_format_has_a_header() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let health = "10.0.0.1 - - [10/Oct/2025:13:55:36 +0000] \"GET /health HTTP/1.1\" 200 2 \"-\" \"probe\"\n";
    std::fs::write(path("access.log"), health.repeat(2)).unwrap();
    std::fs::write(path("access.log.1"), health.repeat(2)).unwrap();
    let jsonl: String = (0..100).map(|i| format!("{{\"time\":{}}}\n", 1_000 * i)).collect();
    std::fs::write(path("h.jsonl"), &jsonl).unwrap();
    std::fs::write(path("n.csv"), "2025-01-01T00:00:00Z,a\n2025-01-01T00:00:01Z,a\n").unwrap();
    std::fs::write(path("h.csv"), "time,k\n2025-01-01T00:00:00Z,a\n").unwrap();
    let limit = ["--algo", "gcra", "--rate", "5/h"];
    let events = |files: &[&str], more: &[&str]| {
        let files: Vec<String> = files.iter().map(|f| path(f)).collect();
        let files: Vec<&str> = files.iter().map(String::as_str).collect();
        report(&[&["replay"][..], &files, &limit, more].concat())["events"].clone()
    };
    assert_eq!(events(&["access.log", "access.log.1"], &[]), 4, "the same health check twice");
    assert_eq!(events(&["h.jsonl", "h.jsonl"], &["--time-format", "unix-ms"]), 200);
    assert_eq!(events(&["n.csv", "n.csv"], &["-n"]), 4, "no header to repeat");
    assert_eq!(events(&["h.csv", "h.csv"], &[]), 2, "a header, repeated");
}

#[test]
fn an_error_in_a_later_file_names_that_file_and_its_own_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    std::fs::write(path("f1.csv"), "time,k\n2025-01-01T00:00:00Z,a\n2025-01-01T00:00:01Z,a\n")
        .unwrap();
    std::fs::write(
        path("f2.csv.gz"),
        gzip(b"time,k\n2025-01-01T00:00:02Z,a\n2025-01-01T00:00:03Z,a\nbad,a\n"),
    )
    .unwrap();
    let error = run_with(
        &["replay", &path("f1.csv"), &path("f2.csv.gz"), "--algo", "gcra", "--rate", "5/h"],
        Stdin::Null,
    )
    .error();
    let want = format!("ratelimit: {}: line 4, field `time`: \"bad\" is not", path("f2.csv.gz"));
    assert!(error.starts_with(&want), "{error}");
}
