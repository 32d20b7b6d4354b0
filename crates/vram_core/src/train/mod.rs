//! The training memory model: one step of HF `transformers` training (optionally with peft LoRA /
//! QLoRA, DeepSpeed ZeRO, CPU offload, gradient accumulation), per phase, with three totals:
//! peak allocated (`torch.cuda.max_memory_allocated`), peak reserved (the caching allocator) and the
//! device total `nvidia-smi` shows (reserved + CUDA context + cuBLAS workspace).
//!
//! Every component is derived from tensors (see the submodules' sources); docs/formulas/training.md
//! explains each term.

pub mod activations;
pub mod allocator;
mod few;
pub mod hf_tp;
pub mod lora;
mod parallel;
pub mod persistent;
pub mod phases;
pub mod ranks;
pub mod sim;
pub mod solve;
pub mod zero;

use crate::error::ScenarioError;
use crate::report::{DeviceOverheads, Phase, Term};
use crate::scenario::{Optimizer, Scenario};
use crate::spec::ModelSpec;
use crate::units::group_thousands;
use serde::{Deserialize, Serialize};

pub use parallel::rank_phases;
pub use solve::{max_batch, max_seq_len, Budget, BudgetKind};

/// The training budget (`train` in `vram estimate --json`). Device figures are per GPU.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrainEstimate {
    /// Weights resident on one GPU (quantized base + adapters for QLoRA; the partition at ZeRO-3).
    pub weights_bytes: u64,
    /// Gradients on one GPU after backward.
    pub gradients_bytes: u64,
    /// Optimizer states on one GPU (incl. DeepSpeed's fp32 master partition).
    pub optimizer_bytes: u64,
    /// Activations saved for backward when forward ends (incl. logits, fp32 log-softmax, autocast
    /// weight copies); the forward peak adds the loss's fp32 upcast.
    pub activations_bytes: u64,
    /// Optimizer step temporaries (AdamW `foreach`'s `exp_avg_sq_sqrt`, ...).
    pub optimizer_temp_bytes: u64,
    /// Communication buffers (DDP buckets, ZeRO reduce bucket, stage-3 gathered layers).
    pub buffers_bytes: u64,
    /// Headline: the largest phase peak of tensor bytes (`max_memory_allocated`).
    pub peak_allocated_bytes: u64,
    /// The phase where the headline occurs.
    pub peak_phase: String,
    /// Peak reserved by the caching allocator (`max_memory_reserved`).
    pub peak_reserved_bytes: u64,
    /// What `nvidia-smi` shows for the process: reserved + CUDA context + cuBLAS workspace.
    pub device_bytes: u64,
    /// CUDA context assumed.
    pub cuda_context_bytes: u64,
    /// cuBLAS workspace assumed.
    pub workspace_bytes: u64,
    /// Parameters the optimizer trains.
    pub trainable_params: u64,
    /// Parameters (and buffers) that stay frozen.
    pub frozen_params: u64,
    /// Bytes per element of the stored parameters.
    pub param_bytes: u64,
    /// Bytes per element of matmul outputs.
    pub compute_bytes: u64,
    /// Whether `torch.autocast` over fp32 weights is modelled.
    pub autocast: bool,
    /// Data-parallel GPUs.
    pub gpus: u64,
    /// ZeRO stage.
    pub zero_stage: u8,
    /// Host RAM per GPU process for ZeRO offload.
    pub cpu_offload_bytes: u64,
    /// Activation components at the end of forward.
    pub activation_breakdown: Vec<(String, u64)>,
    /// Phases of the first and the steady-state step.
    pub phases: Vec<Phase>,
    /// Every component with its formula and source.
    pub terms: Vec<Term>,
    /// One entry per distinct kind of rank (pipeline stage); the plain data-parallel layout has
    /// one. The headline figures above are those of the rank with the most device bytes.
    #[serde(default)]
    pub ranks: Vec<ranks::RankEstimate>,
    /// Device bytes of the largest rank (what decides whether the layout fits).
    #[serde(default)]
    pub max_rank_device_bytes: u64,
    /// The parallel layout's framework (`hf`, `megatron`, `torchtitan`).
    #[serde(default)]
    pub framework: String,
    /// Moments of the steady-state backward that a sharded layout rebuilds (not serialised).
    #[serde(skip)]
    pub backward_moments: BackwardMoments,
}

/// Two moments of one GPU's steady-state backward, in bytes above the weights, buffers and
/// optimizer states: FSDP2 ranks ([`ranks`]) add their gathered groups to them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BackwardMoments {
    /// The cross-entropy's backward, the first moment: every saved tensor, the logits and the
    /// loss's two gradient temporaries, no parameter gradient yet.
    pub start_bytes: u64,
    /// The embedding's backward, the last moment: every gradient, a tied embedding's second one.
    pub end_bytes: u64,
    /// Every parameter gradient (part of `end_bytes`).
    pub gradients_bytes: u64,
}

fn g(n: u64) -> String {
    group_thousands(n)
}

fn term(key: &str, bytes: u64, formula: String, source: &str) -> Term {
    Term {
        key: key.into(),
        bytes,
        formula,
        source: source.into(),
    }
}

