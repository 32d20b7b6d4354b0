//! Attention + MLP decoders whose module names, biases and norms are their own: starcoder2,
//! gpt_bigcode, gptj, codegen, openai-gpt, mpt, persimmon, phi and stablelm.
//!
//! Each architecture is one [`Layout`] (the names of its modules in `transformers`'
//! `modeling_<type>.py`) plus the sizes and switches read from its config; [`build`] turns them into
//! the tensor inventory and the per-layer specs. `tests/arch_headers.rs` checks every name and shape
//! against the model `transformers` itself builds from the same published config.

use super::{dropouts, join, Builder};
use crate::error::ConfigError;
use crate::fields::Fields;
use crate::spec::{
    AttentionSpec, BufferDtype, Component, FfnSpec, LayerSpec, ModelSpec, NormKind, RuntimeBuffer,
};

/// How the query, key and value projections are stored.
#[derive(Clone, Copy)]
enum Qkv {
    /// Separate `q`, `k`, `v` linears (names relative to the attention module).
    Separate([&'static str; 3]),
    /// One fused projection `[q; k; v]`.
    Fused(&'static str),
}

/// Module names of one architecture, relative to the model root / each layer.
#[derive(Clone, Copy)]
struct Layout {
    embed: &'static str,
    positions: Option<&'static str>,
    layers: &'static str,
    attn: &'static str,
    qkv: Qkv,
    o: &'static str,
    mlp: &'static str,
    gate: Option<&'static str>,
    up: &'static str,
    down: &'static str,
    /// Per-layer norms, in module order.
    norms: &'static [&'static str],
    /// The final norm (`None`: post-norm models without one, openai-gpt).
    final_norm: Option<&'static str>,
    /// `Conv1D` projections (weights stored `[in, out]`), as openai-gpt has.
    conv1d: bool,
    /// Gate and up fused into the `up` projection (`[2 × inner, hidden]`, chatglm's
    /// `dense_h_to_4h`).
    fused_gate_up: bool,
}

/// Sizes and switches read from the config.
struct Sizes {
    hidden: u64,
    layers: u64,
    heads: u64,
    kv_heads: u64,
    head_dim: u64,
    vocab: u64,
    inner: u64,
    max_pos: u64,
    qkv_bias: bool,
    o_bias: bool,
    mlp_bias: bool,
    norm: NormKind,
    head_bias: bool,
    tie: bool,
    window: Option<u64>,
}

/// The llama-style names most architectures share (each layout states only what differs).
const LLAMA_NAMES: Layout = Layout {
    embed: "model.embed_tokens",
    positions: None,
    layers: "model.layers",
    attn: "self_attn",
    qkv: Qkv::Separate(["q_proj", "k_proj", "v_proj"]),
    o: "o_proj",
    mlp: "mlp",
    gate: Some("gate_proj"),
    up: "up_proj",
    down: "down_proj",
    norms: &["input_layernorm", "post_attention_layernorm"],
    final_norm: Some("model.norm"),
    conv1d: false,
    fused_gate_up: false,
};

/// GPT-2's names, which its descendants keep (`transformer.h.N.attn.c_attn`, `mlp.c_fc`, …).
const GPT_NAMES: Layout = Layout {
    embed: "transformer.wte",
    positions: None,
    layers: "transformer.h",
    attn: "attn",
    qkv: Qkv::Fused("c_attn"),
    o: "c_proj",
    mlp: "mlp",
    gate: None,
    up: "c_fc",
    down: "c_proj",
    norms: &["ln_1", "ln_2"],
    final_norm: Some("transformer.ln_f"),
    conv1d: false,
    fused_gate_up: false,
};

impl Sizes {
    /// Multi-head attention without biases, RMSNorm, an untied head; callers set the rest.
    fn new(hidden: u64, layers: u64, heads: u64, vocab: u64, head_dim: u64) -> Self {
        Sizes {
            hidden,
            layers,
            heads,
            kv_heads: heads,
            head_dim,
            vocab,
            inner: 0,
            max_pos: 0,
            qkv_bias: false,
            o_bias: false,
            mlp_bias: false,
            norm: NormKind::RmsNorm,
            head_bias: false,
            tie: false,
            window: None,
        }
    }
}

/// Extra per-layer tensors (q/k norms) added after the attention projections.
type Extra<'a> = &'a dyn Fn(&mut Builder, &str, Option<u32>);

fn l32(i: u64) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

fn proj(
    b: &mut Builder,
    lay: &Layout,
    path: &str,
    l: Option<u32>,
    c: Component,
    (i, o): (u64, u64),
    bias: bool,
) {
    if lay.conv1d {
        b.conv1d(path, l, c, i, o, bias);
    } else {
        b.linear(path, l, c, i, o, bias);
    }
}

#[allow(clippy::too_many_arguments)]
fn build(
    model_type: &str,
    lay: Layout,
    s: Sizes,
    gated: bool,
    act: &str,
    dropout: (f64, f64),
    extra: Extra<'_>,
    head_name: &str,
) -> ModelSpec {
    let mut b = Builder::default();
    b.embedding(lay.embed, Component::Embedding, s.vocab, s.hidden);
    if let Some(p) = lay.positions {
        b.embedding(p, Component::PositionEmbedding, s.max_pos, s.hidden);
    }
    let q_out = s.heads.saturating_mul(s.head_dim);
    let kv_out = s.kv_heads.saturating_mul(s.head_dim);
    let norm_bias = s.norm == NormKind::LayerNorm;
    // Every layer is alike: built once as a run (`TensorSpec::repeat`).
    b.repeat = l32(s.layers);
    if s.layers > 0 {
        let (l, p) = (Some(0), format!("{}.0", lay.layers));
        let a = format!("{p}.{}", lay.attn);
        let m = format!("{p}.{}", lay.mlp);
        for n in lay.norms {
            b.norm(&join(&p, n), l, Component::Norm, s.hidden, norm_bias);
        }
        match lay.qkv {
            Qkv::Separate(names) => {
                for (n, out) in names.iter().zip([q_out, kv_out, kv_out]) {
                    let path = join(&a, n);
                    proj(
                        &mut b,
                        &lay,
                        &path,
                        l,
                        Component::Attention,
                        (s.hidden, out),
                        s.qkv_bias,
                    );
                }
            }
            Qkv::Fused(n) => {
                let out = q_out.saturating_add(kv_out.saturating_mul(2));
                let path = join(&a, n);
                proj(
                    &mut b,
                    &lay,
                    &path,
                    l,
                    Component::Attention,
                    (s.hidden, out),
                    s.qkv_bias,
                );
            }
        }
        let o = format!("{a}.{}", lay.o);
        proj(
            &mut b,
            &lay,
            &o,
            l,
            Component::Attention,
            (q_out, s.hidden),
            s.o_bias,
        );
        extra(&mut b, &a, l);
        if let Some(g) = lay.gate {
            let path = join(&m, g);
            proj(
                &mut b,
                &lay,
                &path,
                l,
                Component::Mlp,
                (s.hidden, s.inner),
                s.mlp_bias,
            );
        }
        let up = format!("{m}.{}", lay.up);
        let up_out = if lay.fused_gate_up {
            s.inner.saturating_mul(2)
        } else {
            s.inner
        };
        proj(
            &mut b,
            &lay,
            &up,
            l,
            Component::Mlp,
            (s.hidden, up_out),
            s.mlp_bias,
        );
        let down = format!("{m}.{}", lay.down);
        proj(
            &mut b,
            &lay,
            &down,
            l,
            Component::Mlp,
            (s.inner, s.hidden),
            s.mlp_bias,
        );
    }
    b.repeat = 1;
    if let Some(n) = lay.final_norm {
        b.norm(n, None, Component::FinalNorm, s.hidden, norm_bias);
    }
    if !s.tie {
        b.linear(
            head_name,
            None,
            Component::LmHead,
            s.hidden,
            s.vocab,
            s.head_bias,
        );
    } else if s.head_bias {
        // A tied head keeps its own bias (phi's lm_head.bias when tied).
        b.param(&join(head_name, "bias"), None, Component::LmHead, [s.vocab]);
    }
    let layer = LayerSpec {
        attention: Some(AttentionSpec {
            num_heads: s.heads,
            num_kv_heads: s.kv_heads,
            head_dim: s.head_dim,
            v_head_dim: s.head_dim,
            sliding_window: s.window,
            mla: None,
        }),
        cross_attention: None,
        ffn: Some(FfnSpec::Dense {
            intermediate_size: s.inner,
            gated,
        }),
        ssm: None,
    };
    super::decoder_only_spec(
        model_type,
        (s.hidden, s.vocab, s.max_pos),
        s.tie,
        act,
        s.norm,
        dropout,
        vec![layer; s.layers as usize],
        b.tensors,
    )
}

/// Reads hidden size, layers, heads, KV heads and head_dim under the given key lists.
fn core_sizes(
    f: Fields<'_>,
    hidden_keys: &[&str],
    layer_keys: &[&str],
    head_keys: &[&str],
) -> Result<(u64, u64, u64, u64, u64), ConfigError> {
    let hidden = f.require_any(hidden_keys, "the width of the model")?;
    let layers = f.layer_count(layer_keys, "the number of layers")?;
    let heads = f.require_any(head_keys, "the number of attention heads")?;
    let vocab = f.require_any(&["vocab_size"], "the vocabulary size (embedding rows)")?;
    let head_dim = super::head_dim(f, &["head_dim"], hidden, heads)?;
    Ok((hidden, layers, heads, vocab, head_dim))
}

fn none(_: &mut Builder, _: &str, _: Option<u32>) {}

/// StarCoder2 (modeling_starcoder2.py): llama names with biases (`use_bias`, default true), a plain
/// `c_fc`/`c_proj` GELU MLP, LayerNorms with bias, a sliding window on every layer when set, a head
/// tied by default (configuration_starcoder2.py).
pub(crate) fn starcoder2(f: Fields<'_>) -> Result<ModelSpec, ConfigError> {
    super::decoder::refuse_keys_outside(f, "starcoder2", &[])?;
    let (hidden, layers, heads, vocab, head_dim) = core_sizes(
        f,
        &["hidden_size"],
        &["num_hidden_layers"],
        &["num_attention_heads"],
    )?;
    let bias = f.bool("use_bias")?.unwrap_or(true);
    let s = Sizes {
        kv_heads: super::kv_heads(f, heads)?,
        inner: f.require_any(&["intermediate_size"], "the MLP width")?,
        max_pos: f.positive("max_position_embeddings")?.unwrap_or(4096),
        qkv_bias: bias,
        o_bias: bias,
        mlp_bias: bias,
        norm: NormKind::LayerNorm,
        tie: f.bool("tie_word_embeddings")?.unwrap_or(true),
        window: f.positive("sliding_window")?,
        ..Sizes::new(hidden, layers, heads, vocab, head_dim)
    };
    let lay = Layout {
        gate: None,
        up: "c_fc",
        down: "c_proj",
        ..LLAMA_NAMES
    };
    let act = f.str("hidden_act")?.unwrap_or("gelu_pytorch_tanh");
    let drop = dropouts(f, &["attention_dropout"], &["residual_dropout"])?;
    Ok(build(
        "starcoder2",
        lay,
        s,
        false,
        act,
        drop,
        &none,
        "lm_head",
    ))
}

/// GPT-BigCode / SantaCoder / StarCoder (modeling_gpt_bigcode.py): gpt2 names with `nn.Linear`,
/// learned positions, multi-query attention (`multi_query`, default true: one K/V head fused into
/// `c_attn`), tied head.
pub(crate) fn gpt_bigcode(f: Fields<'_>) -> Result<ModelSpec, ConfigError> {
    super::decoder::refuse_keys_outside(f, "gpt_bigcode", &[])?;
    let (hidden, layers, heads, vocab, head_dim) = core_sizes(
        f,
        &["hidden_size", "n_embd"],
        &["num_hidden_layers", "n_layer"],
        &["num_attention_heads", "n_head"],
    )?;
    let multi_query = f.bool("multi_query")?.unwrap_or(true);
    let s = Sizes {
        kv_heads: if multi_query { 1 } else { heads },
        inner: f.positive("n_inner")?.unwrap_or(hidden.saturating_mul(4)),
        max_pos: f
            .positive_any(&["max_position_embeddings", "n_positions"])?
            .unwrap_or(1024),
        qkv_bias: true,
        o_bias: true,
        mlp_bias: true,
        norm: NormKind::LayerNorm,
        tie: f.bool("tie_word_embeddings")?.unwrap_or(true),
        ..Sizes::new(hidden, layers, heads, vocab, head_dim)
    };
    let lay = Layout {
        positions: Some("transformer.wpe"),
        ..GPT_NAMES
    };
    let act = f.str("activation_function")?.unwrap_or("gelu_pytorch_tanh");
    let drop = dropouts(f, &["attn_pdrop"], &["resid_pdrop"])?;
    let max_pos = s.max_pos;
    let mut spec = build("gpt_bigcode", lay, s, false, act, drop, &none, "lm_head");
    // `GPTBigCodeModel.__init__`: `self.bias = nn.Buffer(torch.tril(torch.ones((max_positions,
    // max_positions), dtype=torch.bool)), persistent=False)`: 4 MiB at 2,048 positions, 64 MiB at
    // StarCoder's 8,192.
    spec.runtime_buffers.push(RuntimeBuffer {
        name: "transformer.bias".into(),
        elements: max_pos.saturating_mul(max_pos),
        dtype: BufferDtype::Bool,
    });
    Ok(spec)
}

/// GPT-J (modeling_gptj.py) and CodeGen (modeling_codegen.py): one `ln_1` per block, attention and
/// MLP in parallel, q/k/v without bias (CodeGen fuses them into `qkv_proj`), `fc_in`/`fc_out` with
/// bias, an untied `lm_head` with bias.
pub(crate) fn gptj_like(f: Fields<'_>, model_type: &str) -> Result<ModelSpec, ConfigError> {
    super::decoder::refuse_keys_outside(f, model_type, &[])?;
    let (hidden, layers, heads, vocab, head_dim) = core_sizes(
        f,
        &["hidden_size", "n_embd"],
        &["num_hidden_layers", "n_layer"],
        &["num_attention_heads", "n_head"],
    )?;
    let s = Sizes {
        inner: f.positive("n_inner")?.unwrap_or(hidden.saturating_mul(4)),
        max_pos: f
            .positive_any(&["max_position_embeddings", "n_positions"])?
            .unwrap_or(2048),
        mlp_bias: true,
        norm: NormKind::LayerNorm,
        head_bias: true,
        tie: f.bool("tie_word_embeddings")?.unwrap_or(false),
        ..Sizes::new(hidden, layers, heads, vocab, head_dim)
    };
    let lay = Layout {
        qkv: if model_type == "codegen" {
            Qkv::Fused("qkv_proj")
        } else {
            Qkv::Separate(["q_proj", "k_proj", "v_proj"])
        },
        o: "out_proj",
        up: "fc_in",
        down: "fc_out",
        norms: &["ln_1"],
        ..GPT_NAMES
    };
    let act = f.str("activation_function")?.unwrap_or("gelu_new");
    let drop = dropouts(f, &["attn_pdrop"], &["resid_pdrop"])?;
    // `GPTJAttention` / `CodeGenAttention.__init__`: each layer keeps
    // `embed_positions = create_sinusoidal_positions(max_positions, rotary_dim or hidden)` (sin and
    // cos tables built with `.float()`: fp32 whatever the model's dtype), `persistent=False`.
    let table = s
        .max_pos
        .saturating_mul(f.positive("rotary_dim")?.unwrap_or(hidden));
    let mut spec = build(model_type, lay, s, false, act, drop, &none, "lm_head");
    spec.runtime_buffers.push(RuntimeBuffer {
        name: "transformer.h.*.attn.embed_positions".into(),
        elements: table.saturating_mul(layers),
        dtype: BufferDtype::Fp32,
    });
    Ok(spec)
}

/// OpenAI GPT (modeling_openai.py): post-norm blocks (`ln_1` after attention, `ln_2` after the MLP)
/// with `Conv1D` projections and biases, learned positions, no final norm, tied head.
pub(crate) fn openai_gpt(f: Fields<'_>) -> Result<ModelSpec, ConfigError> {
    super::decoder::refuse_keys_outside(f, "openai-gpt", &[])?;
    let (hidden, layers, heads, vocab, head_dim) = core_sizes(
        f,
        &["hidden_size", "n_embd"],
        &["num_hidden_layers", "n_layer"],
        &["num_attention_heads", "n_head"],
    )?;
    let s = Sizes {
        inner: hidden.saturating_mul(4),
        max_pos: f
            .positive_any(&["max_position_embeddings", "n_positions"])?
            .unwrap_or(512),
        qkv_bias: true,
        o_bias: true,
        mlp_bias: true,
        norm: NormKind::LayerNorm,
        tie: f.bool("tie_word_embeddings")?.unwrap_or(true),
        ..Sizes::new(hidden, layers, heads, vocab, head_dim)
    };
    let lay = Layout {
        embed: "transformer.tokens_embed",
        positions: Some("transformer.positions_embed"),
        final_norm: None,
        conv1d: true,
        ..GPT_NAMES
    };
    // modeling_openai.py `ACT_FNS`: "gelu" is `gelu_new` (the tanh form), "swish" is silu
    let act = match f.str("afn")?.unwrap_or("gelu") {
        "gelu" => "gelu_new",
        "swish" => "silu",
        other => other,
    };
    let drop = dropouts(f, &["attn_pdrop"], &["resid_pdrop"])?;
    let n_pos = s.max_pos;
    let mut spec = build("openai-gpt", lay, s, false, act, drop, &none, "lm_head");
    // modeling_openai.py: each `Attention` keeps `bias = torch.tril(torch.ones(n_positions,
    // n_positions))` (the default dtype, which is the model's while it is built) and
    // `OpenAIGPTModel` its `position_ids = torch.arange(n_positions)`, both `persistent=False`.
    spec.runtime_buffers.push(RuntimeBuffer {
        name: "transformer.h.*.attn.bias".into(),
        elements: n_pos.saturating_mul(n_pos).saturating_mul(layers),
        dtype: BufferDtype::Model,
    });
    spec.runtime_buffers.push(RuntimeBuffer {
        name: "transformer.position_ids".into(),
        elements: n_pos,
        dtype: BufferDtype::Int64,
    });
    // `OpenAIGPTLMHeadModel` takes no `past_key_values` and returns none.
    spec.no_kv_cache = true;
    Ok(spec)
}

/// MPT (modeling_mpt.py): `transformer.blocks`, fused `Wqkv`, no biases anywhere (the LayerNorms'
/// biases are removed for the Hub's weights), an MLP of `expansion_ratio` × d_model (4 in the
/// module), ALiBi (no position parameters), tied head.
pub(crate) fn mpt(f: Fields<'_>) -> Result<ModelSpec, ConfigError> {
    super::decoder::refuse_keys_outside(f, "mpt", &[])?;
    let (hidden, layers, heads, vocab, head_dim) = core_sizes(
        f,
        &["d_model", "hidden_size"],
        &["num_hidden_layers", "n_layers"],
        &["num_attention_heads", "n_heads"],
    )?;
    // MptMLP hard-codes 4 × hidden_size (modeling_mpt.py), whatever expansion_ratio says.
    if let Some(r) = f.f64("expansion_ratio")? {
        if r != 4.0 {
            return Err(f.invalid(
                "expansion_ratio",
                "4 (transformers' MptMLP always builds a 4 × d_model MLP)",
                &serde_json::json!(r),
            ));
        }
    }
    let s = Sizes {
        inner: hidden.saturating_mul(4),
        max_pos: f.positive("max_seq_len")?.unwrap_or(2048),
        norm: NormKind::LayerNormNoBias,
        tie: f.bool("tie_word_embeddings")?.unwrap_or(true),
        ..Sizes::new(hidden, layers, heads, vocab, head_dim)
    };
    let lay = Layout {
        layers: "transformer.blocks",
        qkv: Qkv::Fused("Wqkv"),
        o: "out_proj",
        mlp: "ffn",
        up: "up_proj",
        down: "down_proj",
        norms: &["norm_1", "norm_2"],
        final_norm: Some("transformer.norm_f"),
        ..GPT_NAMES
    };
    let attn_drop = f
        .object("attn_config")?
        .and_then(|a| a.get("attn_pdrop"))
        .and_then(serde_json::Value::as_f64)
        .unwrap_or(0.0);
    let resid = f.f64("resid_pdrop")?.unwrap_or(0.0);
    Ok(build(
        "mpt",
        lay,
        s,
        false,
        "gelu",
        (attn_drop, resid),
        &none,
        "lm_head",
    ))
}

/// Persimmon (modeling_persimmon.py): fused `query_key_value` and `dense` with bias, LayerNorm q/k
/// norms per head (`qk_layernorm`, default true), a plain squared-ReLU MLP with bias, untied head.
pub(crate) fn persimmon(f: Fields<'_>) -> Result<ModelSpec, ConfigError> {
    super::decoder::refuse_keys_outside(f, "persimmon", &[])?;
    let (hidden, layers, heads, vocab, head_dim) = core_sizes(
        f,
        &["hidden_size"],
        &["num_hidden_layers"],
        &["num_attention_heads"],
    )?;
    let s = Sizes {
        inner: f.require_any(&["intermediate_size"], "the MLP width")?,
        max_pos: f.positive("max_position_embeddings")?.unwrap_or(16384),
        qkv_bias: true,
        o_bias: true,
        mlp_bias: true,
        norm: NormKind::LayerNorm,
        tie: f.bool("tie_word_embeddings")?.unwrap_or(false),
        ..Sizes::new(hidden, layers, heads, vocab, head_dim)
    };
    let lay = Layout {
        qkv: Qkv::Fused("query_key_value"),
        o: "dense",
        gate: None,
        up: "dense_h_to_4h",
        down: "dense_4h_to_h",
        final_norm: Some("model.final_layernorm"),
        ..LLAMA_NAMES
    };
    let qk = f.bool("qk_layernorm")?.unwrap_or(true);
    let extra = move |b: &mut Builder, a: &str, l: Option<u32>| {
        if qk {
            b.norm(&join(a, "q_layernorm"), l, Component::Norm, head_dim, true);
            b.norm(&join(a, "k_layernorm"), l, Component::Norm, head_dim, true);
        }
    };
    let act = f.str("hidden_act")?.unwrap_or("relu2");
    let drop = dropouts(f, &["attention_dropout"], &["hidden_dropout"])?;
    Ok(build(
        "persimmon",
        lay,
        s,
        false,
        act,
        drop,
        &extra,
        "lm_head",
    ))
}

/// Phi-1/1.5/2 as `transformers` writes them (modeling_phi.py): one `input_layernorm`, attention
/// and MLP in parallel, q/k/v/dense with bias, `fc1`/`fc2` with bias, `final_layernorm`, an untied
/// `lm_head` with bias; optional LayerNorm q/k norms per head (`qk_layernorm`).
pub(crate) fn phi(f: Fields<'_>) -> Result<ModelSpec, ConfigError> {
    super::decoder::refuse_keys_outside(f, "phi", &[])?;
    let (hidden, layers, heads, vocab, head_dim) = core_sizes(
        f,
        &["hidden_size"],
        &["num_hidden_layers"],
        &["num_attention_heads"],
    )?;
    let s = Sizes {
        kv_heads: super::kv_heads(f, heads)?,
        inner: f.require_any(&["intermediate_size"], "the MLP width")?,
        max_pos: f.positive("max_position_embeddings")?.unwrap_or(2048),
        qkv_bias: true,
        o_bias: true,
        mlp_bias: true,
        norm: NormKind::LayerNorm,
        head_bias: true,
        tie: f.bool("tie_word_embeddings")?.unwrap_or(false),
        ..Sizes::new(hidden, layers, heads, vocab, head_dim)
    };
    let lay = Layout {
        o: "dense",
        gate: None,
        up: "fc1",
        down: "fc2",
        norms: &["input_layernorm"],
        final_norm: Some("model.final_layernorm"),
        ..LLAMA_NAMES
    };
    let qk = f.bool("qk_layernorm")?.unwrap_or(false);
    let extra = move |b: &mut Builder, a: &str, l: Option<u32>| {
        if qk {
            b.norm(&join(a, "q_layernorm"), l, Component::Norm, head_dim, true);
            b.norm(&join(a, "k_layernorm"), l, Component::Norm, head_dim, true);
        }
    };
    let act = f.str("hidden_act")?.unwrap_or("gelu_new");
    let drop = dropouts(f, &["attention_dropout"], &["resid_pdrop"])?;
    Ok(build("phi", lay, s, false, act, drop, &extra, "lm_head"))
}

/// StableLM (modeling_stablelm.py): llama names and a gated MLP, LayerNorms with bias, q/k/v bias
/// from `use_qkv_bias`, optional per-head LayerNorm q/k norms (`qk_layernorm`: one weight-only
/// LayerNorm module per head), no `post_attention_layernorm` with `use_parallel_residual`.
pub(crate) fn stablelm(f: Fields<'_>) -> Result<ModelSpec, ConfigError> {
    super::decoder::refuse_keys_outside(f, "stablelm", &[])?;
    let (hidden, layers, heads, vocab, head_dim) = core_sizes(
        f,
        &["hidden_size"],
        &["num_hidden_layers"],
        &["num_attention_heads"],
    )?;
    let kv = super::kv_heads(f, heads)?;
    let parallel = f.bool("use_parallel_residual")?.unwrap_or(false);
    let s = Sizes {
        kv_heads: kv,
        inner: f.require_any(&["intermediate_size"], "the MLP width")?,
        max_pos: f.positive("max_position_embeddings")?.unwrap_or(4096),
        qkv_bias: f.bool("use_qkv_bias")?.unwrap_or(false),
        norm: NormKind::LayerNorm,
        tie: f.bool("tie_word_embeddings")?.unwrap_or(false),
        ..Sizes::new(hidden, layers, heads, vocab, head_dim)
    };
    let lay = Layout {
        norms: if parallel {
            &["input_layernorm"]
        } else {
            &["input_layernorm", "post_attention_layernorm"]
        },
        ..LLAMA_NAMES
    };
    let qk = f.bool("qk_layernorm")?.unwrap_or(false);
    // one LayerNorm module per head: bounded like a layer count
    if qk {
        f.check_layers(&["num_attention_heads"], heads)?;
    }
    let extra = move |b: &mut Builder, a: &str, l: Option<u32>| {
        if qk {
            for (which, n) in [("q_layernorm", heads), ("k_layernorm", kv)] {
                for h in 0..n {
                    let path = format!("{a}.{which}.norms.{h}");
                    b.norm(&path, l, Component::Norm, head_dim, false);
                }
            }
        }
    };
    let act = f.str("hidden_act")?.unwrap_or("silu");
    let drop = dropouts(f, &["attention_dropout"], &["hidden_dropout"])?;
    Ok(build(
        "stablelm", lay, s, true, act, drop, &extra, "lm_head",
    ))
}

/// DBRX (modeling_dbrx.py): `transformer.blocks.N.norm_attn_norm` holds two bias-free LayerNorms
/// and the fused `Wqkv` (GQA with `attn_config.kv_n_heads`, default 1); `ffn.router.layer` routes to
/// `ffn_config.moe_num_experts` GLU experts stored as three `[experts × ffn_hidden_size, d_model]`
/// matrices `w1`, `v1`, `w2`; untied head.
pub(crate) fn dbrx(f: Fields<'_>) -> Result<ModelSpec, ConfigError> {
    super::decoder::refuse_keys_outside(f, "dbrx", &[])?;
    let (hidden, layers, heads, vocab, head_dim) = core_sizes(
        f,
        &["d_model", "hidden_size"],
        &["num_hidden_layers", "n_layers"],
        &["num_attention_heads", "n_heads"],
    )?;
    let attn = f.object("attn_config")?;
    let ffn = f.object("ffn_config")?;
    let attn_f = attn.map(|m| Fields::new(m, "attn_config."));
    let ffn_f = ffn.map(|m| Fields::new(m, "ffn_config."));
    let kv = match attn_f {
        Some(a) => a.positive("kv_n_heads")?.unwrap_or(1),
        None => 1,
    };
    if !heads.is_multiple_of(kv) {
        return Err(ConfigError::Inconsistent(format!(
            "n_heads ({heads}) is not a multiple of attn_config.kv_n_heads ({kv})"
        )));
    }
    let (inner, experts, top_k) = match ffn_f {
        Some(x) => (
            x.positive("ffn_hidden_size")?.unwrap_or(3584),
            x.positive("moe_num_experts")?.unwrap_or(4),
            x.positive("moe_top_k")?.unwrap_or(1),
        ),
        None => (3584, 4, 1),
    };
    if top_k > experts {
        return Err(ConfigError::Inconsistent(format!(
            "ffn_config.moe_top_k ({top_k}) exceeds ffn_config.moe_num_experts ({experts})"
        )));
    }
    let tie = f.bool("tie_word_embeddings")?.unwrap_or(false);
    let mut b = Builder::default();
    b.embedding("transformer.wte", Component::Embedding, vocab, hidden);
    b.repeat = l32(layers);
    if layers > 0 {
        let l = Some(0);
        let p = "transformer.blocks.0";
        let n = join(p, "norm_attn_norm");
        b.norm(&join(&n, "norm_1"), l, Component::Norm, hidden, false);
        let qkv_out = hidden.saturating_add(kv.saturating_mul(head_dim).saturating_mul(2));
        b.linear(
            &join(&n, "attn.Wqkv"),
            l,
            Component::Attention,
            hidden,
            qkv_out,
            false,
        );
        b.linear(
            &join(&n, "attn.out_proj"),
            l,
            Component::Attention,
            hidden,
            hidden,
            false,
        );
        b.norm(&join(&n, "norm_2"), l, Component::Norm, hidden, false);
        b.linear(
            &join(p, "ffn.router.layer"),
            l,
            Component::Router,
            hidden,
            experts,
            false,
        );
        let rows = experts.saturating_mul(inner);
        for w in ["w1", "v1", "w2"] {
            let name = format!("{p}.ffn.experts.mlp.{w}");
            b.param(&name, l, Component::Experts, [rows, hidden]);
        }
    }
    b.repeat = 1;
    b.norm(
        "transformer.norm_f",
        None,
        Component::FinalNorm,
        hidden,
        false,
    );
    if !tie {
        b.linear("lm_head", None, Component::LmHead, hidden, vocab, false);
    }
    let layer = LayerSpec {
        attention: Some(AttentionSpec {
            num_heads: heads,
            num_kv_heads: kv,
            head_dim,
            v_head_dim: head_dim,
            sliding_window: None,
            mla: None,
        }),
        cross_attention: None,
        ffn: Some(FfnSpec::Moe {
            num_experts: experts,
            experts_per_token: top_k,
            expert_intermediate_size: inner,
            shared_intermediate_size: 0,
            gated: true,
        }),
        ssm: None,
    };
    let attn_drop = match attn_f {
        Some(a) => a.f64("attn_pdrop")?.unwrap_or(0.0),
        None => 0.0,
    };
    let resid = f.f64("resid_pdrop")?.unwrap_or(0.0);
    let max_pos = f.positive("max_seq_len")?.unwrap_or(2048);
    Ok(super::decoder_only_spec(
        "dbrx",
        (hidden, vocab, max_pos),
        tie,
        "silu",
        NormKind::LayerNormNoBias,
        (attn_drop, resid),
        vec![layer; layers as usize],
        b.tensors,
    ))
}

/// InternLM2 (the repository's remote code, modeling_internlm2.py): `model.tok_embeddings`, per
/// layer `attention.wqkv` (q, k and v of each KV group fused, `[(heads + 2 × kv) × head_dim,
/// hidden]`) and `attention.wo` (biased when `bias`), `feed_forward.w1`/`w3`/`w2` (gated),
/// `attention_norm`, `ffn_norm` (RMSNorm), `model.norm`, and an untied `output` head.
pub(crate) fn internlm2(f: Fields<'_>) -> Result<ModelSpec, ConfigError> {
    super::decoder::refuse_keys_outside(f, "internlm2", &[])?;
    let (hidden, layers, heads, vocab, head_dim) = core_sizes(
        f,
        &["hidden_size"],
        &["num_hidden_layers"],
        &["num_attention_heads"],
    )?;
    let bias = f.bool("bias")?.unwrap_or(true);
    let s = Sizes {
        kv_heads: super::kv_heads(f, heads)?,
        inner: f.require_any(&["intermediate_size"], "the MLP width")?,
        max_pos: f.positive("max_position_embeddings")?.unwrap_or(2048),
        qkv_bias: bias,
        o_bias: bias,
        tie: f.bool("tie_word_embeddings")?.unwrap_or(false),
        ..Sizes::new(hidden, layers, heads, vocab, head_dim)
    };
    let lay = Layout {
        embed: "model.tok_embeddings",
        attn: "attention",
        qkv: Qkv::Fused("wqkv"),
        o: "wo",
        mlp: "feed_forward",
        gate: Some("w1"),
        up: "w3",
        down: "w2",
        norms: &["attention_norm", "ffn_norm"],
        ..LLAMA_NAMES
    };
    let act = f.str("hidden_act")?.unwrap_or("silu");
    Ok(build(
        "internlm2",
        lay,
        s,
        true,
        act,
        (0.0, 0.0),
        &none,
        "output",
    ))
}

/// ChatGLM2/3 and GLM-4 before transformers' `glm` (the repository's remote code,
/// modeling_chatglm.py): `transformer.embedding.word_embeddings` (`padded_vocab_size` rows), per
/// layer `self_attention.query_key_value` (multi-query groups of `kv_channels`; biased when
/// `add_qkv_bias` or `add_bias_linear`), `self_attention.dense`, `mlp.dense_h_to_4h` (gate and up
/// fused, 2 × `ffn_hidden_size`) and `mlp.dense_4h_to_h` (biased when `add_bias_linear`),
/// `input_layernorm` / `post_attention_layernorm` (RMSNorm when `rmsnorm`), the encoder's
/// `final_layernorm` (`post_layer_norm`), an untied `transformer.output_layer`, and the
/// checkpoint's persistent `rotary_pos_emb.inv_freq` buffer (`kv_channels / 4` values: rotary
/// over half of each head).
pub(crate) fn chatglm(f: Fields<'_>) -> Result<ModelSpec, ConfigError> {
    super::decoder::refuse_keys_outside(f, "chatglm", &[])?;
    let hidden = f.require_any(&["hidden_size"], "the width of the model")?;
    let layers = f.layer_count(&["num_layers", "num_hidden_layers"], "the number of layers")?;
    let heads = f.require_any(&["num_attention_heads"], "the number of attention heads")?;
    let vocab = f.require_any(
        &["padded_vocab_size", "vocab_size"],
        "the vocabulary size (embedding rows)",
    )?;
    let head_dim = f.positive("kv_channels")?.unwrap_or(hidden / heads.max(1));
    let groups = if f.bool("multi_query_attention")?.unwrap_or(false) {
        f.positive("multi_query_group_num")?.unwrap_or(1)
    } else {
        heads
    };
    if !heads.is_multiple_of(groups) {
        return Err(ConfigError::Inconsistent(format!(
            "num_attention_heads ({heads}) is not a multiple of multi_query_group_num ({groups})"
        )));
    }
    let linear_bias = f.bool("add_bias_linear")?.unwrap_or(false);
    let rms = f.bool("rmsnorm")?.unwrap_or(true);
    let s = Sizes {
        kv_heads: groups,
        inner: f.require_any(&["ffn_hidden_size"], "the MLP width")?,
        max_pos: f.positive("seq_length")?.unwrap_or(2048),
        qkv_bias: linear_bias || f.bool("add_qkv_bias")?.unwrap_or(false),
        o_bias: linear_bias,
        mlp_bias: linear_bias,
        norm: if rms {
            NormKind::RmsNorm
        } else {
            NormKind::LayerNorm
        },
        tie: f.bool("tie_word_embeddings")?.unwrap_or(false),
        ..Sizes::new(hidden, layers, heads, vocab, head_dim)
    };
    let lay = Layout {
        embed: "transformer.embedding.word_embeddings",
        layers: "transformer.encoder.layers",
        attn: "self_attention",
        qkv: Qkv::Fused("query_key_value"),
        o: "dense",
        gate: None,
        up: "dense_h_to_4h",
        down: "dense_4h_to_h",
        final_norm: if f.bool("post_layer_norm")?.unwrap_or(true) {
            Some("transformer.encoder.final_layernorm")
        } else {
            None
        },
        fused_gate_up: true,
        ..LLAMA_NAMES
    };
    let drop = dropouts(f, &["attention_dropout"], &["hidden_dropout"])?;
    let mut spec = build(
        "chatglm",
        lay,
        s,
        true,
        "silu",
        drop,
        &none,
        "transformer.output_layer",
    );
    let mut b = Builder::default();
    b.buffer(
        "transformer.rotary_pos_emb.inv_freq",
        None,
        Component::Embedding,
        [head_dim / 4],
    );
    spec.tensors.extend(b.tensors);
    Ok(spec)
}

/// Baichuan / Baichuan2 (the repository's remote code, modeling_baichuan.py): llama names with
/// q, k and v fused into `self_attn.W_pack` `[3 × hidden, hidden]` (multi-head, no bias); the 7B
/// models use RoPE and the 13B ALiBi, with the same tensors; Baichuan2's `NormHead` head keeps one
/// `lm_head.weight`.
pub(crate) fn baichuan(f: Fields<'_>) -> Result<ModelSpec, ConfigError> {
    super::decoder::refuse_keys_outside(f, "baichuan", &[])?;
    let (hidden, layers, heads, vocab, head_dim) = core_sizes(
        f,
        &["hidden_size"],
        &["num_hidden_layers"],
        &["num_attention_heads"],
    )?;
    let s = Sizes {
        inner: f.require_any(&["intermediate_size"], "the MLP width")?,
        max_pos: f
            .positive_any(&["max_position_embeddings", "model_max_length"])?
            .unwrap_or(4096),
        tie: f.bool("tie_word_embeddings")?.unwrap_or(false),
        ..Sizes::new(hidden, layers, heads, vocab, head_dim)
    };
    let lay = Layout {
        qkv: Qkv::Fused("W_pack"),
        ..LLAMA_NAMES
    };
    let act = f.str("hidden_act")?.unwrap_or("silu");
    Ok(build(
        "baichuan",
        lay,
        s,
        true,
        act,
        (0.0, 0.0),
        &none,
        "lm_head",
    ))
}

/// Phi-1.5 / Phi-2 as first published (`model_type` "phi-msft", the repository's remote code
/// modeling_phi.py of December 2023): `transformer.embd.wte`, parallel blocks `transformer.h.N`
/// with one biased LayerNorm `ln`, `mixer.Wqkv` and `mixer.out_proj` with bias, `mlp.fc1`/`fc2`
/// with bias, and the head `lm_head.ln` (the final LayerNorm) + `lm_head.linear` (biased).
pub(crate) fn phi_msft(f: Fields<'_>) -> Result<ModelSpec, ConfigError> {
    super::decoder::refuse_keys_outside(f, "phi-msft", &[])?;
    let (hidden, layers, heads, vocab, head_dim) = core_sizes(
        f,
        &["hidden_size", "n_embd"],
        &["num_hidden_layers", "n_layer"],
        &["num_attention_heads", "n_head"],
    )?;
    let kv = f.positive("n_head_kv")?.unwrap_or(heads);
    if !heads.is_multiple_of(kv) {
        return Err(ConfigError::Inconsistent(format!(
            "n_head ({heads}) is not a multiple of n_head_kv ({kv})"
        )));
    }
    let s = Sizes {
        kv_heads: kv,
        inner: f.positive("n_inner")?.unwrap_or(hidden.saturating_mul(4)),
        max_pos: f.positive("n_positions")?.unwrap_or(2048),
        qkv_bias: true,
        o_bias: true,
        mlp_bias: true,
        norm: NormKind::LayerNorm,
        head_bias: true,
        ..Sizes::new(hidden, layers, heads, vocab, head_dim)
    };
    let lay = Layout {
        embed: "transformer.embd.wte",
        attn: "mixer",
        qkv: Qkv::Fused("Wqkv"),
        o: "out_proj",
        up: "fc1",
        down: "fc2",
        norms: &["ln"],
        final_norm: Some("lm_head.ln"),
        ..GPT_NAMES
    };
    let act = f.str("activation_function")?.unwrap_or("gelu_new");
    let drop = dropouts(f, &["attn_pdrop"], &["resid_pdrop"])?;
    Ok(build(
        "phi-msft",
        lay,
        s,
        false,
        act,
        drop,
        &none,
        "lm_head.linear",
    ))
}
