//! The GGUF header reader: round trips through `encode_header`, the `NeedMore` contract on every
//! prefix, every refusal (magic, version, caps, UTF-8, nesting, alignment), the ggml type table, and
//! property tests that random and mutated bytes never panic and never give tensors whose sizes
//! overflow.

use proptest::prelude::*;
use vram_core::gguf_file::{
    encode_header, file_type_name, ggml_type_by_name, ggml_type_info, parse_header, value_type,
    GgufError, GgufHeader, GgufTensorInfo, GgufValue, MAX_HEADER_BYTES,
};

const Q4_K: u32 = 12;
const Q6_K: u32 = 14;
const F32: u32 = 0;

fn s(text: &str) -> GgufValue {
    GgufValue::Str(text.to_owned())
}

fn kv(key: &str, value: GgufValue) -> (String, GgufValue) {
    (key.to_owned(), value)
}

/// A Llama-3.1-8B-like Q4_K_M header: 32 layers, GQA 32/8, 128,256 tokens.
fn llama_metadata(tokens: Option<Vec<GgufValue>>) -> Vec<(String, GgufValue)> {
    vec![
        kv("general.architecture", s("llama")),
        kv("general.name", s("Llama 3.1 8B Instruct")),
        kv("general.file_type", GgufValue::U32(15)),
        kv("general.quantization_version", GgufValue::U32(2)),
        kv("llama.block_count", GgufValue::U32(32)),
        kv("llama.context_length", GgufValue::U32(131_072)),
        kv("llama.embedding_length", GgufValue::U32(4096)),
        kv("llama.feed_forward_length", GgufValue::U32(14_336)),
        kv("llama.attention.head_count", GgufValue::U32(32)),
        kv("llama.attention.head_count_kv", GgufValue::U32(8)),
        kv("llama.rope.freq_base", GgufValue::F32(500_000.0)),
        kv(
            "llama.attention.layer_norm_rms_epsilon",
            GgufValue::F32(1e-5),
        ),
        kv("llama.vocab_size", GgufValue::U32(128_256)),
        kv("tokenizer.ggml.model", s("gpt2")),
        kv(
            "tokenizer.ggml.tokens",
            GgufValue::Array {
                elem_type: value_type::STRING,
                len: 128_256,
                items: tokens,
            },
        ),
        kv(
            "tokenizer.ggml.token_type",
            GgufValue::Array {
                elem_type: value_type::INT32,
                len: 128_256,
                items: None,
            },
        ),
        kv("tokenizer.ggml.bos_token_id", GgufValue::U32(128_000)),
        kv(
            "tokenizer.chat_template",
            s("{% for m in messages %}{{ m.content }}{% endfor %}"),
        ),
    ]
}

fn llama_tensors() -> Vec<(String, Vec<u64>, u32)> {
    let mut t = vec![("token_embd.weight".to_owned(), vec![4096, 128_256], Q4_K)];
    for l in 0..32 {
        let b = |n: &str| format!("blk.{l}.{n}");
        t.push((b("attn_norm.weight"), vec![4096], F32));
        t.push((b("attn_q.weight"), vec![4096, 4096], Q4_K));
        t.push((b("attn_k.weight"), vec![4096, 1024], Q4_K));
        t.push((b("attn_v.weight"), vec![4096, 1024], Q6_K));
        t.push((b("attn_output.weight"), vec![4096, 4096], Q4_K));
        t.push((b("ffn_norm.weight"), vec![4096], F32));
        t.push((b("ffn_gate.weight"), vec![4096, 14_336], Q4_K));
        t.push((b("ffn_up.weight"), vec![4096, 14_336], Q4_K));
        t.push((b("ffn_down.weight"), vec![14_336, 4096], Q6_K));
    }
    t.push(("output_norm.weight".to_owned(), vec![4096], F32));
    t.push(("output.weight".to_owned(), vec![4096, 128_256], Q6_K));
    t
}

fn parse_ok(bytes: &[u8]) -> GgufHeader {
    match parse_header(bytes) {
        Ok(h) => h,
        Err(e) => panic!("expected a header, got: {e}"),
    }
}

fn encode_ok(
    version: u32,
    metadata: &[(String, GgufValue)],
    tensors: &[(String, Vec<u64>, u32)],
) -> Vec<u8> {
    match encode_header(version, metadata, tensors) {
        Ok(b) => b,
        Err(e) => panic!("expected bytes, got: {e}"),
    }
}

/// A small header with every value type, a nested array, and three tensors.
fn small_header() -> Vec<u8> {
    let metadata = vec![
        kv("general.architecture", s("llama")),
        kv("a.u8", GgufValue::U8(7)),
        kv("a.i8", GgufValue::I8(-7)),
        kv("a.u16", GgufValue::U16(700)),
        kv("a.i16", GgufValue::I16(-700)),
        kv("a.u32", GgufValue::U32(70_000)),
        kv("a.i32", GgufValue::I32(-70_000)),
        kv("a.f32", GgufValue::F32(0.5)),
        kv("a.bool", GgufValue::Bool(true)),
        kv("a.u64", GgufValue::U64(1 << 40)),
        kv("a.i64", GgufValue::I64(-(1 << 40))),
        kv("a.f64", GgufValue::F64(-2.25)),
        kv(
            "a.nested",
            GgufValue::Array {
                elem_type: value_type::ARRAY,
                len: 2,
                items: Some(vec![
                    GgufValue::Array {
                        elem_type: value_type::UINT16,
                        len: 2,
                        items: Some(vec![GgufValue::U16(1), GgufValue::U16(2)]),
                    },
                    GgufValue::Array {
                        elem_type: value_type::STRING,
                        len: 1,
                        items: Some(vec![s("x")]),
                    },
                ]),
            },
        ),
    ];
    let tensors = vec![
        ("a".to_owned(), vec![64, 3], 2), // Q4_0: 2 blocks * 18 B * 3 rows
        ("b".to_owned(), vec![256], Q4_K),
        ("c".to_owned(), vec![5, 1, 1, 2], F32),
    ];
    encode_ok(3, &metadata, &tensors)
}

