//! The KV cache, per layer and per engine.
//!
//! - Full attention: `2 (K, V) × num_kv_heads × head_dim` elements per token and layer (GQA/MQA use
//!   their KV heads; `head_dim` is the config's, not `hidden/heads`). Vaswani et al.; transformers
//!   `DynamicLayer` stores `[batch, kv_heads, seq, head_dim]` for K and V.
//! - Sliding window (HF transformers 5, `cache_utils.py` `DynamicSlidingWindowLayer`): after each
//!   update the layer keeps `full_states[:, :, -window + 1:, :]`, a *view* of the concatenation, so
//!   right after a prefill of `S` tokens the storage of all `S` tokens stays alive; from the first
//!   decode step on, the storage is `min(S + 1, window)` tokens. vLLM (`SlidingWindowSpec`) frees the
//!   blocks that left the window: `⌈(window − 1) / block⌉ + 1` blocks per sequence at most.
//! - MLA (DeepSeek-V2/V3, Kimi-K2): vLLM caches the compressed latent and the shared rotary key,
//!   `kv_lora_rank + qk_rope_head_dim` elements per token and layer (`MLAAttentionSpec`, one "head",
//!   no separate V). HF transformers caches the same latent since 5.15 (`modeling_deepseek_v3.py`:
//!   "cache read / write is performed while the latent KV is still compressed"); 5.14 and earlier
//!   cached the decompressed per-head keys and values (the llama.cpp view below still describes
//!   those).
//! - State-space layers (mamba): a fixed state per sequence, `d_inner × (conv_kernel + state_size)`
//!   elements in HF `MambaCache`; vLLM keeps `conv_kernel − 1` conv columns (`MambaSpec`).
//! - Encoder–decoder (t5): cross-attention K/V of every encoder token in every decoder layer
//!   (`EncoderDecoderCache.cross_attention_cache`), besides the decoder's self-attention cache.
//! - KV dtype: fp8 is 1 B/element with per-layer fp32 scales (vLLM `--kv-cache-dtype fp8`); int8/int4
//!   are HF `QuantizedCache` (quanto/HQQ) with a scale and a zero point in the compute dtype per group
//!   of 64 (`q_group_size`), quantizing the whole prefill at once.
//! - vLLM pages: `block_size` (16; 64 for MLA backends) tokens per page, all layers of a sequence
//!   allocate whole pages; hybrid models use one page size for all layer groups (`kv_cache_utils.py`).

use crate::error::ScenarioError;
use crate::scenario::{Dtype, Engine};
use crate::spec::{ModelKind, ModelSpec};
use serde::{Deserialize, Serialize};

/// KV cache element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KvDtype {
    /// 4 bytes.
    Fp32,
    /// 2 bytes.
    Bf16,
    /// 2 bytes.
    Fp16,
    /// 1 byte (e4m3 or e5m2).
    Fp8,
    /// 8-bit integer with group scales (HF QuantizedCache).
    Int8,
    /// 4-bit integer with group scales (HF QuantizedCache).
    Int4,
    /// A llama.cpp cache type (`-ctk`: f16, q8_0, q4_0, ...).
    Ggml(super::llama_cpp::cache::CacheType),
}

impl KvDtype {
    /// Name as accepted by `--kv-dtype`.
    pub fn name(self) -> &'static str {
        match self {
            KvDtype::Fp32 => "fp32",
            KvDtype::Bf16 => "bf16",
            KvDtype::Fp16 => "fp16",
            KvDtype::Fp8 => "fp8",
            KvDtype::Int8 => "int8",
            KvDtype::Int4 => "int4",
            KvDtype::Ggml(t) => t.name(),
        }
    }

    fn from_dtype(d: Dtype) -> Self {
        match d {
            Dtype::Fp32 => KvDtype::Fp32,
            Dtype::Bf16 => KvDtype::Bf16,
            Dtype::Fp16 => KvDtype::Fp16,
        }
    }
}

/// Group size of HF `QuantizedCache` (`q_group_size`, default 64).
pub const QUANTIZED_CACHE_GROUP: u64 = 64;

