//! `vram`: estimate, measure and watch GPU memory of transformer models.
//!
//! Thin entry point: parse arguments, run the command, print any error once as one line, exit 2 on
//! user errors (bad file, bad config, bad scenario), as the CLI contract in docs/cli.md says.

mod args;
mod estimate_cmd;
mod fit_cmd;
mod gpus;
mod layout_args;
mod llama_args;
mod load;
mod measure;
mod nvml;
mod plan_cmd;
mod render;
mod render_infer;
mod render_train;
mod scenario_args;
mod serving_args;
mod watch;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    let result = match cli.command {
        args::Command::Estimate(a) => estimate_cmd::run(&a),
        args::Command::Measure(a) => measure::run(&a),
        args::Command::Watch(a) => watch::run(&a),
        args::Command::Gpus(a) => gpus::run(&a),
        args::Command::Fit(a) => fit_cmd::run(&a),
        args::Command::Plan(a) => plan_cmd::run(&a),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}
