//! Synthetic workload models: stand-ins for traces that cannot be shipped, fitted to published
//! statistics. A model draws a stream of [`TraceRecord`]s with a given read fraction, read and
//! write size distributions, and three locality knobs:
//!
//! - **hot set**: a fraction `hot_fraction` of the footprint, in 1 MiB extents scattered over it
//!   by a fixed permutation, receives a share `hot_share` of the random (non-sequential) starts
//!   (extents rather than blocks, so that a sequential run stays hot or cold);
//! - **overwrite ratio**: the fraction of written bytes that rewrite bytes written earlier in the
//!   stream; each random write start aims at written or at unwritten space so that the running
//!   ratio tracks the target (error feedback), which holds while the footprint has unwritten
//!   space left;
//! - **sequential run length**: the mean number of requests in a run, each continuing where the
//!   previous one ended (geometric run lengths).
//!
//! Arrivals are a Poisson process of rate `iops`. The models are not the traces: they match
//! the statistics named in their `source`, and nothing else about them.

use super::bits::{count_range, set_range};
use super::{TraceOp, TraceRecord};
use crate::config::units::parse_bytes;
use crate::error::{got, Error, Invalid, Problem, Result};
use crate::sim::Rng;
use serde::Serialize;

const SECTOR: u64 = 512;
const BLOCK: u64 = 4096;
/// The unit of the hot set.
const EXTENT: u64 = 1 << 20;
/// Random starts tried to land a write on written (or on unwritten) space.
const TRIES: usize = 32;
/// Largest request a geometric size draw gives: 1 MiB.
const MAX_SECTORS: u64 = 2048;

/// A request-size distribution.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum SizeDist {
    /// Shifted geometric over 512-byte sectors (1, 2, 3, … sectors) with this mean in bytes; a
    /// mean below one sector gives one sector.
    Geometric { mean_bytes: f64 },
    /// Sizes in bytes with weights.
    Table { sizes: Vec<(u64, f64)> },
}

impl SizeDist {
    pub fn mean(&self) -> f64 {
        match self {
            SizeDist::Geometric { mean_bytes } => mean_bytes.max(SECTOR as f64),
            SizeDist::Table { sizes } => {
                let w: f64 = sizes.iter().map(|s| s.1).sum();
                sizes.iter().map(|&(b, x)| b as f64 * x).sum::<f64>() / w
            }
        }
    }

    /// This distribution ready to draw from.
    fn sampler(&self) -> Sampler {
        match self {
            SizeDist::Geometric { mean_bytes } => {
                let m = mean_bytes / SECTOR as f64;
                if m <= 1.0 {
                    Sampler::OneSector
                } else {
                    // P(k) = p (1 − p)^(k − 1), mean 1/p.
                    Sampler::Geometric {
                        ln_q: (1.0 - 1.0 / m).ln(),
                    }
                }
            }
            SizeDist::Table { sizes } => Sampler::Table {
                total: sizes.iter().map(|s| s.1).sum(),
                sizes: sizes.clone(),
            },
        }
    }
}

/// A size distribution with what every draw needs computed once (a log per draw is a tenth of
/// a model replay's time).
enum Sampler {
    OneSector,
    /// ln(1 − p) of a shifted geometric with success probability p.
    Geometric {
        ln_q: f64,
    },
    Table {
        sizes: Vec<(u64, f64)>,
        total: f64,
    },
}

impl Sampler {
    fn sample(&self, rng: &mut Rng) -> u64 {
        match self {
            Sampler::OneSector => SECTOR,
            Sampler::Geometric { ln_q } => {
                let u = 1.0 - rng.unit_f64();
                let k = 1 + (u.ln() / ln_q).floor() as u64;
                k.clamp(1, MAX_SECTORS) * SECTOR
            }
            Sampler::Table { sizes, total } => {
                let mut x = rng.unit_f64() * total;
                for &(b, w) in sizes {
                    if x < w {
                        return b;
                    }
                    x -= w;
                }
                sizes.last().map_or(SECTOR, |s| s.0)
            }
        }
    }
}

