//! The whole estimate for one model and scenario: the document `vram estimate --json` prints, the
//! page exports, and `vram measure` reports embed. Keys are a contract (docs/cli.md): add, never rename.

use crate::params::ParamCounts;
use crate::scenario::Scenario;
use crate::spec::{FfnSpec, ModelKind, ModelSpec};
use serde::{Deserialize, Serialize};

/// Version of the JSON document; bumped only when a key's meaning changes (never for additions).
pub const SCHEMA_VERSION: u32 = 1;

/// The headline facts of a model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelSummary {
    /// Display name.
    pub name: String,
    /// `model_type` of the config.
    pub model_type: String,
    /// Broad structure.
    pub kind: ModelKind,
    /// Residual width.
    pub hidden_size: u64,
    /// Layers of the main stack.
    pub num_layers: u64,
    /// Encoder layers (encoder–decoder models).
    pub num_encoder_layers: u64,
    /// Vocabulary size.
    pub vocab_size: u64,
    /// Query heads of the first attention layer (0 for attention-free models).
    pub num_attention_heads: u64,
    /// Key/value heads of the first attention layer.
    pub num_kv_heads: u64,
    /// Per-head width of queries and keys.
    pub head_dim: u64,
    /// Declared maximum context (0 when none is declared).
    pub max_position_embeddings: u64,
    /// Whether lm_head shares the embedding matrix.
    pub tie_word_embeddings: bool,
    /// Routed experts per MoE layer (0 for dense models).
    pub num_experts: u64,
    /// Experts per token (0 for dense models).
    pub experts_per_token: u64,
    /// Layers that attend through a sliding window.
    pub sliding_window_layers: u64,
    /// Whether attention is DeepSeek-style multi-head latent attention.
    pub mla: bool,
    /// Whether a vision tower is counted.
    pub vision: bool,
    /// How the counts were obtained: `modelled` (an architecture vram resolves exactly), `generic`
    /// (an unknown `model_type` read as a llama-style decoder: counts not verified), or `header`
    /// (a GGUF file's own tensors).
    #[serde(default)]
    pub support: String,
}

impl ModelSummary {
    /// Summarises a spec.
    pub fn of(spec: &ModelSpec) -> Self {
        let first_attention = spec.layers.iter().find_map(|l| l.attention);
        let moe = spec.layers.iter().find_map(|l| match l.ffn {
            Some(FfnSpec::Moe {
                num_experts,
                experts_per_token,
                ..
            }) => Some((num_experts, experts_per_token)),
            _ => None,
        });
        ModelSummary {
            name: spec.name.clone(),
            model_type: spec.model_type.clone(),
            kind: spec.kind,
            hidden_size: spec.hidden_size,
            num_layers: spec.num_layers,
            num_encoder_layers: spec.num_encoder_layers,
            vocab_size: spec.vocab_size,
            num_attention_heads: first_attention.map_or(0, |a| a.num_heads),
            num_kv_heads: first_attention.map_or(0, |a| a.num_kv_heads),
            head_dim: first_attention.map_or(0, |a| a.head_dim),
            max_position_embeddings: spec.max_position_embeddings,
            tie_word_embeddings: spec.tie_word_embeddings,
            num_experts: moe.map_or(0, |m| m.0),
            experts_per_token: moe.map_or(0, |m| m.1),
            sliding_window_layers: spec
                .layers
                .iter()
                .filter(|l| l.attention.is_some_and(|a| a.sliding_window.is_some()))
                .count() as u64,
            mla: first_attention.is_some_and(|a| a.mla.is_some()),
            vision: spec.vision.is_some(),
            support: support_of(spec).into(),
        }
    }
}

/// [`ModelSummary::support`] of a spec.
pub fn support_of(spec: &ModelSpec) -> &'static str {
    if spec.gguf.is_some() || spec.checkpoint.as_ref().is_some_and(|c| c.params > 0) {
        "header"
    } else if crate::KNOWN_MODEL_TYPES.contains(&spec.model_type.as_str()) {
        "modelled"
    } else {
        "generic"
    }
}

