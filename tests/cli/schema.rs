//! Validation against the published JSON schemas, for just the keywords schemars writes
//! there; a schema with any other keyword fails the test, so nothing passes unread.
//!
//! A general validator (the `jsonschema` crate) and its regex engines took a third of a
//! fresh `cargo test`'s build; the schemas use thirteen keywords, read here in full.

use serde_json::{Map, Value};

/// What breaks `schema` (a whole document, so that `$ref`s resolve in it) in `instance`:
/// one line per fault, each with the JSON pointer of the value at fault.
pub fn faults(schema: &Value, instance: &Value) -> Vec<String> {
    faults_at(schema, schema, instance, "")
}

fn check(root: &Value, schema: &Value, value: &Value, at: &str, faults: &mut Vec<String>) {
    let schema = match schema {
        Value::Object(schema) => schema,
        Value::Bool(true) => return,
        Value::Bool(false) => return faults.push(format!("{at}: nothing may be here")),
        other => panic!("{at}: {other} is not a schema"),
    };
    for (keyword, rule) in schema {
        match keyword.as_str() {
            // Annotations: they describe and do not constrain (in draft 2020-12, `format`
            // is an annotation too, and schemars' "uint64" names no checked format).
            "$schema" | "$id" | "$defs" | "title" | "description" | "format" => {}
            "$ref" => check(root, target(root, rule), value, at, faults),
            "type" => {
                if !names(rule).iter().any(|name| is(value, name)) {
                    faults.push(format!("{at}: {value} is not of type {rule}"));
                }
            }
            "enum" => {
                if !rule.as_array().expect("enum lists values").contains(value) {
                    faults.push(format!("{at}: {value} is none of {rule}"));
                }
            }
            "minimum" => {
                let least = rule.as_f64().expect("a minimum is a number");
                if value.as_f64().is_some_and(|n| n < least) {
                    faults.push(format!("{at}: {value} is below {rule}"));
                }
            }
            "const" => {
                if value != rule {
                    faults.push(format!("{at}: {value} is not {rule}"));
                }
            }
            "oneOf" => {
                let options = rule.as_array().expect("oneOf lists schemas");
                let matching =
                    options.iter().filter(|o| faults_at(root, o, value, at).is_empty()).count();
                if matching != 1 {
                    faults.push(format!("{at}: {value} matches {matching} of {rule}, not one"));
                }
            }
            "anyOf" => {
                // Matching none, the value is told the faults of the option it comes
                // nearest (one limit's report with a field too many, not the layers').
                let options = rule.as_array().expect("anyOf lists schemas");
                let each = options.iter().map(|option| faults_at(root, option, value, at));
                if let Some(nearest) = each.min_by_key(Vec::len).filter(|f| !f.is_empty()) {
                    faults.extend(nearest);
                }
            }
            "items" => {
                for (i, item) in value.as_array().into_iter().flatten().enumerate() {
                    check(root, rule, item, &format!("{at}/{i}"), faults);
                }
            }
            "properties" => {
                let Some(object) = value.as_object() else { continue };
                for (name, property) in rule.as_object().expect("properties are named") {
                    if let Some(field) = object.get(name) {
                        check(root, property, field, &format!("{at}/{name}"), faults);
                    }
                }
            }
            "required" => {
                let Some(object) = value.as_object() else { continue };
                for name in rule.as_array().expect("required lists names") {
                    let name = name.as_str().expect("a required name is a string");
                    if !object.contains_key(name) {
                        faults.push(format!("{at}: the field {name:?} is missing"));
                    }
                }
            }
            "unevaluatedProperties" => {
                assert_eq!(
                    rule,
                    &Value::Bool(false),
                    "{at}: unevaluatedProperties other than false"
                );
                // Beside a composition it would count the properties the composed schemas
                // evaluate too; the published schemas never have one there.
                let composed = ["$ref", "anyOf", "allOf", "oneOf"];
                assert!(!composed.iter().any(|k| schema.contains_key(*k)), "{at}: composed");
                let Some(object) = value.as_object() else { continue };
                let declared = schema.get("properties").and_then(Value::as_object);
                for name in object.keys() {
                    if !declared
                        .is_some_and(|declared: &Map<String, Value>| declared.contains_key(name))
                    {
                        faults.push(format!("{at}: the field {name:?} is not declared"));
                    }
                }
            }
            other => panic!("{at}: the schema uses `{other}`, which this check does not read"),
        }
    }
}

