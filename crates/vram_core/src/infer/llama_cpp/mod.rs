//! The llama.cpp engine (`llama-server`, `llama-cli`, llama-cpp-python, LM Studio, and ollama on
//! top of it): what llama.cpp allocates at start-up and prints, per device.
//!
//! - **model buffers**: each tensor on its layer's device ([`placement`]), the input embedding in
//!   host memory (`CPU_Mapped` with mmap), a tied output's copy on the output device;
//! - **KV buffers**: [`cache`] (cells padded to 256, the SWA cache, quantized K/V types);
//! - **output buffer**: `n_seq × n_vocab` f32 logits in host memory (`output_reserve`);
//! - **compute buffers**: [`compute`] (per GPU and host).
//!
//! `gpu_total_bytes` is the sum of what llama.cpp prints for the largest GPU; the device adds the
//! CUDA context (not printed). Sources and the calibration: docs/formulas/llama-cpp.md and
//! docs/accuracy.md §llama.cpp.

pub mod cache;
pub mod compute;
pub mod fit;
pub mod launch;
pub mod model;
pub mod placement;

use crate::error::ScenarioError;
use crate::scenario::{FlashAttn, LlamaCppInputs, Scenario};
use crate::spec::ModelSpec;
use cache::{CacheCells, CacheType};
pub use model::{LlamaModel, LlamaWeights};
use placement::Dev;
use serde::{Deserialize, Serialize};

/// Most parallel sequences llama.cpp accepts (`LLAMA_MAX_SEQ`, `src/llama-cparams.h`).
pub const MAX_SEQUENCES: u64 = 256;

/// One device's share (as llama.cpp prints it per buffer).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceBuffers {
    /// `CUDA0`, `CUDA1`, ... (the backend name llama.cpp prints; Metal/Vulkan/ROCm print theirs).
    pub device: String,
    /// Repeating layers whose weights are on this device.
    pub layers: u64,
    /// Whether the output layer is here.
    pub output_layer: bool,
    /// `model buffer size`.
    pub weights_bytes: u64,
    /// `KV buffer size`.
    pub kv_bytes: u64,
    /// `compute buffer size`.
    pub compute_bytes: u64,
    /// The sum.
    pub total_bytes: u64,
}

/// `infer.llama_cpp` of `vram estimate --json` (keys in docs/cli.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LlamaCppEstimate {
    /// `gguf header` or `config.json + llama-quantize <preset>`.
    pub model_source: String,
    /// Whether the ollama profile is used.
    pub ollama: bool,
    /// `n_ctx` after llama.cpp's padding (all sequences).
    pub n_ctx: u64,
    /// Cells each sequence can use (`n_ctx_seq`; the whole cache when unified).
    pub n_ctx_seq: u64,
    /// Parallel sequences (`-np`, `n_seq_max`).
    pub n_seq: u64,
    /// Logical batch.
    pub n_batch: u64,
    /// Physical batch the graph is reserved for.
    pub n_ubatch: u64,
    /// Whether flash attention is on.
    pub flash_attn: bool,
    /// K cache type.
    pub type_k: String,
    /// V cache type.
    pub type_v: String,
    /// Cells of the full-attention cache.
    pub cells: u64,
    /// Cells of the sliding-window cache (0 without SWA layers).
    pub swa_cells: u64,
    /// KV bytes of the full-attention layers.
    pub kv_bytes: u64,
    /// KV bytes of the sliding-window layers.
    pub kv_swa_bytes: u64,
    /// K part of all caches.
    pub kv_k_bytes: u64,
    /// V part of all caches.
    pub kv_v_bytes: u64,
    /// Recurrent state bytes (mamba layers).
    pub recurrent_bytes: u64,
    /// KV bytes on GPUs.
    pub kv_gpu_bytes: u64,
    /// KV bytes in host memory (layers on the CPU, or `--no-kv-offload`).
    pub kv_host_bytes: u64,
    /// Repeating layers.
    pub n_layer: u64,
    /// Effective `-ngl` (repeating layers + output, capped at `n_layer + 1`).
    pub n_gpu_layers: u64,
    /// Repeating layers whose weights are on a GPU.
    pub layers_on_gpu: u64,
    /// Whether the output layer is on a GPU.
    pub output_on_gpu: bool,
    /// Layers whose routed experts stay in host memory (`--n-cpu-moe`).
    pub layers_experts_on_host: u64,
    /// Weights on the GPUs.
    pub weights_gpu_bytes: u64,
    /// Weights in host memory (the input embedding, CPU layers and experts; mmap'd from the file).
    pub weights_host_bytes: u64,
    /// Compute buffers of the GPUs.
    pub compute_gpu_bytes: u64,
    /// Host compute buffer.
    pub compute_host_bytes: u64,
    /// Output (logits) buffer in host memory.
    pub output_bytes: u64,
    /// What llama.cpp allocates on the largest GPU (model + KV + compute buffers).
    pub gpu_total_bytes: u64,
    /// Host memory: weights, host KV, host compute and output buffers.
    pub host_total_bytes: u64,
    /// Per GPU.
    pub devices: Vec<DeviceBuffers>,
    /// The command lines for this placement.
    pub launch: launch::Launch,
}

