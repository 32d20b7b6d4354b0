//! The index of supported architectures (docs/models.md), generated from the code: for each
//! `model_type` the resolver that reads it, the bundled configs with their computed and published
//! counts, and what the memory models do with its layers (KV kinds, llama.cpp's sliding window).
//! `cargo run -p vram_core --example models_md > docs/models.md`; a test keeps the file in sync.

use crate::infer::kv_cache::{KvLayout, LayerCache};
use crate::scenario::{Dtype, Engine};
use crate::spec::{FfnSpec, ModelKind};
use crate::units::group_thousands;
use std::fmt::Write;

/// Which resolver reads a `model_type` (`resolve::resolve_value`).
fn resolver(model_type: &str) -> &'static str {
    match model_type {
        "gpt2" | "opt" | "bloom" | "gpt_neox" | "bert" | "t5" | "mamba" | "falcon_mamba" => {
            "classic (own layout)"
        }
        "starcoder2" | "gpt_bigcode" | "gptj" | "codegen" | "openai-gpt" | "mpt" | "persimmon"
        | "phi" | "stablelm" | "dbrx" => "decoder with its own module names",
        "internlm2" | "chatglm" | "baichuan" | "phi-msft" => {
            "decoder with its own module names (the repository's remote code)"
        }
        "jamba" | "nemotron_h" | "recurrent_gemma" => "hybrid (attention + state-space layers)",
        "llava" | "gemma3" | "qwen2_vl" | "qwen2_5_vl" | "llama4" | "mllama" => {
            "multimodal wrapper (vision tower + text decoder)"
        }
        _ => "decoder (llama-style, per-architecture rules)",
    }
}

/// What the KV cache of a spec's layers is, in words.
fn kv_kinds(spec: &crate::ModelSpec) -> String {
    if spec.kind == ModelKind::EncoderOnly {
        return "none (encoder only)".into();
    }
    let layout = KvLayout::new(
        spec,
        Engine::Vllm,
        crate::infer::kv_cache::KvDtype::Bf16,
        Dtype::Bf16,
        1,
        false,
    );
    let (mut full, mut sliding, mut state) = (0, 0, 0);
    for l in &layout.layers {
        match l {
            LayerCache::Full { .. } => full += 1,
            LayerCache::Sliding { .. } => sliding += 1,
            LayerCache::State { .. } => state += 1,
            LayerCache::None => {}
        }
    }
    let mla = spec
        .layers
        .iter()
        .any(|l| l.attention.is_some_and(|a| a.mla.is_some()));
    let mut parts = Vec::new();
    if full > 0 {
        parts.push(format!(
            "{full} full{}",
            if mla { " (MLA latent)" } else { "" }
        ));
    }
    if sliding > 0 {
        parts.push(format!("{sliding} sliding-window"));
    }
    if state > 0 {
        parts.push(format!("{state} state-space"));
    }
    if spec.kind == ModelKind::EncoderDecoder {
        parts.push("cross-attention".into());
    }
    parts.join(" + ")
}

/// Whether the training estimate covers a spec, or why it is refused (`train::activations`).
fn training_kind(spec: &crate::ModelSpec) -> &'static str {
    match spec.kind {
        ModelKind::EncoderDecoder => {
            "modelled (encoder and decoder walked; unquantized bases only)"
        }
        ModelKind::StateSpace => "modelled (the mixer's torch path, without the mamba_ssm kernels)",
        _ if spec.text_model_type == "recurrent_gemma" => {
            "modelled (the RG-LRU's Python scan; unquantized bases)"
        }
        _ if spec.layers.iter().any(|l| l.ssm.is_some()) => {
            "refused (hybrid state-space layers not modelled)"
        }
        _ if spec
            .layers
            .iter()
            .any(|l| l.cross_attention.is_some() && l.attention.is_none()) =>
        {
            "refused (image cross-attention layers not modelled)"
        }
        _ => "modelled",
    }
}

fn ffn_kind(spec: &crate::ModelSpec) -> &'static str {
    let moe = spec
        .layers
        .iter()
        .any(|l| matches!(l.ffn, Some(FfnSpec::Moe { .. })));
    let dense = spec
        .layers
        .iter()
        .any(|l| matches!(l.ffn, Some(FfnSpec::Dense { .. })));
    match (moe, dense) {
        (true, true) => "dense + MoE",
        (true, false) => "MoE",
        (false, true) => "dense",
        (false, false) => "—",
    }
}

