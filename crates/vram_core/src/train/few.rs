//! A short list kept on the stack: the activation walk lists a layer's projections and their
//! outputs (3 to 6 each) for every layer kind and every sweep point; without the heap `Vec`s a wasm
//! sweep point is ≈ 8 % faster (docs/performance.md, issue "A fast core"). Longer lists move to the
//! heap.

/// Up to `N` items inline, more on the heap.
#[derive(Clone, Debug)]
pub(crate) enum Few<T: Copy + Default, const N: usize> {
    Inline([T; N], usize),
    Heap(Vec<T>),
}

impl<T: Copy + Default, const N: usize> Few<T, N> {
    pub fn new() -> Self {
        Few::Inline([T::default(); N], 0)
    }

    pub fn push(&mut self, item: T) {
        match self {
            Few::Inline(items, len) if *len < N => {
                items[*len] = item;
                *len += 1;
            }
            Few::Inline(items, len) => {
                let mut v = items[..*len].to_vec();
                v.push(item);
                *self = Few::Heap(v);
            }
            Few::Heap(v) => v.push(item),
        }
    }

    pub fn as_slice(&self) -> &[T] {
        match self {
            Few::Inline(items, len) => &items[..*len],
            Few::Heap(v) => v,
        }
    }
}

impl<T: Copy + Default, const N: usize> FromIterator<T> for Few<T, N> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut out = Few::new();
        for item in iter {
            out.push(item);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_longer_than_its_inline_room_keeps_every_item_in_order() {
        let short: Few<u32, 4> = (1..=3).collect();
        assert_eq!(short.as_slice(), &[1, 2, 3]);
        let long: Few<u32, 4> = (1..=6).collect();
        assert_eq!(long.as_slice(), &[1, 2, 3, 4, 5, 6]);
        assert!(matches!(long, Few::Heap(_)));
    }
}
