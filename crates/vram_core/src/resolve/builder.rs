//! Collects the tensor inventory while an architecture is resolved.

use crate::shape::Shape;
use crate::spec::{Component, LinearShape, TensorSpec};

/// Appends tensors with HF-style names.
#[derive(Default)]
pub(crate) struct Builder {
    pub tensors: Vec<TensorSpec>,
    /// Layers the per-layer tensors pushed now stand for (a run of identical layers built once);
    /// 0 or 1: one layer.
    pub repeat: u32,
    /// Distance between the layers of that run (0 or 1: consecutive).
    pub stride: u32,
}

/// `prefix.leaf`, allocated once at its final size (`format!` grows its buffer and pads each
/// argument; the resolvers name hundreds of tensors per config).
pub(crate) fn join(prefix: &str, leaf: &str) -> String {
    name_of(prefix, leaf)
}

/// A tensor's or module's path, whole or as `(prefix, leaf)` joined by a dot: callers extend a
/// layer's prefix without allocating the joined path first.
pub(crate) trait Path: Copy {
    /// Bytes of the path.
    fn len(self) -> usize;
    /// Appends the path to `out`.
    fn write(self, out: &mut String);
}

impl Path for &str {
    fn len(self) -> usize {
        str::len(self)
    }
    fn write(self, out: &mut String) {
        out.push_str(self);
    }
}

impl Path for &String {
    fn len(self) -> usize {
        String::len(self)
    }
    fn write(self, out: &mut String) {
        out.push_str(self);
    }
}

impl Path for (&str, &str) {
    fn len(self) -> usize {
        self.0.len() + 1 + self.1.len()
    }
    fn write(self, out: &mut String) {
        out.push_str(self.0);
        out.push('.');
        out.push_str(self.1);
    }
}

/// `path.leaf` (or `path` alone when `leaf` is empty), allocated once at its final size.
fn name_of(path: impl Path, leaf: &str) -> String {
    let mut s = String::with_capacity(path.len() + 1 + leaf.len());
    path.write(&mut s);
    if !leaf.is_empty() {
        s.push('.');
        s.push_str(leaf);
    }
    s
}

/// A run of identical layers in a layer pattern: `count` layers from `first`, `stride` apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Progression {
    pub first: u64,
    pub stride: u64,
    pub count: u64,
}

/// Splits a pattern of layer kinds into runs of identical layers, each an arithmetic progression
/// of layer indices (hybrids repeat a kind every few layers: Jamba's attention every 8th layer, its
/// MoE every other one), ordered by their first layer. Each kind's layers are split either into
/// maximal evenly spaced stretches, or, when the whole pattern repeats with a period, into one run
/// per position in the period, whichever gives that kind fewer runs.
pub(crate) fn progressions<K: PartialEq>(kinds: &[K]) -> Vec<Progression> {
    let n = kinds.len();
    // the pattern's smallest period up to 64 layers (n when it does not repeat so soon; bounded so
    // that a config with thousands of layers costs linear time)
    let period = (1..n.min(65))
        .find(|&p| (p..n).all(|i| kinds[i] == kinds[i - p]))
        .unwrap_or(n.max(1));
    // each kind's layers, in order (hybrids have a handful of kinds)
    let mut by_kind: Vec<(&K, Vec<u64>)> = Vec::new();
    for (i, k) in kinds.iter().enumerate() {
        match by_kind.iter_mut().find(|(kind, _)| *kind == k) {
            Some((_, layers)) => layers.push(i as u64),
            None => by_kind.push((k, vec![i as u64])),
        }
    }
    let mut out = Vec::new();
    for (_, layers) in &by_kind {
        let stretches = evenly_spaced_stretches(layers);
        let positions = layers.iter().take_while(|&&l| l < period as u64);
        if period < n && positions.clone().count() < stretches.len() {
            out.extend(positions.map(|&first| Progression {
                first,
                stride: period as u64,
                count: (n as u64 - first).div_ceil(period as u64),
            }));
        } else {
            out.extend(stretches);
        }
    }
    out.sort_by_key(|r| r.first);
    out
}

/// `layers` (increasing) as maximal stretches of equal spacing.
fn evenly_spaced_stretches(layers: &[u64]) -> Vec<Progression> {
    let mut out = Vec::new();
    let mut p = 0;
    while p < layers.len() {
        let stride = match layers.get(p + 1) {
            Some(&next) => next - layers[p],
            None => 1,
        };
        let mut q = p + 1;
        while q < layers.len() && layers[q] - layers[q - 1] == stride {
            q += 1;
        }
        out.push(Progression {
            first: layers[p],
            stride,
            count: (q - p) as u64,
        });
        p = q;
    }
    out
}

impl Builder {
    /// A builder with room for `tensors` entries.
    pub fn with_capacity(tensors: usize) -> Self {
        Builder {
            tensors: Vec::with_capacity(tensors),
            ..Builder::default()
        }
    }

    fn repeat_for(&self, layer: Option<u32>) -> u32 {
        match layer {
            Some(_) => self.repeat.max(1),
            None => 1,
        }
    }

    fn stride_for(&self, layer: Option<u32>) -> u32 {
        match layer {
            Some(_) if self.repeat > 1 => self.stride.max(1),
            _ => 1,
        }
    }

    /// The tensors pushed from now on stand for the layers of `run`.
    pub fn set_run(&mut self, run: Progression) {
        self.repeat = u32::try_from(run.count).unwrap_or(u32::MAX);
        self.stride = u32::try_from(run.stride).unwrap_or(u32::MAX);
    }

