//! Per-rank figures of parallel layouts, worked by hand (issue 10).

use vram_core::layout::{Framework, Layout, Recompute};
use vram_core::report::DeviceOverheads;
use vram_core::scenario::Engine;
use vram_core::scenario::*;
use vram_core::train::estimate_training;

fn spec(id: &str) -> vram_core::ModelSpec {
    vram_core::parse_config(vram_core::presets::find(id).unwrap().json, None).unwrap()
}

fn megatron(gpus: u64, tp: u64, pp: u64) -> Scenario {
    Scenario {
        dtype: Dtype::Bf16,
        mixed_precision: MixedPrecision::Bf16,
        batch: 1,
        seq_len: 4096,
        gpus,
        layout: Layout {
            framework: Framework::Megatron,
            tp,
            pp,
            sequence_parallel: tp > 1,
            ..Layout::default()
        },
        ..Scenario::default()
    }
}

fn train(id: &str, s: &Scenario) -> vram_core::train::TrainEstimate {
    estimate_training(&spec(id), s, &DeviceOverheads::default()).unwrap()
}

#[test]
fn llama2_7b_megatron_tp2_pp2_stage_parameters_are_exact() {
    // h 4096, V 32000 (a multiple of 128 × 2: no padding), 32 layers, ffn 11008, untied.
    // One layer: attention 4·h² = 67,108,864 + MLP 3·h·f = 135,266,304, split by TP 2 →
    // 101,187,584; its two RMSNorm weights (8,192) are replicated → 101,195,776 per layer and TP
    // rank. 16 layers per stage = 1,619,132,416.
    // Stage 0 adds the embedding V·h / 2 = 65,536,000 → 1,684,668,416.
    // Stage 1 adds lm_head V·h / 2 = 65,536,000 and the final norm 4,096 → 1,684,672,512.
    let e = train("meta-llama__Llama-2-7b-hf", &megatron(8, 2, 2));
    assert_eq!(e.ranks.len(), 2);
    assert_eq!(e.ranks[0].params, 1_684_668_416);
    assert_eq!(e.ranks[1].params, 1_684_672_512);
    assert_eq!(
        (e.ranks[0].role.as_str(), e.ranks[1].role.as_str()),
        ("embedding", "head")
    );
    // 18 B per parameter without the distributed optimizer: bf16 weight 2, fp32 main grad 4,
    // fp32 master 4 + Adam 8.
    let r = &e.ranks[1];
    assert_eq!(r.weights_bytes, 1_684_672_512 * 2);
    assert_eq!(r.gradients_bytes, 1_684_672_512 * 4);
    assert_eq!(r.optimizer_bytes, 1_684_672_512 * 12);
    assert_eq!(r.count, 4);
    assert_eq!(e.max_rank_device_bytes, e.device_bytes);
    assert_eq!(
        e.device_bytes,
        e.ranks.iter().map(|r| r.device_bytes).max().unwrap()
    );
}

#[test]
fn llama2_7b_stage0_activations_per_token_and_layer_are_worked_by_hand() {
    // TE layer, bf16, TP 2 with sequence parallel, seq 4096, micro-batch 1, one micro-batch:
    // norm region 2 norms × (input + output) × h = 16,384 elements × 2 B / SP 2 = 16,384 B;
    // attention q + out 2·32·128 + k, v 2·32·128 = 16,384 and SwiGLU 3·11,008 = 33,024 elements
    // → 49,408 × 2 B + fp32 log-sum-exp 32 × 4 B = 98,944 B / TP 2 = 49,472 B.
    // 65,856 B per token and layer × 4,096 tokens × 16 layers + token ids 4,096 × 8 B.
    let e = train("meta-llama__Llama-2-7b-hf", &megatron(8, 2, 2));
    assert_eq!(e.ranks[0].activations_bytes, 65_856 * 4096 * 16 + 4096 * 8);
    assert_eq!(e.ranks[0].in_flight_micro_batches, 1);
}

#[test]
fn first_stage_holds_pp_micro_batches_in_flight_under_1f1b() {
    let mut s = megatron(8, 2, 4);
    s.grad_accumulation = 16;
    let e = train("meta-llama__Llama-2-7b-hf", &s);
    let flights: Vec<u64> = e.ranks.iter().map(|r| r.in_flight_micro_batches).collect();
    // Stages 1 and 2 are alike only in layers; their in-flight counts differ (3 and 2).
    assert_eq!(flights, vec![4, 3, 2, 1]);
    // Interleaved with 2 virtual stages: (pp − 1) · 2 + (vpp − 1) · pp + 1 = 11 chunk micro-batches
    // of 4 layers on the first stage, i.e. 44 layer-micro-batches against 1F1B's 4 × 8 = 32.
    s.layout.vpp = 2;
    let i = train("meta-llama__Llama-2-7b-hf", &s);
    assert_eq!(i.ranks[0].in_flight_micro_batches, 11);
    assert!(i.ranks[0].activations_bytes > e.ranks[0].activations_bytes);
}

