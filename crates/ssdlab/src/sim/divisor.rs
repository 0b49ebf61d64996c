//! Division by a number fixed when a model is built. Address arithmetic on the event loop
//! divides by geometry sizes (pages per block, planes of a zone's set, a zone's blocks), which
//! are nearly always powers of two: those divide by a shift and a mask, a few cycles, where the
//! CPU's 64-bit division takes tens. Any other divisor still divides exactly.

#[derive(Clone, Copy, Debug)]
pub struct Divisor {
    d: u64,
    /// log2(d) when d is a power of two, else `u32::MAX`.
    shift: u32,
}

impl Divisor {
    /// Division by `d` (at least 1).
    pub fn new(d: u64) -> Divisor {
        assert!(d > 0, "a divisor of 0");
        Divisor {
            d,
            shift: if d.is_power_of_two() {
                d.trailing_zeros()
            } else {
                u32::MAX
            },
        }
    }

    pub fn get(self) -> u64 {
        self.d
    }

    /// `x / d` (the remainder [`Divisor::divmod`] also works out is left unused, and so
    /// is not computed).
    #[inline(always)]
    pub fn quotient(self, x: u64) -> u64 {
        self.divmod(x).0
    }

    /// `(x / d, x % d)`.
    #[inline]
    pub fn divmod(self, x: u64) -> (u64, u64) {
        if self.shift != u32::MAX {
            (x >> self.shift, x & (self.d - 1))
        } else {
            (x / self.d, x % self.d)
        }
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
                prop_assert_eq!(Divisor::new(d).divmod(x), (x / d, x % d));
                prop_assert_eq!(Divisor::new(d).quotient(x), x / d);
            }
        }
    }
}
