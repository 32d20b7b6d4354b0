//! The answer first: the verdict line (one number against one GPU, which total it is, in words), the
//! stacked bar of each GPU with its limit line and the host-RAM bar when anything is offloaded, the
//! serving concurrency, the make-it-fit list (one click applies a change, and can be undone) and the
//! serving precision strip. Figures come from `answer` and `fit`; this file only renders them.

use crate::answer::{answer, answer_local, Answer, TotalKind};
use crate::compute::Budgeted;
use crate::fit::{Advice, NoFit, PrecisionRow};
use crate::i18n::Lang;
use crate::i18n_page::{change, component, phase, verdict};
use crate::page_scenario::{PageScenario, Task};
use crate::results_view::Results;
use crate::state::{use_state, AppState};
use leptos::prelude::*;
use vram_core::units::group_thousands;

/// Colours of a GPU bar's parts (`.seg-0` … `.seg-7` in style/main.css): a training rank can show
/// seven parts (weights, gradients, optimizer, activations, buffers, temporaries, overhead).
const SEGMENT_COLORS: usize = 8;

fn pick(lang: Lang, en: &'static str, zh: &'static str) -> &'static str {
    if lang == Lang::Zh {
        zh
    } else {
        en
    }
}

/// `8k`, `32k`, `1.5k`, `512`: a context as people say it.
pub fn short_tokens(n: u64) -> String {
    if n >= 1024 && n.is_multiple_of(1024) {
        format!("{}k", n / 1024)
    } else if n >= 1000 {
        let k = n as f64 / 1000.0;
        let s = format!("{k:.1}");
        format!("{}k", s.trim_end_matches(".0"))
    } else {
        n.to_string()
    }
}

/// The answer on screen: the task's core result, or the llama.cpp view's.
fn current_answer(state: AppState, res: Results) -> Option<Answer> {
    let page = state.page.get();
    if page.local_view() {
        let r = state.model.with(|m| {
            m.as_ref()
                .map(|m| crate::local::local_result(&m.spec, &page))
        })?;
        return r.ok().map(|r| answer_local(&page, &r));
    }
    res.all.with(|r| {
        let r = r.as_ref()?;
        let m = if page.task.trains() {
            r.train.as_ref()?.as_ref().ok()?
        } else {
            r.infer.as_ref()?.as_ref().ok()?
        };
        debug_assert!(
            m.budgeted
                == if page.task.trains() {
                    Budgeted::Train
                } else {
                    Budgeted::Infer
                }
        );
        let mut a = answer(&page, m);
        // The solvers run after the headline's frame; until then the line says "…".
        if page.task.trains() && !res.train_pending() {
            a.largest = Some((m.max_batch, m.max_seq));
        }
        Some(a)
    })
}

fn which_total(lang: Lang, a: &Answer) -> String {
    match (a.total_kind, lang) {
        (TotalKind::Vllm, Lang::En) => "Compared with the GPU: what vLLM takes on each GPU — its budget (gpu_memory_utilization of the GPU; with 0.34's default, all of it but the CUDA context and a margin): weights, the profiled activations, non-torch memory and the KV pool that fills the rest; up to 0.20 its CUDA graphs come on top.".into(),
        (TotalKind::Vllm, Lang::Zh) => "与 GPU 比较的是 vLLM 在每张卡上占用的显存：它的预算（GPU 的 gpu_memory_utilization；0.34 默认除 CUDA 上下文和一段余量外全部使用）——权重、profile 得到的激活、非 torch 显存，其余全部作为 KV 池；0.20 及以前 CUDA graph 另外占用。".into(),
        (TotalKind::Device, Lang::En) => {
            if a.peak_phase.is_empty() {
                "Compared with the GPU: what nvidia-smi shows on the largest GPU — llama.cpp's buffers plus the CUDA context.".into()
            } else {
                format!(
                    "Compared with the GPU: what nvidia-smi shows for the process at its peak ({}) — tensors, PyTorch's allocator cache, the CUDA context and workspace.",
                    phase(lang, &a.peak_phase)
                )
            }
        }
        (TotalKind::Device, Lang::Zh) => {
            if a.peak_phase.is_empty() {
                "与 GPU 比较的是最大那张卡在 nvidia-smi 中的显示：llama.cpp 的缓冲加 CUDA 上下文。".into()
            } else {
                format!(
                    "与 GPU 比较的是进程峰值（{}）时 nvidia-smi 显示的显存：张量、PyTorch 分配器缓存、CUDA 上下文和工作区。",
                    phase(lang, &a.peak_phase)
                )
            }
        }
    }
}

