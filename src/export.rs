//! Exports: the breakdown table as CSV and Markdown, and the estimate as JSON in the schema of
//! `vram estimate --json` (the core's `Estimate`, computed by `vram_core::estimate`).

use crate::compute::Breakdown;
use crate::load::LoadedModel;
use vram_core::{estimate, Estimate, Scenario, Sections};

/// CSV: one row per component, one column per phase, bytes (exact integers), then the peak row.
pub fn breakdown_csv(mode: &str, b: &Breakdown) -> String {
    let mut out = String::from("mode,component");
    for p in &b.phases {
        out.push(',');
        out.push_str(p);
    }
    out.push('\n');
    for r in &b.rows {
        out.push_str(&format!("{mode},{}", r.key));
        for c in &r.cells {
            out.push_str(&format!(",{c}"));
        }
        out.push('\n');
    }
    out.push_str(&format!("{mode},peak_allocated"));
    for c in &b.peaks {
        out.push_str(&format!(",{c}"));
    }
    out.push('\n');
    out
}

/// Markdown table in GiB with two decimals.
pub fn breakdown_markdown(title: &str, b: &Breakdown) -> String {
    let gib = |x: u64| format!("{:.2}", x as f64 / (1u64 << 30) as f64);
    let mut out = format!("### {title} (GiB)\n\n| component |");
    for p in &b.phases {
        out.push_str(&format!(" {p} |"));
    }
    out.push_str("\n|---|");
    for _ in &b.phases {
        out.push_str("---:|");
    }
    out.push('\n');
    for r in &b.rows {
        out.push_str(&format!("| {} |", r.key));
        for c in &r.cells {
            out.push_str(&format!(" {} |", gib(*c)));
        }
        out.push('\n');
    }
    out.push_str("| **peak allocated** |");
    for c in &b.peaks {
        out.push_str(&format!(" **{}** |", gib(*c)));
    }
    out.push('\n');
    out
}

/// The estimate document for one scenario, as `vram estimate --json --train` or `--infer` prints it.
pub fn estimate_doc(model: &LoadedModel, scenario: &Scenario, train: bool) -> Estimate {
    estimate(
        &model.spec,
        scenario,
        Sections {
            train,
            infer: !train,
        },
    )
}
