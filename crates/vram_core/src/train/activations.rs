//! Activations of one training step of a HF `transformers` model, derived from the tensors each op
//! saves for backward, walked op by op through [`Sim`].
//!
//! The walk follows `modeling_llama.py` (transformers 5.x) and its relatives:
//! - `LlamaRMSNorm`: `x.to(float32)` (saved by `pow`), `rsqrt` output (saved), `weight * y.to(dtype)`
//!   saves `y` when the weight trains; LayerNorm (`native_layer_norm`) saves its input, mean, rstd.
//! - projections (`F.linear` → `mm`): the input is saved when the weight trains; the weight when the
//!   input requires grad. Under `torch.autocast` each call casts its input (a new low-precision copy
//!   per projection) and its weight; leaf weights that require grad are cached until autocast exits
//!   (`autocast_mode.cpp`, `cached_cast`), frozen weights are cast again per call.
//! - rotary (`apply_rotary_pos_emb`): `q*cos + rotate_half(q)*sin` saves only `cos`/`sin`; the
//!   result is a new tensor (fp32 under autocast, because `cos` follows the fp32 hidden states).
//! - SDPA / flash (`sdpa_attention_forward`, `is_causal`, GQA through `enable_gqa`): saves q, k, v,
//!   the output and an fp32 logsumexp (b·h·s); eager (`eager_attention_forward`): `repeat_kv` copies,
//!   the b·h·s² scores, `softmax(dtype=float32)` output (saved) and its cast back (saved by the
//!   second matmul), dropout masks when p > 0; `transpose(1, 2).contiguous()` copies eager's output
//!   (SDPA kernels already write (b, s, h, d), so the transpose back is free).
//! - MLP: `down(act(gate(x)) * up(x))` saves gate output (activation input), activation output and up
//!   output (the product's operands) and the product (down's input).
//! - head (`LlamaForCausalLM.forward`, `loss_utils.ForCausalLMLoss`): logits b·s·V in the compute
//!   dtype, `logits.float()`, `cross_entropy` = `log_softmax` (saves its fp32 output) + `nll_loss`.
//! - peft LoRA (`lora/layer.py`, `Linear.forward`): `x.to(lora_A.weight.dtype)` (fp32 adapters) is
//!   saved by `lora_A`, its r-wide output by `lora_B`; bitsandbytes `MatMul4Bit` saves its input when
//!   the input requires grad and dequantizes the weight in forward and backward.
//! - gradient checkpointing (HF `GradientCheckpointingLayer`, `torch.utils.checkpoint`
//!   non-reentrant): every layer keeps its input; the rest is recomputed one layer at a time.

mod griffin;
mod ssm;
mod t5;

use super::few::Few;
use super::lora::LoraPlan;
use super::persistent::Precision;
use super::sim::{Sim, V};
use crate::error::ScenarioError;
use crate::scenario::{AttentionImpl, BaseQuant, Scenario};
use crate::spec::{AttentionSpec, Component, FfnSpec, ModelKind, ModelSpec, NormKind, TensorSpec};

/// Per-layer activation figures.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LayerAct {
    /// Bytes the layer saves for backward (incl. autocast weight copies it saved).
    pub saved_bytes: u64,
    /// Of which saved by the attention half (norm, projections, attention, residual).
    pub attn_saved_bytes: u64,
    /// Of `saved_bytes`, the autocast weight copies the layer saved (0 without autocast).
    pub autocast_saved_bytes: u64,
    /// Of `attn_saved_bytes`, the autocast weight copies the attention half saved.
    pub attn_autocast_saved_bytes: u64,
    /// Bytes of the layer input (what gradient checkpointing keeps).
    pub input_bytes: u64,
    /// Largest gradient temporaries of the MLP backward beyond what is still saved.
    pub mlp_backward_transient_bytes: u64,
    /// Largest gradient temporaries of the attention backward.
    pub attn_backward_transient_bytes: u64,
    /// Trainable-parameter gradients of this layer.
    pub grad_bytes: u64,
    /// Of `grad_bytes`, those that exist when the MLP half's backward (which runs first) peaks;
    /// the rest arrive after it.
    pub mlp_peak_grad_bytes: u64,
    /// Of `grad_bytes`, those that exist when the attention half's backward peaks (all of them
    /// unless a walk knows better: RecurrentGemma's recurrent block makes most of its own after
    /// its scan's backward).
    pub attn_peak_grad_bytes: u64,
    /// Under gradient checkpointing, what this layer's recomputation leaves alive after its
    /// backward until the next forward (RecurrentGemma: the recurrent half's graph, referenced from
    /// the module's `recurrent_states`); 0 for most layers.
    pub retained_bytes: u64,
}

/// What a layer's attention half (or RecurrentGemma's recurrent block in its place) reports
/// besides its output.
#[derive(Clone, Copy, Debug, Default)]
struct HalfFigures {
    /// Backward transient beyond the half's saved tensors.
    bwd: u64,
    /// Largest weight (elements) of the half.
    max_w: u64,
    /// Largest projection weight (elements) whose compute-dtype gradient can meet the half's
    /// backward peak (0 for the recurrent block: its scan peaks before any of its weights'
    /// gradients).
    projection_weight_elems: u64,
    /// Trainable gradients the half makes after its backward peak: q/k/v's (the attention peaks
    /// after o_proj's backward), the recurrent block's all but `linear_out`'s.
    later_grad_bytes: u64,
    /// RecurrentGemma's recurrent block: what its output branch saved, which the graph its
    /// recurrent state references does not reach (see [`LayerAct::retained_bytes`]).
    output_branch_bytes: Option<u64>,
}

/// The layers' figures as runs of identical consecutive layers: a 36-layer model whose layers
/// are alike is one entry, so sweeps neither copy nor compare 36 entries per point.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LayerRuns {
    /// (figures, consecutive layers with them); adjacent runs always differ.
    runs: Vec<(LayerAct, u64)>,
}

impl LayerRuns {
    /// Appends `count` layers with the figures `act`.
    pub fn push_n(&mut self, act: &LayerAct, count: u64) {
        if count == 0 {
            return;
        }
        match self.runs.last_mut() {
            Some((last, n)) if last == act => *n = n.saturating_add(count),
            _ => self.runs.push((act.clone(), count)),
        }
    }

    /// Appends one layer.
    pub fn push(&mut self, act: &LayerAct) {
        self.push_n(act, 1);
    }

    /// The runs, first layer first.
    pub fn runs(&self) -> &[(LayerAct, u64)] {
        &self.runs
    }

    /// Number of layers.
    pub fn len(&self) -> u64 {
        self.runs.iter().map(|r| r.1).sum()
    }

    /// Whether there are no layers.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// The first layer's figures.
    pub fn first(&self) -> Option<&LayerAct> {
        self.runs.first().map(|r| &r.0)
    }

    /// Every layer's figures, one per layer.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &LayerAct> + '_ {
        self.runs
            .iter()
            .flat_map(|(a, n)| std::iter::repeat_n(a, usize::try_from(*n).unwrap_or(usize::MAX)))
    }
}

impl FromIterator<LayerAct> for LayerRuns {
    fn from_iter<I: IntoIterator<Item = LayerAct>>(iter: I) -> Self {
        let mut out = LayerRuns::default();
        for a in iter {
            out.push(&a);
        }
        out
    }
}