/// Parses `--kv-dtype` for an engine (`None` → the compute dtype). vLLM has fp8 but no int8/int4;
/// HF transformers has int8/int4 (QuantizedCache) but no fp8 cache.
pub fn parse_kv_dtype(
    name: Option<&str>,
    engine: Engine,
    compute: Dtype,
) -> Result<KvDtype, ScenarioError> {
    let Some(raw) = name else {
        return Ok(KvDtype::from_dtype(compute));
    };
    let lower = raw.trim().to_ascii_lowercase();
    let kv = match lower.as_str() {
        "auto" => KvDtype::from_dtype(compute),
        "fp32" | "float32" => KvDtype::Fp32,
        "bf16" | "bfloat16" => KvDtype::Bf16,
        "fp16" | "float16" => KvDtype::Fp16,
        "fp8" | "fp8_e4m3" | "fp8_e5m2" => KvDtype::Fp8,
        "int8" => KvDtype::Int8,
        "int4" => KvDtype::Int4,
        _ => {
            return Err(ScenarioError::Invalid {
                field: "kv_dtype".into(),
                expected: "one of auto, bf16, fp16, fp32, fp8, int8, int4".into(),
                found: format!("{raw:?}"),
            })
        }
    };
    match (engine, kv) {
        (Engine::Vllm, KvDtype::Int8 | KvDtype::Int4) => Err(ScenarioError::Invalid {
            field: "kv_dtype".into(),
            expected: "auto, bf16, fp16, fp32 or fp8 for vLLM (--kv-cache-dtype has no int8/int4)"
                .into(),
            found: format!("{raw:?}"),
        }),
        (Engine::Transformers | Engine::LlamaCpp, KvDtype::Fp8) => Err(ScenarioError::Invalid {
            field: "kv_dtype".into(),
            expected: "auto, bf16, fp16, fp32, int8 or int4 for transformers (QuantizedCache; there is no fp8 cache)".into(),
            found: format!("{raw:?}"),
        }),
        _ => Ok(kv),
    }
}

/// What one layer caches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum LayerCache {
    /// Grows with every token.
    Full {
        /// Elements per token (K and V together).
        elements_per_token: u64,
        /// KV heads (for quantized-cache group counting).
        heads: u64,
    },
    /// Holds at most `window` tokens.
    Sliding {
        /// Elements per token.
        elements_per_token: u64,
        /// KV heads.
        heads: u64,
        /// Window length.
        window: u64,
    },
    /// A fixed state per sequence.
    State {
        /// Elements per sequence kept in the compute dtype (the convolution state).
        elements_per_sequence: u64,
        /// Elements per sequence kept in fp32: transformers stores the scan's final SSM / LRU
        /// state as the scan returns it, in fp32 (`mamba_selective_scan`'s `state.float()`,
        /// RecurrentGemma's `recurrent_states` in `torch.float32`); 0 for vLLM, whose
        /// `mamba_ssm_cache_dtype` "auto" keeps it in the model dtype.
        fp32_elements_per_sequence: u64,
        /// Elements of the compute-dtype state not yet there right after prefill: RecurrentGemma's
        /// prefill keeps `conv1d_state` `width − 1` wide (`F.pad(x, (width − len − 1, 0))`), and the
        /// first decode step's `torch.cat` makes it `width` (a view of the grown tensor).
        prefill_short_elements: u64,
    },
    /// Nothing cached.
    None,
}

/// The moment at which the cache is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moment {
    /// `tokens` in the cache, sliding layers capped at the window (steady state of generation).
    Steady,
    /// Right after the prefill of `tokens` (HF sliding layers still hold every prompt token's storage).
    AfterPrefill,
}

/// The cache layout of a model for one engine and KV dtype (built by [`KvLayout::new`]; serialised
/// for inspection only, so it is not read back).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KvLayout {
    /// Engine modelled.
    pub engine: Engine,
    /// Element type.
    pub kv_dtype: KvDtype,
    /// Compute dtype (for group scales and state-space layers, which are not quantized).
    pub compute: Dtype,
    /// One entry per decoder layer.
    pub layers: Vec<LayerCache>,
    /// Cross-attention elements per encoder token, summed over decoder layers (t5).
    pub cross_elements_per_token: u64,
    /// vLLM page size in tokens (`None` for HF).
    pub block_size: Option<u64>,
    /// How MLA is stored, when the model has MLA.
    pub mla_storage: Option<String>,
    /// The distinct entries of `layers` with how many layers have each (sums over the layers
    /// multiply instead of iterating).
    #[serde(skip)]
    pub distinct: Vec<(LayerCache, u64)>,
}

/// The distinct caches of `layers` with their counts, in order of first appearance.
pub(crate) fn distinct(layers: &[LayerCache]) -> Vec<(LayerCache, u64)> {
    let mut out: Vec<(LayerCache, u64)> = Vec::new();
    for l in layers {
        match out.iter_mut().find(|(d, _)| d == l) {
            Some((_, n)) => *n += 1,
            None => out.push((*l, 1)),
        }
    }
    out
}

