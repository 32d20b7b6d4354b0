//! Words of the parallel-layout fields, the per-rank card and the Plan view, in English and
//! 简体中文.

use crate::i18n::Lang;

/// Label and hint of a layout field (`None` for keys that are not layout fields).
pub fn layout_field(lang: Lang, key: &str) -> Option<(&'static str, &'static str)> {
    let zh = lang == Lang::Zh;
    let (en, cn) = match key {
        "framework" => (
            ("Framework", "Who allocates: HF Trainer (DeepSpeed / FSDP2 data parallel, transformers' own TP), Megatron-core (TP, PP, CP, EP) or torchtitan."),
            ("框架", "由谁分配显存：HF Trainer（DeepSpeed / FSDP2 数据并行，transformers 自带的 TP）、Megatron-core（TP、PP、CP、EP）或 torchtitan。"),
        ),
        "tp" => (
            ("Tensor parallel (TP)", "Splits attention heads and MLP width across GPUs; keep it inside one NVLink node."),
            ("张量并行 (TP)", "把注意力头和 MLP 宽度切到多张 GPU 上；应在同一个 NVLink 节点内。"),
        ),
        "pp" => (
            ("Pipeline parallel (PP)", "Splits the layers into stages; the first stage holds the most micro-batches in flight."),
            ("流水线并行 (PP)", "把层切成若干阶段；第一阶段同时保留的微批最多。"),
        ),
        "cp" => (
            ("Context parallel (CP)", "Splits each sequence across GPUs (ring attention) for long contexts."),
            ("上下文并行 (CP)", "把每条序列切到多张 GPU 上（环形注意力），用于长上下文。"),
        ),
        "ep" => (
            ("Expert parallel (EP)", "Spreads a mixture-of-experts model's experts across GPUs."),
            ("专家并行 (EP)", "把 MoE 模型的专家分散到多张 GPU 上。"),
        ),
        "sequence_parallel" => (
            ("Sequence parallel", "With TP: layer norms and dropout work on 1/TP of the tokens (Megatron --sequence-parallel)."),
            ("序列并行", "配合 TP：LayerNorm 和 dropout 只处理 1/TP 的 token（Megatron --sequence-parallel）。"),
        ),
        "distributed_optimizer" => (
            ("Distributed optimizer", "Megatron's ZeRO-1: fp32 master weights and Adam moments sharded over the data-parallel ranks."),
            ("分布式优化器", "Megatron 的 ZeRO-1：fp32 主权重和 Adam 动量在数据并行 rank 间分片。"),
        ),
        "fsdp2" => (
            ("FSDP2 (fully_shard)", "Shards weights, gradients and optimizer states over the data-parallel GPUs; gathers one block at a time."),
            ("FSDP2 (fully_shard)", "在数据并行 GPU 间分片权重、梯度和优化器状态；每次只聚合一个块。"),
        ),
        "recompute" => (
            ("Activation recomputation", "Full: each layer keeps only its input and recomputes the rest in backward."),
            ("激活重计算", "完全：每层只保留输入，反向时重算其余部分。"),
        ),
        "pipeline_parallel" => (
            ("Pipeline parallel (vLLM)", "--pipeline-parallel-size: each GPU group serves a slice of the layers; GPUs = TP × PP. The smallest KV pool of the stages decides."),
            ("流水线并行 (vLLM)", "--pipeline-parallel-size：每组 GPU 只负责一部分层；GPU 数 = TP × PP。各阶段中最小的 KV 池决定容量。"),
        ),
        "global_batch" => (
            ("Global batch (sequences)", "Sequences per optimizer step over all GPUs; sets the micro-batches in flight in a pipeline. 0: micro-batch × data-parallel GPUs × accumulation."),
            ("全局批大小（序列数）", "所有 GPU 一次优化器步的序列数；决定流水线中同时存在的微批数。0 表示微批 × 数据并行 GPU 数 × 累积步数。"),
        ),
        _ => return None,
    };
    Some(if zh { cn } else { en })
}

