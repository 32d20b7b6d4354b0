//! Which vLLM release is modelled, and what differs between releases: the default limits for the
//! usage context and GPU, the profiling run's sampler, how the profile adds up, non-torch memory
//! by TP size and interconnect, and CUDA-graph memory. Each behaviour cites the release source it
//! was read from (the wheels of `pip download vllm==X --no-deps`); docs/formulas/vllm-versions.md
//! tabulates them.

use crate::error::ScenarioError;
use crate::scenario::{Interconnect, ServingInputs, VllmUsage};
use crate::spec::ModelSpec;
use crate::units::GIB;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The current release, modelled when no version is given.
pub const CURRENT: &str = "0.34.0";

/// A vLLM release `0.minor.patch` (vLLM has not had a major release).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct VllmVersion {
    /// The minor number (`11` of 0.11.0).
    pub minor: u32,
    /// The patch number (`3` of 0.6.3.post1).
    pub patch: u32,
}

impl fmt::Display for VllmVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0.{}.{}", self.minor, self.patch)
    }
}

impl VllmVersion {
    /// Parses `0.11`, `0.6.3.post1`, `v0.8.5`, `0.10.1.1`, `0.7.3.dev233+gad5a35c2`; the empty
    /// string is [`CURRENT`]. The error says what was expected.
    pub fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        let t = if t.is_empty() { CURRENT } else { t };
        let bad = || {
            format!(
                "expected a vLLM release such as 0.6.3, 0.8.5 or 0.11 (0.2 … {CURRENT}), found {text:?}"
            )
        };
        let t = t.strip_prefix(['v', 'V']).unwrap_or(t);
        let mut parts = t.split(['.', '+', '-']);
        let major = parts.next().ok_or_else(bad)?;
        if major != "0" {
            return Err(bad());
        }
        let minor: u32 = parts.next().and_then(|m| m.parse().ok()).ok_or_else(bad)?;
        // the patch may carry a suffix (`3post1` is not used by vLLM, but `5rc1` would be)
        let patch = match parts.next() {
            None => 0,
            Some(p) => {
                let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
                digits.parse().map_err(|_| bad())?
            }
        };
        let v = VllmVersion { minor, patch };
        if !(2..=99).contains(&minor) {
            return Err(bad());
        }
        Ok(v)
    }

    /// `0.minor.patch` as a comparable pair.
    const fn at_least(self, minor: u32, patch: u32) -> bool {
        self.minor > minor || (self.minor == minor && self.patch >= patch)
    }

    /// Whether the default engine is V1 (vLLM 0.8.0 made V1 the default; before, V0).
    pub const fn v1(self) -> bool {
        self.at_least(8, 0)
    }
}

/// The parsed version of the inputs ([`CURRENT`] when empty), the error naming the field.
pub fn version_of(s: &ServingInputs) -> Result<VllmVersion, ScenarioError> {
    VllmVersion::parse(&s.vllm_version).map_err(|e| ScenarioError::Invalid {
        field: "serving.vllm_version".into(),
        expected: "a vLLM release such as 0.6.3, 0.8.5, 0.11 or 0.34".into(),
        found: e,
    })
}

/// Whether `gpu_name` is an A100 (vLLM keeps the small defaults on A100s: `"a100" not in
/// device_name`).
fn is_a100(gpu_name: &str) -> bool {
    gpu_name.to_ascii_lowercase().contains("a100")
}

/// Whether the GPU named is a PCIe-only card (no NVLink between cards): consumer GeForce/RTX
/// cards, the L4/L40/L40S, A10/A10G, T4 and A40 are sold without NVLink bridges or with PCIe
/// only.
pub fn pcie_only(gpu_name: &str) -> bool {
    let n = gpu_name.to_ascii_lowercase();
    n.split(|c: char| !c.is_ascii_alphanumeric()).any(|w| {
        matches!(
            w,
            "a10" | "a10g" | "a40" | "l4" | "l40" | "l40s" | "t4" | "geforce" | "pcie" | "radeon"
        ) || w.starts_with("rtx")
    })
}

/// The interconnect in effect.
pub fn interconnect(s: &ServingInputs) -> Interconnect {
    match s.interconnect {
        Interconnect::Auto if pcie_only(&s.gpu_name) => Interconnect::Pcie,
        Interconnect::Auto => Interconnect::Nvlink,
        i => i,
    }
}

