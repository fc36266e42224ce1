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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_quotes_kept() {
        assert_eq!(one_line(" bad\r\nthing\u{7} \"q\" "), "bad\\r\\nthing\\u{7} \"q\"");
    }
}
