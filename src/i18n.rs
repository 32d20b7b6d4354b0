//! English and Simplified Chinese text of the page. Every string shown is a field of [`Strings`], so a
//! missing translation is a compile error. The language is picked from the browser, can be switched,
//! and is remembered (see `prefs.rs`).

use crate::load::LoadError;
use vram_core::spec::{Component, ModelKind};

/// A language of the page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Lang {
    /// English.
    #[default]
    En,
    /// 简体中文.
    Zh,
}

impl Lang {
    /// BCP 47 tag, used for `<html lang>`, the URL and localStorage.
    pub fn tag(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Zh => "zh-CN",
        }
    }

    /// Parses a stored tag or a browser language (`zh`, `zh-CN`, `zh-Hans-CN`, `en-US`, ...).
    pub fn from_tag(tag: &str) -> Option<Lang> {
        let lower = tag.to_ascii_lowercase();
        if lower.starts_with("zh") {
            Some(Lang::Zh)
        } else if lower.starts_with("en") {
            Some(Lang::En)
        } else {
            None
        }
    }

    /// The first supported language in the browser's preference list, English otherwise.
    pub fn from_browser<'a>(languages: impl IntoIterator<Item = &'a str>) -> Lang {
        languages
            .into_iter()
            .find_map(Lang::from_tag)
            .unwrap_or_default()
    }

    /// The text of the page in this language.
    pub fn strings(self) -> &'static Strings {
        match self {
            Lang::En => &EN,
            Lang::Zh => &ZH,
        }
    }

    /// A parameter count in words: `8.03 B` in English, `80.30 亿` in Chinese.
    pub fn format_count(self, n: u64) -> String {
        match self {
            Lang::En => vram_core::units::format_count(n),
            Lang::Zh => {
                let f = n as f64;
                if n >= 100_000_000 {
                    format!("{:.2} 亿", f / 1e8)
                } else if n >= 10_000 {
                    format!("{:.1} 万", f / 1e4)
                } else {
                    n.to_string()
                }
            }
        }
    }

    /// Label of a parameter-breakdown row.
    pub fn component(self, c: Component) -> &'static str {
        let zh = self == Lang::Zh;
        match c {
            Component::Embedding => pick(zh, "Token embeddings", "词嵌入"),
            Component::PositionEmbedding => pick(zh, "Position embeddings", "位置嵌入"),
            Component::Attention => pick(zh, "Attention", "注意力"),
            Component::Mlp => pick(zh, "MLP", "前馈网络 (MLP)"),
            Component::Experts => pick(zh, "Routed experts", "路由专家"),
            Component::SharedExperts => pick(zh, "Shared experts", "共享专家"),
            Component::Router => pick(zh, "Router", "路由器"),
            Component::Mixer => pick(zh, "State-space mixer", "状态空间混合层"),
            Component::Norm => pick(zh, "Norms", "归一化"),
            Component::Bias => pick(zh, "Biases", "偏置"),
            Component::FinalNorm => pick(zh, "Final norm", "最终归一化"),
            Component::LmHead => pick(zh, "Output head (lm_head)", "输出头 (lm_head)"),
            Component::Head => pick(zh, "Pooler / heads", "池化层 / 头"),
            Component::Vision => pick(zh, "Vision tower", "视觉塔"),
            Component::Projector => pick(zh, "Multimodal projector", "多模态投影"),
        }
    }

    /// Label of a model structure.
    pub fn kind(self, k: ModelKind) -> &'static str {
        let zh = self == Lang::Zh;
        match k {
            ModelKind::DecoderOnly => pick(zh, "decoder-only", "仅解码器"),
            ModelKind::EncoderDecoder => pick(zh, "encoder–decoder", "编码器–解码器"),
            ModelKind::EncoderOnly => pick(zh, "encoder-only", "仅编码器"),
            ModelKind::StateSpace => pick(zh, "state-space", "状态空间"),
        }
    }

    /// The message for a load failure (the core's own message is quoted as it is).
    pub fn load_error(self, e: &LoadError) -> String {
        let zh = self == Lang::Zh;
        match e {
            LoadError::TooLarge { name, size_bytes } => {
                let mib = *size_bytes as f64 / (1u64 << 20) as f64;
                if zh {
                    format!("{name} 有 {mib:.1} MiB，未读取：config.json 只有几 KB，超过 4 MiB 的文件会被拒绝。")
                } else {
                    format!("{name} is {mib:.1} MiB and was not read: a config.json is a few KB; files over 4 MiB are refused.")
                }
            }
            LoadError::ChunkUnavailable => {
                if zh {
                    "无法下载页面读取和显示模型的部分（离线？）。请检查网络后重试；首次访问后页面可离线使用。".to_string()
                } else {
                    "The part of the page that reads and shows models could not be downloaded (offline?). Check the connection and try again; after the first visit the page works offline.".to_string()
                }
            }
            LoadError::Unreadable { name } => {
                if zh {
                    format!("浏览器无法读取 {name}。")
                } else {
                    format!("The browser could not read {name}.")
                }
            }
            LoadError::Config { name, error } => match (name, zh) {
                (Some(n), false) => format!("{n}: {error}"),
                (Some(n), true) => format!("{n}：{error}"),
                (None, _) => error.to_string(),
            },
            LoadError::ReportConfigMissing { name } => {
                if zh {
                    format!("测量报告的配置 {name:?} 不是内置模型：请先拖入该 config.json，再拖入报告。")
                } else {
                    format!("The report measured config {name:?}, which is not bundled: drop that config.json first, then the report.")
                }
            }
            LoadError::Gguf { name, error } => {
                if zh {
                    format!("{name}：无法读取 GGUF 文件头：{error}")
                } else {
                    format!("{name}: could not read the GGUF header: {error}")
                }
            }
            LoadError::Safetensors {
                name,
                error,
                file_bytes,
            } => {
                let past_end =
                    match error {
                        vram_core::safetensors_file::SafetensorsError::NeedMore {
                            needed_bytes,
                        } if needed_bytes > file_bytes => Some(*file_bytes),
                        _ => None,
                    };
                match (zh, past_end) {
                    (false, None) => format!("{name}: could not read the safetensors header: {error}"),
                    (false, Some(n)) => format!(
                        "{name}: could not read the safetensors header: {error}, but the file has only {} bytes (cut off, or not a safetensors file)",
                        vram_core::units::group_thousands(n)
                    ),
                    (true, None) => format!("{name}：无法读取 safetensors 文件头：{error}"),
                    (true, Some(n)) => format!(
                        "{name}：无法读取 safetensors 文件头：{error}，但文件只有 {} 字节（文件被截断，或不是 safetensors 文件）",
                        vram_core::units::group_thousands(n)
                    ),
                }
            }
            LoadError::Checkpoint { problem } => {
                use crate::load::CheckpointProblem as P;
                match (problem, zh) {
                    (P::SeveralConfigs { names }, false) => format!(
                        "Expected one config.json with the safetensors files, found {}: {}.",
                        names.len(),
                        names.join(", ")
                    ),
                    (P::SeveralConfigs { names }, true) => format!(
                        "与 safetensors 文件一起应只有一个 config.json，却有 {} 个：{}。",
                        names.len(),
                        names.join("、")
                    ),
                    (P::Unexpected { name }, false) => format!(
                        "{name} is not a config.json, a .safetensors file or a model.safetensors.index.json; give a checkpoint's files together."
                    ),
                    (P::Unexpected { name }, true) => format!(
                        "{name} 不是 config.json、.safetensors 文件或 model.safetensors.index.json；请同时给出同一检查点的文件。"
                    ),
                    (P::MissingShards { index, named, given }, false) => format!(
                        "{index}: the index names {named} shard files, {given} given; give every shard (or only the index, for the weight bytes)."
                    ),
                    (P::MissingShards { index, named, given }, true) => format!(
                        "{index}：索引列出 {named} 个分片文件，只给出了 {given} 个；请给出全部分片（或只给索引，得到权重字节数）。"
                    ),
                }
            }
            LoadError::UnknownPreset { id } => {
                if zh {
                    format!("没有名为 {id:?} 的预设。")
                } else {
                    format!("There is no preset {id:?}.")
                }
            }
        }
    }
}