/// Everything an estimate needs that does not depend on the context length.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// The model.
    pub model: LlamaModel,
    /// K type.
    pub type_k: CacheType,
    /// V type.
    pub type_v: CacheType,
    /// Flash attention on.
    pub flash_attn: bool,
    /// Format name for `weights_format` (`Q4_K_M`, `F16`, ...).
    pub format_name: String,
}

/// The model llama.cpp would load for `spec` under `scenario`: the GGUF header's when the spec
/// came from one, else the config's tensors in `scenario.weights` (a GGUF preset or a float
/// dtype; default Q4_K_M, the quant ollama and most model pages ship).
pub fn resolve(spec: &ModelSpec, scenario: &Scenario) -> Result<Resolved, ScenarioError> {
    let inputs = &scenario.llama_cpp;
    let (model, format_name) = match (&spec.gguf, scenario.weights.as_deref()) {
        (Some(m), None) => (
            (**m).clone(),
            spec.torch_dtype.clone().unwrap_or_else(|| "GGUF".into()),
        ),
        (_, name) => {
            let name = name.unwrap_or("q4_k_m");
            // GGUF spells the float types f16 / f32
            let canonical = match name.trim().to_ascii_lowercase().as_str() {
                "f16" => "fp16".to_string(),
                "f32" => "fp32".to_string(),
                other => other.to_string(),
            };
            let f = crate::infer::format::parse_weight_format(&canonical)?;
            let w = match f {
                crate::infer::format::WeightFormat::Gguf { preset } => LlamaWeights::Gguf(preset),
                crate::infer::format::WeightFormat::Float { dtype } => LlamaWeights::Float(dtype),
                _ => {
                    return Err(ScenarioError::Invalid {
                        field: "weights".into(),
                        expected: "a GGUF type for llama.cpp: q8_0, q6_k, q5_k_m, q4_k_m, q4_0, q3_k_m, q2_k, or f16/bf16/fp32".into(),
                        found: format!("{name:?}"),
                    })
                }
            };
            let label = match w {
                LlamaWeights::Gguf(p) => p.name().to_string(),
                LlamaWeights::Float(d) => match d {
                    crate::scenario::Dtype::Fp32 => "F32".into(),
                    crate::scenario::Dtype::Bf16 => "BF16".into(),
                    crate::scenario::Dtype::Fp16 => "F16".into(),
                },
            };
            (LlamaModel::from_spec(spec, w), label)
        }
    };
    let type_k = CacheType::parse("kv_dtype", scenario.kv_dtype.as_deref().unwrap_or("f16"))?;
    let type_v = match inputs.kv_dtype_v.as_deref() {
        Some(v) => CacheType::parse("kv_dtype_v", v)?,
        None => type_k,
    };
    let flash_attn = match inputs.flash_attn {
        FlashAttn::On | FlashAttn::Auto => true,
        FlashAttn::Off => false,
    };
    if type_v.is_quantized() && !flash_attn {
        return Err(ScenarioError::Invalid {
            field: "kv_dtype_v".into(),
            expected: "f16, bf16 or f32 with flash attention off (llama.cpp: \"V cache quantization requires flash_attn\"); turn flash attention on to quantize V".into(),
            found: format!("{:?}", type_v.name()),
        });
    }
    Ok(Resolved {
        model,
        type_k,
        type_v,
        flash_attn,
        format_name,
    })
}

