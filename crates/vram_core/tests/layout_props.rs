//! Property tests of per-rank layouts (issue 10): more tensor, pipeline, expert or data-parallel
//! sharding never increases any rank's persistent bytes; the ranks together hold at least what one
//! GPU would; sequence and micro-batch never decrease a rank's activations.

use proptest::prelude::*;
use vram_core::layout::{Framework, Layout, Recompute};
use vram_core::report::DeviceOverheads;
use vram_core::scenario::*;
use vram_core::train::{estimate_training, TrainEstimate};
use vram_core::ModelSpec;

/// (preset, TP sizes dividing its heads and K/V heads, routed experts).
const MODELS: &[(&str, &[u64], u64)] = &[
    ("meta-llama__Llama-2-7b-hf", &[1, 2, 4, 8], 0),
    ("meta-llama__Llama-3.1-8B", &[1, 2, 4, 8], 0),
    ("HuggingFaceTB__SmolLM2-135M-Instruct", &[1, 3], 0),
    ("Qwen__Qwen3-30B-A3B", &[1, 2, 4], 128),
    ("mistralai__Mixtral-8x7B-v0.1", &[1, 2, 4, 8], 8),
    ("deepseek-ai__DeepSeek-V2-Lite", &[1, 2, 4, 8], 64),
];

fn spec(id: &str) -> ModelSpec {
    vram_core::parse_config(vram_core::presets::find(id).unwrap().json, None).unwrap()
}

fn est(m: &ModelSpec, s: &Scenario) -> TrainEstimate {
    estimate_training(m, s, &DeviceOverheads::default()).unwrap()
}

fn persistent(e: &TrainEstimate) -> Vec<u64> {
    e.ranks
        .iter()
        .map(|r| r.weights_bytes + r.gradients_bytes + r.optimizer_bytes)
        .collect()
}

#[derive(Clone, Debug)]
struct Case {
    model: usize,
    tp_i: usize,
    pp: u64,
    ep: u64,
    dp: u64,
    dist_opt: bool,
    batch: u64,
    seq_len: u64,
    full_recompute: bool,
}

fn case() -> impl Strategy<Value = Case> {
    (
        0..MODELS.len(),
        0usize..4,
        prop_oneof![Just(1u64), Just(2), Just(4)],
        prop_oneof![Just(1u64), Just(2), Just(4), Just(8)],
        prop_oneof![Just(1u64), Just(2), Just(4)],
        any::<bool>(),
        1u64..4,
        64u64..4096,
        any::<bool>(),
    )
        .prop_map(
            |(model, tp_i, pp, ep, dp, dist_opt, batch, seq_len, full_recompute)| Case {
                model,
                tp_i,
                pp,
                ep,
                dp,
                dist_opt,
                batch,
                seq_len,
                full_recompute,
            },
        )
}

fn scenario(c: &Case, tp: u64, pp: u64, ep: u64, dp: u64) -> Scenario {
    let experts = MODELS[c.model].2;
    let ep = if experts > 0 && experts.is_multiple_of(ep) && (tp * dp).is_multiple_of(ep) {
        ep
    } else {
        1
    };
    Scenario {
        dtype: Dtype::Bf16,
        mixed_precision: MixedPrecision::Bf16,
        batch: c.batch,
        seq_len: c.seq_len,
        gpus: tp * pp * dp,
        layout: Layout {
            framework: Framework::Megatron,
            tp,
            pp,
            ep,
            // Experts unsplit by TP in every case (EP alone shards them), so cases compare like
            // for like.
            etp: if experts > 0 { 1 } else { 0 },
            sequence_parallel: tp > 1,
            distributed_optimizer: c.dist_opt,
            recompute: if c.full_recompute {
                Recompute::Full
            } else {
                Recompute::None
            },
            ..Layout::default()
        },
        ..Scenario::default()
    }
}

