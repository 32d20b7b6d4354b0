//! Typed, field-naming access to the raw `config.json` object.
//!
//! This is the "raw config" layer: every field is optional and read on demand with its name, so an
//! error can say `field "hidden_size": expected a positive integer, found "big"`. Resolution into a
//! validated [`crate::ModelSpec`] happens in `spec`.

use crate::error::ConfigError;
use serde_json::{Map, Value};

/// Largest dimension we accept for any single size field (2^32). Larger values are not models but
/// typos, and bounding them keeps every product of two dimensions inside `u64`.
pub const MAX_DIMENSION: u64 = 1 << 32;

/// Most layers we accept in one stack (real models have at most a few hundred). Every layer gets its
/// own tensors in the inventory, so this bound also bounds the work a hostile config can cause.
pub const MAX_LAYERS: u64 = 1 << 14;

/// A view of one JSON object (the config, or a nested `text_config`), with a prefix for messages.
#[derive(Clone, Copy, Debug)]
pub struct Fields<'a> {
    map: &'a Map<String, Value>,
    prefix: &'a str,
}

impl<'a> Fields<'a> {
    /// Wraps an object; `prefix` is prepended to field names in errors (e.g. `"text_config."`).
    pub fn new(map: &'a Map<String, Value>, prefix: &'a str) -> Self {
        Self { map, prefix }
    }

    fn name(&self, key: &str) -> String {
        format!("{}{}", self.prefix, key)
    }

