//! The validated model description: no `Option` left for sizes, one entry per layer, and the full
//! tensor inventory (every parameter tensor with its HF name and shape, runs of identical layers kept
//! once with a count) from which parameter counts, LoRA targets, quantized sizes and per-layer memory
//! are derived.

use serde::{Deserialize, Serialize};

/// Broad structure of a model, which decides how memory is modelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelKind {
    /// Causal language model (llama, gpt2, mixtral, deepseek, ...).
    DecoderOnly,
    /// Encoder–decoder (t5).
    EncoderDecoder,
    /// Encoder only (bert).
    EncoderOnly,
    /// State-space model (mamba): a fixed-size recurrent state instead of a KV cache.
    StateSpace,
}

/// Which normalisation the model uses (decides saved activations and parameter counts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NormKind {
    /// RMSNorm: one weight vector.
    RmsNorm,
    /// LayerNorm with weight and bias.
    LayerNorm,
    /// LayerNorm with weight only (cohere).
    LayerNormNoBias,
}

/// Multi-head latent attention dimensions (DeepSeek-V2/V3).
/// Source: `modeling_deepseek_v3.py`, `DeepseekV3Attention`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MlaSpec {
    /// Rank of the query compression (`None`: queries are projected directly, as in V2-Lite).
    pub q_lora_rank: Option<u64>,
    /// Rank of the joint key/value latent, the part that is cached.
    pub kv_lora_rank: u64,
    /// Per-head dimension of the decoupled rotary key (shared by all heads, cached).
    pub qk_rope_head_dim: u64,
    /// Per-head dimension of the non-rotary part of queries and keys.
    pub qk_nope_head_dim: u64,
}

/// One attention block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttentionSpec {
    /// Query heads.
    pub num_heads: u64,
    /// Key/value heads (GQA/MQA when fewer than `num_heads`).
    pub num_kv_heads: u64,
    /// Per-head dimension of queries and keys.
    pub head_dim: u64,
    /// Per-head dimension of values (equal to `head_dim` except in MLA).
    pub v_head_dim: u64,
    /// Sliding-window length for this layer, if it attends only to the last `n` tokens.
    pub sliding_window: Option<u64>,
    /// MLA dimensions, for DeepSeek-style latent attention.
    pub mla: Option<MlaSpec>,
}

/// The feed-forward block of one layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum FfnSpec {
    /// One MLP.
    Dense {
        /// Inner width.
        intermediate_size: u64,
        /// Gated (SwiGLU/GeGLU: gate, up, down) or plain (up, down).
        gated: bool,
    },
    /// Mixture of experts.
    Moe {
        /// Routed experts.
        num_experts: u64,
        /// Experts each token is routed to.
        experts_per_token: u64,
        /// Inner width of each routed expert.
        expert_intermediate_size: u64,
        /// Inner width of the always-active shared expert(s), 0 when none.
        shared_intermediate_size: u64,
        /// Whether experts are gated MLPs.
        gated: bool,
    },
}

/// Selective state-space mixer dimensions: mamba (`modeling_mamba.py`, `MambaMixer`; also jamba's
/// and falcon-mamba's) and mamba-2 (`modeling_nemotron_h.py`, `NemotronHMamba2Mixer`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SsmSpec {
    /// Inner width (`expand * hidden_size`; mamba-2: heads × head_dim).
    pub d_inner: u64,
    /// SSM state size per channel.
    pub state_size: u64,
    /// Causal convolution kernel width.
    pub conv_kernel: u64,
    /// Rank of the time-step projection (mamba-2: its number of heads, one step per head).
    pub dt_rank: u64,
    /// Channels of the causal convolution and of its cached state: `d_inner` for mamba,
    /// `d_inner + 2 × n_groups × state_size` for mamba-2 (x, B and C are convolved together).
    /// 0 in documents written before it was recorded: read as `d_inner`.
    #[serde(default)]
    pub conv_dim: u64,
    /// Mamba-2's scan chunk (`chunk_size`); 0 for mamba-1 and in documents written before it was
    /// recorded.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub chunk_size: u64,
    /// transformers keeps the convolution state `conv_kernel − 1` wide after prefill and widens it
    /// at the first decode step (RecurrentGemma: `F.pad(x, (width − len − 1, 0))`, then a view of
    /// `torch.cat`'s `width`-wide result).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub conv_state_grows_at_first_decode: bool,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl SsmSpec {
    /// Channels of the convolution state (`conv_dim`, or `d_inner` when unrecorded).
    pub fn conv_channels(&self) -> u64 {
        if self.conv_dim == 0 {
            self.d_inner
        } else {
            self.conv_dim
        }
    }
}

