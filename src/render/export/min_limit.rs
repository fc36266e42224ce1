//! `min-limit`'s answer as the exporters see it: one CSV row, and its table.

use std::io::{self, Write};

use super::table::labeled;
use super::{Report, Style};
use crate::engine::settled::min_limit::MinLimit;

impl Report for MinLimit {
    type Row<'a> = serde_json::Value;

    /// One row: the answer, its keys' figures flattened.
    fn rows(&self) -> Vec<serde_json::Value> {
        vec![serde_json::to_value(self).unwrap_or_default()]
    }

    fn table(&self, out: &mut dyn Write, style: Style) -> io::Result<()> {
        let limit = match (self.limit, self.per_s) {
            (Some(limit), Some(per)) => format!("{limit} a {per}, a bucket of {limit}"),
            (Some(limit), None) => format!("{limit} in flight"),
            (None, _) => "none up to the largest rate".to_owned(),
        };
        let mut lines = vec![
            ("input".to_owned(), self.input.clone()),
            ("requests".to_owned(), self.requests.to_string()),
            ("smallest limit".to_owned(), style.good(&limit)),
        ];
        if self.per_s.is_some() {
            lines.insert(2, ("charge".to_owned(), self.charge.name().to_owned()));
        }
        if let Some(keys) = &self.keys {
            lines.push(("keys".to_owned(), keys.count.to_string()));
            lines.push(("needs the most".to_owned(), keys.worst_key.clone()));
            if let Some(q) = keys.quantiles {
                let each = format!("p50 {}, p90 {}, p99 {}, max {}", q.p50, q.p90, q.p99, q.max);
                lines.push(("each key's".to_owned(), each));
            }
        }
        labeled(out, &lines, style)
    }
}