fn ceil_to(x: u64, m: u64) -> u64 {
    if m <= 1 {
        x
    } else {
        x.div_ceil(m).saturating_mul(m)
    }
}

impl KvLayout {
    /// Builds the layout. `tensor_parallel` splits KV heads across GPUs in vLLM (at least one per GPU;
    /// MLA latents and states are replicated). `flash_attention`: HF pads MLA values to the key width.
    pub fn new(
        spec: &ModelSpec,
        engine: Engine,
        kv_dtype: KvDtype,
        compute: Dtype,
        tensor_parallel: u64,
        flash_attention: bool,
    ) -> Self {
        let tp = tensor_parallel.max(1);
        // The description of the MLA storage, written once from the last MLA layer.
        let mut last_mla: Option<crate::spec::AttentionSpec> = None;
        let no_cache = spec.kind == ModelKind::EncoderOnly
            || (spec.no_kv_cache && engine == Engine::Transformers);
        let layers = if no_cache {
            Vec::new()
        } else {
            spec.layers
                .iter()
                .map(|l| {
                    if let Some(ssm) = l.ssm {
                        let conv = match engine {
                            Engine::Transformers | Engine::LlamaCpp => ssm.conv_kernel,
                            Engine::Vllm => ssm.conv_kernel.saturating_sub(1),
                        };
                        // conv state [conv channels, kernel] + ssm state [d_inner, state]
                        let conv_state = ssm.conv_channels().saturating_mul(conv);
                        let ssm_state = ssm.d_inner.saturating_mul(ssm.state_size);
                        return match engine {
                            Engine::Transformers => LayerCache::State {
                                elements_per_sequence: conv_state,
                                fp32_elements_per_sequence: ssm_state,
                                prefill_short_elements: if ssm.conv_state_grows_at_first_decode {
                                    ssm.conv_channels()
                                } else {
                                    0
                                },
                            },
                            Engine::Vllm | Engine::LlamaCpp => LayerCache::State {
                                elements_per_sequence: conv_state.saturating_add(ssm_state),
                                fp32_elements_per_sequence: 0,
                                prefill_short_elements: 0,
                            },
                        };
                    }
                    let Some(a) = l.attention else {
                        return LayerCache::None;
                    };
                    let (elements, heads) = match (a.mla, engine) {
                        // vLLM, and transformers ≥ 5.15 (DeepseekV2/V3Attention: "cache read /
                        // write is performed while the latent KV is still compressed"): the
                        // normed latent and the rotary key, one "head"
                        (Some(m), Engine::Vllm | Engine::Transformers) => {
                            last_mla = Some(a);
                            (m.kv_lora_rank.saturating_add(m.qk_rope_head_dim), 1)
                        }
                        // llama.cpp's view through this layout: decompressed K/V (its own
                        // engine model in `llama_cpp` caches the latent)
                        (Some(_), Engine::LlamaCpp) => {
                            let v = if flash_attention {
                                a.head_dim
                            } else {
                                a.v_head_dim
                            };
                            last_mla = Some(a);
                            (
                                a.num_heads.saturating_mul(a.head_dim.saturating_add(v)),
                                a.num_heads,
                            )
                        }
                        (None, _) => {
                            let heads = match engine {
                                Engine::Vllm => (a.num_kv_heads / tp).max(1),
                                Engine::Transformers | Engine::LlamaCpp => a.num_kv_heads,
                            };
                            (
                                heads.saturating_mul(a.head_dim.saturating_add(a.v_head_dim)),
                                heads,
                            )
                        }
                    };
                    match a.sliding_window {
                        Some(window) => LayerCache::Sliding {
                            elements_per_token: elements,
                            heads,
                            window,
                        },
                        None => LayerCache::Full {
                            elements_per_token: elements,
                            heads,
                        },
                    }
                })
                .collect()
        };
        let mla_storage = last_mla.and_then(|a| {
            let m = a.mla?;
            Some(match engine {
                Engine::Vllm => format!(
                    "vLLM: latent kv_lora_rank {} + rope {} = {} elements per token and layer",
                    m.kv_lora_rank,
                    m.qk_rope_head_dim,
                    m.kv_lora_rank + m.qk_rope_head_dim
                ),
                Engine::Transformers | Engine::LlamaCpp => {
                    let v = if flash_attention {
                        a.head_dim
                    } else {
                        a.v_head_dim
                    };
                    format!(
                        "transformers: decompressed per-head K {}×{} and V {}×{} elements per token and layer",
                        a.num_heads, a.head_dim, a.num_heads, v
                    )
                }
            })
        });
        let cross_elements_per_token = spec
            .layers
            .iter()
            .filter_map(|l| l.cross_attention)
            .map(|a| {
                a.num_kv_heads
                    .saturating_mul(a.head_dim.saturating_add(a.v_head_dim))
            })
            .fold(0u64, u64::saturating_add);
        let has_mla = spec
            .layers
            .iter()
            .any(|l| l.attention.is_some_and(|a| a.mla.is_some()));
        let block_size = match engine {
            Engine::Transformers | Engine::LlamaCpp => None,
            Engine::Vllm if has_mla => Some(64),
            Engine::Vllm => Some(16),
        };
        KvLayout {
            engine,
            kv_dtype,
            compute,
            distinct: distinct(&layers),
            layers,
            cross_elements_per_token,
            block_size,
            mla_storage,
        }
    }

