//! Golden test: every bundled config × a fixed set of scenarios (full training, LoRA, QLoRA, ZeRO,
//! transformers inference, vLLM serving) gives byte-identical `vram estimate --json` documents and
//! solver answers to the ones recorded in `tests/golden/estimates.tsv`.
//!
//! The estimator's speed work (docs/performance.md) must not change a single byte of any answer;
//! this test is what holds it to that. Each line of the table is `case<TAB>bytes<TAB>fnv1a64` of the
//! pretty-printed JSON document (exactly what `vram estimate --json` prints) and of the solver line.
//!
//! When an answer changes on purpose, regenerate the table and say why in the commit:
//! `VRAM_BLESS=1 cargo test -p vram_core --test golden`. On a mismatch the actual documents are
//! written to `target/golden-actual/` so that a diff against a blessed run shows what moved.

use std::fmt::Write as _;
use std::path::PathBuf;
use vram_core::infer;
use vram_core::presets::PRESETS;
use vram_core::report::DeviceOverheads;
use vram_core::scenario::{
    AttentionImpl, BaseQuant, Dtype, Engine, Lora, LoraTargets, MixedPrecision, Optimizer,
    Scenario, ZeroStage,
};
use vram_core::train::{self, Budget, BudgetKind};
use vram_core::{estimate, parse_config, Sections};

/// FNV-1a, 64-bit: stable across platforms and Rust versions (unlike `DefaultHasher`).
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The scenarios every config is estimated under: (name, scenario, sections).
fn scenarios() -> Vec<(&'static str, Scenario, Sections)> {
    let train = Sections {
        train: true,
        infer: false,
    };
    let infer = Sections {
        train: false,
        infer: true,
    };
    let both = Sections {
        train: true,
        infer: true,
    };
    let lora = |r: u64, targets: LoraTargets, base_quant: BaseQuant| Lora {
        r,
        alpha: 2 * r,
        targets,
        base_quant,
    };
    vec![
        ("default-both", Scenario::default(), both),
        (
            "train-fp32-eager-b2-s512",
            Scenario {
                dtype: Dtype::Fp32,
                mixed_precision: MixedPrecision::None,
                attention: AttentionImpl::Eager,
                batch: 2,
                seq_len: 512,
                ..Scenario::default()
            },
            train,
        ),
        (
            "train-bf16-ckpt-b4-s4096-sgd-momentum",
            Scenario {
                dtype: Dtype::Bf16,
                mixed_precision: MixedPrecision::None,
                optimizer: Optimizer::SgdMomentum,
                grad_checkpointing: true,
                batch: 4,
                seq_len: 4096,
                ..Scenario::default()
            },
            train,
        ),
        (
            "lora-r16-default-bf16",
            Scenario {
                dtype: Dtype::Bf16,
                mixed_precision: MixedPrecision::None,
                lora: Some(lora(16, LoraTargets::Default, BaseQuant::None)),
                ..Scenario::default()
            },
            train,
        ),
        (
            "qlora-r64-all-linear-ckpt-adamw8bit",
            Scenario {
                dtype: Dtype::Bf16,
                mixed_precision: MixedPrecision::None,
                optimizer: Optimizer::Adamw8bit,
                grad_checkpointing: true,
                lora: Some(lora(64, LoraTargets::AllLinear, BaseQuant::Nf4)),
                batch: 2,
                seq_len: 1024,
                ..Scenario::default()
            },
            train,
        ),
        (
            "lora-int8-q-v-o-eager",
            Scenario {
                attention: AttentionImpl::Eager,
                lora: Some(lora(
                    8,
                    LoraTargets::Modules(vec!["q_proj".into(), "v_proj".into(), "o_proj".into()]),
                    BaseQuant::Int8,
                )),
                seq_len: 256,
                ..Scenario::default()
            },
            train,
        ),
        (
            "zero3-8gpu-offload-bf16-accum4",
            Scenario {
                dtype: Dtype::Bf16,
                gpus: 8,
                zero: ZeroStage(3),
                offload_optimizer: true,
                offload_params: true,
                grad_accumulation: 4,
                ..Scenario::default()
            },
            train,
        ),
        (
            "zero2-4gpu-adafactor",
            Scenario {
                gpus: 4,
                zero: ZeroStage(2),
                optimizer: Optimizer::Adafactor,
                ..Scenario::default()
            },
            train,
        ),
        (
            "zero1-2gpu-lion-fp16",
            Scenario {
                mixed_precision: MixedPrecision::Fp16,
                gpus: 2,
                zero: ZeroStage(1),
                optimizer: Optimizer::Lion,
                ..Scenario::default()
            },
            train,
        ),
        ("infer-default", Scenario::inference(), infer),
        (
            "infer-eager-b4-s1024-all-logits",
            Scenario {
                batch: 4,
                seq_len: 1024,
                attention: AttentionImpl::Eager,
                logits_to_keep: 0,
                ..Scenario::inference()
            },
            infer,
        ),
        (
            "infer-nf4-b8-s8192",
            Scenario {
                batch: 8,
                seq_len: 8192,
                weights: Some("nf4".into()),
                ..Scenario::inference()
            },
            infer,
        ),
        (
            "infer-q4_k_m",
            Scenario {
                weights: Some("q4_k_m".into()),
                ..Scenario::inference()
            },
            infer,
        ),
        (
            "vllm-default",
            Scenario {
                engine: Engine::Vllm,
                ..Scenario::inference()
            },
            infer,
        ),
        (
            "vllm-tp2-fp8-kv-8k-b32",
            {
                let mut s = Scenario {
                    engine: Engine::Vllm,
                    batch: 32,
                    seq_len: 8192,
                    kv_dtype: Some("fp8".into()),
                    weights: Some("fp8".into()),
                    ..Scenario::inference()
                };
                s.serving.tensor_parallel_size = 2;
                s.serving.max_model_len = 8192;
                s
            },
            infer,
        ),
    ]
}

