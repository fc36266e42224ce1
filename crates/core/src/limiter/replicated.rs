//! One limit replicated on a fleet of servers: each server decides on its own copy.

use std::num::NonZeroU64;

use super::{Algorithm, Any, Decision, KeyedState, PerKey, Rule, Store};
use crate::units::rate::Rate;
use crate::units::time::{Span, Timestamp};

/// How a fleet's servers share one limit of N per P with burst b.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Share {
    /// Every server runs the whole limit.
    Local,
    /// Every server runs N per K·P with burst ⌈b/K⌉, so that K servers add up to the limit.
    Split,
    /// One shared limiter, which every server sees as it was at the last multiple of the
    /// span since the epoch; it has taken in every event any server passed.
    Synced(Span),
}

impl Share {
    /// Returns the name reports use: `local`, `split` or `synced`.
    pub fn name(self) -> &'static str {
        match self {
            Share::Local => "local",
            Share::Split => "split",
            Share::Synced(_) => "synced",
        }
    }

    /// Returns the rate and burst each of `servers` servers runs for a limit of `rate` and
    /// `burst`, or `None` if K·P is past the longest period a rate may have.
    pub fn server_limit(
        self,
        rate: Rate,
        burst: NonZeroU64,
        servers: u32,
    ) -> Option<(Rate, NonZeroU64)> {
        match self {
            Share::Split => {
                let period = rate.period().as_micros().checked_mul(i64::from(servers))?;
                let rate = Rate::new(rate.count(), Span::from_micros(period)?).ok()?;
                let burst = burst.get().div_ceil(u64::from(servers));
                Some((rate, NonZeroU64::new(burst)?))
            }
            Share::Local | Share::Synced(_) => Some((rate, burst)),
        }
    }
}

/// One limiter's copies on a fleet of servers, for every key: each server decides on its
/// own copy; with [`Share::Synced`], the copies are replaced at every sync by a shared
/// state that has taken in, in time order, every event any server passed (and, for a
/// system whose refusals count, every one refused).
///
/// A server's copy of a key is kept at `key · servers + server`, so that a key's copies sit
/// side by side.
#[derive(Clone, Debug)]
pub struct Replicated<L: KeyedState> {
    servers: usize,
    each: PerKey<L>,
    synced: Option<Synced<L>>,
}

/// The shared state of a synced fleet, and when each key's copies were last replaced.
///
/// A sync replaces every copy of a key at once, but only a copy that decides again needs
/// it: the shared state at the sync is kept as the key's snapshot, and a copy takes it when
/// it next decides, if it has not since that sync. A sync costs O(1), not O(servers), so
/// 10 000 synced servers cost what one does.
#[derive(Clone, Debug)]
struct Synced<L: KeyedState> {
    shared: PerKey<L>,
    every: i64,
    /// For each key, the number of the sync period its copies were last replaced in.
    synced_in: Vec<i64>,
    /// For each key, the shared state at its last sync.
    snapshot: PerKey<L>,
    /// For each copy, the sync period of the snapshot it took last: behind its key's
    /// `synced_in`, it takes the snapshot before it decides.
    taken: Vec<i64>,
}

impl<L: KeyedState> Replicated<L> {
    /// Returns `servers` servers, each with its own copy of `limiter` for every key; with
    /// `sync`, the copies are replaced every `sync` by the shared state.
    pub fn new(limiter: L, servers: u32, sync: Option<Span>) -> Replicated<L> {
        let synced = sync.map(|every| Synced {
            shared: PerKey::unshared(limiter.clone()),
            every: every.as_micros().max(1),
            synced_in: Vec::new(),
            snapshot: PerKey::unshared(limiter.clone()),
            taken: Vec::new(),
        });
        // A u32 always fits in a usize on the platforms this builds for.
        Replicated { servers: servers as usize, each: PerKey::unshared(limiter), synced }
    }

    /// Shares what the reading noted of its keys with every copy, as
    /// [`PerKey::share_key_notes`] does.
    pub fn share_key_notes(&mut self, notes: &crate::event::KeyNotes) {
        self.each.share_key_notes_by(notes, self.servers);
        if let Some(synced) = &mut self.synced {
            synced.shared.share_key_notes(notes);
            synced.snapshot.share_key_notes(notes);
        }
    }

