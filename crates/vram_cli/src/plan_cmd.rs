//! `vram plan`: the parallel layouts that fit a model on N GPUs of one type, ranked, with per-rank
//! memory, the reasons the closest others fail, and launch configs (docs/cli.md §vram plan).

use crate::load::load_config;
use crate::scenario_args::ScenarioArgs;
use clap::{Args, ValueEnum};
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;
use vram_core::gpu_catalog;
use vram_core::plan::{self, PlanRequest, PlanResult, PlanTask};
use vram_core::scenario::Mode;

/// `--task`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TaskArg {
    /// Pre-training: Megatron-core and HF layouts.
    Train,
    /// Fine-tuning with HF transformers (full, or LoRA with --lora-r).
    Finetune,
    /// Serving with vLLM.
    Serve,
}

#[derive(Args, Debug)]
pub struct PlanArgs {
    /// Path to a HuggingFace config.json.
    pub config: PathBuf,
    /// What the GPUs are for.
    #[arg(long, value_enum, default_value = "train")]
    pub task: TaskArg,
    /// GPU id from the catalog (`vram fit --gpu list`), e.g. h100-80.
    #[arg(long, default_value = "h100-80")]
    pub gpu: String,
    /// Nodes the GPUs are spread over (GPUs per node = --gpus / --nodes).
    #[arg(long, default_value_t = 1)]
    pub nodes: u64,
    /// Only this framework (training).
    #[arg(long, value_enum)]
    pub framework: Option<crate::layout_args::FrameworkArg>,
    /// Sequences per optimizer step (training).
    #[arg(long)]
    pub global_batch: Option<u64>,
    /// Plans to show.
    #[arg(long, default_value_t = 5)]
    pub top: usize,
    /// Print JSON: {"plans": [...], "rejected": [...]}.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    /// Serving: the vLLM release to plan for (default: the current release).
    #[arg(long)]
    pub vllm_version: Option<String>,
    /// Serving: `serve` (vllm serve) or `offline` (LLM(...)).
    #[arg(long, value_enum)]
    pub usage: Option<crate::serving_args::UsageArg>,
    /// Serving: vLLM --enforce-eager (no CUDA graphs).
    #[arg(long)]
    pub enforce_eager: bool,
    /// Serving: vLLM --gpu-memory-utilization (default: the release's, at most 0.95).
    #[arg(long)]
    pub gpu_util: Option<f64>,
}

#[derive(Serialize)]
struct PlanDocument<'a> {
    schema_version: u32,
    model: vram_core::estimate::ModelSummary,
    task: &'static str,
    gpu: &'a str,
    gpus: u64,
    nodes: u64,
    considered: u64,
    plans: &'a [plan::Plan],
    rejected: &'a [plan::Rejected],
}

fn gib(b: u64) -> String {
    format!("{:.2}", b as f64 / (1u64 << 30) as f64)
}