#[test]
fn distributed_optimizer_shards_master_and_moments_over_data_parallel_ranks() {
    // 6 + 12 / dp bytes per parameter (theoretical_memory_usage.py).
    let mut s = megatron(16, 2, 2);
    s.layout.distributed_optimizer = true;
    let e = train("meta-llama__Llama-2-7b-hf", &s);
    let r = &e.ranks[0];
    assert_eq!(r.optimizer_bytes, (r.params * 12).div_ceil(4));
}

#[test]
fn deepseek_v3_ep8_keeps_32_of_256_experts_per_rank() {
    let spec = spec("deepseek-ai__DeepSeek-V3");
    let experts: u64 = spec
        .tensors
        .iter()
        .filter(|t| t.component == vram_core::spec::Component::Experts)
        .map(|t| t.numel() * t.count())
        .sum();
    let dense_1 = {
        let mut s = megatron(8, 1, 1);
        s.layout.ep = 8;
        s.layout.etp = 1;
        s
    };
    let e = estimate_training(&spec, &dense_1, &DeviceOverheads::default()).unwrap();
    let params = e.ranks[0].params;
    let total: u64 = spec.tensors.iter().map(|t| t.numel() * t.count()).sum();
    // Everything but the routed experts on every rank, and 32 of 256 experts: 1/8 of them.
    assert_eq!(experts % 8, 0);
    assert_eq!(params, total - experts + experts / 8);
}

#[test]
fn bad_layouts_name_the_flag_and_the_constraint() {
    let llama = spec("meta-llama__Llama-2-7b-hf");
    let err = |s: &Scenario| {
        estimate_training(&llama, s, &DeviceOverheads::default())
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        err(&megatron(6, 4, 1)),
        "gpus: expected a multiple of tp × pp × cp = 4 × 1 × 1 = 4, found 6"
    );
    assert_eq!(
        err(&megatron(24, 3, 1)),
        "tp: expected a divisor of the 32 attention heads, found 3"
    );
    assert_eq!(
        err(&megatron(64, 1, 64)),
        "pp: expected at most the model's 32 layers (each stage needs a layer), found 64"
    );
    let mut ep = megatron(8, 1, 1);
    ep.layout.ep = 8;
    assert_eq!(
        err(&ep),
        "ep: expected 1 for a dense model (expert parallel splits MoE experts), found 8"
    );
    let mixtral = spec("mistralai__Mixtral-8x7B-v0.1");
    let mut ep3 = megatron(6, 1, 1);
    ep3.layout.ep = 3;
    assert_eq!(
        estimate_training(&mixtral, &ep3, &DeviceOverheads::default())
            .unwrap_err()
            .to_string(),
        "ep: expected a divisor of the 8 experts, found 3"
    );
    let mut hf_pp = megatron(2, 1, 2);
    hf_pp.layout.framework = Framework::Hf;
    assert!(err(&hf_pp).starts_with("framework: expected megatron or torchtitan"));
    // transformers' tensor parallelism: only what its llama-family plan splits, without LoRA
    let gpt2 = spec("openai-community__gpt2");
    let mut hf_tp = hf_tensor_parallel(2);
    let e = estimate_training(&gpt2, &hf_tp, &DeviceOverheads::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("tp: expected with --framework hf, a model that transformers' llama-family tensor-parallel plan splits"),
        "{e}"
    );
    assert!(
        e.ends_with("found model_type \"gpt2\" with a tensor-parallel plan other than the llama family's (or none) in transformers 5.24"),
        "{e}"
    );
    hf_tp.lora = Some(Lora {
        r: 8,
        alpha: 16,
        targets: LoraTargets::default(),
        base_quant: BaseQuant::None,
    });
    let e = err(&hf_tp);
    assert!(
        e.starts_with("lora: expected no LoRA with --framework hf --tp"),
        "{e}"
    );
}

