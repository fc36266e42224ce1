//! Replaying requests through layers settled after the response, and what it found: the
//! LLM limits that reserve, charge at completion, or cap requests in flight.

pub mod min_limit;
pub mod parts;
pub mod presets;
pub mod retry;
mod spec;

use schemars::JsonSchema;
use serde::Serialize;

use ratelimit_core::limiter::MAX_COST;
use ratelimit_core::settle::{self, Amount, Charge, SettledLayer, Settling};

use self::retry::{Retried, Retry};
pub use self::spec::{Bound, LayerSpec, Sum, charge_of, parse_charge};
use crate::error::{Error, Place, Result};
use crate::input::catalog::{ReadOptions, ReadStats, Source};
use crate::input::requests::{Completion, Requests, read_requests, stream_requests};
use crate::layered::MAX_LAYERS;
use crate::limit::LimitError;
use crate::redis::{RedisStore, RedisTarget};
use crate::units::time::{Span, Timestamp};

/// What a replay of requests settled after the response found: every request, those
/// every layer admitted, and what each layer's settlement did.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct SettledReport {
    /// The input's name: its path, `<stdin>` or `<sample>`.
    pub input: String,
    /// The requests read, after the filters.
    pub requests: u64,
    /// The requests every layer admitted.
    pub passed: u64,
    /// The requests some layer refused.
    pub refused: u64,
    /// The most admitted requests in flight at once, of all keys.
    pub peak_in_flight: u64,
    /// Each layer, in the order given.
    pub layers: Vec<SettledLayerReport>,
    /// With `--retry`: what refused clients coming back would have done, a simulation.
    /// Then `passed` counts the requests served in the end, `refused` those that gave up,
    /// and each layer's `refused` every refusal of every try.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry: Option<Retried>,
}

/// What one layer's settlement did.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct SettledLayerReport {
    /// The layer, as `--limit` writes it.
    pub spec: String,
    /// When it charges: `arrival`, `reserve` or `completion`.
    pub charge: Charge,
    /// The requests it refused when asked (another layer may have refused them too).
    pub refused: u64,
    /// The units reserved at arrival by the requests it admitted.
    pub reserved: u128,
    /// The units given back at completion: each admitted request's estimate less its real
    /// cost, where positive, before the cap at a full limiter.
    pub refunded: u128,
    /// The units charged at completion: the real cost beyond the estimate, or all of it
    /// with `charge=completion`.
    pub charged_after: u128,
    /// The most units one key owed right after a settlement, rounded up: how far charges
    /// after the response took its limiter below empty.
    pub largest_debt: u64,
    /// The limit's count a period (N of N/P), for a rate; `null` for a cap.
    pub limit: Option<u64>,
    /// The limit's period, in seconds; `null` for a cap.
    #[serde(serialize_with = "crate::seconds::optional_seconds")]
    #[schemars(with = "Option<f64>")]
    pub period_s: Option<Span>,
    /// The most real cost one key's admitted requests spent in any window of the period,
    /// counted at arrival; `null` for a cap.
    pub most_spent: Option<u128>,
    /// When that window starts (RFC 3339, UTC): at its first spending.
    pub most_spent_from: Option<Timestamp>,
    /// Whether `most_spent` is over `limit`: the limit was overshot.
    pub overshot: bool,
    /// The most admitted requests of one key (of all, if not keyed) in flight at once.
    pub peak_in_flight: u64,
}

/// Returns the one column keying the keyed layers of `specs`, if one does.
pub fn key_column(specs: &[LayerSpec]) -> Result<Option<&str>, LimitError> {
    crate::limits::one_column(
        specs.iter().filter_map(|s| s.key.as_deref()),
        "layers",
        "keyed",
        "key",
    )
}

/// The layers of `specs` as the core settles them, each rate's busiest window `window`
/// long (its period if `None`).
pub(crate) fn layers(specs: &[LayerSpec], window: Option<Span>) -> Result<Vec<SettledLayer>> {
    if specs.is_empty() || specs.len() > MAX_LAYERS {
        let message = format!("{} layers are given; 1 to {MAX_LAYERS} run at once", specs.len());
        return Err(Error::Policy { message });
    }
    let layer = |spec: &LayerSpec| {
        let bound = match &spec.bound {
            Bound::Rate(limit) => settle::Bound::Rate(limit.settings(window, true, "")?),
            Bound::Concurrency(max) => settle::Bound::Concurrency(*max),
        };
        Ok(SettledLayer { bound, keyed: spec.key.is_some(), charge: spec.charge })
    };
    specs.iter().map(layer).collect()
}

