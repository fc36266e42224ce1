//! Weighted events (`--cost`): every limiter and the lossless bucket against brute force.

use crate::harness::{RedisServer, Stdin, json, run, run_with};

/// A token log: (time in ms, user, tokens), in time order, with ties, heavy-tailed costs
/// (most small, a few past the limit's N), and some of cost 0. Made by a fixed LCG, so the
/// test is the same on every run.
pub(crate) fn token_log() -> Vec<(i64, usize, u64)> {
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = move || {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        x >> 33
    };
    let mut t = 0i64;
    (0..400)
        .map(|_| {
            // Gaps of 0 to 2 s, a tenth of them 0: events that share an instant.
            let gap = next() % 2_000;
            t += if gap < 200 { 0 } else { i64::try_from(gap).unwrap() };
            let user = usize::try_from(next() % 3).unwrap();
            let tokens = match next() % 20 {
                0 => 0,
                1 => 150 + next() % 300,
                _ => 1 + next() % 40,
            };
            (t, user, tokens)
        })
        .collect()
}

pub(crate) fn csv(log: &[(i64, usize, u64)]) -> String {
    let mut text = String::from("time,user,tokens\n");
    for &(ms, user, tokens) in log {
        let (s, ms) = (ms / 1000, ms % 1000);
        text += &format!("2025-01-01T00:{:02}:{:02}.{ms:03}Z,u{user},{tokens}\n", s / 60, s % 60);
    }
    text
}

/// The rate of every limiter here: N units a P µs, with a burst of B.
const N: i128 = 100;
const P: i128 = 60_000_000;
const B: i128 = 250;

/// Whether `algo` at N/P with burst `b` passes an event at `t` (µs) of cost `c`, by the
/// rule the issue writes, given every event it passed before, (time, cost), in order.
fn rule(
    algo: &str,
    (n, p, b): (i128, i128, i128),
    passed: &[(i128, i128)],
    t: i128,
    c: i128,
) -> bool {
    let used = |keep: &dyn Fn(i128) -> bool| -> i128 {
        passed.iter().filter(|&&(s, _)| keep(s)).map(|&(_, c)| c).sum()
    };
    let window = t.div_euclid(p);
    match algo {
        "fixed-window" => used(&|s| s.div_euclid(p) == window) + c <= n,
        "sliding-log" => used(&|s| s > t - p) + c <= n,
        "sliding-counter" => {
            let (prev, cur) =
                (used(&|s| s.div_euclid(p) == window - 1), used(&|s| s.div_euclid(p) == window));
            // prev·(P − elapsed)/P + cur + c − 1 < N, times P.
            prev * (p - (t - window * p)) + (cur + c - 1) * p < n * p
        }
        "token-bucket" => {
            // The level, in units of 1/P token: full at first, refilled at N a µs.
            let (mut level, mut last) = (b * p, None::<i128>);
            for &(s, c) in passed {
                level = last.map_or(level, |l| (level + (s - l) * n).min(b * p)) - c * p;
                last = Some(s);
            }
            last.map_or(level, |l| (level + (t - l) * n).min(b * p)) >= c * p
        }
        "gcra" | "leaky-queue" => {
            // tat in units of 1/N µs: max(tat, t) + c·I − t ≤ b·I, times N.
            let tat = passed.iter().fold(i128::MIN, |tat, &(s, c)| tat.max(s * n) + c * p);
            tat.max(t * n) + c * p - t * n <= b * p
        }
        _ => unreachable!(),
    }
}

/// What each limiter passes of `events` (time in µs, cost), at N/P with a burst of B.
fn brute(algo: &str, events: &[(i128, i128)]) -> Vec<bool> {
    let mut passed = Vec::new();
    events
        .iter()
        .map(|&(t, c)| {
            let ok = rule(algo, (N, P, B), &passed, t, c);
            if ok {
                passed.push((t, c));
            }
            ok
        })
        .collect()
}

