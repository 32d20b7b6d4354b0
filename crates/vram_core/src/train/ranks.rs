//! Per-rank memory of a parallel training layout ([`crate::layout::Layout`]): one entry per
//! distinct kind of rank (a pipeline stage; ranks inside a TP / CP / EP / DP group hold the same
//! bytes), with the model states each holds, the activations of the micro-batches it has in flight,
//! its communication buffers and the three totals.
//!
//! Sources (docs/formulas/parallel.md explains each term):
//! - Parameters per rank: the tensor inventory split as Megatron-core splits it — attention and MLP
//!   projections by `tp` (column/row parallel), the vocabulary by `tp` after padding to a multiple of
//!   `128 · tp` (megatron/training/tokenizer `_vocab_size_with_padding`,
//!   `--make-vocab-size-divisible-by 128`), routed experts by `ep · etp`, norms and routers
//!   replicated; layers by pipeline stage, the embedding on the first stage and the final norm and
//!   output layer on the last; with tied embeddings and `pp > 1` the last stage keeps its own copy
//!   of the word embedding (`LanguageModule.setup_embeddings_and_output_layer`, kept in sync by an
//!   all-reduce of its gradient).
//! - Megatron bytes per parameter: bf16 weight 2 + fp32 main gradient 4 (bf16 forces
//!   `accumulate_allreduce_grads_in_fp32`) + fp32 master 4 + Adam 8 = 18, or
//!   `6 + 12 / (dp · cp)` with the distributed optimizer (megatron/training/
//!   theoretical_memory_usage.py `compute_weight_and_optimizer_memory`).
//! - Activations per layer: the tensors a Transformer-Engine layer saves for backward (layer-norm
//!   input and output, q/k/v, the attention output and its fp32 log-sum-exp, the MLP's fc1 output
//!   and activation output), divided by `tp` where the heads or the MLP width are split and, with
//!   sequence parallel, the layer-norm region too (Korthikanti et al., arXiv 2205.05198, Table 2);
//!   `cp` divides the tokens.
//! - In-flight micro-batches: 1F1B stage `i` of `pp` holds `min(pp − i, m)`; interleaved holds
//!   `(pp − i − 1) · 2 + (vpp − 1) · pp + 1` model-chunk micro-batches
//!   (megatron/core/pipeline_parallel/schedules.py `get_pp_rank_microbatches` warm-up counts).
//! - FSDP2 (`fully_shard` per layer and on the root, torch/distributed/fsdp/_fully_shard/):
//!   sharded parameters, gradients and states over the shard group; the root group (embedding,
//!   final norm, head) gathered through the step, the layer being computed and the one prefetched
//!   (every layer of the stage when `reshard_after_forward=False`); in backward the flat
//!   reduce-scatter input of the largest group. With the HF framework the phases are one GPU's
//!   step rebuilt at the moments FSDP2 peaks ([`hf_fsdp2_phases`]: each group's all-gather output
//!   held until the next all-gather, the root's reduce-scatter at the end). Checked on CPU with
//!   `vram measure --nproc` (docs/measurements/ranks).
//! - NCCL: each communicator a rank joins allocates its own buffers outside PyTorch's allocator
//!   (visible to `nvidia-smi` only): `NCCL_BUFFSIZE` (4 MiB) per channel and connection; 32 such
//!   buffers per communicator are assumed (16 channels, send and receive).

use super::persistent::state_bytes_per_param;
use super::TrainEstimate;
use crate::error::ScenarioError;
use crate::layout::{Framework, Layout, Recompute};
use crate::report::DeviceOverheads;
use crate::scenario::{Dtype, MixedPrecision, Scenario};
use crate::spec::{AttentionSpec, Component, FfnSpec, LayerSpec, ModelKind, ModelSpec};
use serde::{Deserialize, Serialize};

/// NCCL device memory per communicator a rank uses: 32 buffers of `NCCL_BUFFSIZE` = 4 MiB (the
/// default, NCCL env documentation), outside the caching allocator.
pub const NCCL_BYTES_PER_COMMUNICATOR: u64 = 32 * (4 << 20);

/// Megatron's vocabulary padding unit before the TP multiple (`--make-vocab-size-divisible-by`).
pub const MEGATRON_VOCAB_DIVISIBLE_BY: u64 = 128;

/// One kind of rank: the ranks of one pipeline stage (or several identical middle stages).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RankEstimate {
    /// First pipeline stage of this kind (0-based).
    pub stage: u64,
    /// Last pipeline stage of this kind (equal to `stage` unless identical middle stages merge).
    pub last_stage: u64,
    /// What the stage holds besides layers: `embedding`, `head`, `embedding+head`, `layers`.
    pub role: String,
    /// Ranks of this kind inside one stage's TP × CP × EP × DP grid are identical; this is `tp`
    /// (shards of one TP group) — every TP rank holds `1/tp` of the split tensors.
    pub tp_rank_kind: String,
    /// Ranks like this one.
    pub count: u64,
    /// Transformer layers on the rank (per virtual chunk × chunks).
    pub layers: u64,
    /// Parameters the rank holds before data-parallel sharding (its TP/EP/PP shard).
    pub params: u64,
    /// Weights on the GPU.
    pub weights_bytes: u64,
    /// Gradients on the GPU (Megatron's fp32 main gradients; FSDP2's sharded gradients).
    pub gradients_bytes: u64,
    /// Gradients live at the rank's forward and backward peaks: `gradients_bytes`, except under
    /// torchtitan's FSDP2 with a pipeline schedule, which accumulates the stage's unsharded
    /// gradients in the reduce dtype until the last micro-batch (the sharded ones exist only in
    /// the optimizer step).
    pub peak_gradients_bytes: u64,
    /// Optimizer states on the GPU (incl. fp32 master weights).
    pub optimizer_bytes: u64,
    /// Activations saved by the micro-batches in flight when the first backward starts.
    pub activations_bytes: u64,
    /// Micro-batches (model-chunk micro-batches when interleaved) whose activations are in flight.
    pub in_flight_micro_batches: u64,
    /// Communication buffers through the caching allocator at the peak (pipeline send/receive,
    /// TP/SP all-gather output, FSDP2 gathered blocks and reduce-scatter input, MoE dispatch).
    pub communication_bytes: u64,
    /// NCCL's own buffers (outside the allocator; in `device_bytes` only).
    pub nccl_bytes: u64,
    /// Peak of the forward phase (allocated).
    pub forward_peak_bytes: u64,
    /// Peak of the backward phase (allocated).
    pub backward_peak_bytes: u64,
    /// Peak of the optimizer step (allocated).
    pub optimizer_peak_bytes: u64,
    /// Largest phase peak (`torch.cuda.max_memory_allocated`).
    pub peak_allocated_bytes: u64,
    /// Reserved by the caching allocator at the peak.
    pub peak_reserved_bytes: u64,
    /// What `nvidia-smi` shows: reserved + CUDA context + workspace + NCCL.
    pub device_bytes: u64,
    /// `forward`, `backward` or `optimizer`.
    pub peak_phase: String,
    /// Host RAM this rank's process needs for offloaded states.
    pub host_bytes: u64,
}

