//! `ratelimit report`: one self-contained HTML page, checked as a file and then in a real
//! headless Chromium (see `browser`): it loads from `file://` with no error and no request,
//! shows the report's figures, zooms with its own controls, and draws something.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::browser::Browser;
use crate::harness::{Stdin, json, real_catalog, run, run_with};

/// Writes the report of `args` into `dir` and returns its path.
fn write_report(dir: &Path, args: &[&str]) -> PathBuf {
    let path = dir.join("report.html");
    let out = path.display().to_string();
    run_with(&[&["report"][..], args, &["-o", &out]].concat(), Stdin::Null).ok();
    path
}

/// Opens the page at 1280×800 and checks what every report must do; returns the browser,
/// the render time and the page's text.
fn open_and_check(path: &Path) -> (Browser, Duration, String) {
    let url = format!("file://{}", path.display());
    let (mut browser, took) = Browser::open(&url, 1280, 800);
    assert_eq!(browser.errors(), Vec::<String>::new(), "the page reported errors");
    let asked: Vec<String> = browser.requests().into_iter().filter(|r| *r != url).collect();
    assert_eq!(asked, Vec::<String>::new(), "the page asked the network");
    // Its own zoom button narrows the span shown.
    let shown = |b: &mut Browser| {
        b.eval("document.getElementById('span').textContent").as_str().unwrap().to_owned()
    };
    let before = shown(&mut browser);
    browser.click("#zoom-in");
    let after = shown(&mut browser);
    assert_ne!(before, after, "zooming in changed nothing");
    let length = |text: &str| text.split(['(', ')']).nth(1).unwrap_or_default().to_owned();
    assert_ne!(length(&before), length(&after), "{before} → {after}");
    browser.click("#zoom-reset");
    assert_eq!(shown(&mut browser), before, "the whole span again");
    // A 1280×800 PNG of a blank page is a few kB; a drawn one is far more.
    let png = browser.screenshot();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(png.len() > 30_000, "the screenshot is nearly blank: {} bytes", png.len());
    if let Ok(keep) = std::env::var("RATELIMIT_REPORT_SCREENSHOT") {
        std::fs::write(keep, &png).unwrap();
    }
    let text = browser.eval("document.body.innerText").as_str().unwrap().to_owned();
    assert_eq!(browser.errors(), Vec::<String>::new(), "the page reported errors");
    (browser, took, text)
}

#[test]
fn the_report_is_one_file_that_asks_for_nothing() {
    let out = run(&["report", "--sample", "--rate", "5/h", "--burst", "5", "-o", "-"], "").ok();
    assert!(out.starts_with("<!doctype html>") && out.trim_end().ends_with("</html>"));
    // Nothing loads from elsewhere: no src, no stylesheet link, no URL but SVG's namespace.
    for outside in [" src=", "<link", "url(", "@import", "https://"] {
        assert!(!out.contains(outside), "the page holds {outside}");
    }
    let urls: Vec<&str> = out.match_indices("http://").map(|(at, _)| &out[at..at + 30]).collect();
    assert!(urls.iter().all(|u| u.starts_with("http://www.w3.org/2000/svg")), "{urls:?}");
    // The data it draws from is the reports' JSON.
    let data = out.split("<script type=\"application/json\" id=\"report-data\">").nth(1).unwrap();
    let data = json(data.split("</script>").next().unwrap());
    let compare = json(
        &run(&["compare", "--sample", "--rate", "5/h", "--burst", "5", "--format", "json"], "")
            .ok(),
    );
    assert_eq!(data["lanes"], compare);
    let need =
        json(&run(&["min-bucket", "--sample", "--rate", "5/h", "--format", "json"], "").ok());
    assert_eq!(data["need"], need);
}

