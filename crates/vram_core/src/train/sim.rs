//! A tiny storage-level simulator of what PyTorch autograd keeps alive during a forward pass.
//!
//! Each tensor is a storage with a reference count held by Python locals and a `saved` flag set when
//! an autograd node saves it for backward (`ctx.save_for_backward` / `SavedVariable`). A storage is
//! freed when no local refers to it and no node saved it, exactly as the caching allocator sees it.
//! `cast` to the same dtype returns the same storage (`Tensor.to` is a no-op then), which is how the
//! fp32-stream-is-saved-by-the-norm aliasing of mixed precision is captured.

/// Handle to a simulated tensor, with its `requires_grad`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct V {
    pub(crate) id: usize,
    /// Whether autograd tracks it (decides what downstream ops save).
    pub rg: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    elems: u64,
    elem_bytes: u64,
    refs: u32,
    saved: bool,
    freed: bool,
    /// An autocast weight copy (tracked apart, so a phase's peak can say how much of it they are).
    copy: bool,
}

/// The simulator.
#[derive(Clone, Debug, Default)]
pub struct Sim {
    slots: Vec<Slot>,
    live: u64,
    peak: u64,
    saved: u64,
    /// Of `live`, autocast weight copies.
    live_copy: u64,
    /// Of `peak`, the autocast weight copies live when it was reached.
    peak_copy: u64,
    /// Non-reentrant gradient checkpointing: saves inside a checkpointed region are dropped.
    pub discard_saves: bool,
}

/// The state of one storage as a layer sees it when it is entered (with the handle's
/// `requires_grad`): two inputs in the same state make a layer behave the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotState {
    slot: Slot,
    rg: bool,
}

/// A point in the simulation to measure a layer's effect from ([`Sim::mark`]).
#[derive(Clone, Copy, Debug)]
pub struct Mark {
    live: u64,
    peak: u64,
    saved: u64,
    live_copy: u64,
    peak_copy: u64,
}

/// What walking a stretch of ops did, relative to its start: replayed by [`Sim::replay`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Effect {
    /// Live bytes at the end minus live bytes at the start.
    live_delta: i128,
    /// Highest live bytes during the stretch above the live bytes at its start.
    peak_above_start: u64,
    /// Bytes saved for backward during the stretch.
    saved_delta: u64,
    /// The output's state at the end.
    output: SlotState,
    /// Live autocast weight copies at the end minus at the start.
    copy_delta: i128,
    /// Live autocast weight copies at the stretch's peak minus at its start.
    copy_at_peak_above_start: i128,
}

impl Effect {
    /// The state of the output when the stretch ended.
    pub fn output(&self) -> SlotState {
        self.output
    }
}

impl Sim {
    /// An empty simulation with room for `slots` storages before it reallocates.
    pub fn with_capacity(slots: usize) -> Self {
        Sim {
            slots: Vec::with_capacity(slots),
            ..Sim::default()
        }
    }

    /// The state of `v`'s storage.
    pub fn state(&self, v: V) -> SlotState {
        SlotState {
            slot: self.slots.get(v.id).copied().unwrap_or(Slot {
                elems: 0,
                elem_bytes: 0,
                refs: 0,
                saved: false,
                freed: true,
                copy: false,
            }),
            rg: v.rg,
        }
    }

    /// Starts measuring an effect: the peak is tracked relative to now, and restored (as the
    /// larger of both) by [`Sim::effect_since`].
    pub fn mark(&mut self) -> Mark {
        let m = Mark {
            live: self.live,
            peak: self.peak,
            saved: self.saved,
            live_copy: self.live_copy,
            peak_copy: self.peak_copy,
        };
        self.peak = self.live;
        self.peak_copy = self.live_copy;
        m
    }

    /// The effect of everything since `mark`, whose result is `output`.
    pub fn effect_since(&mut self, mark: &Mark, output: V) -> Effect {
        let e = Effect {
            live_delta: i128::from(self.live) - i128::from(mark.live),
            peak_above_start: self.peak.saturating_sub(mark.live),
            saved_delta: self.saved.saturating_sub(mark.saved),
            output: self.state(output),
            copy_delta: i128::from(self.live_copy) - i128::from(mark.live_copy),
            copy_at_peak_above_start: i128::from(self.peak_copy) - i128::from(mark.live_copy),
        };
        if mark.peak > self.peak {
            self.peak = mark.peak;
            self.peak_copy = mark.peak_copy;
        }
        e
    }

