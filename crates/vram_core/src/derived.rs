//! Facts derived once per model and reused by every estimate of it: tensors grouped by shape (so
//! per-tensor sums multiply instead of iterate), the per-layer tensor lists, the runs of consecutive
//! identical layers, and the kinds of layers (identical ones, consecutive or not) that the
//! activation walk computes once and replays.
//!
//! Nothing here depends on the scenario, so a chart's sweep, a solver's probes or the page's
//! make-it-fit search pay for it once per model. [`ModelSpec::derived`] computes it on first use and
//! keeps it with the spec (a spec is not mutated after `parse_config` returns it; a test that edits
//! `tensors` by hand does so before the first estimate).

use crate::params::ParamCounts;
use crate::spec::{AttentionSpec, Component, LayerSpec, ModelSpec, TensorSpec};

/// Tensors of identical shape, kind and role: per-tensor formulas give the same bytes for each, so
/// sums over the inventory are `count ×` one tensor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorGroup {
    /// Index in `ModelSpec::tensors` of the first tensor of the group.
    pub first: usize,
    /// Tensors in the group.
    pub count: u64,
    /// Elements of each.
    pub numel: u64,
}

/// Consecutive layers of the main stack with the same [`crate::spec::LayerSpec`] and the same
/// tensors (names apart from the layer index, shapes, roles).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayerRun {
    /// First layer index.
    pub start: usize,
    /// Layers in the run.
    pub count: usize,
}

/// The per-model facts (see the module documentation).
#[derive(Clone, Debug, PartialEq)]
pub struct Derived {
    /// Exact parameter counts.
    pub params: ParamCounts,
    /// Tensor groups in order of first appearance.
    pub groups: Vec<TensorGroup>,
    /// The groups as `(first tensor index, count, false)` (the weights model's units: no tensor
    /// skipped by name).
    pub group_units: Vec<(usize, u64, bool)>,
    /// Indices of the tensors inside each layer's blocks (attention, MLP, experts, router,
    /// state-space mixer, norms, biases), per layer of the main stack.
    pub layer_tensors: Vec<Vec<usize>>,
    /// Σ elements of `layer_tensors` per layer.
    pub layer_block_numel: Vec<u64>,
    /// Runs of identical consecutive layers.
    pub runs: Vec<LayerRun>,
    /// Per layer, the first layer identical to it (itself when it is the first of its kind):
    /// sliding and global layers that alternate form two kinds, not 2 × n runs.
    pub layer_kind: Vec<usize>,
    /// [`Derived::layer_kind`] with sliding windows disregarded: the training walk, which does not
    /// read windows (HF training attends through the mask), walks Gemma-2's alternating sliding and
    /// global layers as one kind.
    pub walk_kind: Vec<usize>,
    /// Per layer, whether its attention normalises queries and keys (`q_norm`, `k_norm`).
    pub layer_qk_norm: Vec<bool>,
    /// Per layer, the index of its shared-expert gate (`shared_expert_gate`, Qwen2-MoE), if any.
    pub layer_shared_expert_gate: Vec<Option<usize>>,
    /// Whether a learned position embedding exists.
    pub has_position_embedding: bool,
    /// Whether a final norm exists.
    pub has_final_norm: bool,
    /// Whether an untied output projection exists.
    pub has_lm_head: bool,
    /// Whether any layer of the main stack attends (a mamba model has none: no mask, no rotary
    /// tables, no attention implementation to choose).
    pub has_attention: bool,
}

/// Components of the tensors inside a layer's blocks (what the activation walk reads per layer).
pub fn in_layer_blocks(c: Component) -> bool {
    matches!(
        c,
        Component::Attention
            | Component::Mlp
            | Component::Experts
            | Component::SharedExperts
            | Component::Router
            | Component::Mixer
            | Component::Norm
            | Component::Bias
    )
}

fn same_kind(a: &TensorSpec, b: &TensorSpec) -> bool {
    a.component == b.component
        && a.shape == b.shape
        && a.linear == b.linear
        && a.buffer == b.buffer
        && a.name.ends_with("_bias") == b.name.ends_with("_bias")
}