/// Whose allocation semantics an estimate predicts.
///
/// The two differ only where PyTorch's CPU kernels allocate differently from the CUDA ones, which
/// is what `vram measure --device cpu` (exact CPU tensor bytes) counts:
/// - dropout in training: CUDA runs `native_dropout` (a 1-byte bool mask saved); CPU runs
///   `at::dropout`'s `_dropout_impl` (`empty_like(input).bernoulli_()`: the mask in the input's
///   dtype, saved by the `mul`) — aten/src/ATen/native/Dropout.cpp, `is_fused_kernel_acceptable`
///   is true for CUDA/XPU only;
/// - SDPA with `dropout_p > 0` (gpt2 in training): CUDA's flash / memory-efficient kernels take the
///   dropout in the kernel (O(s) saved), the CPU flash kernel refuses dropout (sdp_utils_cpp.cpp
///   `check_for_dropout`) and `_scaled_dot_product_attention_math` materialises the b·h·s² scores,
///   softmax, dropout noise and dropped probabilities.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Counting {
    /// `torch.cuda.max_memory_allocated` on a CUDA device (the default, what users see).
    #[default]
    Cuda,
    /// Exact live tensor bytes on CPU, as `vram measure --device cpu` reports them.
    CpuExact,
}

/// Estimates one training step of `spec` under `scenario` on a CUDA device.
pub fn estimate_training(
    spec: &ModelSpec,
    scenario: &Scenario,
    overheads: &DeviceOverheads,
) -> Result<TrainEstimate, ScenarioError> {
    estimate_training_counting(spec, scenario, overheads, Counting::Cuda)
}

/// The part of a training estimate that does not depend on batch, sequence, attention or
/// checkpointing: a sweep over those computes it once.
struct PersistentPart {
    precision: persistent::Precision,
    plan: Option<lora::LoraPlan>,
    pers: persistent::Persistent,
    shard: zero::Sharded,
    temp: u64,
    /// Allocated bytes of weights, gradients and states on the GPU.
    persistent_alloc: u64,
    /// The same rounded by the caching allocator, plus the buffers.
    persistent_reserved: u64,
}

impl PersistentPart {
    // Called from the single-estimate, totals and sweep paths: one copy in the wasm.
    #[inline(never)]
    fn of(spec: &ModelSpec, scenario: &Scenario) -> Result<Self, ScenarioError> {
        let precision = persistent::Precision::of(scenario);
        let plan = match &scenario.lora {
            Some(l) => Some(lora::plan(spec, l)?),
            None => None,
        };
        let pers = persistent::persistent(spec, scenario, precision, plan.as_ref());
        let shard = zero::shard(spec, scenario, precision, &pers);
        let temp = if shard.optimizer_on_gpu {
            let t = persistent::optimizer_temp_bytes(
                scenario.optimizer,
                &pers,
                precision.deepspeed_master,
            );
            if let Some(step) = shard.step_temp_bytes {
                // ZeRO 3: the sharding's own step moments (`zero::shard`)
                step
            } else if scenario.zero.0 >= 1 {
                // the step's moments: the gradient norm's fp64 copy of one partition, then
                // the optimizer's temporaries on this rank's partition
                (t / scenario.gpus.max(1)).max(shard.grad_norm_temp_bytes)
            } else {
                t
            }
        } else {
            0
        };
        let (persistent_alloc, persistent_reserved) = persistent_reserved(scenario, &pers, &shard);
        Ok(PersistentPart {
            precision,
            plan,
            pers,
            shard,
            temp,
            persistent_alloc,
            persistent_reserved,
        })
    }

    /// Whether `a` and `b` give the same persistent part.
    fn shared_by(a: &Scenario, b: &Scenario) -> bool {
        a.dtype == b.dtype
            && a.mixed_precision == b.mixed_precision
            && a.optimizer == b.optimizer
            && a.lora == b.lora
            && a.gpus == b.gpus
            && a.zero == b.zero
            && a.offload_optimizer == b.offload_optimizer
            && a.offload_params == b.offload_params
            && a.layout == b.layout
    }
}

/// Reserved bytes of the persistent tensors (each rounded by the caching allocator, plus the
/// buffers) and their allocated bytes: `(allocated, reserved)`.
fn persistent_reserved(
    scenario: &Scenario,
    pers: &persistent::Persistent,
    shard: &zero::Sharded,
) -> (u64, u64) {
    let n = scenario.gpus.max(1);
    let persistent_sizes = pers.tensors.iter().flat_map(|t| {
        let w = if scenario.zero.0 >= 3 && scenario.offload_params {
            0
        } else if scenario.zero.0 >= 3 {
            t.weight_bytes.div_ceil(n)
        } else {
            t.weight_bytes
        };
        let gr = if scenario.zero.0 >= 2 {
            t.grad_bytes.div_ceil(n)
        } else {
            t.grad_bytes
        };
        let states: &[u64] = if shard.optimizer_on_gpu {
            t.state_tensors.as_slice()
        } else {
            &[]
        };
        let state_div = if scenario.zero.0 >= 1 { n } else { 1 };
        [w, gr]
            .into_iter()
            .chain(states.iter().map(move |s| s.div_ceil(state_div)))
            .map(move |size| (size, t.count))
    });
    let persistent_alloc = shard.weights_bytes + shard.gradients_bytes + shard.optimizer_bytes;
    let persistent_reserved = allocator::reserved_for_counted(persistent_sizes)
        .max(persistent_alloc)
        .saturating_add(shard.buffers_bytes);
    (persistent_alloc, persistent_reserved)
}

