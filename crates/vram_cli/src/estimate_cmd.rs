//! `vram estimate`: the model summary, exact parameters and the memory budgets.

use crate::args::EstimateArgs;
use crate::load::load_config;
use crate::render;
use std::process::ExitCode;
use vram_core::scenario::Mode;
use vram_core::{estimate, Sections};

pub fn run(a: &EstimateArgs) -> anyhow::Result<ExitCode> {
    let spec = load_config(&a.config)?;
    let mode = if a.infer && !a.train {
        Mode::Infer
    } else {
        Mode::Train
    };
    let scenario = a.scenario.to_scenario(mode)?;
    let sections = Sections {
        train: a.train,
        infer: a.infer,
    };
    let doc = estimate(&spec, &scenario, sections);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print!("{}", render::model_and_params(&doc));
    }
    Ok(ExitCode::SUCCESS)
}
