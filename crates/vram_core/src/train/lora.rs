//! LoRA / QLoRA adapters as `peft` builds them: which `nn.Linear` modules are targeted, the adapters'
//! shapes (`lora_A: [r, in]`, `lora_B: [out, r]`, no bias) and the exact trainable count.
//!
//! Sources:
//! - default targets: `peft/utils/constants.py`, `TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING`;
//! - matching: `peft/tuners/tuners_utils.py`, `check_target_module_exists` (a module matches a target
//!   when its full name equals it or ends with `"." + target`);
//! - `all-linear`: `peft/tuners/tuners_utils.py`, `_maybe_include_all_linear_layers` (every
//!   `nn.Linear`/`Conv1D` leaf name except the output embedding, `lm_head`);
//! - adapter dtype: `peft/tuners/lora/layer.py` creates the adapters in fp32, and `get_peft_model(...,
//!   autocast_adapter_dtype=True)` (the default) keeps bf16/fp16 adapters in fp32.
//! - fused experts (peft 0.21 with transformers 5): `peft/utils/transformers_weight_conversion.py`,
//!   `_convert_peft_config_moe`, moves the v4 expert and router names (`gate_proj`, `up_proj`,
//!   `down_proj` / `w1`, `w3`, `w2`, and `gate`) from `target_modules` to `target_parameters`
//!   (`gate_up_proj` at twice the rank, `down_proj`, `gate.weight`) for the model types transformers
//!   converts to the qwen2_moe / mixtral checkpoint pattern; `lora.ParamWrapper` adapts each matched
//!   parameter with `lora_A: [r·E, in]`, `lora_B: [out, r·E]`. A converted name no longer targets
//!   `nn.Linear` modules of that name (dense MLPs, shared experts), as peft removes it.

use crate::error::ScenarioError;
use crate::scenario::{Lora, LoraTargets};
use crate::spec::{Component, ModelSpec, TensorSpec};

/// peft's default LoRA targets for a `model_type` (`None`: peft asks the user to name them).
/// Source: `TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING` in `peft/utils/constants.py`.
pub fn default_targets(model_type: &str) -> Option<&'static [&'static str]> {
    Some(match model_type {
        "t5" | "mt5" => &["q", "v"],
        "gpt2" | "gpt_bigcode" => &["c_attn"],
        "bloom" | "gpt_neox" | "falcon" | "chatglm" => &["query_key_value"],
        "bert" | "roberta" | "xlm-roberta" | "electra" | "layoutlm" => &["query", "value"],
        "phi" => &["q_proj", "v_proj", "fc1", "fc2"],
        "bart" | "opt" | "gptj" | "gpt_neo" | "llama" | "llama4" | "mistral" | "mixtral"
        | "stablelm" | "gemma" | "gemma2" | "gemma3_text" | "qwen2" | "qwen3" => {
            &["q_proj", "v_proj"]
        }
        "codegen" => &["qkv_proj"],
        "mpt" => &["Wqkv"],
        _ => return None,
    })
}

/// One adapted module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdaptedLinear {
    /// Module path (`model.layers.0.self_attn.q_proj`).
    pub module: String,
    /// Layer index, if the module is inside a layer: the first of `repeat` layers, `stride` apart,
    /// whose module of this role is adapted.
    pub layer: Option<u32>,
    /// Layers adapted alike (1 outside the layers).
    pub repeat: u32,
    /// Distance between those layers (1: consecutive).
    pub stride: u32,
    /// Input features of the base linear.
    pub in_features: u64,
    /// Output features of the base linear.
    pub out_features: u64,
}

impl AdaptedLinear {
    /// Whether layer `l` holds one of these adapted modules.
    pub fn in_layer(&self, l: u32) -> bool {
        crate::spec::in_run(self.layer, self.repeat, self.stride, l)
    }

    /// `r · (in + out)`: `lora_A` is `[r, in]`, `lora_B` is `[out, r]`, neither has a bias.
    pub fn params(&self, r: u64) -> u64 {
        r.saturating_mul(self.in_features.saturating_add(self.out_features))
    }
}

