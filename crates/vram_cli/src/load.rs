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

/// Reads the headers of a GGUF file, or of every part of a split model (`-00001-of-00003.gguf`:
/// all parts are read from the same folder and their tensors summed).
pub fn load_gguf(path: &Path) -> anyhow::Result<ModelSpec> {
    let Some((prefix, _, count)) = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(vram_core::gguf_model::split_part_name)
    else {
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

/// What a list of paths describes: a model (a config, or a GGUF file, with any safetensors
/// headers counted into it), or only a checkpoint's headers (no config.json given).
pub enum Loaded {
    /// A model to estimate.
    Model(Box<ModelSpec>),
    /// Safetensors headers or an index without a config: exact counts and bytes only.
    HeadersOnly(vram_core::checkpoint::CheckpointCount),
}

/// Reads every path: a folder stands for its `config.json`, `*.safetensors` and
/// `model.safetensors.index.json`; an index stands for the shards it names that are present
/// beside it. Only headers are read from safetensors files (the 8-byte length and the JSON).
pub fn load_paths(paths: &[std::path::PathBuf]) -> anyhow::Result<Loaded> {
    let mut configs = Vec::new();
    let mut shards: Vec<std::path::PathBuf> = Vec::new();
    let mut index: Option<(
        std::path::PathBuf,
        vram_core::safetensors_file::SafetensorsIndex,
    )> = None;
    let mut expanded = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut entries: Vec<_> = std::fs::read_dir(p)
                .with_context(|| format!("cannot read the folder {}", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .collect();
            entries.sort();
            for e in entries {
                let name = e.file_name().and_then(|n| n.to_str()).unwrap_or("");
                if name == "config.json"
                    || name.ends_with(".safetensors")
                    || name.ends_with(".safetensors.index.json")
                {
                    expanded.push(e);
                }
            }
        } else {
            expanded.push(p.clone());
        }
    }
    for p in expanded {
        let name = p
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string();
        if name.ends_with(".safetensors") {
            if !shards.contains(&p) {
                shards.push(p);
            }
        } else if name.ends_with(".index.json") {
            let bytes =
                std::fs::read(&p).with_context(|| format!("cannot read {}", p.display()))?;
            let idx = vram_core::safetensors_file::parse_index(&bytes)
                .map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?;
            index = Some((p, idx));
        } else {
            configs.push(p);
        }
    }
    if configs.len() > 1 {
        anyhow::bail!(
            "expected one config.json (or GGUF file) among the paths, found {}: {}",
            configs.len(),
            configs
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if let Some((ip, idx)) = &index {
        // the shards the index names that sit beside it
        let dir = ip.parent().unwrap_or(Path::new("."));
        for f in idx.files() {
            let p = dir.join(&f);
            if p.exists() && !shards.iter().any(|s| s.file_name() == p.file_name()) {
                shards.push(p);
            }
        }
    }
    let mut headers = Vec::new();
    for s in &shards {
        headers.push(read_safetensors_header(s)?);
    }
    // the config first: its GPTQ/AWQ bit width unpacks the headers' packed weights
    let spec = configs.first().map(|c| load_config(c)).transpose()?;
    let bits = spec.as_ref().and_then(vram_core::checkpoint::config_bits);
    let count = vram_core::checkpoint::combine(&headers, index.as_ref().map(|(_, i)| i), bits)
        .map_err(|e| {
            let at = index
                .as_ref()
                .map_or(String::new(), |(p, _)| format!("{}: ", p.display()));
            anyhow::anyhow!("{at}{e}")
        })?;
    match (spec, count) {
        (Some(mut spec), count) => {
            if let Some(c) = count {
                vram_core::checkpoint::attach(&mut spec, c);
            }
            Ok(Loaded::Model(Box::new(spec)))
        }
        (None, Some(c)) => Ok(Loaded::HeadersOnly(c)),
        (None, None) => anyhow::bail!("no config.json, GGUF or safetensors file among the paths"),
    }
}

/// Reads the header of a safetensors file (the length, then exactly that many bytes).
fn read_safetensors_header(
    path: &Path,
) -> anyhow::Result<vram_core::safetensors_file::SafetensorsHeader> {
    use std::io::Read;
    use vram_core::safetensors_file::{parse_header, SafetensorsError};
    let mut f =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut buf = vec![0u8; 8];
    f.read_exact(&mut buf).map_err(|_| {
        anyhow::anyhow!(
            "{}: shorter than the 8-byte safetensors header length",
            path.display()
        )
    })?;
    loop {
        match parse_header(&buf) {
            Ok(h) => return Ok(h),
            Err(SafetensorsError::NeedMore { needed_bytes }) => {
                let have = buf.len() as u64;
                let mut more = Vec::new();
                (&mut f)
                    .take(needed_bytes - have)
                    .read_to_end(&mut more)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                if more.is_empty() {
                    anyhow::bail!(
                        "{}: the safetensors header is cut off: it needs {needed_bytes} bytes, the file has {have}",
                        path.display()
                    );
                }
                buf.extend(more);
            }
            Err(e) => anyhow::bail!("{}: {e}", path.display()),
        }
    }
}
