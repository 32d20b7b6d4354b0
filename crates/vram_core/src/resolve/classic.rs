//! Architectures with their own layouts: gpt2, opt, bloom, gpt_neox, bert, t5, mamba.
//! Each function follows the module tree of `transformers`' `modeling_<type>.py`.

use super::{dropouts, join, Builder};
use crate::error::ConfigError;
use crate::fields::Fields;
use crate::spec::{
    AttentionSpec, BufferDtype, Component, FfnSpec, LayerSpec, ModelKind, ModelSpec, NormKind,
    RuntimeBuffer, SsmSpec,
};

/// The sizes every classic transformer has.
struct Dims {
    hidden: u64,
    layers: u64,
    heads: u64,
    vocab: u64,
}

fn dims(
    f: Fields<'_>,
    hidden_keys: &[&str],
    layer_keys: &[&str],
    head_keys: &[&str],
) -> Result<Dims, ConfigError> {
    let hidden = f.require_any(hidden_keys, "the width of the model")?;
    let layers = f.layer_count(layer_keys, "the number of layers")?;
    let heads = f.require_any(head_keys, "the number of attention heads")?;
    let vocab = f.require_any(&["vocab_size"], "the vocabulary size (embedding rows)")?;
    if hidden % heads != 0 {
        return Err(ConfigError::Inconsistent(format!(
            "the width ({hidden}) is not a multiple of the number of heads ({heads})"
        )));
    }
    Ok(Dims {
        hidden,
        layers,
        heads,
        vocab,
    })
}

fn mha(d: &Dims) -> AttentionSpec {
    let head_dim = d.hidden / d.heads;
    AttentionSpec {
        num_heads: d.heads,
        num_kv_heads: d.heads,
        head_dim,
        v_head_dim: head_dim,
        sliding_window: None,
        mla: None,
    }
}

fn plain_layer(d: &Dims, inner: u64) -> LayerSpec {
    LayerSpec {
        attention: Some(mha(d)),
        cross_attention: None,
        ffn: Some(FfnSpec::Dense {
            intermediate_size: inner,
            gated: false,
        }),
        ssm: None,
    }
}

#[allow(clippy::too_many_arguments)]
fn spec(
    model_type: &str,
    kind: ModelKind,
    d: &Dims,
    max_pos: u64,
    tie: bool,
    act: &str,
    norm: NormKind,
    (attention_dropout, hidden_dropout): (f64, f64),
    layers: Vec<LayerSpec>,
    b: Builder,
) -> ModelSpec {
    ModelSpec {
        name: String::new(),
        model_type: model_type.into(),
        text_model_type: model_type.into(),
        kind,
        hidden_size: d.hidden,
        vocab_size: d.vocab,
        num_layers: d.layers,
        num_encoder_layers: 0,
        max_position_embeddings: max_pos,
        tie_word_embeddings: tie,
        final_logit_softcapping: false,
        no_kv_cache: false,
        runtime_buffers: Vec::new(),
        hidden_act: act.into(),
        norm,
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
        warnings: Vec::new(),
    }
}

fn l32(i: u64) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

