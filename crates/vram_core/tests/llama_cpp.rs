//! The llama.cpp engine against the buffers llama.cpp printed at start-up (docs/accuracy.md
//! §llama.cpp lists each log with its source), worked by hand where the rule is simple, and GGUF
//! headers built from the real tensor names, shapes and types.

use vram_core::gguf_file::{encode_header, ggml_type_by_name, parse_header, GgufValue};
use vram_core::infer::format::GgufPreset;
use vram_core::infer::gguf::tensor_types;
use vram_core::infer::llama_cpp::{self, fit, LlamaCppEstimate};
use vram_core::scenario::{Engine, FlashAttn, LlamaCppInputs, Scenario};
use vram_core::{parse_config, presets, ModelSpec};

const MIB: u64 = 1 << 20;

fn spec(id: &str) -> ModelSpec {
    parse_config(presets::find(id).unwrap().json, None).unwrap()
}

/// MiB with two decimals, as llama.cpp prints buffer sizes.
fn mib(b: u64) -> String {
    format!("{:.2}", b as f64 / MIB as f64)
}

fn scenario(weights: &str, n_ctx: u64, n_seq: u64, l: LlamaCppInputs) -> Scenario {
    Scenario {
        engine: Engine::LlamaCpp,
        weights: Some(weights.into()),
        seq_len: n_ctx,
        batch: n_seq,
        llama_cpp: l,
        ..Scenario::inference()
    }
}

fn run(s: &ModelSpec, sc: &Scenario) -> LlamaCppEstimate {
    let o = vram_core::report::DeviceOverheads::default();
    vram_core::infer::estimate_inference(s, sc, &o)
        .unwrap()
        .llama_cpp
        .unwrap()
}

fn fa_off() -> LlamaCppInputs {
    LlamaCppInputs {
        flash_attn: FlashAttn::Off,
        ..LlamaCppInputs::default()
    }
}

#[test]
fn llama3_8b_q4_k_m_at_512_matches_every_printed_buffer() {
    // developer0hye/llama-3-korean-bllossom-8b-q4-docker README (RTX 3070, -ngl 33, n_ctx 512, fa 0)
    let e = run(
        &spec("meta-llama__Llama-3.1-8B"),
        &scenario(
            "q4_k_m",
            512,
            1,
            LlamaCppInputs {
                n_batch: 512,
                ..fa_off()
            },
        ),
    );
    assert_eq!(mib(e.weights_host_bytes), "281.81"); // CPU buffer: token_embd Q4_K
    assert_eq!(e.weights_host_bytes, 128_256 * 4096 / 256 * 144);
    assert_eq!(mib(e.devices[0].weights_bytes), "4403.49"); // CUDA0 buffer
    assert_eq!(e.kv_bytes, 64 * MIB); // 512 cells × 32 layers × 2 × 1024 × 2 B
    assert_eq!(mib(e.output_bytes), "0.49"); // 128,256 × 4 B
    assert_eq!(e.devices[0].compute_bytes, 258 * MIB + MIB / 2); // 258.50: norm + logits of 512 tokens
    assert_eq!(e.compute_gpu_bytes, (4096 + 128_256) * 512 * 4);
    assert_eq!(e.layers_on_gpu, 32);
    assert!(e.output_on_gpu);
}

#[test]
fn phi3_mini_at_4096_with_ubatch_256_matches_the_printed_buffers() {
    // text-generation-webui llama-server log (RTX 3070, 33/33, n_ctx 4096, n_ubatch 256, fa 0)
    let e = run(
        &spec("microsoft__Phi-3.5-mini-instruct"),
        &scenario(
            "q4_k_m",
            4096,
            1,
            LlamaCppInputs {
                n_ubatch: 256,
                n_batch: 256,
                ..fa_off()
            },
        ),
    );
    assert_eq!(mib(e.devices[0].weights_bytes), "2228.82");
    assert_eq!(mib(e.weights_host_bytes), "52.84");
    assert_eq!(e.kv_bytes, 1536 * MIB);
    assert_eq!(e.cells, 4096);
    assert_eq!(mib(e.output_bytes), "0.12");
    // kq 4096 × 256 × 32 × 4 = 128 MiB, q/out/K/V/residuals 3 MiB each (6 of them), f32 mask 4 MiB
    assert_eq!(e.devices[0].compute_bytes, 150 * MIB);
}

