//! vLLM serving capacity: the numbers vLLM prints at start-up (`Memory profiling results` /
//! `Available KV cache memory`, `GPU KV cache size: N tokens`, `Maximum concurrency for L tokens per
//! request`).
//!
//! - KV pool (vLLM `Worker.determine_available_memory`, PR #10511 and v1):
//!   `floor(total × gpu_memory_utilization) − weights − activation peak − non-torch memory`.
//!   Checked against the logs: Llama-3-8B TP1 0.9 × 79.22 − 14.96 − 1.26 − 1.79 = 53.29 GiB (H1);
//!   Llama-3.1-8B v0.19 0.95 × 79.19 − 14.99 − 1.89 − 0.25 = 58.10 GiB (H3, 58.11 logged).
//! - Weights: the format's bytes, linear layers and the vocab-parallel embedding/head sharded over
//!   TP, norms replicated, plus the rotary `cos_sin_cache` `max_position × rotary_dim` in the model
//!   dtype (`RotaryEmbedding._compute_cos_sin_cache`): Llama-3.1-8B 16,060,522,496 + 131,072 × 128 ×
//!   2 = 16,094,076,928 B = 14.9889 GiB, as logged ("Model loading took 14.9889 GiB").
//! - Activation peak of the profiling run (`profile_run`: a dummy forward of
//!   `max_num_batched_tokens` tokens with attention skipped, then `_dummy_sampler_run` on
//!   `min(max_num_seqs, tokens)` rows): modelled as the largest layer's transient at those tokens +
//!   the hidden states + the sampler's fp32 logits and fp32 probabilities. This sum is a calibration
//!   against vLLM v0.19 on H100 (H3 Llama-3.1-8B 1.89 GiB, H6 Qwen2.5-7B 2.21 GiB: both within 4 %).
//! - Non-torch memory (CUDA context, cuBLAS/NCCL buffers; measured, vLLM v0.19 on H100, H3/H4):
//!   0.25 GiB at TP 1, 2.07 GiB at TP 2, 2.13 GiB at TP ≥ 4. CUDA graphs are captured after the KV
//!   pool is sized and are not subtracted (the v0.19 logs' KV pool matches without them).
//! - Pages (`kv_cache_utils.py`): uniform models: `num_blocks = pool / (block × Σ_layers
//!   bytes/token)`, tokens = `num_blocks × block`. Hybrid sliding/full models: layers are grouped in
//!   groups of `min(count per type)` layers sharing one page size; `num_blocks = pool / (page ×
//!   group size)`; tokens = `num_blocks / groups × block`. Max concurrency =
//!   `num_blocks / Σ_groups ⌈max memory per request / page⌉` with the sliding groups' need
//!   `⌈min(window − 1 + max_num_batched_tokens, max_model_len) / block⌉ + 1` pages.

use super::activations::{forward_peak, fused_moe_workspace_bytes, ExpertsPath, ForwardShape};
use super::kv_cache::{KvLayout, LayerCache};
use super::vllm_pipeline as pipeline;
use super::vllm_version::non_torch_bytes;
use super::vllm_version::{Budget, Profile};
use super::weights::WeightsBreakdown;
use crate::error::ScenarioError;
use crate::report::Term;
use crate::scenario::{AttentionImpl, Dtype, ServingInputs};
use crate::spec::{Component, FfnSpec, ModelKind, ModelSpec};
use crate::units::{format_gib, group_thousands, GIB};
use serde::{Deserialize, Serialize};

/// The figures vLLM prints at start-up, per GPU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServingEstimate {
    /// Inputs used (defaults filled in).
    pub inputs: ServingInputs,
    /// `max_model_len` in effect.
    pub max_model_len: u64,
    /// Page size in tokens.
    pub block_size: u64,
    /// `floor(total × utilization)`.
    pub requested_bytes: u64,
    /// Weights on each GPU.
    pub weights_per_gpu_bytes: u64,
    /// Profiled activation peak.
    pub activation_peak_bytes: u64,
    /// Non-torch memory.
    pub non_torch_bytes: u64,
    /// KV cache pool (0 when nothing is left).
    pub kv_pool_bytes: u64,
    /// Bytes the other terms exceed the requested memory by (0 when the pool is positive).
    pub shortfall_bytes: u64,
    /// Bytes of one page across the layers that share it.
    pub bytes_per_block: u64,
    /// Pages in the pool.
    pub num_blocks: u64,
    /// `GPU KV cache size: N tokens`.
    pub kv_tokens: u64,
    /// `Maximum concurrency for max_model_len tokens per request`.
    pub max_concurrency: f64,
    /// Sequences of the scenario's context length that fit at once.
    pub concurrency_at_context: f64,
    /// Whether one request of `max_model_len` fits (vLLM refuses to start otherwise).
    pub fits: bool,
    /// The profiling run's sampler peak (`rows × vocab × bytes per entry` + scratch; the
    /// activation peak is the larger of it and the layers').
    pub sampler_bytes: u64,
    /// The fused-MoE workspace of the largest MoE layer per GPU (0 for dense models; part of the
    /// layers' peak).
    pub moe_workspace_bytes: u64,
    /// CUDA-graph memory per GPU (0 with `enforce_eager`): outside the budget up to 0.20 (on the
    /// device beyond `gpu_memory_utilization`), subtracted from it in 0.21+.
    pub cuda_graph_bytes: u64,
    /// How the release forms the KV budget (`v0`, `v1-absolute`, `v1`, `v1-graphs`,
    /// `extensible`).
    pub budget: Budget,
    /// Explained terms.
    pub terms: Vec<Term>,
}

