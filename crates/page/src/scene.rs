//! The scene: every limiter on the busiest stretch, event by event.

use serde::Serialize;

use crate::input::catalog::Event;
use crate::units::time::Timestamp;

/// The most events the scene draws; a busier stretch is cut short at this many.
const MAX_SCENE_EVENTS: usize = 20_000;

/// Every limiter on the busiest stretch: its events, and each lane's decision on each.
#[derive(Debug, Serialize)]
pub(crate) struct Scene {
    /// ms since the epoch.
    pub(crate) start: i64,
    pub(crate) end: i64,
    /// Whether the stretch was cut short at [`MAX_SCENE_EVENTS`].
    cut: bool,
    /// Whether --since/--until gave it.
    given: bool,
    /// ms after `start`.
    pub(crate) t: Vec<i64>,
    /// For each lane, a character an event: `1` passed, `0` dropped.
    decisions: Vec<String>,
}

impl Scene {
    /// The start of the `length` ms in which lane `chosen` of `lanes` drops the most of
    /// `events` (decided as `trace` says), the earliest of those; `None` if it drops none.
    pub(crate) fn most_dropped(
        events: &[Event],
        trace: &[bool],
        (lanes, chosen): (usize, usize),
        length: i64,
    ) -> Option<Timestamp> {
        let dropped = |i: usize| !trace.get(i * lanes + chosen).copied().unwrap_or(true);
        let ms = |i: usize| events[i].time.as_micros().div_euclid(1000);
        let (mut best, mut count, mut from) = (None::<(usize, usize)>, 0, 0);
        for to in 0..events.len() {
            count += usize::from(dropped(to));
            while ms(to) - ms(from) >= length.max(1) {
                count -= usize::from(dropped(from));
                from += 1;
            }
            if count > best.map_or(0, |(most, _)| most) {
                best = Some((count, from));
            }
        }
        // The window starts at its first event, which a drop may follow.
        best.map(|(_, from)| events[from].time)
    }

    /// The scene of `events`, decided as `trace` says (`lanes` decisions an event): the
    /// `length` ms from the start of the busiest window, or all of them if `given`.
    pub(crate) fn of(
        events: &[Event],
        trace: &[bool],
        lanes: usize,
        (busiest, length): (Option<Timestamp>, i64),
        given: bool,
    ) -> Scene {
        let ms = |e: &Event| e.time.as_micros().div_euclid(1000);
        let (first, last) = (ms(&events[0]), ms(&events[events.len() - 1]));
        let (start, end) = match (given, busiest) {
            (false, Some(at)) => {
                let at = at.as_micros().div_euclid(1000);
                (at, at.saturating_add(length.max(1)))
            }
            _ => (first, last + 1),
        };
        let from = events.partition_point(|e| ms(e) < start);
        let mut to = events.partition_point(|e| ms(e) < end);
        let cut = to - from > MAX_SCENE_EVENTS;
        if cut {
            to = from + MAX_SCENE_EVENTS;
        }
        let end = if cut { ms(&events[to - 1]) + 1 } else { end };
        let decisions =
            (0..lanes)
                .map(|n| {
                    (from..to)
                        .map(|i| {
                            if trace.get(i * lanes + n).copied().unwrap_or(false) {
                                '1'
                            } else {
                                '0'
                            }
                        })
                        .collect()
                })
                .collect();
        Scene {
            start,
            end,
            cut,
            given,
            t: events[from..to].iter().map(|e| ms(e) - start).collect(),
            decisions,
        }
    }
}
