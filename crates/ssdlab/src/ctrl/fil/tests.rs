//! The FIL alone, on small-tlc: 4 channels × 2 dies × 2 planes, 128 blocks of 32 pages of
//! 16 KiB per plane (4 map units of 4 KiB per page); tR 50 µs on LSB pages (page 0), tPROG
//! 500 µs on LSB; 100 ns of command/address cycles per plane; 800 MT/s × 8 bits, so a 4 KiB
//! unit takes 5.12 µs on the channel; ECC 3 µs.

use super::*;
use crate::config::SsdConfig;

struct Rig {
    fil: Fil,
    ftl: Ftl,
    q: EventQueue<Event>,
    geo: Geometry,
    /// Where a test that steps time by hand has got to.
    clock: SimTime,
}

fn rig() -> Rig {
    rig_with(&[])
}

fn rig_with(overrides: &[&str]) -> Rig {
    let ov: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let cfg = SsdConfig::resolve("small-tlc", &ov).unwrap();
    let geo = Geometry::from_config(&cfg);
    Rig {
        fil: Fil::new(&cfg, &geo),
        ftl: Ftl::new(&cfg, 1),
        q: EventQueue::new(),
        geo,
        clock: SimTime::ZERO,
    }
}

impl Rig {
    /// Unit 0 of page `page` of block `block` of global plane `plane`.
    fn pun(&self, plane: u32, block: u32, page: u32) -> u32 {
        let b = plane * self.geo.blocks_per_plane + block;
        b * self.geo.units_per_block() + page * self.geo.units_per_page
    }

    fn txn(&mut self, kind: TxnKind, plane: u32, block: u32, page: u32) -> u32 {
        let pun = self.pun(plane, block, page);
        self.fil.add_txn(Txn {
            kind,
            cmd: 0,
            pun,
            plane,
            host_bytes: 4096,
            epoch: 0,
            aux: 0,
            overwrote: crate::ftl::NONE,
        })
    }

    fn enqueue(&mut self, now: SimTime, t: u32, queue: Queue) {
        self.fil.enqueue(now, t, queue, &self.ftl, &mut self.q);
    }

    /// The next die step: its time, die and what it ended; the operation is finished (the
    /// die takes its next one) before returning.
    fn step(&mut self) -> (SimTime, u32, Vec<u32>, bool) {
        let (now, ev) = self.q.pop().expect("a die step is pending");
        let Event::DieStep { die } = ev else {
            panic!("expected a die step, got {ev:?}")
        };
        match self
            .fil
            .die_step(now, die, &mut self.ftl, None, &mut self.q)
            .unwrap()
        {
            Step::Sensed(op) => {
                let members = op.clone();
                let mut last = now;
                for _ in &op {
                    last = self.fil.read_out(now, die).0;
                }
                self.fil
                    .finish_read(now, die, last, op, &self.ftl, &mut self.q);
                (now, die, members, false)
            }
            Step::Programmed(op) | Step::Erased(op) => {
                let members = op.clone();
                self.fil.finish_op(now, die, op, &self.ftl, &mut self.q);
                (now, die, members, true)
            }
            Step::Done => (now, die, Vec::new(), false),
        }
    }
}

const CMD: u64 = 100; // ns of command/address cycles per plane
const TR_LSB: u64 = 50_000;
const TPROG_LSB: u64 = 500_000;

#[test]
fn a_read_takes_its_command_cycles_and_tr_then_its_transfer_and_ecc() {
    let mut r = rig();
    let t = r.txn(TxnKind::HostRead, 0, 3, 0);
    r.enqueue(SimTime::ZERO, t, Queue::HostRead);
    let (now, die, op, programmed) = r.step();
    assert_eq!((die, op, programmed), (0, vec![t], false));
    assert_eq!(now, SimTime::from_ns(CMD + TR_LSB));
    // The unit's transfer (5.12 µs) and decode (3 µs) follow; the channel was free.
    let mut r2 = rig();
    let t2 = r2.txn(TxnKind::HostRead, 0, 3, 0);
    r2.enqueue(SimTime::ZERO, t2, Queue::HostRead);
    let (now, ev) = r2.q.pop().unwrap();
    assert!(matches!(ev, Event::DieStep { die: 0 }));
    r2.fil
        .die_step(now, 0, &mut r2.ftl, None, &mut r2.q)
        .unwrap();
    let (out, ready) = r2.fil.read_out(now, 0);
    assert_eq!(out, now + SimTime::from_ns(5120));
    assert_eq!(ready, out + SimTime::from_us(3));
    assert_eq!(r2.fil.counters.nand_pages_read, 1);
}

