//! Solvers: the longest context that fits at the scenario's batch, and the largest batch
//! (concurrency) at its context, on one GPU of `serving.gpu_memory_bytes`.
//!
//! "Fits" means, for transformers: the device total (peak tensor bytes + CUDA context + workspace)
//! is at most the GPU memory; for vLLM: the KV pool holds `batch` sequences of `seq_len` tokens
//! (`concurrency_at_context ≥ batch`) and vLLM starts (`max_model_len` is set to the context).
//! Both are monotone in the searched value, so a binary search over 1 ..= `MAX_SCENARIO_VALUE` is exact.

use super::inference_totals;
use crate::error::ScenarioError;
use crate::report::DeviceOverheads;
use crate::scenario::{Engine, Scenario, MAX_SCENARIO_VALUE};
use crate::spec::ModelSpec;

fn fits(spec: &ModelSpec, s: &Scenario, o: &DeviceOverheads) -> Result<bool, ScenarioError> {
    let e = inference_totals(spec, s, o)?;
    Ok(match s.engine {
        Engine::Transformers | Engine::LlamaCpp => e.device_bytes <= s.serving.gpu_memory_bytes,
        Engine::Vllm => e.shortfall_bytes == 0 && e.concurrency_at_context >= s.batch as f64,
    })
}

/// Largest `v` in 1..=`max` with `ok(v)`, or 0 when even 1 does not fit.
fn search(
    max: u64,
    mut ok: impl FnMut(u64) -> Result<bool, ScenarioError>,
) -> Result<u64, ScenarioError> {
    if !ok(1)? {
        return Ok(0);
    }
    let (mut lo, mut hi) = (1u64, max.max(1));
    if ok(hi)? {
        return Ok(hi);
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid)? {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(lo)
}

/// The longest context (tokens per sequence) that fits at `scenario.batch` (0: none fits), capped
/// at the config's `max_position_embeddings` when it declares one.
pub fn max_context(
    spec: &ModelSpec,
    scenario: &Scenario,
    overheads: &DeviceOverheads,
) -> Result<u64, ScenarioError> {
    let cap = match spec.max_position_embeddings {
        0 => MAX_SCENARIO_VALUE,
        m => m.min(MAX_SCENARIO_VALUE),
    };
    search(cap, |len| {
        let mut s = scenario.clone();
        s.seq_len = len;
        if s.engine == Engine::Vllm {
            s.serving.max_model_len = len;
        }
        fits(spec, &s, overheads)
    })
}

/// The largest batch (concurrent sequences) that fits at `scenario.seq_len` (0: none fits).
pub fn max_batch(
    spec: &ModelSpec,
    scenario: &Scenario,
    overheads: &DeviceOverheads,
) -> Result<u64, ScenarioError> {
    search(MAX_SCENARIO_VALUE, |batch| {
        let mut s = scenario.clone();
        s.batch = batch;
        if s.engine == Engine::Vllm && s.serving.max_model_len == 0 {
            s.serving.max_model_len = s.seq_len;
        }
        fits(spec, &s, overheads)
    })
}
