//! Many minimum-bucket finders fed the same events at once: one array per field across
//! rates, updated with vector instructions where the processor has them.

use super::min_bucket::{Lossless, MinBucketFinder, Stretch, whole_bucket};
use crate::units::rate::Rate;
use crate::units::time::Timestamp;

/// Many [`MinBucketFinder`]s fed the same events, fast: one array per field, across rates, so
/// that each event updates every rate with vector instructions where the processor has them
/// (chosen at run time), in 64-bit integers. A hundred rates then cost little more than
/// reading the input.
///
/// If a value could outgrow 64 bits (an excess near 2^63 units, which takes periods of
/// months and millions of events at one instant), it hands its state to `MinBucketFinder`s, which
/// compute in 128 bits, and carries on there. The answers are the same either way.
#[derive(Clone, Debug)]
pub struct MinBucketFinders {
    rates: Vec<Rate>,
    lanes: RateColumns,
    /// Times waiting to be run through every rate, and the gaps before each.
    block: Vec<i64>,
    gaps: Vec<i64>,
    /// The largest `worst`, which bounds every excess, and the largest period: no excess
    /// can overflow while `top` plus a block's worth of periods fits in 64 bits.
    top: i64,
    max_p: i64,
    /// Events run through so far, and the time of the last of them.
    events: u64,
    last: i64,
    wide: Option<Vec<MinBucketFinder>>,
}

/// The state of every rate, one array per field.
#[derive(Clone, Debug, Default)]
struct RateColumns {
    p: Vec<i64>,
    n: Vec<i64>,
    excess: Vec<i64>,
    /// The running minimum's event number and time.
    low_j: Vec<i64>,
    low_t: Vec<i64>,
    /// The largest excess, with the stretch that gave it: its events, first and last time.
    worst: Vec<i64>,
    worst_events: Vec<i64>,
    worst_start: Vec<i64>,
    worst_end: Vec<i64>,
}

impl RateColumns {
    /// Returns the state of rates of N events per P microseconds, given as (N, P), before
    /// any event.
    fn new(rates: impl ExactSizeIterator<Item = (i64, i64)>) -> RateColumns {
        let k = rates.len();
        let (n, p) = rates.unzip();
        RateColumns {
            p,
            n,
            excess: vec![0; k],
            low_j: vec![0; k],
            low_t: vec![0; k],
            worst: vec![-1; k],
            worst_events: vec![0; k],
            worst_start: vec![0; k],
            worst_end: vec![0; k],
        }
    }
}

/// Events gathered before they are run through the rates.
const BLOCK: usize = 512;

/// How many events a block gathers for `rates` rates: a full block pays off only when many
/// rates run over it; for a few, a short one is quicker to make, once a key.
fn block_len(rates: usize) -> usize {
    if rates >= 8 { BLOCK } else { 16 }
}

impl MinBucketFinders {
    /// Returns trackers for `rates` with no events yet.
    pub fn new(rates: &[Rate]) -> MinBucketFinders {
        let counts = rates.iter().map(|r| r.n64());
        let lanes = RateColumns::new(counts.zip(rates.iter().map(|r| r.period().as_micros())));
        MinBucketFinders {
            rates: rates.to_vec(),
            max_p: lanes.p.iter().copied().max().unwrap_or(0),
            lanes,
            block: Vec::with_capacity(block_len(rates.len())),
            gaps: Vec::with_capacity(block_len(rates.len())),
            top: 0,
            events: 0,
            last: i64::MIN,
            wide: None,
        }
    }

    /// Counts an event at `time`, which is no earlier than the last one.
    #[inline]
    pub fn push(&mut self, time: Timestamp) {
        let now = time.as_micros();
        let before = self.block.last().copied().unwrap_or(self.last);
        // The first event starts with the minimum at itself: an infinite gap.
        let first = self.events == 0 && self.block.is_empty();
        self.gaps.push(if first { i64::MAX } else { now - before });
        self.block.push(now);
        if self.block.len() == self.block.capacity() {
            self.flush();
        }
    }

    /// Counts an event at `time` that costs `cost` units: events that cost 1 go through the
    /// vector kernel; the first that costs other than 1 hands every rate to a
    /// [`MinBucketFinder`], as a value past 64 bits does, which weighs it and the rest.
    pub fn push_cost(&mut self, time: Timestamp, cost: u64) {
        if cost == 1 {
            return self.push(time);
        }
        self.flush();
        if self.wide.is_none() {
            self.widen();
        }
        if let Some(wide) = &mut self.wide {
            wide.iter_mut().for_each(|m| m.push_cost(time, cost));
        }
    }

