//! The fully specified (F / F-) training rows of measured.md that the model can represent, with
//! what each source measured.

use std::fmt::Write as _;
use vram_core::report::DeviceOverheads;
use vram_core::scenario::*;
use vram_core::train::{estimate_training, TrainEstimate};

const BERT_LARGE: &str = r#"{"model_type":"bert","hidden_size":1024,"num_hidden_layers":24,
 "num_attention_heads":16,"intermediate_size":4096,"vocab_size":30522,"max_position_embeddings":512,
 "type_vocab_size":2,"hidden_act":"gelu","attention_probs_dropout_prob":0.1,"hidden_dropout_prob":0.1}"#;
const LLAMA32_3B: &str = r#"{"model_type":"llama","hidden_size":3072,"num_hidden_layers":28,
 "num_attention_heads":24,"num_key_value_heads":8,"intermediate_size":8192,"vocab_size":128256,
 "max_position_embeddings":131072,"tie_word_embeddings":true,"head_dim":128}"#;
const PYTHIA_410M: &str = r#"{"model_type":"gpt_neox","hidden_size":1024,"num_hidden_layers":24,
 "num_attention_heads":16,"intermediate_size":4096,"vocab_size":50304,"max_position_embeddings":2048,
 "rotary_pct":0.25,"use_parallel_residual":true,"tie_word_embeddings":false,"hidden_act":"gelu"}"#;

#[derive(Clone, Copy)]
enum Kind {
    /// `max_memory_allocated` over the step.
    Alloc,
    /// torchtune's peak `active_bytes` (≈ allocated).
    Active,
    /// nvidia-smi / NVML device used, with this CUDA context (bytes).
    Smi(u64),
    /// `memory_allocated` after model init.
    LoadAlloc,
    /// nvidia-smi after loading the weights, with this context.
    LoadSmi(u64),
    /// forward + backward only (no optimizer states): the larger of step 1's forward/backward peaks.
    FwdBwdAlloc,
}

struct Row {
    id: &'static str,
    what: &'static str,
    config: Cfg,
    scenario: Scenario,
    measured_bytes: u64,
    measured_text: &'static str,
    kind: Kind,
    caveat: &'static str,
}

