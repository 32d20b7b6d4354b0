//! HF transformers across GPUs with `from_pretrained(..., device_map="auto")`: accelerate splits the
//! model's modules over the GPUs in order, and each GPU runs its layers (and caches their K/V).
//!
//! Source (accelerate 1.x, `accelerate/utils/modeling.py`):
//! - `get_balanced_memory` (what `"auto"` means with several GPUs): every GPU but the last gets
//!   `total / n + 1.25 · max(largest no-split layer, mean size of the final modules)`, the last its
//!   whole free memory (`get_max_memory`: `torch.cuda.mem_get_info` free, i.e. the card less the
//!   CUDA context);
//! - `infer_auto_device_map`: modules in order (embedding, layers, final norm, head) go to the
//!   current GPU while they fit; the first GPU (the "main device") keeps room for the largest
//!   remaining unsplittable module (`max_layer_size`: a decoder layer, or the embedding / head when
//!   larger). transformers 5 computes the map before tying the weights, so a tied head is placed
//!   as a module of its own after the final norm (and its GPU holds the weight it runs with).
//!
//! Checked against accelerate 1.15 on the meta device: Llama-3.1-8B in bf16 on 2 GPUs of
//! 24,000,000,000 free bytes puts the embedding and layers 0–13 on GPU 0 and layers 14–31, the norm
//! and `lm_head` on GPU 1 (tests/infer_transformers.rs).

use crate::error::ScenarioError;
use crate::spec::{Component, ModelKind, ModelSpec};
use serde::{Deserialize, Serialize};

/// What one GPU holds and needs under `device_map="auto"`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceShare {
    /// GPU index.
    pub device: u64,
    /// First decoder layer on it.
    pub first_layer: u64,
    /// Decoder layers on it.
    pub layers: u64,
    /// Whether it holds the embedding.
    pub embedding: bool,
    /// Whether it holds the output head (and computes the logits).
    pub head: bool,
    /// Weights on it.
    pub weights_bytes: u64,
    /// Its layers' KV cache (steady state).
    pub kv_cache_bytes: u64,
    /// Transient activations at its peak (the logits on the head's GPU).
    pub activations_bytes: u64,
    /// Peak tensor bytes.
    pub peak_allocated_bytes: u64,
    /// What `nvidia-smi` shows: peak + CUDA context + workspace.
    pub device_bytes: u64,
}

/// Modules in accelerate's order with their bytes: `(kind, layer index, bytes)`. The per-layer
/// and per-component counts are the model's own ([`crate::params::ParamCounts`]); what is outside
/// the layers and is neither the final norm nor the head loads with the embedding.
fn modules(spec: &ModelSpec, elem: u64) -> Vec<(Component, Option<usize>, u64)> {
    let counts = &spec.derived().params;
    let component = |c: Component| counts.by_component.get(&c).copied().unwrap_or(0);
    let in_layers: u64 = counts.per_layer.iter().sum();
    let head = component(Component::LmHead).saturating_mul(elem);
    let norm = component(Component::FinalNorm).saturating_mul(elem);
    let embed = counts
        .total
        .saturating_sub(in_layers)
        .saturating_mul(elem)
        .saturating_sub(head + norm);
    let mut out = vec![(Component::Embedding, None, embed)];
    out.extend(
        counts
            .per_layer
            .iter()
            .enumerate()
            .map(|(i, &p)| (Component::Attention, Some(i), p.saturating_mul(elem))),
    );
    out.push((Component::FinalNorm, None, norm));
    // transformers 5 builds the model for the device map before tying its weights: a tied
    // `lm_head` is sized and placed as its own module, after the norm (checked with accelerate
    // 1.15 on Qwen2.5-3B, tied: `lm_head` lands on the last GPU).
    let head = if head == 0 && spec.tie_word_embeddings {
        spec.tensors
            .iter()
            .filter(|t| t.layer.is_none() && t.component == Component::Embedding)
            .map(|t| t.numel().saturating_mul(elem))
            .max()
            .unwrap_or(0)
    } else {
        head
    };
    if head > 0 {
        out.push((Component::LmHead, None, head));
    }
    out
}

/// Splits `spec` over `gpus` GPUs of `free_bytes` each as `device_map="auto"` does (see the module
/// documentation), with parameters of `elem` bytes. Returns one share per GPU that holds anything.
pub fn balanced(
    spec: &ModelSpec,
    elem: u64,
    gpus: u64,
    free_bytes: u64,
) -> Result<Vec<DeviceShare>, ScenarioError> {
    if spec.kind != ModelKind::DecoderOnly {
        return Err(ScenarioError::Invalid {
            field: "gpus".into(),
            expected: "1 for this model with transformers (device_map=\"auto\" across GPUs is modelled for decoder-only models)".into(),
            found: gpus.to_string(),
        });
    }
    let mods = modules(spec, elem);
    let total: u64 = mods.iter().map(|m| m.2).sum();
    let largest_layer = mods
        .iter()
        .filter(|m| m.1.is_some())
        .map(|m| m.2)
        .max()
        .unwrap_or(0);
    // Final modules: one per weight tensor's module (q_proj, …, the norms, embedding, head).
    let leaf_count = spec
        .tensors
        .iter()
        .filter(|t| t.name.ends_with(".weight"))
        .map(|t| t.count())
        .sum::<u64>()
        .max(1);
    let mean_leaf = total / leaf_count;
    let n = gpus.max(1);
    let per_gpu = (total / n).saturating_add(largest_layer.max(mean_leaf).saturating_mul(5) / 4);
    let budget = |d: u64| {
        if d + 1 < n {
            per_gpu.min(free_bytes)
        } else {
            free_bytes
        }
    };
    let mut shares: Vec<DeviceShare> = (0..n)
        .map(|d| DeviceShare {
            device: d,
            ..DeviceShare::default()
        })
        .collect();
    let mut device = 0u64;
    for (i, &(kind, layer, bytes)) in mods.iter().enumerate() {
        loop {
            // The main device keeps room for the largest module still to place.
            let reserve = if device == 0 {
                mods[i..].iter().map(|m| m.2).max().unwrap_or(0)
            } else {
                0
            };
            let room = budget(device).saturating_sub(reserve);
            let used = shares[device as usize].weights_bytes;
            // What does not fit the last GPU stays there too: the estimate then says it does
            // not fit (accelerate would offload the rest to the CPU).
            if used.saturating_add(bytes) <= room || device + 1 == n {
                let s = &mut shares[device as usize];
                s.weights_bytes = used.saturating_add(bytes);
                match (kind, layer) {
                    (_, Some(l)) => {
                        if s.layers == 0 {
                            s.first_layer = l as u64;
                        }
                        s.layers += 1;
                    }
                    (Component::Embedding, _) => s.embedding = true,
                    (Component::LmHead, _) => s.head = true,
                    _ => {}
                }
                break;
            }
            device += 1;
        }
    }
    shares.retain(|s| s.weights_bytes > 0);
    Ok(shares)
}
