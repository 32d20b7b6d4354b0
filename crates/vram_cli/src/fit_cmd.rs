//! `vram fit`: can I run it? For a config or GGUF file and a machine (GPU × count, system RAM), the
//! table of GGUF types × the largest context that fits entirely on the GPU, and the fastest-looking
//! placement at the requested context (all on GPU > experts on CPU > layers on CPU).

use crate::load::load_config;
use crate::scenario_args::ScenarioArgs;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use vram_core::gpu_catalog::{self, GpuKind};
use vram_core::infer::llama_cpp::fit::{self, Machine, PlacementKind};
use vram_core::scenario::{Engine, Mode};

#[derive(Args, Debug)]
pub struct FitArgs {
    /// Path to a HuggingFace config.json or a GGUF file.
    pub config: PathBuf,
    /// GPU id from the catalog (`vram fit --gpu list` lists them), e.g. rtx4090, apple-16gb.
    #[arg(long, default_value = "rtx4090")]
    pub gpu: String,
    /// System RAM in GiB (default: 64 for a discrete GPU; the machine's RAM for unified memory).
    #[arg(long)]
    pub ram_gib: Option<f64>,
    /// Free GPU memory in GiB, when other programs hold some (overrides the catalog's usable figure).
    #[arg(long)]
    pub free_gib: Option<f64>,
    /// A display is attached to the GPU (keeps the desktop's share free).
    #[arg(long)]
    pub display: bool,
    /// GGUF types to tabulate (comma-separated; default f16,q8_0,q6_k,q5_k_m,q4_k_m,q3_k_m,q2_k;
    /// a GGUF file's own type comes first).
    #[arg(long, value_delimiter = ',')]
    pub types: Option<Vec<String>>,
    /// Print JSON: {"machine": …, "rows": [FitRow …]}.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    #[command(flatten)]
    pub llama: crate::llama_args::LlamaArgs,
}

fn gib(b: u64) -> f64 {
    b as f64 / (1u64 << 30) as f64
}

fn parse_gib(flag: &str, v: f64) -> anyhow::Result<u64> {
    if !(v > 0.0 && v <= 1.0e6) {
        anyhow::bail!("{flag}: expected a positive number of GiB, found {v}");
    }
    Ok((v * (1u64 << 30) as f64).round() as u64)
}

pub fn run(a: &FitArgs) -> anyhow::Result<ExitCode> {
    if a.gpu == "list" {
        for g in gpu_catalog::GPUS {
            println!("{:<18} {:>7.2} GiB  {}", g.id, gib(g.usable_bytes), g.name);
        }
        return Ok(ExitCode::SUCCESS);
    }
    let gpu = gpu_catalog::find(&a.gpu).ok_or_else(|| {
        anyhow::anyhow!(
            "--gpu: unknown GPU {:?}; expected one of {}",
            a.gpu,
            gpu_catalog::GPUS
                .iter()
                .map(|g| g.id)
                .collect::<Vec<_>>()
                .join(", ")
        )
    })?;
    // --gpus N: that many of the GPU, layers split evenly (as --tensor-split 1,1,…)
    let n_gpus = a.scenario.gpus.unwrap_or(1);
    if n_gpus == 0 || n_gpus > 16 {
        anyhow::bail!("--gpus: expected 1 to 16 GPUs, found {n_gpus}");
    }
    let spec = load_config(&a.config)?;
    let mut scenario = a.scenario.to_scenario(Mode::Infer)?;
    scenario.engine = Engine::LlamaCpp;
    if a.scenario.seq.is_none() {
        scenario.seq_len = 4096;
    }
    a.llama.apply(&mut scenario);
    if n_gpus > 1 && scenario.llama_cpp.tensor_split.is_empty() {
        scenario.llama_cpp.tensor_split = vec![1.0; n_gpus as usize];
    }
    let unified = gpu.kind != GpuKind::Discrete;
    let usable = match a.free_gib {
        Some(f) => parse_gib("--free-gib", f)?,
        None => gpu_catalog::usable_with_display(gpu, a.display),
    };
    let ram = match a.ram_gib {
        Some(r) => parse_gib("--ram-gib", r)?,
        None if unified => gpu.system_ram_bytes,
        None => 64 << 30,
    };
    let o = vram_core::report::DeviceOverheads::default();
    let machine = Machine {
        gpu_usable_bytes: usable,
        device_overhead_bytes: if unified {
            0
        } else {
            o.cuda_context_bytes + o.workspace_bytes
        },
        host_ram_bytes: ram,
        unified,
    };
    let types: Vec<&str> = match &a.types {
        Some(t) => t.iter().map(String::as_str).collect(),
        None => fit::TABLE_TYPES.to_vec(),
    };
    let rows = fit::can_i_run(&spec, &scenario, &machine, &types, &spec.name);
    let mut ok_rows = Vec::new();
    for r in rows {
        ok_rows.push(r.map_err(|e| anyhow::anyhow!("{e}"))?);
    }
    if a.json {
        let doc = serde_json::json!({
            "model": spec.name,
            "gpu": gpu.id,
            "gpus": n_gpus,
            "machine": machine,
            "context": scenario.seq_len,
            "sequences": scenario.batch,
            "rows": ok_rows,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{} on {} × {} ({:.2} GiB usable each{}), {:.0} GiB RAM; context {} × {} sequence(s), llama.cpp",
        spec.name,
        n_gpus,
        gpu.name,
        gib(usable),
        if machine.device_overhead_bytes > 0 {
            format!(", {:.2} GiB kept for the CUDA context", gib(machine.device_overhead_bytes))
        } else {
            String::new()
        },
        gib(ram),
        scenario.seq_len,
        scenario.batch
    );
    println!(
        "{:<8} {:>9} {:>14}  {:<15} {:>6} {:>9} {:>9}",
        "type", "weights", "max ctx (GPU)", "placement", "-ngl", "GPU GiB", "host GiB"
    );
    for r in &ok_rows {
        let place = match r.placement {
            PlacementKind::Gpu => "all on GPU".to_string(),
            PlacementKind::ExpertsOnCpu => format!("--n-cpu-moe {}", r.n_cpu_moe),
            PlacementKind::Partial => "partial offload".to_string(),
            PlacementKind::None => "does not fit".to_string(),
        };
        println!(
            "{:<8} {:>8.2}G {:>14}  {:<15} {:>6} {:>9.2} {:>9.2}",
            r.weights,
            gib(r.weights_bytes),
            if r.full_gpu_max_context > 0 {
                r.full_gpu_max_context.to_string()
            } else {
                "—".into()
            },
            place,
            r.n_gpu_layers,
            gib(r.gpu_bytes),
            gib(r.host_bytes)
        );
    }
    if let Some(best) = ok_rows
        .iter()
        .find(|r| r.placement == PlacementKind::Gpu)
        .or_else(|| ok_rows.iter().find(|r| r.placement != PlacementKind::None))
    {
        println!("\n{}", best.launch);
    }
    Ok(ExitCode::SUCCESS)
}
