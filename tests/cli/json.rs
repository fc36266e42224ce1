//! The JSON contract: one snapshot per command that prints JSON, on the small inline
//! catalogs, keyed where the command takes keys, so that a change of a field's name or
//! place shows as a diff here and in README's "JSON fields".

use crate::harness::{json, run};
use crate::keys::CLIENTS;
use crate::{QUAKES, brute};

const HOUR: i64 = 3_600_000;

/// Checks each piece of a curve against the definition: its `min_bucket` is the smallest
/// lossless bucket at its first rate (whole thousandths of an event an hour here).
pub fn assert_curve(pieces: &serde_json::Value) {
    let times = brute::times(QUAKES);
    for piece in pieces.as_array().unwrap() {
        // The inline catalog's rates are whole thousandths an hour (0, 0.75 and 6): far
        // inside an i64.
        #[allow(clippy::cast_possible_truncation)]
        let per_thousand_hours = (piece["from_per_hour"].as_f64().unwrap() * 1000.0).round() as i64;
        let need = brute::min_bucket(&times, per_thousand_hours, 1000 * HOUR);
        assert_eq!(piece["min_bucket"], need, "{piece}");
    }
}

#[test]
fn replay_json_by_key() {
    let args = ["replay", "--algo", "gcra", "--rate", "1/h", "--burst", "2", "--key", "client"];
    let out = run(&[&args[..], &["--format", "json"]].concat(), CLIENTS).ok();
    // Each key its own GCRA, by the definition.
    let keys = brute::by_key(&brute::rows(CLIENTS, "client"));
    let passed: usize = keys.values().map(|t| brute::passed(&brute::gcra(t, 1, HOUR, 2).0)).sum();
    assert_eq!(json(&out)["passed"], passed);
    insta::assert_snapshot!(out);
}

#[test]
fn compare_json_by_key() {
    let args = ["compare", "--rate", "1/h", "--burst", "2", "--key", "client", "--top", "2"];
    let args = [&args[..], &["--algo", "sliding-log,leaky-queue", "--format", "json"]].concat();
    let out = run(&args, CLIENTS).ok();
    // Each key its own sliding log and its own queue (which admits what GCRA passes).
    let keys = brute::by_key(&brute::rows(CLIENTS, "client"));
    let log: usize = keys.values().map(|t| brute::sliding_log(t, 1, HOUR).len()).sum();
    let queue: usize = keys.values().map(|t| brute::passed(&brute::gcra(t, 1, HOUR, 2).0)).sum();
    let reports = json(&out);
    assert_eq!(
        (reports[0]["passed"].clone(), reports[1]["passed"].clone()),
        (log.into(), queue.into())
    );
    insta::assert_snapshot!(out);
}

#[test]
fn min_bucket_json_by_key_with_a_cover() {
    let args = ["min-bucket", "--rate", "1/h,4/h", "--key", "client", "--cover", "50%"];
    let out = run(&[&args[..], &["--format", "json"]].concat(), CLIENTS).ok();
    // Each key's need by the definition; the worst and the cover of half the keys.
    let keys = brute::by_key(&brute::rows(CLIENTS, "client"));
    let needs: Vec<i64> = keys.values().map(|t| brute::min_bucket(t, 1, HOUR)).collect();
    let events: Vec<i64> = keys.values().map(|t| i64::try_from(t.len()).unwrap()).collect();
    let found = &json(&out)[0];
    assert_eq!(found["worst_key"]["min_bucket"], *needs.iter().max().unwrap());
    crate::real_data::assert_cover(found, &needs, &events, 500);
    insta::assert_snapshot!(out);
}

#[test]
fn min_bucket_curve_json() {
    let out = run(&["min-bucket", "--curve", "--format", "json"], QUAKES).ok();
    assert_curve(&json(&out));
    insta::assert_snapshot!(out);
}