    /// Bytes of `elements` cache elements of one token row of `heads` heads, in the KV dtype
    /// (quantized caches add a scale and a zero point per group of 64 per head).
    fn token_bytes(&self, elements: u64, heads: u64) -> u64 {
        match self.kv_dtype {
            KvDtype::Fp32 => elements.saturating_mul(4),
            KvDtype::Bf16 | KvDtype::Fp16 => elements.saturating_mul(2),
            KvDtype::Ggml(t) => t.row_bytes(elements),
            KvDtype::Fp8 => elements,
            KvDtype::Int8 | KvDtype::Int4 => {
                let bits = if self.kv_dtype == KvDtype::Int8 { 8 } else { 4 };
                let per_head = elements / heads.max(1);
                // K and V are quantized separately: each half of a head row has its own groups.
                let groups = heads
                    .max(1)
                    .saturating_mul(2)
                    .saturating_mul((per_head / 2).div_ceil(QUANTIZED_CACHE_GROUP));
                (elements.saturating_mul(bits) / 8).saturating_add(
                    groups
                        .saturating_mul(2)
                        .saturating_mul(self.compute.bytes()),
                )
            }
        }
    }

    /// Bytes per token of one sequence over every attention layer (sliding layers included, as
    /// below their window), without page rounding.
    pub fn bytes_per_token(&self) -> u64 {
        self.distinct
            .iter()
            .map(|(l, n)| self.layer_bytes_per_token(l).saturating_mul(*n))
            .fold(0, u64::saturating_add)
    }

    /// Bytes per token of one layer's cache (0 for state and cache-free layers).
    pub fn layer_bytes_per_token(&self, l: &LayerCache) -> u64 {
        match *l {
            LayerCache::Full {
                elements_per_token,
                heads,
            }
            | LayerCache::Sliding {
                elements_per_token,
                heads,
                ..
            } => self.token_bytes(elements_per_token, heads),
            _ => 0,
        }
    }

    /// Bytes per token of the full-attention layers only (the part that grows without bound).
    pub fn full_bytes_per_token(&self) -> u64 {
        self.distinct
            .iter()
            .map(|(l, n)| match *l {
                LayerCache::Full {
                    elements_per_token,
                    heads,
                } => self
                    .token_bytes(elements_per_token, heads)
                    .saturating_mul(*n),
                _ => 0,
            })
            .fold(0, u64::saturating_add)
    }

    /// Fixed state bytes per sequence (state-space layers, in the compute dtype).
    pub fn state_bytes_per_sequence(&self) -> u64 {
        self.distinct
            .iter()
            .map(|(l, n)| match *l {
                LayerCache::State {
                    elements_per_sequence,
                    fp32_elements_per_sequence,
                    ..
                } => elements_per_sequence
                    .saturating_mul(self.compute.bytes())
                    .saturating_add(fp32_elements_per_sequence.saturating_mul(4))
                    .saturating_mul(*n),
                _ => 0,
            })
            .fold(0, u64::saturating_add)
    }

    /// Cross-attention bytes per encoder token (t5 decoder layers), in the KV dtype.
    pub fn cross_bytes_per_token(&self) -> u64 {
        self.token_bytes(self.cross_elements_per_token, 1)
    }