fn segment_label(lang: Lang, key: &str) -> String {
    match key {
        "overhead" => pick(
            lang,
            "CUDA context, workspace, allocator cache",
            "CUDA 上下文、工作区、分配器缓存",
        )
        .into(),
        "vllm_overhead" => pick(
            lang,
            "Non-torch memory (NCCL, kernels), CUDA graphs",
            "非 torch 显存（NCCL、内核）、CUDA graph",
        )
        .into(),
        "kv_pool" => pick(lang, "KV pool", "KV 池").into(),
        "compute" => pick(lang, "Compute buffer", "计算缓冲").into(),
        k => component(lang, k),
    }
}

/// The decoder layers one GPU of a device map holds, and the embedding / head when it has them.
fn layer_range(lang: Lang, first: u64, n: u64, role: &str) -> String {
    let layers = match (n, lang) {
        (0, Lang::En) => "no layers".to_string(),
        (0, Lang::Zh) => "无层".to_string(),
        (1, Lang::En) => format!("layer {first}"),
        (_, Lang::En) => format!("layers {first}–{}", first + n - 1),
        (1, Lang::Zh) => format!("第 {first} 层"),
        (_, Lang::Zh) => format!("第 {first}–{} 层", first + n - 1),
    };
    let extra = match (role, lang) {
        ("embedding+head", Lang::En) => " + embedding, head",
        ("embedding+head", Lang::Zh) => " + 嵌入、输出头",
        ("embedding", Lang::En) => " + embedding",
        ("embedding", Lang::Zh) => " + 嵌入",
        ("head", Lang::En) => " + head",
        ("head", Lang::Zh) => " + 输出头",
        _ => "",
    };
    format!("{layers}{extra}")
}

/// The verdict line (the `verdict` element, pinned at the bottom on phones), the serving
/// concurrency, which total it is, the GPU bars and the host-RAM bar.
#[component]
pub fn VerdictPanel(res: Results) -> impl IntoView {
    let state = use_state();
    let ans = Memo::new(move |_| current_answer(state, res));
    let has = Memo::new(move |_| ans.with(Option::is_some));
    let fits_key = move || ans.with(|a| a.as_ref().map_or("no", Answer::fits_key));
    let total = move || ans.with(|a| a.as_ref().map_or(0, |a| a.total_bytes));
    let usable = move || ans.with(|a| a.as_ref().map_or(0, |a| a.usable_bytes));
    // The verdict line is an `aria-live` region: the element stays and only its content changes,
    // so screen readers announce each new verdict (a region re-created per input is a new node,
    // which they do not announce). The rest of the card is rebuilt with each answer.
    view! {
        <section class="card verdict-card" aria-labelledby="verdict-heading">
            <h2 id="verdict-heading" class="visually-hidden">{move || pick(state.lang.get(), "Answer", "结论")}</h2>
            {move || has.get().then(|| view! {
                <div
                    class=move || format!("verdict-bar {}", fits_key())
                    id="verdict"
                    data-testid="verdict"
                    data-fits=fits_key
                    data-total-bytes=move || total().to_string()
                    data-usable-bytes=move || usable().to_string()
                    role="status"
                    aria-live="polite"
                    aria-atomic="true"
                >
                    {move || ans.with(|a| a.as_ref().map(|a| verdict_line(state, a)))}
                </div>
            })}
            {move || ans.with(|a| a.as_ref().map(|a| verdict_body(state, a)))}
        </section>
    }
}

