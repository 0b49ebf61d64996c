//! Trace statistics, gathered in one streaming pass: request counts and bytes per op, the
//! read/write ratios by count and by bytes, mean sizes, size histograms, the footprint, the
//! inter-arrival time distribution, the inter-request distance (IRD: from the end of one request
//! to the start of the next on the same device, as seed 003_70a51d8c1c706905.txt uses it),
//! sequentiality and run lengths, overwrite ratios and the skew of accesses (the hot set).
//!
//! Memory: constant per request; the footprint keeps two bits per touched 512-byte sector and a
//! 16-bit access counter per touched 4 KiB block, in 2 MiB chunks of address space allocated as
//! they are first touched (about 1.1 KiB per chunk: 0.05 % of a dense footprint), up to a budget
//! (by default 2^20 chunks, about 1.1 GiB); requests in chunks beyond it are left out of the
//! footprint, overwrite and hot-set figures, and `footprint.tracked_fraction` says how many were
//! kept. Devices beyond the first 2^20 are counted together as device 4294967295.

use super::bits::set_range;
use super::{TraceOp, TraceRecord};
use crate::error::{got, Error, Invalid, Problem};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::collections::BTreeMap;

mod report;
pub use report::{
    Bucket, DeviceSummary, DirectiveCount, Footprint, HotSet, IatBucket, IatSummary, IrdBucket,
    IrdSummary, Overwrite, SeqSummary, SizeCount, SizeSummary, SourceInfo, StatsReport,
    StatsSummary, TimeResolution, TimeSummary,
};

pub const SCHEMA: &str = "ssdlab.trace_stats/1";

const SECTOR: u64 = 512;
const BLOCK: u64 = 4096;
const PAGE_SECTORS: u64 = 1 << 12; // 2 MiB of address space per chunk
/// Distinct devices kept apart; later ones are counted together as `u32::MAX`.
pub const MAX_DEVICES: usize = 1 << 20;
const PAGE_BLOCKS: usize = (PAGE_SECTORS * SECTOR / BLOCK) as usize;
const WORDS: usize = (PAGE_SECTORS / 64) as usize;
/// Distinct request sizes remembered per op for the "most common sizes" list.
const MAX_SIZES: usize = 4096;
/// Devices listed one by one in the output (the busiest first).
const LIST_DEVICES: usize = 32;

/// Statistics options.
#[derive(Clone, Debug)]
pub struct StatsOptions {
    /// IRD classes: a distance below this is "near" (seed 003 uses the NAND block: 128 pages of
    /// 8 KiB for its MLC = 1 MiB).
    pub ird_block: u64,
    /// Most 2 MiB chunks of address space tracked for the footprint.
    pub max_chunks: usize,
    /// Requests kept for an address-over-time picture ([`Sample`]): 0 keeps none and leaves
    /// `sample` out of the summary.
    pub sample_points: usize,
}

impl Default for StatsOptions {
    fn default() -> Self {
        StatsOptions {
            ird_block: 1 << 20,
            max_chunks: 1 << 20,
            sample_points: 0,
        }
    }
}

struct Page {
    touched: Box<[u64]>,
    written: Box<[u64]>,
    counts: Box<[u16]>,
}

impl Page {
    fn new() -> Page {
        Page {
            touched: vec![0u64; WORDS].into_boxed_slice(),
            written: vec![0u64; WORDS].into_boxed_slice(),
            counts: vec![0u16; PAGE_BLOCKS].into_boxed_slice(),
        }
    }
}

#[derive(Default)]
struct Dev {
    requests: u64,
    bytes: u64,
    min_offset: u64,
    max_end: u64,
    last_end: Option<u64>,
}

/// The ops counted apart (`TraceOp::index`).
const OPS: usize = TraceOp::ALL.len();

