//! The HF transformers profile through the public API, with hand-worked byte figures.

use vram_core::infer::{estimate_inference, max_batch, max_context};
use vram_core::presets::find;
use vram_core::report::DeviceOverheads;
use vram_core::scenario::{AttentionImpl, Dtype, Engine, Scenario};
use vram_core::{parse_config, ModelSpec};

fn spec(id: &str) -> ModelSpec {
    parse_config(find(id).unwrap().json, None).unwrap()
}

fn hf(dtype: Dtype, batch: u64, seq: u64) -> Scenario {
    let mut s = Scenario::inference();
    s.dtype = dtype;
    s.batch = batch;
    s.seq_len = seq;
    s
}

fn o() -> DeviceOverheads {
    DeviceOverheads::default()
}

#[test]
fn llama_7b_fp16_kv_at_2048_tokens_is_exactly_one_gib() {
    let e = estimate_inference(
        &spec("meta-llama__Llama-2-7b-hf"),
        &hf(Dtype::Fp16, 1, 2048),
        &o(),
    )
    .unwrap();
    assert_eq!(e.kv_cache_bytes, 1_073_741_824);
    assert_eq!(e.kv_bytes_per_token, 524_288);
}

#[test]
fn llama3_8b_kv_at_8192_tokens_is_exactly_one_gib() {
    let e = estimate_inference(
        &spec("meta-llama__Llama-3.1-8B"),
        &hf(Dtype::Bf16, 1, 8192),
        &o(),
    )
    .unwrap();
    assert_eq!(e.kv_cache_bytes, 1_073_741_824);
}

#[test]
fn llama3_8b_prefill_peak_is_weights_cache_and_largest_layer() {
    // weights 8,030,261,248 × 2; KV 4096 × 131,072; MLP 4096 × (2·4096 + 3·14336) × 2 = 419,430,400;
    // the last layer's input (held by the caller's loop) 4096 × 4096 × 2 = 33,554,432; inputs_embeds
    // (held by LlamaModel.forward) 33,554,432; int64 position ids 4096 × 8 = 32,768; rotary cos/sin
    // (batch 1) 4096 × 128 × 2 × 2 = 2,097,152. Sum 488,669,184.
    let e = estimate_inference(
        &spec("meta-llama__Llama-3.1-8B"),
        &hf(Dtype::Bf16, 1, 4096),
        &o(),
    )
    .unwrap();
    let prefill = e.phases.iter().find(|p| p.name == "prefill").unwrap();
    assert_eq!(
        e.activations_bytes,
        419_430_400 + 33_554_432 + 33_554_432 + 32_768 + 2_097_152
    );
    assert_eq!(e.activations_bytes, 488_669_184);
    assert_eq!(
        prefill.peak_allocated_bytes,
        16_060_522_496 + 536_870_912 + 488_669_184
    );
    // After the prefill: weights, cache and the last position's logits (128,256 × 2 B).
    assert_eq!(
        prefill.allocated_bytes,
        16_060_522_496 + 536_870_912 + 256_512
    );
    assert_eq!(e.peak_allocated_bytes, prefill.peak_allocated_bytes);
    assert_eq!(
        e.device_bytes,
        e.peak_allocated_bytes + (500 << 20) + (32 << 20)
    );
}

#[test]
fn gemma2_hf_keeps_prompt_storage_until_the_first_decode_and_vllm_pages_the_window() {
    // 13 full + 13 sliding layers (window 4096), 4096 B/token/layer.
    let s = spec("google__gemma-2-2b");
    let e = estimate_inference(&s, &hf(Dtype::Bf16, 1, 8192), &o()).unwrap();
    assert_eq!(e.kv_cache_bytes, 13 * 4096 * 8192 + 13 * 4096 * 4096);
    let prefill = e.phases.iter().find(|p| p.name == "prefill").unwrap();
    assert!(prefill
        .components
        .contains(&("kv_cache".into(), 26 * 4096 * 8192)));
    let decode = e.phases.iter().find(|p| p.name == "decode").unwrap();
    // After one decode step: full layers 8193 tokens, sliding layers exactly the window.
    let logits = 256_000 * 2;
    let weights = e.weights_bytes;
    assert_eq!(
        decode.allocated_bytes,
        weights + 13 * 4096 * 8193 + 13 * 4096 * 4096 + logits
    );
    let mut v = hf(Dtype::Bf16, 1, 8192);
    v.engine = Engine::Vllm;
    let ev = estimate_inference(&s, &v, &o()).unwrap();
    // vLLM: 512 pages for full layers, ⌈4095/16⌉ + 1 = 257 pages for sliding ones.
    assert_eq!(ev.kv_cache_bytes, 13 * 4096 * 8192 + 13 * 4096 * 257 * 16);
}