    /// Tokens a layer holds for one sequence of `tokens` tokens.
    fn held_tokens(&self, l: &LayerCache, tokens: u64, moment: Moment) -> u64 {
        match (*l, self.block_size) {
            (LayerCache::Full { .. }, None) => tokens,
            (LayerCache::Full { .. }, Some(b)) => ceil_to(tokens, b),
            (LayerCache::Sliding { window, .. }, None) => match moment {
                Moment::Steady => tokens.min(window),
                Moment::AfterPrefill => tokens,
            },
            (LayerCache::Sliding { window, .. }, Some(b)) => {
                let cap = window.saturating_sub(1).div_ceil(b).saturating_add(1);
                tokens.div_ceil(b).min(cap).saturating_mul(b)
            }
            _ => 0,
        }
    }

    /// Bytes of the cache for `batch` sequences of `tokens` tokens (decoder self-attention + states),
    /// plus cross-attention over `encoder_tokens` encoder tokens.
    pub fn bytes(&self, batch: u64, tokens: u64, encoder_tokens: u64, moment: Moment) -> u64 {
        let per_seq = self
            .distinct
            .iter()
            .map(|(l, n)| {
                let one = match *l {
                    LayerCache::State {
                        elements_per_sequence,
                        fp32_elements_per_sequence,
                        prefill_short_elements,
                    } => {
                        let elements = if moment == Moment::AfterPrefill {
                            elements_per_sequence.saturating_sub(prefill_short_elements)
                        } else {
                            elements_per_sequence
                        };
                        elements
                            .saturating_mul(self.compute.bytes())
                            .saturating_add(fp32_elements_per_sequence.saturating_mul(4))
                    }
                    _ => self
                        .layer_bytes_per_token(l)
                        .saturating_mul(self.held_tokens(l, tokens, moment)),
                };
                one.saturating_mul(*n)
            })
            .fold(0u64, u64::saturating_add)
            .saturating_add(self.cross_bytes_per_token().saturating_mul(encoder_tokens));
        per_seq.saturating_mul(batch)
    }

    /// Bytes of one layer's K (or V) for `batch` sequences of `tokens` tokens: the largest single
    /// cache tensor, which `torch.cat` briefly holds twice when it grows by one token.
    pub fn largest_layer_half_bytes(&self, batch: u64, tokens: u64) -> u64 {
        self.distinct
            .iter()
            .map(|(l, _)| match *l {
                LayerCache::Full {
                    elements_per_token,
                    heads,
                } => self.token_bytes(elements_per_token, heads) / 2 * tokens,
                LayerCache::Sliding {
                    elements_per_token,
                    heads,
                    window,
                } => self.token_bytes(elements_per_token, heads) / 2 * tokens.min(window),
                _ => 0,
            })
            .max()
            .unwrap_or(0)
            .saturating_mul(batch)
    }

