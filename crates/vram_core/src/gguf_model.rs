//! A model described by a GGUF file's header alone (no `config.json`): the exact tensors llama.cpp
//! loads ([`LlamaModel`], bytes from each tensor's ggml type and shape) and a [`ModelSpec`] for the
//! rest of the estimate, resolved from a `config.json` written from the header's metadata
//! (`{arch}.block_count`, `.embedding_length`, `.attention.head_count(_kv)`, ...; llama.cpp
//! `src/llama-arch.cpp` names them, `llama_model::load_hparams` reads them).
//!
//! Per-architecture rules that only the metadata can tell (llama.cpp `llama_hparams::set_swa_pattern`
//! and `load_hparams`): the sliding-window layers (gemma2 every 2nd from layer 0, gemma3 5 of 6,
//! cohere2 3 of 4, gpt-oss every 2nd, llama4 chunked 3 of 4, or an explicit
//! `attention.sliding_window_pattern` array); MLA (`attention.kv_lora_rank`: the cache holds
//! `kv_lora_rank + rope.dimension_count` per cell, no V); recurrent layers (`ssm.*`: per-layer
//! `head_count_kv` 0 marks them in hybrids).

use crate::error::ConfigError;
use crate::gguf_file::{file_type_name, ggml_type_info, GgufHeader, GgufValue};
use crate::infer::llama_cpp::model::{LayerCacheKind, LlamaLayer, TensorFacts, TensorRole};
use crate::infer::llama_cpp::LlamaModel;
use crate::spec::ModelSpec;
use serde_json::{json, Map, Value};

fn missing(field: &str, why: &str) -> ConfigError {
    ConfigError::MissingField {
        field: field.into(),
        why: why.into(),
    }
}

/// A per-layer value: an array entry, or the scalar for every layer.
fn per_layer(h: &GgufHeader, key: &str, il: usize) -> Option<u64> {
    match h.get(key)? {
        GgufValue::Array { items: Some(v), .. } => v.get(il).and_then(|x| x.as_u64()),
        other => other.as_u64(),
    }
}

/// The largest value of a per-layer key.
fn max_per_layer(h: &GgufHeader, key: &str) -> Option<u64> {
    match h.get(key)? {
        GgufValue::Array { items: Some(v), .. } => v.iter().filter_map(|x| x.as_u64()).max(),
        other => other.as_u64(),
    }
}

/// Which layers attend through a sliding window (llama.cpp's per-architecture patterns).
fn swa_layers(h: &GgufHeader, arch: &str, n_layer: usize) -> (Vec<bool>, u64) {
    let n_swa = h
        .arch_u64("attention.sliding_window")
        .or(match arch {
            "gemma2" => Some(4096),
            "llama4" => Some(8192),
            _ => None,
        })
        .unwrap_or(0);
    let key = format!("{arch}.attention.sliding_window_pattern");
    if let Some(GgufValue::Array { items: Some(v), .. }) = h.get(&key) {
        let flags: Vec<bool> = (0..n_layer)
            .map(|il| matches!(v.get(il), Some(GgufValue::Bool(true))))
            .collect();
        return (flags, n_swa);
    }
    let period = h.get(&key).and_then(GgufValue::as_u64).or(match arch {
        "gemma2" | "gpt-oss" => Some(2),
        "gemma3" => Some(6),
        "gemma3n" => Some(5),
        "cohere2" | "llama4" => Some(4),
        _ => None,
    });
    match period {
        Some(p) if p > 0 && n_swa > 0 => (
            (0..n_layer as u64).map(|il| il % p < p - 1).collect(),
            n_swa,
        ),
        _ => (vec![false; n_layer], 0),
    }
}

