//! Text of the scenario form, the results and the charts, in English and Simplified Chinese. Field
//! labels and one-line hints are looked up by the field key the form uses.

use crate::fit::Change;
use crate::i18n::Lang;
use vram_core::gpu_catalog::Verdict;

/// `(label, hint)` of a scenario field.
pub fn field(lang: Lang, key: &str) -> (&'static str, &'static str) {
    let zh = lang == Lang::Zh;
    let (en, cn): ((&str, &str), (&str, &str)) = match key {
        "method" => (
            (
                "Method",
                "LoRA adapters over the frozen base; QLoRA keeps the base in 4-bit NF4 and turns on gradient checkpointing, as its recipes do.",
            ),
            (
                "方法",
                "在冻结底座上训练 LoRA 适配器；QLoRA 把底座存为 4 bit NF4，并按其惯例开启梯度检查点。",
            ),
        ),
        "gpu" => (
            (
                "GPU",
                "Usable memory as the driver reports it (an \"80 GB\" H100 has 79.19 GiB).",
            ),
            (
                "GPU",
                "驱动报告的可用显存（标称 80 GB 的 H100 实际为 79.19 GiB）。",
            ),
        ),
        "custom_gib" => (
            (
                "Custom GPU memory (GiB)",
                "Usable memory per GPU in GiB (2^30 bytes).",
            ),
            (
                "自定义显存 (GiB)",
                "每张 GPU 的可用显存，单位 GiB（2^30 字节）。",
            ),
        ),
        "gpus" => (
            (
                "GPU count",
                "Training: every GPU of the run (data parallel × the layout's TP × PP × CP); vLLM: its tensor-parallel size; transformers: the GPUs device_map=\"auto\" spreads the layers over.",
            ),
            ("GPU 数量", "训练时为全部 GPU 数（数据并行 × 布局中的 TP × PP × CP）；vLLM 时为张量并行数；transformers 时为 device_map=\"auto\" 分配各层的 GPU 数。"),
        ),
        "zero" => (
            (
                "ZeRO stage",
                "DeepSpeed ZeRO: 1 shards optimizer states, 2 also gradients, 3 also weights.",
            ),
            (
                "ZeRO 阶段",
                "DeepSpeed ZeRO：1 切分优化器状态，2 再切分梯度，3 再切分权重。",
            ),
        ),
        "offload_optimizer" => (
            (
                "Offload optimizer to CPU",
                "ZeRO-Offload keeps optimizer states in host memory.",
            ),
            (
                "优化器卸载到 CPU",
                "ZeRO-Offload 将优化器状态放在主机内存。",
            ),
        ),
        "offload_params" => (
            (
                "Offload parameters to CPU",
                "ZeRO-3 only: parameters live in host memory.",
            ),
            ("参数卸载到 CPU", "仅 ZeRO-3：参数放在主机内存。"),
        ),
        "precision" => (
            (
                "Precision",
                "bf16 mixed precision keeps fp32 master weights and computes in bf16.",
            ),
            ("精度", "bf16 混合精度：fp32 主权重，bf16 计算。"),
        ),
        "optimizer" => (
            (
                "Optimizer",
                "AdamW keeps two fp32 moments per trainable parameter.",
            ),
            ("优化器", "AdamW 为每个可训练参数保存两个 fp32 动量。"),
        ),
        "batch" => (
            (
                "Micro-batch size",
                "Sequences per forward/backward pass on each GPU.",
            ),
            ("微批大小", "每张 GPU 每次前向/反向的序列数。"),
        ),
        "seq_len" => (
            ("Sequence length", "Tokens per training sequence."),
            ("序列长度", "每条训练序列的 token 数。"),
        ),
        "grad_checkpointing" => (
            (
                "Gradient checkpointing",
                "Recompute layer activations in backward: less memory, ~30% more compute.",
            ),
            ("梯度检查点", "反向时重算层激活：省显存，约多 30% 计算。"),
        ),
        "attention" | "infer_attention" => (
            (
                "Attention",
                "Eager materialises the s×s scores; SDPA and flash do not.",
            ),
            (
                "注意力实现",
                "eager 会生成 s×s 注意力矩阵；SDPA 和 flash 不会。",
            ),
        ),
        "lora" => (
            (
                "Fine-tuning",
                "Full training, LoRA adapters, or QLoRA (LoRA over a 4-bit base).",
            ),
            (
                "微调方式",
                "全参训练、LoRA 适配器，或 QLoRA（4 bit 底座上的 LoRA）。",
            ),
        ),
        "lora_r" => (
            (
                "LoRA rank",
                "Rank r of each adapter pair A (r×in) and B (out×r).",
            ),
            ("LoRA 秩", "每对适配器 A (r×in)、B (out×r) 的秩 r。"),
        ),
        "lora_targets" => (
            (
                "LoRA targets",
                "peft's default (q_proj, v_proj for llama) or every linear layer.",
            ),
            (
                "LoRA 目标模块",
                "peft 默认（llama 为 q_proj、v_proj）或全部线性层。",
            ),
        ),
        "grad_accumulation" => (
            ("Gradient accumulation", "Micro-batches per optimizer step."),
            ("梯度累积", "每次优化器更新累积的微批数。"),
        ),
        "engine" => (
            (
                "Engine",
                "HF transformers generate, vLLM with its pre-allocated paged KV cache, or llama.cpp (and ollama) for local GGUF models.",
            ),
            (
                "推理引擎",
                "HF transformers generate、预分配分页 KV 缓存的 vLLM，或运行本地 GGUF 模型的 llama.cpp（及 ollama）。",
            ),
        ),
        "weights" => (
            (
                "Weight format",
                "Auto: the config's quantization_config, else the dtype.",
            ),
            (
                "权重格式",
                "自动：使用配置中的 quantization_config，否则按数据类型。",
            ),
        ),
        "infer_dtype" => (
            (
                "Compute dtype",
                "Dtype of unquantized weights, activations and (by default) the KV cache.",
            ),
            ("计算精度", "未量化权重、激活和（默认）KV 缓存的数据类型。"),
        ),
        "kv_dtype" => (
            (
                "KV cache dtype",
                "Auto: the compute dtype. fp8 halves the cache.",
            ),
            ("KV 缓存精度", "自动：与计算精度相同。fp8 可减半。"),
        ),
        "infer_batch" => (
            ("Concurrent sequences", "Sequences generated at once."),
            ("并发序列数", "同时生成的序列数。"),
        ),
        "context" => (
            (
                "Context length",
                "Prompt plus generated tokens per sequence.",
            ),
            ("上下文长度", "每条序列的提示词加生成 token 数。"),
        ),
        "logits_to_keep" => (
            (
                "Logits computed",
                "Positions whose logits prefill computes: 1 = last only (generate), 0 = all.",
            ),
            (
                "计算 logits 的位置",
                "预填充计算 logits 的位置数：1 = 仅最后一个（generate），0 = 全部。",
            ),
        ),
        "gpu_util" => (
            (
                "vLLM GPU memory utilization",
                "--gpu-memory-utilization: share of GPU memory vLLM may use (release default: 0.9 up to 0.20, 0.92 in 0.21–0.33, unset = 1.0 with 0.34's extensible KV cache, which keeps its own margin).",
            ),
            (
                "vLLM 显存利用率",
                "--gpu-memory-utilization：vLLM 可使用的显存比例（版本默认：0.20 及以前为 0.9，0.21–0.33 为 0.92，0.34 的可扩展 KV 缓存不设置即为 1.0，自留余量）。",
            ),
        ),
        "max_model_len" => (
            (
                "vLLM max model length",
                "--max-model-len (0: the config's context).",
            ),
            (
                "vLLM 最大模型长度",
                "--max-model-len（0：使用配置中的上下文）。",
            ),
        ),
        "max_num_seqs" => (
            (
                "vLLM max sequences",
                "--max-num-seqs (0: the release's default for the GPU and start-up: 1024 on an H100 with vllm serve, 256 on an A100 or a GPU under 70 GiB).",
            ),
            (
                "vLLM 最大序列数",
                "--max-num-seqs（0：该版本按 GPU 和启动方式的默认值：H100 上 vllm serve 为 1024，A100 或小于 70 GiB 的 GPU 为 256）。",
            ),
        ),
        "vllm_version" => (
            (
                "vLLM version",
                "The release whose start-up is modelled: its defaults, the profiling run's sampler, non-torch memory and whether CUDA graphs count against the budget differ by release.",
            ),
            (
                "vLLM 版本",
                "按哪个版本的启动过程计算：默认参数、profile 时的采样器、非 torch 显存以及 CUDA graph 是否计入预算都随版本不同。",
            ),
        ),
        "vllm_usage" => (
            (
                "vLLM started as",
                "vllm serve (the API server) or the offline LLM() class: the default batch limits differ.",
            ),
            (
                "vLLM 启动方式",
                "vllm serve（API 服务）或离线 LLM() 类：默认的批处理上限不同。",
            ),
        ),
        "cuda_graphs" => (
            (
                "CUDA graphs",
                "--enforce-eager turns CUDA graphs off: from 0.21 their memory counts against the KV budget; before, it comes on top of gpu_memory_utilization.",
            ),
            (
                "CUDA graphs",
                "--enforce-eager 关闭 CUDA graph：从 0.21 起其显存计入 KV 预算；之前则额外占用 gpu_memory_utilization 之外的显存。",
            ),
        ),
        "llama_ollama" => (
            (
                "ollama profile",
                "ollama runs llama.cpp: context is num_ctx per sequence × OLLAMA_NUM_PARALLEL.",
            ),
            (
                "ollama 配置",
                "ollama 基于 llama.cpp：上下文 = 每序列 num_ctx × OLLAMA_NUM_PARALLEL。",
            ),
        ),
        "llama_ctx" => (
            (
                "Context (-c)",
                "Tokens of KV cache for all sequences together; llama.cpp pads it to 256.",
            ),
            (
                "上下文 (-c)",
                "所有序列共用的 KV 缓存 token 数；llama.cpp 会补齐到 256 的倍数。",
            ),
        ),
        "llama_np" => (
            (
                "Parallel sequences (-np)",
                "Requests served at once; they share the context.",
            ),
            ("并行序列数 (-np)", "同时处理的请求数；它们共享上下文。"),
        ),
        "llama_weights" => (
            (
                "Weight type (GGUF)",
                "Auto: the GGUF file's own type, else Q4_K_M (what most model pages ship).",
            ),
            (
                "权重类型 (GGUF)",
                "自动：GGUF 文件自身的类型，否则为 Q4_K_M（多数模型页面提供的版本）。",
            ),
        ),
        "llama_ctk" => (
            (
                "K cache type (-ctk)",
                "f16 by default; q8_0 halves the K cache with little quality loss.",
            ),
            (
                "K 缓存类型 (-ctk)",
                "默认 f16；q8_0 可将 K 缓存减半，质量损失很小。",
            ),
        ),
        "llama_ctv" => (
            (
                "V cache type (-ctv)",
                "Same as K by default. A quantized V cache needs flash attention on.",
            ),
            (
                "V 缓存类型 (-ctv)",
                "默认与 K 相同。量化的 V 缓存需要开启 flash attention。",
            ),
        ),
        "llama_fa" => (
            (
                "Flash attention (-fa)",
                "auto: on where the GPU supports it (CUDA, Metal, Vulkan). Off materialises the KQ matrix.",
            ),
            (
                "Flash attention (-fa)",
                "auto：GPU 支持时开启（CUDA、Metal、Vulkan）。关闭时会生成 KQ 矩阵。",
            ),
        ),
        "llama_ngl" => (
            (
                "GPU layers (-ngl)",
                "\"all\" or a number: the last N layers (the output layer counts as one) go to the GPU.",
            ),
            (
                "GPU 层数 (-ngl)",
                "\"all\" 或数字：最后 N 层（输出层算一层）放在 GPU 上。",
            ),
        ),
        "llama_n_cpu_moe" => (
            (
                "Experts on CPU (--n-cpu-moe)",
                "The routed experts of the first N layers stay in RAM; the rest of each layer stays on the GPU.",
            ),
            (
                "专家放在 CPU (--n-cpu-moe)",
                "前 N 层的路由专家留在内存中；各层其余部分仍在 GPU 上。",
            ),
        ),
        "llama_cpu_moe" => (
            (
                "All experts on CPU (--cpu-moe)",
                "Every layer's routed experts stay in RAM; attention and shared weights stay on the GPU.",
            ),
            (
                "全部专家放在 CPU (--cpu-moe)",
                "所有层的路由专家都留在内存中；注意力和共享权重仍在 GPU 上。",
            ),
        ),
        "llama_tensor_split" => (
            (
                "Split proportions (--tensor-split, optional)",
                "Layers per GPU in these proportions, e.g. 3,1; the number of GPUs follows. Empty: an even split.",
            ),
            (
                "分配比例 (--tensor-split，可选)",
                "各 GPU 按此比例分配层，例如 3,1；GPU 数量随之确定。留空：平均分配。",
            ),
        ),
        "llama_ubatch" => (
            (
                "Physical batch (-ub)",
                "Tokens per compute step (default 512): the compute buffer grows with it.",
            ),
            (
                "物理批大小 (-ub)",
                "每步计算的 token 数（默认 512）：计算缓冲随之增大。",
            ),
        ),
        "llama_swa_full" => (
            (
                "Full-size SWA cache (--swa-full)",
                "Sliding-window layers get a cache as long as the context instead of the window.",
            ),
            (
                "完整 SWA 缓存 (--swa-full)",
                "滑动窗口层的缓存与上下文等长，而不是窗口长度。",
            ),
        ),
        "llama_no_kv_offload" => (
            (
                "KV cache in RAM (--no-kv-offload)",
                "Keeps the KV cache in host memory: frees GPU memory, slows generation.",
            ),
            (
                "KV 缓存放在内存 (--no-kv-offload)",
                "KV 缓存留在主机内存：节省显存，但生成变慢。",
            ),
        ),
        "llama_gpus" => (
            (
                "Number of GPUs (--tensor-split)",
                "Identical GPUs; the layers are split evenly between them unless split proportions are given.",
            ),
            (
                "GPU 数量 (--tensor-split)",
                "相同型号的 GPU；未给出分配比例时，各层平均分配到每张卡。",
            ),
        ),
        "llama_ram_gib" => (
            (
                "System RAM (GiB)",
                "Host memory for the layers, experts and KV cache that stay on the CPU.",
            ),
            (
                "系统内存 (GiB)",
                "留在 CPU 上的层、专家和 KV 缓存所用的主机内存。",
            ),
        ),
        "llama_display" => (
            (
                "A display is attached to this GPU",
                "The desktop holds about 1 GiB of a GPU that drives the screen.",
            ),
            (
                "此 GPU 连接了显示器",
                "驱动屏幕的 GPU 会被桌面占用约 1 GiB。",
            ),
        ),
        "llama_free_gib" => (
            (
                "Free GPU memory (GiB, optional)",
                "Overrides the GPU's usable memory, e.g. the free figure nvidia-smi shows.",
            ),
            (
                "空闲显存 (GiB，可选)",
                "覆盖 GPU 的可用显存，例如 nvidia-smi 显示的空闲值。",
            ),
        ),
        _ => match crate::i18n_parallel::layout_field(lang, key) {
            Some(pair) => (pair, pair),
            None => ((key_static(key), ""), (key_static(key), "")),
        },
    };
    if zh {
        cn
    } else {
        en
    }
}

