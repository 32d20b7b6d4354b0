//! Multi-GPU views: the per-rank bars of a parallel training layout (inside the training card) and
//! the Plan card, which runs the core's planner for the model, task and GPU on screen and lists the
//! layouts that fit with their rank bars, launch configs and why the closest others fail.

use crate::compute::ModeResult;
use crate::i18n::Lang;
use crate::page_scenario::Task;
use crate::state::{use_state, AppState};
use leptos::prelude::*;
use vram_core::gpu_catalog::{Gpu, GpuKind};
use vram_core::plan::{self, Plan, PlanRequest, PlanResult, PlanTask};
use vram_core::scenario::{Engine, Layout, Recompute, ZeroStage};
use vram_core::train::ranks::RankEstimate;

fn stage_label(lang: Lang, r: &RankEstimate) -> String {
    let t = lang.parallel();
    let role = match r.role.as_str() {
        "embedding" => t.role_embedding,
        "head" => t.role_head,
        "embedding+head" => t.role_both,
        _ => t.role_layers,
    };
    if r.stage == r.last_stage {
        format!("{} {} · {role}", t.stage, r.stage)
    } else {
        format!("{} {}–{} · {role}", t.stages, r.stage, r.last_stage)
    }
}

/// One bar per rank kind, as wide as its device bytes over the usable memory.
fn rank_bars(state: AppState, ranks: &[RankEstimate], usable: u64) -> impl IntoView {
    let lang = state.lang.get_untracked();
    let t = lang.parallel();
    let largest = ranks.iter().map(|r| r.device_bytes).max().unwrap_or(0);
    ranks
        .iter()
        .map(|r| {
            let pct = if usable == 0 {
                100.0
            } else {
                (r.device_bytes as f64 / usable as f64 * 100.0).min(100.0)
            };
            let over = r.device_bytes > usable;
            let is_largest = r.device_bytes == largest && ranks.len() > 1;
            let tip = format!(
                "{}: {} · {}: {} · {}: {} · {}: {} ({}: {}) · {}: {}",
                t.weights,
                state.fmt_bytes(r.weights_bytes),
                t.gradients,
                state.fmt_bytes(r.gradients_bytes),
                t.optimizer,
                state.fmt_bytes(r.optimizer_bytes),
                t.activations,
                state.fmt_bytes(r.activations_bytes),
                t.in_flight,
                r.in_flight_micro_batches,
                t.communication,
                state.fmt_bytes(r.communication_bytes),
            );
            let title = tip.clone();
            view! {
                <li class="rank-row" class:largest=is_largest data-testid="rank-row" data-bytes=r.device_bytes.to_string() title=title>
                    <span class="rank-label">
                        {stage_label(lang, r)}
                        <small>{format!(" · {} {} · {} {}", r.count, t.ranks, r.layers, t.layers)}</small>
                    </span>
                    <span class="rank-bar" aria-hidden="true">
                        <span class="rank-fill" class:over=over style=format!("width:{pct:.1}%")></span>
                    </span>
                    <span class="rank-bytes">
                        {state.fmt_bytes(r.device_bytes)}
                        {is_largest.then(|| view! { <small>{format!(" ({})", t.largest)}</small> })}
                    </span>
                    <small class="rank-parts">{tip}</small>
                </li>
            }
        })
        .collect_view()
}

/// The per-rank card of a parallel layout (none for plain data parallel).
pub fn ranks_view(state: AppState, r: &ModeResult) -> Option<impl IntoView> {
    if r.ranks.is_empty() {
        return None;
    }
    let t = state.lang.get_untracked().parallel();
    Some(view! {
        <div class="ranks" data-testid="ranks">
            <h3>{t.per_rank}</h3>
            <p class="hint">{t.per_rank_hint}</p>
            <ul class="rank-list">{rank_bars(state, &r.ranks, r.usable_bytes)}</ul>
        </div>
    })
}

