//! `--servers`: a fleet simulated on the catalog's clock, checked against a fleet of GCRA
//! servers written here from the definitions, and its table and errors.

use crate::QUAKES;
use crate::brute::busiest;
use crate::harness::{Stdin, json, real_catalog, run, run_with};
use crate::real_data::times_ms;

const M5: &str = "usgs_m5_2015_2025.csv";
const HOUR: i64 = 3_600_000;

/// A fleet of GCRA servers by the definitions: event i goes to server i mod K; each server
/// passes t iff t ≥ tat − (b − 1)·I on its own tat; with a sync period S, at an event in
/// a new period every server's tat becomes the shared tat, which takes in every pass as
/// tat ← max(tat, t) + I. Returns the passed times and each server's passed count.
fn brute_fleet(
    times: &[i64],
    k: usize,
    interval: i64,
    burst: i64,
    sync: Option<i64>,
) -> (Vec<i64>, Vec<u64>) {
    let mut tats = vec![i64::MIN / 2; k];
    let mut shared = i64::MIN / 2;
    let mut period = i64::MIN;
    let mut passed = Vec::new();
    let mut by_server = vec![0; k];
    for (i, &t) in times.iter().enumerate() {
        if let Some(every) = sync
            && t.div_euclid(every) != period
        {
            period = t.div_euclid(every);
            tats.fill(shared);
        }
        let server = i % k;
        if t >= tats[server] - (burst - 1) * interval {
            tats[server] = tats[server].max(t) + interval;
            shared = shared.max(t) + interval;
            passed.push(t);
            by_server[server] += 1;
        }
    }
    (passed, by_server)
}

/// A share mode: its name, its flags, each server's I and b, and the sync period.
type Mode<'a> = (&'a str, &'a [&'a str], i64, i64, Option<i64>);

#[test]
#[ignore = "needs ../shared/data"]
fn a_fleet_of_gcra_servers_decides_as_a_fleet_built_from_the_definitions() {
    let path = real_catalog(M5);
    let file = path.to_str().unwrap();
    let scenes = [
        ("2025-07-29T23:24:00Z", "2025-07-31T23:24:00Z"),
        ("2015-01-01T00:00:00Z", "2026-01-01T00:00:00Z"),
    ];
    for (since, until) in scenes {
        let times = times_ms(&path, since, until);
        let alone = brute_fleet(&times, 1, HOUR / 5, 5, None).0.len();
        let modes: [Mode; 4] = [
            ("local", &[], HOUR / 5, 5, None),
            ("split", &["--share", "split"], 3 * HOUR / 5, 2, None),
            ("synced 1m", &["--share", "synced", "--sync", "1m"], HOUR / 5, 5, Some(60_000)),
            ("synced 10m", &["--share", "synced", "--sync", "10m"], HOUR / 5, 5, Some(600_000)),
        ];
        for (mode, flags, interval, burst, sync) in modes {
            let base = ["replay", file, "--format", "json", "--algo", "gcra", "--rate", "5/h"];
            let more = ["--burst", "5", "--servers", "3", "--since", since, "--until", until];
            let args = [&base[..], &more, flags].concat();
            let got = json(&run_with(&args, Stdin::Null).ok());
            let (passed, by_server) = brute_fleet(&times, 3, interval, burst, sync);
            let what = format!("{mode} from {since}");
            assert_eq!(got["events"], times.len(), "{what}");
            assert_eq!(got["passed"], passed.len(), "{what}");
            let servers: Vec<u64> = got["fleet"]["by_server"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["passed"].as_u64().unwrap())
                .collect();
            assert_eq!(servers, by_server, "{what}");
            assert_eq!(got["fleet"]["alone_passed"], alone, "{what}");
            assert_eq!(got["busiest_window"]["count"], busiest(&passed, HOUR), "{what}");
        }
    }
}

/// Three clients, each with a few events a minute apart.
const CLIENTS: &str = "\
time,client
2025-01-01T00:00:00Z,a
2025-01-01T00:01:00Z,b
2025-01-01T00:02:00Z,a
2025-01-01T00:03:00Z,c
2025-01-01T00:04:00Z,a
2025-01-01T00:05:00Z,b
2025-01-01T00:06:00Z,a
";

