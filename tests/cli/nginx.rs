//! The `nginx` model against the real nginx: Debian's nginx, its clock driven by
//! libfaketime, decides the same events, one HTTP request each, and must agree on every one.
//!
//! nginx runs as one process (`master_process off`) with the environment libfaketime needs
//! passed through (nginx clears its own otherwise, and libfaketime then reads the real
//! clock); see `faked_clock`.

use std::path::Path;

use crate::faked_clock::FakedServer;
use crate::harness::{json, real_catalog, run};
use crate::peer_events::{Event, apart, decisions, events};

const NGINX: &str = "/usr/sbin/nginx";

/// Replays the access log the test's nginx writes, keyed by `$arg_k`, at 1/m, as JSON.
const LOG_REPLAY: [&str; 12] = [
    "replay",
    "-",
    "--log-format",
    "$arg_k $msec $request_time $limit_req_status",
    "--key",
    "arg_k",
    "--algo",
    "nginx",
    "--rate",
    "1/m",
    "--format",
    "json",
];

/// Starts nginx with `limit_req_zone $arg_k … rate=RATE` and `limit_req … ARGS` on `/`.
fn start_nginx(rate: &str, args: &str) -> FakedServer {
    let zones = format!("limit_req_zone $arg_k zone=z:10m rate={rate};");
    start_nginx_chained(&zones, &format!("limit_req zone=z {args};"))
}

/// Starts nginx with the `limit_req_zone` lines `zones` and the `limit_req` lines `limits`.
fn start_nginx_chained(zones: &str, limits: &str) -> FakedServer {
    let config = |dir: &Path, port: u16| {
        let d = dir.display();
        std::fs::write(dir.join("f"), "ok\n").unwrap();
        format!(
            "daemon off; master_process off; worker_processes 1; pid {d}/nginx.pid;
             error_log {d}/error.log warn;
             env TZ; env LD_PRELOAD; env FAKETIME_TIMESTAMP_FILE; env FAKETIME_NO_CACHE;
             events {{ worker_connections 64; }}
             http {{
                 log_format timed '$arg_k $msec $request_time $limit_req_status';
                 access_log {d}/access.log timed;
                 client_body_temp_path {d}/body; proxy_temp_path {d}/proxy;
                 fastcgi_temp_path {d}/fastcgi; uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;
                 {zones}
                 server {{
                     listen 127.0.0.1:{port};
                     root {d};
                     location / {{ {limits} }}
                 }}
             }}"
        )
    };
    let args = |dir: &Path| {
        let d = dir.display().to_string();
        vec![
            "-p".into(),
            d.clone(),
            "-e".into(),
            format!("{d}/error.log"),
            "-c".into(),
            format!("{d}/config"),
        ]
    };
    FakedServer::start(NGINX, config, args)
}

#[test]
#[ignore = "needs nginx and libfaketime"]
fn the_faked_clock_is_the_one_limit_req_reads() {
    // 1r/m is one request each 62.5 s to nginx: 200 at t, 503 at t + 30 s, 200 at 62.5 s.
    let nginx = start_nginx("1r/m", "");
    let t = 1_700_000_000_000_000;
    let got: Vec<bool> =
        [0, 30_000_000, 62_500_000].map(|d| nginx.request(t + d, "/f", "a")).to_vec();
    assert_eq!(got, [true, false, true]);
}

