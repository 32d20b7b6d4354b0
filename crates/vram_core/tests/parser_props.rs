//! The parser never panics: arbitrary JSON, arbitrary text, and real configs with one field mutated
//! (deleted, type swapped, set to 0, -1, 1e30, a huge integer, NaN, ...). Thousands of cases run in the
//! test command; `fuzz/` holds the cargo-fuzz target for longer runs.

use proptest::prelude::*;
use serde_json::{json, Value};
use vram_core::presets::PRESETS;
use vram_core::{parse_config, ParamCounts};

/// Parses and, on success, counts: neither may panic, and a count must be at least the embeddings.
fn check(text: &str) {
    if let Ok(spec) = parse_config(text, Some("fuzz")) {
        let counts = ParamCounts::of(&spec);
        assert!(counts.active <= counts.total);
        assert!(counts.trainable <= counts.total);
        assert!(!spec.layers.is_empty());
    }
}

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "[a-z_]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("model_type".to_string()),
                    Just("hidden_size".to_string()),
                    Just("num_hidden_layers".to_string()),
                    Just("num_attention_heads".to_string()),
                    Just("num_key_value_heads".to_string()),
                    Just("vocab_size".to_string()),
                    Just("intermediate_size".to_string()),
                    Just("text_config".to_string()),
                    "[a-z_]{1,10}",
                ],
                inner,
                0..8
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Replacement values that real configs never have but users and broken exports produce.
fn hostile_value() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        Just(None), // delete the key
        Just(Some("0".into())),
        Just(Some("-1".into())),
        Just(Some("1e30".into())),
        Just(Some("-1e30".into())),
        Just(Some("18446744073709551615".into())),
        Just(Some("340282366920938463463374607431768211456".into())),
        Just(Some("NaN".into())),
        Just(Some("Infinity".into())),
        Just(Some("-Infinity".into())),
        Just(Some("\"big\"".into())),
        Just(Some("true".into())),
        Just(Some("null".into())),
        Just(Some("[]".into())),
        Just(Some("{}".into())),
        Just(Some("[1, 2, 3]".into())),
        Just(Some("4096.5".into())),
        Just(Some("1".into())),
        Just(Some("3".into())),
        Just(Some("65536".into())),
        Just(Some("4294967296".into())),
    ]
}

/// Every (parent, key) of a config: top-level keys and those of its nested config objects.
fn keys_of(map: &serde_json::Map<String, Value>) -> Vec<(Option<String>, String)> {
    let mut keys: Vec<(Option<String>, String)> = map.keys().map(|k| (None, k.clone())).collect();
    for nested in ["text_config", "vision_config", "quantization_config"] {
        if let Some(Value::Object(inner)) = map.get(nested) {
            keys.extend(inner.keys().map(|k| (Some(nested.to_string()), k.clone())));
        }
    }
    keys
}

/// Replaces (or deletes) one key of `map` with a marker string; returns the marker to substitute.
fn mark(map: &mut serde_json::Map<String, Value>, key_pick: usize, delete: bool, marker: &str) {
    let keys = keys_of(map);
    if keys.is_empty() {
        return;
    }
    let (parent, key) = keys[key_pick % keys.len()].clone();
    let target = match &parent {
        None => map,
        Some(n) => match map.get_mut(n) {
            Some(Value::Object(inner)) => inner,
            _ => return,
        },
    };
    if delete {
        target.remove(&key);
    } else {
        target.insert(key, Value::String(marker.into()));
    }
}

/// A real config with the given keys replaced by raw JSON text (which may be non-standard JSON such as
/// `NaN` or an integer beyond u64), or deleted.
fn mutate_many(preset: usize, edits: &[(usize, Option<String>)]) -> String {
    let p = &PRESETS[preset % PRESETS.len()];
    let Ok(Value::Object(mut map)) = serde_json::from_str::<Value>(p.json) else {
        return p.json.to_string();
    };
    for (i, (key, value)) in edits.iter().enumerate() {
        mark(
            &mut map,
            *key,
            value.is_none(),
            &format!("__VRAM_MUTATION_{i}__"),
        );
    }
    let mut text = serde_json::to_string(&Value::Object(map)).unwrap_or_default();
    for (i, (_, value)) in edits.iter().enumerate() {
        if let Some(raw) = value {
            text = text.replace(&format!("\"__VRAM_MUTATION_{i}__\""), raw);
        }
    }
    text
}

fn mutate(preset: usize, key_pick: usize, replacement: Option<String>) -> String {
    mutate_many(preset, &[(key_pick, replacement)])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2500, ..ProptestConfig::default() })]

    #[test]
    fn mutated_real_configs_never_panic(preset in 0usize..64, key in 0usize..256, value in hostile_value()) {
        check(&mutate(preset, key, value));
    }

    #[test]
    fn two_mutations_never_panic(preset in 0usize..64, k1 in 0usize..256, v1 in hostile_value(), k2 in 0usize..256, v2 in hostile_value()) {
        check(&mutate_many(preset, &[(k1, v1), (k2, v2)]));
    }

    #[test]
    fn arbitrary_json_never_panics(v in arbitrary_json()) {
        check(&v.to_string());
    }

    #[test]
    fn arbitrary_text_never_panics(s in "\\PC{0,200}") {
        check(&s);
    }

    #[test]
    fn truncated_real_configs_never_panic(preset in 0usize..64, cut in 0usize..4000) {
        let p = &PRESETS[preset % PRESETS.len()];
        let end = (0..=cut.min(p.json.len())).rev().find(|&i| p.json.is_char_boundary(i)).unwrap_or(0);
        check(&p.json[..end]);
    }
}

#[test]
fn every_mutation_of_every_key_of_every_preset_is_handled() {
    // Exhaustive over keys (not random): each preset × each top-level key × each hostile value.
    let values = [
        None,
        Some("0"),
        Some("-1"),
        Some("1e30"),
        Some("\"big\""),
        Some("NaN"),
        Some("18446744073709551615"),
        Some("[]"),
    ];
    let mut cases = 0;
    for (i, p) in PRESETS.iter().enumerate() {
        let Ok(Value::Object(map)) = serde_json::from_str::<Value>(p.json) else {
            continue;
        };
        for k in 0..map.len() {
            for v in values {
                check(&mutate(i, k, v.map(String::from)));
                cases += 1;
            }
        }
    }
    assert!(cases > 5000, "only {cases} cases");
}
