//! Limits per key: each value of a column gets its own limiter.

use std::collections::BTreeMap;

use crate::harness::{Stdin, json, real_catalog, run, run_with};

/// Two clients: `a` sends five at once, `b` one an hour.
pub const CLIENTS: &str = "\
time,client
2025-01-01T00:00:00Z,a
2025-01-01T00:00:00Z,b
2025-01-01T00:00:00Z,a
2025-01-01T00:00:00Z,a
2025-01-01T00:00:00Z,a
2025-01-01T00:00:00Z,a
2025-01-01T01:00:00Z,b
2025-01-01T02:00:00Z,
";

#[test]
fn each_key_has_its_own_bucket() {
    // At 1/h with a burst of 2, a passes 2 of its 5; b passes both; the empty key its one.
    let args = [
        "replay", "--algo", "gcra", "--rate", "1/h", "--burst", "2", "--key", "client", "--format",
        "json",
    ];
    let report = json(&run(&args, CLIENTS).ok());
    assert_eq!((report["events"].as_u64(), report["passed"].as_u64()), (Some(8), Some(5)));
    assert_eq!(report["keys"]["column"], "client");
    assert_eq!(report["keys"]["count"], 3);
    // The largest bucket any key needs: a's five at once.
    assert_eq!(report["worst_key"], serde_json::json!({"key": "a", "min_bucket": 5}));
    assert_eq!(report["min_bucket"], 5, "a keyed report's own is its worst key's, in its place");
    // The promise's figures are the worst key's too: a passes two at once, a bucket of 2.
    let bound = serde_json::json!({"kind": "bucket", "burst": 2, "fit": 2});
    assert_eq!(report["promise"]["bound"], bound);
    let keys: Vec<(&str, u64)> = report["keys"]["top"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| (k["key"].as_str().unwrap(), k["dropped"].as_u64().unwrap()))
        .collect();
    assert_eq!(keys, [("a", 3), ("", 0), ("b", 0)], "most dropped first, then by name");
}

#[test]
fn the_table_names_the_empty_key() {
    // The empty key and `a` each drop one, `b` none.
    let clients = "time,client\n2025-01-01T00:00:00Z,a\n2025-01-01T00:00:00Z,a\n\
                   2025-01-01T00:00:00Z,\n2025-01-01T00:10:00Z,\n2025-01-01T00:20:00Z,b\n";
    let args =
        ["replay", "--algo", "sliding-log", "--rate", "1/h", "--key", "client", "--top", "2"];
    let out = run(&args, clients).ok();
    assert!(out.contains("The top 2 of 3 keys by `client`, most dropped first:"), "{out}");
    let keys = out.split("most dropped first:\n").nth(1).unwrap();
    insta::assert_snapshot!(keys);
}

#[test]
fn the_keyed_table_lists_no_key_that_dropped_nothing() {
    // `a` drops 4 and the others none: listed alone, though --top asks for 3.
    let args =
        ["replay", "--algo", "sliding-log", "--rate", "1/h", "--key", "client", "--top", "3"];
    let out = run(&args, CLIENTS).ok();
    let heading =
        "The top 1 of 3 keys by `client`, most dropped first (the others dropped nothing):";
    let keys = out.split(&format!("{heading}\n")).nth(1).unwrap_or_else(|| panic!("{out}"));
    assert_eq!(keys.lines().count(), 2, "{out}");
    assert!(keys.lines().nth(1).unwrap().starts_with("a  "), "{out}");
    // And with none dropped, it says so rather than list any.
    let args = ["replay", "--algo", "sliding-log", "--rate", "9/h", "--key", "client"];
    let out = run(&args, CLIENTS).ok();
    assert!(out.trim_end().ends_with("No key by `client` dropped an event."), "{out}");
    let args = ["compare", "--rate", "9/h", "--key", "client"];
    let out = run(&args, CLIENTS).ok();
    assert!(out.trim_end().ends_with("No key by `client` dropped an event."), "{out}");
}

