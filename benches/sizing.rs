//! How long sizing takes on the real 2015–2025 catalog: the whole burst–rate curve, and
//! the one-pass minimum bucket.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};
use ratelimit_replay::catalog::{self, ReadOptions, Source};
use ratelimit_replay::curve::Curve;
use ratelimit_replay::min_bucket::MinBucket;
use ratelimit_replay::time::Timestamp;

fn catalog_times() -> Option<Vec<Timestamp>> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/usgs_m5_2015_2025.csv");
    if !path.is_file() {
        eprintln!("skipped: {} is missing", path.display());
        return None;
    }
    let (times, _) = catalog::replay(&Source::Path(path), &ReadOptions::new(), Vec::new).unwrap();
    Some(times)
}

fn sizing(c: &mut Criterion) {
    let Some(times) = catalog_times() else { return };
    let mut group = c.benchmark_group("sizing_m5_2015_2025");
    group.bench_function("curve", |b| b.iter(|| black_box(Curve::new(&times))));
    group.bench_function("min_bucket_one_rate", |b| {
        b.iter(|| {
            let mut min = MinBucket::new("5/h".parse().unwrap());
            times.iter().for_each(|&t| min.push(t));
            black_box(min.result())
        })
    });
    group.finish();
}

criterion_group!(benches, sizing);
criterion_main!(benches);
