//! Types shared by the training and inference memory models: one explained term of a budget, one
//! phase of a step, and the device overheads that separate tensor bytes from what `nvidia-smi` shows.

use serde::{Deserialize, Serialize};

/// One component of a memory budget with its explanation, rendered by the CLI and the page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Term {
    /// Stable key (`weights`, `gradients`, `optimizer`, `activations`, `kv_cache`, ...).
    pub key: String,
    /// Bytes.
    pub bytes: u64,
    /// The formula with the numbers substituted, e.g. `8,030,261,248 params × 2 B = 16,060,522,496 B`.
    pub formula: String,
    /// Where the formula or constant comes from (source file, paper, measurement in docs/).
    pub source: String,
}

/// The explained terms of an estimate, built only when a person or the JSON document asks for
/// them: solvers, sweeps and charts read the totals and skip every formula.
#[derive(Debug, Default)]
pub struct Terms {
    explain: bool,
    list: Vec<Term>,
}

impl Terms {
    /// Terms that are built (`explain`) or skipped.
    pub fn new(explain: bool) -> Self {
        Terms {
            explain,
            list: Vec::new(),
        }
    }

    /// Whether terms are built.
    pub fn explain(&self) -> bool {
        self.explain
    }

    /// Adds the term `make` builds, when explaining.
    pub fn add(&mut self, make: impl FnOnce() -> Term) {
        if self.explain {
            self.list.push(make());
        }
    }

    /// The terms built.
    pub fn into_vec(self) -> Vec<Term> {
        self.list
    }
}

/// Memory during one phase of a step, as `vram measure` reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Phase {
    /// `load`, `forward`, `backward`, `optimizer` (training; suffixed `_2` for the steady-state step),
    /// or `load`, `prefill`, `decode` (inference).
    pub name: String,
    /// Tensor bytes live when the phase ends (`torch.cuda.memory_allocated`).
    pub allocated_bytes: u64,
    /// Highest tensor bytes during the phase (`torch.cuda.max_memory_allocated` reset per phase).
    pub peak_allocated_bytes: u64,
    /// What is live at the peak, by component key.
    pub components: Vec<(String, u64)>,
}

/// Memory a process holds on the device beyond PyTorch's tensors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceOverheads {
    /// CUDA context (driver, kernels loaded lazily): not visible to `torch.cuda.memory_allocated`.
    pub cuda_context_bytes: u64,
    /// cuBLAS/cuBLASLt workspace allocated on the first matmul (through the caching allocator).
    pub workspace_bytes: u64,
    /// The model runs on PyTorch's CPU kernels (`vram measure --device cpu`): transformers takes its
    /// torch fallbacks where CUDA has kernels (mamba-2's chunked scan).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub torch_fallbacks: bool,
}

impl Default for DeviceOverheads {
    /// CUDA context ≈ 500 MiB on Hopper with CUDA 12 lazy module loading (`CUDA_MODULE_LOADING=LAZY`,
    /// the default since CUDA 11.7); cuBLAS workspace 32 MiB (`CUBLAS_WORKSPACE_CONFIG=:4096:8`, the
    /// size PyTorch's `getChosenWorkspaceSize` picks on Hopper). See docs/formulas.md §Overheads.
    fn default() -> Self {
        DeviceOverheads {
            cuda_context_bytes: 500 << 20,
            workspace_bytes: 32 << 20,
            torch_fallbacks: false,
        }
    }
}