#[test]
fn reads_on_two_planes_of_a_die_become_one_operation_with_one_tr() {
    let mut r = rig();
    // Keep die 0 busy so that the next two wait together.
    let first = r.txn(TxnKind::HostRead, 0, 1, 0);
    r.enqueue(SimTime::ZERO, first, Queue::HostRead);
    let a = r.txn(TxnKind::HostRead, 0, 5, 0);
    let b = r.txn(TxnKind::HostRead, 1, 9, 0);
    r.enqueue(SimTime::ZERO, a, Queue::HostRead);
    r.enqueue(SimTime::ZERO, b, Queue::HostRead);
    let (t1, _, op1, _) = r.step();
    assert_eq!(op1, vec![first]);
    let (t2, _, op2, _) = r.step();
    assert_eq!(op2, vec![a, b], "one multi-plane read");
    // The first read's transfer holds the channel until t1 + 5.12 µs; then one command per
    // plane and a single tR.
    let start = t1 + SimTime::from_ns(5120);
    assert_eq!(t2, start + SimTime::from_ns(2 * CMD + TR_LSB));
    assert_eq!(r.fil.counters.multiplane_ops, 1);
    assert_eq!(r.fil.counters.nand_pages_read, 3);
}

/// A read whose page is still in its plane's page register costs its command cycles and
/// no tR; another read of the plane, a program or an erase on it replaces the register's
/// data, and registers are per plane.
#[test]
fn a_read_of_the_page_its_plane_just_sensed_takes_no_tr() {
    // Each read starts on an idle die and an idle channel, 10 ms after the last operation;
    // returns the time to the end of its sense, in ns.
    fn idle_read(r: &mut Rig, plane: u32, block: u32, page: u32, unit: u32) -> u64 {
        let t = r.txn(TxnKind::HostRead, plane, block, page);
        r.fil.txns.get_mut(t).pun += unit;
        r.clock += SimTime::from_us(10_000);
        let now = r.clock;
        r.enqueue(now, t, Queue::HostRead);
        let (end, _, op, _) = r.step();
        assert_eq!(op, vec![t]);
        (end - now).ps() / 1000
    }
    let mut r = rig();
    assert_eq!(idle_read(&mut r, 0, 3, 0, 0), CMD + TR_LSB);
    // Unit 1 of the same page: in the register.
    assert_eq!(idle_read(&mut r, 0, 3, 0, 1), CMD);
    assert_eq!(r.fil.counters.page_register_hits, 1);
    assert_eq!(r.fil.counters.nand_pages_read, 1);
    // A read on the die's other plane leaves plane 0's register alone.
    assert_eq!(idle_read(&mut r, 1, 7, 0, 0), CMD + TR_LSB);
    assert_eq!(idle_read(&mut r, 0, 3, 0, 2), CMD);
    // Another page of plane 0 replaces it.
    assert_eq!(idle_read(&mut r, 0, 4, 0, 0), CMD + TR_LSB);
    assert_eq!(idle_read(&mut r, 0, 3, 0, 0), CMD + TR_LSB);
    // A program on the plane goes through the register.
    let w = r.txn(TxnKind::HostWrite, 0, 9, 0);
    r.clock += SimTime::from_us(10_000);
    r.enqueue(r.clock, w, Queue::HostWrite);
    assert!(r.step().3, "programmed");
    assert_eq!(idle_read(&mut r, 0, 3, 0, 1), CMD + TR_LSB);
    assert_eq!(r.fil.counters.page_register_hits, 2);
    assert_eq!(r.fil.counters.nand_pages_read, 5);
}

