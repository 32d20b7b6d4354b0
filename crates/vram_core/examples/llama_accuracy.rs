//! The llama.cpp accuracy table of docs/accuracy.md §llama.cpp: every printed buffer of the
//! collected start-up logs next to the estimate (`cargo run -p vram_core --example llama_accuracy`).

use vram_core::infer::llama_cpp::LlamaCppEstimate;
use vram_core::scenario::{Engine, FlashAttn, LlamaCppInputs, Scenario};
use vram_core::{parse_config, presets};

fn est(
    id: &str,
    weights: &str,
    ctx: u64,
    seq: u64,
    kv: Option<&str>,
    l: LlamaCppInputs,
) -> LlamaCppEstimate {
    let spec = parse_config(presets::find(id).unwrap().json, None).unwrap();
    let sc = Scenario {
        engine: Engine::LlamaCpp,
        weights: Some(weights.into()),
        seq_len: ctx,
        batch: seq,
        kv_dtype: kv.map(str::to_string),
        llama_cpp: l,
        ..Scenario::inference()
    };
    vram_core::infer::estimate_inference(&spec, &sc, &Default::default())
        .unwrap()
        .llama_cpp
        .unwrap()
}

fn row(case: &str, what: &str, printed: f64, bytes: u64) {
    let e = bytes as f64 / (1u64 << 20) as f64;
    let err = if printed > 0.0 {
        (e / printed - 1.0) * 100.0
    } else {
        0.0
    };
    println!("| {case} | {what} | {printed:.2} | {e:.2} | {err:+.1} % |");
}