/// How a replay of requests runs: when each completes (as it arrives, without), the
/// length of each rate's busiest window (its period, without), whether refused requests
/// come back, and where the rate limiters are kept (in memory, without Redis).
#[derive(Clone, Copy, Debug, Default)]
pub struct RequestsAsk<'a> {
    /// When each request completes.
    pub completion: Option<&'a Completion>,
    /// The busiest window's length.
    pub window: Option<Span>,
    /// How refused requests come back, a simulation.
    pub retry: Option<&'a Retry>,
    /// The Redis server or cluster the rate limiters are kept in.
    pub redis: Option<&'a RedisTarget>,
}

/// Replays the requests of `source` (read by `read`, its key column the layers') through
/// `specs` as `ask` says, and returns what it found and what reading found. Requests are
/// kept in memory to be put in order of arrival: 32 bytes each and 8 a column summed, at
/// most 4 GiB. In Redis each question a settlement asks is a script call, one round trip
/// each, of at most the target's timeout.
pub fn replay(
    source: &Source,
    read: &ReadOptions,
    specs: &[LayerSpec],
    ask: RequestsAsk<'_>,
) -> Result<(SettledReport, ReadStats)> {
    let RequestsAsk { completion, window, retry, redis } = ask;
    if retry.is_some() && redis.is_some() {
        let message = "--retry runs in memory: a retry-after is asked of the limiters here, \
                       not of Redis"
            .to_owned();
        return Err(Error::Policy { message });
    }
    let mut run = Run::new(source, read, specs, window, Vec::new())?;
    if let Some(target) = redis {
        run.store = Some(RedisStore::connect(target, &run.layers)?);
    }
    if retry.is_some() || redis.is_some() {
        // Refused requests come back among the others, and Redis's limiters cannot start
        // again: all are read first, in order.
        let columns = run.costs.columns.clone();
        let (requests, stats) = read_requests(source, read, completion, &columns)?;
        let Some(retry) = retry else {
            for n in 0..requests.len() {
                run.settle(&requests, n)?;
            }
            return Ok((run.report(requests.len())?, stats));
        };
        let retried = run.simulate(&requests, retry)?;
        let mut report = run.report(requests.len())?;
        report.passed = retried.served_first + retried.served_after_retry;
        report.refused = retried.gave_up;
        report.retry = Some(retried);
        return Ok((report, stats));
    }
    // Requests in arrival order are settled as they are read, on a thread of their own;
    // all are kept all the same, to be put in order and settled afresh if one comes early.
    let name = source.name();
    let mut requests = Requests { width: run.costs.columns.len(), ..Requests::default() };
    let mut in_order = true;
    let columns = run.costs.columns.clone();
    let stats = stream_requests(source, read, completion, &columns, |chunk| {
        let from = requests.len();
        requests.append(chunk, &name)?;
        for n in from..requests.len() {
            in_order = in_order && requests.in_order_at(n);
            if !in_order {
                break;
            }
            run.settle(&requests, n)?;
        }
        Ok::<_, Error>(())
    })?;
    if !in_order {
        requests = requests.into_arrival_order();
        run = Run::new(source, read, specs, window, columns)?;
        for n in 0..requests.len() {
            run.settle(&requests, n)?;
        }
    }
    Ok((run.report(requests.len())?, stats))
}

/// Replays `requests`, read from `source` by `read` with `columns` (which hold every
/// column `specs` sum: [`columns`] of them, or more), through `specs`, as [`replay`] does.
pub fn replay_read(
    source: &Source,
    read: &ReadOptions,
    (requests, columns): (&Requests, &[String]),
    specs: &[LayerSpec],
    window: Option<Span>,
) -> Result<SettledReport> {
    let mut run = Run::new(source, read, specs, window, columns.to_vec())?;
    if run.costs.columns.len() != requests.width {
        let missing = &run.costs.columns[requests.width.min(run.costs.columns.len())..];
        let message = format!("the requests were read without {}", missing.join(", "));
        return Err(Error::Policy { message });
    }
    for n in 0..requests.len() {
        run.settle(requests, n)?;
    }
    run.report(requests.len())
}