fn hf_tensor_parallel(tp: u64) -> Scenario {
    Scenario {
        dtype: Dtype::Fp32,
        mixed_precision: MixedPrecision::None,
        optimizer: Optimizer::Adamw,
        batch: 1,
        seq_len: 512,
        gpus: tp,
        layout: Layout {
            framework: Framework::Hf,
            tp,
            ..Layout::default()
        },
        ..Scenario::default()
    }
}

#[test]
fn hf_tensor_parallel_splits_layers_and_vocabulary_and_keeps_the_embedding_gradient_whole() {
    // TinyLlama-1.1B (untied, V 32,000, h 2048, 22 layers, 32 heads / 4 K/V heads × 64, ffn 5632)
    // under transformers' tp_plan at TP 2. One layer: q 4,194,304 + k 524,288 + v 524,288 +
    // o 4,194,304 + 3 × 11,534,336 = 44,040,192, halved = 22,020,096, plus its two norms 4,096
    // whole = 22,024,192; × 22 = 484,532,224. Embedding and lm_head: 32,000 · 2048 / 2 =
    // 32,768,000 each; final norm 2,048. Per rank: 550,070,272 parameters.
    let e = train(
        "TinyLlama__TinyLlama-1.1B-Chat-v1.0",
        &hf_tensor_parallel(2),
    );
    assert_eq!(e.ranks.len(), 1);
    let r = &e.ranks[0];
    assert_eq!((r.count, r.params), (2, 550_070_272));
    assert_eq!(r.weights_bytes, 550_070_272 * 4);
    // DTensor computes the embedding's gradient whole (Replicate): + 32,768,000 elements
    assert_eq!(r.gradients_bytes, (550_070_272 + 32_768_000) * 4);
    assert_eq!(r.optimizer_bytes, 550_070_272 * 8);
    // each rank runs 16 of the 32 heads: the layers' saved tensors are those of the half-width
    // model, never more than one GPU's
    let one = train(
        "TinyLlama__TinyLlama-1.1B-Chat-v1.0",
        &Scenario {
            gpus: 1,
            layout: Layout::default(),
            ..hf_tensor_parallel(2)
        },
    );
    assert!(r.activations_bytes < one.activations_bytes);
    assert!(r.peak_allocated_bytes < one.peak_allocated_bytes);
}

#[test]
fn full_recompute_keeps_only_layer_inputs() {
    let mut s = megatron(8, 2, 2);
    let none = train("meta-llama__Llama-2-7b-hf", &s);
    s.layout.recompute = Recompute::Full;
    let full = train("meta-llama__Llama-2-7b-hf", &s);
    // 16 layers × 4,096 tokens × h 4,096 × 2 B / SP 2, plus the token ids.
    assert_eq!(full.ranks[0].activations_bytes, 16 * 4096 * 4096 + 4096 * 8);
    assert!(full.peak_allocated_bytes < none.peak_allocated_bytes);
}

#[test]
fn plain_data_parallel_has_one_rank_kind_equal_to_the_headline() {
    let s = Scenario {
        gpus: 4,
        zero: ZeroStage(2),
        ..Scenario::default()
    };
    let e = train("meta-llama__Llama-3.1-8B", &s);
    assert_eq!(e.ranks.len(), 1);
    assert_eq!(e.ranks[0].count, 4);
    assert_eq!(e.ranks[0].device_bytes, e.device_bytes);
    assert_eq!(e.ranks[0].peak_allocated_bytes, e.peak_allocated_bytes);
    assert_eq!(e.max_rank_device_bytes, e.device_bytes);
}

#[test]
fn fsdp2_shards_hf_model_states_over_the_data_parallel_ranks() {
    let one = train("meta-llama__Llama-3.1-8B", &Scenario::default());
    let s = Scenario {
        gpus: 8,
        layout: Layout {
            fsdp2: true,
            ..Layout::default()
        },
        ..Scenario::default()
    };
    let e = train("meta-llama__Llama-3.1-8B", &s);
    let r = &e.ranks[0];
    assert_eq!(r.weights_bytes, one.weights_bytes.div_ceil(8));
    assert_eq!(r.gradients_bytes, one.gradients_bytes.div_ceil(8));
    assert_eq!(r.optimizer_bytes, one.optimizer_bytes.div_ceil(8));
    assert_eq!(r.activations_bytes, one.activations_bytes);
    // HSDP with 2 replicas shards over 4 ranks: more per rank than FSDP over 8.
    let mut h = s.clone();
    h.layout.hsdp_replicas = 2;
    let hs = train("meta-llama__Llama-3.1-8B", &h);
    assert_eq!(hs.ranks[0].optimizer_bytes, one.optimizer_bytes.div_ceil(4));
}

