//! Share links, exports with context and launch lines: pure functions, tested natively.

use vram_core::scenario::{
    AttentionImpl, BaseQuant, Dtype, Engine, FlashAttn, Lora, LoraTargets, MixedPrecision,
    Optimizer, ZeroStage,
};
use vram_web::compute::{Breakdown, BreakdownRow};
use vram_web::export;
use vram_web::i18n::Lang;
use vram_web::launch::{launch_lines, LaunchBlock, LaunchModel};
use vram_web::page_scenario::{GpuChoice, PageScenario, Task};
use vram_web::share::{self, SharedState, LOCAL_ALIASES, SCENARIO_ALIASES, VERDICT_FRAGMENT};

const PRESET: &str = "meta-llama__Llama-3.1-8B";

/// capture → to_query → from_query → page().
fn round_trip(page: &PageScenario, preset: Option<&str>, config: Option<&str>) -> SharedState {
    let q = SharedState::capture(page, preset, config, Lang::Zh).to_query();
    let back = SharedState::from_query(&q).expect("the link parses");
    assert_eq!(back.page(), *page, "page after round trip of {q}");
    assert_eq!(back.lang, "zh-CN");
    back
}

fn vllm_tp2_fp8_page() -> PageScenario {
    let mut p = PageScenario::default();
    p.infer.serving.tensor_parallel_size = 2;
    p.infer.kv_dtype = Some("fp8".into());
    p.infer.seq_len = 32768;
    p.infer.serving.max_model_len = 32768;
    p
}

fn qlora_page() -> PageScenario {
    let mut p = PageScenario {
        task: Task::Finetune,
        ..PageScenario::default()
    };
    p.finetune.lora = Some(Lora {
        r: 16,
        alpha: 32,
        targets: LoraTargets::AllLinear,
        base_quant: BaseQuant::Nf4,
    });
    p.finetune.batch = 4;
    p.finetune.grad_accumulation = 4;
    p.finetune.optimizer = Optimizer::Adamw8bit;
    p
}

fn zero3_offload_page() -> PageScenario {
    let mut p = PageScenario {
        task: Task::Train,
        ..PageScenario::default()
    };
    p.train.zero = ZeroStage(3);
    p.train.offload_optimizer = true;
    p.train.offload_params = true;
    p.train.gpus = 8;
    p.train.batch = 2;
    p.train.grad_accumulation = 8;
    p
}

// ---------------------------------------------------------------- share links

#[test]
fn serve_pages_round_trip() {
    let mut p = vllm_tp2_fp8_page();
    p.infer.weights = Some("awq-4bit".into());
    p.infer.serving.gpu_memory_utilization = 0.95;
    p.infer.serving.max_num_seqs = 64;
    p.gpu = GpuChoice::Catalog("a100-80");
    round_trip(&p, Some(PRESET), None);

    let mut p = PageScenario::default();
    p.infer.engine = Engine::LlamaCpp;
    p.infer.weights = Some("q4_k_m".into());
    p.infer.kv_dtype = Some("q8_0".into());
    p.infer.llama_cpp.n_gpu_layers = Some(20);
    p.infer.llama_cpp.flash_attn = FlashAttn::Off;
    p.infer.llama_cpp.tensor_split = vec![0.75, 0.25];
    p.infer.llama_cpp.kv_dtype_v = Some("q4_0".into());
    p.local.ram_bytes = 32 << 30;
    p.local.display = true;
    p.local.free_bytes = Some(22_000_000_000);
    p.gpu = GpuChoice::Catalog("rtx4090");
    round_trip(&p, Some(PRESET), None);

    // Transformers with a custom GPU size.
    let mut p = PageScenario::default();
    p.infer.engine = Engine::Transformers;
    p.infer.attention = AttentionImpl::Eager;
    p.infer.kv_dtype = Some("int4".into());
    p.infer.batch = 3;
    p.gpu = GpuChoice::Custom(24 << 30);
    round_trip(&p, Some(PRESET), None);
}

