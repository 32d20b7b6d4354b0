//! Hybrid attention / state-space models (jamba, nemotron_h, recurrent_gemma): their caches per
//! layer kind, worked by hand from the published configs, and an honest refusal of training.

use vram_core::infer::estimate_inference;
use vram_core::report::DeviceOverheads;
use vram_core::train::estimate_training;
use vram_core::{parse_config, presets, Scenario};

fn spec(id: &str) -> vram_core::ModelSpec {
    parse_config(presets::find(id).unwrap().json, None).unwrap()
}

#[test]
fn nemotron_h_caches_attention_tokens_and_a_mamba2_state_per_sequence() {
    // NVIDIA-Nemotron-3-Nano-4B: pattern "M-M-M-MM-M-M*-M-M*-M-M-M*-M-M-MM*-MMM-M-M-":
    // 21 mamba-2, 4 attention, 17 MLP layers.
    let s = spec("nvidia__NVIDIA-Nemotron-3-Nano-4B-BF16");
    let est = estimate_inference(&s, &Scenario::inference(), &DeviceOverheads::default()).unwrap();
    // attention: 4 layers × K and V × 8 KV heads × 128 × 2 B
    assert_eq!(est.kv_bytes_per_token, 4 * 2 * 8 * 128 * 2);
    // mamba-2 (transformers): conv state (7,680 + 2 × 8 × 128 = 9,728 channels) × kernel 4 and
    // ssm state 96 heads × 80 × 128, bf16, in 21 layers
    assert_eq!(
        est.state_bytes_per_sequence,
        21 * (9_728 * 4 + 7_680 * 128) * 2
    );
}

#[test]
fn jamba_caches_its_four_attention_layers_and_28_mamba_states() {
    // AI21-Jamba-1.5-Mini: attention at layers 4, 12, 20, 28 (period 8, offset 4)
    let s = spec("ai21labs__AI21-Jamba-1.5-Mini");
    let est = estimate_inference(&s, &Scenario::inference(), &DeviceOverheads::default()).unwrap();
    assert_eq!(est.kv_bytes_per_token, 4 * 2 * 8 * 128 * 2);
    // mamba: d_inner 8,192 × (conv 4 + state 16), bf16, in 28 layers
    assert_eq!(est.state_bytes_per_sequence, 28 * 8_192 * (4 + 16) * 2);
}

#[test]
fn recurrent_gemma_caches_a_window_per_attention_layer_and_an_lru_state_per_recurrent_layer() {
    // recurrentgemma-2b: 26 layers cycling recurrent, recurrent, attention → 8 attention layers
    let s = spec("google__recurrentgemma-2b");
    let est = estimate_inference(&s, &Scenario::inference(), &DeviceOverheads::default()).unwrap();
    assert_eq!(est.kv_bytes_per_token, 8 * 2 * 256 * 2);
    // the 4,096-token default context is capped at the 2,048-token window
    assert_eq!(
        est.kv_cache_bytes,
        8 * 2 * 256 * 2 * 2_048 + est.state_bytes_per_sequence
    );
    // 18 recurrent layers × lru 2,560 × (conv 4 + LRU state 1), bf16
    assert_eq!(est.state_bytes_per_sequence, 18 * 2_560 * (4 + 1) * 2);
}

#[test]
fn training_a_hybrid_is_refused_with_the_reason_not_estimated_without_its_mixers() {
    for id in [
        "ai21labs__AI21-Jamba-1.5-Mini",
        "nvidia__NVIDIA-Nemotron-3-Nano-4B-BF16",
        "google__recurrentgemma-2b",
    ] {
        let err = estimate_training(&spec(id), &Scenario::default(), &DeviceOverheads::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("state-space mixer"), "{id}: {err}");
    }
}

#[test]
fn mllama_caches_self_attention_tokens_and_one_image_per_cross_attention_layer() {
    // Llama-3.2-11B-Vision: 40 layers, 8 of them cross-attention (3, 8, …, 38); one image at its
    // 4 tiles of (560 / 14)² + 1 = 1,601 patches
    let s = spec("meta-llama__Llama-3.2-11B-Vision-Instruct");
    assert_eq!(s.vision.unwrap().cross_attention_tokens, 4 * 1_601);
    let est = estimate_inference(&s, &Scenario::inference(), &DeviceOverheads::default()).unwrap();
    let per_layer_token = 2 * 8 * 128 * 2;
    assert_eq!(est.kv_bytes_per_token, 32 * per_layer_token);
    assert_eq!(
        est.kv_cache_bytes,
        32 * per_layer_token * 4_096 + 8 * per_layer_token * 6_404
    );
    let err = estimate_training(&s, &Scenario::default(), &DeviceOverheads::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("cross-attention"), "{err}");
}