/// meta-llama/Llama-3.1-70B's config.json (https://huggingface.co/meta-llama/Llama-3.1-70B): the
/// 8B's with hidden 8192, MLP 28672, 80 layers, 64 heads — 70,553,706,496 parameters.
const LLAMA_31_70B: &str = r#"{"architectures":["LlamaForCausalLM"],"attention_bias":false,"attention_dropout":0.0,
"hidden_act":"silu","hidden_size":8192,"intermediate_size":28672,"max_position_embeddings":131072,"mlp_bias":false,
"model_type":"llama","num_attention_heads":64,"num_hidden_layers":80,"num_key_value_heads":8,"rms_norm_eps":1e-05,
"rope_scaling":{"factor":8.0,"low_freq_factor":1.0,"high_freq_factor":4.0,"original_max_position_embeddings":8192,"rope_type":"llama3"},
"rope_theta":500000.0,"tie_word_embeddings":false,"torch_dtype":"bfloat16","vocab_size":128256}"#;

#[test]
fn llama31_70b_tp8_serving_weights_per_gpu_are_worked_by_hand() {
    let spec = vram_core::parse_config(LLAMA_31_70B, None).unwrap();
    assert_eq!(spec.derived().params.total, 70_553_706_496);
    let mut s = Scenario::inference();
    s.engine = Engine::Vllm;
    s.serving.tensor_parallel_size = 8;
    let e = vram_core::infer::estimate_inference(&spec, &s, &DeviceOverheads::default()).unwrap();
    // Embedding and lm_head 128,256 × 8,192 each (128,256 is a multiple of vLLM's 64-row padding)
    // split 8 ways: 262,668,288. Layers: 80 × 855,654,400 of which the 2 × 8,192 RMSNorm weights
    // per layer are replicated: (68,452,352,000 − 1,310,720) / 8 + 1,310,720 = 8,557,690,880.
    // Final norm 8,192. 8,820,367,360 parameters × 2 B, plus the rotary cos/sin cache every rank
    // builds (131,072 positions × 128 × 2 B = 33,554,432).
    assert_eq!(
        e.serving.weights_per_gpu_bytes,
        8_820_367_360 * 2 + 131_072 * 128 * 2
    );
}

#[test]
fn planner_never_proposes_a_layout_that_does_not_fit_and_finds_tp8_for_70b_serving() {
    let spec = vram_core::parse_config(LLAMA_31_70B, None).unwrap();
    let gpu = *vram_core::gpu_catalog::find("h100-80").unwrap();
    let mut base = Scenario::inference();
    base.seq_len = 8192;
    base.batch = 32;
    let req = vram_core::plan::PlanRequest {
        task: vram_core::plan::PlanTask::Serve,
        base,
        gpu,
        gpus: 8,
        gpus_per_node: 8,
        global_batch: 0,
        framework: None,
    };
    let r = vram_core::plan::plan(&spec, &req, "meta-llama/Llama-3.1-70B");
    assert!(!r.plans.is_empty());
    for p in &r.plans {
        assert!(p.fits && p.max_rank_device_bytes * 100 <= p.usable_bytes * 95);
    }
    // 141 GB of bf16 weights need at least 2 GPUs before any KV cache; the plans use 4 or 8.
    assert!(r.plans.iter().all(|p| p.gpus >= 4));
    assert!(r.plans.iter().any(|p| p.tensor_parallel_size == 8));
    assert!(r.plans[0].launch[0].text.contains("--tensor-parallel-size"));
}

#[test]
fn planner_training_plans_all_fit_with_headroom_and_rank_fewest_gpus_first() {
    let spec = spec("meta-llama__Llama-2-7b-hf");
    let gpu = *vram_core::gpu_catalog::find("h100-80").unwrap();
    let base = Scenario {
        dtype: Dtype::Bf16,
        mixed_precision: MixedPrecision::Bf16,
        batch: 2,
        seq_len: 4096,
        ..Scenario::default()
    };
    let req = vram_core::plan::PlanRequest {
        task: vram_core::plan::PlanTask::Train,
        base,
        gpu,
        gpus: 16,
        gpus_per_node: 8,
        global_batch: 256,
        framework: Some(Framework::Megatron),
    };
    let r = vram_core::plan::plan(&spec, &req, "meta-llama/Llama-2-7b-hf");
    assert!(!r.plans.is_empty());
    let usable = gpu.usable_bytes;
    for p in &r.plans {
        assert!(
            p.ranks.iter().all(|k| k.device_bytes * 100 <= usable * 95),
            "{}",
            p.summary
        );
    }
    assert!(r.plans.windows(2).all(|w| w[0].gpus <= w[1].gpus));
    // The published layouts of PR #482 (DP·TP·PP = 8 on 80 GB cards) are among the fitting ones.
    assert!(r
        .plans
        .iter()
        .any(|p| p.gpus == 8 && p.layout.tp == 2 && p.layout.pp == 1));
    let megatron = &r.plans[0].launch[0].text;
    assert!(megatron.contains("--tensor-model-parallel-size"));
    assert!(megatron.contains("--micro-batch-size"));
}