/// The llama.cpp model of a GGUF header.
pub fn llama_model(h: &GgufHeader, file_name: &str) -> Result<LlamaModel, ConfigError> {
    let arch = h
        .architecture()
        .ok_or_else(|| missing("general.architecture", "it names every other metadata key"))?
        .to_string();
    let k = |s: &str| format!("{arch}.{s}");
    let n_layer = h
        .arch_u64("block_count")
        .ok_or_else(|| missing(&k("block_count"), "the number of layers"))?;
    if n_layer == 0 || n_layer > 4096 {
        return Err(ConfigError::InvalidField {
            field: k("block_count"),
            expected: "1 to 4096 layers".into(),
            found: n_layer.to_string(),
        });
    }
    let n_layer = n_layer as usize;
    let n_embd = h
        .arch_u64("embedding_length")
        .ok_or_else(|| missing(&k("embedding_length"), "the residual width"))?;
    let n_head_key = k("attention.head_count");
    let n_head_kv_key = k("attention.head_count_kv");
    let n_head0 = max_per_layer(h, &n_head_key).unwrap_or(0);
    let head_k = h
        .arch_u64("attention.key_length")
        .unwrap_or(n_embd.checked_div(n_head0).unwrap_or(0));
    let head_v = h.arch_u64("attention.value_length").unwrap_or(head_k);
    let kv_lora = h.arch_u64("attention.kv_lora_rank");
    let n_rot = h.arch_u64("rope.dimension_count").unwrap_or(head_k);
    let (swa, n_swa) = swa_layers(h, &arch, n_layer);
    let ssm_conv = h.arch_u64("ssm.conv_kernel");
    let ssm_inner = h.arch_u64("ssm.inner_size").unwrap_or(0);
    let ssm_state = h.arch_u64("ssm.state_size").unwrap_or(0);
    let ssm_groups = h.arch_u64("ssm.group_count").unwrap_or(0);
    let n_expert = h.arch_u64("expert_count").unwrap_or(0);
    let n_expert_used = h.arch_u64("expert_used_count").unwrap_or(0);
    let n_ff_exp = h.arch_u64("expert_feed_forward_length").unwrap_or(0);
    let n_ff_shexp = h
        .arch_u64("expert_shared_feed_forward_length")
        .unwrap_or(0)
        .saturating_mul(h.arch_u64("expert_shared_count").unwrap_or(1).max(1));
    let layer_has_experts: Vec<bool> = {
        let mut v = vec![false; n_layer];
        for t in &h.tensors {
            if let Some(il) = layer_of(&t.name) {
                if t.name.contains("_exps") {
                    if let Some(x) = v.get_mut(il) {
                        *x = true;
                    }
                }
            }
        }
        v
    };
    let layers: Vec<LlamaLayer> = (0..n_layer)
        .map(|il| {
            let n_head = per_layer(h, &n_head_key, il).unwrap_or(n_head0);
            let n_head_kv = per_layer(h, &n_head_kv_key, il).unwrap_or(n_head);
            let cache = if let (Some(conv), true) = (ssm_conv, n_head_kv == 0 || n_head == 0) {
                // mamba: r = (d_conv − 1) × d_inner; mamba2: (d_conv − 1) × (d_inner + 2 n_group d_state)
                LayerCacheKind::Recurrent {
                    r_elements: conv
                        .saturating_sub(1)
                        .saturating_mul(ssm_inner.saturating_add(2 * ssm_groups * ssm_state)),
                    s_elements: ssm_state.saturating_mul(ssm_inner),
                }
            } else if n_head == 0 || n_head_kv == 0 {
                LayerCacheKind::None
            } else if let Some(r) = kv_lora {
                LayerCacheKind::Attention {
                    k_elements: r + n_rot,
                    v_elements: 0,
                    swa: swa[il],
                }
            } else {
                LayerCacheKind::Attention {
                    k_elements: n_head_kv.saturating_mul(head_k),
                    v_elements: n_head_kv.saturating_mul(head_v),
                    swa: swa[il],
                }
            };
            let (hk, hv) = match kv_lora {
                Some(r) => (r + n_rot, r),
                None => (head_k, head_v),
            };
            let moe = layer_has_experts[il];
            LlamaLayer {
                weights_bytes: 0,
                expert_bytes: 0,
                largest_tensor_bytes: 0,
                cache,
                n_head,
                head_dim_k: hk,
                head_dim_v: hv,
                n_ff: if moe {
                    0
                } else {
                    per_layer(h, &k("feed_forward_length"), il).unwrap_or(0)
                },
                n_ff_exp: if moe { n_ff_exp } else { 0 },
                n_ff_shexp: if moe { n_ff_shexp } else { 0 },
                n_expert: if moe { n_expert } else { 0 },
                n_expert_used: if moe { n_expert_used } else { 0 },
            }
        })
        .collect();
    let mut facts = Vec::with_capacity(h.tensors.len());
    let mut token_embd = None;
    let mut has_output = false;
    for t in &h.tensors {
        let bytes = t.bytes().map_err(|e| ConfigError::InvalidField {
            field: format!("tensor {}", t.name),
            expected: "a ggml type this reader knows".into(),
            found: e.to_string(),
        })?;
        let type_name = ggml_type_info(t.ggml_type).map_or("?", |i| i.name);
        let layer = layer_of(&t.name);
        let role = if layer.is_some() {
            TensorRole::Layer
        } else if t.name.starts_with("token_embd.") {
            if t.name == "token_embd.weight" {
                token_embd = Some(bytes);
            }
            TensorRole::TokenEmbd
        } else if t.name.starts_with("output.") || t.name.starts_with("output_norm.") {
            if t.name == "output.weight" {
                has_output = true;
            }
            TensorRole::Output
        } else {
            TensorRole::Other
        };
        facts.push(TensorFacts {
            layer: layer.map(|l| l as u64),
            bytes,
            numel: t.numel(),
            type_name,
            expert: t.name.contains("_exps"),
            role,
        });
    }
    let n_vocab = h
        .arch_u64("vocab_size")
        .or_else(|| h.array_len("tokenizer.ggml.tokens"))
        .or_else(|| {
            h.tensors
                .iter()
                .find(|t| t.name == "token_embd.weight")
                .and_then(|t| t.dims.get(1).copied())
        })
        .unwrap_or(0);
    let tied = if has_output { None } else { token_embd };
    let source = format!(
        "gguf header of {} ({} tensors{})",
        if file_name.is_empty() {
            "the file"
        } else {
            file_name
        },
        h.tensors.len(),
        h.file_type()
            .and_then(file_type_name)
            .map(|n| format!(", {n}"))
            .unwrap_or_default()
    );
    Ok(LlamaModel::assemble(
        source,
        facts.into_iter(),
        layers,
        tied,
        (
            n_embd,
            n_vocab,
            h.arch_u64("context_length").unwrap_or(0),
            n_swa,
        ),
    ))
}

