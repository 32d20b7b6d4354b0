//! One training step of an encoder–decoder (`T5ForConditionalGeneration`, transformers 5.24), walked
//! op by op through `modeling_t5.py` as `model(input_ids=ids, labels=ids)` runs it: the encoder
//! over the b·s input tokens, the decoder over the labels shifted right (`_shift_right`, b·s
//! tokens), the tied head and the loss.
//!
//! What each part saves for backward (fp32, full fine-tuning, eager attention; checked to the byte
//! against PyTorch's saved-tensor census of t5-small at 2 + 2 layers, b = 2, s = 64):
//! - `T5LayerNorm` (no mean, no bias): `x.to(float32)` (saved by `pow`), the `rsqrt` output, the
//!   product `x · rsqrt` (fp32 by type promotion; cast to a 16-bit weight's dtype) saved by the
//!   weight's `mul`, and the original `x` (saved by that product when it is not the fp32 copy);
//! - each attention: the norm output (saved by q, or by k/v for self-attention), `matmul(q, kᵀ)`'s
//!   operands — q and k are transposed views of the projections, which `matmul` copies into
//!   contiguous (b·h, s, d) tensors when b > 1 (b = 1 folds without a copy) — the scores
//!   `· 1.0`, `+ position_bias` (and `+ mask` in the decoder's self-attention) are new b·h·s²
//!   tensors that nothing saves, the softmax output, dropout's mask and output (the latter saved
//!   by `matmul` with v, also copied when b > 1), the `transpose(1, 2).contiguous()` copy saved by
//!   `o`, and the residual branch's dropout mask;
//! - the first block of each stack computes the relative position bias: the bucket indices (s²
//!   int64, saved by the embedding) and the bias itself, (1, h, s, s) in the weight dtype, alive
//!   until the stack returns; the decoder's cross-attention adds a zero (1, h, s, s) bias in the
//!   query dtype instead;
//! - the decoder's cross-attention: k and v project the encoder output (saved once for all
//!   decoder layers), whose gradient accumulates over the decoder's layers in backward;
//! - the feed-forward: `wi`'s input, ReLU's output (or the gated product's operands), the dropout
//!   mask and output (saved by `wo`), the branch's dropout mask; `T5DenseActDense` casts `wo`'s
//!   input to `wo`'s dtype, an fp32 copy under autocast (which `wo` casts back);
//! - each stack ends in its final norm and dropout; the decoder output is scaled by d^-½ when the
//!   config ties the embeddings (`scale_decoder_outputs`), `lm_head` saves that product, and
//!   `CrossEntropyLoss` takes the logits as they are: no `.float()` (so `log_softmax` runs in the
//!   logits' dtype, except where CUDA autocast casts it to fp32).
//!
//! Dropout follows `config.dropout_rate` everywhere (embeddings, attention probabilities, both
//! residual branches, the feed-forward, the stacks' outputs).
//!
//! In backward the head runs first, then the decoder's layers (the encoder output's gradient
//! growing next to them), then the decoder's embedding — whose dense V·H gradient is summed with
//! the lm_head's into the shared embedding's buffer (see `train::phases`) — and only then the
//! encoder's final norm, its layers and its embedding.

use super::{ActivationProfile, LayerAct, LayerRuns, Lin, Walk};
use crate::error::ScenarioError;
use crate::scenario::AttentionImpl;
use crate::spec::{AttentionSpec, Component, ModelSpec};
use crate::train::few::Few;
use crate::train::sim::{Sim, V};

/// The two stacks, by the name prefix of their tensors.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stack {
    Encoder,
    Decoder,
}

impl Stack {
    fn prefix(self) -> &'static str {
        match self {
            Stack::Encoder => "encoder.",
            Stack::Decoder => "decoder.",
        }
    }
}

/// What a sub-layer's attention attends with.
struct Attend {
    /// Its block.
    block: usize,
    /// Its stack.
    stack: Stack,
    /// Its heads and widths.
    spec: AttentionSpec,
    /// The tensor k and v project (the normed input, or the encoder output).
    kv: V,
    /// Sub-layer index inside the block (`layer.0` self-attention, `layer.1` cross-attention).
    sub: usize,
    /// The decoder's causal mask (self-attention only).
    mask: Option<V>,
}

/// What every block of a stack receives besides its input.
struct StackInputs {
    stack: Stack,
    /// The encoder output (decoder blocks).
    enc_out: Option<V>,
    /// The causal mask (decoder blocks, eager).
    mask: Option<V>,
}

/// The stack-wide tensors the first block makes and the others reuse.
#[derive(Default)]
struct Biases {
    /// The relative position bias of the self-attention, (1, h, s, s).
    position: Option<V>,
    /// The decoder's zero cross-attention bias, (1, h, s, s).
    cross: Option<V>,
}

impl Biases {
    /// `T5Stack.forward` returns: its biases go.
    fn drop(self, sim: &mut Sim) {
        for v in [self.position, self.cross].into_iter().flatten() {
            sim.drop(v);
        }
    }
}