#[test]
#[ignore = "needs ../shared/data, nginx and libfaketime"]
fn nginx_decides_the_catalog_and_a_keyed_month_as_the_real_nginx_does() {
    // Every event of 2015–2025 at 1r/m, with no burst; one key.
    let catalog = std::fs::read_to_string(real_catalog("usgs_m5_2015_2025.csv")).unwrap();
    let events = events(&catalog, None);
    let nginx = start_nginx("1r/m", "nodelay");
    let real: Vec<bool> = events.iter().map(|(t, k, _)| nginx.request(*t, "/f", k)).collect();
    drop(nginx);
    let ours = decisions(&events, &["--algo", "nginx", "--rate", "1/m"]);
    assert_eq!(apart(&real, &ours), [] as [usize; 0]);
    assert!(real.iter().any(|&pass| !pass), "nginx refused nothing: the test proves little");
    // The exact limiter with the same bucket parts from nginx where nginx truncates.
    let exact = decisions(&events, &["--algo", "gcra", "--rate", "1/m", "--burst", "1"]);
    eprintln!(
        "catalog: {} events, exact gcra parts on {}",
        events.len(),
        apart(&real, &exact).len()
    );

    // A month of every magnitude, keyed by network, at 1r/m, burst=1.
    let month = real_catalog("usgs_all_month_2025-05-06_to_2025-06-05.csv");
    let events = crate::peer_events::events(&std::fs::read_to_string(month).unwrap(), Some("net"));
    let nginx = start_nginx("1r/m", "burst=1 nodelay");
    let real: Vec<bool> = events.iter().map(|(t, k, _)| nginx.request(*t, "/f", k)).collect();
    let log = std::fs::read_to_string(nginx.dir().join("access.log")).unwrap();
    drop(nginx);
    // nginx's own log, read by its log_format, says the same of every request.
    let replay = [&LOG_REPLAY[..], &["--validate", "limit_req_status"]].concat();
    let validated = run(&[&replay[..], &["--burst", "1"]].concat(), &log);
    let agree = format!(
        "ratelimit: validate: {n} events with a limit_req_status, {n} decided alike (100.0%), 0 apart\n",
        n = events.len()
    );
    assert_eq!(validated.stderr, agree);
    // Validating a limit nginx did not run finds it apart.
    let other = run(&[&replay[..], &["--burst", "2"]].concat(), &log).stderr;
    assert!(other.contains("apart\nratelimit: validate: at "), "{other}");
    let ours = decisions(&events, &["--algo", "nginx", "--rate", "1/m", "--burst", "1"]);
    assert_eq!(apart(&real, &ours), [] as [usize; 0]);
    assert!(real.iter().any(|&pass| !pass), "nginx refused nothing: the test proves little");
    let exact = decisions(&events, &["--algo", "gcra", "--rate", "1/m", "--burst", "2"]);
    eprintln!("month: {} events, exact gcra parts on {}", events.len(), apart(&real, &exact).len());
}

/// 1,500 or so requests of twelve keys, the first `stagger` µs apart, each back 55 to 66 s
/// after its last; after one request in `new_every` (by the seeded draw), a new key comes
/// 1 ms later, once. In time order.
fn returning_keys(mut seed: u64, stagger: i64, new_every: u64) -> Vec<Event> {
    let mut events = Vec::new();
    let mut next = [0i64; 12];
    for (key, at) in next.iter_mut().enumerate() {
        *at = 1_746_566_400_000_000 + i64::try_from(key).unwrap() * stagger;
    }
    while events.len() < 1_500 {
        let key = (0..12).min_by_key(|&k| next[k]).unwrap();
        events.push((next[key], format!("c{key}"), 1));
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        next[key] += 55_000_000 + i64::try_from(seed >> 33).unwrap() % 11_000_000;
        // Now and then a new key comes, once: it frees what it may.
        if seed.is_multiple_of(new_every) {
            let fresh = events.len();
            events.push((events[fresh - 1].0 + 1_000, format!("n{fresh}"), 1));
        }
    }
    events.sort();
    events
}

#[test]
#[ignore = "needs nginx and libfaketime"]
fn a_new_key_frees_idle_keys_in_the_zone_as_nginx_does() {
    // Twelve keys, each back 55 to 66 s after its last request, at 1r/m with no burst: a
    // key idle 60 s or more whose excess has leaked away is freed when a new key comes,
    // and its next request is free again, where kept it would pay what has not leaked
    // (until 62.5 s, a refusal). New keys, each seen once, come all along.
    let events = returning_keys(7, 5_000_000, 5);
    let nginx = start_nginx("1r/m", "nodelay");
    let real: Vec<bool> = events.iter().map(|(t, k, _)| nginx.request(*t, "/f", k)).collect();
    drop(nginx);
    let ours = decisions(&events, &["--algo", "nginx", "--rate", "1/m"]);
    assert_eq!(apart(&real, &ours), [] as [usize; 0]);
    // The same keys kept for ever (a one-server fleet's copies share no zone) part from it.
    let kept = decisions(&events, &["--algo", "nginx", "--rate", "1/m", "--servers", "1"]);
    let parted = apart(&real, &kept).len();
    assert!(parted > 0, "no key was freed: the test proves little");
    eprintln!("zone: {} events, keys kept for ever part on {parted}", events.len());
}

