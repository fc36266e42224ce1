//! A job, resolved once: its input, its limiters, where they run, and how its reports name
//! keys. `replay`, `compare` and `report` replay one.

use anyhow::{Result, bail};

use super::args::JobArgs;
use super::config::Input;
use crate::engine::Backend;
use crate::engine::recorder::Settings;
use crate::input::asked::Names;

/// A replay job: what the flags settled, ready to run.
pub struct Job {
    /// The input, and what to read from it.
    pub input: Input,
    /// The limiters, one per lane.
    pub settings: Vec<Settings>,
    /// Where they run.
    pub backend: Backend,
    /// How many keys reports list (0 for all).
    pub top: usize,
}

impl JobArgs {
    /// Settles the input: with a key column if limits are per key or a fleet routes by one.
    pub fn input(&self) -> Result<Input> {
        let key = self.keys.key.as_deref();
        self.input.resolve(self.fleet.asked().key_column(key, Names::Flags))
    }

    /// Settles the job of limiters with `settings` over `input`. With `modes`, one
    /// limiter on a fleet with no `--share` runs in every share mode side by side.
    pub fn job(&self, input: Input, settings: Vec<Settings>, modes: bool) -> Result<Job> {
        let algorithms = settings.iter().map(|s| s.algorithm);
        if let Some(why) =
            crate::engine::limit::cost_refused(&input.read.cost, algorithms, "--cost")
        {
            bail!(why);
        }
        let key = self.keys.key.as_deref();
        let (settings, fleet) = self.fleet.asked().plan(settings, key, modes, Names::Flags)?;
        let backend = Backend::new(&settings, self.remote.target()?.as_ref(), fleet)?;
        Ok(Job { input, settings, backend, top: self.keys.top })
    }
}