    /// Runs the waiting events through every rate.
    fn flush(&mut self) {
        if self.block.is_empty() {
            return;
        }
        // A block's length, at most BLOCK, widens into 128 bits.
        let reach = i128::from(self.top) + i128::from(self.max_p) * self.block.len() as i128;
        if self.wide.is_none() && reach > i128::from(i64::MAX) {
            self.widen();
        }
        if self.wide.is_none() {
            self.clamp_gaps();
        }
        if let Some(wide) = &mut self.wide {
            for &t in &self.block {
                let time = at(t);
                wide.iter_mut().for_each(|m| m.push(time));
            }
        } else {
            // Counting to i64::MAX events, one a nanosecond, would take 292 years.
            #[allow(clippy::cast_possible_wrap)]
            let events = self.events as i64;
            run_block(&mut self.lanes, events, &self.block, &self.gaps);
            self.top = self.lanes.worst.iter().copied().fold(self.top, i64::max);
        }
        // A block holds at most BLOCK events.
        self.events += self.block.len() as u64;
        self.last = *self.block.last().expect("not empty");
        self.block.clear();
        self.gaps.clear();
    }

    /// Shortens gaps too long to multiply by a rate's count in 64 bits. Any gap past the
    /// clamp empties every excess anyway: the excess is at most `top` plus a block of
    /// periods, and the clamp's drain at the smallest count exceeds that and a period.
    fn clamp_gaps(&mut self) {
        // A block's length, at most BLOCK, widens into 128 bits.
        let reach = i128::from(self.top) + i128::from(self.max_p) * (self.block.len() as i128 + 1);
        let n_min = self.lanes.n.iter().copied().min().unwrap_or(1);
        let n_max = self.lanes.n.iter().copied().max().unwrap_or(1);
        let clamp = reach / i128::from(n_min) + 1;
        // If the largest count times the clamp does not fit, the counts are too far apart
        // for 64 bits: use 128 from here.
        if clamp * i128::from(n_max) > i128::from(i64::MAX) {
            self.widen();
            return;
        }
        // Checked just above: clamp · n_max fits in an i64, and n_max is at least 1.
        #[allow(clippy::cast_possible_truncation)]
        let clamp = clamp as i64;
        self.gaps.iter_mut().for_each(|g| *g = (*g).min(clamp));
    }

    /// Moves every tracker's state to 128-bit arithmetic, between blocks.
    fn widen(&mut self) {
        let l = &self.lanes;
        let wide = (0..self.rates.len())
            .map(|k| MinBucketFinder {
                p: i128::from(l.p[k]),
                n: l.n[k],
                rate: self.rates[k],
                events: self.events,
                last: self.last,
                excess: i128::from(l.excess[k]),
                // Events that reach the vector kernel cost 1.
                spent: i128::from(l.p[k]),
                low_at: (l.low_j[k].unsigned_abs(), at(l.low_t[k])),
                worst: i128::from(l.worst[k]),
                stretch: (self.events > 0).then(|| self.stretch(k)),
            })
            .collect();
        self.wide = Some(wide);
    }

    /// The stretch that gave rate `k` its worst excess.
    fn stretch(&self, k: usize) -> Stretch {
        let l = &self.lanes;
        Stretch {
            start: at(l.worst_start[k]),
            end: at(l.worst_end[k]),
            events: l.worst_events[k].unsigned_abs(),
        }
    }

    /// Returns the number of events counted so far.
    pub fn events(&self) -> u64 {
        // A block holds at most BLOCK events.
        self.events + self.block.len() as u64
    }

    /// Returns the smallest lossless bucket at each rate, in the order given.
    pub fn results(&mut self) -> Vec<Lossless> {
        self.flush();
        if let Some(wide) = &self.wide {
            return wide.iter().map(MinBucketFinder::result).collect();
        }
        (0..self.rates.len())
            .map(|k| {
                let (worst, p) = (i128::from(self.lanes.worst[k]), i128::from(self.lanes.p[k]));
                let min_bucket = whole_bucket(self.events, worst, p);
                let stretch = (self.events > 0).then(|| self.stretch(k));
                Lossless { rate: self.rates[k], min_bucket, stretch }
            })
            .collect()
    }
}

/// Runs a block of events, numbered from `first_j`, through every rate: with AVX-512 where
/// the processor has it, eight rates at a time in vector registers, and otherwise one at a
/// time. Both give the same answers; a test runs both.
fn run_block(l: &mut RateColumns, first_j: i64, times: &[i64], gaps: &[i64]) {
    #[cfg(target_arch = "x86_64")]
    if simd::available() {
        // SAFETY: the processor has the features `simd::run_block` is compiled for.
        unsafe { simd::run_block(l, first_j, times, gaps) };
        return;
    }
    run_block_scalar(l, first_j, times, gaps);
}

