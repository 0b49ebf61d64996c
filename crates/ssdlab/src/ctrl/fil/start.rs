//! An idle die's next operation: which of its queues goes (host reads, host writes, GC, by
//! the scheduler and the planes' urgency), the partners that join it as one multi-plane
//! operation, and its timing — command/address cycles and data on the channel, then tR, tPROG
//! or tBERS, with the page registers that spare a sense — and the suspension of a program or
//! erase for waiting reads. Apart from `fil.rs` (the FIL's types and queues) because it is
//! the scheduling of one die, called whenever a die may have become free.

use super::{plane_bit, Fil, FlashOwner, Txn, TxnKind};
use crate::config::{DieScheduler, MultiplaneRule};
use crate::ctrl::die::{Phase, Suspended};
use crate::event::Event;
use crate::ftl::{Urgency, NONE};
use crate::sim::{EventQueue, SimTime, Slab};

impl Fil {
    /// Which of an idle die's queues goes next (0 host reads, 1 writes, 2 GC), and whether the
    /// die serves reads while suspended; None when nothing starts (the die is busy, has no
    /// work, or resumes its suspended operation).
    #[inline(always)]
    fn pick_queue<O: FlashOwner>(
        &mut self,
        now: SimTime,
        die: u32,
        owner: &O,
        q: &mut EventQueue<Event>,
    ) -> Option<(usize, bool)> {
        let d = &self.dies[die as usize];
        debug_assert!(
            d.phase == Phase::Idle,
            "start_die sends only idle dies here"
        );
        let suspended = d.suspended.is_some();
        let queue = if suspended {
            // A suspended die serves the reads it was suspended for, then resumes.
            let s = d.suspended.as_deref().expect("suspended");
            if s.reads_left == 0 || d.queues[0].is_empty() {
                self.resume(now, die, q);
                return None;
            }
            0
        } else {
            let ppd = self.geo.planes_per_die;
            let write_due = self.scheduler != DieScheduler::ReadPriority
                && !d.queues[0].is_empty()
                && self.write_due(now, die);
            let d = &self.dies[die as usize];
            let queue = d.pick(write_due, || {
                // The most urgent plane decides; a hard one ends the search.
                let mut most = Urgency::None;
                for p in die * ppd..(die + 1) * ppd {
                    match owner.plane_urgency(p) {
                        Urgency::Hard => return Urgency::Hard,
                        u => most = most.max(u),
                    }
                }
                most
            })?;
            let d = &mut self.dies[die as usize];
            if queue == 2 {
                d.gc_owed = d.gc_owed.saturating_sub(1);
            } else if queue == 1 {
                d.gc_owed = d.gc_pace(self.geo.units_per_block(), self.geo.units_per_page);
            }
            queue
        };
        Some((queue, suspended))
    }

    /// A read operation's command and sense on `die`: its phase, when its array time ends, the
    /// die's busy time and when the array starts. On a plane whose page register still holds
    /// the member's page, the command selects the data in the register (a column change in
    /// place of the read command: the same command/address cycles) and no sense is needed; the
    /// other planes sense, for the slowest page type among them.
    #[inline(always)]
    fn start_read(
        &mut self,
        now: SimTime,
        die: u32,
        ch: usize,
        op: &[u32],
        head: &Txn,
        planes: u64,
    ) -> (Phase, SimTime, SimTime, SimTime) {
        let timing = &self.nand;
        let cmd_time = timing.cmd_addr;
        let (start, cmd_end) = self.channels[ch].reserve(now, cmd_time * planes);
        let (t_r, hits, ahead) = if op.len() == 1 {
            // Most reads are one unit (`head`): no sets of planes to keep.
            let Txn {
                pun, plane, kind, ..
            } = *head;
            let page = self.geo.page_id(pun);
            let reg = &mut self.registers[plane as usize];
            let ahead = kind == TxnKind::ReadAhead;
            if *reg == page {
                let first = die * self.geo.planes_per_die;
                (SimTime::ZERO, plane_bit(plane - first), ahead)
            } else {
                *reg = page;
                let t_r = timing.read_time(self.geo.page_in_block(pun));
                (t_r, 0, ahead)
            }
        } else {
            self.sense_members(die, op)
        };
        if hits != 0 {
            // (A population count is a loop of shifts and masks on baseline x86-64: most
            // reads hit no register.)
            self.counters.page_register_hits += hits.count_ones() as u64;
        }
        let d = &mut self.dies[die as usize];
        d.hit_planes = hits;
        d.read_ahead = ahead;
        self.counters.array_read_time += t_r;
        (Phase::Sensed, cmd_end + t_r, cmd_end + t_r - start, cmd_end)
    }