#[test]
fn qwen3_8b_q8_0_partial_offload_splits_the_kv_per_layer() {
    // LM Studio log (RTX 3060 Ti): 19 repeating layers on the GPU, n_ctx 131072, fa 0:
    // CUDA0 KV 9728 MiB, CPU KV 8704 MiB; the whole file is 8300.36 MiB (CPU_Mapped at -ngl 0).
    let s = spec("Qwen__Qwen3-8B");
    let e = run(
        &s,
        &scenario(
            "q8_0",
            131_072,
            1,
            LlamaCppInputs {
                n_gpu_layers: Some(20),
                n_batch: 512,
                ..fa_off()
            },
        ),
    );
    assert_eq!(e.layers_on_gpu, 19); // -ngl 20 = the output layer + 19 repeating layers
    assert_eq!(e.kv_gpu_bytes, 9728 * MIB);
    assert_eq!(e.kv_host_bytes, 8704 * MIB);
    let cpu_only = run(
        &s,
        &scenario(
            "q8_0",
            4096,
            1,
            LlamaCppInputs {
                n_gpu_layers: Some(0),
                ..fa_off()
            },
        ),
    );
    assert_eq!(mib(cpu_only.weights_host_bytes), "8300.36");
    assert_eq!(cpu_only.weights_gpu_bytes, 0);
    // printed CUDA0 compute buffer 9240.00 MiB: the estimate is within 3 % (docs/accuracy.md)
    let c = e.devices[0].compute_bytes as f64;
    assert!(
        (c / (9240.0 * MIB as f64) - 1.0).abs() < 0.03,
        "{}",
        mib(e.devices[0].compute_bytes)
    );
}

#[test]
fn qwen2_5_3b_compute_and_kv_match_the_printed_buffers() {
    // SciSharp/LLamaSharp#1099 (build 4701, RTX 4080 SUPER): KV 144 MiB, compute 300.75 MiB, output 0.58
    let e = run(
        &spec("Qwen__Qwen2.5-3B"),
        &scenario("q4_k_m", 4096, 1, fa_off()),
    );
    assert_eq!(e.kv_bytes, 144 * MIB);
    assert_eq!(mib(e.devices[0].compute_bytes), "300.75");
    assert_eq!(mib(e.output_bytes), "0.58");
}

#[test]
fn llama_70b_over_two_devices_splits_layers_41_and_39() {
    // two RPC devices, n_ctx 4096, fa 0: KV 656 + 624 MiB, compute 588.01 MiB on each
    let e = run(
        &spec("meta-llama__Llama-2-70b-hf"),
        &scenario(
            "q4_k_m",
            4096,
            1,
            LlamaCppInputs {
                tensor_split: vec![1.0, 1.0],
                ..fa_off()
            },
        ),
    );
    assert_eq!(e.devices[0].kv_bytes, 656 * MIB);
    assert_eq!(e.devices[1].kv_bytes, 624 * MIB);
    assert_eq!((e.devices[0].layers, e.devices[1].layers), (41, 39));
    assert!(e.devices[1].output_layer);
    for d in &e.devices {
        // kq 512 MiB + q, out 16 MiB each + this ubatch's K, V 4 MiB + residuals 32 MiB + mask 8 MiB
        assert_eq!(d.compute_bytes, 588 * MIB);
    }
}

#[test]
fn gpt_oss_20b_has_a_768_cell_sliding_window_cache() {
    // Metal logs at n_ctx 131072: non-SWA 3072 MiB; SWA 768 cells 18 MiB (ubatch 512), 2304 cells 54 MiB (2048)
    let s = spec("openai__gpt-oss-20b");
    let e = run(&s, &scenario("q8_0", 131_072, 1, LlamaCppInputs::default()));
    assert_eq!((e.cells, e.swa_cells), (131_072, 768));
    assert_eq!(e.kv_bytes, 3072 * MIB);
    assert_eq!(e.kv_swa_bytes, 18 * MIB);
    assert_eq!(mib(e.output_bytes), "0.77");
    // CPU compute buffer 268.77 MiB: two 2880 × 512 embedding inputs + f32 masks (131072 and 768 cells)
    assert_eq!(mib(e.compute_host_bytes), "268.76");
    let big = run(
        &s,
        &scenario(
            "q8_0",
            131_072,
            1,
            LlamaCppInputs {
                n_ubatch: 2048,
                ..LlamaCppInputs::default()
            },
        ),
    );
    assert_eq!(big.swa_cells, 2304);
    assert_eq!(big.kv_swa_bytes, 54 * MIB);
}

