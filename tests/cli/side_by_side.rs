//! `compare --limit … --limit …`: whole configurations side by side, checked against nginx
//! by its source, written here.

use std::fmt::Write;

use crate::brute;
use crate::harness::{Stdin, json, run, run_with, temp_file};

/// An access log in a `log_format` of `$remote_addr $msec $request_time`: three clients
/// over a minute, a steady one, a bursty one and a script, in time order.
fn access_log() -> String {
    let mut lines: Vec<(i64, &str)> = Vec::new();
    let start = 1_753_833_600_000_i64;
    lines.extend((0..120).map(|i| (start + i * 500, "10.0.0.1")));
    for burst in 0..6 {
        lines.extend((0..60).map(|i| (start + burst * 9_000 + i * 37, "10.0.0.2")));
    }
    lines.extend((0..300).map(|i| (start + 20_000 + i * 90, "10.0.0.3")));
    lines.sort();
    let mut log = String::new();
    for (ms, client) in lines {
        let _ = writeln!(log, "{client} {}.{:03} 0.000", ms / 1000, ms % 1000);
    }
    log
}

/// The log's requests as (client, time in ms), read here with nothing of the program's.
fn logged(text: &str) -> Vec<(String, i64)> {
    (text.lines())
        .map(|line| {
            let mut fields = line.split(' ');
            let client = fields.next().unwrap().to_owned();
            let (s, ms) = fields.next().unwrap().split_once('.').unwrap();
            (client, s.parse::<i64>().unwrap() * 1000 + ms.parse::<i64>().unwrap())
        })
        .collect()
}

const FORMAT: &str = "$remote_addr $msec $request_time";
const NOW: &str = "algo=nginx,rate=10r/s,burst=20,nodelay,key=$binary_remote_addr";
const NEXT: &str = "algo=nginx,rate=5r/s,burst=50,key=$binary_remote_addr";

#[test]
fn two_nginx_configurations_side_by_side_match_nginx_by_its_source() {
    let text = access_log();
    let log = temp_file("access.log", &text);
    let rows = logged(&text);
    let now = brute::per_key(&rows, |t| brute::nginx(t, 10_000, 20));
    let next = brute::per_key(&rows, |t| brute::nginx(t, 5_000, 50));
    let args =
        ["compare", log.to_str().unwrap(), "--log-format", FORMAT, "--limit", NOW, "--limit", NEXT];
    let found = json(
        &run_with(&[&args[..], &["--format", "json", "--top", "0"]].concat(), Stdin::Null).ok(),
    );
    let configurations = found["configurations"].as_array().unwrap();
    assert_eq!(configurations[0]["passed"], brute::passed(&now));
    assert_eq!(configurations[1]["passed"], brute::passed(&next));
    assert!(brute::passed(&now) < rows.len(), "the first configuration drops some");
    let changes = &found["changes"];
    let changed =
        |a: bool, b: bool| now.iter().zip(&next).filter(|&(&x, &y)| (x, y) == (a, b)).count();
    assert_eq!(changes["newly_refused"], changed(true, false));
    assert_eq!(changes["newly_passed"], changed(false, true));
    assert!(changed(false, true) > 0, "the second configuration passes some the first refused");
    // Each key's counts, by definition.
    let keys = &changes["keys"];
    assert_eq!(keys["column"], "remote_addr");
    for key in keys["top"].as_array().unwrap() {
        let mine: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].0 == key["key"]).collect();
        let passed = |d: &[bool]| mine.iter().filter(|&&i| d[i]).count();
        assert_eq!(key["events"], mine.len());
        assert_eq!(
            (key["first_passed"].clone(), key["second_passed"].clone()),
            (passed(&now).into(), passed(&next).into())
        );
    }
    // --emit changed: each changed line as it was logged, both decisions before it.
    let emitted = run_with(&[&args[..], &["--emit", "changed"]].concat(), Stdin::Null);
    assert_eq!(emitted.code, 0, "{}", emitted.stderr);
    let word = |pass: bool| if pass { "passed" } else { "dropped" };
    let want: String = (text.lines().zip(now.iter().zip(&next)))
        .filter(|(_, (a, b))| a != b)
        .map(|(line, (&a, &b))| format!("{} {} {line}\n", word(a), word(b)))
        .collect();
    assert_eq!(emitted.stdout, want);
    assert!(emitted.stderr.contains("newly refused"), "the table goes to stderr");
}

#[test]
fn configurations_keyed_by_two_columns_or_one_emitted_alone_are_refused() {
    let csv = "time,client,host\n2025-01-01T00:00:00Z,a,x\n";
    let two = [
        "compare",
        "--limit",
        "algo=gcra,rate=1/s,key=client",
        "--limit",
        "algo=gcra,rate=1/s,key=host",
    ];
    assert_eq!(
        run(&two, csv).error(),
        "ratelimit: configurations may be keyed by one column, and these name two: `client` and `host`"
    );
    let one = ["compare", "--limit", "algo=gcra,rate=1/s", "--emit", "changed"];
    assert_eq!(
        run(&one, csv).error(),
        "ratelimit: --emit changed compares two configurations, and --limit is given 1 times"
    );
    assert!(run(&["compare"], csv).error().contains("compare needs --rate RATE"));
}

