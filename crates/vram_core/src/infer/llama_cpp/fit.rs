//! "Can I run it": the largest `-ngl` and context that fit a machine, the fastest-looking placement
//! (all on the GPU, else routed experts on the CPU, else layers on the CPU), and the table of
//! quant types × what fits.
//!
//! A placement fits when every GPU's printed buffers plus the device overhead (CUDA context,
//! cuBLAS and the CUDA pool, not printed by llama.cpp) stay within its usable memory, and the host
//! share fits the system RAM. On unified memory (Apple Silicon, APUs) the GPU share is capped by
//! the GPU's working set and both shares come out of the same RAM.

use super::{buffers, estimate, LlamaCppEstimate, Resolved};
use crate::scenario::{LlamaCppInputs, Scenario};
use crate::spec::ModelSpec;
use serde::{Deserialize, Serialize};

/// The machine a model should run on.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// Memory each GPU can give to llama.cpp (usable, or free when other programs hold some).
    pub gpu_usable_bytes: u64,
    /// Bytes per GPU that llama.cpp does not print but the device holds (CUDA context, cuBLAS,
    /// the CUDA pool).
    pub device_overhead_bytes: u64,
    /// System RAM (0: not checked).
    pub host_ram_bytes: u64,
    /// Whether GPU and host share the RAM (Apple Silicon, APUs).
    pub unified: bool,
}

/// Headroom kept free on every device when searching for what fits: 5 %.
pub const HEADROOM_PERCENT: u64 = 5;

fn within(used: u64, limit: u64) -> bool {
    (used as u128) * 100 <= (limit as u128) * (100 - HEADROOM_PERCENT) as u128
}

/// Whether an estimate fits the machine (with [`HEADROOM_PERCENT`] kept free).
pub fn fits(e: &LlamaCppEstimate, m: &Machine) -> bool {
    let gpu_ok = e.devices.iter().all(|d| {
        d.total_bytes == 0 || within(d.total_bytes + m.device_overhead_bytes, m.gpu_usable_bytes)
    });
    let host_ok = if m.host_ram_bytes == 0 {
        true
    } else if m.unified {
        let gpu: u64 = e.devices.iter().map(|d| d.total_bytes).sum();
        within(gpu + e.host_total_bytes, m.host_ram_bytes)
    } else {
        within(e.host_total_bytes, m.host_ram_bytes)
    };
    gpu_ok && host_ok
}

/// Free bytes left on the fullest GPU (negative: short by that much).
pub fn gpu_free_bytes(e: &LlamaCppEstimate, m: &Machine) -> i64 {
    let used = e.gpu_total_bytes + m.device_overhead_bytes;
    m.gpu_usable_bytes as i64 - used as i64
}

/// The largest `-ngl` (0 ..= n_layer + 1) that fits at `n_ctx`; `None` when not even `-ngl 0` does.
pub fn max_gpu_layers(
    r: &Resolved,
    inputs: &LlamaCppInputs,
    n_ctx: u64,
    n_seq: u64,
    m: &Machine,
) -> Option<u64> {
    let n_layer = r.model.layers.len() as u64;
    (0..=n_layer + 1).rev().find(|&ngl| {
        let i = LlamaCppInputs {
            n_gpu_layers: Some(ngl),
            ..inputs.clone()
        };
        fits(&buffers(r, &i, n_ctx, n_seq), m)
    })
}

/// The largest context (a multiple of 256, at most `ceiling`) that fits with `inputs`'
/// placement; `None` when 256 tokens do not.
pub fn max_context(
    r: &Resolved,
    inputs: &LlamaCppInputs,
    n_seq: u64,
    m: &Machine,
    ceiling: u64,
) -> Option<u64> {
    let ok = |ctx: u64| fits(&buffers(r, inputs, ctx, n_seq), m);
    let step = super::cache::CTX_PAD;
    let mut hi = (ceiling / step).max(1);
    if !ok(step) {
        return None;
    }
    if ok(hi * step) {
        return Some(hi * step);
    }
    let mut lo = 1;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid * step) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(lo * step)
}

/// How a model is placed on the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlacementKind {
    /// Every layer, the output and the KV on the GPU(s).
    Gpu,
    /// Everything on the GPU but the routed experts of some or all layers (`--n-cpu-moe`).
    ExpertsOnCpu,
    /// Only the last `-ngl` layers on the GPU.
    Partial,
    /// Does not fit in GPU memory and RAM together.
    None,
}

