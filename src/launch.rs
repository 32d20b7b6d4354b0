//! Launch lines: the commands and configs that run what the page estimated, for the task on screen —
//! `vllm serve` flags, a transformers loading snippet, peft/TRL settings for fine-tuning, and a
//! DeepSpeed config with its launcher for (multi-GPU or ZeRO) training. Pure text from the page
//! scenario; the llama.cpp view has its own lines (`local_view`).

use crate::page_scenario::{PageScenario, Task};
use vram_core::infer::format::{parse_weight_format, WeightFormat};
use vram_core::scenario::{
    AttentionImpl, BaseQuant, Dtype, Engine, LoraTargets, MixedPrecision, Optimizer, ServingInputs,
};
use vram_core::Scenario;

/// One block of launch text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchBlock {
    /// What the block is (`vLLM`, `DeepSpeed config (ds_config.json)`, ...).
    pub title: String,
    /// Its language, for highlighting: `sh`, `json`, `python`, `yaml` or `toml`.
    pub language: &'static str,
    /// The text.
    pub text: String,
}

/// Name of the DeepSpeed config file the launch line refers to.
pub use vram_core::plan::launch::DEEPSPEED_CONFIG_FILE;

/// What the launch lines need to know of the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchModel {
    /// It has attention layers (a mamba model has none, and transformers refuses an
    /// `attn_implementation` for it: the Python lines then leave it out).
    pub attends: bool,
    /// It is an encoder–decoder (t5): loaded with `AutoModelForSeq2SeqLM`, adapted with peft's
    /// `SEQ_2_SEQ_LM` task and trained with `Seq2SeqTrainingArguments` (TRL's `SFTTrainer` trains
    /// causal LMs).
    pub seq2seq: bool,
}

impl LaunchModel {
    /// A decoder-only causal LM.
    pub const CAUSAL_LM: LaunchModel = LaunchModel {
        attends: true,
        seq2seq: false,
    };

    /// The shape of `spec`.
    pub fn of(spec: &vram_core::ModelSpec) -> LaunchModel {
        LaunchModel {
            attends: spec.derived().has_attention,
            seq2seq: spec.kind == vram_core::spec::ModelKind::EncoderDecoder,
        }
    }

    /// The transformers auto class that loads it.
    fn auto_class(self) -> &'static str {
        if self.seq2seq {
            "AutoModelForSeq2SeqLM"
        } else {
            "AutoModelForCausalLM"
        }
    }
}

/// The launch blocks for the task on screen, with `model_id` as given (`meta-llama/Llama-3.1-8B`):
/// serve with vLLM → a `vllm serve` command; serve with transformers → a Python loading snippet;
/// serve with llama.cpp → nothing (the local view has its own lines); fine-tune → peft `LoraConfig`,
/// `BitsAndBytesConfig` for a quantized base and TRL `SFTConfig`, plus a DeepSpeed config and a
/// `torchrun` line with ZeRO or more than one GPU; train → `TrainingArguments`, a DeepSpeed config
/// and a `torchrun` line. `model`: what the lines need to know of the model's shape.
pub fn launch_lines(model_id: &str, page: &PageScenario, model: LaunchModel) -> Vec<LaunchBlock> {
    match page.task {
        Task::Serve => match page.infer.engine {
            Engine::Vllm => vec![vllm_block(model_id, &page.infer)],
            Engine::Transformers => vec![transformers_block(model_id, &page.infer, model)],
            Engine::LlamaCpp => Vec::new(),
        },
        Task::Finetune | Task::Train => {
            let s = page.training();
            if s.layout.is_model_parallel() {
                // Megatron-core, torchtitan and FSDP2 layouts: the core's launch configs (the
                // same text `vram plan` prints); HF FSDP2 keeps the trainer's Python block.
                let mut out = Vec::new();
                let hf = s.layout.framework == vram_core::scenario::Framework::Hf;
                if hf {
                    out.push(training_block(model_id, s, page.task, false, model));
                }
                out.extend(
                    vram_core::plan::launch::training_launch(s, model_id)
                        .into_iter()
                        // the trainer's block above already loads an HF model
                        .filter(|l| !(hf && l.language == "python"))
                        .map(|l| LaunchBlock {
                            title: l.title,
                            language: match l.language.as_str() {
                                "json" => "json",
                                "yaml" => "yaml",
                                "toml" => "toml",
                                "python" => "python",
                                _ => "sh",
                            },
                            text: l.text,
                        }),
                );
                return out;
            }
            let distributed = page.task == Task::Train || s.zero.0 > 0 || s.gpus > 1;
            let mut out = vec![training_block(model_id, s, page.task, distributed, model)];
            if distributed {
                out.push(deepspeed_block(s));
                out.push(torchrun_block(s));
            }
            out
        }
    }
}

