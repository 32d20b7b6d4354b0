//! The parallel layout of a training run: how `Scenario::gpus` GPUs split the model and the data.
//!
//! One shape for every framework, so the CLI, the page and the planner speak the same words:
//! - data parallel `dp = gpus / (tp · pp · cp)`, sharded by DeepSpeed ZeRO (`Scenario::zero`), by
//!   FSDP2 `fully_shard` ([`Layout::fsdp2`], HSDP with [`Layout::hsdp_replicas`]) or by Megatron's
//!   distributed optimizer ([`Layout::distributed_optimizer`]);
//! - tensor parallel `tp` (Megatron `--tensor-model-parallel-size`), with sequence parallel;
//! - pipeline parallel `pp` with `vpp` virtual stages per rank (interleaved 1F1B) and optionally
//!   uneven first / last stages (`--decoder-first-pipeline-num-layers` / `-last-`);
//! - context parallel `cp` (the sequence split across ranks, ring attention);
//! - expert parallel `ep` with expert-tensor parallel `etp` for MoE layers (Megatron folds
//!   `ep · etp` out of `tp · cp · dp`: megatron/core/parallel_state.py `initialize_model_parallel`,
//!   "expert_tensor_parallel_size × expert_model_parallel_size × expert_data_parallel_size =
//!   tensor × context × data").
//!
//! The default layout (everything 1, HF framework) is the single-process-per-GPU data parallel run
//! the estimator always modelled; it serialises to nothing, so older scenarios and links are
//! unchanged.

use crate::error::ScenarioError;
use crate::spec::{FfnSpec, ModelSpec};
use serde::{Deserialize, Serialize};

/// The training framework whose allocations are modelled: they differ in what each rank keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Framework {
    /// HF transformers' `Trainer` (with accelerate / DeepSpeed / FSDP2): one process per GPU,
    /// data parallel only.
    #[default]
    Hf,
    /// Megatron-core (Megatron-LM, NeMo, Megatron-Bridge): TP/SP/PP/VPP/CP/EP, bf16 params with
    /// fp32 main gradients, fused Adam.
    Megatron,
    /// torchtitan: FSDP2 `fully_shard` per block, DTensor TP with sequence parallel,
    /// `torch.distributed.pipelining`.
    Torchtitan,
}

impl Framework {
    /// The name the CLI and the JSON use.
    pub fn name(self) -> &'static str {
        match self {
            Framework::Hf => "hf",
            Framework::Megatron => "megatron",
            Framework::Torchtitan => "torchtitan",
        }
    }
}

/// Megatron's transformer implementation (`--transformer-impl`): what a layer saves for backward.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TransformerImpl {
    /// Transformer Engine (the default of Megatron-core): fused SwiGLU saves fc1's output and its
    /// activation (3 × ffn per token); the attention output is the projection's input.
    #[default]
    TransformerEngine,
    /// The local (legacy `megatron/model`) layer: SwiGLU as `silu(x0) * x1` saves fc1's output,
    /// silu's output and the product (4 × ffn); flash-attn's output is made contiguous again for
    /// the projection (one more hidden-size tensor).
    Local,
}

/// Activation recomputation (Megatron `--recompute-granularity`; HF `gradient_checkpointing`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Recompute {
    /// Every activation saved (HF: `Scenario::grad_checkpointing` still decides).
    #[default]
    None,
    /// Megatron selective: the attention core is recomputed (`--recompute-modules core_attn`).
    Selective,
    /// Every layer keeps only its input (Megatron `--recompute-granularity full
    /// --recompute-method uniform --recompute-num-layers 1`; HF gradient checkpointing).
    Full,
}