/// Which of a queued write and a queued read a die takes first under each scheduler: the
/// write reached the die before the read.
#[test]
fn the_scheduler_decides_between_a_waiting_write_and_a_waiting_read() {
    let first_after_busy = |sets: &[&str], read_at_us: u64| {
        let mut r = rig_with(sets);
        let busy = r.txn(TxnKind::HostRead, 0, 1, 0);
        r.enqueue(SimTime::ZERO, busy, Queue::HostRead);
        let w = r.txn(TxnKind::HostWrite, 0, 9, 0);
        r.enqueue(SimTime::from_us(1), w, Queue::HostWrite);
        let rd = r.txn(TxnKind::HostRead, 1, 5, 0);
        r.enqueue(SimTime::from_us(read_at_us), rd, Queue::HostRead);
        assert_eq!(r.step().2, vec![busy]);
        let next = r.step().2;
        (next == vec![w], next == vec![rd])
    };
    // Read priority: the read, whenever it came.
    assert_eq!(first_after_busy(&[], 2), (false, true));
    // FIFO: the write came first.
    assert_eq!(
        first_after_busy(&["controller.scheduler=\"fifo\""], 2),
        (true, false)
    );
    // Deadline 20 us: the write has waited ~49 us when the die is free: due.
    let deadline = |bound: &str| {
        vec![
            "controller.scheduler=\"deadline\"".to_string(),
            format!("controller.write_deadline=\"{bound}\""),
        ]
    };
    let d20 = deadline("20us");
    let d20: Vec<&str> = d20.iter().map(|s| s.as_str()).collect();
    assert_eq!(first_after_busy(&d20, 2), (true, false));
    // Deadline 1 ms: not yet due, the read goes first.
    let d1 = deadline("1ms");
    let d1: Vec<&str> = d1.iter().map(|s| s.as_str()).collect();
    assert_eq!(first_after_busy(&d1, 2), (false, true));
}

/// Four units of one page queued behind a busy die: one operation, one sense; queued again
/// after it, they find the page in the register.
#[test]
fn units_of_one_page_share_one_sense_and_then_the_register() {
    let mut r = rig();
    let busy = r.txn(TxnKind::HostRead, 0, 1, 0);
    r.enqueue(SimTime::ZERO, busy, Queue::HostRead);
    let units: Vec<u32> = (0..4)
        .map(|u| {
            let t = r.txn(TxnKind::HostRead, 0, 5, 0);
            r.fil.txns.get_mut(t).pun += u;
            t
        })
        .collect();
    r.enqueue(SimTime::ZERO, units[0], Queue::HostRead);
    r.enqueue(SimTime::ZERO, units[1], Queue::HostRead);
    r.step();
    let (t2, _, op, _) = r.step();
    assert_eq!(op, vec![units[0], units[1]]);
    // Queued together (an idle die would otherwise start the first alone).
    r.fil
        .enqueue_all(t2, &units[2..], Queue::HostRead, &r.ftl, &mut r.q);
    let (t3, _, op, _) = r.step();
    assert_eq!(op, vec![units[2], units[3]]);
    // After the two units' transfers (5.12 µs each): one command, no tR.
    assert_eq!(t3, t2 + SimTime::from_ns(2 * 5120 + CMD));
    assert_eq!(r.fil.counters.nand_pages_read, 2);
    assert_eq!(r.fil.counters.page_register_hits, 1);
}

#[test]
fn two_pages_of_one_plane_do_not_pair() {
    let mut r = rig();
    let first = r.txn(TxnKind::HostRead, 0, 1, 0);
    r.enqueue(SimTime::ZERO, first, Queue::HostRead);
    let a = r.txn(TxnKind::HostRead, 0, 5, 0);
    let b = r.txn(TxnKind::HostRead, 0, 6, 0);
    r.enqueue(SimTime::ZERO, a, Queue::HostRead);
    r.enqueue(SimTime::ZERO, b, Queue::HostRead);
    r.step();
    assert_eq!(r.step().2, vec![a]);
    assert_eq!(r.step().2, vec![b]);
    assert_eq!(r.fil.counters.multiplane_ops, 0);
}

#[test]
fn partners_are_searched_only_within_the_window() {
    let cfg = SsdConfig::resolve("small-tlc", &["controller.multiplane_window=1".into()]).unwrap();
    let geo = Geometry::from_config(&cfg);
    let mut r = Rig {
        fil: Fil::new(&cfg, &geo),
        ftl: Ftl::new(&cfg, 1),
        q: EventQueue::new(),
        geo,
        clock: SimTime::ZERO,
    };
    let first = r.txn(TxnKind::HostRead, 0, 1, 0);
    r.enqueue(SimTime::ZERO, first, Queue::HostRead);
    let a = r.txn(TxnKind::HostRead, 0, 5, 0);
    let same_plane = r.txn(TxnKind::HostRead, 0, 6, 0);
    let other_plane = r.txn(TxnKind::HostRead, 1, 9, 0);
    for t in [a, same_plane, other_plane] {
        r.enqueue(SimTime::ZERO, t, Queue::HostRead);
    }
    r.step();
    // With a window of one entry the partner on plane 1, third in the queue, is not seen.
    assert_eq!(r.step().2, vec![a]);
}

