//! GGUF weight sizes with the per-tensor type mix that `llama-quantize` really writes.
//!
//! Rules from llama.cpp `src/llama-quant.cpp`, `llama_tensor_get_type` (and `use_more_bits`):
//! - `output.weight` (or `token_embd.weight` when there is no separate output): Q6_K, unless the
//!   preset's type is Q8_0 (then Q8_0).
//! - `attn_v.weight`: Q2_K → Q4_K if n_gqa ≥ 4 else Q3_K; Q3_K_M → Q5_K for the first 2, else Q4_K;
//!   Q4_K_M/Q5_K_M → Q6_K where `use_more_bits(i, n)`; a 70B llama bumps Q3_K/Q4_K to Q5_K;
//!   8-expert models (Mixtral) → Q8_0.
//! - `ffn_down` (dense, `_exps`, `_shexp`): Q2_K → Q3_K; Q3_K_M → Q5_K for i < n/16, else Q4_K;
//!   Q4_K_M/Q5_K_M → Q6_K where `use_more_bits(i, n)`.
//! - `attn_output.weight`: Q2_K → Q3_K, Q3_K_M → Q4_K; with 8 experts Q2_K/Q3_K_M/Q4_K_M → Q5_K.
//! - `attn_qkv.weight` (fused): Q3_K_M → Q4_K, Q4_K_M → Q5_K, Q5_K_M → Q6_K.
//! - Not quantized: 1-D tensors (norms, biases: F32), `ffn_gate_inp` (router), position embeddings,
//!   `ssm_conv1d` (kept as converted: F16 for 2-D, F32 for 1-D).
//! - k-quants need rows (`ne[0]` = in_features) divisible by 256, else the fallback: Q2_K/Q3_K →
//!   IQ4_NL, Q4_K → Q5_0, Q5_K → Q5_1, Q6_K → Q8_0.
//!
//! Block sizes (`ggml/src/ggml-common.h`): Q4_0 32 → 18 B, Q5_0 32 → 22 B, Q5_1 32 → 24 B,
//! Q8_0 32 → 34 B, IQ4_NL 32 → 18 B, Q2_K 256 → 84 B, Q3_K 256 → 110 B, Q4_K 256 → 144 B,
//! Q5_K 256 → 176 B, Q6_K 256 → 210 B.
//!
//! llama.cpp keeps `token_embd` in host memory (the input layer is always on the CPU), so it is
//! reported as host-resident.

use super::format::GgufPreset;
use super::weights::{is_linear_weight, linear_dims, WeightsBreakdown};
use crate::spec::{Component, ModelSpec, TensorSpec};

/// A ggml tensor type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum GgmlType {
    /// 4 bytes.
    F32,
    /// 2 bytes.
    F16,
    /// 32 → 34 B.
    Q8_0,
    /// 32 → 24 B.
    Q5_1,
    /// 32 → 22 B.
    Q5_0,
    /// 32 → 18 B.
    Q4_0,
    /// 32 → 18 B.
    Iq4Nl,
    /// 256 → 210 B.
    Q6K,
    /// 256 → 176 B.
    Q5K,
    /// 256 → 144 B.
    Q4K,
    /// 256 → 110 B.
    Q3K,
    /// 256 → 84 B.
    Q2K,
}

impl GgmlType {
    /// `(elements per block, bytes per block)`.
    pub fn block(self) -> (u64, u64) {
        match self {
            GgmlType::F32 => (1, 4),
            GgmlType::F16 => (1, 2),
            GgmlType::Q8_0 => (32, 34),
            GgmlType::Q5_1 => (32, 24),
            GgmlType::Q5_0 => (32, 22),
            GgmlType::Q4_0 | GgmlType::Iq4Nl => (32, 18),
            GgmlType::Q6K => (256, 210),
            GgmlType::Q5K => (256, 176),
            GgmlType::Q4K => (256, 144),
            GgmlType::Q3K => (256, 110),
            GgmlType::Q2K => (256, 84),
        }
    }