#[test]
fn weighted_replay_json() {
    // Each event costs its depth: units beside events, and the events past the burst.
    let args = ["replay", "--algo", "gcra", "--rate", "30/h", "--burst", "25", "--cost", "depth"];
    let out = run(&[&args[..], &["--format", "json"]].concat(), QUAKES).ok();
    // By hand, I = 2 min: depths 30, 30 (00:30) and 35 (01:10) are past the burst of 25;
    // 15 at 00:40 passes (tat 01:10); 22 at 00:50 would wait 64 min > 50; 10 at 01:00
    // waits 10 + 20 = 30 min (passes); 20 at 02:30 passes: 45 of 162 units.
    let report = json(&out);
    assert_eq!(
        (report["passed"].as_u64(), report["units"]["passed"].as_u64()),
        (Some(3), Some(45))
    );
    assert_eq!(
        (report["too_big"]["events"].as_u64(), report["units"]["events"].as_u64()),
        (Some(3), Some(162))
    );
    insta::assert_snapshot!(out);
}

#[test]
fn layered_replay_json() {
    // Two layers: two events an hour per network, and 60 units of depth an hour over all.
    let args = [
        "replay",
        "--limit",
        "algo=gcra,rate=2/h,key=net",
        "--limit",
        "algo=token-bucket,rate=60/h,cost=depth",
        "--format",
        "json",
    ];
    let out = run(&args, QUAKES).ok();
    // By hand: 00:30 (30) and 00:30 (30) pass both; 00:40 (15) and 00:50 (22) find the
    // network's GCRA and the bucket (10 and 20 units back) short; 01:00 (10) passes; 01:10
    // (35) finds both short again; 02:30 (20) passes. GCRA refuses 3, never alone.
    let report = json(&out);
    assert_eq!(report["passed"].as_u64(), Some(4));
    let layers = report["layers"].as_array().unwrap();
    assert_eq!((layers[0]["refused"].as_u64(), layers[0]["only"].as_u64()), (Some(3), Some(0)));
    assert_eq!(layers[1]["refused"].as_u64(), Some(3));
    // Alone, the network's GCRA decides every event by its definition.
    let (alone, _) = brute::gcra(&brute::times(QUAKES), 2, HOUR, 2);
    assert_eq!(layers[0]["alone"], alone.iter().filter(|&&p| !p).count());
    insta::assert_snapshot!(out);
}

#[test]
fn min_rate_json() {
    let out = run(&["min-rate", "--burst", "1,3", "--format", "json"], QUAKES).ok();
    // By the definition: no rate for a burst of 1 (two events at 00:30); for 3, the most
    // any stretch of more than 3 events asks.
    let times = brute::times(QUAKES);
    let found = json(&out);
    assert_eq!(brute::min_rate_per_hour(&times, 1), None);
    assert!(found[0]["rate"].is_null());
    let per_hour = found[1]["per_hour"].as_f64().unwrap();
    assert!((per_hour - brute::min_rate_per_hour(&times, 3).unwrap()).abs() < 1e-3, "{per_hour}");
    insta::assert_snapshot!(out);
}

/// The published schema of an output, as `ratelimit schema` prints it.
fn schema(output: &str) -> serde_json::Value {
    let path = format!("{}/docs/schema/{output}.json", env!("CARGO_MANIFEST_DIR"));
    let published = std::fs::read_to_string(&path).unwrap();
    let printed = run(&["schema", output], "").ok();
    assert_eq!(printed, published, "{path} is not what `ratelimit schema {output}` prints");
    json(&printed)
}

/// `layered` and `layered-check`, the names of the layers' schemas before one limit and
/// layers shared one, still print that one.
#[test]
fn the_layered_schema_names_print_the_one_schema() {
    for (old, one) in [("layered", "replay"), ("layered-check", "check")] {
        assert_eq!(run(&["schema", old], "").ok(), run(&["schema", one], "").ok(), "{old}");
    }
}

/// Each schema names the contract's version, which the reference page states: version 2
/// kept a keyed result's `min_bucket` in place.
#[test]
fn each_schema_names_the_contracts_version() {
    for output in ["replay", "min-bucket", "recommend"] {
        assert_eq!(schema(output)["$id"], format!("urn:ratelimit:json:v2:{output}"));
    }
    let page = run(&["schema", "--format", "markdown"], "").ok();
    assert!(page.contains("Field names are a contract, of version 2"), "{page}");
}

/// Checks that `instance` is valid under the published schema of `output`.
pub fn assert_valid(output: &str, instance: &serde_json::Value, what: &str) {
    let faults = crate::schema::faults(&schema(output), instance);
    assert!(faults.is_empty(), "{what} breaks the {output} schema: {faults:?}");
}

