//! Exact parameter counts from a checkpoint's own safetensors headers (all shards), with the
//! quantized layouts unpacked:
//! - GPTQ / AutoAWQ: `*.qweight` int32 packs `32 / bits` weights per element; `qzeros`, `scales`,
//!   `g_idx` are quantization state, not parameters (AutoGPTQ `QuantLinear`, AutoAWQ `WQLinear`).
//! - bitsandbytes 4-bit: `*.weight` uint8 packs 2 weights per byte when `*.weight.absmax` sits beside
//!   it; `absmax`, `quant_map`, `nested_*`, `quant_state.*` are state. LLM.int8: `SCB`, `weight_format`.
//! - FP8 checkpoints: `weight_scale`, `weight_scale_inv`, `input_scale` are state.
//! - MXFP4 (gpt-oss): `*_blocks` uint8 packs 2 FP4 weights per byte; `*_scales` are state.
//!
//! Every other tensor counts its elements. Compared with the config's own inventory, the names
//! that one has and the other lacks are reported, so a disagreement is never silent.

use crate::safetensors_file::{SafetensorsHeader, SafetensorsIndex};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Parameters and bytes of one storage dtype.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DtypeCount {
    /// safetensors dtype (`BF16`, `I32`, ...).
    pub dtype: String,
    /// Tensors stored in it.
    pub tensors: u64,
    /// Parameters they hold (packed weights unpacked).
    pub params: u64,
    /// Bytes in the file.
    pub bytes: u64,
}

/// What the headers say (`checkpoint` in `vram estimate --json`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointCount {
    /// Header files read.
    pub files: u64,
    /// Tensors in them.
    pub tensors: u64,
    /// Parameters (packed quantized weights unpacked; quantization state not counted).
    pub params: u64,
    /// Tensor data bytes (what the weights occupy on disk and, for the checkpoint's own format, in memory).
    pub data_bytes: u64,
    /// Per storage dtype.
    pub by_dtype: Vec<DtypeCount>,
    /// Bytes of quantization state (scales, zeros, absmax, ...).
    pub quant_state_bytes: u64,
    /// The quantized layout found, if any (`gptq/awq 4-bit`, `bnb 4-bit`, `bnb int8`, `fp8`, `mxfp4`).
    pub quantization: Option<String>,
    /// `metadata.total_size` of the index, when one was given.
    pub index_total_size: Option<u64>,
    /// Tensor names, sorted (for comparison with a config; not serialised).
    #[serde(skip)]
    pub names: Vec<String>,
}

fn is_state(name: &str, names: &BTreeSet<&str>) -> bool {
    const SUFFIXES: &[&str] = &[
        ".qzeros",
        ".g_idx",
        ".SCB",
        ".weight_format",
        ".absmax",
        ".quant_map",
        ".nested_absmax",
        ".nested_quant_map",
        ".weight_scale",
        ".weight_scale_inv",
        ".input_scale",
        ".weight_scale_2",
    ];
    if SUFFIXES.iter().any(|s| name.ends_with(s)) || name.contains(".quant_state.") {
        return true;
    }
    if let Some(base) = name.strip_suffix(".scales") {
        return names.contains(format!("{base}.qweight").as_str());
    }
    if let Some(base) = name.strip_suffix("_scales") {
        return names.contains(format!("{base}_blocks").as_str());
    }
    false
}

/// Counts the tensors of `headers` (one per file); `bits`: the GPTQ/AWQ bit width from the config's
/// `quantization_config` (4 when unknown).
pub fn count(headers: &[SafetensorsHeader], bits: Option<u64>) -> CheckpointCount {
    let all: BTreeSet<&str> = headers
        .iter()
        .flat_map(|h| h.tensors.iter().map(|t| t.name.as_str()))
        .collect();
    let bits = bits.filter(|b| matches!(b, 2 | 3 | 4 | 8)).unwrap_or(4);
    let mut c = CheckpointCount {
        files: headers.len() as u64,
        ..CheckpointCount::default()
    };
    let mut by: BTreeMap<String, DtypeCount> = BTreeMap::new();
    let mut quant: Option<String> = None;
    for t in headers.iter().flat_map(|h| h.tensors.iter()) {
        c.tensors += 1;
        c.data_bytes = c.data_bytes.saturating_add(t.bytes());
        if is_state(&t.name, &all) {
            c.quant_state_bytes = c.quant_state_bytes.saturating_add(t.bytes());
            if t.name.ends_with(".weight_scale") || t.name.ends_with(".weight_scale_inv") {
                quant.get_or_insert_with(|| "fp8".into());
            }
            if t.name.ends_with(".SCB") {
                quant.get_or_insert_with(|| "bnb int8".into());
            }
            continue;
        }
        let n = t.numel();
        let params = if t.name.ends_with(".qweight") {
            quant.get_or_insert_with(|| format!("gptq/awq {bits}-bit"));
            n.saturating_mul(32 / bits)
        } else if t.name.ends_with("_blocks") && t.dtype == "U8" {
            quant.get_or_insert_with(|| "mxfp4".into());
            n.saturating_mul(2)
        } else if t.dtype == "U8" && all.contains(format!("{}.absmax", t.name).as_str()) {
            quant.get_or_insert_with(|| "bnb 4-bit".into());
            n.saturating_mul(2)
        } else {
            n
        };
        c.params = c.params.saturating_add(params);
        let e = by.entry(t.dtype.clone()).or_insert_with(|| DtypeCount {
            dtype: t.dtype.clone(),
            tensors: 0,
            params: 0,
            bytes: 0,
        });
        e.tensors += 1;
        e.params = e.params.saturating_add(params);
        e.bytes = e.bytes.saturating_add(t.bytes());
        c.names.push(t.name.clone());
    }
    c.names.sort();
    c.by_dtype = by.into_values().collect();
    c.quantization = quant;
    c
}

