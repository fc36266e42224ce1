//! The in-memory engine: every limit runs in this process, with a small state per key.

use std::convert::Infallible;

use anyhow::{Result, anyhow, bail};

use super::by_key::Later;
use super::layered::{self, Limits};
use crate::input::catalog::{Event, slot};
use crate::limiter::Decision;
use crate::live::{self, Live, ONE_LIMIT};
use crate::{Engine, Policy, Record};

/// Decides every event at once, with the limits of a policy held in memory: one rule per
/// limit, and each key's state for each, made as keys appear. Side by side, each limit
/// decides alone; all or nothing, every layer is asked and all are charged or none.
#[derive(Clone, Debug)]
pub struct Memory {
    limits: Limits,
    /// Whether an event passes only if every limit admits it.
    all_or_nothing: bool,
    /// Whether no limit's keys share anything (nginx's share a zone).
    alone: bool,
    /// If it decides after reading, key by key: the events kept till then.
    later: Option<Later>,
    /// All or nothing: each layer's view of the event and its decision, for each event.
    each: Vec<(Event, Decision)>,
}

impl Memory {
    /// Returns an engine deciding as `policy` says, its limits in their first state.
    pub fn new(policy: Policy<'_>) -> Memory {
        let layers = policy.layers();
        let alone = layers.iter().all(|l| !l.settings.algorithm.has_zone());
        Memory {
            limits: Limits::new(&layers),
            all_or_nothing: policy.all_or_nothing(),
            alone,
            later: None,
            each: Vec::with_capacity(layers.len()),
        }
    }
}

impl Engine for Memory {
    #[inline]
    fn push<R: Record>(&mut self, event: Event, record: &mut R) -> Result<()> {
        if let Some(later) = &mut self.later {
            return later.keep(event);
        }
        let Memory { limits, each, .. } = self;
        if self.all_or_nothing {
            let refused = limits.refusals(event);
            each.clear();
            limits.settle(event, refused, |_, seen, decision| {
                each.push((seen, decision));
                Ok::<(), Infallible>(())
            })?;
            return record.decided(event, refused, each.iter().copied());
        }
        let Event { time, key, cost } = event;
        let index = slot(key);
        // One limiter is the common case (replay): its one decision needs no iterator.
        if let [(lane, _)] = &mut limits.each[..] {
            return record.decided(event, 0, [(event, lane.decide(index, time, cost))]);
        }
        let decisions = limits.each.iter_mut().map(|(l, _)| (event, l.decide(index, time, cost)));
        record.decided(event, 0, decisions)
    }

    fn flush<R: Record>(&mut self, record: &mut R) -> Result<()> {
        let Some(later) = self.later.take() else { return Ok(()) };
        let settings: Vec<_> = self.limits.each.iter().map(|(_, layer)| layer.settings).collect();
        let recorder = record.side_by_side();
        let recorder = recorder.ok_or_else(|| anyhow!("layers are decided as read"))?;
        recorder.record_by_key(later.decide(&settings))
    }

    /// Keys that share nothing, side by side, are decided key by key after reading, where
    /// each key's events are read in order and no state is kept between keys (`Later`).
    fn decide_by_key(&mut self, threads: usize) -> bool {
        let can = self.alone && !self.all_or_nothing;
        if can {
            self.later = Some(Later::new(threads));
        }
        can
    }

    fn live(self) -> Result<Box<dyn Live>> {
        if self.all_or_nothing {
            return Ok(layered::live(self.limits));
        }
        let [(_, layer)] = &self.limits.each[..] else { bail!(ONE_LIMIT) };
        Ok(live::in_memory(&layer.settings))
    }
}