#[test]
#[ignore = "needs nginx and libfaketime"]
fn chained_limits_look_up_keys_as_nginx_does_up_to_the_one_that_refuses() {
    // Two limit_req, a zone per client at 1r/m, then one for all at 12r/m burst=2, which
    // refuses now and then: nginx has then looked the client up in the first zone, held it
    // there uncharged (a new client frees idle ones), and charged neither. Twelve clients
    // come back every 55–66 s, and new ones come.
    let events = returning_keys(11, 4_000_000, 4);
    // Either order, as nginx runs it; the model in the other order parts from it.
    let zones = "limit_req_zone $arg_k zone=z:10m rate=1r/m;\
                 limit_req_zone $server_port zone=g:1m rate=12r/m;";
    let (client, all) = ("algo=nginx,rate=1/m,key=k", "algo=nginx,rate=12/m,burst=2");
    let client_first = "limit_req zone=z nodelay; limit_req zone=g burst=2 nodelay;";
    let all_first = "limit_req zone=g burst=2 nodelay; limit_req zone=z nodelay;";
    for (limits, order, other) in
        [(client_first, [client, all], [all, client]), (all_first, [all, client], [client, all])]
    {
        let nginx = start_nginx_chained(zones, limits);
        let real: Vec<bool> = events.iter().map(|(t, k, _)| nginx.request(*t, "/f", k)).collect();
        drop(nginx);
        let layers =
            |[first, second]: [&str; 2]| decisions(&events, &["--limit", first, "--limit", second]);
        assert_eq!(apart(&real, &layers(order)), [] as [usize; 0], "{limits}");
        let refused = real.iter().filter(|&&pass| !pass).count();
        let other = apart(&real, &layers(other)).len();
        assert!(other > 0, "the order of the limits changed nothing: the test proves little");
        eprintln!(
            "{limits}: {} events, {refused} refused, 0 apart; the other order parts on {other}",
            events.len()
        );
    }
}

#[test]
#[ignore = "needs nginx and libfaketime"]
fn the_waits_are_those_nginx_logs_for_the_requests_it_delays() {
    // A zone per key at 1r/m, burst=3, delay=1, in dry run (so that no request waits on
    // the frozen clock): nginx logs each request it would delay with its excess, and a
    // request with excess e waits (e − 1000)·1000/16 ms. New keys free idle ones.
    let events = returning_keys(13, 3_000_000, 4);
    let nginx = start_nginx("1r/m", "burst=3 delay=1; limit_req_dry_run on");
    let real: Vec<bool> = events.iter().map(|(t, k, _)| nginx.request(*t, "/f", k)).collect();
    let access = std::fs::read_to_string(nginx.dir().join("access.log")).unwrap();
    let errors = std::fs::read_to_string(nginx.dir().join("error.log")).unwrap();
    drop(nginx);
    assert!(real.iter().all(|&pass| pass), "a dry run refuses nothing");
    let statuses: Vec<&str> = access.lines().map(|l| l.rsplit(' ').next().unwrap()).collect();
    let refused: Vec<bool> = statuses.iter().map(|&s| s != "REJECTED_DRY_RUN").collect();
    let args = ["--algo", "nginx", "--rate", "1/m", "--burst", "3", "--delay", "1"];
    assert_eq!(apart(&refused, &decisions(&events, &args)), [] as [usize; 0]);
    // The model takes the dry run beside delay=1 as nginx does, and decides alike.
    let dry = decisions(&events, &[&args[..], &["--dry-run"]].concat());
    assert_eq!(apart(&refused, &dry), [] as [usize; 0]);
    let spec = "algo=nginx,rate=1/m,burst=3,delay=1,dry-run,key=k";
    assert_eq!(apart(&refused, &decisions(&events, &["--limit", spec])), [] as [usize; 0]);
    // Each delayed request's wait, from the excess nginx logged.
    let waits: Vec<i64> = errors
        .lines()
        .filter_map(|l| l.split_once("delaying request, dry run, excess: "))
        .map(|(_, rest)| {
            let (whole, milli) =
                rest.split_once(' ').unwrap().0.trim_end_matches(',').split_once('.').unwrap();
            let excess: i64 = whole.parse::<i64>().unwrap() * 1000 + milli.parse::<i64>().unwrap();
            (excess - 1000) * 1000 / 16
        })
        .collect();
    let delayed = statuses.iter().filter(|&&s| s == "DELAYED_DRY_RUN").count();
    assert_eq!(waits.len(), delayed, "one logged excess a delayed request");
    let passed = refused.iter().filter(|&&p| p).count();
    let run = run(
        &[&["replay", "-", "--key", "k", "--format", "json"][..], &args].concat(),
        &crate::peer_events::csv(&events),
    );
    let report = crate::harness::json(&run.ok());
    assert_eq!(report["delayed"].as_u64(), Some(u64::try_from(delayed).unwrap()));
    let longest = waits.iter().max().copied().unwrap_or(0);
    assert_eq!(report["max_wait_s"].as_f64(), Some(longest as f64 / 1000.0));
    let total: i64 = waits.iter().sum();
    // The mean is the total over the passed, in whole µs, floored.
    let mean = report["mean_wait_s"].as_f64().unwrap() * 1e6;
    let floor = (total * 1000) / i64::try_from(passed).unwrap();
    assert!((mean - floor as f64).abs() < 0.5, "mean {mean} µs, {total} ms over {passed}");
    eprintln!(
        "waits: {} requests, {delayed} delayed, longest {longest} ms, {total} ms in all",
        events.len()
    );
}

