//! vLLM start-up figures against published logs (shared research measured.md section H: vLLM v0.19
//! on an H100 of 79.19 GiB, `vllm serve` defaults: 8192 batched tokens, 1024 sequences). Every
//! other published log is checked in `vllm_startup_logs.rs`.

use vram_core::infer::estimate_inference;
use vram_core::presets::find;
use vram_core::report::DeviceOverheads;
use vram_core::scenario::{Engine, Scenario};
use vram_core::{parse_config, resolve_value, ModelSpec};

const GIB: f64 = (1u64 << 30) as f64;

fn spec(id: &str) -> ModelSpec {
    parse_config(find(id).unwrap().json, None).unwrap()
}

/// A preset with one config key replaced (the Instruct variants differ only in such keys).
fn patched(id: &str, key: &str, value: u64) -> ModelSpec {
    let mut v: serde_json::Value = serde_json::from_str(find(id).unwrap().json).unwrap();
    v[key] = value.into();
    resolve_value(&v, None).unwrap()
}

/// vLLM 0.19.0 on an H100, as in the logs.
fn vllm(util: f64) -> Scenario {
    let mut s = Scenario::inference();
    s.engine = Engine::Vllm;
    s.serving.gpu_memory_utilization = util;
    s.serving.vllm_version = "0.19.0".into();
    s.serving.gpu_name = "H100 80GB".into();
    s
}

fn rel(est: f64, measured: f64) -> f64 {
    (est - measured) / measured
}

#[test]
fn llama31_8b_weights_match_the_logged_model_loading_bytes() {
    // "Model loading took 14.9889 GiB": 8,030,261,248 × 2 B + rotary cache 131,072 × 128 × 2 B.
    let e = estimate_inference(
        &spec("meta-llama__Llama-3.1-8B"),
        &vllm(0.95),
        &DeviceOverheads::default(),
    )
    .unwrap();
    assert_eq!(e.serving.weights_per_gpu_bytes, 16_094_076_928);
    assert_eq!(e.weights_bytes, 16_094_076_928);
}

#[test]
fn llama31_8b_kv_tokens_within_3_percent_of_h3() {
    // H3: KV 58.11 GiB = 476,016 tokens; fp8 KV 952,032 tokens.
    let s = spec("meta-llama__Llama-3.1-8B");
    let e = estimate_inference(&s, &vllm(0.95), &DeviceOverheads::default()).unwrap();
    assert!(
        rel(e.serving.kv_tokens as f64, 476_016.0).abs() < 0.03,
        "{}",
        e.serving.kv_tokens
    );
    assert!(rel(e.serving.kv_pool_bytes as f64 / GIB, 58.11).abs() < 0.03);
    assert!(rel(e.serving.activation_peak_bytes as f64 / GIB, 1.89).abs() < 0.05);
    let mut fp8 = vllm(0.95);
    fp8.kv_dtype = Some("fp8".into());
    let e8 = estimate_inference(&s, &fp8, &DeviceOverheads::default()).unwrap();
    assert!(
        rel(e8.serving.kv_tokens as f64, 952_032.0).abs() < 0.03,
        "{}",
        e8.serving.kv_tokens
    );
}

#[test]
fn qwen25_7b_instruct_kv_tokens_within_3_percent_of_h6() {
    // H6: Qwen2.5-7B-Instruct (max_position_embeddings 32768): KV 58.53 GiB = 1,096,000 tokens.
    let s = patched("Qwen__Qwen2.5-7B", "max_position_embeddings", 32768);
    let e = estimate_inference(&s, &vllm(0.95), &DeviceOverheads::default()).unwrap();
    assert!(
        rel(e.serving.kv_tokens as f64, 1_096_000.0).abs() < 0.03,
        "{}",
        e.serving.kv_tokens
    );
    assert!(rel(e.serving.weights_per_gpu_bytes as f64 / GIB, 14.25).abs() < 0.01);
}

