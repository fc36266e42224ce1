//! Parquet input: every way a time is stored, costs and keys of any type, row groups on
//! every thread, and the same reports as the same events in CSV.

use chrono::{DateTime, Duration, Utc};

use crate::harness::{Stdin, TempFile, run_with, temp_file};

/// The 40 events `tests/fixtures/make-parquet` wrote with pyarrow, in six row groups.
const EVENTS: &[u8] = include_bytes!("../fixtures/events.parquet");

/// Two of them again, the time an INT96 (as Impala and old Spark write it).
const INT96: &[u8] = include_bytes!("../fixtures/int96.parquet");

/// The same events as CSV text, made from the numbers that `make-parquet` made them from:
/// every stored time written as RFC 3339, the date as a date, nulls as empty fields.
fn events_csv() -> String {
    let steps = [0, 1, 1, 7, 30, 0, 61, 5, 3600, 86400].repeat(4);
    let mut at: DateTime<Utc> = "2025-07-29T23:24:52.483Z".parse().unwrap();
    let mut csv =
        String::from("t_text,t_ms,t_us,t_ns,t_day,t_epoch,cost,price,who,mag,net,bad_time\n");
    for (i, step) in steps.into_iter().enumerate() {
        at += Duration::seconds(step) + Duration::milliseconds(step % 7);
        let text = at.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
        let price = i64::try_from(i).unwrap() * 37 - 100;
        let price = format!(
            "{}{}.{:02}",
            if price < 0 { "-" } else { "" },
            price.abs() / 100,
            price.abs() % 100
        );
        let mag = if i % 9 == 4 { String::new() } else { (4.5 + i as f64 / 10.0).to_string() };
        let net = if i % 11 == 5 { "" } else { ["us", "ak", "nc"][i % 3] };
        let bad = if i == 11 { "never" } else { "2025-01-01" };
        csv.push_str(&format!(
            "{text},{text},{text},{text},{},{},{},{price},{},{mag},{net},{bad}\n",
            at.format("%Y-%m-%d"),
            at.timestamp_millis(),
            1 + i % 4,
            i % 3,
        ));
    }
    csv
}

fn parquet_file(name: &str, bytes: &[u8]) -> TempFile {
    let file = temp_file(name, "");
    std::fs::write(&file, bytes).unwrap();
    file
}

/// Runs `args` on `file` and returns what it wrote to stdout and stderr, and its exit code,
/// with the file's name taken out.
fn outcome(args: &[&str], file: &TempFile) -> (String, String, i32) {
    let path = file.to_str().unwrap();
    let run = run_with(&[args, &[path]].concat(), Stdin::Null);
    (run.stdout.replace(path, "INPUT"), run.stderr.replace(path, "INPUT"), run.code)
}

#[test]
fn parquet_gives_the_reports_of_the_same_events_in_csv() {
    let parquet = parquet_file("events.parquet", EVENTS);
    let csv = temp_file("events.csv", &events_csv());
    let commands: [&[&str]; 3] = [
        &["replay", "--algo", "gcra", "--rate", "5/m", "--burst", "2", "--key", "net"],
        &["compare", "--rate", "3/m", "--cost", "cost", "--min-mag", "5"],
        &["min-bucket", "--rate", "1/m", "--key", "who", "--cost", "cost"],
    ];
    for time in ["t_text", "t_ms", "t_us", "t_ns", "t_day", "t_epoch"] {
        let mut asked = vec!["--time-column", time, "--format", "json"];
        if time == "t_epoch" {
            asked.extend(["--time-format", "unix-ms"]);
        }
        for command in commands {
            let args = [command, &asked].concat();
            let want = outcome(&args, &csv);
            assert_eq!(want.2, 0, "{args:?}: {}", want.1);
            for threads in ["1", "2", "3"] {
                let args = [&args[..], &["--threads", threads]].concat();
                assert_eq!(outcome(&args, &parquet), want, "{args:?}");
            }
        }
    }
    // A time stored as INT96: the first two events' time with the net.
    let int96 = parquet_file("int96.parquet", INT96);
    let two: String = events_csv()
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            let time = if fields[0] == "t_text" { "time" } else { fields[3] };
            format!("{time},{}\n", fields[10])
        })
        .collect();
    let csv = temp_file("int96.csv", &two);
    let args = ["replay", "--algo", "gcra", "--rate", "5/m", "--key", "net", "--format", "json"];
    assert_eq!(outcome(&args, &int96), outcome(&args, &csv));
}

