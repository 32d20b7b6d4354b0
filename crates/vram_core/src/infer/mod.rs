//! The inference memory model: weights by format, the KV cache per architecture and engine, the
//! prefill and decode peaks, vLLM serving capacity, and solvers. Formulas and sources:
//! docs/formulas/inference.md.
//!
//! Two engine profiles:
//! - `transformers`: HF transformers 5 `model(...)` / `generate` with `DynamicCache`: phases load →
//!   prefill of `seq_len` tokens at `batch` → one decode step, in tensor bytes
//!   (`torch.cuda.max_memory_allocated`), as `vram measure` reports them.
//! - `vllm`: vLLM as the chosen release starts (`vllm_version`; 0.6 V0 to the current 0.34) on the
//!   serving GPU: weights per GPU, the KV pool it
//!   pre-allocates, the profiled activation peak; the scenario's `batch × seq_len` occupies pages.

pub mod activations;
pub mod device_map;
pub mod format;
pub mod gguf;
pub mod kv_cache;
pub mod llama_cpp;
pub mod solve;
pub mod vllm;
pub mod vllm_pipeline;
pub mod vllm_version;
pub mod weights;

use crate::error::ScenarioError;
use crate::report::{DeviceOverheads, Phase, Term, Terms};
use crate::scenario::{AttentionImpl, Dtype, Engine, Scenario};
use crate::spec::{ModelKind, ModelSpec};
use crate::units::group_thousands;
use activations::{forward_peak, ForwardShape};
use format::{format_from_config, parse_weight_format, WeightFormat};
use kv_cache::{parse_kv_dtype, KvDtype, KvLayout, Moment};
use serde::{Deserialize, Serialize};
pub use solve::{max_batch, max_context};
pub use vllm::ServingEstimate;
pub use weights::WeightsBreakdown;

/// Which engine behaviour the numbers model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EngineProfile {
    /// `transformers` or `vllm`.
    pub engine: Engine,
    /// One line on what is modelled.
    pub description: String,
    /// KV cache element type.
    pub kv_dtype: KvDtype,
    /// vLLM page size in tokens (none for transformers).
    pub block_size: Option<u64>,
    /// How sliding-window layers are cached by this engine.
    pub sliding_window_cache: String,
    /// How MLA is cached by this engine (MLA models only).
    pub mla_cache: Option<String>,
}

/// The inference budget (`infer` in `vram estimate --json`; keys documented in docs/cli.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InferEstimate {
    /// Engine profile used.
    pub engine: EngineProfile,
    /// Weight format name (`bf16`, `nf4`, `q4_k_m`, ...).
    pub weights_format: String,
    /// Where the format came from: `scenario`, `quantization_config`, or `dtype`.
    pub weights_format_source: String,
    /// Weight bytes on the device (per GPU for vLLM).
    pub weights_bytes: u64,
    /// Weights by storage type and quantized/unquantized split.
    pub weights_breakdown: WeightsBreakdown,
    /// KV cache (and fixed state) of `batch` sequences at `seq_len` tokens, steady state (sliding
    /// layers capped at their window; vLLM whole pages).
    pub kv_cache_bytes: u64,
    /// KV cache storage right after the prefill (transformers: sliding layers still hold every
    /// prompt token; vLLM: as `kv_cache_bytes`).
    pub kv_cache_after_prefill_bytes: u64,
    /// KV cache storage after one decode step (`seq_len + 1` tokens).
    pub kv_cache_after_decode_bytes: u64,
    /// KV bytes per token of one sequence over all attention layers (below any window).
    pub kv_bytes_per_token: u64,
    /// Fixed state bytes per sequence (state-space layers).
    pub state_bytes_per_sequence: u64,
    /// Transient activations at the prefill peak (transformers) or the profiled peak (vLLM).
    pub activations_bytes: u64,
    /// Logits at the prefill peak (part of `activations_bytes`).
    pub logits_bytes: u64,
    /// Highest tensor bytes over all phases (`torch.cuda.max_memory_allocated`).
    pub peak_allocated_bytes: u64,
    /// Peak plus CUDA context and cuBLAS workspace (what `nvidia-smi` shows, roughly).
    pub device_bytes: u64,
    /// load, prefill, decode.
    pub phases: Vec<Phase>,
    /// Explained terms.
    pub terms: Vec<Term>,
    /// What vLLM would print at start-up for this model on the serving GPU.
    pub serving: ServingEstimate,
    /// Assumptions and caveats.
    pub notes: Vec<String>,
    /// The llama.cpp engine's buffers per device (only with `engine = llama.cpp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llama_cpp: Option<llama_cpp::LlamaCppEstimate>,
    /// transformers with `gpus > 1`: what each GPU holds under `device_map="auto"`; the headline
    /// peak and device totals are then the largest GPU's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<device_map::DeviceShare>,
}

/// The resolved weight format, compute dtype, and where the format came from.
pub fn resolve_format(
    spec: &ModelSpec,
    scenario: &Scenario,
) -> Result<(WeightFormat, Dtype, String, Option<String>), ScenarioError> {
    if let Some(name) = scenario.weights.as_deref() {
        let f = parse_weight_format(name)?;
        let compute = match f {
            WeightFormat::Float { dtype } => dtype,
            _ => scenario.dtype,
        };
        return Ok((f, compute, "scenario".into(), None));
    }
    match format_from_config(spec) {
        (Some(f), _) => Ok((f, scenario.dtype, "quantization_config".into(), None)),
        (None, note) => Ok((
            WeightFormat::Float {
                dtype: scenario.dtype,
            },
            scenario.dtype,
            "dtype".into(),
            note,
        )),
    }
}

fn phase(name: &str, allocated: u64, peak: u64, components: Vec<(&str, u64)>) -> Phase {
    Phase {
        name: name.into(),
        allocated_bytes: allocated,
        peak_allocated_bytes: peak.max(allocated),
        components: components
            .into_iter()
            .filter(|(_, b)| *b > 0)
            .map(|(k, b)| (k.to_string(), b))
            .collect(),
    }
}

