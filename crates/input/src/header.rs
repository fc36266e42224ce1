//! A header: finding the column a flag names in it.

use csv::ByteRecord;

use crate::message::one_line;

/// Returns the index of the column named `wanted` in `header`; `why` says who asked for it
/// (`(named by --key)`, say). It is an error, in words for the user, if no column or two
/// columns have that name.
pub fn find_column(header: &ByteRecord, wanted: &str, why: &str) -> Result<usize, String> {
    let mut found = header.iter().enumerate().filter(|(_, h)| *h == wanted.as_bytes());
    let wanted = one_line(wanted);
    match (found.next(), found.next()) {
        (Some((index, _)), None) => Ok(index),
        (Some((first, _)), Some((second, _))) => Err(format!(
            "the header names `{wanted}` twice, as columns {} and {}; which one is meant \
             cannot be told",
            first + 1,
            second + 1
        )),
        (None, _) => {
            let names: Vec<_> = header.iter().map(String::from_utf8_lossy).collect();
            let names = one_line(&names.join(","));
            Err(format!("no column named `{wanted}` {why}; the header has: {names}"))
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
            find_column(&header, "who", "(named by --key)"),
            Err("no column named `who` (named by --key); the header has: time,user,time".into())
        );
        assert!(find_column(&header, "time", "").unwrap_err().contains("as columns 1 and 3"));
    }
}
