//! The scenario: what the user wants to do with the model (train or serve, dtypes, batch, sequence,
//! optimizer, LoRA, sharding, inference format). One serde type backs the CLI flags, the page and the
//! measurement probe, so the three always describe the same run.

use crate::error::ScenarioError;
pub use crate::layout::{Framework, Layout, Recompute, TransformerImpl};
use serde::{Deserialize, Serialize};

/// Train or serve.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// One training step (forward, backward, optimizer step).
    #[default]
    Train,
    /// Generation: prefill of `seq_len` tokens, then decoding.
    Infer,
}

/// Storage dtype of the model's parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dtype {
    /// 4 bytes.
    Fp32,
    /// 2 bytes.
    #[default]
    Bf16,
    /// 2 bytes.
    Fp16,
}

impl Dtype {
    /// Bytes per element.
    pub fn bytes(self) -> u64 {
        match self {
            Dtype::Fp32 => 4,
            Dtype::Bf16 | Dtype::Fp16 => 2,
        }
    }
    /// The name used by flags and by PyTorch (`torch.bfloat16` ↔ `bf16`).
    pub fn name(self) -> &'static str {
        match self {
            Dtype::Fp32 => "fp32",
            Dtype::Bf16 => "bf16",
            Dtype::Fp16 => "fp16",
        }
    }
}

/// Autocast over fp32 master weights.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MixedPrecision {
    /// No autocast: compute in the parameter dtype.
    #[default]
    None,
    /// `torch.autocast(dtype=torch.bfloat16)` with fp32 parameters.
    Bf16,
    /// `torch.autocast(dtype=torch.float16)` with fp32 parameters (and a grad scaler).
    Fp16,
}

/// Optimizer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Optimizer {
    /// Plain SGD: no state.
    Sgd,
    /// SGD with momentum: one buffer per parameter.
    SgdMomentum,
    /// AdamW: two moments per parameter.
    #[default]
    Adamw,
    /// bitsandbytes 8-bit AdamW: two int8 moments with block-wise fp32 scales.
    Adamw8bit,
    /// Adafactor: factored second moment (row + column vectors for matrices).
    Adafactor,
    /// Lion: one momentum buffer.
    Lion,
}

/// Attention implementation (`attn_implementation` in transformers).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AttentionImpl {
    /// Materialises the b·h·s² scores and probabilities.
    Eager,
    /// `torch.nn.functional.scaled_dot_product_attention`: memory-efficient / flash kernels, O(s) state.
    #[default]
    Sdpa,
    /// flash-attention 2.
    Flash,
}

/// Which modules LoRA adapts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoraTargets {
    /// peft's default for the architecture (`q_proj,v_proj` for llama).
    #[default]
    Default,
    /// Every `nn.Linear` except the output head (peft's `all-linear`).
    AllLinear,
    /// Named leaf modules (`q_proj`, `v_proj`, ...).
    Modules(Vec<String>),
}

/// Quantization of the frozen base model under LoRA (QLoRA).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BaseQuant {
    /// Base weights in the scenario dtype.
    #[default]
    None,
    /// bitsandbytes LLM.int8.
    Int8,
    /// bitsandbytes 4-bit NormalFloat (QLoRA).
    Nf4,
}

/// LoRA adapters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lora {
    /// Rank.
    pub r: u64,
    /// Scaling numerator (`lora_alpha`).
    pub alpha: u64,
    /// Target modules.
    pub targets: LoraTargets,
    /// Quantization of the frozen base (QLoRA with `nf4`).
    #[serde(default)]
    pub base_quant: BaseQuant,
}

/// ZeRO stage (FSDP's `SHARD_GRAD_OP` ≈ 2, `FULL_SHARD` ≈ 3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ZeroStage(pub u8);

/// Inference engine whose memory behaviour is modelled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Engine {
    /// HF transformers `generate` with its dynamic cache.
    #[default]
    Transformers,
    /// vLLM's paged KV cache and start-up profiling.
    Vllm,
    /// llama.cpp (`llama-server`, `llama-cli`, and ollama on top of it): GGUF weights per device,
    /// its KV cells, compute and output buffers, CPU–GPU split ([`LlamaCppInputs`]).
    #[serde(rename = "llama.cpp", alias = "llama-cpp", alias = "llamacpp")]
    LlamaCpp,
}

