//! The results: per mode a headline (the compared total per GPU against the GPU's usable memory,
//! with the verdict and which total it is), the largest batch and sequence that fit, the cheapest
//! changes that would fit, the breakdown table (components × phases; rows expand to the core's
//! formula and source), then the charts and the share/export buttons.

use crate::chart_view::{chart_text, data_url, download, ChartCanvas};
use crate::charts::{draw_phase_bars, draw_sweep, ChartTheme};
use crate::compute::{self, Budgeted, ModeResult, PageResults, Sweep};
use crate::export;
use crate::i18n::Lang;
use crate::i18n_page::{component, phase};
use crate::load::ModelSource;
use crate::share::SharedState;
use crate::state::{use_state, AppState};
use leptos::leptos_dom::helpers::{request_animation_frame, set_timeout};
use leptos::prelude::*;
use plotters::prelude::*;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use vram_core::units::group_thousands;
use vram_core::{ModelSpec, Scenario};

fn mode_title(lang: Lang, b: Budgeted) -> &'static str {
    match b {
        Budgeted::Train => lang.page().training,
        Budgeted::Infer => lang.page().inference,
    }
}

fn mode_key(b: Budgeted) -> &'static str {
    match b {
        Budgeted::Train => "train",
        Budgeted::Infer => "infer",
    }
}

/// What the card's DOM is built from: it is rebuilt only when this changes (another task, phase
/// list or set of rows); the figures inside are text nodes bound to the result, updated in place on
/// every input (a rebuild of the table was ≈ 2 ms of each input's `vram:shown`, docs/performance.md).
#[derive(Clone, Debug, PartialEq)]
struct CardShape {
    budgeted: Budgeted,
    phases: Vec<String>,
    /// Row keys, and whether the row has terms to expand.
    rows: Vec<(String, bool)>,
    reserved: bool,
    serving: bool,
    notes: Vec<String>,
}

impl CardShape {
    fn of(r: &ModeResult) -> Self {
        CardShape {
            budgeted: r.budgeted,
            phases: r.breakdown.phases.clone(),
            rows: r
                .breakdown
                .rows
                .iter()
                .map(|row| (row.key.clone(), !row.terms.is_empty()))
                .collect(),
            reserved: r.peak_reserved_bytes.is_some(),
            serving: r.serving.is_some(),
            notes: r.notes.clone(),
        }
    }
}

type ModeMemo = Memo<Option<Result<ModeResult, String>>>;

/// Reads `f` of the current result (None while there is none or it is an error).
fn read<T>(mode: ModeMemo, f: impl FnOnce(&ModeResult) -> T) -> Option<T> {
    mode.with(|m| m.as_ref().and_then(|r| r.as_ref().ok()).map(f))
}

