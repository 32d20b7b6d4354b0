//! Criterion benchmark of the estimator's calls, each next to the `serde_json::Value` parse of the
//! same config text (the reference the targets are ratios of; docs/performance.md §Core).
//!
//! `cargo bench -p vram_core --bench estimate`. The ratio table itself comes from
//! `cargo run --release -p vram_core --example speed`, which times the same calls interleaved.

mod fixtures;

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use vram_core::report::DeviceOverheads;
use vram_core::scenario::Scenario;

fn bench(c: &mut Criterion) {
    let o = DeviceOverheads::default();
    for f in fixtures::fixtures() {
        let spec = vram_core::parse_config(f.json, None).expect("parses");
        assert_eq!(vram_core::ParamCounts::of(&spec).total, f.published_params);
        let train_s = fixtures::train_scenario();
        let infer_s = fixtures::infer_scenario();
        let mut g = c.benchmark_group(f.name);
        g.bench_function("reference: serde_json Value", |b| {
            b.iter(|| serde_json::from_str::<serde_json::Value>(black_box(f.json)).ok())
        });
        g.bench_function("parse_config", |b| {
            b.iter(|| vram_core::parse_config(black_box(f.json), None).ok())
        });
        g.bench_function("training estimate", |b| {
            b.iter(|| vram_core::train::estimate_training(&spec, black_box(&train_s), &o).ok())
        });
        g.bench_function("training totals", |b| {
            b.iter(|| vram_core::train::training_totals(&spec, black_box(&train_s), &o).ok())
        });
        g.bench_function("inference estimate", |b| {
            b.iter(|| vram_core::infer::estimate_inference(&spec, black_box(&infer_s), &o).ok())
        });
        g.bench_function("inference totals", |b| {
            b.iter(|| vram_core::infer::inference_totals(&spec, black_box(&infer_s), &o).ok())
        });
        let batch_points: Vec<Scenario> = (1..=fixtures::SWEEP_POINTS)
            .map(|b| Scenario {
                batch: b,
                ..train_s.clone()
            })
            .collect();
        g.bench_function("64-point training sweep", |b| {
            b.iter(|| vram_core::train::sweep(&spec, black_box(&batch_points), &o))
        });
        let context_points: Vec<Scenario> = (1..=fixtures::SWEEP_POINTS)
            .map(|i| Scenario {
                seq_len: 128 * i,
                ..infer_s.clone()
            })
            .collect();
        g.bench_function("64-point inference sweep", |b| {
            b.iter(|| vram_core::infer::sweep(&spec, black_box(&context_points), &o))
        });
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).warm_up_time(std::time::Duration::from_millis(300)).measurement_time(std::time::Duration::from_secs(1));
    targets = bench
}
criterion_main!(benches);
