//! Sizing: rate ranges, the exact burst–rate curve, and the smallest lossless rate.

use crate::QUAKES;
use crate::harness::{Stdin, json, real_catalog, run, run_with};

#[test]
fn a_range_prints_one_row_per_rate() {
    let range = json(&run(&["min-bucket", "--rate", "1/h..3/h", "--format", "json"], QUAKES).ok());
    let listed =
        json(&run(&["min-bucket", "--rate", "1/h,2/h,3/h", "--format", "json"], QUAKES).ok());
    assert_eq!(range, listed);
    let stepped =
        json(&run(&["min-bucket", "--rate", "1/h..9/h:4/h", "--format", "json"], QUAKES).ok());
    let rates: Vec<&str> =
        stepped.as_array().unwrap().iter().map(|r| r["rate"].as_str().unwrap()).collect();
    assert_eq!(rates, ["1/h", "5/h", "9/h"]);
}

#[test]
fn bad_ranges_and_bursts() {
    for (args, says) in [
        (&["min-bucket", "--rate", "5/h..1/h"][..], "is empty"),
        (&["min-bucket", "--rate", "1/h..5/m"], "different periods"),
        (&["min-rate", "--burst", "0"], "at least 1"),
        (&["min-bucket", "--curve", "--rate", "5/h"], "cannot be used with"),
        (&["min-bucket", "--rate", "5/h", "--plot", "x.svg"], "use it with --curve"),
    ] {
        let err = run(args, QUAKES).error();
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn the_curve_of_the_inline_catalog() {
    // Minutes from 00:30: 0, 0, 10, 20, 30, 40, 120. At r = 0 all 7 (120 min) are needed;
    // the first six (40 min) take over at (7 − 6)/80 min; the two at 00:30 (no span)
    // at (6 − 2)/40 min = 1/10m.
    let out = run(&["min-bucket", "--curve"], QUAKES).ok();
    crate::json::assert_curve(&json(
        &run(&["min-bucket", "--curve", "--format", "json"], QUAKES).ok(),
    ));
    insta::assert_snapshot!(out);
}

#[test]
fn min_rate_of_the_inline_catalog() {
    // A bucket of 2 must hold the six events of 00:30–01:10 less what refills: (6 − 2)
    // events in 40 minutes. A bucket of 1 cannot hold the two events at 00:30.
    let out = json(&run(&["min-rate", "--burst", "2,1,7", "--format", "json"], QUAKES).ok());
    assert_eq!(out[0]["rate"], "1/10m");
    assert_eq!(out[0]["per_hour"], 6.0);
    assert_eq!(out[0]["span"]["events"], 6);
    assert!(out[1]["rate"].is_null() && out[1]["span"]["events"] == 2);
    assert_eq!(out[2]["rate"], "0");
}

/// Reads seconds, to the microsecond, as whole microseconds, through their decimal text.
fn micros_of(seconds: f64) -> i128 {
    format!("{seconds:.6}").replace('.', "").parse().unwrap()
}

/// Evaluates the curve's segments at `events` per `micros`: the smallest whole burst.
fn bucket_from_curve(segments: &[serde_json::Value], events: i128, micros: i128) -> i128 {
    let need = segments
        .iter()
        .map(|s| {
            let span = micros_of(s["span_s"].as_f64().unwrap());
            i128::from(s["events"].as_i64().unwrap()) * micros - events * span
        })
        .max()
        .unwrap();
    (need + micros - 1) / micros
}

#[test]
#[ignore = "needs ../shared/data"]
fn the_curve_agrees_with_the_one_pass_minimum_at_many_rates() {
    let path = real_catalog("usgs_m5_2015_2025.csv");
    let file = path.to_str().unwrap();
    let curve =
        json(&run_with(&["min-bucket", file, "--curve", "--format", "json"], Stdin::Null).ok());
    let segments = curve.as_array().unwrap();
    assert!(segments.len() > 10);
    // 1/d to 300/d, 1/h to 200/h, and 1/m to 5/m: 505 rates.
    let rates = ["1/d..300/d", "1/h..200/h", "1/m..5/m"].join(",");
    let one_pass = json(
        &run_with(&["min-bucket", file, "--rate", &rates, "--format", "json"], Stdin::Null).ok(),
    );
    let one_pass = one_pass.as_array().unwrap();
    assert_eq!(one_pass.len(), 505);
    for row in one_pass {
        let rate = row["rate"].as_str().unwrap();
        let (count, unit) = rate.split_once('/').unwrap();
        let micros: i128 = match unit {
            "d" => 86_400_000_000,
            "h" => 3_600_000_000,
            "m" => 60_000_000,
            _ => unreachable!("{rate}"),
        };
        let expected = bucket_from_curve(segments, count.parse().unwrap(), micros);
        assert_eq!(row["min_bucket"].as_i64().unwrap() as i128, expected, "{rate}");
    }
}

#[test]
fn each_piece_of_the_curve_says_the_one_pass_bucket_at_its_start() {
    // The sample's curve: at each piece's lower rate, the bucket it states is the one
    // that min-bucket finds in one pass at that rate (and at rate 0, every event).
    let curve = json(&run(&["min-bucket", "--sample", "--curve", "--format", "json"], "").ok());
    let pieces = curve.as_array().unwrap();
    assert!(pieces.len() > 10);
    assert_eq!(pieces[0]["from"], "0");
    let all = json(
        &run(&["replay", "--sample", "--algo", "gcra", "--rate", "1/s", "--format", "json"], "")
            .ok(),
    );
    assert_eq!(pieces[0]["min_bucket"], all["events"]);
    let rates: Vec<&str> = pieces[1..].iter().map(|p| p["from"].as_str().unwrap()).collect();
    let args = ["min-bucket", "--sample", "--rate", &rates.join(","), "--format", "json"];
    let one_pass = json(&run(&args, "").ok());
    // One answer a rate, in the order asked (each rate written its own way).
    assert_eq!(one_pass.as_array().unwrap().len(), rates.len());
    for (piece, found) in pieces[1..].iter().zip(one_pass.as_array().unwrap()) {
        assert_eq!(piece["min_bucket"], found["min_bucket"], "{}", piece["from"]);
    }
}

fn gcra_dropped(file: &str, rate: &str, burst: u64) -> u64 {
    let args = [
        "replay",
        file,
        "--algo",
        "gcra",
        "--rate",
        rate,
        "--burst",
        &burst.to_string(),
        "--format",
        "json",
    ];
    json(&run_with(&args, Stdin::Null).ok())["dropped"].as_u64().unwrap()
}

/// The rate a millionth below `rate`, as N·10⁶ − 1 events per P·10⁶.
fn a_millionth_slower(rate: &str) -> String {
    let (count, period) = rate.split_once('/').unwrap();
    let micros = ratelimit_replay::units::time::Span::as_micros(period.parse().unwrap());
    format!("{}/{}us", count.parse::<i64>().unwrap() * 1_000_000 - 1, micros * 1_000_000)
}

#[test]
#[ignore = "needs ../shared/data"]
fn min_rate_is_lossless_and_a_millionth_less_is_not() {
    let path = real_catalog("usgs_m5_2015_2025.csv");
    let file = path.to_str().unwrap();
    let found = json(
        &run_with(&["min-rate", file, "--burst", "5,74", "--format", "json"], Stdin::Null).ok(),
    );
    for row in found.as_array().unwrap() {
        let burst = row["burst"].as_u64().unwrap();
        let rate = row["rate"].as_str().unwrap();
        assert_eq!(gcra_dropped(file, rate, burst), 0, "burst {burst} at {rate}");
        let slower = a_millionth_slower(rate);
        assert!(gcra_dropped(file, &slower, burst) >= 1, "burst {burst} at {slower}");
    }
}

#[test]
fn the_curve_drawn_has_a_dot_per_breakpoint() {
    let path = crate::harness::temp_file("curve.svg", "");
    let segments = json(
        &run(
            &["min-bucket", "--curve", "--format", "json", "--plot", path.to_str().unwrap()],
            QUAKES,
        )
        .ok(),
    );
    let svg = std::fs::read_to_string(&path).unwrap();
    let doc = roxmltree::Document::parse(&svg).expect("the SVG parses");
    let dots = doc.descendants().filter(|n| n.has_tag_name("circle")).count();
    assert_eq!(dots, segments.as_array().unwrap().len() - 1);
}

#[test]
fn min_rate_and_the_curve_give_rates_in_the_unit_asked() {
    // A bucket of 2 needs 1/10m (see above): 6 an hour, 0.1 a minute, 144 a day.
    let table = |per: &str| run(&["min-rate", "--burst", "2", "--per", per], QUAKES).ok();
    for (per, header, value) in
        [("m", "per_minute", "0.1"), ("d", "per_day", "144"), ("h", "per_hour", "6")]
    {
        let out = table(per);
        let (head, row) = out.split_once('\n').unwrap();
        assert!(head.contains(header), "{out}");
        assert_eq!(row.split_whitespace().nth(2), Some(value), "{out}");
    }
    // The curve's last piece starts at 1/10m: 0.1 a minute.
    let curve = run(&["min-bucket", "--curve", "--per", "m"], QUAKES).ok();
    let last = curve.lines().last().unwrap();
    assert!(last.starts_with("1/10m") && last.split_whitespace().nth(1) == Some("0.1"), "{curve}");
    // The JSON keeps its contract: per_hour.
    let found =
        json(&run(&["min-rate", "--burst", "2", "--per", "m", "--format", "json"], QUAKES).ok());
    assert_eq!(found[0]["per_hour"], 6.0);
}

/// The least lossless rate of one key's times (ms) at burst `b`, exactly, as a fraction
/// (events, ms) — the most any stretch of more than b events asks, (count − b) / its
/// length — or `None` when more than b share an instant.
fn min_rate_exactly(times: &[i64], b: usize) -> Option<(i128, i128)> {
    let mut most = (0i128, 1i128);
    for i in 0..times.len() {
        for j in i + b..times.len() {
            let span = i128::from(times[j] - times[i]);
            if span == 0 {
                return None;
            }
            let count = i128::try_from(j - i + 1 - b).unwrap();
            if count * most.1 > most.0 * span {
                most = (count, span);
            }
        }
    }
    Some(most)
}

#[test]
fn min_rate_by_key_is_the_highest_rate_any_key_needs_and_names_it() {
    let synth = [
        "synth",
        "requests",
        "--clients",
        "40",
        "--requests",
        "3000",
        "--days",
        "1",
        "--seed",
        "5",
    ];
    let log = run_with(&synth, Stdin::Null).ok();
    let keys = crate::brute::by_key(&crate::brute::rows(&log, "client"));
    for b in [1usize, 2, 5, 20] {
        // Each key's own need; the worst is the highest, the first by name among equals.
        let mut worst: Option<(Option<(i128, i128)>, &str)> = None;
        for (key, times) in &keys {
            let need = min_rate_exactly(times, b);
            let more = match (worst.map(|w| w.0), need) {
                (None, _) => true,
                (Some(None), _) => false,
                (Some(Some(_)), None) => true,
                (Some(Some((n, s))), Some((m, t))) => m * s > n * t,
            };
            if more {
                worst = Some((need, key));
            }
        }
        let (need, key) = worst.unwrap();
        let burst = b.to_string();
        let out = json(
            &run(
                &["min-rate", "-", "--key", "client", "--burst", &burst, "--format", "json"],
                &log,
            )
            .ok(),
        );
        assert_eq!(out[0]["worst_key"]["key"], key, "burst {b}");
        match need {
            None => assert!(out[0]["rate"].is_null(), "burst {b}"),
            Some((events, ms)) => {
                #[allow(clippy::cast_precision_loss)]
                let per_hour = events as f64 * 3_600_000.0 / ms as f64;
                let got = out[0]["per_hour"].as_f64().unwrap();
                assert!(
                    (got - per_hour).abs() <= per_hour * 1e-12,
                    "burst {b}: {got} against {per_hour}"
                );
            }
        }
    }
    // Without --key, one bucket for all: a higher rate than any one key needs, and no key.
    let all = json(&run(&["min-rate", "-", "--burst", "5", "--format", "json"], &log).ok());
    let keyed = json(
        &run(&["min-rate", "-", "--key", "client", "--burst", "5", "--format", "json"], &log).ok(),
    );
    assert!(all[0]["per_hour"].as_f64() > keyed[0]["per_hour"].as_f64());
    assert!(all[0].get("worst_key").is_none());
    let table = run(&["min-rate", "-", "--key", "client", "--burst", "5"], &log).ok();
    assert!(table.starts_with("burst  rate"), "{table}");
    assert!(table.lines().next().unwrap().contains(" key "), "{table}");
}
