//! A system's lossless size in its own terms, found in its own arithmetic: nginx's smallest
//! `burst=`, HAProxy's smallest `gt N`, Traefik's smallest `burst`, with which none of the
//! events is refused.

use std::num::NonZeroU64;

use super::{Haproxy, KeyedState, Nginx, Params, PerKey};
use crate::event::{Event, Key};
use crate::units::rate::Rate;

/// A system's own lossless setting at one rate, found event by event in its own
/// arithmetic: the smallest value of the setting with which the system refuses none of
/// the events.
pub trait SystemSizer: Send + std::fmt::Debug {
    /// Takes the next event, no earlier than the one before (of any key).
    fn push(&mut self, event: Event);

    /// The smallest value that refuses none of the events taken, and the key that needs
    /// it, where the finder knows it.
    fn result(&mut self) -> (u64, Option<Key>);
}

/// How a system writes its own lossless setting, and how it is found: what makes
/// `min-bucket --for SYSTEM` and a replay's own size a loop over the registry
/// ([`Rule::OWN_SIZE`](super::Rule::OWN_SIZE)).
#[derive(Clone, Copy, Debug)]
pub struct OwnSize {
    /// The setting's name in the system's configuration: nginx's `burst`, HAProxy's `gt`.
    pub setting: &'static str,
    /// What is found, a line.
    pub help: &'static str,
    /// Returns the finder of the setting at a rate, with the limiter's parameters (nginx's
    /// zone).
    pub finder: fn(Rate, &Params) -> Box<dyn SystemSizer>,
    /// Why the system cannot be sized at a rate (nginx writes only N r/s and N r/m);
    /// `None` if it can.
    pub refuses: fn(Rate) -> Option<String>,
    /// Whether it is sized on events weighed by their cost: nginx counts requests.
    pub weighs: bool,
    /// Writes the setting's value at a rate as the system's configuration says it, and
    /// what it promises: `rate=10r/s burst=4 refuses none of the events`.
    pub line: fn(Rate, u64) -> String,
    /// Whether a replay of the system's limiter reports it too: found in one more pass
    /// over the events, which the replay's readers ask first (nginx's `burst=`).
    pub in_replay: bool,
}

impl SystemSizer for NginxBurst {
    fn push(&mut self, event: Event) {
        NginxBurst::push(self, event);
    }

    fn result(&mut self) -> (u64, Option<Key>) {
        NginxBurst::result(self)
    }
}

impl SystemSizer for HaproxyLimit {
    fn push(&mut self, event: Event) {
        HaproxyLimit::push(self, event);
    }

    fn result(&mut self) -> (u64, Option<Key>) {
        HaproxyLimit::result(self)
    }
}

/// Traefik's smallest `burst`, found at the end from every event kept ([`traefik_burst`]).
#[derive(Clone, Debug)]
pub struct TraefikBurst {
    rate: Rate,
    events: Vec<Event>,
}

impl TraefikBurst {
    /// Returns the finder at `rate`.
    pub fn new(rate: Rate) -> TraefikBurst {
        TraefikBurst { rate, events: Vec::new() }
    }
}

impl SystemSizer for TraefikBurst {
    fn push(&mut self, event: Event) {
        self.events.push(event);
    }

    fn result(&mut self) -> (u64, Option<Key>) {
        (traefik_burst(self.rate, &self.events), None)
    }
}

/// Follows each key's node as nginx at one rate would keep it if it refused nothing, in its
/// zone, and the most excess any node reaches. nginx refuses a request exactly when its
/// excess would pass `burst=B` (B·1000 milli-requests), and a refusal changes nothing; so
/// with no refusal each node's excess is known whatever the burst (and so is which idle
/// nodes a new key frees, which the excess decides), and the smallest B that refuses none
/// is that most excess, in whole requests, rounded up. The excess nginx's truncated leak
/// keeps makes it at least the exact token bucket's need less one, and at times more.
#[derive(Clone, Debug)]
pub struct NginxBurst {
    /// Each key's node, in the zone all keys share, as nginx keeps them.
    keys: PerKey<Nginx>,
    /// The most excess a node has held, in milli-requests, and its key.
    most: (i64, Option<Key>),
}

impl NginxBurst {
    /// Returns the tracker for nginx at `rate`, which must be one nginx can write.
    pub fn new(rate: Rate) -> NginxBurst {
        NginxBurst::in_zone(rate, super::ZoneSize::default())
    }

