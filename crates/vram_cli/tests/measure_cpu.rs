//! `vram measure --device cpu` end to end on a tiny llama (2 layers, hidden 64), asserting exact
//! byte identities, plus the probe's tracker on tensors of known size.
//!
//! These need the Python venv (scripts/python-env.sh). Without it the tests print why they are
//! skipped and pass — unless VRAM_REQUIRE_PYTHON is set (the README test command and CI set it after
//! creating the venv), in which case a missing venv fails them.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// The tiny llama: hidden 64, 2 layers, 4 heads × 16, 2 KV heads, MLP 128, vocab 1000, untied head.
/// Parameters: embed 64,000 + per layer (q 4,096 + k 2,048 + v 2,048 + o 4,096 + gate/up/down
/// 3 × 8,192 + 2 norms × 64 = 36,992) × 2 + final norm 64 + lm_head 64,000 = 202,048.
const TINY: &str = r#"{"model_type": "llama", "architectures": ["LlamaForCausalLM"],
  "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
  "num_key_value_heads": 2, "vocab_size": 1000, "max_position_embeddings": 512,
  "rms_norm_eps": 1e-6, "tie_word_embeddings": false, "rope_theta": 10000.0}"#;
const TINY_PARAMS: u64 = 202_048;
/// Parameter tensors: embed, lm_head, final norm + 9 per layer × 2.
const TINY_PARAM_TENSORS: u64 = 21;
/// Rotary buffers: `inv_freq` and `original_inv_freq`, head_dim / 2 = 8 fp32 values each.
const TINY_BUFFER_BYTES: u64 = 64;

/// The Python to use, or None (after printing why) when the tests should skip.
fn python() -> Option<PathBuf> {
    let candidate = std::env::var_os("VRAM_PYTHON")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            let venv = std::env::var_os("VRAM_VENV")
                .map(PathBuf::from)
                .or_else(|| {
                    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/vram/venv"))
                })?;
            Some(venv.join("bin/python"))
        });
    match candidate {
        Some(p) if p.is_file() => Some(p),
        other => {
            let msg = format!(
                "no Python venv for vram measure ({}); create it with scripts/python-env.sh",
                other.map_or("HOME unset".to_string(), |p| p.display().to_string())
            );
            if std::env::var_os("VRAM_REQUIRE_PYTHON").is_some() {
                panic!("VRAM_REQUIRE_PYTHON is set but {msg}");
            }
            println!("skipped: {msg}");
            None
        }
    }
}

fn temp_config(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vram-measure-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write config");
    path
}

fn vram(args: &[&str], python: &PathBuf) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vram"))
        .args(args)
        .env("VRAM_PYTHON", python)
        .output()
        .expect("the vram binary runs")
}

/// Pure fp32 AdamW on 16 tokens: the scenario whose model states are worked by hand.
const FP32_ADAMW_16_TOKENS: [&str; 8] = [
    "--dtype",
    "fp32",
    "--mixed-precision",
    "none",
    "--optimizer",
    "adamw",
    "--seq",
    "16",
];

/// Runs `vram measure TINY --device cpu --json - EXTRA…` and returns the report.
fn measure(py: &PathBuf, extra: &[&str]) -> serde_json::Value {
    measure_config(py, &temp_config("tiny-llama.json", TINY), extra)
}

/// Runs `vram measure CFG --device cpu --json - EXTRA…` and returns the report (one rank's, or
/// the `vram-measure-ranks` document with `--nproc`).
fn measure_config(py: &PathBuf, cfg: &std::path::Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "measure",
        cfg.to_str().expect("utf-8 path"),
        "--device",
        "cpu",
        "--json",
        "-",
    ];
    args.extend_from_slice(extra);
    let out = vram(&args, py);
    assert!(
        out.status.success(),
        "vram measure {extra:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the report is JSON")
}

fn u(v: &serde_json::Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("not a byte count: {v}"))
}