/// Validates the llama.cpp inputs (names the field and the constraint).
pub fn validate(inputs: &LlamaCppInputs, n_layer: u64) -> Result<(), ScenarioError> {
    let range = |field: &str, v: u64, lo: u64, hi: u64| {
        if v < lo || v > hi {
            Err(ScenarioError::Invalid {
                field: field.into(),
                expected: format!("an integer from {lo} to {hi}"),
                found: v.to_string(),
            })
        } else {
            Ok(())
        }
    };
    range("llama_cpp.n_ubatch", inputs.n_ubatch, 1, 1 << 20)?;
    range("llama_cpp.n_batch", inputs.n_batch, 1, 1 << 20)?;
    if let Some(n) = inputs.n_gpu_layers {
        // llama.cpp accepts any larger value (999 = all) and caps it; so do we.
        range("llama_cpp.n_gpu_layers", n.min(n_layer + 1), 0, n_layer + 1)?;
    }
    if inputs.tensor_split.len() > 16
        || inputs
            .tensor_split
            .iter()
            .any(|f| !f.is_finite() || *f < 0.0)
        || (!inputs.tensor_split.is_empty() && inputs.tensor_split.iter().all(|f| *f == 0.0))
    {
        return Err(ScenarioError::Invalid {
            field: "llama_cpp.tensor_split".into(),
            expected: "1 to 16 non-negative proportions, not all zero (e.g. 3,1)".into(),
            found: format!("{:?}", inputs.tensor_split),
        });
    }
    Ok(())
}

/// The number of GPUs the inputs describe.
pub fn n_gpus(inputs: &LlamaCppInputs) -> usize {
    inputs.tensor_split.len().max(1)
}

/// The inputs and total context llama.cpp runs with. The ollama profile launches `llama-server`
/// with `-c num_ctx × num_parallel -np num_parallel` (so the cache is per sequence, not unified)
/// and `-b = -ub = num_batch` (512) (ollama `llm/llama_server.go`); `n_ctx` is then `num_ctx`.
pub fn effective(inputs: &LlamaCppInputs, n_ctx: u64, n_seq: u64) -> (LlamaCppInputs, u64) {
    if !inputs.ollama {
        return (inputs.clone(), n_ctx);
    }
    let mut i = inputs.clone();
    i.kv_unified = false;
    i.n_batch = i.n_ubatch.max(1);
    (i, n_ctx.saturating_mul(n_seq.max(1)))
}

/// The estimate for context `n_ctx` (all sequences; `num_ctx` per sequence with the ollama
/// profile) and `n_seq` sequences, with its launch lines naming the model file `gguf_name`.
pub fn estimate(
    r: &Resolved,
    inputs: &LlamaCppInputs,
    n_ctx: u64,
    n_seq: u64,
    gguf_name: &str,
) -> LlamaCppEstimate {
    let est = buffers(r, inputs, n_ctx, n_seq);
    let launch = launch::lines(&est, inputs, gguf_name, effective(inputs, n_ctx, n_seq).1);
    LlamaCppEstimate { launch, ..est }
}