enum Cfg {
    Preset(&'static str),
    Inline(&'static str),
}

const GB: f64 = 1e9;
const GIB: f64 = 1073741824.0;
const MIB: f64 = 1048576.0;

fn b(v: f64, unit: f64) -> u64 {
    (v * unit) as u64
}

fn lora(r: u64, targets: LoraTargets, q: BaseQuant) -> Option<Lora> {
    Some(Lora {
        r,
        alpha: 2 * r,
        targets,
        base_quant: q,
    })
}

fn mods(m: &[&str]) -> LoraTargets {
    LoraTargets::Modules(m.iter().map(|s| s.to_string()).collect())
}

fn rows() -> Vec<Row> {
    let ctx_v100 = b(1343.0, MIB);
    let bert = |batch: u64, ga: u64, gc: bool, mixed: bool, opt: Optimizer| Scenario {
        dtype: Dtype::Fp32,
        mixed_precision: if mixed {
            MixedPrecision::Fp16
        } else {
            MixedPrecision::None
        },
        optimizer: opt,
        batch,
        seq_len: 512,
        grad_checkpointing: gc,
        attention: AttentionImpl::Eager,
        grad_accumulation: ga,
        ..Scenario::default()
    };
    let bf16 = |batch: u64, seq: u64| Scenario {
        dtype: Dtype::Bf16,
        mixed_precision: MixedPrecision::None,
        batch,
        seq_len: seq,
        ..Scenario::default()
    };
    let hf_bert = "HF Trainer 2022 (V100, CUDA 11.2): optimizer = transformers.AdamW (per-tensor loop, no foreach temporaries); context = A1's 1343 MiB; pool after train()";
    vec![
        Row { id: "A2", what: "bert-large fp32 weights loaded", config: Cfg::Inline(BERT_LARGE), scenario: bert(4, 1, false, false, Optimizer::Adamw), measured_bytes: b(2631.0, MIB), measured_text: "2631 MiB", kind: Kind::LoadSmi(ctx_v100), caveat: "BertModel without the 2-label classifier (2 K params)" },
        Row { id: "A3", what: "bert-large bs4×512 fp32 AdamW eager", config: Cfg::Inline(BERT_LARGE), scenario: bert(4, 1, false, false, Optimizer::Adamw), measured_bytes: b(14949.0, MIB), measured_text: "14949 MiB", kind: Kind::Smi(ctx_v100), caveat: hf_bert },
        Row { id: "A4", what: "bert-large bs1 GA4", config: Cfg::Inline(BERT_LARGE), scenario: bert(1, 4, false, false, Optimizer::Adamw), measured_bytes: b(8681.0, MIB), measured_text: "8681 MiB", kind: Kind::Smi(ctx_v100), caveat: hf_bert },
        Row { id: "A5", what: "bert-large bs1 GA4 + GC", config: Cfg::Inline(BERT_LARGE), scenario: bert(1, 4, true, false, Optimizer::Adamw), measured_bytes: b(6775.0, MIB), measured_text: "6775 MiB", kind: Kind::Smi(ctx_v100), caveat: hf_bert },
        Row { id: "A6", what: "bert-large bs4 fp16 AMP", config: Cfg::Inline(BERT_LARGE), scenario: bert(4, 1, false, true, Optimizer::Adamw), measured_bytes: b(13939.0, MIB), measured_text: "13939 MiB", kind: Kind::Smi(ctx_v100), caveat: hf_bert },
        Row { id: "A7", what: "bert-large bs1 GA4 GC fp16 AMP", config: Cfg::Inline(BERT_LARGE), scenario: bert(1, 4, true, true, Optimizer::Adamw), measured_bytes: b(7275.0, MIB), measured_text: "7275 MiB", kind: Kind::Smi(ctx_v100), caveat: hf_bert },
        Row { id: "A8", what: "bert-large bs4 Adafactor", config: Cfg::Inline(BERT_LARGE), scenario: bert(4, 1, false, false, Optimizer::Adafactor), measured_bytes: b(12295.0, MIB), measured_text: "12295 MiB", kind: Kind::Smi(ctx_v100), caveat: "HF Adafactor (per tensor), modelled as torch.optim.Adafactor (foreach temporaries)" },
        Row { id: "A10", what: "bert-large bs4 bnb Adam8bit", config: Cfg::Inline(BERT_LARGE), scenario: bert(4, 1, false, false, Optimizer::Adamw8bit), measured_bytes: b(13085.0, MIB), measured_text: "13085 MiB", kind: Kind::Smi(ctx_v100), caveat: hf_bert },
        Row { id: "B10", what: "Llama-3.2-3B full bf16 AdamW bs2×4096, no AC, plain CE", config: Cfg::Inline(LLAMA32_3B), scenario: bf16(2, 4096), measured_bytes: b(60.0, GIB), measured_text: "60.0 GiB", kind: Kind::Active, caveat: "torchtune model (not HF transformers); optimizer implementation per torchtune config" },
        Row { id: "B30", what: "Llama-2-7B LoRA r8 q,v bf16, after init", config: Cfg::Preset("meta-llama__Llama-2-7b-hf"), scenario: Scenario { lora: lora(8, LoraTargets::Default, BaseQuant::None), ..bf16(2, 512) }, measured_bytes: b(13.96, GB), measured_text: "13.96 GB", kind: Kind::LoadAlloc, caveat: "torchtune adapters are bf16 (peft's are fp32)" },
        Row { id: "B35", what: "Llama-2-7B pure bf16, after init", config: Cfg::Preset("meta-llama__Llama-2-7b-hf"), scenario: bf16(2, 512), measured_bytes: b(13.51, GB), measured_text: "13.51 GB", kind: Kind::LoadAlloc, caveat: "" },
        Row { id: "B36", what: "Llama-3.2-3B LoRA r64 q,v,o+MLP bf16, after init", config: Cfg::Inline(LLAMA32_3B), scenario: Scenario { lora: lora(64, mods(&["q_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]), BaseQuant::None), ..bf16(4, 512) }, measured_bytes: b(6.21, GIB), measured_text: "6.21 GiB", kind: Kind::LoadAlloc, caveat: "torchtune adapters are bf16 (peft's are fp32)" },
        Row { id: "C11", what: "Llama-2-7B LoRA r8 q,v bf16-true mbs1 (longest 1304 tok)", config: Cfg::Preset("meta-llama__Llama-2-7b-hf"), scenario: Scenario { lora: lora(8, LoraTargets::Default, BaseQuant::None), ..bf16(1, 1304) }, measured_bytes: b(21.30, GB), measured_text: "21.30 GB", kind: Kind::Alloc, caveat: "litgpt model, lm_head + CE chunked (128 tokens), LoRA dropout 0.05, bf16 adapters" },
        Row { id: "C13", what: "Llama-2-7B QLoRA nf4-dq r8 q,v mbs1", config: Cfg::Preset("meta-llama__Llama-2-7b-hf"), scenario: Scenario { lora: lora(8, LoraTargets::Default, BaseQuant::Nf4), ..bf16(1, 1304) }, measured_bytes: b(13.84, GB), measured_text: "13.84 GB", kind: Kind::Alloc, caveat: "litgpt; bnb PagedAdamW (paged states are not in max_memory_allocated)" },
        Row { id: "C14", what: "Llama-2-7B LoRA r8 q,v bf16-true mbs2", config: Cfg::Preset("meta-llama__Llama-2-7b-hf"), scenario: Scenario { lora: lora(8, LoraTargets::Default, BaseQuant::None), ..bf16(2, 1304) }, measured_bytes: b(29.07, GB), measured_text: "29.07 GB", kind: Kind::Alloc, caveat: "litgpt, as C11" },
        Row { id: "D6", what: "Llama-2-70B QLoRA all-linear r8, ZeRO-3 ×2, bs2×2048, GA2, GC, FA2", config: Cfg::Preset("meta-llama__Llama-2-70b-hf"), scenario: Scenario { lora: lora(8, LoraTargets::AllLinear, BaseQuant::Nf4), zero: ZeroStage(3), gpus: 2, grad_checkpointing: true, attention: AttentionImpl::Flash, grad_accumulation: 2, ..bf16(2, 2048) }, measured_bytes: b(36.6, GB), measured_text: "36.6 GB", kind: Kind::Smi(500 << 20), caveat: "peft docs; what was measured is not stated (compared with the device total); quant_storage bf16" },
        Row { id: "D8", what: "Llama-2-70B QLoRA, FSDP full-shard ×2, no offload", config: Cfg::Preset("meta-llama__Llama-2-70b-hf"), scenario: Scenario { lora: lora(8, LoraTargets::AllLinear, BaseQuant::Nf4), zero: ZeroStage(3), gpus: 2, grad_checkpointing: true, attention: AttentionImpl::Flash, grad_accumulation: 2, ..bf16(2, 2048) }, measured_bytes: b(35.6, GB), measured_text: "35.6 GB", kind: Kind::Smi(500 << 20), caveat: "FSDP modelled as ZeRO-3" },
        Row { id: "D7", what: "Llama-2-70B QLoRA, FSDP ×2 + CPU offload", config: Cfg::Preset("meta-llama__Llama-2-70b-hf"), scenario: Scenario { lora: lora(8, LoraTargets::AllLinear, BaseQuant::Nf4), zero: ZeroStage(3), gpus: 2, offload_params: true, offload_optimizer: true, grad_checkpointing: true, attention: AttentionImpl::Flash, grad_accumulation: 2, ..bf16(2, 2048) }, measured_bytes: b(19.6, GB), measured_text: "19.6 GB", kind: Kind::Smi(500 << 20), caveat: "FSDP CPU offload modelled as ZeRO-3 parameter + optimizer offload" },
        Row { id: "E9", what: "Pythia-410m fp16 fwd+bwd 1×128 eager", config: Cfg::Inline(PYTHIA_410M), scenario: Scenario { dtype: Dtype::Fp16, mixed_precision: MixedPrecision::None, attention: AttentionImpl::Eager, ..bf16(1, 128) }, measured_bytes: b(1789.95, MIB), measured_text: "1789.95 MB", kind: Kind::FwdBwdAlloc, caveat: "HF docs benchmark; 'MB' read as MiB; no optimizer states" },
        Row { id: "E10", what: "Pythia-410m fp16 1×1024 eager", config: Cfg::Inline(PYTHIA_410M), scenario: Scenario { dtype: Dtype::Fp16, mixed_precision: MixedPrecision::None, attention: AttentionImpl::Eager, ..bf16(1, 1024) }, measured_bytes: b(4772.36, MIB), measured_text: "4772.36 MB", kind: Kind::FwdBwdAlloc, caveat: "as E9" },
        Row { id: "E10s", what: "Pythia-410m fp16 1×1024 SDPA", config: Cfg::Inline(PYTHIA_410M), scenario: Scenario { dtype: Dtype::Fp16, mixed_precision: MixedPrecision::None, ..bf16(1, 1024) }, measured_bytes: b(2408.35, MIB), measured_text: "2408.35 MB", kind: Kind::FwdBwdAlloc, caveat: "as E9" },
        Row { id: "E11", what: "Pythia-410m fp16 1×2048 eager", config: Cfg::Inline(PYTHIA_410M), scenario: Scenario { dtype: Dtype::Fp16, mixed_precision: MixedPrecision::None, attention: AttentionImpl::Eager, ..bf16(1, 2048) }, measured_bytes: b(13484.1, MIB), measured_text: "13484.1 MB", kind: Kind::FwdBwdAlloc, caveat: "as E9" },
        Row { id: "E11s", what: "Pythia-410m fp16 1×2048 SDPA", config: Cfg::Inline(PYTHIA_410M), scenario: Scenario { dtype: Dtype::Fp16, mixed_precision: MixedPrecision::None, ..bf16(1, 2048) }, measured_bytes: b(3882.01, MIB), measured_text: "3882.01 MB", kind: Kind::FwdBwdAlloc, caveat: "as E9" },
        Row { id: "E14s", what: "Pythia-410m fp16 4×2048 SDPA", config: Cfg::Inline(PYTHIA_410M), scenario: Scenario { dtype: Dtype::Fp16, mixed_precision: MixedPrecision::None, ..bf16(4, 2048) }, measured_bytes: b(12705.1, MIB), measured_text: "12705.1 MB", kind: Kind::FwdBwdAlloc, caveat: "as E9" },
    ]
}

fn value(e: &TrainEstimate, kind: Kind) -> (u64, &'static str) {
    let phase = |n: &str| e.phases.iter().find(|p| p.name == n);
    match kind {
        Kind::Alloc => (e.peak_allocated_bytes, "max_memory_allocated"),
        Kind::Active => (e.peak_allocated_bytes, "peak active (≈ allocated)"),
        Kind::Smi(_) => (
            e.device_bytes,
            "nvidia-smi / NVML (reserved + context + workspace)",
        ),
        Kind::LoadAlloc => (
            phase("load").map_or(0, |p| p.allocated_bytes),
            "memory_allocated after init",
        ),
        Kind::LoadSmi(ctx) => (
            phase("load").map_or(0, |p| p.allocated_bytes) + ctx,
            "nvidia-smi after load (weights + context)",
        ),
        Kind::FwdBwdAlloc => (
            ["forward", "backward"]
                .iter()
                .filter_map(|n| phase(n))
                .map(|p| p.peak_allocated_bytes)
                .max()
                .unwrap_or(0),
            "max_memory_allocated, forward+backward (no optimizer)",
        ),
    }
}

/// The published-rows section and the signed errors (%).
pub fn section() -> (String, Vec<f64>) {
    let mut s = String::new();
    let mut errs = Vec::new();
    writeln!(
        s,
        "## Published measurements (measured.md, fully specified rows)\n"
    )
    .ok();
    writeln!(s, "| row | setting | measured | kind | estimate | err | caveat |\n|---|---|---|---|---|---|---|").ok();
    for r in rows() {
        let spec = match r.config {
            Cfg::Preset(id) => vram_core::presets::find(id)
                .and_then(|p| vram_core::parse_config(p.json, None).ok()),
            Cfg::Inline(t) => vram_core::parse_config(t, None).ok(),
        };
        let Some(spec) = spec else {
            writeln!(
                s,
                "| {} | {} | {} | | config unavailable | | |",
                r.id, r.what, r.measured_text
            )
            .ok();
            continue;
        };
        let mut o = DeviceOverheads::default();
        if let Kind::Smi(ctx) | Kind::LoadSmi(ctx) = r.kind {
            o.cuda_context_bytes = ctx;
        }
        match estimate_training(&spec, &r.scenario, &o) {
            Ok(e) => {
                let (v, kind) = value(&e, r.kind);
                let err = (v as f64 - r.measured_bytes as f64) / r.measured_bytes as f64 * 100.0;
                errs.push(err);
                writeln!(
                    s,
                    "| {} | {} | {} | {} | {:.2} GiB | {:+.1} % | {} |",
                    r.id,
                    r.what,
                    r.measured_text,
                    kind,
                    v as f64 / GIB,
                    err,
                    r.caveat
                )
                .ok();
            }
            Err(err) => {
                writeln!(
                    s,
                    "| {} | {} | {} | | not estimated: {err} | | |",
                    r.id, r.what, r.measured_text
                )
                .ok();
            }
        }
    }
    let _ = GB;
    (s, errs)
}
