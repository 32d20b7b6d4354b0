//! The `vram measure` report: a versioned JSON document (docs/measure-report.md documents every key).
//!
//! The probe's output (`ProbeOutput`) is deserialised into typed structs, checked, and wrapped with
//! the scenario, the config's identity and the tool version. Keys are a contract with the page and
//! the calibration scripts: add keys, never rename them; bump [`REPORT_SCHEMA_VERSION`] only when a
//! key's meaning changes.

use super::compare::EstimateComparison;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use vram_core::Scenario;

/// Version of the report document.
pub const REPORT_SCHEMA_VERSION: u32 = 1;

/// Value of the report's `kind` key, so a loader can tell a measurement from an estimate.
pub const REPORT_KIND: &str = "vram-measure-report";

/// The probe protocol version this binary understands (`PROBE_VERSION` in probe/probe.py).
pub const PROBE_VERSION: u32 = 1;

/// `kind` of a distributed measurement document.
pub const RANKS_REPORT_KIND: &str = "vram-measure-ranks";

/// Every rank of a `vram measure --nproc N` run (docs/measure-report.md §Ranks).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RanksReport {
    /// Same as [`MeasureReport::schema_version`].
    pub schema_version: u32,
    /// Always [`RANKS_REPORT_KIND`].
    pub kind: String,
    /// Ranks launched.
    pub nproc: u64,
    /// One report per rank, rank 0 first.
    pub ranks: Vec<MeasureReport>,
}

/// The whole `vram measure --json` document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeasureReport {
    /// [`REPORT_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// [`REPORT_KIND`].
    pub kind: String,
    /// Which binary and probe wrote it.
    pub tool: ToolInfo,
    /// `ok`, or `does-not-fit` (out of memory in `failure.phase`).
    pub outcome: Outcome,
    /// The scenario as `vram_core` resolved it from the flags.
    pub scenario: Scenario,
    /// The model config measured.
    pub config: ConfigInfo,
    /// The device the step ran on.
    pub device: DeviceInfo,
    /// Library versions.
    pub environment: Environment,
    /// The model as built (null only when it did not fit while loading).
    pub model: Option<ModelInfo>,
    /// The measurement.
    pub measured: Measured,
    /// Present when `outcome` is `does-not-fit`.
    pub failure: Option<Failure>,
    /// The estimator's figures for the same scenario and their difference from the measurement,
    /// when `vram_core` covers the scenario (filled by the caller through `compare::compare`).
    pub estimate: Option<EstimateComparison>,
    /// Assumptions and adjustments the probe made (ignored config keys, LoRA targets chosen, ...).
    pub notes: Vec<String>,
    /// Wall time of the probe, seconds (information only).
    pub wall_seconds: f64,
}

/// `tool` key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolInfo {
    /// Always `vram`.
    pub name: String,
    /// The binary's version (Cargo package version).
    pub version: String,
    /// The embedded probe's protocol version.
    pub probe_version: u32,
}

/// Whether the step fitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Every phase ran.
    Ok,
    /// An allocation failed (CUDA OOM or the CPU allocator refused).
    DoesNotFit,
}

/// `config` key: which config was measured, and how it was changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigInfo {
    /// Model name (vram_core's name for the config, else the file name).
    pub name: String,
    /// The path given on the command line.
    pub path: String,
    /// SHA-256 of the config file's bytes (lower-case hex).
    pub sha256: String,
    /// `--set KEY=VALUE` overrides applied before measuring (JSON values by dotted key).
    pub overrides: BTreeMap<String, serde_json::Value>,
    /// SHA-256 of the effective config text given to the probe (equals `sha256` without overrides).
    pub effective_sha256: String,
}

/// `device` key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// `cpu` or `cuda`.
    pub kind: String,
    /// CUDA device index (null on CPU).
    pub index: Option<u32>,
    /// CPU model name or GPU name.
    pub name: String,
    /// GPU memory as CUDA reports it (`total_memory`); null on CPU.
    pub total_bytes: Option<u64>,
    /// NVIDIA driver version; null on CPU or when neither NVML nor nvidia-smi answers.
    pub driver: Option<String>,
}

/// `environment` key (versions as the Python packages report them; null when not installed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    /// Python version.
    pub python: String,
    /// The interpreter that ran the probe.
    pub python_executable: String,
    /// `platform.platform()`.
    pub platform: String,
    /// `torch.__version__`.
    pub torch: String,
    /// `transformers.__version__`.
    pub transformers: Option<String>,
    /// peft version.
    pub peft: Option<String>,
    /// accelerate version.
    pub accelerate: Option<String>,
    /// bitsandbytes version.
    pub bitsandbytes: Option<String>,
    /// CUDA runtime torch was built with (`torch.version.cuda`).
    pub cuda_runtime: Option<String>,
    /// `torch.get_num_threads()`.
    pub torch_threads: u32,
}