#[test]
fn a_bad_parquet_field_names_its_row_and_column() {
    let parquet = parquet_file("events.parquet", EVENTS);
    let csv = temp_file("events.csv", &events_csv());
    let replay = ["replay", "--algo", "gcra", "--rate", "5/m"];
    // Row 12 of the Parquet file is line 13 of the CSV, below its header.
    for threads in ["1", "2"] {
        let args = [&replay[..], &["--time-column", "bad_time", "--threads", threads]].concat();
        let (_, err, code) = outcome(&args, &parquet);
        let (_, csv_err, _) = outcome(&args, &csv);
        assert_eq!(code, 2);
        assert_eq!(err, csv_err.replace("line 13,", "row 12,"), "--threads {threads}");
        let skip = [&args[..], &["--skip-bad", "1", "--format", "json"]].concat();
        let (out, err, code) = outcome(&skip, &parquet);
        assert_eq!(code, 0, "{err}");
        assert_eq!((out, err), {
            let (out, err, _) = outcome(&skip, &csv);
            (out, err.replace("line 13,", "row 12,"))
        });
    }
    // A cost that is no whole number, a column that is not there, a list.
    let (_, err, code) =
        outcome(&[&replay[..], &["--time-column", "t_ms", "--cost", "price"]].concat(), &parquet);
    assert_eq!(code, 2);
    assert!(err.starts_with("ratelimit: INPUT: row 1, field `price`: \"-1.00\" is "), "{err}");
    let (_, err, _) = outcome(&[&replay[..], &["--time-column", "when"]].concat(), &parquet);
    let (_, csv_err, _) = outcome(&[&replay[..], &["--time-column", "when"]].concat(), &csv);
    // The Parquet file has one column more, the list's.
    assert_eq!(err, csv_err.replace("bad_time\n", "bad_time,tags.list.element\n"));
    let list = ["--time-column", "t_ms", "--key", "tags.list.element"];
    let (_, err, code) = outcome(&[&replay[..], &list].concat(), &parquet);
    assert_eq!(code, 2);
    assert!(err.contains("column `tags.list.element` is a list"), "{err}");
    // Not Parquet; Parquet from a pipe.
    let args = [&replay[..], &["--input-format", "parquet"]].concat();
    let (_, err, code) = outcome(&args, &csv);
    assert_eq!(code, 2);
    assert!(err.starts_with("ratelimit: INPUT: not a Parquet file: "), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    // Cut short, or written over where its first column is: one line, exit 2.
    let cut = parquet_file("cut.parquet", &EVENTS[..1000]);
    let (_, err, code) = outcome(&[&replay[..], &["--time-column", "t_text"]].concat(), &cut);
    assert_eq!((code, err.lines().count()), (2, 1), "{err}");
    assert!(err.starts_with("ratelimit: INPUT: not a Parquet file: "), "{err}");
    let mut over = EVENTS.to_vec();
    over[4..200].fill(0xff);
    let over = parquet_file("over.parquet", &over);
    let (_, err, code) = outcome(&[&replay[..], &["--time-column", "t_text"]].concat(), &over);
    assert_eq!((code, err.lines().count()), (2, 1), "{err}");
    assert!(err.starts_with("ratelimit: INPUT: cannot read Parquet: "), "{err}");
    let piped = run_with(&[&args[..], &["-"]].concat(), Stdin::Pipe("PAR1"));
    assert_eq!(piped.code, 2);
    assert!(piped.stderr.contains("Parquet is read from a file"), "{}", piped.stderr);
}

#[test]
fn unsigned_integers_of_2_to_the_63_and_above_are_not_read_as_negative() {
    let file = parquet_file("unsigned.parquet", include_bytes!("../fixtures/unsigned.parquet"));
    let keys = |column: &str| {
        let args =
            ["replay", "--algo", "gcra", "--rate", "1/h", "--key", column, "--format", "json"];
        let (out, _, code) = outcome(&args, &file);
        assert_eq!(code, 0);
        let report = crate::harness::json(&out);
        let mut keys: Vec<String> = (report["keys"]["top"].as_array().unwrap().iter())
            .map(|k| k["key"].as_str().unwrap().to_owned())
            .collect();
        keys.sort();
        keys
    };
    assert_eq!(keys("u64"), ["1", "18446744073709551615", "9223372036854775808"]);
    assert_eq!(keys("u32"), ["1", "2147483648", "4294967295"]);
    let (_, err, code) =
        outcome(&["replay", "--algo", "gcra", "--rate", "1/h", "--cost", "u64"], &file);
    assert_eq!(code, 2);
    assert_eq!(
        err,
        "ratelimit: INPUT: row 2, field `u64`: \"9223372036854775808\" is more than \
         1000000000000, the largest cost an event may have\n"
    );
}

#[test]
fn a_value_is_held_to_16_mib_and_a_page_to_64_before_it_is_decompressed() {
    // A 20 MiB string in row 2: refused once decoded, naming its row and column.
    let file = parquet_file("long.parquet", include_bytes!("../fixtures/long_value.parquet"));
    let args = ["replay", "--algo", "gcra", "--rate", "5/h", "--key", "who"];
    let (_, err, code) = outcome(&args, &file);
    assert_eq!(code, 2);
    assert_eq!(
        err,
        "ratelimit: INPUT: row 2, field `who`: a value of 20 MiB, past the 16 MiB a field may \
         hold (as a CSV row may)\n"
    );
    // A column it does not read is no one's concern.
    assert_eq!(outcome(&args[..5], &file).2, 0);
    // A 100 MiB string, 4 kB compressed: refused from its page's header, before the page
    // is decompressed (the file took 1.84 GB to read a 256 MiB one before).
    let file = parquet_file("big.parquet", include_bytes!("../fixtures/big_page.parquet"));
    let (_, err, code) = outcome(&args, &file);
    assert_eq!(code, 2);
    assert_eq!(
        err,
        "ratelimit: INPUT: row 1, field `who`: a page of 100 MiB uncompressed, past the 64 MiB \
         a page may hold here (a field may hold 16 MiB, as a CSV row may)\n"
    );
}

#[test]
fn a_folder_or_a_pattern_of_parquet_files_is_read_as_the_files_in_it() {
    // A Spark job's output: two parts (here the same 40 events twice, so the second goes
    // back in time and the whole is put in order), and the files it leaves beside them.
    let folder = tempfile::tempdir().unwrap();
    for name in ["part-00000.parquet", "part-00001.parquet"] {
        std::fs::write(folder.path().join(name), EVENTS).unwrap();
    }
    std::fs::write(folder.path().join("_SUCCESS"), "").unwrap();
    std::fs::write(folder.path().join(".part-00000.parquet.crc"), "crc").unwrap();
    let csv = temp_file("events.csv", &events_csv());
    let (csv_path, dir) = (csv.to_str().unwrap(), folder.path().to_str().unwrap());
    let asked = [
        "replay",
        "--algo",
        "gcra",
        "--rate",
        "5/m",
        "--burst",
        "2",
        "--key",
        "net",
        "--time-column",
        "t_us",
        "--format",
        "json",
    ];
    let twice = run_with(&[&asked[..], &[csv_path, csv_path]].concat(), Stdin::Null);
    assert_eq!(twice.code, 0, "{}", twice.stderr);
    let want = twice.stdout.replace(&format!("{csv_path} + {csv_path}"), "INPUT");
    let pattern = format!("{dir}/*.parquet");
    for given in [dir, &pattern[..]] {
        let got = run_with(&[&asked[..], &[given]].concat(), Stdin::Null);
        assert_eq!(got.code, 0, "{given}: {}", got.stderr);
        let parts = format!("{dir}/part-00000.parquet + {dir}/part-00001.parquet");
        assert_eq!(got.stdout.replace(&parts, "INPUT"), want, "{given}");
    }
    // A folder with no file, or a pattern that matches none, says so: exit 2.
    let empty = tempfile::tempdir().unwrap();
    let empty = empty.path().to_str().unwrap();
    for (given, says) in [
        (empty.to_owned(), "a folder with no file"),
        (format!("{dir}/*.csv"), "a pattern that matches no file"),
    ] {
        let out = run_with(&["replay", "--algo", "gcra", "--rate", "5/m", &given], Stdin::Null);
        assert_eq!(
            (out.code, out.stderr.trim_end()),
            (2, format!("ratelimit: {given}: {says}").as_str())
        );
    }
}
