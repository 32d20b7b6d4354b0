//! Launch configs for a layout: what runs the planned (or estimated) training or serving job —
//! Megatron-core arguments with their `torchrun` line, a DeepSpeed JSON, an accelerate FSDP2 YAML,
//! a torchtitan TOML, and `vllm serve` arguments. Pure text from the scenario.
//!
//! Flag names as the projects spell them: Megatron-LM megatron/training/arguments.py
//! (`--tensor-model-parallel-size`, `--pipeline-model-parallel-size`,
//! `--num-virtual-stages-per-pipeline-rank`, `--context-parallel-size`,
//! `--expert-model-parallel-size`, `--expert-tensor-parallel-size`, `--sequence-parallel`,
//! `--use-distributed-optimizer`, `--recompute-granularity`, `--decoder-first-pipeline-num-layers`);
//! DeepSpeed's config keys (`zero_optimization.stage`, `offload_optimizer`,
//! `train_micro_batch_size_per_gpu`, `gradient_accumulation_steps`); accelerate's FSDP2 config
//! (`fsdp_version: 2`, `fsdp_reshard_after_forward`); torchtitan's job config
//! (`[parallelism] data_parallel_shard_degree`, `tensor_parallel_degree`, ...); vLLM's
//! `vllm serve` engine arguments.

use crate::layout::{Framework, Recompute};
use crate::scenario::{Dtype, MixedPrecision, Scenario};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// One launch text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchText {
    /// What it is (`Megatron-LM`, `DeepSpeed config (ds_config.json)`, ...).
    pub title: String,
    /// `sh`, `json`, `yaml` or `toml`.
    pub language: String,
    /// The text.
    pub text: String,
}

/// Name of the DeepSpeed config file the launch line refers to.
pub const DEEPSPEED_CONFIG_FILE: &str = "ds_config.json";

fn text(title: &str, language: &str, text: String) -> LaunchText {
    LaunchText {
        title: title.into(),
        language: language.into(),
        text,
    }
}

/// The 16-bit compute dtype of a training scenario (autocast dtype, else the parameter dtype).
pub fn compute_dtype(s: &Scenario) -> Dtype {
    match s.mixed_precision {
        MixedPrecision::Bf16 => Dtype::Bf16,
        MixedPrecision::Fp16 => Dtype::Fp16,
        MixedPrecision::None => s.dtype,
    }
}

/// The DeepSpeed config of a training scenario.
pub fn deepspeed_config(s: &Scenario) -> serde_json::Value {
    let mut zero = json!({ "stage": s.zero.0 });
    if s.offload_optimizer {
        zero["offload_optimizer"] = json!({ "device": "cpu", "pin_memory": true });
    }
    if s.offload_params {
        zero["offload_param"] = json!({ "device": "cpu", "pin_memory": true });
    }
    let mut cfg = json!({
        "train_micro_batch_size_per_gpu": s.batch,
        "gradient_accumulation_steps": s.grad_accumulation,
        "zero_optimization": zero,
    });
    match compute_dtype(s) {
        Dtype::Bf16 => cfg["bf16"] = json!({ "enabled": true }),
        Dtype::Fp16 => cfg["fp16"] = json!({ "enabled": true }),
        Dtype::Fp32 => {}
    }
    cfg
}

/// The `torchrun` rendezvous part for the layout's nodes and GPUs.
fn torchrun(s: &Scenario) -> String {
    let nodes = s.layout.nodes.max(1);
    let per_node = (s.gpus.max(1) / nodes).max(1);
    if nodes > 1 {
        format!(
            "torchrun --nnodes {nodes} --nproc-per-node {per_node} --node-rank $NODE_RANK --rdzv-backend c10d --rdzv-endpoint $MASTER_ADDR:29500"
        )
    } else {
        format!("torchrun --nproc-per-node {per_node}")
    }
}

