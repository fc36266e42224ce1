//! `ratelimit plot`: an SVG that parses, whose marks count what the replay counted.

use crate::QUAKES;
use crate::harness::{Stdin, json, real_catalog, run, run_with, temp_file};

/// Checks an SVG against `compare`'s figures for the same input: every lane's bins sum to
/// the events (their passed part to the passed), and each bracket is labeled with the
/// busiest-window count.
fn check_against_compare(svg: &str, compare: &serde_json::Value) {
    let doc = roxmltree::Document::parse(svg).expect("the SVG parses as XML");
    let lanes: Vec<_> =
        doc.descendants().filter(|n| n.attribute("class") == Some("lane")).collect();
    let rows = compare.as_array().unwrap();
    assert_eq!(lanes.len(), rows.len());
    for (lane, row) in lanes.iter().zip(rows) {
        assert_eq!(lane.attribute("data-algorithm"), row["algorithm"].as_str());
        let sum = |class: &str| -> u64 {
            lane.descendants()
                .filter(|n| n.attribute("class") == Some(class))
                .map(|n| n.attribute("data-n").unwrap().parse::<u64>().unwrap())
                .sum()
        };
        assert_eq!(sum("p"), row["passed"].as_u64().unwrap(), "{}", row["algorithm"]);
        assert_eq!(sum("p") + sum("d"), row["events"].as_u64().unwrap(), "{}", row["algorithm"]);
        let bracket = lane.descendants().find(|n| n.attribute("class") == Some("busiest")).unwrap();
        let label = bracket.descendants().find(|n| n.has_tag_name("text")).unwrap().text().unwrap();
        let count = &row["busiest_window"]["count"];
        assert_eq!(label, format!("busiest 1h: {count}"));
        assert_eq!(bracket.attribute("data-count"), Some(count.to_string().as_str()));
    }
}

#[test]
fn the_inline_catalog_drawn_for_all_six() {
    let svg = run(&["plot", "--rate", "2/h", "--burst", "2", "-o", "-"], QUAKES).ok();
    let compare =
        json(&run(&["compare", "--rate", "2/h", "--burst", "2", "--format", "json"], QUAKES).ok());
    check_against_compare(&svg, &compare);
    assert!(
        svg.contains(">&lt;stdin&gt; at 2/h, burst 2</text>"),
        "the title names input, rate and burst"
    );
}

#[test]
#[ignore = "needs ../shared/data"]
fn two_days_after_kamchatka_drawn_for_three_limiters() {
    let path = real_catalog("usgs_m5_2015_2025.csv");
    let args = [
        path.to_str().unwrap(),
        "--rate",
        "5/h",
        "--burst",
        "5",
        "--since",
        "2025-07-29T23:24:00Z",
        "--until",
        "+48h",
    ];
    let svg = run_with(
        &[&["plot", "--algo", "sliding-log,gcra", "--algo", "fixed-window"], &args[..]].concat(),
        Stdin::Null,
    )
    .ok();
    let compare =
        json(&run_with(&[&["compare", "--format", "json"], &args[..]].concat(), Stdin::Null).ok());
    let rows = compare.as_array().unwrap();
    let pick = |name: &str| rows.iter().find(|r| r["algorithm"] == name).unwrap().clone();
    let picked =
        serde_json::Value::Array(vec![pick("sliding-log"), pick("gcra"), pick("fixed-window")]);
    check_against_compare(&svg, &picked);
    // Hours label a two-day axis.
    assert!(svg.contains(">06:00</text>"));
}

#[test]
fn a_hundred_thousand_events_make_a_small_svg() {
    let csv = run_with(&["synth", "--days", "4018", "--scale", "5"], Stdin::Null).ok();
    let events = csv.lines().count() - 1;
    assert!(events > 80_000, "{events}");
    let svg = run(&["plot", "--rate", "5/h", "-o", "-"], &csv).ok();
    assert!(svg.len() < 2_000_000, "{} bytes", svg.len());
    let compare = json(&run(&["compare", "--rate", "5/h", "--format", "json"], &csv).ok());
    check_against_compare(&svg, &compare);
}

#[test]
fn output_goes_to_a_file_whole_or_not_at_all() {
    let path = temp_file("scene.svg", "an older picture");
    let out = path.to_str().unwrap();
    let bad = format!("{QUAKES}not a time,0,0,0,5,mb,,,,0,us,x,,here,earthquake\n");
    run(&["plot", "--rate", "2/h", "-o", out], &bad).error();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "an older picture");
    assert_eq!(run(&["plot", "--rate", "2/h", "-o", out], QUAKES).ok(), "");
    assert!(std::fs::read_to_string(&path).unwrap().starts_with("<?xml"));
}

#[test]
fn it_will_not_write_svg_to_a_terminal() {
    let bin = env!("CARGO_BIN_EXE_ratelimit");
    let command = format!("{} plot --sample --rate 5/h", bin);
    let out = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text.trim_end(),
        "ratelimit: refusing to write SVG to a terminal: give -o FILE, or -o - for stdout"
    );
    assert!(!out.status.success());
    // Without -o, a pipe gets the SVG.
    assert!(run(&["plot", "--rate", "2/h"], QUAKES).ok().starts_with("<?xml"));
}
