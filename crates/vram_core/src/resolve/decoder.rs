//! Llama-style decoders and their relatives: llama, mistral, mixtral, qwen2/3 (+MoE), gemma 1/2/3,
//! cohere, olmo2, phi3, deepseek v2/v3 (MLA + MoE), gpt-oss, and the generic fallback.
//!
//! Tensor names and shapes follow `transformers` 5.x `modeling_<type>.py` (fused expert tensors
//! `experts.gate_up_proj` / `experts.down_proj`, as in that version).

use super::{dropouts, join, Builder};
use crate::error::ConfigError;
use crate::fields::Fields;
use crate::spec::{
    AttentionSpec, Component, FfnSpec, LayerSpec, MlaSpec, ModelKind, ModelSpec, NormKind,
};

/// How q/k normalisation is applied.
#[derive(Clone, Copy, PartialEq, Eq)]
enum QkNorm {
    None,
    /// RMSNorm over each head (`head_dim` weights): qwen3, gemma3.
    PerHead,
    /// RMSNorm over the whole projection (`heads * head_dim` weights): olmo2.
    Full,
    /// LayerNorm (weight only) per head, `[heads, head_dim]` weights: cohere with `use_qk_norm`.
    PerHeadMatrix,
}

/// The architecture-specific switches of a llama-style decoder layer.
struct Flavor {
    qkv_bias: bool,
    o_bias: bool,
    mlp_bias: bool,
    qk_norm: QkNorm,
    fused_qkv: bool,
    fused_gate_up: bool,
    layer_norms: &'static [&'static str],
    norm: NormKind,
    tie_default: bool,
    sinks: bool,
    /// The module holding each layer's MLP or MoE block (`mlp`; llama4: `feed_forward`).
    mlp_block: &'static str,
}

const TWO_NORMS: &[&str] = &["input_layernorm", "post_attention_layernorm"];
const FOUR_NORMS: &[&str] = &[
    "input_layernorm",
    "post_attention_layernorm",
    "pre_feedforward_layernorm",
    "post_feedforward_layernorm",
];

fn flavor(f: Fields<'_>, model_type: &str) -> Result<Flavor, ConfigError> {
    let attention_bias = f.bool("attention_bias")?.unwrap_or(false);
    let mlp_bias = f.bool("mlp_bias")?.unwrap_or(false);
    let base = Flavor {
        qkv_bias: attention_bias,
        o_bias: attention_bias,
        mlp_bias,
        qk_norm: QkNorm::None,
        fused_qkv: false,
        fused_gate_up: false,
        layer_norms: TWO_NORMS,
        norm: NormKind::RmsNorm,
        tie_default: false,
        sinks: false,
        mlp_block: "mlp",
    };
    Ok(match model_type {
        // Qwen2Attention: q/k/v with bias, o_proj without (modeling_qwen2.py).
        "qwen2" | "qwen2_moe" => Flavor {
            qkv_bias: true,
            o_bias: false,
            ..base
        },
        "qwen3" | "qwen3_moe" => Flavor {
            qk_norm: QkNorm::PerHead,
            ..base
        },
        "gemma" => Flavor {
            tie_default: true,
            ..base
        },
        "gemma2" => Flavor {
            layer_norms: FOUR_NORMS,
            tie_default: true,
            ..base
        },
        "gemma3_text" => Flavor {
            layer_norms: FOUR_NORMS,
            qk_norm: QkNorm::PerHead,
            tie_default: true,
            ..base
        },
        // CohereDecoderLayer: one input_layernorm, attention and MLP in parallel; LayerNorm without bias.
        "cohere" => Flavor {
            layer_norms: &["input_layernorm"],
            norm: NormKind::LayerNormNoBias,
            tie_default: true,
            qk_norm: if f.bool("use_qk_norm")?.unwrap_or(false) {
                QkNorm::PerHeadMatrix
            } else {
                QkNorm::None
            },
            ..base
        },
        // Olmo2DecoderLayer: norms after attention and after the MLP, q/k norms over the projections.
        "olmo2" => Flavor {
            layer_norms: &["post_attention_layernorm", "post_feedforward_layernorm"],
            qk_norm: QkNorm::Full,
            ..base
        },
        "phi3" => Flavor {
            fused_qkv: true,
            fused_gate_up: true,
            ..base
        },
        // Cohere2DecoderLayer (modeling_cohere2.py): cohere's parallel block and bias-free LayerNorm,
        // o_proj biased like q/k/v when attention_bias, no q/k norms.
        "cohere2" => Flavor {
            layer_norms: &["input_layernorm"],
            norm: NormKind::LayerNormNoBias,
            tie_default: true,
            ..base
        },
        // OlmoeAttention: RMSNorm q/k norms over the whole projections; o_proj biased with q/k/v.
        "olmoe" => Flavor {
            qk_norm: QkNorm::Full,
            ..base
        },
        // GlmAttention / Glm4Attention: q/k/v biased (attention_bias defaults to true), o_proj never;
        // GlmMLP fuses gate and up into gate_up_proj; Glm4DecoderLayer adds norms after attention
        // and after the MLP.
        "glm" | "glm4" => Flavor {
            qkv_bias: f.bool("attention_bias")?.unwrap_or(true),
            o_bias: false,
            fused_gate_up: true,
            layer_norms: if model_type == "glm4" {
                &[
                    "input_layernorm",
                    "post_attention_layernorm",
                    "post_self_attn_layernorm",
                    "post_mlp_layernorm",
                ]
            } else {
                TWO_NORMS
            },
            ..base
        },
        // GptOssAttention: biases on q/k/v/o (attention_bias true) and one learned sink logit per head.
        "gpt_oss" => Flavor {
            qkv_bias: f.bool("attention_bias")?.unwrap_or(true),
            o_bias: f.bool("attention_bias")?.unwrap_or(true),
            sinks: true,
            ..base
        },
        // EXAONE 3.x: transformers 5.2x builds it as LlamaForCausalLM (configuration_exaone.py),
        // renaming the checkpoint's GPT-2-style names on load (checkpoint::canonical_for).
        "exaone" => base,
        // Llama4TextDecoderLayer: `feed_forward` (a routed MoE with a shared expert, or a dense
        // MLP of intermediate_size_mlp); its q/k norm is a weightless L2 norm.
        "llama4_text" => Flavor {
            mlp_block: "feed_forward",
            ..base
        },
        _ => base,
    })
}