/// Where a tensor lives and how it is split.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Split {
    /// Split by TP (column/row parallel, vocabulary parallel).
    Tp,
    /// Split by EP · ETP (routed experts).
    Expert,
    /// Replicated on every TP rank.
    Replicated,
}

fn split_of(c: Component) -> Split {
    match c {
        Component::Embedding
        | Component::LmHead
        | Component::Attention
        | Component::Mlp
        | Component::SharedExperts
        | Component::Mixer
        | Component::Bias => Split::Tp,
        Component::Experts => Split::Expert,
        _ => Split::Replicated,
    }
}

/// Local parameter counts of one pipeline stage on one rank.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct StageParams {
    /// Non-expert parameters (sharded by the dense data-parallel group).
    dense: u64,
    /// Routed-expert parameters (sharded by the expert data-parallel group).
    expert: u64,
    /// Largest single layer (local elements): an FSDP2 layer group.
    largest_layer: u64,
    /// Parameters outside the layers (local elements): FSDP2's root group.
    root: u64,
    /// Σ of every unit (the stage's local params).
    has_embedding: bool,
    has_head: bool,
}

fn padded_vocab(vocab: u64, tp: u64, framework: Framework) -> u64 {
    if framework == Framework::Megatron {
        let unit = MEGATRON_VOCAB_DIVISIBLE_BY.saturating_mul(tp.max(1));
        vocab.div_ceil(unit).saturating_mul(unit)
    } else {
        vocab
    }
}

/// Parameters of each pipeline stage on one rank of that stage.
fn stage_params(spec: &ModelSpec, layout: &Layout) -> Vec<StageParams> {
    let stages = layout.stage_layers(spec.layers.len() as u64);
    let pp = stages.len();
    let mut stage_of_layer = Vec::with_capacity(spec.layers.len());
    for (s, &n) in stages.iter().enumerate() {
        stage_of_layer.extend(std::iter::repeat_n(s, n as usize));
    }
    let tp = layout.tp.max(1);
    let experts_div = layout.ep.max(1).saturating_mul(layout.etp().max(1));
    let vpad = padded_vocab(spec.vocab_size, tp, layout.framework);
    let mut out = vec![StageParams::default(); pp];
    let mut per_layer = vec![0u64; spec.layers.len()];
    let local = |t: &crate::spec::TensorSpec| -> u64 {
        let n = t.numel();
        match split_of(t.component) {
            Split::Tp => {
                let n = if matches!(t.component, Component::Embedding | Component::LmHead)
                    && spec.vocab_size > 0
                    && t.shape.first() == Some(&spec.vocab_size)
                {
                    n / spec.vocab_size * vpad
                } else {
                    n
                };
                n.div_ceil(tp)
            }
            Split::Expert => n.div_ceil(experts_div),
            Split::Replicated => n,
        }
    };
    for t in &spec.tensors {
        let n = local(t);
        let expert = split_of(t.component) == Split::Expert;
        match t.layer {
            Some(_) => {
                for l in t.layers() {
                    let Some(&s) = stage_of_layer.get(l as usize) else {
                        continue;
                    };
                    if expert {
                        out[s].expert = out[s].expert.saturating_add(n);
                    } else {
                        out[s].dense = out[s].dense.saturating_add(n);
                    }
                    per_layer[l as usize] = per_layer[l as usize].saturating_add(n);
                }
            }
            None => {
                let s = match t.component {
                    Component::LmHead | Component::FinalNorm | Component::Head => pp - 1,
                    _ => 0,
                };
                out[s].dense = out[s].dense.saturating_add(n);
                out[s].root = out[s].root.saturating_add(n);
                if t.component == Component::Embedding {
                    out[0].has_embedding = true;
                    // Tied output layer on a later stage: its own copy of the word embedding.
                    if spec.tie_word_embeddings && pp > 1 && layout.framework == Framework::Megatron
                    {
                        out[pp - 1].dense = out[pp - 1].dense.saturating_add(n);
                        out[pp - 1].has_head = true;
                    }
                }
                if t.component == Component::LmHead {
                    out[pp - 1].has_head = true;
                }
            }
        }
    }
    out[pp - 1].has_head = true;
    for (l, &n) in per_layer.iter().enumerate() {
        let s = stage_of_layer[l];
        out[s].largest_layer = out[s].largest_layer.max(n);
    }
    out
}

/// Bytes one micro-batch saves for backward in one layer on one rank, and the part of it that one
/// layer's backward needs again as gradient temporaries.
fn layer_activation_bytes(
    layer: &LayerSpec,
    spec: &ModelSpec,
    layout: &Layout,
    tokens: u64,
    e: u64,
    counting: super::Counting,
) -> u64 {
    let h = spec.hidden_size;
    let tp = layout.tp.max(1);
    let sp = if layout.sequence_parallel || layout.framework == Framework::Torchtitan {
        tp
    } else {
        1
    };
    // Layer-norm region: each norm's input and output (the next linear's input).
    let norms = u64::from(layer.attention.is_some() || layer.ssm.is_some())
        + u64::from(layer.ffn.is_some());
    let (norm_region, linear_inputs) = match layout.framework {
        // TE LayerNormLinear saves the norm input and its output, both sequence-parallel shards.
        Framework::Megatron => (norms * 2 * h, 0),
        // torchtitan: RMSNorm input sharded (SequenceParallel), the all-gathered linear input
        // saved whole by the colwise linears.
        _ => (norms * h, norms * h),
    };
    // torchtitan's `nn.RMSNorm` (`F.rms_norm`): on CUDA the fused kernel (`_fused_rms_norm`)
    // saves its input and the fp32 1/rms per token; on CPU the composite op saves the input
    // upcast to fp32, the 1/rms and the fp32 normalized input (for the weight's gradient), in
    // every compute dtype (measured: docs/measurements/ranks).
    let norm_region = if layout.framework == Framework::Torchtitan {
        0
    } else {
        norm_region
    };
    let norm_bytes = if layout.framework == Framework::Torchtitan {
        norms * rms_norm_saved_bytes(h, e, counting)
    } else {
        0
    };
    let local = layout.framework == Framework::Megatron
        && layout.transformer_impl == crate::layout::TransformerImpl::Local;
    let mut sharded = 0u64; // × tokens / tp
    if let Some(a) = layer.attention {
        sharded = sharded.saturating_add(attention_saved(&a));
        if local {
            // legacy ParallelAttention: flash-attn's output rearranged to [s, b, h] contiguous
            // for the dense projection, a second copy of it.
            sharded = sharded.saturating_add(a.num_heads * a.v_head_dim);
        }
    }
    if let Some(s) = layer.ssm {
        // in_proj output (x and z), conv output, dt, and the scan's output: ≈ 5 × d_inner.
        sharded = sharded.saturating_add(5 * s.d_inner);
    }
    let mut expert_bytes = 0u64;
    match layer.ffn {
        Some(FfnSpec::Dense {
            intermediate_size: f,
            gated,
        }) => sharded = sharded.saturating_add(mlp_saved(f, gated, layout.framework, local)),
        Some(FfnSpec::Moe {
            num_experts,
            experts_per_token: k,
            expert_intermediate_size: fe,
            shared_intermediate_size: fs,
            gated,
        }) => {
            if fs > 0 {
                sharded = sharded.saturating_add(mlp_saved(fs, gated, layout.framework, local));
            }
            // Router logits and probabilities in fp32 (E per token), replicated over TP.
            let router = 2 * 4 * num_experts;
            // Routed tokens: every token is processed k times; EP balances them across ranks, so a
            // rank sees tokens·k / sp of them (the expert-tensor group gathers its shards).
            let routed_tokens = (tokens / sp).saturating_mul(k);
            let etp = layout.etp().max(1);
            let per_token = h.saturating_mul(e)
                + mlp_saved(fe, gated, layout.framework, local).saturating_mul(e) / etp;
            expert_bytes = routed_tokens
                .saturating_mul(per_token)
                .saturating_add(tokens.saturating_mul(router) / sp);
        }
        None => {}
    }
    // The dropouts after attention and after the MLP save a 1-byte mask per hidden element
    // (attention dropout runs inside flash attention: nothing saved).
    let dropout_masks = if spec.hidden_dropout > 0.0 || layout.dropout {
        2 * h
    } else {
        0
    };
    let per_token_sp = norm_region
        .saturating_mul(e)
        .saturating_add(dropout_masks)
        .saturating_add(norm_bytes);
    let lse = layer.attention.map_or(0, |a| 4 * a.num_heads);
    tokens
        .saturating_mul(per_token_sp)
        .div_ceil(sp)
        .saturating_add(tokens.saturating_mul(linear_inputs.saturating_mul(e)))
        .saturating_add(
            tokens
                .saturating_mul(sharded.saturating_mul(e).saturating_add(lse))
                .div_ceil(tp),
        )
        .saturating_add(expert_bytes)
}

