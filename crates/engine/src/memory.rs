//! The in-memory engine: every limiter runs in this process, with a small state per key.

use anyhow::{Result, bail};

use super::by_key::Later;
use super::recorder::{Recorder, Settings};
use crate::Engine;
use crate::input::catalog::{Event, slot};
use crate::limiter::AnyPerKey;
use crate::live::{self, Live, ONE_LIMIT};

/// Decides every event at once, with limiters held in memory: one rule per setting, and
/// each key's state for each, made as keys appear.
#[derive(Clone, Debug)]
pub struct Memory {
    settings: Vec<Settings>,
    lanes: Vec<AnyPerKey>,
    /// Whether no limiter's keys share anything (nginx's share a zone).
    alone: bool,
    /// If it decides after reading, key by key: the events kept till then.
    later: Option<Later>,
}

impl Memory {
    /// Returns an engine with one limiter per settings, for every key.
    pub fn new(settings: &[Settings]) -> Memory {
        let lanes = settings.iter().map(Settings::per_key);
        let alone = settings.iter().all(|s| !s.algorithm.has_zone());
        Memory { settings: settings.to_vec(), lanes: lanes.collect(), alone, later: None }
    }
}

impl Engine for Memory {
    #[inline]
    fn push(&mut self, event: Event, recorder: &mut Recorder) -> Result<()> {
        if let Some(later) = &mut self.later {
            return later.keep(event);
        }
        let Event { time, key, cost } = event;
        let index = slot(key);
        // One limiter is the common case (replay): its one decision needs no iterator.
        if let [lane] = &mut self.lanes[..] {
            return recorder.record(event, [lane.decide(index, time, cost)]);
        }
        recorder.record(event, self.lanes.iter_mut().map(|l| l.decide(index, time, cost)))
    }

    fn flush(&mut self, recorder: &mut Recorder) -> Result<()> {
        match self.later.take() {
            Some(later) => recorder.record_by_key(later.decide(&self.settings)),
            None => Ok(()),
        }
    }

    /// Keys that share nothing are decided key by key after reading, where each key's
    /// events are read in order and no state is kept between keys (`Later`).
    fn decide_by_key(&mut self, threads: usize) -> bool {
        if self.alone {
            self.later = Some(Later::new(threads));
        }
        self.alone
    }

    fn live(self) -> Result<Box<dyn Live>> {
        let [settings] = &self.settings[..] else { bail!(ONE_LIMIT) };
        Ok(live::in_memory(settings))
    }
}
