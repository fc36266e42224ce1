//! Limiters side by side in Redis: each limiter's batch script decides a batch of events
//! in one run, many to a round trip.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Result, anyhow, bail};

use super::server::Sent;
use super::{REPLAY_TTL_MS, Remote, Server, check_time, slot_of};
use crate::Record;
use crate::input::catalog::{Event, slot};
use crate::limiter::Decision;
use crate::live::{Live, ONE_LIMIT};
use crate::recorder::Settings;
use crate::units::time::Timestamp;

/// Limiters side by side in Redis, each deciding every event.
///
/// Each limiter decides a batch in one run of its batch script (one a slot, in a cluster),
/// the events in order: Redis decides them in time order, without a round trip or a script
/// call each. Keys live under the prefix, a run of their own, and a hash tag per replay key:
/// `ratelimit:replay:<run>:{k<key>}:<algorithm>`.
pub(super) struct Lanes {
    redis: Rc<RefCell<Server>>,
    remotes: Vec<Remote>,
    base: String,
    /// For each replay key, each limiter's keys, and the hash slot they share.
    keys: Vec<(Vec<Vec<Vec<u8>>>, u16)>,
    calls: u64,
    /// The batch sent and not yet read back.
    flight: Option<Flight>,
}

/// A batch sent to Redis: its events, its calls, and what `Server::send` gave.
struct Flight {
    events: Vec<Event>,
    calls: Calls,
    sent: Sent,
}

/// The commands of a batch, and for each: its limiter, the events it decides, and the
/// number its batch script echoes (none for the limiter's own script, for a call alone).
struct Calls {
    commands: Vec<(u16, redis::Cmd)>,
    decided: Vec<(usize, Vec<usize>, Option<u64>)>,
}

/// The batch scripts run by this process, so that each has a number of its own to echo:
/// below 2^53, as the scripts' numbers must be, for longer than any replay runs.
static BATCH_NUMBERS: AtomicU64 = AtomicU64::new(0);

/// Checks that limiters with `settings` can run exactly in Redis, loads their scripts,
/// and returns them, ready for a [`RedisEngine`](super::RedisEngine).
pub fn prepare(redis: &mut Server, settings: &[Settings]) -> Result<Vec<Remote>> {
    let remotes = settings
        .iter()
        .map(|s| Remote::new(s.algorithm, s.rate, s.burst.get(), 1))
        .collect::<Result<Vec<_>>>()?;
    for remote in &remotes {
        redis.load(remote.batch_script())?;
        redis.load(remote.script())?;
    }
    Ok(remotes)
}

impl Lanes {
    /// Returns the limiters `prepare` returned, deciding under `base`.
    pub(super) fn new(redis: Rc<RefCell<Server>>, remotes: Vec<Remote>, base: String) -> Lanes {
        Lanes { redis, remotes, base, keys: Vec::new(), calls: 0, flight: None }
    }

    /// Returns the one limiter's live engine, under `prefix`.
    pub(super) fn live(self, prefix: &str) -> Result<Box<dyn Live>> {
        let [remote] = &self.remotes[..] else { bail!(ONE_LIMIT) };
        let script = super::live::LiveScript::One(remote.clone());
        Ok(super::live::in_redis(self.redis, script, prefix))
    }

    /// Sends `events` as a batch, after making its calls and taking in the batch before: Redis decides one batch while the next is read and made, never two at once,
    /// so that a batch refused for want of its scripts is sent again before the next.
    pub(super) fn launch<R: Record>(&mut self, events: Vec<Event>, record: &mut R) -> Result<()> {
        let calls = self.calls_of(&events)?;
        self.land(record)?;
        let sent = self.redis.borrow_mut().send(&calls.commands)?;
        self.flight = Some(Flight { events, calls, sent });
        Ok(())
    }

    /// Reads the replies of the batch in flight, if any, and records its decisions, in
    /// event order.
    pub(super) fn land<R: Record>(&mut self, record: &mut R) -> Result<()> {
        let Some(flight) = self.flight.take() else { return Ok(()) };
        let Flight { events, calls: Calls { commands, decided }, sent } = flight;
        let replies = self.redis.borrow_mut().receive(&commands, sent)?;
        let refused = Decision { passed: false, wait: 0 };
        let mut decisions = vec![refused; events.len() * self.remotes.len()];
        for (reply, (r, at, number)) in replies.iter().zip(decided) {
            let remote = &self.remotes[r];
            let decided = match number {
                None => remote
                    .outcome(reply)
                    .map(|o| vec![Decision { passed: o.allowed, wait: o.wait }]),
                Some(number) => remote.batch_decisions(reply, at.len(), number),
            };
            let decided =
                decided.map_err(|e| anyhow!("Redis at {}: {e}", self.redis.borrow().url()))?;
            for (event, decision) in at.into_iter().zip(decided) {
                decisions[event * self.remotes.len() + r] = decision;
            }
        }
        for (&event, decided) in events.iter().zip(decisions.chunks(self.remotes.len().max(1))) {
            record.decided(event, 0, decided.iter().map(|&decision| (event, decision)))?;
        }
        Ok(())
    }

