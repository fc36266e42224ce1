//! The fleet engine: K servers simulated in memory, each event routed to one of them.

use std::num::NonZeroU32;

use anyhow::{Result, anyhow, bail};
use rand_distr::{Distribution, Uniform};
use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::SeedableRng;

use super::recorder::Settings;
use crate::input::catalog::{Event, Key, KeyNotes, slot};
use crate::input::keys::wide;
use crate::limiter::{AnyPerKey, AnyReplicated, Decision, Share};
use crate::report::{self, ServerCount};
use crate::{Engine, Record};

/// Why layers do not run on a fleet.
pub const LAYERED_FLEET: &str = "--servers simulates one limit on a fleet, not layers";

/// The most servers a fleet may have.
pub const MAX_SERVERS: u32 = 10_000;

/// The most key copies a fleet keeps: one per key and server, for each limiter, 16 to 40
/// bytes each (a sliding log's more), so about 1.3 GiB at most.
pub const MAX_COPIES: u64 = 1 << 25;

/// How events find their server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// Event i, in time order, goes to server i mod K.
    RoundRobin,
    /// Each event goes to a server drawn uniformly, from a generator seeded with this.
    Random(u64),
    /// Every row with the same value of this column goes to one server: the values are
    /// dealt to the servers in turn, in the order they first appear.
    Sticky(String),
}

impl Route {
    /// Returns the name reports use: `round-robin`, `random` or `hash:COLUMN`.
    pub fn name(&self) -> String {
        match self {
            Route::RoundRobin => "round-robin".to_owned(),
            Route::Random(_) => "random".to_owned(),
            Route::Sticky(column) => format!("hash:{column}"),
        }
    }
}

/// A fleet to simulate: how many servers, how events are routed, and how each limiter's
/// limit is shared among the servers.
#[derive(Clone, Debug)]
pub struct FleetPlan {
    /// The number of servers.
    pub servers: NonZeroU32,
    /// How events find their server.
    pub route: Route,
    /// For each limiter (each of the replay's settings), how its limit is shared.
    pub shares: Vec<Share>,
    /// Whether each key has its own limit; if not, a key only routes (`hash:COLUMN`).
    pub keyed: bool,
}

impl FleetPlan {
    /// Checks that every limiter's share of the limit can be run.
    pub fn check(&self, settings: &[Settings]) -> Result<()> {
        for (s, share) in settings.iter().zip(&self.shares) {
            if share.server_limit(s.rate, s.burst, self.servers.get()).is_none() {
                let k = self.servers;
                bail!("--share split: {} split {k} ways is a period too long to run", s.rate);
            }
        }
        Ok(())
    }
}

/// Decides every event on the server it is routed to, and beside the fleet, on one
/// limiter that sees every event, to measure what the fleet lets through over it.
#[derive(Clone, Debug)]
pub struct FleetEngine {
    plan: FleetPlan,
    router: Router,
    lanes: Vec<AnyReplicated>,
    alone: Vec<AnyPerKey>,
    tally: Vec<report::FleetReport>,
    events: Vec<u64>,
    keys: usize,
    /// Each lane's say: whether it lets the empty key through uncounted, with keys.
    skips: Vec<bool>,
    empty: KeyNotes,
}

#[derive(Clone, Debug)]
enum Router {
    Turns(u32),
    Random(Xoshiro256PlusPlus, Uniform<u32>),
    Sticky,
}

impl FleetEngine {
    /// Returns a fleet running limiters with `settings`, as `plan` says; the plan must
    /// have passed [`FleetPlan::check`].
    pub fn new(settings: &[Settings], plan: &FleetPlan) -> FleetEngine {
        let k = plan.servers.get();
        let router = match plan.route {
            Route::RoundRobin => Router::Turns(0),
            Route::Random(seed) => match Uniform::new(0, k) {
                Ok(uniform) => Router::Random(Xoshiro256PlusPlus::seed_from_u64(seed), uniform),
                // Only an empty range fails, and a fleet has a server at least.
                Err(_) => Router::Turns(0),
            },
            Route::Sticky(_) => Router::Sticky,
        };
        let mut lanes = Vec::new();
        let mut tally = Vec::new();
        for (s, &share) in settings.iter().zip(&plan.shares) {
            let (rate, burst) = share.server_limit(s.rate, s.burst, k).unwrap_or((s.rate, s.burst));
            lanes.push(AnyReplicated::new(s.algorithm, rate, burst, k, share, s.params));
            tally.push(report::FleetReport {
                servers: k,
                route: plan.route.name(),
                seed: match plan.route {
                    Route::Random(seed) => Some(seed),
                    _ => None,
                },
                share: share.name(),
                sync_s: match share {
                    Share::Synced(every) => Some(every),
                    Share::Local | Share::Split => None,
                },
                server_rate: rate,
                server_burst: s.algorithm.shown_burst(burst),
                by_server: vec![ServerCount::default(); slot(k)],
                alone_passed: 0,
                over_admission: None,
            });
        }
        let alone = settings.iter().map(Settings::per_key);
        let skips = settings.iter().map(|s| plan.keyed && s.algorithm.skips_empty_key());
        FleetEngine {
            skips: skips.collect(),
            empty: KeyNotes::default(),
            plan: plan.clone(),
            router,
            lanes,
            alone: alone.collect(),
            tally,
            events: vec![0; slot(k)],
            keys: 0,
        }
    }

