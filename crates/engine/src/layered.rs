//! Several limits at once: an event passes only if every layer admits it, and a refused
//! event charges no layer, as nginx does for chained `limit_req`.
//!
//! Each layer is a limiter with its own state (per key, if it is keyed) and its own cost.
//! Every layer is asked first ([`AnyPerKey::admits`], which spends nothing); only if all
//! admit is each charged. Each layer's decisions then go to a [`Recorder`] of its own, so
//! that its report (units, busiest window, promise, lossless bucket, keys) is found as a
//! single limiter's is.

use anyhow::{Result, bail};

use super::recorder::{Recorder, Settings};
use crate::input::catalog::{Event, ReadStats, Sink};
use crate::input::keys::slot;
use crate::limiter::{AnyPerKey, Decision};
use crate::live::{Live, LiveKeys};
use crate::units::time::Timestamp;
use crate::{Engine, Record, UseEngine};

/// The most layers one run takes: each event is asked of every layer.
pub const MAX_LAYERS: usize = 16;

/// One layer, resolved: its limiter's settings, whether it is keyed (by the run's key
/// column), and its cost: the event's own (read from the run's cost column), or a number.
#[derive(Clone, Debug)]
pub struct Layer {
    /// The limiter.
    pub settings: Settings,
    /// Whether each key has its own state.
    pub keyed: bool,
    /// What every event costs this layer; `None`: the event's own cost.
    pub cost: Option<u64>,
    /// Whether it counts the hits of an event another layer refuses, as envoy's ratelimit
    /// service increments every limit of a request unless
    /// `STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT` is set (`fixed_cache_impl.go`,
    /// `getHitsAddend`).
    pub counts_refused: bool,
}

/// The layers' limiters, each beside its layer: the rule of all or nothing, written once
/// for a replay and for a live filter.
#[derive(Clone, Debug)]
pub struct Limits {
    pub(crate) each: Vec<(AnyPerKey, Layer)>,
}

impl Limits {
    /// Returns the limiters of `layers`, each in its first state.
    pub fn new(layers: &[Layer]) -> Limits {
        Limits { each: layers.iter().map(|l| (l.settings.per_key(), l.clone())).collect() }
    }

    /// Returns whether key `key` is back at its start as of `now` in every keyed layer
    /// ([`AnyPerKey::at_rest`]); the other layers keep no state a key.
    pub fn at_rest(&self, key: usize, now: Timestamp) -> bool {
        let mut keyed = self.each.iter().filter(|(_, layer)| layer.keyed);
        keyed.all(|(limiter, _)| limiter.at_rest(key, now))
    }

    /// Returns the layers with their keys renumbered: key `kept[n]` becomes key n in every
    /// keyed layer, and the keys not kept are forgotten.
    pub fn renumbered(&self, kept: &[usize]) -> Limits {
        let each = self.each.iter().map(|(limiter, layer)| match layer.keyed {
            true => (limiter.renumbered(kept), layer.clone()),
            false => (limiter.clone(), layer.clone()),
        });
        Limits { each: each.collect() }
    }

    /// Returns the layers that would refuse `event`, bit n for layer n, spending nothing:
    /// every layer is asked, whatever the others say.
    #[inline]
    pub fn refusals(&mut self, event: Event) -> u32 {
        let mut refused = 0;
        for (n, (limiter, layer)) in self.each.iter_mut().enumerate() {
            let seen = layer.sees(event);
            if !limiter.admits(slot(seen.key), seen.time, seen.cost) {
                refused |= 1 << n;
            }
        }
        refused
    }

