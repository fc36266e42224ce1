//! `recommend` in parts of whole keys (Spark's buckets): each part tells its keys'
//! demand, then their needs counted by size, then what the bursts refuse of them; the
//! driver merges each stage and answers as one run would, exactly.

use anyhow::{Result, bail};

use super::told::{self, Told};
use crate::frontier::{Grouped, Weigh};
use crate::input::asked::{Asked, Names};
use crate::input::catalog::{self, Source};
use crate::key_summaries::{Demand, Needs, Refusals};
use crate::lossless::Kept;
use crate::recommend::{self, MAX_GRID, RecommendAsk};
use crate::units::rate::Rate;

/// A `recommend` asked of parts: what to find, the key column, and what to read.
#[derive(Clone, Debug)]
pub struct RecommendParts {
    /// What to find; no cost and no system, which need every key's events at once.
    pub ask: RecommendAsk,
    /// The key column.
    pub key: String,
    /// What to read, as asked.
    pub asked: Asked,
}

/// The stage a part is asked for.
#[derive(Clone, Debug)]
pub enum Stage {
    /// The keys' demand, to spread rates over.
    Demand,
    /// The keys' needs at these rates.
    Needs(Vec<Rate>),
    /// What these bursts at these rates refuse.
    Refusals(Vec<Rate>, Vec<u64>),
}

impl Told for Demand {
    const KIND: &'static str = "recommend-demand";
}

impl Told for Needs {
    const KIND: &'static str = "recommend-needs";
}

impl Told for Refusals {
    const KIND: &'static str = "recommend-refusals";
}

impl RecommendParts {
    /// Checks what is asked, on the driver, before any part is read.
    pub fn check(&self) -> crate::error::Result<()> {
        if self.ask.system.is_some() {
            Err(anyhow::anyhow!("system=: on parts, recommend writes no system's configuration"))?;
        }
        if self.asked.cost.is_some() {
            Err(anyhow::anyhow!("cost=: on parts, recommend finds the requests' limit alone"))?;
        }
        recommend::check_window(&self.ask, Names::Keywords)?;
        if self.ask.rates.len() > MAX_GRID {
            Err(anyhow::anyhow!("{} rates are asked; at most {MAX_GRID}", self.ask.rates.len()))?;
        }
        Ok(())
    }

    /// Reads `given` (whole keys) and returns what it tells at `stage`, as a line.
    pub fn part(&self, given: Source, stage: &Stage) -> crate::error::Result<String> {
        Ok(self.told(given, stage)?)
    }

    /// [`part`](RecommendParts::part), its errors the internals'.
    fn told(&self, given: Source, stage: &Stage) -> Result<String> {
        let read = self.asked.settle(&given, Some((&self.key, "key=")), Names::Keywords)?;
        let read = super::whole_seconds_together(read)?;
        let (Kept(kept, _), stats) =
            catalog::read_events(&given, &read, || Kept::new("recommend"))?;
        let (groups, events) = kept.into_grouped(stats.keys.len());
        let grouped =
            Grouped { groups: &groups, events: &events, table: &stats.keys, threads: read.threads };
        match stage {
            Stage::Demand => told::write(&grouped.demand(Weigh::Requests)),
            Stage::Needs(rates) => {
                told::write(&grouped.needs_summary(rates, Weigh::Requests, self.ask.window).0)
            }
            Stage::Refusals(rates, bursts) => {
                let needs = grouped.needs(rates, Weigh::Requests);
                told::write(&grouped.refusals(rates, bursts, &needs, Weigh::Requests))
            }
        }
    }

    /// The rates of the frontier: those asked, or spread over every part's demand.
    pub fn rates(&self, demands: &[String]) -> crate::error::Result<Vec<Rate>> {
        if !self.ask.rates.is_empty() {
            return Ok(self.ask.rates.clone());
        }
        let mut demand = Demand::default();
        told::read_all::<Demand>(demands)?.iter().for_each(|part| demand.merge(part));
        if demand.units.total().count == 0 {
            Err(anyhow::anyhow!("no events: nothing to recommend a limit for"))?;
        }
        Ok(recommend::spread(&demand, self.ask.untouched, &|_| true))
    }

    /// Every part's needs merged, and the least burst at each rate at the share.
    pub fn bursts(&self, needs: &[String]) -> crate::error::Result<Vec<u64>> {
        Ok(recommend::bursts(&merged_needs(needs)?, self.ask.untouched))
    }

    /// The answer, from every part's needs and refusals at `rates`: what `ratelimit
    /// recommend --format json` prints for all the rows.
    pub fn answer(
        &self,
        rates: &[Rate],
        needs: &[String],
        refusals: &[String],
    ) -> crate::error::Result<Vec<u8>> {
        Ok(self.answered(rates, needs, refusals)?)
    }

    /// [`answer`](RecommendParts::answer), its errors the internals'.
    fn answered(&self, rates: &[Rate], needs: &[String], refusals: &[String]) -> Result<Vec<u8>> {
        let needs = merged_needs(needs)?;
        let mut refused = Refusals::default();
        told::read_all::<Refusals>(refusals)?.into_iter().for_each(|part| refused.merge(part));
        if needs.per_rate.len() != rates.len() || refused.per_rate.len() != rates.len() {
            bail!("the parts' results are not of the {} rates asked", rates.len());
        }
        if needs.per_rate.first().is_none_or(|counted| counted.total().count == 0) {
            bail!("no events: nothing to recommend a limit for");
        }
        let found = recommend::answer(&self.ask, self.key.clone(), rates, &needs, &refused);
        Ok(serde_json::to_vec(&found)?)
    }
}

/// Every part's needs, merged.
fn merged_needs(lines: &[String]) -> Result<Needs> {
    let mut needs = Needs::default();
    told::read_all::<Needs>(lines)?.iter().for_each(|part| needs.merge(part));
    Ok(needs)
}
