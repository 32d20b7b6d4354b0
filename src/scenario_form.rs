//! The scenario form: mode, GPU, and every field of the core's `Scenario` for training and inference,
//! each with a label and a one-line hint. Changes go through `AppState::change_scenario`, which keeps
//! the last good scenario when the core rejects a value and shows the core's message by the field.

use crate::i18n::Lang;
use crate::i18n_page::field;
use crate::page_scenario::{GpuChoice, PageScenario, Task};
use crate::state::{use_state, AppState};
use leptos::prelude::*;
use vram_core::gpu_catalog::GPUS;
use vram_core::infer::vllm_version;
use vram_core::scenario::{
    AttentionImpl, BaseQuant, Dtype, Engine, FlashAttn, Framework, Layout, Lora, LoraTargets,
    MixedPrecision, Optimizer, Recompute, VllmUsage, ZeroStage,
};
use vram_core::units::GIB;
use wasm_bindgen::JsCast;

fn label_hint(state: AppState, key: &'static str) -> impl IntoView {
    let hint_id = format!("hint-{key}");
    view! {
        <label for=format!("f-{key}")>{move || field(state.lang.get(), key).0}</label>
        <small class="hint" id=hint_id>{move || field(state.lang.get(), key).1}</small>
    }
}

fn error_for(state: AppState, key: &'static str) -> impl IntoView {
    move || {
        state.field_error.get().filter(|(k, _)| k == key).map(|(_, msg)| {
            view! { <p class="field-error" role="alert" data-testid=format!("error-{key}")>{msg}</p> }
        })
    }
}

/// A whole-number field.
fn number_field(
    state: AppState,
    key: &'static str,
    get: impl Fn(&PageScenario) -> u64 + Send + Sync + 'static,
    set: impl Fn(&mut PageScenario, u64) + Send + Sync + Copy + 'static,
) -> impl IntoView {
    let value = move || state.page.with(|p| get(p)).to_string();
    // Live: a whole number typed is applied on the next animation frame (only the latest keystroke
    // of a frame); anything else waits for `change` (blur or Enter), which reports it.
    let typed = RwSignal::new(0u64);
    let on_input = move |ev| {
        let raw = event_target_value(&ev);
        let Ok(v) = raw.trim().parse::<u64>() else {
            return;
        };
        let my = typed.try_get_untracked().unwrap_or(0) + 1;
        let _ = typed.try_set(my);
        leptos::leptos_dom::helpers::request_animation_frame(move || {
            // The field may have been re-created by then (a page change re-renders conditional
            // fields): its latest keystroke is applied by the `change` event instead.
            if typed.try_get_untracked() == Some(my) {
                state.change_scenario_quietly(|p| set(p, v));
            }
        });
    };
    let on_change = move |ev| {
        let raw = event_target_value(&ev);
        match raw.trim().parse::<u64>() {
            Ok(v) => state.change_scenario(key, |p| set(p, v)),
            Err(_) => {
                let msg = match state.lang.get_untracked() {
                    Lang::En => format!("{key}: expected a whole number, found {raw:?}"),
                    Lang::Zh => format!("{key}：需要整数，收到 {raw:?}"),
                };
                state.set_field_error.set(Some((key.to_string(), msg)));
            }
        }
    };
    view! {
        <div class="field">
            {label_hint(state, key)}
            <input
                id=format!("f-{key}")
                type="number"
                min="0"
                inputmode="numeric"
                data-testid=format!("f-{key}")
                aria-describedby=format!("hint-{key}")
                prop:value=value
                on:input=on_input
                on:change=on_change
            />
            {error_for(state, key)}
        </div>
    }
}

/// A select field; `options` are (value, label) pairs computed for the language.
fn select_field(
    state: AppState,
    key: &'static str,
    options: impl Fn(Lang) -> Vec<(String, String)> + Send + Sync + 'static,
    get: impl Fn(&PageScenario) -> String + Send + Sync + 'static,
    set: impl Fn(&mut PageScenario, &str) + Send + Sync + Copy + 'static,
) -> impl IntoView {
    let on_change = move |ev| {
        let v = event_target_value(&ev);
        state.change_scenario(key, |p| set(p, &v));
    };
    let get = std::sync::Arc::new(get);
    let get2 = get.clone();
    let current = move || state.page.with(|p| get(p));
    let current2 = move || state.page.with(|p| get2(p));
    view! {
        <div class="field">
            {label_hint(state, key)}
            <select
                id=format!("f-{key}")
                data-testid=format!("f-{key}")
                aria-describedby=format!("hint-{key}")
                on:change=on_change
                prop:value=current
            >
                {move || {
                    let cur = current2();
                    options(state.lang.get())
                        .into_iter()
                        .map(|(v, l)| {
                            let selected = v == cur;
                            view! { <option value=v selected=selected>{l}</option> }
                        })
                        .collect_view()
                }}
            </select>
            {error_for(state, key)}
        </div>
    }
}

/// A checkbox field.
fn check_field(
    state: AppState,
    key: &'static str,
    get: impl Fn(&PageScenario) -> bool + Send + Sync + 'static,
    set: impl Fn(&mut PageScenario, bool) + Send + Sync + Copy + 'static,
) -> impl IntoView {
    let on_change = move |ev| {
        let checked = event_target_checked(&ev);
        state.change_scenario(key, |p| set(p, checked));
    };
    view! {
        <div class="field check">
            <input
                id=format!("f-{key}")
                type="checkbox"
                data-testid=format!("f-{key}")
                aria-describedby=format!("hint-{key}")
                prop:checked=move || state.page.with(|p| get(p))
                on:change=on_change
            />
            <div>{label_hint(state, key)}</div>
            {error_for(state, key)}
        </div>
    }
}

