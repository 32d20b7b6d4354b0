//! "Make it fit": the changes to a page scenario that bring the task within the GPU with at least
//! [`HEADROOM_PERCENT`] to spare, each with its new total computed by the core for the changed
//! scenario, ranked by what the change costs the user. Pure logic, tested natively.
//!
//! Ranking (cheapest first): settings that cost only speed (gradient checkpointing, a smaller
//! micro-batch with more accumulation steps so the global batch stays, optimizer offload), then
//! precision (8-bit AdamW, QLoRA, fp8 / int8 / 4-bit weights, fp8 KV cache), then the workload
//! (a shorter sequence or context), then hardware (N × this GPU, then the smallest single GPU that
//! fits). A change is listed only when it fits: the list never offers a change that would not run.

use crate::page_scenario::{GpuChoice, PageScenario, Task};
use vram_core::gpu_catalog::{GpuKind, GPUS};
use vram_core::infer::{self, InferTotals};
use vram_core::report::DeviceOverheads;
use vram_core::scenario::{BaseQuant, Engine, Lora, LoraTargets, Optimizer, ZeroStage};
use vram_core::train::{self, Budget, BudgetKind};
use vram_core::{ModelSpec, Scenario};

/// Share of a GPU's usable memory a suggested change may use, in percent: the caching allocator's
/// fragmentation and the run-to-run spread of the first step are commonly a few percent of the
/// peak (measured.md, finding 1), so a change that lands at 99 % is not one to recommend.
pub const HEADROOM_PERCENT: u64 = 95;

/// Whether `total` leaves the headroom on a GPU with `usable` bytes.
pub fn within_headroom(total_bytes: u64, usable_bytes: u64) -> bool {
    (total_bytes as u128) * 100 <= (usable_bytes as u128) * HEADROOM_PERCENT as u128
}

/// What a suggestion changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// Turn on gradient checkpointing.
    Checkpointing,
    /// A smaller micro-batch with more gradient-accumulation steps (same global batch).
    MicroBatch {
        /// New micro-batch.
        batch: u64,
        /// New accumulation steps.
        accumulation: u64,
    },
    /// DeepSpeed ZeRO-Offload of the optimizer states to CPU RAM.
    OffloadOptimizer,
    /// 8-bit AdamW (bitsandbytes).
    Adamw8bit,
    /// LoRA r 16 on all linear layers (moves a full training to Fine-tune).
    Lora,
    /// QLoRA: NF4 base, LoRA r 16, gradient checkpointing.
    Qlora,
    /// Weights in this format (serving).
    Weights {
        /// Format name as the core reads it.
        format: &'static str,
    },
    /// fp8 KV cache (vLLM).
    Fp8Kv,
    /// A shorter sequence (training) or context (serving): the longest that fits.
    ShorterSeq {
        /// Tokens.
        seq_len: u64,
    },
    /// ZeRO-3 data parallel over this many of the chosen GPU (training).
    Zero3Gpus {
        /// GPU count.
        gpus: u64,
    },
    /// vLLM tensor parallel over this many of the chosen GPU.
    TensorParallel {
        /// GPU count.
        gpus: u64,
    },
    /// transformers with `device_map="auto"` over this many of the chosen GPU (the layers spread
    /// over them, one GPU computing at a time).
    DeviceMap {
        /// GPU count.
        gpus: u64,
    },
    /// The smallest single NVIDIA GPU of the catalog that fits.
    SingleGpu {
        /// Catalog id.
        id: &'static str,
    },
}

/// A change that fits, with its figures from the core.
#[derive(Clone, Debug, PartialEq)]
pub struct Suggestion {
    /// What changes.
    pub change: Change,
    /// The page with the change applied (what a click sets).
    pub page: PageScenario,
    /// The compared total per GPU after the change.
    pub total_bytes: u64,
    /// Usable memory of one GPU after the change.
    pub usable_bytes: u64,
    /// Serving: sequences of the user's context that fit at once after the change.
    pub sequences: Option<u64>,
}