/// `blk.N.` → N.
fn layer_of(name: &str) -> Option<usize> {
    let rest = name.strip_prefix("blk.")?;
    let (n, _) = rest.split_once('.')?;
    n.parse().ok()
}

/// The HF `model_type` whose resolver reads the config written from a GGUF architecture.
fn model_type_of(arch: &str, n_expert: u64) -> Option<&'static str> {
    Some(match arch {
        "llama" if n_expert > 0 => "mixtral",
        "llama" => "llama",
        "qwen2" => "qwen2",
        "qwen2moe" => "qwen2_moe",
        "qwen3" => "qwen3",
        "qwen3moe" => "qwen3_moe",
        "gemma" => "gemma",
        "gemma2" => "gemma2",
        "gemma3" => "gemma3_text",
        "phi3" => "phi3",
        "command-r" => "cohere",
        "olmo2" => "olmo2",
        "gpt-oss" => "gpt_oss",
        "mamba" => "mamba",
        _ => return None,
    })
}

/// A `config.json` equivalent of the header's metadata, for the estimate's other sections.
fn config_of(h: &GgufHeader, m: &LlamaModel, arch: &str) -> (Value, Option<String>) {
    let k = |s: &str| format!("{arch}.{s}");
    let n_expert = h.arch_u64("expert_count").unwrap_or(0);
    let (mt, warning) = match model_type_of(arch, n_expert) {
        Some(mt) => (mt, None),
        None => (
            "llama",
            Some(format!(
                "GGUF architecture {arch:?} is read as a llama-style decoder for the summary and the non-llama.cpp sections; the llama.cpp figures come from the header's tensors"
            )),
        ),
    };
    let n_head = max_per_layer(h, &k("attention.head_count"))
        .unwrap_or(1)
        .max(1);
    let mut c = Map::new();
    let mut put = |key: &str, v: Value| {
        c.insert(key.to_string(), v);
    };
    put("model_type", json!(mt));
    put("hidden_size", json!(m.n_embd));
    put("num_hidden_layers", json!(m.layers.len()));
    put("vocab_size", json!(m.n_vocab));
    put("max_position_embeddings", json!(m.n_ctx_train));
    put("num_attention_heads", json!(n_head));
    put(
        "num_key_value_heads",
        json!(max_per_layer(h, &k("attention.head_count_kv")).unwrap_or(n_head)),
    );
    if let Some(hd) = h.arch_u64("attention.key_length") {
        put("head_dim", json!(hd));
    }
    let n_ff = max_per_layer(h, &k("feed_forward_length")).unwrap_or(4 * m.n_embd);
    put("intermediate_size", json!(n_ff));
    put(
        "tie_word_embeddings",
        json!(!h.tensors.iter().any(|t| t.name == "output.weight")),
    );
    if let Some(e) = h.get_f64(&k("attention.layer_norm_rms_epsilon")) {
        put("rms_norm_eps", json!(e));
    }
    if n_expert > 0 {
        let used = h.arch_u64("expert_used_count").unwrap_or(1);
        let ff = h.arch_u64("expert_feed_forward_length").unwrap_or(n_ff);
        put("num_local_experts", json!(n_expert));
        put("num_experts", json!(n_expert));
        put("num_experts_per_tok", json!(used));
        put("moe_intermediate_size", json!(ff));
        if let Some(s) = h.arch_u64("expert_shared_feed_forward_length") {
            put("shared_expert_intermediate_size", json!(s));
        }
    }
    if m.n_swa > 0 {
        put("sliding_window", json!(m.n_swa));
    }
    if arch == "mamba" {
        put(
            "state_size",
            json!(h.arch_u64("ssm.state_size").unwrap_or(16)),
        );
        put(
            "conv_kernel",
            json!(h.arch_u64("ssm.conv_kernel").unwrap_or(4)),
        );
        put(
            "expand",
            json!(h.arch_u64("ssm.inner_size").unwrap_or(2 * m.n_embd) / m.n_embd.max(1)),
        );
        put(
            "time_step_rank",
            json!(h.arch_u64("ssm.time_step_rank").unwrap_or(m.n_embd / 16)),
        );
    }
    if let Some(name) = h.get_str("general.name") {
        put("_name_or_path", json!(name));
    }
    (Value::Object(c), warning)
}

