//! `recommend` against a brute force: per-key replays at every burst of a grid, a plain
//! count over every window, and nginx's own arithmetic for the exported configuration.

use std::collections::BTreeMap;

use crate::brute::{busiest, gcra, nginx};
use crate::harness::{json, run, temp_file};

/// A day of requests by 80 people, each in bursts of their own size and pace, and a bot
/// at 4 a second for ten minutes: `time,client,tokens`, in time order.
fn log() -> String {
    let mut rows: Vec<(i64, String, u64)> = Vec::new();
    let mut seed: u64 = 7;
    let mut next = |below: u64| {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % below
    };
    for person in 0..80 {
        for _ in 0..1 + next(6) {
            let start = i64::try_from(next(86_000_000)).unwrap();
            let gap = 200 + i64::try_from(next(20_000)).unwrap();
            for j in 0..1 + next(12) {
                rows.push((
                    start + i64::try_from(j).unwrap() * gap,
                    format!("p{person}"),
                    1 + next(900),
                ));
            }
        }
    }
    for j in 0..2400 {
        rows.push((3_600_000 + j * 250, "bot".to_owned(), 50));
    }
    rows.sort_by_key(|(t, key, _)| (*t, key.clone()));
    let mut csv = String::from("time,client,tokens\n");
    for (ms, key, tokens) in rows {
        let time = chrono::DateTime::from_timestamp_millis(1_735_689_600_000 + ms).unwrap();
        csv += &format!("{},{key},{tokens}\n", time.format("%Y-%m-%dT%H:%M:%S%.3fZ"));
    }
    csv
}

/// Each key's (time in ms, tokens), in time order.
fn keys(csv: &str) -> BTreeMap<String, Vec<(i64, i64)>> {
    let mut keys: BTreeMap<String, Vec<(i64, i64)>> = BTreeMap::new();
    for line in csv.lines().skip(1) {
        let fields: Vec<&str> = line.split(',').collect();
        let t = crate::real_data::ms(fields[0]);
        keys.entry(fields[1].to_owned()).or_default().push((t, fields[2].parse().unwrap()));
    }
    keys
}

/// `recommend` of the log by client, with `args`, as JSON; and the log's keys.
fn recommend(args: &[&str]) -> (serde_json::Value, BTreeMap<String, Vec<(i64, i64)>>) {
    let csv = log();
    let file = temp_file("log.csv", &csv);
    let path = file.to_str().unwrap();
    let args = [&["recommend", path, "--key", "client", "--format", "json"][..], args].concat();
    (json(&run(&args, "").ok()), keys(&csv))
}

/// One key's times.
fn times(events: &[(i64, i64)]) -> Vec<i64> {
    events.iter().map(|&(t, _)| t).collect()
}

/// What a bucket of `b` at n per `period` ms refuses of one key.
fn refused(events: &[(i64, i64)], n: i64, period: i64, b: i64) -> usize {
    gcra(&times(events), n, period, b).0.iter().filter(|&&passed| !passed).count()
}

/// The frontier point at n per `period` ms by brute force: the least burst at which at
/// least `want` keys lose nothing, and the events the others lose there.
fn brute_point(
    keys: &BTreeMap<String, Vec<(i64, i64)>>,
    n: i64,
    period: i64,
    want: usize,
) -> (i64, usize, usize) {
    let mut b = 1;
    loop {
        let lost: Vec<usize> = keys.values().map(|events| refused(events, n, period, b)).collect();
        let untouched = lost.iter().filter(|&&l| l == 0).count();
        if untouched >= want {
            return (b, untouched, lost.iter().sum());
        }
        b += 1;
    }
}