/// Every command's JSON, keyed and not, on a fleet, with a queue and a cover, is what its
/// published schema says: no field missing, none of another type, none undeclared.
#[test]
fn every_json_output_keeps_its_published_schema() {
    let quakes = |args: &[&str]| json(&run(&[args, &["--format", "json"]].concat(), QUAKES).ok());
    let clients = |args: &[&str]| json(&run(&[args, &["--format", "json"]].concat(), CLIENTS).ok());
    let replay = ["replay", "--algo", "gcra", "--rate", "1/h", "--burst", "2"];
    assert_valid("replay", &quakes(&replay), "replay");
    assert_valid("replay", &clients(&[&replay[..], &["--key", "client"]].concat()), "replay --key");
    let queue = ["replay", "--algo", "leaky-queue", "--rate", "2/h", "--burst", "2"];
    assert_valid("replay", &quakes(&queue), "a leaky queue's replay");
    let fleet = ["--servers", "2", "--share", "synced", "--sync", "1m"];
    assert_valid("replay", &quakes(&[&replay[..], &fleet].concat()), "replay --servers");
    let weighted = ["--cost", "depth", "--burst", "25"];
    let weighted = [&replay[..5], &weighted].concat();
    assert_valid("replay", &quakes(&weighted), "replay --cost, with events too big");
    let layered = [
        "replay",
        "--limit",
        "algo=gcra,rate=2/h,burst=2,key=net",
        "--limit",
        "algo=leaky-queue,rate=30/h,burst=40,cost=depth",
        "--limit",
        "algo=sliding-log,rate=3/h",
    ];
    assert_valid("replay", &quakes(&layered), "three layers, keyed and weighted");
    let needs = [&["min-bucket"], &layered[1..]].concat();
    assert_valid("layer-needs", &quakes(&needs), "min-bucket of three layers");
    let configurations = [
        "compare",
        "--limit",
        "algo=gcra,rate=2/h,burst=2,key=net",
        "--limit",
        "algo=nginx,rate=3r/m,burst=1,key=net",
    ];
    assert_valid("configurations", &quakes(&configurations), "two configurations, keyed");
    let by_key = [&configurations[..], &["--by-key"]].concat();
    assert_valid("by-key", &quakes(&by_key), "two configurations, key by key");
    let compare = ["compare", "--rate", "1/h", "--burst", "2"];
    assert_valid("compare", &quakes(&compare), "compare");
    let by_net = ["--cost", "depth", "--key", "net"];
    assert_valid("compare", &quakes(&[&compare[..], &by_net].concat()), "weighted, keyed");
    assert_valid("compare", &clients(&[&compare[..], &["--key", "client"]].concat()), "keyed");
    let min_bucket = ["min-bucket", "--rate", "1/h,4/h"];
    assert_valid("min-bucket", &quakes(&min_bucket), "min-bucket");
    let cover = ["--key", "client", "--cover", "50%", "--top", "1"];
    assert_valid("min-bucket", &clients(&[&min_bucket[..], &cover].concat()), "with a cover");
    assert_valid("curve", &quakes(&["min-bucket", "--curve"]), "min-bucket --curve");
    assert_valid("min-rate", &quakes(&["min-rate", "--burst", "1,3"]), "min-rate");
    let keyed_rate = ["min-rate", "--burst", "1,3", "--key", "client"];
    assert_valid("min-rate", &clients(&keyed_rate), "min-rate by key");
    // check needs Redis: `check_answers_with_its_exit_code` checks its output.
}

/// A field an output gains that its schema does not declare is caught: the test above
/// can fail.
#[test]
fn a_field_the_schema_does_not_declare_breaks_it() {
    let mut report =
        json(&run(&["replay", "--algo", "gcra", "--rate", "1/h", "--format", "json"], QUAKES).ok());
    assert_valid("replay", &report, "replay");
    report.as_object_mut().unwrap().insert("surprise".into(), 1.into());
    let schema = schema("replay");
    let faults = crate::schema::faults(&schema, &report);
    assert_eq!(faults, [": the field \"surprise\" is not declared"]);
    report.as_object_mut().unwrap().remove("surprise");
    report.as_object_mut().unwrap().remove("passed");
    assert_eq!(crate::schema::faults(&schema, &report), [": the field \"passed\" is missing"]);
    report["events"] = "many".into();
    let faults = crate::schema::faults(&schema, &report);
    assert_eq!(faults[0], "/events: \"many\" is not of type \"integer\"");
}