/// Which sections to compute.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sections {
    /// The training budget.
    pub train: bool,
    /// The inference budget.
    pub infer: bool,
}

/// The document of `vram estimate --json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Model facts.
    pub model: ModelSummary,
    /// Exact parameter counts.
    pub parameters: ParamCounts,
    /// Assumptions made while reading the config or the scenario.
    pub warnings: Vec<String>,
    /// The inference budget, when requested (docs/formulas/inference.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infer: Option<crate::infer::InferEstimate>,
    /// The count from the checkpoint's safetensors headers, when they were given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<crate::checkpoint::CheckpointCount>,
    /// The training budget, when requested (docs/formulas/training.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub train: Option<crate::train::TrainEstimate>,
    /// The device predicted: written only when it is not the default `cuda` (`"cpu"`).
    #[serde(default, skip_serializing_if = "Device::is_cuda")]
    pub device: Device,
}

/// The device the estimate predicts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Device {
    /// A CUDA GPU: `torch.cuda.max_memory_allocated`, the caching allocator's reserve and the
    /// device total with the CUDA context and cuBLAS workspace.
    #[default]
    Cuda,
    /// The CPU, as `vram measure --device cpu` counts it (exact live-tensor bytes): PyTorch's CPU
    /// kernels' allocations (`train::Counting::CpuExact`: dropout noise in the input's dtype, SDPA
    /// with dropout through the math kernel), no CUDA context or workspace. Only the allocated
    /// figures apply; reserved and device totals are CUDA's notions.
    Cpu,
}

impl Device {
    fn is_cuda(&self) -> bool {
        *self == Device::Cuda
    }

    /// The overheads beyond tensors on this device.
    pub fn overheads(self) -> crate::report::DeviceOverheads {
        match self {
            Device::Cuda => crate::report::DeviceOverheads::default(),
            Device::Cpu => crate::report::DeviceOverheads {
                cuda_context_bytes: 0,
                workspace_bytes: 0,
                torch_fallbacks: true,
            },
        }
    }

    /// How the training model counts allocations on this device.
    pub fn counting(self) -> crate::train::Counting {
        match self {
            Device::Cuda => crate::train::Counting::Cuda,
            Device::Cpu => crate::train::Counting::CpuExact,
        }
    }
}

/// Computes the estimate for `spec` on a CUDA device (the sections are filled in by the training and
/// inference models).
pub fn estimate(spec: &ModelSpec, scenario: &Scenario, sections: Sections) -> Estimate {
    estimate_on(spec, scenario, sections, Device::Cuda)
}

/// [`estimate`] for `device` (`vram estimate --device cpu` compares like for like with
/// `vram measure --device cpu`).
pub fn estimate_on(
    spec: &ModelSpec,
    scenario: &Scenario,
    sections: Sections,
    device: Device,
) -> Estimate {
    let mut warnings = spec.warnings.clone();
    let infer = if sections.infer {
        let overheads = device.overheads();
        match crate::infer::estimate_inference(spec, scenario, &overheads) {
            Ok(i) => Some(i),
            Err(err) => {
                warnings.push(format!("inference estimate not computed: {err}"));
                None
            }
        }
    } else {
        None
    };
    let mut parameters = ParamCounts::of(spec);
    if let Some(g) = &spec.gguf {
        // a GGUF file's own tensors are the count (its metadata reading may differ)
        parameters.total = g.params;
    }
    if let Some(c) = spec.checkpoint.as_ref().filter(|c| c.params > 0) {
        parameters.total = c.params;
    }
    let train = if sections.train {
        let overheads = device.overheads();
        match crate::train::estimate_training_counting(
            spec,
            scenario,
            &overheads,
            device.counting(),
        ) {
            Ok(t) => {
                parameters.trainable = t.trainable_params;
                Some(t)
            }
            Err(err) => {
                warnings.push(format!("training estimate not computed: {err}"));
                None
            }
        }
    } else {
        None
    };
    Estimate {
        schema_version: SCHEMA_VERSION,
        model: ModelSummary::of(spec),
        parameters,
        warnings,
        infer,
        checkpoint: spec.checkpoint.as_deref().cloned(),
        train,
        device,
    }
}