#[test]
fn round_trip_of_a_llama_style_header_keeps_counts_sizes_and_alignment() {
    let tokens: Vec<GgufValue> = (0..128_256).map(|i| s(&format!("tok{i}"))).collect();
    let metadata = llama_metadata(Some(tokens));
    let tensors = llama_tensors();
    let bytes = encode_ok(3, &metadata, &tensors);
    let h = parse_ok(&bytes);

    assert_eq!(h.version, 3);
    assert_eq!(h.alignment, 32);
    assert_eq!(h.data_offset, bytes.len() as u64);
    assert_eq!(h.data_offset % 32, 0);
    assert_eq!(h.metadata.len(), metadata.len());
    assert_eq!(h.tensors.len(), 2 + 32 * 9 + 1);

    assert_eq!(h.architecture(), Some("llama"));
    assert_eq!(h.arch_u64("block_count"), Some(32));
    assert_eq!(h.arch_u64("context_length"), Some(131_072));
    assert_eq!(h.arch_u64("embedding_length"), Some(4096));
    assert_eq!(h.arch_u64("attention.head_count"), Some(32));
    assert_eq!(h.arch_u64("attention.head_count_kv"), Some(8));
    assert_eq!(h.get_f64("llama.rope.freq_base"), Some(500_000.0));
    assert_eq!(h.file_type(), Some(15));
    assert_eq!(h.file_type().and_then(file_type_name), Some("Q4_K_M"));
    assert_eq!(h.array_len("tokenizer.ggml.tokens"), Some(128_256));
    assert_eq!(h.array_len("tokenizer.ggml.token_type"), Some(128_256));
    // Long arrays keep only their type and length.
    assert_eq!(
        h.get("tokenizer.ggml.tokens"),
        Some(&GgufValue::Array {
            elem_type: value_type::STRING,
            len: 128_256,
            items: None
        })
    );
    // Every kept value comes back exactly.
    for ((k, v), (pk, pv)) in metadata.iter().zip(&h.metadata) {
        assert_eq!(k, pk);
        if !matches!(v, GgufValue::Array { .. }) {
            assert_eq!(v, pv, "{k}");
        }
    }

    // Bytes per type: Q4_K 144 B per 256, Q6_K 210 B per 256, F32 4 B.
    let find = |name: &str| h.tensors.iter().find(|t| t.name == name);
    let q = find("blk.0.attn_q.weight").map(GgufTensorInfo::bytes);
    assert_eq!(q, Some(Ok(4096 / 256 * 144 * 4096)));
    let v = find("blk.31.attn_v.weight").map(GgufTensorInfo::bytes);
    assert_eq!(v, Some(Ok(4096 / 256 * 210 * 1024)));
    let out = find("output.weight").map(GgufTensorInfo::bytes);
    assert_eq!(out, Some(Ok(4096 / 256 * 210 * 128_256)));
    let norm = find("output_norm.weight").map(GgufTensorInfo::bytes);
    assert_eq!(norm, Some(Ok(4096 * 4)));
    let embd = find("token_embd.weight");
    assert_eq!(embd.map(|t| t.dims.clone()), Some(vec![4096, 128_256]));
    assert_eq!(embd.map(GgufTensorInfo::numel), Some(4096 * 128_256));

    // Offsets are consecutive, aligned, and the data section adds up.
    let mut expect_offset = 0;
    let mut total = 0;
    for t in &h.tensors {
        assert_eq!(t.offset, expect_offset, "{}", t.name);
        assert_eq!(t.offset % 32, 0);
        let b = t.bytes().unwrap_or(u64::MAX);
        total = t.offset + b;
        expect_offset = total.div_ceil(32) * 32;
    }
    assert_eq!(h.data_bytes(), Ok(total));
    // About 4.9 GB, as a Q4_K_M Llama 3.1 8B file is.
    assert!((4_500_000_000..5_200_000_000).contains(&total), "{total}");

    // Encoding the parsed header again gives the same bytes (placeholder tokens aside).
    let again = encode_ok(3, &llama_metadata(None), &tensors);
    let h2 = parse_ok(&again);
    assert_eq!(h2.tensors, h.tensors);
    assert_eq!(h2.metadata, h.metadata);
}

