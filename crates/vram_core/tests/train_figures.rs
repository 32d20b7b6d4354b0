//! Exact training figures worked by hand.

use vram_core::report::DeviceOverheads;
use vram_core::scenario::*;
use vram_core::train::{estimate_training, max_batch, max_seq_len, Budget, BudgetKind};

fn spec(id: &str) -> vram_core::ModelSpec {
    vram_core::parse_config(vram_core::presets::find(id).unwrap().json, None).unwrap()
}

fn pure_bf16() -> Scenario {
    Scenario {
        dtype: Dtype::Bf16,
        mixed_precision: MixedPrecision::None,
        batch: 1,
        seq_len: 2048,
        ..Scenario::default()
    }
}

#[test]
fn llama_8b_pure_bf16_adamw_persistent_terms_are_exact() {
    // 8,030,261,248 params: weights 2 B, grads 2 B, AdamW bf16 moments 2 × 2 B.
    let e = estimate_training(
        &spec("meta-llama__Llama-3.1-8B"),
        &pure_bf16(),
        &DeviceOverheads::default(),
    )
    .unwrap();
    assert_eq!(e.weights_bytes, 16_060_522_496);
    assert_eq!(e.gradients_bytes, 16_060_522_496);
    assert_eq!(e.optimizer_bytes, 32_121_044_992);
    // foreach AdamW: one more copy of exp_avg_sq during step().
    assert_eq!(e.optimizer_temp_bytes, 16_060_522_496);
    assert_eq!(e.peak_phase, "optimizer");
    // optimizer peak = W + G + S + temp + input ids (2048 × 8 B)
    assert_eq!(e.peak_allocated_bytes, 16_060_522_496 * 5 + 2048 * 8);
}

#[test]
fn llama_8b_layer_saves_209032_bytes_per_token_in_pure_bf16_sdpa() {
    // Per token, h = 4096, q = 4096, kv = 1024, I = 14336, 2-byte activations:
    // input_layernorm: x.float() 4h + rstd 4 + y 2h = 24,580; q/k/v input 2h = 8,192;
    // rotary q 2·4096, k 2·1024, v 2·1024; SDPA output 2·4096 + logsumexp 32·4;
    // o_proj input (contiguous) 2·4096; post_attention_layernorm 24,580 + its output 8,192;
    // MLP gate/act/up/product 4 × 2 × 14,336 = 114,688.  Σ = 209,032 B.
    let e = estimate_training(
        &spec("meta-llama__Llama-3.1-8B"),
        &pure_bf16(),
        &DeviceOverheads::default(),
    )
    .unwrap();
    let layers = e
        .activation_breakdown
        .iter()
        .find(|(k, _)| k == "layers")
        .unwrap()
        .1;
    assert_eq!(layers, 32 * 2048 * 209_032);
}

#[test]
fn llama_8b_lora_q_v_trainable_is_peft_count() {
    let s = Scenario {
        lora: Some(Lora {
            r: 8,
            alpha: 16,
            targets: LoraTargets::Default,
            base_quant: BaseQuant::None,
        }),
        ..pure_bf16()
    };
    let e = estimate_training(
        &spec("meta-llama__Llama-3.1-8B"),
        &s,
        &DeviceOverheads::default(),
    )
    .unwrap();
    assert_eq!(e.trainable_params, 3_407_872);
    // fp32 adapters (peft autocast_adapter_dtype): grads 4 B, AdamW states 8 B per parameter.
    assert_eq!(e.gradients_bytes, 3_407_872 * 4);
    assert_eq!(e.optimizer_bytes, 3_407_872 * 8);
    assert_eq!(e.weights_bytes, 16_060_522_496 + 3_407_872 * 4);
}

#[test]
fn zero3_on_8_gpus_matches_deepspeed_18_bytes_per_param_partition() {
    let s = Scenario {
        zero: ZeroStage(3),
        gpus: 8,
        ..pure_bf16()
    };
    let e = estimate_training(
        &spec("meta-llama__Llama-3.1-8B"),
        &s,
        &DeviceOverheads::default(),
    )
    .unwrap();
    let p: u64 = 8_030_261_248;
    assert_eq!(e.weights_bytes, (2 * p).div_ceil(8));
    assert_eq!(e.gradients_bytes, (2 * p).div_ceil(8));
    assert_eq!(e.optimizer_bytes, (16 * p).div_ceil(8));
}

#[test]
fn mamba_training_is_refused_with_a_clear_message() {
    let err = estimate_training(
        &spec("state-spaces__mamba-130m-hf"),
        &pure_bf16(),
        &DeviceOverheads::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("not modelled"));
}

#[test]
fn solver_finds_the_boundary_batch() {
    let m = spec("HuggingFaceTB__SmolLM2-135M-Instruct");
    let s = Scenario {
        seq_len: 512,
        ..pure_bf16()
    };
    let o = DeviceOverheads::default();
    let at = |b: u64| {
        estimate_training(
            &m,
            &Scenario {
                batch: b,
                ..s.clone()
            },
            &o,
        )
        .unwrap()
        .device_bytes
    };
    let budget = Budget {
        bytes: at(5),
        kind: BudgetKind::Device,
    };
    assert_eq!(max_batch(&m, &s, &o, budget, 1024), Some(5));
    let tiny = Budget {
        bytes: 1 << 20,
        kind: BudgetKind::Device,
    };
    assert_eq!(max_batch(&m, &s, &o, tiny, 1024), None);
    let seq = max_seq_len(&m, &s, &o, budget, 1 << 16).unwrap();
    assert!(seq >= 512 * 5);
}
