//! The FIL's share of garbage collection: the GC tasks the FTL emitted handed to the dies of
//! their planes as jobs, each job cut into operations one destination page at a time when the
//! die takes it (copies, by copyback or through the controller, then the victim's erase),
//! copies of other planes' jobs gathered into one multi-plane operation, and their timing; a
//! block-mapped FTL's merge copy is timed as one GC copy. Apart from `start.rs`, which asks
//! for the next GC operation when GC's queue goes.

use super::Fil;
use crate::config::MultiplaneRule;
use crate::ctrl::datacheck::DataCheck;
use crate::ctrl::die::{GcJob, GcOp, Phase};
use crate::event::Event;
use crate::ftl::{Ftl, Translation, NONE};
use crate::media::nand::Geometry;
use crate::sim::{EventQueue, SimTime};

impl Fil {
    /// Hand the GC work the FTL emitted to the dies of its planes.
    pub(crate) fn drain_gc<M: Translation>(
        &mut self,
        now: SimTime,
        ftl: &mut Ftl<M>,
        check: Option<&mut DataCheck>,
        q: &mut EventQueue<Event>,
    ) {
        if ftl.tasks.is_empty() {
            return;
        }
        // In the order emitted; the vector goes back so its capacity is reused.
        let mut tasks = std::mem::take(&mut ftl.tasks);
        if let Some(dc) = check {
            for &(from, to, _) in tasks.iter().flat_map(|t| t.moves.iter()) {
                dc.moved(from, to, ftl.p2l_at(to), ftl);
            }
        }
        for task in tasks.drain(..) {
            let die = self.geo.die_of_plane(task.plane);
            self.dies[die as usize]
                .gc
                .push_back(GcJob { task, next: 0 });
            self.start_die(now, die, ftl, q);
        }
        ftl.tasks = tasks;
    }

    /// The next GC operation of the die's first job: a copy of the units bound for one
    /// destination page (the GC block fills in order, so consecutive moves share a page), or,
    /// once the copies are cut, the victim's erase. None when the job has nothing left.
    pub(super) fn next_gc_op(&mut self, die: u32) -> Option<GcOp> {
        let job = self.dies[die as usize].gc.front_mut()?;
        if let Some((g, next)) = gc_copy_of(&self.geo, self.copyback, job) {
            job.next = next;
            // The move list was written when the victim was chosen, long ago: fetch ahead.
            crate::sim::mem::prefetch(&job.task.moves, next + 16);
            return Some(g);
        }
        let job = self.dies[die as usize]
            .gc
            .pop_front()
            .expect("job at the front");
        if job.task.block == NONE {
            // A collection that stopped early: copies only.
            return self.next_gc_op(die);
        }
        Some(GcOp {
            erase: true,
            pun: job.task.block,
            src: NONE,
            units: 0,
            src_pages: 0,
            epoch: job.task.epoch,
            plane: job.task.plane,
            copyback: false,
        })
    }

    /// Copies of the die's other planes' GC jobs that join `lead` as one multi-plane
    /// operation, as a controller's firmware pairs GC copies across planes: one per plane, each
    /// the next copy of the first job of its plane (so every plane's copies keep their order),
    /// copied the way `lead` is (by copyback or not), and, under an address rule, at addresses
    /// it lets pair. Taken from their jobs into `die.gc_partners`.
    pub(super) fn gather_gc_partners(&mut self, die: u32, lead: &GcOp) {
        // The die's fields are borrowed apart (its jobs, its partners) so that partners go
        // straight into place: no vector taken out and put back, no job indexed twice.
        let d = &mut self.dies[die as usize];
        d.gc_partners.clear();
        if !self.gc_multiplane || lead.erase {
            return;
        }
        let geo = &self.geo;
        let ppd = geo.planes_per_die;
        let max = ppd as usize;
        // Planes whose first job has been met (by index in the die, folded into 64 bits: on a
        // die of more planes two may share a bit, which only passes a partner up). The die's
        // planes are numbered from `first`, which spares a division per job.
        let first = die * ppd;
        let bit = |plane: u32| 1u64 << ((plane - first) % 64);
        let mut seen = bit(lead.plane);
        let every = if ppd >= 64 { u64::MAX } else { (1 << ppd) - 1 };
        for job in d.gc.iter_mut().skip(1) {
            if d.gc_partners.len() + 1 >= max || seen == every {
                break;
            }
            let plane = job.task.plane;
            if seen & bit(plane) != 0 {
                continue;
            }
            seen |= bit(plane);
            let Some((g, next)) = gc_copy_of(geo, self.copyback, job) else {
                continue;
            };
            let rule_ok = self.rule == MultiplaneRule::Relaxed
                || (geo.multiplane_addresses_ok(self.rule, lead.src, g.src)
                    && geo.multiplane_addresses_ok(self.rule, lead.pun, g.pun));
            if g.copyback == lead.copyback && rule_ok {
                job.next = next;
                d.gc_partners.push(g);
            }
        }
    }