/// What breaks `schema`, a part of `root`, in `value`, found at `at`.
fn faults_at(root: &Value, schema: &Value, value: &Value, at: &str) -> Vec<String> {
    let mut faults = Vec::new();
    check(root, schema, value, at, &mut faults);
    faults
}

/// The schema a `$ref` names: `#` (the whole, for a report that holds reports) or
/// `#/$defs/NAME`, as schemars writes them.
fn target<'a>(root: &'a Value, reference: &Value) -> &'a Value {
    let reference = reference.as_str().expect("a $ref is a string");
    if reference == "#" {
        return root;
    }
    let name = reference.strip_prefix("#/$defs/").expect("a $ref into $defs");
    root.get("$defs").and_then(|defs| defs.get(name)).unwrap_or_else(|| panic!("no {reference}"))
}

/// The type names of a `type` keyword: one, or a list.
fn names(rule: &Value) -> Vec<&str> {
    match rule {
        Value::String(name) => vec![name],
        Value::Array(names) => names.iter().map(|n| n.as_str().expect("a type name")).collect(),
        other => panic!("{other} names no type"),
    }
}

fn is(value: &Value, name: &str) -> bool {
    match name {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "string" => value.is_string(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "number" => value.is_number(),
        "integer" => {
            value.is_u64() || value.is_i64() || value.as_f64().is_some_and(|n| n.fract() == 0.0)
        }
        other => panic!("no type is named {other:?}"),
    }
}

#[test]
fn each_keyword_the_check_reads_can_fail() {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "n": { "type": "integer", "minimum": 1 },
            "kind": { "enum": ["a", "b"] },
            "list": { "type": "array", "items": { "$ref": "#/$defs/Item" } },
            "inner": { "$ref": "#" },
            "maybe": { "anyOf": [{ "type": "string" }, { "type": "null" }] }
        },
        "required": ["n"],
        "unevaluatedProperties": false,
        "$defs": { "Item": { "type": ["integer", "null"] } }
    });
    let good = serde_json::json!({ "n": 2, "kind": "a", "list": [1, null], "maybe": null });
    assert_eq!(faults(&schema, &good), Vec::<String>::new());
    let bad = serde_json::json!({ "n": 1.5, "kind": "c", "list": ["x"], "maybe": 3, "extra": 1 });
    assert_eq!(
        faults(&schema, &bad),
        [
            "/n: 1.5 is not of type \"integer\"",
            "/kind: \"c\" is none of [\"a\",\"b\"]",
            "/list/0: \"x\" is not of type [\"integer\",\"null\"]",
            // Of the options, told the nearest's faults: the first of those with fewest.
            "/maybe: 3 is not of type \"string\"",
            ": the field \"extra\" is not declared",
        ]
    );
    assert_eq!(faults(&schema, &serde_json::json!({ "n": 0 })), ["/n: 0 is below 1"]);
    assert_eq!(faults(&schema, &serde_json::json!({})), [": the field \"n\" is missing"]);
    let nested = serde_json::json!({ "n": 1, "inner": { "n": 1, "inner": { "m": 1 } } });
    let nested = faults(&schema, &nested);
    assert_eq!(
        nested,
        [
            "/inner/inner: the field \"n\" is missing",
            "/inner/inner: the field \"m\" is not declared"
        ]
    );
}

#[test]
#[should_panic(expected = "the schema uses `pattern`, which this check does not read")]
fn a_keyword_the_check_does_not_read_fails_rather_than_passes() {
    faults(&serde_json::json!({ "pattern": "^a" }), &serde_json::json!("b"));
}
