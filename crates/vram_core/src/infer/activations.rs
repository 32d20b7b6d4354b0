//! Transient activation memory of a forward pass without gradients (prefill, decode, vLLM's
//! profiling run): what is alive at the peak of the largest layer, and at the head.
//!
//! Derived from the transformers 5.17 / torch 2.11 sources, re-checked under the pinned 5.24 / 2.15
//! (docs/measurements/types), and checked allocation by allocation against the CPU profiler (live tensors at the peak, `docs/formulas/inference.md`
//! §Prefill and decode peaks). For `T = batch × tokens` tokens in the activation dtype `a`:
//! - the whole forward (`LlamaModel.forward` and its copies, `GPT2Model.forward`): `inputs_embeds`
//!   (`T × h`) stays bound in the model's frame until it returns; gpt2 also keeps its learned
//!   `position_embeds` (`tokens × h`, batch 1) and adds them into a new tensor; the int64
//!   `position_ids` (`tokens × 8 B`, batch 1: `arange(...).unsqueeze(0)`); rotary `cos`/`sin`
//!   (`tokens × head_dim` each, batch 1 because `position_ids` has batch 1); eager's additive mask.
//! - the block input: the caller's loop (`hidden_states = decoder_layer(hidden_states, …)`) keeps the
//!   layer's input alive for the whole layer; for layer 0 of a rotary model it is `inputs_embeds`
//!   itself, for gpt2 it is the new `inputs_embeds + position_embeds`.
//! - attention (SDPA / flash): the normed input (h), q, k, v and the rotated q and k (2q + 2k + v);
//!   SDPA's flash / memory-efficient kernels keep O(T) softmax statistics only.
//! - eager attention (`eager_attention_forward`): the normed input, the rotated q, and
//!   `repeat_kv`'s contiguous copies of K and V at all query heads over `kv_len` (GQA/MQA only:
//!   `expand(...).reshape(...)` copies; `n_rep == 1` returns the cache tensor itself), plus the
//!   scores `batch × heads × tokens × kv_len`: `softmax(x, dtype=float32)` is
//!   `_softmax(x.toType(float32))` in ATen (`SoftMax.cpp`; only CUDA fp16 takes the fused
//!   `half_to_float` path), so the masked 16-bit scores, their fp32 copy and the fp32 softmax are
//!   alive together: `a + 4 + 4` B per element in 16-bit, 8 B in fp32 (`toType` is a no-op). gpt2,
//!   bert and t5 call `softmax` without a dtype: the masked scores and the softmax, `2a`.
//! - gated MLP: the residual and the normed input (2h) and `act(gate(x)) * up(x)` (act, up and their
//!   product, 3I); a plain MLP holds `c_fc`'s output and the activation's output (2I), except gpt2's
//!   `gelu_new` (`NewGELUActivation`: `0.5 * x`, `pow(x, 3)` and `0.044715 * pow` alive with `x`,
//!   4I); gpt2's block also keeps `attn_output` bound (`hidden_states = attn_output + residual`), +h.
//! - MoE (transformers 5 `*Experts` loop): router logits `T × E`, fp32 routing softmax, the int64
//!   one-hot `expert_mask` `E × k × T`, `final_hidden_states` `T × h`, and one expert's MLP on its
//!   tokens (`T·k/E` when balanced), plus shared experts on all tokens.
//! - mamba (`MambaMixer.slow_forward`, the path without the CUDA kernels): `in_proj` output `2·d_inner`,
//!   and the fp32 `discrete_A` and `deltaB_u`, each `d_inner × state_size` per token.
//! - head (after the model returned, so none of the whole-forward tensors): the final normed hidden
//!   state `T × h` with the logits `batch × positions × vocab` (positions = `logits_to_keep`, 1 when
//!   generating), then `generate`'s `outputs.logits[:, -1, :].to(copy=True, dtype=float32)`
//!   (`batch × vocab × 4 B`) with the logits once the hidden state is freed.

use crate::scenario::AttentionImpl;
use crate::spec::{FfnSpec, LayerSpec, ModelKind, ModelSpec, SsmSpec};

