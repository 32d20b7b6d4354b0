//! Byte formatting for the page: GiB (2^30, the default, as `nvidia-smi` and PyTorch report) or GB (10^9).

use vram_core::units::{format_gb, format_gib};

/// `bytes` in GiB or, with `gb`, in GB.
pub fn bytes(bytes: u64, gb: bool) -> String {
    if gb {
        format_gb(bytes)
    } else {
        format_gib(bytes)
    }
}
