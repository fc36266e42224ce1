//! Reading the fields of a JSON object without copying it: members on a path kept, values raw.

use std::borrow::Cow;
use std::collections::HashMap;

use serde_json::value::RawValue;

use super::values::Values;

/// A member's name, borrowed when it can be.
#[derive(serde::Deserialize, PartialEq, Eq, Hash)]
struct Name<'a>(#[serde(borrow)] Cow<'a, str>);

/// The UTF-8 byte-order mark.
pub(super) const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The fields a command asks of each JSON record, by name or dotted path, settled once as a
/// tree of member names: a record is read in one pass that keeps the members on those paths
/// and skips the rest (still checking that they are JSON), and only the objects on a path
/// are read again, inside.
///
/// A missing field, or `null`, is empty; a string is its text; a number is as written. In a
/// GeoJSON feature, a plain name not found on the feature is looked up in its `properties`,
/// so that `--key net` means `properties.net`.
pub(super) struct JsonPaths {
    root: Node,
    /// Each field's member, and for a plain name in a feature, the one in `properties`.
    fields: Vec<(usize, Option<usize>)>,
    members: usize,
}

/// Members of one object on the paths asked for.
#[derive(Default)]
struct Node(Vec<Member>);

/// A member on a path: its name, its place among all members, whether it is asked for
/// itself, and what is asked inside it.
struct Member {
    name: String,
    slot: usize,
    leaf: bool,
    inner: Node,
}

impl Node {
    /// Returns the slot of the member at `path` below this object, adding what is missing.
    fn add(&mut self, name: &str, rest: &[&str], next: &mut usize) -> usize {
        let at = match self.0.iter().position(|m| m.name == name) {
            Some(at) => at,
            None => {
                let name = name.to_owned();
                self.0.push(Member { name, slot: *next, leaf: false, inner: Node::default() });
                *next += 1;
                self.0.len() - 1
            }
        };
        match rest.split_first() {
            None => {
                self.0[at].leaf = true;
                self.0[at].slot
            }
            Some((name, rest)) => self.0[at].inner.add(name, rest, next),
        }
    }

    /// Forgets what was found below this object, for a name given again.
    fn clear(&self, found: &mut [Option<&RawValue>]) {
        for member in &self.0 {
            found[member.slot] = None;
            member.inner.clear(found);
        }
    }
}

impl JsonPaths {
    /// Settles the paths of `fields`; `feature` says the records are GeoJSON features.
    pub(super) fn new(fields: &[String], feature: bool) -> JsonPaths {
        let (mut root, mut members) = (Node::default(), 0);
        let fields = fields
            .iter()
            .map(|path| {
                let names: Vec<&str> = path.split('.').collect();
                let slot = root.add(names[0], &names[1..], &mut members);
                let inside = (feature && names.len() == 1)
                    .then(|| root.add("properties", &names[..1], &mut members));
                (slot, inside)
            })
            .collect();
        JsonPaths { root, fields, members }
    }

    /// Reads the fields of the JSON object `text` into `values`, in the order asked.
    pub(super) fn read(&self, text: &[u8], values: &mut Values) -> Result<(), String> {
        // A byte-order mark, as some Windows tools write before the first line, is no part of it.
        let text = text.strip_prefix(BOM).unwrap_or(text);
        if text.trim_ascii_start().first() != Some(&b'{') {
            return Err("expected a JSON object".into());
        }
        self.read_object(text, values).map_err(|why| {
            // What is wrong, in the words of reading every member, unless it is a value's.
            let why = why.unwrap_or_else(|| {
                let all = serde_json::from_slice::<HashMap<Name, &RawValue>>(text);
                all.err().map_or_else(|| "not read".to_owned(), |e| e.to_string())
            });
            format!("expected a JSON object: {}", crate::message::one_line(&why))
        })
    }

    /// Reads the object as [`JsonPaths::read`] does; `Err` if it is not JSON, with what is
    /// wrong if it is a value asked for.
    fn read_object(&self, text: &[u8], values: &mut Values) -> Result<(), Option<String>> {
        // Checked whole first: skipped strings are not checked by the parser.
        let text = std::str::from_utf8(text).map_err(|_| None)?;
        let mut found: Vec<Option<&RawValue>> = vec![None; self.members];
        visit(&self.root, text, &mut found).map_err(|_| None)?;
        values.clear();
        for &(slot, inside) in &self.fields {
            let value = found[slot].or_else(|| inside.and_then(|inside| found[inside]));
            match value.map(RawValue::get) {
                None | Some("null") => {}
                Some(raw) if raw.starts_with('"') => {
                    let text: Cow<str> =
                        serde_json::from_str(raw).map_err(|e| Some(e.to_string()))?;
                    values.text().extend_from_slice(text.as_bytes());
                }
                Some(raw) => values.text().extend_from_slice(raw.as_bytes()),
            }
            values.end();
        }
        Ok(())
    }
}

