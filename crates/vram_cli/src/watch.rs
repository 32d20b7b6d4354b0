//! `vram watch [--interval-ms N] [--out FILE.csv|.json] -- CMD ARGS…`: run a command and sample the
//! GPU memory that NVML attributes to its whole process tree, then print the peak (all GPUs and per
//! GPU), write the timeline, and exit with the command's exit code.
//!
//! NVML's per-process figure is the device memory of each process (`nvmlDeviceGetComputeRunningProcesses`
//! / `...GraphicsRunningProcesses`, `usedGpuMemory`): what `nvidia-smi` shows, i.e. PyTorch's reserved
//! memory + the CUDA context + non-PyTorch allocations. Processes are matched by PID, so inside a
//! container with its own PID namespace NVML's host PIDs may not match (then the timeline is all 0
//! and a warning says so). Without an NVIDIA driver the command is not started: one error line,
//! exit code 2.

use crate::nvml;
use anyhow::Context;
use clap::Args;
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::Nvml;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};
use vram_core::units::{format_gib, group_thousands};

/// Arguments of `vram watch`.
#[derive(Args, Debug)]
pub struct WatchArgs {
    /// Sampling interval in milliseconds (10 to 60000).
    #[arg(long, default_value_t = 100)]
    pub interval_ms: u64,
    /// Write the timeline to FILE: CSV when it ends in .csv, JSON when it ends in .json.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// The command to run, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// One sample of the process tree's device memory.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Sample {
    /// Milliseconds since the command started.
    pub t_ms: u64,
    /// Bytes on each GPU (NVML index order).
    pub per_gpu_bytes: Vec<u64>,
    /// Σ over GPUs.
    pub total_bytes: u64,
    /// Processes in the tree at this sample.
    pub processes: u32,
}

/// Timeline file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OutFormat {
    Csv,
    Json,
}

fn out_format(path: &std::path::Path) -> anyhow::Result<OutFormat> {
    match path.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("csv") => Ok(OutFormat::Csv),
        Some(e) if e.eq_ignore_ascii_case("json") => Ok(OutFormat::Json),
        _ => anyhow::bail!(
            "--out: expected a file name ending in .csv or .json, found {:?}",
            path.display().to_string()
        ),
    }
}

/// The parent PID in the text of `/proc/PID/stat` (field 4, after the parenthesised command name,
/// which may itself contain spaces and parentheses).
pub fn parent_pid(stat: &str) -> Option<u32> {
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// `root` and every descendant, from a PID → parent PID table.
pub fn process_tree(root: u32, parents: &BTreeMap<u32, u32>) -> BTreeSet<u32> {
    let mut tree = BTreeSet::from([root]);
    loop {
        let before = tree.len();
        for (pid, ppid) in parents {
            if tree.contains(ppid) {
                tree.insert(*pid);
            }
        }
        if tree.len() == before {
            return tree;
        }
    }
}

/// PID → parent PID for every process in /proc (Linux).
fn read_parents() -> BTreeMap<u32, u32> {
    let mut out = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) {
            if let Some(ppid) = parent_pid(&stat) {
                out.insert(pid, ppid);
            }
        }
    }
    out
}

/// GPU facts recorded in the JSON timeline.
#[derive(Clone, Debug, serde::Serialize)]
struct GpuInfo {
    index: u32,
    name: String,
    total_bytes: u64,
}

/// Bytes NVML attributes to `pids` on each GPU (compute and graphics lists, each PID once per GPU).
fn sample_gpus(nvml: &Nvml, count: u32, pids: &BTreeSet<u32>) -> Vec<u64> {
    let mut out = Vec::with_capacity(count as usize);
    for index in 0..count {
        let mut per_pid: BTreeMap<u32, u64> = BTreeMap::new();
        if let Ok(dev) = nvml.device_by_index(index) {
            let lists = [
                dev.running_compute_processes().unwrap_or_default(),
                dev.running_graphics_processes().unwrap_or_default(),
            ];
            for p in lists.iter().flatten() {
                if let (true, UsedGpuMemory::Used(b)) = (pids.contains(&p.pid), &p.used_gpu_memory)
                {
                    let e = per_pid.entry(p.pid).or_insert(0);
                    *e = (*e).max(*b);
                }
            }
        }
        out.push(per_pid.values().sum());
    }
    out
}