fn mode_card(
    state: AppState,
    shape: &CardShape,
    mode: ModeMemo,
    pending: Memo<bool>,
) -> impl IntoView {
    let lang = state.lang.get();
    let t = lang.page();
    let key = mode_key(shape.budgeted);
    let bytes_text = move |x: Option<u64>| x.map_or_else(String::new, |x| state.fmt_bytes(x));
    let head = shape
        .phases
        .iter()
        .map(|p| view! { <th scope="col" class="num" title=crate::i18n_page::phase_tip(lang, p)>{phase(lang, p)}</th> })
        .collect_view();
    let ncols = shape.phases.len() + 1;
    let nphases = shape.phases.len();
    let rows = shape
        .rows
        .iter()
        .enumerate()
        .map(|(ri, (row_key, has_terms))| {
            let cell = move |j: usize| read(mode, |r| r.breakdown.rows.get(ri).and_then(|x| x.cells.get(j).copied()).unwrap_or(0)).unwrap_or(0);
            let cells = (0..nphases)
                .map(|j| {
                    view! {
                        <td class="num" data-bytes=move || cell(j).to_string()>
                            {move || match cell(j) {
                                0 => "—".to_string(),
                                c => state.fmt_bytes(c),
                            }}
                        </td>
                    }
                })
                .collect_view();
            let has_terms = *has_terms;
            let (open, set_open) = signal(false);
            let label = component(lang, row_key);
            let row_key = row_key.clone();
            let row_key2 = row_key.clone();
            view! {
                <tr data-testid=format!("{key}-row-{row_key}")>
                    <th scope="row">
                        {if has_terms {
                            view! {
                                <button
                                    type="button"
                                    class="row-toggle"
                                    aria-expanded=move || open.get().to_string()
                                    data-testid=format!("{key}-expand-{row_key}")
                                    on:click=move |_| set_open.update(|o| *o = !*o)
                                >
                                    {move || if open.get() { "▾ " } else { "▸ " }}
                                    {label.clone()}
                                </button>
                            }
                                .into_any()
                        } else {
                            view! { <span>{label.clone()}</span> }.into_any()
                        }}
                    </th>
                    {cells}
                </tr>
                {move || {
                    open.get().then(|| {
                        let terms = read(mode, |r| r.breakdown.rows.get(ri).map(|x| x.terms.clone()))
                            .flatten()
                            .unwrap_or_default();
                        view! {
                            <tr class="term-row" data-testid=format!("{key}-terms-{}", row_key2)>
                                <td colspan=ncols.to_string()>{terms_list(lang, &terms)}</td>
                            </tr>
                        }
                    })
                }}
            }
        })
        .collect_view();
    let peaks = (0..nphases)
        .map(|j| view! { <td class="num">{move || bytes_text(read(mode, |r| r.breakdown.peaks.get(j).copied().unwrap_or(0)))}</td> })
        .collect_view();
    let serving = shape.serving.then(|| {
        view! {
            <p class="serving" data-testid="vllm-serving">
                {t.kv_tokens} ": " <strong>{move || read(mode, |r| r.serving.as_ref().map(|s| group_thousands(s.kv_tokens))).flatten().unwrap_or_default()}</strong>
                " · " {t.concurrency} ": "
                <strong>{move || read(mode, |r| r.serving.as_ref().map(|s| format!("{:.2}", s.max_concurrency))).flatten().unwrap_or_default()}</strong>
            </p>
        }
    });
    let notes = (!shape.notes.is_empty()).then(|| {
        view! {
            <div class="notes">
                <strong>{t.notes}</strong>
                <ul>{shape.notes.iter().map(|n| view! { <li>{n.clone()}</li> }).collect_view()}</ul>
            </div>
        }
    });
    // While the solvers run (a task after the headline's frame) the fits line says so.
    let fit_value = move |f: fn(&ModeResult) -> Option<u64>| {
        move || {
            if pending.get() {
                "…".to_string()
            } else {
                read(mode, f)
                    .flatten()
                    .map_or_else(|| t.none_fits.to_string(), group_thousands)
            }
        }
    };
    let device = move || read(mode, |r| r.device_bytes);
    let allocated = move || read(mode, |r| r.peak_allocated_bytes);
    let reserved = shape.reserved.then(|| {
        view! { " · " {t.reserved} ": " <strong>{move || bytes_text(read(mode, |r| r.peak_reserved_bytes).flatten())}</strong> }
    });
    view! {
        <section class="card result-card" data-testid=format!("{key}-result") aria-label=mode_title(lang, shape.budgeted)>
            <h2>{mode_title(lang, shape.budgeted)}</h2>
            <p class="device-line">
                {t.total_device_short} ": "
                <span data-testid=format!("{key}-device") data-bytes=move || device().unwrap_or(0).to_string()>{move || bytes_text(device())}</span>
                " / " <span data-testid=format!("{key}-usable")>{move || bytes_text(read(mode, |r| r.usable_bytes))}</span>
            </p>
            <p class="sub-totals">
                {t.allocated} ": "
                <strong data-testid=format!("{key}-allocated") data-bytes=move || allocated().unwrap_or(0).to_string()>
                    {move || bytes_text(allocated())}
                </strong>
                " (" {move || read(mode, |r| phase(lang, &r.peak_phase)).unwrap_or_default()} ")"
                {reserved}
            </p>
            <p class="fits-line">
                {t.largest_batch} ": " <strong data-testid=format!("{key}-max-batch")>{fit_value(|r| r.max_batch)}</strong>
                " · " {t.largest_seq} ": " <strong data-testid=format!("{key}-max-seq")>{fit_value(|r| r.max_seq)}</strong>
            </p>
            {serving}
            {move || mode.with(|m| m.as_ref().and_then(|r| r.as_ref().ok()).and_then(|r| crate::parallel_view::ranks_view(state, r)))}
            {move || mode.with(|m| m.as_ref().and_then(|r| r.as_ref().ok()).and_then(|r| measured_table(state, r)))}
            <h3>{t.breakdown}</h3>
            <div class="table-wrap">
                <table class="breakdown" data-testid=format!("{key}-breakdown")>
                    <thead>
                        <tr>
                            <th scope="col"></th>
                            {head}
                        </tr>
                    </thead>
                    <tbody>{rows}</tbody>
                    <tfoot>
                        <tr>
                            <th scope="row">{t.peak_row}</th>
                            {peaks}
                        </tr>
                    </tfoot>
                </table>
            </div>
            <details class="how">
                <summary>{t.how}</summary>
                {move || read(mode, |r| terms_list(lang, &r.breakdown.other_terms))}
            </details>
            {notes}
        </section>
    }
}

