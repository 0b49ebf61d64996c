//! Phase-change memory: geometry (channels × chips × banks), access latency as a function of
//! size (a measured table, or an analytic model of array read, SET/RESET rounds and transfer),
//! write pausing, per-line write counters, Start-Gap wear levelling and energy. Timing only;
//! the controller that drives it is `ctrl::pcm`. Sources of every preset figure: docs/pcm.md.
//!
//! Addressing: the media is cut into lines of `line` bytes. Logical line `l` is physical line
//! `p` (Start-Gap's map, or `l` itself); consecutive physical lines go to consecutive channels,
//! then to consecutive banks of a channel, so a long request spreads over all channels. The
//! chips of a channel work in lock step on one access (each holds `1/chips` of it), as the
//! eight P8P chips of a channel do in seed 002's prototype. An access is one line's part of a
//! request, widened to whole `min_access` units.
//!
//! Resources: each bank is busy from the start of its array work to its end, in the order
//! accesses reach it; in the analytic model each channel's bus is a timeline that data crosses
//! once per access (after the array read, before the program). The table model's latencies were
//! measured through the controller, transfer included: they hold the bank and not the bus.

use crate::config::{PcmConfig, PcmTimingModel};
use crate::sim::time::Timeline;
use crate::sim::SimTime;
use std::collections::BTreeMap;

/// Latency of one channel access as a function of its size.
#[derive(Clone, Debug)]
pub enum PcmTimingPs {
    Table {
        sizes: Vec<u64>,
        read: Vec<SimTime>,
        write: Vec<SimTime>,
    },
    Analytic {
        chips: u64,
        array_read: SimTime,
        read_unit: u64,
        /// One program round: the longer of SET and RESET (data-independent, worst case).
        round: SimTime,
        write_unit: u64,
        /// Bus time per byte, in thousandths of a picosecond.
        bus_mps_per_byte: u64,
    },
}

/// The parts of one access: array work (holds the bank) and transfer (holds the bus).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccessTime {
    pub array: SimTime,
    pub transfer: SimTime,
}

impl AccessTime {
    pub fn total(self) -> SimTime {
        self.array + self.transfer
    }
}

/// `times` at `sizes` (ascending), interpolated linearly between entries; below the first
/// entry, proportional to size (the line through the origin and the first entry); above the
/// last, whole multiples of the last entry plus the remainder's time.
fn table_time(sizes: &[u64], times: &[SimTime], bytes: u64) -> SimTime {
    let last = sizes.len() - 1;
    if bytes > sizes[last] {
        let n = bytes / sizes[last];
        let r = bytes % sizes[last];
        let rest = if r > 0 {
            table_time(sizes, times, r)
        } else {
            SimTime::ZERO
        };
        return times[last] * n + rest;
    }
    if bytes <= sizes[0] {
        return SimTime(mul_div(times[0].ps(), bytes, sizes[0]));
    }
    let i = sizes.partition_point(|&s| s < bytes);
    let (s0, s1) = (sizes[i - 1], sizes[i]);
    let (t0, t1) = (times[i - 1].ps(), times[i].ps());
    // t0 + (t1 - t0) (bytes - s0) / (s1 - s0), for either slope.
    let span = bytes - s0;
    let width = s1 - s0;
    SimTime(if t1 >= t0 {
        t0 + mul_div(t1 - t0, span, width)
    } else {
        t0 - mul_div(t0 - t1, span, width)
    })
}

/// `a × b / c` rounded to nearest, without overflow for the sizes met here.
fn mul_div(a: u64, b: u64, c: u64) -> u64 {
    ((a as u128 * b as u128 + c as u128 / 2) / c as u128) as u64
}

impl PcmTimingPs {
    pub fn from_config(cfg: &PcmConfig) -> PcmTimingPs {
        let t = &cfg.timing;
        match t.model {
            PcmTimingModel::Table => PcmTimingPs::Table {
                sizes: t.sizes.iter().map(|b| b.0).collect(),
                read: t.read.iter().map(|d| d.0).collect(),
                write: t.write.iter().map(|d| d.0).collect(),
            },
            PcmTimingModel::Analytic => PcmTimingPs::Analytic {
                chips: cfg.chips_per_channel as u64,
                array_read: t.array_read.0,
                read_unit: t.read_unit.0,
                round: t.set.0.max(t.reset.0),
                write_unit: t.write_unit.0,
                bus_mps_per_byte: (1e15 / t.bus.map_or(1.0, |b| b.0)).round() as u64,
            },
        }
    }

