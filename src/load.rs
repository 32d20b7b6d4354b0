//! Turning what the user gives the page (a dropped or opened file, pasted text, a preset id) into a
//! parsed model, with the size guard that refuses huge files before they are read. Pure logic: the
//! browser glue lives in `model_input.rs`, so these rules are tested natively.

use vram_core::gguf_file::GgufHeader;
use vram_core::{parse_config, presets, ConfigError, ModelSpec, ParamCounts};

/// Largest file the page reads. A `config.json` is a few KB (DeepSeek-V3's, among the largest, is
/// 1.7 KB); `vram measure` reports are tens of KB. Anything bigger is a weights file or a mistake,
/// and reading it whole would freeze the tab.
pub const MAX_INPUT_BYTES: u64 = 4 << 20;

/// Where the model on screen came from (kept in the share link).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelSource {
    /// A bundled preset, by id.
    Preset(&'static str),
    /// A file the user dropped or opened, by file name.
    File(String),
    /// Text pasted into the page.
    Pasted,
}

/// A successfully parsed model with its exact parameter counts.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedModel {
    /// Where it came from.
    pub source: ModelSource,
    /// The config text as given (kept so a share link can carry a non-preset config).
    pub text: String,
    /// The validated model.
    pub spec: ModelSpec,
    /// Exact parameter counts from the core.
    pub params: ParamCounts,
}

/// Why input was not loaded. Shown next to the input; the previous model stays on screen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoadError {
    /// The file is larger than [`MAX_INPUT_BYTES`]; it was not read.
    TooLarge {
        /// File name.
        name: String,
        /// Its size in bytes.
        size_bytes: u64,
    },
    /// The browser could not read the file (permissions, removed while reading).
    Unreadable {
        /// File name.
        name: String,
    },
    /// The text is not a usable config; the core's error.
    Config {
        /// File name, or `None` for pasted text and presets.
        name: Option<String>,
        /// The core's message naming the field or the JSON position.
        error: ConfigError,
    },
    /// A `vram measure` report whose config is neither bundled nor on screen.
    ReportConfigMissing {
        /// The config name in the report.
        name: String,
    },
    /// The part of the page that reads and shows models (its wasm chunk, see `crate::deferred`)
    /// could not be fetched: offline before the service worker had stored it.
    ChunkUnavailable,
    /// No preset has this id (a stale share link).
    UnknownPreset {
        /// The id asked for.
        id: String,
    },
    /// A `.gguf` file whose header could not be read (bad magic, truncated, above the 256 MiB
    /// header cap, malformed): the core's message.
    Gguf {
        /// File name.
        name: String,
        /// The core's error.
        error: vram_core::gguf_file::GgufError,
    },
    /// A safetensors header or index that could not be read (cut off, a length past the end of
    /// the file, duplicate keys, over the 100 MB cap, malformed): the core's message.
    Safetensors {
        /// File name.
        name: String,
        /// The core's error.
        error: vram_core::safetensors_file::SafetensorsError,
        /// The file's size in bytes (said when the header needs more than the file has).
        file_bytes: u64,
    },
    /// Files given together that do not make one checkpoint.
    Checkpoint {
        /// What is wrong.
        problem: CheckpointProblem,
    },
}

/// Why files given together are not one checkpoint (see [`load_checkpoint`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckpointProblem {
    /// More than one config among the files.
    SeveralConfigs {
        /// Their names.
        names: Vec<String>,
    },
    /// A file that is neither a config, a `.safetensors` file nor an index.
    Unexpected {
        /// Its name.
        name: String,
    },
    /// The index names more shard files than were given (and some were given).
    MissingShards {
        /// The index file name.
        index: String,
        /// Shard files the index names.
        named: u64,
        /// Shard files given.
        given: u64,
    },
}

/// The first read of a GGUF file: 1 MiB (most headers are a few MiB; the read grows as needed).
pub const GGUF_FIRST_READ: u64 = 1 << 20;