#[test]
fn hash_routing_keeps_every_value_of_the_column_on_one_server() {
    let args = ["replay", "-", "--format", "json", "--algo", "gcra", "--rate", "1/h"];
    let fleet = ["--burst", "1", "--servers", "2", "--route", "hash:client"];
    let got = json(&run(&[&args[..], &fleet].concat(), CLIENTS).ok());
    // a and c (first and third to appear) on server 1, b on server 2; each server one
    // GCRA of burst 1 for all its clients, so a's and c's first pass only.
    let servers = &got["fleet"]["by_server"];
    assert_eq!(servers[0], serde_json::json!({"events": 5, "passed": 1, "dropped": 4}));
    assert_eq!(servers[1], serde_json::json!({"events": 2, "passed": 1, "dropped": 1}));
    assert_eq!(got["fleet"]["route"], "hash:client");
    assert_eq!(got["passed"], 2);
}

#[test]
fn with_a_key_each_server_keeps_a_limit_per_key() {
    // Round-robin over 3 servers: a's events (the 1st, 3rd, 5th and 7th) go to servers 1,
    // 3, 2 and 1, so a passes three times, once on each server; b's (2nd, 6th) go to
    // servers 2 and 3 and pass twice; c's one passes. One limiter per key passes 3.
    let args = ["replay", "-", "--format", "json", "--algo", "gcra", "--rate", "1/h"];
    let fleet = ["--burst", "1", "--servers", "3", "--key", "client"];
    let got = json(&run(&[&args[..], &fleet].concat(), CLIENTS).ok());
    assert_eq!(got["passed"], 6);
    assert_eq!(got["fleet"]["alone_passed"], 3);
    assert_eq!(got["fleet"]["over_admission"], 2.0);
    assert_eq!(got["keys"]["count"], 3);
}

/// A keyed compare of more share modes than a byte has bits: each event keeps one bit a
/// lane, in as many bytes as the lanes need, and each lane decides as it does alone.
#[test]
fn keyed_lanes_past_eight_each_decide_as_they_do_alone() {
    let syncs = ["1m", "2m", "3m", "5m", "7m", "11m", "13m", "17m", "19m"];
    let args = ["compare", "-", "--format", "json", "--algo", "gcra", "--rate", "2/h"];
    let keyed = ["--burst", "1", "--servers", "2", "--key", "net"];
    let sync_flags: Vec<&str> = syncs.iter().flat_map(|s| ["--sync", *s]).collect();
    let all = json(&run(&[&args[..], &keyed, &sync_flags].concat(), QUAKES).ok());
    let lanes = all.as_array().unwrap();
    assert_eq!(lanes.len(), 2 + syncs.len(), "local, split and one lane a sync");
    for (lane, sync) in lanes[2..].iter().zip(syncs) {
        let alone = ["--share", "synced", "--sync", sync];
        let replay = ["replay", "-", "--format", "json", "--algo", "gcra", "--rate", "2/h"];
        let one = json(&run(&[&replay[..], &keyed, &alone].concat(), QUAKES).ok());
        for field in ["passed", "dropped", "busiest_window", "keys", "worst_key"] {
            assert_eq!(lane[field], one[field], "--sync {sync}: {field}");
        }
    }
}

#[test]
fn a_fleet_of_one_server_decides_as_one_limiter() {
    for algo in
        ["fixed-window", "sliding-log", "sliding-counter", "token-bucket", "gcra", "leaky-queue"]
    {
        for share in ["local", "split"] {
            let args = ["replay", "-", "--format", "json", "--algo", algo, "--rate", "2/h"];
            let alone = json(&run(&args, QUAKES).ok());
            let fleet = ["--servers", "1", "--share", share];
            let mut got = json(&run(&[&args[..], &fleet].concat(), QUAKES).ok());
            assert_eq!(got["fleet"]["alone_passed"], alone["passed"], "{algo}");
            assert_eq!(got["fleet"]["over_admission"], 1.0, "{algo}");
            got.as_object_mut().unwrap().remove("fleet");
            assert_eq!(got, alone, "{algo} {share}");
        }
    }
}