#[test]
fn nginx_takes_only_rates_it_can_write_and_one_a_minute_is_one_each_62_5_s() {
    // By hand (the model's unit tests): free at 0, refused at 30 s and 62.499 s, passed
    // at 62.5 s; an exact 1/m would pass at 60 s.
    let times = "time\n2025-01-01T00:00:00Z\n2025-01-01T00:00:30Z\n2025-01-01T00:01:02.499Z\n\
                 2025-01-01T00:01:02.500Z\n";
    let args = ["replay", "--algo", "nginx", "--rate", "1/m", "--emit", "all"];
    let out = crate::harness::run(&args, times).ok();
    let decisions: Vec<&str> = out.lines().skip(1).map(|l| l.rsplit(',').next().unwrap()).collect();
    assert_eq!(decisions, ["passed", "dropped", "dropped", "passed"]);
    let five = crate::harness::run(&["replay", "--algo", "nginx", "--rate", "5/h"], times);
    let want = "ratelimit: nginx writes a rate as N r/s or N r/m, and 5/h is neither: limit_req \
                cannot run at it";
    assert_eq!(five.error(), want);
    // burst=2: three at once.
    let burst = ["replay", "--algo", "nginx", "--rate", "1/s", "--burst", "2", "--format", "json"];
    let same = "time\n2025-01-01T00:00:00Z\n2025-01-01T00:00:00Z\n2025-01-01T00:00:00Z\n\
                2025-01-01T00:00:00Z\n";
    let report = crate::harness::json(&crate::harness::run(&burst, same).ok());
    assert_eq!((report["passed"].as_u64(), report["burst"].as_u64()), (Some(3), Some(2)));
}