/// What an index alone says: the exact weight bytes (`metadata.total_size`) and the shard files.
pub fn from_index(index: &SafetensorsIndex) -> CheckpointCount {
    CheckpointCount {
        files: index.files().len() as u64,
        tensors: index.weight_map.len() as u64,
        data_bytes: index.total_size.unwrap_or(0),
        index_total_size: index.total_size,
        ..CheckpointCount::default()
    }
}

/// An index names more shard files than were given with it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the index names {named} shard files, {given} given: give every shard (or only the index, for the weight bytes)")]
pub struct MissingShards {
    /// Shard files the index names.
    pub named: u64,
    /// Headers given.
    pub given: u64,
}

/// The GPTQ/AWQ bit width a config declares (`quantization_config.bits`), for [`count`].
pub fn config_bits(spec: &crate::ModelSpec) -> Option<u64> {
    spec.quantization_config
        .as_ref()
        .and_then(|q| q.get("bits"))
        .and_then(|b| b.as_u64())
}

/// What a checkpoint's headers and index say together, as the CLI and the page combine them: the
/// headers' count (with the index's `total_size` recorded), else the index alone (its bytes), else
/// nothing. Headers that are only some of the shards an index names are refused.
pub fn combine(
    headers: &[SafetensorsHeader],
    index: Option<&SafetensorsIndex>,
    bits: Option<u64>,
) -> Result<Option<CheckpointCount>, MissingShards> {
    if headers.is_empty() {
        return Ok(index.map(from_index));
    }
    if let Some(idx) = index {
        let named = idx.files().len() as u64;
        let given = headers.len() as u64;
        if given < named {
            return Err(MissingShards { named, given });
        }
    }
    let mut c = count(headers, bits);
    c.index_total_size = index.and_then(|i| i.total_size);
    Ok(Some(c))
}

/// The name in `transformers` 5's module tree that a checkpoint tensor stands for: a packed
/// tensor's (`q_proj.qweight` → `q_proj.weight`), and the renames `transformers` applies on load
/// (`conversion_mapping.py`): one tensor per expert fused into `experts.gate_up_proj` /
/// `experts.down_proj` (Mixtral's `block_sparse_moe.experts.N.w1/w3/w2` and `gate` included),
/// GPT-NeoX's `embed_out` → `lm_head`, and llava's `language_model.model.` /
/// `vision_tower.vision_model.` / `multi_modal_projector.` prefixes under `model.`.
pub fn canonical(name: &str) -> String {
    canonical_for("", name)
}

/// [`canonical`] with the renames `transformers` applies to one architecture's checkpoints only:
/// EXAONE 3.x's GPT-2-style names (`transformer.h.N.attn.attention.q_proj`, `mlp.c_fc_0`, …) onto
/// the Llama module tree it is built as (`conversion_mapping.py`, "exaone").
pub fn canonical_for(model_type: &str, name: &str) -> String {
    if model_type == "exaone" {
        let mut n = name.to_string();
        for (from, to) in [
            ("transformer.wte.", "model.embed_tokens."),
            ("transformer.h.", "model.layers."),
            ("transformer.ln_f.", "model.norm."),
        ] {
            if let Some(rest) = n.strip_prefix(from) {
                n = format!("{to}{rest}");
            }
        }
        for (from, to) in [
            (".attn.attention.", ".self_attn."),
            (".self_attn.out_proj.", ".self_attn.o_proj."),
            (".ln_1.", ".input_layernorm."),
            (".ln_2.", ".post_attention_layernorm."),
            (".mlp.c_fc_0.", ".mlp.gate_proj."),
            (".mlp.c_fc_1.", ".mlp.up_proj."),
            (".mlp.c_proj.", ".mlp.down_proj."),
        ] {
            n = n.replace(from, to);
        }
        return canonical_generic(&n);
    }
    canonical_generic(name)
}

