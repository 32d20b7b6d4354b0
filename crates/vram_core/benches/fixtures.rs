//! Configs and scenarios shared by the criterion benchmark (`benches/estimate.rs`) and the ratio
//! table (`examples/speed.rs`, the source of docs/performance.md §Core).

use vram_core::scenario::Scenario;

/// A benchmarked config: name, text, and the published parameter count it must resolve to (so a
/// benchmark never times a wrong answer).
#[allow(dead_code)]
pub struct Fixture {
    pub name: &'static str,
    pub json: &'static str,
    pub published_params: u64,
}

pub fn fixtures() -> Vec<Fixture> {
    let preset = |id: &str| {
        vram_core::presets::PRESETS
            .iter()
            .find(|p| p.id == id)
            .unwrap_or_else(|| panic!("preset {id}"))
    };
    let q = preset("Qwen__Qwen3-8B");
    let d = preset("deepseek-ai__DeepSeek-V3");
    let m = preset("mistralai__Mixtral-8x7B-v0.1");
    // Hybrids: Jamba interleaves Mamba and attention layers (1 in 8) and MoE and dense MLPs (every
    // other layer); Nemotron-H interleaves Mamba-2, attention and MLP-only layers.
    let j = preset("ai21labs__AI21-Jamba-1.5-Mini");
    let n = preset("nvidia__Nemotron-H-8B-Base-8K");
    vec![
        Fixture {
            name: "Qwen3-8B",
            json: q.json,
            published_params: q.published_params,
        },
        Fixture {
            name: "DeepSeek-V3",
            json: d.json,
            published_params: d.published_params,
        },
        Fixture {
            name: "Gemma-2-27B",
            json: include_str!("configs/google__gemma-2-27b.json"),
            published_params: 27_227_128_320,
        },
        Fixture {
            name: "Mixtral-8x7B",
            json: m.json,
            published_params: m.published_params,
        },
        Fixture {
            name: "Jamba-1.5-Mini",
            json: j.json,
            published_params: j.published_params,
        },
        Fixture {
            name: "Nemotron-H-8B",
            json: n.json,
            published_params: n.published_params,
        },
    ]
}

/// Points of a chart sweep (the page's memory-vs-batch chart draws up to 64).
pub const SWEEP_POINTS: u64 = 64;

/// The training scenario timed: the page's default (bf16 autocast, AdamW, batch 1 × 2048, SDPA).
pub fn train_scenario() -> Scenario {
    Scenario::default()
}

/// The inference scenario timed: the page's default (bf16, batch 1, 4096 tokens, transformers).
pub fn infer_scenario() -> Scenario {
    Scenario::inference()
}

/// The largest micro-batch the planner benchmark tries (it tries 1, 2, 4 and 8 on every layout).
pub const PLANNER_MAX_MICRO_BATCH: u64 = 8;
