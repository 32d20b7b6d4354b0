//! The page's answer and its "make it fit" list, natively: every suggestion fits with 5 % to spare
//! and its total is the core's estimate of the changed scenario; vLLM's verdict is its concurrency at
//! the user's context (a larger load is queued, not refused); nothing-fits names the weights.

use vram_core::gpu_catalog::Verdict;
use vram_core::infer;
use vram_core::report::DeviceOverheads;
use vram_core::train;
use vram_web::answer::{answer, TotalKind};
use vram_web::compute::page_results;
use vram_web::fit::{advise, precision_strip, within_headroom, Change, NoFit};
use vram_web::load::load_preset;
use vram_web::page_scenario::{GpuChoice, PageScenario, Task};

fn spec(id: &str) -> vram_core::ModelSpec {
    load_preset(id).unwrap().spec
}

fn o() -> DeviceOverheads {
    DeviceOverheads::default()
}

#[test]
fn the_95_percent_rule_is_exact_at_the_boundary() {
    assert!(within_headroom(95, 100));
    assert!(!within_headroom(96, 100));
    assert!(within_headroom(0, 0));
}

#[test]
fn llama_8b_full_training_on_an_h100_gets_only_changes_that_fit_each_with_the_core_total() {
    let s = spec("meta-llama__Llama-3.1-8B");
    let page = PageScenario {
        task: Task::Train,
        ..PageScenario::default()
    };
    let a = advise(&s, &page);
    assert!(a.no_fit.is_none());
    assert!(a.suggestions.len() >= 3, "{:?}", a.suggestions);
    for sug in &a.suggestions {
        let core = train::training_totals(&s, &sug.page.train_scenario(), &o()).unwrap();
        assert_eq!(sug.total_bytes, core.device_bytes, "{:?}", sug.change);
        assert_eq!(sug.usable_bytes, sug.page.gpu.usable_bytes());
        assert!(
            within_headroom(sug.total_bytes, sug.usable_bytes),
            "{:?}",
            sug.change
        );
        // Applying it gives a verdict that is not "does not fit".
        let r = page_results(&s, &sug.page);
        let m = r.train.unwrap().unwrap();
        assert_ne!(
            answer(&sug.page, &m).verdict,
            Verdict::DoesNotFit,
            "{:?}",
            sug.change
        );
    }
    // Full AdamW of 8 B parameters is 16 B/param = 128 GB before activations: checkpointing alone
    // cannot fit an 80 GB card, so the list starts with the optimizer, not with checkpointing.
    assert!(!a
        .suggestions
        .iter()
        .any(|x| x.change == Change::Checkpointing));
    // No fleet beyond one node is proposed.
    assert!(a
        .suggestions
        .iter()
        .all(|x| !matches!(x.change, Change::Zero3Gpus { gpus } if gpus > 8)));
}

#[test]
fn a_fitting_task_gets_no_suggestions() {
    let s = spec("Qwen__Qwen3-0.6B");
    for task in Task::ALL {
        let page = PageScenario {
            task,
            ..PageScenario::default()
        };
        let a = advise(&s, &page);
        assert!(a.suggestions.is_empty() && a.no_fit.is_none(), "{task:?}");
    }
}

#[test]
fn vllm_concurrency_is_at_the_users_context_and_a_larger_load_is_queued_not_refused() {
    let s = spec("Qwen__Qwen3-8B");
    let mut page = PageScenario::default();
    page.infer.seq_len = 8192;
    page.infer.serving.max_model_len = 8192;
    page.infer.batch = 1;
    let r = page_results(&s, &page).infer.unwrap().unwrap();
    let a = answer(&page, &r);
    let e = infer::estimate_inference(&s, &page.infer_scenario(), &o()).unwrap();
    let at_once = e.serving.concurrency_at_context.floor() as u64;
    assert!(at_once > 10, "{at_once}");
    assert_eq!(a.serve.as_ref().unwrap().sequences, at_once);
    assert_eq!(
        a.serve.as_ref().unwrap().kv_tokens,
        Some(e.serving.kv_tokens)
    );
    assert_eq!(a.total_kind, TotalKind::Vllm);
    assert_eq!(a.verdict, Verdict::Fits);
    page.infer.batch = at_once + 1;
    let r = page_results(&s, &page).infer.unwrap().unwrap();
    assert_eq!(
        answer(&page, &r).verdict,
        Verdict::Tight,
        "queued, not refused"
    );
}

#[test]
fn llama_405b_training_on_one_small_card_says_why_nothing_fits() {
    let s = spec("meta-llama__Llama-3.1-405B");
    let page = PageScenario {
        task: Task::Train,
        gpu: GpuChoice::Catalog("rtx4090"),
        ..PageScenario::default()
    };
    let a = advise(&s, &page);
    assert!(
        a.suggestions.is_empty(),
        "{:?}",
        a.suggestions.iter().map(|x| &x.change).collect::<Vec<_>>()
    );
    let Some(NoFit::WeightsAlone {
        weights_bytes,
        usable_bytes,
    }) = a.no_fit
    else {
        panic!("expected the weights to be named: {:?}", a.no_fit)
    };
    assert!(weights_bytes > usable_bytes);
}