/// GPT-2 (modeling_gpt2.py): Conv1D projections with biases, learned positions, tied head.
pub(crate) fn gpt2(f: Fields<'_>) -> Result<ModelSpec, ConfigError> {
    super::decoder::refuse_keys_outside(f, "gpt2", &[])?;
    let d = dims(
        f,
        &["hidden_size", "n_embd"],
        &["num_hidden_layers", "n_layer"],
        &["num_attention_heads", "n_head"],
    )?;
    let inner = f.positive("n_inner")?.unwrap_or(d.hidden.saturating_mul(4));
    let positions = f
        .positive_any(&["max_position_embeddings", "n_positions"])?
        .unwrap_or(1024);
    let tie = f.bool("tie_word_embeddings")?.unwrap_or(true);
    let mut b = Builder::default();
    b.embedding("transformer.wte", Component::Embedding, d.vocab, d.hidden);
    b.embedding(
        "transformer.wpe",
        Component::PositionEmbedding,
        positions,
        d.hidden,
    );
    let mut layers = Vec::new();
    // Every layer is alike: built once as a run (`TensorSpec::repeat`).
    b.repeat = l32(d.layers);
    for i in 0..d.layers.min(1) {
        let (l, p) = (Some(l32(i)), format!("transformer.h.{i}"));
        b.norm(&join(&p, "ln_1"), l, Component::Norm, d.hidden, true);
        b.conv1d(
            &join(&p, "attn.c_attn"),
            l,
            Component::Attention,
            d.hidden,
            d.hidden.saturating_mul(3),
            true,
        );
        b.conv1d(
            &join(&p, "attn.c_proj"),
            l,
            Component::Attention,
            d.hidden,
            d.hidden,
            true,
        );
        b.norm(&join(&p, "ln_2"), l, Component::Norm, d.hidden, true);
        b.conv1d(
            &join(&p, "mlp.c_fc"),
            l,
            Component::Mlp,
            d.hidden,
            inner,
            true,
        );
        b.conv1d(
            &join(&p, "mlp.c_proj"),
            l,
            Component::Mlp,
            inner,
            d.hidden,
            true,
        );
        layers.push(plain_layer(&d, inner));
    }
    b.repeat = 1;
    if let Some(&first) = layers.first() {
        layers.resize(d.layers as usize, first);
    }
    b.norm(
        "transformer.ln_f",
        None,
        Component::FinalNorm,
        d.hidden,
        true,
    );
    if !tie {
        b.linear("lm_head", None, Component::LmHead, d.hidden, d.vocab, false);
    }
    let act = f.str("activation_function")?.unwrap_or("gelu_new");
    let drop = dropouts(f, &["attn_pdrop"], &["resid_pdrop"])?;
    Ok(spec(
        "gpt2",
        ModelKind::DecoderOnly,
        &d,
        positions,
        tie,
        act,
        NormKind::LayerNorm,
        drop,
        layers,
        b,
    ))
}

/// OPT (modeling_opt.py): learned positions with an offset of 2 rows, optional embedding projections.
pub(crate) fn opt(f: Fields<'_>) -> Result<ModelSpec, ConfigError> {
    super::decoder::refuse_keys_outside(f, "opt", &[])?;
    let d = dims(
        f,
        &["hidden_size"],
        &["num_hidden_layers"],
        &["num_attention_heads"],
    )?;
    let inner = f.require_any(&["ffn_dim"], "the MLP width")?;
    let max_pos = f.require_any(
        &["max_position_embeddings"],
        "the length of the learned position table",
    )?;
    let proj_dim = f.positive("word_embed_proj_dim")?.unwrap_or(d.hidden);
    let bias = f.bool("enable_bias")?.unwrap_or(true);
    let affine = f.bool("layer_norm_elementwise_affine")?.unwrap_or(true);
    let final_norm = f.bool("do_layer_norm_before")?.unwrap_or(true)
        && !f.bool("_remove_final_layer_norm")?.unwrap_or(false);
    let tie = f.bool("tie_word_embeddings")?.unwrap_or(true);
    let mut b = Builder::default();
    b.embedding(
        "model.decoder.embed_tokens",
        Component::Embedding,
        d.vocab,
        proj_dim,
    );
    // OPTLearnedPositionalEmbedding: "OPT is set up so that if padding_idx is specified then offset the
    // embedding ids by 2 and adjust num_embeddings appropriately."
    b.embedding(
        "model.decoder.embed_positions",
        Component::PositionEmbedding,
        max_pos.saturating_add(2),
        d.hidden,
    );
    if proj_dim != d.hidden {
        b.linear(
            "model.decoder.project_out",
            None,
            Component::Embedding,
            d.hidden,
            proj_dim,
            false,
        );
        b.linear(
            "model.decoder.project_in",
            None,
            Component::Embedding,
            proj_dim,
            d.hidden,
            false,
        );
    }
    if final_norm && affine {
        b.norm(
            "model.decoder.final_layer_norm",
            None,
            Component::FinalNorm,
            d.hidden,
            true,
        );
    }
    let mut layers = Vec::new();
    // Every layer is alike: built once as a run (`TensorSpec::repeat`).
    b.repeat = l32(d.layers);
    for i in 0..d.layers.min(1) {
        let (l, p) = (Some(l32(i)), format!("model.decoder.layers.{i}"));
        for proj in ["k_proj", "v_proj", "q_proj", "out_proj"] {
            b.linear(
                &format!("{p}.self_attn.{proj}"),
                l,
                Component::Attention,
                d.hidden,
                d.hidden,
                bias,
            );
        }
        if affine {
            b.norm(
                &join(&p, "self_attn_layer_norm"),
                l,
                Component::Norm,
                d.hidden,
                true,
            );
        }
        b.plain_mlp(&join(&p, "fc1"), &join(&p, "fc2"), l, d.hidden, inner, bias);
        if affine {
            b.norm(
                &join(&p, "final_layer_norm"),
                l,
                Component::Norm,
                d.hidden,
                true,
            );
        }
        layers.push(plain_layer(&d, inner));
    }
    b.repeat = 1;
    if let Some(&first) = layers.first() {
        layers.resize(d.layers as usize, first);
    }
    if !tie {
        b.linear("lm_head", None, Component::LmHead, proj_dim, d.vocab, false);
    }
    let act = f.str("activation_function")?.unwrap_or("relu");
    let drop = dropouts(f, &["attention_dropout"], &["dropout"])?;
    Ok(spec(
        "opt",
        ModelKind::DecoderOnly,
        &d,
        max_pos,
        tie,
        act,
        NormKind::LayerNorm,
        drop,
        layers,
        b,
    ))
}

