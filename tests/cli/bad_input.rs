//! Bad input: one line on stderr naming what is wrong, exit code 2, never a panic.

use crate::QUAKES;
use crate::harness::{Stdin, json, run, run_with, temp_file};

const GCRA: [&str; 5] = ["replay", "--algo", "gcra", "--rate", "2/h"];

fn replay_error(extra: &[&str], stdin: &str) -> String {
    run(&[&GCRA[..], extra].concat(), stdin).error()
}

#[test]
fn a_missing_file() {
    let err = run_with(&[&GCRA[..], &["no/such.csv"]].concat(), Stdin::Null).error();
    assert_eq!(err, "ratelimit: cannot read no/such.csv: No such file or directory (os error 2)");
}

#[test]
fn a_missing_time_column() {
    let err = replay_error(&[], "when,mag\n2025-01-01T00:00:00Z,5\n");
    assert_eq!(
        err,
        "ratelimit: <stdin>: no column named `time` (choose the time column with --time-column); \
         the header has: when,mag"
    );
    let err = replay_error(&["--min-mag", "5"], "time\n2025-01-01T00:00:00Z\n");
    assert!(err.contains("no column named `mag` (needed by --min-mag)"), "{err}");
}

#[test]
fn an_unparsable_time_names_the_line_field_and_value() {
    let csv = "id,time\na,2025-01-01T00:00:00Z\nb,2025-02-30T00:00:00Z\n";
    let err = replay_error(&[], csv);
    assert!(
        err.starts_with(
            "ratelimit: <stdin>: line 3, field `time`: \"2025-02-30T00:00:00Z\" is not"
        )
    );
    let err = replay_error(&[], "time\n2025-01-01T00:00:00\n");
    assert!(err.contains("line 2") && err.contains("UTC offset"), "{err}");
    let err = replay_error(&["--time-format", "unix-s"], "time\n2025-01-01\n");
    assert!(err.contains("is not a Unix epoch number"), "{err}");
}

#[test]
fn a_bad_magnitude_names_the_line() {
    let err = replay_error(&["--min-mag", "5"], "time,mag\n2025-01-01T00:00:00Z,big\n");
    assert_eq!(err, "ratelimit: <stdin>: line 2, field `mag`: \"big\" is not a number");
}

#[test]
fn a_row_with_missing_fields() {
    let err = replay_error(&[], "time,mag\n2025-01-01T00:00:00Z,5\n2025-01-01T00:00:01Z\n");
    assert_eq!(err, "ratelimit: <stdin>: line 3: expected 2 fields like the header, found 1");
}

#[test]
fn bad_rates() {
    for (rate, says) in [
        ("0/h", "at least one event"),
        ("-5/h", "cannot be negative"),
        ("5/hour", "not a rate"),
        ("5/0s", "longer than zero"),
        ("99999999999999999999/h", "too large"),
    ] {
        let args = ["replay", "--algo", "gcra", "--rate", rate];
        let err = run(&args, QUAKES).error();
        assert!(err.contains(says) && err.contains("--rate"), "{rate}: {err}");
    }
}

#[test]
fn since_must_be_before_until() {
    let err = replay_error(&["--since", "2025-07-30", "--until", "2025-07-29"], QUAKES);
    assert_eq!(
        err,
        "ratelimit: --since (2025-07-30T00:00:00Z) must be before --until (2025-07-29T00:00:00Z)"
    );
    let err = replay_error(&["--until", "+48h"], QUAKES);
    assert_eq!(err, "ratelimit: --until +DURATION needs --since");
    let err = replay_error(&["--since", "2025-07-30", "--until", "+0s"], QUAKES);
    assert!(err.contains("must be before"), "{err}");
}

