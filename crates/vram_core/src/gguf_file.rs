//! Reader (and writer) of the *header* of a GGUF file: the llama.cpp model format.
//!
//! The header is everything before the tensor data: magic, version, the metadata key/value pairs
//! (architecture, layer count, context length, tokenizer, ...) and one info record per tensor (name,
//! shape, ggml type, offset). That is all a memory estimate needs, and it is usually a few MiB at the
//! start of a file of many GiB, so [`parse_header`] works on a *prefix* of the file:
//!
//! ```
//! use vram_core::gguf_file::{encode_header, parse_header, GgufError};
//!
//! # let file = encode_header(3, &[], &[("w".into(), vec![32, 4], 0)]).unwrap_or_default();
//! let mut have = 16_u64; // the caller reads the first `have` bytes of the file
//! let header = loop {
//!     let prefix = &file[..file.len().min(have as usize)];
//!     match parse_header(prefix) {
//!         Err(GgufError::NeedMore { needed_bytes }) => have = needed_bytes.max(2 * have),
//!         other => break other,
//!     }
//! };
//! assert_eq!(header.map(|h| h.tensors.len()), Ok(1));
//! ```
//!
//! # The `NeedMore` contract
//!
//! When the buffer ends before the header does, [`parse_header`] returns
//! [`GgufError::NeedMore`] with `needed_bytes` **strictly greater than the length of the buffer it
//! was given**: the number of bytes from the start of the file that are certainly needed to get
//! further (the end of the field, string or array that was cut off, or a lower bound from the
//! counts already read). A caller that reads at least that many bytes (typically: the larger of
//! `needed_bytes` and twice its current chunk) and calls again therefore always progresses. A header
//! that would need more than [`MAX_HEADER_BYTES`] gives [`GgufError::TooLarge`] instead, never a
//! `NeedMore` above that cap, so the loop is bounded. If the buffer holds the whole file, `NeedMore`
//! means the file is truncated.
//!
//! # Robustness
//!
//! Any bytes give `Ok` or an error, never a panic: nothing is allocated from a count read in the file
//! before the bytes it describes are present (vectors grow as items are parsed), counts and lengths
//! are capped ([`MAX_TENSOR_COUNT`], [`MAX_KV_COUNT`], [`MAX_STRING_BYTES`], [`MAX_ARRAY_DEPTH`]),
//! and all size arithmetic is checked. A header that parses has, for every tensor of a known ggml
//! type, a first dimension that is a whole number of blocks and an element count, byte size and end
//! offset that fit in `i64`, so [`GgufTensorInfo::bytes`] and [`GgufHeader::data_bytes`] succeed on
//! it unless a tensor has a ggml type this reader does not know (accepted, for types newer than the
//! table in [`GGML_TYPES`]).
//!
//! Arrays: numeric and bool arrays of up to [`KEEP_NUMERIC_ARRAY_LEN`] elements and string (or
//! nested-array) arrays of up to [`KEEP_STRING_ARRAY_LEN`] elements are kept; longer ones (the
//! tokenizer's tokens, merges and scores) keep only their element type and length. The UTF-8 of
//! strings inside arrays that are not kept is not checked.
//!
//! Sources: llama.cpp `ggml/src/gguf.cpp`, `ggml/docs/gguf.md`, `ggml/include/ggml.h`,
//! `ggml/src/ggml-common.h` (block layouts), `include/llama.h` (`llama_ftype`).

use std::collections::BTreeSet;

/// The first four bytes of every GGUF file.
pub const GGUF_MAGIC: [u8; 4] = *b"GGUF";
/// Headers that would need more than this many bytes from the start of the file are refused.
pub const MAX_HEADER_BYTES: u64 = 256 << 20;
/// Most tensors a header may declare.
pub const MAX_TENSOR_COUNT: u64 = 1_000_000;
/// Most metadata key/value pairs a header may declare.
pub const MAX_KV_COUNT: u64 = 1_000_000;
/// Longest key or string value, in bytes.
pub const MAX_STRING_BYTES: u64 = 64 << 20;
/// Deepest nesting of arrays (an array value is depth 1, an array inside it depth 2, ...).
pub const MAX_ARRAY_DEPTH: u32 = 4;
/// Most dimensions of a tensor (`GGML_MAX_DIMS`).
pub const MAX_DIMS: u32 = 4;
/// Numeric and bool arrays up to this length keep their items.
pub const KEEP_NUMERIC_ARRAY_LEN: u64 = 65_536;
/// String arrays (and arrays of arrays) up to this length keep their items.
pub const KEEP_STRING_ARRAY_LEN: u64 = 256;
/// Alignment of the data section when `general.alignment` is absent (`GGUF_DEFAULT_ALIGNMENT`).
pub const DEFAULT_ALIGNMENT: u64 = 32;
/// Element counts, byte sizes and data offsets of tensors must not exceed this (ggml's `int64_t`).
pub const MAX_TENSOR_EXTENT: u64 = i64::MAX as u64;

/// GGUF metadata value types (`enum gguf_type`).
pub mod value_type {
    /// `GGUF_TYPE_UINT8`
    pub const UINT8: u32 = 0;
    /// `GGUF_TYPE_INT8`
    pub const INT8: u32 = 1;
    /// `GGUF_TYPE_UINT16`
    pub const UINT16: u32 = 2;
    /// `GGUF_TYPE_INT16`
    pub const INT16: u32 = 3;
    /// `GGUF_TYPE_UINT32`
    pub const UINT32: u32 = 4;
    /// `GGUF_TYPE_INT32`
    pub const INT32: u32 = 5;
    /// `GGUF_TYPE_FLOAT32`
    pub const FLOAT32: u32 = 6;
    /// `GGUF_TYPE_BOOL`
    pub const BOOL: u32 = 7;
    /// `GGUF_TYPE_STRING`
    pub const STRING: u32 = 8;
    /// `GGUF_TYPE_ARRAY`
    pub const ARRAY: u32 = 9;
    /// `GGUF_TYPE_UINT64`
    pub const UINT64: u32 = 10;
    /// `GGUF_TYPE_INT64`
    pub const INT64: u32 = 11;
    /// `GGUF_TYPE_FLOAT64`
    pub const FLOAT64: u32 = 12;
}

/// Name of a GGUF metadata value type ("UINT32", "STRING", ...), `None` for ids above 12.
pub fn value_type_name(t: u32) -> Option<&'static str> {
    Some(match t {
        value_type::UINT8 => "UINT8",
        value_type::INT8 => "INT8",
        value_type::UINT16 => "UINT16",
        value_type::INT16 => "INT16",
        value_type::UINT32 => "UINT32",
        value_type::INT32 => "INT32",
        value_type::FLOAT32 => "FLOAT32",
        value_type::BOOL => "BOOL",
        value_type::STRING => "STRING",
        value_type::ARRAY => "ARRAY",
        value_type::UINT64 => "UINT64",
        value_type::INT64 => "INT64",
        value_type::FLOAT64 => "FLOAT64",
        _ => return None,
    })
}

