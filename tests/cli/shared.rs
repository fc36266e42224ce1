//! Shared limits in Redis: the same decisions as in memory, keys that expire, a live check
//! with exit codes, and failures reported as errors.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::QUAKES;
use crate::harness::{RedisServer, Stdin, json, real_catalog, run, run_with, temp_file};

const ALGOS: [&str; 6] =
    ["fixed-window", "sliding-log", "sliding-counter", "token-bucket", "gcra", "leaky-queue"];

/// Replays with and without `--redis` and asserts the reports are the same.
fn same_in_redis(server: &RedisServer, args: &[&str], stdin: Stdin) {
    let url = server.url();
    let memory = run_with(args, stdin.clone()).ok();
    let redis = run_with(&[args, &["--redis", &url]].concat(), stdin).ok();
    assert_eq!(memory, redis, "{args:?}");
}

#[test]
#[ignore = "needs ../shared/data and redis-server"]
fn every_limiter_decides_as_in_memory_on_the_whole_catalog() {
    let path = real_catalog("usgs_m5_2015_2025.csv");
    let server = RedisServer::start();
    let file = path.to_str().unwrap();
    for algo in ALGOS {
        let burst: &[&str] = if matches!(algo, "token-bucket" | "gcra" | "leaky-queue") {
            &["--burst", "5"]
        } else {
            &[]
        };
        let args = [&["replay", file, "--algo", algo, "--rate", "5/h", "--format", "json"], burst]
            .concat();
        same_in_redis(&server, &args, Stdin::Null);
    }
    // All six at once, with a key per network.
    let args = [
        "compare", file, "--rate", "2/h", "--burst", "3", "--key", "net", "--top", "0", "--format",
        "json",
    ];
    same_in_redis(&server, &args, Stdin::Null);
    // Each limiter keeps one key per key, a fixed window's too: one per limiter and network
    // of the compare, and one per single replay.
    assert_every_key_expires(&server, 60);
}

/// Asserts that there are at least `least` keys, and that every one has a time to live.
fn assert_every_key_expires(server: &RedisServer, least: usize) {
    let mut con = server.connection().unwrap();
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut con).unwrap();
    assert!(keys.len() >= least, "{} keys", keys.len());
    for key in keys {
        let ttl: i64 = redis::cmd("PTTL").arg(&key).query(&mut con).unwrap();
        assert!(ttl > 0, "{key} has TTL {ttl}");
    }
}

#[test]
#[ignore = "needs redis-server"]
fn emit_and_keys_give_the_same_rows_in_redis() {
    let server = RedisServer::start();
    let args = ["replay", "--algo", "gcra", "--rate", "2/h", "--burst", "2", "--emit", "all"];
    same_in_redis(&server, &args, Stdin::Pipe(QUAKES));
    let args = ["compare", "--rate", "2/h", "--key", "magType", "--format", "csv"];
    same_in_redis(&server, &args, Stdin::Pipe(QUAKES));
    assert_every_key_expires(&server, 10);
}

/// Runs `check` and returns its exit code and stdout.
fn check(server: &RedisServer, key: &str, extra: &[&str]) -> (i32, String) {
    let url = server.url();
    let args = [&["check", key, "--redis", &url], extra].concat();
    let out = run(&args, "");
    (out.code, out.stdout)
}

#[test]
#[ignore = "needs redis-server"]
fn check_answers_with_its_exit_code() {
    let server = RedisServer::start();
    let five = ["--rate", "5/h", "--burst", "5"];
    let codes: Vec<i32> = (0..7).map(|_| check(&server, "alert:bob", &five).0).collect();
    assert_eq!(codes, [0, 0, 0, 0, 0, 1, 1]);
    // Another key has its own limit.
    assert_eq!(check(&server, "alert:eve", &five).0, 0);
    let (code, out) = check(&server, "alert:bob", &[&five[..], &["--format", "json"]].concat());
    assert_eq!(code, 1);
    let found = json(&out);
    crate::json::assert_valid("check", &found, "check");
    assert_eq!(
        (found["allowed"].as_bool(), found["limit"].as_u64(), found["remaining"].as_u64()),
        (Some(false), Some(5), Some(0))
    );
    // The next token comes 12 minutes after the first was taken.
    let retry = found["retry_after_s"].as_f64().unwrap();
    assert!(retry > 700.0 && retry <= 720.0, "{retry}");
    assert!(found["reset_after_s"].as_f64().unwrap() > 3_500.0);
    let mut con = server.connection().unwrap();
    let ttl: i64 = redis::cmd("PTTL").arg("ratelimit:{alert:bob}:gcra").query(&mut con).unwrap();
    assert!(ttl > 3_500_000 && ttl <= 3_600_000, "the key lives until the bucket is full: {ttl}");
}

