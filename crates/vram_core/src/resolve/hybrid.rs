//! Hybrid decoders whose layers are attention or state-space mixers: jamba (mamba + attention,
//! MoE every other layer) and nemotron_h (mamba-2, attention and MLP layers in a pattern).
//!
//! Names and shapes follow `transformers`' `modeling_jamba.py` and `modeling_nemotron_h.py`;
//! `tests/arch_headers.rs` checks them against the models `transformers` builds.

use super::builder::{progressions, Progression};
use super::{dropouts, join, Builder};
use crate::error::ConfigError;
use crate::fields::Fields;
use crate::spec::{AttentionSpec, Component, FfnSpec, LayerSpec, ModelSpec, NormKind, SsmSpec};

/// The layer specs of a pattern built one run at a time.
#[derive(Default)]
struct RunLayers(Vec<(Progression, LayerSpec)>);

impl RunLayers {
    /// `spec` is every layer of `run`.
    fn add(&mut self, run: Progression, spec: LayerSpec) {
        self.0.push((run, spec));
    }

    /// One spec per layer, in layer order (layers no run covers are left out).
    fn into_layers(self, n: usize) -> Vec<LayerSpec> {
        let mut run_of = vec![u32::MAX; n];
        for (k, (run, _)) in self.0.iter().enumerate() {
            for j in 0..run.count {
                let at = run.first.saturating_add(j.saturating_mul(run.stride));
                if let Some(slot) = usize::try_from(at).ok().and_then(|at| run_of.get_mut(at)) {
                    *slot = k as u32;
                }
            }
        }
        run_of
            .iter()
            .filter_map(|&k| self.0.get(k as usize).map(|(_, spec)| *spec))
            .collect()
    }
}

fn l32(i: u64) -> Option<u32> {
    Some(u32::try_from(i).unwrap_or(u32::MAX))
}

/// q/k/v without bias and `o_proj` (biased only in recurrent_gemma), under `a`.
fn attention(
    b: &mut Builder,
    a: &str,
    l: Option<u32>,
    hidden: u64,
    at: &AttentionSpec,
    o_bias: bool,
) {
    let q = at.num_heads.saturating_mul(at.head_dim);
    let kv = at.num_kv_heads.saturating_mul(at.head_dim);
    for (n, out) in [("q_proj", q), ("k_proj", kv), ("v_proj", kv)] {
        b.linear((a, n), l, Component::Attention, hidden, out, false);
    }
    b.linear((a, "o_proj"), l, Component::Attention, q, hidden, o_bias);
}

fn heads(f: Fields<'_>, hidden: u64, head_dim_keys: &[&str]) -> Result<AttentionSpec, ConfigError> {
    let heads = f.require_any(&["num_attention_heads"], "the number of attention heads")?;
    let head_dim = super::head_dim(f, head_dim_keys, hidden, heads)?;
    Ok(AttentionSpec {
        num_heads: heads,
        num_kv_heads: super::kv_heads(f, heads)?,
        head_dim,
        v_head_dim: head_dim,
        sliding_window: None,
        mla: None,
    })
}