#[test]
fn serving_llama_8b_on_an_8_gib_card_offers_4_bit_weights_with_the_core_total() {
    let s = spec("meta-llama__Llama-3.1-8B");
    let page = PageScenario {
        infer: vram_core::Scenario::inference(),
        gpu: GpuChoice::Custom(8 << 30),
        ..PageScenario::default()
    };
    let a = advise(&s, &page);
    let nf4 = a
        .suggestions
        .iter()
        .find(|x| x.change == Change::Weights { format: "nf4" })
        .expect("nf4 offered");
    let core = infer::inference_totals(&s, &nf4.page.infer_scenario(), &o()).unwrap();
    assert_eq!(nf4.total_bytes, core.device_bytes);
    assert!(within_headroom(nf4.total_bytes, 8 << 30));
    // fp8 weights of 8 B parameters are 8 GB = 7.5 GiB: more than 95 % of 8 GiB, not offered.
    assert!(!a
        .suggestions
        .iter()
        .any(|x| x.change == Change::Weights { format: "fp8" }));
}

#[test]
fn the_precision_strip_compares_formats_with_core_figures_and_fp8_halves_the_weights() {
    let s = spec("Qwen__Qwen3-8B");
    let page = PageScenario::default();
    let rows = precision_strip(&s, &page);
    let labels: Vec<&str> = rows.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(labels, ["bf16", "fp8", "fp8 + fp8 KV", "int8", "int4"]);
    assert!(rows[0].current);
    let bf16 = &rows[0];
    let fp8 = &rows[1];
    let ratio = fp8.weights_bytes as f64 / bf16.weights_bytes as f64;
    assert!(ratio > 0.5 && ratio < 0.6, "{ratio}");
    // fp8 KV doubles the tokens of the same pool.
    assert!(rows[2].kv_tokens.unwrap() > rows[1].kv_tokens.unwrap() * 19 / 10);
    for r in &rows {
        let e = infer::estimate_inference(&s, &r.page.infer_scenario(), &o()).unwrap();
        assert_eq!(r.total_bytes, e.device_bytes);
        assert_eq!(r.weights_bytes, e.weights_bytes);
    }
}

#[test]
fn zero_offload_reports_the_host_ram_per_process() {
    let s = spec("meta-llama__Llama-3.1-8B");
    let mut page = PageScenario {
        task: Task::Train,
        ..PageScenario::default()
    };
    page.train.zero = vram_core::scenario::ZeroStage(3);
    page.train.gpus = 8;
    page.train.offload_optimizer = true;
    let r = page_results(&s, &page).train.unwrap().unwrap();
    let core = train::training_totals(&s, &page.train_scenario(), &o()).unwrap();
    let a = answer(&page, &r);
    assert!(core.cpu_offload_bytes > 0);
    assert_eq!(a.host_bytes_per_gpu, core.cpu_offload_bytes);
    assert_eq!(a.host_bytes(), core.cpu_offload_bytes * 8);
    // The bar's segments add up to the compared total.
    assert_eq!(
        a.segments.iter().map(|x| x.bytes).sum::<u64>(),
        a.total_bytes
    );
}

#[test]
fn transformers_on_two_gpus_gets_one_bar_per_gpu_of_the_device_map_and_the_largest_is_the_verdict()
{
    let s = spec("Qwen__Qwen3-32B");
    let mut page = PageScenario {
        task: Task::Serve,
        infer: vram_core::Scenario::inference(),
        gpu: GpuChoice::Catalog("a100-40"),
        ..PageScenario::default()
    };
    // one A100 40GB cannot hold 65 GB of bf16 weights: spreading them over 2 is offered and fits
    let a = advise(&s, &page);
    let two = a
        .suggestions
        .iter()
        .find(|x| x.change == Change::DeviceMap { gpus: 2 })
        .expect("2 GPUs offered");
    assert_eq!(two.page.infer.gpus, 2);
    assert!(within_headroom(two.total_bytes, two.usable_bytes));
    page.set_gpus(2);
    assert_eq!(page.gpus(), 2);
    assert_eq!(
        page.infer.gpus, 2,
        "transformers' GPU count is the device map's"
    );
    let core = infer::estimate_inference(&s, &page.infer_scenario(), &o()).unwrap();
    assert_eq!(core.devices.len(), 2);
    let m = page_results(&s, &page).infer.unwrap().unwrap();
    let ans = answer(&page, &m);
    assert_eq!(ans.total_bytes, core.device_bytes);
    assert_eq!(two.total_bytes, core.device_bytes);
    let bars: Vec<u64> = ans.ranks.iter().map(|r| r.device_bytes).collect();
    let devices: Vec<u64> = core.devices.iter().map(|d| d.device_bytes).collect();
    assert_eq!(bars, devices);
    assert_eq!(ans.total_bytes, *devices.iter().max().unwrap());
    for (bar, d) in ans.ranks.iter().zip(&core.devices) {
        // each bar's parts add up to its GPU's total, and it says which layers it holds
        assert_eq!(
            bar.segments.iter().map(|x| x.bytes).sum::<u64>(),
            d.device_bytes
        );
        assert_eq!(bar.device, Some((d.device, (d.first_layer, d.layers))));
    }
    assert_eq!(ans.ranks[0].role, "embedding");
    assert_eq!(ans.ranks[1].role, "head");
    // the legend is the largest GPU's
    assert_eq!(
        ans.segments.iter().map(|x| x.bytes).sum::<u64>(),
        ans.total_bytes
    );
}
