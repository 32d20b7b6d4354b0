//! `vram measure` reports dropped on the page: the report names its config (a bundled preset, or the
//! model already on screen) with `--set` overrides and carries the scenario it ran; the page loads both
//! and shows the measured figures beside the core's estimate. Fields follow docs/measure-report.md.

use crate::load::{LoadError, LoadedModel, ModelSource};
use serde::Deserialize;
use std::collections::BTreeMap;
use vram_core::json::parse_lenient;
use vram_core::{presets, resolve_value, ParamCounts, Scenario};

/// The report kind written by `vram measure --json`.
pub const REPORT_KIND: &str = "vram-measure-report";

/// One measured phase.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct MeasuredPhase {
    /// Phase name (`load`, `forward`, ..., `prefill`, `decode`).
    pub name: String,
    /// Tensor bytes live at the phase end.
    pub allocated_bytes: u64,
    /// Highest tensor bytes during the phase.
    pub peak_allocated_bytes: u64,
}

/// The `measured` object (the figures the page compares).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct Measured {
    /// `cpu-exact` or `cuda-allocator`.
    pub counting: String,
    /// Parameter and buffer bytes after load.
    #[serde(default)]
    pub weights_bytes: Option<u64>,
    /// Gradient bytes after backward.
    #[serde(default)]
    pub gradients_bytes: Option<u64>,
    /// Optimizer state bytes.
    #[serde(default)]
    pub optimizer_bytes: Option<u64>,
    /// KV cache bytes after prefill.
    #[serde(default)]
    pub kv_cache_bytes: Option<u64>,
    /// Highest peak over the phases.
    #[serde(default)]
    pub peak_allocated_bytes: Option<u64>,
    /// Per phase.
    #[serde(default)]
    pub phases: Vec<MeasuredPhase>,
}

#[derive(Deserialize)]
struct ConfigRef {
    name: String,
    #[serde(default)]
    path: String,
    #[serde(default)]
    overrides: BTreeMap<String, serde_json::Value>,
}

#[derive(Deserialize)]
struct Report {
    kind: String,
    scenario: Scenario,
    config: ConfigRef,
    measured: Measured,
}

/// A loaded report: the model it measured, its scenario and the measurement.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedReport {
    /// The model with the report's overrides applied.
    pub model: LoadedModel,
    /// The scenario that was measured.
    pub scenario: Scenario,
    /// The measurement.
    pub measured: Measured,
    /// Device (`cpu` counting is exact tensor bytes).
    pub counting: String,
}

/// Whether `text` looks like a `vram measure` report (checked before parsing it as a config).
pub fn looks_like_report(text: &str) -> bool {
    text.contains(REPORT_KIND)
}

fn set_dotted(root: &mut serde_json::Value, key: &str, value: serde_json::Value) {
    let mut cur = root;
    let parts: Vec<&str> = key.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        let Some(obj) = cur.as_object_mut() else {
            return;
        };
        if i + 1 == parts.len() {
            obj.insert(part.to_string(), value);
            return;
        }
        cur = obj
            .entry(part.to_string())
            .or_insert_with(|| serde_json::Value::Object(Default::default()));
    }
}

/// Loads a report; its config is the bundled preset of the same name (or file name), else the
/// model on screen when it has that name.
pub fn load_report(
    text: &str,
    file_name: &str,
    current: Option<&LoadedModel>,
) -> Result<LoadedReport, LoadError> {
    let report: Report = serde_json::from_str(text).map_err(|e| LoadError::Config {
        name: Some(file_name.to_string()),
        error: vram_core::ConfigError::Json {
            line: e.line() as u64,
            column: e.column() as u64,
            message: e.to_string(),
        },
    })?;
    if report.kind != REPORT_KIND {
        return Err(LoadError::ReportConfigMissing {
            name: report.config.name,
        });
    }
    let stem = report
        .config
        .path
        .rsplit('/')
        .next()
        .unwrap_or("")
        .trim_end_matches(".json")
        .to_string();
    let (base_text, source) = match presets::PRESETS
        .iter()
        .find(|p| p.id == report.config.name || p.id == stem)
    {
        Some(p) => (p.json.to_string(), ModelSource::Preset(p.id)),
        None => match current.filter(|m| m.spec.name == report.config.name) {
            Some(m) => (m.text.clone(), m.source.clone()),
            None => {
                return Err(LoadError::ReportConfigMissing {
                    name: report.config.name,
                })
            }
        },
    };
    let mut value =
        parse_lenient(&base_text).map_err(|error| LoadError::Config { name: None, error })?;
    for (k, v) in &report.config.overrides {
        set_dotted(&mut value, k, v.clone());
    }
    let spec = resolve_value(&value, Some(&report.config.name))
        .map_err(|error| LoadError::Config { name: None, error })?;
    let params = ParamCounts::of(&spec);
    let text = if report.config.overrides.is_empty() {
        base_text
    } else {
        value.to_string()
    };
    let source = if report.config.overrides.is_empty() {
        source
    } else {
        ModelSource::File(file_name.to_string())
    };
    Ok(LoadedReport {
        model: LoadedModel {
            source,
            text,
            spec,
            params,
        },
        scenario: report.scenario,
        counting: report.measured.counting.clone(),
        measured: report.measured,
    })
}
