//! The page FTL's part of a saved drive state (docs/state.md): what it keeps from one run to
//! the next — the map and the reverse map, which units are programmed, the closed-form layout
//! a fill or steady-state preconditioning left, every block's record (wear included), the free
//! lists and open blocks, the stripe cursors, the write clock, GC's random stream, wear-out
//! and the write streams. Not kept: counters (the result speaks of the timed run, as after
//! preconditioning), and what only lives while commands are in flight (GC tasks, programs not
//! finished), which a drive at rest has none of.
//!
//! Loading writes into the tables of a fresh FTL built from the config, so their lengths are
//! the config's; every index the file gives is checked against them as it is read.

use super::fill::AS_FILLED;
use super::state_io::{StateReader, StateWriter};
use super::steady::SteadyState;
use super::{BlockState, Ftl, Streams, Translation, GC_STREAM, NONE, UNMAPPED};
use crate::error::{says, Error, Invalid, Result};
use crate::sim::Rng;
use std::io::{Read, Write};

const STATES: [BlockState; 5] = [
    BlockState::Free,
    BlockState::Open,
    BlockState::Full,
    BlockState::Victim,
    BlockState::Bad,
];

/// Bytes of a block's record in the file.
const BLOCK_RECORD: usize = 25;

fn state_code(s: BlockState) -> u8 {
    STATES
        .iter()
        .position(|&x| x == s)
        .expect("every state listed") as u8
}

impl<M: Translation + ?Sized> Ftl<M> {
    /// Why this FTL cannot be saved now (None: it can): work in flight.
    pub fn unsaveable(&self) -> Option<String> {
        let programs = self
            .blocks
            .iter()
            .map(|b| b.overwrites_in_flight as u64)
            .sum::<u64>();
        let gc = self
            .planes
            .iter()
            .map(|p| p.gc_inflight as u64)
            .sum::<u64>();
        let tasks = self.tasks.len();
        if tasks > 0 || gc > 0 || programs > 0 {
            return Some(format!(
                "the drive is not at rest ({gc} garbage collections under way, {tasks} not yet \
                 issued, {programs} host programs in flight): save it once it is idle"
            ));
        }
        None
    }

    /// Whether the programmed units are exactly each block's units below its write pointer
    /// (its prefix, then bits up to the write pointer and none past it).
    fn programmed_as_written(&self) -> bool {
        let upb = self.geo.units_per_block() as u64;
        self.blocks.iter().enumerate().all(|(b, blk)| {
            let base = b as u64 * upb;
            let (prefix, wptr) = (self.programmed_prefix(b), blk.write_ptr as u64);
            super::bits_all(&self.programmed, base + prefix, base + wptr, true)
                && super::bits_all(&self.programmed, base + prefix.max(wptr), base + upb, false)
        })
    }

    /// Write this FTL's state (see the module's text). The caller checked
    /// [`Ftl::unsaveable`].
    pub fn save_state<W: Write>(&self, w: &mut StateWriter<W>) -> std::io::Result<()> {
        w.sparse(&self.l2p)?;
        w.sparse(&self.p2l)?;
        self.fill.save_state(w)?;
        // Block records, BLOCK_RECORD bytes each: valid, erase count, epoch, state, write
        // pointer, last write.
        w.u64(self.blocks.len() as u64)?;
        for b in &self.blocks {
            let mut rec = [0u8; BLOCK_RECORD];
            rec[0..4].copy_from_slice(&b.valid.to_le_bytes());
            rec[4..8].copy_from_slice(&b.erase_count.to_le_bytes());
            rec[8..12].copy_from_slice(&b.epoch.to_le_bytes());
            rec[12] = state_code(b.state);
            rec[13..17].copy_from_slice(&b.write_ptr.to_le_bytes());
            rec[17..25].copy_from_slice(&b.last_write.to_le_bytes());
            w.bytes(&rec)?;
        }
        // At rest a block's programmed units are those below its write pointer (erases clear
        // the bits, every program issued has finished): then the bits are left out and
        // rebuilt on loading, which spares a 1 TiB drive's file 32 MiB.
        if self.programmed_as_written() {
            w.u8(1)?;
        } else {
            w.u8(0)?;
            w.sparse(&self.programmed_bits())?;
        }
        for p in &self.planes {
            w.array(&p.free.to_vec())?;
            w.u32(p.host_open)?;
            w.u32(p.gc_open)?;
        }
        w.u64(self.cursor as u64)?;
        w.u64(self.clock)?;
        for s in self.rng.state() {
            w.u64(s)?;
        }
        match &self.wear {
            None => w.u8(0)?,
            Some(x) => {
                w.u8(1)?;
                for v in [x.factory_bad_blocks, x.retired_blocks, x.good_blocks] {
                    w.u64(v)?;
                }
                w.u8(x.read_only as u8)?;
            }
        }
        match self.streams.as_deref() {
            None => w.u8(0)?,
            Some(st) => {
                w.u8(1)?;
                w.array(&st.open)?;
                w.array(&st.gc_open)?;
                w.array(&st.cursor.iter().map(|&c| c as u64).collect::<Vec<_>>())?;
                w.sparse(&st.lpn_stream)?;
                w.array(&st.block_stream)?;
                w.sparse(&st.stamp)?;
            }
        }
        match &self.steady_state {
            None => w.u8(0),
            Some(s) => {
                w.u8(1)?;
                w.f64(s.waf)?;
                w.u8(s.converged as u8)?;
                w.f64(s.overwrite)
            }
        }
    }

