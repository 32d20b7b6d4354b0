//! vLLM serving flags of `vram estimate --infer` (the `serving` part of the scenario).

use clap::{Args, ValueEnum};
use vram_core::scenario::{Interconnect, VllmUsage};
use vram_core::Scenario;

/// Serving flags (docs/cli.md).
#[derive(Args, Debug, Default, Clone)]
pub struct ServingArgs {
    /// GPU memory in GiB as CUDA reports it (an "80 GB" H100 is 79.19).
    #[arg(long)]
    pub gpu_mem_gib: Option<f64>,
    /// vLLM --gpu-memory-utilization (0–1].
    #[arg(long)]
    pub gpu_util: Option<f64>,
    /// vLLM --tensor-parallel-size.
    #[arg(long)]
    pub tp: Option<u64>,
    /// vLLM --max-model-len (default: the config's max_position_embeddings).
    #[arg(long)]
    pub max_model_len: Option<u64>,
    /// vLLM --max-num-seqs.
    #[arg(long)]
    pub max_num_seqs: Option<u64>,
    /// vLLM --max-num-batched-tokens (chunked-prefill budget).
    #[arg(long)]
    pub max_num_batched_tokens: Option<u64>,
    /// vLLM --data-parallel-size: engine replicas, each with the dense weights and its own KV cache;
    /// an MoE model's experts are split over TP × DP GPUs.
    #[arg(long)]
    pub data_parallel_size: Option<u64>,
    /// vLLM --enable-expert-parallel: whole experts per GPU.
    #[arg(long)]
    pub enable_expert_parallel: bool,
    /// vLLM --block-size (default: 16, 64 for MLA models, or what the version picks).
    #[arg(long)]
    pub block_size: Option<u64>,
    /// The vLLM release to model ("0.6.3", "0.8.5", "0.11"; default: the current release):
    /// defaults, profiling run and memory accounting differ by version.
    #[arg(long)]
    pub vllm_version: Option<String>,
    /// How vLLM is started: `serve` (vllm serve, the API server) or `offline` (LLM(...)).
    #[arg(long, value_enum)]
    pub usage: Option<UsageArg>,
    /// The link between the TP GPUs: nvlink (custom all-reduce on) or pcie (off); default:
    /// judged from --gpu.
    #[arg(long, value_enum)]
    pub interconnect: Option<InterconnectArg>,
    /// vLLM --enforce-eager: no CUDA graphs.
    #[arg(long)]
    pub enforce_eager: bool,
    /// The serving GPU: a catalog id (`vram gpus`) or its name as CUDA reports it; a catalog id
    /// also sets --gpu-mem-gib.
    #[arg(long)]
    pub gpu: Option<String>,
    /// Also solve: the longest context at --batch and the most sequences at --seq.
    #[arg(long)]
    pub solve: bool,
}

/// `--usage`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum UsageArg {
    /// `vllm serve` (the OpenAI-compatible API server).
    Serve,
    /// The offline `LLM(...)` class.
    Offline,
}

/// `--interconnect`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum InterconnectArg {
    /// NVLink / NVSwitch.
    Nvlink,
    /// PCIe only.
    Pcie,
}

impl ServingArgs {
    /// Applies the flags given to `s.serving`.
    pub fn apply(&self, s: &mut Scenario) -> anyhow::Result<()> {
        if let Some(g) = self.gpu_mem_gib {
            if !(g > 0.0 && g <= 1.0e6) {
                anyhow::bail!("--gpu-mem-gib: expected a positive number of GiB, found {g}");
            }
            s.serving.gpu_memory_bytes = (g * (1u64 << 30) as f64).round() as u64;
        }
        if let Some(u) = self.gpu_util {
            s.serving.gpu_memory_utilization = u;
        }
        if let Some(t) = self.tp {
            s.serving.tensor_parallel_size = t;
        }
        if let Some(m) = self.max_model_len {
            s.serving.max_model_len = m;
        }
        if let Some(m) = self.max_num_seqs {
            s.serving.max_num_seqs = m;
        }
        if let Some(m) = self.max_num_batched_tokens {
            s.serving.max_num_batched_tokens = m;
        }
        if let Some(d) = self.data_parallel_size {
            s.serving.data_parallel_size = d;
        }
        s.serving.enable_expert_parallel |= self.enable_expert_parallel;
        if let Some(b) = self.block_size {
            s.serving.block_size = b;
        }
        if let Some(v) = &self.vllm_version {
            vram_core::infer::vllm_version::VllmVersion::parse(v)
                .map_err(|e| anyhow::anyhow!("--vllm-version: {e}"))?;
            s.serving.vllm_version = v.clone();
        }
        if let Some(u) = self.usage {
            s.serving.usage = match u {
                UsageArg::Serve => VllmUsage::Serve,
                UsageArg::Offline => VllmUsage::Offline,
            };
        }
        if let Some(i) = self.interconnect {
            s.serving.interconnect = match i {
                InterconnectArg::Nvlink => Interconnect::Nvlink,
                InterconnectArg::Pcie => Interconnect::Pcie,
            };
        }
        s.serving.enforce_eager |= self.enforce_eager;
        if let Some(g) = &self.gpu {
            match vram_core::gpu_catalog::find(g) {
                Some(gpu) => {
                    if self.gpu_mem_gib.is_none() {
                        s.serving.gpu_memory_bytes = gpu.usable_bytes;
                    }
                    s.serving.gpu_name = gpu.name.to_string();
                }
                None if g.trim().is_empty() => {
                    anyhow::bail!("--gpu: expected a catalog id (see `vram gpus`) or a GPU name, found an empty string")
                }
                None => s.serving.gpu_name = g.clone(),
            }
        }
        Ok(())
    }
}