/// One layer of a stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerSpec {
    /// Self-attention, if the layer has it.
    pub attention: Option<AttentionSpec>,
    /// Cross-attention over the encoder output (t5 decoder).
    pub cross_attention: Option<AttentionSpec>,
    /// Feed-forward block.
    pub ffn: Option<FfnSpec>,
    /// State-space mixer (mamba).
    pub ssm: Option<SsmSpec>,
}

/// A vision tower counted with the language model (llava's CLIP encoder).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VisionSpec {
    /// Hidden width of the vision transformer.
    pub hidden_size: u64,
    /// Layers of the vision transformer.
    pub num_layers: u64,
    /// Attention heads.
    pub num_heads: u64,
    /// MLP width.
    pub intermediate_size: u64,
    /// Image side in pixels.
    pub image_size: u64,
    /// Patch side in pixels.
    pub patch_size: u64,
    /// Image tokens the text model's cross-attention layers attend to per sequence (mllama: one
    /// image at its most tiles, `max_num_tiles × (patches + 1)`); 0 when images enter as tokens.
    #[serde(default)]
    pub cross_attention_tokens: u64,
}

/// What part of the model a tensor belongs to (the rows of the parameter breakdown).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Component {
    /// Token embeddings (and embedding projections).
    Embedding,
    /// Learned position / token-type embeddings.
    PositionEmbedding,
    /// Attention projections (weights; biases go to `Bias`).
    Attention,
    /// Dense MLP projections.
    Mlp,
    /// Routed experts of an MoE layer.
    Experts,
    /// Shared (always active) experts of an MoE layer.
    SharedExperts,
    /// MoE router.
    Router,
    /// State-space mixer parameters (mamba).
    Mixer,
    /// Normalisation weights (and their biases) inside layers.
    Norm,
    /// Biases of linear layers.
    Bias,
    /// Norm(s) after the last layer (and after embeddings).
    FinalNorm,
    /// Output projection to the vocabulary (absent when tied to the embeddings).
    LmHead,
    /// Pooler or other heads (bert's pooler).
    Head,
    /// Vision tower (llava).
    Vision,
    /// Multimodal projector (llava).
    Projector,
}

/// Whether (and how) a tensor is an `nn.Linear` weight, which LoRA can target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinearShape {
    /// Input features.
    pub in_features: u64,
    /// Output features.
    pub out_features: u64,
}

/// One parameter tensor of the model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorSpec {
    /// HF-style name, e.g. `model.layers.0.self_attn.q_proj.weight`.
    pub name: String,
    /// Breakdown row.
    pub component: Component,
    /// Layer index, for per-layer tensors: the first of the `repeat` consecutive layers that each
    /// hold this tensor.
    pub layer: Option<u32>,
    /// Layers from `layer` on, `stride` apart, that hold an identical tensor (same role, shape; the
    /// name differs only in the layer index): the inventory keeps runs of identical layers once.
    /// 1 for tensors outside the layers.
    #[serde(default = "one")]
    pub repeat: u32,
    /// Distance between the layers of a run: 1 for consecutive layers; a hybrid's pattern (Jamba's
    /// attention every 8th layer, Nemotron-H's alternating mixers) repeats a layer every `stride`.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub stride: u32,
    /// Shape (2-D for linear weights as `[out, in]`, 3-D for fused experts).
    pub shape: crate::shape::Shape,
    /// Set for weights of `nn.Linear`-like modules (LoRA targets), with their features.
    pub linear: Option<LinearShape>,
    /// A persistent buffer stored in the checkpoint but not trained (DeepSeek-V3's router bias).
    pub buffer: bool,
}

