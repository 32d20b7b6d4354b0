//! `vram measure`: run one real step of the model in PyTorch and report memory per phase.
//!
//! The scenario flags are `vram estimate`'s (`ScenarioArgs`), resolved once into a
//! `vram_core::Scenario` that is handed to the embedded Python probe as JSON. The probe's answer is
//! checked, wrapped into a versioned [`report::MeasureReport`] and shown as a table and/or written as
//! JSON (docs/measure-report.md). Exit codes: 0 measured, 3 does not fit (out of memory; the report
//! says in which phase), 2 errors (bad input, Python or packages missing, no CUDA device, ...).

pub mod compare;
pub mod config_text;
pub mod python;
pub mod render;
pub mod report;

use crate::scenario_args::ScenarioArgs;
use anyhow::Context;
use clap::{Args, ValueEnum};
use report::{
    ConfigInfo, Failure, MeasureReport, Outcome, ProbeOutput, ToolInfo, PROBE_VERSION, REPORT_KIND,
    REPORT_SCHEMA_VERSION,
};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use vram_core::json::MAX_CONFIG_BYTES;
use vram_core::scenario::{BaseQuant, Engine, Mode};
use vram_core::Scenario;

/// Exit code when the step does not fit in memory.
pub const EXIT_DOES_NOT_FIT: u8 = 3;

/// `--mode`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ModeArg {
    /// Two training steps: forward, backward, optimizer step (the second with optimizer states).
    Train,
    /// Prefill of --seq tokens at --batch with the KV cache, then one decode step.
    Infer,
}

/// Arguments of `vram measure`.
#[derive(Args, Debug)]
pub struct MeasureArgs {
    /// Path to a HuggingFace config.json (the model is built from it with random weights).
    pub config: PathBuf,
    /// What to run.
    #[arg(long, value_enum, default_value_t = ModeArg::Train)]
    pub mode: ModeArg,
    /// cpu (exact tensor bytes), cuda or cuda:N.
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// Write the JSON report to FILE (`-`: print it on stdout instead of the table).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Python interpreter with torch and transformers (default: $VRAM_PYTHON, the venv of
    /// scripts/python-env.sh, python3).
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// Change a config key before measuring, e.g. --set num_hidden_layers=2 (recorded in the report).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Show the probe's other stderr output too.
    #[arg(long)]
    pub verbose: bool,
    /// Processes (ranks) to launch under torchrun (`--fsdp2` or `--tp` layouts): every rank is
    /// measured.
    #[arg(long, default_value_t = 1)]
    pub nproc: u64,
    /// Tensor-parallel size under torchrun: transformers' own `tp_plan` over `--nproc` ranks.
    #[arg(long)]
    pub tp: Option<u64>,
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    #[command(flatten)]
    pub layout: crate::layout_args::LayoutArgs,
}

/// `cpu`, `cuda` or `cuda:N`, checked.
pub fn parse_device(s: &str) -> anyhow::Result<String> {
    match s {
        "cpu" | "cuda" => Ok(s.to_string()),
        _ => match s.strip_prefix("cuda:").map(str::parse::<u32>) {
            Some(Ok(n)) => Ok(format!("cuda:{n}")),
            _ => anyhow::bail!("--device: expected cpu, cuda or cuda:N, found {s:?}"),
        },
    }
}

/// Whether the layout is measured under torchrun: FSDP2 or transformers' tensor parallelism with
/// the HF framework, any torchtitan layout (TP, PP, FSDP2 through torchtitan's own functions).
fn is_distributed(s: &Scenario) -> bool {
    use vram_core::layout::Framework;
    match s.layout.framework {
        Framework::Hf => s.layout.fsdp2 || s.layout.tp > 1 || (s.zero.0 > 0 && s.gpus > 1),
        Framework::Torchtitan => true,
        Framework::Megatron => false,
    }
}

