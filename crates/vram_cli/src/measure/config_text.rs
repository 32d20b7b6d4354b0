//! The config as the probe sees it: the file's text, `--set KEY=VALUE` overrides applied to its JSON
//! (e.g. `--set num_hidden_layers=2` to measure a MoE with fewer layers), and SHA-256 hashes of the
//! original and the effective text for the report.

use anyhow::Context;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The effective config and the overrides that produced it.
#[derive(Debug, Clone, PartialEq)]
pub struct EffectiveConfig {
    /// The JSON text the probe (and the estimator) read.
    pub text: String,
    /// Overrides by dotted key, in key order.
    pub overrides: BTreeMap<String, serde_json::Value>,
}

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Parses one `KEY=VALUE`; VALUE is JSON when it parses as JSON, else a string.
pub fn parse_override(s: &str) -> anyhow::Result<(String, serde_json::Value)> {
    let Some((key, value)) = s.split_once('=') else {
        anyhow::bail!("--set: expected KEY=VALUE (e.g. num_hidden_layers=2), found {s:?}");
    };
    let key = key.trim();
    if key.is_empty() || key.split('.').any(str::is_empty) {
        anyhow::bail!("--set: expected a config key before '=' (e.g. num_hidden_layers or text_config.num_hidden_layers), found {s:?}");
    }
    let value = serde_json::from_str(value.trim())
        .unwrap_or_else(|_| serde_json::Value::String(value.to_string()));
    Ok((key.to_string(), value))
}

/// Applies `overrides` (dotted keys into nested objects) to the config `text`.
pub fn apply_overrides(text: &str, overrides: &[String]) -> anyhow::Result<EffectiveConfig> {
    let mut parsed = BTreeMap::new();
    for o in overrides {
        let (k, v) = parse_override(o)?;
        parsed.insert(k, v);
    }
    if parsed.is_empty() {
        return Ok(EffectiveConfig {
            text: text.to_string(),
            overrides: parsed,
        });
    }
    let mut doc: serde_json::Value =
        serde_json::from_str(text).context("--set needs the config to be a JSON object")?;
    for (key, value) in &parsed {
        let mut node = &mut doc;
        let parts: Vec<&str> = key.split('.').collect();
        for (i, part) in parts.iter().enumerate() {
            let Some(obj) = node.as_object_mut() else {
                anyhow::bail!(
                    "--set {key}: {:?} is not a JSON object in the config",
                    parts[..i].join(".")
                );
            };
            if i + 1 == parts.len() {
                obj.insert((*part).to_string(), value.clone());
                break;
            }
            node = obj
                .entry((*part).to_string())
                .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
        }
    }
    Ok(EffectiveConfig {
        text: serde_json::to_string_pretty(&doc)?,
        overrides: parsed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_abc_is_the_fips_180_2_test_vector() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn overrides_set_numbers_strings_and_nested_keys() {
        let cfg = apply_overrides(
            r#"{"num_hidden_layers": 24, "text_config": {"hidden_size": 8}}"#,
            &[
                "num_hidden_layers=2".into(),
                "text_config.hidden_size=16".into(),
                "hidden_act=silu".into(),
            ],
        )
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&cfg.text).unwrap();
        assert_eq!(v["num_hidden_layers"], 2);
        assert_eq!(v["text_config"]["hidden_size"], 16);
        assert_eq!(v["hidden_act"], "silu");
        assert_eq!(cfg.overrides.len(), 3);
    }

    #[test]
    fn no_overrides_keep_the_text_byte_for_byte() {
        let text = "{ \"a\" : 1 }";
        assert_eq!(apply_overrides(text, &[]).unwrap().text, text);
    }

    #[test]
    fn override_without_equals_names_the_flag() {
        let err = parse_override("num_hidden_layers").unwrap_err().to_string();
        assert!(err.starts_with("--set: expected KEY=VALUE"), "{err}");
    }

    #[test]
    fn override_into_a_scalar_is_refused() {
        let err = apply_overrides(r#"{"a": 1}"#, &["a.b=2".into()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("is not a JSON object"), "{err}");
    }
}
