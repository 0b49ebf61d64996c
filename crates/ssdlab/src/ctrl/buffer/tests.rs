//! The buffer manager with hand-built ports on small-tlc (4 KiB lines), a 256 KiB DDR2
//! buffer, write-back: what starts each kind of flush.

use super::*;
use crate::config::SsdConfig;
use crate::ctrl::datacheck::DataCheck;
use crate::ctrl::fil::Step;
use crate::ctrl::test_rig::Layers;
use crate::ctrl::{FlashPort, Ports};
use crate::event::Event;
use crate::request::Cmd;
use crate::request::Op;

struct Rig {
    bm: BufferManager,
    l: Layers,
}

fn rig(over: &[&str]) -> Rig {
    let mut ov: Vec<String> = vec![
        "cache.capacity=\"256KiB\"".into(),
        "cache.dram=\"ddr2\"".into(),
        "cache.mode=\"write-back\"".into(),
    ];
    ov.extend(over.iter().map(|s| s.to_string()));
    let cfg = SsdConfig::resolve("small-tlc", &ov).unwrap();
    let mut l = Layers::new(&cfg);
    l.check = Some(DataCheck::default());
    Rig {
        bm: BufferManager::new(
            cfg.cache.as_ref().unwrap(),
            l.ftl.geo.unit_bytes,
            cfg.cache_translation_bytes(),
        ),
        l,
    }
}

impl Rig {
    fn ports(&mut self) -> (&mut BufferManager, HostPort<'_>, FlashPort<'_>) {
        let (_, Ports { up, flash, .. }) = self.l.ports(None);
        (&mut self.bm, up, flash)
    }

    /// A write-back write of unit `lpn`; returns the command.
    fn write(&mut self, now: SimTime, lpn: u64) -> u32 {
        self.write_part(now, lpn, 0, 4096)
    }

    /// A write-back write of `bytes` from byte `start` of unit `lpn`; returns the command.
    fn write_part(&mut self, now: SimTime, lpn: u64, start: u64, bytes: u64) -> u32 {
        let c = self.l.cmd(Op::Write, lpn * 4096 + start, bytes);
        let (bm, mut up, mut flash) = self.ports();
        bm.write(now, c, &mut up, &mut flash).unwrap();
        c
    }

    /// An NVMe Flush at the queue's time, drained; returns the commands completed.
    fn flush_all(&mut self) -> Vec<u32> {
        let f = self.l.cmds.insert(Cmd::new(0, Op::Flush, 0, 0, 0, 0));
        let now = self.l.q.now();
        let (bm, mut up, mut flash) = self.ports();
        bm.flush_command(now, f, &mut up, &mut flash).unwrap();
        self.drain()
    }

    /// Handle events until none is left: die steps through the FIL and the HIL (which hands
    /// finished flushes back to the buffer); returns the commands completed.
    fn drain(&mut self) -> Vec<u32> {
        let mut done = Vec::new();
        while let Some((now, ev)) = self.l.q.pop() {
            match ev {
                Event::HostComplete { cmd } => done.push(cmd),
                Event::DieStep { die } => {
                    let (hil, mut p) = self.l.ports(Some(&mut self.bm));
                    let (flash, q) = (&mut p.flash, &mut *p.up.q);
                    match flash
                        .fil
                        .die_step(now, die, flash.ftl, flash.check.as_mut(), q)
                        .unwrap()
                    {
                        Step::Programmed(op) => {
                            for &t in &op {
                                hil.program_done(now, t, &mut p).unwrap();
                            }
                            p.flash.fil.finish_op(now, die, op, p.flash.ftl, p.up.q);
                        }
                        Step::Sensed(op) => {
                            // Only a flush's merge reads: each goes to the buffer when out.
                            let mut last = now;
                            for &t in &op {
                                let (out, ready) = p.flash.fil.read_out(now, die);
                                last = out;
                                hil.read_done(ready, t, &mut p).unwrap();
                            }
                            p.flash
                                .fil
                                .finish_read(now, die, last, op, p.flash.ftl, p.up.q);
                        }
                        Step::Erased(_) => panic!("no erases here"),
                        Step::Done => {}
                    }
                }
                _ => panic!("unexpected {ev:?}"),
            }
        }
        done
    }
}

