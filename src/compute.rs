//! Everything the results section shows, computed from `vram_core` for one model and page scenario:
//! the budgets, the fit verdict against the GPU, the breakdown table (components × phases) with the
//! core's explained terms, the largest batch and sequence that fit, the cheapest changes that make a
//! run fit, and the chart series. No memory formula lives here: each figure is a core result, the
//! page only varies scenario fields and reads the totals back.

use crate::page_scenario::PageScenario;
use vram_core::gpu_catalog::Verdict;
use vram_core::infer::{self, InferEstimate};
use vram_core::report::{DeviceOverheads, Phase, Term};
use vram_core::scenario::{AttentionImpl, Engine};
use vram_core::train::{self, Budget, BudgetKind, TrainEstimate};
use vram_core::{ModelSpec, Scenario};

/// Which budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Budgeted {
    /// Training.
    Train,
    /// Inference.
    Infer,
}

/// One row of the breakdown table.
#[derive(Clone, Debug, PartialEq)]
pub struct BreakdownRow {
    /// Component key (`weights`, `gradients`, `kv_cache`, ...).
    pub key: String,
    /// Bytes live at each phase's peak (0 where absent).
    pub cells: Vec<u64>,
    /// The core's explanations for this row.
    pub terms: Vec<Term>,
}

/// Components × phases.
#[derive(Clone, Debug, PartialEq)]
pub struct Breakdown {
    /// Phase names in order.
    pub phases: Vec<String>,
    /// One row per component.
    pub rows: Vec<BreakdownRow>,
    /// Peak allocated per phase.
    pub peaks: Vec<u64>,
    /// Terms of the totals (peak allocated, reserved, device) and any not tied to a row.
    pub other_terms: Vec<Term>,
}

/// Keys of terms that explain totals rather than a component.
const TOTAL_KEYS: &[&str] = &["peak_allocated", "peak_reserved", "device_total", "device"];

/// Terms whose key differs from the component row they explain: `(term, row)`.
const TERM_ROWS: &[(&str, &str)] = &[("zero3_gathered", "zero3_gathered_params")];

/// Activation terms of the training model: shown under the `activations` row.
fn belongs_to(row: &str, term_key: &str, row_keys: &[String]) -> bool {
    let term_row = TERM_ROWS
        .iter()
        .find(|(t, _)| *t == term_key)
        .map_or(term_key, |(_, r)| *r);
    if term_row == row {
        return true;
    }
    if row_keys.iter().any(|r| r == term_row) || TOTAL_KEYS.contains(&term_key) {
        return false;
    }
    row == "activations"
}