#[test]
fn tensor_parallel_and_fp8_weights_match_h4_and_h8() {
    let s = spec("meta-llama__Llama-3.1-8B");
    for (tp, logged) in [(2u64, 7.51), (4, 3.77)] {
        let mut sc = vllm(0.95);
        sc.serving.tensor_parallel_size = tp;
        let e = estimate_inference(&s, &sc, &DeviceOverheads::default()).unwrap();
        assert!(rel(e.serving.weights_per_gpu_bytes as f64 / GIB, logged).abs() < 0.005);
    }
    let mut sc = vllm(0.95);
    sc.weights = Some("fp8".into());
    let e = estimate_inference(&s, &sc, &DeviceOverheads::default()).unwrap();
    assert!(rel(e.serving.weights_per_gpu_bytes as f64 / GIB, 8.49).abs() < 0.005);
    assert!(rel(e.serving.kv_pool_bytes as f64 / GIB, 64.61).abs() < 0.03);
}

#[test]
fn max_concurrency_divides_blocks_by_pages_per_request() {
    // Llama-3.1-8B at max_model_len 32768: 2048 pages per request.
    let mut sc = vllm(0.95);
    sc.serving.max_model_len = 32768;
    let e = estimate_inference(
        &spec("meta-llama__Llama-3.1-8B"),
        &sc,
        &DeviceOverheads::default(),
    )
    .unwrap();
    assert_eq!(
        e.serving.max_concurrency,
        e.serving.num_blocks as f64 / 2048.0
    );
    assert_eq!(e.serving.kv_tokens, e.serving.num_blocks * 16);
}

#[test]
fn hybrid_gpt_oss_counts_tokens_per_group_and_caps_sliding_pages() {
    // 12 full + 12 sliding layers: groups of 12 layers share a page of 16 × 2048 B;
    // tokens = blocks / 2 groups × 16.
    let e = estimate_inference(
        &spec("openai__gpt-oss-20b"),
        &vllm(0.9),
        &DeviceOverheads::default(),
    )
    .unwrap();
    assert_eq!(e.serving.bytes_per_block, 16 * 2048 * 12);
    assert_eq!(e.serving.kv_tokens, e.serving.num_blocks / 2 * 16);
    // A request of 131,072 tokens: 8192 full pages + ⌈min(127 + 8192, 131072)/16⌉ + 1 = 521 sliding pages.
    assert_eq!(
        e.serving.max_concurrency,
        e.serving.num_blocks as f64 / (8192.0 + 521.0)
    );
}

#[test]
fn kv_projections_are_replicated_when_tp_exceeds_the_kv_heads() {
    // Llama-3.1-405B: 8 KV heads, head_dim 128, hidden 16,384, 126 layers, served with TP 16 (two
    // 8-GPU nodes). vLLM's QKVParallelLinear gives each rank one whole KV head: K and V are
    // 128 × 16,384 each per rank instead of 8 × 128 × 16,384 / 16, i.e. 2 × 128 × 16,384 × 8 / 16 =
    // 2,097,152 more elements per layer, × 126 layers × 2 B = 528,482,304 B per GPU.
    let s = spec("meta-llama__Llama-3.1-405B");
    let at = |tp: u64| {
        let mut sc = vllm(0.9);
        sc.serving.tensor_parallel_size = tp;
        estimate_inference(&s, &sc, &DeviceOverheads::default())
            .unwrap()
            .serving
            .weights_per_gpu_bytes
    };
    let norms: u64 = s
        .tensors
        .iter()
        .filter(|t| {
            matches!(
                t.component,
                vram_core::spec::Component::Norm | vram_core::spec::Component::FinalNorm
            )
        })
        .map(|t| t.numel() * t.count() * 2)
        .sum();
    let total = 405_853_388_800 * 2;
    let rope = 131_072 * 128 * 2;
    assert_eq!(
        at(8),
        (total - norms) / 8 + norms + rope,
        "TP 8 = KV heads: no replica"
    );
    assert_eq!(
        at(16),
        (total - norms) / 16 + norms + rope + 528_482_304,
        "TP 16: one KV head per GPU"
    );
}

