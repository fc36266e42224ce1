//! Tests on the real USGS catalogs in `../shared/data`, each checked against an
//! independent brute-force computation written here, not against earlier output.

use std::path::Path;

use chrono::DateTime;

use crate::brute::{busiest, fixed_window, min_bucket, sliding_log};
use crate::harness::{Stdin, json, real_catalog, run_with};

const M5: &str = "usgs_m5_2015_2025.csv";

/// Reads the times of a USGS catalog in ms, sorted, with a plain CSV reader and chrono,
/// not with ratelimit's own reading code.
pub fn times_ms(path: &Path, since: &str, until: &str) -> Vec<i64> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let (since, until) = (ms(since), ms(until));
    let mut times: Vec<i64> =
        reader.records().map(|r| ms(&r.unwrap()[0])).filter(|&t| t >= since && t < until).collect();
    times.sort();
    times
}

pub fn ms(text: &str) -> i64 {
    DateTime::parse_from_rfc3339(text).unwrap().timestamp_millis()
}

fn replay(path: &Path, args: &[&str]) -> serde_json::Value {
    let args = [&["replay", path.to_str().unwrap(), "--format", "json"][..], args].concat();
    json(&run_with(&args, Stdin::Null).ok())
}

#[test]
#[ignore = "needs ../shared/data"]
fn gcra_and_token_bucket_agree_on_the_whole_catalog() {
    let path = real_catalog(M5);
    for burst in ["1", "5", "20"] {
        let run = |algo| replay(&path, &["--algo", algo, "--rate", "5/h", "--burst", burst]);
        let (gcra, bucket) = (run("gcra"), run("token-bucket"));
        assert_eq!(gcra["events"], 19_032);
        assert_eq!(gcra["passed"], bucket["passed"], "burst {burst}");
        assert_eq!(gcra["busiest_window"], bucket["busiest_window"], "burst {burst}");
    }
}

#[test]
#[ignore = "needs ../shared/data"]
fn min_bucket_matches_brute_force_over_2025() {
    let path = real_catalog(M5);
    let times = times_ms(&path, "2025-01-01T00:00:00Z", "2026-01-01T00:00:00Z");
    assert_eq!(times.len(), 2_126);
    let args =
        ["min-bucket", path.to_str().unwrap(), "--since", "2025-01-01", "--until", "2026-01-01"];
    let args = [&args[..], &["--rate", "5/h,1/h,3/d,100/s", "--format", "json"]].concat();
    let found = json(&run_with(&args, Stdin::Null).ok());
    for (k, (n, period_ms)) in
        [(5, 3_600_000), (1, 3_600_000), (3, 86_400_000), (100, 1_000)].iter().enumerate()
    {
        assert_eq!(found[k]["min_bucket"], min_bucket(&times, *n, *period_ms), "rate {k}");
    }
}