/// How a release turns the profiling run into the KV budget (`determine_available_memory`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Budget {
    /// V0 (up to 0.7; `worker/worker.py determine_num_available_blocks`): `T·u − weights − profiled
    /// peak − non-torch memory since start-up`; CUDA graphs are captured after the KV cache and sit
    /// outside the budget. (0.6.3 and older read the peak as reserved memory, weights included.)
    V0,
    /// V1 0.8 (`v1/worker/gpu_worker.py`): as V0 but the non-torch term is absolute (device used
    /// − torch allocated), so the CUDA context counts against the budget.
    V1Absolute,
    /// V1 0.9–0.20 (`memory_profiling` snapshot at `init_device`): `T·u − weights − Δpeak −
    /// Δnon-torch`; CUDA graphs outside the budget (0.19 estimates them but subtracts the estimate
    /// only with `VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1`).
    V1,
    /// V1 0.21–0.33: the CUDA-graph estimate is subtracted too
    /// (`VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS` defaults to 1), utilization default 0.92.
    V1Graphs,
    /// 0.34+: the extensible KV cache, sized after warm-up and graph capture
    /// (`v1/worker/extensible_kv_cache.py measure_kv_cache_bytes`): `min(T·u − used, T − context −
    /// margin − used) − transient peak` with `margin = max(1 GiB, 0.75 × transient peak)`; the
    /// utilization defaults to 1.0.
    Extensible,
}

impl Budget {
    /// Whether the CUDA graphs are inside the budget (0.21+) rather than on the device beyond it.
    pub const fn counts_cuda_graphs(self) -> bool {
        matches!(self, Budget::V1Graphs | Budget::Extensible)
    }
}

/// The sampler the profiling run exercises, which sets its bytes per (row × vocab entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SamplerPath {
    /// PyTorch's sort-based top-k/top-p (V0: `SamplingParams(top_p=0.99, top_k=vocab−1)`; V1
    /// 0.8–0.16 `_dummy_sampler_run` with `top_p=0.9, top_k=vocab−1`): at the sort, the logits in
    /// the model dtype, their fp32 copy, the sorted fp32 values and int64 indices, and the sort's
    /// working copies (fp32 keys and int64 values double-buffered, the int64 index input): `a + 4 +
    /// 12 + 20` B.
    SortNative,
    /// The in-place Triton top-k/top-p kernel (0.17–0.33, `topk_topp_triton.py`): logits, fp32
    /// copy, probabilities and the exponential draw (`a + 12` B) plus a scratch buffer of
    /// `min(next_pow2(rows), SMs) × vocab × 4` B.
    Triton,
    /// Model runner V2 (0.34, `v1/worker/gpu/sample/sampler.py`): an fp32 copy and in-place Triton
    /// kernels (`a + 8` B) plus the Triton scratch buffer.
    RunnerV2,
}

/// What a release does at start-up, with the source it was read from (docs/formulas/vllm-versions.md).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// The release.
    pub version: VllmVersion,
    /// Whether the engine is V1 (0.8+).
    pub v1: bool,
    /// How the KV budget is formed.
    pub budget: Budget,
    /// The sampler the profiling run exercises.
    pub sampler: SamplerPath,
    /// Default `--gpu-memory-utilization`.
    pub default_utilization: f64,
    /// Default `--block-size` for non-MLA models.
    pub default_block_size: u64,
    /// Fused-MoE chunk (`VLLM_FUSED_MOE_CHUNK_SIZE`; 0: no chunking, 0.19+).
    pub fused_moe_chunk_tokens: u64,
    /// Whether the fused-MoE kernel allocates its first and third caches separately (up to 0.7;
    /// 0.8+ shares one buffer, `cache13`).
    pub fused_moe_separate_caches: bool,
}

impl Profile {
    /// The profile of `version`.
    pub fn of(version: VllmVersion) -> Profile {
        let m = version.minor;
        let budget = match m {
            0..=7 => Budget::V0,
            8 => Budget::V1Absolute,
            9..=20 => Budget::V1,
            21..=33 => Budget::V1Graphs,
            _ => Budget::Extensible,
        };
        let sampler = match m {
            0..=16 => SamplerPath::SortNative,
            17..=33 => SamplerPath::Triton,
            _ => SamplerPath::RunnerV2,
        };
        Profile {
            version,
            v1: version.v1(),
            budget,
            sampler,
            default_utilization: match budget {
                Budget::V1Graphs => 0.92,
                Budget::Extensible => 1.0,
                _ => 0.9,
            },
            default_block_size: if m >= 34 { 64 } else { 16 },
            fused_moe_chunk_tokens: match m {
                0..=11 => 32 * 1024,
                12..=18 => 16 * 1024,
                _ => 0,
            },
            fused_moe_separate_caches: m <= 7,
        }
    }

