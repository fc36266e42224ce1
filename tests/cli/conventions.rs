//! The conventions of a well-made CLI: shell completions and a manual page, from the same
//! definitions as the parser.

use crate::harness::{Stdin, run_with};

#[test]
fn completions_for_every_shell_know_every_command() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let script = run_with(&["completions", shell], Stdin::Null).ok();
        for command in ["replay", "compare", "min-bucket", "min-rate", "check", "synth"] {
            assert!(script.contains(command), "{shell} completion lacks {command}");
        }
        assert!(script.contains("redis-timeout"), "{shell}");
    }
    let err = run_with(&["completions", "nushell"], Stdin::Null).error();
    assert!(err.contains("[possible values: bash, elvish, fish, powershell, zsh]"), "{err}");
}

#[test]
fn the_manual_page_is_roff_with_every_command() {
    let page = run_with(&["man"], Stdin::Null).ok();
    assert!(page.contains(".TH ratelimit 1"), "{}", &page[..200]);
    for command in ["replay", "compare", "plot", "min\\-bucket", "min\\-rate", "check", "synth"] {
        assert!(page.contains(&format!("ratelimit\\-{command}(1)")), "the page lacks {command}");
    }
}

#[test]
fn each_command_has_a_page_and_man_dir_writes_every_page_the_top_one_names() {
    let page = run_with(&["man", "replay"], Stdin::Null).ok();
    assert!(page.contains(".TH ratelimit-replay 1"), "{}", &page[..200]);
    assert!(page.contains("\\-\\-burst"), "the replay page lacks --burst");
    let page = run_with(&["man", "synth", "requests"], Stdin::Null).ok();
    assert!(page.contains(".TH ratelimit-synth-requests 1"), "{}", &page[..200]);
    let err = run_with(&["man", "replays"], Stdin::Null).error();
    assert!(err.starts_with("ratelimit: no command `replays` has a page; there are: replay,"));

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man1");
    let run = run_with(&["man", "--dir", out.to_str().unwrap()], Stdin::Null);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut written: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    written.sort();
    assert_eq!(written.len(), 20, "{written:?}");
    assert_eq!(run.stderr.lines().count(), 20);
    let top = std::fs::read_to_string(out.join("ratelimit.1")).unwrap();
    for name in written.iter().filter(|name| *name != "ratelimit.1") {
        let command = name.trim_end_matches(".1").replace('-', "\\-");
        let named = format!("{command}(1)");
        let top_or_synth = if name.starts_with("ratelimit-synth-") {
            std::fs::read_to_string(out.join("ratelimit-synth.1")).unwrap()
        } else {
            top.clone()
        };
        assert!(top_or_synth.contains(&named), "{named} is not named");
    }
    assert!(!top.contains("ratelimit\\-help(1)"), "no page for help is written");
}

#[test]
fn short_flags_mean_what_their_long_flags_mean() {
    // Each pair: the long flags, then the short ones, to the same effect.
    let pairs = [
        "replay --algo gcra --rate 2/h --burst 2 --window 30m --key net --threads 1 --format json",
        "replay -a gcra -r 2/h -b 2 -w 30m -k net -j 1 -f json",
        "compare --algo gcra,fixed-window --rate 2/h",
        "compare -a gcra,fixed-window -r 2/h",
        "min-bucket --rate 2/h --format csv",
        "min-bucket -r 2/h -f csv",
        "min-rate --burst 2",
        "min-rate -b 2",
    ];
    for pair in pairs.chunks(2) {
        let [long, short] = [0, 1].map(|i| pair[i].split(' ').collect::<Vec<_>>());
        let long = run_with(&long, Stdin::Pipe(crate::QUAKES)).ok();
        assert_eq!(run_with(&short, Stdin::Pipe(crate::QUAKES)).ok(), long, "{}", pair[1]);
    }
}

/// The sample's first rows, as a headerless file with `;` between fields: a time, a
/// magnitude and a network.
const HEADERLESS: &str = "\
2025-07-30T00:30:00Z;6.1;us
2025-07-30T00:31:00Z;5.0;ak
2025-07-30T00:32:00Z;5.3;us
2025-07-30T00:33:00Z;5.0;us
";