fn key_static(_key: &str) -> &'static str {
    "?"
}

/// Row label of a breakdown component key.
pub fn component(lang: Lang, key: &str) -> String {
    let zh = lang == Lang::Zh;
    let s = match (key, zh) {
        ("weights", false) => "Weights",
        ("weights", true) => "权重",
        ("gradients", false) => "Gradients",
        ("gradients", true) => "梯度",
        ("optimizer", false) => "Optimizer states",
        ("optimizer", true) => "优化器状态",
        ("optimizer_temp", false) => "Optimizer step temporaries",
        ("optimizer_temp", true) => "优化器临时张量",
        ("activations", false) => "Activations",
        ("activations", true) => "激活",
        ("autocast_weight_copies", false) => "Autocast weight copies",
        ("autocast_weight_copies", true) => "autocast 权重副本",
        ("zero3_gathered_params", false) => "ZeRO-3 gathered parameters",
        ("zero3_gathered_params", true) => "ZeRO-3 聚合的完整参数",
        ("buffers", false) => "Communication buffers",
        ("buffers", true) => "通信缓冲",
        ("kv_cache", false) => "KV cache",
        ("kv_cache", true) => "KV 缓存",
        ("logits", false) => "Logits",
        ("logits", true) => "Logits",
        ("model_buffers", false) => "Model buffers (masks, position tables)",
        ("model_buffers", true) => "模型缓冲区（掩码、位置表）",
        ("cache_growth", false) => "KV cache growth (decode)",
        ("cache_growth", true) => "KV 缓存增长（解码）",
        ("load_transient", false) => "Load transient",
        ("load_transient", true) => "加载临时张量",
        ("communication", false) => "Communication buffers",
        ("communication", true) => "通信缓冲",
        // what the peak holds beyond its tensors: backward's gradient temporaries, or the
        // optimizer step's when the peak is there
        ("transient", false) => "Temporaries at the peak",
        ("transient", true) => "峰值时的临时张量",
        ("model_state", false) => "Kept by the model between steps",
        ("model_state", true) => "模型在步骤间保留的张量",
        _ => return key.replace('_', " "),
    };
    s.to_string()
}

