//! Per-phase memory of a training step as `vram measure` records it: `load`, `forward`, `backward`,
//! `optimizer` for the first step, and `forward_2`, `backward_2`, `optimizer_2` for the steady state
//! (optimizer states already allocated).
//!
//! - forward: persistent bytes + the simulated forward (activations saved layer by layer, the
//!   loss's fp32 logits and log-softmax);
//! - backward: walks the layers in reverse, the saved tensors of layers not yet processed stay,
//!   the processed layer's gradient temporaries appear, parameter gradients accumulate; the peak is
//!   the largest of the cross-entropy backward (nll grad + log_softmax grad, b·s·V fp32 each), each
//!   layer's MLP / attention backward, and the end (all gradients, plus the dense embedding gradient
//!   added into a tied `lm_head` gradient);
//! - optimizer: weights + gradients + states + the optimizer's step temporaries; then
//!   `zero_grad(set_to_none=True)` (the PyTorch ≥ 2.0 default) frees the gradients, except between
//!   the micro-batches of gradient accumulation.

use super::activations::ActivationProfile;
use crate::report::Phase;

/// Inputs of the phase computation (per GPU).
#[derive(Clone, Debug, Default)]
pub struct PhaseInputs {
    /// Weights on the device.
    pub weights_bytes: u64,
    /// Gradients on the device after backward.
    pub gradients_bytes: u64,
    /// Optimizer states on the device.
    pub optimizer_bytes: u64,
    /// Optimizer step temporaries (0 when offloaded).
    pub optimizer_temp_bytes: u64,
    /// Buffers: communication (DDP / ZeRO buckets, stage 3's small parameters kept gathered) and
    /// the model's own.
    pub buffers_bytes: u64,
    /// The model class's non-persistent buffers (part of `buffers_bytes`).
    pub model_buffers_bytes: u64,
    /// Of `optimizer_bytes`, what exists from initialisation (DeepSpeed's fp32 master partition);
    /// the rest is created by the first step.
    pub optimizer_at_init_bytes: u64,
    /// The gradients live in every phase (ZeRO 3's flat partition buffer, made at
    /// initialisation): backward reduces into them, `zero_grad` does not free them.
    pub gradients_persist: bool,
    /// Micro-batches per optimizer step.
    pub grad_accumulation: u64,
    /// Extra bytes beyond all gradients at the embedding's backward (the last node): its incoming
    /// gradient, and for a tied embedding the second V·H gradient (and the out-of-place sum when
    /// not under autocast).
    pub tied_embedding_grad_bytes: u64,
    /// Transient at load beyond the weights: the untied `lm_head` weight that `from_config` builds
    /// before tying it to the embedding.
    pub load_transient_bytes: u64,
    /// DeepSpeed ZeRO 1/2's initialisation beyond the weights and the master: it flattens the
    /// 16-bit parameters into one buffer while they still exist, then clones the fp32 master and
    /// gives it a zero gradient partition for a moment (`initialize_optimizer_states`); a moment of
    /// its own, after `from_config`'s.
    pub init_transient_bytes: u64,
    /// The lm_head weight gradient (or the tied embedding's), produced first in backward.
    pub head_grad_bytes: u64,
    /// Encoder–decoder: bytes beyond the gradients done while the decoder's embedding runs
    /// backward (its dense V·H gradient, and the out-of-place sum with a tied lm_head's gradient
    /// that is a view).
    pub decoder_embedding_grad_bytes: u64,
    /// Encoder–decoder: the gradient the decoder's embedding leaves behind for the shared
    /// embedding (untied head: the first gradient of that weight; tied: 0, the lm_head's is it).
    pub decoder_embedding_new_grad_bytes: u64,
    /// Scale of per-layer gradients reaching this GPU (partitioned gradients at ZeRO ≥ 2).
    pub grad_scale_num: u64,
    /// Denominator of the scale.
    pub grad_scale_den: u64,
    /// ZeRO ≥ 2: the largest gradient whole while it is reduced into the partition buffer (the
    /// head's at the start of backward, beyond its share; the embedding's at the end, beside the
    /// whole buffer).
    pub unreduced_grad_bytes: u64,
    /// ZeRO 1: the partition buffer the whole gradients are reduced into at the end of backward.
    pub end_partition_bytes: u64,
    /// ZeRO 1: every gradient whole at the end of backward (`gradients_bytes` is the partition
    /// that stays after it).
    pub end_whole_gradients_bytes: u64,
    /// ZeRO 3: the parameters gathered whole over the step (`zero::zero3_gathered`).
    pub gathered: Option<GatheredParams>,
    /// A tied embedding's whole gradient at the end is the lm_head's gradient with the dense one
    /// summed into it (in `tied_embedding_grad_bytes`): ZeRO 3 reduces that sum, no further
    /// whole gradient (measured: ZeRO 3, SmolLM2 4 layers, the end of backward holds the head's
    /// gradient, the dense gradient and the gathered weight, 3 × V·H).
    pub tied_sum_is_unreduced: bool,
}