/// Inputs of one forward.
#[derive(Clone, Copy, Debug)]
pub struct ForwardShape {
    /// Sequences.
    pub batch: u64,
    /// New tokens per sequence in this forward.
    pub tokens: u64,
    /// Keys each query attends to (cached + new), for eager scores.
    pub kv_len: u64,
    /// Activation dtype bytes.
    pub act_bytes: u64,
    /// Attention implementation.
    pub attention: AttentionImpl,
    /// Positions whose logits are computed (0 = all `tokens`).
    pub logits_to_keep: u64,
    /// How the MoE experts run: transformers' own path, or vLLM's fused kernel.
    pub experts: ExpertsPath,
    /// How a mamba-2 mixer scans: the mamba-ssm kernels, or transformers' torch fallback.
    pub ssm_scan: SsmScan,
}

/// How a mamba-2 mixer (Nemotron-H) runs its chunked scan.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SsmScan {
    /// The mamba-ssm / causal-conv1d kernels (vLLM; transformers on CUDA with them installed).
    #[default]
    Kernels,
    /// transformers' torch fallback `mamba2_chunk_scan` (the CPU, or CUDA without mamba-ssm): the
    /// prompt padded to whole chunks and expanded in fp32, with per-chunk `l × l` segment sums.
    Torch,
}

/// How the MoE experts of a forward run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpertsPath {
    /// transformers: `grouped_mm_experts_forward` where the class is decorated with
    /// `@use_experts_implementation`, else the one-expert-at-a-time loop.
    Transformers,
    /// vLLM's fused MoE kernel (`fused_moe.py fused_experts_impl`), its workspace per chunk of
    /// `chunk_tokens` tokens (0: one chunk): `M·k·(max(N, K) + N/2)` elements (`cache13` shared by
    /// the first and third caches, 0.8+), or `M·k·(N + N/2 + K)` with `separate_caches` (up to 0.7),
    /// where N = 2 × the expert intermediate size (gate and up) and K = hidden.
    VllmFused {
        /// `VLLM_FUSED_MOE_CHUNK_SIZE` (0: no chunking, 0.19+).
        chunk_tokens: u64,
        /// The first and third caches allocated separately (up to 0.7).
        separate_caches: bool,
    },
}

/// vLLM's fused-MoE workspace for `tokens` tokens of a layer with `experts_per_token` experts of
/// `intermediate` size, `hidden` wide, in `act_bytes` elements (see [`ExpertsPath::VllmFused`]).
pub fn fused_moe_workspace_bytes(
    tokens: u64,
    experts_per_token: u64,
    intermediate: u64,
    hidden: u64,
    act_bytes: u64,
    chunk_tokens: u64,
    separate_caches: bool,
) -> u64 {
    let m = if chunk_tokens == 0 {
        tokens
    } else {
        tokens.min(chunk_tokens)
    };
    let n = 2 * intermediate;
    let widths = if separate_caches {
        n + n / 2 + hidden
    } else {
        n.max(hidden) + n / 2
    };
    m.saturating_mul(experts_per_token)
        .saturating_mul(widths)
        .saturating_mul(act_bytes)
}

impl ForwardShape {
    fn t(&self) -> u64 {
        self.batch.saturating_mul(self.tokens)
    }
}

/// The peak transient of a forward, by part.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ForwardPeak {
    /// Largest single-layer transient (attention or FFN block), without the layer's input.
    pub layer_bytes: u64,
    /// Index of that layer.
    pub layer_index: u64,
    /// Eager attention scores of that layer (included in `layer_bytes`).
    pub eager_scores_bytes: u64,
    /// `repeat_kv` copies of K and V at all query heads (eager GQA/MQA; included in `layer_bytes`).
    pub repeat_kv_bytes: u64,
    /// MoE routing buffers of that layer (included in `layer_bytes`).
    pub moe_routing_bytes: u64,
    /// The peak layer's input, held by the caller's loop (0 when it is `inputs_embeds` itself).
    pub block_input_bytes: u64,
    /// `inputs_embeds` (and gpt2's learned position embeddings), alive for the whole forward.
    pub embeddings_bytes: u64,
    /// int64 `position_ids` (batch 1), alive for the whole forward.
    pub position_ids_bytes: u64,
    /// Additive attention mask(s), alive for the whole forward (eager only).
    pub mask_bytes: u64,
    /// Rotary cos/sin, alive for the whole forward.
    pub rope_bytes: u64,
    /// Logits at the end.
    pub logits_bytes: u64,
    /// Final hidden state when the logits are computed.
    pub final_hidden_bytes: u64,
    /// `generate`'s fp32 copy of the last position's logits (`batch × vocab × 4 B`).
    pub logits_upcast_bytes: u64,
}