/// Encoded size of one value of a fixed-size type; `None` for strings, arrays and unknown types.
fn fixed_size(t: u32) -> Option<u64> {
    match t {
        value_type::UINT8 | value_type::INT8 | value_type::BOOL => Some(1),
        value_type::UINT16 | value_type::INT16 => Some(2),
        value_type::UINT32 | value_type::INT32 | value_type::FLOAT32 => Some(4),
        value_type::UINT64 | value_type::INT64 | value_type::FLOAT64 => Some(8),
        _ => None,
    }
}

/// Smallest encoded size of one value of type `t` (a string: its length; an array: type + count).
fn min_encoded_size(t: u32) -> Option<u64> {
    match t {
        value_type::STRING => Some(8),
        value_type::ARRAY => Some(12),
        _ => fixed_size(t),
    }
}

/// How many items an array of `elem_type` may have and still be kept.
fn keep_limit(elem_type: u32) -> u64 {
    match elem_type {
        value_type::STRING | value_type::ARRAY => KEEP_STRING_ARRAY_LEN,
        _ => KEEP_NUMERIC_ARRAY_LEN,
    }
}

/// Why a GGUF header could not be read (or written).
///
/// Plain data only, so it is `Clone + Eq`. Messages name what was being read, the byte offset from
/// the start of the file, and what was expected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GgufError {
    /// The buffer ended before the header did. Supply at least `needed_bytes` bytes from the start
    /// of the file and call again; `needed_bytes` is always larger than the buffer given (see the
    /// module documentation for the contract).
    #[error(
        "the GGUF header continues past the bytes read so far: read at least the first \
         {needed_bytes} bytes of the file and try again (if that is the whole file, it is truncated)"
    )]
    NeedMore {
        /// Bytes from the start of the file needed to get further.
        needed_bytes: u64,
    },
    /// The file does not start with `GGUF`.
    #[error("not a GGUF file: the first 4 bytes are \"{found}\", expected \"GGUF\"")]
    BadMagic {
        /// The first (up to 4) bytes, printable ASCII as is and other bytes as `\xNN`.
        found: String,
    },
    /// A GGUF version other than 2 or 3.
    #[error("{}", unsupported_version_message(*version))]
    UnsupportedVersion {
        /// The version field as read (little-endian).
        version: u32,
    },
    /// A count, length or size above the reader's caps.
    #[error("{what} is {found}, above the limit of {limit}")]
    TooLarge {
        /// What was being measured, naming the key or tensor.
        what: String,
        /// The value found.
        found: u64,
        /// The cap.
        limit: u64,
    },
    /// The header is malformed. `offset` is the byte offset in the file (in [`encode_header`]: in
    /// the output; for errors of [`GgufTensorInfo::bytes`], which has no file position: 0).
    #[error("invalid GGUF header at byte {offset}: {what}: expected {expected}, found {found}")]
    Invalid {
        /// Byte offset of the offending field.
        offset: u64,
        /// What was being read, naming the key or tensor.
        what: String,
        /// What a valid value looks like.
        expected: String,
        /// What was found.
        found: String,
    },
}

fn unsupported_version_message(version: u32) -> String {
    match version {
        1 => "GGUF version 1 is not supported: it stored counts and lengths as 32-bit numbers and \
              llama.cpp dropped it in 2023; convert the model again with a current llama.cpp"
            .to_owned(),
        v if v != 0 && v & 0xFFFF == 0 => format!(
            "GGUF version field {v:#010x} looks byte-swapped: this is probably a big-endian GGUF \
             file, and only little-endian files are supported"
        ),
        v => format!("GGUF version {v} is not supported: this reader knows versions 2 and 3"),
    }
}

/// One metadata value.
#[derive(Clone, Debug, PartialEq)]
pub enum GgufValue {
    /// `UINT8`
    U8(u8),
    /// `INT8`
    I8(i8),
    /// `UINT16`
    U16(u16),
    /// `INT16`
    I16(i16),
    /// `UINT32`
    U32(u32),
    /// `INT32`
    I32(i32),
    /// `FLOAT32`
    F32(f32),
    /// `BOOL` (any non-zero byte reads as `true`, as in llama.cpp)
    Bool(bool),
    /// `STRING`
    Str(String),
    /// `UINT64`
    U64(u64),
    /// `INT64`
    I64(i64),
    /// `FLOAT64`
    F64(f64),
    /// arrays: numeric/bool arrays of up to 65,536 elements and string arrays of up to 256 elements
    /// are kept; longer ones (tokenizer tokens, merges, scores) keep only their element type and
    /// length
    Array {
        /// GGUF value type of the elements ([`value_type`]).
        elem_type: u32,
        /// Number of elements in the file.
        len: u64,
        /// The elements, when kept (`items.len() == len`).
        items: Option<Vec<GgufValue>>,
    },
}

impl GgufValue {
    /// The GGUF value type id of this value ([`value_type`]).
    pub fn type_id(&self) -> u32 {
        match self {
            GgufValue::U8(_) => value_type::UINT8,
            GgufValue::I8(_) => value_type::INT8,
            GgufValue::U16(_) => value_type::UINT16,
            GgufValue::I16(_) => value_type::INT16,
            GgufValue::U32(_) => value_type::UINT32,
            GgufValue::I32(_) => value_type::INT32,
            GgufValue::F32(_) => value_type::FLOAT32,
            GgufValue::Bool(_) => value_type::BOOL,
            GgufValue::Str(_) => value_type::STRING,
            GgufValue::Array { .. } => value_type::ARRAY,
            GgufValue::U64(_) => value_type::UINT64,
            GgufValue::I64(_) => value_type::INT64,
            GgufValue::F64(_) => value_type::FLOAT64,
        }
    }