    /// The tensors pushed from now on stand for one layer (or none).
    pub fn end_run(&mut self) {
        self.repeat = 1;
        self.stride = 1;
    }

    fn push(
        &mut self,
        name: String,
        component: Component,
        layer: Option<u32>,
        shape: impl Into<Shape>,
        linear: Option<LinearShape>,
    ) {
        self.tensors.push(TensorSpec {
            name,
            component,
            layer,
            repeat: self.repeat_for(layer),
            stride: self.stride_for(layer),
            shape: shape.into(),
            linear,
            buffer: false,
        });
    }

    /// An `nn.Linear(in, out, bias)`: weight `[out, in]`; the bias goes to [`Component::Bias`].
    pub fn linear(
        &mut self,
        path: impl Path,
        layer: Option<u32>,
        component: Component,
        in_f: u64,
        out_f: u64,
        bias: bool,
    ) {
        self.projection(path, layer, component, (in_f, out_f), [out_f, in_f], bias);
    }

    /// A `transformers.pytorch_utils.Conv1D(nf=out, nx=in)` (gpt2, openai-gpt): the weight is stored
    /// `[in, out]`, the transpose of `nn.Linear`'s; the bias goes to [`Component::Bias`].
    pub fn conv1d(
        &mut self,
        path: impl Path,
        layer: Option<u32>,
        component: Component,
        in_f: u64,
        out_f: u64,
        bias: bool,
    ) {
        self.projection(path, layer, component, (in_f, out_f), [in_f, out_f], bias);
    }

    /// A projection's weight (stored as `shape`) and optional bias `[out]`.
    fn projection(
        &mut self,
        path: impl Path,
        layer: Option<u32>,
        component: Component,
        (in_f, out_f): (u64, u64),
        shape: impl Into<Shape>,
        bias: bool,
    ) {
        let linear = LinearShape {
            in_features: in_f,
            out_features: out_f,
        };
        self.push(
            name_of(path, "weight"),
            component,
            layer,
            shape,
            Some(linear),
        );
        if bias {
            let name = name_of(path, "bias");
            self.push(name, Component::Bias, layer, [out_f], None);
        }
    }

    /// A plain (non-gated) MLP: `up` = Linear(hidden, inner), `down` = Linear(inner, hidden), both
    /// with or without bias (opt's fc1/fc2, bloom's and gpt-neox's dense_h_to_4h /
    /// dense_4h_to_h, bert's intermediate/output dense).
    pub fn plain_mlp(
        &mut self,
        up: &str,
        down: &str,
        layer: Option<u32>,
        hidden: u64,
        inner: u64,
        bias: bool,
    ) {
        self.linear(up, layer, Component::Mlp, hidden, inner, bias);
        self.linear(down, layer, Component::Mlp, inner, hidden, bias);
    }

    /// A normalisation module: weight, and bias when `bias`.
    pub fn norm(
        &mut self,
        path: impl Path,
        layer: Option<u32>,
        component: Component,
        width: u64,
        bias: bool,
    ) {
        self.push(name_of(path, "weight"), component, layer, [width], None);
        if bias {
            self.push(name_of(path, "bias"), component, layer, [width], None);
        }
    }

    /// An `nn.Embedding(rows, dim)`.
    pub fn embedding(&mut self, path: impl Path, component: Component, rows: u64, dim: u64) {
        self.push(name_of(path, "weight"), component, None, [rows, dim], None);
    }

    /// Any other parameter with an explicit full name and shape.
    pub fn param(
        &mut self,
        name: impl Path,
        layer: Option<u32>,
        component: Component,
        shape: impl Into<Shape>,
    ) {
        self.push(name_of(name, ""), component, layer, shape, None);
    }

    /// A persistent buffer that checkpoints store and published counts include, but nothing trains.
    pub fn buffer(
        &mut self,
        name: impl Path,
        layer: Option<u32>,
        component: Component,
        shape: impl Into<Shape>,
    ) {
        self.tensors.push(TensorSpec {
            name: name_of(name, ""),
            component,
            layer,
            repeat: self.repeat_for(layer),
            stride: self.stride_for(layer),
            shape: shape.into(),
            linear: None,
            buffer: true,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hybrid_pattern_splits_into_runs_of_evenly_spaced_identical_layers() {
        // Jamba-1.5-Mini's 32 layers: attention at 4, 12, 20, 28, MoE at odd layers
        let kinds: Vec<(bool, bool)> = (0..32).map(|i| (i % 8 == 4, i % 2 == 1)).collect();
        let runs = progressions(&kinds);
        let p = |first, stride, count| Progression {
            first,
            stride,
            count,
        };
        // the pattern repeats every 8 layers: the Mamba + dense MLP layers (0, 2, 6 of every 8)
        // become one run per position; the others are evenly spaced already
        assert_eq!(
            runs,
            [p(0, 8, 4), p(1, 2, 16), p(2, 8, 4), p(4, 8, 4), p(6, 8, 4)]
        );
        let covered: u64 = runs.iter().map(|r| r.count).sum();
        assert_eq!(covered, 32);
        assert_eq!(progressions::<u8>(&[]), vec![]);
        assert_eq!(progressions(&[7, 7, 7]), [p(0, 1, 3)]);
        // a pattern that does not repeat: Nemotron-H-8B's mamba layers 0, 2, 4, 6, then 9, 11
        let kinds: Vec<char> = "M-M-M-M*-M-M".chars().collect();
        let runs = progressions(&kinds);
        assert_eq!(runs[0], p(0, 2, 4));
        assert!(runs.contains(&p(9, 2, 2)));
        assert_eq!(runs.iter().map(|r| r.count).sum::<u64>(), 12);
    }
}
