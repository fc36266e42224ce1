//! Exactness guarded by a peer: governor, the GCRA crate, decides the 2015–2025 catalog on
//! its fake clock, and must agree with `ratelimit` on every event.
//!
//! governor keeps time in whole nanoseconds, so its emission interval is ⌊P/N⌋ ns: for 7/h
//! that is 514 285 714 285 ns, 5/7 ns short of the exact interval. Its tat then runs early
//! by that much for each event passed since tat last caught up with an arrival, and its
//! tolerance (b − 1)·⌊P/N⌋ is short by (b − 1) times as much. Decisions could differ only
//! for an event that lands within that drift of the exact boundary `tat − (b − 1)·I`. The
//! test measures, exactly, how close each event comes to its boundary, and asserts that on
//! this catalog no event comes that close: which is why they agree, not merely that they do.

use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::FakeRelativeClock;
use governor::{Quota, RateLimiter};

use crate::harness::{Stdin, real_catalog, run_with};

/// The catalog's times in µs, sorted, read with the csv crate and chrono.
fn times_us(path: &std::path::Path) -> Vec<i64> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let mut times: Vec<i64> = reader
        .records()
        .map(|r| chrono::DateTime::parse_from_rfc3339(&r.unwrap()[0]).unwrap().timestamp_micros())
        .collect();
    times.sort();
    times
}

/// governor's decisions, one per event, on a fake clock advanced to each event's time.
fn governor_decisions(times: &[i64], n: u64, period_ns: u64, burst: u32) -> Vec<bool> {
    let quota = Quota::with_period(Duration::from_nanos(period_ns / n))
        .unwrap()
        .allow_burst(NonZeroU32::new(burst).unwrap());
    let clock = FakeRelativeClock::default();
    let limiter = RateLimiter::direct_with_clock(quota, clock.clone());
    let mut now = times[0];
    times
        .iter()
        .map(|&t| {
            clock.advance(Duration::from_micros(u64::try_from(t - now).unwrap()));
            now = t;
            limiter.check().is_ok()
        })
        .collect()
}

/// An exact GCRA in units of 1/N ns, which also returns, for each event, how far it lands
/// from the boundary and how far governor's rounding could have moved that boundary, both
/// in the same units.
fn exact_with_margins(
    times: &[i64],
    n: u64,
    period_ns: u64,
    burst: u64,
) -> Vec<(bool, u128, u128)> {
    let (n, p) = (i128::from(n), i128::from(period_ns));
    let tolerance = i128::from(burst - 1) * p;
    // governor's interval is short by (P mod N)/N ns: P mod N units of 1/N ns.
    let short = p % n;
    let mut tat: Option<i128> = None;
    let mut since_reset: i128 = 0;
    times
        .iter()
        .map(|&t| {
            let t = i128::from(t) * 1_000 * n;
            let boundary = tat.map_or(i128::MIN / 2, |tat| tat - tolerance);
            let margin = (t - boundary).unsigned_abs();
            // governor's boundary sits lower by (k − (b − 1)) short steps.
            let drift = ((since_reset - i128::from(burst - 1)) * short).unsigned_abs();
            let pass = t >= boundary;
            if pass {
                let from = tat.map_or(t, |tat| tat.max(t));
                since_reset = if tat.is_some_and(|tat| tat >= t) { since_reset + 1 } else { 1 };
                tat = Some(from + p);
            }
            (pass, margin, drift)
        })
        .collect()
}

#[test]
#[ignore = "needs ../shared/data"]
fn governor_decides_every_event_of_the_catalog_as_ratelimit_does() {
    let path = real_catalog("usgs_m5_2015_2025.csv");
    let times = times_us(&path);
    assert_eq!(times.len(), 19_032);
    let file = path.to_str().unwrap();
    // (rate, N, P in ns, burst): 7/h and 11/d have intervals that are no whole number of
    // nanoseconds.
    let hour = 3_600_000_000_000;
    for (rate, n, p, burst) in [
        ("5/h", 5, hour, 5),
        ("7/h", 7, hour, 3),
        ("11/d", 11, 24 * hour, 11),
        ("1/m", 1, 60_000_000_000, 1),
        ("20/d", 20, 24 * hour, 74),
        ("3/h", 3, hour, 1),
    ] {
        let b = burst.to_string();
        let args =
            ["replay", file, "--algo", "gcra", "--rate", rate, "--burst", &b, "--emit", "all"];
        let ours = run_with(&args, Stdin::Null).ok();
        let ours: Vec<bool> = ours.lines().skip(1).map(|l| l.ends_with(",passed")).collect();
        let theirs = governor_decisions(&times, n, p, u32::try_from(burst).unwrap());
        let exact = exact_with_margins(&times, n, p, burst);
        let exact_decisions: Vec<bool> = exact.iter().map(|&(pass, _, _)| pass).collect();
        assert_eq!(ours, exact_decisions, "{rate} burst {burst}: ratelimit against the exact GCRA");
        // No event lands within governor's drift of the boundary, so it cannot decide
        // otherwise; then it must not.
        let near = exact.iter().filter(|&&(_, margin, drift)| margin <= drift).count();
        assert_eq!(near, 0, "{rate}: events within governor's rounding of the boundary");
        let (closest, most_drift) = exact
            .iter()
            .skip(1)
            .fold((u128::MAX, 0), |(c, d), &(_, margin, drift)| (c.min(margin), d.max(drift)));
        let disagree = ours.iter().zip(&theirs).filter(|(a, b)| a != b).count();
        assert_eq!(disagree, 0, "{rate} burst {burst}: governor disagrees on {disagree} events");
        let passed = ours.iter().filter(|&&p| p).count();
        let units_per_ns = u128::from(n);
        eprintln!(
            "{rate} burst {burst}: {passed} of {} passed, governor agrees on all; its interval \
             is short by {}/{n} ns, its boundary moved at most {} ns, and the closest event \
             was {} ns from the exact boundary",
            ours.len(),
            p % n,
            most_drift.div_ceil(units_per_ns),
            closest / units_per_ns
        );
    }
}
