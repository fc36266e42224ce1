//! `ratelimit config --for SYSTEM`: the snippet in the system's own units, with what changes
//! when a rate cannot be written there, and the round trip README shows.

use crate::harness::{json, run};

#[test]
fn nginx_config_says_what_a_rate_it_cannot_write_becomes() {
    let out = run(
        &["config", "--for", "nginx", "--rate", "90/h", "--burst", "3", "-k", "remote_addr"],
        "",
    );
    assert_eq!(
        out.ok(),
        "# ratelimit: nginx at 90/h, burst 3\n\
         # 90/h is not N r/s or N r/m, which is all nginx writes: 1r/m is the nearest that is no faster\n\
         # nginx keeps 1r/m as 16 thousandths of a request a second, truncated: --algo nginx --rate 1/m replays that\n\
         limit_req_zone $remote_addr zone=ratelimit:10m rate=1r/m;\n\
         limit_req zone=ratelimit burst=3;\n"
    );
    let out = run(&["config", "--for", "nginx", "--rate", "10/s", "--nodelay"], "").ok();
    assert_eq!(
        out,
        "# ratelimit: nginx at 10/s, burst 0\n\
         limit_req_zone $binary_remote_addr zone=ratelimit:10m rate=10r/s;\n\
         limit_req zone=ratelimit nodelay;\n"
    );
    // nginx's delay=, and its dry run, as the replay takes them.
    let nginx = |flags: &[&str]| {
        let args = [&["config", "--for", "nginx", "--rate", "10/s", "-b", "5"][..], flags].concat();
        run(&args, "").ok().lines().skip(2).collect::<Vec<_>>().join("\n")
    };
    assert_eq!(nginx(&["--delay", "2"]), "limit_req zone=ratelimit burst=5 delay=2;");
    assert_eq!(nginx(&["--dry-run"]), "limit_req zone=ratelimit burst=5;\nlimit_req_dry_run on;");
    let traefik = run(&["config", "--for", "traefik", "--rate", "10/s", "--delay", "2"], "");
    assert_eq!(traefik.error(), "ratelimit: --delay applies to nginx, not traefik");
}

#[test]
fn envoy_and_limits_configs_are_in_their_units() {
    let out = run(&["config", "--for", "envoy-ratelimit", "--rate", "5/2h", "--key", "client"], "");
    assert_eq!(
        out.ok(),
        "# ratelimit: envoy-ratelimit at 5/2h\n\
         # 5/2h is not N a unit: 60 a day passes as many on average, but all of them may come at once in one day's window\n\
         domain: ratelimit\ndescriptors:\n  - key: client\n    rate_limit:\n      unit: day\n      requests_per_unit: 60\n"
    );
    let out =
        run(&["config", "--for", "traefik", "--rate", "3/90s", "-b", "4", "-k", "X-Client"], "");
    assert_eq!(
        out.ok(),
        "# ratelimit: traefik at 3/90s, burst 4 (--algo traefik replays it)\n\
         http:\n  middlewares:\n    ratelimit:\n      rateLimit:\n        average: 3\n        \
         period: 90s\n        burst: 4\n        sourceCriterion:\n          requestHeaderName: X-Client\n"
    );
    let out = run(&["config", "--for", "envoy-local", "--rate", "3/1500ms", "-b", "2"], "").ok();
    assert_eq!(
        out,
        "# ratelimit: envoy-local at 3/1500ms (--algo envoy-local replays it)\n\
         token_bucket:\n  max_tokens: 2\n  tokens_per_fill: 3\n  fill_interval: 1.500s\n"
    );
    let out = run(&["config", "--for", "limits", "--rate", "5/h"], "").ok();
    assert!(out.contains("item = parse(\"5 per 3600 second\")\n"), "{out}");
}

#[test]
fn haproxy_config_counts_whole_milliseconds_and_says_what_a_rate_becomes() {
    let out = run(&["config", "--for", "haproxy", "--rate", "5/h", "-k", "X-Client"], "").ok();
    assert_eq!(
        out,
        "# ratelimit: haproxy at 5/h (--algo haproxy replays it)\n\
         # in the frontend:\n    \
         stick-table type string len 64 size 1m expire 7200000ms store http_req_rate(3600000ms)\n    \
         http-request track-sc0 req.hdr(X-Client)\n    \
         http-request deny deny_status 429 if { sc_http_req_rate(0) gt 5 }\n"
    );
    // A fraction of a millisecond is rounded up, slower; a period past 2^31 ms is cut to
    // it, the count with it, and where no whole request is left, one is, faster.
    let out = run(&["config", "--for", "haproxy", "--rate", "3/1500us"], "").ok();
    assert!(out.contains(": it becomes 3 per 2 ms\n"), "{out}");
    assert!(out.contains("type ip size 1m expire 4ms store http_req_rate(2ms)\n"), "{out}");
    let out = run(&["config", "--for", "haproxy", "--rate", "60/30d"], "").ok();
    assert!(out.contains(": it becomes 49 per 2147483647 ms\n"), "{out}");
    let out = run(&["config", "--for", "haproxy", "--rate", "1/30d"], "").ok();
    assert!(out.contains(": it becomes 1 per 2147483647 ms, faster than asked\n"), "{out}");
}

/// README's round trip: size with min-bucket, write nginx's config, replay the model.
#[test]
fn a_bucket_min_bucket_finds_is_an_nginx_burst_one_less_that_drops_nothing() {
    // Four events in 66 s, as the 2015–2025 catalog's tightest stretch at 1/m.
    let log = "time\n2018-08-19T00:38:17.290Z\n2018-08-19T00:38:30Z\n2018-08-19T00:39:00Z\n\
               2018-08-19T00:39:23.210Z\n";
    let need = json(&run(&["min-bucket", "--rate", "1/m", "--format", "json"], log).ok());
    assert_eq!(need[0]["min_bucket"].as_u64(), Some(3));
    let args = ["config", "--for", "nginx", "--rate", "1/m", "--burst", "2", "--nodelay"];
    let config = run(&args, "").ok();
    assert!(config.contains("limit_req zone=ratelimit burst=2 nodelay;"), "{config}");
    let replay = |burst: &str| {
        let args = ["replay", "--algo", "nginx", "--rate", "1/m", "--burst", burst, "--nodelay"];
        let args = [&args[..], &["--format", "json"]].concat();
        json(&run(&args, log).ok())["dropped"].as_u64()
    };
    assert_eq!((replay("2"), replay("1")), (Some(0), Some(1)));
}