#[test]
fn random_routing_is_the_same_for_a_seed() {
    let args = ["replay", "-", "--format", "json", "--algo", "gcra", "--rate", "2/h"];
    let route = |seed: &str| {
        let fleet = ["--servers", "3", "--route", "random", "--seed", seed];
        json(&run(&[&args[..], &fleet].concat(), QUAKES).ok())["fleet"]["by_server"].clone()
    };
    assert_eq!(route("7"), route("7"));
    let events: u64 =
        route("7").as_array().unwrap().iter().map(|s| s["events"].as_u64().unwrap()).sum();
    assert_eq!(events, 7);
}

#[test]
fn replay_on_a_fleet_prints_the_fleet_and_each_server() {
    let args = ["replay", "-", "--algo", "gcra", "--rate", "2/h", "--burst", "1"];
    let fleet = ["--servers", "2", "--share", "synced", "--sync", "20m"];
    let out = run(&[&args[..], &fleet].concat(), QUAKES).ok();
    // The fleet by its definition: I = 30 min, b = 1, synced every 20 min.
    let (passed, by_server) =
        brute_fleet(&crate::brute::times(QUAKES), 2, HOUR / 2, 1, Some(HOUR / 3));
    let report = json(&run(&[&args[..], &fleet, &["--format", "json"]].concat(), QUAKES).ok());
    assert_eq!(report["passed"], passed.len());
    let servers = report["fleet"]["by_server"].as_array().unwrap();
    assert_eq!(
        servers.iter().map(|s| s["passed"].as_u64().unwrap()).collect::<Vec<_>>(),
        by_server
    );
    insta::assert_snapshot!(out);
}

#[test]
fn compare_on_a_fleet_puts_the_share_modes_side_by_side_for_one_limiter() {
    let args = ["compare", "-", "--algo", "gcra", "--rate", "2/h", "--burst", "1"];
    let fleet = ["--servers", "2", "--sync", "20m", "--sync", "1h"];
    let out = run(&[&args[..], &fleet].concat(), QUAKES).ok();
    // Each share mode by its definition: local (each server the whole limit, never
    // synced), and synced every 20 minutes and every hour.
    let times = crate::brute::times(QUAKES);
    let reports = json(&run(&[&args[..], &fleet, &["--format", "json"]].concat(), QUAKES).ok());
    let passed: Vec<u64> =
        reports.as_array().unwrap().iter().map(|r| r["passed"].as_u64().unwrap()).collect();
    let brute = |sync| brute_fleet(&times, 2, HOUR / 2, 1, sync).0.len() as u64;
    assert_eq!(passed[0], brute(None), "local");
    assert_eq!(passed[2..], [brute(Some(HOUR / 3)), brute(Some(HOUR))], "synced");
    insta::assert_snapshot!(out);
}

#[test]
fn fleet_options_that_make_no_sense_are_errors() {
    let args = ["replay", "-", "--algo", "gcra", "--rate", "2/h"];
    let cases: [(&[&str], &str); 6] = [
        (&["--servers", "0"], "ratelimit: --servers must be from 1 to 10000, not 0"),
        (&["--servers", "2", "--sync", "1m"], "ratelimit: --sync applies to --share synced"),
        (
            &["--servers", "2", "--share", "synced"],
            "ratelimit: --share synced needs --sync DURATION: how often servers see the shared state",
        ),
        (
            &["--share", "split"],
            "ratelimit: --route, --seed, --share and --sync shape a fleet: use them with --servers K",
        ),
        (
            &["--servers", "2", "--seed", "3"],
            "ratelimit: --seed draws the servers of --route random",
        ),
        (
            &["--servers", "2", "--redis", "redis://127.0.0.1:1"],
            "ratelimit: --servers simulates a fleet in memory; with --redis, every process already shares one limit",
        ),
    ];
    for (flags, want) in cases {
        assert_eq!(run(&[&args[..], flags].concat(), QUAKES).error(), want);
    }
    let missing = run(&[&args[..], &["--servers", "2", "--route", "hash:nope"]].concat(), QUAKES);
    assert!(missing.error().contains("no column named `nope` (named by --route)"));
}