/// Jamba (modeling_jamba.py): each layer is attention (`attn_layer_period`/`attn_layer_offset`, or
/// `layers_block_type`) or a mamba mixer with RMSNorms on Δ, B and C (`dt_layernorm`,
/// `b_layernorm`, `c_layernorm`); its `feed_forward` is an MoE every `expert_layer_period`-th layer
/// from `expert_layer_offset` (router + fused experts), else a gated MLP; `input_layernorm` and
/// `pre_ff_layernorm` per layer, `final_layernorm`. No positions (no RoPE).
pub(crate) fn jamba(f: Fields<'_>) -> Result<ModelSpec, ConfigError> {
    super::decoder::refuse_keys_outside(
        f,
        "jamba",
        &[
            "layers_block_type",
            "attn_layer_period",
            "mamba_d_state",
            "mamba_expand",
            "num_experts",
            "num_experts_per_tok",
        ],
    )?;
    let hidden = f.require_any(&["hidden_size"], "the width of the model")?;
    let n = f.layer_count(&["num_hidden_layers"], "the number of layers")?;
    let vocab = f.require_any(&["vocab_size"], "the vocabulary size (embedding rows)")?;
    let inner = f.require_any(&["intermediate_size"], "the MLP width")?;
    let at = heads(f, hidden, &["head_dim"])?;
    let state = f.positive("mamba_d_state")?.unwrap_or(16);
    let conv = f.positive("mamba_d_conv")?.unwrap_or(4);
    let d_inner = hidden.saturating_mul(f.positive("mamba_expand")?.unwrap_or(2));
    let dt_rank = match f.value("mamba_dt_rank") {
        None | Some(serde_json::Value::String(_)) => hidden.div_ceil(16),
        Some(_) => f.require_any(&["mamba_dt_rank"], "the time-step rank")?,
    };
    let conv_bias = f.bool("mamba_conv_bias")?.unwrap_or(true);
    let proj_bias = f.bool("mamba_proj_bias")?.unwrap_or(false);
    let experts = f.positive("num_experts")?.unwrap_or(16);
    let top_k = f.positive("num_experts_per_tok")?.unwrap_or(2);
    if top_k > experts {
        return Err(ConfigError::Inconsistent(format!(
            "num_experts_per_tok ({top_k}) exceeds num_experts ({experts})"
        )));
    }
    let attn_period = f.positive("attn_layer_period")?.unwrap_or(8);
    let attn_offset = f.u64("attn_layer_offset")?.unwrap_or(4);
    let moe_period = f.positive("expert_layer_period")?.unwrap_or(2);
    let moe_offset = f.u64("expert_layer_offset")?.unwrap_or(1);
    let listed = f.str_list("layers_block_type")?;
    if let Some(l) = &listed {
        if l.len() as u64 != n {
            return Err(ConfigError::Inconsistent(format!(
                "layers_block_type has {} entries but num_hidden_layers is {n}",
                l.len()
            )));
        }
    }
    let tie = f.bool("tie_word_embeddings")?.unwrap_or(false);
    let ssm = SsmSpec {
        d_inner,
        state_size: state,
        conv_kernel: conv,
        dt_rank,
        conv_dim: d_inner,
        chunk_size: 0,
        conv_state_grows_at_first_decode: false,
    };
    // (attention, MoE) per layer; identical layers are built once per evenly spaced run
    let kinds: Vec<(bool, bool)> = (0..n)
        .map(|i| {
            let is_attention = match &listed {
                Some(types) => types[i as usize] == "attention",
                None => i % attn_period == attn_offset,
            };
            (is_attention, experts > 1 && i % moe_period == moe_offset)
        })
        .collect();
    let runs = progressions(&kinds);
    let mut b = Builder::with_capacity(runs.len().saturating_mul(20).saturating_add(4));
    b.embedding("model.embed_tokens", Component::Embedding, vocab, hidden);
    let mut layers = RunLayers::default();
    for run in runs {
        let i = run.first;
        b.set_run(run);
        let (l, p) = (l32(i), format!("model.layers.{i}"));
        let (is_attention, is_moe) = kinds[i as usize];
        if is_attention {
            attention(&mut b, &join(&p, "self_attn"), l, hidden, &at, false);
        } else {
            let m = join(&p, "mamba");
            super::classic::mamba_mixer(&mut b, &m, l, hidden, &ssm, conv_bias, proj_bias);
            b.norm((&*m, "dt_layernorm"), l, Component::Norm, dt_rank, false);
            b.norm((&*m, "b_layernorm"), l, Component::Norm, state, false);
            b.norm((&*m, "c_layernorm"), l, Component::Norm, state, false);
        }
        let ff = join(&p, "feed_forward");
        let ffn = if is_moe {
            b.param(
                (&*ff, "router.weight"),
                l,
                Component::Router,
                [experts, hidden],
            );
            let two = inner.saturating_mul(2);
            let gate_up = join(&ff, "experts.gate_up_proj");
            b.param(&gate_up, l, Component::Experts, [experts, two, hidden]);
            let down = join(&ff, "experts.down_proj");
            b.param(&down, l, Component::Experts, [experts, hidden, inner]);
            FfnSpec::Moe {
                num_experts: experts,
                experts_per_token: top_k,
                expert_intermediate_size: inner,
                shared_intermediate_size: 0,
                gated: true,
            }
        } else {
            for g in ["gate_proj", "up_proj"] {
                b.linear((&*ff, g), l, Component::Mlp, hidden, inner, false);
            }
            b.linear((&*ff, "down_proj"), l, Component::Mlp, inner, hidden, false);
            FfnSpec::Dense {
                intermediate_size: inner,
                gated: true,
            }
        };
        b.norm((&*p, "input_layernorm"), l, Component::Norm, hidden, false);
        b.norm((&*p, "pre_ff_layernorm"), l, Component::Norm, hidden, false);
        layers.add(
            run,
            LayerSpec {
                attention: is_attention.then_some(at),
                cross_attention: None,
                ffn: Some(ffn),
                ssm: (!is_attention).then_some(ssm),
            },
        );
    }
    b.end_run();
    let layers = layers.into_layers(kinds.len());
    b.norm(
        "model.final_layernorm",
        None,
        Component::FinalNorm,
        hidden,
        false,
    );
    if !tie {
        b.linear("lm_head", None, Component::LmHead, hidden, vocab, false);
    }
    let max_pos = f.positive("max_position_embeddings")?.unwrap_or(262_144);
    let act = f.str("hidden_act")?.unwrap_or("silu");
    let drop = dropouts(f, &["attention_dropout"], &["hidden_dropout"])?;
    Ok(super::decoder_only_spec(
        "jamba",
        (hidden, vocab, max_pos),
        tie,
        act,
        NormKind::RmsNorm,
        drop,
        layers,
        b.tensors,
    ))
}

