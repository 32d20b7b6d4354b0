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
