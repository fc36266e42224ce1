//! The results commands print. Their JSON form is a documented contract; the table and the
//! CSV are views of the same values.

use schemars::JsonSchema;
use serde::Serialize;

use crate::limiter::{Algorithm, Waits};
use crate::seconds::{optional_seconds, seconds, wide_seconds};
use crate::sizing::curve::ExactRate;
use crate::sizing::min_bucket::{Lossless, Stretch};
use crate::sizing::quantile::{Percent, Quantiles};
use crate::sizing::window::Busiest;
use crate::units::rate::Rate;
use crate::units::time::{Span, Timestamp};

/// The JSON contract's version: raised when a field of any output moves, is renamed, is
/// removed or changes meaning (adding a field does not raise it). Version 2: a keyed
/// result keeps `min_bucket` (and `span`) where the unkeyed one has it, the worst key's.
pub const CONTRACT: u32 = 2;

/// What one replay found: what passed and was dropped, the busiest windows, the smallest
/// lossless bucket, and whether the limiter kept its promise.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct LimiterReport {
    /// The input's name: its path, `<stdin>` or `<sample>`.
    pub input: String,
    /// With `--key`, in a row of `keys.top`: the key this row is of.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The limiter, by its `--algo` name: one of our own, or a model of a system (`nginx`,
    /// `haproxy`, `traefik`, …).
    pub algorithm: Algorithm,
    /// The rate, N per period, the period in the largest exact unit (`5/60m` is written
    /// `5/h`).
    pub rate: Rate,
    /// The burst b; for `nginx`, its `burst=` (b − 1, the requests beyond the first);
    /// `null` for a limiter without one.
    pub burst: Option<u64>,
    /// `nginx` only: when it serves what it admits, as nginx writes it: `delay=D`,
    /// `nodelay` or `dry-run`, or `delay=D, dry-run` and `nodelay, dry-run` for a dry run
    /// beside `limit_req`'s own; then `, zone=SIZE` for a zone other than 10m.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub delay: Option<String>,
    /// The events read, after the filters (`--since`, `--until`, `--where`).
    pub events: u64,
    /// The events the limiter passed (admitted, for a queue).
    pub passed: u64,
    /// The events the limiter dropped.
    pub dropped: u64,
    /// With costs (some event costs other than 1): what the events cost, in units.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub units: Option<Units>,
    /// With costs: the events that cost more than the limiter ever holds, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub too_big: Option<TooBig>,
    /// The most passed events in any half-open window of the chosen length (`--window`,
    /// default the rate's period); with costs, the window that holds the most units.
    pub busiest_window: Window,
    /// The same as `busiest_window`, over every event, passed or not: the demand.
    pub demand_busiest_window: Window,
    /// The smallest lossless bucket at the rate; with `--key`, the largest any key needs
    /// (each key has a bucket of its own), and `worst_key` names that key.
    pub min_bucket: u64,
    /// With `--key`: the key that needs the largest lossless bucket (the first by name of
    /// those that need as much), and its need.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worst_key: Option<WorstKey>,
    /// `replay --algo nginx`: the smallest value of the system's own setting (nginx's
    /// `burst=`) with which it, in its own arithmetic and zone, would have refused none of
    /// the events (with `--key`, of any key). Left out for an input read once (standard
    /// input).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_size: Option<SystemSize>,
    /// With `--key`, for a limiter whose system lets a request with an empty key through
    /// uncounted (`nginx`, `haproxy`, `envoy-ratelimit`): how many events it so let
    /// through. They are among `passed`, and the empty key needs no bucket there: it is
    /// left out of `worst_key`, the keys' quantiles and the promise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_accounted: Option<u64>,
    #[serde(flatten)]
    pub queue: Option<Queue>,
    /// What the limiter promises of the events it passes, and whether it held on this
    /// input; with `--key`, whether it held for every key.
    pub promise: Promise,
    /// With `--servers`: the fleet, and each server's share of the events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fleet: Option<Box<FleetReport>>,
    /// With `--key`: the keys, and the first of them ranked, each as a row.
    #[serde(rename = "keys", skip_serializing_if = "Option::is_none")]
    pub by_key: Option<KeyList<LimiterReport>>,
}

