//! Lenient JSON reading: real `config.json` files are written by Python's `json.dump`, which emits the
//! non-standard tokens `NaN`, `Infinity` and `-Infinity` (e.g. `"layer_norm_eps": Infinity` in some
//! exported configs). Strict parsers reject them; we read them as `null`, since no field we use can
//! meaningfully be infinite.

use crate::error::ConfigError;

/// Largest config text we accept (a real config.json is a few KB; 16 MiB is far beyond any).
pub const MAX_CONFIG_BYTES: usize = 16 << 20;

/// Parses `text` as JSON, accepting Python's `NaN`/`Infinity`/`-Infinity` outside strings as `null`.
pub fn parse_lenient(text: &str) -> Result<serde_json::Value, ConfigError> {
    if text.len() > MAX_CONFIG_BYTES {
        return Err(ConfigError::InvalidField {
            field: "(file)".into(),
            expected: format!("a config.json of at most {} MiB", MAX_CONFIG_BYTES >> 20),
            found: format!("{} bytes", text.len()),
        });
    }
    // The scan copies the text; configs without the tokens anywhere (nearly all) skip it.
    let cleaned;
    let json = if text.contains("NaN") || text.contains("Infinity") {
        cleaned = replace_non_finite_tokens(text);
        cleaned.as_str()
    } else {
        text
    };
    serde_json::from_str(json).map_err(|err| ConfigError::Json {
        line: err.line() as u64,
        column: err.column() as u64,
        message: strip_position(&err.to_string()),
    })
}

/// serde_json appends " at line L column C"; we report the position in our own fields.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_string(),
        None => message.to_string(),
    }
}

/// Replaces the bare tokens `NaN`, `Infinity`, `-Infinity` (outside string literals) with `null`,
/// padding with spaces so that line/column positions of later errors stay the same.
fn replace_non_finite_tokens(text: &str) -> String {
    const TOKENS: [&str; 3] = ["-Infinity", "Infinity", "NaN"];
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if b == b'"' {
            in_string = true;
        } else if let Some(token) = TOKENS.iter().find(|t| bytes[i..].starts_with(t.as_bytes())) {
            out.push_str("null");
            out.extend(std::iter::repeat_n(' ', token.len().saturating_sub(4)));
            i += token.len();
            continue;
        }
        // Copy one whole UTF-8 character.
        let len = utf8_len(b);
        let end = (i + len).min(bytes.len());
        out.push_str(text.get(i..end).unwrap_or(""));
        i = end;
    }
    out
}

fn utf8_len(first: u8) -> usize {
    match first {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_non_finite_tokens_load_as_null() {
        let v = parse_lenient(r#"{"a": NaN, "b": Infinity, "c": -Infinity, "d": "NaN"}"#).unwrap();
        assert!(v["a"].is_null() && v["b"].is_null() && v["c"].is_null());
        assert_eq!(v["d"], "NaN");
    }

    #[test]
    fn truncated_json_reports_line_and_column() {
        let err = parse_lenient("{\n  \"hidden_size\": 4096,\n  \"num_").unwrap_err();
        match err {
            ConfigError::Json { line, .. } => assert_eq!(line, 3),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn escaped_quotes_inside_strings_do_not_confuse_the_scanner() {
        let v = parse_lenient(r#"{"s": "say \"NaN\" Infinity", "x": NaN}"#).unwrap();
        assert_eq!(v["s"], "say \"NaN\" Infinity");
        assert!(v["x"].is_null());
    }

    #[test]
    fn non_ascii_text_is_kept() {
        let v = parse_lenient(r#"{"名前": "模型", "x": 1}"#).unwrap();
        assert_eq!(v["名前"], "模型");
    }
}