/// Activation profile of one step.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ActivationProfile {
    /// Tokens per micro-batch (b·s).
    pub tokens: u64,
    /// The layers of the main stack, as runs of identical ones.
    pub layers: LayerRuns,
    /// Bytes saved before the first layer (embedding dropout masks, embedding LayerNorm, labels).
    pub pre_saved_bytes: u64,
    /// Bytes saved by the final norm and the head matmul (incl. the head's autocast weight copy).
    pub head_saved_bytes: u64,
    /// Logits b·s·V in the compute dtype, alive until the model output is dropped after the loss.
    pub logits_bytes: u64,
    /// The fp32 upcast `logits.float()` (0 when the logits are already fp32).
    pub logits_fp32_bytes: u64,
    /// `log_softmax`'s fp32 output saved by cross-entropy.
    pub log_softmax_bytes: u64,
    /// Low-precision weight copies made by autocast (saved for backward, or cached during forward).
    pub autocast_copy_bytes: u64,
    /// Of the bytes live when forward ends, the autocast weight copies autograd saved (what
    /// survives the cache release when autocast exits): the layers' (none inside checkpointed
    /// layers) and the head's.
    pub autocast_saved_end_bytes: u64,
    /// Of `head_saved_bytes`, the head's autocast weight copy.
    pub head_autocast_saved_bytes: u64,
    /// Peak above the persistent bytes during forward (incl. the loss).
    pub forward_peak_bytes: u64,
    /// Of `forward_peak_bytes`, the autocast weight copies live then (saved ones, and the cache's
    /// until autocast exits: with checkpointing, every trainable weight's copy).
    pub autocast_copies_at_forward_peak_bytes: u64,
    /// Bytes left for backward when forward ends (saved tensors, logits held).
    pub forward_end_bytes: u64,
    /// Bytes of the activation gradient flowing between layers.
    pub grad_stream_bytes: u64,
    /// Cross-entropy backward temporaries: `nll_loss` grad and `log_softmax` grad, b·s·V fp32 each.
    pub ce_backward_bytes: u64,
    /// `input_ids` (int64, also passed as `labels`) on the device for the whole step.
    pub inputs_bytes: u64,
    /// The shifted labels (int64, b·s) that `nll_loss` saves; released by its backward.
    pub labels_saved_bytes: u64,
    /// Whether gradient checkpointing is on.
    pub checkpointing: bool,
    /// Σ saved bytes of all layers (without checkpointing), or of their inputs (with it).
    pub layers_kept_bytes: u64,
    /// Encoder–decoder (t5): the first `encoder_layers` entries of `layers` are the encoder's
    /// blocks, the rest the decoder's; 0 for a single stack.
    pub encoder_layers: u64,
    /// Encoder–decoder: bytes saved between the encoder's last block and the decoder's first
    /// (the encoder's final norm and dropout mask, the decoder's input ids and embedding dropout
    /// mask), all released before the encoder's blocks run backward.
    pub between_stacks_saved_bytes: u64,
    /// Of [`ActivationProfile::between_stacks_saved_bytes`], what is still held while the
    /// decoder's embedding runs backward (all but the decoder's embedding dropout mask).
    pub between_stacks_held_bytes: u64,
    /// Tensors forward leaves on the modules, alive through backward and the optimizer step
    /// (RecurrentGemma's last recurrent state per recurrent layer, b·L·4).
    pub module_state_bytes: u64,
    /// Under gradient checkpointing, the next step's forward peak when it is above this one's: what
    /// the previous backward's recomputations left alive (`module_state_bytes`) is released only as
    /// each layer's forward resets it, so it meets the first layers' forward (0: no such state).
    pub next_forward_peak_bytes: u64,
    /// The final RMS norm's backward beyond what the layers still hold after the head's: its own
    /// saved tensors, and its fp32 math (`pow`, `mean`, `rsqrt` products) holding four b·s·H fp32
    /// tensors at once (measured on the CPU: SmolLM2 2 layers V 512, bf16 autocast b 4 × 512,
    /// where it is the backward peak).
    pub head_norm_backward_bytes: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Layout {
    PreNorm,
    PrePostNorm,
    PostBranchNorm,
    PostLn,
    Parallel,
}

#[derive(Clone, Copy)]
struct Lin {
    in_f: u64,
    out_f: u64,
    trainable: bool,
    lora_r: Option<u64>,
    quantized: bool,
}

struct Walk<'a> {
    spec: &'a ModelSpec,
    b: u64,
    s: u64,
    t: u64,
    c: u64,
    p: u64,
    autocast: bool,
    full: bool,
    quant: BaseQuant,
    lora: Option<&'a LoraPlan>,
    attention: AttentionImpl,
    layout: Layout,
    rope: bool,
    gemma_norm: bool,
    /// RecurrentGemma (Griffin): recurrent temporal blocks, rotary over half of each head made in
    /// each attention layer.
    griffin: bool,
    /// Bytes live when the first recurrent block resets its module state (after its projections).
    griffin_first_level_bytes: u64,
    derived: &'a crate::derived::Derived,
    cache: Vec<V>,
    /// The layer being walked (for the LoRA adapters of its tensors).
    layer: usize,

    /// Bytes of autocast cache entries of layers whose walk was reused (see [`LayerDelta`]): freed
    /// with the cache when autocast exits.
    cache_free_bytes: u64,
    /// Replay layers of a kind already walked (off only in the test that checks replay against
    /// the full walk).
    replay: bool,
    autocast_copy_bytes: u64,
    /// Bytes of autocast weight copies that autograd saved so far (walked layers only; replayed
    /// layers carry theirs in their [`LayerAct`]).
    autocast_saved_bytes: u64,
    /// CPU allocation semantics (`super::Counting::CpuExact`): dtype-sized dropout masks, SDPA
    /// with dropout through the math path.
    cpu: bool,
    /// The parameters' dtype (fp16 and bf16 load some tensors differently).
    dtype: crate::scenario::Dtype,
}

fn checked_dims(spec: &ModelSpec) -> Result<(), ScenarioError> {
    // Hybrid decoders (jamba, nemotron_h) have attention layers, but the walk has no rule for
    // their state-space mixers: refused rather than counted as if those layers held nothing.
    if spec.kind == ModelKind::DecoderOnly
        && spec
            .layers
            .iter()
            .any(|l| l.cross_attention.is_some() && l.attention.is_none())
    {
        return Err(ScenarioError::Invalid {
            field: "mode".into(),
            expected: "a decoder without image cross-attention layers: training activations of \
                       mllama's cross-attention layers are not modelled (inference is)"
                .into(),
            found: format!("model_type {:?}", spec.model_type),
        });
    }
    if spec.kind == ModelKind::DecoderOnly
        && spec.text_model_type != "recurrent_gemma"
        && spec.layers.iter().any(|l| l.ssm.is_some())
    {
        return Err(ScenarioError::Invalid {
            field: "mode".into(),
            expected: "a model without state-space mixer layers: training activations of hybrid \
                       attention/state-space models are not modelled (inference is)"
                .into(),
            found: format!("model_type {:?}", spec.model_type),
        });
    }
    Ok(())
}

