//! Redis Cluster: a connection to every master, the master of every slot, and the
//! redirects of a cluster that changes under a run followed.
//!
//! Routing is done here, on the bounded connections of `connection.rs`, rather than by the
//! redis crate's cluster client: its synchronous client waits its timeout once per reply
//! (a silent master holding a pipeline's replies would take a timeout for each), and in a
//! pipeline it hands MOVED and ASK back as replies instead of following them.

use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use redis::{ConnectionAddr, IntoConnectionInfo, ServerErrorKind, Value};

use super::connection::Redis;

/// The number of hash slots of a cluster.
pub const SLOTS: u16 = 16_384;

/// How many times one call may be redirected, or told to try again, before the run gives up.
const MAX_REDIRECTS: usize = 8;

/// How long to wait before trying a call again that a cluster refused for now (TRYAGAIN,
/// during a resharding) or sent back and forth (MOVED, while a slot's hand-over reaches the
/// nodes one by one); with [`MAX_REDIRECTS`], at most 0.8 s a call.
const TRY_AGAIN_WAIT: Duration = Duration::from_millis(100);

/// Returns the hash slot of a key, as Redis Cluster finds it: CRC16 (XMODEM) of the key's
/// hash tag, the text between its first `{` and the next `}` if that is not empty, or else of
/// the whole key, modulo 16384.
pub fn slot_of(key: &[u8]) -> u16 {
    let tag = key.iter().position(|&b| b == b'{').and_then(|open| {
        let rest = &key[open + 1..];
        let close = rest.iter().position(|&b| b == b'}')?;
        (close > 0).then(|| &rest[..close])
    });
    crc16::State::<crc16::XMODEM>::calculate(tag.unwrap_or(key)) % SLOTS
}

/// A Redis Cluster: every master connected, and which one serves each slot.
pub struct Cluster {
    seed: String,
    auth: String,
    timeout: Duration,
    nodes: Vec<Node>,
    /// For each slot, its master's place in `nodes`.
    slots: Vec<usize>,
}

/// One master: its address, `host:port`, and the connection to it.
struct Node {
    addr: String,
    redis: Redis,
}

impl Cluster {
    /// Maps the cluster that `seed` belongs to (`CLUSTER SLOTS`), and connects to each of
    /// its masters, with the seed URL's user and password; every slot must have one.
    pub fn connect(mut seed: Redis, timeout: Duration) -> Result<Cluster> {
        let url = seed.url().to_owned();
        let info = url.as_str().into_connection_info()?;
        if info.redis_settings().db() != 0 {
            bail!("Redis Cluster at {url} has only database 0, and the URL names another");
        }
        let ConnectionAddr::Tcp(host, _) = info.addr() else {
            bail!("Redis Cluster at {url}: a cluster is reached over TCP");
        };
        // The user and password as the URL wrote them, still percent-encoded.
        let auth = url
            .split_once("://")
            .and_then(|(_, rest)| rest.split_once('@'))
            .map_or(String::new(), |(auth, _)| format!("{auth}@"));
        let reply = seed.call(redis::cmd("CLUSTER").arg("SLOTS"))?;
        let ranges = parse_slots(&reply, host).ok_or_else(|| {
            anyhow!("Redis Cluster at {url} gave an unexpected reply to CLUSTER SLOTS")
        })?;
        let mut cluster = Cluster {
            seed: url,
            auth,
            timeout,
            nodes: Vec::new(),
            slots: vec![usize::MAX; usize::from(SLOTS)],
        };
        for (first, last, addr) in ranges {
            let node = cluster.node(&addr)?;
            for slot in first..=last.min(SLOTS - 1) {
                cluster.slots[usize::from(slot)] = node;
            }
        }
        if let Some(slot) = cluster.slots.iter().position(|&n| n == usize::MAX) {
            bail!("Redis Cluster at {}: slot {slot} is served by no node", cluster.seed);
        }
        Ok(cluster)
    }

    /// Returns the place of the master at `addr`, connecting to it if it is new.
    fn node(&mut self, addr: &str) -> Result<usize> {
        if let Some(known) = self.nodes.iter().position(|n| n.addr == addr) {
            return Ok(known);
        }
        let redis = Redis::connect(&format!("redis://{}{addr}", self.auth), self.timeout)?;
        self.nodes.push(Node { addr: addr.to_owned(), redis });
        Ok(self.nodes.len() - 1)
    }