#[test]
fn emit_marks_each_row_with_its_keys_decision() {
    let args = [
        "replay", "--algo", "gcra", "--rate", "1/h", "--burst", "2", "--key", "client", "--emit",
        "all",
    ];
    let out = run(&args, CLIENTS).ok();
    let decisions: Vec<&str> = out.lines().skip(1).map(|l| l.rsplit(',').next().unwrap()).collect();
    let want = ["passed", "passed", "passed", "dropped", "dropped", "dropped", "passed", "passed"];
    assert_eq!(decisions, want);
}

#[test]
fn a_missing_key_column() {
    let err = run(&["min-bucket", "--rate", "1/h", "--key", "user"], CLIENTS).error();
    assert!(err.contains("no column named `user` (named by --key)"), "{err}");
}

#[test]
fn min_bucket_per_key_is_the_largest_any_key_needs() {
    let args = ["min-bucket", "--rate", "1/h", "--key", "client", "--format", "json"];
    let found = json(&run(&args, CLIENTS).ok());
    assert_eq!(found[0]["worst_key"]["key"], "a");
    assert_eq!(found[0]["worst_key"]["min_bucket"], 5);
    assert_eq!(found[0]["worst_key"]["span"], found[0]["keys"]["top"][0]["span"]);
    let keys: Vec<u64> = found[0]["keys"]["top"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["min_bucket"].as_u64().unwrap())
        .collect();
    assert_eq!(keys, [5, 1, 1]);
}

/// Each field of `value` by its path (`a.b`, an array's items as `a[]`), with its JSON
/// type; `null` is of every type, an optional field that does not apply.
fn shape(value: &serde_json::Value, path: &str, into: &mut BTreeMap<String, &'static str>) {
    use serde_json::Value;
    let kind = match value {
        Value::Null => return,
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(items) => {
            items.iter().for_each(|item| shape(item, &format!("{path}[]"), into));
            "array"
        }
        Value::Object(fields) => {
            fields.iter().for_each(|(name, field)| shape(field, &format!("{path}.{name}"), into));
            "object"
        }
    };
    into.insert(path.to_owned(), kind);
}

#[test]
fn a_field_keeps_its_place_when_the_limit_is_keyed() {
    // Each output, without a key and with one: the keyed form adds fields (`worst_key`,
    // `keys`) and moves none. Contract version 1 moved `min_bucket` into `worst_key`.
    const KEYED_GCRA: &str = "algo=gcra,rate=1/h,burst=2,key=client";
    let gcra = "algo=gcra,rate=1/h,burst=2";
    let commands: [(&[&str], &[&str]); 5] = [
        (&["replay", "--algo", "gcra", "--rate", "1/h", "--burst", "2"], &["--key", "client"]),
        (&["replay", "--limit", "algo=sliding-log,rate=3/d", "--limit"], &[KEYED_GCRA]),
        (&["compare", "--rate", "1/h", "--burst", "2"], &["--key", "client"]),
        (&["min-bucket", "--rate", "1/h,3/h"], &["--key", "client"]),
        (&["min-rate", "--burst", "2"], &["--key", "client"]),
    ];
    for (args, keyed) in commands {
        let alone = match args.contains(&"--limit") {
            true => [args, &[gcra, "--format", "json"]].concat(),
            false => [args, &["--format", "json"]].concat(),
        };
        let alone = json(&run(&alone, CLIENTS).ok());
        let keyed = [args, keyed, &["--format", "json"]].concat();
        let keyed = json(&run(&keyed, CLIENTS).ok());
        let (mut fields, mut keyed_fields) = (BTreeMap::new(), BTreeMap::new());
        shape(&alone, "", &mut fields);
        shape(&keyed, "", &mut keyed_fields);
        for (path, kind) in fields {
            assert_eq!(keyed_fields.get(&path), Some(&kind), "{args:?}: {path} moved with --key");
        }
    }
    // The figure in its place is the worst key's.
    let args = ["min-bucket", "--rate", "1/h", "--key", "client", "--format", "json"];
    let found = json(&run(&args, CLIENTS).ok());
    assert_eq!(found[0]["min_bucket"], found[0]["worst_key"]["min_bucket"]);
    assert_eq!(found[0]["span"], found[0]["worst_key"]["span"]);
}

