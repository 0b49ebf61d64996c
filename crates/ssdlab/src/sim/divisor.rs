//! Division by a number fixed when a model is built. Address arithmetic on the event loop
//! divides by geometry sizes (units per page and block, blocks per plane, planes of a die or a
//! zone's set, a zone's blocks), which are nearly always powers of two: those divide by a shift
//! and a mask, a few cycles, where the CPU's division takes tens. Any other divisor still
//! divides exactly.
//!
//! One type for both widths the models index with: `Divisor` (`u64`, byte offsets, logical
//! block addresses) and `Divisor<u32>` (the NAND geometry's flat unit, block and plane
//! indices), so that a 32-bit index keeps the CPU's cheaper 32-bit division when its divisor is
//! not a power of two.

/// An unsigned integer a [`Divisor`] divides: `u32` or `u64`.
pub trait Word: Copy + std::fmt::Debug {
    #[doc(hidden)]
    fn shift_of(self) -> Option<u32>;
    #[doc(hidden)]
    fn is_zero(self) -> bool;
    #[doc(hidden)]
    fn shr(self, s: u32) -> Self;
    #[doc(hidden)]
    fn low_bits(self, d: Self) -> Self;
    #[doc(hidden)]
    fn div(self, d: Self) -> Self;
    #[doc(hidden)]
    fn rem(self, d: Self) -> Self;
}

macro_rules! word {
    ($t:ty) => {
        impl Word for $t {
            #[inline(always)]
            fn shift_of(self) -> Option<u32> {
                self.is_power_of_two().then(|| self.trailing_zeros())
            }
            #[inline(always)]
            fn is_zero(self) -> bool {
                self == 0
            }
            #[inline(always)]
            fn shr(self, s: u32) -> $t {
                self >> s
            }
            /// `self mod d` for `d` a power of two.
            #[inline(always)]
            fn low_bits(self, d: $t) -> $t {
                self & (d - 1)
            }
            #[inline(always)]
            fn div(self, d: $t) -> $t {
                self / d
            }
            #[inline(always)]
            fn rem(self, d: $t) -> $t {
                self % d
            }
        }
    };
}
word!(u32);
word!(u64);

#[derive(Clone, Copy, Debug)]
pub struct Divisor<T: Word = u64> {
    d: T,
    /// log2(d) when d is a power of two, else `u32::MAX`.
    shift: u32,
}

impl<T: Word> Divisor<T> {
    /// Division by `d` (at least 1).
    pub fn new(d: T) -> Divisor<T> {
        assert!(!d.is_zero(), "a divisor of 0");
        Divisor {
            d,
            shift: d.shift_of().unwrap_or(u32::MAX),
        }
    }

    #[inline(always)]
    pub fn get(self) -> T {
        self.d
    }

    /// `x / d`.
    #[inline(always)]
    pub fn quotient(self, x: T) -> T {
        if self.shift != u32::MAX {
            x.shr(self.shift)
        } else {
            x.div(self.d)
        }
    }

    /// `x % d`.
    #[inline(always)]
    pub fn remainder(self, x: T) -> T {
        if self.shift != u32::MAX {
            x.low_bits(self.d)
        } else {
            x.rem(self.d)
        }
    }

    /// `(x / d, x % d)`.
    #[inline(always)]
    pub fn divmod(self, x: T) -> (T, T) {
        (self.quotient(x), self.remainder(x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn divides_as_the_operators_do(d in 1u64..=1 << 40, x: u64, shift in 0u32..40) {
            for d in [d, 1 << shift] {
                let q = Divisor::new(d);
                prop_assert_eq!(q.divmod(x), (x / d, x % d));
                prop_assert_eq!((q.quotient(x), q.remainder(x)), (x / d, x % d));
            }
        }

        #[test]
        fn divides_32_bit_words_as_the_operators_do(d in 1u32.., x: u32, shift in 0u32..32) {
            for d in [d, 1 << shift] {
                let q = Divisor::<u32>::new(d);
                prop_assert_eq!(q.divmod(x), (x / d, x % d));
                prop_assert_eq!((q.quotient(x), q.remainder(x)), (x / d, x % d));
            }
        }
    }

    #[test]
    fn divides_the_edges() {
        for d in [1u32, 2, 3, 4, 7, 64, 96, 512, 1000, u32::MAX] {
            let q = Divisor::<u32>::new(d);
            for x in [0u32, 1, 5, 63, 64, 65, 1023, 4097, u32::MAX] {
                assert_eq!(q.divmod(x), (x / d, x % d), "{x} / {d}");
            }
        }
        let q = Divisor::new(u64::MAX);
        assert_eq!(q.divmod(u64::MAX), (1, 0));
        assert_eq!(
            Divisor::new(1u64 << 63).divmod(u64::MAX),
            (1, (1 << 63) - 1)
        );
    }
}