#[test]
fn a_merge_copy_keeps_its_place_and_is_timed_as_a_gc_copy() {
    let mut r = rig();
    // Die 0 busy with a read while a program, a merge copy and a program queue behind it.
    let first = r.txn(TxnKind::HostRead, 0, 1, 0);
    r.enqueue(SimTime::ZERO, first, Queue::HostRead);
    let a = r.txn(TxnKind::HostWrite, 0, 2, 0);
    let c = r.txn(TxnKind::Copy, 1, 3, 0);
    r.fil.txns.get_mut(c).aux = r.pun(1, 4, 0);
    let b = r.txn(TxnKind::HostWrite, 1, 3, 1);
    for t in [a, c, b] {
        r.enqueue(SimTime::ZERO, t, Queue::HostWrite);
    }
    r.step();
    // Program b, on plane 1, would pair with a but must not pass the copy before it.
    let (t_a, _, op, _) = r.step();
    assert_eq!(op, vec![a]);
    // The copy: command and tR of the source, the unit out (5.12 µs), ECC (3 µs), command
    // and the unit in, tPROG; its end is reported like a program's.
    let (sensed, _, op, _) = r.step();
    assert_eq!((sensed, op), (t_a + SimTime::from_ns(CMD + TR_LSB), vec![]));
    let (t_c, _, op, programmed) = r.step();
    assert!(programmed);
    assert_eq!(op, vec![c]);
    assert_eq!(
        t_c,
        t_a + SimTime::from_ns(CMD + TR_LSB + 5120 + 3000 + CMD + 5120 + TPROG_LSB)
    );
    assert_eq!(r.step().2, vec![b]);
    assert_eq!(r.fil.counters.nand_pages_written, 3);
}

/// GC copies of one destination page: (time sensed, time programmed), with the moves
/// `(source unit, destination unit)` in plane 0.
fn gc_copy(overrides: &[&str], moves: &[(u32, u32)]) -> (Rig, SimTime, SimTime) {
    let mut r = rig_with(overrides);
    r.ftl.tasks.push(crate::ftl::GcTask {
        plane: 0,
        block: NONE,
        epoch: 0,
        moves: moves.iter().map(|&(f, t)| (f, t, 0)).collect(),
        wear_level: false,
    });
    r.fil.drain_gc(SimTime::ZERO, &mut r.ftl, None, &mut r.q);
    let sensed = r.step().0;
    let programmed = r.step().0;
    (r, sensed, programmed)
}

/// Copyback: a page whose units all come from one source page, at the offsets they had,
/// is programmed from the die's register (its command, then tPROG); any other page goes
/// out, through ECC and back in (4 units of 5.12 µs each way here).
#[test]
fn copyback_skips_the_transfers_only_where_the_page_register_fits() {
    let r = rig();
    let (src, dst) = (r.pun(0, 4, 0), r.pun(0, 3, 0));
    let whole: Vec<(u32, u32)> = (0..4).map(|u| (src + u, dst + u)).collect();
    let sense = SimTime::from_ns(CMD + TR_LSB);
    let (r, sensed, programmed) = gc_copy(&["ftl.gc.copyback=true"], &whole);
    assert_eq!(sensed, sense);
    assert_eq!(programmed, sense + SimTime::from_ns(CMD + TPROG_LSB));
    assert_eq!(r.fil.counters.copyback_pages, 1);
    // The same page without copyback.
    let (r, _, programmed) = gc_copy(&[], &whole);
    let through = SimTime::from_ns(4 * 5120 + 3000 + CMD + 4 * 5120 + TPROG_LSB);
    assert_eq!(programmed, sense + through);
    assert_eq!(r.fil.counters.copyback_pages, 0);
    // Units that would change offset in the page cannot stay in the register.
    let shifted: Vec<(u32, u32)> = (1..4).map(|u| (src + u, dst + u - 1)).collect();
    let (r, _, programmed) = gc_copy(&["ftl.gc.copyback=true"], &shifted);
    let through = SimTime::from_ns(3 * 5120 + 3000 + CMD + 3 * 5120 + TPROG_LSB);
    assert_eq!(programmed, sense + through);
    assert_eq!(r.fil.counters.copyback_pages, 0);
    // Nor can units from two source pages (two senses, then the transfers).
    let two = [(src, dst), (r.pun(0, 4, 1) + 1, dst + 1)];
    let (r, sensed, _) = gc_copy(&["ftl.gc.copyback=true"], &two);
    assert_eq!(sensed, SimTime::from_ns(2 * (CMD + TR_LSB)));
    assert_eq!(r.fil.counters.copyback_pages, 0);
}