/// Column label of a phase, named for people: the core's `forward` is the first step's forward
/// (autocast's weight cache and the optimizer's lazily created states make it differ from later
/// steps), `forward_2` the steady state. Unknown names pass through.
pub fn phase(lang: Lang, name: &str) -> String {
    let zh = lang == Lang::Zh;
    let (base, steady) = match name.strip_suffix("_2") {
        Some(b) => (b, true),
        None => (name, false),
    };
    let (en, cn) = match base {
        "load" => ("load", "加载"),
        "forward" => ("forward", "前向"),
        "backward" => ("backward", "反向"),
        "optimizer" => ("optimizer", "优化器步"),
        "prefill" => ("prefill", "预填充"),
        "decode" => ("decode", "解码"),
        _ => return name.to_string(),
    };
    let training = matches!(base, "forward" | "backward" | "optimizer");
    match (zh, training, steady) {
        (false, true, false) => format!("1st step {en}"),
        (false, true, true) => format!("steady-state {en}"),
        (false, false, _) => en.to_string(),
        (true, true, false) => format!("第 1 步{cn}"),
        (true, true, true) => format!("稳态{cn}"),
        (true, false, _) => cn.to_string(),
    }
}

/// What a phase is, for the tooltip of its column.
pub fn phase_tip(lang: Lang, name: &str) -> &'static str {
    let zh = lang == Lang::Zh;
    let base = name.strip_suffix("_2").unwrap_or(name);
    let steady = name.ends_with("_2");
    match (base, steady, zh) {
        ("load", _, false) => "After the model is loaded, before the first step.",
        ("load", _, true) => "模型加载后、第一步之前。",
        ("forward", false, false) => "End of the first forward pass: saved activations, autocast's weight copies, logits and loss.",
        ("forward", false, true) => "第一次前向结束：保存的激活、autocast 权重副本、logits 与 loss。",
        ("backward", false, false) => "Peak of the first backward pass: gradients appear while activations are freed.",
        ("backward", false, true) => "第一次反向的峰值：梯度产生、激活逐步释放。",
        ("optimizer", false, false) => "The first optimizer step: its states are created now, with the step's temporaries.",
        ("optimizer", false, true) => "第一次优化器步：此时创建优化器状态，并有临时张量。",
        ("forward", true, false) => "A later step's forward: optimizer states already live beside it.",
        ("forward", true, true) => "之后某一步的前向：优化器状态已常驻。",
        ("backward", true, false) => "A later step's backward: usually the peak of training.",
        ("backward", true, true) => "之后某一步的反向：通常是训练的峰值。",
        ("optimizer", true, false) => "A later optimizer step.",
        ("optimizer", true, true) => "之后的优化器步。",
        ("prefill", _, false) => "Processing the prompt: the whole context at once.",
        ("prefill", _, true) => "处理提示词：整个上下文一次计算。",
        ("decode", _, false) => "Generating tokens one at a time with the KV cache full.",
        ("decode", _, true) => "逐个生成 token，KV 缓存已满。",
        _ => "",
    }
}

