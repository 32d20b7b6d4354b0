//! Human rendering of the training budget (`vram estimate --train`).

use vram_core::train::TrainEstimate;
use vram_core::units::{format_count, format_gib};

/// The training budget: headline totals, components with their formulas, and the phases.
pub fn training(t: &TrainEstimate) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "\nTraining (per GPU, {} GPU{}, ZeRO {}; params {} B, compute {} B{})\n",
        t.gpus,
        if t.gpus == 1 { "" } else { "s" },
        t.zero_stage,
        t.param_bytes,
        t.compute_bytes,
        if t.autocast { ", autocast" } else { "" }
    ));
    out.push_str(&format!(
        "  trainable {} ({}) · frozen {}\n",
        format_count(t.trainable_params),
        t.trainable_params,
        format_count(t.frozen_params)
    ));
    let rows = [
        ("weights", t.weights_bytes),
        ("gradients", t.gradients_bytes),
        ("optimizer states", t.optimizer_bytes),
        ("optimizer step temp", t.optimizer_temp_bytes),
        ("activations (fwd end)", t.activations_bytes),
        ("buffers", t.buffers_bytes),
    ];
    for (name, b) in rows {
        if b > 0 || name == "weights" {
            out.push_str(&format!("  {:<24}{:>14}\n", name, format_gib(b)));
        }
    }
    out.push_str(&format!(
        "  {:<24}{:>14}   (max_memory_allocated, in {})\n",
        "peak allocated",
        format_gib(t.peak_allocated_bytes),
        t.peak_phase
    ));
    out.push_str(&format!(
        "  {:<24}{:>14}   (max_memory_reserved)\n",
        "peak reserved",
        format_gib(t.peak_reserved_bytes)
    ));
    out.push_str(&format!(
        "  {:<24}{:>14}   (nvidia-smi: + CUDA context {} + workspace {})\n",
        "device total",
        format_gib(t.device_bytes),
        format_gib(t.cuda_context_bytes),
        format_gib(t.workspace_bytes)
    ));
    if t.cpu_offload_bytes > 0 {
        out.push_str(&format!(
            "  {:<24}{:>14}\n",
            "CPU RAM for offload",
            format_gib(t.cpu_offload_bytes)
        ));
    }
    if t.terms.iter().any(|x| x.key == "layout") {
        out.push_str(&ranks_table(t));
    }
    out.push_str("\n  Phase          allocated at end       peak\n");
    for p in &t.phases {
        out.push_str(&format!(
            "  {:<14}{:>17}{:>11}\n",
            p.name,
            format_gib(p.allocated_bytes),
            format_gib(p.peak_allocated_bytes)
        ));
    }
    out.push_str("\n  How each term is computed:\n");
    for term in &t.terms {
        out.push_str(&format!(
            "  - {}: {}\n      [{}]\n",
            term.key, term.formula, term.source
        ));
    }
    out
}

/// One row per kind of rank; the largest decides the verdict.
fn ranks_table(t: &TrainEstimate) -> String {
    let mut out = String::from(
        "\n  Per rank (GiB)     ranks layers   weights     grads optimizer  activ. (in flight)     comm.      peak    device\n",
    );
    for r in &t.ranks {
        let stages = if r.stage == r.last_stage {
            format!("stage {}", r.stage)
        } else {
            format!("stages {}-{}", r.stage, r.last_stage)
        };
        let gib = |b: u64| format!("{:.2}", b as f64 / (1u64 << 30) as f64);
        out.push_str(&format!(
            "  {:<18}{:>6}{:>7}{:>10}{:>10}{:>10}{:>10} ({:>3}){:>13}{:>10}{:>10}{}\n",
            stages,
            r.count,
            r.layers,
            gib(r.weights_bytes),
            gib(r.gradients_bytes),
            gib(r.optimizer_bytes),
            gib(r.activations_bytes),
            r.in_flight_micro_batches,
            gib(r.communication_bytes),
            gib(r.peak_allocated_bytes),
            gib(r.device_bytes),
            if r.device_bytes == t.max_rank_device_bytes {
                "  ← largest"
            } else {
                ""
            }
        ));
    }
    out
}