/// docs/models.md.
pub fn markdown() -> String {
    let mut s = String::new();
    s.push_str("# Supported architectures\n\n");
    s.push_str(
        "Generated from the code by `cargo run -p vram_core --example models_md > docs/models.md` \
         (a test fails when this file is out of date). Every `model_type` below is resolved into \
         the exact tensor inventory (`model.support = \"modelled\"`); any other `model_type` is read \
         as a generic llama-style decoder with its assumptions listed (`\"generic\"`), or refused when \
         its keys describe a layout that reading cannot count; a GGUF file is counted from its own \
         header (`\"header\"`). Each bundled config's tensor names and shapes are also checked \
         one by one against the model `transformers` builds from it on the meta device \
         (`crates/vram_core/tests/headers/`, written by `scripts/arch-header.py`).\n\n",
    );
    s.push_str("Each architecture is modelled for parameter counts, inference (HF transformers, vLLM, llama.cpp) and its KV cache; the training column says where the training estimate (HF transformers) is refused instead.\n\n");
    s.push_str("| model_type | resolver | bundled configs (computed count, checked against) | FFN | KV cache layers (first config) | training |\n");
    s.push_str("|---|---|---|---|---|---|\n");
    for mt in crate::KNOWN_MODEL_TYPES {
        let mut configs = Vec::new();
        let mut first_spec = None;
        for p in crate::presets::PRESETS {
            let Ok(spec) = crate::parse_config(p.json, None) else {
                continue;
            };
            if spec.model_type != *mt {
                continue;
            }
            let total = crate::ParamCounts::of(&spec).total;
            let mut check = if p.published_params == 0 {
                "no published count".to_string()
            } else if p.published_params == total && p.published_rounded.is_empty() {
                "exact".to_string()
            } else if p.published_params == total {
                format!(
                    "exact vs transformers' own model; published: {}",
                    p.published_rounded
                )
            } else {
                format!("published {}", group_thousands(p.published_params))
            };
            if !p.origin.is_empty() {
                let _ = write!(check, "; config {}", p.origin);
            }
            configs.push(format!(
                "[{}]({}) {} ({check})",
                p.repo,
                p.source_url(),
                group_thousands(total)
            ));
            if first_spec.is_none() {
                first_spec = Some(spec);
            }
        }
        let (ffn, kv) = match &first_spec {
            Some(spec) => (ffn_kind(spec).to_string(), kv_kinds(spec)),
            None => ("—".into(), "—".into()),
        };
        let training = first_spec.as_ref().map_or("modelled", training_kind);
        let _ = writeln!(
            s,
            "| `{mt}` | {} | {} | {ffn} | {kv} | {training} |",
            resolver(mt),
            if configs.is_empty() {
                match *mt {
                    "phi-msft" => "none bundled (phi-2's historic format; `microsoft/phi-2` is its current form): \
                        checked tensor by tensor against its remote code with phi-2's first config \
                        (crates/vram_core/tests/headers/)"
                        .to_string(),
                    "arctic" => "none bundled: Snowflake Arctic's config and code were not reachable \
                        offline; a reconstructed config reproduces every published figure (10B dense + \
                        128 × 3.66B experts, 480B total, 17B active) and a header named as Snowflake's \
                        converter writes it (crates/vram_core/tests/arctic.rs)"
                        .to_string(),
                    _ => "none bundled: read by the same rules as its family, not checked against a \
                        published count here"
                        .to_string(),
                }
            } else {
                configs.join("<br>")
            }
        );
    }
    s.push_str("\nGGUF files (`vram estimate MODEL.gguf`, or dropped on the page) of any architecture llama.cpp writes are counted from their tensor infos; the metadata of `llama`, `qwen2`, `qwen2moe`, `qwen3`, `qwen3moe`, `gemma`, `gemma2`, `gemma3`, `phi3`, `command-r`, `olmo2`, `gpt-oss` and `mamba` is also resolved into the architecture above, other architectures are described llama-style for the non-llama.cpp sections (with a warning).\n");
    s
}
