//! One rank's part of a model under transformers' own tensor parallelism
//! (`from_pretrained(..., distributed_config=DistributedConfig(tp_size=N))`, or `tp_plan="auto"`):
//! the model's `tp_plan` applied by `transformers/distributed/tensor_parallel.py`
//! (`apply_tensor_parallelism`, transformers 5.24). For the llama family of names it is
//!
//! | module | style | rank's part |
//! |---|---|---|
//! | `q_proj`, `k_proj`, `v_proj`, `gate_proj`, `up_proj` | `colwise` | rows of the weight (and bias) ÷ tp; output features ÷ tp |
//! | `o_proj`, `down_proj` | `rowwise` | columns of the weight ÷ tp; bias whole; output all-reduced |
//! | `embed_tokens` | `embedding_rowwise` | vocabulary rows ÷ tp; output all-reduced |
//! | `lm_head` | `colwise_gather_output` | vocabulary rows ÷ tp; logits all-gathered whole |
//! | norms | (none) | whole on every rank |
//!
//! A rank then runs the one-GPU step of this part: its heads, its share of the MLP, whole norms
//! and residual stream, and whole logits after the gather. [`rank_spec`] builds that part as a
//! [`ModelSpec`] with [`ModelSpec::tensor_parallel`] set, so the walk of one GPU measures it and
//! adds what DTensor allocates beyond it (the head's local logits before the gather, the
//! embedding's gradient computed whole); docs/formulas/parallel.md §HF tensor parallelism.

use crate::error::ScenarioError;
use crate::spec::{Component, FfnSpec, ModelKind, ModelSpec, TensorSpec};

/// How one tensor is split over the TP ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Split {
    /// Whole on every rank.
    Whole,
    /// Split along this dimension (`colwise`: 0 of `[out, in]`; `rowwise`: 1).
    Dim(usize),
}

/// Text models whose `base_model_tp_plan` in transformers 5.24 is the llama family's: `colwise` on
/// q/k/v/gate/up, `rowwise` on o/down (and `replicated_with_grad_allreduce` on per-head q/k norms),
/// read from every `configuration_*.py`. Others (OLMo-2's gathered q/k, Phi-3's fused projections,
/// models without a plan) split differently or not at all.
pub const LLAMA_PLAN_MODEL_TYPES: [&str; 28] = [
    "apertus",
    "arcee",
    "cohere",
    "cohere2",
    "cwm",
    "ernie4_5",
    "exaone",
    "exaone4",
    "gemma",
    "gemma2",
    "gemma3_text",
    "granite",
    "helium",
    "hyperclovax",
    "internlm3",
    "iquestcoder",
    "jais2",
    "llama",
    "ministral",
    "ministral3",
    "mistral",
    "nemotron",
    "olmo",
    "qwen2",
    "qwen3",
    "seed_oss",
    "smollm3",
    "vaultgemma",
];

const COLWISE: [&str; 5] = ["q_proj", "k_proj", "v_proj", "gate_proj", "up_proj"];
const ROWWISE: [&str; 2] = ["o_proj", "down_proj"];

/// The module a parameter belongs to: `model.layers.0.self_attn.q_proj.weight` → `q_proj`.
fn module_of(name: &str) -> &str {
    let mut parts = name.rsplit('.');
    let _param = parts.next();
    parts.next().unwrap_or("")
}

fn refuse(model_type: &str, what: String) -> ScenarioError {
    ScenarioError::Invalid {
        field: "tp".into(),
        expected: "with --framework hf, a model that transformers' llama-family tensor-parallel plan splits (q/k/v/o_proj and gate/up/down_proj layers, vocabulary embedding and lm_head, norms)".into(),
        found: format!("model_type {model_type:?} with {what}"),
    }
}

fn split_of(spec: &ModelSpec, t: &TensorSpec) -> Result<Split, ScenarioError> {
    let module = module_of(&t.name);
    let is_weight = t.name.ends_with(".weight");
    match t.component {
        Component::Norm | Component::FinalNorm => Ok(Split::Whole),
        Component::Embedding | Component::LmHead if t.shape.first() == Some(&spec.vocab_size) => {
            Ok(Split::Dim(0))
        }
        Component::Attention | Component::Mlp | Component::Bias => {
            if COLWISE.contains(&module) {
                Ok(Split::Dim(0))
            } else if ROWWISE.contains(&module) {
                Ok(if is_weight && t.shape.len() == 2 {
                    Split::Dim(1)
                } else {
                    Split::Whole
                })
            } else {
                Err(refuse(
                    &spec.model_type,
                    format!("a {:?} tensor {:?} outside that plan", t.component, t.name),
                ))
            }
        }
        other => Err(refuse(
            &spec.model_type,
            format!("a {other:?} tensor {:?} the plan does not cover", t.name),
        )),
    }
}

