//! Multimodal wrappers: the language model under `text_config`, plus the vision tower and projector.
//! llava (modeling_llava.py) wraps a CLIP vision encoder (modeling_clip.py `CLIPVisionModel`).

use super::{decoder::decoder, join, Builder};
use crate::error::ConfigError;
use crate::fields::Fields;
use crate::spec::{Component, ModelSpec, VisionSpec};

/// Resolves `llava` (text model + CLIP tower + 2-layer projector) or another wrapper's text model.
pub(crate) fn multimodal(f: Fields<'_>, model_type: &str) -> Result<ModelSpec, ConfigError> {
    let Some(text) = f.object("text_config")? else {
        return Err(ConfigError::MissingField {
            field: "text_config".into(),
            why: format!("a {model_type} config describes its language model there"),
        });
    };
    let tf = Fields::new(text, "text_config.");
    let default_text = if model_type == "llava" {
        "llama"
    } else {
        "gemma3_text"
    };
    let text_type = tf.str("model_type")?.unwrap_or(default_text).to_string();
    let mut spec = decoder(tf, &text_type, true)?;
    for t in &mut spec.tensors {
        if let Some(rest) = t.name.strip_prefix("model.") {
            t.name = format!("model.language_model.{rest}");
        }
    }
    // The wrapper's own tie_word_embeddings decides the head (llava: false).
    if let Some(tie) = f.bool("tie_word_embeddings")? {
        if tie && !spec.tie_word_embeddings {
            spec.tensors.retain(|t| t.component != Component::LmHead);
        }
        spec.tie_word_embeddings = tie;
    }
    spec.model_type = model_type.to_string();
    spec.text_model_type = text_type;
    let vision = f.object("vision_config")?;
    match (model_type, vision) {
        ("llava", Some(v)) => clip_vision(&mut spec, Fields::new(v, "vision_config."), f)?,
        ("gemma3", Some(v)) => gemma3_vision(&mut spec, Fields::new(v, "vision_config."))?,
        (_, Some(v)) => {
            let kind = v
                .get("model_type")
                .and_then(|t| t.as_str())
                .unwrap_or("unknown");
            spec.warnings.push(format!(
                "vision tower ({kind}) is not counted: only the language model is modelled"
            ));
        }
        _ => {}
    }
    Ok(spec)
}

/// CLIPVisionModel: class embedding, patch conv (no bias), position table of patches + 1, pre-norm,
/// `num_hidden_layers` encoder layers (q/k/v/out with bias, two LayerNorms, fc1/fc2), post-norm; then
/// llava's projector `linear_1` (vision → text width) and `linear_2` (text → text), both with bias.
fn clip_vision(
    spec: &mut ModelSpec,
    v: Fields<'_>,
    wrapper: Fields<'_>,
) -> Result<(), ConfigError> {
    let hidden = v.positive("hidden_size")?.unwrap_or(768);
    let layers = v.check_layers(
        &["num_hidden_layers"],
        v.positive("num_hidden_layers")?.unwrap_or(12),
    )?;
    let heads = v.positive("num_attention_heads")?.unwrap_or(12);
    let inner = v.positive("intermediate_size")?.unwrap_or(3072);
    let image = v.positive("image_size")?.unwrap_or(224);
    let patch = v.positive("patch_size")?.unwrap_or(32);
    let channels = v.positive("num_channels")?.unwrap_or(3);
    let patches_per_side = image / patch;
    let positions = patches_per_side
        .saturating_mul(patches_per_side)
        .saturating_add(1);
    let mut b = Builder::default();
    // transformers 5.x builds the CLIP vision transformer directly as `vision_tower`.
    let p = "model.vision_tower";
    b.param(
        &join(p, "embeddings.class_embedding"),
        None,
        Component::Vision,
        [hidden],
    );
    b.param(
        &join(p, "embeddings.patch_embedding.weight"),
        None,
        Component::Vision,
        [hidden, channels, patch, patch],
    );
    b.param(
        &join(p, "embeddings.position_embedding.weight"),
        None,
        Component::Vision,
        [positions, hidden],
    );
    b.norm(
        &join(p, "pre_layrnorm"),
        None,
        Component::Vision,
        hidden,
        true,
    );
    vit_layers(&mut b, p, hidden, inner, layers);
    b.norm(
        &join(p, "post_layernorm"),
        None,
        Component::Vision,
        hidden,
        true,
    );
    // Biases of the vision tower stay in the vision row.
    for t in &mut b.tensors {
        t.component = Component::Vision;
    }
    let proj_bias = wrapper.bool("multimodal_projector_bias")?.unwrap_or(true);
    let feature_layers = match wrapper.value("vision_feature_layer") {
        Some(serde_json::Value::Array(a)) => a.len() as u64,
        _ => 1,
    };
    let text_hidden = spec.hidden_size;
    b.linear(
        "model.multi_modal_projector.linear_1",
        None,
        Component::Projector,
        hidden.saturating_mul(feature_layers),
        text_hidden,
        proj_bias,
    );
    b.linear(
        "model.multi_modal_projector.linear_2",
        None,
        Component::Projector,
        text_hidden,
        text_hidden,
        proj_bias,
    );
    for t in b
        .tensors
        .iter_mut()
        .filter(|t| t.name.contains("multi_modal_projector"))
    {
        t.component = Component::Projector;
    }
    spec.tensors.extend(b.tensors);
    spec.vision = Some(VisionSpec {
        hidden_size: hidden,
        num_layers: layers,
        num_heads: heads,
        intermediate_size: inner,
        image_size: image,
        patch_size: patch,
        cross_attention_tokens: 0,
    });
    Ok(())
}

