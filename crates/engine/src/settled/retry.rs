//! Refused requests that come back: a closed-loop simulation of clients retrying after the
//! limiter's retry-after, or after a seeded exponential backoff with jitter.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::str::FromStr;

use rand_distr::{Distribution, Uniform};
use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::SeedableRng;
use schemars::JsonSchema;
use serde::Serialize;

use ratelimit_core::settle::{Request, Settling};
use ratelimit_core::sizing::quantile::{Histogram, Quantiles};

use crate::units::time::{Span, Timestamp};

/// The most times a request may come back: enough for any backoff a client uses.
pub const MAX_RETRIES: u32 = 100;

/// How a refused request comes back, as `--retry` gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Retry {
    /// After the limiter's retry-after (the longest any refusing layer asks), at most
    /// `max` times: `after` or `after:max=N`.
    After {
        /// The most times it comes back.
        max: u32,
    },
    /// After a backoff drawn at random from 0 up to `min(cap, base·2^(k−1))` before the
    /// k-th return ("full jitter"), seeded, at most `max` times:
    /// `exp:base=1s,cap=60s,max=5,seed=N`.
    Exp {
        /// The first backoff's bound.
        base: Span,
        /// The most any backoff may be.
        cap: Span,
        /// The most times it comes back.
        max: u32,
        /// The seed of the draws.
        seed: u64,
    },
}

impl Retry {
    /// The most times a request comes back.
    pub fn max(&self) -> u32 {
        match self {
            Retry::After { max } | Retry::Exp { max, .. } => *max,
        }
    }
}

impl FromStr for Retry {
    type Err = String;

    fn from_str(text: &str) -> Result<Retry, String> {
        let (kind, rest) = text.split_once(':').unwrap_or((text, ""));
        let mut given: Vec<(&str, &str)> = Vec::new();
        for part in rest.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some(pair) = part.split_once('=') else {
                return Err(format!("'{part}' is not name=value"));
            };
            given.push(pair);
        }
        let mut take = |name: &str| -> Option<&str> {
            let at = given.iter().position(|(n, _)| *n == name)?;
            Some(given.remove(at).1)
        };
        let max = match take("max") {
            None => 5,
            Some(text) => match text.parse::<u32>() {
                Ok(max) if max <= MAX_RETRIES => max,
                _ => return Err(format!("max={text}: 0 to {MAX_RETRIES} returns")),
            },
        };
        let span = |name: &str, text: Option<&str>, default: Span| -> Result<Span, String> {
            match text {
                None => Ok(default),
                Some(text) => match text.parse::<Span>() {
                    Ok(span) if !span.is_zero() => Ok(span),
                    Ok(_) => Err(format!("{name}={text}: longer than zero")),
                    Err(e) => Err(format!("{name}={text}: {e}")),
                },
            }
        };
        let retry = match kind {
            "after" => Retry::After { max },
            "exp" => {
                let second = Span::from_micros(1_000_000).unwrap_or(Span::MINUTE);
                let base = span("base", take("base"), second)?;
                let cap = span("cap", take("cap"), Span::MINUTE)?;
                let seed = match take("seed") {
                    None => 0,
                    Some(text) => {
                        text.parse().map_err(|_| format!("seed={text}: a whole number"))?
                    }
                };
                Retry::Exp { base, cap, max, seed }
            }
            other => {
                return Err(format!(
                    "'{other}' is no retry: after[:max=N] or exp[:base=1s,cap=60s,max=5,seed=N]"
                ));
            }
        };
        if let Some((name, _)) = given.first() {
            return Err(format!("{name}= is not taken by --retry {kind}"));
        }
        Ok(retry)
    }
}

impl fmt::Display for Retry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Retry::After { max } => write!(f, "after:max={max}"),
            Retry::Exp { base, cap, max, seed } => {
                write!(f, "exp:base={base},cap={cap},max={max},seed={seed}")
            }
        }
    }
}

/// What the clients' retries did: a simulation, not what happened.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct Retried {
    /// Says that these figures are a simulation: what would have happened had refused
    /// clients come back as `--retry` says, not what the log holds.
    pub simulation: String,
    /// The retry, as `--retry` writes it.
    pub retry: String,
    /// The requests served on their first try.
    pub served_first: u64,
    /// The requests served after coming back at least once.
    pub served_after_retry: u64,
    /// The requests that gave up: refused on their last return, or that no wait would let
    /// through (a cost past what a layer holds).
    pub gave_up: u64,
    /// How many times requests came back, in all.
    pub returns: u64,
    /// The time added to each request served after coming back, in microseconds: from its
    /// first arrival to the return that was served, across those requests, by nearest
    /// rank.
    pub added_latency_us: Option<Quantiles>,
}