    /// Any integer type with a value ≥ 0, as `u64` (not bools, floats or strings).
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            GgufValue::U8(v) => Some(u64::from(v)),
            GgufValue::U16(v) => Some(u64::from(v)),
            GgufValue::U32(v) => Some(u64::from(v)),
            GgufValue::U64(v) => Some(v),
            GgufValue::I8(v) => u64::try_from(v).ok(),
            GgufValue::I16(v) => u64::try_from(v).ok(),
            GgufValue::I32(v) => u64::try_from(v).ok(),
            GgufValue::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// Any float or integer type as `f64` (large 64-bit integers are rounded).
    #[allow(clippy::cast_precision_loss)]
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            GgufValue::F32(v) => Some(f64::from(v)),
            GgufValue::F64(v) => Some(v),
            GgufValue::U8(v) => Some(f64::from(v)),
            GgufValue::U16(v) => Some(f64::from(v)),
            GgufValue::U32(v) => Some(f64::from(v)),
            GgufValue::I8(v) => Some(f64::from(v)),
            GgufValue::I16(v) => Some(f64::from(v)),
            GgufValue::I32(v) => Some(f64::from(v)),
            GgufValue::U64(v) => Some(v as f64),
            GgufValue::I64(v) => Some(v as f64),
            _ => None,
        }
    }

    /// The text of a string value.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            GgufValue::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// One tensor info record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GgufTensorInfo {
    /// Tensor name, e.g. `blk.0.attn_q.weight`.
    pub name: String,
    /// Shape, `ne[0]` (the contiguous dimension) first, as in the file.
    pub dims: Vec<u64>,
    /// ggml type id ([`ggml_type_info`]).
    pub ggml_type: u32,
    /// Offset of the tensor's data from the start of the data section.
    pub offset: u64,
}

impl GgufTensorInfo {
    /// Number of elements (product of the dims; saturating, 1 for no dims).
    pub fn numel(&self) -> u64 {
        if self.dims.contains(&0) {
            return 0;
        }
        self.dims.iter().fold(1_u64, |n, &d| n.saturating_mul(d))
    }

    /// Bytes of the tensor's data: `(ne0 / block_elems) * block_bytes * ne1 * ne2 * ne3`.
    ///
    /// Errors when the ggml type is unknown, when `ne0` is not a whole number of blocks, or when
    /// the size exceeds [`MAX_TENSOR_EXTENT`].
    pub fn bytes(&self) -> Result<u64, GgufError> {
        let info = ggml_type_info(self.ggml_type).ok_or_else(|| GgufError::Invalid {
            offset: 0,
            what: format!("the ggml type of tensor '{}'", self.name),
            expected: "a ggml type known to this reader (0-3, 6-30, 34, 35, 39-42)".to_owned(),
            found: format!("type {}", self.ggml_type),
        })?;
        tensor_bytes(&self.dims, info).map_err(|problem| match problem {
            SizeProblem::NotWholeBlocks(ne0) => GgufError::Invalid {
                offset: 0,
                what: format!("the first dimension of tensor '{}'", self.name),
                expected: format!(
                    "a multiple of {} (the block size of {})",
                    info.block_elems, info.name
                ),
                found: ne0.to_string(),
            },
            SizeProblem::TooLarge(found) => GgufError::TooLarge {
                what: format!("the byte size of tensor '{}'", self.name),
                found,
                limit: MAX_TENSOR_EXTENT,
            },
        })
    }
}

enum SizeProblem {
    NotWholeBlocks(u64),
    TooLarge(u64),
}

/// Byte size of a tensor of shape `dims` and type `info` (see [`GgufTensorInfo::bytes`]).
fn tensor_bytes(dims: &[u64], info: GgmlTypeInfo) -> Result<u64, SizeProblem> {
    let ne0 = dims.first().copied().unwrap_or(1);
    if info.block_elems == 0 || ne0 % info.block_elems != 0 {
        return Err(SizeProblem::NotWholeBlocks(ne0));
    }
    if dims.contains(&0) {
        return Ok(0);
    }
    let row = (ne0 / info.block_elems).saturating_mul(info.block_bytes);
    let total = dims.iter().skip(1).fold(row, |n, &d| n.saturating_mul(d));
    if total > MAX_TENSOR_EXTENT {
        return Err(SizeProblem::TooLarge(total));
    }
    Ok(total)
}

/// A parsed GGUF header.
#[derive(Clone, Debug, PartialEq)]
pub struct GgufHeader {
    /// GGUF version (2 or 3).
    pub version: u32,
    /// Alignment of the data section and of each tensor's offset (`general.alignment`, default 32).
    pub alignment: u64,
    /// Metadata key/value pairs in file order.
    pub metadata: Vec<(String, GgufValue)>,
    /// Tensor infos in file order.
    pub tensors: Vec<GgufTensorInfo>,
    /// byte offset where the data section begins (aligned)
    pub data_offset: u64,
}

impl GgufHeader {
    /// The value of a metadata key.
    pub fn get(&self, key: &str) -> Option<&GgufValue> {
        self.metadata.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// An integer value (any signed or unsigned type) that is ≥ 0; not bools or floats.
    pub fn get_u64(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(GgufValue::as_u64)
    }

    /// A float value, or an integer value converted to `f64`.
    pub fn get_f64(&self, key: &str) -> Option<f64> {
        self.get(key).and_then(GgufValue::as_f64)
    }

    /// A string value.
    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(GgufValue::as_str)
    }

    /// A kept array whose items are all integers ≥ 0.
    pub fn get_u64_array(&self, key: &str) -> Option<Vec<u64>> {
        match self.get(key)? {
            GgufValue::Array {
                items: Some(items), ..
            } => items.iter().map(GgufValue::as_u64).collect(),
            _ => None,
        }
    }

    /// Length of any array value, kept or not (`tokenizer.ggml.tokens` → vocabulary size).
    pub fn array_len(&self, key: &str) -> Option<u64> {
        match self.get(key)? {
            GgufValue::Array { len, .. } => Some(*len),
            _ => None,
        }
    }

    /// `general.architecture`, e.g. `llama`.
    pub fn architecture(&self) -> Option<&str> {
        self.get_str("general.architecture")
    }

    /// `{arch}.{suffix}` as u64, e.g. arch_u64("block_count")
    pub fn arch_u64(&self, suffix: &str) -> Option<u64> {
        let arch = self.architecture()?;
        self.get_u64(&format!("{arch}.{suffix}"))
    }

    /// `{arch}.{suffix}` as a kept integer array (a scalar gives `None`; use [`Self::arch_u64`]).
    pub fn arch_u64_array(&self, suffix: &str) -> Option<Vec<u64>> {
        let arch = self.architecture()?;
        self.get_u64_array(&format!("{arch}.{suffix}"))
    }

    /// `general.file_type` (a `llama_ftype`, see [`file_type_name`]).
    pub fn file_type(&self) -> Option<u64> {
        self.get_u64("general.file_type")
    }

    /// Total bytes of the data section implied by the tensor infos: the largest `offset + bytes`
    /// over the tensors (the last tensor's, as files are written), 0 without tensors.
    ///
    /// Writers (llama.cpp, gguf-py) also pad the last tensor to the alignment, so a file may be up
    /// to `alignment - 1` bytes longer than `data_offset + data_bytes()`. Errors if a tensor's type is
    /// unknown (see [`GgufTensorInfo::bytes`]).
    pub fn data_bytes(&self) -> Result<u64, GgufError> {
        let mut end = 0_u64;
        for t in &self.tensors {
            let bytes = t.bytes()?;
            let tensor_end = t
                .offset
                .checked_add(bytes)
                .ok_or_else(|| GgufError::TooLarge {
                    what: format!("the end of tensor '{}' in the data section", t.name),
                    found: t.offset.saturating_add(bytes),
                    limit: u64::MAX,
                })?;
            end = end.max(tensor_end);
        }
        Ok(end)
    }
}