#[test]
fn a_report_of_layers_needs_no_rate_and_leads_with_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let layers = ["--limit", "algo=gcra,rate=5/h,burst=5", "--limit", "algo=sliding-log,rate=20/d"];
    let page =
        std::fs::read_to_string(write_report(dir.path(), &[&["--sample"][..], &layers].concat()))
            .unwrap();
    let data = page.split("<script type=\"application/json\" id=\"report-data\">").nth(1).unwrap();
    let data = json(data.split("</script>").next().unwrap());
    // The page's lanes are the first layer's rate and burst, as if given with --rate.
    let given = ["compare", "--sample", "--rate", "5/h", "--burst", "5", "--format", "json"];
    assert_eq!(data["lanes"], json(&run(&given, "").ok()));
    let replayed = json(
        &run(&[&["replay", "--sample"][..], &layers, &["--format", "json"]].concat(), "").ok(),
    );
    assert_eq!(data["layers"], replayed);
    let none = run_with(&["report", "--sample", "-o", "-"], Stdin::Null).error();
    assert!(none.contains("--rate"), "{none}");
}

#[test]
fn with_keys_the_scene_is_where_your_limiter_drops_not_where_demand_peaks() {
    // Demand peaks at 00:00, 100 clients once each, which no per-client limit drops; at
    // 05:00 client x sends 30 in 29 s, of which 10/m with a burst of 10 drops 16.
    let mut csv = String::from("time,client\n");
    for n in 0..100 {
        csv += &format!("2025-01-01T00:00:{:02}.{:03}Z,c{n}\n", n / 10, n % 10 * 100);
    }
    for s in 0..30 {
        csv += &format!("2025-01-01T05:00:{s:02}Z,x\n");
    }
    let file = crate::harness::temp_file("requests.csv", &csv);
    let args = ["report", file.to_str().unwrap(), "--rate", "10/m", "--key", "client", "-o", "-"];
    let page = run_with(&args, Stdin::Null).ok();
    let data = page.split("<script type=\"application/json\" id=\"report-data\">").nth(1).unwrap();
    let data = json(data.split("</script>").next().unwrap());
    let chosen = usize::try_from(data["meta"]["chosen"].as_u64().unwrap()).unwrap();
    let decisions = data["scene"]["decisions"][chosen].as_str().unwrap();
    assert_eq!(decisions.matches('0').count(), 16, "{decisions}");
    assert_eq!(data["scene"]["start"], 1_735_707_600_000_i64, "05:00:00");
}

/// Two configurations of nginx per client, as the guide's walk-through compares them.
const CONFIGURATIONS: [&str; 4] = [
    "--limit",
    "algo=nginx,rate=1r/s,burst=3,nodelay,key=client",
    "--limit",
    "algo=nginx,rate=30r/m,burst=5,nodelay,key=client",
];

/// A request log of a few hundred clients, for the pages of configurations.
fn request_log(dir: &Path) -> String {
    let log = dir.join("requests.csv");
    let args =
        ["synth", "requests", "--clients", "300", "--requests", "20000", "--days", "0.2", "-o"];
    run_with(&[&args[..], &[log.to_str().unwrap()]].concat(), Stdin::Null).ok();
    log.display().to_string()
}

#[test]
fn side_by_side_the_page_holds_compare_limits_report_and_each_on_the_scene() {
    let dir = tempfile::tempdir().unwrap();
    let log = request_log(dir.path());
    let args = [&[log.as_str(), "--side-by-side"][..], &CONFIGURATIONS].concat();
    let page = std::fs::read_to_string(write_report(dir.path(), &args)).unwrap();
    let data = page.split("<script type=\"application/json\" id=\"report-data\">").nth(1).unwrap();
    let data = json(data.split("</script>").next().unwrap());
    let compared =
        [&["compare", log.as_str()][..], &CONFIGURATIONS, &["--format", "json"]].concat();
    assert_eq!(data["configurations"], json(&run_with(&compared, Stdin::Null).ok()));
    assert!(data["layers"].is_null(), "the --limits are configurations, not layers");
    let scene = data["scene"]["t"].as_array().unwrap().len();
    for decisions in data["configuration_scene"].as_array().unwrap() {
        assert_eq!(decisions.as_str().unwrap().len(), scene);
    }
}

