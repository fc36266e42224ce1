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
         limit_req_zone ratelimit zone=ratelimit:10m rate=10r/s;\n\
         limit_req zone=ratelimit nodelay;\n"
    );
    // nginx's delay=, and its dry run, as the replay takes them.
    let nginx = |flags: &[&str]| {
        let args = [&["config", "--for", "nginx", "--rate", "10/s", "-b", "5"][..], flags].concat();
        run(&args, "").ok().lines().skip(2).collect::<Vec<_>>().join("\n")
    };
    assert_eq!(nginx(&["--delay", "2"]), "limit_req zone=ratelimit burst=5 delay=2;");
    assert_eq!(nginx(&["--dry-run"]), "limit_req zone=ratelimit burst=5;\nlimit_req_dry_run on;");
    // nginx takes a dry run beside limit_req's delay= or nodelay.
    let dry = nginx(&["--dry-run", "--delay", "2"]);
    assert_eq!(dry, "limit_req zone=ratelimit burst=5 delay=2;\nlimit_req_dry_run on;");
    let dry = nginx(&["--nodelay", "--dry-run"]);
    assert_eq!(dry, "limit_req zone=ratelimit burst=5 nodelay;\nlimit_req_dry_run on;");
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
         domain: ratelimit\ndescriptors:\n  - key: \"client\"\n    rate_limit:\n      unit: day\n      requests_per_unit: 60\n"
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
    assert!(out.contains("type integer size 1m expire 4ms store http_req_rate(2ms)\n"), "{out}");
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

/// Keys a red team fed `config --key`: each is refused in one line, or written as one
/// token of the system's syntax.
fn hostile_keys() -> Vec<String> {
    let mut keys: Vec<String> = [
        "",
        " ",
        "a b",
        "\"",
        "'",
        "a\"b",
        ";",
        "a;b",
        "}",
        "{",
        "#",
        "a#b",
        "\r",
        "x\ry",
        "\u{1b}[31m",
        "$remote_addr",
        "remote_addr",
        "client",
        "é",
        "日本",
        "\n",
        "$",
        "a\\b",
        "http_x_api_key",
        "X-Api-Key",
        "binary_remote_addr zone=ratelimit:10m rate=1000r/s; #",
        "x)\n    http-request allow #",
    ]
    .iter()
    .map(|k| (*k).to_owned())
    .collect();
    keys.push("x".repeat(10_000));
    keys
}