// ---------------------------------------------------------------------------------------------
// ggml types
// ---------------------------------------------------------------------------------------------

/// A ggml tensor type: id (`enum ggml_type`), name, and storage: `block_bytes` bytes hold
/// `block_elems` consecutive elements of a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GgmlTypeInfo {
    /// `enum ggml_type` value.
    pub id: u32,
    /// Upper-case name as in `GGML_TYPE_<NAME>` and gguf-py (`Q4_K`, `IQ2_XXS`, `BF16`).
    pub name: &'static str,
    /// Elements per block (1 for plain types, 32 for `Q4_0`, 256 for k-quants).
    pub block_elems: u64,
    /// Bytes per block (`sizeof(block_...)`).
    pub block_bytes: u64,
}

const fn ty(id: u32, name: &'static str, block_elems: u64, block_bytes: u64) -> GgmlTypeInfo {
    GgmlTypeInfo {
        id,
        name,
        block_elems,
        block_bytes,
    }
}

/// Every ggml type a GGUF file may hold, from llama.cpp `ggml/include/ggml.h` (`enum ggml_type`,
/// up to `GGML_TYPE_Q2_0 = 42`) with the block sizes of `ggml/src/ggml.c` `type_traits` and the
/// `block_*` structs of `ggml/src/ggml-common.h` (QK_K = 256). Ids 4 and 5 (Q4_2, Q4_3), 31-33
/// (Q4_0_4_4, Q4_0_4_8, Q4_0_8_8) and 36-38 (IQ4_NL_4_4, ...) were removed and are absent.
pub const GGML_TYPES: &[GgmlTypeInfo] = &[
    ty(0, "F32", 1, 4),
    ty(1, "F16", 1, 2),
    ty(2, "Q4_0", 32, 18),
    ty(3, "Q4_1", 32, 20),
    ty(6, "Q5_0", 32, 22),
    ty(7, "Q5_1", 32, 24),
    ty(8, "Q8_0", 32, 34),
    ty(9, "Q8_1", 32, 36),
    ty(10, "Q2_K", 256, 84),
    ty(11, "Q3_K", 256, 110),
    ty(12, "Q4_K", 256, 144),
    ty(13, "Q5_K", 256, 176),
    ty(14, "Q6_K", 256, 210),
    ty(15, "Q8_K", 256, 292),
    ty(16, "IQ2_XXS", 256, 66),
    ty(17, "IQ2_XS", 256, 74),
    ty(18, "IQ3_XXS", 256, 98),
    ty(19, "IQ1_S", 256, 50),
    ty(20, "IQ4_NL", 32, 18),
    ty(21, "IQ3_S", 256, 110),
    ty(22, "IQ2_S", 256, 82),
    ty(23, "IQ4_XS", 256, 136),
    ty(24, "I8", 1, 1),
    ty(25, "I16", 1, 2),
    ty(26, "I32", 1, 4),
    ty(27, "I64", 1, 8),
    ty(28, "F64", 1, 8),
    ty(29, "IQ1_M", 256, 56),
    ty(30, "BF16", 1, 2),
    ty(34, "TQ1_0", 256, 54),
    ty(35, "TQ2_0", 256, 66),
    ty(39, "MXFP4", 32, 17),
    ty(40, "NVFP4", 64, 36),
    ty(41, "Q1_0", 128, 18),
    ty(42, "Q2_0", 64, 18),
];

/// The ggml type with this id; `None` for removed (4, 5, 31-33, 36-38) and unknown ids.
pub fn ggml_type_info(id: u32) -> Option<GgmlTypeInfo> {
    GGML_TYPES.iter().find(|t| t.id == id).copied()
}

/// The ggml type with this name, case-insensitive (`q4_K`, `Q4_K` and `q4_k` all work).
pub fn ggml_type_by_name(name: &str) -> Option<GgmlTypeInfo> {
    GGML_TYPES
        .iter()
        .find(|t| t.name.eq_ignore_ascii_case(name))
        .copied()
}

/// Name of a `general.file_type` value (`enum llama_ftype` in llama.cpp `include/llama.h`), in the
/// style of `llama-quantize` and GGUF file names: `F32`, `F16`, `Q4_K_M`, `MXFP4_MOE`, ...
/// `None` for removed (4-6, 33-35) and unknown values. The flag `LLAMA_FTYPE_GUESSED` (1024) is
/// not a file type.
pub fn file_type_name(v: u64) -> Option<&'static str> {
    Some(match v {
        0 => "F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        7 => "Q8_0",
        8 => "Q5_0",
        9 => "Q5_1",
        10 => "Q2_K",
        11 => "Q3_K_S",
        12 => "Q3_K_M",
        13 => "Q3_K_L",
        14 => "Q4_K_S",
        15 => "Q4_K_M",
        16 => "Q5_K_S",
        17 => "Q5_K_M",
        18 => "Q6_K",
        19 => "IQ2_XXS",
        20 => "IQ2_XS",
        21 => "Q2_K_S",
        22 => "IQ3_XS",
        23 => "IQ3_XXS",
        24 => "IQ1_S",
        25 => "IQ4_NL",
        26 => "IQ3_S",
        27 => "IQ3_M",
        28 => "IQ2_S",
        29 => "IQ2_M",
        30 => "IQ4_XS",
        31 => "IQ1_M",
        32 => "BF16",
        36 => "TQ1_0",
        37 => "TQ2_0",
        38 => "MXFP4_MOE",
        39 => "NVFP4",
        40 => "Q1_0",
        41 => "Q2_0",
        _ => return None,
    })
}

// ---------------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------------

/// `&dyn Fn() -> String`: describes what is being read, built only when an error needs it.
type What<'w> = &'w dyn Fn() -> String;

struct Reader<'a> {
    buf: &'a [u8],
    pos: u64,
}

impl<'a> Reader<'a> {
    /// Checks that `n` more bytes are present; returns the end offset.
    fn require(&self, n: u64, what: What<'_>) -> Result<u64, GgufError> {
        let end = self.pos.saturating_add(n);
        if end > MAX_HEADER_BYTES {
            return Err(GgufError::TooLarge {
                what: format!("the header size needed to read {}", what()),
                found: end,
                limit: MAX_HEADER_BYTES,
            });
        }
        if end > self.buf.len() as u64 {
            return Err(GgufError::NeedMore { needed_bytes: end });
        }
        Ok(end)
    }