fn main() {
    println!("| case | buffer | printed MiB | estimated MiB | error |");
    println!("|---|---|---:|---:|---:|");
    let off = || LlamaCppInputs {
        flash_attn: FlashAttn::Off,
        ..LlamaCppInputs::default()
    };
    let c = "L1 Llama-3-8B Q4_K_M, n_ctx 512, fa 0";
    let e = est(
        "meta-llama__Llama-3.1-8B",
        "q4_k_m",
        512,
        1,
        None,
        LlamaCppInputs {
            n_batch: 512,
            ..off()
        },
    );
    row(c, "CPU model buffer", 281.81, e.weights_host_bytes);
    row(c, "CUDA0 model buffer", 4403.49, e.devices[0].weights_bytes);
    row(c, "CUDA0 KV buffer", 64.0, e.kv_gpu_bytes);
    row(c, "output buffer", 0.49, e.output_bytes);
    row(
        c,
        "CUDA0 compute buffer",
        258.50,
        e.devices[0].compute_bytes,
    );
    row(
        c,
        "CUDA_Host compute buffer (2024 build: one embedding input)",
        9.01,
        e.compute_host_bytes,
    );
    let c = "L2 Phi-3-mini Q4_K_M, n_ctx 4096, ub 256, fa 0";
    let e = est(
        "microsoft__Phi-3.5-mini-instruct",
        "q4_k_m",
        4096,
        1,
        None,
        LlamaCppInputs {
            n_ubatch: 256,
            n_batch: 256,
            ..off()
        },
    );
    row(c, "CPU_Mapped model buffer", 52.84, e.weights_host_bytes);
    row(c, "CUDA0 model buffer", 2228.82, e.devices[0].weights_bytes);
    row(c, "CUDA0 KV buffer", 1536.0, e.kv_gpu_bytes);
    row(c, "output buffer", 0.12, e.output_bytes);
    row(c, "CUDA0 compute buffer", 150.0, e.devices[0].compute_bytes);
    row(
        c,
        "CUDA_Host compute buffer (mid-2025 build)",
        7.0,
        e.compute_host_bytes,
    );
    for (ngl, gpu_kv, cpu_kv, gpu_model, cpu_model) in [
        (19u64, 9728.0, 8704.0, 3715.11, 4585.25),
        (15, 7680.0, 10752.0, 2932.98, 5367.38),
        (11, 5632.0, 12800.0, 0.0, 0.0),
    ] {
        let c = format!("L3 Qwen3-8B Q8_0, n_ctx 131072, fa 0, {ngl} layers on the GPU");
        // the July 2025 build offloaded the last N repeating layers and kept the output on the CPU;
        // current builds count the output first, so the same layers are -ngl N+1 (output on the GPU)
        let e = est(
            "Qwen__Qwen3-8B",
            "q8_0",
            131_072,
            1,
            None,
            LlamaCppInputs {
                n_gpu_layers: Some(ngl + 1),
                n_batch: 512,
                ..off()
            },
        );
        row(&c, "CUDA0 KV buffer", gpu_kv, e.kv_gpu_bytes);
        row(&c, "CPU KV buffer", cpu_kv, e.kv_host_bytes);
        if gpu_model > 0.0 {
            // printed model buffers exclude the output layer (on the CPU then): compare layers only
            let e0 = est(
                "Qwen__Qwen3-8B",
                "q8_0",
                131_072,
                1,
                None,
                LlamaCppInputs {
                    n_gpu_layers: Some(1),
                    n_batch: 512,
                    ..off()
                },
            );
            row(
                &c,
                "CUDA0 model buffer (repeating layers)",
                gpu_model,
                e.devices[0].weights_bytes - e0.devices[0].weights_bytes,
            );
            row(
                &c,
                "CPU_Mapped model buffer (+ output layer)",
                cpu_model,
                e.weights_host_bytes + e0.devices[0].weights_bytes,
            );
        }
        row(
            &c,
            "CUDA0 compute buffer",
            9240.0,
            e.devices[0].compute_bytes,
        );
        row(
            &c,
            "CUDA_Host compute buffer (2025 build)",
            264.01,
            e.compute_host_bytes,
        );
    }
    let e = est(
        "Qwen__Qwen3-8B",
        "q8_0",
        4096,
        1,
        None,
        LlamaCppInputs {
            n_gpu_layers: Some(0),
            ..off()
        },
    );
    row(
        "L3 Qwen3-8B Q8_0, -ngl 0",
        "CPU_Mapped model buffer (whole file)",
        8300.36,
        e.weights_host_bytes,
    );
    let e = est(
        "Qwen__Qwen3-8B",
        "q8_0",
        4096,
        1,
        None,
        LlamaCppInputs {
            n_gpu_layers: Some(23),
            n_batch: 512,
            ..off()
        },
    );
    row(
        "L3 Qwen3-8B Q8_0, n_ctx 4096, 22 layers on the GPU",
        "CUDA0 KV buffer",
        352.0,
        e.kv_gpu_bytes,
    );
    row(
        "L3 Qwen3-8B Q8_0, n_ctx 4096, 22 layers on the GPU",
        "CPU KV buffer",
        224.0,
        e.kv_host_bytes,
    );
    let c = "L4 Qwen2.5-3B, n_ctx 4096, fa 0 (LLamaSharp#1099)";
    let e = est("Qwen__Qwen2.5-3B", "q4_k_m", 4096, 1, None, off());
    row(c, "CUDA0 KV buffer", 144.0, e.kv_gpu_bytes);
    row(c, "output buffer", 0.58, e.output_bytes);
    row(
        c,
        "CUDA0 compute buffer",
        300.75,
        e.devices[0].compute_bytes,
    );
    row(
        c,
        "CUDA_Host compute buffer (Feb 2025 build)",
        12.01,
        e.compute_host_bytes,
    );
    let c = "L5 Llama-3 70B on two devices, n_ctx 4096, fa 0";
    let e = est(
        "meta-llama__Llama-2-70b-hf",
        "q4_k_m",
        4096,
        1,
        None,
        LlamaCppInputs {
            tensor_split: vec![1.0, 1.0],
            ..off()
        },
    );
    row(c, "device 0 KV buffer", 656.0, e.devices[0].kv_bytes);
    row(c, "device 1 KV buffer", 624.0, e.devices[1].kv_bytes);
    row(
        c,
        "device 0 compute buffer",
        588.01,
        e.devices[0].compute_bytes,
    );
    row(
        c,
        "device 1 compute buffer",
        588.01,
        e.devices[1].compute_bytes,
    );
    for (ub, swa_mib, gpu_c, cpu_c) in [
        (512u64, 18.0, 420.08, 268.77),
        (2048, 54.0, 1672.08, 1064.59),
    ] {
        let c = format!("L6 gpt-oss-20b, n_ctx 131072, ub {ub}, fa auto (Metal)");
        let e = est(
            "openai__gpt-oss-20b",
            "q8_0",
            131_072,
            1,
            None,
            LlamaCppInputs {
                n_ubatch: ub,
                ..LlamaCppInputs::default()
            },
        );
        row(&c, "non-SWA KV buffer", 3072.0, e.kv_bytes);
        row(&c, "SWA KV buffer", swa_mib, e.kv_swa_bytes);
        row(&c, "output buffer", 0.77, e.output_bytes);
        row(
            &c,
            "GPU compute buffer (Metal)",
            gpu_c,
            e.devices[0].compute_bytes,
        );
        row(&c, "CPU compute buffer", cpu_c, e.compute_host_bytes);
    }
    let c = "L7 Mixtral-8x7B, n_ctx 512";
    let e = est(
        "mistralai__Mixtral-8x7B-v0.1",
        "q4_k_m",
        512,
        1,
        None,
        LlamaCppInputs {
            n_gpu_layers: Some(23),
            ..off()
        },
    );
    row(c, "KV self size", 64.0, e.kv_bytes);
    row(
        c,
        "KV on the GPU, 22 repeating layers",
        44.0,
        e.kv_gpu_bytes,
    );
}
