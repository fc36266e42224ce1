//! Input formats: TSV, JSON Lines, GeoJSON and access logs; time patterns; --skip-bad.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::DateTime;

use crate::brute::min_bucket;
use crate::harness::{Stdin, json, real_catalog, run, run_with, temp_file};
use crate::real_data::{assert_cover, ms};
use crate::synth::dropped_at_one_a_second;

/// 2,000 lines of an nginx combined access log, made by `tests/fixtures/make-access-log`
/// from `synth requests`.
const ACCESS_LOG: &str = include_str!("../fixtures/access.log");

/// Runs a command that must succeed and returns its JSON text, with the input's name taken
/// out, so that the same events read from different files give the same bytes.
pub fn report_text(args: &[&str], file: &Path) -> String {
    let out =
        run_with(&[args, &[file.to_str().unwrap(), "--format", "json"]].concat(), Stdin::Null).ok();
    out.replace(&format!("\"{}\"", file.display()), "\"INPUT\"")
}

/// Runs a command as [`report_text`] does and returns its JSON.
pub fn report(args: &[&str], file: &Path) -> serde_json::Value {
    json(&report_text(args, file))
}

#[test]
#[ignore = "needs ../shared/data and pyarrow"]
fn every_format_gives_the_reports_of_the_csv() {
    let path = real_catalog("usgs_m5_2015_2025.csv");
    let mut reader = csv::Reader::from_path(&path).unwrap();
    let header: Vec<String> = reader.headers().unwrap().iter().map(str::to_owned).collect();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 19_032);
    // TSV, through the csv crate; JSON Lines, every column a string; GeoJSON as USGS
    // serves it: the time in epoch milliseconds, the magnitude a number, the id on top.
    let mut tsv = csv::WriterBuilder::new().delimiter(b'\t').from_writer(Vec::new());
    tsv.write_record(&header).unwrap();
    let mut jsonl = String::new();
    let mut features = Vec::new();
    for row in &rows {
        tsv.write_record(row).unwrap();
        let object: serde_json::Map<String, serde_json::Value> =
            header.iter().zip(row.iter()).map(|(h, v)| (h.clone(), v.into())).collect();
        jsonl.push_str(&serde_json::Value::Object(object.clone()).to_string());
        jsonl.push('\n');
        let mut properties = object;
        properties.insert("time".into(), ms(&row[0]).into());
        properties.insert("mag".into(), row[4].parse::<f64>().unwrap().into());
        let id = properties.remove("id").unwrap();
        features.push(serde_json::json!({"type": "Feature", "properties": properties, "id": id}));
    }
    let geojson = format!(
        "{{\"type\": \"FeatureCollection\", \"metadata\": {{\"count\": {}}}, \"features\": [\n{}\n]}}\n",
        features.len(),
        features.iter().map(ToString::to_string).collect::<Vec<_>>().join(",\n")
    );
    let tsv = temp_file("quakes.tsv", &String::from_utf8(tsv.into_inner().unwrap()).unwrap());
    let jsonl = temp_file("quakes.jsonl", &jsonl);
    let geojson = temp_file("quakes.geojson", &geojson);
    // Parquet, as bench/convert writes it with pyarrow: the time a UTC timestamp in
    // milliseconds, the magnitude a double, the rest strings.
    let parquet = temp_file("quakes.parquet", "");
    let convert = concat!(env!("CARGO_MANIFEST_DIR"), "/bench/convert");
    let status = std::process::Command::new("python3")
        .args([convert, "parquet", path.to_str().unwrap(), parquet.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(status.success(), "bench/convert parquet needs pyarrow (.ci/run installs it)");
    for args in [
        &["replay", "--algo", "gcra", "--rate", "5/h", "--burst", "5", "--key", "net"][..],
        &["compare", "--rate", "5/h", "--burst", "5", "--min-mag", "6"],
        &[
            "min-bucket",
            "--rate",
            "5/h,1/h",
            "--key",
            "net",
            "--cover",
            "90%",
            "--since",
            "2020-01-01",
        ],
    ] {
        let want = report_text(args, &path);
        for file in [&tsv, &jsonl, &geojson, &parquet] {
            assert_eq!(report_text(args, file), want, "{args:?} on {}", file.display());
        }
    }
    // --emit gives back what was read: the same lines, a feature on each for GeoJSON.
    let emit = ["replay", "--algo", "gcra", "--rate", "5/h", "--emit", "dropped"];
    let from_jsonl = run_with(&[&emit[..], &[jsonl.to_str().unwrap()]].concat(), Stdin::Null).ok();
    let from_geojson =
        run_with(&[&emit[..], &[geojson.to_str().unwrap()]].concat(), Stdin::Null).ok();
    let dropped: Vec<&str> = from_jsonl.lines().collect();
    assert!(!dropped.is_empty());
    assert!(dropped.iter().all(|line| std::fs::read_to_string(&jsonl).unwrap().contains(line)));
    assert_eq!(from_geojson.lines().count(), dropped.len());
    assert!(
        from_geojson.lines().all(|l| l.starts_with("{\"type\":\"Feature\"")),
        "{from_geojson:.200}"
    );
}

/// The access log's lines as (client address, time in ms), read here with chrono.
fn access_log() -> Vec<(String, i64)> {
    ACCESS_LOG
        .lines()
        .map(|line| {
            let addr = line.split(' ').next().unwrap().to_owned();
            let time = &line[line.find('[').unwrap() + 1..line.find(']').unwrap()];
            let time = DateTime::parse_from_str(time, "%d/%b/%Y:%H:%M:%S %z").unwrap();
            (addr, time.timestamp_millis())
        })
        .collect()
}

#[test]
fn an_access_log_by_client_matches_brute_force() {
    let log = temp_file("access.log", ACCESS_LOG);
    let mut by_client: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for (addr, time) in access_log() {
        by_client.entry(addr).or_default().push(time);
    }
    by_client.values_mut().for_each(|times| times.sort());
    let needs: Vec<i64> = by_client.values().map(|t| min_bucket(t, 60, 60_000)).collect();
    let events: Vec<i64> = by_client.values().map(|t| i64::try_from(t.len()).unwrap()).collect();
    // The .log extension says clf; the time is $time_local, the key the client's address.
    let found =
        report(&["min-bucket", "--rate", "60/m", "--key", "remote_addr", "--cover", "95%"], &log);
    assert_eq!(found[0]["keys"]["count"], by_client.len());
    assert_eq!(found[0]["worst_key"]["key"], "192.0.2.1", "the bot needs the largest bucket");
    assert_cover(&found[0], &needs, &events, 950);
    let found = report(
        &["replay", "--algo", "gcra", "--rate", "60/m", "--burst", "5", "--key", "remote_addr"],
        &log,
    );
    let dropped: i64 = by_client.values().map(|t| dropped_at_one_a_second(t, 5)).sum();
    assert_eq!((found["events"].as_i64(), found["dropped"].as_i64()), (Some(2000), Some(dropped)));
    // The dropped requests, as the lines that were logged.
    let args =
        ["replay", "--input-format", "clf", "--algo", "gcra", "--rate", "60/m", "--burst", "5"];
    let out =
        run(&[&args[..], &["--key", "remote_addr", "--emit", "dropped", "-"]].concat(), ACCESS_LOG)
            .ok();
    assert_eq!(i64::try_from(out.lines().count()).unwrap(), dropped);
    assert!(out.lines().all(|line| ACCESS_LOG.contains(&format!("{line}\n"))));
}

#[test]
fn an_access_log_is_read_as_one_whatever_its_name() {
    // Rotated, it is `access.log.1`: its lines say what it is.
    let args = ["replay", "", "--algo", "gcra", "--rate", "10/m", "--format", "json"];
    let named = temp_file("access.log", ACCESS_LOG);
    let rotated = temp_file("access.log.1", ACCESS_LOG);
    let report = |path: &Path| {
        let mut args = args;
        args[1] = path.to_str().unwrap();
        let mut report = json(&run(&args, "").ok());
        report.as_object_mut().unwrap().remove("input");
        report
    };
    let want = report(&named);
    assert!(want["events"].as_u64().unwrap() > 0, "{want}");
    assert_eq!(report(&rotated), want);
}

#[test]
fn an_access_log_read_as_csv_says_to_give_input_format_clf() {
    // On stdin nothing names its format: read as CSV, its first line is no header.
    let err = run(&["replay", "--algo", "gcra", "--rate", "10/m"], ACCESS_LOG).error();
    let said = "<stdin>: no column named `time` (this is an access log read as CSV: give \
                --input-format clf); the header has: ";
    assert!(err.starts_with(&format!("ratelimit: {said}")), "{err}");
    // A CSV without the column is still told to choose one.
    let err = run(&["replay", "--algo", "gcra", "--rate", "10/m"], "when,who\n1,a\n").error();
    assert!(err.contains("(choose the time column with --time-column)"), "{err}");
}

#[test]
#[ignore = "needs ../shared/data"]
fn a_time_split_over_two_columns_with_a_pattern() {
    let path = real_catalog("kaggle_significant_earthquakes_1965_2016.csv");
    let file = path.to_str().unwrap();
    let args = [
        "replay",
        file,
        "--algo",
        "gcra",
        "--rate",
        "1/d",
        "--time-column",
        "Date,Time",
        "--time-format",
        "%m/%d/%Y %H:%M:%S",
        "--time-zone",
        "+00:00",
        "--format",
        "json",
    ];
    // As a new user meets it: three rows have an ISO time in the Date column.
    let text = std::fs::read_to_string(&path).unwrap();
    let bad: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains('T') && l.as_bytes()[4] == b'-')
        .map(|(n, _)| n + 1)
        .collect();
    assert_eq!(bad.len(), 3);
    let err = run_with(&args, Stdin::Null).error();
    assert!(err.contains(&format!("line {}, field `Date,Time`: ", bad[0])), "{err}");
    assert!(err.ends_with("is not a time in the --time-format pattern"), "{err}");
    let run = run_with(&[&args[..], &["--skip-bad", "3"]].concat(), Stdin::Null);
    assert!(run.stderr.contains("skipped 3 bad rows (--skip-bad); the first: "), "{}", run.stderr);
    let found = json(&run.ok());
    assert_eq!(found["events"], 23_412 - 3);
    // One fewer allowed is not enough.
    let err = run_with(&[&args[..], &["--skip-bad", "2"]].concat(), Stdin::Null).error();
    assert!(err.contains(&format!("line {}, ", bad[2])), "{err}");
}

