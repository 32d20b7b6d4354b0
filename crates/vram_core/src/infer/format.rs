//! Weight formats for inference: their names (what `--weights` accepts), parsing with an error that
//! lists every valid name, and the default a config's `quantization_config` implies.
//!
//! Sources: transformers `quantizers/quantizer_*.py` and `utils/quantization_config.py` (the keys
//! `quant_method`, `bits`, `group_size`, `weight_block_size`, `load_in_4bit`, `bnb_4bit_quant_type`,
//! `bnb_4bit_use_double_quant`, `modules_to_not_convert`); llama.cpp `src/llama-quant.cpp` for GGUF.

use crate::error::ScenarioError;
use crate::scenario::Dtype;
use crate::spec::ModelSpec;
use serde::{Deserialize, Serialize};

/// A GGUF file type preset of `llama-quantize` (the `LLAMA_FTYPE_MOSTLY_*` the user picks).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GgufPreset {
    /// `Q8_0`: 8-bit, blocks of 32 with an fp16 scale (8.5 bits/weight).
    Q8_0,
    /// `Q6_K`: 6-bit k-quant (6.5625 bits/weight).
    Q6K,
    /// `Q5_K_M`: 5-bit k-quant, attn_v/ffn_down of some layers in Q6_K.
    Q5KM,
    /// `Q4_K_M`: 4-bit k-quant, attn_v/ffn_down of some layers in Q6_K.
    Q4KM,
    /// `Q4_0`: 4-bit legacy quant, blocks of 32 with an fp16 scale (4.5 bits/weight).
    Q4_0,
    /// `Q3_K_M`: 3-bit k-quant with Q4_K/Q5_K attn_v, attn_output and ffn_down.
    Q3KM,
    /// `Q2_K`: 2-bit k-quant with Q3_K/Q4_K attn_v, attn_output and ffn_down.
    Q2K,
}

impl GgufPreset {
    /// The name `llama-quantize` uses.
    pub fn name(self) -> &'static str {
        match self {
            GgufPreset::Q8_0 => "Q8_0",
            GgufPreset::Q6K => "Q6_K",
            GgufPreset::Q5KM => "Q5_K_M",
            GgufPreset::Q4KM => "Q4_K_M",
            GgufPreset::Q4_0 => "Q4_0",
            GgufPreset::Q3KM => "Q3_K_M",
            GgufPreset::Q2K => "Q2_K",
        }
    }
}

/// How the weights are stored in device memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum WeightFormat {
    /// Every tensor in one float dtype.
    Float {
        /// fp32, bf16 or fp16.
        dtype: Dtype,
    },
    /// FP8 (e4m3) linear weights with fp32 scales; everything else in the compute dtype.
    Fp8 {
        /// `Some([rows, cols])`: one `weight_scale_inv` per block (DeepSeek-V3 `[128, 128]`);
        /// `None`: one scale per tensor (vLLM `--quantization fp8`, compressed-tensors FP8).
        block: Option<[u64; 2]>,
    },
    /// bitsandbytes `LLM.int8()`: int8 rows with one fp32 absmax (`SCB`) per output row.
    BnbInt8,
    /// bitsandbytes 4-bit (`Linear4bit`): two weights per byte, an absmax per block of 64.
    Bnb4 {
        /// NF4 (`true`) or FP4 (`false`); same storage.
        nf4: bool,
        /// `bnb_4bit_use_double_quant`: the absmax itself quantized to 8 bits.
        double_quant: bool,
    },
    /// GPTQ (`QuantLinear`): packed int32 weights, fp16 scales and packed zeros per group, `g_idx`.
    Gptq {
        /// 2, 3, 4 or 8.
        bits: u64,
        /// Input rows per scale/zero group (`None`: one group per column, `group_size: -1`).
        group_size: Option<u64>,
    },
    /// AWQ (AutoAWQ GEMM): packed int32 4-bit weights, fp16 scales and packed zeros per group.
    Awq {
        /// 4.
        bits: u64,
        /// Input rows per group.
        group_size: u64,
    },
    /// MXFP4 (gpt-oss): expert weights as 4-bit e2m1 in blocks of 32 with an 8-bit e8m0 scale.
    Mxfp4,
    /// A GGUF file quantized with one of llama.cpp's presets.
    Gguf {
        /// The preset.
        preset: GgufPreset,
    },
}

/// Every name [`parse_weight_format`] accepts (GPTQ/AWQ also take a `-g<group>` suffix).
pub const WEIGHT_FORMAT_NAMES: &[&str] = &[
    "fp32",
    "bf16",
    "fp16",
    "fp8",
    "fp8-block",
    "int8",
    "nf4",
    "nf4-dq",
    "fp4",
    "fp4-dq",
    "gptq-2bit",
    "gptq-3bit",
    "gptq-4bit",
    "gptq-8bit",
    "awq-4bit",
    "mxfp4",
    "q8_0",
    "q6_k",
    "q5_k_m",
    "q4_k_m",
    "q4_0",
    "q3_k_m",
    "q2_k",
];