#[test]
fn no_headers_and_a_delimiter_read_as_the_csv_of_the_same_rows() {
    let csv = format!("time,mag,net\n{}", HEADERLESS.replace(';', ","));
    let args = ["replay", "-a", "gcra", "-r", "1/h", "-f", "json"];
    let expected = crate::harness::json(
        &run_with(&[&args[..], &["-k", "net"]].concat(), Stdin::Pipe(&csv)).ok(),
    );
    for threads in ["1", "2"] {
        let extra = ["-n", "-d", ";", "-k", "3", "-j", threads];
        let got = crate::harness::json(
            &run_with(&[&args[..], &extra].concat(), Stdin::Pipe(HEADERLESS)).ok(),
        );
        for field in ["events", "passed", "dropped", "min_bucket", "by_key"] {
            let (mut got, mut expected) = (got[field].clone(), expected[field].clone());
            if field == "by_key" {
                got["column"] = "net".into();
                expected["column"] = "net".into();
            }
            assert_eq!(got, expected, "{field}");
        }
    }
    // The time is column 1 unless said; rows out have no header, as rows in had none.
    let emitted = run_with(
        &["replay", "-a", "gcra", "-r", "1/h", "-n", "-d", ";", "--emit", "all"],
        Stdin::Pipe(HEADERLESS),
    )
    .ok();
    assert_eq!(
        emitted,
        "2025-07-30T00:30:00Z;6.1;us;passed\n2025-07-30T00:31:00Z;5.0;ak;dropped\n\
         2025-07-30T00:32:00Z;5.3;us;dropped\n2025-07-30T00:33:00Z;5.0;us;dropped\n"
    );
    let err = run_with(
        &["replay", "-a", "gcra", "-r", "1/h", "-n", "--input-format", "jsonl"],
        Stdin::Null,
    )
    .error();
    assert_eq!(err, "ratelimit: --no-headers is for CSV and TSV input; this input is jsonl");
    let err = run_with(&["replay", "-a", "gcra", "-r", "1/h", "-d", "ab"], Stdin::Null).error();
    assert!(err.contains("'ab' is not one character (\\t or tab for a tab)"), "{err}");
    let err = run_with(
        &["replay", "-a", "gcra", "-r", "1/h", "-n", "-d", ";", "-k", "9"],
        Stdin::Pipe(HEADERLESS),
    )
    .error();
    assert!(err.ends_with("no column named `9` (named by --key); the header has: 1,2,3"), "{err}");
}

#[test]
fn no_events_says_why_on_stderr() {
    use crate::harness::{run, temp_file};
    let gcra = ["replay", "--algo", "gcra", "--rate", "5/h"];
    // An empty input, and a header alone: the report, and a note on stderr.
    for input in ["", "time,mag\n"] {
        let out = run(&gcra, input);
        assert_eq!(out.code, 0);
        assert_eq!(out.stderr, "ratelimit: note: no events: <stdin> has no rows\n");
        assert!(out.stdout.contains("events      0"), "{}", out.stdout);
    }
    // Filters that keep nothing: which, of how many rows, and where the file's times lie.
    let file = temp_file("quakes.csv", crate::QUAKES);
    let path = file.to_str().unwrap();
    let args = [&gcra[..], &[path, "--since", "2030-01-01", "--format", "json"]].concat();
    let want = format!(
        "ratelimit: note: no events: the filters (--since 2030-01-01T00:00:00Z) kept none of \
         the 7 rows of {path}; its times span 2025-07-30T00:30:00Z to 2025-07-30T02:30:00Z\n"
    );
    assert_eq!(run(&args, "").stderr, want);
    // Keyed, through stdin, which cannot be read again for the span.
    let keyed = [&gcra[..], &["--key", "id", "--min-mag", "7", "--format", "json"]].concat();
    let want = "ratelimit: note: no events: the filters (--min-mag 7) kept none of the 7 rows \
                of <stdin>\n";
    assert_eq!(run(&keyed, crate::QUAKES).stderr, want);
    // A run with events says nothing.
    assert_eq!(run(&gcra, crate::QUAKES).stderr, "");
}

#[test]
fn epoch_seconds_need_no_zone_and_basic_offsets_read() {
    use crate::harness::run;
    let gcra = ["replay", "--algo", "gcra", "--rate", "5/h", "--format", "json"];
    let epoch = run(&[&gcra[..], &["--time-format", "%s"]].concat(), "time\n1700000000\n").ok();
    let rfc = run(&gcra, "time\n2023-11-14T22:13:20Z\n").ok();
    assert_eq!(
        crate::harness::json(&epoch)["busiest_window"],
        crate::harness::json(&rfc)["busiest_window"]
    );
    let basic = run(&gcra, "time\n2023-11-15T03:43:20+0530\n").ok();
    assert_eq!(
        crate::harness::json(&basic)["busiest_window"],
        crate::harness::json(&rfc)["busiest_window"]
    );
    let both =
        run(&[&gcra[..], &["--time-format", "%s", "--time-zone", "+02"]].concat(), "time\n1\n");
    assert_eq!(
        both.error(),
        "ratelimit: --time-format '%s' reads epoch seconds (%s), which are UTC, so --time-zone does not apply"
    );
}

