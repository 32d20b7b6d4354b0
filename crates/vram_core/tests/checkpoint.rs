//! safetensors headers: the reader's refusals, and exact counts from headers built from the real
//! tensor names and shapes of bundled configs (plain, GPTQ-packed, bitsandbytes 4-bit), compared
//! with the config's own reading.

use proptest::prelude::*;
use vram_core::checkpoint::{attach, count};
use vram_core::safetensors_file::{encode_header, parse_header, parse_index, SafetensorsError};
use vram_core::{parse_config, presets, ModelSpec};

fn spec(id: &str) -> ModelSpec {
    parse_config(presets::find(id).unwrap().json, None).unwrap()
}

/// The tensors of `spec` as (name, shape), one per layer.
fn tensors(spec: &ModelSpec) -> Vec<(String, Vec<u64>, bool)> {
    spec.instances()
        .map(|i| {
            (
                i.name().into_owned(),
                i.tensor.shape.to_vec(),
                i.tensor.linear.is_some()
                    && i.tensor.shape.len() == 2
                    && !i.name().starts_with("lm_head"),
            )
        })
        .collect()
}

fn header(entries: &[(String, &str, Vec<u64>)]) -> Vec<u8> {
    let refs: Vec<(&str, &str, &[u64])> = entries
        .iter()
        .map(|(n, d, s)| (n.as_str(), *d, s.as_slice()))
        .collect();
    encode_header(&refs, &[("format", "pt")]).unwrap()
}

#[test]
fn a_bf16_checkpoint_header_counts_exactly_what_the_config_says() {
    // Llama-3.2-1B-Instruct: tied embeddings, published 1,235,814,400 parameters
    let mut s = spec("meta-llama__Llama-3.2-1B-Instruct");
    let entries: Vec<(String, &str, Vec<u64>)> = tensors(&s)
        .into_iter()
        .map(|(n, sh, _)| (n, "BF16", sh))
        .collect();
    let h = parse_header(&header(&entries)).unwrap();
    let c = count(std::slice::from_ref(&h), None);
    assert_eq!(c.params, 1_235_814_400);
    assert_eq!(c.data_bytes, 2 * 1_235_814_400);
    assert_eq!(c.by_dtype.len(), 1);
    assert_eq!(c.quantization, None);
    assert!(attach(&mut s, c).is_empty(), "no disagreement");
    let doc = vram_core::estimate(
        &s,
        &vram_core::Scenario::inference(),
        vram_core::Sections::default(),
    );
    assert_eq!(doc.model.support, "header");
    assert_eq!(doc.parameters.total, 1_235_814_400);
    assert_eq!(doc.checkpoint.unwrap().files, 1);
}

#[test]
fn gptq_and_bnb_4bit_packing_is_unpacked_and_state_is_not_counted() {
    let s = spec("meta-llama__Llama-3.2-1B-Instruct");
    let mut gptq = Vec::new();
    let mut bnb = Vec::new();
    for (name, shape, linear) in tensors(&s) {
        if linear {
            let (out, inp) = (shape[0], shape[1]);
            let base = name.trim_end_matches(".weight").to_string();
            gptq.push((format!("{base}.qweight"), "I32", vec![inp / 8, out]));
            gptq.push((format!("{base}.qzeros"), "I32", vec![inp / 128, out / 8]));
            gptq.push((format!("{base}.scales"), "F16", vec![inp / 128, out]));
            gptq.push((format!("{base}.g_idx"), "I32", vec![inp]));
            bnb.push((name.clone(), "U8", vec![out * inp / 2, 1]));
            bnb.push((format!("{name}.absmax"), "F32", vec![out * inp / 64]));
            bnb.push((format!("{name}.quant_map"), "F32", vec![16]));
            bnb.push((
                format!("{name}.quant_state.bitsandbytes__nf4"),
                "U8",
                vec![100],
            ));
        } else {
            gptq.push((name.clone(), "F16", shape.clone()));
            bnb.push((name, "BF16", shape));
        }
    }
    let g = count(&[parse_header(&header(&gptq)).unwrap()], Some(4));
    assert_eq!(g.params, 1_235_814_400);
    assert_eq!(g.quantization.as_deref(), Some("gptq/awq 4-bit"));
    assert!(g.quant_state_bytes > 0);
    let b = count(&[parse_header(&header(&bnb)).unwrap()], None);
    assert_eq!(b.params, 1_235_814_400);
    assert_eq!(b.quantization.as_deref(), Some("bnb 4-bit"));
}

#[test]
fn shards_are_summed_and_a_missing_tensor_is_named() {
    let mut s = spec("meta-llama__Llama-3.2-1B-Instruct");
    let entries: Vec<(String, &str, Vec<u64>)> = tensors(&s)
        .into_iter()
        .map(|(n, sh, _)| (n, "BF16", sh))
        .collect();
    let (a, b) = entries.split_at(60);
    let c = count(
        &[
            parse_header(&header(a)).unwrap(),
            parse_header(&header(&b[1..])).unwrap(),
        ],
        None,
    );
    assert_eq!(c.files, 2);
    let notes = attach(&mut s, c);
    assert!(
        notes[0].starts_with("parameters: the safetensors headers hold"),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.contains("not in the headers") && n.contains(&b[0].0)),
        "{notes:?}"
    );
}