/// Elements of the word embedding (the vocabulary rows × their width), whole.
fn embedding_elements(spec: &ModelSpec) -> u64 {
    spec.tensors
        .iter()
        .filter(|t| {
            t.component == Component::Embedding && t.shape.first() == Some(&spec.vocab_size)
        })
        .map(|t| t.numel())
        .max()
        .unwrap_or(0)
}

/// Bytes per token that `F.rms_norm` saves of a hidden vector of `h` elements in a compute dtype
/// of `e` bytes: on CUDA the fused kernel's input and fp32 1/rms (`_fused_rms_norm`, whose
/// backward recomputes the normalized input); on CPU the composite op's fp32 upcast input, 1/rms
/// and normalized input `x · rstd` (kept for the weight's gradient).
fn rms_norm_saved_bytes(h: u64, e: u64, counting: super::Counting) -> u64 {
    if counting == super::Counting::CpuExact {
        h.saturating_mul(8).saturating_add(4)
    } else {
        h.saturating_mul(e).saturating_add(4)
    }
}

/// Elements per token the attention core saves: q, k, v, the output (also the output
/// projection's input); MLA also the compressed latents.
fn attention_saved(a: &AttentionSpec) -> u64 {
    match a.mla {
        Some(m) => {
            let qk = m.qk_nope_head_dim + m.qk_rope_head_dim;
            a.num_heads * (2 * qk + 2 * a.v_head_dim)
                + m.kv_lora_rank
                + m.qk_rope_head_dim
                + m.q_lora_rank.unwrap_or(0)
        }
        None => a.num_heads * a.head_dim * 2 + a.num_kv_heads * (a.head_dim + a.v_head_dim),
    }
}

/// Elements per token an MLP of width `f` saves: TE's fused SwiGLU keeps fc1's output (2f) and its
/// activation output (f); Megatron's local `silu(x0) * x1` and torchtitan's
/// `w2(silu(w1 x) * w3 x)` keep fc1's (w1's and w3's) outputs, silu's output and the product (4f);
/// a plain MLP keeps fc1's output and the activation (2f).
fn mlp_saved(f: u64, gated: bool, framework: Framework, local: bool) -> u64 {
    match (gated, framework) {
        (true, Framework::Megatron) if !local => 3 * f,
        (true, _) => 4 * f,
        (false, _) => 2 * f,
    }
}

/// In-flight (model-chunk) micro-batches of stage `i` (Megatron schedules.py warm-up + 1, capped
/// by the micro-batches of the step).
fn in_flight(layout: &Layout, stage: u64, micro_batches: u64) -> u64 {
    let pp = layout.pp.max(1);
    let vpp = layout.vpp.max(1);
    if pp == 1 {
        return 1;
    }
    if vpp == 1 {
        (pp - stage).min(micro_batches).max(1)
    } else {
        let warmup = (pp - stage - 1) * 2 + (vpp - 1) * pp;
        (warmup + 1).min(micro_batches.saturating_mul(vpp)).max(1)
    }
}