#[test]
fn min_bucket_for_nginx_is_the_least_burst_nginx_refuses_none_with() {
    let text = access_log();
    let log = temp_file("access.log", &text);
    let rows = logged(&text);
    let args = ["min-bucket", log.to_str().unwrap(), "--log-format", FORMAT, "--for", "nginx"];
    let keyed =
        [&args[..], &["--key", "$binary_remote_addr", "--rate", "10r/s,30r/m", "--format", "json"]]
            .concat();
    let found = json(&run_with(&keyed, Stdin::Null).ok());
    // By nginx's source: the least burst= with which every key passes all its requests.
    for (k, rate) in [(0, 10_000), (1, 500)] {
        let least = (0..)
            .find(|&b| brute::per_key(&rows, |t| brute::nginx(t, rate, b)).iter().all(|&p| p))
            .unwrap();
        assert_eq!(found[k]["system_size"]["value"], least, "rate {k}");
        assert!(least > 0);
    }
    // At 10r/s the bursts of 60 requests 37 ms apart gain 630 milli-requests each, 37,800
    // in all (burst=38); the script, 100 each of its 300 (burst=30).
    assert_eq!(found[0]["system_size"]["key"], "10.0.0.2");
    // Named as nginx's configuration names it.
    let own = &found[0]["system_size"];
    assert_eq!((own["system"].as_str(), own["setting"].as_str()), (Some("nginx"), Some("burst")));
    let refused = run_with(&[&args[..], &["--rate", "5/h"]].concat(), Stdin::Null).error();
    assert_eq!(
        refused,
        "ratelimit: --for nginx: nginx writes a rate as N r/s or N r/m, and 5/h is neither"
    );
}

#[test]
fn min_bucket_for_haproxy_is_the_least_gt_n_the_model_denies_none_with() {
    let text = access_log();
    let log = temp_file("access.log", &text);
    let args = ["min-bucket", log.to_str().unwrap(), "--log-format", FORMAT, "--for", "haproxy"];
    let keyed =
        [&args[..], &["--key", "remote_addr", "--rate", "1/s,1/10s", "--format", "json"]].concat();
    let found = json(&run_with(&keyed, Stdin::Null).ok());
    // By HAProxy's source: the most rate its deny rule reads, over every key.
    let rows = logged(&text);
    for (k, period_ms) in [(0, 1_000), (1, 10_000)] {
        let mut most = 0;
        for times in brute::by_key(&rows).values() {
            most = most.max(brute::haproxy_rates(times, period_ms).into_iter().max().unwrap_or(0));
        }
        assert_eq!(found[k]["system_size"]["value"], most, "period {period_ms} ms");
        assert_eq!(found[k]["system_size"]["setting"], "gt");
    }
    for (k, period) in [(0, "s"), (1, "10s")] {
        let n = found[k]["system_size"]["value"].as_u64().unwrap();
        let dropped = |n: u64| {
            let rate = format!("{n}/{period}");
            let replay =
                ["replay", log.to_str().unwrap(), "--log-format", FORMAT, "--key", "remote_addr"];
            let replay =
                [&replay[..], &["--algo", "haproxy", "--rate", &rate, "--format", "json"]].concat();
            json(&run_with(&replay, Stdin::Null).ok())["dropped"].as_u64().unwrap()
        };
        assert_eq!(dropped(n), 0, "gt {n} per {period}");
        assert!(dropped(n - 1) > 0, "gt {} per {period}", n - 1);
    }
}

#[test]
fn replay_with_nginx_gives_nginxs_own_lossless_burst() {
    let text = access_log();
    let log = temp_file("access.log", &text);
    let rows = logged(&text);
    let args = ["replay", log.to_str().unwrap(), "--log-format", FORMAT, "--algo", "nginx"];
    let args =
        [&args[..], &["--rate", "10r/s", "--key", "$binary_remote_addr", "--format", "json"]]
            .concat();
    let found = json(&run_with(&args, Stdin::Null).ok());
    let least = (0..)
        .find(|&b| brute::per_key(&rows, |t| brute::nginx(t, 10_000, b)).iter().all(|&p| p))
        .unwrap();
    assert_eq!(found["system_size"]["value"], least);
    // Read once, from a pipe, it cannot be found, and is left out.
    let piped = [
        "replay",
        "--log-format",
        FORMAT,
        "--algo",
        "nginx",
        "--rate",
        "10r/s",
        "--format",
        "json",
    ];
    let piped = json(&run(&piped, &text).ok());
    assert!(piped.get("system_size").is_none(), "{piped}");
}

