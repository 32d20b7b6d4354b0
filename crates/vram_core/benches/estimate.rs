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
        // hybrids' training is not modelled (the core refuses it): nothing to time
        let trains = vram_core::train::estimate_training(&spec, &train_s, &o).is_ok();
        if trains {
            g.bench_function("training estimate", |b| {
                b.iter(|| vram_core::train::estimate_training(&spec, black_box(&train_s), &o).ok())
            });
            g.bench_function("training totals", |b| {
                b.iter(|| vram_core::train::training_totals(&spec, black_box(&train_s), &o).ok())
            });
        }
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
        if trains {
            g.bench_function("64-point training sweep", |b| {
                b.iter(|| vram_core::train::sweep(&spec, black_box(&batch_points), &o))
            });
        }
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
    planner(c);
}

/// The layout planner over every layout of 64 H100-80 GPUs (8 nodes) for Llama-2-70B.
fn planner(c: &mut Criterion) {
    use vram_core::plan::{PlanRequest, PlanTask};
    let preset = vram_core::presets::find("meta-llama__Llama-2-70b-hf").expect("preset");
    let spec = vram_core::parse_config(preset.json, None).expect("parses");
    let gpu = *vram_core::gpu_catalog::find("h100-80").expect("catalog GPU");
    let mut g = c.benchmark_group("planner Llama-2-70B 64 GPUs");
    for (name, task) in [("train", PlanTask::Train), ("finetune", PlanTask::Finetune)] {
        let req = PlanRequest {
            task,
            base: Scenario {
                batch: fixtures::PLANNER_MAX_MICRO_BATCH,
                ..Scenario::default()
            },
            gpu,
            gpus: 64,
            gpus_per_node: 8,
            global_batch: 0,
            framework: None,
        };
        g.bench_function(name, |b| {
            b.iter(|| vram_core::plan::plan(&spec, black_box(&req), preset.repo))
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).warm_up_time(std::time::Duration::from_millis(300)).measurement_time(std::time::Duration::from_secs(1));
    targets = bench
}
criterion_main!(benches);