/// Pre-norm ViT encoder layers as CLIP and SigLIP build them (`encoder.layers.N`): `layer_norm1`,
/// q/k/v/out projections with bias, `layer_norm2`, `mlp.fc1`/`fc2` with bias. Tower tensors carry
/// no decoder layer (`layer: None`), so no per-layer rule of the text model touches them.
fn vit_layers(b: &mut Builder, p: &str, hidden: u64, inner: u64, layers: u64) {
    for i in 0..layers {
        let l = format!("{p}.encoder.layers.{i}");
        b.norm(
            &join(&l, "layer_norm1"),
            None,
            Component::Vision,
            hidden,
            true,
        );
        for proj in ["k_proj", "v_proj", "q_proj", "out_proj"] {
            let path = format!("{l}.self_attn.{proj}");
            b.linear(&path, None, Component::Vision, hidden, hidden, true);
        }
        b.norm(
            &join(&l, "layer_norm2"),
            None,
            Component::Vision,
            hidden,
            true,
        );
        b.linear(
            &join(&l, "mlp.fc1"),
            None,
            Component::Vision,
            hidden,
            inner,
            true,
        );
        b.linear(
            &join(&l, "mlp.fc2"),
            None,
            Component::Vision,
            inner,
            hidden,
            true,
        );
    }
}

/// Gemma 3's SigLIP tower (modeling_siglip.py `SiglipVisionTransformer` without its pooling head,
/// `vision_use_head: false`): patch conv with bias, one position row per patch (no class token),
/// the encoder layers, `post_layernorm`; then `Gemma3MultiModalProjector`'s
/// `mm_input_projection_weight [vision, text]` and `mm_soft_emb_norm` (RMSNorm over the vision
/// width). SiglipVisionConfig defaults for absent keys.
fn gemma3_vision(spec: &mut ModelSpec, v: Fields<'_>) -> Result<(), ConfigError> {
    let hidden = v.positive("hidden_size")?.unwrap_or(768);
    let layers = v.check_layers(
        &["num_hidden_layers"],
        v.positive("num_hidden_layers")?.unwrap_or(12),
    )?;
    let heads = v.positive("num_attention_heads")?.unwrap_or(12);
    let inner = v.positive("intermediate_size")?.unwrap_or(3072);
    let image = v.positive("image_size")?.unwrap_or(224);
    let patch = v.positive("patch_size")?.unwrap_or(16);
    let channels = v.positive("num_channels")?.unwrap_or(3);
    if v.bool("vision_use_head")?.unwrap_or(true) {
        return Err(v.invalid(
            "vision_use_head",
            "false (Gemma 3's SigLIP tower has no pooling head)",
            &serde_json::Value::Bool(true),
        ));
    }
    let side = image / patch;
    let mut b = Builder::default();
    let p = "model.vision_tower";
    b.param(
        &join(p, "embeddings.patch_embedding.weight"),
        None,
        Component::Vision,
        [hidden, channels, patch, patch],
    );
    b.param(
        &join(p, "embeddings.patch_embedding.bias"),
        None,
        Component::Vision,
        [hidden],
    );
    b.param(
        &join(p, "embeddings.position_embedding.weight"),
        None,
        Component::Vision,
        [side.saturating_mul(side), hidden],
    );
    vit_layers(&mut b, p, hidden, inner, layers);
    b.norm(
        &join(p, "post_layernorm"),
        None,
        Component::Vision,
        hidden,
        true,
    );
    for t in &mut b.tensors {
        t.component = Component::Vision;
    }
    let text_hidden = spec.hidden_size;
    b.param(
        "model.multi_modal_projector.mm_input_projection_weight",
        None,
        Component::Projector,
        [hidden, text_hidden],
    );
    b.norm(
        "model.multi_modal_projector.mm_soft_emb_norm",
        None,
        Component::Projector,
        hidden,
        false,
    );
    spec.tensors.extend(b.tensors);
    spec.vision = Some(VisionSpec {
        hidden_size: hidden,
        num_layers: layers,
        num_heads: heads,
        intermediate_size: inner,
        image_size: image,
        patch_size: patch,
        cross_attention_tokens: 0,
    });
    Ok(())
}