/// Group size of GPTQ/AWQ when the name gives none (the AutoGPTQ/AutoAWQ default).
pub const DEFAULT_GROUP_SIZE: u64 = 128;

impl WeightFormat {
    /// Canonical name, parseable by [`parse_weight_format`].
    pub fn name(&self) -> String {
        match self {
            WeightFormat::Float { dtype } => dtype.name().to_string(),
            WeightFormat::Fp8 { block: None } => "fp8".into(),
            WeightFormat::Fp8 {
                block: Some([128, 128]),
            } => "fp8-block".into(),
            WeightFormat::Fp8 {
                block: Some([r, c]),
            } => format!("fp8-block-{r}x{c}"),
            WeightFormat::BnbInt8 => "int8".into(),
            WeightFormat::Bnb4 { nf4, double_quant } => format!(
                "{}{}",
                if *nf4 { "nf4" } else { "fp4" },
                if *double_quant { "-dq" } else { "" }
            ),
            WeightFormat::Gptq { bits, group_size } => match group_size {
                Some(DEFAULT_GROUP_SIZE) => format!("gptq-{bits}bit"),
                Some(g) => format!("gptq-{bits}bit-g{g}"),
                None => format!("gptq-{bits}bit-g-1"),
            },
            WeightFormat::Awq { bits, group_size } => {
                if *group_size == DEFAULT_GROUP_SIZE {
                    format!("awq-{bits}bit")
                } else {
                    format!("awq-{bits}bit-g{group_size}")
                }
            }
            WeightFormat::Mxfp4 => "mxfp4".into(),
            WeightFormat::Gguf { preset } => preset.name().to_ascii_lowercase(),
        }
    }

    /// Whether the format quantizes anything (a float format does not).
    pub fn is_quantized(&self) -> bool {
        !matches!(self, WeightFormat::Float { .. })
    }
}

fn invalid(found: &str) -> ScenarioError {
    ScenarioError::Invalid {
        field: "weights".into(),
        expected: format!(
            "one of {} (gptq/awq accept a -g<group size> suffix, e.g. gptq-4bit-g64)",
            WEIGHT_FORMAT_NAMES.join(", ")
        ),
        found: format!("{found:?}"),
    }
}

/// Parses a format name (case-insensitive). The error names the field `weights` and lists every name.
pub fn parse_weight_format(name: &str) -> Result<WeightFormat, ScenarioError> {
    let lower = name.trim().to_ascii_lowercase();
    let simple = match lower.as_str() {
        "fp32" | "float32" => Some(WeightFormat::Float { dtype: Dtype::Fp32 }),
        "bf16" | "bfloat16" => Some(WeightFormat::Float { dtype: Dtype::Bf16 }),
        "fp16" | "float16" => Some(WeightFormat::Float { dtype: Dtype::Fp16 }),
        "fp8" => Some(WeightFormat::Fp8 { block: None }),
        "fp8-block" => Some(WeightFormat::Fp8 {
            block: Some([128, 128]),
        }),
        "int8" | "llm.int8" | "bnb-int8" => Some(WeightFormat::BnbInt8),
        "nf4" => Some(WeightFormat::Bnb4 {
            nf4: true,
            double_quant: false,
        }),
        "nf4-dq" => Some(WeightFormat::Bnb4 {
            nf4: true,
            double_quant: true,
        }),
        "fp4" => Some(WeightFormat::Bnb4 {
            nf4: false,
            double_quant: false,
        }),
        "fp4-dq" => Some(WeightFormat::Bnb4 {
            nf4: false,
            double_quant: true,
        }),
        "mxfp4" => Some(WeightFormat::Mxfp4),
        "q8_0" => Some(gguf(GgufPreset::Q8_0)),
        "q6_k" => Some(gguf(GgufPreset::Q6K)),
        "q5_k_m" => Some(gguf(GgufPreset::Q5KM)),
        "q4_k_m" => Some(gguf(GgufPreset::Q4KM)),
        "q4_0" => Some(gguf(GgufPreset::Q4_0)),
        "q3_k_m" => Some(gguf(GgufPreset::Q3KM)),
        "q2_k" => Some(gguf(GgufPreset::Q2K)),
        _ => None,
    };
    if let Some(f) = simple {
        return Ok(f);
    }
    for (prefix, awq) in [("gptq-", false), ("awq-", true)] {
        let Some(rest) = lower.strip_prefix(prefix) else {
            continue;
        };
        let (bits_part, group_part) = match rest.split_once("-g") {
            Some((b, g)) => (b, Some(g)),
            None => (rest, None),
        };
        let bits: u64 = bits_part
            .strip_suffix("bit")
            .and_then(|b| b.parse().ok())
            .ok_or_else(|| invalid(name))?;
        let group = match group_part {
            None => Some(DEFAULT_GROUP_SIZE),
            Some("-1") if !awq => None,
            Some(g) => Some(
                g.parse::<u64>()
                    .ok()
                    .filter(|&g| g > 0 && g <= 1 << 20)
                    .ok_or_else(|| invalid(name))?,
            ),
        };
        return if awq {
            match (bits, group) {
                (4, Some(group_size)) => Ok(WeightFormat::Awq { bits, group_size }),
                _ => Err(invalid(name)),
            }
        } else if matches!(bits, 2 | 3 | 4 | 8) {
            Ok(WeightFormat::Gptq {
                bits,
                group_size: group,
            })
        } else {
            Err(invalid(name))
        };
    }
    Err(invalid(name))
}