/// Splits a USGS catalog's rows by the value of column `column`.
fn split_by(text: &str, column: usize) -> BTreeMap<String, String> {
    let header = text.lines().next().unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let mut parts: BTreeMap<String, String> = BTreeMap::new();
    let mut writers: BTreeMap<String, csv::Writer<Vec<u8>>> = BTreeMap::new();
    for record in reader.records() {
        let record = record.unwrap();
        let writer = writers
            .entry(record[column].to_owned())
            .or_insert_with(|| csv::Writer::from_writer(Vec::new()));
        writer.write_record(&record).unwrap();
    }
    for (key, writer) in writers {
        parts.insert(
            key,
            format!("{header}\n{}", String::from_utf8(writer.into_inner().unwrap()).unwrap()),
        );
    }
    parts
}

/// Drops the fields that name the input or the key, which differ when a key runs alone.
fn without_names(mut value: serde_json::Value) -> serde_json::Value {
    let object = value.as_object_mut().unwrap();
    object.remove("input");
    object.remove("key");
    value
}

#[test]
#[ignore = "needs ../shared/data"]
fn per_key_results_equal_each_keys_rows_alone() {
    let path = real_catalog("usgs_m4.5_2025.csv");
    let text = std::fs::read_to_string(&path).unwrap();
    let settings = ["--rate", "2/h", "--burst", "3", "--format", "json"];
    let keyed = json(
        &run_with(
            &[&["compare", path.to_str().unwrap(), "--key", "net", "--top", "0"], &settings[..]]
                .concat(),
            Stdin::Null,
        )
        .ok(),
    );
    let parts = split_by(&text, 10);
    assert!(parts.len() > 5, "{} networks", parts.len());
    for (net, rows) in &parts {
        let alone = json(&run(&[&["compare"], &settings[..]].concat(), rows).ok());
        for (lane, alone) in keyed.as_array().unwrap().iter().zip(alone.as_array().unwrap()) {
            let key = lane["keys"]["top"]
                .as_array()
                .unwrap()
                .iter()
                .find(|k| k["key"] == net.as_str())
                .unwrap();
            assert_eq!(
                without_names(key.clone()),
                without_names(alone.clone()),
                "{net}, {}",
                lane["algorithm"]
            );
        }
    }
    // min-bucket per key, likewise.
    let keyed = json(
        &run_with(
            &[
                "min-bucket",
                path.to_str().unwrap(),
                "--rate",
                "2/h",
                "--key",
                "net",
                "--top",
                "0",
                "--format",
                "json",
            ],
            Stdin::Null,
        )
        .ok(),
    );
    for (net, rows) in &parts {
        let alone = json(&run(&["min-bucket", "--rate", "2/h", "--format", "json"], rows).ok());
        let key = keyed[0]["keys"]["top"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["key"] == net.as_str())
            .unwrap();
        assert_eq!(key["min_bucket"], alone[0]["min_bucket"], "{net}");
        assert_eq!(key["span"], alone[0]["span"], "{net}");
    }
}

