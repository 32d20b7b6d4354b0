//! Weight bytes per tensor for every [`WeightFormat`]: which tensors a format quantizes, and what a
//! quantized tensor really occupies (packed data plus scales, zeros, absmax and index buffers).
//!
//! Sources, per format:
//! - bitsandbytes `functional.py` (`quantize_4bit`: `(n + 1) // 2` packed bytes, fp32 absmax per block
//!   of 64; `compress_statistics`/double quant: uint8 absmax + fp32 absmax per 256 blocks + fp32 offset;
//!   a 16-entry fp32 `code` per tensor) and `nn/modules.py` (`Linear8bitLt`: int8 weight + fp32 `SCB`
//!   per output row). transformers `integrations/bitsandbytes.py::get_keys_to_not_convert` keeps the
//!   output head unquantized.
//! - GPTQ `QuantLinear` buffers (AutoGPTQ / GPTQModel): `qweight` int32 `[in/32·bits, out]`, `qzeros`
//!   int32 `[groups, out/32·bits]`, `scales` fp16 `[groups, out]`, `g_idx` int32 `[in]`.
//! - AutoAWQ `WQLinear_GEMM`: `qweight` int32 `[in, out/8]`, `qzeros` int32 `[groups, out/8]`,
//!   `scales` fp16 `[groups, out]`.
//! - FP8: DeepSeek-V3 checkpoint (`weight` e4m3 + fp32 `weight_scale_inv` of shape
//!   `[ceil(out/128), ceil(in/128)]`), vLLM `Fp8LinearMethod` (one fp32 scale per tensor).
//! - MXFP4: OCP MX spec and the gpt-oss checkpoint (`*_blocks` uint8 `[.., in/32, 16]` + `*_scales`
//!   uint8 `[.., in/32]`), only the MoE experts; `modules_to_not_convert` stay bf16.
//! - GGUF: [`super::gguf`].

use super::format::WeightFormat;
use super::gguf;
use crate::report::Term;
use crate::scenario::Dtype;
use crate::spec::{Component, ModelSpec, TensorSpec};
use crate::units::group_thousands;
use serde::{Deserialize, Serialize};

/// Weight bytes of a model in one format.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WeightsBreakdown {
    /// Every tensor, quantized or not.
    pub total_bytes: u64,
    /// Parameters stored quantized.
    pub quantized_params: u64,
    /// Bytes of the quantized tensors, including their scales/zeros/absmax/index buffers.
    pub quantized_bytes: u64,
    /// Parameters kept in a float dtype (embeddings, head, norms, biases, routers, ...).
    pub unquantized_params: u64,
    /// Bytes of those.
    pub unquantized_bytes: u64,
    /// The largest quantized tensor in the compute dtype (the transient of quantizing on load).
    pub largest_tensor_compute_bytes: u64,
    /// GGUF: bytes of the token embedding, which llama.cpp keeps in host memory (0 otherwise).
    pub host_resident_bytes: u64,
    /// Parameters per storage type (`bf16`, `nf4`, `Q4_K`, ...).
    pub params_by_type: Vec<(String, u64)>,
}

/// Whether a tensor is a linear weight a quantizer converts: `nn.Linear` weights and the fused 3-D
/// expert weights (per-expert `nn.Linear`s in the checkpoints), never embeddings, the output head,
/// norms, biases or routers.
pub(crate) fn is_linear_weight(t: &TensorSpec) -> bool {
    match t.component {
        Component::Embedding
        | Component::PositionEmbedding
        | Component::LmHead
        | Component::Norm
        | Component::FinalNorm
        | Component::Bias
        | Component::Router => false,
        Component::Experts => t.shape.len() == 3 && !t.name.ends_with("_bias"),
        _ => t.linear.is_some(),
    }
}

/// `(experts, out_features, in_features)` of a linear weight (experts = 1 for a 2-D weight).
/// transformers stores gpt-oss experts as `[E, in, out]`, the others as `[E, out, in]`.
pub(crate) fn linear_dims(spec: &ModelSpec, t: &TensorSpec) -> (u64, u64, u64) {
    if let Some(l) = t.linear {
        return (1, l.out_features, l.in_features);
    }
    match t.shape.as_slice() {
        [e, a, b] if spec.text_model_type == "gpt_oss" => (*e, *b, *a),
        [e, a, b] => (*e, *a, *b),
        [a, b] => (1, *a, *b),
        _ => (1, 1, t.numel()),
    }
}