    fn bus(mps_per_byte: u64, bytes: u64) -> SimTime {
        SimTime(mul_div(mps_per_byte, bytes, 1000))
    }

    /// A read of `bytes` on one channel.
    pub fn read(&self, bytes: u64) -> AccessTime {
        match self {
            PcmTimingPs::Table { sizes, read, .. } => AccessTime {
                array: table_time(sizes, read, bytes),
                transfer: SimTime::ZERO,
            },
            PcmTimingPs::Analytic {
                chips,
                array_read,
                read_unit,
                bus_mps_per_byte,
                ..
            } => {
                let per_chip = bytes.div_ceil(*chips);
                AccessTime {
                    array: *array_read * per_chip.div_ceil(*read_unit),
                    transfer: Self::bus(*bus_mps_per_byte, bytes),
                }
            }
        }
    }

    /// A write of `bytes` on one channel.
    pub fn write(&self, bytes: u64) -> AccessTime {
        match self {
            PcmTimingPs::Table { sizes, write, .. } => AccessTime {
                array: table_time(sizes, write, bytes),
                transfer: SimTime::ZERO,
            },
            PcmTimingPs::Analytic {
                chips,
                round,
                write_unit,
                bus_mps_per_byte,
                ..
            } => {
                let per_chip = bytes.div_ceil(*chips);
                AccessTime {
                    array: *round * per_chip.div_ceil(*write_unit),
                    transfer: Self::bus(*bus_mps_per_byte, bytes),
                }
            }
        }
    }
}

/// Start-Gap wear levelling (Qureshi et al., "Enhancing lifetime and security of PCM-based
/// main memory with Start-Gap wear leveling", MICRO 2009): `n` logical lines live in `n + 1`
/// physical ones; one, the gap, is empty. Every `interval` writes the line before the gap moves
/// into it (the gap moves down by one); when the gap reaches line 0 the line at `n` moves there,
/// the gap returns to `n`, and `start` advances, so over time every logical line visits every
/// physical one.
#[derive(Clone, Debug)]
pub struct StartGap {
    n: u64,
    start: u64,
    gap: u64,
    interval: u32,
    since_move: u32,
    pub moves: u64,
}

impl StartGap {
    pub fn new(logical_lines: u64, interval: u32) -> StartGap {
        StartGap {
            n: logical_lines,
            start: 0,
            gap: logical_lines,
            interval: interval.max(1),
            since_move: 0,
            moves: 0,
        }
    }

    /// The physical line of logical line `la`.
    #[inline]
    pub fn map(&self, la: u64) -> u64 {
        let mut pa = la + self.start;
        if pa >= self.n {
            pa -= self.n;
        }
        if pa >= self.gap {
            pa + 1
        } else {
            pa
        }
    }

    /// Count one write; when a gap move is due, do it and return (from, to): the physical line
    /// copied and its new place.
    #[inline]
    pub fn on_write(&mut self) -> Option<(u64, u64)> {
        self.since_move += 1;
        if self.since_move < self.interval {
            return None;
        }
        self.since_move = 0;
        self.moves += 1;
        if self.gap == 0 {
            self.gap = self.n;
            self.start = if self.start + 1 == self.n {
                0
            } else {
                self.start + 1
            };
            Some((self.n, 0))
        } else {
            self.gap -= 1;
            Some((self.gap, self.gap + 1))
        }
    }

    /// The physical line that holds no data.
    pub fn gap(&self) -> u64 {
        self.gap
    }
}

/// Lines per chunk of write counters: counters are kept for the chunks written to only, so a
/// large device that is touched sparsely costs little memory.
const CHUNK_LINES: usize = 1 << 16;

/// Write counts per physical line.
#[derive(Clone, Debug)]
pub struct Wear {
    lines: u64,
    chunks: Vec<Option<Box<[u32]>>>,
    pub total: u64,
}

impl Wear {
    pub fn new(lines: u64) -> Wear {
        Wear {
            lines,
            chunks: vec![None; (lines as usize).div_ceil(CHUNK_LINES)],
            total: 0,
        }
    }