impl ServingEstimate {
    /// The empty serving section of an engine that is not vLLM (llama.cpp).
    pub fn not_served(inputs: &ServingInputs) -> Self {
        ServingEstimate {
            inputs: inputs.clone(),
            max_model_len: 0,
            block_size: 0,
            requested_bytes: 0,
            weights_per_gpu_bytes: 0,
            activation_peak_bytes: 0,
            non_torch_bytes: 0,
            kv_pool_bytes: 0,
            shortfall_bytes: 0,
            bytes_per_block: 0,
            num_blocks: 0,
            kv_tokens: 0,
            max_concurrency: 0.0,
            concurrency_at_context: 0.0,
            fits: false,
            sampler_bytes: 0,
            moe_workspace_bytes: 0,
            cuda_graph_bytes: 0,
            budget: Budget::V1,
            terms: Vec::new(),
        }
    }
}

/// CUDA-graph memory of the engine's capture list: the first capture's memory pool plus a little
/// per graph, `0.35 GiB + 4 MiB × graphs`, fitted to the estimates vLLM itself prints ("Profiling
/// CUDA graph memory: PIECEWISE=p, FULL=f" / "Estimated CUDA graph memory: X GiB", 0.19–0.2x): 1 + 1
/// graphs 0.36 GiB, 5 + 4 0.61, 11 + 7 1.21, 35 + 19 0.37, 51 + 35 0.64 / 0.78 / 2.35 GiB; and to the
/// captures it reports ("Graph capturing finished …, took X GiB"): V0 35 graphs 0.27–1.92 GiB,
/// 0.10 67 piecewise graphs 0.50–0.67 GiB. The published figures scatter by a factor of two or three
/// around it for the same counts (docs/formulas/vllm-versions.md).
///
/// Capture sizes (`vllm/config`): V0 `[1, 2, 4] + 8…max_num_seqs` step 8; 0.8–0.9 `[1, 2, 4] +
/// 8…512` step 8; 0.10–0.12 the same up to `min(2 × max_num_seqs, 512)`; 0.13+ `[1, 2, 4] +
/// 8…248` step 8 `+ 256…min(2 × max_num_seqs, 512)` step 16; all at most `max_num_batched_tokens`.
/// From 0.11 (`FULL_AND_PIECEWISE`) the sizes up to `max_num_seqs` are also captured as full
/// graphs. None with `--enforce-eager`.
pub fn cuda_graph_bytes(s: &ServingInputs, profile: &Profile) -> u64 {
    if s.enforce_eager {
        return 0;
    }
    let m = profile.version.minor;
    let seqs = s.max_num_seqs.max(1);
    let cap = s.max_num_batched_tokens.max(1);
    // (piecewise or whole-model graphs, full graphs) over the capture sizes of the release
    let (mut captured, mut full) = (0u64, 0u64);
    let mut count = |b: u64| {
        if b <= cap {
            captured += 1;
            full += u64::from(m >= 11 && b <= seqs);
        }
    };
    [1, 2, 4].into_iter().for_each(&mut count);
    match m {
        0..=7 => (8..=seqs.next_multiple_of(8))
            .step_by(8)
            .for_each(&mut count),
        8..=9 => (8..=512).step_by(8).for_each(&mut count),
        10..=12 => (8..=(2 * seqs).min(512)).step_by(8).for_each(&mut count),
        _ => (8..256)
            .step_by(8)
            .chain((256..=(2 * seqs).min(512)).step_by(16))
            .for_each(&mut count),
    }
    const MIB: u64 = 1 << 20;
    (35 * GIB / 100).saturating_add((captured + full).saturating_mul(4 * MIB))
}

/// `(routed experts, experts per token, expert intermediate size)` of each MoE layer.
fn moe_ffns(spec: &ModelSpec) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
    spec.layers.iter().filter_map(|l| match l.ffn {
        Some(FfnSpec::Moe {
            num_experts,
            experts_per_token,
            expert_intermediate_size,
            ..
        }) => Some((num_experts, experts_per_token, expert_intermediate_size)),
        _ => None,
    })
}

