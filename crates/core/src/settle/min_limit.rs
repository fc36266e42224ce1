//! The smallest provider limit (a bucket of L refilled at L a period) that refuses none of
//! a key's requests, found on exact replays.

use super::{Amount, Bound, Charge, Request, SettledLayer, Settling};
use crate::policy::Settings;

/// Returns the smallest limit L for which a provider's bucket (a token bucket of L, refilled
/// at L per `per`, starting full) charged as `charge` refuses none of `requests` (each with
/// what it costs; in arrival order): 0 for none, `None` if no L up to
/// [`Rate::MAX_COUNT`](crate::units::rate::Rate::MAX_COUNT) does.
///
/// Refusing none is monotone in L: a bucket that passes every request at L holds at least
/// as much at every instant at L + 1 (its capacity and refill are larger, and it is charged
/// and given back the same). So L is found by doubling, then halving, on exact replays,
/// each stopping at its first refusal.
pub fn min_limit(
    requests: &[(Request, Amount)],
    charge: Charge,
    per: crate::units::time::Span,
) -> Option<u64> {
    use crate::units::rate::Rate;
    if requests.is_empty() {
        return Some(0);
    }
    let passes = |limit: u64| -> bool {
        let (Ok(rate), Some(burst)) = (Rate::new(limit, per), std::num::NonZeroU64::new(limit))
        else {
            return false;
        };
        let algorithm = crate::limiter::Algorithm::Gcra;
        let settings =
            Settings { algorithm, rate, burst, window: per, params: algorithm.default_params() };
        let layer = SettledLayer { bound: Bound::Rate(settings), keyed: false, charge };
        let Ok(mut settling) = Settling::new(&[layer]) else { return false };
        requests.iter().all(|(request, amount)| settling.arrive(*request, &[*amount]) == Ok(0))
    };
    // No bucket smaller than the most one request asks at its arrival passes it.
    let mut low = requests.iter().map(|&(_, a)| charge.asked(a)).max().unwrap_or(1).max(1);
    if passes(low) {
        return Some(low);
    }
    // `low` refuses one: double until a limit passes, then halve the gap.
    let mut high = low;
    loop {
        low = high;
        high = high.checked_mul(2)?.min(Rate::MAX_COUNT);
        if passes(high) {
            break;
        }
        if high == Rate::MAX_COUNT {
            return None;
        }
    }
    while high - low > 1 {
        let middle = low + (high - low) / 2;
        if passes(middle) { high = middle } else { low = middle }
    }
    Some(high)
}