    /// ggml's name.
    pub fn name(self) -> &'static str {
        match self {
            GgmlType::F32 => "F32",
            GgmlType::F16 => "F16",
            GgmlType::Q8_0 => "Q8_0",
            GgmlType::Q5_1 => "Q5_1",
            GgmlType::Q5_0 => "Q5_0",
            GgmlType::Q4_0 => "Q4_0",
            GgmlType::Iq4Nl => "IQ4_NL",
            GgmlType::Q6K => "Q6_K",
            GgmlType::Q5K => "Q5_K",
            GgmlType::Q4K => "Q4_K",
            GgmlType::Q3K => "Q3_K",
            GgmlType::Q2K => "Q2_K",
        }
    }

    /// Bytes of a tensor of `rows` rows of `cols` elements.
    pub fn tensor_bytes(self, rows: u64, cols: u64) -> u64 {
        let (n, b) = self.block();
        rows.saturating_mul(cols.div_ceil(n)).saturating_mul(b)
    }
}

/// The llama.cpp role of a tensor, from its HF name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    TokenEmbd,
    Output,
    AttnV,
    AttnQkv,
    AttnOutput,
    FfnDown,
    OtherLinear,
    NotQuantized,
}

fn role(t: &TensorSpec, has_output: bool) -> Role {
    match t.component {
        Component::Embedding if !has_output => Role::Output,
        Component::Embedding => Role::TokenEmbd,
        Component::LmHead => Role::Output,
        _ if !is_linear_weight(t) => Role::NotQuantized,
        _ => {
            let leaf = t.module_leaf();
            let name = t.name.as_str();
            if matches!(leaf, "v_proj" | "value") {
                Role::AttnV
            } else if matches!(leaf, "qkv_proj" | "c_attn" | "query_key_value") {
                Role::AttnQkv
            } else if t.component == Component::Attention
                && matches!(leaf, "o_proj" | "dense" | "out_proj" | "c_proj")
            {
                Role::AttnOutput
            } else if name.contains("down_proj")
                || (leaf == "c_proj" && t.component == Component::Mlp)
                || matches!(leaf, "fc2" | "dense_4h_to_h")
                || (t.component == Component::Experts && name.ends_with("down_proj"))
            {
                Role::FfnDown
            } else {
                Role::OtherLinear
            }
        }
    }
}

/// `use_more_bits` of llama-quant.cpp: the first and last eighth of the layers, and every third between.
pub fn use_more_bits(i: u64, n: u64) -> bool {
    i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2
}

fn base_type(p: GgufPreset) -> GgmlType {
    match p {
        GgufPreset::Q8_0 => GgmlType::Q8_0,
        GgufPreset::Q6K => GgmlType::Q6K,
        GgufPreset::Q5KM => GgmlType::Q5K,
        GgufPreset::Q4KM => GgmlType::Q4K,
        GgufPreset::Q4_0 => GgmlType::Q4_0,
        GgufPreset::Q3KM => GgmlType::Q3K,
        GgufPreset::Q2K => GgmlType::Q2K,
    }
}

struct Ctx {
    preset: GgufPreset,
    n_layers: u64,
    n_gqa: u64,
    n_expert: u64,
    is_70b: bool,
}

fn choose(ctx: &Ctx, role: Role, layer: u64, i_attn_v: u64, n_attn_v: u64) -> GgmlType {
    use GgmlType as T;
    use GgufPreset as P;
    let p = ctx.preset;
    let base = base_type(p);
    match role {
        Role::NotQuantized => T::F16,
        Role::Output => {
            if base == T::Q8_0 {
                T::Q8_0
            } else {
                T::Q6K
            }
        }
        Role::TokenEmbd | Role::OtherLinear => base,
        Role::AttnV => {
            let mut t = match p {
                P::Q2K if ctx.n_gqa >= 4 => T::Q4K,
                P::Q2K => T::Q3K,
                P::Q3KM if i_attn_v < 2 => T::Q5K,
                P::Q3KM => T::Q4K,
                P::Q4KM | P::Q5KM if use_more_bits(i_attn_v, n_attn_v) => T::Q6K,
                _ => base,
            };
            if ctx.is_70b && matches!(t, T::Q3K | T::Q4K) {
                t = T::Q5K;
            }
            if ctx.n_expert == 8 {
                t = T::Q8_0;
            }
            t
        }
        Role::FfnDown => match p {
            P::Q2K => T::Q3K,
            P::Q3KM if layer < ctx.n_layers / 16 => T::Q5K,
            P::Q3KM => T::Q4K,
            P::Q4KM | P::Q5KM if use_more_bits(layer, ctx.n_layers) => T::Q6K,
            _ => base,
        },
        Role::AttnOutput => {
            if ctx.n_expert == 8 {
                match p {
                    P::Q2K | P::Q3KM | P::Q4KM => T::Q5K,
                    _ => base,
                }
            } else {
                match p {
                    P::Q2K => T::Q3K,
                    P::Q3KM => T::Q4K,
                    _ => base,
                }
            }
        }
        Role::AttnQkv => match p {
            P::Q3KM => T::Q4K,
            P::Q4KM => T::Q5K,
            P::Q5KM => T::Q6K,
            _ => base,
        },
    }
}

