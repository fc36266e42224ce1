//! The Node limiters' models against the real npm packages (express-rate-limit,
//! rate-limiter-flexible, @nestjs/throttler, at the versions `tests/npm/package.json` pins),
//! each run on Node's own fake clock by `tests/npm/peer.js`: every request of a keyed request
//! log, a seeded bursty stream (equal times, steps of a microsecond and a millisecond) and
//! the 2015–2025 catalog must be decided alike, in every setting.

use std::path::PathBuf;
use std::process::Command;

use crate::peer_events::{Event, agree_everywhere, decisions, peer_decisions, streams};

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

/// A length of time in ms as JavaScript seconds: `1.5`, `3600`.
fn js_seconds(ms: u64) -> String {
    let text = format!("{}.{:03}", ms / 1000, ms % 1000);
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// One setting: our `--limit` spec at N per P ms, and the helper's words for the same.
type Setting = fn(u64, u64) -> (String, Vec<String>);

/// Checks each setting against the package on every stream, at the streams' rates.
fn agree(system: &str, weighed: bool, settings: &[(&str, Setting)]) {
    let streams = streams(weighed);
    for (setting, make) in settings {
        agree_everywhere(
            &format!("{system} {setting}"),
            &streams,
            (false, false),
            |n, ms, events| {
                let (spec, words) = make(n, ms);
                let ours = decisions(events, &["--limit", &spec]);
                (spec, ours, node(system, &words, events))
            },
        );
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
