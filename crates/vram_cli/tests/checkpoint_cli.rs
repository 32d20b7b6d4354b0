//! `vram estimate` with a checkpoint's safetensors headers: a folder (config + shards + index),
//! the index alone, headers alone; sparse files, only headers read.

mod common;
use common::{json_of, preset, vram};

use std::path::PathBuf;
use vram_core::safetensors_file::encode_header;

/// A folder with the Llama-3.2-1B-Instruct config and a 2-shard BF16 checkpoint (sparse files).
fn checkpoint_dir(tag: &str) -> (PathBuf, u64) {
    let dir = std::env::temp_dir().join(format!("vram-ckpt-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(preset("meta-llama__Llama-3.2-1B-Instruct.json")).unwrap();
    std::fs::write(dir.join("config.json"), &text).unwrap();
    let spec = vram_core::parse_config(&text, None).unwrap();
    let all: Vec<(String, Vec<u64>)> = spec
        .instances()
        .map(|i| (i.name().into_owned(), i.tensor.shape.to_vec()))
        .collect();
    let (a, b) = all.split_at(all.len() / 2);
    let mut weight_map = serde_json::Map::new();
    let mut total = 0u64;
    for (k, part) in [a, b].iter().enumerate() {
        let file = format!("model-{:05}-of-00002.safetensors", k + 1);
        let refs: Vec<(&str, &str, &[u64])> = part
            .iter()
            .map(|(n, s)| (n.as_str(), "BF16", s.as_slice()))
            .collect();
        let header = encode_header(&refs, &[("format", "pt")]).unwrap();
        let data: u64 = part
            .iter()
            .map(|(_, s)| s.iter().product::<u64>() * 2)
            .sum();
        total += data;
        let path = dir.join(&file);
        std::fs::write(&path, &header).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(header.len() as u64 + data)
            .unwrap();
        for (n, _) in part.iter() {
            weight_map.insert(n.clone(), serde_json::Value::String(file.clone()));
        }
    }
    let index = serde_json::json!({"metadata": {"total_size": total}, "weight_map": weight_map});
    std::fs::write(
        dir.join("model.safetensors.index.json"),
        serde_json::to_vec(&index).unwrap(),
    )
    .unwrap();
    (dir, total)
}

#[test]
fn a_folder_with_config_and_shards_is_counted_from_the_headers() {
    let (dir, total) = checkpoint_dir("folder");
    let doc = json_of(&vram(&[
        "estimate",
        dir.to_str().unwrap(),
        "--infer",
        "--json",
    ]));
    assert_eq!(doc["parameters"]["total"], 1_235_814_400u64);
    assert_eq!(doc["model"]["support"], "header");
    assert_eq!(doc["checkpoint"]["files"], 2);
    assert_eq!(doc["checkpoint"]["data_bytes"], total);
    assert_eq!(doc["checkpoint"]["index_total_size"], total);
    assert!(doc["infer"]["weights_bytes"].as_u64().unwrap() > 0);
}

#[test]
fn the_index_alone_gives_the_weight_bytes_and_headers_alone_the_count() {
    let (dir, total) = checkpoint_dir("index");
    let doc = json_of(&vram(&[
        "estimate",
        dir.join("model.safetensors.index.json").to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(doc["checkpoint"]["data_bytes"], total);
    let one = dir.join("model-00001-of-00002.safetensors");
    let two = dir.join("model-00002-of-00002.safetensors");
    std::fs::remove_file(dir.join("config.json")).unwrap();
    std::fs::remove_file(dir.join("model.safetensors.index.json")).unwrap();
    let doc = json_of(&vram(&[
        "estimate",
        one.to_str().unwrap(),
        two.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(doc["checkpoint"]["params"], 1_235_814_400u64);
    let out = vram(&["estimate", one.to_str().unwrap(), "--infer"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("config.json"));
}

#[test]
fn a_cut_off_or_lying_safetensors_header_is_one_clear_error() {
    let dir = std::env::temp_dir().join(format!("vram-ckpt-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("bad.safetensors");
    let mut b = 1000u64.to_le_bytes().to_vec();
    b.extend(b"{\"a\":");
    std::fs::write(&p, &b).unwrap();
    let out = vram(&["estimate", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cut off") && err.trim_end().lines().count() == 1,
        "{err}"
    );
    std::fs::write(&p, u64::MAX.to_le_bytes()).unwrap();
    let err = String::from_utf8_lossy(&vram(&["estimate", p.to_str().unwrap()]).stderr).to_string();
    assert!(err.contains("at most 100000000"), "{err}");
}
