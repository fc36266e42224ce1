//! The Node limiters' models against the real npm packages (express-rate-limit,
//! rate-limiter-flexible, @nestjs/throttler, at the versions `tests/npm/package.json` pins),
//! each run on Node's own fake clock by `tests/npm/peer.js`: every request of a keyed request
//! log, a seeded bursty stream (equal times, steps of a microsecond and a millisecond) and
//! the 2015–2025 catalog must be decided alike, in every setting.

use std::path::PathBuf;
use std::process::Command;

use crate::harness::{Stdin, real_catalog, run_with};
use crate::peer_events::{Event, apart, decisions, events, peer_decisions};

/// Where `.ci/run` installs the npm packages (`npm ci`), beside the helper.
fn npm_folder() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/npm")
}

/// The package's decisions on `events`, with the helper's `words` (`windowMs=…`, …).
fn node(system: &str, words: &[String], events: &[Event]) -> Vec<bool> {
    let folder = npm_folder();
    assert!(
        folder.join("node_modules/express-rate-limit").is_dir(),
        "the npm peers are not installed: npm ci --prefix tests/npm (as .ci/run does)"
    );
    let mut helper = Command::new("node");
    helper.current_dir(&folder).args(["--no-warnings", "peer.js", system]).args(words);
    let lines: String = events.iter().map(|(t, k, c)| format!("{t},{k},{c}\n")).collect();
    peer_decisions(helper, lines, "the npm helper (Node 20, and npm ci --prefix tests/npm)")
}

/// A seeded stream of `count` requests over five keys, each costing 1 (or 1 to 3 if
/// `weighed`): a quarter at the time of the one before, a quarter under a millisecond
/// later, a fifth exactly a millisecond later, the rest up to 3 s or 10 s later.
fn bursty(count: usize, weighed: bool) -> Vec<Event> {
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
fn streams(weighed: bool) -> Vec<(&'static str, Vec<Event>)> {
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

/// A length of time in ms as JavaScript seconds: `1.5`, `3600`.
fn js_seconds(ms: u64) -> String {
    let text = format!("{}.{:03}", ms / 1000, ms % 1000);
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// One setting: our `--limit` spec at N per P ms, and the helper's words for the same.
type Setting = fn(u64, u64) -> (String, Vec<String>);

/// Checks each setting against the package on every stream, at the stream's rates.
fn agree(system: &str, weighed: bool, settings: &[(&str, Setting)]) {
    let streams = streams(weighed);
    for (setting, make) in settings {
        let mut total = 0;
        for (name, events) in &streams {
            let rates: &[(u64, u64)] = match *name {
                "the request log" => &[(30, 60_000), (3, 1_500)],
                "the bursty stream" => &[(5, 1_500), (8, 4_000)],
                _ => &[(5, 3_600_000)],
            };
            for &(n, ms) in rates {
                let (spec, words) = make(n, ms);
                let ours = decisions(events, &["--limit", &spec]);
                let theirs = node(system, &words, events);
                let off = apart(&theirs, &ours);
                assert_eq!(off, [] as [usize; 0], "{system} {setting} on {name} at {spec}");
                let refused = theirs.iter().filter(|&&pass| !pass).count();
                assert!(
                    refused > 0 && refused < theirs.len(),
                    "{spec} on {name}: {refused} refused"
                );
                eprintln!(
                    "{system} {setting} on {name} at {n}/{ms}ms: {} events, {refused} refused, 0 apart",
                    ours.len()
                );
                total += ours.len();
            }
        }
        assert!(total >= 100_000, "{system} {setting}: {total} decisions");
        eprintln!("{system} {setting}: {total} decisions, 0 apart");
    }
}

#[test]
#[ignore = "needs Node, the npm peers (npm ci --prefix tests/npm) and ../shared/data"]
fn express_rate_limit_decides_as_the_real_package() {
    agree(
        "express-rate-limit",
        false,
        &[
            ("8.7.4, reset=per-key", |n, ms| {
                let spec = format!("algo=express-rate-limit,windowMs={ms},limit={n},key=k");
                (spec, vec![format!("windowMs={ms}"), format!("limit={n}")])
            }),
            // v6's interval started at a whole multiple of windowMs before the first request.
            ("6.11.2, reset=global", |n, ms| {
                let spec =
                    format!("algo=express-rate-limit,windowMs={ms},limit={n},reset=global,key=k");
                let words = vec![
                    format!("windowMs={ms}"),
                    format!("limit={n}"),
                    "version=6".into(),
                    "origin=aligned".into(),
                ];
                (spec, words)
            }),
        ],
    );
}

#[test]
#[ignore = "needs Node, the npm peers (npm ci --prefix tests/npm) and ../shared/data"]
fn rate_limiter_flexible_decides_as_the_real_package() {
    agree(
        "rate-limiter-flexible",
        true,
        &[
            ("11.4.0", |n, ms| {
                let spec = format!(
                    "algo=rate-limiter-flexible,points={n},duration={},key=k,cost=cost",
                    js_seconds(ms)
                );
                (spec, vec![format!("points={n}"), format!("duration={}", js_seconds(ms))])
            }),
            ("11.4.0, block=3·duration", |n, ms| {
                let (d, b) = (js_seconds(ms), js_seconds(3 * ms));
                let spec = format!(
                    "algo=rate-limiter-flexible,points={n},duration={d},block={}ms,key=k,cost=cost",
                    3 * ms
                );
                (
                    spec,
                    vec![
                        format!("points={n}"),
                        format!("duration={d}"),
                        format!("blockDuration={b}"),
                    ],
                )
            }),
        ],
    );
}

#[test]
#[ignore = "needs Node, the npm peers (npm ci --prefix tests/npm) and ../shared/data"]
fn nestjs_throttler_decides_as_the_real_package() {
    agree(
        "nestjs-throttler",
        false,
        &[
            ("6.7.1, blockDuration=ttl", |n, ms| {
                let spec = format!("algo=nestjs-throttler,ttl={ms},limit={n},key=k");
                (spec, vec![format!("ttl={ms}"), format!("limit={n}")])
            }),
            ("6.7.1, blockDuration=0", |n, ms| {
                let spec = format!("algo=nestjs-throttler,ttl={ms},limit={n},block=0,key=k");
                (spec, vec![format!("ttl={ms}"), format!("limit={n}"), "blockDuration=0".into()])
            }),
            ("6.7.1, blockDuration=2.5·ttl", |n, ms| {
                let block = ms * 5 / 2;
                let spec =
                    format!("algo=nestjs-throttler,ttl={ms},limit={n},block={block}ms,key=k");
                (
                    spec,
                    vec![
                        format!("ttl={ms}"),
                        format!("limit={n}"),
                        format!("blockDuration={block}"),
                    ],
                )
            }),
        ],
    );
}