#[test]
fn an_empty_key_passes_uncounted_where_the_real_system_does_not_account_it() {
    // Five requests without the key, then two of key a, a second apart, at 1/m: nginx
    // ("requests with an empty key value are not accounted"), HAProxy (an empty sample
    // tracks nothing) and envoy (no descriptor without its header) pass all five, and a's
    // second is refused; an exact limiter keys the empty value as any other.
    let csv = "time,k\n2025-01-01T00:00:01Z,\n2025-01-01T00:00:02Z,\n2025-01-01T00:00:03Z,\n\
               2025-01-01T00:00:04Z,\n2025-01-01T00:00:05Z,\n2025-01-01T00:00:06Z,a\n\
               2025-01-01T00:00:07Z,a\n";
    for (algo, dropped) in [("nginx", 1), ("haproxy", 1), ("envoy-ratelimit", 1), ("gcra", 5)] {
        let args = ["replay", "--algo", algo, "--rate", "1/m", "--key", "k", "--format", "json"];
        let report = json(&run(&args, csv).ok());
        assert_eq!(
            (report["passed"].clone(), report["dropped"].clone()),
            (serde_json::json!(7 - dropped), serde_json::json!(dropped)),
            "{algo}"
        );
        // Layered beside an exact limit of all events, as all or nothing, too.
        let limit = format!("algo={algo},rate=1/m,key=k");
        let args = ["replay", "--limit", &limit, "--format", "json"];
        assert_eq!(
            json(&run(&args, csv).ok())["dropped"],
            serde_json::json!(dropped),
            "{algo} as a layer"
        );
        // Each row's decision, as --emit writes it, is the replay's.
        let emitted = run(&["replay", "--limit", &limit, "--emit", "dropped"], csv).ok();
        assert_eq!(emitted.lines().count() - 1, dropped, "{algo}: {emitted}");
    }
}

/// Five requests without the key, then two of key a, a second apart.
const FIVE_EMPTY_TWO_A: &str = "time,k\n2025-01-01T00:00:01Z,\n2025-01-01T00:00:02Z,\n\
    2025-01-01T00:00:03Z,\n2025-01-01T00:00:04Z,\n2025-01-01T00:00:05Z,\n\
    2025-01-01T00:00:06Z,a\n2025-01-01T00:00:07Z,a\n";

#[test]
fn the_report_counts_the_events_not_accounted_and_sizes_no_bucket_for_them() {
    // nginx lets the five through and needs burst=1 for a's two a second apart; the empty
    // key's five in 5 s would need a bucket of 5, and break the promise, were they counted.
    let args = ["replay", "--algo", "nginx", "--rate", "1/m", "--key", "k", "--format", "json"];
    let report = json(&run(&args, FIVE_EMPTY_TWO_A).ok());
    assert_eq!(report["not_accounted"], 5);
    assert_eq!((report["passed"].as_u64(), report["dropped"].as_u64()), (Some(6), Some(1)));
    assert_eq!(report["worst_key"], serde_json::json!({"key": "a", "min_bucket": 2}));
    // nginx's own burst is found by reading a file again.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("e.csv");
    std::fs::write(&file, FIVE_EMPTY_TWO_A).unwrap();
    let from_file = run(&[&args[..], &[file.to_str().unwrap()]].concat(), "").ok();
    assert_eq!(json(&from_file)["system_size"]["value"], 1);
    assert_eq!(report["keys"]["quantiles"]["min_bucket"]["max"], 2);
    assert_eq!(report["promise"]["held"], true, "{}", report["promise"]);
    let table = run(&args[..7], FIVE_EMPTY_TWO_A).ok();
    let line = table.lines().find(|l| l.starts_with("not accounted")).unwrap_or_default();
    assert_eq!(
        line,
        "not accounted      5 of those passed: an empty key, let through uncounted as nginx does"
    );
    // An exact limiter counts the empty key as any other: it needs 5, and says nothing.
    let gcra = ["replay", "--algo", "gcra", "--rate", "1/m", "--key", "k", "--format", "json"];
    let report = json(&run(&gcra, FIVE_EMPTY_TWO_A).ok());
    assert_eq!(report.get("not_accounted"), None);
    assert_eq!(report["worst_key"], serde_json::json!({"key": "", "min_bucket": 5}));
    // Side by side, each limiter sizes as it counts; the shared lines are the counting one's.
    let compare = ["compare", "--algo", "nginx,gcra", "--rate", "1/m", "--key", "k"];
    let table = run(&compare, FIVE_EMPTY_TWO_A).ok();
    assert!(table.contains("\nmin bucket         5 "), "{table}");
    // min-bucket --for nginx and haproxy size the keys those systems account.
    let sized =
        run(&["min-bucket", "--rate", "1/m", "--key", "k", "--for", "nginx"], FIVE_EMPTY_TWO_A);
    assert!(sized.ok().contains("burst=1 refuses none of the events, the worst key a"));
}

