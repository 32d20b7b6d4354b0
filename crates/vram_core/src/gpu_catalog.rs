//! GPU catalog: the memory a process can actually use on each card, as the driver reports it
//! (`torch.cuda.mem_get_info()[1]`, the "total capacity" in PyTorch's out-of-memory message), not the
//! marketing size. An "80 GB" H100 reports 79.19 GiB; a "24 GB" RTX 4090 23.58 GiB
//! (/work/shared/research/measured.md J7). The figures vary by a few hundredths of a GiB with the
//! driver version, ECC and display use; each entry names where its figure was read.
//!
//! The fit verdict compares the device total (what `nvidia-smi` shows: reserved + CUDA context +
//! workspace) with this usable memory.
//!
//! Discrete figures are Linux figures where one could be found. On Windows (WDDM) PyTorch reports the
//! whole card instead (a "12 GB" RTX 3060 shows "12.00 GiB total capacity", ToTheBeginning/PuLID#13;
//! a "16 GB" RTX 4080 "15.99 GiB", aigc-apps/sd-webui-EasyPhoto#281), and the desktop shares it.
//!
//! Unified-memory machines ([`GpuKind::AppleUnified`], [`GpuKind::ApuShared`]) have no memory of the
//! GPU's own: `usable_bytes` is the share of `system_ram_bytes` the GPU may use, and whatever the model
//! takes there is also gone from the host RAM (the CPU side of a run cannot count it a second time).

use crate::units::GIB;

/// What kind of memory a GPU has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuKind {
    /// A card with memory of its own (VRAM/HBM), separate from the host RAM.
    Discrete,
    /// Apple Silicon: CPU and GPU share one unified memory; the GPU may wire Metal's
    /// `recommendedMaxWorkingSetSize` of it (see [`apple_usable_bytes`]).
    AppleUnified,
    /// An APU whose GPU uses host RAM: the BIOS carve-out ("UMA frame buffer", seen as VRAM) plus
    /// GTT, the system RAM the kernel driver lets the GPU map.
    ApuShared,
}

/// One GPU model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gpu {
    /// Stable id used in URLs.
    pub id: &'static str,
    /// Display name.
    pub name: &'static str,
    /// Marketed memory in "GB", as sold. Memory chips come in binary sizes, so this many GiB (not
    /// × 1e9 bytes) bounds `usable_bytes`: a "16 GB" Arc A770 reports more than 16e9 bytes.
    pub marketed_gb: u64,
    /// Memory the driver reports to a process, in bytes.
    pub usable_bytes: u64,
    /// Where the usable figure comes from.
    pub source: &'static str,
    /// Discrete card, Apple unified memory, or APU sharing host RAM.
    pub kind: GpuKind,
    /// For unified-memory machines, the RAM size in bytes, which `usable_bytes` is a share of (the
    /// GPU's share and the host RAM are the same memory); 0 for discrete GPUs.
    pub system_ram_bytes: u64,
}

/// `gib_hundredths / 100` GiB in bytes (the catalog's figures are read as two-decimal GiB).
const fn gib_x100(gib_hundredths: u64) -> u64 {
    gib_hundredths * (GIB / 100) + gib_hundredths * (GIB % 100) / 100
}