    /// The raw value, treating JSON `null` as absent.
    pub fn value(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    /// Whether the key is present and not null.
    pub fn has(&self, key: &str) -> bool {
        self.value(key).is_some()
    }

    /// A nested object, if present.
    pub fn object(&self, key: &str) -> Result<Option<&'a Map<String, Value>>, ConfigError> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m)),
            Some(other) => Err(self.invalid(key, "an object", other)),
        }
    }

    /// The error for `key` holding `found` where `expected` was wanted (the value quoted, cut at 60).
    pub(crate) fn invalid(&self, key: &str, expected: &str, found: &Value) -> ConfigError {
        let mut found = found.to_string();
        if found.len() > 60 {
            let cut = (0..=60)
                .rev()
                .find(|&i| found.is_char_boundary(i))
                .unwrap_or(0);
            found.truncate(cut);
            found.push('…');
        }
        ConfigError::InvalidField {
            field: self.name(key),
            expected: expected.into(),
            found,
        }
    }

    /// A non-negative integer field (integral floats such as `4096.0` are accepted).
    pub fn u64(&self, key: &str) -> Result<Option<u64>, ConfigError> {
        let Some(v) = self.value(key) else {
            return Ok(None);
        };
        let expected = "a non-negative integer";
        let n = if let Some(n) = v.as_u64() {
            n
        } else if let Some(f) = v.as_f64() {
            if f.is_finite() && f >= 0.0 && f.fract() == 0.0 && f <= MAX_DIMENSION as f64 {
                f as u64
            } else {
                return Err(self.invalid(key, expected, v));
            }
        } else {
            return Err(self.invalid(key, expected, v));
        };
        if n > MAX_DIMENSION {
            return Err(self.invalid(key, "an integer of at most 2^32", v));
        }
        Ok(Some(n))
    }

    /// A positive integer field (a size: zero is rejected).
    pub fn positive(&self, key: &str) -> Result<Option<u64>, ConfigError> {
        match self.u64(key) {
            Ok(Some(0)) => Err(self.invalid(key, "a positive integer", &Value::from(0))),
            Err(ConfigError::InvalidField { field, found, .. }) if !found.contains('^') => {
                Err(ConfigError::InvalidField {
                    field,
                    expected: "a positive integer".into(),
                    found,
                })
            }
            other => other,
        }
    }

    /// The first present key among `keys` (aliases such as `n_embd`/`d_model`/`hidden_size`).
    ///
    /// The resolvers list transformers' standard name before a model's own (`num_hidden_layers`
    /// before gpt2's `n_layer`): transformers' `attribute_map` makes the standard name an alias that,
    /// given beside the model's own key (as `vram measure --set num_hidden_layers=2` does), wins.
    pub fn positive_any(&self, keys: &[&str]) -> Result<Option<u64>, ConfigError> {
        for key in keys {
            if self.has(key) {
                return self.positive(key);
            }
        }
        Ok(None)
    }

    /// A required positive integer among aliases; the error names all of them.
    pub fn require_any(&self, keys: &[&str], why: &str) -> Result<u64, ConfigError> {
        self.positive_any(keys)?
            .ok_or_else(|| ConfigError::MissingField {
                field: keys
                    .iter()
                    .map(|k| self.name(k))
                    .collect::<Vec<_>>()
                    .join(" or "),
                why: why.into(),
            })
    }

    /// A required layer count among aliases, at most [`MAX_LAYERS`].
    pub fn layer_count(&self, keys: &[&str], why: &str) -> Result<u64, ConfigError> {
        let n = self.require_any(keys, why)?;
        self.check_layers(keys, n)
    }

    /// Rejects a layer count above [`MAX_LAYERS`], naming the first present key.
    pub fn check_layers(&self, keys: &[&str], n: u64) -> Result<u64, ConfigError> {
        if n > MAX_LAYERS {
            let key = keys
                .iter()
                .find(|k| self.has(k))
                .copied()
                .unwrap_or(keys[0]);
            return Err(ConfigError::InvalidField {
                field: self.name(key),
                expected: format!("a layer count of at most {MAX_LAYERS}"),
                found: n.to_string(),
            });
        }
        Ok(n)
    }

    /// A boolean field.
    pub fn bool(&self, key: &str) -> Result<Option<bool>, ConfigError> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(self.invalid(key, "true or false", other)),
        }
    }

    /// A finite number field.
    pub fn f64(&self, key: &str) -> Result<Option<f64>, ConfigError> {
        match self.value(key) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .filter(|f| f.is_finite())
                .map(Some)
                .ok_or_else(|| self.invalid(key, "a number", v)),
        }
    }

    /// A string field.
    pub fn str(&self, key: &str) -> Result<Option<&'a str>, ConfigError> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(other) => Err(self.invalid(key, "a string", other)),
        }
    }

    /// A list of strings (e.g. `layer_types`).
    pub fn str_list(&self, key: &str) -> Result<Option<Vec<&'a str>>, ConfigError> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| {
                    item.as_str()
                        .ok_or_else(|| self.invalid(key, "a list of strings", item))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(other) => Err(self.invalid(key, "a list of strings", other)),
        }
    }

    /// A list of non-negative integers (e.g. `mlp_only_layers`).
    pub fn u64_list(&self, key: &str) -> Result<Option<Vec<u64>>, ConfigError> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| {
                    item.as_u64()
                        .ok_or_else(|| self.invalid(key, "a list of non-negative integers", item))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(other) => Err(self.invalid(key, "a list of non-negative integers", other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn with<T>(v: Value, f: impl FnOnce(Fields<'_>) -> T) -> T {
        let map = v.as_object().cloned().unwrap_or_default();
        f(Fields::new(&map, ""))
    }

    #[test]
    fn string_where_a_size_belongs_names_the_field() {
        let err = with(json!({"hidden_size": "big"}), |f| f.positive("hidden_size")).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"field "hidden_size": expected a positive integer, found "big""#
        );
    }

    #[test]
    fn negative_layer_count_is_rejected() {
        let err = with(json!({"num_hidden_layers": -3}), |f| {
            f.positive("num_hidden_layers")
        })
        .unwrap_err();
        assert!(err.to_string().contains("num_hidden_layers") && err.to_string().contains("-3"));
    }

    #[test]
    fn absurd_sizes_are_rejected_not_overflowed() {
        assert!(with(json!({"h": 1e30}), |f| f.positive("h")).is_err());
        assert!(with(json!({"h": 18446744073709551615u64}), |f| f.positive("h")).is_err());
        assert_eq!(
            with(json!({"h": 4096.0}), |f| f.positive("h")).unwrap(),
            Some(4096)
        );
    }

    #[test]
    fn null_counts_as_absent() {
        assert_eq!(
            with(json!({"q_lora_rank": null}), |f| f.positive("q_lora_rank")).unwrap(),
            None
        );
    }
}
