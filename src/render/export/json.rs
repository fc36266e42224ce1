//! The JSON exporter: the result as it is, whose field names are a documented contract.

use std::io::{self, Write};

use serde::Serialize;

use super::{Exporter, Report};

/// Writes a result as pretty JSON.
pub struct Json;

impl Exporter for Json {
    fn export<R: Report>(&self, out: &mut dyn Write, result: &R) -> io::Result<()> {
        json(out, result)
    }
}

/// Writes a value as pretty JSON, with a final newline.
pub fn json(out: &mut dyn Write, value: &impl Serialize) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, value)?;
    writeln!(out)
}