/// Verdict text.
pub fn verdict(lang: Lang, v: Verdict) -> &'static str {
    match (v, lang) {
        (Verdict::Fits, Lang::En) => "fits",
        (Verdict::Tight, Lang::En) => "tight",
        (Verdict::DoesNotFit, Lang::En) => "does not fit",
        (Verdict::Fits, Lang::Zh) => "放得下",
        (Verdict::Tight, Lang::Zh) => "很紧张",
        (Verdict::DoesNotFit, Lang::Zh) => "放不下",
    }
}

/// Suggestion text.
pub fn change(lang: Lang, c: &Change) -> String {
    let zh = lang == Lang::Zh;
    let pick = |en: String, cn: String| if zh { cn } else { en };
    match c {
        Change::Checkpointing => pick(
            "Turn on gradient checkpointing (≈ 30 % slower steps)".into(),
            "开启梯度检查点（每步约慢 30 %）".into(),
        ),
        Change::MicroBatch {
            batch,
            accumulation,
        } => pick(
            format!("Micro-batch {batch} × {accumulation} accumulation steps (same global batch)"),
            format!("微批 {batch} × 梯度累积 {accumulation} 步（全局批量不变）"),
        ),
        Change::OffloadOptimizer => pick(
            "Offload the optimizer states to CPU RAM (DeepSpeed ZeRO-Offload)".into(),
            "把优化器状态卸载到 CPU 内存（DeepSpeed ZeRO-Offload）".into(),
        ),
        Change::Adamw8bit => pick("Use 8-bit AdamW".into(), "改用 8 bit AdamW".into()),
        Change::Lora => pick(
            "Fine-tune with LoRA (r = 16, all linear layers) instead".into(),
            "改用 LoRA 微调（r = 16，全部线性层）".into(),
        ),
        Change::Qlora => pick(
            "QLoRA: 4-bit NF4 base + LoRA + checkpointing".into(),
            "QLoRA：4 bit NF4 底座 + LoRA + 检查点".into(),
        ),
        Change::Weights { format } => pick(format!("{format} weights"), format!("{format} 权重")),
        Change::Fp8Kv => pick("fp8 KV cache".into(), "fp8 KV 缓存".into()),
        Change::ShorterSeq { seq_len } => pick(
            format!(
                "Shorten to {} tokens",
                vram_core::units::group_thousands(*seq_len)
            ),
            format!(
                "缩短到 {} 个 token",
                vram_core::units::group_thousands(*seq_len)
            ),
        ),
        Change::Zero3Gpus { gpus } => pick(
            format!("ZeRO-3 over {gpus} × this GPU"),
            format!("ZeRO-3，{gpus} 张这种 GPU"),
        ),
        Change::TensorParallel { gpus } => pick(
            format!("Tensor parallel over {gpus} × this GPU"),
            format!("张量并行，{gpus} 张这种 GPU"),
        ),
        Change::DeviceMap { gpus } => pick(
            format!("Spread the layers over {gpus} × this GPU (device_map=\"auto\")"),
            format!("把各层分到 {gpus} 张这种 GPU 上（device_map=\"auto\"）"),
        ),
        Change::SingleGpu { id } => {
            let name = vram_core::gpu_catalog::find(id).map_or(*id, |g| g.name);
            pick(
                format!("The smallest single GPU that fits: {name}"),
                format!("放得下的最小单卡：{name}"),
            )
        }
    }
}

