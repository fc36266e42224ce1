//! An event: when it came, whose it is, and what it costs (the core's).

pub use ratelimit_core::event::Event;