#[test]
#[ignore = "needs redis-server"]
fn check_headers_are_the_ietf_ratelimit_fields() {
    let server = RedisServer::start();
    let five = ["--rate", "5/h", "--burst", "5", "--headers"];
    let (code, first) = check(&server, "api:ann", &five);
    // One call taken: 4 left, and the bucket whole again in 12 minutes, 720 s (found in
    // the same script, at the same server time, as the decision).
    assert_eq!(code, 0);
    assert_eq!(first, "RateLimit-Policy: \"gcra\";q=5;w=3600\nRateLimit: \"gcra\";r=4;t=720\n");
    for _ in 0..4 {
        check(&server, "api:ann", &five);
    }
    let (code, limited) = check(&server, "api:ann", &five);
    assert_eq!(code, 1, "the exit code is still the answer");
    assert!(limited.contains("RateLimit: \"gcra\";r=0;t="), "{limited}");
}

#[test]
#[ignore = "needs redis-server"]
fn check_takes_a_cost_all_or_nothing_and_refuses_one_that_never_fits() {
    let server = RedisServer::start();
    for algo in ["gcra", "token-bucket", "fixed-window", "sliding-log", "sliding-counter"] {
        let args = ["--algo", algo, "--rate", "5/h", "--cost", "3"];
        let key = format!("cost:{algo}");
        assert_eq!(check(&server, &key, &args).0, 0, "{algo}: 3 of 5");
        assert_eq!(check(&server, &key, &args).0, 1, "{algo}: 3 more do not fit in 2");
        let (code, out) = check(&server, &key, &["--algo", algo, "--rate", "5/h", "--cost", "2"]);
        assert_eq!(code, 0, "{algo}: 2 fit: {out}");
    }
    let url = server.url();
    let err =
        run(&["check", "k", "--rate", "5/h", "--burst", "5", "--cost", "6", "--redis", &url], "")
            .error();
    assert_eq!(err, "ratelimit: a cost of 6 can never pass: it is more than the burst, 5");
}

#[test]
fn check_refuses_an_empty_key_before_any_server_is_asked() {
    // No server listens on port 1: the key is refused first.
    let err = run(&["check", "", "--rate", "5/h", "--redis", "redis://127.0.0.1:1"], "").error();
    assert_eq!(err, "ratelimit: KEY is empty: check limits a key, such as alert:bob");
}

#[test]
#[ignore = "needs redis-server"]
fn check_still_works_after_the_server_loses_its_scripts() {
    let server = RedisServer::start();
    assert_eq!(check(&server, "k", &["--rate", "1/h"]).0, 0);
    let mut con = server.connection().unwrap();
    let _: String = redis::cmd("SCRIPT").arg("FLUSH").query(&mut con).unwrap();
    assert_eq!(check(&server, "k", &["--rate", "1/h"]).0, 1);
}

