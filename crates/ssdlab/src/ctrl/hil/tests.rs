//! The HIL with hand-built ports on small-tlc (4 KiB map units, 16 KiB pages, 500 ns of
//! firmware per command), on an empty FTL.

use super::*;
use crate::config::SsdConfig;
use crate::ctrl::read_ahead::ReadAhead;
use crate::ctrl::test_rig::Layers as Rig;

fn rig() -> Rig {
    Rig::new(&SsdConfig::resolve("small-tlc", &[]).unwrap())
}

#[test]
fn firmware_time_is_serialised_on_the_controller_core() {
    let mut r = rig();
    let gc = crate::ftl::FtlStats::default();
    r.hil.accept(SimTime::ZERO, 4, 4096, &gc, &mut r.q);
    r.hil.accept(SimTime::ZERO, 5, 4096, &gc, &mut r.q);
    r.hil.accept(SimTime::from_us(5), 6, 4096, &gc, &mut r.q);
    let got: Vec<(SimTime, u32)> = r
        .events()
        .into_iter()
        .map(|(t, e)| match e {
            Event::Dispatch { cmd } => (t, cmd),
            _ => panic!("{e:?}"),
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (SimTime::from_ns(500), 4),
            (SimTime::from_ns(1000), 5),
            (SimTime::from_ns(5500), 6)
        ]
    );
    assert_eq!(r.hil.cpu_busy(), SimTime::from_ns(1500));
}

#[test]
fn a_read_of_unmapped_units_completes_without_touching_nand() {
    let mut r = rig();
    let c = r.cmd(Op::Read, 8192, 12288);
    r.with_ports(|hil, p| hil.dispatch(SimTime::ZERO, c, &mut ReadAhead::new(0), p))
        .unwrap();
    let ev = r.events();
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert!(matches!(ev[0].1, Event::HostComplete { cmd } if cmd == c));
    assert_eq!(r.hil.counters.unmapped_reads, 3);
    assert_eq!(r.hil.counters.host_units_read, 3);
    assert_eq!(r.fil.counters.nand_pages_read, 0);
}

#[test]
fn a_partial_write_over_programmed_data_reads_the_unit_first() {
    let mut r = rig();
    // Unit 5 holds programmed data.
    let pun = r.ftl.write(5).unwrap();
    r.ftl.mark_programmed(pun);
    // 2 KiB into unit 5: the other 2 KiB must be read before the unit is rewritten.
    let c = r.cmd(Op::Write, 5 * 4096 + 1024, 2048);
    r.with_ports(|hil, p| hil.write_data_in(SimTime::ZERO, c, p))
        .unwrap();
    assert_eq!(r.cmds.get(c).rmw_left, 1);
    let ev = r.events();
    assert_eq!(ev.len(), 1);
    assert!(matches!(ev[0].1, Event::DieStep { .. }), "{ev:?}");
    // A whole-unit write needs no read: its program is queued at once.
    let mut r = rig();
    let pun = r.ftl.write(5).unwrap();
    r.ftl.mark_programmed(pun);
    let c = r.cmd(Op::Write, 5 * 4096, 4096);
    r.with_ports(|hil, p| hil.write_data_in(SimTime::ZERO, c, p))
        .unwrap();
    assert_eq!(r.cmds.get(c).rmw_left, 0);
    assert_eq!(r.cmds.get(c).txns_left, 1);
    assert_ne!(r.ftl.lookup(5), Some(pun), "remapped");
}

#[test]
fn a_trim_unmaps_whole_units_only_and_completes_at_once() {
    let mut r = rig();
    for lpn in 0..3 {
        let pun = r.ftl.write(lpn).unwrap();
        r.ftl.mark_programmed(pun);
    }
    // Bytes 2048 .. 12288: unit 0 only partly, units 1 and 2 whole.
    let c = r.cmd(Op::Trim, 2048, 10240);
    r.with_ports(|hil, p| hil.dispatch(SimTime::ZERO, c, &mut ReadAhead::new(0), p))
        .unwrap();
    assert!(r.ftl.lookup(0).is_some());
    assert!(r.ftl.lookup(1).is_none() && r.ftl.lookup(2).is_none());
    let ev = r.events();
    assert!(
        matches!(ev[..], [(_, Event::HostComplete { .. })]),
        "{ev:?}"
    );
}