impl Walk<'_> {
    /// The linear weights of `stack`'s block `i` in its sub-layer `sub` with `component`, in
    /// inventory order (q, k, v, o; wi or wi_0, wi_1, wo).
    fn t5_linears(
        &self,
        i: usize,
        stack: Stack,
        sub: usize,
        component: Component,
    ) -> Few<usize, 8> {
        let spec = self.spec;
        let part = format!(".layer.{sub}.");
        self.layer_tensor_ids(i)
            .iter()
            .copied()
            .filter(|&j| {
                let t = &spec.tensors[j];
                t.component == component
                    && t.linear.is_some()
                    && t.name.starts_with(stack.prefix())
                    && t.name.contains(&part)
            })
            .collect()
    }

    /// `T5LayerNorm`: variance of `x.to(float32)`, `x * rsqrt(variance + eps)` (fp32 by type
    /// promotion), cast to a 16-bit weight's dtype, times the weight.
    fn t5_norm(&mut self, sim: &mut Sim, x: V) -> V {
        let (t, d) = (self.t, self.spec.hidden_size);
        let elems = t.saturating_mul(d);
        let x32 = sim.cast(x, 4);
        if x.rg {
            sim.save(x32);
        }
        let squares = sim.alloc(elems, 4, x.rg);
        let variance = sim.alloc(t, 4, x.rg);
        sim.drop(squares);
        let shifted = sim.alloc(t, 4, x.rg);
        sim.drop(variance);
        let r = sim.alloc(t, 4, x.rg);
        sim.drop(shifted);
        sim.drop(x32);
        if x.rg {
            sim.save(r);
            sim.save(x);
        }
        let y32 = sim.alloc(elems, 4, x.rg);
        sim.drop(r);
        let y = sim.cast(y32, self.p.min(4));
        sim.drop(y32);
        let trainable = self.full;
        if trainable {
            sim.save(y);
        }
        let out = sim.alloc(elems, sim.elem(y).max(self.p), x.rg || trainable);
        sim.drop(y);
        out
    }

    /// One attention sub-layer's attention (projections to `o`), eager or SDPA. Returns (output
    /// of `o`, backward transient, largest weight elements, eager's attention weights: returned up
    /// to the block, which holds them in `_` until the next sub-layer's replace them or it
    /// returns).
    fn t5_attention(
        &mut self,
        sim: &mut Sim,
        n: V,
        at: &Attend,
        biases: &mut Biases,
    ) -> (V, u64, u64, Option<V>) {
        let (i, stack, a) = (at.block, at.stack, &at.spec);
        let (b, s, t) = (self.b, self.s, self.t);
        let spec = self.spec;
        let lins = self.t5_linears(i, stack, at.sub, Component::Attention);
        let [qj, kj, vj, oj] = match lins.as_slice() {
            [q, k, v, o] => [*q, *k, *v, *o],
            _ => return (sim.share(n), 0, 0, None),
        };
        let (lq, lk, lv, lo) = (
            self.lin(&spec.tensors[qj]),
            self.lin(&spec.tensors[kj]),
            self.lin(&spec.tensors[vj]),
            self.lin(&spec.tensors[oj]),
        );
        let max_w = [lq, lk, lv, lo]
            .iter()
            .map(|l| l.in_f.saturating_mul(l.out_f))
            .max()
            .unwrap_or(0);
        let inner = a.num_heads.saturating_mul(a.head_dim);
        let heads = a.num_heads;
        let sq = b.saturating_mul(heads).saturating_mul(s).saturating_mul(s);
        let q = self.linear(sim, n, lq, t);
        let k = self.linear(sim, at.kv, lk, t);
        let v = self.linear(sim, at.kv, lv, t);
        let ce = sim.elem(q);
        // `position_bias`, made by the first block and passed on to the others.
        let cross = at.sub == 1;
        if cross && biases.cross.is_none() {
            biases.cross = Some(sim.alloc(heads.saturating_mul(s).saturating_mul(s), ce, false));
        }
        // (the stack's relative-attention table is looked up only until the bias exists)
        let has_table = || {
            spec.tensors.iter().any(|x| {
                x.component == Component::PositionEmbedding && x.name.starts_with(stack.prefix())
            })
        };
        if !cross && biases.position.is_none() && has_table() {
            // `_relative_position_bucket`: int64 and fp32 s² temporaries, three at a time.
            let s2 = s.saturating_mul(s);
            sim.transient(s2.saturating_mul(8).saturating_mul(3));
            let buckets = sim.alloc(s2, 8, false);
            if self.full {
                sim.save(buckets);
            }
            let table = sim.alloc(s2.saturating_mul(heads), self.p, self.full);
            sim.drop(buckets);
            biases.position = Some(table);
        }
        let bias = if cross { biases.cross } else { biases.position };
        let rg = q.rg || k.rg || v.rg;
        let bias_rg = bias.is_some_and(|x| x.rg);
        let bias_elem = bias.map_or(ce, |x| sim.elem(x));
        let mut weights = None;
        let (out, bwd) = match self.attention {
            AttentionImpl::Eager => {
                // `matmul` folds (b, h, s, d) into (b·h, s, d): the transposed views of the
                // projections are copied when b > 1.
                let fold = |sim: &mut Sim, x: V| {
                    if b > 1 {
                        sim.alloc(sim.elems(x), sim.elem(x), x.rg)
                    } else {
                        sim.share(x)
                    }
                };
                let qm = fold(sim, q);
                let km = fold(sim, k);
                // a matmul saves each operand for the other's gradient
                if k.rg {
                    sim.save(qm);
                }
                if q.rg {
                    sim.save(km);
                }
                let scores = sim.alloc(sq, ce, rg);
                sim.drop(qm);
                sim.drop(km);
                let scaled = sim.alloc(sq, ce, rg);
                sim.drop(scores);
                let mut e = ce.max(bias_elem);
                let mut x = sim.alloc(sq, e, rg || bias_rg);
                sim.drop(scaled);
                if let Some(m) = at.mask {
                    e = e.max(sim.elem(m));
                    let masked = sim.alloc(sq, e, x.rg);
                    sim.drop(x);
                    x = masked;
                }
                // CUDA autocast runs softmax in fp32 (its fp32 op list); CPU autocast does not.
                let xs = if self.autocast && !self.cpu {
                    sim.cast(x, 4)
                } else {
                    sim.share(x)
                };
                sim.drop(x);
                let sm = sim.alloc(sq, sim.elem(xs), xs.rg);
                if sm.rg {
                    sim.save(sm);
                }
                sim.drop(xs);
                let probs = self.dropout(sim, sm, spec.attention_dropout);
                let pm = if self.autocast {
                    sim.cast(probs, self.c)
                } else {
                    sim.share(probs)
                };
                let vm = fold(sim, v);
                if v.rg {
                    sim.save(pm);
                }
                if pm.rg {
                    sim.save(vm);
                }
                let o = sim.alloc(t.saturating_mul(inner), sim.elem(pm).max(sim.elem(vm)), rg);
                sim.drop(pm);
                sim.drop(vm);
                let contiguous = sim.alloc(sim.elems(o), sim.elem(o), o.rg);
                sim.drop(o);
                weights = Some(probs);
                // backward: the probabilities' gradient (and its fp32 cast where autocast cast
                // them) one b·h·s² at a time as each saved tensor is released, next to the
                // output's and v's gradients
                let probs_elem = sim.elem(probs);
                let cast_elem = if sim.elem(pm) != probs_elem {
                    sim.elem(pm)
                } else {
                    0
                };
                let ti = t.saturating_mul(inner).saturating_mul(ce);
                (
                    contiguous,
                    sq.saturating_mul(probs_elem + cast_elem)
                        .saturating_add(ti.saturating_mul(2)),
                )
            }
            AttentionImpl::Sdpa | AttentionImpl::Flash => {
                // `sdpa_attention_forward` passes the bias as a float mask
                // (`create_position_bias_mask`): the decoder's self-attention
                // `torch.where(causal, bias, min)` (saving the s² bool condition), otherwise the
                // bias itself, made contiguous (the relative bias is a permuted view: a copy).
                let mask_elems = heads.saturating_mul(s).saturating_mul(s);
                let mask = match (at.mask, bias) {
                    (Some(_), Some(bias)) => {
                        let causal = sim.alloc(s.saturating_mul(s), 1, false);
                        if bias.rg {
                            sim.save(causal);
                        }
                        let m = sim.alloc(mask_elems, sim.elem(bias), bias.rg);
                        sim.drop(causal);
                        m
                    }
                    (None, Some(bias)) if !cross => sim.alloc(mask_elems, sim.elem(bias), bias.rg),
                    (_, Some(bias)) => sim.share(bias),
                    (_, None) => sim.alloc(mask_elems, ce, false),
                };
                let r = if self.cpu && spec.attention_dropout > 0.0 {
                    self.t5_sdpa_math(sim, q, k, v, mask, sq)
                } else {
                    self.t5_sdpa_efficient(sim, [q, k, v], mask, heads)
                };
                sim.drop(mask);
                r
            }
        };
        let y = self.linear(sim, out, lo, t);
        sim.drop(out);
        for x in [q, k, v] {
            sim.drop(x);
        }
        (y, bwd, max_w, weights)
    }

    /// `_scaled_dot_product_attention_math` (PyTorch's CPU path when dropout is on): `q·√scale`
    /// and `k·√scale` (transposed like their inputs, so `matmul` copies them when b > 1), the
    /// scores with the mask added in place, `_safe_softmax`, dropout, `matmul` with v, and the
    /// `transpose(1, 2).contiguous()` copy. Saves what eager saves (the scaled copies, softmax,
    /// the dropout mask and output, v's copy). Returns (output, backward transient).
    fn t5_sdpa_math(&mut self, sim: &mut Sim, q: V, k: V, v: V, mask: V, sq: u64) -> (V, u64) {
        let b = self.b;
        let ce = sim.elem(q);
        let rg = q.rg || k.rg || v.rg;
        let fold = |sim: &mut Sim, x: V| {
            if b > 1 {
                let c = sim.alloc(sim.elems(x), sim.elem(x), x.rg);
                sim.drop(x);
                c
            } else {
                x
            }
        };
        let qs = sim.alloc(sim.elems(q), ce, q.rg);
        let qm = fold(sim, qs);
        let ks = sim.alloc(sim.elems(k), ce, k.rg);
        let km = fold(sim, ks);
        if k.rg {
            sim.save(qm);
        }
        if q.rg {
            sim.save(km);
        }
        let scores = sim.alloc(sq, ce.max(sim.elem(mask)), rg || mask.rg);
        sim.drop(qm);
        sim.drop(km);
        let sm = sim.alloc(sq, sim.elem(scores), scores.rg);
        sim.transient(sq.saturating_mul(sim.elem(scores)));
        sim.drop(scores);
        if sm.rg {
            sim.save(sm);
        }
        let probs = self.dropout(sim, sm, self.spec.attention_dropout);
        if v.rg {
            sim.save(probs);
        }
        let vm = if b > 1 {
            sim.alloc(sim.elems(v), sim.elem(v), v.rg)
        } else {
            sim.share(v)
        };
        if probs.rg {
            sim.save(vm);
        }
        let o = sim.alloc(sim.elems(q), ce, rg);
        sim.drop(probs);
        sim.drop(vm);
        let contiguous = sim.alloc(sim.elems(o), ce, rg);
        sim.drop(o);
        (contiguous, sq.saturating_mul(2 * ce))
    }

    /// CUDA's memory-efficient kernel (`_scaled_dot_product_efficient_attention`, the one that
    /// takes a float mask with a gradient and dropout): saves q, k, v, the bias, its output and
    /// the fp32 logsumexp (b·h·s rounded up to 32); its backward writes the bias gradient at the
    /// full (b, h, s, s) before summing it to the bias's shape, next to dq, dk, dv. Not measured
    /// on a GPU yet. Returns (output, backward transient).
    fn t5_sdpa_efficient(&mut self, sim: &mut Sim, qkv: [V; 3], mask: V, heads: u64) -> (V, u64) {
        let [q, k, v] = qkv;
        let (b, s) = (self.b, self.s);
        let sq = b.saturating_mul(heads).saturating_mul(s).saturating_mul(s);
        let ce = sim.elem(q);
        let rg = q.rg || k.rg || v.rg;
        let out = sim.alloc(sim.elems(q), ce, rg);
        let lse = sim.alloc(
            b.saturating_mul(heads).saturating_mul(s.div_ceil(32) * 32),
            4,
            false,
        );
        if rg {
            for x in [q, k, v, mask, out, lse] {
                sim.save(x);
            }
        }
        sim.drop(lse);
        let qkv = sim
            .elems(q)
            .saturating_add(sim.elems(k))
            .saturating_add(sim.elems(v))
            .saturating_mul(ce);
        let bias_grad = if mask.rg {
            sq.saturating_mul(sim.elem(mask))
        } else {
            0
        };
        let grad_out = sim.elems(q).saturating_mul(ce);
        (out, qkv.saturating_add(bias_grad).saturating_add(grad_out))
    }

    /// `T5LayerFF`'s dense part (`T5DenseActDense` / `T5DenseGatedActDense`). Returns (output of
    /// `wo`, backward transient, largest weight elements, `wo`'s gradient bytes).
    fn t5_feed_forward(
        &mut self,
        sim: &mut Sim,
        n: V,
        i: usize,
        stack: Stack,
    ) -> (V, u64, u64, u64) {
        let t = self.t;
        let spec = self.spec;
        let sub = if stack == Stack::Decoder { 2 } else { 1 };
        let lins = self.t5_linears(i, stack, sub, Component::Mlp);
        let Some((&wo_j, ins)) = lins.as_slice().split_last() else {
            return (sim.share(n), 0, 0, 0);
        };
        let wo = self.lin(&spec.tensors[wo_j]);
        // `wo` stays fp32 in a model loaded in fp16 (`ModelSpec::keeps_fp32_in`); under autocast
        // the masters are fp32 anyway
        let wo_elem = if spec.keeps_fp32_in(&spec.tensors[wo_j], self.dtype) {
            self.p.max(4)
        } else {
            self.p
        };
        let inner = wo.in_f;
        let mut max_w = wo.in_f.saturating_mul(wo.out_f);
        let mut ys: Few<V, 4> = Few::new();
        for &j in ins {
            let l = self.lin(&spec.tensors[j]);
            max_w = max_w.max(l.in_f.saturating_mul(l.out_f));
            ys.push(self.linear(sim, n, l, t));
        }
        let gated = ins.len() >= 2;
        let act = match ys.as_slice() {
            [g, u, ..] => {
                let (g, u) = (*g, *u);
                let a = self.t5_act(sim, g);
                sim.drop(g);
                let p = self.mul(sim, a, u);
                sim.drop(a);
                sim.drop(u);
                p
            }
            [u] => {
                let u = *u;
                let a = self.t5_act(sim, u);
                sim.drop(u);
                a
            }
            [] => return (sim.share(n), 0, max_w, 0),
        };
        let dropped = self.dropout(sim, act, spec.hidden_dropout);
        // `hidden_states.to(self.wo.weight.dtype)` when they differ (fp32 `wo` under autocast)
        let wo_in = sim.cast(dropped, wo_elem);
        sim.drop(dropped);
        let y = self.linear(sim, wo_in, wo, t);
        sim.drop(wo_in);
        // Backward, `wo` first: its input gradient (t·inner) next to its weight gradient in the
        // compute dtype (under autocast, before the fp32 cast becomes `.grad`) while `wo`'s saved
        // input is still held; under autocast the input gradient is then cast to fp32 (and back
        // through the explicit `.to`) after `wo` released its saved input. The dropout's and
        // activation's gradients each replace the one before (measured on t5-small at 2 + 2
        // layers: fp32 peaks at `wo`'s matmul, bf16 autocast at the fp32 cast). A gated MLP
        // holds two t·inner gradients.
        let ti = t.saturating_mul(inner);
        let grads = if gated { 2 } else { 1 };
        let weight_grad = if self.autocast && self.full {
            wo.in_f.saturating_mul(wo.out_f).saturating_mul(self.c)
        } else {
            0
        };
        // (`phases` counts `wo`'s `.grad` at this peak; under autocast it only exists after the
        // cast, so the compute-dtype gradient stands in for it at the matmul)
        let fp32_grad_later = if weight_grad > 0 {
            wo.in_f.saturating_mul(wo.out_f).saturating_mul(self.p)
        } else {
            0
        };
        let at_matmul = ti
            .saturating_mul(self.c)
            .saturating_mul(grads)
            .saturating_add(weight_grad)
            .saturating_sub(fp32_grad_later);
        // by then `wo`'s matmul has also released its saved autocast copy of the weight
        let after_cast = if self.autocast {
            ti.saturating_mul(4)
                .saturating_add(ti.saturating_mul(self.c).saturating_mul(grads - 1))
                .saturating_sub(wo.in_f.saturating_mul(wo.out_f).saturating_mul(self.c))
        } else {
            0
        };
        let trans = at_matmul.max(after_cast);
        let wo_grad = if self.full {
            wo.in_f.saturating_mul(wo.out_f).saturating_mul(wo_elem)
        } else {
            wo.lora_r.map_or(0, |r| {
                r.saturating_mul(wo.in_f + wo.out_f).saturating_mul(4)
            })
        };
        (y, trans, max_w, wo_grad)
    }

    /// The feed-forward activation: ReLU saves its output; others as [`Walk::activation`].
    fn t5_act(&mut self, sim: &mut Sim, x: V) -> V {
        if self.spec.hidden_act == "relu" {
            let out = sim.alloc(sim.elems(x), sim.elem(x), x.rg);
            if x.rg {
                sim.save(out);
            }
            out
        } else {
            self.activation(sim, x)
        }
    }

    /// One `T5Block` of `stack`. Returns the block's output and figures.
    fn t5_block(
        &mut self,
        sim: &mut Sim,
        x: V,
        i: usize,
        ctx: &StackInputs,
        biases: &mut Biases,
    ) -> (V, LayerAct) {
        let (stack, enc_out, mask) = (ctx.stack, ctx.enc_out, ctx.mask);
        self.layer = i;
        let spec = self.spec;
        let before = sim.saved_bytes();
        let copies_before = self.autocast_saved_bytes;
        let input_bytes = sim.elems(x).saturating_mul(sim.elem(x));
        let layer = match stack {
            Stack::Encoder => spec.encoder_layers.get(i),
            Stack::Decoder => spec.layers.get(i),
        }
        .copied();
        let a = layer.and_then(|l| l.attention);
        let mut x = x;
        // weight grads arrive in the compute dtype before autocast's ToCopyBackward
        let wgrad_elem = if self.autocast && self.full {
            self.c
        } else {
            0
        };
        // the decoder's layers run backward next to the encoder output's gradient, which their
        // cross-attention k/v projections accumulate from the last block's on
        let enc_grad = match (stack, enc_out) {
            (Stack::Decoder, Some(e)) => sim.elems(e).saturating_mul(sim.elem(e)),
            _ => 0,
        };
        // per attention sub-layer: (saved bytes, backward transient, gradient bytes)
        let mut parts: Few<(u64, u64, u64), 4> = Few::new();
        let mut held_weights: Option<V> = None;
        let subs: &[usize] = if stack == Stack::Decoder && enc_out.is_some() {
            &[0, 1]
        } else {
            &[0]
        };
        for &sub in subs {
            let Some(a) = (if sub == 1 {
                layer.and_then(|l| l.cross_attention)
            } else {
                a
            }) else {
                continue;
            };
            let saved_before = sim.saved_bytes();
            let n = self.t5_norm(sim, x);
            let at = Attend {
                block: i,
                stack,
                spec: a,
                kv: if sub == 1 { enc_out.unwrap_or(n) } else { n },
                sub,
                mask: if sub == 0 { mask } else { None },
            };
            let (o, bwd, w, weights) = self.t5_attention(sim, n, &at, biases);
            sim.drop(n);
            if let Some(old) = std::mem::replace(&mut held_weights, weights) {
                sim.drop(old);
            }
            let dropped = self.dropout(sim, o, spec.hidden_dropout);
            let sum = self.add(sim, x, dropped);
            sim.drop(dropped);
            sim.drop(x);
            x = sum;
            parts.push((
                sim.saved_bytes() - saved_before,
                bwd.saturating_add(w.saturating_mul(wgrad_elem))
                    .saturating_add(enc_grad),
                self.t5_grad_bytes(i, stack, Some(sub)),
            ));
        }
        let attn_saved = sim.saved_bytes() - before;
        let attn_copies = self.autocast_saved_bytes - copies_before;
        let n = self.t5_norm(sim, x);
        let (y, mlp_bwd, _, wo_grad) = self.t5_feed_forward(sim, n, i, stack);
        sim.drop(n);
        let dropped = self.dropout(sim, y, spec.hidden_dropout);
        let out = self.add(sim, x, dropped);
        sim.drop(dropped);
        sim.drop(x);
        if let Some(w) = held_weights {
            sim.drop(w);
        }
        let last = i + 1 == spec.layers.len();
        let enc_grad_at_mlp = if stack == Stack::Decoder && !last {
            enc_grad
        } else {
            0
        };
        // The attention sub-layers run backward last one first: while sub-layer k does, the ones
        // before it still hold their saved tensors and the ones after it have their gradients.
        // `phases` adds the whole attention half's saved bytes and the whole block's gradients,
        // so each sub-layer's peak is expressed against those.
        let parts = parts.as_slice();
        let attn_bwd = (0..parts.len())
            .map(|k| {
                let later_saved: u64 = parts[k + 1..].iter().map(|p| p.0).sum();
                let earlier_grads: u64 = parts[..k].iter().map(|p| p.2).sum();
                parts[k]
                    .1
                    .saturating_sub(later_saved.saturating_add(earlier_grads))
            })
            .max()
            .unwrap_or(0);
        let act = LayerAct {
            saved_bytes: sim.saved_bytes() - before,
            attn_saved_bytes: attn_saved,
            autocast_saved_bytes: self.autocast_saved_bytes - copies_before,
            attn_autocast_saved_bytes: attn_copies,
            input_bytes,
            mlp_backward_transient_bytes: mlp_bwd.saturating_add(enc_grad_at_mlp),
            attn_backward_transient_bytes: attn_bwd,
            grad_bytes: self.t5_grad_bytes(i, stack, None),
            mlp_peak_grad_bytes: wo_grad,
            attn_peak_grad_bytes: self.t5_grad_bytes(i, stack, None),
            retained_bytes: 0,
        };
        (out, act)
    }

    /// Gradients of `stack`'s block `i` (of its sub-layer `sub` only, when given): its tensors
    /// (and the relative-attention table of block 0) under full fine-tuning, its fp32 adapters
    /// under LoRA.
    fn t5_grad_bytes(&self, i: usize, stack: Stack, sub: Option<usize>) -> u64 {
        let spec = self.spec;
        let part = sub.map(|k| format!(".layer.{k}."));
        let in_part = |name: &str| part.as_deref().is_none_or(|p| name.contains(p));
        let mine = |j: &&usize| {
            let name = &spec.tensors[**j].name;
            name.starts_with(stack.prefix()) && in_part(name)
        };
        if self.full {
            let table = if i == 0 {
                spec.tensors
                    .iter()
                    .filter(|x| {
                        x.component == Component::PositionEmbedding
                            && x.name.starts_with(stack.prefix())
                            && in_part(&x.name)
                    })
                    .map(|x| x.numel())
                    .sum()
            } else {
                0
            };
            let elem = |j: usize| {
                if spec.keeps_fp32_in(&spec.tensors[j], self.dtype) {
                    self.p.max(4)
                } else {
                    self.p
                }
            };
            self.layer_tensor_ids(i)
                .iter()
                .filter(mine)
                .map(|&j| spec.tensors[j].numel().saturating_mul(elem(j)))
                .fold(table.saturating_mul(self.p), u64::saturating_add)
        } else {
            self.lora.map_or(0, |l| {
                self.layer_tensor_ids(i)
                    .iter()
                    .filter(mine)
                    .filter_map(|&j| {
                        let shape = spec.tensors[j].linear?;
                        l.rank_for_index(j, Some(i as u32)).map(|r| {
                            r.saturating_mul(shape.in_features + shape.out_features)
                                .saturating_mul(4)
                        })
                    })
                    .fold(0, u64::saturating_add)
            })
        }
    }

    /// A stack's embedding (the shared table) and its dropout. Returns (embeddings, dropped):
    /// `inputs_embeds` stays a local of `T5Stack.forward` until it returns.
    fn t5_embed(&mut self, sim: &mut Sim) -> (V, V) {
        let emb = sim.alloc(
            self.t.saturating_mul(self.spec.hidden_size),
            self.p,
            self.full,
        );
        let kept = sim.share(emb);
        (kept, self.dropout(sim, emb, self.spec.hidden_dropout))
    }

    /// A stack's final norm and dropout.
    fn t5_stack_end(&mut self, sim: &mut Sim, x: V) -> V {
        let n = self.t5_norm(sim, x);
        sim.drop(x);
        self.dropout(sim, n, self.spec.hidden_dropout)
    }
}

