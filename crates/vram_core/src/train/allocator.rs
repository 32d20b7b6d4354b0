//! Peak *reserved* memory: PyTorch's CUDA caching allocator
//! (`c10/cuda/CUDACachingAllocator.cpp`) rounds every request and carves it from segments:
//! requests ≤ 1 MiB (`kSmallSize`) come from 2 MiB segments (`kSmallBuffer`), requests up to
//! 10 MiB (`kMinLargeAlloc`) from 20 MiB segments (`kLargeBuffer`), larger ones get their own
//! segment rounded up to 2 MiB (`kRoundLarge`); every block is a multiple of 512 B (`kMinBlockSize`).
//! The cache keeps segments after tensors die, so reserved memory is the peak of the rounded sizes.
//!
//! Modelled: the rounding of every persistent tensor (weights, gradients, states) R, and
//! reserved = max(R + buffers, peak allocated) + one 2 MiB round-up per layer group. Not modelled: fragmentation
//! (freed activation blocks too small for later gradient requests) — measured.md §L1 shows 0–2 GB
//! of it on 7B runs; no CUDA measurement in docs/measurements calibrates it yet.

/// `kMinBlockSize`.
pub const MIN_BLOCK: u64 = 512;
/// `kSmallSize`.
pub const SMALL_SIZE: u64 = 1 << 20;
/// `kSmallBuffer`.
pub const SMALL_BUFFER: u64 = 2 << 20;
/// `kMinLargeAlloc`.
pub const MIN_LARGE_ALLOC: u64 = 10 << 20;
/// `kLargeBuffer`.
pub const LARGE_BUFFER: u64 = 20 << 20;
/// `kRoundLarge`.
pub const ROUND_LARGE: u64 = 2 << 20;

/// Reserved bytes for a set of simultaneously live tensors of the given sizes.
pub fn reserved_for(sizes: impl IntoIterator<Item = u64>) -> u64 {
    reserved_for_counted(sizes.into_iter().map(|s| (s, 1)))
}

/// [`reserved_for`] of `(size, count)` pairs: `count` tensors of `size` bytes each.
pub fn reserved_for_counted(sizes: impl IntoIterator<Item = (u64, u64)>) -> u64 {
    let (mut small, mut mid, mut large) = (0u64, 0u64, 0u64);
    for (size, count) in sizes {
        if size == 0 {
            continue;
        }
        let block = size.div_ceil(MIN_BLOCK).saturating_mul(MIN_BLOCK);
        if block <= SMALL_SIZE {
            small = small.saturating_add(block.saturating_mul(count));
        } else if block < MIN_LARGE_ALLOC {
            mid = mid.saturating_add(block.saturating_mul(count));
        } else {
            let rounded = block.div_ceil(ROUND_LARGE).saturating_mul(ROUND_LARGE);
            large = large.saturating_add(rounded.saturating_mul(count));
        }
    }
    small
        .div_ceil(SMALL_BUFFER)
        .saturating_mul(SMALL_BUFFER)
        .saturating_add(mid.div_ceil(LARGE_BUFFER).saturating_mul(LARGE_BUFFER))
        .saturating_add(large)
}

/// Rounded size of a transient or activation total split into `groups` allocations.
pub fn reserved_for_groups(bytes: u64, groups: u64) -> u64 {
    bytes.saturating_add(groups.saturating_mul(ROUND_LARGE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_tensors_share_two_mib_segments() {
        assert_eq!(reserved_for([100, 100, 100]), 2 << 20);
    }

    #[test]
    fn large_tensors_round_to_two_mib() {
        assert_eq!(reserved_for([(10 << 20) + 1]), 12 << 20);
    }

    #[test]
    fn mid_tensors_pack_into_twenty_mib_segments() {
        assert_eq!(reserved_for([3 << 20, 3 << 20]), 20 << 20);
    }
}