fn opts(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(v, l)| (v.to_string(), l.to_string()))
        .collect()
}

fn precision_key(s: &vram_core::Scenario) -> String {
    match (s.dtype, s.mixed_precision) {
        (Dtype::Fp32, MixedPrecision::Bf16) => "bf16-mixed",
        (Dtype::Fp32, MixedPrecision::Fp16) => "fp16-mixed",
        (Dtype::Fp32, MixedPrecision::None) => "fp32",
        (Dtype::Bf16, _) => "bf16",
        (Dtype::Fp16, _) => "fp16",
    }
    .to_string()
}

fn lora_key(s: &vram_core::Scenario) -> String {
    match &s.lora {
        None => "full".into(),
        Some(l) => match l.base_quant {
            BaseQuant::None => "lora".into(),
            BaseQuant::Int8 => "lora-int8".into(),
            BaseQuant::Nf4 => "qlora".into(),
        },
    }
}

fn precision_field(state: AppState) -> impl IntoView {
    select_field(
        state,
        "precision",
        |_| {
            opts(&[
                ("bf16-mixed", "bf16 mixed (fp32 master)"),
                ("fp16-mixed", "fp16 mixed (fp32 master)"),
                ("bf16", "pure bf16"),
                ("fp16", "pure fp16"),
                ("fp32", "fp32"),
            ])
        },
        |p| precision_key(p.training()),
        |p, v| {
            let (d, m) = match v {
                "fp16-mixed" => (Dtype::Fp32, MixedPrecision::Fp16),
                "bf16" => (Dtype::Bf16, MixedPrecision::None),
                "fp16" => (Dtype::Fp16, MixedPrecision::None),
                "fp32" => (Dtype::Fp32, MixedPrecision::None),
                _ => (Dtype::Fp32, MixedPrecision::Bf16),
            };
            p.training_mut().dtype = d;
            p.training_mut().mixed_precision = m;
        },
    )
}

fn optimizer_field(state: AppState) -> impl IntoView {
    select_field(
        state,
        "optimizer",
        |_| {
            opts(&[
                ("adamw", "AdamW"),
                ("adamw-8bit", "AdamW 8-bit (bitsandbytes)"),
                ("adafactor", "Adafactor"),
                ("lion", "Lion"),
                ("sgd-momentum", "SGD + momentum"),
                ("sgd", "SGD"),
            ])
        },
        |p| {
            serde_json::to_value(p.training().optimizer)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default()
        },
        |p, v| {
            if let Ok(o) = serde_json::from_value::<Optimizer>(serde_json::Value::String(v.into()))
            {
                p.training_mut().optimizer = o;
            }
        },
    )
}

fn zero_fields(state: AppState) -> impl IntoView {
    view! {
        {select_field(
            state,
            "zero",
            |_| opts(&[("0", "0 (DDP)"), ("1", "1"), ("2", "2"), ("3", "3")]),
            |p| p.training().zero.0.to_string(),
            |p, v| {
                let t = p.training_mut();
                t.zero = ZeroStage(v.parse().unwrap_or(0));
                if t.zero.0 < 3 {
                    t.offload_params = false;
                }
            },
        )}
        {check_field(state, "offload_optimizer", |p| p.training().offload_optimizer, |p, v| p.training_mut().offload_optimizer = v)}
        {move || (state.page.with(|p| p.training().zero.0 == 3)).then(|| check_field(state, "offload_params", |p| p.training().offload_params, |p, v| p.training_mut().offload_params = v))}
        {number_field(state, "grad_accumulation", |p| p.training().grad_accumulation, |p, v| p.training_mut().grad_accumulation = v)}
    }
}

fn training_attention_field(state: AppState) -> impl IntoView {
    select_field(
        state,
        "attention",
        |_| {
            opts(&[
                ("sdpa", "SDPA"),
                ("eager", "eager"),
                ("flash", "flash-attention 2"),
            ])
        },
        |p| attention_key(p.training().attention),
        |p, v| p.training_mut().attention = attention_from(v),
    )
}

/// The fine-tuning method; QLoRA turns gradient checkpointing on, as every QLoRA recipe does.
fn method_field(state: AppState) -> impl IntoView {
    select_field(
        state,
        "method",
        |_| {
            opts(&[
                ("lora", "LoRA (bf16 base)"),
                ("lora-int8", "LoRA over an int8 base"),
                ("qlora", "QLoRA (NF4 base)"),
            ])
        },
        |p| lora_key(p.training()),
        |p, v| {
            let base_quant = match v {
                "lora-int8" => BaseQuant::Int8,
                "qlora" => BaseQuant::Nf4,
                _ => BaseQuant::None,
            };
            let t = p.training_mut();
            let prev = t.lora.clone();
            if base_quant == BaseQuant::Nf4
                && prev.as_ref().map(|l| l.base_quant) != Some(BaseQuant::Nf4)
            {
                t.grad_checkpointing = true;
            }
            t.lora = Some(Lora {
                r: prev.as_ref().map_or(16, |l| l.r),
                alpha: prev.as_ref().map_or(32, |l| l.alpha),
                targets: prev.map_or(LoraTargets::AllLinear, |l| l.targets),
                base_quant,
            });
        },
    )
}

