//! Deciding live: each event at once, as it arrives, for a pipeline (`filter`, `check`).
//!
//! A replay's engines ([`Engine`](crate::Engine)) may hold events and decide them later, in batches; a
//! pipeline needs each decision before it reads on. Each engine turns itself into a
//! [`Live`] one ([`Engine::live`](crate::Engine::live)), which decides one event at a time: a batch of one. In
//! memory it decides at the time it is given, with the same limiters a replay runs; the
//! program's Redis engines decide at the server's clock, shared with every process that
//! uses the same keys.

use anyhow::{Result, bail};

use crate::Policy;
use crate::input::catalog::{Event, KeyNotes};
use crate::input::keys::{Key, KeyTable, slot, wide};
use crate::layered::Limits;
use crate::limiter::{AnyPerKey, Decision};
use crate::recorder::Settings;
use crate::sizing::first_true;
use crate::units::time::{Span, Timestamp};

/// The most keys a live engine keeps a limiter for, in memory, at once: the keys whose
/// limiters are not back at their start, and those new since they were last counted.
pub const MAX_LIVE_KEYS: usize = 1 << 24;

/// How many keys a live engine in memory holds before it first forgets those at rest.
const FIRST_SWEEP: usize = 1 << 16;

/// An engine that decides each event as it arrives.
pub trait Live {
    /// Decides on an event of key `key` (`None` for a limit without keys, one for every
    /// event) that costs `cost`, arriving at `now`, at once. A key whose value is empty is
    /// a key: a system that does not account it lets it through uncounted.
    fn decide_now(&mut self, now: Timestamp, key: Option<&[u8]>, cost: u64) -> Result<Decision>;

    /// Decides as [`decide_now`](Live::decide_now) does, and says what each limit may
    /// tell a client: the outcome `check`, its `--headers` and the Python `Limiter` answer
    /// with.
    fn answer_now(&mut self, now: Timestamp, key: Option<&[u8]>, cost: u64) -> Result<Answered>;

    /// How many keys not back at their start it has evicted, the least recently used, to
    /// stay within its bound ([`MAX_LIVE_KEYS`] in memory); none elsewhere.
    fn evicted(&self) -> u64 {
        0
    }
}

/// A live decision, with what each limit may tell a client: whether the event passed, how
/// long a queue holds it, and each limit's answer (its decision as if asked alone, what
/// remains, when to retry), in limit order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answered {
    /// Whether the event passed: every limit admitted it, and each was charged.
    pub passed: bool,
    /// How long an admitted event waits, in units of 1/N µs: one leaky queue's
    /// ([`Decision::wait`]); 0 for layers.
    pub wait: i128,
    /// Each limit's answer, in limit order: one for one limit.
    pub limits: Vec<Answer>,
}

impl Answered {
    /// The decision on the event.
    pub fn decision(&self) -> Decision {
        Decision { passed: self.passed, wait: self.wait }
    }

    /// The answer of one limit, its wait and all; `None` of several.
    pub fn one(&self) -> Option<Answer> {
        match self.limits.as_slice() {
            [one] => Some(*one),
            _ => None,
        }
    }
}

/// One limit's live decision, with what a caller may tell its client, as `check` tells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Answer {
    /// The decision.
    pub decision: Decision,
    /// How many more units would pass at once, after this decision.
    pub remaining: u64,
    /// How long until an event of this cost would pass, in µs: 0 if this one did; `None`
    /// if it never would.
    pub retry_after_us: Option<i64>,
    /// How long until the limiter is back where it started, in µs, if the engine says
    /// (Redis's scripts do).
    pub reset_after_us: Option<i64>,
}

/// Why limiters side by side do not decide live: a live engine gives one decision an
/// event.
pub const ONE_LIMIT: &str = "a live engine decides one limit, or layers";

/// Returns a live engine in memory for `policy` (one limiter, or layers all or nothing): one
/// state per key, in this process, which may move to another thread.
pub fn in_memory(policy: Policy<'_>) -> Result<Box<dyn Live + Send>> {
    check(policy)?;
    Ok(Box::new(LiveMemory::of(Limits::new(policy)?)?))
}

