//! Prints the table of bundled configs with computed vs published parameter counts (Markdown).
//! `cargo run -p vram_core --example count_table`

use vram_core::presets::PRESETS;
use vram_core::{parse_config, ParamCounts};

fn main() {
    println!("| config | model_type | computed | reference | active | match |");
    println!("|---|---|---:|---:|---:|---|");
    for p in PRESETS {
        match parse_config(p.json, Some(p.id)) {
            Ok(spec) => {
                let c = ParamCounts::of(&spec);
                let ok = match (c.total == p.published_params, p.published_rounded) {
                    (true, "") => "exact (published)".to_string(),
                    (true, rounded) => format!("exact (transformers; published {rounded})"),
                    (false, _) => "MISMATCH".to_string(),
                };
                println!(
                    "| {} | {} | {} | {} | {} | {ok} |",
                    p.id, spec.model_type, c.total, p.published_params, c.active
                );
            }
            Err(e) => println!(
                "| {} | - | error: {e} | {} | - | - |",
                p.id, p.published_params
            ),
        }
    }
}
