//! The vLLM start-up table of docs/accuracy.md: every published log of
//! `tests/data/vllm_startup_logs.json` next to the estimate
//! (`cargo run -p vram_core --example vllm_accuracy`).

#[path = "../tests/vllm_logs/mod.rs"]
mod vllm_logs;

fn main() {
    let rows = vllm_logs::rows();
    println!("| case | model | vLLM | GPU | TP | logged | estimated | error | parts: logged / estimated GiB |");
    println!("|---|---|---|---|---:|---:|---:|---:|---|");
    let mut errors = Vec::new();
    for r in &rows {
        let parts: Vec<String> = r
            .logged_parts
            .iter()
            .map(|(n, l, e)| format!("{n} {l:.2} / {e:.2}"))
            .collect();
        let fmt = |x: f64| {
            if matches!(r.logged, vllm_logs::Capacity::KvGib(_)) {
                format!("{x:.2} GiB")
            } else {
                format!("{x:.0} {}", r.unit())
            }
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {:+.1} %{} | {} |",
            r.id,
            r.label,
            r.version,
            r.gpu,
            r.tp,
            fmt(r.logged_value),
            fmt(r.estimated),
            r.error_percent(),
            if r.outlier.is_some() {
                " (outlier)"
            } else {
                ""
            },
            parts.join("; ")
        );
        if r.outlier.is_none() {
            errors.push(r.error_percent().abs());
        }
    }
    errors.sort_by(f64::total_cmp);
    let median = errors.get(errors.len() / 2).copied().unwrap_or(0.0);
    let max = errors.last().copied().unwrap_or(0.0);
    println!(
        "\n{} logs ({} outliers listed apart): median |error| {median:.1} %, max {max:.1} %",
        rows.len(),
        rows.len() - errors.len()
    );
}