/// Refuses a policy no engine decides live: layers with a leaky queue, which delays rather
/// than decides at once.
pub fn check(policy: Policy<'_>) -> Result<()> {
    if let Policy::AllOrNothing(layers) = policy
        && let Some(queue) = layers.iter().find(|l| l.settings.algorithm.delays())
    {
        let name = queue.settings.algorithm.name();
        bail!("{name} delays; layers decide at once: use gcra, which admits the same");
    }
    Ok(())
}

/// The keys of a live engine in memory, numbered, each with a limiter state. Those whose
/// limiters are back at their start are forgotten (as Redis lets an idle key expire, and
/// nginx's zone frees an idle node), so that a filter runs for days at a steady number of
/// active keys: whenever the table has grown to twice what it kept last time (and
/// [`FIRST_SWEEP`] at least), each key is asked once, so a key costs O(1) time amortized,
/// and the table holds at most twice the keys that are not at rest.
///
/// Past [`MAX_LIVE_KEYS`] keys not at rest (a new key a line, say: an attacker's), the
/// least recently used are evicted down to half that, as nginx's zone frees its oldest
/// node when full and HAProxy's stick table its oldest entry: counted, never an exit, so
/// that no input can switch a filter off. An evicted key starts afresh, as in those
/// systems.
struct LiveKeys {
    table: KeyTable,
    /// What the table notes of its keys, for limits whose systems read a key's text:
    /// renumbered keys are noted afresh.
    notes: KeyNotes,
    sweep_at: usize,
    /// The most keys it holds: [`MAX_LIVE_KEYS`], less in tests.
    most: usize,
    /// When each key was last asked for, by the count of asks.
    used: Vec<u64>,
    asks: u64,
    /// The keys evicted so far, not at rest.
    evicted: u64,
}

impl LiveKeys {
    /// Returns a table of no keys that holds at most `most`.
    fn new(most: usize) -> LiveKeys {
        let sweep_at = FIRST_SWEEP.min(most);
        let notes = KeyNotes::default();
        let table = KeyTable::telling(&notes);
        LiveKeys { table, notes, sweep_at, most, used: Vec::new(), asks: 0, evicted: 0 }
    }

    /// Returns a key's number, numbering a new key. The table holds at most its `most`,
    /// as [`LiveKeys::sweep`] keeps it.
    fn number(&mut self, key: &[u8]) -> Result<Key> {
        let (keys, most) = (&mut self.table, self.most);
        let number = keys.intern(key).filter(|_| keys.len() <= most);
        let Some(number) = number else {
            bail!("more than {most} keys at once: filter keeps a limiter for each")
        };
        self.asks += 1;
        match self.used.get_mut(slot(number)) {
            Some(used) => *used = self.asks,
            None => self.used.push(self.asks),
        }
        Ok(number)
    }

    /// If the table is due to be swept, forgets the keys that `at_rest` says are back at
    /// their start, and past half of [`MAX_LIVE_KEYS`] the least recently used of the
    /// others, and returns the numbers of those kept: key `kept[n]` is now key n, and its
    /// state must move there.
    fn sweep(&mut self, at_rest: impl Fn(usize) -> bool) -> Option<Vec<usize>> {
        if self.table.len() < self.sweep_at {
            return None;
        }
        let mut kept: Vec<usize> = (0..self.table.len()).filter(|&old| !at_rest(old)).collect();
        let most = self.most / 2;
        if kept.len() > most {
            // The most recently used kept, in their order of numbers.
            kept.sort_unstable_by_key(|&old| std::cmp::Reverse(self.used[old]));
            self.evicted += wide(kept.len() - most);
            kept.truncate(most);
            kept.sort_unstable();
        }
        let notes = KeyNotes::default();
        let mut table = KeyTable::telling(&notes);
        for &old in &kept {
            // Fewer keys than the table numbered: each gets a number again.
            let key = Key::try_from(old).unwrap_or(Key::MAX);
            table.intern(self.table.get(key))?;
        }
        self.used = kept.iter().map(|&old| self.used[old]).collect();
        self.sweep_at = kept.len().saturating_mul(2).clamp(FIRST_SWEEP.min(self.most), self.most);
        (self.table, self.notes) = (table, notes);
        Some(kept)
    }
}