fn pick(zh: bool, en: &'static str, zh_text: &'static str) -> &'static str {
    if zh {
        zh_text
    } else {
        en
    }
}

/// Every fixed string of the page.
#[derive(Debug)]
pub struct Strings {
    /// Page title.
    pub title: &'static str,
    /// Tagline under the title.
    pub tagline: &'static str,
    /// Language switch label.
    pub language: &'static str,
    /// Drop zone main line.
    pub drop_title: &'static str,
    /// Drop zone second line.
    pub drop_hint: &'static str,
    /// Overlay while dragging a file over the page.
    pub drop_overlay: &'static str,
    /// Paste box label.
    pub paste_label: &'static str,
    /// Paste box placeholder.
    pub paste_placeholder: &'static str,
    /// Paste load button.
    pub paste_button: &'static str,
    /// Preset search label.
    pub preset_search: &'static str,
    /// Preset select label.
    pub preset_label: &'static str,
    /// First option of the preset select.
    pub preset_choose: &'static str,
    /// Heading of the error box.
    pub error_heading: &'static str,
    /// Shown while no model is loaded.
    pub empty_state: &'static str,
    /// Model summary heading.
    pub summary_heading: &'static str,
    /// Summary labels.
    pub model_type: &'static str,
    /// Summary label.
    pub structure: &'static str,
    /// Summary label.
    pub layers: &'static str,
    /// Summary label.
    pub hidden_size: &'static str,
    /// Summary label.
    pub heads: &'static str,
    /// Summary label.
    pub head_dim: &'static str,
    /// Summary label.
    pub vocab: &'static str,
    /// Summary label.
    pub context: &'static str,
    /// Summary label.
    pub experts: &'static str,
    /// Summary label.
    pub tied_embeddings: &'static str,
    /// Yes.
    pub yes: &'static str,
    /// No.
    pub no: &'static str,
    /// Parameter table heading.
    pub params_heading: &'static str,
    /// Column header.
    pub component: &'static str,
    /// Column header.
    pub parameters: &'static str,
    /// Column header.
    pub share: &'static str,
    /// Total row.
    pub total: &'static str,
    /// Active-per-token row.
    pub active: &'static str,
    /// Published count line.
    pub published: &'static str,
    /// Label of a preset's reference count when it is transformers' own (only a rounded figure is
    /// published).
    pub transformers_count: &'static str,
    /// Label of how a bundled config that is not a verbatim copy was obtained.
    pub config_origin: &'static str,
    /// Warnings heading.
    pub warnings: &'static str,
    /// Source label for files.
    pub from_file: &'static str,
    /// Source label for presets.
    pub from_preset: &'static str,
    /// Source label for pasted text.
    pub from_paste: &'static str,
}