/// A request due to come back: when, in what order it was scheduled, which request, and
/// how many times it has come back.
type Due = Reverse<(Timestamp, u64, usize, u32)>;

/// Runs `count` requests (request n is `request(n)`, in arrival order, costing what
/// `settle` is told) through `settling` with `retry`: each refused one comes back as it
/// says, until served or out of returns. At one instant, first arrivals come before
/// returns, and returns in the order they were scheduled. `settle(settling, request, n)`
/// decides request n arriving as `request` and returns the refused layers (0: passed).
pub fn simulate<E>(
    settling: &mut Settling,
    retry: &Retry,
    count: usize,
    request: impl Fn(usize) -> Request,
    mut settle: impl FnMut(&mut Settling, Request, usize) -> Result<u32, E>,
    mut retry_after: impl FnMut(&Settling, Request, usize, u32) -> Option<i64>,
) -> Result<Retried, E> {
    let mut due: BinaryHeap<Due> = BinaryHeap::new();
    let mut rng = match retry {
        Retry::Exp { seed, .. } => Some(Xoshiro256PlusPlus::seed_from_u64(*seed)),
        Retry::After { .. } => None,
    };
    let (mut next, mut scheduled) = (0, 0u64);
    let mut found = Retried {
        simulation: "a simulation of clients retrying, not what the log holds".to_owned(),
        retry: retry.to_string(),
        served_first: 0,
        served_after_retry: 0,
        gave_up: 0,
        returns: 0,
        added_latency_us: None,
    };
    let mut latency = Histogram::new();
    loop {
        let first = (next < count).then(|| request(next).arrival);
        let back = due.peek().map(|&Reverse((at, ..))| at);
        let take = |due: &mut BinaryHeap<Due>| due.pop().map(|Reverse((at, _, n, r))| (n, at, r));
        let chosen = match (first, back) {
            (Some(a), Some(b)) if b < a => take(&mut due),
            (None, Some(_)) => take(&mut due),
            (Some(a), _) => {
                next += 1;
                Some((next - 1, a, 0))
            }
            (None, None) => None,
        };
        let Some((n, at, returns)) = chosen else { break };
        let original = request(n);
        let duration = original.completion.as_micros() - original.arrival.as_micros();
        // Past the latest time, it completes at the latest time.
        let completion = Timestamp::from_micros(at.as_micros().saturating_add(duration))
            .or_else(|| Timestamp::from_micros(Timestamp::MAX))
            .unwrap_or(at);
        let now = Request { arrival: at, completion, key: original.key };
        found.returns += u64::from(returns > 0);
        let refused = settle(settling, now, n)?;
        if refused == 0 {
            if returns == 0 {
                found.served_first += 1;
            } else {
                found.served_after_retry += 1;
                let added = at.as_micros() - original.arrival.as_micros();
                latency.add(u64::try_from(added).unwrap_or(0), 1);
            }
            continue;
        }
        if returns >= retry.max() {
            found.gave_up += 1;
            continue;
        }
        let wait = match retry {
            Retry::After { .. } => retry_after(settling, now, n, refused),
            Retry::Exp { base, cap, .. } => {
                let doubled = base
                    .as_micros()
                    .checked_shl(returns)
                    .filter(|&w| w >> returns == base.as_micros());
                let bound = doubled.map_or(cap.as_micros(), |w| w.min(cap.as_micros()));
                let draw = Uniform::new_inclusive(0, bound).ok();
                let rng = rng.as_mut();
                // A wait of 0 would come back at once, into the same refusal: at least 1 µs.
                draw.zip(rng).map(|(draw, rng)| draw.sample(rng).max(1))
            }
        };
        let back =
            wait.and_then(|w| at.as_micros().checked_add(w)).and_then(Timestamp::from_micros);
        match back {
            Some(back) => {
                due.push(Reverse((back, scheduled, n, returns + 1)));
                scheduled += 1;
            }
            None => found.gave_up += 1,
        }
    }
    found.added_latency_us = latency.quantiles();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_reads_back_as_written_and_says_what_is_wrong() {
        assert_eq!("after".parse(), Ok(Retry::After { max: 5 }));
        let exp: Retry = "exp:base=500ms,cap=30s,max=3,seed=7".parse().unwrap();
        assert_eq!(exp.to_string().parse(), Ok(exp.clone()));
        assert_eq!(exp.max(), 3);
        assert!("later".parse::<Retry>().unwrap_err().starts_with("'later' is no retry"));
        assert_eq!("exp:base=0s".parse::<Retry>(), Err("base=0s: longer than zero".into()));
        assert_eq!(
            "after:base=1s".parse::<Retry>(),
            Err("base= is not taken by --retry after".into())
        );
        assert_eq!("after:max=1000".parse::<Retry>(), Err("max=1000: 0 to 100 returns".into()));
    }
}
