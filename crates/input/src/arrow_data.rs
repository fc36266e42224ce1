//! A table held in memory: Arrow record batches of one schema, as a binding hands them over.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use super::keys::wide;

/// Record batches of one schema, in row order: a table held in memory. Cloning it shares
/// the batches.
#[derive(Clone, Debug)]
pub struct ArrowData {
    name: String,
    pub(super) schema: SchemaRef,
    pub(super) batches: Arc<[RecordBatch]>,
}

impl ArrowData {
    /// Returns the table of `batches`, all of `schema`, named `name` in reports and
    /// messages.
    pub fn new(name: impl Into<String>, schema: SchemaRef, batches: Vec<RecordBatch>) -> ArrowData {
        ArrowData { name: name.into(), schema, batches: batches.into() }
    }

    /// Returns the name reports and messages give it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Returns the number of rows.
    pub fn rows(&self) -> u64 {
        self.batches.iter().map(|b| wide(b.num_rows())).sum()
    }
}
