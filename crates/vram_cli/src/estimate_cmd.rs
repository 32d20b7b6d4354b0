//! `vram estimate`: the model summary, exact parameters and the memory budgets.

use crate::args::EstimateArgs;
use crate::load::{load_paths, Loaded};
use crate::render;
use std::process::ExitCode;
use vram_core::scenario::Mode;
use vram_core::{estimate_on, Sections};

pub fn run(a: &EstimateArgs) -> anyhow::Result<ExitCode> {
    let spec = match load_paths(&a.config)? {
        Loaded::Model(spec) => *spec,
        Loaded::HeadersOnly(c) => {
            if a.train || a.infer {
                anyhow::bail!(
                    "memory estimates need the model's config.json (give it with the safetensors files); the headers alone give the exact count: {} parameters, {} B of weights",
                    vram_core::units::group_thousands(c.params),
                    vram_core::units::group_thousands(c.data_bytes)
                );
            }
            return crate::render::checkpoint_only(&c, a.json);
        }
    };
    let mode = if a.infer && !a.train {
        Mode::Infer
    } else {
        Mode::Train
    };
    let mut scenario = a.scenario.to_scenario(mode)?;
    a.serving.apply(&mut scenario)?;
    if mode == Mode::Train {
        a.layout
            .apply(&mut scenario, a.serving.tp, a.train && !a.infer)?;
    }
    // `--pp` is also vLLM's `--pipeline-parallel-size` for the inference budget.
    if let (true, Some(pp)) = (a.infer, a.layout.pp) {
        scenario.serving.pipeline_parallel_size = pp;
        vram_core::infer::vllm::validate(&scenario.serving)?;
    }
    a.llama.apply(&mut scenario);
    if a.llama.any() && scenario.engine != vram_core::scenario::Engine::LlamaCpp {
        anyhow::bail!(
            "--ubatch, --ngl, --flash-attn and the other llama.cpp flags need --engine llama.cpp"
        );
    }
    let sections = Sections {
        train: a.train,
        infer: a.infer,
    };
    let device = a.device.device();
    if a.train {
        // A requested training budget that cannot be computed is an error, not a warning.
        vram_core::train::estimate_training_counting(
            &spec,
            &scenario,
            &device.overheads(),
            device.counting(),
        )
        .map_err(|e| anyhow::anyhow!("training estimate: {e}"))?;
    }
    let mut solved = None;
    if a.infer {
        // A requested inference budget that cannot be computed is an error, not a warning.
        let o = device.overheads();
        vram_core::infer::estimate_inference(&spec, &scenario, &o)
            .map_err(|e| anyhow::anyhow!("inference estimate: {e}"))?;
        if a.serving.solve {
            solved = Some((
                vram_core::infer::max_context(&spec, &scenario, &o)?,
                vram_core::infer::max_batch(&spec, &scenario, &o)?,
            ));
        }
    }
    let doc = estimate_on(&spec, &scenario, sections, device);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print!("{}", render::model_and_params(&doc));
        if let Some(t) = &doc.train {
            print!("{}", crate::render_train::training(t));
        }
        if let Some(i) = &doc.infer {
            print!("{}", crate::render_infer::inference(i));
        }
        if device == vram_core::Device::Cpu && (doc.train.is_some() || doc.infer.is_some()) {
            println!(
                "\nDevice cpu: the allocated and peak-allocated figures are exact live-tensor bytes as `vram measure --device cpu` counts them (PyTorch's CPU kernels, no CUDA context or workspace); reserved and device totals are CUDA's and do not apply."
            );
        }
        if let Some((ctx, batch)) = solved {
            println!(
                "\nSolve: longest context at batch {} = {ctx} tokens; most sequences at {} tokens = {batch}",
                scenario.batch, scenario.seq_len
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