/// Refuses, before starting Python, the scenario parts one process on one device cannot run.
pub fn check_measurable(s: &Scenario) -> anyhow::Result<()> {
    let mut not = Vec::new();
    let distributed = is_distributed(s);
    if s.gpus != 1 && !distributed {
        not.push(format!("--gpus {}", s.gpus));
    }
    if s.layout.is_model_parallel() && !distributed {
        not.push("tensor / pipeline / context / expert parallel layouts".to_string());
    }
    if s.zero.0 != 0 && !distributed {
        not.push(format!(
            "--zero {} (DeepSpeed ZeRO is measured on --nproc 2 or more)",
            s.zero.0
        ));
    }
    if s.offload_optimizer {
        not.push("--offload-optimizer".to_string());
    }
    if s.offload_params {
        not.push("--offload-params".to_string());
    }
    if s.grad_accumulation != 1 {
        not.push(format!("--grad-accumulation {}", s.grad_accumulation));
    }
    if s.engine != Engine::Transformers {
        not.push("--engine vllm".to_string());
    }
    if let Some(w) = s.weights.as_deref().filter(|w| *w != s.dtype.name()) {
        not.push(format!("--weights {w}"));
    }
    if let Some(k) = s.kv_dtype.as_deref().filter(|k| *k != s.dtype.name()) {
        not.push(format!("--kv-dtype {k}"));
    }
    if let Some(l) = &s.lora {
        if l.base_quant != BaseQuant::None {
            not.push("--lora-base (QLoRA needs a quantized checkpoint)".to_string());
        }
        if s.mode == Mode::Infer {
            not.push("--lora-r with --mode infer".to_string());
        }
    }
    if !not.is_empty() {
        anyhow::bail!(
            "vram measure runs one unquantized HF transformers process on one device; these are \
             estimate-only: {}",
            not.join(", ")
        );
    }
    Ok(())
}

/// The model name for the report: vram_core's name for the config, else the file name.
fn config_name(path: &Path, text: &str) -> String {
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .map(|s| s.trim_end_matches(".config").to_string());
    let hint = match stem.as_deref() {
        Some("config") | None => path
            .parent()
            .and_then(|p| p.file_name())
            .and_then(|s| s.to_str())
            .map(String::from),
        other => other.map(String::from),
    };
    vram_core::parse_config(text, hint.as_deref())
        .map(|spec| spec.name)
        .ok()
        .or(hint)
        .unwrap_or_else(|| "model".to_string())
}

/// Reads the config file as text with the same size limit as `vram estimate`.
fn read_config(path: &Path) -> anyhow::Result<String> {
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    if meta.len() > MAX_CONFIG_BYTES as u64 {
        anyhow::bail!(
            "{}: {} bytes is too large for a config.json (at most {} MiB)",
            path.display(),
            meta.len(),
            MAX_CONFIG_BYTES >> 20
        );
    }
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "{}: not a UTF-8 text file (byte {} is invalid); expected a config.json",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })
}

