//! Shared helpers for the limiter tests, and property tests of the limiters' promises.

use proptest::prelude::*;

use super::*;
use crate::units::time::Span;

/// Returns a burst, which must not be zero.
pub fn burst(b: u64) -> std::num::NonZeroU64 {
    std::num::NonZeroU64::new(b).expect("a burst of at least one")
}

/// Returns timestamps at the given whole seconds.
pub fn secs(secs: &[i64]) -> Vec<Timestamp> {
    secs.iter().map(|s| Timestamp::from_micros(s * 1_000_000).unwrap()).collect()
}

/// Runs a limiter over events given as (whole second, cost) and returns its decisions.
pub fn weighted(limiter: &mut impl Limiter, events: &[(i64, u64)]) -> Vec<bool> {
    events.iter().map(|&(s, cost)| limiter.take(secs(&[s])[0], cost, false).passed).collect()
}

/// Runs a limiter over the times and returns its decisions.
pub fn decisions(limiter: &mut impl Limiter, times: &[Timestamp]) -> Vec<bool> {
    times.iter().map(|&t| limiter.admit(t)).collect()
}

fn passed(times: &[Timestamp], decisions: &[bool]) -> Vec<i128> {
    times
        .iter()
        .zip(decisions)
        .filter(|(_, pass)| **pass)
        .map(|(t, _)| i128::from(t.as_micros()))
        .collect()
}

/// The largest number of passed times in any closed interval `[t, t + len]`.
fn most_in_closed(passed: &[i128], len: i128) -> usize {
    (0..passed.len())
        .map(|i| passed[i..].iter().take_while(|&&t| t - passed[i] <= len).count())
        .max()
        .unwrap_or(0)
}

