//! Hand-computed settlements, and the engine held to a plain event-heap simulation.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::num::NonZeroU64;

use proptest::prelude::*;

use super::*;
use crate::event::KeyNotes;
use crate::limiter::Algorithm;
use crate::units::rate::Rate;
use crate::units::time::Span;

pub(super) fn at(s: i64) -> Timestamp {
    Timestamp::from_micros(s * 1_000_000).unwrap()
}

pub(super) fn rate_layer(
    algorithm: Algorithm,
    rate: &str,
    burst: u64,
    charge: Charge,
) -> SettledLayer {
    let settings = Settings {
        algorithm,
        rate: rate.parse().unwrap(),
        burst: NonZeroU64::new(burst).unwrap(),
        window: Span::MINUTE,
        params: algorithm.default_params(),
    };
    SettledLayer { bound: Bound::Rate(settings), keyed: false, charge }
}

pub(super) fn cap(max: u64) -> SettledLayer {
    let bound = Bound::Concurrency(NonZeroU64::new(max).unwrap());
    SettledLayer { bound, keyed: false, charge: Charge::Arrival }
}

/// Runs requests (arrival s, duration s, estimate, cost) through one layer; the decisions.
fn run(layer: SettledLayer, requests: &[(i64, i64, u64, u64)]) -> (Vec<bool>, LayerSettled) {
    let mut settling = Settling::new(&[layer]).unwrap();
    let passed = requests
        .iter()
        .map(|&(a, d, reserve, cost)| {
            let request = Request { arrival: at(a), completion: at(a + d), key: 0 };
            settling.arrive(request, &[Amount { reserve, cost }]).unwrap() == 0
        })
        .collect();
    settling.finish();
    (passed, settling.settled()[0])
}

#[test]
fn a_reservation_settled_for_less_gives_the_rest_back_at_completion() {
    // 100 a minute, bucket of 100. Reserve 80, use 20: at 1 s, 60 come back (and 1⅔
    // refilled), so the second reservation of 80 at 1 s passes; a third at 1 s does not.
    let layer = rate_layer(Algorithm::TokenBucket, "100/m", 100, Charge::Reserve);
    let (passed, settled) = run(layer, &[(0, 1, 80, 20), (1, 5, 80, 80), (1, 5, 80, 80)]);
    assert_eq!(passed, [true, true, false]);
    assert_eq!((settled.reserved, settled.refunded, settled.refused), (160, 60, 1));
    // Without the refund, the second would have been refused: 20 + 1⅔ < 80.
    let layer = rate_layer(Algorithm::TokenBucket, "100/m", 100, Charge::Arrival);
    assert_eq!(run(layer, &[(0, 1, 0, 80), (1, 5, 0, 80)]).0, [true, false]);
}

#[test]
fn a_reservation_settled_for_more_takes_the_bucket_into_debt_that_refill_pays() {
    // GCRA, 60 a minute (one a second), burst 10. Reserve 10, use 40 over 2 s: at 2 s the
    // bucket holds 2, takes 30 more, and owes 28. A request of 1 finds −1 at 29 s and 0 at
    // 30 s, both refused; at 31 s it finds 1, and passes.
    let layer = rate_layer(Algorithm::Gcra, "60/m", 10, Charge::Reserve);
    let requests = [(0, 2, 10, 40), (29, 0, 1, 1), (30, 0, 1, 1), (31, 0, 1, 1)];
    let (passed, settled) = run(layer, &requests);
    assert_eq!(passed, [true, false, false, true]);
    assert_eq!(
        (settled.largest_debt, settled.charged_after, settled.most_spent),
        (28, 30, Some(41))
    );
}

#[test]
fn charged_at_completion_every_concurrent_request_passes_as_envoys_ai_gateway_does() {
    // envoyproxy/ai-gateway#680: five at once, 130 tokens each, against 100 a minute.
    let layer = rate_layer(Algorithm::FixedWindow, "100/m", 1, Charge::Completion);
    let requests = [(0, 5, 0, 130); 5];
    let (passed, settled) = run(layer, &requests);
    assert_eq!(passed, [true; 5]);
    assert_eq!(
        (settled.most_spent, settled.largest_debt, settled.peak_in_flight),
        (Some(650), 550, 5)
    );
    // The window past the completion counts them; one more at 6 s is refused, at 60 s not.
    let mut more = requests.to_vec();
    more.extend([(6, 0, 0, 1), (60, 0, 0, 1)]);
    assert_eq!(run(layer, &more).0[5..], [false, true]);
}