/// Builds the table from the core's phases and terms.
pub fn breakdown(phases: &[Phase], terms: &[Term]) -> Breakdown {
    let mut keys: Vec<String> = Vec::new();
    for p in phases {
        for (k, b) in &p.components {
            if *b > 0 && !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    let rows: Vec<BreakdownRow> = keys
        .iter()
        .map(|k| BreakdownRow {
            key: k.clone(),
            cells: phases
                .iter()
                .map(|p| {
                    p.components
                        .iter()
                        .filter(|(c, _)| c == k)
                        .map(|(_, b)| *b)
                        .fold(0, u64::saturating_add)
                })
                .collect(),
            terms: terms
                .iter()
                .filter(|t| belongs_to(k, &t.key, &keys))
                .cloned()
                .collect(),
        })
        .collect();
    let used: Vec<&str> = rows
        .iter()
        .flat_map(|r| r.terms.iter().map(|t| t.key.as_str()))
        .collect();
    let other_terms = terms
        .iter()
        .filter(|t| !used.contains(&t.key.as_str()))
        .cloned()
        .collect();
    Breakdown {
        phases: phases.iter().map(|p| p.name.clone()).collect(),
        rows,
        peaks: phases.iter().map(|p| p.peak_allocated_bytes).collect(),
        other_terms,
    }
}

/// The result of one mode.
#[derive(Clone, Debug, PartialEq)]
pub struct ModeResult {
    /// Which budget.
    pub budgeted: Budgeted,
    /// Peak tensor bytes (`max_memory_allocated`).
    pub peak_allocated_bytes: u64,
    /// Peak reserved by the caching allocator (training only).
    pub peak_reserved_bytes: Option<u64>,
    /// What `nvidia-smi` shows: the total compared with the GPU.
    pub device_bytes: u64,
    /// Phase of the peak.
    pub peak_phase: String,
    /// GPU usable bytes.
    pub usable_bytes: u64,
    /// Fits / tight / does not fit.
    pub verdict: Verdict,
    /// The table.
    pub breakdown: Breakdown,
    /// The largest batch that fits (None: not even 1).
    pub max_batch: Option<u64>,
    /// The largest sequence / context that fits.
    pub max_seq: Option<u64>,
    /// Host RAM per GPU process for what is offloaded (ZeRO-Offload; 0 when nothing is).
    pub host_bytes: u64,
    /// Notes and warnings of the core.
    pub notes: Vec<String>,
    /// vLLM serving figures (inference with the vLLM engine).
    pub serving: Option<infer::ServingEstimate>,
    /// Every kind of rank of a parallel training layout (empty for plain data parallel, where all
    /// GPUs hold the same).
    pub ranks: Vec<vram_core::train::ranks::RankEstimate>,
    /// transformers inference on several GPUs (`device_map="auto"`): what each GPU holds (empty
    /// on one GPU and for the other engines).
    pub devices: Vec<infer::device_map::DeviceShare>,
}

/// Results of the page.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct PageResults {
    /// Training, when shown: the result or the core's scenario error.
    pub train: Option<Result<ModeResult, String>>,
    /// Inference, when shown.
    pub infer: Option<Result<ModeResult, String>>,
}

fn overheads() -> DeviceOverheads {
    DeviceOverheads::default()
}

/// `(x, device total)` for every scenario of a sweep that the core estimates.
fn train_device_sweep(spec: &ModelSpec, xs: &[u64], scenarios: &[Scenario]) -> Vec<(u64, u64)> {
    xs.iter()
        .zip(train::sweep(spec, scenarios, &overheads()))
        .filter_map(|(&x, t)| t.ok().map(|t| (x, t.device_bytes)))
        .collect()
}

/// The compared total and verdict of an inference estimate: transformers compares the device total
/// with the GPU; vLLM fits when its KV pool holds `batch` sequences of `seq_len` tokens (as
/// `vram_core::infer::solve` decides).
fn infer_verdict(e: &InferEstimate, s: &Scenario) -> (u64, Verdict) {
    totals_verdict(&infer::InferTotals::of(e), s)
}

/// [`infer_verdict`] of the core's totals.
fn totals_verdict(e: &infer::InferTotals, s: &Scenario) -> (u64, Verdict) {
    match s.engine {
        Engine::Transformers | Engine::LlamaCpp => (
            e.device_bytes,
            Verdict::of(e.device_bytes, s.serving.gpu_memory_bytes),
        ),
        Engine::Vllm => {
            let fits = e.shortfall_bytes == 0
                && e.serving_fits
                && e.concurrency_at_context >= s.batch as f64;
            let used = e.device_bytes;
            (
                used,
                if fits {
                    Verdict::Fits
                } else {
                    Verdict::DoesNotFit
                },
            )
        }
    }
}

/// Largest sequence tried by the training solver: the config's context, else 128 Ki tokens.
fn seq_cap(spec: &ModelSpec) -> u64 {
    match spec.max_position_embeddings {
        0 => 131_072,
        m => m,
    }
}

/// Computes the training result.
pub fn train_result(
    spec: &ModelSpec,
    s: &Scenario,
    usable_bytes: u64,
) -> Result<ModeResult, String> {
    let mut r = train_base(spec, s, usable_bytes)?;
    r.max_batch = train_max_batch(spec, s, usable_bytes);
    r.max_seq = train_max_seq(spec, s, usable_bytes);
    Ok(r)
}

/// The training result without the solvers: one estimate (the headline, verdict and table);
/// `max_batch` and `max_seq` are left empty for [`train_max_batch`] and [`train_max_seq`] (the page
/// fills them in a later task).
pub fn train_base(spec: &ModelSpec, s: &Scenario, usable_bytes: u64) -> Result<ModeResult, String> {
    let e: TrainEstimate =
        train::estimate_training(spec, s, &overheads()).map_err(|e| e.to_string())?;
    let verdict = Verdict::of(e.device_bytes, usable_bytes);
    Ok(ModeResult {
        budgeted: Budgeted::Train,
        peak_allocated_bytes: e.peak_allocated_bytes,
        peak_reserved_bytes: Some(e.peak_reserved_bytes),
        device_bytes: e.device_bytes,
        peak_phase: e.peak_phase.clone(),
        usable_bytes,
        verdict,
        breakdown: breakdown(&e.phases, &e.terms),
        max_batch: None,
        max_seq: None,
        host_bytes: e.cpu_offload_bytes,
        notes: Vec::new(),
        serving: None,
        devices: Vec::new(),
        ranks: if s.layout.is_model_parallel() {
            e.ranks.clone()
        } else {
            Vec::new()
        },
    })
}

fn device_budget(usable_bytes: u64) -> Budget {
    Budget {
        bytes: usable_bytes,
        kind: BudgetKind::Device,
    }
}

/// The largest micro-batch that fits (`vram_core::train::max_batch`, up to 4096). Does not depend
/// on `s.batch` (the solver sets it), so the page keeps it while only the batch changes.
pub fn train_max_batch(spec: &ModelSpec, s: &Scenario, usable_bytes: u64) -> Option<u64> {
    train::max_batch(spec, s, &overheads(), device_budget(usable_bytes), 4096)
}

/// The longest sequence that fits (`vram_core::train::max_seq_len`, up to the config's context).
/// Does not depend on `s.seq_len`.
pub fn train_max_seq(spec: &ModelSpec, s: &Scenario, usable_bytes: u64) -> Option<u64> {
    train::max_seq_len(
        spec,
        s,
        &overheads(),
        device_budget(usable_bytes),
        seq_cap(spec),
    )
}

/// Computes the inference result.
pub fn infer_result(spec: &ModelSpec, s: &Scenario) -> Result<ModeResult, String> {
    let mut r = infer_base(spec, s)?;
    infer_solve(spec, s, &mut r);
    Ok(r)
}

/// The inference result without the solvers (one estimate); [`infer_solve`] fills `max_batch`,
/// `max_seq` and `suggestions`.
pub fn infer_base(spec: &ModelSpec, s: &Scenario) -> Result<ModeResult, String> {
    let e = infer::estimate_inference(spec, s, &overheads()).map_err(|e| e.to_string())?;
    let (bytes, verdict) = infer_verdict(&e, s);
    let peak_phase = e
        .phases
        .iter()
        .max_by_key(|p| p.peak_allocated_bytes)
        .map(|p| p.name.clone())
        .unwrap_or_default();
    Ok(ModeResult {
        budgeted: Budgeted::Infer,
        peak_allocated_bytes: e.peak_allocated_bytes,
        peak_reserved_bytes: None,
        device_bytes: bytes,
        peak_phase,
        usable_bytes: s.serving.gpu_memory_bytes,
        verdict,
        breakdown: breakdown(&e.phases, &e.terms),
        max_batch: None,
        max_seq: None,
        host_bytes: 0,
        notes: e.notes.clone(),
        serving: (s.engine == Engine::Vllm).then(|| e.serving.clone()),
        ranks: Vec::new(),
        devices: e.devices.clone(),
    })
}

/// Fills the solvers of an [`infer_base`] result: the longest context and largest batch that fit.
pub fn infer_solve(spec: &ModelSpec, s: &Scenario, r: &mut ModeResult) {
    r.max_seq = infer::max_context(spec, s, &overheads())
        .ok()
        .filter(|&v| v > 0);
    r.max_batch = infer::max_batch(spec, s, &overheads())
        .ok()
        .filter(|&v| v > 0);
}

/// Computes every shown result.
pub fn page_results(spec: &ModelSpec, page: &PageScenario) -> PageResults {
    let usable = page.gpu.usable_bytes();
    PageResults {
        train: page
            .task
            .trains()
            .then(|| train_result(spec, &page.train_scenario(), usable)),
        infer: (!page.task.trains()).then(|| infer_result(spec, &page.infer_scenario())),
    }
}

/// One line of a chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// (x, bytes or count) points.
    pub points: Vec<(u64, u64)>,
}