/// The spec of a GGUF file: resolved from its metadata, with the header's exact model attached
/// (`spec.gguf`), its name, and the file type as `torch_dtype` (`Q4_K_M`). One part of a split
/// model is refused (its tensors are only some of the model's): see [`spec_from_gguf_parts`].
pub fn spec_from_gguf(h: &GgufHeader, file_name: &str) -> Result<ModelSpec, ConfigError> {
    let count = h.get_u64("split.count").unwrap_or(1);
    if count > 1 {
        return Err(ConfigError::Inconsistent(format!(
            "this file is part {} of {count} of a split model (split.count = {count}): give all {count} parts together",
            h.get_u64("split.no").unwrap_or(0) + 1
        )));
    }
    spec_from_header(h, file_name)
}

fn spec_from_header(h: &GgufHeader, file_name: &str) -> Result<ModelSpec, ConfigError> {
    let m = llama_model(h, file_name)?;
    let arch = h.architecture().unwrap_or("llama").to_string();
    let (config, warning) = config_of(h, &m, &arch);
    let name = if file_name.is_empty() {
        h.get_str("general.name")
            .unwrap_or("model.gguf")
            .to_string()
    } else {
        file_name.to_string()
    };
    let mut spec = crate::resolve_value(&config, Some(&name)).or_else(|first| {
        // a config the architecture's resolver refuses: fall back to a llama-style reading
        let mut c = config.clone();
        if let Some(o) = c.as_object_mut() {
            o.insert("model_type".into(), json!("llama"));
        }
        crate::resolve_value(&c, Some(&name)).map_err(|_| first)
    })?;
    spec.name = name;
    if let Some(w) = warning {
        spec.warnings.push(w);
    }
    let params_from_config: u64 = crate::ParamCounts::of(&spec).total;
    if params_from_config != m.params {
        spec.warnings.push(format!(
            "parameters from the GGUF header: {} (the metadata's architecture reading gives {}); the header's count is used",
            crate::units::group_thousands(m.params),
            crate::units::group_thousands(params_from_config)
        ));
    }
    spec.torch_dtype = h.file_type().and_then(file_type_name).map(str::to_string);
    spec.gguf = Some(Box::new(m));
    Ok(spec)
}

