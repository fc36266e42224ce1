//! Byte strings made rather than borrowed, one after another in one buffer.

/// Byte strings in one buffer: each one's bytes, and where each ends. A format whose fields
/// are made, not borrowed (JSON's unescaped strings, Parquet's numbers written out), writes
/// a row's or a column's here; a batch keeps its events' keys here, and the key table each
/// key's bytes.
#[derive(Clone, Default, PartialEq, Eq)]
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

    /// Adds `value` as a field of its own.
    pub(super) fn push(&mut self, value: &[u8]) {
        self.bytes.extend_from_slice(value);
        self.end();
    }

    /// Returns how many fields there are.
    pub(super) fn len(&self) -> usize {
        self.ends.len()
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