fn lora_detail_fields(state: AppState) -> impl IntoView {
    view! {
        {number_field(
            state,
            "lora_r",
            |p| p.training().lora.as_ref().map_or(0, |l| l.r),
            |p, v| {
                if let Some(l) = p.training_mut().lora.as_mut() {
                    l.r = v;
                    l.alpha = v.saturating_mul(2);
                }
            },
        )}
        {select_field(
            state,
            "lora_targets",
            |_| opts(&[("all-linear", "all-linear"), ("default", "peft default (q, v)")]),
            |p| match p.training().lora.as_ref().map(|l| &l.targets) {
                Some(LoraTargets::AllLinear) => "all-linear".into(),
                _ => "default".into(),
            },
            |p, v| {
                if let Some(l) = p.training_mut().lora.as_mut() {
                    l.targets = if v == "all-linear" { LoraTargets::AllLinear } else { LoraTargets::Default };
                }
            },
        )}
    }
}

/// Fine-tune: method, rank, batch and sequence first; the rest under Advanced.
fn finetune_fields(state: AppState) -> impl IntoView {
    let t = move || state.lang.get().page();
    view! {
        <div class="form-grid" data-testid="finetune-form">
            {method_field(state)}
            {number_field(state, "batch", |p| p.training().batch, |p, v| p.training_mut().batch = v)}
            {number_field(state, "seq_len", |p| p.training().seq_len, |p, v| p.training_mut().seq_len = v)}
            {check_field(state, "grad_checkpointing", |p| p.training().grad_checkpointing, |p, v| p.training_mut().grad_checkpointing = v)}
        </div>
        <details class="advanced" data-testid="advanced">
            <summary>{move || t().advanced}</summary>
            <div class="form-grid">
                {lora_detail_fields(state)}
                {precision_field(state)}
                {optimizer_field(state)}
                {training_attention_field(state)}
                {zero_fields(state)}
            </div>
        </details>
        {layout_fields(state, false)}
    }
}

/// Train: batch, sequence, precision, optimizer, checkpointing, ZeRO first; the rest under Advanced.
fn train_fields(state: AppState) -> impl IntoView {
    let t = move || state.lang.get().page();
    view! {
        <div class="form-grid" data-testid="train-form">
            {number_field(state, "batch", |p| p.training().batch, |p, v| p.training_mut().batch = v)}
            {number_field(state, "seq_len", |p| p.training().seq_len, |p, v| p.training_mut().seq_len = v)}
            {precision_field(state)}
            {optimizer_field(state)}
            {check_field(state, "grad_checkpointing", |p| p.training().grad_checkpointing, |p, v| p.training_mut().grad_checkpointing = v)}
        </div>
        <details class="advanced" data-testid="advanced">
            <summary>{move || t().advanced}</summary>
            <div class="form-grid">
                {training_attention_field(state)}
                {move || (state.page.with(|p| p.training().layout.framework) == Framework::Hf).then(|| zero_fields(state))}
            </div>
        </details>
        {layout_fields(state, true)}
    }
}

/// Rounds the GPU count up to a multiple of `tp · pp · cp`, so that changing a parallel size keeps a
/// valid layout (the core rejects a product that does not divide the GPUs).
fn fit_gpus(s: &mut vram_core::Scenario) {
    let mp = s.layout.model_parallel_size();
    if !s.gpus.is_multiple_of(mp) {
        s.gpus = s.gpus.div_ceil(mp).saturating_mul(mp);
    }
    if s.layout.tp <= 1 {
        s.layout.sequence_parallel = false;
    }
}

fn framework_key(f: Framework) -> &'static str {
    f.name()
}