    /// Decides on an event of key `key` at `now` that costs `cost`, on server `server`;
    /// events must come in time order.
    #[inline]
    pub fn decide(&mut self, server: usize, key: usize, now: Timestamp, cost: u64) -> Decision {
        let first = key * self.servers;
        let copy = first + server;
        if let Some(synced) = &mut self.synced {
            let period = now.as_micros().div_euclid(synced.every);
            if key >= synced.synced_in.len() {
                synced.synced_in.resize(key + 1, i64::MIN);
            }
            // The shared state changes only when an event comes, so a key's copies need
            // replacing only at its first event in a new period, before it is decided.
            if synced.synced_in[key] < period {
                synced.synced_in[key] = period;
                synced.snapshot.copy_key(&synced.shared, key, key);
            }
            if copy >= synced.taken.len() {
                synced.taken.resize(copy + 1, i64::MIN);
            }
            if synced.taken[copy] != synced.synced_in[key] {
                synced.taken[copy] = synced.synced_in[key];
                self.each.copy_key(&synced.snapshot, key, copy);
            }
        }
        let decision = self.each.decide(copy, now, cost);
        if let Some(synced) = &mut self.synced {
            // What passed is charged; what was refused is taken in as a refusal (which
            // changes only the systems whose refusals count).
            match decision.passed {
                true => synced.shared.charge(key, now, cost),
                false => synced.shared.refuse(key, now, cost),
            }
        }
        decision
    }
}

/// Limiters on a fleet of servers: a copy per server and key, synced or not.
#[derive(Clone, Copy, Debug)]
pub struct Replicas;

impl Store for Replicas {
    type Of<L: Rule> = Replicated<L>;
    /// How many servers, and how often their copies are synced, if they are.
    type Setup = (u32, Option<Span>);
    /// The server, and the key.
    type At = (usize, usize);

    fn make<L: Rule>(limiter: L, &(servers, sync): &(u32, Option<Span>)) -> Replicated<L> {
        Replicated::new(limiter, servers, sync)
    }

    #[inline]
    fn take<L: Rule>(
        of: &mut Replicated<L>,
        (server, key): (usize, usize),
        now: Timestamp,
        cost: u64,
        force: bool,
    ) -> Decision {
        debug_assert!(!force, "a fleet decides, and charges only its shared state");
        of.decide(server, key, now, cost)
    }

    fn share_key_notes<L: Rule>(of: &mut Replicated<L>, notes: &crate::event::KeyNotes) {
        of.share_key_notes(notes);
    }
}

/// Any one of the limiters on a fleet, chosen at run time without dynamic dispatch.
pub type AnyReplicated = Any<Replicas>;

impl AnyReplicated {
    /// Returns `servers` servers of this kind, each running `rate` and `burst` (already
    /// split, for [`Share::Split`]), set by `params`; a synced fleet syncs as `share` says.
    pub fn new(
        algorithm: Algorithm,
        rate: Rate,
        burst: NonZeroU64,
        servers: u32,
        share: Share,
        params: super::Params,
    ) -> AnyReplicated {
        let sync = match share {
            Share::Synced(every) => Some(every),
            Share::Local | Share::Split => None,
        };
        algorithm.make::<Replicas>(rate, burst, params, &(servers, sync))
    }