/// Computes the inference budget of `spec` under `scenario` (`scenario.engine` picks the profile).
pub fn estimate_inference(
    spec: &ModelSpec,
    scenario: &Scenario,
    overheads: &DeviceOverheads,
) -> Result<InferEstimate, ScenarioError> {
    estimate_inference_explained(spec, scenario, overheads, true)
}

/// [`estimate_inference`]; without `explain` the terms, notes, phases and descriptions are left
/// empty (the figures are the same).
fn estimate_inference_explained(
    spec: &ModelSpec,
    scenario: &Scenario,
    overheads: &DeviceOverheads,
    explain: bool,
) -> Result<InferEstimate, ScenarioError> {
    scenario.validate()?;
    if scenario.engine == Engine::LlamaCpp {
        return llama_cpp_estimate(spec, scenario, overheads, explain);
    }
    vllm::validate(&scenario.serving)?;
    let part = InferPart::of(spec, scenario)?;
    estimate_with(spec, scenario, overheads, &part, explain)
}

/// The inference estimate under the llama.cpp engine: the figures llama.cpp prints per device
/// ([`llama_cpp`]), with the headline totals of the largest GPU.
fn llama_cpp_estimate(
    spec: &ModelSpec,
    scenario: &Scenario,
    overheads: &DeviceOverheads,
    explain: bool,
) -> Result<InferEstimate, ScenarioError> {
    if scenario.batch > llama_cpp::MAX_SEQUENCES {
        return Err(ScenarioError::Invalid {
            field: "batch".into(),
            expected: format!(
                "1 to {} parallel sequences for llama.cpp (LLAMA_MAX_SEQ)",
                llama_cpp::MAX_SEQUENCES
            ),
            found: scenario.batch.to_string(),
        });
    }
    let r = llama_cpp::resolve(spec, scenario)?;
    llama_cpp::validate(&scenario.llama_cpp, r.model.layers.len() as u64)?;
    let gguf_name = gguf_file_name(spec, &r.format_name);
    let e = llama_cpp::estimate(
        &r,
        &scenario.llama_cpp,
        scenario.seq_len,
        scenario.batch,
        &gguf_name,
    );
    let m = &r.model;
    let kv_total = e.kv_bytes + e.kv_swa_bytes + e.recurrent_bytes;
    let per_token: u64 = m
        .layers
        .iter()
        .map(|l| llama_cpp::cache::cell_bytes(&l.cache, r.type_k, r.type_v))
        .sum();
    let per_seq_state: u64 = m
        .layers
        .iter()
        .map(|l| llama_cpp::cache::state_bytes(&l.cache))
        .sum();
    let largest = e.devices.iter().max_by_key(|d| d.total_bytes).cloned();
    let (dev_w, dev_kv, dev_c) = largest.as_ref().map_or((0, 0, 0), |d| {
        (d.weights_bytes, d.kv_bytes, d.compute_bytes)
    });
    let device_bytes = e.gpu_total_bytes + overheads.cuda_context_bytes + overheads.workspace_bytes;
    let mut terms = Terms::new(explain);
    terms.add(|| Term {
        key: "weights".into(),
        bytes: dev_w,
        formula: format!(
            "{} of {} repeating layers{} on the GPU: {} B ({} B of {} in host memory: the input embedding{})",
            e.layers_on_gpu,
            e.n_layer,
            if e.output_on_gpu { " and the output layer" } else { "" },
            group_thousands(e.weights_gpu_bytes),
            group_thousands(e.weights_host_bytes),
            r.format_name,
            if e.layers_on_gpu < e.n_layer || e.layers_experts_on_host > 0 { ", CPU layers and experts" } else { "" }
        ),
        source: "llama.cpp src/llama-model.cpp load_tensors (layer placement); tensor bytes from ggml type sizes".into(),
    });
    terms.add(|| Term {
        key: "kv_cache".into(),
        bytes: dev_kv,
        formula: format!(
            "{} cells × {} B/cell (K {}, V {}){}{} = {} B",
            group_thousands(e.cells),
            group_thousands(per_token),
            e.type_k,
            e.type_v,
            if e.swa_cells > 0 {
                format!("; sliding-window layers {} cells", group_thousands(e.swa_cells))
            } else {
                String::new()
            },
            if e.kv_host_bytes > 0 {
                format!("; {} B in host memory", group_thousands(e.kv_host_bytes))
            } else {
                String::new()
            },
            group_thousands(kv_total)
        ),
        source: "llama.cpp src/llama-context.cpp (n_ctx padded to 256), src/llama-kv-cache.cpp, src/llama-kv-cache-iswa.cpp".into(),
    });
    terms.add(|| Term {
        key: "compute".into(),
        bytes: dev_c,
        formula: format!(
            "worst-case graph of {} tokens, flash attention {}: GPU {} B, host {} B",
            e.n_ubatch,
            if e.flash_attn { "on" } else { "off" },
            group_thousands(e.compute_gpu_bytes),
            group_thousands(e.compute_host_bytes)
        ),
        source: "llama.cpp llama_context::graph_reserve, ggml-alloc; calibrated in docs/accuracy.md §llama.cpp".into(),
    });
    terms.add(|| Term {
        key: "output".into(),
        bytes: e.output_bytes,
        formula: format!(
            "{} sequences × {} vocab × 4 B (host memory)",
            e.n_seq,
            group_thousands(m.n_vocab)
        ),
        source: "llama.cpp llama_context::output_reserve".into(),
    });
    let mut notes = Vec::new();
    if explain {
        notes.push(format!(
            "llama.cpp prints model, KV and compute buffers per device; the device total adds the CUDA context and workspace ({} B), which it does not print",
            group_thousands(overheads.cuda_context_bytes + overheads.workspace_bytes)
        ));
        if e.weights_host_bytes > 0 {
            notes.push("host weights are memory-mapped from the file (page cache): they need free RAM but are not counted as the process's own allocations".into());
        }
    }
    let phases = if explain {
        vec![
            phase("load", dev_w, dev_w, vec![("weights", dev_w)]),
            phase(
                "context",
                e.gpu_total_bytes,
                e.gpu_total_bytes,
                vec![("weights", dev_w), ("kv_cache", dev_kv), ("compute", dev_c)],
            ),
        ]
    } else {
        Vec::new()
    };
    let kv_dtype = KvDtype::Ggml(r.type_k);
    Ok(InferEstimate {
        engine: EngineProfile {
            engine: Engine::LlamaCpp,
            description: if explain {
                format!(
                    "llama.cpp (llama-server defaults{}): {} cells, ubatch {}, flash attention {}, -ngl {}",
                    if e.ollama { ", ollama profile" } else { "" },
                    e.cells,
                    e.n_ubatch,
                    if e.flash_attn { "on" } else { "off" },
                    e.n_gpu_layers
                )
            } else {
                String::new()
            },
            kv_dtype,
            block_size: None,
            sliding_window_cache: if explain {
                "llama_kv_cache_iswa: SWA layers in their own cache of min(n_ctx, n_swa × n_seq + n_ubatch) cells, padded to 256 (--swa-full: full size)".into()
            } else {
                String::new()
            },
            mla_cache: None,
        },
        weights_format: if explain {
            r.format_name.clone()
        } else {
            String::new()
        },
        weights_format_source: if explain {
            if spec.gguf.is_some() && scenario.weights.is_none() {
                "gguf header".into()
            } else {
                "scenario".into()
            }
        } else {
            String::new()
        },
        weights_bytes: m.file_bytes,
        weights_breakdown: if explain {
            WeightsBreakdown {
                total_bytes: m.file_bytes,
                quantized_params: 0,
                quantized_bytes: 0,
                unquantized_params: 0,
                unquantized_bytes: 0,
                largest_tensor_compute_bytes: 0,
                host_resident_bytes: e.weights_host_bytes,
                params_by_type: m.params_by_type.clone(),
            }
        } else {
            WeightsBreakdown::default()
        },
        kv_cache_bytes: kv_total,
        kv_cache_after_prefill_bytes: kv_total,
        kv_cache_after_decode_bytes: kv_total,
        kv_bytes_per_token: per_token,
        state_bytes_per_sequence: per_seq_state,
        activations_bytes: e.compute_gpu_bytes,
        logits_bytes: e.output_bytes,
        peak_allocated_bytes: e.gpu_total_bytes,
        device_bytes,
        phases,
        terms: terms.into_vec(),
        serving: ServingEstimate::not_served(&scenario.serving),
        notes,
        llama_cpp: Some(e),
        devices: Vec::new(),
    })
}