/// NCCL's buffers of the data-parallel communicator on a CUDA device with more than one GPU
/// ([`ranks::NCCL_BYTES_PER_COMMUNICATOR`]; outside the caching allocator).
fn data_parallel_nccl_bytes(scenario: &Scenario, overheads: &DeviceOverheads) -> u64 {
    if scenario.gpus > 1 && overheads.cuda_context_bytes > 0 {
        ranks::NCCL_BYTES_PER_COMMUNICATOR
    } else {
        0
    }
}

/// The figures of a training estimate, before they are explained.
struct Computed {
    prof: activations::ActivationProfile,
    moments: BackwardMoments,
    figures: [phases::PhaseFigure; 7],
    peak_phase: &'static str,
    peak: u64,
    persistent_reserved: u64,
    transient: u64,
    groups: u64,
    peak_reserved: u64,
    device: u64,
}

// Called from the single-estimate, totals and sweep paths: one copy in the wasm.
#[inline(never)]
fn compute(
    spec: &ModelSpec,
    scenario: &Scenario,
    overheads: &DeviceOverheads,
    counting: Counting,
    part: &PersistentPart,
) -> Result<Computed, ScenarioError> {
    let PersistentPart {
        precision,
        plan,
        pers,
        shard,
        temp,
        ..
    } = part;
    let (precision, temp) = (*precision, *temp);
    let prof = activations::profile(spec, scenario, precision, plan.as_ref(), counting)?;
    let head_is_tied = spec.tie_word_embeddings || !spec.derived().has_lm_head;
    let full = plan.is_none();
    let vh = spec.vocab_size.saturating_mul(spec.hidden_size);
    let grad_elem = precision.param_bytes;
    // Decoders and state-space models end in the same causal-LM head (lm_head, tied or not, and
    // the loss); encoders in a classifier.
    let causal_lm_head = matches!(
        spec.kind,
        crate::spec::ModelKind::DecoderOnly | crate::spec::ModelKind::StateSpace
    );
    // An encoder–decoder (t5) shares one embedding between the encoder, the decoder and (tied)
    // the lm_head: `from_config` builds `shared`, both stacks' `embed_tokens` and `lm_head`, then
    // ties them to `shared`; in backward the lm_head's gradient, the decoder embedding's and the
    // encoder embedding's meet in the shared weight's one AccumulateGrad.
    let enc_dec = spec.kind == crate::spec::ModelKind::EncoderDecoder;
    let vhe = vh.saturating_mul(grad_elem);
    // tables `from_config` builds before tying them: t5's two `embed_tokens` (and its lm_head when
    // tied), a decoder's tied lm_head
    let tables = if enc_dec {
        2 + u64::from(head_is_tied)
    } else {
        u64::from(head_is_tied && spec.tie_word_embeddings && causal_lm_head)
    };
    let inputs = phases::PhaseInputs {
        weights_bytes: shard.weights_bytes,
        gradients_bytes: shard.gradients_bytes,
        optimizer_bytes: shard.optimizer_bytes,
        optimizer_temp_bytes: temp,
        buffers_bytes: shard.buffers_bytes,
        model_buffers_bytes: shard.model_buffers_bytes,
        optimizer_at_init_bytes: shard.optimizer_at_init_bytes,
        gradients_persist: shard.gradients_persist,
        grad_accumulation: scenario.grad_accumulation,
        // Bytes beyond all gradients at the embedding's backward, the last node. Its incoming
        // gradient (b·s·H in the embedding's dtype) is alive while `embedding_dense_backward`
        // builds the dense V·H gradient (`zeros` + `index_add`). Untied, that dense gradient
        // becomes `.grad` (counted in the gradients). Tied, the weight has one AccumulateGrad node
        // fed by two edges: the engine's InputBuffer (torch/csrc/autograd/input_buffer.cpp
        // `accumulate`) holds the lm_head gradient (V·H) until the dense one arrives and sums them.
        // The lm_head gradient straight out of `mm` is not summed in place, so after the incoming
        // gradient is released `old + new` makes a third V·H tensor (measured: mm, zeros and
        // aten::add = 3 × V·H live, SmolLM2-135M fp32); under autocast the lm_head gradient is the
        // fresh fp32 output of ToCopyBackward and is summed in place (lm_head grad + dense grad +
        // incoming gradient live; measured on SmolLM2 4 layers mixed bf16).
        // The encoder–decoder's encoder embedding runs backward last, into a buffer that is a
        // fresh tensor by then (the decoder's sum, or its own dense gradient): summed in place.
        tied_embedding_grad_bytes: if full && enc_dec {
            prof.tokens
                .saturating_mul(spec.hidden_size)
                .saturating_mul(precision.param_bytes)
                .saturating_add(vhe)
        } else if full && causal_lm_head {
            let incoming = prof
                .tokens
                .saturating_mul(spec.hidden_size)
                .saturating_mul(precision.param_bytes);
            if !head_is_tied {
                incoming
            } else if spec.tensor_parallel > 1 {
                // transformers' tensor parallelism (`hf_tp`): the dense gradient is computed
                // whole (DTensor `Replicate()`), and adding it to the lm_head's vocabulary-sharded
                // gradient first copies out this rank's rows of it, then sums out of place: whole
                // V·H + 2 × (V / tp)·H beyond the gradients (measured: TinyLlama 2 layers tied at
                // tp 2, SmolLM2 4 layers at tp 3, fp32).
                let local = hf_tp::local_vocab(spec)
                    .saturating_mul(spec.hidden_size)
                    .saturating_mul(grad_elem);
                vh.saturating_mul(grad_elem)
                    .saturating_add(local.saturating_mul(2))
            } else if precision.autocast {
                vh.saturating_mul(4).saturating_add(incoming)
            } else {
                let vhe = vh.saturating_mul(grad_elem);
                vhe.saturating_mul(2).max(vhe.saturating_add(incoming))
            }
        } else {
            0
        },
        // `from_config` (what `vram measure` runs) builds `lm_head = nn.Linear(H, V)` with its own
        // weight and only then ties it to the embedding (`PreTrainedModel.tie_weights`:
        // `setattr(parent, name, source_param)`), freeing the head's weight: a V·H transient at
        // load. `from_pretrained` initialises on the meta device and has none. peft adds the
        // adapters after the tying, so they count against the transient (peak = max(base + V·H,
        // base + adapters)).
        load_transient_bytes: {
            let unquantized = scenario
                .lora
                .as_ref()
                .is_none_or(|l| l.base_quant == crate::scenario::BaseQuant::None);
            if tables > 0 && unquantized {
                let adapters = plan
                    .as_ref()
                    .map_or(0, |p| p.trainable_params.saturating_mul(4));
                vh.saturating_mul(precision.param_bytes)
                    .saturating_mul(tables)
                    .saturating_sub(adapters)
            } else {
                0
            }
        },
        // ZeRO 1/2 (profiler trace of DeepSpeed 0.19.8's initialisation, TinyLlama 2 layers on 2
        // ranks): `flatten_dense_tensors` copies the 16-bit weights while they exist (2 × weights),
        // then the master partition is cloned and `initialize_optimizer_states` gives it a zero
        // fp32 gradient partition that it drops at once (weights + 2 × master on the GPU); fp32:
        // 1,672 MiB both ways, bf16: 1,254 MiB
        // When DeepSpeed casts an fp32-loaded model to 16 bits, `from_config` (and a tied head's
        // table) ran in fp32 before it (Qwen2-0.5B 2 layers, ZeRO 1 bf16: 1,208 MB measured =
        // 662 MB of fp32 weights + the 545 MB fp32 table).
        init_transient_bytes: if (1..=2).contains(&scenario.zero.0) {
            let master = shard.optimizer_at_init_bytes;
            let at_init = shard.weights_bytes.saturating_add(master);
            let fp32_load = if precision.deepspeed_master
                && scenario.dtype == crate::scenario::Dtype::Fp32
                && full
            {
                pers.trainable_params
                    .saturating_add(pers.frozen_params)
                    .saturating_add(vh.saturating_mul(tables))
                    .saturating_mul(4)
                    .saturating_sub(at_init)
            } else {
                0
            };
            shard
                .weights_bytes
                .saturating_sub(master)
                .max(master)
                .max(fp32_load)
        } else {
            0
        },
        head_grad_bytes: if full && (causal_lm_head || enc_dec) {
            // one rank's vocabulary rows under tensor parallelism
            hf_tp::local_vocab(spec)
                .saturating_mul(spec.hidden_size)
                .saturating_mul(grad_elem)
        } else {
            0
        },
        // The decoder embedding's dense gradient; summed out of place with a tied lm_head's
        // gradient when that is the transposed view `mm` returns (under autocast it is the fresh
        // fp32 output of ToCopyBackward, summed in place). Measured on t5-small fp32 (CPU):
        // lm_head grad, dense grad and aten::add = 3 × V·H live.
        decoder_embedding_grad_bytes: if full && enc_dec {
            if head_is_tied && !precision.autocast {
                vhe.saturating_mul(2)
            } else {
                vhe
            }
        } else {
            0
        },
        decoder_embedding_new_grad_bytes: if full && enc_dec && !head_is_tied {
            vhe
        } else {
            0
        },
        // ZeRO 1 keeps each gradient whole through backward; stage 2 and 3 reduce it into the
        // partition as it comes
        grad_scale_num: if shard.whole_grads_in_backward {
            1
        } else {
            shard.gradients_bytes
        },
        grad_scale_den: if shard.whole_grads_in_backward {
            1
        } else {
            pers.gradients_bytes.max(1)
        },
        unreduced_grad_bytes: shard.unreduced_grad_bytes,
        // the partition the whole gradients are reduced into at the end (its share: the
        // measured end of backward; the step then holds `gradients_bytes`)
        end_partition_bytes: if shard.whole_grads_in_backward {
            pers.gradients_bytes.div_ceil(scenario.gpus.max(1))
        } else {
            0
        },
        end_whole_gradients_bytes: if shard.whole_grads_in_backward {
            pers.gradients_bytes
        } else {
            0
        },
        // On CPU gloo's `_allgather_base_` gathers into a temporary of the output's size and
        // copies it over (profiler trace of the ZeRO 3 run: 250 MiB beside the head's 250 MiB
        // weight at the forward peak); NCCL gathers in place.
        // (a tied head's weight is gathered once, for the embedding at the start of forward)
        gathered: shard.gathered.clone().map(|mut g| {
            if counting == Counting::CpuExact {
                g.collective_copy_bytes = if head_is_tied {
                    g.module_bytes
                } else {
                    g.head_bytes.max(g.module_bytes)
                };
            }
            g
        }),
        // (measured at stage 3; stage 2's fullest rank holds one more V·H then, and keeps it)
        tied_sum_is_unreduced: full
            && causal_lm_head
            && head_is_tied
            && spec.tensor_parallel <= 1
            && scenario.zero.0 >= 3
            && shard.unreduced_grad_bytes > 0,
    };
    let figures = phases::phase_figures(&prof, &inputs);
    let moments = BackwardMoments {
        start_bytes: prof
            .forward_end_bytes
            .saturating_add(prof.ce_backward_bytes),
        end_bytes: phases::backward_peak_parts(&prof, &inputs, 0, true).end_bytes,
        gradients_bytes: shard.gradients_bytes,
    };
    // The headline leaves out `load`: its peak holds the random-initialisation transient of
    // `from_config` (the untied lm_head) that loading a checkpoint does not allocate, and without
    // it the load phase never exceeds the step phases (docs/measure-report.md defines
    // `measured.peak_allocated_bytes` the same way).
    let (peak_phase, peak) = figures
        .iter()
        .filter(|p| p.name != "load")
        .map(|p| (p.name, p.peak_allocated_bytes))
        .fold(("", 0u64), |acc, x| if x.1 > acc.1 { x } else { acc });
    let (persistent_alloc, persistent_reserved) = (part.persistent_alloc, part.persistent_reserved);
    // Monotone combination: the rounded persistent tensors or the peak, whichever is larger, plus
    // one 2 MiB round-up per activation group (layers, embedding, head).
    let groups = spec.layers.len() as u64 + 2;
    let transient = peak.saturating_sub(persistent_alloc + shard.buffers_bytes);
    let peak_reserved = allocator::reserved_for_groups(peak.max(persistent_reserved), groups);
    let device = peak_reserved
        .saturating_add(overheads.cuda_context_bytes)
        .saturating_add(overheads.workspace_bytes)
        .saturating_add(data_parallel_nccl_bytes(scenario, overheads));

    Ok(Computed {
        prof,
        moments,
        figures,
        peak_phase,
        peak,
        persistent_reserved,
        transient,
        groups,
        peak_reserved,
        device,
    })
}