/// Qwen2-VL and Qwen2.5-VL (modeling_qwen2_vl.py, modeling_qwen2_5_vl.py): a Qwen2 language model
/// (under `text_config`, or at the top level in the configs published before transformers 4.5x),
/// its modules under `model.language_model`, and the vision transformer `model.visual`: a 3-D patch
/// conv without bias `[embed, channels, temporal_patch, patch, patch]`, `depth` blocks (fused `qkv`
/// and `proj` with bias; Qwen2-VL: LayerNorm `norm1`/`norm2` and an fc1/fc2 MLP of
/// `mlp_ratio` × embed; Qwen2.5-VL: RMSNorms and a gated MLP with bias of `intermediate_size`),
/// and the patch merger (`ln_q`, then `mlp.0` [embed·m², embed·m²] and `mlp.2` [text, embed·m²],
/// m = `spatial_merge_size`).
pub(crate) fn qwen_vl(f: Fields<'_>, model_type: &str) -> Result<ModelSpec, ConfigError> {
    let text = f.object("text_config")?;
    let tf = match text {
        Some(t) => Fields::new(t, "text_config."),
        None => f,
    };
    let mut spec = decoder(tf, "qwen2", text.is_some())?;
    for t in &mut spec.tensors {
        if let Some(rest) = t.name.strip_prefix("model.") {
            t.name = format!("model.language_model.{rest}");
        }
    }
    spec.model_type = model_type.to_string();
    spec.text_model_type = "qwen2".into();
    let Some(v) = f.object("vision_config")? else {
        return Err(ConfigError::MissingField {
            field: "vision_config".into(),
            why: format!("a {model_type} config describes its vision transformer there"),
        });
    };
    let v = Fields::new(v, "vision_config.");
    let v25 = model_type == "qwen2_5_vl";
    let embed = if v25 {
        v.positive("hidden_size")?.unwrap_or(3584)
    } else {
        v.positive("embed_dim")?.unwrap_or(1280)
    };
    let depth = v.check_layers(&["depth"], v.positive("depth")?.unwrap_or(32))?;
    let heads = v.positive("num_heads")?.unwrap_or(16);
    let channels = v.positive("in_chans")?.unwrap_or(3);
    let patch = v.positive("patch_size")?.unwrap_or(14);
    let temporal = v.positive("temporal_patch_size")?.unwrap_or(2);
    let merge = v.positive("spatial_merge_size")?.unwrap_or(2);
    let out = if v25 {
        v.positive("out_hidden_size")?.unwrap_or(3584)
    } else {
        v.positive("hidden_size")?.unwrap_or(3584)
    };
    let inner = if v25 {
        v.positive("intermediate_size")?.unwrap_or(3420)
    } else {
        embed.saturating_mul(v.positive("mlp_ratio")?.unwrap_or(4))
    };
    let mut b = Builder::default();
    let p = "model.visual";
    b.param(
        &join(p, "patch_embed.proj.weight"),
        None,
        Component::Vision,
        [embed, channels, temporal, patch, patch],
    );
    for i in 0..depth {
        let l = format!("{p}.blocks.{i}");
        b.norm(&join(&l, "norm1"), None, Component::Vision, embed, !v25);
        b.norm(&join(&l, "norm2"), None, Component::Vision, embed, !v25);
        let qkv = join(&l, "attn.qkv");
        b.linear(
            &qkv,
            None,
            Component::Vision,
            embed,
            embed.saturating_mul(3),
            true,
        );
        b.linear(
            &join(&l, "attn.proj"),
            None,
            Component::Vision,
            embed,
            embed,
            true,
        );
        if v25 {
            for proj in ["gate_proj", "up_proj"] {
                let path = format!("{l}.mlp.{proj}");
                b.linear(&path, None, Component::Vision, embed, inner, true);
            }
            let down = join(&l, "mlp.down_proj");
            b.linear(&down, None, Component::Vision, inner, embed, true);
        } else {
            b.linear(
                &join(&l, "mlp.fc1"),
                None,
                Component::Vision,
                embed,
                inner,
                true,
            );
            b.linear(
                &join(&l, "mlp.fc2"),
                None,
                Component::Vision,
                inner,
                embed,
                true,
            );
        }
    }
    for t in &mut b.tensors {
        t.component = Component::Vision;
    }
    let merged = embed.saturating_mul(merge).saturating_mul(merge);
    b.norm(
        &join(p, "merger.ln_q"),
        None,
        Component::Projector,
        embed,
        !v25,
    );
    b.linear(
        &join(p, "merger.mlp.0"),
        None,
        Component::Projector,
        merged,
        merged,
        true,
    );
    b.linear(
        &join(p, "merger.mlp.2"),
        None,
        Component::Projector,
        merged,
        out,
        true,
    );
    for t in b.tensors.iter_mut().filter(|t| t.name.contains(".merger.")) {
        t.component = Component::Projector;
    }
    // the vision tensors come first in the module tree
    b.tensors.append(&mut spec.tensors);
    spec.tensors = b.tensors;
    spec.vision = Some(VisionSpec {
        hidden_size: embed,
        num_layers: depth,
        num_heads: heads,
        intermediate_size: inner,
        image_size: 0,
        patch_size: patch,
        cross_attention_tokens: 0,
    });
    Ok(spec)
}