    /// Returns the seed's URL, for messages.
    pub fn url(&self) -> &str {
        &self.seed
    }

    /// Whether the connection to a master failed part way.
    pub fn lost(&self) -> bool {
        self.nodes.iter().any(|node| node.redis.lost())
    }

    /// Returns the connection to each master.
    pub fn masters(&mut self) -> impl Iterator<Item = &mut Redis> {
        self.nodes.iter_mut().map(|n| &mut n.redis)
    }

    /// Sends calls, each with its key's slot, in one pipeline per master (sent to all before
    /// any is read), and returns their replies in order. A call redirected (MOVED, ASK),
    /// refused for now (TRYAGAIN) or missing its script (NOSCRIPT, after which `reload`
    /// loads the scripts on that node) is sent again alone, in call order, after the others:
    /// such a call changed nothing, and the later calls of its slot were refused too.
    pub fn run(
        &mut self,
        calls: &[(u16, redis::Cmd)],
        reload: &mut dyn FnMut(&mut Redis) -> Result<()>,
    ) -> Result<Vec<Value>> {
        let mut by_node: Vec<Vec<usize>> = vec![Vec::new(); self.nodes.len()];
        for (i, (slot, _)) in calls.iter().enumerate() {
            by_node[self.slots[usize::from(*slot)]].push(i);
        }
        let mut packed = Vec::new();
        let mut tickets = Vec::new();
        for (n, (node, calls_here)) in self.nodes.iter_mut().zip(&by_node).enumerate() {
            if calls_here.is_empty() {
                continue;
            }
            packed.clear();
            for &i in calls_here {
                calls[i].1.write_packed_command(&mut packed);
            }
            tickets.push((n, node.redis.send(&packed, calls_here.len())?));
        }
        let mut replies = vec![Value::Nil; calls.len()];
        let mut again = Vec::new();
        for (n, ticket) in tickets {
            let calls_here = &by_node[n];
            for (&i, reply) in calls_here.iter().zip(self.nodes[n].redis.receive(ticket)?) {
                if retried(&reply).is_some() {
                    again.push(i);
                }
                replies[i] = reply;
            }
        }
        again.sort_unstable();
        for i in again {
            let first = std::mem::replace(&mut replies[i], Value::Nil);
            replies[i] = self.follow(&calls[i], first, reload)?;
        }
        Ok(replies)
    }

    /// Sends one call again until it is answered, following its redirects.
    fn follow(
        &mut self,
        (slot, cmd): &(u16, redis::Cmd),
        mut reply: Value,
        reload: &mut dyn FnMut(&mut Redis) -> Result<()>,
    ) -> Result<Value> {
        let mut target = self.slots[usize::from(*slot)];
        // Whether the call goes to a node importing the slot, after ASK: it says ASKING
        // each time, also when it is sent there again (for TRYAGAIN or NOSCRIPT).
        let mut asking = false;
        let mut resharding = false;
        let mut moved = 0;
        for _ in 0..MAX_REDIRECTS {
            let Some(kind) = retried(&reply) else { return Ok(reply) };
            resharding |= kind == ServerErrorKind::TryAgain;
            match kind {
                ServerErrorKind::Moved => {
                    // A second MOVED for one call: the nodes disagree about who serves the
                    // slot, as while a hand-over reaches them one by one. They agree soon.
                    moved += 1;
                    if moved > 1 {
                        std::thread::sleep(TRY_AGAIN_WAIT);
                    }
                    target = self.node(redirect(&reply, self.url())?)?;
                    self.slots[usize::from(*slot)] = target;
                    asking = false;
                }
                ServerErrorKind::Ask => {
                    target = self.node(redirect(&reply, self.url())?)?;
                    asking = true;
                }
                ServerErrorKind::NoScript => reload(&mut self.nodes[target].redis)?,
                _ => std::thread::sleep(TRY_AGAIN_WAIT),
            }
            let mut packed = Vec::new();
            if asking {
                redis::cmd("ASKING").write_packed_command(&mut packed);
            }
            cmd.write_packed_command(&mut packed);
            let count = 1 + usize::from(asking);
            reply =
                self.nodes[target].redis.round_trip(&packed, count)?.pop().unwrap_or(Value::Nil);
        }
        if resharding {
            bail!(
                "Redis Cluster at {}: slot {slot} is being resharded, and its keys were split \
                 between two nodes (TRYAGAIN) for {MAX_REDIRECTS} tries; nothing ran: try again \
                 once the resharding is done",
                self.seed
            );
        }
        bail!(
            "Redis Cluster at {}: slot {slot} was still redirected after {MAX_REDIRECTS} tries",
            self.seed
        )
    }
}