/// The parallel layout: framework, TP / PP / CP / EP, sharding and recomputation (docs/formulas/
/// parallel.md). Fine-tuning (HF peft) offers FSDP2 only.
fn layout_fields(state: AppState, full_training: bool) -> impl IntoView {
    let t = move || state.lang.get().parallel();
    let framework = move || state.page.with(|p| p.training().layout.framework);
    let moe = move || {
        state.model.with(|m| {
            m.as_ref()
                .is_some_and(|m| vram_core::layout::num_experts(&m.spec) > 1)
        })
    };
    view! {
        <details class="advanced" data-testid="layout">
            <summary>{move || t().layout}</summary>
            <div class="form-grid">
                {full_training.then(|| select_field(
                    state,
                    "framework",
                    |_| opts(&[("hf", "HF Trainer (DeepSpeed / FSDP2 / TP)"), ("megatron", "Megatron-core"), ("torchtitan", "torchtitan")]),
                    |p| framework_key(p.training().layout.framework).to_string(),
                    |p, v| {
                        let t = p.training_mut();
                        let f = match v {
                            "megatron" => Framework::Megatron,
                            "torchtitan" => Framework::Torchtitan,
                            _ => Framework::Hf,
                        };
                        t.layout.framework = f;
                        match f {
                            Framework::Hf => {
                                let fsdp2 = t.layout.fsdp2;
                                t.layout = Layout { fsdp2, ..Layout::default() };
                            }
                            Framework::Megatron => {
                                t.zero = ZeroStage(0);
                                t.offload_optimizer = false;
                                t.offload_params = false;
                                t.layout.fsdp2 = false;
                                t.layout.distributed_optimizer = t.gpus > 1;
                            }
                            Framework::Torchtitan => {
                                t.zero = ZeroStage(0);
                                t.offload_optimizer = false;
                                t.offload_params = false;
                                t.layout.distributed_optimizer = false;
                                t.layout.fsdp2 = t.gpus > 1;
                            }
                        }
                        fit_gpus(t);
                    },
                ))}
                // transformers' own tensor parallelism (full training: peft adapters on its
                // tensor-parallel modules are not modelled)
                {move || (full_training && framework() == Framework::Hf).then(|| number_field(state, "tp", |p| p.training().layout.tp, |p, v| {
                    let t = p.training_mut();
                    t.layout.tp = v;
                    if v > 1 {
                        t.zero = ZeroStage(0);
                        t.offload_optimizer = false;
                        t.offload_params = false;
                    }
                    fit_gpus(t);
                }))}
                {move || (framework() != Framework::Hf).then(|| view! {
                    {number_field(state, "tp", |p| p.training().layout.tp, |p, v| { let t = p.training_mut(); t.layout.tp = v; fit_gpus(t); })}
                    {number_field(state, "pp", |p| p.training().layout.pp, |p, v| { let t = p.training_mut(); t.layout.pp = v; fit_gpus(t); })}
                    {number_field(state, "cp", |p| p.training().layout.cp, |p, v| { let t = p.training_mut(); t.layout.cp = v; fit_gpus(t); })}
                    {move || moe().then(|| number_field(state, "ep", |p| p.training().layout.ep, |p, v| p.training_mut().layout.ep = v))}
                    {check_field(state, "sequence_parallel", |p| p.training().layout.sequence_parallel, |p, v| p.training_mut().layout.sequence_parallel = v)}
                    {select_field(
                        state,
                        "recompute",
                        |lang| if lang == Lang::Zh {
                            opts(&[("none", "不重算"), ("selective", "选择性（注意力核心）"), ("full", "完全（每层只留输入）")])
                        } else {
                            opts(&[("none", "none"), ("selective", "selective (attention core)"), ("full", "full (layer inputs only)")])
                        },
                        |p| match p.training().layout.recompute {
                            Recompute::None => "none".into(),
                            Recompute::Selective => "selective".into(),
                            Recompute::Full => "full".into(),
                        },
                        |p, v| p.training_mut().layout.recompute = match v {
                            "selective" => Recompute::Selective,
                            "full" => Recompute::Full,
                            _ => Recompute::None,
                        },
                    )}
                    {number_field(state, "global_batch", |p| p.training().layout.global_batch, |p, v| p.training_mut().layout.global_batch = v)}
                })}
                {move || (framework() == Framework::Megatron).then(|| check_field(state, "distributed_optimizer", |p| p.training().layout.distributed_optimizer, |p, v| p.training_mut().layout.distributed_optimizer = v))}
                {move || (framework() != Framework::Megatron).then(|| check_field(state, "fsdp2", |p| p.training().layout.fsdp2, |p, v| {
                    let t = p.training_mut();
                    t.layout.fsdp2 = v;
                    if v {
                        t.zero = ZeroStage(0);
                        t.offload_optimizer = false;
                        t.offload_params = false;
                    }
                }))}
            </div>
        </details>
    }
}

/// The option values of `candidates` that the core accepts for this model and page (what the select
/// offers): a value the core would refuse is never offered.
fn valid_options(
    state: AppState,
    candidates: &[&str],
    set: impl Fn(&mut PageScenario, &str),
) -> Vec<String> {
    let page = state.page.get();
    state.model.with(|m| {
        candidates
            .iter()
            .filter(|v| {
                let mut next = page.clone();
                set(&mut next, v);
                crate::page_scenario::validate(&next).is_ok()
                    && m.as_ref().is_none_or(|m| {
                        vram_core::infer::inference_totals(
                            &m.spec,
                            &next.infer_scenario(),
                            &vram_core::report::DeviceOverheads::default(),
                        )
                        .is_ok()
                    })
            })
            .map(|v| v.to_string())
            .collect()
    })
}

fn set_weights(p: &mut PageScenario, v: &str) {
    p.infer.weights = (!v.is_empty()).then(|| v.to_string());
}

fn set_kv(p: &mut PageScenario, v: &str) {
    p.infer.kv_dtype = (!v.is_empty()).then(|| v.to_string());
}

const WEIGHT_FORMATS: &[&str] = &[
    "bf16",
    "fp16",
    "fp8",
    "int8",
    "nf4",
    "gptq-4bit",
    "awq-4bit",
    "mxfp4",
    "q8_0",
    "q6_k",
    "q5_k_m",
    "q4_k_m",
    "q3_k_m",
    "q2_k",
];
const KV_TYPES: &[&str] = &["bf16", "fp16", "fp8", "int8", "int4"];