/// Removes the temporary effective config when dropped.
struct TempFile(PathBuf);
impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Runs the measurement.
pub fn run(a: &MeasureArgs) -> anyhow::Result<ExitCode> {
    let device = parse_device(&a.device)?;
    let mode = match a.mode {
        ModeArg::Train => Mode::Train,
        ModeArg::Infer => Mode::Infer,
    };
    let mut scenario = a.scenario.to_scenario(mode)?;
    if a.nproc > 1 {
        scenario.gpus = a.nproc;
    }
    if matches!(
        a.layout.framework,
        Some(crate::layout_args::FrameworkArg::Torchtitan)
    ) && a.nproc < 2
    {
        anyhow::bail!(
            "--nproc: expected 2 or more ranks for --framework torchtitan (launched with torchrun), found {}",
            a.nproc
        );
    }
    a.layout.apply(&mut scenario, a.tp, true)?;
    let distributed = is_distributed(&scenario);
    if a.nproc > 1 && !distributed {
        anyhow::bail!(
            "--nproc {}: distributed measurement runs FSDP2 (--fsdp2) or tensor-parallel (--tp) layouts, or --framework torchtitan",
            a.nproc
        );
    }

    if distributed && scenario.gpus != a.nproc {
        anyhow::bail!(
            "--nproc: expected {} to launch every rank of the layout, found {}",
            scenario.gpus,
            a.nproc
        );
    }
    check_measurable(&scenario)?;
    let text = read_config(&a.config)?;
    let effective = config_text::apply_overrides(&text, &a.set)
        .with_context(|| a.config.display().to_string())?;
    let name = config_name(&a.config, &effective.text);
    let tmp = TempFile(std::env::temp_dir().join(format!(
        "vram-measure-{}-{}.json",
        std::process::id(),
        config_text::sha256_hex(effective.text.as_bytes())
            .get(..12)
            .unwrap_or("config")
    )));
    std::fs::write(&tmp.0, &effective.text)
        .with_context(|| format!("cannot write {}", tmp.0.display()))?;

    let (python, why) = python::choose_python(a.python.as_deref());
    eprintln!(
        "vram measure: {name} on {device} with {} ({why})",
        python.display()
    );
    let args = vec![
        "--config".to_string(),
        tmp.0.display().to_string(),
        "--scenario".to_string(),
        serde_json::to_string(&scenario)?,
        "--device".to_string(),
        device.clone(),
    ];
    if a.nproc > 1 {
        return run_distributed(a, &scenario, &python, why, &args, &name, &text, &effective);
    }
    let run = python::run_probe(&python, why, &args, a.verbose)?;
    let out = parse_probe_output(&run, &python)?;
    let mut report = build_report(out, &scenario, &a.config, &name, &text, &effective)?;
    report.estimate = estimate_for(
        &effective.text,
        &name,
        &scenario,
        &device,
        &report.measured,
        None,
    );

    let json_to_stdout = a.json.as_deref() == Some(Path::new("-"));
    if json_to_stdout {
        print_stdout(&(serde_json::to_string_pretty(&report)? + "\n"))?;
    } else {
        print_stdout(&render::table(&report))?;
        if let Some(path) = &a.json {
            let mut s = serde_json::to_string_pretty(&report)?;
            s.push('\n');
            std::fs::write(path, s).with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!("vram measure: report written to {}", path.display());
        }
    }
    Ok(match report.outcome {
        Outcome::Ok => ExitCode::SUCCESS,
        Outcome::DoesNotFit => {
            if json_to_stdout {
                if let Some(f) = &report.failure {
                    eprintln!("vram measure: {}", f.message);
                }
            }
            ExitCode::from(EXIT_DOES_NOT_FIT)
        }
    })
}

