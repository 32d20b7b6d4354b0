//! What the page asks the core: which modes to show, the training and the inference scenario (each a
//! `vram_core::Scenario`, so the page, the CLI and the probe describe the same run), and the GPU.

use serde::{Deserialize, Serialize};
use vram_core::gpu_catalog::{self, GpuKind};
use vram_core::infer::llama_cpp::fit::Machine;
use vram_core::scenario::{Engine, Mode};
use vram_core::Scenario;

/// Which budgets the page shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageMode {
    /// Training only.
    Train,
    /// Inference only.
    Infer,
    /// Both, side by side.
    Both,
}

impl PageMode {
    /// URL / select value.
    pub fn key(self) -> &'static str {
        match self {
            PageMode::Train => "train",
            PageMode::Infer => "infer",
            PageMode::Both => "both",
        }
    }
    /// Parses [`PageMode::key`].
    pub fn from_key(s: &str) -> Option<PageMode> {
        match s {
            "train" => Some(PageMode::Train),
            "infer" => Some(PageMode::Infer),
            "both" => Some(PageMode::Both),
            _ => None,
        }
    }
    /// Whether the training budget is shown.
    pub fn train(self) -> bool {
        self != PageMode::Infer
    }
    /// Whether the inference budget is shown.
    pub fn infer(self) -> bool {
        self != PageMode::Train
    }
}

/// The GPU the verdicts compare with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuChoice {
    /// A catalog entry by id.
    Catalog(&'static str),
    /// A custom usable size in bytes.
    Custom(u64),
}

impl GpuChoice {
    /// Usable bytes per GPU.
    pub fn usable_bytes(&self) -> u64 {
        match self {
            GpuChoice::Catalog(id) => gpu_catalog::find(id).map_or(0, |g| g.usable_bytes),
            GpuChoice::Custom(b) => *b,
        }
    }
    /// The catalog entry (none for a custom size).
    pub fn catalog(&self) -> Option<&'static gpu_catalog::Gpu> {
        match self {
            GpuChoice::Catalog(id) => gpu_catalog::find(id),
            GpuChoice::Custom(_) => None,
        }
    }
    /// Whether the GPU shares the host RAM (Apple Silicon, APUs).
    pub fn unified(&self) -> bool {
        self.catalog().is_some_and(|g| g.kind != GpuKind::Discrete)
    }
    /// Display name.
    pub fn name(&self) -> String {
        match self {
            GpuChoice::Catalog(id) => {
                gpu_catalog::find(id).map_or_else(|| id.to_string(), |g| g.name.to_string())
            }
            GpuChoice::Custom(b) => format!("{:.2} GiB", *b as f64 / vram_core::units::GIB as f64),
        }
    }
}

/// Everything the user set besides the model.
#[derive(Clone, Debug, PartialEq)]
pub struct PageScenario {
    /// Which budgets to show.
    pub mode: PageMode,
    /// The training scenario (`Scenario::default()` to start: bf16 autocast AdamW, batch 1, 2048, SDPA).
    pub train: Scenario,
    /// The inference scenario (`Scenario::inference()` to start: bf16, batch 1, 4096 tokens).
    pub infer: Scenario,
    /// The GPU.
    pub gpu: GpuChoice,
    /// The local machine of the llama.cpp view (RAM, display, free memory).
    pub local: LocalMachine,
}

/// The machine of the llama.cpp ("local") view, besides the GPU model and count.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LocalMachine {
    /// System RAM in bytes (for unified-memory GPUs: their RAM).
    pub ram_bytes: u64,
    /// A display is attached to the (discrete) GPU: it loses
    /// `gpu_catalog::DESKTOP_DISPLAY_ALLOWANCE_BYTES`.
    pub display: bool,
    /// Free GPU memory, overriding the GPU's usable memory (what `nvidia-smi` shows free).
    pub free_bytes: Option<u64>,
}

/// RAM assumed until the user says otherwise: 64 GiB (`vram fit`'s default for discrete GPUs).
pub const DEFAULT_RAM_BYTES: u64 = 64 << 30;

impl Default for LocalMachine {
    fn default() -> Self {
        LocalMachine {
            ram_bytes: DEFAULT_RAM_BYTES,
            display: false,
            free_bytes: None,
        }
    }
}

