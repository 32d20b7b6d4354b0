//! Data parallelism and ZeRO stages 0–3 on N GPUs, with CPU offload: what each GPU holds.
//!
//! Sources:
//! - ZeRO (arXiv 1910.02054, §5): stage 1 partitions optimizer states, stage 2 also gradients,
//!   stage 3 also parameters; FSDP `SHARD_GRAD_OP` ≈ stage 2 and `FULL_SHARD` ≈ stage 3.
//! - DeepSpeed's estimators (`deepspeed/runtime/zero/stage_1_and_2.py`
//!   `estimate_zero2_model_states_mem_needs`: `4·P + 16·P/N` on the GPU without offload;
//!   `stage3.py` `estimate_zero3_model_states_mem_needs`: `4·largest_layer + 18·P/N`): their 16/18
//!   bytes count an fp32 gradient partition (`single_partition_of_fp32_groups[i].grad`) beside the
//!   fp32 master weights and both Adam moments. Measured with DeepSpeed 0.19.8 (`vram measure
//!   --zero`, docs/measurements/ranks), that gradient exists only inside the step; the master is
//!   cloned in fp32 training too.
//! - Bucket sizes as the HF Trainer's DeepSpeed integration fills `"auto"`
//!   (`transformers/integrations/deepspeed.py`): `reduce_bucket_size = hidden²`,
//!   `stage3_prefetch_bucket_size = 0.9·hidden²`; with `contiguous_gradients` every stage allocates
//!   one whole `reduce_bucket_size` buffer (the IPG bucket) in the gradient dtype, also when only a
//!   LoRA adapter trains (measured: TinyLlama ZeRO 3 with LoRA r16 keeps 16,777,216 B = 2048² × 4).
//! - Plain DDP (stage 0 on N > 1 GPUs): `Reducer` buckets hold a flat copy of every gradient
//!   (`gradient_as_bucket_view=False`, the default), i.e. one more gradient-sized buffer.

use super::persistent::{optimizer_temp_bytes, Persistent, Precision};
use super::phases::GatheredParams;
use crate::scenario::Scenario;
use crate::spec::ModelSpec;

/// What one GPU (and the host) holds for the model states.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sharded {
    /// Parameters resident on the GPU (the partition at stage 3; what it gathers is `gathered`).
    pub weights_bytes: u64,
    /// Gradients on the GPU (16-bit model gradients; the partition at stage ≥ 2).
    pub gradients_bytes: u64,
    /// Optimizer states on the GPU (incl. DeepSpeed's fp32 master partition).
    pub optimizer_bytes: u64,
    /// Buffers: DDP gradient buckets, ZeRO reduce bucket, stage 3's small parameters kept gathered
    /// for good, and the model
    /// class's non-persistent buffers ([`ModelSpec::runtime_buffers`]).
    pub buffers_bytes: u64,
    /// The model class's non-persistent buffers, the part of `buffers_bytes` that is not for
    /// communication.
    pub model_buffers_bytes: u64,
    /// Host RAM that offload needs, per GPU process.
    pub cpu_offload_bytes: u64,
    /// Whether optimizer states live on the GPU (their step temporaries too).
    pub optimizer_on_gpu: bool,
    /// The part of `optimizer_bytes` that exists from initialisation: DeepSpeed's fp32 master
    /// partition. The optimizer's own states are created by its first step, as without DeepSpeed:
    /// 0.19's `initialize_optimizer_states` only builds them eagerly for Adagrad (measured: the
    /// ZeRO 1/2 runs load with weights and master alone; a profiler trace of the ZeRO 3 run shows
    /// AdamW's `zeros_like` for both moments inside the first `step`).
    pub optimizer_at_init_bytes: u64,
    /// ZeRO 3: the gradient partition is one flat buffer made at initialisation
    /// (`stage3.py` `grad_partitions_flat_buffer`, `partition numel × grad-accumulation dtype`)
    /// that gradients are reduced into and that lives as long as the engine: present in every
    /// phase, not freed by `zero_grad`.
    pub gradients_persist: bool,
    /// ZeRO ≥ 2: a parameter's gradient is produced whole by autograd and freed once reduced
    /// into this rank's partition buffer: the largest one's whole bytes are a backward transient
    /// (the head's first, the embedding's last, beside the partition buffer).
    pub unreduced_grad_bytes: u64,
    /// ZeRO ≥ 1, the step beyond the gradient partition: the gradient norm's fp64 copy of the
    /// largest partition gradient (`get_grad_norm_direct`, `get_norm_dtype`), or the flattened
    /// partition and its fp32 cast for the master's `.grad`, whichever is larger.
    pub grad_norm_temp_bytes: u64,
    /// ZeRO 1: gradients stay whole through backward and are reduced into the partition buffer at
    /// its end (both live then).
    pub whole_grads_in_backward: bool,
    /// ZeRO 3: the parameters gathered whole over the step, beyond the persistent ones counted in
    /// `buffers_bytes` (`None` below stage 3).
    pub gathered: Option<GatheredParams>,
    /// ZeRO 3 with the optimizer on the GPU: the step's whole temporary. The optimizer runs on one
    /// sub-group of the partition at a time, its temporaries beside that sub-group's flattened
    /// fp32 gradient, or the gradient norm's fp64 copy when larger (`None` otherwise: the caller
    /// takes the larger of `grad_norm_temp_bytes` and the optimizer's temporaries on the
    /// partition).
    pub step_temp_bytes: Option<u64>,
    /// Explanations of the sharding terms.
    pub notes: Vec<(String, u64, String)>,
}

