//! `min-bucket` over a stream read in chunks on many machines (Spark's partitions): what
//! each chunk tells, as lines of text, and the chunks' lines merged into the answer, at
//! given rates or (`--curve`) over all of them.
//!
//! Of one stream, the chunks are ranges in time order, and each sums up its buckets in a
//! [`BucketSummary`] a rate, merged in the ranges' order. Per key, each chunk holds whole
//! keys, and says what each needs (a line a key); the program's ranking, quantiles and
//! cover are made of all the keys' lines, as they are of its own sizing.

use anyhow::{Result, anyhow, bail};
use serde::{Deserialize, Serialize};

use super::told::{self, Told};

use crate::input::asked::Names;
use crate::input::catalog::{self, Event, Key, KeyTable, Sink, Source, Timeline, slot};
use crate::key_sizing::{KeySizing, Shown, by_key};
use crate::sizing::curve_summary::CurveSummary;
use crate::sizing::merge::BucketSummary;
use crate::sizing::min_bucket::{Lossless, MinBucketFinder, Stretch};
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// A `min-bucket` in chunks, as asked: at given rates, or over all of them (the curve);
/// per key or of one stream; with what to read, what each event costs, and what the
/// answer shows of the keys. One is made once, and sent to every chunk.
#[derive(Clone, Debug)]
pub struct Chunked {
    /// The rates; none for the whole curve.
    pub rates: Vec<Rate>,
    /// The key column, if each key is sized alone.
    pub key: Option<String>,
    /// What each event costs, if not 1.
    pub cost: Option<crate::input::catalog::Cost>,
    /// What to read, as asked.
    pub asked: crate::input::asked::Asked,
    /// How many keys each rate lists (0: all).
    pub top: usize,
    /// With keys, the share of keys a bucket must leave untouched.
    pub cover: Option<crate::sizing::quantile::Percent>,
}

/// [`chunk_lines`](super::chunk_lines), its errors the internals'.
pub(super) fn chunk_lines(asked: &Chunked, given: Source) -> Result<Vec<String>> {
    let plan = Plan::of(asked, given)?;
    let (source, read) = (&plan.source, &plan.read);
    if plan.curve {
        let (events, _) = catalog::read_events(source, read, Timeline::new)?;
        let summary = CurveSummary::of(events.times(), events.costs())
            .ok_or_else(|| anyhow!("the events' costs sum past 2^63 units; no curve is drawn"))?;
        return Ok(vec![told::write(&CurvePart { summary: summary.encode() })?]);
    }
    if !plan.keyed {
        let fresh = || Summaries(plan.rates.iter().map(|&rate| BucketSummary::new(rate)).collect());
        let (summaries, _) = catalog::read_events(source, read, fresh)?;
        let summaries = summaries.0.iter().map(BucketSummary::encode).collect();
        return Ok(vec![told::write(&BucketsPart { summaries })?]);
    }
    let fresh = || EachKey { rates: plan.rates.clone(), each: Vec::new() };
    let (per_key, stats) = catalog::read_events(source, read, fresh)?;
    let mut lines = Vec::with_capacity(per_key.each.len());
    for (key, (events, finders)) in per_key.each.iter().enumerate() {
        let name = stats.keys.get(Key::try_from(key)?);
        let found = (finders.iter().map(MinBucketFinder::result))
            .map(|found| {
                let stretch =
                    found.stretch.map(|s| (s.start.as_micros(), s.end.as_micros(), s.events));
                (found.min_bucket, stretch)
            })
            .collect();
        let name = name.iter().map(|b| format!("{b:02x}")).collect();
        lines.push(told::write(&KeyPart { name, events: *events, found })?);
    }
    Ok(lines)
}

/// What a chunk of one stream tells of the curve: the core's summary, as it writes itself.
#[derive(Debug, Serialize, Deserialize)]
struct CurvePart {
    summary: String,
}

impl Told for CurvePart {
    const KIND: &'static str = "curve";
}

