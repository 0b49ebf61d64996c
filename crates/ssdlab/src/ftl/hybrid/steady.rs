//! Steady-state preconditioning of the block-mapped FTLs (`precondition.fill = "steady-state"`
//! with `ftl.kind = "block" | "bast" | "fast"`): the drive as uniform random overwrites of
//! single pages leave it once its merge cost per host page has stopped changing.
//!
//! - **block**: in closed form. After a sequential fill every logical block's data block holds
//!   all its pages at their offsets with its write pointer at the end, so every later write is
//!   behind the pointer and copies the block: the new block again holds every page in order.
//!   The filled drive is therefore already in the state overwrites keep it in (only which
//!   physical block holds which logical block, and the erase counts, move), and each overwrite
//!   costs one full merge: n − 1 copies and the program, a WAF of exactly n (pages per block).
//! - **bast**, **fast**: the state depends on which logical blocks own logs and how full the
//!   logs are, which no short formula gives; so the FTL's own functional write path
//!   ([`Hybrid::write`], untimed, no events) fills the drive and overwrites it at random, in
//!   windows of 1/8 of its logical pages, until the WAF of the last 4 windows agrees with the 4
//!   before them within 1 % (from 2 × the logical pages on, at most 16 ×; the same rule as the
//!   page FTL's, `ftl/steady.rs`). Windows before the first merge (the logs still taking pages
//!   without merging) are not counted. A block-mapped FTL keeps no GC threshold that would make
//!   the planes' reclamation bunch up, and the drives these FTLs serve are small, so the whole
//!   drive is overwritten rather than a model plane copied.
//!
//! With `[reliability]` every write of the fill and the overwrites is the checked one
//! ([`Hybrid::write_checked`]): the merges' erases count on their blocks, a block that reaches
//! its P/E limit retires, factory bad blocks are never allocated, and overwrites that would wear
//! the drive out into read-only mode end in a one-line error naming `reliability.pe_limit`. The
//! blocks then carry the wear of the overwrites the steady state stands for (`overwrite` × the
//! logical pages). Block mapping's steady state is its filled drive (no overwrite: `overwrite`
//! is 0), so its blocks carry the fill's wear, which is none: a sequential fill programs every
//! page in place without an erase.

use super::super::steady::{converge, tail_mean, WINDOW_FRACTION};
use super::{Hybrid, MergeCounts, Scheme, NONE};
use crate::error::{says, Error, Invalid, Result};
use crate::ftl::SteadyState;
use crate::sim::Rng;

/// What steady-state preconditioning of a block-mapped FTL reached.
#[derive(Clone, Debug, PartialEq)]
pub struct HybridSteadyState {
    /// The WAF, convergence and overwrites, as for the page FTL.
    pub steady: SteadyState,
    /// Merges (switch, partial and full) per host page in the windows the WAF was taken from.
    pub merges_per_host_page: f64,
}

impl Hybrid {
    /// Bring this fresh FTL to the steady state of uniform random overwrites of single pages
    /// (see the module's text). Asks `keep_going` every 65,536 writes; false stops it with
    /// [`Error::Interrupted`]. The counters start again at zero and every page counts as
    /// programmed, as after [`Hybrid::precondition`].
    pub fn reach_steady_state(
        &mut self,
        seed: u64,
        keep_going: &mut dyn FnMut() -> bool,
    ) -> Result<HybridSteadyState> {
        if self.counts != MergeCounts::default() || self.data.iter().any(|&d| d != NONE) {
            return Err(Error::bad_device(Invalid::unnamed(
                "steady-state preconditioning",
                says("it needs a fresh block-mapped FTL"),
            )));
        }
        let pages = self.l2p.len() as u64;
        let mut ops = Vec::new();
        for lpn in 0..pages {
            self.write_or_wear_out(lpn, &mut ops)?;
        }
        let reached = if self.scheme == Scheme::Block {
            // Every logical block is whole (the map covers whole blocks): each overwrite
            // copies the other n − 1 pages.
            HybridSteadyState {
                steady: SteadyState {
                    waf: self.ppb as f64,
                    converged: true,
                    overwrite: 0.0,
                },
                merges_per_host_page: 1.0,
            }
        } else {
            self.overwrite_to_steady_state(seed, keep_going)?
        };
        self.programmed.iter_mut().for_each(|p| *p = true);
        self.counts = MergeCounts::default();
        Ok(reached)
    }

