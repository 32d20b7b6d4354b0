//! Reading a config file from disk with errors that say which file and what is wrong.

use anyhow::Context;
use std::path::Path;
use vram_core::json::MAX_CONFIG_BYTES;
use vram_core::{parse_config, ModelSpec};

/// Reads and resolves `path` (a config.json, or a GGUF file's header); the error names the file and
/// the field or JSON position.
pub fn load_config(path: &Path) -> anyhow::Result<ModelSpec> {
    if is_gguf(path)? {
        return load_gguf(path);
    }
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

/// Whether `path` starts with the GGUF magic (or is named `.gguf`).
fn is_gguf(path: &Path) -> anyhow::Result<bool> {
    if path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gguf"))
    {
        return Ok(true);
    }
    let mut f =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut magic = [0u8; 4];
    use std::io::Read;
    Ok(f.read_exact(&mut magic).is_ok() && magic == vram_core::gguf_file::GGUF_MAGIC)
}

/// `name-00001-of-00003.gguf` → (`name`, 3).
fn split_parts(path: &Path) -> Option<(String, u32)> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_suffix(".gguf")?;
    let (rest, count) = stem.rsplit_once("-of-")?;
    let (prefix, no) = rest.rsplit_once('-')?;
    if no.len() != 5 || count.len() != 5 {
        return None;
    }
    no.parse::<u32>().ok()?;
    Some((prefix.to_string(), count.parse().ok()?))
}

/// Reads the headers of a GGUF file, or of every part of a split model (`-00001-of-00003.gguf`:
/// all parts are read from the same folder and their tensors summed).
pub fn load_gguf(path: &Path) -> anyhow::Result<ModelSpec> {
    let Some((prefix, count)) = split_parts(path) else {
        return load_gguf_single(path);
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut headers = Vec::new();
    for i in 1..=count {
        let part = dir.join(format!("{prefix}-{i:05}-of-{count:05}.gguf"));
        if !part.exists() {
            anyhow::bail!(
                "{}: part {i} of {count} of this split model is missing ({}); every part's header is needed",
                path.display(),
                part.display()
            );
        }
        headers.push(read_gguf_header(&part)?);
    }
    let name = format!("{prefix}.gguf");
    vram_core::gguf_model::spec_from_gguf_parts(&headers, &name)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

fn load_gguf_single(path: &Path) -> anyhow::Result<ModelSpec> {
    let header = read_gguf_header(path)?;
    let name = path
        .file_name()
        .and_then(|s| s.to_str())
        .unwrap_or("model.gguf");
    vram_core::gguf_model::spec_from_gguf(&header, name)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// Reads only the header of a GGUF file: the first MiB, then as many bytes as the parser asks
/// for (never the tensor data).
fn read_gguf_header(path: &Path) -> anyhow::Result<vram_core::gguf_file::GgufHeader> {
    use std::io::{Read, Seek, SeekFrom};
    use vram_core::gguf_file::{parse_header, GgufError};
    let mut f =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let mut want: u64 = (1 << 20).min(len.max(1));
    let mut buf: Vec<u8> = Vec::new();
    let header = loop {
        let want_now = want.min(len);
        if (buf.len() as u64) < want_now {
            f.seek(SeekFrom::Start(buf.len() as u64))?;
            let mut more = Vec::new();
            (&mut f)
                .take(want_now - buf.len() as u64)
                .read_to_end(&mut more)
                .with_context(|| format!("cannot read {}", path.display()))?;
            buf.extend_from_slice(&more);
        }
        match parse_header(&buf) {
            Ok(h) => break h,
            Err(GgufError::NeedMore { needed_bytes }) if (buf.len() as u64) < len => {
                want = needed_bytes.max(want.saturating_mul(2));
            }
            Err(GgufError::NeedMore { needed_bytes }) => anyhow::bail!(
                "{}: the GGUF header is cut off: it needs at least {needed_bytes} bytes, the file has {len}",
                path.display()
            ),
            Err(e) => anyhow::bail!("{}: {e}", path.display()),
        }
    };
    Ok(header)
}