/// Megatron-LM PR #482 (https://github.com/NVIDIA/Megatron-LM/pull/482): Llama-2-7B on 8 × H800,
/// `torch.cuda.max_memory_allocated` in GiB, 2023 legacy layers with Megatron's default dropout,
/// distributed optimizer, seq 2048 (docs/accuracy-parallel.md). Each within 1 %.
#[test]
fn megatron_pr482_llama2_7b_rows_are_within_one_percent() {
    let llama = spec("meta-llama__Llama-2-7b-hf");
    for (tp, pp, mbs, gbs, measured_gib) in [
        (1u64, 1u64, 2u64, 2048u64, 69.1f64),
        (2, 1, 4, 512, 55.7),
        (1, 2, 2, 2048, 49.8),
        (8, 1, 4, 128, 28.8),
    ] {
        let mut s = megatron(8, tp, pp);
        s.batch = mbs;
        s.seq_len = 2048;
        s.layout.sequence_parallel = false;
        s.layout.distributed_optimizer = true;
        s.layout.global_batch = gbs;
        s.layout.transformer_impl = vram_core::layout::TransformerImpl::Local;
        s.layout.dropout = true;
        let e = estimate_training(&llama, &s, &DeviceOverheads::default()).unwrap();
        let gib = e.peak_allocated_bytes as f64 / (1u64 << 30) as f64;
        let err = gib / measured_gib - 1.0;
        assert!(
            err.abs() < 0.01,
            "tp {tp} pp {pp}: {gib:.2} GiB vs {measured_gib} ({:+.1} %)",
            err * 100.0
        );
    }
}

/// Megatron-Bridge's Qwen3-30B-A3B EP 16 on 16 × H100: rank-0 peak allocated 62.166 GiB
/// (skills/nemo-mbridge-perf-moe-hardware-configs/SKILL.md). Within 5 %.
#[test]
fn megatron_bridge_qwen3_30b_ep16_is_within_five_percent() {
    let q = spec("Qwen__Qwen3-30B-A3B");
    let mut s = megatron(16, 1, 1);
    s.layout.ep = 16;
    s.layout.etp = 1;
    s.layout.distributed_optimizer = true;
    s.layout.global_batch = 1024;
    let e = estimate_training(&q, &s, &DeviceOverheads::default()).unwrap();
    let gib = e.peak_allocated_bytes as f64 / (1u64 << 30) as f64;
    assert!((gib / 62.166 - 1.0).abs() < 0.05, "{gib:.2} GiB vs 62.166");
}

#[test]
fn planner_tries_context_parallel_for_long_sequences_only_and_its_plans_are_the_estimates_of_their_layouts(
) {
    let spec = spec("meta-llama__Llama-3.1-8B");
    let gpu = *vram_core::gpu_catalog::find("h100-80").unwrap();
    let request = |seq_len: u64| vram_core::plan::PlanRequest {
        task: vram_core::plan::PlanTask::Train,
        base: Scenario {
            dtype: Dtype::Bf16,
            mixed_precision: MixedPrecision::Bf16,
            batch: 1,
            seq_len,
            ..Scenario::default()
        },
        gpu,
        gpus: 8,
        gpus_per_node: 8,
        global_batch: 64,
        framework: Some(Framework::Megatron),
    };
    // 2k tokens: no CP layout is tried
    let short = vram_core::plan::plan(&spec, &request(2048), "meta-llama/Llama-3.1-8B");
    assert!(short.plans.iter().all(|p| p.layout.cp == 1));
    // 32k tokens: CP 2 (and more) layouts are tried; those that fit are the core's estimates
    let long = vram_core::plan::plan(&spec, &request(32768), "meta-llama/Llama-3.1-8B");
    assert!(long.considered > short.considered);
    let cp: Vec<_> = long.plans.iter().filter(|p| p.layout.cp > 1).collect();
    assert!(!cp.is_empty(), "a CP layout fits 8 H100s at 32k tokens");
    for p in &cp {
        assert!(
            32768 % (2 * p.layout.cp * p.layout.tp) == 0,
            "{}",
            p.summary
        );
        let s = Scenario {
            gpus: p.gpus,
            batch: p.micro_batch,
            layout: p.layout.clone(),
            ..request(32768).base
        };
        let e =
            vram_core::train::estimate_training(&spec, &s, &DeviceOverheads::default()).unwrap();
        assert_eq!(
            e.max_rank_device_bytes, p.max_rank_device_bytes,
            "{}",
            p.summary
        );
        assert!(p.max_rank_device_bytes * 100 <= gpu.usable_bytes * 95);
        assert!(
            p.launch[0]
                .text
                .contains(&format!("--context-parallel-size {}", p.layout.cp)),
            "{}",
            p.launch[0].text
        );
    }
}

