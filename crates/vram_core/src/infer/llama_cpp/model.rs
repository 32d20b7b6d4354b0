//! A model as llama.cpp loads it: per layer, the bytes of its weights (expert tensors apart, for
//! `--n-cpu-moe`), its largest tensor (what an offloaded matmul copies), and what it caches; the
//! input embedding and the output layer apart, because llama.cpp places them on their own
//! (`llama_model::load_tensors`: the input layer always on the CPU, the output layer as layer
//! `n_layer`).
//!
//! Built from a resolved [`ModelSpec`] with the tensor types `llama-quantize` writes
//! ([`super::super::gguf::tensor_types`]), or from a GGUF file's header (exact bytes per tensor).

use crate::infer::format::GgufPreset;
use crate::infer::gguf::{self as quant, GgmlType};
use crate::scenario::Dtype;
use crate::spec::{Component, ModelKind, ModelSpec};
use serde::{Deserialize, Serialize};

/// Alignment of every tensor in a CUDA/Metal/CPU buffer and in a GGUF data section
/// (`GGUF_DEFAULT_ALIGNMENT` = 32; CUDA buffers align to 128: `ggml_backend_cuda_buffer_type_get_alignment`).
pub const DEVICE_TENSOR_ALIGNMENT: u64 = 128;

/// What a layer keeps per cache cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum LayerCacheKind {
    /// No cache (a layer that reuses another layer's KV, or an attention-free MLP layer).
    None,
    /// Attention: `n_embd_k_gqa` K and `n_embd_v_gqa` V elements per cell.
    Attention {
        /// `hparams.n_embd_k_gqa(il)`: K elements per cell.
        k_elements: u64,
        /// `hparams.n_embd_v_gqa(il)`: V elements per cell (0 when V is a view of K: MLA).
        v_elements: u64,
        /// Whether the layer attends through a sliding window (its cache is the SWA cache).
        swa: bool,
    },
    /// A recurrent state (mamba): `r` (conv) and `s` (ssm) f32 elements per sequence.
    Recurrent {
        /// `hparams.n_embd_r()`.
        r_elements: u64,
        /// `hparams.n_embd_s()`.
        s_elements: u64,
    },
}

/// One repeating layer (`blk.N`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlamaLayer {
    /// Bytes of the layer's tensors other than the routed experts, each padded to the device
    /// alignment.
    pub weights_bytes: u64,
    /// Bytes of the routed-expert tensors (`ffn_{gate,up,down}_exps`).
    pub expert_bytes: u64,
    /// The largest single tensor of the layer (what an op offloaded from the CPU copies).
    pub largest_tensor_bytes: u64,
    /// The cache.
    pub cache: LayerCacheKind,
    /// Query heads (0 without attention).
    pub n_head: u64,
    /// K width per head.
    pub head_dim_k: u64,
    /// V width per head.
    pub head_dim_v: u64,
    /// Dense FFN width (0 for MoE layers).
    pub n_ff: u64,
    /// Routed-expert FFN width (0 for dense layers).
    pub n_ff_exp: u64,
    /// Shared-expert FFN width.
    pub n_ff_shexp: u64,
    /// Routed experts.
    pub n_expert: u64,
    /// Experts per token.
    pub n_expert_used: u64,
}

/// The model as llama.cpp sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LlamaModel {
    /// Where the description came from: `gguf header` or `config + <preset>`.
    pub source: String,
    /// Residual width.
    pub n_embd: u64,
    /// Vocabulary (rows of the output matrix).
    pub n_vocab: u64,
    /// Training context (`n_ctx_train`), the default `-c 0`.
    pub n_ctx_train: u64,
    /// Sliding window of the SWA layers (0: none).
    pub n_swa: u64,
    /// The repeating layers.
    pub layers: Vec<LlamaLayer>,
    /// `token_embd.weight` (always in host memory).
    pub token_embd_bytes: u64,
    /// The output layer: `output_norm` and `output.weight` (or, when tied, the copy of
    /// `token_embd` llama.cpp creates for the output device: `TENSOR_DUPLICATED`).
    pub output_bytes: u64,
    /// Tensors outside the layers other than the embedding and output (position embeddings,
    /// vision tower, ...), kept with the input layer.
    pub other_host_bytes: u64,
    /// Parameters.
    pub params: u64,
    /// Tensor data bytes as in the file (no device padding).
    pub file_bytes: u64,
    /// Parameters per ggml type.
    pub params_by_type: Vec<(String, u64)>,
}

fn pad(x: u64, a: u64) -> u64 {
    x.div_ceil(a).saturating_mul(a)
}

