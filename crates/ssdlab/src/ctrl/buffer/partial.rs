//! Lines that hold part of their unit (`cache.partial_lines = "merge-at-flush"`): a mask per
//! line of the sectors it holds. A write of part of a unit not in the buffer takes a line at
//! once, holding only what it wrote; the rest is read from NAND and merged when the line is
//! flushed, or when a read of the unit brings it in first.

/// Sectors per mask bit: 512 bytes, or as many whole sectors as keep a unit within 64 bits.
const SECTOR: u64 = 512;

/// The valid-sector masks of a buffer's lines.
pub(crate) struct Sectors {
    line_bytes: u64,
    /// Bytes per mask bit (a multiple of 512; the last bit's share of the line may be shorter).
    granule: u64,
    granules: u32,
    /// The mask of a line holding its whole unit.
    full: u64,
    masks: Vec<u64>,
}

impl Sectors {
    /// The masks of `lines` lines of `line_bytes`, each holding its whole unit.
    pub fn new(line_bytes: u64, lines: u32) -> Sectors {
        let granule = SECTOR * line_bytes.div_ceil(SECTOR).div_ceil(64).max(1);
        let granules = line_bytes.div_ceil(granule) as u32;
        let full = if granules == 64 {
            u64::MAX
        } else {
            (1u64 << granules) - 1
        };
        Sectors {
            line_bytes,
            granule,
            granules,
            full,
            masks: vec![full; lines as usize],
        }
    }

    pub fn line_bytes(&self) -> u64 {
        self.line_bytes
    }

    /// Bits `first..end` set.
    fn bits(&self, first: u64, end: u64) -> u64 {
        if end <= first {
            return 0;
        }
        let upto = if end >= 64 {
            u64::MAX
        } else {
            (1u64 << end) - 1
        };
        upto & !((1u64 << first) - 1)
    }

    /// The granules `bytes` from byte `start` write whole: a granule written only in part
    /// still needs the rest of its old data, so it does not count as held.
    pub fn covered(&self, start: u64, bytes: u64) -> u64 {
        let end = start + bytes;
        let first = start.div_ceil(self.granule);
        let last = if end >= self.line_bytes {
            self.granules as u64
        } else {
            end / self.granule
        };
        self.bits(first, last)
    }

    /// The granules `bytes` from byte `start` touch.
    fn touched(&self, start: u64, bytes: u64) -> u64 {
        let first = start / self.granule;
        let last = (start + bytes)
            .div_ceil(self.granule)
            .min(self.granules as u64);
        self.bits(first, last)
    }

    /// `bytes` from byte `start` were written into line `slot`; `fresh`: the line was taken
    /// for this write (it held nothing of its unit before).
    pub fn written(&mut self, slot: u32, start: u64, bytes: u64, fresh: bool) {
        let m = self.covered(start, bytes);
        let mask = &mut self.masks[slot as usize];
        *mask = if fresh { m } else { *mask | m };
    }

    /// Line `slot` holds its whole unit.
    #[inline]
    pub fn whole(&self, slot: u32) -> bool {
        self.masks[slot as usize] == self.full
    }

    /// Line `slot` holds every byte of `bytes` from byte `start`.
    #[inline]
    pub fn holds(&self, slot: u32, start: u64, bytes: u64) -> bool {
        let want = self.touched(start, bytes);
        self.masks[slot as usize] & want == want
    }

    /// Line `slot` now holds its whole unit (the rest came in, or there was none to read).
    pub fn fill(&mut self, slot: u32) {
        self.masks[slot as usize] = self.full;
    }

