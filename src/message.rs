//! Error messages are one line, whatever text from elsewhere they quote.

pub use ratelimit_input::message::{io_reason, one_line};
