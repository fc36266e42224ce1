//! The JSON reference: every output's fields, with their types and meanings, as Markdown
//! made from the same schemas `ratelimit schema` prints.
//!
//! A field's meaning is the `///` comment on its result type's field, which schemars
//! carries into the schema as its `description`: the page cannot say what the code does not.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde_json::{Map, Value};

use crate::report::CONTRACT;

/// One output on the page: its name, what prints it, and its schema.
pub(super) struct Described {
    pub name: String,
    pub help: String,
    pub schema: Value,
}

/// The reference page of `outputs`: a section each, then each type they use, once.
pub(super) fn page(outputs: Vec<Described>) -> String {
    let mut page = format!(
        "# The JSON reference\n\n\
         Made by `ratelimit schema --format markdown` from the JSON Schemas in \
         [schema/](schema/) (`ratelimit schema OUTPUT` prints one), which are made from the \
         result types themselves: a test fails when this page is stale. Field names are a \
         contract, of version {CONTRACT} (each schema's `$id` names it, and the changelog \
         says what each version changed). A field marked *optional* is left out when it does \
         not apply; times are RFC 3339 in UTC, to the microsecond; durations (`_s`) are \
         seconds, whole or to the microsecond. The CSV output has the same fields, one row an \
         object, nested names joined by `_`.\n",
    );
    let mut types = Types::default();
    for Described { name, help, mut schema } in outputs {
        let root = name_root(&mut schema);
        let defs = schema.get("$defs").and_then(Value::as_object).cloned().unwrap_or_default();
        let renames = types.add(&name, &defs);
        let _ = write!(page, "\n## `{name}`\n\n{help}\n");
        let shown = Shown { renames: &renames };
        match &root {
            Some(root) => {
                let _ = writeln!(page, "\nOne object, of type {}.", shown.link(root));
            }
            None => {
                let _ = writeln!(page, "\n{}.", capital(&shown.ty(&schema)));
            }
        }
    }
    page.push_str("\n## The types\n\n");
    for (name, (schema, renames)) in &types.described {
        let shown = Shown { renames };
        let _ = write!(page, "### {name}\n\n");
        if let Some(text) = description(schema) {
            let _ = writeln!(page, "{text}\n");
        }
        if let Some(variants) = schema.get("oneOf").and_then(Value::as_array) {
            for variant in variants {
                let (tag, value) = tag(variant);
                let _ = writeln!(
                    page,
                    "With `{tag}` `{value}`: {}\n",
                    description(variant).unwrap_or_default()
                );
                fields(&mut page, variant, &shown);
            }
        } else if schema.get("properties").is_some() {
            fields(&mut page, schema, &shown);
        } else {
            let _ = writeln!(page, "{}.\n", capital(&shown.ty(schema)));
        }
    }
    page
}

/// Gives an output whose root is an object a type of its own, named by its title, as its
/// nested types are, and points the references to the root (`#`) there. Returns its name.
fn name_root(schema: &mut Value) -> Option<String> {
    let object = schema.as_object_mut()?;
    if !object.contains_key("properties") {
        return None;
    }
    let title = object.get("title")?.as_str()?.to_string();
    let mut root = Map::new();
    for key in ["type", "properties", "required", "description", "unevaluatedProperties"] {
        if let Some(value) = object.remove(key) {
            root.insert(key.to_string(), value);
        }
    }
    let mut root = Value::Object(root);
    retarget(&mut root, &title);
    let defs = object.entry("$defs").or_insert_with(|| Value::Object(Map::new()));
    if let Some(defs) = defs.as_object_mut() {
        defs.values_mut().for_each(|def| retarget(def, &title));
        defs.insert(title.clone(), root);
    }
    Some(title)
}

/// Points every `{"$ref": "#"}` in `schema` at the type `title`.
fn retarget(schema: &mut Value, title: &str) {
    match schema {
        Value::Object(object) => {
            if object.get("$ref").and_then(Value::as_str) == Some("#") {
                object.insert("$ref".into(), format!("#/$defs/{title}").into());
            }
            object.values_mut().for_each(|v| retarget(v, title));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| retarget(v, title)),
        _ => {}
    }
}