/// In this process, with the limits of a policy ([`Limits`]), the same a replay in memory
/// decides with: one limit, or layers all or nothing; a state per key in each keyed limit.
pub(crate) struct LiveMemory {
    limits: Limits,
    /// For each limit, a state to copy one key's into and ask what remains.
    probes: Vec<AnyPerKey>,
    keys: LiveKeys,
}

impl LiveMemory {
    /// Returns a live engine deciding with `limits`: layers, or one limit.
    pub(crate) fn of(limits: Limits) -> Result<LiveMemory> {
        if !limits.all_or_nothing() && limits.layers().len() > 1 {
            bail!(ONE_LIMIT);
        }
        let probes = limits.layers().map(|layer| layer.settings.per_key()).collect();
        let keys = LiveKeys::new(MAX_LIVE_KEYS);
        let mut limits = limits;
        limits.share_key_notes(&keys.notes);
        Ok(LiveMemory { limits, probes, keys })
    }

    /// Decides an event of `key` costing `cost` at `now`, and returns it and each limit's
    /// decision, in limit order: one limit's own, with its wait; a layer's, whether it
    /// alone admitted the event (a wait is a leaky queue's, which is no live layer).
    fn decide(
        &mut self,
        now: Timestamp,
        key: Option<&[u8]>,
        cost: u64,
    ) -> Result<(Event, Decisions)> {
        let limits = &self.limits;
        if let Some(kept) = self.keys.sweep(|old| limits.at_rest(old, now)) {
            self.limits = limits.renumbered(&kept);
            self.limits.share_key_notes(&self.keys.notes);
        }
        let event = Event { time: now, key: self.keys.number(key.unwrap_or_default())?, cost };
        let all_or_nothing = self.limits.all_or_nothing();
        // Live keys are renumbered as they rest: the empty key is known by its value.
        let decided = self.limits.decide_keyed(event, is_empty(key));
        let decisions = match (all_or_nothing, decided.each) {
            (false, [(_, decision)]) => Decisions::One(*decision),
            _ => Decisions::Layers(decided.refused),
        };
        Ok((event, decisions))
    }
}

impl Live for LiveMemory {
    /// One limit's decision, with its wait; of layers, whether every one admitted the
    /// event (a wait is a leaky queue's, which is no live layer).
    fn decide_now(&mut self, now: Timestamp, key: Option<&[u8]>, cost: u64) -> Result<Decision> {
        let (_, decisions) = self.decide(now, key, cost)?;
        Ok(decisions.event())
    }

    fn evicted(&self) -> u64 {
        self.keys.evicted
    }

    /// Asks each limit's own state of the key, spending nothing, for the largest cost that
    /// would pass now and the first instant this one would: exact, as the limiter decides,
    /// and found by halving, since a smaller cost or a later instant never passes less.
    fn answer_now(&mut self, now: Timestamp, key: Option<&[u8]>, cost: u64) -> Result<Answered> {
        let (event, decisions) = self.decide(now, key, cost)?;
        let each = self.limits.each().zip(&mut self.probes).enumerate();
        let limits = (each.map(|(n, ((table, layer), probe))| {
            let decision = decisions.limit(n);
            match is_empty(key) && layer.skips_empty_key() {
                // Not accounted: all of it remains, and nothing to wait for.
                true => Answer {
                    decision,
                    remaining: layer.settings.capacity(),
                    retry_after_us: Some(0),
                    reset_after_us: None,
                },
                false => answer(probe, table, layer.settings, layer.sees(event), decision),
            }
        }))
        .collect();
        let Decision { passed, wait } = decisions.event();
        Ok(Answered { passed, wait, limits })
    }
}

/// Whether a live event's key is the empty key: a key, and empty.
pub fn is_empty(key: Option<&[u8]>) -> bool {
    key.is_some_and(<[u8]>::is_empty)
}