    fn server(&mut self, key: Key) -> usize {
        let k = self.plan.servers.get();
        let server = match &mut self.router {
            Router::Turns(next) => {
                let server = *next;
                *next = if server + 1 == k { 0 } else { server + 1 };
                server
            }
            Router::Random(rng, uniform) => uniform.sample(rng),
            Router::Sticky => key % k,
        };
        slot(server)
    }
}

impl Engine for FleetEngine {
    fn push<R: Record>(&mut self, event: Event, record: &mut R) -> Result<()> {
        let Event { time, key, cost } = event;
        let server = self.server(key);
        let index = if self.plan.keyed { slot(key) } else { 0 };
        if index >= self.keys {
            self.keys = index + 1;
            // Under 2^46: at most 2^32 keys on at most 10 000 servers.
            let copies = wide(self.keys) * u64::from(self.plan.servers.get());
            if copies > MAX_COPIES {
                bail!(
                    "--servers {} with --key: {} keys on {} servers are more than the {MAX_COPIES} copies a fleet keeps",
                    self.plan.servers,
                    self.keys,
                    self.plan.servers
                );
            }
        }
        self.events[server] += 1;
        let empty = self.empty.is(key);
        let FleetEngine { lanes, alone, tally, skips, .. } = self;
        let each = lanes.iter_mut().zip(alone.iter_mut()).zip(tally.iter_mut()).zip(skips.iter());
        let decisions = each.map(|(((lane, alone), tally), &skips)| {
            // Not accounted, on every server as alone.
            let uncounted = empty && skips;
            tally.alone_passed += u64::from(uncounted || alone.decide(index, time, cost).passed);
            let decision = match uncounted {
                true => Decision::UNCOUNTED,
                false => lane.decide(server, index, time, cost),
            };
            tally.by_server[server].passed += u64::from(decision.passed);
            (event, decision)
        });
        record.decided(event, 0, decisions)
    }

    fn share_key_notes(&mut self, notes: &KeyNotes) {
        self.empty = notes.clone();
        // Not keyed, the fleet sees one key, whose text is none of the reading's.
        if self.plan.keyed {
            self.lanes.iter_mut().for_each(|lane| lane.share_key_notes(notes));
            self.alone.iter_mut().for_each(|alone| alone.share_key_notes(notes));
        }
    }

    fn flush<R: Record>(&mut self, record: &mut R) -> Result<()> {
        let mut fleets = self.tally.clone();
        for fleet in &mut fleets {
            for (count, &events) in fleet.by_server.iter_mut().zip(&self.events) {
                count.events = events;
                count.dropped = events - count.passed;
            }
            let passed: u64 = fleet.by_server.iter().map(|c| c.passed).sum();
            fleet.over_admission = ratio(passed, fleet.alone_passed);
        }
        let recorder = record.side_by_side();
        recorder.ok_or_else(|| anyhow!(LAYERED_FLEET))?.set_fleets(fleets);
        Ok(())
    }

    fn live(self) -> Result<Box<dyn crate::live::Live>> {
        bail!("a fleet of servers is simulated in a replay, not live")
    }
}

/// Returns `a / b` to three decimals, rounded half up, or `None` for `b = 0`.
fn ratio(a: u64, b: u64) -> Option<f64> {
    let thousandths = (u128::from(a) * 1000 + u128::from(b) / 2).checked_div(u128::from(b))?;
    // A ratio of event counts is far below 2^53 thousandths, where f64 stops being exact.
    #[allow(clippy::cast_precision_loss)]
    Some(thousandths as f64 / 1000.0)
}
