//! `ratelimit compare`: the six limiters side by side, each row what `replay` says.

use crate::QUAKES;
use crate::harness::{Stdin, json, real_catalog, run, run_with};

#[test]
fn table_of_all_six_on_the_inline_catalog() {
    // The rows are the per-limiter figures worked out in replay.rs; the sliding counter's
    // worst hour, [00:30, 01:30), holds 00:30, 00:30 and 01:10.
    let out = run(&["compare", "--rate", "2/h", "--burst", "2", "--color", "never"], QUAKES).ok();
    // Three rows against the limiters' definitions.
    let times = crate::brute::times(QUAKES);
    let rows =
        json(&run(&["compare", "--rate", "2/h", "--burst", "2", "--format", "json"], QUAKES).ok());
    let passed = |algo: &str| {
        rows.as_array().unwrap().iter().find(|r| r["algorithm"] == algo).unwrap()["passed"].clone()
    };
    assert_eq!(passed("sliding-log"), crate::brute::sliding_log(&times, 2, 3_600_000).len());
    assert_eq!(passed("fixed-window"), crate::brute::fixed_window(&times, 2, 3_600_000).len());
    assert_eq!(
        passed("gcra"),
        crate::brute::passed(&crate::brute::gcra(&times, 2, 3_600_000, 2).0)
    );
    insta::assert_snapshot!(out);
}

fn replay_json(args: &[&str], algo: &str, stdin: Stdin) -> serde_json::Value {
    let burst: &[&str] = if matches!(algo, "token-bucket" | "gcra" | "leaky-queue") {
        &["--burst", "5"]
    } else {
        &[]
    };
    let args = [&["replay", "--algo", algo, "--format", "json"], args, burst].concat();
    json(&run_with(&args, stdin).ok())
}

#[test]
#[ignore = "needs ../shared/data"]
fn each_row_is_what_replay_reports_on_the_whole_catalog() {
    let path = real_catalog("usgs_m5_2015_2025.csv");
    let path = path.to_str().unwrap();
    for window in
        [&[][..], &["--since", "2025-07-29T23:24:00Z", "--until", "+48h", "--window", "30m"]]
    {
        let args = [&[path, "--rate", "5/h"], window].concat();
        let rows = json(
            &run_with(
                &[&["compare", "--burst", "5", "--format", "json"], &args[..]].concat(),
                Stdin::Null,
            )
            .ok(),
        );
        let rows = rows.as_array().unwrap();
        assert_eq!(rows.len(), 6);
        for row in rows {
            let algo = row["algorithm"].as_str().unwrap();
            assert_eq!(row, &replay_json(&args, algo, Stdin::Null), "{algo} {window:?}");
            assert_eq!(row["promise"]["held"], true, "{algo}");
        }
    }
}

#[test]
fn csv_has_a_row_per_limiter_and_the_queue_columns() {
    let out = run(&["compare", "--rate", "2/h", "--format", "csv"], QUAKES).ok();
    let mut lines = out.lines();
    let header = lines.next().unwrap();
    assert!(
        header.ends_with(",min_bucket,promise_text,promise_held,delayed,max_wait_s,mean_wait_s"),
        "{header}"
    );
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 6);
    assert!(
        rows[5].starts_with("<stdin>,leaky-queue,2/h,2,7,4,3,")
            && rows[5].ends_with(",true,2,1800,900")
    );
    assert!(rows[0].ends_with(",true,,,"), "{}", rows[0]);
}

#[test]
fn compare_ignores_a_burst_for_limiters_without_one() {
    let rows =
        json(&run(&["compare", "--rate", "2/h", "--burst", "3", "--format", "json"], QUAKES).ok());
    let bursts: Vec<_> = rows.as_array().unwrap().iter().map(|r| r["burst"].clone()).collect();
    let null = serde_json::Value::Null;
    assert_eq!(bursts, [null.clone(), null.clone(), null, 3.into(), 3.into(), 3.into()]);
}