    /// Returns the calls that decide `events`: a command for each limiter (and slot, in a
    /// cluster), and which events each decides.
    fn calls_of(&mut self, events: &[Event]) -> Result<Calls> {
        for &Event { time, key, .. } in events {
            check_time(time)?;
            while self.keys.len() <= slot(key) {
                let tag = format!("k{}", self.keys.len());
                let base = format!("{}{{{tag}}}", self.base);
                let keys = self.remotes.iter().map(|r| r.keys(base.as_bytes())).collect();
                self.keys.push((keys, slot_of(tag.as_bytes())));
            }
        }
        // Each limiter's calls go in one run of its batch script, or, in a cluster, where
        // one script reaches the keys of one slot, one run for each slot.
        let cluster = self.redis.borrow().is_cluster();
        let mut commands = Vec::new();
        // For each command: its limiter, the events it decides, and the number its batch
        // script echoes (none for the limiter's own script, for a call alone).
        let mut decided: Vec<(usize, Vec<usize>, Option<u64>)> = Vec::new();
        for (r, remote) in self.remotes.iter().enumerate() {
            let mut groups: Vec<Group> = Vec::new();
            // Where each slot's group is, and each replay key's number in its group.
            let (mut group_of, mut number_of) = (HashMap::new(), HashMap::new());
            for (at, &Event { time, key, cost }) in events.iter().enumerate() {
                // The scripts are loaded with a cost of 1 (`prepare`); an event of another
                // cost calls them with its own, and one that can never pass is refused here,
                // unsent, as a limiter in memory refuses it without a change.
                let Some(costed) = remote.costing(cost) else { continue };
                let (keys, hash_slot) = &self.keys[slot(key)];
                let slot_group = if cluster { *hash_slot } else { 0 };
                let group = *group_of.entry(slot_group).or_insert_with(|| {
                    groups.push(Group { slot: slot_group, ..Group::default() });
                    groups.len() - 1
                });
                let group = &mut groups[group];
                let number = *number_of.entry(slot(key)).or_insert_with(|| {
                    group.keys.push(keys[r][0].as_slice());
                    group.keys.len()
                });
                let set = match group.costs.iter().position(|&c| c == cost) {
                    Some(set) => set + 1,
                    None => {
                        group.costs.push(cost);
                        group.sets.push(costed.fixed_args(REPLAY_TTL_MS));
                        group.sets.len()
                    }
                };
                self.calls += 1;
                group.calls.push((number, set, time, self.calls));
                group.events.push(at);
            }
            for group in groups {
                // A call alone in its slot (a cluster's keys spread over every slot) runs
                // the limiter's own script, which does less than a batch of one.
                let single = match group.calls[..] {
                    [(_, set, time, call)] => remote.costing(group.costs[set - 1]).map(|one| {
                        one.command(&[group.keys[0].to_vec()], Some(time), REPLAY_TTL_MS, call)
                    }),
                    _ => None,
                };
                let (command, number) = match single {
                    Some(command) => (command, None),
                    None => {
                        let number = BATCH_NUMBERS.fetch_add(1, Ordering::Relaxed);
                        let batch =
                            remote.batch_command(&group.keys, &group.sets, &group.calls, number);
                        (batch, Some(number))
                    }
                };
                commands.push((group.slot, command));
                decided.push((r, group.events, number));
            }
        }
        Ok(Calls { commands, decided })
    }
}

/// The calls of one limiter in a batch that one script run decides: their slot (0 outside
/// a cluster), the keys they use, the costs they take and the fixed arguments of each,
/// each call's key number, set number, time and number, and its event.
#[derive(Default)]
struct Group<'k> {
    slot: u16,
    keys: Vec<&'k [u8]>,
    costs: Vec<u64>,
    sets: Vec<Vec<String>>,
    calls: Vec<(usize, usize, Timestamp, u64)>,
    events: Vec<usize>,
}