/// The smallest lossless bucket of `events` at N/P, by every stretch: the largest
/// ⌈(c_i + … + c_j − r·(t_j − t_i))⌉, and at least 1.
fn brute_bucket(events: &[(i128, i128)]) -> i128 {
    let mut worst = 1;
    for i in 0..events.len() {
        let mut units = 0;
        for j in i..events.len() {
            units += events[j].1;
            let need = units * P - N * (events[j].0 - events[i].0);
            worst = worst.max((need + P - 1).div_euclid(P));
        }
    }
    worst
}

fn micros(log: &[(i64, usize, u64)], user: Option<usize>) -> Vec<(i128, i128)> {
    log.iter()
        .filter(|&&(_, u, _)| user.is_none_or(|want| want == u))
        .map(|&(ms, _, c)| (i128::from(ms) * 1000, i128::from(c)))
        .collect()
}

const ALGOS: [&str; 6] =
    ["fixed-window", "sliding-log", "sliding-counter", "token-bucket", "gcra", "leaky-queue"];

#[test]
fn every_limiter_spends_each_events_cost_as_brute_force_does() {
    let log = token_log();
    let text = csv(&log);
    let all = micros(&log, None);
    for algo in ALGOS {
        let mut args = vec!["replay", "--algo", algo, "--rate", "100/m", "--cost", "tokens"];
        if matches!(algo, "token-bucket" | "gcra" | "leaky-queue") {
            args.extend(["--burst", "250"]);
        }
        let report = json(&run(&[&args[..], &["--format", "json"]].concat(), &text).ok());
        let decided = brute(algo, &all);
        let passed = decided.iter().filter(|&&p| p).count() as u64;
        assert_eq!(report["passed"].as_u64(), Some(passed), "{algo}");
        assert!(passed > 0 && passed < 400, "{algo}: {passed} passed; the test must bite");
        let units: i128 = all.iter().zip(&decided).filter(|(_, p)| **p).map(|(e, _)| e.1).sum();
        assert_eq!(report["units"]["passed"].as_i64(), Some(i64::try_from(units).unwrap()));
        // What the limiter ever holds: its burst, or N for the windows.
        let capacity = if args.contains(&"--burst") { B } else { N };
        let too_big = all.iter().filter(|e| e.1 > capacity).count() as u64;
        assert!(too_big > 0, "the log has events too big for every limiter");
        assert_eq!(report["too_big"]["events"].as_u64(), Some(too_big), "{algo}");
        let first = all.iter().position(|e| e.1 > capacity).unwrap();
        assert_eq!(
            report["too_big"]["first"]["cost"].as_i64(),
            Some(i64::try_from(all[first].1).unwrap())
        );
        // By key: each user's limiter sees that user's events alone.
        let keyed = [&args[..], &["--key", "user", "--top", "0", "--format", "json"]].concat();
        let report = json(&run(&keyed, &text).ok());
        assert_eq!(report["too_big"]["events"].as_u64(), Some(too_big), "{algo}, over keys");
        for row in report["keys"]["top"].as_array().unwrap() {
            let user: usize = row["key"].as_str().unwrap()[1..].parse().unwrap();
            let own = brute(algo, &micros(&log, Some(user))).iter().filter(|&&p| p).count();
            assert_eq!(row["passed"].as_u64(), Some(own as u64), "{algo}, u{user}");
        }
    }
}

