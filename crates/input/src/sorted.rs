//! Reading an input out of time order: every event kept, sorted, then fed to the sink.

use super::event::Event;
use super::instants::Instants;
use super::keys::Key;
use super::options::ReadOptions;
use super::pipeline::Flow;
use super::sink::Sink;
use super::source::{Opened, Source};
use super::stats::ReadStats;
use super::streaming::stream_input;
use crate::units::time::Timestamp;

/// Reads every kept event of `input`, sorts them by time (and key), stable for equal ones,
/// and feeds them to `sink`, which is returned with what reading found.
pub(super) fn read_sorted<S: Sink>(
    input: &mut Opened,
    source: &Source,
    options: &ReadOptions,
    mut sink: S,
) -> Result<(S, ReadStats), S::Error> {
    let mut kept = Kept::new(options.key_column.is_some());
    let stats = stream_input(input, source, options, false, |event| {
        kept.push(event);
        Ok::<_, S::Error>(Flow::More)
    })?
    // `stream` gives `None` only when the taker says stop, and this one never does.
    .expect("a pass that is never stopped ends");
    let mut instants = Instants::default();
    kept.for_each_sorted(|event| {
        instants.see(event.time, event.key);
        sink.event(event)
    })?;
    Ok((sink, ReadStats { instants, sorted: true, ..stats }))
}

/// Events kept to be sorted, in as few bytes as tell them apart: without keys and costs a
/// time is all there is to keep (8 bytes), with keys a time and a key (16); only once an
/// event costs other than 1 is each kept whole.
#[derive(Debug, PartialEq, Eq)]
enum Kept {
    Times(Vec<Timestamp>),
    Keyed(Vec<(Timestamp, Key)>),
    Weighted(Vec<Event>),
}

impl Kept {
    fn new(keyed: bool) -> Kept {
        if keyed { Kept::Keyed(Vec::new()) } else { Kept::Times(Vec::new()) }
    }

    fn push(&mut self, event: Event) {
        if event.cost != 1 && !matches!(self, Kept::Weighted(_)) {
            *self = Kept::Weighted(std::mem::replace(self, Kept::Times(Vec::new())).whole());
        }
        match self {
            Kept::Times(times) => times.push(event.time),
            Kept::Keyed(events) => events.push((event.time, event.key)),
            Kept::Weighted(events) => events.push(event),
        }
    }

    /// Returns the events kept so far, whole, in the order they came: the weighted ones
    /// are sorted once, at the end, with the rest.
    fn whole(self) -> Vec<Event> {
        match self {
            Kept::Times(times) => times.into_iter().map(|time| Event::new(time, 0)).collect(),
            Kept::Keyed(events) => events.into_iter().map(|(t, key)| Event::new(t, key)).collect(),
            Kept::Weighted(events) => events,
        }
    }

    /// Gives each event to `take` in time order, stable for equal times, until `take`
    /// fails: events that share a time keep the order they came in, whatever their keys,
    /// as limits over several keys at once (layers, one keyed and one not) need. Times
    /// alone cannot be told apart, so an unstable sort keeps those stable.
    fn for_each_sorted<E>(self, mut take: impl FnMut(Event) -> Result<(), E>) -> Result<(), E> {
        match self {
            Kept::Times(mut times) => {
                times.sort_unstable();
                times.into_iter().try_for_each(|time| take(Event::new(time, 0)))
            }
            Kept::Keyed(mut events) => {
                events.sort_by_key(|&(time, _)| time);
                events.into_iter().try_for_each(|(time, key)| take(Event::new(time, key)))
            }
            Kept::Weighted(mut events) => {
                events.sort_by_key(|event| event.time);
                events.into_iter().try_for_each(take)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_sort_by_time_and_keep_their_order_when_equal_whatever_their_keys() {
        let at = |s: i64| Timestamp::from_micros(s * 1_000_000).unwrap();
        let event = |s, key, cost| Event { time: at(s), key, cost };
        let mut kept = Kept::new(true);
        // Unit events first, kept small; the first weighted one makes every one whole.
        for e in [event(5, 1, 1), event(2, 0, 1), event(5, 0, 1)] {
            kept.push(e);
        }
        assert!(matches!(kept, Kept::Keyed(_)));
        for e in [event(5, 0, 7), event(1, 3, 1), event(5, 0, 2)] {
            kept.push(e);
        }
        // Equal times keep the order they came in, whatever their keys.
        let want = [
            event(1, 3, 1),
            event(2, 0, 1),
            event(5, 1, 1),
            event(5, 0, 1),
            event(5, 0, 7),
            event(5, 0, 2),
        ];
        let mut sorted = Vec::new();
        let _ = kept.for_each_sorted(|event| {
            sorted.push(event);
            Ok::<_, ()>(())
        });
        assert_eq!(sorted, want);
    }
}