/// Serve with transformers or vLLM: context, requests at once, weights and KV type first.
fn serve_fields(state: AppState) -> impl IntoView {
    let t = move || state.lang.get().page();
    let weights = Memo::new(move |_| valid_options(state, WEIGHT_FORMATS, set_weights));
    let kv = Memo::new(move |_| valid_options(state, KV_TYPES, set_kv));
    let vllm = move || state.page.with(|p| p.infer.engine == Engine::Vllm);
    view! {
        <div class="form-grid" data-testid="serve-form">
            {number_field(state, "context", |p| p.infer.seq_len, |p, v| {
                p.infer.seq_len = v;
                // Serve: vLLM's max_model_len is the context the user types.
                if p.infer.engine == Engine::Vllm {
                    p.infer.serving.max_model_len = v;
                }
            })}
            {number_field(state, "infer_batch", |p| p.infer.batch, |p, v| p.infer.batch = v)}
            {select_field(
                state,
                "weights",
                move |lang| {
                    let mut v = vec![(String::new(), lang.page().auto.to_string())];
                    for f in weights.get() {
                        v.push((f.clone(), f));
                    }
                    v
                },
                |p| p.infer.weights.clone().unwrap_or_default(),
                set_weights,
            )}
            {select_field(
                state,
                "kv_dtype",
                move |lang| {
                    let mut v = vec![(String::new(), lang.page().auto.to_string())];
                    for f in kv.get() {
                        v.push((f.clone(), f));
                    }
                    v
                },
                |p| p.infer.kv_dtype.clone().unwrap_or_default(),
                set_kv,
            )}
        </div>
        <details class="advanced" data-testid="advanced">
            <summary>{move || t().advanced}</summary>
            <div class="form-grid">
                {select_field(
                    state,
                    "infer_dtype",
                    |_| opts(&[("bf16", "bf16"), ("fp16", "fp16"), ("fp32", "fp32")]),
                    |p| p.infer.dtype.name().to_string(),
                    |p, v| {
                        p.infer.dtype = match v {
                            "fp16" => Dtype::Fp16,
                            "fp32" => Dtype::Fp32,
                            _ => Dtype::Bf16,
                        }
                    },
                )}
                {move || (!vllm()).then(|| view! {
                    {select_field(
                        state,
                        "infer_attention",
                        |_| opts(&[("sdpa", "SDPA"), ("eager", "eager"), ("flash", "flash-attention 2")]),
                        |p| attention_key(p.infer.attention),
                        |p, v| p.infer.attention = attention_from(v),
                    )}
                    {number_field(state, "logits_to_keep", |p| p.infer.logits_to_keep, |p, v| p.infer.logits_to_keep = v)}
                })}
                {move || vllm().then(|| view! {
                    {select_field(
                        state,
                        "vllm_version",
                        |lang| {
                            let current = match lang {
                                Lang::En => format!("{} (current)", vllm_version::CURRENT),
                                Lang::Zh => format!("{}（当前）", vllm_version::CURRENT),
                            };
                            let mut o = vec![(String::new(), current)];
                            o.extend(opts(&[
                                ("0.25", "0.21 – 0.33"),
                                ("0.19", "0.17 – 0.20"),
                                ("0.13", "0.12 – 0.16"),
                                ("0.11", "0.11"),
                                ("0.10", "0.10"),
                                ("0.9", "0.9"),
                                ("0.8", "0.8"),
                                ("0.7", "0.7 (V0)"),
                                ("0.6", "0.6 (V0)"),
                            ]));
                            o
                        },
                        |p| p.infer.serving.vllm_version.clone(),
                        |p, v| p.infer.serving.vllm_version = v.to_string(),
                    )}
                    {select_field(
                        state,
                        "vllm_usage",
                        |lang| match lang {
                            Lang::En => opts(&[("serve", "vllm serve"), ("offline", "LLM() offline")]),
                            Lang::Zh => opts(&[("serve", "vllm serve"), ("offline", "LLM() 离线")]),
                        },
                        |p| match p.infer.serving.usage {
                            VllmUsage::Serve => "serve".into(),
                            VllmUsage::Offline => "offline".into(),
                        },
                        |p, v| {
                            p.infer.serving.usage = if v == "offline" {
                                VllmUsage::Offline
                            } else {
                                VllmUsage::Serve
                            }
                        },
                    )}
                    {select_field(
                        state,
                        "gpu_util",
                        |lang| {
                            let d = match lang {
                                Lang::En => "release default",
                                Lang::Zh => "版本默认",
                            };
                            let mut o = vec![("0".to_string(), d.to_string())];
                            o.extend(opts(&[("0.8", "0.80"), ("0.85", "0.85"), ("0.9", "0.90"), ("0.92", "0.92"), ("0.95", "0.95"), ("1", "1.00")]));
                            o
                        },
                        |p| p.infer.serving.gpu_memory_utilization.to_string(),
                        |p, v| p.infer.serving.gpu_memory_utilization = v.parse().unwrap_or(0.0),
                    )}
                    {select_field(
                        state,
                        "cuda_graphs",
                        |lang| match lang {
                            Lang::En => opts(&[("graphs", "CUDA graphs"), ("eager", "--enforce-eager")]),
                            Lang::Zh => opts(&[("graphs", "CUDA graphs"), ("eager", "--enforce-eager")]),
                        },
                        |p| if p.infer.serving.enforce_eager { "eager".into() } else { "graphs".into() },
                        |p, v| p.infer.serving.enforce_eager = v == "eager",
                    )}
                    {number_field(state, "max_model_len", |p| p.infer.serving.max_model_len, |p, v| p.infer.serving.max_model_len = v)}
                    {number_field(state, "max_num_seqs", |p| p.infer.serving.max_num_seqs, |p, v| p.infer.serving.max_num_seqs = v)}
                    {number_field(state, "pipeline_parallel", |p| p.infer.serving.pipeline_parallel_size, |p, v| p.infer.serving.pipeline_parallel_size = v)}
                })}
            </div>
        </details>
    }
}