/// A shell word: bare when it holds only safe characters, single-quoted otherwise.
fn sh_word(s: &str) -> String {
    let safe = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "._/:@+=,-".contains(c));
    if safe {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// A Python string literal (a JSON string is one).
fn py_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// `torch.<dtype>` for a dtype.
fn torch_dtype(d: Dtype) -> &'static str {
    match d {
        Dtype::Fp32 => "torch.float32",
        Dtype::Bf16 => "torch.bfloat16",
        Dtype::Fp16 => "torch.float16",
    }
}

/// The weight format of an inference scenario when it names one that parses.
fn weight_format(s: &Scenario) -> Option<WeightFormat> {
    s.weights
        .as_deref()
        .and_then(|w| parse_weight_format(w).ok())
}

/// `vllm serve MODEL --tensor-parallel-size N --max-model-len CTX --gpu-memory-utilization U …`.
fn vllm_block(model_id: &str, s: &Scenario) -> LaunchBlock {
    let v = &s.serving;
    let d = ServingInputs::default();
    let mut flags: Vec<String> = vec![format!(
        "--tensor-parallel-size {}",
        v.tensor_parallel_size.max(1)
    )];
    if v.pipeline_parallel_size > 1 {
        flags.push(format!(
            "--pipeline-parallel-size {}",
            v.pipeline_parallel_size
        ));
    }
    if v.max_model_len > 0 {
        flags.push(format!("--max-model-len {}", v.max_model_len));
    }
    if v.gpu_memory_utilization > 0.0 {
        flags.push(format!(
            "--gpu-memory-utilization {}",
            v.gpu_memory_utilization
        ));
    }
    let format = weight_format(s);
    let dtype = match &format {
        Some(WeightFormat::Float { dtype }) => *dtype,
        _ => s.dtype,
    };
    match dtype {
        Dtype::Bf16 => {}
        Dtype::Fp16 => flags.push("--dtype float16".into()),
        Dtype::Fp32 => flags.push("--dtype float32".into()),
    }
    let quantization = match &format {
        Some(WeightFormat::Fp8 { .. }) => Some("fp8"),
        Some(WeightFormat::Awq { .. }) => Some("awq"),
        Some(WeightFormat::Gptq { .. }) => Some("gptq"),
        Some(WeightFormat::Bnb4 { .. } | WeightFormat::BnbInt8) => Some("bitsandbytes"),
        _ => None,
    };
    if let Some(q) = quantization {
        flags.push(format!("--quantization {q}"));
    }
    if let Some(kv) = s.kv_dtype.as_deref() {
        let kv = kv.trim().to_ascii_lowercase();
        if matches!(kv.as_str(), "fp8" | "fp8_e4m3" | "fp8_e5m2") {
            flags.push(format!("--kv-cache-dtype {kv}"));
        }
    }
    if v.max_num_seqs != d.max_num_seqs {
        flags.push(format!("--max-num-seqs {}", v.max_num_seqs));
    }
    if v.max_num_batched_tokens != d.max_num_batched_tokens {
        flags.push(format!(
            "--max-num-batched-tokens {}",
            v.max_num_batched_tokens
        ));
    }
    if v.block_size > 0 {
        flags.push(format!("--block-size {}", v.block_size));
    }
    if v.enforce_eager {
        flags.push("--enforce-eager".into());
    }
    let mut text = format!("vllm serve {}", sh_word(model_id));
    for f in flags {
        text.push_str(" \\\n  ");
        text.push_str(&f);
    }
    text.push('\n');
    LaunchBlock {
        title: "vLLM".into(),
        language: "sh",
        text,
    }
}

/// The `attn_implementation=…` argument line of `from_pretrained`, or nothing for a model without
/// attention layers.
fn attn_arg(a: AttentionImpl, attends: bool) -> String {
    let name = match a {
        AttentionImpl::Eager => "eager",
        AttentionImpl::Sdpa => "sdpa",
        AttentionImpl::Flash => "flash_attention_2",
    };
    if attends {
        format!("    attn_implementation={},\n", py_str(name))
    } else {
        String::new()
    }
}

/// A `BitsAndBytesConfig(...)` for a bitsandbytes format, indented for a call argument.
fn bnb_config(nf4: Option<(bool, bool)>, compute: Dtype, indent: &str) -> String {
    match nf4 {
        None => "BitsAndBytesConfig(load_in_8bit=True)".into(),
        Some((nf4, double_quant)) => {
            let inner = format!("{indent}    ");
            format!(
                "BitsAndBytesConfig(\n{inner}load_in_4bit=True,\n{inner}bnb_4bit_quant_type={},\n{inner}bnb_4bit_compute_dtype={},\n{inner}bnb_4bit_use_double_quant={},\n{indent})",
                py_str(if nf4 { "nf4" } else { "fp4" }),
                torch_dtype(compute),
                if double_quant { "True" } else { "False" },
            )
        }
    }
}