/// Llama 4 (modeling_llama4.py `Llama4ForConditionalGeneration`, no `model.` level): the text model
/// under `language_model.model` / `language_model.lm_head` (`text_config`, model_type
/// `llama4_text`), the vision model `vision_model` (class token, learned positions for the patches
/// and the class token, an unbiased linear patch embedding over channels × patch², pre/post LayerNorms, encoder
/// layers with biased q/k/v/o, fc1/fc2 and LayerNorms, and the pixel-shuffle adapter
/// `vision_adapter.mlp.fc1/fc2` without bias), and `multi_modal_projector.linear_1`
/// (vision_output_dim → text width, `multi_modal_projector_bias`). Llama4VisionConfig defaults.
pub(crate) fn llama4(f: Fields<'_>) -> Result<ModelSpec, ConfigError> {
    let Some(text) = f.object("text_config")? else {
        return Err(ConfigError::MissingField {
            field: "text_config".into(),
            why: "a llama4 config describes its language model there".into(),
        });
    };
    let tf = Fields::new(text, "text_config.");
    let mut spec = decoder(tf, "llama4_text", true)?;
    for t in &mut spec.tensors {
        t.name = format!("language_model.{}", t.name);
    }
    spec.model_type = "llama4".into();
    spec.text_model_type = "llama4_text".into();
    let Some(v) = f.object("vision_config")? else {
        return Ok(spec);
    };
    let v = Fields::new(v, "vision_config.");
    let hidden = v.positive("hidden_size")?.unwrap_or(768);
    let layers = v.check_layers(
        &["num_hidden_layers"],
        v.positive("num_hidden_layers")?.unwrap_or(34),
    )?;
    let heads = v.positive("num_attention_heads")?.unwrap_or(16);
    let inner = v.positive("intermediate_size")?.unwrap_or(5632);
    let image = v.positive("image_size")?.unwrap_or(448);
    let patch = v.positive("patch_size")?.unwrap_or(14);
    let channels = v.positive("num_channels")?.unwrap_or(3);
    let adapter_in = v.positive("projector_input_dim")?.unwrap_or(4096);
    let adapter_out = v.positive("projector_output_dim")?.unwrap_or(4096);
    let output = v.positive("vision_output_dim")?.unwrap_or(7680);
    let shuffle = v.f64("pixel_shuffle_ratio")?.unwrap_or(0.5);
    // Llama4VisionMLP2: fc1 takes the pixel-shuffled width, hidden / ratio² (intermediate_size
    // in the published config).
    let shuffled = (hidden as f64 / (shuffle * shuffle)).round() as u64;
    let side = image / patch;
    let mut b = Builder::default();
    let p = "vision_model";
    b.param(
        &join(p, "class_embedding"),
        None,
        Component::Vision,
        [hidden],
    );
    b.param(
        &join(p, "positional_embedding_vlm"),
        None,
        Component::Vision,
        [side.saturating_mul(side).saturating_add(1), hidden],
    );
    let patch_in = channels.saturating_mul(patch).saturating_mul(patch);
    let pe = join(p, "patch_embedding.linear");
    b.linear(&pe, None, Component::Vision, patch_in, hidden, false);
    b.norm(
        &join(p, "layernorm_pre"),
        None,
        Component::Vision,
        hidden,
        true,
    );
    b.norm(
        &join(p, "layernorm_post"),
        None,
        Component::Vision,
        hidden,
        true,
    );
    for i in 0..layers {
        let l = format!("{p}.model.layers.{i}");
        for proj in ["q_proj", "k_proj", "v_proj", "o_proj"] {
            let path = format!("{l}.self_attn.{proj}");
            b.linear(&path, None, Component::Vision, hidden, hidden, true);
        }
        b.linear(
            &join(&l, "mlp.fc1"),
            None,
            Component::Vision,
            hidden,
            inner,
            true,
        );
        b.linear(
            &join(&l, "mlp.fc2"),
            None,
            Component::Vision,
            inner,
            hidden,
            true,
        );
        b.norm(
            &join(&l, "input_layernorm"),
            None,
            Component::Vision,
            hidden,
            true,
        );
        let post = join(&l, "post_attention_layernorm");
        b.norm(&post, None, Component::Vision, hidden, true);
    }
    let fc1 = join(p, "vision_adapter.mlp.fc1");
    b.linear(&fc1, None, Component::Vision, shuffled, adapter_in, false);
    let fc2 = join(p, "vision_adapter.mlp.fc2");
    b.linear(
        &fc2,
        None,
        Component::Vision,
        adapter_in,
        adapter_out,
        false,
    );
    for t in &mut b.tensors {
        t.component = Component::Vision;
    }
    let bias = v.bool("multi_modal_projector_bias")?.unwrap_or(false);
    let text_hidden = spec.hidden_size;
    b.linear(
        "multi_modal_projector.linear_1",
        None,
        Component::Projector,
        output,
        text_hidden,
        bias,
    );
    for t in b
        .tensors
        .iter_mut()
        .filter(|t| t.name.starts_with("multi_modal_projector."))
    {
        t.component = Component::Projector;
    }
    b.tensors.append(&mut spec.tensors);
    spec.tensors = b.tensors;
    spec.vision = Some(VisionSpec {
        hidden_size: hidden,
        num_layers: layers,
        num_heads: heads,
        intermediate_size: inner,
        image_size: image,
        patch_size: patch,
        cross_attention_tokens: 0,
    });
    Ok(spec)
}

