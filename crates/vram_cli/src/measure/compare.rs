//! Estimate vs measurement, per component and per phase, for the report's `estimate` key.
//!
//! The training and inference models in `vram_core` describe a step as `vram_core::report::Phase`s
//! with the same names the probe uses (`load`, `forward`, ..., `optimizer_2`; `load`, `prefill`,
//! `decode`) and components as `vram_core::report::Term`s keyed `weights`, `gradients`, `optimizer`,
//! `kv_cache`. [`compare`] lines both up with a [`Measured`] so one report file shows the estimate,
//! the measurement and the error.

use super::report::Measured;
use serde::{Deserialize, Serialize};
use vram_core::report::{Phase, Term};

/// The `estimate` key of a report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EstimateComparison {
    /// What produced the estimate (e.g. `vram_core 0.1.0 training model`).
    pub source: String,
    /// Components the measurement identifies (weights, gradients, optimizer, kv_cache).
    pub components: Vec<Diff>,
    /// Phases present in both, in the measurement's order: peak allocated bytes.
    pub phases: Vec<PhaseDiff>,
    /// The headline: estimated vs measured peak allocated bytes over all phases.
    pub peak_allocated: Diff,
}

/// One estimated vs measured quantity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Diff {
    /// Component key or phase name.
    pub key: String,
    /// Estimated bytes.
    pub estimated_bytes: u64,
    /// Measured bytes.
    pub measured_bytes: u64,
    /// estimated − measured, bytes.
    pub error_bytes: i64,
    /// (estimated − measured) / measured × 100; null when the measurement is 0.
    pub error_percent: Option<f64>,
}

impl Diff {
    /// Builds the difference; percentages are rounded to 0.01 %.
    pub fn new(key: &str, estimated_bytes: u64, measured_bytes: u64) -> Self {
        let error = i128::from(estimated_bytes) - i128::from(measured_bytes);
        let error_bytes =
            i64::try_from(error).unwrap_or(if error < 0 { i64::MIN } else { i64::MAX });
        let error_percent = (measured_bytes > 0)
            .then(|| (error as f64 / measured_bytes as f64 * 10_000.0).round() / 100.0);
        Diff {
            key: key.to_string(),
            estimated_bytes,
            measured_bytes,
            error_bytes,
            error_percent,
        }
    }
}

/// Per-phase difference of the peak (and of the bytes live at the end of the phase).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PhaseDiff {
    /// Phase name.
    pub name: String,
    /// Peak allocated bytes during the phase.
    pub peak_allocated: Diff,
    /// Allocated bytes at the end of the phase.
    pub allocated: Diff,
}

/// Measured value of a component key, if the measurement has it.
fn measured_component(m: &Measured, key: &str) -> Option<u64> {
    match key {
        "weights" => m.weights_bytes,
        "gradients" => m.gradients_bytes,
        "optimizer" | "optimizer_states" => m.optimizer_bytes,
        "kv_cache" => m.kv_cache_bytes,
        _ => None,
    }
}

/// Lines an estimate up with a measurement. Phases or components only one side has are skipped.
pub fn compare(source: &str, terms: &[Term], phases: &[Phase], m: &Measured) -> EstimateComparison {
    // The probe measures the cache right after prefill: compare with the estimate's cache at that
    // moment (an encoder–decoder's holds one decoder token, not the scenario's whole context).
    let kv_after_prefill = phases
        .iter()
        .find(|p| p.name == "prefill")
        .and_then(|p| p.components.iter().find(|(k, _)| k == "kv_cache"))
        .map(|(_, b)| *b);
    let components = terms
        .iter()
        .filter_map(|t| {
            let est = match t.key.as_str() {
                "kv_cache" => kv_after_prefill.unwrap_or(t.bytes),
                _ => t.bytes,
            };
            measured_component(m, &t.key).map(|mb| Diff::new(&t.key, est, mb))
        })
        .collect();
    let phase_diffs = m
        .phases
        .iter()
        .filter_map(|mp| {
            phases
                .iter()
                .find(|e| e.name == mp.name)
                .map(|e| PhaseDiff {
                    name: mp.name.clone(),
                    peak_allocated: Diff::new(
                        &mp.name,
                        e.peak_allocated_bytes,
                        mp.peak_allocated_bytes,
                    ),
                    allocated: Diff::new(&mp.name, e.allocated_bytes, mp.allocated_bytes),
                })
        })
        .collect();
    // The same rule as the measured headline (`Measured::fill_peaks`): the step's phases, not `load`,
    // whose peak holds random-initialisation temporaries a checkpoint load would not have.
    let step_peak = phases
        .iter()
        .filter(|p| p.name != "load")
        .map(|p| p.peak_allocated_bytes)
        .max();
    let est_peak = step_peak
        .or_else(|| phases.iter().map(|p| p.peak_allocated_bytes).max())
        .unwrap_or(0);
    EstimateComparison {
        source: source.to_string(),
        components,
        phases: phase_diffs,
        peak_allocated: Diff::new("peak_allocated", est_peak, m.peak_allocated_bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::report::MeasuredPhase;

    fn measured() -> Measured {
        let mut m: Measured = serde_json::from_str(
            r#"{"counting":"cpu-exact","weights_bytes":808192,"buffers_bytes":64,"total_params":202048,
                "trainable_params":202048,"trainable_bytes":808192,"gradients_bytes":808192,
                "optimizer_bytes":1616384}"#,
        )
        .unwrap();
        m.phases = ["load", "forward"]
            .iter()
            .zip([(808_256u64, 808_256u64), (1_026_960, 1_090_960)])
            .map(|(n, (a, p))| MeasuredPhase {
                name: (*n).into(),
                allocated_bytes: a,
                peak_allocated_bytes: p,
                reserved_bytes: None,
                peak_reserved_bytes: None,
                device_bytes: None,
                device_used_bytes: None,
                wall_seconds: 0.0,
            })
            .collect();
        m.fill_peaks();
        m
    }

    fn term(key: &str, bytes: u64) -> Term {
        Term {
            key: key.into(),
            bytes,
            formula: String::new(),
            source: String::new(),
        }
    }

    #[test]
    fn components_and_phases_line_up_by_name_with_signed_errors() {
        let phases = vec![
            Phase {
                name: "forward".into(),
                allocated_bytes: 1_000_000,
                peak_allocated_bytes: 1_100_000,
                components: vec![],
            },
            Phase {
                name: "not-measured".into(),
                allocated_bytes: 1,
                peak_allocated_bytes: 1,
                components: vec![],
            },
        ];
        let terms = vec![
            term("weights", 808_192),
            term("activations", 5),
            term("optimizer", 1_616_000),
        ];
        let c = compare("test", &terms, &phases, &measured());
        assert_eq!(c.components.len(), 2);
        assert_eq!(c.components[0].error_bytes, 0);
        assert_eq!(c.components[0].error_percent, Some(0.0));
        assert_eq!(c.components[1].error_bytes, -384);
        assert_eq!(c.phases.len(), 1);
        assert_eq!(
            c.phases[0].peak_allocated.error_bytes,
            1_100_000 - 1_090_960
        );
        assert_eq!(c.phases[0].allocated.error_bytes, 1_000_000 - 1_026_960);
        assert_eq!(c.peak_allocated.measured_bytes, 1_090_960);
        assert_eq!(c.peak_allocated.error_percent, Some(0.83));
    }

    #[test]
    fn zero_measurement_has_no_percentage() {
        assert_eq!(Diff::new("x", 5, 0).error_percent, None);
    }
}