/// Each limit's decision on a live event.
#[derive(Clone, Copy)]
enum Decisions {
    /// One limit's, with its wait.
    One(Decision),
    /// Of layers all or nothing, those that refused when asked: bit n for layer n.
    Layers(u32),
}

impl Decisions {
    /// The decision on the event: one limit's, or whether every layer admitted it.
    fn event(self) -> Decision {
        match self {
            Decisions::One(decision) => decision,
            Decisions::Layers(refused) => Decision { passed: refused == 0, wait: 0 },
        }
    }

    /// Limit `n`'s decision, as if asked alone: one limit's own, or whether layer `n`
    /// admitted the event when asked (then, refused by another, it was not charged).
    fn limit(self, n: usize) -> Decision {
        match self {
            Decisions::One(decision) => decision,
            Decisions::Layers(refused) => Decision { passed: refused & (1 << n) == 0, wait: 0 },
        }
    }
}

/// What a limit with `settings`, its states `table`, may tell a client once it decided
/// `seen` (the event as it saw it) with `decision`: asked on a copy of the key's state in
/// `probe`, afresh each time, as asking may tidy a state as of the time asked (a log
/// forgets what is older than a period before it).
fn answer(
    probe: &mut AnyPerKey,
    table: &AnyPerKey,
    settings: Settings,
    seen: Event,
    decision: Decision,
) -> Answer {
    let (now, cost, key) = (seen.time, seen.cost, slot(seen.key));
    let mut admits = |at: Timestamp, cost: u64| {
        probe.copy_key(table, key, 0);
        probe.admits(0, at, cost)
    };
    // The most that would pass: one less than the least cost that would not (past the
    // capacity, none passes).
    let capacity = settings.capacity();
    let refused = first_true(1, capacity.saturating_add(1), |c| !admits(now, c));
    let remaining = refused.saturating_sub(1);
    let retry_after_us = if decision.passed {
        Some(0)
    } else {
        // A bucket refills a cost in cost·P/N; a window opens within two periods.
        let rate = settings.rate;
        let periods = i64::try_from(cost.div_ceil(rate.count()).saturating_add(2)).ok();
        let most = periods.and_then(|n| n.checked_mul(rate.period().as_micros()));
        let mut admits_after = |micros: u64| {
            let span = i64::try_from(micros).ok().and_then(Span::from_micros);
            let at = span.and_then(|span| now.checked_add(span));
            at.is_some_and(|at| admits(at, cost))
        };
        match most.and_then(|most| u64::try_from(most).ok()) {
            Some(most) if admits_after(most) => {
                i64::try_from(first_true(1, most, admits_after)).ok()
            }
            _ => None,
        }
    };
    Answer { decision, remaining, retry_after_us, reset_after_us: None }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroU64;

    use super::*;
    use crate::layered::Layer;
    use crate::limiter::Algorithm;

    /// 300,000 events a millisecond apart: a third from 50 keys that are never at rest,
    /// the others each from a key of its own, which comes to rest a second later (nginx's
    /// when its zone frees it, a minute later at the least).
    fn events() -> impl Iterator<Item = (Timestamp, Vec<u8>)> {
        (0..300_000i64).map(|i| {
            let key = if i % 3 == 0 { format!("hot{}", i % 50) } else { format!("once{i}") };
            (Timestamp::from_micros(1_000_000_000 + i * 1000).unwrap(), key.into_bytes())
        })
    }

    fn settings(algorithm: Algorithm, rate: &str) -> Settings {
        Settings {
            algorithm,
            rate: rate.parse().unwrap(),
            burst: NonZeroU64::new(2).unwrap(),
            window: Span::from_micros(1_000_000).unwrap(),
            params: algorithm.default_params(),
        }
    }

    #[test]
    fn keys_back_at_their_start_are_forgotten_and_every_decision_stays() {
        // django-ratelimit reads each key's text, kept across renumbering: at 2/3s, keys'
        // windows open at one of three seconds.
        let algorithms = [
            (Algorithm::Gcra, "1/s"),
            (Algorithm::SlidingLog, "1/s"),
            (Algorithm::SlidingCounter, "1/s"),
            (Algorithm::Nginx, "1/s"),
            (Algorithm::DjangoRatelimit, "2/3s"),
        ];
        for (algorithm, rate) in algorithms {
            let settings = settings(algorithm, rate);
            let limits = Limits::new(Policy::SideBySide(&[settings])).unwrap();
            let mut live = LiveMemory::of(limits).unwrap();
            // The same events, each key kept for ever.
            let notes = KeyNotes::default();
            let (mut kept, mut names) = (settings.per_key(), KeyTable::telling(&notes));
            kept.share_key_notes(&notes);
            let mut most = 0;
            for (n, (now, key)) in events().enumerate() {
                let want = kept.decide(slot(names.intern(&key).unwrap()), now, 1);
                assert_eq!(
                    live.decide_now(now, Some(&key), 1).unwrap(),
                    want,
                    "{algorithm:?}: event {n}"
                );
                most = most.max(live.keys.table.len());
            }
            // About 700 keys at a time are not at rest (nginx's zone holds 40,000): the
            // table holds at most twice those, or the first sweep's 65,536, while 200,050
            // keys came.
            assert_eq!(names.len(), 200_050);
            let nodes = if algorithm == Algorithm::Nginx { 40_050 } else { 0 };
            assert!(most <= FIRST_SWEEP.max(2 * nodes), "{algorithm:?}: {most}");
        }
    }

    /// Two layers: GCRA at `each` for each key, with a burst of 2, and a fixed window at
    /// `all` over every key.
    fn keyed_gcra_and_one_window(each: &str, all: &str) -> [Layer; 2] {
        let layer = |algorithm, rate, keyed| Layer {
            settings: settings(algorithm, rate),
            keyed,
            cost: None,
            counts_refused: false,
        };
        [layer(Algorithm::Gcra, each, true), layer(Algorithm::FixedWindow, all, false)]
    }

    /// Layers answer each as if asked alone, as the layered script in Redis does: what
    /// remains after the call (charged only if every layer admitted it), and when this
    /// cost would pass. Hand-computed: GCRA 2/s with a burst of 2 a key (I = 0.5 s), and
    /// one fixed window of 3 a second over every key, five calls at one whole second.
    #[test]
    fn layers_answer_each_as_if_asked_alone() {
        let layers = keyed_gcra_and_one_window("2/s", "3/s");
        let mut live = LiveMemory::of(Limits::new(Policy::AllOrNothing(&layers)).unwrap()).unwrap();
        let now = Timestamp::from_micros(1_000_000_000_000_000).unwrap();
        let said = |passed, remaining, retry| Answer {
            decision: Decision { passed, wait: 0 },
            remaining,
            retry_after_us: Some(retry),
            reset_after_us: None,
        };
        let calls = [
            // Both admit, and are charged: a's tat 0.5 s ahead; 1 of 3 spent.
            ("a", true, [said(true, 1, 0), said(true, 2, 0)]),
            ("a", true, [said(true, 0, 0), said(true, 1, 0)]),
            // a's bucket is empty, tat 1 s ahead: it passes again at tat + I − b·I, in
            // 0.5 s. The window would admit it: refused, it is not charged.
            ("a", false, [said(false, 0, 500_000), said(true, 1, 0)]),
            ("b", true, [said(true, 1, 0), said(true, 0, 0)]),
            // c's bucket is full and not charged; the window opens again in 1 s.
            ("c", false, [said(true, 2, 0), said(false, 0, 1_000_000)]),
        ];
        for (n, (key, passed, limits)) in calls.into_iter().enumerate() {
            let answered = live.answer_now(now, Some(key.as_bytes()), 1).unwrap();
            let want = Answered { passed, wait: 0, limits: limits.to_vec() };
            assert_eq!(answered, want, "call {n}");
        }
    }

    #[test]
    fn layered_keys_back_at_their_start_are_forgotten_and_every_decision_stays() {
        // Each key's own limit, and one over all that refuses a few in a hundred.
        let layers = keyed_gcra_and_one_window("1/s", "9800/s");
        let policy = Policy::AllOrNothing(&layers);
        let mut live = LiveMemory::of(Limits::new(policy).unwrap()).unwrap();
        let (mut kept, mut names) = (Limits::new(policy).unwrap(), KeyTable::new());
        let mut most = 0;
        for (n, (now, key)) in events().enumerate() {
            let event = Event { time: now, key: names.intern(&key).unwrap(), cost: 1 };
            let passed = kept.decide(event).passed();
            assert_eq!(live.decide_now(now, Some(&key), 1).unwrap().passed, passed, "event {n}");
            most = most.max(live.keys.table.len());
        }
        assert_eq!(most, FIRST_SWEEP);
    }

    #[test]
    fn a_live_empty_key_passes_uncounted_where_the_system_does_not_account_it() {
        // nginx at 1/m, no burst: requests with an empty key are not accounted, and one
        // without keys is one limit for all, which is.
        let second = |s: i64| Timestamp::from_micros(1_000_000_000 + s * 1_000_000).unwrap();
        let nginx = settings(Algorithm::Nginx, "1/m");
        let nginx = Settings { burst: NonZeroU64::MIN, ..nginx };
        let mut live = in_memory(Policy::SideBySide(&[nginx])).unwrap();
        let passed: Vec<bool> = [Some(&b""[..]), Some(b""), Some(b"a"), Some(b""), Some(b"a")]
            .into_iter()
            .enumerate()
            .map(|(s, key)| {
                live.decide_now(second(i64::try_from(s).unwrap()), key, 1).unwrap().passed
            })
            .collect();
        assert_eq!(passed, [true, true, true, true, false]);
        let answered = live.answer_now(second(5), Some(b""), 1).unwrap();
        assert_eq!((answered.passed, answered.limits[0].remaining), (true, 1));
        let mut one = in_memory(Policy::SideBySide(&[nginx])).unwrap();
        let passed: Vec<bool> =
            (0..3).map(|s| one.decide_now(second(s), None, 1).unwrap().passed).collect();
        assert_eq!(passed, [true, false, false]);
        // An exact limiter keys the empty value as any other.
        let mut gcra = in_memory(Policy::SideBySide(&[settings(Algorithm::Gcra, "1/m")])).unwrap();
        let passed: Vec<bool> =
            (0..3).map(|s| gcra.decide_now(second(s), Some(b""), 1).unwrap().passed).collect();
        assert_eq!(passed, [true, true, false]);
    }

    #[test]
    fn past_its_bound_a_live_engine_evicts_the_least_recently_used_keys_and_counts_them() {
        // GCRA at 1/h, burst 1: no key rests within the test. A bound of 1,024 keys: past
        // it, the 512 most recently used are kept, and the rest evicted, never an error.
        let second = |s: i64| Timestamp::from_micros(1_000_000_000 + s * 1_000).unwrap();
        let gcra = Settings { burst: NonZeroU64::MIN, ..settings(Algorithm::Gcra, "1/h") };
        let limits = Limits::new(Policy::SideBySide(std::slice::from_ref(&gcra))).unwrap();
        let mut live = LiveMemory::of(limits).unwrap();
        live.keys = LiveKeys::new(1_024);
        let mut ask =
            |n: i64, key: &str| live.decide_now(second(n), Some(key.as_bytes()), 1).unwrap().passed;
        // A key of its own a call, and `hot` every tenth: hot stays among the recent.
        for n in 0..5_000 {
            assert!(ask(n, &format!("k{n}")), "k{n} is new");
            if n % 10 == 0 {
                assert_eq!(ask(n, "hot"), n == 0, "hot is never evicted: refused after its first");
            }
        }
        // The newest keys are kept, and refused; the oldest were evicted, and start afresh.
        assert!(!ask(5_000, "k4999"));
        assert!(ask(5_000, "k0"), "k0 was evicted");
        assert!(live.evicted() > 0);
        assert!(live.keys.table.len() <= 1_024);
    }
}
