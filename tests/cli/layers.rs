//! Several limits at once in Redis: `replay`, `filter` and `check` decide all or nothing,
//! in one script call an event, as memory does.

use crate::harness::{RedisServer, Stdin, json, run, run_with};
use crate::weighted::{csv, token_log};

/// Two layered limits that use every limiter between them, each layer refusing some of
/// the token log: keyed and not, weighed and not, by a number and by the column.
const LAYERED: [&[&str]; 2] = [
    &[
        "algo=gcra,rate=20/m,burst=5,key=user",
        "algo=token-bucket,rate=1500/m,burst=1200,cost=tokens",
        "algo=sliding-log,rate=45/m",
    ],
    &[
        "algo=fixed-window,rate=900/m,key=user,cost=tokens",
        "algo=sliding-counter,rate=40/m,cost=2",
        "algo=leaky-queue,rate=30/m,burst=8",
    ],
];

/// Returns `--limit SPEC` for each spec.
fn limits<'a>(specs: &[&'a str]) -> Vec<&'a str> {
    specs.iter().flat_map(|s| ["--limit", *s]).collect()
}

#[test]
#[ignore = "needs redis-server"]
fn redis_decides_every_layer_as_memory_does() {
    let server = RedisServer::start();
    let url = server.url();
    let text = csv(&token_log());
    for specs in LAYERED {
        let args = [&["replay"], &limits(specs)[..], &["--top", "0", "--format", "json"]].concat();
        let memory = run(&args, &text).ok();
        let report = json(&memory);
        for layer in report["layers"].as_array().unwrap() {
            assert!(layer["refused"].as_u64() > Some(0), "every layer bites: {}", layer["spec"]);
        }
        let redis = run_with(&[&args[..], &["--redis", &url]].concat(), Stdin::Pipe(&text)).ok();
        assert_eq!(redis, memory, "{specs:?}");
        // The rows each run passes, with a leaky queue's waits, are the same too.
        let emit = [&["replay"], &limits(specs)[..], &["--emit", "all"]].concat();
        let memory = run(&emit, &text).ok();
        let redis = run_with(&[&emit[..], &["--redis", &url]].concat(), Stdin::Pipe(&text)).ok();
        assert_eq!(redis, memory, "{specs:?}");
    }
    // Keyed layers' keys carry the event's key in their hash tag, the others `{all}`.
    let mut con = server.connection().unwrap();
    let keys: Vec<String> = redis::cmd("KEYS").arg("ratelimit:replay:*").query(&mut con).unwrap();
    assert!(keys.iter().any(|k| k.contains("}:L1:gcra")), "{keys:?}");
    assert!(keys.iter().any(|k| k.contains(":{all}:L2:token-bucket")), "{keys:?}");
}

#[test]
#[ignore = "needs redis-server"]
fn a_live_filter_decides_layers_in_redis_as_in_memory() {
    let server = RedisServer::start();
    let url = server.url();
    // At 1/m, lines arriving at once: a's bucket of 4 takes 2 and 2, then 1 would fit but
    // the shared log of 5 units has 4 and refuses the 2 (charging a nothing), b's 5 can
    // never fit a bucket of 4, and a's 1 then fits both.
    let lines = "user,cost\na,2\nb,2\na,2\nb,5\na,1\nb,1\n";
    let args = [
        "filter",
        "--limit",
        "algo=token-bucket,rate=1/m,burst=4,key=user,cost=cost",
        "--limit",
        "algo=sliding-log,rate=5/m,cost=cost",
    ];
    let memory = run(&args, lines).ok();
    assert_eq!(memory, "user,cost\na,2\nb,2\na,1\n");
    let redis = run_with(&[&args[..], &["--redis", &url]].concat(), Stdin::Pipe(lines)).ok();
    assert_eq!(redis, memory);
}

/// Runs `check KEY` with `extra` and returns its exit code and stdout.
fn check(url: &str, key: &str, extra: &[&str]) -> (i32, String) {
    let out = run(&[&["check", key, "--redis", url], extra].concat(), "");
    (out.code, out.stdout)
}