#[test]
fn host_reads_go_before_host_writes() {
    let mut r = rig();
    let w1 = r.txn(TxnKind::HostWrite, 0, 2, 0);
    r.enqueue(SimTime::ZERO, w1, Queue::HostWrite);
    let w2 = r.txn(TxnKind::HostWrite, 0, 3, 0);
    let rd = r.txn(TxnKind::HostRead, 1, 4, 0);
    r.enqueue(SimTime::ZERO, w2, Queue::HostWrite);
    r.enqueue(SimTime::ZERO, rd, Queue::HostRead);
    let (t1, _, op1, programmed) = r.step();
    assert!(programmed);
    assert_eq!(op1, vec![w1]);
    // Command cycles and 4 KiB of data on the channel, then tPROG.
    assert_eq!(t1, SimTime::from_ns(CMD + 5120 + TPROG_LSB));
    let (_, _, op2, programmed) = r.step();
    assert!(
        !programmed,
        "the read, queued after the second write, goes first"
    );
    assert_eq!(op2, vec![rd]);
    assert_eq!(r.step().2, vec![w2]);
}

#[test]
fn dies_of_one_channel_share_its_bus() {
    let mut r = rig();
    // Die 0 (planes 0-1) and die 1 (planes 2-3) are both on channel 0.
    let a = r.txn(TxnKind::HostRead, 0, 1, 0);
    let b = r.txn(TxnKind::HostRead, 2, 1, 0);
    r.enqueue(SimTime::ZERO, a, Queue::HostRead);
    r.enqueue(SimTime::ZERO, b, Queue::HostRead);
    let (t1, d1, _, _) = r.step();
    let (t2, d2, _, _) = r.step();
    assert_eq!((d1, d2), (0, 1));
    assert_eq!(t1, SimTime::from_ns(CMD + TR_LSB));
    // Die 1's command waited for die 0's on the shared bus.
    assert_eq!(t2, SimTime::from_ns(2 * CMD + TR_LSB));
    // A die on another channel does not wait.
    let c = r.txn(TxnKind::HostRead, 4, 1, 0);
    let now = r.q.now();
    r.enqueue(now, c, Queue::HostRead);
    let (t3, d3, _, _) = r.step();
    assert_eq!(d3, 2);
    assert_eq!(t3, now + SimTime::from_ns(CMD + TR_LSB));
}

/// Die 0 busy with a first read; then reads `a` on plane 0 and `b` on plane 1 wait
/// together and the die gathers when the first read is over. Returns the second operation.
fn gather_two(overrides: &[&str], a: (u32, u32), b: (u32, u32)) -> (Rig, Vec<u32>, [u32; 2]) {
    let mut r = rig_with(overrides);
    let first = r.txn(TxnKind::HostRead, 0, 1, 0);
    r.enqueue(SimTime::ZERO, first, Queue::HostRead);
    let ta = r.txn(TxnKind::HostRead, 0, a.0, a.1);
    let tb = r.txn(TxnKind::HostRead, 1, b.0, b.1);
    r.enqueue(SimTime::ZERO, ta, Queue::HostRead);
    r.enqueue(SimTime::ZERO, tb, Queue::HostRead);
    r.step();
    let op = r.step().2;
    (r, op, [ta, tb])
}

#[test]
fn the_relaxed_rule_pairs_pages_of_different_page_addresses() {
    let (r, op, [a, b]) = gather_two(&[], (5, 0), (9, 1));
    assert_eq!(op, vec![a, b]);
    let c = &r.fil.counters;
    assert_eq!((c.single_plane_ops(), c.multi_plane_ops), (1, 1));
    assert_eq!(c.partners_refused, 0);
}