    /// Settles `event`, which the layers of bit set in `refused` refuse: if none does, charges
    /// each layer; else each layer that refused it takes the refusal as its own rules say
    /// (a limiter that counts refused hits, as `limits`' fixed window does, counts it; the
    /// exact ones change nothing), and the others are not charged. Either way it hands
    /// layer n's view of the event and its decision to `each`, in layer order, stopping at
    /// the first error.
    ///
    /// Layers whose keys share a zone (nginx's) are looked up as nginx's chained
    /// `limit_req` looks them up, in order up to the first that refuses and no further:
    /// those before it hold the key in their zones uncharged (a new key frees what it may),
    /// it holds the key, and those after it never see the event.
    #[inline]
    pub fn settle<E>(
        &mut self,
        event: Event,
        refused: u32,
        mut each: impl FnMut(usize, Event, Decision) -> Result<(), E>,
    ) -> Result<(), E> {
        // The first layer that refuses, or 32: past every layer (MAX_LAYERS ≤ 32). Not from
        // user input, and at most 32: a u32 widens to usize on every target this builds for.
        let first = refused.trailing_zeros() as usize;
        for (n, (limiter, layer)) in self.each.iter_mut().enumerate() {
            let seen = layer.sees(event);
            let refuses = refused & (1 << n) != 0;
            let zone = layer.settings.algorithm.has_zone();
            // All admitted: each is charged, and a leaky queue says how long it waits. A
            // refusing layer decides again, as it did when asked: it refuses.
            let decision = if refused == 0 || (refuses && !(zone && n > first)) {
                limiter.decide(slot(seen.key), seen.time, seen.cost)
            } else {
                if n < first {
                    limiter.look_up(slot(seen.key), seen.time);
                }
                if layer.counts_refused && !refuses {
                    limiter.charge(slot(seen.key), seen.time, seen.cost);
                }
                Decision { passed: false, wait: 0 }
            };
            each(n, seen, decision)?;
        }
        Ok(())
    }
}

impl Layer {
    /// Returns the event as this layer sees it: its key (0 unless keyed) and its cost.
    #[inline]
    pub fn sees(&self, event: Event) -> Event {
        Event {
            time: event.time,
            key: if self.keyed { event.key } else { 0 },
            cost: self.cost.unwrap_or(event.cost),
        }
    }
}

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
    /// If kept: every event's decision, in order.
    trace: Option<Vec<bool>>,
    /// If kept, with the trace: the layers that refused each event (bit n for layer n).
    refusals: Vec<u32>,
}

