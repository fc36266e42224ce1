//! `ratelimit replay` on the inline catalog, with every figure worked out by hand.

use crate::harness::{json, run};
use crate::{QUAKES, brute};

const HOUR: i64 = 3_600_000;

#[test]
fn table_for_gcra() {
    // I = 30 min, b = 2. 00:30 and 00:30 take both tokens; 00:40 and 00:50 find a third
    // and two thirds of one; 01:00 finds one; 01:10 a third; 02:30 a full bucket. The
    // passed events need a bucket of 2 (three in 30 minutes: 3 − 1).
    let out = run(&["replay", "--algo", "gcra", "--rate", "2/h", "--burst", "2"], QUAKES).ok();
    let (decisions, _) = brute::gcra(&brute::times(QUAKES), 2, HOUR, 2);
    assert_eq!(counts("gcra", &["--burst", "2"]).0, brute::passed(&decisions) as u64);
    insta::assert_snapshot!(out);
}

#[test]
fn json_for_leaky_queue() {
    // The second 00:30 event waits 30 min, the 01:00 one waits until 01:30; 00:40, 00:50
    // and 01:10 would wait 50, 40 and 50 min, more than (b − 1)·I = 30 min.
    let args = ["replay", "-", "--algo", "leaky-queue", "--rate", "2/h", "--format", "json"];
    let out = run(&args, QUAKES).ok();
    // The queue admits what GCRA passes, and its longest wait is GCRA's tat − t.
    let (decisions, longest) = brute::gcra(&brute::times(QUAKES), 2, HOUR, 2);
    let report = json(&out);
    assert_eq!(report["passed"], brute::passed(&decisions));
    assert_eq!(report["max_wait_s"], longest / 2 / 1000);
    insta::assert_snapshot!(out);
}

#[test]
fn csv_for_fixed_window() {
    // Clock hours: 00:30, 00:30 pass in hour 0; 01:00, 01:10 in hour 1; 02:30 in hour 2.
    // [00:30, 01:30) holds four passed events: twice N, across the window edge, which the
    // promise allows.
    let args = ["replay", "--algo", "fixed-window", "--rate", "2/h", "--format", "csv"];
    let out = run(&args, QUAKES).ok();
    let passed = brute::fixed_window(&brute::times(QUAKES), 2, HOUR);
    let mut rows = csv::Reader::from_reader(out.as_bytes());
    let header = rows.headers().unwrap().clone();
    let row = rows.records().next().unwrap().unwrap();
    let field = |name: &str| row[header.iter().position(|h| h == name).unwrap()].to_string();
    assert_eq!(field("passed"), passed.len().to_string());
    assert_eq!(field("busiest_window_count"), brute::busiest(&passed, HOUR).to_string());
    insta::assert_snapshot!(out);
}

fn counts(algo: &str, extra: &[&str]) -> (u64, u64, u64) {
    let mut args = vec!["replay", "--algo", algo, "--rate", "2/h", "--format", "json"];
    args.extend(extra);
    let report = json(&run(&args, QUAKES).ok());
    let field = |name: &str| report[name].as_u64().unwrap();
    (field("passed"), field("dropped"), report["busiest_window"]["count"].as_u64().unwrap())
}

#[test]
fn every_limiter_on_the_same_burst() {
    // sliding-log: 00:40–01:10 all still see the two 00:30 events within the hour.
    assert_eq!(counts("sliding-log", &[]), (3, 4, 2));
    // sliding-counter: 01:00 sees prev = 2 at full weight; 01:10 sees 2·50/60 < 2.
    assert_eq!(counts("sliding-counter", &[]), (4, 3, 3));
    assert_eq!(counts("token-bucket", &[]), (4, 3, 3));
    assert_eq!(counts("gcra", &[]), (4, 3, 3));
    assert_eq!(counts("fixed-window", &[]), (5, 2, 4));
}

#[test]
fn filters_select_events() {
    // --min-mag 5 leaves out t3 (4.9): with it gone, nothing else changes for gcra.
    assert_eq!(counts("gcra", &["--min-mag", "5"]), (4, 2, 3));
    // [00:40, 01:10) holds 00:40, 00:50, 01:00: a full bucket passes two, then 01:00 has
    // two thirds of a token.
    let window = ["--since", "2025-07-30T00:40:00Z", "--until", "+30m"];
    assert_eq!(counts("gcra", &window), (2, 1, 2));
    let window = ["--since", "2025-07-30T00:40:00Z", "--until", "2025-07-30T01:10:00Z"];
    assert_eq!(counts("gcra", &window), (2, 1, 2));
}

#[test]
fn window_sets_the_busiest_window_length() {
    let args = ["replay", "--algo", "gcra", "--rate", "2/h", "--window", "10m", "--format", "json"];
    let report = json(&run(&args, QUAKES).ok());
    // Ten minutes from 00:30 holds the two 00:30 events; 00:40 is outside (half-open).
    assert_eq!(report["busiest_window"]["length_s"], 600);
    assert_eq!(report["busiest_window"]["count"], 2);
    assert_eq!(report["demand_busiest_window"]["count"], 2);
}