/// Per-rank figures of a parallel layout. `single` is the HF estimate of the same scenario on one
/// GPU (its activation figures are the HF framework's per-rank activations, which data
/// parallelism does not change); the other frameworks do not read it (pass `None`).
pub fn ranks(
    spec: &ModelSpec,
    scenario: &Scenario,
    overheads: &DeviceOverheads,
    single: Option<&TrainEstimate>,
    counting: super::Counting,
) -> Result<Vec<RankEstimate>, ScenarioError> {
    let layout = &scenario.layout;
    let empty = TrainEstimate::default();
    let single = single.unwrap_or(&empty);
    layout.validate(scenario.gpus, Some(spec))?;
    if layout.framework != Framework::Hf {
        if spec.kind != ModelKind::DecoderOnly {
            return Err(ScenarioError::Invalid {
                field: "framework".into(),
                expected: "a decoder-only model for megatron / torchtitan layouts (encoder-decoder and encoder models train with --framework hf)".into(),
                found: format!("{:?}", spec.kind),
            });
        }
        if scenario.lora.is_some() {
            return Err(ScenarioError::Invalid {
                field: "lora".into(),
                expected: "no LoRA with --framework megatron / torchtitan (LoRA is modelled for HF peft: --framework hf)".into(),
                found: "LoRA".into(),
            });
        }
        if scenario.zero.0 > 0 {
            return Err(ScenarioError::Invalid {
                field: "zero".into(),
                expected:
                    "ZeRO 0 with megatron / torchtitan (use --distributed-optimizer or --fsdp2)"
                        .into(),
                found: format!("ZeRO stage {}", scenario.zero.0),
            });
        }
    }
    let gpus = scenario.gpus.max(1);
    let dp = layout.dp(gpus);
    let m = layout.micro_batches(gpus, scenario.batch, scenario.grad_accumulation);
    let stages = stage_params(spec, layout);
    let stage_layers = layout.stage_layers(spec.layers.len() as u64);
    let half = scenario.mixed_precision != MixedPrecision::None || scenario.dtype != Dtype::Fp32;
    let e: u64 = if half { 2 } else { 4 };
    let tokens = scenario
        .batch
        .saturating_mul(scenario.seq_len)
        .div_ceil(layout.cp.max(1));
    let tp = layout.tp.max(1);
    let sp = if layout.sequence_parallel || layout.framework == Framework::Torchtitan {
        tp
    } else {
        1
    };
    let vpad = padded_vocab(spec.vocab_size, tp, layout.framework);
    let recompute = if scenario.grad_checkpointing {
        Recompute::Full
    } else {
        layout.recompute
    };
    let nccl = nccl_bytes(layout, gpus);

    let mut out: Vec<RankEstimate> = Vec::new();
    let mut first_layer = 0usize;
    for (i, sp_params) in stages.iter().enumerate() {
        let n_layers = stage_layers[i] as usize;
        let layer_specs = &spec.layers[first_layer..first_layer + n_layers];
        first_layer += n_layers;
        let params = sp_params.dense.saturating_add(sp_params.expert);

        // ---- model states ----
        let (weights, grads, states, temp, gathered, reduce_scatter, host) = match layout.framework
        {
            Framework::Megatron => {
                let (w, g, master) = if half { (2, 4, 4) } else { (4, 4, 0) };
                let per_state = state_bytes_per_param(scenario.optimizer, 4).ceil() as u64 + master;
                let opt = if layout.distributed_optimizer {
                    let dense_group = dp.saturating_mul(layout.cp.max(1));
                    (sp_params.dense.saturating_mul(per_state)).div_ceil(dense_group)
                        + (sp_params.expert.saturating_mul(per_state))
                            .div_ceil(layout.expert_dp(gpus))
                } else {
                    params.saturating_mul(per_state)
                };
                let opt = if scenario.offload_optimizer { 0 } else { opt };
                (
                    params.saturating_mul(w),
                    params.saturating_mul(g),
                    opt,
                    0,
                    0,
                    0,
                    if scenario.offload_optimizer {
                        params.saturating_mul(per_state)
                    } else {
                        0
                    },
                )
            }
            _ => {
                // FSDP2 shards over dp (÷ HSDP replicas) × cp; plain DDP when fsdp2 is off.
                let shard = if layout.fsdp2 {
                    (dp / layout.hsdp_replicas.max(1))
                        .saturating_mul(layout.cp.max(1))
                        .max(1)
                } else {
                    1
                };
                let pe = if scenario.dtype == Dtype::Fp32 { 4 } else { 2 };
                let (w, g, st, temp) = if layout.framework == Framework::Hf {
                    // The HF model states (LoRA, quantized bases, foreach AdamW's temporary)
                    // of one GPU, sharded. Under transformers' TP the embedding's gradient comes
                    // out whole (`hf_tp`), but FSDP2's reduce-scatter leaves every gradient
                    // sharded like its parameter (full training: as many bytes as the weights).
                    let grads_one = if tp > 1 && layout.fsdp2 {
                        single.weights_bytes
                    } else {
                        single.gradients_bytes
                    };
                    (
                        single.weights_bytes.div_ceil(shard),
                        grads_one.div_ceil(shard),
                        single.optimizer_bytes.div_ceil(shard),
                        single.optimizer_temp_bytes.div_ceil(shard),
                    )
                } else {
                    // torchtitan: parameters, gradients and states in the parameter dtype, fused
                    // AdamW (no step temporary).
                    let states_per = state_bytes_per_param(scenario.optimizer, pe).ceil() as u64;
                    (
                        params.saturating_mul(pe).div_ceil(shard),
                        params.saturating_mul(pe).div_ceil(shard),
                        params.saturating_mul(states_per).div_ceil(shard),
                        0,
                    )
                };
                // Unsharded parameters while a group computes: the root group (embedding,
                // final norm, head — `fully_shard(model)`) is gathered at the start of forward and,
                // the head using the embedding again at the end, stays gathered through forward and
                // backward; each layer group is gathered for its forward and again for its
                // backward, with the next one prefetched (two layers). torchtitan gathers in bf16
                // (`MixedPrecisionPolicy(param_dtype=bfloat16)`), HF without a policy in the
                // parameters' dtype. Without resharding after forward every layer stays gathered.
                let unsharded = if layout.framework == Framework::Hf {
                    single.param_bytes.max(1)
                } else {
                    e
                };
                let layer = sp_params.largest_layer;
                let gathered = if !layout.fsdp2 {
                    0
                } else if layout.reshard_after_forward {
                    sp_params
                        .root
                        .saturating_add(layer.saturating_mul(2))
                        .saturating_mul(unsharded)
                } else {
                    params.saturating_mul(unsharded)
                };
                // Backward: the flat reduce-scatter input of the largest group (fp32 in torchtitan,
                // the gradients' dtype in HF); the unsharded gradients themselves are the
                // one-GPU walk's (HF) or one layer's activations' worth (torchtitan). DDP instead
                // keeps a flat bucket copy of all gradients.
                let reduce_bytes = if layout.framework == Framework::Hf {
                    pe
                } else {
                    4
                };
                let rs = if layout.fsdp2 {
                    sp_params.root.max(layer).saturating_mul(reduce_bytes)
                } else if dp > 1 {
                    g
                } else {
                    0
                };
                // torchtitan's vocabulary-parallel embedding (`RowwiseParallel` on `nn.Embedding`)
                // computes its gradient whole (a `Replicate` DTensor); without FSDP2's
                // reduce-scatter that whole gradient is the `.grad`, and the optimizer step
                // redistributes it to the weight's row shard (a copy of this rank's rows).
                let (g, temp) = if layout.framework == Framework::Torchtitan
                    && tp > 1
                    && !layout.fsdp2
                    && sp_params.has_embedding
                {
                    let whole = embedding_elements(spec).saturating_mul(pe);
                    (
                        g.saturating_add(whole - whole / tp),
                        temp.saturating_add(whole / tp),
                    )
                } else {
                    (g, temp)
                };
                (w, g, st, temp, gathered, rs, 0)
            }
        };

        // ---- activations ----
        let flight = in_flight(layout, i as u64, m);
        let (acts, layer_peak, kept_per_micro, head_acts) = if layout.framework == Framework::Hf {
            // The single-GPU walk's activations per rank (its phases, in `hf_fsdp2_phases` or
            // the tensor-parallel part's, give the peaks).
            (single.activations_bytes, 0, 0, 0)
        } else {
            let per_layer: Vec<u64> = layer_specs
                .iter()
                .map(|l| layer_activation_bytes(l, spec, layout, tokens, e, counting))
                .collect();
            let largest = per_layer.iter().copied().max().unwrap_or(0);
            let stage_full: u64 = per_layer.iter().copied().fold(0, u64::saturating_add);
            let layer_input = tokens.saturating_mul(spec.hidden_size).saturating_mul(e) / sp;
            let kept_per_micro = match recompute {
                Recompute::Full => layer_input.saturating_mul(n_layers as u64),
                _ => stage_full,
            };
            let kept_per_chunk = kept_per_micro / layout.vpp.max(1);
            let mut acts = if layout.vpp > 1 {
                kept_per_chunk.saturating_mul(flight)
            } else {
                kept_per_micro.saturating_mul(flight)
            };
            let flight_micro = if layout.vpp > 1 {
                flight.div_ceil(layout.vpp)
            } else {
                flight
            };
            let mut head_acts = 0;
            if sp_params.has_embedding {
                // Token ids (int64) of each in-flight micro-batch.
                acts = acts.saturating_add(tokens.saturating_mul(8).saturating_mul(flight_micro));
            }
            if sp_params.has_head && i == stages.len() - 1 {
                // Final norm's input and output, and the cross-entropy's fp32 softmax over the
                // vocabulary shard (vocab_parallel_cross_entropy saves exp(logits); torchtitan's
                // loss-parallel log_softmax its output).
                let h = spec.hidden_size;
                let final_norm = if layout.framework == Framework::Torchtitan {
                    // input (sequence shard), 1/rms, the CPU op's normalized input, and the
                    // output layer's input gathered whole
                    tokens
                        .saturating_mul(rms_norm_saved_bytes(h, e, counting))
                        .div_ceil(sp)
                        .saturating_add(tokens.saturating_mul(h * e))
                } else {
                    tokens.saturating_mul(2 * h * e) / sp
                };
                head_acts =
                    final_norm.saturating_add(tokens.saturating_mul(vpad).saturating_mul(4) / tp);
                acts = acts.saturating_add(head_acts);
            }
            // One layer's backward: gradients of what it saved; under full recompute the layer's
            // activations are rebuilt first.
            let layer_peak = match recompute {
                Recompute::Full => largest.saturating_mul(2),
                _ => largest,
            };
            (acts, layer_peak, kept_per_micro, head_acts)
        };

        // ---- communication through the allocator ----
        let p2p = if layout.pp > 1 {
            // Receive buffers of the activation (forward) and its gradient (backward).
            tokens.saturating_mul(spec.hidden_size).saturating_mul(e) / sp * 2
        } else {
            0
        };
        let tp_gather = if tp > 1 && sp > 1 {
            tokens.saturating_mul(spec.hidden_size).saturating_mul(e)
        } else {
            0
        };
        // Ring context parallelism: K/V blocks received from the neighbour, double-buffered
        // (TE attention with cp_comm_type p2p).
        let cp_kv = if layout.cp > 1 {
            layer_specs
                .iter()
                .filter_map(|l| l.attention)
                .map(|a| {
                    tokens
                        .saturating_mul(a.num_kv_heads * (a.head_dim + a.v_head_dim))
                        .saturating_mul(e)
                        .saturating_mul(2)
                        / tp
                })
                .max()
                .unwrap_or(0)
        } else {
            0
        };
        let comm = p2p
            .saturating_add(tp_gather)
            .saturating_add(gathered)
            .saturating_add(cp_kv);
        let persistent = weights.saturating_add(grads).saturating_add(states);
        // The last stage's logits, in the compute dtype and as one fp32 tensor; torchtitan's loss
        // backward in fp32 beyond the saved log-softmax: loss parallel's decomposed NLL gradient
        // (a zeroed gradient, the `exp` of the saved output and their sum) under TP, the fused
        // kernels' two tensors otherwise (traced on CPU)
        let titan = layout.framework == Framework::Torchtitan;
        let head = sp_params.has_head && i == stages.len() - 1;
        let logits_bytes = if head {
            tokens.saturating_mul(vpad).saturating_mul(e) / tp
        } else {
            0
        };
        let logits_fp32 = if head {
            tokens.saturating_mul(vpad).saturating_mul(4) / tp
        } else {
            0
        };
        let titan_loss_grad = logits_fp32.saturating_mul(if tp > 1 { 3 } else { 2 });
        // torchtitan's FSDP2 under a pipeline schedule: the stage stays unsharded (FSDP2's
        // all-gather outputs, shown as communication buffers) with its gradient accumulators (the
        // gradients live at the peak), both held across the micro-batches
        let titan_pipeline_fsdp2 = (titan && layout.fsdp2 && layout.pp > 1).then(|| {
            let gather = if half { 2 } else { 4 };
            // the stage's largest tensor: a vocabulary matrix on the first and last
            // stages, else the largest layer tensor (TP-split)
            let largest_tensor = if sp_params.has_embedding || head {
                embedding_elements(spec).div_ceil(tp)
            } else {
                spec.tensors
                    .iter()
                    .filter(|t| t.layer.is_some())
                    .map(|t| t.numel())
                    .max()
                    .unwrap_or(0)
                    .div_ceil(tp)
            };
            let reduce = if half { 4 } else { gather };
            TitanPipelineFsdp2 {
                unsharded_bytes: params.saturating_mul(gather),
                grad_accumulator_bytes: params.saturating_mul(reduce),
                largest_grad_bytes: largest_tensor.saturating_mul(gather + reduce),
            }
        });
        let (forward, backward, optimizer) = if layout.framework == Framework::Hf && layout.fsdp2 {
            // HF with FSDP2: one GPU's step at FSDP2's moments with its gathered groups.
            let unsharded = single.param_bytes.max(1);
            hf_fsdp2_phases(
                single,
                Fsdp2Groups {
                    root_bytes: sp_params.root.saturating_mul(unsharded),
                    layer_bytes: sp_params.largest_layer.saturating_mul(unsharded),
                    root_grad_bytes: if scenario.lora.is_some() {
                        0
                    } else {
                        sp_params.root.saturating_mul(unsharded)
                    },
                    // transformers' TP computes the embedding's gradient whole (`hf_tp`); the
                    // rows beyond this rank's, and this rank's rows copied out of it
                    // (`Redistribute` to the parameter's placement) before the reduce-scatter
                    embedding_grad_extra_bytes: if tp > 1 {
                        single.gradients_bytes.saturating_sub(single.weights_bytes)
                    } else {
                        0
                    },
                    tp,
                    // without resharding after forward every layer stays gathered until its
                    // backward
                    kept_layers_bytes: if layout.reshard_after_forward {
                        0
                    } else {
                        params
                            .saturating_sub(sp_params.root)
                            .saturating_sub(sp_params.largest_layer)
                            .saturating_mul(unsharded)
                    },
                    shard: (dp / layout.hsdp_replicas.max(1))
                        .saturating_mul(layout.cp.max(1))
                        .max(1),
                    gloo: counting == super::Counting::CpuExact,
                },
                (weights, grads, states, temp),
            )
        } else if titan && layout.fsdp2 {
            let gather = if half { 2 } else { 4 };
            let embedding = if sp_params.has_embedding {
                embedding_elements(spec).div_ceil(tp)
            } else {
                0
            };
            titan_fsdp2_phases(TitanFsdp2 {
                base: weights.saturating_add(states),
                grads,
                layer_acts: acts.saturating_sub(head_acts),
                head_acts,
                logits: logits_bytes,
                logits_fp32: if e != 4 { logits_fp32 } else { 0 },
                embedding_bytes: embedding.saturating_mul(gather),
                layer_bytes: sp_params.largest_layer.saturating_mul(gather),
                head_bytes: sp_params
                    .root
                    .saturating_sub(embedding)
                    .saturating_mul(gather),
                kept_layers_bytes: if layout.reshard_after_forward {
                    0
                } else {
                    params
                        .saturating_sub(sp_params.root)
                        .saturating_sub(sp_params.largest_layer)
                        .saturating_mul(gather)
                },
                // MixedPrecisionPolicy(reduce_dtype=float32): the reduce-scatter runs in fp32
                reduce_per_gather: if half { 2 } else { 1 },
                shard: (dp / layout.hsdp_replicas.max(1))
                    .saturating_mul(layout.cp.max(1))
                    .max(1),
                gloo: counting == super::Counting::CpuExact,
                temp,
                layer_peak,
                loss_grad: titan_loss_grad,
                pipeline: titan_pipeline_fsdp2,
            })
        } else if layout.framework == Framework::Hf {
            // transformers' tensor parallelism (the other HF layout that gets here): the rank runs
            // the one-GPU step of its part of the model (`hf_tp`), whose steady-state phases are
            // its figures.
            (
                super::parallel::phase_peak(&single.phases, &["forward_2"]),
                super::parallel::phase_peak(&single.phases, &["backward_2"]),
                super::parallel::phase_peak(&single.phases, &["optimizer_2"]),
            )
        } else {
            // Megatron / torchtitan: the last stage's logits in forward, the cross-entropy's
            // gradient or one layer's backward (whichever is larger) beside the reduce buffers.
            let logits_transient = if titan {
                // torchtitan's loss: `pred.float()` (a copy under mixed precision); under TP
                // loss parallel's log-softmax is DTensor's decomposed one: the shifted logits
                // and their `exp` live at once, one fp32 tensor more than the saved output
                // counted in the activations (the fused CPU / CUDA kernel has none)
                let copy = if e == 4 { 0 } else { logits_fp32 };
                let parallel = if tp > 1 { logits_fp32 } else { 0 };
                logits_bytes.saturating_add(copy).saturating_add(parallel)
            } else {
                logits_bytes
            };
            let ce_grad = if titan { titan_loss_grad } else { logits_fp32 };
            // torch.distributed.pipelining's stage keeps its forward output (the last stage's
            // logits) until that micro-batch's backward is done
            let held_output = if titan && layout.pp > 1 {
                logits_bytes
            } else {
                0
            };
            // torchtitan with several micro-batches per step (a pipeline schedule, or gradient
            // accumulation) and no FSDP2: after the first micro-batch every parameter's gradient
            // is computed into a new tensor and then added to `.grad`. The output layer's (its
            // vocabulary shard) comes first in a micro-batch's backward, beside all its
            // activations; the embedding's (whole under TP) comes last, beside the other
            // in-flight micro-batches' activations only.
            let backward_accumulating = if titan && m > 1 && !layout.fsdp2 {
                let pe = if scenario.dtype == Dtype::Fp32 { 4 } else { 2 };
                let vocab_grad = embedding_elements(spec).saturating_mul(pe);
                let base = persistent.saturating_add(comm);
                let output_layer = if head {
                    base.saturating_add(acts)
                        .saturating_add(held_output)
                        .saturating_add(vocab_grad / tp)
                } else {
                    0
                };
                let embedding = if sp_params.has_embedding {
                    base.saturating_add(acts.saturating_sub(kept_per_micro))
                        .saturating_add(vocab_grad)
                } else {
                    0
                };
                output_layer.max(embedding)
            } else {
                0
            };
            // torchtitan's `train_step` opens with `zero_grad`: with one micro-batch, forward and
            // the start of backward run without gradients (Megatron keeps its main-gradient
            // buffer allocated)
            let no_grads_yet = titan && m == 1;
            let before_grads = if no_grads_yet {
                persistent.saturating_sub(grads)
            } else {
                persistent
            };
            (
                before_grads
                    .saturating_add(comm)
                    .saturating_add(acts)
                    .saturating_add(logits_transient),
                if no_grads_yet {
                    // the activations and the loss's gradient first, every gradient (and no
                    // activation) at the end
                    before_grads
                        .saturating_add(comm)
                        .saturating_add(acts)
                        .saturating_add(layer_peak.max(ce_grad))
                        .max(persistent.saturating_add(comm))
                } else {
                    persistent
                        .saturating_add(comm)
                        .saturating_add(acts)
                        .saturating_add(held_output)
                        .saturating_add(layer_peak.max(ce_grad).max(reduce_scatter))
                }
                .max(backward_accumulating),
                persistent.saturating_add(temp),
            )
        };
        let (peak_phase, peak) = [
            ("forward", forward),
            ("backward", backward),
            ("optimizer", optimizer),
        ]
        .into_iter()
        .fold(("forward", 0u64), |a, x| if x.1 > a.1 { x } else { a });
        let groups = n_layers as u64 + 2;
        let reserved = super::allocator::reserved_for_groups(peak, groups);
        let device = reserved
            .saturating_add(overheads.cuda_context_bytes)
            .saturating_add(overheads.workspace_bytes)
            .saturating_add(nccl);
        let role = match (
            sp_params.has_embedding,
            sp_params.has_head && i == stages.len() - 1,
        ) {
            (true, true) => "embedding+head",
            (true, false) => "embedding",
            (false, true) => "head",
            (false, false) => "layers",
        };
        let rank = RankEstimate {
            stage: i as u64,
            last_stage: i as u64,
            role: role.into(),
            tp_rank_kind: if tp > 1 {
                format!("each of {tp} TP shards")
            } else {
                "whole layers".into()
            },
            count: gpus / layout.pp.max(1),
            layers: n_layers as u64,
            params,
            weights_bytes: weights,
            gradients_bytes: grads,
            optimizer_bytes: states,
            activations_bytes: acts,
            in_flight_micro_batches: flight,
            peak_gradients_bytes: titan_pipeline_fsdp2
                .as_ref()
                .map_or(grads, |p| p.grad_accumulator_bytes),
            // under torchtitan's PP × FSDP2 the peaks hold the unsharded stage and no other
            // buffer (`titan_fsdp2_phases`)
            communication_bytes: titan_pipeline_fsdp2
                .as_ref()
                .map_or(comm.saturating_add(reduce_scatter), |p| p.unsharded_bytes),
            nccl_bytes: nccl,
            forward_peak_bytes: forward,
            backward_peak_bytes: backward,
            optimizer_peak_bytes: optimizer,
            peak_allocated_bytes: peak,
            peak_reserved_bytes: reserved,
            device_bytes: device,
            peak_phase: peak_phase.into(),
            host_bytes: host,
        };
        // Identical consecutive middle stages merge into one kind.
        let same = |a: &RankEstimate, b: &RankEstimate| {
            (
                a.role.as_str(),
                a.layers,
                a.params,
                a.activations_bytes,
                a.peak_allocated_bytes,
            ) == (
                b.role.as_str(),
                b.layers,
                b.params,
                b.activations_bytes,
                b.peak_allocated_bytes,
            )
        };
        match out.last_mut() {
            Some(prev) if same(prev, &rank) => {
                prev.last_stage = rank.stage;
                prev.count = prev.count.saturating_add(rank.count);
            }
            _ => out.push(rank),
        }
    }
    Ok(out)
}

