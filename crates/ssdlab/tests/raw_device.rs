//! A raw device (`ftl.kind = "none"`) through the device boundary: requests address the NAND by
//! physical unit, and a host-side FTL — here a tiny log-structured one, written as a driver —
//! keeps the map, programs pages in order and erases blocks itself.

use ssdlab::device::{Completion, Device, Driver, Flags, Request, Status};
use ssdlab::request::Op;
use ssdlab::sim::SimTime;
use ssdlab::{JobSpec, RunOptions, SsdConfig};

/// small-tlc with no device FTL: 16 KiB pages, 3.5 ms erases.
fn raw_config() -> SsdConfig {
    SsdConfig::resolve(
        "small-tlc",
        &[
            "ftl.kind=\"none\"".into(),
            "ftl.over_provisioning=0.0".into(),
            "precondition.fill=\"none\"".into(),
            "precondition.random_overwrite=0.0".into(),
        ],
    )
    .unwrap()
}

fn opts() -> RunOptions {
    RunOptions {
        seed: 1,
        record_requests: false,
        stats_interval: None,
        power_cut_event: None,
        power_cut_at: None,
    }
}

fn req(op: Op, offset: u64, len: u64, at: SimTime) -> Request {
    Request {
        op,
        offset,
        len,
        queue: 0,
        flags: Flags::NONE,
        arrival: at,
    }
}

/// What the host FTL is doing.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Phase {
    /// Writing logical pages `next..pages` of pass `pass`.
    Write { pass: u32 },
    /// Erasing the blocks the first pass filled (all stale after the second).
    Erase,
    /// Reading every logical page through the map.
    Read,
}

/// A log-structured host FTL over the raw NAND: logical page `l` goes to the next physical page
/// of the log; its old copy becomes stale. Pass 0 and 1 write every logical page; then the
/// blocks of pass 0 are erased and pass 2 writes into them again.
struct HostFtl {
    page_bytes: u64,
    pages_per_block: u64,
    /// Logical pages.
    pages: u64,
    map: Vec<Option<u64>>,
    /// Next physical page of the log.
    log_head: u64,
    phase: Phase,
    next: u64,
    in_flight: u32,
    depth: u32,
    completions: Vec<Completion>,
}

impl HostFtl {
    fn new(dev: &Device, pages: u64, depth: u32) -> HostFtl {
        let geo = &dev.backend().nand().unwrap().geo;
        HostFtl {
            page_bytes: geo.page_bytes,
            pages_per_block: geo.pages_per_block as u64,
            pages,
            map: vec![None; pages as usize],
            log_head: 0,
            phase: Phase::Write { pass: 0 },
            next: 0,
            in_flight: 0,
            depth,
            completions: Vec::new(),
        }
    }

    fn blocks_per_pass(&self) -> u64 {
        self.pages.div_ceil(self.pages_per_block)
    }

    /// Keep `depth` requests in flight; move to the next phase when one is done.
    fn issue(&mut self, dev: &mut Device, now: SimTime) {
        while self.in_flight < self.depth {
            let r = match self.phase {
                Phase::Write { .. } if self.next < self.pages => {
                    let ppn = self.log_head;
                    self.log_head += 1;
                    self.map[self.next as usize] = Some(ppn);
                    req(Op::Write, ppn * self.page_bytes, self.page_bytes, now)
                }
                Phase::Erase if self.next < 1 => {
                    let block_bytes = self.page_bytes * self.pages_per_block;
                    req(Op::Erase, 0, self.blocks_per_pass() * block_bytes, now)
                }
                Phase::Read if self.next < self.pages => {
                    let ppn = self.map[self.next as usize].expect("mapped");
                    req(Op::Read, ppn * self.page_bytes, self.page_bytes, now)
                }
                _ => return,
            };
            dev.submit(now, r).unwrap();
            self.next += 1;
            self.in_flight += 1;
        }
    }
}

impl Driver for HostFtl {
    fn on_complete(&mut self, dev: &mut Device, now: SimTime, done: Completion) {
        self.in_flight -= 1;
        self.completions.push(done);
        let phase_done = self.in_flight == 0
            && match self.phase {
                Phase::Erase => self.next == 1,
                _ => self.next == self.pages,
            };
        if phase_done {
            self.next = 0;
            self.phase = match self.phase {
                Phase::Write { pass: 0 } => Phase::Write { pass: 1 },
                Phase::Write { pass: 1 } => {
                    // The log wraps to the start once pass 0's blocks are erased.
                    Phase::Erase
                }
                Phase::Erase => {
                    self.log_head = 0;
                    Phase::Write { pass: 2 }
                }
                Phase::Write { .. } => Phase::Read,
                Phase::Read => return,
            };
        }
        self.issue(dev, now);
    }
}