/// One forward walk of an encoder–decoder (see the module documentation).
pub(super) fn run(w: &mut Walk<'_>, checkpointing: bool) -> ActivationProfile {
    let mut sim = Sim::with_capacity(256);
    w.cache.clear();
    w.cache_free_bytes = 0;
    w.autocast_copy_bytes = 0;
    w.autocast_saved_bytes = 0;
    let spec = w.spec;
    let (b, s, t) = (w.b, w.s, w.t);
    let d = spec.hidden_size;
    let vocab = spec.vocab_size;
    let mut layers = LayerRuns::default();
    let mut kept = 0u64;
    // input_ids (int64), also the labels
    let _ids = sim.alloc(t, 8, false);
    let (enc_embeds, x) = w.t5_embed(&mut sim);
    let pre_saved = sim.saved_bytes();
    let mut walked = Walked {
        checkpointing,
        layers: &mut layers,
        kept: &mut kept,
    };
    let (x, biases) = walked.blocks(w, &mut sim, x, Stack::Encoder, None, None);
    let between_start = sim.saved_bytes();
    let enc_out = w.t5_stack_end(&mut sim, x);
    biases.drop(&mut sim);
    sim.drop(enc_embeds);
    if checkpointing {
        // an input of every checkpointed decoder block
        *walked.kept += sim.save_counting(enc_out);
    }
    // `_shift_right(labels)`: new ids, saved by the decoder's embedding when it trains
    let dec_ids = sim.alloc(t, 8, false);
    if w.full {
        sim.save(dec_ids);
    }
    sim.drop(dec_ids);
    let held_at_switch = sim.saved_bytes() - between_start;
    let (dec_embeds, y) = w.t5_embed(&mut sim);
    let between_saved = sim.saved_bytes() - between_start;
    let encoder_layers = walked.layers.len();
    // the decoder's causal mask: eager materialises it as b·s² in the embeddings' dtype
    let mask = sim.alloc(b.saturating_mul(s).saturating_mul(s), w.p, false);
    let (y, biases) = walked.blocks(w, &mut sim, y, Stack::Decoder, Some(enc_out), Some(mask));
    let grad_stream_bytes = t.saturating_mul(d).saturating_mul(sim.elem(y));
    let before_head = sim.saved_bytes();
    let head_copies_before = w.autocast_saved_bytes;
    let out = w.t5_stack_end(&mut sim, y);
    biases.drop(&mut sim);
    sim.drop(mask);
    sim.drop(dec_embeds);
    // `decoder_outputs` keeps the unscaled output referenced until forward returns, and the
    // scaled one stays referenced by `sequence_output`
    let scaled = if spec.tie_word_embeddings {
        sim.alloc(sim.elems(out), sim.elem(out), out.rg)
    } else {
        sim.share(out)
    };
    let head = Lin {
        in_f: d,
        out_f: vocab,
        trainable: w.full,
        lora_r: None,
        quantized: false,
    };
    let logits = w.linear(&mut sim, scaled, head, t);
    let head_saved = sim.saved_bytes() - before_head;
    let head_copies = w.autocast_saved_bytes - head_copies_before;
    // `CrossEntropyLoss()(lm_logits.view(-1, V), labels.view(-1))`: log_softmax in the logits'
    // dtype, except under autocast, whose fp32 op lists (CUDA and CPU) cast 16-bit logits to fp32
    // first (measured on the CPU: an fp32 copy of the logits, then an fp32 log_softmax)
    let le = sim.elem(logits);
    let upcast = w.autocast && le < 4;
    let lin = if upcast {
        sim.cast(logits, 4)
    } else {
        sim.share(logits)
    };
    let ls_elem = sim.elem(lin);
    let ls = sim.alloc(t.saturating_mul(vocab), ls_elem, true);
    sim.save(ls);
    let total_weight = sim.alloc(1, 4, false);
    sim.save(total_weight);
    sim.drop(total_weight);
    let loss = sim.alloc(1, 4, true);
    sim.drop(lin);
    sim.drop(ls);
    sim.drop(loss);
    // `forward` returns: its locals (`encoder_outputs`, `decoder_outputs`, the scaled
    // `sequence_output`) go; what autograd saved stays (under autocast it saved their casts)
    for v in [out, scaled, enc_out] {
        sim.drop(v);
    }
    let forward_peak = sim.peak_bytes();
    let forward_peak_copies = sim.peak_copy_bytes();
    // `del out`: the logits die with the model output
    let (forward_end, autocast_saved_end_bytes) = super::end_forward(
        w,
        &mut sim,
        Some(logits),
        &layers,
        head_copies,
        checkpointing,
    );
    let tv = t.saturating_mul(vocab);
    ActivationProfile {
        tokens: t,
        layers,
        pre_saved_bytes: pre_saved,
        head_saved_bytes: head_saved,
        logits_bytes: tv.saturating_mul(le),
        logits_fp32_bytes: if upcast { tv.saturating_mul(4) } else { 0 },
        log_softmax_bytes: tv.saturating_mul(ls_elem),
        autocast_copy_bytes: w.autocast_copy_bytes,
        autocast_saved_end_bytes,
        head_autocast_saved_bytes: head_copies,
        forward_peak_bytes: forward_peak,
        autocast_copies_at_forward_peak_bytes: forward_peak_copies,
        forward_end_bytes: forward_end,
        grad_stream_bytes,
        ce_backward_bytes: tv.saturating_mul(ls_elem).saturating_mul(2),
        inputs_bytes: t.saturating_mul(8),
        labels_saved_bytes: 4,
        checkpointing,
        layers_kept_bytes: kept,
        encoder_layers,
        between_stacks_saved_bytes: between_saved,
        between_stacks_held_bytes: held_at_switch,
        module_state_bytes: 0,
        head_norm_backward_bytes: 0,
        next_forward_peak_bytes: 0,
    }
}

