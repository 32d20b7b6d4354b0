//! Prints docs/performance.md's core table: the time of each estimator call next to the
//! `serde_json::Value` parse of the same config text, and their ratio. The ratios are the targets
//! (issue "A fast core"). Each cell is timed in `ROUNDS` rounds, each round timing the reference
//! right before the cell; the table shows the median time and the median of the per-round ratios,
//! so a busy neighbour on the machine moves both sides of a ratio together.
//!
//! `cargo run --release -p vram_core --example speed [-- CALLS [warm]]` (`warm`: one untimed pass
//! first, for engines with a JIT such as V8 running the wasm build, see scripts/speed-wasm.mjs).

#[path = "../benches/fixtures.rs"]
mod fixtures;

use std::hint::black_box;
use std::time::Instant;
use vram_core::report::DeviceOverheads;
use vram_core::scenario::Scenario;

/// Rounds per cell.
const ROUNDS: usize = 7;

fn mean_us(calls: u32, f: &mut dyn FnMut()) -> f64 {
    let t = Instant::now();
    for _ in 0..calls {
        f();
    }
    t.elapsed().as_secs_f64() * 1e6 / f64::from(calls)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let calls: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    if std::env::args().nth(2).as_deref() == Some("warm") {
        table(calls / 10 + 1);
    }
    print!("{}", table(calls));
    println!();
    print!("{}", planner_table((calls / 100).max(3)));
}

/// The planner over every layout of 64 H100-80 GPUs (8 nodes of 8) for Llama-2-70B, per task:
/// layouts estimated and the median time of one `plan::plan` call over `ROUNDS` rounds of `calls`.
fn planner_table(calls: u32) -> String {
    use std::fmt::Write as _;
    use vram_core::plan::{PlanRequest, PlanTask};
    let preset = vram_core::presets::find("meta-llama__Llama-2-70b-hf").expect("preset");
    let spec = vram_core::parse_config(preset.json, None).expect("parses");
    assert_eq!(
        vram_core::ParamCounts::of(&spec).total,
        preset.published_params
    );
    let gpu = *vram_core::gpu_catalog::find("h100-80").expect("catalog GPU");
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| planner, Llama-2-70B, 64 × H100-80 (8 nodes) | layouts estimated | plans that fit | time per call |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|");
    let train = Scenario {
        batch: fixtures::PLANNER_MAX_MICRO_BATCH,
        ..Scenario::default()
    };
    let lora = Scenario {
        lora: Some(vram_core::scenario::Lora {
            r: 16,
            alpha: 32,
            targets: vram_core::scenario::LoraTargets::AllLinear,
            base_quant: vram_core::scenario::BaseQuant::None,
        }),
        ..train.clone()
    };
    let serve = Scenario {
        engine: vram_core::scenario::Engine::Vllm,
        batch: 64,
        seq_len: 8192,
        ..Scenario::inference()
    };
    let tasks = [
        (
            "train (Megatron-core, torchtitan, HF)",
            PlanTask::Train,
            train.clone(),
        ),
        (
            "fine-tune, full (HF: ZeRO 0–3, FSDP2)",
            PlanTask::Finetune,
            train,
        ),
        (
            "fine-tune, LoRA r 16 all-linear (HF)",
            PlanTask::Finetune,
            lora,
        ),
        (
            "serve (vLLM TP × PP), 64 sequences of 8k",
            PlanTask::Serve,
            serve,
        ),
    ];
    for (name, task, base) in tasks {
        let req = PlanRequest {
            task,
            base,
            gpu,
            gpus: 64,
            gpus_per_node: 8,
            global_batch: 0,
            framework: None,
        };
        let first = vram_core::plan::plan(&spec, &req, preset.repo);
        let times: Vec<f64> = (0..ROUNDS)
            .map(|_| {
                mean_us(calls, &mut || {
                    drop(black_box(vram_core::plan::plan(
                        &spec,
                        black_box(&req),
                        preset.repo,
                    )))
                })
            })
            .collect();
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {:.2} ms |",
            first.considered,
            first.plans.len(),
            median(times) / 1000.0
        );
    }
    out
}

