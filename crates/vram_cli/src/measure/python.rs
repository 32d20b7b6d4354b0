//! Finding a Python and running the embedded probe (probe/probe.py) in it.
//!
//! Interpreter order: `--python PATH`, then `$VRAM_PYTHON`, then the venv that
//! `scripts/python-env.sh` creates at `${VRAM_VENV:-$HOME/.cache/vram/venv}` if it exists, then
//! `python3` on the PATH. The probe is written to the interpreter's standard input (`python -`), so
//! nothing is unpacked to disk.

use anyhow::Context;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The probe's source, embedded at build time.
pub const PROBE_SOURCE: &str = include_str!("../../probe/probe.py");

/// Where `scripts/python-env.sh` puts the venv.
pub fn default_venv() -> Option<PathBuf> {
    if let Some(v) = std::env::var_os("VRAM_VENV") {
        return Some(PathBuf::from(v));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/vram/venv"))
}

/// The interpreter to run, and how it was chosen (for messages).
pub fn choose_python(explicit: Option<&Path>) -> (PathBuf, &'static str) {
    if let Some(p) = explicit {
        return (p.to_path_buf(), "--python");
    }
    if let Some(p) = std::env::var_os("VRAM_PYTHON").filter(|p| !p.is_empty()) {
        return (PathBuf::from(p), "$VRAM_PYTHON");
    }
    if let Some(venv) = default_venv() {
        let py = venv.join("bin/python");
        if py.is_file() {
            return (py, "the vram venv");
        }
    }
    (PathBuf::from("python3"), "python3 on the PATH")
}

/// What the probe printed.
#[derive(Debug)]
pub struct ProbeRun {
    /// Its standard output (one JSON document when it ran).
    pub stdout: String,
    /// Its stderr lines that were not progress lines (the last 40), for error messages.
    pub stderr_tail: Vec<String>,
    /// Exit status code (None when killed by a signal).
    pub code: Option<i32>,
}

/// Runs the probe with `args`, echoing its progress lines to our stderr as they come.
pub fn run_probe(
    python: &Path,
    chosen_by: &str,
    args: &[String],
    verbose: bool,
) -> anyhow::Result<ProbeRun> {
    let mut child = Command::new(python)
        .arg("-")
        .args(args)
        .env("HF_HUB_OFFLINE", "1")
        .env("PYTHONUNBUFFERED", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            anyhow::anyhow!(
                "cannot run {} ({chosen_by}): {e}; install Python 3 with torch and transformers \
                 (scripts/python-env.sh creates a venv vram finds by itself) or pass --python PATH",
                python.display()
            )
        })?;
    {
        let mut stdin = child.stdin.take().context("probe stdin")?;
        match stdin.write_all(PROBE_SOURCE.as_bytes()) {
            // the interpreter exited without reading its script: its exit code and stderr tell why
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
            other => {
                other.with_context(|| format!("writing the probe to {}", python.display()))?;
            }
        }
    }
    let mut stdout_pipe = child.stdout.take().context("probe stdout")?;
    let out_thread = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout_pipe.read_to_string(&mut s);
        s
    });
    let stderr_pipe = child.stderr.take().context("probe stderr")?;
    let tail = echo_stderr(stderr_pipe, true, verbose);
    let status = child.wait().context("waiting for the probe")?;
    let stdout = out_thread.join().unwrap_or_default();
    Ok(ProbeRun {
        stdout,
        stderr_tail: tail,
        code: status.code(),
    })
}

/// Reads the probe's stderr to its end: progress lines (`vram-probe: …`) echoed when `progress`,
/// the others when `verbose`; returns the last 40 other lines for error messages.
fn echo_stderr(pipe: impl Read, progress: bool, verbose: bool) -> Vec<String> {
    let mut tail: Vec<String> = Vec::new();
    for line in BufReader::new(pipe).lines() {
        let Ok(line) = line else { break };
        if let Some(msg) = line.strip_prefix("vram-probe: ") {
            if progress {
                eprintln!("  {msg}");
            }
        } else {
            if verbose {
                eprintln!("  | {line}");
            }
            tail.push(line);
            if tail.len() > 40 {
                tail.remove(0);
            }
        }
    }
    tail
}

/// Runs the probe on `nproc` processes under torchrun (`python -m torch.distributed.run
/// --standalone`: a local rendezvous, gloo on CPU, NCCL on CUDA). torchrun runs a file, so the
/// probe is written into `dir`, where every rank also writes its answer (`rank{N}.json`,
/// `VRAM_PROBE_OUT_DIR`). Returns one [`ProbeRun`] per rank, its answer as `stdout`.
pub fn run_probe_distributed(
    python: &Path,
    chosen_by: &str,
    args: &[String],
    nproc: u64,
    dir: &Path,
    verbose: bool,
) -> anyhow::Result<Vec<ProbeRun>> {
    let script = dir.join("vram_probe.py");
    std::fs::write(&script, PROBE_SOURCE)
        .with_context(|| format!("cannot write {}", script.display()))?;
    let mut child = Command::new(python)
        .args(["-m", "torch.distributed.run", "--standalone"])
        .arg(format!("--nproc-per-node={nproc}"))
        .arg(&script)
        .args(args)
        .env("HF_HUB_OFFLINE", "1")
        .env("PYTHONUNBUFFERED", "1")
        .env("VRAM_PROBE_OUT_DIR", dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            anyhow::anyhow!(
                "cannot run {} -m torch.distributed.run ({chosen_by}): {e}",
                python.display()
            )
        })?;
    let stderr_pipe = child.stderr.take().context("torchrun stderr")?;
    // N ranks print the same progress lines: shown with --verbose only.
    let tail = echo_stderr(stderr_pipe, verbose, verbose);
    let status = child.wait().context("waiting for torchrun")?;
    (0..nproc)
        .map(|rank| {
            let path = dir.join(format!("rank{rank}.json"));
            match std::fs::read_to_string(&path) {
                Ok(stdout) => Ok(ProbeRun {
                    stdout,
                    stderr_tail: tail.clone(),
                    code: Some(0),
                }),
                Err(_) => anyhow::bail!(
                    "rank {rank} of torchrun gave no answer (exit {:?}); {}",
                    status.code(),
                    tail.iter()
                        .rev()
                        .take(3)
                        .rev()
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(" | ")
                ),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_python_wins() {
        let (p, why) = choose_python(Some(Path::new("/opt/py/bin/python")));
        assert_eq!(p, PathBuf::from("/opt/py/bin/python"));
        assert_eq!(why, "--python");
    }

    #[test]
    fn probe_is_embedded_and_declares_its_version() {
        assert!(PROBE_SOURCE.contains(&format!(
            "PROBE_VERSION = {}",
            crate::measure::report::PROBE_VERSION
        )));
    }
}