    fn take(&mut self, n: u64, what: What<'_>) -> Result<&'a [u8], GgufError> {
        let end = self.require(n, what)?;
        let slice = usize::try_from(self.pos)
            .ok()
            .zip(usize::try_from(end).ok())
            .and_then(|(start, end)| self.buf.get(start..end))
            .ok_or(GgufError::NeedMore { needed_bytes: end })?;
        self.pos = end;
        Ok(slice)
    }

    fn array<const N: usize>(&mut self, what: What<'_>) -> Result<[u8; N], GgufError> {
        let slice = self.take(N as u64, what)?;
        let mut out = [0_u8; N];
        for (o, b) in out.iter_mut().zip(slice) {
            *o = *b;
        }
        Ok(out)
    }

    fn u8(&mut self, what: What<'_>) -> Result<u8, GgufError> {
        Ok(u8::from_le_bytes(self.array(what)?))
    }
    fn u16(&mut self, what: What<'_>) -> Result<u16, GgufError> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }
    fn u32(&mut self, what: What<'_>) -> Result<u32, GgufError> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }
    fn u64(&mut self, what: What<'_>) -> Result<u64, GgufError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// A string's bytes (u64 length + bytes) and the offset where they start.
    fn string_bytes(&mut self, what: What<'_>) -> Result<(u64, &'a [u8]), GgufError> {
        let len = self.u64(&|| format!("the length of {}", what()))?;
        if len > MAX_STRING_BYTES {
            return Err(GgufError::TooLarge {
                what: format!("the length of {}", what()),
                found: len,
                limit: MAX_STRING_BYTES,
            });
        }
        let start = self.pos;
        Ok((start, self.take(len, what)?))
    }

    fn string(&mut self, what: What<'_>) -> Result<String, GgufError> {
        let (start, bytes) = self.string_bytes(what)?;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(s.to_owned()),
            Err(e) => Err(GgufError::Invalid {
                offset: start.saturating_add(e.valid_up_to() as u64),
                what: what(),
                expected: "UTF-8 text".to_owned(),
                found: match bytes.get(e.valid_up_to()) {
                    Some(b) => format!("byte 0x{b:02x}, which is not valid UTF-8 there"),
                    None => "text cut off inside a UTF-8 character".to_owned(),
                },
            }),
        }
    }

    /// Reads a value type id and checks it is one of the 13 known.
    fn value_type(&mut self, what: What<'_>) -> Result<u32, GgufError> {
        let at = self.pos;
        let t = self.u32(what)?;
        if value_type_name(t).is_none() {
            return Err(GgufError::Invalid {
                offset: at,
                what: what(),
                expected: "a GGUF value type 0-12 (UINT8 ... FLOAT64)".to_owned(),
                found: t.to_string(),
            });
        }
        Ok(t)
    }

    /// One value of known type `t`; `depth` is the array nesting around it. Returns `None` when
    /// `store` is false (the value is skipped: a string in an array not kept).
    fn value(
        &mut self,
        t: u32,
        depth: u32,
        store: bool,
        what: What<'_>,
    ) -> Result<Option<GgufValue>, GgufError> {
        let v = match t {
            value_type::UINT8 => GgufValue::U8(self.u8(what)?),
            value_type::INT8 => GgufValue::I8(i8::from_le_bytes(self.array(what)?)),
            value_type::UINT16 => GgufValue::U16(self.u16(what)?),
            value_type::INT16 => GgufValue::I16(i16::from_le_bytes(self.array(what)?)),
            value_type::UINT32 => GgufValue::U32(self.u32(what)?),
            value_type::INT32 => GgufValue::I32(i32::from_le_bytes(self.array(what)?)),
            value_type::FLOAT32 => GgufValue::F32(f32::from_le_bytes(self.array(what)?)),
            value_type::BOOL => GgufValue::Bool(self.u8(what)? != 0),
            value_type::STRING => {
                if !store {
                    self.string_bytes(what)?;
                    return Ok(None);
                }
                GgufValue::Str(self.string(what)?)
            }
            value_type::ARRAY => return self.array_value(depth.saturating_add(1), store, what),
            value_type::UINT64 => GgufValue::U64(self.u64(what)?),
            value_type::INT64 => GgufValue::I64(i64::from_le_bytes(self.array(what)?)),
            value_type::FLOAT64 => GgufValue::F64(f64::from_le_bytes(self.array(what)?)),
            other => {
                return Err(GgufError::Invalid {
                    offset: self.pos,
                    what: what(),
                    expected: "a GGUF value type 0-12".to_owned(),
                    found: other.to_string(),
                })
            }
        };
        Ok(store.then_some(v))
    }

    /// An array (element type, count, elements) at nesting `depth` (1 = a metadata value).
    fn array_value(
        &mut self,
        depth: u32,
        store: bool,
        what: What<'_>,
    ) -> Result<Option<GgufValue>, GgufError> {
        let elem_type = self.value_type(&|| format!("the element type of {}", what()))?;
        if elem_type == value_type::ARRAY && depth >= MAX_ARRAY_DEPTH {
            return Err(GgufError::TooLarge {
                what: format!("the array nesting depth of {}", what()),
                found: u64::from(depth) + 1,
                limit: u64::from(MAX_ARRAY_DEPTH),
            });
        }
        let len = self.u64(&|| format!("the length of {}", what()))?;
        let min_size = min_encoded_size(elem_type).unwrap_or(1);
        let min_bytes = len.saturating_mul(min_size);
        // Every element needs at least `min_size` bytes: fail (or ask for more) before the loop.
        self.require(min_bytes, &|| format!("the {len} elements of {}", what()))?;
        let keep = store && len <= keep_limit(elem_type);
        if !keep && fixed_size(elem_type).is_some() {
            self.take(min_bytes, what)?;
            return Ok(store.then_some(GgufValue::Array {
                elem_type,
                len,
                items: None,
            }));
        }
        let mut items = Vec::new();
        for i in 0..len {
            let item_what = || format!("element {i} of {}", what());
            if let Some(v) = self.value(elem_type, depth, keep, &item_what)? {
                items.push(v);
            }
        }
        Ok(store.then_some(GgufValue::Array {
            elem_type,
            len,
            items: keep.then_some(items),
        }))
    }
}

/// Shows up to 4 bytes: printable ASCII as is, other bytes as `\xNN`.
fn show_bytes(bytes: &[u8]) -> String {
    let mut out = String::new();
    for &b in bytes.iter().take(4) {
        if (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

fn align_up(n: u64, alignment: u64) -> Option<u64> {
    if alignment == 0 {
        return None;
    }
    match n % alignment {
        0 => Some(n),
        r => n.checked_add(alignment - r),
    }
}

/// Parses the header of a GGUF file from a prefix of it (or the whole file).
///
/// Returns [`GgufError::NeedMore`] when `bytes` ends before the header does, with a `needed_bytes`
/// larger than `bytes.len()` (see the module documentation for the contract). Never panics.
pub fn parse_header(bytes: &[u8]) -> Result<GgufHeader, GgufError> {
    let Some(magic) = bytes.get(..4) else {
        return if GGUF_MAGIC.starts_with(bytes) {
            Err(GgufError::NeedMore { needed_bytes: 4 })
        } else {
            Err(GgufError::BadMagic {
                found: show_bytes(bytes),
            })
        };
    };
    if magic != GGUF_MAGIC {
        return Err(GgufError::BadMagic {
            found: show_bytes(magic),
        });
    }
    let mut r = Reader { buf: bytes, pos: 4 };
    let version = r.u32(&|| "the GGUF version".to_owned())?;
    if version != 2 && version != 3 {
        return Err(GgufError::UnsupportedVersion { version });
    }
    let tensor_count = r.u64(&|| "the tensor count".to_owned())?;
    if tensor_count > MAX_TENSOR_COUNT {
        return Err(GgufError::TooLarge {
            what: "the tensor count".to_owned(),
            found: tensor_count,
            limit: MAX_TENSOR_COUNT,
        });
    }
    let kv_count = r.u64(&|| "the metadata key/value count".to_owned())?;
    if kv_count > MAX_KV_COUNT {
        return Err(GgufError::TooLarge {
            what: "the metadata key/value count".to_owned(),
            found: kv_count,
            limit: MAX_KV_COUNT,
        });
    }
    // Each key/value pair takes at least 13 bytes (key length, type, 1-byte value) and each tensor
    // info at least 32 (name length, n_dims, one dim, type, offset).
    let min_rest = kv_count.saturating_mul(13) + tensor_count.saturating_mul(32);
    r.require(min_rest, &|| {
        format!("{kv_count} metadata entries and {tensor_count} tensor infos")
    })?;

    let mut metadata: Vec<(String, GgufValue)> = Vec::new();
    let mut keys = BTreeSet::new();
    let mut alignment = DEFAULT_ALIGNMENT;
    for i in 0..kv_count {
        let key_at = r.pos;
        let key = r.string(&|| format!("the key of metadata entry #{i}"))?;
        if keys.contains(&key) {
            return Err(GgufError::Invalid {
                offset: key_at,
                what: format!("the key of metadata entry #{i}"),
                expected: "a key not used before".to_owned(),
                found: format!("the duplicate key '{key}'"),
            });
        }
        let t = r.value_type(&|| format!("the value type of key '{key}'"))?;
        let value_at = r.pos;
        let value = r
            .value(t, 0, true, &|| format!("the value of key '{key}'"))?
            .ok_or_else(|| GgufError::Invalid {
                offset: value_at,
                what: format!("the value of key '{key}'"),
                expected: "a value".to_owned(),
                found: "nothing".to_owned(),
            })?;
        if key == "general.alignment" {
            alignment = check_alignment(&value, value_at)?;
        }
        keys.insert(key.clone());
        metadata.push((key, value));
    }

    let mut tensors: Vec<GgufTensorInfo> = Vec::new();
    let mut names = BTreeSet::new();
    for i in 0..tensor_count {
        let name_at = r.pos;
        let name = r.string(&|| format!("the name of tensor #{i}"))?;
        if names.contains(&name) {
            return Err(GgufError::Invalid {
                offset: name_at,
                what: format!("the name of tensor #{i}"),
                expected: "a tensor name not used before".to_owned(),
                found: format!("the duplicate name '{name}'"),
            });
        }
        let n_dims_at = r.pos;
        let n_dims = r.u32(&|| format!("the number of dimensions of tensor '{name}'"))?;
        if !(1..=MAX_DIMS).contains(&n_dims) {
            return Err(GgufError::Invalid {
                offset: n_dims_at,
                what: format!("the number of dimensions of tensor '{name}'"),
                expected: format!("1 to {MAX_DIMS}"),
                found: n_dims.to_string(),
            });
        }
        let dims_at = r.pos;
        let mut dims = Vec::new();
        for d in 0..n_dims {
            let at = r.pos;
            let ne = r.u64(&|| format!("dimension {d} of tensor '{name}'"))?;
            if ne > MAX_TENSOR_EXTENT {
                return Err(GgufError::Invalid {
                    offset: at,
                    what: format!("dimension {d} of tensor '{name}'"),
                    expected: format!("at most {MAX_TENSOR_EXTENT} (a signed 64-bit count)"),
                    found: ne.to_string(),
                });
            }
            dims.push(ne);
        }
        let info = GgufTensorInfo {
            name,
            dims,
            ggml_type: 0,
            offset: 0,
        };
        let numel = info.numel();
        if numel > MAX_TENSOR_EXTENT {
            return Err(GgufError::TooLarge {
                what: format!("the element count of tensor '{}'", info.name),
                found: numel,
                limit: MAX_TENSOR_EXTENT,
            });
        }
        let ggml_type = r.u32(&|| format!("the ggml type of tensor '{}'", info.name))?;
        let size = match ggml_type_info(ggml_type) {
            None => None,
            Some(t) => Some(tensor_bytes(&info.dims, t).map_err(|p| match p {
                SizeProblem::NotWholeBlocks(ne0) => GgufError::Invalid {
                    offset: dims_at,
                    what: format!("the first dimension of tensor '{}'", info.name),
                    expected: format!(
                        "a multiple of {} (the block size of {})",
                        t.block_elems, t.name
                    ),
                    found: ne0.to_string(),
                },
                SizeProblem::TooLarge(found) => GgufError::TooLarge {
                    what: format!("the byte size of tensor '{}'", info.name),
                    found,
                    limit: MAX_TENSOR_EXTENT,
                },
            })?),
        };
        let offset_at = r.pos;
        let offset = r.u64(&|| format!("the data offset of tensor '{}'", info.name))?;
        if offset > MAX_TENSOR_EXTENT || offset % alignment != 0 {
            return Err(GgufError::Invalid {
                offset: offset_at,
                what: format!("the data offset of tensor '{}'", info.name),
                expected: format!(
                    "a multiple of the alignment {alignment}, at most {MAX_TENSOR_EXTENT}"
                ),
                found: offset.to_string(),
            });
        }
        if let Some(size) = size {
            let end = offset.saturating_add(size);
            if end > MAX_TENSOR_EXTENT {
                return Err(GgufError::TooLarge {
                    what: format!("the end of tensor '{}' in the data section", info.name),
                    found: end,
                    limit: MAX_TENSOR_EXTENT,
                });
            }
        }
        names.insert(info.name.clone());
        tensors.push(GgufTensorInfo {
            ggml_type,
            offset,
            ..info
        });
    }

    let data_offset = align_up(r.pos, alignment)
        .filter(|&d| d <= MAX_HEADER_BYTES)
        .ok_or_else(|| GgufError::TooLarge {
            what: format!("the header padded to the alignment {alignment}"),
            found: align_up(r.pos, alignment).unwrap_or(u64::MAX),
            limit: MAX_HEADER_BYTES,
        })?;
    Ok(GgufHeader {
        version,
        alignment,
        metadata,
        tensors,
        data_offset,
    })
}

/// `general.alignment` must be a UINT32 power of two.
fn check_alignment(value: &GgufValue, at: u64) -> Result<u64, GgufError> {
    let what = || "the value of key 'general.alignment'".to_owned();
    match *value {
        GgufValue::U32(a) if a.is_power_of_two() => Ok(u64::from(a)),
        GgufValue::U32(a) => Err(GgufError::Invalid {
            offset: at,
            what: what(),
            expected: "a power of two".to_owned(),
            found: a.to_string(),
        }),
        ref other => Err(GgufError::Invalid {
            offset: at,
            what: what(),
            expected: "a UINT32".to_owned(),
            found: format!(
                "a value of type {}",
                value_type_name(other.type_id()).unwrap_or("?")
            ),
        }),
    }
}

// ---------------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------------

struct Writer {
    out: Vec<u8>,
}

impl Writer {
    fn pos(&self) -> u64 {
        self.out.len() as u64
    }

    /// Refuses to grow the output past [`MAX_HEADER_BYTES`].
    fn reserve(&self, n: u64, what: What<'_>) -> Result<(), GgufError> {
        let end = self.pos().saturating_add(n);
        if end > MAX_HEADER_BYTES {
            return Err(GgufError::TooLarge {
                what: format!("the header size needed to write {}", what()),
                found: end,
                limit: MAX_HEADER_BYTES,
            });
        }
        Ok(())
    }

    fn bytes(&mut self, b: &[u8]) {
        self.out.extend_from_slice(b);
    }

    fn u32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes());
    }

    fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }

    fn string(&mut self, s: &str, what: What<'_>) -> Result<(), GgufError> {
        let len = s.len() as u64;
        if len > MAX_STRING_BYTES {
            return Err(GgufError::TooLarge {
                what: format!("the length of {}", what()),
                found: len,
                limit: MAX_STRING_BYTES,
            });
        }
        self.reserve(8 + len, what)?;
        self.u64(len);
        self.bytes(s.as_bytes());
        Ok(())
    }

    /// Writes a value (without its type id); `depth` is the array nesting around it.
    fn value(&mut self, v: &GgufValue, depth: u32, what: What<'_>) -> Result<(), GgufError> {
        self.reserve(8, what)?;
        match v {
            GgufValue::U8(x) => self.bytes(&x.to_le_bytes()),
            GgufValue::I8(x) => self.bytes(&x.to_le_bytes()),
            GgufValue::U16(x) => self.bytes(&x.to_le_bytes()),
            GgufValue::I16(x) => self.bytes(&x.to_le_bytes()),
            GgufValue::U32(x) => self.bytes(&x.to_le_bytes()),
            GgufValue::I32(x) => self.bytes(&x.to_le_bytes()),
            GgufValue::F32(x) => self.bytes(&x.to_le_bytes()),
            GgufValue::Bool(x) => self.bytes(&[u8::from(*x)]),
            GgufValue::Str(s) => self.string(s, what)?,
            GgufValue::U64(x) => self.bytes(&x.to_le_bytes()),
            GgufValue::I64(x) => self.bytes(&x.to_le_bytes()),
            GgufValue::F64(x) => self.bytes(&x.to_le_bytes()),
            GgufValue::Array {
                elem_type,
                len,
                items,
            } => self.array(*elem_type, *len, items.as_deref(), depth + 1, what)?,
        }
        Ok(())
    }

    fn array(
        &mut self,
        elem_type: u32,
        len: u64,
        items: Option<&[GgufValue]>,
        depth: u32,
        what: What<'_>,
    ) -> Result<(), GgufError> {
        let Some(min_size) = min_encoded_size(elem_type) else {
            return Err(GgufError::Invalid {
                offset: self.pos(),
                what: format!("the element type of {}", what()),
                expected: "a GGUF value type 0-12".to_owned(),
                found: elem_type.to_string(),
            });
        };
        if elem_type == value_type::ARRAY && depth >= MAX_ARRAY_DEPTH {
            return Err(GgufError::TooLarge {
                what: format!("the array nesting depth of {}", what()),
                found: u64::from(depth) + 1,
                limit: u64::from(MAX_ARRAY_DEPTH),
            });
        }
        self.reserve(12 + len.saturating_mul(min_size), what)?;
        self.u32(elem_type);
        self.u64(len);
        match items {
            None => {
                // Placeholder elements: zeros, empty strings, empty UINT8 arrays.
                for _ in 0..len {
                    match elem_type {
                        value_type::ARRAY => {
                            self.u32(value_type::UINT8);
                            self.u64(0);
                        }
                        _ => {
                            let zeros = [0_u8; 8];
                            self.bytes(zeros.get(..min_size as usize).unwrap_or(&zeros));
                        }
                    }
                }
            }
            Some(items) => {
                if items.len() as u64 != len {
                    return Err(GgufError::Invalid {
                        offset: self.pos(),
                        what: format!("the items of {}", what()),
                        expected: format!("{len} items (the array's len)"),
                        found: format!("{} items", items.len()),
                    });
                }
                for (i, item) in items.iter().enumerate() {
                    let item_what = || format!("element {i} of {}", what());
                    if item.type_id() != elem_type {
                        return Err(GgufError::Invalid {
                            offset: self.pos(),
                            what: item_what(),
                            expected: format!(
                                "a value of the array's element type {}",
                                value_type_name(elem_type).unwrap_or("?")
                            ),
                            found: format!(
                                "a value of type {}",
                                value_type_name(item.type_id()).unwrap_or("?")
                            ),
                        });
                    }
                    self.value(item, depth, &item_what)?;
                }
            }
        }
        Ok(())
    }
}

/// Writes a GGUF header (for tests, fixtures and the browser test's sparse file): the exact inverse of
/// [`parse_header`] for the kept values.
///
/// `tensors` are `(name, dims with ne[0] first, ggml type id)`; their offsets are assigned
/// consecutively from their byte sizes, each aligned to the alignment (`general.alignment` from
/// `metadata` if present, else 32), as llama.cpp writes them. Returns the header bytes, ending at
/// `data_offset` (zero padding included); the tensor data itself is not written.
///
/// An array with `items: None` is written with `len` placeholder elements (zeros, `false`, empty
/// strings, empty arrays), so a realistic header (a 128,256-token vocabulary) needs no real tokens;
/// an array with `items: Some` must have `len` items of type `elem_type`. Everything
/// [`parse_header`] would refuse is refused here too: version other than 2 or 3, duplicate keys or
/// tensor names, bad alignment, 0 or more than 4 dims, unknown ggml types (their size is needed),
/// caps, and headers above [`MAX_HEADER_BYTES`].
pub fn encode_header(
    version: u32,
    metadata: &[(String, GgufValue)],
    tensors: &[(String, Vec<u64>, u32)],
) -> Result<Vec<u8>, GgufError> {
    if version != 2 && version != 3 {
        return Err(GgufError::UnsupportedVersion { version });
    }
    let kv_count = metadata.len() as u64;
    if kv_count > MAX_KV_COUNT {
        return Err(GgufError::TooLarge {
            what: "the metadata key/value count".to_owned(),
            found: kv_count,
            limit: MAX_KV_COUNT,
        });
    }
    let tensor_count = tensors.len() as u64;
    if tensor_count > MAX_TENSOR_COUNT {
        return Err(GgufError::TooLarge {
            what: "the tensor count".to_owned(),
            found: tensor_count,
            limit: MAX_TENSOR_COUNT,
        });
    }
    let mut w = Writer { out: Vec::new() };
    w.bytes(&GGUF_MAGIC);
    w.u32(version);
    w.u64(tensor_count);
    w.u64(kv_count);

    let mut alignment = DEFAULT_ALIGNMENT;
    let mut keys = BTreeSet::new();
    for (key, value) in metadata {
        if !keys.insert(key.as_str()) {
            return Err(GgufError::Invalid {
                offset: w.pos(),
                what: format!("metadata key '{key}'"),
                expected: "a key not used before".to_owned(),
                found: "a duplicate".to_owned(),
            });
        }
        w.string(key, &|| format!("the key '{key}'"))?;
        w.u32(value.type_id());
        let value_at = w.pos();
        if key == "general.alignment" {
            alignment = check_alignment(value, value_at)?;
        }
        w.value(value, 0, &|| format!("the value of key '{key}'"))?;
    }

    let mut names = BTreeSet::new();
    let mut next_offset = 0_u64;
    for (name, dims, ggml_type) in tensors {
        if !names.insert(name.as_str()) {
            return Err(GgufError::Invalid {
                offset: w.pos(),
                what: format!("tensor '{name}'"),
                expected: "a tensor name not used before".to_owned(),
                found: "a duplicate".to_owned(),
            });
        }
        let n_dims = u32::try_from(dims.len()).unwrap_or(u32::MAX);
        if !(1..=MAX_DIMS).contains(&n_dims) || dims.iter().any(|&d| d > MAX_TENSOR_EXTENT) {
            return Err(GgufError::Invalid {
                offset: w.pos(),
                what: format!("the shape of tensor '{name}'"),
                expected: format!("1 to {MAX_DIMS} dimensions of at most {MAX_TENSOR_EXTENT}"),
                found: format!("{dims:?}"),
            });
        }
        let info = GgufTensorInfo {
            name: name.clone(),
            dims: dims.clone(),
            ggml_type: *ggml_type,
            offset: next_offset,
        };
        if info.numel() > MAX_TENSOR_EXTENT {
            return Err(GgufError::TooLarge {
                what: format!("the element count of tensor '{name}'"),
                found: info.numel(),
                limit: MAX_TENSOR_EXTENT,
            });
        }
        let bytes = info.bytes()?;
        let end = next_offset.saturating_add(bytes);
        let next = align_up(end, alignment).unwrap_or(u64::MAX);
        if next > MAX_TENSOR_EXTENT {
            return Err(GgufError::TooLarge {
                what: format!("the end of tensor '{name}' in the data section"),
                found: next,
                limit: MAX_TENSOR_EXTENT,
            });
        }
        w.string(name, &|| format!("the name of tensor '{name}'"))?;
        w.reserve(4 + 8 * dims.len() as u64 + 12, &|| {
            format!("tensor '{name}'")
        })?;
        w.u32(n_dims);
        for &d in dims {
            w.u64(d);
        }
        w.u32(*ggml_type);
        w.u64(next_offset);
        next_offset = next;
    }

    let data_offset = align_up(w.pos(), alignment).unwrap_or(u64::MAX);
    w.reserve(data_offset.saturating_sub(w.pos()), &|| {
        format!("the padding to the alignment {alignment}")
    })?;
    w.out
        .resize(usize::try_from(data_offset).unwrap_or(usize::MAX), 0);
    Ok(w.out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ggml_type_table_matches_the_block_structs() {
        let expect = [
            ("F32", 0, 1, 4),
            ("Q4_K", 12, 256, 144),
            ("Q6_K", 14, 256, 210),
            ("Q8_K", 15, 256, 292),
            ("IQ4_XS", 23, 256, 136),
            ("MXFP4", 39, 32, 17),
            ("TQ1_0", 34, 256, 54),
            ("TQ2_0", 35, 256, 66),
            ("Q8_1", 9, 32, 36),
        ];
        for (name, id, elems, bytes) in expect {
            assert_eq!(
                ggml_type_info(id),
                Some(GgmlTypeInfo {
                    id,
                    name,
                    block_elems: elems,
                    block_bytes: bytes
                })
            );
        }
        for removed in [4, 5, 31, 32, 33, 36, 37, 38, 43, u32::MAX] {
            assert_eq!(ggml_type_info(removed), None);
        }
    }

    #[test]
    fn ggml_type_ids_and_names_are_unique() {
        for (i, a) in GGML_TYPES.iter().enumerate() {
            for b in GGML_TYPES.iter().skip(i + 1) {
                assert_ne!(a.id, b.id);
                assert!(!a.name.eq_ignore_ascii_case(b.name));
            }
            assert!(a.block_elems > 0 && a.block_bytes > 0);
        }
    }

    #[test]
    fn reader_needs_more_past_the_end() {
        let mut r = Reader {
            buf: &[1, 2, 3],
            pos: 0,
        };
        assert_eq!(
            r.u32(&|| "x".to_owned()),
            Err(GgufError::NeedMore { needed_bytes: 4 })
        );
        assert_eq!(r.pos, 0);
    }

    #[test]
    fn align_up_rounds_to_the_next_multiple() {
        assert_eq!(align_up(0, 32), Some(0));
        assert_eq!(align_up(1, 32), Some(32));
        assert_eq!(align_up(64, 32), Some(64));
        assert_eq!(align_up(u64::MAX, 32), None);
        assert_eq!(align_up(5, 0), None);
    }

    #[test]
    fn bad_magic_shows_unprintable_bytes_escaped() {
        assert_eq!(show_bytes(b"PK\x03\x04"), "PK\\x03\\x04");
        assert_eq!(
            parse_header(b"PK\x03\x04rest").map(|h| h.version),
            Err(GgufError::BadMagic {
                found: "PK\\x03\\x04".to_owned()
            })
        );
    }
}
