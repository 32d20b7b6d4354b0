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
    out.push_str(if e.devices.is_empty() {
        "\n  phase       allocated        peak\n"
    } else {
        "\n  phase       allocated        peak   (all GPUs together; per GPU below)\n"
    });
    for p in &e.phases {
        out.push_str(&format!(
            "  {:<8}{:>13}{:>13}\n",
            p.name,
            format_gib(p.allocated_bytes),
            format_gib(p.peak_allocated_bytes)
        ));
    }
    if let Some(l) = &e.llama_cpp {
        out.push_str(&llama_cpp(l));
    } else {
        out.push_str(&vllm(e));
    }
    if !e.devices.is_empty() {
        out.push_str("\n  device_map=\"auto\" per GPU     layers     weights    KV cache   activations      device\n");
        for d in &e.devices {
            out.push_str(&format!(
                "  GPU {:<3}{:<22}{:>10}{:>12}{:>12}{:>14}{:>12}\n",
                d.device,
                format!(
                    "{}{}",
                    if d.embedding { "embedding " } else { "" },
                    if d.head { "head" } else { "" }
                ),
                format!(
                    "{}–{}",
                    d.first_layer,
                    (d.first_layer + d.layers).saturating_sub(1)
                ),
                format_gib(d.weights_bytes),
                format_gib(d.kv_cache_bytes),
                format_gib(d.activations_bytes),
                format_gib(d.device_bytes)
            ));
        }
    }
    out.push_str(&how(e));
    out
}

/// llama.cpp's start-up lines, as it prints them (MiB).
fn llama_cpp(l: &vram_core::infer::llama_cpp::LlamaCppEstimate) -> String {
    let mib = |b: u64| format!("{:.2} MiB", b as f64 / (1u64 << 20) as f64);
    let mut out = format!(
        "\nllama.cpp start-up (n_ctx {}, n_seq {}, ubatch {}, flash attention {}, -ngl {}: {}/{} layers{}):\n",
        l.n_ctx,
        l.n_seq,
        l.n_ubatch,
        if l.flash_attn { "on" } else { "off" },
        l.n_gpu_layers,
        l.layers_on_gpu,
        l.n_layer,
        if l.output_on_gpu { " + output" } else { "" }
    );
    out.push_str(&format!(
        "  CPU_Mapped model buffer size = {}\n",
        mib(l.weights_host_bytes)
    ));
    for d in &l.devices {
        out.push_str(&format!(
            "  {} model buffer size = {}\n",
            d.device,
            mib(d.weights_bytes)
        ));
    }
    out.push_str(&format!(
        "  KV cache: {} cells{}, K ({}) {}, V ({}) {}; host {}\n",
        l.cells,
        if l.swa_cells > 0 {
            format!(" + SWA {} cells", l.swa_cells)
        } else {
            String::new()
        },
        l.type_k,
        mib(l.kv_k_bytes),
        l.type_v,
        mib(l.kv_v_bytes),
        mib(l.kv_host_bytes)
    ));
    for d in &l.devices {
        out.push_str(&format!(
            "  {} KV buffer size = {}; compute buffer size = {}; total {}\n",
            d.device,
            mib(d.kv_bytes),
            mib(d.compute_bytes),
            mib(d.total_bytes)
        ));
    }
    out.push_str(&format!(
        "  host compute buffer size = {}; output buffer size = {}; host total {}\n",
        mib(l.compute_host_bytes),
        mib(l.output_bytes),
        mib(l.host_total_bytes)
    ));
    out.push_str(&format!("  launch: {}\n", l.launch.llama_server));
    out.push_str(&format!(
        "  ollama: {} ollama serve; Modelfile: {}\n",
        l.launch.ollama_env.join(" "),
        l.launch.ollama_modelfile.join("; ")
    ));
    out
}

fn vllm(e: &InferEstimate) -> String {
    let mut out = String::new();
    let v = &e.serving;
    out.push_str(&format!(
        "\nvLLM {} start-up ({}, GPU {} × {}, TP {}, max_model_len {}, {} sequences × {} batched tokens):\n",
        v.inputs.vllm_version,
        match v.inputs.usage {
            vram_core::scenario::VllmUsage::Serve => "vllm serve",
            vram_core::scenario::VllmUsage::Offline => "LLM() offline",
        },
        format_gib(v.inputs.gpu_memory_bytes),
        v.inputs.gpu_memory_utilization,
        v.inputs.tensor_parallel_size,
        group_thousands(v.max_model_len),
        group_thousands(v.inputs.max_num_seqs),
        group_thousands(v.inputs.max_num_batched_tokens)
    ));
    out.push_str(&format!(
        "  model weights {} ; non_torch {} ; activation peak {} (sampler {}) ; KV cache {}\n",
        format_gib(v.weights_per_gpu_bytes),
        format_gib(v.non_torch_bytes),
        format_gib(v.activation_peak_bytes),
        format_gib(v.sampler_bytes),
        format_gib(v.kv_pool_bytes)
    ));
    if v.cuda_graph_bytes > 0 {
        out.push_str(&format!(
            "  CUDA graphs {} ({})\n",
            format_gib(v.cuda_graph_bytes),
            if v.budget.counts_cuda_graphs() {
                "inside the budget"
            } else {
                "captured after the KV cache: on the GPU beyond gpu_memory_utilization"
            }
        ));
    }
    out.push_str(&format!(
        "  GPU KV cache size: {} tokens ; max concurrency {:.2}x at {} tokens ; {:.2}x at this context{}\n",
        group_thousands(v.kv_tokens),
        v.max_concurrency,
        group_thousands(v.max_model_len),
        v.concurrency_at_context,
        if v.fits { "" } else { " ; does NOT start (not enough KV memory for one request)" }
    ));
    out
}

/// The explained terms and notes.
fn how(e: &InferEstimate) -> String {
    let mut out = String::new();
    let v = &e.serving;
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