/// Nemotron-H (modeling_nemotron_h.py): one `norm` and one `mixer` per layer, the mixer chosen by
/// `hybrid_override_pattern` (`M` mamba-2, `*` attention, `-` MLP) or `layers_block_type`
/// (`mamba`, `attention`, `mlp`). Mamba-2 mixer: `in_proj` [2·d_inner + 2·groups·state + heads],
/// conv over d_inner + 2·groups·state channels with bias, `dt_bias`, `A_log`, `D` per head, a
/// gated RMSNorm over d_inner, `out_proj`; MLP: `up_proj`/`down_proj` (relu², not gated);
/// attention: q/k/v/o of `head_dim` (or `attention_head_dim`). `model.embeddings`, `model.norm_f`.
pub(crate) fn nemotron_h(f: Fields<'_>) -> Result<ModelSpec, ConfigError> {
    super::decoder::refuse_keys_outside(
        f,
        "nemotron_h",
        &[
            "hybrid_override_pattern",
            "layers_block_type",
            "ssm_state_size",
        ],
    )?;
    let hidden = f.require_any(&["hidden_size"], "the width of the model")?;
    let vocab = f.require_any(&["vocab_size"], "the vocabulary size (embedding rows)")?;
    let kinds: Vec<char> = if let Some(p) = f.str("hybrid_override_pattern")? {
        p.chars().collect()
    } else if let Some(l) = f.str_list("layers_block_type")? {
        l.iter()
            .map(|t| match *t {
                "mamba" => 'M',
                "attention" => '*',
                "mlp" => '-',
                "moe" => 'E',
                _ => '?',
            })
            .collect()
    } else {
        return Err(ConfigError::MissingField {
            field: "hybrid_override_pattern".into(),
            why: "a nemotron_h config names each layer's mixer there (or in layers_block_type)"
                .into(),
        });
    };
    let n = f.layer_count(&["num_hidden_layers"], "the number of layers")?;
    if kinds.len() as u64 != n {
        return Err(ConfigError::Inconsistent(format!(
            "hybrid_override_pattern has {} layers but num_hidden_layers is {n}",
            kinds.len()
        )));
    }
    if let Some(c) = kinds.iter().find(|c| !matches!(c, 'M' | '*' | '-')) {
        return Err(f.invalid(
            "hybrid_override_pattern",
            "layers of M (mamba-2), * (attention) and - (MLP) only; MoE layers (E) of Nemotron-H are not modelled",
            &serde_json::Value::String(c.to_string()),
        ));
    }
    let inner = f.require_any(&["intermediate_size"], "the MLP width")?;
    let at = heads(f, hidden, &["head_dim", "attention_head_dim"])?;
    let m_heads = f.positive("mamba_num_heads")?.unwrap_or(128);
    let m_head_dim = f.positive("mamba_head_dim")?.unwrap_or(64);
    let groups = f.positive("n_groups")?.unwrap_or(8);
    let state = f.positive("ssm_state_size")?.unwrap_or(128);
    let conv = f.positive("conv_kernel")?.unwrap_or(4);
    let d_inner = m_heads.saturating_mul(m_head_dim);
    let bc = groups.saturating_mul(state).saturating_mul(2);
    let conv_dim = d_inner.saturating_add(bc);
    let conv_bias = f.bool("use_conv_bias")?.unwrap_or(true);
    let proj_bias = f.bool("use_bias")?.unwrap_or(false);
    let mlp_bias = f.bool("mlp_bias")?.unwrap_or(false);
    let attn_bias = f.bool("attention_bias")?.unwrap_or(false);
    if attn_bias {
        return Err(f.invalid(
            "attention_bias",
            "false (no published Nemotron-H has attention biases)",
            &serde_json::Value::Bool(true),
        ));
    }
    let tie = f.bool("tie_word_embeddings")?.unwrap_or(false);
    let ssm = SsmSpec {
        d_inner,
        state_size: state,
        conv_kernel: conv,
        dt_rank: m_heads,
        conv_dim,
        chunk_size: f
            .positive_any(&["chunk_size", "mamba_chunk_size"])?
            .unwrap_or(128),
        conv_state_grows_at_first_decode: false,
    };
    let runs = progressions(&kinds);
    let mut b = Builder::with_capacity(runs.len().saturating_mul(20).saturating_add(4));
    b.embedding("model.embeddings", Component::Embedding, vocab, hidden);
    let mut layers = RunLayers::default();
    for run in runs {
        let i = run.first;
        let kind = kinds[i as usize];
        b.set_run(run);
        let (l, p) = (l32(i), format!("model.layers.{i}"));
        b.norm((&*p, "norm"), l, Component::Norm, hidden, false);
        let m = join(&p, "mixer");
        let layer = match kind {
            'M' => {
                for name in ["dt_bias", "A_log", "D"] {
                    b.param((&*m, name), l, Component::Mixer, [m_heads]);
                }
                let cw = join(&m, "conv1d.weight");
                b.param(&cw, l, Component::Mixer, [conv_dim, 1, conv]);
                if conv_bias {
                    b.param((&*m, "conv1d.bias"), l, Component::Bias, [conv_dim]);
                }
                let in_out = d_inner
                    .saturating_mul(2)
                    .saturating_add(bc)
                    .saturating_add(m_heads);
                b.linear(
                    (&*m, "in_proj"),
                    l,
                    Component::Mixer,
                    hidden,
                    in_out,
                    proj_bias,
                );
                b.norm((&*m, "norm"), l, Component::Norm, d_inner, false);
                b.linear(
                    (&*m, "out_proj"),
                    l,
                    Component::Mixer,
                    d_inner,
                    hidden,
                    proj_bias,
                );
                LayerSpec {
                    attention: None,
                    cross_attention: None,
                    ffn: None,
                    ssm: Some(ssm),
                }
            }
            '*' => {
                attention(&mut b, &m, l, hidden, &at, false);
                LayerSpec {
                    attention: Some(at),
                    cross_attention: None,
                    ffn: None,
                    ssm: None,
                }
            }
            _ => {
                b.linear((&*m, "up_proj"), l, Component::Mlp, hidden, inner, mlp_bias);
                b.linear(
                    (&*m, "down_proj"),
                    l,
                    Component::Mlp,
                    inner,
                    hidden,
                    mlp_bias,
                );
                LayerSpec {
                    attention: None,
                    cross_attention: None,
                    ffn: Some(FfnSpec::Dense {
                        intermediate_size: inner,
                        gated: false,
                    }),
                    ssm: None,
                }
            }
        };
        layers.add(run, layer);
    }
    b.end_run();
    let layers = layers.into_layers(kinds.len());
    b.norm("model.norm_f", None, Component::FinalNorm, hidden, false);
    if !tie {
        b.linear("lm_head", None, Component::LmHead, hidden, vocab, false);
    }
    let max_pos = f.positive("max_position_embeddings")?.unwrap_or(4096);
    let act = f.str("mlp_hidden_act")?.unwrap_or("relu2");
    let drop = dropouts(f, &["attention_dropout"], &["hidden_dropout"])?;
    let mut s = super::decoder_only_spec(
        "nemotron_h",
        (hidden, vocab, max_pos),
        tie,
        act,
        NormKind::RmsNorm,
        drop,
        layers,
        b.tensors,
    );
    s.warnings.push(
        "mamba-2 activations assume the mamba-ssm and causal-conv1d kernels (vLLM, or transformers \
         with both installed); transformers' torch fallback materialises chunk × chunk × heads × \
         state products per chunk and needs far more"
            .into(),
    );
    Ok(s)
}