#[test]
fn every_prefix_of_a_valid_header_asks_for_more_bytes() {
    let bytes = small_header();
    let full = parse_ok(&bytes);
    assert_eq!(full.tensors.len(), 3);
    let mut checked = 0;
    for cut in 0..bytes.len() {
        let prefix = bytes.get(..cut).unwrap_or_default();
        match parse_header(prefix) {
            Err(GgufError::NeedMore { needed_bytes }) => {
                assert!(
                    needed_bytes > cut as u64,
                    "prefix {cut}: needs {needed_bytes}"
                );
                assert!(
                    needed_bytes <= bytes.len() as u64,
                    "prefix {cut}: overshoots"
                );
                checked += 1;
            }
            // The padding after the tensor infos is not needed to read the header.
            Ok(h) => assert_eq!(h, full, "prefix {cut}"),
            Err(e) => panic!("prefix of {cut} bytes: {e}"),
        }
    }
    assert!(checked > bytes.len() / 2);
}

#[test]
fn a_caller_doubling_its_chunk_reads_the_whole_header() {
    let metadata = llama_metadata(None);
    let bytes = encode_ok(3, &metadata, &llama_tensors());
    let mut have = 64_usize;
    let mut calls = 0;
    let header = loop {
        calls += 1;
        let prefix = bytes.get(..have.min(bytes.len())).unwrap_or_default();
        match parse_header(prefix) {
            Err(GgufError::NeedMore { needed_bytes }) => {
                assert!(needed_bytes > prefix.len() as u64);
                have = (needed_bytes as usize).max(2 * have);
            }
            other => break other,
        }
        assert!(calls < 64);
    };
    assert_eq!(header.map(|h| h.tensors.len()), Ok(291));
    assert!(calls < 20, "{calls} calls");
}

#[test]
fn wrong_magic_is_refused_with_the_bytes_found() {
    let err = parse_header(b"PK\x03\x04\x14\x00\x00\x00").err();
    assert_eq!(
        err,
        Some(GgufError::BadMagic {
            found: "PK\\x03\\x04".to_owned()
        })
    );
    let text = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(text.contains("not a GGUF file"), "{text}");
    assert!(text.contains("expected \"GGUF\""), "{text}");
    // A short buffer that cannot become GGUF is refused at once; one that can asks for more.
    assert!(matches!(
        parse_header(b"{\""),
        Err(GgufError::BadMagic { .. })
    ));
    assert_eq!(
        parse_header(b"GG"),
        Err(GgufError::NeedMore { needed_bytes: 4 })
    );
    assert_eq!(
        parse_header(b""),
        Err(GgufError::NeedMore { needed_bytes: 4 })
    );
}

fn with_u32_at(mut bytes: Vec<u8>, at: usize, v: u32) -> Vec<u8> {
    for (i, b) in v.to_le_bytes().into_iter().enumerate() {
        if let Some(slot) = bytes.get_mut(at + i) {
            *slot = b;
        }
    }
    bytes
}

fn with_u64_at(mut bytes: Vec<u8>, at: usize, v: u64) -> Vec<u8> {
    for (i, b) in v.to_le_bytes().into_iter().enumerate() {
        if let Some(slot) = bytes.get_mut(at + i) {
            *slot = b;
        }
    }
    bytes
}

#[test]
fn version_1_is_refused_with_an_explanation() {
    let bytes = with_u32_at(small_header(), 4, 1);
    let err = parse_header(&bytes).err();
    assert_eq!(err, Some(GgufError::UnsupportedVersion { version: 1 }));
    let text = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(
        text.contains("version 1") && text.contains("32-bit"),
        "{text}"
    );
}

#[test]
fn version_4_and_big_endian_files_are_refused() {
    let err = parse_header(&with_u32_at(small_header(), 4, 4)).err();
    assert_eq!(err, Some(GgufError::UnsupportedVersion { version: 4 }));
    assert!(err
        .map(|e| e.to_string())
        .unwrap_or_default()
        .contains("2 and 3"));
    let swapped = parse_header(&with_u32_at(small_header(), 4, 3 << 24)).err();
    assert!(swapped
        .map(|e| e.to_string())
        .unwrap_or_default()
        .contains("big-endian"));
    assert_eq!(
        encode_header(1, &[], &[]),
        Err(GgufError::UnsupportedVersion { version: 1 })
    );
}

#[test]
fn version_2_headers_parse_like_version_3() {
    let h = parse_ok(&with_u32_at(small_header(), 4, 2));
    assert_eq!(h.version, 2);
    assert_eq!(h.tensors.len(), 3);
}