/// Measured (from a dropped `vram measure` report) beside estimated, per phase peak and component.
fn measured_table(state: AppState, r: &ModeResult) -> Option<impl IntoView> {
    let rep = state.report.get()?;
    let is_train = rep.scenario.mode == vram_core::scenario::Mode::Train;
    if is_train != (r.budgeted == Budgeted::Train) {
        return None;
    }
    let lang = state.lang.get();
    let t = lang.page();
    let b = |x: u64| state.fmt_bytes(x);
    let bd = &r.breakdown;
    let row_max = |key: &str| {
        bd.rows
            .iter()
            .find(|x| x.key == key)
            .and_then(|x| x.cells.iter().copied().max())
    };
    let mut rows: Vec<(String, u64, Option<u64>)> = rep
        .measured
        .phases
        .iter()
        .map(|p| {
            let est = bd
                .phases
                .iter()
                .position(|n| *n == p.name)
                .and_then(|i| bd.peaks.get(i).copied());
            (format!("{} (peak)", p.name), p.peak_allocated_bytes, est)
        })
        .collect();
    for (key, m) in [
        ("weights", rep.measured.weights_bytes),
        ("gradients", rep.measured.gradients_bytes),
        ("optimizer", rep.measured.optimizer_bytes),
        ("kv_cache", rep.measured.kv_cache_bytes),
    ] {
        if let Some(m) = m {
            rows.push((component(lang, key), m, row_max(key)));
        }
    }
    Some(view! {
        <div class="measured" data-testid="measured-table">
            <h4>{t.measured_heading} " (" {rep.counting.clone()} ")"</h4>
            <div class="table-wrap">
                <table>
                    <thead>
                        <tr>
                            <th scope="col"></th>
                            <th scope="col" class="num">{t.measured}</th>
                            <th scope="col" class="num">{t.estimated}</th>
                            <th scope="col" class="num">{t.difference}</th>
                        </tr>
                    </thead>
                    <tbody>
                        {rows
                            .into_iter()
                            .map(|(label, m, e)| {
                                let diff = e.filter(|_| m > 0).map_or_else(
                                    || "—".to_string(),
                                    |e| {
                                        let pct = (e as f64 - m as f64) * 100.0 / m as f64;
                                        if pct.abs() < 0.005 {
                                            "0.00 %".to_string()
                                        } else {
                                            format!("{pct:+.2} %")
                                        }
                                    },
                                );
                                view! {
                                    <tr>
                                        <th scope="row">{label}</th>
                                        <td class="num" data-bytes=m.to_string()>{b(m)}</td>
                                        <td class="num" data-bytes=e.unwrap_or(0).to_string()>{e.map_or_else(|| "—".to_string(), b)}</td>
                                        <td class="num">{diff}</td>
                                    </tr>
                                }
                            })
                            .collect_view()}
                    </tbody>
                </table>
            </div>
        </div>
    })
}

fn terms_list(lang: Lang, terms: &[vram_core::report::Term]) -> impl IntoView {
    let t = lang.page();
    view! {
        <dl class="terms">
            {terms
                .iter()
                .map(|term| {
                    view! {
                        <dt>{term.key.clone()} " = " {group_thousands(term.bytes)} " B"</dt>
                        <dd>
                            <code>{term.formula.clone()}</code>
                            <br />
                            <small>{t.source} ": " {term.source.clone()}</small>
                        </dd>
                    }
                })
                .collect_view()}
        </dl>
    }
}

/// The model's spec, shared by the computations (compared by address: one per loaded model).
#[derive(Clone, Debug)]
pub struct SpecRef(Arc<ModelSpec>);