/// DeepSpeed's `stage3_max_live_parameters` default (`zero/config.py`
/// `ZERO_OPTIMIZATION_MAX_LIVE_PARAMETERS_DEFAULT`), which the HF Trainer's config leaves as it is:
/// the prefetcher stops gathering ahead once this many elements are gathered.
pub const ZERO3_MAX_LIVE_PARAMETERS: u64 = 1_000_000_000;

/// DeepSpeed's `sub_group_size` default (`zero/config.py`, 10⁹ elements): stage 3 runs the
/// optimizer on one sub-group of the rank's partition at a time.
pub const ZERO3_SUB_GROUP_SIZE: u64 = 1_000_000_000;

/// DeepSpeed's `stage3_param_persistence_threshold` as the HF Trainer fills `"auto"`: `10·hidden`.
/// Parameters of at most this many elements stay gathered for good (`ds_persist`).
pub fn zero3_persistence_threshold(spec: &ModelSpec) -> u64 {
    spec.hidden_size.saturating_mul(10)
}

/// What ZeRO 3 gathers over a step, from DeepSpeed 0.19's `PartitionedParameterCoordinator`
/// (`zero/partitioned_param_coordinator.py`), traced on CPU (docs/formulas/training.md §ZeRO 3):
/// - the first step runs before the module trace is complete: each module's parameters are
///   gathered for its forward and its backward and released after, with no prefetch;
/// - from the second step on the trace is complete and every module fetch prefetches up to
///   `stage3_prefetch_bucket_size` more elements, parameter-less modules (the decoder layer, its
///   attention and MLP) included, while fewer than `stage3_max_live_parameters` are gathered; a
///   parameter whose later use the prefetcher has passed, or that is used again within
///   `stage3_max_reuse_distance`, is not released. The gathered set therefore grows to the whole
///   model or to the live limit during forward and shrinks in backward as modules finish.
///
/// `embedding_backward`: whether the embedding runs backward (not when it is frozen under LoRA:
/// its parameters are then gathered for its forward alone, measured with peft's LoRA on CPU).
fn zero3_gathered(
    spec: &ModelSpec,
    param_bytes: u64,
    embedding_backward: bool,
) -> (u64, GatheredParams) {
    let threshold = zero3_persistence_threshold(spec);
    let mut persistent = 0u64;
    let mut embedding = 0u64;
    let mut head = 0u64;
    let mut after_layers = 0u64;
    let mut module = 0u64;
    let layers = spec.layers.len();
    let mut per_layer = vec![0u64; layers];
    for t in spec.tensors.iter().filter(|t| !t.buffer) {
        let numel = t.numel();
        let count = t.count();
        if numel <= threshold {
            persistent = persistent.saturating_add(numel.saturating_mul(count));
            continue;
        }
        if t.layer.is_some() {
            module = module.max(numel);
            for l in t.layers() {
                if let Some(slot) = usize::try_from(l).ok().and_then(|l| per_layer.get_mut(l)) {
                    *slot = slot.saturating_add(numel);
                }
            }
            continue;
        }
        match t.component {
            crate::spec::Component::Embedding | crate::spec::Component::PositionEmbedding => {
                embedding = embedding.saturating_add(numel.saturating_mul(count));
            }
            crate::spec::Component::LmHead => {
                head = head.max(numel);
                after_layers = after_layers.saturating_add(numel.saturating_mul(count));
            }
            _ => after_layers = after_layers.saturating_add(numel.saturating_mul(count)),
        }
    }
    let tied = head == 0 && spec.tie_word_embeddings;
    if tied {
        // the tied head is the embedding's weight, gathered again for the head
        head = spec
            .vocab_size
            .saturating_mul(spec.hidden_size)
            .min(embedding);
    }
    // what the backward still needs: the embeddings when they run backward
    let in_backward = if embedding_backward { embedding } else { 0 };
    let cap = ZERO3_MAX_LIVE_PARAMETERS;
    let mut below = Vec::with_capacity(layers);
    let mut running = in_backward;
    for l in &per_layer {
        running = running.saturating_add(*l);
        below.push(running.min(cap).saturating_mul(param_bytes));
    }
    // a tied head whose embedding does not run backward is the head's alone
    let total = running
        .saturating_add(after_layers)
        .saturating_add(if tied && !embedding_backward { head } else { 0 });
    (
        persistent.saturating_mul(param_bytes),
        GatheredParams {
            module_bytes: module.saturating_mul(param_bytes),
            head_bytes: head.saturating_mul(param_bytes),
            embedding_bytes: embedding.saturating_mul(param_bytes),
            end_bytes: in_backward.saturating_mul(param_bytes),
            // the head's weight is gathered for its forward even beyond the live limit
            steady_bytes: total.min(cap.max(head)).saturating_mul(param_bytes),
            below_bytes: below,
            collective_copy_bytes: 0,
        },
    )
}

