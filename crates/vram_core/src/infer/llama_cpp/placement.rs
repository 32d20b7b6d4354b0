//! Where llama.cpp puts each layer, its KV cache and its experts (`llama_model::load_tensors`).
//!
//! - `-ngl N`: the output layer counts as layer `n_layer`, and the last `N` of the `n_layer + 1`
//!   slots go to the GPUs (`i_gpu_start = max(n_layer + 1 − N, 0)`): `-ngl 1` offloads only the
//!   output layer, `-ngl n_layer + 1` everything. The input layer (`token_embd`) always stays on
//!   the CPU ("there is very little benefit to offloading the input layer"). (Builds before 2026
//!   used `i_gpu_start = n_layer − N`, offloading the output only when `N > n_layer`.)
//! - `--tensor-split`: the offloaded layers (output included, `act_gpu_layers = min(N, n_layer + 1)`)
//!   go to the device `upper_bound(splits, (il − i_gpu_start) / act_gpu_layers)` of the cumulative,
//!   normalised split fractions (the default split is proportional to each device's free memory).
//! - `--n-cpu-moe N` / `--cpu-moe`: tensor overrides `blk\.<i>\.ffn_(up|down|gate)_exps` → CPU for
//!   the layers `i < N` (all layers), wherever the rest of the layer is.
//! - The KV cache of a layer lives on the layer's device (`offload_kqv`), or in host memory with
//!   `--no-kv-offload`.

use super::model::LlamaModel;
use serde::{Deserialize, Serialize};

/// A device: the CPU (host memory) or GPU `i`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dev {
    /// Host memory.
    Cpu,
    /// GPU `i` (CUDA0, CUDA1, ...).
    Gpu(usize),
}

/// The placement of a model.
#[derive(Clone, Debug, PartialEq)]
pub struct Placement {
    /// Device of each repeating layer's weights.
    pub layer: Vec<Dev>,
    /// Device of each layer's KV cache.
    pub kv: Vec<Dev>,
    /// Whether each layer's expert tensors are overridden to the CPU.
    pub experts_on_cpu: Vec<bool>,
    /// Device of the output layer.
    pub output: Dev,
    /// Repeating layers on a GPU.
    pub layers_on_gpu: u64,
    /// Effective `-ngl` (capped at `n_layer + 1`).
    pub n_gpu_layers: u64,
}

/// Places `model` on `n_gpus` GPUs.
pub fn place(
    model: &LlamaModel,
    n_gpu_layers: Option<u64>,
    n_gpus: usize,
    split: &[f64],
    n_cpu_moe: u64,
    cpu_moe: bool,
    no_kv_offload: bool,
) -> Placement {
    let n_layer = model.layers.len() as u64;
    let ngl = n_gpu_layers.unwrap_or(n_layer + 1).min(n_layer + 1);
    let n_gpus = n_gpus.max(1);
    let i_gpu_start = (n_layer + 1).saturating_sub(ngl);
    let act_gpu_layers = ngl;
    // cumulative split points
    let mut splits: Vec<f64> = if split.len() == n_gpus && split.iter().any(|&f| f > 0.0) {
        split.iter().map(|f| f.max(0.0)).collect()
    } else {
        vec![1.0; n_gpus]
    };
    let mut sum = 0.0;
    for s in &mut splits {
        sum += *s;
        *s = sum;
    }
    for s in &mut splits {
        *s /= sum;
    }
    let dev_of = |il: u64| -> Dev {
        if il < i_gpu_start || il - i_gpu_start >= act_gpu_layers {
            return Dev::Cpu;
        }
        let x = (il - i_gpu_start) as f64 / act_gpu_layers as f64;
        let idx = splits.iter().take_while(|&&p| p <= x).count();
        Dev::Gpu(idx.min(n_gpus - 1))
    };
    let layer: Vec<Dev> = (0..n_layer).map(dev_of).collect();
    let kv = layer
        .iter()
        .map(|&d| if no_kv_offload { Dev::Cpu } else { d })
        .collect();
    let experts_on_cpu = (0..n_layer).map(|il| cpu_moe || il < n_cpu_moe).collect();
    let layers_on_gpu = layer.iter().filter(|d| matches!(d, Dev::Gpu(_))).count() as u64;
    Placement {
        output: dev_of(n_layer),
        layer,
        kv,
        experts_on_cpu,
        layers_on_gpu,
        n_gpu_layers: ngl,
    }
}