/// Runs a block through every rate, one rate at a time with its state in locals.
fn run_block_scalar(l: &mut RateColumns, first_j: i64, times: &[i64], gaps: &[i64]) {
    for r in 0..l.p.len() {
        let (p, n) = (l.p[r], l.n[r]);
        let (mut excess, mut low_j, mut low_t) = (l.excess[r], l.low_j[r], l.low_t[r]);
        let (mut worst, mut worst_events) = (l.worst[r], l.worst_events[r]);
        let (mut worst_start, mut worst_end) = (l.worst_start[r], l.worst_end[r]);
        for (i, (&now, &gap)) in times.iter().zip(gaps).enumerate() {
            // `i` counts events within a block, below BLOCK.
            #[allow(clippy::cast_possible_wrap)]
            let j = first_j + i as i64;
            // The gaps are clamped so that this cannot overflow.
            let next = excess + p - n * gap;
            // `<= 0`: a new minimum, or one equal to the old; the latest gives the
            // shortest stretch.
            if next <= 0 {
                (excess, low_j, low_t) = (0, j, now);
            } else {
                excess = next;
            }
            if excess > worst {
                (worst, worst_events, worst_start, worst_end) = (excess, j - low_j + 1, low_t, now);
            }
        }
        (l.excess[r], l.low_j[r], l.low_t[r]) = (excess, low_j, low_t);
        (l.worst[r], l.worst_events[r]) = (worst, worst_events);
        (l.worst_start[r], l.worst_end[r]) = (worst_start, worst_end);
    }
}

/// The same steps as `run_block_scalar`, on eight rates at once with AVX-512.
#[cfg(target_arch = "x86_64")]
mod simd {
    use std::arch::x86_64::*;

    use super::RateColumns;

    /// Returns true if the processor has what `run_block` needs.
    pub fn available() -> bool {
        is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512dq")
    }

    /// Runs a block through every rate, eight rates at a time with their state in vector
    /// registers; a mask leaves out the lanes past the last rate.
    ///
    /// # Safety
    /// The processor must have AVX-512F and AVX-512DQ.
    #[target_feature(enable = "avx512f,avx512dq")]
    pub unsafe fn run_block(l: &mut RateColumns, first_j: i64, times: &[i64], gaps: &[i64]) {
        let k = l.p.len();
        let (zero, one) = (_mm512_setzero_si512(), _mm512_set1_epi64(1));
        for base in (0..k).step_by(8) {
            // A shift of 0 to 7 leaves at most eight bits.
            #[allow(clippy::cast_possible_truncation)]
            let mask: __mmask8 = (0xffu16 >> (8 - (k - base).min(8))) as u8;
            // SAFETY: every pointer is to `base` within a vector of length `k`, and the
            // mask keeps the loads and stores to its first `k - base` lanes.
            let load =
                |v: &Vec<i64>| unsafe { _mm512_maskz_loadu_epi64(mask, v.as_ptr().add(base)) };
            let (p, n) = (load(&l.p), load(&l.n));
            let (mut excess, mut low_j, mut low_t) =
                (load(&l.excess), load(&l.low_j), load(&l.low_t));
            let (mut worst, mut worst_events) = (load(&l.worst), load(&l.worst_events));
            let (mut worst_start, mut worst_end) = (load(&l.worst_start), load(&l.worst_end));
            for (i, (&now, &gap)) in times.iter().zip(gaps).enumerate() {
                // `i` counts events within a block, below BLOCK.
                #[allow(clippy::cast_possible_wrap)]
                let j = _mm512_set1_epi64(first_j + i as i64);
                let now = _mm512_set1_epi64(now);
                let change = _mm512_sub_epi64(p, _mm512_mullo_epi64(n, _mm512_set1_epi64(gap)));
                let next = _mm512_add_epi64(excess, change);
                let moved = _mm512_cmple_epi64_mask(next, zero);
                excess = _mm512_max_epi64(next, zero);
                low_j = _mm512_mask_mov_epi64(low_j, moved, j);
                low_t = _mm512_mask_mov_epi64(low_t, moved, now);
                let grew = _mm512_cmpgt_epi64_mask(excess, worst);
                worst = _mm512_mask_mov_epi64(worst, grew, excess);
                let events = _mm512_add_epi64(_mm512_sub_epi64(j, low_j), one);
                worst_events = _mm512_mask_mov_epi64(worst_events, grew, events);
                worst_start = _mm512_mask_mov_epi64(worst_start, grew, low_t);
                worst_end = _mm512_mask_mov_epi64(worst_end, grew, now);
            }
            // SAFETY: as for the loads.
            let store = |v: &mut Vec<i64>, x| unsafe {
                _mm512_mask_storeu_epi64(v.as_mut_ptr().add(base), mask, x)
            };
            store(&mut l.excess, excess);
            store(&mut l.low_j, low_j);
            store(&mut l.low_t, low_t);
            store(&mut l.worst, worst);
            store(&mut l.worst_events, worst_events);
            store(&mut l.worst_start, worst_start);
            store(&mut l.worst_end, worst_end);
        }
    }
}

