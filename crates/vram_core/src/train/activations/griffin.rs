//! RecurrentGemma's (Griffin's) recurrent block in training, walked op by op through
//! `RecurrentGemmaRecurrentBlock.forward` and `RecurrentGemmaRglru` (modeling_recurrent_gemma.py,
//! transformers 5.24) as a training step runs them (`use_cache=False`: the convolution over the
//! whole sequence, the RG-LRU's Python scan).
//!
//! With t = b·s tokens and L = `lru_width`, the block saves: `linear_y`'s and `linear_x`'s input
//! (the normed hidden states, once) and the tanh-GELU's input (t·L); the depthwise convolution's
//! input (`linear_x`'s output, transposed) and, through `activations * input_gate`, its whole output
//! before the slice to s, b·L·(s + k − 1); in the RG-LRU the contiguous copy of the activations
//! (`reshape` of a transposed view) saved by both gate `baddbmm`s, both sigmoid outputs, `−8·gate`
//! (saved by the product with `softplus(recurrent_param)`), `exp(log a)` and `exp(2 log a)`,
//! `1 − a²` (saved by `SqrtBoundDerivative`), the gated input and the normalising multiplier (saved
//! by their product); the scan's states — the zero state and one per step, each (b, L) in fp32,
//! saved by the next step's product — and the gate after `* ~reset`; then the scan output and the
//! GELU branch (saved by their product) and that product (saved by `linear_out`). The last state
//! stays on the module (`self.recurrent_states`) after forward.
//!
//! In backward, each step's slices of the gate and of the input get their gradients through
//! `select_backward`, which writes a full t·L zero tensor around the slice; two full-size gradient
//! buffers accumulate them next to the scan output's gradient.

use super::{HalfFigures, Lin, Walk};
use crate::error::ScenarioError;
use crate::scenario::BaseQuant;
use crate::spec::{Component, ModelSpec, SsmSpec};
use crate::train::sim::{Sim, V};

/// What the walk cannot count for RecurrentGemma: a quantized base.
pub(super) fn check(spec: &ModelSpec, quant: BaseQuant) -> Result<(), ScenarioError> {
    if quant != BaseQuant::None {
        return Err(ScenarioError::Invalid {
            field: "lora.base_quant".into(),
            expected: "an unquantized base for recurrent_gemma: its recurrent block's parameters \
                       under bitsandbytes are not modelled"
                .into(),
            found: format!("model_type {:?}", spec.model_type),
        });
    }
    Ok(())
}