/// Fixed texts of the scenario and results sections.
#[derive(Debug)]
pub struct PageText {
    /// Section heading.
    pub scenario: &'static str,
    /// Mode options.
    pub mode_train: &'static str,
    /// Mode option.
    pub mode_infer: &'static str,
    /// Mode option.
    pub mode_both: &'static str,
    /// Training sub-form heading.
    pub training: &'static str,
    /// Inference sub-form heading.
    pub inference: &'static str,
    /// Custom GPU option.
    pub custom: &'static str,
    /// Auto option.
    pub auto: &'static str,
    /// The "Advanced" disclosure of each task's form.
    pub advanced: &'static str,
    /// Label of the device total in the breakdown card.
    pub total_device_short: &'static str,
    /// Full training option.
    pub full: &'static str,
    /// Headline: "peak per GPU".
    pub per_gpu: &'static str,
    /// Which total: device.
    pub total_device: &'static str,
    /// Which total: vLLM.
    pub total_vllm: &'static str,
    /// Peak allocated label.
    pub allocated: &'static str,
    /// Reserved label.
    pub reserved: &'static str,
    /// "of" usable.
    pub usable: &'static str,
    /// Breakdown heading.
    pub breakdown: &'static str,
    /// Peak row.
    pub peak_row: &'static str,
    /// Largest batch.
    pub largest_batch: &'static str,
    /// Largest sequence.
    pub largest_seq: &'static str,
    /// None fits.
    pub none_fits: &'static str,
    /// Suggestions heading.
    pub suggestions: &'static str,
    /// "new peak".
    pub new_peak: &'static str,
    /// Explanations heading.
    pub how: &'static str,
    /// Source label.
    pub source: &'static str,
    /// Unit toggle label.
    pub units: &'static str,
    /// Charts heading.
    pub charts: &'static str,
    /// Chart titles.
    pub chart_phases: &'static str,
    /// Chart title.
    pub chart_batch: &'static str,
    /// Chart title.
    pub chart_seq: &'static str,
    /// Chart title.
    pub chart_ctx_mem: &'static str,
    /// Chart title.
    pub chart_ctx_seqs: &'static str,
    /// Axis.
    pub phase: &'static str,
    /// Axis.
    pub batch_axis: &'static str,
    /// Axis.
    pub seq_axis: &'static str,
    /// Axis.
    pub ctx_axis: &'static str,
    /// Axis.
    pub seqs_axis: &'static str,
    /// Legend.
    pub capacity: &'static str,
    /// Legend.
    pub largest_fit: &'static str,
    /// Download PNG.
    pub png: &'static str,
    /// Download SVG.
    pub svg: &'static str,
    /// Share heading.
    pub share: &'static str,
    /// Copy link.
    pub copy_link: &'static str,
    /// Copied.
    pub copied: &'static str,
    /// Export CSV.
    pub csv: &'static str,
    /// Export Markdown.
    pub markdown: &'static str,
    /// Export JSON.
    pub json: &'static str,
    /// Not computed.
    pub not_computed: &'static str,
    /// Notes heading.
    pub notes: &'static str,
    /// Measured vs estimated heading.
    pub measured_heading: &'static str,
    /// Column.
    pub measured: &'static str,
    /// Column.
    pub estimated: &'static str,
    /// Column.
    pub difference: &'static str,
    /// vLLM KV tokens.
    pub kv_tokens: &'static str,
    /// vLLM concurrency.
    pub concurrency: &'static str,
}

