//! What live use and stores add to settling, held to the settling in memory: a refused
//! request's retry-after, limiters kept in a store, and requests opened and closed live.

use std::collections::BTreeMap;
use std::num::NonZeroU64;

use proptest::prelude::*;

use super::tests::{at, cap, one_key, rate_layer, scenario};
use super::*;
use crate::event::slot;
use crate::limiter::{Algorithm, AnyPerKey};
use crate::units::rate::Rate;
use crate::units::time::Span;

#[test]
fn retry_after_is_the_refill_a_bucket_needs_or_the_first_completion_a_cap_waits_for() {
    // 100 a minute: 60 leave 40, and the next 60 waits for 20 more, 0.6 s each: 12 s.
    let bucket = rate_layer(Algorithm::TokenBucket, "100/m", 100, Charge::Arrival);
    let mut settling = Settling::new(&[bucket]).unwrap();
    let request = Request { arrival: at(0), completion: at(30), key: 0 };
    let costs = [Amount { reserve: 0, cost: 60 }];
    assert_eq!(settling.arrive(request, &costs), Ok(0));
    let refused = settling.arrive(request, &costs).unwrap();
    assert_eq!(settling.retry_after(request, &costs, refused), Some(12_000_000));
    // A cost past the bucket never passes.
    let huge = [Amount { reserve: 0, cost: 101 }];
    let refused = settling.arrive(request, &huge).unwrap();
    assert_eq!(settling.retry_after(request, &huge, refused), None);
    // A cap of one: the request in flight since 0 s ends at 5 s; one at 1 s waits 4 s.
    let mut settling = Settling::new(&[cap(1)]).unwrap();
    let first = Request { arrival: at(0), completion: at(5), key: 0 };
    assert_eq!(settling.arrive(first, &[Amount::default()]), Ok(0));
    let second = Request { arrival: at(1), completion: at(2), key: 0 };
    let refused = settling.arrive(second, &[Amount::default()]).unwrap();
    assert_eq!(settling.retry_after(second, &[Amount::default()], refused), Some(4_000_000));
    // The answer is exact: a microsecond sooner, it is still refused; at it, admitted.
    let retried = |after: i64| {
        let arrival = Timestamp::from_micros(1_000_000 + after).unwrap();
        Request { arrival, completion: at(9), key: 0 }
    };
    assert_ne!(settling.clone().arrive(retried(3_999_999), &[Amount::default()]), Ok(0));
    assert_eq!(settling.arrive(retried(4_000_000), &[Amount::default()]), Ok(0));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Where nothing in flight changes a limiter (costs charged at arrival), a refused
    /// request's retry-after is exact: at it the request is admitted, a microsecond sooner
    /// it is not.
    #[test]
    fn retry_after_is_exact_where_only_time_changes_the_limiter(
        (requests, _, per) in one_key(),
        algorithm in prop_oneof![Just(Algorithm::TokenBucket), Just(Algorithm::Gcra), Just(Algorithm::FixedWindow)],
        limit in 5u64..=20,
    ) {
        let settings = Settings {
            algorithm,
            rate: Rate::new(limit, Span::from_micros(per.as_micros()).unwrap()).unwrap(),
            burst: NonZeroU64::new(limit).unwrap(),
            window: per,
            params: algorithm.default_params(),
        };
        let layers = [SettledLayer { bound: Bound::Rate(settings), keyed: false, charge: Charge::Arrival }, cap(3)];
        let mut settling = Settling::new(&layers).unwrap();
        for (request, amount) in requests {
            let amounts = [amount, Amount::default()];
            let refused = settling.arrive(request, &amounts).unwrap();
            if refused & 1 == 0 {
                continue;
            }
            // Asked of the rate layer alone, whose state only time changes.
            let Some(after) = settling.retry_after(request, &amounts, 1) else { continue };
            prop_assert!(after > 0);
            let at = |micros: i64| Request {
                arrival: Timestamp::from_micros(request.arrival.as_micros() + micros).unwrap(),
                completion: Timestamp::from_micros(request.arrival.as_micros() + micros).unwrap(),
                key: 0,
            };
            prop_assert_eq!(settling.clone().arrive(at(after), &amounts).unwrap() & 1, 0);
            prop_assert_eq!(settling.clone().arrive(at(after - 1), &amounts).unwrap() & 1, 1);
        }
    }
}

/// The layers' rate limiters kept apart from the settling, as a store keeps them.
struct Kept(Vec<Option<AnyPerKey>>);

impl Kept {
    fn of(layers: &[SettledLayer]) -> Kept {
        Kept(
            layers
                .iter()
                .map(|l| match l.bound {
                    Bound::Rate(settings) => Some(settings.per_key()),
                    Bound::Concurrency(_) => None,
                })
                .collect(),
        )
    }

    fn limiter(&mut self, layer: usize) -> Result<&mut AnyPerKey, String> {
        self.0[layer].as_mut().ok_or_else(|| format!("layer {layer} has no rate"))
    }
}

impl Store for Kept {
    fn admits(
        &mut self,
        layer: usize,
        key: Key,
        now: Timestamp,
        cost: u64,
    ) -> Result<bool, String> {
        Ok(self.limiter(layer)?.admits(slot(key), now, cost))
    }