/// Validates the serving inputs; messages name the field.
pub fn validate(s: &ServingInputs) -> Result<(), ScenarioError> {
    let bad = |field: &str, expected: &str, found: String| ScenarioError::Invalid {
        field: format!("serving.{field}"),
        expected: expected.into(),
        found,
    };
    if !(s.gpu_memory_utilization >= 0.0 && s.gpu_memory_utilization <= 1.0) {
        return Err(bad(
            "gpu_memory_utilization",
            "a fraction in (0, 1], or 0 for the version's default",
            s.gpu_memory_utilization.to_string(),
        ));
    }
    if s.gpu_memory_bytes == 0 || s.gpu_memory_bytes > 1 << 50 {
        return Err(bad(
            "gpu_memory_bytes",
            "a positive byte count up to 1 PiB",
            s.gpu_memory_bytes.to_string(),
        ));
    }
    let limit = crate::scenario::MAX_SCENARIO_VALUE;
    for (field, v, zero_ok) in [
        ("tensor_parallel_size", s.tensor_parallel_size, false),
        ("pipeline_parallel_size", s.pipeline_parallel_size, false),
        ("data_parallel_size", s.data_parallel_size, false),
        ("max_num_seqs", s.max_num_seqs, true),
        ("max_num_batched_tokens", s.max_num_batched_tokens, true),
        ("max_model_len", s.max_model_len, true),
        ("block_size", s.block_size, true),
    ] {
        if (v == 0 && !zero_ok) || v > limit {
            return Err(bad(
                field,
                &format!("an integer from {} to {limit}", u64::from(!zero_ok)),
                v.to_string(),
            ));
        }
    }
    super::vllm_version::version_of(s)?;
    Ok(())
}

/// Weights on one GPU: sharded tensors / TP, norms replicated, K/V projections replicated where
/// TP exceeds the KV heads ([`kv_replica_bytes`]), plus the rotary cos/sin cache; an MoE model's
/// routed experts split over `TP × DP` GPUs ([`expert_share_bytes`]). Returns (bytes, of which the
/// rotary cache, of which the K/V replicas).
fn weights_per_gpu(
    spec: &ModelSpec,
    total: &WeightsBreakdown,
    s: &ServingInputs,
    dtype: Dtype,
) -> (u64, u64, u64) {
    let tp = s.tensor_parallel_size.max(1);
    let replicated_params: u64 = spec
        .tensors
        .iter()
        .filter(|t| matches!(t.component, Component::Norm | Component::FinalNorm))
        .map(|t| t.numel() * t.count())
        .sum();
    let replicated = replicated_params.saturating_mul(dtype.bytes());
    let experts = experts_bytes(spec, total, dtype);
    let sharded = total
        .total_bytes
        .saturating_sub(replicated)
        .saturating_sub(experts);
    let rope = rotary_cache_bytes(spec, dtype);
    let kv_replicas = kv_replica_bytes(spec, total, tp, dtype);
    (
        sharded / tp + replicated + rope + kv_replicas + expert_share_bytes(spec, experts, s),
        rope,
        kv_replicas,
    )
}

/// What vLLM's MXFP4 MoE kernels add to one GPU's expert weights by padding them
/// (`quantization/mxfp4.py create_weights`, 0.10–0.13; `fused_moe/oracle/mxfp4.py
/// mxfp4_round_up_hidden_size_and_intermediate_size`, 0.19+): each expert's intermediate size per
/// GPU (`I / TP`) and hidden size are rounded up for the kernel the GPU gets — Marlin below Hopper
/// (A100, L40S, consumer cards): `I` to 128, hidden to 256; Triton on Hopper: `I` to 64 (gpt-oss's
/// 2880 needs none); FlashInfer TRTLLM on Blackwell: `I` to 256 (128 in 0.34), hidden to 256. The
/// packed values (½ B) and e8m0 scales (1/32 B) of `w13` (`2I × H`) and `w2` (`H × I`) grow with
/// them: gpt-oss-20b on an A100 `2944 × 3072` instead of `2880 × 2880`, 0.85 GiB more (logged 13.72
/// GiB against 12.83 unpadded, vLLM 0.19.0).
pub fn mxfp4_padding_bytes(spec: &ModelSpec, s: &ServingInputs, profile: &Profile) -> u64 {
    let name = s.gpu_name.to_ascii_lowercase();
    let hopper = ["h100", "h200", "h800", "h20", "gh200"]
        .iter()
        .any(|k| name.contains(k));
    let blackwell = ["b100", "b200", "b300", "gb200", "gb300"]
        .iter()
        .any(|k| name.contains(k));
    let (i_align, h_align) = if hopper || name.is_empty() {
        (64, 1)
    } else if blackwell {
        (
            if profile.version.minor >= 34 {
                128
            } else {
                256
            },
            256,
        )
    } else {
        (128, 256)
    };
    let tp = s.tensor_parallel_size.max(1);
    // bytes of one expert's w13 and w2 at intermediate i (per GPU) and hidden h: values + scales
    let expert = |i: u64, h: u64| {
        let values = (2 * i).saturating_mul(h) / 2 + h.saturating_mul(i) / 2;
        let scales = (2 * i).saturating_mul(h.div_ceil(32)) + h.saturating_mul(i.div_ceil(32));
        values.saturating_add(scales)
    };
    let h = spec.hidden_size;
    moe_ffns(spec)
        .map(|(num_experts, _, intermediate)| {
            let i = intermediate / tp;
            let padded = expert(i.next_multiple_of(i_align), h.next_multiple_of(h_align));
            padded
                .saturating_sub(expert(i, h))
                .saturating_mul(num_experts)
        })
        .fold(0, u64::saturating_add)
}

