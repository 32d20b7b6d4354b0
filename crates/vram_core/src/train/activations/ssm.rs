//! One Mamba layer (`MambaBlock` / `FalconMambaBlock`, transformers 5.24) in training, walked op by
//! op through the mixer's torch path: what runs without the `mamba_ssm` / `causal_conv1d` kernels
//! (on CPU always; on CUDA unless those packages, or the hub kernels, are installed — the fused
//! kernels save far less). Source: `modeling_mamba.py` / `modeling_falcon_mamba.py`,
//! `MambaMixer.forward` with `mamba_inner_fn` returning `None`, `causal_conv1d_fn` and
//! `mamba_selective_scan`'s recurrent loop (`use_mambapy` off, no `torch.compile`).
//!
//! With `t = b·s` tokens, `d` = inner width, `n` = state size, `r` = time-step rank, `k` = conv
//! width, each layer saves for backward (fp32, b = 1, checked to the byte against the CPU
//! measurement of falcon-mamba-7b at 2 layers):
//! - the block's RMSNorm (input, `rsqrt`, normalised input) and its output (saved by `in_proj`);
//! - `in_proj`'s output, t·2d (the convolution saves its half, `silu(gate)` the other);
//! - the convolution's output before the slice to s, b·d·(s + k − 1) (saved by `silu`) and the
//!   `silu` output, t·d (saved by `x_proj`, the `D` skip and `deltaB_u`);
//! - `x_proj`'s output t·(r + 2n); FalconMamba's weightless RMS norms on dt, B and C: one `rsqrt`
//!   and one normalised copy each;
//! - `dt + dt_bias` and `softplus(dt)`, t·d each; `discrete_A = exp(A·dt)` and
//!   `discrete_B = dt·B`, t·d·n fp32 each; the recurrent states, (s + 1)·b·d·n fp32 (the zero
//!   initial state and one per step, each saved by the next step's product and its own `matmul`);
//! - the scan output after the `D` skip and `silu(z)`, t·d each, and their product (`out_proj`'s
//!   input); with b > 1, `x_proj` and `out_proj` each save a contiguous copy of their transposed
//!   input (`matmul` folds (b, s, d) to (t, d) with `reshape`, which copies a transposed tensor;
//!   the product is then freed, `u` stays saved by the scan). Checked against mamba-130m at
//!   2 layers, b = 2, s = 512, fp32 AdamW: every phase within 0.001 %, the backward peak (inside
//!   the scan's backward) included.
//!
//! `deltaB_u = discrete_B · u` (t·d·n fp32) lives only during the scan. In backward each step's
//! `select_backward` writes its slice into a zero tensor of the full t·d·n shape, accumulated into
//! the gradients of `discrete_A` and `deltaB_u`: two full-size buffers and one new slice tensor at a
//! time, next to the t·d gradients that wait for the scan (z's branch, the `D` skip, the stacked
//! outputs).
//!
//! Under autocast (fp32 master weights, bf16/fp16 compute) the projections and the convolution
//! run in the compute dtype with autocast's weight copies (the conv weight, a view, cast at every
//! call); `B.float()`, `u.float()` and the fp32 states with their compute-dtype copies (saved by the
//! step matmuls) follow from the explicit casts and type promotion; `.to(dtype)` before `out_proj`
//! returns to fp32. CUDA autocast runs `softplus` in fp32 (its fp32 op list; CPU autocast has no such
//! entry), so on CUDA dt is fp32. Checked on the CPU against mamba-130m at 2 layers, bf16 autocast,
//! AdamW, b = 2, s = 256: the layer's saved bytes equal PyTorch's saved-tensor census, every phase
//! within 0.05 %.

use super::{Lin, Walk};
use crate::error::ScenarioError;
use crate::scenario::BaseQuant;
use crate::spec::{Component, ModelSpec, SsmSpec};
use crate::train::sim::{Sim, V};

