//! Parallel-layout flags of `vram estimate --train` and `vram plan` (docs/cli.md §Layouts): the
//! `layout` part of the scenario.

use clap::{Args, ValueEnum};
use vram_core::layout::{Framework, Recompute, TransformerImpl};
use vram_core::Scenario;

/// `--framework`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FrameworkArg {
    /// HF transformers Trainer (accelerate / DeepSpeed / FSDP2): data parallel.
    Hf,
    /// Megatron-core (Megatron-LM, NeMo, Megatron-Bridge).
    Megatron,
    /// torchtitan (FSDP2 + DTensor TP + torch pipelining).
    Torchtitan,
}

/// `--recompute`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RecomputeArg {
    /// Keep every activation.
    None,
    /// Megatron selective (the attention core).
    Selective,
    /// Every layer keeps only its input.
    Full,
}

/// `--transformer-impl`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TransformerImplArg {
    /// Transformer Engine layers (Megatron-core's default).
    TransformerEngine,
    /// The local (legacy) layers.
    Local,
}

/// Layout flags (`--tp` is shared with vLLM serving: with `--framework megatron|torchtitan` it
/// is also the training layout's TP).
#[derive(Args, Debug, Default, Clone)]
pub struct LayoutArgs {
    /// Training framework whose allocations are modelled.
    #[arg(long, value_enum)]
    pub framework: Option<FrameworkArg>,
    /// Nodes (GPUs = nodes × --gpus-per-node).
    #[arg(long)]
    pub nodes: Option<u64>,
    /// GPUs per node.
    #[arg(long)]
    pub gpus_per_node: Option<u64>,
    /// Pipeline-parallel size.
    #[arg(long)]
    pub pp: Option<u64>,
    /// Virtual pipeline stages per rank (interleaved 1F1B).
    #[arg(long)]
    pub vpp: Option<u64>,
    /// Layers of the first pipeline stage (uneven split).
    #[arg(long)]
    pub first_stage_layers: Option<u64>,
    /// Layers of the last pipeline stage (uneven split).
    #[arg(long)]
    pub last_stage_layers: Option<u64>,
    /// Context-parallel size.
    #[arg(long)]
    pub cp: Option<u64>,
    /// Expert-parallel size (MoE).
    #[arg(long)]
    pub ep: Option<u64>,
    /// Expert-tensor-parallel size (MoE; default = --tp).
    #[arg(long)]
    pub etp: Option<u64>,
    /// Megatron sequence parallelism (needs --tp > 1).
    #[arg(long)]
    pub sequence_parallel: bool,
    /// FSDP2 `fully_shard` over the data-parallel ranks.
    #[arg(long)]
    pub fsdp2: bool,
    /// FSDP2 `reshard_after_forward=False` (keep gathered blocks until backward).
    #[arg(long)]
    pub no_reshard_after_forward: bool,
    /// HSDP: data-parallel replicas, each sharding over dp / N ranks (with --fsdp2).
    #[arg(long)]
    pub hsdp_replicas: Option<u64>,
    /// Megatron's distributed optimizer.
    #[arg(long)]
    pub distributed_optimizer: bool,
    /// Activation recomputation.
    #[arg(long, value_enum)]
    pub recompute: Option<RecomputeArg>,
    /// Micro-batch size per GPU (the same as --batch in training).
    #[arg(long)]
    pub micro_batch: Option<u64>,
    /// Global batch (sequences per optimizer step over all data-parallel ranks): sets the
    /// micro-batches per step.
    #[arg(long)]
    pub global_batch: Option<u64>,
    /// Megatron's layer implementation (`--transformer-impl`).
    #[arg(long, value_enum)]
    pub transformer_impl: Option<TransformerImplArg>,
    /// Megatron's default 0.1 hidden / attention dropout is on (pretrain_gpt.py without
    /// `--hidden-dropout 0 --attention-dropout 0`).
    #[arg(long)]
    pub megatron_dropout: bool,
}

impl LayoutArgs {
    /// Applies the flags given to `s.layout` (and `s.gpus`, `s.batch`), with `tp` from `--tp`;
    /// `training_only`: no serving estimate shares `--tp`, so it is the training layout's.
    pub fn apply(
        &self,
        s: &mut Scenario,
        tp: Option<u64>,
        training_only: bool,
    ) -> anyhow::Result<()> {
        let l = &mut s.layout;
        if let Some(f) = self.framework {
            l.framework = match f {
                FrameworkArg::Hf => Framework::Hf,
                FrameworkArg::Megatron => Framework::Megatron,
                FrameworkArg::Torchtitan => Framework::Torchtitan,
            };
        }
        if let Some(n) = self.nodes {
            l.nodes = n;
        }
        if let Some(per) = self.gpus_per_node {
            let total = per.saturating_mul(l.nodes);
            if s.gpus != 1 && s.gpus != total {
                anyhow::bail!(
                    "--gpus: expected nodes × GPUs per node = {} × {per} = {total}, found {}",
                    l.nodes,
                    s.gpus
                );
            }
            s.gpus = total;
        } else if self.nodes.is_some() && s.gpus == 1 {
            anyhow::bail!("--nodes needs --gpus-per-node (or --gpus for the total)");
        }
        // `--tp` is vLLM's tensor parallelism when a serving estimate shares it, unless a
        // framework is named for training (`--framework hf` is transformers' own `tp_plan`), so
        // `--train --infer --tp 2` keeps meaning vLLM.
        if let Some(t) =
            tp.filter(|_| training_only || l.framework != Framework::Hf || self.framework.is_some())
        {
            l.tp = t;
        }
        let set = |dst: &mut u64, v: Option<u64>| {
            if let Some(v) = v {
                *dst = v;
            }
        };
        set(&mut l.pp, self.pp);
        set(&mut l.vpp, self.vpp);
        set(&mut l.first_stage_layers, self.first_stage_layers);
        set(&mut l.last_stage_layers, self.last_stage_layers);
        set(&mut l.cp, self.cp);
        set(&mut l.ep, self.ep);
        set(&mut l.etp, self.etp);
        set(&mut l.hsdp_replicas, self.hsdp_replicas);
        set(&mut l.global_batch, self.global_batch);
        l.sequence_parallel |= self.sequence_parallel;
        l.fsdp2 |= self.fsdp2 || self.hsdp_replicas.is_some_and(|r| r > 1);
        if self.no_reshard_after_forward {
            l.reshard_after_forward = false;
        }
        l.distributed_optimizer |= self.distributed_optimizer;
        if let Some(i) = self.transformer_impl {
            l.transformer_impl = match i {
                TransformerImplArg::TransformerEngine => TransformerImpl::TransformerEngine,
                TransformerImplArg::Local => TransformerImpl::Local,
            };
        }
        l.dropout |= self.megatron_dropout;
        if let Some(r) = self.recompute {
            l.recompute = match r {
                RecomputeArg::None => Recompute::None,
                RecomputeArg::Selective => Recompute::Selective,
                RecomputeArg::Full => Recompute::Full,
            };
            // HF's gradient checkpointing is the full recompute of each layer.
            if r == RecomputeArg::Full && l.framework == Framework::Hf {
                s.grad_checkpointing = true;
            }
        }
        if let Some(m) = self.micro_batch {
            s.batch = m;
        }
        s.validate()?;
        Ok(())
    }
}