/// A file name for launch lines: the spec's name with the format (`Llama-3.1-8B-Q4_K_M.gguf`).
pub fn gguf_file_name(spec: &ModelSpec, format: &str) -> String {
    if spec.name.ends_with(".gguf") {
        return spec.name.clone();
    }
    let base = spec.name.rsplit('/').next().unwrap_or(&spec.name);
    let base = if base.is_empty() { "model" } else { base };
    format!("{base}-{format}.gguf")
}

/// The part of an inference estimate that does not depend on batch or context: the weight format
/// and bytes, the KV dtype and cache layouts. A sweep over batch or context computes it once.
struct InferPart {
    format: WeightFormat,
    compute: Dtype,
    format_source: String,
    format_note: Option<String>,
    w: WeightsBreakdown,
    kv_dtype: KvDtype,
    vllm_layout: KvLayout,
    /// The scenario engine's layout (transformers' or a copy of vLLM's).
    layout: KvLayout,
    /// vLLM's profiled activation peak (depends on the serving limits, not on the context).
    act_peak: vllm::ActivationPeak,
    /// The serving inputs with the version's defaults filled in.
    serving: crate::scenario::ServingInputs,
    /// What the vLLM release does at start-up.
    profile: vllm_version::Profile,
}

impl InferPart {
    // Called from the single-estimate, totals and sweep paths: one copy in the wasm.
    #[inline(never)]
    fn of(spec: &ModelSpec, scenario: &Scenario) -> Result<Self, ScenarioError> {
        let (format, compute, format_source, format_note) = resolve_format(spec, scenario)?;
        let apply_skips = format_source == "quantization_config";
        let w = weights::weights(spec, &format, compute, apply_skips);
        let kv_dtype = parse_kv_dtype(scenario.kv_dtype.as_deref(), scenario.engine, compute)?;
        let flash = scenario.attention == AttentionImpl::Flash;
        let tp = scenario.serving.tensor_parallel_size.max(1);
        let vllm_layout = KvLayout::new(
            spec,
            Engine::Vllm,
            vllm_kv(kv_dtype, compute),
            compute,
            tp,
            flash,
        );
        let layout = match scenario.engine {
            Engine::Vllm => vllm_layout.clone(),
            Engine::Transformers | Engine::LlamaCpp => {
                KvLayout::new(spec, Engine::Transformers, kv_dtype, compute, 1, flash)
            }
        };
        let (serving, profile) = vllm_version::resolve(&scenario.serving, spec)?;
        let act_peak = vllm::ActivationPeak::of(spec, &serving, compute, tp, &profile);
        Ok(InferPart {
            format,
            compute,
            format_source,
            format_note,
            w,
            kv_dtype,
            vllm_layout,
            layout,
            act_peak,
            serving,
            profile,
        })
    }

    /// Whether `a` and `b` give the same part.
    fn shared_by(a: &Scenario, b: &Scenario) -> bool {
        a.weights == b.weights
            && a.dtype == b.dtype
            && a.kv_dtype == b.kv_dtype
            && a.engine == b.engine
            && (a.attention == AttentionImpl::Flash) == (b.attention == AttentionImpl::Flash)
            && a.serving == b.serving
    }
}

