//! The planner: given a model, a task, a GPU type and a number of GPUs, every layout that fits
//! with headroom on every rank, ranked by a documented cost, with the launch configs of each and
//! why the closest others fail (docs/formulas/parallel.md §Planner).
//!
//! Cost, compared in order (smaller first):
//! 1. GPUs used — a layout on fewer GPUs leaves the rest for another job;
//! 2. whether tensor parallelism crosses nodes (TP inside one NVLink domain);
//! 3. the pipeline bubble `(pp − 1) / (vpp · m + pp − 1)` of (interleaved) 1F1B with `m`
//!    micro-batches per step and `vpp` virtual stages per rank (Narayanan et al. 2021, §2.2);
//! 4. the micro-batch, larger first (better GPU utilisation);
//! 5. recomputation (none before full: recomputing costs a third more compute);
//! 6. fewer model-parallel ranks (less communication).

pub mod launch;

use crate::gpu_catalog::Gpu;
use crate::layout::{Framework, Layout, Recompute};
use crate::report::DeviceOverheads;
use crate::scenario::{Engine, Mode, Scenario, ZeroStage};
use crate::spec::ModelSpec;
use crate::train::ranks::RankEstimate;
use launch::LaunchText;
use serde::{Deserialize, Serialize};

/// What the GPUs are for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PlanTask {
    /// Pre-training (full training, Megatron-core or HF).
    Train,
    /// Fine-tuning with HF transformers (full or LoRA, as the base scenario says).
    Finetune,
    /// Serving with vLLM.
    Serve,
}

/// Required headroom on every rank: 5 % of usable memory.
pub const HEADROOM_PERCENT: u64 = 5;

/// Sequences from which context parallelism is tried (Megatron-core, torchtitan): below it the
/// activations CP splits are small next to the weights, and NVIDIA's recipes turn CP on for long
/// context (8k and above).
pub const CONTEXT_PARALLEL_FROM_TOKENS: u64 = 8192;

/// Largest context-parallel size tried.
const MAX_CP: u64 = 8;

/// The context-parallel sizes tried for `ranks` GPUs left after TP and PP: 1, and for a dense
/// model with a sequence of at least [`CONTEXT_PARALLEL_FROM_TOKENS`] every divisor up to
/// [`MAX_CP`] that splits the sequence into `2 · cp · tp` equal chunks (Megatron's load-balanced
/// CP gives each rank two chunks, and sequence parallelism splits each by TP).
fn context_parallel_sizes(ranks: u64, seq_len: u64, tp: u64, moe: bool) -> Vec<u64> {
    if moe || seq_len < CONTEXT_PARALLEL_FROM_TOKENS {
        return vec![1];
    }
    divisors(ranks)
        .into_iter()
        .filter(|&cp| {
            cp <= MAX_CP && seq_len.is_multiple_of(cp.saturating_mul(2).saturating_mul(tp).max(1))
        })
        .collect()
}

/// A planning request.
#[derive(Clone, Debug)]
pub struct PlanRequest {
    /// The task.
    pub task: PlanTask,
    /// Scenario fields the plan keeps (precision, optimizer, sequence, LoRA, serving limits); its
    /// layout, GPU count and micro-batch are what the planner chooses. `batch` is the largest
    /// micro-batch tried (training) or the concurrent sequences to hold (serving).
    pub base: Scenario,
    /// The GPU type.
    pub gpu: Gpu,
    /// GPUs available.
    pub gpus: u64,
    /// GPUs per node (the NVLink domain).
    pub gpus_per_node: u64,
    /// Sequences per optimizer step (training; 0 = 8 micro-batches of the largest micro-batch
    /// per data-parallel rank at the full GPU count).
    pub global_batch: u64,
    /// Only this framework (training); `None` tries Megatron-core, torchtitan and HF for `train`,
    /// HF for `finetune`.
    pub framework: Option<Framework>,
}