#[test]
fn an_empty_catalog_is_a_report_of_zeros() {
    let header = QUAKES.lines().next().unwrap();
    let args = ["replay", "--algo", "token-bucket", "--rate", "5/h", "--format", "json"];
    let report = json(&run(&args, &format!("{header}\n")).ok());
    assert_eq!(report["events"], 0);
    assert_eq!(report["passed"], 0);
    assert_eq!(report["dropped"], 0);
    assert_eq!(report["busiest_window"]["count"], 0);
    assert!(report["busiest_window"]["start"].is_null());
    assert_eq!(report["min_bucket"], 0);
    // No bytes at all is an empty catalog too.
    assert_eq!(json(&run(&args, "").ok())["events"], 0);
}

#[test]
fn unix_epoch_times_in_another_column() {
    let csv = "id,at_ms\na,1753835400000\nb,1753835400000\nc,1753837200000\n";
    let args = [
        "replay",
        "--algo",
        "gcra",
        "--rate",
        "2/h",
        "--burst",
        "1",
        "--time-column",
        "at_ms",
        "--time-format",
        "unix-ms",
        "--format",
        "json",
    ];
    let report = json(&run(&args, csv).ok());
    assert_eq!((report["passed"].as_u64(), report["dropped"].as_u64()), (Some(2), Some(1)));
    assert_eq!(report["demand_busiest_window"]["start"], "2025-07-30T00:30:00Z");
}

#[test]
fn color_only_when_asked_or_on_a_terminal() {
    let args = ["replay", "--algo", "gcra", "--rate", "2/h"];
    assert!(!run(&args, QUAKES).ok().contains('\x1b'), "a pipe gets no color");
    let colored = run(&[&args[..], &["--color", "always"]].concat(), QUAKES).ok();
    assert!(colored.contains("\x1b[1mevents\x1b[0m"));
    let json_args = [&args[..], &["--color", "always", "--format", "json"]].concat();
    assert!(!run(&json_args, QUAKES).ok().contains('\x1b'), "machine formats are never colored");
}

#[test]
fn the_environment_forces_or_forbids_color_as_clicolor_says() {
    let args = ["replay", "--algo", "gcra", "--rate", "2/h"];
    let with_env = |vars: &[(&str, &str)]| {
        let mut cmd = crate::harness::command();
        cmd.args(args).envs(vars.iter().copied()).stdin(std::process::Stdio::piped());
        let mut child = cmd.stdout(std::process::Stdio::piped()).spawn().unwrap();
        use std::io::Write;
        child.stdin.take().unwrap().write_all(QUAKES.as_bytes()).unwrap();
        String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap()
    };
    // A pipe, but CLICOLOR_FORCE asks for color; NO_COLOR wins over it.
    assert!(with_env(&[("CLICOLOR_FORCE", "1")]).contains("\x1b[1mevents\x1b[0m"));
    assert!(!with_env(&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]).contains('\x1b'));
    // --color never beats the environment.
    let never = [&args[..], &["--color", "never"]].concat();
    let mut cmd = crate::harness::command();
    let out = cmd
        .args(never)
        .env("CLICOLOR_FORCE", "1")
        .stdin(std::fs::File::open("/dev/null").unwrap())
        .output()
        .unwrap();
    assert!(!String::from_utf8(out.stdout).unwrap().contains('\x1b'));
}

#[test]
fn where_keeps_the_rows_whose_column_is_at_least_a_number() {
    // score>=7 keeps rows 2 and 4 of four (row 3's score is empty: left out, and said);
    // with mag>=5 too, only row 2 is left, whose mag is empty: none.
    let csv = "time,score,mag\n2025-01-01T00:00:00Z,3,5\n2025-01-01T00:00:01Z,7.5,\n\
               2025-01-01T00:00:02Z,,6\n2025-01-01T00:00:03Z,9,4\n";
    let replay = ["replay", "--algo", "gcra", "--rate", "5/h", "--format", "json"];
    let out = run(&[&replay[..], &["--where", "score>=7"]].concat(), csv);
    assert_eq!(
        out.stderr,
        "ratelimit: note: 1 rows with an empty field were left out by --where\n"
    );
    let want = csv
        .lines()
        .skip(1)
        .filter(|l| {
            l.split(',').nth(1).is_some_and(|s| !s.is_empty() && s.parse::<f64>().unwrap() >= 7.0)
        })
        .count();
    assert_eq!(json(&out.ok())["events"].as_u64(), Some(u64::try_from(want).unwrap()));
    let both = run(&[&replay[..], &["--where", "score>=7", "--where", "mag>=5"]].concat(), csv);
    assert_eq!(json(&both.stdout)["events"].as_u64(), Some(0));
    assert!(
        both.stderr.contains("the filters (--where score>=7, --where mag>=5) kept none"),
        "{}",
        both.stderr
    );
    let err = run(&[&replay[..], &["--where", "score=7"]].concat(), csv).error();
    assert!(err.ends_with("'score=7' is not COLUMN>=NUMBER, like mag>=5.5"), "{err}");
}