/// Class defaults of the text configs that multimodal wrappers nest, used only for nested
/// `text_config` objects, which `transformers` serialises as a diff against those defaults (llava's
/// text_config lists just 6 keys, gemma3's 5): `LlamaConfig` and `Gemma3TextConfig`.
fn nested_default(text_type: &str, key: &str) -> Option<u64> {
    Some(match (text_type, key) {
        ("gemma3_text", "vocab_size") => 262_208,
        ("gemma3_text", "hidden_size") => 2304,
        ("gemma3_text", "intermediate_size") => 9216,
        ("gemma3_text", "num_hidden_layers") => 26,
        ("gemma3_text", "num_attention_heads") => 8,
        ("gemma3_text", "num_key_value_heads") => 4,
        ("gemma3_text", "head_dim") => 256,
        ("gemma3_text", "max_position_embeddings") => 131_072,
        ("gemma3_text", "sliding_window") => 4096,
        ("gemma3_text", _) => return None,
        (_, "vocab_size") => 32000,
        (_, "hidden_size") => 4096,
        (_, "intermediate_size") => 11008,
        (_, "num_hidden_layers") => 32,
        (_, "num_attention_heads") => 32,
        (_, "max_position_embeddings") => 2048,
        _ => return None,
    })
}

/// Keys that change a model's layout beyond what the generic llama-style reading counts: hybrid
/// layer patterns (Nemotron-H `hybrid_override_pattern`, Jamba `layers_block_type`,
/// `attn_layer_period`/`attn_layer_offset`, `block_types`), state-space mixers (`ssm_state_size`,
/// `mamba_d_state`, `mamba_expand`), experts (`num_local_experts`, `num_experts`, `n_routed_experts`,
/// `moe_intermediate_size`, `num_experts_per_tok`) and latent attention (`kv_lora_rank`).
const LAYOUT_KEYS: &[(&str, &str)] = &[
    ("hybrid_override_pattern", "a hybrid layer pattern"),
    ("layers_block_type", "a hybrid layer pattern"),
    ("attn_layer_period", "a hybrid layer pattern"),
    ("attn_layer_indices", "a hybrid layer pattern"),
    ("block_types", "a hybrid layer pattern"),
    ("ssm_state_size", "state-space mixer layers"),
    ("mamba_d_state", "state-space mixer layers"),
    ("mamba_expand", "state-space mixer layers"),
    ("num_local_experts", "mixture-of-experts layers"),
    ("num_experts", "mixture-of-experts layers"),
    ("n_routed_experts", "mixture-of-experts layers"),
    ("moe_intermediate_size", "mixture-of-experts layers"),
    ("num_experts_per_tok", "mixture-of-experts layers"),
    ("kv_lora_rank", "multi-head latent attention"),
];

/// Refuses a config of a `model_type` this estimator does not model when its keys describe a layout
/// the generic reading would count wrongly (a refusal with the reason, never a confident wrong
/// number). `layer_types` other than full and sliding attention counts as such a key.
/// For a known `model_type` only the hybrid and state-space keys are refused (its own resolver reads
/// the expert and latent-attention keys it has).
fn refuse_unreadable_layout(
    f: Fields<'_>,
    model_type: &str,
    known: bool,
) -> Result<(), ConfigError> {
    let what = if model_type.is_empty() {
        "a config without \"model_type\"".to_string()
    } else if known {
        format!("a {model_type:?} config")
    } else {
        format!("model_type {model_type:?}, which vram does not model,")
    };
    for (key, layout) in LAYOUT_KEYS {
        let checked = !known
            || matches!(
                *layout,
                "a hybrid layer pattern" | "state-space mixer layers"
            );
        if !checked {
            continue;
        }
        match f.value(key) {
            None | Some(serde_json::Value::Null) => {}
            Some(v) => {
                return Err(f.invalid(
                    key,
                    &format!(
                        "no {layout} in {what} (its generic llama-style reading would count it wrongly; supported model types: {})",
                        super::KNOWN_MODEL_TYPES.join(", ")
                    ),
                    v,
                ))
            }
        }
    }
    if let Some(serde_json::Value::Array(types)) = f.value("layer_types") {
        if let Some(other) = types.iter().find(|t| {
            !(matches!(
                t.as_str(),
                Some("full_attention" | "sliding_attention" | "attention")
            ) || (model_type == "llama4_text" && t.as_str() == Some("chunked_attention")))
        }) {
            return Err(f.invalid(
                "layer_types",
                &format!(
                    "only full_attention or sliding_attention layers in {what} (other layer kinds change the count)"
                ),
                other,
            ));
        }
    }
    Ok(())
}