    fn charge(&mut self, layer: usize, key: Key, now: Timestamp, cost: u64) -> Result<(), String> {
        self.limiter(layer)?.charge(slot(key), now, cost);
        Ok(())
    }

    fn settle_charge(
        &mut self,
        layer: usize,
        key: Key,
        now: Timestamp,
        cost: u64,
    ) -> Result<(), String> {
        self.limiter(layer)?.settle_charge(slot(key), now, cost);
        Ok(())
    }

    fn give_back(
        &mut self,
        layer: usize,
        key: Key,
        now: Timestamp,
        units: u64,
    ) -> Result<(), String> {
        self.limiter(layer)?.give_back(slot(key), now, units);
        Ok(())
    }

    fn owed(&mut self, layer: usize, key: Key, now: Timestamp) -> Result<u64, String> {
        Ok(self.limiter(layer)?.owed(slot(key), now))
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// With the rate limiters kept in a store, the settling asks the store every question
    /// it asked its own, and decides and reports the same.
    #[test]
    fn settling_with_a_store_is_settling_in_memory((layers, requests) in scenario()) {
        // A store's limiters say no wait: a layer that delays is not kept in one.
        let delays = |l: &SettledLayer| matches!(l.bound, Bound::Rate(s) if s.algorithm.delays());
        prop_assume!(!layers.iter().any(delays));
        let mut here = Settling::new(&layers).unwrap();
        let mut there = Settling::new(&layers).unwrap();
        let mut store = Kept::of(&layers);
        for (request, amounts) in &requests {
            let want = here.arrive(*request, amounts).unwrap();
            prop_assert_eq!(there.arrive_sharing(&mut store, *request, amounts).unwrap(), want);
        }
        here.finish();
        there.finish_sharing(&mut store).unwrap();
        prop_assert_eq!(there.settled(), here.settled());
    }
}

#[test]
fn a_store_that_fails_fails_the_settling_with_its_words() {
    struct Down;
    impl Store for Down {
        fn admits(&mut self, _: usize, _: Key, _: Timestamp, _: u64) -> Result<bool, String> {
            Err("redis://127.0.0.1:1: connection refused".into())
        }
        fn charge(&mut self, _: usize, _: Key, _: Timestamp, _: u64) -> Result<(), String> {
            Ok(())
        }
        fn give_back(&mut self, _: usize, _: Key, _: Timestamp, _: u64) -> Result<(), String> {
            Ok(())
        }
        fn owed(&mut self, _: usize, _: Key, _: Timestamp) -> Result<u64, String> {
            Ok(0)
        }
    }
    let layer = rate_layer(Algorithm::Gcra, "1/s", 1, Charge::Arrival);
    let mut settling = Settling::new(&[layer]).unwrap();
    let request = Request { arrival: at(0), completion: at(1), key: 0 };
    let err = settling.arrive_sharing(&mut Down, request, &[Amount { reserve: 0, cost: 1 }]);
    assert_eq!(err, Err(SettleError::Store("redis://127.0.0.1:1: connection refused".into())));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Requests opened live, each closed when it completes (before every later arrival,
    /// in completion order) at its real costs, decide and settle as requests whose
    /// completions are known.
    #[test]
    fn opening_and_closing_live_is_arriving_with_known_completions((layers, requests) in scenario()) {
        let mut known = Settling::new(&layers).unwrap();
        // Each request's completion as the settling has it: later by a leaky queue's wait.
        let mut completes = Vec::new();
        let want: Vec<u32> = (requests.iter())
            .map(|(r, a)| {
                let refused = known.arrive(*r, a).unwrap();
                completes.push(known.last_completion().unwrap_or(r.completion));
                refused
            })
            .collect();
        known.finish();
        let mut live = Settling::new(&layers).unwrap();
        // Open tickets by (completion, order): each with its real costs.
        let mut open: BTreeMap<(Timestamp, usize), (u64, Vec<u64>)> = BTreeMap::new();
        let mut got = Vec::new();
        for (n, (request, amounts)) in requests.iter().enumerate() {
            while let Some(entry) = open.first_entry() {
                if entry.key().0 > request.arrival {
                    break;
                }
                let ((at, _), (ticket, costs)) = entry.remove_entry();
                live.close(ticket, at, &costs).unwrap();
            }
            let (refused, ticket) = live.open(request.arrival, request.key, amounts).unwrap();
            got.push(refused);
            if let Some(ticket) = ticket {
                let costs = amounts.iter().map(|a| a.cost).collect();
                open.insert((completes[n], n), (ticket, costs));
            }
        }
        while let Some(((at, _), (ticket, costs))) = open.pop_first() {
            live.close(ticket, at, &costs).unwrap();
        }
        prop_assert_eq!(got, want);
        prop_assert_eq!(live.settled(), known.settled());
        prop_assert_eq!(live.opened(), 0);
        prop_assert_eq!(live.close(0, Timestamp::from_micros(Timestamp::MAX).unwrap(), &vec![0; layers.len()]), Err(SettleError::Ticket(0)));
    }
}