/// The estimate of `scenario` with its batch- and context-independent `part`.
// Called from the single-estimate, totals and sweep paths: one copy in the wasm.
#[inline(never)]
fn estimate_with(
    spec: &ModelSpec,
    scenario: &Scenario,
    overheads: &DeviceOverheads,
    part: &InferPart,
    explain: bool,
) -> Result<InferEstimate, ScenarioError> {
    let InferPart {
        format,
        compute,
        format_source,
        format_note,
        w,
        kv_dtype,
        vllm_layout,
        layout,
        act_peak,
        serving: serving_inputs,
        profile,
    } = part;
    let (compute, kv_dtype) = (*compute, *kv_dtype);
    let mut notes: Vec<String> = if explain {
        format_note.iter().cloned().collect()
    } else {
        Vec::new()
    };
    let b = scenario.batch;
    let s = scenario.seq_len;
    let enc_dec = spec.kind == ModelKind::EncoderDecoder;
    // t5: the encoder's tokens; mllama: one image's tiles for its cross-attention layers
    let encoder_tokens = if enc_dec {
        s
    } else {
        spec.vision.map_or(0, |v| v.cross_attention_tokens)
    };
    let tp = scenario.serving.tensor_parallel_size.max(1);
    let serving = vllm::serving(
        spec,
        serving_inputs,
        w,
        vllm_layout,
        compute,
        s,
        explain,
        act_peak,
        profile,
        overheads.cuda_context_bytes,
        *format == WeightFormat::Mxfp4,
    );

    let kv_steady = layout.bytes(b, s, encoder_tokens, Moment::Steady);
    let mut terms = Terms::new(explain);
    terms.add(|| weights::weights_term(format, w, compute));
    terms.add(|| {
        let (full, sliding, state) = layout.layer_counts();
        let mut t = kv_term(
            layout,
            b,
            s,
            encoder_tokens,
            kv_steady,
            (full, sliding, state),
        );
        // transformers keeps every prompt token of the sliding layers until the first decode step
        // trims them to the window: the prefill and decode phases carry that larger cache.
        if scenario.engine == Engine::Transformers && sliding > 0 && encoder_tokens == 0 {
            let after_prefill = layout.bytes(b, s, 0, Moment::AfterPrefill);
            if after_prefill > kv_steady {
                t.formula.push_str(&format!(
                    "; right after the prefill the sliding layers still hold all {} prompt tokens (DynamicSlidingWindowLayer keeps the whole prompt until the first decode step trims it to the window): {} B, the figure of the prefill and decode phases",
                    group_thousands(s),
                    group_thousands(after_prefill)
                ));
            }
        }
        t
    });

    if explain {
        if matches!(format, WeightFormat::Mxfp4) && scenario.engine == Engine::Transformers {
            notes.push("transformers keeps MXFP4 experts packed only with the triton kernels (Hopper and newer); otherwise it dequantizes them to bf16 on load".into());
        }
        if let WeightFormat::Gguf { .. } = format {
            notes.push(format!(
            "GGUF sizes are the file's tensor data as llama.cpp loads it; llama.cpp keeps token_embd ({} B) in host memory",
            group_thousands(w.host_resident_bytes)
        ));
        }
        if spec.kind == ModelKind::EncoderOnly {
            notes.push("encoder-only model: no KV cache; prefill is one forward pass".into());
        }
        if spec.no_kv_cache && scenario.engine == Engine::Transformers {
            notes.push("this transformers class keeps no KV cache: generate() runs the whole sequence again for every token".into());
        }
    }
    let sliding_desc = match scenario.engine {
        Engine::Transformers | Engine::LlamaCpp => "DynamicSlidingWindowLayer keeps a view of the last window − 1 tokens: after prefill the storage of all prompt tokens stays alive, from the first decode step min(tokens + 1, window)".to_string(),
        Engine::Vllm => format!("pages outside the window are freed: at most ⌈(window − 1)/{}⌉ + 1 pages per sequence", layout.block_size.unwrap_or(16)),
    };
    let profile = if !explain {
        EngineProfile {
            engine: scenario.engine,
            description: String::new(),
            kv_dtype,
            block_size: layout.block_size,
            sliding_window_cache: String::new(),
            mla_cache: None,
        }
    } else {
        EngineProfile {
        engine: scenario.engine,
        description: match scenario.engine {
            Engine::Transformers | Engine::LlamaCpp => format!(
                "HF transformers 5 DynamicCache, {:?} attention, tensor bytes (max_memory_allocated)",
                scenario.attention
            ),
            Engine::Vllm => format!(
                "vLLM {} ({} engine), paged KV in blocks of {} tokens, TP {tp}",
                profile.version,
                if profile.v1 { "V1" } else { "V0" },
                serving.block_size
            ),
        },
        kv_dtype,
        block_size: layout.block_size,
        sliding_window_cache: sliding_desc,
        mla_cache: layout.mla_storage.clone(),
    }
    };

    let est = match scenario.engine {
        Engine::Transformers | Engine::LlamaCpp => transformers_phases(
            spec,
            scenario,
            compute,
            format,
            w,
            layout,
            encoder_tokens,
            overheads,
            &mut terms,
        ),
        Engine::Vllm => vllm_phases(&serving, kv_steady, &mut terms),
    };
    let devices = if scenario.engine == Engine::Transformers && scenario.gpus > 1 {
        split_devices(spec, scenario, overheads, w, kv_steady, &est)?
    } else {
        Vec::new()
    };
    let (peak, device) = match devices.iter().max_by_key(|d| d.device_bytes) {
        Some(d) => (d.peak_allocated_bytes, d.device_bytes),
        None => (est.peak, est.device),
    };
    if let Some(d) = devices.iter().max_by_key(|d| d.device_bytes) {
        let n = devices.len();
        terms.add(|| Term {
            key: "device_map".into(),
            bytes: d.device_bytes,
            formula: format!(
                "device_map=\"auto\" over {} GPUs: {}; the largest is GPU {} = weights {} B + KV {} B + activations {} B + context and workspace",
                n,
                devices
                    .iter()
                    .map(|x| format!(
                        "GPU {} layers {}–{}{}{}",
                        x.device,
                        x.first_layer,
                        (x.first_layer + x.layers).saturating_sub(1),
                        if x.embedding { " + embedding" } else { "" },
                        if x.head { " + head (logits)" } else { "" }
                    ))
                    .collect::<Vec<_>>()
                    .join(", "),
                d.device,
                crate::units::group_thousands(d.weights_bytes),
                crate::units::group_thousands(d.kv_cache_bytes),
                crate::units::group_thousands(d.activations_bytes)
            ),
            source: "accelerate utils/modeling.py get_balanced_memory, infer_auto_device_map; infer/device_map.rs".into(),
        });
    }
    Ok(InferEstimate {
        engine: profile,
        weights_format: if explain {
            format.name()
        } else {
            String::new()
        },
        weights_format_source: if explain {
            format_source.clone()
        } else {
            String::new()
        },
        weights_bytes: match scenario.engine {
            Engine::Vllm => serving.weights_per_gpu_bytes,
            Engine::Transformers | Engine::LlamaCpp => w.total_bytes,
        },
        weights_breakdown: if explain {
            w.clone()
        } else {
            WeightsBreakdown::default()
        },
        kv_cache_bytes: kv_steady,
        kv_cache_after_prefill_bytes: est.kv_after_prefill.unwrap_or(kv_steady),
        kv_cache_after_decode_bytes: est.kv_after_decode.unwrap_or(kv_steady),
        kv_bytes_per_token: layout.bytes_per_token(),
        state_bytes_per_sequence: layout.state_bytes_per_sequence(),
        activations_bytes: est.activations,
        logits_bytes: est.logits,
        peak_allocated_bytes: peak,
        device_bytes: device,
        phases: est.phases,
        terms: terms.into_vec(),
        serving,
        notes,
        llama_cpp: None,
        devices,
    })
}