#[test]
fn envoys_ai_gateway_checks_with_an_addend_of_zero_and_lets_a_request_in_at_exactly_n() {
    // envoy-ratelimit at 100 a minute, charged at completion as the AI gateway charges (a
    // descriptor's hits_addend of 0 on the request, the tokens on the response): 100
    // tokens bring the count to N, and the next request still passes (100 ≤ 100), where an
    // exact limiter asked for 1 refuses it; its 1 more token (101) refuses the third.
    let requests = [(0, 1, 0, 100), (2, 1, 0, 1), (4, 0, 0, 1)];
    let envoy = rate_layer(Algorithm::EnvoyRatelimit, "100/m", 1, Charge::Completion);
    assert_eq!(run(envoy, &requests).0, [true, true, false]);
    let exact = rate_layer(Algorithm::FixedWindow, "100/m", 1, Charge::Completion);
    assert_eq!(run(exact, &requests).0, [true, false, false]);
}

#[test]
fn a_completion_at_an_arrivals_time_comes_first_and_a_zero_duration_ends_at_once() {
    let (passed, settled) = run(cap(1), &[(0, 3, 0, 0), (3, 0, 0, 0), (3, 0, 0, 0), (3, 1, 0, 0)]);
    assert_eq!(passed, [true, true, true, true]);
    assert_eq!(settled.peak_in_flight, 1);
    let (passed, _) = run(cap(2), &[(0, 3, 0, 0), (1, 3, 0, 0), (2, 0, 0, 0), (3, 9, 0, 0)]);
    assert_eq!(passed, [true, true, false, true]);
}

#[test]
fn a_reserve_that_cannot_give_back_a_litellm_charged_after_and_a_zone_are_refused_by_name() {
    let layer = rate_layer(Algorithm::SlidingLog, "10/m", 1, Charge::Reserve);
    let error = Settling::new(&[layer]).unwrap_err().to_string();
    assert!(error.starts_with("sliding-log cannot give back"), "{error}");
    assert!(error.ends_with("fixed-window, token-bucket, gcra, litellm"), "{error}");
    let litellm = rate_layer(Algorithm::Litellm, "10/m", 1, Charge::Completion);
    let error = Settling::new(&[litellm]).unwrap_err().to_string();
    assert!(error.starts_with("litellm is not settled"), "{error}");
    assert!(
        Settling::new(&[rate_layer(Algorithm::SlidingLog, "10/m", 1, Charge::Completion)]).is_ok()
    );
    let zone = rate_layer(Algorithm::Nginx, "10/m", 1, Charge::Arrival);
    assert!(Settling::new(&[zone]).unwrap_err().to_string().starts_with("nginx is not settled"));
    let mut settling = Settling::new(&[cap(1)]).unwrap();
    let late = Request { arrival: at(5), completion: at(4), key: 0 };
    assert_eq!(settling.arrive(late, &[Amount::default()]), Err(SettleError::Order));
}

// The simulation the engine is held to: a heap of every event, arrivals pushed at the
// start and completions as requests pass, popped in (time, completion first, arrival
// order); each limit an account kept plainly.

/// A layer of the simulation: a bucket (token bucket and GCRA alike) in units of 1/p
/// token, a fixed window's counts by window, or a cap.
#[derive(Clone, Debug)]
enum Plain {
    /// A bucket; a leaky queue's (`delays`) makes an admitted request wait until the
    /// bucket is full again, served then.
    Bucket {
        n: i128,
        p: i128,
        b: i128,
        level: BTreeMap<u32, (i128, i128)>,
        delays: bool,
    },
    Window {
        n: u64,
        period: i64,
        counts: BTreeMap<(u32, i64), u64>,
    },
    /// LiteLLM's: each key's window (its whole second, in µs) and count.
    Litellm {
        n: i128,
        period: i64,
        windows: BTreeMap<u32, (i64, i128)>,
    },
    Cap {
        max: u64,
    },
}

impl Plain {
    fn new(bound: Bound) -> Plain {
        match bound {
            Bound::Concurrency(c) => Plain::Cap { max: c.get() },
            Bound::Rate(s) if s.algorithm == Algorithm::FixedWindow => Plain::Window {
                n: s.rate.count(),
                period: s.rate.period().as_micros(),
                counts: BTreeMap::new(),
            },
            Bound::Rate(s) if s.algorithm == Algorithm::Litellm => Plain::Litellm {
                n: i128::from(s.rate.count()),
                period: s.rate.period().as_micros(),
                windows: BTreeMap::new(),
            },
            Bound::Rate(s) => Plain::Bucket {
                n: s.rate.n(),
                p: s.rate.p(),
                b: i128::from(s.burst.get()),
                level: BTreeMap::new(),
                delays: s.algorithm == Algorithm::LeakyQueue,
            },
        }
    }