/// The routed experts' bytes in the weights' format (quantized: their average bytes per parameter,
/// scales included).
fn experts_bytes(spec: &ModelSpec, total: &WeightsBreakdown, dtype: Dtype) -> u64 {
    let params: u64 = spec
        .tensors
        .iter()
        .filter(|t| t.component == Component::Experts)
        .map(|t| t.numel().saturating_mul(t.count()))
        .fold(0, u64::saturating_add);
    params
        .saturating_mul(total.quantized_bytes)
        .checked_div(total.quantized_params)
        .unwrap_or_else(|| params.saturating_mul(dtype.bytes()))
}

/// One GPU's share of the routed experts (`fused_moe/layer.py FusedMoE.__init__`): with data
/// parallelism the experts are split over `TP × DP` GPUs (`flatten_tp_across_dp`) — each expert
/// sharded, or with `--enable-expert-parallel` whole experts, `ceil(E / (TP × DP))` on the fullest
/// GPU (0.11+: the first `E mod (TP × DP)` ranks hold one more).
pub fn expert_share_bytes(spec: &ModelSpec, experts: u64, s: &ServingInputs) -> u64 {
    let ways = s
        .tensor_parallel_size
        .max(1)
        .saturating_mul(s.data_parallel_size.max(1));
    let e = crate::layout::num_experts(spec);
    if s.enable_expert_parallel && e > 0 {
        experts.saturating_mul(e.div_ceil(ways)) / e
    } else {
        experts / ways
    }
}

/// What replicating K/V heads adds to one GPU's weights. vLLM's `QKVParallelLinear` gives each
/// rank `total_num_kv_heads / tp` KV heads, but at least one: when TP exceeds the KV heads, each
/// rank holds one whole KV head (`num_kv_head_replicas = tp / total_num_kv_heads`), so its K and V
/// projections are `head_dim × hidden` each instead of `num_kv_heads × head_dim × hidden / tp`
/// (`vllm/model_executor/layers/linear.py`, `QKVParallelLinear.__init__`). The extra per attention
/// layer is `2 × head_dim × hidden × (tp − num_kv_heads) / tp` elements (and as much of the K/V
/// biases), in the weights' format (quantized: their average bytes per parameter, scales
/// included). MLA's latent projections are not split by head and are left out.
pub fn kv_replica_bytes(spec: &ModelSpec, total: &WeightsBreakdown, tp: u64, dtype: Dtype) -> u64 {
    // Σ over attention layers of (head_dim + v_head_dim) × (tp − num_kv_heads) / tp: the K and V
    // elements per input feature that an even split would not give each GPU
    let per_feature: u64 = spec
        .layers
        .iter()
        .filter_map(|l| l.attention)
        .filter(|a| a.mla.is_none() && a.num_kv_heads > 0 && a.num_kv_heads < tp)
        .map(|a| {
            a.head_dim
                .saturating_add(a.v_head_dim)
                .saturating_mul(tp - a.num_kv_heads)
                / tp
        })
        .fold(0, u64::saturating_add);
    if per_feature == 0 {
        return 0;
    }
    let weight_elems = per_feature.saturating_mul(spec.hidden_size);
    let weight_bytes = weight_elems
        .saturating_mul(total.quantized_bytes)
        .checked_div(total.quantized_params)
        .unwrap_or_else(|| weight_elems.saturating_mul(dtype.bytes()));
    // separate K/V projections, or a fused QKV projection (gpt_bigcode's c_attn, qkv_proj,
    // query_key_value) whose bias holds the K and V parts
    let has_kv_bias = spec
        .tensors
        .iter()
        .filter(|t| t.name.ends_with(".bias"))
        .any(|t| {
            ["k_proj", "v_proj", "c_attn", "qkv", "query_key_value"]
                .iter()
                .any(|p| t.name.contains(p))
        });
    let bias_bytes = if has_kv_bias {
        per_feature.saturating_mul(dtype.bytes())
    } else {
        0
    };
    weight_bytes.saturating_add(bias_bytes)
}

