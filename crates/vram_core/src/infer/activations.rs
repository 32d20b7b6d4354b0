//! Transient activation memory of a forward pass without gradients (prefill, decode, vLLM's
//! profiling run): what is alive at the peak of the largest layer, and the logits.
//!
//! What HF transformers 5 keeps alive at once inside one decoder layer (`modeling_llama.py` and the
//! generated copies), for `T = batch × tokens` tokens in the activation dtype `a`:
//! - attention (SDPA / flash): the residual and the normed input (2h), q, k, v and the rotated q and
//!   k (2q + 2k + v); SDPA's flash / memory-efficient kernels keep O(T) softmax statistics only.
//! - eager attention (`eager_attention_forward`): `matmul` and `* scaling`, `+ mask`, `softmax(dtype=
//!   float32)` and `.to(dtype)` overlap, so 8 bytes per score element (2 + 4 + 2, or 4 + 4 in fp32)
//!   over `batch × heads × tokens × kv_len`, plus the additive float mask `batch × tokens × kv_len`
//!   (built once per forward, alive for all layers).
//! - gated MLP: `act(gate(x)) * up(x)` holds act, up and their product (3I) with x and the residual
//!   (2h); plain MLPs hold 2I.
//! - MoE (transformers 5 `*Experts` loop): router logits `T × E`, fp32 routing softmax, the int64
//!   one-hot `expert_mask` `E × k × T`, `final_hidden_states` `T × h`, and one expert's MLP on its
//!   tokens (`T·k/E` when balanced), plus shared experts on all tokens.
//! - mamba (`MambaMixer.slow_forward`, the path without the CUDA kernels): `in_proj` output `2·d_inner`,
//!   and the fp32 `discrete_A` and `deltaB_u`, each `d_inner × state_size` per token.
//! - rotary `cos`/`sin` (`T × head_dim` each) live for the whole forward.
//! - logits: `batch × positions × vocab` in the activation dtype, positions = `logits_to_keep` (1 when
//!   generating; all when asked for).

use crate::scenario::AttentionImpl;
use crate::spec::{FfnSpec, LayerSpec, ModelKind, ModelSpec};

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
}

impl ForwardShape {
    fn t(&self) -> u64 {
        self.batch.saturating_mul(self.tokens)
    }
}

/// The peak transient of a forward, by part.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ForwardPeak {
    /// Largest single-layer transient (attention or FFN block).
    pub layer_bytes: u64,
    /// Index of that layer.
    pub layer_index: u64,
    /// Eager attention scores of that layer (included in `layer_bytes`).
    pub eager_scores_bytes: u64,
    /// MoE routing buffers of that layer (included in `layer_bytes`).
    pub moe_routing_bytes: u64,
    /// Additive attention mask(s), alive for the whole forward (eager only).
    pub mask_bytes: u64,
    /// Rotary cos/sin, alive for the whole forward.
    pub rope_bytes: u64,
    /// Logits at the end.
    pub logits_bytes: u64,
    /// Final hidden state when the logits are computed.
    pub final_hidden_bytes: u64,
}

impl ForwardPeak {
    /// Bytes above weights and cache at the peak: the larger of the largest layer and the head,
    /// plus what lives for the whole forward.
    pub fn total(&self) -> u64 {
        self.layer_bytes
            .max(self.final_hidden_bytes.saturating_add(self.logits_bytes))
            .saturating_add(self.mask_bytes)
            .saturating_add(self.rope_bytes)
    }
}

fn uses_rope(spec: &ModelSpec) -> bool {
    spec.kind == ModelKind::DecoderOnly
        && !matches!(spec.text_model_type.as_str(), "gpt2" | "opt" | "bloom")
}

/// Always-eager architectures (scores materialised whatever `attn_implementation` says): t5 adds a
/// learned position bias to the scores.
fn always_eager(spec: &ModelSpec) -> bool {
    spec.text_model_type == "t5"
}