/// Reads the object `text` for the members of `node` into `found`, then the objects inside
/// them that paths go on into.
fn visit<'a>(
    node: &Node,
    text: &'a str,
    found: &mut [Option<&'a RawValue>],
) -> Result<(), serde_json::Error> {
    let mut reader = serde_json::Deserializer::from_str(text);
    serde::de::DeserializeSeed::deserialize(Wanted { node, found: &mut *found }, &mut reader)?;
    reader.end()?;
    // A member asked for itself and inside was kept as written: read inside it now.
    for member in node.0.iter().filter(|m| m.leaf && !m.inner.0.is_empty()) {
        // A path through something not an object finds nothing.
        if let Some(value) = found[member.slot]
            && value.get().starts_with('{')
        {
            visit(&member.inner, value.get(), found)?;
        }
    }
    Ok(())
}

/// The members of one object asked for: kept as written, the last if a name is given twice.
struct Wanted<'n, 's, 'a> {
    node: &'n Node,
    found: &'s mut [Option<&'a RawValue>],
}

impl<'de> serde::de::DeserializeSeed<'de> for Wanted<'_, '_, 'de> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Wanted<'_, '_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(Name(name)) = map.next_key::<Name<'de>>()? {
            match self.node.0.iter().find(|m| m.name == name) {
                Some(member) if member.leaf || member.inner.0.is_empty() => {
                    self.found[member.slot] = Some(map.next_value()?);
                }
                // Only inside it: read there now, not kept and read again.
                Some(member) => {
                    member.inner.clear(self.found);
                    let node = &member.inner;
                    map.next_value_seed(Inside(Wanted { node, found: &mut *self.found }))?;
                }
                None => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// A value that paths go on into: its members asked for if it is an object; nothing in
/// anything else.
struct Inside<'n, 's, 'a>(Wanted<'n, 's, 'a>);

impl<'de> serde::de::DeserializeSeed<'de> for Inside<'_, '_, 'de> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Inside<'_, '_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        self.0.visit_map(map)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str, fields: &[&str], feature: bool) -> Result<Vec<String>, String> {
        let fields: Vec<String> = fields.iter().map(|&f| f.to_owned()).collect();
        let mut values = Values::default();
        JsonPaths::new(&fields, feature).read(text.as_bytes(), &mut values)?;
        Ok(values.iter().map(|v| String::from_utf8(v.to_vec()).unwrap()).collect())
    }

    #[test]
    fn a_name_given_twice_is_read_from_its_last_object() {
        // The second `p` has no `b`: what the first said of `b` is not kept.
        let text = r#"{"p": {"a": 1, "b": 2}, "x": [{"p": 9}], "p": {"a": "\u00e9"}}"#;
        assert_eq!(read(text, &["p.a", "p.b"], false).unwrap(), ["é", ""]);
        // A path through a number, an array or null finds nothing.
        let text = r#"{"p": 5, "q": [1], "r": null}"#;
        assert_eq!(read(text, &["p.a", "q.a", "r.a", "r"], false).unwrap(), ["", "", "", ""]);
    }

    #[test]
    fn an_object_asked_for_itself_and_inside() {
        let text = r#"{"p": {"a": {"b": true}}, "a": 1}"#;
        let found = read(text, &["p", "p.a.b", "a"], false).unwrap();
        assert_eq!(found, [r#"{"a": {"b": true}}"#, "true", "1"]);
        // In a feature, a plain name not on it is one of its properties.
        let text = r#"{"id": "x", "properties": {"net": "us", "id": "y"}}"#;
        assert_eq!(read(text, &["net", "id", "properties.id"], true).unwrap(), ["us", "x", "y"]);
    }

    #[test]
    fn a_value_asked_for_that_cannot_be_unescaped_says_why() {
        let error = read(r#"{"a": "\ud800", "b": 1}"#, &["a"], false).unwrap_err();
        assert!(
            error.starts_with("expected a JSON object: unexpected end of hex escape"),
            "{error}"
        );
    }

    #[test]
    fn what_is_skipped_is_still_checked() {
        for bad in [r#"{"a": 1, "b": [1, }"#, "{\"a\": 1, \"b\": \"\u{1}\"}", r#"{"a": 1} x"#] {
            let error = read(bad, &["a"], false).unwrap_err();
            assert!(error.starts_with("expected a JSON object: "), "{bad}: {error}");
        }
        let error = read("{\"a\": 1, \"b\": \"\\u12\"}", &["a"], false).unwrap_err();
        assert_eq!(error, "expected a JSON object: invalid escape at line 1 column 21");
        let mut latin = b"{\"a\": 1, \"b\": \"".to_vec();
        latin.extend_from_slice(b"\xe9\"}");
        let fields = ["a".to_owned()];
        let error = JsonPaths::new(&fields, false).read(&latin, &mut Values::default());
        assert!(error.unwrap_err().contains("invalid unicode code point"));
    }
}