#[test]
fn nginx_takes_burst_0_its_default_as_nginx_conf_writes_it() {
    // nginx's burst= counts the requests beyond the first: burst=0 is its bucket of one,
    // the default; no other limiter's burst may be 0.
    let args = ["replay", "--sample", "--algo", "nginx", "--rate", "10r/m", "--format", "json"];
    let default = run(&args, "").ok();
    assert_eq!(run(&[&args[..], &["--burst", "0"]].concat(), "").ok(), default);
    let layer = run(
        &["replay", "--sample", "--limit", "algo=nginx,rate=10/m,burst=0", "--format", "json"],
        "",
    )
    .ok();
    assert_eq!(json(&layer)["passed"], json(&default)["passed"]);
    let err = run(&["replay", "--sample", "--limit", "algo=gcra,rate=5/h,burst=0"], "").error();
    assert!(err.contains("burst=0: a burst must be at least 1 (only nginx's"), "{err}");
}

#[test]
fn burst_and_window_limits() {
    assert!(replay_error(&["--burst", "0"], QUAKES).contains("at least 1"));
    let err =
        run(&["replay", "--algo", "sliding-log", "--rate", "2/h", "--burst", "3"], QUAKES).error();
    assert_eq!(
        err,
        "ratelimit: --burst applies to token-bucket, gcra, leaky-queue, nginx, traefik, envoy-local, redis-cell and redis-rate, not sliding-log"
    );
    assert!(replay_error(&["--window", "0s"], QUAKES).contains("longer than zero"));
    assert!(replay_error(&["--window", "-1h"], QUAKES).contains("negative"));
}

#[test]
fn unknown_options_and_missing_arguments() {
    let err = run(&["replay", "--algo", "gcra", "--rate", "2/h", "--bogus"], QUAKES).error();
    assert!(err.contains("--bogus") && err.ends_with("(see --help)"), "{err}");
    let err = run(&["replay", "--rate", "2/h"], QUAKES).error();
    assert!(err.contains("--algo"), "{err}");
    let err = run(&["replay", "--algo", "gcrx", "--rate", "2/h"], QUAKES).error();
    assert!(err.contains("gcrx"), "{err}");
}

#[test]
fn a_misspelled_flag_limiter_or_spec_is_offered_what_it_may_mean() {
    // As clap finds a flag, in the one line the program prints: the tip was in a
    // paragraph of its own, which the line left out, and a SPEC offered nothing.
    let err = |args: &[&str]| run(args, QUAKES).error();
    let said = err(&["replay", "--algo", "gcar", "--rate", "2/h"]);
    assert!(said.ends_with("(did you mean 'gcra'?)"), "{said}");
    assert_eq!(
        err(&["replay", "--algo", "gcra", "--rate", "2/h", "--brust", "5"]),
        "ratelimit: unexpected argument '--brust' found (did you mean '--burst'?) (see --help)"
    );
    let said = err(&["replay", "--limit", "algo=gcar,rate=2/h"]);
    assert!(said.contains("algo=gcar is not a limiter (did you mean 'gcra'?): one of"), "{said}");
    let said = err(&["replay", "--limit", "algo=nginx,rate=5r/s,nodealy"]);
    assert!(
        said.ends_with(
            "is not key=value (algo=, rate=, burst=, cost=, key=) (did you mean 'nodelay'?)"
        ),
        "{said}"
    );
    // An nginx limit pasted with spaces, as a configuration writes its parts.
    let said = err(&["replay", "--limit", "algo=nginx rate=10r/s burst=20 nodelay"]);
    assert!(
        said.ends_with("is spaced: a SPEC's parts are joined by commas (did you mean 'algo=nginx,rate=10r/s,burst=20,nodelay'?)"),
        "{said}"
    );
    // nginx's own directives pasted whole: the SPEC each means, the zone's rate named.
    let said = err(&["replay", "--limit", "limit_req zone=one burst=5 nodelay;"]);
    assert!(
        said.ends_with("is an nginx directive: a SPEC is key=value parts joined by commas (did you mean 'algo=nginx,rate=RATE,burst=5,nodelay', RATE its limit_req_zone's rate?)"),
        "{said}"
    );
    let zone = "limit_req_zone $binary_remote_addr zone=one:10m rate=10r/s;";
    let said = err(&["replay", "--limit", zone]);
    assert!(
        said.ends_with("(did you mean 'algo=nginx,rate=10r/s,key=$binary_remote_addr'?)"),
        "{said}"
    );
}

