//! Regenerates docs/accuracy.md: the training estimate against every training case in
//! docs/measurements/ (per phase, per component) and against the fully specified published rows of
//! `../shared/research/measured.md` (transcribed into published.rs).
//!
//! Run from the repository root: `cargo run -p vram_cli --example accuracy`.
//! The inference section (measured inference cases and the published vLLM / HF inference rows) is
//! rendered by `infer.rs`.

mod infer;
mod published;
#[path = "../../../vram_core/tests/vllm_logs/mod.rs"]
mod vllm_logs;

use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use vram_core::report::DeviceOverheads;
use vram_core::train::{estimate_training_counting, Counting, TrainEstimate};
use vram_core::Scenario;

fn err_pct(est: u64, meas: u64) -> f64 {
    if meas == 0 {
        return 0.0;
    }
    (est as f64 - meas as f64) / meas as f64 * 100.0
}

fn mib(b: u64) -> String {
    format!("{:.1}", b as f64 / (1u64 << 20) as f64)
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn read_reports(dir: &Path) -> Vec<(PathBuf, Value)> {
    let mut out = Vec::new();
    for sub in [dir.to_path_buf(), dir.join("cuda")] {
        let Ok(rd) = std::fs::read_dir(&sub) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        paths.sort();
        for p in paths {
            if let Ok(text) = std::fs::read_to_string(&p) {
                if let Ok(v) = serde_json::from_str::<Value>(&text) {
                    out.push((p, v));
                }
            }
        }
    }
    out
}

fn set_dotted(v: &mut Value, key: &str, val: Value) {
    let mut cur = v;
    let parts: Vec<&str> = key.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            if let Some(obj) = cur.as_object_mut() {
                obj.insert((*part).to_string(), val);
            }
            return;
        }
        let Some(obj) = cur.as_object_mut() else {
            return;
        };
        cur = obj
            .entry((*part).to_string())
            .or_insert_with(|| Value::Object(Default::default()));
    }
}

/// The config a report measured: its path (relative to the repo or the shared configs), with the
/// report's `--set` overrides applied.
fn report_spec(r: &Value) -> Option<vram_core::ModelSpec> {
    let path = r["config"]["path"].as_str()?;
    let candidates = [
        PathBuf::from(path),
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../vram_core/presets")
            .join(Path::new(path).file_name()?),
    ];
    let text = candidates
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok())?;
    let mut v: Value = serde_json::from_str(&text).ok()?;
    if let Some(o) = r["config"]["overrides"].as_object() {
        for (k, val) in o {
            set_dotted(&mut v, k, val.clone());
        }
    }
    vram_core::resolve_value(&v, Some(r["config"]["name"].as_str().unwrap_or("model"))).ok()
}

struct Errors {
    peak: Vec<f64>,
}

