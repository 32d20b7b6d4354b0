//! safetensors headers: the 8-byte little-endian header length, then a JSON object mapping each
//! tensor name to `{"dtype", "shape", "data_offsets": [begin, end]}` (offsets into the data that
//! follows), and an optional `"__metadata__"` object of strings. Only the header is read; the
//! format caps it at 100,000,000 bytes (`safetensors` `MAX_HEADER_SIZE`), and so does this reader.
//! Also the index of a sharded checkpoint (`model.safetensors.index.json`: `metadata.total_size`
//! and `weight_map`). Format: <https://github.com/huggingface/safetensors> (README, "Format").

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The largest header the format allows (`MAX_HEADER_SIZE` in the safetensors crate).
pub const MAX_HEADER_BYTES: u64 = 100_000_000;

/// Why a header or index could not be read. Messages say what was read and what was expected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SafetensorsError {
    /// The bytes end before the header does: read at least `needed_bytes` from the file start.
    #[error("the safetensors header needs the first {needed_bytes} bytes of the file")]
    NeedMore {
        /// Bytes from the start of the file the header occupies.
        needed_bytes: u64,
    },
    /// The header length is larger than the format allows.
    #[error("safetensors header of {found} bytes: expected at most {limit} (is this a safetensors file?)")]
    TooLarge {
        /// The length read.
        found: u64,
        /// [`MAX_HEADER_BYTES`].
        limit: u64,
    },
    /// Malformed content.
    #[error("{what}: expected {expected}, found {found}")]
    Invalid {
        /// What was being read.
        what: String,
        /// What a valid one looks like.
        expected: String,
        /// What was there.
        found: String,
    },
}

fn invalid(
    what: impl Into<String>,
    expected: impl Into<String>,
    found: impl Into<String>,
) -> SafetensorsError {
    SafetensorsError::Invalid {
        what: what.into(),
        expected: expected.into(),
        found: found.into(),
    }
}

/// One tensor of a header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SafeTensor {
    /// Its name (`model.layers.0.self_attn.q_proj.weight`).
    pub name: String,
    /// `F32`, `BF16`, `F8_E4M3`, `I32`, `U8`, ...
    pub dtype: String,
    /// Shape.
    pub shape: Vec<u64>,
    /// `[begin, end)` in the data section.
    pub data_offsets: (u64, u64),
}

impl SafeTensor {
    /// Elements (saturating).
    pub fn numel(&self) -> u64 {
        self.shape.iter().fold(1u64, |a, &d| a.saturating_mul(d))
    }
    /// Bytes in the file.
    pub fn bytes(&self) -> u64 {
        self.data_offsets.1 - self.data_offsets.0
    }
}

/// A parsed header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SafetensorsHeader {
    /// Bytes of the JSON header (the data starts at `8 + header_bytes`).
    pub header_bytes: u64,
    /// Tensors in the order of their data offsets.
    pub tensors: Vec<SafeTensor>,
    /// `__metadata__` (`{"format": "pt"}` usually).
    pub metadata: BTreeMap<String, String>,
}

impl SafetensorsHeader {
    /// Bytes of the data section (the largest end offset).
    pub fn data_bytes(&self) -> u64 {
        self.tensors
            .iter()
            .map(|t| t.data_offsets.1)
            .max()
            .unwrap_or(0)
    }
}

/// Bits of one element of a safetensors dtype (`Dtype` in the safetensors crate).
pub fn dtype_bits(dtype: &str) -> Option<u64> {
    Some(match dtype {
        "BOOL" | "U8" | "I8" | "F8_E4M3" | "F8_E5M2" | "F8_E8M0" => 8,
        "F4" => 4,
        "F6_E2M3" | "F6_E3M2" => 6,
        "I16" | "U16" | "F16" | "BF16" => 16,
        "I32" | "U32" | "F32" => 32,
        "I64" | "U64" | "F64" | "C64" => 64,
        _ => return None,
    })
}