/// RecurrentGemma / Griffin (modeling_recurrent_gemma.py): layers cycle through `block_types`
/// (`_block_types` in published configs; default recurrent, recurrent, attention). Each layer has
/// `temporal_pre_norm`, a `temporal_block` and `channel_pre_norm` + `mlp_block` (gated, biased,
/// `intermediate_size / 2` wide). A recurrent block: `linear_x`, `linear_y`, `linear_out` with
/// bias, a depthwise `conv_1d` with bias, and the RG-LRU (`recurrent_param`, block-diagonal input
/// and recurrent gates per head); an attention block: q/k/v without bias, `o_proj` with bias, over
/// a local window of `attention_window_size`. Tied head, `final_norm`. Cache: the conv state and
/// the LRU state per recurrent layer, the window per attention layer.
pub(crate) fn recurrent_gemma(f: Fields<'_>) -> Result<ModelSpec, ConfigError> {
    super::decoder::refuse_keys_outside(f, "recurrent_gemma", &["block_types"])?;
    let hidden = f.require_any(&["hidden_size"], "the width of the model")?;
    let n = f.layer_count(&["num_hidden_layers"], "the number of layers")?;
    let vocab = f.require_any(&["vocab_size"], "the vocabulary size (embedding rows)")?;
    let mut at = heads(f, hidden, &["head_dim"])?;
    at.sliding_window = Some(f.positive("attention_window_size")?.unwrap_or(2048));
    let lru = f.positive("lru_width")?.unwrap_or(hidden);
    let conv = f.positive("conv1d_width")?.unwrap_or(4);
    let inner = f.require_any(&["intermediate_size"], "the MLP width")? / 2;
    if !lru.is_multiple_of(at.num_heads) {
        return Err(ConfigError::Inconsistent(format!(
            "lru_width ({lru}) is not a multiple of num_attention_heads ({})",
            at.num_heads
        )));
    }
    let block = lru / at.num_heads;
    let types = match f.str_list("block_types")? {
        Some(t) => t,
        None => f
            .str_list("_block_types")?
            .unwrap_or_else(|| vec!["recurrent", "recurrent", "attention"]),
    };
    if types.is_empty()
        || types
            .iter()
            .any(|t| !matches!(*t, "recurrent" | "attention"))
    {
        return Err(ConfigError::Inconsistent(format!(
            "block_types must list \"recurrent\" and \"attention\" layers, found {types:?}"
        )));
    }
    let ssm = SsmSpec {
        d_inner: lru,
        state_size: 1,
        conv_kernel: conv,
        dt_rank: at.num_heads,
        conv_dim: lru,
        chunk_size: 0,
        conv_state_grows_at_first_decode: true,
    };
    let mut b = Builder::default();
    b.embedding("model.embed_tokens", Component::Embedding, vocab, hidden);
    let mut layers = Vec::new();
    for i in 0..n {
        let (l, p) = (l32(i), format!("model.layers.{i}"));
        let recurrent = types[(i as usize) % types.len()] == "recurrent";
        b.norm(
            (&*p, "temporal_pre_norm"),
            l,
            Component::Norm,
            hidden,
            false,
        );
        let t = join(&p, "temporal_block");
        if recurrent {
            for name in ["linear_y", "linear_x"] {
                b.linear((&*t, name), l, Component::Mixer, hidden, lru, true);
            }
            b.linear((&*t, "linear_out"), l, Component::Mixer, lru, hidden, true);
            b.param((&*t, "conv_1d.weight"), l, Component::Mixer, [lru, 1, conv]);
            b.param((&*t, "conv_1d.bias"), l, Component::Bias, [lru]);
            let r = join(&t, "rg_lru");
            b.param((&*r, "recurrent_param"), l, Component::Mixer, [lru]);
            for gate in ["input_gate", "recurrent_gate"] {
                let w = [at.num_heads, block, block];
                b.param(&format!("{r}.{gate}_weight"), l, Component::Mixer, w);
                let bias = [at.num_heads, block];
                b.param(&format!("{r}.{gate}_bias"), l, Component::Mixer, bias);
            }
        } else {
            attention(&mut b, &t, l, hidden, &at, true);
        }
        b.norm((&*p, "channel_pre_norm"), l, Component::Norm, hidden, false);
        let m = join(&p, "mlp_block");
        for name in ["gate_proj", "up_proj"] {
            b.linear((&*m, name), l, Component::Mlp, hidden, inner, true);
        }
        b.linear((&*m, "down_proj"), l, Component::Mlp, inner, hidden, true);
        layers.push(LayerSpec {
            attention: (!recurrent).then_some(at),
            cross_attention: None,
            ffn: Some(FfnSpec::Dense {
                intermediate_size: inner,
                gated: true,
            }),
            ssm: recurrent.then_some(ssm),
        });
    }
    b.norm(
        "model.final_norm",
        None,
        Component::FinalNorm,
        hidden,
        false,
    );
    let act = f.str("hidden_activation")?.unwrap_or("gelu_pytorch_tanh");
    let drop = dropouts(f, &["attention_dropout"], &["hidden_dropout"])?;
    let max_pos = f.positive("max_position_embeddings")?.unwrap_or(8192);
    let mut spec = super::decoder_only_spec(
        "recurrent_gemma",
        (hidden, vocab, max_pos),
        true,
        act,
        NormKind::RmsNorm,
        drop,
        layers,
        b.tensors,
    );
    // `RecurrentGemmaForCausalLM.forward`: `tanh(logits / cap) * cap` always
    // (`logits_soft_cap`, 30.0 by default)
    spec.final_logit_softcapping = true;
    Ok(spec)
}
