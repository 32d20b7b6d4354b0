//! The llama.cpp ("local") results: the verdict for the largest GPU, the GPU / host split bar, the
//! buffers per device as llama.cpp prints them, the KV cells, the solvers, the launch lines and the
//! "can I run it" table (a row's click applies its weight type).

use crate::i18n_page::verdict;
use crate::local::{self, gib, mib, FitTableRow, LocalResult, LocalSolve};
use crate::state::{use_state, AppState};
use leptos::leptos_dom::helpers::set_timeout;
use leptos::prelude::*;
use std::time::Duration;
use vram_core::gpu_catalog::Verdict;
use vram_core::infer::llama_cpp::fit::PlacementKind;
use vram_core::units::group_thousands;

fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Fits => "verdict fits",
        Verdict::Tight => "verdict tight",
        Verdict::DoesNotFit => "verdict no-fit",
    }
}

fn placement_key(k: PlacementKind) -> String {
    serde_json::to_value(k)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

/// A block of lines with a copy button.
fn copy_block(
    state: AppState,
    testid: &'static str,
    title: &'static str,
    lines: Vec<String>,
) -> impl IntoView {
    let (copied, set_copied) = signal(false);
    let text = lines.join("\n");
    let on_copy = move |_| {
        crate::chart_view::copy_text(&text);
        set_copied.set(true);
        set_timeout(move || set_copied.set(false), Duration::from_millis(1500));
    };
    let t = move || state.lang.get().local();
    view! {
        <div class="launch-block">
            <div class="launch-head">
                <span>{title}</span>
                <button
                    type="button"
                    class="secondary small"
                    data-testid=format!("copy-{testid}")
                    aria-label=move || format!("{} — {}", t().copy, title)
                    on:click=on_copy
                >
                    {move || if copied.get() { t().copied } else { t().copy }}
                </button>
            </div>
            <pre class="launch-lines">
                {lines
                    .into_iter()
                    .map(|l| view! { <code data-testid=testid>{l}</code> })
                    .collect_view()}
            </pre>
        </div>
    }
}

/// One stacked bar: (class, legend, bytes) segments on a shared scale.
fn bar(
    label: &'static str,
    segments: Vec<(&'static str, &'static str, u64)>,
    scale: u64,
    total: u64,
) -> impl IntoView {
    let aria = segments
        .iter()
        .filter(|s| s.2 > 0)
        .map(|(_, name, b)| format!("{name} {}", gib(*b)))
        .collect::<Vec<_>>()
        .join(", ");
    let segs = segments
        .into_iter()
        .filter(|s| s.2 > 0)
        .map(|(class, name, b)| {
            let pct = if scale > 0 {
                b as f64 * 100.0 / scale as f64
            } else {
                0.0
            };
            view! {
                <span
                    class=format!("seg {class}")
                    style=format!("width: {pct:.3}%")
                    title=format!("{name}: {}", gib(b))
                    data-bytes=b.to_string()
                ></span>
            }
        })
        .collect_view();
    view! {
        <div class="split-row">
            <span class="split-label">{label}</span>
            <div class="split-bar" role="img" aria-label=format!("{label}: {aria}")>{segs}</div>
            <span class="split-total num">{gib(total)}</span>
        </div>
    }
}

fn local_card(state: AppState, r: &LocalResult, solve: Option<&LocalSolve>) -> impl IntoView {
    let lang = state.lang.get();
    let t = lang.local();
    let e = &r.est;
    let m = &r.machine;
    let b = |x: u64| state.fmt_bytes(x);
    let pct = if m.gpu_usable_bytes > 0 {
        r.device_bytes as f64 * 100.0 / m.gpu_usable_bytes as f64
    } else {
        0.0
    };
    let gpu_name = state.page.with_untracked(|p| p.gpu.name());
    let n_gpus = e.devices.len();
    let host_compute_output = e.compute_host_bytes + e.output_bytes;
    // One scale for both bars, so their lengths compare.
    let scale = e.gpu_total_bytes.max(e.host_total_bytes);
    let largest = e.devices.iter().max_by_key(|d| d.total_bytes).cloned();
    let gpu_bar = bar(
        t.gpu_row,
        vec![
            (
                "w",
                t.weights,
                largest.as_ref().map_or(0, |d| d.weights_bytes),
            ),
            ("kv", t.kv, largest.as_ref().map_or(0, |d| d.kv_bytes)),
            (
                "c",
                t.compute,
                largest.as_ref().map_or(0, |d| d.compute_bytes),
            ),
        ],
        scale,
        e.gpu_total_bytes,
    );
    let host_bar = bar(
        t.host_row,
        vec![
            ("w", t.weights, e.weights_host_bytes),
            ("kv", t.kv, e.kv_host_bytes),
            ("c", t.compute, e.compute_host_bytes),
            ("o", t.output, e.output_bytes),
        ],
        scale,
        e.host_total_bytes,
    );
    let cell = |bytes: u64| {
        view! { <td class="num" data-bytes=bytes.to_string()>{mib(bytes)}<br /><small>{gib(bytes)}</small></td> }
    };
    let device_rows = e
        .devices
        .iter()
        .map(|d| {
            view! {
                <tr data-testid="device-row" data-device=d.device.clone() data-total-bytes=d.total_bytes.to_string() data-layers=d.layers.to_string()>
                    <th scope="row">{d.device.clone()}</th>
                    <td class="num">{d.layers}{if d.output_layer { " + output" } else { "" }}</td>
                    {cell(d.weights_bytes)}
                    {cell(d.kv_bytes)}
                    {cell(d.compute_bytes)}
                    {cell(d.total_bytes)}
                </tr>
            }
        })
        .collect_view();
    let host_row = view! {
        <tr data-testid="device-row" data-device="CPU" data-total-bytes=e.host_total_bytes.to_string()>
            <th scope="row">{t.cpu_host}</th>
            <td class="num">{e.n_layer - e.layers_on_gpu}</td>
            {cell(e.weights_host_bytes)}
            {cell(e.kv_host_bytes)}
            {cell(host_compute_output)}
            {cell(e.host_total_bytes)}
        </tr>
    };
    let swa = (e.swa_cells > 0).then(|| {
        view! {
            " · " {t.swa} ": " <strong data-testid="swa-cells">{group_thousands(e.swa_cells)}</strong> " " {t.cells}
            " (" {mib(e.kv_swa_bytes)} ")"
        }
    });
    let value = |v: Option<u64>, all_above: Option<u64>| match (solve, v) {
        (None, _) => "…".to_string(),
        (Some(_), None) => t.none.to_string(),
        (Some(_), Some(x)) => match all_above {
            Some(n) if x > n => format!("{x} ({})", t.all),
            _ => group_thousands(x),
        },
    };
    let launch = &e.launch;
    let ollama = e.ollama;
    let server_block = copy_block(
        state,
        "launch-line",
        "llama-server",
        vec![launch.llama_server.clone()],
    );
    let env_block = copy_block(state, "ollama-env", t.ollama_env, launch.ollama_env.clone());
    let modelfile_block = copy_block(
        state,
        "ollama-modelfile",
        t.modelfile,
        launch.ollama_modelfile.clone(),
    );
    let blocks = if ollama {
        view! { {env_block} {modelfile_block} {server_block} }.into_any()
    } else {
        view! { {server_block} {env_block} {modelfile_block} }.into_any()
    };
    view! {
        <section class="card result-card local-card" data-testid="local-result" aria-labelledby="local-heading">
            <h2 id="local-heading">{t.heading} " · " {r.format_name.clone()}</h2>
            <p class="headline-mem">
                <span
                    class="big"
                    data-testid="local-verdict"
                    data-gpu-bytes=e.gpu_total_bytes.to_string()
                    data-host-bytes=e.host_total_bytes.to_string()
                    data-device-bytes=r.device_bytes.to_string()
                    data-usable-bytes=m.gpu_usable_bytes.to_string()
                    data-verdict=format!("{:?}", r.verdict)
                >
                    {b(r.device_bytes)}
                </span>
                " " {t.on_gpu} " / " <span data-testid="local-usable">{b(m.gpu_usable_bytes)}</span> " "
                {lang.page().usable} " " {gpu_name}
                {(n_gpus > 1).then(|| format!(" × {n_gpus}"))}
                " (" {format!("{pct:.0} %")} ") "
                <span class=verdict_class(r.verdict) data-testid="local-verdict-text">{verdict(lang, r.verdict)}</span>
            </p>
            <p class="which-total">{t.which_total}</p>
            <p class="sub-totals">
                {t.host} ": " <strong data-testid="local-host">{b(e.host_total_bytes)}</strong> " " {t.of_ram} " "
                {b(m.host_ram_bytes)}
                {m.unified.then(|| view! { " (" {t.unified_note} ")" })}
                {(!r.host_fits).then(|| view! { " " <span class="verdict no-fit">{t.ram_short}</span> })}
            </p>
            <div
                class="split"
                data-testid="ngl-split"
                data-gpu-layers=e.layers_on_gpu.to_string()
                data-n-layer=e.n_layer.to_string()
                data-ngl=e.n_gpu_layers.to_string()
                data-gpu-bytes=e.gpu_total_bytes.to_string()
                data-host-bytes=e.host_total_bytes.to_string()
            >
                <h3>{t.split}</h3>
                <p>
                    <strong>{e.layers_on_gpu}</strong> " " {t.of} " " {e.n_layer} " " {t.layers_on_gpu}
                    {if e.output_on_gpu { " + output" } else { "" }}
                    " (-ngl " {e.n_gpu_layers} ")"
                </p>
                {gpu_bar}
                {host_bar}
                <ul class="split-legend" aria-hidden="true">
                    <li><span class="swatch w"></span>{t.weights}</li>
                    <li><span class="swatch kv"></span>{t.kv}</li>
                    <li><span class="swatch c"></span>{t.compute}</li>
                    <li><span class="swatch o"></span>{t.output}</li>
                </ul>
            </div>
            <p class="fits-line">
                {t.max_ngl} ": " <strong data-testid="local-max-ngl">{value(solve.and_then(|s| s.max_ngl), Some(e.n_layer))}</strong>
                " · " {t.max_ctx} ": " <strong data-testid="local-max-ctx">{value(solve.and_then(|s| s.max_ctx), None)}</strong>
            </p>
            <h3 id="devices-heading">{t.devices}</h3>
            <div class="table-wrap" tabindex="0" role="region" aria-labelledby="devices-heading">
                <table class="breakdown devices" data-testid="device-table">
                    <thead>
                        <tr>
                            <th scope="col">{t.device}</th>
                            <th scope="col" class="num">{t.layers}</th>
                            <th scope="col" class="num">{t.weights}</th>
                            <th scope="col" class="num">{t.kv}</th>
                            <th scope="col" class="num">{t.compute}</th>
                            <th scope="col" class="num">{t.total}</th>
                        </tr>
                    </thead>
                    <tbody>{device_rows} {host_row}</tbody>
                </table>
            </div>
            <p class="kv-cells" data-testid="kv-cells" data-cells=e.cells.to_string() data-swa-cells=e.swa_cells.to_string()>
                <strong>{t.kv_heading}</strong> ": " {group_thousands(e.cells)} " " {t.cells}
                " (" {group_thousands(e.n_ctx_seq)} " " {t.per_seq} ", " {e.n_seq} " × -np) · K "
                {e.type_k.clone()} " " {mib(e.kv_k_bytes)} " · V " {e.type_v.clone()} " " {mib(e.kv_v_bytes)}
                {swa}
            </p>
            <h3>{t.launch}</h3>
            {blocks}
        </section>
    }
}

fn fit_card(state: AppState, rows: &[FitTableRow]) -> impl IntoView {
    let lang = state.lang.get();
    let t = lang.local();
    let b = |x: u64| state.fmt_bytes(x);
    let (gpu, machine, ctx, current) = state.page.with_untracked(|p| {
        (
            p.gpu.name(),
            p.machine(),
            p.infer.seq_len,
            p.infer.weights.clone(),
        )
    });
    let n_gpus = state
        .page
        .with_untracked(|p| p.infer.llama_cpp.tensor_split.len().max(1));
    // "auto" is the GGUF file's own type (its row has no select value), else Q4_K_M.
    let gguf = rows.first().is_some_and(|r| r.select.is_none());
    let current = current.or_else(|| (!gguf).then(|| "q4_k_m".to_string()));
    let body = rows
        .iter()
        .map(|row| {
            let select = row.select.clone();
            let is_current = select == current;
            let apply = move || {
                let v = select.clone();
                state.change_scenario("llama_weights", move |p| p.infer.weights = v);
            };
            let apply2 = apply.clone();
            match &row.row {
                Ok(f) => {
                    let place = match f.placement {
                        PlacementKind::Gpu => t.place_gpu.to_string(),
                        PlacementKind::ExpertsOnCpu => format!("{} (--n-cpu-moe {})", t.place_experts, f.n_cpu_moe),
                        PlacementKind::Partial => format!("{} (-ngl {})", t.place_partial, f.n_gpu_layers),
                        PlacementKind::None => t.place_none.to_string(),
                    };
                    let class = match f.placement {
                        PlacementKind::Gpu => "verdict fits",
                        PlacementKind::ExpertsOnCpu | PlacementKind::Partial => "verdict tight",
                        PlacementKind::None => "verdict no-fit",
                    };
                    view! {
                        <tr
                            data-testid="fit-row"
                            class:current=is_current
                            data-weights=f.weights.clone()
                            data-full-gpu-context=f.full_gpu_max_context.to_string()
                            data-placement=placement_key(f.placement)
                            data-ngl=f.n_gpu_layers.to_string()
                            data-context=f.context.to_string()
                            data-gpu-bytes=f.gpu_bytes.to_string()
                            data-host-bytes=f.host_bytes.to_string()
                            on:click=move |_| apply()
                        >
                            <th scope="row">
                                <button type="button" class="row-toggle" aria-pressed=is_current.to_string()>{f.weights.clone()}</button>
                            </th>
                            <td class="num">{b(f.weights_bytes)}</td>
                            <td class="num">{if f.full_gpu_max_context == 0 { t.none.to_string() } else { group_thousands(f.full_gpu_max_context) }}</td>
                            <td><span class=class>{place}</span></td>
                            <td class="num">{b(f.gpu_bytes)}</td>
                            <td class="num">{b(f.host_bytes)}</td>
                        </tr>
                    }
                    .into_any()
                }
                Err(msg) => view! {
                    <tr data-testid="fit-row" data-weights="" data-placement="none" on:click=move |_| apply2()>
                        <th scope="row">{row.select.clone().unwrap_or_default()}</th>
                        <td colspan="5" class="field-error">{msg.clone()}</td>
                    </tr>
                }
                .into_any(),
            }
        })
        .collect_view();
    view! {
        <section class="card fit-card" data-testid="fit-card" aria-labelledby="fit-heading">
            <h2 id="fit-heading">{t.fit_heading}</h2>
            <p class="which-total">
                {t.fit_intro} " " {gpu} {(n_gpus > 1).then(|| format!(" × {n_gpus}"))} " (" {b(machine.gpu_usable_bytes)} "), "
                {b(machine.host_ram_bytes)} " RAM, -c " {group_thousands(ctx)} ". " {t.fit_hint}
            </p>
            <div class="table-wrap" tabindex="0" role="region" aria-labelledby="fit-heading">
                <table class="breakdown fit" data-testid="fit-table">
                    <thead>
                        <tr>
                            <th scope="col">{t.col_type}</th>
                            <th scope="col" class="num">{t.col_file}</th>
                            <th scope="col" class="num">{t.col_full_ctx}</th>
                            <th scope="col">{t.col_placement}</th>
                            <th scope="col" class="num">{t.gpu_row}</th>
                            <th scope="col" class="num">{t.host_row}</th>
                        </tr>
                    </thead>
                    <tbody>{body}</tbody>
                </table>
            </div>
        </section>
    }
}

/// The local view: the llama.cpp card and the "can I run it" table.
#[component]
pub fn LocalView() -> impl IntoView {
    let state = use_state();
    let result = Memo::new(move |_| {
        let page = state.page.get();
        state
            .model
            .with(|m| m.as_ref().map(|m| local::local_result(&m.spec, &page)))
    });
    // The solvers and the table run in a task after the headline's frame.
    let more = RwSignal::new(
        None::<(
            crate::page_scenario::PageScenario,
            Option<LocalSolve>,
            Vec<FitTableRow>,
        )>,
    );
    Effect::new(move |_| {
        let page = state.page.get();
        state.model.track();
        set_timeout(
            move || {
                if state.page.with_untracked(|p| *p != page) {
                    return;
                }
                let computed = state.model.with_untracked(|m| {
                    m.as_ref().map(|m| {
                        (
                            local::local_solve(&m.spec, &page),
                            local::fit_table(&m.spec, &page, &m.spec.name),
                        )
                    })
                });
                if let Some((solve, rows)) = computed {
                    more.set(Some((page, solve, rows)));
                }
            },
            Duration::ZERO,
        );
    });
    let current_more = move || {
        more.with(|m| {
            m.as_ref()
                .filter(|(p, _, _)| state.page.with(|q| q == p))
                .map(|(_, s, r)| (s.clone(), r.clone()))
        })
    };
    view! {
        {move || {
            let more = current_more();
            result.with(|r| match r {
                Some(Ok(r)) => local_card(state, r, more.as_ref().and_then(|m| m.0.as_ref())).into_any(),
                Some(Err(e)) => view! {
                    <section class="card result-card">
                        <p class="field-error" role="alert" data-testid="local-error">{e.clone()}</p>
                    </section>
                }
                .into_any(),
                None => ().into_any(),
            })
        }}
        {move || {
            // The table keeps its last rows while a new one is computed (no flicker).
            more.with(|m| m.as_ref().map(|(_, _, rows)| fit_card(state, rows)))
        }}
    }
}
