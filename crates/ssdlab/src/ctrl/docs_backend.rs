//! Tests only: the minimal back end of docs/architecture.md ("A minimal back end"), compiled
//! from `docs/examples/minimal_backend.rs` as the crate's own code (a back end uses the
//! controller's ports, which only the crate sees), run on the ports of a small-tlc device's
//! interface, and checked to be on the page verbatim.

include!("../../../../docs/examples/minimal_backend.rs");

use crate::config::SsdConfig;
use crate::ctrl::test_rig::Layers;

/// Run `ops` (op, offset, bytes), all submitted at time zero, through a RAM disk of
/// `overhead` firmware time and `access` access time on small-tlc's interface (NVMe), the
/// device's part of the loop done by hand: each command's completion reaching the host.
fn run(ops: &[(Op, u64, u64)], overhead: SimTime, access: SimTime) -> Vec<(u32, SimTime)> {
    let cfg = SsdConfig::resolve("small-tlc", &[]).unwrap();
    let mut l = Layers::new(&cfg);
    let mut ram = RamDisk::new(overhead, access);
    for &(op, offset, len) in ops {
        let cmd = l.cmd(op, offset, len);
        ram.accept(SimTime::ZERO, cmd, &mut l.q);
    }
    let mut done = Vec::new();
    while let Some((now, ev)) = l.q.pop() {
        let up = &mut l.ports(None).1.up;
        match ev {
            Event::Dispatch { cmd } => ram.dispatch(now, cmd, up),
            Event::WriteDataIn { cmd } => ram.write_data_in(now, cmd, up),
            Event::HostComplete { cmd } => done.push((cmd, now)),
            // The interface's own events (a freed slot) need nothing of the back end.
            _ => {}
        }
    }
    done
}

#[test]
fn every_command_completes_once_after_firmware_and_access_time() {
    let (overhead, access) = (SimTime::from_us(2), SimTime::from_us(10));
    let ops = [
        (Op::Write, 0, 4096),
        (Op::Read, 0, 65536),
        (Op::Flush, 0, 0),
    ];
    let done = run(&ops, overhead, access);
    let mut cmds: Vec<u32> = done.iter().map(|&(c, _)| c).collect();
    cmds.sort_unstable();
    assert_eq!(cmds, vec![0, 1, 2], "each command completes once: {done:?}");
    let at = |cmd: u32| done.iter().find(|d| d.0 == cmd).unwrap().1;
    // One firmware core: the read is dispatched after the write's firmware time and its own.
    assert!(at(0) > overhead + access, "write at {:?}", at(0));
    assert!(at(1) > overhead * 2 + access, "read at {:?}", at(1));
    // A flush has nothing to wait for: it completes before the read dispatched ahead of it,
    // one firmware time after it.
    assert!(at(2) < at(1), "{done:?}");
    // The 64 KiB read waits for the access and its data's transfer, the write for the pull
    // of its 4 KiB and the access.
    assert!(at(1) > at(0), "{done:?}");
}

#[test]
fn the_access_time_is_what_a_read_waits_for() {
    let overhead = SimTime::from_us(2);
    let read = [(Op::Read, 0, 4096)];
    let fast = run(&read, overhead, SimTime::from_us(1))[0].1;
    let slow = run(&read, overhead, SimTime::from_us(51))[0].1;
    assert_eq!(slow - fast, SimTime::from_us(50));
    let ram = RamDisk::new(overhead, SimTime::ZERO);
    assert!(ram.is_mapped(12345) && ram.cpu_busy() == SimTime::ZERO);
}

#[test]
fn the_page_shows_the_tested_code() {
    let code = include_str!("../../../../docs/examples/minimal_backend.rs");
    let page = include_str!("../../../../docs/architecture.md");
    assert!(
        page.contains(code),
        "docs/architecture.md must contain docs/examples/minimal_backend.rs verbatim in its back-end section"
    );
}