/// The FSDP2 groups of one HF rank: `fully_shard` on every decoder layer, then on the root.
struct Fsdp2Groups {
    /// The root group unsharded (embedding, final norm, an untied `lm_head`), in the parameters'
    /// dtype (HF runs FSDP2 without a mixed-precision policy).
    root_bytes: u64,
    /// The largest layer group unsharded.
    layer_bytes: u64,
    /// The root group's gradients, unsharded until its reduce-scatter at the very end (0 under
    /// LoRA: the root's parameters are frozen).
    root_grad_bytes: u64,
    /// Under transformers' TP: the embedding's whole gradient beyond this rank's rows.
    embedding_grad_extra_bytes: u64,
    /// The TP size (1 without TP).
    tp: u64,
    /// `reshard_after_forward=False`: the other layers' unsharded parameters, kept from their
    /// forward to their backward (0 with the default resharding).
    kept_layers_bytes: u64,
    /// Ranks each group is sharded over.
    shard: u64,
    /// gloo (CPU): `_allgather_base_` and `_reduce_scatter_base_` go through a temporary of the
    /// gathered (input) size; NCCL writes in place.
    gloo: bool,
}

/// Steady-state forward, backward and optimizer peaks of one HF rank under FSDP2
/// (`reshard_after_forward=True`), from one GPU's step of the same model (`single`) and the rank's
/// sharded states `(weights, gradients, optimizer, optimizer temporary)`. Traced on CPU with
/// torch 2.15's profiler (docs/formulas/parallel.md §FSDP2 with HF): FSDP2 holds each group's
/// all-gather output until the next group's all-gather, and the root group (gathered first, used
/// again by the head) stays unsharded until backward ends. So
/// - forward peaks either when the first layer gathers, with the root's parameters and its held
///   all-gather output (2 × root + layer), or at the loss, with the root and the last layer's held
///   output beside one GPU's activations and loss;
/// - backward peaks at the cross-entropy's backward (root, the prefetched last layer) or at the
///   embedding's backward, the end: every layer's gradient is sharded by then, the root's are
///   whole beside a tied embedding's second gradient, and the last reduce-scatter's input is held;
///   where one GPU peaks inside the layers, its peak with the layers' gradients sharded and two
///   gathered layers;
/// - the optimizer step is the sharded states and temporary.
fn hf_fsdp2_phases(
    single: &TrainEstimate,
    g: Fsdp2Groups,
    (weights, grads, states, temp): (u64, u64, u64, u64),
) -> (u64, u64, u64) {
    let base = weights
        .saturating_add(states)
        .saturating_add(single.buffers_bytes);
    let one_base = single
        .weights_bytes
        .saturating_add(single.optimizer_bytes)
        .saturating_add(single.buffers_bytes);
    let (root, layer, kept) = (g.root_bytes, g.layer_bytes, g.kept_layers_bytes);
    let gloo = if g.gloo { layer } else { 0 };
    let one_forward = super::parallel::phase_peak(&single.phases, &["forward_2"]);
    let forward_transient = one_forward.saturating_sub(one_base);
    let forward = [
        // the first layer's all-gather: the root's parameters and its held all-gather output
        base.saturating_add(root.saturating_mul(2))
            .saturating_add(layer)
            .saturating_add(gloo),
        // the loss: the root and the last layer's held output beside one GPU's activations
        base.saturating_add(root)
            .saturating_add(layer)
            .saturating_add(kept)
            .saturating_add(forward_transient),
        // the last layer's all-gather beside (about) every saved activation
        base.saturating_add(root)
            .saturating_add(single.activations_bytes)
            .saturating_add(layer.saturating_mul(2))
            .saturating_add(kept)
            .saturating_add(gloo),
    ]
    .into_iter()
    .max()
    .unwrap_or(0);
    let m = single.backward_moments;
    let extra = g.embedding_grad_extra_bytes;
    let layer_grads_one = m
        .gradients_bytes
        .saturating_sub(g.root_grad_bytes)
        .saturating_sub(extra);
    // the layers' gradients on this rank: its shard of everything but the root's
    let layer_grads_sharded = layer_grads_one.div_ceil(g.shard);
    let end = base
        .saturating_add(root)
        .saturating_add(layer)
        .saturating_add(m.end_bytes.saturating_sub(layer_grads_one))
        .saturating_add(layer_grads_sharded)
        .saturating_add(extra / g.tp.saturating_sub(1).max(1));
    let start = base
        .saturating_add(root)
        .saturating_add(layer)
        .saturating_add(kept)
        .saturating_add(m.start_bytes);
    let one_backward = super::parallel::phase_peak(&single.phases, &["backward_2"]);
    let one_backward_transient = one_backward.saturating_sub(one_base);
    let inside = if one_backward_transient > m.end_bytes.max(m.start_bytes) {
        base.saturating_add(root)
            .saturating_add(layer.saturating_mul(2))
            .saturating_add(kept)
            .saturating_add(gloo)
            .saturating_add(one_backward_transient.saturating_sub(layer_grads_one))
            .saturating_add(layer_grads_sharded)
    } else {
        0
    };
    // the root's reduce-scatter after the end: its flat input copied from the whole gradients
    // (both live), then the sharded output beside the input (and gloo's clone of the input)
    let root_grads = g.root_grad_bytes;
    let root_reduce = base
        .saturating_add(layer_grads_sharded)
        .saturating_add(root_grads)
        .saturating_add(
            root_grads.max(root_grads.div_ceil(g.shard).saturating_add(if g.gloo {
                root_grads
            } else {
                0
            })),
        );
    let backward = start.max(end).max(inside).max(root_reduce);
    let optimizer = weights
        .saturating_add(grads)
        .saturating_add(states)
        .saturating_add(temp)
        .saturating_add(single.buffers_bytes);
    (forward, backward, optimizer)
}

