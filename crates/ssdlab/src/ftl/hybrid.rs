//! Block-mapped and log-block hybrid FTLs (`ftl.kind = "block" | "bast" | "fast"`): the FTLs
//! of small-DRAM parts (early SSDs, eMMC and SD cards), where the map names whole blocks and a
//! page keeps its offset within its block.
//!
//! - **block**: logical block L lives in one physical block, page o at page o. A write to a page
//!   at or beyond the block's write pointer is programmed in place (NAND pages program in order,
//!   once per erase); any other write copies the block: a new block gets the old one's valid
//!   pages and the new page, in page order, and the old block is erased.
//! - **bast** (block-associative sector translation; Kim et al., IEEE Trans. Consumer
//!   Electronics 48(2), 2002): as block, but an overwrite goes to a log block owned by its
//!   logical block, appended in any order. A full log, or a new log wanted when all are taken
//!   (the oldest is then given up), is merged with its data block.
//! - **fast** (fully-associative sector translation; Lee et al., ACM TECS 6(3), 2007): one
//!   sequential log block takes runs that start at page 0 of a block; all other overwrites go
//!   to random log blocks shared by every logical block. When the random logs are all full, the
//!   oldest is reclaimed by a full merge of each logical block with a valid page in it.
//!
//! Merges, by what they cost:
//! - *switch*: the log holds every page of its block at its own offset: it becomes the data
//!   block; the old data block is erased (one erase);
//! - *partial*: the log holds pages 0..k at their own offsets and nothing else: the rest are
//!   copied into it from the data block, it becomes the data block, the old one is erased;
//! - *full*: a free block gets the latest copy of every page, in order, and the data block and
//!   the log (once it holds nothing valid) are erased.
//!
//! Log blocks are kept per plane, and a logical block's data, log and merge blocks are all on
//! the plane its number picks (`L mod planes`), so a merge's NAND operations run on one die in
//! the order this module lists them. The module is functional: for each host write it returns
//! the NAND operations it implies ([`NandOp`]), in order; the controller times them (see
//! `ctrl::hil`). The map unit is the page.
//!
//! With `[reliability]` ([`Hybrid::start_wear`]) blocks wear as the page FTL's do: some are bad
//! from the factory, a block retires when an erase brings it to its P/E limit, and the drive
//! turns read-only when a plane's good blocks no longer hold its logical blocks, its log blocks
//! and the one a merge writes into (the plane a logical block lives on is fixed, so the worst
//! plane decides).

use super::{Refusal, Wear};
use crate::config::FtlKind;
use crate::error::{says, Error, Invalid, Result};
use crate::media::nand::Geometry;
use crate::sim::Rng;
use std::collections::VecDeque;

const NONE: u32 = u32::MAX;

/// One NAND operation a host write implies, in the order it must run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NandOp {
    /// Read physical unit `from` into the controller and program it at `to`.
    Copy { from: u32, to: u32 },
    /// Program the host's data at `pun`.
    Program { pun: u32 },
    /// Erase block `block`.
    Erase { block: u32 },
}

/// Merges by kind, and what the FTL did besides.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MergeCounts {
    pub switch: u64,
    pub partial: u64,
    pub full: u64,
    /// Pages copied by merges.
    pub pages_copied: u64,
    pub erases: u64,
    pub host_pages_written: u64,
}

/// Which log scheme.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    Block,
    Bast,
    Fast,
}

#[derive(Clone, Debug, Default)]
struct PlaneLogs {
    free: Vec<u32>,
    /// BAST: logical blocks that own a log block, oldest first.
    owners: VecDeque<u32>,
    /// FAST: the sequential log block and its logical block.
    sw: Option<(u32, u32)>,
    /// FAST: random log blocks, oldest first (the last is being filled).
    rw: VecDeque<u32>,
}

pub struct Hybrid {
    scheme: Scheme,
    ppb: u32,
    bpp: u32,
    planes: u32,
    /// Log blocks per plane (FAST: one sequential, the rest random).
    log_blocks: u32,
    /// Per logical page: its physical page, or NONE.
    l2p: Vec<u32>,
    /// Per physical page: the logical page it holds while valid, else NONE.
    owner: Vec<u32>,
    /// Per physical block: the next page a program may go to.
    write_ptr: Vec<u32>,
    erase_count: Vec<u32>,
    /// Per logical block: its data block, or NONE.
    data: Vec<u32>,
    /// BAST: per logical block, its log block, or NONE.
    log: Vec<u32>,
    /// Per physical page: its program has finished.
    programmed: Vec<bool>,
    planes_state: Vec<PlaneLogs>,
    pub counts: MergeCounts,
    /// What steady-state preconditioning reached, if it ran (`hybrid/steady.rs`).
    pub steady_state: Option<HybridSteadyState>,
    /// Wear-out and bad blocks, with `[reliability]`.
    wear: Option<Box<BlockWear>>,
}

