use ssdlab::device::{Completion, Device, Driver, Flags, Request};
use ssdlab::sim::SimTime;
use ssdlab::request::Op;
use ssdlab::SsdConfig;

/// Writes `blocks` 64 KiB blocks, then reads each back, keeping `depth` requests in flight.
struct WriteThenRead {
    blocks: u64,
    depth: u64,
    next: u64,
    done: u64,
    latency_ps: u64,
}

impl WriteThenRead {
    /// Submit the next request of the sequence (writes first, then reads), if any is left.
    fn issue(&mut self, dev: &mut Device, now: SimTime) {
        if self.next == 2 * self.blocks {
            return;
        }
        let (op, block) = if self.next < self.blocks {
            (Op::Write, self.next)
        } else {
            (Op::Read, self.next - self.blocks)
        };
        let r = Request {
            op,
            offset: block * 65536,
            len: 65536,
            queue: 0,
            flags: Flags::NONE,
            arrival: now,
        };
        dev.submit(now, r).expect("within the device");
        self.next += 1;
    }
}

impl Driver for WriteThenRead {
    fn on_complete(&mut self, dev: &mut Device, now: SimTime, done: Completion) {
        self.done += 1;
        self.latency_ps += (done.done - done.arrival).ps();
        self.issue(dev, now);
    }
}

fn main() -> ssdlab::Result<()> {
    let cfg = SsdConfig::resolve("small-tlc", &[])?;
    let mut dev = Device::new(&cfg, 1)?;
    let mut drv = WriteThenRead { blocks: 64, depth: 4, next: 0, done: 0, latency_ps: 0 };
    for _ in 0..drv.depth {
        drv.issue(&mut dev, SimTime::ZERO);
    }
    dev.run(&mut drv, u64::MAX, &mut |_, _| true)?;
    let mean_us = drv.latency_ps as f64 / drv.done as f64 / 1e6;
    println!("{} requests, mean latency {mean_us:.1} µs", drv.done);
    assert_eq!(drv.done, 128);
    Ok(())
}