/// The running statistics of one trace.
pub struct TraceStats {
    opts: StatsOptions,
    count: [u64; OPS],
    bytes: [u64; OPS],
    zero_len: [u64; OPS],
    size_hist: [[u64; 64]; OPS],
    /// Writes by directive (NVMe traces): (placement?, id) → (writes, bytes).
    directives: BTreeMap<(bool, u16), (u64, u64)>,
    sizes: [BTreeMap<u64, u64>; 2],
    sizes_other: [u64; 2],
    first: Option<u64>,
    last: u64,
    prev: Option<u64>,
    resolution: TimeResolution,
    out_of_order: u64,
    iat: Histogram<u64>,
    iat_zero: u64,
    iat_log2: [u64; 64],
    iat_sum_ps: u128,
    iat_n: u64,
    devs: BTreeMap<u32, Dev>,
    ird_zero: u64,
    ird_near: u64,
    ird_far: u64,
    ird_pos: [u64; 64],
    ird_neg: [u64; 64],
    runs: u64,
    rw_requests: u64,
    rw_bytes: u64,
    pages: Vec<Page>,
    page_index: BTreeMap<(u32, u64), u32>,
    last_page: Option<((u32, u64), u32)>,
    sectors_written: u64,
    sectors_overwritten: u64,
    rewrite_requests: u64,
    write_requests: u64,
    tracked: u64,
    untracked: u64,
    sample: Sample,
}

/// Every `every`-th request (time, offset, op), evenly spread over the whole trace without
/// knowing its length: when the kept ones reach twice the points asked for, every other one is
/// dropped and `every` doubles. So between `points` and `2 × points` are kept, the same ones
/// for the same trace.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Sample {
    /// One request kept in this many.
    pub every: u64,
    /// From the trace's first request, in seconds.
    pub time_s: Vec<f64>,
    pub offset_bytes: Vec<u64>,
    /// "read", "write", "trim" or "flush".
    pub op: Vec<&'static str>,
    #[serde(skip)]
    time_ps: Vec<u64>,
    #[serde(skip)]
    seen: u64,
}

/// Keep the first, third, fifth, … element.
fn every_other<T>(v: &mut Vec<T>) {
    let mut i = 0;
    v.retain(|_| {
        i += 1;
        i % 2 == 1
    });
}

impl Sample {
    fn add(&mut self, points: usize, r: &TraceRecord) {
        let every = self.every.max(1);
        if self.seen.is_multiple_of(every) {
            self.time_ps.push(r.time_ps);
            self.offset_bytes.push(r.offset);
            self.op.push(r.op.name());
            if self.time_ps.len() >= 2 * points {
                every_other(&mut self.time_ps);
                every_other(&mut self.offset_bytes);
                every_other(&mut self.op);
                self.every = every * 2;
            }
        }
        self.seen += 1;
    }

    fn summary(&self, first_ps: u64) -> Sample {
        Sample {
            every: self.every.max(1),
            time_s: self
                .time_ps
                .iter()
                .map(|&t| t.saturating_sub(first_ps) as f64 / 1e12)
                .collect(),
            offset_bytes: self.offset_bytes.clone(),
            op: self.op.clone(),
            time_ps: Vec::new(),
            seen: 0,
        }
    }
}

fn log2_bucket(v: u64) -> usize {
    (63 - v.max(1).leading_zeros()) as usize
}

impl TraceStats {
    pub fn new(opts: StatsOptions) -> TraceStats {
        TraceStats {
            opts,
            count: [0; OPS],
            bytes: [0; OPS],
            zero_len: [0; OPS],
            size_hist: [[0; 64]; OPS],
            directives: BTreeMap::new(),
            sizes: [BTreeMap::new(), BTreeMap::new()],
            sizes_other: [0; 2],
            first: None,
            last: 0,
            prev: None,
            resolution: TimeResolution::default(),
            out_of_order: 0,
            iat: Histogram::new_with_bounds(1, 86_400_000_000_000, 3).expect("histogram bounds"),
            iat_zero: 0,
            iat_log2: [0; 64],
            iat_sum_ps: 0,
            iat_n: 0,
            devs: BTreeMap::new(),
            ird_zero: 0,
            ird_near: 0,
            ird_far: 0,
            ird_pos: [0; 64],
            ird_neg: [0; 64],
            runs: 0,
            rw_requests: 0,
            rw_bytes: 0,
            pages: Vec::new(),
            page_index: BTreeMap::new(),
            last_page: None,
            sectors_written: 0,
            sectors_overwritten: 0,
            rewrite_requests: 0,
            write_requests: 0,
            tracked: 0,
            untracked: 0,
            sample: Sample::default(),
        }
    }

