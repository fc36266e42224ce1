//! Several limits at once: an event passes only if every layer admits it, and a refused
//! event charges no layer, as nginx does for chained `limit_req`.
//!
//! Each layer is a limiter with its own state (per key, if it is keyed) and its own cost.
//! Every layer is asked first ([`AnyPerKey::admits`], which spends nothing); only if all
//! admit is each charged. Each layer's decisions then go to a [`Recorder`] of its own, so
//! that its report (units, busiest window, promise, lossless bucket, keys) is found as a
//! single limiter's is.

use anyhow::Result;

use super::recorder::Recorder;
use crate::input::catalog::{Event, KeyNotes, ReadStats, Sink};
use crate::input::keys::slot;
use crate::limiter::{AnyPerKey, Decision};

use crate::{Engine, Policy, Record, UseEngine};

pub use crate::policy::{Layer, Limits, MAX_LAYERS};

/// What the layers decided, counted: for each layer, its record, what it refused, and
/// what only it refused.
pub struct Tally {
    records: Vec<Recorder>,
    events: u64,
    passed: u64,
    refused: Vec<u64>,
    only: Vec<u64>,
    /// Each layer deciding every event alone, as the only limit, in memory; and what each
    /// so refuses.
    alone: Vec<(AnyPerKey, Layer)>,
    alone_refused: Vec<u64>,
    /// The empty key's number, as the reading tells it, for layers that let it through.
    empty: KeyNotes,
    /// If kept: every event's decision, in order.
    trace: Option<Vec<bool>>,
    /// If kept, with the trace: the layers that refused each event (bit n for layer n).
    refusals: Vec<u32>,
}

/// Returns `layer`'s limiter for every key, reading `notes` of the keys if it is keyed.
fn noted(layer: &Layer, notes: &KeyNotes) -> AnyPerKey {
    let mut limiter = layer.settings.per_key();
    layer.share_key_notes(&mut limiter, notes);
    limiter
}

impl Tally {
    fn new(layers: &[Layer], empty: &KeyNotes) -> Tally {
        Tally {
            records: layers.iter().map(|l| Recorder::new(&[l.settings], l.keyed)).collect(),
            refused: vec![0; layers.len()],
            only: vec![0; layers.len()],
            alone: layers.iter().map(|l| (noted(l, empty), l.clone())).collect(),
            alone_refused: vec![0; layers.len()],
            empty: empty.clone(),
            events: 0,
            passed: 0,
            trace: None,
            refusals: Vec::new(),
        }
    }

    /// Counts an event that the layers in `refused` refused (bit n for layer n).
    #[inline]
    fn count(&mut self, refused: u32) {
        self.events += 1;
        let alone = refused.count_ones() == 1;
        for (n, (count, only)) in self.refused.iter_mut().zip(&mut self.only).enumerate() {
            let refuses = u64::from(refused >> n & 1);
            *count += refuses;
            *only += refuses * u64::from(alone);
        }
        let passed = refused == 0;
        self.passed += u64::from(passed);
        if let Some(trace) = &mut self.trace {
            trace.push(passed);
            self.refusals.push(refused);
        }
    }

    /// Has each layer decide `event` alone, as if it were the only limit: what a layer
    /// would refuse by itself, whatever the others do to the events it sees.
    #[inline]
    fn alone(&mut self, event: Event) {
        let empty = self.empty.is(event.key);
        for ((limiter, layer), count) in self.alone.iter_mut().zip(&mut self.alone_refused) {
            if empty && layer.skips_empty_key() {
                // Let through uncounted, as by the layers together.
                continue;
            }
            let seen = layer.sees(event);
            *count += u64::from(!limiter.decide(slot(seen.key), seen.time, seen.cost).passed);
        }
    }
}

/// Each event's refusals and each layer's decision, from the layers in memory or in
/// Redis.
impl Record for Tally {
    #[inline]
    fn decided(
        &mut self,
        _: Event,
        refused: u32,
        each: impl IntoIterator<Item = (Event, Decision)>,
    ) -> Result<()> {
        self.count(refused);
        for (record, (seen, decision)) in self.records.iter_mut().zip(each) {
            record.record(seen, [decision])?;
        }
        Ok(())
    }
}

/// A layered replay under way: who decides, and what they decided.
pub struct Layered<D> {
    decide: D,
    tally: Tally,
}

/// What a layered replay found, before its reports are made: for each layer, its record,
/// how many events it refused, and how many only it refused.
pub struct LayeredRecord {
    /// All the events.
    pub events: u64,
    /// Those every layer admitted.
    pub passed: u64,
    /// For each layer: its record, its refusals, the refusals that were its alone, and
    /// what it refuses as the only limit.
    pub layers: Vec<(Recorder, u64, u64, u64)>,
    /// Every event's decision, in order, if they were kept.
    pub trace: Vec<bool>,
    /// With the trace: the layers that refused each event, in order (bit n for layer n).
    pub refusals: Vec<u32>,
}