#[test]
fn help_and_version_succeed() {
    let help = run(&["replay", "--help"], "").ok();
    for algo in
        ["fixed-window", "sliding-log", "sliding-counter", "token-bucket", "gcra", "leaky-queue"]
    {
        assert!(help.contains(algo), "--help documents {algo}");
    }
    assert!(run(&["--version"], "").ok().starts_with("ratelimit "));
}

#[test]
fn min_rate_with_a_burst_past_i64_is_refused_not_wrapped() {
    // Before, the burst wrapped to a negative number and the answer was `none`; then it
    // was 0, as any burst past the events is; now every command bounds a burst at 10^12.
    let out = run(&["min-rate", "--burst", "9223372036854775808"], QUAKES);
    assert!(out.error().ends_with("a burst may be at most 1000000000000"));
    let table = run(&["min-rate", "--burst", "1000000000000"], QUAKES).ok();
    let rates: Vec<&str> =
        table.lines().skip(1).map(|line| line.split_whitespace().nth(1).unwrap()).collect();
    assert_eq!(rates, ["0"]);
}

#[test]
fn waits_past_i64_microseconds_print_whole() {
    // (b − 1)·I = 199 999 999 days: more microseconds than an i64 holds.
    let args = ["replay", "--algo", "leaky-queue", "--rate", "1/d", "--burst", "200000000"];
    let out = run(&args, QUAKES).ok();
    // The seventh event leaves six days after the first, 2 h after it arrived.
    assert!(out.contains("no wait over (b - 1)·I = 199999999d: the longest was 5d 22h"), "{out}");
    // An interval of 10^8 days: the waits themselves pass i64::MAX µs (a debug build
    // panicked on them).
    let args = ["replay", "--algo", "leaky-queue", "--rate", "1/100000000d", "--burst", "1000000"];
    let out = run(&args, QUAKES).ok();
    assert!(out.contains("longest wait        599999999d 22h\n"), "{out}");
    assert!(
        out.contains("no wait over (b - 1)·I = 99999900000000d: the longest was 599999999d 22h"),
        "{out}"
    );
    let json =
        crate::harness::json(&run(&[&args[..], &["--format", "json"]].concat(), QUAKES).ok());
    assert_eq!(json["max_wait_s"], serde_json::json!(51_839_999_992_800_i64));
}

#[test]
fn rates_times_keys_past_the_budget_are_refused_while_reading() {
    let csv: String = std::iter::once("time,id\n".to_owned())
        .chain((0..200).map(|i| format!("2025-01-01T00:00:{:02}Z,k{i}\n", i % 60)))
        .collect();
    // The rows are out of time order, so keys are met out of the order they are numbered
    // in: key 180 comes third (at 00:00:00), and is counted as 181 keys.
    let err =
        run(&["min-bucket", "--key", "id", "--rate", "1/h..100000/h", "--top", "1"], &csv).error();
    assert!(
        err.starts_with(
            "ratelimit: 100000 rates for each of more than 180 keys are more than the 16777216 \
             key-rate pairs min-bucket sizes"
        ),
        "{err}"
    );
    // Listing every key for every rate is bounded too: the fuzzer found 100 000 rates
    // times 90 keys taking 54 s and 9 GB.
    let err =
        run(&["min-bucket", "--key", "id", "--rate", "1/h..4000/h", "--top", "0"], &csv).error();
    // Refused while reading, before all 200 keys are met: the message does not call 61 the count.
    assert_eq!(
        err,
        "ratelimit: with --top 0, 4000 rates list more than the 200000 rows min-bucket \
         lists once 61 keys are met (the input may hold more); give --top K, or fewer rates"
    );
    let err =
        run(&["min-bucket", "--key", "id", "--rate", "1/h..4000/h", "--top", "60"], &csv).error();
    assert!(err.starts_with("ratelimit: listing 60 keys for each of 4000 rates"), "{err}");
    let err = run(&["min-bucket", "--rate", "1/h..100000/h,1/h..100000/h"], &csv).error();
    assert_eq!(err, "ratelimit: --rate gives 200000 rates; at most 100000 are allowed");
}

