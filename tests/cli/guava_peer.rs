//! The Guava models against Debian's libguava-java (31.1) with OpenJDK: `tests/java/
//! GuavaPeer.java`, compiled here into Guava's package, makes each key's limiter with the
//! package-private factories that take a stopwatch, and a fake one reads each request's
//! time. Every request of a keyed request log, a seeded bursty stream of weighted requests
//! (equal times, steps of a microsecond and a millisecond) and the catalog must be decided
//! alike, in every setting.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::peer_events::{Event, agree_everywhere, decisions, peer_decisions, streams};

/// Debian's Guava jar (libguava-java).
const GUAVA_JAR: &str = "/usr/share/java/guava.jar";

/// Compiles the helper into `dir`, against Debian's Guava.
fn compile(dir: &Path) {
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/java/GuavaPeer.java");
    assert!(Path::new(GUAVA_JAR).exists(), "no {GUAVA_JAR}: apt-get install libguava-java");
    let javac = Command::new("javac")
        .args(["-d", dir.to_str().unwrap(), "-cp", GUAVA_JAR, source.to_str().unwrap()])
        .output()
        .expect("javac runs (apt-get install openjdk-17-jdk-headless)");
    assert!(javac.status.success(), "{}", String::from_utf8_lossy(&javac.stderr));
}

/// Guava's decisions on `events`, with the helper's arguments.
fn guava(dir: &Path, args: &[String], events: &[Event]) -> Vec<bool> {
    let mut helper = Command::new("java");
    let classpath = format!("{}:{GUAVA_JAR}", dir.display());
    helper.args(["-cp", &classpath, "com.google.common.util.concurrent.GuavaPeer"]).args(args);
    let lines: String = events.iter().map(|(t, k, c)| format!("{t},{k},{c}\n")).collect();
    peer_decisions(helper, lines, "the Guava helper (java, and libguava-java)")
}

/// `permitsPerSecond` at N per P ms, as the model computes it: N·10⁶/P µs, one division
/// of two doubles; Java reads Rust's shortest text of it back exactly.
fn per_second(n: u64, ms: u64) -> String {
    #[allow(clippy::cast_precision_loss)]
    let rate = (n as f64 * 1e6) / (ms * 1000) as f64;
    format!("{rate:?}")
}

#[test]
#[ignore = "needs OpenJDK, Debian's libguava-java and ../shared/data"]
fn the_guava_models_decide_as_guava_does() {
    let dir = tempfile::tempdir().unwrap();
    compile(dir.path());
    let streams = streams(true);
    // Each setting: the --limit spec's parameters, and the helper's warm-up and cold
    // factor (none for SmoothBursty), at N per P ms.
    type Setting = fn(u64) -> (&'static str, String, Vec<String>);
    let settings: [(&str, Setting); 4] = [
        ("guava", |_| ("guava", String::new(), vec![])),
        ("guava-warmup, warmup=P", |ms| {
            ("guava-warmup", String::new(), vec![format!("{}", ms * 1000), "3.0".into()])
        }),
        ("guava-warmup, warmup=500ms, cold-factor=2.5", |_| {
            (
                "guava-warmup",
                ",warmup=500ms,cold-factor=2.5".into(),
                vec!["500000".into(), "2.5".into()],
            )
        }),
        ("guava-warmup, warmup=0", |_| {
            ("guava-warmup", ",warmup=0".into(), vec!["0".into(), "3.0".into()])
        }),
    ];
    for (setting, make) in settings {
        // With no warm-up Guava stops limiting at a key's first idle gap (guava#2730): on
        // the catalog, at once.
        let stops = setting.ends_with("warmup=0");
        agree_everywhere(setting, &streams, (stops, false), |n, ms, events| {
            let (algo, params, words) = make(ms);
            let spec = format!("algo={algo},rate={n}/{ms}ms{params},key=k,cost=cost");
            let ours = decisions(events, &["--limit", &spec]);
            let args: Vec<String> = [vec![per_second(n, ms)], words].concat();
            (spec, ours, guava(dir.path(), &args, events))
        });
    }
}

#[test]
#[ignore = "needs OpenJDK and Debian's libguava-java"]
fn guavas_config_compiles_against_guava() {
    // Each snippet's imports head a class, and the rest is the body of a method in it.
    let dir = tempfile::tempdir().unwrap();
    let asks: [&[&str]; 4] = [
        &["--for", "guava", "--rate", "1/2s"],
        &["--for", "guava", "--rate", "5/1500ms", "--key", "client"],
        &["--for", "guava-warmup", "--rate", "10/s", "--param", "warmup=500ms"],
        &["--for", "guava-warmup", "--rate", "7/h", "--key", "X-Api-Key"],
    ];
    for (i, ask) in asks.iter().enumerate() {
        let config = crate::harness::run(&[&["config"], *ask].concat(), "").ok();
        let (imports, body): (Vec<&str>, Vec<&str>) =
            config.lines().partition(|line| line.starts_with("import "));
        let class = format!("C{i}");
        let source = format!(
            "{}\nclass {class} {{\n  void run() {{\n{}\n  }}\n}}\n",
            imports.join("\n"),
            body.join("\n")
        );
        let path = dir.path().join(format!("{class}.java"));
        std::fs::write(&path, &source).unwrap();
        let javac = Command::new("javac")
            .args(["-d", dir.path().to_str().unwrap(), "-cp", GUAVA_JAR, path.to_str().unwrap()])
            .output()
            .expect("javac runs");
        assert!(javac.status.success(), "{}\n{source}", String::from_utf8_lossy(&javac.stderr));
    }
}

#[test]
#[ignore = "needs OpenJDK and Debian's libguava-java"]
fn min_bucket_for_guava_is_the_least_permits_per_second_guava_refuses_none_with() {
    let dir = tempfile::tempdir().unwrap();
    compile(dir.path());
    let args = ["synth", "requests", "--clients", "40", "--requests", "3000", "--days", "0.1"];
    let log = crate::harness::run_with(&args, crate::harness::Stdin::Null).ok();
    let requests = crate::peer_events::events(&log, Some("client"));
    let asked =
        ["min-bucket", "--rate", "1/s", "--key", "client", "--for", "guava", "--format", "json"];
    let found = crate::harness::json(&crate::harness::run(&asked, &log).ok());
    let per_second = found[0]["system_size"]["value"].as_u64().unwrap();
    assert!(per_second > 1, "the log's bursts need more than one a second");
    // Guava itself: none refused at that rate, some at one a second less.
    let at = |r: u64| guava(dir.path(), &[format!("{r}.0")], &requests);
    assert!(at(per_second).iter().all(|&pass| pass));
    assert!(!at(per_second - 1).iter().all(|&pass| pass));
}