#[test]
fn nginx_serves_what_it_admits_as_delay_nodelay_and_dry_run_say() {
    // 2r/s, burst=2, as the model's unit test: delay=0 waits 0, 500, 500, 800 and 1000 ms.
    let log = "time\n2025-01-01T00:00:00Z\n2025-01-01T00:00:00Z\n2025-01-01T00:00:00.5Z\n\
               2025-01-01T00:00:00.7Z\n2025-01-01T00:00:01Z\n";
    let args = ["replay", "--algo", "nginx", "--rate", "2/s", "--burst", "2"];
    let out = crate::harness::run(&args, log).ok();
    assert!(out.contains("limiter       nginx at 2/s, burst 2, delay=0\n"), "{out}");
    assert!(
        out.contains("delayed       4   80.0%\nlongest wait  1s\nmean wait     560ms\n"),
        "{out}"
    );
    let json = |more: &[&str]| {
        let run = crate::harness::run(&[&args[..], more, &["--format", "json"]].concat(), log);
        crate::harness::json(&run.ok())
    };
    let delay1 = json(&["--delay", "1"]);
    assert_eq!((delay1["delay"].as_str(), delay1["delayed"].as_u64()), (Some("delay=1"), Some(2)));
    assert_eq!(delay1["max_wait_s"].as_f64(), Some(0.5));
    let both =
        [("--nodelay --dry-run", "nodelay, dry-run"), ("--delay 1 --dry-run", "delay=1, dry-run")];
    for (flags, shown) in
        [("--nodelay", "nodelay"), ("--dry-run", "dry-run")].into_iter().chain(both)
    {
        let (flag, report) = (flags, json(&flags.split(' ').collect::<Vec<_>>()));
        assert_eq!(report["delay"].as_str(), Some(shown));
        assert!(report.get("delayed").is_none(), "{flag} delays nothing: {report}");
    }
    let gcra =
        crate::harness::run(&["replay", "--algo", "gcra", "--rate", "2/s", "--nodelay"], log);
    assert_eq!(gcra.error(), "ratelimit: --nodelay applies to nginx, not gcra");
}

#[test]
fn a_key_freed_from_the_zone_is_served_at_once_in_the_waits_too() {
    // 1r/m, burst=1. Key a at 0 s; key b at 60.5 s frees it (idle, leaked away); so a's
    // request at 61 s is a first request: no excess, no wait. Kept, it would have had
    // 1000 − 976 = 24 of excess, and waited 24·1000/16 = 1 500 ms.
    let log = "time,k\n2025-01-01T00:00:00Z,a\n2025-01-01T00:01:00.5Z,b\n2025-01-01T00:01:01Z,a\n";
    let args = ["replay", "--algo", "nginx", "--rate", "1/m", "--burst", "1", "--key", "k"];
    let report = crate::harness::json(
        &crate::harness::run(&[&args[..], &["--format", "json"]].concat(), log).ok(),
    );
    assert_eq!(report["passed"].as_u64(), Some(3));
    assert_eq!(report["delayed"].as_u64(), Some(0), "{report}");
    // Without b, a is kept, and waits.
    let alone = "time,k\n2025-01-01T00:00:00Z,a\n2025-01-01T00:01:01Z,a\n";
    let report = crate::harness::json(
        &crate::harness::run(&[&args[..], &["--format", "json"]].concat(), alone).ok(),
    );
    assert_eq!(report["max_wait_s"].as_f64(), Some(1.5), "{report}");
}

#[test]
fn validate_says_how_many_agree_and_shows_the_first_apart() {
    // 1r/s, no burst: 0 passes, 0.5 s is refused, 1 s passes. The log says PASSED at
    // 0.5 s: one apart; a request with no limit applied (-) is not compared.
    let log = "time,status\n2025-01-01T00:00:00Z,PASSED\n2025-01-01T00:00:00.5Z,PASSED\n\
               2025-01-01T00:00:01Z,PASSED\n2025-01-01T00:00:02Z,-\n";
    let args = ["replay", "--algo", "nginx", "--rate", "1/s", "--validate", "status", "-q"];
    let out = crate::harness::run(&args[..7], log);
    assert_eq!(
        out.stderr,
        "ratelimit: validate: 3 events with a status, 2 decided alike (66.7%), 1 apart; 1 with \
         no limit applied, not compared\n\
         ratelimit: validate: at 2025-01-01T00:00:00.500Z, logged PASSED (passed), replayed \
         refused: 2025-01-01T00:00:00.5Z,PASSED\n"
    );
    assert!(out.ok().starts_with("input "), "the report is on stdout as ever");
    assert_eq!(crate::harness::run(&args, log).stderr, "", "-q silences it");
    let bad = crate::harness::run(&args[..7], "time,status\n2025-01-01T00:00:00Z,OK\n").error();
    assert_eq!(
        bad,
        "ratelimit: --validate status: the row at 2025-01-01T00:00:00Z has \"OK\", which is \
         not a $limit_req_status (PASSED, DELAYED, REJECTED, their _DRY_RUN, or -)"
    );
}

