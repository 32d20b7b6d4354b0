//! The results: per mode a headline (the compared total per GPU against the GPU's usable memory,
//! with the verdict and which total it is), the largest batch and sequence that fit, the cheapest
//! changes that would fit, the breakdown table (components × phases; rows expand to the core's
//! formula and source), then the charts and the share/export buttons.

use crate::chart_view::{chart_text, data_url, download, ChartCanvas};
use crate::charts::{draw_phase_bars, draw_sweep, ChartTheme};
use crate::compute::{self, page_results, Budgeted, ModeResult, PageResults};
use crate::export;
use crate::i18n::Lang;
use crate::i18n_page::{change, component, verdict};
use crate::load::ModelSource;
use crate::share::SharedState;
use crate::state::{use_state, AppState};
use leptos::prelude::*;
use plotters::prelude::*;
use std::sync::Arc;
use vram_core::gpu_catalog::Verdict;
use vram_core::units::group_thousands;

fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Fits => "verdict fits",
        Verdict::Tight => "verdict tight",
        Verdict::DoesNotFit => "verdict no-fit",
    }
}

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

fn mode_card(state: AppState, r: &ModeResult, vllm: bool) -> impl IntoView {
    let lang = state.lang.get();
    let t = lang.page();
    let key = mode_key(r.budgeted);
    let b = |x: u64| state.fmt_bytes(x);
    let pct = if r.usable_bytes > 0 {
        r.device_bytes as f64 * 100.0 / r.usable_bytes as f64
    } else {
        0.0
    };
    let which = if vllm { t.total_vllm } else { t.total_device };
    // Show the changes that fit; when none does alone, show what each would reach.
    let fitting: Vec<_> = r
        .suggestions
        .iter()
        .filter(|s| s.verdict != Verdict::DoesNotFit)
        .cloned()
        .collect();
    let shown = if fitting.is_empty() {
        r.suggestions.clone()
    } else {
        fitting
    };
    let suggestions = (!shown.is_empty()).then(|| {
        view! {
            <div class="suggestions" data-testid=format!("{key}-suggestions")>
                <h4>{t.suggestions}</h4>
                <ul>
                    {shown
                        .iter()
                        .map(|s| {
                            view! {
                                <li>
                                    <span>{change(lang, &s.change)}</span>
                                    " — " {t.new_peak} " " <strong>{b(s.new_bytes)}</strong> " "
                                    <span class=verdict_class(s.verdict)>{verdict(lang, s.verdict)}</span>
                                </li>
                            }
                        })
                        .collect_view()}
                </ul>
            </div>
        }
    });
    let bd = &r.breakdown;
    let head = bd
        .phases
        .iter()
        .map(|p| view! { <th scope="col" class="num">{p.clone()}</th> })
        .collect_view();
    let ncols = bd.phases.len() + 1;
    let rows = bd
        .rows
        .iter()
        .map(|row| {
            let cells = row
                .cells
                .iter()
                .map(|c| view! { <td class="num">{if *c == 0 { "—".to_string() } else { b(*c) }}</td> })
                .collect_view();
            let terms = row.terms.clone();
            let has_terms = !terms.is_empty();
            let (open, set_open) = signal(false);
            let label = component(lang, &row.key);
            let row_key = row.key.clone();
            let row_key2 = row.key.clone();
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
    let peaks = bd
        .peaks
        .iter()
        .map(|c| view! { <td class="num">{b(*c)}</td> })
        .collect_view();
    let serving = r.serving.as_ref().map(|s| {
        view! {
            <p class="serving" data-testid="vllm-serving">
                {t.kv_tokens} ": " <strong>{group_thousands(s.kv_tokens)}</strong> " · " {t.concurrency} ": "
                <strong>{format!("{:.2}", s.max_concurrency)}</strong>
            </p>
        }
    });
    let notes = (!r.notes.is_empty()).then(|| {
        view! {
            <div class="notes">
                <strong>{t.notes}</strong>
                <ul>{r.notes.iter().map(|n| view! { <li>{n.clone()}</li> }).collect_view()}</ul>
            </div>
        }
    });
    let fit_value = |v: Option<u64>| v.map_or_else(|| t.none_fits.to_string(), group_thousands);
    view! {
        <section class="card result-card" data-testid=format!("{key}-result") aria-label=mode_title(lang, r.budgeted)>
            <h2>{mode_title(lang, r.budgeted)}</h2>
            <p class="headline-mem">
                <span class="big" data-testid=format!("{key}-device") data-bytes=r.device_bytes.to_string()>
                    {b(r.device_bytes)}
                </span>
                " " {t.per_gpu} " / " <span data-testid=format!("{key}-usable")>{b(r.usable_bytes)}</span> " "
                {t.usable} " " {use_state().page.with_untracked(|p| p.gpu.name())} " ("
                {format!("{pct:.0} %")} ") "
                <span class=verdict_class(r.verdict) data-testid=format!("{key}-verdict")>{verdict(lang, r.verdict)}</span>
            </p>
            <p class="which-total">{which}</p>
            <p class="sub-totals">
                {t.allocated} ": "
                <strong data-testid=format!("{key}-allocated") data-bytes=r.peak_allocated_bytes.to_string()>
                    {b(r.peak_allocated_bytes)}
                </strong>
                " (" {r.peak_phase.clone()} ")"
                {r.peak_reserved_bytes.map(|x| view! { " · " {t.reserved} ": " <strong>{b(x)}</strong> })}
            </p>
            <p class="fits-line">
                {t.largest_batch} ": " <strong data-testid=format!("{key}-max-batch")>{fit_value(r.max_batch)}</strong>
                " · " {t.largest_seq} ": " <strong data-testid=format!("{key}-max-seq")>{fit_value(r.max_seq)}</strong>
            </p>
            {serving}
            {measured_table(state, r)}
            {suggestions}
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
                {terms_list(lang, &bd.other_terms)}
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

/// The results section with charts and exports.
#[component]
pub fn ResultsView() -> impl IntoView {
    let state = use_state();
    let results = Memo::new(move |_| {
        let page = state.page.get();
        state
            .model
            .with(|m| m.as_ref().map(|m| page_results(&m.spec, &page)))
    });
    let (version, set_version) = signal(0u64);
    Effect::new(move |_| {
        results.track();
        state.use_gb.track();
        set_version.update(|v| *v += 1);
    });
    let cards = move || {
        let vllm = state
            .page
            .with(|p| p.infer.engine == vram_core::scenario::Engine::Vllm);
        results.with(|r| {
            r.as_ref().map(|r| {
                let one = |x: &Option<Result<ModeResult, String>>, key: &'static str| {
                    x.as_ref().map(|res| match res {
                        Ok(m) => mode_card(state, m, vllm && m.budgeted == Budgeted::Infer).into_any(),
                        Err(e) => view! {
                            <section class="card result-card">
                                <p class="field-error" role="alert" data-testid=format!("{key}-error")>{e.clone()}</p>
                            </section>
                        }
                            .into_any(),
                    })
                };
                view! {
                    <div class="results-grid">{one(&r.train, "train")} {one(&r.infer, "infer")}</div>
                }
            })
        })
    };
    view! {
        <div class="results" data-testid="results">
            {cards}
            {move || results.with(|r| r.is_some()).then(|| view! { <UnitsToggle /> <Charts results=results version=version.into() /> <ShareExport results=results /> })}
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

/// Which chart, computed at draw time from the current results and scenario.
#[derive(Clone, Copy, PartialEq)]
enum ChartKind {
    Phases(Budgeted),
    TrainBatch,
    TrainSeq,
    InferContext,
    InferSeqs,
}

fn draw_kind<DB: DrawingBackend>(
    state: AppState,
    results: Memo<Option<PageResults>>,
    kind: ChartKind,
    root: &DrawingArea<DB, plotters::coord::Shift>,
    theme: &ChartTheme,
) -> bool {
    let lang = state.lang.get_untracked();
    let t = lang.page();
    let (unit_bytes, unit_name) = unit(state);
    let Some(r) = results.get_untracked() else {
        return false;
    };
    let page = state.page.get_untracked();
    let model = state.model.get_untracked();
    let Some(model) = model else { return false };
    let spec = &model.spec;
    let ok = match kind {
        ChartKind::Phases(b) => {
            let Some(m) = mode_of(&r, b) else {
                return false;
            };
            let names = m
                .breakdown
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
            draw_phase_bars(root, &m.breakdown, m.usable_bytes, unit_bytes, &text, theme).is_ok()
        }
        ChartKind::TrainBatch => {
            let Some(m) = mode_of(&r, Budgeted::Train) else {
                return false;
            };
            let sweep = compute::train_batch_sweep(
                spec,
                &page.train_scenario(),
                m.usable_bytes,
                m.max_batch,
            );
            let text = chart_text(t.chart_batch, t.batch_axis, unit_name, vec![String::new()]);
            draw_sweep(root, &sweep, unit_bytes, &text, theme).is_ok()
        }
        ChartKind::TrainSeq => {
            let Some(m) = mode_of(&r, Budgeted::Train) else {
                return false;
            };
            let sweep = compute::train_seq_sweep(
                spec,
                &page.train_scenario(),
                m.usable_bytes,
                m.max_seq,
                ["eager", "SDPA"],
            );
            let text = chart_text(
                t.chart_seq,
                t.seq_axis,
                unit_name,
                vec!["eager".into(), "SDPA".into()],
            );
            draw_sweep(root, &sweep, unit_bytes, &text, theme).is_ok()
        }
        ChartKind::InferContext | ChartKind::InferSeqs => {
            let Some(m) = mode_of(&r, Budgeted::Infer) else {
                return false;
            };
            let (mem, seqs) =
                compute::infer_context_sweeps(spec, &page.infer_scenario(), m.max_seq);
            if kind == ChartKind::InferContext {
                let text = chart_text(t.chart_ctx_mem, t.ctx_axis, unit_name, vec![String::new()]);
                draw_sweep(root, &mem, unit_bytes, &text, theme).is_ok()
            } else {
                let text = chart_text(
                    t.chart_ctx_seqs,
                    t.ctx_axis,
                    t.seqs_axis,
                    vec![String::new()],
                );
                draw_sweep(root, &seqs, 1.0, &text, theme).is_ok()
            }
        }
    };
    ok
}

#[component]
fn Charts(results: Memo<Option<PageResults>>, version: Signal<u64>) -> impl IntoView {
    let state = use_state();
    let kinds = move || {
        let mode = state.page.with(|p| p.mode);
        let mut v = Vec::new();
        if mode.train() {
            v.push(("train-phases", ChartKind::Phases(Budgeted::Train)));
            v.push(("train-batch", ChartKind::TrainBatch));
            v.push(("train-seq", ChartKind::TrainSeq));
        }
        if mode.infer() {
            v.push(("infer-phases", ChartKind::Phases(Budgeted::Infer)));
            v.push(("infer-context", ChartKind::InferContext));
            v.push(("infer-seqs", ChartKind::InferSeqs));
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
                            let draw_canvas = Arc::new(move |root: &DrawingArea<plotters_canvas::CanvasBackend, plotters::coord::Shift>, theme: &ChartTheme| {
                                draw_kind(state, results, kind, root, theme)
                            });
                            let draw_svg = Arc::new(move |size: (u32, u32), theme: &ChartTheme| {
                                let mut svg = String::new();
                                {
                                    let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
                                    draw_kind(state, results, kind, &root, theme);
                                }
                                svg
                            });
                            view! {
                                <ChartCanvas
                                    id=id
                                    title=Signal::derive(move || title_of(kind))
                                    draw_canvas=draw_canvas
                                    draw_svg=draw_svg
                                    version=version
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
            Some((_, text)) => (None, Some(text.as_str())),
            None => (None, None),
        };
        SharedState::capture(&page, preset, config, lang).to_query()
    })
}

#[component]
fn ShareExport(results: Memo<Option<PageResults>>) -> impl IntoView {
    let state = use_state();
    let (copied, set_copied) = signal(false);
    let t = move || state.lang.get().page();
    let copy = move |_| {
        let Some(w) = web_sys::window() else { return };
        let href = w.location().href().unwrap_or_default();
        let clipboard = js_sys::Reflect::get(&w.navigator(), &"clipboard".into()).ok();
        if let Some(cb) = clipboard.filter(|c| !c.is_undefined()) {
            if let Ok(f) = js_sys::Reflect::get(&cb, &"writeText".into()) {
                if let Ok(f) = f.dyn_into::<js_sys::Function>() {
                    let _ = f.call1(&cb, &href.into());
                }
            }
        }
        set_copied.set(true);
    };
    let csv = move |_| {
        let r = results.get_untracked();
        let Some(r) = r else { return };
        let mut out = String::new();
        for (b, name) in [(Budgeted::Train, "train"), (Budgeted::Infer, "infer")] {
            if let Some(m) = mode_of(&r, b) {
                let body = export::breakdown_csv(name, &m.breakdown);
                if out.is_empty() {
                    out.push_str(&body);
                } else {
                    out.push_str(body.split_once('\n').map_or("", |x| x.1));
                }
            }
        }
        download("vram-breakdown.csv", &data_url("text/csv", &out));
    };
    let md = move |_| {
        let r = results.get_untracked();
        let Some(r) = r else { return };
        let lang = state.lang.get_untracked();
        let mut out = String::new();
        for b in [Budgeted::Train, Budgeted::Infer] {
            if let Some(m) = mode_of(&r, b) {
                out.push_str(&export::breakdown_markdown(
                    mode_title(lang, b),
                    &m.breakdown,
                ));
                out.push('\n');
            }
        }
        download("vram-breakdown.md", &data_url("text/markdown", &out));
    };
    let json = move |_| {
        let page = state.page.get_untracked();
        state.model.with_untracked(|m| {
            let Some(m) = m else { return };
            let train = page.mode.train();
            let scenario = if train {
                page.train_scenario()
            } else {
                page.infer_scenario()
            };
            let doc = export::estimate_doc(m, &scenario, train);
            if let Ok(text) = serde_json::to_string_pretty(&doc) {
                download(
                    &format!(
                        "vram-estimate-{}.json",
                        if train { "train" } else { "infer" }
                    ),
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
    }
}

use wasm_bindgen::JsCast;