/// A swept chart: memory (or capacity) against batch or sequence length.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Sweep {
    /// Lines.
    pub series: Vec<Series>,
    /// Index in `series` of the main line (the scenario's choice; 0 by default). The chart sets its
    /// y range from this line and draws the others as light dashed comparison lines.
    pub primary: usize,
    /// The GPU's usable memory (for memory charts).
    pub capacity_bytes: Option<u64>,
    /// The largest fitting x, marked on the chart.
    pub largest_fit: Option<u64>,
    /// The x of the user's current setting (batch, sequence or context length), marked on the
    /// chart; the swept points include it when it lies inside their range.
    pub current: Option<u64>,
}

/// `xs` with `x` added when it lies inside their range (sorted, deduplicated).
fn with_x(mut xs: Vec<u64>, x: u64) -> Vec<u64> {
    if let (Some(&lo), Some(&hi)) = (xs.first(), xs.last()) {
        if (lo..=hi).contains(&x) {
            xs.push(x);
        }
    }
    xs.sort_unstable();
    xs.dedup();
    xs
}

/// Powers of two from `from` up to `to` (inclusive), at most `max_points`.
pub fn powers_of_two(from: u64, to: u64, max_points: usize) -> Vec<u64> {
    let mut v = Vec::new();
    let mut x = from.max(1);
    while x <= to && v.len() < max_points {
        v.push(x);
        x = x.saturating_mul(2);
    }
    v
}