/// With `--key`, the key that needs the largest lossless bucket (the first by name of
/// those that need as much), and its need.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct WorstKey {
    /// The key.
    pub key: String,
    /// The smallest lossless bucket that key needs.
    pub min_bucket: u64,
    /// For `min-bucket`: the stretch of its events that needs it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span: Option<Stretch>,
}

/// A fleet of servers that one limiter ran on (`--servers`): how it was shared, what each
/// server saw, and what one limiter seeing every event would have passed. The report's
/// own figures are the fleet's, over all its servers.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct FleetReport {
    /// How many servers shared the events (`--servers`).
    pub servers: u32,
    /// How events were sent to servers: `round-robin`, `random` (seeded) or `hash:COLUMN`.
    pub route: String,
    /// With `--route random`: the seed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// How the servers shared the limit: `local` (each the whole limit), `split` (each its
    /// share) or `synced` (each syncing its count at `sync_s`).
    pub share: &'static str,
    /// With `--share synced`: how often, in seconds, the servers synced their counts.
    #[serde(serialize_with = "optional_seconds")]
    #[schemars(with = "Option<f64>")]
    pub sync_s: Option<Span>,
    /// The limit each server ran: the whole one, or its share with `split`.
    pub server_rate: Rate,
    /// The burst each server ran, or `null` for a limiter without one.
    pub server_burst: Option<u64>,
    /// Each server's events, in server order.
    pub by_server: Vec<ServerCount>,
    /// What one limiter, seeing every event, passed.
    pub alone_passed: u64,
    /// The fleet's passed events over `alone_passed`, to three decimals.
    pub over_admission: Option<f64>,
}

/// One server's events, and what it passed and dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ServerCount {
    /// The events the server saw.
    pub events: u64,
    /// The events it passed.
    pub passed: u64,
    /// The events it dropped.
    pub dropped: u64,
}

pub use crate::limiter::promise::Promise;
pub use crate::live_check::{Check, LayerCheck, LayeredCheck};
pub use crate::system_size::SystemSize;

/// The busiest window of a replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Window {
    /// The window's length, in seconds.
    #[serde(serialize_with = "seconds")]
    #[schemars(with = "f64")]
    pub length_s: Span,
    /// The time of the window's first event (RFC 3339, UTC); `null` with no events.
    pub start: Option<Timestamp>,
    /// The events in the window.
    pub count: u64,
    /// With costs: the units in the window, which is the one that holds the most.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub units: Option<u128>,
}

impl Window {
    /// Returns the report of a busiest window; `weighted`, with its units.
    pub fn of(busiest: Busiest, weighted: bool) -> Window {
        Window {
            length_s: busiest.length,
            start: busiest.start,
            count: busiest.count,
            units: weighted.then_some(busiest.units),
        }
    }
}

/// What a weighted run's events cost, in units.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Units {
    /// What every event cost, in units.
    pub events: u128,
    /// What the passed events cost.
    pub passed: u128,
    /// What the dropped events cost.
    pub dropped: u128,
}

/// The events that cost more than a limiter ever holds (its burst, or N): they never pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct TooBig {
    /// How many events cost more than the limiter ever holds (its burst, or N); they never
    /// pass.
    pub events: u64,
    /// The first of them.
    pub first: Heavy,
}

/// One event and its cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Heavy {
    /// The event's time (RFC 3339, UTC).
    pub time: Timestamp,
    /// Its cost, in units.
    pub cost: u64,
}

/// How long a leaky queue's admitted events waited, to the nearest microsecond.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Queue {
    /// The admitted events that waited at all (a leaky queue, and nginx unless `nodelay` or
    /// dry run).
    pub delayed: u64,
    /// The longest wait of an admitted event, in seconds, to the microsecond.
    // Kept in microseconds: waits can pass what a `Span` holds.
    #[serde(serialize_with = "wide_seconds")]
    #[schemars(with = "f64")]
    pub max_wait_s: i128,
    /// The mean wait over admitted events (those that did not wait count as 0), in
    /// seconds, to the microsecond.
    #[serde(serialize_with = "wide_seconds")]
    #[schemars(with = "f64")]
    pub mean_wait_s: i128,
}