#[test]
fn a_header_with_a_line_break_or_control_bytes_is_escaped_on_one_line() {
    let err = replay_error(&[], "\"ti\nme\",x\n1,2\n");
    assert_eq!(
        err,
        "ratelimit: <stdin>: no column named `time` (choose the time column with \
         --time-column); the header has: ti\\nme,x"
    );
    let err = replay_error(&[], "a\x1b[31m,x\n1,2\n");
    assert!(err.ends_with("the header has: a\\u{1b}[31m,x"), "{err}");
}

#[test]
fn a_duplicated_column_the_command_uses_is_refused() {
    let err = replay_error(&[], "time,time\n2025-01-01,2025-01-02\n");
    assert_eq!(
        err,
        "ratelimit: <stdin>: the header names `time` twice, as columns 1 and 2; which one is \
         meant cannot be told"
    );
    let err = replay_error(&["--min-mag", "5"], "time,mag,x,mag\n2025-01-01,5,,6\n");
    assert!(err.contains("names `mag` twice, as columns 2 and 4"), "{err}");
    // A duplicated column the command does not read is no one's concern.
    let out = run(&[&GCRA[..], &["--format", "csv"]].concat(), "time,x,x\n2025-01-01,1,2\n");
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn cost_and_magnitude_say_their_own_limits() {
    // check reads a cost as a replay's field is read: 0 is one, -1 is not.
    let err =
        run(&["check", "k", "--rate", "5/h", "--cost", "-1", "--redis", "redis://x"], "").error();
    assert_eq!(
        err,
        "ratelimit: invalid value '-1' for '--cost <N>': negative: a cost is a whole number of \
         units, 0 or more"
    );
    let err = replay_error(&["--min-mag", "5.1234567"], QUAKES);
    assert_eq!(
        err,
        "ratelimit: invalid value '5.1234567' for '--min-mag <M>': '5.1234567' has more than 6 \
         decimals, the most that are kept"
    );
}

#[test]
fn a_cause_is_not_printed_twice() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("redis://127.0.0.1:{port}");
    let err = run(&["check", "k", "--rate", "1/h", "--redis", &url], "").error();
    // Before: "cannot reach Redis at URL: Connection refused (os error 111): Connection
    // refused (os error 111)".
    assert_eq!(err, format!("ratelimit: cannot reach Redis at {url}: Connection refused"));
}

#[test]
fn an_unwritable_stderr_exits_2_without_a_panic() {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let out = crate::harness::command()
        .args(["replay", "no/such.csv", "--algo", "gcra", "--rate", "5/h"])
        .stderr(full)
        .output()
        .unwrap();
    // Before: exit 101, a panic in eprintln!.
    assert_eq!(out.status.code(), Some(2));
    // A note that cannot be written does not fail a run that succeeds.
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let out = crate::harness::command()
        .args(["replay", "--algo", "gcra", "--rate", "5/h", "--min-mag", "5"])
        .stdin(std::process::Stdio::piped())
        .stderr(full)
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(b"time,mag\n2025-01-01T00:00:00Z,\n")?;
            child.wait_with_output()
        })
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn error_texts() {
    // Each bad invocation, and the one line it gets; the snapshot is the review copy.
    let cases: [(&[&str], &str); 16] = [
        (&["replay", "--algo", "gcra", "--rate", "0/h"], QUAKES),
        (&["replay", "--algo", "gcra", "--rate", "5/hour"], QUAKES),
        (&["replay", "--algo", "gcra", "--rate", "1/h..2/h"], QUAKES),
        (&["replay", "--algo", "sliding-log", "--rate", "5/h", "--burst", "3"], QUAKES),
        (&["replay", "--algo", "gcra", "--rate", "5/h", "--burst", "0"], QUAKES),
        (&["replay", "--algo", "gcra", "--rate", "5/h", "--window", "0s"], QUAKES),
        (&["replay", "--algo", "gcra", "--rate", "5/h", "--until", "+1h"], QUAKES),
        (&["replay", "--algo", "gcra", "--rate", "5/h", "--since", "2025-02-30"], QUAKES),
        (&["replay", "--algo", "gcra", "--rate", "5/h", "--time-column", "when"], QUAKES),
        (&["replay", "--algo", "gcra", "--rate", "5/h", "--min-mag", "x"], QUAKES),
        (&["replay", "--algo", "gcra", "--rate", "5/h"], "time\n2025-13-01T00:00:00Z\n"),
        (&["min-bucket", "--rate", "1/h..200000/h"], QUAKES),
        (&["min-bucket", "--rate", "1/h", "--plot", "x.svg"], QUAKES),
        (&["min-rate", "--burst", "0"], QUAKES),
        (&["synth", "--min-mag", "9.8"], ""),
        (&["check", "k", "--rate", "5/h", "--algo", "leaky-queue", "--redis", "redis://x"], ""),
    ];
    let mut texts = String::new();
    for (args, stdin) in cases {
        let err = run(args, stdin).error();
        texts += &format!("ratelimit {}\n    {err}\n", args.join(" "));
    }
    insta::assert_snapshot!(texts);
}

