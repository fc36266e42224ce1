//! Error messages are one line, whatever text from elsewhere they quote.

/// Returns `text` trimmed, with line breaks and other control characters escaped as Rust
/// writes them (`\n`, `\u{7}`), so that it cannot break a message's one line.
pub fn one_line(text: &str) -> String {
    escaped(text.trim())
}

/// Returns `text` with line breaks and other control characters escaped as Rust writes them,
/// its spaces kept: for a name that must be quoted exactly, such as a column's.
pub fn escaped(text: &str) -> String {
    let mut line = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            line.extend(c.escape_debug());
        } else {
            line.push(c);
        }
    }
    line
}

/// The most characters of a value an error quotes: enough to see it, few enough that a
/// 15 MB field gives a line a person reads.
pub const MOST_QUOTED: usize = 200;

/// Returns where `text` is cut to keep `most` characters, if it has more.
pub fn cut_at(text: &str, most: usize) -> Option<usize> {
    text.char_indices().nth(most).map(|(at, _)| at)
}

/// Returns `text` cut after `most` characters, with `…` where it was cut.
pub fn cut(text: &str, most: usize) -> String {
    match cut_at(text, most) {
        None => text.to_owned(),
        Some(at) => format!("{}…", &text[..at]),
    }
}

/// Returns `text` quoted as Rust writes a string (its control characters escaped), cut
/// after [`MOST_QUOTED`] characters with how long it is in all.
pub fn quoted(text: &str) -> String {
    match cut_at(text, MOST_QUOTED) {
        None => format!("{text:?}"),
        Some(at) => format!("{:?}… ({} bytes in all)", &text[..at], text.len()),
    }
}

/// An I/O error's reason, without the `(os error N)` that std appends: what `cp` and the
/// shell print.
pub fn io_reason(err: &std::io::Error) -> String {
    let text = err.to_string();
    text.find(" (os error").map_or(text.clone(), |at| text[..at].to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_value_is_quoted_cut_with_its_length() {
        assert_eq!(quoted("a\"b\n"), "\"a\\\"b\\n\"");
        let long = "é".repeat(MOST_QUOTED + 1);
        let cut = format!("{:?}… ({} bytes in all)", "é".repeat(MOST_QUOTED), long.len());
        assert_eq!(quoted(&long), cut);
        assert_eq!(quoted(&long[..2 * MOST_QUOTED]), format!("{:?}", "é".repeat(MOST_QUOTED)));
    }

    #[test]
    fn control_characters_are_escaped_and_quotes_kept() {
        assert_eq!(one_line(" bad\r\nthing\u{7} \"q\" "), "bad\\r\\nthing\\u{7} \"q\"");
    }
}
