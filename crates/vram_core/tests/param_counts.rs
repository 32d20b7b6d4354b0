//! Exact parameter counts for every bundled config against its published count (presets/INDEX.tsv).

use vram_core::presets::PRESETS;
use vram_core::{parse_config, ParamCounts};

/// Rows that cannot be matched exactly, with the reason. Empty: every row matches.
const KNOWN_GAPS: &[(&str, &str)] = &[];

#[test]
fn every_bundled_config_matches_its_published_parameter_count() {
    let mut failures = Vec::new();
    for preset in PRESETS {
        let spec = match parse_config(preset.json, Some(preset.id)) {
            Ok(spec) => spec,
            Err(err) => {
                failures.push(format!("{}: does not parse: {err}", preset.id));
                continue;
            }
        };
        let counts = ParamCounts::of(&spec);
        let gap = KNOWN_GAPS.iter().find(|(id, _)| *id == preset.id);
        if counts.total != preset.published_params && gap.is_none() {
            let diff = counts.total as i128 - preset.published_params as i128;
            failures.push(format!(
                "{}: computed {} vs published {} (diff {diff})",
                preset.id, counts.total, preset.published_params
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_shared_config_is_bundled_and_every_other_preset_has_a_transformers_fixture() {
    let index = include_str!("../presets/INDEX.tsv");
    let shared = index
        .lines()
        .filter(|l| l.contains("\tpublished count") || l.contains("\tbare BertModel"))
        .count();
    assert_eq!(shared, 37, "the 37 configs of the shared collection");
    assert_eq!(
        index.lines().count() - 1,
        PRESETS.len(),
        "one INDEX.tsv row per preset"
    );
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/headers");
    for p in PRESETS {
        if p.published_rounded.is_empty() {
            continue;
        }
        // a count taken from transformers is only as good as the fixture that records it
        assert!(
            dir.join(format!("{}.json", p.id)).exists(),
            "{}: its reference count comes from transformers but tests/headers has no fixture",
            p.id
        );
    }
}

/// transformers' `attribute_map`: a standard name given beside a model's own key (what `vram
/// measure --set num_hidden_layers=2` writes into a gpt2 or gpt_bigcode config) is the one the model
/// is built with.
#[test]
fn a_standard_layer_key_beside_a_models_own_key_wins_as_in_transformers() {
    for id in ["openai-community__gpt2", "bigcode__gpt_bigcode-santacoder"] {
        let mut v: serde_json::Value =
            serde_json::from_str(vram_core::presets::find(id).unwrap().json).unwrap();
        v["num_hidden_layers"] = 2.into();
        let spec = vram_core::resolve_value(&v, None).unwrap();
        assert_eq!(spec.layers.len(), 2, "{id}");
    }
}