/// The columns the requests of `specs` are read with, each once, in the order first named.
pub fn columns(specs: &[LayerSpec]) -> Vec<String> {
    Costs::new(specs.iter().map(|spec| (spec.reserve.as_ref(), &spec.cost))).columns
}

/// A replay of requests under way: the layers, what requests cost them, the settling and
/// how many passed.
struct Run<'a> {
    source: &'a Source,
    specs: &'a [LayerSpec],
    layers: Vec<SettledLayer>,
    costs: Costs<'a>,
    settling: Settling,
    amounts: Vec<Amount>,
    passed: u64,
    /// Redis, where the rate limiters are kept if there.
    store: Option<RedisStore>,
    /// The admitted requests, if kept: for a replay in parts.
    flights: Option<Vec<parts::Flight>>,
}

impl<'a> Run<'a> {
    fn new(
        source: &'a Source,
        read: &ReadOptions,
        specs: &'a [LayerSpec],
        window: Option<Span>,
        columns: Vec<String>,
    ) -> Result<Run<'a>> {
        let layers = layers(specs, window)?;
        let mut settling =
            Settling::new(&layers).map_err(|e| Error::Policy { message: e.to_string() })?;
        // Shared before the reading numbers the keys, which then tells the empty key's
        // number.
        settling.share_key_notes(&read.key_notes);
        let sums = specs.iter().map(|spec| (spec.reserve.as_ref(), &spec.cost));
        let costs = Costs::within(sums, columns);
        let amounts = vec![Amount::default(); specs.len()];
        let (passed, store, flights) = (0, None, None);
        Ok(Run { source, specs, layers, costs, settling, amounts, passed, store, flights })
    }

    /// Decides request `n` of `requests`, the next in arrival order.
    fn settle(&mut self, requests: &Requests, n: usize) -> Result<()> {
        self.costs.amounts(self.source, requests, n, &mut self.amounts)?;
        let request = requests.requests[n];
        let refused = match &mut self.store {
            Some(store) => self.settling.arrive_sharing(store, request, &self.amounts),
            None => self.settling.arrive(request, &self.amounts),
        };
        let refused = refused.map_err(|e| failed(&mut self.store, e))?;
        self.passed += u64::from(refused == 0);
        if let Some(flights) = self.flights.as_mut().filter(|_| refused == 0) {
            // Its completion as settled: later by a leaky queue's wait.
            let completes = self.settling.last_completion().unwrap_or(request.completion);
            let (arrival, completion) = (request.arrival.as_micros(), completes.as_micros());
            flights.push(parts::Flight { arrival, completion, row: requests.lines[n] });
        }
        Ok(())
    }

    /// Decides `requests` (in arrival order) with refused ones coming back as `retry`
    /// says, and returns what the retries did.
    fn simulate(&mut self, requests: &Requests, retry: &Retry) -> Result<Retried> {
        let (costs, source) = (&self.costs, self.source);
        let width = self.amounts.len();
        let (mut asked, mut again) =
            (vec![Amount::default(); width], vec![Amount::default(); width]);
        let mut passed = 0;
        let found = retry::simulate(
            &mut self.settling,
            retry,
            requests.len(),
            |n| requests.requests[n],
            |settling, request, n| {
                costs.amounts(source, requests, n, &mut asked)?;
                let refused = (settling.arrive(request, &asked))
                    .map_err(|e| Error::Policy { message: e.to_string() })?;
                passed += u64::from(refused == 0);
                Ok::<_, Error>(refused)
            },
            |settling, request, n, refused| {
                costs.amounts(source, requests, n, &mut again).ok()?;
                settling.retry_after(request, &again, refused)
            },
        )?;
        self.passed = passed;
        Ok(found)
    }

    /// Settles what is in flight, and reports the `count` requests decided.
    fn report(mut self, count: usize) -> Result<SettledReport> {
        match &mut self.store {
            Some(store) => {
                let finished = self.settling.finish_sharing(store);
                finished.map_err(|e| failed(&mut self.store, e))?;
            }
            None => self.settling.finish(),
        }
        let count = count as u64;
        let layers = (self.specs.iter().zip(&self.layers).zip(self.settling.settled()))
            .map(|((spec, layer), found)| {
                let rate = match layer.bound {
                    settle::Bound::Rate(settings) => Some(settings.rate),
                    settle::Bound::Concurrency(_) => None,
                };
                let limit = rate.map(|r| r.count());
                SettledLayerReport {
                    spec: spec.to_string(),
                    charge: spec.charge,
                    refused: found.refused,
                    reserved: found.reserved,
                    refunded: found.refunded,
                    charged_after: found.charged_after,
                    largest_debt: found.largest_debt,
                    limit,
                    period_s: rate.map(|r| r.period()),
                    most_spent: found.most_spent,
                    most_spent_from: found.most_spent_from,
                    overshot: found.most_spent.zip(limit).is_some_and(|(m, l)| m > u128::from(l)),
                    peak_in_flight: found.peak_in_flight,
                }
            })
            .collect();
        Ok(SettledReport {
            input: self.source.name(),
            requests: count,
            passed: self.passed,
            refused: count - self.passed,
            peak_in_flight: self.settling.peak_in_flight(),
            layers,
            retry: None,
        })
    }
}

