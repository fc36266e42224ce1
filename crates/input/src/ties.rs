//! Events that share a whole second: read as simultaneous, or spread evenly across it.

use super::error::{ReadError, layout};
use super::event::Event;
use crate::units::time::Timestamp;

/// How events written at the same whole second are read, when the times say only the
/// second: an access log's `$time_local`, say. Neither reading is the truth; the two
/// bound what the events could have been.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Ties {
    /// At that second, simultaneous: the times as written.
    #[default]
    Together,
    /// Spread evenly across their second, in the order read: the k-th of n at s + k·(1 s)/n,
    /// in whole microseconds, rounded down; across the time to the next event instead,
    /// when that comes sooner (an event written finer than the second).
    Spread,
}

impl Ties {
    /// The reading's name, as `--ties` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Ties::Together => "together",
            Ties::Spread => "spread",
        }
    }

    /// What spreads events as this reading reads them: `None` for together, which reads
    /// them as written.
    pub(crate) fn spreader(self) -> Option<Spreader> {
        (self == Ties::Spread).then(Spreader::default)
    }

    /// The other reading.
    pub fn other(self) -> Ties {
        match self {
            Ties::Together => Ties::Spread,
            Ties::Spread => Ties::Together,
        }
    }
}

impl std::str::FromStr for Ties {
    type Err = String;

    fn from_str(text: &str) -> Result<Ties, String> {
        match text {
            "together" => Ok(Ties::Together),
            "spread" => Ok(Ties::Spread),
            other => Err(format!("'{other}' is not a reading of ties: together or spread")),
        }
    }
}

/// One second, in microseconds.
const SECOND: i64 = 1_000_000;

/// The most events one second may hold to be spread: past it, they would share
/// microseconds, and holding them would take memory without bound.
pub const MOST_TIED: usize = 1_000_000;

/// Whether `time` is a whole second: the times a tie may be read two ways at.
fn whole_second(time: Timestamp) -> bool {
    time.as_micros().rem_euclid(SECOND) == 0
}

/// The time of the `k`-th of `n` events written at whole second `at`, read spread across
/// it; the next event, if any, comes at `next`.
fn spread(at: Timestamp, k: usize, n: usize, next: Option<Timestamp>) -> Timestamp {
    let room = next.map_or(SECOND, |next| (next.as_micros() - at.as_micros()).min(SECOND));
    // k < n ≤ MOST_TIED and room ≤ 10^6: the product fits in an i128, the quotient is
    // below room, and so the time is at most the next event's, or the second's last µs.
    let (k, n) = (i128::try_from(k).unwrap_or(0), i128::try_from(n).unwrap_or(1).max(1));
    let offset = i64::try_from(i128::from(room) * k / n).unwrap_or(0);
    Timestamp::from_micros(at.as_micros() + offset).unwrap_or(at)
}

/// Spreads events in time order as [`Ties::Spread`] reads them: events at a whole second
/// that share it are held until the next event tells how much room they have (at most
/// [`MOST_TIED`] at once), then given their times in the order they came.
#[derive(Debug, Default)]
pub(crate) struct Spreader {
    tied: Vec<Event>,
}

impl Spreader {
    /// Takes the next event of input `name`, no earlier than the one before, and hands
    /// `emit` every event whose time is now settled.
    pub(crate) fn push<E: From<ReadError>>(
        &mut self,
        event: Event,
        name: &str,
        emit: &mut impl FnMut(Event) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.tied.first().is_some_and(|first| first.time != event.time) {
            self.flush(Some(event.time), emit)?;
        }
        if !whole_second(event.time) {
            return emit(event);
        }
        if self.tied.len() == MOST_TIED {
            return Err(layout(
                name,
                format!(
                    "more than {MOST_TIED} events share the second {}: --ties spread holds \
                     one second's events, at most {MOST_TIED}; read them together (--ties \
                     together)",
                    event.time
                ),
            )
            .into());
        }
        self.tied.push(event);
        Ok(())
    }

    /// Hands `emit` the events held, spread up to `next`, the next event's time (`None`
    /// at the end).
    pub(crate) fn flush<E>(
        &mut self,
        next: Option<Timestamp>,
        emit: &mut impl FnMut(Event) -> Result<(), E>,
    ) -> Result<(), E> {
        let n = self.tied.len();
        for (k, event) in self.tied.drain(..).enumerate() {
            emit(Event { time: spread(event.time, k, n, next), ..event })?;
        }
        Ok(())
    }
}

/// Spreads the times of `times`, in time order, as [`Ties::Spread`] reads them.
pub(crate) fn spread_sorted(times: &mut [Timestamp]) {
    spread_sorted_by(times, |time| time);
}

/// Spreads the times of `items`, in time order, in place, as [`Ties::Spread`] reads them;
/// `time` finds an item's time.
pub(crate) fn spread_sorted_by<T>(items: &mut [T], time: impl Fn(&mut T) -> &mut Timestamp) {
    let mut start = 0;
    while start < items.len() {
        let at = *time(&mut items[start]);
        let mut end = start + 1;
        while end < items.len() && *time(&mut items[end]) == at {
            end += 1;
        }
        if whole_second(at) && end - start > 1 {
            let next = items.get_mut(end).map(|item| *time(item));
            let n = end - start;
            for (k, item) in items[start..end].iter_mut().enumerate() {
                *time(item) = spread(at, k, n, next);
            }
        }
        start = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(micros: i64) -> Timestamp {
        Timestamp::from_micros(micros).unwrap()
    }

    fn spread_all(times: &[i64]) -> Vec<i64> {
        let mut spreader = Spreader::default();
        let mut out = Vec::new();
        let mut emit = |event: Event| {
            out.push(event.time.as_micros());
            Ok::<_, ReadError>(())
        };
        for &t in times {
            spreader.push(Event { time: at(t), key: 0, cost: 1 }, "x", &mut emit).unwrap();
        }
        spreader.flush(None, &mut emit).unwrap();
        out
    }

    #[test]
    fn three_in_a_second_are_a_third_of_a_second_apart() {
        // 1,000,000 / 3 = 333,333.3: floored, 333,333 and 666,666.
        let got = spread_all(&[5_000_000, 5_000_000, 5_000_000, 7_000_000]);
        assert_eq!(got, [5_000_000, 5_333_333, 5_666_666, 7_000_000]);
        let mut times: Vec<Timestamp> = [5_000_000, 5_000_000, 5_000_000, 7_000_000].map(at).into();
        spread_sorted(&mut times);
        assert_eq!(times.iter().map(|t| t.as_micros()).collect::<Vec<_>>(), got);
    }

    #[test]
    fn ties_spread_only_to_the_next_event_and_only_at_a_whole_second() {
        // The next event comes 400 ms later: two share that, 200 ms apart. Two at a time
        // written finer stay together; one alone stays where it is.
        let got = spread_all(&[0, 0, 400_000, 400_000, 2_000_000]);
        assert_eq!(got, [0, 200_000, 400_000, 400_000, 2_000_000]);
    }

    #[test]
    fn a_second_of_more_than_the_most_tied_is_an_error_that_names_the_reading() {
        let mut spreader =
            Spreader { tied: vec![Event { time: at(0), key: 0, cost: 1 }; MOST_TIED] };
        let mut emit = |_| Ok::<_, ReadError>(());
        let err = spreader.push(Event { time: at(0), key: 0, cost: 1 }, "log", &mut emit);
        let text = err.unwrap_err().to_string();
        assert!(text.contains("more than 1000000 events share the second"), "{text}");
    }
}