/// Each GPU's share under `device_map="auto"` ([`device_map::balanced`]): its modules' weights
/// (the format's bytes in proportion to the modules' parameter bytes), its layers' KV cache, and
/// the layer transients, with the logits on the head's GPU.
fn split_devices(
    spec: &ModelSpec,
    scenario: &Scenario,
    overheads: &DeviceOverheads,
    w: &WeightsBreakdown,
    kv_steady: u64,
    est: &PhaseTotals,
) -> Result<Vec<device_map::DeviceShare>, ScenarioError> {
    let elem = 2;
    let free = scenario
        .serving
        .gpu_memory_bytes
        .saturating_sub(overheads.cuda_context_bytes);
    let mut shares = device_map::balanced(spec, elem, scenario.gpus, free)?;
    let module_total: u64 = shares.iter().map(|d| d.weights_bytes).sum::<u64>().max(1);
    let layers = spec.layers.len().max(1) as u64;
    for d in &mut shares {
        d.weights_bytes =
            ((d.weights_bytes as u128 * w.total_bytes as u128) / module_total as u128) as u64;
        d.kv_cache_bytes = kv_steady.saturating_mul(d.layers) / layers;
        d.activations_bytes = est
            .activations
            .saturating_sub(est.logits)
            .saturating_add(if d.head { est.logits } else { 0 });
        d.peak_allocated_bytes = d
            .weights_bytes
            .saturating_add(d.kv_cache_bytes)
            .saturating_add(d.activations_bytes);
        d.device_bytes = d
            .peak_allocated_bytes
            .saturating_add(overheads.cuda_context_bytes)
            .saturating_add(overheads.workspace_bytes);
    }
    Ok(shares)
}

fn vllm_kv(kv: KvDtype, compute: Dtype) -> KvDtype {
    match kv {
        KvDtype::Int8 | KvDtype::Int4 => match compute {
            Dtype::Fp32 => KvDtype::Fp32,
            Dtype::Bf16 => KvDtype::Bf16,
            Dtype::Fp16 => KvDtype::Fp16,
        },
        other => other,
    }
}

fn kv_term(
    layout: &KvLayout,
    b: u64,
    s: u64,
    enc: u64,
    bytes: u64,
    (full, sliding, state): (u64, u64, u64),
) -> Term {
    let mut parts = vec![format!(
        "{} B/token ({} full + {} sliding layers, {}) × {} tokens × batch {}",
        group_thousands(layout.bytes_per_token()),
        full,
        sliding,
        layout.kv_dtype.name(),
        group_thousands(s),
        b
    )];
    if sliding > 0 {
        parts.push("sliding layers capped at their window".into());
    }
    if let Some(bs) = layout.block_size {
        parts.push(format!("rounded to pages of {bs} tokens"));
    }
    if state > 0 {
        parts.push(format!(
            "{} state layers: {} B per sequence",
            state,
            group_thousands(layout.state_bytes_per_sequence())
        ));
    }
    if enc > 0 {
        parts.push(format!(
            "cross-attention {} B/encoder token × {} tokens",
            group_thousands(layout.cross_bytes_per_token()),
            group_thousands(enc)
        ));
    }
    Term {
        key: "kv_cache".into(),
        bytes,
        formula: format!("{} = {} B", parts.join("; "), group_thousands(bytes)),
        source: layout
            .mla_storage
            .clone()
            .unwrap_or_else(|| "2 × kv_heads × head_dim × dtype per token and layer; transformers cache_utils DynamicLayer/DynamicSlidingWindowLayer; vLLM kv_cache_interface specs".into()),
    }
}

struct PhaseTotals {
    kv_after_prefill: Option<u64>,
    kv_after_decode: Option<u64>,
    activations: u64,
    logits: u64,
    peak: u64,
    device: u64,
    phases: Vec<Phase>,
}

