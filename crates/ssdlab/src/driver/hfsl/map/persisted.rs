//! The map as the PCM's map area holds it: each request's entry writes after their data, a
//! halt's, and the rebuild after a power cut from the entries and the data that survived.

use super::nand::{streams, COLD, HOT};
use super::{Entry, HfslCounters, HfslMap, Loc, Plan, RawOp, NONE};
use crate::config::{HfslConfig, MapStore};
use crate::device::HardwareInfo;
use crate::error::{says, Error, Invalid, Result};

/// An address-map entry as the PCM's map area holds it (Table 3's fields less the changed
/// flag, which only the copy in DRAM needs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Persisted {
    pub loc: Loc,
    pub addr: u32,
    pub state: u8,
    pub counter: u32,
}

impl Persisted {
    /// A never-written area: every page unmapped.
    pub const UNMAPPED: Persisted = Persisted {
        loc: Loc::Unmapped,
        addr: NONE,
        state: 0,
        counter: 0,
    };
}

/// What a restart found in the persisted map.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recovered {
    /// Entries that map a page.
    pub mapped: u64,
    /// Entries dropped: they pointed at a page not programmed, or at a place another entry
    /// holds (a stale map, kept in DRAM and last written at an earlier halt).
    pub dropped: u64,
    /// The raw commands the restart runs, in order.
    pub steps: RecoverySteps,
}

/// A restart's raw commands in lists, each run after the one before has completed: erases of
/// written blocks without valid data, then, for each block a die with no free block gives up,
/// the reads of its valid pages, their programs into a block with room, their entries' writes
/// and its erase. Nothing is erased before the entries that pointed into it have moved on, so
/// a cut at any point of a restart loses nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecoverySteps {
    pub lists: Vec<Vec<RawOp>>,
}

impl RecoverySteps {
    /// The lists in the order they run.
    pub fn in_order(&self) -> impl Iterator<Item = &[RawOp]> {
        self.lists.iter().map(|l| &l[..])
    }

    pub fn erases(&self) -> u64 {
        let erase = |op: &&RawOp| matches!(op, RawOp::NandErase { .. });
        self.lists.iter().flatten().filter(erase).count() as u64
    }
}

impl HfslMap {
    /// LPN `lpn`'s entry as the map area holds it once written.
    pub fn persisted(&self, lpn: u32) -> Persisted {
        let e = &self.entries[lpn as usize];
        Persisted {
            loc: e.loc,
            addr: e.addr,
            state: e.state,
            counter: e.counter,
        }
    }