/// One row of the "can I run it" table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FitRow {
    /// Weight type (`Q4_K_M`, or the GGUF file's).
    pub weights: String,
    /// Tensor data bytes.
    pub weights_bytes: u64,
    /// The largest context that fits entirely on the GPU(s) (0: none).
    pub full_gpu_max_context: u64,
    /// The fastest-looking placement at the requested context.
    pub placement: PlacementKind,
    /// Context the placement is for (the requested one).
    pub context: u64,
    /// `-ngl` of the placement.
    pub n_gpu_layers: u64,
    /// `--n-cpu-moe` of the placement.
    pub n_cpu_moe: u64,
    /// GPU bytes (largest GPU, printed buffers).
    pub gpu_bytes: u64,
    /// Host bytes.
    pub host_bytes: u64,
    /// Free bytes left on the fullest GPU after the device overhead.
    pub gpu_free_bytes: i64,
    /// The `llama-server` line.
    pub launch: String,
}

/// The placement of `r` at `n_ctx` (all on GPU > experts on CPU > layers on CPU).
pub fn best_placement(
    r: &Resolved,
    inputs: &LlamaCppInputs,
    n_ctx: u64,
    n_seq: u64,
    m: &Machine,
    gguf_name: &str,
) -> (PlacementKind, LlamaCppEstimate, LlamaCppInputs) {
    let n_layer = r.model.layers.len() as u64;
    let all = LlamaCppInputs {
        n_gpu_layers: None,
        n_cpu_moe: 0,
        cpu_moe: false,
        ..inputs.clone()
    };
    let with_launch = |i: &LlamaCppInputs| estimate(r, i, n_ctx, n_seq, gguf_name);
    if fits(&buffers(r, &all, n_ctx, n_seq), m) {
        return (PlacementKind::Gpu, with_launch(&all), all);
    }
    if r.model.has_experts() {
        // the fewest leading layers with experts on the CPU
        let found = (1..=n_layer).find_map(|n| {
            let i = LlamaCppInputs {
                n_cpu_moe: n,
                ..all.clone()
            };
            fits(&buffers(r, &i, n_ctx, n_seq), m).then_some(i)
        });
        if let Some(i) = found {
            return (PlacementKind::ExpertsOnCpu, with_launch(&i), i);
        }
    }
    if let Some(ngl) = max_gpu_layers(r, &all, n_ctx, n_seq, m) {
        let i = LlamaCppInputs {
            n_gpu_layers: Some(ngl),
            ..all.clone()
        };
        return (PlacementKind::Partial, with_launch(&i), i);
    }
    (PlacementKind::None, with_launch(&all), all)
}

/// GGUF types of the table, largest first.
pub const TABLE_TYPES: &[&str] = &["f16", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "q3_k_m", "q2_k"];

/// The "can I run it" table for `spec` on `m`: one row per type of `types` (the GGUF file's own
/// type when `types` is empty and the spec came from a GGUF header), at the scenario's context
/// (`seq_len`) and sequences (`batch`).
pub fn can_i_run(
    spec: &ModelSpec,
    scenario: &Scenario,
    m: &Machine,
    types: &[&str],
    gguf_name: &str,
) -> Vec<Result<FitRow, crate::error::ScenarioError>> {
    let mut wanted: Vec<Option<&str>> = types.iter().map(|t| Some(*t)).collect();
    if spec.gguf.is_some() {
        wanted.insert(0, None);
    }
    let ceiling = if spec.max_position_embeddings > 0 {
        spec.max_position_embeddings
    } else {
        131_072
    };
    wanted
        .into_iter()
        .map(|w| {
            let s = Scenario {
                weights: w.map(str::to_string),
                ..scenario.clone()
            };
            let r = super::resolve(spec, &s)?;
            let n_seq = s.batch.max(1);
            let all = LlamaCppInputs {
                n_gpu_layers: None,
                n_cpu_moe: 0,
                cpu_moe: false,
                ..s.llama_cpp.clone()
            };
            let full = max_context(&r, &all, n_seq, m, ceiling).unwrap_or(0);
            let ctx = s.seq_len;
            let name = if gguf_name.ends_with(".gguf") {
                gguf_name.to_string()
            } else {
                crate::infer::gguf_file_name(spec, &r.format_name)
            };
            let (kind, e, i) = best_placement(&r, &s.llama_cpp, ctx, n_seq, m, &name);
            Ok(FitRow {
                weights: r.format_name.clone(),
                weights_bytes: r.model.file_bytes,
                full_gpu_max_context: full,
                placement: kind,
                context: ctx,
                n_gpu_layers: i.n_gpu_layers.unwrap_or(e.n_gpu_layers),
                n_cpu_moe: i.n_cpu_moe,
                gpu_bytes: e.gpu_total_bytes,
                host_bytes: e.host_total_bytes,
                gpu_free_bytes: gpu_free_bytes(&e, m),
                launch: e.launch.llama_server.clone(),
            })
        })
        .collect()
}