#[test]
fn sliding_cache_grows_with_sequences_and_is_full_size_with_swa_full() {
    // gemma-2-2b, n_swa 4096: 4 unified sequences → pad(4 × 4096 + 512, 256) = 16896 cells (< n_ctx)
    let s = spec("google__gemma-2-2b");
    let e = run(
        &s,
        &scenario("q4_k_m", 32_768, 4, LlamaCppInputs::default()),
    );
    assert_eq!(e.swa_cells, 16_896);
    let full = run(
        &s,
        &scenario(
            "q4_k_m",
            32_768,
            4,
            LlamaCppInputs {
                swa_full: true,
                ..LlamaCppInputs::default()
            },
        ),
    );
    assert_eq!(full.swa_cells, 32_768);
    // per-sequence streams: 4 × pad(32768 / 4) cells, each stream's SWA min(8192, 4096 + 512) → 4608
    let split = run(
        &s,
        &scenario(
            "q4_k_m",
            32_768,
            4,
            LlamaCppInputs {
                kv_unified: false,
                ..LlamaCppInputs::default()
            },
        ),
    );
    assert_eq!(
        (split.cells, split.n_ctx_seq, split.swa_cells),
        (32_768, 8192, 4 * 4608)
    );
}

#[test]
fn context_is_padded_to_256_and_per_sequence_contexts_round_up() {
    let s = spec("meta-llama__Llama-3.1-8B");
    let e = run(&s, &scenario("q4_k_m", 5000, 1, LlamaCppInputs::default()));
    assert_eq!(e.cells, 5120);
    // 4096 over 3 sequences: 1365 → 1536 per sequence → 4608 cells
    let e = run(
        &s,
        &scenario(
            "q4_k_m",
            4096,
            3,
            LlamaCppInputs {
                kv_unified: false,
                ..LlamaCppInputs::default()
            },
        ),
    );
    assert_eq!((e.n_ctx_seq, e.cells), (1536, 4608));
}

#[test]
fn quantized_caches_use_ggml_block_sizes() {
    // Llama-3.1-8B, 8192 cells: K and V of 1024 values per layer; q8_0 = 34 B per 32, q4_0 = 18 B per 32
    let s = spec("meta-llama__Llama-3.1-8B");
    let l = LlamaCppInputs {
        kv_dtype_v: Some("q4_0".into()),
        ..LlamaCppInputs::default()
    };
    let mut sc = scenario("q4_k_m", 8192, 1, l);
    sc.kv_dtype = Some("q8_0".into());
    let e = run(&s, &sc);
    assert_eq!(e.kv_k_bytes, 32 * 8192 * (1024 / 32 * 34));
    assert_eq!(e.kv_v_bytes, 32 * 8192 * (1024 / 32 * 18));
    assert_eq!((e.type_k.as_str(), e.type_v.as_str()), ("q8_0", "q4_0"));
}

#[test]
fn a_quantized_v_cache_without_flash_attention_is_refused_by_name() {
    let mut sc = scenario(
        "q4_k_m",
        4096,
        1,
        LlamaCppInputs {
            kv_dtype_v: Some("q8_0".into()),
            ..fa_off()
        },
    );
    sc.kv_dtype = Some("q8_0".into());
    let o = vram_core::report::DeviceOverheads::default();
    let err = vram_core::infer::estimate_inference(&spec("meta-llama__Llama-3.1-8B"), &sc, &o)
        .unwrap_err();
    assert!(err.to_string().starts_with("kv_dtype_v:"), "{err}");
    assert!(err.to_string().contains("flash"), "{err}");
}

#[test]
fn ngl_counts_the_output_layer_first() {
    let s = spec("meta-llama__Llama-3.1-8B");
    let at = |ngl| {
        run(
            &s,
            &scenario(
                "q4_k_m",
                4096,
                1,
                LlamaCppInputs {
                    n_gpu_layers: Some(ngl),
                    ..LlamaCppInputs::default()
                },
            ),
        )
    };
    let (zero, one, all, more) = (at(0), at(1), at(33), at(999));
    assert_eq!(
        (
            zero.layers_on_gpu,
            zero.output_on_gpu,
            zero.weights_gpu_bytes
        ),
        (0, false, 0)
    );
    assert_eq!((one.layers_on_gpu, one.output_on_gpu), (0, true));
    assert_eq!((all.layers_on_gpu, all.output_on_gpu), (32, true));
    assert_eq!(more, all);
    // the input embedding never leaves the host
    assert_eq!(all.weights_host_bytes, 128_256 * 4096 / 256 * 144);
}