#[test]
fn gpt_oss_20b_mxfp4_from_config_and_window_128() {
    let s = spec("openai__gpt-oss-20b");
    let e = estimate_inference(&s, &hf(Dtype::Bf16, 2, 4096), &o()).unwrap();
    assert_eq!(e.weights_format, "mxfp4");
    assert_eq!(e.weights_format_source, "quantization_config");
    // 12 full layers × 4096 + 12 sliding × 128 tokens, 2048 B/token/layer, batch 2.
    assert_eq!(e.kv_cache_bytes, 2 * (12 * 2048 * 4096 + 12 * 2048 * 128));
}

#[test]
fn deepseek_v3_mla_is_cached_as_a_latent_in_vllm_and_in_transformers() {
    let s = spec("deepseek-ai__DeepSeek-V3");
    let mut v = hf(Dtype::Bf16, 1, 1024);
    v.engine = Engine::Vllm;
    let ev = estimate_inference(&s, &v, &o()).unwrap();
    assert_eq!(ev.kv_bytes_per_token, 70_272);
    assert_eq!(ev.kv_cache_bytes, 70_272 * 1024);
    assert_eq!(ev.weights_format, "fp8-block");
    // transformers ≥ 5.15 caches the same latent (5.14 and earlier: 61 × 128 × (192 + 128) × 2 B)
    let eh = estimate_inference(&s, &hf(Dtype::Bf16, 1, 1024), &o()).unwrap();
    assert_eq!(eh.kv_bytes_per_token, 70_272);
}

#[test]
fn mamba_130m_state_does_not_grow_with_context() {
    let s = spec("state-spaces__mamba-130m-hf");
    let a = estimate_inference(&s, &hf(Dtype::Fp32, 1, 128), &o()).unwrap();
    let b = estimate_inference(&s, &hf(Dtype::Fp32, 1, 65_536), &o()).unwrap();
    assert_eq!(a.kv_cache_bytes, 24 * 1536 * (4 + 16) * 4);
    assert_eq!(a.kv_cache_bytes, b.kv_cache_bytes);
    assert_eq!(a.state_bytes_per_sequence, 2_949_120);
}

#[test]
fn eager_attention_costs_more_than_sdpa_at_long_prompts() {
    let s = spec("meta-llama__Llama-3.1-8B");
    let mut eager = hf(Dtype::Bf16, 1, 4096);
    eager.attention = AttentionImpl::Eager;
    let e = estimate_inference(&s, &eager, &o()).unwrap();
    let d = estimate_inference(&s, &hf(Dtype::Bf16, 1, 4096), &o()).unwrap();
    // At the softmax: the normed input and rotated q 4096 × (4096 + 4096) × 2 = 134,217,728 / 2;
    // repeat_kv's K and V copies at 32 heads 4096 × 32 × (128 + 128) × 2 = 67,108,864; bf16 scores,
    // their fp32 copy and the fp32 softmax 32 × 4096² × (2 + 4 + 4) = 5,368,709,120 replace the MLP
    // as the largest layer; the layer's input, inputs_embeds and the 4096² × 2 B mask 33,554,432
    // each; position ids 32,768; rotary 2,097,152. Sum 5,605,720,064.
    assert_eq!(
        e.activations_bytes,
        4096 * (4096 + 4096) * 2
            + 4096 * 32 * (128 + 128) * 2
            + 32 * 4096 * 4096 * 10
            + 3 * 4096 * 4096 * 2
            + 4096 * 8
            + 2_097_152
    );
    assert_eq!(e.activations_bytes, 5_605_720_064);
    assert!(e.peak_allocated_bytes > d.peak_allocated_bytes + (7u64 << 29));
}