/// Whether a file name is a GGUF model (`.gguf`, any case).
pub fn is_gguf(name: &str) -> bool {
    name.to_ascii_lowercase().ends_with(".gguf")
}

/// What to do after reading the first `buf.len()` bytes of a GGUF file of `file_size` bytes.
#[derive(Debug)]
pub enum GgufStep {
    /// The header was read (or refused): the parsed header or the error.
    Done(Box<Result<GgufHeader, LoadError>>),
    /// Read the first this many bytes and call again.
    Read(u64),
}

/// The header-only read loop of a GGUF file, one step at a time: parse what was read; on
/// `NeedMore` ask for the larger of `needed_bytes` and twice what was read, never more than the
/// file or `MAX_HEADER_BYTES` (the core refuses headers past that cap). The tensor data is never read.
pub fn gguf_step(name: &str, file_size: u64, buf: &[u8]) -> GgufStep {
    use vram_core::gguf_file::{parse_header, GgufError, MAX_HEADER_BYTES};
    let fail = |error: GgufError| {
        GgufStep::Done(Box::new(Err(LoadError::Gguf {
            name: name.to_string(),
            error,
        })))
    };
    match parse_header(buf) {
        Ok(h) => GgufStep::Done(Box::new(Ok(h))),
        Err(GgufError::NeedMore { needed_bytes }) => {
            let have = buf.len() as u64;
            if have >= file_size {
                // the whole file was read: it is truncated
                return fail(GgufError::NeedMore { needed_bytes });
            }
            if needed_bytes > MAX_HEADER_BYTES {
                return fail(GgufError::TooLarge {
                    what: "the GGUF header".into(),
                    found: needed_bytes,
                    limit: MAX_HEADER_BYTES,
                });
            }
            let next = needed_bytes
                .max(have.saturating_mul(2))
                .min(MAX_HEADER_BYTES)
                .min(file_size);
            GgufStep::Read(next)
        }
        Err(e) => fail(e),
    }
}

/// Whether every dropped file is a GGUF file (then they are one model: a single file or the
/// parts of a split one).
pub fn all_gguf<S: AsRef<str>>(names: &[S]) -> bool {
    !names.is_empty() && names.iter().all(|n| is_gguf(n.as_ref()))
}

pub use vram_core::gguf_model::split_part_name;

/// The model name of a split model's parts: `NAME.gguf` when every part is named
/// `NAME-0000i-of-0000n.gguf` (the CLI's name), else the files' common prefix (without trailing
/// part numbers and separators) plus `.gguf`.
pub fn split_model_name<S: AsRef<str>>(names: &[S]) -> String {
    let parsed: Vec<_> = names.iter().map(|n| split_part_name(n.as_ref())).collect();
    if let Some(Some((prefix, _, _))) = parsed.first() {
        if parsed
            .iter()
            .all(|p| p.is_some_and(|(other, _, _)| other == *prefix))
        {
            return format!("{prefix}.gguf");
        }
    }
    let first = names.first().map_or("", |n| n.as_ref());
    let mut end = first.len();
    for n in names.iter().skip(1) {
        let common: usize = first
            .char_indices()
            .zip(n.as_ref().chars())
            .take_while(|((_, a), b)| a == b)
            .last()
            .map_or(0, |((i, a), _)| i + a.len_utf8());
        end = end.min(common);
    }
    let prefix = first[..end]
        .trim_end_matches(|c: char| c.is_ascii_digit() || matches!(c, '-' | '_' | '.' | ' '))
        .trim_end_matches("-of");
    let prefix =
        prefix.trim_end_matches(|c: char| c.is_ascii_digit() || matches!(c, '-' | '_' | '.' | ' '));
    if prefix.is_empty() {
        "model.gguf".to_string()
    } else {
        format!("{prefix}.gguf")
    }
}