    /// Decides on an event as [`Replicated::decide`] does.
    #[inline]
    pub fn decide(&mut self, server: usize, key: usize, now: Timestamp, cost: u64) -> Decision {
        self.take_at((server, key), now, cost, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limiter::Limiter;
    use crate::limiter::tests::{burst, secs};

    /// Two servers of `algorithm` at 1/10s, burst 1, sharing as `share` says.
    fn pair(algorithm: Algorithm, share: Share) -> AnyReplicated {
        let rate: Rate = "1/10s".parse().unwrap();
        AnyReplicated::new(algorithm, rate, burst(1), 2, share, algorithm.default_params())
    }

    fn run(fleet: &mut AnyReplicated, events: &[(usize, i64)]) -> Vec<bool> {
        let times = secs(&events.iter().map(|&(_, t)| t).collect::<Vec<_>>());
        events.iter().zip(times).map(|(&(s, _), t)| fleet.decide(s, 0, t, 1).passed).collect()
    }

    #[test]
    fn local_servers_each_run_the_whole_limit() {
        // 1/10s, burst 1, two servers, round-robin at 1 s apart: each server sees an event
        // every 2 s, so after its first each waits 10 s.
        let mut fleet = pair(Algorithm::Gcra, Share::Local);
        let events = [(0, 0), (1, 1), (0, 2), (1, 3), (0, 10), (1, 11)];
        assert_eq!(run(&mut fleet, &events), [true, true, false, false, true, true]);
    }

    #[test]
    fn split_limits_add_up_to_the_whole() {
        let rate: Rate = "5/h".parse().unwrap();
        let (each, b) = Share::Split.server_limit(rate, burst(5), 3).unwrap();
        assert_eq!((each.to_string(), b.get()), ("5/3h".to_owned(), 2));
        assert_eq!(Share::Local.server_limit(rate, burst(5), 3), Some((rate, burst(5))));
        let week: Rate = "1/9000000000s".parse().unwrap();
        assert_eq!(Share::Split.server_limit(week, burst(1), 1_000_000_000), None);
    }

    #[test]
    fn a_synced_fleet_sees_the_shared_state_at_each_sync_and_pays_its_overspend() {
        // GCRA 1/10s, burst 1, two servers, synced every 60 s. At 0 each server passes on
        // its own copy; the shared tat takes both in: 10, then 20. At 5 server 0's copy
        // (tat 10) drops. At 60 both copies become the shared state (tat 20): server 0
        // passes (shared tat 70), and at 61 server 1, whose copy still says 20, passes
        // too (shared tat 80), one more than a single limiter would pass.
        let every = Span::from_micros(60_000_000).unwrap();
        let mut fleet = pair(Algorithm::Gcra, Share::Synced(every));
        let events = [(0, 0), (1, 0), (0, 5), (0, 60), (1, 61), (0, 62)];
        assert_eq!(run(&mut fleet, &events), [true, true, false, true, true, false]);
        // At 120 both copies get the shared tat, 80, which has paid for both passes.
        let later = [(0, 120), (1, 120), (0, 121)];
        assert_eq!(run(&mut fleet, &later), [true, true, false]);
    }

    #[test]
    fn a_synced_token_bucket_can_go_below_empty_and_refills_from_there() {
        // 1/10s, burst 1: both servers pass at 0 on a full copy; the shared bucket pays
        // for two events with one token, so it stands at −1 and needs 20 s to reach 1.
        let every = Span::from_micros(1_000_000).unwrap();
        let mut fleet = pair(Algorithm::TokenBucket, Share::Synced(every));
        let events = [(0, 0), (1, 0), (0, 10), (1, 19), (0, 20)];
        assert_eq!(run(&mut fleet, &events), [true, true, false, false, true]);
    }

    #[test]
    fn charging_records_a_pass_whatever_the_limiter_would_decide() {
        // Seconds 1 and 2: in one window of every limiter's, django-ratelimit's (which
        // opens its empty key's 1 s past the epoch's) too.
        let rate: Rate = "1/10s".parse().unwrap();
        let times = secs(&[1, 2]);
        for algorithm in Algorithm::ALL {
            let mut limiter = algorithm.build(rate, burst(1));
            limiter.charge(times[0]);
            assert!(!limiter.admit(times[1]), "{algorithm:?} forgot a charged event");
        }
    }
}

#[cfg(test)]
mod lazy {
    use proptest::prelude::*;

    use super::*;
    use crate::limiter::gcra::Gcra;
    use crate::limiter::sliding_log::SlidingLog;
    use crate::limiter::tests::burst;

    /// The fleet as a sync is defined: at a key's first event in a new period, every copy
    /// of the key becomes the shared state, there and then.
    fn eager<L: KeyedState>(
        limiter: L,
        servers: usize,
        every: i64,
        events: &[(usize, usize, i64)],
    ) -> Vec<bool> {
        let (mut each, mut shared) = (PerKey::new(limiter.clone()), PerKey::new(limiter));
        let mut synced_in = [i64::MIN; 4];
        let mut passed = Vec::new();
        for &(server, key, at) in events {
            let now = Timestamp::from_micros(at).unwrap();
            let period = at.div_euclid(every);
            if synced_in[key] < period {
                synced_in[key] = period;
                for copy in key * servers..(key + 1) * servers {
                    each.copy_key(&shared, key, copy);
                }
            }
            let decision = each.decide(key * servers + server, now, 1);
            if decision.passed {
                shared.charge(key, now, 1);
            }
            passed.push(decision.passed);
        }
        passed
    }

    fn lazy<L: KeyedState>(
        limiter: L,
        servers: usize,
        every: i64,
        events: &[(usize, usize, i64)],
    ) -> Vec<bool> {
        let span = Span::from_micros(every).unwrap();
        let mut fleet = Replicated::new(limiter, u32::try_from(servers).unwrap(), Some(span));
        events
            .iter()
            .map(|&(s, k, at)| fleet.decide(s, k, Timestamp::from_micros(at).unwrap(), 1).passed)
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn copies_taking_the_snapshot_when_they_next_decide_decide_as_a_sync_of_all_does(
            servers in 1usize..6,
            every in 1i64..40,
            steps in prop::collection::vec((0usize..6, 0usize..4, 0i64..15), 1..120),
        ) {
            let mut at = 0;
            let events: Vec<(usize, usize, i64)> = steps
                .iter()
                .map(|&(server, key, gap)| {
                    at += gap;
                    (server % servers, key, at)
                })
                .collect();
            let rate: Rate = "1/10us".parse().unwrap();
            let gcra = Gcra::new(rate, burst(2));
            prop_assert_eq!(lazy(gcra.clone(), servers, every, &events), eager(gcra, servers, every, &events));
            let log = SlidingLog::new(rate);
            prop_assert_eq!(lazy(log.clone(), servers, every, &events), eager(log, servers, every, &events));
        }
    }
}