/// Refuses a config whose keys describe layers that `model_type`'s own resolver does not read
/// (a state-space pattern in a starcoder2 config, experts in a gptj config, …): every key of
/// [`LAYOUT_KEYS`] except `allowed`, and `layer_types` other than full or sliding attention.
/// Architectures with their own resolvers call it first, so a mutated config is refused with the
/// reason instead of being counted as its plain family.
pub(super) fn refuse_keys_outside(
    f: Fields<'_>,
    model_type: &str,
    allowed: &[&str],
) -> Result<(), ConfigError> {
    for (key, layout) in LAYOUT_KEYS {
        if allowed.contains(key) {
            continue;
        }
        match f.value(key) {
            None | Some(serde_json::Value::Null) => {}
            Some(v) => {
                return Err(f.invalid(
                    key,
                    &format!(
                        "no {layout} in a {model_type:?} config (its {model_type} reading has none and would count it wrongly)"
                    ),
                    v,
                ))
            }
        }
    }
    if !allowed.contains(&"layer_types") {
        if let Some(serde_json::Value::Array(types)) = f.value("layer_types") {
            if let Some(other) = types.iter().find(|t| {
                !matches!(
                    t.as_str(),
                    Some("full_attention" | "sliding_attention" | "attention")
                )
            }) {
                return Err(f.invalid(
                    "layer_types",
                    &format!("only full_attention or sliding_attention layers in a {model_type:?} config"),
                    other,
                ));
            }
        }
    }
    Ok(())
}