/// The content of the verdict line: the compared total against one GPU and the verdict.
fn verdict_line(state: AppState, a: &Answer) -> impl IntoView {
    let lang = state.lang.get();
    let b = |x: u64| state.fmt_bytes(x);
    let pct = if a.usable_bytes > 0 {
        a.total_bytes as f64 * 100.0 / a.usable_bytes as f64
    } else {
        0.0
    };
    let gpus = a.gpus.max(1);
    let per = if gpus > 1 {
        match lang {
            Lang::En => format!(" per GPU (× {gpus})"),
            Lang::Zh => format!("（每卡，共 {gpus} 张）"),
        }
    } else {
        String::new()
    };
    view! {
        <span class="verdict-figure">
            <strong class="big">{b(a.total_bytes)}</strong>
            " " {pick(lang, "of", "/")} " " {b(a.usable_bytes)} {per} " "
            <span class="pct">{format!("({pct:.0} %)")}</span>
        </span>
        " — "
        <span class=format!("badge {}", a.fits_key())>{verdict(lang, a.verdict)}</span>
    }
}

fn verdict_body(state: AppState, a: &Answer) -> impl IntoView {
    let lang = state.lang.get();
    let b = |x: u64| state.fmt_bytes(x);
    let gpus = a.gpus.max(1);
    let serve = a.serve.as_ref().map(|s| {
        let line = match lang {
            Lang::En => format!(
                "{} concurrent {} requests",
                group_thousands(s.sequences),
                short_tokens(s.context)
            ),
            Lang::Zh => format!(
                "{} 个 {} 请求同时运行",
                group_thousands(s.sequences),
                short_tokens(s.context)
            ),
        };
        let tokens = s.kv_tokens.map(|t| match lang {
            Lang::En => format!(" · {} KV tokens", short_tokens(t)),
            Lang::Zh => format!(" · KV 可容纳 {} token", short_tokens(t)),
        });
        let queued = (s.requested > s.sequences && s.sequences > 0).then(|| match lang {
            Lang::En => format!(
                "You asked for {} at once: vLLM runs {} and queues the rest (they wait, nothing fails).",
                group_thousands(s.requested),
                group_thousands(s.sequences)
            ),
            Lang::Zh => format!(
                "你要求同时 {} 个：vLLM 同时运行 {} 个，其余排队等待（不会失败）。",
                group_thousands(s.requested),
                group_thousands(s.sequences)
            ),
        });
        view! {
            <p class="serve-line" data-testid="serve-concurrency" data-sequences=s.sequences.to_string()>
                <strong>{line}</strong>{tokens}
            </p>
            {queued.map(|q| view! { <p class="queue-note">{q}</p> })}
        }
    });
    let scale = a.total_bytes.max(a.usable_bytes).max(1) as f64 * 1.04;
    let bar = {
        // One stacked bar's segments; a rank's parts take the colour of the same key in the legend.
        let color = |key: &str, i: usize| {
            a.segments.iter().position(|s| s.key == key).unwrap_or(i) % SEGMENT_COLORS
        };
        let seg_views = |segments: &[crate::answer::Segment]| {
            segments
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let w = s.bytes as f64 * 100.0 / scale;
                    let title = format!("{}: {}", segment_label(lang, &s.key), b(s.bytes));
                    view! {
                        <span class=format!("seg seg-{}", color(&s.key, i)) style=format!("width:{w:.3}%") title=title></span>
                    }
                })
                .collect_view()
        };
        let segs = seg_views(&a.segments);
        let limit = a.usable_bytes as f64 * 100.0 / scale;
        let summary = a
            .segments
            .iter()
            .map(|s| format!("{} {}", segment_label(lang, &s.key), b(s.bytes)))
            .collect::<Vec<_>>()
            .join(", ");
        let rank_rows = (!a.ranks.is_empty()).then(|| {
            let t = lang.parallel();
            a.ranks
                .iter()
                .map(|r| {
                    let segs = seg_views(&r.segments);
                    // (what the bar is, its label, its tooltip)
                    let (stages, label, title) = match r.device {
                        // transformers' device_map: the GPU and the decoder layers it holds
                        Some((gpu, (first, n))) => {
                            let layers = layer_range(lang, first, n, r.role.as_str());
                            (format!("GPU {gpu}"), format!("GPU {gpu} · {layers}"), layers)
                        }
                        None => {
                            let stages = if r.stages.0 == r.stages.1 {
                                format!("{} {}", t.stage, r.stages.0)
                            } else {
                                format!("{} {}–{}", t.stages, r.stages.0, r.stages.1)
                            };
                            let label = format!("{stages} ×{}", r.count);
                            (stages, label, format!("{} × {}", r.count, t.ranks))
                        }
                    };
                    let class = if r.device.is_some() { "gpu-bar-row device" } else { "gpu-bar-row" };
                    view! {
                        <div class=class data-testid="verdict-rank" data-bytes=r.device_bytes.to_string()>
                            <span class="gpu-bar-label" title=title>{label}</span>
                            <div class="gpu-bar" role="img" aria-label=format!("{stages}: {}", b(r.device_bytes))>
                                {segs}
                                <span class="limit" style=format!("left:{limit:.3}%")></span>
                            </div>
                        </div>
                    }
                })
                .collect_view()
        });
        let per_gpu = a.ranks.is_empty();
        let rows = (0..if per_gpu { gpus.min(8) } else { 0 })
            .map(|g| {
                view! {
                    <div class="gpu-bar-row">
                        <span class="gpu-bar-label">{format!("GPU {g}")}</span>
                        <div class="gpu-bar" role="img" aria-label=summary.clone()>
                            {segs.clone()}
                            <span class="limit" style=format!("left:{limit:.3}%")></span>
                        </div>
                    </div>
                }
            })
            .collect_view();
        let more = (per_gpu && gpus > 8).then(|| {
            view! { <p class="hint">{format!("… {} GPUs, each the same", gpus)}</p> }
        });
        let legend = a
            .segments
            .iter()
            .enumerate()
            .map(|(i, s)| {
                view! {
                    <li><span class=format!("swatch seg-{}", i % SEGMENT_COLORS)></span>{segment_label(lang, &s.key)} " " <strong>{b(s.bytes)}</strong></li>
                }
            })
            .collect_view();
        view! {
            <div class="gpu-bars" data-testid="gpu-bars">
                {rank_rows}
                {rows}
                {more}
                <ul class="legend">
                    {legend}
                    <li><span class="swatch limit-swatch"></span>{pick(lang, "usable memory of one GPU", "单卡可用显存")} " " <strong>{b(a.usable_bytes)}</strong></li>
                </ul>
            </div>
        }
    };
    let host = (a.host_bytes_per_gpu > 0).then(|| {
        let total = a.host_bytes();
        let text = match lang {
            Lang::En => format!(
                "CPU RAM needed for what is offloaded: {} ({} per GPU process)",
                b(total),
                b(a.host_bytes_per_gpu)
            ),
            Lang::Zh => format!(
                "卸载部分需要的 CPU 内存：{}（每个 GPU 进程 {}）",
                b(total),
                b(a.host_bytes_per_gpu)
            ),
        };
        view! {
            <div class="host-ram" data-testid="host-ram" data-bytes=total.to_string()>
                <span class="gpu-bar-label">{pick(lang, "CPU RAM", "CPU 内存")}</span>
                <div class="gpu-bar host" aria-hidden="true"><span class="seg seg-host" style="width:100%"></span></div>
                <p>{text}</p>
            </div>
        }
    });
    view! {
        {serve}
        {a.task.trains().then(|| {
            let v = |x: Option<u64>| x.map_or_else(|| pick(lang, "none", "无").to_string(), group_thousands);
            let (batch, seq) = match a.largest {
                Some((b, s)) => (v(b), v(s)),
                None => ("…".to_string(), "…".to_string()),
            };
            view! {
                <p class="largest-line" data-testid="largest-fit">
                    {pick(lang, "Largest micro-batch that fits: ", "能放下的最大微批：")} <strong>{batch}</strong>
                    {pick(lang, " · longest sequence: ", " · 最长序列：")} <strong>{seq}</strong>
                </p>
            }
        })}
        <p class="which-total">{which_total(lang, a)}</p>
        {bar}
        {host}
    }
}