#[test]
fn finetune_pages_round_trip() {
    round_trip(&qlora_page(), Some(PRESET), None);

    let mut p = qlora_page();
    p.finetune.lora = Some(Lora {
        r: 64,
        alpha: 128,
        targets: LoraTargets::Modules(vec!["q_proj".into(), "v_proj".into()]),
        base_quant: BaseQuant::Int8,
    });
    p.finetune.gpus = 2;
    p.finetune.zero = ZeroStage(2);
    p.finetune.grad_checkpointing = false;
    round_trip(&p, Some(PRESET), None);

    // LoRA removed: full fine-tuning in the fine-tune tab.
    let mut p = qlora_page();
    p.finetune.lora = None;
    round_trip(&p, Some(PRESET), None);
}

#[test]
fn train_pages_round_trip() {
    round_trip(&zero3_offload_page(), Some(PRESET), None);

    let mut p = zero3_offload_page();
    p.train.dtype = Dtype::Bf16;
    p.train.mixed_precision = MixedPrecision::None;
    p.train.optimizer = Optimizer::Lion;
    p.train.attention = AttentionImpl::Flash;
    // LoRA where the default has none: the whole object travels leaf by leaf.
    p.train.lora = Some(Lora {
        r: 8,
        alpha: 16,
        targets: LoraTargets::Default,
        base_quant: BaseQuant::None,
    });
    p.gpu = GpuChoice::Custom(123_456_789_012);
    // Settings of the other tasks travel too.
    p.infer.serving.tensor_parallel_size = 4;
    p.finetune.seq_len = 8192;
    round_trip(&p, Some(PRESET), None);
}

#[test]
fn parallel_layouts_round_trip() {
    // Issue 10: a Megatron layout and vLLM pipeline parallelism travel in the link.
    let mut p = PageScenario {
        task: Task::Train,
        ..PageScenario::default()
    };
    p.train.gpus = 16;
    p.train.layout = vram_core::layout::Layout {
        framework: vram_core::layout::Framework::Megatron,
        tp: 2,
        pp: 4,
        sequence_parallel: true,
        distributed_optimizer: true,
        global_batch: 64,
        ..vram_core::layout::Layout::default()
    };
    p.infer.serving.pipeline_parallel_size = 2;
    round_trip(&p, Some(PRESET), None);
}