    /// Bytes per (row × vocab entry) of the profiled sampler with logits of `logits_bytes`.
    pub fn sampler_bytes_per_entry(&self, logits_bytes: u64) -> u64 {
        logits_bytes
            + match self.sampler {
                SamplerPath::SortNative => 4 + 12 + 20,
                SamplerPath::Triton => 12,
                SamplerPath::RunnerV2 => 8,
            }
    }

    /// The Triton top-k/top-p scratch buffer: `min(next_pow2(rows), SMs) × vocab × 4` B (132 SMs
    /// on an H100, 108 on an A100).
    pub fn sampler_scratch_bytes(&self, rows: u64, vocab: u64, gpu_name: &str) -> u64 {
        if self.sampler == SamplerPath::SortNative {
            return 0;
        }
        let sms = if is_a100(gpu_name) { 108 } else { 132 };
        rows.max(1)
            .checked_next_power_of_two()
            .unwrap_or(u64::MAX)
            .min(sms)
            .saturating_mul(vocab)
            .saturating_mul(4)
    }
}

/// The limits vLLM uses when the flags are not given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DefaultLimits {
    /// `max_num_seqs`.
    pub max_num_seqs: u64,
    /// `max_num_batched_tokens`.
    pub max_num_batched_tokens: u64,
    /// Whether chunked prefill is on.
    pub chunked_prefill: bool,
}

/// Default `max_num_seqs` / `max_num_batched_tokens` of `version` for the usage, GPU and
/// `max_model_len` (`vllm/engine/arg_utils.py`):
///
/// - V0 (up to 0.7): 256 sequences; without chunked prefill `max(max_model_len, 2048)` tokens (the
///   whole prompt at once); chunked prefill is switched on for `max_model_len > 32768` with 512
///   tokens (0.6, `SchedulerConfig`) or 2048 (0.7).
/// - V1 0.8 (`_set_default_args_v1`): GPUs of at least 70 GiB: `vllm serve` 8192 tokens, `LLM()`
///   16384, 1024 sequences; smaller GPUs 2048 / 8192 tokens and 256 sequences.
/// - 0.9+: the same, but an A100 of any size gets the small defaults (`"a100" not in
///   device_name`); 0.34 adds a tier for GPUs of at least 160 GiB: 16384 tokens for both.
/// - 0.10+: `max_num_seqs` at most `max_num_batched_tokens`.
pub fn default_limits(
    version: VllmVersion,
    usage: VllmUsage,
    gpu_bytes: u64,
    gpu_name: &str,
    max_model_len: u64,
) -> DefaultLimits {
    let m = version.minor;
    if !version.v1() {
        let chunked = max_model_len > 32 * 1024;
        return DefaultLimits {
            max_num_seqs: 256,
            max_num_batched_tokens: match (chunked, m) {
                (true, 0..=6) => 512,
                (true, _) => 2048,
                (false, _) => max_model_len.max(2048),
            },
            chunked_prefill: chunked,
        };
    }
    let huge = m >= 34 && gpu_bytes >= 160 * GIB;
    let large = gpu_bytes >= 70 * GIB && (m < 9 || !is_a100(gpu_name));
    let (tokens, seqs) = match (huge, large, usage) {
        (true, _, _) => (16384, 1024),
        (false, true, VllmUsage::Serve) => (8192, 1024),
        (false, true, VllmUsage::Offline) => (16384, 1024),
        (false, false, VllmUsage::Serve) => (2048, 256),
        (false, false, VllmUsage::Offline) => (8192, 256),
    };
    DefaultLimits {
        max_num_seqs: if m >= 10 { seqs.min(tokens) } else { seqs },
        max_num_batched_tokens: tokens,
        chunked_prefill: true,
    }
}