/// Returns the kind of a reply that asks for the call to be sent again, if it is one.
fn retried(reply: &Value) -> Option<ServerErrorKind> {
    let Value::ServerError(e) = reply else { return None };
    e.kind().filter(|kind| {
        matches!(
            kind,
            ServerErrorKind::Moved
                | ServerErrorKind::Ask
                | ServerErrorKind::TryAgain
                | ServerErrorKind::NoScript
        )
    })
}

/// Returns the `host:port` a MOVED or ASK reply (`MOVED 3999 127.0.0.1:6381`) names.
fn redirect<'a>(reply: &'a Value, url: &str) -> Result<&'a str> {
    let detail = match reply {
        Value::ServerError(e) => e.details().unwrap_or_default(),
        _ => "",
    };
    detail
        .split_whitespace()
        .nth(1)
        .ok_or_else(|| anyhow!("Redis Cluster at {url} redirected a call without an address"))
}

/// Reads `CLUSTER SLOTS`: each range's first and last slot and its master's `host:port`,
/// with `host` for a master that gives no address of its own.
fn parse_slots(reply: &Value, host: &str) -> Option<Vec<(u16, u16, String)>> {
    let Value::Array(ranges) = reply else { return None };
    let int = |v: &Value| match v {
        Value::Int(i) => u16::try_from(*i).ok(),
        _ => None,
    };
    let text = |v: &Value| match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    };
    ranges
        .iter()
        .map(|range| {
            let Value::Array(parts) = range else { return None };
            let [first, last, Value::Array(master), ..] = parts.as_slice() else { return None };
            let [ip, port, ..] = master.as_slice() else { return None };
            let ip = text(ip).filter(|ip| !ip.is_empty() && ip != "?");
            let ip = ip.unwrap_or_else(|| host.to_owned());
            Some((int(first)?, int(last)?, format!("{ip}:{}", int(port)?)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_follow_the_hash_tag_as_redis_cluster_does() {
        // Values from the Redis Cluster specification and `CLUSTER KEYSLOT`.
        assert_eq!(slot_of(b"123456789"), 12_739);
        assert_eq!(slot_of(b"foo"), 12_182);
        assert_eq!(slot_of(b"{user1000}.following"), slot_of(b"user1000"));
        assert_eq!(slot_of(b"ratelimit:{alert:bob}:gcra"), slot_of(b"alert:bob"));
        // An empty tag hashes the whole key; only the first `{` counts.
        assert_eq!(slot_of(b"foo{}{bar}"), slot_of(b"foo{}{bar}"));
        assert_ne!(slot_of(b"foo{}{bar}"), slot_of(b"bar"));
        assert_eq!(slot_of(b"foo{{bar}}zap"), slot_of(b"{bar"));
    }

    #[test]
    fn cluster_slots_replies_are_read_with_the_seed_host_for_a_blank_address() {
        let node =
            |ip: &str, port| Value::Array(vec![Value::BulkString(ip.into()), Value::Int(port)]);
        let range = |a, b, n| Value::Array(vec![Value::Int(a), Value::Int(b), n]);
        let reply = Value::Array(vec![
            range(0, 5460, node("10.0.0.1", 7001)),
            range(5461, 16383, node("", 7002)),
        ]);
        let want =
            vec![(0, 5460, "10.0.0.1:7001".to_owned()), (5461, 16383, "seed:7002".to_owned())];
        assert_eq!(parse_slots(&reply, "seed"), Some(want));
        assert_eq!(parse_slots(&Value::Int(3), "seed"), None);
    }
}