#[test]
#[ignore = "needs chromium"]
fn side_by_side_the_page_draws_each_configuration_and_what_changes() {
    let dir = tempfile::tempdir().unwrap();
    let log = request_log(dir.path());
    let args = [&[log.as_str(), "--side-by-side"][..], &CONFIGURATIONS].concat();
    let path = write_report(dir.path(), &args);
    let (mut browser, _, text) = open_and_check(&path);
    assert_eq!(browser.eval("document.getElementById('configurations').hidden"), false);
    assert_eq!(browser.eval("document.querySelectorAll('#configuration-lanes .lane').length"), 2);
    let compared =
        [&["compare", log.as_str()][..], &CONFIGURATIONS, &["--format", "json"]].concat();
    let compared = json(&run_with(&compared, Stdin::Null).ok());
    let changes = &compared["changes"];
    let said = format!(
        "From the first to the second: {} events newly refused, {} newly passed.",
        changes["newly_refused"], changes["newly_passed"]
    );
    assert!(text.contains(&said), "{said} not in {text}");
    assert!(text.contains("4. Side by side"), "numbered after the data, scene and size");
    // The answer first: the title is the move, and what it changes is on the first screen
    // (1280 × 800, the screenshot open_and_check takes), above the fold.
    let spec = |n: usize| compared["configurations"][n]["spec"].as_str().unwrap().to_owned();
    let (first, second) = (spec(0), spec(1));
    let title = browser.eval("document.getElementById('title').textContent");
    assert!(title.as_str().unwrap().ends_with(&format!("from {first} to {second}")), "{title}");
    let lede = browser.eval("document.getElementById('lede').textContent");
    let lede = lede.as_str().unwrap();
    let newly = format!(
        "newly refuses {} events and newly passes {}",
        changes["newly_refused"], changes["newly_passed"]
    );
    assert!(
        lede.starts_with(&format!("Moving from the first configuration to the second {newly}")),
        "{lede}"
    );
    let bottom = browser
        .eval("document.getElementById('answer-newly-refused').getBoundingClientRect().bottom");
    assert!(bottom.as_f64().unwrap() <= 800.0, "the answer is below the first screen: {bottom}");
}

#[test]
fn layers_refuse_stdin_which_the_report_cannot_read_twice() {
    let args = ["report", "--rate", "5/h", "--limit", "algo=gcra,rate=5/h", "-o", "-"];
    let error = run(&args, "time\n2025-01-01T00:00:00Z\n").error();
    assert_eq!(
        error,
        "ratelimit: report --limit reads its input twice, the second time for the layers: give \
         a file, not stdin"
    );
}

#[test]
fn the_report_refuses_to_write_over_its_input() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("q.csv");
    std::fs::write(&input, "time\n2025-01-01T00:00:00Z\n").unwrap();
    let path = input.display().to_string();
    let error = run(&["report", &path, "--rate", "5/h", "-o", &path], "").error();
    assert!(error.contains("refusing to write"), "{error}");
    assert_eq!(std::fs::read_to_string(&input).unwrap(), "time\n2025-01-01T00:00:00Z\n");
}

#[test]
#[ignore = "needs chromium"]
fn the_report_on_the_sample_opens_offline_and_zooms_with_its_own_controls() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_report(dir.path(), &["--sample", "--rate", "5/h", "--burst", "5"]);
    let (_, took, text) = open_and_check(&path);
    let args = ["replay", "--sample", "--algo", "gcra", "--rate", "5/h", "--burst", "5"];
    let sample = json(&run(&[&args[..], &["--format", "json"]].concat(), "").ok());
    assert!(text.contains(&format!("drops {} of", sample["dropped"])), "{text}");
    eprintln!("sample: {} bytes, drawn in {took:?}", std::fs::metadata(&path).unwrap().len());
}

