//! What the page asks the core: which modes to show, the training and the inference scenario (each a
//! `vram_core::Scenario`, so the page, the CLI and the probe describe the same run), and the GPU.

use serde::{Deserialize, Serialize};
use vram_core::gpu_catalog::{self, GpuKind};
use vram_core::infer::llama_cpp::fit::Machine;
use vram_core::scenario::{BaseQuant, Dtype, Engine, Lora, LoraTargets, MixedPrecision, Mode};
use vram_core::Scenario;

/// What the user is doing: the page asks one question per task and shows only its inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Task {
    /// Inference: HF transformers, vLLM (concurrency at the user's context) or llama.cpp.
    Serve,
    /// Parameter-efficient fine-tuning: LoRA over a bf16, int8 or NF4 (QLoRA) base.
    Finetune,
    /// Full training: every weight trained, optimizer states for all of them.
    Train,
}

impl Task {
    /// URL key and test id suffix (`task-serve`, ...).
    pub fn key(self) -> &'static str {
        match self {
            Task::Serve => "serve",
            Task::Finetune => "finetune",
            Task::Train => "train",
        }
    }
    /// Parses [`Task::key`]; the keys of the former mode switch map onto tasks (`infer` and `both`
    /// were opened on inference, `train` on training), so old share links keep working.
    pub fn from_key(s: &str) -> Option<Task> {
        match s {
            "serve" | "infer" | "both" => Some(Task::Serve),
            "finetune" => Some(Task::Finetune),
            "train" => Some(Task::Train),
            _ => None,
        }
    }
    /// All tasks in tab order.
    pub const ALL: [Task; 3] = [Task::Serve, Task::Finetune, Task::Train];
    /// Whether the task runs the training estimate.
    pub fn trains(self) -> bool {
        self != Task::Serve
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
    /// The task shown.
    pub task: Task,
    /// The full-training scenario (`Scenario::default()`: bf16 autocast AdamW, batch 1, 2048, SDPA).
    pub train: Scenario,
    /// The fine-tuning scenario ([`finetune_default`]: LoRA r 16 on all linear layers with gradient
    /// checkpointing).
    pub finetune: Scenario,
    /// The serving scenario ([`serve_default`]: vLLM, bf16, one request of 4,096 tokens).
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

/// The fine-tuning scenario a newcomer would choose, as the peft / TRL recipes set it up: LoRA r 16,
/// alpha 32 on all linear layers (`target_modules="all-linear"`), the frozen base loaded in bf16
/// (`torch_dtype=torch.bfloat16`; QLoRA's `bnb_4bit_compute_dtype` too) under bf16 autocast
/// (`bf16=True`), AdamW on the fp32 adapters, and gradient checkpointing on (TRL's `SFTConfig` and
/// the QLoRA recipes turn it on; it is what lets a 7B adapter train on one consumer card).
pub fn finetune_default() -> Scenario {
    Scenario {
        dtype: Dtype::Bf16,
        mixed_precision: MixedPrecision::Bf16,
        lora: Some(Lora {
            r: 16,
            alpha: 32,
            targets: LoraTargets::AllLinear,
            base_quant: BaseQuant::None,
        }),
        grad_checkpointing: true,
        ..Scenario::default()
    }
}

/// The serving scenario to start with: vLLM, bf16 weights, one request, and `max_model_len` equal to
/// the context the user types (4,096 to start) rather than the model's `max_position_embeddings`,
/// so the concurrency shown is for the user's context.
pub fn serve_default() -> Scenario {
    let mut s = Scenario::inference();
    s.engine = Engine::Vllm;
    s.serving.max_model_len = s.seq_len;
    s
}

impl Default for PageScenario {
    fn default() -> Self {
        PageScenario {
            task: Task::Serve,
            train: Scenario::default(),
            finetune: finetune_default(),
            infer: serve_default(),
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
        if s.serving.gpu_name.is_empty() {
            // vLLM picks its defaults (and the interconnect is judged) by the GPU's name
            if let Some(g) = self.gpu.catalog() {
                s.serving.gpu_name = g.name.to_string();
            }
        }
        if s.engine == Engine::LlamaCpp {
            s.llama_cpp.gpu_memory_bytes = self.local_gpu_bytes();
        }
        s
    }
    /// Whether the llama.cpp ("local") view is shown.
    pub fn local_view(&self) -> bool {
        self.task == Task::Serve && self.infer.engine == Engine::LlamaCpp
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
    /// The scenario of the training task on screen (fine-tune or full training; full training while
    /// serving, for callers that need one).
    pub fn training(&self) -> &Scenario {
        match self.task {
            Task::Finetune => &self.finetune,
            Task::Train | Task::Serve => &self.train,
        }
    }
    /// Mutable [`PageScenario::training`].
    pub fn training_mut(&mut self) -> &mut Scenario {
        match self.task {
            Task::Finetune => &mut self.finetune,
            Task::Train | Task::Serve => &mut self.train,
        }
    }
    /// The training scenario as computed (that of the task on screen).
    pub fn train_scenario(&self) -> Scenario {
        let mut s = self.training().clone();
        s.mode = Mode::Train;
        s
    }
    /// The GPU count of the task on screen: data-parallel ranks for training, the tensor-parallel
    /// size for vLLM.
    pub fn gpus(&self) -> u64 {
        match self.task {
            // transformers spreads the layers over the GPUs (`device_map="auto"`)
            Task::Serve if self.infer.engine == Engine::Transformers => self.infer.gpus.max(1),
            Task::Serve => self
                .infer
                .serving
                .tensor_parallel_size
                .max(1)
                .saturating_mul(self.infer.serving.pipeline_parallel_size.max(1)),
            _ => self.training().gpus,
        }
    }
    /// Sets [`PageScenario::gpus`].
    pub fn set_gpus(&mut self, n: u64) {
        match self.task {
            Task::Serve if self.infer.engine == Engine::Transformers => self.infer.gpus = n,
            Task::Serve => self.infer.serving.tensor_parallel_size = n,
            _ => self.training_mut().gpus = n,
        }
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
    for t in [&p.train, &p.finetune] {
        let mut s = t.clone();
        s.mode = Mode::Train;
        s.validate().map_err(|e| e.to_string())?;
    }
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

/// Whether the core estimates the page's task for this model (the error names the field when not).
/// The llama.cpp view is checked by [`validate_llama`].
pub fn estimate_ok(p: &PageScenario, spec: &vram_core::ModelSpec) -> Result<(), String> {
    let o = vram_core::report::DeviceOverheads::default();
    if p.task.trains() {
        vram_core::train::training_totals(spec, &p.train_scenario(), &o)
            .map(|_| ())
            .map_err(|e| e.to_string())
    } else if p.local_view() {
        Ok(())
    } else {
        vram_core::infer::inference_totals(spec, &p.infer_scenario(), &o)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}