/// Where the blocks' figures go.
struct Walked<'a> {
    checkpointing: bool,
    layers: &'a mut LayerRuns,
    /// Σ bytes the blocks keep for backward (saved, or their inputs under checkpointing).
    kept: &'a mut u64,
}

impl Walked<'_> {
    /// Walks one stack's blocks; under checkpointing each block keeps its input (the rest is
    /// recomputed in backward). Returns the output and the biases the stack made (locals of
    /// `T5Stack.forward`, alive until it returns).
    fn blocks(
        &mut self,
        w: &mut Walk<'_>,
        sim: &mut Sim,
        mut x: V,
        stack: Stack,
        enc_out: Option<V>,
        mask: Option<V>,
    ) -> (V, Biases) {
        let spec = w.spec;
        let ctx = StackInputs {
            stack,
            enc_out,
            mask,
        };
        let mut biases = Biases::default();
        let n = match stack {
            Stack::Encoder => spec.encoder_layers.len(),
            Stack::Decoder => spec.layers.len(),
        };
        for i in 0..n {
            let before = sim.saved_bytes();
            if self.checkpointing {
                sim.save(x);
                *self.kept += sim.elems(x) * sim.elem(x);
                sim.discard_saves = true;
            }
            let (y, act) = w.t5_block(sim, x, i, &ctx, &mut biases);
            if self.checkpointing {
                sim.discard_saves = false;
                // the biases the first block made are inputs of the checkpointed blocks after it
                if i == 0 {
                    for v in [biases.position, biases.cross].into_iter().flatten() {
                        *self.kept += sim.save_counting(v);
                    }
                }
            } else {
                *self.kept += sim.saved_bytes() - before;
            }
            self.layers.push(&act);
            x = y;
        }
        (x, biases)
    }
}