#[test]
#[ignore = "needs chromium"]
fn the_report_shows_the_fleet_and_each_layer_when_given() {
    let dir = tempfile::tempdir().unwrap();
    let layers =
        ["--limit", "algo=gcra,rate=5/h,burst=5", "--limit", "algo=fixed-window,rate=20/d"];
    let args =
        [&["--sample", "--rate", "5/h", "--burst", "5", "--servers", "4"][..], &layers].concat();
    let path = write_report(dir.path(), &args);
    let (mut browser, _, text) = open_and_check(&path);
    for section in ["fleet", "layers"] {
        assert_eq!(browser.eval(&format!("document.getElementById('{section}').hidden")), false);
    }
    let rows = |b: &mut Browser, table: &str| {
        b.eval(&format!("document.querySelectorAll('#{table} tbody tr').length"))
    };
    assert_eq!(rows(&mut browser, "fleet-table"), 3, "local, split and synced");
    assert_eq!(rows(&mut browser, "layers-table"), 2, "a row a layer");
    // Each layer's refusals are replay --limit's.
    let replay = json(
        &run(&[&["replay", "--sample"][..], &layers, &["--format", "json"]].concat(), "").ok(),
    );
    let [refused, only, alone] =
        ["refused", "only", "alone"].map(|f| replay["layers"][1][f].to_string());
    assert!(
        text.contains(&format!("algo=fixed-window,rate=20/d\t{refused}\t{only}\t{alone}")),
        "{text}"
    );
    // The headline names what every layer at once lets through.
    let at_once =
        format!("All 2 layers at once pass {} of {} events", replay["passed"], replay["events"]);
    assert!(text.contains(&at_once), "{at_once} not in {text}");
    // The sections shown are numbered in sequence: no clients here, so the fleet is 4th.
    assert!(text.contains("4. The fleet") && text.contains("5. The layers"), "{text}");
    assert!(!text.contains("4. The clients"), "{text}");
}

#[test]
#[ignore = "needs ../shared/data and chromium"]
fn the_report_on_the_catalog_shows_74_197_and_38() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = real_catalog("usgs_m5_2015_2025.csv").display().to_string();
    let path = write_report(dir.path(), &[&catalog, "--rate", "5/h", "--burst", "5"]);
    let (mut browser, took, text) = open_and_check(&path);
    // The figures of the JSON reports: min-bucket's 74, replay's 197 dropped and the
    // busiest hour's 38 events.
    let answer =
        |b: &mut Browser, id: &str| b.eval(&format!("document.getElementById('{id}').textContent"));
    assert_eq!(answer(&mut browser, "answer-min-bucket"), "74");
    assert_eq!(answer(&mut browser, "answer-dropped"), "197");
    assert!(text.contains("The busiest 1 h holds 38 of them"), "{text}");
    assert!(text.contains("At 5/h, a bucket of 74 loses nothing; yours, 5, drops 197"), "{text}");
    // Hovering an event shows its row: zoomed to the busiest window, each event is drawn.
    browser.click("#zoom-busiest");
    let shown = browser.eval("document.getElementById('span').textContent");
    assert!(!shown.as_str().unwrap().contains("bins"), "{shown}");
    let said = |b: &mut Browser| {
        b.eval("document.getElementById('hover').textContent").as_str().unwrap().to_owned()
    };
    browser.hover("#timeline");
    let row = said(&mut browser);
    assert!(row.starts_with("2025-07-") && row.contains(" · magnitude "), "{row}");
    // And with the keyboard: the first event drawn, then the next.
    browser.eval("document.getElementById('timeline').focus()");
    browser.key(".");
    let first = said(&mut browser);
    browser.key(".");
    assert!(first.contains(" · magnitude ") && said(&mut browser) != first, "{first}");
    let size = std::fs::metadata(&path).unwrap().len();
    eprintln!("catalog: {size} bytes, drawn in {took:?}");
}

