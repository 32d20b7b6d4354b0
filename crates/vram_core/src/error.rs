//! Errors of the estimator. Every message names the field (or the JSON position) and says what was
//! expected, so the CLI can print it on one line and the page can show it next to the input.

/// Why a `config.json` could not be turned into a [`crate::ModelSpec`].
///
/// Holds only plain data (no `serde_json::Error`) so it is `Clone + PartialEq`, which Leptos memos need.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The text is not JSON at all.
    #[error("not valid JSON at line {line}, column {column}: {message}")]
    Json {
        /// 1-based line of the first error.
        line: u64,
        /// 1-based column of the first error.
        column: u64,
        /// What the JSON parser said.
        message: String,
    },
    /// The JSON is valid but its top level is not an object.
    #[error("expected a JSON object at the top level (a HuggingFace config.json), found {found}")]
    NotAnObject {
        /// The JSON type found instead.
        found: String,
    },
    /// A field the model needs is absent.
    #[error("missing field {field:?}: {why}")]
    MissingField {
        /// The key (or the alternatives) that was looked for.
        field: String,
        /// Why it is needed.
        why: String,
    },
    /// A field is present with a value of the wrong type or out of range.
    #[error("field {field:?}: expected {expected}, found {found}")]
    InvalidField {
        /// The offending key.
        field: String,
        /// What a valid value looks like.
        expected: String,
        /// The value found, as JSON.
        found: String,
    },
    /// Fields that are valid alone but contradict each other.
    #[error("inconsistent config: {0}")]
    Inconsistent(String),
}

/// Why a scenario (batch, sequence, optimizer, ...) is not valid.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScenarioError {
    /// A scenario value is out of range or contradicts the model.
    #[error("{field}: expected {expected}, found {found}")]
    Invalid {
        /// The scenario field.
        field: String,
        /// What a valid value looks like.
        expected: String,
        /// The value found.
        found: String,
    },
}