#[test]
fn validate_reads_the_status_with_limit_layers_too() {
    // Two layers, all or nothing: nginx at 1r/s, and gcra at 2 a minute. 0 passes both;
    // 0.5 s nginx refuses; 1 s passes both; 2 s gcra refuses (its two are spent). The log
    // says PASSED at 2 s: one apart.
    let log = "time,status\n2025-01-01T00:00:00Z,PASSED\n2025-01-01T00:00:00.5Z,REJECTED\n\
               2025-01-01T00:00:01Z,PASSED\n2025-01-01T00:00:02Z,PASSED\n";
    let limits = ["--limit", "algo=nginx,rate=1/s", "--limit", "algo=gcra,rate=2/m,burst=2"];
    let args = [&["replay"][..], &limits, &["--validate", "status"]].concat();
    let out = crate::harness::run(&args, log);
    assert_eq!(
        out.stderr,
        "ratelimit: validate: 4 events with a status, 3 decided alike (75.0%), 1 apart\n\
         ratelimit: validate: at 2025-01-01T00:00:02Z, logged PASSED (passed), replayed \
         refused: 2025-01-01T00:00:02Z,PASSED\n"
    );
    assert!(out.ok().starts_with("input "), "the report is on stdout as ever");
    // A column the input has not is an error, not ignored.
    let missing = [&["replay"][..], &limits, &["--validate", "nope"]].concat();
    let err = crate::harness::run(&missing, log).error();
    assert_eq!(err, "ratelimit: --validate nope: the input has no column nope");
}

#[test]
fn validate_escapes_the_control_characters_of_a_logged_row() {
    // A row with an escape sequence and a line break in a quoted field: quoted on one line,
    // never written to the terminal raw.
    let log = "time,status,agent\n2025-01-01T00:00:00Z,PASSED,a\n\
               2025-01-01T00:00:00.5Z,PASSED,\"\u{1b}[31mred\r\nX\"\n";
    let args = ["replay", "--algo", "nginx", "--rate", "1/s", "--validate", "status"];
    let err = crate::harness::run(&args, log).stderr;
    assert!(!err.contains('\u{1b}') && !err.contains('\r'), "{err:?}");
    assert!(err.ends_with("PASSED,\"\\u{1b}[31mred\\r\\nX\"\n"), "{err:?}");
    let bad = "time,status\n2025-01-01T00:00:00Z,\u{1b}[2J\n";
    let err = crate::harness::run(&args, bad).error();
    assert!(err.contains("has \"\\u{1b}[2J\""), "{err}");
}

#[test]
fn validate_with_no_status_to_compare_gives_no_share() {
    // Every request logged with no limit applied (-): nothing compared, and no 100%.
    let log = "time,status\n2025-01-01T00:00:00Z,-\n2025-01-01T00:00:01Z,-\n";
    let args = ["replay", "--algo", "nginx", "--rate", "1/s", "--validate", "status"];
    assert_eq!(
        crate::harness::run(&args, log).stderr,
        "ratelimit: validate: no event with a status to compare; 2 with no limit applied, not \
         compared\n"
    );
}

#[test]
fn validate_orders_one_clients_requests_of_one_time_as_nginx_decided_them() {
    // 1r/s, burst=1: three requests of one client in one millisecond. nginx passed the
    // first, delayed the second (served, and so logged, a second later) and rejected the
    // third, logged at once: the log holds them as A, C, B. Read so, the replay would pass
    // C and refuse B, two apart; decided as nginx decided them, none.
    let log = "time,client,status,request_time\n\
               2025-01-01T00:00:00.250Z,a,PASSED,0.000\n\
               2025-01-01T00:00:00.250Z,a,REJECTED,0.000\n\
               2025-01-01T00:00:00.250Z,b,PASSED,0.000\n\
               2025-01-01T00:00:00.250Z,a,DELAYED,1.000\n";
    let args = [
        "replay",
        "--algo",
        "nginx",
        "--rate",
        "1/s",
        "--burst",
        "1",
        "--key",
        "client",
        "--validate",
        "status",
    ];
    let out = crate::harness::run(&args, log);
    assert_eq!(
        out.stderr,
        "ratelimit: validate: 4 events with a status, 4 decided alike (100.0%), 0 apart\n"
    );
}