/// One rank's part of `spec` under transformers' tensor parallelism over `tp` ranks (the largest
/// part where a split is uneven: `torch.chunk` gives the first ranks `ceil(n / tp)`). Refuses what
/// the llama-family plan does not describe: encoder or state-space models, MoE, MLA, vision
/// towers, and tensors named otherwise.
pub fn rank_spec(spec: &ModelSpec, tp: u64) -> Result<ModelSpec, ScenarioError> {
    let tp = tp.max(1);
    if !LLAMA_PLAN_MODEL_TYPES.contains(&spec.text_model_type.as_str()) {
        return Err(refuse(
            &spec.model_type,
            "a tensor-parallel plan other than the llama family's (or none) in transformers 5.24"
                .into(),
        ));
    }
    if spec.kind != ModelKind::DecoderOnly || spec.vision.is_some() {
        return Err(refuse(&spec.model_type, format!("a {:?} model", spec.kind)));
    }
    let mut out = spec.clone();
    for layer in &mut out.layers {
        if layer.ssm.is_some() || layer.cross_attention.is_some() {
            return Err(refuse(
                &spec.model_type,
                "state-space or cross-attention layers".into(),
            ));
        }
        if let Some(a) = layer.attention.as_mut() {
            if a.mla.is_some() {
                return Err(refuse(&spec.model_type, "latent (MLA) attention".into()));
            }
            a.num_heads = a.num_heads.div_ceil(tp);
            a.num_kv_heads = a.num_kv_heads.div_ceil(tp);
        }
        match layer.ffn.as_mut() {
            Some(FfnSpec::Dense {
                intermediate_size, ..
            }) => *intermediate_size = intermediate_size.div_ceil(tp),
            Some(FfnSpec::Moe { .. }) => {
                return Err(refuse(&spec.model_type, "mixture-of-experts layers".into()))
            }
            None => {}
        }
    }
    for t in &mut out.tensors {
        if let Split::Dim(d) = split_of(spec, t)? {
            let mut dims = t.shape.to_vec();
            if let Some(n) = dims.get_mut(d) {
                *n = n.div_ceil(tp);
            }
            t.shape = dims.into();
            if let Some(l) = t.linear.as_mut() {
                if d == 0 {
                    l.out_features = l.out_features.div_ceil(tp);
                } else {
                    l.in_features = l.in_features.div_ceil(tp);
                }
            }
        }
    }
    out.tensor_parallel = tp;
    out.derived = Default::default();
    Ok(out)
}

/// Vocabulary rows of the embedding and of `lm_head` on one rank of `spec` (whole when the spec
/// is not a tensor-parallel part).
pub fn local_vocab(spec: &ModelSpec) -> u64 {
    spec.vocab_size.div_ceil(spec.tensor_parallel.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny_llama() -> ModelSpec {
        let cfg = serde_json::json!({
            "model_type": "llama", "hidden_size": 2048, "intermediate_size": 5632,
            "num_hidden_layers": 2, "num_attention_heads": 32, "num_key_value_heads": 4,
            "vocab_size": 32000, "tie_word_embeddings": false
        });
        crate::resolve::resolve_value(&cfg, Some("tinyllama-2l")).expect("resolves")
    }

    #[test]
    fn rank_spec_splits_projections_and_vocabulary_and_keeps_norms_whole() {
        let spec = tiny_llama();
        let part = rank_spec(&spec, 2).expect("llama splits");
        let whole: u64 = spec.instances().map(|i| i.tensor.numel()).sum();
        let local: u64 = part.instances().map(|i| i.tensor.numel()).sum();
        // 2 × 2048 norms per layer and the final norm stay whole; everything else halves
        let norms = 2 * 2 * 2048 + 2048;
        // 2 × 32,000 × 2048 (embedding, lm_head) + 2 × 44,044,288 (layers) + 2048 (final norm)
        assert_eq!(whole, 219_162_624);
        assert_eq!(local, (whole - norms) / 2 + norms);
        let a = part.layers[0].attention.expect("attention");
        assert_eq!((a.num_heads, a.num_kv_heads, a.head_dim), (16, 2, 64));
        assert_eq!(local_vocab(&part), 16_000);
    }

    #[test]
    fn rank_spec_refuses_models_whose_plan_splits_otherwise() {
        // OLMo-2 gathers q and k whole (`colwise_gather_output`) for its full-width q/k norms
        let cfg = serde_json::json!({
            "model_type": "olmo2", "hidden_size": 256, "intermediate_size": 512,
            "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 1000
        });
        let spec = crate::resolve::resolve_value(&cfg, Some("olmo2")).expect("resolves");
        let err = rank_spec(&spec, 2).expect_err("olmo2's plan differs");
        assert!(
            err.to_string().contains(
                "model_type \"olmo2\" with a tensor-parallel plan other than the llama family's"
            ),
            "{err}"
        );
    }

    #[test]
    fn rank_spec_refuses_names_outside_the_llama_plan() {
        let cfg = serde_json::json!({
            "model_type": "gpt2", "n_embd": 768, "n_layer": 2, "n_head": 12, "vocab_size": 50257
        });
        let spec = crate::resolve::resolve_value(&cfg, Some("gpt2")).expect("resolves");
        let err = rank_spec(&spec, 2).expect_err("gpt2 has c_attn");
        assert!(
            err.to_string()
                .starts_with("tp: expected with --framework hf"),
            "{err}"
        );
    }
}