/// What the walk cannot count for an encoder–decoder: a quantized base. Loaded quantized (or in
/// fp16), transformers keeps T5's `wo` projections unquantized in fp32 (`_keep_in_fp32_modules`),
/// which neither the weights nor the feed-forward walk model.
pub(super) fn check(
    spec: &ModelSpec,
    quant: crate::scenario::BaseQuant,
) -> Result<(), ScenarioError> {
    if quant != crate::scenario::BaseQuant::None {
        return Err(ScenarioError::Invalid {
            field: "lora.base_quant".into(),
            expected: "an unquantized base for an encoder–decoder (t5) model: a quantized T5 \
                       keeps its `wo` projections in fp32, which is not modelled; use LoRA on a \
                       16-bit or fp32 base"
                .into(),
            found: format!("model_type {:?}", spec.model_type),
        });
    }
    Ok(())
}

/// Whether `spec` is walked here.
pub(super) fn is_t5(spec: &ModelSpec) -> bool {
    spec.kind == crate::spec::ModelKind::EncoderDecoder
}

#[cfg(test)]
mod tests {
    use crate::scenario::{AttentionImpl, BaseQuant, Dtype, Lora, LoraTargets, MixedPrecision};
    use crate::train::persistent::Precision;
    use crate::train::Counting;
    use crate::Scenario;