#[test]
fn cover_needs_keys_and_a_share_above_zero() {
    let err = run(&["min-bucket", "--rate", "1/h", "--cover", "99%"], QUAKES).error();
    assert_eq!(err, "ratelimit: --cover is a share of keys: use it with --key COLUMN");
    for bad in ["0%", "0", "100.5%", "-1%", "99.12345%", "most"] {
        let args = ["min-bucket", "--rate", "1/h", "--key", "net", "--cover", bad];
        let err = run(&args, QUAKES).error();
        assert!(err.contains("is not a share above 0% and at most 100%"), "{bad}: {err}");
    }
    let err = run(&["min-bucket", "--curve", "--key", "net", "--cover", "99%"], QUAKES).error();
    assert!(err.contains("cannot be used with"), "{err}");
}

#[test]
fn a_bad_row_past_the_first_batch_is_reported_by_every_reading_thread() {
    // 5,000 good rows, more than one batch of the reading thread, then a bad time: every
    // path (one limiter, keys numbered by the deciding thread; six, by a thread of their
    // own; no keys) reports the same line, after the good rows were read.
    let mut csv = String::from("time,net\n");
    for i in 0..5_000 {
        let (h, m, s) = (i / 3600, i / 60 % 60, i % 60);
        csv.push_str(&format!("2025-01-01T{h:02}:{m:02}:{s:02}Z,n{}\n", i % 7));
    }
    csv.push_str("yesterday,n1\n");
    let file = crate::harness::temp_file("bad.csv", &csv);
    let path = file.to_str().unwrap();
    for args in [
        &["replay", path, "--algo", "gcra", "--rate", "5/h", "--key", "net"][..],
        &["compare", path, "--rate", "5/h", "--key", "net"],
        &["compare", path, "--rate", "5/h"],
        &["min-bucket", path, "--rate", "5/h", "--key", "net"],
    ] {
        let err = crate::harness::run_with(args, crate::harness::Stdin::Null).error();
        assert!(err.contains("line 5002, field `time`: \"yesterday\""), "{args:?}: {err}");
    }
}

#[test]
fn a_burst_past_10_to_the_12_is_refused_by_every_command() {
    let past = "1000000000001";
    let commands: [&[&str]; 4] = [
        &["replay", "--algo", "gcra", "--rate", "5/h", "--burst", past],
        &["min-rate", "--burst", past],
        &["filter", "--lines", "--rate", "5/h", "--burst", past],
        &["check", "k", "--rate", "5/h", "--burst", past, "--redis", "redis://127.0.0.1:1"],
    ];
    for args in commands {
        let err = run(args, "").error();
        let want = format!(
            "ratelimit: invalid value '{past}' for '--burst <B>': a burst may be at most 1000000000000"
        );
        assert_eq!(err, want, "{args:?}");
    }
}