/// How the GPUs of a training run are laid out. Every count is ≥ 1; see the module documentation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Layout {
    /// Framework profile.
    pub framework: Framework,
    /// Nodes (only the NVLink domain of TP and the launch lines depend on it).
    pub nodes: u64,
    /// Tensor-parallel size.
    pub tp: u64,
    /// Sequence parallel (Megatron `--sequence-parallel`; torchtitan always uses it with TP).
    pub sequence_parallel: bool,
    /// Pipeline-parallel size.
    pub pp: u64,
    /// Virtual pipeline stages per rank (interleaved schedule); 1 = plain 1F1B.
    pub vpp: u64,
    /// Layers of the first pipeline stage when uneven (0 = even split).
    pub first_stage_layers: u64,
    /// Layers of the last pipeline stage when uneven (0 = even split).
    pub last_stage_layers: u64,
    /// Context-parallel size.
    pub cp: u64,
    /// Expert-parallel size (MoE).
    pub ep: u64,
    /// Expert-tensor-parallel size (MoE; Megatron `--expert-tensor-parallel-size`, default = tp
    /// when 0).
    pub etp: u64,
    /// FSDP2 `fully_shard` over the data-parallel ranks (HF accelerate, torchtitan).
    pub fsdp2: bool,
    /// FSDP2 `reshard_after_forward` (true: free each block's gathered weights after its forward).
    pub reshard_after_forward: bool,
    /// HSDP: data-parallel replicas, each sharding over `dp / hsdp_replicas` ranks (1 = FSDP).
    pub hsdp_replicas: u64,
    /// Megatron's distributed optimizer (ZeRO-1 over data × context parallel ranks).
    pub distributed_optimizer: bool,
    /// Activation recomputation.
    pub recompute: Recompute,
    /// Sequences per optimizer step over all data-parallel ranks (0: micro-batch × dp ×
    /// accumulation, i.e. `Scenario::grad_accumulation` decides).
    pub global_batch: u64,
    /// Megatron's layer implementation.
    pub transformer_impl: TransformerImpl,
    /// Megatron's default dropout (`--hidden-dropout 0.1 --attention-dropout 0.1`, the
    /// pretrain_gpt.py defaults) is on: each layer saves two 1-byte hidden-size masks per token.
    /// Off for recipes that set both to 0 (Llama-style models, Megatron-Bridge's HF conversions).
    pub dropout: bool,
}

impl Default for Layout {
    fn default() -> Self {
        Layout {
            framework: Framework::Hf,
            nodes: 1,
            tp: 1,
            sequence_parallel: false,
            pp: 1,
            vpp: 1,
            first_stage_layers: 0,
            last_stage_layers: 0,
            cp: 1,
            ep: 1,
            etp: 0,
            fsdp2: false,
            reshard_after_forward: true,
            hsdp_replicas: 1,
            distributed_optimizer: false,
            recompute: Recompute::None,
            global_batch: 0,
            transformer_impl: TransformerImpl::TransformerEngine,
            dropout: false,
        }
    }
}

fn invalid(field: &str, expected: impl Into<String>, found: impl ToString) -> ScenarioError {
    ScenarioError::Invalid {
        field: field.into(),
        expected: expected.into(),
        found: found.to_string(),
    }
}

/// Routed experts of the model's MoE layers (0 when dense).
pub fn num_experts(spec: &ModelSpec) -> u64 {
    spec.layers
        .iter()
        .find_map(|l| match l.ffn {
            Some(FfnSpec::Moe { num_experts, .. }) => Some(num_experts),
            _ => None,
        })
        .unwrap_or(0)
}

impl Layout {
    /// Whether this is the plain data-parallel layout (serialised as nothing).
    pub fn is_default(&self) -> bool {
        *self == Layout::default()
    }

    /// Whether the per-rank model of `train::ranks` applies (any model parallelism, FSDP2, or a
    /// framework other than HF's, whose allocations differ even on one GPU).
    pub fn is_model_parallel(&self) -> bool {
        self.tp > 1
            || self.pp > 1
            || self.cp > 1
            || self.ep > 1
            || self.fsdp2
            || self.framework != Framework::Hf
    }

    /// Model-parallel GPUs of one replica: `tp · pp · cp`.
    pub fn model_parallel_size(&self) -> u64 {
        self.tp
            .saturating_mul(self.pp)
            .saturating_mul(self.cp)
            .max(1)
    }

    /// Data-parallel size on `gpus` GPUs (valid layouts divide exactly).
    pub fn dp(&self, gpus: u64) -> u64 {
        (gpus / self.model_parallel_size()).max(1)
    }

    /// Expert-tensor-parallel size (`etp`, or `tp` when unset).
    pub fn etp(&self) -> u64 {
        if self.etp == 0 {
            self.tp
        } else {
            self.etp
        }
    }

    /// Ranks that share one expert's shard: expert data parallel = `tp·cp·dp / (ep·etp)`.
    pub fn expert_dp(&self, gpus: u64) -> u64 {
        let n = self
            .tp
            .saturating_mul(self.cp)
            .saturating_mul(self.dp(gpus));
        (n / self.ep.saturating_mul(self.etp()).max(1)).max(1)
    }