/// BLOOM (modeling_bloom.py): ALiBi (no position table), a LayerNorm after the embeddings, fused QKV.
pub(crate) fn bloom(f: Fields<'_>) -> Result<ModelSpec, ConfigError> {
    super::decoder::refuse_keys_outside(f, "bloom", &[])?;
    let d = dims(
        f,
        &["hidden_size", "n_embed"],
        &["num_hidden_layers", "n_layer"],
        &["num_attention_heads", "n_head"],
    )?;
    let inner = d.hidden.saturating_mul(4);
    let tie = f.bool("tie_word_embeddings")?.unwrap_or(true);
    let mut b = Builder::default();
    b.embedding(
        "transformer.word_embeddings",
        Component::Embedding,
        d.vocab,
        d.hidden,
    );
    b.norm(
        "transformer.word_embeddings_layernorm",
        None,
        Component::FinalNorm,
        d.hidden,
        true,
    );
    let mut layers = Vec::new();
    // Every layer is alike: built once as a run (`TensorSpec::repeat`).
    b.repeat = l32(d.layers);
    for i in 0..d.layers.min(1) {
        let (l, p) = (Some(l32(i)), format!("transformer.h.{i}"));
        b.norm(
            &join(&p, "input_layernorm"),
            l,
            Component::Norm,
            d.hidden,
            true,
        );
        b.linear(
            &join(&p, "self_attention.query_key_value"),
            l,
            Component::Attention,
            d.hidden,
            d.hidden.saturating_mul(3),
            true,
        );
        b.linear(
            &join(&p, "self_attention.dense"),
            l,
            Component::Attention,
            d.hidden,
            d.hidden,
            true,
        );
        b.norm(
            &join(&p, "post_attention_layernorm"),
            l,
            Component::Norm,
            d.hidden,
            true,
        );
        b.plain_mlp(
            &join(&p, "mlp.dense_h_to_4h"),
            &join(&p, "mlp.dense_4h_to_h"),
            l,
            d.hidden,
            inner,
            true,
        );
        layers.push(plain_layer(&d, inner));
    }
    b.repeat = 1;
    if let Some(&first) = layers.first() {
        layers.resize(d.layers as usize, first);
    }
    b.norm(
        "transformer.ln_f",
        None,
        Component::FinalNorm,
        d.hidden,
        true,
    );
    if !tie {
        b.linear("lm_head", None, Component::LmHead, d.hidden, d.vocab, false);
    }
    let drop = dropouts(f, &["attention_dropout"], &["hidden_dropout"])?;
    Ok(spec(
        "bloom",
        ModelKind::DecoderOnly,
        &d,
        0,
        tie,
        "gelu",
        NormKind::LayerNorm,
        drop,
        layers,
        b,
    ))
}