#[test]
fn the_frontier_is_the_least_burst_that_spares_the_share_by_brute_force() {
    let rates = [("1/m", 1, 60_000), ("10/m", 10, 60_000), ("1/s", 1, 1000), ("3/s", 3, 1000)];
    let given = rates.map(|r| r.0).join(",");
    let (found, keys) = recommend(&["--untouched", "95%", "--rate", &given]);
    assert_eq!(found["keys"], keys.len());
    // ⌈95% · 81⌉ = 77 keys.
    let want = (keys.len() * 95).div_ceil(100);
    let mut refusals = Vec::new();
    for (point, &(rate, n, period)) in found["frontier"].as_array().unwrap().iter().zip(&rates) {
        let (burst, untouched, lost) = brute_point(&keys, n, period, want);
        assert_eq!(point["rate"], rate);
        assert_eq!(point["burst"], burst, "{rate}");
        assert_eq!(point["untouched_keys"], untouched, "{rate}");
        assert_eq!(point["touched_keys"], keys.len() - untouched, "{rate}");
        assert_eq!(point["refused"], lost, "{rate}");
        // One less burst leaves fewer than the share untouched.
        let fewer = keys.values().filter(|e| refused(e, n, period, burst - 1) == 0).count();
        assert!(burst == 1 || fewer < want, "{rate}: burst {} spares {fewer}", burst - 1);
        if let Some(first) = point["top_refused"].as_array().unwrap().first() {
            let most = (keys.iter().map(|(k, e)| (refused(e, n, period, burst), k)))
                .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(a.1)));
            assert_eq!(first["key"], most.unwrap().1.as_str(), "{rate}");
        }
        refusals.push((lost, burst));
    }
    // The default: the fewest refused, then the smaller burst.
    let best = (0..rates.len()).min_by_key(|&n| refusals[n]).unwrap();
    assert_eq!(found["recommended"]["rate"], rates[best].0);
    assert_eq!(found["recommended"]["prefer"], "fewest-refused");
    assert!(refusals.iter().any(|&(lost, _)| lost > 0), "the bot loses something somewhere");
    let prefer =
        |choice| recommend(&["--untouched", "95%", "--rate", &given, "--prefer", choice]).0;
    let smallest = refusals.iter().map(|r| r.1).min().unwrap();
    assert_eq!(prefer("smaller-burst")["recommended"]["burst"], smallest);
    assert_eq!(prefer("lower-rate")["recommended"]["rate"], "1/m");
}

#[test]
fn the_busiest_window_quantiles_are_a_plain_count_over_every_window() {
    let (found, keys) = recommend(&["--rate", "1/s", "--window", "10s", "--untouched", "97%"]);
    let window = &found["window"];
    let mut counts: Vec<usize> =
        keys.values().map(|events| busiest(&times(events), 10_000)).collect();
    counts.sort_unstable();
    let at = |per_mille: usize| counts[(counts.len() * per_mille).div_ceil(1000) - 1];
    assert_eq!(window["window"], "10s");
    assert_eq!(window["busiest"]["p50"], at(500));
    assert_eq!(window["busiest"]["p90"], at(900));
    assert_eq!(window["busiest"]["p99"], at(990));
    assert_eq!(window["busiest"]["max"], *counts.last().unwrap());
    assert_eq!(window["limit"], at(970));
    assert_eq!(window["untouched_keys"], counts.iter().filter(|&&c| c <= at(970)).count());
    assert!(at(970) < *counts.last().unwrap(), "the bot is over the line");
}

#[test]
fn the_exported_nginx_config_spares_the_keys_it_promises() {
    let (found, keys) = recommend(&["--untouched", "95%", "--for", "nginx"]);
    let (point, system) = (&found["recommended"], &found["system"]);
    let rate = point["rate"].as_str().unwrap();
    // nginx's rate in thousandths of a request a second, as it keeps it, truncated.
    let (count, per) = rate.split_once('/').unwrap();
    let count: i64 = count.parse().unwrap();
    let (milli, period) = match per {
        "s" => (count * 1000, 1000),
        "m" => (count * 1000 / 60, 60_000),
        _ => panic!("nginx writes {rate}"),
    };
    let burst = system["value"].as_i64().unwrap();
    assert!(system["config"].as_str().unwrap().contains(&format!("burst={burst}")), "{system}");
    let all_pass =
        |events: &[(i64, i64)], b: i64| nginx(&times(events), milli, b).iter().all(|&p| p);
    let spared = keys.values().filter(|events| all_pass(events, burst)).count();
    assert_eq!(system["untouched_keys"], spared);
    assert!(spared as u64 >= point["untouched_keys"].as_u64().unwrap());
    // Every key the point spares, nginx spares; one less and some of them lose.
    let b = point["burst"].as_i64().unwrap();
    let theirs: Vec<_> = keys.values().filter(|e| refused(e, count, period, b) == 0).collect();
    assert!(theirs.iter().all(|events| all_pass(events, burst)));
    assert!(burst == 0 || !theirs.iter().all(|events| all_pass(events, burst - 1)));
    // The configuration as written, replayed through the program's model of nginx: no
    // client it promises to spare is refused or delayed.
    let config = system["config"].as_str().unwrap();
    assert!(config.contains(&format!("burst={burst} nodelay;")), "{config}");
    let file = temp_file("log.csv", &log());
    let (path, burst) = (file.to_str().unwrap(), burst.to_string());
    let args = ["replay", path, "--algo", "nginx", "--rate", rate, "--burst", &burst, "--nodelay"];
    let replayed = json(
        &run(&[&args[..], &["--key", "client", "--top", "0", "--format", "json"]].concat(), "")
            .ok(),
    );
    let untouched = (replayed["keys"]["top"].as_array().unwrap().iter())
        .filter(|k| k["dropped"] == 0 && k["delayed"].as_u64().unwrap_or(0) == 0)
        .count();
    assert_eq!(system["untouched_keys"], untouched);
}