/// Checks a config with the real program: nginx -t, haproxy -c, or Python (YAML, and the
/// key read back as it was given).
fn accepted(system: &str, config: &str, key: &str) {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let checked = match system {
        "nginx" => {
            let (zone, rest): (Vec<&str>, Vec<&str>) = config
                .lines()
                .filter(|l| !l.starts_with('#'))
                .partition(|l| l.starts_with("limit_req_zone"));
            let prefix = path("");
            let conf = format!(
                "pid {prefix}nginx.pid;\nerror_log {prefix}error.log;\nevents {{}}\nhttp {{\n\
                 access_log off;\nclient_body_temp_path {prefix}body;\nproxy_temp_path {prefix}proxy;\n\
                 fastcgi_temp_path {prefix}fastcgi;\nuwsgi_temp_path {prefix}uwsgi;\nscgi_temp_path {prefix}scgi;\n\
                 {}\nserver {{\nlisten 127.0.0.1:1;\nlocation / {{\n{}\n}}\n}}\n}}\n",
                zone.join("\n"),
                rest.join("\n")
            );
            std::fs::write(path("nginx.conf"), conf).unwrap();
            std::process::Command::new("/usr/sbin/nginx")
                .args(["-t", "-q", "-p", &prefix, "-c", &path("nginx.conf")])
                .output()
                .expect("nginx runs (Debian: nginx)")
        }
        "haproxy" => {
            let lines: Vec<&str> = config.lines().filter(|l| !l.starts_with('#')).collect();
            let conf = format!(
                "defaults\n    mode http\n    timeout client 1s\n    timeout server 1s\n    \
                 timeout connect 1s\nfrontend f\n    bind 127.0.0.1:1\n{}\n    default_backend b\n\
                 backend b\n    server s 127.0.0.1:2\n",
                lines.join("\n")
            );
            std::fs::write(path("haproxy.cfg"), conf).unwrap();
            std::process::Command::new("/usr/sbin/haproxy")
                .args(["-c", "-q", "-f", &path("haproxy.cfg")])
                .output()
                .expect("haproxy runs (Debian: haproxy)")
        }
        _ => {
            // YAML read back, or the Python compiled and the key's literal read back.
            std::fs::write(path("config"), config).unwrap();
            std::fs::write(path("key"), key).unwrap();
            let check = r#"
import ast, sys, yaml
config, key = open(sys.argv[1]).read(), open(sys.argv[2], newline="").read()
if sys.argv[3] == "limits":
    compile(config, "config", "exec")
    line = [l for l in config.splitlines() if "key being its" in l]
    assert [ast.literal_eval(l.split("key being its ", 1)[1]) for l in line] == [key], line
else:
    found = yaml.safe_load(config)
    if sys.argv[3] == "envoy-ratelimit":
        assert found["descriptors"][0]["key"] == key, found
"#;
            std::process::Command::new("python3")
                .args(["-c", check, &path("config"), &path("key"), system])
                .output()
                .expect("python3 runs")
        }
    };
    assert!(
        checked.status.success(),
        "{system} refuses the config for key {key:?}: {}\n{config}",
        String::from_utf8_lossy(&checked.stderr)
    );
}

/// Asserts that a config keys its limit by one token and says nothing else: it is the
/// config for a plain header's name, or for the client's address, with only the key's
/// token in the plain key's place.
fn one_token(system: &str, config: &str) {
    let shapes = ["plainkey", "client", "remote_addr"]
        .map(|key| run(&["config", "--for", system, "--rate", "10/s", "--key", key], "").stdout);
    assert!(shapes.iter().any(|shape| same_but_the_key(config, shape)), "{system}: {config}");
}

/// Whether `config` is `shape` with at most one token (or one quoted string) in place of
/// `plainkey`.
fn same_but_the_key(config: &str, shape: &str) -> bool {
    let token = |c: char| c.is_ascii_alphanumeric() || "_-$".contains(c);
    config.lines().count() == shape.lines().count()
        && config.lines().zip(shape.lines()).all(|(line, want)| {
            let Some(at) = want.find("plainkey") else { return line == want };
            let (head, tail) = (want[..at].trim_end_matches(['$', '"']), &want[at + 8..]);
            let tail = tail.trim_start_matches('"');
            if !(line.starts_with(head)
                && line.ends_with(tail)
                && line.len() >= head.len() + tail.len())
            {
                return false;
            }
            let inside = &line[head.len()..line.len() - tail.len()];
            let quoted = inside.len() >= 2
                && inside.starts_with('"')
                && inside.ends_with('"')
                && !inside[1..inside.len() - 1]
                    .replace("\\\\", "")
                    .replace("\\\"", "")
                    .contains('"');
            quoted || (!inside.is_empty() && inside.chars().all(token))
        })
}

