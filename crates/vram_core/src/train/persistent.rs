//! Persistent training memory: weights, gradients and optimizer states, tensor by tensor, in the dtype
//! each framework really stores them.
//!
//! - Mixed precision (`torch.autocast` over fp32 parameters): fp32 weights, fp32 gradients, fp32
//!   optimizer states; the low-precision weight copies are activations (see `activations.rs`).
//! - Pure 16-bit training: `torch.optim` creates its states with `torch.zeros_like(p)` (torch/optim/
//!   adamw.py `_init_group`), so AdamW keeps bf16 moments: 2 + 2 + 2·2 = 8 B per parameter.
//! - 8-bit AdamW (bitsandbytes `Optimizer8bit.init_state`): uint8 moments with one fp32 absmax per
//!   256-element block; tensors under 4096 elements (`min_8bit_size`) keep fp32 moments.
//! - Adafactor (`torch.optim.Adafactor`, torch ≥ 2.5, `beta1` absent): `row_var` (shape[:-1]) and
//!   `col_var` (shape[:-2] + shape[-1:]) in the gradient dtype for tensors of rank ≥ 2, a full
//!   `variance` otherwise (`torch/optim/_adafactor.py`, `_init_group`).
//! - Lion (`bitsandbytes.optim.Lion`, 32-bit): one fp32 `state1` per parameter.
//! - QLoRA base (bitsandbytes `quantize_4bit`, blocksize 64): packed 4-bit weights, a 16-value fp32
//!   code per tensor, and an fp32 absmax per block — or, with double quantization, a uint8 absmax per
//!   block plus an fp32 absmax per 256 blocks and an fp32 offset. LLM.int8 (`Int8Params`): int8
//!   weights plus an fp32 scale per output row (`SCB`). Embeddings, norms, biases and `lm_head` keep
//!   the scenario dtype (`get_keys_to_not_convert` skips the output head).

use super::lora::LoraPlan;
use crate::scenario::{BaseQuant, Dtype, MixedPrecision, Optimizer, Scenario};
use crate::spec::{Component, ModelSpec, TensorSpec};

/// bitsandbytes 4-bit blocksize (`quantize_4bit(blocksize=64)`, the `BitsAndBytesConfig` default).
pub const NF4_BLOCKSIZE: u64 = 64;
/// Blocksize of the double quantization of the absmax values (`quantize_blockwise(blocksize=256)`).
pub const NF4_DQ_BLOCKSIZE: u64 = 256;
/// Whether the QLoRA base uses double quantization (`bnb_4bit_use_double_quant=True`, the QLoRA
/// paper's recipe, arXiv 2305.14314 §3).
pub const NF4_DOUBLE_QUANT: bool = true;
/// bitsandbytes 8-bit optimizer blocksize (`Optimizer8bit.init_state`: `blocks = n // 256`).
pub const BNB_OPTIM_BLOCKSIZE: u64 = 256;
/// bitsandbytes `min_8bit_size`: smaller tensors keep fp32 states.
pub const BNB_MIN_8BIT_SIZE: u64 = 4096;

/// How parameters are stored and computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Precision {
    /// Bytes per element of the model's (trainable) parameters on the device.
    pub param_bytes: u64,
    /// Bytes per element of matmul outputs (the autocast dtype under mixed precision).
    pub compute_bytes: u64,
    /// `torch.autocast` over fp32 parameters (low-precision copies of weights and inputs).
    pub autocast: bool,
    /// DeepSpeed 16-bit mode (ZeRO ≥ 1 with bf16/fp16): 16-bit model, fp32 master weights, fp32
    /// states (and, inside the step only, an fp32 gradient partition).
    pub deepspeed_master: bool,
}