    /// Returns the tracker for nginx at `rate` whose zone is of `zone`'s size: a full zone
    /// frees its least recently used key, whose excess then starts afresh.
    pub fn in_zone(rate: Rate, zone: super::ZoneSize) -> NginxBurst {
        let params = super::nginx::NginxParams { zone, ..Default::default() };
        let keys = PerKey::new(super::Rule::with_params(Nginx::new(rate, NonZeroU64::MIN), params));
        NginxBurst { keys, most: (0, None) }
    }

    /// Takes the next event, no earlier than the one before (of any key: the zone frees
    /// nodes in the order keys come); each counts as one request, as nginx counts it.
    pub fn push(&mut self, event: Event) {
        let slot = usize::try_from(event.key).unwrap_or(usize::MAX);
        // Charged whatever the burst: the excess of a nginx that refuses nothing.
        self.keys.charge(slot, event.time, 1);
        let excess = self.keys.state(slot).map_or(0, |node| node.excess());
        if excess > self.most.0 {
            self.most = (excess, Some(event.key));
        }
    }

    /// The smallest `burst=` that refuses none of the events, and the key whose node needs
    /// it (the first to reach the most); `None` when no burst above 0 is needed.
    pub fn result(&self) -> (u64, Option<Key>) {
        let (most, key) = self.most;
        (u64::try_from(most).unwrap_or(0).div_ceil(1000), key)
    }
}

/// A key's `freq_ctr`, as HAProxy keeps it.
type Counter = <Haproxy as KeyedState>::State;

/// Follows each key's `http_req_rate(P)` counter as HAProxy keeps it, and the most rate the
/// deny rule reads. HAProxy counts every request, the denied ones too, so its counters are
/// the same whatever `gt N` says, and the smallest N that denies none is that most rate.
#[derive(Clone, Debug)]
pub struct HaproxyLimit {
    limiter: Haproxy,
    /// Each key's counter, by key number.
    counters: Vec<Counter>,
    /// The most rate read, and its key.
    most: (u64, Option<Key>),
}

impl HaproxyLimit {
    /// Returns the tracker for `http_req_rate` over `rate`'s period (its count is not used:
    /// the answer is the count).
    pub fn new(rate: Rate) -> HaproxyLimit {
        HaproxyLimit { limiter: Haproxy::new(rate), counters: Vec::new(), most: (0, None) }
    }

    /// Takes the next event, no earlier than the one before.
    pub fn push(&mut self, event: Event) {
        let slot = usize::try_from(event.key).unwrap_or(usize::MAX);
        if slot >= self.counters.len() {
            self.counters.resize(slot + 1, Counter::default());
        }
        let rate = self.limiter.counted(&mut self.counters[slot], event.time, event.cost);
        if rate > self.most.0 {
            self.most = (rate, Some(event.key));
        }
    }

    /// The smallest N of `gt N` that denies none of the events, and the key whose counter
    /// reads it (the first to).
    pub fn result(&self) -> (u64, Option<Key>) {
        self.most
    }
}

/// The smallest Traefik `burst` with which its rateLimit at `rate`, in Go's arithmetic
/// (float64 tokens, a refusal past `maxDelay`, idle buckets forgotten), refuses none of
/// `events` (in time order, each key its own bucket). A larger burst never holds fewer
/// tokens, and the same buckets are forgotten whatever the burst, so a burst that refuses
/// none is followed by larger ones that refuse none: the least is found by bisection,
/// each probe a replay of the events.
pub fn traefik_burst(rate: Rate, events: &[Event]) -> u64 {
    let refuses_none = |burst: u64| {
        let Some(burst) = NonZeroU64::new(burst) else { return false };
        let mut keys = PerKey::new(super::Traefik::new(rate, burst));
        let slot = |key: Key| usize::try_from(key).unwrap_or(usize::MAX);
        events.iter().all(|e| keys.decide(slot(e.key), e.time, 1).passed)
    };
    // The events' count always refuses none.
    let most = u64::try_from(events.len()).unwrap_or(u64::MAX).max(1);
    least_from_one(most, refuses_none).unwrap_or(most)
}