/// Module path patterns a config excludes from quantization (`modules_to_not_convert`,
/// `llm_int8_skip_modules`), with `*` matching one dotted segment, matched as a prefix.
fn skip_patterns(spec: &ModelSpec) -> Vec<Vec<String>> {
    let Some(q) = spec.quantization_config.as_ref() else {
        return Vec::new();
    };
    ["modules_to_not_convert", "llm_int8_skip_modules"]
        .iter()
        .filter_map(|k| q.get(*k).and_then(|v| v.as_array()))
        .flatten()
        .filter_map(|v| v.as_str())
        .map(|p| p.split('.').map(str::to_string).collect())
        .collect()
}

/// Whether the dotted `name` starts with one of the dotted `patterns` (`*` matches any segment).
fn matches_skip(patterns: &[Vec<String>], name: &str) -> bool {
    patterns.iter().any(|p| {
        let mut segs = name.split('.');
        p.iter()
            .all(|pat| segs.next().is_some_and(|seg| pat == "*" || pat == seg))
    })
}

fn ceil_div(a: u64, b: u64) -> u64 {
    if b == 0 {
        return a;
    }
    a.div_ceil(b)
}

/// Bytes of one quantized linear weight `(experts, out, in)` in `format` (not for GGUF or floats).
fn quantized_linear_bytes(format: &WeightFormat, e: u64, out: u64, inp: u64) -> u64 {
    let n = out.saturating_mul(inp);
    let per_expert = match *format {
        WeightFormat::Float { dtype } => n.saturating_mul(dtype.bytes()),
        WeightFormat::Fp8 { block: None } => n.saturating_add(4),
        WeightFormat::Fp8 {
            block: Some([br, bc]),
        } => n.saturating_add(
            ceil_div(out, br)
                .saturating_mul(ceil_div(inp, bc))
                .saturating_mul(4),
        ),
        WeightFormat::BnbInt8 => n.saturating_add(out.saturating_mul(4)),
        WeightFormat::Bnb4 { double_quant, .. } => {
            let blocks = ceil_div(n, 64);
            let absmax = if double_quant {
                blocks + ceil_div(blocks, 256) * 4 + 4
            } else {
                blocks.saturating_mul(4)
            };
            ceil_div(n, 2) + absmax + 16 * 4
        }
        WeightFormat::Gptq { bits, group_size } => {
            let groups = group_size.map_or(1, |g| ceil_div(inp, g));
            let qweight = ceil_div(inp, 32) * bits * out * 4;
            let qzeros = groups * ceil_div(out, 32) * bits * 4;
            let scales = groups * out * 2;
            let g_idx = inp * 4;
            qweight + qzeros + scales + g_idx
        }
        WeightFormat::Awq { group_size, .. } => {
            let groups = ceil_div(inp, group_size);
            let qweight = inp * ceil_div(out, 8) * 4;
            let qzeros = groups * ceil_div(out, 8) * 4;
            let scales = groups * out * 2;
            qweight + qzeros + scales
        }
        WeightFormat::Mxfp4 => out.saturating_mul(ceil_div(inp, 32)).saturating_mul(17),
        WeightFormat::Gguf { .. } => 0,
    };
    per_expert.saturating_mul(e)
}

/// Storage-type label of a quantized tensor, for the breakdown.
fn quant_label(format: &WeightFormat) -> String {
    match format {
        WeightFormat::Float { dtype } => dtype.name().into(),
        WeightFormat::Fp8 { .. } => "fp8_e4m3".into(),
        WeightFormat::BnbInt8 => "int8".into(),
        WeightFormat::Bnb4 { nf4: true, .. } => "nf4".into(),
        WeightFormat::Bnb4 { nf4: false, .. } => "fp4".into(),
        WeightFormat::Gptq { bits, .. } => format!("gptq_int{bits}"),
        WeightFormat::Awq { bits, .. } => format!("awq_int{bits}"),
        WeightFormat::Mxfp4 => "mxfp4".into(),
        WeightFormat::Gguf { .. } => "gguf".into(),
    }
}

