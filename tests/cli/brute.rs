//! The limiters and measures by their definitions, in the plainest code, for checking the
//! program's figures: each is O(n²) or close, and shares nothing with the program.

use std::collections::BTreeMap;

use crate::real_data::ms;

/// The rows of an inline CSV catalog as (key, time in ms), sorted by time (stable, so
/// ties keep the file's order), with `column` as the key ("" for none).
pub fn rows(catalog: &str, column: &str) -> Vec<(String, i64)> {
    let mut reader = csv::Reader::from_reader(catalog.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let key = headers.iter().position(|h| h == column);
    let mut rows: Vec<(String, i64)> = (reader.records())
        .map(|r| {
            let r = r.unwrap();
            (key.map(|k| r[k].to_string()).unwrap_or_default(), ms(&r[0]))
        })
        .collect();
    rows.sort_by_key(|&(_, t)| t);
    rows
}

/// An inline catalog's times in ms, sorted.
pub fn times(catalog: &str) -> Vec<i64> {
    rows(catalog, "").into_iter().map(|(_, t)| t).collect()
}

/// Each key's times, in time order, by key.
pub fn by_key(rows: &[(String, i64)]) -> BTreeMap<String, Vec<i64>> {
    let mut keys: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for (key, t) in rows {
        keys.entry(key.clone()).or_default().push(*t);
    }
    keys
}

/// GCRA at n per `period` ms with burst b, in units of 1/n ms so that I = P exactly:
/// t passes iff t ≥ tat − (b − 1)·I, then tat ← max(tat, t) + I. Returns each decision and
/// the longest wait a leaky queue of the same size gives an admitted event, in ms·n.
pub fn gcra(times: &[i64], n: i64, period: i64, b: i64) -> (Vec<bool>, i64) {
    let (mut tat, mut longest) = (i64::MIN / 4, 0);
    let decisions = (times.iter())
        .map(|&t| {
            let t = t * n;
            let passes = t >= tat - (b - 1) * period;
            if passes {
                // A queue serves an admitted event at tat, when the one before it has left.
                longest = longest.max((tat - t).max(0));
                tat = tat.max(t) + period;
            }
            passes
        })
        .collect();
    (decisions, longest)
}

/// How many of the decisions pass.
pub fn passed(decisions: &[bool]) -> usize {
    decisions.iter().filter(|&&d| d).count()
}

/// A sliding log by its definition: each event looks back over every passed one.
pub fn sliding_log(times: &[i64], n: usize, period: i64) -> Vec<i64> {
    let mut passed: Vec<i64> = Vec::new();
    for &t in times {
        if passed.iter().filter(|&&p| p > t - period).count() < n {
            passed.push(t);
        }
    }
    passed
}

/// A fixed window by its definition: a count per window aligned to the epoch.
pub fn fixed_window(times: &[i64], n: usize, period: i64) -> Vec<i64> {
    let mut counts = std::collections::HashMap::new();
    times
        .iter()
        .copied()
        .filter(|t| {
            let count = counts.entry(t.div_euclid(period)).or_insert(0);
            *count += 1;
            *count <= n
        })
        .collect()
}

/// The largest number of times in any half-open window [t_i, t_i + len).
pub fn busiest(times: &[i64], len: i64) -> usize {
    (0..times.len())
        .map(|i| times[i..].iter().take_while(|&&t| t < times[i] + len).count())
        .max()
        .unwrap_or(0)
}

/// The smallest lossless bucket by definition: max over all pairs i ≤ j of
/// ⌈(j − i + 1) − r·(t_j − t_i)⌉, in O(n²).
pub fn min_bucket(times: &[i64], n: i64, period: i64) -> i64 {
    let mut need = 0;
    for i in 0..times.len() {
        for j in i..times.len() {
            let count = i64::try_from(j - i + 1).unwrap();
            // ⌈count − n·dt/P⌉ = ⌈(count·P − n·dt) / P⌉
            let num = count * period - n * (times[j] - times[i]);
            need = need.max(num.div_euclid(period) + i64::from(num.rem_euclid(period) != 0));
        }
    }
    need
}

/// The least rate, in events an hour, at which a bucket of b loses nothing: the most any
/// stretch asks, (count − b) / its length, over stretches of more than b events; `None`
/// when more than b events share an instant.
pub fn min_rate_per_hour(times: &[i64], b: usize) -> Option<f64> {
    let mut most = 0.0_f64;
    for i in 0..times.len() {
        for j in i + b..times.len() {
            let dt = times[j] - times[i];
            if dt == 0 {
                return None;
            }
            #[allow(clippy::cast_precision_loss)]
            let rate = (j - i + 1 - b) as f64 / dt as f64 * 3_600_000.0;
            most = most.max(rate);
        }
    }
    Some(most)
}

/// nginx's `limit_req` for one key, as `ngx_http_limit_req_lookup` decides: `excess` in
/// thousandths of a request, `rate` in thousandths a second; a request passes unless the
/// excess it would leave is over `burst` thousand, and only a passed one is kept, its time
/// only if some time has gone by. The first request of a key makes its node and passes.
pub fn nginx(times_ms: &[i64], rate: i64, burst: i64) -> Vec<bool> {
    let mut node: Option<(i64, i64)> = None;
    (times_ms.iter())
        .map(|&now| match node {
            None => {
                node = Some((0, now));
                true
            }
            Some((excess, last)) => {
                let ms = now - last;
                let excess = (excess - rate * ms / 1000 + 1000).max(0);
                let passes = excess <= burst * 1000;
                if passes {
                    node = Some((excess, if ms != 0 { now } else { last }));
                }
                passes
            }
        })
        .collect()
}

/// Decides each key's events on its own with `decide`, and returns the decisions in the
/// rows' order.
pub fn per_key(rows: &[(String, i64)], decide: impl Fn(&[i64]) -> Vec<bool>) -> Vec<bool> {
    let mut decisions = vec![false; rows.len()];
    let mut places: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, (key, _)) in rows.iter().enumerate() {
        places.entry(key).or_default().push(i);
    }
    for places in places.values() {
        let times: Vec<i64> = places.iter().map(|&i| rows[i].1).collect();
        for (&i, pass) in places.iter().zip(decide(&times)) {
            decisions[i] = pass;
        }
    }
    decisions
}