#[test]
fn n_cpu_moe_moves_the_experts_of_the_first_layers_to_the_host() {
    let s = spec("Qwen__Qwen3-30B-A3B");
    let base = run(&s, &scenario("q4_k_m", 8192, 1, LlamaCppInputs::default()));
    let moe = run(
        &s,
        &scenario(
            "q4_k_m",
            8192,
            1,
            LlamaCppInputs {
                n_cpu_moe: 10,
                ..LlamaCppInputs::default()
            },
        ),
    );
    assert_eq!(moe.layers_experts_on_host, 10);
    let moved = base.weights_gpu_bytes - moe.weights_gpu_bytes;
    assert_eq!(moe.weights_host_bytes - base.weights_host_bytes, moved);
    assert!(moved > 10 * 128 * 3 * 768 * 2048 / 2, "{moved}"); // 10 layers of 128 experts × 3 matrices at ≥ 4 bits
    let all = run(
        &s,
        &scenario(
            "q4_k_m",
            8192,
            1,
            LlamaCppInputs {
                cpu_moe: true,
                ..LlamaCppInputs::default()
            },
        ),
    );
    assert_eq!(all.layers_experts_on_host, 48);
    assert!(all.weights_gpu_bytes < moe.weights_gpu_bytes);
}

#[test]
fn the_ollama_profile_multiplies_num_ctx_by_the_parallel_sequences() {
    let s = spec("meta-llama__Llama-3.1-8B");
    let e = run(
        &s,
        &scenario(
            "q4_k_m",
            4096,
            2,
            LlamaCppInputs {
                ollama: true,
                ..LlamaCppInputs::default()
            },
        ),
    );
    assert_eq!((e.n_ctx, e.n_ctx_seq, e.n_seq), (8192, 4096, 2));
    assert_eq!(e.kv_bytes, 1024 * MIB);
    assert!(e
        .launch
        .ollama_modelfile
        .contains(&"PARAMETER num_ctx 4096".to_string()));
    assert!(e
        .launch
        .ollama_env
        .contains(&"OLLAMA_NUM_PARALLEL=2".to_string()));
}

#[test]
fn launch_line_names_every_non_default_flag() {
    let mut sc = scenario(
        "q4_k_m",
        16_384,
        1,
        LlamaCppInputs {
            n_gpu_layers: Some(20),
            n_ubatch: 1024,
            ..LlamaCppInputs::default()
        },
    );
    sc.kv_dtype = Some("q8_0".into());
    let e = run(&spec("meta-llama__Llama-3.1-8B"), &sc);
    assert_eq!(
        e.launch.llama_server,
        "llama-server -m llama-Q4_K_M.gguf -c 16384 -ngl 20 -fa auto -ctk q8_0 -ctv q8_0 -ub 1024"
    );
}

#[test]
fn more_gpu_layers_never_lower_gpu_bytes_and_longer_contexts_never_lower_totals() {
    let s = spec("mistralai__Mixtral-8x7B-v0.1");
    let mut last = 0;
    for ngl in 0..=33 {
        let e = run(
            &s,
            &scenario(
                "q4_k_m",
                4096,
                1,
                LlamaCppInputs {
                    n_gpu_layers: Some(ngl),
                    ..LlamaCppInputs::default()
                },
            ),
        );
        assert!(e.weights_gpu_bytes + e.kv_gpu_bytes >= last, "ngl {ngl}");
        last = e.weights_gpu_bytes + e.kv_gpu_bytes;
    }
    let mut last = 0;
    for ctx in [256u64, 1000, 4096, 8192, 32_768] {
        let e = run(&s, &scenario("q4_k_m", ctx, 1, LlamaCppInputs::default()));
        assert!(e.gpu_total_bytes >= last, "ctx {ctx}");
        last = e.gpu_total_bytes;
    }
}

#[test]
fn the_largest_fitting_context_fits_and_the_next_step_does_not() {
    let s = spec("meta-llama__Llama-3.1-8B");
    let sc = scenario("q4_k_m", 4096, 1, LlamaCppInputs::default());
    let r = llama_cpp::resolve(&s, &sc).unwrap();
    let m = fit::Machine {
        gpu_usable_bytes: 8 << 30,
        device_overhead_bytes: 532 << 20,
        host_ram_bytes: 32 << 30,
        unified: false,
    };
    let ctx = fit::max_context(&r, &sc.llama_cpp, 1, &m, 131_072).unwrap();
    assert!(fit::fits(
        &llama_cpp::estimate(&r, &sc.llama_cpp, ctx, 1, ""),
        &m
    ));
    assert!(!fit::fits(
        &llama_cpp::estimate(&r, &sc.llama_cpp, ctx + 256, 1, ""),
        &m
    ));
    let ngl = fit::max_gpu_layers(&r, &sc.llama_cpp, 131_072, 1, &m).unwrap();
    assert!(ngl < 33);
}