/// Resolves a llama-style decoder. `nested` marks a `text_config` inside a multimodal wrapper.
pub(crate) fn decoder(
    f: Fields<'_>,
    model_type: &str,
    nested: bool,
) -> Result<ModelSpec, ConfigError> {
    let known = super::KNOWN_MODEL_TYPES.contains(&model_type);
    let mut warnings = Vec::new();
    refuse_unreadable_layout(f, model_type, known)?;
    if !known {
        let what = if model_type.is_empty() {
            "no \"model_type\"".to_string()
        } else {
            format!("unknown model_type {model_type:?}")
        };
        warnings.push(format!(
            "{what}: read as a generic llama-style decoder (separate q/k/v/o projections, biases only if \
             attention_bias/mlp_bias, a gated gate/up/down MLP, two RMSNorms per layer, a final norm, \
             lm_head untied unless tie_word_embeddings is true)"
        ));
    }
    let use_defaults = nested && matches!(model_type, "llama" | "" | "gemma3_text");
    let mut size = |keys: &[&str], why: &str| -> Result<u64, ConfigError> {
        if let Some(v) = f.positive_any(keys)? {
            return Ok(v);
        }
        if use_defaults {
            if let Some(v) = keys.iter().find_map(|k| nested_default(model_type, k)) {
                warnings.push(format!(
                    "{} absent: {} default {v} assumed",
                    keys[0],
                    if model_type == "gemma3_text" {
                        "Gemma3TextConfig"
                    } else {
                        "LlamaConfig"
                    }
                ));
                return Ok(v);
            }
        }
        f.require_any(keys, why)
    };
    let hidden = size(
        &["hidden_size", "n_embd", "d_model"],
        "the width of the model",
    )?;
    let layer_keys = ["num_hidden_layers", "n_layer", "num_layers"];
    let num_layers = size(&layer_keys, "the number of layers")?;
    let num_layers = f.check_layers(&layer_keys, num_layers)?;
    let heads = size(
        &["num_attention_heads", "n_head", "num_heads"],
        "the number of attention heads",
    )?;
    let vocab = size(&["vocab_size"], "the vocabulary size (embedding rows)")?;
    let intermediate = size(
        &["intermediate_size", "n_inner", "ffn_dim"],
        "the MLP width",
    )?;
    let max_pos = match f.positive_any(&["max_position_embeddings", "n_positions", "n_ctx"])? {
        Some(v) => v,
        None if use_defaults => nested_default(model_type, "max_position_embeddings").unwrap_or(0),
        None => 0,
    };
    let nested_or = |key: &str| {
        if use_defaults {
            nested_default(model_type, key)
        } else {
            None
        }
    };
    let kv_heads = f
        .positive_any(&["num_key_value_heads", "num_kv_heads", "n_head_kv"])?
        .or(nested_or("num_key_value_heads"))
        .unwrap_or(heads);
    if heads % kv_heads != 0 {
        return Err(ConfigError::Inconsistent(format!(
            "num_attention_heads ({heads}) is not a multiple of num_key_value_heads ({kv_heads})"
        )));
    }
    let head_dim = match f.positive("head_dim")?.or(nested_or("head_dim")) {
        Some(d) => d,
        None if hidden % heads == 0 => hidden / heads,
        None => {
            return Err(ConfigError::Inconsistent(format!(
                "hidden_size ({hidden}) is not a multiple of num_attention_heads ({heads}) and no head_dim is given"
            )))
        }
    };
    let fl = flavor(f, model_type)?;
    let tie = f.bool("tie_word_embeddings")?.unwrap_or(fl.tie_default);
    let hidden_act = f
        .str("hidden_act")?
        .or(f.str("hidden_activation")?)
        .unwrap_or("silu")
        .to_string();
    let (attention_dropout, hidden_dropout) = dropouts(
        f,
        &["attention_dropout", "attn_pdrop"],
        &["resid_pdrop", "hidden_dropout"],
    )?;

    let mla = read_mla(f)?;
    let windows = sliding_windows(f, model_type, num_layers, nested_or("sliding_window"))?;
    let moe = read_moe(f, model_type, intermediate)?;

    let mut b = Builder::default();
    b.embedding("model.embed_tokens", Component::Embedding, vocab, hidden);
    let mut layers = Vec::with_capacity(num_layers.min(1 << 16) as usize);
    // Layers whose tensors are alike (dense or MoE; sliding windows change only the layer spec)
    // are built once, as a run (`TensorSpec::repeat`).
    let mut i = 0u64;
    while i < num_layers {
        let mut run = 1u64;
        while i + run < num_layers && moe.layer(i + run).is_some() == moe.layer(i).is_some() {
            run += 1;
        }
        b.repeat = u32::try_from(run).unwrap_or(u32::MAX);
        let l = u32::try_from(i).unwrap_or(u32::MAX);
        let p = format!("model.layers.{i}");
        let attention = match mla {
            Some((m, v_head)) => mla_tensors(
                &mut b,
                &p,
                l,
                hidden,
                heads,
                m,
                v_head,
                f.bool("attention_bias")?.unwrap_or(false),
            ),
            None => {
                standard_attention_tensors(&mut b, &p, l, hidden, heads, kv_heads, head_dim, &fl)
            }
        };

        let ffn = match moe.layer(i) {
            Some(m) => {
                moe_tensors(&mut b, &p, l, hidden, &m, model_type);
                m.ffn
            }
            None => {
                let dense = moe.dense_intermediate.unwrap_or(intermediate);
                mlp_tensors(
                    &mut b,
                    &format!("{p}.{}", fl.mlp_block),
                    l,
                    hidden,
                    dense,
                    fl.mlp_bias,
                    fl.fused_gate_up,
                    Component::Mlp,
                );
                FfnSpec::Dense {
                    intermediate_size: dense,
                    gated: true,
                }
            }
        };
        for norm in fl.layer_norms {
            b.norm(
                &join(&p, norm),
                Some(l),
                Component::Norm,
                hidden,
                fl.norm == NormKind::LayerNorm,
            );
        }
        b.repeat = 1;
        for j in i..i + run {
            layers.push(LayerSpec {
                attention: Some(AttentionSpec {
                    sliding_window: windows.get(j as usize).copied().flatten(),
                    ..attention
                }),
                cross_attention: None,
                ffn: Some(ffn),
                ssm: None,
            });
        }
        i += run;
    }
    b.norm(
        "model.norm",
        None,
        Component::FinalNorm,
        hidden,
        fl.norm == NormKind::LayerNorm,
    );
    if !tie {
        b.linear("lm_head", None, Component::LmHead, hidden, vocab, false);
    }

    Ok(ModelSpec {
        name: String::new(),
        model_type: model_type.to_string(),
        text_model_type: model_type.to_string(),
        kind: ModelKind::DecoderOnly,
        hidden_size: hidden,
        vocab_size: vocab,
        num_layers,
        num_encoder_layers: 0,
        max_position_embeddings: max_pos,
        tie_word_embeddings: tie,
        // Gemma-2 (`Gemma2ForCausalLM.forward`); gemma 3 configs set it to null
        final_logit_softcapping: f
            .value("final_logit_softcapping")
            .and_then(serde_json::Value::as_f64)
            .is_some_and(|c| c > 0.0),
        no_kv_cache: false,
        runtime_buffers: Vec::new(),
        hidden_act,
        norm: fl.norm,
        attention_dropout,
        hidden_dropout,
        torch_dtype: None,
        layers,
        encoder_layers: Vec::new(),
        vision: None,
        quantization_config: None,
        tensors: b.tensors,
        gguf: None,
        checkpoint: None,
        tensor_parallel: 0,
        derived: Default::default(),
        warnings,
    })
}