#[test]
fn planner_tries_interleaved_pipelines_and_ranks_their_smaller_bubble_first() {
    let spec = spec("meta-llama__Llama-2-70b-hf");
    let gpu = *vram_core::gpu_catalog::find("h100-80").unwrap();
    let req = vram_core::plan::PlanRequest {
        task: vram_core::plan::PlanTask::Train,
        base: Scenario {
            batch: 2,
            ..Scenario::default()
        },
        gpu,
        gpus: 16,
        gpus_per_node: 8,
        global_batch: 0,
        framework: Some(Framework::Megatron),
    };
    let r = vram_core::plan::plan(&spec, &req, "meta-llama/Llama-2-70b-hf");
    let vpp: Vec<_> = r.plans.iter().filter(|p| p.layout.vpp > 1).collect();
    assert!(!vpp.is_empty(), "an interleaved layout fits 16 H100s");
    for p in &vpp {
        let m = p.layout.micro_batches(p.gpus, p.micro_batch, 1);
        assert!(m % p.layout.pp == 0, "{}", p.summary);
        let s = Scenario {
            gpus: p.gpus,
            batch: p.micro_batch,
            layout: p.layout.clone(),
            ..req.base.clone()
        };
        let e = estimate_training(&spec, &s, &DeviceOverheads::default()).unwrap();
        assert_eq!(
            e.max_rank_device_bytes, p.max_rank_device_bytes,
            "{}",
            p.summary
        );
        assert!(p.launch[0]
            .text
            .contains("--num-virtual-stages-per-pipeline-rank 2"));
        // the same layout without interleaving has the larger bubble and ranks after it
        let plain = r.plans.iter().position(|q| {
            q.layout.vpp == 1
                && q.layout.tp == p.layout.tp
                && q.layout.pp == p.layout.pp
                && q.micro_batch == p.micro_batch
                && q.layout.recompute == p.layout.recompute
        });
        let at = r.plans.iter().position(|q| std::ptr::eq(q, *p));
        if let (Some(plain), Some(at)) = (plain, at) {
            assert!(r.plans[plain].cost.bubble > p.cost.bubble);
            assert!(
                at < plain,
                "{} before {}",
                p.summary,
                r.plans[plain].summary
            );
        }
    }
}

#[test]
fn planner_offers_transformers_tensor_parallelism_for_full_training_only() {
    let spec = spec("meta-llama__Llama-3.1-8B");
    let gpu = *vram_core::gpu_catalog::find("h100-80").unwrap();
    let base = Scenario {
        dtype: Dtype::Bf16,
        mixed_precision: MixedPrecision::Bf16,
        batch: 1,
        seq_len: 4096,
        ..Scenario::default()
    };
    let req = |task, base: Scenario| vram_core::plan::PlanRequest {
        task,
        base,
        gpu,
        gpus: 8,
        gpus_per_node: 8,
        global_batch: 0,
        framework: Some(Framework::Hf),
    };
    let train = vram_core::plan::plan(
        &spec,
        &req(vram_core::plan::PlanTask::Train, base.clone()),
        "meta-llama/Llama-3.1-8B",
    );
    let tp: Vec<_> = train.plans.iter().filter(|p| p.layout.tp > 1).collect();
    assert!(!tp.is_empty());
    for p in &tp {
        // each is the estimate of its own layout, fits with 5 % to spare, and launches with
        // transformers' DistributedConfig (alone) or accelerate's 2-D parallelism config
        let mut s = base.clone();
        s.gpus = p.gpus;
        s.batch = p.micro_batch;
        s.layout = p.layout.clone();
        s.grad_checkpointing = p.layout.recompute == Recompute::Full;
        let e = estimate_training(&spec, &s, &DeviceOverheads::default()).unwrap();
        assert_eq!(
            e.max_rank_device_bytes, p.max_rank_device_bytes,
            "{}",
            p.summary
        );
        assert!(p.max_rank_device_bytes * 100 <= gpu.usable_bytes * 95);
        assert!(p
            .summary
            .contains(&format!("transformers tp {}", p.layout.tp)));
        let launch: String = p.launch.iter().map(|l| l.text.as_str()).collect();
        if p.layout.fsdp2 {
            assert!(launch.contains(&format!("parallelism_config_tp_size: {}", p.layout.tp)));
        } else {
            assert!(launch.contains(&format!("DistributedConfig(tp_size={})", p.layout.tp)));
        }
    }
    let mut lora = base;
    lora.lora = Some(Lora {
        r: 16,
        alpha: 32,
        targets: LoraTargets::default(),
        base_quant: BaseQuant::None,
    });
    let finetune = vram_core::plan::plan(
        &spec,
        &req(vram_core::plan::PlanTask::Finetune, lora),
        "meta-llama/Llama-3.1-8B",
    );
    assert!(!finetune.plans.is_empty());
    assert!(finetune.plans.iter().all(|p| p.layout.tp == 1));
}