    /// A merge copy from the host-write queue: a GC copy whose operation vector names its
    /// transaction, so that its end is reported (`Step::Programmed`).
    #[cold]
    #[inline(never)]
    pub(super) fn start_copy(
        &mut self,
        now: SimTime,
        die: u32,
        op: Vec<u32>,
        q: &mut EventQueue<Event>,
    ) {
        let t = *self.txns.get(op[0]);
        // Its source is sensed into its plane's register and its data replaced there.
        let src_plane = self.geo.plane_of_block(self.geo.block_of_unit(t.aux));
        self.registers[src_plane as usize] = NONE;
        self.dies[die as usize].op = op;
        let g = GcOp {
            erase: false,
            pun: t.pun,
            src: t.aux,
            units: 1,
            src_pages: 1,
            epoch: t.epoch,
            plane: t.plane,
            copyback: false,
        };
        self.dies[die as usize].gc_partners.clear();
        self.start_gc_op(now, die, g, q);
    }

    /// Start GC operation `g` with the partners in `die.gc_partners` (a multi-plane copy).
    pub(super) fn start_gc_op(
        &mut self,
        now: SimTime,
        die: u32,
        g: GcOp,
        q: &mut EventQueue<Event>,
    ) {
        let ch = self.geo.channel_of_die(die) as usize;
        // A copy senses its source pages and programs through the register, an erase clears
        // the plane: no read finds its page there afterwards.
        self.registers[g.plane as usize] = NONE;
        for m in &self.dies[die as usize].gc_partners {
            self.registers[m.plane as usize] = NONE;
        }
        let timing = &self.nand;
        let (phase, at, busy, array_start) = if g.erase {
            self.counters.array_erase_time += timing.erase;
            let (start, cmd_end) = self.channels[ch].reserve(now, timing.cmd_addr);
            (
                Phase::Erased,
                cmd_end + timing.erase,
                cmd_end + timing.erase - start,
                cmd_end,
            )
        } else {
            // One sense per distinct source page, back to back on the die. A multi-plane copy
            // addresses every member's pages in turn and senses a page of each plane at once:
            // as many senses as the member with the most source pages, each as long as the
            // slowest page type among the members.
            let partners = &self.dies[die as usize].gc_partners;
            let sense = |src: u32| timing.read_time(self.geo.page_in_block(src));
            // The lead first, then the partners (a chained iterator costs a state check per
            // member).
            let (mut pages, mut rounds, mut slowest) =
                (g.src_pages as u64, g.src_pages as u64, sense(g.src));
            for m in partners {
                pages += m.src_pages as u64;
                rounds = rounds.max(m.src_pages as u64);
                slowest = slowest.max(sense(m.src));
            }
            let t_r = slowest * rounds;
            self.counters.array_read_time += t_r;
            let (start, cmd_end) = self.channels[ch].reserve(now, timing.cmd_addr * pages);
            (
                Phase::CopySensed,
                cmd_end + t_r,
                cmd_end + t_r - start,
                cmd_end,
            )
        };
        let d = &mut self.dies[die as usize];
        d.gc_op = g;
        d.phase = phase;
        d.busy += busy;
        d.step_at = at;
        d.array_start = array_start;
        q.push(at, Event::DieStep { die });
    }
}

/// `job`'s next copy and the index of the move after it, or None once its copies are cut.
/// (Always inlined: called for every GC copy and every partner looked at, its call and its
/// result passed through memory cost as much as its work.)
#[inline(always)]
fn gc_copy_of(geo: &Geometry, copyback: bool, job: &GcJob) -> Option<(GcOp, usize)> {
    let upp = geo.units_per_page as usize;
    let moves = &job.task.moves;
    let i = job.next;
    if i >= moves.len() {
        return None;
    }
    let (from, to, epoch) = moves[i];
    let page = geo.page_id(to);
    let mut j = i + 1;
    while j < moves.len() && geo.page_id(moves[j].1) == page && j - i < upp {
        j += 1;
    }
    let mut src_pages = 1u16;
    for k in i + 1..j {
        if (i..k).all(|m| geo.page_id(moves[m].0) != geo.page_id(moves[k].0)) {
            src_pages += 1;
        }
    }
    // Copyback programs the page register as sensed: one source page, and each unit at
    // the offset it had there.
    let copyback = copyback
        && src_pages == 1
        && moves[i..j]
            .iter()
            .all(|&(f, t, _)| f % upp as u32 == t % upp as u32);
    Some((
        GcOp {
            erase: false,
            pun: to,
            src: from,
            units: (j - i) as u16,
            src_pages,
            epoch,
            plane: job.task.plane,
            copyback,
        },
        j,
    ))
}