/// Whether `format` quantizes tensor `t` (before the config's skip list).
fn format_quantizes(format: &WeightFormat, t: &TensorSpec) -> bool {
    match format {
        WeightFormat::Float { .. } | WeightFormat::Gguf { .. } => false,
        // MXFP4 in gpt-oss: only the expert projections.
        WeightFormat::Mxfp4 => t.component == Component::Experts && is_linear_weight(t),
        _ => is_linear_weight(t),
    }
}

/// Weight bytes of `spec` in `format`, with float tensors in `compute`. `apply_config_skips`: honour
/// the config's `modules_to_not_convert` (when the format is the one the config declares).
pub fn weights(
    spec: &ModelSpec,
    format: &WeightFormat,
    compute: Dtype,
    apply_config_skips: bool,
) -> WeightsBreakdown {
    if let WeightFormat::Gguf { preset } = format {
        return gguf::weights(spec, *preset);
    }
    let skips = if apply_config_skips {
        skip_patterns(spec)
    } else {
        Vec::new()
    };
    let float_bytes = match format {
        WeightFormat::Float { dtype } => dtype.bytes(),
        _ => compute.bytes(),
    };
    let float_label = match format {
        WeightFormat::Float { dtype } => dtype.name(),
        _ => compute.name(),
    };
    let float_dtype = match format {
        WeightFormat::Float { dtype } => *dtype,
        _ => compute,
    };
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
    // Without skip patterns the tensors of a group (same shape and role) are alike; with them the
    // decision depends on each tensor's name.
    let per_instance: Vec<(usize, u64, bool)>;
    let units: &[(usize, u64, bool)] = if skips.is_empty() {
        &spec.derived().group_units
    } else {
        per_instance = spec
            .instances()
            .map(|inst| (inst.index, 1, matches_skip(&skips, &inst.name())))
            .collect();
        &per_instance
    };
    for &(i, count, skipped) in units {
        let t = &spec.tensors[i];
        let n = t.numel();
        if format_quantizes(format, t) && !skipped {
            b.largest_tensor_compute_bytes = b
                .largest_tensor_compute_bytes
                .max(n.saturating_mul(compute.bytes()));
            let (e, out, inp) = linear_dims(spec, t);
            b.quantized_params = b.quantized_params.saturating_add(n.saturating_mul(count));
            b.quantized_bytes = b
                .quantized_bytes
                .saturating_add(quantized_linear_bytes(format, e, out, inp).saturating_mul(count));
        } else {
            b.unquantized_params = b.unquantized_params.saturating_add(n.saturating_mul(count));
            let elem = if spec.keeps_fp32_in(t, float_dtype) {
                float_bytes.max(4)
            } else {
                float_bytes
            };
            b.unquantized_bytes = b
                .unquantized_bytes
                .saturating_add(n.saturating_mul(elem).saturating_mul(count));
        }
    }
    b.total_bytes = b.quantized_bytes.saturating_add(b.unquantized_bytes);
    if b.quantized_params > 0 {
        b.params_by_type
            .push((quant_label(format), b.quantized_params));
    }
    if b.unquantized_params > 0 {
        b.params_by_type
            .push((float_label.to_string(), b.unquantized_params));
    }
    b
}

/// The explained term for the weights.
pub fn weights_term(format: &WeightFormat, w: &WeightsBreakdown, compute: Dtype) -> Term {
    let formula = match format {
        WeightFormat::Float { dtype } => format!(
            "{} params × {} B = {} B",
            group_thousands(w.unquantized_params),
            dtype.bytes(),
            group_thousands(w.total_bytes)
        ),
        WeightFormat::Gguf { preset } => format!(
            "{}: Σ per tensor rows × ⌈cols/block⌉ × block bytes for the llama-quantize type mix ({}) = {} B",
            preset.name(),
            w.params_by_type
                .iter()
                .map(|(k, n)| format!("{k} {}", group_thousands(*n)))
                .collect::<Vec<_>>()
                .join(", "),
            group_thousands(w.total_bytes)
        ),
        _ => format!(
            "{} quantized params → {} B ({}, incl. scales/zeros) + {} params kept in {} × {} B = {} B",
            group_thousands(w.quantized_params),
            group_thousands(w.quantized_bytes),
            format_rule(format),
            group_thousands(w.unquantized_params),
            compute.name(),
            compute.bytes(),
            group_thousands(w.total_bytes)
        ),
    };
    Term {
        key: "weights".into(),
        bytes: w.total_bytes,
        formula,
        source: format_source(format).into(),
    }
}

