//! The CPU matrix of every supported model_type (docs/measurements/types/, issue 13 item 3) against
//! the current estimate: each report is re-estimated from its config, overrides and scenario, and
//! must agree — weights, gradients, optimizer states and KV cache exact, the peak within 1 % — unless
//! it is one of the gaps listed below with its reason, which must still differ (a fixed gap is
//! removed from the list). A new model_type's report or a change of the estimator that breaks one
//! fails here.

use serde_json::Value;
use std::path::{Path, PathBuf};
use vram_core::report::DeviceOverheads;
use vram_core::train::{estimate_training_counting, Counting};
use vram_core::Scenario;

/// Cases that do not agree yet, with why (docs/measurements/types/README.md).
const KNOWN_GAPS: &[(&str, &str)] = &[];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn spec_of(r: &Value) -> Option<vram_core::ModelSpec> {
    let file = Path::new(r["config"]["path"].as_str()?).file_name()?;
    let text = std::fs::read_to_string(root().join("crates/vram_core/presets").join(file)).ok()?;
    let mut v: Value = serde_json::from_str(&text).ok()?;
    for (k, val) in r["config"]["overrides"].as_object()? {
        let parts: Vec<&str> = k.split('.').collect();
        let mut cur = &mut v;
        for p in &parts[..parts.len() - 1] {
            cur = cur
                .as_object_mut()?
                .entry(p.to_string())
                .or_insert(Value::Object(Default::default()));
        }
        cur.as_object_mut()?
            .insert(parts[parts.len() - 1].to_string(), val.clone());
    }
    vram_core::resolve_value(&v, None).ok()
}

/// One report re-estimated with the current core.
struct Row {
    /// `(component, estimated, measured)`.
    parts: Vec<(&'static str, u64, u64)>,
    peak_estimated: u64,
    peak_measured: u64,
}

impl Row {
    fn peak_error_percent(&self) -> f64 {
        (self.peak_estimated as f64 / self.peak_measured.max(1) as f64 - 1.0) * 100.0
    }

