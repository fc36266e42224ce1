//! The CSV exporter: a result's rows, flattened from their JSON.

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
pub fn csv<T: Serialize>(out: &mut dyn Write, values: &[T]) -> io::Result<()> {
    let rows: Vec<Vec<(String, String)>> = values
        .iter()
        .map(|v| {
            let mut cells = Vec::new();
            flatten("", &serde_json::to_value(v).map_err(io::Error::other)?, &mut cells);
            Ok(cells)
        })
        .collect::<io::Result<_>>()?;
    let mut columns: Vec<&str> = Vec::new();
    for (name, _) in rows.iter().flatten() {
        if !columns.contains(&name.as_str()) {
            columns.push(name);
        }
    }
    let mut writer = ::csv::Writer::from_writer(out);
    writer.write_record(&columns)?;
    for row in &rows {
        let cell = |c: &&str| row.iter().find(|(n, _)| n == c).map_or("", |(_, v)| v.as_str());
        writer.write_record(columns.iter().map(cell))?;
    }
    writer.flush()
}

fn flatten(prefix: &str, value: &Value, cells: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                let name = if prefix.is_empty() { key.clone() } else { format!("{prefix}_{key}") };
                flatten(&name, value, cells);
            }
        }
        Value::Null => cells.push((prefix.to_owned(), String::new())),
        Value::String(s) => cells.push((prefix.to_owned(), s.clone())),
        other => cells.push((prefix.to_owned(), other.to_string())),
    }
}