/// The tensor's name with its layer index taken out (`model.layers.7.mlp.up_proj.weight` →
/// `model.layers..mlp.up_proj.weight`), so tensors of two layers compare by role.
fn role_matches(a: &TensorSpec, a_layer: usize, b: &TensorSpec, b_layer: usize) -> bool {
    fn split(name: &str, layer: usize) -> (&str, &str) {
        match crate::spec::layer_index_span(name, u32::try_from(layer).unwrap_or(u32::MAX)) {
            Some((at, end)) => (&name[..at], &name[end..]),
            None => (name, ""),
        }
    }
    split(&a.name, a_layer) == split(&b.name, b_layer)
}

impl Derived {
    /// Derives the facts of `spec`.
    pub fn of(spec: &ModelSpec) -> Self {
        let mut groups: Vec<TensorGroup> = Vec::new();
        for (i, t) in spec.tensors.iter().enumerate() {
            match groups
                .iter_mut()
                .find(|g| same_kind(&spec.tensors[g.first], t))
            {
                Some(g) => g.count += t.count(),
                None => groups.push(TensorGroup {
                    first: i,
                    count: t.count(),
                    numel: t.numel(),
                }),
            }
        }
        let n_layers = spec.layers.len();
        let mut layer_tensors = vec![Vec::new(); n_layers];
        let mut layer_block_numel = vec![0u64; n_layers];
        let mut layer_all_numel = vec![0u64; n_layers];
        for (i, t) in spec.tensors.iter().enumerate() {
            if t.layer.is_none() {
                continue;
            }
            for l in t.layers().map(|l| l as usize).take_while(|&l| l < n_layers) {
                layer_all_numel[l] = layer_all_numel[l].saturating_add(t.numel());
                if in_layer_blocks(t.component) {
                    layer_tensors[l].push(i);
                    layer_block_numel[l] = layer_block_numel[l].saturating_add(t.numel());
                }
            }
        }
        let without_window = |l: &LayerSpec| LayerSpec {
            attention: l.attention.map(|a| AttentionSpec {
                sliding_window: None,
                ..a
            }),
            ..*l
        };
        let identical_but_window = |a: usize, b: usize| {
            without_window(&spec.layers[a]) == without_window(&spec.layers[b])
                && layer_tensors[a].len() == layer_tensors[b].len()
                && layer_all_numel[a] == layer_all_numel[b]
                && layer_tensors[a]
                    .iter()
                    .zip(&layer_tensors[b])
                    .all(|(&x, &y)| {
                        let (tx, ty) = (&spec.tensors[x], &spec.tensors[y]);
                        x == y || (same_kind(tx, ty) && role_matches(tx, a, ty, b))
                    })
        };
        let identical =
            |a: usize, b: usize| spec.layers[a] == spec.layers[b] && identical_but_window(a, b);
        let mut runs: Vec<LayerRun> = Vec::new();
        for i in 0..n_layers {
            match runs.last_mut() {
                Some(r) if identical(r.start, i) => r.count += 1,
                _ => runs.push(LayerRun { start: i, count: 1 }),
            }
        }
        let kinds_by = |same: &dyn Fn(usize, usize) -> bool| -> Vec<usize> {
            let mut kinds: Vec<usize> = Vec::new();
            (0..n_layers)
                .map(|i| match kinds.iter().find(|&&k| same(k, i)) {
                    Some(&k) => k,
                    None => {
                        kinds.push(i);
                        i
                    }
                })
                .collect()
        };
        let layer_kind = kinds_by(&identical);
        let walk_kind = kinds_by(&identical_but_window);
        let layer_qk_norm = layer_tensors
            .iter()
            .map(|ix| {
                ix.iter()
                    .any(|&j| spec.tensors[j].name.contains(".q_norm."))
            })
            .collect();
        let layer_shared_expert_gate = layer_tensors
            .iter()
            .map(|ix| {
                ix.iter().copied().find(|&j| {
                    let t = &spec.tensors[j];
                    t.name.contains(".shared_expert_gate") && t.linear.is_some()
                })
            })
            .collect();
        let any = |c: Component| spec.tensors.iter().any(|t| t.component == c);
        Derived {
            params: ParamCounts::count(spec),
            group_units: groups.iter().map(|g| (g.first, g.count, false)).collect(),
            groups,
            layer_tensors,
            layer_block_numel,
            runs,
            layer_kind,
            walk_kind,
            layer_qk_norm,
            layer_shared_expert_gate,
            has_position_embedding: any(Component::PositionEmbedding),
            has_final_norm: any(Component::FinalNorm),
            has_lm_head: any(Component::LmHead),
            has_attention: spec.layers.iter().any(|l| l.attention.is_some()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(id: &str) -> ModelSpec {
        crate::parse_config(crate::presets::find(id).unwrap().json, None).unwrap()
    }

    #[test]
    fn llama_layers_form_one_run_and_tensors_group_by_shape() {
        let s = spec("meta-llama__Llama-3.1-8B");
        let d = s.derived();
        assert_eq!(
            d.runs,
            vec![LayerRun {
                start: 0,
                count: 32
            }]
        );
        // embed, q/o (4096×4096), k/v (1024×4096), gate/up, down, 2 norms + final norm (4096), lm_head.
        // 32 layers × 9 tensors + embed, final norm, lm_head, kept as one run of 9 entries.
        assert_eq!(s.tensors.len(), 12);
        assert_eq!(d.groups.iter().map(|g| g.count).sum::<u64>(), 32 * 9 + 3);
        assert!(d.groups.len() <= 8, "{:?}", d.groups);
    }

    #[test]
    fn deepseek_v3_splits_dense_and_moe_layers() {
        let s = spec("deepseek-ai__DeepSeek-V3");
        let d = s.derived();
        // first_k_dense_replace = 3: layers 0–2 dense, 3–60 MoE.
        assert_eq!(
            d.runs,
            vec![
                LayerRun { start: 0, count: 3 },
                LayerRun {
                    start: 3,
                    count: 58
                }
            ]
        );
    }

    #[test]
    fn gemma2_alternates_sliding_and_global_layers_of_two_kinds() {
        let s = spec("google__gemma-2-2b");
        let d = s.derived();
        assert_eq!(d.runs.len(), s.layers.len());
        assert!(d.runs.iter().all(|r| r.count == 1));
        let kinds: Vec<usize> = (0..s.layers.len()).map(|i| i % 2).collect();
        assert_eq!(d.layer_kind, kinds);
    }

    #[test]
    fn role_ignores_only_the_layer_index() {
        let t = |name: &str| TensorSpec {
            name: name.into(),
            component: Component::Mlp,
            layer: None,
            repeat: 1,
            stride: 1,
            shape: [2, 2].into(),
            linear: None,
            buffer: false,
        };
        assert!(role_matches(
            &t("m.layers.1.up.weight"),
            1,
            &t("m.layers.12.up.weight"),
            12
        ));
        assert!(!role_matches(
            &t("m.layers.1.up.weight"),
            1,
            &t("m.layers.12.down.weight"),
            12
        ));
        assert!(role_matches(
            &t("h.3.mlp.c_fc.weight"),
            3,
            &t("h.4.mlp.c_fc.weight"),
            4
        ));
    }
}

/// The cache slot inside [`ModelSpec`]: equal for all specs (it only caches what the other fields
/// determine), cloned with its contents.
#[derive(Clone, Debug, Default)]
pub struct DerivedCache(std::sync::OnceLock<Derived>);

impl DerivedCache {
    /// The derived facts of `spec`, computed on the first call.
    pub fn get_or_init(&self, spec: &ModelSpec) -> &Derived {
        self.0.get_or_init(|| Derived::of(spec))
    }
}

impl PartialEq for DerivedCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