/// The GGUF names llama.cpp's converter gives Llama tensors (`convert_hf_to_gguf.py`, `tensor_mapping.py`).
fn gguf_name(hf: &str) -> String {
    if hf == "model.embed_tokens.weight" {
        return "token_embd.weight".into();
    }
    if hf == "model.norm.weight" {
        return "output_norm.weight".into();
    }
    if hf == "lm_head.weight" {
        return "output.weight".into();
    }
    let rest = hf.strip_prefix("model.layers.").unwrap();
    let (n, leaf) = rest.split_once('.').unwrap();
    let g = match leaf {
        "self_attn.q_proj.weight" => "attn_q.weight",
        "self_attn.k_proj.weight" => "attn_k.weight",
        "self_attn.v_proj.weight" => "attn_v.weight",
        "self_attn.o_proj.weight" => "attn_output.weight",
        "mlp.gate_proj.weight" => "ffn_gate.weight",
        "mlp.up_proj.weight" => "ffn_up.weight",
        "mlp.down_proj.weight" => "ffn_down.weight",
        "input_layernorm.weight" => "attn_norm.weight",
        "post_attention_layernorm.weight" => "ffn_norm.weight",
        other => panic!("unmapped {other}"),
    };
    format!("blk.{n}.{g}")
}

/// A GGUF header of `spec` as `llama-quantize` writes `preset` (real names, ggml shapes, types).
fn llama_header(spec: &ModelSpec, preset: GgufPreset, file_type: u32) -> Vec<u8> {
    let types = tensor_types(spec, preset);
    let tensors: Vec<(String, Vec<u64>, u32)> = spec
        .instances()
        .zip(types)
        .map(|(inst, ty)| {
            // ggml lists ne[0] (the row length, the HF last dim) first
            let dims: Vec<u64> = inst.tensor.shape.iter().rev().copied().collect();
            (
                gguf_name(&inst.name()),
                dims,
                ggml_type_by_name(ty.name()).unwrap().id,
            )
        })
        .collect();
    let u32v = |v: u64| GgufValue::U32(v as u32);
    let meta: Vec<(String, GgufValue)> = vec![
        (
            "general.architecture".into(),
            GgufValue::Str("llama".into()),
        ),
        (
            "general.name".into(),
            GgufValue::Str("Meta Llama 3.1 8B".into()),
        ),
        ("general.file_type".into(), GgufValue::U32(file_type)),
        ("llama.block_count".into(), u32v(32)),
        ("llama.context_length".into(), u32v(131_072)),
        ("llama.embedding_length".into(), u32v(4096)),
        ("llama.feed_forward_length".into(), u32v(14_336)),
        ("llama.attention.head_count".into(), u32v(32)),
        ("llama.attention.head_count_kv".into(), u32v(8)),
        ("llama.rope.dimension_count".into(), u32v(128)),
        (
            "llama.attention.layer_norm_rms_epsilon".into(),
            GgufValue::F32(1e-5),
        ),
        (
            "tokenizer.ggml.tokens".into(),
            GgufValue::Array {
                elem_type: 8,
                len: 128_256,
                items: None,
            },
        ),
    ];
    encode_header(3, &meta, &tensors).unwrap()
}

