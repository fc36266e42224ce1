//! Events that share an instant: how many, and what that says when times are whole seconds.

use crate::units::time::Timestamp;

/// How many events of a run in time order share their instant with another.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Instants {
    /// Events whose instant another event has too.
    pub shared: u64,
    last: Option<Timestamp>,
    /// Whether the event before had the instant of the one before it.
    in_group: bool,
}

impl Instants {
    /// Takes the next event's time, no earlier than the one before.
    #[inline]
    pub fn see(&mut self, time: Timestamp) {
        if self.last == Some(time) {
            // The first of a group is counted when the second comes.
            self.shared += if self.in_group { 1 } else { 2 };
            self.in_group = true;
        } else {
            self.in_group = false;
        }
        self.last = Some(time);
    }

    /// Returns what to say when the times were written in whole seconds (`fractions` is
    /// false) and events share a second: how many, and what that does to the figures.
    pub fn note(&self, fractions: bool) -> Option<String> {
        if self.shared == 0 || fractions {
            return None;
        }
        Some(format!(
            "the times are whole seconds, and {} events share their second with another: \
             they are replayed as simultaneous, though up to 1 s apart. The figures may be \
             off, either way, by what the rate refills in 1 s; log times to the millisecond (nginx $msec, or --log-format with $msec \
             and $request_time)",
            self.shared
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(micros: &[i64]) -> Instants {
        let mut instants = Instants::default();
        for &t in micros {
            instants.see(Timestamp::from_micros(t).unwrap());
        }
        instants
    }

    #[test]
    fn three_and_two_events_in_one_second_share_five() {
        let instants = seen(&[0, 1_000_000, 1_000_000, 1_000_000, 2_000_000, 5_000_000, 5_000_000]);
        assert_eq!(instants.shared, 5);
        let note = instants.note(false).unwrap();
        assert!(note.starts_with("the times are whole seconds, and 5 events"), "{note}");
        // Times written to the millisecond that tie are ties of the events themselves.
        assert_eq!(instants.note(true), None);
        assert_eq!(seen(&[0, 1_000_000]).note(false), None);
    }
}
