//! `ratelimit synth` and the bundled sample it made.

use std::path::PathBuf;

use crate::harness::{Stdin, json, run, run_with, temp_file};

fn sample_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data").join("sample.csv")
}

#[test]
fn the_sample_is_what_its_documented_command_makes() {
    let made = run_with(&ratelimit_replay::sample::ARGS, Stdin::Null).ok();
    let committed = std::fs::read_to_string(sample_path()).unwrap();
    assert!(made == committed, "data/sample.csv differs from what `synth` makes now");
    assert_eq!(committed.as_bytes(), ratelimit_replay::sample::CSV, "the binary embeds it");
}

#[test]
fn the_same_seed_gives_the_same_bytes() {
    let args = ["synth", "--seed", "9", "--days", "30", "--mainshock", "7.5@2015-01-10T00:00:00Z"];
    let first = run_with(&args, Stdin::Null).ok();
    assert_eq!(first, run_with(&args, Stdin::Null).ok());
    let other = run_with(&["synth", "--seed", "10", "--days", "30"], Stdin::Null).ok();
    assert_ne!(first, other);
}

#[test]
fn synth_writes_the_usgs_layout_that_replay_reads() {
    let csv =
        run_with(&["synth", "--days", "20", "--mainshock", "8@2015-01-05T12:00:00Z"], Stdin::Null)
            .ok();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "time,latitude,longitude,depth,mag,magType,nst,gap,dmin,rms,net,id,updated,place,type,\
         horizontalError,depthError,magError,magNst,status,locationSource,magSource"
    );
    let planted = csv.lines().find(|l| l.contains("planted")).unwrap();
    assert!(planted.starts_with("2015-01-05T12:00:00.000Z,,,,8.00,mw,"), "{planted}");
    let rows = csv.lines().count() - 1;
    let report =
        json(&run(&["replay", "--algo", "gcra", "--rate", "1/h", "--format", "json"], &csv).ok());
    assert_eq!(report["events"], rows);
    assert!(csv.contains("\"synthetic, aftershock of sy"));
}

#[test]
#[ignore = "needs ../shared/data"]
fn eleven_years_make_about_as_many_events_as_the_real_catalog() {
    // 2015–2025 had 19 032 M≥5 events in 4018 days; the model's long-run mean matches it.
    let csv = run_with(&["synth", "--seed", "1", "--days", "4018"], Stdin::Null).ok();
    let events = csv.lines().count() - 1;
    assert!((17_129..=20_935).contains(&events), "{events} events, not within 10% of 19 032");
}

#[test]
fn output_to_a_file() {
    let path = temp_file("synth-out.csv", "old contents");
    let args = ["synth", "--days", "10", "-o", path.to_str().unwrap()];
    assert_eq!(run_with(&args, Stdin::Null).ok(), "", "nothing on stdout");
    let written = std::fs::read_to_string(&path).unwrap();
    assert_eq!(written, run_with(&["synth", "--days", "10"], Stdin::Null).ok());
}

/// What each limiter passed in the sample's busiest hour, at 5/h and burst 5.
fn busiest_hour(args: &[&str], stdin: Stdin) -> Vec<u64> {
    ["fixed-window", "token-bucket", "sliding-log"]
        .iter()
        .map(|algo| {
            let burst: &[&str] = if *algo == "token-bucket" { &["--burst", "5"] } else { &[] };
            let args =
                [&["replay", "--algo", algo, "--rate", "5/h", "--format", "json"], burst, args]
                    .concat();
            let report = json(&run_with(&args, stdin.clone()).ok());
            report["busiest_window"]["count"].as_u64().unwrap()
        })
        .collect()
}

#[test]
fn the_sample_shows_what_the_limiters_promise() {
    let counts = busiest_hour(&["--sample"], Stdin::Null);
    let (fixed, bucket, log) = (counts[0], counts[1], counts[2]);
    assert!(fixed > 5, "fixed windows let more than N through across an edge: {fixed}");
    assert!(bucket > 5 && bucket <= 10, "a bucket passes up to b + r·T = 10: {bucket}");
    assert!(log <= 5, "a sliding log never passes more than N: {log}");
    // The explicit flag and the file itself agree.
    assert_eq!(busiest_hour(&[], Stdin::File(sample_path())), counts);
}