#[test]
fn pasted_config_travels_minified_and_url_safe() {
    let text = "{\n  \"model_type\": \"llama\",\n  \"hidden_size\": 4096,\n  \"name\": \"a/b ü?&=#+\"\n}\n";
    let p = qlora_page();
    let q = SharedState::capture(&p, None, Some(text), Lang::Zh).to_query();
    let c = q
        .split('&')
        .find_map(|kv| kv.strip_prefix("?c=").or_else(|| kv.strip_prefix("c=")))
        .expect("a c= pair");
    assert!(c
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
    let back = round_trip(&p, None, Some(text));
    let config = back.config.expect("the config comes back");
    assert!(!config.contains('\n'), "minified: {config}");
    let a: serde_json::Value = serde_json::from_str(text).unwrap();
    let b: serde_json::Value = serde_json::from_str(&config).unwrap();
    assert_eq!(a, b);
    assert_eq!(back.preset, None);
    assert_eq!(
        share::decode_config(&share::encode_config("x")),
        Some("x".into())
    );
    // A preset wins over a config.
    let q = SharedState::capture(&p, Some(PRESET), Some(text), Lang::En).to_query();
    assert!(!q.contains("c="));
    let back = SharedState::from_query(&q).unwrap();
    assert_eq!(back.preset.as_deref(), Some(PRESET));
    assert_eq!(back.config, None);
}

#[test]
fn link_sizes() {
    let q = SharedState::capture(&PageScenario::default(), Some(PRESET), None, Lang::En).to_query();
    assert_eq!(q, "?p=meta-llama__Llama-3.1-8B&t=serve&l=en&g=h100-80");
    assert!(q.len() < 80, "{} chars", q.len());

    // Three settings changed (TP, KV type, context; the page moves max_model_len with the context).
    let q = SharedState::capture(&vllm_tp2_fp8_page(), Some(PRESET), None, Lang::En).to_query();
    assert_eq!(
        q,
        "?p=meta-llama__Llama-3.1-8B&t=serve&l=en&g=h100-80&sv.sl=32768&sv.kv=fp8&sv.tp=2&sv.ml=32768"
    );
    assert!(q.len() < 200, "{} chars", q.len());

    // Three settings of a ZeRO page.
    let mut p = PageScenario {
        task: Task::Train,
        ..PageScenario::default()
    };
    p.train.zero = ZeroStage(3);
    p.train.offload_params = true;
    p.train.gpus = 8;
    let q = SharedState::capture(&p, Some(PRESET), None, Lang::Zh).to_query();
    assert_eq!(
        q,
        "?p=meta-llama__Llama-3.1-8B&t=train&l=zh-CN&g=h100-80&tr.n=8&tr.z=3&tr.op=true"
    );
    assert!(q.len() < 200, "{} chars", q.len());
}

#[test]
fn verdict_fragment_is_appended_and_ignored_on_load() {
    let s = SharedState::capture(&vllm_tp2_fp8_page(), Some(PRESET), None, Lang::En);
    let link = s.to_query_with_fragment();
    assert_eq!(VERDICT_FRAGMENT, "#verdict");
    assert!(link.ends_with("#verdict"));
    assert_eq!(link, format!("{}#verdict", s.to_query()));
    assert_eq!(SharedState::from_query(&link), Some(s));
}

#[test]
fn old_links_still_open() {
    // A link of the former format: `mode` = both, no fine-tune scenario, partial scenarios.
    let json = r#"{"preset":"meta-llama__Llama-3.1-8B","mode":"both","train":{"batch":4,"seq_len":1024},"infer":{"mode":"infer","dtype":"bf16","mixed_precision":"none","seq_len":8192,"engine":"vllm"},"gpu":"a100-80","lang":"zh-CN"}"#;
    let mut q = String::from("?s=");
    for b in json.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            q.push(b as char);
        } else {
            q.push_str(&format!("%{b:02X}"));
        }
    }
    let s = SharedState::from_query(&q).expect("old link parses");
    assert_eq!(s.preset.as_deref(), Some(PRESET));
    assert_eq!(s.lang, "zh-CN");
    let p = s.page();
    assert_eq!(p.task, Task::Serve);
    assert_eq!(p.train.batch, 4);
    assert_eq!(p.train.seq_len, 1024);
    assert_eq!(p.infer.seq_len, 8192);
    assert_eq!(p.infer.engine, Engine::Vllm);
    assert_eq!(p.finetune, vram_web::page_scenario::finetune_default());
    assert_eq!(p.gpu, GpuChoice::Catalog("a100-80"));

    for (mode, task) in [
        ("train", Task::Train),
        ("infer", Task::Serve),
        ("both", Task::Serve),
    ] {
        let q = format!("?s=%7B%22mode%22%3A%22{mode}%22%2C%22train%22%3A%7B%7D%2C%22infer%22%3A%7B%7D%2C%22gpu%22%3A%22h100-80%22%2C%22lang%22%3A%22en%22%7D");
        let s = SharedState::from_query(&q).expect("old link parses");
        assert_eq!(s.page().task, task, "{mode}");
    }

    // The former writer still exists and its output still reads.
    let s = SharedState::capture(&zero3_offload_page(), None, Some("{}"), Lang::En);
    let back = SharedState::from_query(&s.to_legacy_query()).unwrap();
    assert_eq!(back, s);
}