/// Estimates one training step with the allocation semantics of `counting` (see [`Counting`]);
/// `Counting::CpuExact` predicts `vram measure --device cpu` and is what docs/accuracy.md compares
/// the CPU measurements with.
pub fn estimate_training_counting(
    spec: &ModelSpec,
    scenario: &Scenario,
    overheads: &DeviceOverheads,
    counting: Counting,
) -> Result<TrainEstimate, ScenarioError> {
    scenario.validate()?;
    if scenario.layout.is_model_parallel() {
        return parallel::estimate(spec, scenario, overheads, counting);
    }
    let part = PersistentPart::of(spec, scenario)?;
    let Computed {
        prof,
        moments,
        figures,
        peak_phase,
        peak,
        persistent_reserved,
        transient,
        groups,
        peak_reserved,
        device,
    } = compute(spec, scenario, overheads, counting, &part)?;
    let PersistentPart {
        precision,
        plan,
        pers,
        shard,
        temp,
        ..
    } = part;
    let n = scenario.gpus.max(1);
    let phases = phases::named(&figures);
    let peak_phase = peak_phase.to_string();

    // ---- explanations ----
    let mut terms = Vec::new();
    let pb = precision.param_bytes;
    terms.push(term(
        "weights",
        shard.weights_bytes,
        match (&plan, scenario.lora.as_ref().map(|l| l.base_quant)) {
            (Some(_), Some(crate::scenario::BaseQuant::Nf4)) => format!(
                "NF4 base: Σ ceil(n/2) + absmax (blocksize 64, double-quant) + 16-bit embeddings/norms/lm_head + fp32 adapters = {} B (quantization state {} B)",
                g(shard.weights_bytes),
                g(pers.quant_overhead_bytes)
            ),
            (Some(_), Some(crate::scenario::BaseQuant::Int8)) => format!(
                "int8 base: Σ n + 4·out (SCB) + 16-bit rest + fp32 adapters = {} B",
                g(shard.weights_bytes)
            ),
            _ => format!(
                "{} params × {pb} B{}{} = {} B",
                g(pers.trainable_params + pers.frozen_params),
                if plan.is_some() { " (+ fp32 adapters)" } else { "" },
                if scenario.zero.0 >= 3 { format!(" / {n} GPUs + gathered layers") } else { String::new() },
                g(shard.weights_bytes)
            ),
        },
        "params.rs inventory; bitsandbytes functional.quantize_4bit; docs/formulas/training.md §Weights",
    ));
    if let Some(plan) = plan.as_ref() {
        let stacks: Vec<&lora::ParamAdapter> = plan
            .param_adapters
            .iter()
            .filter(|a| a.materializes_stack())
            .collect();
        if !stacks.is_empty() {
            let per_step: u64 = stacks
                .iter()
                .map(|a| {
                    let t = &spec.tensors[a.tensor];
                    t.numel()
                        .saturating_mul(t.count())
                        .saturating_mul(precision.param_bytes)
                })
                .fold(0, u64::saturating_add);
            terms.push(term(
                "lora_expert_stacks",
                per_step,
                format!(
                    "peft adapts the fused expert stacks of {} MoE layers as parameters (target_parameters, rank × experts); each forward folds the adapter into a new stack (baddbmm) that is saved for backward: {} B over those layers{} (in the activations). LoRA on the attention projections only (q_proj,k_proj,v_proj,o_proj) avoids it",
                    stacks
                        .iter()
                        .map(|a| spec.tensors[a.tensor].count())
                        .max()
                        .unwrap_or(0),
                    g(per_step),
                    if scenario.grad_checkpointing {
                        "; gradient checkpointing keeps one layer's at a time"
                    } else {
                        ""
                    }
                ),
                "peft 0.21 utils/transformers_weight_conversion.py _convert_peft_config_moe, tuners/lora/layer.py ParamWrapper / _LoraFactorsProxy; docs/formulas/training.md §Activations",
            ));
        }
    }
    terms.push(term(
        "gradients",
        shard.gradients_bytes,
        format!(
            "{} trainable params × {} B{} = {} B",
            g(pers.trainable_params),
            pers.trainable_elem_bytes,
            if scenario.zero.0 >= 2 { format!(" / {n} GPUs") } else { String::new() },
            g(shard.gradients_bytes)
        ),
        "gradients take the trainable parameters' dtype (AccumulateGrad); docs/formulas/training.md §Gradients",
    ));
    terms.push(term(
        "optimizer",
        shard.optimizer_bytes,
        format!(
            "{:?}: {} trainable params × {} B/param{} = {} B",
            scenario.optimizer,
            g(pers.trainable_params),
            match scenario.optimizer {
                Optimizer::Adafactor => "factored row+col fp32".to_string(),
                o => format!("{}", persistent::state_bytes_per_param(o, pers.state_elem_bytes)),
            },
            if scenario.zero.0 >= 1 {
                format!(" (+ fp32 master partition) / {n} GPUs")
            } else {
                String::new()
            },
            g(shard.optimizer_bytes)
        ),
        "torch/optim/adamw.py _init_group (zeros_like); bitsandbytes Optimizer8bit; HF Adafactor; DeepSpeed ZeRO; docs/formulas/training.md §Optimizer",
    ));
    if temp > 0 {
        terms.push(term(
            "optimizer_temp",
            temp,
            format!("step temporaries: {} B", g(temp)),
            "torch/optim/adamw.py _multi_tensor_adamw: exp_avg_sq_sqrt = torch._foreach_sqrt(exp_avg_sqs)",
        ));
    }
    let layers_kept = prof.layers_kept_bytes;
    let l0 = prof.layers.first().cloned().unwrap_or_default();
    let n_layers = if prof.encoder_layers > 0 {
        format!(
            "{} encoder + {} decoder",
            prof.encoder_layers,
            prof.layers.len().saturating_sub(prof.encoder_layers)
        )
    } else {
        prof.layers.len().to_string()
    };
    terms.push(term(
        "activations_layers",
        layers_kept,
        if prof.checkpointing {
            format!(
                "gradient checkpointing: {} layers × layer input {} B = {} B; one layer recomputed in backward ({} B)",
                n_layers,
                g(l0.input_bytes),
                g(layers_kept),
                g(l0.saved_bytes)
            )
        } else {
            format!(
                "{} layers, layer 0 saves {} B (attention half {} B) for b·s = {} tokens = {} B",
                n_layers,
                g(l0.saved_bytes),
                g(l0.attn_saved_bytes),
                g(prof.tokens),
                g(layers_kept)
            )
        },
        if prof.encoder_layers > 0 {
            "tensors saved for backward by modeling_t5.py ops (activations/t5.rs walk); docs/formulas/training.md §Encoder–decoder"
        } else {
            "tensors saved for backward by modeling_llama.py ops (sim.rs walk); docs/formulas/training.md §Activations"
        },
    ));
    if prof.autocast_copy_bytes > 0 {
        terms.push(term(
            "autocast_weight_copies",
            prof.autocast_copy_bytes,
            format!(
                "low-precision copies of matmul weights × {} B = {} B made per forward; {} B live at the forward peak (autocast's cache holds trainable weights' copies until it exits after the loss, autograd keeps the ones it saved until their layer's backward), {} B when forward ends",
                precision.compute_bytes,
                g(prof.autocast_copy_bytes),
                g(prof.autocast_copies_at_forward_peak_bytes),
                g(prof.autocast_saved_end_bytes)
            ),
            "aten/src/ATen/autocast_mode.cpp cached_cast; docs/formulas/training.md §Autocast weight copies",
        ));
    }
    if prof.logits_bytes > 0 {
        terms.push(term(
            "logits",
            prof.logits_bytes,
            format!(
                "b·s·V = {} × {} × {} B = {} B",
                g(prof.tokens),
                g(spec.vocab_size),
                precision.compute_bytes,
                g(prof.logits_bytes)
            ),
            "modeling_llama.py LlamaForCausalLM.forward: logits = self.lm_head(hidden_states)",
        ));
        terms.push(term(
            "loss_fp32",
            prof.logits_fp32_bytes + prof.log_softmax_bytes,
            format!(
                "logits.float() {} B (transient) + log_softmax output b·s·V × 4 B {} B (saved)",
                g(prof.logits_fp32_bytes),
                g(prof.log_softmax_bytes)
            ),
            "transformers loss_utils.py ForCausalLMLoss; aten log_softmax backward saves its output",
        ));
        terms.push(term(
            "loss_backward",
            prof.ce_backward_bytes,
            format!(
                "nll_loss grad + log_softmax grad = 2 × b·s·V × 4 B = {} B",
                g(prof.ce_backward_bytes)
            ),
            "aten nll_loss_backward (dense zeros + scatter), _log_softmax_backward_data",
        ));
    }
    if shard.buffers_bytes > 0 || shard.cpu_offload_bytes > 0 {
        for (k, b, f) in &shard.notes {
            terms.push(term(
                k,
                *b,
                f.clone(),
                "deepspeed/runtime/zero; torch DDP Reducer",
            ));
        }
    }
    terms.push(term(
        "peak_allocated",
        peak,
        format!("largest phase peak: {peak_phase} = {} B", g(peak)),
        "phases.rs; torch.cuda.max_memory_allocated",
    ));
    terms.push(term(
        "peak_reserved",
        peak_reserved,
        format!(
            "max(persistent tensors rounded by the caching allocator {} B, peak allocated {} B (transient part {} B)) + {} × 2 MiB rounding = {} B",
            g(persistent_reserved),
            g(peak),
            g(transient),
            groups,
            g(peak_reserved)
        ),
        "c10/cuda/CUDACachingAllocator.cpp (kSmallBuffer, kLargeBuffer, kRoundLarge); fragmentation not modelled",
    ));
    terms.push(term(
        "device_total",
        device,
        {
            let nccl = data_parallel_nccl_bytes(scenario, overheads);
            format!(
                "reserved {} B + CUDA context {} B + cuBLAS workspace {} B{} = {} B",
                g(peak_reserved),
                g(overheads.cuda_context_bytes),
                g(overheads.workspace_bytes),
                if nccl > 0 {
                    format!(
                        " + NCCL buffers of the data-parallel communicator {} B",
                        g(nccl)
                    )
                } else {
                    String::new()
                },
                g(device)
            )
        },
        "measured.md §J (context 0.26–0.5 GiB with lazy loading); report.rs DeviceOverheads",
    ));

    let activation_breakdown = vec![
        ("layers".to_string(), layers_kept),
        ("before_layers".to_string(), prof.pre_saved_bytes),
        ("head".to_string(), prof.head_saved_bytes),
        ("logits".to_string(), prof.logits_bytes),
        ("log_softmax".to_string(), prof.log_softmax_bytes),
        ("inputs".to_string(), prof.inputs_bytes),
    ];
    Ok(TrainEstimate {
        weights_bytes: shard.weights_bytes,
        gradients_bytes: shard.gradients_bytes,
        optimizer_bytes: shard.optimizer_bytes,
        activations_bytes: prof.forward_end_bytes,
        optimizer_temp_bytes: temp,
        buffers_bytes: shard.buffers_bytes,
        peak_allocated_bytes: peak,
        peak_phase,
        peak_reserved_bytes: peak_reserved,
        device_bytes: device,
        cuda_context_bytes: overheads.cuda_context_bytes,
        workspace_bytes: overheads.workspace_bytes,
        trainable_params: pers.trainable_params,
        frozen_params: pers.frozen_params,
        param_bytes: precision.param_bytes,
        compute_bytes: precision.compute_bytes,
        autocast: precision.autocast,
        gpus: n,
        zero_stage: scenario.zero.0,
        cpu_offload_bytes: shard.cpu_offload_bytes,
        activation_breakdown,
        phases,
        terms,
        ranks: Vec::new(),
        max_rank_device_bytes: 0,
        framework: String::new(),
        backward_moments: moments,
    }
    .with_plain_rank(spec, scenario, overheads))
}