#[test]
fn in_a_terminal_with_no_input_replay_uses_the_sample_and_says_so() {
    let bin = env!("CARGO_BIN_EXE_ratelimit");
    let command = format!("{} replay --algo gcra --rate 5/h --burst 5 --color never", bin);
    // `script` runs the command with a terminal for its stdin, stdout and stderr.
    let out = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap().replace("\r\n", "\n");
    assert!(out.status.success(), "{text}");
    let mut lines = text.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("ratelimit: note: no input given: replaying the bundled sample")
    );
    assert_eq!(lines.next().unwrap(), "input       <sample>");
}

#[test]
fn bad_synth_options() {
    for (args, says) in [
        (&["--bogus"][..], "--bogus"),
        (&["--min-mag", "11"], "--min-mag must be from 0 to below 9.5"),
        (&["--min-mag", "-1"], "--min-mag must be from 0 to below 9.5"),
        // The model caps magnitudes at 9.5: a minimum there or above would not hold.
        (&["--min-mag", "9.8"], "below 9.5, the largest magnitude the model makes"),
        (&["--min-mag", "9.5"], "below 9.5"),
        // 2.7 · 10^5000 background events a day do not fit in any number.
        (&["--min-mag", "0", "--b-value", "1000"], "the background rate"),
        (&["--min-mag", "4", "--b-value", "1000", "--days", "1"], "overflows"),
        // With b below α, every event triggers more than one aftershock on average.
        (&["--b-value", "0.5"], "triggers 7.73 aftershocks on average"),
        (&["--min-mag", "0"], "about 2.0e9 events, more than the 1e8"),
        (&["--scale", "1000000"], "more than the 1e8"),
        (&["--mainshock", "12@2015-02-01T00:00:00Z"], "from --min-mag to 10"),
        (&["--mainshock", "8.8@2016-02-01T00:00:00Z"], "outside the catalog"),
        (&["--mainshock", "8.8"], "not MAG@TIME"),
        (&["--days", "-5"], "cannot be negative"),
        (&["--until", "2014-01-01"], "must not be before --start"),
        (&["--scale", "0"], "a zero rate"),
        (&["--b-value", "0"], "--b-value must be more than 0"),
        (&["--days", "1", "--until", "2015-02-01"], "cannot be used with"),
    ] {
        let err = run_with(&[&["synth"], args].concat(), Stdin::Null).error();
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn a_planted_mainshock_counts_toward_the_events_synth_will_make() {
    // At Mc 0 an M9.5 triggers about 10^8 direct aftershocks, and each of them nearly one.
    let args =
        ["synth", "--min-mag", "0", "--days", "1", "--mainshock", "9.5@2015-01-01T12:00:00Z"];
    let err = run_with(&args, Stdin::Null).error();
    assert!(err.contains("events, more than the 1e8 synth makes at most"), "{err}");
}

#[test]
fn a_request_log_is_deterministic_and_reads_back_by_client() {
    let args = ["synth", "requests", "--clients", "1000", "--requests", "20000", "--seed", "3"];
    let log = run_with(&args, Stdin::Null).ok();
    assert_eq!(log, run_with(&args, Stdin::Null).ok(), "the same seed, the same bytes");
    assert!(log.starts_with("time,client,method,path,status\n"), "{}", &log[..80]);
    let rows = log.lines().count() - 1;
    assert!((18_000..23_000).contains(&rows), "{rows} requests for 20 000 asked");
    // Every command reads it as it is, by client.
    let found = crate::harness::json(
        &run_with(
            &[
                "min-bucket",
                "--rate",
                "60/m",
                "--key",
                "client",
                "--cover",
                "99%",
                "--format",
                "json",
            ],
            Stdin::Pipe(&log),
        )
        .ok(),
    );
    assert_eq!(found[0]["keys"]["column"], "client");
    assert!(found[0]["keys"]["count"].as_u64().unwrap() > 100);
}

#[test]
fn bad_request_log_options() {
    for (args, says) in [
        (&["--clients", "0"][..], "--clients must be at least 1"),
        (&["--clients", "9007199254740993"], "--clients may be at most 2^53"),
        (&["--days", "0"], "--days must be more than 0"),
        (&["--requests", "1000000000"], "--requests may be at most 1e8"),
        (&["--bots", "5000"], "--bots may be at most 1000"),
        (&["--bot-every", "500us"], "--bot-every must be at least 1ms"),
        (&["--bot-run", "0"], "--bot-run must be at least 1"),
        (&["--days", "1", "--until", "x"], "unexpected argument"),
    ] {
        let err = run_with(&[&["synth", "requests"], args].concat(), Stdin::Null).error();
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// A GCRA at one event a second, by the token bucket's definition in whole milliseconds of
/// credit: each millisecond adds one, an event takes 1000, and the bucket holds `burst`
/// events' worth. Returns how many it drops.
pub fn dropped_at_one_a_second(times: &[i64], burst: i64) -> i64 {
    let (mut credit, mut last, mut dropped) = (burst * 1000, i64::MIN, 0);
    for &t in times {
        if last != i64::MIN {
            credit = (credit + (t - last)).min(burst * 1000);
        }
        last = t;
        if credit >= 1000 {
            credit -= 1000;
        } else {
            dropped += 1;
        }
    }
    dropped
}

#[test]
fn cover_and_key_quantiles_match_brute_force_on_a_request_log() {
    use crate::brute::min_bucket;
    use crate::real_data::{assert_cover, assert_quantiles, ms};
    let args = ["synth", "requests", "--clients", "2000", "--requests", "30000", "--seed", "7"];
    let log = run_with(&args, Stdin::Null).ok();
    // Each client's times, read with the csv crate and chrono, not ratelimit's reader.
    let mut by_client: std::collections::BTreeMap<String, Vec<i64>> = Default::default();
    for record in csv::Reader::from_reader(log.as_bytes()).records() {
        let record = record.unwrap();
        by_client.entry(record[1].to_owned()).or_default().push(ms(&record[0]));
    }
    by_client.values_mut().for_each(|times| times.sort());
    let clients: Vec<(&String, &Vec<i64>)> = by_client.iter().collect();
    let needs: Vec<i64> = clients.iter().map(|(_, t)| min_bucket(t, 60, 60_000)).collect();
    let events: Vec<i64> = clients.iter().map(|(_, t)| i64::try_from(t.len()).unwrap()).collect();
    assert!(needs.iter().any(|&n| n > 100), "the log has bots that need a large bucket");

    let args = ["min-bucket", "--rate", "60/m", "--key", "client", "--cover", "99%"];
    let found =
        json(&run_with(&[&args[..], &["--format", "json"]].concat(), Stdin::Pipe(&log)).ok());
    let found = &found[0];
    assert_eq!(found["keys"]["count"], clients.len());
    let left_out = assert_cover(found, &needs, &events, 990);
    // The neediest left out, by need and then by name.
    let mut neediest: Vec<(i64, &str, i64)> =
        (0..needs.len()).map(|k| (-needs[k], clients[k].0.as_str(), events[k])).collect();
    neediest.sort();
    let shown: Vec<(i64, &str, i64)> = found["cover"]["left_out"]["top"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                -k["min_bucket"].as_i64().unwrap(),
                k["key"].as_str().unwrap(),
                k["events"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(shown, neediest[..left_out.min(5)]);
    // The listed keys are the neediest ten.
    let listed: Vec<&str> = found["keys"]["top"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["key"].as_str().unwrap())
        .collect();
    let want: Vec<&str> = neediest.iter().take(10).map(|&(_, name, _)| name).collect();
    assert_eq!(listed, want);

    // A replay by client: the drops of each, and their spread, against a bucket counted here.
    let args = ["replay", "--algo", "gcra", "--rate", "60/m", "--burst", "5", "--key", "client"];
    let report =
        json(&run_with(&[&args[..], &["--format", "json"]].concat(), Stdin::Pipe(&log)).ok());
    let dropped: Vec<i64> = clients.iter().map(|(_, t)| dropped_at_one_a_second(t, 5)).collect();
    assert_eq!(report["dropped"], dropped.iter().sum::<i64>());
    assert_quantiles(&report["keys"]["quantiles"]["dropped"], &dropped);
    let mut most: Vec<(i64, &str)> =
        (0..dropped.len()).map(|k| (-dropped[k], clients[k].0.as_str())).collect();
    most.sort();
    for (listed, &(minus, name)) in report["keys"]["top"].as_array().unwrap().iter().zip(&most) {
        assert_eq!(
            (listed["key"].as_str().unwrap(), listed["dropped"].as_i64().unwrap()),
            (name, -minus)
        );
    }
    assert_eq!(report["keys"]["top"].as_array().unwrap().len(), 10);
}

#[test]
fn synth_requests_bounds_the_bots_runs_as_well_as_the_requests() {
    // Three bots, a run of 3000 calls a day each, for 100 000 days: 9 × 10^8 requests.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("log.csv");
    let args = ["synth", "requests", "--days", "100000", "-o", out.to_str().unwrap()];
    let err = run_with(&args, Stdin::Null).error();
    assert_eq!(
        err,
        "ratelimit: this log would hold about 9.0e8 requests (the bots run 3000 calls a day \
         each), and synth makes at most 1e8: fewer --days, --bots or --bot-run"
    );
    assert!(!out.exists(), "nothing is written");
}

/// nginx's `log_format` of `synth requests --format clf`, as its help gives it.
pub const SYNTH_LOG_FORMAT: &str = "$remote_addr - $remote_user [$time_local] \"$request\" \
                                    $status $body_bytes_sent \"$http_referer\" \
                                    \"$http_user_agent\" $msec $request_time";

#[test]
fn a_synthetic_access_log_holds_the_requests_of_the_csv_to_the_millisecond() {
    let base = ["synth", "requests", "--clients", "300", "--requests", "4000", "--days", "0.05"];
    let csv = temp_file("requests.csv", &run(&base, "").ok());
    let log = run(&[&base[..], &["--format", "clf"]].concat(), "").ok();
    let help = run(&["synth", "requests", "--help"], "").ok();
    assert!(help.split_whitespace().collect::<Vec<_>>().join(" ").contains(SYNTH_LOG_FORMAT));
    // One line a request, each arriving ($msec − $request_time) when the CSV says.
    let rows = run(
        &[
            "replay",
            csv.to_str().unwrap(),
            "--algo",
            "gcra",
            "--rate",
            "1/s",
            "--emit",
            "all",
            "-q",
        ],
        "",
    )
    .ok();
    assert_eq!(log.lines().count(), rows.lines().count() - 1);
    let log = temp_file("access.log", &log);
    let replay = |path: &std::path::Path, format: &[&str], key: &str| {
        let args =
            ["replay", path.to_str().unwrap(), "--algo", "gcra", "--rate", "1/s", "--burst", "3"];
        json(
            &run_with(
                &[&args[..], format, &["--key", key, "--format", "json"]].concat(),
                Stdin::Null,
            )
            .ok(),
        )
    };
    let (by_client, by_address) = (
        replay(&csv, &[], "client"),
        replay(&log, &["--log-format", SYNTH_LOG_FORMAT], "$binary_remote_addr"),
    );
    // Its first line tells its layout: read untold, it is read the same.
    let untold = replay(&log, &[], "remote_addr");
    assert_eq!(untold["passed"], by_address["passed"]);
    assert_eq!(by_address["events"], by_client["events"]);
    assert_eq!(by_address["passed"], by_client["passed"]);
    assert_eq!(by_address["keys"]["count"], by_client["keys"]["count"]);
    assert!(by_client["dropped"].as_u64().unwrap() > 0, "the limit bites");
    // The tokens are not in nginx's log.
    let both = run(&[&base[..], &["--format", "clf", "--tokens"]].concat(), "").error();
    assert!(both.contains("--tokens"), "{both}");
}

/// Regression: `--tokens` drew its numbers from the requests' generator, so the same seed
/// made another log with them (207,730 requests against 201,583).
#[test]
fn a_seed_fixes_the_requests_whatever_columns_are_added() {
    let base = ["synth", "requests", "--seed", "9", "--clients", "300", "--requests", "20000"];
    let plain = run_with(&base, Stdin::Null).ok();
    let with_tokens = run_with(&[&base[..], &["--tokens"]].concat(), Stdin::Null).ok();
    let requests = |log: &str| -> Vec<String> {
        log.lines().skip(1).map(|l| l.split(',').take(5).collect::<Vec<_>>().join(",")).collect()
    };
    assert_eq!(requests(&plain), requests(&with_tokens));
    assert!(with_tokens.lines().next().unwrap().contains("total_tokens"));
}

/// Bots run at the pace asked, so that a per-second limit can catch them: runs of 40
/// requests 100 ms apart, which nginx at 5r/s refuses part of.
#[test]
fn bots_run_at_the_pace_asked() {
    let args = ["synth", "requests", "--seed", "4", "--clients", "20", "--requests", "200"];
    let pace = ["--bots", "1", "--bot-every", "100ms", "--bot-run", "40", "--pause", "30s"];
    let log = run_with(&[&args[..], &pace].concat(), Stdin::Null).ok();
    let bot: Vec<i64> = (log.lines().skip(1))
        .filter(|l| l.contains(",bot1,"))
        .map(|l| crate::real_data::ms(l.split(',').next().unwrap()))
        .collect();
    assert_eq!(bot.len() % 40, 0, "whole runs");
    assert!(!bot.is_empty());
    for run in bot.chunks(40) {
        assert!(run.windows(2).all(|w| w[1] - w[0] == 100), "{run:?}");
    }
    let refused = crate::brute::nginx(&bot[..40], 5000, 0).iter().filter(|&&p| !p).count();
    assert!(refused > 0, "a run at 10 a second is over nginx's 5r/s");
}