#[test]
fn the_weighted_lossless_bucket_by_key_matches_every_stretch() {
    let log = token_log();
    let text = csv(&log);
    let args = ["min-bucket", "--rate", "100/m", "--cost", "tokens", "--format", "json"];
    let report = json(&run(&args, &text).ok());
    let whole = brute_bucket(&micros(&log, None));
    assert_eq!(report[0]["min_bucket"].as_i64(), Some(i64::try_from(whole).unwrap()));
    // A bucket that counted events would need far less: the costs are weighed.
    let counted = json(&run(&["min-bucket", "--rate", "100/m", "--format", "json"], &text).ok());
    assert!(counted[0]["min_bucket"].as_i64().unwrap() * 5 < i64::try_from(whole).unwrap());
    let keyed = [&args[..], &["--key", "user", "--top", "0"]].concat();
    let report = json(&run(&keyed, &text).ok());
    let rows = report[0]["keys"]["top"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for row in rows {
        let user: usize = row["key"].as_str().unwrap()[1..].parse().unwrap();
        let need = brute_bucket(&micros(&log, Some(user)));
        assert_eq!(row["min_bucket"].as_i64(), Some(i64::try_from(need).unwrap()), "u{user}");
    }
    // The curve and the minimum rate weigh the same costs: at 100/m the curve needs what
    // the one-pass bucket does, and min-rate at that burst gives a rate of at most 100/m.
    let curve =
        json(&run(&["min-bucket", "--curve", "--cost", "tokens", "--format", "json"], &text).ok());
    assert!(curve.as_array().is_some_and(|pieces| !pieces.is_empty()));
    let burst = whole.to_string();
    let rate = json(
        &run(&["min-rate", "--burst", &burst, "--cost", "tokens", "--format", "json"], &text).ok(),
    );
    let found = rate[0]["rate"].as_str().unwrap().to_owned();
    let again = json(
        &run(&["min-bucket", "--rate", &found, "--cost", "tokens", "--format", "json"], &text).ok(),
    );
    assert!(again[0]["min_bucket"].as_i64().unwrap() <= i64::try_from(whole).unwrap(), "{found}");
}

#[test]
fn a_cost_that_is_not_a_whole_number_names_its_line_and_column() {
    for (field, reason) in [
        ("", "empty"),
        ("-3", "negative"),
        ("2.5", "fractional"),
        ("many", "not a number"),
        ("1000000000001", "more than 1000000000000"),
    ] {
        let text = format!("time,tokens\n2025-01-01T00:00:00Z,1\n2025-01-01T00:00:01Z,{field}\n");
        let args = ["replay", "--algo", "gcra", "--rate", "5/h", "--cost", "tokens"];
        let out = run(&args, &text);
        assert_eq!(out.code, 2, "{field}");
        let err = out.error();
        assert!(
            err.contains("line 3") && err.contains("`tokens`") && err.contains(reason),
            "{err}"
        );
        // --skip-bad counts it as a bad row, and reads on.
        let skip = ["--skip-bad", "1", "--format", "json"];
        let skip = run(&[&args[..], &skip[..]].concat(), &text);
        assert_eq!(json(&skip.ok())["events"].as_u64(), Some(1), "{field}");
    }
    let missing =
        run(&["replay", "--algo", "gcra", "--rate", "5/h", "--cost", "bytes"], "time,tokens\n");
    assert_eq!(
        missing.error(),
        "ratelimit: <stdin>: no column named `bytes` (named by --cost); the header has: time,tokens"
    );
}

#[test]
fn a_cost_of_n_is_n_events_at_once() {
    // Every event costs 2: a burst of 4 passes two of three that share an instant.
    let text = "time\n2025-01-01T00:00:00Z\n2025-01-01T00:00:00Z\n2025-01-01T00:00:00Z\n";
    let args = [
        "replay", "--algo", "gcra", "--rate", "1/h", "--burst", "4", "--cost", "2", "--format",
        "json",
    ];
    let report = json(&run(&args, text).ok());
    assert_eq!((report["passed"].as_u64(), report["min_bucket"].as_u64()), (Some(2), Some(6)));
}

#[test]
#[ignore = "needs redis-server"]
fn redis_spends_each_events_cost_as_memory_does() {
    let server = RedisServer::start();
    let url = server.url();
    let text = csv(&token_log());
    for algo in ALGOS {
        let mut args = vec!["replay", "--algo", algo, "--rate", "100/m", "--cost", "tokens"];
        if matches!(algo, "token-bucket" | "gcra" | "leaky-queue") {
            args.extend(["--burst", "250"]);
        }
        args.extend(["--key", "user", "--top", "0", "--format", "json"]);
        let memory = run(&args, &text).ok();
        let redis = run_with(&[&args[..], &["--redis", &url]].concat(), Stdin::Pipe(&text)).ok();
        assert_eq!(memory, redis, "{algo}");
    }
    // A live filter spends each line's cost in Redis too; at 1/h, arriving at once, the
    // lines that pass are the same as in memory: 30, 15 and 5 of 50, not the 20 after.
    let lines = "who,tokens\na,30\nb,15\nc,20\nd,5\ne,60\n";
    let filter = ["filter", "--algo", "gcra", "--rate", "1/h", "--burst", "50", "--cost", "tokens"];
    let memory = run(&filter, lines).ok();
    assert_eq!(memory, "who,tokens\na,30\nb,15\nd,5\n");
    let redis = run_with(&[&filter[..], &["--redis", &url]].concat(), Stdin::Pipe(lines)).ok();
    assert_eq!(redis, memory);
}

#[test]
fn three_layers_decide_all_or_nothing_as_brute_force_does() {
    let log = token_log();
    let text = csv(&log);
    // Requests per user, tokens over all, and requests over all.
    let specs = [
        "algo=gcra,rate=20/m,burst=5,key=user",
        "algo=token-bucket,rate=1500/m,burst=1200,cost=tokens",
        "algo=sliding-log,rate=45/m",
    ];
    // Each layer: its limiter, (N, P, b), whether it is keyed by user, and weighed.
    type Layer = (&'static str, (i128, i128, i128), bool, bool);
    let layers: [Layer; 3] = [
        ("gcra", (20, P, 5), true, false),
        ("token-bucket", (1500, P, 1200), false, true),
        ("sliding-log", (45, P, 45), false, false),
    ];
    // Brute force: each layer's passed events, per user for the keyed one.
    let mut passed: Vec<Vec<Vec<(i128, i128)>>> = vec![vec![Vec::new(); 3]; 3];
    let (mut all, mut refused, mut only, mut units) = (0, [0u64; 3], [0u64; 3], 0i128);
    for &(ms, user, tokens) in &log {
        let t = i128::from(ms) * 1000;
        let seen = |n: usize| {
            let (_, _, keyed, weighed) = layers[n];
            (if keyed { user } else { 0 }, if weighed { i128::from(tokens) } else { 1 })
        };
        let admits: Vec<bool> = (0..3)
            .map(|n| {
                let (key, cost) = seen(n);
                rule(layers[n].0, layers[n].1, &passed[n][key], t, cost)
            })
            .collect();
        let no = admits.iter().filter(|&&a| !a).count();
        for n in (0..3).filter(|&n| !admits[n]) {
            refused[n] += 1;
            only[n] += u64::from(no == 1);
        }
        if no == 0 {
            all += 1;
            units += i128::from(tokens);
            for (n, passed) in passed.iter_mut().enumerate() {
                let (key, cost) = seen(n);
                passed[key].push((t, cost));
            }
        }
    }
    let args: Vec<&str> = specs.iter().flat_map(|s| ["--limit", s]).collect();
    let report = json(&run(&[&["replay"], &args[..], &["--format", "json"]].concat(), &text).ok());
    assert_eq!(report["passed"].as_u64(), Some(all));
    assert!(refused.iter().all(|&r| r > 0) && only.iter().all(|&o| o > 0), "every layer bites");
    for (n, layer) in report["layers"].as_array().unwrap().iter().enumerate() {
        assert_eq!(layer["spec"], specs[n]);
        assert_eq!(
            (layer["refused"].as_u64(), layer["only"].as_u64()),
            (Some(refused[n]), Some(only[n]))
        );
        assert_eq!(layer["passed"].as_u64(), Some(all));
    }
    let tokens = &report["layers"][1]["units"]["passed"];
    assert_eq!(tokens.as_i64(), Some(i64::try_from(units).unwrap()));
    // --emit writes the rows every layer passed (or the others), the report on stderr.
    let emitted = run(&[&["replay"], &args[..], &["--emit", "passed"]].concat(), &text);
    assert_eq!(emitted.stdout.lines().count() as u64, 1 + all, "the header and each row passed");
    assert!(emitted.stderr.contains("all or nothing"), "{}", emitted.stderr);
    let dropped = run(&[&["replay"], &args[..], &["--emit", "all"]].concat(), &text).ok();
    let refused = dropped.lines().filter(|l| l.ends_with(",dropped")).count() as u64;
    assert_eq!(refused, 400 - all);
    // One layer is the limiter alone.
    let one = run(&["replay", "--limit", specs[2], "--format", "json"], &text).ok();
    let alone =
        run(&["replay", "--algo", "sliding-log", "--rate", "45/m", "--format", "json"], &text).ok();
    assert_eq!(json(&one)["passed"], json(&alone)["passed"]);
}

#[test]
fn min_bucket_sizes_each_layer_on_its_own_events_and_costs() {
    let log = token_log();
    let text = csv(&log);
    let specs = [
        "algo=gcra,rate=100/m,burst=250,cost=tokens",
        "algo=token-bucket,rate=100/m,burst=40,key=user",
    ];
    let args: Vec<&str> = specs.iter().flat_map(|s| ["--limit", s]).collect();
    let report =
        json(&run(&[&["min-bucket"], &args[..], &["--format", "json"]].concat(), &text).ok());
    let tokens = brute_bucket(&micros(&log, None));
    let counted = |user| micros(&log, Some(user)).iter().map(|&(t, _)| (t, 1)).collect::<Vec<_>>();
    let (worst, user) = (0..3).map(|u| (brute_bucket(&counted(u)), u)).max().unwrap();
    let layers = report["layers"].as_array().unwrap();
    assert_eq!(layers[0]["min_bucket"].as_i64(), Some(i64::try_from(tokens).unwrap()));
    assert_eq!(layers[0]["fits"], serde_json::json!(tokens <= 250));
    assert_eq!(layers[1]["min_bucket"].as_i64(), Some(i64::try_from(worst).unwrap()));
    assert_eq!(layers[1]["worst_key"], format!("u{user}"));
    // The tightest is the layer whose need is the larger share of its burst.
    let tightest = if tokens * 40 > worst * 250 { specs[0] } else { specs[1] };
    assert_eq!(report["tightest"], tightest);
}

#[test]
fn the_systems_that_count_each_request_once_take_no_cost() {
    // nginx, Traefik and envoy's local limit count a request once, whatever it costs: a
    // cost would be ignored, or counted as events that "never pass" though they did.
    let log = "time,tokens\n2025-01-01T00:00:00Z,3\n2025-01-01T00:00:01Z,9\n";
    for (algo, rate, system) in [
        ("nginx", "10/s", "nginx 1.22.1, limit_req"),
        ("traefik", "10/s", "Traefik's rateLimit over golang.org/x/time/rate 0.3.0"),
        ("envoy-local", "10/s", "envoy's local_ratelimit token bucket"),
    ] {
        let why = format!("{algo} counts each request once, as {system} does, and takes no cost");
        for cost in ["tokens", "2"] {
            let args = ["replay", "--algo", algo, "--rate", rate, "--cost", cost];
            assert_eq!(run(&args, log).error(), format!("ratelimit: --cost: {why}"));
        }
        let spec = format!("algo={algo},rate={rate},cost=tokens");
        let err = run(&["replay", "--limit", &spec, "--limit", "algo=gcra,rate=5/s"], log).error();
        assert!(err.ends_with(&format!("cost=: {why}")), "{err}");
        // Every event costing 1 is what they count.
        let args = ["replay", "--algo", algo, "--rate", rate, "--cost", "1"];
        let report = json(&run(&[&args[..], &["--format", "json"]].concat(), log).ok());
        assert_eq!(report["passed"].as_u64(), Some(2), "{algo}");
    }
    // A limiter that spends costs takes them.
    let args = ["replay", "--algo", "envoy-ratelimit", "--rate", "10/s", "--cost", "tokens"];
    run(&args, log).ok();
}
