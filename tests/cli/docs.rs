//! Every ```` ```sh ```` block of README and `docs/` runs as it is shown.
//!
//! A block whose lines start with `$ ` is a transcript: each `$ command` must exit 0 and
//! print exactly the lines below it. Any other block is a script that must exit 0, run by
//! bash with `-e -o pipefail`. A page's blocks run in order in one directory of their own,
//! so a file one block writes is there for the next; it holds `quakes.csv` (the M≥5
//! catalog of 2015–2025, which README fetches), `database.csv` (the Kaggle catalog of
//! 1965–2016) and the logs the pages read, and the
//! environment has `ratelimit` on its PATH, a Redis server of the test's own as
//! `$REDIS_URL`, and a local stand-in for the USGS event service as `$RATELIMIT_FDSN_URL`.
//! The set-up commands (`cargo …`, `pip install …`) are what `.ci/run` runs: the test
//! checks that it runs each one as written, rather than run them again.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::fdsn::Fdsn;
use crate::harness::real_catalog;
use crate::redis_server::RedisServer;

/// One ```` ```sh ```` block: where it is, and its lines.
#[derive(Debug, PartialEq)]
struct Block {
    at: String,
    lines: Vec<String>,
}

/// What a block asks: a script to run, or commands whose output is shown.
#[derive(Debug, PartialEq)]
enum Step {
    Script(String),
    Shown { command: String, output: String },
}

/// The pages whose examples run: README and every page of `docs/`.
fn pages() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    pages.insert(0, root.join("README.md"));
    pages
}

/// The ```` ```sh ```` blocks of a page.
fn blocks(name: &str, text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        match (&mut open, line.trim_start().starts_with("```")) {
            (None, true) if line.trim() == "```sh" => {
                open = Some(Block { at: format!("{name}:{}", i + 1), lines: Vec::new() });
            }
            (Some(_), true) => blocks.extend(open.take()),
            (Some(block), false) => block.lines.push(line.to_string()),
            (None, _) => {}
        }
    }
    assert!(open.is_none(), "{name}: a ```sh block is not closed");
    blocks
}

/// The steps of a block.
fn steps(block: &Block) -> Vec<Step> {
    if !block.lines.iter().any(|l| l.starts_with("$ ")) {
        return vec![Step::Script(block.lines.join("\n"))];
    }
    let mut steps = Vec::new();
    let mut lines = block.lines.iter().peekable();
    while let Some(line) = lines.next() {
        let mut command = line
            .strip_prefix("$ ")
            .unwrap_or_else(|| panic!("{}: {line:?} is output of no command", block.at))
            .to_string();
        while command.ends_with('\\') {
            command.push('\n');
            command.push_str(lines.next().expect("a continued line"));
        }
        let mut output = String::new();
        while let Some(next) = lines.next_if(|l| !l.starts_with("$ ")) {
            output.push_str(next);
            output.push('\n');
        }
        steps.push(Step::Shown { command, output });
    }
    steps
}

/// Whether a script line sets up rather than uses the program: CI runs those itself.
fn is_set_up(line: &str) -> bool {
    line.starts_with("cargo ") || line.starts_with("pip ")
}

/// Runs a script (or a shown command) in `dir`; returns its stdout, or what went wrong.
fn bash(dir: &Path, env: &[(&str, String)], script: &str) -> Result<String, String> {
    // The functions the examples call where a service would act.
    let prelude = "send_alert() { echo sent; }\nnotify() { :; }\n";
    let bin = Path::new(env!("CARGO_BIN_EXE_ratelimit")).parent().unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new("bash")
        .args(["-e", "-o", "pipefail", "-c", &format!("{prelude}{script}")])
        .current_dir(dir)
        .env("PATH", path)
        .env("HOME", dir)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    match out.status.success() {
        true => Ok(stdout),
        false => Err(format!("{}\n{}", out.status, String::from_utf8_lossy(&out.stderr))),
    }
}

