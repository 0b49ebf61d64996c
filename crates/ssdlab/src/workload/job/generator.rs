//! The generator of one job instance: its offsets, sizes and operations, from its own random
//! stream, cursor and slice of the region.

use super::{Instances, Job, PlacementSelect, Rw, Skew};
use crate::request::Op;
use crate::sim::Rng;

impl Generator {
    /// A slot of fio's pareto or normal distribution: its rank, scattered over the region as
    /// zipf's ranks are.
    #[cold]
    fn skewed_slot(&mut self, job: &Job, slots: u64) -> u64 {
        let all = (job.region_len / job.min_bs).max(1);
        let rank = self.skew_rank(all);
        ((rank as u128 * self.zipf_mult as u128) % all as u128) as u64 % slots
    }

    /// A rank in `0..all` of fio's pareto or normal distribution (before scattering).
    pub(super) fn skew_rank(&mut self, all: u64) -> u64 {
        let skew = match &self.skew {
            Some(SkewState::Pareto { pow }) => SkewState::Pareto { pow: *pow },
            Some(SkewState::Normal { width }) => SkewState::Normal { width: *width },
            // Zipf draws its own slots and uniform needs no rank: neither comes here.
            _ => return self.rng.below(all),
        };
        match skew {
            SkewState::Zipf(_) => self.rng.below(all),
            SkewState::Pareto { pow } => ((all - 1) as f64 * self.rng.unit_f64().powf(pow)) as u64,
            SkewState::Normal { width } => {
                // fio's gauss_next: the mean of 12 uniform draws in [0, all], rounded up.
                const ITERS: u64 = 12;
                let sum: u64 = (0..ITERS).map(|_| self.rng.below(all + 1)).sum();
                let mut rank = sum.div_ceil(ITERS);
                if width > 0 {
                    let mut dev = self.rng.below(width) as i64 - (width / 2) as i64;
                    while rank as i64 + dev >= all as i64 || (rank as i64 + dev) < 0 {
                        dev /= 2;
                    }
                    rank = (rank as i64 + dev) as u64;
                }
                rank.min(all - 1)
            }
        }
    }
}

/// The generator of one job instance: its own random stream, cursor and slice of the region.
pub struct Generator {
    rng: Rng,
    /// `placement_ids`: the next one's index (round robin), or the stream random picks come
    /// from (kept apart from `rng`, so offsets are drawn as without placement).
    placement_next: usize,
    placement_rng: Rng,
    /// Where the instance's previous request ended (`percentage_random`'s sequential share).
    last_end: u64,
    seq_cursor: u64,
    slice_start: u64,
    slice_len: u64,
    /// A skewed distribution's state (None: uniform). One option for all of them, so that
    /// the uniform path tests one thing, as it did with zipf alone.
    skew: Option<SkewState>,
    zipf_mult: u64,
}

#[derive(Clone, Debug)]
enum SkewState {
    Zipf(rand_distr::Zipf<f64>),
    /// fio's pareto: the exponent ln h / ln(1 − h).
    Pareto {
        pow: f64,
    },
    /// fio's normal: the deviation's width in slots.
    Normal {
        width: u64,
    },
}

impl Generator {
    pub fn new(job: &Job, instance: u32, seed: u64) -> Generator {
        let n = job.spec.numjobs as u64;
        let align = job.min_bs;
        let (slice_start, slice_len) =
            if sequential(job.spec.rw) && n > 1 && job.spec.instances == Instances::Slices {
                let per = (job.region_len / n) / align * align;
                let per = per.max(align);
                (
                    job.region_start + (instance as u64 * per) % job.region_len,
                    per,
                )
            } else {
                (job.region_start, job.region_len)
            };
        let slots = (job.region_len / align).max(1);
        let zipf = job
            .zipf_theta
            .map(|t| SkewState::Zipf(rand_distr::Zipf::new(slots as f64, t).expect("valid zipf")));
        let skew = zipf.or(job.spec.distribution.skew().map(|s| match s {
            Skew::Pareto { h } => SkewState::Pareto {
                pow: h.ln() / (1.0 - h).ln(),
            },
            // fio: ceil(slots × dev / 100), at most half the slots.
            Skew::Normal { dev } => SkewState::Normal {
                width: ((slots as f64 * dev / 100.0).ceil() as u64).min(slots / 2),
            },
        }));
        Generator {
            last_end: job.region_start,
            rng: Rng::stream(seed, &format!("job.{instance}")),
            placement_next: instance as usize,
            placement_rng: Rng::stream(seed, &format!("job.{instance}.placement")),
            seq_cursor: 0,
            slice_start,
            slice_len,
            skew,
            zipf_mult: coprime_multiplier(slots),
        }
    }