impl<'a> Walk<'a> {
    /// Layer `i`'s block tensors (attention, MLP, experts, router, norms, biases) as indices into
    /// the inventory.
    fn layer_tensor_ids(&self, i: usize) -> &'a [usize] {
        self.derived
            .layer_tensors
            .get(i)
            .map_or(&[][..], |ix| ix.as_slice())
    }

    /// The linear weights of `component` among layer `i`'s block tensors (attention, MLP,
    /// experts, router, norms, biases), as indices into the inventory, in inventory order.
    fn layer_linears(&self, i: usize, component: Component) -> Few<usize, 8> {
        let spec = self.spec;
        self.layer_tensor_ids(i)
            .iter()
            .copied()
            .filter(|&j| {
                let t = &spec.tensors[j];
                t.component == component && t.linear.is_some()
            })
            .collect()
    }

    fn lin(&self, t: &TensorSpec) -> Lin {
        let shape = t.linear.unwrap_or(crate::spec::LinearShape {
            in_features: 0,
            out_features: 0,
        });
        let lora_r = self.lora.and_then(|l| {
            let index = self.derived.layer_tensors.get(self.layer).and_then(|ix| {
                ix.iter()
                    .copied()
                    .find(|&j| std::ptr::eq(&self.spec.tensors[j], t))
            });
            match index {
                Some(j) => l.rank_for_index(j, Some(self.layer as u32)),
                // outside the layers (the head is never adapted by `lin`'s callers)
                None => None,
            }
        });
        Lin {
            in_f: shape.in_features,
            out_f: shape.out_features,
            trainable: self.full,
            lora_r,
            quantized: self.lora.is_some()
                && self.quant != BaseQuant::None
                && t.component != Component::LmHead,
        }
    }

    /// Autocast casts a weight of `elems` elements to `elem` bytes (`cached_cast`): the copy,
    /// counted in `autocast_copy_bytes`.
    fn weight_copy(&mut self, sim: &mut Sim, elems: u64, elem: u64, rg: bool) -> V {
        self.autocast_copy_bytes = self
            .autocast_copy_bytes
            .saturating_add(elems.saturating_mul(elem));
        sim.alloc_copy(elems, elem, rg)
    }

    /// Autograd saves the autocast weight copy `w`; counted in `autocast_saved_bytes` unless the
    /// save is dropped (inside a checkpointed layer) or was made already.
    fn save_copy(&mut self, sim: &mut Sim, w: V) {
        self.autocast_saved_bytes = self
            .autocast_saved_bytes
            .saturating_add(sim.save_counting(w));
    }

    /// `F.linear(x, W)` (+ peft LoRA branch, + bitsandbytes dequantization).
    fn linear(&mut self, sim: &mut Sim, x: V, l: Lin, tokens: u64) -> V {
        let xin = if self.autocast {
            sim.cast(x, self.c)
        } else {
            sim.share(x)
        };
        let weight_elems = l.in_f.saturating_mul(l.out_f);
        if l.quantized {
            // MatMul4Bit / MatMul8bitLt: dequantized weight for the matmul; input saved when it
            // requires grad (`ctx.tensors = (A, B)`).
            sim.transient(weight_elems.saturating_mul(self.c));
            if x.rg {
                sim.save(xin);
            }
        } else if self.autocast {
            let w = self.weight_copy(sim, weight_elems, self.c, l.trainable);
            if x.rg {
                self.save_copy(sim, w);
            }
            if l.trainable {
                self.cache.push(w);
            } else {
                sim.drop(w);
            }
        }
        if l.trainable {
            sim.save(xin);
        }
        let out_elem = if self.autocast || l.quantized {
            self.c
        } else {
            sim.elem(x)
        };
        let rg = x.rg || l.trainable || l.lora_r.is_some();
        let out = sim.alloc(tokens.saturating_mul(l.out_f), out_elem, rg);
        sim.drop(xin);
        let Some(r) = l.lora_r else { return out };
        // peft: x = self._cast_input_dtype(x, lora_A.weight.dtype) (fp32 adapters);
        // result = result + lora_B(lora_A(dropout(x))) * scaling; result.to(torch_result_dtype).
        let xa = sim.cast(x, 4);
        let xa_in = if self.autocast {
            sim.cast(xa, self.c)
        } else {
            sim.share(xa)
        };
        let ae = sim.elem(xa_in);
        if self.autocast {
            // autocast casts the fp32 adapters (trainable leaves) to the compute dtype and caches
            // the copies until it exits (`cached_cast`); lora_B's copy is saved for its input's
            // gradient, lora_A's only when x requires grad (measured: r·in + out·r × 2 B per
            // adapted linear under bf16 autocast).
            for (elems, saved) in [
                (r.saturating_mul(l.in_f), x.rg),
                (r.saturating_mul(l.out_f), true),
            ] {
                let w = self.weight_copy(sim, elems, self.c, true);
                if saved {
                    self.save_copy(sim, w);
                }
                self.cache.push(w);
            }
        }
        sim.save(xa_in);
        let a = sim.alloc(tokens.saturating_mul(r), ae, true);
        sim.save(a);
        sim.drop(xa_in);
        sim.drop(xa);
        let bo = sim.alloc(tokens.saturating_mul(l.out_f), ae, true);
        sim.drop(a);
        let scaled = sim.alloc(tokens.saturating_mul(l.out_f), ae, true);
        sim.drop(bo);
        let sum_elem = sim.elem(out).max(ae);
        let sum = sim.alloc(tokens.saturating_mul(l.out_f), sum_elem, true);
        sim.drop(scaled);
        sim.drop(out);
        let res = sim.cast(sum, out_elem);
        sim.drop(sum);
        res
    }

    fn norm(&mut self, sim: &mut Sim, x: V, elems: u64, rows: u64) -> V {
        let trainable = self.full;
        match self.spec.norm {
            NormKind::RmsNorm => {
                let x32 = sim.cast(x, 4);
                if x.rg {
                    sim.save(x32);
                }
                let r = sim.alloc(rows, 4, x.rg);
                if x.rg {
                    sim.save(r);
                }
                let y32 = sim.alloc(elems, 4, x.rg);
                sim.drop(x32);
                sim.drop(r);
                let rg = x.rg || trainable;
                if self.gemma_norm {
                    // Gemma: output = _norm(x.float()) * (1.0 + weight.float()); output.type_as(x)
                    // (the product saves `1 + weight`, H fp32, for the normalised input's
                    // gradient)
                    if trainable {
                        sim.save(y32);
                    }
                    let scale = sim.alloc(elems / rows.max(1), 4, trainable);
                    if x.rg {
                        sim.save(scale);
                    }
                    sim.drop(scale);
                    let o = sim.alloc(elems, 4, rg);
                    sim.drop(y32);
                    let out = sim.cast(o, sim.elem(x));
                    sim.drop(o);
                    V { rg, ..out }
                } else {
                    let y = sim.cast(y32, sim.elem(x));
                    sim.drop(y32);
                    if trainable {
                        sim.save(y);
                    }
                    let out = sim.alloc(elems, sim.elem(x), rg);
                    sim.drop(y);
                    out
                }
            }
            NormKind::LayerNorm | NormKind::LayerNormNoBias => {
                // autocast runs layer_norm in fp32 (autocast fp32 op list).
                let xi = if self.autocast {
                    sim.cast(x, 4)
                } else {
                    sim.share(x)
                };
                let rg = x.rg || trainable;
                if rg {
                    sim.save(xi);
                    let stats = sim.alloc(rows.saturating_mul(2), 4, false);
                    sim.save(stats);
                    sim.drop(stats);
                }
                let out = sim.alloc(elems, sim.elem(xi), rg);
                sim.drop(xi);
                out
            }
        }
    }

    fn add(&self, sim: &mut Sim, a: V, b: V) -> V {
        let e = sim.elem(a).max(sim.elem(b));
        sim.alloc(sim.elems(a).max(sim.elems(b)), e, a.rg || b.rg)
    }

    fn dropout(&self, sim: &mut Sim, x: V, p: f64) -> V {
        if p <= 0.0 {
            return x;
        }
        let n = sim.elems(x);
        // CUDA `native_dropout`: a bool mask; CPU `_dropout_impl`: noise in the input's dtype.
        let mask_elem = if self.cpu { sim.elem(x) } else { 1 };
        let mask = sim.alloc(n, mask_elem, false);
        if x.rg {
            sim.save(mask);
        }
        // `input * mask` (CPU) / the fused kernel (CUDA): the mask is alive next to the output
        let out = sim.alloc(n, sim.elem(x), x.rg);
        sim.drop(mask);
        sim.drop(x);
        out
    }

    fn activation(&self, sim: &mut Sim, x: V) -> V {
        if x.rg {
            sim.save(x);
        }
        let n = sim.elems(x);
        let e = sim.elem(x);
        if self.spec.hidden_act == "gelu_new" {
            // NewGELUActivation is written in Python: 0.5*x*(1+tanh(k*(x+0.044715*x^3))) saves the
            // tanh output, 0.5*x and (1+tanh) besides x.
            let mut extra = Vec::new();
            for _ in 0..3 {
                let t = sim.alloc(n, e, x.rg);
                if x.rg {
                    sim.save(t);
                }
                extra.push(t);
            }
            for t in extra {
                sim.drop(t);
            }
        }
        sim.alloc(n, e, x.rg)
    }

    fn mul(&self, sim: &mut Sim, a: V, b: V) -> V {
        if b.rg {
            sim.save(a);
        }
        if a.rg {
            sim.save(b);
        }
        let e = sim.elem(a).max(sim.elem(b));
        sim.alloc(sim.elems(a).max(sim.elems(b)), e, a.rg || b.rg)
    }

    /// Returns (output, backward transient bytes).
    fn attention_core(&mut self, sim: &mut Sim, q: V, k: V, v: V, a: &AttentionSpec) -> (V, u64) {
        let (b, s, t) = (self.b, self.s, self.t);
        let q_elems = t.saturating_mul(a.num_heads).saturating_mul(a.head_dim);
        let kv_elems = t.saturating_mul(a.num_kv_heads).saturating_mul(a.head_dim);
        let o_elems = t.saturating_mul(a.num_heads).saturating_mul(a.v_head_dim);
        let rg = q.rg || k.rg || v.rg;
        let cast = |sim: &mut Sim, x: V, autocast: bool, c: u64| {
            if autocast {
                sim.cast(x, c)
            } else {
                sim.share(x)
            }
        };
        let (qc, kc, vc) = (
            cast(sim, q, self.autocast, self.c),
            cast(sim, k, self.autocast, self.c),
            cast(sim, v, self.autocast, self.c),
        );
        let ce = sim.elem(qc);
        let out;
        let bwd;
        let math_path = self.cpu
            && self.spec.attention_dropout > 0.0
            && matches!(self.attention, AttentionImpl::Sdpa | AttentionImpl::Flash);
        match self.attention {
            AttentionImpl::Sdpa | AttentionImpl::Flash if math_path => {
                // `_scaled_dot_product_attention_math` (the CPU fallback when dropout_p > 0):
                // q·√scale and k·√scale (saved by the bmm), the causal mask materialised as a
                // b·s² fp32 `where` (transient), scores b·h·s² (+ mask in place), `_safe_softmax`
                // output (saved), dropout noise (saved) and the dropped probabilities (saved by
                // the bmm with v); the bmm output is (b, h, s, d) and gets copied below.
                let sq = b
                    .saturating_mul(a.num_heads)
                    .saturating_mul(s)
                    .saturating_mul(s);
                let qs = sim.alloc(q_elems, ce, rg);
                let mask = sim.alloc(s.saturating_mul(s), ce, false);
                let ks = sim.alloc(kv_elems, ce, rg);
                let scores = sim.alloc(sq, ce, rg);
                let sm = sim.alloc(sq, ce, rg);
                sim.transient(sq);
                sim.drop(scores);
                if rg {
                    for x in [qs, ks, sm, vc] {
                        sim.save(x);
                    }
                }
                let probs = self.dropout(sim, sm, self.spec.attention_dropout);
                if rg {
                    sim.save(probs);
                }
                out = sim.alloc(o_elems, ce, rg);
                sim.drop(mask);
                for x in [qs, ks, probs] {
                    sim.drop(x);
                }
                bwd = sq.saturating_mul(2 * ce);
            }
            AttentionImpl::Sdpa | AttentionImpl::Flash => {
                out = sim.alloc(o_elems, ce, rg);
                let lse = sim.alloc(b.saturating_mul(a.num_heads).saturating_mul(s), 4, false);
                if rg {
                    for x in [qc, kc, vc, out, lse] {
                        sim.save(x);
                    }
                }
                sim.drop(lse);
                // backward: grad of the output (contiguous copy), dq, dk, dv, and the flash kernel's
                // fp32 dq accumulator for 16-bit inputs.
                let accum = if ce < 4 { q_elems.saturating_mul(4) } else { 0 };
                bwd = o_elems
                    .saturating_mul(2 * ce)
                    .saturating_add((q_elems + 2 * kv_elems).saturating_mul(ce))
                    .saturating_add(accum);
            }
            AttentionImpl::Eager => {
                let groups = a.num_heads / a.num_kv_heads.max(1);
                let rep = |sim: &mut Sim, x: V| {
                    if groups > 1 {
                        let n = sim.elems(x).saturating_mul(groups);
                        sim.alloc(n, sim.elem(x), x.rg)
                    } else {
                        sim.share(x)
                    }
                };
                let kr = rep(sim, kc);
                let vr = rep(sim, vc);
                let sq = b
                    .saturating_mul(a.num_heads)
                    .saturating_mul(s)
                    .saturating_mul(s);
                if rg {
                    sim.save(qc);
                    sim.save(kr);
                }
                let scores = sim.alloc(sq, ce, rg);
                let scaled = sim.alloc(sq, ce, rg);
                sim.drop(scores);
                // `+ attention_mask`: the mask has the embeddings' dtype (fp32 under autocast over
                // fp32 weights), so the masked scores take the wider of the two
                let me = ce.max(self.p);
                let masked = sim.alloc(sq, me, rg);
                sim.drop(scaled);
                let s32 = sim.cast(masked, 4);
                sim.drop(masked);
                let sm = sim.alloc(sq, 4, rg);
                if rg {
                    sim.save(sm);
                }
                sim.drop(s32);
                let probs = sim.cast(sm, ce);
                sim.drop(sm);
                let probs = self.dropout(sim, probs, self.spec.attention_dropout);
                if rg {
                    sim.save(probs);
                    sim.save(vr);
                }
                out = sim.alloc(o_elems, ce, rg);
                sim.drop(probs);
                sim.drop(kr);
                sim.drop(vr);
                // Backward, against the saved set: the probabilities' gradient (ce); in 16 bits its
                // fp32 cast (`softmax(..., dtype=float32).to(dtype)`'s ToCopyBackward) once the
                // saved 16-bit probabilities are released; then softmax's gradient in the masked
                // scores' dtype next to the fp32 one. Measured on the CPU (SmolLM2 2 layers, V 512,
                // b 4 × 512, eager): fp32 8 B, bf16 autocast 6 B per b·h·s² element at the peak.
                let released = if ce < 4 { ce } else { 0 };
                let cast = if ce < 4 { 4 } else { 0 };
                bwd = sq
                    .saturating_mul(ce)
                    .max(sq.saturating_mul(cast))
                    .max(sq.saturating_mul((4 + me).saturating_sub(released)));
            }
        }
        for x in [qc, kc, vc] {
            sim.drop(x);
        }
        // `attn_output.transpose(1, 2).contiguous()`: the SDPA kernels (CPU flash, CUDA flash and
        // memory-efficient) allocate their output as (b, s, h, d) and return a transposed view, so
        // the transpose back is already contiguous and no copy is made (measured: one (b,h,s,d)
        // allocation, `empty_like` in `_scaled_dot_product_flash_attention_for_cpu`, per layer);
        // eager's matmul output is (b, h, s, d) and is copied.
        if self.attention == AttentionImpl::Eager || math_path {
            let contiguous = sim.alloc(o_elems, ce, rg);
            sim.drop(out);
            (contiguous, bwd)
        } else {
            (out, bwd)
        }
    }

    fn rotary(&self, sim: &mut Sim, x: V, elems: u64) -> V {
        if self.griffin {
            return self.griffin_rotary(sim, x, elems);
        }
        // q*cos (promoted to the dtype of cos = the hidden states' dtype), rotate_half, *sin, add.
        let e = sim.elem(x).max(self.p);
        let a = sim.alloc(elems, e, x.rg);
        let r = sim.alloc(elems, sim.elem(x), x.rg);
        let b = sim.alloc(elems, e, x.rg);
        sim.drop(r);
        let out = sim.alloc(elems, e, x.rg);
        sim.drop(a);
        sim.drop(b);
        out
    }

    /// Attention half: projections → (qk-norm) → rotary → attention → output projection.
    fn attention_block(&mut self, sim: &mut Sim, n: V, i: usize) -> (V, HalfFigures) {
        let t = self.t;
        let h = self.spec.hidden_size;
        if let Some(ssm) = self
            .spec
            .layers
            .get(i)
            .and_then(|l| l.ssm)
            .filter(|_| self.griffin)
        {
            return self.griffin_block(sim, n, i, &ssm);
        }
        let Some(a) = self.spec.layers.get(i).and_then(|l| l.attention) else {
            return (sim.share(n), HalfFigures::default());
        };
        let spec = self.spec;
        let lins = self.layer_linears(i, Component::Attention);
        let Some((&o_j, inputs)) = lins.as_slice().split_last() else {
            return (sim.share(n), HalfFigures::default());
        };
        let o_t = &spec.tensors[o_j];
        let q_dim = a.num_heads * a.head_dim;
        let kv_dim = a.num_kv_heads * a.head_dim;
        let mut outs: Few<(u64, V), 8> = Few::new();
        let mut max_w = 0u64;
        for &j in inputs {
            let l = self.lin(&spec.tensors[j]);
            max_w = max_w.max(l.in_f * l.out_f);
            let (src, own) = if l.in_f == h {
                (n, false)
            } else {
                // an MLA latent after its norm (q_a_layernorm / kv_a_layernorm)
                (sim.alloc(t * l.in_f, sim.elem(n), n.rg || self.full), true)
            };
            if own && (self.full || src.rg) {
                sim.save(src);
            }
            let y = self.linear(sim, src, l, t);
            if own {
                sim.drop(src);
            }
            outs.push((l.out_f, y));
        }
        let outs = outs.as_slice();
        let pick = |dim: u64, skip: Option<usize>| -> Option<usize> {
            outs.iter()
                .enumerate()
                .position(|(j, (o, _))| *o == dim && Some(j) != skip)
        };
        let last = outs.len().saturating_sub(1);
        let qi = pick(q_dim, None).unwrap_or(last);
        let ki = pick(kv_dim, Some(qi)).unwrap_or(last);
        let vi = pick(a.num_kv_heads * a.v_head_dim, Some(qi).filter(|_| true))
            .filter(|&j| j != ki && j != qi)
            .unwrap_or(if ki != qi { ki } else { last });
        let get = |j: usize| outs.get(j).map(|x| x.1);
        let (Some(q0), Some(k0), Some(v0)) = (get(qi), get(ki), get(vi)) else {
            return (sim.share(n), HalfFigures::default());
        };
        let (q0, k0, v0) = (sim.share(q0), sim.share(k0), sim.share(v0));
        for (_, y) in outs {
            sim.drop(*y);
        }
        let q_elems = t * q_dim;
        let k_elems = t * kv_dim;
        let has_qk_norm = self.derived.layer_qk_norm.get(i).copied().unwrap_or(false);
        let (mut q, mut k) = (q0, k0);
        if has_qk_norm {
            let qn = self.norm(sim, q, q_elems, t * a.num_heads);
            sim.drop(q);
            let kn = self.norm(sim, k, k_elems, t * a.num_kv_heads);
            sim.drop(k);
            q = qn;
            k = kn;
        }
        if self.rope {
            // RecurrentGemma makes its cos/sin tables in each attention layer
            let tables = self
                .griffin
                .then(|| self.griffin_rotary_tables(sim, a.head_dim, sim.elem(v0)));
            let qr = self.rotary(sim, q, q_elems);
            sim.drop(q);
            let kr = self.rotary(sim, k, k_elems);
            sim.drop(k);
            q = qr;
            k = kr;
            for table in tables.into_iter().flat_map(|(c, s)| [c, s]) {
                sim.drop(table);
            }
        }
        let (o, bwd) = self.attention_core(sim, q, k, v0, &a);
        sim.drop(q);
        sim.drop(k);
        sim.drop(v0);
        let lo = self.lin(o_t);
        max_w = max_w.max(lo.in_f * lo.out_f);
        let saved_before_o = sim.saved_bytes();
        let y = self.linear(sim, o, lo, t);
        // o_proj runs backward before the attention itself and releases what it saved (its input,
        // its autocast weight copy) by the attention's peak
        let o_saved = sim.saved_bytes() - saved_before_o;
        sim.drop(o);
        let y = self.dropout(sim, y, self.spec.hidden_dropout);
        // q/k/v (and MLA's latent projections) make their gradients after the attention's peak
        let later_grad_bytes = if self.full {
            inputs
                .iter()
                .map(|&j| spec.tensors[j].numel())
                .fold(0u64, u64::saturating_add)
                .saturating_mul(self.p)
        } else {
            0
        };
        (
            y,
            HalfFigures {
                bwd: bwd.saturating_sub(o_saved),
                max_w,
                projection_weight_elems: max_w,
                later_grad_bytes,
                output_branch_bytes: None,
            },
        )
    }

    /// MLP half. Returns (output, backward transient, largest weight elements).
    fn mlp_block(&mut self, sim: &mut Sim, n: V, i: usize) -> (V, u64, u64) {
        let t = self.t;
        let spec = self.spec;
        let ffn = self.spec.layers.get(i).and_then(|l| l.ffn);
        let mut max_w = 0u64;
        let mut out_acc: Option<V> = None;
        let mut trans = 0u64;
        // dense (or shared-expert) gated/plain MLP from the inventory
        for comp in [Component::Mlp, Component::SharedExperts] {
            let lins = self.layer_linears(i, comp);
            let Some((&down_j, ins)) = lins.as_slice().split_last() else {
                continue;
            };
            let down = self.lin(&spec.tensors[down_j]);
            let inner = down.in_f;
            let gated = ins.len() >= 2
                || ins
                    .first()
                    .is_some_and(|&j| self.lin(&spec.tensors[j]).out_f == 2 * inner);
            let mut ys: Few<V, 8> = Few::new();
            for &j in ins {
                let l = self.lin(&spec.tensors[j]);
                max_w = max_w.max(l.in_f * l.out_f);
                ys.push(self.linear(sim, n, l, t));
            }
            max_w = max_w.max(down.in_f * down.out_f);
            let prod = if gated {
                let (g, u) = match ys.as_slice() {
                    [g, u, ..] => (*g, *u),
                    [gu] => (*gu, sim.share(*gu)),
                    [] => continue,
                };
                let a = self.activation(sim, g);
                sim.drop(g);
                let p = self.mul(sim, a, u);
                sim.drop(a);
                sim.drop(u);
                p
            } else {
                let Some(&u) = ys.as_slice().first() else {
                    continue;
                };
                let a = self.activation(sim, u);
                sim.drop(u);
                a
            };
            let saves_prod = down.trainable || (down.quantized && prod.rg);
            let grads = if gated { 3 } else { 2 };
            let tt = (t * inner)
                .saturating_mul(self.c)
                .saturating_mul(grads)
                .saturating_sub(if saves_prod { t * inner * self.c } else { 0 });
            trans = trans.max(tt);
            let mut y = self.linear(sim, prod, down, t);
            sim.drop(prod);
            // Qwen2-MoE: `sigmoid(shared_expert_gate(x)) * shared_expert_output`; the product saves
            // the shared expert's output (b·s·H) and the sigmoid output.
            let spec = self.spec;
            let shared_gate = self
                .derived
                .layer_shared_expert_gate
                .get(i)
                .copied()
                .flatten()
                .map(|j| &spec.tensors[j]);
            if let (Component::SharedExperts, Some(gt)) = (comp, shared_gate) {
                let gl = self.lin(gt);
                let g = self.linear(sim, n, gl, t);
                let sig = sim.alloc(sim.elems(g), sim.elem(g), g.rg);
                if g.rg {
                    sim.save(sig);
                }
                sim.drop(g);
                let gated_y = self.mul(sim, sig, y);
                sim.drop(sig);
                sim.drop(y);
                y = gated_y;
            }
            out_acc = Some(match out_acc {
                None => y,
                Some(prev) => {
                    let s = self.add(sim, prev, y);
                    sim.drop(prev);
                    sim.drop(y);
                    s
                }
            });
        }
        if let Some(FfnSpec::Moe {
            num_experts,
            experts_per_token,
            expert_intermediate_size,
            ..
        }) = ffn
        {
            let h = self.spec.hidden_size;
            let ce = self.c;
            // peft 0.21 adapts the fused expert stacks and the router weight as parameters
            // (`lora.ParamWrapper`): inside the module's forward `_LoraFactorsProxy` folds the
            // adapter into a new tensor, `baddbmm(W, B, A)`, the whole `[E, out, in]` stack in the
            // parameter's dtype, which `grouped_mm` (and the router's `linear`) saves for the
            // weight's gradient: held until this layer's backward.
            let adapted: Few<(u64, bool), 4> = self
                .lora
                .map(|plan| {
                    self.layer_tensor_ids(i)
                        .iter()
                        .filter_map(|&j| plan.param_adapter(j))
                        .map(|a| (spec.tensors[a.tensor].numel(), a.materializes_stack()))
                        .collect()
                })
                .unwrap_or_else(Few::new);
            let adapted = adapted.as_slice();
            let experts_adapted = adapted.iter().any(|&(_, stack)| stack);
            for &(numel, _) in adapted {
                let w = sim.alloc(numel, self.p, true);
                sim.save(w);
                sim.drop(w);
            }
            // backward, down_proj first: its stack's gradient (as large as the stack) arrives while
            // every stack is held; gate_up's arrives after down's stack and gradient are freed.
            let mut freed = 0u64;
            for &(numel, _) in adapted.iter().filter(|(_, stack)| *stack).rev() {
                let bytes = numel.saturating_mul(self.p);
                trans = trans.max(bytes.saturating_sub(freed));
                freed = freed.saturating_add(bytes);
            }
            let weight_grad = self.full || experts_adapted;
            let rg = n.rg || weight_grad;
            // router: linear → softmax(dtype=float32) saved → top-k.
            let logits = sim.alloc(t * num_experts, ce, rg);
            let probs = sim.alloc(t * num_experts, 4, rg);
            if rg {
                sim.save(probs);
            }
            sim.drop(logits);
            sim.drop(probs);
            // routed tokens (t·k): gathered input, gate_up output, activation, product, down output.
            let routed = t.saturating_mul(experts_per_token);
            let i_e = expert_intermediate_size;
            for (elems, save) in [
                (routed * h, weight_grad),
                (routed * 2 * i_e, rg),
                (routed * i_e, rg),
                (routed * i_e, weight_grad),
                (routed * h, rg),
            ] {
                let x = sim.alloc(elems, ce, rg);
                if save {
                    sim.save(x);
                }
                sim.drop(x);
            }
            if self.autocast {
                let expert_elems: u64 = self
                    .layer_tensor_ids(i)
                    .iter()
                    .map(|&j| &spec.tensors[j])
                    .filter(|t| t.component == Component::Experts)
                    .map(|t| t.numel())
                    .sum();
                let w = self.weight_copy(sim, expert_elems, ce, false);
                if rg {
                    self.save_copy(sim, w);
                }
                sim.drop(w);
            }
            let per_expert_tokens = routed.div_ceil(num_experts.max(1));
            trans = trans.max(per_expert_tokens * 3 * i_e * ce + t * h * ce);
            let y = sim.alloc(t * h, ce, rg);
            out_acc = Some(match out_acc {
                None => y,
                Some(prev) => {
                    let s = self.add(sim, prev, y);
                    sim.drop(prev);
                    sim.drop(y);
                    s
                }
            });
        }
        let y = out_acc.unwrap_or_else(|| sim.share(n));
        let y = self.dropout(sim, y, self.spec.hidden_dropout);
        (y, trans, max_w)
    }

    fn layer(&mut self, sim: &mut Sim, x: V, i: usize) -> (V, LayerAct) {
        self.layer = i;
        let t = self.t;
        let h = self.spec.hidden_size;
        let before = sim.saved_bytes();
        let copies_before = self.autocast_saved_bytes;
        let input_bytes = sim.elems(x).saturating_mul(sim.elem(x));
        let (out, half, mlp_bwd, max_w, attn_saved, attn_copies);
        let ssm = self.spec.layers.get(i).and_then(|l| l.ssm);
        if let (Some(ssm), ModelKind::StateSpace) = (ssm, self.spec.kind) {
            let (y, transient) = self.ssm_block(sim, x, i, &ssm);
            out = y;
            attn_saved = sim.saved_bytes() - before;
            attn_copies = self.autocast_saved_bytes - copies_before;
            let state_space = HalfFigures {
                bwd: transient,
                ..HalfFigures::default()
            };
            (half, mlp_bwd, max_w) = (state_space, 0, 0);
        } else {
            match self.layout {
                Layout::PostLn => {
                    let (a, half_figures) = self.attention_block(sim, x, i);
                    let s1 = self.add(sim, a, x);
                    sim.drop(a);
                    sim.drop(x);
                    let h1 = self.norm(sim, s1, t * h, t);
                    sim.drop(s1);
                    attn_saved = sim.saved_bytes() - before;
                    attn_copies = self.autocast_saved_bytes - copies_before;
                    let (m, mb, w2) = self.mlp_block(sim, h1, i);
                    let s2 = self.add(sim, m, h1);
                    sim.drop(m);
                    sim.drop(h1);
                    out = self.norm(sim, s2, t * h, t);
                    sim.drop(s2);
                    (half, mlp_bwd, max_w) = (half_figures, mb, half_figures.max_w.max(w2));
                }
                Layout::Parallel => {
                    let n1 = self.norm(sim, x, t * h, t);
                    let (a, half_figures) = self.attention_block(sim, n1, i);
                    attn_saved = sim.saved_bytes() - before;
                    attn_copies = self.autocast_saved_bytes - copies_before;
                    let (m, mb, w2) = self.mlp_block(sim, n1, i);
                    sim.drop(n1);
                    let s1 = self.add(sim, a, m);
                    sim.drop(a);
                    sim.drop(m);
                    out = self.add(sim, x, s1);
                    sim.drop(s1);
                    sim.drop(x);
                    (half, mlp_bwd, max_w) = (half_figures, mb, half_figures.max_w.max(w2));
                }
                Layout::PreNorm | Layout::PrePostNorm | Layout::PostBranchNorm => {
                    let pre = self.layout != Layout::PostBranchNorm;
                    let post = self.layout != Layout::PreNorm;
                    let n1 = if pre {
                        self.norm(sim, x, t * h, t)
                    } else {
                        sim.share(x)
                    };
                    let (mut a, half_figures) = self.attention_block(sim, n1, i);
                    sim.drop(n1);
                    if post {
                        let an = self.norm(sim, a, t * h, t);
                        sim.drop(a);
                        a = an;
                    }
                    let h1 = self.add(sim, x, a);
                    sim.drop(a);
                    sim.drop(x);
                    attn_saved = sim.saved_bytes() - before;
                    attn_copies = self.autocast_saved_bytes - copies_before;
                    let n2 = if pre {
                        self.norm(sim, h1, t * h, t)
                    } else {
                        sim.share(h1)
                    };
                    let (mut m, mb, w2) = self.mlp_block(sim, n2, i);
                    sim.drop(n2);
                    if post {
                        let mn = self.norm(sim, m, t * h, t);
                        sim.drop(m);
                        m = mn;
                    }
                    out = self.add(sim, h1, m);
                    sim.drop(h1);
                    sim.drop(m);
                    (half, mlp_bwd, max_w) = (half_figures, mb, half_figures.max_w.max(w2));
                }
            }
        }
        let grad_bytes = if self.full {
            self.derived
                .layer_block_numel
                .get(i)
                .copied()
                .unwrap_or(0)
                .saturating_mul(self.p)
        } else {
            self.lora.map_or(0, |l| {
                let modules: u64 = l
                    .adapted
                    .iter()
                    .filter(|a| a.in_layer(i as u32))
                    .map(|a| a.params(l.r) * 4)
                    .sum();
                let params: u64 = self
                    .layer_tensor_ids(i)
                    .iter()
                    .filter_map(|&j| l.param_adapter(j))
                    .map(|a| a.params() * 4)
                    .sum();
                modules + params
            })
        };
        // The MLP half runs backward first: at its peak only the down projection's gradient exists
        // in a dense MLP (the peak is the gated product's backward, before gate/up make theirs;
        // measured on the CPU, SmolLM2 2 layers V 512 fp32 b 4 × 512: every MLP gradient counted
        // there put the backward peak 2.1 % high); a MoE layer's are all counted; so are LoRA's
        // few adapter gradients.
        let dense_mlp = self.spec.layers.get(i).is_some_and(|l| {
            matches!(l.ffn, Some(FfnSpec::Dense { .. }) | None)
                && !self
                    .layer_tensor_ids(i)
                    .iter()
                    .any(|&j| self.spec.tensors[j].component == Component::SharedExperts)
        });
        let down_grad = self
            .layer_linears(i, Component::Mlp)
            .as_slice()
            .last()
            .map(|&j| self.spec.tensors[j].numel().saturating_mul(self.p));
        let mlp_peak_grad_bytes =
            if let (true, true, Some(down)) = (self.full, dense_mlp, down_grad) {
                down
            } else if self.full {
                let spec = self.spec;
                self.layer_tensor_ids(i)
                    .iter()
                    .map(|&j| &spec.tensors[j])
                    .filter(|t| {
                        matches!(
                            t.component,
                            Component::Mlp
                                | Component::Experts
                                | Component::SharedExperts
                                | Component::Router
                        )
                    })
                    .map(|t| t.numel())
                    .fold(0, u64::saturating_add)
                    .saturating_mul(self.p)
            } else {
                grad_bytes
            };
        // weight grads arrive in the compute dtype before autocast's ToCopyBackward (fp32 .grad);
        // QLoRA dequantizes the weight again in backward.
        let weight_transient = if (self.autocast && self.full) || self.quant != BaseQuant::None {
            max_w.saturating_mul(self.c)
        } else {
            0
        };
        // The attention half's peak is inside the attention itself (after o_proj's backward): a
        // projection's weight transient comes at its own backward, so the half's transient is the
        // larger of the two.
        let attn_weight_transient = if weight_transient > 0 {
            half.projection_weight_elems.saturating_mul(self.c)
        } else {
            0
        };
        let act = LayerAct {
            saved_bytes: sim.saved_bytes() - before,
            attn_saved_bytes: attn_saved,
            autocast_saved_bytes: self.autocast_saved_bytes - copies_before,
            attn_autocast_saved_bytes: attn_copies,
            input_bytes,
            mlp_backward_transient_bytes: mlp_bwd.saturating_add(weight_transient),
            attn_backward_transient_bytes: half.bwd.max(attn_weight_transient),
            grad_bytes,
            mlp_peak_grad_bytes,
            attn_peak_grad_bytes: grad_bytes.saturating_sub(half.later_grad_bytes),
            retained_bytes: half
                .output_branch_bytes
                .map_or(0, |branch| attn_saved.saturating_sub(branch)),
        };
        (out, act)
    }
}