#[test]
fn empty_key_reads_a_value_as_the_empty_key() {
    // An access log writes an empty variable as `-`.
    let dashed = FIVE_EMPTY_TWO_A.replace(",\n", ",-\n");
    let args = ["replay", "--algo", "haproxy", "--rate", "1/m", "--key", "k", "--format", "json"];
    let counted = json(&run(&args, &dashed).ok());
    assert_eq!(
        (counted["dropped"].as_u64(), counted["not_accounted"].as_u64()),
        (Some(5), Some(0))
    );
    let read = json(&run(&[&args[..], &["--empty-key", "-"]].concat(), &dashed).ok());
    assert_eq!((read["dropped"].as_u64(), read["not_accounted"].as_u64()), (Some(1), Some(5)));
    // The value is the empty key's, named as the empty value is.
    let plain = json(&run(&args, FIVE_EMPTY_TWO_A).ok());
    assert_eq!(read, plain);
    // filter reads it so too: the five pass, and a's second is dropped.
    let filter = ["filter", "--algo", "nginx", "--rate", "1/m", "--key", "k", "--empty-key", "-"];
    let passed = run(&filter, &dashed).ok();
    assert_eq!(passed.lines().count(), 1 + 6, "{passed}");
    // Without a key there is no key value to read.
    let error =
        run(&["replay", "--algo", "nginx", "--rate", "1/m", "--empty-key", "-"], "").error();
    assert_eq!(error, "ratelimit: --empty-key reads a key's value: give --key");
}

#[test]
fn filter_without_a_key_limits_every_line_as_one_key_under_nginx() {
    // No --key: one limit for all lines, which nginx accounts (its key is never empty).
    let lines = "k,v\n,1\n,2\n,3\n";
    let passed = run(&["filter", "--algo", "nginx", "--rate", "1/m"], lines).ok();
    assert_eq!(passed, "k,v\n,1\n");
    // With --key k, each of the three has an empty key, which nginx does not account.
    let passed = run(&["filter", "--algo", "nginx", "--rate", "1/m", "--key", "k"], lines).ok();
    assert_eq!(passed, lines);
}

#[test]
fn an_empty_key_let_through_is_still_listed_and_its_events_waited_nothing() {
    // nginx at 1r/m, burst=3, delay=0: a's second request, 1 s after its first, has an
    // excess of 1000 − ⌊16·1000/1000⌋ = 984 milli-requests and waits 984·1000/16 ms =
    // 61.5 s. The five requests without a key pass at once: the mean wait over the seven
    // passed is 61.5/7 s, and every key is listed with --top 0, the empty one saying why.
    let args = ["replay", "--algo", "nginx", "--rate", "1/m", "--burst", "3", "--key", "k"];
    let report = json(
        &run(&[&args[..], &["--top", "0", "--format", "json"]].concat(), FIVE_EMPTY_TWO_A).ok(),
    );
    assert_eq!((report["delayed"].as_u64(), report["max_wait_s"].as_f64()), (Some(1), Some(61.5)));
    assert_eq!(report["mean_wait_s"].as_f64(), Some(8.785714));
    let top = report["keys"]["top"].as_array().unwrap();
    let rows: Vec<(&str, u64)> =
        top.iter().map(|r| (r["key"].as_str().unwrap(), r["events"].as_u64().unwrap())).collect();
    assert_eq!(rows, [("", 5), ("a", 2)]);
    assert_eq!((top[0]["not_accounted"].as_u64(), top[1].get("not_accounted")), (Some(5), None));
}
