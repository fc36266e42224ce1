//! The `limits-*` models against the real Python `limits` (from PyPI), its clock patched
//! to each event's time: every event of the 2015–2025 catalog, and a synthetic request log
//! by client, must be decided alike.
//!
//! The helper patches `time.time`, which `limits`' memory storage reads, and stops the
//! storage's background expiry timer, which runs on the real clock every 10 ms and only
//! removes what `get` and `acquire_entry` would treat as expired anyway.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::harness::{Stdin, real_catalog, run, run_with};

/// Reads `micros,key,cost` lines on stdin and prints 1 or 0 per hit, as `limits` decides.
const HELPER: &str = r#"
import sys, time
now = [0.0]
time.time = lambda: now[0]
from limits import RateLimitItemPerSecond, storage, strategies
storage.MemoryStorage._MemoryStorage__schedule_expiry = lambda self: None
kind, count, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
strategy = {
    "limits-fixed-window": strategies.FixedWindowRateLimiter,
    "limits-moving-window": strategies.MovingWindowRateLimiter,
    "limits-sliding-window": strategies.SlidingWindowCounterRateLimiter,
}[kind](storage.MemoryStorage())
item = RateLimitItemPerSecond(count, seconds)
out = []
for line in sys.stdin:
    micros, key, cost = line.split(",")
    now[0] = int(micros) / 1e6
    out.append("1" if strategy.hit(item, key, cost=int(cost)) else "0")
print("\n".join(out))
"#;

/// `limits`' decisions on `events` (µs, key, cost), in order.
fn limits(model: &str, count: u64, seconds: u64, events: &[(i64, String, u64)]) -> Vec<bool> {
    let mut child = Command::new("python3")
        .args(["-c", HELPER, model, &count.to_string(), &seconds.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let lines: String = events.iter().map(|(t, k, c)| format!("{t},{k},{c}\n")).collect();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(lines.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the limits helper failed (pip install limits): {stderr}");
    String::from_utf8(out.stdout).unwrap().lines().map(|l| l == "1").collect()
}

/// The events of a CSV (its first column the time), keyed by `key` (or one key), each of
/// cost `cost`, in time order; ties keep the order of the file.
fn events(csv: &str, key: Option<&str>, cost: u64) -> Vec<(i64, String, u64)> {
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let column = key.map(|k| reader.headers().unwrap().iter().position(|h| h == k).unwrap());
    let mut events: Vec<(i64, String, u64)> = (reader.records())
        .map(|r| {
            let r = r.unwrap();
            let time = chrono::DateTime::parse_from_rfc3339(&r[0]).unwrap().timestamp_micros();
            (time, column.map_or("all".to_owned(), |c| r[c].to_owned()), cost)
        })
        .collect();
    events.sort_by_key(|e| e.0);
    events
}

/// What `ratelimit replay --emit all` decides for `events`, in order.
fn ours(events: &[(i64, String, u64)], args: &[&str]) -> Vec<bool> {
    let mut csv = String::from("time,k,cost\n");
    for (micros, key, cost) in events {
        let time = chrono::DateTime::from_timestamp_micros(*micros).unwrap();
        csv += &format!("{},{key},{cost}\n", time.format("%Y-%m-%dT%H:%M:%S%.6fZ"));
    }
    let replay = ["replay", "-", "--emit", "all", "--key", "k", "--cost", "cost"];
    let out = run(&[&replay[..], args].concat(), &csv).ok();
    out.lines().skip(1).map(|line| line.ends_with(",passed")).collect()
}

#[test]
#[ignore = "needs ../shared/data and Python's limits"]
fn the_limits_models_decide_as_python_limits_does() {
    let catalog = std::fs::read_to_string(real_catalog("usgs_m5_2015_2025.csv")).unwrap();
    let quakes = events(&catalog, None, 1);
    let log = run_with(
        &["synth", "requests", "--clients", "40", "--requests", "30000", "--days", "1"],
        Stdin::Null,
    )
    .ok();
    let requests = events(&log, Some("client"), 1);
    // The same requests, each costing 1 to 3.
    let weighted: Vec<(i64, String, u64)> = (requests.iter().enumerate())
        .map(|(i, (t, k, _))| (*t, k.clone(), 1 + i as u64 % 3))
        .collect();
    for model in ["limits-fixed-window", "limits-moving-window", "limits-sliding-window"] {
        for (name, events, n, seconds) in [
            ("the catalog", &quakes, 5, 3_600),
            ("the request log", &requests, 10, 60),
            ("the weighted log", &weighted, 20, 60),
        ] {
            let rate = format!("{n}/{seconds}s");
            let ours = ours(events, &["--algo", model, "--rate", &rate]);
            let theirs = limits(model, n, seconds, events);
            let parted: Vec<usize> = (0..ours.len()).filter(|&i| ours[i] != theirs[i]).collect();
            assert_eq!(parted, [] as [usize; 0], "{model} on {name} at {rate}");
            let refused = theirs.iter().filter(|&&pass| !pass).count();
            assert!(refused > 0, "{model} on {name}: limits refused nothing");
            eprintln!("{model} on {name}: {} events, {refused} refused, 0 apart", ours.len());
        }
    }
}