/// `model` key: what the probe built.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// The transformers (or peft) class.
    pub class: String,
    /// `model_type` of the config.
    pub model_type: String,
    /// `causal-lm`, `seq2seq-lm`, `masked-lm`, `sequence-classification` (an encoder trained) or
    /// `encoder` (an encoder run as a feature extractor).
    pub head: String,
    /// `config._attn_implementation` after loading.
    pub attn_implementation: Option<String>,
    /// Parameter count per torch dtype (`float32`, `bfloat16`, ...).
    pub param_dtypes: BTreeMap<String, u64>,
    /// Whether HF gradient checkpointing is on.
    pub gradient_checkpointing: bool,
}

/// One phase as measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeasuredPhase {
    /// `load`, `forward`, `backward`, `optimizer`, `forward_2`, `backward_2`, `optimizer_2` (training);
    /// `load`, `prefill`, `decode` (inference).
    pub name: String,
    /// Tensor bytes live at the end of the phase (`torch.cuda.memory_allocated`).
    pub allocated_bytes: u64,
    /// Highest tensor bytes during the phase (`torch.cuda.max_memory_allocated`, reset per phase).
    pub peak_allocated_bytes: u64,
    /// CUDA only: `torch.cuda.memory_reserved` at the end of the phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reserved_bytes: Option<u64>,
    /// CUDA only: `torch.cuda.max_memory_reserved` during the phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_reserved_bytes: Option<u64>,
    /// CUDA only: this process's device memory per NVML at the end of the phase (what nvidia-smi
    /// shows: reserved + CUDA context + non-PyTorch allocations); null when NVML lists no such pid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_bytes: Option<u64>,
    /// CUDA only: total − free device memory (all processes) at the end of the phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_used_bytes: Option<u64>,
    /// Wall time of the phase in seconds (information only; CPU times include profiler overhead).
    pub wall_seconds: f64,
}

/// `measured` key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// `cpu-exact` (the CPU allocator's exact live bytes) or `cuda-allocator` (torch.cuda stats).
    pub counting: String,
    /// Σ storage bytes of all parameters (frozen and trainable), storages counted once (null only
    /// when the model did not fit while loading).
    #[serde(default)]
    pub weights_bytes: Option<u64>,
    /// Σ storage bytes of buffers not shared with parameters (rotary `inv_freq`, ...).
    #[serde(default)]
    pub buffers_bytes: Option<u64>,
    /// Parameters (elements).
    #[serde(default)]
    pub total_params: Option<u64>,
    /// Parameters with `requires_grad` (0 for inference).
    #[serde(default)]
    pub trainable_params: Option<u64>,
    /// Σ numel × element_size of the trainable parameters.
    #[serde(default)]
    pub trainable_bytes: Option<u64>,
    /// peft's `get_nb_trainable_parameters()[0]` (LoRA only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trainable_params_peft: Option<u64>,
    /// peft's `get_nb_trainable_parameters()[1]` (LoRA only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_params_peft: Option<u64>,
    /// Σ storage bytes of `.grad` after the first backward (training).
    #[serde(default)]
    pub gradients_bytes: Option<u64>,
    /// Σ storage bytes of the optimizer's state tensors after the first step, `step` counters apart
    /// (training).
    #[serde(default)]
    pub optimizer_bytes: Option<u64>,
    /// Σ bytes of the scalar `step` tensors (on CUDA, torch.optim keeps them on the CPU unless
    /// capturable/fused, so they are not in the device figures there).
    #[serde(default)]
    pub optimizer_step_bytes: Option<u64>,
    /// The optimizer as constructed, e.g. `torch.optim.AdamW(foreach=True)`.
    #[serde(default)]
    pub optimizer_impl: Option<String>,
    /// Bytes of the `input_ids` tensor (int64, batch × seq), live from the first forward on.
    #[serde(default)]
    pub input_bytes: u64,
    /// Σ storage bytes of the KV cache after prefill (inference).
    #[serde(default)]
    pub kv_cache_bytes: Option<u64>,
    /// Σ storage bytes of the KV cache after the decode step (inference).
    #[serde(default)]
    pub kv_cache_bytes_after_decode: Option<u64>,
    /// The largest `peak_allocated_bytes` over the step phases (`load` left out, see `fill_peaks`).
    #[serde(default)]
    pub peak_allocated_bytes: u64,
    /// The phase where `peak_allocated_bytes` was reached.
    #[serde(default)]
    pub peak_phase: String,
    /// CUDA only: the largest `peak_reserved_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_reserved_bytes: Option<u64>,
    /// CUDA only: the largest `device_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_device_bytes: Option<u64>,
    /// Per phase, in order.
    #[serde(default)]
    pub phases: Vec<MeasuredPhase>,
}