#[test]
fn a_host_side_ftl_drives_the_raw_media_through_the_boundary() {
    let cfg = raw_config();
    let mut dev = Device::new(&cfg, 1).unwrap();
    // The raw device shows every unit: no over-provisioning.
    assert_eq!(
        dev.capacity_bytes(),
        cfg.physical_units() * cfg.map_unit_bytes()
    );
    // Three blocks' worth of logical pages and a bit.
    let pages = 3 * dev.backend().nand().unwrap().geo.pages_per_block as u64 + 5;
    let mut ftl = HostFtl::new(&dev, pages, 8);
    ftl.issue(&mut dev, SimTime::ZERO);
    dev.run(&mut ftl, u64::MAX, &mut |_, _| true).unwrap();
    assert_eq!(ftl.phase, Phase::Read);
    let c = &ftl.completions;
    assert_eq!(
        c.len() as u64,
        4 * pages + 1,
        "three write passes, an erase, a read pass"
    );
    assert!(
        c.iter().all(|d| d.status == Status::Ok),
        "every request accepted"
    );
    let erases: Vec<_> = c.iter().filter(|d| d.op == Op::Erase).collect();
    assert_eq!(erases.len(), 1);
    // Four blocks on one plane of one die... spread over dies: at least one erase time.
    let erase_time = cfg.nand.timing.erase.0;
    assert!(erases[0].done - erases[0].arrival >= erase_time);
    let fil = &dev.backend().nand().unwrap().fil;
    assert_eq!(fil.counters.nand_pages_written, 3 * pages);
    assert_eq!(fil.counters.nand_pages_read, pages);
    let raw = dev.backend().raw().unwrap();
    assert_eq!(raw.counters.erases, ftl.blocks_per_pass());
    assert_eq!(raw.counters.programs_refused, 0);
    // Pass 2 refilled the erased blocks in order; pass 1's blocks stay as they were.
    assert_eq!(
        raw.next_page(0),
        dev.backend().nand().unwrap().geo.pages_per_block
    );
    assert!(raw.erase_counts()[..4].iter().all(|&n| n == 1));
    assert!(raw.erase_counts()[4..].iter().all(|&n| n == 0));
}

#[test]
fn the_firmware_refuses_what_the_media_does_not_allow_and_changes_nothing() {
    let cfg = raw_config();
    let mut dev = Device::new(&cfg, 1).unwrap();
    let page = dev.backend().nand().unwrap().geo.page_bytes;
    let block = page * dev.backend().nand().unwrap().geo.pages_per_block as u64;
    let t = SimTime::ZERO;
    let ok = dev.submit(t, req(Op::Write, 0, page, t)).unwrap();
    let twice = dev.submit(t, req(Op::Write, 0, page, t)).unwrap();
    let skip = dev.submit(t, req(Op::Write, 3 * page, page, t)).unwrap();
    let partial = dev.submit(t, req(Op::Write, page, 4096, t)).unwrap();
    let half_block = dev.submit(t, req(Op::Erase, 0, block / 2, t)).unwrap();
    let trim = dev.submit(t, req(Op::Trim, 0, page, t)).unwrap();
    let mut got = std::collections::HashMap::new();
    struct Status_(std::collections::HashMap<u32, Status>);
    impl Driver for Status_ {
        fn on_complete(&mut self, _: &mut Device, _: SimTime, d: Completion) {
            self.0.insert(d.id, d.status);
        }
    }
    let mut s = Status_(std::mem::take(&mut got));
    dev.run(&mut s, u64::MAX, &mut |_, _| true).unwrap();
    assert_eq!(s.0[&ok], Status::Ok);
    assert_eq!(s.0[&twice], Status::ProgramOrder);
    assert_eq!(s.0[&skip], Status::ProgramOrder);
    assert_eq!(s.0[&partial], Status::Misaligned);
    assert_eq!(s.0[&half_block], Status::Misaligned);
    assert_eq!(s.0[&trim], Status::Unsupported);
    // Only the first program reached the NAND.
    assert_eq!(
        dev.backend()
            .nand()
            .unwrap()
            .fil
            .counters
            .nand_pages_written,
        1
    );
    assert_eq!(dev.backend().raw().unwrap().next_page(0), 1);
    assert_eq!(dev.host().failed().0, 5);
}

#[test]
fn an_erase_needs_a_raw_device_and_reads_and_writes_need_bytes() {
    let mut dev = Device::new(&SsdConfig::resolve("small-tlc", &[]).unwrap(), 1).unwrap();
    let t = SimTime::ZERO;
    let e = dev.submit(t, req(Op::Erase, 0, 1 << 20, t)).unwrap_err();
    assert!(e.to_string().contains("raw device"), "{e}");
    let e = dev.submit(t, req(Op::Read, 0, 0, t)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "read request at byte 0, field `len`: got 0 bytes, expected at least 1 byte"
    );
    assert_eq!(e.invalid().and_then(|i| i.field.as_deref()), Some("len"));
    assert_eq!(dev.next_event_time(), None);
}

#[test]
fn a_job_the_raw_media_refuses_is_an_error_not_a_result() {
    let cfg = raw_config();
    let job = JobSpec::from_toml_str(
        "rw = \"randwrite\"\nbs = \"16KiB\"\niodepth = 4\nio_count = 200\n",
        "job",
    )
    .unwrap();
    let Err(e) = ssdlab::run::run(&cfg, &job, &opts(), &mut |_, _| true) else {
        panic!("random writes on raw NAND ran");
    };
    let msg = e.to_string();
    assert!(
        msg.contains("requests failed") && msg.contains("write at byte"),
        "{msg}"
    );
    // Sequential whole-page writes into erased blocks are what the media takes.
    let seq = JobSpec::from_toml_str(
        "rw = \"write\"\nbs = \"16KiB\"\niodepth = 4\nio_count = 200\n",
        "job",
    )
    .unwrap();
    let out = ssdlab::run::run(&cfg, &seq, &opts(), &mut |_, _| true).unwrap();
    assert_eq!(out.result.sim.requests, 200);
    assert_eq!(out.result.device.nand_pages_written, 200);
}
