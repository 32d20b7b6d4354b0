//! What a sweep's consecutive scenarios share, computed once: the training sweep keeps the
//! persistent part (LoRA plan, weights, gradients, states, sharding), the inference sweep the weight
//! bytes, cache layouts and vLLM's profiled peak, for as long as the next point leaves them alike.

use crate::scenario::Scenario;

/// The shared part of the last scenario a sweep computed.
pub(crate) struct Shared<'a, P> {
    last: Option<(&'a Scenario, P)>,
}

impl<'a, P> Shared<'a, P> {
    /// Nothing computed yet.
    pub(crate) fn new() -> Self {
        Shared { last: None }
    }

    /// The part for `s`: the last one when `alike(last scenario, s)`, otherwise `make()`'s.
    pub(crate) fn get<E>(
        &mut self,
        s: &'a Scenario,
        alike: fn(&Scenario, &Scenario) -> bool,
        make: impl FnOnce() -> Result<P, E>,
    ) -> Result<&P, E> {
        let (_, part) = match self.last.take() {
            Some((prev, part)) if alike(prev, s) => self.last.insert((prev, part)),
            _ => self.last.insert((s, make()?)),
        };
        Ok(part)
    }
}