/// Apple Silicon's default GPU share of unified memory: Metal's `recommendedMaxWorkingSetSize`,
/// which llama.cpp prints at start-up (`ggml_metal_init: recommendedMaxWorkingSetSize = ...`) and
/// PyTorch returns as `torch.mps.recommended_max_memory()`.
///
/// The default rule, as the printed values show it (llama.cpp and ollama logs of 2023): 2/3 of RAM for Macs with up to
/// 32 GiB, 3/4 above, rounded up to the 16 KiB page. Printed values (MiB): 8 GB 5461.34
/// (li-plus/chatglm.cpp#76), 16 GB 10922.67 (ise-uiuc/magicoder#19), 32 GB 21845.34
/// (ollama/ollama#434, ggml-org/llama.cpp#2011): 2/3 of RAM, the last digit showing the page round-up;
/// 64 GB 49152.00 (ggml-org/llama.cpp#1870), 96 GB 73728.00 (ggml-org/llama.cpp#3213): exactly 3/4;
/// GPUStack calls it "75% of total RAM" (gpustack/gpustack#1375). No printed value for 36 or 48 GB was
/// found, so where between 32 and 64 GiB the 3/4 rule starts is not confirmed; nor is the rule stable
/// across macOS releases: a 128 GB M5 Max on macOS 26 reports 107.52 GiB, not 96 (antirez/ds4#893).
///
/// A user can raise the share: `sudo sysctl iogpu.wired_limit_mb=N` (N in MiB; 0 restores the default;
/// it resets at reboot). Metal then reports exactly N MiB: 12000 and 14000 on a 16 GB M3
/// (AlexsJones/llmfit#754), 112.00 GiB with `iogpu.wired_limit_mb=114688` on 128 GB (antirez/ds4#893).
/// Leave the OS several GiB.
///
/// Returns `wired_limit_mb` MiB when a non-zero limit is given, else the default rule.
pub const fn apple_usable_bytes(ram_bytes: u64, wired_limit_mb: Option<u64>) -> u64 {
    match wired_limit_mb {
        Some(mb) if mb > 0 => mb << 20,
        _ => {
            let (num, den): (u128, u128) = if ram_bytes <= 32 * GIB {
                (2, 3)
            } else {
                (3, 4)
            };
            let step = den * APPLE_PAGE_BYTES as u128;
            ((ram_bytes as u128 * num).div_ceil(step) * APPLE_PAGE_BYTES as u128) as u64
        }
    }
}

/// The page Metal's working-set size is a whole number of (16 KiB on Apple Silicon).
const APPLE_PAGE_BYTES: u64 = 16 * 1024;

/// Memory a desktop session holds on the GPU that drives the display: the compositor and X/Wayland
/// server plus a browser and the usual tray of GPU-accelerated apps. 1 GiB: an idle Linux desktop
/// on an RTX 5080 shows "1030MiB / 16303MiB" in `nvidia-smi` with the display on the card
/// (utensils/comfyui-nix#80), an RTX 5070 desktop 1731 MiB (shkhln/libc6-shim#14); a bare Xorg +
/// gnome-shell takes only 28 + 46 MiB (NVIDIA/nvidia-docker#1264) and a Windows desktop with
/// apps open 2296 MiB on an RTX 5070 Ti (facebookresearch/vggt#437). 1 GiB is a typical session, not a
/// worst case: close the browser or run headless to get it back.
pub const DESKTOP_DISPLAY_ALLOWANCE_BYTES: u64 = GIB;

/// Memory left to a model on `gpu` when it also drives the desktop display. Only discrete cards lose
/// [`DESKTOP_DISPLAY_ALLOWANCE_BYTES`]: on unified-memory machines the desktop lives in the RAM outside
/// the GPU's share (macOS's working-set limit already leaves it to the OS).
pub fn usable_with_display(gpu: &Gpu, display_attached: bool) -> u64 {
    if display_attached && gpu.kind == GpuKind::Discrete {
        gpu.usable_bytes
            .saturating_sub(DESKTOP_DISPLAY_ALLOWANCE_BYTES)
    } else {
        gpu.usable_bytes
    }
}

/// An Apple Silicon Mac with `ram_gb` GB (= GiB, as Apple sells it) of unified memory at the default
/// GPU share.
const fn apple(id: &'static str, name: &'static str, ram_gb: u64, source: &'static str) -> Gpu {
    Gpu {
        id,
        name,
        marketed_gb: ram_gb,
        usable_bytes: apple_usable_bytes(ram_gb * GIB, None),
        source,
        kind: GpuKind::AppleUnified,
        system_ram_bytes: ram_gb * GIB,
    }
}