    /// One untimed write of the steady state (`ops` cleared after it). With `[reliability]`
    /// it is the checked write, and a drive it finds worn out (read-only, or a plane without a
    /// free block) ends the preconditioning with a one-line error naming the field to change.
    fn write_or_wear_out(&mut self, lpn: u64, ops: &mut Vec<super::NandOp>) -> Result<()> {
        let r = if self.wear.is_some() {
            self.write_checked(lpn, ops)?
        } else {
            self.write(lpn, ops).map(Ok)?
        };
        ops.clear();
        r.map_err(|refusal| {
            let w = self.wear().expect("a refusal comes with [reliability]");
            Error::bad_config(Invalid::got(
                "",
                "precondition.fill",
                "\"steady-state\"",
                format!(
                    "a fill the drive survives: the overwrites that reach the steady state wear \
                     it out ({refusal:?}: {} blocks retired at reliability.pe_limit = {}, {} bad \
                     from the factory); raise reliability.pe_limit or lower \
                     reliability.factory_bad_block_rate, or precondition with \"sequential\" \
                     and precondition.random_overwrite",
                    w.retired_blocks, w.pe_limit, w.factory_bad_blocks
                ),
            ))
        })
    }

    /// Overwrite the filled FTL at random, window by window, until its WAF is steady.
    fn overwrite_to_steady_state(
        &mut self,
        seed: u64,
        keep_going: &mut dyn FnMut() -> bool,
    ) -> Result<HybridSteadyState> {
        let n = self.l2p.len() as u64;
        let window = n.div_ceil(WINDOW_FRACTION);
        let mut rng = Rng::stream(seed, "precondition.steady_state");
        let mut ops = Vec::new();
        let mut written = 0u64;
        let mut merge_rates: Vec<f64> = Vec::new();
        let (wafs, converged, windows) = converge(|| {
            let before = self.counts.clone();
            for _ in 0..window {
                written += 1;
                if written.is_multiple_of(1 << 16) && !keep_going() {
                    return Err(Error::Interrupted);
                }
                self.write_or_wear_out(rng.below(n), &mut ops)?;
            }
            let merges = |c: &MergeCounts| c.switch + c.partial + c.full;
            if merges(&self.counts) == 0 {
                // The logs still take pages without merging: WAF 1, but not steady.
                return Ok(None);
            }
            let host = (self.counts.host_pages_written - before.host_pages_written) as f64;
            let copied = (self.counts.pages_copied - before.pages_copied) as f64;
            merge_rates.push((merges(&self.counts) - merges(&before)) as f64 / host);
            Ok(Some((host + copied) / host))
        })?;
        Ok(HybridSteadyState {
            steady: SteadyState {
                // No window merged: every overwrite fitted the logs.
                waf: tail_mean(&wafs).unwrap_or(1.0),
                converged,
                overwrite: (windows * window) as f64 / n as f64,
            },
            merges_per_host_page: tail_mean(&merge_rates).unwrap_or(0.0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SsdConfig;
    use crate::media::nand::Geometry;

    /// 2 planes of 48 blocks of 16 pages, 64 logical blocks (32 per plane), `logs` log blocks
    /// per plane.
    fn ftl(kind: &str, logs: Option<u32>) -> Hybrid {
        let mut ov = vec![
            "nand.channels=1".to_string(),
            "nand.dies_per_package=1".into(),
            "nand.planes_per_die=2".into(),
            "nand.blocks_per_plane=48".into(),
            "nand.pages_per_block=16".into(),
            "ftl.map_unit=\"16KiB\"".into(),
            "ftl.over_provisioning=0.33334".into(),
            "precondition.fill=\"none\"".into(),
            "precondition.random_overwrite=0.0".into(),
            format!("ftl.kind=\"{kind}\""),
        ];
        if let Some(n) = logs {
            ov.push(format!("ftl.log_blocks={n}"));
        }
        let cfg = SsdConfig::resolve("small-tlc", &ov).unwrap();
        let geo = Geometry::from_config(&cfg);
        let h = Hybrid::new(&geo, cfg.ftl.kind, cfg.logical_units(), logs.unwrap_or(0));
        assert_eq!(h.data.len(), 64, "logical blocks");
        h
    }

    /// WAF and merges per host page of `count` uniform random overwrites from the FTL's state.
    fn overwrite(h: &mut Hybrid, count: u64, seed: u64) -> (f64, f64) {
        let before = h.counts.clone();
        let mut rng = Rng::stream(seed, "test");
        let n = h.l2p.len() as u64;
        let mut ops = Vec::new();
        for _ in 0..count {
            h.write(rng.below(n), &mut ops).unwrap();
            ops.clear();
        }
        let c = &h.counts;
        let host = (c.host_pages_written - before.host_pages_written) as f64;
        let merges =
            (c.switch + c.partial + c.full - before.switch - before.partial - before.full) as f64;
        (
            (host + (c.pages_copied - before.pages_copied) as f64) / host,
            merges / host,
        )
    }

    /// By hand: block mapping's filled drive is its steady state, and every overwrite copies
    /// the other 15 pages of its block: WAF 16 and one merge per host page, exactly, before and
    /// after any number of overwrites.
    #[test]
    fn block_mapping_is_steady_once_filled_at_a_waf_of_its_pages_per_block() {
        let mut h = ftl("block", None);
        let s = h.reach_steady_state(1, &mut || true).unwrap();
        assert_eq!(
            s,
            HybridSteadyState {
                steady: SteadyState {
                    waf: 16.0,
                    converged: true,
                    overwrite: 0.0
                },
                merges_per_host_page: 1.0
            }
        );
        assert_eq!(h.counts, MergeCounts::default());
        assert!(h.programmed.iter().all(|&p| p));
        let n = h.l2p.len() as u64;
        assert_eq!(overwrite(&mut h, n / 8, 2), (16.0, 1.0));
        assert_eq!(overwrite(&mut h, 3 * n, 3), (16.0, 1.0));
        h.check().unwrap();
        // A drive overwritten to any depth writes the same.
        let mut deep = ftl("block", None);
        deep.precondition(true, 5.0, 4).unwrap();
        assert_eq!(overwrite(&mut deep, n, 5), (16.0, 1.0));
    }

    /// The oracle: a drive filled and overwritten for 8 × its pages is in the steady state;
    /// the preconditioned drive must write at its WAF and merge rate from the first window on,
    /// with every log block in use (a fill leaves them all free).
    #[test]
    fn log_block_ftls_write_at_the_rate_of_a_drive_overwritten_to_steady_state() {
        for (kind, logs) in [("bast", 4), ("fast", 4), ("bast", 12), ("fast", 12)] {
            let mut overwritten = ftl(kind, Some(logs));
            overwritten.precondition(true, 8.0, 3).unwrap();
            let n = overwritten.l2p.len() as u64;
            let (waf, rate) = overwrite(&mut overwritten, 8 * n, 4);

            let mut steady = ftl(kind, Some(logs));
            let s = steady.reach_steady_state(3, &mut || true).unwrap();
            steady.check().unwrap();
            assert!((0..n).all(|lpn| steady.lookup(lpn).is_some()));
            // Every plane's logs are in use, as overwrites leave them (a fill leaves none).
            for ps in &steady.planes_state {
                let in_use = match steady.scheme {
                    Scheme::Bast => ps.owners.len() as u32,
                    _ => ps.rw.len() as u32 + 1,
                };
                assert_eq!(in_use, logs, "{kind} {logs}");
            }
            let first = overwrite(&mut steady, n / 4, 4);
            let later = overwrite(&mut steady, 8 * n, 5);
            let near = |x: f64, of: f64, tol: f64| (x - of).abs() <= tol * of;
            let what = format!(
                "{kind} {logs}: reference WAF {waf:.3} merges {rate:.4}; reached {s:?}; \
                 first window {first:?}, later {later:?}"
            );
            assert!(
                near(s.steady.waf, waf, 0.05) && near(s.merges_per_host_page, rate, 0.05),
                "{what}"
            );
            assert!(
                near(first.0, waf, 0.10) && near(later.0, waf, 0.05),
                "{what}"
            );
            assert!(
                near(first.1, rate, 0.10) && near(later.1, rate, 0.05),
                "{what}"
            );
        }
    }

    /// `ftl(kind, logs)` with `[reliability]`: blocks retire at `pe_limit` erases, and each is
    /// bad from the factory with probability `bad_rate` (drawn from `seed`).
    fn worn(kind: &str, logs: Option<u32>, pe_limit: u32, bad_rate: f64, seed: u64) -> Hybrid {
        let mut h = ftl(kind, logs);
        h.start_wear(pe_limit, bad_rate, seed);
        h
    }

    /// Mean erase count of the blocks that are not bad.
    fn mean_erases(h: &Hybrid) -> f64 {
        let bad = &h.wear.as_ref().unwrap().bad;
        let (n, sum) = (h.erase_count.iter().zip(bad))
            .filter(|(_, &b)| !b)
            .fold((0u64, 0u64), |(n, s), (&e, _)| (n + 1, s + e as u64));
        sum as f64 / n as f64
    }

    /// With `[reliability]` the steady state's blocks carry the wear of the overwrites it
    /// stands for: their mean erase count is that of the same drive filled and overwritten
    /// through its checked writes as often as the steady state says (within 5 %), and SMART's
    /// Percentage Used shows it. Block mapping's steady state is its fill: no erase, and each
    /// later overwrite erases one block.
    #[test]
    fn the_steady_state_ages_the_blocks_as_the_overwrites_it_stands_for() {
        for (kind, logs) in [("bast", 4), ("fast", 4), ("fast", 12)] {
            let mut steady = worn(kind, Some(logs), 100_000, 0.0, 3);
            let s = steady.reach_steady_state(3, &mut || true).unwrap();
            assert!(s.steady.overwrite >= 2.0, "{kind}: {s:?}");
            let mut overwritten = worn(kind, Some(logs), 100_000, 0.0, 3);
            overwritten
                .precondition(true, s.steady.overwrite, 3)
                .unwrap();
            let (c, o) = (mean_erases(&steady), mean_erases(&overwritten));
            assert!(c > 1.0, "{kind} {logs}: no wear: {c}");
            assert!(
                (c - o).abs() <= 0.05 * o,
                "{kind} {logs}: steady {c:.3}, overwritten {o:.3}"
            );
            let pu = steady.percentage_used().unwrap();
            assert!((pu - c / 100_000.0 * 100.0).abs() < 1e-9, "{kind}: {pu}");
            let w = steady.wear().unwrap();
            assert_eq!((w.retired_blocks, w.factory_bad_blocks), (0, 0));
            assert!(!w.read_only);
            steady.check().unwrap();
            // The same seed, the same wear.
            let mut again = worn(kind, Some(logs), 100_000, 0.0, 3);
            assert_eq!(again.reach_steady_state(3, &mut || true).unwrap(), s);
            assert_eq!(again.erase_count, steady.erase_count);
        }
        let mut block = worn("block", None, 100_000, 0.0, 3);
        block.reach_steady_state(3, &mut || true).unwrap();
        assert_eq!(mean_erases(&block), 0.0);
        let n = block.l2p.len() as u64;
        overwrite(&mut block, n, 4);
        // 48 × 2 blocks, one erase per overwritten page.
        assert_eq!(mean_erases(&block), n as f64 / 96.0);
    }

    /// Factory bad blocks are never written by the steady state's fill and overwrites and the
    /// counts say so; overwrites that would wear the drive out are a one-line error naming
    /// `reliability.pe_limit`, for every block-mapped FTL (block mapping's fill erases nothing,
    /// so a drive without enough good blocks from the factory is refused at once).
    #[test]
    fn the_steady_state_keeps_factory_bad_blocks_and_refuses_to_wear_out() {
        let mut h = worn("fast", Some(4), 100_000, 0.03, 5);
        let factory = h.wear().unwrap().factory_bad_blocks;
        assert!(factory > 0);
        h.reach_steady_state(5, &mut || true).unwrap();
        let bad = h.wear.as_ref().unwrap().bad.clone();
        for (b, &is_bad) in bad.iter().enumerate() {
            if is_bad {
                assert_eq!(h.erase_count[b], 0, "bad block {b} erased");
                assert_eq!(h.write_ptr[b], 0, "bad block {b} written");
            }
        }
        let w = h.wear().unwrap();
        assert_eq!(w.factory_bad_blocks, factory);
        assert_eq!(w.good_blocks, h.erase_count.len() as u64 - factory);
        h.check().unwrap();

        for (kind, logs, pe_limit, rate) in [
            ("bast", Some(4), 3, 0.0),
            ("fast", Some(4), 3, 0.0),
            ("block", None, 100_000, 0.5),
        ] {
            let e = worn(kind, logs, pe_limit, rate, 5)
                .reach_steady_state(5, &mut || true)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("reliability.pe_limit")
                    && e.contains("precondition.fill")
                    && !e.contains('\n'),
                "{kind}: {e}"
            );
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_drive_and_a_used_one_is_refused() {
        let mut a = ftl("fast", Some(4));
        let mut b = ftl("fast", Some(4));
        let sa = a.reach_steady_state(7, &mut || true).unwrap();
        assert_eq!(b.reach_steady_state(7, &mut || true).unwrap(), sa);
        assert_eq!(a.l2p, b.l2p);
        assert_eq!(a.erase_count, b.erase_count);
        let e = a.reach_steady_state(7, &mut || true).unwrap_err();
        assert!(e.to_string().contains("fresh"), "{e}");
    }
}