    /// Start the die's next operation if it is idle and has work. The calls that find nothing
    /// to do (a busy die, or an idle one whose queues are empty: every operation's end asks)
    /// return here, without the call that picks and starts an operation.
    #[inline(always)]
    pub(crate) fn start_die<O: FlashOwner>(
        &mut self,
        now: SimTime,
        die: u32,
        owner: &O,
        q: &mut EventQueue<Event>,
    ) {
        let d = &self.dies[die as usize];
        if d.phase != Phase::Idle {
            if self.nand.suspend.is_some() && !d.queues[0].is_empty() {
                self.try_suspend(now, die, q);
            }
            return;
        }
        if d.suspended.is_none()
            && d.queues[0].is_empty()
            && d.queues[1].is_empty()
            && d.gc.is_empty()
        {
            return;
        }
        self.start_idle_die(now, die, owner, q);
    }

    /// An idle die with work (queued, or a suspended operation to resume): start its next
    /// operation.
    #[inline(never)]
    fn start_idle_die<O: FlashOwner>(
        &mut self,
        now: SimTime,
        die: u32,
        owner: &O,
        q: &mut EventQueue<Event>,
    ) {
        let Some((queue, suspended)) = self.pick_queue(now, die, owner, q) else {
            return;
        };
        if queue == 2 {
            match self.next_gc_op(die) {
                Some(g) => {
                    self.gather_gc_partners(die, &g);
                    let d = &mut self.dies[die as usize];
                    d.gc_owed = d.gc_owed.saturating_sub(d.gc_partners.len() as u32);
                    self.start_gc_op(now, die, g, q)
                }
                None => self.start_die(now, die, owner, q),
            }
            return;
        }
        let d = &mut self.dies[die as usize];
        let head = d.queues[queue].pop_front().expect("queue not empty");
        let mut op = std::mem::take(&mut d.op);
        op.clear();
        op.push(head);
        // The head's fields, read once: most operations are the head alone.
        let h = *self.txns.get(head);
        let kind = h.kind;
        if kind == TxnKind::Copy {
            return self.start_copy(now, die, op, q);
        }
        // An erase runs alone (multi-plane erase is not modelled); without multi-plane
        // operations only units of one page join. Checked here: a call for nothing to gather
        // cost a tenth of the rest of an operation's start.
        if (self.multiplane || self.geo.units_per_page > 1) && kind != TxnKind::Erase {
            if self.rule == MultiplaneRule::Relaxed {
                self.gather_partners::<false>(die, queue, &mut op);
            } else {
                self.gather_partners::<true>(die, queue, &mut op);
            }
        }
        let ch = self.geo.channel_of_die(die) as usize;
        let timing = &self.nand;
        let cmd_time = timing.cmd_addr;
        let planes = distinct_planes(&op, &self.txns);
        let (phase, at, busy, array_start) = match kind {
            TxnKind::HostRead
            | TxnKind::RmwRead
            | TxnKind::MergeRead
            | TxnKind::MapRead
            | TxnKind::MapUpdateRead
            | TxnKind::ReadAhead => self.start_read(now, die, ch, &op, &h, planes),
            TxnKind::HostWrite | TxnKind::Flush | TxnKind::MapWrite => {
                // The data goes through the planes' registers: what a read left there is gone.
                // Command/address once per plane, then every unit's data, in one bus tenure.
                let (data, t_prog) = if op.len() == 1 {
                    // Most programs are one unit: its kept bus time, its page's tPROG.
                    debug_assert_eq!(timing.unit_xfer(), timing.bus_time(self.geo.unit_bytes));
                    self.registers[h.plane as usize] = NONE;
                    let t_prog = timing.program_time(self.geo.page_in_block(h.pun));
                    (timing.unit_xfer(), t_prog)
                } else {
                    let mut t_prog = SimTime::ZERO;
                    for &t in &op {
                        let Txn { plane, pun, .. } = *self.txns.get(t);
                        self.registers[plane as usize] = NONE;
                        t_prog = t_prog.max(timing.program_time(self.geo.page_in_block(pun)));
                    }
                    let data = timing.bus_time(self.geo.unit_bytes * op.len() as u64);
                    (data, t_prog)
                };
                let (start, end) = self.channels[ch].reserve(now, cmd_time * planes + data);
                self.counters.array_program_time += t_prog;
                (Phase::Programmed, end + t_prog, end + t_prog - start, end)
            }
            TxnKind::Erase => {
                self.registers[h.plane as usize] = NONE;
                self.counters.block_erases += 1;
                self.counters.array_erase_time += timing.erase;
                let (start, cmd_end) = self.channels[ch].reserve(now, cmd_time);
                let end = cmd_end + timing.erase;
                (Phase::BlockErased, end, end - start, cmd_end)
            }
            TxnKind::Copy => unreachable!("merge copies start in start_copy"),
        };
        if op.len() > 1 {
            self.counters.multiplane_ops += 1;
        }
        // Branch-free: a driver's erase counts as a single-plane operation here and is taken
        // back out in `erases_started`.
        self.counters.multi_plane_ops += (planes > 1) as u64;
        self.counters.array_ops += 1;
        let d = &mut self.dies[die as usize];
        if suspended {
            let s = d.suspended.as_deref_mut().expect("suspended");
            s.reads_left = s.reads_left.saturating_sub(op.len() as u32);
        }
        d.op = op;
        d.phase = phase;
        d.busy += busy;
        d.step_at = at;
        d.array_start = array_start;
        q.push(at, Event::DieStep { die });
    }