/// One tensor as the builders see it.
pub(crate) struct TensorFacts {
    pub layer: Option<u64>,
    pub bytes: u64,
    pub numel: u64,
    pub type_name: &'static str,
    pub expert: bool,
    pub role: TensorRole,
}

/// Where a tensor outside the layers goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TensorRole {
    /// A layer's tensor.
    Layer,
    /// `token_embd`.
    TokenEmbd,
    /// `output` / `output_norm`.
    Output,
    /// Anything else outside the layers.
    Other,
}

impl LlamaModel {
    /// Sums tensors into layers. `cache` and the per-layer shapes come from the caller.
    pub(crate) fn assemble(
        source: String,
        tensors: impl Iterator<Item = TensorFacts>,
        mut layers: Vec<LlamaLayer>,
        tied_output_bytes: Option<u64>,
        (n_embd, n_vocab, n_ctx_train, n_swa): (u64, u64, u64, u64),
    ) -> LlamaModel {
        let mut token_embd_bytes = 0;
        let mut output_bytes = 0;
        let mut other_host_bytes = 0;
        let mut params = 0u64;
        let mut file_bytes = 0u64;
        let mut by_type: std::collections::BTreeMap<&'static str, u64> = Default::default();
        for t in tensors {
            params = params.saturating_add(t.numel);
            file_bytes = file_bytes.saturating_add(t.bytes);
            *by_type.entry(t.type_name).or_insert(0) += t.numel;
            let dev = pad(t.bytes, DEVICE_TENSOR_ALIGNMENT);
            match (t.role, t.layer) {
                (TensorRole::Layer, Some(l)) => {
                    if let Some(layer) = layers.get_mut(l as usize) {
                        if t.expert {
                            layer.expert_bytes += dev;
                        } else {
                            layer.weights_bytes += dev;
                        }
                        layer.largest_tensor_bytes = layer.largest_tensor_bytes.max(dev);
                    } else {
                        other_host_bytes += dev;
                    }
                }
                (TensorRole::TokenEmbd, _) => token_embd_bytes += dev,
                (TensorRole::Output, _) => output_bytes += dev,
                _ => other_host_bytes += dev,
            }
        }
        if let Some(b) = tied_output_bytes {
            output_bytes += pad(b, DEVICE_TENSOR_ALIGNMENT);
        }
        LlamaModel {
            source,
            n_embd,
            n_vocab,
            n_ctx_train,
            n_swa,
            layers,
            token_embd_bytes,
            output_bytes,
            other_host_bytes,
            params,
            file_bytes,
            params_by_type: by_type
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        }
    }

    /// Weight bytes on all devices together (the file's tensors plus a tied output's copy).
    pub fn total_weights_bytes(&self) -> u64 {
        let layers: u64 = self
            .layers
            .iter()
            .map(|l| l.weights_bytes + l.expert_bytes)
            .sum();
        layers + self.token_embd_bytes + self.output_bytes + self.other_host_bytes
    }

    /// Whether any layer has routed experts.
    pub fn has_experts(&self) -> bool {
        self.layers.iter().any(|l| l.expert_bytes > 0)
    }

    /// The model of `spec` stored as `weights` (a GGUF preset, or a float dtype for F16/BF16/F32
    /// files: 2-D tensors in that type, 1-D tensors F32, as `convert_hf_to_gguf.py` writes them).
    pub fn from_spec(spec: &ModelSpec, weights: LlamaWeights) -> LlamaModel {
        let types: Vec<GgmlType> = match weights {
            LlamaWeights::Gguf(p) => quant::tensor_types(spec, p),
            LlamaWeights::Float(d) => spec
                .instances()
                .map(|i| {
                    if i.tensor.shape.len() < 2 {
                        GgmlType::F32
                    } else {
                        match d {
                            Dtype::Fp32 => GgmlType::F32,
                            Dtype::Bf16 | Dtype::Fp16 => GgmlType::F16,
                        }
                    }
                })
                .collect(),
        };
        let bf16 = matches!(weights, LlamaWeights::Float(Dtype::Bf16));
        let has_output = spec
            .tensors
            .iter()
            .any(|t| t.component == Component::LmHead);
        let mut tied_output = None;
        let facts: Vec<TensorFacts> = spec
            .instances()
            .zip(types)
            .map(|(inst, ty)| {
                let t = inst.tensor;
                let n = t.numel();
                let bytes = quant::stored_bytes(spec, t, ty);
                let role = match (t.component, inst.layer) {
                    (_, Some(_)) => TensorRole::Layer,
                    (Component::Embedding, None) => TensorRole::TokenEmbd,
                    (Component::LmHead | Component::FinalNorm, None) => TensorRole::Output,
                    _ => TensorRole::Other,
                };
                if role == TensorRole::TokenEmbd && !has_output {
                    tied_output = Some(bytes);
                }
                let type_name = if bf16 && ty == GgmlType::F16 {
                    "BF16"
                } else {
                    ty.name()
                };
                TensorFacts {
                    layer: inst.layer.map(u64::from),
                    bytes,
                    numel: n,
                    type_name,
                    expert: t.component == Component::Experts,
                    role,
                }
            })
            .collect();
        let layers = spec_layers(spec);
        let n_swa = if !LLAMA_CPP_SWA_TYPES.contains(&spec.text_model_type.as_str()) {
            0
        } else {
            spec.layers
                .iter()
                .filter_map(|l| l.attention.and_then(|a| a.sliding_window))
                .max()
                .unwrap_or(0)
        };
        let source = match weights {
            LlamaWeights::Gguf(p) => format!("config.json + llama-quantize {}", p.name()),
            LlamaWeights::Float(d) => format!("config.json + convert_hf_to_gguf {}", d.name()),
        };
        LlamaModel::assemble(
            source,
            facts.into_iter(),
            layers,
            tied_output,
            (
                spec.hidden_size,
                spec.vocab_size,
                spec.max_position_embeddings,
                n_swa,
            ),
        )
    }
}