impl From<Waits> for Queue {
    fn from(waits: Waits) -> Queue {
        Queue {
            delayed: waits.delayed,
            max_wait_s: waits.longest_micros(),
            mean_wait_s: waits.mean_micros(),
        }
    }
}

/// The smallest lossless bucket at one rate. With keys, it is the largest any key needs,
/// `key` names that key, and `keys` lists them, the largest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct MinBucket {
    /// The rate, N per period, the period in the largest exact unit.
    pub rate: Rate,
    /// In a row of `keys.top`: the key this row is of.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The smallest lossless bucket and its stretch; with `--key`, the worst key's (the
    /// largest any key needs), and `worst_key` names that key.
    #[serde(flatten)]
    pub need: Need,
    /// With `--key`: the key that needs the largest bucket.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worst_key: Option<WorstKey>,
    /// With `--cover`: the burst that keeps that share of the keys whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cover: Option<Box<Cover>>,
    /// With `--key`: the keys, and the first of them ranked, each as a row.
    #[serde(rename = "keys", skip_serializing_if = "Option::is_none")]
    pub by_key: Option<KeyList<MinBucket>>,
    /// With `--for SYSTEM`: the smallest value of the system's own setting with which it,
    /// in its own arithmetic, refuses none of the events at this rate (with `--key`, of
    /// any key): nginx's `burst=`, HAProxy's `gt N`, Traefik's `burst`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_size: Option<SystemSize>,
}

/// The smallest lossless bucket at a rate, and a stretch of events that needs it (`None`
/// for no events).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Need {
    /// The smallest burst with which a token bucket or GCRA at this rate drops nothing (0
    /// for no events).
    pub min_bucket: u64,
    /// The first and last event of a stretch of consecutive events that a bucket one
    /// smaller could not pass whole, and how many it holds; `null` for no events.
    pub span: Option<Stretch>,
}

/// The smallest burst with which at least `share` of the keys lose nothing at a rate: the
/// nearest-rank quantile of the keys' own smallest buckets.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Cover {
    /// The share of keys asked for (`--cover`), in percent.
    pub share: Percent,
    /// The smallest burst with which at least that share of the keys lose nothing.
    pub min_bucket: u64,
    /// The keys that lose nothing with that burst, and the events they carry.
    pub keys_covered: usize,
    /// The events of the keys covered.
    pub events_covered: u64,
    /// All events, of all keys.
    pub events: u64,
    /// The keys that need more, and the few that need the most.
    pub left_out: LeftOut,
}

/// The keys a cover leaves out: how many, and the first few by need.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct LeftOut {
    /// How many keys need more than the cover's burst.
    pub count: usize,
    /// The keys that need the most, the largest need first.
    pub top: Vec<KeyNeed>,
}

/// One key's drops by each limiter of a keyed compare, in the order of its reports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct KeyDrops {
    /// The key.
    pub key: String,
    /// Its events.
    pub events: u64,
    /// What each limiter dropped of them, in the order of the reports.
    pub dropped: Vec<u64>,
}

/// One key's need: its smallest lossless bucket, and its events.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct KeyNeed {
    /// The key.
    pub key: String,
    /// Its smallest lossless bucket.
    pub min_bucket: u64,
    /// Its events.
    pub events: u64,
}

impl From<Lossless> for MinBucket {
    fn from(found: Lossless) -> MinBucket {
        MinBucket {
            rate: found.rate,
            key: None,
            need: Need { min_bucket: found.min_bucket, span: found.stretch },
            worst_key: None,
            cover: None,
            by_key: None,
            system_size: None,
        }
    }
}

/// One piece of the burst–rate curve: from rate `from` up to `to`, the stretch of `events`
/// events spanning `span_s` needs the most burst, `events − r·span_s`.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct CurveSegment {
    /// The piece's first rate, exact.
    pub from: ExactRate,
    /// `from`, per hour, as a decimal for reading.
    pub from_per_hour: f64,
    /// The rate where the next piece starts, exact; `null` for the last piece.
    pub to: Option<ExactRate>,
    /// `to`, per hour, as a decimal; `null` for the last piece.
    pub to_per_hour: Option<f64>,
    /// The smallest lossless bucket at `from`, in units (events when each costs 1); it
    /// falls by `r·span_s` as the rate r rises to `to`.
    pub min_bucket: u64,
    /// The events of the stretch that sets the burst on this piece.
    pub events: u64,
    /// The stretch's length, in seconds.
    #[serde(serialize_with = "seconds")]
    #[schemars(with = "f64")]
    pub span_s: Span,
    /// The time of the stretch's first event.
    pub start: Timestamp,
    /// The time of its last event.
    pub end: Timestamp,
}