#[test]
fn huge_tensor_and_key_counts_are_too_large() {
    let bytes = with_u64_at(small_header(), 8, 1 << 40);
    assert!(matches!(
        parse_header(&bytes),
        Err(GgufError::TooLarge { found, limit: 1_000_000, .. }) if found == 1 << 40
    ));
    let bytes = with_u64_at(small_header(), 16, u64::MAX);
    let err = parse_header(&bytes).err();
    assert!(matches!(err, Some(GgufError::TooLarge { .. })), "{err:?}");
    // Within the caps, but more entries than the bytes can hold: ask for at least their minimum.
    let bytes = with_u64_at(small_header(), 8, 900_000);
    match parse_header(&bytes) {
        Err(GgufError::NeedMore { needed_bytes }) => assert!(needed_bytes >= 900_000 * 32),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_string_length_of_2_pow_60_is_too_large() {
    // The first key's length is at offset 24.
    let bytes = with_u64_at(small_header(), 24, 1 << 60);
    let err = parse_header(&bytes).err();
    match &err {
        Some(GgufError::TooLarge { what, found, limit }) => {
            assert_eq!(*found, 1 << 60);
            assert_eq!(*limit, 64 << 20);
            assert!(what.contains("key of metadata entry #0"), "{what}");
        }
        other => panic!("{other:?}"),
    }
    // A length under the cap but past the buffer asks for exactly the bytes it would need.
    let bytes = with_u64_at(small_header(), 24, 1000);
    assert_eq!(
        parse_header(&bytes),
        Err(GgufError::NeedMore {
            needed_bytes: 32 + 1000
        })
    );
}

#[test]
fn an_array_longer_than_the_header_cap_is_too_large() {
    let metadata = [kv(
        "big",
        GgufValue::Array {
            elem_type: value_type::UINT8,
            len: 3,
            items: None,
        },
    )];
    let bytes = encode_ok(3, &metadata, &[]);
    // Array len: after magic 4, version 4, counts 16, key 8+3, type 4, elem type 4.
    let bytes = with_u64_at(bytes, 4 + 4 + 16 + 11 + 4 + 4, 1 << 40);
    assert!(matches!(
        parse_header(&bytes),
        Err(GgufError::TooLarge { limit, .. }) if limit == MAX_HEADER_BYTES
    ));
    let bytes = with_u64_at(
        encode_ok(3, &metadata, &[]),
        4 + 4 + 16 + 11 + 4 + 4,
        1 << 20,
    );
    assert_eq!(
        parse_header(&bytes),
        Err(GgufError::NeedMore {
            needed_bytes: 4 + 4 + 16 + 11 + 4 + 4 + 8 + (1 << 20)
        })
    );
}

#[test]
fn nested_arrays_round_trip_up_to_four_levels() {
    let h = parse_ok(&small_header());
    let nested = h.get("a.nested");
    match nested {
        Some(GgufValue::Array {
            elem_type,
            len: 2,
            items: Some(items),
        }) => {
            assert_eq!(*elem_type, value_type::ARRAY);
            assert_eq!(items.len(), 2);
        }
        other => panic!("{other:?}"),
    }
    let mut deep = GgufValue::Array {
        elem_type: value_type::UINT8,
        len: 1,
        items: Some(vec![GgufValue::U8(9)]),
    };
    for _ in 0..3 {
        deep = GgufValue::Array {
            elem_type: value_type::ARRAY,
            len: 1,
            items: Some(vec![deep]),
        };
    }
    let metadata = [kv("deep", deep.clone())];
    let h = parse_ok(&encode_ok(3, &metadata, &[]));
    assert_eq!(h.get("deep"), Some(&deep));

    // A fifth level is refused, by the writer and by the reader.
    let deeper = GgufValue::Array {
        elem_type: value_type::ARRAY,
        len: 1,
        items: Some(vec![deep]),
    };
    assert!(matches!(
        encode_header(3, &[kv("deeper", deeper)], &[]),
        Err(GgufError::TooLarge {
            found: 5,
            limit: 4,
            ..
        })
    ));
    let five = [kv(
        "x",
        GgufValue::Array {
            elem_type: value_type::ARRAY,
            len: 1,
            items: Some(vec![GgufValue::Array {
                elem_type: value_type::ARRAY,
                len: 1,
                items: Some(vec![GgufValue::Array {
                    elem_type: value_type::ARRAY,
                    len: 1,
                    items: Some(vec![GgufValue::Array {
                        elem_type: value_type::UINT8,
                        len: 0,
                        items: Some(vec![]),
                    }]),
                }]),
            }]),
        },
    )];
    let mut bytes = encode_ok(3, &five, &[]);
    // The innermost element type (UINT8 = 0) sits 8 + 4 bytes before the end of the kv, which is
    // followed by padding; find it: it is the last 0x00000000 type before the final u64 len 0.
    let kv_end = 4 + 4 + 16 + (8 + 1) + 4 + 3 * 12 + 12;
    let inner_type_at = kv_end - 12;
    bytes = with_u32_at(bytes, inner_type_at, value_type::ARRAY);
    let err = parse_header(&bytes).err();
    assert!(
        matches!(&err, Some(GgufError::TooLarge { what, found: 5, limit: 4 }) if what.contains("'x'")),
        "{err:?}"
    );
}

#[test]
fn invalid_utf8_in_a_value_names_the_key() {
    let metadata = [kv("general.name", s("abcd"))];
    let bytes = encode_ok(3, &metadata, &[]);
    // Value bytes start after magic, version, counts, key (8 + 12), type 4, string length 8.
    let at = 4 + 4 + 16 + 20 + 4 + 8 + 1;
    let mut bytes = bytes;
    if let Some(b) = bytes.get_mut(at) {
        *b = 0xff;
    }
    match parse_header(&bytes) {
        Err(GgufError::Invalid {
            offset,
            what,
            expected,
            ..
        }) => {
            assert_eq!(offset, at as u64);
            assert!(what.contains("'general.name'"), "{what}");
            assert!(expected.contains("UTF-8"));
        }
        other => panic!("{other:?}"),
    }
    // A bad key names the entry number.
    let mut bytes = encode_ok(3, &metadata, &[]);
    if let Some(b) = bytes.get_mut(4 + 4 + 16 + 8) {
        *b = 0xc3;
    }
    let err = parse_header(&bytes)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("metadata entry #0"), "{err}");
}

#[test]
fn an_unknown_value_type_is_invalid() {
    let bytes = encode_ok(3, &[kv("k", GgufValue::U8(1))], &[]);
    let bytes = with_u32_at(bytes, 4 + 4 + 16 + 9, 13);
    match parse_header(&bytes) {
        Err(GgufError::Invalid { offset, what, .. }) => {
            assert_eq!(offset, 33);
            assert!(what.contains("'k'"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn alignment_comes_from_general_alignment_and_must_be_a_power_of_two() {
    let t = [
        ("w".to_owned(), vec![32], F32),
        ("v".to_owned(), vec![1], F32),
    ];
    let h = parse_ok(&encode_ok(
        3,
        &[kv("general.alignment", GgufValue::U32(256))],
        &t,
    ));
    assert_eq!(h.alignment, 256);
    assert_eq!(h.data_offset % 256, 0);
    assert_eq!(h.tensors.get(1).map(|t| t.offset), Some(256));
    assert_eq!(h.data_bytes(), Ok(256 + 4));

    for bad in [0, 3, 48] {
        let err = encode_header(3, &[kv("general.alignment", GgufValue::U32(bad))], &[]);
        assert!(
            matches!(err, Err(GgufError::Invalid { .. })),
            "{bad}: {err:?}"
        );
        // The reader refuses a file with it too.
        let ok = encode_ok(3, &[kv("general.alignment", GgufValue::U32(64))], &[]);
        let bytes = with_u32_at(ok, 4 + 4 + 16 + 8 + 17 + 4, bad);
        match parse_header(&bytes) {
            Err(GgufError::Invalid { what, expected, .. }) => {
                assert!(what.contains("general.alignment"));
                assert!(expected.contains("power of two"));
            }
            other => panic!("{bad}: {other:?}"),
        }
    }
    let err = encode_header(3, &[kv("general.alignment", GgufValue::U64(32))], &[]);
    assert!(matches!(err, Err(GgufError::Invalid { .. })));
}

#[test]
fn duplicate_keys_and_tensor_names_are_invalid() {
    let bytes = encode_ok(
        3,
        &[kv("a", GgufValue::U8(1)), kv("b", GgufValue::U8(2))],
        &[],
    );
    // Rename key "b" to "a".
    let mut bytes = bytes;
    if let Some(c) = bytes.get_mut(4 + 4 + 16 + 9 + 4 + 1 + 8) {
        *c = b'a';
    }
    let err = parse_header(&bytes)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("duplicate key 'a'"), "{err}");
    let t = [
        ("w".to_owned(), vec![32], F32),
        ("w".to_owned(), vec![32], F32),
    ];
    assert!(matches!(
        encode_header(3, &[], &t),
        Err(GgufError::Invalid { .. })
    ));
}

#[test]
fn tensor_dims_are_checked() {
    // 0 and 5 dims.
    for dims in [vec![], vec![1, 1, 1, 1, 1]] {
        let err = encode_header(3, &[], &[("w".to_owned(), dims, F32)]);
        assert!(matches!(err, Err(GgufError::Invalid { .. })));
    }
    // A product that overflows.
    let err = encode_header(3, &[], &[("w".to_owned(), vec![1 << 32, 1 << 32], F32)]);
    assert!(matches!(err, Err(GgufError::TooLarge { .. })), "{err:?}");
    // ne0 not a whole number of Q4_K blocks: refused by the reader.
    let ok = encode_ok(3, &[], &[("w".to_owned(), vec![256, 2], Q4_K)]);
    let bytes = with_u64_at(ok, 4 + 4 + 16 + 9 + 4, 100);
    match parse_header(&bytes) {
        Err(GgufError::Invalid { what, expected, .. }) => {
            assert!(what.contains("'w'"));
            assert!(expected.contains("256"), "{expected}");
        }
        other => panic!("{other:?}"),
    }
    // n_dims = 7 in the file.
    let ok = encode_ok(3, &[], &[("w".to_owned(), vec![256, 2], Q4_K)]);
    let bytes = with_u32_at(ok, 4 + 4 + 16 + 9, 7);
    assert!(matches!(
        parse_header(&bytes),
        Err(GgufError::Invalid { .. })
    ));
}

#[test]
fn an_unknown_ggml_type_parses_but_has_no_byte_size() {
    let ok = encode_ok(3, &[], &[("w".to_owned(), vec![32, 2], F32)]);
    // Type follows name (8 + 1), n_dims (4) and two dims (16).
    let bytes = with_u32_at(ok, 4 + 4 + 16 + 9 + 4 + 16, 99);
    let h = parse_ok(&bytes);
    let t = h.tensors.first().cloned().unwrap_or(GgufTensorInfo {
        name: String::new(),
        dims: vec![],
        ggml_type: 0,
        offset: 0,
    });
    assert_eq!(t.ggml_type, 99);
    assert_eq!(t.numel(), 64);
    let err = t.bytes().err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err.contains("'w'") && err.contains("99"), "{err}");
    assert!(h.data_bytes().is_err());
    // Removed ids are unknown too.
    for id in [4, 5, 31, 36] {
        let t = GgufTensorInfo {
            name: "x".into(),
            dims: vec![256],
            ggml_type: id,
            offset: 0,
        };
        assert!(t.bytes().is_err(), "{id}");
    }
}

#[test]
fn ggml_types_have_the_block_sizes_of_ggml() {
    let expect: [(&str, u32, u64, u64); 35] = [
        ("F32", 0, 1, 4),
        ("F16", 1, 1, 2),
        ("Q4_0", 2, 32, 18),
        ("Q4_1", 3, 32, 20),
        ("Q5_0", 6, 32, 22),
        ("Q5_1", 7, 32, 24),
        ("Q8_0", 8, 32, 34),
        ("Q8_1", 9, 32, 36),
        ("Q2_K", 10, 256, 84),
        ("Q3_K", 11, 256, 110),
        ("Q4_K", 12, 256, 144),
        ("Q5_K", 13, 256, 176),
        ("Q6_K", 14, 256, 210),
        ("Q8_K", 15, 256, 292),
        ("IQ2_XXS", 16, 256, 66),
        ("IQ2_XS", 17, 256, 74),
        ("IQ3_XXS", 18, 256, 98),
        ("IQ1_S", 19, 256, 50),
        ("IQ4_NL", 20, 32, 18),
        ("IQ3_S", 21, 256, 110),
        ("IQ2_S", 22, 256, 82),
        ("IQ4_XS", 23, 256, 136),
        ("I8", 24, 1, 1),
        ("I16", 25, 1, 2),
        ("I32", 26, 1, 4),
        ("I64", 27, 1, 8),
        ("F64", 28, 1, 8),
        ("IQ1_M", 29, 256, 56),
        ("BF16", 30, 1, 2),
        ("TQ1_0", 34, 256, 54),
        ("TQ2_0", 35, 256, 66),
        ("MXFP4", 39, 32, 17),
        ("NVFP4", 40, 64, 36),
        ("Q1_0", 41, 128, 18),
        ("Q2_0", 42, 64, 18),
    ];
    for (name, id, elems, bytes) in expect {
        let info = ggml_type_info(id);
        assert_eq!(
            info.map(|t| (t.name, t.block_elems, t.block_bytes)),
            Some((name, elems, bytes))
        );
        assert_eq!(ggml_type_by_name(&name.to_lowercase()), info);
    }
    assert_eq!(ggml_type_by_name("q4_K").map(|t| t.id), Some(12));
    assert_eq!(ggml_type_by_name("Q4_K_M"), None);
    for gone in [4, 5, 31, 32, 33, 36, 37, 38, 43, 1000] {
        assert_eq!(ggml_type_info(gone), None, "{gone}");
    }
}

#[test]
fn file_type_names_follow_llama_ftype() {
    let expect = [
        (0, "F32"),
        (1, "F16"),
        (2, "Q4_0"),
        (7, "Q8_0"),
        (10, "Q2_K"),
        (15, "Q4_K_M"),
        (17, "Q5_K_M"),
        (18, "Q6_K"),
        (21, "Q2_K_S"),
        (30, "IQ4_XS"),
        (32, "BF16"),
        (36, "TQ1_0"),
        (38, "MXFP4_MOE"),
    ];
    for (v, name) in expect {
        assert_eq!(file_type_name(v), Some(name), "{v}");
    }
    for gone in [4, 5, 6, 33, 34, 35, 1024] {
        assert_eq!(file_type_name(gone), None, "{gone}");
    }
}

#[test]
fn getters_convert_only_what_fits() {
    let metadata = [
        kv("general.architecture", s("qwen3moe")),
        kv("qwen3moe.block_count", GgufValue::U64(48)),
        kv("neg", GgufValue::I32(-1)),
        kv("pos", GgufValue::I16(5)),
        kv("flag", GgufValue::Bool(true)),
        kv("f", GgufValue::F32(0.25)),
        kv(
            "qwen3moe.rope.dimension_sections",
            GgufValue::Array {
                elem_type: value_type::INT32,
                len: 4,
                items: Some(vec![
                    GgufValue::I32(24),
                    GgufValue::I32(20),
                    GgufValue::I32(20),
                    GgufValue::I32(0),
                ]),
            },
        ),
        kv(
            "mixed",
            GgufValue::Array {
                elem_type: value_type::INT32,
                len: 2,
                items: Some(vec![GgufValue::I32(1), GgufValue::I32(-1)]),
            },
        ),
    ];
    let h = parse_ok(&encode_ok(3, &metadata, &[]));
    assert_eq!(h.arch_u64("block_count"), Some(48));
    assert_eq!(h.get_u64("neg"), None);
    assert_eq!(h.get_u64("pos"), Some(5));
    assert_eq!(h.get_u64("flag"), None);
    assert_eq!(h.get_u64("f"), None);
    assert_eq!(h.get_f64("f"), Some(0.25));
    assert_eq!(h.get_f64("pos"), Some(5.0));
    assert_eq!(h.get_str("general.architecture"), Some("qwen3moe"));
    assert_eq!(h.get_str("pos"), None);
    assert_eq!(
        h.arch_u64_array("rope.dimension_sections"),
        Some(vec![24, 20, 20, 0])
    );
    assert_eq!(h.arch_u64_array("block_count"), None);
    assert_eq!(h.get_u64_array("mixed"), None);
    assert_eq!(h.array_len("mixed"), Some(2));
    assert_eq!(h.array_len("pos"), None);
    assert_eq!(h.get("missing"), None);
    assert_eq!(h.file_type(), None);
    assert_eq!(h.data_bytes(), Ok(0));
}

#[test]
fn arrays_are_kept_up_to_their_limits() {
    let metadata = [
        kv(
            "n65536",
            GgufValue::Array {
                elem_type: value_type::FLOAT32,
                len: 65_536,
                items: None,
            },
        ),
        kv(
            "n65537",
            GgufValue::Array {
                elem_type: value_type::FLOAT32,
                len: 65_537,
                items: None,
            },
        ),
        kv(
            "s256",
            GgufValue::Array {
                elem_type: value_type::STRING,
                len: 256,
                items: None,
            },
        ),
        kv(
            "s257",
            GgufValue::Array {
                elem_type: value_type::STRING,
                len: 257,
                items: None,
            },
        ),
    ];
    let h = parse_ok(&encode_ok(3, &metadata, &[]));
    let kept = |k: &str| match h.get(k) {
        Some(GgufValue::Array { items, .. }) => items.as_ref().map(Vec::len),
        _ => None,
    };
    assert_eq!(kept("n65536"), Some(65_536));
    assert_eq!(kept("n65537"), None);
    assert_eq!(kept("s256"), Some(256));
    assert_eq!(kept("s257"), None);
    assert_eq!(h.array_len("s257"), Some(257));
}

#[test]
fn the_writer_refuses_arrays_whose_items_do_not_match() {
    let wrong_len = GgufValue::Array {
        elem_type: value_type::UINT8,
        len: 2,
        items: Some(vec![GgufValue::U8(1)]),
    };
    let wrong_type = GgufValue::Array {
        elem_type: value_type::UINT8,
        len: 1,
        items: Some(vec![GgufValue::U16(1)]),
    };
    let unknown = GgufValue::Array {
        elem_type: 13,
        len: 0,
        items: None,
    };
    for v in [wrong_len, wrong_type, unknown] {
        assert!(matches!(
            encode_header(3, &[kv("k", v)], &[]),
            Err(GgufError::Invalid { .. })
        ));
    }
    let huge = GgufValue::Array {
        elem_type: value_type::UINT64,
        len: 1 << 40,
        items: None,
    };
    assert!(matches!(
        encode_header(3, &[kv("k", huge)], &[]),
        Err(GgufError::TooLarge { .. })
    ));
}

#[test]
fn error_messages_name_the_field_offset_and_expectation() {
    let e = GgufError::Invalid {
        offset: 42,
        what: "the value of key 'general.alignment'".into(),
        expected: "a power of two".into(),
        found: "48".into(),
    };
    assert_eq!(
        e.to_string(),
        "invalid GGUF header at byte 42: the value of key 'general.alignment': expected a power \
         of two, found 48"
    );
    let e = GgufError::NeedMore { needed_bytes: 4096 };
    assert!(e.to_string().contains("4096"));
}

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

/// On `Ok`, every tensor of a known type has a byte size and the data section adds up.
fn check(bytes: &[u8]) {
    match parse_header(bytes) {
        Ok(h) => {
            assert!(h.data_offset >= 24 && h.data_offset % h.alignment == 0);
            assert!(h.data_offset <= MAX_HEADER_BYTES);
            for t in &h.tensors {
                assert!(t.numel() <= i64::MAX as u64);
                if ggml_type_info(t.ggml_type).is_some() {
                    let b = t.bytes();
                    assert!(matches!(b, Ok(n) if n <= i64::MAX as u64), "{b:?}");
                    assert!(t.offset.checked_add(b.unwrap_or(0)).is_some());
                }
            }
            if h.tensors
                .iter()
                .all(|t| ggml_type_info(t.ggml_type).is_some())
            {
                assert!(h.data_bytes().is_ok());
            }
        }
        Err(GgufError::NeedMore { needed_bytes }) => {
            assert!(needed_bytes > bytes.len() as u64);
            assert!(needed_bytes <= MAX_HEADER_BYTES);
        }
        Err(_) => {}
    }
}

fn scalar() -> impl Strategy<Value = GgufValue> {
    prop_oneof![
        any::<u8>().prop_map(GgufValue::U8),
        any::<i8>().prop_map(GgufValue::I8),
        any::<u16>().prop_map(GgufValue::U16),
        any::<i16>().prop_map(GgufValue::I16),
        any::<u32>().prop_map(GgufValue::U32),
        any::<i32>().prop_map(GgufValue::I32),
        (-1e30_f32..1e30).prop_map(GgufValue::F32),
        any::<bool>().prop_map(GgufValue::Bool),
        "[a-zé✓ ]{0,12}".prop_map(GgufValue::Str),
        any::<u64>().prop_map(GgufValue::U64),
        any::<i64>().prop_map(GgufValue::I64),
        (-1e300_f64..1e300).prop_map(GgufValue::F64),
    ]
}

fn value() -> impl Strategy<Value = GgufValue> {
    prop_oneof![
        3 => scalar(),
        1 => prop::collection::vec(any::<u32>(), 0..20).prop_map(|v| GgufValue::Array {
            elem_type: value_type::UINT32,
            len: v.len() as u64,
            items: Some(v.into_iter().map(GgufValue::U32).collect()),
        }),
        1 => prop::collection::vec("[a-z]{0,5}", 0..10).prop_map(|v| GgufValue::Array {
            elem_type: value_type::STRING,
            len: v.len() as u64,
            items: Some(v.into_iter().map(GgufValue::Str).collect()),
        }),
    ]
}

fn tensor() -> impl Strategy<Value = (Vec<u64>, u32)> {
    let ty = prop::sample::select(vec![
        0_u32, 1, 2, 8, 10, 12, 14, 16, 23, 30, 34, 39, 40, 41, 42,
    ]);
    (ty, prop::collection::vec(1_u64..5, 1..=4)).prop_map(|(t, mut dims)| {
        let block = ggml_type_info(t).map_or(1, |i| i.block_elems);
        if let Some(d0) = dims.first_mut() {
            *d0 *= block;
        }
        (dims, t)
    })
}

fn valid_header() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec(value(), 0..8),
        prop::collection::vec(tensor(), 0..6),
        prop::sample::select(vec![None, Some(1_u32), Some(8), Some(32), Some(64)]),
    )
        .prop_map(|(values, tensors, alignment)| {
            let mut metadata: Vec<(String, GgufValue)> = values
                .into_iter()
                .enumerate()
                .map(|(i, v)| (format!("k{i}"), v))
                .collect();
            if let Some(a) = alignment {
                metadata.push(kv("general.alignment", GgufValue::U32(a)));
            }
            let tensors: Vec<(String, Vec<u64>, u32)> = tensors
                .into_iter()
                .enumerate()
                .map(|(i, (d, t))| (format!("t{i}"), d, t))
                .collect();
            encode_header(3, &metadata, &tensors).unwrap_or_default()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        check(&bytes);
        let mut with_magic = b"GGUF\x03\x00\x00\x00".to_vec();
        with_magic.extend_from_slice(&bytes);
        check(&with_magic);
    }

    #[test]
    fn mutations_of_a_valid_header_never_panic_nor_overflow(
        header in valid_header(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0_u8..4), 1..6),
        cut in any::<prop::sample::Index>(),
    ) {
        prop_assert!(!header.is_empty());
        check(&header);
        let mut bytes = header.clone();
        for (at, byte, kind) in edits {
            if bytes.is_empty() {
                break;
            }
            let i = at.index(bytes.len());
            match kind {
                // One byte.
                0 => if let Some(b) = bytes.get_mut(i) { *b = byte },
                // A large little-endian number over 8 bytes (counts, lengths, dims, offsets).
                1 => for (j, b) in (u64::MAX >> (byte % 64)).to_le_bytes().into_iter().enumerate() {
                    if let Some(slot) = bytes.get_mut(i + j) { *slot = b }
                },
                // A small number over 4 bytes (types, n_dims).
                2 => for (j, b) in u32::from(byte % 16).to_le_bytes().into_iter().enumerate() {
                    if let Some(slot) = bytes.get_mut(i + j) { *slot = b }
                },
                _ => bytes.truncate(i),
            }
        }
        check(&bytes);
        let prefix = bytes.get(..cut.index(bytes.len() + 1)).unwrap_or_default();
        check(prefix);
    }

    #[test]
    fn encode_then_parse_returns_the_same_header(
        values in prop::collection::vec(value(), 0..8),
        tensors in prop::collection::vec(tensor(), 0..6),
        version in 2_u32..=3,
    ) {
        let metadata: Vec<(String, GgufValue)> =
            values.into_iter().enumerate().map(|(i, v)| (format!("key.{i}"), v)).collect();
        let tensors: Vec<(String, Vec<u64>, u32)> =
            tensors.into_iter().enumerate().map(|(i, (d, t))| (format!("blk.{i}.w"), d, t)).collect();
        let bytes = encode_header(version, &metadata, &tensors);
        prop_assert!(bytes.is_ok(), "{:?}", bytes);
        let bytes = bytes.unwrap_or_default();
        let h = parse_header(&bytes);
        prop_assert!(h.is_ok(), "{:?}", h);
        let h = h.unwrap_or_else(|_| unreachable!());
        prop_assert_eq!(h.version, version);
        prop_assert_eq!(&h.metadata, &metadata);
        prop_assert_eq!(h.data_offset, bytes.len() as u64);
        prop_assert_eq!(h.tensors.len(), tensors.len());
        for (t, (name, dims, ty)) in h.tensors.iter().zip(&tensors) {
            prop_assert_eq!(&t.name, name);
            prop_assert_eq!(&t.dims, dims);
            prop_assert_eq!(t.ggml_type, *ty);
            prop_assert_eq!(t.offset % 32, 0);
        }
        // Every prefix asks for more and never for less than it has.
        for cut in [0, 3, 4, 8, 23, 24, bytes.len() / 2, bytes.len().saturating_sub(1)] {
            if let Some(prefix) = bytes.get(..cut) {
                if let Err(e) = parse_header(prefix) {
                    prop_assert!(matches!(e, GgufError::NeedMore { needed_bytes } if needed_bytes > cut as u64), "{}", e);
                }
            }
        }
    }
}