/// The make-it-fit list: only changes that fit with 5 % to spare, each a button that applies it.
#[component]
pub fn MakeItFit(res: Results) -> impl IntoView {
    let state = use_state();
    let undo = RwSignal::new(None::<PageScenario>);
    // The list is rebuilt only when the advice changes; an input only greys it (the `stale` flag),
    // which is an attribute change, not a new list, in the frame that shows the new verdict.
    let advice = Memo::new(move |_| res.latest_advice().map(|(a, _)| a.advice));
    let stale = Memo::new(move |_| res.latest_advice().is_some_and(|(_, s)| s));
    let apply = move |p: PageScenario| {
        let before = state.page.get_untracked();
        state.change_scenario("fit", |x| *x = p);
        if state.page.get_untracked() != before {
            undo.set(Some(before));
        }
    };
    view! {
        {move || advice.with(|a| a.as_ref().map(|a| fit_list(state, a, stale, apply)))}
        {move || undo.get().map(|before| {
            let lang = state.lang.get();
            view! {
                <p class="undo-line">
                    <button type="button" class="secondary" data-testid="fit-undo" on:click=move |_| {
                        state.change_scenario("fit", |x| *x = before.clone());
                        undo.set(None);
                    }>{pick(lang, "Undo the applied change", "撤销刚才的修改")}</button>
                </p>
            }
        })}
    }
}