    fn page(&mut self, device: u32, page: u64) -> Option<usize> {
        let key = (device, page);
        if let Some((k, i)) = self.last_page {
            if k == key {
                return Some(i as usize);
            }
        }
        let i = match self.page_index.get(&key) {
            Some(&i) => i,
            None => {
                if self.pages.len() >= self.opts.max_chunks {
                    return None;
                }
                self.pages.push(Page::new());
                let i = (self.pages.len() - 1) as u32;
                self.page_index.insert(key, i);
                i
            }
        };
        self.last_page = Some((key, i));
        Some(i as usize)
    }

    /// Add one request.
    pub fn add(&mut self, r: &TraceRecord) {
        if self.opts.sample_points > 0 {
            self.sample.add(self.opts.sample_points, r);
        }
        let k = r.op.index();
        self.count[k] += 1;
        let directive = match r.directive {
            super::Directive::None => None,
            super::Directive::Stream(s) => Some((false, s)),
            super::Directive::Placement(p) => Some((true, p)),
        };
        if let Some(d) = directive {
            // At most 2^17 keys (two kinds of 16-bit identifiers).
            let e = self.directives.entry(d).or_default();
            e.0 += 1;
            e.1 = e.1.saturating_add(r.len);
        }
        self.bytes[k] = self.bytes[k].saturating_add(r.len);
        if r.len == 0 {
            self.zero_len[k] += 1;
        } else {
            let b = log2_bucket(r.len.div_ceil(SECTOR).saturating_mul(2) - 1);
            self.size_hist[k][b] += 1;
        }
        if k < 2 {
            let m = &mut self.sizes[k];
            if let Some(c) = m.get_mut(&r.len) {
                *c += 1;
            } else if m.len() < MAX_SIZES {
                m.insert(r.len, 1);
            } else {
                self.sizes_other[k] += 1;
            }
        }
        // Time.
        self.first.get_or_insert(r.time_ps);
        self.resolution.add(r.time_ps);
        self.last = self.last.max(r.time_ps);
        if let Some(p) = self.prev {
            let gap = if r.time_ps < p {
                self.out_of_order += 1;
                0
            } else {
                r.time_ps - p
            };
            let ns = gap / 1000;
            self.iat_sum_ps += gap as u128;
            self.iat_n += 1;
            if ns == 0 {
                self.iat_zero += 1;
            } else {
                self.iat.saturating_record(ns);
                self.iat_log2[log2_bucket(ns)] += 1;
            }
        }
        self.prev = Some(self.prev.map_or(r.time_ps, |p| p.max(r.time_ps)));
        let end = r.offset.saturating_add(r.len);
        let device = if self.devs.len() >= MAX_DEVICES && !self.devs.contains_key(&r.device) {
            u32::MAX
        } else {
            r.device
        };
        let dev = self.devs.entry(device).or_insert_with(|| Dev {
            min_offset: u64::MAX,
            ..Default::default()
        });
        dev.requests += 1;
        dev.bytes = dev.bytes.saturating_add(r.len);
        if !matches!(r.op, TraceOp::Read | TraceOp::Write) || r.len == 0 {
            return;
        }
        dev.min_offset = dev.min_offset.min(r.offset);
        dev.max_end = dev.max_end.max(end);
        // Inter-request distance and runs, per device.
        self.rw_requests += 1;
        self.rw_bytes = self.rw_bytes.saturating_add(r.len);
        match dev.last_end {
            None => self.runs += 1,
            Some(prev_end) => {
                let ird = r.offset as i128 - prev_end as i128;
                if ird == 0 {
                    self.ird_zero += 1;
                } else {
                    self.runs += 1;
                    let a = ird.unsigned_abs().min(u64::MAX as u128) as u64;
                    if a < self.opts.ird_block {
                        self.ird_near += 1;
                    } else {
                        self.ird_far += 1;
                    }
                    if ird > 0 {
                        self.ird_pos[log2_bucket(a)] += 1;
                    } else {
                        self.ird_neg[log2_bucket(a)] += 1;
                    }
                }
            }
        }
        dev.last_end = Some(end);
        // Footprint, overwrites and access counts: requests of more than 1 GiB (none in real
        // traces) and those beyond the chunk budget are left out.
        let write = r.op == TraceOp::Write;
        let s0 = r.offset / SECTOR;
        let s1 = end.div_ceil(SECTOR);
        let chunks = s1.div_ceil(PAGE_SECTORS) - s0 / PAGE_SECTORS;
        let fits = r.len <= 1 << 30
            && (s0 / PAGE_SECTORS..s1.div_ceil(PAGE_SECTORS)).all(|pg| {
                self.page_index.contains_key(&(device, pg))
                    || self.pages.len() + (chunks as usize) <= self.opts.max_chunks
            });
        if !fits {
            self.untracked += 1;
            return;
        }
        self.tracked += 1;
        let mut over = 0u64;
        let mut s = s0;
        while s < s1 {
            let page = s / PAGE_SECTORS;
            let lo = (s % PAGE_SECTORS) as usize;
            let hi = ((s1 - page * PAGE_SECTORS).min(PAGE_SECTORS)) as usize;
            let Some(i) = self.page(device, page) else {
                break;
            };
            let p = &mut self.pages[i];
            set_range(&mut p.touched, lo, hi);
            if write {
                over += set_range(&mut p.written, lo, hi);
            }
            let b0 = lo * SECTOR as usize / BLOCK as usize;
            let b1 = (hi * SECTOR as usize).div_ceil(BLOCK as usize);
            for c in &mut p.counts[b0..b1] {
                *c = c.saturating_add(1);
            }
            s = page * PAGE_SECTORS + hi as u64;
        }
        if write {
            self.write_requests += 1;
            self.sectors_written += s1 - s0;
            self.sectors_overwritten += over;
            if over > 0 {
                self.rewrite_requests += 1;
            }
        }
    }