    /// Micro-batches per optimizer step per data-parallel rank: `global_batch / (micro · dp)`, or
    /// `grad_accumulation` when no global batch is set.
    pub fn micro_batches(&self, gpus: u64, micro_batch: u64, grad_accumulation: u64) -> u64 {
        if self.global_batch == 0 {
            grad_accumulation.max(1)
        } else {
            (self.global_batch / micro_batch.saturating_mul(self.dp(gpus)).max(1)).max(1)
        }
    }

    /// Layers of each pipeline stage, first to last (`pp` entries summing to `layers`). Uneven first
    /// / last stages take their stated counts and the rest split the remainder evenly (Megatron
    /// `--decoder-first-pipeline-num-layers`, `--decoder-last-pipeline-num-layers`); an even split
    /// that leaves a remainder gives the earlier stages one more layer (torch pipelining's default
    /// split does the same).
    pub fn stage_layers(&self, layers: u64) -> Vec<u64> {
        let pp = self.pp.max(1);
        if pp == 1 {
            return vec![layers];
        }
        let mut fixed = vec![0u64; pp as usize];
        let mut rest = layers;
        let mut free = pp;
        if self.first_stage_layers > 0 {
            fixed[0] = self.first_stage_layers;
            rest = rest.saturating_sub(self.first_stage_layers);
            free -= 1;
        }
        if self.last_stage_layers > 0 {
            let last = (pp - 1) as usize;
            fixed[last] = self.last_stage_layers;
            rest = rest.saturating_sub(self.last_stage_layers);
            free -= 1;
        }
        let (each, extra) = match (rest.checked_div(free), rest.checked_rem(free)) {
            (Some(each), Some(extra)) => (each, extra),
            _ => (0, 0),
        };
        let mut given = 0;
        for (i, f) in fixed.iter_mut().enumerate() {
            let is_fixed = (i == 0 && self.first_stage_layers > 0)
                || (i as u64 == pp - 1 && self.last_stage_layers > 0);
            if !is_fixed {
                *f = each + u64::from(given < extra);
                given += 1;
            }
        }
        fixed
    }

