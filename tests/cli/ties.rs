//! Whole-second ties: read together or spread (`--ties`), and both readings in view.

use crate::harness::{Stdin, json, run_with, temp_file};

/// Ten people's requests logged to the second: bursts of 2 to 5 in one second.
const WHOLE: &str = "time,client\n\
    2025-01-01T00:00:00Z,a\n2025-01-01T00:00:00Z,b\n2025-01-01T00:00:00Z,a\n\
    2025-01-01T00:00:01Z,c\n\
    2025-01-01T00:00:02Z,a\n2025-01-01T00:00:02Z,a\n2025-01-01T00:00:02Z,b\n\
    2025-01-01T00:00:02Z,c\n2025-01-01T00:00:02Z,a\n\
    2025-01-01T00:00:04Z,b\n2025-01-01T00:00:04Z,b\n";

/// The same requests with each second's n tied ones at k/n s, k = 0..n, in whole
/// microseconds rounded down, written out by hand's arithmetic: the spread reading.
fn spread_by_hand(csv: &str) -> String {
    let mut rows: Vec<(String, String)> = (csv.lines().skip(1))
        .map(|l| l.split_once(',').map(|(t, c)| (t.to_owned(), c.to_owned())).unwrap())
        .collect();
    let mut start = 0;
    while start < rows.len() {
        let second = rows[start].0.clone();
        let n = rows[start..].iter().take_while(|(t, _)| *t == second).count();
        for k in 0..n {
            let micros = k * 1_000_000 / n;
            rows[start + k].0 = second.replace('Z', &format!(".{micros:06}Z"));
        }
        start += n;
    }
    let body: String = rows.iter().map(|(t, c)| format!("{t},{c}\n")).collect();
    format!("time,client\n{body}")
}

fn dropped(args: &[&str]) -> (u64, serde_json::Value) {
    let out = run_with(args, Stdin::Null).ok();
    let found = json(&out);
    (found["dropped"].as_u64().unwrap(), found)
}

#[test]
fn ties_spread_reads_each_second_as_the_hand_spread_times() {
    let whole = temp_file("whole.csv", WHOLE);
    let spread = temp_file("spread.csv", &spread_by_hand(WHOLE));
    for algo in ["gcra", "sliding-log", "nginx"] {
        let args = |file: &str, ties: &str| {
            ["replay", file, "--algo", algo, "--rate", "2/s", "--format", "json", "--ties", ties]
                .map(str::to_owned)
        };
        let run = |a: [String; 10]| dropped(&a.iter().map(String::as_str).collect::<Vec<_>>());
        let (spread_whole, _) = run(args(whole.to_str().unwrap(), "spread"));
        let (by_hand, _) = run(args(spread.to_str().unwrap(), "together"));
        assert_eq!(spread_whole, by_hand, "{algo}");
    }
    // By hand, GCRA at 2/s, burst 1 (I = 1/2 s): together, second 0 passes one of three,
    // c at 1 s passes, second 2 one of five, second 4 one of two: 7 dropped. Spread, second
    // 0's three at 0, 1/3 and 2/3 s pass at 0 and 2/3 (tat 7/6 s); c at 1 s is dropped;
    // second 2's five at 0, .2, .4, .6, .8 pass at 0 and .6; second 4's two at 0 and .5
    // both pass: 1 + 1 + 3 = 5 dropped.
    let file = whole.to_str().unwrap();
    let gcra = ["replay", file, "-a", "gcra", "-r", "2/s", "-b", "1", "-f", "json"];
    assert_eq!(dropped(&gcra).0, 7);
    assert_eq!(dropped(&[&gcra[..], &["--ties", "spread"]].concat()).0, 5);
    // The sizing reads them the same way: min-bucket at 2/s, spread by --ties or by hand.
    let size = |file: &str, ties: &str| {
        let args = ["min-bucket", file, "--rate", "2/s", "--ties", ties, "--format", "json"];
        json(&run_with(&args, Stdin::Null).ok())[0]["min_bucket"].clone()
    };
    assert_eq!(size(whole.to_str().unwrap(), "spread"), size(spread.to_str().unwrap(), "together"));
    assert_eq!(size(whole.to_str().unwrap(), "together"), 5);
}