    /// The summary, as serialised by `ssdlab trace stats --json`.
    pub fn summary(&self) -> StatsSummary {
        let total: u64 = self.count.iter().sum();
        let rw_count = self.count[0] + self.count[1];
        let rw_bytes = self.bytes[0].saturating_add(self.bytes[1]);
        let duration_ps = self.first.map_or(0, |f| self.last - f);
        let duration_s = duration_ps as f64 / 1e12;
        let (touched, written, blocks, hot_set) = self.footprint_and_hot_set();
        let (devices, n_devices, span, max_end) = self.device_summaries();
        StatsSummary {
            requests: total,
            reads: self.count[0],
            writes: self.count[1],
            trims: self.count[2],
            flushes: self.count[3],
            appends: self.count[TraceOp::Append.index()],
            zone_management: TraceOp::ALL
                .iter()
                .filter(|o| o.is_zone_management())
                .map(|o| self.count[o.index()])
                .sum(),
            directives: self
                .directives
                .iter()
                .map(|(&(placement, id), &(writes, bytes))| DirectiveCount {
                    directive: if placement { "placement" } else { "stream" },
                    id,
                    writes,
                    bytes,
                })
                .collect(),
            read_ratio_by_count: ratio(self.count[0], rw_count),
            write_ratio_by_count: ratio(self.count[1], rw_count),
            read_ratio_by_bytes: ratio(self.bytes[0], rw_bytes),
            write_ratio_by_bytes: ratio(self.bytes[1], rw_bytes),
            read: self.size_summary(0),
            write: self.size_summary(1),
            trim: self.size_summary(2),
            time: TimeSummary {
                duration_s,
                iops: if duration_s > 0.0 {
                    total as f64 / duration_s
                } else {
                    0.0
                },
                out_of_order: self.out_of_order,
                resolution_us: self.resolution.us(),
                inter_arrival_us: self.iat_summary(),
            },
            ird: self.ird_summary(),
            sequential: SeqSummary {
                fraction: ratio(self.ird_zero, self.rw_requests),
                runs: self.runs,
                mean_run_requests: ratio(self.rw_requests, self.runs),
                mean_run_bytes: ratio(self.rw_bytes, self.runs),
            },
            footprint: Footprint {
                bytes: touched * SECTOR,
                written_bytes: written * SECTOR,
                blocks_4k: blocks,
                devices: n_devices,
                address_span_bytes: span,
                max_end_bytes: max_end,
                tracked_fraction: ratio(self.tracked, self.tracked + self.untracked).max(
                    if self.tracked + self.untracked == 0 {
                        1.0
                    } else {
                        0.0
                    },
                ),
            },
            overwrite: Overwrite {
                written_bytes: self.sectors_written * SECTOR,
                overwritten_bytes: self.sectors_overwritten * SECTOR,
                overwrite_ratio: ratio(self.sectors_overwritten, self.sectors_written),
                rewrite_request_ratio: ratio(self.rewrite_requests, self.write_requests),
            },
            hot_set,
            devices,
            sample: (self.opts.sample_points > 0)
                .then(|| self.sample.summary(self.first.unwrap_or(0))),
        }
    }