/// k-quant fallback when a row is not a multiple of 256 (`llama_tensor_get_type`, "fallback").
fn fallback(t: GgmlType, cols: u64) -> GgmlType {
    let (block, _) = t.block();
    if cols.is_multiple_of(block) {
        return t;
    }
    match t {
        GgmlType::Q2K | GgmlType::Q3K => GgmlType::Iq4Nl,
        GgmlType::Q4K => GgmlType::Q5_0,
        GgmlType::Q5K => GgmlType::Q5_1,
        GgmlType::Q6K => GgmlType::Q8_0,
        _ => GgmlType::F16,
    }
}

/// The ggml type of every tensor of `spec` under `preset`, one per instance
/// ([`ModelSpec::instances`]: per layer, in a per-layer inventory's order).
pub fn tensor_types(spec: &ModelSpec, preset: GgufPreset) -> Vec<GgmlType> {
    let has_output = spec
        .tensors
        .iter()
        .any(|t| t.component == Component::LmHead);
    let first_attn = spec.layers.iter().find_map(|l| l.attention);
    let n_gqa = first_attn.map_or(1, |a| a.num_heads / a.num_kv_heads.max(1));
    let n_expert = spec
        .layers
        .iter()
        .find_map(|l| match l.ffn {
            Some(crate::spec::FfnSpec::Moe { num_experts, .. }) => Some(num_experts),
            _ => None,
        })
        .unwrap_or(0);
    let ctx = Ctx {
        preset,
        n_layers: spec.num_layers,
        n_gqa,
        n_expert,
        is_70b: spec.text_model_type == "llama" && spec.num_layers == 80,
    };
    let n_attn_v = spec
        .tensors
        .iter()
        .filter(|t| is_linear_weight(t) && role(t, has_output) == Role::AttnV)
        .map(|t| t.count())
        .sum::<u64>();
    let mut i_attn_v = 0u64;
    spec.instances()
        .map(|inst| {
            let t = inst.tensor;
            let r = role(t, has_output);
            if t.shape.len() < 2 {
                return GgmlType::F32;
            }
            let ty = choose(
                &ctx,
                r,
                u64::from(inst.layer.unwrap_or(0)),
                i_attn_v,
                n_attn_v,
            );
            if r == Role::AttnV {
                i_attn_v += 1;
            }
            if r == Role::NotQuantized {
                return ty;
            }
            let (_, _, cols) = match r {
                Role::TokenEmbd | Role::Output => (1, 0, *t.shape.last().unwrap_or(&1)),
                _ => linear_dims(spec, t),
            };
            fallback(ty, cols)
        })
        .collect()
}

/// Bytes of tensor `t` of `spec` stored as `ty`: rows of `in_features` (the row a GGUF block runs
/// along; the last dimension for embeddings and heads, the whole tensor for 1-D ones).
pub(crate) fn stored_bytes(spec: &ModelSpec, t: &TensorSpec, ty: GgmlType) -> u64 {
    let n = t.numel();
    let cols = match t.shape.len() {
        0 | 1 => n.max(1),
        _ if is_linear_weight(t) => linear_dims(spec, t).2,
        _ => *t.shape.last().unwrap_or(&1),
    };
    ty.tensor_bytes(n / cols.max(1), cols)
}