    /// A read waits at `die`, which is busy: suspend its program or erase if the die allows it
    /// (`nand.suspend`, at most `max_suspends_per_op` times per operation) and the operation
    /// would still be running once suspended. The suspend command goes on the channel once the
    /// operation's array time has begun (a program's data is in); the array stops at the end of
    /// the command, keeping the time it has left, and the die serves reads after the suspend
    /// latency.
    #[cold]
    #[inline(never)]
    fn try_suspend(&mut self, now: SimTime, die: u32, q: &mut EventQueue<Event>) {
        let Some(sp) = self.nand.suspend else { return };
        let ch = self.geo.channel_of_die(die) as usize;
        let cmd = self.nand.cmd_addr;
        let d = &self.dies[die as usize];
        let Some(program) = d.phase.suspendable() else {
            return;
        };
        if d.op_suspends >= sp.max_per_op {
            return;
        }
        let latency = if program { sp.program } else { sp.erase };
        let issue = now.max(d.array_start);
        let stops = issue.max(self.channels[ch].free_at) + cmd;
        if stops + latency >= d.step_at {
            // It ends before the die could take the read.
            return;
        }
        let (_, stops) = self.channels[ch].reserve(issue, cmd);
        let d = &mut self.dies[die as usize];
        let remaining = d.step_at - stops;
        if d.next_stale == SimTime::MAX {
            d.next_stale = d.step_at;
        } else {
            d.stale.push_back(d.step_at);
        }
        // The array time not yet run moves to the resume; the suspend latency is busy time.
        d.busy = d.busy - remaining + latency;
        let op = std::mem::take(&mut d.op);
        d.suspended = Some(Box::new(Suspended {
            phase: d.phase,
            remaining,
            op,
            suspends: d.op_suspends + 1,
            reads_left: d.queues[0].len() as u32,
        }));
        d.phase = Phase::Suspending;
        d.step_at = stops + latency;
        q.push(d.step_at, Event::DieStep { die });
        if program {
            self.counters.program_suspensions += 1;
        } else {
            self.counters.erase_suspensions += 1;
        }
    }

    /// The reads a suspension was for are done: the resume command goes on the channel (after
    /// the reads' data transfers) and the operation runs its remaining array time after the
    /// resume latency.
    #[cold]
    #[inline(never)]
    fn resume(&mut self, now: SimTime, die: u32, q: &mut EventQueue<Event>) {
        let sp = self
            .nand
            .suspend
            .expect("a suspended die has suspension on");
        let ch = self.geo.channel_of_die(die) as usize;
        let (start, cmd_end) = self.channels[ch].reserve(now, self.nand.cmd_addr);
        // The reads served meanwhile used the page registers; the resumed operation's data
        // is in them again.
        let ppd = self.geo.planes_per_die as usize;
        self.registers[die as usize * ppd..(die as usize + 1) * ppd].fill(NONE);
        let d = &mut self.dies[die as usize];
        let s = *d.suspended.take().expect("suspended");
        let running = cmd_end + sp.resume;
        let end = running + s.remaining;
        d.phase = s.phase;
        d.op = s.op;
        d.op_suspends = s.suspends;
        d.array_start = running;
        d.step_at = end;
        d.busy += end - start;
        q.push(end, Event::DieStep { die });
    }