fn tp_of(c: &Case) -> u64 {
    let tps = MODELS[c.model].1;
    tps[c.tp_i % tps.len()]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn more_tensor_parallelism_never_increases_any_rank_persistent_bytes(c in case()) {
        let m = spec(MODELS[c.model].0);
        let tps = MODELS[c.model].1;
        let i = c.tp_i % tps.len();
        prop_assume!(i + 1 < tps.len());
        let (a, b) = (tps[i], tps[i + 1]);
        let few = est(&m, &scenario(&c, a, c.pp, 1, c.dp));
        let more = est(&m, &scenario(&c, b, c.pp, 1, c.dp));
        prop_assert!(persistent(&more).iter().max() <= persistent(&few).iter().max());
    }

    #[test]
    fn more_pipeline_stages_never_increase_any_rank_persistent_bytes(c in case()) {
        let m = spec(MODELS[c.model].0);
        let tp = tp_of(&c);
        prop_assume!(c.pp * 2 <= m.layers.len() as u64);
        let few = est(&m, &scenario(&c, tp, c.pp, 1, c.dp));
        let more = est(&m, &scenario(&c, tp, c.pp * 2, 1, c.dp));
        prop_assert!(persistent(&more).iter().max() <= persistent(&few).iter().max());
    }

    #[test]
    fn more_expert_parallelism_never_increases_any_rank_persistent_bytes(c in case()) {
        let m = spec(MODELS[c.model].0);
        prop_assume!(MODELS[c.model].2 > 0);
        let tp = tp_of(&c);
        let few = est(&m, &scenario(&c, tp, 1, 1, 8));
        let more = est(&m, &scenario(&c, tp, 1, c.ep, 8));
        prop_assert!(persistent(&more).iter().max() <= persistent(&few).iter().max());
    }

    #[test]
    fn more_data_parallel_ranks_never_increase_any_rank_persistent_bytes(c in case()) {
        let m = spec(MODELS[c.model].0);
        let tp = tp_of(&c);
        let few = est(&m, &scenario(&c, tp, c.pp, 1, c.dp));
        let more = est(&m, &scenario(&c, tp, c.pp, 1, c.dp * 2));
        prop_assert!(persistent(&more).iter().max() <= persistent(&few).iter().max());
    }

    #[test]
    fn ranks_together_hold_at_least_one_gpus_model_states(c in case()) {
        let m = spec(MODELS[c.model].0);
        let tp = tp_of(&c);
        let one = est(&m, &scenario(&c, 1, 1, 1, 1));
        let e = est(&m, &scenario(&c, tp, c.pp, c.ep, c.dp));
        let total: u64 = e
            .ranks
            .iter()
            .map(|r| (r.weights_bytes + r.gradients_bytes + r.optimizer_bytes) * r.count)
            .sum();
        prop_assert!(total >= persistent(&one)[0]);
    }

    #[test]
    fn longer_sequences_and_larger_micro_batches_never_decrease_a_rank(c in case(), extra in 1u64..512) {
        let m = spec(MODELS[c.model].0);
        let tp = tp_of(&c);
        let base = scenario(&c, tp, c.pp, c.ep, c.dp);
        let longer = Scenario { seq_len: c.seq_len + extra, ..base.clone() };
        let larger = Scenario { batch: c.batch + 1, ..base.clone() };
        let (b, l, g) = (est(&m, &base), est(&m, &longer), est(&m, &larger));
        for other in [&l, &g] {
            for (x, y) in b.ranks.iter().zip(other.ranks.iter()) {
                prop_assert!(y.activations_bytes >= x.activations_bytes);
                prop_assert!(y.peak_allocated_bytes >= x.peak_allocated_bytes);
            }
        }
    }
}

/// Dense models transformers' llama-family tensor-parallel plan splits, with TP sizes dividing
/// their heads and K/V heads.
const HF_TP_MODELS: &[(&str, &[u64])] = &[
    ("meta-llama__Llama-2-7b-hf", &[1, 2, 4, 8]),
    ("meta-llama__Llama-3.1-8B", &[1, 2, 4, 8]),
    ("HuggingFaceTB__SmolLM2-135M-Instruct", &[1, 3]),
    ("Qwen__Qwen2-0.5B-Instruct", &[1, 2]),
];

fn hf_tp(tp: u64, batch: u64, seq_len: u64, mixed: bool) -> Scenario {
    Scenario {
        dtype: Dtype::Fp32,
        mixed_precision: if mixed {
            MixedPrecision::Bf16
        } else {
            MixedPrecision::None
        },
        batch,
        seq_len,
        gpus: tp,
        layout: Layout {
            framework: Framework::Hf,
            tp,
            ..Layout::default()
        },
        ..Scenario::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// transformers' tensor parallelism: a larger TP group never adds to a rank's model states
    /// (the embedding's gradient stays whole, everything else shrinks), the ranks together hold
    /// at least one GPU's, and longer sequences never shrink a rank.
    #[test]
    fn hf_tensor_parallelism_shards_without_losing_bytes(
        model in 0..HF_TP_MODELS.len(),
        i in 0usize..4,
        batch in 1u64..3,
        seq_len in 16u64..1024,
        mixed in any::<bool>(),
    ) {
        let (id, tps) = HF_TP_MODELS[model];
        let m = spec(id);
        let i = i % tps.len();
        prop_assume!(i + 1 < tps.len());
        let (a, b) = (tps[i], tps[i + 1]);
        let few = est(&m, &hf_tp(a, batch, seq_len, mixed));
        let more = est(&m, &hf_tp(b, batch, seq_len, mixed));
        prop_assert!(persistent(&more).iter().max() <= persistent(&few).iter().max());
        prop_assert!(more.peak_allocated_bytes <= few.peak_allocated_bytes);
        let one = est(&m, &hf_tp(1, batch, seq_len, mixed));
        let total: u64 = more
            .ranks
            .iter()
            .map(|r| (r.weights_bytes + r.gradients_bytes + r.optimizer_bytes) * r.count)
            .sum();
        prop_assert!(total >= persistent(&one)[0]);
        let longer = est(&m, &hf_tp(b, batch, seq_len + 64, mixed));
        prop_assert!(longer.peak_allocated_bytes >= more.peak_allocated_bytes);
    }
}