    /// Read the state [`Ftl::save_state`] wrote into this fresh FTL (built from the config the
    /// caller checked the file against). On an error the FTL is only fit to be dropped.
    pub fn load_state<R: Read>(&mut self, r: &mut StateReader<R>) -> Result<()> {
        // Fresh: nothing written (blocks free, or bad from the factory).
        let fresh = self.clock == 0
            && self.cursor == 0
            && self
                .blocks
                .iter()
                .all(|b| matches!(b.state, BlockState::Free | BlockState::Bad));
        if !fresh {
            return Err(Error::bad_device(Invalid::unnamed(
                "drive state",
                says("it loads into a fresh drive only (a caller's bug)"),
            )));
        }
        let units = self.p2l.len() as u64;
        let lpns = self.l2p.len() as u64;
        // Entries are stored `value ^ AS_FILLED`; a stored zero reads as the fill's.
        let pun_ok = |raw: u32| {
            let v = raw ^ AS_FILLED;
            raw == 0 || v == UNMAPPED || (v as u64) < units
        };
        let lpn_ok = |raw: u32| {
            let v = raw ^ AS_FILLED;
            raw == 0 || v == UNMAPPED || (v as u64) < lpns
        };
        r.sparse_into("map", &mut self.l2p, pun_ok)?;
        r.sparse_into("reverse map", &mut self.p2l, lpn_ok)?;
        let nblocks = self.blocks.len();
        self.fill.load_state(r, self.data_units, units)?;
        let upb = self.geo.units_per_block();
        let blocks = &mut self.blocks;
        r.records("block records", nblocks, BLOCK_RECORD, |i, rec| {
            let u32_at = |k: usize| u32::from_le_bytes(rec[k..k + 4].try_into().expect("4 bytes"));
            let (valid, wptr) = (u32_at(0), u32_at(13));
            let Some(&state) = STATES.get(rec[12] as usize) else {
                return Err(format!(
                    "block {i}: state {} is none of the 5 a block has",
                    rec[12]
                ));
            };
            if wptr > upb || valid > wptr {
                return Err(format!(
                    "block {i}: {valid} valid units and write pointer {wptr}, expected valid ≤ \
                     write pointer ≤ {upb} (units per block)"
                ));
            }
            blocks[i] = super::Block {
                valid,
                erase_count: u32_at(4),
                epoch: u32_at(8),
                state,
                write_ptr: wptr,
                last_write: u64::from_le_bytes(rec[17..25].try_into().expect("8 bytes")),
                overwrites_in_flight: 0,
                programmed_below: 0,
            };
            Ok(())
        })?;
        if r.u8("programmed units")? != 0 {
            // At rest: each block's units below its write pointer, said by its prefix (no
            // bits: loading takes no time, and the table no memory, for the units saved).
            for b in 0..nblocks {
                self.programmed_to_write_ptr(b);
            }
        } else {
            r.sparse_into("programmed units", &mut self.programmed, |_| true)?;
        }
        let bpp = self.geo.blocks_per_plane;
        let mut listed = vec![false; nblocks];
        for p in 0..self.planes.len() {
            let first = p as u32 * bpp;
            let in_plane = |b: u32| b == NONE || (first..first + bpp).contains(&b);
            let free = r.array_upto::<u32>("free list", bpp as usize)?;
            for &b in &free {
                if !in_plane(b) || b == NONE || listed[b as usize] {
                    return Err(r.error(&format!(
                        "plane {p}'s free list: block {b} is not one of the plane's {bpp} \
                         blocks from {first}, or is listed twice"
                    )));
                }
                if self.blocks[b as usize].state != BlockState::Free {
                    return Err(r.error(&format!("plane {p}'s free list: block {b} is not free")));
                }
                listed[b as usize] = true;
            }
            let host_open = r.u32("open block")?;
            let gc_open = r.u32("GC block")?;
            if !in_plane(host_open) || !in_plane(gc_open) {
                return Err(r.error(&format!(
                    "plane {p}: open blocks {host_open} and {gc_open}, expected blocks of the \
                     plane (from {first}, {bpp} of them) or none"
                )));
            }
            for b in [host_open, gc_open] {
                open_block_ok(&self.blocks, b, upb, r)?;
            }
            let plane = &mut self.planes[p];
            plane.free = super::FreeList::listed(free);
            plane.host_open = host_open;
            plane.gc_open = gc_open;
            plane.gc_inflight = 0;
        }
        self.cursor = r.below("stripe cursor", self.stripe.len() as u64)? as usize;
        self.clock = r.u64("write clock")?;
        let mut s = [0u64; 4];
        for w in &mut s {
            *w = r.u64("GC random stream")?;
        }
        self.rng = Rng::from_state(s);
        let has_wear = r.u8("wear-out")? != 0;
        if has_wear != self.wear.is_some() {
            return Err(r.error("wear-out: the file and the config disagree on [reliability]"));
        }
        if let Some(x) = self.wear.as_mut() {
            x.factory_bad_blocks = r.u64("factory bad blocks")?;
            x.retired_blocks = r.u64("retired blocks")?;
            x.good_blocks = r.u64("good blocks")?;
            x.read_only = r.u8("read-only")? != 0;
        }
        let has_streams = r.u8("write streams")? != 0;
        if has_streams != self.streams.is_some() {
            return Err(r.error("write streams: the file and the config disagree on ftl.streams"));
        }
        if let Some(st) = self.streams.as_deref_mut() {
            load_streams(st, r, self.planes.len() as u32, bpp, self.stripe.len())?;
            for &b in st.open.iter().chain(&st.gc_open) {
                open_block_ok(&self.blocks, b, upb, r)?;
            }
        }
        self.steady_state = match r.u8("steady state")? {
            0 => None,
            _ => Some(SteadyState {
                waf: r.f64("steady-state WAF")?,
                converged: r.u8("steady state converged")? != 0,
                overwrite: r.f64("steady-state overwrite")?,
            }),
        };
        Ok(())
    }
}