/// The instant of an event's time, kept as microseconds.
fn at(micros: i64) -> Timestamp {
    Timestamp::from_micros(micros).expect("an event's time")
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::units::time::Span;

    /// Returns true if this CPU runs the AVX-512 kernel, which the test then checks.
    fn vector_kernel_runs() -> bool {
        #[cfg(target_arch = "x86_64")]
        return simd::available();
        #[cfg(not(target_arch = "x86_64"))]
        false
    }

    /// Asserts that this CPU runs the vector kernel: the tests of it are ignored unless
    /// asked for, and asked for where it has none, they fail rather than pass unchecked.
    fn assert_vector_kernel_runs() {
        assert!(vector_kernel_runs(), "this CPU has no AVX-512F and AVX-512DQ: no vector kernel");
    }

    #[test]
    #[ignore = "needs AVX-512"]
    fn the_vector_kernel_agrees_on_a_block_of_twenty_rates_avx512() {
        assert_vector_kernel_runs();
        // Twenty rates (two full vectors and a partial one) over a block with a burst, a
        // long gap, and ties: the first gap is the block's start, far in the past.
        let rates: Vec<(i64, i64)> = (1..=20).map(|k| (k, 1_000 * k + 7)).collect();
        let gaps = [i64::MAX / 2_000, 0, 0, 5, 1, 3_000, 2, 2, 0, 250, 9, 9];
        let times: Vec<i64> = gaps
            .iter()
            .scan(0, |t, &g| {
                *t += g.min(3_000);
                Some(*t)
            })
            .collect();
        let (mut vector, mut scalar) =
            (RateColumns::new(rates.iter().copied()), RateColumns::new(rates.iter().copied()));
        // SAFETY: the processor has the features the kernel is compiled for.
        #[cfg(target_arch = "x86_64")]
        unsafe {
            simd::run_block(&mut vector, 0, &times, &gaps)
        };
        run_block_scalar(&mut scalar, 0, &times, &gaps);
        assert_eq!(format!("{vector:?}"), format!("{scalar:?}"));
        // The block did something: at the slowest rates the burst leaves an excess.
        assert!(scalar.worst.iter().any(|&w| w > 0));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn many_at_once_equal_one_at_a_time_even_past_64_bits(
            rates in prop::collection::vec((1u64..1_000, prop_oneof![1i64..5_000, Just(i64::MAX / 3)]), 1..6),
            mut times in prop::collection::vec(-3_000i64..3_000, 0..60),
            crowd in 0usize..8,
        ) {
            times.sort();
            // Events at one instant make the excess grow by P each: with P near 2^63 / 3,
            // a few of them go past 64 bits.
            times.extend(std::iter::repeat_n(3_000, crowd));
            let rates: Vec<Rate> = rates.iter().map(|&(n, p)| Rate::new(n, Span::from_micros(p).unwrap()).unwrap()).collect();
            let mut many = MinBucketFinders::new(&rates);
            let mut one: Vec<MinBucketFinder> = rates.iter().map(|&r| MinBucketFinder::new(r)).collect();
            for &t in &times {
                let t = Timestamp::from_micros(t).unwrap();
                many.push(t);
                one.iter_mut().for_each(|m| m.push(t));
            }
            let one: Vec<Lossless> = one.iter().map(MinBucketFinder::result).collect();
            prop_assert_eq!(many.results(), one);
        }

        #[test]
        #[ignore = "needs AVX-512"]
        fn the_vector_and_scalar_blocks_agree_avx512(
            rates in prop::collection::vec((1i64..1_000, 1i64..5_000), 1..20),
            mut gaps in prop::collection::vec(0i64..3_000, 1..80),
        ) {
            assert_vector_kernel_runs();
            gaps[0] = i64::MAX / 2_000;
            let times: Vec<i64> = gaps.iter().scan(0, |t, &g| { *t += g.min(3_000); Some(*t) }).collect();
            let (mut a, mut b) = (RateColumns::new(rates.iter().copied()), RateColumns::new(rates.iter().copied()));
            // SAFETY: the processor has the features the kernel is compiled for.
            #[cfg(target_arch = "x86_64")]
            unsafe { simd::run_block(&mut a, 0, &times, &gaps) };
            run_block_scalar(&mut b, 0, &times, &gaps);
            prop_assert_eq!(format!("{a:?}"), format!("{b:?}"));
        }
    }
}
