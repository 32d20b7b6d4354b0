//! The answer to the task's question, from one core result: the compared total against one GPU and
//! the verdict, which total it is, the stacked bar of what fills one GPU at the peak, the host RAM
//! when anything is offloaded, and for serving the concurrency at the user's context. Pure logic,
//! tested natively; the verdict view only renders it.

use crate::compute::{Budgeted, ModeResult};
use crate::page_scenario::{PageScenario, Task};
use vram_core::gpu_catalog::Verdict;
use vram_core::scenario::Engine;

/// Which total the verdict compares with the GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TotalKind {
    /// What `nvidia-smi` shows for the process at the peak: tensors + the caching allocator's
    /// reserve + CUDA context + workspace.
    Device,
    /// vLLM: what the server takes on each GPU (`gpu_memory_utilization` of the GPU, whose rest
    /// after weights and activations is the KV pool) plus its non-torch memory.
    Vllm,
}

/// Serving: how many of the user's requests run at once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServeAnswer {
    /// Sequences of `context` tokens whose KV fits at once (vLLM's pool, or the largest batch under
    /// transformers when known).
    pub sequences: u64,
    /// Tokens the KV pool holds (vLLM).
    pub kv_tokens: Option<u64>,
    /// The user's context per request.
    pub context: u64,
    /// Requests the user asked for at once.
    pub requested: u64,
}

/// One part of the stacked bar of a GPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Breakdown component key, or `overhead` for what is not a tensor of the model (CUDA
    /// context, workspace, the allocator's reserve, vLLM's non-torch memory).
    pub key: String,
    /// Bytes.
    pub bytes: u64,
}

/// The answer of one task.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    /// Task.
    pub task: Task,
    /// Verdict (fits / tight / does not fit).
    pub verdict: Verdict,
    /// Compared total per GPU.
    pub total_bytes: u64,
    /// Usable memory of one GPU.
    pub usable_bytes: u64,
    /// Which total.
    pub total_kind: TotalKind,
    /// Phase of the peak (core name).
    pub peak_phase: String,
    /// GPUs in the run (every one holds the same shard).
    pub gpus: u64,
    /// What fills one GPU at the peak phase, largest component first; sums to `total_bytes`.
    pub segments: Vec<Segment>,
    /// Host RAM needed per GPU process for what is offloaded (0 when nothing is).
    pub host_bytes_per_gpu: u64,
    /// Serving concurrency (Serve only).
    pub serve: Option<ServeAnswer>,
    /// Training: the largest micro-batch and the longest sequence that fit (None inside: not even
    /// 1; None outside: not computed yet, or not a training task).
    pub largest: Option<(Option<u64>, Option<u64>)>,
    /// A parallel layout's kinds of rank, each with its own stacked bar (empty when every GPU
    /// holds the same).
    pub ranks: Vec<RankBar>,
}

/// One kind of rank of a parallel layout in the verdict: its GPUs and what fills each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankBar {
    /// First and last pipeline stage.
    pub stages: (u64, u64),
    /// `embedding`, `head`, `embedding+head` or `layers`.
    pub role: String,
    /// GPUs of this kind.
    pub count: u64,
    /// Device bytes of one of them.
    pub device_bytes: u64,
    /// The same keys as the answer's segments.
    pub segments: Vec<Segment>,
    /// transformers' `device_map="auto"`: this bar is GPU `n`, holding decoder layers
    /// `layers.0..layers.0 + layers.1` (a training rank kind: `None`).
    pub device: Option<(u64, (u64, u64))>,
}