/// A JSON object read as ordered entries, refusing duplicate keys (which serde_json's maps would
/// silently merge).
struct Entries(Vec<(String, serde_json::Value)>);

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Entries;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entries, A::Error> {
                let mut out: Vec<(String, serde_json::Value)> = Vec::new();
                let mut seen = std::collections::BTreeSet::new();
                while let Some((k, v)) = map.next_entry::<String, serde_json::Value>()? {
                    if !seen.insert(k.clone()) {
                        return Err(serde::de::Error::custom(format!("duplicate key {k:?}")));
                    }
                    out.push((k, v));
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_map(V)
    }
}

fn parse_json_object(
    text: &[u8],
    what: &str,
) -> Result<Vec<(String, serde_json::Value)>, SafetensorsError> {
    let text = std::str::from_utf8(text).map_err(|e| {
        invalid(
            what,
            "UTF-8 JSON",
            format!("invalid UTF-8 at byte {}", e.valid_up_to()),
        )
    })?;
    serde_json::from_str::<Entries>(text)
        .map(|e| e.0)
        .map_err(|e| invalid(what, "a JSON object", e.to_string()))
}

/// Parses a safetensors header from the first bytes of the file (`NeedMore` when they end early;
/// `needed_bytes` is always more than given).
pub fn parse_header(bytes: &[u8]) -> Result<SafetensorsHeader, SafetensorsError> {
    let Some(len_bytes) = bytes.get(..8) else {
        return Err(SafetensorsError::NeedMore { needed_bytes: 8 });
    };
    let mut le = [0u8; 8];
    le.copy_from_slice(len_bytes);
    let n = u64::from_le_bytes(le);
    if n > MAX_HEADER_BYTES {
        return Err(SafetensorsError::TooLarge {
            found: n,
            limit: MAX_HEADER_BYTES,
        });
    }
    let end = 8 + n;
    if (bytes.len() as u64) < end {
        return Err(SafetensorsError::NeedMore { needed_bytes: end });
    }
    let entries = parse_json_object(&bytes[8..end as usize], "the safetensors header")?;
    let mut tensors = Vec::new();
    let mut metadata = BTreeMap::new();
    for (name, v) in entries {
        if name == "__metadata__" {
            let serde_json::Value::Object(m) = v else {
                return Err(invalid(
                    "__metadata__",
                    "an object of strings",
                    v.to_string(),
                ));
            };
            for (k, v) in m {
                match v {
                    serde_json::Value::String(s) => {
                        metadata.insert(k, s);
                    }
                    other => {
                        return Err(invalid(
                            format!("__metadata__.{k}"),
                            "a string",
                            other.to_string(),
                        ))
                    }
                }
            }
            continue;
        }
        tensors.push(tensor(&name, &v)?);
    }
    tensors.sort_by_key(|t| t.data_offsets);
    // the data section is the tensors back to back, without gaps or overlaps
    let mut at = 0;
    for t in &tensors {
        if t.data_offsets.0 != at {
            return Err(invalid(
                format!("tensor {:?} data_offsets", t.name),
                format!("to start at {at} (tensors are stored back to back)"),
                format!("{:?}", [t.data_offsets.0, t.data_offsets.1]),
            ));
        }
        at = t.data_offsets.1;
    }
    Ok(SafetensorsHeader {
        header_bytes: n,
        tensors,
        metadata,
    })
}