/// A plan's or a rejected layout's one-line description in the page's language.
fn layout_line(
    lang: Lang,
    serve: bool,
    gpus: u64,
    l: &Layout,
    micro_batch: u64,
    zero: u8,
    offload: (bool, bool),
) -> String {
    use vram_core::scenario::Framework;
    let zh = lang == Lang::Zh;
    let mut parts = vec![if zh {
        format!("{gpus} 张 GPU")
    } else {
        format!("{gpus} GPU{}", if gpus == 1 { "" } else { "s" })
    }];
    if serve {
        parts.push(match (zh, l.pp > 1) {
            (true, false) => format!("vLLM 张量并行 {}", l.tp),
            (true, true) => format!("vLLM 张量并行 {} × 流水线并行 {}", l.tp, l.pp),
            (false, false) => format!("vLLM tensor parallel {}", l.tp),
            (false, true) => format!("vLLM tensor parallel {} × pipeline parallel {}", l.tp, l.pp),
        });
        return parts.join(if zh { "，" } else { ", " });
    }
    match l.framework {
        Framework::Hf if l.tp > 1 => {
            parts.push(if l.fsdp2 {
                "HF + FSDP2".into()
            } else {
                "HF".into()
            });
            parts.push(if zh {
                format!("transformers 张量并行 {}", l.tp)
            } else {
                format!("transformers tensor parallel {}", l.tp)
            });
        }
        Framework::Hf if l.fsdp2 => parts.push("HF + FSDP2".into()),
        Framework::Hf if gpus > 1 || zero > 0 => parts.push(format!("HF + DeepSpeed ZeRO-{zero}")),
        Framework::Hf => parts.push("HF".into()),
        f => {
            parts.push(
                match f {
                    Framework::Megatron => "Megatron-core",
                    _ => "torchtitan",
                }
                .into(),
            );
            parts.push(format!(
                "TP {} · PP {} · CP {} · DP {}",
                l.tp,
                l.pp,
                l.cp,
                l.dp(gpus)
            ));
            if l.vpp > 1 {
                parts.push(if zh {
                    format!("每卡 {} 个虚拟流水线阶段", l.vpp)
                } else {
                    format!("{} virtual stages per rank", l.vpp)
                });
            }
            if l.ep > 1 {
                parts.push(format!("EP {}", l.ep));
            }
            if l.sequence_parallel {
                parts.push(if zh {
                    "序列并行".into()
                } else {
                    "SP".into()
                });
            }
            if l.distributed_optimizer {
                parts.push(if zh {
                    "分布式优化器".into()
                } else {
                    "distributed optimizer".into()
                });
            }
            if l.fsdp2 {
                parts.push("FSDP2".into());
            }
        }
    }
    match offload {
        (_, true) => parts.push(if zh {
            "优化器和参数卸载到主机内存".into()
        } else {
            "optimizer and parameters offloaded to host RAM".into()
        }),
        (true, false) => parts.push(if zh {
            "优化器卸载到主机内存".into()
        } else {
            "optimizer offloaded to host RAM".into()
        }),
        _ => {}
    }
    if l.recompute == Recompute::Full {
        parts.push(if zh {
            "完全重计算".into()
        } else {
            "full recompute".into()
        });
    }
    parts.push(if zh {
        format!("微批 {micro_batch}")
    } else {
        format!("micro-batch {micro_batch}")
    });
    parts.join(if zh { "，" } else { ", " })
}

/// Why a rejected layout fails, in the page's language.
fn rejected_reason(state: AppState, serve: bool, r: &vram_core::plan::Rejected) -> String {
    match (state.lang.get_untracked(), serve) {
        (Lang::En, _) => r.reason.clone(),
        (Lang::Zh, true) => format!("KV 缓存放不下同时运行的 {} 条序列", r.micro_batch),
        (Lang::Zh, false) => format!(
            "最大的 rank（阶段 {}）需要 {}，单卡可用 {}，保留 {}% 余量",
            r.largest_stage,
            state.fmt_bytes(r.max_rank_device_bytes),
            state.fmt_bytes(r.usable_bytes),
            plan::HEADROOM_PERCENT
        ),
    }
}

/// The GPU on screen as the planner takes it (a custom size becomes an unnamed card).
fn plan_gpu(state: AppState) -> Gpu {
    state.page.with_untracked(|p| {
        p.gpu.catalog().copied().unwrap_or(Gpu {
            id: "custom",
            name: "custom GPU",
            marketed_gb: 0,
            usable_bytes: p.gpu.usable_bytes(),
            source: "",
            kind: GpuKind::Discrete,
            system_ram_bytes: 0,
        })
    })
}

