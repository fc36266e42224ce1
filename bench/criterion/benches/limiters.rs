//! Nanoseconds per decision for each limiter, on a realistic sequence of times: about a
//! million synthetic events with aftershock bursts, at a rate that drops some of them.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ratelimit_replay::limiter::{Algorithm, Limiter};
use ratelimit_replay::synth::etas::{Params, Simulation};
use ratelimit_replay::units::time::Timestamp;

fn times() -> Vec<Timestamp> {
    let start: Timestamp = ratelimit_replay::units::time::rfc3339("2015-01-01").unwrap();
    let end: Timestamp = ratelimit_replay::units::time::rfc3339("2026-01-01").unwrap();
    let mut params = Params::new(1, start, end);
    // Fifty times the world's background: about 950 000 events, 240 a day.
    params.background_per_day *= 50.0;
    Simulation::new(params).map(|q| q.time).collect()
}

fn limiters(c: &mut Criterion) {
    let times = times();
    let rate = "20/h".parse().unwrap();
    let mut group = c.benchmark_group("decision");
    group.throughput(Throughput::Elements(times.len() as u64));
    for algorithm in Algorithm::ALL {
        group.bench_with_input(
            BenchmarkId::from_parameter(algorithm.name()),
            &times,
            |b, times| {
                b.iter(|| {
                    let mut limiter = algorithm.build(rate, std::num::NonZeroU64::new(20).unwrap());
                    let mut passed = 0u32;
                    for &t in times {
                        passed += u32::from(limiter.admit(t));
                    }
                    black_box(passed)
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, limiters);
criterion_main!(benches);