#[test]
fn a_row_past_16_mib_is_refused_with_its_line_not_read_into_memory() {
    let long = format!(
        "time,mag\n2025-01-01T00:00:00Z,5\n2025-01-01T00:00:01Z,{}\n2025-01-01T00:00:02Z,5\n",
        "9".repeat(17 << 20)
    );
    let expected = "line 3: a row longer than 16 MiB, the most one row may hold";
    let file = temp_file("long.csv", &long);
    let path = file.to_str().unwrap();
    // A file read in pieces, a file on one thread, a pipe cut in blocks, a pipe on one thread.
    for threads in ["2", "1"] {
        let err = run_with(&[&GCRA[..], &[path, "--threads", threads]].concat(), Stdin::Null);
        assert!(
            err.error().ends_with(&format!("long.csv: {expected} (is it the format asked for?)"))
        );
        let err = run(&[&GCRA[..], &["--threads", threads]].concat(), &long).error();
        assert_eq!(err, format!("ratelimit: <stdin>: {expected} (is it the format asked for?)"));
    }
    let jsonl = format!(
        "{{\"time\":\"2025-01-01T00:00:00Z\"}}\n{{\"time\":\"{}\"}}\n",
        "9".repeat(17 << 20)
    );
    let err = run(&[&GCRA[..], &["--input-format", "jsonl", "-"]].concat(), &jsonl).error();
    assert_eq!(
        err,
        "ratelimit: <stdin>: line 2: a row longer than 16 MiB, the most one row may hold (is it the format asked for?)"
    );
    let filter = run(&["filter", "--algo", "gcra", "--rate", "2/h"], &long);
    assert_eq!(filter.code, 2, "{}", filter.stderr);
    assert_eq!(filter.stdout, "time,mag\n2025-01-01T00:00:00Z,5\n");
    assert!(filter.stderr.starts_with(&format!("ratelimit: cannot read stdin: {expected}\n")));
}

#[test]
fn a_model_of_a_system_says_it_cannot_run_in_redis_before_any_connection() {
    // Port 9 on loopback: nothing listens, and nothing is asked of it.
    for algo in [
        "nginx",
        "limits-fixed-window",
        "limits-moving-window",
        "limits-sliding-window",
        "envoy-ratelimit",
        "envoy-local",
        "traefik",
        "haproxy",
    ] {
        let args = [
            "replay",
            "--sample",
            "--algo",
            algo,
            "--rate",
            "60/m",
            "--redis",
            "redis://127.0.0.1:9",
        ];
        assert_eq!(run(&args, "").error(), format!("ratelimit: {algo} cannot run in Redis"));
    }
}

#[test]
fn a_huge_field_or_header_is_quoted_cut_with_its_length() {
    // A 1 MB time field: the error quotes 200 characters of it and says how long it is.
    let huge = "x".repeat(1 << 20);
    let error = run(&["replay", "--algo", "gcra", "--rate", "1/m"], &format!("time\n{huge}\n"));
    let want = format!(
        "ratelimit: <stdin>: line 2, field `time`: \"{}\"… (1048576 bytes in all) is not an RFC 3339",
        "x".repeat(200)
    );
    let error = error.error();
    assert!(error.starts_with(&want), "{}", &error[..error.len().min(400)]);
    assert!(error.len() < 600, "{} bytes", error.len());
    // A header of one 1 MB name and 300 others: each name cut, and the whole.
    let names: Vec<String> = (0..300).map(|n| format!("c{n}")).collect();
    let header = format!("{huge},{}\n", names.join(","));
    let error = run(&["replay", "--algo", "gcra", "--rate", "1/m"], &header).error();
    assert!(error.contains(&format!("{}…,c0,c1,", "x".repeat(200))), "{error}");
    assert!(error.ends_with("… (301 columns)"), "{}", &error[..error.len().min(1200)]);
    assert!(error.len() < 1000, "{} bytes", error.len());
    // A long last name is cut alone; the whole, short enough, says no count.
    let header = format!("a,{huge}\n1,2\n");
    let error = run(&["replay", "--algo", "gcra", "--rate", "1/m"], &header).error();
    assert!(error.ends_with(&format!("the header has: a,{}…", "x".repeat(200))), "{error}");
}