#[test]
fn a_gguf_header_gives_the_same_model_as_the_config_and_preset() {
    let s = spec("meta-llama__Llama-3.1-8B");
    let bytes = llama_header(&s, GgufPreset::Q4KM, 15);
    let h = parse_header(&bytes).unwrap();
    assert_eq!(h.tensors.len(), 291);
    let g = vram_core::gguf_model::spec_from_gguf(&h, "Meta-Llama-3.1-8B-Q4_K_M.gguf").unwrap();
    assert_eq!(g.gguf.as_ref().unwrap().params, 8_030_261_248);
    assert_eq!(g.torch_dtype.as_deref(), Some("Q4_K_M"));
    let doc = vram_core::estimate(
        &g,
        &Scenario {
            engine: Engine::LlamaCpp,
            seq_len: 8192,
            ..Scenario::inference()
        },
        vram_core::Sections {
            train: false,
            infer: true,
        },
    );
    assert_eq!(doc.parameters.total, 8_030_261_248);
    assert_eq!(doc.model.support, "header");
    let from_header = doc.infer.unwrap();
    assert_eq!(from_header.weights_format_source, "gguf header");
    let from_config = run(&s, &scenario("q4_k_m", 8192, 1, LlamaCppInputs::default()));
    let h_est = from_header.llama_cpp.unwrap();
    assert_eq!(h_est.devices, from_config.devices);
    assert_eq!(h_est.weights_host_bytes, from_config.weights_host_bytes);
    assert_eq!(h_est.kv_bytes, from_config.kv_bytes);
    assert_eq!(h_est.compute_host_bytes, from_config.compute_host_bytes);
    // llama.cpp prints "model size = 4.58 GiB (4.89 BPW)" for this file
    assert_eq!(from_header.weights_bytes, 4_912_898_048);
    assert_eq!(
        format!(
            "{:.2}",
            from_header.weights_bytes as f64 / (1u64 << 30) as f64
        ),
        "4.58"
    );
    assert_eq!(
        h_est.launch.llama_server,
        "llama-server -m Meta-Llama-3.1-8B-Q4_K_M.gguf -c 8192 -ngl 99 -fa auto"
    );
}

#[test]
fn a_gguf_header_without_an_architecture_is_refused_by_key() {
    let bytes = encode_header(
        3,
        &[("general.name".into(), GgufValue::Str("x".into()))],
        &[],
    )
    .unwrap();
    let err = vram_core::gguf_model::spec_from_gguf(&parse_header(&bytes).unwrap(), "x.gguf")
        .unwrap_err();
    assert!(err.to_string().contains("general.architecture"), "{err}");
}

#[test]
fn one_part_of_a_split_model_is_refused_and_all_parts_are_summed() {
    let s = spec("meta-llama__Llama-3.1-8B");
    let whole = parse_header(&llama_header(&s, GgufPreset::Q4KM, 15)).unwrap();
    let split = |no: u16| {
        vec![
            ("split.no".to_string(), GgufValue::U16(no)),
            ("split.count".to_string(), GgufValue::U16(2)),
        ]
    };
    let tensors: Vec<(String, Vec<u64>, u32)> = whole
        .tensors
        .iter()
        .map(|t| (t.name.clone(), t.dims.clone(), t.ggml_type))
        .collect();
    let (a, b) = tensors.split_at(100);
    let mut m0 = whole.metadata.clone();
    m0.extend(split(0));
    let p0 = parse_header(&encode_header(3, &m0, a).unwrap()).unwrap();
    let p1 = parse_header(&encode_header(3, &split(1), b).unwrap()).unwrap();
    let err = vram_core::gguf_model::spec_from_gguf(&p0, "m-00001-of-00002.gguf").unwrap_err();
    assert!(err.to_string().contains("part 1 of 2"), "{err}");
    let both =
        vram_core::gguf_model::spec_from_gguf_parts(&[p1.clone(), p0.clone()], "m.gguf").unwrap();
    assert_eq!(both.gguf.unwrap().params, 8_030_261_248);
    let err = vram_core::gguf_model::spec_from_gguf_parts(&[p0], "m.gguf").unwrap_err();
    assert!(err.to_string().contains("2 GGUF files, 1 given"), "{err}");
}

#[test]
fn mla_caches_one_576_wide_latent_and_mamba_one_f32_state_per_sequence() {
    // DeepSeek-V2-Lite: 27 layers × (kv_lora_rank 512 + rope 64) × 2 B per cell, no V
    let e = run(
        &spec("deepseek-ai__DeepSeek-V2-Lite"),
        &scenario("q4_k_m", 32_768, 1, LlamaCppInputs::default()),
    );
    assert_eq!(e.kv_k_bytes, 27 * 576 * 2 * 32_768);
    assert_eq!(e.kv_v_bytes, 0);
    // mamba-130m: 24 layers × ((d_conv − 1) × d_inner + d_state × d_inner) × 4 B, per sequence
    let e = run(
        &spec("state-spaces__mamba-130m-hf"),
        &scenario("q8_0", 4096, 2, LlamaCppInputs::default()),
    );
    assert_eq!(e.recurrent_bytes, 2 * 24 * (3 * 1536 + 16 * 1536) * 4);
    assert_eq!(e.kv_bytes, 0);
}