#[test]
fn planner_ranks_offload_after_on_gpu_layouts_and_states_its_host_ram() {
    // Llama-3.1-8B full training on RTX 4090s (23.58 GiB usable): nothing on the GPUs alone fits
    // one card, DeepSpeed ZeRO-3 with the optimizer and parameters in host RAM does.
    let spec = spec("meta-llama__Llama-3.1-8B");
    let gpu = *vram_core::gpu_catalog::find("rtx4090").unwrap();
    let req = vram_core::plan::PlanRequest {
        task: vram_core::plan::PlanTask::Train,
        base: Scenario {
            dtype: Dtype::Bf16,
            mixed_precision: MixedPrecision::Bf16,
            batch: 1,
            seq_len: 2048,
            ..Scenario::default()
        },
        gpu,
        gpus: 16,
        gpus_per_node: 8,
        global_batch: 0,
        framework: Some(Framework::Hf),
    };
    let r = vram_core::plan::plan(&spec, &req, "meta-llama/Llama-3.1-8B");
    // layouts that keep everything on the GPUs come first, then the offloaded ones
    let first_offload = r.plans.iter().position(|p| p.cost.offload).unwrap();
    assert!(first_offload > 0);
    assert!(r.plans[first_offload..].iter().all(|p| p.cost.offload));
    let offload = &r.plans[first_offload];
    assert_eq!(offload.gpus, 1);
    assert!(offload
        .summary
        .contains("optimizer and parameters offloaded to host RAM"));
    // the host RAM of one process: fp32 master + Adam moments + bf16 parameters
    let host = offload.ranks.iter().map(|k| k.host_bytes).max().unwrap();
    assert!(host > 100 << 30, "{host}");
    assert!(r.plans[..first_offload].iter().all(|p| p.gpus > 1));
    // on H100s HSDP across the two nodes (shard inside a node, replicate across) fits and is
    // proposed beside FSDP2 over all 16
    let h100 = *vram_core::gpu_catalog::find("h100-80").unwrap();
    let r = vram_core::plan::plan(
        &spec,
        &vram_core::plan::PlanRequest { gpu: h100, ..req },
        "meta-llama/Llama-3.1-8B",
    );
    assert!(r.plans.iter().any(|p| p.gpus == 16
        && p.layout.fsdp2
        && p.layout.hsdp_replicas == 2
        && p.summary.contains("HF + HSDP (2 replicas)")));
}

fn torchtitan(gpus: u64, tp: u64, pp: u64) -> Scenario {
    Scenario {
        dtype: Dtype::Fp32,
        mixed_precision: MixedPrecision::None,
        batch: 1,
        seq_len: 1024,
        gpus,
        layout: Layout {
            framework: Framework::Torchtitan,
            tp,
            pp,
            ..Layout::default()
        },
        ..Scenario::default()
    }
}