/// A block-mapped FTL's wear-out state: the page FTL's figures ([`Wear`]) and what it keeps per
/// block and plane.
#[derive(Clone, Debug)]
struct BlockWear {
    wear: Wear,
    /// Per block: retired (worn out, or bad from the factory), never allocated again.
    bad: Vec<bool>,
    /// Per plane: good blocks now, and when the drive was built.
    plane_good: Vec<u32>,
    plane_start_good: Vec<u32>,
    /// Per plane: the good blocks it needs to take writes (its logical blocks, its log blocks
    /// and one to merge into).
    plane_need: Vec<u32>,
    /// An allocation found no free block: the write that asked is refused.
    exhausted: bool,
}

impl Hybrid {
    /// A hybrid FTL over `geo` with `logical_pages` visible pages and `log_blocks` log blocks per
    /// plane. The map unit must be the page (config validation sees to it).
    pub fn new(geo: &Geometry, kind: FtlKind, logical_pages: u64, log_blocks: u32) -> Hybrid {
        let scheme = match kind {
            FtlKind::Block => Scheme::Block,
            FtlKind::Bast => Scheme::Bast,
            FtlKind::Fast => Scheme::Fast,
            _ => unreachable!("not a block-mapped FTL"),
        };
        let ppb = geo.pages_per_block;
        let bpp = geo.blocks_per_plane;
        let planes = geo.planes();
        let blocks = geo.blocks() as usize;
        let pages = blocks * ppb as usize;
        let lblocks = logical_pages.div_ceil(ppb as u64) as usize;
        Hybrid {
            scheme,
            ppb,
            bpp,
            planes,
            log_blocks: if scheme == Scheme::Block {
                0
            } else {
                log_blocks
            },
            l2p: vec![NONE; lblocks * ppb as usize],
            owner: vec![NONE; pages],
            write_ptr: vec![0; blocks],
            erase_count: vec![0; blocks],
            data: vec![NONE; lblocks],
            log: vec![NONE; lblocks],
            programmed: vec![false; pages],
            planes_state: (0..planes)
                .map(|p| PlaneLogs {
                    // Reversed so that `pop` hands out the lowest block first.
                    free: (p * bpp..(p + 1) * bpp).rev().collect(),
                    ..Default::default()
                })
                .collect(),
            counts: MergeCounts::default(),
            steady_state: None,
            wear: None,
        }
    }

    /// `[reliability]`: blocks retire at `pe_limit` erases, and each is bad from the factory
    /// with probability `factory_bad_block_rate` (drawn from the same random stream, in the
    /// same block order, as the page FTL's, so both FTLs on one seed lose the same blocks).
    pub fn start_wear(&mut self, pe_limit: u32, factory_bad_block_rate: f64, seed: u64) {
        let blocks = self.erase_count.len();
        let mut bad = vec![false; blocks];
        let mut rng = Rng::stream(seed, "nand.factory_bad_blocks");
        if factory_bad_block_rate > 0.0 {
            for b in bad.iter_mut() {
                *b = rng.unit_f64() < factory_bad_block_rate;
            }
            for ps in &mut self.planes_state {
                ps.free.retain(|&b| !bad[b as usize]);
            }
        }
        let lblocks = self.data.len() as u32;
        let plane_need: Vec<u32> = (0..self.planes)
            .map(|p| {
                // Logical block L lives on plane L mod planes.
                let own = lblocks / self.planes + u32::from(p < lblocks % self.planes);
                own + self.log_blocks + 1
            })
            .collect();
        let plane_good: Vec<u32> = (0..self.planes)
            .map(|p| {
                let range = (p * self.bpp) as usize..((p + 1) * self.bpp) as usize;
                bad[range].iter().filter(|&&x| !x).count() as u32
            })
            .collect();
        let factory_bad = bad.iter().filter(|&&x| x).count() as u64;
        let read_only = plane_good.iter().zip(&plane_need).any(|(g, n)| g < n);
        self.wear = Some(Box::new(BlockWear {
            wear: Wear {
                pe_limit,
                factory_bad_blocks: factory_bad,
                retired_blocks: 0,
                good_blocks: blocks as u64 - factory_bad,
                min_good_blocks: plane_need.iter().map(|&n| n as u64).sum(),
                read_only,
            },
            bad,
            plane_start_good: plane_good.clone(),
            plane_good,
            plane_need,
            exhausted: false,
        }));
    }