/// English.
pub static PAGE_EN: PageText = PageText {
    scenario: "Scenario",
    mode_train: "Training",
    mode_infer: "Inference",
    mode_both: "Both",
    training: "Training",
    inference: "Inference",
    custom: "Custom size…",
    auto: "auto",
    advanced: "Advanced",
    total_device_short: "Device total (nvidia-smi) / usable",
    full: "Full training",
    per_gpu: "per GPU",
    total_device:
        "device total (what nvidia-smi shows: reserved + CUDA context + cuBLAS workspace)",
    total_vllm: "vLLM: weights + activation peak + KV pool within --gpu-memory-utilization",
    allocated: "peak allocated (torch.cuda.max_memory_allocated)",
    reserved: "peak reserved (caching allocator)",
    usable: "usable on",
    breakdown: "Breakdown by phase",
    peak_row: "Peak allocated in phase",
    largest_batch: "Largest batch that fits",
    largest_seq: "Longest sequence that fits",
    none_fits: "none",
    suggestions: "Cheapest changes that would fit",
    new_peak: "new total",
    how: "How each figure is computed",
    source: "Source",
    units: "Units",
    charts: "Charts",
    chart_phases: "Memory per phase",
    chart_batch: "Training memory vs batch size",
    chart_seq: "Training memory vs sequence length",
    chart_ctx_mem: "Inference memory vs context length",
    chart_ctx_seqs: "vLLM: sequences the KV pool holds vs context length",
    phase: "phase",
    batch_axis: "micro-batch size",
    seq_axis: "sequence length (tokens)",
    ctx_axis: "context length (tokens)",
    seqs_axis: "concurrent sequences",
    capacity: "usable GPU memory",
    largest_fit: "largest that fits",
    png: "PNG",
    svg: "SVG",
    share: "Share and export",
    copy_link: "Copy link",
    copied: "Link copied",
    csv: "Breakdown CSV",
    markdown: "Breakdown Markdown",
    json: "Estimate JSON",
    not_computed: "Not computed",
    notes: "Notes",
    measured_heading: "Measured (vram measure) vs estimated",
    measured: "Measured",
    estimated: "Estimated",
    difference: "Difference",
    kv_tokens: "KV cache tokens",
    concurrency: "max concurrency at max_model_len",
};

