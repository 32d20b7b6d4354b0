//! Human-readable inference budget: weights, KV cache, activations, phases, the vLLM start-up
//! figures, and each term's formula with its source.

use vram_core::infer::InferEstimate;
use vram_core::units::{format_gib, group_thousands};

/// The inference section of `vram estimate --infer`.
pub fn inference(e: &InferEstimate) -> String {
    let mut out = String::new();
    out.push_str(&format!("\nInference ({})\n", e.engine.description));
    let row = |k: &str, b: u64| format!("  {:<44}{:>12}\n", k, format_gib(b));
    out.push_str(&row(
        &format!(
            "weights ({}, from {})",
            e.weights_format, e.weights_format_source
        ),
        e.weights_bytes,
    ));
    out.push_str(&row(
        &format!(
            "KV cache ({} B/token, {})",
            group_thousands(e.kv_bytes_per_token),
            e.engine.kv_dtype.name()
        ),
        e.kv_cache_bytes,
    ));
    out.push_str(&row("activations (peak)", e.activations_bytes));
    out.push_str(&row("peak allocated", e.peak_allocated_bytes));
    out.push_str(&row("device total", e.device_bytes));
    out.push_str("\n  phase       allocated        peak\n");
    for p in &e.phases {
        out.push_str(&format!(
            "  {:<8}{:>13}{:>13}\n",
            p.name,
            format_gib(p.allocated_bytes),
            format_gib(p.peak_allocated_bytes)
        ));
    }
    let v = &e.serving;
    out.push_str(&format!(
        "\nvLLM start-up (GPU {} × {}, TP {}, max_model_len {}):\n",
        format_gib(v.inputs.gpu_memory_bytes),
        v.inputs.gpu_memory_utilization,
        v.inputs.tensor_parallel_size,
        group_thousands(v.max_model_len)
    ));
    out.push_str(&format!(
        "  model weights {} ; non_torch {} ; activation peak {} ; KV cache {}\n",
        format_gib(v.weights_per_gpu_bytes),
        format_gib(v.non_torch_bytes),
        format_gib(v.activation_peak_bytes),
        format_gib(v.kv_pool_bytes)
    ));
    out.push_str(&format!(
        "  GPU KV cache size: {} tokens ; max concurrency {:.2}x at {} tokens ; {:.2}x at this context{}\n",
        group_thousands(v.kv_tokens),
        v.max_concurrency,
        group_thousands(v.max_model_len),
        v.concurrency_at_context,
        if v.fits { "" } else { " ; does NOT start (not enough KV memory for one request)" }
    ));
    out.push_str("\nHow:\n");
    for t in e.terms.iter().chain(v.terms.iter()) {
        out.push_str(&format!(
            "  {:<24}{}\n  {:<24}source: {}\n",
            t.key, t.formula, "", t.source
        ));
    }
    for n in &e.notes {
        out.push_str(&format!("\nnote: {n}\n"));
    }
    out
}