/// One GPU's stacked bar: its tensors' parts, what its peak holds beyond them (`transient`), and what
/// the device shows beyond the peak (`overhead`: CUDA context, workspace, allocator cache, NCCL),
/// largest first, so the parts add up to the device bytes.
fn bar_segments(parts: &[(&'static str, u64)], peak_bytes: u64, device_bytes: u64) -> Vec<Segment> {
    let tensors: u64 = parts.iter().map(|p| p.1).sum();
    let mut segments: Vec<Segment> = parts
        .iter()
        .copied()
        .chain([
            ("transient", peak_bytes.saturating_sub(tensors)),
            (
                "overhead",
                device_bytes.saturating_sub(peak_bytes.max(tensors)),
            ),
        ])
        .filter(|p| p.1 > 0)
        .map(|(key, bytes)| Segment {
            key: key.into(),
            bytes,
        })
        .collect();
    segments.sort_by_key(|s| std::cmp::Reverse(s.bytes));
    segments
}

/// One GPU of transformers' `device_map="auto"` as a verdict bar: its weights, its layers' KV
/// cache, its activations (the logits on the head's GPU), and the CUDA context and workspace.
fn device_bar(d: &vram_core::infer::device_map::DeviceShare) -> RankBar {
    // the peak is weights + KV + the GPU's transient activations
    let activations = d
        .peak_allocated_bytes
        .saturating_sub(d.weights_bytes.saturating_add(d.kv_cache_bytes))
        .max(d.activations_bytes);
    let parts = [
        ("weights", d.weights_bytes),
        ("kv_cache", d.kv_cache_bytes),
        ("activations", activations),
    ];
    let segments = bar_segments(&parts, d.peak_allocated_bytes, d.device_bytes);
    let role = match (d.embedding, d.head) {
        (true, true) => "embedding+head",
        (true, false) => "embedding",
        (false, true) => "head",
        (false, false) => "layers",
    };
    RankBar {
        stages: (d.device, d.device),
        role: role.into(),
        count: 1,
        device_bytes: d.device_bytes,
        segments,
        device: Some((d.device, (d.first_layer, d.layers))),
    }
}

fn rank_bar(r: &vram_core::train::ranks::RankEstimate) -> RankBar {
    let parts = [
        ("weights", r.weights_bytes),
        // the gradients live at the peak (FSDP2's unsharded accumulators under a pipeline)
        ("gradients", r.peak_gradients_bytes),
        ("optimizer", r.optimizer_bytes),
        ("activations", r.activations_bytes),
        ("communication", r.communication_bytes),
    ];
    let segments = bar_segments(&parts, r.peak_allocated_bytes, r.device_bytes);
    RankBar {
        stages: (r.stage, r.last_stage),
        role: r.role.clone(),
        count: r.count,
        device_bytes: r.device_bytes,
        segments,
        device: None,
    }
}

impl Answer {
    /// Host RAM for the whole run when anything is offloaded (every GPU process offloads its own
    /// shard to the RAM of its node).
    pub fn host_bytes(&self) -> u64 {
        self.host_bytes_per_gpu.saturating_mul(self.gpus.max(1))
    }
    /// `fits` / `tight` / `no` (the `data-fits` attribute).
    pub fn fits_key(&self) -> &'static str {
        match self.verdict {
            Verdict::Fits => "fits",
            Verdict::Tight => "tight",
            Verdict::DoesNotFit => "no",
        }
    }
}

/// What fills one GPU at the peak phase, from the breakdown rows, largest first, and what the
/// device shows beyond the tensors; sums to the compared total.
fn peak_segments(r: &ModeResult) -> Vec<Segment> {
    let b = &r.breakdown;
    let peak_index = b
        .phases
        .iter()
        .position(|p| *p == r.peak_phase)
        .or_else(|| {
            b.peaks
                .iter()
                .enumerate()
                .max_by_key(|(_, v)| **v)
                .map(|(i, _)| i)
        });
    let mut segments: Vec<Segment> = match peak_index {
        Some(i) => b
            .rows
            .iter()
            .filter_map(|row| {
                let bytes = row.cells.get(i).copied().unwrap_or(0);
                (bytes > 0).then(|| Segment {
                    key: row.key.clone(),
                    bytes,
                })
            })
            .collect(),
        None => Vec::new(),
    };
    segments.sort_by_key(|s| std::cmp::Reverse(s.bytes));
    let tensors: u64 = segments.iter().map(|s| s.bytes).sum();
    if r.device_bytes > tensors {
        segments.push(Segment {
            key: "overhead".into(),
            bytes: r.device_bytes - tensors,
        });
    }
    segments
}

/// The answer of a page's task from its core result.
pub fn answer(page: &PageScenario, r: &ModeResult) -> Answer {
    let vllm = r.budgeted == Budgeted::Infer && page.infer.engine == Engine::Vllm;
    // A device map's verdict is its largest GPU: the legend shows what fills that one (the
    // breakdown rows are the whole model's).
    let mut segments = match r.devices.iter().max_by_key(|d| d.device_bytes) {
        Some(d) => device_bar(d).segments,
        None => peak_segments(r),
    };
    if vllm {
        // vLLM's part beyond its tensors is its non-torch memory and CUDA graphs
        for seg in segments.iter_mut().filter(|s| s.key == "overhead") {
            seg.key = "vllm_overhead".into();
        }
    }
    let serve = (r.budgeted == Budgeted::Infer).then(|| match (&r.serving, vllm) {
        (Some(s), true) => Some(ServeAnswer {
            sequences: s.concurrency_at_context.max(0.0).floor() as u64,
            kv_tokens: Some(s.kv_tokens),
            context: page.infer.seq_len,
            requested: page.infer.batch,
        }),
        _ => r.max_batch.map(|m| ServeAnswer {
            sequences: m,
            kv_tokens: None,
            context: page.infer.seq_len,
            requested: page.infer.batch,
        }),
    });
    let verdict = match (&r.serving, vllm) {
        // vLLM queues what does not fit at once: a load above the concurrency still runs.
        (Some(s), true) => {
            let at_once = s.concurrency_at_context.max(0.0).floor() as u64;
            if !s.fits || s.shortfall_bytes > 0 || at_once == 0 {
                Verdict::DoesNotFit
            } else if at_once < page.infer.batch.max(1) {
                Verdict::Tight
            } else {
                Verdict::Fits
            }
        }
        _ => r.verdict,
    };
    Answer {
        task: page.task,
        verdict,
        total_bytes: r.device_bytes,
        usable_bytes: r.usable_bytes,
        total_kind: if vllm {
            TotalKind::Vllm
        } else {
            TotalKind::Device
        },
        peak_phase: r.peak_phase.clone(),
        gpus: page.gpus(),
        segments,
        host_bytes_per_gpu: r.host_bytes,
        serve: serve.flatten(),
        largest: None,
        ranks: if r.ranks.len() > 1 {
            r.ranks.iter().map(rank_bar).collect()
        } else if r.devices.len() > 1 {
            r.devices.iter().map(device_bar).collect()
        } else {
            Vec::new()
        },
    }
}

/// The answer of the llama.cpp view: its largest GPU (printed buffers + device overhead) against
/// the memory one GPU gives llama.cpp, and the host share when layers or the KV stay in RAM.
pub fn answer_local(page: &PageScenario, r: &crate::local::LocalResult) -> Answer {
    let largest = r.est.devices.iter().max_by_key(|d| d.total_bytes).cloned();
    let mut segments = Vec::new();
    if let Some(d) = &largest {
        for (key, bytes) in [
            ("weights", d.weights_bytes),
            ("kv_cache", d.kv_bytes),
            ("compute", d.compute_bytes),
        ] {
            if bytes > 0 {
                segments.push(Segment {
                    key: key.into(),
                    bytes,
                });
            }
        }
    }
    let tensors: u64 = segments.iter().map(|s| s.bytes).sum();
    if r.device_bytes > tensors {
        segments.push(Segment {
            key: "overhead".into(),
            bytes: r.device_bytes - tensors,
        });
    }
    Answer {
        task: page.task,
        verdict: r.verdict,
        total_bytes: r.device_bytes,
        usable_bytes: r.machine.gpu_usable_bytes,
        total_kind: TotalKind::Device,
        peak_phase: String::new(),
        gpus: 1,
        segments,
        host_bytes_per_gpu: r.est.host_total_bytes,
        serve: None,
        largest: None,
        ranks: Vec::new(),
    }
}
