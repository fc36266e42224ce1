//! The events over time, as the page draws them: each one, when few enough, and bins at
//! every zoom level.

use std::borrow::Cow;

use serde::Serialize;

use crate::input::catalog::{self, Event, ReadStats, Source, slot};
use crate::input::csv_line::LineReader;

/// Above this many events the timeline is drawn from bins, not event by event.
pub const MAX_DRAWN_EVENTS: usize = 100_000;

/// The bins of the coarsest level, and how many times finer each next level is.
const FIRST_BINS: i64 = 1_000;
const FINER: i64 = 4;
const LEVELS: u32 = 5;

/// The events over time: each one (up to [`MAX_DRAWN_EVENTS`]), and bins at every level.
#[derive(Debug, Serialize)]
pub(crate) struct TimelineData {
    /// The first event's time, ms since the epoch; the others are ms after it.
    start: i64,
    end: i64,
    /// Each event, if there are few enough to draw.
    events: Option<Drawn>,
    /// Levels of bins, coarsest first: each bin `width` ms, and the bins that hold events
    /// as pairs (index after the last pair's, count).
    levels: Vec<Level>,
}

#[derive(Debug, Serialize)]
struct Drawn {
    /// ms after `start`.
    t: Vec<i64>,
    /// Key numbers, with the names in `keys`; none without --key.
    k: Option<Vec<u32>>,
    keys: Vec<String>,
    /// What each event's row says of it beyond time and key: its magnitude, or its cost.
    v: Vec<String>,
    /// What `v` is.
    v_name: String,
}

#[derive(Debug, Serialize)]
struct Level {
    width: i64,
    bins: Vec<i64>,
}

/// The magnitudes of a catalog's events, read again from its rows (a file or the sample,
/// few enough to draw), with the name of the column; `None` where there is none.
pub(crate) fn values(
    source: &Source,
    read: &catalog::ReadOptions,
    count: usize,
) -> Option<(String, Vec<String>)> {
    if matches!(source, Source::Stdin) {
        return None;
    }
    let (rows, _) = catalog::read_rows(source, read).ok()?;
    let mut csv = LineReader::with_delimiter(read.delimiter());
    let header = csv.record(rows.header())?;
    let column = header.iter().position(|h| h.eq_ignore_ascii_case(b"mag"))?;
    let mut out = Vec::with_capacity(count);
    for (_, row) in rows.iter() {
        csv.read(row);
        let field = csv.field(column).map(String::from_utf8_lossy);
        out.push(field.map(Cow::into_owned).unwrap_or_default());
    }
    (out.len() == count).then(|| ("magnitude".to_owned(), out))
}

impl TimelineData {
    /// The timeline of `events` (in time order, at least one), read with `stats`, each
    /// with its value in `values` if given (else its cost).
    pub(crate) fn of(
        events: &[Event],
        stats: &ReadStats,
        values: Option<(String, Vec<String>)>,
    ) -> TimelineData {
        let ms = |e: &Event| e.time.as_micros().div_euclid(1000);
        let (start, end) = (ms(&events[0]), ms(&events[events.len() - 1]));
        let span = (end - start).max(1) + 1;
        let mut levels = Vec::new();
        for level in 0..LEVELS {
            let width = (span / (FIRST_BINS * FINER.pow(level))).max(1);
            let mut bins = Vec::new();
            let (mut last, mut at, mut count) = (0, -1, 0);
            for e in events {
                let bin = (ms(e) - start) / width;
                if bin != at && count > 0 {
                    bins.extend([at - last, count]);
                    last = at;
                    count = 0;
                }
                at = bin;
                count += 1;
            }
            bins.extend([at - last, count]);
            levels.push(Level { width, bins });
            if width == 1 {
                break;
            }
        }
        let drawn = (events.len() <= MAX_DRAWN_EVENTS).then(|| {
            let keyed = !stats.keys.is_empty();
            let (v_name, v) = values.unwrap_or_else(|| {
                ("cost".to_owned(), events.iter().map(|e| e.cost.to_string()).collect())
            });
            Drawn {
                t: events.iter().map(|e| ms(e) - start).collect(),
                // Key numbers are u32 (see `input::keys::slot`).
                k: keyed.then(|| {
                    events.iter().map(|e| u32::try_from(slot(e.key)).unwrap_or(u32::MAX)).collect()
                }),
                keys: stats.keys.names().collect(),
                v,
                v_name,
            }
        });
        TimelineData { start, end, events: drawn, levels }
    }
}