#[test]
fn the_limiter_reference_is_what_ratelimit_limiters_writes() {
    let path = format!("{}/docs/limiters.md", env!("CARGO_MANIFEST_DIR"));
    let published = std::fs::read_to_string(&path).unwrap();
    let printed = run(&["limiters", "--format", "markdown"], "").ok();
    assert_eq!(
        printed, published,
        "{path} is stale: ratelimit limiters --format markdown > docs/limiters.md"
    );
    // Every limiter of the list is on the page, and so is each one's own parameter.
    let text = run(&["limiters"], "").ok();
    let listed = text.lines().filter(|l| !l.starts_with(' ') && !l.is_empty()).count();
    assert_eq!(listed, 24);
    assert!(printed.contains(
        "| `nginx` | nginx 1.22.1, limit_req | its own, default 0 | `delay, nodelay, dry-run, zone` |"
    ));
}

#[test]
fn the_promise_gives_its_figures_as_fields() {
    // A token bucket's promise: its burst, and the smallest bucket the passed events fit,
    // which min-bucket finds again from the passed rows themselves.
    let args = ["replay", "--algo", "gcra", "--rate", "2/h", "--burst", "3"];
    let report = json(&run(&[&args[..], &["--format", "json"]].concat(), QUAKES).ok());
    let bound = &report["promise"]["bound"];
    assert_eq!((bound["kind"].as_str(), bound["burst"].as_u64()), (Some("bucket"), Some(3)));
    let passed = run(&[&args[..], &["--emit", "passed", "-q"]].concat(), QUAKES).ok();
    let need = json(&run(&["min-bucket", "--rate", "2/h", "--format", "json"], &passed).ok());
    assert_eq!(bound["fit"], need[0]["min_bucket"]);
    assert!(bound["fit"].as_u64().unwrap() <= 3, "held: {bound}");
    // A sliding log's: at most N in any period, and the most the passed events put in one.
    let args = ["replay", "--algo", "sliding-log", "--rate", "2/h", "--format", "json"];
    let report = json(&run(&args, QUAKES).ok());
    let bound = &report["promise"]["bound"];
    assert_eq!((bound["kind"].as_str(), bound["most"].as_u64()), (Some("period"), Some(2)));
    assert_eq!(bound["period_s"].as_f64(), Some(3600.0));
    assert_eq!(bound["seen"], report["busiest_window"]["count"]);
}

#[test]
fn the_json_reference_is_what_ratelimit_schema_writes_and_every_field_has_a_meaning() {
    let path = format!("{}/docs/json.md", env!("CARGO_MANIFEST_DIR"));
    let published = std::fs::read_to_string(&path).unwrap();
    let printed = run(&["schema", "--format", "markdown"], "").ok();
    assert_eq!(
        printed, published,
        "{path} is stale: ratelimit schema --format markdown > docs/json.md"
    );
    // Every field says what it means: a field of any object in any output's schema has a
    // description, but a variant's tag, whose meaning is its variant's.
    fn undescribed(schema: &serde_json::Value, at: &str, found: &mut Vec<String>) {
        match schema {
            serde_json::Value::Object(object) => {
                let fields = object.get("properties").and_then(|p| p.as_object());
                for (name, field) in fields.into_iter().flatten() {
                    if field.get("description").is_none() && field.get("const").is_none() {
                        found.push(format!("{at}.{name}"));
                    }
                }
                for (key, value) in object {
                    undescribed(value, &format!("{at}/{key}"), found);
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| undescribed(v, at, found)),
            _ => {}
        }
    }
    let outputs = ["replay", "compare", "min-bucket", "layer-needs", "curve", "min-rate", "check"];
    let mut found = Vec::new();
    for output in outputs {
        undescribed(&schema(output), output, &mut found);
    }
    assert!(found.is_empty(), "fields without a meaning: {found:?}");
    assert!(printed.contains("| `passed` | integer ≥ 0 | The events the limiter passed"));
}