#[test]
fn a_time_of_a_common_shape_names_the_format_that_reads_it() {
    use crate::harness::run;
    let gcra = ["replay", "--algo", "gcra", "--rate", "5/h", "--format", "json"];
    // Each input, the hint its error ends with, and the flags that hint gives.
    let cases: [(&str, &str, &[&str]); 3] = [
        ("time\n1700000000\n", "try --time-format unix-s", &["--time-format", "unix-s"]),
        (
            "Date,Time\n01/02/1965,13:44:18\n",
            "try --time-format '%m/%d/%Y %H:%M:%S' with --time-zone the offset your times are in \
             (like +00:00) ('%d/%m/%Y' if the day comes first)",
            &["--time-format", "%m/%d/%Y %H:%M:%S", "--time-zone", "+00:00"],
        ),
        (
            "time\n2025-01-01 00:00:00\n",
            "try --time-format '%Y-%m-%d %H:%M:%S' with --time-zone the offset your times are \
             in (like +00:00)",
            &["--time-format", "%Y-%m-%d %H:%M:%S", "--time-zone", "+00:00"],
        ),
    ];
    for (input, hint, flags) in cases {
        let column: &[&str] =
            if input.starts_with("Date") { &["--time-column", "Date,Time"] } else { &[] };
        let args = [&gcra[..], column].concat();
        let err = run(&args, input).error();
        assert!(err.ends_with(hint), "{err}");
        // And what it says works.
        let read = run(&[&args[..], flags].concat(), input).ok();
        assert_eq!(crate::harness::json(&read)["events"], 1, "{flags:?}");
    }
}

#[test]
fn quiet_writes_data_only_and_errors_still() {
    use crate::harness::run;
    // A note, --emit's report, and filter's summary: each gone with -q, the data the same.
    let cases: [(&[&str], &str); 3] = [
        (&["replay", "--algo", "gcra", "--rate", "5/h"], ""),
        (&["replay", "--algo", "gcra", "--rate", "2/h", "--emit", "passed"], crate::QUAKES),
        (&["filter", "--lines", "--rate", "5/h"], "a\nb\n"),
    ];
    for (args, input) in cases {
        let loud = run(args, input);
        assert!(!loud.stderr.is_empty(), "{args:?} says something without -q");
        let quiet = run(&[args, &["-q"]].concat(), input);
        assert_eq!((quiet.code, quiet.stderr.as_str()), (0, ""), "{args:?}");
        assert_eq!(quiet.stdout, loud.stdout, "{args:?}");
    }
    let err = run(&["replay", "-q", "--algo", "gcra", "--rate", "0/h"], "").error();
    assert!(err.starts_with("ratelimit: invalid value '0/h'"), "{err}");
}

