//! The in-memory engine: every limiter runs in this process, one set per key.

use anyhow::Result;

use super::Engine;
use super::recorder::{Recorder, Settings};
use crate::input::catalog::{Key, slot};
use crate::limiter::{AnyLimiter, Limiter};
use crate::units::time::Timestamp;

/// Decides every event at once, with limiters held in memory: one per setting for each key.
#[derive(Clone, Debug)]
pub struct Memory {
    settings: Vec<Settings>,
    keys: Vec<Vec<AnyLimiter>>,
}

impl Memory {
    /// Returns an engine with one limiter per settings for each key, made as keys appear.
    pub fn new(settings: &[Settings]) -> Memory {
        Memory { settings: settings.to_vec(), keys: Vec::new() }
    }

    #[cold]
    fn add_keys(&mut self, key: usize) {
        while self.keys.len() <= key {
            let build = |s: &Settings| s.algorithm.build(s.rate, s.burst);
            self.keys.push(self.settings.iter().map(build).collect());
        }
    }
}

impl Engine for Memory {
    #[inline]
    fn push(&mut self, time: Timestamp, key: Key, recorder: &mut Recorder) -> Result<()> {
        let index = slot(key);
        if index >= self.keys.len() {
            self.add_keys(index);
        }
        recorder.record(time, key, self.keys[index].iter_mut().map(|l| l.decide(time)));
        Ok(())
    }

    fn flush(&mut self, _recorder: &mut Recorder) -> Result<()> {
        Ok(())
    }
}