/// ZeRO 3's parameters gathered whole at the moments of a step, beyond the persistent small ones.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GatheredParams {
    /// First step: the largest module of a layer, gathered for its forward or backward alone.
    pub module_bytes: u64,
    /// The head's weight (the `lm_head`, or the tied embedding), gathered for the head's forward
    /// and backward.
    pub head_bytes: u64,
    /// The embeddings, gathered for their forward and, last, their backward.
    pub embedding_bytes: u64,
    /// Gathered at the end of backward: the embeddings when they run backward (0 when frozen).
    pub end_bytes: u64,
    /// From the second step on: what the prefetcher holds at the end of forward and the start of
    /// backward (the whole model or the live limit).
    pub steady_bytes: u64,
    /// From the second step on, per layer: what is still gathered while that layer runs
    /// backward (the embeddings and the layers up to it, at most the live limit).
    pub below_bytes: Vec<u64>,
    /// A transient copy the collective makes of the largest parameter it gathers (gloo on CPU;
    /// 0 on CUDA, where NCCL gathers in place), at the head's gathering in forward.
    pub collective_copy_bytes: u64,
}

/// A moment of the step, for [`GatheredParams::at`].
#[derive(Clone, Copy, Debug)]
enum Moment {
    /// The loss and its backward, before the head's.
    Loss,
    /// The head's backward.
    Head,
    /// Layer `i`'s backward.
    Layer(u64),
    /// The embedding's backward, last.
    End,
}

impl GatheredParams {
    /// Bytes gathered at `moment` of the first step (`steady` false) or a later one.
    fn at(&self, moment: Moment, steady: bool) -> u64 {
        match (moment, steady) {
            (Moment::Loss, false) => 0,
            (Moment::Head, false) => self.head_bytes,
            (Moment::Layer(_), false) => self.module_bytes,
            (Moment::Loss | Moment::Head, true) => self.steady_bytes,
            (Moment::Layer(i), true) => usize::try_from(i)
                .ok()
                .and_then(|i| self.below_bytes.get(i))
                .copied()
                .unwrap_or(self.steady_bytes),
            (Moment::End, _) => self.end_bytes,
        }
    }
}

/// Backward peak above `base` (weights, buffers, states present), from the activation profile,
/// in the steady state.
pub fn backward_peak(prof: &ActivationProfile, inp: &PhaseInputs, grads_at_start: u64) -> u64 {
    backward_peak_parts(prof, inp, grads_at_start, true).bytes
}