/// The recorded effect of walking one layer, replayed for later layers of the same kind entered
/// with an input in the same state.
struct LayerDelta {
    /// The layer that was walked.
    layer: usize,
    /// State of the layer's input when it was entered.
    input: super::sim::SlotState,
    /// What the walk did to the simulator.
    effect: super::sim::Effect,
    /// Autocast weight copies it made.
    autocast_copy_bytes: u64,
    /// Bytes of its autocast cache entries that the cache release frees.
    cache_free_bytes: u64,
    /// Its per-layer figures.
    act: LayerAct,
}

/// Per layer, which other layer it shares its LoRA adapters with (the first layer whose adapted
/// tensors sit at the same places of an identical layer); empty without LoRA.
fn lora_layer_kinds(w: &Walk<'_>) -> Vec<usize> {
    let Some(plan) = w.lora else {
        return Vec::new();
    };
    let d = w.derived;
    let adapted = |i: usize| {
        d.layer_tensors[i].iter().map(move |&j| {
            plan.rank_for_index(j, Some(i as u32)).is_some() || plan.param_adapter(j).is_some()
        })
    };
    let mut reps: Vec<usize> = Vec::new();
    (0..d.layer_tensors.len())
        .map(|i| {
            let same = |r: &&usize| {
                d.walk_kind.get(**r) == d.walk_kind.get(i) && adapted(**r).eq(adapted(i))
            };
            match reps.iter().find(same) {
                Some(&r) => r,
                None => {
                    reps.push(i);
                    i
                }
            }
        })
        .collect()
}

