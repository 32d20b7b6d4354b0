//! Solvers: the largest micro-batch and the largest sequence length whose estimate fits a budget.
//! Binary search over [`super::training_totals`] (the estimate without explanations), which is monotone in batch and sequence length
//! (property-tested in `tests/train_props.rs`).

use super::Prober;
use crate::report::DeviceOverheads;
use crate::scenario::{Scenario, MAX_SCENARIO_VALUE};
use crate::spec::ModelSpec;
use serde::{Deserialize, Serialize};

/// Which total must fit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BudgetKind {
    /// Tensor bytes (`max_memory_allocated`).
    Allocated,
    /// Caching-allocator reserved bytes.
    Reserved,
    /// What `nvidia-smi` shows (reserved + context + workspace) — what must fit on the card.
    #[default]
    Device,
}

/// A memory budget per GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    /// Bytes available.
    pub bytes: u64,
    /// Which total is compared.
    pub kind: BudgetKind,
}

fn fits(prober: &Prober<'_>, s: &Scenario, b: Budget) -> bool {
    match prober.totals(s) {
        Ok(e) => {
            let v = match b.kind {
                BudgetKind::Allocated => e.peak_allocated_bytes,
                BudgetKind::Reserved => e.peak_reserved_bytes,
                BudgetKind::Device => e.device_bytes,
            };
            v <= b.bytes
        }
        Err(_) => false,
    }
}

fn largest(hi: u64, ok: impl Fn(u64) -> bool) -> Option<u64> {
    if !ok(1) {
        return None;
    }
    let (mut lo, mut hi) = (1u64, hi.max(1));
    if ok(hi) {
        return Some(hi);
    }
    // invariant: ok(lo), !ok(hi)
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(lo)
}

/// Largest micro-batch (up to `limit`) that fits; `None` when batch 1 does not.
pub fn max_batch(
    spec: &ModelSpec,
    scenario: &Scenario,
    overheads: &DeviceOverheads,
    budget: Budget,
    limit: u64,
) -> Option<u64> {
    let prober = Prober::new(spec, scenario, overheads);
    largest(limit.min(MAX_SCENARIO_VALUE), |b| {
        fits(
            &prober,
            &Scenario {
                batch: b,
                ..scenario.clone()
            },
            budget,
        )
    })
}

/// Largest sequence length (up to `limit`) that fits; `None` when 1 token does not.
pub fn max_seq_len(
    spec: &ModelSpec,
    scenario: &Scenario,
    overheads: &DeviceOverheads,
    budget: Budget,
    limit: u64,
) -> Option<u64> {
    let prober = Prober::new(spec, scenario, overheads);
    largest(limit.min(MAX_SCENARIO_VALUE), |s| {
        fits(
            &prober,
            &Scenario {
                seq_len: s,
                ..scenario.clone()
            },
            budget,
        )
    })
}
