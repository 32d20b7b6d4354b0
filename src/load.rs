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

/// `NAME-00001-of-00003.gguf` → (`NAME`, part 1, 3 parts), as `llama-gguf-split` names the parts.
pub fn split_part_name(file_name: &str) -> Option<(&str, u32, u32)> {
    let stem = file_name
        .get(..file_name.len().checked_sub(5)?)
        .filter(|_| is_gguf(file_name))?;
    let (rest, count) = stem.rsplit_once("-of-")?;
    let (prefix, no) = rest.rsplit_once('-')?;
    let digits = |s: &str| s.len() == 5 && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(no) || !digits(count) || prefix.is_empty() {
        return None;
    }
    Some((prefix, no.parse().ok()?, count.parse().ok()?))
}

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
