//! Reading an input out of time order: every event kept, sorted, then fed to the sink.

use super::error::layout;
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
        kept.push(event).map_err(|problem| layout(&source.name(), problem))?;
        Ok::<_, S::Error>(Flow::More)
    })?
    // `stream` gives `None` only when the taker says stop, and this one never does.
    .expect("a pass that is never stopped ends");
    let mut instants = Instants::default();
    let (name, mut ties) = (source.name(), options.ties.spreader());
    let mut emit = |event: Event| sink.event(event);
    kept.for_each_sorted(|event| {
        instants.see(event.time, event.key);
        match &mut ties {
            Some(spreader) => spreader.push(event, &name, &mut emit),
            None => emit(event),
        }
    })?;
    if let Some(spreader) = &mut ties {
        spreader.flush(None, &mut emit)?;
    }
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

    /// Keeps `event`; past [`MOST_KEPT`] bytes, or when memory cannot be had, says why not.
    fn push(&mut self, event: Event) -> Result<(), String> {
        if event.cost != 1 && !matches!(self, Kept::Weighted(_)) {
            let whole = std::mem::replace(self, Kept::Times(Vec::new())).whole()?;
            *self = Kept::Weighted(whole);
        }
        match self {
            Kept::Times(times) => room(times)?.push(event.time),
            Kept::Keyed(events) => room(events)?.push((event.time, event.key)),
            Kept::Weighted(events) => room(events)?.push(event),
        }
        Ok(())
    }

    /// Returns the events kept so far, whole, in the order they came: the weighted ones
    /// are sorted once, at the end, with the rest.
    fn whole(self) -> Result<Vec<Event>, String> {
        fn kept(events: impl ExactSizeIterator<Item = Event>) -> Result<Vec<Event>, String> {
            let mut whole = Vec::new();
            reserve(&mut whole, events.len())?;
            whole.extend(events);
            Ok(whole)
        }
        match self {
            Kept::Times(times) => kept(times.into_iter().map(|t| Event::new(t, 0))),
            Kept::Keyed(events) => kept(events.into_iter().map(|(t, key)| Event::new(t, key))),
            Kept::Weighted(events) => Ok(events),
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

/// The most bytes of events an input read once may keep to sort: what the program states as
/// its bound, past which it stops in one line rather than be killed for its memory.
pub(super) const MOST_KEPT: usize = 4 << 30;

/// Returns `events` with room for one more, growing it (doubling) within [`MOST_KEPT`]
/// bytes and the memory that can be had.
fn room<T>(events: &mut Vec<T>) -> Result<&mut Vec<T>, String> {
    if events.len() == events.capacity() {
        let len = events.len();
        reserve(events, len.max(1 << 12))?;
    }
    Ok(events)
}

/// Reserves room for `more` events in `events`, within [`MOST_KEPT`] bytes in all.
fn reserve<T>(events: &mut Vec<T>, more: usize) -> Result<(), String> {
    reserve_within(events, more, MOST_KEPT)
}

/// Reserves room for `more` events in `events`, within `bytes` in all.
fn reserve_within<T>(events: &mut Vec<T>, more: usize, bytes: usize) -> Result<(), String> {
    let (size, len) = (std::mem::size_of::<T>(), events.len());
    let wanted = len.saturating_add(more);
    let most = bytes / size;
    let too_many = |why: &str| {
        format!(
            "read once (a pipe or a compressed stream) and out of time order, its events are kept \
             to be sorted, {size} bytes each, and {why} after {len} events: sort the input \
             first, or give it as a file, which is read twice instead"
        )
    };
    if len >= most {
        return Err(too_many(&format!("the most kept is {} MiB", bytes >> 20)));
    }
    events
        .try_reserve_exact(wanted.min(most) - len)
        .map_err(|_| too_many("no more memory could be had"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_read_once_input_keeps_to_sort_is_bounded() {
        let mut kept: Vec<u64> = Vec::new();
        for _ in 0..(2 << 20) / 8 {
            reserve_within(&mut kept, 1, 2 << 20).unwrap();
            kept.push(0);
        }
        let error = reserve_within(&mut kept, 1, 2 << 20).unwrap_err();
        assert!(error.ends_with("8 bytes each, and the most kept is 2 MiB after 262144 events: sort the input first, or give it as a file, which is read twice instead"), "{error}");
        // Memory that cannot be had is said so, never an abort.
        let mut huge: Vec<[u8; 1 << 20]> = Vec::new();
        let error = reserve_within(&mut huge, usize::MAX >> 21, usize::MAX).unwrap_err();
        assert!(error.contains("no more memory could be had after 0 events"), "{error}");
    }

    #[test]
    fn events_sort_by_time_and_keep_their_order_when_equal_whatever_their_keys() {
        let at = |s: i64| Timestamp::from_micros(s * 1_000_000).unwrap();
        let event = |s, key, cost| Event { time: at(s), key, cost };
        let mut kept = Kept::new(true);
        // Unit events first, kept small; the first weighted one makes every one whole.
        for e in [event(5, 1, 1), event(2, 0, 1), event(5, 0, 1)] {
            kept.push(e).unwrap();
        }
        assert!(matches!(kept, Kept::Keyed(_)));
        for e in [event(5, 0, 7), event(1, 3, 1), event(5, 0, 2)] {
            kept.push(e).unwrap();
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