    /// Bytes of its unit line `slot` does not hold.
    pub fn missing_bytes(&self, slot: u32) -> u64 {
        let missing = !self.masks[slot as usize] & self.full;
        let mut bytes = missing.count_ones() as u64 * self.granule;
        let short = self.granules as u64 * self.granule - self.line_bytes;
        if missing >> (self.granules - 1) & 1 == 1 {
            bytes -= short;
        }
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The simple model: which bytes of the line were written, one flag per byte.
    struct Bytes {
        written: Vec<bool>,
    }

    impl Bytes {
        fn write(&mut self, start: u64, bytes: u64, fresh: bool) {
            if fresh {
                self.written.iter_mut().for_each(|b| *b = false);
            }
            for b in start..start + bytes {
                self.written[b as usize] = true;
            }
        }
        fn all(&self, start: u64, bytes: u64) -> bool {
            (start..start + bytes).all(|b| self.written[b as usize])
        }
        fn missing(&self) -> u64 {
            self.written.iter().filter(|b| !**b).count() as u64
        }
    }

    fn writes(line: u64, aligned: bool) -> impl Strategy<Value = Vec<(u64, u64, bool)>> {
        let step = if aligned { SECTOR } else { 1 };
        let n = line / step;
        proptest::collection::vec(
            (0..n, 1..=n, proptest::bool::weighted(0.15)).prop_map(move |(a, len, fresh)| {
                let start = a * step;
                let bytes = (len * step).min(line - start);
                (start, bytes, fresh)
            }),
            1..12,
        )
    }

    fn check(line: u64, ws: &[(u64, u64, bool)], probes: &[(u64, u64)], aligned: bool) {
        let mut fast = Sectors::new(line, 1);
        let mut simple = Bytes {
            written: vec![false; line as usize],
        };
        let mut first = true;
        for &(start, bytes, fresh) in ws {
            fast.written(0, start, bytes, fresh || first);
            simple.write(start, bytes, fresh || first);
            first = false;
            // Never more than was written: a line the mask calls whole was written whole, and
            // a range it holds was written.
            if fast.whole(0) {
                assert!(simple.all(0, line), "whole without every byte written");
            }
            for &(s, b) in probes {
                let (s, b) = (s % line, b.max(1));
                let b = b.min(line - s);
                if fast.holds(0, s, b) {
                    assert!(simple.all(s, b), "holds {s}+{b} not all written");
                }
                // Writes of whole granules (512 B each on lines up to 32 KiB): exactly what was
                // written.
                if aligned && line <= 64 * SECTOR {
                    assert_eq!(fast.holds(0, s, b), simple.all(s, b));
                }
            }
            assert!(fast.missing_bytes(0) >= simple.missing());
            if aligned && line <= 64 * SECTOR {
                assert_eq!(fast.whole(0), simple.all(0, line));
                assert_eq!(fast.missing_bytes(0), simple.missing());
            }
        }
        fast.fill(0);
        assert!(fast.whole(0) && fast.missing_bytes(0) == 0);
    }

    proptest! {
        #[test]
        fn the_mask_holds_no_more_than_was_written(
            (line, aligned, ws) in (
                prop_oneof![Just(2048u64), Just(4096), Just(8192), Just(16384), Just(32768), Just(65536), Just(66560)],
                any::<bool>(),
            ).prop_flat_map(|(line, aligned)| (Just(line), Just(aligned), writes(line, aligned))),
            probes in proptest::collection::vec((0u64..70_000, 0u64..70_000), 4),
        ) {
            check(line, &ws, &probes, aligned);
        }
    }

    #[test]
    fn a_short_last_granule_counts_its_own_bytes() {
        // 130 sectors: three per bit, 44 bits, the last one of a single sector.
        let mut s = Sectors::new(130 * 512, 1);
        assert_eq!((s.granule, s.granules), (1536, 44));
        s.written(0, 0, 43 * 1536, true);
        assert_eq!(s.missing_bytes(0), 512);
        s.written(0, 43 * 1536, 512, false);
        assert!(s.whole(0));
        // A write of part of a granule leaves it not held.
        s.written(0, 0, 512, true);
        assert_eq!(s.missing_bytes(0), 130 * 512);
        assert!(!s.holds(0, 0, 512));
    }
}