/// What the walk cannot count for a state-space model: a quantized base (the mixer then calls
/// `dt_proj` as a module, through bitsandbytes).
pub(super) fn check(spec: &ModelSpec, quant: BaseQuant) -> Result<(), ScenarioError> {
    if quant != BaseQuant::None {
        return Err(ScenarioError::Invalid {
            field: "lora.base_quant".into(),
            expected: "an unquantized base for a state-space (mamba) model: QLoRA and int8 bases \
                       are not modelled"
                .into(),
            found: format!("model_type {:?}", spec.model_type),
        });
    }
    Ok(())
}

impl Walk<'_> {
    /// The block: `residual = x`; `norm(x.to(norm.weight.dtype))`; `residual.to(float32)`
    /// (`residual_in_fp32`, true in both configs' defaults and in every released checkpoint);
    /// the mixer; `residual + mixer_out`. Returns (output, backward transient bytes).
    pub(super) fn ssm_block(&mut self, sim: &mut Sim, x: V, i: usize, ssm: &SsmSpec) -> (V, u64) {
        let t = self.t;
        let h = self.spec.hidden_size;
        let xin = sim.cast(x, self.p);
        let n = self.norm(sim, xin, t.saturating_mul(h), t);
        sim.drop(xin);
        let residual = sim.cast(x, 4);
        sim.drop(x);
        let (m, transient) = self.mixer(sim, n, i, ssm);
        let out = self.add(sim, residual, m);
        sim.drop(residual);
        sim.drop(m);
        (out, transient)
    }

    /// A linear of the mixer by name (`in_proj`, `x_proj`, `out_proj`), with its LoRA adapter.
    fn mixer_linear(&self, i: usize, name: &str) -> Lin {
        let spec = self.spec;
        let found = self
            .layer_tensor_ids(i)
            .iter()
            .map(|&j| &spec.tensors[j])
            .find(|t| {
                t.component == Component::Mixer && t.linear.is_some() && t.name.contains(name)
            });
        match found {
            Some(t) => self.lin(t),
            None => Lin {
                in_f: 0,
                out_f: 0,
                trainable: self.full,
                lora_r: None,
                quantized: false,
            },
        }
    }

    /// `F.linear` on a transposed (b, s, w) view: `matmul` folds it to (t, w) with `reshape`,
    /// a view when b = 1 and a contiguous copy otherwise (the copy is what the matmul saves).
    /// Under autocast the input is cast to the compute dtype first (keeping its strides), then
    /// folded.
    fn folded_linear(&mut self, sim: &mut Sim, u: V, l: Lin) -> V {
        let cast = if self.autocast {
            sim.cast(u, self.c)
        } else {
            sim.share(u)
        };
        let input = if self.b > 1 {
            let copy = sim.alloc(sim.elems(cast), sim.elem(cast), cast.rg);
            sim.drop(cast);
            copy
        } else {
            cast
        };
        let out = self.linear(sim, input, l, self.t);
        sim.drop(input);
        out
    }

    /// `a * b` broadcast to `elems` elements of `elem` bytes: autograd's `MulBackward0` saves `b`
    /// when `a` requires grad and `a` when `b` does.
    fn product(&self, sim: &mut Sim, a: V, b: V, elems: u64, elem: u64) -> V {
        if a.rg {
            sim.save(b);
        }
        if b.rg {
            sim.save(a);
        }
        sim.alloc(elems, elem, a.rg || b.rg)
    }

    /// `part.float()` of a slice of `whole` (`elems` elements): the same storage when it is fp32
    /// already, otherwise a copy of the slice alone.
    fn float_part(&self, sim: &mut Sim, whole: V, elems: u64) -> V {
        if sim.elem(whole) == 4 {
            sim.share(whole)
        } else {
            sim.alloc(elems, 4, whole.rg)
        }
    }

    /// FalconMamba's `FalconMambaWeightlessRMSNorm`: `_norm(x.float()).type_as(x)` over `width`.
    fn weightless_norm(&mut self, sim: &mut Sim, x: V, width: u64) -> V {
        let t = self.t;
        let e = sim.elem(x);
        let x32 = self.float_part(sim, x, t.saturating_mul(width));
        if x.rg {
            sim.save(x32); // pow's input
        }
        sim.transient(t.saturating_mul(width).saturating_mul(4)); // pow(2), reduced by mean
        let r = sim.alloc(t, 4, x.rg); // rsqrt(mean + eps)
        if x.rg {
            sim.save(r);
            sim.save(x32); // x * rsqrt: both operands
        }
        let y = sim.alloc(t.saturating_mul(width), 4, x.rg);
        sim.drop(r);
        sim.drop(x32);
        let out = sim.cast(y, e);
        sim.drop(y);
        out
    }

    /// `MambaMixer.forward`'s torch path; returns (output t·H, backward transient bytes).
    fn mixer(&mut self, sim: &mut Sim, n: V, i: usize, ssm: &SsmSpec) -> (V, u64) {
        let (b, s, t) = (self.b, self.s, self.t);
        let (d, st, r, k) = (ssm.d_inner, ssm.state_size, ssm.dt_rank, ssm.conv_kernel);
        let full = self.full;
        let p = self.p;
        let falcon = self.spec.model_type == "falcon_mamba";
        // the dtype `.to(dtype)` returns to before out_proj (fp32 under autocast)
        let entry = sim.elem(n);
        // 1. projected_states = in_proj(hidden_states).transpose(1, 2)
        let in_proj = self.mixer_linear(i, "in_proj");
        let proj = self.linear(sim, n, in_proj, t);
        sim.drop(n);
        let e = sim.elem(proj);
        // A = -exp(A_log.float()): `.float()` copies a low-precision A_log; exp saves its output;
        // the negation is what the scan uses.
        let ds = d.saturating_mul(st);
        let a_copy = (p != 4).then(|| sim.alloc(ds, 4, full));
        let a_exp = sim.alloc(ds, 4, full);
        if let Some(c) = a_copy {
            sim.drop(c);
        }
        if full {
            sim.save(a_exp);
        }
        let a = sim.alloc(ds, 4, full);
        sim.drop(a_exp);
        // 2. causal_conv1d_fn: conv1d(x.to(weight.dtype), padding k − 1)[..., :s], then silu;
        // conv saves its input (a view of projected_states, or a copy when the dtype differs).
        // Under autocast (conv1d is on both devices' lower-precision lists) the fp32 copy that
        // `.to(weight.dtype)` made is cast back to the compute dtype; the weight, a view of the
        // parameter (`weight.squeeze(1)`, not a leaf), is cast at every call and saved; the bias,
        // a leaf, is cast once into autocast's cache.
        let td = t.saturating_mul(d);
        let conv_in = if self.autocast {
            // the copies are of the convolved half of projected_states
            let up = sim.alloc(td, p, proj.rg);
            let down = sim.alloc(td, self.c, proj.rg);
            sim.drop(up);
            down
        } else {
            sim.cast(proj, p)
        };
        let conv_rg = conv_in.rg || full;
        if conv_rg {
            sim.save(conv_in);
        }
        if self.autocast {
            let kd = d.saturating_mul(k);
            let w = self.weight_copy(sim, kd, self.c, full);
            if conv_in.rg {
                self.save_copy(sim, w);
            }
            sim.drop(w);
            let has_bias = self
                .layer_tensor_ids(i)
                .iter()
                .any(|&j| self.spec.tensors[j].name.contains("conv1d.bias"));
            if has_bias {
                let bias = self.weight_copy(sim, d, self.c, full);
                if full {
                    self.cache.push(bias);
                } else {
                    sim.drop(bias);
                }
            }
        }
        let ce = sim.elem(conv_in);
        let conv = sim.alloc(
            b.saturating_mul(d)
                .saturating_mul(s.saturating_add(k).saturating_sub(1)),
            ce,
            conv_rg,
        );
        sim.drop(conv_in);
        if conv_rg {
            sim.save(conv); // silu's input (the slice keeps the whole output)
        }
        let u_p = sim.alloc(t.saturating_mul(d), ce, conv_rg);
        sim.drop(conv);
        let u = sim.cast(u_p, e); // `.to(hidden_states.dtype)`
        sim.drop(u_p);
        // 3. x_proj on the transposed conv output, split into dt, B, C (views)
        let x_proj = self.mixer_linear(i, "x_proj");
        let xp = self.folded_linear(sim, u, x_proj);
        let (dt_in, bm, cm) = if falcon {
            let dt = self.weightless_norm(sim, xp, r);
            let bm = self.weightless_norm(sim, xp, st);
            let cm = self.weightless_norm(sim, xp, st);
            sim.drop(xp);
            (dt, bm, cm)
        } else {
            let (dt, bm) = (sim.share(xp), sim.share(xp));
            (dt, bm, xp)
        };
        // time_step = dt_proj.weight @ time_step.transpose(1, 2): matmul folds the contiguous
        // (b, s, r) side into (t, r) without a copy; no bias, no LoRA branch (the module is not
        // called).
        let dt_lin = Lin {
            in_f: r,
            out_f: d,
            trainable: full,
            lora_r: None,
            quantized: false,
        };
        let dt_raw = self.linear(sim, dt_in, dt_lin, t);
        sim.drop(dt_in);
        // 4. mamba_selective_scan
        // dt = softplus(dt + dt_bias.float().to(dt.dtype)[..., None]): softplus saves its input
        let de = sim.elem(dt_raw);
        // (CUDA autocast runs softplus in fp32: its input is an fp32 copy, which it saves; CPU
        // autocast lists no such op)
        let dt_sum = sim.alloc(t.saturating_mul(d), de, dt_raw.rg || full);
        let sp_in = if self.autocast && !self.cpu {
            sim.cast(dt_sum, 4)
        } else {
            sim.share(dt_sum)
        };
        sim.drop(dt_sum);
        if sp_in.rg {
            sim.save(sp_in);
        }
        let dt = sim.alloc(t.saturating_mul(d), sim.elem(sp_in), sp_in.rg);
        sim.drop(sp_in);
        // discrete_A = exp(A[None, :, None, :] * dt[..., None]): the product saves A and dt and
        // is freed once exp (which saves its output) ran.
        let tdn = t.saturating_mul(d).saturating_mul(st);
        let prod = self.product(sim, a, dt, tdn, 4);
        let prod_rg = prod.rg;
        let disc_a = sim.alloc(tdn, 4, prod_rg);
        if prod_rg {
            sim.save(disc_a);
        }
        sim.drop(prod);
        sim.drop(a);
        // discrete_B = dt[..., None] * B[:, None].float(); deltaB_u = discrete_B * u[..., None].float()
        let b32 = self.float_part(sim, bm, t.saturating_mul(st));
        let disc_b = self.product(sim, dt, b32, tdn, 4);
        let u32 = sim.cast(u, 4);
        let delta_bu = self.product(sim, disc_b, u32, tdn, 4);
        let dbu_rg = delta_bu.rg;
        sim.drop(disc_b);
        sim.drop(b32);
        // the recurrent loop: zero state (input dtype), then per step state = dA_i·state + dBu_i
        // (the product a transient) and scan_output_i = state.to(input dtype) @ C_i; the states
        // are saved (by the next step's product and by their matmul), the step outputs (b·d)
        // are kept in a list until `torch.stack`.
        let bdn = b.saturating_mul(d).saturating_mul(st);
        let c_e = sim.cast(cm, e);
        if prod_rg || dbu_rg {
            sim.save(c_e);
        }
        // fp32 states (the product with fp32 discrete_A promotes), each with its `.to(e)` copy
        // saved by the matmul when e is not fp32; the zero state is in e.
        let state_bytes = if e == 4 {
            s.saturating_add(1).saturating_mul(bdn).saturating_mul(4)
        } else {
            s.saturating_mul(bdn)
                .saturating_mul(4 + e)
                .saturating_add(bdn.saturating_mul(e))
        };
        let states = sim.alloc(state_bytes, 1, prod_rg || dbu_rg);
        if states.rg {
            sim.save(states);
        }
        let steps = sim.alloc(t.saturating_mul(d), e, states.rg);
        sim.transient(bdn.saturating_mul(4));
        sim.drop(delta_bu);
        let stacked = sim.alloc(t.saturating_mul(d), e, states.rg);
        sim.drop(steps);
        sim.drop(states);
        sim.drop(disc_a);
        // scan_output + u * D.float()[None, :, None], then * silu(z)
        // D.float(): the parameter itself in fp32, a saved copy otherwise
        let d_copy = (p != 4).then(|| sim.alloc(d, 4, full));
        let d_f = match d_copy {
            Some(c) => sim.share(c),
            None => sim.alloc(0, 4, full), // the fp32 parameter itself: no new bytes
        };
        let skip = self.product(sim, u, d_f, t.saturating_mul(d), e.max(4));
        let skip_rg = skip.rg;
        sim.drop(d_f);
        let with_skip = sim.alloc(t.saturating_mul(d), e.max(4), skip_rg || stacked.rg);
        sim.drop(skip);
        sim.drop(stacked);
        if let Some(c) = d_copy {
            sim.drop(c);
        }
        if proj.rg {
            sim.save(proj); // silu(z) saves z, a view of projected_states
        }
        let silu_z = sim.alloc(t.saturating_mul(d), e, proj.rg);
        let gated = self.product(sim, with_skip, silu_z, t.saturating_mul(d), e.max(4));
        sim.drop(with_skip);
        sim.drop(silu_z);
        sim.drop(u32);
        sim.drop(dt);
        sim.drop(c_e);
        sim.drop(cm);
        sim.drop(bm);
        sim.drop(u);
        sim.drop(dt_raw);
        // 5. out_proj(scan_output.transpose(1, 2).to(dtype))
        let g = sim.cast(gated, entry);
        sim.drop(gated);
        let out_proj = self.mixer_linear(i, "out_proj");
        let out = self.folded_linear(sim, g, out_proj);
        sim.drop(g);
        sim.drop(proj);
        // backward of the scan: the two full-size accumulation buffers and one slice tensor,
        // plus the t·d gradients waiting for it
        let transient = tdn
            .saturating_mul(4)
            .saturating_mul(3)
            .saturating_add(t.saturating_mul(d).saturating_mul(4).saturating_mul(3));
        (out, transient)
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::{Dtype, MixedPrecision};
    use crate::train::persistent::Precision;
    use crate::train::Counting;
    use crate::Scenario;

    /// FalconMamba at H 256, d 512, n 16, r 16, k 4, V 1000, one layer.
    const SMALL_FALCON: &str = r#"{"model_type": "falcon_mamba", "hidden_size": 256,
        "intermediate_size": 512, "state_size": 16, "time_step_rank": 16, "conv_kernel": 4,
        "vocab_size": 1000, "num_hidden_layers": 1, "use_bias": false, "use_conv_bias": true,
        "tie_word_embeddings": true}"#;

    fn fp32(batch: u64, seq_len: u64) -> Scenario {
        Scenario {
            dtype: Dtype::Fp32,
            mixed_precision: MixedPrecision::None,
            batch,
            seq_len,
            ..Scenario::default()
        }
    }

    #[test]
    fn a_falcon_mamba_layer_saves_the_tensors_counted_by_hand() {
        let spec = crate::parse_config(SMALL_FALCON, None).unwrap();
        let s = fp32(1, 64);
        let prof =
            super::super::profile(&spec, &s, Precision::of(&s), None, Counting::CpuExact).unwrap();
        let (t, h, d, n, r, k) = (64u64, 256u64, 512u64, 16u64, 16u64, 4u64);
        let by_hand = [
            t * h * 4,           // the layer input, saved by the norm's pow
            t * 4,               // rsqrt
            t * h * 4,           // the normalised input, saved by the weight's product
            t * h * 4,           // the norm's output, saved by in_proj
            d * n * 4,           // exp(A_log)
            d * n * 4,           // A
            t * 2 * d * 4,       // in_proj's output (conv input, z)
            d * (t + k - 1) * 4, // the conv output before the slice, saved by silu
            t * d * 4,           // silu output u
            t * (r + 2 * n) * 4, // x_proj's output
            3 * t * 4,           // the weightless norms' rsqrt
            t * r * 4,           // normalised dt
            2 * t * n * 4,       // normalised B and C
            2 * t * d * 4,       // dt + bias, softplus
            2 * t * d * n * 4,   // discrete_A, discrete_B
            (t + 1) * d * n * 4, // the zero state and one state per step
            3 * t * d * 4,       // + u·D, silu(z), their product
        ]
        .iter()
        .sum::<u64>();
        // the same figure as PyTorch's saved-tensor census (torch.autograd.graph.saved_tensors_hooks,
        // unique storages) of this model in transformers 5.24 / torch 2.15
        assert_eq!(by_hand, 7_797_760);
        let layer = prof.layers.first().unwrap();
        assert_eq!(layer.saved_bytes, by_hand);
        // `vram measure --device cpu` of the same config: 8,251,664 B live after forward
        assert!(
            prof.forward_end_bytes.abs_diff(8_251_664) <= 16,
            "{}",
            prof.forward_end_bytes
        );
    }

    #[test]
    fn a_batch_above_one_adds_the_copy_that_matmul_folds_x_proj_into() {
        let spec = crate::parse_config(SMALL_FALCON, None).unwrap();
        let one = fp32(1, 64);
        let two = fp32(2, 64);
        let saved = |s: &Scenario| {
            super::super::profile(&spec, s, Precision::of(s), None, Counting::CpuExact)
                .unwrap()
                .layers
                .first()
                .unwrap()
                .saved_bytes
        };
        // twice every per-token term (the states and the conv output included), A and exp(A)
        // once, plus the contiguous copy of x_proj's transposed input that `matmul`'s reshape
        // makes when b > 1 (t·d·4; u stays saved by the scan). out_proj's copy is saved instead
        // of the product it copies, which is then freed: no change.
        let (t2, d, n) = (128u64, 512u64, 16u64);
        let a_terms = 2 * d * n * 4;
        assert_eq!(
            saved(&two),
            2 * (saved(&one) - a_terms) + a_terms + t2 * d * 4
        );
    }

    #[test]
    fn a_quantized_base_is_refused_naming_the_field() {
        let spec = crate::parse_config(SMALL_FALCON, None).unwrap();
        let s = Scenario {
            lora: Some(crate::scenario::Lora {
                r: 8,
                alpha: 16,
                targets: crate::scenario::LoraTargets::AllLinear,
                base_quant: crate::scenario::BaseQuant::Nf4,
            }),
            ..Scenario::default()
        };
        let err =
            crate::train::estimate_training(&spec, &s, &crate::report::DeviceOverheads::default())
                .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("base_quant"), "{text}");
    }

    #[test]
    fn with_checkpointing_a_layer_keeps_only_its_input() {
        let spec = crate::parse_config(SMALL_FALCON, None).unwrap();
        let plain = fp32(1, 64);
        let ckpt = Scenario {
            grad_checkpointing: true,
            ..fp32(1, 64)
        };
        let profile = |s: &Scenario| {
            super::super::profile(&spec, s, Precision::of(s), None, Counting::CpuExact).unwrap()
        };
        let (p, c) = (profile(&plain), profile(&ckpt));
        let input = 64 * 256 * 4;
        assert_eq!(c.layers_kept_bytes, input);
        // everything the layer saved is gone at the end of forward but its input
        assert_eq!(
            p.forward_end_bytes - c.forward_end_bytes,
            p.layers_kept_bytes - input
        );
    }
}