/// Mllama / Llama 3.2 Vision (modeling_mllama.py): the text model `model.language_model` is a
/// llama whose `cross_attention_layers` replace self-attention by cross-attention over the image
/// (`cross_attn` q/k/v/o with per-head RMSNorm q/k norms, and the scalar gates
/// `cross_attn_attn_gate` / `cross_attn_mlp_gate`); its embedding has 8 extra rows (`vocab_size +
/// 8`) and the head does not. The vision model: class token, unbiased patch conv, gated position
/// and tile embeddings (`max_aspect_ratio_id + 1` rows), pre/post LayerNorms, `num_hidden_layers`
/// local and `num_global_layers` gated global encoder layers (unbiased q/k/v/o, fc1/fc2 and
/// LayerNorms with bias); then `multi_modal_projector` (vision_output_dim → text width, biased).
/// Each cross-attention layer caches K/V of one image's `max_num_tiles × (patches + 1)` tokens.
pub(crate) fn mllama(f: Fields<'_>) -> Result<ModelSpec, ConfigError> {
    let Some(text) = f.object("text_config")? else {
        return Err(ConfigError::MissingField {
            field: "text_config".into(),
            why: "an mllama config describes its language model there".into(),
        });
    };
    let Some(vision) = f.object("vision_config")? else {
        return Err(ConfigError::MissingField {
            field: "vision_config".into(),
            why: "an mllama config describes its vision model there".into(),
        });
    };
    let tf = Fields::new(text, "text_config.");
    let cross = tf.u64_list("cross_attention_layers")?.unwrap_or_default();
    // the self-attention layers as a llama; the cross-attention layers are rebuilt below
    let mut spec = decoder(tf, "llama", true)?;
    spec.warnings.retain(|w| !w.contains("absent"));
    let hidden = spec.hidden_size;
    let vocab = spec.vocab_size;
    let Some(self_attn) = spec.layers.first().and_then(|l| l.attention) else {
        return Err(ConfigError::Inconsistent(
            "mllama text model without layers".into(),
        ));
    };
    let n = spec.num_layers;
    if let Some(bad) = cross.iter().find(|&&i| i >= n) {
        return Err(tf.invalid(
            "cross_attention_layers",
            &format!("layer indices below num_hidden_layers ({n})"),
            &serde_json::json!(bad),
        ));
    }
    // Per-layer tensors, one layer each (the cross layers differ): expand the decoder's runs.
    let per_layer: Vec<crate::spec::TensorSpec> = spec
        .instances()
        .map(|i| {
            let mut t = i.tensor.clone();
            let name = i.name();
            t.name = match name.strip_prefix("model.") {
                Some(rest) => format!("model.language_model.{rest}"),
                None => name.into_owned(),
            };
            t.layer = i.layer;
            t.repeat = 1;
            t
        })
        .collect();
    let head_dim = self_attn.head_dim;
    let q = self_attn.num_heads.saturating_mul(head_dim);
    let kv = self_attn.num_kv_heads.saturating_mul(head_dim);
    let mut tensors = Vec::new();
    let mut b = Builder::default();
    b.embedding(
        "model.language_model.embed_tokens",
        Component::Embedding,
        vocab.saturating_add(8),
        hidden,
    );
    tensors.append(&mut b.tensors);
    for t in per_layer {
        if t.name.ends_with("embed_tokens.weight") {
            continue;
        }
        let l = t.layer.unwrap_or(u32::MAX);
        let is_cross = t.layer.is_some() && cross.contains(&u64::from(l));
        if is_cross && t.name.contains(".self_attn.") {
            if t.name.ends_with(".self_attn.q_proj.weight") {
                let p = t
                    .name
                    .trim_end_matches(".self_attn.q_proj.weight")
                    .to_string();
                let a = join(&p, "cross_attn");
                let mut c = Builder::default();
                c.param(
                    &join(&p, "cross_attn_attn_gate"),
                    Some(l),
                    Component::Attention,
                    [1],
                );
                c.param(
                    &join(&p, "cross_attn_mlp_gate"),
                    Some(l),
                    Component::Mlp,
                    [1],
                );
                c.linear(
                    &join(&a, "q_proj"),
                    Some(l),
                    Component::Attention,
                    hidden,
                    q,
                    false,
                );
                c.linear(
                    &join(&a, "k_proj"),
                    Some(l),
                    Component::Attention,
                    hidden,
                    kv,
                    false,
                );
                c.linear(
                    &join(&a, "v_proj"),
                    Some(l),
                    Component::Attention,
                    hidden,
                    kv,
                    false,
                );
                c.linear(
                    &join(&a, "o_proj"),
                    Some(l),
                    Component::Attention,
                    q,
                    hidden,
                    false,
                );
                c.norm(
                    &join(&a, "q_norm"),
                    Some(l),
                    Component::Norm,
                    head_dim,
                    false,
                );
                c.norm(
                    &join(&a, "k_norm"),
                    Some(l),
                    Component::Norm,
                    head_dim,
                    false,
                );
                tensors.append(&mut c.tensors);
            }
            continue;
        }
        tensors.push(t);
    }
    for i in &cross {
        if let Some(layer) = spec.layers.get_mut(*i as usize) {
            layer.cross_attention = layer.attention.take();
        }
    }
    spec.tensors = tensors;
    spec.model_type = "mllama".into();
    spec.text_model_type = "mllama_text_model".into();

    let v = Fields::new(vision, "vision_config.");
    let vh = v.positive("hidden_size")?.unwrap_or(1280);
    let layers = v.check_layers(
        &["num_hidden_layers"],
        v.positive("num_hidden_layers")?.unwrap_or(32),
    )?;
    let global = v.check_layers(
        &["num_global_layers"],
        v.positive("num_global_layers")?.unwrap_or(8),
    )?;
    let heads = v.positive("attention_heads")?.unwrap_or(16);
    let inner = v.positive("intermediate_size")?.unwrap_or(5120);
    let image = v.positive("image_size")?.unwrap_or(448);
    let patch = v.positive("patch_size")?.unwrap_or(14);
    let channels = v.positive("num_channels")?.unwrap_or(3);
    let tiles = v.positive("max_num_tiles")?.unwrap_or(4);
    let output = v.positive("vision_output_dim")?.unwrap_or(7680);
    let ratios = match v.value("supported_aspect_ratios") {
        Some(serde_json::Value::Array(a)) => a.len() as u64,
        _ => 8,
    };
    let side = image / patch;
    let positions = side.saturating_mul(side).saturating_add(1);
    let mut b = Builder::default();
    let p = "model.vision_model";
    b.param(&join(p, "class_embedding"), None, Component::Vision, [vh]);
    let pw = vec![vh, channels, patch, patch];
    b.param(
        &join(p, "patch_embedding.weight"),
        None,
        Component::Vision,
        pw,
    );
    let g = join(p, "gated_positional_embedding");
    b.param(&join(&g, "gate"), None, Component::Vision, [1]);
    b.param(
        &join(&g, "embedding"),
        None,
        Component::Vision,
        [positions, vh],
    );
    let tile_rows = ratios.saturating_add(1);
    let tile_width = tiles.saturating_mul(positions).saturating_mul(vh);
    let tw = vec![tile_rows, tile_width];
    b.param(
        &join(&g, "tile_embedding.weight"),
        None,
        Component::Vision,
        tw,
    );
    for which in [
        "pre_tile_positional_embedding",
        "post_tile_positional_embedding",
    ] {
        let e = join(p, which);
        b.param(&join(&e, "gate"), None, Component::Vision, [1]);
        let w = vec![tile_rows, tiles.saturating_mul(vh)];
        b.param(&join(&e, "embedding.weight"), None, Component::Vision, w);
    }
    b.norm(&join(p, "layernorm_pre"), None, Component::Vision, vh, true);
    b.norm(
        &join(p, "layernorm_post"),
        None,
        Component::Vision,
        vh,
        true,
    );
    for (stack, count, gated) in [
        ("transformer", layers, false),
        ("global_transformer", global, true),
    ] {
        for i in 0..count {
            let l = format!("{p}.{stack}.layers.{i}");
            if gated {
                b.param(&join(&l, "gate_attn"), None, Component::Vision, [1]);
                b.param(&join(&l, "gate_ffn"), None, Component::Vision, [1]);
            }
            for proj in ["q_proj", "k_proj", "v_proj", "o_proj"] {
                let path = format!("{l}.self_attn.{proj}");
                b.linear(&path, None, Component::Vision, vh, vh, false);
            }
            b.linear(
                &join(&l, "mlp.fc1"),
                None,
                Component::Vision,
                vh,
                inner,
                true,
            );
            b.linear(
                &join(&l, "mlp.fc2"),
                None,
                Component::Vision,
                inner,
                vh,
                true,
            );
            b.norm(
                &join(&l, "input_layernorm"),
                None,
                Component::Vision,
                vh,
                true,
            );
            let post = join(&l, "post_attention_layernorm");
            b.norm(&post, None, Component::Vision, vh, true);
        }
    }
    for t in &mut b.tensors {
        t.component = Component::Vision;
    }
    b.linear(
        "model.multi_modal_projector",
        None,
        Component::Projector,
        output,
        hidden,
        true,
    );
    for t in b
        .tensors
        .iter_mut()
        .filter(|t| t.name.starts_with("model.multi_modal_projector"))
    {
        t.component = Component::Projector;
    }
    spec.tensors.extend(b.tensors);
    spec.vision = Some(VisionSpec {
        hidden_size: vh,
        num_layers: layers.saturating_add(global),
        num_heads: heads,
        intermediate_size: inner,
        image_size: image,
        patch_size: patch,
        cross_attention_tokens: tiles.saturating_mul(positions),
    });
    Ok(spec)
}