/// The error of a settling that failed: Redis's own failure, whole, if it was Redis's.
fn failed(store: &mut Option<RedisStore>, err: settle::SettleError) -> Error {
    match store.as_mut().and_then(RedisStore::failure) {
        Some(failure) => Error::of(&failure),
        None => Error::Policy { message: err.to_string() },
    }
}

/// What requests cost: each layer's estimate (if it reserves) and real cost, as sums; the
/// columns they read, each once; and where each sum's columns are among them.
pub(crate) struct Costs<'a> {
    sums: Vec<(Option<&'a Sum>, &'a Sum)>,
    /// Every column a sum names, each once, in the order first named.
    pub(crate) columns: Vec<String>,
    places: Vec<(Vec<usize>, Vec<usize>)>,
}

impl<'a> Costs<'a> {
    /// Returns the costs of `sums`, each layer's estimate and real cost, in layer order.
    pub(crate) fn new(sums: impl IntoIterator<Item = (Option<&'a Sum>, &'a Sum)>) -> Costs<'a> {
        Costs::within(sums, Vec::new())
    }

    /// Returns the costs of `sums` as [`new`](Costs::new) does, their columns found among
    /// `columns` first (the columns requests were read with), the others after.
    pub(crate) fn within(
        sums: impl IntoIterator<Item = (Option<&'a Sum>, &'a Sum)>,
        mut columns: Vec<String>,
    ) -> Costs<'a> {
        let sums: Vec<_> = sums.into_iter().collect();
        let mut places = |sum: &Sum| -> Vec<usize> {
            (sum.columns.iter())
                .map(|c| match columns.iter().position(|k| k == c) {
                    Some(n) => n,
                    None => {
                        columns.push(c.clone());
                        columns.len() - 1
                    }
                })
                .collect()
        };
        let places = (sums.iter())
            .map(|&(reserve, cost)| (reserve.map(&mut places).unwrap_or_default(), places(cost)))
            .collect();
        Costs { sums, columns, places }
    }

    /// Writes what request `n` of `requests` (read with [`columns`](Costs::columns)) costs
    /// each layer into `amounts`, one a layer; a sum past [`MAX_COST`] is an error that
    /// names the request's line in `source`.
    pub(crate) fn amounts(
        &self,
        source: &Source,
        requests: &Requests,
        n: usize,
        amounts: &mut [Amount],
    ) -> Result<()> {
        let values = requests.values(n);
        let layers = self.sums.iter().zip(&self.places).zip(amounts).zip(1..);
        for ((((reserve, cost), (reserve_at, cost_at)), amount), layer) in layers {
            let sum = |sum: &Sum, at: &[usize]| {
                let total = sum.total(at.iter().map(|&i| values[i]));
                total.ok_or_else(|| too_large(source, requests, n, layer, sum))
            };
            amount.cost = sum(cost, cost_at)?;
            amount.reserve = match reserve {
                Some(estimate) => sum(estimate, reserve_at)?,
                None => 0,
            };
        }
        Ok(())
    }
}

/// Says that request `n`'s sum `sum` for layer `layer` (from 1) is over [`MAX_COST`].
fn too_large(source: &Source, requests: &Requests, n: usize, layer: usize, sum: &Sum) -> Error {
    let (counts, line) = (requests.counts, requests.lines[n]);
    let name = source.name();
    let message = format!(
        "{name}: {counts} {line}, layer {layer}: {sum} is more than {MAX_COST}, the most a request may cost"
    );
    let at = Place { source: name, line: Some((counts, line)), column: Some(sum.to_string()) };
    Error::Input { at, message }
}
