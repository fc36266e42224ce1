//! How long sizing takes on the real 2015–2025 catalog: the whole burst–rate curve, and
//! the one-pass minimum bucket.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ratelimit_replay::input::catalog::{self, ReadOptions, Source, Timeline};
use ratelimit_replay::sizing::curve::Curve;
use ratelimit_replay::sizing::many_rates::MinBucketFinders;
use ratelimit_replay::sizing::min_bucket::MinBucketFinder;
use ratelimit_replay::synth::etas::{Params, Simulation};
use ratelimit_replay::units::rate::Rate;
use ratelimit_replay::units::time::Timestamp;

fn catalog_times() -> Option<Vec<Timestamp>> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/usgs_m5_2015_2025.csv");
    if !path.is_file() {
        eprintln!("skipped: {} is missing", path.display());
        return None;
    }
    let (events, _) =
        catalog::read_events(&Source::Path(path), &ReadOptions::new(), Timeline::new).unwrap();
    Some(events.times().to_vec())
}

/// A hundred rates over a million synthetic events, about 100 an hour: the work of
/// `min-bucket --rate 1/h..100/h` beside reading the input.
fn many_rates(c: &mut Criterion) {
    let start: Timestamp = ratelimit_replay::units::time::rfc3339("2015-01-01").unwrap();
    let end: Timestamp = ratelimit_replay::units::time::rfc3339("2016-01-01").unwrap();
    let mut params = Params::new(1, start, end);
    params.background_per_day *= 530.0;
    let times: Vec<Timestamp> = Simulation::new(params).map(|q| q.time).collect();
    let rates: Vec<Rate> = (1..=100).map(|n| format!("{n}/h").parse().unwrap()).collect();
    let mut group = c.benchmark_group("min_bucket_100_rates");
    group.throughput(Throughput::Elements(times.len() as u64 * 100));
    group.sample_size(20);
    group.bench_function("per_rate_event", |b| {
        b.iter(|| {
            let mut many = MinBucketFinders::new(&rates);
            times.iter().for_each(|&t| many.push(t));
            black_box(many.results())
        })
    });
    group.finish();
}

fn sizing(c: &mut Criterion) {
    let Some(times) = catalog_times() else { return };
    let mut group = c.benchmark_group("sizing_m5_2015_2025");
    group.bench_function("curve", |b| b.iter(|| black_box(Curve::new(&times))));
    group.bench_function("min_bucket_one_rate", |b| {
        b.iter(|| {
            let mut min = MinBucketFinder::new("5/h".parse().unwrap());
            times.iter().for_each(|&t| min.push(t));
            black_box(min.result())
        })
    });
    group.finish();
}

criterion_group!(benches, sizing, many_rates);
criterion_main!(benches);