fn div(x: u64, n: u64) -> u64 {
    x.div_ceil(n.max(1))
}

/// Elements of the gradient buffer ZeRO 2 allocates on the rank that holds the most. DeepSpeed
/// flattens the trainable parameters in module order (the embeddings, the layers one by one, the
/// final norm and an untied head), splits the flat buffer into `n` equal partitions, and
/// `copy_grads_in_partition` sizes `grads_in_partition` as the sum of the whole sizes of the
/// parameters that overlap the rank's partition (`params_in_partition`): a parameter that crosses
/// a boundary counts whole on both sides, and a vocabulary matrix larger than a partition fills
/// every partition it touches.
pub fn partition_overlap_elements(spec: &ModelSpec, n: u64) -> u64 {
    let n = n.max(1);
    let mut before: Vec<u64> = Vec::new();
    let mut layered: Vec<(u32, usize, u64)> = Vec::new();
    let mut after: Vec<u64> = Vec::new();
    for (i, t) in spec.tensors.iter().enumerate() {
        if t.buffer {
            continue;
        }
        let numel = t.numel();
        if t.layer.is_some() {
            layered.extend(t.layers().map(|l| (l, i, numel)));
        } else if t.component == crate::spec::Component::Embedding {
            before.push(numel);
        } else {
            after.push(numel);
        }
    }
    layered.sort_by_key(|&(l, i, _)| (l, i));
    let order: Vec<u64> = before
        .into_iter()
        .chain(layered.into_iter().map(|(_, _, x)| x))
        .chain(after)
        .filter(|&x| x > 0)
        .collect();
    let total: u64 = order.iter().fold(0u64, |a, &x| a.saturating_add(x));
    let part = total.div_ceil(n).max(1);
    // per-rank sums through a difference array: each parameter adds its size to the ranks
    // whose partitions it overlaps
    // (a bound on the work for absurd GPU counts: there a partition is smaller than any tensor)
    let Ok(ranks) = usize::try_from(n.min(1 << 20)) else {
        return part;
    };
    let mut diff = vec![0i128; ranks + 1];
    let mut offset = 0u64;
    for numel in order {
        let first = usize::try_from(offset / part)
            .unwrap_or(usize::MAX)
            .min(ranks);
        let last = usize::try_from((offset + numel - 1) / part)
            .unwrap_or(usize::MAX)
            .min(ranks.saturating_sub(1));
        if first < ranks {
            diff[first] += i128::from(numel);
            diff[last + 1] -= i128::from(numel);
        }
        offset = offset.saturating_add(numel);
    }
    let mut running = 0i128;
    let mut most = 0i128;
    for d in diff.iter().take(ranks) {
        running += d;
        most = most.max(running);
    }
    u64::try_from(most).unwrap_or(u64::MAX)
}