/// The spec of a model split over several GGUF files (`llama-gguf-split`: every part carries
/// `split.no`, `split.count` and its own tensors; the first part also carries the model's
/// metadata). All parts must be given; their tensors are summed.
pub fn spec_from_gguf_parts(
    parts: &[GgufHeader],
    file_name: &str,
) -> Result<ModelSpec, ConfigError> {
    let Some(first) = parts
        .iter()
        .find(|h| h.get_u64("split.no").unwrap_or(0) == 0)
    else {
        return Err(missing(
            "split.no = 0",
            "the first part holds the model's metadata",
        ));
    };
    let count = first.get_u64("split.count").unwrap_or(1);
    if count != parts.len() as u64 {
        return Err(ConfigError::Inconsistent(format!(
            "split.count says the model is in {count} GGUF files, {} given: give every part",
            parts.len()
        )));
    }
    let mut seen = vec![false; parts.len()];
    for h in parts {
        let no = h.get_u64("split.no").unwrap_or(0);
        match seen.get_mut(no as usize) {
            Some(s) if !*s => *s = true,
            _ => {
                return Err(ConfigError::InvalidField {
                    field: "split.no".into(),
                    expected: format!("each part number 0 to {} once", count - 1),
                    found: no.to_string(),
                })
            }
        }
    }
    let mut merged = first.clone();
    for h in parts {
        if h.get_u64("split.no").unwrap_or(0) != 0 {
            merged.tensors.extend(h.tensors.iter().cloned());
        }
    }
    spec_from_header(&merged, file_name)
}

/// `NAME-00001-of-00003.gguf` → (`NAME`, part 1, 3 parts), as `llama-gguf-split` names the parts.
pub fn split_part_name(file_name: &str) -> Option<(&str, u32, u32)> {
    let stem = file_name
        .len()
        .checked_sub(5)
        .and_then(|n| file_name.get(..n))
        .filter(|_| file_name.to_ascii_lowercase().ends_with(".gguf"))?;
    let (rest, count) = stem.rsplit_once("-of-")?;
    let (prefix, no) = rest.rsplit_once('-')?;
    let digits = |s: &str| s.len() == 5 && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(no) || !digits(count) || prefix.is_empty() {
        return None;
    }
    Some((prefix, no.parse().ok()?, count.parse().ok()?))
}