fn fit_list(
    state: AppState,
    a: &Advice,
    stale: Memo<bool>,
    apply: impl Fn(PageScenario) + Copy + 'static,
) -> Option<impl IntoView> {
    let lang = state.lang.get();
    let b = |x: u64| state.fmt_bytes(x);
    if a.suggestions.is_empty() && a.no_fit.is_none() {
        return None;
    }
    let items = a
        .suggestions
        .iter()
        .map(|s| {
            let p = s.page.clone();
            let pct = s.total_bytes as f64 * 100.0 / s.usable_bytes.max(1) as f64;
            let seqs = s.sequences.map(|n| match lang {
                Lang::En => format!(" · {} at once", group_thousands(n)),
                Lang::Zh => format!(" · 同时 {} 个", group_thousands(n)),
            });
            view! {
                <li>
                    <button
                        type="button"
                        class="fit-suggestion"
                        data-testid="fit-suggestion"
                        data-total-bytes=s.total_bytes.to_string()
                        data-usable-bytes=s.usable_bytes.to_string()
                        disabled=move || stale.get()
                        on:click=move |_| apply(p.clone())
                    >
                        <span class="fit-change">{change(lang, &s.change)}</span>
                        <span class="fit-figure">
                            {b(s.total_bytes)} " / " {b(s.usable_bytes)} {format!(" ({pct:.0} %)")} {seqs}
                        </span>
                    </button>
                </li>
            }
        })
        .collect_view();
    let none = a.no_fit.as_ref().map(|n| {
        let text = match (n, lang) {
            (NoFit::WeightsAlone { weights_bytes, usable_bytes }, Lang::En) => format!(
                "Nothing tried fits: the weights alone are {} per GPU, more than the {} of one GPU. Use more or larger GPUs, or a smaller model.",
                b(*weights_bytes),
                b(*usable_bytes)
            ),
            (NoFit::WeightsAlone { weights_bytes, usable_bytes }, Lang::Zh) => format!(
                "试过的修改都放不下：仅权重每卡就要 {}，超过单卡的 {}。请用更多或更大的 GPU，或更小的模型。",
                b(*weights_bytes),
                b(*usable_bytes)
            ),
            (NoFit::NothingTried, Lang::En) => "No single change tried (checkpointing, smaller micro-batch, offload, 8-bit optimizer, QLoRA, lower precision, shorter sequence, up to 8 GPUs, a larger GPU) fits with 5 % to spare.".into(),
            (NoFit::NothingTried, Lang::Zh) => "试过的单项修改（检查点、更小微批、卸载、8 bit 优化器、QLoRA、更低精度、更短序列、最多 8 张卡、更大的卡）都无法留出 5 % 余量。".into(),
        };
        view! { <p class="no-fit" data-testid="no-fit">{text}</p> }
    });
    Some(view! {
        <section class="card fit-card" class:stale=move || stale.get() aria-busy=move || stale.get().to_string() aria-labelledby="fit-heading" data-testid="make-it-fit">
            <h3 id="fit-heading">{pick(lang, "Make it fit (click to apply)", "如何放得下（点击应用）")}</h3>
            <p class="hint">{pick(lang, "Each change fits with at least 5 % to spare; cheapest first: speed, then precision, then the workload, then hardware.", "每项修改都至少留出 5 % 余量；按代价排序：先牺牲速度，再精度，再负载，最后硬件。")}</p>
            <ul class="fit-list">{items}</ul>
            {none}
        </section>
    })
}