/// What a chunk of one stream tells at each rate, in order: the core's summary of its
/// lossless bucket, as it writes itself.
#[derive(Debug, Serialize, Deserialize)]
struct BucketsPart {
    summaries: Vec<String>,
}

impl Told for BucketsPart {
    const KIND: &'static str = "buckets";
}

/// What a chunk tells of one of its keys: its name (its bytes in hex), its events, and at
/// each rate, in order, its smallest lossless bucket and the stretch that needs it (from
/// and to, µs, and its events).
#[derive(Debug, Serialize, Deserialize)]
struct KeyPart {
    name: String,
    events: u64,
    found: Vec<KeyFound>,
}

/// A key's smallest lossless bucket at a rate, and the stretch that needs it: from and to
/// (µs), and its events.
type KeyFound = (u64, Option<(i64, i64, u64)>);

impl Told for KeyPart {
    const KIND: &'static str = "key";
}

/// [`merge_chunks`](super::merge_chunks), its errors the internals'.
pub(super) fn merge_chunks(asked: &Chunked, chunks: &[Vec<String>]) -> Result<Vec<u8>> {
    // Nothing is read to merge: a source that no settling looks into.
    let plan = Plan::of(asked, Source::Embedded { name: "<chunks>", bytes: b"" })?;
    if plan.curve {
        let mut whole = CurveSummary::default();
        for (n, chunk) in chunks.iter().enumerate() {
            let [line] = &chunk[..] else {
                bail!("chunk {n} tells {} curves, not one", chunk.len())
            };
            let text = told::read::<CurvePart>(line)?.summary;
            let summary = CurveSummary::decode(&text)
                .ok_or_else(|| anyhow!("chunk {n}: {text:?} is not a curve's summary"))?;
            whole = whole.merge(&summary).ok_or_else(|| {
                anyhow!("the events' costs sum past 2^63 units; no curve is drawn")
            })?;
        }
        let curve = whole.curve();
        let segments = crate::lossless::segments(&curve, |line| whole.stretch(line))?;
        return Ok(serde_json::to_vec(&segments)?);
    }
    let found = if plan.keyed {
        plan.by_key(chunks.iter().flatten())?
    } else {
        let told = (chunks.iter().enumerate())
            .map(|(n, chunk)| match &chunk[..] {
                [line] => told::read::<BucketsPart>(line),
                _ => bail!("chunk {n} tells {} lines, not one", chunk.len()),
            })
            .collect::<Result<Vec<_>>>()?;
        let mut found = Vec::with_capacity(plan.rates.len());
        for (at, &rate) in plan.rates.iter().enumerate() {
            let mut whole = BucketSummary::new(rate);
            for (n, chunk) in told.iter().enumerate() {
                let text = chunk.summaries.get(at).map_or("", String::as_str);
                let Some(summary) = BucketSummary::decode(rate, text) else {
                    bail!("chunk {n}: {text:?} is not a summary at {rate}")
                };
                whole = whole.merge(&summary);
            }
            found.push(crate::report::MinBucket::from(whole.result()));
        }
        found
    };
    Ok(serde_json::to_vec(&found)?)
}

/// A chunked min-bucket, settled: its rates, what it reads, whether it is per key, and
/// what it shows of the keys.
struct Plan {
    rates: Vec<Rate>,
    source: Source,
    read: crate::input::catalog::ReadOptions,
    keyed: bool,
    top: usize,
    cover: Option<crate::sizing::quantile::Percent>,
    /// Whether it is the whole curve, of one stream.
    curve: bool,
}