/// Whether an event passes both a bucket of `b` units at n units per `period` ms (each
/// event taking its tokens) and a bucket of requests, (n, period, b) too: all or nothing.
fn both(events: &[(i64, i64)], units: (i64, i64, i64), requests: (i64, i64, i64)) -> usize {
    let ((n, period, b), (rn, rp, rb)) = (units, requests);
    // Each clock in units of 1/n ms, so that one unit (or request) is `period` exactly.
    let (mut tat, mut rtat) = (i64::MIN / 4, i64::MIN / 4);
    let refused = events.iter().filter(|&&(t, tokens)| {
        let end = tat.max(t * n) + tokens * period;
        let rend = rtat.max(t * rn) + rp;
        let passes = end - t * n <= b * period && rend - t * rn <= rb * rp;
        if passes {
            (tat, rtat) = (end, rend);
        }
        !passes
    });
    refused.count()
}

#[test]
fn requests_and_tokens_together_spare_the_share_by_both() {
    let (found, keys) = recommend(&["--cost", "tokens", "--untouched", "90%", "--rate", "10/m"]);
    let together = &found["cost"]["together"];
    let parse = |setting: &serde_json::Value| {
        let rate = setting["rate"].as_str().unwrap();
        let (n, per) = rate.split_once('/').unwrap();
        let period = match per {
            "s" => 1000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            _ => panic!("{rate}"),
        };
        (n.parse::<i64>().unwrap(), period, setting["burst"].as_i64().unwrap())
    };
    let (units, requests) = (parse(&together["units"]), parse(&together["requests"]));
    let lost: Vec<usize> = keys.values().map(|e| both(e, units, requests)).collect();
    let untouched = lost.iter().filter(|&&l| l == 0).count();
    assert_eq!(together["untouched_keys"], untouched);
    assert!(untouched >= (keys.len() * 9).div_ceil(10));
    assert_eq!(together["refused"], lost.iter().sum::<usize>());
    assert!(lost.iter().sum::<usize>() > 0);
}

#[test]
fn recommend_asks_for_what_it_cannot_do_without() {
    let file = temp_file("plain.csv", "time,client\n2025-01-01T00:00:00Z,a\n");
    let path = file.to_str().unwrap();
    let err = run(&["recommend", path], "").error();
    assert!(err.contains("--key"), "{err}");
    let err = run(&["recommend", path, "--key", "client", "--for", "haproxy"], "").error();
    assert!(err.contains("haproxy"), "{err}");
    let err = run(&["recommend", path, "--key", "client", "--untouched", "0%"], "").error();
    assert!(err.contains("0%"), "{err}");
    let args = ["recommend", path, "--key", "client", "--rate", "5/h", "--for", "nginx"];
    assert!(run(&args, "").error().starts_with("ratelimit: --for nginx:"));
    // Regression: a window of no length reached the busiest-window finder and panicked.
    let err = run(&["recommend", path, "--key", "client", "--window", "0s"], "").error();
    assert_eq!(err, "ratelimit: --window 0s: a window is longer than 0");
}

#[test]
fn recommend_prints_the_answer_first() {
    let file = temp_file("table.csv", &log());
    let path = file.to_str().unwrap();
    let args = ["--untouched", "95%", "--rate", "1/m,10/m,1/s,3/s", "--window", "1m"];
    let out = run(&[&["recommend", path, "--key", "client"][..], &args].concat(), "").ok();
    insta::assert_snapshot!(out);
}

#[test]
fn recommend_keeps_its_published_schema() {
    let all = recommend(&["--cost", "tokens", "--window", "1m", "--for", "nginx"]).0;
    crate::json::assert_valid("recommend", &all, "recommend with everything");
    let plain = recommend(&[]).0;
    crate::json::assert_valid("recommend", &plain, "recommend");
    assert_eq!(plain["rates"], "spread");
    assert!(plain["frontier"].as_array().unwrap().len() <= 20);
}