#[allow(clippy::too_many_arguments)]
fn transformers_phases(
    spec: &ModelSpec,
    scenario: &Scenario,
    compute: Dtype,
    format: &WeightFormat,
    w: &WeightsBreakdown,
    layout: &KvLayout,
    encoder_tokens: u64,
    overheads: &DeviceOverheads,
    terms: &mut Terms,
) -> PhaseTotals {
    let b = scenario.batch;
    let s = scenario.seq_len;
    let a = compute.bytes();
    let enc_dec = spec.kind == ModelKind::EncoderDecoder;
    let ssm_scan = if overheads.torch_fallbacks {
        activations::SsmScan::Torch
    } else {
        activations::SsmScan::Kernels
    };
    let weights_bytes = w.total_bytes;
    // The model class's non-persistent buffers (causal-mask and sinusoid tables), resident from load.
    let buffers_bytes = spec.runtime_buffer_bytes(a);
    let resident = weights_bytes.saturating_add(buffers_bytes);
    // Load: bitsandbytes quantizes each tensor on the device from its 16-bit copy.
    let load_transient = match format {
        WeightFormat::BnbInt8 | WeightFormat::Bnb4 { .. } => w.largest_tensor_compute_bytes,
        _ => 0,
    };
    let prefill_shape = ForwardShape {
        batch: b,
        tokens: s,
        kv_len: s,
        act_bytes: a,
        attention: scenario.attention,
        logits_to_keep: scenario.logits_to_keep,
        experts: activations::ExpertsPath::Transformers,
        ssm_scan,
    };
    let (kv_prefill, kv_decode_before) = if enc_dec {
        let k = layout.bytes(b, 1, encoder_tokens, Moment::AfterPrefill);
        (k, k)
    } else {
        let k = layout.bytes(b, s, encoder_tokens, Moment::AfterPrefill);
        (k, k)
    };
    // An encoder–decoder generates as `generate()` does: the encoder once over the prompt (no cache
    // exists yet), its output (b·s·H) kept for every step, then one decoder token at a time
    // against the self- and cross-attention cache, from `decoder_start_token_id`.
    let encoder_out = if enc_dec {
        b.saturating_mul(s)
            .saturating_mul(spec.hidden_size)
            .saturating_mul(a)
    } else {
        0
    };
    let decoder_step = |kv_len: u64| {
        let mut p = activations::decoder_step_peak(
            spec,
            &ForwardShape {
                batch: b,
                tokens: 1,
                kv_len,
                act_bytes: a,
                attention: scenario.attention,
                logits_to_keep: 1,
                experts: activations::ExpertsPath::Transformers,
                ssm_scan,
            },
        );
        p.embeddings_bytes = p.embeddings_bytes.saturating_add(encoder_out);
        p
    };
    let (fwd, prefill_act, prefill_peak) = if enc_dec {
        let enc = activations::encoder_pass_peak(spec, &prefill_shape);
        let first = decoder_step(1);
        let encoder_pass = resident.saturating_add(enc.total());
        let first_step = resident
            .saturating_add(kv_prefill)
            .saturating_add(first.total());
        let mut fwd = enc;
        fwd.logits_bytes = first.logits_bytes;
        // the activations of the phase's peak: the encoder pass (no cache yet) or the first step
        let act = encoder_pass
            .max(first_step)
            .saturating_sub(resident)
            .saturating_sub(kv_prefill);
        (fwd, act, encoder_pass.max(first_step))
    } else {
        let fwd = forward_peak(spec, &prefill_shape);
        let act = fwd.total();
        (
            fwd,
            act,
            resident.saturating_add(kv_prefill).saturating_add(act),
        )
    };
    let prefill_end = resident
        .saturating_add(kv_prefill)
        .saturating_add(encoder_out)
        .saturating_add(fwd.logits_bytes);

    // Decode: one token against the cache; torch.cat holds one layer's old and new K (or V).
    let decode_len = if enc_dec { 2 } else { s.saturating_add(1) };
    let decode_shape = ForwardShape {
        batch: b,
        // without a cache every step runs the whole sequence again
        tokens: if spec.no_kv_cache { decode_len } else { 1 },
        kv_len: decode_len,
        act_bytes: a,
        attention: scenario.attention,
        logits_to_keep: 1,
        experts: activations::ExpertsPath::Transformers,
        ssm_scan,
    };
    let dec = if enc_dec {
        decoder_step(2)
    } else {
        forward_peak(spec, &decode_shape)
    };
    let cat_copy = layout.largest_layer_half_bytes(b, if enc_dec { 1 } else { s });
    let dequant = match layout.kv_dtype {
        KvDtype::Int8 | KvDtype::Int4 => {
            // QuantizedCache dequantizes one layer's whole K and V to the compute dtype per step.
            let per_layer = layout.layers.len().max(1) as u64;
            let full = KvLayout {
                kv_dtype: match compute {
                    Dtype::Fp32 => KvDtype::Fp32,
                    Dtype::Bf16 => KvDtype::Bf16,
                    Dtype::Fp16 => KvDtype::Fp16,
                },
                ..layout.clone()
            };
            full.bytes(b, s, 0, Moment::Steady) / per_layer
        }
        _ => 0,
    };
    let kv_after_decode = if enc_dec {
        layout.bytes(b, 2, encoder_tokens, Moment::Steady)
    } else {
        layout.bytes(b, s.saturating_add(1), encoder_tokens, Moment::Steady)
    };
    // torch.cat grows one layer at a time: at a layer's cache update its old and grown copies are
    // alive with the forward's whole-forward tensors and that layer's input; by the last layer's
    // attention (or the head) every layer holds its grown copy, and a QuantizedCache's dequantized
    // layer rides with the attention.
    let cat_moment = kv_decode_before
        .saturating_add(cat_copy)
        .saturating_add(dec.whole_forward_bytes())
        .saturating_add(dec.block_input_bytes);
    let attention_moment = kv_after_decode
        .saturating_add(dequant)
        .saturating_add(dec.total());
    // The parts of the decode peak: the cache at that moment and the activations riding on it.
    let (decode_cache, decode_act) = if cat_moment >= attention_moment {
        (
            kv_decode_before.saturating_add(cat_copy),
            dec.whole_forward_bytes()
                .saturating_add(dec.block_input_bytes),
        )
    } else {
        (kv_after_decode.saturating_add(dequant), dec.total())
    };
    let decode_peak = resident.saturating_add(cat_moment.max(attention_moment));
    let decode_end = resident
        .saturating_add(kv_after_decode)
        .saturating_add(encoder_out)
        .saturating_add(dec.logits_bytes);

    let load_peak = resident.saturating_add(load_transient);
    let peak = load_peak.max(prefill_peak).max(decode_peak);
    let device = peak
        .saturating_add(overheads.cuda_context_bytes)
        .saturating_add(overheads.workspace_bytes);

    terms.add(|| Term {
        key: "activations".into(),
        bytes: prefill_act,
        formula: format!(
            "prefill of {} × {} tokens: max(largest layer #{} {} B + its input {} B + embeddings {} B + position ids {} B + mask {} B + rotary cos/sin {} B, head: logits {} B + max(final hidden {} B, fp32 last-position copy {} B)) = {} B",
            b,
            group_thousands(s),
            fwd.layer_index,
            group_thousands(fwd.layer_bytes),
            group_thousands(fwd.block_input_bytes),
            group_thousands(fwd.embeddings_bytes),
            group_thousands(fwd.position_ids_bytes),
            group_thousands(fwd.mask_bytes),
            group_thousands(fwd.rope_bytes),
            group_thousands(fwd.logits_bytes),
            group_thousands(fwd.final_hidden_bytes),
            group_thousands(fwd.logits_upcast_bytes),
            group_thousands(if enc_dec { fwd.total() } else { prefill_act })
        ) + &if enc_dec {
            format!(
                "; encoder–decoder: the encoder pass above ({} B, before any cache) or the first decoder token against the cache with the encoder output ({} B) kept, whichever is larger, less the cache = {} B",
                group_thousands(fwd.total()),
                group_thousands(encoder_out),
                group_thousands(prefill_act)
            )
        } else {
            String::new()
        },
        source: "transformers 5 modeling_*.py forward without grad (inputs_embeds and the layer's input held by the callers, residual + normed input, gated MLP act·up 3I, eager: rotated q + repeat_kv copies + scores); generate's fp32 logits copy; docs/formulas/inference.md".into(),
    });
    if buffers_bytes > 0 {
        terms.add(|| Term {
            key: "model_buffers".into(),
            bytes: buffers_bytes,
            formula: spec
                .runtime_buffers
                .iter()
                .map(|rb| format!("{} {} B", rb.name, group_thousands(rb.bytes(a))))
                .collect::<Vec<_>>()
                .join(" + "),
            source: "the model class's non-persistent buffers (nn.Buffer(..., persistent=False) in its __init__): resident from load, in no checkpoint or parameter count".into(),
        });
    }
    if fwd.eager_scores_bytes > 0 {
        terms.add(|| Term {
            key: "eager_scores".into(),
            bytes: fwd.eager_scores_bytes,
            formula: format!(
                "batch {b} × heads × {} × {} × {} B = {} B (inside activations; repeat_kv copies {} B)",
                group_thousands(s),
                group_thousands(s),
                fwd.eager_scores_bytes
                    / b
                        .saturating_mul(s)
                        .saturating_mul(s)
                        .saturating_mul(
                            spec.layers
                                .iter()
                                .find_map(|l| l.attention)
                                .map_or(1, |a| a.num_heads)
                        )
                        .max(1),
                group_thousands(fwd.eager_scores_bytes),
                group_thousands(fwd.repeat_kv_bytes)
            ),
            source: "transformers eager_attention_forward: + mask, softmax(dtype=float32) = ATen _softmax(x.toType(float32)) (16-bit scores + fp32 copy + fp32 result; gpt2/bert/t5 softmax in dtype: 2 × dtype); repeat_kv expand+reshape copies".into(),
        });
    }
    if fwd.moe_routing_bytes > 0 {
        terms.add(|| Term {
            key: "moe_routing".into(),
            bytes: fwd.moe_routing_bytes,
            formula: format!(
                "router logits + fp32 softmax (T × E) + top-k weights/indices + int64 one-hot expert mask (E × k × T) = {} B (inside activations)",
                group_thousands(fwd.moe_routing_bytes)
            ),
            source: "transformers 5 MoE experts loop (one_hot(top_k_index).permute)".into(),
        });
    }
    terms.add(|| Term {
        key: "logits".into(),
        bytes: fwd.logits_bytes,
        formula: format!(
            "batch {b} × {} positions × vocab {} × {a} B = {} B",
            if scenario.logits_to_keep == 0 {
                group_thousands(s)
            } else {
                scenario.logits_to_keep.min(s).to_string()
            },
            group_thousands(spec.vocab_size),
            group_thousands(fwd.logits_bytes)
        ),
        source:
            "transformers *ForCausalLM.forward(logits_to_keep): lm_head on the kept positions only"
                .into(),
    });
    terms.add(|| Term {
        key: "decode_transient".into(),
        bytes: cat_copy.max(dequant),
        formula: format!(
            "torch.cat keeps one layer's old K and the grown copy: {} B{}",
            group_thousands(cat_copy),
            if dequant > 0 {
                format!(
                    "; QuantizedCache dequantized layer {} B",
                    group_thousands(dequant)
                )
            } else {
                String::new()
            }
        ),
        source: "transformers cache_utils DynamicLayer.update (torch.cat)".into(),
    });
    terms.add(|| Term {
        key: "cuda_context".into(),
        bytes: overheads
            .cuda_context_bytes
            .saturating_add(overheads.workspace_bytes),
        formula: format!(
            "CUDA context {} B + cuBLAS workspace {} B (device total only)",
            group_thousands(overheads.cuda_context_bytes),
            group_thousands(overheads.workspace_bytes)
        ),
        source: "DeviceOverheads defaults (docs/formulas.md §Overheads)".into(),
    });
    PhaseTotals {
        kv_after_prefill: Some(kv_prefill),
        kv_after_decode: Some(kv_after_decode),
        activations: prefill_act,
        logits: fwd.logits_bytes,
        peak,
        device,
        phases: if terms.explain() {
            vec![
                phase(
                    "load",
                    resident,
                    load_peak,
                    vec![
                        ("weights", weights_bytes),
                        ("model_buffers", buffers_bytes),
                        ("quantize_on_load", load_transient),
                    ],
                ),
                phase(
                    "prefill",
                    prefill_end,
                    prefill_peak,
                    vec![
                        ("weights", weights_bytes),
                        ("model_buffers", buffers_bytes),
                        ("kv_cache", kv_prefill),
                        ("activations", prefill_act),
                    ],
                ),
                phase(
                    "decode",
                    decode_end,
                    decode_peak,
                    vec![
                        ("weights", weights_bytes),
                        ("model_buffers", buffers_bytes),
                        ("kv_cache", kv_decode_before),
                        (
                            "cache_growth",
                            decode_cache.saturating_sub(kv_decode_before),
                        ),
                        ("activations", decode_act),
                    ],
                ),
            ]
        } else {
            Vec::new()
        },
    }
}