/// The FSDP2 groups and tensors of one torchtitan rank (`apply_fsdp`: `fully_shard` on the
/// embedding, on every block, on `[norm, output]` together, then on the root, with
/// `MixedPrecisionPolicy(param_dtype, reduce_dtype=float32)`). Group bytes are unsharded, in the
/// all-gather dtype.
struct TitanFsdp2 {
    /// Sharded weights and optimizer states (no gradients: `zero_grad` opens each step).
    base: u64,
    /// Sharded gradients (fp32 masters' dtype) after the step's reduce-scatters.
    grads: u64,
    /// The blocks' saved activations.
    layer_acts: u64,
    /// The final norm's and the loss's saved tensors.
    head_acts: u64,
    /// The logits in the compute dtype, and their fp32 copy for the loss under mixed precision.
    logits: u64,
    logits_fp32: u64,
    embedding_bytes: u64,
    layer_bytes: u64,
    head_bytes: u64,
    /// Every other block kept unsharded (`reshard_after_forward=False`).
    kept_layers_bytes: u64,
    /// Reduce-scatter bytes per all-gather byte (2: fp32 reduce of bf16 gradients).
    reduce_per_gather: u64,
    shard: u64,
    /// gloo (CPU): its all-gather and reduce-scatter clone their buffers.
    gloo: bool,
    /// The optimizer step's temporary.
    temp: u64,
    /// One block's backward beyond its saved tensors: its gradient temporaries, and under full
    /// recompute its activations rebuilt.
    layer_peak: u64,
    /// The loss's backward beyond its saved log-softmax (the gradients of the fp32 logits).
    loss_grad: u64,
    /// With pipeline parallelism: the schedule's own FSDP2 regime.
    pipeline: Option<TitanPipelineFsdp2>,
}