/// Why nothing fits, when no change does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoFit {
    /// The weights alone exceed the GPU.
    WeightsAlone {
        /// Weight bytes per GPU.
        weights_bytes: u64,
        /// Usable bytes.
        usable_bytes: u64,
    },
    /// No change tried brings it within the headroom.
    NothingTried,
}

/// The make-it-fit answer.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Advice {
    /// Changes that fit, cheapest first.
    pub suggestions: Vec<Suggestion>,
    /// Set when the task does not fit and no change does.
    pub no_fit: Option<NoFit>,
}

fn overheads() -> DeviceOverheads {
    DeviceOverheads::default()
}

/// The training figures a suggestion needs: device bytes per GPU and the weights.
fn train_totals(spec: &ModelSpec, s: &Scenario) -> Option<train::TrainTotals> {
    train::training_totals(spec, s, &overheads()).ok()
}

/// Serving figures of a page (vLLM: the pool; transformers: the device total).
fn serve_totals(spec: &ModelSpec, page: &PageScenario) -> Option<InferTotals> {
    infer::inference_totals(spec, &page.infer_scenario(), &overheads()).ok()
}

/// Whether a serving total runs the user's load within the headroom, and the sequences at once.
fn serve_fits(page: &PageScenario, t: &InferTotals) -> (bool, Option<u64>) {
    let usable = page.gpu.usable_bytes();
    match page.infer.engine {
        Engine::Vllm => {
            let seqs = t.concurrency_at_context.max(0.0).floor() as u64;
            // vLLM 0.34 fills the GPU by design, keeping its own margin; earlier releases take
            // the share the user set, with CUDA graphs on top until 0.21
            let room = if t.serving_self_sized {
                t.device_bytes <= usable
            } else {
                within_headroom(t.device_bytes, usable)
            };
            let ok =
                t.shortfall_bytes == 0 && t.serving_fits && seqs >= page.infer.batch.max(1) && room;
            (ok, Some(seqs))
        }
        _ => (within_headroom(t.device_bytes, usable), None),
    }
}

/// NVIDIA data-centre and consumer cards of the catalog, smallest first (CUDA is what the training
/// and vLLM estimates model).
fn nvidia_by_size() -> Vec<&'static vram_core::gpu_catalog::Gpu> {
    let mut v: Vec<_> = GPUS
        .iter()
        .filter(|g| g.kind == GpuKind::Discrete && g.name.starts_with("NVIDIA"))
        .collect();
    v.sort_by_key(|g| g.usable_bytes);
    v
}

/// The smallest NVIDIA GPU larger than `usable` whose page (the same scenario on that GPU) `try_page`
/// accepts: the first fit in order of size.
fn smallest_single_gpu(
    page: &PageScenario,
    usable: u64,
    try_page: impl Fn(Change, PageScenario) -> Option<Suggestion>,
) -> Option<Suggestion> {
    nvidia_by_size()
        .into_iter()
        .filter(|g| g.usable_bytes > usable)
        .find_map(|g| {
            let mut p = page.clone();
            p.gpu = GpuChoice::Catalog(g.id);
            try_page(Change::SingleGpu { id: g.id }, p)
        })
}

/// Why nothing fits: the weights alone, or no single change.
fn no_fit_reason(weights_bytes: u64, usable_bytes: u64) -> NoFit {
    if weights_bytes > usable_bytes {
        NoFit::WeightsAlone {
            weights_bytes,
            usable_bytes,
        }
    } else {
        NoFit::NothingTried
    }
}

/// The make-it-fit changes of the page's task (empty when it already fits with the headroom).
pub fn advise(spec: &ModelSpec, page: &PageScenario) -> Advice {
    match page.task {
        Task::Serve => match page.infer.engine {
            Engine::LlamaCpp => Advice::default(),
            _ => advise_serve(spec, page),
        },
        Task::Finetune | Task::Train => advise_train(spec, page),
    }
}