#[test]
fn bad_values_fall_back_to_defaults() {
    let d = PageScenario::default();
    // Not a link of ours.
    for q in [
        "",
        "?",
        "?utm_source=x",
        "?s=",
        "?s=%7B",
        "?s=%ZZ",
        "?s=%E2%28",
        "#verdict",
    ] {
        let s = SharedState::from_query(q);
        assert!(s.is_none(), "{q}: {s:?}");
    }
    // Ours, with values that do not read: each falls back on its own.
    let s = SharedState::from_query(
        "?t=nonsense&g=nonexistent&sv.bs=abc&sv.sl=0&sv.tp=2&sv.gu=7&sv.e=warp&tr.op=true&ft.r=-3&ft.lo=5&lm.ram=x&c=!!!&zz.q=1",
    )
    .expect("ours");
    let p = s.page();
    assert_eq!(p.task, Task::Serve);
    assert_eq!(p.gpu, d.gpu);
    assert_eq!(p.infer.batch, d.infer.batch);
    assert_eq!(p.infer.seq_len, d.infer.seq_len);
    assert_eq!(
        p.infer.serving.tensor_parallel_size, 2,
        "the good leaf stays"
    );
    assert_eq!(
        p.infer.serving.gpu_memory_utilization, 0.0,
        "the release's default"
    );
    assert_eq!(p.infer.engine, Engine::Vllm);
    assert!(!p.train.offload_params, "offload_params needs ZeRO 3");
    assert_eq!(p.finetune, d.finetune);
    assert_eq!(p.local, d.local);
    assert_eq!(s.config, None);
    assert_eq!(s.lang, "");
    // Custom GPU sizes that do not parse.
    for g in ["custom:abc", "custom:0", "custom:", "custom:-5"] {
        let s = SharedState::from_query(&format!("?g={g}")).unwrap();
        assert_eq!(s.page().gpu, GpuChoice::Catalog("h100-80"), "{g}");
    }
    // offload_params is kept when the same link sets ZeRO 3 (applied in field order).
    let s = SharedState::from_query("?tr.op=true&tr.z=3").unwrap();
    assert!(s.page().train.offload_params);
    assert_eq!(s.page().train.zero, ZeroStage(3));
}

#[test]
fn random_queries_never_panic() {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (x >> 33) as u32
    };
    const ALPHABET: &[u8] = b"?&=.%#+sSvftrlgpcmnzo0123456789abcdefABCDEF{}[]\":,-_~ \xff";
    let keys = [
        "p",
        "c",
        "t",
        "l",
        "g",
        "s",
        "sv.bs",
        "sv.tp",
        "sv.lc.ts",
        "ft.lo",
        "ft.r",
        "ft.lt",
        "tr.lo.r",
        "tr.z",
        "tr.op",
        "lm.ram",
        "lm.free",
        "sv.serving.x",
        "ft.lt.modules",
    ];
    for i in 0..3000 {
        let len = (next() % 120) as usize;
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                if i % 2 == 0 {
                    (next() & 0xff) as u8
                } else {
                    ALPHABET[next() as usize % ALPHABET.len()]
                }
            })
            .collect();
        let mut q = String::from_utf8_lossy(&bytes).into_owned();
        if i % 3 == 0 {
            // Known keys with garbage values.
            let k = keys[next() as usize % keys.len()];
            q = format!("?{k}={q}&{}={q}", keys[next() as usize % keys.len()]);
        }
        if let Some(s) = SharedState::from_query(&q) {
            let p = s.page();
            let again =
                SharedState::capture(&p, s.preset.as_deref(), s.config.as_deref(), Lang::En);
            let back = SharedState::from_query(&again.to_query()).expect("our own link parses");
            assert_eq!(back.page(), p, "query {q:?}");
        }
    }
}

#[test]
fn aliases_are_unique_and_never_field_names() {
    let fields: Vec<String> = match serde_json::to_value(vram_core::Scenario::default()) {
        Ok(serde_json::Value::Object(m)) => m.keys().cloned().collect(),
        _ => panic!("scenario serializes as an object"),
    };
    for table in [SCENARIO_ALIASES, LOCAL_ALIASES] {
        for (i, (a, p)) in table.iter().enumerate() {
            assert!(!a.contains('.'), "{a}");
            assert!(
                !fields.contains(&a.to_string()),
                "alias {a} is a field name"
            );
            for (b, q) in &table[i + 1..] {
                assert_ne!(a, b);
                assert_ne!(p, q);
            }
        }
    }
    assert_eq!(
        share::scenario_default("sv"),
        Some(vram_web::page_scenario::serve_default())
    );
    assert_eq!(share::scenario_default("x"), None);
}

// ---------------------------------------------------------------- exports

fn small_breakdown() -> Breakdown {
    Breakdown {
        phases: vec!["load".into(), "forward".into()],
        rows: vec![
            BreakdownRow {
                key: "weights".into(),
                cells: vec![1 << 30, 1 << 30],
                terms: vec![],
            },
            BreakdownRow {
                key: "activations".into(),
                cells: vec![0, 3 << 29],
                terms: vec![],
            },
        ],
        peaks: vec![1 << 30, 5 << 29],
        other_terms: vec![],
    }
}

fn custom_gpu_page() -> PageScenario {
    let mut p = qlora_page();
    p.gpu = GpuChoice::Custom(24 << 30);
    p
}

