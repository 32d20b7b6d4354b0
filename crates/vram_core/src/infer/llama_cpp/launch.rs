//! Command lines for a llama.cpp placement: `llama-server` flags (llama.cpp `common/arg.cpp`) and
//! the ollama settings that give the same context (`num_ctx` per sequence ×
//! `OLLAMA_NUM_PARALLEL`, `num_gpu` layers, `OLLAMA_FLASH_ATTENTION`, `OLLAMA_KV_CACHE_TYPE`).

use super::LlamaCppEstimate;
use crate::scenario::{FlashAttn, LlamaCppInputs};
use serde::{Deserialize, Serialize};

/// Copyable launch lines.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launch {
    /// `llama-server -m … -c … -ngl … -fa …`.
    pub llama_server: String,
    /// Environment of `ollama serve` (one `KEY=value` per entry).
    pub ollama_env: Vec<String>,
    /// Modelfile lines (`PARAMETER num_ctx …`, `PARAMETER num_gpu …`).
    pub ollama_modelfile: Vec<String>,
}

fn trim_float(f: f64) -> String {
    let s = format!("{f:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The lines for `est` (made under `inputs`) with the model file `gguf_name`; `n_ctx` as the user
/// gave it (llama.cpp pads it itself).
pub fn lines(
    est: &LlamaCppEstimate,
    inputs: &LlamaCppInputs,
    gguf_name: &str,
    n_ctx: u64,
) -> Launch {
    let mut a = vec![
        "llama-server".to_string(),
        "-m".into(),
        if gguf_name.is_empty() {
            "model.gguf".into()
        } else {
            gguf_name.to_string()
        },
        "-c".into(),
        n_ctx.to_string(),
    ];
    if est.n_seq > 1 {
        a.push("-np".into());
        a.push(est.n_seq.to_string());
    }
    a.push("-ngl".into());
    a.push(if est.n_gpu_layers > est.n_layer {
        "99".into()
    } else {
        est.n_gpu_layers.to_string()
    });
    a.push("-fa".into());
    a.push(
        match inputs.flash_attn {
            FlashAttn::Auto => "auto",
            FlashAttn::On => "on",
            FlashAttn::Off => "off",
        }
        .into(),
    );
    if est.type_k != "f16" {
        a.push("-ctk".into());
        a.push(est.type_k.clone());
    }
    if est.type_v != "f16" {
        a.push("-ctv".into());
        a.push(est.type_v.clone());
    }
    if inputs.n_ubatch != 512 {
        a.push("-ub".into());
        a.push(inputs.n_ubatch.to_string());
    }
    if inputs.n_batch != 2048 {
        a.push("-b".into());
        a.push(inputs.n_batch.to_string());
    }
    if inputs.cpu_moe {
        a.push("--cpu-moe".into());
    } else if inputs.n_cpu_moe > 0 {
        a.push("--n-cpu-moe".into());
        a.push(inputs.n_cpu_moe.to_string());
    }
    if inputs.tensor_split.len() > 1 {
        a.push("--tensor-split".into());
        a.push(
            inputs
                .tensor_split
                .iter()
                .map(|f| trim_float(*f))
                .collect::<Vec<_>>()
                .join(","),
        );
    }
    if inputs.no_kv_offload {
        a.push("--no-kv-offload".into());
    }
    if inputs.swa_full {
        a.push("--swa-full".into());
    }
    if est.n_seq > 1 && inputs.kv_unified {
        a.push("--kv-unified".into());
    }
    let mut env = vec![format!("OLLAMA_NUM_PARALLEL={}", est.n_seq)];
    if est.flash_attn {
        env.push("OLLAMA_FLASH_ATTENTION=1".into());
    }
    if est.type_k != "f16" {
        env.push(format!("OLLAMA_KV_CACHE_TYPE={}", est.type_k));
    }
    let per_seq = n_ctx / est.n_seq.max(1);
    let mut modelfile = vec![format!("PARAMETER num_ctx {per_seq}")];
    if est.n_gpu_layers <= est.n_layer {
        modelfile.push(format!("PARAMETER num_gpu {}", est.n_gpu_layers));
    }
    Launch {
        llama_server: a.join(" "),
        ollama_env: env,
        ollama_modelfile: modelfile,
    }
}