fn advise_train(spec: &ModelSpec, page: &PageScenario) -> Advice {
    let s = page.train_scenario();
    let usable = page.gpu.usable_bytes();
    let Some(now) = train_totals(spec, &s) else {
        return Advice::default();
    };
    if within_headroom(now.device_bytes, usable) {
        return Advice::default();
    }
    let mut out: Vec<Suggestion> = Vec::new();
    let try_page = |change: Change, next: PageScenario| -> Option<Suggestion> {
        let t = train_totals(spec, &next.train_scenario())?;
        let u = next.gpu.usable_bytes();
        within_headroom(t.device_bytes, u).then_some(Suggestion {
            change,
            page: next,
            total_bytes: t.device_bytes,
            usable_bytes: u,
            sequences: None,
        })
    };
    let with = |f: &dyn Fn(&mut Scenario)| {
        let mut p = page.clone();
        f(p.training_mut());
        p
    };
    if !s.grad_checkpointing {
        out.extend(try_page(
            Change::Checkpointing,
            with(&|t| t.grad_checkpointing = true),
        ));
    }
    if s.batch > 1 {
        let budget = Budget {
            bytes: usable / 100 * HEADROOM_PERCENT,
            kind: BudgetKind::Device,
        };
        if let Some(fit) = train::max_batch(spec, &s, &overheads(), budget, s.batch - 1) {
            // The largest divisor of the batch that fits keeps the global batch exact.
            if let Some(b) = (1..=fit.min(s.batch - 1))
                .rev()
                .find(|b| s.batch.is_multiple_of(*b))
            {
                let acc = s.grad_accumulation.max(1) * (s.batch / b);
                out.extend(try_page(
                    Change::MicroBatch {
                        batch: b,
                        accumulation: acc,
                    },
                    with(&|t| {
                        t.batch = b;
                        t.grad_accumulation = acc;
                    }),
                ));
            }
        }
    }
    if !s.offload_optimizer && s.lora.is_none() {
        out.extend(try_page(
            Change::OffloadOptimizer,
            with(&|t| {
                t.offload_optimizer = true;
                if t.zero.0 == 0 {
                    t.zero = ZeroStage(2);
                }
            }),
        ));
    }
    if s.lora.is_none() && s.optimizer == Optimizer::Adamw {
        out.extend(try_page(
            Change::Adamw8bit,
            with(&|t| t.optimizer = Optimizer::Adamw8bit),
        ));
    }
    let qlora_of = |t: &Scenario| {
        let prev = t.lora.clone();
        Scenario {
            lora: Some(Lora {
                r: prev.as_ref().map_or(16, |l| l.r),
                alpha: prev.as_ref().map_or(32, |l| l.alpha),
                targets: prev.map_or(LoraTargets::AllLinear, |l| l.targets),
                base_quant: BaseQuant::Nf4,
            }),
            grad_checkpointing: true,
            offload_optimizer: false,
            offload_params: false,
            ..t.clone()
        }
    };
    match page.task {
        Task::Train => {
            // Full training that does not fit: the fine-tuning task over the same settings.
            for (change, quant) in [
                (Change::Lora, BaseQuant::None),
                (Change::Qlora, BaseQuant::Nf4),
            ] {
                let mut p = page.clone();
                p.task = Task::Finetune;
                p.finetune = Scenario {
                    lora: Some(Lora {
                        r: 16,
                        alpha: 32,
                        targets: LoraTargets::AllLinear,
                        base_quant: quant,
                    }),
                    grad_checkpointing: true,
                    offload_optimizer: false,
                    offload_params: false,
                    optimizer: Optimizer::Adamw,
                    ..s.clone()
                };
                out.extend(try_page(change, p));
            }
        }
        Task::Finetune => {
            if s.lora
                .as_ref()
                .is_some_and(|l| l.base_quant != BaseQuant::Nf4)
            {
                let q = qlora_of(&s);
                out.extend(try_page(Change::Qlora, with(&|t| *t = q.clone())));
            }
        }
        Task::Serve => {}
    }
    let budget = Budget {
        bytes: usable / 100 * HEADROOM_PERCENT,
        kind: BudgetKind::Device,
    };
    if let Some(seq) = train::max_seq_len(spec, &s, &overheads(), budget, s.seq_len)
        .filter(|&m| m < s.seq_len && m >= 128)
    {
        // Round down to a multiple of 128 tokens: the lengths people set.
        let seq = seq / 128 * 128;
        out.extend(try_page(
            Change::ShorterSeq { seq_len: seq },
            with(&|t| t.seq_len = seq),
        ));
    }
    // The fewest of this GPU (one node at most) that fit.
    out.extend(
        [2u64, 4, 8]
            .into_iter()
            .filter(|&g| g > s.gpus)
            .find_map(|gpus| {
                try_page(
                    Change::Zero3Gpus { gpus },
                    with(&|t| {
                        t.gpus = gpus;
                        t.zero = ZeroStage(3);
                    }),
                )
            }),
    );
    if s.gpus <= 1 {
        out.extend(smallest_single_gpu(page, usable, try_page));
    }
    let no_fit = out
        .is_empty()
        .then(|| no_fit_reason(now.weights_bytes, usable));
    Advice {
        suggestions: out,
        no_fit,
    }
}