/// A LoRA on a parameter rather than a module (peft `target_parameters`, `lora.ParamWrapper`): the
/// fused expert stacks `[E, out, in]` and the router weight `[E, in]` of MoE layers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamAdapter {
    /// The adapted tensor (index into the spec's inventory; every layer of its run is adapted).
    pub tensor: usize,
    /// Experts stacked in the parameter (`ParamWrapper.num_experts`; 1 for the router's 2-D weight).
    pub experts: u64,
    /// Input features of one expert.
    pub in_features: u64,
    /// Output features of one expert.
    pub out_features: u64,
    /// Rank (twice the scenario's for `gate_up_proj`, which fuses two v4 targets).
    pub r: u64,
}

impl ParamAdapter {
    /// `r·E·(in + out)`: `lora_A` is `[r·E, in]`, `lora_B` is `[out, r·E]` (`ParamWrapper.update_layer`).
    pub fn params(&self) -> u64 {
        self.r
            .saturating_mul(self.experts)
            .saturating_mul(self.in_features.saturating_add(self.out_features))
    }

    /// Whether the forward materializes the adapted stack `W + scaling·B·A` (`_LoraFactorsProxy`'s
    /// `baddbmm`, one `[E, out, in]` tensor in the parameter's dtype) rather than a small delta.
    pub fn materializes_stack(&self) -> bool {
        self.experts > 1
    }
}

/// The adapters of a LoRA scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoraPlan {
    /// Rank.
    pub r: u64,
    /// Leaf names targeted (after resolving `default` / `all-linear`).
    pub target_names: Vec<String>,
    /// Every adapted module.
    pub adapted: Vec<AdaptedLinear>,
    /// Σ r·(in + out) over the adapted modules: `model.print_trainable_parameters()`'s count.
    pub trainable_params: u64,
    /// Adapted modules by base shape `(in_features, out_features)`, with how many have it (the
    /// persistent budget multiplies instead of iterating).
    pub shapes: Vec<((u64, u64), u64)>,
    /// For each tensor of the spec (by index), whether it is the weight of an adapted module in
    /// every layer it stands for.
    pub adapted_tensor: Vec<bool>,
    /// `(tensor index, layer)` of adapted weights whose entry is adapted in some of its layers only
    /// (targets that name layers, e.g. `layers.1.self_attn.q_proj`).
    pub adapted_in_layer: Vec<(usize, u32)>,
    /// Parameters adapted directly (fused MoE experts and routers under peft 0.21).
    pub param_adapters: Vec<ParamAdapter>,
}

impl LoraPlan {
    /// The rank if the spec's tensor number `index` is an adapted weight in `layer` (its first layer
    /// or `None` for tensors outside the layers).
    pub fn rank_for_index(&self, index: usize, layer: Option<u32>) -> Option<u64> {
        let whole = self.adapted_tensor.get(index).copied().unwrap_or(false);
        let here = layer.is_some_and(|l| self.adapted_in_layer.contains(&(index, l)));
        (whole || here).then_some(self.r)
    }

    /// The parameter adapter of the spec's tensor number `index`, if it has one.
    pub fn param_adapter(&self, index: usize) -> Option<&ParamAdapter> {
        self.param_adapters.iter().find(|a| a.tensor == index)
    }
}

/// How peft 0.21 renames a MoE model's v4 LoRA targets for transformers 5's fused experts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MoeRename {
    /// `mixtral`: `w1` + `w3` → `gate_up_proj`, `w2` → `down_proj`, `gate` → `gate.weight`.
    Mixtral,
    /// `qwen2_moe` pattern: `gate_proj` + `up_proj` → `gate_up_proj`, `down_proj`, `gate`.
    Qwen2Moe,
}

impl MoeRename {
    /// Model types that transformers' `_MODEL_TO_CONVERSION_PATTERN` (5.24; peft 0.21 adds
    /// `mixtral`) maps to a pattern with fused-expert targets. `qwen2_moe` itself is not a key
    /// there, so its targets stay as written.
    fn of(model_type: &str) -> Option<Self> {
        match model_type {
            "mixtral" => Some(Self::Mixtral),
            "qwen3_moe" | "deepseek_v2" | "deepseek_v3" | "olmoe" | "glm4_moe" | "dots1"
            | "ernie4_5_moe" | "hunyuan_v1_moe" | "qwen3_next" | "flex_olmo" | "exaone_moe"
            | "cohere2_moe" => Some(Self::Qwen2Moe),
            _ => None,
        }
    }