/// GPT-NeoX (modeling_gpt_neox.py): fused QKV with biases, parallel residual, untied `embed_out`.
pub(crate) fn gpt_neox(f: Fields<'_>) -> Result<ModelSpec, ConfigError> {
    super::decoder::refuse_keys_outside(f, "gpt_neox", &[])?;
    let d = dims(
        f,
        &["hidden_size"],
        &["num_hidden_layers"],
        &["num_attention_heads"],
    )?;
    let inner = f.require_any(&["intermediate_size"], "the MLP width")?;
    let max_pos = f.positive("max_position_embeddings")?.unwrap_or(0);
    let bias = f.bool("attention_bias")?.unwrap_or(true);
    let tie = f.bool("tie_word_embeddings")?.unwrap_or(false);
    let mut b = Builder::default();
    b.embedding("gpt_neox.embed_in", Component::Embedding, d.vocab, d.hidden);
    let mut layers = Vec::new();
    // Every layer is alike: built once as a run (`TensorSpec::repeat`).
    b.repeat = l32(d.layers);
    for i in 0..d.layers.min(1) {
        let (l, p) = (Some(l32(i)), format!("gpt_neox.layers.{i}"));
        b.norm(
            &join(&p, "input_layernorm"),
            l,
            Component::Norm,
            d.hidden,
            true,
        );
        b.norm(
            &join(&p, "post_attention_layernorm"),
            l,
            Component::Norm,
            d.hidden,
            true,
        );
        b.linear(
            &join(&p, "attention.query_key_value"),
            l,
            Component::Attention,
            d.hidden,
            d.hidden.saturating_mul(3),
            bias,
        );
        b.linear(
            &join(&p, "attention.dense"),
            l,
            Component::Attention,
            d.hidden,
            d.hidden,
            bias,
        );
        b.plain_mlp(
            &join(&p, "mlp.dense_h_to_4h"),
            &join(&p, "mlp.dense_4h_to_h"),
            l,
            d.hidden,
            inner,
            true,
        );
        layers.push(plain_layer(&d, inner));
    }
    b.repeat = 1;
    if let Some(&first) = layers.first() {
        layers.resize(d.layers as usize, first);
    }
    b.norm(
        "gpt_neox.final_layer_norm",
        None,
        Component::FinalNorm,
        d.hidden,
        true,
    );
    if !tie {
        b.linear(
            // GPTNeoXForCausalLM's head is `embed_out` in checkpoints, `lm_head` in transformers 5's
            // module tree (renamed on load; checkpoint::canonical maps it back).
            "lm_head",
            None,
            Component::LmHead,
            d.hidden,
            d.vocab,
            false,
        );
    }
    let act = f.str("hidden_act")?.unwrap_or("gelu");
    let drop = dropouts(f, &["attention_dropout"], &["hidden_dropout"])?;
    Ok(spec(
        "gpt_neox",
        ModelKind::DecoderOnly,
        &d,
        max_pos,
        tie,
        act,
        NormKind::LayerNorm,
        drop,
        layers,
        b,
    ))
}