    /// The stream (placement identifier) of this instance's next request: `stream`, or the
    /// next of `placement_ids` as `placement_select` says.
    #[inline]
    pub fn placement(&mut self, job: &Job) -> u8 {
        let ids = &job.spec.placement_ids;
        if ids.is_empty() {
            return job.spec.stream as u8;
        }
        let i = match job.spec.placement_select {
            PlacementSelect::RoundRobin => {
                let i = self.placement_next % ids.len();
                self.placement_next = i + 1;
                i
            }
            PlacementSelect::Random => self.placement_rng.below(ids.len() as u64) as usize,
        };
        ids[i] as u8
    }

    /// Next (op, offset, length) of this instance.
    pub fn next(&mut self, job: &Job) -> (Op, u64, u64) {
        let op = match job.spec.rw {
            Rw::Read | Rw::Randread => Op::Read,
            Rw::Write | Rw::Randwrite => Op::Write,
            Rw::Trim | Rw::Randtrim => Op::Trim,
            Rw::Randrw | Rw::Rw => {
                if self.rng.below(100) < job.spec.rwmixread as u64 {
                    Op::Read
                } else {
                    Op::Write
                }
            }
        };
        let len = if job.sizes.len() == 1 {
            job.sizes[0].0
        } else {
            let mut x = self.rng.below(job.size_weight_total as u64) as u32;
            let mut pick = job.sizes[0].0;
            for &(b, w) in &job.sizes {
                if x < w {
                    pick = b;
                    break;
                }
                x -= w;
            }
            pick
        };
        let offset = if sequential(job.spec.rw) {
            if self.seq_cursor + len > self.slice_len {
                self.seq_cursor = 0;
            }
            let off = self.slice_start + self.seq_cursor;
            self.seq_cursor += len;
            // A slice may end past the region (last instance); wrap to the region start.
            if off + len > job.region_start + job.region_len {
                job.region_start
            } else {
                off
            }
        } else if job
            .spec
            .percentage_random
            .is_some_and(|p| self.rng.below(100) >= p as u64)
        {
            // fio's percentage_random: this one continues after the previous request.
            if self.last_end + len > job.region_start + job.region_len {
                job.region_start
            } else {
                self.last_end
            }
        } else if !job.zones.is_empty() {
            // fio's zoned distributions: a zone by its share of accesses, uniform inside it.
            let x = self.rng.below(100) as u32;
            let &(_, start, zlen) = job
                .zones
                .iter()
                .find(|z| x < z.0)
                .unwrap_or(&job.zones[job.zones.len() - 1]);
            let align = job.min_bs;
            start + self.rng.below((zlen - len) / align + 1) * align
        } else {
            let align = job.min_bs;
            let slots = ((job.region_len - len) / align) + 1;
            let slot = match &self.skew {
                Some(SkewState::Zipf(z)) => {
                    use rand_distr::Distribution;
                    // Ranks are 1-based; scatter them over the region (as fio does) with a
                    // bijective permutation, so hot blocks are not all at the start.
                    let rank = z.sample(self.rng.core()) as u64 - 1;
                    let all = (job.region_len / align).max(1);
                    ((rank as u128 * self.zipf_mult as u128) % all as u128) as u64 % slots
                }
                Some(_) => self.skewed_slot(job, slots),
                None => self.rng.below(slots),
            };
            job.region_start + slot * align
        };
        if job.spec.percentage_random.is_some() {
            self.last_end = offset + len;
        }
        (op, offset, len)
    }
}

fn sequential(rw: Rw) -> bool {
    matches!(rw, Rw::Read | Rw::Write | Rw::Rw | Rw::Trim)
}

/// A multiplier coprime with `n`, near n × golden ratio, so `rank × m mod n` is a permutation.
fn coprime_multiplier(n: u64) -> u64 {
    fn gcd(mut a: u64, mut b: u64) -> u64 {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    }
    if n <= 2 {
        return 1;
    }
    let mut m = ((n as f64 * 0.618_033_988_75) as u64).max(1);
    while gcd(m, n) != 1 {
        m += 1;
    }
    m
}