/// The cost a plan is ranked by (see the module documentation).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanCost {
    /// GPUs used.
    pub gpus: u64,
    /// Whether TP spans more than one node.
    pub tp_across_nodes: bool,
    /// Pipeline bubble fraction of 1F1B.
    pub bubble: f64,
    /// Whether activations are recomputed.
    pub recompute: bool,
    /// Micro-batch per GPU.
    pub micro_batch: u64,
    /// tp × pp × cp × ep.
    pub model_parallel: u64,
    /// Whether optimizer states (or parameters) live in host RAM (DeepSpeed ZeRO-Offload): a
    /// much slower step, so such plans rank after every layout that keeps everything on the GPUs.
    #[serde(default)]
    pub offload: bool,
}

/// One layout with its per-rank figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// One line describing the layout.
    pub summary: String,
    /// The layout.
    pub layout: Layout,
    /// GPUs used.
    pub gpus: u64,
    /// Micro-batch per GPU (training) or concurrent sequences (serving).
    pub micro_batch: u64,
    /// ZeRO stage (HF DeepSpeed layouts).
    pub zero_stage: u8,
    /// DeepSpeed ZeRO-Offload of the optimizer states to host RAM.
    #[serde(default)]
    pub offload_optimizer: bool,
    /// ZeRO-3 parameter offload to host RAM.
    #[serde(default)]
    pub offload_params: bool,
    /// vLLM tensor parallelism (serving).
    pub tensor_parallel_size: u64,
    /// Every kind of rank.
    pub ranks: Vec<RankEstimate>,
    /// Device bytes of the largest rank.
    pub max_rank_device_bytes: u64,
    /// Usable bytes of one GPU.
    pub usable_bytes: u64,
    /// Whether every rank leaves at least [`HEADROOM_PERCENT`] of usable memory free.
    pub fits: bool,
    /// Free share of usable memory on the largest rank (negative when over).
    pub headroom: f64,
    /// The ranking cost.
    pub cost: PlanCost,
    /// Launch configs.
    pub launch: Vec<LaunchText>,
}

/// A layout that does not fit, with why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rejected {
    /// The layout.
    pub summary: String,
    /// Why it fails.
    pub reason: String,
    /// GPUs of the layout.
    #[serde(default)]
    pub gpus: u64,
    /// The layout itself (serving: its `tp`).
    #[serde(default)]
    pub layout: Layout,
    /// Micro-batch (training) or sequences asked for (serving).
    #[serde(default)]
    pub micro_batch: u64,
    /// ZeRO stage (HF DeepSpeed layouts).
    #[serde(default)]
    pub zero_stage: u8,
    /// DeepSpeed ZeRO-Offload of the optimizer states to host RAM.
    #[serde(default)]
    pub offload_optimizer: bool,
    /// ZeRO-3 parameter offload to host RAM.
    #[serde(default)]
    pub offload_params: bool,
    /// Pipeline stage of the largest rank.
    #[serde(default)]
    pub largest_stage: u64,
    /// Device bytes of the largest rank (serving: what vLLM would claim).
    #[serde(default)]
    pub max_rank_device_bytes: u64,
    /// Usable bytes of one GPU.
    #[serde(default)]
    pub usable_bytes: u64,
}

/// The planner's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanResult {
    /// Layouts that fit, best first.
    pub plans: Vec<Plan>,
    /// The closest failing layout of each GPU count and framework, with the reason.
    pub rejected: Vec<Rejected>,
    /// Layouts estimated.
    pub considered: u64,
}

fn divisors(n: u64) -> Vec<u64> {
    (1..=n).filter(|d| n.is_multiple_of(*d)).collect()
}