impl Walk<'_> {
    /// One recurrent temporal block on the normed input `n`. Returns the output of `linear_out`
    /// and the half's figures.
    pub(super) fn griffin_block(
        &mut self,
        sim: &mut Sim,
        n: V,
        i: usize,
        ssm: &SsmSpec,
    ) -> (V, HalfFigures) {
        let (b, s, t) = (self.b, self.s, self.t);
        let spec = self.spec;
        let width = ssm.d_inner;
        let k = ssm.conv_kernel;
        let tl = t.saturating_mul(width);
        let lins = self.layer_linears(i, Component::Mixer);
        let [yj, xj, oj] = match lins.as_slice() {
            [y, x, o] => [*y, *x, *o],
            _ => return (sim.share(n), HalfFigures::default()),
        };
        let (ly, lx, lo): (Lin, Lin, Lin) = (
            self.lin(&spec.tensors[yj]),
            self.lin(&spec.tensors[xj]),
            self.lin(&spec.tensors[oj]),
        );
        let max_w = [ly, lx, lo]
            .iter()
            .map(|l| l.in_f.saturating_mul(l.out_f))
            .max()
            .unwrap_or(0);
        let full = self.full;
        let y_pre = self.linear(sim, n, ly, t);
        let before_gelu = sim.saved_bytes();
        let y = self.activation(sim, y_pre);
        let mut output_branch = sim.saved_bytes() - before_gelu;
        sim.drop(y_pre);
        let xb = self.linear(sim, n, lx, t);
        // `self.rg_lru.recurrent_states = None` comes here, after the projections
        if self.griffin_first_level_bytes == 0 {
            self.griffin_first_level_bytes = sim.live_bytes();
        }
        let e = sim.elem(xb);
        // the recurrence's parameter path (`softplus(recurrent_param)`, `exp`, `1 − a²`) follows
        // the parameters' dtype: fp32 under autocast over fp32 weights
        let ae = e.max(self.p);
        let rg = xb.rg || full;
        // `conv_1d(x_branch)[..., :seq_len]`: the convolution saves its (transposed) input; under
        // autocast it runs on copies of its weight (saved) and bias (cached)
        if rg {
            sim.save(xb);
        }
        if self.autocast {
            self.autocast_leaf(sim, width.saturating_mul(k), xb.rg, full);
            self.autocast_leaf(sim, width, false, full);
        }
        let conv = sim.alloc(b.saturating_mul(width).saturating_mul(s + k - 1), e, rg);
        sim.drop(xb);
        // RG-LRU gates: `activations.reshape(b·s, heads, block)` copies the transposed view; each
        // `baddbmm` saves it (for its weight's gradient), its output is copied again by
        // `transpose(0, 1).reshape(...)`, and `sigmoid` saves its result.
        // (with b = 1 the transposed slice of the convolution's output folds without a copy)
        let act = if b > 1 {
            sim.alloc(tl, e, rg)
        } else {
            sim.share(conv)
        };
        if full {
            sim.save(act);
        }
        let mut gates = [V::default(); 2];
        let heads = ssm.dt_rank.max(1);
        let block = width / heads;
        for g in &mut gates {
            if self.autocast {
                // `baddbmm` casts the gate's weight (saved) and bias (cached)
                self.autocast_leaf(
                    sim,
                    heads.saturating_mul(block).saturating_mul(block),
                    rg,
                    full,
                );
                self.autocast_leaf(sim, width, false, full);
            }
            let res = sim.alloc(tl, e, rg);
            let copy = sim.alloc(tl, e, rg);
            sim.drop(res);
            let sig = sim.alloc(tl, e, rg);
            if rg {
                sim.save(sig);
            }
            sim.drop(copy);
            *g = sig;
        }
        sim.drop(act);
        let [input_gate, recurrent_gate] = gates;
        // `log_a = -8.0 * recurrent_gate * softplus(recurrent_param)`
        let scaled = sim.alloc(tl, e, rg);
        if full {
            sim.save(scaled);
        }
        let softplus = sim.alloc(width, self.p, full);
        if rg {
            sim.save(softplus);
        }
        let log_a = sim.alloc(tl, ae, rg);
        sim.drop(scaled);
        sim.drop(softplus);
        let a = sim.alloc(tl, ae, rg);
        if rg {
            sim.save(a);
        }
        let twice = sim.alloc(tl, ae, rg);
        let a_square = sim.alloc(tl, ae, rg);
        if rg {
            sim.save(a_square);
        }
        sim.drop(twice);
        sim.drop(log_a);
        // `gated_inputs = activations * input_gate` (the convolution's output, sliced)
        // (the product has the slice's t·L elements, not the convolution's b·L·(s + k − 1))
        if input_gate.rg {
            sim.save(conv);
        }
        if conv.rg {
            sim.save(input_gate);
        }
        let gated = sim.alloc(tl, e, conv.rg || input_gate.rg);
        sim.drop(conv);
        sim.drop(input_gate);
        // `SqrtBoundDerivative.apply(1 - a_square)` saves its input
        let one_minus = sim.alloc(tl, ae, rg);
        if rg {
            sim.save(one_minus);
        }
        sim.drop(a_square);
        let root = sim.alloc(tl, ae, rg);
        sim.drop(one_minus);
        // `reset + ~reset * multiplier`, then `.type(activations.dtype)` (the product saves
        // `~reset`, (1, s, 1) bool; the scan's `a * ~reset` saves another)
        save_reset_mask(sim, s, rg);
        let masked = sim.alloc(tl, ae, rg);
        sim.drop(root);
        let multiplier = sim.alloc(tl, ae, rg);
        sim.drop(masked);
        let multiplier_e = sim.cast(multiplier, e);
        sim.drop(multiplier);
        let normalized = self.mul(sim, gated, multiplier_e);
        sim.drop(gated);
        sim.drop(multiplier_e);
        // `_rnn_scan`: `a * ~reset`, then per step `state = a[:, t] * state + x[:, t]` in fp32
        // (each state saved by the next step's product, the zero state by the first), written
        // into `zeros_like(x)`.
        save_reset_mask(sim, s, rg);
        let gate = sim.alloc(tl, ae, rg);
        if rg {
            sim.save(gate);
        }
        sim.drop(a);
        sim.drop(recurrent_gate);
        let out = sim.alloc(tl, e, rg);
        let states = sim.alloc(tl, 4, false);
        if rg {
            sim.save(states);
        }
        // the step's product next to the states (and the step's fp32 cast of its input)
        let step = if e < 4 { 2 } else { 1 };
        sim.transient(
            b.saturating_mul(width)
                .saturating_mul(4)
                .saturating_mul(step),
        );
        sim.drop(states);
        // the last state stays on the module (`self.recurrent_states`) until the next forward:
        // live from here on, freed by no backward (`ActivationProfile::module_state_bytes`)
        let _last = sim.alloc(b.saturating_mul(width), 4, false);
        sim.drop(normalized);
        // `x_branch * y_branch`, then `linear_out`
        let before_out = sim.saved_bytes();
        let prod = self.mul(sim, out, y);
        sim.drop(out);
        sim.drop(y);
        let o = self.linear(sim, prod, lo, t);
        sim.drop(prod);
        output_branch += sim.saved_bytes() - before_out;
        // backward of the scan: two full t·L gradient buffers (the gate's, the input's) and one
        // new full slice tensor at a time, next to the scan output's gradient
        let scan = tl
            .saturating_mul(4)
            .saturating_mul(3)
            .saturating_add(tl.saturating_mul(e));
        // all but `linear_out`'s gradient come after the scan's backward
        let later_grad_bytes = if full {
            self.layer_tensor_ids(i)
                .iter()
                .map(|&j| &spec.tensors[j])
                .filter(|t| t.component == Component::Mixer)
                .map(|t| t.numel())
                .fold(0u64, u64::saturating_add)
                .saturating_sub(lo.in_f.saturating_mul(lo.out_f))
                .saturating_mul(self.p)
        } else {
            0
        };
        (
            o,
            HalfFigures {
                bwd: scan,
                max_w,
                projection_weight_elems: 0,
                later_grad_bytes,
                output_branch_bytes: Some(output_branch),
            },
        )
    }
}