impl ForwardPeak {
    /// Tensors alive for the whole forward (inside the model's `forward`).
    pub fn whole_forward_bytes(&self) -> u64 {
        self.embeddings_bytes
            .saturating_add(self.position_ids_bytes)
            .saturating_add(self.mask_bytes)
            .saturating_add(self.rope_bytes)
    }

    /// The head's peak: final hidden + logits, then the logits + their fp32 copy.
    pub fn head_bytes(&self) -> u64 {
        self.logits_bytes
            .saturating_add(self.final_hidden_bytes.max(self.logits_upcast_bytes))
    }

    /// Bytes above weights and cache at the peak: the largest layer with its input and what lives
    /// for the whole forward, or the head (after the model's forward returned).
    pub fn total(&self) -> u64 {
        self.layer_bytes
            .saturating_add(self.block_input_bytes)
            .saturating_add(self.whole_forward_bytes())
            .max(self.head_bytes())
    }
}

fn uses_rope(spec: &ModelSpec) -> bool {
    spec.kind == ModelKind::DecoderOnly
        && !matches!(spec.text_model_type.as_str(), "gpt2" | "opt" | "bloom")
}

/// gpt2 and OpenAI GPT add learned position embeddings into a new tensor (`GPT2Model.forward`,
/// `OpenAIGPTModel.forward`), and their fused `c_attn` output stays alive through the attention
/// (q, k and v are views of it).
fn learned_positions(spec: &ModelSpec) -> bool {
    matches!(spec.text_model_type.as_str(), "gpt2" | "openai-gpt")
}

/// Eager score bytes per element: `softmax(dtype=float32)` (llama and its copies, opt, bloom)
/// holds the masked scores, their fp32 copy and the fp32 result; gpt2, bert and t5 call
/// `softmax` in the activation dtype (masked scores + result).
fn score_bytes_per_element(spec: &ModelSpec, act_bytes: u64) -> u64 {
    if spec.text_model_type == "openai-gpt" {
        // `Attention._attn`: `w / sqrt(d)`, then `w * b + -1e4 * (1 - b)` holds the scaled scores,
        // `w * b` and `-1e4 * (1 - b)` when the sum is made: four score-sized tensors in the dtype
        4 * act_bytes
    } else if matches!(spec.text_model_type.as_str(), "gpt2" | "bert" | "t5") {
        2 * act_bytes
    } else if act_bytes >= 4 {
        act_bytes + 4
    } else {
        act_bytes + 4 + 4
    }
}

/// Always-eager architectures (scores materialised whatever `attn_implementation` says): t5 adds a
/// learned position bias to the scores; OpenAI GPT's `Attention._attn` has no other path.
fn always_eager(spec: &ModelSpec) -> bool {
    matches!(spec.text_model_type.as_str(), "t5" | "openai-gpt")
}

/// Attention block transient of one layer without its input: `(bytes, eager scores, repeat_kv)`.
fn attention_bytes(spec: &ModelSpec, layer: &LayerSpec, s: &ForwardShape) -> (u64, u64, u64) {
    let Some(a) = layer.attention else {
        return (0, 0, 0);
    };
    let h = spec.hidden_size;
    let q = a.num_heads.saturating_mul(a.head_dim);
    let (k, v) = if a.mla.is_some() {
        (q, a.num_heads.saturating_mul(a.v_head_dim))
    } else {
        (
            a.num_kv_heads.saturating_mul(a.head_dim),
            a.num_kv_heads.saturating_mul(a.v_head_dim),
        )
    };
    let eager = matches!(s.attention, AttentionImpl::Eager) || always_eager(spec);
    // MLA in transformers ≥ 5.15 caches the compressed latent and expands all cached tokens in every
    // forward (`expand_kv`): kv_b_proj's output [kv_len, heads × (nope + v)] (whose split halves are
    // views) and the new key [kv_len, heads × (nope + rope)].
    let mla_expand = a.mla.map_or(0, |m| {
        let per_token = a.num_heads.saturating_mul(
            m.qk_nope_head_dim
                .saturating_add(a.v_head_dim)
                .saturating_add(m.qk_nope_head_dim)
                .saturating_add(m.qk_rope_head_dim),
        );
        s.batch
            .saturating_mul(s.kv_len)
            .saturating_mul(per_token)
            .saturating_mul(s.act_bytes)
    });
    if !eager {
        let width = if a.mla.is_some() {
            h + 2 * q + v
        } else {
            h + 2 * q + 2 * k + v
        };
        return (
            s.t()
                .saturating_mul(width)
                .saturating_mul(s.act_bytes)
                .saturating_add(mla_expand),
            0,
            0,
        );
    }
    // At the softmax: the normed input, the rotated q (gpt2: the fused c_attn output its q views),
    // repeat_kv's copies, the scores.
    let qkv = if learned_positions(spec) {
        q + k + v
    } else {
        q
    };
    let base = s.t().saturating_mul(h + qkv).saturating_mul(s.act_bytes);
    let repeat = if a.mla.is_none() && a.num_kv_heads < a.num_heads {
        s.batch
            .saturating_mul(a.num_heads)
            .saturating_mul(s.kv_len)
            .saturating_mul(a.head_dim + a.v_head_dim)
            .saturating_mul(s.act_bytes)
    } else {
        0
    };
    let scores = s
        .batch
        .saturating_mul(a.num_heads)
        .saturating_mul(s.tokens)
        .saturating_mul(s.kv_len)
        .saturating_mul(score_bytes_per_element(spec, s.act_bytes));
    (
        base.saturating_add(repeat)
            .saturating_add(scores)
            .saturating_add(mla_expand),
        scores,
        repeat,
    )
}