/// The parameters of a model.
#[derive(Clone, Debug, Serialize)]
pub struct ModelParams {
    pub name: String,
    pub read_fraction: f64,
    pub read_size: SizeDist,
    pub write_size: SizeDist,
    /// Bytes of address space the model uses (from 0).
    pub footprint_bytes: u64,
    pub hot_fraction: f64,
    pub hot_share: f64,
    pub overwrite_ratio: f64,
    pub seq_run_requests: f64,
    pub iops: f64,
    /// Requests in one pass of the stream.
    pub count: u64,
}

/// A named model as shipped: its parameters, what it stands for, and where each number is from.
pub struct NamedModel {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub description: &'static str,
    pub source: &'static str,
    pub params: fn() -> ModelParams,
}

const KB: f64 = 1024.0;

fn table8(name: &str, wr: f64, rr: f64, ws_kb: f64, rs_kb: f64) -> ModelParams {
    ModelParams {
        name: name.into(),
        read_fraction: rr / (rr + wr),
        read_size: SizeDist::Geometric {
            mean_bytes: rs_kb * KB,
        },
        write_size: SizeDist::Geometric {
            mean_bytes: ws_kb * KB,
        },
        footprint_bytes: 4 << 30,
        hot_fraction: 0.2,
        hot_share: 0.8,
        overwrite_ratio: 0.5,
        seq_run_requests: 1.0,
        iops: 500.0,
        count: 100_000,
    }
}

/// The shipped models. See docs/traces.md for each number's provenance.
pub const MODELS: &[NamedModel] = &[
    NamedModel {
        name: "financial1",
        aliases: &["fin1"],
        description: "stand-in for UMass/SPC Financial1 (OLTP): mostly small random writes",
        source: "read/write ratio and mean sizes: seed 002_4c1aa36d5edecf14.txt Table 8 (Finacial1: WR 0.59, RR 0.41, WS 2.91 KB, RS 2.48 KB); \
                 locality and arrival rate: measured by `ssdlab trace stats` on shared/traces/ssdsim_financial1_sample.ascii (10,000 Financial1 requests: \
                 hot fraction 0.53, overwrite ratio 0.51, mean run 1.83 requests, 38.5 requests/s; footprint 27.1 MiB per 10,000 requests, so 256 MiB for the default 100,000); \
                 fin1 is the name seed 001_ecde9f9717361b11.txt uses",
        params: || ModelParams {
            hot_fraction: 0.53,
            overwrite_ratio: 0.51,
            seq_run_requests: 1.83,
            iops: 38.5,
            footprint_bytes: 256 << 20,
            ..table8("financial1", 0.59, 0.41, 2.91, 2.48)
        },
    },
    NamedModel {
        name: "financial2",
        aliases: &["fin2"],
        description: "stand-in for UMass/SPC Financial2 (OLTP): many repeated small writes",
        source: "read/write ratio and mean sizes: seed 002 Table 8 (Finacial2: WR 0.84, RR 0.16, WS 2.49 KB, RS 0.27 KB; reads drawn as 512 B, the smallest sector request); \
                 locality: assumed from seed 002 §3.3.2 (\"many repeated write requests\"): overwrite ratio 0.9, hot fraction 0.1; arrival rate assumed (500/s); \
                 fin2 is the name seed 001 uses",
        params: || ModelParams {
            hot_fraction: 0.1,
            overwrite_ratio: 0.9,
            seq_run_requests: 1.0,
            footprint_bytes: 512 << 20,
            ..table8("financial2", 0.84, 0.16, 2.49, 0.27)
        },
    },
    NamedModel {
        name: "msnfs",
        aliases: &[],
        description: "stand-in for the SNIA MSNFS trace: large, largely sequential requests",
        source: "read/write ratio and mean sizes: seed 002 Table 8 (MSNFS: WR 0.15, RR 0.85, WS 10.06 KB, RS 14.38 KB); \
                 locality: assumed from Table 8's description (\"most are sequential or large size\"): mean sequential run 8 requests; arrival rate assumed (500/s)",
        params: || ModelParams {
            seq_run_requests: 8.0,
            overwrite_ratio: 0.3,
            ..table8("msnfs", 0.15, 0.85, 10.06, 14.38)
        },
    },
    NamedModel {
        name: "radius",
        aliases: &[],
        description: "stand-in for the SNIA RADIUS trace: write-dominant, small and large writes",
        source: "read/write ratio and mean sizes: seed 002 Table 8 (RADIUS: WR 0.91, RR 0.09, WS 7.20 KB, RS 6.58 KB); \
                 locality and arrival rate assumed (hot fraction 0.2, overwrite ratio 0.5, run 1.5, 500/s)",
        params: || ModelParams {
            seq_run_requests: 1.5,
            ..table8("radius", 0.91, 0.09, 7.20, 6.58)
        },
    },
    NamedModel {
        name: "web1",
        aliases: &["websearch1"],
        description: "stand-in for UMass/SPC WebSearch1: random reads, almost no writes",
        source: "seed 001_ecde9f9717361b11.txt names web1 (UMass) without statistics; every number here is measured by `ssdlab trace stats` \
                 on shared/traces/disksim_websearch_small.trace (24,783 UMass WebSearch requests as MQSim ships them): \
                 read fraction (24,779 of 24,783), the read sizes and their counts, hot fraction 0.80 (no skew), mean run 1.11 requests, \
                 412.7 requests/s, footprint = the sample's address span (88.2 GiB); the overwrite ratio 0.5 comes from its 4 writes",
        params: || ModelParams {
            name: "web1".into(),
            read_fraction: 24_779.0 / 24_783.0,
            read_size: SizeDist::Table {
                sizes: vec![
                    (512, 24.0),
                    (8192, 14_886.0),
                    (16384, 3_034.0),
                    (24576, 1_924.0),
                    (32768, 4_909.0),
                    (1_137_664, 2.0),
                ],
            },
            write_size: SizeDist::Table {
                sizes: vec![(8192, 1.0)],
            },
            footprint_bytes: 94_668_718_080 / SECTOR * SECTOR,
            hot_fraction: 0.8,
            hot_share: 0.8,
            overwrite_ratio: 0.5,
            seq_run_requests: 1.11,
            iops: 412.7,
            count: 100_000,
        },
    },
];

