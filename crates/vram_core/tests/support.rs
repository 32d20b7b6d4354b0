//! Never silently wrong: every estimate says how its counts were obtained (`model.support`), and a
//! config whose layout the generic reading cannot count is refused with the reason.

use vram_core::scenario::Scenario;
use vram_core::{estimate, parse_config, presets, ConfigError, Sections};

fn support(text: &str) -> String {
    let spec = parse_config(text, Some("test")).unwrap();
    estimate(&spec, &Scenario::inference(), Sections::default())
        .model
        .support
}

fn refused(text: &str) -> ConfigError {
    parse_config(text, Some("test")).unwrap_err()
}

const LLAMA_LIKE: &str = r#""hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 4,
    "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 32000"#;

#[test]
fn every_bundled_preset_is_modelled() {
    for p in presets::PRESETS {
        let spec = parse_config(p.json, None).unwrap();
        assert_eq!(
            vram_core::estimate::support_of(&spec),
            "modelled",
            "{}",
            p.id
        );
    }
}

#[test]
fn an_unknown_model_type_is_a_generic_reading_with_its_assumptions() {
    let text = format!(r#"{{"model_type": "starcoder9", {LLAMA_LIKE}}}"#);
    assert_eq!(support(&text), "generic");
    let spec = parse_config(&text, None).unwrap();
    assert!(spec.warnings[0].contains("unknown model_type \"starcoder9\""));
    // full and sliding layers are still a llama-style layout
    let text = format!(
        r#"{{"model_type": "newmodel", "layer_types": ["full_attention", "sliding_attention", "full_attention", "sliding_attention"], {LLAMA_LIKE}}}"#
    );
    assert_eq!(support(&text), "generic");
}

#[test]
fn hybrid_state_space_expert_and_latent_layouts_of_unknown_types_are_refused_by_key() {
    for (extra, key) in [
        (
            r#""hybrid_override_pattern": "M-M-M*-""#,
            "hybrid_override_pattern",
        ),
        (
            r#""layers_block_type": ["mamba", "attention"]"#,
            "layers_block_type",
        ),
        (r#""attn_layer_period": 8"#, "attn_layer_period"),
        (r#""mamba_d_state": 16"#, "mamba_d_state"),
        (
            r#""num_experts": 64, "num_experts_per_tok": 8"#,
            "num_experts",
        ),
        (r#""n_routed_experts": 64"#, "n_routed_experts"),
        (r#""kv_lora_rank": 512"#, "kv_lora_rank"),
        (
            r#""layer_types": ["linear_attention", "full_attention"]"#,
            "layer_types",
        ),
    ] {
        let text = format!(r#"{{"model_type": "mystery", {extra}, {LLAMA_LIKE}}}"#);
        let err = refused(&text).to_string();
        assert!(err.starts_with(&format!("field \"{key}\"")), "{err}");
        assert!(err.contains("mystery"), "{err}");
    }
}

#[test]
fn a_known_type_with_a_hybrid_pattern_is_refused_not_counted_as_plain_layers() {
    let text =
        format!(r#"{{"model_type": "llama", "hybrid_override_pattern": "M*M*", {LLAMA_LIKE}}}"#);
    let err = refused(&text).to_string();
    assert!(
        err.contains("hybrid_override_pattern") && err.contains("\"llama\" config"),
        "{err}"
    );
    // a known MoE type keeps reading its own expert keys
    let moe = presets::find("mistralai__Mixtral-8x7B-v0.1").unwrap().json;
    assert_eq!(support(moe), "modelled");
}

/// Adds `extra` (a JSON member list) to a preset's config.
fn mutated(id: &str, extra: &str) -> String {
    let json = presets::find(id).unwrap().json.trim_end();
    let open = json.find('{').unwrap();
    format!("{{{extra}, {}", &json[open + 1..])
}

#[test]
fn a_layout_key_that_an_architectures_own_reading_lacks_is_refused_never_counted_as_its_family() {
    for (id, extra, key) in [
        (
            "bigcode__starcoder2-3b",
            r#""num_experts": 8, "num_experts_per_tok": 2"#,
            "num_experts",
        ),
        (
            "EleutherAI__gpt-j-6b",
            r#""hybrid_override_pattern": "M*M*""#,
            "hybrid_override_pattern",
        ),
        ("microsoft__phi-2", r#""kv_lora_rank": 512"#, "kv_lora_rank"),
        (
            "openai-community__gpt2",
            r#""mamba_d_state": 16"#,
            "mamba_d_state",
        ),
        (
            "stabilityai__stablelm-2-1_6b",
            r#""layer_types": ["linear_attention"]"#,
            "layer_types",
        ),
        (
            "google__recurrentgemma-2b",
            r#""num_local_experts": 8"#,
            "num_local_experts",
        ),
        (
            "nvidia__NVIDIA-Nemotron-3-Nano-4B-BF16",
            r#""n_routed_experts": 64"#,
            "n_routed_experts",
        ),
    ] {
        let err = refused(&mutated(id, extra)).to_string();
        assert!(err.starts_with(&format!("field \"{key}\"")), "{id}: {err}");
    }
}

#[test]
fn a_hybrid_pattern_with_layer_kinds_that_are_not_modelled_is_refused() {
    // Nemotron-H MoE layers ("E") are not modelled: refused, not read as MLP layers
    let text = presets::find("nvidia__NVIDIA-Nemotron-3-Nano-4B-BF16")
        .unwrap()
        .json
        .replace("\"M-M-M-MM-M-M*-M-M*", "\"E-M-M-MM-M-M*-M-M*");
    let err = refused(&text).to_string();
    assert!(
        err.contains("hybrid_override_pattern") && err.contains("MoE"),
        "{err}"
    );
    // a pattern that does not cover every layer is inconsistent
    let text = presets::find("nvidia__NVIDIA-Nemotron-3-Nano-4B-BF16")
        .unwrap()
        .json
        .replace("\"M-M-M-MM-M-M*-M-M*", "\"M-M-M-MM-M-M*-M-M");
    assert!(refused(&text).to_string().contains("42"));
}

#[test]
fn tower_and_head_counts_past_the_layer_cap_are_refused_not_built() {
    // a mutated vision tower of 10 million layers used to be built one tensor at a time until memory
    // ran out
    for (id, from, to, key) in [
        (
            "google__gemma-3-4b-it",
            "\"num_hidden_layers\": 27",
            "\"num_hidden_layers\": 10000000",
            "vision_config.num_hidden_layers",
        ),
        (
            "Qwen__Qwen2-VL-7B-Instruct",
            "\"depth\": 32",
            "\"depth\": 10000000",
            "vision_config.depth",
        ),
    ] {
        let json = presets::find(id).unwrap().json;
        assert!(json.contains(from), "{id}: {from}");
        let err = refused(&json.replacen(from, to, 1)).to_string();
        assert!(err.contains(key) && err.contains("at most"), "{id}: {err}");
    }
}