pub fn shard(spec: &ModelSpec, s: &Scenario, prec: Precision, p: &Persistent) -> Sharded {
    let n = s.gpus.max(1);
    let stage = s.zero.0;
    let w_all = p.weights_bytes;
    let g = p.gradients_bytes;
    let states = p.optimizer_bytes;
    let h = spec.hidden_size;
    let mut notes = Vec::new();
    // Non-persistent model buffers (causal-mask and sinusoid tables): on every rank, never sharded.
    let model_buffers = spec.runtime_buffer_bytes(prec.param_bytes);
    if model_buffers > 0 {
        notes.push((
            "model_buffers".into(),
            model_buffers,
            format!(
                "non-persistent buffers of the model class ({}) = {model_buffers} B",
                spec.runtime_buffers
                    .iter()
                    .map(|b| b.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    if stage == 0 {
        let ddp = if n > 1 { g } else { 0 };
        if ddp > 0 {
            notes.push((
                "ddp_buckets".into(),
                ddp,
                format!("DDP reducer buckets: a flat copy of all gradients = {ddp} B"),
            ));
        }
        return Sharded {
            weights_bytes: w_all,
            gradients_bytes: g,
            optimizer_bytes: if s.offload_optimizer { 0 } else { states },
            buffers_bytes: ddp.saturating_add(model_buffers),
            model_buffers_bytes: model_buffers,
            cpu_offload_bytes: if s.offload_optimizer { states } else { 0 },
            optimizer_on_gpu: !s.offload_optimizer,
            optimizer_at_init_bytes: 0,
            gradients_persist: false,
            unreduced_grad_bytes: 0,
            grad_norm_temp_bytes: 0,
            whole_grads_in_backward: false,
            gathered: None,
            step_temp_bytes: None,
            notes,
        };
    }
    // DeepSpeed: fp32 master (4 B) per trainable parameter, also in fp32 training: ZeRO 1/2 clone
    // the partition (`single_partition_of_fp32_groups`, stage_1_and_2.py
    // `weights_partition = ...detach().clone().to(dtype=master_weights_and_grads_dtype)`), ZeRO 3 its
    // `fp32_partitioned_groups_flat`. The fp32 gradient of that partition (16-bit mode) is made in
    // the step and dropped after it (`single_partition_of_fp32_groups[i].grad = None`); with
    // optimizer offload it lives on the host, pinned.
    let master = p.trainable_params.saturating_mul(4);
    let fp32_grads = if prec.deepspeed_master {
        p.trainable_params.saturating_mul(4)
    } else {
        0
    };
    let opt_partition = div(states.saturating_add(master), n);
    let host_partition = div(states.saturating_add(master).saturating_add(fp32_grads), n);
    let grad_elem = p.trainable_elem_bytes.min(prec.param_bytes.max(2));
    // the whole `reduce_bucket_size`, however few parameters train (LoRA): stage 3 allocates it at
    // init (stage3.py, `bucket.buffer = torch.empty(self.reduce_bucket_size, ...)`), stages 1/2 at
    // each backward (stage_1_and_2.py, `buf_0 = torch.empty(int(self.reduce_bucket_size), ...)`)
    let bucket = if p.trainable_params > 0 {
        h.saturating_mul(h).saturating_mul(grad_elem)
    } else {
        0
    };
    // After backward every stage holds only its partition of the gradients: stage 2 reduces each
    // into the partition buffer as it is produced; stage 1 keeps them whole through backward and
    // reduces them at its end (measured with DeepSpeed 0.19 on CPU: docs/measurements/ranks).
    // That buffer holds the whole gradient of every parameter that overlaps the rank's partition
    // (stage 2's `copy_grads_in_partition`; stage 1 is taken alike), on the rank that holds the most.
    let grads = if stage <= 2 && s.lora.is_none() && n > 1 && p.trainable_params > 0 {
        partition_overlap_elements(spec, n)
            .saturating_mul(grad_elem)
            .max(div(g, n))
    } else {
        div(g, n)
    };
    let (weights, always_gathered, moving) = if stage >= 3 {
        // peft's LoRA freezes the embeddings (and they receive no gradient from the ids)
        let (persistent, moving) = zero3_gathered(spec, prec.param_bytes, s.lora.is_none());
        let part = if s.offload_params { 0 } else { div(w_all, n) };
        (part, persistent, Some(moving))
    } else {
        (w_all, 0, None)
    };
    let offload_opt = s.offload_optimizer;
    let largest_grad = p.largest_trainable_numel.saturating_mul(grad_elem);
    let unreduced = if stage >= 2 && n > 1 { largest_grad } else { 0 };
    // The step, on the GPU: the gradient norm's fp64 copy of the largest partition gradient; the
    // partition's gradients flattened (`flatten(averaged_gradients)`, a copy) and in 16-bit mode
    // cast to fp32 for the master's `.grad`.
    let partition = div(p.trainable_params, n);
    // stage 3 steps one sub-group of the partition at a time (`sub_group_size`)
    let flattened = if stage >= 3 {
        partition.min(ZERO3_SUB_GROUP_SIZE)
    } else {
        partition
    };
    let grad_norm_temp = if offload_opt {
        0
    } else {
        let norm = p.largest_trainable_numel.min(partition).saturating_mul(8);
        let flat = flattened
            .saturating_mul(grad_elem)
            .saturating_add(if grad_elem < 4 {
                flattened.saturating_mul(4)
            } else {
                0
            });
        norm.max(flat)
    };
    // Stage 3 keeps the flattened fp32 gradient of the sub-group as the master's `.grad` through
    // the optimizer's step on it (`_prepare_fp32_grad_for_sub_group`, `_optimizer_step`). HF's
    // Trainer hands DeepSpeed torch's AdamW, whose `foreach` step makes its temporaries over the
    // fp32 master in 16-bit mode too (measured: TinyLlama 2 layers under bf16, the step holds
    // 8 B per partition element).
    let step_temp = (stage >= 3 && !offload_opt && p.trainable_params > 0).then(|| {
        let foreach = u64::try_from(
            u128::from(optimizer_temp_bytes(s.optimizer, p, false) / n) * u128::from(flattened)
                / u128::from(partition.max(1)),
        )
        .unwrap_or(u64::MAX);
        flattened
            .saturating_mul(4)
            .saturating_add(foreach)
            .max(grad_norm_temp)
    });
    let buffers = bucket
        .saturating_add(always_gathered)
        .saturating_add(model_buffers);
    notes.push((
        "zero_partition".into(),
        opt_partition,
        format!(
            "(optimizer states {states} + fp32 master {master}) / {n} GPUs = {opt_partition} B"
        ),
    ));
    if bucket > 0 {
        notes.push((
            "zero_reduce_bucket".into(),
            bucket,
            format!("reduce bucket hidden² = {h}² elements × {grad_elem} B = {bucket} B"),
        ));
    }
    if let Some(m) = &moving {
        notes.push((
            "zero3_gathered".into(),
            m.steady_bytes,
            format!(
                "stage 3 gathers parameters whole: from the second step on the prefetcher holds the whole model or stage3_max_live_parameters = {} elements, whichever is less, × {} B = {} B at the end of forward; the first step one module at a time (largest {} B, the head {} B); parameters of at most 10·hidden elements stay gathered ({always_gathered} B, among the buffers)",
                ZERO3_MAX_LIVE_PARAMETERS,
                prec.param_bytes,
                m.steady_bytes,
                m.module_bytes,
                m.head_bytes
            ),
        ));
    }
    let mut cpu = 0u64;
    if offload_opt {
        cpu = cpu.saturating_add(host_partition);
    }
    if s.offload_params && stage >= 3 {
        cpu = cpu.saturating_add(div(w_all, n));
    }
    Sharded {
        weights_bytes: weights,
        gradients_bytes: grads,
        optimizer_bytes: if offload_opt { 0 } else { opt_partition },
        buffers_bytes: buffers,
        model_buffers_bytes: model_buffers,
        cpu_offload_bytes: cpu,
        optimizer_on_gpu: !offload_opt,
        optimizer_at_init_bytes: if offload_opt { 0 } else { div(master, n) },
        // with optimizer offload the buffer is made on the host (pinned)
        gradients_persist: stage >= 3 && !offload_opt,
        unreduced_grad_bytes: unreduced,
        grad_norm_temp_bytes: grad_norm_temp,
        whole_grads_in_backward: stage == 1,
        gathered: moving,
        step_temp_bytes: step_temp,
        notes,
    }
}