impl Precision {
    /// Resolves the precision of a scenario. ZeRO ≥ 1 with bf16/fp16 means DeepSpeed's mixed
    /// precision, which keeps the model itself in 16 bits (`deepspeed/runtime/bf16_optimizer.py`,
    /// `zero/stage_1_and_2.py`), unlike `torch.autocast`, which keeps fp32 parameters.
    pub fn of(s: &Scenario) -> Self {
        let half = match s.mixed_precision {
            MixedPrecision::Bf16 | MixedPrecision::Fp16 => Some(2),
            MixedPrecision::None => None,
        };
        if s.zero.0 >= 1 && (half.is_some() || s.dtype != Dtype::Fp32) {
            return Precision {
                param_bytes: 2,
                compute_bytes: 2,
                autocast: false,
                deepspeed_master: true,
            };
        }
        match half {
            Some(c) if s.dtype == Dtype::Fp32 => Precision {
                param_bytes: 4,
                compute_bytes: c,
                autocast: true,
                deepspeed_master: false,
            },
            _ => Precision {
                param_bytes: s.dtype.bytes(),
                compute_bytes: s.dtype.bytes(),
                autocast: false,
                deepspeed_master: false,
            },
        }
    }
}

/// The state tensors of one parameter (at most four: bitsandbytes' two moments and two absmax
/// vectors), without a heap allocation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StateTensors {
    sizes: [u64; 4],
    len: usize,
}

impl StateTensors {
    fn of(sizes: &[u64]) -> Self {
        let mut s = StateTensors::default();
        for &b in sizes.iter().take(4) {
            s.sizes[s.len] = b;
            s.len += 1;
        }
        s
    }

    /// Bytes of each state tensor.
    pub fn as_slice(&self) -> &[u64] {
        &self.sizes[..self.len]
    }

    /// Σ bytes.
    pub fn total(&self) -> u64 {
        self.as_slice()
            .iter()
            .fold(0u64, |a, &b| a.saturating_add(b))
    }
}

/// The persistent bytes of `count` identical tensors (same shape and role; per-tensor figures).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorBytes {
    /// Tensors alike (a [`crate::derived::TensorGroup`], or the adapters of one shape).
    pub count: u64,
    /// Elements of each.
    pub numel: u64,
    /// Bytes of each stored weight (quantized size for a QLoRA base).
    pub weight_bytes: u64,
    /// Whether the optimizer trains them.
    pub trainable: bool,
    /// Gradient bytes of each (0 when frozen).
    pub grad_bytes: u64,
    /// Optimizer state bytes of each (0 when frozen).
    pub state_bytes: u64,
    /// Each optimizer-state tensor of one parameter (allocator rounding).
    pub state_tensors: StateTensors,
}

/// The persistent budget before any sharding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Persistent {
    /// Every weight tensor (model parameters, buffers, adapters), identical ones grouped.
    pub tensors: Vec<TensorBytes>,
    /// Σ weight bytes.
    pub weights_bytes: u64,
    /// Σ weight bytes of trainable tensors.
    pub trainable_weights_bytes: u64,
    /// Σ gradient bytes.
    pub gradients_bytes: u64,
    /// Σ optimizer state bytes.
    pub optimizer_bytes: u64,
    /// Optimizer-owned bytes shared by all tensors (bitsandbytes' 256-entry fp32 quantization maps).
    pub optimizer_shared_bytes: u64,
    /// Trainable parameters.
    pub trainable_params: u64,
    /// Frozen parameters (incl. buffers).
    pub frozen_params: u64,
    /// Bytes per element of trainable parameters.
    pub trainable_elem_bytes: u64,
    /// Bytes per element of optimizer states for a plain (unquantized) state tensor.
    pub state_elem_bytes: u64,
    /// Largest trainable tensor (elements): sizes the per-tensor optimizer temporaries.
    pub largest_trainable_numel: u64,
    /// Quantized-base overhead beyond the packed weights (absmax, codes), for the explanation.
    pub quant_overhead_bytes: u64,
}