/// An nginx log whose `log_format` adds `$msec $request_time` to the combined format: the
/// requests came at .100, .800, .950 and 1.500 seconds past 00:30:00, though `$time_local`
/// has whole seconds.
const MSEC_LOG: &str = r#"10.0.0.1 - - [30/Jul/2025:00:30:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8" 1753835400.300 0.200
10.0.0.1 - - [30/Jul/2025:00:30:00 +0000] "GET /a HTTP/1.1" 200 5 "-" "curl/8" 1753835400.900 0.100
10.0.0.2 - - [30/Jul/2025:00:30:01 +0000] "GET /b HTTP/1.1" 200 5 "-" "curl \"x\"" 1753835401.050 0.100
10.0.0.1 - - [30/Jul/2025:00:30:01 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8" 1753835401.500 0.000
"#;

const NGINX_FORMAT: &str = r#"$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $msec $request_time"#;

#[test]
fn whole_second_times_are_said_and_a_log_format_with_msec_reads_the_arrivals() {
    use crate::harness::{json, run};
    let gcra = ["replay", "-a", "gcra", "-r", "2/s", "-b", "1", "-f", "json"];
    // $time_local: 00:30:00 twice, 00:30:01 twice; at 2/s, one of each pair is dropped.
    let whole = run(&[&gcra[..], &["--input-format", "clf"]].concat(), MSEC_LOG);
    assert_eq!(whole.code, 0, "{}", whole.stderr);
    assert_eq!(
        (json(&whole.stdout)["passed"].as_u64(), json(&whole.stdout)["dropped"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(
        whole.stderr,
        "ratelimit: note: the times are whole seconds, and 4 events share their second with \
         another: they are replayed as simultaneous, though up to 1 s apart. The figures may \
         be off, either way, by what the rate refills in 1 s: see the other reading with --ties \
         spread; log times to the millisecond (nginx $msec, or --log-format with $msec and \
         $request_time)\n"
    );
    // $msec − $request_time: .100, .800, .950, 1.500; only .950 comes within 0.5 s of a pass.
    let arrivals = run(&[&gcra[..], &["--log-format", NGINX_FORMAT]].concat(), MSEC_LOG);
    assert_eq!((arrivals.code, arrivals.stderr.as_str()), (0, ""));
    let report = json(&arrivals.stdout);
    assert_eq!((report["passed"].as_u64(), report["dropped"].as_u64()), (Some(3), Some(1)));
    assert_eq!(report["busiest_window"]["start"], "2025-07-30T00:30:00.100Z");
    // Fields are the format's variables.
    let keyed = run(
        &[&gcra[..], &["--log-format", NGINX_FORMAT, "-k", "http_user_agent"]].concat(),
        MSEC_LOG,
    )
    .ok();
    assert_eq!(json(&keyed)["keys"]["count"], 2);
    let err = run(
        &[&gcra[..], &["--log-format", NGINX_FORMAT, "-k", "upstream_addr"]].concat(),
        MSEC_LOG,
    )
    .error();
    assert!(err.ends_with("line 1: the --log-format has no $upstream_addr; it has $remote_addr, $remote_user, $time_local, $request, $status, $body_bytes_sent, $http_referer, $http_user_agent, $msec, $request_time"), "{err}");
    let err = run(&[&gcra[..], &["--log-format", "$remote_addr $status"]].concat(), "").error();
    assert!(
        err.starts_with("ratelimit: --log-format has no time: $msec, $time_iso8601 or $time_local"),
        "{err}"
    );
    let err = run(&[&gcra[..], &["--log-format", "$msec$status"]].concat(), "").error();
    assert_eq!(
        err,
        "ratelimit: --log-format '$msec$status': $msec and $status have nothing between them, so they cannot be told apart"
    );
}

#[test]
fn readmes_library_example_is_the_one_the_core_compiles() {
    // The core's README is a doctest of the core; the main README shows the same example.
    let rust = |text: &str| -> Vec<String> {
        text.split("```rust\n")
            .skip(1)
            .map(|block| block.split("```").next().unwrap().to_owned())
            .collect()
    };
    let shown = rust(include_str!("../../README.md"));
    let compiled = rust(include_str!("../../crates/core/README.md"));
    assert_eq!(shown.len(), 1, "README shows one Rust example");
    assert_eq!(shown, compiled);
}

#[test]
fn man_dir_writes_every_page_or_none() {
    // Files past 8 KiB cannot be written (ulimit -f, with SIGXFSZ ignored, as a full disk
    // refuses a write): the longer pages fail, and no page is left, whole or part.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man1");
    let script = format!(
        "trap '' XFSZ; ulimit -f 16; exec {} man --dir {}",
        env!("CARGO_BIN_EXE_ratelimit"),
        out.display()
    );
    let run = crate::harness::finished(
        std::process::Command::new("sh").args(["-c", &script]).output().unwrap(),
    );
    let err = run.error();
    assert!(err.starts_with(&format!("ratelimit: cannot write {}/", out.display())), "{err}");
    assert!(err.ends_with(": File too large"), "{err}");
    let left: Vec<_> = std::fs::read_dir(&out).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn whole_second_ties_count_within_a_key_and_their_spread_is_replayed() {
    use crate::harness::temp_file;
    // Second 00:00:00: key a three times, b once; then b alone.
    let csv = "time,client\n2025-01-01T00:00:00Z,a\n2025-01-01T00:00:00Z,b\n2025-01-01T00:00:00Z,a\n\
               2025-01-01T00:00:00Z,a\n2025-01-01T00:00:05Z,b\n";
    let file = temp_file("whole.csv", csv);
    let gcra =
        ["replay", file.to_str().unwrap(), "-a", "gcra", "-r", "3/s", "-b", "1", "-f", "json"];
    let keyed = crate::harness::run_with(
        &[&gcra[..], &["--key", "client"]].concat(),
        crate::harness::Stdin::Null,
    );
    let notes: Vec<&str> = keyed.stderr.lines().collect();
    // Only a's three tie within their key; a CSV is told to write finer times, not $msec.
    assert!(
        notes[0].contains("3 events share their second with another of their key"),
        "{notes:?}"
    );
    assert!(notes[0].ends_with("write times to the millisecond"), "{notes:?}");
    // As logged, a's three come at once to a bucket of 1 at 3/s: two dropped. Spread across
    // their second (b's lone event is a group of its own key only in the count: the spread
    // is of the second's four, in the order they came), a comes at 0, 1/2 and 3/4 s: at 3/s
    // only 1/2 s after 0 passes (I = 1/3 s), and 3/4 s is 1/4 s after it: dropped.
    assert_eq!(
        notes[1],
        "ratelimit: note: read with --ties spread (each second's tied events spread evenly \
         across it, in the order they came), the limit drops 1, against 2 read together"
    );
    let unkeyed = crate::harness::run_with(&gcra, crate::harness::Stdin::Null);
    assert!(
        unkeyed.stderr.contains("4 events share their second with another:"),
        "{}",
        unkeyed.stderr
    );
}