pub fn find(name: &str) -> Option<&'static NamedModel> {
    let n = name.trim().to_ascii_lowercase();
    MODELS
        .iter()
        .find(|m| m.name == n || m.aliases.contains(&n.as_str()))
}

pub fn names() -> String {
    MODELS.iter().map(|m| m.name).collect::<Vec<_>>().join(", ")
}

/// A workload model's spec that cannot be read: the spec as the origin, the key as the field.
fn model_err(spec: &str, field: Option<&str>, problem: Problem) -> Error {
    Error::bad_trace(Invalid::of(
        format!("workload model {spec:?}"),
        field.map(str::to_string),
        problem,
    ))
}

/// Parse `NAME[,key=value...]` (the part after `model:`) into parameters.
pub fn parse_spec(spec: &str) -> Result<ModelParams> {
    let mut parts = spec.split(',');
    let name = parts.next().unwrap_or("").trim();
    let m = find(name).ok_or_else(|| {
        model_err(
            spec,
            None,
            got(format!("{name:?}"), format!("a model: one of {}", names())),
        )
    })?;
    let mut p = (m.params)();
    for kv in parts {
        let (k, v) = kv.split_once('=').ok_or_else(|| {
            model_err(
                spec,
                None,
                got(format!("{kv:?}"), "key=value after the name"),
            )
        })?;
        let (k, v) = (k.trim(), v.trim());
        let num = |what: &str| -> Result<f64> {
            v.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| model_err(spec, Some(k), got(format!("{v:?}"), what)))
        };
        let frac = |x: f64, lo_open: bool| -> Result<f64> {
            let ok = if lo_open {
                x > 0.0 && x <= 1.0
            } else {
                (0.0..=1.0).contains(&x)
            };
            if ok {
                Ok(x)
            } else {
                Err(model_err(spec, Some(k), got(x, "a fraction from 0 to 1")))
            }
        };
        let bytes = || -> Result<u64> { parse_bytes(v).map_err(|p| model_err(spec, Some(k), p)) };
        match k {
            "count" => {
                let c = v.parse::<u64>().ok().filter(|&c| c > 0);
                p.count = c.ok_or_else(|| {
                    model_err(
                        spec,
                        Some("count"),
                        got(format!("{v:?}"), "a positive integer"),
                    )
                })?;
            }
            "footprint" => p.footprint_bytes = bytes()?,
            "iops" => {
                let x = num("a rate above 0")?;
                if x <= 0.0 {
                    return Err(model_err(spec, Some("iops"), got(x, "a rate above 0")));
                }
                p.iops = x;
            }
            "read_fraction" => p.read_fraction = frac(num("a fraction")?, false)?,
            "hot_fraction" => p.hot_fraction = frac(num("a fraction")?, true)?,
            "hot_share" => p.hot_share = frac(num("a fraction")?, false)?,
            "overwrite" => p.overwrite_ratio = frac(num("a fraction")?, false)?,
            "seq_run" => {
                let x = num("a mean run length of at least 1")?;
                if x < 1.0 {
                    return Err(model_err(spec, Some("seq_run"), got(x, "at least 1")));
                }
                p.seq_run_requests = x;
            }
            "read_size" => {
                p.read_size = SizeDist::Geometric {
                    mean_bytes: bytes()? as f64,
                }
            }
            "write_size" => {
                p.write_size = SizeDist::Geometric {
                    mean_bytes: bytes()? as f64,
                }
            }
            _ => {
                return Err(model_err(
                    spec,
                    None,
                    got(
                        format!("the key {k:?}"),
                        "a key of: count, footprint, iops, read_fraction, hot_fraction, \
                         hot_share, overwrite, seq_run, read_size, write_size",
                    ),
                ))
            }
        }
    }
    let min = (MAX_SECTORS * SECTOR).max(1 << 20);
    // The generator keeps a bit per sector of the footprint: 1 TiB is 256 MiB of bits.
    if p.footprint_bytes < min || p.footprint_bytes > 1 << 40 {
        return Err(model_err(
            spec,
            Some("footprint"),
            got(format!("{} bytes", p.footprint_bytes), "1MiB to 1TiB"),
        ));
    }
    Ok(p)
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The inverse of `m` modulo `n` (m and n coprime).
fn inverse(m: u64, n: u64) -> u64 {
    let (mut t, mut new_t) = (0i128, 1i128);
    let (mut r, mut new_r) = (n as i128, m as i128);
    while new_r != 0 {
        let q = r / new_r;
        (t, new_t) = (new_t, t - q * new_t);
        (r, new_r) = (new_r, r - q * new_r);
    }
    if t < 0 {
        t += n as i128;
    }
    t as u64
}