/// Says whether `layers` make a layered limit: 1 to [`MAX_LAYERS`] of them.
pub fn check_layers(layers: &[Layer]) -> Result<()> {
    Ok(Policy::AllOrNothing(layers).check()?)
}

impl<D: Engine> Layered<D> {
    /// Starts a replay of `layers`, which [`check_layers`] has passed, decided by `decide`;
    /// `notes` holds what the reading of the events tells of their keys, which the engine
    /// and each layer alone share.
    pub fn with(layers: &[Layer], decide: D, notes: &KeyNotes) -> Layered<D> {
        Layered { decide: crate::sharing(decide, notes), tally: Tally::new(layers, notes) }
    }

    /// Returns the record, once every event is in and decided.
    pub fn finish(mut self) -> Result<LayeredRecord> {
        self.decide.flush(&mut self.tally)?;
        let tally = self.tally;
        let layers = tally
            .records
            .into_iter()
            .zip(tally.refused)
            .zip(tally.only)
            .zip(tally.alone_refused)
            .map(|(((r, a), b), c)| (r, a, b, c));
        Ok(LayeredRecord {
            events: tally.events,
            passed: tally.passed,
            layers: layers.collect(),
            trace: tally.trace.unwrap_or_default(),
            refusals: tally.refusals,
        })
    }
}

impl<D: Engine> Sink for Layered<D> {
    type Error = anyhow::Error;

    #[inline]
    fn event(&mut self, event: Event) -> Result<()> {
        self.tally.alone(event);
        self.decide.push(event, &mut self.tally)
    }
}

/// Deciding events already read, in time order, through layers, keeping every decision.
pub struct DecideLayers<'a, I> {
    /// The layers, which [`check_layers`] passes.
    pub layers: &'a [Layer],
    /// The events, in time order.
    pub events: I,
    /// The table that numbered their keys as they were read.
    pub keys: &'a crate::input::catalog::KeyTable,
}

impl<I: IntoIterator<Item = Event>> UseEngine for DecideLayers<'_, I> {
    type Out = LayeredRecord;

    fn with<E: Engine>(self, mut fresh: impl FnMut() -> E) -> Result<LayeredRecord> {
        check_layers(self.layers)?;
        let mut run = Layered::with(self.layers, fresh(), self.keys.notes());
        // The layers have said what they read of the keys: the table notes it of all.
        self.keys.note_all();
        run.tally.trace = Some(Vec::new());
        for event in self.events {
            run.event(event)?;
        }
        run.finish()
    }
}

/// Reading a catalog through layers (engines made again for a read that starts over),
/// and what each did.
pub struct ReplayLayers<'a> {
    /// The layers, which [`check_layers`] passes.
    pub layers: &'a [Layer],
    /// The catalog.
    pub source: &'a crate::input::catalog::Source,
    /// How to read it.
    pub options: &'a crate::input::catalog::ReadOptions,
}

