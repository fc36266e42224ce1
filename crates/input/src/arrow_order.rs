//! A table's rows in the order of some of its columns: found by a stable sort, or checked.
//!
//! An engine that hands over a key's rows unsorted (Spark 4.0's `applyInArrow`) has them
//! sorted here; one that sorts them itself (`sortWithinPartitions`) has its order checked,
//! so that a broken order is an error and never a wrong answer.

use std::cmp::Ordering;

use arrow_array::{Array, ArrayRef, new_empty_array};
use arrow_ord::sort::{LexicographicalComparator, SortColumn, SortOptions};

use super::arrow_data::ArrowData;
use super::error::{ReadError, layout};

impl ArrowData {
    /// Returns the row numbers in ascending order of `columns` (by the first, then the
    /// next on a tie, and so on; nulls first, as Spark's ascending sort has them), rows
    /// alike in every column in their own order.
    pub fn order_by(&self, columns: &[&str]) -> Result<Vec<u32>, ReadError> {
        let rows = u32::try_from(self.rows()).map_err(|_| {
            layout(self.name(), format!("{} rows are too many to sort at once", self.rows()))
        })?;
        let arrays = self.whole_columns(columns)?;
        let compare = self.comparator(&arrays)?;
        let mut order: Vec<u32> = (0..rows).collect();
        // Stable: rows alike keep their order. A u32 widens to usize on every target this
        // builds for (64-bit: the readers use mmap and memchr's wide words).
        order.sort_by(|&a, &b| compare.compare(a as usize, b as usize));
        Ok(order)
    }

    /// Checks that the rows are in ascending order of `columns`, as [`order_by`] orders
    /// them; the error names the first row (counted from 1) that comes too early.
    ///
    /// [`order_by`]: ArrowData::order_by
    pub fn check_order(&self, columns: &[&str]) -> Result<(), ReadError> {
        let arrays = self.whole_columns(columns)?;
        let compare = self.comparator(&arrays)?;
        let rows = arrays.first().map_or(0, |array| array.len());
        match (1..rows).find(|&row| compare.compare(row - 1, row) == Ordering::Greater) {
            None => Ok(()),
            Some(row) => Err(layout(
                self.name(),
                format!(
                    "row {} belongs before row {row} in ({}) order: the rows are not sorted",
                    row + 1,
                    columns.join(", ")
                ),
            )),
        }
    }

    /// Each of `columns` as one array over every batch.
    fn whole_columns(&self, columns: &[&str]) -> Result<Vec<ArrayRef>, ReadError> {
        let mut arrays = Vec::with_capacity(columns.len());
        for &name in columns {
            let Ok(index) = self.schema.index_of(name) else {
                return Err(layout(
                    self.name(),
                    format!("no column `{name}` to order the rows by"),
                ));
            };
            let parts: Vec<&dyn Array> =
                self.batches.iter().map(|batch| batch.column(index).as_ref()).collect();
            let whole = match parts.as_slice() {
                [] => new_empty_array(self.schema.field(index).data_type()),
                [_] => self.batches[0].column(index).clone(),
                _ => arrow_select::concat::concat(&parts)
                    .map_err(|error| layout(self.name(), format!("column `{name}`: {error}")))?,
            };
            arrays.push(whole);
        }
        Ok(arrays)
    }

    /// Compares rows of `arrays` in ascending order, nulls first.
    fn comparator(&self, arrays: &[ArrayRef]) -> Result<LexicographicalComparator, ReadError> {
        let options = Some(SortOptions { descending: false, nulls_first: true });
        let columns: Vec<SortColumn> =
            arrays.iter().map(|values| SortColumn { values: values.clone(), options }).collect();
        LexicographicalComparator::try_new(&columns)
            .map_err(|error| layout(self.name(), format!("cannot order the rows: {error}")))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int64Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};

    use super::*;

    /// A table of (key, time) in two batches, as an engine hands rows over.
    fn table(rows: &[(Option<&str>, i64)], cut: usize) -> ArrowData {
        let schema = Arc::new(Schema::new(vec![
            Field::new("key", DataType::Utf8, true),
            Field::new("t", DataType::Int64, false),
        ]));
        let batch = |rows: &[(Option<&str>, i64)]| {
            let keys: StringArray = rows.iter().map(|row| row.0).collect();
            let times: Int64Array = rows.iter().map(|row| Some(row.1)).collect();
            RecordBatch::try_new(schema.clone(), vec![Arc::new(keys), Arc::new(times)]).unwrap()
        };
        ArrowData::new("<part>", schema.clone(), vec![batch(&rows[..cut]), batch(&rows[cut..])])
    }

    #[test]
    fn rows_are_ordered_by_each_column_in_turn_nulls_first_and_alike_rows_kept_in_place() {
        assert_eq!(table(&[], 0).order_by(&["key"]).unwrap(), [0; 0]);
        let rows = [
            (Some("b"), 2),
            (Some("a"), 9),
            (None, 5),
            (Some("b"), 1),
            (Some("a"), 9),
            (Some("a"), 3),
        ];
        let data = table(&rows, 2);
        assert_eq!(data.order_by(&["key", "t"]).unwrap(), [2, 5, 1, 4, 3, 0]);
        assert_eq!(data.order_by(&["t"]).unwrap(), [3, 0, 5, 2, 1, 4]);
    }

    #[test]
    fn an_order_broken_across_batches_names_the_row_that_comes_too_early() {
        let sorted = table(&[(None, 7), (Some("a"), 1), (Some("a"), 1), (Some("b"), 0)], 2);
        sorted.check_order(&["key", "t"]).unwrap();
        let broken = table(&[(Some("a"), 1), (Some("a"), 4), (Some("a"), 3), (Some("b"), 0)], 2);
        let said = broken.check_order(&["key", "t"]).unwrap_err().to_string();
        assert_eq!(
            said,
            "<part>: row 3 belongs before row 2 in (key, t) order: the rows are not sorted"
        );
        let said = broken.check_order(&["key", "tie"]).unwrap_err().to_string();
        assert_eq!(said, "<part>: no column `tie` to order the rows by");
    }
}