/// The table, timing each cell over `calls` calls per round.
fn table(calls: u32) -> String {
    use std::fmt::Write as _;
    let o = DeviceOverheads::default();
    let names = [
        "`parse_config`".to_string(),
        "training estimate (JSON document: phases, formulas)".to_string(),
        "training totals (`train::training_totals`)".to_string(),
        "inference estimate (JSON document)".to_string(),
        "inference totals (`infer::inference_totals`)".to_string(),
        format!(
            "{}-point training sweep (batch 1..={})",
            fixtures::SWEEP_POINTS,
            fixtures::SWEEP_POINTS
        ),
        format!(
            "{}-point inference sweep (context 128..={})",
            fixtures::SWEEP_POINTS,
            128 * fixtures::SWEEP_POINTS
        ),
    ];
    let mut reference_row = Vec::new();
    let mut rows: Vec<Vec<String>> = vec![Vec::new(); names.len()];
    for f in fixtures::fixtures() {
        let spec = vram_core::parse_config(f.json, None).expect("parses");
        assert_eq!(
            vram_core::ParamCounts::of(&spec).total,
            f.published_params,
            "{} resolves to its published count",
            f.name
        );
        let train_s = fixtures::train_scenario();
        let infer_s = fixtures::infer_scenario();
        let batch_points: Vec<Scenario> = (1..=fixtures::SWEEP_POINTS)
            .map(|b| Scenario {
                batch: b,
                ..train_s.clone()
            })
            .collect();
        let context_points: Vec<Scenario> = (1..=fixtures::SWEEP_POINTS)
            .map(|i| Scenario {
                seq_len: 128 * i,
                ..infer_s.clone()
            })
            .collect();
        let sweep_calls = (calls / 20).max(5);
        let mut reference = || {
            black_box(serde_json::from_str::<serde_json::Value>(black_box(f.json)).ok());
        };
        let mut cells: Vec<(u32, Box<dyn FnMut() + '_>)> = vec![
            (
                calls,
                Box::new(|| drop(black_box(vram_core::parse_config(black_box(f.json), None)))),
            ),
            (
                calls,
                Box::new(|| {
                    drop(black_box(vram_core::train::estimate_training(
                        &spec,
                        black_box(&train_s),
                        &o,
                    )))
                }),
            ),
            (
                calls,
                Box::new(|| {
                    drop(black_box(vram_core::train::training_totals(
                        &spec,
                        black_box(&train_s),
                        &o,
                    )))
                }),
            ),
            (
                calls,
                Box::new(|| {
                    drop(black_box(vram_core::infer::estimate_inference(
                        &spec,
                        black_box(&infer_s),
                        &o,
                    )))
                }),
            ),
            (
                calls,
                Box::new(|| {
                    drop(black_box(vram_core::infer::inference_totals(
                        &spec,
                        black_box(&infer_s),
                        &o,
                    )))
                }),
            ),
            (
                sweep_calls,
                Box::new(|| {
                    drop(black_box(vram_core::train::sweep(
                        &spec,
                        black_box(&batch_points),
                        &o,
                    )))
                }),
            ),
            (
                sweep_calls,
                Box::new(|| {
                    drop(black_box(vram_core::infer::sweep(
                        &spec,
                        black_box(&context_points),
                        &o,
                    )))
                }),
            ),
        ];
        // the core refuses training estimates of hybrid attention/state-space models (inference
        // is modelled): those cells say so instead of timing an error
        let trains = vram_core::train::estimate_training(&spec, &train_s, &o).is_ok();
        let training_rows = [1, 2, 5];
        let mut reference_times = Vec::new();
        for (k, (row, (n, cell))) in rows.iter_mut().zip(cells.iter_mut()).enumerate() {
            if !trains && training_rows.contains(&k) {
                row.push("not modelled".into());
                continue;
            }
            let (mut times, mut ratios) = (Vec::new(), Vec::new());
            for _ in 0..ROUNDS {
                let r = mean_us(calls, &mut reference);
                let t = mean_us(*n, cell.as_mut());
                reference_times.push(r);
                times.push(t);
                ratios.push(t / r);
            }
            row.push(format!("{:.1} µs ({:.1}×)", median(times), median(ratios)));
        }
        reference_row.push(format!("{:.1} µs", median(reference_times)));
    }
    let mut out = String::new();
    let header: Vec<&str> = fixtures::fixtures().iter().map(|f| f.name).collect();
    let _ = writeln!(out, "| work | {} |", header.join(" | "));
    let _ = writeln!(out, "|---|{}", "---|".repeat(header.len()));
    let _ = writeln!(
        out,
        "| `serde_json::from_str::<Value>` (reference) | {} |",
        reference_row.join(" | ")
    );
    for (name, cells) in names.iter().zip(rows) {
        let _ = writeln!(out, "| {name} | {} |", cells.join(" | "));
    }
    out
}
