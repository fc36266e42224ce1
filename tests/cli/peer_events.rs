//! Events for checking a model against its real peer: read from a CSV in time order, and
//! replayed through `ratelimit` for its decision on each.

use crate::harness::run;

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