/// Walks one forward pass and returns the activation profile.
pub fn profile(
    spec: &ModelSpec,
    scenario: &Scenario,
    precision: Precision,
    lora: Option<&LoraPlan>,
    counting: super::Counting,
) -> Result<ActivationProfile, ScenarioError> {
    profile_with(spec, scenario, precision, lora, counting, true)
}

fn profile_with(
    spec: &ModelSpec,
    scenario: &Scenario,
    precision: Precision,
    lora: Option<&LoraPlan>,
    counting: super::Counting,
    replay: bool,
) -> Result<ActivationProfile, ScenarioError> {
    checked_dims(spec)?;
    let quant = scenario
        .lora
        .as_ref()
        .map_or(BaseQuant::None, |l| l.base_quant);
    if spec.kind == ModelKind::StateSpace {
        ssm::check(spec, quant)?;
    }
    if t5::is_t5(spec) {
        t5::check(spec, quant)?;
    }
    if spec.text_model_type == "recurrent_gemma" {
        griffin::check(spec, quant)?;
    }
    let mt = spec.text_model_type.as_str();
    let layout = match mt {
        "gemma2" | "gemma3_text" | "gemma3" => Layout::PrePostNorm,
        "olmo2" => Layout::PostBranchNorm,
        "bert" => Layout::PostLn,
        "cohere" => Layout::Parallel,
        _ => Layout::PreNorm,
    };
    let rope = spec.derived().has_attention && !matches!(mt, "gpt2" | "opt" | "bloom" | "bert");
    let b = scenario.batch;
    let s = scenario.seq_len;
    let mut w = Walk {
        spec,
        b,
        s,
        t: b.saturating_mul(s),
        c: precision.compute_bytes,
        p: precision.param_bytes,
        autocast: precision.autocast,
        full: lora.is_none(),
        quant: scenario
            .lora
            .as_ref()
            .map_or(BaseQuant::None, |l| l.base_quant),
        lora,
        attention: scenario.attention,
        layout,
        rope,
        gemma_norm: mt.starts_with("gemma") || mt == "recurrent_gemma",
        griffin: mt == "recurrent_gemma",
        griffin_first_level_bytes: 0,
        derived: spec.derived(),
        cache: Vec::with_capacity(64),
        layer: 0,
        cache_free_bytes: 0,
        replay,
        autocast_copy_bytes: 0,
        autocast_saved_bytes: 0,
        cpu: counting == super::Counting::CpuExact,
        dtype: scenario.dtype,
    };
    let lora_kind = lora_layer_kinds(&w);
    let mut prof = run(&mut w, false, &lora_kind);
    if scenario.grad_checkpointing {
        let gc = run(&mut w, true, &lora_kind);
        prof.forward_peak_bytes = gc.forward_peak_bytes;
        prof.autocast_copies_at_forward_peak_bytes = gc.autocast_copies_at_forward_peak_bytes;
        prof.forward_end_bytes = gc.forward_end_bytes;
        prof.layers_kept_bytes = gc.layers_kept_bytes;
        prof.autocast_copy_bytes = gc.autocast_copy_bytes;
        prof.autocast_saved_end_bytes = gc.autocast_saved_end_bytes;
        prof.checkpointing = true;
        // what the recomputations leave alive after backward stays through the optimizer step,
        // and into the next forward until each layer resets it
        let retained = prof
            .layers
            .runs()
            .iter()
            .map(|(l, n)| l.retained_bytes.saturating_mul(*n))
            .fold(0, u64::saturating_add);
        prof.module_state_bytes = prof.module_state_bytes.saturating_add(retained);
        if retained > 0 {
            prof.next_forward_peak_bytes = gc
                .forward_peak_bytes
                .max(w.griffin_first_level_bytes.saturating_add(retained));
        }
    }
    Ok(prof)
}