#[allow(clippy::too_many_arguments)]
fn standard_attention_tensors(
    b: &mut Builder,
    p: &str,
    l: u32,
    hidden: u64,
    heads: u64,
    kv_heads: u64,
    head_dim: u64,
    fl: &Flavor,
) -> AttentionSpec {
    let q_out = heads.saturating_mul(head_dim);
    let kv_out = kv_heads.saturating_mul(head_dim);
    let a = join(p, "self_attn");
    if fl.fused_qkv {
        let out = q_out.saturating_add(kv_out.saturating_mul(2));
        b.linear(
            &join(&a, "qkv_proj"),
            Some(l),
            Component::Attention,
            hidden,
            out,
            fl.qkv_bias,
        );
    } else {
        b.linear(
            &join(&a, "q_proj"),
            Some(l),
            Component::Attention,
            hidden,
            q_out,
            fl.qkv_bias,
        );
        b.linear(
            &join(&a, "k_proj"),
            Some(l),
            Component::Attention,
            hidden,
            kv_out,
            fl.qkv_bias,
        );
        b.linear(
            &join(&a, "v_proj"),
            Some(l),
            Component::Attention,
            hidden,
            kv_out,
            fl.qkv_bias,
        );
    }
    b.linear(
        &join(&a, "o_proj"),
        Some(l),
        Component::Attention,
        q_out,
        hidden,
        fl.o_bias,
    );
    match fl.qk_norm {
        QkNorm::None => {}
        QkNorm::PerHead => {
            b.norm(
                &join(&a, "q_norm"),
                Some(l),
                Component::Norm,
                head_dim,
                false,
            );
            b.norm(
                &join(&a, "k_norm"),
                Some(l),
                Component::Norm,
                head_dim,
                false,
            );
        }
        QkNorm::Full => {
            b.norm(&join(&a, "q_norm"), Some(l), Component::Norm, q_out, false);
            b.norm(&join(&a, "k_norm"), Some(l), Component::Norm, kv_out, false);
        }
        QkNorm::PerHeadMatrix => {
            b.param(
                &join(&a, "q_norm.weight"),
                Some(l),
                Component::Norm,
                [heads, head_dim],
            );
            b.param(
                &join(&a, "k_norm.weight"),
                Some(l),
                Component::Norm,
                [kv_heads, head_dim],
            );
        }
    }
    if fl.sinks {
        b.param(&join(&a, "sinks"), Some(l), Component::Attention, [heads]);
    }
    AttentionSpec {
        num_heads: heads,
        num_kv_heads: kv_heads,
        head_dim,
        v_head_dim: head_dim,
        sliding_window: None,
        mla: None,
    }
}

fn read_mla(f: Fields<'_>) -> Result<Option<(MlaSpec, u64)>, ConfigError> {
    let Some(kv_lora_rank) = f.positive("kv_lora_rank")? else {
        return Ok(None);
    };
    let why = "multi-head latent attention (kv_lora_rank is set)";
    let mla = MlaSpec {
        q_lora_rank: f.positive("q_lora_rank")?,
        kv_lora_rank,
        qk_rope_head_dim: f.require_any(&["qk_rope_head_dim"], why)?,
        qk_nope_head_dim: f.require_any(&["qk_nope_head_dim"], why)?,
    };
    Ok(Some((mla, f.require_any(&["v_head_dim"], why)?)))
}

/// DeepseekV3Attention (modeling_deepseek_v3.py): optional low-rank query path, the joint KV latent
/// `kv_a_proj_with_mqa` (latent + shared rotary key), its norm, the up-projection `kv_b_proj`, `o_proj`.
#[allow(clippy::too_many_arguments)]
fn mla_tensors(
    b: &mut Builder,
    p: &str,
    l: u32,
    hidden: u64,
    heads: u64,
    m: MlaSpec,
    v_head: u64,
    bias: bool,
) -> AttentionSpec {
    let a = join(p, "self_attn");
    let qk_head = m.qk_nope_head_dim.saturating_add(m.qk_rope_head_dim);
    match m.q_lora_rank {
        None => b.linear(
            &join(&a, "q_proj"),
            Some(l),
            Component::Attention,
            hidden,
            heads.saturating_mul(qk_head),
            false,
        ),
        Some(r) => {
            b.linear(
                &join(&a, "q_a_proj"),
                Some(l),
                Component::Attention,
                hidden,
                r,
                bias,
            );
            b.norm(
                &join(&a, "q_a_layernorm"),
                Some(l),
                Component::Norm,
                r,
                false,
            );
            b.linear(
                &join(&a, "q_b_proj"),
                Some(l),
                Component::Attention,
                r,
                heads.saturating_mul(qk_head),
                false,
            );
        }
    }
    b.linear(
        &join(&a, "kv_a_proj_with_mqa"),
        Some(l),
        Component::Attention,
        hidden,
        m.kv_lora_rank.saturating_add(m.qk_rope_head_dim),
        bias,
    );
    b.norm(
        &join(&a, "kv_a_layernorm"),
        Some(l),
        Component::Norm,
        m.kv_lora_rank,
        false,
    );
    b.linear(
        &join(&a, "kv_b_proj"),
        Some(l),
        Component::Attention,
        m.kv_lora_rank,
        heads.saturating_mul(m.qk_nope_head_dim.saturating_add(v_head)),
        false,
    );
    b.linear(
        &join(&a, "o_proj"),
        Some(l),
        Component::Attention,
        heads.saturating_mul(v_head),
        hidden,
        bias,
    );
    AttentionSpec {
        num_heads: heads,
        num_kv_heads: heads,
        head_dim: qk_head,
        v_head_dim: v_head,
        sliding_window: None,
        mla: Some(m),
    }
}