/// The totals of one training estimate without its explanations (no formulas, no named phases):
/// what charts, solvers, the make-it-fit search and the planner read. Each figure equals the
/// [`TrainEstimate`] field of the same name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct TrainTotals {
    /// [`TrainEstimate::weights_bytes`].
    pub weights_bytes: u64,
    /// [`TrainEstimate::gradients_bytes`].
    pub gradients_bytes: u64,
    /// [`TrainEstimate::optimizer_bytes`].
    pub optimizer_bytes: u64,
    /// [`TrainEstimate::activations_bytes`].
    pub activations_bytes: u64,
    /// [`TrainEstimate::optimizer_temp_bytes`].
    pub optimizer_temp_bytes: u64,
    /// [`TrainEstimate::buffers_bytes`].
    pub buffers_bytes: u64,
    /// [`TrainEstimate::peak_allocated_bytes`].
    pub peak_allocated_bytes: u64,
    /// [`TrainEstimate::peak_phase`].
    pub peak_phase: &'static str,
    /// [`TrainEstimate::peak_reserved_bytes`].
    pub peak_reserved_bytes: u64,
    /// [`TrainEstimate::device_bytes`].
    pub device_bytes: u64,
    /// [`TrainEstimate::cpu_offload_bytes`].
    pub cpu_offload_bytes: u64,
    /// [`TrainEstimate::trainable_params`].
    pub trainable_params: u64,
}

