//! Turning what the user gives the page (a dropped or opened file, pasted text, a preset id) into a
//! parsed model, with the size guard that refuses huge files before they are read. Pure logic: the
//! browser glue lives in `model_input.rs`, so these rules are tested natively.

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
    /// The header was read (or refused): the model or the error.
    Done(Box<Result<LoadedModel, LoadError>>),
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
        Ok(h) => GgufStep::Done(Box::new(load_gguf_header(&h, name))),
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

/// The model of a parsed GGUF header (`vram_core::gguf_model::spec_from_gguf`); the parameter
/// count is the header's (every tensor's element count).
pub fn load_gguf_header(
    h: &vram_core::gguf_file::GgufHeader,
    name: &str,
) -> Result<LoadedModel, LoadError> {
    match vram_core::gguf_model::spec_from_gguf(h, name) {
        Ok(spec) => {
            let mut params = ParamCounts::of(&spec);
            if let Some(m) = spec.gguf.as_ref() {
                params.total = m.params;
            }
            Ok(LoadedModel {
                source: ModelSource::File(name.to_string()),
                text: String::new(),
                spec,
                params,
            })
        }
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