    /// Counts of (full, sliding, state) layers.
    pub fn layer_counts(&self) -> (u64, u64, u64) {
        let mut c = (0, 0, 0);
        for (l, n) in &self.distinct {
            match l {
                LayerCache::Full { .. } => c.0 += n,
                LayerCache::Sliding { .. } => c.1 += n,
                LayerCache::State { .. } => c.2 += n,
                LayerCache::None => {}
            }
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets::find;

    fn spec(id: &str) -> ModelSpec {
        crate::parse_config(find(id).unwrap().json, None).unwrap()
    }

    fn hf(s: &ModelSpec, d: Dtype) -> KvLayout {
        KvLayout::new(s, Engine::Transformers, KvDtype::from_dtype(d), d, 1, false)
    }

    #[test]
    fn llama2_7b_fp16_at_2048_tokens_is_one_gib() {
        // 32 layers × 2 × 32 heads × 128 × 2 B = 524,288 B/token; × 2048 = 2^30.
        let s = spec("meta-llama__Llama-2-7b-hf");
        let l = hf(&s, Dtype::Fp16);
        assert_eq!(l.bytes_per_token(), 524_288);
        assert_eq!(l.bytes(1, 2048, 0, Moment::Steady), 1 << 30);
    }

    #[test]
    fn llama3_8b_gqa_at_8192_tokens_is_one_gib() {
        // 32 layers × 2 × 8 KV heads × 128 × 2 B = 131,072 B/token; × 8192 = 2^30.
        let s = spec("meta-llama__Llama-3.1-8B");
        assert_eq!(
            hf(&s, Dtype::Bf16).bytes(1, 8192, 0, Moment::Steady),
            1 << 30
        );
    }

    #[test]
    fn gemma2_sliding_layers_cap_at_the_window_after_decode_only() {
        // 26 layers, 13 sliding (window 4096); 2 × 4 KV heads × 256 × 2 B = 4096 B/token/layer.
        let s = spec("google__gemma-2-2b");
        let l = hf(&s, Dtype::Bf16);
        assert_eq!(l.layer_counts(), (13, 13, 0));
        let steady = 13 * 4096 * 8192 + 13 * 4096 * 4096;
        assert_eq!(l.bytes(1, 8192, 0, Moment::Steady), steady);
        assert_eq!(l.bytes(1, 8192, 0, Moment::AfterPrefill), 26 * 4096 * 8192);
    }

    #[test]
    fn gpt_oss_vllm_pages_sliding_layers_to_the_window() {
        // 24 layers, 12 sliding (window 128); 2 × 8 × 64 × 2 B = 2048 B/token/layer.
        // vLLM at 8192 tokens: full layers 512 pages of 16; sliding ⌈127/16⌉ + 1 = 9 pages.
        let s = spec("openai__gpt-oss-20b");
        let l = KvLayout::new(&s, Engine::Vllm, KvDtype::Bf16, Dtype::Bf16, 1, false);
        assert_eq!(
            l.bytes(1, 8192, 0, Moment::Steady),
            12 * 2048 * 8192 + 12 * 2048 * 144
        );
        let h = hf(&s, Dtype::Bf16);
        assert_eq!(
            h.bytes(1, 8192, 0, Moment::Steady),
            12 * 2048 * 8192 + 12 * 2048 * 128
        );
    }

    #[test]
    fn deepseek_v3_mla_latent_is_70272_bytes_per_token_in_vllm_and_transformers() {
        // (512 + 64) × 61 layers × 2 B.
        let s = spec("deepseek-ai__DeepSeek-V3");
        let v = KvLayout::new(&s, Engine::Vllm, KvDtype::Bf16, Dtype::Bf16, 1, false);
        assert_eq!(v.bytes_per_token(), 70_272);
        // transformers ≥ 5.15 caches the same latent (5.14 and earlier: 128 heads × (192 + 128)
        // per layer, 61 × 40,960 × 2 B, 71× more)
        assert_eq!(hf(&s, Dtype::Bf16).bytes_per_token(), 70_272);
    }

    #[test]
    fn mamba_130m_state_is_fixed() {
        // 24 layers × 1536 × (4 + 16) elements × 4 B (fp32) per sequence, whatever the length.
        let s = spec("state-spaces__mamba-130m-hf");
        let l = hf(&s, Dtype::Fp32);
        assert_eq!(l.bytes(1, 100, 0, Moment::Steady), 24 * 1536 * 20 * 4);
        assert_eq!(l.bytes(2, 100_000, 0, Moment::Steady), 2 * 2_949_120);
    }

    #[test]
    fn t5_cross_attention_counts_encoder_tokens() {
        // t5-small: 6 decoder layers × 2 × 8 heads × 64 × 4 B per encoder token (fp32).
        let s = spec("google-t5__t5-small");
        let l = hf(&s, Dtype::Fp32);
        assert_eq!(l.cross_bytes_per_token(), 6 * 2 * 8 * 64 * 4);
        assert_eq!(
            l.bytes(1, 10, 512, Moment::Steady),
            10 * 6 * 2 * 8 * 64 * 4 + 512 * 6 * 2 * 8 * 64 * 4
        );
    }

    #[test]
    fn int4_quantized_cache_adds_group_scales() {
        // Llama-2-7B: per layer and token 2 × 32 heads × 128 elements → 4096 B of int4 data +
        // 2 × 32 × 2 groups × (scale + zero) × 2 B = 512 B.
        let s = spec("meta-llama__Llama-2-7b-hf");
        let l = KvLayout::new(
            &s,
            Engine::Transformers,
            KvDtype::Int4,
            Dtype::Fp16,
            1,
            false,
        );
        assert_eq!(l.bytes_per_token(), 32 * (4096 + 512));
    }

    #[test]
    fn kv_dtype_is_checked_per_engine() {
        assert!(parse_kv_dtype(Some("int4"), Engine::Vllm, Dtype::Bf16).is_err());
        assert!(parse_kv_dtype(Some("fp8"), Engine::Transformers, Dtype::Bf16).is_err());
        let e = parse_kv_dtype(Some("q8"), Engine::Vllm, Dtype::Bf16).unwrap_err();
        assert!(e.to_string().starts_with("kv_dtype:"));
    }
}