/// An open block the file names ([`NONE`], or one still open with room: a block that fills
/// is closed at once, so an open one always has room for the next write).
fn open_block_ok<R: Read>(
    blocks: &[super::Block],
    b: u32,
    upb: u32,
    r: &StateReader<R>,
) -> Result<()> {
    if b != NONE {
        let blk = &blocks[b as usize];
        if blk.state != BlockState::Open || blk.write_ptr >= upb {
            return Err(r.error(&format!(
                "open block {b}: {:?} with write pointer {}, expected an open block with room",
                blk.state, blk.write_ptr
            )));
        }
    }
    Ok(())
}

fn load_streams<R: Read>(
    st: &mut Streams,
    r: &mut StateReader<R>,
    planes: u32,
    bpp: u32,
    stripe: usize,
) -> Result<()> {
    let k = st.count;
    let per_plane = k as usize - 1;
    let open_ok = |v: &[u32], what: &str, r: &StateReader<R>| -> Result<()> {
        for (i, &b) in v.iter().enumerate() {
            let plane = (i / per_plane.max(1)) as u32;
            if b != NONE && !(plane * bpp..(plane + 1) * bpp).contains(&b) {
                return Err(r.error(&format!("{what}: block {b} is not plane {plane}'s")));
            }
        }
        Ok(())
    };
    let open = r.array::<u32>("streams' open blocks", st.open.len())?;
    open_ok(&open, "streams' open blocks", r)?;
    let gc_open = r.array::<u32>("streams' GC blocks", st.gc_open.len())?;
    open_ok(&gc_open, "streams' GC blocks", r)?;
    let cursor = r.array::<u64>("streams' cursors", st.cursor.len())?;
    if let Some(c) = cursor.iter().find(|&&c| c >= stripe as u64) {
        return Err(r.error(&format!(
            "streams' cursors: got {c}, expected below {stripe} (the stripe's planes)"
        )));
    }
    debug_assert_eq!(open.len(), planes as usize * per_plane);
    st.open = open;
    st.gc_open = gc_open;
    st.cursor = cursor.into_iter().map(|c| c as usize).collect();
    r.sparse_into("streams of the logical units", &mut st.lpn_stream, |s| {
        (s as u32) < k
    })?;
    let blocks = r.array::<u8>("streams of the blocks", st.block_stream.len())?;
    if let Some(s) = blocks.iter().find(|&&s| s != GC_STREAM && s as u32 >= k) {
        return Err(r.error(&format!(
            "streams of the blocks: got {s}, expected below {k} (ftl.streams) or GC's"
        )));
    }
    st.block_stream = blocks;
    r.sparse_into("write stamps", &mut st.stamp, |_| true)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ftl::tests::tiny;

    fn round_trip(ftl: &Ftl, cfg: &crate::config::SsdConfig) -> Ftl {
        let mut w = StateWriter::new(Vec::new());
        ftl.save_state(&mut w).unwrap();
        let bytes = w.finish().unwrap();
        let mut back = Ftl::new(cfg, 1);
        let mut r = StateReader::new(&bytes[..], "t");
        back.load_state(&mut r).unwrap();
        r.finish().unwrap();
        back
    }

    fn same(a: &Ftl, b: &Ftl) {
        let n = a.logical_units();
        assert!((0..n).all(|l| a.lookup(l) == b.lookup(l)));
        assert_eq!(a.programmed_bits(), b.programmed_bits());
        assert_eq!(a.clock, b.clock);
        assert_eq!(a.cursor, b.cursor);
        let rec = |f: &Ftl| -> Vec<_> {
            f.blocks
                .iter()
                .map(|b| {
                    (
                        b.valid,
                        b.erase_count,
                        b.epoch,
                        b.state,
                        b.write_ptr,
                        b.last_write,
                    )
                })
                .collect()
        };
        assert_eq!(rec(a), rec(b));
        let planes = |f: &Ftl| -> Vec<_> {
            f.planes
                .iter()
                .map(|p| (p.free.to_vec(), p.host_open, p.gc_open))
                .collect()
        };
        assert_eq!(planes(a), planes(b));
        b.check().unwrap();
    }

    /// Programmed bits rebuilt from the write pointers, and written out when they are not
    /// those (a unit whose program did not finish).
    #[test]
    fn the_programmed_bits_come_back_either_way() {
        let cfg = tiny("greedy", 0);
        let mut ftl = Ftl::new(&cfg, 1);
        ftl.precondition(true, 1.5, 1).unwrap();
        assert!(ftl.programmed_as_written());
        same(&ftl, &round_trip(&ftl, &cfg));
        // Unit 3's block, its prefix turned into bits, with unit 3's bit cleared.
        let pun = ftl.lookup(3).unwrap();
        let upb = ftl.geo.units_per_block() as u64;
        let b = ftl.geo.block_of_unit(pun) as usize;
        let prefix = ftl.programmed_prefix(b);
        ftl.blocks[b].programmed_below = 0;
        crate::ftl::set_bits(&mut ftl.programmed, b as u64 * upb, prefix);
        assert!(ftl.programmed_as_written());
        ftl.programmed[(pun / 64) as usize] &= !(1 << (pun % 64));
        assert!(!ftl.programmed_as_written());
        same(&ftl, &round_trip(&ftl, &cfg));
    }
}