fn tensor(name: &str, v: &serde_json::Value) -> Result<SafeTensor, SafetensorsError> {
    let what = |field: &str| format!("tensor {name:?} {field}");
    let dtype = v.get("dtype").and_then(|d| d.as_str()).ok_or_else(|| {
        invalid(
            what("dtype"),
            "a dtype string such as \"BF16\"",
            v.to_string(),
        )
    })?;
    let bits = dtype_bits(dtype).ok_or_else(|| {
        invalid(what("dtype"), "a safetensors dtype (F64, F32, F16, BF16, F8_E4M3, F8_E5M2, I64, I32, I16, I8, U8, BOOL, ...)", format!("{dtype:?}"))
    })?;
    let shape: Vec<u64> = v
        .get("shape")
        .and_then(|s| s.as_array())
        .and_then(|a| a.iter().map(|d| d.as_u64()).collect::<Option<Vec<u64>>>())
        .ok_or_else(|| {
            invalid(
                what("shape"),
                "an array of non-negative integers",
                v.to_string(),
            )
        })?;
    let offsets: Vec<u64> = v
        .get("data_offsets")
        .and_then(|s| s.as_array())
        .and_then(|a| a.iter().map(|d| d.as_u64()).collect::<Option<Vec<u64>>>())
        .filter(|o| o.len() == 2 && o[0] <= o[1])
        .ok_or_else(|| {
            invalid(
                what("data_offsets"),
                "[begin, end] with begin ≤ end",
                v.to_string(),
            )
        })?;
    let numel = shape
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .ok_or_else(|| {
            invalid(
                what("shape"),
                "a shape whose size fits in 64 bits",
                format!("{shape:?}"),
            )
        })?;
    let bytes = numel
        .checked_mul(bits)
        .map(|b| b.div_ceil(8))
        .ok_or_else(|| {
            invalid(
                what("shape"),
                "a shape whose size fits in 64 bits",
                format!("{shape:?}"),
            )
        })?;
    if offsets[1] - offsets[0] != bytes {
        return Err(invalid(
            what("data_offsets"),
            format!("{bytes} bytes ({numel} × {bits} bits of {dtype})"),
            format!("{} bytes", offsets[1] - offsets[0]),
        ));
    }
    Ok(SafeTensor {
        name: name.to_string(),
        dtype: dtype.to_string(),
        shape,
        data_offsets: (offsets[0], offsets[1]),
    })
}

/// `model.safetensors.index.json` of a sharded checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SafetensorsIndex {
    /// `metadata.total_size`: bytes of all tensors.
    pub total_size: Option<u64>,
    /// Tensor name → shard file.
    pub weight_map: Vec<(String, String)>,
}

impl SafetensorsIndex {
    /// The shard files, in order of first mention.
    pub fn files(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (_, f) in &self.weight_map {
            if !out.contains(f) {
                out.push(f.clone());
            }
        }
        out
    }
}

/// Parses an index file.
pub fn parse_index(text: &[u8]) -> Result<SafetensorsIndex, SafetensorsError> {
    let entries = parse_json_object(text, "the safetensors index")?;
    let mut total_size = None;
    let mut weight_map = Vec::new();
    for (k, v) in entries {
        match k.as_str() {
            "metadata" => {
                total_size = v.get("total_size").and_then(|t| {
                    t.as_u64()
                        .or_else(|| t.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
                });
            }
            "weight_map" => {
                let serde_json::Value::Object(m) = v else {
                    return Err(invalid(
                        "weight_map",
                        "an object of tensor name → file",
                        v.to_string(),
                    ));
                };
                for (name, f) in m {
                    let Some(file) = f.as_str() else {
                        return Err(invalid(
                            format!("weight_map.{name}"),
                            "a file name",
                            f.to_string(),
                        ));
                    };
                    weight_map.push((name, file.to_string()));
                }
            }
            _ => {}
        }
    }
    if weight_map.is_empty() {
        return Err(invalid(
            "the safetensors index",
            "a \"weight_map\" naming each tensor's file",
            "none",
        ));
    }
    Ok(SafetensorsIndex {
        total_size,
        weight_map,
    })
}

/// Writes a header (for tests and fixtures): tensors back to back in the given order.
pub fn encode_header(
    tensors: &[(&str, &str, &[u64])],
    metadata: &[(&str, &str)],
) -> Option<Vec<u8>> {
    let mut obj = serde_json::Map::new();
    if !metadata.is_empty() {
        let m: serde_json::Map<String, serde_json::Value> = metadata
            .iter()
            .map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string())))
            .collect();
        obj.insert("__metadata__".into(), serde_json::Value::Object(m));
    }
    let mut at = 0u64;
    for (name, dtype, shape) in tensors {
        let numel = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d))?;
        let bytes = numel.checked_mul(dtype_bits(dtype)?)?.div_ceil(8);
        obj.insert(
            name.to_string(),
            serde_json::json!({"dtype": dtype, "shape": shape, "data_offsets": [at, at + bytes]}),
        );
        at += bytes;
    }
    let json = serde_json::to_vec(&serde_json::Value::Object(obj)).ok()?;
    let mut out = (json.len() as u64).to_le_bytes().to_vec();
    out.extend(json);
    Some(out)
}