/// The backward peak and what it is made of.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BackwardPeak {
    /// Peak above the weights, buffers and states.
    pub bytes: u64,
    /// Of it, the parameter gradients that exist at that moment.
    pub gradients_bytes: u64,
    /// Of it, the autocast weight copies still saved (by the layers not yet processed, by the
    /// head before its backward) or re-made (by the recomputed layer).
    pub autocast_copy_bytes: u64,
    /// The last moment, the embedding's backward, above the same base (every gradient, a tied
    /// embedding's second gradient): what sharded layouts rebuild with their own buffers.
    pub end_bytes: u64,
    /// Of it, ZeRO 3's parameters gathered at that moment.
    pub gathered_params_bytes: u64,
}

/// [`backward_peak`] with its parts, in the first step (`steady` false: ZeRO 3 gathers one module
/// at a time) or a later one.
pub fn backward_peak_parts(
    prof: &ActivationProfile,
    inp: &PhaseInputs,
    grads_at_start: u64,
    steady: bool,
) -> BackwardPeak {
    let scale = |g: u64| g.saturating_mul(inp.grad_scale_num) / inp.grad_scale_den.max(1);
    let gathered = |m: Moment| inp.gathered.as_ref().map_or(0, |g| g.at(m, steady));
    let layers_total = prof.layers.len();
    let acts_total = prof.forward_end_bytes;
    // cross-entropy backward: nll_loss grad + log_softmax grad on top of everything saved.
    let mut peak = acts_total
        .saturating_add(prof.ce_backward_bytes)
        .saturating_add(grads_at_start)
        .saturating_add(gathered(Moment::Loss));
    let mut at_peak = (
        grads_at_start,
        prof.autocast_saved_end_bytes,
        gathered(Moment::Loss),
    );
    // a moment: the bytes beyond ZeRO 3's gathered parameters, and those (`params`)
    let mut consider = |bytes: u64, grads: u64, copies: u64, params: u64| {
        let bytes = bytes.saturating_add(params);
        if bytes > peak {
            peak = bytes;
            at_peak = (grads, copies, params);
        }
    };
    // after the head: its saved tensors and the log-softmax are released, the head grad exists.
    let after_head = acts_total
        .saturating_sub(prof.log_softmax_bytes)
        .saturating_sub(prof.labels_saved_bytes)
        .saturating_sub(prof.head_saved_bytes);
    let mut copies_below = prof
        .autocast_saved_end_bytes
        .saturating_sub(prof.head_autocast_saved_bytes);
    let head_grad = if grads_at_start > 0 {
        0
    } else {
        scale(inp.head_grad_bytes)
    };
    let mut grads_done = grads_at_start.saturating_add(head_grad);
    let last_layer = Moment::Layer(layers_total.saturating_sub(1));
    // the final norm's backward, right after the head's
    consider(
        after_head
            .saturating_add(prof.head_norm_backward_bytes)
            .saturating_add(grads_done),
        grads_done,
        copies_below,
        gathered(last_layer),
    );
    // ZeRO ≥ 2: the head's gradient whole until it is reduced (its share is in `grads_done`),
    // beside the head's weight gathered at stage 3
    if head_grad > 0 || inp.unreduced_grad_bytes > 0 {
        consider(
            after_head
                .saturating_add(grads_done)
                .saturating_add(inp.unreduced_grad_bytes.saturating_sub(head_grad)),
            grads_done,
            copies_below,
            gathered(Moment::Head),
        );
    }
    let mut kept_below: u64 = after_head;
    let mut retained = 0u64;
    // Identical consecutive layers, taken together: across such a run the saved bytes still held
    // fall and the gradients done grow by the same amounts per layer, so the peak of the run is at
    // its first or its last layer (both computed with the per-layer saturating arithmetic).
    // An encoder–decoder's decoder blocks run first; between them and the encoder's, the
    // decoder's embedding runs backward (`switch`).
    let encoder_layers = prof.encoder_layers;
    let mut left = prof.layers.len();
    let mut switched = encoder_layers == 0;
    for (l, run) in prof.layers.runs().iter().rev() {
        let start = left.saturating_sub(*run);
        let in_decoder = if switched {
            0
        } else {
            left.saturating_sub(start.max(encoder_layers))
        };
        for part in [in_decoder, run.saturating_sub(in_decoder)] {
            if part == 0 {
                continue;
            }
            if !switched && left == encoder_layers {
                switched = true;
                // the decoder embedding's dense gradient (+ the sum) next to the incoming
                // gradient; under gradient accumulation the buffered lm_head gradient is not in
                // `.grad` yet
                let buffered = if grads_at_start > 0 {
                    scale(inp.head_grad_bytes)
                } else {
                    0
                };
                let bytes = kept_below
                    .saturating_sub(
                        prof.between_stacks_saved_bytes
                            .saturating_sub(prof.between_stacks_held_bytes),
                    )
                    .saturating_add(grads_done)
                    .saturating_add(scale(inp.decoder_embedding_grad_bytes))
                    .saturating_add(buffered)
                    .saturating_add(prof.grad_stream_bytes);
                consider(
                    bytes,
                    grads_done,
                    copies_below,
                    gathered(Moment::Layer(left.saturating_sub(1))),
                );
                kept_below = kept_below.saturating_sub(prof.between_stacks_saved_bytes);
                if grads_at_start == 0 {
                    grads_done =
                        grads_done.saturating_add(scale(inp.decoder_embedding_new_grad_bytes));
                }
            }
            let run = part;
            let (kept, kept_copies) = if prof.checkpointing {
                (l.input_bytes, 0)
            } else {
                (l.saved_bytes, l.autocast_saved_bytes)
            };
            // gradients this backward makes (none when they exist already: accumulation)
            let made = |bytes: u64| if grads_at_start == 0 { scale(bytes) } else { 0 };
            let grad = made(l.grad_bytes);
            let own = if prof.checkpointing {
                l.saved_bytes.saturating_add(l.input_bytes)
            } else {
                l.saved_bytes
            };
            let attn_own = if prof.checkpointing {
                l.attn_saved_bytes.saturating_add(l.input_bytes)
            } else {
                l.attn_saved_bytes
            };
            // the MLP half runs backward first, with only its share of the layer's gradients
            let mlp_grad = made(l.mlp_peak_grad_bytes.min(l.grad_bytes));
            let mlp_peak = own
                .saturating_add(l.mlp_backward_transient_bytes)
                .saturating_sub(grad.saturating_sub(mlp_grad));
            let attn_grad = made(l.attn_peak_grad_bytes.min(l.grad_bytes));
            let attn_peak = attn_own
                .saturating_add(l.attn_backward_transient_bytes)
                .saturating_sub(grad.saturating_sub(attn_grad));
            let (layer_peak, layer_copies) = if mlp_peak >= attn_peak {
                (mlp_peak, l.autocast_saved_bytes)
            } else {
                (attn_peak, l.attn_autocast_saved_bytes)
            };
            // under checkpointing, what the recomputed layers processed so far left alive
            let retain = if prof.checkpointing {
                l.retained_bytes
            } else {
                0
            };
            // layer `left - j` of the model (the run's `j`-th, from its top)
            let layer_at = |j: u64| Moment::Layer(left.saturating_sub(j));
            let point = |j: u64| {
                let bytes = kept_below
                    .saturating_sub(kept.saturating_mul(j))
                    .saturating_add(layer_peak)
                    .saturating_add(grads_done.saturating_add(grad.saturating_mul(j)))
                    .saturating_add(retained.saturating_add(retain.saturating_mul(j - 1)))
                    .saturating_add(prof.grad_stream_bytes);
                let copies = copies_below
                    .saturating_sub(kept_copies.saturating_mul(j))
                    .saturating_add(layer_copies);
                (
                    bytes,
                    grads_done.saturating_add(grad.saturating_mul(j)),
                    copies,
                    gathered(layer_at(j)),
                )
            };
            let (first, first_grads, first_copies, first_params) = point(1);
            consider(first, first_grads, first_copies, first_params);
            let (last, last_grads, last_copies, last_params) = point(run);
            consider(last, last_grads, last_copies, last_params);
            // ZeRO 3 from the second step: the gathered bytes fall layer by layer once under the
            // live limit, flat above it; the run's peak may sit where they start to fall
            if steady && inp.gathered.is_some() {
                let top = gathered(layer_at(1));
                if let Some(j) = (2..run).find(|&j| gathered(layer_at(j)) < top) {
                    for at in [j - 1, j] {
                        let (bytes, grads, copies, params) = point(at);
                        consider(bytes, grads, copies, params);
                    }
                }
            }
            kept_below = kept_below.saturating_sub(kept.saturating_mul(run));
            copies_below = copies_below.saturating_sub(kept_copies.saturating_mul(run));
            grads_done = grads_done.saturating_add(grad.saturating_mul(run));
            retained = retained.saturating_add(retain.saturating_mul(run));
            left = left.saturating_sub(part);
        }
    }
    // the embedding's backward comes last: what was saved before the first layer (embedding
    // dropout masks, rotary cos/sin) has been released by then.
    let grads_end = inp
        .gradients_bytes
        .max(grads_done)
        .max(inp.end_whole_gradients_bytes)
        .saturating_add(inp.tied_embedding_grad_bytes);
    let end = kept_below
        .saturating_sub(prof.pre_saved_bytes)
        .saturating_add(grads_end)
        .saturating_add(retained);
    let end_params = gathered(Moment::End);
    consider(end, grads_end, copies_below, end_params);
    // ZeRO ≥ 2: the embedding's dense gradient whole until it is reduced; ZeRO 1: every
    // gradient whole and the partition buffer they are reduced into
    consider(
        end.saturating_add(if inp.tied_sum_is_unreduced {
            0
        } else {
            inp.unreduced_grad_bytes
        })
        .saturating_add(inp.end_partition_bytes),
        grads_end,
        copies_below,
        end_params,
    );
    let gradients = at_peak.0.min(peak);
    let copies = at_peak.1.min(peak.saturating_sub(gradients));
    BackwardPeak {
        end_bytes: end.saturating_add(end_params),
        bytes: peak,
        gradients_bytes: gradients,
        autocast_copy_bytes: copies,
        gathered_params_bytes: at_peak
            .2
            .min(peak.saturating_sub(gradients).saturating_sub(copies)),
    }
}

