//! `min-limit`: the smallest provider limit (a bucket of L refilled at L a period) that
//! refuses none of a log's requests, or the fewest requests in flight a cap needs.

use schemars::JsonSchema;
use serde::Serialize;

use std::num::NonZeroU64;

use ratelimit_core::settle::{Amount, Bound, Charge, Request, SettledLayer, Settling, min_limit};
use ratelimit_core::sizing::quantile::{Histogram, Quantiles};

use super::{Costs, Sum, charge_of};
use crate::error::Result;
use crate::input::asked::Names;
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

impl MinLimitAsk {
    /// Settles what is asked, once: the charge (`reserve` alone means reserving), and
    /// that a charge after arrival or a cap has completions, and a rate its period (a
    /// cap's is a minute, unused). Messages name the options as `names` says.
    pub fn settle(
        per: Option<Span>,
        cost: Sum,
        charge: Option<Charge>,
        reserve: Option<Sum>,
        completion: Option<Completion>,
        concurrency: bool,
        names: Names,
    ) -> Result<MinLimitAsk, String> {
        let (prefix, column) = match names {
            Names::Flags => ("--", " COLUMN"),
            Names::Keywords => ("", ""),
        };
        let charge = charge_of(charge, reserve.is_some(), prefix)?;
        if completion.is_none() && (charge != Charge::Arrival || concurrency) {
            let (duration, end) = (names.of("duration"), names.of("end"));
            return Err(format!(
                "{duration}{column} or {end}{column} is needed: when each request completes"
            ));
        }
        let Some(per) = per.or(concurrency.then_some(Span::MINUTE)) else {
            let (per, call) = (names.of("per"), names.of("min-limit"));
            let call = call.trim_start_matches('-').trim_end_matches('=');
            return Err(format!(
                "{call} needs {per}, the limit's period (1m for a limit a minute)"
            ));
        };
        Ok(MinLimitAsk { per, cost, charge, reserve, completion, concurrency })
    }
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
    let costs = Costs::new([(reserve, &ask.cost)]);
    let (requests, stats) = read_requests(source, read, ask.completion.as_ref(), &costs.columns)?;
    // Each key's requests, in arrival order, with what each costs.
    let mut keys: Vec<Vec<(Request, Amount)>> = Vec::new();
    let mut amount = [Amount::default()];
    for (n, &request) in requests.requests.iter().enumerate() {
        costs.amounts(source, &requests, n, &mut amount)?;
        let key = ratelimit_core::event::slot(request.key);
        if key >= keys.len() {
            keys.resize_with(key + 1, Vec::new);
        }
        keys[key].push((request, amount[0]));
    }
    let mut each = Histogram::new();
    let mut worst: Option<(u64, u32)> = None;
    // Whether some key has no limit up to the largest rate.
    let mut unlimited = false;
    for requests in keys.iter().filter(|r| !r.is_empty()) {
        let key = requests[0].0.key;
        let found = match ask.concurrency {
            true => most_in_flight(requests),
            false => min_limit(requests, ask.charge, ask.per),
        };
        let Some(found) = found else {
            unlimited = true;
            continue;
        };
        each.add(found, 1);
        if worst.is_none_or(|(most, _)| found > most) {
            worst = Some((found, key));
        }
    }
    // The key that needs the most sets the limit: 0 with no requests at all.
    let limit = (!unlimited).then(|| worst.map_or(0, |(most, _)| most));
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

/// The most of `requests` (in arrival order) in flight at once, as the core's cap on
/// requests in flight counts them: each over `[a, c)`, so that one that completes as
/// another arrives has made way for it. A cap of that many refuses none of them, and one
/// fewer the request at the peak.
fn most_in_flight(requests: &[(Request, Amount)]) -> Option<u64> {
    let uncapped = SettledLayer {
        bound: Bound::Concurrency(NonZeroU64::MAX),
        keyed: false,
        charge: Charge::Arrival,
    };
    let mut settling = Settling::new(&[uncapped]).ok()?;
    for &(request, amount) in requests {
        settling.arrive(request, &[amount]).ok()?;
    }
    Some(settling.peak_in_flight())
}