fn gguf(preset: GgufPreset) -> WeightFormat {
    WeightFormat::Gguf { preset }
}

/// The format the config's `quantization_config` declares, or `None` for an unquantized checkpoint
/// (or a `quant_method` this estimator does not model, reported in `note`).
pub fn format_from_config(spec: &ModelSpec) -> (Option<WeightFormat>, Option<String>) {
    let Some(q) = spec.quantization_config.as_ref() else {
        return (None, None);
    };
    let method = q
        .get("quant_method")
        .and_then(|m| m.as_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let u = |key: &str| q.get(key).and_then(|v| v.as_u64());
    let format = match method.as_str() {
        "fp8" => {
            let block = q
                .get("weight_block_size")
                .and_then(|b| b.as_array())
                .and_then(|a| match a.as_slice() {
                    [r, c] => Some([r.as_u64()?, c.as_u64()?]),
                    _ => None,
                })
                .filter(|[r, c]| *r > 0 && *c > 0);
            Some(WeightFormat::Fp8 { block })
        }
        "mxfp4" => Some(WeightFormat::Mxfp4),
        "gptq" => {
            let bits = u("bits").unwrap_or(4);
            let group = match q.get("group_size").and_then(|v| v.as_i64()) {
                Some(g) if g > 0 => Some(g as u64),
                Some(_) => None,
                None => Some(DEFAULT_GROUP_SIZE),
            };
            matches!(bits, 2 | 3 | 4 | 8).then_some(WeightFormat::Gptq {
                bits,
                group_size: group,
            })
        }
        "awq" => {
            let bits = u("bits").or(u("w_bit")).unwrap_or(4);
            let group_size = u("group_size")
                .or(u("q_group_size"))
                .unwrap_or(DEFAULT_GROUP_SIZE);
            (bits == 4 && group_size > 0).then_some(WeightFormat::Awq { bits, group_size })
        }
        "bitsandbytes" => {
            let flag = |k: &str| q.get(k).and_then(|v| v.as_bool()).unwrap_or(false);
            if flag("load_in_4bit") {
                Some(WeightFormat::Bnb4 {
                    nf4: q.get("bnb_4bit_quant_type").and_then(|v| v.as_str()) == Some("nf4"),
                    double_quant: flag("bnb_4bit_use_double_quant"),
                })
            } else if flag("load_in_8bit") {
                Some(WeightFormat::BnbInt8)
            } else {
                None
            }
        }
        _ => None,
    };
    let note = match (&format, method.is_empty()) {
        (Some(_), _) => None,
        (None, true) => Some("quantization_config has no quant_method: weights read as unquantized".into()),
        (None, false) => Some(format!(
            "quantization_config quant_method {method:?} with these settings is not modelled: weights read as unquantized (pass --weights to choose a format)"
        )),
    };
    (format, note)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_name_parses_and_round_trips() {
        for name in WEIGHT_FORMAT_NAMES {
            let f = parse_weight_format(name).unwrap();
            assert_eq!(parse_weight_format(&f.name()).unwrap(), f, "{name}");
        }
    }

    #[test]
    fn gptq_group_suffix_is_read() {
        assert_eq!(
            parse_weight_format("GPTQ-3bit-g64").unwrap(),
            WeightFormat::Gptq {
                bits: 3,
                group_size: Some(64)
            }
        );
        assert_eq!(
            parse_weight_format("gptq-4bit-g-1").unwrap(),
            WeightFormat::Gptq {
                bits: 4,
                group_size: None
            }
        );
    }

    #[test]
    fn unknown_name_error_lists_valid_names() {
        let err = parse_weight_format("q4_k_s").unwrap_err().to_string();
        assert!(
            err.starts_with("weights: expected one of fp32, bf16"),
            "{err}"
        );
        assert!(
            err.contains("q4_k_m") && err.contains("\"q4_k_s\""),
            "{err}"
        );
        assert!(parse_weight_format("awq-3bit").is_err());
        assert!(parse_weight_format("gptq-5bit").is_err());
    }
}
