//! # vram_core
//!
//! The pure estimator shared by the `vram` CLI and the web page: HuggingFace `config.json` parsing,
//! exact parameter counts, and the training and inference memory models.
//!
//! No IO, no clocks, no platform code: every function takes values and returns values, with counts and
//! bytes as `u64` (wasm32's `usize` is 32-bit) and saturating arithmetic where inputs are user data.

pub mod checkpoint;
pub mod derived;
pub mod error;
pub mod estimate;
pub mod fields;
pub mod gguf_file;
pub mod gguf_model;
pub mod gpu_catalog;
pub mod infer;
pub mod json;
pub mod layout;
pub mod models_index;
pub mod params;
pub mod plan;
pub mod presets;
pub mod report;
mod resolve;
pub mod safetensors_file;
pub mod scenario;
pub mod shape;
pub mod spec;
mod sweep;
pub mod train;
pub mod units;

pub use error::{ConfigError, ScenarioError};
pub use estimate::{estimate, estimate_on, Device, Estimate, Sections};
pub use params::ParamCounts;
pub use resolve::{parse_config, resolve_value, KNOWN_MODEL_TYPES};
pub use scenario::Scenario;
pub use spec::ModelSpec;