/// How the weights of a config-described model are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LlamaWeights {
    /// A `llama-quantize` preset.
    Gguf(GgufPreset),
    /// An unquantized conversion.
    Float(Dtype),
}

/// Per-layer shapes and caches of a spec (no weights yet).
/// Architectures whose sliding window llama.cpp honours (`llama_hparams::set_swa_pattern` callers);
/// llama, mistral, qwen2 and phi3 read `sliding_window` but attend fully.
const LLAMA_CPP_SWA_TYPES: &[&str] = &[
    "gemma2",
    "gemma3",
    "gemma3_text",
    "gemma3n",
    "cohere2",
    "gpt_oss",
    "llama4",
];

fn spec_layers(spec: &ModelSpec) -> Vec<LlamaLayer> {
    let swa_honoured = LLAMA_CPP_SWA_TYPES.contains(&spec.text_model_type.as_str());
    spec.layers
        .iter()
        .map(|l| {
            let mut out = LlamaLayer {
                weights_bytes: 0,
                expert_bytes: 0,
                largest_tensor_bytes: 0,
                cache: LayerCacheKind::None,
                n_head: 0,
                head_dim_k: 0,
                head_dim_v: 0,
                n_ff: 0,
                n_ff_exp: 0,
                n_ff_shexp: 0,
                n_expert: 0,
                n_expert_used: 0,
            };
            if let Some(a) = l.attention {
                out.n_head = a.num_heads;
                let (k, v) = match a.mla {
                    // llama.cpp's MLA (deepseek2): the cache holds the compressed latent and
                    // the rope key as one "head" (`n_embd_head_k_mla`), V is a view of it.
                    Some(m) => {
                        out.head_dim_k = m.kv_lora_rank + m.qk_rope_head_dim;
                        out.head_dim_v = m.kv_lora_rank;
                        (m.kv_lora_rank + m.qk_rope_head_dim, 0)
                    }
                    None => {
                        out.head_dim_k = a.head_dim;
                        out.head_dim_v = a.v_head_dim;
                        (
                            a.num_kv_heads.saturating_mul(a.head_dim),
                            a.num_kv_heads.saturating_mul(a.v_head_dim),
                        )
                    }
                };
                if spec.kind != ModelKind::EncoderOnly {
                    out.cache = LayerCacheKind::Attention {
                        k_elements: k,
                        v_elements: v,
                        swa: swa_honoured && a.sliding_window.is_some(),
                    };
                }
            }
            if let Some(s) = l.ssm {
                // llama-memory-recurrent: r = (d_conv − 1) × d_inner, s = d_state × d_inner (f32).
                out.cache = LayerCacheKind::Recurrent {
                    r_elements: s
                        .conv_kernel
                        .saturating_sub(1)
                        .saturating_mul(s.conv_channels()),
                    s_elements: s.state_size.saturating_mul(s.d_inner),
                };
            }
            match l.ffn {
                Some(crate::spec::FfnSpec::Dense {
                    intermediate_size, ..
                }) => out.n_ff = intermediate_size,
                Some(crate::spec::FfnSpec::Moe {
                    num_experts,
                    experts_per_token,
                    expert_intermediate_size,
                    shared_intermediate_size,
                    ..
                }) => {
                    out.n_expert = num_experts;
                    out.n_expert_used = experts_per_token;
                    out.n_ff_exp = expert_intermediate_size;
                    out.n_ff_shexp = shared_intermediate_size;
                }
                None => {}
            }
            out
        })
        .collect()
}