/// The model of one GGUF file (`spec_from_gguf`, which refuses one part of a split model) or of
/// all the parts of a split model (`spec_from_gguf_parts`, named by [`split_model_name`]).
/// `files`: (file name, parsed header) in the order given.
pub fn load_gguf_files(files: &[(String, GgufHeader)]) -> Result<LoadedModel, LoadError> {
    match files {
        [] => Err(LoadError::Unreadable {
            name: String::new(),
        }),
        [(name, h)] => load_gguf_header(h, name),
        _ => {
            let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
            let name = split_model_name(&names);
            let headers: Vec<GgufHeader> = files.iter().map(|(_, h)| h.clone()).collect();
            match vram_core::gguf_model::spec_from_gguf_parts(&headers, &name) {
                Ok(spec) => Ok(gguf_model(spec, &name)),
                Err(error) => Err(LoadError::Config {
                    name: Some(names.join(", ")),
                    error,
                }),
            }
        }
    }
}

fn gguf_model(spec: ModelSpec, name: &str) -> LoadedModel {
    let mut params = ParamCounts::of(&spec);
    if let Some(m) = spec.gguf.as_ref() {
        params.total = m.params;
    }
    LoadedModel {
        source: ModelSource::File(name.to_string()),
        text: String::new(),
        spec,
        params,
    }
}

/// The model of a parsed GGUF header (`vram_core::gguf_model::spec_from_gguf`); the parameter
/// count is the header's (every tensor's element count).
pub fn load_gguf_header(h: &GgufHeader, name: &str) -> Result<LoadedModel, LoadError> {
    match vram_core::gguf_model::spec_from_gguf(h, name) {
        Ok(spec) => Ok(gguf_model(spec, name)),
        Err(error) => Err(LoadError::Config {
            name: Some(name.to_string()),
            error,
        }),
    }
}

/// Largest `model.safetensors.index.json` the page reads: the index of a model with tens of
/// thousands of tensors is several MB (one line per tensor).
pub const MAX_INDEX_BYTES: u64 = 64 << 20;

/// Whether a file name is a safetensors file (`.safetensors`, any case).
pub fn is_safetensors(name: &str) -> bool {
    name.to_ascii_lowercase().ends_with(".safetensors")
}

/// Whether a file name is a safetensors index (`model.safetensors.index.json`, any `*.index.json`).
pub fn is_safetensors_index(name: &str) -> bool {
    name.to_ascii_lowercase().ends_with(".index.json")
}

/// Whether files given together are (part of) a safetensors checkpoint: at least one of them is
/// a `.safetensors` file or an index. Then they are read with [`safetensors_step`] and combined by
/// [`load_checkpoint`].
pub fn is_checkpoint<S: AsRef<str>>(names: &[S]) -> bool {
    names
        .iter()
        .any(|n| is_safetensors(n.as_ref()) || is_safetensors_index(n.as_ref()))
}

/// The first read of a safetensors file: its 8-byte header length.
pub const SAFETENSORS_FIRST_READ: u64 = 8;

/// What to do after reading the first `buf.len()` bytes of a safetensors file of `file_size` bytes.
#[derive(Debug)]
pub enum SafetensorsStep {
    /// The header was read (or refused).
    Done(Box<Result<vram_core::safetensors_file::SafetensorsHeader, LoadError>>),
    /// Read the first this many bytes and call again.
    Read(u64),
}

/// The header-only read of a safetensors file, one step at a time: the first 8 bytes give the
/// header length `n`, then the first `8 + n` bytes are read (never the tensor data). A length past
/// the end of the file or over the format's 100 MB cap is refused without reading further.
pub fn safetensors_step(name: &str, file_size: u64, buf: &[u8]) -> SafetensorsStep {
    use vram_core::safetensors_file::{parse_header, SafetensorsError};
    let fail = |error: SafetensorsError| {
        SafetensorsStep::Done(Box::new(Err(LoadError::Safetensors {
            name: name.to_string(),
            error,
            file_bytes: file_size,
        })))
    };
    match parse_header(buf) {
        Ok(h) => SafetensorsStep::Done(Box::new(Ok(h))),
        Err(SafetensorsError::NeedMore { needed_bytes }) => {
            if needed_bytes > file_size || (buf.len() as u64) >= needed_bytes {
                // the header says it is longer than the file: cut off, or not a safetensors file
                return fail(SafetensorsError::NeedMore { needed_bytes });
            }
            SafetensorsStep::Read(needed_bytes)
        }
        Err(e) => fail(e),
    }
}