/// The stream of one model.
pub struct Generator {
    p: ModelParams,
    read_size: Sampler,
    write_size: Sampler,
    rng: Rng,
    blocks: u64,
    hot_blocks: u64,
    inv: u64,
    written: Vec<u64>,
    time_ps: f64,
    prev_end: Option<u64>,
    written_sectors: u64,
    overwritten_sectors: u64,
    emitted: u64,
}

impl Generator {
    pub fn new(p: ModelParams, seed: u64) -> Generator {
        let blocks = (p.footprint_bytes / EXTENT).max(1);
        let hot_blocks = ((blocks as f64 * p.hot_fraction).round() as u64).clamp(1, blocks);
        let mut mult = ((blocks as f64 * 0.618_033_988_75) as u64).max(1);
        while blocks > 1 && gcd(mult, blocks) != 1 {
            mult += 1;
        }
        let sectors = p.footprint_bytes / SECTOR;
        Generator {
            inv: if blocks > 1 {
                inverse(mult % blocks, blocks)
            } else {
                0
            },
            written: vec![0u64; sectors.div_ceil(64) as usize],
            read_size: p.read_size.sampler(),
            write_size: p.write_size.sampler(),
            rng: Rng::stream(seed, "trace.model"),
            blocks,
            hot_blocks,
            p,
            time_ps: 0.0,
            prev_end: None,
            written_sectors: 0,
            overwritten_sectors: 0,
            emitted: 0,
        }
    }

    pub fn params(&self) -> &ModelParams {
        &self.p
    }