/// vLLM's rotary `cos_sin_cache`: `max_position_embeddings × rotary_dim` in the model dtype.
pub fn rotary_cache_bytes(spec: &ModelSpec, dtype: Dtype) -> u64 {
    if spec.kind != ModelKind::DecoderOnly
        || matches!(spec.text_model_type.as_str(), "gpt2" | "opt" | "bloom")
    {
        return 0;
    }
    let Some(a) = spec.layers.iter().find_map(|l| l.attention) else {
        return 0;
    };
    let dim = a.mla.map_or(a.head_dim, |m| m.qk_rope_head_dim);
    spec.max_position_embeddings
        .saturating_mul(dim)
        .saturating_mul(dtype.bytes())
}

/// vLLM's profiled activation peak and its parts (`profile_run`: a dummy forward of
/// `max_num_batched_tokens` tokens split over `min(max_num_seqs, tokens)` requests with attention
/// skipped, then the sampler on one row per request; module docs and [`Profile`]).
pub(crate) struct ActivationPeak {
    tokens: u64,
    /// The largest layer's transient per GPU (MLP/attention intermediates split by TP), with the
    /// fused-MoE workspace in it.
    layer_bytes: u64,
    /// `tokens × hidden` in the model dtype: the hidden states, alive through the layers and (V1)
    /// the sampler.
    hidden_bytes: u64,
    rows: u64,
    /// The sampler's peak: `rows × vocab × bytes per entry` + the Triton scratch buffer.
    sampler_bytes: u64,
    per_entry: u64,
    /// The fused-MoE workspace of the largest MoE layer per GPU (in `layer_bytes`).
    pub(crate) moe_workspace_bytes: u64,
    /// The peak: the larger of the layers' and the sampler's, which run one after the other.
    pub(crate) total: u64,
    vocab: u64,
}

impl ActivationPeak {
    /// The sampler's part, on the last pipeline stage only.
    pub(crate) fn sampler_bytes(&self) -> u64 {
        self.sampler_bytes
    }

    /// The peak without the sampler (a pipeline stage other than the last).
    pub(crate) fn without_sampler(&self) -> u64 {
        self.layer_bytes.saturating_add(self.hidden_bytes)
    }

    pub(crate) fn of(
        spec: &ModelSpec,
        s: &ServingInputs,
        dtype: Dtype,
        tp: u64,
        profile: &Profile,
    ) -> Self {
        let tokens = s.max_num_batched_tokens;
        let experts = ExpertsPath::VllmFused {
            chunk_tokens: profile.fused_moe_chunk_tokens,
            separate_caches: profile.fused_moe_separate_caches,
        };
        let shape = ForwardShape {
            batch: 1,
            tokens,
            kv_len: tokens,
            act_bytes: dtype.bytes(),
            attention: AttentionImpl::Flash,
            logits_to_keep: 1,
            experts,
            ssm_scan: super::activations::SsmScan::Kernels,
        };
        let p = forward_peak(spec, &shape);
        // Tensor parallelism splits the MLP/attention intermediates; the residual stream is
        // replicated.
        let mut layer = p.layer_bytes / tp;
        // The fused-MoE workspace per GPU: at TP alone each expert is split over the TP group;
        // with data parallelism the experts see the tokens of every DP rank (gathered before the
        // experts, the default all2all) and are split over TP × DP GPUs, or held whole with expert
        // parallelism.
        let dp = s.data_parallel_size.max(1);
        let workspace = |tokens: u64, split: u64| {
            moe_ffns(spec)
                .map(|(_, experts_per_token, intermediate)| {
                    fused_moe_workspace_bytes(
                        tokens,
                        experts_per_token,
                        intermediate / split.max(1),
                        spec.hidden_size,
                        dtype.bytes(),
                        profile.fused_moe_chunk_tokens,
                        profile.fused_moe_separate_caches,
                    )
                })
                .max()
                .unwrap_or(0)
        };
        let at_tp = workspace(tokens, 1) / tp;
        let moe_workspace = if dp > 1 || s.enable_expert_parallel {
            let split = if s.enable_expert_parallel { 1 } else { tp * dp };
            let w = workspace(tokens.saturating_mul(dp), split);
            layer = layer.saturating_add(w.saturating_sub(at_tp));
            w
        } else {
            at_tp
        };
        let hidden = tokens
            .saturating_mul(spec.hidden_size)
            .saturating_mul(dtype.bytes());
        let rows = s.max_num_seqs.min(tokens);
        let per_entry = profile.sampler_bytes_per_entry(dtype.bytes());
        let sampler = rows
            .saturating_mul(spec.vocab_size)
            .saturating_mul(per_entry)
            .saturating_add(profile.sampler_scratch_bytes(rows, spec.vocab_size, &s.gpu_name));
        // V1 (0.9+) keeps the whole batch's hidden states alive through the sampler; V0 and 0.8
        // only the selected rows (small beside the logits).
        let beside_sampler = if profile.version.minor >= 9 {
            hidden
        } else {
            0
        };
        let layers_peak = layer.saturating_add(hidden);
        ActivationPeak {
            tokens,
            layer_bytes: layer,
            hidden_bytes: hidden,
            rows,
            sampler_bytes: sampler,
            per_entry,
            moe_workspace_bytes: moe_workspace,
            total: layers_peak.max(sampler.saturating_add(beside_sampler)),
            vocab: spec.vocab_size,
        }
    }