#[test]
fn csv_starts_with_context_and_names_bytes() {
    let csv = export::breakdown_csv_with_context(
        "Llama-3.1-8B",
        &custom_gpu_page(),
        "train",
        &small_breakdown(),
    );
    let expected = "\
# model,Llama-3.1-8B
# gpu,24.00 GiB
# gpu_usable_bytes,25769803776
# task,finetune
# batch_per_gpu_sequences,4
# seq_len_tokens,2048
# grad_accumulation,4
# dtype,bf16
# mixed_precision,bf16
# optimizer,adamw-8bit
# grad_checkpointing,yes
# attention,sdpa
# lora_r,16
# lora_alpha,32
# lora_targets,all-linear
# lora_base,nf4
# gpus,1
# zero_stage,0
# offload_optimizer,no
# offload_params,no
mode,component,load_bytes,forward_bytes
train,weights,1073741824,1073741824
train,activations,0,1610612736
train,peak_allocated,1073741824,2684354560
";
    assert_eq!(csv, expected);
    // A name with a comma is quoted.
    let csv = export::breakdown_csv_with_context(
        "a,\"b\"",
        &custom_gpu_page(),
        "train",
        &small_breakdown(),
    );
    assert!(csv.starts_with("# model,\"a,\"\"b\"\"\"\n"), "{csv}");
    // The bare table is unchanged.
    assert!(export::breakdown_csv("train", &small_breakdown())
        .starts_with("mode,component,load,forward\n"));
}

#[test]
fn markdown_starts_with_context_in_gib() {
    let md = export::breakdown_markdown_with_context(
        "Llama-3.1-8B",
        &custom_gpu_page(),
        "Fine-tuning",
        &small_breakdown(),
    );
    let expected = "\
## Llama-3.1-8B · finetune · 24.00 GiB

| setting | value |
|---|---|
| model | Llama-3.1-8B |
| gpu | 24.00 GiB |
| gpu_usable (GiB) | 24.00 |
| task | finetune |
| batch_per_gpu_sequences | 4 |
| seq_len_tokens | 2048 |
| grad_accumulation | 4 |
| dtype | bf16 |
| mixed_precision | bf16 |
| optimizer | adamw-8bit |
| grad_checkpointing | yes |
| attention | sdpa |
| lora_r | 16 |
| lora_alpha | 32 |
| lora_targets | all-linear |
| lora_base | nf4 |
| gpus | 1 |
| zero_stage | 0 |
| offload_optimizer | no |
| offload_params | no |

### Fine-tuning

| component | load (GiB) | forward (GiB) |
|---|---:|---:|
| weights | 1.00 | 1.00 |
| activations | 0.00 | 1.50 |
| **peak allocated** | **1.00** | **2.50** |
";
    assert_eq!(md, expected);
}

#[test]
fn serve_context_names_engine_settings() {
    let mut p = vllm_tp2_fp8_page();
    p.infer.weights = Some("fp8".into());
    let lines = export::context_lines("Llama-3.1-8B", &p);
    let get = |k: &str| {
        lines
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    };
    assert_eq!(lines[0], ("model".into(), "Llama-3.1-8B".into()));
    assert_eq!(get("task"), Some("serve"));
    assert_eq!(get("engine"), Some("vllm"));
    assert_eq!(get("gpu"), Some(p.gpu.name().as_str()));
    assert_eq!(
        get("gpu_usable_bytes"),
        Some(p.gpu.usable_bytes().to_string().as_str())
    );
    assert_eq!(get("context_tokens"), Some("32768"));
    assert_eq!(get("weights"), Some("fp8"));
    assert_eq!(get("kv_cache_dtype"), Some("fp8"));
    assert_eq!(get("gpus"), Some("2"));
    assert_eq!(get("gpu_memory_utilization"), Some("release default"));
    assert_eq!(
        get("vllm_version"),
        Some(vram_core::infer::vllm_version::CURRENT)
    );
    assert_eq!(get("lora_r"), None);
}