/// The logs the pages read, besides the catalog: an alert stream, and an nginx access log
/// in the `log_format` the guide gives (three clients a minute apart, all passed, as nginx
/// at 1r/m with burst=1 passes them).
const ALERTS: &str = "M5.1 Kamchatka\nM5.4 Kamchatka\nM6.0 Kuril Islands\n";
const ACCESS_LOG: &str = "\
10.0.0.1 1753831492.483 0.001 PASSED
10.0.0.2 1753831500.120 0.002 PASSED
10.0.0.1 1753831560.483 0.001 PASSED
10.0.0.1 1753831620.600 0.001 PASSED
";

/// The same requests as an nginx combined log with `$msec $request_time` after it.
const COMBINED_LOG: &str = "\
10.0.0.1 - - [30/Jul/2025:00:04:52 +0000] \"GET / HTTP/1.1\" 200 612 \"-\" \"curl/8.5\" 1753833892.483 0.001
10.0.0.2 - - [30/Jul/2025:00:05:00 +0000] \"GET /a HTTP/1.1\" 200 612 \"-\" \"curl/8.5\" 1753833900.120 0.002
";

#[test]
#[ignore = "needs ../shared/data and redis-server"]
fn every_example_in_readme_and_docs_runs_as_shown() {
    let catalog = real_catalog("usgs_m5_2015_2025.csv");
    let kaggle = real_catalog("kaggle_significant_earthquakes_1965_2016.csv");
    let redis = RedisServer::start();
    let service = Fdsn::start(&catalog, 20_000, true);
    let ci =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/run")).unwrap();
    let env = [
        ("REDIS_URL", redis.url()),
        ("RATELIMIT_FDSN_URL", service.url.clone()),
        ("user", "ada".to_string()),
        ("client", "203.0.113.7".to_string()),
        ("api_key", "key-1".to_string()),
    ];
    let (mut failures, mut ran) = (Vec::new(), 0);
    for page in pages() {
        let name = page.file_name().unwrap().to_string_lossy().into_owned();
        let tmp = tempfile::Builder::new().prefix("ratelimit-docs-").tempdir().unwrap();
        let dir = tmp.path();
        std::fs::copy(&catalog, dir.join("quakes.csv")).unwrap();
        std::fs::write(dir.join("alerts.log"), ALERTS).unwrap();
        std::fs::write(dir.join("access.log"), ACCESS_LOG).unwrap();
        std::fs::write(dir.join("combined.log"), COMBINED_LOG).unwrap();
        std::fs::copy(&kaggle, dir.join("database.csv")).unwrap();
        // Each page starts from an empty Redis, as a reader's would.
        let _: () = redis::cmd("FLUSHALL").query(&mut redis.connection().unwrap()).unwrap();
        for block in blocks(&name, &std::fs::read_to_string(&page).unwrap()) {
            for step in steps(&block) {
                ran += 1;
                let result = match step {
                    Step::Script(script) => {
                        let (set_up, used): (Vec<&str>, Vec<&str>) =
                            script.lines().partition(|l| is_set_up(l));
                        for line in set_up {
                            let line = line.split("  #").next().unwrap().trim_end();
                            if !ci.lines().any(|l| l.trim() == line) {
                                failures
                                    .push(format!("{}: .ci/run does not run `{line}`", block.at));
                            }
                        }
                        bash(dir, &env, &used.join("\n")).map(drop)
                    }
                    Step::Shown { command, output } => bash(dir, &env, &command).and_then(|out| {
                        (out == output)
                            .then_some(())
                            .ok_or(format!("printed\n{out}\nnot\n{output}"))
                    }),
                };
                if let Err(why) = result {
                    failures.push(format!("{}: {why}", block.at));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {ran} examples fail:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    assert!(ran >= 20, "only {ran} examples found");
}

#[test]
fn a_transcript_is_split_into_commands_and_their_output() {
    let page =
        "text\n```sh\n$ ratelimit a \\\n  --b\none\ntwo\n$ ratelimit c\n```\n```\n$ not sh\n```\n";
    let found = blocks("page.md", page);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].at, "page.md:2");
    assert_eq!(
        steps(&found[0]),
        [
            Step::Shown { command: "ratelimit a \\\n  --b".into(), output: "one\ntwo\n".into() },
            Step::Shown { command: "ratelimit c".into(), output: String::new() },
        ]
    );
    let script = Block { at: "p:1".into(), lines: vec!["cargo test".into(), "ratelimit x".into()] };
    assert_eq!(steps(&script), [Step::Script("cargo test\nratelimit x".into())]);
}

/// The harness can fail: a command whose output differs from the page's, and a script
/// that fails, are both caught.
#[test]
fn an_example_that_does_not_run_as_shown_is_caught() {
    let dir = std::env::temp_dir();
    assert_eq!(bash(&dir, &[], "echo one").as_deref(), Ok("one\n"));
    assert!(bash(&dir, &[], "false | cat").is_err(), "pipefail");
    assert!(bash(&dir, &[], "ratelimit replay --no-such-flag").is_err());
}

/// Every page of `docs/` is reached from its index or from README, and every relative
/// link of README, CONTRIBUTING and `docs/` names a file that is there.
#[test]
fn every_page_is_linked_and_every_link_resolves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut linked = std::collections::BTreeSet::new();
    let mut broken = Vec::new();
    let mut read = pages();
    read.push(root.join("CONTRIBUTING.md"));
    for page in read {
        let text = std::fs::read_to_string(&page).unwrap();
        for target in text.split("](").skip(1).filter_map(|rest| rest.split(')').next()) {
            let target = target.split('#').next().unwrap();
            if target.is_empty() || target.contains("://") {
                continue;
            }
            let path = page.parent().unwrap().join(target);
            match path.canonicalize() {
                Ok(path) => {
                    linked.insert(path);
                }
                Err(_) => broken.push(format!("{}: {target}", page.display())),
            }
        }
    }
    assert!(broken.is_empty(), "links to nothing: {broken:?}");
    let unlinked: Vec<PathBuf> = (pages().into_iter().skip(1))
        .filter(|page| !linked.contains(&page.canonicalize().unwrap()))
        .collect();
    assert!(unlinked.is_empty(), "pages nothing links to: {unlinked:?}");
}

/// The packages a `pip install` line of README or `docs/` names, each as written.
fn installed_by_the_docs() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md"), root.join("python/README.md")];
    let docs = std::fs::read_dir(root.join("docs")).unwrap();
    pages.extend(
        docs.map(|entry| entry.unwrap().path()).filter(|p| p.extension() == Some("md".as_ref())),
    );
    let mut named = Vec::new();
    for page in pages {
        let text = std::fs::read_to_string(&page).unwrap();
        for (n, line) in text.lines().enumerate() {
            let Some(at) = line.find("pip install ") else { continue };
            let words = line[at + "pip install ".len()..].split_whitespace();
            // Up to a shell's `&&`, `#` or `;`, or prose's closing backtick.
            let words = words.take_while(|w| !["&&", "#", ";"].contains(w) && !w.contains('`'));
            let packages = words.filter(|w| !w.starts_with('-') && !w.contains('/'));
            let at = format!("{}:{}", page.strip_prefix(root).unwrap().display(), n + 1);
            named.extend(packages.map(|w| (at.clone(), w.trim_matches('"').to_owned())));
        }
    }
    named
}

#[test]
fn every_package_the_docs_install_is_pinned_as_ci_pins_it() {
    let ci =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/run")).unwrap();
    let pinned: std::collections::BTreeMap<&str, &str> = (ci.split('"'))
        .filter_map(|word| word.split_once("=="))
        .map(|(name, version)| (name.split('[').next().unwrap(), version))
        .collect();
    let named = installed_by_the_docs();
    assert!(named.iter().any(|(_, p)| p.starts_with("pyspark")), "{named:?}");
    for (at, package) in named {
        let (name, version) = package.split_once("==").unwrap_or_else(|| {
            panic!("{at}: {package} is not pinned (NAME==VERSION), so it resolves to whatever is newest")
        });
        let name = name.split('[').next().unwrap();
        if let Some(ci) = pinned.get(name) {
            assert_eq!(version, *ci, "{at}: {name} is {version} there and {ci} in .ci/run");
        }
    }
}