#[test]
#[ignore = "needs chromium"]
fn the_report_on_a_keyed_request_log_tells_the_clients() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.csv");
    let args = ["synth", "requests", "--clients", "200", "--requests", "20000", "-o"];
    run_with(&[&args[..], &[log.to_str().unwrap()]].concat(), Stdin::Null).ok();
    let log = log.display().to_string();
    let path = write_report(dir.path(), &[&log, "--rate", "10/m", "--key", "client"]);
    let (mut browser, took, text) = open_and_check(&path);
    assert_eq!(browser.eval("document.getElementById('clients').hidden"), false);
    let cover = json(
        &run(
            &[
                "min-bucket",
                &log,
                "--rate",
                "10/m",
                "--key",
                "client",
                "--cover",
                "90%",
                "--format",
                "json",
            ],
            "",
        )
        .ok(),
    );
    let want = format!(
        "A burst of {} keeps 90% of the client values whole",
        cover[0]["cover"]["min_bucket"]
    );
    assert!(text.contains(&want), "{want} not in {text}");
    // The curve's rates are per minute, as 10/m is written.
    let axis = browser.eval(
        "Array.from(document.querySelectorAll('#curve text')).map(t => t.textContent).join('|')",
    );
    let axis = axis.as_str().unwrap();
    assert!(axis.contains("rate, events per minute (log)") && axis.contains("10/m"), "{axis}");
    assert_eq!(browser.eval("document.getElementById('curve-per').textContent"), "per minute");
    // The frontier: a line for each share untouched (50%, 90%, 99%, 100%), ending where
    // `recommend` says its rates end, with the least burst it finds there.
    let frontier = json(
        &run(&["recommend", &log, "--key", "client", "--untouched", "90%", "--format", "json"], "")
            .ok(),
    );
    let last = frontier["frontier"].as_array().unwrap().last().unwrap();
    let lines = browser.eval("document.querySelectorAll('#frontier polyline').length");
    assert_eq!(lines, 4, "one line a share");
    let desc = browser.eval("document.getElementById('frontier-desc').textContent");
    let desc = desc.as_str().unwrap();
    assert!(desc.contains(&format!("to {}", last["rate"].as_str().unwrap())), "{desc}");
    let labels = browser.eval(
        "Array.from(document.querySelectorAll('#frontier text')).map(t => t.textContent).join('|')",
    );
    assert!(labels.as_str().unwrap().contains("90% untouched"), "{labels}");
    let at90 = format!("{}", last["burst"]);
    let ninety = browser.eval("JSON.stringify(JSON.parse(document.getElementById('report-data').textContent).frontier.find(c => c.share === '90%').points.at(-1).burst)");
    assert_eq!(ninety.as_str().unwrap(), at90);
    eprintln!("request log: {} bytes, drawn in {took:?}", std::fs::metadata(&path).unwrap().len());
    // Regression: at 100/m a few clients lose requests, and the list of those that lose
    // most was padded to 10 with clients that lost none, in name order.
    let replayed = json(
        &run(
            &[
                "replay", &log, "--algo", "gcra", "--rate", "100/m", "--key", "client", "--top",
                "0", "--format", "json",
            ],
            "",
        )
        .ok(),
    );
    let losing = (replayed["keys"]["top"].as_array().unwrap().iter())
        .filter(|k| k["dropped"].as_u64().unwrap() > 0)
        .count();
    assert!((1..10).contains(&losing), "{losing} clients lose requests");
    let path = write_report(dir.path(), &[&log, "--rate", "100/m", "--key", "client"]);
    let (mut browser, _, _) = open_and_check(&path);
    let dropped = browser.eval(
        "Array.from(document.querySelectorAll('#top-keys tbody tr')).map(r => r.cells[3].textContent).join('|')",
    );
    let dropped: Vec<&str> = dropped.as_str().unwrap().split('|').collect();
    assert_eq!(dropped.len(), losing, "{dropped:?}");
    assert!(dropped.iter().all(|d| *d != "0"), "{dropped:?}");
}

