//! Bundled presets: the real `config.json` files of popular models, copied from their HuggingFace
//! repositories (`https://huggingface.co/<org>/<model>/blob/main/config.json`), with the published
//! parameter counts of `INDEX.tsv` beside them. They are compiled in, so the page works offline.

/// One bundled config.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preset {
    /// Stable id used in URLs: `org__model`.
    pub id: &'static str,
    /// HuggingFace repository, `org/model`.
    pub repo: &'static str,
    /// Family heading in the preset picker.
    pub family: &'static str,
    /// The config text as published.
    pub json: &'static str,
    /// Published parameter count (INDEX.tsv), where one exists.
    pub published_params: u64,
}

impl Preset {
    /// Where the config comes from.
    pub fn source_url(&self) -> String {
        format!("https://huggingface.co/{}/blob/main/config.json", self.repo)
    }
}

/// Every bundled preset, grouped by family.
pub const PRESETS: &[Preset] = &[
    Preset {
        id: "CohereForAI__aya-23-8B",
        repo: "CohereForAI/aya-23-8B",
        family: "Cohere",
        json: include_str!("../presets/CohereForAI__aya-23-8B.json"),
        published_params: 8028033024,
    },
    Preset {
        id: "deepseek-ai__DeepSeek-V2-Lite",
        repo: "deepseek-ai/DeepSeek-V2-Lite",
        family: "DeepSeek",
        json: include_str!("../presets/deepseek-ai__DeepSeek-V2-Lite.json"),
        published_params: 15706484224,
    },
    Preset {
        id: "deepseek-ai__DeepSeek-V3",
        repo: "deepseek-ai/DeepSeek-V3",
        family: "DeepSeek",
        json: include_str!("../presets/deepseek-ai__DeepSeek-V3.json"),
        published_params: 671026419200,
    },
    Preset {
        id: "bigscience__bloom-560m",
        repo: "bigscience/bloom-560m",
        family: "Encoder & classic",
        json: include_str!("../presets/bigscience__bloom-560m.json"),
        published_params: 559214592,
    },
    Preset {
        id: "facebook__opt-125m",
        repo: "facebook/opt-125m",
        family: "Encoder & classic",
        json: include_str!("../presets/facebook__opt-125m.json"),
        published_params: 125239296,
    },
    Preset {
        id: "google-bert__bert-base-uncased",
        repo: "google-bert/bert-base-uncased",
        family: "Encoder & classic",
        json: include_str!("../presets/google-bert__bert-base-uncased.json"),
        published_params: 109482240,
    },
    Preset {
        id: "google-t5__t5-small",
        repo: "google-t5/t5-small",
        family: "Encoder & classic",
        json: include_str!("../presets/google-t5__t5-small.json"),
        published_params: 60506624,
    },
    Preset {
        id: "togethercomputer__RedPajama-INCITE-Chat-3B-v1",
        repo: "togethercomputer/RedPajama-INCITE-Chat-3B-v1",
        family: "Encoder & classic",
        json: include_str!("../presets/togethercomputer__RedPajama-INCITE-Chat-3B-v1.json"),
        published_params: 2775864320,
    },
    Preset {
        id: "google__gemma-2-2b",
        repo: "google/gemma-2-2b",
        family: "Gemma",
        json: include_str!("../presets/google__gemma-2-2b.json"),
        published_params: 2614341888,
    },
    Preset {
        id: "google__gemma-2b",
        repo: "google/gemma-2b",
        family: "Gemma",
        json: include_str!("../presets/google__gemma-2b.json"),
        published_params: 2506172416,
    },
    Preset {
        id: "google__gemma-3-1b-it",
        repo: "google/gemma-3-1b-it",
        family: "Gemma",
        json: include_str!("../presets/google__gemma-3-1b-it.json"),
        published_params: 999885952,
    },
    Preset {
        id: "01-ai__Yi-1.5-34B",
        repo: "01-ai/Yi-1.5-34B",
        family: "Llama",
        json: include_str!("../presets/01-ai__Yi-1.5-34B.json"),
        published_params: 34388917248,
    },
    Preset {
        id: "HuggingFaceTB__SmolLM2-135M-Instruct",
        repo: "HuggingFaceTB/SmolLM2-135M-Instruct",
        family: "Llama",
        json: include_str!("../presets/HuggingFaceTB__SmolLM2-135M-Instruct.json"),
        published_params: 134515008,
    },
    Preset {
        id: "meta-llama__Llama-2-70b-hf",
        repo: "meta-llama/Llama-2-70b-hf",
        family: "Llama",
        json: include_str!("../presets/meta-llama__Llama-2-70b-hf.json"),
        published_params: 68976648192,
    },
    Preset {
        id: "meta-llama__Llama-2-7b-hf",
        repo: "meta-llama/Llama-2-7b-hf",
        family: "Llama",
        json: include_str!("../presets/meta-llama__Llama-2-7b-hf.json"),
        published_params: 6738415616,
    },
    Preset {
        id: "meta-llama__Llama-3.1-405B",
        repo: "meta-llama/Llama-3.1-405B",
        family: "Llama",
        json: include_str!("../presets/meta-llama__Llama-3.1-405B.json"),
        published_params: 405853388800,
    },
    Preset {
        id: "meta-llama__Llama-3.1-8B",
        repo: "meta-llama/Llama-3.1-8B",
        family: "Llama",
        json: include_str!("../presets/meta-llama__Llama-3.1-8B.json"),
        published_params: 8030261248,
    },
    Preset {
        id: "meta-llama__Llama-3.2-1B-Instruct",
        repo: "meta-llama/Llama-3.2-1B-Instruct",
        family: "Llama",
        json: include_str!("../presets/meta-llama__Llama-3.2-1B-Instruct.json"),
        published_params: 1235814400,
    },
    Preset {
        id: "TinyLlama__TinyLlama-1.1B-Chat-v1.0",
        repo: "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
        family: "Llama",
        json: include_str!("../presets/TinyLlama__TinyLlama-1.1B-Chat-v1.0.json"),
        published_params: 1100048384,
    },
    Preset {
        id: "mistralai__Mistral-7B-v0.3",
        repo: "mistralai/Mistral-7B-v0.3",
        family: "Mistral",
        json: include_str!("../presets/mistralai__Mistral-7B-v0.3.json"),
        published_params: 7248023552,
    },
    Preset {
        id: "mistralai__Mixtral-8x7B-v0.1",
        repo: "mistralai/Mixtral-8x7B-v0.1",
        family: "Mistral",
        json: include_str!("../presets/mistralai__Mixtral-8x7B-v0.1.json"),
        published_params: 46702792704,
    },
    Preset {
        id: "llava-hf__llava-1.5-7b-hf",
        repo: "llava-hf/llava-1.5-7b-hf",
        family: "Multimodal",
        json: include_str!("../presets/llava-hf__llava-1.5-7b-hf.json"),
        published_params: 7063427072,
    },
    Preset {
        id: "allenai__OLMo-2-1124-7B",
        repo: "allenai/OLMo-2-1124-7B",
        family: "OLMo",
        json: include_str!("../presets/allenai__OLMo-2-1124-7B.json"),
        published_params: 7298617344,
    },
    Preset {
        id: "openai-community__gpt2",
        repo: "openai-community/gpt2",
        family: "OpenAI",
        json: include_str!("../presets/openai-community__gpt2.json"),
        published_params: 124439808,
    },
    Preset {
        id: "openai__gpt-oss-20b",
        repo: "openai/gpt-oss-20b",
        family: "OpenAI",
        json: include_str!("../presets/openai__gpt-oss-20b.json"),
        published_params: 20914757184,
    },
    Preset {
        id: "microsoft__Phi-3.5-mini-instruct",
        repo: "microsoft/Phi-3.5-mini-instruct",
        family: "Phi",
        json: include_str!("../presets/microsoft__Phi-3.5-mini-instruct.json"),
        published_params: 3821079552,
    },
    Preset {
        id: "microsoft__phi-4",
        repo: "microsoft/phi-4",
        family: "Phi",
        json: include_str!("../presets/microsoft__phi-4.json"),
        published_params: 14659507200,
    },
    Preset {
        id: "Qwen__Qwen1.5-MoE-A2.7B",
        repo: "Qwen/Qwen1.5-MoE-A2.7B",
        family: "Qwen",
        json: include_str!("../presets/Qwen__Qwen1.5-MoE-A2.7B.json"),
        published_params: 14315784192,
    },
    Preset {
        id: "Qwen__Qwen2-0.5B-Instruct",
        repo: "Qwen/Qwen2-0.5B-Instruct",
        family: "Qwen",
        json: include_str!("../presets/Qwen__Qwen2-0.5B-Instruct.json"),
        published_params: 494032768,
    },
    Preset {
        id: "Qwen__Qwen2-72B",
        repo: "Qwen/Qwen2-72B",
        family: "Qwen",
        json: include_str!("../presets/Qwen__Qwen2-72B.json"),
        published_params: 72706203648,
    },
    Preset {
        id: "Qwen__Qwen2.5-3B",
        repo: "Qwen/Qwen2.5-3B",
        family: "Qwen",
        json: include_str!("../presets/Qwen__Qwen2.5-3B.json"),
        published_params: 3085938688,
    },
    Preset {
        id: "Qwen__Qwen2.5-7B",
        repo: "Qwen/Qwen2.5-7B",
        family: "Qwen",
        json: include_str!("../presets/Qwen__Qwen2.5-7B.json"),
        published_params: 7615616512,
    },
    Preset {
        id: "Qwen__Qwen3-0.6B",
        repo: "Qwen/Qwen3-0.6B",
        family: "Qwen",
        json: include_str!("../presets/Qwen__Qwen3-0.6B.json"),
        published_params: 596049920,
    },
    Preset {
        id: "Qwen__Qwen3-30B-A3B",
        repo: "Qwen/Qwen3-30B-A3B",
        family: "Qwen",
        json: include_str!("../presets/Qwen__Qwen3-30B-A3B.json"),
        published_params: 30532122624,
    },
    Preset {
        id: "Qwen__Qwen3-32B",
        repo: "Qwen/Qwen3-32B",
        family: "Qwen",
        json: include_str!("../presets/Qwen__Qwen3-32B.json"),
        published_params: 32762123264,
    },
    Preset {
        id: "Qwen__Qwen3-8B",
        repo: "Qwen/Qwen3-8B",
        family: "Qwen",
        json: include_str!("../presets/Qwen__Qwen3-8B.json"),
        published_params: 8190735360,
    },
    Preset {
        id: "state-spaces__mamba-130m-hf",
        repo: "state-spaces/mamba-130m-hf",
        family: "State-space",
        json: include_str!("../presets/state-spaces__mamba-130m-hf.json"),
        published_params: 129135360,
    },
];

/// The preset with this id.
pub fn find(id: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.id == id)
}