/// Everything about the run except the model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Scenario {
    /// Train or serve.
    pub mode: Mode,
    /// Parameter storage dtype (fp32 master weights under mixed precision).
    pub dtype: Dtype,
    /// Autocast dtype over fp32 weights.
    pub mixed_precision: MixedPrecision,
    /// Optimizer (training).
    pub optimizer: Optimizer,
    /// Sequences per step (micro-batch) or concurrent sequences.
    pub batch: u64,
    /// Tokens per sequence (training) or prompt/context length (inference).
    pub seq_len: u64,
    /// HF gradient checkpointing (per layer, non-reentrant).
    pub grad_checkpointing: bool,
    /// Attention implementation.
    pub attention: AttentionImpl,
    /// LoRA adapters, if any.
    pub lora: Option<Lora>,
    /// Data-parallel GPUs.
    pub gpus: u64,
    /// ZeRO stage 0–3.
    pub zero: ZeroStage,
    /// ZeRO-Offload of optimizer states to CPU.
    pub offload_optimizer: bool,
    /// ZeRO-3 parameter offload to CPU.
    pub offload_params: bool,
    /// Micro-batches accumulated before each optimizer step.
    pub grad_accumulation: u64,
    /// Weight format for inference (`None`: from the config's `quantization_config`, else `dtype`).
    pub weights: Option<String>,
    /// KV cache dtype (`None`: the compute dtype).
    pub kv_dtype: Option<String>,
    /// Positions whose logits are computed in generation (1 = last only; 0 = all positions).
    pub logits_to_keep: u64,
    /// Inference engine profile.
    pub engine: Engine,
    /// vLLM serving inputs (GPU memory, utilization, parallelism, limits).
    pub serving: ServingInputs,
    /// llama.cpp inputs (ubatch, flash attention, offload, split), used by the llama.cpp engine.
    /// `batch` is its number of parallel sequences (`-np`), `seq_len` its context (`-c`), `kv_dtype`
    /// its K cache type (`-ctk`).
    #[serde(skip_serializing_if = "LlamaCppInputs::is_default")]
    pub llama_cpp: LlamaCppInputs,
    /// Parallel layout of training (TP/PP/CP/EP, FSDP2, framework); the default is plain data
    /// parallel over `gpus`.
    #[serde(skip_serializing_if = "Layout::is_default")]
    pub layout: Layout,
}

/// Flash attention in llama.cpp (`-fa on|off|auto`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlashAttn {
    /// llama.cpp's default: on where the device supports it (CUDA, Metal, Vulkan do) — modelled as on.
    #[default]
    Auto,
    /// `-fa on`.
    On,
    /// `-fa off`: the KQ matrix is materialised and the V cache is stored transposed.
    Off,
}

/// llama.cpp's inputs besides context (`seq_len`), parallel sequences (`batch`) and K type
/// (`kv_dtype`). Defaults are `llama-server`'s.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LlamaCppInputs {
    /// `-ub`, the physical batch (default 512): the compute graph is reserved for this many tokens.
    pub n_ubatch: u64,
    /// `-b`, the logical batch (default 2048; the ubatch is capped by it).
    pub n_batch: u64,
    /// `-ctv` (`None`: the same as the K type).
    pub kv_dtype_v: Option<String>,
    /// `-fa`.
    pub flash_attn: FlashAttn,
    /// `-ngl` (`None`: every layer and the output, llama.cpp's `-ngl 999`).
    pub n_gpu_layers: Option<u64>,
    /// `--n-cpu-moe N`: the expert tensors of the first N layers stay in host memory.
    pub n_cpu_moe: u64,
    /// `--cpu-moe`: every layer's expert tensors stay in host memory.
    pub cpu_moe: bool,
    /// `--swa-full`: sliding-window layers get a full-size cache.
    pub swa_full: bool,
    /// `--no-kv-offload`: the KV cache stays in host memory.
    pub no_kv_offload: bool,
    /// `--tensor-split a,b,...`: proportions of the offloaded layers per GPU (empty: one GPU).
    pub tensor_split: Vec<f64>,
    /// Memory of each GPU the runtime can use (`--gpu-mem-gib`; 0: the page's or CLI's GPU).
    pub gpu_memory_bytes: u64,
    /// `--kv-unified`: all sequences share one cache (llama-server's default with `-np` > 1 since
    /// 2025; otherwise each sequence has `n_ctx / n_seq` cells).
    pub kv_unified: bool,
    /// The ollama profile: `num_ctx` per sequence × `OLLAMA_NUM_PARALLEL` sequences, ollama's
    /// launch settings.
    pub ollama: bool,
}

impl Default for LlamaCppInputs {
    fn default() -> Self {
        LlamaCppInputs {
            n_ubatch: 512,
            n_batch: 2048,
            kv_dtype_v: None,
            flash_attn: FlashAttn::Auto,
            n_gpu_layers: None,
            n_cpu_moe: 0,
            cpu_moe: false,
            swa_full: false,
            no_kv_offload: false,
            tensor_split: Vec::new(),
            gpu_memory_bytes: 0,
            kv_unified: true,
            ollama: false,
        }
    }
}

impl LlamaCppInputs {
    /// Whether every input is llama-server's default (then it is left out of serialised scenarios).
    pub fn is_default(&self) -> bool {
        *self == LlamaCppInputs::default()
    }
}

