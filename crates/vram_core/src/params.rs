//! Exact parameter counts from the tensor inventory: the total, the per-token active count for MoE,
//! and the breakdown by component.

use crate::spec::{Component, FfnSpec, ModelSpec};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Parameter counts of a model (`parameters` in `vram estimate --json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParamCounts {
    /// Every parameter, plus persistent buffers stored in the checkpoint (as published counts do).
    pub total: u64,
    /// Parameters the scenario trains (all parameters for full training; the adapters for LoRA).
    pub trainable: u64,
    /// Parameters used per token: the total minus the routed experts a token does not visit.
    pub active: u64,
    /// Persistent non-trainable buffers included in `total` (DeepSeek-V3's router bias).
    pub buffers: u64,
    /// Sum per component (snake_case keys: `embedding`, `attention`, `mlp`, `experts`, ...).
    pub by_component: BTreeMap<Component, u64>,
    /// Parameters of each layer of the main stack, in order.
    pub per_layer: Vec<u64>,
}

impl ParamCounts {
    /// Counts every tensor of `spec`; `trainable` is the full count (LoRA scenarios replace it).
    /// Computed once per spec ([`ModelSpec::derived`]).
    pub fn of(spec: &ModelSpec) -> Self {
        spec.derived().params.clone()
    }

    /// Counts every tensor of `spec` (what [`ParamCounts::of`] caches).
    pub fn count(spec: &ModelSpec) -> Self {
        let mut by_component = BTreeMap::new();
        let mut total = 0u64;
        let mut buffers = 0u64;
        let mut per_layer = vec![0u64; spec.layers.len()];
        let stack_prefix_is_encoder = |name: &str| name.starts_with("encoder.");
        for t in &spec.tensors {
            let n = t.numel();
            let all = n.saturating_mul(t.count());
            total = total.saturating_add(all);
            if t.buffer {
                buffers = buffers.saturating_add(all);
            }
            let slot = by_component.entry(t.component).or_insert(0u64);
            *slot = slot.saturating_add(all);
            if t.layer.is_some() && !stack_prefix_is_encoder(&t.name) {
                for l in t.layers() {
                    if let Some(slot) = per_layer.get_mut(l as usize) {
                        *slot = slot.saturating_add(n);
                    }
                }
            }
        }
        let active = total.saturating_sub(inactive_expert_params(spec));
        ParamCounts {
            total,
            trainable: total.saturating_sub(buffers),
            active,
            buffers,
            by_component,
            per_layer,
        }
    }

    /// Count for one component (0 if the model has none).
    pub fn component(&self, c: Component) -> u64 {
        self.by_component.get(&c).copied().unwrap_or(0)
    }
}

/// Routed-expert parameters a token does not use: per MoE layer, (E − k)/E of its expert tensors.
/// Source: the definition of "active parameters" used by Mixtral/Qwen-MoE/DeepSeek model cards.
fn inactive_expert_params(spec: &ModelSpec) -> u64 {
    let mut inactive = 0u64;
    for (i, layer) in spec.layers.iter().enumerate() {
        let Some(FfnSpec::Moe {
            num_experts,
            experts_per_token,
            ..
        }) = layer.ffn
        else {
            continue;
        };
        let expert_params: u64 = spec
            .tensors
            .iter()
            .filter(|t| t.component == Component::Experts && t.in_layer(i as u32))
            .map(|t| t.numel())
            .fold(0, u64::saturating_add);
        let per_expert = expert_params / num_experts.max(1);
        inactive = inactive.saturating_add(
            per_expert.saturating_mul(num_experts.saturating_sub(experts_per_token)),
        );
    }
    inactive
}