/// Bytes of one optimizer's states for a tensor of `shape` stored with `elem` bytes per element.
/// Returns the state tensors' sizes.
pub fn state_tensors(opt: Optimizer, shape: &[u64], elem: u64) -> StateTensors {
    let numel = shape.iter().fold(1u64, |a, &d| a.saturating_mul(d));
    match opt {
        Optimizer::Sgd => StateTensors::of(&[]),
        Optimizer::SgdMomentum => StateTensors::of(&[numel.saturating_mul(elem)]),
        Optimizer::Lion => StateTensors::of(&[numel.saturating_mul(4)]),
        Optimizer::Adamw => StateTensors::of(&[numel.saturating_mul(elem); 2]),
        Optimizer::Adamw8bit => {
            if numel < BNB_MIN_8BIT_SIZE {
                StateTensors::of(&[numel.saturating_mul(4); 2])
            } else {
                let blocks = numel.div_ceil(BNB_OPTIM_BLOCKSIZE);
                // state1, state2 (uint8) and absmax1, absmax2 (fp32 per block).
                StateTensors::of(&[numel, numel, blocks * 4, blocks * 4])
            }
        }
        Optimizer::Adafactor => {
            if shape.len() >= 2 {
                let last = shape.last().copied().unwrap_or(1);
                let rows = numel / last.max(1);
                let second_last = shape.get(shape.len() - 2).copied().unwrap_or(1);
                let cols = (numel / last.max(1) / second_last.max(1)).saturating_mul(last);
                StateTensors::of(&[rows.saturating_mul(elem), cols.saturating_mul(elem)])
            } else {
                StateTensors::of(&[numel.saturating_mul(elem)])
            }
        }
    }
}

/// Plain bytes per element of the optimizer's states (for the explanation): 2·elem for AdamW, etc.
pub fn state_bytes_per_param(opt: Optimizer, elem: u64) -> f64 {
    match opt {
        Optimizer::Sgd => 0.0,
        Optimizer::SgdMomentum => elem as f64,
        Optimizer::Lion => 4.0,
        Optimizer::Adamw => 2.0 * elem as f64,
        Optimizer::Adamw8bit => 2.0 + 8.0 / BNB_OPTIM_BLOCKSIZE as f64,
        Optimizer::Adafactor => 0.0,
    }
}

/// Stored bytes of a 4-bit NF4 weight with its quantization state.
pub fn nf4_bytes(numel: u64, double_quant: bool) -> u64 {
    let packed = numel.div_ceil(2);
    let blocks = numel.div_ceil(NF4_BLOCKSIZE);
    let code = 16 * 4;
    let absmax = if double_quant {
        blocks + blocks.div_ceil(NF4_DQ_BLOCKSIZE) * 4 + 4
    } else {
        blocks * 4
    };
    packed + code + absmax
}

/// Stored bytes of an LLM.int8 weight: int8 values plus one fp32 scale per output row.
pub fn int8_bytes(numel: u64, out_features: u64) -> u64 {
    numel.saturating_add(out_features.saturating_mul(4))
}

fn quantizable(t: &TensorSpec) -> bool {
    t.linear.is_some() && t.component != Component::LmHead
}

/// Labels of the classifier an encoder-only model (bert) is fine-tuned with
/// (`BertForSequenceClassification`, `config.num_labels`: 2 by default).
pub const ENCODER_NUM_LABELS: u64 = 2;