/// Whether transformers 5 runs this model's experts through `grouped_mm_experts_forward`: its
/// default for the expert classes decorated `@use_experts_implementation` (mixtral, qwen2/3 MoE,
/// olmoe, deepseek v2/v3 and kimi-k2's, gpt-oss, granitemoe, jamba); dbrx, llama4 and remote-code
/// MoE models keep their own loops.
fn experts_grouped(spec: &ModelSpec) -> bool {
    matches!(
        spec.text_model_type.as_str(),
        "mixtral"
            | "qwen2_moe"
            | "qwen3_moe"
            | "olmoe"
            | "deepseek_v2"
            | "deepseek_v3"
            | "kimi_k2"
            | "gpt_oss"
            | "granitemoe"
            | "jamba"
    )
}

/// FFN (or mixer) block transient of one layer, and its MoE routing part.
fn ffn_bytes(spec: &ModelSpec, layer: &LayerSpec, s: &ForwardShape) -> (u64, u64) {
    let h = spec.hidden_size;
    let t = s.t();
    let a = s.act_bytes;
    // A mixer layer (mamba) runs its mixer, then (jamba) its feed-forward block: the larger of the
    // two transients is the layer's.
    let mixer = layer.ssm.map_or(0, |ssm| {
        if ssm.conv_channels() > ssm.d_inner {
            // Mamba-2 through the mamba-ssm / causal-conv1d kernels (vLLM; transformers when they
            // are installed): in_proj's output (z, xBC, dt), the convolved xBC, the scan output
            // and the gated-norm output.
            let in_proj = ssm
                .d_inner
                .saturating_mul(2)
                .saturating_add(ssm.conv_channels() - ssm.d_inner)
                .saturating_add(ssm.dt_rank);
            if s.ssm_scan == SsmScan::Torch {
                // in_proj's output and the convolved xBC stay while `mamba2_chunk_scan` runs
                return t
                    .saturating_mul(in_proj.saturating_add(ssm.conv_channels()))
                    .saturating_mul(a)
                    .saturating_add(torch_chunk_scan_bytes(&ssm, s.batch, s.tokens));
            }
            let width = in_proj
                .saturating_add(ssm.conv_channels())
                .saturating_add(ssm.d_inner.saturating_mul(2));
            return t.saturating_mul(width).saturating_mul(a);
        }
        let proj = t.saturating_mul(h + 4 * ssm.d_inner).saturating_mul(a);
        // transformers 5 `mamba_selective_scan` (torch path): `discrete_A`, `discrete_B` and
        // `deltaB_u`, each [batch, d_inner, T, state] in fp32, all bound through the recurrence;
        // at `deltaB_u`'s creation also the fp32 copy of the scan's input [batch, d_inner, T]
        let scan = t
            .saturating_mul(ssm.d_inner)
            .saturating_mul(ssm.state_size)
            .saturating_mul(3 * 4)
            .saturating_add(t.saturating_mul(ssm.d_inner).saturating_mul(4));
        proj.saturating_add(scan)
    });
    let (ffn, routing) = ffn_only_bytes(spec, layer, s);
    if mixer >= ffn {
        (mixer, 0)
    } else {
        (ffn, routing)
    }
}