/// Bytes left after backward beyond the persistent ones: the input ids the caller still holds and
/// what forward left on the modules.
pub fn backward_end_extra(prof: &ActivationProfile) -> u64 {
    prof.inputs_bytes.saturating_add(prof.module_state_bytes)
}

/// One phase's figures, without heap data: what solvers and sweeps read. [`phases`] turns them
/// into the named [`Phase`]s of the JSON document.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PhaseFigure {
    /// `load`, `forward`, `backward`, `optimizer`, `forward_2`, `backward_2`, `optimizer_2`.
    pub name: &'static str,
    /// Tensor bytes live when the phase ends.
    pub allocated_bytes: u64,
    /// Highest tensor bytes during the phase.
    pub peak_allocated_bytes: u64,
    /// What is live at the peak, by component key (`""` marks an unused slot).
    pub components: [(&'static str, u64); 6],
}

/// The autocast weight copies as a component of their own (unnamed, so left out, when there are
/// none: without `torch.autocast` over fp32 weights).
fn copies_component(bytes: u64) -> (&'static str, u64) {
    if bytes > 0 {
        ("autocast_weight_copies", bytes)
    } else {
        ("", 0)
    }
}

/// ZeRO 3's gathered parameters as a component of their own (left out when none).
fn gathered_component(bytes: u64) -> (&'static str, u64) {
    if bytes > 0 {
        ("zero3_gathered_params", bytes)
    } else {
        ("", 0)
    }
}

/// The seven phases' figures.
pub fn phase_figures(prof: &ActivationProfile, inp: &PhaseInputs) -> [PhaseFigure; 7] {
    let w = inp.weights_bytes.saturating_add(inp.buffers_bytes);
    let g = inp.gradients_bytes;
    let s = inp.optimizer_bytes;
    let load_states = inp.optimizer_at_init_bytes.min(s);
    let persist_grads = if inp.gradients_persist { g } else { 0 };
    let mut out = [PhaseFigure::default(); 7];
    out[0] = PhaseFigure {
        name: "load",
        allocated_bytes: w + load_states + persist_grads,
        peak_allocated_bytes: w
            + load_states
            + persist_grads
            + inp.load_transient_bytes.max(inp.init_transient_bytes),
        components: [
            ("weights", inp.weights_bytes),
            (
                "buffers",
                inp.buffers_bytes.saturating_sub(inp.model_buffers_bytes),
            ),
            // written only for models that have such buffers
            if inp.model_buffers_bytes > 0 {
                ("model_buffers", inp.model_buffers_bytes)
            } else {
                ("", 0)
            },
            ("optimizer", load_states),
            if persist_grads > 0 {
                ("gradients", persist_grads)
            } else {
                ("", 0)
            },
            ("", 0),
        ],
    };
    for step in 1..=2usize {
        let first = step == 1;
        let names = if first {
            ["forward", "backward", "optimizer"]
        } else {
            ["forward_2", "backward_2", "optimizer_2"]
        };
        let states = if first { load_states } else { s };
        // gradient accumulation: the second micro-batch runs with the gradients already allocated.
        let grads_live = if inp.gradients_persist || (!first && inp.grad_accumulation > 1) {
            g
        } else {
            0
        };
        let extra = backward_end_extra(prof);
        // the input ids exist from step 1's forward on; the simulated forward accounts for them.
        let base = w + states + grads_live;
        let at = 1 + (step - 1) * 3;
        let acts_peak = if first {
            prof.forward_peak_bytes
        } else {
            prof.forward_peak_bytes.max(prof.next_forward_peak_bytes)
        };
        // ZeRO 3: from the second step on the prefetcher holds its gathered parameters from early
        // in forward to the loss; in the first step the head's weight is gathered for the head's
        // forward (beside what is saved before the log-softmax), the embedding's for its own.
        let (fwd_gathered, fwd_peak, fwd_end_gathered) = match &inp.gathered {
            None => (0, acts_peak, 0),
            Some(g) if !first => (
                g.steady_bytes,
                acts_peak
                    .saturating_add(g.steady_bytes)
                    .saturating_add(g.collective_copy_bytes),
                g.steady_bytes,
            ),
            Some(g) => {
                let at_head = prof
                    .forward_end_bytes
                    .saturating_sub(prof.log_softmax_bytes)
                    .saturating_add(g.head_bytes)
                    .saturating_add(g.collective_copy_bytes);
                if at_head > acts_peak.max(g.embedding_bytes) {
                    (g.head_bytes, at_head, 0)
                } else if g.embedding_bytes > acts_peak {
                    (g.embedding_bytes, g.embedding_bytes, 0)
                } else {
                    (0, acts_peak, 0)
                }
            }
        };
        out[at] = PhaseFigure {
            name: names[0],
            allocated_bytes: base + prof.forward_end_bytes + fwd_end_gathered,
            peak_allocated_bytes: base + fwd_peak,
            components: [
                ("weights", inp.weights_bytes),
                ("optimizer", states),
                ("gradients", grads_live),
                (
                    "activations",
                    fwd_peak
                        .saturating_sub(fwd_gathered)
                        .saturating_sub(prof.autocast_copies_at_forward_peak_bytes),
                ),
                copies_component(
                    prof.autocast_copies_at_forward_peak_bytes
                        .min(prof.forward_peak_bytes),
                ),
                gathered_component(fwd_gathered),
            ],
        };
        let bwd = backward_peak_parts(prof, inp, grads_live, !first);
        let bwd_peak = w + states + bwd.bytes;
        let bwd_ends_higher = w + states + g + extra > bwd_peak;
        // what is live at the phase's peak: mid-backward only the gradients done so far exist
        let (bwd_grads, bwd_copies, bwd_params, bwd_acts) = if bwd_ends_higher {
            (g, 0, 0, extra)
        } else {
            let rest = bwd
                .bytes
                .saturating_sub(bwd.gradients_bytes)
                .saturating_sub(bwd.autocast_copy_bytes)
                .saturating_sub(bwd.gathered_params_bytes);
            (
                bwd.gradients_bytes,
                bwd.autocast_copy_bytes,
                bwd.gathered_params_bytes,
                rest,
            )
        };
        out[at + 1] = PhaseFigure {
            name: names[1],
            allocated_bytes: w + states + g + extra,
            peak_allocated_bytes: bwd_peak.max(w + states + g + extra),
            components: [
                ("weights", inp.weights_bytes),
                ("optimizer", states),
                ("gradients", bwd_grads),
                ("activations", bwd_acts),
                copies_component(bwd_copies),
                gathered_component(bwd_params),
            ],
        };
        let opt_start = w + g + extra + states;
        let opt_peak = w + g + extra + s + inp.optimizer_temp_bytes;
        // zero_grad(set_to_none=True) at the end of the phase frees the gradients (kept while
        // accumulating micro-batches).
        let g_after = if inp.grad_accumulation > 1 || inp.gradients_persist {
            g
        } else {
            0
        };
        out[at + 2] = PhaseFigure {
            name: names[2],
            allocated_bytes: w + g_after + extra + s,
            peak_allocated_bytes: opt_peak.max(opt_start),
            components: [
                ("weights", inp.weights_bytes),
                ("gradients", g),
                ("optimizer", s),
                ("optimizer_temp", inp.optimizer_temp_bytes),
                // what forward or backward left on the modules (RecurrentGemma's states, and under
                // checkpointing its recomputed blocks), named only for models that keep any
                if prof.module_state_bytes > 0 {
                    ("model_state", prof.module_state_bytes)
                } else {
                    ("", 0)
                },
                ("", 0),
            ],
        };
    }
    out
}

/// The seven phases, named and with their components, as `vram measure` reports them.
pub fn phases(prof: &ActivationProfile, inp: &PhaseInputs) -> Vec<Phase> {
    named(&phase_figures(prof, inp))
}

/// The [`Phase`]s of figures.
pub fn named(figures: &[PhaseFigure]) -> Vec<Phase> {
    figures
        .iter()
        .map(|f| Phase {
            name: f.name.into(),
            allocated_bytes: f.allocated_bytes,
            peak_allocated_bytes: f.peak_allocated_bytes,
            components: f
                .components
                .iter()
                .filter(|(k, _)| !k.is_empty())
                .map(|&(k, b)| (k.to_string(), b))
                .collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::train::activations::LayerAct;

    /// The backward walk one layer at a time, as it was written before runs were taken together.
    fn per_layer_peak(prof: &ActivationProfile, inp: &PhaseInputs, grads_at_start: u64) -> u64 {
        let scale = |g: u64| g.saturating_mul(inp.grad_scale_num) / inp.grad_scale_den.max(1);
        let mut peak = prof
            .forward_end_bytes
            .saturating_add(prof.ce_backward_bytes)
            .saturating_add(grads_at_start);
        let mut kept_below = prof
            .forward_end_bytes
            .saturating_sub(prof.log_softmax_bytes)
            .saturating_sub(prof.labels_saved_bytes)
            .saturating_sub(prof.head_saved_bytes);
        let mut grads_done = grads_at_start.saturating_add(if grads_at_start > 0 {
            0
        } else {
            scale(inp.head_grad_bytes)
        });
        for l in prof.layers.iter().rev() {
            let kept = if prof.checkpointing {
                l.input_bytes
            } else {
                l.saved_bytes
            };
            kept_below = kept_below.saturating_sub(kept);
            if grads_at_start == 0 {
                grads_done = grads_done.saturating_add(scale(l.grad_bytes));
            }
            let own = if prof.checkpointing {
                l.saved_bytes + l.input_bytes
            } else {
                l.saved_bytes
            };
            let attn_own = if prof.checkpointing {
                l.attn_saved_bytes + l.input_bytes
            } else {
                l.attn_saved_bytes
            };
            let mlp_grad = if grads_at_start == 0 {
                scale(l.mlp_peak_grad_bytes)
            } else {
                0
            };
            let grad = if grads_at_start == 0 {
                scale(l.grad_bytes)
            } else {
                0
            };
            let attn_grad = if grads_at_start == 0 {
                scale(l.attn_peak_grad_bytes)
            } else {
                0
            };
            let layer_peak = (own + l.mlp_backward_transient_bytes)
                .saturating_sub(grad - mlp_grad)
                .max((attn_own + l.attn_backward_transient_bytes).saturating_sub(grad - attn_grad));
            peak = peak.max(kept_below + layer_peak + grads_done + prof.grad_stream_bytes);
        }
        let end = kept_below
            .saturating_sub(prof.pre_saved_bytes)
            .saturating_add(inp.gradients_bytes.max(grads_done))
            .saturating_add(inp.tied_embedding_grad_bytes);
        peak.max(end)
    }

    #[test]
    fn runs_of_identical_layers_give_the_per_layer_backward_peak() {
        let layer = |saved: u64, grad: u64, mlp: u64| LayerAct {
            saved_bytes: saved,
            attn_saved_bytes: saved / 3,
            autocast_saved_bytes: saved / 4,
            attn_autocast_saved_bytes: saved / 12,
            input_bytes: 100,
            mlp_backward_transient_bytes: mlp,
            attn_backward_transient_bytes: mlp / 2,
            grad_bytes: grad,
            mlp_peak_grad_bytes: grad / 3,
            attn_peak_grad_bytes: grad / 2,
            retained_bytes: 0,
        };
        // gradients growing faster than saved bytes fall (peak at the run's last layer), slower
        // (at its first), alternating kinds, a dense prefix before a long run.
        let stacks = [
            vec![layer(1_000, 5_000, 700); 12],
            vec![layer(5_000, 1_000, 700); 12],
            (0..10)
                .map(|i| layer(1_000 + (i % 2) * 4_000, 3_000, 900))
                .collect(),
            [
                vec![layer(2_000, 8_000, 50); 3],
                vec![layer(9_000, 100, 4_000); 20],
            ]
            .concat(),
        ];
        for layers in stacks {
            for checkpointing in [false, true] {
                let kept: u64 = layers
                    .iter()
                    .map(|l| {
                        if checkpointing {
                            l.input_bytes
                        } else {
                            l.saved_bytes
                        }
                    })
                    .sum();
                let prof = ActivationProfile {
                    layers: layers.iter().cloned().collect(),
                    forward_end_bytes: kept + 10_000,
                    head_saved_bytes: 3_000,
                    log_softmax_bytes: 4_000,
                    ce_backward_bytes: 8_000,
                    grad_stream_bytes: 64,
                    pre_saved_bytes: 500,
                    checkpointing,
                    ..ActivationProfile::default()
                };
                for grads_at_start in [0, 77_000] {
                    let inp = PhaseInputs {
                        gradients_bytes: 40_000,
                        head_grad_bytes: 2_000,
                        grad_scale_num: 1,
                        grad_scale_den: 1,
                        ..PhaseInputs::default()
                    };
                    assert_eq!(
                        backward_peak(&prof, &inp, grads_at_start),
                        per_layer_peak(&prof, &inp, grads_at_start),
                        "{:?} ckpt {checkpointing} start {grads_at_start}",
                        layers.iter().map(|l| l.saved_bytes).collect::<Vec<_>>()
                    );
                }
            }
        }
    }
}