    /// `(v4 name, v5 parameter)` pairs (`_MOE_TARGET_MODULE_MAPPING`).
    fn mapping(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Self::Mixtral => &[
                ("gate", "gate.weight"),
                ("w1", "gate_up_proj"),
                ("w3", "gate_up_proj"),
                ("w2", "down_proj"),
            ],
            Self::Qwen2Moe => &[
                ("gate", "gate.weight"),
                ("gate_proj", "gate_up_proj"),
                ("up_proj", "gate_up_proj"),
                ("down_proj", "down_proj"),
            ],
        }
    }
}

/// Parameter targets by their transformers 5 name, with the rank multiplier.
type ParamTargets = Vec<(&'static str, u64)>;

/// peft 0.21's `_convert_peft_config_moe`: splits the resolved targets into the module targets that
/// remain and the parameter targets with their rank multiplier. `all_linear` adds every v4 name.
fn convert_moe_targets(
    rename: MoeRename,
    targets: Vec<String>,
    all_linear: bool,
) -> Result<(Vec<String>, ParamTargets), ScenarioError> {
    let mapping = rename.mapping();
    let mut targets = targets;
    if all_linear {
        for (old, _) in mapping {
            if !targets.iter().any(|t| t == old) {
                targets.push(old.to_string());
            }
        }
    }
    let mut modules = Vec::new();
    let mut params: ParamTargets = Vec::new();
    let mut fused_seen: Vec<&'static str> = Vec::new();
    for t in targets {
        let hit = mapping
            .iter()
            .find(|(old, _)| t == *old || t.ends_with(&format!(".{old}")));
        match hit {
            None => modules.push(t),
            Some(&(old, new)) => {
                if !params.iter().any(|(p, _)| *p == new) {
                    params.push((new, 1));
                }
                if new == "gate_up_proj" && !fused_seen.contains(&old) {
                    fused_seen.push(old);
                }
            }
        }
    }
    let fused: Vec<&str> = mapping
        .iter()
        .filter(|(_, new)| *new == "gate_up_proj")
        .map(|(old, _)| *old)
        .collect();
    if !fused_seen.is_empty() && fused_seen.len() < fused.len() {
        let missing: Vec<&str> = fused
            .iter()
            .copied()
            .filter(|o| !fused_seen.contains(o))
            .collect();
        return Err(ScenarioError::Invalid {
            field: "lora.targets".into(),
            expected: format!(
                "{} together: peft fuses them into gate_up_proj (\"Cannot convert PEFT target(s) …                  without also targeting {}\")",
                fused.join(" and "),
                missing.join(", ")
            ),
            found: fused_seen.join(","),
        });
    }
    if fused_seen.len() == fused.len() {
        for p in &mut params {
            if p.0 == "gate_up_proj" {
                p.1 = fused.len() as u64;
            }
        }
    }
    Ok((modules, params))
}

/// The parameter adapters peft creates for `params` (v5 names with rank multipliers): a tensor
/// matches when its name ends with `"." + name` (`BaseTuner._inject_parameters`).
fn param_adapters(spec: &ModelSpec, r: u64, params: &[(&str, u64)]) -> Vec<ParamAdapter> {
    let mut out = Vec::new();
    for (index, t) in spec.tensors.iter().enumerate() {
        let Some(&(_, mult)) = params
            .iter()
            .find(|(name, _)| t.name.ends_with(&format!(".{name}")))
        else {
            continue;
        };
        // ParamWrapper: a 3-D `[E, out, in]` stack (transformers' experts store out before in:
        // `swap_in_out_features`), or a 2-D `[out, in]` weight with one "expert".
        let (experts, out_f, in_f) = match t.shape.as_slice() {
            [e, o, i] => (*e, *o, *i),
            [o, i] => (1, *o, *i),
            _ => continue,
        };
        out.push(ParamAdapter {
            tensor: index,
            experts,
            in_features: in_f,
            out_features: out_f,
            r: r.saturating_mul(mult),
        });
    }
    out
}

/// Module path of a weight tensor (`...q_proj.weight` → `...q_proj`).
pub fn module_path(tensor_name: &str) -> &str {
    tensor_name
        .rsplit_once('.')
        .map_or(tensor_name, |(module, _)| module)
}

fn is_output_head(t: &TensorSpec) -> bool {
    t.component == Component::LmHead || t.module_leaf() == "lm_head"
}

/// Resolves the targets and counts the adapters exactly as peft does.
pub fn plan(spec: &ModelSpec, lora: &Lora) -> Result<LoraPlan, ScenarioError> {
    let linears: Vec<&TensorSpec> = spec.tensors.iter().filter(|t| t.linear.is_some()).collect();
    let target_names: Vec<String> = match &lora.targets {
        LoraTargets::Default => {
            let names = default_targets(&spec.text_model_type)
                .or_else(|| default_targets(&spec.model_type))
                .ok_or_else(|| ScenarioError::Invalid {
                    field: "lora.targets".into(),
                    expected: format!(
                        "explicit target modules or all-linear: peft has no default targets for \
                         model_type {:?}",
                        spec.text_model_type
                    ),
                    found: "default".into(),
                })?;
            names.iter().map(|s| s.to_string()).collect()
        }
        LoraTargets::AllLinear => {
            let mut names: Vec<String> = Vec::new();
            for t in &linears {
                if is_output_head(t) {
                    continue;
                }
                let leaf = t.module_leaf().to_string();
                if !names.contains(&leaf) {
                    names.push(leaf);
                }
            }
            names
        }
        LoraTargets::Modules(m) => {
            if m.is_empty() {
                return Err(ScenarioError::Invalid {
                    field: "lora.targets".into(),
                    expected: "at least one module name (q_proj,v_proj) or all-linear".into(),
                    found: "an empty list".into(),
                });
            }
            m.clone()
        }
    };
    let all_linear = matches!(lora.targets, LoraTargets::AllLinear);
    let (target_names, param_targets) = match MoeRename::of(&spec.text_model_type) {
        Some(rename) => convert_moe_targets(rename, target_names, all_linear)?,
        None => (target_names, Vec::new()),
    };
    let param_adapters = param_adapters(spec, lora.r, &param_targets);
    let mut adapted = Vec::new();
    let mut adapted_tensor = vec![false; spec.tensors.len()];
    let mut adapted_in_layer = Vec::new();
    let mut shapes: Vec<((u64, u64), u64)> = Vec::new();
    let hits = |module: &str| {
        target_names.iter().any(|target| {
            module == target
                || module
                    .strip_suffix(target.as_str())
                    .is_some_and(|p| p.ends_with('.'))
        })
    };
    // A target without a dot names a leaf, which is the same in every layer of a run; a dotted one
    // may name a layer, so it is matched layer by layer.
    let leaf_targets = target_names.iter().all(|t| !t.contains('.'));
    for (index, t) in spec.tensors.iter().enumerate() {
        let Some(shape) = t.linear else { continue };
        if all_linear && is_output_head(t) {
            continue;
        }
        let module = module_path(&t.name);
        let key = (shape.in_features, shape.out_features);
        let mut add = |module: String, layer: Option<u32>, repeat: u32, stride: u32| {
            match shapes.iter_mut().find(|(k, _)| *k == key) {
                Some((_, n)) => *n += u64::from(repeat),
                None => shapes.push((key, u64::from(repeat))),
            }
            adapted.push(AdaptedLinear {
                module,
                layer,
                repeat,
                stride,
                in_features: shape.in_features,
                out_features: shape.out_features,
            });
        };
        match t.layer {
            Some(_) if t.repeat > 1 && !leaf_targets => {
                // layer by layer: adapted layers next to each other in the run become one entry
                let stride = t.stride.max(1);
                let mut run: Option<(u32, u32, String)> = None;
                for l in t.layers() {
                    let name = t.name_in_layer(l);
                    if hits(module_path(&name)) {
                        adapted_in_layer.push((index, l));
                        match &mut run {
                            Some((_, n, _)) => *n += 1,
                            None => run = Some((l, 1, module_path(&name).to_string())),
                        }
                    } else if let Some((start, n, m)) = run.take() {
                        add(m, Some(start), n, stride);
                    }
                }
                if let Some((start, n, m)) = run.take() {
                    add(m, Some(start), n, stride);
                }
            }
            _ => {
                if hits(module) {
                    // Several weights of one module (none in the supported models) adapt it once, as
                    // `adapted` lists it once per weight too.
                    adapted_tensor[index] = true;
                    add(
                        module.to_string(),
                        t.layer,
                        t.repeat.max(1),
                        t.stride.max(1),
                    );
                }
            }
        }
    }
    if adapted.is_empty() && param_adapters.is_empty() {
        return Err(ScenarioError::Invalid {
            field: "lora.targets".into(),
            expected: "module names that exist in the model (peft raises \"Target modules ... not \
                       found in the base model\")"
                .into(),
            found: target_names.join(","),
        });
    }
    let trainable_params = adapted
        .iter()
        .map(|a| a.params(lora.r).saturating_mul(u64::from(a.repeat)))
        .chain(
            param_adapters
                .iter()
                .map(|a| a.params().saturating_mul(spec.tensors[a.tensor].count())),
        )
        .fold(0u64, u64::saturating_add);
    Ok(LoraPlan {
        r: lora.r,
        target_names,
        adapted,
        trainable_params,
        shapes,
        adapted_tensor,
        adapted_in_layer,
        param_adapters,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presets;
    use crate::scenario::BaseQuant;

    fn llama8b() -> ModelSpec {
        let text = presets::find("meta-llama__Llama-3.1-8B").unwrap().json;
        crate::parse_config(text, None).unwrap()
    }

    fn lora(targets: LoraTargets) -> Lora {
        Lora {
            r: 8,
            alpha: 16,
            targets,
            base_quant: BaseQuant::None,
        }
    }

    #[test]
    fn llama_default_targets_q_and_v_count_like_peft() {
        // q_proj 4096→4096: 8·(4096+4096) = 65,536; v_proj 4096→1024: 8·(4096+1024) = 40,960;
        // (65,536 + 40,960) · 32 layers = 3,407,872 — peft's print_trainable_parameters for r=8.
        let p = plan(&llama8b(), &lora(LoraTargets::Default)).unwrap();
        assert_eq!(p.target_names, vec!["q_proj", "v_proj"]);
        assert_eq!(p.adapted.iter().map(|a| a.repeat).sum::<u32>(), 64);
        assert_eq!(p.trainable_params, 3_407_872);
    }

    #[test]
    fn llama_all_linear_excludes_lm_head() {
        // per layer: q 8·8192 + k 8·5120 + v 8·5120 + o 8·8192 + gate 8·18432 + up 8·18432
        // + down 8·18432 = 8 · 82,176 = 657,408; × 32 = 20,971,520.
        let p = plan(&llama8b(), &lora(LoraTargets::AllLinear)).unwrap();
        assert_eq!(p.trainable_params, 20_971_520);
        assert!(p.adapted.iter().all(|a| !a.module.contains("lm_head")));
    }

    #[test]
    fn a_target_that_names_one_layer_adapts_only_that_layer_of_a_run() {
        // The 32 identical layers are one run in the inventory; `layers.1.self_attn.q_proj` still
        // adapts layer 1 alone: 8·(4096 + 4096) = 65,536, as peft counts it.
        let s = llama8b();
        let p = plan(
            &s,
            &lora(LoraTargets::Modules(vec![
                "layers.1.self_attn.q_proj".into()
            ])),
        )
        .unwrap();
        assert_eq!(p.trainable_params, 65_536);
        assert_eq!(p.adapted.len(), 1);
        assert_eq!(p.adapted[0].module, "model.layers.1.self_attn.q_proj");
        assert_eq!((p.adapted[0].layer, p.adapted[0].repeat), (Some(1), 1));
        let q = s
            .tensors
            .iter()
            .position(|t| t.name.ends_with("q_proj.weight"))
            .unwrap();
        assert_eq!(p.rank_for_index(q, Some(1)), Some(8));
        assert_eq!(p.rank_for_index(q, Some(0)), None);
        // a dotted target that is the same in every layer adapts all 32: 65,536 × 32.
        let all = plan(
            &s,
            &lora(LoraTargets::Modules(vec!["self_attn.q_proj".into()])),
        )
        .unwrap();
        assert_eq!(all.trainable_params, 65_536 * 32);
        assert_eq!(all.adapted.iter().map(|a| a.repeat).sum::<u32>(), 32);
    }

    #[test]
    fn unknown_target_is_rejected_by_field_name() {
        let err = plan(
            &llama8b(),
            &lora(LoraTargets::Modules(vec!["nonexistent".into()])),
        )
        .unwrap_err();
        assert!(err.to_string().starts_with("lora.targets:"));
    }
}
