//! Command-line arguments (clap derive).

use crate::scenario_args::ScenarioArgs;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// GPU-memory calculator for transformer models: estimate from a config.json, measure a real step,
/// watch any process.
#[derive(Parser, Debug)]
#[command(name = "vram", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Parameters and the training / inference memory budget of a HuggingFace config.json.
    Estimate(Box<EstimateArgs>),
    /// Run one real step in PyTorch (CPU: exact tensor bytes; CUDA: allocator + NVML) and report
    /// memory per phase.
    Measure(crate::measure::MeasureArgs),
    /// Run a command and record the GPU memory of its process tree (NVML).
    Watch(crate::watch::WatchArgs),
    /// List the GPUs NVML sees.
    Gpus(crate::gpus::GpusArgs),
    /// Can I run it: GGUF types × the largest context that fits a GPU (and RAM) under llama.cpp.
    Fit(crate::fit_cmd::FitArgs),
    /// Which parallel layouts fit: per-rank memory on N GPUs, ranked, with launch configs.
    Plan(crate::plan_cmd::PlanArgs),
}

#[derive(Args, Debug)]
pub struct EstimateArgs {
    /// A HuggingFace config.json, or a GGUF file (only its header is read); with it (or alone) the
    /// checkpoint's safetensors files, their index, or a folder holding them (only headers are read).
    #[arg(required = true, num_args = 1..)]
    pub config: Vec<PathBuf>,
    /// Show the training budget.
    #[arg(long)]
    pub train: bool,
    /// Show the inference budget.
    #[arg(long)]
    pub infer: bool,
    /// Print the stable JSON document (docs/cli.md) instead of tables.
    #[arg(long)]
    pub json: bool,
    /// The device to predict: cuda (allocated, reserved and device totals) or cpu (exact
    /// live-tensor bytes as `vram measure --device cpu` counts them: PyTorch's CPU kernels, no
    /// CUDA context or workspace), to compare with a CPU measurement like for like.
    #[arg(long, value_enum, default_value = "cuda")]
    pub device: DeviceArg,
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    #[command(flatten)]
    pub serving: crate::serving_args::ServingArgs,
    #[command(flatten)]
    pub llama: crate::llama_args::LlamaArgs,
    #[command(flatten)]
    pub layout: crate::layout_args::LayoutArgs,
}

/// `vram estimate --device`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DeviceArg {
    /// A CUDA GPU.
    Cuda,
    /// The CPU, counted as `vram measure --device cpu` counts it.
    Cpu,
}

impl DeviceArg {
    /// The core's device.
    pub fn device(self) -> vram_core::Device {
        match self {
            DeviceArg::Cuda => vram_core::Device::Cuda,
            DeviceArg::Cpu => vram_core::Device::Cpu,
        }
    }
}