/// transformers 5.24's torch `mamba2_chunk_scan` (modeling_nemotron_h.py) at its peak, all fp32,
/// for `tokens` padded to `P = c × l` (c chunks of `chunk_size` l), h heads of p channels, state n:
/// the padded `x` and `D·x`, B and C repeated to every head (`3 × P·h·n` with `B·decay`), the
/// segment sum L, the scores G and `M = G·L` (`3 × h·c·l²`), `Y_diag`, `C·states`, `Y_off`, their sum
/// and its contiguous copy (`7 × P·h·p` with the two above), the chunk states and their
/// concatenation with the initial state (`(2c + 1) × h·p·n`), and four `[h, P]` decay tensors.
/// Measured on the CPU (Nemotron-3-Nano, 128 tokens in one chunk of 256): 180,487,680 B above the
/// mixer's inputs, 1,536 B more than this.
fn torch_chunk_scan_bytes(ssm: &SsmSpec, batch: u64, tokens: u64) -> u64 {
    let heads = ssm.dt_rank.max(1);
    let head_dim = ssm.d_inner / heads;
    let n = ssm.state_size;
    let l = if ssm.chunk_size == 0 {
        128
    } else {
        ssm.chunk_size
    };
    let chunks = tokens.div_ceil(l).max(1);
    let padded = chunks.saturating_mul(l);
    let per = |elems: u64| batch.saturating_mul(elems).saturating_mul(4);
    let x = per(padded.saturating_mul(heads).saturating_mul(head_dim));
    let bc = per(padded.saturating_mul(heads).saturating_mul(n));
    let scores = per(heads
        .saturating_mul(chunks)
        .saturating_mul(l)
        .saturating_mul(l));
    let state = per(heads.saturating_mul(head_dim).saturating_mul(n));
    let decay = per(heads.saturating_mul(padded));
    x.saturating_mul(7)
        .saturating_add(bc.saturating_mul(3))
        .saturating_add(scores.saturating_mul(3))
        .saturating_add(state.saturating_mul(2 * chunks + 1))
        .saturating_add(decay.saturating_mul(4))
}

/// The feed-forward block's transient of one layer, and its MoE routing part.
fn ffn_only_bytes(spec: &ModelSpec, layer: &LayerSpec, s: &ForwardShape) -> (u64, u64) {
    let h = spec.hidden_size;
    let t = s.t();
    let a = s.act_bytes;
    match layer.ffn {
        Some(FfnSpec::Dense {
            intermediate_size,
            gated,
        }) => {
            // gated: act, up, act·up; gelu_new: c_fc output, 0.5·x, pow(x, 3), 0.044715·pow.
            let inner = if gated {
                3
            } else if spec.hidden_act == "gelu_new" {
                4
            } else {
                2
            };
            // gpt2's block keeps `attn_output` bound through the MLP.
            let kept = if learned_positions(spec) { 3 } else { 2 };
            (
                t.saturating_mul(kept * h + inner * intermediate_size)
                    .saturating_mul(a),
                0,
            )
        }
        Some(FfnSpec::Moe {
            num_experts,
            experts_per_token,
            expert_intermediate_size,
            shared_intermediate_size,
            ..
        }) => {
            let e = num_experts.max(1);
            let k = experts_per_token;
            let i = expert_intermediate_size;
            let shared = t
                .saturating_mul(3 * shared_intermediate_size)
                .saturating_mul(a);
            let base = t.saturating_mul(3 * h).saturating_mul(a);
            // router logits + their fp32 softmax + top-k weights and indices
            let router = t
                .saturating_mul(e)
                .saturating_mul(a + 4)
                .saturating_add(t.saturating_mul(k).saturating_mul(4 + 8));
            if let ExpertsPath::VllmFused {
                chunk_tokens,
                separate_caches,
            } = s.experts
            {
                // router logits, fp32 top-k weights and int32 ids, and the fused kernel's caches
                let routing = t
                    .saturating_mul(e)
                    .saturating_mul(a)
                    .saturating_add(t.saturating_mul(k).saturating_mul(4 + 4));
                let workspace =
                    fused_moe_workspace_bytes(t, k, i, h, a, chunk_tokens, separate_caches);
                return (
                    base.saturating_add(routing)
                        .saturating_add(workspace.max(shared)),
                    routing,
                );
            }
            if s.experts == ExpertsPath::Transformers && experts_grouped(spec) {
                // transformers 5's default `grouped_mm_experts_forward` for `@use_experts_implementation`
                // classes: the S = T·k token copies sorted by expert (`selected_hidden_states_g`,
                // bound to the end) beside, at its largest, the up projection and its masked copy
                // (S·4I), the down output with its masked copy and the gated input (S·(2h + I)), or
                // the weighted output and its unpermuted copy (S·3h more); int64 sort indices,
                // permutation and inverse (S·8 each) and the fp32 histogram input (S·4).
                let s_pairs = t.saturating_mul(k);
                let widest = (h + 4 * i).max(2 * h + i).max(4 * h);
                let experts = s_pairs
                    .saturating_mul(widest)
                    .saturating_mul(a)
                    .saturating_add(s_pairs.saturating_mul(3 * 8 + 4));
                let routing = router.saturating_add(s_pairs.saturating_mul(3 * 8 + 4));
                return (
                    base.saturating_add(router)
                        .saturating_add(experts.max(shared)),
                    routing,
                );
            }
            // the experts loop (one expert at a time) with its int64 one-hot expert mask
            let routing =
                router.saturating_add(t.saturating_mul(k).saturating_mul(e).saturating_mul(8));
            let per_expert_tokens = t.saturating_mul(k).div_ceil(e);
            let expert = per_expert_tokens
                .saturating_mul(h + 3 * i)
                .saturating_mul(a);
            (
                base.saturating_add(routing)
                    .saturating_add(expert.max(shared)),
                routing,
            )
        }
        None => (0, 0),
    }
}

