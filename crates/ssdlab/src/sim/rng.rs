//! Seeded, named, portable random streams.
//!
//! Each component draws from its own stream, derived from the run seed and a stream name, so
//! adding a draw in one component never shifts the numbers another component sees.

use rand_core::{RngCore, SeedableRng};
pub use rand_xoshiro::Xoshiro256PlusPlus;

pub struct Rng(Xoshiro256PlusPlus);

/// FNV-1a, used only to turn a stream name into 64 bits (portable, no dependency on std hashers).
fn fnv1a(name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl Rng {
    /// The stream called `name` of the run seeded with `seed`.
    pub fn stream(seed: u64, name: &str) -> Self {
        Rng(Xoshiro256PlusPlus::seed_from_u64(seed ^ fnv1a(name)))
    }

    /// The generator's state, to save (a drive state, docs/state.md) and restore with
    /// [`Rng::from_state`]: the stream then goes on as if never stopped.
    pub fn state(&self) -> [u64; 4] {
        // rand_xoshiro publishes its state only through serde.
        let v = serde_json::to_value(&self.0).expect("a generator serialises");
        let mut s = [0u64; 4];
        for (i, w) in s.iter_mut().enumerate() {
            *w = v["s"][i].as_u64().expect("xoshiro256's state is four u64");
        }
        s
    }

    /// The stream at a state [`Rng::state`] returned (an all-zero state, which xoshiro never
    /// reaches, becomes a fixed nonzero one).
    pub fn from_state(s: [u64; 4]) -> Rng {
        let mut seed = [0u8; 32];
        for (i, w) in s.iter().enumerate() {
            seed[i * 8..(i + 1) * 8].copy_from_slice(&w.to_le_bytes());
        }
        Rng(Xoshiro256PlusPlus::from_seed(seed))
    }

    /// The underlying generator, for samplers from `rand_distr`.
    pub fn core(&mut self) -> &mut Xoshiro256PlusPlus {
        &mut self.0
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in [0, n) without modulo bias (Lemire's multiply-shift with rejection).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        let mut x = self.next_u64();
        let mut m = (x as u128) * (n as u128);
        let mut low = m as u64;
        if low < n {
            let threshold = n.wrapping_neg() % n;
            while low < threshold {
                x = self.next_u64();
                m = (x as u128) * (n as u128);
                low = m as u64;
            }
        }
        (m >> 64) as u64
    }

    /// Uniform in [0, 1).
    #[inline]
    pub fn unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Exponentially distributed with the given mean.
    pub fn exp(&mut self, mean: f64) -> f64 {
        let u = 1.0 - self.unit_f64(); // (0, 1]
        -mean * u.ln()
    }
}

/// A keyed pseudo-random permutation of `0..n` that costs no memory: an invertible mixer on
/// the smallest power of two that holds `n` (multiplications by odd numbers, right xor-shifts
/// and additions, each a bijection modulo that power), applied again while the value falls
/// outside `0..n` ("cycle walking", which keeps it a bijection on `0..n`; fewer than two
/// rounds on average, as the power is below 2n). For scattering a large table where a
/// shuffled copy would cost gigabytes, not for cryptography. Its inverse costs as little
/// ([`Permutation::inverse_at`]).
#[derive(Clone, Debug)]
pub struct Permutation {
    n: u64,
    mask: u64,
    shift: u32,
    mul: [u64; 3],
    add: [u64; 3],
    /// The inverses of `mul` modulo 2^64 (so modulo the power of two, by masking).
    mul_inv: [u64; 3],
}

/// The inverse of odd `m` modulo 2^64: Newton's iteration doubles the correct low bits each
/// step, and `m` itself is right in the low 3 bits (m·m ≡ 1 mod 8 for odd m).
fn odd_inverse(m: u64) -> u64 {
    let mut inv = m;
    for _ in 0..5 {
        inv = inv.wrapping_mul(2u64.wrapping_sub(m.wrapping_mul(inv)));
    }
    inv
}

impl Permutation {
    pub fn new(n: u64, rng: &mut Rng) -> Permutation {
        let bits = 64 - n.saturating_sub(1).leading_zeros();
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let mut draw = || rng.next_u64() & mask;
        let mul = [draw() | 1, draw() | 1, draw() | 1];
        Permutation {
            n,
            mask,
            shift: bits.div_ceil(2).max(1),
            mul,
            add: [draw(), draw(), draw()],
            mul_inv: mul.map(odd_inverse),
        }
    }

    /// The keys that make this permutation of its `n` values (to save it): its multipliers
    /// and addends.
    pub fn keys(&self) -> ([u64; 3], [u64; 3]) {
        (self.mul, self.add)
    }

    /// The permutation of `n` values with keys [`Permutation::keys`] gave; None when they
    /// cannot be one's (a multiplier even or wider than `n`'s bits), so that any keys read
    /// from a file make a bijection or nothing.
    pub fn from_keys(n: u64, mul: [u64; 3], add: [u64; 3]) -> Option<Permutation> {
        let bits = 64 - n.saturating_sub(1).leading_zeros();
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        if mul.iter().chain(&add).any(|&k| k & !mask != 0) || mul.iter().any(|&m| m & 1 == 0) {
            return None;
        }
        Some(Permutation {
            n,
            mask,
            shift: bits.div_ceil(2).max(1),
            mul,
            add,
            mul_inv: mul.map(odd_inverse),
        })
    }

    #[inline]
    fn mix(&self, mut x: u64) -> u64 {
        for (m, a) in self.mul.iter().zip(&self.add) {
            x = x.wrapping_mul(*m) & self.mask;
            x ^= x >> self.shift;
            x = x.wrapping_add(*a) & self.mask;
        }
        x
    }

    /// The image of `x` (below `n`).
    #[inline]
    pub fn at(&self, x: u64) -> u64 {
        debug_assert!(x < self.n);
        let mut y = self.mix(x);
        while y >= self.n {
            y = self.mix(y);
        }
        y
    }

    /// `mix` undone, step by step in reverse; the xor-shift is its own inverse because the
    /// shift is at least half the bits (the shifted part shifted again is zero).
    #[inline]
    fn unmix(&self, mut y: u64) -> u64 {
        for (inv, a) in self.mul_inv.iter().zip(&self.add).rev() {
            y = y.wrapping_sub(*a) & self.mask;
            y ^= y >> self.shift;
            y = y.wrapping_mul(*inv) & self.mask;
        }
        y
    }

    /// The `x` whose image is `y` (below `n`): the cycle walked backwards, as the values
    /// between `x` and `y` on it all lie at or past `n`.
    #[inline]
    pub fn inverse_at(&self, y: u64) -> u64 {
        debug_assert!(y < self.n);
        let mut x = self.unmix(y);
        while x >= self.n {
            x = self.unmix(x);
        }
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a: Vec<u64> = (0..4)
            .map(|_| 0)
            .scan(Rng::stream(7, "x"), |r, _| Some(r.next_u64()))
            .collect();
        let b: Vec<u64> = (0..4)
            .map(|_| 0)
            .scan(Rng::stream(7, "x"), |r, _| Some(r.next_u64()))
            .collect();
        let c: Vec<u64> = (0..4)
            .map(|_| 0)
            .scan(Rng::stream(7, "y"), |r, _| Some(r.next_u64()))
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn a_stream_restored_from_its_state_goes_on_as_before() {
        let mut a = Rng::stream(5, "x");
        a.next_u64();
        let mut b = Rng::from_state(a.state());
        for _ in 0..10 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }

    #[test]
    fn below_stays_in_range() {
        let mut r = Rng::stream(1, "t");
        for n in [1u64, 2, 3, 1000, u64::MAX] {
            for _ in 0..1000 {
                assert!(r.below(n) < n);
            }
        }
    }

    #[test]
    fn a_permutation_hits_every_value_once() {
        for n in [1u64, 2, 3, 5, 64, 65, 1000, 4097] {
            let p = Permutation::new(n, &mut Rng::stream(n, "perm"));
            let mut seen = vec![false; n as usize];
            for x in 0..n {
                let y = p.at(x);
                assert!(y < n && !seen[y as usize], "n = {n}: {x} -> {y}");
                seen[y as usize] = true;
            }
        }
    }

    #[test]
    fn a_permutation_from_its_keys_is_the_same_and_bad_keys_make_none() {
        let p = Permutation::new(1000, &mut Rng::stream(3, "perm"));
        let (mul, add) = p.keys();
        let q = Permutation::from_keys(1000, mul, add).unwrap();
        assert!((0..1000).all(|x| p.at(x) == q.at(x)));
        assert!(Permutation::from_keys(1000, [2, 1, 1], add).is_none());
        assert!(Permutation::from_keys(1000, [1 << 20 | 1, 1, 1], add).is_none());
    }

    #[test]
    fn the_inverse_undoes_the_permutation() {
        for n in [
            1u64,
            2,
            3,
            5,
            64,
            65,
            1000,
            4097,
            1 << 20,
            (1 << 33) + 7,
            u64::MAX,
        ] {
            let p = Permutation::new(n, &mut Rng::stream(n, "perm"));
            let xs = [0, 1, n / 3, n / 2, n - 1];
            for x in (0..n.min(5000)).chain(xs).filter(|&x| x < n) {
                assert_eq!(p.inverse_at(p.at(x)), x, "n = {n}, x = {x}");
            }
        }
    }

    #[test]
    fn a_permutation_scatters_neighbours() {
        // Consecutive inputs land in different sixteenths of the range about as often as
        // independent draws would (15/16), not in runs.
        let n = 1_000_003u64;
        let p = Permutation::new(n, &mut Rng::stream(3, "perm"));
        let part = |x: u64| p.at(x) * 16 / n;
        let apart = (0..10_000u64).filter(|&x| part(x) != part(x + 1)).count();
        assert!(
            apart > 9_000,
            "{apart} of 10000 neighbours in different sixteenths"
        );
    }
}