    /// t5-small at 2 encoder + 2 decoder layers.
    fn t5_small_2_2() -> crate::ModelSpec {
        let json = crate::presets::find("google-t5__t5-small").unwrap().json;
        let mut v: serde_json::Value = serde_json::from_str(json).unwrap();
        v["num_layers"] = 2.into();
        v["num_decoder_layers"] = 2.into();
        crate::parse_config(&v.to_string(), None).unwrap()
    }

    fn fp32_eager(batch: u64, seq_len: u64) -> Scenario {
        Scenario {
            dtype: Dtype::Fp32,
            mixed_precision: MixedPrecision::None,
            attention: AttentionImpl::Eager,
            batch,
            seq_len,
            ..Scenario::default()
        }
    }

    /// PyTorch's saved-tensor census (`torch.autograd.graph.saved_tensors_hooks`, unique storages)
    /// of one forward of t5-small at 2 + 2 layers, fp32, eager, b = 2, s = 64 on the CPU, worked
    /// by hand: t·d = 128 × 512 fp32 is 262,144 B, one b·h·s² tensor 2·8·64²·4 = 262,144 B.
    #[test]
    fn t5_blocks_save_what_the_census_counted() {
        let spec = t5_small_2_2();
        let s = fp32_eager(2, 64);
        let prof =
            super::super::profile(&spec, &s, Precision::of(&s), None, Counting::CpuExact).unwrap();
        let td = 128 * 512 * 4u64;
        let norm = 2 * td + 128 * 4; // input, rsqrt, normalised input
                                     // self-attention: norm, its output (saved by q/k/v), q and k copies, softmax, dropout mask
                                     // and output, v's copy, the contiguous output (saved by o), the branch's dropout mask
        let self_attn = norm + td * 9;
        let bias_indices = 64 * 64 * 8u64; // block 0: the relative-position buckets
                                           // cross-attention: as self-attention plus the encoder output (saved once, block 0)
        let cross = norm + td * 9;
        let encoder_output = td;
        // feed-forward: norm, its output (saved by wi), ReLU's output, dropout mask and output
        // (t·d_ff each), the branch's dropout mask
        let ff = norm + td + 3 * 4 * td + td;
        let blocks: Vec<u64> = prof.layers.iter().map(|l| l.saved_bytes).collect();
        assert_eq!(
            blocks,
            [
                self_attn + bias_indices + ff,
                self_attn + ff,
                self_attn + bias_indices + cross + encoder_output + ff,
                self_attn + cross + ff,
            ]
        );
        assert_eq!(blocks, [7_111_680, 7_078_912, 10_257_920, 9_963_008]);
        assert_eq!(prof.encoder_layers, 2);
        assert_eq!(prof.pre_saved_bytes, td); // the embeddings' dropout mask
                                              // encoder final norm and dropout mask, decoder ids, decoder embeddings' dropout mask
        assert_eq!(prof.between_stacks_saved_bytes, norm + td + 128 * 8 + td);
        assert_eq!(prof.between_stacks_held_bytes, norm + td + 128 * 8);
        // decoder final norm and dropout mask, the scaled output saved by lm_head
        assert_eq!(prof.head_saved_bytes, norm + td + td);
        // fp32 log_softmax of the logits, b·s·V
        assert_eq!(prof.log_softmax_bytes, 128 * 32_128 * 4);
        // the census total: 53,223,428 B, with the input ids the encoder's embedding saves
        let census = 128 * 8
            + prof.pre_saved_bytes
            + prof.layers_kept_bytes
            + prof.between_stacks_saved_bytes
            + prof.head_saved_bytes
            + prof.log_softmax_bytes
            + 4;
        assert_eq!(census, 53_223_428);
    }

