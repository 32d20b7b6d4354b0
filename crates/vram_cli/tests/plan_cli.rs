//! `vram plan` and the layout flags of `vram estimate`, end to end (issue 10): the JSON contract
//! of docs/cli.md, per-rank figures, launch configs, and one-line errors naming the flag.

mod common;
use common::{json_of, preset, vram};

#[test]
fn estimate_with_a_megatron_layout_lists_every_stage_and_the_largest_as_headline() {
    let doc = json_of(&vram(&[
        "estimate",
        &preset("meta-llama__Llama-2-7b-hf.json"),
        "--train",
        "--json",
        "--framework",
        "megatron",
        "--gpus",
        "8",
        "--tp",
        "2",
        "--pp",
        "2",
        "--sequence-parallel",
    ]));
    let t = &doc["train"];
    let ranks = t["ranks"].as_array().expect("ranks");
    assert_eq!(ranks.len(), 2);
    assert_eq!(ranks[0]["params"], 1_684_668_416u64);
    assert_eq!(ranks[1]["params"], 1_684_672_512u64);
    for key in [
        "stage",
        "tp_rank_kind",
        "count",
        "weights_bytes",
        "gradients_bytes",
        "optimizer_bytes",
        "activations_bytes",
        "communication_bytes",
        "peak_allocated_bytes",
        "peak_reserved_bytes",
        "device_bytes",
        "peak_phase",
        "host_bytes",
    ] {
        assert!(ranks[0].get(key).is_some(), "ranks[] lacks {key}");
    }
    let max = ranks
        .iter()
        .map(|r| r["device_bytes"].as_u64().unwrap_or(0))
        .max();
    assert_eq!(t["max_rank_device_bytes"].as_u64(), max);
    assert_eq!(t["device_bytes"].as_u64(), max);
    assert_eq!(t["framework"], "megatron");
}

#[test]
fn tp_stays_vllms_when_training_runs_hf_data_parallel() {
    // `--tp` sets the training layout only with a TP framework: `--train --infer --tp 2` on one GPU
    // is vLLM's TP 2 beside a one-GPU HF training estimate.
    let doc = json_of(&vram(&[
        "estimate",
        &preset("meta-llama__Llama-3.1-8B.json"),
        "--train",
        "--infer",
        "--engine",
        "vllm",
        "--tp",
        "2",
        "--json",
    ]));
    assert_eq!(doc["infer"]["serving"]["inputs"]["tensor_parallel_size"], 2);
    assert_eq!(doc["train"]["ranks"].as_array().map(Vec::len), Some(1));
}

#[test]
fn a_layout_that_does_not_divide_the_gpus_is_one_line_naming_the_product() {
    let out = vram(&[
        "estimate",
        &preset("meta-llama__Llama-2-7b-hf.json"),
        "--train",
        "--framework",
        "megatron",
        "--gpus",
        "16",
        "--tp",
        "4",
        "--pp",
        "3",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("gpus: expected a multiple of tp × pp × cp = 4 × 3 × 1 = 12, found 16"),
        "{err}"
    );
}

#[test]
fn plan_json_lists_fitting_layouts_with_ranks_headroom_and_launch_configs() {
    let doc = json_of(&vram(&[
        "plan",
        &preset("meta-llama__Llama-2-7b-hf.json"),
        "--task",
        "train",
        "--gpu",
        "h100-80",
        "--gpus",
        "16",
        "--nodes",
        "2",
        "--seq",
        "4096",
        "--batch",
        "2",
        "--dtype",
        "bf16",
        "--mixed-precision",
        "bf16",
        "--framework",
        "megatron",
        "--json",
    ]));
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["task"], "train");
    let plans = doc["plans"].as_array().expect("plans");
    assert!(!plans.is_empty());
    for p in plans {
        let usable = p["usable_bytes"].as_u64().expect("usable");
        assert_eq!(p["fits"], true);
        for r in p["ranks"].as_array().expect("ranks") {
            let d = r["device_bytes"].as_u64().expect("device");
            assert!(d * 100 <= usable * 95, "{}", p["summary"]);
        }
        assert!(p["headroom"].as_f64().is_some_and(|h| h >= 0.05));
        assert!(p["layout"]["tp"].as_u64().is_some());
    }
    let launch = plans[0]["launch"][0]["text"].as_str().expect("launch text");
    assert!(launch.contains("torchrun --nnodes") || launch.contains("torchrun --nproc-per-node"));
    assert!(launch.contains("--tensor-model-parallel-size"));
}

#[test]
fn serve_plan_for_llama2_70b_on_h100s_needs_at_least_four() {
    let doc = json_of(&vram(&[
        "plan",
        &preset("meta-llama__Llama-2-70b-hf.json"),
        "--task",
        "serve",
        "--gpus",
        "8",
        "--seq",
        "4096",
        "--batch",
        "16",
        "--json",
    ]));
    let plans = doc["plans"].as_array().expect("plans");
    assert!(plans.iter().all(|p| p["gpus"].as_u64() >= Some(4)));
    assert!(plans[0]["launch"][0]["text"].as_str().is_some_and(
        |t| t.starts_with("vllm serve meta-llama/Llama-2-70b-hf --tensor-parallel-size 4")
    ));
    assert!(!doc["rejected"].as_array().expect("rejected").is_empty());
}

#[test]
fn an_unknown_gpu_is_one_line_naming_the_flag() {
    let out = vram(&[
        "plan",
        &preset("meta-llama__Llama-2-7b-hf.json"),
        "--gpu",
        "h100",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--gpu: expected a GPU id from the catalog"),
        "{err}"
    );
}
