//! A filter on a column's number: `--min-mag`, or any column at least a value.

use crate::units::decimal;

/// Keeps only the rows whose column holds a decimal number of at least a value; a row
/// where it is empty is left out, and counted apart.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnFilter {
    /// The column's name.
    pub column: String,
    /// The least value kept, in millionths, rounded down: six decimal places.
    pub at_least: i64,
    /// What asked for the filter, for messages: `--min-mag`, say.
    pub asked_by: &'static str,
}

/// What a column filter makes of a field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnTest {
    /// The row is kept.
    Keep,
    /// The row is left out: its number is too small.
    Drop,
    /// The row is left out: the field is empty, which is counted apart.
    Empty,
}

impl ColumnFilter {
    /// Tests a field's text; an error if it is not a number.
    #[inline]
    pub fn test(&self, text: &[u8]) -> Result<ColumnTest, decimal::DecimalError> {
        if text.is_empty() {
            return Ok(ColumnTest::Empty);
        }
        let value = decimal::parse_floor(text, 6)?;
        Ok(if value < self.at_least { ColumnTest::Drop } else { ColumnTest::Keep })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_numbers_of_at_least_its_value() {
        let filter =
            ColumnFilter { column: "mag".into(), at_least: 5_500_000, asked_by: "--min-mag" };
        assert_eq!(filter.test(b"5.5"), Ok(ColumnTest::Keep));
        assert_eq!(filter.test(b"5.4999999"), Ok(ColumnTest::Drop));
        assert_eq!(filter.test(b""), Ok(ColumnTest::Empty));
        assert!(filter.test(b"big").is_err());
    }
}