    /// Sizes of requests of op `k` (0 read, 1 write, 2 trim): counts, histogram, most common.
    fn size_summary(&self, k: usize) -> SizeSummary {
        let mut top: Vec<(u64, u64)> = if k < 2 {
            self.sizes[k].iter().map(|(&s, &c)| (s, c)).collect()
        } else {
            Vec::new()
        };
        top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        top.truncate(16);
        let last = self.size_hist[k].iter().rposition(|&c| c > 0);
        SizeSummary {
            count: self.count[k],
            bytes: self.bytes[k],
            mean_bytes: ratio(self.bytes[k], self.count[k]),
            zero_length: self.zero_len[k],
            histogram: last.map_or(Vec::new(), |l| {
                (0..=l)
                    .map(|i| Bucket {
                        le_bytes: SECTOR << i,
                        count: self.size_hist[k][i],
                    })
                    .collect()
            }),
            most_common: top
                .into_iter()
                .map(|(bytes, count)| SizeCount { bytes, count })
                .collect(),
            other_sizes: if k < 2 { self.sizes_other[k] } else { 0 },
        }
    }

    /// Inter-arrival times: mean, percentiles, histogram.
    fn iat_summary(&self) -> IatSummary {
        let us = |ns: u64| ns as f64 / 1000.0;
        let n_iat = self.iat_n;
        let q = |p: f64| -> f64 {
            // Zero gaps sit below the histogram's lowest value.
            if n_iat == 0 {
                return 0.0;
            }
            let rank = p * n_iat as f64;
            if rank <= self.iat_zero as f64 {
                return 0.0;
            }
            let rest = self.iat.len();
            if rest == 0 {
                return 0.0;
            }
            let pp = ((rank - self.iat_zero as f64) / rest as f64).clamp(0.0, 1.0);
            us(self.iat.value_at_quantile(pp))
        };
        let iat_last = self.iat_log2.iter().rposition(|&c| c > 0);
        let mut iat_hist = vec![IatBucket {
            lt_us: 0.001,
            count: self.iat_zero,
        }];
        if let Some(l) = iat_last {
            for i in 0..=l {
                iat_hist.push(IatBucket {
                    lt_us: (2u64 << i) as f64 / 1000.0,
                    count: self.iat_log2[i],
                });
            }
        }
        IatSummary {
            mean: if n_iat > 0 {
                self.iat_sum_ps as f64 / n_iat as f64 / 1e6
            } else {
                0.0
            },
            p50: q(0.5),
            p90: q(0.9),
            p99: q(0.99),
            max: if self.iat.is_empty() {
                0.0
            } else {
                us(self.iat.max())
            },
            zero: self.iat_zero,
            histogram: iat_hist,
        }
    }