fn one() -> u32 {
    1
}

/// Whether layer `l` is one of the `repeat` layers from `first` on, `stride` apart (a run of
/// identical layers; `None`: outside the layers).
pub fn in_run(first: Option<u32>, repeat: u32, stride: u32, l: u32) -> bool {
    first.is_some_and(|first| {
        let stride = stride.max(1);
        l >= first && (l - first).is_multiple_of(stride) && (l - first) / stride < repeat.max(1)
    })
}

fn is_one(v: &u32) -> bool {
    *v == 1
}

/// One tensor of the model in one layer: what the inventory entry `tensor` stands for in `layer`.
#[derive(Clone, Copy, Debug)]
pub struct TensorInstance<'a> {
    /// The inventory entry.
    pub tensor: &'a TensorSpec,
    /// Its index in `ModelSpec::tensors`.
    pub index: usize,
    /// The layer of this instance (`None` outside the layers).
    pub layer: Option<u32>,
}

impl TensorInstance<'_> {
    /// The HF name of this instance (`model.layers.7.mlp.up_proj.weight`).
    pub fn name(&self) -> std::borrow::Cow<'_, str> {
        match self.layer {
            Some(l) if self.tensor.repeat > 1 => {
                std::borrow::Cow::Owned(self.tensor.name_in_layer(l))
            }
            _ => std::borrow::Cow::Borrowed(self.tensor.name.as_str()),
        }
    }
}

impl TensorSpec {
    /// How many tensors this entry stands for (`repeat`, at least 1).
    pub fn count(&self) -> u64 {
        u64::from(self.repeat.max(1))
    }

    /// Whether this entry has an instance in layer `l`.
    pub fn in_layer(&self, l: u32) -> bool {
        in_run(self.layer, self.repeat, self.stride, l)
    }

    /// The layers this entry has an instance in (none outside the layers).
    pub fn layers(&self) -> impl Iterator<Item = u32> + '_ {
        let stride = self.stride.max(1);
        let count = if self.layer.is_some() {
            self.repeat.max(1)
        } else {
            0
        };
        let first = self.layer.unwrap_or(0);
        (0..count).map_while(move |k| k.checked_mul(stride).and_then(|d| first.checked_add(d)))
    }

    /// The name this tensor has in layer `l` (its layer index replaced).
    pub fn name_in_layer(&self, l: u32) -> String {
        let Some(first) = self.layer else {
            return self.name.clone();
        };
        match layer_index_span(&self.name, first) {
            Some((at, end)) => format!("{}{l}{}", &self.name[..at], &self.name[end..]),
            None => self.name.clone(),
        }
    }

    /// Number of elements (saturating, so absurd configs cannot overflow).
    pub fn numel(&self) -> u64 {
        self.shape
            .iter()
            .fold(1u64, |acc, &d| acc.saturating_mul(d))
    }

    /// The leaf module name peft matches targets against (`q_proj` in `...self_attn.q_proj.weight`).
    pub fn module_leaf(&self) -> &str {
        let mut parts = self.name.rsplit('.');
        let _param = parts.next();
        parts.next().unwrap_or("")
    }
}

/// The element type of a [`RuntimeBuffer`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BufferDtype {
    /// `torch.bool`, 1 B (a causal-mask table).
    Bool,
    /// `torch.int64`, 8 B (`position_ids`, `token_type_ids`).
    Int64,
    /// Built with an explicit `.float()`: fp32 whatever the model's dtype (GPT-J's sinusoid table).
    Fp32,
    /// Built with the default dtype, which `from_pretrained(dtype=…)` / `from_config` set to the
    /// model's dtype while the modules are constructed.
    Model,
}