#[test]
fn torchtitan_tp_keeps_the_whole_embedding_gradient_and_copies_its_rows_at_the_step() {
    // TinyLlama, V 32,000 × h 2,048 = 65,536,000 embedding parameters, fp32. RowwiseParallel on
    // nn.Embedding computes the weight's gradient as a Replicate DTensor: the whole 262,144,000 B
    // beside this rank's 131,072,000 B of weight rows; AdamW's step copies the rank's rows out of
    // it (measured on CPU: docs/measurements/ranks, titan-tinyllama-2l-tp2).
    let e = train("TinyLlama__TinyLlama-1.1B-Chat-v1.0", &torchtitan(2, 2, 1));
    let r = &e.ranks[0];
    assert_eq!(r.gradients_bytes - r.weights_bytes, 131_072_000);
    assert_eq!(
        r.optimizer_peak_bytes - (r.weights_bytes + r.gradients_bytes + r.optimizer_bytes),
        131_072_000
    );
}

#[test]
fn torchtitan_tp_activations_per_token_and_layer_are_worked_by_hand() {
    // TinyLlama (h 2,048, 32 heads of 64, 4 K/V heads, f 5,632, 22 layers), fp32, TP 2 with
    // sequence parallel, 1,024 tokens, CUDA. Per token and layer:
    // - two norms, each its input 2,048 × 4 B and fp32 1/rms 4 B (fused rms_norm), ÷ SP 2: 8,196 B;
    // - their all-gathered outputs, the colwise linears' inputs, whole: 2 × 8,192 = 16,384 B;
    // - attention q + out 2 × 32 × 64 + k, v 4 × 128 = 4,608 elements × 4 B + log-sum-exp 32 × 4 B
    //   = 18,560 B and SwiGLU 4 × 5,632 × 4 B = 90,112 B, ÷ TP 2: 54,336 B.
    // 78,916 B. The stage adds the token ids (8 B), the final norm (8,196 × 1,024 / 2 B and the
    // gathered 8,192 B per token) and the loss-parallel log-softmax 32,000 / 2 × 4 B per token.
    let e = train("TinyLlama__TinyLlama-1.1B-Chat-v1.0", &torchtitan(2, 2, 1));
    let t = 1024u64;
    let expected = 22 * t * 78_916 + t * 8 + t * 8_196 / 2 + t * 8_192 + t * 16_000 * 4;
    assert_eq!(e.ranks[0].activations_bytes, expected);
    // On CPU the composite rms_norm keeps the fp32 input, the 1/rms and the normalized input:
    // 16,388 B per norm and token instead of 8,196 → 16,384 B more per token and layer (÷ SP 2).
    let cpu = vram_core::train::estimate_training_counting(
        &spec("TinyLlama__TinyLlama-1.1B-Chat-v1.0"),
        &torchtitan(2, 2, 1),
        &DeviceOverheads::default(),
        vram_core::train::Counting::CpuExact,
    )
    .unwrap();
    assert_eq!(
        cpu.ranks[0].activations_bytes - expected,
        22 * t * 2 * 8_192 / 2 + t * 8_192 / 2
    );
}

#[test]
fn torchtitan_pipeline_micro_batches_after_the_first_add_a_vocabulary_gradient() {
    // PP 2, 4 micro-batches of 128 tokens: from the second micro-batch on, a stage's backward
    // computes each gradient into a new tensor before adding it to `.grad`. The first stage's
    // largest is the embedding's (65,536,000 × 4 B), last in its backward, beside the other
    // in-flight micro-batch's activations; the last stage's the output layer's, first, beside
    // all of its micro-batch's activations.
    let mut s = torchtitan(2, 1, 2);
    s.seq_len = 128;
    s.layout.global_batch = 4;
    let e = train("TinyLlama__TinyLlama-1.1B-Chat-v1.0", &s);
    let vocab_grad = 65_536_000 * 4;
    let first = &e.ranks[0];
    let last = &e.ranks[1];
    let states = |r: &vram_core::train::ranks::RankEstimate| {
        r.weights_bytes + r.gradients_bytes + r.optimizer_bytes + r.communication_bytes
    };
    assert_eq!(first.in_flight_micro_batches, 2);
    // the first stage's activations: two micro-batches of layers and their token ids (8 B each);
    // at the embedding's backward one micro-batch's layers are consumed
    let ids = 2 * 128 * 8;
    let layers_one_micro = (first.activations_bytes - ids) / 2;
    assert_eq!(
        first.backward_peak_bytes,
        states(first) + first.activations_bytes - layers_one_micro + vocab_grad
    );
    // the pipeline stage also holds its forward output, the fp32 logits 128 × 32,000 × 4 B,
    // until the micro-batch's backward is done
    assert_eq!(
        last.backward_peak_bytes,
        states(last) + last.activations_bytes + 128 * 32_000 * 4 + vocab_grad
    );
}