/// `~reset`, (1, s, 1) bool, saved by a product with a tensor that requires grad.
fn save_reset_mask(sim: &mut Sim, s: u64, rg: bool) {
    let mask = sim.alloc(s, 1, false);
    if rg {
        sim.save(mask);
    }
    sim.drop(mask);
}

impl Walk<'_> {
    /// Autocast's copy of a parameter of `elems` elements (`cached_cast`): saved when the op's
    /// other input requires grad, kept in the cache while the parameter trains.
    fn autocast_leaf(&mut self, sim: &mut Sim, elems: u64, saved: bool, trainable: bool) {
        let w = self.weight_copy(sim, elems, self.c, trainable);
        if saved {
            self.save_copy(sim, w);
        }
        if trainable {
            self.cache.push(w);
        } else {
            sim.drop(w);
        }
    }

    /// RecurrentGemma's rotary embedding, computed in each attention layer
    /// (`self.rotary_emb(value_states, position_ids)`) over the first half of each head
    /// (`partial_rotary_factor` 0.5): `q_rot * cos + rotate_half(q_rot) * sin`, concatenated back
    /// with the untouched half. `cos`/`sin` (s × rot) are saved by this layer's products. Returns
    /// the rotated tensor (a new one, `elems` long).
    pub(super) fn griffin_rotary(&self, sim: &mut Sim, x: V, elems: u64) -> V {
        let rot = elems / 2;
        let e = sim.elem(x);
        let a = sim.alloc(rot, e, x.rg);
        let neg = sim.alloc(rot / 2, e, x.rg);
        let half = sim.alloc(rot, e, x.rg);
        sim.drop(neg);
        let b = sim.alloc(rot, e, x.rg);
        sim.drop(half);
        let sum = sim.alloc(rot, e, x.rg);
        sim.drop(a);
        sim.drop(b);
        let out = sim.alloc(elems, e, x.rg);
        sim.drop(sum);
        out
    }

    /// The layer's `cos`/`sin` tables (1, s, rot) in the hidden states' dtype, saved by its
    /// rotary products.
    pub(super) fn griffin_rotary_tables(&self, sim: &mut Sim, head_dim: u64, e: u64) -> (V, V) {
        let rot = head_dim / 2;
        let n = self.s.saturating_mul(rot);
        let freqs = sim.alloc(n / 2, 4, false);
        let emb = sim.alloc(n, 4, false);
        sim.drop(freqs);
        let mut out = [V::default(); 2];
        for o in &mut out {
            let raw = sim.alloc(n, 4, false);
            let scaled = sim.alloc(n, 4, false);
            sim.drop(raw);
            let table = sim.cast(scaled, e);
            sim.drop(scaled);
            sim.save(table);
            *o = table;
        }
        sim.drop(emb);
        (out[0], out[1])
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::{AttentionImpl, Dtype, MixedPrecision};
    use crate::train::persistent::Precision;
    use crate::train::Counting;
    use crate::Scenario;

    /// PyTorch's saved-tensor census of recurrentgemma-2b at 2 (recurrent) layers, fp32, b 1,
    /// s 64 on the CPU: the temporal half of a layer saves 12,503,424 B, the layer 22,344,320 B.
    /// With t·L = 64 × 2560 fp32 = 655,360 B: the norm (input, rsqrt, normalised, 2·655,360 +
    /// 256 + 10,240 of `1 + weight`) 1,321,216; `linear_y`/`linear_x`'s input, the GELU's input,
    /// the convolution's input: 3 × 655,360; in the RG-LRU the convolution's whole output
    /// (2560 × 67 × 4 = 686,080, the b = 1 view the gates read), both sigmoids, `softplus`
    /// (10,240), `−8·gate`, `exp`, `exp(2·)`, `1 − a²`, the gated input and multiplier, the gate
    /// after `~reset`, 64 fp32 states and two 64 B masks: 7,250,048; the scan output and the GELU
    /// branch, and their product: 3 × 655,360.
    #[test]
    fn a_recurrent_block_saves_what_the_census_counted() {
        let json = crate::presets::find("google__recurrentgemma-2b")
            .unwrap()
            .json;
        let mut v: serde_json::Value = serde_json::from_str(json).unwrap();
        v["num_hidden_layers"] = 2.into();
        let spec = crate::parse_config(&v.to_string(), None).unwrap();
        let s = Scenario {
            dtype: Dtype::Fp32,
            mixed_precision: MixedPrecision::None,
            attention: AttentionImpl::Eager,
            batch: 1,
            seq_len: 64,
            ..Scenario::default()
        };
        let prof =
            super::super::profile(&spec, &s, Precision::of(&s), None, Counting::CpuExact).unwrap();
        let layer = prof.layers.first().unwrap();
        let tl = 64 * 2560 * 4u64;
        let norm = 2 * tl + 64 * 4 + 2560 * 4;
        let rg_lru = 2560 * 67 * 4 + 2 * tl + 2560 * 4 + 4 * tl + 2 * tl + tl + tl + 2 * 64;
        assert_eq!(rg_lru, 7_250_048);
        assert_eq!(layer.attn_saved_bytes, norm + 3 * tl + rg_lru + 3 * tl);
        assert_eq!(layer.attn_saved_bytes, 12_503_424);
        assert_eq!(layer.saved_bytes, 22_344_320);
        // the last state of each layer stays on its module after backward
        assert_eq!(prof.module_state_bytes, 2 * 2560 * 4);
    }
}
