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
        assert!(page.contains(command), "the page lacks {command}");
    }
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
