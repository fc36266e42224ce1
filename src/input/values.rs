//! The fields of a row, or of a column's rows, made rather than borrowed: one buffer.

/// The fields of one row, or one column's rows, in one buffer: each field's bytes, and
/// where each ends. A format whose fields are made, not borrowed (JSON's unescaped strings,
/// Parquet's numbers written out), writes them here.
#[derive(Default)]
pub(super) struct Values {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl Values {
    pub(super) fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    /// Returns the buffer the field being written goes on at the end of.
    pub(super) fn text(&mut self) -> &mut Vec<u8> {
        &mut self.bytes
    }

    /// Ends the field being written.
    pub(super) fn end(&mut self) {
        self.ends.push(self.bytes.len());
    }

    /// Returns field `index`, or nothing past the last.
    pub(super) fn get(&self, index: usize) -> &[u8] {
        let Some(&end) = self.ends.get(index) else { return &[] };
        let start = index.checked_sub(1).map_or(0, |before| self.ends[before]);
        &self.bytes[start..end]
    }

    /// Returns each field in order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &[u8]> {
        (0..self.ends.len()).map(|index| self.get(index))
    }
}
