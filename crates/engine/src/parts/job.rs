//! A replay in parts (Spark's and Dask's partitions), asked once on the driver and sent to
//! every part: its policy, what to read, and how it reports; and what a part tells.

use anyhow::{Result, bail};

use crate::input::asked::{Asked, Names};
use crate::input::catalog::{ReadOptions, Rows, Source};
use crate::input::progress::Stop;
use crate::limits::LimitPolicy;
use crate::recorder::Settings;
use crate::replay::{ReplayOptions, Replayed};
use crate::units::time::Span;

/// A replay in parts, as asked: settled again on each part's rows, which it reads as
/// `asked` says, its options named as keywords (`time_format=`). Parts run in memory, on
/// one server.
#[derive(Clone, Debug)]
pub struct Job {
    /// One limit, or layers all or nothing.
    pub policy: LimitPolicy,
    /// What to read, as asked (the key and cost columns are the policy's).
    pub asked: Asked,
    /// The length of the busiest windows (each limit's period if `None`).
    pub window: Option<Span>,
    /// How many keys the report ranks (0 for all).
    pub top: usize,
    /// Whether envoy-ratelimit layers leave a refused event's hits uncounted in the limits
    /// it is not over.
    pub stop_counting: bool,
}

impl Job {
    /// A replay in parts of `policy`, reading as `asked` says, its report as a replay's by
    /// default: 10 keys ranked, each limit's busiest windows its period long.
    pub fn new(policy: LimitPolicy, asked: Asked) -> Job {
        Job { policy, asked, window: None, top: 10, stop_counting: false }
    }

    /// Whether the policy is one limit per key.
    pub fn keyed(&self) -> bool {
        matches!(&self.policy, LimitPolicy::One(limit) if limit.key.is_some())
    }

    /// The one limit's settings, for a replay in parts: by key, or one stream in ranges.
    pub(super) fn one(&self) -> Result<Settings> {
        let LimitPolicy::One(limit) = &self.policy else {
            bail!("a replay in parts of one limit is given one Limit, not a Policy")
        };
        if limit.algorithm.has_zone() && limit.key.is_some() {
            bail!("{}'s keys share its zone: replay them on one machine", limit.algorithm);
        }
        Ok(limit.settings(self.window, true, "")?)
    }

    /// The one limit's settings, for a replay by key.
    pub(super) fn by_key(&self) -> Result<Settings> {
        if !self.keyed() {
            bail!("a replay in parts holds whole keys: give key=");
        }
        self.one()
    }

    /// The one limit's settings, for a range of one stream.
    pub(super) fn of_range(&self) -> Result<Settings> {
        if self.keyed() {
            bail!("a range of one stream has no key=");
        }
        self.one()
    }

    /// Settles what to read from `source`: keyed and weighed as the policy says.
    pub fn read(&self, source: &Source) -> Result<ReadOptions> {
        super::whole_seconds_together(self.policy.settle(&self.asked, source, Names::Keywords)?)
    }

    /// Replays all of `source` in one pass, as the engine's [`replay`](crate::replay::replay)
    /// does, keeping each row's decision if `decisions`: what the parts come to where no
    /// cut splits them. Its reads stop, with an error, once `stop` is raised.
    pub fn replay(
        &self,
        source: &Source,
        decisions: bool,
        stop: Stop,
    ) -> crate::error::Result<Replayed> {
        let read = ReadOptions { stop, ..self.read(source)? };
        let options = ReplayOptions {
            window: self.window,
            top: self.top,
            decisions,
            stop_counting_over_limit: self.stop_counting,
            ..ReplayOptions::default()
        };
        crate::replay::replay(&self.policy, source, &read, &options)
    }
}

/// What a part tells (a part of the keys, or a stretch of one stream): its summary (a line
/// of JSON), and for each of its rows, in their order, the decision, the event's time in
/// µs and its cost (`None` for a row that made no event).
#[derive(Debug)]
pub struct Part {
    /// The part's figures, for [`merge_parts`](super::merge_parts).
    pub summary: String,
    /// Whether each row passed.
    pub passed: Vec<Option<bool>>,
    /// Each row's event time, in µs from 1970.
    pub times: Vec<Option<i64>>,
    /// Each row's event cost.
    pub costs: Vec<Option<u64>>,
}

impl Part {
    /// Returns a part with `summary`, and each of `rows`' (in time order) decision in
    /// `trace`, time and cost, put in the rows' order as `source` holds them.
    pub(super) fn of(summary: String, rows: &Rows, trace: &[bool], source: &Source) -> Part {
        let decided: Vec<(bool, i64, u64)> = (rows.iter().zip(trace))
            .map(|((event, _), &passed)| (passed, event.time.as_micros(), event.cost))
            .collect();
        let in_order = crate::decisions::in_row_order(rows, &decided, source);
        Part {
            summary,
            passed: in_order.iter().map(|d| d.map(|(passed, _, _)| passed)).collect(),
            times: in_order.iter().map(|d| d.map(|(_, time, _)| time)).collect(),
            costs: in_order.iter().map(|d| d.map(|(_, _, cost)| cost)).collect(),
        }
    }
}