#[test]
fn a_write_hit_is_counted_and_completes_at_dram_speed() {
    let mut r = rig(&[]);
    let a = r.write(SimTime::ZERO, 7);
    let b = r.write(SimTime::ZERO, 7);
    assert_eq!((r.bm.stats.write_misses, r.bm.stats.write_hits), (1, 1));
    let done = r.drain();
    assert_eq!(done, vec![a, b]);
    assert_eq!(r.bm.stats.flushes, [0; 4]);
}

/// Background flushing starts once the dirty share passes the high watermark and goes on
/// down to the low one.
#[test]
fn background_flushes_start_above_the_high_watermark() {
    let mut r = rig(&[
        "cache.flush_high_watermark=0.5",
        "cache.flush_low_watermark=0.25",
        "cache.max_background_flushes=64",
    ]);
    let lines = r.bm.buf.capacity();
    let high = (lines as f64 * 0.5) as u64;
    for lpn in 0..high {
        r.write(SimTime::ZERO, lpn);
    }
    assert_eq!(r.bm.stats.flushes[FlushKind::Background as usize], 0);
    r.write(SimTime::ZERO, high);
    let started = r.bm.stats.flushes[FlushKind::Background as usize];
    // From high + 1 dirty lines down to the low mark (a quarter of the lines).
    assert_eq!(started, high + 1 - (lines as f64 * 0.25) as u64);
    r.drain();
    assert_eq!(r.bm.buf.dirty_lines() as u64, high + 1 - started);
}

/// With every line dirty, a write that misses starts an on-demand flush and waits for it.
#[test]
fn a_full_dirty_buffer_flushes_on_demand_and_the_write_waits() {
    let mut r = rig(&["cache.flush_high_watermark=0.0"]);
    let lines = r.bm.buf.capacity() as u64;
    for lpn in 0..lines {
        r.write(SimTime::ZERO, lpn);
    }
    let done_before = r.drain().len() as u64;
    assert_eq!(done_before, lines);
    let w = r.write(SimTime::ZERO, lines);
    assert_eq!(r.bm.stats.flushes[FlushKind::OnDemand as usize], 1);
    assert_eq!(r.bm.stats.waits, 1);
    assert_eq!(r.l.cmds.get(w).txns_left, 1, "waiting for a line");
    let done = r.drain();
    assert_eq!(done, vec![w], "placed once the flush freed a line");
    assert!(r.l.check.as_ref().unwrap().first_error.is_none());
}

/// Dual port only: a request that hit starts a pre-emptive flush of a dirty line near the
/// eviction end.
#[test]
fn a_pre_emptive_flush_needs_a_dual_port_and_an_all_hit_request() {
    for (ports, expected) in [("dual", 1), ("single", 0)] {
        let mut r = rig(&[
            &format!("cache.ports=\"{ports}\""),
            "cache.flush_high_watermark=0.0",
            "cache.preemptive_window=1.0",
        ]);
        r.write(SimTime::ZERO, 1);
        assert_eq!(
            r.bm.stats.flushes[FlushKind::Preemptive as usize],
            0,
            "a miss"
        );
        r.write(SimTime::ZERO, 1);
        assert_eq!(
            r.bm.stats.flushes[FlushKind::Preemptive as usize],
            expected,
            "{ports} port"
        );
    }
}

/// Seed 001 §II: the pre-emptive window is 5 % of the buffer's capacity in eviction order,
/// and free lines come first in it (a miss takes one before evicting). While more lines are
/// free than the window holds, a hit flushes nothing ahead; once fewer are, the window's
/// remaining places reach the dirty line at the eviction end.
#[test]
fn free_lines_fill_the_front_of_the_pre_emptive_window() {
    let mut r = rig(&["cache.ports=\"dual\"", "cache.flush_high_watermark=0.0"]);
    let lines = r.bm.buf.capacity() as u64;
    let window = (0.05 * lines as f64).ceil() as u64;
    assert!(window >= 2, "the rig's window holds {window} lines");
    let preemptive = |r: &Rig| r.bm.stats.flushes[FlushKind::Preemptive as usize];
    // `window` lines free: a hit finds no line near eviction.
    for lpn in 0..lines - window {
        r.write(SimTime::ZERO, lpn);
    }
    r.write(SimTime::ZERO, lines / 2);
    assert_eq!(preemptive(&r), 0, "{window} free lines fill the window");
    // One line fewer free: the window's last place is the oldest line, lpn 0, dirty.
    r.write(SimTime::ZERO, lines - window);
    r.write(SimTime::ZERO, lines / 2);
    assert_eq!(preemptive(&r), 1);
    let flushed = r.bm.flights.iter().flatten().count();
    assert_eq!(flushed, 1);
    assert!(r.bm.buf.line(r.bm.buf.find(0).unwrap()).flushing);
    r.drain();
    assert!(r.l.check.as_ref().unwrap().first_error.is_none());
}