impl TrainTotals {
    /// The totals of a full estimate.
    pub fn of(e: &TrainEstimate) -> Self {
        TrainTotals {
            weights_bytes: e.weights_bytes,
            gradients_bytes: e.gradients_bytes,
            optimizer_bytes: e.optimizer_bytes,
            activations_bytes: e.activations_bytes,
            optimizer_temp_bytes: e.optimizer_temp_bytes,
            buffers_bytes: e.buffers_bytes,
            peak_allocated_bytes: e.peak_allocated_bytes,
            peak_phase: match e.peak_phase.as_str() {
                "forward" => "forward",
                "backward" => "backward",
                "optimizer" => "optimizer",
                "forward_2" => "forward_2",
                "backward_2" => "backward_2",
                "optimizer_2" => "optimizer_2",
                _ => "load",
            },
            peak_reserved_bytes: e.peak_reserved_bytes,
            device_bytes: e.device_bytes,
            cpu_offload_bytes: e.cpu_offload_bytes,
            trainable_params: e.trainable_params,
        }
    }
}

fn totals(part: &PersistentPart, c: &Computed) -> TrainTotals {
    TrainTotals {
        weights_bytes: part.shard.weights_bytes,
        gradients_bytes: part.shard.gradients_bytes,
        optimizer_bytes: part.shard.optimizer_bytes,
        activations_bytes: c.prof.forward_end_bytes,
        optimizer_temp_bytes: part.temp,
        buffers_bytes: part.shard.buffers_bytes,
        peak_allocated_bytes: c.peak,
        peak_phase: c.peak_phase,
        peak_reserved_bytes: c.peak_reserved,
        device_bytes: c.device,
        cpu_offload_bytes: part.shard.cpu_offload_bytes,
        trainable_params: part.pers.trainable_params,
    }
}