impl Measured {
    /// Fills the headline peaks from the phases (the probe reports phases only). The `load` phase is
    /// left out unless it is the only one: its peak includes the temporaries of random
    /// initialisation (`from_config`), which loading a checkpoint does not allocate.
    pub fn fill_peaks(&mut self) {
        let step: Vec<&MeasuredPhase> = self.phases.iter().filter(|p| p.name != "load").collect();
        let considered: Vec<&MeasuredPhase> = if step.is_empty() {
            self.phases.iter().collect()
        } else {
            step
        };
        // the first phase that reaches the maximum (ties: the earlier phase)
        let mut best: Option<&MeasuredPhase> = None;
        for p in &considered {
            if best.is_none_or(|b| p.peak_allocated_bytes > b.peak_allocated_bytes) {
                best = Some(p);
            }
        }
        if let Some(p) = best {
            self.peak_allocated_bytes = p.peak_allocated_bytes;
            self.peak_phase = p.name.clone();
        }
        self.peak_reserved_bytes = considered
            .iter()
            .filter_map(|p| p.peak_reserved_bytes)
            .max();
        self.peak_device_bytes = considered.iter().filter_map(|p| p.device_bytes).max();
    }
}

/// `failure` key: where the step ran out of memory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// The phase that failed.
    pub phase: String,
    /// `does not fit: OOM in phase X after Y GiB`.
    pub message: String,
    /// Tensor bytes live when the allocation failed (CUDA) or at the end of the failed phase (CPU).
    pub allocated_bytes: Option<u64>,
    /// Peak tensor bytes of the failed phase before the failure.
    pub peak_allocated_bytes: Option<u64>,
    /// The first line of PyTorch's error.
    pub detail: Option<String>,
}

/// What the probe prints (one JSON document on stdout).
#[derive(Clone, Debug, Deserialize)]
pub struct ProbeOutput {
    /// Protocol version.
    pub probe_version: u32,
    /// `ok`, `oom` or `error`.
    pub status: String,
    /// Failure description (`status` != `ok`).
    #[serde(default)]
    pub error: Option<ProbeError>,
    /// Library versions (absent when torch could not be imported).
    #[serde(default)]
    pub environment: Option<Environment>,
    /// Device facts.
    #[serde(default)]
    pub device: Option<DeviceInfo>,
    /// Model facts.
    #[serde(default)]
    pub model: Option<ModelInfo>,
    /// The measurement (phases complete up to the failure on `oom`).
    #[serde(default)]
    pub measured: Option<Measured>,
    /// Probe notes.
    #[serde(default)]
    pub notes: Vec<String>,
    /// Probe wall time.
    #[serde(default)]
    pub wall_seconds: f64,
}

/// The probe's `error` object.
#[derive(Clone, Debug, Deserialize)]
pub struct ProbeError {
    /// `missing_package`, `no_cuda`, `unsupported_architecture`, `unsupported_scenario`,
    /// `bad_config`, `oom`, `usage` or `probe_error`.
    pub kind: String,
    /// One sentence for the user.
    pub message: String,
    /// The failed phase (`oom`).
    #[serde(default)]
    pub phase: Option<String>,
    /// Live tensor bytes at the failure (`oom`).
    #[serde(default)]
    pub allocated_bytes: Option<u64>,
    /// Peak of the failed phase (`oom`).
    #[serde(default)]
    pub peak_allocated_bytes: Option<u64>,
    /// PyTorch's message (`oom`).
    #[serde(default)]
    pub detail: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(name: &str, alloc: u64, peak: u64) -> MeasuredPhase {
        MeasuredPhase {
            name: name.into(),
            allocated_bytes: alloc,
            peak_allocated_bytes: peak,
            reserved_bytes: None,
            peak_reserved_bytes: None,
            device_bytes: None,
            device_used_bytes: None,
            wall_seconds: 0.0,
        }
    }

    #[test]
    fn headline_peak_is_the_largest_phase_peak_and_names_it() {
        let mut m: Measured = serde_json::from_str(
            r#"{"counting":"cpu-exact","weights_bytes":1,"buffers_bytes":0,"total_params":1,
                "trainable_params":1,"trainable_bytes":4}"#,
        )
        .unwrap();
        m.phases = vec![
            phase("load", 10, 70),
            phase("forward", 30, 55),
            phase("backward", 20, 50),
        ];
        m.fill_peaks();
        assert_eq!(
            m.peak_allocated_bytes, 55,
            "load's init temporaries are not the headline"
        );
        assert_eq!(m.peak_phase, "forward");
        assert_eq!(m.peak_reserved_bytes, None);
        m.phases.push(phase("forward_2", 30, 55));
        m.fill_peaks();
        assert_eq!(m.peak_phase, "forward", "ties go to the earlier phase");
        m.phases.truncate(1);
        m.fill_peaks();
        assert_eq!(
            (m.peak_allocated_bytes, m.peak_phase.as_str()),
            (70, "load")
        );
    }

    #[test]
    fn cpu_phases_serialise_without_cuda_keys() {
        let json = serde_json::to_value(phase("load", 1, 2)).unwrap();
        assert!(json.get("reserved_bytes").is_none());
        assert_eq!(json["peak_allocated_bytes"], 2);
    }
}