/// Parses an index file's bytes (the error names the file).
pub fn parse_index_file(
    name: &str,
    bytes: &[u8],
) -> Result<vram_core::safetensors_file::SafetensorsIndex, LoadError> {
    vram_core::safetensors_file::parse_index(bytes).map_err(|error| LoadError::Safetensors {
        name: name.to_string(),
        error,
        file_bytes: bytes.len() as u64,
    })
}

/// A checkpoint given without its config: what its headers (or its index) say. Shown as a card;
/// the model on screen stays.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointOnly {
    /// The count (from the headers, or from the index alone: bytes and files, no parameters).
    pub count: vram_core::checkpoint::CheckpointCount,
    /// The safetensors files read, in name order.
    pub files: Vec<String>,
    /// The index file, when one was given.
    pub index: Option<String>,
}

/// What files given together load to.
#[derive(Clone, Debug, PartialEq)]
pub enum CheckpointLoad {
    /// A config with the checkpoint's count attached.
    Model(Box<LoadedModel>),
    /// No config: the checkpoint alone.
    Only(CheckpointOnly),
}

/// Combines a checkpoint's files, as `vram estimate CONFIG SHARDS… [INDEX]` does: `configs` (name,
/// text: at most one), `headers` (file name, parsed header; a name given twice counts once),
/// `indexes` (name, parsed index; the last one is used). With a config: the config's model, the
/// headers counted (with the GPTQ/AWQ `quantization_config.bits` the config declares) and attached
/// ([`vram_core::checkpoint::attach`]: the headers' total is the parameter count and every
/// disagreement with the config's reading is a warning); with an index but no headers, its weight
/// bytes only. Without a config: [`CheckpointLoad::Only`].
pub fn load_checkpoint(
    configs: Vec<(String, String)>,
    headers: Vec<(String, vram_core::safetensors_file::SafetensorsHeader)>,
    indexes: Vec<(String, vram_core::safetensors_file::SafetensorsIndex)>,
) -> Result<CheckpointLoad, LoadError> {
    use vram_core::checkpoint;
    if configs.len() > 1 {
        return Err(LoadError::Checkpoint {
            problem: CheckpointProblem::SeveralConfigs {
                names: configs.into_iter().map(|(n, _)| n).collect(),
            },
        });
    }
    let mut headers = headers;
    headers.sort_by(|a, b| a.0.cmp(&b.0));
    headers.dedup_by(|a, b| a.0 == b.0);
    let index = indexes.into_iter().last();
    let files: Vec<String> = headers.iter().map(|(n, _)| n.clone()).collect();
    let parsed: Vec<vram_core::safetensors_file::SafetensorsHeader> =
        headers.into_iter().map(|(_, h)| h).collect();
    let config = configs.into_iter().next();
    let model = match config {
        Some((name, text)) => Some(load_text(text, ModelSource::File(name))?),
        None => None,
    };
    let bits = model
        .as_ref()
        .and_then(|m| checkpoint::config_bits(&m.spec));
    let count = checkpoint::combine(&parsed, index.as_ref().map(|(_, i)| i), bits).map_err(
        |checkpoint::MissingShards { named, given }| LoadError::Checkpoint {
            problem: CheckpointProblem::MissingShards {
                index: index.as_ref().map(|(n, _)| n.clone()).unwrap_or_default(),
                named,
                given,
            },
        },
    )?;
    match model {
        Some(mut m) => {
            if let Some(c) = count {
                let total = (c.params > 0).then_some(c.params);
                checkpoint::attach(&mut m.spec, c);
                if let Some(total) = total {
                    m.params.total = total;
                }
            }
            Ok(CheckpointLoad::Model(Box::new(m)))
        }
        None => Ok(CheckpointLoad::Only(CheckpointOnly {
            count: count.unwrap_or_default(),
            files,
            index: index.map(|(n, _)| n),
        })),
    }
}