/// GPU counts tried: powers of two up to the total, whole nodes, and the total.
fn gpu_counts(total: u64, per_node: u64) -> Vec<u64> {
    let mut out: Vec<u64> = std::iter::successors(Some(1u64), |n| n.checked_mul(2))
        .take_while(|&n| n <= total)
        .collect();
    let mut n = per_node.max(1);
    while n <= total {
        out.push(n);
        n = n.saturating_add(per_node.max(1));
    }
    out.push(total);
    out.sort_unstable();
    out.dedup();
    out
}

fn summary(s: &Scenario) -> String {
    let l = &s.layout;
    let mut parts = vec![format!(
        "{} GPU{}",
        s.gpus,
        if s.gpus == 1 { "" } else { "s" }
    )];
    match l.framework {
        Framework::Hf => {
            parts.push(if l.fsdp2 && l.hsdp_replicas > 1 {
                format!("HF + HSDP ({} replicas)", l.hsdp_replicas)
            } else if l.fsdp2 {
                "HF + FSDP2".into()
            } else if (s.gpus > 1 && l.tp == 1) || s.zero.0 > 0 {
                format!("HF + DeepSpeed ZeRO-{}", s.zero.0)
            } else {
                "HF".into()
            });
            if l.tp > 1 {
                parts.push(format!("transformers tp {}", l.tp));
            }
        }
        f => {
            parts.push(f.name().into());
            parts.push(format!(
                "tp {} pp {} cp {} dp {}",
                l.tp,
                l.pp,
                l.cp,
                l.dp(s.gpus)
            ));
            if l.vpp > 1 {
                parts.push(format!("{} virtual stages per rank", l.vpp));
            }
            if l.ep > 1 {
                parts.push(format!("ep {}", l.ep));
            }
            if l.sequence_parallel {
                parts.push("SP".into());
            }
            if l.distributed_optimizer {
                parts.push("distributed optimizer".into());
            }
            if l.fsdp2 {
                parts.push("FSDP2".into());
            }
        }
    }
    if s.offload_optimizer || s.offload_params {
        parts.push(
            if s.offload_params {
                "optimizer and parameters offloaded to host RAM"
            } else {
                "optimizer offloaded to host RAM"
            }
            .into(),
        );
    }
    if s.grad_checkpointing || l.recompute == Recompute::Full {
        parts.push("full recompute".into());
    }
    parts.push(format!("micro-batch {}", s.batch));
    parts.join(", ")
}