    /// Checks the layout against `gpus` and the model; every message names the flag and the
    /// constraint it breaks.
    pub fn validate(&self, gpus: u64, spec: Option<&ModelSpec>) -> Result<(), ScenarioError> {
        let max = crate::scenario::MAX_SCENARIO_VALUE;
        for (field, v) in [
            ("nodes", self.nodes),
            ("tp", self.tp),
            ("pp", self.pp),
            ("vpp", self.vpp),
            ("cp", self.cp),
            ("ep", self.ep),
            ("hsdp_replicas", self.hsdp_replicas),
        ] {
            if v == 0 || v > max {
                return Err(invalid(field, format!("an integer from 1 to {max}"), v));
            }
        }
        if self.etp > max {
            return Err(invalid("etp", format!("0 (= tp) or 1 to {max}"), self.etp));
        }
        if !gpus.is_multiple_of(self.nodes) {
            return Err(invalid(
                "nodes",
                format!("a divisor of the {gpus} GPUs (GPUs per node × nodes)"),
                self.nodes,
            ));
        }
        let mp = self.model_parallel_size();
        if !gpus.is_multiple_of(mp) {
            return Err(invalid(
                "gpus",
                format!(
                    "a multiple of tp × pp × cp = {} × {} × {} = {mp}",
                    self.tp, self.pp, self.cp
                ),
                gpus,
            ));
        }
        let dp = self.dp(gpus);
        if self.framework == Framework::Hf && (self.pp > 1 || self.cp > 1) {
            return Err(invalid(
                "framework",
                "megatron or torchtitan for pipeline or context parallelism (HF transformers trains with data parallelism and its own tensor parallelism)",
                "hf",
            ));
        }
        if self.framework == Framework::Hf && self.ep > 1 {
            return Err(invalid(
                "framework",
                "megatron or torchtitan for expert parallelism (HF Trainer runs data parallel)",
                "hf",
            ));
        }
        if self.fsdp2 && self.framework == Framework::Megatron {
            return Err(invalid(
                "fsdp2",
                "hf or torchtitan (Megatron's own sharding is --distributed-optimizer)",
                "megatron",
            ));
        }
        if self.distributed_optimizer && self.framework != Framework::Megatron {
            return Err(invalid(
                "distributed_optimizer",
                "--framework megatron (its ZeRO-1 optimizer); use --zero or --fsdp2 elsewhere",
                self.framework.name(),
            ));
        }
        if self.hsdp_replicas > 1 && (!self.fsdp2 || !dp.is_multiple_of(self.hsdp_replicas)) {
            return Err(invalid(
                "hsdp_replicas",
                format!("a divisor of the data-parallel size {dp}, with --fsdp2"),
                self.hsdp_replicas,
            ));
        }
        if self.sequence_parallel && self.tp == 1 {
            return Err(invalid(
                "sequence_parallel",
                "tp > 1 (sequence parallel splits what tensor parallel replicates)",
                "tp 1",
            ));
        }
        if self.vpp > 1 && self.pp == 1 {
            return Err(invalid(
                "vpp",
                "pp > 1 (virtual stages interleave a pipeline)",
                self.vpp,
            ));
        }
        let Some(spec) = spec else { return Ok(()) };
        let layers = spec.layers.len() as u64;
        if self.pp > layers {
            return Err(invalid(
                "pp",
                format!("at most the model's {layers} layers (each stage needs a layer)"),
                self.pp,
            ));
        }
        if self.first_stage_layers + self.last_stage_layers > layers
            || (self.first_stage_layers + self.last_stage_layers == layers && self.pp > 2)
        {
            return Err(invalid(
                "first_stage_layers",
                format!("uneven first/last stages leaving layers for the other stages of {layers}"),
                format!("{} + {}", self.first_stage_layers, self.last_stage_layers),
            ));
        }
        if self.vpp > 1 {
            let stages = self.stage_layers(layers);
            if let Some(bad) = stages.iter().find(|&&n| n % self.vpp != 0) {
                return Err(invalid(
                    "vpp",
                    format!("a divisor of every stage's layers (a stage has {bad})"),
                    self.vpp,
                ));
            }
        }
        if let Some(a) = spec.layers.iter().find_map(|l| l.attention) {
            if self.tp > 1 && a.num_heads % self.tp != 0 {
                return Err(invalid(
                    "tp",
                    format!("a divisor of the {} attention heads", a.num_heads),
                    self.tp,
                ));
            }
            if self.tp > 1 && a.mla.is_none() && a.num_kv_heads % self.tp != 0 {
                return Err(invalid(
                    "tp",
                    format!(
                        "a divisor of the {} key/value heads (Megatron and DTensor split K/V heads; num_query_groups % tp == 0)",
                        a.num_kv_heads
                    ),
                    self.tp,
                ));
            }
        }
        let experts = num_experts(spec);
        if self.ep > 1 && (experts == 0 || !experts.is_multiple_of(self.ep)) {
            return Err(invalid(
                "ep",
                if experts == 0 {
                    "1 for a dense model (expert parallel splits MoE experts)".to_string()
                } else {
                    format!("a divisor of the {experts} experts")
                },
                self.ep,
            ));
        }
        let expert_group = self.ep.saturating_mul(self.etp());
        let dense_group = self.tp.saturating_mul(self.cp).saturating_mul(dp);
        if self.ep > 1 && !dense_group.is_multiple_of(expert_group) {
            return Err(invalid(
                "ep",
                format!(
                    "ep × etp dividing tp × cp × dp = {dense_group} (Megatron folds the expert groups out of the dense ones)"
                ),
                format!("{} × {}", self.ep, self.etp()),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_split_gives_earlier_stages_the_remainder() {
        let l = Layout {
            pp: 3,
            ..Layout::default()
        };
        assert_eq!(l.stage_layers(32), vec![11, 11, 10]);
    }

    #[test]
    fn uneven_first_and_last_stages_take_their_counts() {
        let l = Layout {
            pp: 4,
            first_stage_layers: 6,
            last_stage_layers: 6,
            ..Layout::default()
        };
        assert_eq!(l.stage_layers(32), vec![6, 10, 10, 6]);
    }

    #[test]
    fn layout_that_does_not_divide_the_gpus_names_the_product() {
        let l = Layout {
            framework: Framework::Megatron,
            tp: 4,
            pp: 3,
            ..Layout::default()
        };
        let err = l.validate(16, None).unwrap_err().to_string();
        assert_eq!(
            err,
            "gpus: expected a multiple of tp × pp × cp = 4 × 3 × 1 = 12, found 16"
        );
    }
}
