//! Prints docs/performance.md's core table: the mean time of each estimator call next to the
//! `serde_json::Value` parse of the same config text, and their ratio. The ratios are the targets
//! (issue "A fast core"): they are measured in one run, interleaved, so they hold on a noisy machine.
//!
//! `cargo run --release -p vram_core --example speed [-- CALLS]`

#[path = "../benches/fixtures.rs"]
mod fixtures;

use std::hint::black_box;
use std::time::Instant;
use vram_core::report::DeviceOverheads;
use vram_core::scenario::Scenario;

fn mean_us(calls: u32, mut f: impl FnMut()) -> f64 {
    // One warm-up pass, then the timed calls.
    for _ in 0..calls.div_ceil(10) {
        f();
    }
    let t = Instant::now();
    for _ in 0..calls {
        f();
    }
    t.elapsed().as_secs_f64() * 1e6 / f64::from(calls)
}

fn main() {
    let calls: u32 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2000);
    // `speed CALLS warm`: one untimed pass over everything first (a JIT, as in wasm engines, has
    // then compiled every path before the timed pass).
    if std::env::args().nth(2).as_deref() == Some("warm") {
        table(calls / 10 + 1);
    }
    print!("{}", table(calls));
}

/// The table, timing each cell over `calls` calls.
fn table(calls: u32) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let o = DeviceOverheads::default();
    let _ = writeln!(
        out,
        "| work | {} |",
        fixtures::fixtures()
            .iter()
            .map(|f| f.name)
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let _ = writeln!(out, "|---|{}", "---|".repeat(fixtures::fixtures().len()));
    let mut rows: Vec<(String, Vec<String>)> = vec![
        ("`serde_json::from_str::<Value>` (reference)".into(), vec![]),
        ("`parse_config`".into(), vec![]),
        (
            "training estimate (JSON document: phases, formulas)".into(),
            vec![],
        ),
        ("training totals (`train::training_totals`)".into(), vec![]),
        ("inference estimate (JSON document)".into(), vec![]),
        (
            "inference totals (`infer::inference_totals`)".into(),
            vec![],
        ),
        (
            format!(
                "{}-point training sweep (batch 1..={})",
                fixtures::SWEEP_POINTS,
                fixtures::SWEEP_POINTS
            ),
            vec![],
        ),
        (
            format!("{}-point inference sweep (context)", fixtures::SWEEP_POINTS),
            vec![],
        ),
    ];
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
        let reference = mean_us(calls, || {
            black_box(serde_json::from_str::<serde_json::Value>(black_box(f.json)).ok());
        });
        let parse = mean_us(calls, || {
            black_box(vram_core::parse_config(black_box(f.json), None).ok());
        });
        let train = mean_us(calls, || {
            black_box(vram_core::train::estimate_training(&spec, black_box(&train_s), &o).ok());
        });
        let totals = mean_us(calls, || {
            black_box(vram_core::train::training_totals(&spec, black_box(&train_s), &o).ok());
        });
        let infer = mean_us(calls, || {
            black_box(vram_core::infer::estimate_inference(&spec, black_box(&infer_s), &o).ok());
        });
        let infer_totals = mean_us(calls, || {
            black_box(vram_core::infer::inference_totals(&spec, black_box(&infer_s), &o).ok());
        });
        let sweep_calls = (calls / 20).max(10);
        let train_sweep = mean_us(sweep_calls, || {
            let scenarios: Vec<Scenario> = (1..=fixtures::SWEEP_POINTS)
                .map(|b| Scenario {
                    batch: b,
                    ..train_s.clone()
                })
                .collect();
            black_box(vram_core::train::sweep(&spec, &scenarios, &o));
        });
        let infer_sweep = mean_us(sweep_calls, || {
            let scenarios: Vec<Scenario> = (1..=fixtures::SWEEP_POINTS)
                .map(|i| Scenario {
                    seq_len: 128 * i,
                    ..infer_s.clone()
                })
                .collect();
            black_box(vram_core::infer::sweep(&spec, &scenarios, &o));
        });
        let cell = |t: f64| {
            if t == reference {
                format!("{t:.1} µs")
            } else {
                format!("{t:.1} µs ({:.1}×)", t / reference)
            }
        };
        for (row, t) in rows.iter_mut().zip([
            reference,
            parse,
            train,
            totals,
            infer,
            infer_totals,
            train_sweep,
            infer_sweep,
        ]) {
            row.1.push(cell(t));
        }
    }
    for (name, cells) in rows {
        let _ = writeln!(out, "| {name} | {} |", cells.join(" | "));
    }
    out
}
