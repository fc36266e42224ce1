//! A header: finding the column a flag names in it.

use csv::ByteRecord;

use crate::message::{MOST_QUOTED, cut, cut_at, escaped};

/// Why a column could not be found in a header; names and the header are as a message
/// quotes them, each on one line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ColumnError {
    /// Two columns have the name.
    #[error(
        "the header names `{name}` twice, as columns {first} and {second}; which one is meant \
         cannot be told"
    )]
    Twice {
        /// The name.
        name: String,
        /// The first column with it, from 1.
        first: usize,
        /// The second, from 1.
        second: usize,
    },
    /// No column has the name.
    #[error("no column named `{name}` {why}; the header has: {header}")]
    Missing {
        /// The name.
        name: String,
        /// Who asked for it.
        why: String,
        /// The header's names, joined with commas.
        header: String,
    },
}

/// Returns the index of the column named `wanted` in `header`; `why` says who asked for it
/// (`(named by --key)`, say). It is an error, in words for the user, if no column or two
/// columns have that name.
pub fn find_column(header: &ByteRecord, wanted: &str, why: &str) -> Result<usize, ColumnError> {
    let mut found = header.iter().enumerate().filter(|(_, h)| *h == wanted.as_bytes());
    // Names are quoted exactly: `cost ` is not `cost`.
    let name = escaped(wanted);
    match (found.next(), found.next()) {
        (Some((index, _)), None) => Ok(index),
        (Some((first, _)), Some((second, _))) => {
            Err(ColumnError::Twice { name, first: first + 1, second: second + 1 })
        }
        (None, _) => {
            // A name with a space at an end is shown in backticks, so that the space shows.
            // Each cut, and the whole, so that a huge header gives a line a person reads.
            let names: Vec<String> = (header.iter().map(String::from_utf8_lossy))
                .map(|name| match name.trim() == name {
                    true => cut(&escaped(&name), MOST_QUOTED),
                    false => format!("`{}`", cut(&escaped(&name), MOST_QUOTED)),
                })
                .collect();
            let joined = names.join(",");
            let header = match cut_at(&joined, 4 * MOST_QUOTED) {
                None => joined,
                Some(at) => format!("{}… ({} columns)", &joined[..at], names.len()),
            };
            Err(ColumnError::Missing { name, why: why.to_owned(), header })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_what_is_missing_and_what_is_twice() {
        let header = ByteRecord::from(vec!["time", "user", "time"]);
        assert_eq!(find_column(&header, "user", "(named by --key)"), Ok(1));
        assert_eq!(
            find_column(&header, "who", "(named by --key)").unwrap_err().to_string(),
            "no column named `who` (named by --key); the header has: time,user,time"
        );
        let twice = find_column(&header, "time", "").unwrap_err();
        assert!(twice.to_string().contains("as columns 1 and 3"), "{twice}");
    }

    #[test]
    fn a_name_with_a_space_at_an_end_is_quoted_as_it_is() {
        let header = ByteRecord::from(vec!["time", "cost "]);
        assert_eq!(find_column(&header, "cost ", "(named by --cost)"), Ok(1));
        assert_eq!(
            find_column(&header, "cost", "(named by --cost)").unwrap_err().to_string(),
            "no column named `cost` (named by --cost); the header has: time,`cost `"
        );
    }
}