    #[inline]
    pub fn add(&mut self, line: u64) {
        let (c, i) = (line as usize / CHUNK_LINES, line as usize % CHUNK_LINES);
        let chunk = self.chunks[c].get_or_insert_with(|| vec![0u32; CHUNK_LINES].into());
        chunk[i] = chunk[i].saturating_add(1);
        self.total += 1;
    }

    pub fn lines(&self) -> u64 {
        self.lines
    }

    pub fn get(&self, line: u64) -> u32 {
        let (c, i) = (line as usize / CHUNK_LINES, line as usize % CHUNK_LINES);
        self.chunks[c].as_ref().map_or(0, |ch| ch[i])
    }

    pub fn max(&self) -> u32 {
        self.chunks
            .iter()
            .flatten()
            .flat_map(|c| c.iter().copied())
            .max()
            .unwrap_or(0)
    }

    pub fn mean(&self) -> f64 {
        if self.lines == 0 {
            0.0
        } else {
            self.total as f64 / self.lines as f64
        }
    }

    /// Lines by write count in power-of-two buckets: `(lo, hi, lines)` with `lo ≤ writes ≤ hi`;
    /// the first bucket is the lines never written. Empty buckets are left out.
    pub fn histogram(&self) -> Vec<(u64, u64, u64)> {
        let mut buckets = [0u64; 34];
        let mut counted = 0u64;
        for (ci, chunk) in self.chunks.iter().enumerate() {
            let in_chunk = (self.lines - (ci * CHUNK_LINES) as u64).min(CHUNK_LINES as u64);
            if let Some(ch) = chunk {
                for &w in &ch[..in_chunk as usize] {
                    buckets[(u32::BITS - w.leading_zeros()) as usize] += 1;
                }
                counted += in_chunk;
            }
        }
        buckets[0] += self.lines - counted;
        buckets
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(k, &n)| {
                if k == 0 {
                    (0, 0, n)
                } else {
                    (1u64 << (k - 1), (1u64 << k) - 1, n)
                }
            })
            .collect()
    }
}

/// One bank of a channel (the same bank of all the channel's chips).
#[derive(Clone, Copy, Debug, Default)]
struct Bank {
    free_at: SimTime,
    busy: SimTime,
    /// The program that was reserved last on this bank, while nothing is queued behind it: the
    /// one a read may pause (`u32::MAX`: none).
    live_write: u32,
    live_start: SimTime,
    /// End of the reads run while the live write is suspended.
    paused_until: SimTime,
}

/// Operation counts by kind and access size.
#[derive(Clone, Debug, Default)]
pub struct PcmCounters {
    /// Accesses of a whole line (the common case, counted without a map look-up) …
    line_reads: u64,
    line_writes: u64,
    /// … and of other sizes.
    part_reads: BTreeMap<u64, u64>,
    part_writes: BTreeMap<u64, u64>,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Reads that suspended a program.
    pub pauses: u64,
    /// Start-Gap line moves (each one line read and one line written).
    pub gap_moves: u64,
}

impl PcmCounters {
    fn merged(line: u64, n: u64, parts: &BTreeMap<u64, u64>) -> BTreeMap<u64, u64> {
        let mut m = parts.clone();
        if n > 0 {
            *m.entry(line).or_insert(0) += n;
        }
        m
    }
}

/// The PCM media of a device: banks, buses, wear, Start-Gap, counters.
pub struct PcmMedia {
    timing: PcmTimingPs,
    channels: u64,
    banks: u64,
    line: u64,
    min_access: u64,
    buses: Vec<Timeline>,
    bank: Vec<Bank>,
    pausing: bool,
    suspend: SimTime,
    start_gap: Option<StartGap>,
    pub wear: Wear,
    /// End of each write access still in flight, by id (for write pausing), and its bank.
    write_end: Vec<(SimTime, u32)>,
    free_writes: Vec<u32>,
    pub counters: PcmCounters,
    /// The times of a whole-line read and write, computed once.
    line_read: AccessTime,
    line_write: AccessTime,
}

/// "No write".
const NONE: u32 = u32::MAX;