/// The solver answers for a case, as one line (what the page's "largest batch / sequence" shows).
fn solver_line(spec: &vram_core::ModelSpec, s: &Scenario, sections: Sections) -> String {
    let o = DeviceOverheads::default();
    let mut line = String::new();
    if sections.train {
        let budget = Budget {
            bytes: 80 << 30,
            kind: BudgetKind::Device,
        };
        let b = train::max_batch(spec, s, &o, budget, 4096);
        let q = train::max_seq_len(spec, s, &o, budget, 1 << 20);
        let _ = write!(line, "train max_batch={b:?} max_seq_len={q:?};");
    }
    if sections.infer {
        let c = infer::max_context(spec, s, &o);
        let b = infer::max_batch(spec, s, &o);
        let _ = write!(line, "infer max_context={c:?} max_batch={b:?};");
    }
    line
}

struct Case {
    id: String,
    document: String,
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for preset in PRESETS {
        let spec = parse_config(preset.json, Some(preset.id)).expect(preset.id);
        for (name, scenario, sections) in scenarios() {
            let doc = estimate(&spec, &scenario, sections);
            let json = serde_json::to_string_pretty(&doc).expect("serialises");
            out.push(Case {
                id: format!("{}/{name}", preset.id),
                document: json,
            });
            out.push(Case {
                id: format!("{}/{name}/solve", preset.id),
                document: solver_line(&spec, &scenario, sections),
            });
        }
    }
    out
}

fn table_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/estimates.tsv")
}

fn table_of(cases: &[Case]) -> String {
    let mut t = String::from(
        "# case\tbytes\tfnv1a64 (generated: VRAM_BLESS=1 cargo test -p vram_core --test golden)\n",
    );
    for c in cases {
        let _ = writeln!(
            t,
            "{}\t{}\t{:016x}",
            c.id,
            c.document.len(),
            fnv1a64(c.document.as_bytes())
        );
    }
    t
}

#[test]
fn every_preset_and_scenario_gives_the_recorded_document_byte_for_byte() {
    let cases = cases();
    let actual = table_of(&cases);
    let path = table_path();
    if std::env::var_os("VRAM_BLESS").is_some() {
        std::fs::write(&path, &actual).expect("write golden table");
    }
    let dump_dir = std::env::var_os("VRAM_GOLDEN_DUMP").map(PathBuf::from);
    if let Some(dir) = &dump_dir {
        write_documents(dir, &cases);
    }
    let expected = std::fs::read_to_string(&path).expect("tests/golden/estimates.tsv exists");
    if expected != actual {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/golden-actual");
        write_documents(&dir, &cases);
        let differing: Vec<&str> = expected
            .lines()
            .zip(actual.lines())
            .filter(|(e, a)| e != a)
            .map(|(_, a)| a.split('\t').next().unwrap_or(""))
            .take(20)
            .collect();
        panic!(
            "{} of {} golden lines differ (expected {} lines), first: {differing:#?}; actual documents in {}",
            expected
                .lines()
                .zip(actual.lines())
                .filter(|(e, a)| e != a)
                .count(),
            actual.lines().count(),
            expected.lines().count(),
            dir.display()
        );
    }
}

fn write_documents(dir: &std::path::Path, cases: &[Case]) {
    for c in cases {
        let file = dir.join(format!("{}.json", c.id.replace('/', "__")));
        if let Some(parent) = file.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let _ = std::fs::write(file, &c.document);
    }
}