    /// A random block start: hot with probability `hot_share`.
    fn random_start(&mut self, len: u64) -> u64 {
        let hot = self.rng.unit_f64() < self.p.hot_share;
        let cold = self.blocks - self.hot_blocks;
        let rank = if hot || cold == 0 {
            self.rng.below(self.hot_blocks)
        } else {
            self.hot_blocks + self.rng.below(cold)
        };
        // Rank r is the extent whose permuted index is r: e = r × m⁻¹ mod n.
        // Below 2^32 extents (4 PiB) the product fits a u64, whose division is much cheaper.
        let e = if self.blocks <= u32::MAX as u64 {
            rank * self.inv % self.blocks
        } else {
            ((rank as u128 * self.inv as u128) % self.blocks as u128) as u64
        };
        let off = e * EXTENT + self.rng.below(EXTENT / BLOCK) * BLOCK;
        off.min(self.p.footprint_bytes.saturating_sub(len)) / SECTOR * SECTOR
    }

    /// Sectors already written in `off..off + len`.
    fn written_in(&self, off: u64, len: u64) -> u64 {
        let (s0, s1) = (off / SECTOR, (off + len).div_ceil(SECTOR));
        count_range(&self.written, s0 as usize, s1 as usize)
    }

    /// The next request of the stream, or `None` after `count` requests.
    pub fn next_record(&mut self) -> Option<TraceRecord> {
        if self.emitted >= self.p.count {
            return None;
        }
        self.emitted += 1;
        let read = self.rng.unit_f64() < self.p.read_fraction;
        let len = if read {
            self.read_size.sample(&mut self.rng)
        } else {
            self.write_size.sample(&mut self.rng)
        }
        .min(self.p.footprint_bytes);
        let cont = 1.0 - 1.0 / self.p.seq_run_requests;
        let offset = match self.prev_end {
            Some(e) if self.rng.unit_f64() < cont && e + len <= self.p.footprint_bytes => e,
            _ if read => self.random_start(len),
            _ => {
                let sectors = len / SECTOR;
                let want = self.p.overwrite_ratio * (self.written_sectors + sectors) as f64
                    - self.overwritten_sectors as f64;
                let over = want >= sectors as f64 / 2.0;
                let mut pick = self.random_start(len);
                for _ in 0..TRIES {
                    let w = self.written_in(pick, len);
                    if (over && w == sectors) || (!over && w == 0) {
                        break;
                    }
                    pick = self.random_start(len);
                }
                pick
            }
        };
        if !read {
            let (s0, s1) = (offset / SECTOR, (offset + len).div_ceil(SECTOR));
            self.overwritten_sectors += set_range(&mut self.written, s0 as usize, s1 as usize);
            self.written_sectors += s1 - s0;
        }
        self.prev_end = Some(offset + len);
        let t = self.time_ps as u64;
        self.time_ps += self.rng.exp(1e12 / self.p.iops);
        Some(TraceRecord {
            directive: super::Directive::None,
            all_zones: false,
            time_ps: t,
            op: if read { TraceOp::Read } else { TraceOp::Write },
            offset,
            len,
            device: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inverse_undoes_the_permutation() {
        for n in [2u64, 3, 10, 4096, 1_000_003, 262_144] {
            let mut m = ((n as f64 * 0.618) as u64).max(1);
            while gcd(m, n) != 1 {
                m += 1;
            }
            let inv = inverse(m % n, n);
            for b in [0, 1, n / 2, n - 1] {
                let r = (b as u128 * m as u128 % n as u128) as u64;
                assert_eq!((r as u128 * inv as u128 % n as u128) as u64, b);
            }
        }
    }

    #[test]
    fn specs_parse_and_reject() {
        let p = parse_spec("fin1,count=10,overwrite=0.3,footprint=64MiB").unwrap();
        assert_eq!((p.count, p.footprint_bytes), (10, 64 << 20));
        assert_eq!(p.overwrite_ratio, 0.3);
        for bad in [
            "nope",
            "fin1,count=0",
            "fin1,hot_fraction=2",
            "fin1,colour=1",
            "fin1,x",
        ] {
            let e = parse_spec(bad).unwrap_err().to_string();
            assert!(e.contains("workload model"), "{e}");
        }
    }
}
