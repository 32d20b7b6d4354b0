//! Text of the llama.cpp ("local") view, in English and Simplified Chinese.

use crate::i18n::Lang;

/// Fixed texts of the local view.
#[derive(Debug)]
pub struct LocalText {
    /// Card heading.
    pub heading: &'static str,
    /// "on the GPU".
    pub on_gpu: &'static str,
    /// What the headline total is.
    pub which_total: &'static str,
    /// Host memory label.
    pub host: &'static str,
    /// "of RAM".
    pub of_ram: &'static str,
    /// RAM does not hold the host share.
    pub ram_short: &'static str,
    /// Split heading.
    pub split: &'static str,
    /// "layers on the GPU" (after "N of M").
    pub layers_on_gpu: &'static str,
    /// "of" between counts.
    pub of: &'static str,
    /// GPU row of the split bar.
    pub gpu_row: &'static str,
    /// Host row of the split bar.
    pub host_row: &'static str,
    /// Legend / column: weights.
    pub weights: &'static str,
    /// Legend / column: KV cache.
    pub kv: &'static str,
    /// Legend / column: compute buffer.
    pub compute: &'static str,
    /// Legend / column: output buffer.
    pub output: &'static str,
    /// Column: total.
    pub total: &'static str,
    /// Device table heading.
    pub devices: &'static str,
    /// Device column.
    pub device: &'static str,
    /// Layers column.
    pub layers: &'static str,
    /// Host row name.
    pub cpu_host: &'static str,
    /// KV heading.
    pub kv_heading: &'static str,
    /// "cells".
    pub cells: &'static str,
    /// "per sequence".
    pub per_seq: &'static str,
    /// Sliding-window cache.
    pub swa: &'static str,
    /// Largest -ngl that fits.
    pub max_ngl: &'static str,
    /// Longest context that fits.
    pub max_ctx: &'static str,
    /// Nothing fits.
    pub none: &'static str,
    /// "all".
    pub all: &'static str,
    /// Fit table heading.
    pub fit_heading: &'static str,
    /// Fit table intro (before the machine).
    pub fit_intro: &'static str,
    /// Column: type.
    pub col_type: &'static str,
    /// Column: file size.
    pub col_file: &'static str,
    /// Column: largest context fully on the GPU.
    pub col_full_ctx: &'static str,
    /// Column: placement.
    pub col_placement: &'static str,
    /// Column: free on the GPU.
    pub col_free: &'static str,
    /// Placement: gpu.
    pub place_gpu: &'static str,
    /// Placement: experts on CPU.
    pub place_experts: &'static str,
    /// Placement: partial.
    pub place_partial: &'static str,
    /// Placement: none.
    pub place_none: &'static str,
    /// Click hint.
    pub fit_hint: &'static str,
    /// Launch heading.
    pub launch: &'static str,
    /// ollama environment.
    pub ollama_env: &'static str,
    /// Modelfile.
    pub modelfile: &'static str,
    /// Copy button.
    pub copy: &'static str,
    /// Copied.
    pub copied: &'static str,
    /// Reading a GGUF header.
    pub reading: &'static str,
    /// Weight type from the GGUF file.
    pub gguf_type: &'static str,
    /// RAM note for unified memory.
    pub unified_note: &'static str,
}

/// English.
pub static LOCAL_EN: LocalText = LocalText {
    heading: "Local: llama.cpp",
    on_gpu: "on the largest GPU",
    which_total: "llama.cpp's printed model, KV and compute buffers on the largest GPU, plus the CUDA context and workspace it does not print",
    host: "Host memory",
    of_ram: "of RAM",
    ram_short: "the RAM does not hold the host share",
    split: "GPU / host split",
    layers_on_gpu: "repeating layers on the GPU",
    of: "of",
    gpu_row: "GPU",
    host_row: "Host",
    weights: "model",
    kv: "KV",
    compute: "compute",
    output: "output",
    total: "total",
    devices: "Buffers per device (as llama.cpp prints them)",
    device: "Device",
    layers: "Layers",
    cpu_host: "CPU (host)",
    kv_heading: "KV cache",
    cells: "cells",
    per_seq: "per sequence",
    swa: "sliding-window cache",
    max_ngl: "Largest -ngl that fits",
    max_ctx: "Longest context that fits",
    none: "none",
    all: "all",
    fit_heading: "Can I run it?",
    fit_intro: "Each GGUF type on",
    col_type: "Type",
    col_file: "File",
    col_full_ctx: "Longest context fully on GPU",
    col_placement: "Placement at this context",
    col_free: "GPU free",
    place_gpu: "all on GPU",
    place_experts: "experts on CPU",
    place_partial: "partial offload",
    place_none: "does not fit",
    fit_hint: "Click a row to use that type.",
    launch: "Launch",
    ollama_env: "ollama serve environment",
    modelfile: "Modelfile",
    copy: "Copy",
    copied: "Copied",
    reading: "Reading the GGUF header…",
    gguf_type: "GGUF weight type",
    unified_note: "unified memory: GPU and host share the RAM",
};

/// 简体中文.
pub static LOCAL_ZH: LocalText = LocalText {
    heading: "本地：llama.cpp",
    on_gpu: "（最大的一张 GPU）",
    which_total:
        "llama.cpp 打印的最大一张 GPU 上的模型、KV 与计算缓冲，加上它不打印的 CUDA 上下文和工作区",
    host: "主机内存",
    of_ram: "/ 内存",
    ram_short: "内存放不下主机部分",
    split: "GPU / 主机分配",
    layers_on_gpu: "个重复层在 GPU 上",
    of: "/",
    gpu_row: "GPU",
    host_row: "主机",
    weights: "模型",
    kv: "KV",
    compute: "计算",
    output: "输出",
    total: "合计",
    devices: "各设备缓冲（与 llama.cpp 打印一致）",
    device: "设备",
    layers: "层数",
    cpu_host: "CPU（主机）",
    kv_heading: "KV 缓存",
    cells: "个单元",
    per_seq: "每序列",
    swa: "滑动窗口缓存",
    max_ngl: "放得下的最大 -ngl",
    max_ctx: "放得下的最长上下文",
    none: "无",
    all: "全部",
    fit_heading: "我能运行吗？",
    fit_intro: "各 GGUF 类型，设备：",
    col_type: "类型",
    col_file: "文件",
    col_full_ctx: "完全在 GPU 上的最长上下文",
    col_placement: "此上下文下的放置",
    col_free: "GPU 剩余",
    place_gpu: "全部在 GPU",
    place_experts: "专家在 CPU",
    place_partial: "部分卸载",
    place_none: "放不下",
    fit_hint: "点击一行即可使用该类型。",
    launch: "启动命令",
    ollama_env: "ollama serve 环境变量",
    modelfile: "Modelfile",
    copy: "复制",
    copied: "已复制",
    reading: "正在读取 GGUF 文件头…",
    gguf_type: "GGUF 权重类型",
    unified_note: "统一内存：GPU 与主机共用内存",
};

impl Lang {
    /// Texts of the local view.
    pub fn local(self) -> &'static LocalText {
        match self {
            Lang::En => &LOCAL_EN,
            Lang::Zh => &LOCAL_ZH,
        }
    }
}