fn vllm_phases(serving: &ServingEstimate, kv_steady: u64, terms: &mut Terms) -> PhaseTotals {
    let w = serving.weights_per_gpu_bytes;
    let act = serving.activation_peak_bytes;
    let pool = serving.kv_pool_bytes;
    let peak = w.saturating_add(pool).saturating_add(act);
    terms.add(|| Term {
        key: "activations".into(),
        bytes: act,
        formula: serving
            .terms
            .iter()
            .find(|t| t.key == "serving.activation_peak")
            .map(|t| t.formula.clone())
            .unwrap_or_default(),
        source: "vLLM profile_run (see serving.activation_peak)".into(),
    });
    terms.add(|| Term {
        key: "kv_pool".into(),
        bytes: pool,
        formula: format!(
            "vLLM pre-allocates the whole pool ({} B); this scenario's sequences occupy {} B of it",
            group_thousands(pool),
            group_thousands(kv_steady)
        ),
        source: "vLLM v1 KV cache allocation".into(),
    });
    PhaseTotals {
        kv_after_prefill: None,
        kv_after_decode: None,
        activations: act,
        logits: 0,
        peak,
        // CUDA graphs: inside the budget from 0.21 (the pool is smaller by them), on top of it before
        device: peak
            .saturating_add(serving.non_torch_bytes)
            .saturating_add(serving.cuda_graph_bytes),
        phases: if terms.explain() {
            vec![
                phase("load", w, w, vec![("weights", w)]),
                phase(
                    "prefill",
                    w.saturating_add(pool),
                    peak,
                    vec![("weights", w), ("kv_pool", pool), ("activations", act)],
                ),
                phase(
                    "decode",
                    w.saturating_add(pool),
                    peak,
                    vec![("weights", w), ("kv_pool", pool), ("activations", act)],
                ),
            ]
        } else {
            Vec::new()
        },
    }
}

