//! HFSL's hot/cold judgement: a Bloom filter of the logical pages written lately.

/// The hot/cold judgement (§2.6.1: "the simple unidimensional bloom filter algorithm"): one
/// Bloom filter of the logical pages written since it was last cleared, every `window` writes.
/// A page is hot when the filter holds it (false positives make a cold page look hot now and
/// then, never the reverse).
pub(super) struct Bloom {
    pub(super) words: Vec<u64>,
    pub(super) mask: u64,
    pub(super) hashes: u32,
    pub(super) window: u32,
    pub(super) recorded: u32,
}

impl Bloom {
    pub(super) fn new(bits: u32, hashes: u32, window: u32) -> Bloom {
        Bloom {
            words: vec![0; (bits / 64) as usize],
            mask: bits as u64 - 1,
            hashes,
            window,
            recorded: 0,
        }
    }

    /// The filter's bit indices for `lpn`: double hashing over a SplitMix64 finaliser.
    pub(super) fn bits(&self, lpn: u32) -> impl Iterator<Item = u64> + '_ {
        let mix = |mut z: u64| {
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        let h1 = mix(lpn as u64 + 0x9E37_79B9_7F4A_7C15);
        let h2 = mix(h1) | 1;
        (0..self.hashes as u64).map(move |i| h1.wrapping_add(i.wrapping_mul(h2)) & self.mask)
    }

    #[cfg(test)]
    pub(super) fn contains(&self, lpn: u32) -> bool {
        self.bits(lpn)
            .all(|b| self.words[(b / 64) as usize] & (1 << (b % 64)) != 0)
    }

    #[cfg(test)]
    pub(super) fn record(&mut self, lpn: u32) {
        self.contains_then_record(lpn);
    }

    /// Whether the filter holds `lpn`, then record it (one hashing for both: every write does
    /// this).
    pub(super) fn contains_then_record(&mut self, lpn: u32) -> bool {
        // At most 8 hashes (validated): the bits fit on the stack.
        let mut set = [0u64; 8];
        let n = self.hashes as usize;
        for (slot, b) in set.iter_mut().zip(self.bits(lpn)) {
            *slot = b;
        }
        let held = set[..n]
            .iter()
            .all(|&b| self.words[(b / 64) as usize] & (1 << (b % 64)) != 0);
        if self.recorded == self.window {
            self.words.fill(0);
            self.recorded = 0;
        }
        self.recorded += 1;
        for &b in &set[..n] {
            self.words[(b / 64) as usize] |= 1 << (b % 64);
        }
        held
    }
}