/// Per-layer sliding windows, from `layer_types` when given, else from each architecture's rule.
fn sliding_windows(
    f: Fields<'_>,
    model_type: &str,
    num_layers: u64,
    default_window: Option<u64>,
) -> Result<Vec<Option<u64>>, ConfigError> {
    let n = num_layers as usize;
    // Llama 4 (configuration_llama4.py): layers with RoPE attend within chunks of
    // attention_chunk_size, and their cache holds one chunk, as a sliding window does; every
    // no_rope_layer_interval-th layer (default 4) is global NoPE attention. `no_rope_layers`
    // (1 = RoPE, 0 = NoPE) overrides the interval when non-empty.
    if model_type == "llama4_text" {
        let Some(chunk) = f.positive("attention_chunk_size")? else {
            return Ok(vec![None; n]);
        };
        let interval = f.positive("no_rope_layer_interval")?.unwrap_or(4);
        let listed = f.u64_list("no_rope_layers")?.filter(|l| !l.is_empty());
        return Ok((0..n)
            .map(|i| {
                let rope = match &listed {
                    Some(l) => l.get(i).copied().unwrap_or(1) != 0,
                    None => !(i as u64 + 1).is_multiple_of(interval),
                };
                rope.then_some(chunk)
            })
            .collect());
    }
    let window = f.positive("sliding_window")?.or(default_window);
    if let Some(types) = f.str_list("layer_types")? {
        if types.len() as u64 != num_layers {
            return Err(ConfigError::Inconsistent(format!(
                "layer_types has {} entries but num_hidden_layers is {num_layers}",
                types.len()
            )));
        }
        return Ok(types
            .iter()
            .map(|t| if t.contains("sliding") { window } else { None })
            .collect());
    }
    let Some(w) = window else {
        return Ok(vec![None; n]);
    };
    Ok(match model_type {
        // Gemma2: even layers (0, 2, ...) are sliding (configuration_gemma2.py layer_types default).
        "gemma2" => (0..n)
            .map(|i| if (i + 1) % 2 != 0 { Some(w) } else { None })
            .collect(),
        // Gemma3 and Cohere2: every `sliding_window_pattern`-th layer is global, the rest sliding
        // (default 6 for gemma3, 4 for cohere2: configuration_gemma3.py, configuration_cohere2.py).
        "gemma3_text" | "cohere2" => {
            let default = if model_type == "cohere2" { 4 } else { 6 };
            let pattern = f.positive("sliding_window_pattern")?.unwrap_or(default) as usize;
            (0..n)
                .map(|i| {
                    if (i + 1) % pattern != 0 {
                        Some(w)
                    } else {
                        None
                    }
                })
                .collect()
        }
        // Qwen2/3: sliding only with use_sliding_window, and only for layers >= max_window_layers.
        "qwen2" | "qwen2_moe" | "qwen3" | "qwen3_moe" => {
            if f.bool("use_sliding_window")?.unwrap_or(false) {
                let from = f.u64("max_window_layers")?.unwrap_or(num_layers) as usize;
                (0..n)
                    .map(|i| if i >= from { Some(w) } else { None })
                    .collect()
            } else {
                vec![None; n]
            }
        }
        // Mistral/Mixtral/Phi-3 and the generic reading: every layer uses the window when one is set.
        _ => {
            if f.bool("use_sliding_window")?.unwrap_or(true) {
                vec![Some(w); n]
            } else {
                vec![None; n]
            }
        }
    })
}

/// MoE layout read from the config.
struct MoeLayout {
    /// Which layers are MoE.
    is_moe: Vec<bool>,
    ffn: Option<FfnSpec>,
    /// Inner width of the dense layers of a partly-MoE model, if it differs from `intermediate_size`.
    dense_intermediate: Option<u64>,
    router_bias: bool,
    router_buffer_bias: bool,
    shared_gate: bool,
}

struct MoeLayer {
    ffn: FfnSpec,
    router_bias: bool,
    router_buffer_bias: bool,
    shared_gate: bool,
}

impl MoeLayout {
    fn layer(&self, i: u64) -> Option<MoeLayer> {
        let ffn = self.ffn?;
        if !self.is_moe.get(i as usize).copied().unwrap_or(false) {
            return None;
        }
        Some(MoeLayer {
            ffn,
            router_bias: self.router_bias,
            router_buffer_bias: self.router_buffer_bias,
            shared_gate: self.shared_gate,
        })
    }
}