/// Removes a temporary directory when dropped.
struct TempDir(PathBuf);
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Every rank of a torchrun launch, one report each (the estimate is the core's per-rank figure
/// of the same layout), in one `vram-measure-ranks` document (docs/measure-report.md §Ranks).
#[allow(clippy::too_many_arguments)]
fn run_distributed(
    a: &MeasureArgs,
    scenario: &Scenario,
    python: &Path,
    why: &str,
    args: &[String],
    name: &str,
    text: &str,
    effective: &config_text::EffectiveConfig,
) -> anyhow::Result<ExitCode> {
    let dir = TempDir(std::env::temp_dir().join(format!("vram-ranks-{}", std::process::id())));
    std::fs::create_dir_all(&dir.0)
        .with_context(|| format!("cannot create {}", dir.0.display()))?;
    eprintln!("vram measure: launching {} ranks with torchrun", a.nproc);
    let runs = python::run_probe_distributed(python, why, args, a.nproc, &dir.0, a.verbose)?;
    let mut reports = Vec::new();
    for run in &runs {
        let out = parse_probe_output(run, python)?;
        let mut report = build_report(out, scenario, &a.config, name, text, effective)?;
        report.estimate = estimate_for(
            &effective.text,
            name,
            scenario,
            &a.device,
            &report.measured,
            Some(reports.len() as u64),
        );
        reports.push(report);
    }
    let doc = report::RanksReport {
        schema_version: REPORT_SCHEMA_VERSION,
        kind: report::RANKS_REPORT_KIND.into(),
        nproc: a.nproc,
        ranks: reports,
    };
    let text_out = render::ranks_table(&doc);
    if a.json.as_deref() == Some(Path::new("-")) {
        print_stdout(&(serde_json::to_string_pretty(&doc)? + "\n"))?;
    } else {
        print_stdout(&text_out)?;
        if let Some(path) = &a.json {
            let mut s = serde_json::to_string_pretty(&doc)?;
            s.push('\n');
            std::fs::write(path, s).with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!("vram measure: report written to {}", path.display());
        }
    }
    let oom = doc.ranks.iter().any(|r| r.outcome == Outcome::DoesNotFit);
    Ok(if oom {
        ExitCode::from(EXIT_DOES_NOT_FIT)
    } else {
        ExitCode::SUCCESS
    })
}

/// The core's estimate of the same step (the effective config, overrides applied), lined up with the
/// measurement; `None` when the core cannot model this scenario (the report then holds the measurement
/// alone, and says so on stderr).
fn estimate_for(
    config_text: &str,
    name: &str,
    scenario: &Scenario,
    device: &str,
    measured: &report::Measured,
    rank: Option<u64>,
) -> Option<compare::EstimateComparison> {
    let overheads = vram_core::report::DeviceOverheads::default();
    // On CPU, PyTorch's dropout and SDPA-with-dropout kernels allocate differently from CUDA's; the
    // core models both, and compares a CPU measurement with its CPU counting (docs/formulas/training.md).
    let counting = if device == "cpu" {
        vram_core::train::Counting::CpuExact
    } else {
        vram_core::train::Counting::Cuda
    };
    let spec = vram_core::parse_config(config_text, Some(name)).ok()?;
    // the probe builds the unquantized model from transformers' classes (a config's
    // quantization_config is ignored, and said so): the estimate compared is of those weights
    let unquantized;
    let scenario = if spec.quantization_config.is_some() && scenario.weights.is_none() {
        unquantized = Scenario {
            weights: Some(scenario.dtype.name().to_string()),
            ..scenario.clone()
        };
        &unquantized
    } else {
        scenario
    };
    let version = env!("CARGO_PKG_VERSION");
    let result = match scenario.mode {
        Mode::Train => vram_core::train::estimate_training_counting(
            &spec, scenario, &overheads, counting,
        )
        .map(|e| match rank.and_then(|r| stage_rank(&e, scenario, r)) {
            // a pipeline stage's own figures (the headline is the largest stage's)
            Some(stage) => {
                let (terms, phases) = stage_comparison(stage, scenario.layout.pp > 1);
                compare::compare(
                    &format!(
                        "vram_core {version} training model, pipeline stage {}",
                        stage.stage
                    ),
                    &terms,
                    &phases,
                    measured,
                )
            }
            None => compare::compare(
                &format!("vram_core {version} training model"),
                &e.terms,
                &e.phases,
                measured,
            ),
        }),
        Mode::Infer => vram_core::infer::estimate_inference(&spec, scenario, &overheads).map(|e| {
            compare::compare(
                &format!("vram_core {version} inference model"),
                &e.terms,
                &e.phases,
                measured,
            )
        }),
    };
    match result {
        Ok(c) => Some(c),
        Err(e) => {
            eprintln!("vram measure: no estimate to compare with: {e}");
            None
        }
    }
}

/// The rank kind of torchrun rank `rank` when the kinds differ by pipeline stage (Megatron /
/// torchtitan layouts; torchtitan's mesh puts `pp` outermost, so rank `r` is on stage
/// `r / (gpus / pp)`).
fn stage_rank<'a>(
    e: &'a vram_core::train::TrainEstimate,
    scenario: &Scenario,
    rank: u64,
) -> Option<&'a vram_core::train::ranks::RankEstimate> {
    if scenario.layout.framework == vram_core::layout::Framework::Hf || e.ranks.len() < 2 {
        return None;
    }
    let per_stage = (scenario.gpus / scenario.layout.pp.max(1)).max(1);
    let stage = rank / per_stage;
    e.ranks
        .iter()
        .find(|r| r.stage <= stage && stage <= r.last_stage)
}