    /// The level of key `k`'s bucket at `t`, refilled (in units of 1/p token).
    fn level(
        n: i128,
        p: i128,
        b: i128,
        level: &mut BTreeMap<u32, (i128, i128)>,
        k: u32,
        t: i64,
    ) -> &mut i128 {
        let (l, last) = level.entry(k).or_insert((b * p, i128::from(t)));
        *l = (*l + n * (i128::from(t) - *last)).min(b * p);
        *last = i128::from(t);
        l
    }

    fn admits(&mut self, k: u32, t: i64, units: u64, in_flight: u64) -> bool {
        match self {
            Plain::Bucket { n, p, b, level, .. } => {
                *Plain::level(*n, *p, *b, level, k, t) >= i128::from(units) * *p
            }
            Plain::Window { n, period, counts } => {
                counts.get(&(k, t.div_euclid(*period))).copied().unwrap_or(0) + units <= *n
            }
            Plain::Litellm { n, period, windows } => {
                let count = Plain::open(*period, windows, k, t).map_or(0, |(_, count)| *count);
                let units = i128::from(units);
                if units > 0 { count + units <= *n } else { count < *n }
            }
            Plain::Cap { max } => in_flight < *max,
        }
    }

    /// LiteLLM's window of key `k` open at `t`, if one is: its second and count.
    fn open(
        period: i64,
        windows: &mut BTreeMap<u32, (i64, i128)>,
        k: u32,
        t: i64,
    ) -> Option<&mut (i64, i128)> {
        let second = t.div_euclid(1_000_000) * 1_000_000;
        windows.get_mut(&k).filter(|(start, _)| second - *start < period)
    }

    /// How long a request of key `k` admitted at `t` waits to be served, in whole µs: a
    /// leaky queue's until its bucket is full again (what it lacks, refilled at N a
    /// period); 0 for the others.
    fn wait(&mut self, k: u32, t: i64) -> i64 {
        match self {
            Plain::Bucket { n, p, b, level, delays: true } => {
                let lacks = *b * *p - *Plain::level(*n, *p, *b, level, k, t);
                i64::try_from((lacks.max(0) + *n - 1) / *n).unwrap()
            }
            _ => 0,
        }
    }

    /// Charges `units` to key `k` as a request is admitted at `t`: as [`add`](Plain::add),
    /// but for LiteLLM's, whose hit opens a window where none is open.
    fn arrive(&mut self, k: u32, t: i64, units: u64) {
        if let Plain::Litellm { period, windows, .. } = self {
            match Plain::open(*period, windows, k, t) {
                Some((_, count)) => *count += i128::from(units),
                None => _ = windows.insert(k, (t.div_euclid(1_000_000) * 1_000_000, units.into())),
            }
            return;
        }
        self.add(k, t, i128::from(units));
    }

    /// Adds `units` (negative: gives back) at `t`, and returns what key `k` then owes.
    fn add(&mut self, k: u32, t: i64, units: i128) -> u64 {
        match self {
            Plain::Bucket { n, p, b, level, .. } => {
                let (p, b) = (*p, *b);
                let l = Plain::level(*n, p, b, level, k, t);
                *l = (*l - units * p).min(b * p);
                u64::try_from(((-*l).max(0) + p - 1) / p).unwrap()
            }
            Plain::Window { n, period, counts } => {
                let count = counts.entry((k, t.div_euclid(*period))).or_insert(0);
                let after = i128::from(*count) + units;
                *count = u64::try_from(after.max(0)).unwrap();
                count.saturating_sub(*n)
            }
            // Settled into the window open at `t`, below 0 if it must; lost if none is.
            Plain::Litellm { n, period, windows } => match Plain::open(*period, windows, k, t) {
                Some((_, count)) => {
                    *count += units;
                    u64::try_from((*count - *n).max(0)).unwrap()
                }
                None => 0,
            },
            Plain::Cap { .. } => 0,
        }
    }
}

