//! The training estimate of a parallel layout: the per-rank figures of [`super::ranks`] with the
//! largest rank as the headline, and the single entry of the plain data-parallel layout.

use super::ranks::{self, RankEstimate};
use super::{estimate_training_counting, term, Counting, TrainEstimate};
use crate::error::ScenarioError;
use crate::layout::{Framework, Layout};
use crate::report::{DeviceOverheads, Phase};
use crate::scenario::{Scenario, ZeroStage};
use crate::spec::ModelSpec;
use crate::units::group_thousands as g;

impl TrainEstimate {
    /// Adds the one rank kind of the plain data-parallel layout (every GPU alike).
    pub(super) fn with_plain_rank(
        mut self,
        spec: &ModelSpec,
        scenario: &Scenario,
        overheads: &DeviceOverheads,
    ) -> Self {
        let nccl = self.device_bytes.saturating_sub(
            self.peak_reserved_bytes
                .saturating_add(overheads.cuda_context_bytes)
                .saturating_add(overheads.workspace_bytes),
        );
        self.ranks = vec![RankEstimate {
            stage: 0,
            last_stage: 0,
            role: "embedding+head".into(),
            tp_rank_kind: "whole layers".into(),
            count: scenario.gpus.max(1),
            layers: spec.layers.len() as u64,
            params: self.trainable_params.saturating_add(self.frozen_params),
            weights_bytes: self.weights_bytes,
            gradients_bytes: self.gradients_bytes,
            peak_gradients_bytes: self.gradients_bytes,
            optimizer_bytes: self.optimizer_bytes,
            activations_bytes: self.activations_bytes,
            in_flight_micro_batches: 1,
            communication_bytes: self.buffers_bytes,
            nccl_bytes: nccl,
            forward_peak_bytes: phase_peak(&self.phases, &["forward", "forward_2"]),
            backward_peak_bytes: phase_peak(&self.phases, &["backward", "backward_2"]),
            optimizer_peak_bytes: phase_peak(&self.phases, &["optimizer", "optimizer_2"]),
            peak_allocated_bytes: self.peak_allocated_bytes,
            peak_reserved_bytes: self.peak_reserved_bytes,
            device_bytes: self.device_bytes,
            peak_phase: self.peak_phase.clone(),
            host_bytes: self.cpu_offload_bytes,
        }];
        self.max_rank_device_bytes = self.device_bytes;
        self.framework = scenario.layout.framework.name().into();
        self
    }
}

pub(super) fn phase_peak(phases: &[Phase], names: &[&str]) -> u64 {
    phases
        .iter()
        .filter(|p| names.contains(&p.name.as_str()))
        .map(|p| p.peak_allocated_bytes)
        .max()
        .unwrap_or(0)
}

/// The steady-state phases of one rank kind (the second step's: the optimizer states exist from
/// its start). Every figure has the rank's model states; activations and communication buffers
/// live through forward and backward.
pub fn rank_phases(top: &RankEstimate) -> Vec<Phase> {
    let persistent = top.weights_bytes + top.gradients_bytes + top.optimizer_bytes;
    ["forward_2", "backward_2", "optimizer_2"]
        .iter()
        .zip([
            top.forward_peak_bytes,
            top.backward_peak_bytes,
            top.optimizer_peak_bytes,
        ])
        .map(|(name, peak)| {
            let step = *name == "optimizer_2";
            let acts = if step { 0 } else { top.activations_bytes };
            // the gradients live at this phase's peak
            let grads = if step {
                top.gradients_bytes
            } else {
                top.peak_gradients_bytes
            };
            let comm = if step { 0 } else { top.communication_bytes };
            let held = top.weights_bytes + grads + top.optimizer_bytes;
            Phase {
                name: (*name).into(),
                allocated_bytes: persistent,
                peak_allocated_bytes: peak,
                components: vec![
                    ("weights".into(), top.weights_bytes),
                    ("gradients".into(), grads),
                    ("optimizer".into(), top.optimizer_bytes),
                    ("activations".into(), acts),
                    ("communication".into(), comm),
                    ("transient".into(), peak.saturating_sub(held + acts + comm)),
                ],
            }
        })
        .collect()
}