/// Non-torch memory per GPU that the budget subtracts, by release, TP size and interconnect:
/// measured, since it is mostly NCCL's buffers and lazily loaded kernels rather than vLLM's own
/// allocations (custom all-reduce takes about 16 MiB, symmetric-memory all-reduce up to 64 MiB).
///
/// | | TP 1 | TP > 1, NVLink | TP > 1, PCIe (custom all-reduce off) |
/// |---|---|---|---|
/// | V0 (≤ 0.7) | 0.27 GiB (median of 0.35, 0.26, 0.16, 0.28 GiB: vllm#10517, #10511 V31, #12126, UI-TARS 0.6.6) | 2.10 GiB (A100 TP 8, 0.7.1) | 0.28 GiB (L40S TP 2 0.30, RTX 4090 TP 2 0.25, L40S TP 8 0.36, TP 4 0.20) |
/// | 0.8–0.18 | 0.13 GiB (0.11.0 H100: 0.13, 0.14; 0.10.2: 0.07) | 0.55 GiB (0.11.0 H100 TP 2: 0.54, 0.55) | 0.28 GiB |
/// | 0.19+ | 0.25 GiB (0.19 H100: 0.25, 0.24) | 2.07 GiB at TP 2, 2.13 GiB at TP ≥ 4 (0.19 H100) | 0.28 GiB |
///
/// 0.8 counts the CUDA context on top (`context_bytes`, its absolute non-torch term).
pub fn non_torch_bytes(profile: &Profile, tp: u64, link: Interconnect, context_bytes: u64) -> u64 {
    const fn gib100(x: u64) -> u64 {
        x * GIB / 100
    }
    let m = profile.version.minor;
    let base = match (tp, link, m) {
        (0 | 1, _, 0..=7) => gib100(27),
        (0 | 1, _, 8..=18) => gib100(13),
        (0 | 1, _, _) => GIB / 4,
        (_, Interconnect::Pcie, _) => gib100(28),
        (_, _, 0..=7) => gib100(210),
        (_, _, 8..=18) => gib100(55),
        (2, _, _) => 2_222_615_101, // 2.07 GiB
        _ => 2_287_042_969,         // 2.13 GiB
    };
    if profile.budget == Budget::V1Absolute {
        base.saturating_add(context_bytes)
    } else {
        base
    }
}

