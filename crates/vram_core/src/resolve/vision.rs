//! Multimodal wrappers: the language model under `text_config`, plus the vision tower and projector.
//! llava (modeling_llava.py) wraps a CLIP vision encoder (modeling_clip.py `CLIPVisionModel`).

use super::{decoder::decoder, Builder};
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
        &format!("{p}.embeddings.class_embedding"),
        None,
        Component::Vision,
        vec![hidden],
    );
    b.param(
        &format!("{p}.embeddings.patch_embedding.weight"),
        None,
        Component::Vision,
        vec![hidden, channels, patch, patch],
    );
    b.param(
        &format!("{p}.embeddings.position_embedding.weight"),
        None,
        Component::Vision,
        vec![positions, hidden],
    );
    b.param(
        &format!("{p}.pre_layrnorm.weight"),
        None,
        Component::Vision,
        vec![hidden],
    );
    b.param(
        &format!("{p}.pre_layrnorm.bias"),
        None,
        Component::Vision,
        vec![hidden],
    );
    for i in 0..layers {
        let l = format!("{p}.encoder.layers.{i}");
        for proj in ["k_proj", "v_proj", "q_proj", "out_proj"] {
            b.linear(
                &format!("{l}.self_attn.{proj}"),
                None,
                Component::Vision,
                hidden,
                hidden,
                true,
            );
        }
        b.linear(
            &format!("{l}.mlp.fc1"),
            None,
            Component::Vision,
            hidden,
            inner,
            true,
        );
        b.linear(
            &format!("{l}.mlp.fc2"),
            None,
            Component::Vision,
            inner,
            hidden,
            true,
        );
        for norm in ["layer_norm1", "layer_norm2"] {
            b.param(
                &format!("{l}.{norm}.weight"),
                None,
                Component::Vision,
                vec![hidden],
            );
            b.param(
                &format!("{l}.{norm}.bias"),
                None,
                Component::Vision,
                vec![hidden],
            );
        }
    }
    b.param(
        &format!("{p}.post_layernorm.weight"),
        None,
        Component::Vision,
        vec![hidden],
    );
    b.param(
        &format!("{p}.post_layernorm.bias"),
        None,
        Component::Vision,
        vec![hidden],
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
    });
    Ok(())
}
