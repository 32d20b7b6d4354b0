//! llama.cpp's KV cache: cell counts, cache types, bytes per layer.
//!
//! - Cells: the context `n_ctx` padded to a multiple of 256 (`llama_context` constructor), shared by
//!   all sequences when the cache is unified (`--kv-unified`), else `n_ctx / n_seq` cells in each of
//!   `n_seq` streams.
//! - Sliding-window layers (iSWA models: gemma2/3, cohere2, gpt-oss, llama4, ...) have their own
//!   cache of `min(n_ctx, pad(n_swa × n_seq + n_ubatch, 256))` cells (`llama_kv_cache_iswa`), or the
//!   full size with `--swa-full`.
//! - Bytes: `ggml_row_size(type, n_embd_k_gqa)` per cell and layer for K, the same with the V type
//!   for V (`llama_kv_cache` constructor); quantized V needs flash attention (llama.cpp refuses
//!   otherwise: "V cache quantization requires flash_attn").
//! - Recurrent layers (mamba): one state per sequence, `r` and `s` in f32
//!   (`llama_memory_recurrent`).
//!
//! Block sizes: `ggml/src/ggml-common.h` (q8_0: 32 values in 34 B; q4_0: 18 B; q4_1: 20 B;
//! q5_0: 22 B; q5_1: 24 B; iq4_nl: 18 B).

use super::model::{LayerCacheKind, LlamaModel};
use crate::error::ScenarioError;
use serde::{Deserialize, Serialize};

/// Padding of the context and of the SWA cache (`GGML_PAD(n, 256)`).
pub const CTX_PAD: u64 = 256;

/// A KV cache element type (`-ctk`, `-ctv`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheType {
    /// 4 bytes.
    F32,
    /// 2 bytes (the default).
    F16,
    /// 2 bytes.
    Bf16,
    /// 34 B per 32.
    Q8_0,
    /// 18 B per 32.
    Q4_0,
    /// 20 B per 32.
    Q4_1,
    /// 22 B per 32.
    Q5_0,
    /// 24 B per 32.
    Q5_1,
    /// 18 B per 32.
    Iq4Nl,
}

/// Names `-ctk`/`-ctv` accept (`kv_cache_types` in llama.cpp `common/arg.cpp`).
pub const CACHE_TYPE_NAMES: &[&str] = &[
    "f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1",
];

impl CacheType {
    /// Parses a `-ctk`/`-ctv` name (also `fp16`, `fp32`, `bf16`, `auto` = f16).
    pub fn parse(field: &str, name: &str) -> Result<CacheType, ScenarioError> {
        Ok(match name.trim().to_ascii_lowercase().as_str() {
            "f32" | "fp32" | "float32" => CacheType::F32,
            "f16" | "fp16" | "float16" | "auto" => CacheType::F16,
            "bf16" | "bfloat16" => CacheType::Bf16,
            "q8_0" => CacheType::Q8_0,
            "q4_0" => CacheType::Q4_0,
            "q4_1" => CacheType::Q4_1,
            "q5_0" => CacheType::Q5_0,
            "q5_1" => CacheType::Q5_1,
            "iq4_nl" => CacheType::Iq4Nl,
            _ => {
                return Err(ScenarioError::Invalid {
                    field: field.into(),
                    expected: format!("a llama.cpp cache type: {}", CACHE_TYPE_NAMES.join(", ")),
                    found: format!("{name:?}"),
                })
            }
        })
    }

    /// The name llama.cpp prints (`f16`, `q8_0`).
    pub fn name(self) -> &'static str {
        match self {
            CacheType::F32 => "f32",
            CacheType::F16 => "f16",
            CacheType::Bf16 => "bf16",
            CacheType::Q8_0 => "q8_0",
            CacheType::Q4_0 => "q4_0",
            CacheType::Q4_1 => "q4_1",
            CacheType::Q5_0 => "q5_0",
            CacheType::Q5_1 => "q5_1",
            CacheType::Iq4Nl => "iq4_nl",
        }
    }

    /// `(elements per block, bytes per block)`.
    pub fn block(self) -> (u64, u64) {
        match self {
            CacheType::F32 => (1, 4),
            CacheType::F16 | CacheType::Bf16 => (1, 2),
            CacheType::Q8_0 => (32, 34),
            CacheType::Q4_0 | CacheType::Iq4Nl => (32, 18),
            CacheType::Q4_1 => (32, 20),
            CacheType::Q5_0 => (32, 22),
            CacheType::Q5_1 => (32, 24),
        }
    }

    /// Whether the type is block-quantized.
    pub fn is_quantized(self) -> bool {
        self.block().0 > 1
    }

    /// `ggml_row_size(type, n)`.
    pub fn row_bytes(self, n: u64) -> u64 {
        let (e, b) = self.block();
        n.div_ceil(e).saturating_mul(b)
    }
}