    /// Inter-request distances: the pairs, their kinds and histogram.
    fn ird_summary(&self) -> IrdSummary {
        let mut ird_hist = Vec::new();
        for i in (0..64).rev() {
            if self.ird_neg[i] > 0 {
                ird_hist.push(IrdBucket {
                    from_bytes: -(((2u128 << i) - 1).min(i64::MAX as u128) as i64),
                    to_bytes: -((1u128 << i) as i64),
                    count: self.ird_neg[i],
                });
            }
        }
        if self.ird_zero > 0 {
            ird_hist.push(IrdBucket {
                from_bytes: 0,
                to_bytes: 0,
                count: self.ird_zero,
            });
        }
        for i in 0..64 {
            if self.ird_pos[i] > 0 {
                ird_hist.push(IrdBucket {
                    from_bytes: (1u128 << i).min(i64::MAX as u128) as i64,
                    to_bytes: ((2u128 << i) - 1).min(i64::MAX as u128) as i64,
                    count: self.ird_pos[i],
                });
            }
        }
        let ird_n = self.ird_zero + self.ird_near + self.ird_far;
        IrdSummary {
            pairs: ird_n,
            block_bytes: self.opts.ird_block,
            sequential_fraction: ratio(self.ird_zero, ird_n),
            near_fraction: ratio(self.ird_near, ird_n),
            far_fraction: ratio(self.ird_far, ird_n),
            histogram: ird_hist,
        }
    }

    /// The sectors touched and written, the 4 KiB blocks accessed, and the hot set.
    fn footprint_and_hot_set(&self) -> (u64, u64, u64, HotSet) {
        // Footprint and the hot set.
        let mut touched = 0u64;
        let mut written = 0u64;
        let mut freq: Vec<u64> = vec![0; 1 << 16];
        let mut blocks = 0u64;
        for p in &self.pages {
            touched += p.touched.iter().map(|w| w.count_ones() as u64).sum::<u64>();
            written += p.written.iter().map(|w| w.count_ones() as u64).sum::<u64>();
            for &c in p.counts.iter() {
                if c > 0 {
                    freq[c as usize] += 1;
                    blocks += 1;
                }
            }
        }
        let accesses: u64 = freq.iter().enumerate().map(|(c, &n)| c as u64 * n).sum();
        let hot = |share: f64| -> f64 {
            if accesses == 0 || blocks == 0 {
                return 0.0;
            }
            let want = share * accesses as f64;
            let mut got = 0.0;
            let mut used = 0.0;
            for c in (1..freq.len()).rev() {
                let n = freq[c] as f64;
                if n == 0.0 {
                    continue;
                }
                let a = c as f64 * n;
                if got + a >= want {
                    used += (want - got) / c as f64;
                    return used / blocks as f64;
                }
                got += a;
                used += n;
            }
            1.0
        };
        let top_share = |frac: f64| -> f64 {
            if accesses == 0 {
                return 0.0;
            }
            let mut want = frac * blocks as f64;
            let mut got = 0.0;
            for c in (1..freq.len()).rev() {
                let n = freq[c] as f64;
                if n == 0.0 {
                    continue;
                }
                let take = n.min(want);
                got += take * c as f64;
                want -= take;
                if want <= 0.0 {
                    break;
                }
            }
            got / accesses as f64
        };
        let hot_set = HotSet {
            fraction_for_50pct: hot(0.5),
            fraction_for_80pct: hot(0.8),
            fraction_for_90pct: hot(0.9),
            top_1pct_share: top_share(0.01),
            top_10pct_share: top_share(0.1),
            top_20pct_share: top_share(0.2),
        };
        (touched, written, blocks, hot_set)
    }

    /// The devices most requested ([`LIST_DEVICES`] of them), how many there are, the sum of
    /// their spans and the furthest end.
    fn device_summaries(&self) -> (Vec<DeviceSummary>, u64, u64, u64) {
        let mut devices: Vec<DeviceSummary> = self
            .devs
            .iter()
            .map(|(&d, v)| DeviceSummary {
                device: d,
                requests: v.requests,
                bytes: v.bytes,
                min_offset_bytes: if v.min_offset == u64::MAX {
                    0
                } else {
                    v.min_offset
                },
                max_end_bytes: v.max_end,
            })
            .collect();
        let span: u64 = devices
            .iter()
            .fold(0u64, |a, d| a.saturating_add(d.max_end_bytes));
        let max_end = devices.iter().map(|d| d.max_end_bytes).max().unwrap_or(0);
        devices.sort_by(|a, b| b.requests.cmp(&a.requests).then(a.device.cmp(&b.device)));
        let n_devices = devices.len() as u64;
        devices.truncate(LIST_DEVICES);
        (devices, n_devices, span, max_end)
    }
}