fn run_plan(state: AppState, gpus: u64, per_node: u64) -> Option<PlanResult> {
    let page = state.page.get_untracked();
    let (task, base) = match page.task {
        Task::Train => (PlanTask::Train, page.train_scenario()),
        Task::Finetune => (PlanTask::Finetune, page.train_scenario()),
        Task::Serve if page.infer.engine == Engine::Vllm => {
            (PlanTask::Serve, page.infer_scenario())
        }
        Task::Serve => return None,
    };
    let req = PlanRequest {
        task,
        base,
        gpu: plan_gpu(state),
        gpus: gpus.clamp(1, 1024),
        gpus_per_node: per_node.max(1),
        global_batch: 0,
        framework: None,
    };
    state.model.with_untracked(|m| {
        m.as_ref().map(|m| {
            let id = match &m.source {
                crate::load::ModelSource::Preset(id) => vram_core::presets::find(id)
                    .map_or_else(|| m.spec.name.clone(), |p| p.repo.to_string()),
                _ => m.spec.name.clone(),
            };
            crate::perf::measure_plan(|| plan::plan(&m.spec, &req, &id))
        })
    })
}

/// Applies a plan's layout to the form.
fn use_plan(state: AppState, p: &Plan) {
    let p = p.clone();
    state.change_scenario("task", move |page| {
        if page.task == Task::Serve {
            page.infer.serving.tensor_parallel_size = p.tensor_parallel_size;
            page.infer.serving.pipeline_parallel_size = p.layout.pp.max(1);
            return;
        }
        let t = page.training_mut();
        t.gpus = p.gpus;
        t.batch = p.micro_batch;
        t.zero = ZeroStage(p.zero_stage);
        t.offload_optimizer = p.offload_optimizer;
        t.offload_params = p.offload_params;
        t.grad_checkpointing = p.layout.framework == vram_core::scenario::Framework::Hf
            && p.layout.recompute == Recompute::Full;
        t.layout = p.layout.clone();
        if t.grad_checkpointing {
            t.layout.recompute = Recompute::None;
        }
    });
}

/// The Plan card: GPUs available, then the layouts that fit.
#[component]
pub fn PlanCard() -> impl IntoView {
    let state = use_state();
    let (gpus, set_gpus) = signal(8u64);
    let (per_node, set_per_node) = signal(8u64);
    let (result, set_result) = signal(None::<PlanResult>);
    let (busy, set_busy) = signal(false);
    // A new model or task makes an old answer stale (applying a plan changes neither).
    let task = Memo::new(move |_| state.page.with(|p| p.task));
    Effect::new(move |_| {
        state.model.track();
        task.track();
        set_result.set(None);
    });
    let find = move |_| {
        set_busy.set(true);
        // Let the "…" paint before the planner runs.
        leptos::leptos_dom::helpers::request_animation_frame(move || {
            let r = run_plan(state, gpus.get_untracked(), per_node.get_untracked());
            let _ = set_result.try_set(r);
            let _ = set_busy.try_set(false);
        });
    };
    let number = move |id: &'static str,
                       label: fn(Lang) -> &'static str,
                       get: ReadSignal<u64>,
                       set: WriteSignal<u64>| {
        view! {
            <div class="field">
                <label for=id>{move || label(state.lang.get())}</label>
                <input
                    id=id
                    type="number"
                    min="1"
                    inputmode="numeric"
                    data-testid=id
                    prop:value=move || get.get().to_string()
                    on:change=move |ev| {
                        if let Ok(v) = event_target_value(&ev).trim().parse::<u64>() {
                            set.set(v.clamp(1, 1024));
                        }
                    }
                />
            </div>
        }
    };
    let shown = Memo::new(move |_| {
        state
            .page
            .with(|p| p.task != Task::Serve || p.infer.engine == Engine::Vllm)
    });
    move || {
        shown.get().then(|| {
            let t = move || state.lang.get().parallel();
            view! {
                <section class="card plan-card" data-testid="plan" aria-labelledby="plan-heading">
                    <h2 id="plan-heading">{move || t().plan}</h2>
                    <p class="hint">{move || t().plan_hint}</p>
                    <div class="form-grid">
                        {number("plan-gpus", |l| l.parallel().gpus_available, gpus, set_gpus)}
                        {number("plan-per-node", |l| l.parallel().gpus_per_node, per_node, set_per_node)}
                    </div>
                    <button type="button" class="primary" data-testid="plan-find" on:click=find disabled=move || busy.get()>
                        {move || if busy.get() { "…" } else { t().find }}
                    </button>
                    {move || result.get().map(|r| plan_results(state, r))}
                </section>
            }
        })
    }
}