/// Weight bytes of `spec` as a GGUF file of `preset` (tensor data only, no metadata).
pub fn weights(spec: &ModelSpec, preset: GgufPreset) -> WeightsBreakdown {
    let types = tensor_types(spec, preset);
    let mut by_type: std::collections::BTreeMap<GgmlType, u64> = Default::default();
    let mut b = WeightsBreakdown {
        total_bytes: 0,
        quantized_params: 0,
        quantized_bytes: 0,
        unquantized_params: 0,
        unquantized_bytes: 0,
        largest_tensor_compute_bytes: 0,
        host_resident_bytes: 0,
        params_by_type: Vec::new(),
    };
    let has_output = spec
        .tensors
        .iter()
        .any(|t| t.component == Component::LmHead);
    for (inst, ty) in spec.instances().zip(types) {
        let t = inst.tensor;
        let n = t.numel();
        let bytes = stored_bytes(spec, t, ty);
        *by_type.entry(ty).or_insert(0) += n;
        if matches!(ty, GgmlType::F32 | GgmlType::F16) {
            b.unquantized_params += n;
            b.unquantized_bytes += bytes;
        } else {
            b.quantized_params += n;
            b.quantized_bytes += bytes;
        }
        if t.component == Component::Embedding && has_output {
            b.host_resident_bytes += bytes;
        }
        b.largest_tensor_compute_bytes = b.largest_tensor_compute_bytes.max(n.saturating_mul(2));
    }
    b.total_bytes = b.quantized_bytes + b.unquantized_bytes;
    b.params_by_type = by_type
        .into_iter()
        .map(|(k, v)| (k.name().to_string(), v))
        .collect();
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::find;

    fn spec(id: &str) -> ModelSpec {
        crate::parse_config(find(id).unwrap().json, None).unwrap()
    }

    #[test]
    fn use_more_bits_matches_llama_quant_for_32_layers() {
        let picked: Vec<u64> = (0..32).filter(|&i| use_more_bits(i, 32)).collect();
        assert_eq!(
            picked,
            vec![0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31]
        );
    }

    #[test]
    fn llama2_7b_q4_k_m_is_worked_by_hand() {
        // 16 of 32 layers (use_more_bits) have attn_v and ffn_down in Q6_K.
        // Q4_K: q,k,o (3 × 16,777,216) + gate,up (2 × 45,088,768) per layer, + attn_v and ffn_down
        // of the other 16 layers; Q6_K: output + 16 attn_v + 16 ffn_down; token_embd Q4_K.
        let s = spec("meta-llama__Llama-2-7b-hf");
        let w = weights(&s, GgufPreset::Q4KM);
        let q4k = |n: u64| n / 256 * 144;
        let q6k = |n: u64| n / 256 * 210;
        let attn = 16_777_216u64;
        let mlp = 45_088_768u64;
        let expected = 32 * (q4k(3 * attn) + q4k(2 * mlp))
            + 16 * (q6k(attn) + q6k(mlp))
            + 16 * (q4k(attn) + q4k(mlp))
            + q6k(131_072_000) // output
            + q4k(131_072_000) // token_embd
            + 65 * 4096 * 4; // norms F32
        assert_eq!(w.total_bytes, expected);
        assert_eq!(w.total_bytes, 4_080_263_168);
        assert_eq!(w.host_resident_bytes, q4k(131_072_000));
    }

    #[test]
    fn llama2_7b_q8_0_and_q4_0_are_worked_by_hand() {
        let s = spec("meta-llama__Llama-2-7b-hf");
        let norms = 65 * 4096 * 4;
        let linear = 6_476_005_376u64;
        let q8 = weights(&s, GgufPreset::Q8_0);
        assert_eq!(q8.total_bytes, (linear + 2 * 131_072_000) / 32 * 34 + norms);
        let q4 = weights(&s, GgufPreset::Q4_0);
        assert_eq!(
            q4.total_bytes,
            (linear + 131_072_000) / 32 * 18 + 131_072_000 / 256 * 210 + norms
        );
    }

    #[test]
    fn tied_embedding_is_quantized_as_output() {
        // Qwen3-0.6B ties lm_head: token_embd takes the output rule (Q6_K) and stays on the GPU.
        let s = spec("Qwen__Qwen3-0.6B");
        let types = tensor_types(&s, GgufPreset::Q4KM);
        let i = s
            .tensors
            .iter()
            .position(|t| t.component == Component::Embedding)
            .unwrap();
        assert_eq!(types[i], GgmlType::Q6K);
        assert_eq!(weights(&s, GgufPreset::Q4KM).host_resident_bytes, 0);
    }
}