/// The smallest lossless rate for one burst.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct MinRate {
    /// The burst asked for.
    pub burst: u64,
    /// The least lossless rate, exact; `null` when no rate will do: more than `burst`
    /// events share one instant.
    pub rate: Option<ExactRate>,
    /// `rate`, per hour, as a decimal for reading; `null` as `rate` is.
    pub per_hour: Option<f64>,
    /// The stretch of events that forces the rate; `null` when the rate is zero.
    pub span: Option<Stretch>,
    /// With `--key`: the key that needs the highest rate (the first by name of those that
    /// need as much, or one for which no rate will do). Each key has a bucket of its own,
    /// so `rate` is that key's, and `span` its stretch: at a lower rate it loses events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worst_key: Option<RateKey>,
}

/// With `--key`, the key that needs the highest lossless rate.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct RateKey {
    /// The key.
    pub key: String,
}

/// The keys of a keyed report (`--key`), in JSON its `keys`: the column they come from,
/// how many there are, how figures spread across all of them, and the first of them
/// ranked, each a row with its `key` (`--top` keeps how many).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct KeyList<T> {
    /// The column the keys come from (`--key`).
    pub column: String,
    /// How many keys there are.
    pub count: usize,
    /// How each key's figures spread across all keys; `null` for no keys.
    pub quantiles: Option<KeyQuantiles>,
    /// The first keys ranked (`--top` of them; most dropped first, or the largest need
    /// first), each a row of the same fields with its `key`.
    pub top: Vec<T>,
}

/// Across all keys, by nearest rank: each key's smallest lossless bucket and, for a
/// limiter's replay, each key's dropped events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct KeyQuantiles {
    /// Each key's smallest lossless bucket, by nearest rank across all keys.
    pub min_bucket: Quantiles,
    /// For a replay: each key's dropped events, by nearest rank across all keys.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dropped: Option<Quantiles>,
}

/// A report that, with `--key`, lists its keys, each a report of the same kind.
pub trait Keyed: Sized {
    /// Returns the keys, if the report has them.
    fn by_key(&self) -> Option<&KeyList<Self>>;
}

impl Keyed for LimiterReport {
    fn by_key(&self) -> Option<&KeyList<LimiterReport>> {
        self.by_key.as_ref()
    }
}

impl Keyed for MinBucket {
    fn by_key(&self) -> Option<&KeyList<MinBucket>> {
        self.by_key.as_ref()
    }
}

/// One CSV row of reports that may list keys: a report without its ranked keys (but with
/// the key column, count and quantiles), or one of those keys. It borrows the report, so
/// that a million rows cost a row at a time, as they are written.
pub enum CsvRow<'a, T> {
    /// A report, its `keys.top` left out.
    Report(&'a T),
    /// One of its ranked keys.
    Key(&'a T),
}

impl<T: Serialize> Serialize for CsvRow<'_, T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            CsvRow::Key(key) => key.serialize(serializer),
            CsvRow::Report(report) => {
                let mut row = serde_json::to_value(report).map_err(serde::ser::Error::custom)?;
                if let Some(keys) = row.get_mut("keys").and_then(|k| k.as_object_mut()) {
                    keys.shift_remove("top");
                }
                row.serialize(serializer)
            }
        }
    }
}

/// Returns the CSV rows of reports: each report without its ranked keys, then each of
/// those keys.
pub fn csv_rows<T: Keyed + Serialize>(reports: &[T]) -> Vec<CsvRow<'_, T>> {
    let mut rows = Vec::new();
    for report in reports {
        rows.push(CsvRow::Report(report));
        rows.extend(report.by_key().into_iter().flat_map(|l| &l.top).map(CsvRow::Key));
    }
    rows
}