fn format_rule(format: &WeightFormat) -> String {
    match format {
        WeightFormat::Float { .. } => String::new(),
        WeightFormat::Fp8 { block: None } => "1 B/weight + one fp32 scale per tensor".into(),
        WeightFormat::Fp8 {
            block: Some([r, c]),
        } => {
            format!("1 B/weight + fp32 scale per {r}×{c} block")
        }
        WeightFormat::BnbInt8 => "1 B/weight + fp32 SCB per output row".into(),
        WeightFormat::Bnb4 {
            double_quant: false,
            ..
        } => "0.5 B/weight + fp32 absmax per 64".into(),
        WeightFormat::Bnb4 {
            double_quant: true, ..
        } => "0.5 B/weight + uint8 absmax per 64 + fp32 per 256 blocks".into(),
        WeightFormat::Gptq { bits, group_size } => format!(
            "{bits} bits/weight + fp16 scale and {bits}-bit zero per {} inputs + int32 g_idx",
            group_size.map_or("all".to_string(), |g| g.to_string())
        ),
        WeightFormat::Awq { group_size, .. } => {
            format!("4 bits/weight + fp16 scale and 4-bit zero per {group_size} inputs")
        }
        WeightFormat::Mxfp4 => "experts only: 4 bits/weight + 1 B e8m0 scale per 32".into(),
        WeightFormat::Gguf { .. } => String::new(),
    }
}