/// One forward walk; `lora_kind` is [`lora_layer_kinds`] of the walk (computed once for both walks
/// of a checkpointed step).
fn run(w: &mut Walk<'_>, checkpointing: bool, lora_kind: &[usize]) -> ActivationProfile {
    if t5::is_t5(w.spec) {
        return t5::run(w, checkpointing);
    }
    let mut sim = Sim::with_capacity(256);
    w.cache.clear();
    w.cache_free_bytes = 0;
    w.autocast_copy_bytes = 0;
    w.autocast_saved_bytes = 0;
    w.griffin_first_level_bytes = 0;
    let t = w.t;
    let h = w.spec.hidden_size;
    let vocab = w.spec.vocab_size;
    // input_ids (int64) on the device; `labels=input_ids` is the same tensor.
    let _ids = sim.alloc(t, 8, false);
    let emb_elem = w.p;
    let mut x = sim.alloc(t * h, emb_elem, w.full);
    let has_pos = w.derived.has_position_embedding;
    if has_pos {
        let pe = sim.alloc(t * h, emb_elem, w.full);
        let s = w.add(&mut sim, x, pe);
        sim.drop(x);
        sim.drop(pe);
        x = s;
    }
    if w.gemma_norm {
        let s = sim.alloc(t * h, emb_elem, x.rg);
        sim.drop(x);
        x = s;
    }
    if w.layout == Layout::PostLn {
        let n = w.norm(&mut sim, x, t * h, t);
        sim.drop(x);
        x = n;
    }
    x = w.dropout(&mut sim, x, w.spec.hidden_dropout);
    // Rotary `position_embeddings = self.rotary_emb(x, position_ids)`: cos and sin, s·head_dim
    // each (position_ids is (1, s), broadcast over the batch) in the hidden states' dtype
    // (computed in fp32, `.to(x.dtype)`), made once per forward and saved by every layer's
    // `q * cos` / `rotate_half(q) * sin` (measured: 2 × 2048 × 64 × 4 B live through forward for
    // SmolLM2 fp32 at s = 2048).
    if w.rope && !w.griffin {
        let head_dim = w
            .spec
            .layers
            .iter()
            .find_map(|l| l.attention.map(|a| a.head_dim))
            .unwrap_or(0);
        for _ in 0..2 {
            let c = sim.alloc(w.s.saturating_mul(head_dim), emb_elem, false);
            sim.save(c);
            sim.drop(c);
        }
    }
    let pre_saved = sim.saved_bytes();
    let mask = if w.attention == AttentionImpl::Eager && w.derived.has_attention {
        Some(sim.alloc(w.b * w.s * w.s, sim.elem(x), false))
    } else {
        None
    };
    let mut layers = LayerRuns::default();
    let mut kept = 0u64;
    // Each distinct layer is walked once per input state: a layer of the same kind (same layer
    // spec, tensors and LoRA adapters) entered with an input in the same state does exactly the
    // same, so its recorded effect is replayed (see `LayerDelta`).
    let mut seen: Vec<(usize, LayerDelta)> = Vec::new();
    let n_layers = w.spec.layers.len();
    let mut i = 0;
    while i < n_layers {
        if checkpointing {
            sim.save(x);
            kept += sim.elems(x) * sim.elem(x);
            sim.discard_saves = true;
        }
        let input = sim.state(x);
        let kind = w.derived.walk_kind.get(i).copied().unwrap_or(i);
        let replay = seen.iter().filter(|_| w.replay).position(|(k, d)| {
            *k == kind && d.input == input && lora_kind.get(d.layer) == lora_kind.get(i)
        });
        let before = sim.saved_bytes();
        // the entry of `seen` whose effect this layer had
        let applied;
        let (y, act) = match replay.map(|at| (at, &seen[at])) {
            Some((at, (_, d))) => {
                applied = at;
                let y = sim.replay(x, &d.effect);
                w.autocast_copy_bytes = w.autocast_copy_bytes.saturating_add(d.autocast_copy_bytes);
                w.cache_free_bytes = w.cache_free_bytes.saturating_add(d.cache_free_bytes);
                (y, d.act.clone())
            }
            None => {
                let mark = sim.mark();
                let copies_before = w.autocast_copy_bytes;
                let cache_before = w.cache.len();
                let (y, act) = w.layer(&mut sim, x, i);
                let cache_free_bytes = w.cache[cache_before..]
                    .iter()
                    .map(|&c| sim.freeable_bytes(c))
                    .fold(0u64, u64::saturating_add);
                seen.push((
                    kind,
                    LayerDelta {
                        layer: i,
                        input,
                        effect: sim.effect_since(&mark, y),
                        autocast_copy_bytes: w.autocast_copy_bytes - copies_before,
                        cache_free_bytes,
                        act: act.clone(),
                    },
                ));
                applied = seen.len() - 1;
                (y, act)
            }
        };
        if checkpointing {
            sim.discard_saves = false;
        } else {
            kept += sim.saved_bytes() - before;
        }
        layers.push(&act);
        x = y;
        // A layer whose output leaves the simulation as its input found it: the following layers
        // of its kind replay it identically, taken together in constant time.
        let stable = seen
            .get(applied)
            .filter(|(_, d)| w.replay && !checkpointing && d.effect.output() == d.input);
        if let Some((_, d)) = stable {
            let lora = lora_kind.get(d.layer);
            let same = (i + 1..n_layers)
                .take_while(|&j| {
                    w.derived.walk_kind.get(j) == Some(&kind) && lora_kind.get(j) == lora
                })
                .count();
            if same > 0 {
                let times = same as u64;
                let saved_before = sim.saved_bytes();
                x = sim.replay_times(x, &d.effect, times);
                kept += sim.saved_bytes() - saved_before;
                w.autocast_copy_bytes = w
                    .autocast_copy_bytes
                    .saturating_add(d.autocast_copy_bytes.saturating_mul(times));
                w.cache_free_bytes = w
                    .cache_free_bytes
                    .saturating_add(d.cache_free_bytes.saturating_mul(times));
                layers.push_n(&d.act, times);
                i += same;
            }
        }
        i += 1;
    }
    if let Some(m) = mask {
        sim.drop(m);
    }
    let grad_stream_bytes = t * h * sim.elem(x);
    let before_head = sim.saved_bytes();
    let head_copies_before = w.autocast_saved_bytes;
    let head_saved;
    let logits_handle;
    let mut final_norm_saved = 0u64;
    let mut head_copies = 0u64;
    let (logits_bytes, logits_fp32_bytes, log_softmax_bytes);
    if matches!(w.spec.kind, ModelKind::DecoderOnly | ModelKind::StateSpace) {
        let has_final = w.derived.has_final_norm;
        let n = if has_final {
            let n = w.norm(&mut sim, x, t * h, t);
            sim.drop(x);
            n
        } else {
            x
        };
        final_norm_saved = sim.saved_bytes() - before_head;
        let head = Lin {
            in_f: h,
            out_f: super::hf_tp::local_vocab(w.spec),
            trainable: w.full,
            lora_r: None,
            quantized: false,
        };
        let mut logits = w.linear(&mut sim, n, head, t);
        if w.spec.tensor_parallel > 1 {
            // transformers' `colwise_gather_output` lm_head: this rank's vocabulary columns of the
            // logits, then `redistribute(Replicate())`, an all-gather along the last dimension
            // (`funcol.all_gather_tensor`: gathered along dim 0 into a flat t·V buffer, then
            // `torch.cat` of its chunks along the last dimension, a second t·V tensor); the local
            // part and the flat buffer are freed once the whole logits exist.
            let flat = sim.alloc(t * vocab, w.c, false);
            let whole = sim.alloc(t * vocab, w.c, true);
            sim.drop(flat);
            sim.drop(logits);
            logits = whole;
        }
        if w.spec.final_logit_softcapping {
            // Gemma-2: `logits / cap`, `tanh` (saves its output), `* cap`, each a new tensor
            let divided = sim.alloc(t * vocab, w.c, true);
            sim.drop(logits);
            let tanh = sim.alloc(t * vocab, w.c, true);
            sim.save(tanh);
            sim.drop(divided);
            logits = sim.alloc(t * vocab, w.c, true);
            sim.drop(tanh);
        }
        head_saved = sim.saved_bytes() - before_head;
        head_copies = w.autocast_saved_bytes - head_copies_before;
        let l32 = sim.cast(logits, 4);
        // Mamba's heads upcast inside the model (`self.lm_head(...).float()`,
        // modeling_mamba.py / modeling_falcon_mamba.py): the output holds the fp32 logits and the
        // compute-dtype ones are freed at once.
        let state_space = w.spec.kind == ModelKind::StateSpace;
        if state_space {
            sim.drop(logits);
            logits = sim.share(l32);
        }
        let ls = sim.alloc(t * vocab, 4, true);
        sim.save(ls);
        let shift = sim.alloc(t, 8, false);
        sim.save(shift);
        sim.drop(shift);
        let loss = sim.alloc(1, 4, true);
        sim.drop(l32);
        sim.drop(ls);
        let _ = loss;
        // the final hidden state stays referenced by the base model's output
        // (`outputs.last_hidden_state` in `LlamaForCausalLM.forward`) until the loss is computed
        // and forward returns; it is freed then unless the head saved it (measured: t·H·4 B more
        // at the loss for a frozen fp32 head under LoRA, and the fp32 stream next to its bf16
        // cast under autocast).
        sim.drop(n);
        logits_handle = Some(logits);
        logits_bytes = t * vocab * w.c;
        logits_fp32_bytes = if w.c == 4 { 0 } else { t * vocab * 4 };
        log_softmax_bytes = t * vocab * 4;
    } else {
        // Encoder-only (bert), fine-tuned for sequence classification
        // (`BertForSequenceClassification`): the pooler's dense layer on the first token, tanh,
        // dropout, a [`super::persistent::ENCODER_NUM_LABELS`]-label classifier and cross-entropy;
        // no vocab logits.
        let b = w.b;
        let labels = super::persistent::ENCODER_NUM_LABELS;
        // `hidden_states[:, 0]` is a view: the pooler's `linear` saving it keeps the whole last
        // hidden state alive (its b·H slice is counted once more, a few KiB).
        let first = sim.alloc(b * h, sim.elem(x), x.rg);
        if w.full {
            sim.save(x);
        }
        sim.drop(x);
        let dense = Lin {
            in_f: h,
            out_f: h,
            trainable: w.full,
            lora_r: None,
            quantized: false,
        };
        let pooled = w.linear(&mut sim, first, dense, b);
        sim.drop(first);
        let tanh = sim.alloc(b * h, sim.elem(pooled), pooled.rg);
        if tanh.rg {
            sim.save(tanh);
        }
        sim.drop(pooled);
        let dropped = w.dropout(&mut sim, tanh, w.spec.hidden_dropout);
        // under LoRA peft's SEQ_CLS trains a copy of the classifier (`modules_to_save`)
        let classifier = Lin {
            in_f: h,
            out_f: labels,
            trainable: true,
            lora_r: None,
            quantized: false,
        };
        let logits = w.linear(&mut sim, dropped, classifier, b);
        sim.drop(dropped);
        head_saved = sim.saved_bytes() - before_head;
        let l32 = sim.cast(logits, 4);
        let ls = sim.alloc(b * labels, 4, true);
        sim.save(ls);
        let loss = sim.alloc(1, 4, true);
        let _ = loss;
        sim.drop(l32);
        sim.drop(ls);
        logits_handle = Some(logits);
        logits_bytes = b * labels * w.c;
        logits_fp32_bytes = if w.c == 4 { 0 } else { b * labels * 4 };
        log_softmax_bytes = b * labels * 4;
    }
    let forward_peak = sim.peak_bytes();
    let forward_peak_copies = sim.peak_copy_bytes();
    let (forward_end, autocast_saved_end_bytes) = end_forward(
        w,
        &mut sim,
        logits_handle,
        &layers,
        head_copies,
        checkpointing,
    );
    ActivationProfile {
        tokens: t,
        layers,
        pre_saved_bytes: pre_saved,
        head_saved_bytes: head_saved,
        logits_bytes,
        logits_fp32_bytes,
        log_softmax_bytes,
        autocast_copy_bytes: w.autocast_copy_bytes,
        autocast_saved_end_bytes,
        head_autocast_saved_bytes: head_copies,
        forward_peak_bytes: forward_peak,
        autocast_copies_at_forward_peak_bytes: forward_peak_copies,
        forward_end_bytes: forward_end,
        grad_stream_bytes,
        ce_backward_bytes: t * vocab * 4 * 2,
        checkpointing,
        layers_kept_bytes: kept,
        inputs_bytes: t * 8,
        labels_saved_bytes: if logits_bytes > 0 { t * 8 } else { 0 },
        encoder_layers: 0,
        between_stacks_saved_bytes: 0,
        between_stacks_held_bytes: 0,
        next_forward_peak_bytes: 0,
        head_norm_backward_bytes: if w.derived.has_final_norm
            && w.spec.norm == NormKind::RmsNorm
            && matches!(w.spec.kind, ModelKind::DecoderOnly | ModelKind::StateSpace)
        {
            t.saturating_mul(h)
                .saturating_mul(4)
                .saturating_mul(4)
                .saturating_add(final_norm_saved)
        } else {
            0
        },
        module_state_bytes: if w.griffin {
            w.spec
                .layers
                .iter()
                .filter_map(|l| l.ssm)
                .map(|m| w.b.saturating_mul(m.d_inner).saturating_mul(4))
                .fold(0, u64::saturating_add)
        } else {
            0
        },
    }
}

