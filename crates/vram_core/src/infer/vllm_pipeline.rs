//! vLLM pipeline parallelism (`--pipeline-parallel-size`): each stage holds its layers (the first
//! the embedding, the last the final norm and `lm_head`, and a tied model's last stage its own copy
//! of the embedding), caches only its layers' K/V, and profiles its own activations; the engine
//! takes the smallest KV pool of all workers (`min(num_gpu_blocks)` over the workers).
//!
//! Sources:
//! - layer split: `vllm/distributed/utils.py get_pp_indices` — `num_layers // pp` each, the
//!   remainder one extra layer to each of the stages before the last;
//! - embedding on the first rank, and on the last when tied
//!   (`vllm/model_executor/models/llama.py LlamaModel.__init__`: `if get_pp_group().is_first_rank
//!   or (config.tie_word_embeddings and get_pp_group().is_last_rank)`), `lm_head` on the last;
//! - activations: the sampler's logits only on the last rank; every rank allocates the
//!   `IntermediateTensors` it sends or receives (hidden states and residual, `tokens × hidden`
//!   each). Measured: Llama-3.1-8B on H100 (vLLM 0.19, llm-d-planner logs, measured.md H5)
//!   weights 7.51 / 4.26 GiB per GPU and activations 1.10 / 1.05 GiB at PP 2 / 4.

use super::kv_cache::{distinct, KvLayout, LayerCache};
use super::vllm::ActivationPeak;
use crate::scenario::{Dtype, ServingInputs};
use crate::spec::{Component, ModelSpec};
use crate::units::group_thousands;

/// The stage whose KV pool is the smallest, with what it holds.
pub(crate) struct Stage {
    /// Weights on one GPU of the stage.
    pub weights_bytes: u64,
    /// Of them, K/V projections replicated over TP.
    pub kv_replica_bytes: u64,
    /// Its profiled activation peak.
    pub activation_bytes: u64,
    /// Its layers' caches: `(cache, bytes per token, layers)`.
    pub per_layer: Vec<(LayerCache, u64, u64)>,
    /// One line naming the stage.
    pub note: String,
}

/// Layers of each stage (`get_pp_indices`).
pub fn stage_layers(layers: u64, pp: u64) -> Vec<u64> {
    let pp = pp.max(1);
    let mut parts = vec![layers / pp; pp as usize];
    let rest = (layers % pp) as usize;
    let n = parts.len();
    for i in 2..rest + 2 {
        if let Some(p) = n.checked_sub(i).and_then(|j| parts.get_mut(j)) {
            *p += 1;
        }
    }
    parts
}

/// The binding stage of a TP × PP deployment (see the module documentation). `weights_tp` is the
/// whole model's weights per GPU at TP alone (with `rope` and `kv_replicas` in it).
#[allow(clippy::too_many_arguments)]
pub(crate) fn binding_stage(
    spec: &ModelSpec,
    s: &ServingInputs,
    kv: &KvLayout,
    dtype: Dtype,
    tp: u64,
    requested: u64,
    non_torch: u64,
    act: &ActivationPeak,
    weights_tp: u64,
    rope: u64,
    kv_replicas: u64,
) -> Stage {
    let pp = s.pipeline_parallel_size.max(1);
    let layers = kv.layers.len().max(spec.layers.len()) as u64;
    let parts = stage_layers(layers, pp);
    let e = dtype.bytes();
    // Parameters outside the layers, per GPU (split by TP except the norms).
    let outside = |c: Component| -> u64 {
        spec.tensors
            .iter()
            .filter(|t| t.layer.is_none() && t.component == c)
            .map(|t| t.numel().saturating_mul(t.count()))
            .sum::<u64>()
    };
    let embed = (outside(Component::Embedding) + outside(Component::PositionEmbedding))
        .saturating_mul(e)
        / tp;
    let head = outside(Component::LmHead).saturating_mul(e) / tp;
    let final_norm = outside(Component::FinalNorm).saturating_mul(e);
    let other =
        (outside(Component::Vision) + outside(Component::Projector) + outside(Component::Head))
            .saturating_mul(e);
    let layer_bytes = weights_tp
        .saturating_sub(rope)
        .saturating_sub(kv_replicas)
        .saturating_sub(embed + head + final_norm + other);
    let tied_copy = if spec.tie_word_embeddings && outside(Component::LmHead) == 0 {
        outside(Component::Embedding).saturating_mul(e) / tp
    } else {
        0
    };
    let hidden_buffers = s
        .max_num_batched_tokens
        .saturating_mul(spec.hidden_size)
        .saturating_mul(e)
        .saturating_mul(2);
    let mut best: Option<(u64, Stage)> = None;
    let mut first = 0usize;
    for (i, &n) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        // (clamped: a cache layout shorter than the layer list never indexes past its end)
        let start = first.min(kv.layers.len());
        let range = start..(first + n as usize).min(kv.layers.len());
        first += n as usize;
        let share = |b: u64| b.saturating_mul(n) / layers.max(1);
        let mut weights = share(layer_bytes) + share(kv_replicas) + rope;
        if i == 0 {
            weights += embed + other;
        }
        if last {
            weights += head + final_norm + tied_copy;
        }
        let activation = if last {
            act.total
        } else {
            act.without_sampler()
        }
        .saturating_add(hidden_buffers);
        let per_layer: Vec<(LayerCache, u64, u64)> = distinct(&kv.layers[range])
            .into_iter()
            .map(|(l, c)| (l, kv.layer_bytes_per_token(&l), c))
            .filter(|(_, b, _)| *b > 0)
            .collect();
        let per_token: u64 = per_layer.iter().map(|(_, b, c)| b * c).sum();
        let pool = requested.saturating_sub(weights + activation + non_torch);
        // Tokens the stage can cache (the engine's min over workers); a stage short of memory binds.
        let capacity = pool.checked_div(per_token).unwrap_or(u64::MAX);
        let stage = Stage {
            weights_bytes: weights,
            kv_replica_bytes: share(kv_replicas),
            activation_bytes: activation,
            per_layer,
            note: format!(
                "pipeline stage {i} of {pp} ({n} layers{}{}): the smallest KV pool of the workers",
                if i == 0 { ", embedding" } else { "" },
                if last { ", lm_head and sampler" } else { "" }
            ),
        };
        let binds = match &best {
            None => true,
            Some((cap, _)) => capacity < *cap,
        };
        if binds {
            best = Some((capacity, stage));
        }
    }
    let (_, mut stage) = best.unwrap_or((
        0,
        Stage {
            weights_bytes: weights_tp,
            kv_replica_bytes: kv_replicas,
            activation_bytes: act.total,
            per_layer: Vec::new(),
            note: String::new(),
        },
    ));
    stage.note.push_str(&format!(
        "; intermediate tensors 2 × {} tokens × {} × {e} B = {} B",
        group_thousands(s.max_num_batched_tokens),
        spec.hidden_size,
        group_thousands(hidden_buffers)
    ));
    stage
}