/// What the simulation finds: each request's refusals, and each layer's figures.
fn simulate(
    layers: &[SettledLayer],
    requests: &[(Request, Vec<Amount>)],
) -> (Vec<u32>, Vec<LayerSettled>) {
    let mut plain: Vec<Plain> = layers.iter().map(|l| Plain::new(l.bound)).collect();
    let mut figures = vec![LayerSettled::default(); layers.len()];
    let mut flying: Vec<BTreeMap<u32, u64>> = vec![BTreeMap::new(); layers.len()];
    let mut admitted: Vec<Vec<(u32, i64, u64)>> = vec![Vec::new(); layers.len()];
    // (time, 0 for a completion and 1 for an arrival, arrival number).
    let mut heap: BinaryHeap<Reverse<(i64, u8, usize)>> =
        (0..requests.len()).map(|i| Reverse((requests[i].0.arrival.as_micros(), 1, i))).collect();
    let mut refused = vec![0u32; requests.len()];
    while let Some(Reverse((t, kind, i))) = heap.pop() {
        let (request, amounts) = &requests[i];
        let key = |l: &SettledLayer| if l.keyed { request.key } else { 0 };
        if kind == 1 {
            for (n, l) in layers.iter().enumerate() {
                let units = match l.charge {
                    Charge::Arrival => amounts[n].cost,
                    Charge::Reserve => amounts[n].reserve,
                    Charge::Completion => 1,
                };
                let flight = flying[n].get(&key(l)).copied().unwrap_or(0);
                if !plain[n].admits(key(l), t, units, flight) {
                    refused[i] |= 1 << n;
                    figures[n].refused += 1;
                }
            }
            if refused[i] != 0 {
                continue;
            }
            let mut wait = 0;
            for (n, l) in layers.iter().enumerate() {
                let flight = flying[n].entry(key(l)).or_insert(0);
                *flight += 1;
                figures[n].peak_in_flight = figures[n].peak_in_flight.max(*flight);
                if matches!(l.bound, Bound::Concurrency(_)) {
                    continue;
                }
                admitted[n].push((key(l), t, amounts[n].cost));
                if l.charge != Charge::Completion {
                    wait = wait.max(plain[n].wait(key(l), t));
                }
                match l.charge {
                    Charge::Arrival => plain[n].arrive(key(l), t, amounts[n].cost),
                    Charge::Reserve => {
                        plain[n].arrive(key(l), t, amounts[n].reserve);
                        figures[n].reserved += u128::from(amounts[n].reserve);
                    }
                    Charge::Completion => {}
                }
            }
            heap.push(Reverse((request.completion.as_micros() + wait, 0, i)));
        } else {
            for (n, l) in layers.iter().enumerate() {
                *flying[n].get_mut(&key(l)).unwrap() -= 1;
                let (e, a) = (i128::from(amounts[n].reserve), i128::from(amounts[n].cost));
                let units = match (l.bound, l.charge) {
                    (Bound::Concurrency(_), _) | (_, Charge::Arrival) => continue,
                    (_, Charge::Reserve) => a - e,
                    (_, Charge::Completion) => a,
                };
                let owed = plain[n].add(key(l), t, units);
                if units > 0 {
                    figures[n].charged_after += units.unsigned_abs();
                    figures[n].largest_debt = figures[n].largest_debt.max(owed);
                } else {
                    figures[n].refunded += units.unsigned_abs();
                }
            }
        }
    }
    for (n, l) in layers.iter().enumerate() {
        let Bound::Rate(s) = l.bound else { continue };
        let period = s.rate.period().as_micros();
        let spent = &admitted[n];
        let mut most = (0u128, None);
        for &(k, from, _) in spent.iter().filter(|&&(_, _, c)| c > 0) {
            let sum: u128 = (spent.iter())
                .filter(|&&(k2, t, _)| k2 == k && t >= from && t - from < period)
                .map(|&(_, _, c)| u128::from(c))
                .sum();
            if sum > most.0 {
                most = (sum, Timestamp::from_micros(from));
            }
        }
        figures[n].most_spent = Some(most.0);
        figures[n].most_spent_from = most.1;
    }
    (refused, figures)
}

