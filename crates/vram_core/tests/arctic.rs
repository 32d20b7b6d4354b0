//! Snowflake Arctic, the Dense-MoE hybrid: a 10B dense transformer whose every layer also has a
//! residual 128 × 3.66B MoE MLP, "480B total and 17B active parameters chosen using a top-2
//! gating" (Snowflake-Labs/snowflake-arctic README). Its modelling code could not be run here (the
//! repository's remote code is not reachable offline), so the header is built from the tensor names
//! its own converter writes (`training/arctic/ds_to_hf_converter.py` in Snowflake-Labs/snowflake-arctic),
//! and the count is checked against each published figure. The config is a reconstruction that
//! reproduces all four of them (tests/headers/configs/Snowflake__snowflake-arctic-instruct.json).

use vram_core::checkpoint::{attach, count};
use vram_core::safetensors_file::{encode_header, parse_header};
use vram_core::spec::Component;
use vram_core::{parse_config, ParamCounts};

const CONFIG: &str = include_str!("headers/configs/Snowflake__snowflake-arctic-instruct.json");

#[test]
fn arctic_counts_its_published_dense_part_experts_and_total() {
    let spec = parse_config(CONFIG, None).unwrap();
    let c = ParamCounts::of(&spec);
    let experts = c.by_component[&Component::Experts];
    // one expert: w1, w3 [4864, 7168] + w2 [7168, 4864] = 104,595,456 per layer; × 35 layers
    assert_eq!(experts, 128 * 35 * 3 * 4_864 * 7_168);
    let per_expert_all_layers = experts / 128;
    assert_eq!(
        per_expert_all_layers, 3_660_840_960,
        "the published 3.66B per expert"
    );
    let dense = c.total - experts;
    assert!(
        (9.5e9..10.5e9).contains(&(dense as f64)),
        "the published 10B dense part: {dense}"
    );
    // per layer: attention 117,440,512 + residual MLP 154,140,672 + 3 norms 21,504 + router 917,504
    // + experts 13,388,218,368; × 35 + embedding and head 2 × 229,376,000 + final norm 7,168
    assert_eq!(c.total, 478_584_608_768);
    assert_eq!((c.total as f64 / 1e10).round() as u64, 48, "480B total");
    // top-2 of 128 experts + the dense part
    assert_eq!(c.active, dense + 2 * per_expert_all_layers);
    assert_eq!((c.active as f64 / 1e9).round() as u64, 17, "17B active");
}

#[test]
fn an_arctic_checkpoint_named_as_snowflakes_converter_writes_it_agrees_with_the_config() {
    let mut spec = parse_config(CONFIG, None).unwrap();
    let (h, i, kv) = (7_168u64, 4_864u64, 8 * 128u64);
    let mut names: Vec<(String, Vec<u64>)> = vec![
        ("model.embed_tokens.weight".into(), vec![32_000, h]),
        ("model.norm.weight".into(), vec![h]),
        ("lm_head.weight".into(), vec![32_000, h]),
    ];
    for l in 0..35 {
        let p = format!("model.layers.{l}");
        for n in [
            "input_layernorm",
            "post_attention_layernorm",
            "residual_layernorm",
        ] {
            names.push((format!("{p}.{n}.weight"), vec![h]));
        }
        names.push((format!("{p}.self_attn.q_proj.weight"), vec![h, h]));
        names.push((format!("{p}.self_attn.k_proj.weight"), vec![kv, h]));
        names.push((format!("{p}.self_attn.v_proj.weight"), vec![kv, h]));
        names.push((format!("{p}.self_attn.o_proj.weight"), vec![h, h]));
        for w in ["w1", "w3"] {
            names.push((format!("{p}.residual_mlp.{w}.weight"), vec![h, h]));
        }
        names.push((format!("{p}.residual_mlp.w2.weight"), vec![h, h]));
        names.push((format!("{p}.block_sparse_moe.gate.weight"), vec![128, h]));
        for e in 0..128 {
            let x = format!("{p}.block_sparse_moe.experts.{e}");
            names.push((format!("{x}.w1.weight"), vec![i, h]));
            names.push((format!("{x}.w3.weight"), vec![i, h]));
            names.push((format!("{x}.w2.weight"), vec![h, i]));
        }
    }
    let refs: Vec<(&str, &str, &[u64])> = names
        .iter()
        .map(|(n, s)| (n.as_str(), "BF16", s.as_slice()))
        .collect();
    let header = parse_header(&encode_header(&refs, &[("format", "pt")]).unwrap()).unwrap();
    let c = count(std::slice::from_ref(&header), None);
    assert_eq!(c.params, ParamCounts::of(&spec).total);
    assert!(attach(&mut spec, c).is_empty(), "names and count agree");
}