fn read_moe(f: Fields<'_>, model_type: &str, intermediate: u64) -> Result<MoeLayout, ConfigError> {
    let num_layers = f
        .positive_any(&["num_hidden_layers", "n_layer", "num_layers"])?
        .unwrap_or(0) as usize;
    let none = MoeLayout {
        is_moe: Vec::new(),
        ffn: None,
        dense_intermediate: None,
        router_bias: false,
        router_buffer_bias: false,
        shared_gate: false,
    };
    let experts = f.positive_any(&["num_local_experts", "num_experts", "n_routed_experts"])?;
    let Some(num_experts) = experts else {
        return Ok(none);
    };
    let why = "the experts each token is routed to (an MoE config)";
    let top_k = f.require_any(
        &[
            "num_experts_per_tok",
            "experts_per_token",
            "num_experts_per_token",
            "moe_top_k",
        ],
        why,
    )?;
    if top_k > num_experts {
        return Err(ConfigError::Inconsistent(format!(
            "num_experts_per_tok ({top_k}) exceeds the number of experts ({num_experts})"
        )));
    }
    let expert_i = f.positive("moe_intermediate_size")?.unwrap_or(intermediate);
    let mut layout = none;
    let (shared, is_moe): (u64, Vec<bool>) = match model_type {
        "qwen2_moe" | "qwen3_moe" => {
            let step = f.positive("decoder_sparse_step")?.unwrap_or(1);
            let only_mlp = f.u64_list("mlp_only_layers")?.unwrap_or_default();
            let shared = f.u64("shared_expert_intermediate_size")?.unwrap_or(0);
            layout.shared_gate = shared > 0;
            let moe = (0..num_layers)
                .map(|i| !only_mlp.contains(&(i as u64)) && (i as u64 + 1).is_multiple_of(step))
                .collect();
            (shared, moe)
        }
        // DeepSeek-MoE (v1, remote code modeling_deepseek.py) shares V2/V3's layout rule.
        "deepseek" | "deepseek_v2" | "deepseek_v3" | "kimi_k2" => {
            let first_dense = f.u64("first_k_dense_replace")?.unwrap_or(0);
            let freq = f.positive("moe_layer_freq")?.unwrap_or(1);
            let shared = f
                .u64("n_shared_experts")?
                .unwrap_or(0)
                .saturating_mul(expert_i);
            // DeepseekV3TopkRouter keeps `e_score_correction_bias` for the "noaux_tc" top-k method.
            layout.router_buffer_bias = f.str("topk_method")? == Some("noaux_tc")
                || (matches!(model_type, "deepseek_v3" | "kimi_k2")
                    && f.str("topk_method")?.is_none());
            let moe = (0..num_layers)
                .map(|i| i as u64 >= first_dense && (i as u64).is_multiple_of(freq))
                .collect();
            (shared, moe)
        }
        // Llama4TextConfig: moe_layers, default every interleave_moe_layer_step-th layer; one shared
        // expert of intermediate_size; dense layers use intermediate_size_mlp.
        "llama4_text" => {
            let step = f.positive("interleave_moe_layer_step")?.unwrap_or(1);
            let listed = f.u64_list("moe_layers")?;
            let moe = (0..num_layers as u64)
                .map(|i| match &listed {
                    Some(l) => l.contains(&i),
                    None => (i + 1).is_multiple_of(step),
                })
                .collect();
            layout.dense_intermediate = Some(f.positive("intermediate_size_mlp")?.unwrap_or(16384));
            (intermediate, moe)
        }
        // Snowflake Arctic (its repository's modeling_arctic.py and ds_to_hf_converter.py): layer i
        // is MoE when i % moe_layer_frequency == moe_layer_frequency − 1; with
        // parallel_attn_mlp_res every layer also has a dense residual MLP of hidden_size.
        "arctic" => {
            let freq = f.positive("moe_layer_frequency")?.unwrap_or(2);
            if freq != 1 {
                return Err(f.invalid(
                    "moe_layer_frequency",
                    "1 (every published Arctic layer is MoE; the dense layers of other frequencies are not modelled)",
                    &serde_json::json!(freq),
                ));
            }
            let residual = f.bool("parallel_attn_mlp_res")?.unwrap_or(false);
            let hidden = f.positive("hidden_size")?.unwrap_or(0);
            (if residual { hidden } else { 0 }, vec![true; num_layers])
        }
        "gpt_oss" => {
            layout.router_bias = true;
            (0, vec![true; num_layers])
        }
        _ => (
            f.u64("shared_expert_intermediate_size")?.unwrap_or(0),
            vec![true; num_layers],
        ),
    };
    if layout.dense_intermediate.is_none() {
        layout.dense_intermediate = Some(intermediate);
    }
    layout.is_moe = is_moe;
    layout.ffn = Some(FfnSpec::Moe {
        num_experts,
        experts_per_token: top_k,
        expert_intermediate_size: expert_i,
        shared_intermediate_size: shared,
        gated: true,
    });
    Ok(layout)
}