fn any_layer() -> impl Strategy<Value = SettledLayer> {
    let algorithm = prop_oneof![
        Just(Algorithm::TokenBucket),
        Just(Algorithm::Gcra),
        Just(Algorithm::FixedWindow),
        Just(Algorithm::Litellm),
        Just(Algorithm::LeakyQueue)
    ];
    let charge =
        prop_oneof![Just(Charge::Arrival), Just(Charge::Reserve), Just(Charge::Completion)];
    let period = prop_oneof![Just(1_000_000i64), Just(10_000_000), 1i64..=20_000_000];
    let rate = (algorithm, 1u64..=20, period, 1u64..=20, charge, any::<bool>()).prop_map(
        |(algorithm, n, p, b, charge, keyed)| {
            // LiteLLM reserves at pre-call: it charges nothing only at completion.
            let charge = match (algorithm, charge) {
                (Algorithm::Litellm, Charge::Completion) => Charge::Reserve,
                // A leaky queue gives nothing back.
                (Algorithm::LeakyQueue, Charge::Reserve) => Charge::Arrival,
                _ => charge,
            };
            let settings = Settings {
                algorithm,
                rate: Rate::new(n, Span::from_micros(p).unwrap()).unwrap(),
                burst: NonZeroU64::new(b).unwrap(),
                window: Span::MINUTE,
                params: algorithm.default_params(),
            };
            SettledLayer { bound: Bound::Rate(settings), keyed, charge }
        },
    );
    let capped = (1u64..=4, any::<bool>()).prop_map(|(max, keyed)| SettledLayer {
        bound: Bound::Concurrency(NonZeroU64::new(max).unwrap()),
        keyed,
        charge: Charge::Arrival,
    });
    prop_oneof![4 => rate, 1 => capped]
}

/// Layers, and requests: gaps often 0 (ties), durations often 0, amounts small.
pub(super) fn scenario() -> impl Strategy<Value = (Vec<SettledLayer>, Vec<(Request, Vec<Amount>)>)>
{
    scenario_of(any_layer())
}

