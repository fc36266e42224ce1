//! Reading the fields of a JSON object without copying it: members borrowed, values raw.

use std::borrow::Cow;

use serde_json::value::RawValue;

/// A JSON object read without copying: each member's name (borrowed from the text unless
/// it has escapes) and its value as written, in order. A few fields are looked up in a few
/// dozen members, so a list, searched, is quicker than a map, hashed.
struct Object<'a>(Vec<(Cow<'a, str>, &'a RawValue)>);

impl<'a> Object<'a> {
    /// Returns the value of the member `name`; the last, if the name is given twice.
    fn get(&self, name: &str) -> Option<&'a RawValue> {
        self.0.iter().rev().find(|(n, _)| n == name).map(|&(_, v)| v)
    }
}

impl<'de> serde::Deserialize<'de> for Object<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(Members)
    }
}

/// Reads an object's members into an [`Object`].
struct Members;

/// A member's name, borrowed when it can be.
#[derive(serde::Deserialize)]
struct Name<'a>(#[serde(borrow)] Cow<'a, str>);

impl<'de> serde::de::Visitor<'de> for Members {
    type Value = Object<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Object<'de>, A::Error> {
        let mut members = Vec::with_capacity(32);
        while let Some((Name(name), value)) = map.next_entry::<Name<'de>, &'de RawValue>()? {
            members.push((name, value));
        }
        Ok(Object(members))
    }
}

/// The UTF-8 byte-order mark.
pub(super) const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Returns a JSON object's fields by name or dotted path; a missing field, or `null`, is
/// empty; a string is its text; a number is as written. In a GeoJSON feature, a plain name
/// not found on the feature is looked up in its `properties`, so that `--key net` means
/// `properties.net`. Only the members on the paths asked for are read beyond their bounds.
pub(super) fn json_fields(
    text: &[u8],
    fields: &[String],
    feature: bool,
) -> Result<Vec<Vec<u8>>, String> {
    let bad = |e: serde_json::Error| {
        format!("expected a JSON object: {}", crate::message::one_line(&e.to_string()))
    };
    // A byte-order mark, as some Windows tools write before the first line, is no part of it.
    let text = text.strip_prefix(BOM).unwrap_or(text);
    if text.trim_ascii_start().first() != Some(&b'{') {
        return Err("expected a JSON object".into());
    }
    let top: Object = serde_json::from_slice(text).map_err(bad)?;
    // Objects inside, read once for every field under them.
    let mut inner: Vec<(&str, Object)> = Vec::new();
    let mut values = Vec::with_capacity(fields.len());
    for path in fields {
        let mut found = lookup(&top, path, &mut inner).map_err(bad)?;
        if feature && found.is_none() && !path.contains('.') {
            found = lookup(&top, &format!("properties.{path}"), &mut inner).map_err(bad)?;
        }
        values.push(match found.map(RawValue::get) {
            None | Some("null") => Vec::new(),
            Some(raw) if raw.starts_with('"') => {
                let text: Cow<str> = serde_json::from_str(raw).map_err(bad)?;
                text.into_owned().into_bytes()
            }
            Some(raw) => raw.as_bytes().to_vec(),
        });
    }
    Ok(values)
}

/// Follows a dotted path through objects, reading each object on the way once: the
/// objects read are kept in `inner`, found again by where their text is.
fn lookup<'a>(
    top: &Object<'a>,
    path: &str,
    inner: &mut Vec<(&'a str, Object<'a>)>,
) -> Result<Option<&'a RawValue>, serde_json::Error> {
    let mut at: Option<usize> = None;
    let mut names = path.split('.').peekable();
    while let Some(name) = names.next() {
        let object = at.map_or(top, |at| &inner[at].1);
        let Some(value) = object.get(name) else { return Ok(None) };
        if names.peek().is_none() {
            return Ok(Some(value));
        }
        let text = value.get();
        if !text.starts_with('{') {
            return Ok(None);
        }
        at = Some(match inner.iter().position(|&(seen, _)| std::ptr::eq(seen, text)) {
            Some(at) => at,
            None => {
                inner.push((text, serde_json::from_str(text)?));
                inner.len() - 1
            }
        });
    }
    Ok(None)
}