/// Refuses a file before reading it when it is larger than [`MAX_INPUT_BYTES`].
pub fn check_size(name: &str, size_bytes: u64) -> Result<(), LoadError> {
    if size_bytes > MAX_INPUT_BYTES {
        Err(LoadError::TooLarge {
            name: name.to_string(),
            size_bytes,
        })
    } else {
        Ok(())
    }
}

/// The display name hint for a file: its name without a `.json` suffix.
pub fn name_hint(file_name: &str) -> &str {
    file_name.strip_suffix(".json").unwrap_or(file_name)
}

/// Parses config text from a file, the clipboard or a preset.
pub fn load_text(text: String, source: ModelSource) -> Result<LoadedModel, LoadError> {
    let hint = match &source {
        ModelSource::File(name) => Some(name_hint(name).to_string()),
        ModelSource::Preset(id) => Some(id.replace("__", "/")),
        ModelSource::Pasted => None,
    };
    match parse_config(&text, hint.as_deref()) {
        Ok(spec) => {
            let params = ParamCounts::of(&spec);
            Ok(LoadedModel {
                source,
                text,
                spec,
                params,
            })
        }
        Err(error) => Err(LoadError::Config {
            name: match source {
                ModelSource::File(name) => Some(name),
                _ => None,
            },
            error,
        }),
    }
}