fn one_u64() -> u64 {
    1
}

fn is_one_u64(v: &u64) -> bool {
    *v == 1
}

/// vLLM serving inputs (`vllm serve` flags and the GPU), used by the vLLM engine profile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServingInputs {
    /// Physical memory of one GPU as CUDA reports it (`torch.cuda.mem_get_info()[1]`): an "80 GB"
    /// H100 reports 79.19 GiB (docs/formulas/inference.md, measured.md J7).
    pub gpu_memory_bytes: u64,
    /// `--gpu-memory-utilization` (0 < u ≤ 1; 0: the version's default, 0.9 up to 0.20, 0.92 in
    /// 0.21–0.33, 1.0 with 0.34's extensible KV cache).
    pub gpu_memory_utilization: f64,
    /// `--tensor-parallel-size`.
    pub tensor_parallel_size: u64,
    /// `--pipeline-parallel-size` (GPUs = TP × PP × DP).
    #[serde(default = "one_u64", skip_serializing_if = "is_one_u64")]
    pub pipeline_parallel_size: u64,
    /// `--data-parallel-size`: engine replicas, each with its own copy of the dense weights and its
    /// own KV cache; an MoE model's experts are split over `TP × DP` GPUs.
    #[serde(default = "one_u64", skip_serializing_if = "is_one_u64")]
    pub data_parallel_size: u64,
    /// `--enable-expert-parallel`: whole experts per GPU (`ceil(E / (TP × DP))` on the fullest)
    /// instead of every expert split over `TP × DP`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub enable_expert_parallel: bool,
    /// `--max-model-len` (0: the config's `max_position_embeddings`).
    pub max_model_len: u64,
    /// `--max-num-seqs` (0: the version's default for the usage and GPU, e.g. 1024 for `vllm
    /// serve` on an H100; `infer::vllm_version`).
    pub max_num_seqs: u64,
    /// `--max-num-batched-tokens` (0: the version's default, e.g. 8192 for `vllm serve` on an H100).
    pub max_num_batched_tokens: u64,
    /// `--block-size` (0: 16, or 64 for MLA models).
    pub block_size: u64,
    /// Override of the non-torch memory per GPU (`None`: the version's measured figure for the TP
    /// size and interconnect).
    pub non_torch_bytes: Option<u64>,
    /// vLLM release whose start-up profile is modelled (`"0.8.5"`, `"0.11"`; empty: the current
    /// release, [`crate::infer::vllm_version::CURRENT`]).
    pub vllm_version: String,
    /// How vLLM is started: `vllm serve` (the OpenAI server) or the offline `LLM()` class; the
    /// default limits differ.
    pub usage: VllmUsage,
    /// How the GPUs of a TP group talk: NVLink (custom all-reduce and NCCL buffers) or PCIe
    /// (custom all-reduce off); `auto` guesses from `gpu_name`.
    pub interconnect: Interconnect,
    /// `--enforce-eager`: no CUDA graphs.
    pub enforce_eager: bool,
    /// The GPU's name as CUDA reports it or a catalog id (`"NVIDIA A100-SXM4-80GB"`, `"a100-80"`;
    /// empty: unknown). vLLM picks smaller default limits on A100s and GPUs under 70 GiB.
    pub gpu_name: String,
}

/// How vLLM is started (`UsageContext`): its default `max_num_seqs` / `max_num_batched_tokens`
/// depend on it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VllmUsage {
    /// `vllm serve` / the OpenAI-compatible API server (`UsageContext.OPENAI_API_SERVER`).
    #[default]
    Serve,
    /// The offline `LLM(...)` class (`UsageContext.LLM_CLASS`).
    Offline,
}

/// The link between the GPUs of a tensor-parallel group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Interconnect {
    /// NVLink for data-centre GPUs, PCIe for consumer and PCIe-only cards, judged by `gpu_name`.
    #[default]
    Auto,
    /// NVLink / NVSwitch: vLLM's custom all-reduce is on.
    Nvlink,
    /// PCIe only: custom all-reduce is off (no full P2P over NVLink).
    Pcie,
}

impl Default for ServingInputs {
    /// One "80 GB" H100 (79.19 GiB), utilization 0.9, TP 1, the current release's `vllm serve`
    /// defaults.
    fn default() -> Self {
        ServingInputs {
            gpu_memory_bytes: 85_029_615_043,
            gpu_memory_utilization: 0.0,
            tensor_parallel_size: 1,
            pipeline_parallel_size: 1,
            data_parallel_size: 1,
            enable_expert_parallel: false,
            max_model_len: 0,
            max_num_seqs: 0,
            max_num_batched_tokens: 0,
            block_size: 0,
            non_torch_bytes: None,
            vllm_version: String::new(),
            usage: VllmUsage::Serve,
            interconnect: Interconnect::Auto,
            enforce_eager: false,
            gpu_name: String::new(),
        }
    }
}