#[test]
fn min_bucket_for_traefik_is_the_least_burst_its_model_refuses_none_with() {
    let text = access_log();
    let log = temp_file("access.log", &text);
    let common = ["--log-format", FORMAT, "--key", "remote_addr"];
    let asked = [
        &["min-bucket", log.to_str().unwrap()][..],
        &common,
        &["--for", "traefik", "--rate", "10/s", "--format", "json"],
    ]
    .concat();
    let burst =
        json(&run_with(&asked, Stdin::Null).ok())[0]["system_size"]["value"].as_u64().unwrap();
    let dropped = |b: u64| {
        let b = b.to_string();
        let replay = [
            &["replay", log.to_str().unwrap()][..],
            &common,
            &["--algo", "traefik", "--rate", "10/s", "--burst", &b, "--format", "json"],
        ]
        .concat();
        json(&run_with(&replay, Stdin::Null).ok())["dropped"].as_u64().unwrap()
    };
    assert!(burst > 1, "the bursts of 60 need more than one");
    assert_eq!(dropped(burst), 0);
    assert!(dropped(burst - 1) > 0);
}

#[test]
fn by_key_lists_each_keys_drops_under_both_the_newly_throttled_first() {
    // Five clients: the three of the log; 10.0.0.9, 8 a second for 30 s, which the first
    // passes whole and the second throttles; and 10.0.0.10, a few requests far apart that
    // neither drops (numeric order puts it after 10.0.0.9, where text would put it after
    // 10.0.0.1). In time order.
    let mut more = String::new();
    for i in 0..240 {
        let ms = 1_753_833_605_000_i64 + i * 125;
        let _ = writeln!(more, "10.0.0.9 {}.{:03} 0.000", ms / 1000, ms % 1000);
    }
    for i in 0..5 {
        let _ = writeln!(more, "10.0.0.10 {}.000 0.000", 1_753_833_700 + i * 10);
    }
    let log_lines = access_log();
    let mut lines: Vec<(String, &str)> = Vec::new();
    for line in log_lines.lines().chain(more.lines()) {
        lines.push((line.split(' ').nth(1).unwrap().to_owned(), line));
    }
    lines.sort_by(|a, b| a.0.cmp(&b.0));
    let text: String = lines.iter().map(|(_, line)| format!("{line}\n")).collect();
    let log = temp_file("access.log", &text);
    let rows = logged(&text);
    let now = brute::per_key(&rows, |t| brute::nginx(t, 10_000, 20));
    let next = brute::per_key(&rows, |t| brute::nginx(t, 5_000, 50));
    let dropped = |d: &[bool], key: &str| {
        i64::try_from((0..rows.len()).filter(|&i| rows[i].0 == key && !d[i]).count()).unwrap()
    };
    let args = [
        "compare",
        log.to_str().unwrap(),
        "--log-format",
        FORMAT,
        "--limit",
        NOW,
        "--limit",
        NEXT,
        "--by-key",
    ];
    let found = json(&run_with(&[&args[..], &["--format", "json"]].concat(), Stdin::Null).ok());
    assert_eq!(found["column"], "remote_addr");
    let keys = found["keys"].as_array().unwrap();
    let order: Vec<&str> = keys.iter().map(|k| k["key"].as_str().unwrap()).collect();
    // By the change in drops, most newly dropped first; ties by address.
    let mut want: Vec<(i64, &str)> = ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.9", "10.0.0.10"]
        .into_iter()
        .map(|key| (dropped(&next, key) - dropped(&now, key), key))
        .collect();
    want.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then_with(|| a.1.parse::<std::net::Ipv4Addr>().unwrap().cmp(&b.1.parse().unwrap()))
    });
    assert_eq!(order, want.iter().map(|w| w.1).collect::<Vec<_>>());
    for key in keys {
        let name = key["key"].as_str().unwrap();
        let (first, second) = (dropped(&now, name), dropped(&next, name));
        assert_eq!(
            (key["dropped_first"].as_i64(), key["dropped_second"].as_i64()),
            (Some(first), Some(second)),
            "{name}"
        );
        assert_eq!(key["change"].as_i64(), Some(second - first), "{name}");
        assert_eq!(key["newly_throttled"], first == 0 && second > 0, "{name}");
        assert_eq!(key["no_longer_throttled"], first > 0 && second == 0, "{name}");
    }
    let newly: Vec<&str> = keys
        .iter()
        .filter(|k| k["newly_throttled"] == true)
        .map(|k| k["key"].as_str().unwrap())
        .collect();
    assert!(!newly.is_empty() && newly.len() < keys.len(), "{newly:?}");
    // --only keeps those; the CSV has a row each, the table a line each.
    let only = json(
        &run_with(
            &[&args[..], &["--only", "newly-throttled", "--format", "json"]].concat(),
            Stdin::Null,
        )
        .ok(),
    );
    let kept: Vec<&str> =
        only["keys"].as_array().unwrap().iter().map(|k| k["key"].as_str().unwrap()).collect();
    assert_eq!(kept, newly);
    let csv = run_with(&[&args[..], &["--format", "csv"]].concat(), Stdin::Null).ok();
    assert_eq!(csv.lines().count(), keys.len() + 1);
    insta::assert_snapshot!(run_with(&args, Stdin::Null).ok());
    // Two configurations and a key, or it says why.
    let alone = run_with(
        &["compare", log.to_str().unwrap(), "--log-format", FORMAT, "--limit", NOW, "--by-key"],
        Stdin::Null,
    );
    assert!(alone.error().contains("--by-key compares two configurations"));
}