fn moe_tensors(b: &mut Builder, p: &str, l: u32, hidden: u64, m: &MoeLayer, model_type: &str) {
    let FfnSpec::Moe {
        num_experts,
        expert_intermediate_size,
        shared_intermediate_size,
        ..
    } = m.ffn
    else {
        return;
    };
    let e = num_experts;
    let i = expert_intermediate_size;
    // GraniteMoeDecoderLayer keeps its experts in `block_sparse_moe` with a `router`.
    let (block, router) = match model_type {
        "granitemoe" => ("block_sparse_moe", "router"),
        "arctic" => ("block_sparse_moe", "gate"),
        "llama4_text" => ("feed_forward", "router"),
        _ => ("mlp", "gate"),
    };
    let mlp = join(p, block);
    if model_type == "gpt_oss" {
        // GptOssExperts: gate_up_proj [E, H, 2I] + bias [E, 2I], down_proj [E, I, H] + bias [E, H];
        // GptOssTopKRouter: weight [E, H] + bias [E].
        b.param(
            &join(&mlp, "router.weight"),
            Some(l),
            Component::Router,
            [e, hidden],
        );
        b.param(&join(&mlp, "router.bias"), Some(l), Component::Router, [e]);
        b.param(
            &join(&mlp, "experts.gate_up_proj"),
            Some(l),
            Component::Experts,
            [e, hidden, i.saturating_mul(2)],
        );
        b.param(
            &join(&mlp, "experts.gate_up_proj_bias"),
            Some(l),
            Component::Experts,
            [e, i.saturating_mul(2)],
        );
        b.param(
            &join(&mlp, "experts.down_proj"),
            Some(l),
            Component::Experts,
            [e, i, hidden],
        );
        b.param(
            &join(&mlp, "experts.down_proj_bias"),
            Some(l),
            Component::Experts,
            [e, hidden],
        );
        return;
    }
    b.param(
        &format!("{mlp}.{router}.weight"),
        Some(l),
        Component::Router,
        [e, hidden],
    );
    if m.router_bias {
        b.param(&join(&mlp, "gate.bias"), Some(l), Component::Router, [e]);
    }
    if m.router_buffer_bias {
        b.buffer(
            &join(&mlp, "gate.e_score_correction_bias"),
            Some(l),
            Component::Router,
            [e],
        );
    }
    // Llama4TextExperts stores [E, H, 2I] and [E, I, H] (as gpt-oss does); the others [E, 2I, H]
    // and [E, H, I].
    let (gate_up, down) = if model_type == "llama4_text" {
        (vec![e, hidden, i.saturating_mul(2)], vec![e, i, hidden])
    } else {
        (vec![e, i.saturating_mul(2), hidden], vec![e, hidden, i])
    };
    b.param(
        &join(&mlp, "experts.gate_up_proj"),
        Some(l),
        Component::Experts,
        gate_up,
    );
    b.param(
        &join(&mlp, "experts.down_proj"),
        Some(l),
        Component::Experts,
        down,
    );
    if shared_intermediate_size > 0 && model_type == "arctic" {
        // ArcticDecoderLayer with parallel_attn_mlp_res: a dense residual MLP (`residual_mlp.w1`,
        // `w3`, `w2`, hidden_size wide) beside the MoE, on its own `residual_layernorm`; always
        // active, so it is counted as a shared expert.
        let r = join(p, "residual_mlp");
        let c = Component::SharedExperts;
        let i = shared_intermediate_size;
        b.linear(&join(&r, "w1"), Some(l), c, hidden, i, false);
        b.linear(&join(&r, "w3"), Some(l), c, hidden, i, false);
        b.linear(&join(&r, "w2"), Some(l), c, i, hidden, false);
        b.norm(
            &join(p, "residual_layernorm"),
            Some(l),
            Component::Norm,
            hidden,
            false,
        );
        return;
    }
    if shared_intermediate_size > 0 {
        let name = if model_type.starts_with("qwen") || model_type == "llama4_text" {
            "shared_expert"
        } else {
            "shared_experts"
        };
        mlp_tensors(
            b,
            &join(&mlp, name),
            l,
            hidden,
            shared_intermediate_size,
            false,
            false,
            Component::SharedExperts,
        );
        if m.shared_gate {
            b.linear(
                &join(&mlp, "shared_expert_gate"),
                Some(l),
                Component::Router,
                hidden,
                1,
                false,
            );
        }
    }
}

/// A gated MLP (gate, up, down), or phi3's fused `gate_up_proj` + `down_proj`.
#[allow(clippy::too_many_arguments)]
fn mlp_tensors(
    b: &mut Builder,
    m: &str,
    l: u32,
    hidden: u64,
    inner: u64,
    bias: bool,
    fused: bool,
    component: Component,
) {
    if fused {
        b.linear(
            &join(m, "gate_up_proj"),
            Some(l),
            component,
            hidden,
            inner.saturating_mul(2),
            bias,
        );
    } else {
        b.linear(
            &join(m, "gate_proj"),
            Some(l),
            component,
            hidden,
            inner,
            bias,
        );
        b.linear(&join(m, "up_proj"), Some(l), component, hidden, inner, bias);
    }
    b.linear(
        &join(m, "down_proj"),
        Some(l),
        component,
        inner,
        hidden,
        bias,
    );
}
