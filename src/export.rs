//! Exports: the breakdown table as CSV and Markdown (bare, or headed by their context: model, GPU,
//! task and settings), the download's file name, and the estimate as JSON in the schema of
//! `vram estimate --json` (the core's `Estimate`, computed by `vram_core::estimate`).

use crate::compute::Breakdown;
use crate::load::LoadedModel;
use crate::page_scenario::{PageScenario, Task};
use vram_core::scenario::{Engine, LoraTargets, Optimizer};
use vram_core::{estimate, Estimate, Scenario, Sections};

/// CSV: one row per component, one column per phase, bytes (exact integers), then the peak row.
pub fn breakdown_csv(mode: &str, b: &Breakdown) -> String {
    let mut out = String::from("mode,component");
    for p in &b.phases {
        out.push(',');
        out.push_str(p);
    }
    out.push('\n');
    for r in &b.rows {
        out.push_str(&format!("{mode},{}", r.key));
        for c in &r.cells {
            out.push_str(&format!(",{c}"));
        }
        out.push('\n');
    }
    out.push_str(&format!("{mode},peak_allocated"));
    for c in &b.peaks {
        out.push_str(&format!(",{c}"));
    }
    out.push('\n');
    out
}

/// Markdown table in GiB with two decimals.
pub fn breakdown_markdown(title: &str, b: &Breakdown) -> String {
    let gib = |x: u64| format!("{:.2}", x as f64 / (1u64 << 30) as f64);
    let mut out = format!("### {title} (GiB)\n\n| component |");
    for p in &b.phases {
        out.push_str(&format!(" {p} |"));
    }
    out.push_str("\n|---|");
    for _ in &b.phases {
        out.push_str("---:|");
    }
    out.push('\n');
    for r in &b.rows {
        out.push_str(&format!("| {} |", r.key));
        for c in &r.cells {
            out.push_str(&format!(" {} |", gib(*c)));
        }
        out.push('\n');
    }
    out.push_str("| **peak allocated** |");
    for c in &b.peaks {
        out.push_str(&format!(" **{}** |", gib(*c)));
    }
    out.push('\n');
    out
}

/// The estimate document for one scenario, as `vram estimate --json --train` or `--infer` prints it.
pub fn estimate_doc(model: &LoadedModel, scenario: &Scenario, train: bool) -> Estimate {
    estimate(
        &model.spec,
        scenario,
        Sections {
            train,
            infer: !train,
        },
    )
}

/// One line of an export's context: a text value, or a byte figure (raw bytes in CSV, GiB with two
/// decimals in Markdown).
enum ContextValue {
    Text(String),
    Bytes(u64),
}

/// The serde name of a scenario enum (`llama.cpp`, `sdpa`, `nf4`, ...).
fn serde_name<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// The optimizer as the CLI's `--optimizer` and the page's form name it.
fn optimizer_name(o: Optimizer) -> &'static str {
    match o {
        Optimizer::Sgd => "sgd",
        Optimizer::SgdMomentum => "sgd-momentum",
        Optimizer::Adamw => "adamw",
        Optimizer::Adamw8bit => "adamw-8bit",
        Optimizer::Adafactor => "adafactor",
        Optimizer::Lion => "lion",
    }
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.to_string()
}

