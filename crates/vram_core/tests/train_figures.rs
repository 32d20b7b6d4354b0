//! Exact training figures worked by hand.

use vram_core::report::DeviceOverheads;
use vram_core::scenario::*;
use vram_core::train::{estimate_training, max_batch, max_seq_len, Budget, BudgetKind};

fn spec(id: &str) -> vram_core::ModelSpec {
    vram_core::parse_config(vram_core::presets::find(id).unwrap().json, None).unwrap()
}

/// Llama-3.1-8B's training estimate for `s`, on the default device.
fn llama_8b(s: &Scenario) -> vram_core::train::TrainEstimate {
    estimate_training(
        &spec("meta-llama__Llama-3.1-8B"),
        s,
        &DeviceOverheads::default(),
    )
    .unwrap()
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
fn llama_8b_layer_saves_200840_bytes_per_token_in_pure_bf16_sdpa() {
    // Per token, h = 4096, q = 4096, kv = 1024, I = 14336, 2-byte activations:
    // input_layernorm: x.float() 4h + rstd 4 + y 2h = 24,580; q/k/v input 2h = 8,192;
    // rotary q 2·4096, k 2·1024, v 2·1024; SDPA output 2·4096 + logsumexp 32·4 (the kernel writes
    // the output as (b, s, h, d), so `transpose(1, 2).contiguous()` is a view and o_proj saves that
    // same storage); post_attention_layernorm 24,580 + its output 8,192;
    // MLP gate/act/up/product 4 × 2 × 14,336 = 114,688.  Σ = 200,840 B.
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
    assert_eq!(layers, 32 * 2048 * 200_840);
}

/// peft's defaults for a Llama: rank 8 on q_proj and v_proj, the base unquantized.
fn lora_r8() -> Lora {
    Lora {
        r: 8,
        alpha: 16,
        targets: LoraTargets::Default,
        base_quant: BaseQuant::None,
    }
}

#[test]
fn llama_8b_lora_q_v_trainable_is_peft_count() {
    let s = Scenario {
        lora: Some(lora_r8()),
        ..pure_bf16()
    };
    let e = llama_8b(&s);
    assert_eq!(e.trainable_params, 3_407_872);
    // fp32 adapters (peft autocast_adapter_dtype): grads 4 B, AdamW states 8 B per parameter.
    assert_eq!(e.gradients_bytes, 3_407_872 * 4);
    assert_eq!(e.optimizer_bytes, 3_407_872 * 8);
    assert_eq!(e.weights_bytes, 16_060_522_496 + 3_407_872 * 4);
}

/// ZeRO 3 on 8 GPUs: the bf16 weights and gradients and the AdamW moments (8 B) with the fp32 master
/// (4 B) per parameter, each partitioned. DeepSpeed's estimator says 18 B per parameter in all; its
/// fp32 gradient partition exists only inside the step (measured with `vram measure --zero`:
/// docs/measurements/ranks).
#[test]
fn zero3_on_8_gpus_partitions_weights_gradients_states_and_master() {
    let s = Scenario {
        zero: ZeroStage(3),
        gpus: 8,
        ..pure_bf16()
    };
    let e = llama_8b(&s);
    let p: u64 = 8_030_261_248;
    assert_eq!(e.weights_bytes, (2 * p).div_ceil(8));
    assert_eq!(e.gradients_bytes, (2 * p).div_ceil(8));
    assert_eq!(e.optimizer_bytes, (12 * p).div_ceil(8));
}

/// DeepSpeed allocates its whole reduce (IPG) bucket however few parameters train: HF's "auto"
/// makes it hidden² elements in the gradient dtype, so LoRA on Llama-3.1-8B under bf16 ZeRO 3
/// keeps 4096² × 2 B, not its 3,407,872 trainable parameters' worth (measured on TinyLlama in fp32
/// with LoRA: 2048² × 4 = 16,777,216 B, docs/measurements/ranks).
#[test]
fn zero_reduce_bucket_is_whole_under_lora() {
    let s = Scenario {
        zero: ZeroStage(3),
        gpus: 8,
        lora: Some(lora_r8()),
        ..pure_bf16()
    };
    let e = llama_8b(&s);
    assert_eq!(e.trainable_params, 3_407_872);
    let bucket = e
        .terms
        .iter()
        .find(|t| t.key == "zero_reduce_bucket")
        .map(|t| t.bytes);
    assert_eq!(bucket, Some(4096 * 4096 * 2));
}

/// The `zero3_gathered_params` component of phase `name`.
fn gathered_in(e: &vram_core::train::TrainEstimate, name: &str) -> u64 {
    e.phases
        .iter()
        .find(|p| p.name == name)
        .and_then(|p| {
            p.components
                .iter()
                .find(|(k, _)| k == "zero3_gathered_params")
        })
        .map_or(0, |(_, b)| *b)
}

#[test]
fn zero3_gathers_up_to_the_live_limit_from_the_second_step_on() {
    // DeepSpeed's prefetcher (traced on CPU, docs/formulas/training.md §ZeRO 3) holds the whole
    // model or stage3_max_live_parameters = 1e9 elements at the end of forward from the second
    // step on; parameters of at most 10·hidden elements stay gathered among the buffers.
    let s = Scenario {
        zero: ZeroStage(3),
        gpus: 8,
        ..pure_bf16()
    };
    let big = llama_8b(&s);
    // 8,030,261,248 parameters, 266,240 of them in norms: the live limit binds, × 2 B
    assert_eq!(gathered_in(&big, "forward_2"), 2_000_000_000);
    // the first step gathers one module at a time: at most the head, 128,256 × 4,096 × 2 B
    assert!(gathered_in(&big, "forward") <= 1_050_673_152);
    assert_eq!(gathered_in(&big, "optimizer_2"), 0);
    // SmolLM2-135M: 134,515,008 parameters, 35,136 in norms (≤ 5,760 elements each): the whole
    // rest is gathered, × 2 B
    let small = estimate_training(
        &spec("HuggingFaceTB__SmolLM2-135M-Instruct"),
        &s,
        &DeviceOverheads::default(),
    )
    .unwrap();
    assert_eq!(gathered_in(&small, "forward_2"), 268_959_744);
}

#[test]
fn mamba_trains_under_autocast_and_in_pure_bf16() {
    let m = spec("state-spaces__mamba-130m-hf");
    let pure = estimate_training(&m, &pure_bf16(), &DeviceOverheads::default()).unwrap();
    // 129,135,360 parameters × 2 B (tied embeddings)
    assert_eq!(pure.weights_bytes, 258_270_720);
    let mixed = Scenario {
        mixed_precision: MixedPrecision::Bf16,
        dtype: Dtype::Fp32,
        ..pure_bf16()
    };
    let e = estimate_training(&m, &mixed, &DeviceOverheads::default()).unwrap();
    // fp32 master weights
    assert_eq!(e.weights_bytes, 516_541_440);
    // the scan's fp32 terms do not shrink under autocast; the projections' outputs do
    assert!(e.activations_bytes > pure.activations_bytes);
}

#[test]
fn t5_trains_with_both_stacks_counted() {
    // 60,506,624 parameters (the shared embedding once), bf16: weights and gradients 2 B each.
    let e = estimate_training(
        &spec("google-t5__t5-small"),
        &pure_bf16(),
        &DeviceOverheads::default(),
    )
    .unwrap();
    assert_eq!(e.weights_bytes, 121_013_248);
    assert_eq!(e.gradients_bytes, 121_013_248);
    // 6 encoder + 6 decoder blocks walked
    let layers = e
        .terms
        .iter()
        .find(|t| t.key == "activations_layers")
        .unwrap();
    assert!(
        layers.formula.starts_with("6 encoder + 6 decoder layers"),
        "{}",
        layers.formula
    );
    assert!(e.peak_allocated_bytes > e.weights_bytes + e.gradients_bytes + e.activations_bytes);
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
    // the boundary: seq fits, seq + 1 does not
    let at_seq = |n: u64| {
        estimate_training(
            &m,
            &Scenario {
                batch: 1,
                seq_len: n,
                ..s.clone()
            },
            &o,
        )
        .unwrap()
        .device_bytes
    };
    assert!(at_seq(seq) <= budget.bytes && at_seq(seq + 1) > budget.bytes);
    // b = 5 × 512 tokens fit; one sequence of about as many tokens does too (SDPA activations are
    // linear in tokens; only the rotary cos/sin, s·head_dim, grow with s alone).
    assert!(seq >= 512 * 5 - 64, "{seq}");
}

fn smollm2_fp32_b1_s128() -> Scenario {
    Scenario {
        dtype: Dtype::Fp32,
        mixed_precision: MixedPrecision::None,
        optimizer: Optimizer::Adamw,
        batch: 1,
        seq_len: 128,
        attention: AttentionImpl::Sdpa,
        ..Scenario::default()
    }
}

#[test]
fn tied_embedding_load_peak_holds_the_untied_lm_head_that_from_config_builds() {
    // SmolLM2-135M, tied: from_config builds lm_head = Linear(576, 49152) before tie_weights
    // replaces it. Measured (docs/measurements/smollm2-135m-train-fp32-adamw-b1-s128.json): load
    // peak 651,306,496 B = weights 538,060,032 + 49,152 × 576 × 4 + 256 B of rotary buffers.
    let e = estimate_training(
        &spec("HuggingFaceTB__SmolLM2-135M-Instruct"),
        &smollm2_fp32_b1_s128(),
        &DeviceOverheads::default(),
    )
    .unwrap();
    let load = e.phases.iter().find(|p| p.name == "load").unwrap();
    assert_eq!(e.weights_bytes, 538_060_032);
    assert_eq!(load.allocated_bytes, 538_060_032);
    assert_eq!(load.peak_allocated_bytes, 538_060_032 + 49_152 * 576 * 4);
}

#[test]
fn tied_embedding_backward_sums_the_two_gradients_out_of_place_without_autocast() {
    // End of backward: all gradients + input ids (128 × 8) + the fp32 loss the caller holds (4 B)
    // + lm_head grad held in the InputBuffer + embedding dense grad + their out-of-place sum,
    // i.e. 2 × V·H·4 beyond the gradients. Measured backward peak 1,302,613,768 B = this + 256 B
    // of rotary buffers + 4 B.
    let e = estimate_training(
        &spec("HuggingFaceTB__SmolLM2-135M-Instruct"),
        &smollm2_fp32_b1_s128(),
        &DeviceOverheads::default(),
    )
    .unwrap();
    let bwd = e.phases.iter().find(|p| p.name == "backward").unwrap();
    assert_eq!(
        bwd.peak_allocated_bytes,
        538_060_032 * 2 + 128 * 8 + 4 + 2 * 49_152 * 576 * 4
    );
    // under bf16 autocast the fp32 lm_head grad (ToCopyBackward output) is summed in place: the
    // peak is at embedding_dense_backward with the lm_head grad, the dense grad and the incoming
    // fp32 gradient b·s·H·4 = 128 × 576 × 4 live: all gradients + V·H·4 + 294,912 B.
    let mixed = Scenario {
        mixed_precision: MixedPrecision::Bf16,
        ..smollm2_fp32_b1_s128()
    };
    let e = estimate_training(
        &spec("HuggingFaceTB__SmolLM2-135M-Instruct"),
        &mixed,
        &DeviceOverheads::default(),
    )
    .unwrap();
    let bwd = e.phases.iter().find(|p| p.name == "backward").unwrap();
    assert_eq!(
        bwd.peak_allocated_bytes,
        538_060_032 * 2 + 128 * 8 + 4 + 49_152 * 576 * 4 + 128 * 576 * 4
    );
}

#[test]
fn cpu_counting_keeps_dtype_sized_dropout_masks_where_cuda_keeps_bool_masks() {
    // gpt2 (embd/attn/resid dropout 0.1), fp32, eager, b1 s128: per layer the attention-probs
    // mask is 12 × 128² elements and the two residual masks 128 × 768 each, plus the embedding's
    // 128 × 768. CUDA's native_dropout keeps 1 B per element, CPU's _dropout_impl 4 B (fp32).
    use vram_core::train::{estimate_training_counting, Counting};
    let s = Scenario {
        attention: AttentionImpl::Eager,
        ..smollm2_fp32_b1_s128()
    };
    let g = spec("openai-community__gpt2");
    let o = DeviceOverheads::default();
    let cuda = estimate_training_counting(&g, &s, &o, Counting::Cuda).unwrap();
    let cpu = estimate_training_counting(&g, &s, &o, Counting::CpuExact).unwrap();
    let masks_per_layer = 12 * 128 * 128 + 2 * 128 * 768;
    let extra = (12 * masks_per_layer + 128 * 768) * 3;
    assert_eq!(cpu.activations_bytes - cuda.activations_bytes, extra);
    // and the default estimate is the CUDA one
    assert_eq!(estimate_training(&g, &s, &o).unwrap(), cuda);
}

/// Bytes of one phase's component, 0 when the phase does not list it.
fn component(e: &vram_core::train::TrainEstimate, phase: &str, key: &str) -> u64 {
    e.phases
        .iter()
        .find(|p| p.name == phase)
        .and_then(|p| p.components.iter().find(|(k, _)| k == key))
        .map_or(0, |(_, b)| *b)
}

#[test]
fn autocast_weight_copies_are_a_component_of_their_own_at_each_peak() {
    // Llama-3.1-8B, fp32 weights under bf16 autocast: every matmul weight gets a bf16 copy
    // (`cached_cast`), saved for its input's gradient. Per layer q 4096², k and v 1024 × 4096,
    // o 4096², gate/up/down 3 × 4096 × 14,336 = 218,103,808 elements; 32 layers and the head
    // (128,256 × 4096 = 525,336,576): 7,504,658,432 elements × 2 B.
    let copies = 7_504_658_432 * 2;
    let s8b = spec("meta-llama__Llama-3.1-8B");
    let mixed = Scenario {
        batch: 1,
        seq_len: 2048,
        ..Scenario::default()
    };
    let e = estimate_training(&s8b, &mixed, &DeviceOverheads::default()).unwrap();
    assert_eq!(component(&e, "forward", "autocast_weight_copies"), copies);
    // the backward peak is the cross-entropy backward, before any layer released its copies
    assert_eq!(component(&e, "backward", "autocast_weight_copies"), copies);
    assert_eq!(component(&e, "optimizer", "autocast_weight_copies"), 0);
    // With checkpointing the layers save nothing, but autocast's cache keeps every copy until
    // it exits after the loss: all of them at the forward peak; none at the backward peak,
    // which comes at its end, when every gradient exists.
    let gc = Scenario {
        grad_checkpointing: true,
        ..mixed.clone()
    };
    let e = estimate_training(&s8b, &gc, &DeviceOverheads::default()).unwrap();
    assert_eq!(component(&e, "forward", "autocast_weight_copies"), copies);
    assert_eq!(component(&e, "backward", "autocast_weight_copies"), 0);
    // Pure bf16 has no autocast, so no such component.
    let e = estimate_training(&s8b, &pure_bf16(), &DeviceOverheads::default()).unwrap();
    assert!(e.phases.iter().all(|p| p
        .components
        .iter()
        .all(|(k, _)| k != "autocast_weight_copies")));
}

#[test]
fn forward_and_backward_components_add_up_to_the_phase_peak() {
    // What is live at each peak, by component: nothing is left for "overhead" to absorb.
    for id in [
        "meta-llama__Llama-3.1-8B",
        "Qwen__Qwen3-30B-A3B",
        "google__gemma-2-2b",
        "openai-community__gpt2",
    ] {
        let sp = spec(id);
        for gc in [false, true] {
            for lora in [None, Some(16)] {
                let s = Scenario {
                    batch: 2,
                    seq_len: 512,
                    grad_checkpointing: gc,
                    lora: lora.map(|r| Lora {
                        r,
                        alpha: 2 * r,
                        targets: LoraTargets::AllLinear,
                        base_quant: BaseQuant::None,
                    }),
                    ..Scenario::default()
                };
                let e = estimate_training(&sp, &s, &DeviceOverheads::default()).unwrap();
                let buffers = component(&e, "load", "buffers");
                for p in e
                    .phases
                    .iter()
                    .filter(|p| p.name.starts_with("forward") || p.name.starts_with("backward"))
                {
                    let sum: u64 = p.components.iter().map(|(_, b)| *b).sum();
                    let with_buffers = sum + buffers;
                    assert!(
                        with_buffers.abs_diff(p.peak_allocated_bytes) <= 16 * 1024,
                        "{id} gc={gc} lora={lora:?} {}: components {with_buffers} vs peak {}",
                        p.name,
                        p.peak_allocated_bytes
                    );
                }
            }
        }
    }
}

#[test]
fn t5_loaded_in_fp16_keeps_wo_in_fp32_and_in_bf16_does_not() {
    // `_keep_in_fp32_modules = ["wo"]` applies to fp16 loads only (`_get_dtype_plan`): t5-small's
    // 12 `wo` projections, 2048 × 512 each, take 2 B more per parameter in fp16, for the weights,
    // their gradients and AdamW's two states (fp32 like the weight).
    let t5 = spec("google-t5__t5-small");
    let wo_params = 12 * 2_048 * 512u64;
    let at = |dtype: Dtype| {
        estimate_training(
            &t5,
            &Scenario {
                dtype,
                mixed_precision: MixedPrecision::None,
                ..Scenario::default()
            },
            &DeviceOverheads::default(),
        )
        .unwrap()
    };
    let (bf16, fp16) = (at(Dtype::Bf16), at(Dtype::Fp16));
    assert_eq!(bf16.weights_bytes, 60_506_624 * 2);
    assert_eq!(fp16.weights_bytes, bf16.weights_bytes + wo_params * 2);
    assert_eq!(fp16.gradients_bytes, bf16.gradients_bytes + wo_params * 2);
    assert_eq!(
        fp16.optimizer_bytes,
        bf16.optimizer_bytes + wo_params * 2 * 2
    );
}

/// ZeRO 2's gradient buffer holds the whole gradient of every parameter that overlaps the rank's
/// partition. TinyLlama with 2 layers on 2 GPUs: 219,162,624 parameters, partitions of 109,581,312;
/// rank 0's holds the embedding (65,536,000) and layer 0 (44,042,240), and crosses into layer 1,
/// whose first tensors in the inventory are its input norm (2,048) and q_proj (4,194,304), the one
/// the boundary cuts: 113,774,592 elements. DeepSpeed 0.19.8 on CPU allocated 455,081,984 B of fp32
/// there (`vram measure --zero 2`, docs/measurements/ranks): 113,770,496 elements, 4,096 fewer
/// (HF registers a layer's two norm weights after its projections; the boundary also moves with
/// DeepSpeed's alignment padding).
#[test]
fn zero2_gradient_buffer_holds_every_parameter_that_overlaps_the_partition() {
    let mut value: serde_json::Value = serde_json::from_str(
        vram_core::presets::find("TinyLlama__TinyLlama-1.1B-Chat-v1.0")
            .unwrap()
            .json,
    )
    .unwrap();
    value["num_hidden_layers"] = serde_json::json!(2);
    let spec = vram_core::parse_config(&value.to_string(), None).unwrap();
    let elements = vram_core::train::zero::partition_overlap_elements(&spec, 2);
    assert_eq!(elements, 65_536_000 + 44_042_240 + 2_048 + 4_194_304);
    assert_eq!(elements - 113_770_496, 4_096);
}