/// The three task tabs (a tablist of buttons: arrow keys move between them).
fn task_tabs(state: AppState) -> impl IntoView {
    let label = move |task: Task| {
        let lang = state.lang.get();
        match (task, lang) {
            (Task::Serve, Lang::En) => "Serve",
            (Task::Serve, Lang::Zh) => "部署推理",
            (Task::Finetune, Lang::En) => "Fine-tune",
            (Task::Finetune, Lang::Zh) => "微调",
            (Task::Train, Lang::En) => "Train",
            (Task::Train, Lang::Zh) => "全参训练",
        }
    };
    let sub = move |task: Task| {
        let lang = state.lang.get();
        match (task, lang) {
            (Task::Serve, Lang::En) => "vLLM · transformers · llama.cpp",
            (Task::Serve, Lang::Zh) => "vLLM · transformers · llama.cpp",
            (Task::Finetune, Lang::En) => "LoRA · QLoRA",
            (Task::Finetune, Lang::Zh) => "LoRA · QLoRA",
            (Task::Train, Lang::En) => "all weights · ZeRO",
            (Task::Train, Lang::Zh) => "全部权重 · ZeRO",
        }
    };
    let select = move |task: Task| {
        state.change_scenario("task", |p| p.task = task);
    };
    let on_key = move |ev: web_sys::KeyboardEvent| {
        let cur = state.page.get_untracked().task;
        let i = Task::ALL.iter().position(|t| *t == cur).unwrap_or(0);
        let next = match ev.key().as_str() {
            "ArrowRight" => Task::ALL[(i + 1) % 3],
            "ArrowLeft" => Task::ALL[(i + 2) % 3],
            _ => return,
        };
        ev.prevent_default();
        select(next);
        if let Some(el) = web_sys::window().and_then(|w| w.document()).and_then(|d| {
            d.query_selector(&format!("[data-testid=\"task-{}\"]", next.key()))
                .ok()
                .flatten()
        }) {
            if let Ok(el) = el.dyn_into::<web_sys::HtmlElement>() {
                let _ = el.focus();
            }
        }
    };
    view! {
        <div class="task-tabs" role="tablist" aria-label=move || pick_task_label(state.lang.get()) on:keydown=on_key>
            {Task::ALL
                .into_iter()
                .map(|task| {
                    let selected = move || state.page.with(|p| p.task == task);
                    view! {
                        <button
                            type="button"
                            role="tab"
                            class="task-tab"
                            id=format!("tab-{}", task.key())
                            data-testid=format!("task-{}", task.key())
                            aria-selected=move || selected().to_string()
                            aria-controls="task-panel"
                            tabindex=move || if selected() { "0" } else { "-1" }
                            on:click=move |_| select(task)
                        >
                            <span class="task-name">{move || label(task)}</span>
                            <small>{move || sub(task)}</small>
                        </button>
                    }
                })
                .collect_view()}
        </div>
    }
}

fn pick_task_label(lang: Lang) -> &'static str {
    match lang {
        Lang::En => "Task",
        Lang::Zh => "任务",
    }
}

/// The form: task tabs, the GPU, then the task's own inputs (the rest under "Advanced").
#[component]
pub fn ScenarioForm() -> impl IntoView {
    let state = use_state();
    let task = Memo::new(move |_| state.page.with(|p| p.task));
    let llama = Memo::new(move |_| state.page.with(|p| p.infer.engine == Engine::LlamaCpp));
    let gpu_options = move |lang: Lang| {
        let mut v: Vec<(String, String)> = GPUS
            .iter()
            .map(|g| {
                (
                    g.id.to_string(),
                    format!("{} — {:.2} GiB", g.name, g.usable_bytes as f64 / GIB as f64),
                )
            })
            .collect();
        v.push(("custom".into(), lang.page().custom.into()));
        v
    };
    let custom_gib = move || {
        matches!(state.page.with(|p| p.gpu.clone()), GpuChoice::Custom(_)).then(|| {
            let on_change = move |ev| {
                let raw = event_target_value(&ev);
                match raw.trim().parse::<f64>() {
                    Ok(g) if g > 0.0 && g < 1e6 => state.change_scenario("custom_gib", |p| p.gpu = GpuChoice::Custom((g * GIB as f64) as u64)),
                    _ => state.set_field_error.set(Some(("custom_gib".into(), format!("custom_gib: expected a size in GiB above 0, found {raw:?}")))),
                }
            };
            view! {
                <div class="field">
                    {label_hint(state, "custom_gib")}
                    <input
                        id="f-custom_gib"
                        type="number"
                        step="0.01"
                        min="0"
                        data-testid="f-custom_gib"
                        aria-describedby="hint-custom_gib"
                        prop:value=move || state.page.with(|p| format!("{:.2}", p.gpu.usable_bytes() as f64 / GIB as f64))
                        on:change=on_change
                    />
                    {error_for(state, "custom_gib")}
                </div>
            }
        })
    };
    let task_error = move || {
        state
            .field_error
            .get()
            .filter(|(k, _)| k == "task" || k == "fit" || k == "precision")
            .map(|(_, msg)| {
                view! { <p class="field-error" role="alert" data-testid="error-task">{msg}</p> }
            })
    };
    view! {
        <section class="card scenario-card" aria-label=move || pick_task_label(state.lang.get()) data-testid="scenario-form">
            {task_tabs(state)}
            {task_error}
            <div id="task-panel" role="tabpanel" aria-labelledby=move || format!("tab-{}", task.get().key())>
                {move || (task.get() == Task::Serve).then(|| engine_field(state))}
                <div class="form-grid">
                    {select_field(
                        state,
                        "gpu",
                        gpu_options,
                        |p| match &p.gpu {
                            GpuChoice::Catalog(id) => id.to_string(),
                            GpuChoice::Custom(_) => "custom".into(),
                        },
                        |p, v| {
                            p.gpu = match GPUS.iter().find(|g| g.id == v) {
                                Some(g) => GpuChoice::Catalog(g.id),
                                None => GpuChoice::Custom(p.gpu.usable_bytes().max(1)),
                            };
                            // On unified memory the RAM is the machine's.
                            if let Some(g) = p.gpu.catalog().filter(|g| g.system_ram_bytes > 0) {
                                p.local.ram_bytes = g.system_ram_bytes;
                            }
                        },
                    )}
                    {custom_gib}
                    // llama.cpp has its own GPU count (the tensor split); transformers spreads the
                    // layers over its GPUs (`device_map="auto"`), vLLM shards them (TP).
                    {move || {
                        let show = state.page.with(|p| p.task.trains() || p.infer.engine != Engine::LlamaCpp);
                        show.then(|| number_field(state, "gpus", |p| p.gpus(), |p, v| p.set_gpus(v)))
                    }}
                </div>
                {move || match task.get() {
                    Task::Serve => {
                        if llama.get() {
                            view! { <div class="form-grid" data-testid="infer-form">{llama_fields(state)}</div> }.into_any()
                        } else {
                            serve_fields(state).into_any()
                        }
                    }
                    Task::Finetune => finetune_fields(state).into_any(),
                    Task::Train => train_fields(state).into_any(),
                }}
            </div>
        </section>
    }
}