impl Plan {
    /// Settles `asked`, reading `given` (nothing, to merge).
    fn of(asked: &Chunked, given: Source) -> Result<Plan> {
        let curve = asked.rates.is_empty();
        if curve && asked.key.is_some() {
            bail!("a curve in chunks is of one stream: no key");
        }
        if asked.rates.len() > crate::units::rate::MAX_RANGE {
            bail!(
                "{} rates are asked; at most {} are allowed",
                asked.rates.len(),
                crate::units::rate::MAX_RANGE
            );
        }
        let key = asked.key.as_deref().map(|key| (key, "key="));
        let mut read =
            super::whole_seconds_together(asked.asked.settle(&given, key, Names::Keywords)?)?;
        read.cost = asked.cost.clone().unwrap_or_default();
        Ok(Plan {
            rates: asked.rates.clone(),
            source: given,
            read,
            keyed: asked.key.is_some(),
            top: asked.top,
            cover: asked.cover,
            curve,
        })
    }

    /// Reads every key's line and returns the keyed answer made of them.
    fn by_key<'l>(
        &self,
        lines: impl Iterator<Item = &'l String>,
    ) -> Result<Vec<crate::report::MinBucket>> {
        let mut table = KeyTable::new();
        let (mut events, mut sizes) = (Vec::new(), Vec::new());
        for line in lines {
            let (name, count, found) = self.key_line(line)?;
            let before = table.len();
            table.intern(&name).ok_or_else(|| anyhow!("more keys than a table numbers"))?;
            if table.len() == before {
                let name = String::from_utf8_lossy(&name);
                bail!("key {name:?} came from two chunks: each chunk must hold whole keys");
            }
            events.push(count);
            sizes.push(found);
        }
        let sizing = KeySizing {
            fresh: || (),
            size: |(): &mut (), key: usize| sizes[key].clone(),
            events: |key: usize| events[key],
        };
        let column = self.read.key_column.clone().unwrap_or_default();
        let threads = self.read.threads;
        let shown = Shown { top: self.top, cover: self.cover, column: &column, threads };
        Ok(by_key(&self.rates, &table, &sizing, &shown))
    }

    /// Reads one key's line: its name, its events, and its bucket at each rate.
    fn key_line(&self, line: &str) -> Result<(Vec<u8>, u64, Vec<Lossless>)> {
        let told: KeyPart = told::read(line)?;
        let bad =
            || anyhow!("key {:?} is not told at the {} rates asked", told.name, self.rates.len());
        if told.found.len() != self.rates.len() {
            return Err(bad());
        }
        let hex = &told.name;
        let name = (0..hex.len())
            .step_by(2)
            .map(|at| hex.get(at..at + 2).and_then(|b| u8::from_str_radix(b, 16).ok()))
            .collect::<Option<Vec<u8>>>()
            .ok_or_else(bad)?;
        let time = |micros: i64| Timestamp::from_micros(micros).ok_or_else(bad);
        let mut found = Vec::with_capacity(self.rates.len());
        for (&rate, &(min_bucket, stretch)) in self.rates.iter().zip(&told.found) {
            let stretch = match stretch {
                None => None,
                Some((start, end, events)) => {
                    Some(Stretch { start: time(start)?, end: time(end)?, events })
                }
            };
            found.push(Lossless { rate, min_bucket, stretch });
        }
        Ok((name, told.events, found))
    }
}

/// A summary for each rate, fed a chunk's events in time order.
struct Summaries(Vec<BucketSummary>);

impl Sink for Summaries {
    type Error = anyhow::Error;

    fn event(&mut self, event: Event) -> Result<()> {
        self.0.iter_mut().for_each(|summary| summary.push_cost(event.time, event.cost));
        Ok(())
    }
}

/// Each key's events, and its finders, one a rate, fed a chunk's events in time order.
struct EachKey {
    rates: Vec<Rate>,
    each: Vec<(u64, Vec<MinBucketFinder>)>,
}

impl Sink for EachKey {
    type Error = anyhow::Error;

    fn event(&mut self, event: Event) -> Result<()> {
        let key = slot(event.key);
        while self.each.len() <= key {
            self.each
                .push((0, self.rates.iter().map(|&rate| MinBucketFinder::new(rate)).collect()));
        }
        let (events, finders) = &mut self.each[key];
        *events += 1;
        finders.iter_mut().for_each(|finder| finder.push_cost(event.time, event.cost));
        Ok(())
    }
}
