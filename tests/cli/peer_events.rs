//! Events for checking a model against its real peer: read from a CSV in time order, and
//! replayed through `ratelimit` for its decision on each.

use crate::harness::{Stdin, real_catalog, run, run_with};

/// An event: its time in µs since the epoch, its key, and its cost.
pub type Event = (i64, String, u64);

/// `count` requests `step` µs apart from `start`, each of cost 1: every `every`th, from
/// the first, without a key (empty), the others of key `a`.
pub fn some_keyless(start: i64, step: i64, count: i64, every: i64) -> Vec<Event> {
    let key = |i: i64| if i % every == 0 { String::new() } else { "a".into() };
    (0..count).map(|i| (start + i * step, key(i), 1)).collect()
}

/// The events of a CSV whose first column is the time, keyed by the column `key` (or all
/// one key), each of cost 1, in time order (ties in the order of the file).
pub fn events(csv: &str, key: Option<&str>) -> Vec<Event> {
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let column = key.map(|k| reader.headers().unwrap().iter().position(|h| h == k).unwrap());
    let mut events: Vec<Event> = (reader.records())
        .map(|r| {
            let r = r.unwrap();
            let time = chrono::DateTime::parse_from_rfc3339(&r[0]).unwrap().timestamp_micros();
            (time, column.map_or("all".to_owned(), |c| r[c].to_owned()), 1)
        })
        .collect();
    events.sort_by_key(|e| e.0);
    events
}

/// What `ratelimit replay --emit all` with `args` decides for `events`, one per event, in
/// order: they are written as a CSV of `time,k,cost`, keyed by `k` and weighed by `cost`
/// (`--limit` layers say their keys and costs themselves).
pub fn decisions(events: &[Event], args: &[&str]) -> Vec<bool> {
    let csv = csv(events);
    let replay = ["replay", "-", "--emit", "all", "--key", "k", "--cost", "cost"];
    // Weighed only if some event costs other than 1: the systems that count each request
    // once take no --cost at all.
    let weighed = events.iter().any(|&(_, _, cost)| cost != 1);
    let replay = match (args.contains(&"--limit"), weighed) {
        (true, _) => &replay[..4],
        (false, false) => &replay[..6],
        (false, true) => &replay[..],
    };
    let out = run(&[replay, args].concat(), &csv).ok();
    out.lines().skip(1).map(|line| line.ends_with(",passed")).collect()
}

/// The events as a CSV of `time,k,cost`.
pub fn csv(events: &[Event]) -> String {
    let mut csv = String::from("time,k,cost\n");
    for (micros, key, cost) in events {
        let time = chrono::DateTime::from_timestamp_micros(*micros).unwrap();
        csv += &format!("{},{key},{cost}\n", time.format("%Y-%m-%dT%H:%M:%S%.6fZ"));
    }
    csv
}

/// The events on which the peer and the model part.
pub fn apart(peer: &[bool], model: &[bool]) -> Vec<usize> {
    assert_eq!(peer.len(), model.len(), "one decision an event");
    (0..peer.len()).filter(|&i| peer[i] != model[i]).collect()
}

/// The peer's decisions: `peer` run with `input` on stdin, printing `1` (passed) or `0`
/// (refused) a line, one an event; `what` says what to install if it fails.
pub fn peer_decisions(mut peer: std::process::Command, input: String, what: &str) -> Vec<bool> {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = (peer.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()))
        .spawn()
        .unwrap_or_else(|e| panic!("{what} does not run ({e})"));
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{what} failed: {stderr}");
    String::from_utf8(out.stdout).unwrap().lines().map(|line| line == "1").collect()
}

/// A seeded stream of `count` requests over five keys, each costing 1 (or 1 to 3 if
/// `weighed`): a quarter at the time of the one before, a quarter under a millisecond
/// later, a fifth exactly a millisecond later, the rest up to 3 s or 10 s later.
pub fn bursty(count: usize, weighed: bool) -> Vec<Event> {
    let mut seed: u64 = 0x5EED_2026;
    let mut next = move |below: u64| {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % below
    };
    let mut t: i64 = 1_735_689_600_000_000; // 2025-01-01T00:00:00Z, in µs.
    (0..count)
        .map(|_| {
            let step = match next(20) {
                0..=4 => 0,
                5..=9 => 1 + next(999),
                10..=13 => 1000,
                14..=18 => 1000 * (1 + next(3000)),
                _ => 10_000_000,
            };
            t += i64::try_from(step).unwrap();
            let key = format!("k{}", next(5));
            (t, key, if weighed { 1 + next(3) } else { 1 })
        })
        .collect()
}

/// The test's streams: a keyed request log, the bursty stream, and the catalog.
pub fn streams(weighed: bool) -> Vec<(&'static str, Vec<Event>)> {
    let log = run_with(
        &[
            "synth",
            "requests",
            "--clients",
            "300",
            "--requests",
            "100000",
            "--days",
            "1",
            "--seed",
            "7",
        ],
        Stdin::Null,
    )
    .ok();
    let mut log = events(&log, Some("client"));
    if weighed {
        for (i, event) in log.iter_mut().enumerate() {
            event.2 = 1 + i as u64 % 3;
        }
    }
    let catalog = std::fs::read_to_string(real_catalog("usgs_m5_2015_2025.csv")).unwrap();
    vec![
        ("the request log", log),
        ("the bursty stream", bursty(30_000, weighed)),
        ("the catalog", events(&catalog, None)),
    ]
}

/// Checks one setting of a system against its peer on every stream, each at its rates
/// (N per P ms; whole seconds only, if the system's periods are): `decide(n, ms, events)` gives the setting's `--limit` spec, our decisions
/// and the peer's. They must be the same, the peer must refuse some and pass some (none
/// refused only if `may_refuse_none`), and a setting is checked on at least 100,000
/// decisions. Returns how many.
pub fn agree_everywhere(
    setting: &str,
    streams: &[(&str, Vec<Event>)],
    (may_refuse_none, seconds): (bool, bool),
    decide: impl Fn(u64, u64, &[Event]) -> (String, Vec<bool>, Vec<bool>),
) -> usize {
    let mut total = 0;
    for (name, events) in streams {
        let rates: &[(u64, u64)] = match *name {
            "the request log" => &[(30, 60_000), (3, 1_500)],
            "the bursty stream" => &[(5, 1_500), (8, 4_000)],
            _ => &[(5, 3_600_000)],
        };
        for &(n, ms) in rates {
            // 1.5 s made whole: 2 s.
            let ms = if seconds { ms.div_ceil(1000) * 1000 } else { ms };
            let (spec, ours, theirs) = decide(n, ms, events);
            assert_eq!(apart(&theirs, &ours), [] as [usize; 0], "{setting} on {name} at {spec}");
            let refused = theirs.iter().filter(|&&pass| !pass).count();
            let some = (refused > 0 || may_refuse_none) && refused < theirs.len();
            assert!(some, "{setting} on {name} at {spec}: {refused} refused");
            eprintln!(
                "{setting} on {name} at {n}/{ms}ms: {} events, {refused} refused, 0 apart",
                ours.len()
            );
            total += ours.len();
        }
    }
    assert!(total >= 100_000, "{setting}: {total} decisions");
    eprintln!("{setting}: {total} decisions, 0 apart");
    total
}