#[test]
fn file_names_carry_model_and_task() {
    assert_eq!(
        export::file_name("Llama-3.1-8B", Task::Serve, "csv"),
        "vram-Llama-3.1-8B-serve.csv"
    );
    assert_eq!(
        export::file_name("meta-llama/Llama 3.1 8B!", Task::Finetune, "md"),
        "vram-meta-llama-Llama-3.1-8B-finetune.md"
    );
    assert_eq!(
        export::file_name("../../", Task::Train, "csv"),
        "vram-model-train.csv"
    );
    assert_eq!(
        export::file_name("模型", Task::Train, ".json"),
        "vram-model-train.json"
    );
}

// ---------------------------------------------------------------- launch lines

fn block<'a>(blocks: &'a [LaunchBlock], language: &str) -> &'a LaunchBlock {
    blocks
        .iter()
        .find(|b| b.language == language)
        .unwrap_or_else(|| panic!("no {language} block in {blocks:?}"))
}

#[test]
fn vllm_tp2_fp8_kv_command() {
    let blocks = launch_lines(
        "meta-llama/Llama-3.1-8B",
        &vllm_tp2_fp8_page(),
        LaunchModel::CAUSAL_LM,
    );
    assert_eq!(blocks.len(), 1);
    assert_eq!(blocks[0].title, "vLLM");
    assert_eq!(blocks[0].language, "sh");
    assert_eq!(
        blocks[0].text,
        "vllm serve meta-llama/Llama-3.1-8B \\
  --tensor-parallel-size 2 \\
  --max-model-len 32768 \\
  --kv-cache-dtype fp8
"
    );
    // Weight formats and limits.
    let mut p = vllm_tp2_fp8_page();
    p.infer.weights = Some("awq-4bit".into());
    p.infer.serving.max_num_seqs = 64;
    p.infer.serving.gpu_memory_utilization = 0.95;
    let text = &launch_lines("m", &p, LaunchModel::CAUSAL_LM)[0].text;
    assert!(text.contains("--quantization awq \\\n"), "{text}");
    assert!(text.contains("--max-num-seqs 64"), "{text}");
    assert!(text.contains("--gpu-memory-utilization 0.95"), "{text}");
    p.infer.weights = Some("fp8".into());
    assert!(launch_lines("m", &p, LaunchModel::CAUSAL_LM)[0]
        .text
        .contains("--quantization fp8"));
    p.infer.weights = Some("gptq-4bit".into());
    assert!(launch_lines("m", &p, LaunchModel::CAUSAL_LM)[0]
        .text
        .contains("--quantization gptq"));
    // A model id with shell characters is quoted.
    assert!(launch_lines("a b'c", &p, LaunchModel::CAUSAL_LM)[0]
        .text
        .starts_with("vllm serve 'a b'\\''c' \\\n"));
}

#[test]
fn transformers_snippet_and_llama_cpp_skip() {
    let mut p = PageScenario::default();
    p.infer.engine = Engine::Transformers;
    p.infer.weights = Some("nf4".into());
    let blocks = launch_lines("meta-llama/Llama-3.1-8B", &p, LaunchModel::CAUSAL_LM);
    assert_eq!(blocks.len(), 1);
    assert_eq!(blocks[0].language, "python");
    assert_eq!(
        blocks[0].text,
        r#"import torch
from transformers import AutoModelForCausalLM, BitsAndBytesConfig

model = AutoModelForCausalLM.from_pretrained(
    "meta-llama/Llama-3.1-8B",
    torch_dtype=torch.bfloat16,
    attn_implementation="sdpa",
    quantization_config=BitsAndBytesConfig(
        load_in_4bit=True,
        bnb_4bit_quant_type="nf4",
        bnb_4bit_compute_dtype=torch.bfloat16,
        bnb_4bit_use_double_quant=False,
    ),
    device_map="auto",
)
"#
    );
    p.infer.weights = Some("int8".into());
    p.infer.attention = AttentionImpl::Flash;
    let text = &launch_lines("m", &p, LaunchModel::CAUSAL_LM)[0].text;
    assert!(text.contains("quantization_config=BitsAndBytesConfig(load_in_8bit=True),"));
    assert!(text.contains("attn_implementation=\"flash_attention_2\""));

    p.infer.engine = Engine::LlamaCpp;
    assert!(launch_lines("m", &p, LaunchModel::CAUSAL_LM).is_empty());
}