/// The context of an export: what was estimated (model, GPU, task) and the settings of that task.
/// Byte figures are keyed `…_bytes`.
fn context_items(model_name: &str, page: &PageScenario) -> Vec<(&'static str, ContextValue)> {
    use ContextValue::{Bytes, Text};
    let usable_bytes = if page.local_view() {
        page.local_gpu_bytes()
    } else {
        page.gpu.usable_bytes()
    };
    let mut out = vec![
        ("model", Text(model_name.to_string())),
        ("gpu", Text(page.gpu.name())),
        ("gpu_usable_bytes", Bytes(usable_bytes)),
        ("task", Text(page.task.key().to_string())),
    ];
    match page.task {
        Task::Serve => {
            let s = &page.infer;
            out.push(("engine", Text(serde_name(&s.engine))));
            out.push(("batch_sequences", Text(s.batch.to_string())));
            out.push(("context_tokens", Text(s.seq_len.to_string())));
            out.push(("dtype", Text(s.dtype.name().to_string())));
            let auto = || "auto".to_string();
            out.push(("weights", Text(s.weights.clone().unwrap_or_else(auto))));
            out.push((
                "kv_cache_dtype",
                Text(s.kv_dtype.clone().unwrap_or_else(auto)),
            ));
            match s.engine {
                Engine::Vllm => {
                    let v = &s.serving;
                    out.push(("gpus", Text(page.gpus().to_string())));
                    out.push((
                        "vllm_version",
                        Text(if v.vllm_version.is_empty() {
                            vram_core::infer::vllm_version::CURRENT.to_string()
                        } else {
                            v.vllm_version.clone()
                        }),
                    ));
                    out.push((
                        "gpu_memory_utilization",
                        Text(if v.gpu_memory_utilization > 0.0 {
                            v.gpu_memory_utilization.to_string()
                        } else {
                            "release default".to_string()
                        }),
                    ));
                    out.push((
                        "max_model_len_tokens",
                        Text(if v.max_model_len == 0 {
                            auto()
                        } else {
                            v.max_model_len.to_string()
                        }),
                    ));
                    out.push(("max_num_seqs", Text(v.max_num_seqs.to_string())));
                }
                Engine::Transformers => {
                    out.push(("attention", Text(serde_name(&s.attention))));
                }
                Engine::LlamaCpp => {
                    let l = &s.llama_cpp;
                    out.push((
                        "n_gpu_layers",
                        Text(
                            l.n_gpu_layers
                                .map_or_else(|| "all".into(), |n| n.to_string()),
                        ),
                    ));
                    out.push(("flash_attn", Text(serde_name(&l.flash_attn))));
                    if page.local.ram_bytes > 0 {
                        out.push(("ram_bytes", Bytes(page.local.ram_bytes)));
                    }
                }
            }
        }
        Task::Finetune | Task::Train => {
            let s = page.training();
            out.push(("batch_per_gpu_sequences", Text(s.batch.to_string())));
            out.push(("seq_len_tokens", Text(s.seq_len.to_string())));
            out.push(("grad_accumulation", Text(s.grad_accumulation.to_string())));
            out.push(("dtype", Text(s.dtype.name().to_string())));
            out.push(("mixed_precision", Text(serde_name(&s.mixed_precision))));
            out.push(("optimizer", Text(optimizer_name(s.optimizer).into())));
            out.push(("grad_checkpointing", Text(yes_no(s.grad_checkpointing))));
            out.push(("attention", Text(serde_name(&s.attention))));
            match &s.lora {
                Some(l) => {
                    out.push(("lora_r", Text(l.r.to_string())));
                    out.push(("lora_alpha", Text(l.alpha.to_string())));
                    let targets = match &l.targets {
                        LoraTargets::Default => "default".to_string(),
                        LoraTargets::AllLinear => "all-linear".to_string(),
                        LoraTargets::Modules(m) => m.join(" "),
                    };
                    out.push(("lora_targets", Text(targets)));
                    out.push(("lora_base", Text(serde_name(&l.base_quant))));
                }
                None => out.push(("lora", Text("none".into()))),
            }
            out.push(("gpus", Text(s.gpus.to_string())));
            out.push(("zero_stage", Text(s.zero.0.to_string())));
            out.push(("offload_optimizer", Text(yes_no(s.offload_optimizer))));
            out.push(("offload_params", Text(yes_no(s.offload_params))));
        }
    }
    out
}

/// The context of an export as `(key, value)` pairs, byte figures as exact integers under keys
/// ending in `_bytes`: model, GPU, its usable memory, task, then the settings of the task on screen
/// (serve: engine, batch, context, dtype, weights, KV type and the engine's own settings; fine-tune
/// and train: batch, sequence, accumulation, precision, optimizer, checkpointing, attention, LoRA,
/// GPUs, ZeRO and offload).
pub fn context_lines(model_name: &str, page: &PageScenario) -> Vec<(String, String)> {
    context_items(model_name, page)
        .into_iter()
        .map(|(k, v)| {
            let v = match v {
                ContextValue::Text(t) => t,
                ContextValue::Bytes(b) => b.to_string(),
            };
            (k.to_string(), v)
        })
        .collect()
}

