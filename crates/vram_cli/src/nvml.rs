//! Opening NVML (the NVIDIA Management Library) for `vram gpus` and `vram watch`.
//!
//! `nvml-wrapper` loads `libnvidia-ml.so.1` with libloading at run time, so the binary builds and
//! starts on machines without an NVIDIA driver; this module turns the failure to load it into one
//! clear sentence (the caller exits with code 2 through `main`).

use nvml_wrapper::error::NvmlError;
use nvml_wrapper::Nvml;

/// Initialises NVML or explains, in one line, why it cannot be used here.
pub fn open() -> anyhow::Result<Nvml> {
    Nvml::init().map_err(|e| anyhow::anyhow!("{}", explain(&e)))
}

/// One-line explanation of an NVML initialisation failure.
fn explain(e: &NvmlError) -> String {
    match e {
        NvmlError::LibloadingError(_) | NvmlError::LibraryNotFound => {
            "no NVIDIA driver found: cannot load libnvidia-ml.so.1 (NVML); this command needs an \
             NVIDIA GPU with its driver installed"
                .to_string()
        }
        NvmlError::DriverNotLoaded => {
            "the NVIDIA driver is installed but not loaded (NVML: driver not loaded); no GPU to query"
                .to_string()
        }
        NvmlError::NoPermission => {
            "NVML refused access to the GPUs (no permission); run as a user allowed to use the NVIDIA devices"
                .to_string()
        }
        other => format!("NVML could not be initialised: {}", one_line(&other.to_string())),
    }
}

/// Collapses a multi-line message into one line.
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_library_is_explained_as_missing_driver() {
        let msg = explain(&NvmlError::LibraryNotFound);
        assert!(msg.starts_with("no NVIDIA driver found"), "{msg}");
        assert!(!msg.contains('\n'));
    }

    #[test]
    fn multi_line_messages_become_one_line() {
        assert_eq!(one_line("a\n  b\tc "), "a b c");
    }
}
