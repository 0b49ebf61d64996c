//! NAND read errors: the raw bit-error rate of a block from its wear and the data's age, what
//! the ECC makes of it, and how many read-retry steps a read needs (or that it cannot be
//! decoded at all). The parameters and their sources are in `config::reliability`.
//!
//! Bit errors in a codeword of `n` bits at raw bit-error rate `p` are counted as Poisson with
//! mean `λ = n·p` (the binomial's limit for small `p`); a codeword decodes when it holds at most
//! `t` errors. A map unit of `k` codewords reads cleanly when all of them decode. Each retry
//! step senses again with re-tuned read voltages, which scales `p` by the retry factor; a read
//! still failing after the last step is uncorrectable.

use crate::config::{CellType, ReliabilityConfig};
use crate::sim::Rng;

/// What became of one map unit's read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadOutcome {
    /// Decoded after this many read-retry steps (0: at the first sensing).
    Decoded { retries: u32 },
    /// Still failing after every retry step.
    Uncorrectable,
}

pub struct ErrorModel {
    pe_limit: f64,
    rber_fresh: f64,
    rber_wear: f64,
    wear_exponent: f64,
    /// What the data's age adds on a fresh block.
    rber_retention: f64,
    codeword_bits: f64,
    codewords_per_unit: f64,
    correctable: u32,
    /// ln((t + 1)!), for the first term of the Poisson tail.
    ln_fact_t1: f64,
    retry_max: u32,
    retry_factor: f64,
    rng: Rng,
}

impl ErrorModel {
    pub fn new(r: &ReliabilityConfig, cell: CellType, unit_bytes: u64, seed: u64) -> ErrorModel {
        let t = r.ecc_correctable_bits;
        ErrorModel {
            pe_limit: r.pe_limit_for(cell) as f64,
            rber_fresh: r.rber_fresh,
            rber_wear: r.rber_wear,
            wear_exponent: r.wear_exponent,
            rber_retention: r.rber_per_retention_year * r.data_age_days / 365.0,
            codeword_bits: r.ecc_codeword_bytes as f64 * 8.0,
            codewords_per_unit: (unit_bytes / r.ecc_codeword_bytes as u64) as f64,
            correctable: t,
            ln_fact_t1: (1..=t as u64 + 1).map(|i| (i as f64).ln()).sum(),
            retry_max: r.read_retry_max,
            retry_factor: r.read_retry_rber_factor,
            rng: Rng::stream(seed, "nand.errors"),
        }
    }

    /// Raw bit-error rate of a block erased `erase_count` times, for data of the configured age.
    pub fn rber(&self, erase_count: u32) -> f64 {
        let wear = erase_count as f64 / self.pe_limit;
        let p = self.rber_fresh
            + self.rber_wear * wear.powf(self.wear_exponent)
            + self.rber_retention * (1.0 + wear);
        p.min(0.5)
    }

    /// P(a Poisson count of mean `lambda` exceeds `t`).
    pub fn poisson_tail(lambda: f64, t: u32, ln_fact_t1: f64) -> f64 {
        if lambda <= 0.0 {
            return 0.0;
        }
        if lambda <= t as f64 {
            // Sum the tail from t + 1: its terms fall off at once, and tiny tails keep their
            // precision (1 − head would round them to 0).
            let mut term = (-lambda + (t as f64 + 1.0) * lambda.ln() - ln_fact_t1).exp();
            let mut sum = 0.0;
            let mut i = t as f64 + 1.0;
            while term > sum * 1e-17 && term > 0.0 {
                sum += term;
                i += 1.0;
                term *= lambda / i;
            }
            sum.min(1.0)
        } else {
            // The head is the small part: 1 − P(X ≤ t).
            let mut term = (-lambda).exp();
            let mut head = term;
            for i in 1..=t {
                term *= lambda / i as f64;
                head += term;
            }
            (1.0 - head).max(0.0)
        }
    }

    /// P(a map unit does not decode) at raw bit-error rate `p`.
    pub fn unit_failure(&self, p: f64) -> f64 {
        let cw = Self::poisson_tail(p * self.codeword_bits, self.correctable, self.ln_fact_t1);
        // 1 − (1 − cw)^k, without losing a tiny cw to rounding.
        -(self.codewords_per_unit * (-cw).ln_1p()).exp_m1()
    }

    /// The retry steps a read takes before it is given up.
    pub fn retry_max(&self) -> u32 {
        self.retry_max
    }