#[test]
#[ignore = "needs ../shared/data and chromium"]
fn the_report_on_two_million_rows_stays_under_5_mb_and_is_binned() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.csv");
    let data = real_catalog("usgs_m5_2015_2025.csv").parent().unwrap().to_owned();
    let tool = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/real-shaped");
    let made = std::process::Command::new(&tool)
        .arg("106")
        .arg(&big)
        .env("RATELIMIT_DATA", data)
        .status()
        .unwrap();
    assert!(made.success(), "{} failed", tool.display());
    let big = big.display().to_string();
    let path = write_report(dir.path(), &[&big, "--rate", "5/h", "--burst", "5"]);
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size < 5_000_000, "{size} bytes");
    let (mut browser, took, text) = open_and_check(&path);
    assert!(text.contains("too many to draw one by one"), "{text}");
    let shown = browser.eval("document.getElementById('span').textContent");
    assert!(shown.as_str().unwrap().contains("in bins of"), "{shown}");
    eprintln!("2 million rows: {size} bytes, drawn in {took:?}");
}

#[test]
fn the_page_lists_at_most_500_keys_whatever_top_asks() {
    // --top 0 on a log of more than 500 clients: the page lists the 500 with the most
    // drops, says so on stderr, and stays far under 5 MB (before, 2.8 kB a key).
    let args = ["synth", "requests", "--clients", "20000", "--requests", "20000", "--days", "1"];
    let log = run_with(&args, Stdin::Null).ok();
    let out = run(&["report", "--rate", "10/m", "--key", "client", "--top", "0", "-o", "-"], &log);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let keys = log
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).unwrap())
        .collect::<std::collections::HashSet<_>>();
    assert!(keys.len() > 500, "{} keys", keys.len());
    assert_eq!(
        out.stderr.lines().find(|l| l.contains("report:")),
        Some(format!("ratelimit: report: the page lists the 500 keys with the most drops, of {}: at most 500, to stay under 5 MB", keys.len()).as_str())
    );
    assert!(out.stdout.len() < 5_000_000, "{} bytes", out.stdout.len());
    let data =
        out.stdout.split("<script type=\"application/json\" id=\"report-data\">").nth(1).unwrap();
    let data = json(data.split("</script>").next().unwrap());
    let keys_of = |lane: &serde_json::Value| lane["keys"]["top"].as_array().map(Vec::len);
    let lanes = data["lanes"].as_array().unwrap();
    assert!(
        lanes.iter().all(|lane| keys_of(lane) == Some(500)),
        "{:?}",
        lanes.iter().map(keys_of).collect::<Vec<_>>()
    );
    assert!(
        out.stdout.contains("clients with the most drops, of"),
        "the page says what was left out"
    );
}

#[test]
#[ignore = "needs chromium"]
fn names_that_hold_markup_are_shown_as_text_and_run_nothing() {
    // A file, a key column and keys whose names hold markup that could end or open a
    // script: the page opens, draws, shows each name as it is, and runs none of them.
    let dir = tempfile::tempdir().unwrap();
    let payloads = [
        "<!--<script>",
        "</script><script>document.title='pwned'</script>",
        "<img src=x onerror=\"document.title='pwned'\">",
        "&lt;b&gt;",
    ];
    let column = "<!--<script>who";
    let mut csv = format!("time,\"{column}\"\n");
    for (i, key) in payloads.iter().cycle().take(40).enumerate() {
        csv += &format!("2025-01-01T00:{:02}:00Z,\"{}\"\n", i, key.replace('"', "\"\""));
    }
    let log = dir.path().join("<!--<script>.csv");
    std::fs::write(&log, csv).unwrap();
    let log = log.display().to_string();
    let path = write_report(dir.path(), &[&log, "--rate", "2/h", "--key", column]);
    let (mut browser, _, text) = open_and_check(&path);
    assert_ne!(browser.eval("document.title"), "pwned", "a name's script ran");
    for key in payloads {
        assert!(text.contains(key), "{key} is not shown as text");
    }
}
