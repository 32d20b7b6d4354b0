//! `vram gpus`: the GPUs NVML sees (name, total and free memory, driver, CUDA version).

use crate::nvml;
use clap::Args;
use nvml_wrapper::{cuda_driver_version_major, cuda_driver_version_minor};
use std::process::ExitCode;
use vram_core::units::{group_thousands, to_gib};

/// Arguments of `vram gpus`.
#[derive(Args, Debug)]
pub struct GpusArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// One GPU as NVML reports it.
#[derive(Debug, serde::Serialize)]
struct GpuRow {
    index: u32,
    name: String,
    total_bytes: u64,
    free_bytes: u64,
    used_bytes: u64,
}

/// Lists the GPUs, or fails with one line (exit 2 through `main`) when NVML is unavailable.
pub fn run(a: &GpusArgs) -> anyhow::Result<ExitCode> {
    let nvml = nvml::open()?;
    let driver = nvml
        .sys_driver_version()
        .map_err(|e| anyhow::anyhow!("NVML: driver version: {}", nvml::one_line(&e.to_string())))?;
    let cuda = nvml.sys_cuda_driver_version().ok().map(|v| {
        format!(
            "{}.{}",
            cuda_driver_version_major(v),
            cuda_driver_version_minor(v)
        )
    });
    let count = nvml
        .device_count()
        .map_err(|e| anyhow::anyhow!("NVML: device count: {}", nvml::one_line(&e.to_string())))?;
    let mut rows = Vec::new();
    for index in 0..count {
        let dev = nvml.device_by_index(index).map_err(|e| {
            anyhow::anyhow!("NVML: GPU {index}: {}", nvml::one_line(&e.to_string()))
        })?;
        let name = dev.name().unwrap_or_else(|_| "unknown".to_string());
        let mem = dev.memory_info().map_err(|e| {
            anyhow::anyhow!(
                "NVML: GPU {index} memory: {}",
                nvml::one_line(&e.to_string())
            )
        })?;
        rows.push(GpuRow {
            index,
            name,
            total_bytes: mem.total,
            free_bytes: mem.free,
            used_bytes: mem.used,
        });
    }
    if a.json {
        let doc = serde_json::json!({
            "driver_version": driver,
            "cuda_driver_version": cuda,
            "gpus": rows,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "NVIDIA driver {driver}, CUDA {} (driver API)",
        cuda.as_deref().unwrap_or("unknown")
    );
    if rows.is_empty() {
        println!("NVML sees no GPU.");
    }
    println!(
        "{:>3}  {:<32}{:>12}{:>12}{:>22}",
        "GPU", "name", "total GiB", "free GiB", "total bytes"
    );
    for r in &rows {
        println!(
            "{:>3}  {:<32}{:>12.2}{:>12.2}{:>22}",
            r.index,
            r.name,
            to_gib(r.total_bytes),
            to_gib(r.free_bytes),
            group_thousands(r.total_bytes)
        );
    }
    Ok(ExitCode::SUCCESS)
}
