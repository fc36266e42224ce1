//! Deciding live in Redis, at its clock, shared with every process that uses the same
//! keys. What a live engine is, and the ones in memory, are [`crate::live`]'s.

use std::cell::RefCell;
use std::rc::Rc;

use anyhow::{Context, Result};

use super::{Outcome, Remote, RemoteLayers, SHARED, Server};
use crate::limiter::Decision;
use crate::live::{Answer, Answered, Live};
use crate::units::time::Timestamp;

/// The Redis key of every event when events have no key of their own.
const ONE_KEY: &str = "filter";

/// What a live engine in Redis calls: one limiter's script, or the layered script.
pub(super) enum LiveScript {
    /// One limiter.
    One(Remote),
    /// Several limits at once, all or nothing: one call of the layered script an event.
    Layers(RemoteLayers),
}

/// Returns a live engine in Redis calling `script`, its keys under `prefix`.
pub(super) fn in_redis(
    server: Rc<RefCell<Server>>,
    script: LiveScript,
    prefix: &str,
) -> Box<dyn Live> {
    Box::new(LiveRedis { server, script, prefix: prefix.to_owned(), calls: 0 })
}

/// In Redis, at its clock, shared with every process that uses the same keys: one call of
/// one limiter's script or of the layered script an event. One limiter's keys go under
/// `PREFIX{KEY}`; keyed layers' under `PREFIX{KEY}:L<n>:ALGO`, the others' under
/// `PREFIX{all}`, as `check`'s do.
struct LiveRedis {
    server: Rc<RefCell<Server>>,
    script: LiveScript,
    prefix: String,
    calls: u64,
}

impl Live for LiveRedis {
    fn decide_now(&mut self, now: Timestamp, key: Option<&[u8]>, cost: u64) -> Result<Decision> {
        Ok(self.answer_now(now, key, cost)?.decision())
    }

    /// A connection lost (Redis restarted, say) is dropped: Redis is connected to again,
    /// within the connect timeout, and asked again, once. A server that lost its state
    /// counts the event afresh; one that kept it and took the first ask counts it twice,
    /// which refuses, if anything, one event too many, never one too few.
    fn answer_now(&mut self, now: Timestamp, key: Option<&[u8]>, cost: u64) -> Result<Answered> {
        self.calls += 1;
        let (own, member) = live_key(&self.prefix, key, now, self.calls);
        let server = &mut self.server.borrow_mut();
        match self.ask(server, &own, &member, cost) {
            Err(lost) if server.lost() => {
                server.reconnect().with_context(|| format!("{lost:#}; connecting again"))?;
                self.ask(server, &own, &member, cost)
            }
            answered => answered,
        }
    }
}

impl LiveRedis {
    /// Asks Redis of a call costing `cost` whose keys are under `own`, its entry named
    /// `member`.
    fn ask(&self, server: &mut Server, own: &[u8], member: &str, cost: u64) -> Result<Answered> {
        // The limiters that let an empty key through uncounted have no script in Redis.
        match &self.script {
            LiveScript::One(remote) => {
                // A cost that can never pass is refused here, unsent, as in memory.
                let Some(remote) = remote.costing(cost) else {
                    let decision = Decision { passed: false, wait: 0 };
                    let never = Answer {
                        decision,
                        remaining: 0,
                        retry_after_us: None,
                        reset_after_us: None,
                    };
                    return Ok(Answered { passed: false, wait: 0, limits: vec![never] });
                };
                let outcome = remote.check(server, own, member)?;
                let (passed, wait) = (outcome.allowed, outcome.wait);
                Ok(Answered { passed, wait, limits: vec![answer(&outcome)] })
            }
            LiveScript::Layers(remote) => {
                let shared = format!("{}{{{SHARED}}}", self.prefix);
                let bases = remote.bases(own, shared.as_bytes());
                let outcome = remote.check(server, &bases, member, cost)?;
                let limits = outcome.layers.iter().map(answer).collect();
                Ok(Answered { passed: outcome.allowed, wait: 0, limits })
            }
        }
    }
}

/// What a script's outcome tells a client.
fn answer(outcome: &Outcome) -> Answer {
    Answer {
        decision: Decision { passed: outcome.allowed, wait: outcome.wait },
        remaining: u64::try_from(outcome.remaining).unwrap_or(0),
        retry_after_us: Some(outcome.retry_after_us.max(0)),
        reset_after_us: Some(outcome.reset_after_us.max(0)),
    }
}

/// Returns the Redis base of a live event's keys, `PREFIX{KEY}` (`PREFIX{filter}` for no
/// key), the key's own bytes, and a name for a sliding log's entry that no other call, of
/// any process, uses.
fn live_key(prefix: &str, key: Option<&[u8]>, now: Timestamp, call: u64) -> (Vec<u8>, String) {
    let key = key.unwrap_or(ONE_KEY.as_bytes());
    let member = format!("{}:{}:{call}", std::process::id(), now.as_micros());
    ([prefix.as_bytes(), b"{", key, b"}"].concat(), member)
}