/// The types described so far, by the name the page gives them: a type of the same name
/// but another shape (a generic one, as `KeyList` of reports and of needs) is named for the
/// output where it is first seen.
#[derive(Default)]
struct Types {
    described: BTreeMap<String, (Value, BTreeMap<String, String>)>,
}

impl Types {
    /// Adds an output's types; returns the names the page gives them, by schema name.
    fn add(&mut self, output: &str, defs: &Map<String, Value>) -> BTreeMap<String, String> {
        let mut renames = BTreeMap::new();
        for (name, def) in defs {
            let shown = match self.described.get(name) {
                Some((seen, _)) if seen != def => {
                    format!("{name} ({output})")
                }
                _ => name.clone(),
            };
            renames.insert(name.clone(), shown);
        }
        for (name, def) in defs {
            let shown = renames[name].clone();
            self.described.entry(shown).or_insert_with(|| (def.clone(), renames.clone()));
        }
        renames
    }
}

/// How a schema's types are written on the page.
struct Shown<'a> {
    renames: &'a BTreeMap<String, String>,
}

impl Shown<'_> {
    /// A link to a type's section.
    fn link(&self, name: &str) -> String {
        let shown = self.renames.get(name).map_or(name, String::as_str);
        format!("[{shown}](#{})", anchor(shown))
    }

    /// A schema's type, in words.
    fn ty(&self, schema: &Value) -> String {
        if let Some(target) = schema.get("$ref").and_then(Value::as_str) {
            return self.link(target.trim_start_matches("#/$defs/"));
        }
        if let Some(options) = schema.get("anyOf").and_then(Value::as_array) {
            let words: Vec<String> = options.iter().map(|o| self.ty(o)).collect();
            return words.join(" or ");
        }
        if let Some(value) = schema.get("const") {
            return format!("`{value}`");
        }
        if let Some(values) = schema.get("enum").and_then(Value::as_array) {
            let names: Vec<String> = values.iter().map(|v| format!("`{v}`")).collect();
            return format!("one of {}", names.join(", "));
        }
        let kinds: Vec<String> = match schema.get("type") {
            Some(Value::String(kind)) => vec![self.kind(kind, schema)],
            Some(Value::Array(kinds)) => {
                kinds.iter().filter_map(Value::as_str).map(|k| self.kind(k, schema)).collect()
            }
            _ => vec!["any".to_string()],
        };
        kinds.join(" or ")
    }

    fn kind(&self, kind: &str, schema: &Value) -> String {
        match (kind, schema.get("items")) {
            ("array", Some(items)) => format!("array of {}", self.ty(items)),
            ("integer", _) if schema.get("minimum").is_some() => "integer ≥ 0".to_string(),
            (kind, _) => kind.to_string(),
        }
    }
}

/// Writes an object's fields as a table.
fn fields(page: &mut String, schema: &Value, shown: &Shown) {
    let required: Vec<&str> = (schema.get("required").and_then(Value::as_array))
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    page.push_str("| field | type | meaning |\n| --- | --- | --- |\n");
    let properties = schema.get("properties").and_then(Value::as_object);
    for (name, field) in properties.into_iter().flatten() {
        let optional = if required.contains(&name.as_str()) { "" } else { ", *optional*" };
        // A variant's tag means which variant this is; every other field says what it means.
        let meaning = description(field).unwrap_or_else(|| "Which of the kinds this is.".into());
        let _ = writeln!(page, "| `{name}` | {}{optional} | {meaning} |", shown.ty(field));
    }
    page.push('\n');
}

/// A variant's tag: the field whose schema is a constant, and its value.
fn tag(variant: &Value) -> (String, String) {
    let properties = variant.get("properties").and_then(Value::as_object);
    (properties.into_iter().flatten())
        .find_map(|(name, p)| {
            p.get("const").map(|c| (name.clone(), c.as_str().unwrap_or_default().to_string()))
        })
        .unwrap_or_default()
}

/// A schema's description, on one line, its pipes escaped for a table.
fn description(schema: &Value) -> Option<String> {
    let text = schema.get("description")?.as_str()?;
    Some(text.split_whitespace().collect::<Vec<_>>().join(" ").replace('|', "\\|"))
}

/// The anchor a Markdown heading gets on GitHub: lower case, spaces as hyphens, and only
/// letters, digits, hyphens and underscores kept.
fn anchor(heading: &str) -> String {
    (heading.to_lowercase().chars())
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn capital(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}