#[test]
#[ignore = "needs redis-server"]
fn eight_processes_share_one_limit() {
    let server = RedisServer::start();
    let url = server.url();
    let bin = env!("CARGO_BIN_EXE_ratelimit");
    // 10 per second with a burst of 5: over T seconds at most 5 + 10·T may pass.
    let start = Instant::now();
    let allowed: usize = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..8)
            .map(|_| {
                let url = url.clone();
                scope.spawn(move || {
                    (0..15)
                        .filter(|_| {
                            let status = Command::new(bin)
                                .args([
                                    "check", "shared", "--rate", "10/s", "--burst", "5", "--redis",
                                    &url,
                                ])
                                .output()
                                .unwrap()
                                .status;
                            assert!(matches!(status.code(), Some(0 | 1)), "{status}");
                            status.success()
                        })
                        .count()
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    let seconds = start.elapsed().as_secs_f64();
    let bound = 5.0 + 10.0 * seconds;
    eprintln!("8 processes, 120 checks in {seconds:.2} s: {allowed} allowed, at most {bound:.1}");
    assert!(
        f64::from(u32::try_from(allowed).unwrap()) <= bound,
        "{allowed} allowed in {seconds} s"
    );
    assert!(allowed >= 5, "the burst passes");
    assert!(allowed < 120, "some were limited");
}

#[test]
fn an_unreachable_server_is_one_line_and_quick() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("redis://127.0.0.1:{port}");
    let start = Instant::now();
    let err = run(&["check", "k", "--rate", "1/h", "--redis", &url], "").error();
    assert!(err.starts_with(&format!("ratelimit: cannot reach Redis at {url}")), "{err}");
    let err = run(&["replay", "--algo", "gcra", "--rate", "1/h", "--redis", &url], QUAKES).error();
    assert!(err.contains(&url), "{err}");
    assert!(start.elapsed() < Duration::from_secs(10));
    let err = run(&["check", "k", "--rate", "1/h", "--redis", "http://nowhere"], "").error();
    assert!(err.contains("is not a Redis URL"), "{err}");
}

#[test]
#[ignore = "needs redis-server"]
fn a_server_that_dies_mid_replay_leaves_no_report() {
    let mut server = RedisServer::start();
    // About 57 000 events through six limiters: some seconds of calls, streamed from a file.
    let csv = run_with(&["synth", "--days", "4018", "--scale", "3"], Stdin::Null).ok();
    let path = crate::harness::temp_file("dying.csv", &csv);
    let url = server.url();
    let bin = env!("CARGO_BIN_EXE_ratelimit");
    let child = Command::new(bin)
        .args([
            "compare",
            path.to_str().unwrap(),
            "--rate",
            "5/h",
            "--format",
            "json",
            "--redis",
            &url,
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once the replay has written keys it is under way: then the server dies.
    wait_for_keys(&server);
    server.kill();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(out.stdout.is_empty(), "no partial report");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    // Killed, the server closes the connection, or resets it under a write.
    let closed = format!("ratelimit: Redis at {url} closed the connection\n");
    let lost = format!("ratelimit: lost the connection to Redis at {url}: ");
    assert!(stderr == closed || stderr.starts_with(&lost), "{stderr}");
}

/// Waits until a replay has written keys to the server, and so is under way.
fn wait_for_keys(server: &RedisServer) {
    let mut con = server.connection().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while redis::cmd("DBSIZE").query::<u64>(&mut con).unwrap() == 0 {
        assert!(Instant::now() < deadline, "the replay wrote no keys");
    }
}

/// Runs `ratelimit` with `args` to its end, and returns the run and how long it took.
fn timed(args: &[&str]) -> (crate::harness::Run, Duration) {
    let start = Instant::now();
    let out = crate::harness::command().args(args).stdin(std::process::Stdio::null()).output();
    (crate::harness::finished(out.unwrap()), start.elapsed())
}

#[test]
#[ignore = "needs ../shared/data and redis-server"]
fn a_stopped_server_ends_a_replay_within_the_timeout() {
    let path = real_catalog("usgs_m5_2015_2025.csv");
    let server = RedisServer::start();
    let url = server.url();
    let file = path.to_str().unwrap();
    let args = ["compare", file, "--rate", "5/h", "--key", "net", "--redis", &url];
    let timeout = ["--redis-timeout", "1s"];
    let stopped = std::thread::scope(|scope| {
        let run = scope.spawn(|| timed(&[&args[..], &timeout].concat()));
        // Once the replay has written keys, it is under way: stop the server (SIGSTOP),
        // so that it holds the connection open and answers nothing.
        wait_for_keys(&server);
        server.signal("-STOP");
        let stopped = Instant::now();
        let (out, _) = run.join().unwrap();
        server.signal("-CONT");
        (out, stopped.elapsed())
    });
    let (out, waited) = stopped;
    assert_eq!(out.error(), format!("ratelimit: Redis at {url} did not answer within 1s"));
    // Before, each of a pipeline's replies waited 10 s on its own: hours in all.
    assert!(waited < Duration::from_secs(3), "{waited:?} after the server stopped");
}

#[test]
fn a_server_that_accepts_but_never_answers_ends_the_connection_within_3s() {
    // The kernel accepts connections into the listener's backlog; nothing ever answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("redis://{}", listener.local_addr().unwrap());
    for args in [
        &["check", "k", "--rate", "1/h", "--redis", &url][..],
        &["compare", "--sample", "--rate", "1/h", "--redis", &url, "--redis-timeout", "1m"],
    ] {
        let (out, took) = timed(args);
        assert_eq!(out.error(), format!("ratelimit: Redis at {url} did not answer within 3s"));
        assert!(took < Duration::from_millis(3_500), "{took:?}");
    }
    // A shorter timeout bounds the connection too.
    let (out, took) =
        timed(&["check", "k", "--rate", "1/h", "--redis", &url, "--redis-timeout", "500ms"]);
    assert_eq!(out.error(), format!("ratelimit: Redis at {url} did not answer within 500ms"));
    assert!(took < Duration::from_secs(2), "{took:?}");
}

#[test]
fn something_else_on_the_port_is_one_line() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("redis://{}", listener.local_addr().unwrap());
    let web = std::thread::spawn(move || {
        let (mut con, _) = listener.accept().unwrap();
        let _ = con.read(&mut [0; 1024]);
        let _ = con.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    });
    let (out, _) = timed(&["check", "k", "--rate", "1/h", "--redis", &url]);
    assert_eq!(out.error(), format!("ratelimit: {url} answered, but not as a Redis server does"));
    web.join().unwrap();
}

#[test]
fn a_zero_redis_timeout_is_refused() {
    let err =
        run(&["check", "k", "--rate", "1/h", "--redis", "redis://x", "--redis-timeout", "0s"], "")
            .error();
    assert_eq!(err, "ratelimit: --redis-timeout must be longer than zero");
}

/// A log of `rows` events in time order, a second to a few minutes apart in bursts, each
/// with one of three keys, and the second row again at data row `late`: a straggler.
fn log_with_a_straggler(rows: usize, late: usize) -> String {
    let mut lines: Vec<String> = (0..rows)
        .map(|i| {
            // Bursts of 40 events a second apart, then a gap of 17 minutes.
            let seconds = i + (i / 40) * 1_020;
            let (hours, minutes, seconds) = (seconds / 3_600, seconds / 60 % 60, seconds % 60);
            format!(
                "2020-01-{:02}T{:02}:{minutes:02}:{seconds:02}Z,k{}",
                1 + hours / 24,
                hours % 24,
                i % 3
            )
        })
        .collect();
    let straggler = lines[1].clone();
    lines.insert(late - 1, straggler);
    format!("time,key\n{}\n", lines.join("\n"))
}

#[test]
#[ignore = "needs redis-server"]
fn a_straggler_after_the_first_batch_is_decided_in_redis_as_in_memory() {
    // The first pass streams 512 events to Redis before it meets the straggler and reads
    // again, sorted: its batch in flight must not answer the second pass's.
    let server = RedisServer::start();
    for (rows, late) in [(1_023, 513), (1_023, 1_000), (3_199, 3_000)] {
        let log = temp_file("late.csv", &log_with_a_straggler(rows, late));
        let file = log.to_str().unwrap();
        let compare = ["compare", file, "--rate", "100/h", "--burst", "5", "--format", "json"];
        same_in_redis(&server, &compare, Stdin::Null);
        same_in_redis(&server, &[&compare[..], &["--key", "key"]].concat(), Stdin::Null);
        let replay =
            ["replay", file, "--algo", "sliding-log", "--rate", "100/h", "--format", "json"];
        same_in_redis(&server, &replay, Stdin::Null);
    }
}

#[test]
#[ignore = "needs redis-server"]
fn check_takes_a_cost_of_0_as_a_replay_does() {
    // A cost of 0 takes nothing: allowed, and the next call finds the bucket as it was.
    let server = RedisServer::start();
    let five = ["--rate", "5/h", "--burst", "5", "--format", "json"];
    let (code, out) = check(&server, "zero", &[&five[..], &["--cost", "0"]].concat());
    assert_eq!(code, 0, "{out}");
    assert_eq!(json(&out)["remaining"].as_u64(), Some(5), "{out}");
    let (_, out) = check(&server, "zero", &five);
    assert_eq!(json(&out)["remaining"].as_u64(), Some(4), "{out}");
}

#[test]
#[ignore = "needs redis-server"]
fn check_layers_may_name_their_keys_and_costs_as_they_like() {
    // README: a layer's key= is any name, as is its cost=COLUMN; KEY and --cost are what
    // they limit and weigh.
    let server = RedisServer::start();
    let url = server.url();
    let args = [
        "check",
        "ann",
        "--redis",
        &url,
        "--cost",
        "3",
        "--format",
        "json",
        "--limit",
        "algo=gcra,rate=5/m,burst=5,key=api_key",
        "--limit",
        "algo=gcra,rate=10/m,burst=10,key=user,cost=tokens",
        "--limit",
        "algo=gcra,rate=100/m,burst=100,cost=total_tokens",
    ];
    let out = run(&args, "");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let found = json(&out.stdout);
    let remaining: Vec<Option<u64>> =
        (found["layers"].as_array().unwrap().iter()).map(|l| l["remaining"].as_u64()).collect();
    assert_eq!(remaining, [Some(4), Some(7), Some(97)], "{found}");
}
