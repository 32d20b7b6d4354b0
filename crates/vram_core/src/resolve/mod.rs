//! `config.json` → [`ModelSpec`]: detects the architecture from `model_type` and resolves it with that
//! architecture's defaults, as the matching `transformers` configuration and modeling classes do.

mod builder;
mod classic;
mod decoder;
mod hybrid;
mod named;
mod vision;

use crate::error::ConfigError;
use crate::fields::Fields;
use crate::json::parse_lenient;
use crate::spec::ModelSpec;
pub(crate) use builder::{join, Builder};

/// Every `model_type` resolved with architecture-specific rules (others use the generic decoder reading).
pub const KNOWN_MODEL_TYPES: &[&str] = &[
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen2_moe",
    "qwen3",
    "qwen3_moe",
    "gemma",
    "gemma2",
    "gemma3_text",
    "gemma3",
    "cohere",
    "olmo2",
    "phi3",
    "deepseek_v2",
    "deepseek_v3",
    "kimi_k2",
    "gpt_oss",
    "gpt2",
    "opt",
    "bloom",
    "gpt_neox",
    "bert",
    "t5",
    "mamba",
    "llava",
    "starcoder2",
    "gpt_bigcode",
    "gptj",
    "codegen",
    "openai-gpt",
    "mpt",
    "persimmon",
    "phi",
    "stablelm",
    "falcon_mamba",
    "granite",
    "olmoe",
    "cohere2",
    "glm",
    "glm4",
    "granitemoe",
    "dbrx",
    "qwen2_vl",
    "qwen2_5_vl",
    "llama4",
    "llama4_text",
    "jamba",
    "nemotron_h",
    "recurrent_gemma",
    "mllama",
    "internlm2",
    "chatglm",
    "baichuan",
    "phi-msft",
    "deepseek",
    "minicpm",
    "exaone",
    "arctic",
];

/// Parses a HuggingFace `config.json` text into a validated [`ModelSpec`].
///
/// `name_hint` (e.g. the file name) is used when the config carries no `_name_or_path`.
pub fn parse_config(text: &str, name_hint: Option<&str>) -> Result<ModelSpec, ConfigError> {
    let value = parse_lenient(text)?;
    resolve_value(&value, name_hint)
}

/// Resolves an already parsed JSON value (see [`parse_config`]).
pub fn resolve_value(
    value: &serde_json::Value,
    name_hint: Option<&str>,
) -> Result<ModelSpec, ConfigError> {
    let map = value.as_object().ok_or_else(|| ConfigError::NotAnObject {
        found: json_type(value).into(),
    })?;
    let fields = Fields::new(map, "");
    let model_type = fields.str("model_type")?.unwrap_or("").to_string();
    let mut spec = match model_type.as_str() {
        "gpt2" => classic::gpt2(fields)?,
        "opt" => classic::opt(fields)?,
        "bloom" => classic::bloom(fields)?,
        "gpt_neox" => classic::gpt_neox(fields)?,
        "bert" => classic::bert(fields)?,
        "t5" => classic::t5(fields)?,
        "mamba" | "falcon_mamba" => classic::mamba(fields, &model_type)?,
        "starcoder2" => named::starcoder2(fields)?,
        "gpt_bigcode" => named::gpt_bigcode(fields)?,
        "gptj" | "codegen" => named::gptj_like(fields, &model_type)?,
        "openai-gpt" => named::openai_gpt(fields)?,
        "mpt" => named::mpt(fields)?,
        "persimmon" => named::persimmon(fields)?,
        "phi" => named::phi(fields)?,
        "stablelm" => named::stablelm(fields)?,
        "dbrx" => named::dbrx(fields)?,
        "internlm2" => named::internlm2(fields)?,
        "chatglm" => named::chatglm(fields)?,
        "baichuan" => named::baichuan(fields)?,
        "phi-msft" => named::phi_msft(fields)?,
        "llava" | "gemma3" => vision::multimodal(fields, &model_type)?,
        "qwen2_vl" | "qwen2_5_vl" => vision::qwen_vl(fields, &model_type)?,
        "llama4" => vision::llama4(fields)?,
        "mllama" => vision::mllama(fields)?,
        "jamba" => hybrid::jamba(fields)?,
        "nemotron_h" => hybrid::nemotron_h(fields)?,
        "recurrent_gemma" => hybrid::recurrent_gemma(fields)?,
        _ => decoder::decoder(fields, &model_type, false)?,
    };
    spec.name = fields
        .str("_name_or_path")?
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .or_else(|| name_hint.map(str::to_string))
        .unwrap_or_else(|| {
            if model_type.is_empty() {
                "model".into()
            } else {
                model_type.clone()
            }
        });
    spec.quantization_config = fields.value("quantization_config").cloned();
    spec.torch_dtype = match fields.str("torch_dtype")? {
        Some(d) => Some(d.to_string()),
        None => fields.str("dtype")?.map(str::to_string),
    };
    Ok(spec)
}

fn json_type(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// Reads the dropout probabilities under their many names (0 when absent).
pub(crate) fn dropouts(
    f: Fields<'_>,
    attention_keys: &[&str],
    hidden_keys: &[&str],
) -> Result<(f64, f64), ConfigError> {
    let first = |keys: &[&str]| -> Result<f64, ConfigError> {
        for key in keys {
            if let Some(p) = f.f64(key)? {
                return Ok(p.clamp(0.0, 1.0));
            }
        }
        Ok(0.0)
    };
    Ok((first(attention_keys)?, first(hidden_keys)?))
}

/// A decoder-only [`ModelSpec`] from what its resolver read (the fields every decoder sets alike).
#[allow(clippy::too_many_arguments)]
pub(crate) fn decoder_only_spec(
    model_type: &str,
    (hidden, vocab, max_pos): (u64, u64, u64),
    tie: bool,
    act: &str,
    norm: crate::spec::NormKind,
    (attention_dropout, hidden_dropout): (f64, f64),
    layers: Vec<crate::spec::LayerSpec>,
    tensors: Vec<crate::spec::TensorSpec>,
) -> ModelSpec {
    ModelSpec {
        name: String::new(),
        model_type: model_type.into(),
        text_model_type: model_type.into(),
        kind: crate::spec::ModelKind::DecoderOnly,
        hidden_size: hidden,
        vocab_size: vocab,
        num_layers: layers.len() as u64,
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
        tensors,
        gguf: None,
        checkpoint: None,
        tensor_parallel: 0,
        derived: Default::default(),
        warnings: Vec::new(),
    }
}

/// `num_key_value_heads` (default: `heads`), which must divide `heads`.
pub(crate) fn kv_heads(f: Fields<'_>, heads: u64) -> Result<u64, ConfigError> {
    let kv = f.positive("num_key_value_heads")?.unwrap_or(heads);
    if !heads.is_multiple_of(kv) {
        return Err(ConfigError::Inconsistent(format!(
            "num_attention_heads ({heads}) is not a multiple of num_key_value_heads ({kv})"
        )));
    }
    Ok(kv)
}

/// The per-head width: the first of `keys` present, else `hidden / heads` when it divides.
pub(crate) fn head_dim(
    f: Fields<'_>,
    keys: &[&str],
    hidden: u64,
    heads: u64,
) -> Result<u64, ConfigError> {
    match f.positive_any(keys)? {
        Some(d) => Ok(d),
        None if heads > 0 && hidden.is_multiple_of(heads) => Ok(hidden / heads),
        None => Err(ConfigError::Inconsistent(format!(
            "the width ({hidden}) is not a multiple of the number of heads ({heads}) and no head_dim is given"
        ))),
    }
}
