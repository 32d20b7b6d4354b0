//! Runs one estimator call 200 times, for profiling (`valgrind --tool=callgrind`):
//! `P=<preset id> prof_one parse|train|totals|tsweep|infer|itotals`.
fn main() {
    let which = std::env::args().nth(1).unwrap_or_default();
    let id = std::env::var("P").unwrap_or_else(|_| "Qwen__Qwen3-8B".into());
    let Some(p) = vram_core::presets::PRESETS.iter().find(|p| p.id == id) else {
        eprintln!("no preset {id}");
        return;
    };
    let spec = vram_core::parse_config(p.json, None).expect("parses");
    let o = vram_core::report::DeviceOverheads::default();
    let (t, i) = (
        vram_core::Scenario::default(),
        vram_core::Scenario::inference(),
    );
    let points: Vec<vram_core::Scenario> = (1..=64)
        .map(|b| vram_core::Scenario {
            batch: b,
            ..t.clone()
        })
        .collect();
    for _ in 0..200 {
        match which.as_str() {
            "parse" => drop(std::hint::black_box(vram_core::parse_config(p.json, None))),
            "train" => drop(std::hint::black_box(vram_core::train::estimate_training(
                &spec, &t, &o,
            ))),
            "totals" => drop(std::hint::black_box(vram_core::train::training_totals(
                &spec, &t, &o,
            ))),
            "tsweep" => drop(std::hint::black_box(vram_core::train::sweep(
                &spec, &points, &o,
            ))),
            "infer" => drop(std::hint::black_box(vram_core::infer::estimate_inference(
                &spec, &i, &o,
            ))),
            _ => drop(std::hint::black_box(vram_core::infer::inference_totals(
                &spec, &i, &o,
            ))),
        }
    }
}