#[test]
#[ignore = "needs redis-server"]
fn check_answers_for_every_layer_and_charges_none_when_one_refuses() {
    let server = RedisServer::start();
    let url = server.url();
    // Two requests a minute per key, and 100 tokens a minute over all keys.
    let specs = [
        "algo=gcra,rate=2/m,burst=2,key=user",
        "algo=token-bucket,rate=100/m,burst=100,cost=tokens",
    ];
    let layered = |key: &str, cost: &str| {
        let (code, out) = check(
            &url,
            key,
            &[&limits(&specs)[..], &["--cost", cost, "--format", "json"]].concat(),
        );
        (code, json(&out))
    };
    let left = |found: &serde_json::Value| -> Vec<u64> {
        found["layers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["remaining"].as_u64().unwrap())
            .collect()
    };
    let (code, found) = layered("bob", "30");
    crate::json::assert_valid("check", &found, "check --limit");
    assert_eq!((code, left(&found)), (0, vec![1, 70]));
    assert_eq!(found["layers"][0]["key"], "bob");
    assert_eq!(found["layers"][1]["key"], "all");
    assert_eq!((code, left(&layered("ann", "30").1)), (0, vec![1, 40]));
    // 50 tokens do not fit in 40: refused, and ann's request is not spent.
    let (code, found) = layered("ann", "50");
    assert_eq!((code, left(&found)), (1, vec![1, 40]));
    assert_eq!(found["allowed"], false);
    assert_eq!(found["layers"][0]["allowed"], true, "gcra alone would admit it");
    // The wait is the longest any layer asks: 10 tokens come in 6 s.
    let retry = found["retry_after_s"].as_f64().unwrap();
    assert!(retry > 5.5 && retry <= 6.0, "{retry}");
    assert_eq!(
        (layered("ann", "10").0, layered("ann", "10").0),
        (0, 1),
        "ann's second request was not spent"
    );
    // The header lines list one policy a layer.
    let (_, headers) =
        check(&url, "cy", &[&limits(&specs)[..], &["--cost", "5", "--headers"]].concat());
    assert!(headers.starts_with("RateLimit-Policy: \"gcra\";q=2;w=60, \"token-bucket\";q=100;w=60\nRateLimit: \"gcra\";r=1;t=30, \"token-bucket\";r="), "{headers}");
    // A cost no layer is weighed by, and one a layer can never take, are errors.
    let err = run(
        &[&["check", "k", "--redis", &url, "--limit", specs[0]], &["--cost", "3"][..]].concat(),
        "",
    );
    assert_eq!(err.code, 2);
    assert_eq!(
        err.error(),
        "ratelimit: --cost gives its cost to the layers weighed by cost=COLUMN, and no layer is"
    );
    let err = run(
        &[&["check", "k", "--redis", &url], &limits(&specs)[..], &["--cost", "101"]].concat(),
        "",
    )
    .error();
    assert_eq!(
        err,
        "ratelimit: --limit algo=token-bucket,rate=100/m,burst=100,cost=tokens: a cost of 101 can never pass: it is more than the burst, 100"
    );
}

#[test]
fn envoy_layers_count_refused_hits_everywhere_unless_told_to_stop_at_the_limits_over() {
    // 1 a second, then 2 a minute: the request at 0.1 s is over the first; envoy counts
    // its hit in the minute too, which is then over at 1 s, unless it stops counting at
    // the limits that are over.
    let log = "time\n2025-01-01T00:00:00Z\n2025-01-01T00:00:00.1Z\n2025-01-01T00:00:01Z\n";
    let args = [
        "replay",
        "--limit",
        "algo=envoy-ratelimit,rate=1/s",
        "--limit",
        "algo=envoy-ratelimit,rate=2/m",
        "--emit",
        "all",
        "-q",
    ];
    let decisions = |more: &[&str]| run(&[&args[..], more].concat(), log).ok();
    let rows = |last: &str| {
        format!(
            "time,decision\n2025-01-01T00:00:00Z,passed\n2025-01-01T00:00:00.1Z,dropped\n\
             2025-01-01T00:00:01Z,{last}\n"
        )
    };
    assert_eq!(decisions(&[]), rows("dropped"));
    assert_eq!(decisions(&["--stop-counting-over-limit"]), rows("passed"));
}