/// `GGML_PAD(x, m)`.
pub fn pad_to(x: u64, m: u64) -> u64 {
    x.div_ceil(m).saturating_mul(m)
}

/// The cache sizes of one configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheCells {
    /// Cells of the full-attention cache (all streams together).
    pub cells: u64,
    /// Cells of the sliding-window cache (0 when the model has no SWA layers).
    pub swa_cells: u64,
    /// Cells of one stream as the attention sees them (`n_kv` of the reserved graph).
    pub n_kv: u64,
    /// SWA cells per stream.
    pub n_kv_swa: u64,
    /// Sequences (recurrent states).
    pub n_seq: u64,
}

/// Cells for context `n_ctx` over `n_seq` sequences (`llama_context` constructor: `n_ctx =
/// GGML_PAD(n_ctx, 256)`; without a unified cache `n_ctx_seq = GGML_PAD(n_ctx / n_seq, 256)` and
/// `n_ctx = n_ctx_seq × n_seq`), and the SWA cache of `llama_kv_cache_iswa`:
/// `GGML_PAD(min(n_ctx_seq, n_swa × (unified ? n_seq : 1) + n_ubatch), 256)` per stream.
pub fn cells(
    model: &LlamaModel,
    n_ctx: u64,
    n_seq: u64,
    n_ubatch: u64,
    unified: bool,
    swa_full: bool,
) -> CacheCells {
    let n_seq = n_seq.max(1);
    let n_ctx = pad_to(n_ctx.max(1), CTX_PAD);
    let streams = if unified { 1 } else { n_seq };
    let per_stream = if unified {
        n_ctx
    } else {
        pad_to((n_ctx / n_seq).max(1), CTX_PAD)
    };
    let has_swa = model
        .layers
        .iter()
        .any(|l| matches!(l.cache, LayerCacheKind::Attention { swa: true, .. }));
    let n_kv_swa = if !has_swa {
        0
    } else if swa_full || model.n_swa == 0 {
        per_stream
    } else {
        let seqs_in_stream = if unified { n_seq } else { 1 };
        pad_to(
            per_stream.min(
                model
                    .n_swa
                    .saturating_mul(seqs_in_stream)
                    .saturating_add(n_ubatch),
            ),
            CTX_PAD,
        )
    };
    CacheCells {
        cells: per_stream.saturating_mul(streams),
        swa_cells: n_kv_swa.saturating_mul(streams),
        n_kv: per_stream,
        n_kv_swa,
        n_seq,
    }
}

/// Bytes one cell of a layer's attention cache holds (its K row and V row); 0 for other layers.
pub fn cell_bytes(kind: &LayerCacheKind, k: CacheType, v: CacheType) -> u64 {
    match *kind {
        LayerCacheKind::Attention {
            k_elements,
            v_elements,
            ..
        } => k
            .row_bytes(k_elements)
            .saturating_add(v.row_bytes(v_elements)),
        _ => 0,
    }
}

/// Bytes of one sequence's recurrent state in a layer (f32 `r` and `s`); 0 for other layers.
pub fn state_bytes(kind: &LayerCacheKind) -> u64 {
    match *kind {
        LayerCacheKind::Recurrent {
            r_elements,
            s_elements,
        } => r_elements.saturating_add(s_elements).saturating_mul(4),
        _ => 0,
    }
}

/// Bytes of one layer's cache (K, V) for the given cells.
pub fn layer_bytes(
    kind: &LayerCacheKind,
    c: &CacheCells,
    k: CacheType,
    v: CacheType,
) -> (u64, u64) {
    match *kind {
        LayerCacheKind::None => (0, 0),
        LayerCacheKind::Attention {
            k_elements,
            v_elements,
            swa,
        } => {
            let cells = if swa { c.swa_cells } else { c.cells };
            (
                k.row_bytes(k_elements).saturating_mul(cells),
                v.row_bytes(v_elements).saturating_mul(cells),
            )
        }
        LayerCacheKind::Recurrent {
            r_elements,
            s_elements,
        } => (
            r_elements.saturating_mul(4).saturating_mul(c.n_seq),
            s_elements.saturating_mul(4).saturating_mul(c.n_seq),
        ),
    }
}