impl PartialEq for SpecRef {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// What a training result depends on: the model, the scenario and the GPU's usable bytes.
type TrainKey = (SpecRef, Scenario, u64);
/// What an inference result depends on.
type InferKey = (SpecRef, Scenario);

/// The solver part of a training result and its two sweeps, computed after the headline is shown.
#[derive(Clone, Debug, PartialEq)]
struct TrainMore {
    key: TrainKey,
    max_batch: Option<u64>,
    max_seq: Option<u64>,
    batch_sweep: Arc<Sweep>,
    seq_sweep: Arc<Sweep>,
}

/// The solver part of an inference result and its context sweeps.
#[derive(Clone, Debug, PartialEq)]
struct InferMore {
    key: InferKey,
    max_batch: Option<u64>,
    max_seq: Option<u64>,
    context_sweeps: Arc<(Sweep, Sweep)>,
}

/// The last value computed for a key (one entry: fields that do not depend on the changed input
/// keep their value, e.g. the largest batch and the batch sweep while the batch changes).
struct Last<K, V>(Option<(K, V)>);

impl<K: PartialEq, V: Clone> Last<K, V> {
    fn get_or(&mut self, key: K, f: impl FnOnce() -> V) -> V {
        if let Some((k, v)) = &self.0 {
            if *k == key {
                return v.clone();
            }
        }
        let v = f();
        self.0 = Some((key, v.clone()));
        v
    }
}

/// Single-entry caches of the training solvers and sweeps, keyed by what each depends on.
struct TrainCaches {
    /// Keyed by the scenario with `batch = 1`: the solver sets the batch.
    max_batch: Last<TrainKey, Option<u64>>,
    /// Keyed by the scenario with `seq_len = 1`.
    max_seq: Last<TrainKey, Option<u64>>,
    batch_sweep: Last<(TrainKey, Option<u64>), Arc<Sweep>>,
    seq_sweep: Last<(TrainKey, Option<u64>), Arc<Sweep>>,
}

fn compute_train_more(c: &mut TrainCaches, key: TrainKey) -> TrainMore {
    let (spec, s, usable) = (&key.0 .0, &key.1, key.2);
    let no_batch = (
        key.0.clone(),
        Scenario {
            batch: 1,
            ..s.clone()
        },
        usable,
    );
    let no_seq = (
        key.0.clone(),
        Scenario {
            seq_len: 1,
            ..s.clone()
        },
        usable,
    );
    let max_batch = c
        .max_batch
        .get_or(no_batch, || compute::train_max_batch(spec, s, usable));
    let max_seq = c
        .max_seq
        .get_or(no_seq, || compute::train_max_seq(spec, s, usable));
    // Keyed by the whole scenario: the current-setting marker and the main line (the chosen
    // attention) follow every change.
    let batch_sweep = c.batch_sweep.get_or((key.clone(), max_batch), || {
        Arc::new(compute::train_batch_sweep(spec, s, usable, max_batch))
    });
    let seq_sweep = c.seq_sweep.get_or((key.clone(), max_seq), || {
        Arc::new(compute::train_seq_sweep(
            spec,
            s,
            usable,
            max_seq,
            ["eager", "SDPA"],
        ))
    });
    TrainMore {
        key,
        max_batch,
        max_seq,
        batch_sweep,
        seq_sweep,
    }
}

fn compute_infer_more(key: InferKey, base: &ModeResult) -> InferMore {
    let (spec, s) = (&key.0 .0, &key.1);
    let mut r = base.clone();
    compute::infer_solve(spec, s, &mut r);
    let context_sweeps = Arc::new(compute::infer_context_sweeps(spec, s, r.max_seq));
    InferMore {
        key,
        max_batch: r.max_batch,
        max_seq: r.max_seq,
        context_sweeps,
    }
}

/// The page's results: the headline and table of each mode computed at once (one estimate each), the
/// solvers, suggestions and chart sweeps in a task after the next frame (shown as pending meanwhile).
#[derive(Clone, Copy)]
pub struct Results {
    /// Everything shown, merged (solver fields empty while pending).
    pub all: Memo<Option<PageResults>>,
    train_pending: Memo<bool>,
    infer_pending: Memo<bool>,
    train_more: RwSignal<Option<TrainMore>>,
    infer_more: RwSignal<Option<InferMore>>,
    /// The make-it-fit changes and the precision strip of the page they were computed for.
    pub advice: RwSignal<Option<AdviceFor>>,
}

/// Make-it-fit and the precision strip, with the model and page they belong to.
#[derive(Clone, Debug, PartialEq)]
pub struct AdviceFor {
    spec: SpecRef,
    /// The page computed for.
    pub page: crate::page_scenario::PageScenario,
    /// The changes that fit.
    pub advice: crate::fit::Advice,
    /// Serving precisions side by side.
    pub strip: Vec<crate::fit::PrecisionRow>,
}

impl Results {
    /// Whether the training solvers of the page on screen are still being computed.
    pub fn train_pending(&self) -> bool {
        self.train_pending.get()
    }
    /// The advice when it belongs to the page on screen (None while it is computed).
    pub fn current_advice(&self) -> Option<AdviceFor> {
        let state = use_state();
        let page = state.page.get();
        self.advice.get().filter(|a| a.page == page)
    }
    /// The last advice of the same model and task, and whether it is stale (computed for settings
    /// since changed): shown greyed out while the new one is computed, so the list does not vanish
    /// and reappear (and shift the page) on every keystroke.
    pub fn latest_advice(&self) -> Option<(AdviceFor, bool)> {
        let state = use_state();
        let page = state.page.get();
        let name = state
            .model
            .with(|m| m.as_ref().map(|m| m.spec.name.clone()))?;
        self.advice
            .get()
            .filter(|a| a.page.task == page.task && a.spec.0.name == name)
            .map(|a| {
                let stale = a.page != page;
                (a, stale)
            })
    }
}

fn merge_train(mut m: ModeResult, more: &TrainMore) -> ModeResult {
    m.max_batch = more.max_batch;
    m.max_seq = more.max_seq;
    m
}

fn merge_infer(mut m: ModeResult, more: &InferMore) -> ModeResult {
    m.max_batch = more.max_batch;
    m.max_seq = more.max_seq;
    m
}

fn results_signals(state: AppState) -> Results {
    let spec = Memo::new(move |_| {
        state
            .model
            .with(|m| m.as_ref().map(|m| SpecRef(Arc::new(m.spec.clone()))))
    });
    let train_key = Memo::new(move |_| {
        let s = spec.get()?;
        state.page.with(|p| {
            p.task
                .trains()
                .then(|| (s, p.train_scenario(), p.gpu.usable_bytes()))
        })
    });
    let infer_key = Memo::new(move |_| {
        let s = spec.get()?;
        state
            .page
            .with(|p| (!p.task.trains()).then(|| (s, p.infer_scenario())))
    });
    let train_base = Memo::new(move |_| {
        train_key.with(|k| {
            k.as_ref()
                .map(|(spec, s, usable)| compute::train_base(&spec.0, s, *usable))
        })
    });
    let infer_base = Memo::new(move |_| {
        infer_key.with(|k| k.as_ref().map(|(spec, s)| compute::infer_base(&spec.0, s)))
    });
    let train_more = RwSignal::new(None::<TrainMore>);
    let infer_more = RwSignal::new(None::<InferMore>);
    let train_pending = Memo::new(move |_| {
        train_key.with(|k| train_more.with(|m| m.as_ref().map(|m| &m.key) != k.as_ref()))
    });
    let infer_pending = Memo::new(move |_| {
        infer_key.with(|k| infer_more.with(|m| m.as_ref().map(|m| &m.key) != k.as_ref()))
    });
    let all = Memo::new(move |_| {
        spec.with(|s| s.is_some()).then(|| PageResults {
            train: train_base.get().map(|r| {
                r.map(|m| match train_more.get() {
                    Some(more) if !train_pending.get() => merge_train(m, &more),
                    _ => m,
                })
            }),
            infer: infer_base.get().map(|r| {
                r.map(|m| match infer_more.get() {
                    Some(more) if !infer_pending.get() => merge_infer(m, &more),
                    _ => m,
                })
            }),
        })
    });
    // The slow part, after the frame that shows the headline; only the latest input is computed.
    let caches = Rc::new(RefCell::new(TrainCaches {
        max_batch: Last(None),
        max_seq: Last(None),
        batch_sweep: Last(None),
        seq_sweep: Last(None),
    }));
    let generation = Rc::new(Cell::new(0u64));
    let advice = RwSignal::new(None::<AdviceFor>);
    Effect::new(move |_| {
        let tk = train_key.get();
        let ik = infer_key.get();
        let page = state.page.get();
        let sp = spec.get();
        let ib = infer_base.with(|r| r.as_ref().and_then(|r| r.as_ref().ok().cloned()));
        let my = generation.get() + 1;
        generation.set(my);
        let generation = generation.clone();
        let caches = caches.clone();
        request_animation_frame(move || {
            set_timeout(
                move || {
                    if generation.get() != my {
                        return;
                    }
                    if let Some(sp) = sp {
                        let fresh = advice.with_untracked(|a| {
                            a.as_ref().is_some_and(|a| a.page == page && a.spec == sp)
                        });
                        if !fresh {
                            advice.set(Some(AdviceFor {
                                advice: crate::fit::advise(&sp.0, &page),
                                strip: crate::fit::precision_strip(&sp.0, &page),
                                spec: sp,
                                page,
                            }));
                        }
                    }
                    if let Some(k) = tk {
                        if train_more.with_untracked(|m| m.as_ref().map(|m| &m.key) != Some(&k)) {
                            let more = compute_train_more(&mut caches.borrow_mut(), k);
                            train_more.set(Some(more));
                        }
                    }
                    // The llama.cpp view runs its own solvers (local_view.rs).
                    let ik = ik.filter(|k| k.1.engine != vram_core::scenario::Engine::LlamaCpp);
                    if let (Some(k), Some(b)) = (ik, ib) {
                        if infer_more.with_untracked(|m| m.as_ref().map(|m| &m.key) != Some(&k)) {
                            infer_more.set(Some(compute_infer_more(k, &b)));
                        }
                    }
                    crate::perf::measure_settled();
                },
                Duration::ZERO,
            );
        });
    });
    Results {
        advice,
        all,
        train_pending,
        infer_pending,
        train_more,
        infer_more,
    }
}

/// The results section with charts and exports.
#[component]
pub fn ResultsView() -> impl IntoView {
    let state = use_state();
    let res = results_signals(state);
    let results = res.all;
    let card = move |b: Budgeted| {
        let key = mode_key(b);
        let mode: ModeMemo = Memo::new(move |_| {
            results.with(|r| {
                r.as_ref().and_then(|r| match b {
                    Budgeted::Train => r.train.clone(),
                    Budgeted::Infer => r.infer.clone(),
                })
            })
        });
        let shape = Memo::new(move |_| {
            mode.with(|x| {
                x.as_ref()
                    .map(|r| r.as_ref().map(CardShape::of).map_err(Clone::clone))
            })
        });
        let pending = match b {
            Budgeted::Train => res.train_pending,
            Budgeted::Infer => res.infer_pending,
        };
        move || {
            shape.with(|x| {
                x.as_ref().map(|res| match res {
                    Ok(shape) => mode_card(state, shape, mode, pending).into_any(),
                    Err(e) => view! {
                        <section class="card result-card">
                            <p class="field-error" role="alert" data-testid=format!("{key}-error")>{e.clone()}</p>
                        </section>
                    }
                        .into_any(),
                })
            })
        }
    };
    let has_results = Memo::new(move |_| results.with(|r| r.is_some()));
    let local = Memo::new(move |_| state.page.with(|p| p.local_view()));
    let trains = Memo::new(move |_| state.page.with(|p| p.task.trains()));
    view! {
        <div class="results" data-testid="results">
            {move || has_results.get().then(|| view! {
                <crate::verdict_view::VerdictPanel res=res />
                <crate::verdict_view::MakeItFit res=res />
                <crate::verdict_view::PrecisionStrip res=res />
                <div class="results-grid">
                    {move || if trains.get() {
                        card(Budgeted::Train).into_any()
                    } else if local.get() {
                        view! { <crate::local_view::LocalView /> }.into_any()
                    } else {
                        card(Budgeted::Infer).into_any()
                    }}
                </div>
            })}
            {move || has_results.get().then(|| view! { <crate::parallel_view::PlanCard /> <UnitsToggle /> <Charts res=res /> <ShareExport results=results /> })}
        </div>
    }
}

#[component]
fn UnitsToggle() -> impl IntoView {
    let state = use_state();
    view! {
        <div class="units-toggle" role="group" aria-label=move || state.lang.get().page().units>
            <span>{move || state.lang.get().page().units} ": "</span>
            <button type="button" class="secondary small" aria-pressed=move || (!state.use_gb.get()).to_string() data-testid="unit-gib" on:click=move |_| state.set_use_gb.set(false)>"GiB"</button>
            <button type="button" class="secondary small" aria-pressed=move || state.use_gb.get().to_string() data-testid="unit-gb" on:click=move |_| state.set_use_gb.set(true)>"GB"</button>
        </div>
    }
}

fn unit(state: AppState) -> (f64, &'static str) {
    if state.use_gb.get_untracked() {
        (1e9, "GB")
    } else {
        ((1u64 << 30) as f64, "GiB")
    }
}

fn mode_of(r: &PageResults, b: Budgeted) -> Option<ModeResult> {
    match b {
        Budgeted::Train => r.train.clone()?.ok(),
        Budgeted::Infer => r.infer.clone()?.ok(),
    }
}

/// Which chart.
#[derive(Clone, Copy, PartialEq)]
enum ChartKind {
    Phases(Budgeted),
    TrainBatch,
    TrainSeq,
    InferContext,
    InferSeqs,
}

/// What one chart draws: a phase breakdown with the GPU's capacity, or a sweep.
#[derive(Clone, Debug, PartialEq)]
enum ChartData {
    Phases(compute::Breakdown, u64),
    Sweep(Arc<Sweep>),
}

fn chart_data(res: Results, kind: ChartKind) -> Option<ChartData> {
    match kind {
        ChartKind::Phases(b) => res.all.with(|r| {
            let m = r.as_ref().and_then(|r| match b {
                Budgeted::Train => r.train.as_ref()?.as_ref().ok(),
                Budgeted::Infer => r.infer.as_ref()?.as_ref().ok(),
            })?;
            Some(ChartData::Phases(m.breakdown.clone(), m.usable_bytes))
        }),
        ChartKind::TrainBatch => res
            .train_more
            .with(|m| m.as_ref().map(|m| ChartData::Sweep(m.batch_sweep.clone()))),
        ChartKind::TrainSeq => res
            .train_more
            .with(|m| m.as_ref().map(|m| ChartData::Sweep(m.seq_sweep.clone()))),
        ChartKind::InferContext => res.infer_more.with(|m| {
            m.as_ref()
                .map(|m| ChartData::Sweep(Arc::new(m.context_sweeps.0.clone())))
        }),
        ChartKind::InferSeqs => res.infer_more.with(|m| {
            m.as_ref()
                .map(|m| ChartData::Sweep(Arc::new(m.context_sweeps.1.clone())))
        }),
    }
}

fn draw_kind<DB: DrawingBackend>(
    state: AppState,
    data: Memo<Option<ChartData>>,
    kind: ChartKind,
    root: &DrawingArea<DB, plotters::coord::Shift>,
    theme: &ChartTheme,
) -> bool {
    let lang = state.lang.get_untracked();
    let t = lang.page();
    let (unit_bytes, unit_name) = unit(state);
    let Some(d) = data.get_untracked() else {
        return false;
    };
    match (kind, d) {
        (ChartKind::Phases(b), ChartData::Phases(breakdown, usable)) => {
            let names = breakdown
                .rows
                .iter()
                .map(|row| component(lang, &row.key))
                .collect();
            let text = chart_text(
                &format!("{} — {}", mode_title(lang, b), t.chart_phases),
                t.phase,
                unit_name,
                names,
            );
            let mut shown = breakdown.clone();
            shown.phases = shown.phases.iter().map(|p| phase(lang, p)).collect();
            draw_phase_bars(root, &shown, usable, unit_bytes, &text, theme).is_ok()
        }
        (ChartKind::TrainBatch, ChartData::Sweep(sweep)) => {
            let text = chart_text(t.chart_batch, t.batch_axis, unit_name, vec![String::new()]);
            draw_sweep(root, &sweep, unit_bytes, &text, theme).is_ok()
        }
        (ChartKind::TrainSeq, ChartData::Sweep(sweep)) => {
            let names = if sweep.series.len() == 1 {
                vec![String::new()]
            } else {
                vec!["eager".into(), "SDPA".into()]
            };
            let text = chart_text(t.chart_seq, t.seq_axis, unit_name, names);
            draw_sweep(root, &sweep, unit_bytes, &text, theme).is_ok()
        }
        (ChartKind::InferContext, ChartData::Sweep(sweep)) => {
            let text = chart_text(t.chart_ctx_mem, t.ctx_axis, unit_name, vec![String::new()]);
            draw_sweep(root, &sweep, unit_bytes, &text, theme).is_ok()
        }
        (ChartKind::InferSeqs, ChartData::Sweep(sweep)) => {
            let text = chart_text(
                t.chart_ctx_seqs,
                t.ctx_axis,
                t.seqs_axis,
                vec![String::new()],
            );
            draw_sweep(root, &sweep, 1.0, &text, theme).is_ok()
        }
        _ => false,
    }
}

#[component]
fn Charts(res: Results) -> impl IntoView {
    let state = use_state();
    let trains = Memo::new(move |_| state.page.with(|p| p.task.trains()));
    let engine = Memo::new(move |_| state.page.with(|p| p.infer.engine));
    let kinds = move || {
        use vram_core::scenario::Engine;
        let mut v = Vec::new();
        if trains.get() {
            v.push(("train-phases", ChartKind::Phases(Budgeted::Train)));
            v.push(("train-batch", ChartKind::TrainBatch));
            v.push(("train-seq", ChartKind::TrainSeq));
        } else {
            v.push(("infer-phases", ChartKind::Phases(Budgeted::Infer)));
            // Only the engine in use: memory against context for transformers, the sequences the
            // KV pool holds for vLLM, none of the two for llama.cpp (its view has its own table).
            match engine.get() {
                Engine::Transformers => v.push(("infer-context", ChartKind::InferContext)),
                Engine::Vllm => v.push(("infer-seqs", ChartKind::InferSeqs)),
                Engine::LlamaCpp => {}
            }
        }
        v
    };
    let title_of = move |kind: ChartKind| {
        let lang = state.lang.get();
        let t = lang.page();
        match kind {
            ChartKind::Phases(b) => format!("{} — {}", mode_title(lang, b), t.chart_phases),
            ChartKind::TrainBatch => t.chart_batch.into(),
            ChartKind::TrainSeq => t.chart_seq.into(),
            ChartKind::InferContext => t.chart_ctx_mem.into(),
            ChartKind::InferSeqs => t.chart_ctx_seqs.into(),
        }
    };
    view! {
        <section class="card charts-card" aria-labelledby="charts-heading">
            <h2 id="charts-heading">{move || state.lang.get().page().charts}</h2>
            <div class="charts-grid">
                {move || {
                    kinds()
                        .into_iter()
                        .map(|(id, kind)| {
                            // Redrawn only when this chart's data (or the unit) changes.
                            let data = Memo::new(move |_| chart_data(res, kind));
                            let changed = Memo::new(move |prev: Option<&u64>| {
                                data.track();
                                state.use_gb.track();
                                prev.map_or(1, |p| p + 1)
                            });
                            // The phase chart's data changes with the verdict: it is redrawn after
                            // the frame that shows the verdict and the table (only the latest change),
                            // so typing never waits for a canvas. The sweeps' data comes from the
                            // follow-up, which already runs after that frame: they are redrawn at once,
                            // in the same task, so the follow-up's changes reach the screen in one
                            // frame and `vram:settled` includes them.
                            let version = RwSignal::new(0u64);
                            let after_frame = matches!(kind, ChartKind::Phases(_));
                            Effect::new(move |_| {
                                let v = changed.get();
                                if !after_frame {
                                    version.set(v);
                                    return;
                                }
                                request_animation_frame(move || {
                                    set_timeout(
                                        move || {
                                            // The chart may be gone by then (another task or
                                            // engine): nothing to draw.
                                            if changed.try_get_untracked() == Some(v) {
                                                let _ = version.try_set(v);
                                            }
                                        },
                                        Duration::ZERO,
                                    );
                                });
                            });
                            let draw_canvas = Arc::new(move |root: &DrawingArea<plotters_canvas::CanvasBackend, plotters::coord::Shift>, theme: &ChartTheme| {
                                draw_kind(state, data, kind, root, theme)
                            });
                            let draw_svg = Arc::new(move |size: (u32, u32), theme: &ChartTheme| {
                                let mut svg = String::new();
                                {
                                    let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
                                    draw_kind(state, data, kind, &root, theme);
                                }
                                svg
                            });
                            view! {
                                <ChartCanvas
                                    id=id
                                    title=Signal::derive(move || title_of(kind))
                                    draw_canvas=draw_canvas
                                    draw_svg=draw_svg
                                    version=version.into()
                                />
                            }
                        })
                        .collect_view()
                }}
            </div>
        </section>
    }
}

/// The current view as a share link (relative: works under any sub-path).
pub fn share_query(state: AppState) -> String {
    let page = state.page.get_untracked();
    let lang = state.lang.get_untracked();
    state.model.with_untracked(|m| {
        let (preset, config) = match m.as_ref().map(|m| (&m.source, &m.text)) {
            Some((ModelSource::Preset(id), _)) => (Some(*id), None),
            // A GGUF model has no config text: the link carries the scenario only.
            Some((_, text)) if text.is_empty() => (None, None),
            Some((_, text)) => (None, Some(text.as_str())),
            None => (None, None),
        };
        SharedState::capture(&page, preset, config, lang).to_query_with_fragment()
    })
}

#[component]
fn ShareExport(results: Memo<Option<PageResults>>) -> impl IntoView {
    let state = use_state();
    let (copied, set_copied) = signal(false);
    let t = move || state.lang.get().page();
    let copy = move |_| {
        let Some(w) = web_sys::window() else { return };
        // The short link, opening scrolled to the verdict.
        let href = w.location().href().unwrap_or_default();
        let base = href
            .split(['?', '#'])
            .next()
            .unwrap_or_default()
            .to_string();
        crate::chart_view::copy_text(&format!("{base}{}", share_query(state)));
        set_copied.set(true);
    };
    // The model name for exports and file names, and the Hub id for launch lines.
    let model_names = move || {
        state.model.with_untracked(|m| {
            m.as_ref().map(|m| {
                let repo = match &m.source {
                    ModelSource::Preset(id) => vram_core::presets::find(id)
                        .map_or_else(|| m.spec.name.clone(), |p| p.repo.to_string()),
                    _ => m.spec.name.clone(),
                };
                (m.spec.name.clone(), repo)
            })
        })
    };
    let shown_mode = move || {
        let r = results.get_untracked()?;
        let page = state.page.get_untracked();
        let b = if page.task.trains() {
            Budgeted::Train
        } else {
            Budgeted::Infer
        };
        Some((page, b, mode_of(&r, b)?))
    };
    let csv = move |_| {
        let (Some((page, b, m)), Some((name, _))) = (shown_mode(), model_names()) else {
            return;
        };
        let out = export::breakdown_csv_with_context(&name, &page, mode_key(b), &m.breakdown);
        download(
            &export::file_name(&name, page.task, "csv"),
            &data_url("text/csv", &out),
        );
    };
    let md = move |_| {
        let (Some((page, b, m)), Some((name, _))) = (shown_mode(), model_names()) else {
            return;
        };
        let lang = state.lang.get_untracked();
        let out = export::breakdown_markdown_with_context(
            &name,
            &page,
            mode_title(lang, b),
            &m.breakdown,
        );
        download(
            &export::file_name(&name, page.task, "md"),
            &data_url("text/markdown", &out),
        );
    };
    let json = move |_| {
        let page = state.page.get_untracked();
        state.model.with_untracked(|m| {
            let Some(m) = m else { return };
            let train = page.task.trains();
            let scenario = if train {
                page.train_scenario()
            } else {
                page.infer_scenario()
            };
            let doc = export::estimate_doc(m, &scenario, train);
            if let Ok(text) = serde_json::to_string_pretty(&doc) {
                download(
                    &export::file_name(&m.spec.name, page.task, "json"),
                    &data_url("application/json", &text),
                );
            }
        });
    };
    view! {
        <section class="card share-card" aria-labelledby="share-heading">
            <h2 id="share-heading">{move || t().share}</h2>
            <div class="button-row">
                <button type="button" data-testid="copy-link" on:click=copy>
                    {move || if copied.get() { t().copied } else { t().copy_link }}
                </button>
                <button type="button" class="secondary" data-testid="export-csv" on:click=csv>{move || t().csv}</button>
                <button type="button" class="secondary" data-testid="export-md" on:click=md>{move || t().markdown}</button>
                <button type="button" class="secondary" data-testid="export-json" on:click=json>{move || t().json}</button>
            </div>
        </section>
        <LaunchCard />
    }
}

/// Copyable launch lines for the scenario on screen (vLLM, transformers, peft + TRL, DeepSpeed).
#[component]
fn LaunchCard() -> impl IntoView {
    let state = use_state();
    let blocks = Memo::new(move |_| {
        let page = state.page.get();
        state.model.with(|m| {
            m.as_ref()
                .map(|m| {
                    let repo = match &m.source {
                        ModelSource::Preset(id) => vram_core::presets::find(id)
                            .map_or_else(|| m.spec.name.clone(), |p| p.repo.to_string()),
                        _ => m.spec.name.clone(),
                    };
                    crate::launch::launch_lines(
                        &repo,
                        &page,
                        crate::launch::LaunchModel::of(&m.spec),
                    )
                })
                .unwrap_or_default()
        })
    });
    move || {
        let blocks = blocks.get();
        if blocks.is_empty() {
            return None;
        }
        let lang = state.lang.get();
        let (heading, copy) = if lang == Lang::Zh {
            ("启动命令与配置", "复制")
        } else {
            ("Launch lines for this setup", "Copy")
        };
        Some(view! {
            <section class="card launch-card" aria-labelledby="launch-heading">
                <h2 id="launch-heading">{heading}</h2>
                {blocks
                    .into_iter()
                    .map(|b| {
                        let text = b.text.clone();
                        view! {
                            <div class="launch-block">
                                <div class="launch-head">
                                    <span>{b.title.clone()}</span>
                                    <button type="button" class="secondary small" on:click=move |_| crate::chart_view::copy_text(&text)>{copy}</button>
                                </div>
                                <pre class="launch-lines" data-testid="launch-line" data-language=b.language><code>{b.text.clone()}</code></pre>
                            </div>
                        }
                    })
                    .collect_view()}
            </section>
        })
    }
}
