//! A tiny storage-level simulator of what PyTorch autograd keeps alive during a forward pass.
//!
//! Each tensor is a storage with a reference count held by Python locals and a `saved` flag set when
//! an autograd node saves it for backward (`ctx.save_for_backward` / `SavedVariable`). A storage is
//! freed when no local refers to it and no node saved it, exactly as the caching allocator sees it.
//! `cast` to the same dtype returns the same storage (`Tensor.to` is a no-op then), which is how the
//! fp32-stream-is-saved-by-the-norm aliasing of mixed precision is captured.

/// Handle to a simulated tensor, with its `requires_grad`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct V {
    pub(crate) id: usize,
    /// Whether autograd tracks it (decides what downstream ops save).
    pub rg: bool,
}

#[derive(Clone, Debug)]
struct Slot {
    elems: u64,
    elem_bytes: u64,
    refs: u32,
    saved: bool,
    freed: bool,
}

/// The simulator.
#[derive(Clone, Debug, Default)]
pub struct Sim {
    slots: Vec<Slot>,
    live: u64,
    peak: u64,
    saved: u64,
    /// Non-reentrant gradient checkpointing: saves inside a checkpointed region are dropped.
    pub discard_saves: bool,
}

impl Sim {
    /// A new storage of `elems` elements of `elem_bytes` bytes, referenced by one local.
    pub fn alloc(&mut self, elems: u64, elem_bytes: u64, rg: bool) -> V {
        let bytes = elems.saturating_mul(elem_bytes);
        self.slots.push(Slot {
            elems,
            elem_bytes,
            refs: 1,
            saved: false,
            freed: false,
        });
        self.live = self.live.saturating_add(bytes);
        self.peak = self.peak.max(self.live);
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
        if self.discard_saves {
            return;
        }
        if let Some(s) = self.slots.get_mut(v.id) {
            if !s.saved && !s.freed {
                s.saved = true;
                self.saved = self
                    .saved
                    .saturating_add(s.elems.saturating_mul(s.elem_bytes));
            }
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

    /// Resets the peak to the current live bytes (per-phase peaks).
    pub fn reset_peak(&mut self) {
        self.peak = self.live;
    }

    /// Bytes saved for backward so far.
    pub fn saved_bytes(&self) -> u64 {
        self.saved
    }

    /// Adds a transient of `bytes` on top of what is live (a kernel's scratch), for the peak only.
    pub fn transient(&mut self, bytes: u64) {
        self.peak = self.peak.max(self.live.saturating_add(bytes));
    }
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