/// A CSV field, quoted when it holds a comma, quote or line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A Markdown table cell: pipes escaped, line breaks as spaces.
fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// GiB with two decimals.
fn gib_2(bytes: u64) -> String {
    format!("{:.2}", bytes as f64 / (1u64 << 30) as f64)
}

/// CSV with its context: first the [`context_lines`] as `# key,value` lines, then the table of
/// [`breakdown_csv`] whose phase columns are named `<phase>_bytes` (exact integers in bytes).
pub fn breakdown_csv_with_context(
    model_name: &str,
    page: &PageScenario,
    mode: &str,
    b: &Breakdown,
) -> String {
    let mut out = String::new();
    for (k, v) in context_lines(model_name, page) {
        out.push_str(&format!("# {},{}\n", csv_field(&k), csv_field(&v)));
    }
    out.push_str("mode,component");
    for p in &b.phases {
        out.push(',');
        out.push_str(&csv_field(&format!("{p}_bytes")));
    }
    out.push('\n');
    for r in &b.rows {
        out.push_str(&format!("{},{}", csv_field(mode), csv_field(&r.key)));
        for c in &r.cells {
            out.push_str(&format!(",{c}"));
        }
        out.push('\n');
    }
    out.push_str(&format!("{},peak_allocated", csv_field(mode)));
    for c in &b.peaks {
        out.push_str(&format!(",{c}"));
    }
    out.push('\n');
    out
}

/// Markdown with its context: a heading naming model, task and GPU, a `setting | value` table of
/// the context (byte figures in GiB with two decimals, the unit in the setting's name), then the
/// breakdown under `title` with each phase column headed `<phase> (GiB)`.
pub fn breakdown_markdown_with_context(
    model_name: &str,
    page: &PageScenario,
    title: &str,
    b: &Breakdown,
) -> String {
    let mut out = format!(
        "## {} · {} · {}\n\n| setting | value |\n|---|---|\n",
        md_cell(model_name),
        page.task.key(),
        md_cell(&page.gpu.name())
    );
    for (k, v) in context_items(model_name, page) {
        let (key, value) = match v {
            ContextValue::Text(t) => (k.to_string(), t),
            ContextValue::Bytes(bytes) => (
                format!("{} (GiB)", k.strip_suffix("_bytes").unwrap_or(k)),
                gib_2(bytes),
            ),
        };
        out.push_str(&format!("| {} | {} |\n", md_cell(&key), md_cell(&value)));
    }
    out.push_str(&format!("\n### {}\n\n| component |", md_cell(title)));
    for p in &b.phases {
        out.push_str(&format!(" {} (GiB) |", md_cell(p)));
    }
    out.push_str("\n|---|");
    for _ in &b.phases {
        out.push_str("---:|");
    }
    out.push('\n');
    for r in &b.rows {
        out.push_str(&format!("| {} |", md_cell(&r.key)));
        for c in &r.cells {
            out.push_str(&format!(" {} |", gib_2(*c)));
        }
        out.push('\n');
    }
    out.push_str("| **peak allocated** |");
    for c in &b.peaks {
        out.push_str(&format!(" **{}** |", gib_2(*c)));
    }
    out.push('\n');
    out
}

/// The download's file name: `vram-<model>-<task>.<ext>`, the model name reduced to `[A-Za-z0-9._-]`
/// (other characters become `-`, runs collapse, at most 80 characters; `model` when nothing is left).
pub fn file_name(model_name: &str, task: Task, ext: &str) -> String {
    let mut name = String::new();
    for c in model_name.chars() {
        let c = if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
            c
        } else {
            '-'
        };
        if c == '-' && name.ends_with('-') {
            continue;
        }
        name.push(c);
    }
    let name: String = name.trim_matches(['-', '.']).chars().take(80).collect();
    let name = name.trim_end_matches(['-', '.']);
    let name = if name.is_empty() { "model" } else { name };
    let ext: String = ext.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    format!("vram-{name}-{}.{ext}", task.key())
}
