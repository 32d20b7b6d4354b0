//! GPU catalog: the memory a process can actually use on each card, as the driver reports it
//! (`torch.cuda.mem_get_info()[1]`, the "total capacity" in PyTorch's out-of-memory message), not the
//! marketing size. An "80 GB" H100 reports 79.19 GiB; a "24 GB" RTX 4090 23.58 GiB
//! (/work/shared/research/measured.md J7). The figures vary by a few hundredths of a GiB with the
//! driver version, ECC and display use; each entry names where its figure was read.
//!
//! The fit verdict compares the device total (what `nvidia-smi` shows: reserved + CUDA context +
//! workspace) with this usable memory.

use crate::units::GIB;

/// One GPU model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gpu {
    /// Stable id used in URLs.
    pub id: &'static str,
    /// Display name.
    pub name: &'static str,
    /// Marketed memory in GB (decimal), as sold.
    pub marketed_gb: u64,
    /// Memory the driver reports to a process, in bytes.
    pub usable_bytes: u64,
    /// Where the usable figure comes from.
    pub source: &'static str,
}

/// `gib_hundredths / 100` GiB in bytes (the catalog's figures are read as two-decimal GiB).
const fn gib_x100(gib_hundredths: u64) -> u64 {
    gib_hundredths * (GIB / 100) + gib_hundredths * (GIB % 100) / 100
}

/// The catalog, smallest memory first within each vendor. Apple GPUs are out of scope (unified memory).
pub const GPUS: &[Gpu] = &[
    Gpu {
        id: "t4",
        name: "NVIDIA T4 16 GB",
        marketed_gb: 16,
        usable_bytes: gib_x100(1475),
        source: "PyTorch OOM message on T4 (Colab): \"GPU 0; 14.75 GiB total capacity\"",
    },
    Gpu {
        id: "v100-16",
        name: "NVIDIA V100 16 GB",
        marketed_gb: 16,
        usable_bytes: 16160 << 20,
        source: "measured.md J7: \"16 GB\" V100 = 16160 MiB (15.78 GiB)",
    },
    Gpu {
        id: "a10g",
        name: "NVIDIA A10G 24 GB",
        marketed_gb: 24,
        usable_bytes: gib_x100(2220),
        source: "PyTorch OOM messages on AWS g5 (A10G): \"22.20 GiB total capacity\" (nvidia-smi: 23028 MiB)",
    },
    Gpu {
        id: "rtx3090",
        name: "NVIDIA RTX 3090 24 GB",
        marketed_gb: 24,
        usable_bytes: gib_x100(2369),
        source: "PyTorch OOM messages on RTX 3090: \"23.69 GiB total capacity\"",
    },
    Gpu {
        id: "rtx4090",
        name: "NVIDIA RTX 4090 24 GB",
        marketed_gb: 24,
        usable_bytes: gib_x100(2358),
        source: "measured.md J7: \"24 GB\" 4090 = 23.58 GiB (OOM messages show 23.52–23.68 GiB by driver)",
    },
    Gpu {
        id: "rtx5090",
        name: "NVIDIA RTX 5090 32 GB",
        marketed_gb: 32,
        usable_bytes: gib_x100(3136),
        source: "TrajectoryCrafter/TrajectoryCrafter#20: \"GPU 0 has a total capacity of 31.36 GiB\" (RTX 5090)",
    },
    Gpu {
        id: "v100-32",
        name: "NVIDIA V100 32 GB",
        marketed_gb: 32,
        usable_bytes: gib_x100(3175),
        source: "PyTorch OOM messages on V100-SXM2-32GB: \"31.75 GiB total capacity\"",
    },
    Gpu {
        id: "a100-40",
        name: "NVIDIA A100 40 GB",
        marketed_gb: 40,
        usable_bytes: gib_x100(3959),
        source: "PyTorch OOM messages on A100-40GB: \"GPU 0; 39.59 GiB total capacity\"",
    },
    Gpu {
        id: "l40s",
        name: "NVIDIA L40S 48 GB",
        marketed_gb: 48,
        usable_bytes: gib_x100(4442),
        source: "stepfun-ai/Step-Video-T2V#8 (8×L40S): \"total capacity of 44.42 GiB\"; Wan-Video/Wan2.1#205: 44.53 GiB",
    },
    Gpu {
        id: "a100-80",
        name: "NVIDIA A100 80 GB",
        marketed_gb: 80,
        usable_bytes: gib_x100(7915),
        source: "PyTorch OOM messages on A100-SXM4-80GB: \"GPU 0; 79.15 GiB total capacity\"",
    },
    Gpu {
        id: "h100-80",
        name: "NVIDIA H100 80 GB",
        marketed_gb: 80,
        usable_bytes: 85_029_615_043,
        source: "measured.md J7/H3: \"80 GB\" H100 = 79.19 GiB (the vLLM serving default of vram_core)",
    },
    Gpu {
        id: "h200",
        name: "NVIDIA H200 141 GB",
        marketed_gb: 141,
        usable_bytes: gib_x100(13980),
        source: "PyTorch OOM messages on 8×H200 runs: \"GPU 0 has a total capacity of 139.80 GiB\"",
    },
    Gpu {
        id: "b200",
        name: "NVIDIA B200 192 GB",
        marketed_gb: 192,
        usable_bytes: gib_x100(17835),
        source: "PyTorch OOM messages on B200: \"GPU 0 has a total capacity of 178.35 GiB\"",
    },
    Gpu {
        id: "mi300x",
        name: "AMD Instinct MI300X 192 GB",
        marketed_gb: 192,
        usable_bytes: gib_x100(19169),
        source: "PyTorch (ROCm) OOM messages on MI300X: \"total capacity of 191.69 GiB\" (191.98 GiB on other drivers)",
    },
];