impl Tally {
    fn new(layers: &[Layer]) -> Tally {
        Tally {
            records: layers.iter().map(|l| Recorder::new(&[l.settings], l.keyed)).collect(),
            refused: vec![0; layers.len()],
            only: vec![0; layers.len()],
            alone: layers.iter().map(|l| (l.settings.per_key(), l.clone())).collect(),
            alone_refused: vec![0; layers.len()],
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
        for ((limiter, layer), count) in self.alone.iter_mut().zip(&mut self.alone_refused) {
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
    if layers.is_empty() || layers.len() > MAX_LAYERS {
        bail!("a layered limit has 1 to {MAX_LAYERS} layers, not {}", layers.len());
    }
    Ok(())
}

impl<D: Engine> Layered<D> {
    /// Starts a replay of `layers`, which [`check_layers`] has passed, decided by `decide`.
    pub fn with(layers: &[Layer], decide: D) -> Layered<D> {
        Layered { decide, tally: Tally::new(layers) }
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
}

impl<I: IntoIterator<Item = Event>> UseEngine for DecideLayers<'_, I> {
    type Out = LayeredRecord;

    fn with<E: Engine>(self, mut fresh: impl FnMut() -> E) -> Result<LayeredRecord> {
        check_layers(self.layers)?;
        let mut run = Layered::with(self.layers, fresh());
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
        let run = || Layered::with(self.layers, fresh());
        let (run, stats) = crate::input::catalog::read_events(self.source, self.options, run)?;
        Ok((run.finish()?, stats))
    }
}

/// Returns a live engine in memory for the layers of `limits`: one state per key in each
/// keyed layer, in this process.
pub(crate) fn live(limits: Limits) -> Box<dyn Live> {
    Box::new(LiveLayers { limits, keys: LiveKeys::new() })
}

/// Several limits at once, in this process: every layer is asked first, spending nothing,
/// then all are charged or none, by the same [`Limits`] a layered replay decides with.
struct LiveLayers {
    limits: Limits,
    keys: LiveKeys,
}

impl Live for LiveLayers {
    fn decide_now(&mut self, now: Timestamp, key: &[u8], cost: u64) -> Result<Decision> {
        let limits = &self.limits;
        if let Some(kept) = self.keys.sweep(|old| limits.at_rest(old, now)) {
            self.limits = limits.renumbered(&kept);
        }
        let number = self.keys.number(key)?;
        let event = Event { time: now, key: number, cost };
        let refused = self.limits.refusals(event);
        self.limits.settle(event, refused, |_, _, _| Ok::<(), std::convert::Infallible>(()))?;
        Ok(Decision { passed: refused == 0, wait: 0 })
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU64;

    use super::*;
    use crate::Policy;
    use crate::input::keys::KeyTable;
    use crate::limiter::Algorithm;
    use crate::live::tests as live_tests;
    use crate::memory::Memory;
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
        Ok(Layered::with(layers, Memory::new(Policy::AllOrNothing(layers))))
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
    fn a_chained_nginx_limit_before_the_one_that_refuses_holds_the_key_uncharged() {
        // A zone per key at 1r/m (16 milli-requests a second leak), then one fixed window
        // of 1/h for all. 0 s: key 0 passes both. 61 s: key 1 is new to the zone, which
        // frees key 0 (idle 61 s, leaked away); the window refuses. nginx looked key 1 up
        // all the same, so the freeing stands: at 62 s key 0 is new again, and free. Had
        // the zone not been looked up, key 0 would owe 1000 − 992 and be refused.
        let mut zone = layer(Algorithm::Nginx, "1/m", 1, None);
        zone.keyed = true;
        let layers = [zone, layer(Algorithm::FixedWindow, "1/h", 1, None)];
        let mut limits = Limits::new(&layers);
        let key = |s, key| Event { key, ..at(s, 1) };
        for event in [key(0, 0), key(61, 1)] {
            let refused = limits.refusals(event);
            limits.settle(event, refused, |_, _, _| Ok::<(), ()>(())).unwrap();
        }
        assert_eq!(limits.refusals(key(62, 0)), 0b10, "the zone admits key 0, the window not");
    }

    #[test]
    fn envoy_counts_a_refused_requests_hits_in_every_limit_unless_told_to_stop() {
        // 1 a second, then 2 a minute. 0 s: both count 1, it passes. 0.1 s: the second's
        // count 2 is over 1, refused; the minute's 2 is not over, but envoy counts the hit
        // there too, unless it stops at the limits that are over. 1 s: a new second; the
        // minute's 3 is over 2, or with the stop, 2 is not.
        let decide = |counts_refused: bool| {
            let layers = [
                layer(Algorithm::EnvoyRatelimit, "1/s", 1, None),
                layer(Algorithm::EnvoyRatelimit, "2/m", 1, None),
            ]
            .map(|l| Layer { counts_refused, ..l });
            let mut limits = Limits::new(&layers);
            let times = [0, 100_000, 1_000_000].map(|us| Timestamp::from_micros(us).unwrap());
            times.map(|time| {
                let event = Event::new(time, 0);
                let refused = limits.refusals(event);
                limits.settle(event, refused, |_, _, _| Ok::<(), ()>(())).unwrap();
                refused == 0
            })
        };
        assert_eq!(decide(true), [true, false, false]);
        assert_eq!(decide(false), [true, false, true]);
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

    #[test]
    fn layered_keys_back_at_their_start_are_forgotten_and_every_decision_stays() {
        // Each key's own limit, and one over all that refuses a few in a hundred.
        let layer = |algorithm, rate, keyed| Layer {
            settings: live_tests::settings(algorithm, rate),
            keyed,
            cost: None,
            counts_refused: false,
        };
        let layers =
            [layer(Algorithm::Gcra, "1/s", true), layer(Algorithm::FixedWindow, "9800/s", false)];
        let mut live = LiveLayers { limits: Limits::new(&layers), keys: LiveKeys::new() };
        let (mut kept, mut names) = (Limits::new(&layers), KeyTable::new());
        let mut most = 0;
        for (n, (now, key)) in live_tests::events().enumerate() {
            let event = Event { time: now, key: names.intern(&key).unwrap(), cost: 1 };
            let refused = kept.refusals(event);
            kept.settle(event, refused, |_, _, _| Ok::<(), std::convert::Infallible>(())).unwrap();
            assert_eq!(live.decide_now(now, &key, 1).unwrap().passed, refused == 0, "event {n}");
            most = most.max(live.keys.table.len());
        }
        assert_eq!(most, crate::live::FIRST_SWEEP);
    }
}