#[cfg(test)]
#[path = "../../../../tests/cli/redis_server.rs"]
mod redis_server;

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::redis_server::RedisServer;
    use crate::input::catalog::Event;

    #[test]
    #[ignore = "needs redis-server"]
    fn a_replay_reloads_scripts_the_server_lost_part_way() {
        use crate::Engine;
        use crate::Policy;
        use crate::limiter::Algorithm;
        use crate::memory::Memory;
        use crate::recorder::{KeyNames, Recorder, Settings};
        use crate::redis::{RedisEngine, Scripts, Server, prepare};
        use std::cell::RefCell;
        use std::rc::Rc;

        let server = RedisServer::start();
        let rate = "3/h".parse().unwrap();
        let window = "1h".parse().unwrap();
        // Every limiter that runs in Redis (the models of other systems do not).
        let settings: Vec<Settings> = Algorithm::ALL
            .iter()
            .filter(|a| a.redis_script().is_some())
            .map(|&algorithm| Settings {
                algorithm,
                rate,
                burst: std::num::NonZeroU64::new(3).unwrap(),
                window,
                params: algorithm.default_params(),
            })
            .collect();
        let mut redis = Server::connect(&[server.url()], Duration::from_secs(5)).unwrap();
        let remotes = prepare(&mut redis, &settings).unwrap();
        let scripts = Scripts::Lanes(remotes);
        let mut remote = RedisEngine::new(Rc::new(RefCell::new(redis)), scripts, "test:");
        let mut memory = Memory::new(Policy::SideBySide(&settings)).unwrap();
        let (mut in_redis, mut in_memory) =
            (Recorder::new(&settings, false), Recorder::new(&settings, false));
        let at = |minutes: i64| {
            crate::units::time::Timestamp::from_micros(1_700_000_000_000_000 + minutes * 60_000_000)
                .unwrap()
        };
        let events: Vec<_> = [0, 0, 1, 2, 3, 20, 21, 40, 41, 42, 43, 90, 90, 90]
            .iter()
            .map(|&m| Event::new(at(m), 0))
            .collect();
        let (first, second) = events.split_at(6);
        remote.decide(first, &mut in_redis).unwrap();
        let mut con = server.connection().unwrap();
        let _: String = redis::cmd("SCRIPT").arg("FLUSH").query(&mut con).unwrap();
        remote.decide(second, &mut in_redis).unwrap();
        for &event in &events {
            memory.push(event, &mut in_memory).unwrap();
        }
        let names = KeyNames::default();
        assert_eq!(in_redis.reports("x", names, 0, 1), in_memory.reports("x", names, 0, 1));
    }

    /// Writes a CSV of `times` (seconds after 2021-01-01) with a key each, in the order given.
    fn csv_of(events: &[(i64, u8)]) -> tempfile::NamedTempFile {
        use std::io::Write;
        let mut file = tempfile::NamedTempFile::new().unwrap();
        writeln!(file, "time,key").unwrap();
        for &(seconds, key) in events {
            let micros = 1_609_459_200_000_000 + seconds * 1_000_000;
            let time = crate::units::time::Timestamp::from_micros(micros).unwrap();
            writeln!(file, "{time},k{key}").unwrap();
        }
        file.flush().unwrap();
        file
    }

    /// Logs mostly in time order, with a few stragglers anywhere (read once streamed, then
    /// again sorted), are decided in Redis as in memory: every limiter that runs in Redis,
    /// keyed and not, on random logs of up to 1,600 events (batches are 512).
    #[test]
    #[ignore = "needs redis-server"]
    fn mostly_sorted_logs_are_decided_in_redis_as_in_memory() {
        use crate::Backend;
        use crate::input::catalog::{ReadOptions, Source};
        use crate::limiter::Algorithm;
        use crate::recorder::{KeyNames, Settings};
        use crate::redis::RedisTarget;
        use proptest::prelude::*;
        use proptest::test_runner::{Config, TestRunner};

        // One server for every case, stopped when the test ends.
        let server = RedisServer::start();
        let settings: Vec<Settings> = Algorithm::ALL
            .iter()
            .filter(|a| a.redis_script().is_some())
            .map(|&algorithm| Settings {
                algorithm,
                rate: "40/h".parse().unwrap(),
                burst: std::num::NonZeroU64::new(4).unwrap(),
                window: "1h".parse().unwrap(),
                params: algorithm.default_params(),
            })
            .collect();
        let target = RedisTarget {
            urls: vec![server.url()],
            prefix: "test:".into(),
            timeout: Duration::from_secs(5),
        };
        let logs = (
            proptest::collection::vec((0i64..90, 0u8..4), 1..1_600),
            proptest::collection::vec((0usize..1_600, 0usize..1_600), 0..4),
        );
        let mut runner = TestRunner::new(Config { cases: 24, ..Config::default() });
        let result = runner.run(&logs, |(gaps, stragglers)| {
            let mut events: Vec<(i64, u8)> = gaps
                .iter()
                .scan(0, |t, &(gap, key)| {
                    *t += gap;
                    Some((*t, key))
                })
                .collect();
            // A straggler: an earlier event moved later in the file.
            for (from, to) in stragglers {
                let (from, to) = (from % events.len(), to % events.len());
                let event = events.remove(from.min(to));
                events.insert(from.max(to), event);
            }
            let file = csv_of(&events);
            let source = Source::Path(file.path().to_owned());
            for keyed in [false, true] {
                let mut options = ReadOptions::new();
                options.key_column = keyed.then(|| "key".to_owned());
                let decide = |backend: Backend| {
                    let (record, stats) =
                        backend.replay(&settings, keyed, (&source, &options), false).unwrap();
                    let names = KeyNames::of(options.key_column.as_deref(), &stats);
                    format!("{:?}", record.reports("x", names, 0, 1))
                };
                let redis = Backend::new(&settings, Some(&target), None).unwrap();
                prop_assert_eq!(decide(redis), decide(Backend::Memory), "keyed: {}", keyed);
            }
            Ok(())
        });
        if let Err(e) = result {
            panic!("{e}");
        }
    }
}