fn format_source(format: &WeightFormat) -> &'static str {
    match format {
        WeightFormat::Float { .. } => "tensor inventory × dtype size",
        WeightFormat::Fp8 { .. } => {
            "DeepSeek-V3 quantization_config (weight_block_size) / vLLM Fp8LinearMethod; embeddings, lm_head, norms, routers stay 16-bit"
        }
        WeightFormat::BnbInt8 | WeightFormat::Bnb4 { .. } => {
            "bitsandbytes functional.quantize_4bit / Linear8bitLt; transformers get_keys_to_not_convert keeps lm_head"
        }
        WeightFormat::Gptq { .. } => "AutoGPTQ/GPTQModel QuantLinear buffers (qweight, qzeros, scales, g_idx)",
        WeightFormat::Awq { .. } => "AutoAWQ WQLinear_GEMM buffers (qweight, qzeros, scales)",
        WeightFormat::Mxfp4 => "OCP MX spec; gpt-oss checkpoint *_blocks/*_scales; modules_to_not_convert stay bf16",
        WeightFormat::Gguf { .. } => "llama.cpp src/llama-quant.cpp llama_tensor_get_type; ggml block sizes",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infer::format::parse_weight_format;
    use crate::presets::find;
    use crate::resolve_value;

    fn llama2_7b() -> ModelSpec {
        let p = find("meta-llama__Llama-2-7b-hf").unwrap();
        crate::parse_config(p.json, None).unwrap()
    }

    #[test]
    fn nf4_llama2_7b_is_worked_by_hand() {
        // Linear weights: 32 layers × (4·4096² + 3·4096·11008) = 6,476,005,376 params in 224 tensors.
        // Per q/k/v/o tensor (16,777,216 params): 8,388,608 B packed + 262,144 blocks × 4 B + 64 B code.
        // Per MLP tensor (45,088,768 params): 22,544,384 B + 704,512 × 4 B + 64 B.
        // Float: embed + lm_head 2 × 131,072,000 + norms 65 × 4096 = 262,410,240 params × 2 B.
        let spec = llama2_7b();
        let f = parse_weight_format("nf4").unwrap();
        let w = weights(&spec, &f, Dtype::Bf16, false);
        assert_eq!(w.quantized_params, 6_476_005_376);
        let attn = 8_388_608 + 262_144 * 4 + 64;
        let mlp = 22_544_384 + 704_512 * 4 + 64;
        assert_eq!(w.quantized_bytes, 32 * (4 * attn + 3 * mlp));
        assert_eq!(w.unquantized_bytes, 262_410_240 * 2);
        assert_eq!(w.total_bytes, 32 * (4 * attn + 3 * mlp) + 524_820_480);
    }

    #[test]
    fn nf4_double_quant_stores_absmax_in_one_byte() {
        let spec = llama2_7b();
        let dq = weights(
            &spec,
            &parse_weight_format("nf4-dq").unwrap(),
            Dtype::Bf16,
            false,
        );
        // q_proj: 262,144 blocks → 262,144 B + 1024 second-level fp32 absmax + 4 B offset.
        let attn = 8_388_608 + 262_144 + 1024 * 4 + 4 + 64;
        let mlp = 22_544_384 + 704_512 + 2752 * 4 + 4 + 64;
        assert_eq!(dq.quantized_bytes, 32 * (4 * attn + 3 * mlp));
    }

    #[test]
    fn gptq_4bit_g128_llama2_7b_is_worked_by_hand() {
        // q_proj [4096 → 4096]: qweight 4096/32·4·4096·4 B = 8,388,608; 32 groups:
        // qzeros 32 × 4096/32·4 × 4 B = 65,536; scales 32 × 4096 × 2 B = 262,144; g_idx 4096 × 4 B.
        // gate/up [4096 → 11008]: qweight 22,544,384; qzeros 32·344·4·4 = 176,128; scales 704,512; g_idx 16,384.
        // down [11008 → 4096]: qweight 22,544,384; 86 groups: qzeros 176,128; scales 704,512; g_idx 44,032.
        let spec = llama2_7b();
        let w = weights(
            &spec,
            &parse_weight_format("gptq-4bit").unwrap(),
            Dtype::Fp16,
            false,
        );
        let attn = 8_388_608 + 65_536 + 262_144 + 16_384;
        let gate_up = 22_544_384 + 176_128 + 704_512 + 16_384;
        let down = 22_544_384 + 176_128 + 704_512 + 44_032;
        assert_eq!(w.quantized_bytes, 32 * (4 * attn + 2 * gate_up + down));
    }

    #[test]
    fn deepseek_v3_fp8_block_scales_cover_every_linear() {
        let p = find("deepseek-ai__DeepSeek-V3").unwrap();
        let spec = crate::parse_config(p.json, None).unwrap();
        let f = super::super::format::format_from_config(&spec).0.unwrap();
        assert_eq!(
            f,
            WeightFormat::Fp8 {
                block: Some([128, 128])
            }
        );
        let w = weights(&spec, &f, Dtype::Bf16, true);
        // Unquantized: embed + lm_head 2 × 129,280 × 7168, norms, routers (+ their bias buffers).
        let embed = 2 * 129_280 * 7168u64;
        assert!(w.unquantized_params > embed);
        assert_eq!(w.quantized_params + w.unquantized_params, 671_026_419_200);
        // 1 B per fp8 weight plus at most 1/16384 · 4 B of scales (+ partial blocks).
        assert!(w.quantized_bytes > w.quantized_params);
        assert!(w.quantized_bytes < w.quantized_params + w.quantized_params / 2000);
    }

    #[test]
    fn mxfp4_quantizes_only_gpt_oss_experts() {
        let p = find("openai__gpt-oss-20b").unwrap();
        let v: serde_json::Value = serde_json::from_str(p.json).unwrap();
        let spec = resolve_value(&v, None).unwrap();
        let w = weights(&spec, &WeightFormat::Mxfp4, Dtype::Bf16, true);
        // 24 layers × 32 experts × (2880·5760 + 2880·2880) params.
        assert_eq!(w.quantized_params, 24 * 32 * (2880 * 5760 + 2880 * 2880));
        // gate_up: 5760 rows × 90 blocks × 17 B; down: 2880 rows × 90 blocks × 17 B.
        assert_eq!(
            w.quantized_bytes,
            24 * 32 * (5760 * 90 * 17 + 2880 * 90 * 17)
        );
    }
}