/// BERT (modeling_bert.py), the bare `BertModel` with its pooler (no pre-training heads).
pub(crate) fn bert(f: Fields<'_>) -> Result<ModelSpec, ConfigError> {
    super::decoder::refuse_keys_outside(f, "bert", &[])?;
    let d = dims(
        f,
        &["hidden_size"],
        &["num_hidden_layers"],
        &["num_attention_heads"],
    )?;
    let inner = f.require_any(&["intermediate_size"], "the MLP width")?;
    let max_pos = f.positive("max_position_embeddings")?.unwrap_or(512);
    let type_vocab = f.positive("type_vocab_size")?.unwrap_or(2);
    let mut b = Builder::default();
    b.embedding(
        "embeddings.word_embeddings",
        Component::Embedding,
        d.vocab,
        d.hidden,
    );
    b.embedding(
        "embeddings.position_embeddings",
        Component::PositionEmbedding,
        max_pos,
        d.hidden,
    );
    b.embedding(
        "embeddings.token_type_embeddings",
        Component::PositionEmbedding,
        type_vocab,
        d.hidden,
    );
    b.norm(
        "embeddings.LayerNorm",
        None,
        Component::FinalNorm,
        d.hidden,
        true,
    );
    let mut layers = Vec::new();
    // Every layer is alike: built once as a run (`TensorSpec::repeat`).
    b.repeat = l32(d.layers);
    for i in 0..d.layers.min(1) {
        let (l, p) = (Some(l32(i)), format!("encoder.layer.{i}"));
        for proj in ["query", "key", "value"] {
            b.linear(
                &format!("{p}.attention.self.{proj}"),
                l,
                Component::Attention,
                d.hidden,
                d.hidden,
                true,
            );
        }
        b.linear(
            &join(&p, "attention.output.dense"),
            l,
            Component::Attention,
            d.hidden,
            d.hidden,
            true,
        );
        b.norm(
            &join(&p, "attention.output.LayerNorm"),
            l,
            Component::Norm,
            d.hidden,
            true,
        );
        b.plain_mlp(
            &join(&p, "intermediate.dense"),
            &join(&p, "output.dense"),
            l,
            d.hidden,
            inner,
            true,
        );
        b.norm(
            &join(&p, "output.LayerNorm"),
            l,
            Component::Norm,
            d.hidden,
            true,
        );
        layers.push(plain_layer(&d, inner));
    }
    b.repeat = 1;
    if let Some(&first) = layers.first() {
        layers.resize(d.layers as usize, first);
    }
    b.linear(
        "pooler.dense",
        None,
        Component::Head,
        d.hidden,
        d.hidden,
        true,
    );
    let act = f.str("hidden_act")?.unwrap_or("gelu");
    let drop = dropouts(
        f,
        &["attention_probs_dropout_prob"],
        &["hidden_dropout_prob"],
    )?;
    let mut spec = spec(
        "bert",
        ModelKind::EncoderOnly,
        &d,
        max_pos,
        false,
        act,
        NormKind::LayerNorm,
        drop,
        layers,
        b,
    );
    // `BertEmbeddings.__init__`: `position_ids` and `token_type_ids`, int64 `[1, max_positions]`
    // each, `persistent=False`.
    for name in ["embeddings.position_ids", "embeddings.token_type_ids"] {
        spec.runtime_buffers.push(RuntimeBuffer {
            name: name.into(),
            elements: max_pos,
            dtype: BufferDtype::Int64,
        });
    }
    Ok(spec)
}