/// [`estimate`] without the launch lines (empty): what the solvers compare with a machine.
pub fn buffers(r: &Resolved, inputs: &LlamaCppInputs, n_ctx: u64, n_seq: u64) -> LlamaCppEstimate {
    let (inputs, n_ctx) = &effective(inputs, n_ctx, n_seq);
    let n_ctx = *n_ctx;
    let m = &r.model;
    let n_layer = m.layers.len() as u64;
    let n_batch = inputs.n_batch.min(n_ctx.max(1));
    let n_ubatch = inputs.n_ubatch.min(n_batch);
    let cells: CacheCells = cache::cells(
        m,
        n_ctx,
        n_seq,
        n_ubatch,
        inputs.kv_unified,
        inputs.swa_full,
    );
    let n_gpus = n_gpus(inputs);
    let p = placement::place(
        m,
        inputs.n_gpu_layers,
        n_gpus,
        &inputs.tensor_split,
        inputs.n_cpu_moe,
        inputs.cpu_moe,
        inputs.no_kv_offload,
    );
    let mut dev_weights = vec![0u64; n_gpus];
    let mut dev_kv = vec![0u64; n_gpus];
    let mut dev_layers = vec![0u64; n_gpus];
    let mut host_weights = m.token_embd_bytes + m.other_host_bytes;
    let (mut kv_full, mut kv_swa, mut kv_k, mut kv_v, mut recurrent, mut kv_host) =
        (0u64, 0u64, 0u64, 0u64, 0u64, 0u64);
    let mut experts_host_layers = 0;
    for (il, layer) in m.layers.iter().enumerate() {
        let experts_cpu = p.experts_on_cpu[il] && layer.expert_bytes > 0;
        if experts_cpu {
            experts_host_layers += 1;
        }
        match p.layer[il] {
            Dev::Gpu(d) => {
                dev_layers[d] += 1;
                dev_weights[d] += layer.weights_bytes;
                if experts_cpu {
                    host_weights += layer.expert_bytes;
                } else {
                    dev_weights[d] += layer.expert_bytes;
                }
            }
            Dev::Cpu => host_weights += layer.weights_bytes + layer.expert_bytes,
        }
        let (k, v) = cache::layer_bytes(&layer.cache, &cells, r.type_k, r.type_v);
        match layer.cache {
            model::LayerCacheKind::Attention { swa: true, .. } => kv_swa += k + v,
            model::LayerCacheKind::Attention { swa: false, .. } => kv_full += k + v,
            model::LayerCacheKind::Recurrent { .. } => recurrent += k + v,
            model::LayerCacheKind::None => {}
        }
        kv_k += k;
        kv_v += v;
        match p.kv[il] {
            Dev::Gpu(d) => dev_kv[d] += k + v,
            Dev::Cpu => kv_host += k + v,
        }
    }
    match p.output {
        Dev::Gpu(d) => dev_weights[d] += m.output_bytes,
        Dev::Cpu => host_weights += m.output_bytes,
    }
    let g = compute::GraphShape {
        n_tokens: n_ubatch,
        n_outputs: n_ubatch,
        flash_attn: r.flash_attn,
        op_offload: true,
    };
    // K and V of one layer in one stream: what an offloaded attention op of a CPU layer copies.
    let kv_rows = |l: &model::LlamaLayer| {
        let n_kv = match l.cache {
            model::LayerCacheKind::Attention { swa: true, .. } => cells.n_kv_swa,
            _ => cells.n_kv,
        };
        cache::cell_bytes(&l.cache, r.type_k, r.type_v).saturating_mul(n_kv)
    };
    let cb = compute::buffers(m, &p, &cells, &g, n_gpus, kv_rows);
    let output_bytes = cells.n_seq.saturating_mul(m.n_vocab).saturating_mul(4);
    let devices: Vec<DeviceBuffers> = (0..n_gpus)
        .map(|d| DeviceBuffers {
            device: format!("CUDA{d}"),
            layers: dev_layers[d],
            output_layer: p.output == Dev::Gpu(d),
            weights_bytes: dev_weights[d],
            kv_bytes: dev_kv[d],
            compute_bytes: cb.gpu[d],
            total_bytes: dev_weights[d] + dev_kv[d] + cb.gpu[d],
        })
        .collect();
    let gpu_total = devices.iter().map(|d| d.total_bytes).max().unwrap_or(0);
    let est = LlamaCppEstimate {
        model_source: m.source.clone(),
        ollama: inputs.ollama,
        n_ctx: cells.cells,
        n_ctx_seq: cells.n_kv,
        n_seq: cells.n_seq,
        n_batch,
        n_ubatch,
        flash_attn: r.flash_attn,
        type_k: r.type_k.name().into(),
        type_v: r.type_v.name().into(),
        cells: cells.cells,
        swa_cells: cells.swa_cells,
        kv_bytes: kv_full,
        kv_swa_bytes: kv_swa,
        kv_k_bytes: kv_k,
        kv_v_bytes: kv_v,
        recurrent_bytes: recurrent,
        kv_gpu_bytes: dev_kv.iter().sum(),
        kv_host_bytes: kv_host,
        n_layer,
        n_gpu_layers: p.n_gpu_layers,
        layers_on_gpu: p.layers_on_gpu,
        output_on_gpu: matches!(p.output, Dev::Gpu(_)),
        layers_experts_on_host: experts_host_layers,
        weights_gpu_bytes: dev_weights.iter().sum(),
        weights_host_bytes: host_weights,
        compute_gpu_bytes: cb.gpu.iter().sum(),
        compute_host_bytes: cb.host,
        output_bytes,
        gpu_total_bytes: gpu_total,
        host_total_bytes: host_weights + kv_host + cb.host + output_bytes,
        devices,
        launch: launch::Launch::default(),
    };
    est
}