/// Builds the persistent budget of `spec` under `scenario` (unsharded).
pub fn persistent(
    spec: &ModelSpec,
    scenario: &Scenario,
    precision: Precision,
    lora: Option<&LoraPlan>,
) -> Persistent {
    let opt = scenario.optimizer;
    let base_quant = scenario
        .lora
        .as_ref()
        .map_or(BaseQuant::None, |l| l.base_quant);
    // DeepSpeed keeps the states with the fp32 master copy; plain torch.optim with the parameter.
    let full_state_elem = if precision.deepspeed_master {
        4
    } else {
        precision.param_bytes
    };
    let derived = spec.derived();
    let mut tensors = Vec::with_capacity(derived.groups.len() + 4);
    let mut quant_overhead = 0u64;
    for g in &derived.groups {
        let t = &spec.tensors[g.first];
        let numel = g.numel;
        // tensors transformers keeps in fp32 (`ModelSpec::keeps_fp32_in`) hold fp32 gradients and
        // states
        let (param_bytes, state_elem) = if spec.keeps_fp32_in(t, scenario.dtype) {
            (precision.param_bytes.max(4), full_state_elem.max(4))
        } else {
            (precision.param_bytes, full_state_elem)
        };
        let plain = numel.saturating_mul(param_bytes);
        let trainable = lora.is_none() && !t.buffer;
        let weight_bytes = match (lora.is_some(), base_quant) {
            (true, BaseQuant::Nf4) if quantizable(t) => {
                let b = nf4_bytes(numel, NF4_DOUBLE_QUANT);
                quant_overhead += (b - numel.div_ceil(2)) * g.count;
                b
            }
            (true, BaseQuant::Int8) if quantizable(t) => {
                let out = t.linear.map_or(0, |l| l.out_features);
                quant_overhead += out * 4 * g.count;
                int8_bytes(numel, out)
            }
            _ => plain,
        };
        // transformers' tensor parallelism: DTensor computes the vocabulary-parallel embedding's
        // gradient whole (`embedding_dense_backward` has no vocabulary-sharded strategy, so the
        // result is `Replicate()`), and an untied embedding keeps it as its `.grad` until the
        // optimizer step (measured: a [V, H] gradient beside a [V / tp, H] weight). Tied, the
        // lm_head's sharded gradient receives it (see `tied_embedding_grad_bytes`).
        let grad_numel = if spec.tensor_parallel > 1
            && t.component == crate::spec::Component::Embedding
            && !spec.tie_word_embeddings
            && t.shape.first() == Some(&super::hf_tp::local_vocab(spec))
        {
            numel / super::hf_tp::local_vocab(spec).max(1) * spec.vocab_size
        } else {
            numel
        };
        let (grad_bytes, states) = if trainable {
            (
                grad_numel.saturating_mul(param_bytes),
                state_tensors(opt, &t.shape, state_elem),
            )
        } else {
            (0, StateTensors::default())
        };
        tensors.push(TensorBytes {
            count: g.count,
            numel,
            weight_bytes,
            trainable,
            grad_bytes,
            state_bytes: states.total(),
            state_tensors: states,
        });
    }
    if spec.kind == crate::spec::ModelKind::EncoderOnly {
        // An encoder is trained with a sequence-classification head beside its pooler: classifier
        // weight [labels, H] and bias [labels], in the parameter dtype. Under LoRA peft's SEQ_CLS
        // keeps the frozen original and trains a copy (`ModulesToSaveWrapper`).
        let h = spec.hidden_size;
        for shape in [vec![ENCODER_NUM_LABELS, h], vec![ENCODER_NUM_LABELS]] {
            let numel = shape.iter().product::<u64>();
            let copies: &[bool] = if lora.is_some() {
                &[false, true]
            } else {
                &[true]
            };
            for &trainable in copies {
                let states = if trainable {
                    state_tensors(opt, &shape, full_state_elem)
                } else {
                    StateTensors::default()
                };
                tensors.push(TensorBytes {
                    count: 1,
                    numel,
                    weight_bytes: numel.saturating_mul(precision.param_bytes),
                    trainable,
                    grad_bytes: if trainable {
                        numel.saturating_mul(precision.param_bytes)
                    } else {
                        0
                    },
                    state_bytes: states.total(),
                    state_tensors: states,
                });
            }
        }
    }
    if let Some(plan) = lora {
        // Adapters are fp32 (peft autocast_adapter_dtype=True), so grads and states are fp32 too:
        // lora_A [r, in] and lora_B [out, r] per adapted module; a parameter adapter (fused experts,
        // routers) has the rank r·E.
        let modules = plan
            .shapes
            .iter()
            .map(|&((in_features, out_features), count)| {
                (plan.r, in_features, out_features, count)
            });
        let params = plan.param_adapters.iter().map(|a| {
            (
                a.r.saturating_mul(a.experts),
                a.in_features,
                a.out_features,
                spec.tensors[a.tensor].count(),
            )
        });
        for (rank, in_features, out_features, count) in modules.chain(params) {
            for shape in [[rank, in_features], [out_features, rank]] {
                let numel = shape[0].saturating_mul(shape[1]);
                let states = state_tensors(opt, &shape, 4);
                tensors.push(TensorBytes {
                    count,
                    numel,
                    weight_bytes: numel.saturating_mul(4),
                    trainable: true,
                    grad_bytes: numel.saturating_mul(4),
                    state_bytes: states.total(),
                    state_tensors: states,
                });
            }
        }
    }
    let sum = |f: &dyn Fn(&TensorBytes) -> u64| {
        tensors
            .iter()
            .map(|t| f(t).saturating_mul(t.count))
            .fold(0u64, u64::saturating_add)
    };
    let trainable_params = sum(&|t| if t.trainable { t.numel } else { 0 });
    let frozen_params = sum(&|t| if t.trainable { 0 } else { t.numel });
    let optimizer_shared_bytes = if opt == Optimizer::Adamw8bit && trainable_params > 0 {
        2 * 256 * 4
    } else {
        0
    };
    Persistent {
        weights_bytes: sum(&|t| t.weight_bytes),
        trainable_weights_bytes: sum(&|t| if t.trainable { t.weight_bytes } else { 0 }),
        gradients_bytes: sum(&|t| t.grad_bytes),
        optimizer_bytes: sum(&|t| t.state_bytes).saturating_add(optimizer_shared_bytes),
        optimizer_shared_bytes,
        trainable_params,
        frozen_params,
        trainable_elem_bytes: if lora.is_some() {
            4
        } else {
            precision.param_bytes
        },
        state_elem_bytes: if lora.is_some() { 4 } else { full_state_elem },
        largest_trainable_numel: tensors
            .iter()
            .filter(|t| t.trainable)
            .map(|t| t.numel)
            .max()
            .unwrap_or(0),
        quant_overhead_bytes: quant_overhead,
        tensors,
    }
}

