//! `vram estimate` end to end: exact counts in JSON, and one-line errors with exit code 2.

mod common;
use common::{json_of, preset, vram};

use std::path::PathBuf;
use std::process::Output;

fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vram-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write temp file");
    path
}

/// Asserts exit code 2 and exactly one line on stderr containing every `needle`.
fn assert_one_line_error(out: &Output, needles: &[&str]) {
    assert_eq!(
        out.status.code(),
        Some(2),
        "stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    for n in needles {
        assert!(err.contains(n), "{err:?} lacks {n:?}");
    }
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn llama_3_1_8b_json_reports_the_exact_published_count() {
    let doc = json_of(&vram(&[
        "estimate",
        &preset("meta-llama__Llama-3.1-8B.json"),
        "--json",
    ]));
    assert_eq!(doc["parameters"]["total"], 8030261248u64);
    assert_eq!(doc["parameters"]["trainable"], 8030261248u64);
    assert_eq!(doc["parameters"]["active"], 8030261248u64);
    assert_eq!(doc["model"]["num_kv_heads"], 8);
    assert_eq!(doc["schema_version"], 1);
}

#[test]
fn moe_json_reports_active_parameters_per_token() {
    let doc = json_of(&vram(&[
        "estimate",
        &preset("mistralai__Mixtral-8x7B-v0.1.json"),
        "--json",
    ]));
    assert_eq!(doc["parameters"]["total"], 46702792704u64);
    // 32 layers × 6 unused experts × 3 × 4096 × 14336 fewer than the total.
    assert_eq!(
        doc["parameters"]["active"],
        46702792704u64 - 32 * 6 * 3 * 4096 * 14336
    );
}

#[test]
fn human_output_shows_grouped_total() {
    let out = vram(&["estimate", &preset("openai-community__gpt2.json")]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("124,439,808"), "{text}");
}

#[test]
fn missing_file_is_one_line_exit_2() {
    assert_one_line_error(
        &vram(&["estimate", "/nonexistent/config.json"]),
        &["cannot read", "/nonexistent/config.json"],
    );
}

#[test]
fn truncated_json_names_line_and_column() {
    let p = temp_file(
        "truncated.json",
        b"{\n  \"model_type\": \"llama\",\n  \"hidden_size\": 40",
    );
    assert_one_line_error(
        &vram(&["estimate", p.to_str().unwrap_or_default()]),
        &["not valid JSON at line 3, column"],
    );
}

#[test]
fn negative_layer_count_names_the_field() {
    let p = temp_file("neg.json", br#"{"model_type":"llama","hidden_size":64,"num_hidden_layers":-3,"num_attention_heads":4,"vocab_size":100,"intermediate_size":128}"#);
    assert_one_line_error(
        &vram(&["estimate", p.to_str().unwrap_or_default()]),
        &["\"num_hidden_layers\"", "positive integer", "-3"],
    );
}

#[test]
fn string_size_names_the_field() {
    let p = temp_file("big.json", br#"{"model_type":"llama","hidden_size":"big","num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100,"intermediate_size":128}"#);
    assert_one_line_error(
        &vram(&["estimate", p.to_str().unwrap_or_default()]),
        &["\"hidden_size\"", "\"big\""],
    );
}

#[test]
fn empty_object_names_the_missing_field() {
    let p = temp_file("empty.json", b"{}");
    assert_one_line_error(
        &vram(&["estimate", p.to_str().unwrap_or_default()]),
        &["missing field", "hidden_size"],
    );
}

#[test]
fn png_renamed_to_json_is_refused_clearly() {
    let png = [
        0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, b'I', b'H', b'D', b'R',
        0xff, 0xfe,
    ];
    let p = temp_file("image.json", &png);
    assert_one_line_error(
        &vram(&["estimate", p.to_str().unwrap_or_default()]),
        &["image.json"],
    );
}

#[test]
fn zero_batch_is_refused_by_name() {
    assert_one_line_error(
        &vram(&[
            "estimate",
            &preset("openai-community__gpt2.json"),
            "--batch",
            "0",
        ]),
        &["batch"],
    );
}

#[test]
fn huge_model_does_not_overflow() {
    // ~10^13 parameters: 1000 layers × 12·100k² ≈ 1.2e14; counts stay exact in u64.
    let p = temp_file("huge.json", br#"{"model_type":"llama","hidden_size":100000,"num_hidden_layers":1000,"num_attention_heads":100,"vocab_size":1000000,"intermediate_size":400000}"#);
    let doc = json_of(&vram(&[
        "estimate",
        p.to_str().unwrap_or_default(),
        "--json",
    ]));
    let per_layer: u64 = 4 * 100_000 * 100_000 + 3 * 100_000 * 400_000 + 2 * 100_000;
    let expected = 1000 * per_layer + 2 * 1_000_000 * 100_000 + 100_000;
    assert_eq!(doc["parameters"]["total"], expected);
}

#[test]
fn device_cpu_predicts_what_vram_measure_counts_on_the_cpu() {
    // GPT-2, pure fp32 SGD, batch 1 × 128, eager, its 0.1 dropouts (issue 13's case): an independent
    // CPU harness measured 1,304,298,504 B at the backward peak and 720,300,048 B in the forward;
    // `vram measure --device cpu --dtype fp32` measures the same (it used to keep bf16 autocast
    // under a bare `--dtype fp32`, which is where the two disagreed). On CPU the dropout noise is an
    // fp32 tensor where CUDA keeps a 1-byte mask, so the forward differs between the two devices.
    let args = |device: &str| {
        json_of(&vram(&[
            "estimate",
            &preset("openai-community__gpt2.json"),
            "--train",
            "--dtype",
            "fp32",
            "--optimizer",
            "sgd",
            "--batch",
            "1",
            "--seq",
            "128",
            "--attention",
            "eager",
            "--device",
            device,
            "--json",
        ]))
    };
    let (cpu, cuda) = (args("cpu"), args("cuda"));
    assert_eq!(cpu["device"], "cpu");
    assert!(
        cuda.get("device").is_none(),
        "the default device is not written"
    );
    let peak = |d: &serde_json::Value, phase: &str| {
        d["train"]["phases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == phase)
            .unwrap()["peak_allocated_bytes"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(peak(&cpu, "backward"), 1_304_298_500);
    assert_eq!(peak(&cpu, "forward"), 720_299_012);
    assert_eq!(cpu["train"]["phases"][0]["name"], "load");
    assert!(cpu["scenario"].is_null() || cpu["scenario"]["mixed_precision"] != "bf16");
    assert!(
        peak(&cpu, "forward") > peak(&cuda, "forward"),
        "fp32 noise vs byte masks"
    );
    assert_eq!(cpu["train"]["cuda_context_bytes"], 0);
    assert_eq!(cpu["train"]["workspace_bytes"], 0);
}