/// Fixed texts of the layout section, the per-rank card and the Plan view.
#[derive(Debug)]
pub struct ParallelText {
    /// The form section.
    pub layout: &'static str,
    /// Per-rank card heading.
    pub per_rank: &'static str,
    /// Under the heading.
    pub per_rank_hint: &'static str,
    /// "stage".
    pub stage: &'static str,
    /// "stages".
    pub stages: &'static str,
    /// Rank roles.
    pub role_embedding: &'static str,
    /// Rank roles.
    pub role_head: &'static str,
    /// Rank roles.
    pub role_both: &'static str,
    /// Rank roles.
    pub role_layers: &'static str,
    /// "ranks like it".
    pub ranks: &'static str,
    /// "layers".
    pub layers: &'static str,
    /// Marks the rank that decides the verdict.
    pub largest: &'static str,
    /// Component names in the bar tooltip.
    pub weights: &'static str,
    /// Component.
    pub gradients: &'static str,
    /// Component.
    pub optimizer: &'static str,
    /// Component.
    pub activations: &'static str,
    /// Component.
    pub communication: &'static str,
    /// "micro-batches in flight".
    pub in_flight: &'static str,
    /// Plan card heading.
    pub plan: &'static str,
    /// Plan card explanation.
    pub plan_hint: &'static str,
    /// GPUs available input.
    pub gpus_available: &'static str,
    /// GPUs per node input.
    pub gpus_per_node: &'static str,
    /// The button.
    pub find: &'static str,
    /// No layout fits.
    pub nothing_fits: &'static str,
    /// Headroom label.
    pub headroom: &'static str,
    /// Apply a plan to the form.
    pub use_layout: &'static str,
    /// Why others fail.
    pub why_not: &'static str,
    /// Layouts estimated.
    pub considered: &'static str,
    /// Copy button.
    pub copy: &'static str,
    /// Host RAM a plan's offloaded states need (followed by the bytes).
    pub host_ram: &'static str,
    /// "per node" (the host RAM of every process on one node).
    pub per_node: &'static str,
    /// One GPU process (of one node).
    pub process: &'static str,
    /// GPU processes (of one node).
    pub processes: &'static str,
}

const EN: ParallelText = ParallelText {
    layout: "Parallel layout (multi-GPU)",
    per_rank: "Per GPU rank",
    per_rank_hint: "Each bar is one kind of rank (a pipeline stage; GPUs in its TP, CP, EP and data-parallel groups hold the same). The largest decides the verdict.",
    stage: "stage",
    stages: "stages",
    role_embedding: "embedding",
    role_head: "head and loss",
    role_both: "embedding, head and loss",
    role_layers: "layers only",
    ranks: "GPUs",
    layers: "layers",
    largest: "largest",
    weights: "weights",
    gradients: "gradients",
    optimizer: "optimizer",
    activations: "activations",
    communication: "communication",
    in_flight: "micro-batches in flight",
    plan: "Plan a layout",
    plan_hint: "Every layout of this model on up to N GPUs of the chosen type that leaves 5 % free on every rank, best first: everything on the GPUs before offload to host RAM, then fewest GPUs, TP inside a node, smallest pipeline bubble, largest micro-batch.",
    gpus_available: "GPUs available",
    gpus_per_node: "GPUs per node",
    find: "Find layouts that fit",
    nothing_fits: "No layout fits. The closest ones and why:",
    headroom: "headroom",
    use_layout: "Use this layout",
    why_not: "Why the others fail",
    considered: "layouts estimated",
    copy: "Copy",
    host_ram: "Offloaded to host RAM, per GPU process:",
    per_node: "per node",
    process: "process",
    processes: "processes",
};

const ZH: ParallelText = ParallelText {
    layout: "并行布局（多 GPU）",
    per_rank: "每个 GPU rank",
    per_rank_hint: "每条柱代表一类 rank（一个流水线阶段；同一 TP、CP、EP 和数据并行组内的 GPU 显存相同）。最大的那一类决定结论。",
    stage: "阶段",
    stages: "阶段",
    role_embedding: "嵌入层",
    role_head: "输出头与损失",
    role_both: "嵌入层、输出头与损失",
    role_layers: "仅中间层",
    ranks: "张 GPU",
    layers: "层",
    largest: "最大",
    weights: "权重",
    gradients: "梯度",
    optimizer: "优化器",
    activations: "激活",
    communication: "通信缓冲",
    in_flight: "同时在途的微批",
    plan: "规划并行布局",
    plan_hint: "列出该模型在最多 N 张所选 GPU 上、每个 rank 都留有 5% 余量的所有布局，按优先级排序：全部放在 GPU 上优先于卸载到主机内存，其次 GPU 最少、TP 不跨节点、流水线气泡最小、微批最大。",
    gpus_available: "可用 GPU 数",
    gpus_per_node: "每节点 GPU 数",
    find: "查找放得下的布局",
    nothing_fits: "没有放得下的布局。最接近的几种及原因：",
    headroom: "余量",
    use_layout: "使用此布局",
    why_not: "其他布局为何不行",
    considered: "个布局已估算",
    copy: "复制",
    host_ram: "卸载到主机内存（每个 GPU 进程）：",
    per_node: "每节点",
    process: "个进程",
    processes: "个进程",
};

impl Lang {
    /// Texts of the layout section, the per-rank card and the Plan view.
    pub fn parallel(self) -> &'static ParallelText {
        match self {
            Lang::En => &EN,
            Lang::Zh => &ZH,
        }
    }
}