/// T5 (modeling_t5.py): shared embeddings, relative position bias in the first block of each stack,
/// cross-attention in the decoder, RMS-style `T5LayerNorm` without bias.
pub(crate) fn t5(f: Fields<'_>) -> Result<ModelSpec, ConfigError> {
    super::decoder::refuse_keys_outside(f, "t5", &[])?;
    let hidden = f.require_any(&["d_model", "hidden_size"], "the width of the model")?;
    let enc_layers = f.layer_count(&["num_layers"], "the number of encoder layers")?;
    let dec_layers = f.check_layers(
        &["num_decoder_layers"],
        f.positive("num_decoder_layers")?.unwrap_or(enc_layers),
    )?;
    let heads = f.require_any(&["num_heads"], "the number of attention heads")?;
    let d_kv = f.require_any(&["d_kv"], "the per-head width")?;
    let d_ff = f.require_any(&["d_ff"], "the MLP width")?;
    let vocab = f.require_any(&["vocab_size"], "the vocabulary size (embedding rows)")?;
    let buckets = f.positive("relative_attention_num_buckets")?.unwrap_or(32);
    // `T5Config.__post_init__`: `feed_forward_proj` = "[gated-]act" ("gated-gelu" meaning
    // gelu_new); `is_gated_act` and `dense_act_fn` written in the config are set after it and win.
    let proj = f.str("feed_forward_proj")?.unwrap_or("relu");
    let gated = f
        .bool("is_gated_act")?
        .unwrap_or(proj.starts_with("gated-"));
    let act = match f.str("dense_act_fn")? {
        Some(a) => a,
        None if proj == "gated-gelu" => "gelu_new",
        None => proj.rsplit('-').next().unwrap_or(proj),
    };
    let tie = f.bool("tie_word_embeddings")?.unwrap_or(true);
    let inner = heads.saturating_mul(d_kv);
    let attn = AttentionSpec {
        num_heads: heads,
        num_kv_heads: heads,
        head_dim: d_kv,
        v_head_dim: d_kv,
        sliding_window: None,
        mla: None,
    };
    let ffn = FfnSpec::Dense {
        intermediate_size: d_ff,
        gated,
    };
    let mut b = Builder::default();
    b.embedding("shared", Component::Embedding, vocab, hidden);
    let stack = |b: &mut Builder, name: &str, n: u64, cross: bool| -> Vec<LayerSpec> {
        let mut out = Vec::new();
        for i in 0..n {
            let (l, p) = (Some(l32(i)), format!("{name}.block.{i}"));
            let attention = |b: &mut Builder, sub: &str, kind: &str| {
                for x in ["q", "k", "v"] {
                    b.linear(
                        &format!("{p}.layer.{sub}.{kind}.{x}"),
                        l,
                        Component::Attention,
                        hidden,
                        inner,
                        false,
                    );
                }
                b.linear(
                    &format!("{p}.layer.{sub}.{kind}.o"),
                    l,
                    Component::Attention,
                    inner,
                    hidden,
                    false,
                );
                b.norm(
                    &format!("{p}.layer.{sub}.layer_norm"),
                    l,
                    Component::Norm,
                    hidden,
                    false,
                );
            };
            attention(b, "0", "SelfAttention");
            if i == 0 {
                b.param(
                    &join(&p, "layer.0.SelfAttention.relative_attention_bias.weight"),
                    l,
                    Component::PositionEmbedding,
                    [buckets, heads],
                );
            }
            let ff = if cross {
                attention(b, "1", "EncDecAttention");
                "2"
            } else {
                "1"
            };
            if gated {
                b.linear(
                    &format!("{p}.layer.{ff}.DenseReluDense.wi_0"),
                    l,
                    Component::Mlp,
                    hidden,
                    d_ff,
                    false,
                );
                b.linear(
                    &format!("{p}.layer.{ff}.DenseReluDense.wi_1"),
                    l,
                    Component::Mlp,
                    hidden,
                    d_ff,
                    false,
                );
            } else {
                b.linear(
                    &format!("{p}.layer.{ff}.DenseReluDense.wi"),
                    l,
                    Component::Mlp,
                    hidden,
                    d_ff,
                    false,
                );
            }
            b.linear(
                &format!("{p}.layer.{ff}.DenseReluDense.wo"),
                l,
                Component::Mlp,
                d_ff,
                hidden,
                false,
            );
            b.norm(
                &format!("{p}.layer.{ff}.layer_norm"),
                l,
                Component::Norm,
                hidden,
                false,
            );
            out.push(LayerSpec {
                attention: Some(attn),
                cross_attention: cross.then_some(attn),
                ffn: Some(ffn),
                ssm: None,
            });
        }
        b.norm(
            &join(name, "final_layer_norm"),
            None,
            Component::FinalNorm,
            hidden,
            false,
        );
        out
    };
    let encoder_layers = stack(&mut b, "encoder", enc_layers, false);
    let layers = stack(&mut b, "decoder", dec_layers, true);
    if !tie {
        b.linear("lm_head", None, Component::LmHead, hidden, vocab, false);
    }
    let d = Dims {
        hidden,
        layers: dec_layers,
        heads,
        vocab,
    };
    // `dropout_rate` defaults to 0.1 (T5Config) and drives every dropout of the model
    let rate = f.f64("dropout_rate")?.map_or(0.1, |p| p.clamp(0.0, 1.0));
    let drop = (rate, rate);
    let mut s = spec(
        "t5",
        ModelKind::EncoderDecoder,
        &d,
        0,
        tie,
        act,
        NormKind::RmsNorm,
        drop,
        layers,
        b,
    );
    s.num_encoder_layers = enc_layers;
    s.encoder_layers = encoder_layers;
    Ok(s)
}