#[test]
#[ignore = "needs nginx and libfaketime"]
fn an_empty_key_is_not_accounted_as_the_real_nginx_does() {
    // Twelve requests a second apart at 1r/m, no burst: every other one without `k`.
    let events = crate::peer_events::some_keyless(1_700_000_000_000_000, 1_000_000, 12, 2);
    let nginx = start_nginx("1r/m", "nodelay");
    let real: Vec<bool> = events.iter().map(|(t, k, _)| nginx.request(*t, "/f", k)).collect();
    let log = std::fs::read_to_string(nginx.dir().join("access.log")).unwrap();
    drop(nginx);
    // nginx passes the six without a key, and a's first alone.
    let passed = real.iter().filter(|&&pass| pass).count();
    assert_eq!(passed, 7, "{real:?}");
    let ours = decisions(&events, &["--algo", "nginx", "--rate", "1/m"]);
    assert_eq!(apart(&real, &ours), [] as [usize; 0]);
    // Counting the empty key as a key, as an exact limiter does, parts from nginx.
    let counted = decisions(&events, &["--algo", "gcra", "--rate", "1/m", "--burst", "1"]);
    assert_eq!(apart(&real, &counted).len(), 5);
    // nginx logs the empty $arg_k as `-`, which --empty-key - reads as the empty key.
    let replay = LOG_REPLAY;
    let read = json(&run(&[&replay[..], &["--empty-key", "-"]].concat(), &log).ok());
    assert_eq!((read["passed"].as_u64(), read["not_accounted"].as_u64()), (Some(7), Some(6)));
    let unread = json(&run(&replay, &log).ok());
    assert_eq!((unread["passed"].as_u64(), unread["not_accounted"].as_u64()), (Some(2), Some(0)));
}

#[test]
#[ignore = "needs nginx and libfaketime"]
fn a_full_zone_frees_its_least_recently_used_key_as_the_real_nginx_does() {
    // zone=z:32k holds 191 nodes of short keys, 64k 447. One key more than that, a
    // millisecond apart, at 1r/m, no burst (no node idle 60 s), then back: the first keys
    // were freed by force and pass again, each freeing the next least recent; the newest
    // are held, and refused.
    for (size, nodes) in [("32k", 191), ("64k", 447)] {
        let t = 1_700_000_000_000_000;
        let mut events: Vec<Event> =
            (0..=nodes).map(|i| (t + i * 1_000, format!("k{i}"), 1)).collect();
        for (n, key) in [0, nodes, 1, nodes - 1, 2, 3, nodes - 2, 150].into_iter().enumerate() {
            let at = t + 600_000 + i64::try_from(n).unwrap() * 1_000;
            events.push((at, format!("k{key}"), 1));
        }
        let zone = format!("limit_req_zone $arg_k zone=z:{size} rate=1r/m;");
        let nginx = start_nginx_chained(&zone, "limit_req zone=z nodelay;");
        let real: Vec<bool> = events.iter().map(|(t, k, _)| nginx.request(*t, "/f", k)).collect();
        drop(nginx);
        let back = usize::try_from(nodes + 1).unwrap();
        assert_eq!(&real[back..], [true, false, true, false, true, true, false, false], "{size}");
        let ours = decisions(&events, &["--algo", "nginx", "--rate", "1/m", "--zone", size]);
        assert_eq!(apart(&real, &ours), [] as [usize; 0], "{size}");
        let spec = format!("algo=nginx,rate=1/m,zone={size},key=k");
        assert_eq!(apart(&real, &decisions(&events, &["--limit", &spec])), [] as [usize; 0]);
        // A zone taken to be large enough parts from nginx.
        let roomy = decisions(&events, &["--algo", "nginx", "--rate", "1/m"]);
        assert!(!apart(&real, &roomy).is_empty(), "{size}");
    }
}
