//! `report`: the page crate's HTML page of a path or of Arrow data, made with the GIL
//! released and written whole to a path, as the program writes it.

use std::path::PathBuf;
use std::time::Instant;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use ratelimit_engine::error::Error;
use ratelimit_engine::limit::{Given as Params, Limit};
use ratelimit_engine::limits::{self, LimitPolicy};
use ratelimit_engine::lossless::Found;
use ratelimit_input::asked::Names;
use ratelimit_input::catalog::Source;
use ratelimit_output::{Identity, Output};
use ratelimit_page::{PageAsk, Reads, Said};

use crate::errors::{policy_error, raise};
use crate::keywords::{self, Given, word};
use crate::limit::PyLimit;

/// Writes the report page of `data` (a path, or Arrow data) to `path`: led by the one
/// limit of `limits`, or with `layered` by the first of them, the layers shown beside it
/// (with `side_by_side`, each a whole configuration). `window` is the busiest windows'
/// length; `options` are the reading keywords, `top`, `cover` and where limits run. The
/// page is written whole, or not at all; a link is followed, a device written in place,
/// and the input is never written over. What making it said is warned of.
#[pyfunction]
#[pyo3(signature = (data, path, limits, layered, window=None, *, side_by_side=false, options=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn report(
    py: Python<'_>,
    data: Given,
    path: PathBuf,
    limits: Vec<PyLimit>,
    layered: bool,
    window: Option<&str>,
    side_by_side: bool,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<()> {
    let began = Instant::now();
    if side_by_side && !layered {
        return Err(policy_error("side_by_side compares limits: give a Policy, or limits="));
    }
    let policy = crate::replay::policy(limits, layered)?;
    let (mut top, mut cover, mut running) = (10, None, keywords::Running::default());
    let own: &[&[&str]] = &[&keywords::REPORT, &keywords::RUNNING];
    let asked = keywords::read("report", options, own, |name, value| {
        match name {
            "top" => top = value.extract()?,
            "cover" => cover = Some(crate::lossless::read_cover(&word(value)?)?),
            _ => return running.read(name, value),
        }
        Ok(true)
    })?;
    let keywords::Running { redis, fleet } = running;
    let (kind, source) = data.source()?;
    let error = |err: Error| raise(err, kind);
    let output = Output::new(path);
    if let Source::Path(input) = &source {
        let identity = std::fs::metadata(input).ok().as_ref().and_then(Identity::of);
        output.check_not_input(identity.as_ref(), &source.name()).map_err(|e| error(e.into()))?;
    }
    // One limit leads as it is; layers are led by the first's limiter, rate and burst, and
    // read their own key and cost columns, in a reading of their own.
    let (lead, beside, lead_read, limits_read) = match &policy {
        LimitPolicy::One(limit) => {
            let read = policy.settle_on(&asked, &source, Names::Keywords, &fleet);
            (limit.clone(), Vec::new(), read.map_err(|e| error(e.into()))?, None)
        }
        LimitPolicy::AllOrNothing(all) => {
            let first = &all[0];
            let lead = Limit {
                key: None,
                cost: Default::default(),
                params: Params::default(),
                ..first.clone()
            };
            let key = fleet.key_column(None, Names::Keywords);
            let read = asked.settle(&source, key, Names::Keywords);
            let noun = if side_by_side { "configurations" } else { "layers" };
            let theirs = limits::settle_together(all, noun, &asked, &source, Names::Keywords);
            let theirs = theirs.map_err(|e| error(e.into()))?;
            (lead, all.clone(), read.map_err(|e| error(e.into()))?, Some(theirs))
        }
    };
    let ask = PageAsk {
        lead,
        window: window.map(keywords::window).transpose()?,
        limits: beside,
        side_by_side,
        cover: match cover {
            Some(cover) => cover,
            None => crate::lossless::read_cover("90%")?,
        },
        top,
        fleet,
        redis: redis.target(),
        names: Names::Keywords,
        command: "ratelimit_replay.report(...)".to_owned(),
        span_given: asked.since.is_some() || asked.until.is_some(),
    };
    // The Python package owns Ctrl-C: a temporary file is removed as on any error.
    ratelimit_output::host_owns_signals();
    let work = |stop: ratelimit_input::progress::Stop| {
        let reads = Reads {
            lead: ratelimit_input::catalog::ReadOptions { stop: stop.clone(), ..lead_read },
            limits: limits_read.map(|read| ratelimit_input::catalog::ReadOptions { stop, ..read }),
        };
        let made = ratelimit_page::page(&ask, &source, &reads, began)?;
        let write = |out: &mut dyn std::io::Write| ratelimit_page::write_page(out, &made.page);
        output.write(write).map_err(Error::from)?;
        let notes = made.said.into_iter().map(|said| match said {
            Said::Note(note) | Said::Cut(note) => note,
        });
        Ok(Found { found: (), notes: notes.collect() })
    };
    crate::lossless::found(py, work, kind)
}
