//! A replay of one limit in parts (Spark's partitions), settled from `ratelimit replay`'s
//! flags: by key, or one stream in ranges of time.

use anyhow::{Result, bail};

use super::parse;
use crate::cmd::Cli;
use crate::engine::recorder::Settings;
use crate::input::catalog::{Rows, Source};

/// A replay of one limit in parts, settled from `ratelimit replay`'s flags.
pub(super) struct Plan {
    pub(super) settings: Settings,
    pub(super) replay: crate::cmd::replay::ReplayArgs,
}

impl Plan {
    /// Settles `args`, for a replay by key.
    pub(super) fn of(args: &[String]) -> Result<Plan> {
        let plan = Plan::of_limit(args)?;
        if plan.replay.job.keys.key.is_none() {
            bail!("a replay in parts holds whole keys: give --key");
        }
        Ok(plan)
    }

    /// Settles `args`, for a range of one stream read from `given`.
    pub(super) fn of_range(
        args: &[String],
        given: Source,
    ) -> Result<(Plan, crate::cli::config::Input)> {
        let mut plan = Plan::of_limit(args)?;
        if plan.replay.job.keys.key.is_some() {
            bail!("a range of one stream has no --key");
        }
        let input = plan.read(given)?;
        Ok((plan, input))
    }

    /// Settles the input, reading `given`.
    pub(super) fn read(&mut self, given: Source) -> Result<crate::cli::config::Input> {
        self.replay.job.input.given = Some(given);
        self.replay.job.input()
    }

    /// Settles `args`, for a replay of one limit, by key or not.
    pub(super) fn of_limit(args: &[String]) -> Result<Plan> {
        let cli: Cli = parse(args)?;
        let crate::cmd::Command::Replay(replay) = cli.command else { bail!("parts are replay's") };
        let (Some(algorithm), Some(limit)) = (replay.algo, replay.size.limit()) else {
            bail!("a replay in parts is of one limit: --algo and --rate, no --limit")
        };
        if algorithm.has_zone() && replay.job.keys.key.is_some() {
            bail!("{algorithm}'s keys share its zone: replay them on one machine");
        }
        if !replay.job.remote.redis.is_empty() || replay.job.fleet.servers.is_some() {
            bail!("a replay in parts runs in memory, on one server");
        }
        let settings = limit.size.settings(algorithm, limit.window, true)?;
        Ok(Plan { settings, replay })
    }
}

/// What a part tells (a part of the keys, or a stretch of one stream): its summary (a line
/// of JSON), and for each of its rows, in their order, the decision, the event's time in
/// µs and its cost (`None` for a row that made no event).
#[derive(Debug)]
pub struct Part {
    /// The part's figures, for [`merge_parts`](super::replay_parts::merge_parts).
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
        let in_order = crate::engine::decisions::in_row_order(rows, &decided, source);
        Part {
            summary,
            passed: in_order.iter().map(|d| d.map(|(passed, _, _)| passed)).collect(),
            times: in_order.iter().map(|d| d.map(|(_, time, _)| time)).collect(),
            costs: in_order.iter().map(|d| d.map(|(_, _, cost)| cost)).collect(),
        }
    }
}