/// `a / b`, 0 when `b` is 0.
fn ratio(a: u64, b: u64) -> f64 {
    if b > 0 {
        a as f64 / b as f64
    } else {
        0.0
    }
}

/// A statistics option that does not fit the source: the source as the origin, the option
/// (`devices`, `--device`) as the field.
fn option_err(source: &str, field: &str, flag: &str, problem: Problem) -> Error {
    Error::bad_trace(Invalid {
        flag: Some(flag.to_string()),
        ..Invalid::new(source, field, problem)
    })
}

/// The statistics of a trace file (or of `model:NAME,...`), with what was read: the file's
/// format and compression, its lines, and the lines skipped. `progress(records)` is called every
/// 65,536 records; returning false stops with [`crate::error::Error::Interrupted`].
pub fn of_source(
    source: &str,
    read: &super::ReadOptions,
    opts: &StatsOptions,
    devices: &[u32],
    seed: u64,
    progress: &mut dyn FnMut(u64) -> bool,
) -> crate::error::Result<StatsReport> {
    let mut st = TraceStats::new(opts.clone());
    let keep = |d: u32| devices.is_empty() || devices.binary_search(&d).is_ok();
    let mut n = 0u64;
    let mut tick = |n: u64| -> crate::error::Result<()> {
        if n.is_multiple_of(1 << 16) && !progress(n) {
            return Err(crate::error::Error::Interrupted);
        }
        Ok(())
    };
    let mut info = SourceInfo {
        file: source.into(),
        ..Default::default()
    };
    if let Some(spec) = source.strip_prefix("model:") {
        if let Some(f) = read.format {
            return Err(option_err(
                source,
                "format",
                "--format",
                got(
                    format!("{:?}", f.name()),
                    "none: a format is a trace file's",
                ),
            ));
        }
        let p = super::model::parse_spec(spec)?;
        info.format = "model".into();
        info.model = Some(p.clone());
        let mut g = super::model::Generator::new(p, seed);
        while let Some(r) = g.next_record() {
            n += 1;
            tick(n)?;
            st.add(&r);
        }
    } else {
        let mut r = super::TraceReader::open(source, read)?;
        // The first few devices seen, to say what the trace holds when the filter keeps nothing.
        let mut seen = std::collections::BTreeSet::new();
        let mut kept = 0u64;
        while let Some(rec) = r.next_record()? {
            n += 1;
            tick(n)?;
            if seen.len() < 8 {
                seen.insert(rec.device);
            }
            if keep(rec.device) {
                kept += 1;
                st.add(&rec);
            } else {
                info.filtered_device += 1;
            }
        }
        if kept == 0 && info.filtered_device > 0 {
            let format = r.format();
            let name = |d: u32| format.device_name(d);
            let asked: Vec<String> = devices.iter().take(8).map(|&d| name(d)).collect();
            let held: Vec<String> = seen.iter().map(|&d| name(d)).collect();
            return Err(option_err(
                source,
                "devices",
                "--device",
                got(
                    asked.join(","),
                    format!("one of the trace's device(s) {}", held.join(", ")),
                ),
            ));
        }
        info.format = r.format().name().into();
        info.compression = Some(r.compression().name().into());
        info.lines = Some(r.lines());
        info.skipped_bad_lines = r.skipped_lines();
        info.not_request_lines = r.not_request_lines();
        info.bad_lines = r.bad_lines().to_vec();
        info.before_start = r.early();
    }
    Ok(StatsReport {
        schema: SCHEMA,
        source: info,
        stats: st.summary(),
    })
}