    /// Applies `effect` as if the stretch it was measured on ran again on `input` (which it
    /// consumes, as the original stretch consumed its input); returns the output.
    pub fn replay(&mut self, input: V, effect: &Effect) -> V {
        let start = self.live;
        let copy_start = i128::from(self.live_copy);
        self.reach(
            start.saturating_add(effect.peak_above_start),
            copy_start + effect.copy_at_peak_above_start,
        );
        let end = i128::from(start) + effect.live_delta;
        self.live = to_u64(end);
        self.live_copy = to_u64(copy_start + effect.copy_delta);
        self.saved = self.saved.saturating_add(effect.saved_delta);
        if let Some(s) = self.slots.get_mut(input.id) {
            *s = effect.output.slot;
        }
        V {
            id: input.id,
            rg: effect.output.rg,
        }
    }

    /// [`Sim::replay`] `times` times in a row, in constant time: valid when the effect's output state
    /// equals the state of the input it was measured on (each replay then enters the same state).
    /// Live bytes change by the same amount each time, so the highest start is the first or the
    /// last one.
    pub fn replay_times(&mut self, input: V, effect: &Effect, times: u64) -> V {
        if times == 0 {
            return input;
        }
        let start = i128::from(self.live);
        let copy_start = i128::from(self.live_copy);
        let n = i128::from(times);
        let last_start = start + (n - 1) * effect.live_delta;
        let (highest, copies_then) = if last_start > start {
            (last_start, copy_start + (n - 1) * effect.copy_delta)
        } else {
            (start, copy_start)
        };
        self.reach(
            to_u64(highest).saturating_add(effect.peak_above_start),
            copies_then + effect.copy_at_peak_above_start,
        );
        let end = start + n * effect.live_delta;
        self.live = to_u64(end);
        self.live_copy = to_u64(copy_start + n * effect.copy_delta);
        self.saved = self
            .saved
            .saturating_add(effect.saved_delta.saturating_mul(times));
        if let Some(s) = self.slots.get_mut(input.id) {
            *s = effect.output.slot;
        }
        V {
            id: input.id,
            rg: effect.output.rg,
        }
    }

    /// Bytes that dropping the last reference to `v` would free (0 if saved or already freed).
    pub fn freeable_bytes(&self, v: V) -> u64 {
        match self.slots.get(v.id) {
            Some(s) if !s.saved && !s.freed => s.elems.saturating_mul(s.elem_bytes),
            _ => 0,
        }
    }

    /// Frees `bytes` of autocast weight copies that are not tracked one by one (the cache
    /// entries of replayed layers).
    pub fn release_copies(&mut self, bytes: u64) {
        self.live = self.live.saturating_sub(bytes);
        self.live_copy = self.live_copy.saturating_sub(bytes);
    }

    /// A new peak candidate: `bytes` live, of which `copies` autocast weight copies.
    fn reach(&mut self, bytes: u64, copies: i128) {
        if bytes > self.peak {
            self.peak = bytes;
            self.peak_copy = to_u64(copies).min(bytes);
        }
    }

    /// A new storage of `elems` elements of `elem_bytes` bytes, referenced by one local.
    pub fn alloc(&mut self, elems: u64, elem_bytes: u64, rg: bool) -> V {
        self.alloc_tagged(elems, elem_bytes, rg, false)
    }

    /// [`Sim::alloc`] of an autocast weight copy (`cached_cast`'s low-precision weight).
    pub fn alloc_copy(&mut self, elems: u64, elem_bytes: u64, rg: bool) -> V {
        self.alloc_tagged(elems, elem_bytes, rg, true)
    }

    fn alloc_tagged(&mut self, elems: u64, elem_bytes: u64, rg: bool, copy: bool) -> V {
        let bytes = elems.saturating_mul(elem_bytes);
        self.slots.push(Slot {
            elems,
            elem_bytes,
            refs: 1,
            saved: false,
            freed: false,
            copy,
        });
        self.live = self.live.saturating_add(bytes);
        if copy {
            self.live_copy = self.live_copy.saturating_add(bytes);
        }
        self.reach(self.live, i128::from(self.live_copy));
        V {
            id: self.slots.len() - 1,
            rg,
        }
    }