#[test]
fn bad_records_name_the_line_and_what_was_expected() {
    let cases: [(&[&str], &str, &str); 7] = [
        (
            &["--input-format", "jsonl"],
            "{\"time\": \"2025-01-01T00:00:00Z\"}\n{\"time\": 5\n",
            "<stdin>: line 2: expected a JSON object: ",
        ),
        (
            &["--input-format", "jsonl"],
            "{\"time\": \"2025-01-01T00:00:00Z\"}\n{\"t\": 1}\n",
            "<stdin>: line 2, field `time`: \"\" is not an RFC 3339 time",
        ),
        (
            &["--input-format", "geojson"],
            "{\"type\": \"Feature\", \"features\": []}",
            "<stdin>: line 1: expected a GeoJSON FeatureCollection, found type \"Feature\"",
        ),
        (
            &["--input-format", "clf"],
            "1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.1\" 200 5\nGET /\n",
            "<stdin>: line 2: expected a combined log line",
        ),
        (
            &["--time-format", "%Y-%m-%d %H:%M"],
            "time\n2025-01-01 00:00\n",
            "--time-format '%Y-%m-%d %H:%M' names no zone (%z): give the offset",
        ),
        (
            &["--time-zone", "+01:00"],
            "time\n2025-01-01T00:00:00Z\n",
            "--time-zone applies to a --time-format pattern that names no zone",
        ),
        (
            &["--input-format", "jsonl", "--emit", "all"],
            "{}\n",
            "--emit all adds a column, which jsonl has not",
        ),
    ];
    for (args, input, says) in cases {
        let base = ["replay", "--algo", "gcra", "--rate", "1/h"];
        let err = run(&[&base[..], args, &["-"]].concat(), input).error();
        assert!(err.starts_with(&format!("ratelimit: {says}")), "{args:?}: {err}");
    }
    // Skipped lines are counted, never passed over in silence.
    let run = run(
        &[
            "replay",
            "--algo",
            "gcra",
            "--rate",
            "1/h",
            "--input-format",
            "jsonl",
            "--skip-bad",
            "5",
            "--format",
            "json",
            "-",
        ],
        "{\"time\": \"2025-01-01T00:00:00Z\"}\nnot json\n{\"time\": \"2025-01-01T00:00:01Z\"}\n",
    );
    assert!(
        run.stderr.contains(
            "skipped 1 bad row (--skip-bad); the first: <stdin>: line 2: expected a JSON object"
        ),
        "{}",
        run.stderr
    );
    assert_eq!(json(&run.ok())["events"], 2);
}

#[test]
fn a_byte_order_mark_before_json_is_read_as_csv_reads_it() {
    let gcra = ["replay", "--algo", "gcra", "--rate", "5/h", "--format", "json"];
    let lines =
        "\u{feff}{\"time\":\"2025-01-01T00:00:00Z\"}\n{\"time\":\"2025-01-01T00:00:01Z\"}\n";
    let collection = "\u{feff}{\"type\":\"FeatureCollection\",\"features\":[\
                      {\"type\":\"Feature\",\"properties\":{\"time\":1735689600000}}]}";
    let csv = "\u{feff}time\n2025-01-01T00:00:00Z\n";
    for (format, text, events) in [("jsonl", lines, 2), ("geojson", collection, 1), ("csv", csv, 1)]
    {
        let args = [&gcra[..], &["--input-format", format]].concat();
        assert_eq!(json(&run(&args, text).ok())["events"], events, "{format}");
    }
}