fn advise_serve(spec: &ModelSpec, page: &PageScenario) -> Advice {
    let usable = page.gpu.usable_bytes();
    let Some(now) = serve_totals(spec, page) else {
        return Advice::default();
    };
    if serve_fits(page, &now).0 {
        return Advice::default();
    }
    let vllm = page.infer.engine == Engine::Vllm;
    let mut out: Vec<Suggestion> = Vec::new();
    let try_page = |change: Change, next: PageScenario| -> Option<Suggestion> {
        crate::page_scenario::validate(&next).ok()?;
        let t = serve_totals(spec, &next)?;
        let (ok, seqs) = serve_fits(&next, &t);
        ok.then(|| Suggestion {
            change,
            total_bytes: t.device_bytes,
            usable_bytes: next.gpu.usable_bytes(),
            sequences: seqs,
            page: next,
        })
    };
    let current = page.infer.weights.clone();
    for format in if vllm {
        ["fp8", "int8", "awq-4bit"]
    } else {
        ["fp8", "int8", "nf4"]
    } {
        if current.as_deref() != Some(format) {
            let mut p = page.clone();
            p.infer.weights = Some(format.into());
            out.extend(try_page(Change::Weights { format }, p));
        }
    }
    if vllm && page.infer.kv_dtype.as_deref() != Some("fp8") {
        let mut p = page.clone();
        p.infer.kv_dtype = Some("fp8".into());
        out.extend(try_page(Change::Fp8Kv, p));
    }
    // The longest context that fits with the headroom (solved on a GPU of 95 % the size).
    let mut probe = page.infer_scenario();
    probe.serving.gpu_memory_bytes = usable / 100 * HEADROOM_PERCENT;
    if let Ok(ctx) = infer::max_context(spec, &probe, &overheads()) {
        let ctx = ctx / 128 * 128;
        if ctx >= 128 && ctx < page.infer.seq_len {
            let mut p = page.clone();
            p.infer.seq_len = ctx;
            if vllm {
                p.infer.serving.max_model_len = ctx;
            }
            out.extend(try_page(Change::ShorterSeq { seq_len: ctx }, p));
        }
    }
    // The fewest of this GPU (up to 8) that fit: vLLM shards the model over them (TP),
    // transformers spreads its layers over them (device_map="auto").
    let now_gpus = if vllm {
        page.infer.serving.tensor_parallel_size.max(1)
    } else {
        page.infer.gpus.max(1)
    };
    out.extend(
        [2u64, 4, 8]
            .into_iter()
            .filter(|&g| g > now_gpus)
            .find_map(|gpus| {
                let mut p = page.clone();
                let change = if vllm {
                    p.infer.serving.tensor_parallel_size = gpus;
                    Change::TensorParallel { gpus }
                } else {
                    p.infer.gpus = gpus;
                    Change::DeviceMap { gpus }
                };
                try_page(change, p)
            }),
    );
    if page.gpus() <= 1 {
        out.extend(smallest_single_gpu(page, usable, try_page));
    }
    let no_fit = out
        .is_empty()
        .then(|| no_fit_reason(now.weights_bytes, usable));
    Advice {
        suggestions: out,
        no_fit,
    }
}

