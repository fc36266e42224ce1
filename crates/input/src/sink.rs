//! What takes events: a sink, fed one event at a time, in time order.

use super::error::ReadError;
use super::event::Event;

/// Something that takes a catalog's events one at a time, in time order.
pub trait Sink {
    /// What the sink's own failure is; a failure to read converts into it.
    type Error: From<ReadError>;

    /// Takes the next event, no earlier than the one before. A sink that fails (Redis, say)
    /// stops the reading.
    fn event(&mut self, event: Event) -> Result<(), Self::Error>;

    /// Returns true if the sink does much for each event (several limiters, say), so that
    /// keys are best numbered on a thread of their own, between reading and the sink.
    fn busy(&self) -> bool {
        false
    }
}