fn measurement_section(reports: &[(PathBuf, Value)], errs: &mut Errors) -> String {
    let mut s = String::new();
    let train: Vec<&(PathBuf, Value)> = reports
        .iter()
        .filter(|(_, r)| r["scenario"]["mode"].as_str().unwrap_or("train") == "train")
        .filter(|(_, r)| r["outcome"].as_str() == Some("ok"))
        .collect();
    writeln!(s, "## Training cases in docs/measurements\n").ok();
    if train.is_empty() {
        writeln!(
            s,
            "No training report was present in docs/measurements/ when this file was generated \
             (the `vram measure` matrix had not been committed yet). Re-run the generator once it is.\n"
        )
        .ok();
        return s;
    }
    writeln!(
        s,
        "Units MiB (2^20 B). err = (estimate − measured) / measured.\n"
    )
    .ok();
    writeln!(
        s,
        "| case | counting | weights est/meas (Δ B) | grads est/meas (Δ B) | optimizer est/meas (Δ B) | peak est | peak meas | err | peak phase est/meas |\n|---|---|---|---|---|---|---|---|---|"
    )
    .ok();
    let mut phase_rows = String::new();
    for (path, r) in &train {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("?");
        let Some(spec) = report_spec(r) else {
            writeln!(s, "| {name} | config not found | | | | | | |").ok();
            continue;
        };
        let Ok(scenario) = serde_json::from_value::<Scenario>(r["scenario"].clone()) else {
            writeln!(s, "| {name} | scenario unreadable | | | | | | |").ok();
            continue;
        };
        // CPU reports are compared with the CPU allocation semantics (dtype-sized dropout masks,
        // SDPA-with-dropout on the math path: vram_core::train::Counting); CUDA ones with CUDA's.
        let counting = if r["measured"]["counting"].as_str() == Some("cpu-exact") {
            Counting::CpuExact
        } else {
            Counting::Cuda
        };
        let e: TrainEstimate = match estimate_training_counting(
            &spec,
            &scenario,
            &DeviceOverheads::default(),
            counting,
        ) {
            Ok(e) => e,
            Err(err) => {
                writeln!(s, "| {name} | not estimated: {err} | | | | | | |").ok();
                continue;
            }
        };
        let m = &r["measured"];
        let g = |k: &str| m[k].as_u64().unwrap_or(0);
        let peak = g("peak_allocated_bytes");
        let pe = err_pct(e.peak_allocated_bytes, peak);
        errs.peak.push(pe);
        let delta = |est: u64, meas: u64| est as i128 - meas as i128;
        writeln!(
            s,
            "| {name} | {} | {}/{} ({:+}) | {}/{} ({:+}) | {}/{} ({:+}) | {} | {} | {:+.2} % | {}/{} |",
            m["counting"].as_str().unwrap_or("?"),
            mib(e.weights_bytes),
            mib(g("weights_bytes")),
            delta(e.weights_bytes, g("weights_bytes")),
            mib(e.gradients_bytes),
            mib(g("gradients_bytes")),
            delta(e.gradients_bytes, g("gradients_bytes")),
            mib(e.optimizer_bytes),
            mib(g("optimizer_bytes")),
            delta(e.optimizer_bytes, g("optimizer_bytes")),
            mib(e.peak_allocated_bytes),
            mib(peak),
            pe,
            e.peak_phase,
            m["peak_phase"].as_str().unwrap_or("?")
        )
        .ok();
        writeln!(phase_rows, "\n**{name}**\n\n| phase | alloc est | alloc meas | err | peak est | peak meas | err |\n|---|---|---|---|---|---|---|").ok();
        for p in m["phases"].as_array().into_iter().flatten() {
            let pname = p["name"].as_str().unwrap_or("?");
            let Some(ep) = e.phases.iter().find(|x| x.name == pname) else {
                continue;
            };
            let (ma, mp) = (
                p["allocated_bytes"].as_u64().unwrap_or(0),
                p["peak_allocated_bytes"].as_u64().unwrap_or(0),
            );
            writeln!(
                phase_rows,
                "| {pname} | {} | {} | {:+.2} % | {} | {} | {:+.2} % |",
                mib(ep.allocated_bytes),
                mib(ma),
                err_pct(ep.allocated_bytes, ma),
                mib(ep.peak_allocated_bytes),
                mib(mp),
                err_pct(ep.peak_allocated_bytes, mp)
            )
            .ok();
        }
    }
    s.push_str("\n### Per phase\n");
    s.push_str(&phase_rows);
    s
}

