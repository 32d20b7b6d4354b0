//! Reading a config file from disk with errors that say which file and what is wrong.

use anyhow::Context;
use std::path::Path;
use vram_core::json::MAX_CONFIG_BYTES;
use vram_core::{parse_config, ModelSpec};

/// Reads and resolves `path`; the error names the file and the field or JSON position.
pub fn load_config(path: &Path) -> anyhow::Result<ModelSpec> {
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    if meta.len() > MAX_CONFIG_BYTES as u64 {
        anyhow::bail!(
            "{}: {} bytes is too large for a config.json (at most {} MiB)",
            path.display(),
            meta.len(),
            MAX_CONFIG_BYTES >> 20
        );
    }
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "{}: not a UTF-8 text file (byte {} is invalid); expected a config.json",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })?;
    let hint = path
        .file_stem()
        .and_then(|s| s.to_str())
        .map(|s| s.trim_end_matches(".config"));
    let hint = match hint {
        Some("config") | None => path
            .parent()
            .and_then(|p| p.file_name())
            .and_then(|s| s.to_str()),
        other => other,
    };
    parse_config(&text, hint).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}