/// The rate HAProxy's deny rule reads after counting each of one key's requests (times in
/// ms), over `period` ms, as `freq_ctr.h` keeps it: 32-bit ms that wrap, a period begun at
/// an even tick, the current and previous periods' counts, every request counted; the rate
/// is ⌊(prev·remain + curr·P)/P⌋, a period further back counting curr as prev, and with no
/// curr and prev at most 1, prev.
pub fn haproxy_rates(times_ms: &[i64], period: i64) -> Vec<i64> {
    let wrap = |x: i64| x.rem_euclid(1 << 32);
    let (mut tick, mut curr, mut prev) = (0_i64, 0_i64, 0_i64);
    (times_ms.iter())
        .map(|&t| {
            let now = wrap(t);
            if wrap(now - tick) < period {
                curr += 1;
            } else {
                prev = std::mem::replace(&mut curr, 1);
                tick = wrap(tick + period);
                if wrap(now - tick) >= period {
                    (prev, tick) = (0, now);
                }
                tick -= tick % 2;
            }
            let mut remain = wrap(tick + period - now);
            if remain >= 1 << 31 {
                remain -= 1 << 32;
            }
            let (mut current, mut past) = (curr, prev);
            if remain < 0 {
                remain += period;
                past = if remain >= 0 { current } else { 0 };
                current = 0;
            }
            if current == 0 && past <= 1 {
                past
            } else {
                (past * remain + current * period) / period
            }
        })
        .collect()
}
