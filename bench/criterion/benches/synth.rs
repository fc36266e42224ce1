//! How fast `synth` makes a catalog: events simulated and written as CSV, per second.

use std::hint::black_box;
use std::io;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ratelimit_replay::synth::etas::{Params, Simulation};
use ratelimit_replay::synth::usgs::write_catalog;
use ratelimit_replay::units::time::Timestamp;

fn synth(c: &mut Criterion) {
    // Five times the world's background over 2015–2025: about 95 000 events.
    let start: Timestamp = ratelimit_replay::units::time::rfc3339("2015-01-01").unwrap();
    let end: Timestamp = ratelimit_replay::units::time::rfc3339("2026-01-01").unwrap();
    let mut params = Params::new(1, start, end);
    params.background_per_day *= 5.0;
    let events = Simulation::new(params.clone()).count() as u64;

    let mut group = c.benchmark_group("synth");
    group.throughput(Throughput::Elements(events));
    group.sample_size(20);
    group.bench_function("simulate", |b| {
        b.iter(|| black_box(Simulation::new(params.clone()).count()))
    });
    group.bench_function("simulate_and_write_csv", |b| {
        b.iter(|| write_catalog(Simulation::new(params.clone()), &mut io::sink()).unwrap())
    });
    group.finish();
}

criterion_group!(benches, synth);
criterion_main!(benches);