    /// The wear-out figures, with `[reliability]`.
    pub fn wear(&self) -> Option<&Wear> {
        self.wear.as_deref().map(|w| &w.wear)
    }

    /// The drive refuses writes: a plane wore out.
    pub fn read_only(&self) -> bool {
        self.wear.as_ref().is_some_and(|w| w.wear.read_only)
    }

    /// Mean erase count of the good blocks against the P/E limit, in percent (SMART's
    /// Percentage Used), with `[reliability]`.
    pub fn percentage_used(&self) -> Option<f64> {
        let w = self.wear.as_deref()?;
        let (n, sum) = self
            .erase_count
            .iter()
            .zip(&w.bad)
            .filter(|(_, &bad)| !bad)
            .fold((0u64, 0u64), |(n, s), (&e, _)| (n + 1, s + e as u64));
        if n == 0 {
            return Some(100.0);
        }
        Some(sum as f64 / n as f64 / w.wear.pe_limit as f64 * 100.0)
    }

    /// Good blocks above the read-only level against those the plane started with, in percent,
    /// of the worst plane (SMART's Available Spare; 100 without `[reliability]`).
    pub fn available_spare_percent(&self) -> f64 {
        let Some(w) = self.wear.as_deref() else {
            return 100.0;
        };
        (0..self.planes as usize)
            .map(|p| {
                let start = w.plane_start_good[p].saturating_sub(w.plane_need[p]);
                if start == 0 {
                    return 0.0;
                }
                w.plane_good[p].saturating_sub(w.plane_need[p]) as f64 / start as f64 * 100.0
            })
            .fold(100.0, f64::min)
    }

    /// [`Hybrid::write`] on a drive with `[reliability]`: a worn-out drive refuses it, and so
    /// does a plane with no free block left; the operations listed before the refusal (a
    /// merge that completed) still run, and the page keeps its old data.
    pub fn write_checked(
        &mut self,
        lpn: u64,
        ops: &mut Vec<NandOp>,
    ) -> Result<std::result::Result<(), Refusal>> {
        if self.read_only() {
            return Ok(Err(Refusal::ReadOnly));
        }
        match self.write(lpn, ops) {
            Err(_) if self.wear.as_ref().is_some_and(|w| w.exhausted) => {
                let w = self.wear.as_mut().expect("checked");
                w.exhausted = false;
                w.wear.read_only = true;
                Ok(Err(Refusal::NoSpace))
            }
            r => r.map(Ok),
        }
    }

    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    pub fn lookup(&self, lpn: u64) -> Option<u32> {
        match self.l2p.get(lpn as usize) {
            Some(&p) if p != NONE => Some(p),
            _ => None,
        }
    }

    pub fn is_programmed(&self, pun: u32) -> bool {
        self.programmed[pun as usize]
    }

    /// A program (host or copy) of `pun` finished.
    pub fn mark_programmed(&mut self, pun: u32) {
        self.programmed[pun as usize] = true;
    }

    pub fn erase_counts(&self) -> &[u32] {
        &self.erase_count
    }

    /// Free (erased, unallocated) blocks over every plane.
    pub fn free_blocks_total(&self) -> u64 {
        self.planes_state.iter().map(|p| p.free.len() as u64).sum()
    }

    pub fn trim(&mut self, lpn: u64) {
        if let Some(p) = self.lookup(lpn) {
            self.owner[p as usize] = NONE;
            self.l2p[lpn as usize] = NONE;
        }
    }

    fn plane_of_lblock(&self, lb: u32) -> u32 {
        lb % self.planes
    }

    fn page(&self, block: u32, i: u32) -> u32 {
        block * self.ppb + i
    }