#[test]
#[ignore = "needs nginx and haproxy"]
fn no_key_can_change_the_limit_a_config_writes() {
    for system in ["nginx", "haproxy", "traefik", "envoy-ratelimit", "limits"] {
        let (mut refused, mut written) = (0, 0);
        for key in hostile_keys() {
            let out = run(&["config", "--for", system, "--rate", "10/s", "--key", &key], "");
            if out.code == 0 {
                accepted(system, &out.stdout, &key);
                one_token(system, &out.stdout);
                written += 1;
            } else {
                assert!(out.error().starts_with("ratelimit: --key"), "{system}, {key:?}");
                refused += 1;
            }
        }
        eprintln!("{system}: {written} keys written as one token, {refused} refused");
        assert!(refused > 0 || matches!(system, "envoy-ratelimit" | "limits"), "{system}");
    }
    // Without a key, one limit for all requests, not one a client; nginx's own default
    // burst, 0, is taken as given; a burst is not dropped where the system has none.
    for system in ["nginx", "haproxy"] {
        let out = run(&["config", "--for", system, "--rate", "10/s", "--burst", "0"], "");
        if system == "nginx" {
            let config = out.ok();
            assert!(config.contains("limit_req_zone ratelimit zone=ratelimit"), "{config}");
            accepted(system, &config, "");
        } else {
            assert_eq!(
                out.error(),
                "ratelimit: --burst applies to nginx, traefik, envoy-local, redis-cell and redis-rate; haproxy has none"
            );
        }
    }
    let config = run(&["config", "--for", "haproxy", "--rate", "10/s"], "").ok();
    assert!(config.contains("http-request track-sc0 int(0)"), "{config}");
    // envoy's local limit has no key to write one into.
    let local = run(&["config", "--for", "envoy-local", "--rate", "10/s", "--key", "x"], "");
    assert_eq!(
        local.error(),
        "ratelimit: --key: envoy's local_ratelimit is one bucket for all the requests it sees, \
         and takes no key"
    );
    accepted("haproxy", &config, "");
}

#[test]
#[ignore = "needs Node"]
fn a_node_limiters_config_reads_back_every_key_as_given() {
    // Each config's key is a JavaScript string literal that Node reads back as the header's
    // name (lowercased, as Node keeps headers), whatever the key; the client's address is
    // the packages' own default, written as no key at all.
    for system in ["express-rate-limit", "rate-limiter-flexible", "nestjs-throttler"] {
        let (mut literals, mut wanted) = (Vec::new(), Vec::new());
        for key in hostile_keys() {
            let out = run(&["config", "--for", system, "--rate", "10/s", "--key", &key], "");
            if key.is_empty() {
                assert_eq!(out.code, 2, "{system}: an empty key");
                continue;
            }
            let config = out.ok();
            let line = config.lines().find(|l| l.contains("request.headers["));
            let Some(line) = line else {
                assert!(
                    ["remote_addr", "client", "$remote_addr"].contains(&key.as_str()),
                    "{key:?}"
                );
                continue;
            };
            let literal = line.split_once("request.headers[").unwrap().1;
            let literal = &literal[..literal.rfind(']').unwrap()];
            literals.push(literal.to_owned());
            wanted.push(key.to_ascii_lowercase());
        }
        let script = format!("process.stdout.write(JSON.stringify([{}]))", literals.join(","));
        let node =
            std::process::Command::new("node").args(["-e", &script]).output().expect("node runs");
        assert!(node.status.success(), "{system}: {}", String::from_utf8_lossy(&node.stderr));
        let read: Vec<String> = serde_json::from_slice(&node.stdout).unwrap();
        assert_eq!(read, wanted, "{system}");
    }
}

#[test]
#[ignore = "needs Go (gofmt)"]
fn redis_rates_config_is_go_whatever_the_key() {
    // Each snippet, as the body of a function, is Go that gofmt parses: its key a string
    // literal, whatever the key.
    for key in hostile_keys().into_iter().filter(|k| !k.is_empty()) {
        let args = ["config", "--for", "redis-rate", "--rate", "20/s", "--key", &key];
        let config = run(&args, "").ok();
        let source = format!("package p\n\nfunc f() {{\n{config}}}\n");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.go");
        std::fs::write(&path, &source).unwrap();
        let gofmt =
            std::process::Command::new("gofmt").arg("-e").arg(&path).output().expect("gofmt runs");
        assert!(
            gofmt.status.success(),
            "{key:?}: {}\n{source}",
            String::from_utf8_lossy(&gofmt.stderr)
        );
        assert_eq!(source.lines().count(), 7, "one line for the key {key:?}");
    }
}
