//! LoRA on MoE models as peft 0.21 builds it over transformers 5's fused experts: the v4 expert and
//! router names move from `target_modules` to `target_parameters` (`_convert_peft_config_moe`), so
//! `all-linear` adapts every expert stack (`gate_up_proj` at twice the rank) and the router, and a
//! dense MLP or shared expert whose leaf name was converted loses its adapter.
//!
//! The trainable counts are `sum(p.numel() for p in model.parameters() if p.requires_grad)` after
//! `get_peft_model(model, LoraConfig(r=16, lora_alpha=32, target_modules=…))` on the full-depth
//! config built on the meta device (torch 2.15, transformers 5.24, peft 0.21.2).

use vram_core::report::DeviceOverheads;
use vram_core::scenario::*;
use vram_core::train::estimate_training;

fn spec(id: &str) -> vram_core::ModelSpec {
    vram_core::parse_config(vram_core::presets::find(id).unwrap().json, None).unwrap()
}

fn lora_bf16(targets: LoraTargets) -> Scenario {
    Scenario {
        dtype: Dtype::Bf16,
        mixed_precision: MixedPrecision::None,
        batch: 1,
        seq_len: 2048,
        lora: Some(Lora {
            r: 16,
            alpha: 32,
            targets,
            base_quant: BaseQuant::None,
        }),
        ..Scenario::default()
    }
}

fn trainable(id: &str, targets: LoraTargets) -> u64 {
    estimate_training(&spec(id), &lora_bf16(targets), &DeviceOverheads::default())
        .unwrap()
        .trainable_params
}

fn modules(names: &[&str]) -> LoraTargets {
    LoraTargets::Modules(names.iter().map(|s| s.to_string()).collect())
}

#[test]
fn all_linear_on_fused_experts_trains_what_peft_0_21_trains() {
    for (id, count) in [
        ("Qwen__Qwen3-30B-A3B", 996_507_648),
        ("mistralai__Mixtral-8x7B-v0.1", 359_665_664),
        // the dense first layer's MLP and the shared experts lose their adapters
        ("deepseek-ai__DeepSeek-V2-Lite", 358_994_944),
        ("allenai__OLMoE-1B-7B-0924", 189_284_352),
        // qwen2_moe is not a key of transformers' conversion table: experts stay unadapted
        ("Qwen__Qwen1.5-MoE-A2.7B", 15_925_632),
    ] {
        assert_eq!(trainable(id, LoraTargets::AllLinear), count, "{id}");
    }
}

#[test]
fn naming_the_v4_expert_projections_adapts_the_fused_stacks() {
    let t = modules(&["q_proj", "v_proj", "gate_proj", "up_proj", "down_proj"]);
    assert_eq!(trainable("Qwen__Qwen3-30B-A3B", t), 988_151_808);
}

#[test]
fn half_of_a_fused_pair_is_refused_as_peft_refuses_it() {
    let err = estimate_training(
        &spec("Qwen__Qwen3-30B-A3B"),
        &lora_bf16(modules(&["q_proj", "gate_proj"])),
        &DeviceOverheads::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("lora.targets"), "{err}");
    assert!(err.contains("up_proj"), "{err}");
}

/// Qwen3-30B-A3B, bf16, 1 × 2,048 tokens, 48 MoE layers of 128 experts (8 per token), H = 2,048,
/// expert I = 768. Adapting the experts adds, per layer, what autograd keeps for the stacks'
/// gradient: the folded stacks `baddbmm(W, B, A)` (gate_up 128 × 1,536 × 2,048 and down
/// 128 × 2,048 × 768 elements, 1,207,959,552 B), the router's folded weight (128 × 2,048 × 2 B =
/// 524,288 B), and the routed inputs of both grouped matmuls (16,384 rows × (2,048 + 768) × 2 B =
/// 92,274,688 B).
#[test]
fn adapted_expert_stacks_are_held_for_backward_in_every_layer() {
    let activations = |targets| {
        estimate_training(
            &spec("Qwen__Qwen3-30B-A3B"),
            &lora_bf16(targets),
            &DeviceOverheads::default(),
        )
        .unwrap()
        .activations_bytes
    };
    let attention_only = activations(modules(&["q_proj", "k_proj", "v_proj", "o_proj"]));
    let all_linear = activations(LoraTargets::AllLinear);
    assert_eq!(
        all_linear - attention_only,
        48 * (1_207_959_552 + 524_288 + 92_274_688)
    );
}