/// A rate, a burst, and sorted times that often fall exactly on interval boundaries.
fn scenario() -> impl Strategy<Value = (Rate, u64, Vec<Timestamp>)> {
    let rates = (1u64..=8, prop_oneof![1i64..=20_000_000, Just(60_000_000), Just(3_600_000_000)]);
    rates
        .prop_flat_map(|(n, p)| {
            let rate = Rate::new(n, Span::from_micros(p).unwrap()).unwrap();
            let step = prop_oneof![
                3 => Just(0i64),
                4 => 0..=2 * p,
                3 => (1..=3i64).prop_map(move |k| k * p / i64::try_from(n).unwrap()),
                1 => Just(p),
            ];
            let start = -10 * p..10 * p;
            (Just(rate), 1u64..=8, start, prop::collection::vec(step, 0..80))
        })
        .prop_map(|(rate, burst, start, steps)| {
            let times = steps
                .iter()
                .scan(start, |t, step| {
                    *t += step;
                    Some(Timestamp::from_micros(*t).unwrap())
                })
                .collect();
            (rate, burst, times)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn token_bucket_passes_at_most_b_plus_rt_in_any_interval((rate, b, times) in scenario()) {
        let passed = passed(&times, &decisions(&mut TokenBucket::new(rate, burst(b)), &times));
        for i in 0..passed.len() {
            for j in i..passed.len() {
                let count = (j - i + 1) as i128;
                let allowed = i128::from(b) * rate.p() + rate.n() * (passed[j] - passed[i]);
                prop_assert!(count * rate.p() <= allowed, "{} events in [{}, {}]", count, i, j);
            }
        }
    }

    #[test]
    fn gcra_decides_exactly_as_the_token_bucket((rate, b, times) in scenario()) {
        let bucket = decisions(&mut TokenBucket::new(rate, burst(b)), &times);
        prop_assert_eq!(decisions(&mut Gcra::new(rate, burst(b)), &times), bucket);
    }

    #[test]
    fn leaky_queue_admits_what_gcra_admits_and_waits_at_most_b_minus_1_intervals(
        (rate, b, times) in scenario()
    ) {
        let mut queue = LeakyQueue::new(rate, burst(b));
        let mut waits = Waits::new(rate);
        let admitted: Vec<bool> =
            times.iter().map(|&t| queue.decide(t)).inspect(|&d| waits.record(d)).map(|d| d.passed).collect();
        prop_assert_eq!(&admitted, &decisions(&mut Gcra::new(rate, burst(b)), &times));
        prop_assert!(waits.longest <= i128::from(b - 1) * rate.p());
        prop_assert_eq!(usize::try_from(waits.admitted).unwrap(), admitted.iter().filter(|&&a| a).count());
    }

    #[test]
    fn every_limiter_said_to_pass_as_gcra_passes_what_gcra_passes((rate, b, times) in scenario()) {
        // The fact a partitioned replay decides ranges by (GCRA's functions), for every
        // limiter that claims it, whatever its name.
        let gcra = decisions(&mut Gcra::new(rate, burst(b)), &times);
        for algorithm in Algorithm::ALL.into_iter().filter(|a| a.passes_as_gcra()) {
            let mut limiter = super::AnyPerKey::new(algorithm, rate, burst(b));
            let decided: Vec<bool> = times.iter().map(|&t| limiter.decide(0, t, 1).passed).collect();
            prop_assert_eq!(&decided, &gcra, "{}", algorithm.name());
        }
    }

    #[test]
    fn sliding_log_passes_at_most_n_in_any_period((rate, _b, times) in scenario()) {
        let decided = decisions(&mut SlidingLog::new(rate), &times);
        let passed = passed(&times, &decided);
        // Any half-open interval (t − P, t] is the closed interval [t − P + 1 µs, t].
        prop_assert!(most_in_closed(&passed, rate.p() - 1) as u64 <= rate.count());
        // And it is the definition: an event passes iff fewer than N earlier events
        // passed in (t − P, t].
        for k in 0..times.len() {
            let t = times[k].as_micros();
            let recent = (0..k)
                .filter(|&e| decided[e] && times[e].as_micros() > t - rate.period().as_micros())
                .count() as u64;
            prop_assert_eq!(decided[k], recent < rate.count());
        }
    }

    #[test]
    fn window_limiters_pass_at_most_n_per_aligned_window_and_2n_per_period(
        (rate, _b, times) in scenario()
    ) {
        for mut limiter in [
            Algorithm::FixedWindow.build(rate, burst(1)),
            Algorithm::SlidingCounter.build(rate, burst(1)),
        ] {
            let passed = passed(&times, &decisions(&mut limiter, &times));
            let mut per_window = std::collections::HashMap::new();
            for t in &passed {
                *per_window.entry(t.div_euclid(rate.p())).or_insert(0u64) += 1;
            }
            prop_assert!(per_window.values().all(|&c| c <= rate.count()));
            prop_assert!(most_in_closed(&passed, rate.p() - 1) as u64 <= 2 * rate.count());
        }
    }

    #[test]
    fn fixed_window_passes_the_first_n_of_each_window((rate, _b, times) in scenario()) {
        let decided = decisions(&mut FixedWindow::new(rate), &times);
        let mut seen = std::collections::HashMap::new();
        for (t, pass) in times.iter().zip(decided) {
            let count = seen.entry(t.as_micros().div_euclid(rate.period().as_micros())).or_insert(0);
            *count += 1;
            prop_assert_eq!(pass, *count <= rate.count());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_fleet_of_one_server_decides_as_one_limiter(
        (rate, b, times) in scenario(), every in 1i64..=7_200_000_000
    ) {
        let sync = Share::Synced(Span::from_micros(every).unwrap());
        for algorithm in Algorithm::ALL {
            let alone = decisions(&mut algorithm.build(rate, burst(b)), &times);
            for share in [Share::Local, Share::Split, sync] {
                let (r, bb) = share.server_limit(rate, burst(b), 1).unwrap();
                let mut fleet = AnyReplicated::new(algorithm, r, bb, 1, share, algorithm.default_params());
                let decided: Vec<bool> = times.iter().map(|&t| fleet.decide(0, 0, t, 1).passed).collect();
                prop_assert_eq!(&decided, &alone, "{:?} {:?}", algorithm, share);
            }
        }
    }

    #[test]
    fn split_token_buckets_pass_at_most_k_shares_of_the_burst_plus_rt(
        (rate, b, times) in scenario(), servers in 2u32..=5
    ) {
        let (each, share) = Share::Split.server_limit(rate, burst(b), servers).unwrap();
        let mut fleet = AnyReplicated::new(Algorithm::TokenBucket, each, share, servers, Share::Split, Algorithm::TokenBucket.default_params());
        let decided: Vec<bool> = (0..times.len())
            .map(|i| fleet.decide(i % servers as usize, 0, times[i], 1).passed)
            .collect();
        let passed = passed(&times, &decided);
        let burst = i128::from(share.get()) * i128::from(servers);
        for i in 0..passed.len() {
            for j in i..passed.len() {
                let count = (j - i + 1) as i128;
                let allowed = burst * rate.p() + rate.n() * (passed[j] - passed[i]);
                prop_assert!(count * rate.p() <= allowed, "{} events in [{}, {}]", count, i, j);
            }
        }
    }
}

/// A weighted run through the three bucket limiters at 1/10s, burst 5: the token bucket's
/// level, worked by hand, and GCRA and the leaky queue deciding alike.
#[test]
fn weighted_bucket_limiters_spend_their_cost_and_decide_alike() {
    let rate: Rate = "1/10s".parse().unwrap();
    // (second, cost, passes, the leaky queue's wait in seconds). The bucket: 5 − 3 = 2;
    // 3 > 2; at 10 s, 2 + 1 = 3, spent; at 20 s, 1 ≥ 0; at 30 s, 2 < 6; 6 > 5 ever.
    let events = [
        (0, 3, true, 0),
        (0, 3, false, 0),
        (10, 3, true, 20),
        (20, 0, true, 40),
        (30, 6, false, 0),
    ];
    for algorithm in [Algorithm::TokenBucket, Algorithm::Gcra, Algorithm::LeakyQueue] {
        let mut limiter = algorithm.build(rate, burst(5));
        for &(s, cost, passes, wait) in &events {
            let decision = limiter.take(secs(&[s])[0], cost, false);
            assert_eq!(decision.passed, passes, "{algorithm:?} at {s} s, cost {cost}");
            if algorithm == Algorithm::LeakyQueue {
                assert_eq!(decision.wait, wait * 1_000_000, "the wait at {s} s, in µs (N = 1)");
            }
        }
    }
}

proptest! {
    /// Weighted, GCRA still makes exactly the token bucket's decisions, and the leaky queue
    /// admits exactly what GCRA passes, whatever the costs (some never fit).
    #[test]
    fn weighted_gcra_and_leaky_queue_decide_as_a_weighted_token_bucket(
        ((rate, b, times), costs) in scenario().prop_flat_map(|s| {
            let (len, most) = (s.2.len(), s.1 + 1);
            (Just(s), prop::collection::vec(0..=most, len))
        })
    ) {
        let mut bucket = TokenBucket::new(rate, burst(b));
        let mut gcra = Gcra::new(rate, burst(b));
        let mut queue = LeakyQueue::new(rate, burst(b));
        for (&t, &cost) in times.iter().zip(&costs) {
            let want = bucket.take(t, cost, false).passed;
            prop_assert_eq!(gcra.take(t, cost, false).passed, want, "gcra at {:?}", t);
            prop_assert_eq!(queue.take(t, cost, false).passed, want, "queue at {:?}", t);
        }
    }
}

/// Replays `events` (time in µs, cost) through a written rule: `decide(passed, t, c)`
/// says whether the event at `t` of cost `c` passes, given every event that passed before
/// it (time, cost). The limiters' own `by_the_rule` are written with it.
pub(super) fn by_rule(
    events: &[(i128, u64)],
    mut decide: impl FnMut(&[(i128, i128)], i128, i128) -> bool,
) -> Vec<bool> {
    let mut passed: Vec<(i128, i128)> = Vec::new();
    let mut out = Vec::with_capacity(events.len());
    for &(t, c) in events {
        let c = i128::from(c);
        let ok = decide(&passed, t, c);
        if ok {
            passed.push((t, c));
        }
        out.push(ok);
    }
    out
}

/// The units of the passed events whose times `keep` keeps.
pub(super) fn used(passed: &[(i128, i128)], keep: impl Fn(i128) -> bool) -> i128 {
    passed.iter().filter(|&&(s, _)| keep(s)).map(|&(_, c)| c).sum()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Every limiter decides by its written rule: with every cost 1 (the unweighted rule,
    /// as before costs), and with costs from 0 to past the burst.
    #[test]
    fn every_limiter_decides_by_its_written_rule(
        ((rate, b, times), costs, ones) in scenario().prop_flat_map(|s| {
            let (len, most) = (s.2.len(), s.1 + 2);
            (Just(s), prop::collection::vec(0..=most, len), any::<bool>())
        })
    ) {
        let costs = if ones { vec![1; costs.len()] } else { costs };
        let events: Vec<(i128, u64)> =
            times.iter().zip(&costs).map(|(t, &c)| (i128::from(t.as_micros()), c)).collect();
        for algorithm in Algorithm::ALL {
            let mut limiter = algorithm.build(rate, burst(b));
            let got: Vec<bool> =
                times.iter().zip(&costs).map(|(&t, &c)| limiter.take(t, c, false).passed).collect();
            prop_assert_eq!(got, algorithm.by_the_rule(rate, b, &events), "{:?}", algorithm);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// `admits` says what the next decision is, and asking it changes no decision: a
    /// refused layer of a layered limit leaves every other layer as it was.
    #[test]
    fn admits_foretells_the_decision_and_spends_nothing(
        ((rate, b, times), costs, asks) in scenario().prop_flat_map(|s| {
            let (len, most) = (s.2.len(), s.1 + 2);
            (Just(s), prop::collection::vec(0..=most, len), prop::collection::vec(0usize..3, len))
        })
    ) {
        for algorithm in Algorithm::ALL {
            let mut asked = AnyPerKey::new(algorithm, rate, burst(b));
            let mut plain = AnyPerKey::new(algorithm, rate, burst(b));
            for ((&t, &c), &n) in times.iter().zip(&costs).zip(&asks) {
                // Ask about this event, and about one ten times as costly, n times over.
                let foretold = asked.admits(0, t, c);
                for _ in 0..n {
                    prop_assert_eq!(asked.admits(0, t, c), foretold);
                    asked.admits(0, t, c * 10);
                }
                let decided = asked.decide(0, t, c).passed;
                prop_assert_eq!(decided, foretold, "{:?}", algorithm);
                prop_assert_eq!(plain.decide(0, t, c).passed, decided, "{:?}", algorithm);
            }
        }
    }
}

#[test]
fn every_limiters_parameters_read_from_nothing_are_its_defaults() {
    for algorithm in Algorithm::ALL {
        let read = algorithm.params(&[]).unwrap();
        assert_eq!(read, algorithm.default_params(), "{algorithm}");
        assert_eq!(read.algorithm(), algorithm);
        // A key it does not take is refused, naming the key.
        if algorithm.param_keys().is_empty() {
            let refused = algorithm.params(&[("delay", Some("1"))]).unwrap_err();
            assert_eq!(refused, ParamError::NotMine("delay".into()), "{algorithm}");
            assert_eq!(read.shown(), None);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// A key at rest decides every later event as a fresh key does, so that a live engine
    /// may forget it: checked before each event, for every limiter, with costs from 0 to
    /// past the burst.
    #[test]
    fn a_key_at_rest_decides_every_later_event_as_a_fresh_key(
        ((rate, b, times), costs) in scenario().prop_flat_map(|s| {
            let (len, most) = (s.2.len(), s.1 + 2);
            (Just(s), prop::collection::vec(0..=most, len))
        })
    ) {
        let events: Vec<(Timestamp, u64)> = times.iter().copied().zip(costs).collect();
        for algorithm in Algorithm::ALL {
            let mut kept = AnyPerKey::new(algorithm, rate, burst(b));
            for (cut, &(now, cost)) in events.iter().enumerate() {
                if kept.at_rest(0, now) {
                    let mut again = kept.clone();
                    let mut fresh = AnyPerKey::new(algorithm, rate, burst(b));
                    for &(t, c) in &events[cut..] {
                        let (want, got) = (fresh.decide(0, t, c), again.decide(0, t, c));
                        prop_assert_eq!(got, want, "{:?} at rest before event {}", algorithm, cut);
                    }
                }
                kept.decide(0, now, cost);
            }
        }
    }
}

/// When one event at 0 s, at 1/s with a burst of 1, leaves each limiter at rest: the
/// first instant after which it decides as a fresh one, by its rule.
#[test]
fn a_limiter_comes_to_rest_when_its_rule_forgets_the_event() {
    let rate = Rate::new(1, Span::from_micros(1_000_000).unwrap()).unwrap();
    let at = |micros: i64| Timestamp::from_micros(micros).unwrap();
    let rests = [
        (Algorithm::Gcra, 1_000_000),
        (Algorithm::TokenBucket, 1_000_000),
        (Algorithm::LeakyQueue, 1_000_000),
        (Algorithm::FixedWindow, 1_000_000),
        (Algorithm::SlidingLog, 1_000_000),
        (Algorithm::SlidingCounter, 2_000_000),
        (Algorithm::LimitsFixedWindow, 1_000_000),
        (Algorithm::LimitsMovingWindow, 1_000_001),
        (Algorithm::LimitsSlidingWindow, 2_000_000),
        (Algorithm::EnvoyRatelimit, 1_000_000),
        (Algorithm::EnvoyLocal, 1_000_000),
        (Algorithm::Traefik, 2_000_000),
    ];
    for (algorithm, rest) in rests {
        let mut limiter = AnyPerKey::new(algorithm, rate, burst(1));
        assert!(limiter.at_rest(0, at(0)), "{algorithm:?}: a key never seen");
        assert!(limiter.decide(0, at(0), 1).passed);
        assert!(!limiter.at_rest(0, at(rest - 1)), "{algorithm:?} at {}", rest - 1);
        assert!(limiter.at_rest(0, at(rest)), "{algorithm:?} at {rest}");
    }
    // nginx's keys come to rest only when its zone frees them, as nginx does; HAProxy's
    // are kept.
    for algorithm in [Algorithm::Nginx, Algorithm::Haproxy] {
        let mut limiter = AnyPerKey::new(algorithm, rate, burst(1));
        limiter.decide(0, at(0), 1);
        assert!(!limiter.at_rest(0, at(1 << 40)), "{algorithm:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever the events before, a key is at rest from the instant `rests_after` gives
    /// for the last of them: a stream cut there replays from a fresh state exactly.
    #[test]
    fn a_key_is_at_rest_once_its_last_event_rests(
        ((rate, b, times), costs) in scenario().prop_flat_map(|s| {
            let (len, most) = (s.2.len(), s.1 + 2);
            (Just(s), prop::collection::vec(0..=most, len))
        })
    ) {
        for algorithm in Algorithm::ALL {
            let mut limiter = AnyPerKey::new(algorithm, rate, burst(b));
            for (n, (&t, &c)) in times.iter().zip(&costs).enumerate() {
                limiter.decide(0, t, c);
                let Some(rest) = limiter.rests_after(t) else { continue };
                prop_assert!(limiter.at_rest(0, rest), "{:?} after event {}", algorithm, n);
                let later = times.iter().skip(n + 1).copied().filter(|&u| u >= rest);
                for u in later {
                    prop_assert!(limiter.at_rest(0, u), "{:?} after event {}", algorithm, n);
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// A limiter that says it admits any part of a stream it admits whole
    /// ([`Rule::ADMITS_ANY_PART`]) does: every event of a random part of the longest start
    /// of a stream it admits whole passes, with costs from 0 to past the burst.
    #[test]
    fn a_limiter_that_admits_a_stream_admits_any_part_of_it(
        ((rate, b, times), costs, kept) in scenario().prop_flat_map(|s| {
            let (len, most) = (s.2.len(), s.1 + 2);
            (Just(s), prop::collection::vec(0..=most, len), prop::collection::vec(any::<bool>(), len))
        })
    ) {
        for algorithm in Algorithm::ALL.into_iter().filter(|a| a.admits_any_part()) {
            let mut whole = algorithm.build(rate, burst(b));
            let admitted = times.iter().zip(&costs).take_while(|&(&t, &c)| whole.take(t, c, false).passed).count();
            let mut part = algorithm.build(rate, burst(b));
            for ((&t, &c), _) in times.iter().zip(&costs).zip(&kept).take(admitted).filter(|(_, k)| **k) {
                prop_assert!(part.take(t, c, false).passed, "{:?} refuses {:?} of a part", algorithm, t);
            }
        }
    }
}