fn attention_key(a: AttentionImpl) -> String {
    match a {
        AttentionImpl::Eager => "eager",
        AttentionImpl::Sdpa => "sdpa",
        AttentionImpl::Flash => "flash",
    }
    .into()
}

fn attention_from(v: &str) -> AttentionImpl {
    match v {
        "eager" => AttentionImpl::Eager,
        "flash" => AttentionImpl::Flash,
        _ => AttentionImpl::Sdpa,
    }
}

/// A free-text field; `set` parses the raw text (its error is shown by the field).
fn text_field(
    state: AppState,
    key: &'static str,
    get: impl Fn(&PageScenario) -> String + Send + Sync + 'static,
    set: impl Fn(&mut PageScenario, &str) -> Result<(), String> + Send + Sync + Copy + 'static,
) -> impl IntoView {
    let on_change = move |ev| {
        let raw = event_target_value(&ev);
        let mut next = state.page.get_untracked();
        match set(&mut next, raw.trim()) {
            Ok(()) => state.change_scenario(key, |p| *p = next),
            Err(msg) => state.set_field_error.set(Some((key.to_string(), msg))),
        }
    };
    view! {
        <div class="field">
            {label_hint(state, key)}
            <input
                id=format!("f-{key}")
                type="text"
                inputmode="decimal"
                autocomplete="off"
                data-testid=format!("f-{key}")
                aria-describedby=format!("hint-{key}")
                prop:value=move || state.page.with(|p| get(p))
                on:change=on_change
            />
            {error_for(state, key)}
        </div>
    }
}

fn engine_key(e: Engine) -> &'static str {
    match e {
        Engine::Transformers => "transformers",
        Engine::Vllm => "vllm",
        Engine::LlamaCpp => "llama.cpp",
    }
}

/// The engine select: transformers, vLLM, llama.cpp.
fn engine_field(state: AppState) -> impl IntoView {
    select_field(
        state,
        "engine",
        |_| {
            opts(&[
                ("transformers", "HF transformers"),
                ("vllm", "vLLM"),
                ("llama.cpp", "llama.cpp / ollama"),
            ])
        },
        |p| engine_key(p.infer.engine).into(),
        |p, v| {
            let e = match v {
                "vllm" => Engine::Vllm,
                "llama.cpp" => Engine::LlamaCpp,
                _ => Engine::Transformers,
            };
            crate::page_scenario::use_engine(p, e);
        },
    )
}

fn gib_text(bytes: u64) -> String {
    let g = bytes as f64 / GIB as f64;
    let s = format!("{g:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn parse_gib(key: &str, raw: &str) -> Result<u64, String> {
    match raw.parse::<f64>() {
        Ok(g) if g > 0.0 && g < 1e6 => Ok((g * GIB as f64).round() as u64),
        _ => Err(format!(
            "{key}: expected a size in GiB above 0, found {raw:?}"
        )),
    }
}

/// The split proportions as typed (`3,1`); empty for one GPU.
pub fn split_text(split: &[f64]) -> String {
    if split.len() < 2 {
        return String::new();
    }
    split
        .iter()
        .map(|f| f.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// Parses `--tensor-split` proportions (`3,1`, also `3/1` as llama.cpp reads them): 1 to 16
/// non-negative numbers, not all zero; the GPU count is their number. Empty text splits evenly over
/// the current `n_gpus`.
pub fn parse_split(raw: &str, n_gpus: usize) -> Result<Vec<f64>, String> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(if n_gpus > 1 {
            vec![1.0; n_gpus]
        } else {
            Vec::new()
        });
    }
    let bad = || {
        format!(
            "llama_cpp.tensor_split: expected 1 to 16 proportions per GPU, non-negative and not all zero, separated by commas (e.g. 3,1), found {raw:?}"
        )
    };
    let values = raw
        .split([',', '/'])
        .map(|t| {
            t.trim()
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite() && *f >= 0.0)
        })
        .collect::<Option<Vec<f64>>>()
        .ok_or_else(bad)?;
    if values.len() > 16 || values.iter().all(|f| *f == 0.0) {
        return Err(bad());
    }
    Ok(if values.len() == 1 {
        Vec::new()
    } else {
        values
    })
}

fn flash_key(f: FlashAttn) -> String {
    match f {
        FlashAttn::Auto => "auto",
        FlashAttn::On => "on",
        FlashAttn::Off => "off",
    }
    .into()
}

/// What the model offers llama.cpp's options: (routed experts, sliding-window layers).
fn model_features(state: AppState) -> (bool, bool) {
    let page = state.page.get();
    state.model.with(|m| {
        m.as_ref()
            .and_then(|m| {
                vram_core::infer::llama_cpp::resolve(&m.spec, &page.infer_scenario()).ok()
            })
            .map_or((false, false), |r| {
                (r.model.has_experts(), r.model.n_swa > 0)
            })
    })
}

