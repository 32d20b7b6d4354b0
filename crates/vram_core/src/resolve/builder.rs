//! Collects the tensor inventory while an architecture is resolved.

use crate::spec::{Component, LinearShape, TensorSpec};

/// Appends tensors with HF-style names.
#[derive(Default)]
pub(crate) struct Builder {
    pub tensors: Vec<TensorSpec>,
    /// Layers the per-layer tensors pushed now stand for (a run of identical layers built once);
    /// 0 or 1: one layer.
    pub repeat: u32,
}

impl Builder {
    fn repeat_for(&self, layer: Option<u32>) -> u32 {
        match layer {
            Some(_) => self.repeat.max(1),
            None => 1,
        }
    }

    fn push(
        &mut self,
        name: String,
        component: Component,
        layer: Option<u32>,
        shape: Vec<u64>,
        linear: Option<LinearShape>,
    ) {
        self.tensors.push(TensorSpec {
            name,
            component,
            layer,
            repeat: self.repeat_for(layer),
            shape,
            linear,
            buffer: false,
        });
    }

    /// An `nn.Linear(in, out, bias)`: weight `[out, in]`; the bias goes to [`Component::Bias`].
    pub fn linear(
        &mut self,
        path: &str,
        layer: Option<u32>,
        component: Component,
        in_f: u64,
        out_f: u64,
        bias: bool,
    ) {
        self.projection(
            path,
            layer,
            component,
            (in_f, out_f),
            vec![out_f, in_f],
            bias,
        );
    }

    /// A `transformers.pytorch_utils.Conv1D(nf=out, nx=in)` (gpt2, openai-gpt): the weight is stored
    /// `[in, out]`, the transpose of `nn.Linear`'s; the bias goes to [`Component::Bias`].
    pub fn conv1d(
        &mut self,
        path: &str,
        layer: Option<u32>,
        component: Component,
        in_f: u64,
        out_f: u64,
        bias: bool,
    ) {
        self.projection(
            path,
            layer,
            component,
            (in_f, out_f),
            vec![in_f, out_f],
            bias,
        );
    }

    /// A projection's weight (stored as `shape`) and optional bias `[out]`.
    fn projection(
        &mut self,
        path: &str,
        layer: Option<u32>,
        component: Component,
        (in_f, out_f): (u64, u64),
        shape: Vec<u64>,
        bias: bool,
    ) {
        let linear = LinearShape {
            in_features: in_f,
            out_features: out_f,
        };
        self.push(
            format!("{path}.weight"),
            component,
            layer,
            shape,
            Some(linear),
        );
        if bias {
            let name = format!("{path}.bias");
            self.push(name, Component::Bias, layer, vec![out_f], None);
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
        path: &str,
        layer: Option<u32>,
        component: Component,
        width: u64,
        bias: bool,
    ) {
        self.push(
            format!("{path}.weight"),
            component,
            layer,
            vec![width],
            None,
        );
        if bias {
            self.push(format!("{path}.bias"), component, layer, vec![width], None);
        }
    }

    /// An `nn.Embedding(rows, dim)`.
    pub fn embedding(&mut self, path: &str, component: Component, rows: u64, dim: u64) {
        self.push(
            format!("{path}.weight"),
            component,
            None,
            vec![rows, dim],
            None,
        );
    }

    /// Any other parameter with an explicit full name and shape.
    pub fn param(&mut self, name: &str, layer: Option<u32>, component: Component, shape: Vec<u64>) {
        self.push(name.to_string(), component, layer, shape, None);
    }

    /// A persistent buffer that checkpoints store and published counts include, but nothing trains.
    pub fn buffer(
        &mut self,
        name: &str,
        layer: Option<u32>,
        component: Component,
        shape: Vec<u64>,
    ) {
        self.tensors.push(TensorSpec {
            name: name.to_string(),
            component,
            layer,
            repeat: self.repeat_for(layer),
            shape,
            linear: None,
            buffer: true,
        });
    }
}
