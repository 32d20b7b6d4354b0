//! The sweep and totals calls give exactly the figures of the full estimates they stand for.

use vram_core::infer;
use vram_core::presets::PRESETS;
use vram_core::report::DeviceOverheads;
use vram_core::scenario::{
    AttentionImpl, BaseQuant, Engine, Lora, LoraTargets, Scenario, ZeroStage,
};
use vram_core::train;

fn training_bases() -> Vec<Scenario> {
    vec![
        Scenario::default(),
        Scenario {
            attention: AttentionImpl::Eager,
            grad_checkpointing: true,
            ..Scenario::default()
        },
        Scenario {
            lora: Some(Lora {
                r: 16,
                alpha: 32,
                targets: LoraTargets::AllLinear,
                base_quant: BaseQuant::Nf4,
            }),
            ..Scenario::default()
        },
        Scenario {
            gpus: 8,
            zero: ZeroStage(3),
            offload_optimizer: true,
            ..Scenario::default()
        },
    ]
}

#[test]
fn training_sweep_equals_the_full_estimate_at_every_point() {
    let o = DeviceOverheads::default();
    for p in PRESETS {
        let spec = vram_core::parse_config(p.json, None).unwrap();
        for base in training_bases() {
            // batch and sequence vary (shared persistent part), then the optimizer (a new one).
            let mut points: Vec<Scenario> = [1, 2, 8, 0, 3]
                .iter()
                .map(|&b| Scenario {
                    batch: b,
                    ..base.clone()
                })
                .collect();
            points.push(Scenario {
                seq_len: 512,
                optimizer: vram_core::scenario::Optimizer::Adamw8bit,
                ..base.clone()
            });
            let swept = train::sweep(&spec, &points, &o);
            assert_eq!(swept.len(), points.len());
            for (s, got) in points.iter().zip(swept) {
                let want = train::estimate_training(&spec, s, &o);
                match (want, got) {
                    (Ok(e), Ok(t)) => {
                        let from_estimate = (
                            e.weights_bytes,
                            e.gradients_bytes,
                            e.optimizer_bytes,
                            e.activations_bytes,
                            e.optimizer_temp_bytes,
                            e.buffers_bytes,
                            e.peak_allocated_bytes,
                            e.peak_phase.as_str(),
                            e.peak_reserved_bytes,
                            e.device_bytes,
                            e.cpu_offload_bytes,
                            e.trainable_params,
                        );
                        let from_totals = (
                            t.weights_bytes,
                            t.gradients_bytes,
                            t.optimizer_bytes,
                            t.activations_bytes,
                            t.optimizer_temp_bytes,
                            t.buffers_bytes,
                            t.peak_allocated_bytes,
                            t.peak_phase,
                            t.peak_reserved_bytes,
                            t.device_bytes,
                            t.cpu_offload_bytes,
                            t.trainable_params,
                        );
                        assert_eq!(from_totals, from_estimate, "{} {s:?}", p.id);
                        assert_eq!(train::training_totals(&spec, s, &o), Ok(t));
                    }
                    (Err(e), Err(g)) => assert_eq!(e, g, "{}", p.id),
                    (want, got) => panic!("{}: {want:?} vs {got:?}", p.id),
                }
            }
        }
    }
}

#[test]
fn inference_sweep_equals_the_full_estimate_at_every_point() {
    let o = DeviceOverheads::default();
    for p in PRESETS {
        let spec = vram_core::parse_config(p.json, None).unwrap();
        for engine in [Engine::Transformers, Engine::Vllm] {
            let points: Vec<Scenario> = [512u64, 4096, 0, 32_768]
                .iter()
                .map(|&len| {
                    let mut s = Scenario {
                        engine,
                        seq_len: len,
                        batch: 4,
                        ..Scenario::inference()
                    };
                    s.serving.max_model_len = len;
                    s
                })
                .collect();
            let swept = infer::sweep(&spec, &points, &o);
            for (s, got) in points.iter().zip(swept) {
                let want = infer::estimate_inference(&spec, s, &o);
                match (want, got) {
                    (Ok(e), Ok(t)) => {
                        assert_eq!(t, infer::InferTotals::of(&e), "{} {s:?}", p.id);
                        assert_eq!(infer::inference_totals(&spec, s, &o), Ok(t));
                    }
                    (Err(e), Err(g)) => assert_eq!(e, g, "{}", p.id),
                    (want, got) => panic!("{}: {want:?} vs {got:?}", p.id),
                }
            }
        }
    }
}