/// English.
pub static EN: Strings = Strings {
    title: "vram — GPU memory calculator",
    tagline: "Drop a HuggingFace config.json and see exactly how many parameters it has and how much GPU memory training and inference need. Everything runs in your browser.",
    language: "Language",
    drop_title: "Drop a config.json or a .gguf anywhere, or click to open one",
    drop_hint: "Press Enter to choose a file. Of a .gguf only the header is read (a split model: give all its parts together); give a config.json with the model's .safetensors files for the exact count from their headers; other files over 4 MiB are refused.",
    drop_overlay: "Drop the config.json to load it",
    paste_label: "Or paste config.json text",
    paste_placeholder: "{ \"model_type\": \"llama\", \"hidden_size\": 4096, … }",
    paste_button: "Load pasted JSON",
    preset_search: "Search presets",
    preset_label: "Bundled models",
    preset_choose: "Choose a model…",
    error_heading: "Could not load this input",
    empty_state: "No model loaded yet: drop a config.json, paste one, or choose a bundled model.",
    summary_heading: "Model",
    model_type: "model_type",
    structure: "Structure",
    layers: "Layers",
    hidden_size: "Hidden size",
    heads: "Attention heads (KV heads)",
    head_dim: "Head dimension",
    vocab: "Vocabulary",
    context: "Max context",
    experts: "Experts (per token)",
    tied_embeddings: "Tied embeddings",
    yes: "yes",
    no: "no",
    params_heading: "Parameters",
    component: "Component",
    parameters: "Parameters",
    share: "Share",
    total: "Total",
    active: "Active per token",
    published: "Published count",
    transformers_count: "transformers' own count",
    config_origin: "Config text",
    warnings: "Assumptions made",
    from_file: "file",
    from_preset: "preset",
    from_paste: "pasted",
};

/// 简体中文.
pub static ZH: Strings = Strings {
    title: "vram — GPU 显存计算器",
    tagline: "拖入 HuggingFace 的 config.json，即可看到模型的精确参数量，以及训练和推理所需的 GPU 显存。全部计算在浏览器中完成。",
    language: "语言",
    drop_title: "将 config.json 或 .gguf 拖到页面任意位置，或点击打开",
    drop_hint: "按回车键选择文件。.gguf 只读取文件头（分卷模型请同时选择全部分卷）；将 config.json 与模型的 .safetensors 文件一起选择，可按文件头得到精确参数量；其他超过 4 MiB 的文件会被拒绝。",
    drop_overlay: "松开鼠标即可加载 config.json",
    paste_label: "或粘贴 config.json 文本",
    paste_placeholder: "{ \"model_type\": \"llama\", \"hidden_size\": 4096, … }",
    paste_button: "加载粘贴的 JSON",
    preset_search: "搜索预设",
    preset_label: "内置模型",
    preset_choose: "选择一个模型…",
    error_heading: "无法加载此输入",
    empty_state: "尚未加载模型：拖入或粘贴 config.json，或选择一个内置模型。",
    summary_heading: "模型",
    model_type: "model_type",
    structure: "结构",
    layers: "层数",
    hidden_size: "隐藏维度",
    heads: "注意力头（KV 头）",
    head_dim: "头维度",
    vocab: "词表大小",
    context: "最大上下文",
    experts: "专家数（每 token 激活）",
    tied_embeddings: "共享输入输出嵌入",
    yes: "是",
    no: "否",
    params_heading: "参数量",
    component: "组件",
    parameters: "参数",
    share: "占比",
    total: "总计",
    active: "每 token 激活",
    published: "官方公布",
    transformers_count: "transformers 实际构建的参数量",
    config_origin: "配置来源",
    warnings: "所做的假设",
    from_file: "文件",
    from_preset: "预设",
    from_paste: "粘贴",
};