fn canonical_generic(name: &str) -> String {
    let name = if let Some(b) = name.strip_suffix(".qweight") {
        format!("{b}.weight")
    } else if let Some(b) = name.strip_suffix("_blocks") {
        b.to_string()
    } else {
        name.to_string()
    };
    if name == "embed_out.weight" {
        return "lm_head.weight".into();
    }
    let name = if let Some(rest) = name.strip_prefix("language_model.model.") {
        format!("model.language_model.{rest}")
    } else if let Some(rest) = name.strip_prefix("language_model.lm_head.") {
        format!("lm_head.{rest}")
    } else if let Some(rest) = name.strip_prefix("vision_tower.vision_model.") {
        format!("model.vision_tower.{rest}")
    } else if let Some(rest) = name.strip_prefix("multi_modal_projector.") {
        format!("model.multi_modal_projector.{rest}")
    } else {
        name
    };
    let name = name.replace(".block_sparse_moe.", ".mlp.");
    fuse_expert(&name).unwrap_or(name)
}

/// `….experts.7.gate_proj.weight` → `….experts.gate_up_proj` (and `up_proj`, `w1`, `w3`);
/// `….experts.7.down_proj.weight` → `….experts.down_proj` (and `w2`).
fn fuse_expert(name: &str) -> Option<String> {
    let at = name.find(".experts.")?;
    let (head, tail) = name.split_at(at + ".experts.".len());
    let (index, rest) = tail.split_once('.')?;
    if index.is_empty() || !index.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let fused = match rest {
        "gate_proj.weight" | "up_proj.weight" | "w1.weight" | "w3.weight" => "gate_up_proj",
        "down_proj.weight" | "w2.weight" => "down_proj",
        _ => return None,
    };
    Some(format!("{head}{fused}"))
}

/// Attaches the headers' count to `spec` and returns the disagreements with the config's reading
/// (as warnings): the totals, and up to five tensor names each side has that the other lacks. A
/// count without parameters (an index alone: weight bytes only) is attached as it is.
pub fn attach(spec: &mut crate::ModelSpec, c: CheckpointCount) -> Vec<String> {
    if c.params == 0 {
        spec.checkpoint = Some(Box::new(c));
        return Vec::new();
    }
    let mut notes = Vec::new();
    let config_total = crate::ParamCounts::of(spec).total;
    if c.params > 0 && c.params != config_total {
        notes.push(format!(
            "parameters: the safetensors headers hold {}, the config.json reading gives {} ({:+}); the headers' count is used",
            crate::units::group_thousands(c.params),
            crate::units::group_thousands(config_total),
            c.params as i128 - config_total as i128
        ));
    }
    if !c.names.is_empty() {
        let config: BTreeSet<String> = spec.instances().map(|i| i.name().into_owned()).collect();
        // a name the config's reading has is kept as it is (granitemoe's module tree still says
        // `block_sparse_moe`); any other is mapped onto transformers 5's module tree
        let header: BTreeSet<String> = c
            .names
            .iter()
            .map(|n| {
                if config.contains(n) {
                    return n.clone();
                }
                // per-expert names fused in place first (arctic keeps `block_sparse_moe`), then
                // every rename
                let fused = fuse_expert(n).unwrap_or_else(|| n.clone());
                if config.contains(&fused) {
                    fused
                } else {
                    canonical_for(&spec.model_type, n)
                }
            })
            .collect();
        let only_header: Vec<&String> = header.difference(&config).take(5).collect();
        let only_config: Vec<&String> = config.difference(&header).take(5).collect();
        if !only_header.is_empty() {
            notes.push(format!(
                "tensors in the headers but not in the config's reading: {}{}",
                only_header
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                if header.difference(&config).count() > 5 {
                    ", …"
                } else {
                    ""
                }
            ));
        }
        if !only_config.is_empty() {
            notes.push(format!(
                "tensors in the config's reading but not in the headers: {}{}",
                only_config
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                if config.difference(&header).count() > 5 {
                    ", …"
                } else {
                    ""
                }
            ));
        }
    }
    spec.warnings.extend(notes.iter().cloned());
    spec.checkpoint = Some(Box::new(c));
    notes
}