/// The transformers loading snippet for serving.
fn transformers_block(model_id: &str, s: &Scenario, model: LaunchModel) -> LaunchBlock {
    let auto = model.auto_class();
    let format = weight_format(s);
    let dtype = match &format {
        Some(WeightFormat::Float { dtype }) => *dtype,
        _ => s.dtype,
    };
    let quant = match &format {
        Some(WeightFormat::Bnb4 { nf4, double_quant }) => {
            Some(bnb_config(Some((*nf4, *double_quant)), dtype, "    "))
        }
        Some(WeightFormat::BnbInt8) => Some(bnb_config(None, dtype, "    ")),
        _ => None,
    };
    let mut text = String::from("import torch\n");
    text.push_str(&if quant.is_some() {
        format!("from transformers import {auto}, BitsAndBytesConfig\n\n")
    } else {
        format!("from transformers import {auto}\n\n")
    });
    if let Some(f) = format.as_ref().filter(|f| {
        f.is_quantized() && !matches!(f, WeightFormat::Bnb4 { .. } | WeightFormat::BnbInt8)
    }) {
        text.push_str(&format!(
            "# {} weights: load a checkpoint stored in that format (its config.json has the quantization_config)\n",
            f.name()
        ));
    }
    text.push_str(&format!(
        "model = {auto}.from_pretrained(\n    {},\n    torch_dtype={},\n{}",
        py_str(model_id),
        torch_dtype(dtype),
        attn_arg(s.attention, model.attends),
    ));
    if let Some(q) = quant {
        text.push_str(&format!("    quantization_config={q},\n"));
    }
    text.push_str("    device_map=\"auto\",\n)\n");
    if let Some(kv) = s.kv_dtype.as_deref() {
        let bits = match kv.trim().to_ascii_lowercase().as_str() {
            "int8" => Some(8),
            "int4" => Some(4),
            _ => None,
        };
        if let Some(bits) = bits {
            text.push_str(&format!(
                "# KV cache in int{bits} (QuantizedCache):\n# model.generate(..., cache_implementation=\"quantized\", cache_config={{\"backend\": \"quanto\", \"nbits\": {bits}}})\n"
            ));
        }
    }
    LaunchBlock {
        title: "transformers".into(),
        language: "python",
        text,
    }
}

/// HF `optim` name (and `optim_args`) of an optimizer.
fn optim(o: Optimizer) -> (&'static str, Option<&'static str>) {
    match o {
        Optimizer::Sgd => ("sgd", None),
        Optimizer::SgdMomentum => ("sgd", Some("momentum=0.9")),
        Optimizer::Adamw => ("adamw_torch", None),
        Optimizer::Adamw8bit => ("adamw_bnb_8bit", None),
        Optimizer::Adafactor => ("adafactor", None),
        Optimizer::Lion => ("lion_32bit", None),
    }
}

use vram_core::plan::launch::compute_dtype;