/// Loads a bundled preset by id.
pub fn load_preset(id: &str) -> Result<LoadedModel, LoadError> {
    let Some(preset) = presets::find(id) else {
        return Err(LoadError::UnknownPreset { id: id.to_string() });
    };
    load_text(preset.json.to_string(), ModelSource::Preset(preset.id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use vram_core::safetensors_file::{encode_header, parse_header, SafetensorsError};

    const LLAMA_1B: &str = "meta-llama__Llama-3.2-1B-Instruct";

    /// Llama-3.2-1B's tensors as its checkpoint stores them (tied: no lm_head), in BF16.
    fn llama_1b_tensors() -> Vec<(String, &'static str, Vec<u64>)> {
        let mut t = vec![(
            "model.embed_tokens.weight".to_string(),
            "BF16",
            vec![128_256, 2048],
        )];
        for l in 0..16 {
            let p = format!("model.layers.{l}");
            for (n, s) in [
                ("self_attn.q_proj", vec![2048, 2048]),
                ("self_attn.k_proj", vec![512, 2048]),
                ("self_attn.v_proj", vec![512, 2048]),
                ("self_attn.o_proj", vec![2048, 2048]),
                ("mlp.gate_proj", vec![8192, 2048]),
                ("mlp.up_proj", vec![8192, 2048]),
                ("mlp.down_proj", vec![2048, 8192]),
                ("input_layernorm", vec![2048]),
                ("post_attention_layernorm", vec![2048]),
            ] {
                t.push((format!("{p}.{n}.weight"), "BF16", s));
            }
        }
        t.push(("model.norm.weight".to_string(), "BF16", vec![2048]));
        t
    }

    fn header_bytes(tensors: &[(String, &'static str, Vec<u64>)]) -> Vec<u8> {
        let refs: Vec<(&str, &str, &[u64])> = tensors
            .iter()
            .map(|(n, d, s)| (n.as_str(), *d, s.as_slice()))
            .collect();
        encode_header(&refs, &[("format", "pt")]).unwrap()
    }

    fn config_text() -> String {
        presets::find(LLAMA_1B).unwrap().json.to_string()
    }

    /// Runs the read loop of the page on `file` (the header bytes followed by `data` bytes of data).
    fn read(
        name: &str,
        file: &[u8],
        size: u64,
    ) -> (
        Vec<u64>,
        Result<vram_core::safetensors_file::SafetensorsHeader, LoadError>,
    ) {
        let mut reads = Vec::new();
        let mut n = SAFETENSORS_FIRST_READ.min(size);
        loop {
            reads.push(n);
            let end = (n as usize).min(file.len());
            match safetensors_step(name, size, &file[..end]) {
                SafetensorsStep::Read(next) => {
                    assert!(next > n);
                    n = next;
                }
                SafetensorsStep::Done(r) => return (reads, *r),
            }
        }
    }

    #[test]
    fn reads_8_bytes_then_exactly_the_header() {
        let h = header_bytes(&llama_1b_tensors());
        let size = h.len() as u64 + 2_471_628_800;
        let (reads, r) = read("model.safetensors", &h, size);
        assert_eq!(reads, vec![8, h.len() as u64]);
        assert_eq!(r.unwrap().tensors.len(), 146);
    }

    #[test]
    fn config_with_headers_counts_1_235_814_400_from_the_headers() {
        let h = parse_header(&header_bytes(&llama_1b_tensors())).unwrap();
        let r = load_checkpoint(
            vec![("config.json".into(), config_text())],
            vec![("model.safetensors".into(), h)],
            vec![],
        )
        .unwrap();
        let CheckpointLoad::Model(m) = r else {
            panic!("a model")
        };
        assert_eq!(m.params.total, 1_235_814_400);
        let c = m.spec.checkpoint.as_deref().unwrap();
        assert_eq!((c.files, c.tensors, c.params), (1, 146, 1_235_814_400));
        assert_eq!(c.data_bytes, 2_471_628_800);
        assert_eq!(vram_core::estimate::support_of(&m.spec), "header");
        assert!(
            m.spec.warnings.iter().all(|w| !w.contains("headers")),
            "{:?}",
            m.spec.warnings
        );
        let est = vram_core::estimate::estimate(
            &m.spec,
            &vram_core::Scenario::default(),
            vram_core::estimate::Sections::default(),
        );
        assert_eq!(est.parameters.total, m.params.total);
    }

    #[test]
    fn a_missing_tensor_is_a_warning_and_the_headers_total_is_used() {
        let mut t = llama_1b_tensors();
        t.retain(|(n, _, _)| n != "model.norm.weight");
        let h = parse_header(&header_bytes(&t)).unwrap();
        let CheckpointLoad::Model(m) = load_checkpoint(
            vec![("config.json".into(), config_text())],
            vec![("model.safetensors".into(), h)],
            vec![],
        )
        .unwrap() else {
            panic!("a model")
        };
        assert_eq!(m.params.total, 1_235_814_400 - 2048);
        assert!(m
            .spec
            .warnings
            .iter()
            .any(|w| w.contains("model.norm.weight")));
        assert!(m.spec.warnings.iter().any(|w| w.starts_with("parameters:")));
    }

    #[test]
    fn headers_or_index_alone_give_the_checkpoint_card() {
        let h = parse_header(&header_bytes(&llama_1b_tensors())).unwrap();
        let CheckpointLoad::Only(c) =
            load_checkpoint(vec![], vec![("model.safetensors".into(), h)], vec![]).unwrap()
        else {
            panic!("headers only")
        };
        assert_eq!(c.count.params, 1_235_814_400);
        assert_eq!(c.count.data_bytes, 2_471_628_800);
        assert_eq!(c.count.by_dtype.len(), 1);
        assert_eq!(c.files, vec!["model.safetensors".to_string()]);
        let idx = parse_index_file(
            "model.safetensors.index.json",
            br#"{"metadata":{"total_size":16060522496},"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}}"#,
        )
        .unwrap();
        let CheckpointLoad::Only(c) = load_checkpoint(
            vec![],
            vec![],
            vec![("model.safetensors.index.json".into(), idx)],
        )
        .unwrap() else {
            panic!("index only")
        };
        assert_eq!(
            (c.count.params, c.count.data_bytes, c.count.files),
            (0, 16_060_522_496, 2)
        );
        assert_eq!(c.index.as_deref(), Some("model.safetensors.index.json"));
    }

    #[test]
    fn config_bits_unpack_packed_weights() {
        let mut cfg: serde_json::Value = serde_json::from_str(&config_text()).unwrap();
        cfg["quantization_config"] = serde_json::json!({"quant_method": "gptq", "bits": 8});
        let t = vec![(
            "model.layers.0.mlp.up_proj.qweight".to_string(),
            "I32",
            vec![512u64, 8192],
        )];
        let h = parse_header(&header_bytes(&t)).unwrap();
        let CheckpointLoad::Model(m) = load_checkpoint(
            vec![("config.json".into(), cfg.to_string())],
            vec![("model.safetensors".into(), h)],
            vec![],
        )
        .unwrap() else {
            panic!("a model")
        };
        let c = m.spec.checkpoint.as_deref().unwrap();
        assert_eq!(c.params, 512 * 8192 * 4);
        assert_eq!(c.quantization.as_deref(), Some("gptq/awq 8-bit"));
    }

    #[test]
    fn broken_headers_name_the_file() {
        // a header length past the end of the file: refused after the first 8 bytes
        let mut lying = 1_000_000u64.to_le_bytes().to_vec();
        lying.extend(b"{}");
        let (reads, r) = read("broken.safetensors", &lying, lying.len() as u64);
        assert_eq!(reads, vec![8]);
        let e = r.unwrap_err();
        assert!(matches!(e, LoadError::Safetensors { file_bytes: 10, .. }));
        let msg = crate::i18n::Lang::En.load_error(&e);
        assert!(
            msg.starts_with("broken.safetensors: ")
                && msg.contains("1000008")
                && msg.contains("only 10 bytes"),
            "{msg}"
        );
        // over the 100 MB cap
        let big = 200_000_000u64.to_le_bytes();
        let (_, r) = read("big.safetensors", &big, 300_000_000);
        let msg = crate::i18n::Lang::Zh.load_error(&r.unwrap_err());
        assert!(
            msg.starts_with("big.safetensors") && msg.contains("100000000"),
            "{msg}"
        );
        // duplicate keys
        let json = br#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}"#;
        let mut dup = (json.len() as u64).to_le_bytes().to_vec();
        dup.extend(json);
        dup.extend([0u8; 4]);
        let (_, r) = read("dup.safetensors", &dup, dup.len() as u64);
        let e = r.unwrap_err();
        assert!(matches!(
            &e,
            LoadError::Safetensors {
                error: SafetensorsError::Invalid { .. },
                ..
            }
        ));
        let msg = crate::i18n::Lang::En.load_error(&e);
        assert!(
            msg.contains("dup.safetensors") && msg.contains("duplicate"),
            "{msg}"
        );
        // shorter than the length field
        let (_, r) = read("tiny.safetensors", b"abc", 3);
        assert!(matches!(
            r,
            Err(LoadError::Safetensors { file_bytes: 3, .. })
        ));
    }

    #[test]
    fn files_that_do_not_make_one_checkpoint_are_refused() {
        let h = parse_header(&header_bytes(&llama_1b_tensors())).unwrap();
        let two = load_checkpoint(
            vec![
                ("a.json".into(), config_text()),
                ("b.json".into(), config_text()),
            ],
            vec![("model.safetensors".into(), h.clone())],
            vec![],
        );
        assert!(matches!(
            two,
            Err(LoadError::Checkpoint {
                problem: CheckpointProblem::SeveralConfigs { .. }
            })
        ));
        let idx = parse_index_file(
            "model.safetensors.index.json",
            br#"{"metadata":{"total_size":8},"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}}"#,
        )
        .unwrap();
        let missing = load_checkpoint(
            vec![],
            vec![("model-00001-of-00002.safetensors".into(), h)],
            vec![("model.safetensors.index.json".into(), idx)],
        );
        assert!(matches!(
            missing,
            Err(LoadError::Checkpoint {
                problem: CheckpointProblem::MissingShards {
                    named: 2,
                    given: 1,
                    ..
                }
            })
        ));
        assert!(is_checkpoint(&["config.json", "model.safetensors"]));
        assert!(is_checkpoint(&["model.safetensors.index.json"]));
        assert!(!is_checkpoint(&["config.json", "a.gguf"]));
    }
}
