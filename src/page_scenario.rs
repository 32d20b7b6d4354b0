//! What the page asks the core: which modes to show, the training and the inference scenario (each a
//! `vram_core::Scenario`, so the page, the CLI and the probe describe the same run), and the GPU.

use vram_core::gpu_catalog;
use vram_core::scenario::Mode;
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
}

impl Default for PageScenario {
    fn default() -> Self {
        PageScenario {
            mode: PageMode::Both,
            train: Scenario::default(),
            infer: Scenario::inference(),
            gpu: GpuChoice::Catalog("h100-80"),
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
        s
    }
    /// The training scenario as computed.
    pub fn train_scenario(&self) -> Scenario {
        let mut s = self.train.clone();
        s.mode = Mode::Train;
        s
    }
}

/// Checks a page scenario with the core's validation (the message names the field).
pub fn validate(p: &PageScenario) -> Result<(), String> {
    if p.gpu.usable_bytes() == 0 {
        return Err("gpu: expected a usable memory size above 0".into());
    }
    p.train_scenario().validate().map_err(|e| e.to_string())?;
    let i = p.infer_scenario();
    i.validate().map_err(|e| e.to_string())?;
    vram_core::infer::vllm::validate(&i.serving).map_err(|e| e.to_string())?;
    if let Some(w) = i.weights.as_deref() {
        vram_core::infer::format::parse_weight_format(w).map_err(|e| e.to_string())?;
    }
    Ok(())
}