/// Megatron-LM's `pretrain_gpt.py` arguments for the layout.
pub fn megatron_args(s: &Scenario) -> String {
    let l = &s.layout;
    let mut args = vec![
        format!("--tensor-model-parallel-size {}", l.tp),
        format!("--pipeline-model-parallel-size {}", l.pp),
    ];
    if l.vpp > 1 {
        args.push(format!("--num-virtual-stages-per-pipeline-rank {}", l.vpp));
    }
    if l.first_stage_layers > 0 {
        args.push(format!(
            "--decoder-first-pipeline-num-layers {}",
            l.first_stage_layers
        ));
    }
    if l.last_stage_layers > 0 {
        args.push(format!(
            "--decoder-last-pipeline-num-layers {}",
            l.last_stage_layers
        ));
    }
    if l.cp > 1 {
        args.push(format!("--context-parallel-size {}", l.cp));
    }
    if l.ep > 1 {
        args.push(format!("--expert-model-parallel-size {}", l.ep));
        args.push(format!("--expert-tensor-parallel-size {}", l.etp()));
    }
    if l.sequence_parallel {
        args.push("--sequence-parallel".into());
    }
    if l.distributed_optimizer {
        args.push("--use-distributed-optimizer".into());
    }
    let gpus = s.gpus.max(1);
    let global = if l.global_batch > 0 {
        l.global_batch
    } else {
        s.batch
            .saturating_mul(l.dp(gpus))
            .saturating_mul(s.grad_accumulation)
    };
    args.push(format!("--micro-batch-size {}", s.batch));
    args.push(format!("--global-batch-size {global}"));
    args.push(format!("--seq-length {}", s.seq_len));
    match compute_dtype(s) {
        Dtype::Bf16 => args.push("--bf16".into()),
        Dtype::Fp16 => args.push("--fp16".into()),
        Dtype::Fp32 => {}
    }
    match (l.recompute, s.grad_checkpointing) {
        (Recompute::Full, _) | (_, true) => args.push(
            "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1"
                .into(),
        ),
        (Recompute::Selective, _) => args.push("--recompute-granularity selective".into()),
        (Recompute::None, _) => {}
    }
    args.join(" \\\n    ")
}

/// The accelerate config (YAML) of an FSDP2 run.
pub fn accelerate_fsdp2_yaml(s: &Scenario) -> String {
    let l = &s.layout;
    let nodes = l.nodes.max(1);
    let mixed = match compute_dtype(s) {
        Dtype::Bf16 => "bf16",
        Dtype::Fp16 => "fp16",
        Dtype::Fp32 => "no",
    };
    let mut yaml = format!(
        "compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nmixed_precision: {mixed}\nnum_machines: {nodes}\nnum_processes: {}\nfsdp_config:\n  fsdp_version: 2\n  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n  fsdp_reshard_after_forward: {}\n  fsdp_state_dict_type: SHARDED_STATE_DICT\n  fsdp_activation_checkpointing: {}\n  fsdp_cpu_ram_efficient_loading: true\n",
        s.gpus.max(1),
        l.reshard_after_forward,
        s.grad_checkpointing || l.recompute == Recompute::Full,
    );
    if l.tp > 1 {
        // accelerate's ParallelismConfig (a 2-D mesh: FSDP2 shards × transformers' TP)
        yaml.push_str(&format!(
            "parallelism_config:\n  parallelism_config_dp_shard_size: {}\n  parallelism_config_tp_size: {}\n",
            l.dp(s.gpus.max(1)),
            l.tp
        ));
    }
    yaml
}

/// torchtitan's `[parallelism]` / `[training]` / `[activation_checkpoint]` job config.
pub fn torchtitan_toml(s: &Scenario) -> String {
    let l = &s.layout;
    let gpus = s.gpus.max(1);
    let dp = l.dp(gpus);
    let replicate = l.hsdp_replicas.max(1);
    let ac = match (l.recompute, s.grad_checkpointing) {
        (Recompute::Full, _) | (_, true) => "full",
        (Recompute::Selective, _) => "selective",
        (Recompute::None, _) => "none",
    };
    format!(
        "[training]\nlocal_batch_size = {}\nseq_len = {}\nmixed_precision_param = \"bfloat16\"\nmixed_precision_reduce = \"float32\"\n\n[parallelism]\ndata_parallel_replicate_degree = {replicate}\ndata_parallel_shard_degree = {}\nfsdp_reshard_after_forward = \"{}\"\ntensor_parallel_degree = {}\npipeline_parallel_degree = {}\ncontext_parallel_degree = {}\nexpert_parallel_degree = {}\n\n[activation_checkpoint]\nmode = \"{ac}\"\n",
        s.batch,
        s.seq_len,
        dp / replicate,
        if l.reshard_after_forward {
            "default"
        } else {
            "never"
        },
        l.tp,
        l.pp,
        l.cp,
        l.ep,
    )
}