/// The least setting from 1 to `most` for which `refuses_none` holds, given that once it
/// holds it holds for every larger one: found by doubling to one that holds, then halving
/// the gap; `None` if not even `most` does.
pub(super) fn least_from_one(most: u64, mut refuses_none: impl FnMut(u64) -> bool) -> Option<u64> {
    let mut high = 1;
    while high < most && !refuses_none(high) {
        high = high.saturating_mul(2).min(most);
    }
    if high == most && !refuses_none(most) {
        return None;
    }
    // `high` refuses none; half of it is 0 or refuses some.
    Some(crate::sizing::first_true(high / 2 + 1, high, refuses_none))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::units::time::Timestamp;

    fn event(ms: i64, key: Key) -> Event {
        Event { time: Timestamp::from_micros(ms * 1000).unwrap(), key, cost: 1 }
    }

    /// nginx at `rate` with `burst=B`, its keys in one zone, refuses none of `events`.
    fn refuses_none(rate: Rate, b: u64, events: &[Event]) -> bool {
        let mut keys = PerKey::new(Nginx::new(rate, NonZeroU64::new(b + 1).unwrap()));
        events.iter().all(|e| keys.decide(e.key as usize, e.time, 1).passed)
    }

    #[test]
    fn three_requests_at_once_need_burst_2_and_a_second_apart_none() {
        let rate: Rate = "1r/s".parse().unwrap();
        let mut burst = NginxBurst::new(rate);
        [0, 0, 0].into_iter().for_each(|ms| burst.push(event(ms, 0)));
        assert_eq!(burst.result(), (2, Some(0)));
        let mut spaced = NginxBurst::new(rate);
        [0, 1000, 2000].into_iter().for_each(|ms| spaced.push(event(ms, 0)));
        assert_eq!(spaced.result(), (0, None));
    }

    #[test]
    fn the_truncated_leak_can_need_more_than_the_exact_bucket() {
        // 1r/m leaks 16 milli-requests a second, not 16.67: a request 60 s after the first
        // leaves 1000 − 960 = 40 of excess, so the next, 61 s on, needs burst=1, where a
        // token bucket of 1 at 1/m is full again each time.
        let rate: Rate = "1r/m".parse().unwrap();
        let mut burst = NginxBurst::new(rate);
        [0, 60_000, 121_000].into_iter().for_each(|ms| burst.push(event(ms, 0)));
        assert_eq!(burst.result().0, 1);
    }

    /// HAProxy at `limit` per the rate's period denies none of `events`.
    fn denies_none(rate: Rate, limit: u64, events: &[Event]) -> bool {
        let limiter = Haproxy::new(rate);
        let mut counters = [Counter::default(); 4];
        // gt 0 denies every request the counter reads as 1 or more.
        events.iter().all(|e| limiter.counted(&mut counters[e.key as usize], e.time, 1) <= limit)
    }

    proptest! {
        #[test]
        fn the_traefik_burst_found_refuses_none_and_one_less_refuses_some(
            gaps in prop::collection::vec((0i64..2_000, 0u32..3), 1..60),
        ) {
            let rate: Rate = "2/s".parse().unwrap();
            let mut ms = 0;
            let events: Vec<Event> = gaps.iter().map(|&(gap, key)| { ms += gap; event(ms, key) }).collect();
            let burst = traefik_burst(rate, &events);
            let refuses_none = |b: u64| {
                let mut keys = PerKey::new(crate::limiter::Traefik::new(rate, NonZeroU64::new(b).unwrap()));
                events.iter().all(|e| keys.decide(e.key as usize, e.time, 1).passed)
            };
            prop_assert!(refuses_none(burst));
            if burst > 1 {
                prop_assert!(!refuses_none(burst - 1));
            }
        }
    }

    proptest! {
        #[test]
        fn the_haproxy_limit_found_denies_none_and_one_less_denies_some(
            gaps in prop::collection::vec((0i64..3_000, 0u32..3), 1..80),
        ) {
            let rate: Rate = "1/10s".parse().unwrap();
            let mut ms = 0;
            let events: Vec<Event> = gaps.iter().map(|&(gap, key)| { ms += gap; event(ms, key) }).collect();
            let mut limit = HaproxyLimit::new(rate);
            events.iter().for_each(|&e| limit.push(e));
            let (n, _) = limit.result();
            prop_assert!(denies_none(rate, n, &events));
            if n > 0 {
                prop_assert!(!denies_none(rate, n - 1, &events));
            }
        }
    }

    proptest! {
        #[test]
        fn the_burst_found_refuses_none_and_one_less_refuses_some(
            // Gaps of a minute and more let the zone free idle nodes for new keys.
            gaps in prop::collection::vec((prop_oneof![0i64..3_000, 55_000i64..70_000], 0u32..4), 1..80),
            per_second in 1u64..5,
        ) {
            let rate: Rate = format!("{per_second}r/s").parse().unwrap();
            let mut ms = 0;
            let events: Vec<Event> = gaps.iter().map(|&(gap, key)| { ms += gap; event(ms, key) }).collect();
            let mut burst = NginxBurst::new(rate);
            events.iter().for_each(|&e| burst.push(e));
            let (b, _) = burst.result();
            prop_assert!(refuses_none(rate, b, &events));
            if b > 0 {
                prop_assert!(!refuses_none(rate, b - 1, &events));
            }
        }
    }
}
