//! Ranges of bits in a bitmap of 64-bit words, a word at a time: the trace statistics' touched
//! and written maps and the workload models' written-sector map.

/// Each word that bits `lo..hi` touch, with the mask of those bits in it.
pub(super) fn range_masks(lo: usize, hi: usize) -> impl Iterator<Item = (usize, u64)> {
    let mut i = lo;
    std::iter::from_fn(move || {
        if i >= hi {
            return None;
        }
        let (w, b) = (i / 64, i % 64);
        let n = (64 - b).min(hi - i);
        let mask = if n == 64 {
            u64::MAX
        } else {
            ((1u64 << n) - 1) << b
        };
        i += n;
        Some((w, mask))
    })
}

/// Set bits `lo..hi` of `bits`; return how many were already set.
pub(super) fn set_range(bits: &mut [u64], lo: usize, hi: usize) -> u64 {
    let mut already = 0u64;
    for (w, mask) in range_masks(lo, hi) {
        already += (bits[w] & mask).count_ones() as u64;
        bits[w] |= mask;
    }
    already
}

/// How many of bits `lo..hi` of `bits` are set.
pub(super) fn count_range(bits: &[u64], lo: usize, hi: usize) -> u64 {
    range_masks(lo, hi)
        .map(|(w, mask)| (bits[w] & mask).count_ones() as u64)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::Rng;

    #[test]
    fn word_masks_cover_exactly_the_bits_of_a_range() {
        // Oracle: one bit at a time.
        let mut rng = Rng::stream(7, "test");
        for _ in 0..2_000 {
            let s0 = rng.below(400);
            let s1 = s0 + rng.below(300);
            let mut words = [0u64; 12];
            for (w, mask) in range_masks(s0 as usize, s1 as usize) {
                assert_eq!(words[w] & mask, 0, "a bit is covered twice");
                words[w] |= mask;
            }
            for s in 0..768u64 {
                let set = words[(s / 64) as usize] >> (s % 64) & 1 == 1;
                assert_eq!(set, (s0..s1).contains(&s), "bit {s} of {s0}..{s1}");
            }
        }
    }
}