    fn bytes_of(&self, id: usize) -> u64 {
        self.slots
            .get(id)
            .map_or(0, |s| s.elems.saturating_mul(s.elem_bytes))
    }

    /// Bytes per element of `v`.
    pub fn elem(&self, v: V) -> u64 {
        self.slots.get(v.id).map_or(0, |s| s.elem_bytes)
    }

    /// Elements of `v`.
    pub fn elems(&self, v: V) -> u64 {
        self.slots.get(v.id).map_or(0, |s| s.elems)
    }

    /// An autograd node saves `v` for backward.
    pub fn save(&mut self, v: V) {
        self.save_counting(v);
    }

    /// [`Sim::save`], returning the bytes this save kept alive (0 when the storage was saved
    /// already, or when saves are discarded inside a checkpointed region).
    pub fn save_counting(&mut self, v: V) -> u64 {
        if self.discard_saves {
            return 0;
        }
        match self.slots.get_mut(v.id) {
            Some(s) if !s.saved && !s.freed => {
                s.saved = true;
                let bytes = s.elems.saturating_mul(s.elem_bytes);
                self.saved = self.saved.saturating_add(bytes);
                bytes
            }
            _ => 0,
        }
    }

    /// One more local refers to `v` (aliasing).
    pub fn share(&mut self, v: V) -> V {
        if let Some(s) = self.slots.get_mut(v.id) {
            s.refs += 1;
        }
        v
    }

    /// A local reference to `v` goes away.
    pub fn drop(&mut self, v: V) {
        let bytes = self.bytes_of(v.id);
        if let Some(s) = self.slots.get_mut(v.id) {
            s.refs = s.refs.saturating_sub(1);
            if s.refs == 0 && !s.saved && !s.freed {
                s.freed = true;
                self.live = self.live.saturating_sub(bytes);
                if s.copy {
                    self.live_copy = self.live_copy.saturating_sub(bytes);
                }
            }
        }
    }

    /// `v.to(dtype)`: the same storage when the dtype does not change, otherwise a copy.
    pub fn cast(&mut self, v: V, elem_bytes: u64) -> V {
        if self.elem(v) == elem_bytes {
            self.share(v)
        } else {
            let e = self.elems(v);
            self.alloc(e, elem_bytes, v.rg)
        }
    }

    /// Bytes currently alive (locals and saved).
    pub fn live_bytes(&self) -> u64 {
        self.live
    }

    /// Highest live bytes so far.
    pub fn peak_bytes(&self) -> u64 {
        self.peak
    }

    /// Of [`Sim::peak_bytes`], the autocast weight copies live when the peak was reached.
    pub fn peak_copy_bytes(&self) -> u64 {
        self.peak_copy
    }

    /// Resets the peak to the current live bytes (per-phase peaks).
    pub fn reset_peak(&mut self) {
        self.peak = self.live;
        self.peak_copy = self.live_copy;
    }

    /// Bytes saved for backward so far.
    pub fn saved_bytes(&self) -> u64 {
        self.saved
    }

    /// Adds a transient of `bytes` on top of what is live (a kernel's scratch), for the peak only.
    pub fn transient(&mut self, bytes: u64) {
        self.reach(self.live.saturating_add(bytes), i128::from(self.live_copy));
    }
}

/// A byte count from the signed arithmetic of effects (negative means none left).
fn to_u64(v: i128) -> u64 {
    u64::try_from(v.max(0)).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_dtype_cast_aliases_and_saved_storage_survives_its_locals() {
        let mut s = Sim::default();
        let x = s.alloc(10, 4, true);
        let y = s.cast(x, 4);
        assert_eq!(s.live_bytes(), 40);
        s.save(y);
        s.drop(x);
        s.drop(y);
        assert_eq!(s.live_bytes(), 40);
        let z = s.cast(y, 2);
        assert_eq!(s.live_bytes(), 60);
        s.drop(z);
        assert_eq!(s.live_bytes(), 40);
        assert_eq!(s.peak_bytes(), 60);
    }
}