/// Attention block transient of one layer (without eager scores).
fn attention_bytes(spec: &ModelSpec, layer: &LayerSpec, s: &ForwardShape) -> (u64, u64) {
    let Some(a) = layer.attention else {
        return (0, 0);
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
    let width = 2 * h + 2 * q + 2 * k + v;
    let base = s.t().saturating_mul(width).saturating_mul(s.act_bytes);
    let eager = matches!(s.attention, AttentionImpl::Eager) || always_eager(spec);
    let scores = if eager {
        s.batch
            .saturating_mul(a.num_heads)
            .saturating_mul(s.tokens)
            .saturating_mul(s.kv_len)
            .saturating_mul(8)
    } else {
        0
    };
    (base.saturating_add(scores), scores)
}

/// FFN (or mixer) block transient of one layer, and its MoE routing part.
fn ffn_bytes(spec: &ModelSpec, layer: &LayerSpec, s: &ForwardShape) -> (u64, u64) {
    let h = spec.hidden_size;
    let t = s.t();
    let a = s.act_bytes;
    if let Some(ssm) = layer.ssm {
        let proj = t.saturating_mul(h + 4 * ssm.d_inner).saturating_mul(a);
        let scan = t
            .saturating_mul(ssm.d_inner)
            .saturating_mul(ssm.state_size)
            .saturating_mul(2 * 4);
        return (proj.saturating_add(scan), 0);
    }
    match layer.ffn {
        Some(FfnSpec::Dense {
            intermediate_size,
            gated,
        }) => {
            let inner = if gated { 3 } else { 2 };
            (
                t.saturating_mul(2 * h + inner * intermediate_size)
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
            let routing = t
                .saturating_mul(e)
                .saturating_mul(a + 4)
                .saturating_add(t.saturating_mul(k).saturating_mul(4 + 8))
                .saturating_add(t.saturating_mul(k).saturating_mul(e).saturating_mul(8));
            let per_expert_tokens = t.saturating_mul(k).div_ceil(e);
            let expert = per_expert_tokens
                .saturating_mul(h + 3 * expert_intermediate_size)
                .saturating_mul(a);
            let shared = t
                .saturating_mul(3 * shared_intermediate_size)
                .saturating_mul(a);
            let base = t.saturating_mul(3 * h).saturating_mul(a);
            (
                base.saturating_add(routing)
                    .saturating_add(expert.max(shared)),
                routing,
            )
        }
        None => (0, 0),
    }
}

/// The peak of one forward over the main stack (the decoder, or bert's encoder).
pub fn forward_peak(spec: &ModelSpec, s: &ForwardShape) -> ForwardPeak {
    let mut p = ForwardPeak::default();
    let layers: Vec<&LayerSpec> = if spec.kind == ModelKind::EncoderDecoder {
        spec.encoder_layers
            .iter()
            .chain(spec.layers.iter())
            .collect()
    } else {
        spec.layers.iter().collect()
    };
    for (i, layer) in layers.iter().enumerate() {
        let (attn, scores) = attention_bytes(spec, layer, s);
        let (ffn, routing) = ffn_bytes(spec, layer, s);
        let layer_bytes = attn.max(ffn);
        if layer_bytes > p.layer_bytes {
            p.layer_bytes = layer_bytes;
            p.layer_index = i as u64;
            p.eager_scores_bytes = if attn >= ffn { scores } else { 0 };
            p.moe_routing_bytes = if ffn > attn { routing } else { 0 };
        }
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
        p.mask_bytes = if always_eager(spec) {
            // t5's position bias `[batch, heads, tokens, kv_len]` replaces the mask.
            per_mask.saturating_mul(first.map_or(1, |a| a.num_heads))
        } else {
            per_mask.saturating_mul(masks)
        };
    }
    if uses_rope(spec) {
        let dim = first.map_or(0, |a| a.mla.map_or(a.head_dim, |m| m.qk_rope_head_dim));
        p.rope_bytes = s
            .t()
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
        p.final_hidden_bytes = s
            .t()
            .saturating_mul(spec.hidden_size)
            .saturating_mul(s.act_bytes);
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
        }
    }

    #[test]
    fn llama3_8b_sdpa_prefill_peak_is_the_gated_mlp() {
        // MLP: 4096 tokens × (2 × 4096 + 3 × 14336) × 2 B; rope: 4096 × 128 × 2 × 2 B.
        let s = spec("meta-llama__Llama-3.1-8B");
        let p = forward_peak(&s, &shape(4096, AttentionImpl::Sdpa));
        assert_eq!(p.layer_bytes, 4096 * (2 * 4096 + 3 * 14336) * 2);
        assert_eq!(p.rope_bytes, 4096 * 128 * 2 * 2);
        assert_eq!(p.logits_bytes, 128_256 * 2);
        assert_eq!(p.mask_bytes, 0);
    }

    #[test]
    fn eager_scores_grow_with_the_square_of_the_prompt() {
        // 32 heads × 4096² × 8 B = 4 GiB of scores in one layer, plus a 4096² × 2 B mask.
        let s = spec("meta-llama__Llama-3.1-8B");
        let p = forward_peak(&s, &shape(4096, AttentionImpl::Eager));
        assert_eq!(p.eager_scores_bytes, 32 * 4096 * 4096 * 8);
        assert_eq!(p.mask_bytes, 4096 * 4096 * 2);
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