/// Training candidates: every framework's layouts on every GPU count.
fn training_candidates(spec: &ModelSpec, req: &PlanRequest) -> Vec<Scenario> {
    let heads = spec
        .layers
        .iter()
        .find_map(|l| l.attention)
        .map(|a| (a.num_heads, a.num_kv_heads, a.mla.is_some()));
    let layers = spec.layers.len() as u64;
    let experts = crate::layout::num_experts(spec);
    let max_mb = req.base.batch.max(1);
    let micro_batches: Vec<u64> = std::iter::successors(Some(1u64), |m| m.checked_mul(2))
        .take_while(|&m| m < max_mb)
        .chain([max_mb])
        .collect();
    let frameworks: Vec<Framework> = match (req.framework, req.task) {
        (Some(f), _) => vec![f],
        (None, PlanTask::Train) if req.base.lora.is_none() => {
            vec![Framework::Megatron, Framework::Torchtitan, Framework::Hf]
        }
        _ => vec![Framework::Hf],
    };
    let per_node = req.gpus_per_node.max(1);
    let global = if req.global_batch > 0 {
        req.global_batch
    } else {
        max_mb.saturating_mul(req.gpus.max(1)).saturating_mul(8)
    };
    let mut out = Vec::new();
    for n in gpu_counts(req.gpus, per_node) {
        let nodes = if n > per_node {
            n.div_ceil(per_node)
        } else {
            1
        };
        let nodes = if n % nodes == 0 { nodes } else { 1 };
        for &framework in &frameworks {
            for &mb in &micro_batches {
                for recompute in [false, true] {
                    let base = Scenario {
                        gpus: n,
                        batch: mb,
                        grad_checkpointing: recompute && framework == Framework::Hf,
                        zero: ZeroStage(0),
                        offload_optimizer: false,
                        offload_params: false,
                        layout: Layout {
                            framework,
                            nodes,
                            recompute: if recompute {
                                Recompute::Full
                            } else {
                                Recompute::None
                            },
                            global_batch: global,
                            ..Layout::default()
                        },
                        ..req.base.clone()
                    };
                    match framework {
                        Framework::Hf => {
                            for zero in 0..=3u8 {
                                if n == 1 && zero > 0 {
                                    continue;
                                }
                                out.push(Scenario {
                                    zero: ZeroStage(zero),
                                    ..base.clone()
                                });
                            }
                            if n > 1 {
                                let mut f = base.clone();
                                f.layout.fsdp2 = true;
                                out.push(f.clone());
                                // HSDP across nodes: shard inside each node, replicate across
                                if nodes > 1 {
                                    f.layout.hsdp_replicas = nodes;
                                    out.push(f);
                                }
                            }
                            // DeepSpeed ZeRO-Offload: the optimizer states (ZeRO-2 / 3), and
                            // with ZeRO-3 the parameters too, in host RAM (one GPU included)
                            for (zero, params) in [(2u8, false), (3, false), (3, true)] {
                                out.push(Scenario {
                                    zero: ZeroStage(zero),
                                    offload_optimizer: true,
                                    offload_params: params,
                                    ..base.clone()
                                });
                            }
                            // transformers' own tensor parallelism inside a node (full training:
                            // not with LoRA), alone or with FSDP2 over the other ranks
                            let Some((h, kv, _)) = heads else { continue };
                            if req.base.lora.is_some() {
                                continue;
                            }
                            for tp in divisors(n) {
                                if tp == 1 || h % tp != 0 || kv % tp != 0 || tp > per_node {
                                    continue;
                                }
                                let mut t = base.clone();
                                t.layout.tp = tp;
                                t.layout.fsdp2 = n / tp > 1;
                                out.push(t);
                            }
                        }
                        Framework::Megatron | Framework::Torchtitan => {
                            let Some((h, kv, mla)) = heads else { continue };
                            for tp in divisors(n) {
                                if h % tp != 0 || (!mla && kv % tp != 0) || tp > 8.max(per_node) {
                                    continue;
                                }
                                for (pp, cp) in divisors(n / tp).into_iter().flat_map(|pp| {
                                    context_parallel_sizes(
                                        n / tp / pp,
                                        req.base.seq_len,
                                        tp,
                                        experts > 1,
                                    )
                                    .into_iter()
                                    .map(move |cp| (pp, cp))
                                }) {
                                    if pp > layers {
                                        continue;
                                    }
                                    let dp = n / tp / pp / cp;
                                    let eps: Vec<u64> = if experts > 1 {
                                        divisors(experts)
                                            .into_iter()
                                            .filter(|e| (dp * tp) % e == 0)
                                            .collect()
                                    } else {
                                        vec![1]
                                    };
                                    for ep in eps {
                                        let mut s = base.clone();
                                        s.layout.tp = tp;
                                        s.layout.pp = pp;
                                        s.layout.cp = cp;
                                        s.layout.ep = ep;
                                        s.layout.etp = if ep > 1 { 1 } else { 0 };
                                        s.layout.sequence_parallel = tp > 1;
                                        if framework == Framework::Megatron {
                                            s.layout.distributed_optimizer = dp * cp > 1;
                                        } else {
                                            s.layout.fsdp2 = dp * cp > 1;
                                        }
                                        // Megatron's interleaved 1F1B: 2 virtual stages per rank
                                        // when every stage's layers split in two and the
                                        // micro-batches are a multiple of pp (its schedule's rule)
                                        if framework == Framework::Megatron && pp > 1 {
                                            let mut v = s.clone();
                                            v.layout.vpp = 2;
                                            let m = v.layout.micro_batches(
                                                v.gpus,
                                                v.batch,
                                                v.grad_accumulation,
                                            );
                                            let even = v
                                                .layout
                                                .stage_layers(layers)
                                                .iter()
                                                .all(|n| n.is_multiple_of(2));
                                            if even && m.is_multiple_of(pp) {
                                                out.push(v);
                                            }
                                        }
                                        out.push(s);
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

fn headroom_of(device: u64, usable: u64) -> f64 {
    if usable == 0 {
        return -1.0;
    }
    1.0 - device as f64 / usable as f64
}

fn fits(device: u64, usable: u64) -> bool {
    (device as u128) * 100 <= (usable as u128) * (100 - HEADROOM_PERCENT) as u128
}

fn gib(b: u64) -> String {
    format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64)
}

/// Plans the layouts of `req` for `spec` (see the module documentation); `model_id` names the
/// model in the launch lines.
pub fn plan(spec: &ModelSpec, req: &PlanRequest, model_id: &str) -> PlanResult {
    match req.task {
        PlanTask::Serve => plan_serving(spec, req, model_id),
        PlanTask::Train | PlanTask::Finetune => plan_training(spec, req, model_id),
    }
}

fn plan_training(spec: &ModelSpec, req: &PlanRequest, model_id: &str) -> PlanResult {
    let overheads = DeviceOverheads::default();
    let usable = req.gpu.usable_bytes;
    let mut plans = Vec::new();
    // Closest failing layout per (GPU count, framework).
    let mut closest: Vec<((u64, Framework), Rejected)> = Vec::new();
    let mut considered = 0u64;
    for s in training_candidates(spec, req) {
        let Ok(e) = crate::train::estimate_training(spec, &s, &overheads) else {
            continue;
        };
        considered += 1;
        let device = e.ranks.iter().map(|r| r.device_bytes).max().unwrap_or(0);
        let l = &s.layout;
        let m = l.micro_batches(s.gpus, s.batch, s.grad_accumulation);
        // interleaving divides the bubble by the virtual stages (Narayanan et al. 2021, §2.2)
        let bubble = if l.pp > 1 {
            (l.pp - 1) as f64 / (l.vpp.max(1) * m + l.pp - 1) as f64
        } else {
            0.0
        };
        let recompute = s.grad_checkpointing || l.recompute == Recompute::Full;
        if fits(device, usable) {
            let mut s = s.clone();
            if l.framework == Framework::Hf {
                s.grad_accumulation = m;
            }
            plans.push(Plan {
                summary: summary(&s),
                layout: s.layout.clone(),
                gpus: s.gpus,
                micro_batch: s.batch,
                zero_stage: s.zero.0,
                offload_optimizer: s.offload_optimizer,
                offload_params: s.offload_params,
                tensor_parallel_size: s.layout.tp,
                max_rank_device_bytes: device,
                usable_bytes: usable,
                fits: true,
                headroom: headroom_of(device, usable),
                cost: PlanCost {
                    gpus: s.gpus,
                    tp_across_nodes: s.layout.tp > req.gpus_per_node.max(1),
                    bubble,
                    recompute,
                    micro_batch: s.batch,
                    model_parallel: s.layout.model_parallel_size().saturating_mul(s.layout.ep),
                    offload: s.offload_optimizer || s.offload_params,
                },
                launch: launch::training_launch(&s, model_id),
                ranks: e.ranks,
            });
        } else {
            let key = (s.gpus, l.framework);
            let largest = e
                .ranks
                .iter()
                .max_by_key(|r| r.device_bytes)
                .cloned()
                .unwrap_or_default();
            let reason = format!(
                "the largest rank (stage {}) needs {} of {} usable; {} % headroom allows {}",
                largest.stage,
                gib(device),
                gib(usable),
                HEADROOM_PERCENT,
                gib(usable / 100 * (100 - HEADROOM_PERCENT))
            );
            let rejected = Rejected {
                summary: summary(&s),
                reason,
                gpus: s.gpus,
                layout: s.layout.clone(),
                micro_batch: s.batch,
                zero_stage: s.zero.0,
                offload_optimizer: s.offload_optimizer,
                offload_params: s.offload_params,
                largest_stage: largest.stage,
                max_rank_device_bytes: device,
                usable_bytes: usable,
            };
            match closest.iter_mut().find(|c| c.0 == key) {
                Some(c) if c.1.max_rank_device_bytes <= device => {}
                Some(c) => c.1 = rejected,
                None => closest.push((key, rejected)),
            }
        }
    }
    rank(&mut plans);
    let rejected = closest
        .into_iter()
        .filter(|c| {
            !plans
                .iter()
                .any(|p| p.gpus == c.0 .0 && p.layout.framework == c.0 .1)
        })
        .map(|(_, r)| r)
        .collect();
    PlanResult {
        plans,
        rejected,
        considered,
    }
}

/// Sorts plans by cost (module documentation).
fn rank(plans: &mut [Plan]) {
    plans.sort_by(|a, b| {
        let ka = &a.cost;
        let kb = &b.cost;
        ka.offload
            .cmp(&kb.offload)
            .then(ka.gpus.cmp(&kb.gpus))
            .then(ka.tp_across_nodes.cmp(&kb.tp_across_nodes))
            .then(ka.bubble.total_cmp(&kb.bubble))
            .then(kb.micro_batch.cmp(&ka.micro_batch))
            .then(ka.recompute.cmp(&kb.recompute))
            .then(ka.model_parallel.cmp(&kb.model_parallel))
            .then(b.headroom.total_cmp(&a.headroom))
    });
}

fn plan_serving(spec: &ModelSpec, req: &PlanRequest, model_id: &str) -> PlanResult {
    let overheads = DeviceOverheads::default();
    let usable = req.gpu.usable_bytes;
    let heads = spec
        .layers
        .iter()
        .find_map(|l| l.attention)
        .map_or(1, |a| a.num_heads);
    let mut plans = Vec::new();
    let mut rejected = Vec::new();
    let mut considered = 0;
    // TP inside a node, PP across (vLLM's recommended split).
    let layers = spec.layers.len() as u64;
    let per_node = req.gpus_per_node.max(1);
    let layouts: Vec<(u64, u64)> = gpu_counts(req.gpus, per_node)
        .into_iter()
        .flat_map(|n| {
            divisors(n)
                .into_iter()
                .map(move |tp| (tp, n / tp))
                .collect::<Vec<_>>()
        })
        .filter(|&(tp, pp)| heads % tp == 0 && tp <= per_node && pp <= layers)
        .collect();
    for (tp, pp) in layouts {
        let gpus = tp * pp;
        let mut s = Scenario {
            mode: Mode::Infer,
            engine: Engine::Vllm,
            gpus,
            ..req.base.clone()
        };
        s.serving.tensor_parallel_size = tp;
        s.serving.pipeline_parallel_size = pp;
        s.serving.gpu_memory_bytes = usable;
        if s.serving.gpu_name.is_empty() {
            s.serving.gpu_name = req.gpu.name.to_string();
        }
        if s.serving.gpu_memory_utilization == 0.0 {
            // the release's default, capped to leave the planner's headroom (0.34's default of
            // 1.0 keeps only the CUDA context and a 1 GiB margin free)
            let Ok(v) = crate::infer::vllm_version::version_of(&s.serving) else {
                continue;
            };
            s.serving.gpu_memory_utilization = crate::infer::vllm_version::Profile::of(v)
                .default_utilization
                .min(1.0 - HEADROOM_PERCENT as f64 / 100.0);
        }
        let Ok(e) = crate::infer::estimate_inference(spec, &s, &overheads) else {
            continue;
        };
        let v = &e.serving;
        considered += 1;
        let want = req.base.batch.max(1) as f64;
        // what vLLM holds on each GPU: its budget, plus CUDA graphs where they come on top (≤ 0.20)
        let device = e.device_bytes;
        let ok = v.fits && v.concurrency_at_context >= want && fits(device, usable);
        let rank = RankEstimate {
            stage: 0,
            last_stage: 0,
            role: "embedding+head".into(),
            tp_rank_kind: format!("each of {tp} TP shards"),
            count: gpus,
            layers: spec.layers.len() as u64,
            params: 0,
            weights_bytes: v.weights_per_gpu_bytes,
            activations_bytes: v.activation_peak_bytes,
            communication_bytes: v.non_torch_bytes,
            peak_allocated_bytes: v.requested_bytes,
            peak_reserved_bytes: v.requested_bytes,
            // vLLM claims `utilization × total` for everything it runs (its non-torch term holds
            // NCCL), and up to 0.20 its CUDA graphs come on top.
            device_bytes: device,
            peak_phase: "serve".into(),
            ..RankEstimate::default()
        };
        let summary = format!(
            "{gpus} GPU{}, vLLM tensor parallel {tp}{}, {} of KV cache per GPU = {:.1} sequences of {} tokens",
            if gpus == 1 { "" } else { "s" },
            if pp > 1 { format!(" × pipeline parallel {pp}") } else { String::new() },
            gib(v.kv_pool_bytes),
            v.concurrency_at_context,
            s.seq_len
        );
        if ok {
            plans.push(Plan {
                summary,
                layout: Layout {
                    tp,
                    pp,
                    ..Layout::default()
                },
                gpus,
                micro_batch: req.base.batch,
                zero_stage: 0,
                offload_optimizer: false,
                offload_params: false,
                tensor_parallel_size: tp,
                max_rank_device_bytes: rank.device_bytes,
                usable_bytes: usable,
                fits: true,
                headroom: 1.0 - device as f64 / usable.max(1) as f64,
                cost: PlanCost {
                    gpus,
                    tp_across_nodes: tp > per_node,
                    // Serving has no step bubble, but each request crosses every stage in turn:
                    // inside a node TP first (vLLM's advice: TP within a node, PP across nodes).
                    bubble: (pp - 1) as f64 / pp as f64,
                    recompute: false,
                    micro_batch: req.base.batch,
                    model_parallel: gpus,
                    offload: false,
                },
                launch: vec![launch::vllm_serve(&s, model_id)],
                ranks: vec![rank],
            });
        } else {
            rejected.push(Rejected {
                summary,
                gpus,
                layout: Layout {
                    tp,
                    pp,
                    ..Layout::default()
                },
                micro_batch: req.base.batch,
                zero_stage: 0,
                offload_optimizer: false,
                offload_params: false,
                largest_stage: 0,
                max_rank_device_bytes: v.requested_bytes,
                usable_bytes: usable,
                reason: if v.fits {
                    format!(
                        "the KV cache holds {:.1} sequences of {} tokens, fewer than the {} asked for",
                        v.concurrency_at_context, s.seq_len, req.base.batch
                    )
                } else {
                    format!(
                        "weights {} + activations {} + non-torch {}{} leave no KV cache in {} × {} (short by {})",
                        gib(v.weights_per_gpu_bytes),
                        gib(v.activation_peak_bytes),
                        gib(v.non_torch_bytes),
                        if v.budget.counts_cuda_graphs() && v.cuda_graph_bytes > 0 {
                            format!(" + CUDA graphs {}", gib(v.cuda_graph_bytes))
                        } else {
                            String::new()
                        },
                        gib(usable),
                        s.serving.gpu_memory_utilization,
                        gib(v.shortfall_bytes)
                    )
                },
            });
        }
    }
    rank(&mut plans);
    PlanResult {
        plans,
        rejected,
        considered,
    }
}