    fn formula(&self, tp: u64, profile: &Profile) -> String {
        format!(
            "max(largest layer at {} tokens / TP {tp} {} B{} + hidden states {} B, sampler {} rows × {} vocab × {} B{} = {} B) = {} B",
            group_thousands(self.tokens),
            group_thousands(self.layer_bytes),
            if self.moe_workspace_bytes > 0 {
                format!(
                    " (fused-MoE workspace {} B)",
                    group_thousands(self.moe_workspace_bytes)
                )
            } else {
                String::new()
            },
            group_thousands(self.hidden_bytes),
            group_thousands(self.rows),
            group_thousands(self.vocab),
            self.per_entry,
            if profile.version.minor >= 9 {
                " + hidden states"
            } else {
                ""
            },
            group_thousands(self.sampler_bytes),
            group_thousands(self.total)
        )
    }
}

/// Pages: `(bytes_per_block, groups, blocks one request of max_model_len needs)`.
fn paging(
    block: u64,
    max_model_len: u64,
    chunk: u64,
    page_token_bytes: &[(LayerCache, u64, u64)],
) -> (u64, u64, u64) {
    // (layers, Σ bytes per token, largest bytes per token) of the full and the sliding layers;
    // the entries are distinct caches with their layer counts, in layer order.
    let (mut full_n, mut full_sum, mut full_max) = (0u64, 0u64, 0u64);
    let (mut sliding_n, mut sliding_sum, mut sliding_max) = (0u64, 0u64, 0u64);
    let (mut first_window, mut window) = (None, 0u64);
    for &(l, b, n) in page_token_bytes {
        match l {
            LayerCache::Full { .. } => {
                full_n += n;
                full_sum += b * n;
                full_max = full_max.max(b);
            }
            LayerCache::Sliding { window: w, .. } => {
                sliding_n += n;
                sliding_sum += b * n;
                sliding_max = sliding_max.max(b);
                first_window.get_or_insert(w);
                window = window.max(w);
            }
            _ => {}
        }
    }
    let full_blocks = max_model_len.div_ceil(block);
    if sliding_n == 0 || full_n == 0 {
        let per_token = full_sum + sliding_sum;
        let need = match first_window {
            Some(w) if full_n == 0 => {
                (w.saturating_sub(1).saturating_add(chunk))
                    .min(max_model_len)
                    .div_ceil(block)
                    + 1
            }
            _ => full_blocks,
        };
        return (per_token.saturating_mul(block), 1, need);
    }
    let group_size = full_n.min(sliding_n).max(1);
    let full_groups = full_n.div_ceil(group_size);
    let sliding_groups = sliding_n.div_ceil(group_size);
    let page = full_max.max(sliding_max).saturating_mul(block);
    let sliding_need = (window.saturating_sub(1).saturating_add(chunk))
        .min(max_model_len)
        .div_ceil(block)
        + 1;
    let need = full_groups * full_blocks + sliding_groups * sliding_need;
    (
        page.saturating_mul(group_size),
        full_groups + sliding_groups,
        need,
    )
}