/// `(attention transients, eager scores, repeat_kv copies)` of one layer.
type AttentionBytes = (u64, u64, u64);
/// `(MLP/experts transients, MoE routing)` of one layer.
type FfnBytes = (u64, u64);

/// The peak of one forward over the main stack (the decoder, or bert's encoder; t5's encoder and
/// decoder layers alike).
pub fn forward_peak(spec: &ModelSpec, s: &ForwardShape) -> ForwardPeak {
    forward_peak_over(spec, s, Stacks::All)
}

/// The peak of an encoder–decoder's encoder pass over the prompt (`model.get_encoder()(…)`, as
/// `generate()` runs it once): its layers, embeddings and position bias; no head.
pub fn encoder_pass_peak(spec: &ModelSpec, s: &ForwardShape) -> ForwardPeak {
    let mut p = forward_peak_over(spec, s, Stacks::Encoder);
    p.logits_bytes = 0;
    p.final_hidden_bytes = 0;
    p.logits_upcast_bytes = 0;
    p
}

/// One decoder step of an encoder–decoder against its cache: the decoder's layers only.
pub fn decoder_step_peak(spec: &ModelSpec, s: &ForwardShape) -> ForwardPeak {
    forward_peak_over(spec, s, Stacks::Decoder)
}

/// Which layers a forward runs through.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stacks {
    All,
    Encoder,
    Decoder,
}

