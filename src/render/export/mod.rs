//! Writing a command's result: one exporter per format, each in its own file, as
//! hyperfine's exporters are. A new format is one more file implementing [`Exporter`].

mod csv;
mod json;
mod layered;
mod min_limit;
mod presets;
mod rates;
mod recommend;
mod results;
mod settled;
mod side_by_side;
mod table;

use std::io::{self, Write};

use serde::Serialize;

use crate::policy_report::PolicyReport;

pub use self::csv::Csv;
pub use self::json::Json;
pub use self::presets::PresetList;
pub use self::rates::{Per, PerUnit};
pub use self::results::Compared;
pub use self::table::{Style, Table};

/// The formats a result can be written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned text for people.
    Table,
    /// JSON, whose field names are a stable contract.
    Json,
    /// CSV with a header row; nested fields are joined with `_`.
    Csv,
}

/// A command's result as every exporter sees it: its JSON (the contract), the rows of its
/// CSV, and its table, which is only a view of it.
pub trait Report: Serialize {
    /// One row of the CSV, which may borrow from the result.
    type Row<'a>: Serialize
    where
        Self: 'a;

    /// Returns the CSV's rows.
    fn rows(&self) -> Vec<Self::Row<'_>>;

    /// Writes the table, colored as `style` allows.
    fn table(&self, out: &mut dyn Write, style: Style) -> io::Result<()>;
}

/// One limit's report or the layers': the variant's rows (each the variant's own row) and
/// table, as its JSON is the variant's.
impl<One: Report, Layers: Report> Report for PolicyReport<One, Layers> {
    type Row<'a>
        = PolicyReport<One::Row<'a>, Layers::Row<'a>>
    where
        Self: 'a;

    fn rows(&self) -> Vec<Self::Row<'_>> {
        match self {
            PolicyReport::One(one) => one.rows().into_iter().map(PolicyReport::One).collect(),
            PolicyReport::Layers(layers) => {
                layers.rows().into_iter().map(PolicyReport::Layers).collect()
            }
        }
    }

    fn table(&self, out: &mut dyn Write, style: Style) -> io::Result<()> {
        match self {
            PolicyReport::One(one) => one.table(out, style),
            PolicyReport::Layers(layers) => layers.table(out, style),
        }
    }
}

/// One way to write a result.
pub trait Exporter {
    /// Writes `result` to `out`.
    fn export<R: Report>(&self, out: &mut dyn Write, result: &R) -> io::Result<()>;
}

/// Writes `result` in `format`; a table is styled with `style`.
pub fn write<R: Report>(
    out: &mut dyn Write,
    format: Format,
    style: Style,
    result: &R,
) -> io::Result<()> {
    match format {
        Format::Table => Table(style).export(out, result),
        Format::Json => Json.export(out, result),
        Format::Csv => Csv.export(out, result),
    }
}