#[test]
fn bad_weight_format_is_an_error_naming_the_field() {
    let mut s = hf(Dtype::Bf16, 1, 128);
    s.weights = Some("q9_k".into());
    let err = estimate_inference(&spec("meta-llama__Llama-3.1-8B"), &s, &o()).unwrap_err();
    assert!(err.to_string().starts_with("weights: expected one of"));
}

#[test]
fn solvers_return_the_boundary() {
    let s = spec("meta-llama__Llama-3.1-8B");
    // Batch 4: the 131,072-token cap of the config does not fit, so the search finds the boundary.
    let mut sc = hf(Dtype::Bf16, 4, 4096);
    let ctx = max_context(&s, &sc, &o()).unwrap();
    assert!(ctx > 4096 && ctx < 131_072, "{ctx}");
    sc.seq_len = ctx;
    let at = estimate_inference(&s, &sc, &o()).unwrap();
    assert!(at.device_bytes <= sc.serving.gpu_memory_bytes);
    sc.seq_len = ctx + 1;
    let over = estimate_inference(&s, &sc, &o()).unwrap();
    assert!(over.device_bytes > sc.serving.gpu_memory_bytes);
    // vLLM at 8192 tokens: as many sequences as the pool holds pages for.
    let mut v = hf(Dtype::Bf16, 1, 8192);
    v.engine = Engine::Vllm;
    assert_eq!(
        max_context(&s, &hf(Dtype::Bf16, 1, 4096), &o()).unwrap(),
        131_072
    );
    let n = max_batch(&s, &v, &o()).unwrap();
    v.serving.max_model_len = 8192;
    let e = estimate_inference(&s, &v, &o()).unwrap();
    assert_eq!(n, e.serving.concurrency_at_context.floor() as u64);
}

/// `device_map="auto"` over several GPUs splits the modules as accelerate 1.15 does
/// (`get_balanced_memory` + `infer_auto_device_map`, run on the meta device with transformers
/// 5.17 for these four cases).
#[test]
fn device_map_auto_splits_layers_as_accelerate_does() {
    let spec = |id: &str| {
        vram_core::parse_config(vram_core::presets::find(id).unwrap().json, None).unwrap()
    };
    // (model, GPUs, free bytes per GPU, (first layer, layers, embedding, head) per GPU)
    type Share = (u64, u64, bool, bool);
    let cases: [(&str, u64, u64, &[Share]); 4] = [
        (
            "meta-llama__Llama-3.1-8B",
            2,
            24_000_000_000,
            &[(0, 14, true, false), (14, 18, false, true)],
        ),
        (
            "meta-llama__Llama-3.1-8B",
            3,
            24_000_000_000,
            &[
                (0, 8, true, false),
                (8, 13, false, false),
                (21, 11, false, true),
            ],
        ),
        (
            "meta-llama__Llama-2-70b-hf",
            4,
            84_500_000_000,
            &[
                (0, 20, true, false),
                (20, 21, false, false),
                (41, 21, false, false),
                (62, 18, false, true),
            ],
        ),
        (
            "Qwen__Qwen2.5-3B",
            2,
            10_000_000_000,
            &[(0, 15, true, false), (15, 21, false, true)],
        ),
    ];
    for (id, gpus, free, want) in cases {
        let shares = vram_core::infer::device_map::balanced(&spec(id), 2, gpus, free).unwrap();
        let got: Vec<(u64, u64, bool, bool)> = shares
            .iter()
            .map(|d| (d.first_layer, d.layers, d.embedding, d.head))
            .collect();
        assert_eq!(got, want, "{id} on {gpus} GPUs");
    }
}