fn forward_peak_over(spec: &ModelSpec, s: &ForwardShape, stacks: Stacks) -> ForwardPeak {
    let mut p = ForwardPeak::default();
    let encoder: &[LayerSpec] =
        if spec.kind == ModelKind::EncoderDecoder && stacks != Stacks::Decoder {
            &spec.encoder_layers
        } else {
            &[]
        };
    let decoder: &[LayerSpec] = if stacks == Stacks::Encoder {
        &[]
    } else {
        &spec.layers
    };
    let hidden = s
        .t()
        .saturating_mul(spec.hidden_size)
        .saturating_mul(s.act_bytes);
    let positions = learned_positions(spec);
    let mut best = 0u64;
    // Layers of one spec cost the same: each distinct one is computed once (a handful per model).
    // Decoder layers are keyed by their kind (`ModelSpec::derived`), encoder layers by their spec.
    let kinds = &spec.derived().layer_kind;
    let mut seen: Vec<(usize, AttentionBytes, FfnBytes)> = Vec::new();
    for (i, layer) in encoder.iter().chain(decoder.iter()).enumerate() {
        let key = match i.checked_sub(encoder.len()) {
            Some(d) => kinds.get(d).copied().unwrap_or(d) + encoder.len(),
            None => encoder.iter().position(|e| e == layer).unwrap_or(i),
        };
        let ((attn, scores, repeat), (ffn, routing)) = match seen.iter().find(|e| e.0 == key) {
            Some(e) => (e.1, e.2),
            None => {
                let a = attention_bytes(spec, layer, s);
                let f = ffn_bytes(spec, layer, s);
                seen.push((key, a, f));
                (a, f)
            }
        };
        let layer_bytes = attn.max(ffn);
        // Layer 0's input is `inputs_embeds` itself, except where positions are added into a copy.
        let input = if i > 0 || positions { hidden } else { 0 };
        if layer_bytes.saturating_add(input) > best {
            best = layer_bytes.saturating_add(input);
            p.layer_bytes = layer_bytes;
            p.block_input_bytes = input;
            p.layer_index = i as u64;
            p.eager_scores_bytes = if attn >= ffn { scores } else { 0 };
            p.repeat_kv_bytes = if attn >= ffn { repeat } else { 0 };
            p.moe_routing_bytes = if ffn > attn { routing } else { 0 };
        }
    }
    p.embeddings_bytes = hidden;
    if learned_positions(spec) {
        p.embeddings_bytes = p.embeddings_bytes.saturating_add(
            s.tokens
                .saturating_mul(spec.hidden_size)
                .saturating_mul(s.act_bytes),
        );
    }
    if spec.kind == ModelKind::DecoderOnly {
        p.position_ids_bytes = s.tokens.saturating_mul(8);
    }
    let first = spec.layers.iter().find_map(|l| l.attention);
    let eager = matches!(s.attention, AttentionImpl::Eager) || always_eager(spec);
    if eager {
        let masks = if spec
            .layers
            .iter()
            .any(|l| l.attention.is_some_and(|a| a.sliding_window.is_some()))
        {
            2
        } else {
            1
        };
        let per_mask = s
            .batch
            .saturating_mul(s.tokens)
            .saturating_mul(s.kv_len)
            .saturating_mul(s.act_bytes);
        p.mask_bytes = if spec.text_model_type == "openai-gpt" {
            // its causal mask is the `attn.bias` buffer (a model buffer), cropped as a view
            0
        } else if always_eager(spec) {
            // t5's position bias `[batch, heads, tokens, kv_len]` replaces the mask.
            per_mask.saturating_mul(first.map_or(1, |a| a.num_heads))
        } else {
            per_mask.saturating_mul(masks)
        };
    }
    if uses_rope(spec) {
        // cos/sin follow `position_ids`, which has batch 1.
        let dim = first.map_or(0, |a| a.mla.map_or(a.head_dim, |m| m.qk_rope_head_dim));
        p.rope_bytes = s
            .tokens
            .saturating_mul(dim)
            .saturating_mul(2)
            .saturating_mul(s.act_bytes);
    }
    if spec.kind != ModelKind::EncoderOnly {
        let keep = if s.logits_to_keep == 0 {
            s.tokens
        } else {
            s.logits_to_keep.min(s.tokens)
        };
        p.logits_bytes = s
            .batch
            .saturating_mul(keep)
            .saturating_mul(spec.vocab_size)
            .saturating_mul(s.act_bytes);
        p.final_hidden_bytes = hidden;
        p.logits_upcast_bytes = s.batch.saturating_mul(spec.vocab_size).saturating_mul(4);
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::find;

    fn spec(id: &str) -> ModelSpec {
        crate::parse_config(find(id).unwrap().json, None).unwrap()
    }

    fn shape(tokens: u64, attention: AttentionImpl) -> ForwardShape {
        ForwardShape {
            batch: 1,
            tokens,
            kv_len: tokens,
            act_bytes: 2,
            attention,
            logits_to_keep: 1,
            experts: ExpertsPath::Transformers,
            ssm_scan: SsmScan::Kernels,
        }
    }

    #[test]
    fn llama3_8b_sdpa_prefill_peak_is_the_gated_mlp() {
        // MLP: 4096 tokens × (2 × 4096 + 3 × 14336) × 2 B; rope (batch 1): 4096 × 128 × 2 × 2 B.
        let s = spec("meta-llama__Llama-3.1-8B");
        let p = forward_peak(&s, &shape(4096, AttentionImpl::Sdpa));
        assert_eq!(p.layer_bytes, 4096 * (2 * 4096 + 3 * 14336) * 2);
        assert_eq!(p.rope_bytes, 4096 * 128 * 2 * 2);
        assert_eq!(p.logits_bytes, 128_256 * 2);
        assert_eq!(p.mask_bytes, 0);
    }

    #[test]
    fn eager_scores_grow_with_the_square_of_the_prompt() {
        // bf16 scores + their fp32 copy + the fp32 softmax: 32 heads × 4096² × (2 + 4 + 4) B = 5 GiB,
        // repeat_kv copies of K and V at 32 heads: 4096 × 32 × (128 + 128) × 2 B = 64 MiB, and a
        // 4096² × 2 B mask.
        let s = spec("meta-llama__Llama-3.1-8B");
        let p = forward_peak(&s, &shape(4096, AttentionImpl::Eager));
        assert_eq!(p.eager_scores_bytes, 32 * 4096 * 4096 * 10);
        assert_eq!(p.repeat_kv_bytes, 4096 * 32 * 256 * 2);
        assert_eq!(p.mask_bytes, 4096 * 4096 * 2);
        // normed input + rotated q (4096 wide each) ride on top, with the layer's input.
        assert_eq!(
            p.layer_bytes,
            4096 * (4096 + 4096) * 2 + p.repeat_kv_bytes + p.eager_scores_bytes
        );
        assert_eq!(p.block_input_bytes, 4096 * 4096 * 2);
    }

    #[test]
    fn fp32_eager_softmax_needs_no_extra_copy() {
        // `toType(float32)` on fp32 scores is the same tensor: masked scores + softmax = 8 B.
        let s = spec("meta-llama__Llama-3.1-8B");
        let mut sh = shape(1024, AttentionImpl::Eager);
        sh.act_bytes = 4;
        let p = forward_peak(&s, &sh);
        assert_eq!(p.eager_scores_bytes, 32 * 1024 * 1024 * 8);
    }

    #[test]
    fn whole_forward_tensors_and_the_head_do_not_overlap() {
        // Llama-3.1-8B, 4096 bf16 tokens: inputs_embeds 4096 × 4096 × 2 B and position ids 4096 × 8 B
        // live through the layers; the head (after the model returned) holds the final hidden state
        // and the last position's logits, then the logits and generate's fp32 copy.
        let s = spec("meta-llama__Llama-3.1-8B");
        let p = forward_peak(&s, &shape(4096, AttentionImpl::Sdpa));
        assert_eq!(p.embeddings_bytes, 4096 * 4096 * 2);
        assert_eq!(p.position_ids_bytes, 4096 * 8);
        assert_eq!(p.logits_upcast_bytes, 128_256 * 4);
        assert_eq!(p.head_bytes(), 128_256 * 2 + 4096 * 4096 * 2);
        assert_eq!(
            p.total(),
            p.layer_bytes + p.block_input_bytes + p.embeddings_bytes + 4096 * 8 + p.rope_bytes
        );
    }

    #[test]
    fn gpt2_keeps_learned_positions_attn_output_and_gelu_new_temporaries() {
        // gpt2, batch 2 × 1023 fp32 tokens (T = 2046): MLP = residual + ln_2 output + attn_output
        // (3 × 768) + gelu_new's c_fc output, 0.5·x, pow, 0.044715·pow (4 × 3072), the block input
        // 768, embeddings 2046 × 768 + position embeddings 1023 × 768, position ids 1023 × 8 B.
        let s = spec("openai-community__gpt2");
        let sh = ForwardShape {
            batch: 2,
            tokens: 1023,
            kv_len: 1023,
            act_bytes: 4,
            attention: AttentionImpl::Sdpa,
            logits_to_keep: 1,
            experts: ExpertsPath::Transformers,
            ssm_scan: SsmScan::Kernels,
        };
        let p = forward_peak(&s, &sh);
        assert_eq!(p.layer_bytes, 2046 * (3 * 768 + 4 * 3072) * 4);
        assert_eq!(p.block_input_bytes, 2046 * 768 * 4);
        assert_eq!(p.embeddings_bytes, (2046 + 1023) * 768 * 4);
        assert_eq!(p.rope_bytes, 0);
        assert_eq!(p.total(), 135_142_392);
    }

    #[test]
    fn all_position_logits_dominate_small_models() {
        let s = spec("Qwen__Qwen3-0.6B");
        let mut sh = shape(2048, AttentionImpl::Sdpa);
        sh.logits_to_keep = 0;
        let p = forward_peak(&s, &sh);
        assert_eq!(p.logits_bytes, 2048 * 151_936 * 2);
        assert!(p.total() > p.layer_bytes);
    }
}
