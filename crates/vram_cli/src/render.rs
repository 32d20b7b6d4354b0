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