    /// Read one map unit of a block erased `erase_count` times.
    pub fn read(&mut self, erase_count: u32) -> ReadOutcome {
        let mut p = self.rber(erase_count);
        for retries in 0..=self.retry_max {
            let fail = self.unit_failure(p);
            // A healthy block: no draw needed (and none taken, so enabling the model on a
            // fresh drive changes nothing else that draws from this stream).
            if fail < 1e-18 || self.rng.unit_f64() >= fail {
                return ReadOutcome::Decoded { retries };
            }
            p *= self.retry_factor;
        }
        ReadOutcome::Uncorrectable
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ln_fact(n: u32) -> f64 {
        (1..=n as u64).map(|i| (i as f64).ln()).sum()
    }

    #[test]
    fn the_poisson_tail_matches_hand_worked_values() {
        // P(X > 0) = 1 − e^−λ.
        let p = ErrorModel::poisson_tail(0.5, 0, ln_fact(1));
        assert!((p - (1.0 - (-0.5f64).exp())).abs() < 1e-15, "{p}");
        // P(X > 2) at λ = 1: 1 − e^−1 (1 + 1 + 1/2) = 0.0803013970713942.
        let p = ErrorModel::poisson_tail(1.0, 2, ln_fact(3));
        assert!((p - 0.080_301_397_071_394_2).abs() < 1e-12, "{p}");
        // The same through the other branch (λ > t): P(X > 2) at λ = 4 is
        // 1 − e^−4 (1 + 4 + 8) = 0.7618966944464557.
        let p = ErrorModel::poisson_tail(4.0, 2, ln_fact(3));
        assert!((p - 0.761_896_694_446_455_7).abs() < 1e-12, "{p}");
        // A tiny tail keeps its precision: P(X > 40) at λ = 0.08 ≈ e^−λ λ^41 / 41!.
        let p = ErrorModel::poisson_tail(0.08, 40, ln_fact(41));
        let first = (-0.08f64 + 41.0 * 0.08f64.ln() - ln_fact(41)).exp();
        assert!(p > 0.0 && (p / first - 1.0).abs() < 1e-2, "{p} vs {first}");
    }

    fn model(over: impl FnOnce(&mut ReliabilityConfig)) -> ErrorModel {
        let mut r = ReliabilityConfig::default();
        over(&mut r);
        ErrorModel::new(&r, CellType::Tlc, 4096, 7)
    }

    #[test]
    fn the_error_rate_grows_with_wear_and_age() {
        let m = model(|_| {});
        assert!((m.rber(0) - 1e-8).abs() < 1e-20);
        // At the limit (1000 for TLC): fresh + wear term.
        assert!((m.rber(1000) - (1e-8 + 1e-4)).abs() < 1e-15);
        assert!(m.rber(500) < m.rber(1000));
        let old = model(|r| r.data_age_days = 365.0);
        // A year adds 1e-4 on a fresh block, twice that at the limit.
        assert!((old.rber(0) - (1e-8 + 1e-4)).abs() < 1e-15);
        assert!((old.rber(1000) - (1e-8 + 1e-4 + 2e-4)).abs() < 1e-15);
    }

    #[test]
    fn a_healthy_block_decodes_at_once_without_drawing() {
        let mut m = model(|_| {});
        let before = m.rng.next_u64();
        let mut m = model(|_| {});
        for _ in 0..1000 {
            assert_eq!(m.read(1000), ReadOutcome::Decoded { retries: 0 });
        }
        assert_eq!(
            m.rng.next_u64(),
            before,
            "no random draw for a read that cannot fail"
        );
    }

    #[test]
    fn weak_ecc_needs_retries_and_no_ecc_at_all_fails() {
        // 4 correctable bits per 1 KiB at rber 1e-3 (λ = 8.2): the first sensing fails almost
        // always; halving the rate each step, decoding comes after a few retries.
        let mut m = model(|r| {
            r.ecc_correctable_bits = 4;
            r.rber_fresh = 1e-3;
            r.rber_wear = 0.0;
        });
        let mut retried = 0;
        for _ in 0..1000 {
            match m.read(0) {
                ReadOutcome::Decoded { retries } => retried += u64::from(retries > 0),
                ReadOutcome::Uncorrectable => panic!("8 halvings bring λ to 0.03"),
            }
        }
        assert!(retried > 990, "{retried}");
        // No retries and an error rate far beyond the ECC: every read fails.
        let mut m = model(|r| {
            r.ecc_correctable_bits = 4;
            r.rber_fresh = 1e-2;
            r.read_retry_max = 0;
        });
        assert!((0..100).all(|_| m.read(0) == ReadOutcome::Uncorrectable));
    }

    #[test]
    fn the_same_seed_gives_the_same_outcomes() {
        let run = || {
            let mut m = model(|r| {
                r.ecc_correctable_bits = 8;
                r.rber_fresh = 1e-3;
            });
            (0..500).map(|_| m.read(0)).collect::<Vec<_>>()
        };
        assert_eq!(run(), run());
    }
}