/// Runs the command under NVML sampling.
pub fn run(a: &WatchArgs) -> anyhow::Result<ExitCode> {
    if !(10..=60_000).contains(&a.interval_ms) {
        anyhow::bail!(
            "--interval-ms: expected 10 to 60000 milliseconds, found {}",
            a.interval_ms
        );
    }
    let format = a.out.as_deref().map(out_format).transpose()?;
    let Some((program, rest)) = a.command.split_first() else {
        anyhow::bail!("expected a command after --, e.g. vram watch -- python train.py");
    };
    let nvml = nvml::open()?;
    let count = nvml
        .device_count()
        .map_err(|e| anyhow::anyhow!("NVML: device count: {}", nvml::one_line(&e.to_string())))?;
    let gpus: Vec<GpuInfo> = (0..count)
        .map(|index| {
            let dev = nvml.device_by_index(index).ok();
            GpuInfo {
                index,
                name: dev
                    .as_ref()
                    .and_then(|d| d.name().ok())
                    .unwrap_or_else(|| "unknown".into()),
                total_bytes: dev
                    .as_ref()
                    .and_then(|d| d.memory_info().ok())
                    .map_or(0, |m| m.total),
            }
        })
        .collect();

    let start = Instant::now();
    let mut child = Command::new(program)
        .args(rest)
        .spawn()
        .with_context(|| format!("cannot start {program:?}"))?;
    let root = child.id();
    let interval = Duration::from_millis(a.interval_ms);
    let mut samples: Vec<Sample> = Vec::new();
    let status = loop {
        let pids = process_tree(root, &read_parents());
        let per_gpu = sample_gpus(&nvml, count, &pids);
        samples.push(Sample {
            t_ms: u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX),
            total_bytes: per_gpu.iter().sum(),
            per_gpu_bytes: per_gpu,
            processes: u32::try_from(pids.len()).unwrap_or(u32::MAX),
        });
        if let Some(status) = child.try_wait().context("waiting for the command")? {
            break status;
        }
        std::thread::sleep(interval);
    };
    let code = exit_code_of(status);

    let peak = samples.iter().map(|s| s.total_bytes).max().unwrap_or(0);
    let per_gpu_peak: Vec<u64> = (0..count as usize)
        .map(|i| {
            samples
                .iter()
                .filter_map(|s| s.per_gpu_bytes.get(i).copied())
                .max()
                .unwrap_or(0)
        })
        .collect();
    eprintln!(
        "vram watch: peak {} ({} B) over {} samples every {} ms; command exited with {}",
        format_gib(peak),
        group_thousands(peak),
        samples.len(),
        a.interval_ms,
        code
    );
    for (g, p) in gpus.iter().zip(&per_gpu_peak) {
        eprintln!(
            "  GPU {} {}: peak {} ({} B) of {}",
            g.index,
            g.name,
            format_gib(*p),
            group_thousands(*p),
            format_gib(g.total_bytes)
        );
    }
    if peak == 0 {
        eprintln!("vram watch: NVML attributed no GPU memory to the command's processes (no GPU use, or a PID namespace hides them)");
    }
    if let (Some(path), Some(fmt)) = (&a.out, format) {
        let text = match fmt {
            OutFormat::Csv => timeline_csv(count, &samples),
            OutFormat::Json => {
                let doc = serde_json::json!({
                    "schema_version": 1,
                    "kind": "vram-watch-timeline",
                    "command": a.command,
                    "interval_ms": a.interval_ms,
                    "exit_code": code,
                    "gpus": gpus,
                    "peak_bytes": peak,
                    "per_gpu_peak_bytes": per_gpu_peak,
                    "samples": samples,
                });
                serde_json::to_string_pretty(&doc)? + "\n"
            }
        };
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("vram watch: timeline written to {}", path.display());
    }
    Ok(ExitCode::from(code))
}

/// CSV timeline: `t_ms,total_bytes,gpu0_bytes,…,processes`.
pub fn timeline_csv(gpu_count: u32, samples: &[Sample]) -> String {
    let mut s = String::from("t_ms,total_bytes");
    for i in 0..gpu_count {
        s.push_str(&format!(",gpu{i}_bytes"));
    }
    s.push_str(",processes\n");
    for x in samples {
        s.push_str(&format!("{},{}", x.t_ms, x.total_bytes));
        for b in &x.per_gpu_bytes {
            s.push_str(&format!(",{b}"));
        }
        s.push_str(&format!(",{}\n", x.processes));
    }
    s
}

/// The command's exit code as ours: its code, or 128 + signal when a signal ended it (as shells do).
fn exit_code_of(status: std::process::ExitStatus) -> u8 {
    if let Some(c) = status.code() {
        return u8::try_from(c & 0xff).unwrap_or(1);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            return u8::try_from((128 + sig) & 0xff).unwrap_or(1);
        }
    }
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parent_pid_survives_parentheses_and_spaces_in_the_command_name() {
        assert_eq!(parent_pid("1234 (my (odd) cmd) S 77 1234 1234 0"), Some(77));
        assert_eq!(parent_pid("garbage"), None);
    }

    #[test]
    fn process_tree_holds_grandchildren_but_not_siblings() {
        let parents = BTreeMap::from([(10, 1), (11, 10), (12, 11), (20, 1)]);
        let tree = process_tree(10, &parents);
        assert_eq!(tree, BTreeSet::from([10, 11, 12]));
    }

    #[test]
    fn csv_timeline_has_one_column_per_gpu() {
        let csv = timeline_csv(
            2,
            &[Sample {
                t_ms: 5,
                per_gpu_bytes: vec![1, 2],
                total_bytes: 3,
                processes: 1,
            }],
        );
        assert_eq!(
            csv,
            "t_ms,total_bytes,gpu0_bytes,gpu1_bytes,processes\n5,3,1,2,1\n"
        );
    }

    #[test]
    fn out_file_must_be_csv_or_json() {
        assert_eq!(
            out_format(std::path::Path::new("a.CSV")).unwrap(),
            OutFormat::Csv
        );
        let err = out_format(std::path::Path::new("a.txt"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("--out: expected"), "{err}");
    }
}