#[test]
fn compare_prints_the_other_reading_of_ties_beside_each_configuration() {
    let whole = temp_file("whole.csv", WHOLE);
    let spread = temp_file("spread.csv", &spread_by_hand(WHOLE));
    let limits =
        ["--limit", "algo=gcra,rate=2/s,burst=1", "--limit", "algo=nginx,rate=2r/s,burst=1"];
    let compare = |file: &str, ties: &str| {
        let args = [&["compare", file, "--ties", ties, "--format", "json"][..], &limits].concat();
        json(&run_with(&args, Stdin::Null).ok())
    };
    let together = compare(whole.to_str().unwrap(), "together");
    let spread_read = compare(whole.to_str().unwrap(), "spread");
    let by_hand = compare(spread.to_str().unwrap(), "together");
    for n in 0..2 {
        let read = &together["configurations"][n];
        // Beside each configuration: the spread reading's figures, which are the hand-spread
        // file's; and read spread, the together reading's beside it.
        assert_eq!(read["other_ties"]["ties"], "spread");
        assert_eq!(read["other_ties"]["dropped"], by_hand["configurations"][n]["dropped"]);
        let spread_one = &spread_read["configurations"][n];
        assert_eq!(spread_one["dropped"], by_hand["configurations"][n]["dropped"]);
        assert_eq!(spread_one["other_ties"]["ties"], "together");
        assert_eq!(spread_one["other_ties"]["dropped"], read["dropped"]);
        // Times finer than the second leave nothing to read two ways.
        assert_eq!(by_hand["configurations"][n].get("other_ties"), None);
    }
    assert_eq!(together["configurations"][0]["dropped"], 7);
    assert_eq!(together["configurations"][0]["other_ties"]["dropped"], 5);
    // The table puts it in a column of its own.
    let args = [&["compare", whole.to_str().unwrap()][..], &limits].concat();
    let table = run_with(&args, Stdin::Null).ok();
    let header = table.lines().find(|l| l.starts_with("configuration")).unwrap();
    assert!(header.contains("dropped, ties spread"), "{table}");
}

#[test]
fn compare_of_limiters_says_what_each_drops_with_the_ties_read_the_other_way() {
    let whole = temp_file("whole.csv", WHOLE);
    let file = whole.to_str().unwrap();
    let spread = temp_file("spread.csv", &spread_by_hand(WHOLE));
    let args = ["compare", file, "--rate", "2/s", "--burst", "1", "--algo", "gcra,sliding-log"];
    let out = run_with(&args, Stdin::Null);
    let note = out.stderr.lines().find(|l| l.contains("read with --ties spread")).unwrap();
    // Each limiter's drops read together, and on the hand-spread file.
    let drops = |file: &str, algo: &str| {
        let burst: &[&str] = if algo == "gcra" { &["-b", "1"] } else { &[] };
        let args = [&["replay", file, "-a", algo, "-r", "2/s", "-f", "json"][..], burst].concat();
        dropped(&args).0
    };
    let (log, log_spread) =
        (drops(file, "sliding-log"), drops(spread.to_str().unwrap(), "sliding-log"));
    let (gcra, gcra_spread) = (drops(file, "gcra"), drops(spread.to_str().unwrap(), "gcra"));
    assert_eq!((gcra, gcra_spread), (7, 5), "by hand, above");
    let figures = format!("gcra {gcra_spread} ({gcra}), sliding-log {log_spread} ({log})");
    assert!(
        note.ends_with(&format!("the limits drop {figures} (in brackets, read together)")),
        "{note}"
    );
    let bad = run_with(&["replay", "--ties", "apart", "-r", "1/s"], Stdin::Null).error();
    assert!(bad.contains("invalid value 'apart' for '--ties <READING>'"), "{bad}");
}

#[test]
fn requests_settled_after_the_response_are_not_read_spread() {
    // A request's arrival and its completion are read together: spreading the arrivals
    // would move them away from their completions, so --ties spread is refused there.
    let log = temp_file("llm.csv", "time,duration\n2025-01-01T00:00:00Z,500\n");
    let args = ["replay", log.to_str().unwrap(), "--limit", "algo=gcra,rate=1/s"];
    let settled = [&args[..], &["--duration", "duration", "--ties", "spread"]].concat();
    let err = run_with(&settled, Stdin::Null).error();
    assert!(err.ends_with("--ties spread does not read requests settled after the response (--duration, --end): their arrivals are read as written (--ties together)"), "{err}");
    let together = [&args[..], &["--duration", "duration", "--ties", "together"]].concat();
    run_with(&together, Stdin::Null).ok();
}
