//! A tensor's shape kept inline: the inventory holds dozens to hundreds of tensors per model, and a
//! heap-allocated `Vec` per shape was one of the two allocations per tensor when a config is
//! resolved (storing shapes inline took Jamba's `parse_config` from ≈ 4.2× to ≈ 3.6× the JSON parse;
//! docs/performance.md, issue "A fast core").

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Dimensions kept inline; the models resolved have at most 5 (a video model's `Conv3d` patch
/// embedding). Longer shapes fold their trailing dimensions into the last one, so the element
/// count stays exact.
pub const MAX_RANK: usize = 6;

/// A tensor shape (`[out, in]` for linear weights, `[experts, out, in]` for fused experts, ...).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shape {
    dims: [u64; MAX_RANK],
    rank: u8,
}

impl Shape {
    /// The shape of `dims` (beyond [`MAX_RANK`] dimensions, the rest multiply into the last).
    pub fn new(dims: &[u64]) -> Self {
        let mut s = Shape {
            dims: [0; MAX_RANK],
            rank: 0,
        };
        for (i, &d) in dims.iter().enumerate() {
            if i < MAX_RANK {
                s.dims[i] = d;
            } else {
                s.dims[MAX_RANK - 1] = s.dims[MAX_RANK - 1].saturating_mul(d);
            }
        }
        s.rank = dims.len().min(MAX_RANK) as u8;
        s
    }

    /// The dimensions.
    pub fn as_slice(&self) -> &[u64] {
        &self.dims[..usize::from(self.rank)]
    }
}

impl std::ops::Deref for Shape {
    type Target = [u64];
    fn deref(&self) -> &[u64] {
        self.as_slice()
    }
}

impl std::fmt::Debug for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl From<Vec<u64>> for Shape {
    fn from(dims: Vec<u64>) -> Self {
        Shape::new(&dims)
    }
}

impl<const N: usize> From<[u64; N]> for Shape {
    fn from(dims: [u64; N]) -> Self {
        Shape::new(&dims)
    }
}

impl Serialize for Shape {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.as_slice().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Shape {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<u64>::deserialize(d).map(Shape::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shape_reads_and_serialises_like_the_list_of_its_dimensions() {
        let s = Shape::from([8, 4096, 14336]);
        assert_eq!(s.as_slice(), &[8, 4096, 14336]);
        assert_eq!(s.len(), 3);
        assert_eq!(serde_json::to_string(&s).unwrap(), "[8,4096,14336]");
        let back: Shape = serde_json::from_str("[8,4096,14336]").unwrap();
        assert_eq!(back, s);
        assert_eq!(format!("{s:?}"), "[8, 4096, 14336]");
    }

    #[test]
    fn a_shape_longer_than_the_inline_rank_keeps_its_element_count() {
        let s = Shape::from(vec![2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(s.len(), MAX_RANK);
        assert_eq!(s.iter().product::<u64>(), 2 * 3 * 4 * 5 * 6 * 7 * 8);
        assert_eq!(Shape::from(Vec::new()).len(), 0);
    }
}