impl UseEngine for ReplayLayers<'_> {
    type Out = (LayeredRecord, ReadStats);

    fn with<E: Engine>(self, mut fresh: impl FnMut() -> E) -> Result<Self::Out> {
        check_layers(self.layers)?;
        let run = || Layered::with(self.layers, fresh(), &self.options.key_notes);
        let (run, stats) = crate::input::catalog::read_events(self.source, self.options, run)?;
        Ok((run.finish()?, stats))
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU64;

    use super::*;
    use crate::Policy;
    use crate::limiter::Algorithm;
    use crate::memory::Memory;
    use crate::recorder::Settings;
    use crate::units::time::{Span, Timestamp};

    fn layer(algorithm: Algorithm, rate: &str, burst: u64, cost: Option<u64>) -> Layer {
        let rate = rate.parse().unwrap();
        let burst = NonZeroU64::new(burst).unwrap();
        let window = Span::from_micros(1_000_000).unwrap();
        Layer {
            settings: Settings {
                algorithm,
                rate,
                burst,
                window,
                params: algorithm.default_params(),
            },
            keyed: false,
            cost,
            counts_refused: false,
        }
    }

    fn in_memory(layers: &[Layer]) -> Result<Layered<Memory>> {
        check_layers(layers)?;
        let unkeyed = &KeyNotes::default();
        Ok(Layered::with(layers, Memory::new(Policy::AllOrNothing(layers))?, unkeyed))
    }

    fn at(s: i64, cost: u64) -> Event {
        Event { cost, ..Event::new(Timestamp::from_micros(s * 1_000_000).unwrap(), 0) }
    }

    #[test]
    fn an_event_passes_only_if_every_layer_admits_it_and_a_refused_one_charges_none() {
        // Requests: 2 at once, 1/10s. Tokens: 10 at once, 1/s.
        let layers = [
            layer(Algorithm::Gcra, "1/10s", 2, Some(1)),
            layer(Algorithm::TokenBucket, "1/s", 10, None),
        ];
        let mut run = in_memory(&layers).unwrap();
        // 0 s: 4 tokens, both admit. 1 s: 8 tokens, the token bucket (7 left) refuses; the
        // request it would have spent is not spent. 2 s: 3 tokens, both admit (the second
        // request). 3 s: 1 token: requests are spent until 10 s; only the first refuses.
        for event in [at(0, 4), at(1, 8), at(2, 3), at(3, 1)] {
            run.event(event).unwrap();
        }
        let record = run.finish().unwrap();
        assert_eq!((record.events, record.passed), (4, 2));
        let refusals: Vec<(u64, u64)> = record.layers.iter().map(|(_, r, o, _)| (*r, *o)).collect();
        assert_eq!(refusals, [(1, 1), (1, 1)]);
    }

    #[test]
    fn a_layer_alone_lets_the_empty_key_through_as_the_layers_do() {
        // nginx at 1r/m per key, beside a roomy token bucket: key 1 is the empty key. Its
        // three requests in a second pass; key 0's second is refused, by nginx alone too.
        let nginx = Layer { keyed: true, ..layer(Algorithm::Nginx, "1/m", 1, None) };
        let layers = [nginx, layer(Algorithm::TokenBucket, "1000/s", 1000, None)];
        let empty = KeyNotes::default();
        empty.set(1);
        let mut run =
            Layered::with(&layers, Memory::new(Policy::AllOrNothing(&layers)).unwrap(), &empty);
        let key = |event: Event, key| Event { key, ..event };
        for event in [
            key(at(0, 1), 1),
            key(at(0, 1), 0),
            key(at(1, 1), 1),
            key(at(1, 1), 0),
            key(at(2, 1), 1),
        ] {
            run.event(event).unwrap();
        }
        let record = run.finish().unwrap();
        assert_eq!((record.events, record.passed), (5, 4));
        // Refused, refused only by it, refused as the only limit.
        let nginx = &record.layers[0];
        assert_eq!((nginx.1, nginx.2, nginx.3), (1, 1, 1));
    }

    proptest::proptest! {
        /// One layer decides as its limiter alone does, for every limiter and any costs;
        /// and a second layer that admits everything changes nothing.
        #[test]
        fn one_layer_is_the_limiter_alone(
            n in 1u64..6,
            p in 1i64..20,
            b in 1u64..8,
            events in proptest::collection::vec((0i64..6, 0u64..8), 0..60),
        ) {
            let rate: crate::units::rate::Rate = format!("{n}/{p}s").parse().unwrap();
            let mut t = 0;
            let events: Vec<Event> = events.iter().map(|&(gap, c)| { t += gap; at(t, c) }).collect();
            for algorithm in Algorithm::ALL {
                let burst = NonZeroU64::new(b).unwrap();
                let window = Span::from_micros(1_000_000).unwrap();
                let one = Layer { settings: Settings { algorithm, rate, burst, window, params: algorithm.default_params() }, keyed: false, cost: None, counts_refused: false };
                let roomy = layer(Algorithm::TokenBucket, "1000/s", 1_000_000, None);
                let mut alone = algorithm.build(rate, burst);
                let mut layered = in_memory(std::slice::from_ref(&one)).unwrap();
                let mut with_roomy = in_memory(&[one.clone(), roomy]).unwrap();
                let mut passed = 0;
                for &e in &events {
                    passed += u64::from(crate::limiter::Limiter::take(&mut alone, e.time, e.cost, false).passed);
                    layered.event(e).unwrap();
                    with_roomy.event(e).unwrap();
                }
                proptest::prop_assert_eq!(layered.finish().unwrap().passed, passed, "{:?}", algorithm);
                proptest::prop_assert_eq!(with_roomy.finish().unwrap().passed, passed, "{:?}", algorithm);
            }
        }
    }

    #[test]
    fn one_layer_decides_as_the_limiter_alone() {
        let one = [layer(Algorithm::SlidingLog, "3/10s", 3, None)];
        let mut run = in_memory(&one).unwrap();
        let mut alone = Algorithm::SlidingLog.build("3/10s".parse().unwrap(), NonZeroU64::MIN);
        let mut passed = 0;
        for (s, c) in [(0, 1), (1, 2), (2, 1), (9, 1), (10, 1), (11, 3), (20, 1)] {
            run.event(at(s, c)).unwrap();
            passed += u64::from(
                crate::limiter::Limiter::take(&mut alone, at(s, c).time, c, false).passed,
            );
        }
        assert_eq!(run.finish().unwrap().passed, passed);
    }
}