/// Serving: the precisions the model allows side by side (weights, KV, total, concurrency).
#[component]
pub fn PrecisionStrip(res: Results) -> impl IntoView {
    let state = use_state();
    let rows = Memo::new(move |_| res.latest_advice().map(|(a, _)| a.strip));
    let stale = Memo::new(move |_| res.latest_advice().is_some_and(|(_, s)| s));
    let serve = Memo::new(move |_| state.page.with(|p| p.task == Task::Serve));
    move || {
        rows.with(|rows| {
            let rows = rows.as_ref()?;
            if rows.is_empty() || !serve.get() {
                return None;
            }
            Some(strip_table(state, rows, stale))
        })
    }
}

fn strip_table(state: AppState, rows: &[PrecisionRow], stale: Memo<bool>) -> impl IntoView {
    let lang = state.lang.get();
    let b = |x: u64| state.fmt_bytes(x);
    let vllm = rows.iter().any(|r| r.sequences.is_some());
    let body = rows
        .iter()
        .map(|r| {
            let p = r.page.clone();
            let label = r.label.clone();
            view! {
                <tr class:current=r.current data-testid="precision-row" data-label=label.clone()>
                    <th scope="row">
                        <button type="button" class="link-button" aria-pressed=r.current.to_string() disabled=move || stale.get()
                            on:click=move |_| state.change_scenario("precision", |x| *x = p.clone())>
                            {label.clone()}
                        </button>
                    </th>
                    <td class="num">{b(r.weights_bytes)}</td>
                    <td class="num">{b(r.kv_bytes)}</td>
                    <td class="num">{b(r.total_bytes)}</td>
                    {vllm.then(|| view! {
                        <td class="num">{r.sequences.map(group_thousands)}</td>
                        <td class="num">{r.kv_tokens.map(short_tokens)}</td>
                    })}
                </tr>
            }
        })
        .collect_view();
    view! {
        <section class="card strip-card" class:stale=move || stale.get() aria-busy=move || stale.get().to_string() aria-labelledby="strip-heading" data-testid="precision-strip">
            <h3 id="strip-heading">{pick(lang, "Precision side by side", "不同精度对比")}</h3>
            <div class="table-wrap">
                <table class="strip">
                    <thead>
                        <tr>
                            <th scope="col">{pick(lang, "Weights", "权重")}</th>
                            <th scope="col" class="num">{pick(lang, "Weights / GPU", "每卡权重")}</th>
                            <th scope="col" class="num">{if vllm { pick(lang, "KV pool", "KV 池") } else { pick(lang, "KV cache", "KV 缓存") }}</th>
                            <th scope="col" class="num">{pick(lang, "Total / GPU", "每卡总计")}</th>
                            {vllm.then(|| view! {
                                <th scope="col" class="num">{pick(lang, "At once", "同时请求")}</th>
                                <th scope="col" class="num">{pick(lang, "KV tokens", "KV token")}</th>
                            })}
                        </tr>
                    </thead>
                    <tbody>{body}</tbody>
                </table>
            </div>
        </section>
    }
}