/// An explicit flush completes only when every line dirty at its arrival is on NAND.
#[test]
fn an_explicit_flush_waits_for_its_lines_to_reach_nand() {
    let mut r = rig(&["cache.flush_high_watermark=0.0"]);
    for lpn in 0..3 {
        r.write(SimTime::ZERO, lpn);
    }
    r.drain();
    let f = r.l.cmds.insert(Cmd::new(0, Op::Flush, 0, 0, 0, 0));
    {
        let (bm, mut up, mut flash) = r.ports();
        bm.flush_command(SimTime::ZERO, f, &mut up, &mut flash)
            .unwrap();
    }
    assert_eq!(r.bm.stats.flushes[FlushKind::Explicit as usize], 3);
    let before_nand = r.l.q.peek_time().unwrap();
    let done = r.drain();
    assert_eq!(done, vec![f]);
    assert!(r.l.q.now() > before_nand, "completed after the programs");
    assert_eq!(r.bm.buf.dirty_lines(), 0);
    // Nothing dirty: a flush completes at once.
    let g = r.l.cmds.insert(Cmd::new(0, Op::Flush, 0, 0, 0, 0));
    let now = r.l.q.now();
    let (bm, mut up, mut flash) = r.ports();
    bm.flush_command(now, g, &mut up, &mut flash).unwrap();
    assert_eq!(r.drain(), vec![g]);
}

/// `cache.partial_lines = "merge-at-flush"`: a write of part of a unit on NAND goes into the
/// buffer at once, holding only its sectors; the flush reads the rest before the program, and
/// a unit never written needs no read.
#[test]
fn a_partial_line_reads_the_rest_of_its_unit_when_flushed() {
    let mut r = rig(&[
        "cache.flush_high_watermark=0.0",
        "cache.partial_lines=\"merge-at-flush\"",
    ]);
    assert!(r.bm.merges_partial());
    r.write(SimTime::ZERO, 3);
    r.flush_all();
    // The buffer lets go of the line; the unit stays on NAND.
    r.bm.discard(3);
    let now = r.l.q.now();
    let w = r.write_part(now, 3, 1024, 1024);
    let fresh = r.write_part(now, 9, 0, 2048);
    assert_eq!(r.drain(), vec![w, fresh], "both in DRAM, nothing read");
    let slot = r.bm.find(3).unwrap();
    let p = r.bm.partial.as_ref().unwrap();
    assert!(!p.whole(slot) && p.missing_bytes(slot) == 3072);
    // Held bytes are served from DRAM; others go to NAND.
    assert!(r.bm.read_part(now, 3, 1024, 1024).is_some());
    assert!(r.bm.read_part(now, 3, 0, 4096).is_none());
    assert_eq!(r.bm.stats.partial_read_misses, 1);
    let flushed = r.flush_all();
    assert_eq!(flushed.len(), 1);
    assert_eq!(r.bm.stats.merge_reads, 1, "only unit 3 had data on NAND");
    assert_eq!(r.bm.stats.flushes[FlushKind::Explicit as usize], 3);
    assert!(r.bm.partial.as_ref().unwrap().whole(slot));
    assert_eq!(r.bm.buf.dirty_lines(), 0);
    assert!(r.l.check.as_ref().unwrap().first_error.is_none());
}

/// By default (`read-first`) lines always hold their whole unit: the HIL reads first.
#[test]
fn lines_hold_whole_units_by_default() {
    let mut r = rig(&["cache.flush_high_watermark=0.0"]);
    assert!(!r.bm.merges_partial());
    r.write_part(SimTime::ZERO, 3, 1024, 1024);
    r.flush_all();
    assert_eq!(r.bm.stats.merge_reads, 0);
}
