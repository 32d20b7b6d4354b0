//! The human table of `vram measure`.

use super::report::{MeasureReport, Outcome};
use vram_core::units::{format_gib, group_thousands, to_gib};

/// The scenario in one line.
fn scenario_line(r: &MeasureReport) -> String {
    let s = &r.scenario;
    let mode = serde_json::to_value(s.mode)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default();
    let mut parts = vec![mode, s.dtype.name().to_string()];
    let mp = serde_json::to_value(s.mixed_precision)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default();
    if mp != "none" {
        parts.push(format!("{mp} autocast"));
    }
    if r.measured.optimizer_impl.is_some() {
        let o = serde_json::to_value(s.optimizer)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default();
        parts.push(o);
    }
    parts.push(format!("batch {} × seq {}", s.batch, s.seq_len));
    let attn = serde_json::to_value(s.attention)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default();
    parts.push(attn);
    if s.grad_checkpointing {
        parts.push("grad checkpointing".into());
    }
    if let Some(l) = &s.lora {
        parts.push(format!("LoRA r {} α {}", l.r, l.alpha));
    }
    parts.join(", ")
}

fn row(out: &mut String, label: &str, bytes: u64) {
    out.push_str(&format!(
        "  {:<22}{:>20}{:>12}\n",
        label,
        group_thousands(bytes),
        format_gib(bytes)
    ));
}

/// The report as tables: components, then phases.
pub fn table(r: &MeasureReport) -> String {
    let m = &r.measured;
    let mut out = String::new();
    let class = r.model.as_ref().map_or("not built", |m| m.class.as_str());
    out.push_str(&format!("Model     {} ({class})\n", r.config.name));
    if !r.config.overrides.is_empty() {
        let o: Vec<String> = r
            .config
            .overrides
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        out.push_str(&format!("Overrides {}\n", o.join(", ")));
    }
    out.push_str(&format!("Scenario  {}\n", scenario_line(r)));
    let counting = if m.counting == "cpu-exact" {
        "exact live-tensor bytes (CPU allocator)"
    } else {
        "torch.cuda allocator statistics + NVML"
    };
    out.push_str(&format!(
        "Device    {} {} — {}\n",
        r.device.kind, r.device.name, counting
    ));
    out.push_str(&format!(
        "Versions  torch {}, transformers {}{}\n\n",
        r.environment.torch,
        r.environment.transformers.as_deref().unwrap_or("?"),
        r.device
            .driver
            .as_deref()
            .map(|d| format!(", driver {d}"))
            .unwrap_or_default()
    ));
    out.push_str(&format!("{:<24}{:>20}{:>12}\n", "Components", "bytes", ""));
    if let Some(w) = m.weights_bytes {
        row(&mut out, "weights", w);
    }
    if let Some(b) = m.buffers_bytes.filter(|b| *b > 0) {
        row(&mut out, "buffers", b);
    }
    if let Some(g) = m.gradients_bytes {
        row(&mut out, "gradients", g);
    }
    if let Some(o) = m.optimizer_bytes {
        row(&mut out, "optimizer states", o);
    }
    if let Some(k) = m.kv_cache_bytes {
        row(&mut out, "KV cache (prefill)", k);
    }
    let trainable = m.trainable_params_peft.or(m.trainable_params).unwrap_or(0);
    if let (true, Some(total)) = (trainable > 0, m.total_params) {
        out.push_str(&format!(
            "  {:<22}{:>20}  of {}\n",
            "trainable params",
            group_thousands(trainable),
            group_thousands(total)
        ));
    }
    out.push('\n');
    let cuda = m.phases.iter().any(|p| p.reserved_bytes.is_some());
    out.push_str(&format!(
        "{:<14}{:>14}{:>16}",
        "Phase", "allocated GiB", "peak alloc GiB"
    ));
    if cuda {
        out.push_str(&format!("{:>14}{:>14}", "reserved GiB", "device GiB"));
    }
    out.push_str(&format!("{:>22}\n", "peak allocated bytes"));
    for p in &m.phases {
        out.push_str(&format!(
            "  {:<12}{:>14.3}{:>16.3}",
            p.name,
            to_gib(p.allocated_bytes),
            to_gib(p.peak_allocated_bytes)
        ));
        if cuda {
            let dev = p
                .device_bytes
                .map(|d| format!("{:.3}", to_gib(d)))
                .unwrap_or_else(|| "n/a".into());
            out.push_str(&format!(
                "{:>14.3}{:>14}",
                to_gib(p.reserved_bytes.unwrap_or(0)),
                dev
            ));
        }
        out.push_str(&format!(
            "{:>22}\n",
            group_thousands(p.peak_allocated_bytes)
        ));
    }
    out.push('\n');
    match r.outcome {
        Outcome::Ok => out.push_str(&format!(
            "Peak allocated {} ({} B) in phase {}\n",
            format_gib(m.peak_allocated_bytes),
            group_thousands(m.peak_allocated_bytes),
            m.peak_phase
        )),
        Outcome::DoesNotFit => {
            if let Some(f) = &r.failure {
                out.push_str(&format!("{}\n", f.message));
            }
        }
    }
    if let Some(p) = m.peak_reserved_bytes {
        out.push_str(&format!("Peak reserved  {}\n", format_gib(p)));
    }
    if let Some(p) = m.peak_device_bytes {
        out.push_str(&format!(
            "Peak device (NVML, this process) {}\n",
            format_gib(p)
        ));
    }
    if let Some(e) = &r.estimate {
        out.push_str(&format!("\nEstimate vs measurement ({})\n", e.source));
        out.push_str(&format!(
            "  {:<14}{:>20}{:>20}{:>10}\n",
            "", "estimated B", "measured B", "error"
        ));
        let rows = e
            .components
            .iter()
            .chain(e.phases.iter().map(|p| &p.peak_allocated))
            .chain(std::iter::once(&e.peak_allocated));
        for d in rows {
            let err = d
                .error_percent
                .map_or_else(|| "-".to_string(), |p| format!("{p:+.2} %"));
            out.push_str(&format!(
                "  {:<14}{:>20}{:>20}{:>10}\n",
                d.key,
                group_thousands(d.estimated_bytes),
                group_thousands(d.measured_bytes),
                err
            ));
        }
    }
    for n in &r.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

/// The per-rank summary of a `vram measure --nproc N` run: model states and the steady-state phase
/// peaks of every rank, measured against the core's per-rank estimate.
pub fn ranks_table(doc: &super::report::RanksReport) -> String {
    let mut out = String::new();
    if let Some(first) = doc.ranks.first() {
        out.push_str(&format!(
            "Model     {} on {} ranks ({})\n",
            first.config.name, doc.nproc, first.device.kind
        ));
    }
    out.push_str("\nrank  component            measured B      estimated B      error\n");
    for (rank, r) in doc.ranks.iter().enumerate() {
        let Some(est) = &r.estimate else {
            out.push_str(&format!("{rank:<5} (no estimate)\n"));
            continue;
        };
        let rows = est.components.iter().map(|d| (d.key.clone(), d)).chain(
            est.phases
                .iter()
                .filter(|p| p.name.ends_with("_2"))
                .map(|p| (format!("{} peak", p.name), &p.peak_allocated)),
        );
        for (key, d) in rows {
            out.push_str(&format!(
                "{rank:<5} {key:<20}{:>15}{:>17}{:>11}\n",
                vram_core::units::group_thousands(d.measured_bytes),
                vram_core::units::group_thousands(d.estimated_bytes),
                d.error_percent
                    .map_or_else(|| "—".to_string(), |p| format!("{p:+.1} %"))
            ));
        }
    }
    out
}