/// One row of the serving precision strip: a weight format and KV type side by side.
#[derive(Clone, Debug, PartialEq)]
pub struct PrecisionRow {
    /// Label (the checkpoint's own format, `fp8`, `fp8 + fp8 KV`, `int8`, `int4`).
    pub label: String,
    /// The page with this precision (what a click sets).
    pub page: PageScenario,
    /// Weight bytes per GPU.
    pub weights_bytes: u64,
    /// KV bytes of the user's load (vLLM: the pool the rest of the memory holds).
    pub kv_bytes: u64,
    /// Compared total per GPU.
    pub total_bytes: u64,
    /// vLLM: KV tokens in the pool; sequences of the context that fit at once.
    pub kv_tokens: Option<u64>,
    /// Sequences of the user's context at once (vLLM).
    pub sequences: Option<u64>,
    /// Whether this row is the page's current precision.
    pub current: bool,
}

/// The precision strip of a serving page: bf16 / fp8 / fp8 + fp8 KV (vLLM) / int8 / int4, each
/// computed by the core; formats the core refuses for this model or engine are left out.
pub fn precision_strip(spec: &ModelSpec, page: &PageScenario) -> Vec<PrecisionRow> {
    if page.task != Task::Serve || page.infer.engine == Engine::LlamaCpp {
        return Vec::new();
    }
    let vllm = page.infer.engine == Engine::Vllm;
    let four = if vllm { "awq-4bit" } else { "nf4" };
    let mut rows: Vec<(&'static str, Option<&str>, Option<&str>)> =
        vec![("", None, None), ("fp8", Some("fp8"), None)];
    if vllm {
        rows.push(("fp8 + fp8 KV", Some("fp8"), Some("fp8")));
    }
    rows.push(("int8", Some("int8"), None));
    rows.push(("int4", Some(four), None));
    rows.into_iter()
        .filter_map(|(label, w, kv)| {
            let mut p = page.clone();
            p.infer.weights = w.map(String::from);
            p.infer.kv_dtype = kv.map(String::from);
            crate::page_scenario::validate(&p).ok()?;
            let e = infer::estimate_inference(spec, &p.infer_scenario(), &overheads()).ok()?;
            let current =
                p.infer.weights == page.infer.weights && p.infer.kv_dtype == page.infer.kv_dtype;
            // transformers over several GPUs: the largest GPU's share, as the total is
            let largest = e.devices.iter().max_by_key(|d| d.device_bytes);
            Some(PrecisionRow {
                // The first row is the checkpoint's own format, as the core names it.
                label: if label.is_empty() {
                    e.weights_format.clone()
                } else {
                    label.to_string()
                },
                weights_bytes: largest.map_or(e.weights_bytes, |d| d.weights_bytes),
                kv_bytes: if vllm {
                    e.serving.kv_pool_bytes
                } else {
                    largest.map_or(e.kv_cache_bytes, |d| d.kv_cache_bytes)
                },
                total_bytes: e.device_bytes,
                kv_tokens: vllm.then_some(e.serving.kv_tokens),
                sequences: vllm.then(|| e.serving.concurrency_at_context.max(0.0).floor() as u64),
                current,
                page: p,
            })
        })
        .collect()
}
