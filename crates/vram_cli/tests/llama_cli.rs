//! `vram estimate --engine llama.cpp` and `vram fit` end to end, on configs and on GGUF files whose
//! header is real and whose data section is a hole (a sparse file: only the header is ever read).

mod common;
use common::{json_of, preset, vram};

use std::path::PathBuf;
use vram_core::gguf_file::{encode_header, GgufValue};

type Metadata = Vec<(String, GgufValue)>;
type Tensors = Vec<(String, Vec<u64>, u32)>;

/// The tensors and metadata of the tiny model.
fn tiny_parts() -> (Metadata, Tensors, u64) {
    let (path, data) = tiny_gguf("parts-source.gguf");
    let bytes = std::fs::read(&path).unwrap();
    let h = vram_core::gguf_file::parse_header(&bytes[..]).unwrap();
    let tensors = h
        .tensors
        .iter()
        .map(|t| (t.name.clone(), t.dims.clone(), t.ggml_type))
        .collect();
    (h.metadata.clone(), tensors, data)
}

#[test]
fn a_split_gguf_model_is_read_from_every_part() {
    let (meta, tensors, data) = tiny_parts();
    let dir = std::env::temp_dir().join(format!("vram-split-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let split = |no: u16| {
        vec![
            ("split.no".to_string(), GgufValue::U16(no)),
            ("split.count".to_string(), GgufValue::U16(2)),
            (
                "split.tensors.count".to_string(),
                GgufValue::I32(tensors.len() as i32),
            ),
        ]
    };
    let mut m1 = meta.clone();
    m1.extend(split(0));
    let (a, b) = tensors.split_at(7);
    std::fs::write(
        dir.join("tiny-00001-of-00002.gguf"),
        encode_header(3, &m1, a).unwrap(),
    )
    .unwrap();
    std::fs::write(
        dir.join("tiny-00002-of-00002.gguf"),
        encode_header(3, &split(1), b).unwrap(),
    )
    .unwrap();
    let first = dir.join("tiny-00001-of-00002.gguf");
    let doc = json_of(&vram(&[
        "estimate",
        first.to_str().unwrap(),
        "--infer",
        "--engine",
        "llama.cpp",
        "--json",
    ]));
    assert_eq!(doc["infer"]["weights_bytes"], data);
    assert_eq!(doc["model"]["name"], "tiny.gguf");
    std::fs::remove_file(dir.join("tiny-00002-of-00002.gguf")).unwrap();
    let out = vram(&[
        "estimate",
        first.to_str().unwrap(),
        "--infer",
        "--engine",
        "llama.cpp",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("part 2 of 2"));
}

/// A 2-layer llama-style GGUF (Q8_0 matrices, F32 norms) of 4096 wide layers, sparse to its full
/// size. Returns the path and the tensor data bytes.
fn tiny_gguf(name: &str) -> (PathBuf, u64) {
    let q8 = |n: u64| n / 32 * 34;
    let mut tensors: Vec<(String, Vec<u64>, u32)> = vec![
        ("token_embd.weight".into(), vec![4096, 32_000], 8),
        ("output_norm.weight".into(), vec![4096], 0),
        ("output.weight".into(), vec![4096, 32_000], 8),
    ];
    let mut data = q8(4096 * 32_000) * 2 + 4096 * 4;
    for l in 0..2 {
        for (n, dims) in [
            ("attn_q", vec![4096u64, 4096]),
            ("attn_k", vec![4096, 1024]),
            ("attn_v", vec![4096, 1024]),
            ("attn_output", vec![4096, 4096]),
            ("ffn_gate", vec![4096, 14_336]),
            ("ffn_up", vec![4096, 14_336]),
            ("ffn_down", vec![14_336, 4096]),
        ] {
            data += q8(dims.iter().product());
            tensors.push((format!("blk.{l}.{n}.weight"), dims, 8));
        }
        for n in ["attn_norm", "ffn_norm"] {
            data += 4096 * 4;
            tensors.push((format!("blk.{l}.{n}.weight"), vec![4096], 0));
        }
    }
    let u32v = |v: u32| GgufValue::U32(v);
    let meta: Vec<(String, GgufValue)> = vec![
        (
            "general.architecture".into(),
            GgufValue::Str("llama".into()),
        ),
        ("general.file_type".into(), u32v(7)),
        ("llama.block_count".into(), u32v(2)),
        ("llama.context_length".into(), u32v(8192)),
        ("llama.embedding_length".into(), u32v(4096)),
        ("llama.feed_forward_length".into(), u32v(14_336)),
        ("llama.attention.head_count".into(), u32v(32)),
        ("llama.attention.head_count_kv".into(), u32v(8)),
        (
            "tokenizer.ggml.tokens".into(),
            GgufValue::Array {
                elem_type: 8,
                len: 32_000,
                items: None,
            },
        ),
    ];
    let header = encode_header(3, &meta, &tensors).expect("header");
    let dir = std::env::temp_dir().join(format!("vram-llama-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, &header).expect("write");
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .expect("open");
    // every tensor is padded to 32 bytes in the file; these sizes are already multiples of 32
    f.set_len(header.len() as u64 + data)
        .expect("sparse data section");
    (path, data)
}

#[test]
fn a_sparse_gguf_file_is_estimated_from_its_header_alone() {
    let (path, data) = tiny_gguf("tiny-Q8_0.gguf");
    let doc = json_of(&vram(&[
        "estimate",
        path.to_str().unwrap(),
        "--infer",
        "--engine",
        "llama.cpp",
        "--seq",
        "4096",
        "--json",
    ]));
    let params = 2 * 4096 * 32_000
        + 4096
        + 2 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14_336 + 2 * 4096);
    assert_eq!(doc["parameters"]["total"], params);
    assert_eq!(doc["infer"]["weights_bytes"], data);
    assert_eq!(doc["infer"]["weights_format"], "Q8_0");
    assert_eq!(doc["infer"]["weights_format_source"], "gguf header");
    let l = &doc["infer"]["llama_cpp"];
    // 4096 cells × 2 layers × (1024 + 1024) × 2 B
    assert_eq!(l["kv_bytes"], 4096 * 2 * 2048 * 2);
    assert_eq!(l["weights_host_bytes"], 4096 * 32_000 / 32 * 34);
    assert_eq!(l["layers_on_gpu"], 2);
    assert!(l["launch"]["llama_server"]
        .as_str()
        .unwrap()
        .starts_with("llama-server -m tiny-Q8_0.gguf -c 4096"));
}

#[test]
fn fit_tabulates_the_gguf_file_and_says_what_fits() {
    let (path, _) = tiny_gguf("tiny-fit-Q8_0.gguf");
    let doc = json_of(&vram(&[
        "fit",
        path.to_str().unwrap(),
        "--gpu",
        "rtx3060",
        "--json",
    ]));
    let rows = doc["rows"].as_array().unwrap();
    // the file's own type first, then every type of the table (from the header's architecture)
    assert_eq!(rows.len(), 8);
    assert_eq!(rows[0]["weights"], "Q8_0");
    assert_eq!(rows[1]["weights"], "F16");
    assert_eq!(rows[0]["placement"], "gpu");
    assert_eq!(rows[0]["full_gpu_max_context"], 8192);
}

#[test]
fn fit_of_a_config_lists_every_type_and_partial_offload_when_the_gpu_is_small() {
    let doc = json_of(&vram(&[
        "fit",
        &preset("meta-llama__Llama-3.1-8B.json"),
        "--gpu",
        "rtx3060",
        "--seq",
        "8192",
        "--json",
    ]));
    let rows = doc["rows"].as_array().unwrap();
    let types: Vec<&str> = rows
        .iter()
        .map(|r| r["weights"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        ["F16", "Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q3_K_M", "Q2_K"]
    );
    // F16 (15 GiB) cannot sit on a 12 GB card: some layers stay on the CPU
    assert_eq!(rows[0]["placement"], "partial");
    assert!(rows[0]["n_gpu_layers"].as_u64().unwrap() < 33);
    assert_eq!(rows[4]["placement"], "gpu");
}

#[test]
fn a_cut_off_gguf_header_is_one_clear_error() {
    let (path, _) = tiny_gguf("cut.gguf");
    let bytes = std::fs::read(&path).unwrap();
    let cut = path.with_file_name("cut-short.gguf");
    std::fs::write(&cut, &bytes[..200]).unwrap();
    let out = vram(&[
        "estimate",
        cut.to_str().unwrap(),
        "--infer",
        "--engine",
        "llama.cpp",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cut off"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

#[test]
fn llama_flags_without_the_llama_engine_are_refused() {
    let out = vram(&[
        "estimate",
        &preset("meta-llama__Llama-3.1-8B.json"),
        "--infer",
        "--ngl",
        "10",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--engine llama.cpp"));
}