#[test]
fn the_onfi_rule_refuses_another_page_address_and_counts_it() {
    let onfi = ["nand.multiplane_rule=\"onfi\""];
    // Page 0 (LSB) of block 5 with page 1 (CSB) of block 9: no pair.
    let (mut r, op, [a, b]) = gather_two(&onfi, (5, 0), (9, 1));
    assert_eq!(op, vec![a]);
    assert_eq!(r.step().2, vec![b]);
    let c = &r.fil.counters;
    assert_eq!((c.single_plane_ops(), c.multi_plane_ops), (3, 0));
    assert_eq!(c.partners_refused, 1);
    // Page 3 of blocks 5 and 9: a pair (the block addresses may differ).
    let (r, op, [a, b]) = gather_two(&onfi, (5, 3), (9, 3));
    assert_eq!(op, vec![a, b]);
    assert_eq!(r.fil.counters.multi_plane_ops, 1);
    assert_eq!(r.fil.counters.partners_refused, 0);
}

#[test]
fn the_same_block_rule_also_wants_the_block_address() {
    let strict = ["nand.multiplane_rule=\"onfi-same-block\""];
    let (r, op, [a, _]) = gather_two(&strict, (5, 3), (9, 3));
    assert_eq!(op, vec![a]);
    assert_eq!(r.fil.counters.partners_refused, 1);
    let (_, op, [a, b]) = gather_two(&strict, (7, 3), (7, 3));
    assert_eq!(op, vec![a, b]);
}

#[test]
fn units_of_one_page_merge_under_every_rule() {
    for rule in ["relaxed", "onfi", "onfi-same-block"] {
        let mut r = rig_with(&[&format!("nand.multiplane_rule=\"{rule}\"")]);
        let first = r.txn(TxnKind::HostRead, 0, 1, 0);
        r.enqueue(SimTime::ZERO, first, Queue::HostRead);
        let a = r.txn(TxnKind::HostRead, 0, 5, 2);
        let pun = r.fil.txns.get(a).pun;
        let b = r.fil.add_txn(Txn {
            pun: pun + 1,
            ..*r.fil.txns.get(a)
        });
        r.enqueue(SimTime::ZERO, a, Queue::HostRead);
        r.enqueue(SimTime::ZERO, b, Queue::HostRead);
        r.step();
        assert_eq!(r.step().2, vec![a, b], "{rule}");
        // One plane: a single-plane operation of two units.
        assert_eq!(r.fil.counters.multiplane_ops, 1);
        assert_eq!(r.fil.counters.single_plane_ops(), 2);
    }
}

// Suspension. small-tlc: tBERS 3500 µs, tR 50 µs and tPROG 500 µs on LSB pages, 100 ns of
// command cycles, 5.12 µs per 4 KiB unit on the channel, ECC 3 µs.

const SUSPEND: [&str; 4] = [
    "nand.suspend=true",
    "nand.erase_suspend_latency=\"20us\"",
    "nand.program_suspend_latency=\"15us\"",
    "nand.resume_latency=\"10us\"",
];

#[test]
fn a_read_arriving_mid_erase_suspends_it_and_the_erase_ends_later_by_the_read() {
    let mut r = rig_with(&SUSPEND);
    let erase = r.txn(TxnKind::Erase, 0, 4, 0);
    r.enqueue(SimTime::ZERO, erase, Queue::HostWrite);
    let erase_end = SimTime::from_ns(CMD + 3_500_000);
    let arrival = SimTime::from_us(1000);
    let read = r.txn(TxnKind::HostRead, 1, 7, 0);
    r.enqueue(arrival, read, Queue::HostRead);
    assert_eq!(r.fil.counters.erase_suspensions, 1);
    // The suspend command (100 ns), the suspend latency (20 µs): the die takes the read.
    let (t, _, op, _) = r.step();
    assert_eq!((t, op), (arrival + SimTime::from_ns(CMD + 20_000), vec![]));
    // The read's command and tR; then its transfer and decode.
    let (sensed, ev) = r.q.pop().unwrap();
    assert!(matches!(ev, Event::DieStep { die: 0 }));
    assert_eq!(sensed, t + SimTime::from_ns(CMD + TR_LSB));
    let Step::Sensed(op) = r
        .fil
        .die_step(sensed, 0, &mut r.ftl, None, &mut r.q)
        .unwrap()
    else {
        panic!("the read is sensed")
    };
    let (out, ready) = r.fil.read_out(sensed, 0);
    assert_eq!(
        ready,
        arrival + SimTime::from_ns(CMD + 20_000 + CMD + TR_LSB + 5120 + 3000),
        "t_arrival + suspend + tR + transfer (+ command cycles and ECC)"
    );
    r.fil.finish_read(sensed, 0, out, op, &r.ftl, &mut r.q);
    // The erase's first end fires and is ignored.
    let (t, _, op, _) = r.step();
    assert_eq!((t, op), (erase_end, vec![]));
    // It resumes after the read's transfer (resume command, 10 µs) with the 2500 µs left.
    let (t, _, op, erased) = r.step();
    assert!(erased);
    assert_eq!(op, vec![erase]);
    let delay = SimTime::from_ns(20_000 + CMD + TR_LSB + 5120 + CMD + 10_000);
    assert_eq!(t, erase_end + delay);
    assert!(r.q.pop().is_none());
    // Busy: the erase and the read, plus the suspend latency, resume command and latency.
    let busy = r.fil.die_busy().next().unwrap();
    let expect = SimTime::from_ns(CMD + 3_500_000)
        + SimTime::from_ns(CMD + TR_LSB + 5120)
        + SimTime::from_ns(20_000 + CMD + 10_000);
    assert_eq!(busy, expect);
}

