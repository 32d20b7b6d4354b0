//! llama.cpp's compute buffers: what `ggml_gallocr` reserves for the worst-case graph
//! (`llama_context::graph_reserve` with `n_tokens = n_ubatch`, every output, and the whole cache as
//! `n_kv`: `llama_kv_cache::init_full`).
//!
//! ggml-alloc frees a tensor after its last consumer and lets in-place-capable ops (softmax, add,
//! mul, rope, norm) reuse their input, so the buffer is the largest set of tensors alive at once.
//! The stages whose live sets decide it, all f32 (`T` = ubatch tokens):
//! - **input** (host buffer): two `n_embd × T` embedding inputs (`inp_embd` and the embeddings
//!   branch of current builds; one before late 2025), the f32 KQ masks `n_kv × T` (one per cache:
//!   full and SWA), token, position and output-id vectors (`T` each).
//! - **attention**: this ubatch's Q, K and V and the attention output; without flash attention also
//!   `kq = n_kv × T × n_head` (softmax in place). The device's copy of the masks (f16 under flash
//!   attention) is alive through all its layers.
//! - **FFN**: gate, up and their product `n_ff × T` each; MoE: the same per used expert
//!   (`n_ff_exp × n_expert_used × T`), the router logits and the expert outputs.
//! - **output**: the normed hidden state `n_embd × T` and the logits `n_vocab × T`.
//! - two `n_embd × T` residual tensors alive around every layer stage.
//!
//! Ops whose weights sit in host memory (layers past `-ngl`, experts kept on the CPU, a CPU output
//! layer) run on the first GPU when the batch is ≥ 32 tokens (`op_offload`, on by default): the
//! scheduler copies the weight (and a CPU layer's K and V) into that GPU's compute buffer.
//!
//! Calibrated against printed buffers in docs/accuracy.md §llama.cpp, where the error is stated.

use super::cache::{pad_to, CacheCells};
use super::model::{LayerCacheKind, LlamaLayer, LlamaModel};
use super::placement::{Dev, Placement};

/// `GGML_KQ_MASK_PAD`: the mask's token dimension was padded to 64 until 2026; current builds do
/// not pad (1).
pub const KQ_MASK_PAD: u64 = 1;

/// Smallest batch for which a GPU backend takes an op whose weights are in host memory
/// (`ggml_backend_cuda_device_offload_op`: `min_batch_size = 32`).
pub const OP_OFFLOAD_MIN_BATCH: u64 = 32;

/// The reserved graph's shape.
#[derive(Clone, Copy, Debug)]
pub struct GraphShape {
    /// Tokens of the worst-case ubatch.
    pub n_tokens: u64,
    /// Outputs of the worst-case ubatch (logits rows).
    pub n_outputs: u64,
    /// Flash attention.
    pub flash_attn: bool,
    /// `op_offload`.
    pub op_offload: bool,
}

/// Compute buffers: one per GPU and the host's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ComputeBuffers {
    /// Per GPU.
    pub gpu: Vec<u64>,
    /// Host (`CUDA_Host` / `CPU compute buffer`).
    pub host: u64,
}

const F32: u64 = 4;

fn mask_bytes(n_kv: u64, t: u64, elem: u64) -> u64 {
    n_kv.saturating_mul(pad_to(t, KQ_MASK_PAD))
        .saturating_mul(elem)
}

/// Live bytes of a layer's peak stage (attention or FFN, with the residual stream), without the
/// masks and without copies of host-resident inputs.
fn layer_stage(model: &LlamaModel, layer: &LlamaLayer, cells: &CacheCells, g: &GraphShape) -> u64 {
    let t = g.n_tokens;
    let resid = model.n_embd.saturating_mul(t).saturating_mul(F32);
    let base = resid.saturating_mul(2);
    let attention = match layer.cache {
        LayerCacheKind::Attention {
            k_elements,
            v_elements,
            swa,
        } if layer.n_head > 0 => {
            let n_kv = if swa { cells.n_kv_swa } else { cells.n_kv };
            let q = layer
                .head_dim_k
                .saturating_mul(layer.n_head)
                .saturating_mul(t)
                .saturating_mul(F32);
            let out = layer
                .head_dim_v
                .saturating_mul(layer.n_head)
                .saturating_mul(t)
                .saturating_mul(F32);
            // this ubatch's K and V, alive until stored into the cache
            let kv_cur = k_elements
                .saturating_add(v_elements)
                .saturating_mul(t)
                .saturating_mul(F32);
            let kq = if g.flash_attn {
                0
            } else {
                n_kv.saturating_mul(t)
                    .saturating_mul(layer.n_head)
                    .saturating_mul(F32)
            };
            kq.saturating_add(q)
                .saturating_add(out)
                .saturating_add(kv_cur)
        }
        LayerCacheKind::Recurrent { r_elements, .. } => {
            // the conv input window and the scan output, per token
            r_elements
                .saturating_add(model.n_embd)
                .saturating_mul(t)
                .saturating_mul(F32)
        }
        _ => 0,
    };
    let dense = 3u64
        .saturating_mul(layer.n_ff)
        .saturating_mul(t)
        .saturating_mul(F32);
    let moe = if layer.n_expert > 0 {
        let per_used = layer.n_expert_used.saturating_mul(t).saturating_mul(F32);
        3u64.saturating_mul(layer.n_ff_exp)
            .saturating_mul(per_used)
            .saturating_add(model.n_embd.saturating_mul(per_used))
            .saturating_add(
                2u64.saturating_mul(layer.n_expert)
                    .saturating_mul(t)
                    .saturating_mul(F32),
            )
            .max(
                3u64.saturating_mul(layer.n_ff_shexp)
                    .saturating_mul(t)
                    .saturating_mul(F32),
            )
    } else {
        0
    };
    base.saturating_add(attention.max(dense).max(moe))
}