/// A non-persistent buffer (`nn.Buffer(…, persistent=False)` / `register_buffer`) of the model class.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeBuffer {
    /// Module path as in the model class (`transformer.bias`, `h.*.attn.bias`).
    pub name: String,
    /// Elements of all instances together (a per-layer buffer counts every layer).
    pub elements: u64,
    /// Element type.
    pub dtype: BufferDtype,
}

impl RuntimeBuffer {
    /// Bytes on the device for a model whose parameters are `model_dtype_bytes` wide.
    pub fn bytes(&self, model_dtype_bytes: u64) -> u64 {
        let elem = match self.dtype {
            BufferDtype::Bool => 1,
            BufferDtype::Int64 => 8,
            BufferDtype::Fp32 => 4,
            BufferDtype::Model => model_dtype_bytes,
        };
        self.elements.saturating_mul(elem)
    }
}

/// A validated model: every size known, one [`LayerSpec`] per layer, and the tensor inventory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelSpec {
    /// Display name (`_name_or_path`, or the file name the caller passed).
    pub name: String,
    /// `model_type` as written in the config (`text_config`'s for multimodal wrappers are in `text_model_type`).
    pub model_type: String,
    /// The language model's own `model_type` (differs from `model_type` for llava).
    pub text_model_type: String,
    /// Broad structure.
    pub kind: ModelKind,
    /// Residual stream width.
    pub hidden_size: u64,
    /// Vocabulary size.
    pub vocab_size: u64,
    /// Layers of the main stack (the decoder for t5, the encoder for bert).
    pub num_layers: u64,
    /// Encoder layers of an encoder–decoder model (0 otherwise).
    pub num_encoder_layers: u64,
    /// Longest context the config declares (0 if it declares none).
    pub max_position_embeddings: u64,
    /// Whether the output projection shares the input embedding matrix.
    pub tie_word_embeddings: bool,
    /// `final_logit_softcapping` (Gemma-2): the logits go through `/ cap`, `tanh` and `× cap`, and
    /// `tanh` saves its output for backward: one more logits-sized tensor alive in training.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub final_logit_softcapping: bool,
    /// The transformers class keeps no KV cache (OpenAI GPT): `generate()` runs the whole sequence
    /// again for every new token.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_kv_cache: bool,
    /// Non-persistent buffers the model class registers when it is built (causal-mask tables,
    /// sinusoid tables, position ids): in no checkpoint and no parameter count, but allocated on the
    /// device from load on, in every phase.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runtime_buffers: Vec<RuntimeBuffer>,
    /// Activation function name as in the config.
    pub hidden_act: String,
    /// Normalisation kind.
    pub norm: NormKind,
    /// Dropout probability on attention weights (saved masks in training when > 0).
    pub attention_dropout: f64,
    /// Dropout probability on residual branches / hidden states.
    pub hidden_dropout: f64,
    /// `torch_dtype` / `dtype` the checkpoint is stored in, if declared.
    pub torch_dtype: Option<String>,
    /// The main stack, one entry per layer.
    pub layers: Vec<LayerSpec>,
    /// The encoder stack of an encoder–decoder model.
    pub encoder_layers: Vec<LayerSpec>,
    /// Vision tower, for multimodal models.
    pub vision: Option<VisionSpec>,
    /// `quantization_config` as written, if any (its interpretation lives in the inference model).
    pub quantization_config: Option<serde_json::Value>,
    /// Every parameter tensor. An entry with `repeat > 1` stands for the same tensor in that many
    /// consecutive layers (a run of identical layers is resolved once); [`ModelSpec::instances`]
    /// lists one per layer.
    pub tensors: Vec<TensorSpec>,
    /// Assumptions made while reading the config (unknown `model_type`, defaults filled in).
    pub warnings: Vec<String>,
    /// The model as read from a GGUF file's header (exact bytes per tensor), when the spec was
    /// built from one; the llama.cpp engine uses it instead of deriving tensor types from a preset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gguf: Option<Box<crate::infer::llama_cpp::LlamaModel>>,
    /// The count from the checkpoint's own safetensors headers, when they were given with the
    /// config ([`crate::checkpoint`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<Box<crate::checkpoint::CheckpointCount>>,
    /// The size of the tensor-parallel group when this spec is one rank's part of the model under
    /// transformers' own tensor parallelism ([`crate::train::hf_tp::rank_spec`]): its tensors
    /// and layer widths are that rank's shards. 0 (not serialised) for a whole model.
    #[serde(skip)]
    pub tensor_parallel: u64,
    /// Facts derived from the fields above on first use ([`ModelSpec::derived`]); not serialised.
    #[serde(skip)]
    pub derived: crate::derived::DerivedCache,
}