    /// Rebuild the map after a power cut from what survived: the PCM map area's entries
    /// (`persisted`), the data on the media (`pcm_versions`, `nand_versions`, per sub-page, as
    /// `track_versions` keeps them) and what the device's firmware reports — each block's next
    /// page to program (`next_page`) and its P/E count. Entries that point at a page not
    /// programmed or at a place an earlier entry holds are dropped. A die's partly written
    /// block is its open block again; a die with no erased block erases one holding no valid
    /// data (in `plan().erases`). `counters` carry on (they are the run's figures, not HFSL's
    /// state). The Bloom filter starts empty.
    #[allow(clippy::too_many_arguments)]
    pub fn recover(
        cfg: &HfslConfig,
        hw: &HardwareInfo,
        persisted: &[Persisted],
        next_page: &[u32],
        erase_counts: &[u32],
        pcm_versions: Vec<u32>,
        nand_versions: Vec<u32>,
        counters: HfslCounters,
    ) -> Result<(HfslMap, Recovered)> {
        let mut m = HfslMap::new(cfg, hw, persisted.len() as u32)?;
        m.counters = counters;
        m.erase_counts.copy_from_slice(erase_counts);
        m.versions = Some((pcm_versions, nand_versions));
        let ppb = m.pages_per_block;
        let mut found = Recovered::default();
        let mut slot_used = vec![false; m.slots as usize];
        for (lpn, p) in persisted.iter().enumerate() {
            let lpn = lpn as u32;
            let ok = match p.loc {
                Loc::Unmapped => continue,
                Loc::Nand => {
                    let page = p.addr as usize;
                    page < m.p2l.len()
                        && p.addr % ppb < next_page[(p.addr / ppb) as usize]
                        && m.p2l[page] == 0
                }
                Loc::Pcm => {
                    p.addr < m.slots
                        && !slot_used[p.addr as usize]
                        && p.state != 0
                        && p.state & !m.full_state == 0
                }
            };
            if !ok {
                found.dropped += 1;
                continue;
            }
            found.mapped += 1;
            let cache = p.loc == Loc::Pcm && p.addr < m.cache_slots;
            m.entries[lpn as usize] = Entry {
                counter: p.counter,
                state: p.state,
                changed: false,
                loc: p.loc,
                addr: p.addr,
                cache,
                tick: 0,
            };
            if p.loc == Loc::Nand {
                m.p2l[p.addr as usize] = lpn + 1;
                m.valid[(p.addr / ppb) as usize] += 1;
            } else {
                slot_used[p.addr as usize] = true;
                let e = m.entries[lpn as usize];
                let pool = m.pool(cache);
                let k = pool.key(&e, lpn);
                pool.order.insert(k);
            }
        }
        let cache_slots = m.cache_slots;
        m.cache.free = (0..cache_slots)
            .rev()
            .filter(|&s| !slot_used[s as usize])
            .collect();
        m.same.free = (cache_slots..m.slots)
            .rev()
            .filter(|&s| !slot_used[s as usize])
            .collect();
        let per_die = m.valid.len() as u32 / m.dies.len() as u32;
        let mut steps = RecoverySteps::default();
        let mut garbage = Vec::new();
        for d in 0..m.dies.len() {
            let blocks = d as u32 * per_die..(d as u32 + 1) * per_die;
            // A written block without valid data (a cut GC's victim or its moves, a block whose
            // pages were all rewritten) is erased now, to be free again.
            for b in blocks.clone() {
                if next_page[b as usize] > 0 && m.valid[b as usize] == 0 {
                    garbage.push(m.erase(b));
                }
            }
            let free: Vec<u32> = (blocks.clone().rev())
                .filter(|&b| next_page[b as usize] == 0 || m.valid[b as usize] == 0)
                .collect();
            m.dies[d].free = free;
            // Its partly written blocks with valid data are open again, a stream each (which
            // was hot is not known; the Bloom filter starts empty too); a stream without one
            // opens a block when it next writes (or passes its pages to the next die). A
            // partly written block beyond the streams is left as if full.
            let mut partial = blocks
                .clone()
                .filter(|&b| (1..ppb).contains(&next_page[b as usize]) && m.valid[b as usize] > 0);
            for t in 0..2 {
                let die = &mut m.dies[d];
                (die.open[t], die.next_page[t]) = match partial.next() {
                    Some(b) if t < streams(cfg) => (b, next_page[b as usize]),
                    _ => (NONE, ppb),
                };
            }
        }
        steps.lists.push(garbage);
        if m.gc {
            // GC needs a free block to move pages to: a die without one gives a block up.
            for d in 0..m.dies.len() {
                if m.dies[d].free.is_empty() {
                    m.free_a_block_for_recovery(d, &mut steps)?;
                }
            }
        }
        m.free_block.fill(false);
        for die in &m.dies {
            for &b in &die.free {
                m.free_block[b as usize] = true;
            }
        }
        m.plan.clear();
        found.steps = steps;
        Ok((m, found))
    }