pub fn run(a: &PlanArgs) -> anyhow::Result<ExitCode> {
    let spec = load_config(&a.config)?;
    let Some(gpu) = gpu_catalog::find(&a.gpu) else {
        anyhow::bail!(
            "--gpu: expected a GPU id from the catalog (`vram fit --gpu list`), found {:?}",
            a.gpu
        );
    };
    let mode = if a.task == TaskArg::Serve {
        Mode::Infer
    } else {
        Mode::Train
    };
    let mut base = a.scenario.to_scenario(mode)?;
    let gpus = base.gpus.max(1);
    if a.nodes == 0 || gpus % a.nodes != 0 {
        anyhow::bail!(
            "--nodes: expected a divisor of the {gpus} GPUs (--gpus is the total), found {}",
            a.nodes
        );
    }
    base.gpus = 1;
    crate::serving_args::ServingArgs {
        vllm_version: a.vllm_version.clone(),
        usage: a.usage,
        enforce_eager: a.enforce_eager,
        gpu_util: a.gpu_util,
        ..Default::default()
    }
    .apply(&mut base)?;
    let task = match a.task {
        TaskArg::Train => PlanTask::Train,
        TaskArg::Finetune => PlanTask::Finetune,
        TaskArg::Serve => PlanTask::Serve,
    };
    let req = PlanRequest {
        task,
        base,
        gpu: *gpu,
        gpus,
        gpus_per_node: gpus / a.nodes,
        global_batch: a.global_batch.unwrap_or(0),
        framework: a.framework.map(|f| match f {
            crate::layout_args::FrameworkArg::Hf => vram_core::layout::Framework::Hf,
            crate::layout_args::FrameworkArg::Megatron => vram_core::layout::Framework::Megatron,
            crate::layout_args::FrameworkArg::Torchtitan => {
                vram_core::layout::Framework::Torchtitan
            }
        }),
    };
    let model_id = spec.name.clone();
    let result = plan::plan(&spec, &req, &model_id);
    let shown = &result.plans[..result.plans.len().min(a.top)];
    if a.json {
        let doc = PlanDocument {
            schema_version: vram_core::estimate::SCHEMA_VERSION,
            model: vram_core::estimate::ModelSummary::of(&spec),
            task: match task {
                PlanTask::Train => "train",
                PlanTask::Finetune => "finetune",
                PlanTask::Serve => "serve",
            },
            gpu: gpu.id,
            gpus,
            nodes: a.nodes,
            considered: result.considered,
            plans: shown,
            rejected: &result.rejected,
        };
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print!("{}", render(&result, shown, gpu, gpus, a.nodes));
    }
    Ok(ExitCode::SUCCESS)
}

fn render(
    result: &PlanResult,
    shown: &[plan::Plan],
    gpu: &gpu_catalog::Gpu,
    gpus: u64,
    nodes: u64,
) -> String {
    let mut out = format!(
        "Plans for {gpus} × {} ({} GiB usable each, {nodes} node{}), {} layouts estimated; {} % headroom required on every rank\n",
        gpu.name,
        gib(gpu.usable_bytes),
        if nodes == 1 { "" } else { "s" },
        result.considered,
        plan::HEADROOM_PERCENT
    );
    if shown.is_empty() {
        out.push_str("\nNothing fits. The closest layouts:\n");
    }
    for (i, p) in shown.iter().enumerate() {
        out.push_str(&format!(
            "\n{}. {}\n   largest rank {} GiB of {} GiB (headroom {:.1} %)\n",
            i + 1,
            p.summary,
            gib(p.max_rank_device_bytes),
            gib(p.usable_bytes),
            p.headroom * 100.0
        ));
        let host = p.ranks.iter().map(|r| r.host_bytes).max().unwrap_or(0);
        if host > 0 {
            let per_node = (p.gpus / p.layout.nodes.max(1)).max(1);
            out.push_str(&format!(
                "   host RAM for offloaded states: {} GiB per GPU process, {} GiB per node ({per_node} process{})\n",
                gib(host),
                gib(host.saturating_mul(per_node)),
                if per_node == 1 { "" } else { "es" }
            ));
        }
        for r in &p.ranks {
            let bar_len = ((r.device_bytes as f64 / p.usable_bytes.max(1) as f64) * 40.0)
                .round()
                .clamp(0.0, 40.0) as usize;
            out.push_str(&format!(
                "   {:<12} ×{:<4} {:<40} {:>7} GiB\n",
                if r.stage == r.last_stage {
                    format!("stage {}", r.stage)
                } else {
                    format!("stages {}-{}", r.stage, r.last_stage)
                },
                r.count,
                "█".repeat(bar_len),
                gib(r.device_bytes)
            ));
        }
        if i == 0 {
            for l in &p.launch {
                out.push_str(&format!("\n   {}:\n", l.title));
                for line in l.text.lines() {
                    out.push_str(&format!("     {line}\n"));
                }
            }
        }
    }
    if !result.rejected.is_empty() {
        out.push_str("\nWhy the others fail (closest per GPU count and framework):\n");
        for r in &result.rejected {
            out.push_str(&format!("  - {}: {}\n", r.summary, r.reason));
        }
    }
    out
}
