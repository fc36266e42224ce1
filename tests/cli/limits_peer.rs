//! The `limits-*` models against the real Python `limits` (from PyPI), its clock patched
//! to each event's time: every event of the 2015–2025 catalog, and a synthetic request log
//! by client, must be decided alike.
//!
//! The helper patches `time.time`, which `limits`' memory storage reads, and stops the
//! storage's background expiry timer, which runs on the real clock every 10 ms and only
//! removes what `get` and `acquire_entry` would treat as expired anyway.

use std::process::Command;

use crate::harness::{Stdin, real_catalog, run_with};
use crate::peer_events::{Event, apart, decisions, events, peer_decisions};

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

/// `limits`' decisions on `events`, in order.
fn limits(model: &str, count: u64, seconds: u64, events: &[Event]) -> Vec<bool> {
    let mut helper = Command::new("python3");
    helper.args(["-c", HELPER, model, &count.to_string(), &seconds.to_string()]);
    let lines: String = events.iter().map(|(t, k, c)| format!("{t},{k},{c}\n")).collect();
    peer_decisions(helper, lines, "the limits helper (pip install limits==5.8.0)")
}

#[test]
#[ignore = "needs ../shared/data and Python's limits"]
fn the_limits_models_decide_as_python_limits_does() {
    let catalog = std::fs::read_to_string(real_catalog("usgs_m5_2015_2025.csv")).unwrap();
    let quakes = events(&catalog, None);
    let log = run_with(
        &["synth", "requests", "--clients", "40", "--requests", "30000", "--days", "1"],
        Stdin::Null,
    )
    .ok();
    let requests = events(&log, Some("client"));
    // The same requests, each costing 1 to 3.
    let weighted: Vec<Event> = (requests.iter().enumerate())
        .map(|(i, (t, k, _))| (*t, k.clone(), 1 + i as u64 % 3))
        .collect();
    let kaggle = kaggle_events();
    for model in ["limits-fixed-window", "limits-moving-window", "limits-sliding-window"] {
        for (name, events, n, seconds) in [
            ("the catalog", &quakes, 5, 3_600),
            // From 1965: windows before the epoch, and the first one after it.
            ("the 1965–2016 catalog", &kaggle, 1, 10),
            ("the request log", &requests, 10, 60),
            ("the weighted log", &weighted, 20, 60),
        ] {
            let rate = format!("{n}/{seconds}s");
            let ours = decisions(events, &["--algo", model, "--rate", &rate]);
            let theirs = limits(model, n, seconds, events);
            assert_eq!(apart(&theirs, &ours), [] as [usize; 0], "{model} on {name} at {rate}");
            let refused = theirs.iter().filter(|&&pass| !pass).count();
            assert!(refused > 0, "{model} on {name}: limits refused nothing");
            eprintln!("{model} on {name}: {} events, {refused} refused, 0 apart", ours.len());
        }
    }
}

/// The Kaggle catalog of significant earthquakes, 1965–2016, whose times are a date
/// (`MM/DD/YYYY`) and a time of day in two columns; the few rows written otherwise are
/// left out, of both sides alike.
fn kaggle_events() -> Vec<Event> {
    let text =
        std::fs::read_to_string(real_catalog("kaggle_significant_earthquakes_1965_2016.csv"))
            .unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let mut events: Vec<Event> = (reader.records())
        .filter_map(|r| {
            let r = r.unwrap();
            let when = format!("{} {}", &r[0], &r[1]);
            let time = chrono::NaiveDateTime::parse_from_str(&when, "%m/%d/%Y %H:%M:%S").ok()?;
            Some((time.and_utc().timestamp_micros(), "all".to_owned(), 1))
        })
        .collect();
    events.sort_by_key(|e| e.0);
    assert!(events.len() > 23_000 && events[0].0 < 0, "{} events", events.len());
    events
}