#[test]
fn qlora_snippet() {
    let blocks = launch_lines(
        "meta-llama/Llama-3.1-8B",
        &qlora_page(),
        LaunchModel::CAUSAL_LM,
    );
    assert_eq!(blocks.len(), 1, "one GPU, no ZeRO: no DeepSpeed");
    assert_eq!(blocks[0].language, "python");
    assert_eq!(
        blocks[0].text,
        r#"import torch
from peft import LoraConfig
from transformers import AutoModelForCausalLM, BitsAndBytesConfig
from trl import SFTConfig

bnb_config = BitsAndBytesConfig(
    load_in_4bit=True,
    bnb_4bit_quant_type="nf4",
    bnb_4bit_compute_dtype=torch.bfloat16,
    bnb_4bit_use_double_quant=True,
)
model = AutoModelForCausalLM.from_pretrained(
    "meta-llama/Llama-3.1-8B",
    torch_dtype=torch.bfloat16,
    attn_implementation="sdpa",
    quantization_config=bnb_config,
)
peft_config = LoraConfig(
    r=16,
    lora_alpha=32,
    target_modules="all-linear",
    task_type="CAUSAL_LM",
)
args = SFTConfig(
    output_dir="out",
    per_device_train_batch_size=4,
    gradient_accumulation_steps=4,
    gradient_checkpointing=True,
    bf16=True,
    optim="adamw_bnb_8bit",
    max_length=2048,
)
"#
    );
    // With two GPUs the fine-tune gets a DeepSpeed config and a launcher too.
    let mut p = qlora_page();
    p.finetune.gpus = 2;
    let blocks = launch_lines("m", &p, LaunchModel::CAUSAL_LM);
    assert_eq!(
        blocks.iter().map(|b| b.language).collect::<Vec<_>>(),
        ["python", "json", "sh"]
    );
    assert!(blocks[0]
        .text
        .contains("    deepspeed=\"ds_config.json\",\n"));
}

#[test]
fn zero3_offload_deepspeed_config() {
    let blocks = launch_lines(
        "meta-llama/Llama-3.1-8B",
        &zero3_offload_page(),
        LaunchModel::CAUSAL_LM,
    );
    let json = block(&blocks, "json");
    assert_eq!(json.title, "DeepSpeed config (ds_config.json)");
    let v: serde_json::Value = serde_json::from_str(&json.text).expect("valid JSON");
    assert_eq!(v["zero_optimization"]["stage"], 3);
    assert_eq!(v["zero_optimization"]["offload_optimizer"]["device"], "cpu");
    assert_eq!(
        v["zero_optimization"]["offload_optimizer"]["pin_memory"],
        true
    );
    assert_eq!(v["zero_optimization"]["offload_param"]["device"], "cpu");
    assert_eq!(v["zero_optimization"]["offload_param"]["pin_memory"], true);
    assert_eq!(v["train_micro_batch_size_per_gpu"], 2);
    assert_eq!(v["gradient_accumulation_steps"], 8);
    assert_eq!(v["bf16"]["enabled"], true);
    assert!(v.get("fp16").is_none());
    assert!(v.get("gradient_clipping").is_none());
    assert_eq!(
        block(&blocks, "sh").text,
        "torchrun --nproc_per_node 8 train.py --deepspeed ds_config.json\n"
    );
    let py = &block(&blocks, "python").text;
    assert!(py.contains("args = TrainingArguments(\n"), "{py}");
    assert!(py.contains("    optim=\"adamw_torch\",\n"), "{py}");

    // No offload, fp16 autocast: neither offload key, fp16 enabled.
    let mut p = zero3_offload_page();
    p.train.zero = ZeroStage(2);
    p.train.offload_optimizer = false;
    p.train.offload_params = false;
    p.train.mixed_precision = MixedPrecision::Fp16;
    let v: serde_json::Value =
        serde_json::from_str(&block(&launch_lines("m", &p, LaunchModel::CAUSAL_LM), "json").text)
            .unwrap();
    assert_eq!(v["zero_optimization"], serde_json::json!({"stage": 2}));
    assert_eq!(v["fp16"]["enabled"], true);
    assert!(v.get("bf16").is_none());
}