#[test]
fn a_suspension_needs_the_array_time_started_and_time_left() {
    // A read that arrives during a program's data transfer suspends it once its tPROG has
    // begun; one that arrives too near the end does not.
    let mut r = rig_with(&SUSPEND);
    let w = r.txn(TxnKind::HostWrite, 0, 2, 0);
    r.enqueue(SimTime::ZERO, w, Queue::HostWrite);
    let data_in = SimTime::from_ns(CMD + 5120);
    let rd = r.txn(TxnKind::HostRead, 1, 3, 0);
    r.enqueue(SimTime::from_ns(1000), rd, Queue::HostRead);
    assert_eq!(r.fil.counters.program_suspensions, 1);
    let (t, ..) = r.step();
    assert_eq!(t, data_in + SimTime::from_ns(CMD + 15_000));

    let mut r = rig_with(&SUSPEND);
    let w = r.txn(TxnKind::HostWrite, 0, 2, 0);
    r.enqueue(SimTime::ZERO, w, Queue::HostWrite);
    let end = data_in + SimTime::from_ns(TPROG_LSB);
    let rd = r.txn(TxnKind::HostRead, 1, 3, 0);
    r.enqueue(end - SimTime::from_us(10), rd, Queue::HostRead);
    assert_eq!(r.fil.counters.program_suspensions, 0);
    assert_eq!(r.step().2, vec![w]);
}

#[test]
fn an_operation_is_suspended_at_most_max_suspends_per_op_times() {
    let mut ov = SUSPEND.to_vec();
    ov.push("nand.max_suspends_per_op=2");
    let mut r = rig_with(&ov);
    let erase = r.txn(TxnKind::Erase, 0, 4, 0);
    r.enqueue(SimTime::ZERO, erase, Queue::HostWrite);
    // Three reads, each 500 µs after the previous one is done: the first two suspend the
    // erase, the third waits for its end.
    let mut at = SimTime::from_us(500);
    let mut erased_before = Vec::new();
    for i in 0..3 {
        let rd = r.txn(TxnKind::HostRead, 1, 7 + i, 0);
        r.enqueue(at, rd, Queue::HostRead);
        let mut erased = false;
        loop {
            let (t, _, op, _) = r.step();
            if op == vec![rd] {
                at = t + SimTime::from_us(500);
                break;
            }
            erased |= op == vec![erase];
        }
        erased_before.push(erased);
    }
    assert_eq!(erased_before, vec![false, false, true]);
    assert_eq!(r.fil.counters.erase_suspensions, 2);
}

mod suspend_property {
    use super::*;
    use proptest::prelude::*;

    #[derive(Clone, Copy, Debug)]
    enum Kind {
        Read,
        Program,
        Erase,
    }

    fn kind() -> impl Strategy<Value = Kind> {
        prop_oneof![3 => Just(Kind::Read), 2 => Just(Kind::Program), 1 => Just(Kind::Erase)]
    }