/// The launch texts of a training scenario's layout.
pub fn training_launch(s: &Scenario, model_id: &str) -> Vec<LaunchText> {
    let l = &s.layout;
    match l.framework {
        Framework::Megatron => vec![text(
            "Megatron-LM",
            "sh",
            format!(
                "{} pretrain_gpt.py \\\n    {} \\\n    # plus the model's architecture flags for {model_id}\n",
                torchrun(s),
                megatron_args(s)
            ),
        )],
        Framework::Torchtitan => vec![
            text("torchtitan job config (train.toml)", "toml", torchtitan_toml(s)),
            text(
                "Launch",
                "sh",
                format!(
                    "{} -m torchtitan.train --job.config_file train.toml\n",
                    torchrun(s)
                ),
            ),
        ],
        Framework::Hf if l.fsdp2 => vec![
            text(
                "accelerate config (fsdp2.yaml)",
                "yaml",
                accelerate_fsdp2_yaml(s),
            ),
            text(
                "Launch",
                "sh",
                "accelerate launch --config_file fsdp2.yaml train.py\n".into(),
            ),
        ],
        Framework::Hf if l.tp > 1 => vec![
            text(
                "transformers tensor parallelism (train.py)",
                "python",
                format!(
                    "from transformers import AutoModelForCausalLM, DistributedConfig\n\n# every rank loads its shards of the model's tp_plan\nmodel = AutoModelForCausalLM.from_pretrained(\n    {},\n    distributed_config=DistributedConfig(tp_size={}),\n)\n",
                    serde_json::to_string(model_id).unwrap_or_default(),
                    l.tp
                ),
            ),
            text("Launch", "sh", format!("{} train.py\n", torchrun(s))),
        ],
        Framework::Hf => {
            let mut json =
                serde_json::to_string_pretty(&deepspeed_config(s)).unwrap_or_default();
            json.push('\n');
            vec![
                text(
                    &format!("DeepSpeed config ({DEEPSPEED_CONFIG_FILE})"),
                    "json",
                    json,
                ),
                text(
                    "Launch",
                    "sh",
                    format!(
                        "{} train.py --deepspeed {DEEPSPEED_CONFIG_FILE}\n",
                        torchrun(s)
                    ),
                ),
            ]
        }
    }
}

/// `vllm serve` for a serving scenario.
pub fn vllm_serve(s: &Scenario, model_id: &str) -> LaunchText {
    let mut line = format!(
        "vllm serve {model_id} --tensor-parallel-size {}",
        s.serving.tensor_parallel_size.max(1)
    );
    if s.serving.pipeline_parallel_size > 1 {
        line.push_str(&format!(
            " --pipeline-parallel-size {}",
            s.serving.pipeline_parallel_size
        ));
    }
    if s.serving.data_parallel_size > 1 {
        line.push_str(&format!(
            " --data-parallel-size {}",
            s.serving.data_parallel_size
        ));
    }
    if s.serving.enable_expert_parallel {
        line.push_str(" --enable-expert-parallel");
    }
    if s.serving.max_model_len > 0 {
        line.push_str(&format!(" --max-model-len {}", s.serving.max_model_len));
    }
    if s.serving.gpu_memory_utilization > 0.0 {
        line.push_str(&format!(
            " --gpu-memory-utilization {}",
            s.serving.gpu_memory_utilization
        ));
    }
    if let Some(kv) = &s.kv_dtype {
        if kv.starts_with("fp8") {
            line.push_str(&format!(" --kv-cache-dtype {kv}"));
        }
    }
    line.push('\n');
    text("vLLM", "sh", line)
}