impl PcmMedia {
    pub fn new(cfg: &PcmConfig) -> PcmMedia {
        let channels = cfg.channels as u64;
        let banks = cfg.banks_per_chip as u64;
        let physical = cfg.physical_lines();
        let start_gap = cfg.endurance.start_gap.then(|| {
            StartGap::new(
                cfg.logical_lines(),
                cfg.endurance.gap_interval.unwrap_or(100),
            )
        });
        let timing = PcmTimingPs::from_config(cfg);
        PcmMedia {
            line_read: timing.read(cfg.line.0),
            line_write: timing.write(cfg.line.0),
            timing,
            channels,
            banks,
            line: cfg.line.0,
            min_access: cfg.min_access.0,
            buses: vec![Timeline::default(); channels as usize],
            bank: vec![
                Bank {
                    live_write: NONE,
                    ..Bank::default()
                };
                (channels * banks) as usize
            ],
            pausing: cfg.write_pausing.enabled,
            suspend: cfg.write_pausing.suspend_latency.0,
            start_gap,
            wear: Wear::new(physical),
            write_end: Vec::new(),
            free_writes: Vec::new(),
            counters: PcmCounters::default(),
        }
    }

    /// Take over what a power cycle leaves of `old`: its wear, its Start-Gap state and its
    /// counters; the banks, buses and writes in flight start afresh.
    pub fn keep_durable(&mut self, old: &PcmMedia) {
        self.wear = old.wear.clone();
        self.start_gap = old.start_gap.clone();
        self.counters = old.counters.clone();
    }

    pub fn timing(&self) -> &PcmTimingPs {
        &self.timing
    }

    pub fn start_gap(&self) -> Option<&StartGap> {
        self.start_gap.as_ref()
    }