    fn alloc(&mut self, plane: u32) -> Result<u32> {
        self.planes_state[plane as usize].free.pop().ok_or_else(|| {
            if let Some(w) = self.wear.as_mut() {
                // Worn blocks left the plane: the write is refused (`write_checked`).
                w.exhausted = true;
            }
            Error::bad_device(Invalid::unnamed(
                "hybrid FTL",
                says(format!(
                    "plane {plane} has no free block (more log blocks than spare blocks)"
                )),
            ))
        })
    }

    fn erase(&mut self, block: u32, ops: &mut Vec<NandOp>) {
        debug_assert!(
            (0..self.ppb).all(|i| self.owner[self.page(block, i) as usize] == NONE),
            "erasing a block with valid pages"
        );
        self.write_ptr[block as usize] = 0;
        self.erase_count[block as usize] += 1;
        let first = self.page(block, 0) as usize;
        self.programmed[first..first + self.ppb as usize].fill(false);
        self.counts.erases += 1;
        ops.push(NandOp::Erase { block });
        let plane = (block / self.bpp) as usize;
        if let Some(w) = self.wear.as_mut() {
            if self.erase_count[block as usize] >= w.wear.pe_limit {
                // Worn out: it leaves the plane's pool for good.
                w.bad[block as usize] = true;
                w.wear.retired_blocks += 1;
                w.wear.good_blocks -= 1;
                w.plane_good[plane] -= 1;
                if w.plane_good[plane] < w.plane_need[plane] {
                    w.wear.read_only = true;
                }
                return;
            }
        }
        self.planes_state[plane].free.push(block);
    }

    /// `lpn`'s data now lives at page `i` of `block` (which must be at or past its pointer).
    fn place(&mut self, lpn: u64, block: u32, i: u32) -> u32 {
        debug_assert!(i >= self.write_ptr[block as usize] && i < self.ppb);
        let to = self.page(block, i);
        if let Some(old) = self.lookup(lpn) {
            self.owner[old as usize] = NONE;
        }
        self.l2p[lpn as usize] = to;
        self.owner[to as usize] = lpn as u32;
        self.write_ptr[block as usize] = i + 1;
        to
    }

    fn copy(&mut self, lpn: u64, block: u32, i: u32, ops: &mut Vec<NandOp>) {
        let from = self.l2p[lpn as usize];
        let to = self.place(lpn, block, i);
        self.counts.pages_copied += 1;
        ops.push(NandOp::Copy { from, to });
    }

    fn program(&mut self, lpn: u64, block: u32, i: u32, ops: &mut Vec<NandOp>) {
        let pun = self.place(lpn, block, i);
        self.counts.host_pages_written += 1;
        ops.push(NandOp::Program { pun });
    }

    fn valid_pages(&self, block: u32) -> u32 {
        (0..self.ppb)
            .filter(|&i| self.owner[self.page(block, i) as usize] != NONE)
            .count() as u32
    }

    /// Write logical page `lpn`: append the NAND operations it implies to `ops`, in order.
    pub fn write(&mut self, lpn: u64, ops: &mut Vec<NandOp>) -> Result<()> {
        let lb = (lpn / self.ppb as u64) as u32;
        let o = (lpn % self.ppb as u64) as u32;
        let plane = self.plane_of_lblock(lb);
        let d = self.data[lb as usize];
        if d == NONE {
            let d = self.alloc(plane)?;
            self.data[lb as usize] = d;
            self.program(lpn, d, o, ops);
            return Ok(());
        }
        if o >= self.write_ptr[d as usize] {
            // Still erased, and in order: in place.
            self.program(lpn, d, o, ops);
            return Ok(());
        }
        match self.scheme {
            Scheme::Block => self.copy_block(lb, lpn, ops),
            Scheme::Bast => self.write_bast(lb, lpn, ops),
            Scheme::Fast => self.write_fast(lb, o, lpn, ops),
        }
    }

    /// Block mapping: a new block with the old one's pages and the new page, in page order.
    fn copy_block(&mut self, lb: u32, lpn: u64, ops: &mut Vec<NandOp>) -> Result<()> {
        let plane = self.plane_of_lblock(lb);
        let old = self.data[lb as usize];
        let n = self.alloc(plane)?;
        let base = lb as u64 * self.ppb as u64;
        for i in 0..self.ppb {
            let l = base + i as u64;
            if l == lpn {
                self.program(lpn, n, i, ops);
            } else if self.lookup(l).is_some() {
                self.copy(l, n, i, ops);
            }
        }
        self.data[lb as usize] = n;
        self.erase(old, ops);
        self.counts.full += 1;
        Ok(())
    }

