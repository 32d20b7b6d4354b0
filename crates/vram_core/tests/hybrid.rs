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
    // mamba-2 (transformers): conv state (7,680 + 2 × 8 × 128 = 9,728 channels) × kernel 4 in
    // bf16, and the scan's final state 96 heads × 80 × 128 in fp32, in 21 layers
    assert_eq!(
        est.state_bytes_per_sequence,
        21 * (9_728 * 4 * 2 + 7_680 * 128 * 4)
    );
}

#[test]
fn jamba_caches_its_four_attention_layers_and_28_mamba_states() {
    // AI21-Jamba-1.5-Mini: attention at layers 4, 12, 20, 28 (period 8, offset 4)
    let s = spec("ai21labs__AI21-Jamba-1.5-Mini");
    let est = estimate_inference(&s, &Scenario::inference(), &DeviceOverheads::default()).unwrap();
    assert_eq!(est.kv_bytes_per_token, 4 * 2 * 8 * 128 * 2);
    // mamba: d_inner 8,192 × conv 4 in bf16 + 8,192 × state 16 in fp32, in 28 layers
    assert_eq!(est.state_bytes_per_sequence, 28 * 8_192 * (4 * 2 + 16 * 4));
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
    // 18 recurrent layers × lru 2,560 × (conv 4 in bf16 + the LRU state in fp32)
    assert_eq!(est.state_bytes_per_sequence, 18 * 2_560 * (4 * 2 + 4));
}

#[test]
fn training_jamba_or_nemotron_h_is_refused_with_the_reason_not_estimated_without_its_mixers() {
    for id in [
        "ai21labs__AI21-Jamba-1.5-Mini",
        "nvidia__NVIDIA-Nemotron-3-Nano-4B-BF16",
    ] {
        let err = estimate_training(&spec(id), &Scenario::default(), &DeviceOverheads::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("state-space mixer"), "{id}: {err}");
    }
}

#[test]
fn recurrent_gemma_trains_and_checkpointing_keeps_the_recomputed_blocks_until_the_next_forward() {
    let s = spec("google__recurrentgemma-2b");
    let e = estimate_training(&s, &Scenario::default(), &DeviceOverheads::default()).unwrap();
    // 2,682,862,080 parameters (the tied embedding once): bf16 weights under bf16 autocast are
    // fp32 masters, 4 B each
    assert_eq!(e.weights_bytes, s.derived().params.total * 4);
    assert!(e.activations_bytes > 0);
    let ckpt = estimate_training(
        &s,
        &Scenario {
            grad_checkpointing: true,
            ..Scenario::default()
        },
        &DeviceOverheads::default(),
    )
    .unwrap();
    // after backward the 18 recurrent blocks' recomputed graphs are still referenced from their
    // modules: the optimizer step starts above weights + gradients + states
    let phase = |e: &vram_core::train::TrainEstimate, name: &str| {
        e.phases
            .iter()
            .find(|p| p.name == name)
            .map(|p| p.allocated_bytes)
            .unwrap()
    };
    // (at least each block's fp32 scan states, t·L·4; in all 4,861,384,704 B at b 1 × 2048)
    let left = phase(&ckpt, "optimizer") - phase(&e, "optimizer");
    assert!(left > 18 * 2_048 * 2_560 * 4, "{left}");
    assert!(ckpt.activations_bytes < e.activations_bytes);
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

#[test]
fn transformers_keeps_the_ssm_state_in_fp32_and_vllm_in_the_model_dtype() {
    // mamba-130m in bf16, measured on CPU with `vram measure --mode infer --dtype bf16` (transformers
    // 5.17): 2,654,208 B of cache = 24 layers × (conv 1,536 × 4 × 2 B + state 1,536 × 16 × 4 B)
    let s = spec("state-spaces__mamba-130m-hf");
    let mut sc = Scenario::inference();
    sc.seq_len = 512;
    let est = estimate_inference(&s, &sc, &DeviceOverheads::default()).unwrap();
    assert_eq!(
        est.state_bytes_per_sequence,
        24 * (1_536 * 4 * 2 + 1_536 * 16 * 4)
    );
    assert_eq!(est.state_bytes_per_sequence, 2_654_208);
    // vLLM (mamba_ssm_cache_dtype "auto"): both states in bf16, conv kernel − 1 columns
    let layout = vram_core::infer::kv_cache::KvLayout::new(
        &s,
        vram_core::scenario::Engine::Vllm,
        vram_core::infer::kv_cache::KvDtype::Bf16,
        vram_core::scenario::Dtype::Bf16,
        1,
        false,
    );
    assert_eq!(layout.state_bytes_per_sequence(), 24 * 1_536 * (3 + 16) * 2);
}