/// The totals of one training step on a CUDA device ([`estimate_training`] without explanations).
pub fn training_totals(
    spec: &ModelSpec,
    scenario: &Scenario,
    overheads: &DeviceOverheads,
) -> Result<TrainTotals, ScenarioError> {
    scenario.validate()?;
    if scenario.layout.is_model_parallel() {
        return estimate_training(spec, scenario, overheads).map(|e| TrainTotals::of(&e));
    }
    let part = PersistentPart::of(spec, scenario)?;
    let c = compute(spec, scenario, overheads, Counting::Cuda, &part)?;
    Ok(totals(&part, &c))
}

/// Totals of scenarios that differ from one base scenario only in batch, sequence, attention,
/// checkpointing or accumulation, with the persistent part computed once: a solver's probes.
pub struct Prober<'a> {
    spec: &'a ModelSpec,
    overheads: &'a DeviceOverheads,
    base: &'a Scenario,
    part: Result<PersistentPart, ScenarioError>,
}

impl<'a> Prober<'a> {
    /// A prober around `base`.
    pub fn new(spec: &'a ModelSpec, base: &'a Scenario, overheads: &'a DeviceOverheads) -> Self {
        let part = base
            .validate()
            .and_then(|()| PersistentPart::of(spec, base));
        Prober {
            spec,
            overheads,
            base,
            part,
        }
    }