/// Mamba (modeling_mamba.py `MambaMixer`): in_proj to 2·d_inner, depthwise conv, x_proj to
/// dt_rank + 2·state, dt_proj, A_log, D, out_proj.
/// FalconMamba (modeling_falcon_mamba.py) has the same parameters: its extra RMS norms on the
/// time step and on B/C carry no weight.
pub(crate) fn mamba(f: Fields<'_>, model_type: &str) -> Result<ModelSpec, ConfigError> {
    super::decoder::refuse_keys_outside(f, model_type, &[])?;
    let hidden = f.require_any(&["hidden_size", "d_model"], "the width of the model")?;
    let n_layers = f.layer_count(&["num_hidden_layers", "n_layer"], "the number of layers")?;
    let vocab = f.require_any(&["vocab_size"], "the vocabulary size (embedding rows)")?;
    let state = f.positive("state_size")?.unwrap_or(16);
    let expand = f.positive("expand")?.unwrap_or(2);
    let d_inner = f
        .positive("intermediate_size")?
        .unwrap_or(expand.saturating_mul(hidden));
    let conv = f.positive("conv_kernel")?.unwrap_or(4);
    // MambaConfig: time_step_rank "auto" → ceil(hidden_size / 16).
    let dt_rank = match f.value("time_step_rank") {
        Some(serde_json::Value::String(s)) if s == "auto" => hidden.div_ceil(16),
        None => hidden.div_ceil(16),
        Some(_) => f.require_any(&["time_step_rank"], "the time-step rank")?,
    };
    let use_bias = f.bool("use_bias")?.unwrap_or(false);
    let conv_bias = f.bool("use_conv_bias")?.unwrap_or(true);
    let tie = f.bool("tie_word_embeddings")?.unwrap_or(true);
    let ssm = SsmSpec {
        d_inner,
        state_size: state,
        conv_kernel: conv,
        dt_rank,
        conv_dim: d_inner,
        chunk_size: 0,
        conv_state_grows_at_first_decode: false,
    };
    let mut b = Builder::default();
    b.embedding("backbone.embeddings", Component::Embedding, vocab, hidden);
    let mut layers = Vec::new();
    // Every layer is alike: built once as a run (`TensorSpec::repeat`).
    b.repeat = l32(n_layers);
    for i in 0..n_layers.min(1) {
        let (l, p) = (Some(l32(i)), format!("backbone.layers.{i}"));
        b.norm(&join(&p, "norm"), l, Component::Norm, hidden, false);
        mamba_mixer(
            &mut b,
            &join(&p, "mixer"),
            l,
            hidden,
            &ssm,
            conv_bias,
            use_bias,
        );
        layers.push(LayerSpec {
            attention: None,
            cross_attention: None,
            ffn: None,
            ssm: Some(ssm),
        });
    }
    b.repeat = 1;
    if let Some(&first) = layers.first() {
        layers.resize(n_layers as usize, first);
    }
    b.norm("backbone.norm_f", None, Component::FinalNorm, hidden, false);
    if !tie {
        b.linear("lm_head", None, Component::LmHead, hidden, vocab, false);
    }
    let d = Dims {
        hidden,
        layers: n_layers,
        heads: 1,
        vocab,
    };
    let act = f.str("hidden_act")?.unwrap_or("silu");
    Ok(spec(
        model_type,
        ModelKind::StateSpace,
        &d,
        0,
        tie,
        act,
        NormKind::RmsNorm,
        (0.0, 0.0),
        layers,
        b,
    ))
}

/// A mamba mixer (`MambaMixer`, also jamba's and falcon-mamba's): `in_proj` [2·d_inner],
/// the depthwise `conv1d` (biased with `conv_bias`), `x_proj` [dt_rank + 2·state], `dt_proj` with
/// bias, `A_log` [d_inner, state], `D`, and `out_proj`; `proj_bias` for in/out projections.
pub(super) fn mamba_mixer(
    b: &mut Builder,
    m: &str,
    l: Option<u32>,
    hidden: u64,
    ssm: &SsmSpec,
    conv_bias: bool,
    proj_bias: bool,
) {
    let (d, state) = (ssm.d_inner, ssm.state_size);
    let c = Component::Mixer;
    b.linear((m, "in_proj"), l, c, hidden, d.saturating_mul(2), proj_bias);
    b.param((m, "conv1d.weight"), l, c, [d, 1, ssm.conv_kernel]);
    if conv_bias {
        b.param((m, "conv1d.bias"), l, Component::Bias, [d]);
    }
    let x_out = ssm.dt_rank.saturating_add(state.saturating_mul(2));
    b.linear((m, "x_proj"), l, c, d, x_out, false);
    b.linear((m, "dt_proj"), l, c, ssm.dt_rank, d, true);
    b.param((m, "A_log"), l, c, [d, state]);
    b.param((m, "D"), l, c, [d]);
    b.linear((m, "out_proj"), l, c, d, hidden, proj_bias);
}