/// The totals of one inference estimate: what charts and solvers read. Each figure equals the
/// [`InferEstimate`] (or [`ServingEstimate`]) field of the same name.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct InferTotals {
    /// [`InferEstimate::weights_bytes`].
    pub weights_bytes: u64,
    /// [`InferEstimate::kv_cache_bytes`].
    pub kv_cache_bytes: u64,
    /// [`InferEstimate::kv_bytes_per_token`].
    pub kv_bytes_per_token: u64,
    /// [`InferEstimate::activations_bytes`].
    pub activations_bytes: u64,
    /// [`InferEstimate::peak_allocated_bytes`].
    pub peak_allocated_bytes: u64,
    /// [`InferEstimate::device_bytes`].
    pub device_bytes: u64,
    /// [`ServingEstimate::kv_pool_bytes`].
    pub kv_pool_bytes: u64,
    /// [`ServingEstimate::shortfall_bytes`].
    pub shortfall_bytes: u64,
    /// [`ServingEstimate::concurrency_at_context`].
    pub concurrency_at_context: f64,
    /// [`ServingEstimate::fits`].
    pub serving_fits: bool,
    /// Whether vLLM sizes its KV cache from the memory free after warm-up (0.34's extensible KV
    /// cache): its device total is the GPU less its own margin by design, not a share the user set.
    pub serving_self_sized: bool,
}

impl InferTotals {
    /// The totals of a full estimate.
    pub fn of(e: &InferEstimate) -> Self {
        InferTotals {
            weights_bytes: e.weights_bytes,
            kv_cache_bytes: e.kv_cache_bytes,
            kv_bytes_per_token: e.kv_bytes_per_token,
            activations_bytes: e.activations_bytes,
            peak_allocated_bytes: e.peak_allocated_bytes,
            device_bytes: e.device_bytes,
            kv_pool_bytes: e.serving.kv_pool_bytes,
            shortfall_bytes: e.serving.shortfall_bytes,
            concurrency_at_context: e.serving.concurrency_at_context,
            serving_fits: e.serving.fits,
            serving_self_sized: e.serving.budget == vllm_version::Budget::Extensible,
        }
    }
}

/// The totals of one inference scenario.
pub fn inference_totals(
    spec: &ModelSpec,
    scenario: &Scenario,
    overheads: &DeviceOverheads,
) -> Result<InferTotals, ScenarioError> {
    estimate_inference_explained(spec, scenario, overheads, false).map(|e| InferTotals::of(&e))
}

/// Estimates the totals of every scenario of `scenarios` for one model (a chart's points).
/// Consecutive scenarios that differ only in batch, context or serving limits share the weights
/// and cache layouts, computed once.
pub fn sweep(
    spec: &ModelSpec,
    scenarios: &[Scenario],
    overheads: &DeviceOverheads,
) -> Vec<Result<InferTotals, ScenarioError>> {
    let mut shared = crate::sweep::Shared::new();
    scenarios
        .iter()
        .map(|s| {
            s.validate()?;
            if s.engine == Engine::LlamaCpp {
                return llama_cpp_estimate(spec, s, overheads, false).map(|e| InferTotals::of(&e));
            }
            vllm::validate(&s.serving)?;
            let part = shared.get(s, InferPart::shared_by, || InferPart::of(spec, s))?;
            estimate_with(spec, s, overheads, part, false).map(|e| InferTotals::of(&e))
        })
        .collect()
}