/// 简体中文.
pub static PAGE_ZH: PageText = PageText {
    scenario: "场景",
    mode_train: "训练",
    mode_infer: "推理",
    mode_both: "两者",
    training: "训练",
    inference: "推理",
    custom: "自定义大小…",
    auto: "自动",
    advanced: "高级选项",
    total_device_short: "设备总量（nvidia-smi）/ 可用",
    full: "全参训练",
    per_gpu: "每张 GPU",
    total_device: "设备总量（nvidia-smi 显示的值：保留显存 + CUDA 上下文 + cuBLAS 工作区）",
    total_vllm: "vLLM：权重 + 激活峰值 + KV 池，受 --gpu-memory-utilization 限制",
    allocated: "已分配峰值 (torch.cuda.max_memory_allocated)",
    reserved: "保留峰值（缓存分配器）",
    usable: "可用显存",
    breakdown: "按阶段分解",
    peak_row: "阶段内已分配峰值",
    largest_batch: "放得下的最大批大小",
    largest_seq: "放得下的最长序列",
    none_fits: "无",
    suggestions: "能放下的最省事改动",
    new_peak: "新总量",
    how: "每个数字的计算方法",
    source: "来源",
    units: "单位",
    charts: "图表",
    chart_phases: "各阶段显存",
    chart_batch: "训练显存与批大小",
    chart_seq: "训练显存与序列长度",
    chart_ctx_mem: "推理显存与上下文长度",
    chart_ctx_seqs: "vLLM：KV 池可容纳的序列数与上下文长度",
    phase: "阶段",
    batch_axis: "微批大小",
    seq_axis: "序列长度（token）",
    ctx_axis: "上下文长度（token）",
    seqs_axis: "并发序列数",
    capacity: "GPU 可用显存",
    largest_fit: "能放下的最大值",
    png: "PNG",
    svg: "SVG",
    share: "分享与导出",
    copy_link: "复制链接",
    copied: "链接已复制",
    csv: "分解表 CSV",
    markdown: "分解表 Markdown",
    json: "估算 JSON",
    not_computed: "未计算",
    notes: "说明",
    measured_heading: "实测（vram measure）与估算对比",
    measured: "实测",
    estimated: "估算",
    difference: "差异",
    kv_tokens: "KV 缓存 token 数",
    concurrency: "max_model_len 下的最大并发",
};