    fn write_bast(&mut self, lb: u32, lpn: u64, ops: &mut Vec<NandOp>) -> Result<()> {
        let plane = self.plane_of_lblock(lb);
        let mut g = self.log[lb as usize];
        if g != NONE && self.write_ptr[g as usize] == self.ppb {
            // The log is full: merge it, then start over (the page may now be free in place).
            self.merge(lb, g, ops)?;
            self.log[lb as usize] = NONE;
            let ps = &mut self.planes_state[plane as usize];
            ps.owners.retain(|&x| x != lb);
            return self.write(lpn, ops);
        }
        if g == NONE {
            if self.planes_state[plane as usize].owners.len() as u32 >= self.log_blocks {
                // Every log block is taken: give up the oldest.
                let victim = self.planes_state[plane as usize]
                    .owners
                    .pop_front()
                    .expect("log_blocks ≥ 1");
                let vg = self.log[victim as usize];
                self.merge(victim, vg, ops)?;
                self.log[victim as usize] = NONE;
            }
            g = self.alloc(plane)?;
            self.log[lb as usize] = g;
            self.planes_state[plane as usize].owners.push_back(lb);
        }
        let i = self.write_ptr[g as usize];
        self.program(lpn, g, i, ops);
        Ok(())
    }

    fn write_fast(&mut self, lb: u32, o: u32, lpn: u64, ops: &mut Vec<NandOp>) -> Result<()> {
        let plane = self.plane_of_lblock(lb);
        let sw = self.planes_state[plane as usize].sw;
        if o == 0 {
            // A run from page 0: into a fresh sequential log.
            if let Some((slb, sg)) = sw {
                self.planes_state[plane as usize].sw = None;
                self.merge(slb, sg, ops)?;
            }
            let g = self.alloc(plane)?;
            self.planes_state[plane as usize].sw = Some((lb, g));
            self.program(lpn, g, 0, ops);
            return Ok(());
        }
        if let Some((slb, sg)) = sw {
            if slb == lb && self.write_ptr[sg as usize] == o {
                self.program(lpn, sg, o, ops);
                return Ok(());
            }
        }
        // A random log block with room, else a new one, else reclaim the oldest first.
        let random_logs = self.log_blocks - 1;
        let last = self.planes_state[plane as usize].rw.back().copied();
        let g = match last {
            Some(g) if self.write_ptr[g as usize] < self.ppb => g,
            _ => {
                if self.planes_state[plane as usize].rw.len() as u32 >= random_logs {
                    let victim = self.planes_state[plane as usize]
                        .rw
                        .pop_front()
                        .expect("random logs ≥ 1");
                    self.reclaim_random(victim, ops)?;
                }
                let g = self.alloc(plane)?;
                self.planes_state[plane as usize].rw.push_back(g);
                g
            }
        };
        let i = self.write_ptr[g as usize];
        self.program(lpn, g, i, ops);
        Ok(())
    }

    /// FAST: a full merge of every logical block with a valid page in random log `victim`, in
    /// the order of their first page in it, then the victim's erase.
    fn reclaim_random(&mut self, victim: u32, ops: &mut Vec<NandOp>) -> Result<()> {
        for i in 0..self.ppb {
            let l = self.owner[self.page(victim, i) as usize];
            if l != NONE {
                let lb = l / self.ppb;
                self.full_merge(lb, ops)?;
            }
        }
        self.erase(victim, ops);
        Ok(())
    }

    /// Merge logical block `lb` with its log `g` by the cheapest kind the log allows.
    fn merge(&mut self, lb: u32, g: u32, ops: &mut Vec<NandOp>) -> Result<()> {
        let base = lb as u64 * self.ppb as u64;
        let wp = self.write_ptr[g as usize];
        // Pages 0..wp of the log hold pages 0..wp of the block, all still valid?
        let in_order =
            (0..wp).all(|i| self.owner[self.page(g, i) as usize] as u64 == base + i as u64);
        let old = self.data[lb as usize];
        if in_order && wp == self.ppb {
            self.data[lb as usize] = g;
            if old != NONE {
                self.erase(old, ops);
            }
            self.counts.switch += 1;
            return Ok(());
        }
        if in_order && wp > 0 {
            for i in wp..self.ppb {
                let l = base + i as u64;
                if self.lookup(l).is_some() {
                    self.copy(l, g, i, ops);
                }
            }
            self.data[lb as usize] = g;
            if old != NONE {
                self.erase(old, ops);
            }
            self.counts.partial += 1;
            return Ok(());
        }
        self.full_merge(lb, ops)?;
        if self.valid_pages(g) == 0 {
            self.erase(g, ops);
        }
        Ok(())
    }