/// Layers of `layer`, and requests as [`scenario`]'s.
fn scenario_of(
    layer: impl Strategy<Value = SettledLayer>,
) -> impl Strategy<Value = (Vec<SettledLayer>, Vec<(Request, Vec<Amount>)>)> {
    prop::collection::vec(layer, 1..=3)
        .prop_flat_map(|layers| {
            let width = layers.len();
            let amount =
                (0u64..=12, 0u64..=12).prop_map(|(reserve, cost)| Amount { reserve, cost });
            let gap = prop_oneof![3 => Just(0i64), 3 => 0i64..3_000_000, 1 => Just(1_000_000)];
            let duration = prop_oneof![3 => Just(0i64), 4 => 0i64..8_000_000, 1 => Just(1_000_000)];
            let one = (gap, duration, 0u32..3, prop::collection::vec(amount, width));
            (Just(layers), prop::collection::vec(one, 0..60))
        })
        .prop_map(|(layers, steps)| {
            let mut now = 0;
            let requests = steps
                .into_iter()
                .map(|(gap, duration, key, amounts)| {
                    now += gap;
                    let arrival = Timestamp::from_micros(now).unwrap();
                    let completion = Timestamp::from_micros(now + duration).unwrap();
                    (Request { arrival, completion, key }, amounts)
                })
                .collect();
            (layers, requests)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    /// The engine decides and settles every request as the event-heap simulation does,
    /// in every charge and with caps, ties, zero durations and debt, and its figures are
    /// the simulation's.
    #[test]
    fn settling_is_the_event_heap_simulation((layers, requests) in scenario()) {
        as_simulated(&layers, &requests)?;
    }

    /// LiteLLM's layers (with caps) too, on their own: a refund into the next window, below
    /// 0, and a settlement lost with no window open are common here.
    #[test]
    fn a_litellm_layer_settles_as_the_heap_simulation(
        (layers, requests) in scenario_of(any_layer().prop_filter("LiteLLM's or a cap", |l| {
            matches!(l.bound, Bound::Concurrency(_))
                || matches!(l.bound, Bound::Rate(s) if s.algorithm == Algorithm::Litellm)
        }))
    ) {
        as_simulated(&layers, &requests)?;
    }
}

/// Holds the engine's decisions and figures on `requests` to the simulation's.
fn as_simulated(
    layers: &[SettledLayer],
    requests: &[(Request, Vec<Amount>)],
) -> Result<(), TestCaseError> {
    let (want, figures) = simulate(layers, requests);
    let mut settling = Settling::new(layers).unwrap();
    let got: Vec<u32> = requests.iter().map(|(r, a)| settling.arrive(*r, a).unwrap()).collect();
    settling.finish();
    prop_assert_eq!(got, want);
    prop_assert_eq!(settling.settled(), figures);
    prop_assert_eq!(settling.in_flight(), 0);
    Ok(())
}

/// Requests of one key for a bucket, and a period.
pub(super) fn one_key() -> impl Strategy<Value = (Vec<(Request, Amount)>, Charge, Span)> {
    let charge =
        prop_oneof![Just(Charge::Arrival), Just(Charge::Reserve), Just(Charge::Completion)];
    let per = prop_oneof![Just(1_000_000i64), Just(10_000_000), 1i64..=20_000_000];
    let amount = (0u64..=9, 0u64..=9).prop_map(|(reserve, cost)| Amount { reserve, cost });
    let gap = prop_oneof![3 => Just(0i64), 3 => 0i64..3_000_000];
    let one = (gap, 0i64..5_000_000, amount);
    (prop::collection::vec(one, 0..30), charge, per).prop_map(|(steps, charge, per)| {
        let mut now = 0;
        let requests = (steps.into_iter())
            .map(|(gap, duration, amount)| {
                now += gap;
                let (arrival, completion) = (
                    Timestamp::from_micros(now).unwrap(),
                    Timestamp::from_micros(now + duration).unwrap(),
                );
                (Request { arrival, completion, key: 0 }, amount)
            })
            .collect();
        (requests, charge, Span::from_micros(per).unwrap())
    })
}

/// Whether the simulation's bucket of `limit` a `per` refuses none of `requests`.
fn simulated_lossless(
    requests: &[(Request, Amount)],
    charge: Charge,
    per: Span,
    limit: u64,
) -> bool {
    let settings = Settings {
        algorithm: Algorithm::TokenBucket,
        rate: Rate::new(limit, per).unwrap(),
        burst: NonZeroU64::new(limit).unwrap(),
        window: per,
        params: Algorithm::TokenBucket.default_params(),
    };
    let layers = [SettledLayer { bound: Bound::Rate(settings), keyed: false, charge }];
    let requests: Vec<(Request, Vec<Amount>)> =
        requests.iter().map(|&(r, a)| (r, vec![a])).collect();
    simulate(&layers, &requests).0.iter().all(|&refused| refused == 0)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// The smallest limit is the first L of a linear scan, by the simulation: it refuses
    /// nothing, and L − 1 refuses something.
    #[test]
    fn the_smallest_limit_is_the_linear_scans((requests, charge, per) in one_key()) {
        let found = min_limit(&requests, charge, per).unwrap();
        if requests.is_empty() {
            prop_assert_eq!(found, 0);
            return Ok(());
        }
        let scanned = (1..).find(|&l| simulated_lossless(&requests, charge, per, l)).unwrap();
        prop_assert_eq!(found, scanned);
        prop_assert!(found == 1 || !simulated_lossless(&requests, charge, per, found - 1));
    }
}

#[test]
fn the_smallest_limit_of_five_at_once_charged_at_arrival_is_their_sum() {
    // Five requests of 130 at once need a bucket of 650: refill comes too late.
    let at0 = Request { arrival: at(0), completion: at(5), key: 0 };
    let requests = [(at0, Amount { reserve: 0, cost: 130 }); 5];
    assert_eq!(min_limit(&requests, Charge::Arrival, Span::MINUTE), Some(650));
    // Charged at completion, a bucket of 1 admits them all at 0 s.
    assert_eq!(min_limit(&requests, Charge::Completion, Span::MINUTE), Some(1));
}

#[test]
fn a_keyed_layer_whose_system_skips_the_empty_key_lets_it_through_uncounted() {
    // envoy-ratelimit by key, 1 a minute, charged at completion: key 0 is the empty key,
    // through uncounted as often as it comes; key 1 is let in while its count is at most 1
    // (the AI gateway's check of 0), and refused its third.
    let mut layer = rate_layer(Algorithm::EnvoyRatelimit, "1/m", 1, Charge::Completion);
    layer.keyed = true;
    let mut settling = Settling::new(&[layer]).unwrap();
    let empty = KeyNotes::default();
    empty.set(0);
    settling.share_key_notes(&empty);
    let mut passed = Vec::new();
    for (s, key) in [(0, 0), (1, 0), (2, 0), (3, 1), (4, 1), (5, 1)] {
        let request = Request { arrival: at(s), completion: at(s), key };
        passed.push(settling.arrive(request, &[Amount { reserve: 0, cost: 1 }]).unwrap() == 0);
    }
    assert_eq!(passed, [true, true, true, true, true, false]);
}
