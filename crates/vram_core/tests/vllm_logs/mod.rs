#![allow(dead_code)] // shared by tests/vllm_startup_logs.rs and the accuracy example of vram_cli
//! The published vLLM start-up logs of `tests/data/vllm_startup_logs.json` and the estimate of
//! each (shared by `tests/vllm_startup_logs.rs` and `crates/vram_cli/examples/accuracy`, which writes
//! the table of docs/accuracy.md).

use serde_json::Value;
use vram_core::infer::{estimate_inference, ServingEstimate};
use vram_core::scenario::{Engine, Scenario};
use vram_core::{presets, resolve_value};

/// The case file.
pub const CASES: &str = include_str!("../data/vllm_startup_logs.json");

const GIB: f64 = (1u64 << 30) as f64;

/// What a log reports as its capacity, compared with the estimate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Capacity {
    /// `# GPU blocks: N` (V0 and early V1).
    Blocks(u64),
    /// `GPU KV cache size: N tokens` (V1) or the largest cacheable length in an error.
    Tokens(u64),
    /// `Available KV cache memory` / `the rest of the memory reserved for KV Cache` in GiB.
    KvGib(f64),
}

/// One log and its estimate.
pub struct Row {
    pub id: String,
    pub label: String,
    pub version: String,
    pub gpu: String,
    pub tp: u64,
    pub logged: Capacity,
    pub estimated: f64,
    pub logged_value: f64,
    pub source: String,
    pub outlier: Option<String>,
    pub serving: ServingEstimate,
    pub logged_parts: Vec<(&'static str, f64, f64)>,
}

impl Row {
    /// Signed error of the estimate, in percent of the logged value.
    pub fn error_percent(&self) -> f64 {
        (self.estimated / self.logged_value - 1.0) * 100.0
    }

    /// The capacity's unit.
    pub fn unit(&self) -> &'static str {
        match self.logged {
            Capacity::Blocks(_) => "blocks",
            Capacity::Tokens(_) => "tokens",
            Capacity::KvGib(_) => "KV GiB",
        }
    }
}

fn u(v: &Value, key: &str, default: u64) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(default)
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Every case with its estimate.
pub fn rows() -> Vec<Row> {
    let doc: Value = serde_json::from_str(CASES).expect("the case file is JSON");
    let cases = doc["cases"].as_array().expect("cases is an array");
    cases.iter().map(row).collect()
}

fn row(c: &Value) -> Row {
    let id = text(c, "id").to_string();
    let preset = presets::find(text(c, "model")).unwrap_or_else(|| panic!("{id}: preset"));
    let mut config: Value = serde_json::from_str(preset.json).expect("preset JSON");
    if let Some(patch) = c.get("patch").and_then(Value::as_object) {
        for (k, v) in patch {
            config[k] = v.clone();
        }
    }
    let spec = resolve_value(&config, None).unwrap_or_else(|e| panic!("{id}: {e}"));
    let mut s = Scenario::inference();
    s.engine = Engine::Vllm;
    if let Some(d) = c.get("dtype") {
        s.dtype = serde_json::from_value(d.clone()).unwrap_or_else(|e| panic!("{id}: {e}"));
    }
    if let Some(w) = c.get("weights").and_then(Value::as_str) {
        s.weights = Some(w.into());
    }
    if let Some(k) = c.get("kv_dtype").and_then(Value::as_str) {
        s.kv_dtype = Some(k.into());
    }
    let v = &mut s.serving;
    v.gpu_memory_bytes = (c["gpu_gib"].as_f64().expect("gpu_gib") * GIB).round() as u64;
    v.gpu_name = text(c, "gpu").into();
    v.gpu_memory_utilization = c["gmu"].as_f64().expect("gmu");
    v.tensor_parallel_size = u(c, "tp", 1);
    v.pipeline_parallel_size = u(c, "pp", 1);
    v.max_model_len = u(c, "max_model_len", 0);
    v.max_num_seqs = u(c, "max_num_seqs", 0);
    v.max_num_batched_tokens = u(c, "max_num_batched_tokens", 0);
    v.block_size = u(c, "block_size", 0);
    v.enforce_eager = c.get("enforce_eager").and_then(Value::as_bool) == Some(true);
    v.vllm_version = text(c, "vllm").into();
    if let Some(x) = c.get("usage") {
        v.usage = serde_json::from_value(x.clone()).expect("usage");
    }
    if let Some(x) = c.get("interconnect") {
        v.interconnect = serde_json::from_value(x.clone()).expect("interconnect");
    }
    s.gpus = v.tensor_parallel_size * v.pipeline_parallel_size;
    s.seq_len = if v.max_model_len > 0 {
        v.max_model_len
    } else {
        spec.max_position_embeddings.max(1)
    };
    let e =
        estimate_inference(&spec, &s, &Default::default()).unwrap_or_else(|e| panic!("{id}: {e}"));
    let logged = &c["logged"];
    let (cap, est, val) = if let Some(b) = logged.get("blocks").and_then(Value::as_u64) {
        (Capacity::Blocks(b), e.serving.num_blocks as f64, b as f64)
    } else if let Some(t) = logged.get("tokens").and_then(Value::as_u64) {
        (Capacity::Tokens(t), e.serving.kv_tokens as f64, t as f64)
    } else {
        let g = logged["kv_gib"].as_f64().expect("a capacity");
        (Capacity::KvGib(g), e.serving.kv_pool_bytes as f64 / GIB, g)
    };
    let sv = &e.serving;
    let parts = [
        ("weights", "weights_gib", sv.weights_per_gpu_bytes),
        ("activation", "activation_gib", sv.activation_peak_bytes),
        ("non-torch", "non_torch_gib", sv.non_torch_bytes),
        ("KV", "kv_gib", sv.kv_pool_bytes),
    ];
    let logged_parts = parts
        .iter()
        .filter_map(|&(name, key, bytes)| {
            logged
                .get(key)
                .and_then(Value::as_f64)
                .map(|g| (name, g, bytes as f64 / GIB))
        })
        .collect();
    Row {
        id,
        label: text(c, "as").into(),
        version: text(c, "vllm").into(),
        gpu: text(c, "gpu").into(),
        tp: u(c, "tp", 1),
        logged: cap,
        estimated: est,
        logged_value: val,
        source: text(c, "source").into(),
        outlier: c.get("outlier").and_then(Value::as_str).map(str::to_string),
        serving: e.serving,
        logged_parts,
    }
}