impl Lang {
    /// Texts of the scenario and results sections.
    pub fn page(self) -> &'static PageText {
        match self {
            Lang::En => &PAGE_EN,
            Lang::Zh => &PAGE_ZH,
        }
    }
}

#[cfg(test)]
mod phase_label_tests {
    use super::*;

    #[test]
    fn phases_are_named_for_people_in_both_languages() {
        assert_eq!(phase(Lang::Zh, "forward"), "第 1 步前向");
        assert_eq!(phase(Lang::Zh, "optimizer_2"), "稳态优化器步");
        assert_eq!(phase(Lang::En, "backward_2"), "steady-state backward");
        assert_eq!(phase(Lang::En, "forward"), "1st step forward");
        assert_eq!(phase(Lang::Zh, "prefill"), "预填充");
        assert_eq!(phase(Lang::Zh, "unknown_phase"), "unknown_phase");
        assert_eq!(phase(Lang::En, "optimizer"), "1st step optimizer");
        assert!(!phase_tip(Lang::En, "backward_2").is_empty());
    }
}

#[cfg(test)]
mod field_label_tests {
    use super::*;

    /// Every key `scenario_form.rs` renders; a key without a label would show the "?" fallback.
    const FORM_KEYS: &[&str] = &[
        "attention",
        "batch",
        "context",
        "custom_gib",
        "engine",
        "gpu",
        "gpu_util",
        "cuda_graphs",
        "vllm_usage",
        "vllm_version",
        "gpus",
        "grad_accumulation",
        "grad_checkpointing",
        "infer_attention",
        "infer_batch",
        "infer_dtype",
        "kv_dtype",
        "logits_to_keep",
        "llama_ctk",
        "llama_ctv",
        "llama_cpu_moe",
        "llama_ctx",
        "llama_display",
        "llama_fa",
        "llama_free_gib",
        "llama_gpus",
        "llama_n_cpu_moe",
        "llama_ngl",
        "llama_no_kv_offload",
        "llama_np",
        "llama_ollama",
        "llama_ram_gib",
        "llama_swa_full",
        "llama_tensor_split",
        "llama_ubatch",
        "llama_weights",
        "lora",
        "lora_r",
        "lora_targets",
        "max_model_len",
        "max_num_seqs",
        "method",
        "offload_optimizer",
        "offload_params",
        "optimizer",
        "precision",
        "seq_len",
        "weights",
        "zero",
        "framework",
        "tp",
        "pp",
        "cp",
        "ep",
        "sequence_parallel",
        "distributed_optimizer",
        "fsdp2",
        "recompute",
        "global_batch",
        "pipeline_parallel",
    ];

    /// The keys `scenario_form.rs` passes to its field helpers (`number_field(state, "batch", …)`).
    fn rendered_keys() -> Vec<String> {
        let src: String = include_str!("scenario_form.rs")
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        let mut keys = Vec::new();
        for marker in ["_field(state,\"", "label_hint(state,\""] {
            for (at, _) in src.match_indices(marker) {
                let rest = &src[at + marker.len()..];
                if let Some(end) = rest.find('"') {
                    keys.push(rest[..end].to_string());
                }
            }
        }
        keys
    }

    #[test]
    fn the_key_list_covers_every_field_the_form_renders() {
        let keys = rendered_keys();
        assert!(keys.len() > 30, "{keys:?}");
        for key in &keys {
            assert!(
                FORM_KEYS.contains(&key.as_str()),
                "{key}: rendered by scenario_form.rs but not in FORM_KEYS"
            );
        }
        for key in ["llama_cpu_moe", "llama_tensor_split"] {
            assert!(keys.iter().any(|k| k == key), "{key} not rendered");
        }
    }

    #[test]
    fn every_form_field_has_a_label_and_hint_in_both_languages() {
        for lang in [Lang::En, Lang::Zh] {
            for key in FORM_KEYS {
                let (label, hint) = field(lang, key);
                assert!(
                    label != "?" && !label.is_empty(),
                    "{key}: no label in {lang:?}"
                );
                assert!(!hint.is_empty(), "{key}: no hint in {lang:?}");
            }
        }
    }
}