/// The GPU with this id.
pub fn find(id: &str) -> Option<&'static Gpu> {
    GPUS.iter().find(|g| g.id == id)
}

/// Whether a peak fits in a GPU's usable memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// At most 90 % of usable memory: room for allocator fragmentation and run-to-run variation.
    Fits,
    /// Between 90 % and 100 %: fits on paper; fragmentation or another process can push it over.
    Tight,
    /// More than the usable memory.
    DoesNotFit,
}

/// Share of usable memory above which a fit is called tight, in percent. The caching allocator's
/// reserved-but-unallocated memory is commonly several percent of the peak (measured.md, finding 1).
pub const TIGHT_ABOVE_PERCENT: u64 = 90;

impl Verdict {
    /// The verdict for `peak_bytes` on a GPU with `usable_bytes`.
    pub fn of(peak_bytes: u64, usable_bytes: u64) -> Verdict {
        if peak_bytes > usable_bytes {
            Verdict::DoesNotFit
        } else if (peak_bytes as u128) * 100 > (usable_bytes as u128) * TIGHT_ABOVE_PERCENT as u128
        {
            Verdict::Tight
        } else {
            Verdict::Fits
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn h100_usable_memory_is_79_19_gib() {
        let h100 = find("h100-80").unwrap();
        assert_eq!(
            format!("{:.2}", h100.usable_bytes as f64 / GIB as f64),
            "79.19"
        );
    }

    #[test]
    fn two_decimal_gib_figures_round_trip() {
        for g in GPUS {
            let gib = g.usable_bytes as f64 / GIB as f64;
            assert!(gib < g.marketed_gb as f64, "{} usable below marketed", g.id);
        }
        assert_eq!(find("a100-40").unwrap().usable_bytes, 42_509_438_812);
        assert_eq!(find("v100-16").unwrap().usable_bytes, 16_944_988_160);
    }

    #[test]
    fn verdict_thresholds() {
        assert_eq!(Verdict::of(90, 100), Verdict::Fits);
        assert_eq!(Verdict::of(91, 100), Verdict::Tight);
        assert_eq!(Verdict::of(100, 100), Verdict::Tight);
        assert_eq!(Verdict::of(101, 100), Verdict::DoesNotFit);
        assert_eq!(Verdict::of(u64::MAX, u64::MAX), Verdict::Tight);
    }

    #[test]
    fn ids_are_unique() {
        for (i, a) in GPUS.iter().enumerate() {
            assert!(GPUS[i + 1..].iter().all(|b| b.id != a.id));
        }
    }
}
