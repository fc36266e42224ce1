//! The in-memory engine: every limit runs in this process, with a small state per key.

use anyhow::{Result, anyhow};

use super::by_key::Later;
use super::layered::Limits;
use crate::input::catalog::{Event, KeyNotes};
use crate::live::{Live, LiveMemory};
use crate::{Engine, Policy, Record};

/// Decides every event at once, with the limits of a policy held in memory ([`Limits`]):
/// one rule per limit, and each key's state for each, made as keys appear. Side by side,
/// each limit decides alone; all or nothing, every layer is asked and all are charged or
/// none.
#[derive(Clone, Debug)]
pub struct Memory {
    limits: Limits,
    /// Whether no limit's keys share anything (nginx's share a zone).
    alone: bool,
    /// If it decides after reading, key by key: the events kept till then.
    later: Option<Later>,
    /// The empty key's number, as the reading tells it.
    empty: KeyNotes,
}

impl Memory {
    /// Returns an engine deciding as `policy` says, its limits in their first state, or
    /// why they make no policy.
    pub fn new(policy: Policy<'_>) -> Result<Memory> {
        let limits = Limits::new(policy)?;
        let alone = limits.layers().all(|l| !l.settings.algorithm.has_zone());
        Ok(Memory { limits, alone, later: None, empty: KeyNotes::default() })
    }
}

impl Engine for Memory {
    #[inline]
    fn push<R: Record>(&mut self, event: Event, record: &mut R) -> Result<()> {
        if let Some(later) = &mut self.later {
            return later.keep(event);
        }
        // Side by side, each decision goes to the record as it is made.
        if let Some(each) = self.limits.side_by_side(event) {
            return record.decided(event, 0, each.map(|decision| (event, decision)));
        }
        let decided = self.limits.decide(event);
        record.decided(event, decided.refused, decided.each.iter().copied())
    }

    fn flush<R: Record>(&mut self, record: &mut R) -> Result<()> {
        let Some(later) = self.later.take() else { return Ok(()) };
        let settings: Vec<_> = self.limits.layers().map(|layer| layer.settings).collect();
        let recorder = record.side_by_side();
        let recorder = recorder.ok_or_else(|| anyhow!("layers are decided as read"))?;
        recorder.record_by_key(later.decide(&settings, &self.empty))
    }

    /// Keys that share nothing, side by side, are decided key by key after reading, where
    /// each key's events are read in order and no state is kept between keys (`Later`).
    fn decide_by_key(&mut self, threads: usize) -> bool {
        let can = self.alone && !self.limits.all_or_nothing();
        if can {
            self.later = Some(Later::new(threads));
        }
        can
    }

    fn share_key_notes(&mut self, empty: &KeyNotes) {
        self.limits.share_key_notes(empty);
        self.empty = empty.clone();
    }

    fn live(self) -> Result<Box<dyn Live>> {
        Ok(Box::new(LiveMemory::of(self.limits)?))
    }
}