/// The estimate of a model-parallel (or FSDP2) layout: every rank kind, the largest as headline.
pub(super) fn estimate(
    spec: &ModelSpec,
    scenario: &Scenario,
    overheads: &DeviceOverheads,
    counting: Counting,
) -> Result<TrainEstimate, ScenarioError> {
    // The HF framework: the same step on one GPU gives the activations per rank and the model
    // states that FSDP2 shards. The other frameworks are modelled from the tensors alone.
    // Under transformers' tensor parallelism that step is the one of a rank's part of the model
    // (its heads and MLP share, whole norms; `hf_tp`).
    let rank_part = if scenario.layout.framework == Framework::Hf && scenario.layout.tp > 1 {
        if scenario.lora.is_some() {
            return Err(ScenarioError::Invalid {
                field: "lora".into(),
                expected: "no LoRA with --framework hf --tp (peft adapters on transformers' tensor-parallel modules are not modelled)".into(),
                found: "LoRA".into(),
            });
        }
        if scenario.zero.0 > 0 || scenario.offload_optimizer || scenario.offload_params {
            return Err(ScenarioError::Invalid {
                field: "zero".into(),
                expected: "ZeRO 0 without offload with --framework hf --tp (transformers' tensor parallelism combines with FSDP2: --fsdp2)".into(),
                found: format!("ZeRO stage {}{}", scenario.zero.0, if scenario.offload_optimizer || scenario.offload_params { " with offload" } else { "" }),
            });
        }
        Some(super::hf_tp::rank_spec(spec, scenario.layout.tp)?)
    } else {
        None
    };
    let single = if scenario.layout.framework == Framework::Hf {
        let one_spec = rank_part.as_ref().unwrap_or(spec);
        let one_gpu = Scenario {
            gpus: 1,
            zero: ZeroStage(0),
            offload_optimizer: false,
            offload_params: false,
            layout: Layout::default(),
            ..scenario.clone()
        };
        Some(estimate_training_counting(
            one_spec, &one_gpu, overheads, counting,
        )?)
    } else {
        None
    };
    let ranks = ranks::ranks(spec, scenario, overheads, single.as_ref(), counting)?;
    let counts = &spec.derived().params;
    let (trainable_params, frozen_params, param_bytes, compute_bytes, autocast) = match &single {
        Some(s) => (
            s.trainable_params,
            s.frozen_params,
            s.param_bytes,
            s.compute_bytes,
            s.autocast,
        ),
        None => {
            let half = scenario.mixed_precision != crate::scenario::MixedPrecision::None
                || scenario.dtype != crate::scenario::Dtype::Fp32;
            let e = if half { 2 } else { 4 };
            (
                counts.trainable,
                counts.total.saturating_sub(counts.trainable),
                e,
                e,
                false,
            )
        }
    };
    let top = ranks
        .iter()
        .max_by_key(|r| r.device_bytes)
        .cloned()
        .unwrap_or_default();
    let layout = &scenario.layout;
    let gpus = scenario.gpus.max(1);
    let dp = layout.dp(gpus);
    // Steady-state phases: every figure has the optimizer states and the gradient buffers
    // (Megatron allocates its fp32 main-gradient buffer with the model).
    let phases = rank_phases(&top);
    let layout_line = format!(
        "{} GPUs = tp {} × pp {}{} × cp {} × dp {dp}{}{}{}; {} framework",
        gpus,
        layout.tp,
        layout.pp,
        if layout.vpp > 1 {
            format!(" (vpp {})", layout.vpp)
        } else {
            String::new()
        },
        layout.cp,
        if layout.ep > 1 {
            format!(", ep {} × etp {}", layout.ep, layout.etp())
        } else {
            String::new()
        },
        if layout.sequence_parallel {
            ", sequence parallel"
        } else {
            ""
        },
        if layout.fsdp2 {
            if layout.hsdp_replicas > 1 {
                format!(", HSDP {} replicas", layout.hsdp_replicas)
            } else {
                ", FSDP2".to_string()
            }
        } else if layout.distributed_optimizer {
            ", distributed optimizer".to_string()
        } else {
            String::new()
        },
        layout.framework.name()
    );
    let stage_name = |r: &RankEstimate| {
        if r.stage == r.last_stage {
            format!("stage {}", r.stage)
        } else {
            format!("stages {}–{}", r.stage, r.last_stage)
        }
    };
    let source = "train/ranks.rs; docs/formulas/parallel.md";
    let mut terms = vec![term(
        "layout",
        0,
        format!(
            "{layout_line}; {} rank kinds: {}",
            ranks.len(),
            ranks
                .iter()
                .map(|r| format!(
                    "{} ({}, {} layers, {} params, {} B on the device)",
                    stage_name(r),
                    r.role,
                    r.layers,
                    g(r.params),
                    g(r.device_bytes)
                ))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        source,
    )];
    let largest = format!("largest rank, {}", stage_name(&top));
    terms.push(term(
        "weights",
        top.weights_bytes,
        format!(
            "{largest}: {} local params → {} B",
            g(top.params),
            g(top.weights_bytes)
        ),
        source,
    ));
    terms.push(term(
        "gradients",
        top.gradients_bytes,
        format!("{largest}: {} B", g(top.gradients_bytes)),
        source,
    ));
    terms.push(term(
        "optimizer",
        top.optimizer_bytes,
        format!("{largest}: {} B", g(top.optimizer_bytes)),
        source,
    ));
    terms.push(term(
        "activations_layers",
        top.activations_bytes,
        format!(
            "{largest}: {} micro-batches in flight × the stage's saved tensors = {} B",
            top.in_flight_micro_batches,
            g(top.activations_bytes)
        ),
        source,
    ));
    terms.push(term(
        "communication",
        top.communication_bytes,
        format!(
            "{largest}: pipeline send/receive, TP all-gather, FSDP2 gathered blocks and reduce-scatter = {} B",
            g(top.communication_bytes)
        ),
        source,
    ));
    terms.push(term(
        "nccl",
        top.nccl_bytes,
        format!(
            "{} communicators × {} B (outside the caching allocator)",
            top.nccl_bytes / ranks::NCCL_BYTES_PER_COMMUNICATOR,
            g(ranks::NCCL_BYTES_PER_COMMUNICATOR)
        ),
        "NCCL_BUFFSIZE 4 MiB (NCCL environment variables); docs/formulas/parallel.md §NCCL",
    ));
    terms.push(term(
        "peak_allocated",
        top.peak_allocated_bytes,
        format!(
            "{largest}: {} peak = {} B",
            top.peak_phase,
            g(top.peak_allocated_bytes)
        ),
        source,
    ));
    terms.push(term(
        "device_total",
        top.device_bytes,
        format!(
            "reserved {} B + CUDA context {} B + cuBLAS workspace {} B + NCCL {} B = {} B",
            g(top.peak_reserved_bytes),
            g(overheads.cuda_context_bytes),
            g(overheads.workspace_bytes),
            g(top.nccl_bytes),
            g(top.device_bytes)
        ),
        source,
    ));
    let max_rank_device_bytes = top.device_bytes;
    Ok(TrainEstimate {
        weights_bytes: top.weights_bytes,
        gradients_bytes: top.gradients_bytes,
        optimizer_bytes: top.optimizer_bytes,
        activations_bytes: top.activations_bytes,
        optimizer_temp_bytes: top
            .optimizer_peak_bytes
            .saturating_sub(top.weights_bytes + top.gradients_bytes + top.optimizer_bytes),
        buffers_bytes: top.communication_bytes,
        peak_allocated_bytes: top.peak_allocated_bytes,
        peak_phase: format!("{}_2", top.peak_phase),
        peak_reserved_bytes: top.peak_reserved_bytes,
        device_bytes: top.device_bytes,
        cuda_context_bytes: overheads.cuda_context_bytes,
        workspace_bytes: overheads.workspace_bytes,
        trainable_params,
        frozen_params,
        param_bytes,
        compute_bytes,
        autocast,
        gpus,
        zero_stage: scenario.zero.0,
        cpu_offload_bytes: top.host_bytes,
        activation_breakdown: vec![("layers".into(), top.activations_bytes)],
        phases,
        terms,
        ranks,
        max_rank_device_bytes,
        framework: layout.framework.name().into(),
        backward_moments: Default::default(),
    })
}