fn plan_results(state: AppState, r: PlanResult) -> impl IntoView {
    let lang = state.lang.get_untracked();
    let t = lang.parallel();
    let serve = state.page.with_untracked(|p| p.task == Task::Serve);
    let plans: Vec<Plan> = r.plans.iter().take(5).cloned().collect();
    let nothing = plans
        .is_empty()
        .then(|| view! { <p class="field-error" data-testid="plan-none">{t.nothing_fits}</p> });
    let list = plans
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            let plan_for_button = p.clone();
            let launch = (i == 0).then(|| {
                p.launch
                    .iter()
                    .map(|l| {
                        let text = l.text.clone();
                        view! {
                            <div class="launch-block">
                                <div class="launch-head">
                                    <span>{l.title.clone()}</span>
                                    <button type="button" class="secondary small" on:click=move |_| crate::chart_view::copy_text(&text)>{t.copy}</button>
                                </div>
                                <pre class="launch-lines" data-testid="plan-launch" data-language=l.language.clone()><code>{l.text.clone()}</code></pre>
                            </div>
                        }
                    })
                    .collect_view()
            });
            view! {
                <li class="plan-item" data-testid="plan-item">
                    <p>
                        <strong>{if serve && lang == Lang::En { p.summary.clone() } else { layout_line(lang, serve, p.gpus, &p.layout, p.micro_batch, p.zero_stage, (p.offload_optimizer, p.offload_params)) }}</strong>
                        {format!(" — {} {:.1} %", t.headroom, p.headroom * 100.0)}
                    </p>
                    <ul class="rank-list">{rank_bars(state, &p.ranks, p.usable_bytes)}</ul>
                    {host_ram(state, &p.ranks, p.gpus / p.layout.nodes.max(1))}
                    <button type="button" class="secondary small" data-testid="plan-use" on:click=move |_| use_plan(state, &plan_for_button)>{t.use_layout}</button>
                    {launch}
                </li>
            }
        })
        .collect_view();
    let rejected = (!r.rejected.is_empty()).then(|| {
        view! {
            <details class="how" open=r.plans.is_empty()>
                <summary>{t.why_not}</summary>
                <ul data-testid="plan-rejected">
                    {r.rejected.iter().map(|x| view! {
                        <li>
                            <strong>{if serve && lang == Lang::En { x.summary.clone() } else { layout_line(lang, serve, x.gpus, &x.layout, x.micro_batch, x.zero_stage, (x.offload_optimizer, x.offload_params)) }}</strong>
                            {format!(": {}", rejected_reason(state, serve, x))}
                        </li>
                    }).collect_view()}
                </ul>
            </details>
        }
    });
    view! {
        <div class="plan-results" data-testid="plan-results" data-considered=r.considered.to_string()>
            <p class="hint">{format!("{} {}", r.considered, t.considered)}</p>
            {nothing}
            <ol class="plan-list">{list}</ol>
            {rejected}
        </div>
    }
}

/// The host RAM a plan's offloaded states need per GPU process (the largest rank's), when any.
fn host_ram(
    state: AppState,
    ranks: &[vram_core::train::ranks::RankEstimate],
    processes_per_node: u64,
) -> Option<impl IntoView> {
    let bytes = ranks.iter().map(|r| r.host_bytes).max().unwrap_or(0);
    (bytes > 0).then(|| {
        let t = state.lang.get_untracked().parallel();
        let node = bytes.saturating_mul(processes_per_node.max(1));
        view! {
            <p class="hint" data-testid="plan-host-ram" data-bytes=bytes.to_string() data-node-bytes=node.to_string()>
                {format!(
                    "{} {} · {} ({} {}): {}",
                    t.host_ram,
                    state.fmt_bytes(bytes),
                    t.per_node,
                    processes_per_node.max(1),
                    if processes_per_node <= 1 { t.process } else { t.processes },
                    state.fmt_bytes(node)
                )}
            </p>
        }
    })
}