#[test]
fn an_index_alone_gives_the_exact_weight_bytes() {
    let idx = parse_index(br#"{"metadata": {"total_size": 16060522496}, "weight_map": {"a.weight": "model-00001-of-00002.safetensors", "b.weight": "model-00002-of-00002.safetensors"}}"#).unwrap();
    let c = vram_core::checkpoint::from_index(&idx);
    assert_eq!((c.data_bytes, c.files, c.tensors), (16_060_522_496, 2, 2));
}

#[test]
fn malformed_headers_are_refused_with_what_was_expected() {
    let ok = header(&[("a".into(), "F32", vec![2, 3])]);
    // every prefix asks for more bytes than it has
    for n in 0..ok.len() {
        match parse_header(&ok[..n]) {
            Err(SafetensorsError::NeedMore { needed_bytes }) => assert!(needed_bytes > n as u64),
            other => panic!("prefix {n}: {other:?}"),
        }
    }
    let huge = (200_000_000u64).to_le_bytes();
    assert!(matches!(
        parse_header(&huge),
        Err(SafetensorsError::TooLarge { .. })
    ));
    let with = |json: &str| {
        let mut b = (json.len() as u64).to_le_bytes().to_vec();
        b.extend(json.as_bytes());
        parse_header(&b).unwrap_err().to_string()
    };
    assert!(with(r#"{"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}}"#).contains("duplicate key"));
    assert!(
        with(r#"{"a": {"dtype": "F33", "shape": [2], "data_offsets": [0, 8]}}"#)
            .contains("a safetensors dtype")
    );
    assert!(
        with(r#"{"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}"#)
            .contains("12 bytes")
    );
    assert!(
        with(r#"{"a": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}"#)
            .contains("to start at 0")
    );
    assert!(with(
        r#"{"a": {"dtype": "F32", "shape": [4294967296, 4294967296, 16], "data_offsets": [0, 8]}}"#
    )
    .contains("fits in 64 bits"));
    assert!(with("[1, 2]").contains("a JSON object"));
    let mut bad = 4u64.to_le_bytes().to_vec();
    bad.extend([0xff, 0xfe, b'{', b'}']);
    assert!(parse_header(&bad)
        .unwrap_err()
        .to_string()
        .contains("UTF-8"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = parse_header(&bytes);
        let _ = parse_index(&bytes);
    }

    #[test]
    fn mutated_headers_never_panic(i in 0usize..200, b in any::<u8>()) {
        let mut h = header(&[("x.weight".into(), "BF16", vec![4, 8]), ("y.bias".into(), "F32", vec![8])]);
        let n = h.len();
        h[i % n] = b;
        if let Ok(p) = parse_header(&h) {
            let _ = count(&[p], None);
        }
    }
}

#[test]
fn a_mixtral_checkpoint_with_one_tensor_per_expert_agrees_with_the_fused_module_tree() {
    // Mixtral-8x7B's published shards name each expert (`block_sparse_moe.experts.3.w1.weight`);
    // transformers 5 fuses them on load into `mlp.experts.gate_up_proj` / `down_proj`.
    let mut s = spec("mistralai__Mixtral-8x7B-v0.1");
    let mut entries: Vec<(String, &str, Vec<u64>)> = Vec::new();
    for (name, shape, _) in tensors(&s) {
        let hub = name.replace(".mlp.", ".block_sparse_moe.");
        if let Some(base) = hub.strip_suffix("experts.gate_up_proj") {
            let (e, two_i, h) = (shape[0], shape[1], shape[2]);
            for x in 0..e {
                for w in ["w1", "w3"] {
                    entries.push((
                        format!("{base}experts.{x}.{w}.weight"),
                        "BF16",
                        vec![two_i / 2, h],
                    ));
                }
            }
        } else if let Some(base) = hub.strip_suffix("experts.down_proj") {
            for x in 0..shape[0] {
                entries.push((
                    format!("{base}experts.{x}.w2.weight"),
                    "BF16",
                    vec![shape[1], shape[2]],
                ));
            }
        } else {
            entries.push((hub, "BF16", shape));
        }
    }
    assert!(entries
        .iter()
        .any(|e| e.0 == "model.layers.31.block_sparse_moe.experts.7.w2.weight"));
    let h = parse_header(&header(&entries)).unwrap();
    let c = count(std::slice::from_ref(&h), None);
    assert_eq!(c.params, 46_702_792_704);
    assert!(
        attach(&mut s, c).is_empty(),
        "per-expert names map onto the fused tensors"
    );
}

#[test]
fn an_exaone_checkpoint_with_its_gpt2_style_names_agrees_with_the_llama_module_tree() {
    // EXAONE-3.0-7.8B's shards say `transformer.h.3.attn.attention.q_proj.weight`,
    // `mlp.c_fc_0`…; transformers 5.2x loads them into LlamaForCausalLM's names.
    let mut s = spec("LGAI-EXAONE__EXAONE-3.0-7.8B-Instruct");
    let entries: Vec<(String, &str, Vec<u64>)> = tensors(&s)
        .into_iter()
        .map(|(n, sh, _)| {
            let hub = n
                .replace("model.embed_tokens.", "transformer.wte.")
                .replace("model.layers.", "transformer.h.")
                .replace("model.norm.", "transformer.ln_f.")
                .replace(".self_attn.o_proj.", ".attn.attention.out_proj.")
                .replace(".self_attn.", ".attn.attention.")
                .replace(".input_layernorm.", ".ln_1.")
                .replace(".post_attention_layernorm.", ".ln_2.")
                .replace(".mlp.gate_proj.", ".mlp.c_fc_0.")
                .replace(".mlp.up_proj.", ".mlp.c_fc_1.")
                .replace(".mlp.down_proj.", ".mlp.c_proj.");
            (hub, "BF16", sh)
        })
        .collect();
    assert!(entries
        .iter()
        .any(|e| e.0 == "transformer.h.31.attn.attention.out_proj.weight"));
    let h = parse_header(&header(&entries)).unwrap();
    let c = count(std::slice::from_ref(&h), None);
    assert_eq!(c.params, 7_818_448_896);
    assert!(
        attach(&mut s, c).is_empty(),
        "EXAONE's names map onto the Llama tree"
    );
}