fn main() -> anyhow::Result<()> {
    let root = std::env::current_dir()?;
    // `--dir DIR --out FILE` compare another set of reports (calibration runs) without touching
    // docs/accuracy.md.
    let args: Vec<String> = std::env::args().collect();
    let arg = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .map(PathBuf::from)
    };
    let dir = arg("--dir").unwrap_or_else(|| root.join("docs/measurements"));
    let out_path = arg("--out").unwrap_or_else(|| root.join("docs/accuracy.md"));
    let reports = read_reports(&dir);
    let mut errs = Errors { peak: Vec::new() };
    let measured = measurement_section(&reports, &mut errs);
    let (published, mut pub_errs) = published::section();
    let mut out = String::new();
    out.push_str("# Accuracy: estimates against measurements\n\n");
    out.push_str(
        "Generated by `cargo run -p vram_cli --example accuracy` (crates/vram_cli/examples/accuracy/); \
         do not edit by hand. Formulas: docs/formulas/training.md.\n\n",
    );
    let mut all = errs.peak.iter().map(|x| x.abs()).collect::<Vec<_>>();
    let worst = all.iter().cloned().fold(0.0f64, f64::max);
    let med = median(&mut all);
    let mut p_abs: Vec<f64> = pub_errs.iter().map(|x| x.abs()).collect();
    let p_worst = p_abs.iter().cloned().fold(0.0f64, f64::max);
    let p_med = median(&mut p_abs);
    pub_errs.clear();
    writeln!(out, "## Summary\n").ok();
    writeln!(
        out,
        "- Every supported model_type measured on the CPU in training and inference: docs/measurements/types/AGREEMENT.md (checked by crates/vram_cli/tests/model_type_matrix.rs)."
    )
    .ok();
    writeln!(
        out,
        "- Training measurements: {} compared; peak allocated median |error| {}, worst {} (target ≤ 3 % / ≤ 10 %).",
        errs.peak.len(),
        if errs.peak.is_empty() { "n/a".into() } else { format!("{med:.2} %") },
        if errs.peak.is_empty() { "n/a".into() } else { format!("{worst:.2} %") }
    )
    .ok();
    writeln!(
        out,
        "- Published rows (measured.md): {} compared; median |error| {p_med:.1} %, worst {p_worst:.1} %. \
         These were measured with other frameworks, GPUs and versions; each row says what it measured.\n",
        p_abs.len()
    )
    .ok();
    out.push_str(
        "Notes on the training comparison:\n\n\
         - CPU-exact reports are compared with `vram_core::train::Counting::CpuExact`, which differs \
         from the default (CUDA) estimate only where PyTorch's CPU kernels allocate differently: \
         dropout noise in the input's dtype instead of a 1-byte mask, and SDPA with dropout > 0 \
         running the math kernel (gpt2 cases). Everything else is the same model.\n\
         - Weights, gradients and optimizer states match to the byte in every case (Δ B = 0).\n\
         - Residuals below 0.3 % per phase: module buffers (rotary `inv_freq`, 256 B) are not in the \
         phases; a peft load transient (229,376 B on TinyLlama r = 64) is not modelled; the frozen \
         layer 0 under bf16 LoRA saves about one b·s·H·2 tensor less than modelled.\n\
         - What CPU counting cannot check: the CUDA caching allocator (reserved), cuBLAS workspace and \
         CUDA context, kernel-internal scratch of the CUDA attention backward, and SDPA's cuDNN backend \
         (whose output layout would add a b·s·H copy per layer). Those are compared only against the \
         published rows below, which were measured with other frameworks and versions.\n\n",
    );
    out.push_str(&measured);
    out.push('\n');
    out.push_str(&published);
    out.push('\n');
    // Per-rank rows of parallel layouts (published multi-GPU runs, estimated with `vram estimate`):
    // kept in their own file, as the llama.cpp section is.
    if let Ok(parallel) = std::fs::read_to_string(root.join("docs/accuracy-parallel.md")) {
        out.push_str(&parallel);
        out.push('\n');
    }
    out.push_str(&infer::section(
        &reports.iter().map(|(_, v)| v.clone()).collect::<Vec<_>>(),
    ));
    // The llama.cpp section compares printed start-up buffers (not reports): kept in its own file,
    // written from `cargo run -p vram_core --example llama_accuracy`.
    if let Ok(llama) = std::fs::read_to_string(root.join("docs/accuracy-llama-cpp.md")) {
        out.push('\n');
        out.push_str(&llama);
    }
    std::fs::write(&out_path, out)?;
    eprintln!("wrote {}", out_path.display());
    Ok(())
}