    /// The latest copy of every page of `lb`, wherever it is, into a free block in page order;
    /// the old data block is erased, and so is the sequential log if this emptied it.
    fn full_merge(&mut self, lb: u32, ops: &mut Vec<NandOp>) -> Result<()> {
        let plane = self.plane_of_lblock(lb);
        let n = self.alloc(plane)?;
        let base = lb as u64 * self.ppb as u64;
        for i in 0..self.ppb {
            if self.lookup(base + i as u64).is_some() {
                self.copy(base + i as u64, n, i, ops);
            }
        }
        let old = std::mem::replace(&mut self.data[lb as usize], n);
        if old != NONE {
            self.erase(old, ops);
        }
        if let Some((slb, sg)) = self.planes_state[plane as usize].sw {
            if slb == lb {
                self.planes_state[plane as usize].sw = None;
                self.erase(sg, ops);
            }
        }
        self.counts.full += 1;
        Ok(())
    }

    /// Untimed preconditioning: a sequential fill of the logical space, then `overwrite` × the
    /// logical pages written at random (stream `precondition`); counters start again at zero.
    pub fn precondition(&mut self, fill: bool, overwrite: f64, seed: u64) -> Result<()> {
        if let Some(w) = self.wear().filter(|w| w.read_only) {
            if fill || overwrite > 0.0 {
                return Err(Error::bad_config(Invalid::says(
                    "",
                    "precondition.fill",
                    format!(
                        "the drive starts read-only ({} good blocks of {}, {} bad from \
                     the factory; a plane lacks the blocks its logical blocks, log blocks and \
                     merges need), so it cannot be filled: lower \
                     reliability.factory_bad_block_rate or set precondition.fill = \"none\" and \
                     precondition.random_overwrite = 0",
                        w.good_blocks,
                        self.erase_count.len(),
                        w.factory_bad_blocks
                    ),
                )));
            }
        }
        let mut ops = Vec::new();
        let pages = self.l2p.len() as u64;
        let mut write = |h: &mut Hybrid, lpn: u64| -> Result<()> {
            ops.clear();
            match h.write_checked(lpn, &mut ops)? {
                Ok(()) => Ok(()),
                Err(_) => Err(Error::bad_config(Invalid::says(
                    "",
                    "precondition.random_overwrite",
                    format!(
                        "the drive wore out into read-only mode while it was being \
                         preconditioned ({} blocks retired at {} erases): lower \
                         precondition.random_overwrite or raise reliability.pe_limit",
                        h.wear().map_or(0, |w| w.retired_blocks),
                        h.wear().map_or(0, |w| w.pe_limit)
                    ),
                ))),
            }
        };
        if fill {
            for lpn in 0..pages {
                write(self, lpn)?;
            }
        }
        let mut rng = Rng::stream(seed, "precondition");
        for _ in 0..(overwrite * pages as f64) as u64 {
            write(self, rng.below(pages))?;
        }
        self.programmed.iter_mut().for_each(|p| *p = true);
        self.counts = MergeCounts::default();
        Ok(())
    }

    /// Internal consistency: the map and the page owners agree, and no block is both free and
    /// holding valid data. For tests.
    pub fn check(&self) -> std::result::Result<(), String> {
        for (lpn, &p) in self.l2p.iter().enumerate() {
            if p != NONE && self.owner[p as usize] as usize != lpn {
                return Err(format!("lpn {lpn} maps to {p}, which is not its"));
            }
        }
        for (p, &l) in self.owner.iter().enumerate() {
            if l != NONE && self.l2p[l as usize] as usize != p {
                return Err(format!("page {p} claims lpn {l}"));
            }
        }
        for ps in &self.planes_state {
            for &b in &ps.free {
                if self.valid_pages(b) != 0 || self.write_ptr[b as usize] != 0 {
                    return Err(format!("free block {b} is not empty"));
                }
            }
        }
        Ok(())
    }
}

mod steady;
pub use steady::HybridSteadyState;

#[cfg(test)]
mod tests;