/// The Python block of a training task: model loading, LoRA (fine-tune) and the trainer's arguments
/// (`SFTConfig` for fine-tuning, `TrainingArguments` for full training; `Seq2SeqTrainingArguments`
/// for an encoder–decoder either way).
fn training_block(
    model_id: &str,
    s: &Scenario,
    task: Task,
    deepspeed: bool,
    model: LaunchModel,
) -> LaunchBlock {
    let auto = model.auto_class();
    let args_class = if model.seq2seq {
        "Seq2SeqTrainingArguments"
    } else if task == Task::Finetune {
        "SFTConfig"
    } else {
        "TrainingArguments"
    };
    let lora = s.lora.as_ref();
    let base_quant = lora.map_or(BaseQuant::None, |l| l.base_quant);
    let compute = compute_dtype(s);
    let finetune = task == Task::Finetune;
    let mut text = String::from("import torch\n");
    if lora.is_some() {
        text.push_str("from peft import LoraConfig\n");
    }
    let mut imports = vec![auto];
    if base_quant != BaseQuant::None {
        imports.push("BitsAndBytesConfig");
    }
    let tensor_parallel = s.layout.tp > 1;
    if tensor_parallel {
        imports.push("DistributedConfig");
    }
    if args_class != "SFTConfig" {
        imports.push(args_class);
    }
    text.push_str(&format!(
        "from transformers import {}\n",
        imports.join(", ")
    ));
    if args_class == "SFTConfig" {
        text.push_str("from trl import SFTConfig\n");
    }
    text.push('\n');
    match base_quant {
        BaseQuant::None => {}
        BaseQuant::Nf4 => text.push_str(&format!(
            "bnb_config = {}\n",
            bnb_config(
                Some((true, vram_core::train::persistent::NF4_DOUBLE_QUANT)),
                compute,
                ""
            )
        )),
        BaseQuant::Int8 => {
            text.push_str(&format!("bnb_config = {}\n", bnb_config(None, compute, "")))
        }
    }
    text.push_str(&format!(
        "model = {auto}.from_pretrained(\n    {},\n    torch_dtype={},\n{}",
        py_str(model_id),
        torch_dtype(s.dtype),
        attn_arg(s.attention, model.attends),
    ));
    if base_quant != BaseQuant::None {
        text.push_str("    quantization_config=bnb_config,\n");
    }
    if tensor_parallel {
        // transformers' own tensor parallelism: each torchrun rank loads its shards
        text.push_str(&format!(
            "    distributed_config=DistributedConfig(tp_size={}),\n",
            s.layout.tp
        ));
    }
    text.push_str(")\n");
    if let Some(l) = lora {
        let targets = match &l.targets {
            LoraTargets::Default => None,
            LoraTargets::AllLinear => Some(py_str("all-linear")),
            LoraTargets::Modules(m) => Some(format!(
                "[{}]",
                m.iter().map(|x| py_str(x)).collect::<Vec<_>>().join(", ")
            )),
        };
        text.push_str(&format!(
            "peft_config = LoraConfig(\n    r={},\n    lora_alpha={},\n",
            l.r, l.alpha
        ));
        if let Some(t) = targets {
            text.push_str(&format!("    target_modules={t},\n"));
        }
        text.push_str(if model.seq2seq {
            "    task_type=\"SEQ_2_SEQ_LM\",\n)\n"
        } else {
            "    task_type=\"CAUSAL_LM\",\n)\n"
        });
    }
    let (name, optim_args) = optim(s.optimizer);
    text.push_str(&format!(
        "args = {}(\n    output_dir=\"out\",\n    per_device_train_batch_size={},\n    gradient_accumulation_steps={},\n    gradient_checkpointing={},\n",
        args_class,
        s.batch,
        s.grad_accumulation,
        if s.grad_checkpointing { "True" } else { "False" },
    ));
    match s.mixed_precision {
        MixedPrecision::Bf16 => text.push_str("    bf16=True,\n"),
        MixedPrecision::Fp16 => text.push_str("    fp16=True,\n"),
        MixedPrecision::None => {}
    }
    text.push_str(&format!("    optim={},\n", py_str(name)));
    if let Some(a) = optim_args {
        text.push_str(&format!("    optim_args={},\n", py_str(a)));
    }
    if args_class == "SFTConfig" {
        text.push_str(&format!("    max_length={},\n", s.seq_len));
    }
    if deepspeed {
        text.push_str(&format!(
            "    deepspeed={},\n",
            py_str(DEEPSPEED_CONFIG_FILE)
        ));
    }
    text.push_str(")\n");
    if model.seq2seq {
        text.push_str(&format!(
            "# inputs and labels of {} tokens each: the estimate runs the encoder and the decoder at {} (tokenize both with max_length={})\n",
            s.seq_len, s.seq_len, s.seq_len
        ));
    } else if !finetune {
        text.push_str(&format!(
            "# sequences of {} tokens (tokenize with max_length={})\n",
            s.seq_len, s.seq_len
        ));
    }
    LaunchBlock {
        title: match (args_class, lora.is_some()) {
            ("SFTConfig", _) => "peft + TRL (SFTConfig)".into(),
            (class, true) => format!("peft + transformers ({class})"),
            (class, false) => format!("transformers ({class})"),
        },
        language: "python",
        text,
    }
}

/// The DeepSpeed config of a training scenario (the core's, shared with `vram plan`).
pub use vram_core::plan::launch::deepspeed_config;

fn deepspeed_block(s: &Scenario) -> LaunchBlock {
    let mut text = serde_json::to_string_pretty(&deepspeed_config(s)).unwrap_or_default();
    text.push('\n');
    LaunchBlock {
        title: format!("DeepSpeed config ({DEEPSPEED_CONFIG_FILE})"),
        language: "json",
        text,
    }
}

fn torchrun_block(s: &Scenario) -> LaunchBlock {
    LaunchBlock {
        title: "Launch".into(),
        language: "sh",
        text: format!(
            "torchrun --nproc_per_node {} train.py --deepspeed {DEEPSPEED_CONFIG_FILE}\n",
            s.gpus.max(1)
        ),
    }
}
