//! Error messages are one line, whatever text from elsewhere they quote.

pub use ratelimit_input::message::one_line;

/// An I/O error's reason, without the `(os error N)` that std appends: what `cp` and the
/// shell print.
pub fn io_reason(err: &std::io::Error) -> String {
    let text = err.to_string();
    text.find(" (os error").map_or(text.clone(), |at| text[..at].to_owned())
}