    /// Runs `ops` (gap before each in µs, kind, page) on die 0 and returns the die's busy
    /// time, the order queue-1 work (programs and erases) finished in, the reads finished,
    /// and the suspensions.
    fn run(ops: &[(u64, Kind, u32)], overrides: &[&str]) -> (Rig, Vec<u32>, Vec<u32>, u64) {
        let mut ov = vec![
            "ftl.map_unit=\"16KiB\"".to_string(),
            "nand.multiplane=false".to_string(),
        ];
        ov.extend(overrides.iter().map(|s| s.to_string()));
        let ov: Vec<&str> = ov.iter().map(|s| s.as_str()).collect();
        let mut r = rig_with(&ov);
        let mut at = SimTime::ZERO;
        let mut txns = Vec::new();
        for (i, &(gap, k, page)) in ops.iter().enumerate() {
            at += SimTime::from_us(gap);
            let (kind, plane) = match k {
                Kind::Read => (TxnKind::HostRead, i as u32 % 2),
                Kind::Program => (TxnKind::HostWrite, 0),
                Kind::Erase => (TxnKind::Erase, 1),
            };
            let t = r.txn(kind, plane, i as u32 % 64, page);
            txns.push(t);
            r.q.push(at, Event::Wake { token: i as u32 });
        }
        let (mut written, mut read) = (Vec::new(), Vec::new());
        while let Some((now, ev)) = r.q.pop() {
            match ev {
                Event::Wake { token } => {
                    let t = txns[token as usize];
                    let queue = match r.fil.txns.get(t).kind {
                        TxnKind::HostRead => Queue::HostRead,
                        _ => Queue::HostWrite,
                    };
                    r.fil.enqueue(now, t, queue, &r.ftl, &mut r.q);
                }
                Event::DieStep { die } => {
                    match r
                        .fil
                        .die_step(now, die, &mut r.ftl, None, &mut r.q)
                        .unwrap()
                    {
                        Step::Sensed(op) => {
                            read.extend_from_slice(&op);
                            let mut last = now;
                            for _ in &op {
                                last = r.fil.read_out(now, die).0;
                            }
                            r.fil.finish_read(now, die, last, op, &r.ftl, &mut r.q);
                        }
                        Step::Programmed(op) | Step::Erased(op) => {
                            written.extend_from_slice(&op);
                            r.fil.finish_op(now, die, op, &r.ftl, &mut r.q);
                        }
                        Step::Done => {}
                    }
                }
                _ => unreachable!(),
            }
        }
        let c = &r.fil.counters;
        let suspensions = c.program_suspensions + c.erase_suspensions;
        (r, written, read, suspensions)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// Every program and erase finishes once, in the order it arrived; every read
        /// finishes once; and the die's busy time is the same work's without suspension
        /// plus, per suspension, its suspend latency, the resume command and the resume
        /// latency: no array time is lost or run twice.
        #[test]
        fn suspension_loses_and_reorders_nothing(
            ops in prop::collection::vec((0u64..400, kind(), 0u32..32), 1..40),
            max in 1u32..4,
            p_us in 1u64..60,
            e_us in 1u64..60,
            r_us in 0u64..30,
        ) {
            let max_s = format!("nand.max_suspends_per_op={max}");
            let p_s = format!("nand.program_suspend_latency=\"{p_us}us\"");
            let e_s = format!("nand.erase_suspend_latency=\"{e_us}us\"");
            let r_s = format!("nand.resume_latency=\"{r_us}us\"");
            let on = ["nand.suspend=true", &max_s, &p_s, &e_s, &r_s];
            let (r_on, written_on, mut read_on, _) = run(&ops, &on);
            let (r_off, written_off, mut read_off, none) = run(&ops, &[]);
            prop_assert_eq!(none, 0);
            let queue1: Vec<u32> = ops
                .iter()
                .enumerate()
                .filter(|(_, o)| !matches!(o.1, Kind::Read))
                .map(|(i, _)| i as u32)
                .collect();
            // Transaction ids are given out in arrival order from 0 on both rigs.
            prop_assert_eq!(&written_on, &queue1);
            prop_assert_eq!(&written_off, &queue1);
            read_on.sort_unstable();
            read_off.sort_unstable();
            prop_assert_eq!(&read_on, &read_off);
            prop_assert_eq!(read_on.len() + queue1.len(), ops.len());
            let c = &r_on.fil.counters;
            let cmd = SimTime::from_ns(CMD);
            let overhead = (SimTime::from_us(p_us) + cmd + SimTime::from_us(r_us))
                * c.program_suspensions
                + (SimTime::from_us(e_us) + cmd + SimTime::from_us(r_us)) * c.erase_suspensions;
            let busy_on = r_on.fil.die_busy().next().unwrap();
            let busy_off = r_off.fil.die_busy().next().unwrap();
            prop_assert_eq!(busy_on, busy_off + overhead);
            for d in &r_on.fil.dies {
                prop_assert!(d.suspended.is_none() && d.stale.is_empty() && d.next_stale == SimTime::MAX && d.is_idle());
            }
        }
    }
}
