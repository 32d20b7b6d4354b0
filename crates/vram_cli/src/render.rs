//! Human-readable tables for the terminal.

use vram_core::estimate::Estimate;
use vram_core::units::{format_count, group_thousands};

/// The model summary and the parameter breakdown.
pub fn model_and_params(e: &Estimate) -> String {
    let m = &e.model;
    let p = &e.parameters;
    let mut out = String::new();
    out.push_str(&format!(
        "Model     {} ({:?}, model_type {})\n",
        m.name, m.kind, m.model_type
    ));
    out.push_str(&format!(
        "Shape     {} layers, hidden {}, {} heads / {} KV heads × {}, vocab {}{}\n",
        m.num_layers,
        m.hidden_size,
        m.num_attention_heads,
        m.num_kv_heads,
        m.head_dim,
        m.vocab_size,
        if m.tie_word_embeddings {
            ", tied embeddings"
        } else {
            ""
        }
    ));
    if m.num_experts > 0 {
        out.push_str(&format!(
            "MoE       {} experts, {} per token\n",
            m.num_experts, m.experts_per_token
        ));
    }
    out.push('\n');
    out.push_str(&format!("{:<22}{:>20}{:>12}\n", "Parameters", "count", ""));
    for (component, n) in &p.by_component {
        let name = serde_json::to_value(component)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default();
        out.push_str(&format!(
            "  {:<20}{:>20}{:>12}\n",
            name,
            group_thousands(*n),
            format_count(*n)
        ));
    }
    out.push_str(&format!(
        "  {:<20}{:>20}{:>12}\n",
        "total",
        group_thousands(p.total),
        format_count(p.total)
    ));
    if p.active != p.total {
        out.push_str(&format!(
            "  {:<20}{:>20}{:>12}\n",
            "active per token",
            group_thousands(p.active),
            format_count(p.active)
        ));
    }
    if p.buffers > 0 {
        out.push_str(&format!(
            "  {:<20}{:>20}{:>12}\n",
            "of which buffers",
            group_thousands(p.buffers),
            format_count(p.buffers)
        ));
    }
    for w in &e.warnings {
        out.push_str(&format!("\nwarning: {w}\n"));
    }
    out
}

/// The output of `vram estimate` for safetensors headers (or an index) without a config: the exact
/// count and bytes; `{"schema_version", "checkpoint"}` as JSON.
pub fn checkpoint_only(
    c: &vram_core::checkpoint::CheckpointCount,
    json: bool,
) -> anyhow::Result<std::process::ExitCode> {
    if json {
        let doc = serde_json::json!({
            "schema_version": vram_core::estimate::SCHEMA_VERSION,
            "checkpoint": c,
        });
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(std::process::ExitCode::SUCCESS);
    }
    println!(
        "Checkpoint headers: {} files, {} tensors",
        c.files,
        group_thousands(c.tensors)
    );
    if c.params > 0 {
        println!(
            "  parameters                {:>20}  {}",
            group_thousands(c.params),
            format_count(c.params)
        );
    }
    println!(
        "  weight bytes              {:>20}  {:.2} GiB",
        group_thousands(c.data_bytes),
        c.data_bytes as f64 / (1u64 << 30) as f64
    );
    for d in &c.by_dtype {
        println!(
            "  {:<8} {:>6} tensors {:>20} params {:>18} B",
            d.dtype,
            d.tensors,
            group_thousands(d.params),
            group_thousands(d.bytes)
        );
    }
    if let Some(q) = &c.quantization {
        println!(
            "  quantized layout: {q} (quantization state {} B)",
            group_thousands(c.quant_state_bytes)
        );
    }
    if c.params == 0 {
        println!("  (from the index: give the shard files too for the parameter count per dtype)");
    }
    Ok(std::process::ExitCode::SUCCESS)
}