/// The catalog, smallest memory first within each vendor and kind: NVIDIA, AMD and Intel discrete
/// cards, then Apple Silicon by unified-memory size, then APUs sharing host RAM.
pub const GPUS: &[Gpu] = &[
    Gpu {
        id: "rtx3080",
        name: "NVIDIA RTX 3080 10 GB",
        marketed_gb: 10,
        usable_bytes: gib_x100(978),
        source: "zai-org/CogVideo#34 (RTX 3080, Linux): \"GPU 0; 9.78 GiB total capacity\"",
        kind: GpuKind::Discrete,
        system_ram_bytes: 0,
    },
    Gpu {
        id: "rtx3060",
        name: "NVIDIA RTX 3060 12 GB",
        marketed_gb: 12,
        usable_bytes: gib_x100(1176),
        source: "TencentARC/PhotoMaker#47 (RTX 3060 12 GB): \"GPU 0; 11.76 GiB total capacity\" (Kunhao-Liu/StyleGaussian#12: 11.75 GiB)",
        kind: GpuKind::Discrete,
        system_ram_bytes: 0,
    },
    Gpu {
        id: "rtx4070ti",
        name: "NVIDIA RTX 4070 Ti 12 GB",
        marketed_gb: 12,
        usable_bytes: gib_x100(1173),
        source: "OpenLMLab/LOMO#17 (RTX 4070 Ti): \"GPU 0; 11.73 GiB total capacity\"",
        kind: GpuKind::Discrete,
        system_ram_bytes: 0,
    },
    Gpu {
        id: "t4",
        name: "NVIDIA T4 16 GB",
        marketed_gb: 16,
        usable_bytes: gib_x100(1474),
        source: "vLLM start-up logs on T4: \"total_gpu_memory (14.74GiB)\" (torch.cuda.mem_get_info; two public V0 logs, 2025); PyTorch OOM messages on Colab show 14.75 GiB",
        kind: GpuKind::Discrete,
        system_ram_bytes: 0,
    },
    Gpu {
        id: "v100-16",
        name: "NVIDIA V100 16 GB",
        marketed_gb: 16,
        usable_bytes: 16160 << 20,
        source: "measured.md J7: \"16 GB\" V100 = 16160 MiB (15.78 GiB)",
        kind: GpuKind::Discrete,
        system_ram_bytes: 0,
    },
    Gpu {
        id: "rtx-a4000",
        name: "NVIDIA RTX A4000 16 GB",
        marketed_gb: 16,
        usable_bytes: gib_x100(1561),
        source: "DengKaiCQ/VGGT-Long#6 (RTX A4000): \"GPU 0 has a total capacity of 15.61 GiB\"",
        kind: GpuKind::Discrete,
        system_ram_bytes: 0,
    },
    Gpu {
        id: "rtx4060ti-16",
        name: "NVIDIA RTX 4060 Ti 16 GB",
        marketed_gb: 16,
        usable_bytes: 16379 << 20,
        source: "ollama's llama-server device discovery (llm/, captured output in its source): \"Device 0: NVIDIA GeForce RTX 4060 Ti, compute capability 8.9, VMM: yes, VRAM: 16379 MiB\" (cudaMemGetInfo total)",
        kind: GpuKind::Discrete,
        system_ram_bytes: 0,
    },
    Gpu {
        id: "a10g",
        name: "NVIDIA A10G 24 GB",
        marketed_gb: 24,
        usable_bytes: gib_x100(2220),
        source: "PyTorch OOM messages on AWS g5 (A10G): \"22.20 GiB total capacity\" (nvidia-smi: 23028 MiB)",
        kind: GpuKind::Discrete,
        system_ram_bytes: 0,
    },
    Gpu {
        id: "rtx3090",
        name: "NVIDIA RTX 3090 24 GB",
        marketed_gb: 24,
        usable_bytes: gib_x100(2358),
        source: "vllm-project/vllm#10517 (RTX 3090, Linux): \"Memory profiling results: total_gpu_memory=23.58GiB\"; PyTorch OOM messages on other drivers show 23.69 GiB",
        kind: GpuKind::Discrete,
        system_ram_bytes: 0,
    },
    Gpu {
        id: "rtx4090",
        name: "NVIDIA RTX 4090 24 GB",
        marketed_gb: 24,
        usable_bytes: gib_x100(2358),
        source: "measured.md J7: \"24 GB\" 4090 = 23.58 GiB (OOM messages show 23.52–23.68 GiB by driver)",
        kind: GpuKind::Discrete,
        system_ram_bytes: 0,
    },
    Gpu {
        id: "rtx5090",
        name: "NVIDIA RTX 5090 32 GB",
        marketed_gb: 32,
        usable_bytes: gib_x100(3136),
        source: "TrajectoryCrafter/TrajectoryCrafter#20: \"GPU 0 has a total capacity of 31.36 GiB\" (RTX 5090)",
        kind: GpuKind::Discrete,
        system_ram_bytes: 0,
    },
    Gpu {
        id: "v100-32",
        name: "NVIDIA V100 32 GB",
        marketed_gb: 32,
        usable_bytes: gib_x100(3175),
        source: "PyTorch OOM messages on V100-SXM2-32GB: \"31.75 GiB total capacity\"",
        kind: GpuKind::Discrete,
        system_ram_bytes: 0,
    },
    Gpu {
        id: "a100-40",
        name: "NVIDIA A100 40 GB",
        marketed_gb: 40,
        usable_bytes: gib_x100(3959),
        source: "PyTorch OOM messages on A100-40GB: \"GPU 0; 39.59 GiB total capacity\"",
        kind: GpuKind::Discrete,
        system_ram_bytes: 0,
    },
    Gpu {
        id: "l40s",
        name: "NVIDIA L40S 48 GB",
        marketed_gb: 48,
        usable_bytes: gib_x100(4442),
        source: "stepfun-ai/Step-Video-T2V#8 (8×L40S): \"total capacity of 44.42 GiB\"; Wan-Video/Wan2.1#205: 44.53 GiB",
        kind: GpuKind::Discrete,
        system_ram_bytes: 0,
    },
    Gpu {
        id: "rtx-a6000",
        name: "NVIDIA RTX A6000 48 GB",
        marketed_gb: 48,
        usable_bytes: 48280 << 20,
        source: "llama.cpp start-up log with an idle A6000 (4×4090 + A6000 rig): \"using device CUDA3 (NVIDIA RTX A6000) - 48280 MiB free\" (free at start, an upper bound of what llama.cpp can use)",
        kind: GpuKind::Discrete,
        system_ram_bytes: 0,
    },
    Gpu {
        id: "rtx6000-ada",
        name: "NVIDIA RTX 6000 Ada 48 GB",
        marketed_gb: 48,
        usable_bytes: gib_x100(4443),
        source: "DINGYANB/MTVCrafter#21 (RTX 6000 Ada, nvidia-smi 46068MiB): \"GPU 0 has a total capacity of 44.43 GiB\"",
        kind: GpuKind::Discrete,
        system_ram_bytes: 0,
    },
    Gpu {
        id: "a100-80",
        name: "NVIDIA A100 80 GB",
        marketed_gb: 80,
        usable_bytes: gib_x100(7915),
        source: "PyTorch OOM messages on A100-SXM4-80GB: \"GPU 0; 79.15 GiB total capacity\"",
        kind: GpuKind::Discrete,
        system_ram_bytes: 0,
    },
    Gpu {
        id: "h100-80",
        name: "NVIDIA H100 80 GB",
        marketed_gb: 80,
        usable_bytes: 85_029_615_043,
        source: "measured.md J7/H3: \"80 GB\" H100 = 79.19 GiB (the vLLM serving default of vram_core)",
        kind: GpuKind::Discrete,
        system_ram_bytes: 0,
    },
    Gpu {
        id: "h200",
        name: "NVIDIA H200 141 GB",
        marketed_gb: 141,
        usable_bytes: gib_x100(13980),
        source: "PyTorch OOM messages on 8×H200 runs: \"GPU 0 has a total capacity of 139.80 GiB\"",
        kind: GpuKind::Discrete,
        system_ram_bytes: 0,
    },
    Gpu {
        id: "b200",
        name: "NVIDIA B200 192 GB",
        marketed_gb: 192,
        usable_bytes: gib_x100(17835),
        source: "PyTorch OOM messages on B200: \"GPU 0 has a total capacity of 178.35 GiB\"",
        kind: GpuKind::Discrete,
        system_ram_bytes: 0,
    },
    Gpu {
        id: "rx7900xtx",
        name: "AMD Radeon RX 7900 XTX 24 GB",
        marketed_gb: 24,
        usable_bytes: 23737 << 20,
        source: "llama.cpp Vulkan start-up line captured in a public test: \"using device Vulkan0 (AMD Radeon RX 7900 XTX) - 23737 MiB free\" (free at start; 22938 MiB with a desktop on it)",
        kind: GpuKind::Discrete,
        system_ram_bytes: 0,
    },
    Gpu {
        id: "mi300x",
        name: "AMD Instinct MI300X 192 GB",
        marketed_gb: 192,
        usable_bytes: gib_x100(19169),
        source: "PyTorch (ROCm) OOM messages on MI300X: \"total capacity of 191.69 GiB\" (191.98 GiB on other drivers)",
        kind: GpuKind::Discrete,
        system_ram_bytes: 0,
    },
    Gpu {
        id: "arc-a770",
        name: "Intel Arc A770 16 GB",
        marketed_gb: 16,
        usable_bytes: 16_225_243_136,
        source: "ggml-org/llama.cpp#6036 (SYCL, Linux): \"Intel(R) Arc(TM) A770 Graphics ... Global mem size 16225243136\" (15.11 GiB; also ollama/ollama#2458)",
        kind: GpuKind::Discrete,
        system_ram_bytes: 0,
    },
    apple(
        "apple-8gb",
        "Apple M-series, 8 GB unified memory",
        8,
        "li-plus/chatglm.cpp#76 (M2 MacBook Air 8 GB): ggml_metal buffers \"( 3351.95 /  5461.34)\" MB, the recommended max working set",
    ),
    apple(
        "apple-16gb",
        "Apple M-series, 16 GB unified memory",
        16,
        "ise-uiuc/magicoder#19 (M1 MacBook Air 16 GB): \"ggml_metal_init: recommendedMaxWorkingSetSize  = 10922.67 MiB\" (= 11453.25 MB as newer llama.cpp prints it)",
    ),
    apple(
        "apple-32gb",
        "Apple M-series, 32 GB unified memory",
        32,
        "ollama/ollama#434 (M2 Max 32 GB): \"ggml_metal_init: recommendedMaxWorkingSetSize = 21845.34 MB\"",
    ),
    apple(
        "apple-64gb",
        "Apple M-series, 64 GB unified memory",
        64,
        "ggml-org/llama.cpp#1870 (M1 Max 64 GB): \"ggml_metal_init: recommendedMaxWorkingSetSize  = 49152.00 MiB\"",
    ),
    apple(
        "apple-96gb",
        "Apple M-series, 96 GB unified memory",
        96,
        "ggml-org/llama.cpp#3213 (M2 Max 96 GB): \"ggml_metal_init: recommendedMaxWorkingSetSize  = 73728,00 MB\"",
    ),
    Gpu {
        id: "strix-halo-128gb",
        name: "AMD Ryzen AI Max+ 395 (Radeon 8060S), 128 GB shared memory, 96 GB to the GPU",
        marketed_gb: 128,
        usable_bytes: 96 * GIB,
        source: "96 GiB as the GPU is commonly given it, either way: BIOS carve-out, dmesg \"amdgpu: 98304M of VRAM memory ready\" (ROCm/TheRock#1054); or 512 MB carve-out + GTT with ttm.pages_limit=25165824, llama.cpp HIP \"Total VRAM: 98304 MiB\" (noamsto/nix-amd-ai#42). Varies with BIOS and kernel settings (unslothai/unsloth#7960: PyTorch saw 62.47 GiB with a 128 GiB GTT)",
        kind: GpuKind::ApuShared,
        system_ram_bytes: 128 * GIB,
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

    /// GPU memory is sold in binary units under a decimal name: a "16 GB" card has 16 GiB of chips
    /// (an Arc A770 reports 16225243136 bytes, more than 16e9), and a "16 GB" Mac 16 GiB of RAM. So the
    /// bound is `marketed_gb` GiB, not `marketed_gb` × 1e9; and on unified memory the GPU's share is
    /// within the RAM.
    #[test]
    fn usable_memory_is_within_the_marketed_size_in_gib() {
        for g in GPUS {
            assert!(g.usable_bytes > 0, "{}", g.id);
            assert!(
                g.usable_bytes <= g.marketed_gb * GIB,
                "{} over its marketed GiB",
                g.id
            );
            match g.kind {
                GpuKind::Discrete => assert_eq!(g.system_ram_bytes, 0, "{}", g.id),
                GpuKind::AppleUnified | GpuKind::ApuShared => {
                    assert_eq!(g.system_ram_bytes, g.marketed_gb * GIB, "{}", g.id);
                    assert!(g.usable_bytes < g.system_ram_bytes, "{}", g.id);
                }
            }
        }
        let arc = find("arc-a770").unwrap();
        assert!(arc.usable_bytes > arc.marketed_gb * 1_000_000_000);
        let mac = find("apple-96gb").unwrap();
        assert!(mac.usable_bytes < mac.marketed_gb * 1_000_000_000);
    }

    #[test]
    fn smallest_memory_first_within_each_vendor_and_kind() {
        let vendor = |g: &Gpu| g.name.split(' ').next().unwrap();
        for pair in GPUS.windows(2) {
            if vendor(&pair[0]) == vendor(&pair[1]) && pair[0].kind == pair[1].kind {
                assert!(
                    pair[0].marketed_gb <= pair[1].marketed_gb,
                    "{} before {}",
                    pair[0].id,
                    pair[1].id
                );
            }
        }
    }

    #[test]
    fn hand_checked_new_entries() {
        // 11.76 GiB = 1176 × ⌊2^30 / 100⌋ + ⌊1176 × 24 / 100⌋ = 12_627_203_568 + 282.
        assert_eq!(find("rtx3060").unwrap().usable_bytes, 12_627_203_850);
        // SYCL's global mem size, verbatim: 15.11 GiB.
        let arc = find("arc-a770").unwrap();
        assert_eq!(arc.usable_bytes, 16_225_243_136);
        assert_eq!(
            format!("{:.2}", arc.usable_bytes as f64 / GIB as f64),
            "15.11"
        );
        // 2/3 of 16 GiB rounded up to 16 KiB pages: 699_051 pages, printed "10922.67 MiB".
        let mac = find("apple-16gb").unwrap();
        assert_eq!(mac.usable_bytes, 699_051 * 16_384);
        assert_eq!(
            format!("{:.2}", mac.usable_bytes as f64 / (1 << 20) as f64),
            "10922.67"
        );
        assert_eq!(mac.kind, GpuKind::AppleUnified);
        assert_eq!(mac.system_ram_bytes, 16 * GIB);
        // The page round-up is what makes the 32 GB print .34 rather than .33.
        let mac32 = find("apple-32gb").unwrap().usable_bytes;
        assert_eq!(
            format!("{:.2}", mac32 as f64 / (1 << 20) as f64),
            "21845.34"
        );
        let mac8 = find("apple-8gb").unwrap().usable_bytes;
        assert_eq!(format!("{:.2}", mac8 as f64 / (1 << 20) as f64), "5461.34");
        let halo = find("strix-halo-128gb").unwrap();
        assert_eq!(
            (halo.usable_bytes >> 20, halo.kind),
            (98_304, GpuKind::ApuShared)
        );
    }

    #[test]
    fn apple_default_share_and_wired_limit() {
        assert_eq!(apple_usable_bytes(16 * GIB, None), 11_453_251_584);
        assert_eq!(apple_usable_bytes(64 * GIB, None), 49_152 << 20);
        assert_eq!(apple_usable_bytes(96 * GIB, None), 73_728 << 20);
        assert_eq!(apple_usable_bytes(64 * GIB, Some(57_344)), 56 * GIB);
        assert_eq!(apple_usable_bytes(128 * GIB, Some(114_688)), 112 * GIB);
        assert_eq!(apple_usable_bytes(16 * GIB, Some(0)), 11_453_251_584);
    }

    #[test]
    fn display_costs_discrete_cards_only() {
        let card = find("rtx3060").unwrap();
        assert_eq!(usable_with_display(card, false), card.usable_bytes);
        assert_eq!(
            usable_with_display(card, true),
            card.usable_bytes - DESKTOP_DISPLAY_ALLOWANCE_BYTES
        );
        let mac = find("apple-16gb").unwrap();
        assert_eq!(usable_with_display(mac, true), mac.usable_bytes);
    }

    #[test]
    fn ids_are_unique() {
        for (i, a) in GPUS.iter().enumerate() {
            assert!(GPUS[i + 1..].iter().all(|b| b.id != a.id));
        }
    }
}