/// Forward ends: autocast exits and releases its weight cache (copies saved for backward
/// survive), and `del out` (as HF Trainer's compute_loss) drops the logits with the model output;
/// only the loss and what autograd saved live on. Returns (bytes live, of which autocast weight
/// copies that autograd saved: the layers' — none inside checkpointed layers, whose copies were
/// cached, then released — and the head's).
fn end_forward(
    w: &mut Walk<'_>,
    sim: &mut Sim,
    logits: Option<V>,
    layers: &LayerRuns,
    head_copies: u64,
    checkpointing: bool,
) -> (u64, u64) {
    for c in std::mem::take(&mut w.cache) {
        sim.drop(c);
    }
    sim.release_copies(std::mem::take(&mut w.cache_free_bytes));
    if let Some(l) = logits {
        sim.drop(l);
    }
    let saved_copies = if checkpointing {
        head_copies
    } else {
        layers
            .runs()
            .iter()
            .map(|(l, n)| l.autocast_saved_bytes.saturating_mul(*n))
            .fold(head_copies, u64::saturating_add)
    };
    (sim.live_bytes(), saved_copies)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{Dtype, Lora, LoraTargets, MixedPrecision};

    /// Replaying a layer kind's recorded effect gives exactly the profile of walking every layer,
    /// for every bundled model and the precision, attention, checkpointing and LoRA variants.
    #[test]
    fn replayed_layers_give_the_same_profile_as_walking_every_layer() {
        let variants = [
            Scenario::default(),
            Scenario {
                attention: AttentionImpl::Eager,
                grad_checkpointing: true,
                batch: 2,
                seq_len: 64,
                ..Scenario::default()
            },
            Scenario {
                dtype: Dtype::Bf16,
                mixed_precision: MixedPrecision::None,
                lora: Some(Lora {
                    r: 8,
                    alpha: 16,
                    targets: LoraTargets::AllLinear,
                    base_quant: BaseQuant::Nf4,
                }),
                ..Scenario::default()
            },
            Scenario {
                lora: Some(Lora {
                    r: 4,
                    alpha: 8,
                    targets: LoraTargets::Modules(vec!["layers.1.self_attn.q_proj".into()]),
                    base_quant: BaseQuant::None,
                }),
                ..Scenario::default()
            },
            Scenario {
                dtype: Dtype::Bf16,
                mixed_precision: MixedPrecision::None,
                attention: AttentionImpl::Eager,
                lora: Some(Lora {
                    r: 4,
                    alpha: 8,
                    targets: LoraTargets::Modules(vec!["layers.0.mlp.down_proj".into()]),
                    base_quant: BaseQuant::None,
                }),
                batch: 2,
                seq_len: 32,
                ..Scenario::default()
            },
            Scenario {
                attention: AttentionImpl::Eager,
                seq_len: 128,
                ..Scenario::default()
            },
        ];
        let mut compared = 0;
        for preset in crate::presets::PRESETS {
            let spec = crate::parse_config(preset.json, None).unwrap();
            for s in &variants {
                let precision = Precision::of(s);
                let plan = match &s.lora {
                    Some(l) => match super::super::lora::plan(&spec, l) {
                        Ok(p) => Some(p),
                        Err(_) => continue,
                    },
                    None => None,
                };
                for counting in [
                    super::super::Counting::Cuda,
                    super::super::Counting::CpuExact,
                ] {
                    let fast = profile_with(&spec, s, precision, plan.as_ref(), counting, true);
                    let full = profile_with(&spec, s, precision, plan.as_ref(), counting, false);
                    assert_eq!(fast, full, "{} {s:?}", preset.id);
                    compared += usize::from(fast.is_ok());
                }
            }
        }
        assert!(compared > 100, "{compared}");
    }
}