/// The probe's self-test rows under `key`: arrays of byte counts (and times).
fn number_rows(doc: &serde_json::Value, key: &str) -> Vec<Vec<u64>> {
    doc[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key}"))
        .iter()
        .map(|row| row.as_array().expect("a row").iter().map(u).collect())
        .collect()
}

fn phase<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["measured"]["phases"]
        .as_array()
        .expect("phases")
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no phase {name}"))
}

#[test]
fn tracker_counts_storages_and_a_matmul_peaks_at_exactly_its_three_operands() {
    let Some(py) = python() else { return };
    let mut child = Command::new(&py)
        .args(["-", "--self-test"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(include_str!("../probe/probe.py").as_bytes())
        .expect("probe written");
    let out = child.wait_with_output().expect("probe ran");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let rows = doc["self_test"].as_array().expect("self_test phases");
    let get = |name: &str| {
        let p = rows.iter().find(|p| p["name"] == name).expect(name);
        (u(&p["allocated_bytes"]), u(&p["peak_allocated_bytes"]))
    };
    // a: 64×32 fp32 = 8,192 B; b: 32×16 = 2,048 B; a @ b: 64×16 = 4,096 B
    assert_eq!(get("operands"), (10_240, 10_240));
    assert_eq!(get("matmul"), (14_336, 14_336));
    // views share a's storage: no new bytes
    assert_eq!(get("views"), (14_336, 14_336));
    // free c (−4,096), a contiguous transpose (+8,192), a 2,000 B bf16 tensor allocated and freed
    assert_eq!(get("free"), (18_432, 20_432));
    // a block freed on a thread the profiler does not watch leaves the count when its address is
    // allocated again: [live bytes by the events, with the reporter's total] after each event
    let lost = number_rows(&doc, "lost_free_check");
    assert_eq!(
        lost,
        [
            [1_000, 1_000],
            [1_500, 1_500],
            [1_500, 1_500],
            [1_000, 1_000]
        ]
    );
    // a collective's own staging copy (300 B, made at 5 inside the op of 4) that no event frees
    // leaves when the gloo run that takes it as input ends (6); a block a collective named (100 B
    // at 6, its run ending at 9), whose address is allocated again at 10, leaves at 9:
    // [time, live, with the total]
    let staging = number_rows(&doc, "staging_copy_check");
    assert_eq!(
        staging,
        [
            [1, 1_000, 1_000],
            [5, 1_300, 1_300],
            [6, 1_400, 1_400],
            [6, 1_100, 1_100],
            [7, 1_300, 1_300],
            [9, 1_200, 1_200],
            [10, 1_250, 1_250]
        ]
    );
    // blocks a collective named (run ending at 3) that the events keep to the end: the one no
    // tensor holds when the profiler stops (400 B) leaves at 3, the one a tensor holds stays
    let held = number_rows(&doc, "held_check");
    assert_eq!(
        held,
        [
            [1, 400, 400],
            [2, 1_000, 1_000],
            [3, 600, 600],
            [4, 610, 610]
        ]
    );
}

#[test]
fn tiny_llama_fp32_adamw_has_exact_weights_gradients_and_optimizer_states() {
    let Some(py) = python() else { return };
    let r = measure(&py, &FP32_ADAMW_16_TOKENS);
    let m = &r["measured"];
    assert_eq!(r["schema_version"], 1);
    assert_eq!(r["outcome"], "ok");
    assert_eq!(m["counting"], "cpu-exact");
    assert_eq!(u(&m["total_params"]), TINY_PARAMS);
    assert_eq!(u(&m["weights_bytes"]), TINY_PARAMS * 4);
    assert_eq!(u(&m["buffers_bytes"]), TINY_BUFFER_BYTES);
    // bytes after load = Σ numel × element_size of parameters and buffers
    assert_eq!(
        u(&phase(&r, "load")["allocated_bytes"]),
        TINY_PARAMS * 4 + TINY_BUFFER_BYTES
    );
    // gradients = trainable bytes
    assert_eq!(u(&m["trainable_bytes"]), TINY_PARAMS * 4);
    assert_eq!(u(&m["gradients_bytes"]), TINY_PARAMS * 4);
    // AdamW: exp_avg + exp_avg_sq in fp32 = 8 B per parameter; one 4 B step counter per tensor
    assert_eq!(u(&m["optimizer_bytes"]), TINY_PARAMS * 8);
    assert_eq!(u(&m["optimizer_step_bytes"]), TINY_PARAM_TENSORS * 4);
    let input = u(&m["input_bytes"]);
    assert_eq!(input, 16 * 8, "int64 input_ids, batch 1 × seq 16");
    let load = TINY_PARAMS * 4 + TINY_BUFFER_BYTES;
    // after backward every activation is freed: weights + input + gradients remain
    assert_eq!(
        u(&phase(&r, "backward")["allocated_bytes"]),
        load + input + TINY_PARAMS * 4
    );
    // after the step and zero_grad(set_to_none): weights + input + states + step counters
    let after_step = load + input + TINY_PARAMS * 8 + TINY_PARAM_TENSORS * 4;
    assert_eq!(u(&phase(&r, "optimizer")["allocated_bytes"]), after_step);
    assert_eq!(u(&phase(&r, "optimizer_2")["allocated_bytes"]), after_step);
    // the steady-state backward ends with the states and the gradients live
    assert_eq!(
        u(&phase(&r, "backward_2")["allocated_bytes"]),
        after_step + TINY_PARAMS * 4
    );
    // the headline is the largest phase peak
    let peak = r["measured"]["phases"]
        .as_array()
        .expect("phases")
        .iter()
        .map(|p| u(&p["peak_allocated_bytes"]))
        .max()
        .expect("phases");
    assert_eq!(u(&m["peak_allocated_bytes"]), peak);
    assert_eq!(
        r["environment"]["transformers"]
            .as_str()
            .map(|s| !s.is_empty()),
        Some(true)
    );
    // The report carries the core's estimate of the same step: persistent memory exact to the byte,
    // and the headline within the issue's 3 % target.
    let e = &r["estimate"];
    for c in e["components"].as_array().expect("estimate components") {
        if ["weights", "gradients", "optimizer"].contains(&c["key"].as_str().unwrap_or("")) {
            assert_eq!(c["error_bytes"], 0, "{c}");
        }
    }
    assert_eq!(e["components"].as_array().map(Vec::len), Some(3));
    let err = e["peak_allocated"]["error_percent"]
        .as_f64()
        .expect("peak error");
    assert!(err.abs() <= 3.0, "peak estimate off by {err} %");
}

#[test]
fn lora_trainable_count_is_pefts_and_adapters_get_fp32_states() {
    let Some(py) = python() else { return };
    let r = measure(
        &py,
        &[
            "--dtype",
            "fp32",
            "--mixed-precision",
            "none",
            "--seq",
            "16",
            "--lora-r",
            "8",
        ],
    );
    let m = &r["measured"];
    // peft's llama default targets q_proj (64→64) and v_proj (64→32): r × (in + out) each,
    // 8 × 128 + 8 × 96 = 1,792 per layer, 3,584 for 2 layers
    assert_eq!(u(&m["trainable_params_peft"]), 3_584);
    assert_eq!(u(&m["trainable_params"]), 3_584);
    assert_eq!(u(&m["total_params_peft"]), TINY_PARAMS + 3_584);
    assert_eq!(u(&m["weights_bytes"]), (TINY_PARAMS + 3_584) * 4);
    assert_eq!(u(&m["gradients_bytes"]), 3_584 * 4);
    assert_eq!(u(&m["optimizer_bytes"]), 3_584 * 8);
}

#[test]
fn sgd_momentum_keeps_one_buffer_per_parameter() {
    let Some(py) = python() else { return };
    let r = measure(
        &py,
        &[
            "--dtype",
            "bf16",
            "--optimizer",
            "sgd-momentum",
            "--seq",
            "16",
            "--set",
            "num_hidden_layers=1",
        ],
    );
    let m = &r["measured"];
    // one layer: 202,048 − 36,992 parameters, bf16
    let params = TINY_PARAMS - 36_992;
    assert_eq!(u(&m["weights_bytes"]), params * 2);
    assert_eq!(u(&m["gradients_bytes"]), params * 2);
    assert_eq!(u(&m["optimizer_bytes"]), params * 2);
    assert_eq!(r["config"]["overrides"]["num_hidden_layers"], 1);
    assert_ne!(r["config"]["sha256"], r["config"]["effective_sha256"]);
}

#[test]
fn inference_kv_cache_is_exact_after_prefill_and_decode() {
    let Some(py) = python() else { return };
    let r = measure(
        &py,
        &[
            "--mode", "infer", "--dtype", "bf16", "--batch", "2", "--seq", "16",
        ],
    );
    let m = &r["measured"];
    assert_eq!(u(&m["weights_bytes"]), TINY_PARAMS * 2);
    // 2 layers × (K + V) × batch 2 × 2 KV heads × 16 tokens × 16 head_dim × 2 B
    assert_eq!(u(&m["kv_cache_bytes"]), 2 * 2 * 2 * 2 * 16 * 16 * 2);
    assert_eq!(
        u(&m["kv_cache_bytes_after_decode"]),
        2 * 2 * 2 * 2 * 17 * 16 * 2
    );
    let names: Vec<&str> = m["phases"]
        .as_array()
        .expect("phases")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(names, ["load", "prefill", "decode"]);
    // after prefill: weights + buffers + input_ids + KV cache + the next token (batch × int64)
    assert_eq!(
        u(&phase(&r, "prefill")["allocated_bytes"]),
        TINY_PARAMS * 2 + TINY_BUFFER_BYTES + 2 * 16 * 8 + 8_192 + 2 * 8
    );
}

#[test]
fn no_cuda_device_is_one_clear_error_with_exit_code_2() {
    let Some(py) = python() else { return };
    if std::path::Path::new("/proc/driver/nvidia").exists() {
        println!("skipped: this machine has an NVIDIA driver");
        return;
    }
    let cfg = temp_config("tiny-cuda.json", TINY);
    let out = vram(
        &["measure", cfg.to_str().expect("utf-8"), "--device", "cuda"],
        &py,
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err.trim_end().lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: ") && last.contains("no CUDA device"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_python_that_is_not_there_or_prints_nothing_is_an_error_not_a_panic() {
    let cfg = temp_config("tiny-nopy.json", TINY);
    for (python, needle) in [
        ("/nonexistent/python3", "cannot run"),
        ("/bin/false", "printed no report"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_vram"))
            .args(["measure", cfg.to_str().expect("utf-8"), "--python", python])
            .output()
            .expect("vram runs");
        assert_eq!(out.status.code(), Some(2), "{python}");
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.trim_end().lines().last().unwrap_or_default();
        assert!(
            last.starts_with("error: ") && last.contains(needle),
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn multi_gpu_scenarios_are_refused_before_python_starts() {
    let err = refused_before_python("tiny-zero.json", &["--gpus", "2", "--zero", "3"]);
    assert!(
        err.contains("--nproc: expected 2 to launch every rank of the layout, found 1"),
        "{err}"
    );
    let err = refused_before_python("tiny-offload.json", &["--offload-optimizer"]);
    assert!(err.contains("estimate-only: --offload-optimizer"), "{err}");
}

/// `vram measure` of TINY with `flags` and a Python that does not exist: exit 2 with one line on
/// stderr (returned), so nothing reached Python.
fn refused_before_python(file: &str, flags: &[&str]) -> String {
    let cfg = temp_config(file, TINY);
    let mut args = vec!["measure", cfg.to_str().expect("utf-8")];
    args.extend_from_slice(flags);
    args.extend_from_slice(&["--python", "/nonexistent"]);
    let out = Command::new(env!("CARGO_BIN_EXE_vram"))
        .args(&args)
        .output()
        .expect("vram runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    err
}

/// `vram measure CFG` on two ranks under torchrun (fp32 AdamW, 16 tokens) with the layout flags
/// `layout`: the `vram-measure-ranks` document.
fn measure_two_ranks(py: &PathBuf, cfg: &std::path::Path, layout: &[&str]) -> serde_json::Value {
    let mut extra = FP32_ADAMW_16_TOKENS.to_vec();
    extra.extend_from_slice(&["--nproc", "2"]);
    extra.extend_from_slice(layout);
    measure_config(py, cfg, &extra)
}

/// `vram measure --nproc 2 --fsdp2` launches two ranks under torchrun (gloo on CPU): each holds
/// half of every model state to the byte, as the per-rank estimate says (issue 10).
#[test]
fn fsdp2_on_two_ranks_holds_half_of_each_model_state_on_every_rank() {
    let Some(py) = python() else { return };
    let cfg = temp_config("tiny-fsdp2.json", TINY);
    let doc = measure_two_ranks(&py, &cfg, &["--fsdp2"]);
    assert_eq!(doc["kind"], "vram-measure-ranks");
    let ranks = doc["ranks"].as_array().expect("ranks");
    assert_eq!(ranks.len(), 2);
    for r in ranks {
        let m = &r["measured"];
        assert_eq!(r["outcome"], "ok");
        // every dimension of TINY is even: the dim-0 shards need no padding
        assert_eq!(u(&m["weights_bytes"]), TINY_PARAMS * 4 / 2);
        assert_eq!(u(&m["gradients_bytes"]), TINY_PARAMS * 4 / 2);
        assert_eq!(u(&m["optimizer_bytes"]), TINY_PARAMS * 8 / 2);
        let est = &r["estimate"]["components"];
        for d in est.as_array().expect("components") {
            if ["weights", "gradients", "optimizer"].contains(&d["key"].as_str().unwrap_or("")) {
                assert_eq!(d["error_bytes"], 0, "{d}");
            }
        }
    }
}

/// TINY with hidden size 1024, MLP width 256 and 32,000 tokens: a 4-head (head_dim 256), 2-K/V-head
/// model whose model states dwarf a layer's transients, as in real models.
fn wide_tiny() -> String {
    TINY.replace("\"hidden_size\": 64", "\"hidden_size\": 1024")
        .replace("\"intermediate_size\": 128", "\"intermediate_size\": 256")
        .replace("\"vocab_size\": 1000", "\"vocab_size\": 32000")
}

/// `vram measure --nproc 2 --framework hf --tp 2` applies transformers' own tensor-parallel plan
/// on two ranks: every projection, the embedding and lm_head are halved, the norms stay whole and
/// the embedding's gradient is computed whole, to the byte as the per-rank estimate says; the
/// steady-state peaks agree within 3 % (issue 10).
#[test]
fn transformers_tensor_parallel_on_two_ranks_matches_the_rank_estimate() {
    let Some(py) = python() else { return };
    // A wide TINY (hidden 1024, 32,000 tokens): wide layers and a large vocabulary, as in real
    // models.
    let wide = wide_tiny();
    let cfg = temp_config("tiny-tp.json", &wide);
    let doc = measure_two_ranks(&py, &cfg, &["--framework", "hf", "--tp", "2"]);
    let ranks = doc["ranks"].as_array().expect("ranks");
    assert_eq!(ranks.len(), 2);
    // Per rank: embedding and lm_head 32,000 · 1024 / 2 = 16,384,000 each; per layer the
    // projections (q 1,048,576 + k, v 524,288 each (2 K/V heads × 256) + o 1,048,576 + 3 × 262,144)
    // / 2 = 1,966,080 plus the two norms' 2,048, × 2 layers; the final norm's 1,024: 36,705,280
    // parameters. The embedding's gradient is whole: + 16,384,000.
    let local = 2 * 16_384_000 + 2 * (1_966_080 + 2_048) + 1_024;
    assert_eq!(local, 36_705_280);
    for r in ranks {
        let m = &r["measured"];
        assert_eq!(r["outcome"], "ok");
        assert_eq!(u(&m["weights_bytes"]), local * 4);
        assert_eq!(u(&m["gradients_bytes"]), (local + 16_384_000) * 4);
        assert_eq!(u(&m["optimizer_bytes"]), local * 8);
        assert_rank_matches_its_estimate(r, 3.0);
    }
}

/// A rank's weights, gradients and optimizer states equal its estimate to the byte, and each
/// steady-state phase peak (`*_2`) agrees within `percent`.
fn assert_rank_matches_its_estimate(r: &serde_json::Value, percent: f64) {
    for d in r["estimate"]["components"].as_array().expect("components") {
        if ["weights", "gradients", "optimizer"].contains(&d["key"].as_str().unwrap_or("")) {
            assert_eq!(d["error_bytes"], 0, "{d}");
        }
    }
    for p in r["estimate"]["phases"].as_array().expect("phases") {
        if p["name"].as_str().is_some_and(|n| n.ends_with("_2")) {
            let e = p["peak_allocated"]["error_percent"]
                .as_f64()
                .expect("error");
            assert!(e.abs() <= percent, "{p}");
        }
    }
}

/// `vram measure --nproc 2 --framework torchtitan --pp 2` runs torchtitan 0.2's `pipeline_llm`
/// (1F1B over two micro-batches) on its Llama 3 model built from the config: each stage holds its
/// layers, the first the embedding and the last the final norm and output layer, to the byte as
/// the stage's estimate says; each stage's steady-state peak (the schedule's `step_2`, and
/// `optimizer_2`) agrees within 3 % (issue 10).
#[test]
fn torchtitan_pipeline_on_two_ranks_matches_each_stage_estimate() {
    let Some(py) = python() else { return };
    let wide = wide_tiny();
    let cfg = temp_config("tiny-titan-pp.json", &wide);
    // two micro-batches of one sequence
    let doc = measure_two_ranks(
        &py,
        &cfg,
        &[
            "--batch",
            "1",
            "--global-batch",
            "2",
            "--framework",
            "torchtitan",
            "--pp",
            "2",
        ],
    );
    let ranks = doc["ranks"].as_array().expect("ranks");
    assert_eq!(ranks.len(), 2);
    // One layer: q 1024·1024 + k, v 1024·512 each + o 1024·1024 + SwiGLU 3·1024·256 + two norms
    // 2·1024 = 3,934,208. Stage 0 adds the embedding 32,000·1024 = 32,768,000; stage 1 the output
    // layer (as many) and the final norm's 1,024.
    let layer = 2 * 1_048_576 + 2 * 524_288 + 3 * 262_144 + 2 * 1_024;
    assert_eq!(layer, 3_934_208);
    let stage_params = [layer + 32_768_000, layer + 32_768_000 + 1_024];
    for (stage, r) in ranks.iter().enumerate() {
        let m = &r["measured"];
        assert_eq!(r["outcome"], "ok");
        assert_eq!(u(&m["weights_bytes"]), stage_params[stage] * 4);
        assert_eq!(u(&m["gradients_bytes"]), stage_params[stage] * 4);
        assert_eq!(u(&m["optimizer_bytes"]), stage_params[stage] * 8);
        let phases = r["estimate"]["phases"].as_array().expect("phases");
        let names: Vec<&str> = phases.iter().filter_map(|p| p["name"].as_str()).collect();
        assert!(
            names.contains(&"step_2") && names.contains(&"optimizer_2"),
            "stage {stage}: {names:?}"
        );
        assert_rank_matches_its_estimate(r, 3.0);
    }
}

/// torchtitan layouts run under torchrun: one process is refused before Python starts, naming the
/// flag and what it needs.
#[test]
fn torchtitan_on_one_process_is_refused_before_python_starts() {
    let err = refused_before_python(
        "tiny-titan-one.json",
        &["--framework", "torchtitan", "--pp", "2"],
    );
    assert!(
        err.contains("--nproc: expected 2 or more ranks for --framework torchtitan"),
        "{err}"
    );
}

/// [`wide_tiny`]'s parameters: embedding and lm_head 32,768,000 each, two layers of 3,934,208,
/// the final norm's 1,024.
const WIDE_TINY_PARAMS: u64 = 2 * 32_768_000 + 2 * 3_934_208 + 1_024;

/// The two ranks' documents of `vram measure --nproc 2 --zero STAGE` on [`wide_tiny`].
fn zero_on_two_ranks(py: &PathBuf, stage: u32) -> Vec<serde_json::Value> {
    let cfg = temp_config(&format!("tiny-zero{stage}.json"), &wide_tiny());
    let doc = measure_two_ranks(py, &cfg, &["--zero", &stage.to_string()]);
    let ranks = doc["ranks"].as_array().expect("ranks").clone();
    assert_eq!(ranks.len(), 2);
    ranks
}

/// `vram measure --nproc 2 --zero 3` runs DeepSpeed ZeRO 3 on two CPU ranks: each rank holds half
/// the fp32 parameters, and AdamW's two moments and the fp32 master of that half, to the byte as the
/// estimate says. From the second step on DeepSpeed's prefetcher keeps the whole model gathered
/// through forward; after the step a rank holds what the estimate says within 0.1 %, and the
/// steady-state peaks agree within 3 % (issue 10).
#[test]
fn deepspeed_zero3_on_two_ranks_matches_the_rank_estimate() {
    let Some(py) = python() else { return };
    let ranks = zero_on_two_ranks(&py, 3);
    let half = WIDE_TINY_PARAMS / 2;
    for r in &ranks {
        let m = &r["measured"];
        assert_eq!(r["outcome"], "ok");
        assert_eq!(u(&m["weights_bytes"]), half * 4);
        assert_eq!(u(&m["optimizer_bytes"]), half * 12);
        for d in r["estimate"]["components"].as_array().expect("components") {
            assert_eq!(d["error_bytes"], 0, "{d}");
        }
        // the frees gloo's threads made are out of the count (the probe's CPU tracker): after the
        // step a rank holds what the estimate says it holds (weights, states, the gradient
        // partition buffer, the persistent parameters), within 0.1 %
        let after_step = u(&phase(r, "optimizer_2")["allocated_bytes"]) as f64;
        let est = r["estimate"]["phases"]
            .as_array()
            .expect("phases")
            .iter()
            .find(|p| p["name"] == "optimizer_2")
            .map(|p| u(&p["allocated"]["estimated_bytes"]) as f64)
            .expect("optimizer_2");
        assert!(
            (after_step - est).abs() <= after_step * 0.001,
            "{after_step} B, {est} B"
        );
        assert_rank_matches_its_estimate(r, 3.0);
    }
}

/// `vram measure --nproc 2 --zero 2` runs DeepSpeed ZeRO 2 as HF Trainer does (its AdamW handed to
/// `deepspeed.initialize`, buckets of hidden² elements) on two CPU ranks: each rank holds the whole
/// fp32 model, and AdamW's two moments and DeepSpeed's fp32 master copy of its half, to the byte as
/// the estimate says; the steady-state peaks agree within 3 % (issue 10).
#[test]
fn deepspeed_zero2_on_two_ranks_matches_the_rank_estimate() {
    let Some(py) = python() else { return };
    let ranks = zero_on_two_ranks(&py, 2);
    let params = WIDE_TINY_PARAMS;
    for r in &ranks {
        let m = &r["measured"];
        assert_eq!(r["outcome"], "ok");
        assert_eq!(u(&m["weights_bytes"]), params * 4);
        // two fp32 moments + the fp32 master, of half the parameters
        assert_eq!(u(&m["optimizer_bytes"]), params / 2 * 12);
        for d in r["estimate"]["components"].as_array().expect("components") {
            assert_eq!(d["error_bytes"], 0, "{d}");
        }
        assert_rank_matches_its_estimate(r, 3.0);
    }
}