#[test]
fn a_model_without_attention_gets_python_lines_without_attn_implementation() {
    // transformers refuses any attn_implementation for MambaForCausalLM ("does not support an
    // attention implementation through torch.nn.functional.scaled_dot_product_attention")
    let mut serve = PageScenario::default();
    serve.infer.engine = Engine::Transformers;
    for p in [
        serve,
        zero3_offload_page(),
        PageScenario {
            task: Task::Train,
            ..PageScenario::default()
        },
    ] {
        let with = launch_lines("state-spaces/mamba-130m-hf", &p, LaunchModel::CAUSAL_LM);
        let without = launch_lines(
            "state-spaces/mamba-130m-hf",
            &p,
            LaunchModel {
                attends: false,
                seq2seq: false,
            },
        );
        let python = |blocks: &[LaunchBlock]| {
            blocks
                .iter()
                .find(|b| b.language == "python")
                .map(|b| b.text.clone())
                .unwrap()
        };
        assert!(python(&with).contains("attn_implementation="));
        assert!(!python(&without).contains("attn_implementation"));
        assert_eq!(
            python(&with).lines().count(),
            python(&without).lines().count() + 1
        );
    }
}

/// An encoder–decoder (t5) is loaded with `AutoModelForSeq2SeqLM`, adapted with peft's
/// `SEQ_2_SEQ_LM` task and trained with `Seq2SeqTrainingArguments`: TRL's `SFTConfig` and
/// `CAUSAL_LM` describe causal LMs and would not run it.
#[test]
fn an_encoder_decoder_launches_as_a_seq2seq_model() {
    let t5 = LaunchModel {
        attends: true,
        seq2seq: true,
    };
    let mut lora = qlora_page();
    if let Some(l) = lora.finetune.lora.as_mut() {
        l.base_quant = BaseQuant::None;
    }
    let serve = PageScenario {
        task: Task::Serve,
        ..PageScenario::default()
    };
    let mut hf_serve = serve.clone();
    hf_serve.infer.engine = vram_core::scenario::Engine::Transformers;
    for p in [lora, zero3_offload_page(), hf_serve] {
        let blocks = launch_lines("google-t5/t5-small", &p, t5);
        let python = &blocks.iter().find(|b| b.language == "python").unwrap().text;
        assert!(
            python.contains("AutoModelForSeq2SeqLM.from_pretrained("),
            "{python}"
        );
        assert!(!python.contains("CausalLM"), "{python}");
        assert!(!python.contains("SFTConfig"), "{python}");
        if p.task != Task::Serve {
            assert!(
                python.contains("args = Seq2SeqTrainingArguments("),
                "{python}"
            );
            assert!(python.contains("inputs and labels of"), "{python}");
        }
        if p.task == Task::Finetune {
            assert!(python.contains("task_type=\"SEQ_2_SEQ_LM\""), "{python}");
            assert_eq!(
                blocks[0].title,
                "peft + transformers (Seq2SeqTrainingArguments)"
            );
        }
    }
}

/// Training with transformers' own tensor parallelism: the trainer's Python block loads the model
/// with `DistributedConfig(tp_size=N)` (once: the core's Python block is not repeated) and a
/// plain `torchrun` line launches the N ranks, without DeepSpeed.
#[test]
fn hf_tensor_parallel_training_loads_with_a_distributed_config_and_launches_with_torchrun() {
    let mut p = PageScenario {
        task: Task::Train,
        ..PageScenario::default()
    };
    p.train.gpus = 2;
    p.train.layout.tp = 2;
    let blocks = launch_lines("meta-llama/Llama-3.1-8B", &p, LaunchModel::CAUSAL_LM);
    let pythons: Vec<&LaunchBlock> = blocks.iter().filter(|b| b.language == "python").collect();
    assert_eq!(pythons.len(), 1, "{blocks:?}");
    assert!(
        pythons[0]
            .text
            .contains("    distributed_config=DistributedConfig(tp_size=2),\n"),
        "{}",
        pythons[0].text
    );
    assert!(pythons[0]
        .text
        .contains("import AutoModelForCausalLM, DistributedConfig"));
    let sh = block(&blocks, "sh");
    assert_eq!(sh.text, "torchrun --nproc-per-node 2 train.py\n");
    assert!(!blocks.iter().any(|b| b.language == "json"), "{blocks:?}");
}
