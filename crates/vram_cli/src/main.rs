//! `vram`: estimate, measure and watch GPU memory of transformer models.
//!
//! Thin entry point: parse arguments, run the command, print any error once as one line, exit 2 on
//! user errors (bad file, bad config, bad scenario), as the CLI contract in docs/cli.md says.

mod args;
mod estimate_cmd;
mod load;
mod render;
mod scenario_args;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    let result = match cli.command {
        args::Command::Estimate(a) => estimate_cmd::run(&a),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}