/// Temporaries of one optimizer step beyond its states (first step: the states are created in the
/// same call, so they count too). Sources:
/// - `torch.optim.AdamW` with `foreach` (the CUDA default, `_default_to_fused_or_foreach`):
///   `_multi_tensor_adamw` computes `exp_avg_sq_sqrt = torch._foreach_sqrt(exp_avg_sqs)` for every
///   tensor at once: one extra copy of the second moment;
/// - `_multi_tensor_sgd`: in place (`_foreach_add_`), no temporaries;
/// - bitsandbytes 8-bit: fused in-place kernel per tensor;
/// - `torch.optim.Adafactor` foreach (`_multi_tensor_adafactor`): `var_estimates = row_var @ col_var`
///   for every tensor at once, a full copy of the parameters in their dtype;
/// - bitsandbytes Lion: fused in-place kernel.
pub fn optimizer_temp_bytes(opt: Optimizer, p: &Persistent, deepspeed: bool) -> u64 {
    if deepspeed {
        // DeepSpeed's FusedAdam (multi_tensor_apply) updates in place.
        return 0;
    }
    let all = |elem: u64| {
        p.tensors
            .iter()
            .filter(|t| t.trainable)
            .map(|t| t.numel.saturating_mul(elem).saturating_mul(t.count))
            .fold(0u64, u64::saturating_add)
    };
    match opt {
        Optimizer::Sgd | Optimizer::SgdMomentum | Optimizer::Adamw8bit | Optimizer::Lion => 0,
        // one copy of each tensor's second moment, in that state's own dtype (fp32 for the
        // tensors transformers keeps in fp32 in a 16-bit model)
        Optimizer::Adamw => p
            .tensors
            .iter()
            .filter(|t| t.trainable)
            .map(|t| {
                t.state_tensors
                    .as_slice()
                    .last()
                    .copied()
                    .unwrap_or_else(|| t.numel.saturating_mul(p.state_elem_bytes))
                    .saturating_mul(t.count)
            })
            .fold(0u64, u64::saturating_add),
        Optimizer::Adafactor => all(p.state_elem_bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::ZeroStage;

    fn one_param_budget(s: &Scenario) -> (u64, u64, u64) {
        // A 1000×1000 linear and nothing else: per-parameter bytes = totals / 10^6.
        let spec = tiny_spec(vec![1000, 1000]);
        let p = persistent(&spec, s, Precision::of(s), None);
        (p.weights_bytes, p.gradients_bytes, p.optimizer_bytes)
    }

    fn tiny_spec(shape: Vec<u64>) -> ModelSpec {
        let text = r#"{"model_type":"llama","hidden_size":64,"num_hidden_layers":1,
            "num_attention_heads":4,"vocab_size":100,"intermediate_size":128}"#;
        let mut spec = crate::parse_config(text, None).unwrap();
        spec.tensors = vec![TensorSpec {
            name: "w.weight".into(),
            component: Component::Mlp,
            layer: Some(0),
            repeat: 1,
            stride: 1,
            shape: shape.clone().into(),
            linear: Some(crate::spec::LinearShape {
                in_features: shape[1],
                out_features: shape[0],
            }),
            buffer: false,
        }];
        spec
    }

    fn per_param(s: &Scenario) -> u64 {
        let (w, g, o) = one_param_budget(s);
        (w + g + o) / 1_000_000
    }

    fn pure(dtype: Dtype, optimizer: Optimizer) -> Scenario {
        Scenario {
            dtype,
            mixed_precision: MixedPrecision::None,
            optimizer,
            ..Scenario::default()
        }
    }

    #[test]
    fn seed_table_sgd_is_8_bytes_per_param_in_fp32() {
        assert_eq!(per_param(&pure(Dtype::Fp32, Optimizer::Sgd)), 8);
    }

    #[test]
    fn seed_table_sgd_momentum_is_12_bytes_per_param_in_fp32() {
        assert_eq!(per_param(&pure(Dtype::Fp32, Optimizer::SgdMomentum)), 12);
    }

    #[test]
    fn seed_table_adam_fp32_is_16_bytes_per_param() {
        assert_eq!(per_param(&pure(Dtype::Fp32, Optimizer::Adamw)), 16);
    }

    #[test]
    fn seed_table_mixed_adamw_is_16_bytes_per_param_plus_autocast_copies() {
        // fp32 master weights 4 + fp32 grads 4 + fp32 moments 8 = 16; the bf16 weight copies are
        // autocast activations, not persistent.
        let s = Scenario::default();
        assert!(Precision::of(&s).autocast);
        assert_eq!(per_param(&s), 16);
    }

    #[test]
    fn pure_bf16_adamw_keeps_bf16_states_in_torch_optim() {
        assert_eq!(per_param(&pure(Dtype::Bf16, Optimizer::Adamw)), 8);
    }

    #[test]
    fn deepspeed_bf16_keeps_fp32_states_with_16_bit_weights() {
        let s = Scenario {
            zero: ZeroStage(1),
            ..pure(Dtype::Bf16, Optimizer::Adamw)
        };
        let (w, g, o) = one_param_budget(&s);
        assert_eq!((w, g, o), (2_000_000, 2_000_000, 8_000_000));
    }

    #[test]
    fn adamw_8bit_uses_one_byte_per_moment_plus_block_absmax() {
        // 10^6 elements: 2 × 10^6 uint8 + 2 × ceil(10^6/256)=3907 blocks × 4 B + 2 KiB maps.
        let (_, _, o) = one_param_budget(&pure(Dtype::Fp32, Optimizer::Adamw8bit));
        assert_eq!(o, 2_000_000 + 2 * 3907 * 4 + 2048);
    }

    #[test]
    fn adafactor_factors_matrices_into_row_and_column() {
        let (_, _, o) = one_param_budget(&pure(Dtype::Fp32, Optimizer::Adafactor));
        assert_eq!(o, (1000 + 1000) * 4);
    }

    #[test]
    fn nf4_with_double_quant_costs_about_half_a_byte_per_param() {
        // 4096×4096: 8,388,608 packed + 64 code + 262,144 uint8 absmax + 1024 blocks·4 + 4 offset.
        assert_eq!(
            nf4_bytes(4096 * 4096, true),
            8_388_608 + 64 + 262_144 + 4096 + 4
        );
        assert_eq!(nf4_bytes(4096 * 4096, false), 8_388_608 + 64 + 262_144 * 4);
    }
}
