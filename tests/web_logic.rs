//! Native tests of the page's logic and charts: the same functions the browser runs, with figures
//! from `vram_core` (no duplicated formulas), and the chart functions rendered to SVG strings.

use plotters::prelude::*;
use vram_core::gpu_catalog::Verdict;
use vram_core::{presets, Scenario};
use vram_web::charts::{draw_phase_bars, draw_sweep, ChartText, ChartTheme};
use vram_web::compute::{self, page_results};
use vram_web::load::{check_size, load_preset, load_text, LoadError, ModelSource, MAX_INPUT_BYTES};
use vram_web::page_scenario::{GpuChoice, PageScenario, Task};

fn llama8b() -> vram_web::load::LoadedModel {
    load_preset("meta-llama__Llama-3.1-8B").unwrap()
}

#[test]
fn llama_8b_preset_counts_8030261248_parameters() {
    assert_eq!(llama8b().params.total, 8_030_261_248);
}

#[test]
fn every_preset_loads() {
    for p in presets::PRESETS {
        let m = load_preset(p.id).unwrap_or_else(|e| panic!("{}: {e:?}", p.id));
        assert!(m.params.total > 0, "{}", p.id);
    }
}

#[test]
fn files_over_the_limit_are_refused_by_size_alone() {
    assert!(check_size("config.json", MAX_INPUT_BYTES).is_ok());
    assert_eq!(
        check_size("model.safetensors", MAX_INPUT_BYTES + 1),
        Err(LoadError::TooLarge {
            name: "model.safetensors".into(),
            size_bytes: MAX_INPUT_BYTES + 1
        })
    );
}

#[test]
fn malformed_text_reports_the_core_error_with_the_file_name() {
    let err = load_text(
        "{\"hidden_size\": ".into(),
        ModelSource::File("t.json".into()),
    )
    .unwrap_err();
    let LoadError::Config { name, error } = err else {
        panic!("expected a config error")
    };
    assert_eq!(name.as_deref(), Some("t.json"));
    assert!(
        error.to_string().starts_with("not valid JSON at line 1"),
        "{error}"
    );
}

#[test]
fn training_result_equals_the_core_estimate_and_does_not_fit_an_h100() {
    let m = llama8b();
    let page = PageScenario {
        task: Task::Train,
        ..PageScenario::default()
    };
    let results = page_results(&m.spec, &page);
    let train = results.train.unwrap().unwrap();
    let core = vram_core::train::estimate_training(
        &m.spec,
        &Scenario::default(),
        &vram_core::report::DeviceOverheads::default(),
    )
    .unwrap();
    assert_eq!(train.device_bytes, core.device_bytes);
    assert_eq!(train.peak_allocated_bytes, core.peak_allocated_bytes);
    assert_eq!(train.verdict, Verdict::DoesNotFit);
    assert_eq!(train.max_batch, None);
}

#[test]
fn custom_gpu_size_changes_the_verdict() {
    let m = llama8b();
    let page = PageScenario {
        task: Task::Serve,
        infer: vram_core::Scenario::inference(),
        gpu: GpuChoice::Custom(8 << 30),
        ..PageScenario::default()
    };
    let infer = page_results(&m.spec, &page).infer.unwrap().unwrap();
    assert_eq!(infer.verdict, Verdict::DoesNotFit);
}

fn text(n: usize) -> ChartText {
    ChartText {
        title: "Memory per phase".into(),
        x_label: "phase".into(),
        y_label: "GiB".into(),
        capacity: "H100 80 GB".into(),
        largest_fit: "largest batch".into(),
        series: (0..n).map(|i| format!("series-{i}")).collect(),
    }
}

#[test]
fn phase_bars_render_one_bar_per_component_and_phase_and_the_capacity_line() {
    let m = llama8b();
    let infer = page_results(
        &m.spec,
        &PageScenario {
            task: Task::Serve,
            infer: vram_core::Scenario::inference(),
            ..PageScenario::default()
        },
    )
    .infer
    .unwrap()
    .unwrap();
    let b = &infer.breakdown;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (800, 400)).into_drawing_area();
        draw_phase_bars(
            &root,
            b,
            infer.usable_bytes,
            (1u64 << 30) as f64,
            &text(b.rows.len()),
            &ChartTheme::LIGHT,
        )
        .unwrap();
    }
    assert!(svg.contains("Memory per phase"));
    for p in &b.phases {
        assert!(svg.contains(&format!("\n{p}\n")), "x label {p}");
    }
    for i in 0..b.rows.len() {
        assert!(svg.contains(&format!("series-{i}")), "legend series-{i}");
    }
    assert!(svg.contains("H100 80 GB"));
    // Bars: rectangles filled with the palette colours (one per component × phase, incl. empty ones).
    let bars = svg.matches("fill=\"#0072B2\"").count();
    assert!(bars >= b.phases.len(), "weights bars: {bars}");
}

#[test]
fn batch_sweep_marks_the_largest_fitting_batch() {
    let m = load_preset("HuggingFaceTB__SmolLM2-135M-Instruct").unwrap();
    let s = Scenario::default();
    let usable = 24 << 30;
    let r = compute::train_result(&m.spec, &s, usable).unwrap();
    let fit = r.max_batch.expect("a 135M model fits 24 GiB at batch 1");
    let sweep = compute::train_batch_sweep(&m.spec, &s, usable, Some(fit));
    let pts = &sweep.series[0].points;
    assert_eq!(pts[0].0, 1);
    assert!(
        pts.windows(2).all(|w| w[1].1 > w[0].1),
        "memory grows with batch"
    );
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (600, 360)).into_drawing_area();
        draw_sweep(
            &root,
            &sweep,
            (1u64 << 30) as f64,
            &text(1),
            &ChartTheme::DARK,
        )
        .unwrap();
    }
    assert!(
        svg.contains(&format!("largest batch = {fit}")),
        "marker legend"
    );
    assert!(
        svg.contains("#1B1E25") || svg.contains("#1b1e25"),
        "dark background"
    );
}

#[test]
fn a_model_without_attention_has_one_unnamed_sequence_curve() {
    let m = load_preset("state-spaces__mamba-130m-hf").unwrap();
    let s = Scenario::default();
    let sweep = compute::train_seq_sweep(&m.spec, &s, 80 << 30, None, ["eager", "sdpa"]);
    assert_eq!(sweep.series.len(), 1);
    assert_eq!(sweep.series[0].name, "");
    assert_eq!(sweep.primary, 0);
    // each point is the core's estimate at that sequence length
    let (x, bytes) = sweep.series[0].points[0];
    let at = Scenario {
        seq_len: x,
        ..s.clone()
    };
    let e = vram_core::train::estimate_training(
        &m.spec,
        &at,
        &vram_core::report::DeviceOverheads::default(),
    )
    .unwrap();
    assert_eq!(bytes, e.device_bytes);
}

#[test]
fn eager_grows_faster_than_sdpa_with_sequence_length() {
    let m = load_preset("HuggingFaceTB__SmolLM2-135M-Instruct").unwrap();
    let sweep = compute::train_seq_sweep(
        &m.spec,
        &Scenario::default(),
        80 << 30,
        None,
        ["eager", "sdpa"],
    );
    let eager = &sweep.series[0].points;
    let sdpa = &sweep.series[1].points;
    let (e_last, s_last) = (eager.last().unwrap().1, sdpa.last().unwrap().1);
    assert!(
        e_last > s_last,
        "eager {e_last} > sdpa {s_last} at the longest sequence"
    );
}
