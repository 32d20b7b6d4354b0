//! Helpers shared by the CLI's end-to-end tests.
#![allow(dead_code)] // each test crate uses its own subset

use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs the `vram` binary under test.
pub fn vram(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vram"))
        .args(args)
        .output()
        .expect("the vram binary runs")
}

/// The path of a bundled preset.
pub fn preset(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../vram_core/presets")
        .join(name)
        .display()
        .to_string()
}

/// Stdout as JSON, after asserting success.
pub fn json_of(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}