/// Training device memory against micro-batch size, with the current batch (`s.batch`) marked.
pub fn train_batch_sweep(
    spec: &ModelSpec,
    s: &Scenario,
    usable: u64,
    max_batch: Option<u64>,
) -> Sweep {
    let top = max_batch.map_or(16, |m| m.saturating_mul(2).max(16));
    let xs = with_x(powers_of_two(1, top, 9), s.batch);
    let scenarios: Vec<Scenario> = xs
        .iter()
        .map(|&b| Scenario {
            batch: b,
            ..s.clone()
        })
        .collect();
    let points = train_device_sweep(spec, &xs, &scenarios);
    Sweep {
        series: vec![Series {
            name: String::new(),
            points,
        }],
        primary: 0,
        capacity_bytes: Some(usable),
        largest_fit: max_batch,
        current: Some(s.batch),
    }
}

/// Training device memory against sequence length, eager and SDPA attention: `series[0]` is eager,
/// `series[1]` SDPA (or flash-attention when the scenario uses it; its memory is SDPA's), named
/// `names` in that order; one unnamed series for a model without attention layers. `primary` is the scenario's choice (`s.attention`), the other one is the
/// comparison; the current sequence length (`s.seq_len`) is marked.
pub fn train_seq_sweep(
    spec: &ModelSpec,
    s: &Scenario,
    usable: u64,
    max_seq: Option<u64>,
    names: [&str; 2],
) -> Sweep {
    let xs = with_x(powers_of_two(256, seq_cap(spec).max(256), 8), s.seq_len);
    let fused = match s.attention {
        AttentionImpl::Eager => AttentionImpl::Sdpa,
        other => other,
    };
    // A model without attention layers (mamba) has one curve, unnamed: the implementation changes
    // nothing.
    let attends = spec.derived().has_attention;
    let impls: &[(AttentionImpl, &str)] = if attends {
        &[(AttentionImpl::Eager, names[0]), (fused, names[1])]
    } else {
        &[(fused, "")]
    };
    let series = impls
        .iter()
        .copied()
        .map(|(attention, name)| {
            let scenarios: Vec<Scenario> = xs
                .iter()
                .map(|&x| Scenario {
                    seq_len: x,
                    attention,
                    ..s.clone()
                })
                .collect();
            Series {
                name: name.to_string(),
                points: train_device_sweep(spec, &xs, &scenarios),
            }
        })
        .collect();
    Sweep {
        series,
        primary: usize::from(attends && s.attention != AttentionImpl::Eager),
        capacity_bytes: Some(usable),
        largest_fit: max_seq,
        current: Some(s.seq_len),
    }
}

/// Inference: device memory (transformers) against context length, and sequences the vLLM KV pool
/// holds at each context length; both mark the current context length (`s.seq_len`).
pub fn infer_context_sweeps(
    spec: &ModelSpec,
    s: &Scenario,
    max_context: Option<u64>,
) -> (Sweep, Sweep) {
    let cap = match spec.max_position_embeddings {
        0 => 131_072,
        m => m,
    };
    let xs = with_x(powers_of_two(512, cap.max(512), 9), s.seq_len);
    let mut mem = Vec::new();
    let mut conc = Vec::new();
    let transformers = Scenario {
        engine: Engine::Transformers,
        ..s.clone()
    };
    for &x in &xs {
        if let Ok(e) = infer::inference_totals(
            spec,
            &Scenario {
                seq_len: x,
                ..transformers.clone()
            },
            &overheads(),
        ) {
            mem.push((x, e.device_bytes));
        }
        let mut v = Scenario {
            seq_len: x,
            engine: Engine::Vllm,
            ..s.clone()
        };
        v.serving.max_model_len = x;
        if let Ok(e) = infer::inference_totals(spec, &v, &overheads()) {
            conc.push((x, e.concurrency_at_context.max(0.0).floor() as u64));
        }
    }
    (
        Sweep {
            series: vec![Series {
                name: String::new(),
                points: mem,
            }],
            primary: 0,
            capacity_bytes: Some(s.serving.gpu_memory_bytes),
            largest_fit: max_context,
            current: Some(s.seq_len),
        },
        Sweep {
            series: vec![Series {
                name: String::new(),
                points: conc,
            }],
            primary: 0,
            capacity_bytes: None,
            largest_fit: None,
            current: Some(s.seq_len),
        },
    )
}