/// FSDP2 under torchtitan's pipeline schedules: `reshard_after_forward` is off (the "default"
/// policy with PP), and the schedule turns gradient sync off for every micro-batch but the last, so
/// FSDP2 accumulates the stage's unsharded gradients in the reduce dtype (fp32 under the bf16
/// policy: each micro-batch's gradient is cast and added, `aten::add_` over a `_to_copy`).
#[derive(Clone, Copy)]
struct TitanPipelineFsdp2 {
    /// The stage's parameters unsharded in the gather dtype, kept through the step.
    unsharded_bytes: u64,
    /// The stage's unsharded gradient accumulators in the reduce dtype.
    grad_accumulator_bytes: u64,
    /// The largest tensor's new gradient and its reduce-dtype copy while it is added.
    largest_grad_bytes: u64,
}

/// The phase peaks of a torchtitan FSDP2 rank from FSDP2's moments, as a profiler trace of
/// `vram measure --framework torchtitan --fsdp2` shows them (docs/formulas/parallel.md §FSDP2):
/// - an all-gather allocates its input (the shard cast to the gather dtype) and output; the
///   output is held until the next group's all-gather completes, beside the unsharded parameters
///   copied out of it;
/// - forward peaks at the `[norm, output]` all-gather (every block's activations, the last block's
///   held output) or at the loss (the head group unsharded, bf16 logits and their fp32 copy);
/// - a group's backward ends in its reduce-scatter: the unsharded gradients in the gather dtype,
///   the fp32 flat input, and (gloo) a clone of it; the previous group's input is freed first.
///   The head group's comes while every block's activations live and the last block is
///   prefetched; the embedding's comes last, beside every other group's sharded gradients.
fn titan_fsdp2_phases(t: TitanFsdp2) -> (u64, u64, u64) {
    let gloo = |x: u64| if t.gloo { x } else { 0 };
    if let Some(p) = &t.pipeline {
        // every micro-batch's forward and backward inside the schedule's step: the stage stays
        // unsharded with its gradient accumulators beside the in-flight activations
        let held = t
            .base
            .saturating_add(p.unsharded_bytes)
            .saturating_add(p.grad_accumulator_bytes)
            .saturating_add(t.layer_acts)
            .saturating_add(t.head_acts);
        let forward = held.saturating_add(t.logits).saturating_add(t.logits_fp32);
        let backward = held.saturating_add(p.largest_grad_bytes.max(t.loss_grad).max(t.layer_peak));
        let optimizer = t.base.saturating_add(t.grads).saturating_add(t.temp);
        return (forward, backward, optimizer);
    }
    let base = t.base.saturating_add(t.kept_layers_bytes);
    let forward = [
        // inside the last block's forward: its parameters and held all-gather output, its
        // temporaries (under full recompute, the activations it does not keep)
        base.saturating_add(t.layer_acts)
            .saturating_add(t.layer_bytes.saturating_mul(2))
            .saturating_add(t.layer_peak / 2),
        // the head group's all-gather: input shard, output (and gloo's clone), the last block's
        // held output
        base.saturating_add(t.layer_acts)
            .saturating_add(t.layer_bytes)
            .saturating_add(t.head_bytes.div_ceil(t.shard))
            .saturating_add(t.head_bytes)
            .saturating_add(gloo(t.head_bytes)),
        // the output projection: the head group unsharded and its held all-gather output
        base.saturating_add(t.layer_acts)
            .saturating_add(t.head_bytes.saturating_mul(2))
            .saturating_add(t.logits),
        // the loss: the logits, their fp32 copy and the saved log-softmax
        base.saturating_add(t.layer_acts)
            .saturating_add(t.head_acts)
            .saturating_add(t.head_bytes)
            .saturating_add(t.logits)
            .saturating_add(t.logits_fp32),
    ]
    .into_iter()
    .max()
    .unwrap_or(0);
    let reduce = |x: u64| x.saturating_mul(t.reduce_per_gather);
    // a group's reduce-scatter: its unsharded gradients and the fp32 input, or (gloo) the input,
    // its clone and the sharded output once the gradients are freed
    let reduce_scatter = |x: u64| {
        reduce(x).saturating_add(x.max(gloo(reduce(x)).saturating_add(reduce(x).div_ceil(t.shard))))
    };
    let grads_of = |x: u64| reduce(x).div_ceil(t.shard);
    let backward = [
        // the loss's backward: every saved tensor, the head group still unsharded
        base.saturating_add(t.layer_acts)
            .saturating_add(t.head_acts)
            .saturating_add(t.head_bytes)
            .saturating_add(t.loss_grad),
        // inside a block's backward: the block and the next one prefetched unsharded, its
        // gradients in the gather dtype, its temporaries beside the remaining activations
        base.saturating_add(t.grads.saturating_sub(grads_of(t.embedding_bytes)))
            .saturating_add(t.layer_acts)
            .saturating_add(t.layer_bytes.saturating_mul(3))
            .saturating_add(t.layer_peak),
        // the head group's reduce-scatter, the last block prefetched
        base.saturating_add(t.layer_acts)
            .saturating_add(t.layer_bytes)
            .saturating_add(reduce_scatter(t.head_bytes)),
        // the first block's, the embedding prefetched, the later groups' gradients sharded
        base.saturating_add(t.grads.saturating_sub(grads_of(t.embedding_bytes)))
            .saturating_add(t.embedding_bytes)
            .saturating_add(reduce_scatter(t.layer_bytes)),
        // the embedding's, last: its dense gradient beside every other sharded gradient
        base.saturating_add(t.grads.saturating_sub(grads_of(t.embedding_bytes)))
            .saturating_add(reduce_scatter(t.embedding_bytes)),
    ]
    .into_iter()
    .max()
    .unwrap_or(0);
    let optimizer = t.base.saturating_add(t.grads).saturating_add(t.temp);
    (forward, backward, optimizer)
}

/// NCCL buffers of one rank: one set per communicator it joins with more than one member (data,
/// tensor, pipeline, context, expert, expert-data groups).
fn nccl_bytes(layout: &Layout, gpus: u64) -> u64 {
    let dp = layout.dp(gpus);
    let groups = [
        dp.saturating_mul(layout.cp),
        layout.tp,
        layout.pp,
        layout.cp,
        layout.ep,
        if layout.ep > 1 {
            layout.expert_dp(gpus)
        } else {
            1
        },
    ];
    let n = groups.iter().filter(|&&g| g > 1).count() as u64;
    n.saturating_mul(NCCL_BYTES_PER_COMMUNICATOR)
}
