//! Every architecture against the model `transformers` itself builds from the same published config.
//!
//! Each `tests/headers/ORG__MODEL.json` was written by `scripts/arch-header.py` from
//! `presets/ORG__MODEL.json`: the class named by the config's `architectures` (or the repository's
//! own remote code) built on the meta device, every tensor `save_pretrained` writes with its shape.
//! For each, this test checks that
//! 1. the estimator's inventory for that config has exactly the same tensor names and shapes, and
//! 2. a safetensors header built from the fixture's tensors (bf16) counts exactly the config's
//!    parameters and 2 bytes each, with no disagreement between header and config.

use std::collections::BTreeMap;
use std::path::Path;

use vram_core::checkpoint::{attach, canonical, count};
use vram_core::safetensors_file::{encode_header, parse_header};
use vram_core::{parse_config, presets, ParamCounts};

struct Fixture {
    file: String,
    config: String,
    parameters: u64,
    buffer_elements: u64,
    tensors: Vec<(String, Vec<u64>)>,
}

fn fixtures() -> Vec<Fixture> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/headers");
    let mut out = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/headers exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    for path in paths {
        let text = std::fs::read_to_string(&path).expect("readable fixture");
        let v: serde_json::Value = serde_json::from_str(&text).expect("fixture is JSON");
        let tensors = v["tensors"]
            .as_array()
            .expect("tensors")
            .iter()
            .map(|t| {
                let name = t[0].as_str().expect("name").to_string();
                let shape = t[1]
                    .as_array()
                    .expect("shape")
                    .iter()
                    .map(|d| d.as_u64().expect("dimension"))
                    .collect();
                (name, shape)
            })
            .collect();
        out.push(Fixture {
            file: path.file_name().unwrap().to_string_lossy().into_owned(),
            config: v["config"].as_str().expect("config").to_string(),
            parameters: v["parameters"].as_u64().expect("parameters"),
            buffer_elements: v["buffer_elements"].as_u64().unwrap_or(0),
            tensors,
        });
    }
    out
}

/// The config a fixture was written from: a bundled preset, or a config kept only for this test in
/// `tests/headers/configs/` (historic formats such as phi-2's first `phi-msft` config, which the
/// page does not offer as a preset).
fn preset_json(config_file: &str) -> String {
    let id = config_file.trim_end_matches(".json");
    if let Some(p) = presets::find(id) {
        return p.json.to_string();
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/headers/configs")
        .join(config_file);
    std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "{config_file}: neither a bundled preset nor {}",
            path.display()
        )
    })
}

#[test]
fn every_architecture_names_and_shapes_its_tensors_as_transformers_does() {
    let mut failures = Vec::new();
    for fx in fixtures() {
        let spec = match parse_config(&preset_json(&fx.config), None) {
            Ok(s) => s,
            Err(e) => {
                failures.push(format!("{}: does not parse: {e}", fx.file));
                continue;
            }
        };
        let ours: BTreeMap<String, Vec<u64>> = spec
            .instances()
            .map(|i| (i.name().into_owned(), i.tensor.shape.to_vec()))
            .collect();
        // Remote code keeps one tensor per expert where transformers 5 fuses them: such names are
        // mapped onto the fused tensor (`checkpoint::canonical`) and compared by element count.
        let mut theirs: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for (name, shape) in &fx.tensors {
            if ours.contains_key(name) {
                theirs.insert(name.clone(), shape.clone());
                continue;
            }
            let n: u64 = shape.iter().product();
            theirs.entry(canonical(name)).or_insert_with(|| vec![0])[0] += n;
        }
        // fused entries hold their total element count: compare them as such
        let ours: BTreeMap<String, Vec<u64>> = ours
            .into_iter()
            .map(|(n, s)| {
                if fx.tensors.iter().any(|(t, _)| *t == n) {
                    (n, s)
                } else {
                    (n, vec![s.iter().product()])
                }
            })
            .collect();
        let missing: Vec<_> = theirs
            .iter()
            .filter(|(n, s)| ours.get(*n) != Some(*s))
            .take(6)
            .map(|(n, s)| format!("{n} {s:?} (ours: {:?})", ours.get(n)))
            .collect();
        let extra: Vec<_> = ours
            .keys()
            .filter(|n| !theirs.contains_key(*n))
            .take(6)
            .cloned()
            .collect();
        if !missing.is_empty() || !extra.is_empty() || ours.len() != theirs.len() {
            failures.push(format!(
                "{}: {} tensors ours vs {} transformers; differ: {missing:?}; only ours: {extra:?}",
                fx.file,
                ours.len(),
                theirs.len()
            ));
        }
        let total = ParamCounts::of(&spec).total;
        if total != fx.parameters + fx.buffer_elements {
            failures.push(format!(
                "{}: computed {total} vs transformers {} parameters + {} buffer elements",
                fx.file, fx.parameters, fx.buffer_elements
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_header_built_from_each_transformers_model_counts_the_config_exactly() {
    for fx in fixtures() {
        let mut spec = parse_config(&preset_json(&fx.config), None).expect("parses");
        let refs: Vec<(&str, &str, &[u64])> = fx
            .tensors
            .iter()
            .map(|(n, s)| (n.as_str(), "BF16", s.as_slice()))
            .collect();
        let bytes = encode_header(&refs, &[("format", "pt")]).expect("encodes");
        let header = parse_header(&bytes).expect("parses back");
        let c = count(std::slice::from_ref(&header), None);
        let want = fx.parameters + fx.buffer_elements;
        assert_eq!(c.params, want, "{}", fx.file);
        assert_eq!(c.data_bytes, 2 * want, "{}", fx.file);
        let disagreements = attach(&mut spec, c);
        assert!(
            disagreements.is_empty(),
            "{}: header and config disagree: {disagreements:?}",
            fx.file
        );
    }
}