impl Default for PageScenario {
    fn default() -> Self {
        PageScenario {
            mode: PageMode::Both,
            train: Scenario::default(),
            infer: Scenario::inference(),
            gpu: GpuChoice::Catalog("h100-80"),
            local: LocalMachine::default(),
        }
    }
}

impl PageScenario {
    /// The inference scenario as computed: vLLM's serving GPU memory is the chosen GPU's.
    pub fn infer_scenario(&self) -> Scenario {
        let mut s = self.infer.clone();
        s.mode = Mode::Infer;
        let usable = self.gpu.usable_bytes();
        if usable > 0 {
            s.serving.gpu_memory_bytes = usable;
        }
        if s.engine == Engine::LlamaCpp {
            s.llama_cpp.gpu_memory_bytes = self.local_gpu_bytes();
        }
        s
    }
    /// Whether the llama.cpp ("local") view is shown.
    pub fn local_view(&self) -> bool {
        self.mode.infer() && self.infer.engine == Engine::LlamaCpp
    }
    /// Memory one GPU can give to llama.cpp: the free-memory override, else the GPU's usable memory
    /// less the desktop allowance when a display is attached to a discrete card.
    pub fn local_gpu_bytes(&self) -> u64 {
        if let Some(f) = self.local.free_bytes {
            return f;
        }
        match (&self.gpu, self.gpu.catalog()) {
            (_, Some(g)) => gpu_catalog::usable_with_display(g, self.local.display),
            (GpuChoice::Custom(b), None) => {
                if self.local.display {
                    b.saturating_sub(gpu_catalog::DESKTOP_DISPLAY_ALLOWANCE_BYTES)
                } else {
                    *b
                }
            }
            _ => 0,
        }
    }
    /// The machine `fit` compares llama.cpp's buffers with: the GPU memory of each GPU, the device
    /// overhead llama.cpp does not print (CUDA context and workspace), and the RAM.
    /// (As `vram fit` builds it: no CUDA overhead on unified memory.)
    pub fn machine(&self) -> Machine {
        let o = vram_core::report::DeviceOverheads::default();
        let unified = self.gpu.unified();
        Machine {
            gpu_usable_bytes: self.local_gpu_bytes(),
            device_overhead_bytes: if unified {
                0
            } else {
                o.cuda_context_bytes + o.workspace_bytes
            },
            host_ram_bytes: self.local.ram_bytes,
            unified,
        }
    }
    /// The training scenario as computed.
    pub fn train_scenario(&self) -> Scenario {
        let mut s = self.train.clone();
        s.mode = Mode::Train;
        s
    }
}

/// Switches the inference engine; the weight format and KV type are reset to "auto" when moving to or
/// from llama.cpp (GGUF types and ggml cache types mean nothing to the other engines, and back).
pub fn use_engine(p: &mut PageScenario, engine: Engine) {
    if (p.infer.engine == Engine::LlamaCpp) != (engine == Engine::LlamaCpp) {
        p.infer.weights = None;
        p.infer.kv_dtype = None;
        p.infer.llama_cpp.kv_dtype_v = None;
    }
    p.infer.engine = engine;
}

/// Checks a page scenario with the core's validation (the message names the field).
pub fn validate(p: &PageScenario) -> Result<(), String> {
    if p.gpu.usable_bytes() == 0 {
        return Err("gpu: expected a usable memory size above 0".into());
    }
    p.train_scenario().validate().map_err(|e| e.to_string())?;
    let i = p.infer_scenario();
    i.validate().map_err(|e| e.to_string())?;
    if i.engine == Engine::LlamaCpp {
        return Ok(());
    }
    vram_core::infer::vllm::validate(&i.serving).map_err(|e| e.to_string())?;
    if let Some(w) = i.weights.as_deref() {
        vram_core::infer::format::parse_weight_format(w).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Checks the llama.cpp inputs against the model (V type with flash attention, `-ngl` range, split).
pub fn validate_llama(p: &PageScenario, spec: &vram_core::ModelSpec) -> Result<(), String> {
    use vram_core::infer::llama_cpp;
    if !p.local_view() {
        return Ok(());
    }
    let i = p.infer_scenario();
    let r = llama_cpp::resolve(spec, &i).map_err(|e| e.to_string())?;
    llama_cpp::validate(&i.llama_cpp, r.model.layers.len() as u64).map_err(|e| e.to_string())
}