/// Pipeline parallelism: Llama-3.1-8B on H100s with vLLM 0.19 (llm-d-planner's logs, measured.md
/// H5) loads 7.51 GiB of weights per GPU at PP 2 and 4.26 GiB at PP 4 — the first stage's layers
/// plus the embedding, or the last's plus lm_head and the final norm (get_pp_indices split).
#[test]
fn llama31_8b_pipeline_parallel_weights_per_gpu_match_vllm_logs() {
    let spec = vram_core::parse_config(
        vram_core::presets::find("meta-llama__Llama-3.1-8B")
            .unwrap()
            .json,
        None,
    )
    .unwrap();
    for (pp, logged_gib) in [(2u64, 7.51f64), (4, 4.26)] {
        let mut s = vllm(0.95);
        s.serving.pipeline_parallel_size = pp;
        let e = vram_core::infer::estimate_inference(
            &spec,
            &s,
            &vram_core::report::DeviceOverheads::default(),
        )
        .unwrap();
        let gib = e.serving.weights_per_gpu_bytes as f64 / (1u64 << 30) as f64;
        assert!(
            (gib - logged_gib).abs() < 0.01,
            "PP {pp}: {gib:.3} GiB vs {logged_gib}"
        );
    }
    assert_eq!(
        vram_core::infer::vllm_pipeline::stage_layers(32, 3),
        vec![11, 11, 10]
    );
    // `partitions[-i] += 1 for i in range(2, remaining + 2)`: the stages just before the last.
    assert_eq!(
        vram_core::infer::vllm_pipeline::stage_layers(30, 4),
        vec![7, 8, 8, 7]
    );
}

/// Data and expert parallelism of an MoE model (vLLM `FusedMoE`): each data-parallel engine holds
/// the dense weights whole (at TP 1) and its own KV cache, while the 128 routed experts of
/// Qwen3-30B-A3B are split over TP × DP GPUs; with expert parallelism whole experts,
/// `ceil(128 / 3) = 43` on the fullest of three GPUs.
#[test]
fn moe_experts_split_over_data_parallel_ranks_and_whole_with_expert_parallel() {
    let s = spec("Qwen__Qwen3-30B-A3B");
    let experts: u64 = s
        .tensors
        .iter()
        .filter(|t| t.component == vram_core::spec::Component::Experts)
        .map(|t| t.numel() * t.count() * 2)
        .sum();
    let weights = |dp: u64, ep: bool| {
        let mut sc = vllm(0.9);
        sc.serving.data_parallel_size = dp;
        sc.serving.enable_expert_parallel = ep;
        estimate_inference(&s, &sc, &DeviceOverheads::default())
            .unwrap()
            .serving
    };
    let one = weights(1, false);
    let dense = one.weights_per_gpu_bytes - experts;
    assert_eq!(weights(2, false).weights_per_gpu_bytes, dense + experts / 2);
    assert_eq!(
        weights(3, true).weights_per_gpu_bytes,
        dense + experts * 43 / 128
    );
    // each engine sizes its own cache: more room per GPU, the same bytes per token
    let two = weights(2, false);
    assert!(two.kv_pool_bytes > one.kv_pool_bytes);
    assert_eq!(two.bytes_per_block, one.bytes_per_block);
    // the experts see both ranks' tokens: a larger fused-MoE workspace
    assert!(two.moe_workspace_bytes > one.moe_workspace_bytes);
}

/// gpt-oss's MXFP4 experts as vLLM's MoE kernels lay them out: Marlin below Hopper pads each
/// expert's intermediate size to 128 and the hidden size to 256 — 2944 × 3072 instead of 2880 ×
/// 2880 — adding (14,413,824 − 13,219,200) B × 32 experts × 24 layers = 917,471,232 B on an A100
/// (logged 13.72 GiB, vLLM 0.19.0: measured.md; 13.69 estimated); Triton on Hopper pads nothing.
#[test]
fn mxfp4_experts_are_padded_for_marlin_below_hopper() {
    let s = spec("openai__gpt-oss-20b");
    let at = |gpu: &str| {
        let mut sc = vllm(0.65);
        sc.serving.gpu_name = gpu.into();
        estimate_inference(&s, &sc, &DeviceOverheads::default())
            .unwrap()
            .serving
            .weights_per_gpu_bytes
    };
    assert_eq!(
        at("NVIDIA A100 80 GB") - at("NVIDIA H100 80 GB"),
        917_471_232
    );
    assert!(rel(at("NVIDIA A100 80 GB") as f64 / GIB, 13.72).abs() < 0.005);
}