/// The compared terms and phases of one rank kind. A pipeline schedule runs every micro-batch's
/// forward and backward inside one `step()`, measured as one phase `step_2`: its estimate is the
/// larger of the stage's forward and backward peaks.
fn stage_comparison(
    r: &vram_core::train::ranks::RankEstimate,
    pipeline: bool,
) -> (Vec<vram_core::report::Term>, Vec<vram_core::report::Phase>) {
    let term = |key: &str, bytes: u64| vram_core::report::Term {
        key: key.into(),
        bytes,
        formula: format!("pipeline stage {}", r.stage),
        source: "train/ranks.rs".into(),
    };
    let terms = vec![
        term("weights", r.weights_bytes),
        term("gradients", r.gradients_bytes),
        term("optimizer", r.optimizer_bytes),
    ];
    let mut phases = vram_core::train::rank_phases(r);
    if pipeline {
        let persistent = r.weights_bytes + r.gradients_bytes + r.optimizer_bytes;
        phases.push(vram_core::report::Phase {
            name: "step_2".into(),
            allocated_bytes: persistent,
            peak_allocated_bytes: r.forward_peak_bytes.max(r.backward_peak_bytes),
            components: Vec::new(),
        });
    }
    (terms, phases)
}

/// Writes to stdout; a closed pipe (`vram measure ... | head`) is not an error.
fn print_stdout(s: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(s.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// The probe's JSON, or an error that says what went wrong with Python.
fn parse_probe_output(run: &python::ProbeRun, python: &Path) -> anyhow::Result<ProbeOutput> {
    let last = run.stdout.lines().rev().find(|l| !l.trim().is_empty());
    let Some(line) = last else {
        let why = run
            .stderr_tail
            .iter()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| crate::nvml::one_line(l))
            .unwrap_or_else(|| "no output".to_string());
        let Some(code) = run.code else {
            anyhow::bail!(
                "the probe in {} was killed by a signal before it reported (the Linux OOM killer, if \
                 host RAM ran out: on CPU the step does not fit in memory): {why}",
                python.display()
            );
        };
        anyhow::bail!(
            "{} printed no report (exit code {code}): {why}; is it Python 3 (try --python PATH)?",
            python.display()
        );
    };
    let out: ProbeOutput = serde_json::from_str(line).map_err(|e| {
        anyhow::anyhow!(
            "the probe's report from {} is not valid ({e}); run with --verbose to see its output",
            python.display()
        )
    })?;
    if out.probe_version != PROBE_VERSION {
        anyhow::bail!(
            "the probe speaks protocol {}, this vram expects {PROBE_VERSION}",
            out.probe_version
        );
    }
    Ok(out)
}

/// Wraps the probe's answer into the report, or turns its error into ours.
fn build_report(
    out: ProbeOutput,
    scenario: &Scenario,
    path: &Path,
    name: &str,
    text: &str,
    effective: &config_text::EffectiveConfig,
) -> anyhow::Result<MeasureReport> {
    let outcome = match out.status.as_str() {
        "ok" => Outcome::Ok,
        "oom" => Outcome::DoesNotFit,
        _ => {
            let msg = out.error.map_or_else(
                || format!("the probe failed with status {:?}", out.status),
                |e| {
                    let m = crate::nvml::one_line(&e.message);
                    if e.kind == "probe_error" {
                        format!("the probe failed unexpectedly: {m} (run with --verbose for the traceback)")
                    } else {
                        m
                    }
                },
            );
            anyhow::bail!("{msg}");
        }
    };
    let missing = |what: &str| anyhow::anyhow!("the probe's report lacks {what}");
    let mut measured = out.measured.ok_or_else(|| missing("measured"))?;
    if outcome == Outcome::Ok {
        if measured.phases.is_empty() {
            return Err(missing("measured.phases"));
        }
        if measured.weights_bytes.is_none() {
            return Err(missing("measured.weights_bytes"));
        }
    }
    measured.fill_peaks();
    let failure = match (&outcome, out.error) {
        (Outcome::DoesNotFit, Some(e)) => Some(Failure {
            phase: e.phase.unwrap_or_default(),
            message: e.message,
            allocated_bytes: e.allocated_bytes,
            peak_allocated_bytes: e.peak_allocated_bytes,
            detail: e.detail,
        }),
        _ => None,
    };
    Ok(MeasureReport {
        schema_version: REPORT_SCHEMA_VERSION,
        kind: REPORT_KIND.to_string(),
        tool: ToolInfo {
            name: "vram".to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            probe_version: out.probe_version,
        },
        outcome,
        scenario: scenario.clone(),
        config: ConfigInfo {
            name: name.to_string(),
            path: path.display().to_string(),
            sha256: config_text::sha256_hex(text.as_bytes()),
            overrides: effective.overrides.clone(),
            effective_sha256: config_text::sha256_hex(effective.text.as_bytes()),
        },
        device: out.device.ok_or_else(|| missing("device"))?,
        environment: out.environment.ok_or_else(|| missing("environment"))?,
        model: match (outcome, out.model) {
            (_, Some(model)) => Some(model),
            (Outcome::DoesNotFit, None) => None,
            (Outcome::Ok, None) => return Err(missing("model")),
        },
        measured,
        failure,
        estimate: None,
        notes: out.notes,
        wall_seconds: out.wall_seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_are_cpu_cuda_or_cuda_with_an_index() {
        assert_eq!(parse_device("cpu").unwrap(), "cpu");
        assert_eq!(parse_device("cuda:1").unwrap(), "cuda:1");
        let err = parse_device("gpu").unwrap_err().to_string();
        assert!(
            err.starts_with("--device: expected cpu, cuda or cuda:N"),
            "{err}"
        );
        assert!(parse_device("cuda:x").is_err());
    }

    #[test]
    fn zero_on_one_process_and_offload_are_refused_as_estimate_only() {
        let one = Scenario {
            zero: vram_core::scenario::ZeroStage(3),
            ..Scenario::default()
        };
        let err = check_measurable(&one).unwrap_err().to_string();
        assert!(
            err.contains("--zero 3 (DeepSpeed ZeRO is measured on --nproc 2 or more)"),
            "{err}"
        );
        // ZeRO on 4 ranks is measured (DeepSpeed under torchrun); its offload is not
        let offload = Scenario {
            gpus: 4,
            zero: vram_core::scenario::ZeroStage(3),
            offload_optimizer: true,
            ..Scenario::default()
        };
        let err = check_measurable(&offload).unwrap_err().to_string();
        assert!(
            err.contains("--offload-optimizer") && !err.contains("--gpus"),
            "{err}"
        );
        assert!(check_measurable(&Scenario::default()).is_ok());
    }

    #[test]
    fn oom_while_loading_is_a_does_not_fit_report_without_a_model() {
        let out: ProbeOutput = serde_json::from_str(
            r#"{"probe_version":1,"status":"oom",
                "error":{"kind":"oom","phase":"load","allocated_bytes":1073741824,
                         "peak_allocated_bytes":2147483648,
                         "message":"does not fit: OOM in phase load after 2.00 GiB"},
                "environment":{"python":"3.11","python_executable":"py","platform":"linux",
                               "torch":"2.11.0","transformers":"5.17.0","peft":null,"accelerate":null,
                               "bitsandbytes":null,"cuda_runtime":"13.0","torch_threads":8},
                "device":{"kind":"cuda","index":0,"name":"GPU","total_bytes":1,"driver":"580"},
                "measured":{"counting":"cuda-allocator","phases":[]}}"#,
        )
        .unwrap();
        let eff = config_text::apply_overrides("{}", &[]).unwrap();
        let r = build_report(
            out,
            &Scenario::default(),
            Path::new("c.json"),
            "c",
            "{}",
            &eff,
        )
        .unwrap();
        assert_eq!(r.outcome, Outcome::DoesNotFit);
        assert!(r.model.is_none());
        assert_eq!(r.measured.weights_bytes, None);
        let f = r.failure.clone().expect("failure");
        assert_eq!(f.phase, "load");
        assert_eq!(f.message, "does not fit: OOM in phase load after 2.00 GiB");
        assert!(render::table(&r).contains("does not fit: OOM in phase load"));
    }

    #[test]
    fn probe_errors_become_our_error_message() {
        let out: ProbeOutput = serde_json::from_str(
            r#"{"probe_version":1,"status":"error","error":{"kind":"missing_package","message":"cannot import torch"}}"#,
        )
        .unwrap();
        let eff = config_text::apply_overrides("{}", &[]).unwrap();
        let err = build_report(
            out,
            &Scenario::default(),
            Path::new("c.json"),
            "c",
            "{}",
            &eff,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(err, "cannot import torch");
    }
}
