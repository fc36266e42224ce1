//! The CSV exporter: a result's rows, flattened from their JSON.

use std::collections::HashMap;
use std::io::{self, Write};

use serde::Serialize;
use serde_json::Value;

use super::{Exporter, Report};

/// Writes a result's rows as CSV.
pub struct Csv;

impl Exporter for Csv {
    fn export<R: Report>(&self, out: &mut dyn Write, result: &R) -> io::Result<()> {
        csv(out, &result.rows())
    }
}

/// Writes values as CSV: one row each, with a header. Nested objects become columns named
/// by their path joined with `_` (`busiest_window_count`); a null is an empty cell, and a
/// field some values lack is empty in their rows.
///
/// Two passes over the values: the first names the columns, in the order they are first
/// met; the second writes each row, cell by cell, so that no more than one row's cells are
/// held at once (a million rows of `min-bucket --key` once took 3.2 GB here).
pub fn csv<T: Serialize>(out: &mut dyn Write, values: &[T]) -> io::Result<()> {
    let json = |v: &T| serde_json::to_value(v).map_err(io::Error::other);
    let mut columns: Vec<String> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for value in values {
        walk("", &json(value)?, &mut |name, _| {
            if !index.contains_key(name) {
                index.insert(name.to_owned(), columns.len());
                columns.push(name.to_owned());
            }
        });
    }
    let mut writer = ::csv::Writer::from_writer(out);
    // No rows, no columns: nothing to write (an empty record would be a line of `""`).
    if !columns.is_empty() {
        writer.write_record(&columns)?;
    }
    let mut cells = vec![String::new(); columns.len()];
    for value in values {
        cells.iter_mut().for_each(String::clear);
        walk("", &json(value)?, &mut |name, cell| {
            let at = index[name];
            match cell {
                Value::String(text) => cells[at].push_str(text),
                Value::Null => {}
                other => cells[at].push_str(&other.to_string()),
            }
        });
        writer.write_record(&cells)?;
    }
    writer.flush()
}

/// Calls `visit` with each leaf of `value` and its name: the path of object keys to it,
/// joined with `_`.
fn walk(prefix: &str, value: &Value, visit: &mut impl FnMut(&str, &Value)) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                let name = if prefix.is_empty() { key.clone() } else { format!("{prefix}_{key}") };
                // The promise's figures, whose fields differ from limiter to limiter, are the
                // JSON's alone: a CSV's columns stay those of every row.
                if name == "promise_bound" {
                    continue;
                }
                walk(&name, value, visit);
            }
        }
        leaf => visit(prefix, leaf),
    }
}
