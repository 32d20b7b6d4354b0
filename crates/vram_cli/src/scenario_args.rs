//! The scenario flags shared by `vram estimate` and `vram measure`, turned into `vram_core::Scenario`.
//! Only flags the user gives override the mode's defaults (training: fp32 weights with bf16 autocast,
//! AdamW, seq 2048; inference: bf16, seq 4096).

use clap::{Args, ValueEnum};
use vram_core::scenario::{
    AttentionImpl, BaseQuant, Dtype, Engine, Lora, LoraTargets, MixedPrecision, Mode, Optimizer,
    ZeroStage,
};
use vram_core::Scenario;

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum DtypeArg {
    Fp32,
    Bf16,
    Fp16,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum MixedArg {
    None,
    Bf16,
    Fp16,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum OptimizerArg {
    Sgd,
    SgdMomentum,
    Adamw,
    #[value(name = "adamw-8bit")]
    Adamw8bit,
    Adafactor,
    Lion,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum AttentionArg {
    Eager,
    Sdpa,
    Flash,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum BaseQuantArg {
    None,
    Int8,
    Nf4,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum EngineArg {
    Transformers,
    Vllm,
    /// llama.cpp (llama-server / llama-cli / ollama).
    #[value(name = "llama.cpp", alias = "llama-cpp", alias = "llamacpp")]
    LlamaCpp,
}

/// Scenario flags (see docs/cli.md).
#[derive(Args, Debug, Default, Clone)]
pub struct ScenarioArgs {
    /// Parameter dtype (with --mixed-precision, the fp32 master weights).
    #[arg(long, value_enum)]
    pub dtype: Option<DtypeArg>,
    /// Autocast over fp32 master weights. Default for training: bf16, unless --dtype is given
    /// (then none: `--dtype fp32` alone is pure fp32); with --lora-r and neither flag, a bf16 base
    /// under bf16 autocast (the peft / TRL recipes); for inference: none.
    #[arg(long, value_enum)]
    pub mixed_precision: Option<MixedArg>,
    /// Optimizer.
    #[arg(long, value_enum)]
    pub optimizer: Option<OptimizerArg>,
    /// Micro-batch size (training) or concurrent sequences (inference).
    #[arg(long)]
    pub batch: Option<u64>,
    /// Sequence length (training) or context length (inference), in tokens.
    #[arg(long)]
    pub seq: Option<u64>,
    /// HF gradient checkpointing (per layer).
    #[arg(long)]
    pub grad_checkpointing: bool,
    /// Attention implementation.
    #[arg(long, value_enum)]
    pub attention: Option<AttentionArg>,
    /// LoRA rank (enables LoRA).
    #[arg(long)]
    pub lora_r: Option<u64>,
    /// LoRA alpha (default 2 × rank).
    #[arg(long)]
    pub lora_alpha: Option<u64>,
    /// LoRA targets: comma-separated module names (q_proj,v_proj) or all-linear.
    #[arg(long)]
    pub lora_targets: Option<String>,
    /// Quantization of the frozen base under LoRA (nf4 = QLoRA).
    #[arg(long, value_enum)]
    pub lora_base: Option<BaseQuantArg>,
    /// Data-parallel GPUs.
    #[arg(long)]
    pub gpus: Option<u64>,
    /// ZeRO stage (0–3).
    #[arg(long)]
    pub zero: Option<u8>,
    /// Offload optimizer states to CPU (ZeRO-Offload).
    #[arg(long)]
    pub offload_optimizer: bool,
    /// Offload parameters to CPU (ZeRO-3).
    #[arg(long)]
    pub offload_params: bool,
    /// Micro-batches per optimizer step.
    #[arg(long)]
    pub grad_accumulation: Option<u64>,
    /// Inference weight format (bf16, fp16, fp32, fp8, int8, nf4, gptq-4bit, awq-4bit, mxfp4, q4_k_m, ...).
    #[arg(long)]
    pub weights: Option<String>,
    /// KV cache dtype (bf16, fp16, fp8, int8, int4; llama.cpp: the K type f16, q8_0, q4_0, ...).
    #[arg(long)]
    pub kv_dtype: Option<String>,
    /// Positions whose logits are computed when generating (0 = all positions).
    #[arg(long)]
    pub logits_to_keep: Option<u64>,
    /// Inference engine profile.
    #[arg(long, value_enum)]
    pub engine: Option<EngineArg>,
}

impl ScenarioArgs {
    /// The scenario for `mode`: that mode's defaults, overridden by the flags given.
    pub fn to_scenario(&self, mode: Mode) -> anyhow::Result<Scenario> {
        let mut s = match mode {
            Mode::Train => Scenario::default(),
            Mode::Infer => Scenario::inference(),
        };
        if let Some(d) = self.dtype {
            s.dtype = match d {
                DtypeArg::Fp32 => Dtype::Fp32,
                DtypeArg::Bf16 => Dtype::Bf16,
                DtypeArg::Fp16 => Dtype::Fp16,
            };
            // An explicit --dtype without --mixed-precision means training in that dtype alone
            // (pure 16-bit, or pure fp32: `--dtype fp32` reads as "no autocast"; it once kept the
            // default bf16 autocast, and an independent harness running pure fp32 then disagreed
            // with `vram measure` by 16-28 % on GPT-2 — issue 13). Without --dtype the training
            // default stays fp32 master weights under bf16 autocast.
            if self.mixed_precision.is_none() {
                s.mixed_precision = MixedPrecision::None;
            }
        }
        if let Some(m) = self.mixed_precision {
            s.mixed_precision = match m {
                MixedArg::None => MixedPrecision::None,
                MixedArg::Bf16 => MixedPrecision::Bf16,
                MixedArg::Fp16 => MixedPrecision::Fp16,
            };
            if s.mixed_precision != MixedPrecision::None && self.dtype.is_none() {
                s.dtype = Dtype::Fp32;
            }
        }
        if let Some(o) = self.optimizer {
            s.optimizer = match o {
                OptimizerArg::Sgd => Optimizer::Sgd,
                OptimizerArg::SgdMomentum => Optimizer::SgdMomentum,
                OptimizerArg::Adamw => Optimizer::Adamw,
                OptimizerArg::Adamw8bit => Optimizer::Adamw8bit,
                OptimizerArg::Adafactor => Optimizer::Adafactor,
                OptimizerArg::Lion => Optimizer::Lion,
            };
        }
        if let Some(b) = self.batch {
            s.batch = b;
        }
        if let Some(q) = self.seq {
            s.seq_len = q;
        }
        s.grad_checkpointing |= self.grad_checkpointing;
        if let Some(a) = self.attention {
            s.attention = match a {
                AttentionArg::Eager => AttentionImpl::Eager,
                AttentionArg::Sdpa => AttentionImpl::Sdpa,
                AttentionArg::Flash => AttentionImpl::Flash,
            };
        }
        let lora_flags =
            self.lora_alpha.is_some() || self.lora_targets.is_some() || self.lora_base.is_some();
        if lora_flags && self.lora_r.is_none() {
            anyhow::bail!(
                "--lora-alpha, --lora-targets and --lora-base need --lora-r (the LoRA rank)"
            );
        }
        if let Some(r) = self.lora_r {
            let targets = match self.lora_targets.as_deref() {
                None => LoraTargets::Default,
                Some("all-linear") => LoraTargets::AllLinear,
                Some(list) => {
                    let names: Vec<String> = list
                        .split(',')
                        .map(str::trim)
                        .filter(|t| !t.is_empty())
                        .map(String::from)
                        .collect();
                    if names.is_empty() {
                        anyhow::bail!("--lora-targets: expected module names like q_proj,v_proj or all-linear, found {list:?}");
                    }
                    LoraTargets::Modules(names)
                }
            };
            let base_quant = match self.lora_base {
                None | Some(BaseQuantArg::None) => BaseQuant::None,
                Some(BaseQuantArg::Int8) => BaseQuant::Int8,
                Some(BaseQuantArg::Nf4) => BaseQuant::Nf4,
            };
            s.lora = Some(Lora {
                r,
                alpha: self.lora_alpha.unwrap_or(r.saturating_mul(2)),
                targets,
                base_quant,
            });
            // LoRA trains adapters over a frozen base that the peft / TRL recipes load in bf16
            // (`torch_dtype=torch.bfloat16`, QLoRA's unquantized rest too) under bf16 autocast: the
            // default here, not the fp32 master weights of full training.
            if mode == Mode::Train && self.dtype.is_none() && self.mixed_precision.is_none() {
                s.dtype = Dtype::Bf16;
                s.mixed_precision = MixedPrecision::Bf16;
            }
        }
        if let Some(g) = self.gpus {
            s.gpus = g;
        }
        if let Some(z) = self.zero {
            s.zero = ZeroStage(z);
        }
        s.offload_optimizer |= self.offload_optimizer;
        s.offload_params |= self.offload_params;
        if let Some(g) = self.grad_accumulation {
            s.grad_accumulation = g;
        }
        if self.weights.is_some() {
            s.weights.clone_from(&self.weights);
        }
        if self.kv_dtype.is_some() {
            s.kv_dtype.clone_from(&self.kv_dtype);
        }
        if let Some(k) = self.logits_to_keep {
            s.logits_to_keep = k;
        }
        if let Some(e) = self.engine {
            s.engine = match e {
                EngineArg::Transformers => Engine::Transformers,
                EngineArg::Vllm => Engine::Vllm,
                EngineArg::LlamaCpp => Engine::LlamaCpp,
            };
        }
        s.validate()?;
        Ok(s)
    }
}
