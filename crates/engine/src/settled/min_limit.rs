//! `min-limit`: the smallest provider limit (a bucket of L refilled at L a period) that
//! refuses none of a log's requests, or the fewest requests in flight a cap needs.

use schemars::JsonSchema;
use serde::Serialize;

use ratelimit_core::settle::{Amount, Charge, Request, min_limit};
use ratelimit_core::sizing::quantile::{Histogram, Quantiles};

use super::{Sum, too_large};
use crate::error::{Error, Result};
use crate::input::catalog::{ReadOptions, ReadStats, Source};
use crate::input::requests::{Completion, read_requests};
use crate::units::time::Span;

/// What `min-limit` is asked: the period, the cost and how it is charged, when requests
/// complete, and whether a cap on requests in flight is sized rather than a rate.
#[derive(Clone, Debug)]
pub struct MinLimitAsk {
    /// The limit's period: L a period.
    pub per: Span,
    /// What each request really costs.
    pub cost: Sum,
    /// When the cost is charged; with [`Charge::Reserve`], `reserve` is the estimate.
    pub charge: Charge,
    /// The estimate reserved at arrival, with [`Charge::Reserve`].
    pub reserve: Option<Sum>,
    /// When each request completes; without, as it arrives.
    pub completion: Option<Completion>,
    /// Whether to size a cap on requests in flight instead of a rate.
    pub concurrency: bool,
}

/// What `min-limit` found.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct MinLimit {
    /// The input's name: its path, `<stdin>` or `<sample>`.
    pub input: String,
    /// The requests read, after the filters.
    pub requests: u64,
    /// What `limit` counts: `rate` (units a period, a bucket of as many) or `concurrency`
    /// (requests in flight).
    pub kind: String,
    /// The period of a rate, in seconds; `null` for a cap.
    #[serde(serialize_with = "crate::seconds::optional_seconds")]
    #[schemars(with = "Option<f64>")]
    pub per_s: Option<Span>,
    /// When the cost is charged: `arrival`, `reserve` or `completion`.
    pub charge: Charge,
    /// The smallest limit that refuses no request (with a key, of the key that needs the
    /// most); 0 with no requests; `null` if none up to the largest rate does.
    pub limit: Option<u64>,
    /// With a key: how many keys, the one that needs the most, and each key's smallest
    /// limit across keys, by nearest rank.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keys: Option<KeyedLimit>,
}

/// The smallest limits of each key.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct KeyedLimit {
    /// How many keys.
    pub count: u64,
    /// The key that needs the largest limit (the first read, of those that tie).
    pub worst_key: String,
    /// Each key's smallest limit, by nearest rank across keys.
    pub quantiles: Option<Quantiles>,
}

/// Finds the smallest limit of `ask` for the requests of `source`, read by `read` (keyed by
/// its key column, if it has one).
pub fn find(
    source: &Source,
    read: &ReadOptions,
    ask: &MinLimitAsk,
) -> Result<(MinLimit, ReadStats)> {
    let reserve = ask.reserve.as_ref().filter(|_| ask.charge == Charge::Reserve);
    let mut columns: Vec<String> = ask.cost.columns.clone();
    columns.extend(reserve.iter().flat_map(|r| r.columns.iter().cloned()));
    let (requests, stats) = read_requests(source, read, ask.completion.as_ref(), &columns)
        .map_err(|e| Error::of(&e.into()))?;
    let split = ask.cost.columns.len();
    // Each key's requests, in arrival order, with what each costs.
    let mut keys: Vec<Vec<(Request, Amount)>> = Vec::new();
    for (n, &request) in requests.requests.iter().enumerate() {
        let values = requests.values(n);
        let sum = |sum: &Sum, values: &[u64]| {
            sum.total(values.iter().copied()).ok_or_else(|| too_large(source, &requests, n, 1, sum))
        };
        let cost = sum(&ask.cost, &values[..split])?;
        let reserve = match reserve {
            Some(estimate) => sum(estimate, &values[split..])?,
            None => 0,
        };
        let key = ratelimit_core::event::slot(request.key);
        if key >= keys.len() {
            keys.resize_with(key + 1, Vec::new);
        }
        keys[key].push((request, Amount { reserve, cost }));
    }
    let mut each = Histogram::new();
    let mut worst: Option<(u64, u32)> = None;
    let mut limit = Some(0);
    for requests in keys.iter().filter(|r| !r.is_empty()) {
        let key = requests[0].0.key;
        let found = match ask.concurrency {
            true => Some(most_in_flight(requests)),
            false => min_limit(requests, ask.charge, ask.per),
        };
        let Some(found) = found else {
            limit = None;
            continue;
        };
        each.add(found, 1);
        if worst.is_none_or(|(most, _)| found > most) {
            worst = Some((found, key));
        }
        limit = limit.map(|l: u64| l.max(found));
    }
    let keyed = read.key_column.is_some().then(|| KeyedLimit {
        count: stats.keys.len() as u64,
        worst_key: worst.map(|(_, key)| stats.keys.name(key)).unwrap_or_default(),
        quantiles: each.quantiles(),
    });
    let found = MinLimit {
        input: source.name(),
        requests: requests.len() as u64,
        kind: if ask.concurrency { "concurrency" } else { "rate" }.to_owned(),
        per_s: (!ask.concurrency).then_some(ask.per),
        charge: ask.charge,
        limit,
        keys: keyed,
    };
    Ok((found, stats))
}

/// The most of `requests` (in arrival order) in flight at once: each over `[a, c)`, so
/// that one that completes as another arrives has made way for it.
fn most_in_flight(requests: &[(Request, Amount)]) -> u64 {
    let mut ends = std::collections::BinaryHeap::new();
    let mut most = 0;
    for (request, _) in requests {
        while ends.peek().is_some_and(|&std::cmp::Reverse(end)| end <= request.arrival) {
            ends.pop();
        }
        ends.push(std::cmp::Reverse(request.completion));
        most = most.max(ends.len() as u64);
    }
    most
}