/// The llama.cpp inputs (shown instead of the transformers / vLLM ones).
fn llama_fields(state: AppState) -> impl IntoView {
    let features = Memo::new(move |_| model_features(state));
    let cache_types = |first: Option<(&str, &str)>| {
        let mut v: Vec<(String, String)> = first
            .map(|(a, b)| vec![(a.to_string(), b.to_string())])
            .unwrap_or_default();
        for t in [
            "f16", "bf16", "f32", "q8_0", "q5_1", "q5_0", "q4_1", "q4_0", "iq4_nl",
        ] {
            v.push((t.into(), t.into()));
        }
        v
    };
    view! {
        {check_field(state, "llama_ollama", |p| p.infer.llama_cpp.ollama, |p, v| p.infer.llama_cpp.ollama = v)}
        {number_field(state, "llama_ctx", |p| p.infer.seq_len, |p, v| p.infer.seq_len = v)}
        {number_field(state, "llama_np", |p| p.infer.batch, |p, v| p.infer.batch = v)}
        {select_field(
            state,
            "llama_weights",
            |lang| {
                let mut v = vec![(String::new(), lang.page().auto.to_string())];
                for f in ["f16", "bf16", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "q4_0", "q3_k_m", "q2_k"] {
                    v.push((f.into(), f.to_uppercase()));
                }
                v
            },
            |p| p.infer.weights.clone().unwrap_or_default(),
            |p, v| p.infer.weights = (!v.is_empty()).then(|| v.to_string()),
        )}
        {select_field(
            state,
            "llama_ctk",
            move |_| cache_types(None),
            |p| p.infer.kv_dtype.clone().unwrap_or_else(|| "f16".into()),
            |p, v| p.infer.kv_dtype = (v != "f16").then(|| v.to_string()),
        )}
        {select_field(
            state,
            "llama_ctv",
            move |lang| cache_types(Some(("", if lang == Lang::Zh { "与 K 相同" } else { "same as K" }))),
            |p| p.infer.llama_cpp.kv_dtype_v.clone().unwrap_or_default(),
            |p, v| p.infer.llama_cpp.kv_dtype_v = (!v.is_empty()).then(|| v.to_string()),
        )}
        {select_field(
            state,
            "llama_fa",
            |_| opts(&[("auto", "auto"), ("on", "on"), ("off", "off")]),
            |p| flash_key(p.infer.llama_cpp.flash_attn),
            |p, v| {
                p.infer.llama_cpp.flash_attn = match v {
                    "on" => FlashAttn::On,
                    "off" => FlashAttn::Off,
                    _ => FlashAttn::Auto,
                }
            },
        )}
        {text_field(
            state,
            "llama_ngl",
            |p| p.infer.llama_cpp.n_gpu_layers.map_or_else(|| "all".into(), |n| n.to_string()),
            |p, raw| {
                p.infer.llama_cpp.n_gpu_layers = match raw.to_ascii_lowercase().as_str() {
                    "" | "all" | "全部" => None,
                    t => Some(t.parse::<u64>().map_err(|_| {
                        format!("llama_cpp.n_gpu_layers: expected \"all\" or a whole number, found {raw:?}")
                    })?),
                };
                Ok(())
            },
        )}
        {move || features.get().0.then(|| view! {
            {number_field(
                state,
                "llama_n_cpu_moe",
                |p| p.infer.llama_cpp.n_cpu_moe,
                |p, v| p.infer.llama_cpp.n_cpu_moe = v,
            )}
            {check_field(
                state,
                "llama_cpu_moe",
                |p| p.infer.llama_cpp.cpu_moe,
                |p, v| p.infer.llama_cpp.cpu_moe = v,
            )}
        })}
        {number_field(state, "llama_ubatch", |p| p.infer.llama_cpp.n_ubatch, |p, v| p.infer.llama_cpp.n_ubatch = v)}
        {move || features.get().1.then(|| check_field(
            state,
            "llama_swa_full",
            |p| p.infer.llama_cpp.swa_full,
            |p, v| p.infer.llama_cpp.swa_full = v,
        ))}
        {check_field(state, "llama_no_kv_offload", |p| p.infer.llama_cpp.no_kv_offload, |p, v| p.infer.llama_cpp.no_kv_offload = v)}
        {number_field(
            state,
            "llama_gpus",
            |p| p.infer.llama_cpp.tensor_split.len().max(1) as u64,
            |p, v| {
                p.infer.llama_cpp.tensor_split = if v > 1 { vec![1.0; v as usize] } else { Vec::new() };
                if v == 0 {
                    p.infer.llama_cpp.tensor_split = vec![0.0];
                }
            },
        )}
        {text_field(
            state,
            "llama_tensor_split",
            |p| split_text(&p.infer.llama_cpp.tensor_split),
            |p, raw| {
                p.infer.llama_cpp.tensor_split = parse_split(raw, p.infer.llama_cpp.tensor_split.len())?;
                Ok(())
            },
        )}
        {text_field(
            state,
            "llama_ram_gib",
            |p| gib_text(p.local.ram_bytes),
            |p, raw| {
                p.local.ram_bytes = parse_gib("llama_ram_gib", raw)?;
                Ok(())
            },
        )}
        {check_field(state, "llama_display", |p| p.local.display, |p, v| p.local.display = v)}
        {text_field(
            state,
            "llama_free_gib",
            |p| p.local.free_bytes.map(gib_text).unwrap_or_default(),
            |p, raw| {
                p.local.free_bytes = if raw.is_empty() { None } else { Some(parse_gib("llama_free_gib", raw)?) };
                Ok(())
            },
        )}
    }
}
