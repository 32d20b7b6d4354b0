//! `vram watch` and `vram gpus` without an NVIDIA driver: one clear error line and exit code 2, the
//! watched command not started. On a machine with a driver they run instead.

use std::process::{Command, Output};

fn vram(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vram"))
        .args(args)
        .output()
        .expect("the vram binary runs")
}

fn has_driver() -> bool {
    std::path::Path::new("/proc/driver/nvidia").exists()
}

fn assert_one_line_no_driver_error(out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(2),
        "stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    assert!(err.starts_with("error: no NVIDIA driver found"), "{err}");
    assert!(err.contains("libnvidia-ml.so.1"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn gpus_without_a_driver_is_one_error_line_and_exit_2() {
    let out = vram(&["gpus"]);
    if has_driver() {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("NVIDIA driver"));
        return;
    }
    assert_one_line_no_driver_error(&out);
}

#[test]
fn watch_without_a_driver_does_not_run_the_command_and_exits_2() {
    let marker = std::env::temp_dir().join(format!("vram-watch-ran-{}", std::process::id()));
    let _ = std::fs::remove_file(&marker);
    let marker_s = marker.to_str().expect("utf-8 temp path");
    let out = vram(&[
        "watch",
        "--",
        "sh",
        "-c",
        &format!("touch {marker_s}; sleep 1"),
    ]);
    if has_driver() {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    assert_one_line_no_driver_error(&out);
    assert!(
        !marker.exists(),
        "the command ran although NVML is unavailable"
    );
}

#[test]
fn watch_sleep_1_without_a_driver_is_the_same_clear_error() {
    let out = vram(&["watch", "--", "sleep", "1"]);
    if has_driver() {
        assert!(out.status.success());
        return;
    }
    assert_one_line_no_driver_error(&out);
}

#[test]
fn watch_passes_the_commands_exit_code_through_when_a_driver_exists() {
    if !has_driver() {
        println!("skipped: no NVIDIA driver on this machine (the exit code path needs NVML)");
        return;
    }
    let out = vram(&["watch", "--interval-ms", "20", "--", "sh", "-c", "exit 7"]);
    assert_eq!(out.status.code(), Some(7));
}

#[test]
fn bad_watch_arguments_are_named_before_nvml_is_touched() {
    let out = vram(&["watch", "--interval-ms", "1", "--", "true"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("error: --interval-ms: expected 10 to 60000"),
        "{err}"
    );
    let out = vram(&["watch", "--out", "timeline.txt", "--", "true"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("--out: expected a file name ending in .csv or .json"));
}

#[test]
fn watch_without_a_command_is_a_usage_error() {
    let out = vram(&["watch"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
}