    /// What differs: a component off by more than 64 B (the optimizer's `step` counters are not
    /// states, docs/measurements/README.md) or the peak by more than 1 %.
    fn problems(&self) -> Vec<String> {
        let mut bad: Vec<String> = self
            .parts
            .iter()
            .filter(|(_, est, meas)| est.abs_diff(*meas) > 64)
            .map(|(name, est, meas)| format!("{name} {est} vs {meas}"))
            .collect();
        let err = self.peak_error_percent();
        if err.abs() > 1.0 {
            bad.push(format!(
                "peak {} vs {} ({err:+.2} %)",
                self.peak_estimated, self.peak_measured
            ));
        }
        bad
    }
}

/// The current estimate of the report's case, or why there is none.
fn estimate(r: &Value) -> Result<Row, String> {
    let spec = spec_of(r).ok_or("config not found or not resolved")?;
    let mut scenario: Scenario =
        serde_json::from_value(r["scenario"].clone()).map_err(|e| e.to_string())?;
    // the probe builds unquantized weights whatever the config's quantization_config says
    if spec.quantization_config.is_some() && scenario.weights.is_none() {
        scenario.weights = Some(scenario.dtype.name().to_string());
    }
    let m = &r["measured"];
    let g = |k: &str| m[k].as_u64().unwrap_or(0);
    let (parts, peak_estimated) = if r["scenario"]["mode"] == "train" {
        let e = estimate_training_counting(
            &spec,
            &scenario,
            &DeviceOverheads::default(),
            Counting::CpuExact,
        )
        .map_err(|e| e.to_string())?;
        (
            vec![
                ("weights", e.weights_bytes, g("weights_bytes")),
                ("gradients", e.gradients_bytes, g("gradients_bytes")),
                ("optimizer", e.optimizer_bytes, g("optimizer_bytes")),
            ],
            e.peak_allocated_bytes,
        )
    } else {
        let e = vram_core::infer::estimate_inference(
            &spec,
            &scenario,
            &vram_core::Device::Cpu.overheads(),
        )
        .map_err(|e| e.to_string())?;
        (
            vec![
                ("weights", e.weights_bytes, g("weights_bytes")),
                // the probe measures the cache right after prefill
                (
                    "kv_cache",
                    e.kv_cache_after_prefill_bytes,
                    g("kv_cache_bytes"),
                ),
            ],
            e.peak_allocated_bytes,
        )
    };
    Ok(Row {
        parts,
        peak_estimated,
        peak_measured: g("peak_allocated_bytes"),
    })
}

const AGREEMENT_HEAD: &str = "# Every model_type on the CPU: estimate against measurement

The matrix of `scripts/measure-types.txt` (issue 13, item 3): one training and one inference case per
supported model_type, at reduced depth (2 layers; the largest MoE models also fewer experts), eager
attention, measured with `vram measure --device cpu` (exact live-tensor bytes; torch 2.15,
transformers 5.24, peft 0.21) and regenerated by
`CASES=scripts/measure-types.txt OUT_DIR=docs/measurements/types VRAM_CONFIGS=crates/vram_core/presets scripts/measure-matrix.sh`
(per-case phase tables: README.md beside this file).

The table below is the current core's estimate of every report, written by
`VRAM_BLESS=1 cargo test -p vram_cli --test model_type_matrix` and checked by the same test without
`VRAM_BLESS`: a case agrees when weights, gradients, optimizer states and the KV cache after prefill
are exact (64 B) and the peak is within 1 %; a case that differs must be a listed gap.

Not measured:
- `minicpm`, `internlm2`, `chatglm`, `baichuan`, `deepseek` (V1 MoE): their checkpoints need the
  model's own code (`trust_remote_code`), which the offline probe does not fetch.
- Training of `nemotron_h` and `jamba`: hybrid training is not modelled (the estimate refuses).
";

fn pct(est: u64, meas: u64) -> f64 {
    if est == meas {
        0.0
    } else {
        (est as f64 / meas.max(1) as f64 - 1.0) * 100.0
    }
}

#[test]
fn every_model_type_agrees_with_its_cpu_measurement_or_is_a_listed_gap() {
    let dir = root().join("docs/measurements/types");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("docs/measurements/types")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json") && !p.ends_with("matrix.json"))
        .collect();
    names.sort();
    assert!(
        names.len() >= 40,
        "the matrix holds {} reports",
        names.len()
    );
    let mut failures = Vec::new();
    let mut types = std::collections::BTreeSet::new();
    let mut table = String::from(
        "| case | model_type | components (estimate vs measured) | peak | |\n|---|---|---|---:|---|\n",
    );
    let (mut agree, mut total) = (0, 0);
    for path in &names {
        let r: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let id = path.file_stem().unwrap().to_string_lossy().to_string();
        let model_type = r["model"]["model_type"].as_str().unwrap_or("?").to_string();
        total += 1;
        if r["outcome"] != "ok" {
            table.push_str(&format!(
                "| {id} | {model_type} | | | not measured: {} |\n",
                r["outcome"].as_str().unwrap_or("?")
            ));
            continue;
        }
        types.insert(model_type.clone());
        let gap = KNOWN_GAPS.iter().find(|(k, _)| id.starts_with(k));
        let row = estimate(&r);
        let (status, problems) = match &row {
            Ok(row) => {
                println!(
                    "{id:<56} peak {:>13} vs {:>13} ({:+.3} %)",
                    row.peak_estimated,
                    row.peak_measured,
                    row.peak_error_percent()
                );
                let p = row.problems();
                (
                    if p.is_empty() {
                        "agrees"
                    } else {
                        "**differs**"
                    },
                    p,
                )
            }
            Err(why) => ("**not modelled**", vec![why.clone()]),
        };
        match (problems.is_empty(), gap) {
            (true, None) | (false, Some(_)) => {}
            (false, None) => failures.push(format!("{id}: {}", problems.join("; "))),
            (true, Some(_)) => failures.push(format!("{id} agrees now: take it off KNOWN_GAPS")),
        }
        if problems.is_empty() {
            agree += 1;
        }
        let status = match gap {
            Some((_, why)) if !problems.is_empty() => format!("{status}: {why}"),
            _ => status.to_string(),
        };
        match row {
            Ok(row) => {
                let comps: Vec<String> = row
                    .parts
                    .iter()
                    .map(|(n, e, m)| format!("{n} {:+.2} %", pct(*e, *m)))
                    .collect();
                table.push_str(&format!(
                    "| {id} | {model_type} | {} | {:+.2} % | {status} |\n",
                    comps.join(", "),
                    row.peak_error_percent()
                ));
            }
            Err(_) => table.push_str(&format!("| {id} | {model_type} | | | {status} |\n")),
        }
    }
    let doc = format!(
        "{AGREEMENT_HEAD}\n{} model types measured, {total} cases: {agree} agree (components exact, peak within 1 %), {} differ or are not modelled.\n\n{table}",
        types.len(),
        total - agree
    );
    let file = dir.join("AGREEMENT.md");
    if std::env::var_os("VRAM_BLESS").is_some() {
        std::fs::write(&file, &doc).unwrap();
    } else {
        let on_disk = std::fs::read_to_string(&file).unwrap_or_default();
        if on_disk != doc {
            failures.push(
                "docs/measurements/types/AGREEMENT.md is not the current estimate: regenerate it \
                 with VRAM_BLESS=1 cargo test -p vram_cli --test model_type_matrix"
                    .into(),
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(types.len() >= 25, "model types measured: {types:?}");
}