/// The compute buffers of `model` placed by `p`. `kv_copy_bytes(layer)`: the K and V of one layer
/// (what an offloaded attention op of a CPU-cached layer copies).
pub fn buffers(
    model: &LlamaModel,
    p: &Placement,
    cells: &CacheCells,
    g: &GraphShape,
    n_gpus: usize,
    kv_copy_bytes: impl Fn(&LlamaLayer) -> u64,
) -> ComputeBuffers {
    let t = g.n_tokens;
    let n_gpus = n_gpus.max(1);
    let has_full = model
        .layers
        .iter()
        .any(|l| matches!(l.cache, LayerCacheKind::Attention { swa: false, .. }));
    let has_swa = model
        .layers
        .iter()
        .any(|l| matches!(l.cache, LayerCacheKind::Attention { swa: true, .. }));
    // The KQ masks (one per cache) are f32 graph inputs in host memory; each GPU with attention
    // layers holds its copy (cast to f16 under flash attention).
    let masks = if has_full {
        mask_bytes(cells.n_kv, t, F32)
    } else {
        0
    } + if has_swa {
        mask_bytes(cells.n_kv_swa, t, F32)
    } else {
        0
    };
    let mask_dev = if g.flash_attn { masks / 2 } else { masks };
    let resid = model.n_embd.saturating_mul(t).saturating_mul(F32);
    let offload = g.op_offload && t >= OP_OFFLOAD_MIN_BATCH;
    let mut gpu = vec![0u64; n_gpus];
    let mut host_stage = 0u64;
    let mut gpu_has_layers = vec![false; n_gpus];
    for (il, layer) in model.layers.iter().enumerate() {
        let stage = layer_stage(model, layer, cells, g);
        let weights_dev = p.layer.get(il).copied().unwrap_or(Dev::Cpu);
        let kv_dev = p.kv.get(il).copied().unwrap_or(Dev::Cpu);
        let experts_cpu =
            p.experts_on_cpu.get(il).copied().unwrap_or(false) && layer.expert_bytes > 0;
        match weights_dev {
            Dev::Gpu(d) => {
                let mut copies = 0;
                if experts_cpu && offload {
                    copies = layer.largest_tensor_bytes;
                }
                if kv_dev == Dev::Cpu && offload {
                    copies = copies.saturating_add(kv_copy_bytes(layer));
                }
                gpu[d] = gpu[d].max(stage.saturating_add(copies));
                gpu_has_layers[d] = true;
            }
            Dev::Cpu if offload => {
                // the layer's matmuls run on GPU 0 with their weights (and K, V) copied in
                let mut copies = layer.largest_tensor_bytes;
                if kv_dev == Dev::Cpu {
                    copies = copies.saturating_add(kv_copy_bytes(layer));
                }
                gpu[0] = gpu[0].max(stage.saturating_add(copies));
                gpu_has_layers[0] = true;
            }
            Dev::Cpu => host_stage = host_stage.max(stage),
        }
    }
    for (d, has) in gpu_has_layers.iter().enumerate() {
        if *has {
            gpu[d] = gpu[d].saturating_add(mask_dev);
        }
    }
    let logits = model
        .n_vocab
        .saturating_mul(g.n_outputs)
        .saturating_mul(F32);
    let out_stage = model
        .n_embd
        .saturating_mul(g.n_outputs)
        .saturating_mul(F32)
        .saturating_add(logits);
    match p.output {
        Dev::Gpu(d) => gpu[d] = gpu[d].max(out_stage),
        Dev::Cpu if offload => {
            gpu[0] = gpu[0].max(out_stage.saturating_add(model.output_bytes));
        }
        Dev::Cpu => host_stage = host_stage.max(out_stage),
    }
    let inputs = resid
        .saturating_mul(2)
        .saturating_add(masks)
        .saturating_add(3u64.saturating_mul(t).saturating_mul(4));
    ComputeBuffers {
        gpu,
        host: inputs.saturating_add(host_stage),
    }
}
