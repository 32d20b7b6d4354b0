//! vLLM serving flags of `vram estimate --infer` (the `serving` part of the scenario).

use clap::Args;
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
    /// Also solve: the longest context at --batch and the most sequences at --seq.
    #[arg(long)]
    pub solve: bool,
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
        Ok(())
    }
}