    /// The backward of t5-small (6 + 6 layers, fp32, SGD, b = 1, s = 64) peaks at the decoder
    /// embedding's backward: the lm_head gradient, the dense embedding gradient and their sum, all
    /// V·d, next to what the encoder still holds (measured on the CPU: 562,049,848 B).
    #[test]
    fn t5_backward_peaks_where_the_decoder_embedding_sums_the_shared_gradient() {
        let spec = crate::parse_config(
            crate::presets::find("google-t5__t5-small").unwrap().json,
            None,
        )
        .unwrap();
        let s = Scenario {
            optimizer: crate::scenario::Optimizer::Sgd,
            ..fp32_eager(1, 64)
        };
        let e = crate::train::estimate_training_counting(
            &spec,
            &s,
            &crate::estimate::Device::Cpu.overheads(),
            Counting::CpuExact,
        )
        .unwrap();
        let backward = e.phases.iter().find(|p| p.name == "backward").unwrap();
        let measured = 562_049_848i64;
        let off = backward.peak_allocated_bytes as i64 - measured;
        assert!(off.abs() < 4096, "{off}");
    }

    #[test]
    fn a_quantized_t5_base_is_refused_naming_the_field() {
        let spec = t5_small_2_2();
        let s = Scenario {
            lora: Some(Lora {
                r: 8,
                alpha: 16,
                targets: LoraTargets::Default,
                base_quant: BaseQuant::Nf4,
            }),
            ..fp32_eager(1, 64)
        };
        let err = crate::train::estimate_training_counting(
            &spec,
            &s,
            &crate::estimate::Device::Cpu.overheads(),
            Counting::CpuExact,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("lora.base_quant"), "{err}");
    }
}