#[test]
#[ignore = "needs ../shared/data"]
fn the_minimum_bucket_loses_nothing_on_the_whole_catalog_and_one_less_does() {
    let path = real_catalog(M5);
    let found = json(
        &run_with(&["min-bucket", "--rate", "5/h", "--format", "json"], Stdin::File(path.clone()))
            .ok(),
    );
    let b = found[0]["min_bucket"].as_u64().unwrap();
    let dropped = |burst: u64| {
        let burst = burst.to_string();
        replay(&path, &["--algo", "gcra", "--rate", "5/h", "--burst", &burst])["dropped"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(dropped(b), 0);
    assert!(dropped(b - 1) >= 1);
    // The stretch it names really needs b: its events exceed b − 1 + r·span.
    let span = &found[0]["span"];
    let (start, end) = (ms(span["start"].as_str().unwrap()), ms(span["end"].as_str().unwrap()));
    let events = span["events"].as_i64().unwrap();
    assert!(events * 3_600_000 - 5 * (end - start) > (i64::try_from(b).unwrap() - 1) * 3_600_000);
}

#[test]
#[ignore = "needs ../shared/data"]
fn two_days_after_kamchatka() {
    let path = real_catalog(M5);
    let window = ["--since", "2025-07-29T23:24:00Z", "--until", "+48h", "--rate", "5/h"];
    let times = times_ms(&path, "2025-07-29T23:24:00Z", "2025-07-31T23:24:00Z");
    let hour = 3_600_000;
    let run = |algo: &str, burst: &[&str]| {
        replay(&path, &[&window[..], &["--algo", algo], burst].concat())
    };

    let log = run("sliding-log", &[]);
    let brute = sliding_log(&times, 5, hour);
    assert_eq!(log["events"], times.len());
    assert_eq!(log["passed"], brute.len());
    assert_eq!(log["busiest_window"]["count"], busiest(&brute, hour));
    assert!(log["busiest_window"]["count"].as_u64().unwrap() <= 5);

    let fixed = run("fixed-window", &[]);
    let brute = fixed_window(&times, 5, hour);
    assert_eq!(fixed["passed"], brute.len());
    assert_eq!(fixed["busiest_window"]["count"], busiest(&brute, hour));
    assert!(
        fixed["busiest_window"]["count"].as_u64().unwrap() > 5,
        "fixed windows pass 2N at an edge"
    );

    let bucket = run("token-bucket", &["--burst", "5"]);
    assert!(bucket["busiest_window"]["count"].as_u64().unwrap() <= 10, "b + r·T = 10");
    assert_eq!(bucket["demand_busiest_window"]["count"], busiest(&times, hour));
    for algo in ["gcra", "leaky-queue"] {
        assert_eq!(run(algo, &["--burst", "5"])["passed"], bucket["passed"], "{algo}");
    }
}

#[test]
#[ignore = "needs ../shared/data"]
fn newest_first_as_served_equals_sorted() {
    let path = real_catalog("usgs_m4.5_2025.csv");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let header = lines.remove(0);
    assert!(lines.first() > lines.last(), "USGS serves newest first");
    // The time is the first field and RFC 3339 in UTC sorts as text.
    lines.sort_by_key(|l| l.split(',').next().unwrap());
    let sorted =
        crate::harness::temp_file("m4.5_sorted.csv", &format!("{header}\n{}\n", lines.join("\n")));
    let args = ["min-bucket", "--rate", "5/h,1/h,20/d", "--format", "json"];
    let served =
        json(&run_with(&[&args[..], &[path.to_str().unwrap()]].concat(), Stdin::Null).ok());
    let sorted =
        json(&run_with(&[&args[..], &[sorted.to_str().unwrap()]].concat(), Stdin::Null).ok());
    assert_eq!(served, sorted);
}

/// The nearest-rank quantile, by its definition: the smallest value v such that at least
/// `per_mille / 1000` of the values are at most v.
pub fn nearest_rank_by_definition(values: &[i64], per_mille: i64) -> i64 {
    let mut candidates: Vec<i64> = values.to_vec();
    candidates.sort();
    let n = i64::try_from(values.len()).unwrap();
    *candidates
        .iter()
        .find(|&&v| {
            i64::try_from(values.iter().filter(|&&x| x <= v).count()).unwrap() * 1000
                >= per_mille * n
        })
        .unwrap()
}

/// Checks a report's quantiles (`p50` … `max`) against the values, by definition.
pub fn assert_quantiles(found: &serde_json::Value, values: &[i64]) {
    for (name, per_mille) in [("p50", 500), ("p90", 900), ("p99", 990), ("p99.9", 999)] {
        assert_eq!(found[name], nearest_rank_by_definition(values, per_mille), "{name}");
    }
    assert_eq!(found["max"], *values.iter().max().unwrap());
}

/// Checks a keyed min-bucket result's quantiles and its cover of `per_mille` / 1000 of the
/// keys against each key's need and events, by definition; returns how many it leaves out.
pub fn assert_cover(
    found: &serde_json::Value,
    needs: &[i64],
    events: &[i64],
    per_mille: i64,
) -> usize {
    assert_quantiles(&found["keys"]["quantiles"]["min_bucket"], needs);
    let cover = &found["cover"];
    let burst = nearest_rank_by_definition(needs, per_mille);
    assert_eq!(cover["min_bucket"], burst);
    let covered: Vec<usize> = (0..needs.len()).filter(|&k| needs[k] <= burst).collect();
    assert_eq!(cover["keys_covered"], covered.len());
    assert_eq!(cover["events_covered"], covered.iter().map(|&k| events[k]).sum::<i64>());
    assert_eq!(cover["events"], events.iter().sum::<i64>());
    assert_eq!(cover["left_out"]["count"], needs.len() - covered.len());
    needs.len() - covered.len()
}

#[test]
#[ignore = "needs ../shared/data"]
fn key_quantiles_and_cover_match_brute_force_by_network() {
    let path = real_catalog(M5);
    // 2025 by network: each network's smallest bucket at 5/h, by brute force over pairs.
    let mut by_net: std::collections::BTreeMap<String, Vec<i64>> = Default::default();
    let mut reader = csv::Reader::from_path(&path).unwrap();
    let (since, until) = (ms("2025-01-01T00:00:00Z"), ms("2026-01-01T00:00:00Z"));
    for record in reader.records() {
        let record = record.unwrap();
        let t = ms(&record[0]);
        if t >= since && t < until {
            by_net.entry(record[10].to_owned()).or_default().push(t);
        }
    }
    let needs: Vec<i64> = by_net
        .values_mut()
        .map(|times| {
            times.sort();
            min_bucket(times, 5, 3_600_000)
        })
        .collect();
    let events: Vec<i64> = by_net.values().map(|t| i64::try_from(t.len()).unwrap()).collect();
    let file = path.to_str().unwrap();
    let args = [
        "min-bucket",
        file,
        "--since",
        "2025-01-01",
        "--until",
        "2026-01-01",
        "--rate",
        "5/h",
        "--key",
        "net",
        "--cover",
        "75%",
        "--format",
        "json",
    ];
    let found = json(&run_with(&args, Stdin::Null).ok());
    assert_cover(&found[0], &needs, &events, 750);
    // The dropped events by key, for a replay, against the keys' own figures.
    let args = [
        "replay", file, "--algo", "gcra", "--rate", "5/h", "--burst", "2", "--key", "net", "--top",
        "0", "--format", "json",
    ];
    let report = json(&run_with(&args, Stdin::Null).ok());
    let dropped: Vec<i64> = report["keys"]["top"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["dropped"].as_i64().unwrap())
        .collect();
    assert_quantiles(&report["keys"]["quantiles"]["dropped"], &dropped);
}

#[test]
#[ignore = "needs ../shared/data"]
fn every_number_of_threads_gives_the_same_bytes() {
    let m5 = real_catalog(M5);
    let newest_first = real_catalog("usgs_m4.5_2025.csv");
    let (m5, newest_first) = (m5.to_str().unwrap(), newest_first.to_str().unwrap());
    // By `id`, the 19,032 keys are enough for the per-key pass to be shared among threads.
    let commands: [&[&str]; 7] = [
        &["replay", m5, "--algo", "gcra", "--rate", "5/h", "--burst", "5"],
        &["replay", m5, "--algo", "gcra", "--rate", "5/h", "--key", "id", "--format", "json"],
        &["compare", m5, "--rate", "5/h", "--key", "net", "--format", "json"],
        &["compare", m5, "--rate", "1/h", "--key", "id", "--top", "20"],
        &[
            "min-bucket",
            m5,
            "--rate",
            "5/h,1/h",
            "--key",
            "id",
            "--cover",
            "99.9%",
            "--format",
            "json",
        ],
        &["compare", newest_first, "--rate", "5/h", "--key", "net"],
        &["replay", newest_first, "--algo", "leaky-queue", "--rate", "5/h", "--format", "csv"],
    ];
    for args in commands {
        let one = run_with(&[args, &["--threads", "1"]].concat(), Stdin::Null).ok();
        for threads in ["2", "7"] {
            let many = run_with(&[args, &["--threads", threads]].concat(), Stdin::Null).ok();
            assert!(one == many, "{args:?}: --threads {threads} differs from --threads 1");
        }
    }
    let err = run_with(&[commands[0], &["--threads", "0"]].concat(), Stdin::Null).error();
    assert!(err.contains("--threads"), "{err}");
}