/// Where the layer index `layer` sits in `name`: the first `.<layer>.` segment.
pub(crate) fn layer_index_span(name: &str, layer: u32) -> Option<(usize, usize)> {
    let digits = layer.to_string();
    let bytes = name.as_bytes();
    let mut from = 0;
    while let Some(pos) = name[from..].find(digits.as_str()) {
        let at = from + pos;
        let end = at + digits.len();
        if at > 0 && bytes[at - 1] == b'.' && bytes.get(end) == Some(&b'.') {
            return Some((at, end));
        }
        from = end;
    }
    None
}

impl ModelSpec {
    /// Whether transformers keeps tensor `t` in fp32 whatever dtype the model is loaded in: the
    /// MoE routers of DeepSeek-V2/V3 (and Kimi-K2's copy), GLM-4-MoE and Nemotron-H, whose
    /// `TopkRouter` creates its weight and `e_score_correction_bias` with `dtype=torch.float32`
    /// and whose model class lists them in `_keep_in_fp32_modules_strict` (transformers 5.24).
    pub fn keeps_fp32(&self, t: &TensorSpec) -> bool {
        t.component == Component::Router
            && matches!(
                self.text_model_type.as_str(),
                "deepseek_v2" | "deepseek_v3" | "kimi_k2" | "glm4_moe" | "nemotron_h"
            )
    }

    /// Whether `from_pretrained` keeps tensor `t` in fp32 when the model is loaded in `dtype`:
    /// [`ModelSpec::keeps_fp32`]'s tensors in any 16-bit dtype, and in fp16 (not bf16) those of the
    /// model class's `_keep_in_fp32_modules` (`PreTrainedModel._get_dtype_plan`, transformers
    /// 5.24): T5's `wo` projections ("to avoid bf16 -> fp16 casting precision issues") and
    /// gpt-oss's norms. `from_config`, which `vram measure` runs, applies no such plan.
    pub fn keeps_fp32_in(&self, t: &TensorSpec, dtype: crate::scenario::Dtype) -> bool {
        if self.keeps_fp32(t) {
            return true;
        }
        if dtype != crate::scenario::Dtype::Fp16 {
            return false;
        }
        match self.text_model_type.as_str() {
            "t5" | "mt5" | "umt5" => t.name.contains(".DenseReluDense.wo."),
            "gpt_oss" => matches!(t.component, Component::Norm | Component::FinalNorm),
            _ => false,
        }
    }

    /// Bytes of the [`ModelSpec::runtime_buffers`] for parameters `model_dtype_bytes` wide.
    pub fn runtime_buffer_bytes(&self, model_dtype_bytes: u64) -> u64 {
        self.runtime_buffers
            .iter()
            .map(|b| b.bytes(model_dtype_bytes))
            .fold(0, u64::saturating_add)
    }