impl Default for Scenario {
    /// Training default of the page and CLI: bf16 mixed precision (fp32 master weights), AdamW,
    /// batch 1, 2048 tokens, SDPA, no checkpointing.
    fn default() -> Self {
        Scenario {
            mode: Mode::Train,
            dtype: Dtype::Fp32,
            mixed_precision: MixedPrecision::Bf16,
            optimizer: Optimizer::Adamw,
            batch: 1,
            seq_len: 2048,
            grad_checkpointing: false,
            attention: AttentionImpl::Sdpa,
            lora: None,
            gpus: 1,
            zero: ZeroStage(0),
            offload_optimizer: false,
            offload_params: false,
            grad_accumulation: 1,
            weights: None,
            kv_dtype: None,
            logits_to_keep: 1,
            engine: Engine::Transformers,
            serving: ServingInputs::default(),
            llama_cpp: LlamaCppInputs::default(),
            layout: Layout::default(),
        }
    }
}

/// Largest batch, sequence length, rank or GPU count accepted (far beyond any real run; keeps all
/// products of scenario values and model sizes inside saturating `u64` arithmetic).
pub const MAX_SCENARIO_VALUE: u64 = 1 << 24;

impl Scenario {
    /// Inference default: bf16 weights, batch 1, a 4096-token context.
    pub fn inference() -> Self {
        Scenario {
            mode: Mode::Infer,
            dtype: Dtype::Bf16,
            mixed_precision: MixedPrecision::None,
            seq_len: 4096,
            ..Scenario::default()
        }
    }

    /// Checks ranges; every message names the field.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        let positive = |field: &str, v: u64| {
            if v == 0 || v > MAX_SCENARIO_VALUE {
                Err(ScenarioError::Invalid {
                    field: field.into(),
                    expected: format!("an integer from 1 to {MAX_SCENARIO_VALUE}"),
                    found: v.to_string(),
                })
            } else {
                Ok(())
            }
        };
        positive("batch", self.batch)?;
        positive("seq_len", self.seq_len)?;
        positive("gpus", self.gpus)?;
        positive("grad_accumulation", self.grad_accumulation)?;
        if self.zero.0 > 3 {
            return Err(ScenarioError::Invalid {
                field: "zero".into(),
                expected: "a ZeRO stage 0, 1, 2 or 3".into(),
                found: self.zero.0.to_string(),
            });
        }
        if let Some(lora) = &self.lora {
            positive("lora.r", lora.r)?;
            positive("lora.alpha", lora.alpha)?;
        }
        if self.offload_params && self.zero.0 < 3 {
            return Err(ScenarioError::Invalid {
                field: "offload_params".into(),
                expected: "ZeRO stage 3 (parameters are only offloaded when partitioned)".into(),
                found: format!("ZeRO stage {}", self.zero.0),
            });
        }
        self.layout.validate(self.gpus, None)?;
        if self.layout.fsdp2 && self.zero.0 > 0 {
            return Err(ScenarioError::Invalid {
                field: "fsdp2".into(),
                expected: "ZeRO stage 0 (FSDP2 does its own sharding; --zero is DeepSpeed's)"
                    .into(),
                found: format!("ZeRO stage {}", self.zero.0),
            });
        }
        if self.logits_to_keep > MAX_SCENARIO_VALUE {
            return Err(ScenarioError::Invalid {
                field: "logits_to_keep".into(),
                expected: format!("0 (all positions) to {MAX_SCENARIO_VALUE}"),
                found: self.logits_to_keep.to_string(),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_round_trips_through_json_with_defaults_for_missing_keys() {
        let s: Scenario =
            serde_json::from_str(r#"{"batch": 4, "optimizer": "sgd-momentum"}"#).unwrap();
        assert_eq!(s.batch, 4);
        assert_eq!(s.optimizer, Optimizer::SgdMomentum);
        assert_eq!(s.seq_len, 2048);
        let back: Scenario = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn zero_batch_is_rejected_by_name() {
        let err = Scenario {
            batch: 0,
            ..Scenario::default()
        }
        .validate()
        .unwrap_err();
        assert!(err.to_string().starts_with("batch:"));
    }

    #[test]
    fn lora_targets_serialise_as_kebab_case() {
        let l = Lora {
            r: 8,
            alpha: 16,
            targets: LoraTargets::Modules(vec!["q_proj".into()]),
            base_quant: BaseQuant::Nf4,
        };
        let json = serde_json::to_string(&l).unwrap();
        assert_eq!(
            json,
            r#"{"r":8,"alpha":16,"targets":{"modules":["q_proj"]},"base_quant":"nf4"}"#
        );
    }
}