    /// Busy time of each channel's banks (the mean over its banks) and of its bus.
    pub fn channel_busy(&self) -> impl Iterator<Item = SimTime> + '_ {
        (0..self.channels as usize).map(|c| {
            let b = &self.bank[c * self.banks as usize..(c + 1) * self.banks as usize];
            let banks = b.iter().map(|b| b.busy.ps()).sum::<u64>() / self.banks;
            SimTime(banks.max(self.buses[c].busy.ps()))
        })
    }

    /// Read accesses by size in bytes.
    pub fn reads_by_size(&self) -> BTreeMap<u64, u64> {
        let c = &self.counters;
        PcmCounters::merged(self.line, c.line_reads, &c.part_reads)
    }

    /// Write accesses by size in bytes.
    pub fn writes_by_size(&self) -> BTreeMap<u64, u64> {
        let c = &self.counters;
        PcmCounters::merged(self.line, c.line_writes, &c.part_writes)
    }

    /// The bank (index into `bank`) and channel of physical line `p`.
    #[inline]
    fn place(&self, p: u64) -> (usize, usize) {
        let (ch, bank) = self.chan_bank(p);
        ((ch * self.banks + bank) as usize, ch as usize)
    }

    #[inline]
    fn chan_bank(&self, p: u64) -> (u64, u64) {
        (p % self.channels, (p / self.channels) % self.banks)
    }

    /// Bytes an access of `[s, e)` within a line moves: whole `min_access` units.
    #[inline]
    fn widen(&self, s: u64, e: u64) -> u64 {
        let m = self.min_access;
        e.div_ceil(m) * m - s / m * m
    }

    #[inline]
    fn physical(&self, la: u64) -> u64 {
        match &self.start_gap {
            Some(sg) => sg.map(la),
            None => la,
        }
    }

    /// Read `len` bytes at logical byte `offset` from `now`; returns when the last byte is in
    /// the controller.
    #[inline]
    pub fn read(&mut self, now: SimTime, offset: u64, len: u64) -> SimTime {
        let mut done = now;
        let line = self.line;
        let end = offset + len;
        let mut s = offset;
        let mut la = offset / line;
        // Without Start-Gap, line la + 1 sits on the next channel (then bank): step the place
        // instead of dividing for every line.
        let (mut ch, mut bank) = self.chan_bank(self.physical(la));
        while s < end {
            let ls = la * line;
            let e = (ls + line).min(end);
            let t = if s == ls && e == ls + line {
                self.counters.line_reads += 1;
                self.counters.bytes_read += line;
                self.line_read
            } else {
                let bytes = self.widen(s - ls, e - ls);
                *self.counters.part_reads.entry(bytes).or_insert(0) += 1;
                self.counters.bytes_read += bytes;
                self.timing.read(bytes)
            };
            let bi = (ch * self.banks + bank) as usize;
            done = done.max(self.read_at(now, bi, ch as usize, t));
            s = e;
            la += 1;
            if self.start_gap.is_some() {
                (ch, bank) = self.chan_bank(self.physical(la));
            } else {
                ch += 1;
                if ch == self.channels {
                    ch = 0;
                    bank += 1;
                    if bank == self.banks {
                        bank = 0;
                    }
                }
            }
        }
        done
    }

    /// A read of `bytes` of physical line `p` (a Start-Gap move's).
    fn read_access(&mut self, now: SimTime, p: u64, bytes: u64) -> SimTime {
        let (bi, ch) = self.place(p);
        let t = self.timing.read(bytes);
        if bytes == self.line {
            self.counters.line_reads += 1;
        } else {
            *self.counters.part_reads.entry(bytes).or_insert(0) += 1;
        }
        self.counters.bytes_read += bytes;
        self.read_at(now, bi, ch, t)
    }

    /// A read taking `t` on bank `bi` of channel `ch`: when its data is in the controller.
    #[inline]
    fn read_at(&mut self, now: SimTime, bi: usize, ch: usize, t: AccessTime) -> SimTime {
        let b = &mut self.bank[bi];
        let array_end =
            if self.pausing && b.live_write != NONE && b.live_start <= now && now < b.free_at {
                // Suspend the running program (once, if it is not suspended already), read, and
                // let the program resume: its end moves later by what the read added.
                let start = if b.paused_until > now {
                    b.paused_until
                } else {
                    self.counters.pauses += 1;
                    now + self.suspend
                };
                let end = start + t.array;
                let added = end - now.max(b.paused_until);
                b.paused_until = end;
                b.free_at += added;
                b.busy += t.array;
                let w = b.live_write as usize;
                self.write_end[w].0 = b.free_at;
                end
            } else {
                let start = b.free_at.max(now);
                let end = start + t.array;
                b.free_at = end;
                b.busy += t.array;
                b.live_write = NONE;
                end
            };
        if t.transfer == SimTime::ZERO {
            return array_end;
        }
        self.buses[ch].reserve(array_end, t.transfer).1
    }

    /// Write `len` bytes at logical byte `offset` from `now`; with write pausing on,
    /// `each(write, end)` is told of every access, by an id [`PcmMedia::write_end`] follows
    /// while a read may still move it (release it with [`PcmMedia::release_write`]).
    /// Returns the end of the last access as it stands now.
    #[inline]
    pub fn write(
        &mut self,
        now: SimTime,
        offset: u64,
        len: u64,
        mut each: impl FnMut(u32, SimTime),
    ) -> SimTime {
        let mut done = now;
        let line = self.line;
        let end = offset + len;
        let mut s = offset;
        while s < end {
            let la = s / line;
            let e = ((la + 1) * line).min(end);
            let bytes = self.widen(s - la * line, e - la * line);
            let p = self.physical(la);
            let (id, t) = self.write_access(now, p, bytes);
            if self.pausing {
                each(id, t);
            } else {
                // Nothing can move its end: the caller needs no id.
                self.release_write(id);
            }
            done = done.max(t);
            // The gap moves after the write that was due: a line read and a line written on
            // the banks of the lines it moves between.
            if let Some((from, to)) = self.start_gap.as_mut().and_then(|sg| sg.on_write()) {
                self.counters.gap_moves += 1;
                let r = self.read_access(now, from, line);
                let (bi, _) = self.place(to);
                let b = &mut self.bank[bi];
                b.free_at = b.free_at.max(r);
                let (id, _) = self.write_access(now, to, line);
                self.release_write(id);
            }
            s = e;
        }
        done
    }

    fn write_access(&mut self, now: SimTime, p: u64, bytes: u64) -> (u32, SimTime) {
        let (bi, ch) = self.place(p);
        let t = if bytes == self.line {
            self.counters.line_writes += 1;
            self.line_write
        } else {
            *self.counters.part_writes.entry(bytes).or_insert(0) += 1;
            self.timing.write(bytes)
        };
        self.counters.bytes_written += bytes;
        self.wear.add(p);
        // The data crosses the bus first (analytic model), then the bank programs it.
        let ready = if t.transfer == SimTime::ZERO {
            now
        } else {
            self.buses[ch].reserve(now, t.transfer).1
        };
        let b = &mut self.bank[bi];
        let start = b.free_at.max(ready);
        let end = start + t.array;
        b.free_at = end;
        b.busy += t.array;
        b.paused_until = SimTime::ZERO;
        let id = match self.free_writes.pop() {
            Some(i) => {
                self.write_end[i as usize] = (end, bi as u32);
                i
            }
            None => {
                self.write_end.push((end, bi as u32));
                (self.write_end.len() - 1) as u32
            }
        };
        let b = &mut self.bank[bi];
        b.live_write = id;
        b.live_start = start;
        (id, end)
    }

    /// When write access `id` ends, as it stands now (a pause may have moved it).
    #[inline]
    pub fn write_end(&self, id: u32) -> SimTime {
        self.write_end[id as usize].0
    }

    /// Write access `id` ended: its id may be reused. A bank whose live write it was has no
    /// live write any more.
    #[inline]
    pub fn release_write(&mut self, id: u32) {
        let b = &mut self.bank[self.write_end[id as usize].1 as usize];
        if b.live_write == id {
            b.live_write = NONE;
        }
        self.free_writes.push(id);
    }

    /// Energy in picojoules of the bytes read and written so far, where the config gives the
    /// figure.
    pub fn energy_pj(
        &self,
        read_pj_per_bit: Option<f64>,
        write_pj_per_bit: Option<f64>,
    ) -> (Option<f64>, Option<f64>) {
        (
            read_pj_per_bit.map(|e| e * 8.0 * self.counters.bytes_read as f64),
            write_pj_per_bit.map(|e| e * 8.0 * self.counters.bytes_written as f64),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SsdConfig;
    use proptest::prelude::*;

    fn us(x: f64) -> SimTime {
        SimTime((x * 1e6).round() as u64)
    }

    fn table7() -> PcmTimingPs {
        PcmTimingPs::Table {
            sizes: vec![128, 256, 512],
            read: vec![us(12.8), us(24.6), us(45.9)],
            write: vec![us(20.7), us(45.9), us(93.5)],
        }
    }

    #[test]
    fn the_table_gives_table_7_at_its_sizes() {
        let t = table7();
        for (size, r, w) in [(128, 12.8, 20.7), (256, 24.6, 45.9), (512, 45.9, 93.5)] {
            assert_eq!(t.read(size).total(), us(r), "read {size}");
            assert_eq!(t.write(size).total(), us(w), "write {size}");
            assert_eq!(t.read(size).transfer, SimTime::ZERO);
        }
    }

    #[test]
    fn the_table_interpolates_between_and_scales_beyond() {
        let t = table7();
        // Half-way between 128 B and 256 B: (12.8 + 24.6) / 2.
        assert_eq!(t.read(192).total(), us(18.7));
        // Between 256 B and 512 B, a quarter of the way: 45.9 + (93.5 - 45.9) / 4.
        assert_eq!(t.write(320).total(), us(57.8));
        // Below the first entry: proportional, 64 B is half of 128 B.
        assert_eq!(t.read(64).total(), us(6.4));
        assert_eq!(t.write(2).total(), SimTime(mul_div(us(20.7).ps(), 2, 128)));
        // Beyond the last: two 512 B accesses and a 128 B one.
        assert_eq!(t.write(1152).total(), us(93.5 * 2.0 + 20.7));
    }

    #[test]
    fn the_analytic_model_by_hand() {
        // 8 chips, 16 B sensed per read, 64 B programmed per round, SET 1 us > RESET 100 ns,
        // bus 100 MB/s (10 ns per byte).
        let t = PcmTimingPs::Analytic {
            chips: 8,
            array_read: SimTime::from_ns(115),
            read_unit: 16,
            round: SimTime::from_us(1),
            write_unit: 64,
            bus_mps_per_byte: 10_000_000,
        };
        // 512 B read: 64 B per chip = 4 senses of 16 B; 512 B over the bus = 5.12 us.
        let r = t.read(512);
        assert_eq!(r.array, SimTime::from_ns(460));
        assert_eq!(r.transfer, SimTime::from_ns(5120));
        // 512 B write: one round per chip; 1 KiB write: two.
        assert_eq!(t.write(512).array, SimTime::from_us(1));
        assert_eq!(t.write(1024).array, SimTime::from_us(2));
        assert_eq!(t.write(1024).transfer, SimTime::from_ns(10240));
        // 2 B: one chip holds it, one sense, one round.
        assert_eq!(t.read(2).array, SimTime::from_ns(115));
        assert_eq!(t.write(2).total(), SimTime::from_ns(1020));
    }

    fn seed002() -> PcmConfig {
        SsdConfig::resolve("seed002-pcm", &[]).unwrap().pcm.unwrap()
    }

    #[test]
    fn a_4k_read_spreads_over_both_channels_of_the_prototype() {
        let mut m = PcmMedia::new(&seed002());
        // 8 lines of 512 B, 4 on each channel, one after another on its bank.
        let done = m.read(SimTime::ZERO, 0, 4096);
        assert_eq!(done, us(45.9 * 4.0));
        assert_eq!(m.reads_by_size().get(&512), Some(&8));
        // A 128 B write inside a line: one 128 B access.
        let end = m.write(SimTime::ZERO, 512 * 9 + 128, 128, |_, _| {});
        assert_eq!(
            end,
            us(45.9 * 4.0 + 20.7),
            "waits behind the reads of its bank"
        );
        assert_eq!(m.writes_by_size().get(&128), Some(&1));
        assert_eq!(m.wear.get(9), 1);
    }

    #[test]
    fn a_read_pauses_a_running_write_when_asked() {
        let mut cfg = seed002();
        cfg.write_pausing.enabled = true;
        cfg.write_pausing.suspend_latency = crate::config::Dur(SimTime::from_us(1));
        let mut m = PcmMedia::new(&cfg);
        let mut id = 0;
        let end = m.write(SimTime::ZERO, 0, 512, |w, _| id = w);
        assert_eq!(end, us(93.5));
        // A read of the same bank 10 us in: suspend 1 us, read 45.9 us.
        let r = m.read(us(10.0), 0, 512);
        assert_eq!(r, us(10.0 + 1.0 + 45.9));
        assert_eq!(m.write_end(id), us(93.5 + 1.0 + 45.9));
        assert_eq!(m.counters.pauses, 1);
        // Without pausing the read waits for the write.
        let mut m = PcmMedia::new(&seed002());
        m.write(SimTime::ZERO, 0, 512, |_, _| {});
        assert_eq!(m.read(us(10.0), 0, 512), us(93.5 + 45.9));
    }

    #[test]
    fn the_histogram_counts_every_line() {
        let mut w = Wear::new(100_000);
        w.add(3);
        w.add(3);
        w.add(3);
        w.add(70_000);
        assert_eq!(w.max(), 3);
        assert_eq!(w.histogram(), vec![(0, 0, 99_998), (1, 1, 1), (2, 3, 1)]);
        assert!((w.mean() - 4.0 / 100_000.0).abs() < 1e-12);
    }

    proptest! {
        /// Start-Gap against a plain oracle: an array of n + 1 physical slots holding logical
        /// line ids, moved exactly as the scheme says. After every write the map must be a
        /// bijection onto the slots other than the gap, and every logical line must be found
        /// where the oracle holds it.
        #[test]
        fn start_gap_never_loses_a_line(n in 1u64..40, interval in 1u32..5, writes in 0usize..400) {
            let mut sg = StartGap::new(n, interval);
            let mut slots: Vec<Option<u64>> = (0..n).map(Some).chain([None]).collect();
            for _ in 0..writes {
                if let Some((from, to)) = sg.on_write() {
                    prop_assert!(slots[to as usize].is_none(), "moved onto data");
                    slots[to as usize] = slots[from as usize].take();
                }
                prop_assert!(slots[sg.gap() as usize].is_none());
                let mut seen = vec![false; n as usize + 1];
                for la in 0..n {
                    let pa = sg.map(la);
                    prop_assert!(pa <= n);
                    prop_assert!(!seen[pa as usize], "two lines on one slot");
                    seen[pa as usize] = true;
                    prop_assert_eq!(slots[pa as usize], Some(la));
                }
            }
        }

        /// Every line of a region is visited by Start-Gap: after n + 1 moves per round, the
        /// rotation has advanced `start`, so the same logical line sits elsewhere.
        #[test]
        fn start_gap_rotates(n in 2u64..30) {
            let mut sg = StartGap::new(n, 1);
            let before = sg.map(0);
            for _ in 0..=n {
                sg.on_write();
            }
            prop_assert_ne!(sg.map(0), before);
        }
    }
}