    /// The totals of `scenario` (equal to [`training_totals`]).
    pub fn totals(&self, scenario: &Scenario) -> Result<TrainTotals, ScenarioError> {
        if !PersistentPart::shared_by(self.base, scenario) || scenario.layout.is_model_parallel() {
            return training_totals(self.spec, scenario, self.overheads);
        }
        scenario.validate()?;
        let part = self.part.as_ref().map_err(Clone::clone)?;
        let c = compute(self.spec, scenario, self.overheads, Counting::Cuda, part)?;
        Ok(totals(part, &c))
    }
}

/// Estimates the totals of every scenario of `scenarios` for one model (a chart's points, a
/// solver's probes, the make-it-fit candidates). Consecutive scenarios that differ only in batch,
/// sequence, attention, checkpointing or accumulation share the persistent part (LoRA plan,
/// weights, gradients, optimizer states, ZeRO sharding), computed once.
pub fn sweep(
    spec: &ModelSpec,
    scenarios: &[Scenario],
    overheads: &DeviceOverheads,
) -> Vec<Result<TrainTotals, ScenarioError>> {
    let mut shared = crate::sweep::Shared::new();
    scenarios
        .iter()
        .map(|s| {
            s.validate()?;
            if s.layout.is_model_parallel() {
                return training_totals(spec, s, overheads);
            }
            let part = shared.get(s, PersistentPart::shared_by, || PersistentPart::of(spec, s))?;
            let c = compute(spec, s, overheads, Counting::Cuda, part)?;
            Ok(totals(part, &c))
        })
        .collect()
}