/// The serving figures for `spec` with weights `w` (whole model), cache layout `kv` (per GPU) and
/// the scenario's context length `context` (tokens per sequence).
#[allow(clippy::too_many_arguments)]
pub(crate) fn serving(
    spec: &ModelSpec,
    s: &ServingInputs,
    w: &WeightsBreakdown,
    kv: &KvLayout,
    dtype: Dtype,
    context: u64,
    explain: bool,
    act_peak: &ActivationPeak,
    profile: &Profile,
    context_bytes: u64,
    mxfp4: bool,
) -> ServingEstimate {
    let tp = s.tensor_parallel_size.max(1);
    let block = match (s.block_size, kv.block_size) {
        (0, Some(b)) => b.max(profile.default_block_size),
        (0, None) => profile.default_block_size,
        (b, _) => b,
    };
    let max_model_len = if s.max_model_len == 0 {
        spec.max_position_embeddings.max(1)
    } else {
        s.max_model_len
    };
    let total = s.gpu_memory_bytes;
    let requested = (total as f64 * s.gpu_memory_utilization).floor() as u64;
    let (mut weights_gpu, rope, mut kv_replicas) = weights_per_gpu(spec, w, s, dtype);
    let mxfp4_padding = if mxfp4 {
        mxfp4_padding_bytes(spec, s, profile)
    } else {
        0
    };
    weights_gpu = weights_gpu.saturating_add(mxfp4_padding);
    let mut act = act_peak.total;
    let non_torch = s.non_torch_bytes.unwrap_or_else(|| {
        // data-parallel ranks of an MoE model gather tokens over NCCL too: the group is TP × DP
        non_torch_bytes(
            profile,
            tp.saturating_mul(s.data_parallel_size.max(1)),
            super::vllm_version::interconnect(s),
            context_bytes,
        )
    });
    let graphs = cuda_graph_bytes(s, profile);
    let graphs_in_budget = if profile.budget.counts_cuda_graphs() {
        graphs
    } else {
        0
    };
    // The extensible KV cache (0.34) keeps the device's headroom above a margin for what the
    // measurement does not show, beside the transient peak it keeps free in full.
    let margin = match profile.budget {
        Budget::Extensible => GIB.max(act.saturating_mul(3) / 4),
        _ => 0,
    };
    let requested_effective = match profile.budget {
        Budget::Extensible => {
            requested.min(total.saturating_sub(context_bytes).saturating_sub(margin))
        }
        _ => requested,
    };
    let mut per_layer: Vec<(LayerCache, u64, u64)> = kv
        .distinct
        .iter()
        .map(|&(l, n)| (l, kv.layer_bytes_per_token(&l), n))
        .filter(|(_, b, _)| *b > 0)
        .collect();
    let pp = s.pipeline_parallel_size.max(1);
    let mut pp_note = String::new();
    if pp > 1 {
        let stage = pipeline::binding_stage(
            spec,
            s,
            kv,
            dtype,
            tp,
            requested_effective,
            non_torch.saturating_add(graphs_in_budget),
            act_peak,
            weights_gpu,
            rope,
            kv_replicas,
        );
        weights_gpu = stage.weights_bytes;
        kv_replicas = stage.kv_replica_bytes;
        act = stage.activation_bytes;
        per_layer = stage.per_layer;
        pp_note = stage.note;
    }
    let used = weights_gpu
        .saturating_add(act)
        .saturating_add(non_torch)
        .saturating_add(graphs_in_budget);
    let pool = requested_effective.saturating_sub(used);
    let shortfall = used.saturating_sub(requested_effective);
    let state_per_seq = kv.state_bytes_per_sequence();
    let (bytes_per_block, groups, need_blocks) =
        paging(block, max_model_len, s.max_num_batched_tokens, &per_layer);
    let (num_blocks, kv_tokens, max_concurrency, at_context, fits) =
        if let Some(num_blocks) = pool.checked_div(bytes_per_block) {
            let tokens = num_blocks / groups.max(1) * block;
            let conc = num_blocks as f64 / need_blocks.max(1) as f64;
            let ctx_need = {
                let (_, _, n) = paging(block, context.max(1), s.max_num_batched_tokens, &per_layer);
                n
            };
            (
                num_blocks,
                tokens,
                conc,
                num_blocks as f64 / ctx_need.max(1) as f64,
                num_blocks >= need_blocks && shortfall == 0,
            )
        } else if let Some(seqs) = pool.checked_div(state_per_seq) {
            (seqs, 0, seqs as f64, seqs as f64, seqs >= 1)
        } else {
            (0, 0, 0.0, 0.0, shortfall == 0)
        };

    let gib = |b: u64| format_gib(b);
    let terms = if !explain {
        Vec::new()
    } else {
        vec![
        Term {
            key: "serving.requested".into(),
            bytes: requested,
            formula: format!(
                "{} B × gpu_memory_utilization {} = {} B ({})",
                group_thousands(s.gpu_memory_bytes),
                s.gpu_memory_utilization,
                group_thousands(requested),
                gib(requested)
            ),
            source: "vLLM Worker.determine_available_memory: total memory as CUDA reports it (an \"80 GB\" H100 is 79.19 GiB, measured.md J7) × gpu_memory_utilization (the release's default when not given)".into(),
        },
        Term {
            key: "serving.weights".into(),
            bytes: weights_gpu,
            formula: format!(
                "{} B / TP {tp} (norms replicated) + rotary cos_sin_cache {} × rotary dim × {} B{} = {} B ({})",
                group_thousands(w.total_bytes),
                group_thousands(spec.max_position_embeddings),
                dtype.bytes(),
                if kv_replicas > 0 {
                    format!(
                        " + K/V heads replicated (TP {tp} > KV heads: one whole head per GPU) {} B",
                        group_thousands(kv_replicas)
                    )
                } else {
                    String::new()
                } + &if mxfp4_padding > 0 {
                    format!(
                        " + MXFP4 experts padded for the GPU's MoE kernel {} B",
                        group_thousands(mxfp4_padding)
                    )
                } else {
                    String::new()
                },
                group_thousands(weights_gpu),
                gib(weights_gpu)
            ) + &if pp > 1 {
                format!("; {pp_note}")
            } else {
                String::new()
            },
            source: format!(
                "vLLM sharded linear/vocab-parallel layers; RotaryEmbedding._compute_cos_sin_cache ({} B)",
                group_thousands(rope)
            ),
        },
        Term {
            key: "serving.activation_peak".into(),
            bytes: act,
            formula: act_peak.formula(tp, profile),
            source: format!(
                "vLLM {} profile_run + _dummy_sampler_run ({} sampler); the layers and the sampler run one after the other (docs/formulas/vllm-versions.md)",
                profile.version,
                match profile.sampler {
                    super::vllm_version::SamplerPath::SortNative => "sort-based top-k/top-p",
                    super::vllm_version::SamplerPath::Triton => "Triton top-k/top-p",
                    super::vllm_version::SamplerPath::RunnerV2 => "model runner V2",
                }
            ),
        },
        Term {
            key: "serving.non_torch".into(),
            bytes: non_torch,
            formula: format!(
                "vLLM {}, TP {tp}, {}: {} B ({}){}",
                profile.version,
                match super::vllm_version::interconnect(s) {
                    crate::scenario::Interconnect::Pcie => "PCIe",
                    _ => "NVLink",
                },
                group_thousands(non_torch),
                gib(non_torch),
                if profile.budget == Budget::V1Absolute {
                    " (the CUDA context included: 0.8 counts non-torch memory absolutely)"
                } else {
                    ""
                }
            ),
            source: "measured in published start-up logs per release and interconnect (vllm_version::non_torch_bytes)".into(),
        },
        Term {
            key: "serving.cuda_graphs".into(),
            bytes: graphs,
            formula: if graphs_in_budget > 0 {
                format!(
                    "{} B, subtracted from the budget (vLLM {}: VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 by default)",
                    group_thousands(graphs),
                    profile.version
                )
            } else if graphs > 0 {
                format!(
                    "{} B, captured after the KV cache: on the device beyond gpu_memory_utilization",
                    group_thousands(graphs)
                )
            } else {
                "--enforce-eager: no CUDA graphs".into()
            },
            source: "0.35 GiB + 4 MiB per captured graph, fitted to the estimates vLLM prints (vllm::cuda_graph_bytes)".into(),
        },
        Term {
            key: "serving.kv_pool".into(),
            bytes: pool,
            formula: format!(
                "{}{} − {} − {} − {}{} = {} B ({}); {} B per block of {block} tokens → {} blocks, {} tokens",
                group_thousands(requested_effective),
                if profile.budget == Budget::Extensible {
                    format!(
                        " (min(requested, total − CUDA context {} − margin {}))",
                        group_thousands(context_bytes),
                        group_thousands(margin)
                    )
                } else {
                    String::new()
                },
                group_thousands(weights_gpu),
                group_thousands(act),
                group_thousands(non_torch),
                if graphs_in_budget > 0 {
                    format!(" − {}", group_thousands(graphs_in_budget))
                } else {
                    String::new()
                },
                group_thousands(pool),
                gib(pool),
                group_thousands(bytes_per_block),
                group_thousands(num_blocks),
                group_thousands(kv_tokens)
            ),
            source: match profile.budget {
                Budget::V0 => "vLLM V0 worker.determine_num_available_blocks",
                Budget::V1Absolute | Budget::V1 | Budget::V1Graphs => {
                    "vLLM V1 gpu_worker.determine_available_memory; kv_cache_utils.get_kv_cache_config"
                }
                Budget::Extensible => {
                    "vLLM extensible_kv_cache.measure_kv_cache_bytes; kv_cache_utils.get_kv_cache_config"
                }
            }
            .into(),
        },
    ]
    };
    ServingEstimate {
        inputs: s.clone(),
        max_model_len,
        block_size: block,
        requested_bytes: requested,
        weights_per_gpu_bytes: weights_gpu,
        activation_peak_bytes: act,
        non_torch_bytes: non_torch,
        kv_pool_bytes: pool,
        shortfall_bytes: shortfall,
        bytes_per_block,
        num_blocks,
        kv_tokens,
        max_concurrency,
        concurrency_at_context: at_context,
        fits,
        sampler_bytes: act_peak.sampler_bytes(),
        moe_workspace_bytes: act_peak.moe_workspace_bytes,
        cuda_graph_bytes: graphs,
        budget: profile.budget,
        terms,
    }
}