    /// Move queued transactions of the same kind that can join the head's operation: one page
    /// per plane (units of the same page share it).
    /// `RULED`: an address rule other than the relaxed one applies (a separate instance keeps
    /// the relaxed scan as lean as it was).
    /// Asked only where partners may join (`start_die`: not for an erase, nor with one unit
    /// per page and no multi-plane operations).
    fn gather_partners<const RULED: bool>(&mut self, die: u32, queue: usize, op: &mut Vec<u32>) {
        let kind = self.txns.get(op[0]).kind;
        let window = self.window;
        let rule = self.rule;
        let max_members = (self.geo.planes_per_die * self.geo.units_per_page) as usize;
        let mut i = 0;
        while i < window.min(self.dies[die as usize].queues[queue].len()) && op.len() < max_members
        {
            let cand = self.dies[die as usize].queues[queue][i];
            let c = self.txns.get(cand);
            // Nothing overtakes a driver's erase: programs after it go to the erased block. Nor
            // a merge's copy: the pages after it in its block come after it.
            if c.kind == TxnKind::Erase || c.kind == TxnKind::Copy {
                break;
            }
            let same_kind = c.kind.is_program() == kind.is_program();
            let page = self.geo.page_id(c.pun);
            // Against every member: the same page, or (multi-plane) a page of another plane
            // whose address the rule lets pair with the member's.
            let fits = same_kind
                && op.iter().all(|&m| {
                    let mt = self.txns.get(m);
                    self.geo.page_id(mt.pun) == page
                        || (mt.plane != c.plane
                            && self.multiplane
                            && (!RULED || self.geo.multiplane_addresses_ok(rule, mt.pun, c.pun)))
                })
                // A plane contributes one page: units on a plane already used must share its page.
                && op.iter().filter(|&&m| self.txns.get(m).plane == c.plane).all(|&m| self.geo.page_id(self.txns.get(m).pun) == page);
            if fits {
                self.dies[die as usize].queues[queue].remove(i);
                op.push(cand);
            } else {
                if RULED && same_kind && self.refused_by_rule(op, c) {
                    self.counters.partners_refused += 1;
                }
                i += 1;
            }
        }
    }

    /// Whether candidate `c`, which could not join `op`, is on a plane `op` does not use yet and
    /// would have joined under the relaxed rule: the address rule alone refused it.
    #[cold]
    #[inline(never)]
    fn refused_by_rule(&self, op: &[u32], c: &Txn) -> bool {
        // On a plane of its own, the relaxed rule takes any candidate.
        self.multiplane && op.iter().all(|&m| self.txns.get(m).plane != c.plane)
    }

    /// The registers a read of several members finds its pages in: (the tR of the planes that
    /// sense, the planes that hit, whether any member is a read-ahead); the registers of the
    /// planes that sense take their pages.
    fn sense_members(&mut self, die: u32, op: &[u32]) -> (SimTime, u64, bool) {
        let first = die * self.geo.planes_per_die;
        let (mut t_r, mut hits, mut misses) = (SimTime::ZERO, 0u64, 0u64);
        let mut ahead = false;
        for &t in op {
            let Txn {
                pun, plane, kind, ..
            } = *self.txns.get(t);
            ahead |= kind == TxnKind::ReadAhead;
            let page = self.geo.page_id(pun);
            let bit = plane_bit(plane - first);
            let reg = &mut self.registers[plane as usize];
            // A plane whose first member missed senses for the others too.
            if *reg == page && misses & bit == 0 {
                hits |= bit;
            } else {
                misses |= bit;
                *reg = page;
                let timing = &self.nand;
                t_r = t_r.max(timing.read_time(self.geo.page_in_block(pun)));
            }
        }
        (t_r, hits, ahead)
    }
}

#[inline(always)]
fn distinct_planes(op: &[u32], txns: &Slab<Txn>) -> u64 {
    if op.len() == 1 {
        // Most operations are one unit.
        return 1;
    }
    let mut seen = 0u64;
    let mut n = 0;
    for &t in op {
        let bit = 1u64 << (txns.get(t).plane % 64);
        if seen & bit == 0 {
            seen |= bit;
            n += 1;
        }
    }
    n
}