/// The inputs with the version's defaults filled in: the version written out, the limits and the
/// interconnect resolved (`max_model_len` and `block_size` stay 0 when not given; the serving model
/// resolves them per model); with the release's profile.
pub fn resolve(
    s: &ServingInputs,
    spec: &ModelSpec,
) -> Result<(ServingInputs, Profile), ScenarioError> {
    let version = version_of(s)?;
    let max_model_len = if s.max_model_len == 0 {
        spec.max_position_embeddings.max(1)
    } else {
        s.max_model_len
    };
    let d = default_limits(
        version,
        s.usage,
        s.gpu_memory_bytes,
        &s.gpu_name,
        max_model_len,
    );
    let mut r = s.clone();
    r.vllm_version = version.to_string();
    if r.max_num_seqs == 0 {
        r.max_num_seqs = d.max_num_seqs;
    }
    if r.max_num_batched_tokens == 0 {
        r.max_num_batched_tokens = d.max_num_batched_tokens;
    }
    r.interconnect = interconnect(s);
    let profile = Profile::of(version);
    if r.gpu_memory_utilization == 0.0 {
        r.gpu_memory_utilization = profile.default_utilization;
    }
    Ok((r, profile))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(t: &str) -> VllmVersion {
        VllmVersion::parse(t).unwrap()
    }

    #[test]
    fn releases_parse_with_their_suffixes() {
        assert_eq!(v("0.6.3.post1"), VllmVersion { minor: 6, patch: 3 });
        assert_eq!(v("v0.8.5"), VllmVersion { minor: 8, patch: 5 });
        assert_eq!(
            v("0.10.1.1"),
            VllmVersion {
                minor: 10,
                patch: 1
            }
        );
        assert_eq!(
            v("0.7.3.dev233+gad5a35c2"),
            VllmVersion { minor: 7, patch: 3 }
        );
        assert_eq!(
            v("0.11"),
            VllmVersion {
                minor: 11,
                patch: 0
            }
        );
        assert_eq!(v(""), v(CURRENT));
        for bad in ["1.0", "0", "0.x", "latest", "0.1.7"] {
            let e = VllmVersion::parse(bad).unwrap_err();
            assert!(
                e.contains("expected a vLLM release") && e.contains(bad),
                "{e}"
            );
        }
    }

    #[test]
    fn engine_budget_and_sampler_change_where_the_source_changes() {
        let p = |t: &str| Profile::of(v(t));
        assert_eq!(p("0.7.3").budget, Budget::V0);
        assert!(!p("0.7.3").v1);
        assert_eq!(p("0.8.5").budget, Budget::V1Absolute);
        assert_eq!(p("0.9.2").budget, Budget::V1);
        assert_eq!(p("0.20.0").budget, Budget::V1);
        assert_eq!(p("0.21.0").budget, Budget::V1Graphs);
        assert_eq!(p("0.34.0").budget, Budget::Extensible);
        assert_eq!(p("0.16.0").sampler, SamplerPath::SortNative);
        assert_eq!(p("0.17.1").sampler, SamplerPath::Triton);
        assert_eq!(p("0.34.0").sampler, SamplerPath::RunnerV2);
        assert_eq!(p("0.19.0").default_utilization, 0.9);
        assert_eq!(p("0.25.0").default_utilization, 0.92);
        assert_eq!(p("0.34.0").default_utilization, 1.0);
        assert_eq!(p("0.33.0").default_block_size, 16);
        assert_eq!(p("0.34.0").default_block_size, 64);
        // bf16 logits: 2 + 4 + 12 + 20 B at the sort; 2 + 12 B with the Triton kernel
        assert_eq!(p("0.11.0").sampler_bytes_per_entry(2), 38);
        assert_eq!(p("0.19.0").sampler_bytes_per_entry(2), 14);
        assert_eq!(
            p("0.19.0").sampler_scratch_bytes(1024, 1000, "H100"),
            132 * 4000
        );
        assert_eq!(
            p("0.19.0").sampler_scratch_bytes(8, 1000, "A100 40GB"),
            8 * 4000
        );
        assert_eq!(p("0.11.0").sampler_scratch_bytes(1024, 1000, "H100"), 0);
    }

    #[test]
    fn default_limits_follow_usage_gpu_and_release() {
        let h100 = 85_029_615_043;
        let a100 = 79 * GIB;
        let t4 = 15 * GIB;
        let lim = |ver: &str, usage, bytes, name: &str, mml| {
            let d = default_limits(v(ver), usage, bytes, name, mml);
            (d.max_num_seqs, d.max_num_batched_tokens, d.chunked_prefill)
        };
        use VllmUsage::{Offline, Serve};
        // V0: the whole prompt at once up to 32K, then chunked prefill (512 in 0.6, 2048 in 0.7)
        assert_eq!(lim("0.6.3", Serve, h100, "", 8192), (256, 8192, false));
        assert_eq!(lim("0.6.3", Serve, h100, "", 1024), (256, 2048, false));
        assert_eq!(lim("0.6.3", Serve, h100, "", 131_072), (256, 512, true));
        assert_eq!(lim("0.7.3", Serve, h100, "", 131_072), (256, 2048, true));
        // V1: by memory, and from 0.9 an A100 of any size gets the small defaults
        assert_eq!(
            lim("0.8.5", Serve, a100, "NVIDIA A100-SXM4-80GB", 8192),
            (1024, 8192, true)
        );
        assert_eq!(
            lim("0.9.2", Serve, a100, "NVIDIA A100-SXM4-80GB", 8192),
            (256, 2048, true)
        );
        assert_eq!(
            lim("0.9.2", Offline, a100, "A100 80 GB", 8192),
            (256, 8192, true)
        );
        assert_eq!(lim("0.19.0", Serve, h100, "H100", 8192), (1024, 8192, true));
        assert_eq!(
            lim("0.19.0", Offline, h100, "H100", 8192),
            (1024, 16384, true)
        );
        assert_eq!(lim("0.19.0", Serve, t4, "T4", 8192), (256, 2048, true));
        // 0.34: GPUs of 160 GiB or more get 16384 tokens for `vllm serve` too
        assert_eq!(
            lim("0.34.0", Serve, 178 * GIB, "B200", 8192),
            (1024, 16384, true)
        );
        assert_eq!(
            lim("0.19.0", Serve, 178 * GIB, "B200", 8192),
            (1024, 8192, true)
        );
    }

    #[test]
    fn non_torch_memory_follows_release_tp_and_link() {
        let nt = |ver: &str, tp, link| non_torch_bytes(&Profile::of(v(ver)), tp, link, 500 << 20);
        assert_eq!(nt("0.19.0", 1, Interconnect::Nvlink), GIB / 4);
        assert_eq!(nt("0.19.0", 2, Interconnect::Nvlink), 2_222_615_101);
        assert_eq!(nt("0.19.0", 8, Interconnect::Nvlink), 2_287_042_969);
        assert_eq!(nt("0.19.0", 4, Interconnect::Pcie), 28 * GIB / 100);
        assert_eq!(nt("0.11.0", 2, Interconnect::Nvlink), 55 * GIB / 100);
        // 0.8 counts the CUDA context too
        assert_eq!(
            nt("0.8.5", 1, Interconnect::Nvlink),
            13 * GIB / 100 + (500 << 20)
        );
    }

    #[test]
    fn pcie_cards_are_recognised_by_name() {
        for n in [
            "NVIDIA RTX 4090 24 GB",
            "NVIDIA L40S 48 GB",
            "T4",
            "NVIDIA A10G 24 GB",
            "l4",
        ] {
            assert!(pcie_only(n), "{n}");
        }
        for n in ["NVIDIA H100 80 GB", "NVIDIA A100 80 GB", "B200", ""] {
            assert!(!pcie_only(n), "{n}");
        }
    }
}