    /// A restart's die `d` has no free block: the written block of it with the fewest
    /// valid pages gives them up to the room left in open blocks (its own die's first, then
    /// the others' in allocation order), and is erased once their entries point at the copies.
    /// Reads, programs, entry writes and the erase are four lists of `steps`, so the pages are
    /// always on NAND where a persisted entry says.
    pub(super) fn free_a_block_for_recovery(
        &mut self,
        d: usize,
        steps: &mut RecoverySteps,
    ) -> Result<()> {
        let ppb = self.pages_per_block;
        let per_die = self.valid.len() as u32 / self.dies.len() as u32;
        let blocks = d as u32 * per_die..(d as u32 + 1) * per_die;
        let die = &self.dies[d];
        let victim = blocks
            .filter(|&b| self.valid[b as usize] > 0 && !die.open_with_room(b, ppb))
            .min_by_key(|&b| (self.valid[b as usize], b))
            .ok_or_else(|| {
                Error::bad_device(Invalid::unnamed(
                    "hfsl recovery",
                    says(format!(
                        "die {d} has no free block and no written block to give up"
                    )),
                ))
            })?;
        let room = |m: &HfslMap, (e, t): (usize, usize)| ppb - m.dies[e].next_page[t];
        let others = self.stripe.iter().map(|&e| e as usize).filter(|&e| e != d);
        let targets: Vec<(usize, usize)> = std::iter::once(d)
            .chain(others)
            .flat_map(|e| [(e, COLD), (e, HOT)])
            .collect();
        let total: u32 = targets.iter().map(|&s| room(self, s)).sum();
        if total < self.valid[victim as usize] {
            return Err(Error::bad_device(Invalid::unnamed("hfsl recovery", says(format!(
                "die {d} has no free block, and its emptiest block's {} valid pages do not fit the {total} pages left in open blocks",
                self.valid[victim as usize]
            )))));
        }
        let (mut reads, mut programs) = (Vec::new(), Vec::new());
        let mut lpns = Vec::new();
        let mut target = targets.into_iter().peekable();
        self.plan.clear();
        for page in victim * ppb..(victim + 1) * ppb {
            let Some(lpn) = self.p2l[page as usize].checked_sub(1) else {
                continue;
            };
            reads.push(RawOp::NandRead { page });
            while target.next_if(|&s| room(self, s) == 0).is_some() {}
            let (e, t) = *target.peek().expect("the room was counted");
            self.relocate(page, lpn, e, t);
            self.entries[lpn as usize].changed = true;
            lpns.push(lpn);
        }
        programs.append(&mut self.plan.writes);
        lpns.sort_unstable();
        if self.map_store == MapStore::Pcm {
            self.write_entries(&lpns, false);
        }
        let map = std::mem::take(&mut self.plan.map);
        let erase = vec![self.erase(victim)];
        steps.lists.extend([reads, programs, map, erase]);
        self.dies[d].free.insert(0, victim);
        Ok(())
    }

    /// The map writes of a halt (§2.6.1: "When halts, HFSL writes down the metadata to PCM"):
    /// every entry changed since it was last written. With the map in PCM, none is.
    pub fn halt(&mut self) -> &Plan {
        self.start();
        let changed: Vec<u32> = (0..self.entries.len() as u32)
            .filter(|&l| self.entries[l as usize].changed)
            .collect();
        self.write_entries(&changed, false);
        &self.plan
    }

    /// Entry `lpn` changed; with the map in PCM it is written in this request, after its data
    /// (`late`: data in `late_writes`).
    pub(super) fn touch(&mut self, lpn: u32, late: bool) {
        self.entries[lpn as usize].changed = true;
        if self.map_store == MapStore::Pcm {
            if late {
                self.dirty_late.push(lpn)
            } else {
                self.dirty.push(lpn)
            }
        }
    }

    /// The map writes of this request's changed entries. An entry whose data goes in
    /// `late_writes` is written only in `late_map`: until then the persisted entry keeps its
    /// old place, whose data nothing overwrites before the erases.
    pub(super) fn persist_changed(&mut self) {
        if self.dirty.is_empty() && self.dirty_late.is_empty() {
            return;
        }
        let mut late = std::mem::take(&mut self.dirty_late);
        late.sort_unstable();
        late.dedup();
        let mut early = std::mem::take(&mut self.dirty);
        early.sort_unstable();
        early.dedup();
        early.retain(|l| late.binary_search(l).is_err());
        self.write_entries(&early, false);
        self.write_entries(&late, true);
        early.clear();
        late.clear();
        self.dirty = early;
        self.dirty_late = late;
    }

    /// PCM writes of the entries of `lpns` (sorted), one per run of consecutive LPNs, in
    /// `map` (or `late_map`); the entries are then unchanged.
    pub(super) fn write_entries(&mut self, lpns: &[u32], late: bool) {
        let mut i = 0;
        while i < lpns.len() {
            let first = lpns[i];
            let mut n = 1;
            while i + n < lpns.len() && lpns[i + n] == first + n as u32 {
                n += 1;
            }
            for &l in &lpns[i..i + n] {
                self.entries[l as usize].changed = false;
            }
            let op = RawOp::PcmWrite {
                addr: self.map_base + first as u64 * self.entry_bytes,
                len: n as u64 * self.entry_bytes,
            };
            self.counters.map_writes += 1;
            self.counters.map_bytes_written += n as u64 * self.entry_bytes;
            if late {
                self.plan.late_map.push(op);
            } else {
                self.plan.map.push(op);
            }
            i += n;
        }
    }
}
