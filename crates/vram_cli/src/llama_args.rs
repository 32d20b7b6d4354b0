//! llama.cpp flags of `vram estimate --infer --engine llama.cpp` and `vram fit` (the `llama_cpp`
//! part of the scenario). Names follow llama-server's where they can (`--ubatch` is `-ub`).

use clap::{Args, ValueEnum};
use vram_core::scenario::{FlashAttn, LlamaCppInputs};
use vram_core::Scenario;

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum FlashArg {
    On,
    Off,
    Auto,
}

/// llama.cpp flags (docs/cli.md).
#[derive(Args, Debug, Default, Clone)]
pub struct LlamaArgs {
    /// llama.cpp -ub: physical batch the compute graph is reserved for (default 512).
    #[arg(long)]
    pub ubatch: Option<u64>,
    /// llama.cpp -b: logical batch (default 2048).
    #[arg(long)]
    pub n_batch: Option<u64>,
    /// llama.cpp -ctv: V cache type (default: the --kv-dtype K type).
    #[arg(long)]
    pub kv_dtype_v: Option<String>,
    /// llama.cpp -fa (default auto, modelled as on).
    #[arg(long, value_enum)]
    pub flash_attn: Option<FlashArg>,
    /// llama.cpp -ngl: layers on the GPU, the output layer counted first (default: all).
    #[arg(long)]
    pub ngl: Option<u64>,
    /// llama.cpp --n-cpu-moe N: expert tensors of the first N layers in host memory.
    #[arg(long)]
    pub n_cpu_moe: Option<u64>,
    /// llama.cpp --cpu-moe: every layer's expert tensors in host memory.
    #[arg(long)]
    pub cpu_moe: bool,
    /// llama.cpp --swa-full: full-size cache for sliding-window layers.
    #[arg(long)]
    pub swa_full: bool,
    /// llama.cpp --no-kv-offload: KV cache in host memory.
    #[arg(long)]
    pub no_kv_offload: bool,
    /// llama.cpp --tensor-split: proportions per GPU, e.g. 3,1 (the GPU count is their number).
    #[arg(long, value_delimiter = ',')]
    pub tensor_split: Option<Vec<f64>>,
    /// Per-sequence caches (llama-server with an explicit -np and no --kv-unified).
    #[arg(long)]
    pub no_kv_unified: bool,
    /// The ollama profile: --seq is num_ctx per sequence, --batch is OLLAMA_NUM_PARALLEL.
    #[arg(long)]
    pub ollama: bool,
}

impl LlamaArgs {
    /// Whether any llama.cpp flag was given.
    pub fn any(&self) -> bool {
        self.ubatch.is_some()
            || self.n_batch.is_some()
            || self.kv_dtype_v.is_some()
            || self.flash_attn.is_some()
            || self.ngl.is_some()
            || self.n_cpu_moe.is_some()
            || self.cpu_moe
            || self.swa_full
            || self.no_kv_offload
            || self.tensor_split.is_some()
            || self.no_kv_unified
            || self.ollama
    }

    /// Applies the flags given to `s.llama_cpp`.
    pub fn apply(&self, s: &mut Scenario) {
        let l: &mut LlamaCppInputs = &mut s.llama_cpp;
        if let Some(v) = self.ubatch {
            l.n_ubatch = v;
        }
        if let Some(v) = self.n_batch {
            l.n_batch = v;
        }
        if self.kv_dtype_v.is_some() {
            l.kv_dtype_v.clone_from(&self.kv_dtype_v);
        }
        if let Some(f) = self.flash_attn {
            l.flash_attn = match f {
                FlashArg::On => FlashAttn::On,
                FlashArg::Off => FlashAttn::Off,
                FlashArg::Auto => FlashAttn::Auto,
            };
        }
        if self.ngl.is_some() {
            l.n_gpu_layers = self.ngl;
        }
        if let Some(n) = self.n_cpu_moe {
            l.n_cpu_moe = n;
        }
        l.cpu_moe |= self.cpu_moe;
        l.swa_full |= self.swa_full;
        l.no_kv_offload |= self.no_kv_offload;
        if let Some(t) = &self.tensor_split {
            l.tensor_split.clone_from(t);
        }
        if self.no_kv_unified {
            l.kv_unified = false;
        }
        l.ollama |= self.ollama;
        l.gpu_memory_bytes = s.serving.gpu_memory_bytes;
    }
}