    /// Every tensor of the model, one per layer it is in, in the order a per-layer inventory lists
    /// them (layer by layer within a run of identical layers).
    pub fn instances(&self) -> impl Iterator<Item = TensorInstance<'_>> + '_ {
        let ts = &self.tensors;
        if ts.iter().any(|t| t.stride > 1) {
            return self.instances_by_layer().into_iter();
        }
        let mut out = Vec::new();
        let mut i = 0;
        while i < ts.len() {
            let t = &ts[i];
            if t.repeat <= 1 || t.layer.is_none() {
                out.push(TensorInstance {
                    tensor: t,
                    index: i,
                    layer: t.layer,
                });
                i += 1;
                continue;
            }
            // the block of entries of the same run
            let mut j = i;
            while j < ts.len() && ts[j].layer == t.layer && ts[j].repeat == t.repeat {
                j += 1;
            }
            let first = t.layer.unwrap_or(0);
            for l in first..first.saturating_add(t.repeat) {
                for (k, e) in ts[i..j].iter().enumerate() {
                    out.push(TensorInstance {
                        tensor: e,
                        index: i + k,
                        layer: Some(l),
                    });
                }
            }
            i = j;
        }
        out.into_iter()
    }

    /// [`Self::instances`] of an inventory with strided runs: the tensors before the first layer,
    /// then each layer's tensors in inventory order, then the rest.
    fn instances_by_layer(&self) -> Vec<TensorInstance<'_>> {
        let ts = &self.tensors;
        let first_layered = ts
            .iter()
            .position(|t| t.layer.is_some())
            .unwrap_or(ts.len());
        let mut layered: Vec<TensorInstance<'_>> = Vec::new();
        let mut outside: (Vec<TensorInstance<'_>>, Vec<TensorInstance<'_>>) = Default::default();
        for (index, t) in ts.iter().enumerate() {
            if t.layer.is_none() {
                let side = if index < first_layered {
                    &mut outside.0
                } else {
                    &mut outside.1
                };
                side.push(TensorInstance {
                    tensor: t,
                    index,
                    layer: None,
                });
                continue;
            }
            layered.extend(t.layers().map(|l| TensorInstance {
                tensor: t,
                index,
                layer: Some(l),
            }));
        }
        layered.sort_by_key(|i| (i.layer, i.index));
        let (mut out, after) = outside;
        out.extend(layered);
        out.extend(after);
        out
    }

    /// The per-model facts every estimate reuses (tensor groups, per-layer tensors, runs of
    /// identical layers, parameter counts), computed on the first call.
    pub fn derived(&self) -> &crate::derived::Derived {
        self.derived.get_or_init(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn llama8b() -> ModelSpec {
        crate::parse_config(
            crate::presets::find("meta-llama__Llama-3.1-8B")
                .unwrap()
                .json,
            None,
        )
        .unwrap()
    }

    #[test]
    fn a_run_entry_is_named_for_each_of_its_layers() {
        let s = llama8b();
        let q = s
            .tensors
            .iter()
            .find(|t| t.name.ends_with("q_proj.weight"))
            .unwrap();
        assert_eq!((q.layer, q.repeat), (Some(0), 32));
        assert_eq!(
            q.name_in_layer(17),
            "model.layers.17.self_attn.q_proj.weight"
        );
        assert!(q.in_layer(31) && !q.in_layer(32));
    }

    #[test]
    fn instances_list_every_tensor_layer_by_layer_like_a_per_layer_inventory() {
        let s = llama8b();
        let names: Vec<String> = s.instances().map(|i| i.name().into_owned()).collect();
        // embed + 32 × 9 + final norm + lm_head = 291, the per-layer inventory's count.
        assert_eq!(names.len(), 291);
        assert_eq!(names[0], "model.embed_tokens.weight");
        assert_eq!(names[1], "model.layers.0.self_attn.q_proj.weight");
        assert_eq!(names[10], "model.layers.1.self_attn.q_proj.weight");
        assert_eq!(names[289], "model.norm.weight");
        assert_eq!(names[290], "lm_head.weight");
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), 291);
    }
}
