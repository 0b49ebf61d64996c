//! The queued-protocol engine: every interface whose device takes a fixed number of commands
//! (IDE, SATA/AHCI, UFS, eMMC), described by a [`Proto`]. Commands beyond the device's slots
//! wait in the host's block layer; each command costs link reservations on named channels
//! ([`Chan`]) mapped onto the link's timelines; data moves in framed phases; the completion is
//! a status message, an interrupt or poll, and the handler's register reads.

use super::{Chan, Kind, Proto};
use crate::config::{InterfaceConfig, InterruptMode};
use crate::event::Event;
use crate::host::HostCpu;
use crate::request::Cmd;
use crate::request::Op;
use crate::sim::time::Timeline;
use crate::sim::{EventQueue, SimTime, Slab};
use std::collections::VecDeque;

pub struct Queued {
    proto: Proto,
    latency: SimTime,
    up: Timeline,
    down: Timeline,
    /// Commands waiting in the host for a device slot, with when the driver had them ready.
    host_q: VecDeque<(u32, SimTime)>,
    /// Commands the device holds.
    inflight: u32,
    /// SATA with NCQ: a non-queued command (FLUSH CACHE, DATA SET MANAGEMENT) holds the device
    /// alone; nothing else is sent until it completes.
    exclusive: bool,
    ncq: bool,
    interrupt: InterruptMode,
    interrupt_latency: SimTime,
}

impl Queued {
    pub fn new(proto: Proto, i: &InterfaceConfig) -> Queued {
        Queued {
            ncq: proto.kind == Kind::Sata && i.ata.ncq,
            proto,
            latency: i.link_latency.0,
            up: Timeline::default(),
            down: Timeline::default(),
            host_q: VecDeque::new(),
            inflight: 0,
            exclusive: false,
            interrupt: i.interrupt,
            interrupt_latency: i.interrupt_latency.0,
        }
    }

    pub fn proto(&self) -> &Proto {
        &self.proto
    }

    pub fn link_busy(&self) -> (SimTime, SimTime) {
        (self.up.busy, self.down.busy)
    }

    /// Reserve `dur` on the timeline that carries `ch`, from `at`.
    #[inline]
    fn reserve(&mut self, ch: Chan, at: SimTime, dur: SimTime) -> (SimTime, SimTime) {
        if self.proto.on_up[ch as usize] {
            self.up.reserve(at, dur)
        } else {
            self.down.reserve(at, dur)
        }
    }

    /// The driver has `cmd` ready at `ready`: into the host's queue until the device has a slot.
    #[inline(never)]
    pub(crate) fn queue(&mut self, cmd: u32, ready: SimTime) {
        self.host_q.push_back((cmd, ready));
    }

    /// Send waiting commands while the device has free slots.
    #[inline(never)]
    pub(crate) fn issue(&mut self, now: SimTime, cmds: &Slab<Cmd>, q: &mut EventQueue<Event>) {
        let p = &self.proto;
        let (slots, prep, cmd_t, ack) = (p.slots, p.cmd_prep, p.cmd, p.ack);
        // Under NCQ, FLUSH CACHE and DATA SET MANAGEMENT (TRIM) are non-queued commands: the
        // host waits until no queued command is outstanding, and sends nothing else meanwhile
        // (Serial ATA 3.x, 13.6; queued TRIM is an optional later addition, not modelled).
        while self.inflight < slots && !self.exclusive {
            let Some(&(cmd, ready)) = self.host_q.front() else {
                break;
            };
            if self.ncq && matches!(cmds.get(cmd).op, Op::Flush | Op::Trim) {
                if self.inflight > 0 {
                    break;
                }
                self.exclusive = true;
            }
            self.host_q.pop_front();
            self.inflight += 1;
            let (_, sent) = self.reserve(Chan::Cmd, now.max(ready) + prep, cmd_t);
            let arrived = sent + self.latency;
            if ack > SimTime::ZERO {
                self.reserve(Chan::Status, arrived, ack);
            }
            q.push(arrived, Event::Submit { cmd });
        }
    }

    /// The host finished a command: free its slot and send the next.
    #[inline(never)]
    pub(crate) fn release(&mut self, now: SimTime, cmds: &Slab<Cmd>, q: &mut EventQueue<Event>) {
        self.inflight -= 1;
        // A non-queued command is the only one in flight: its end frees the device.
        self.exclusive = false;
        self.issue(now, cmds, q);
    }

    /// Move `bytes` of a read command's data to the host from `at`, after the command's data
    /// set-up message if this is its first data; returns when they are in host memory.
    #[inline(never)]
    pub(crate) fn push_read_data(&mut self, at: SimTime, c: &mut Cmd, bytes: u64) -> SimTime {
        let (setup, wire) = (self.proto.read_setup, self.proto.data_in.time(bytes));
        let mut t = at;
        if !c.data_started {
            c.data_started = true;
            if setup > SimTime::ZERO {
                t = self.reserve(Chan::Status, t, setup).1 + self.latency;
            }
        }
        self.reserve(Chan::DataIn, t, wire).1
    }

    /// A write command's data phase from `now`, in grants each after its set-up message;
    /// returns when all its data is in the controller.
    #[inline(never)]
    pub(crate) fn pull_write_data(&mut self, now: SimTime, len: u64) -> SimTime {
        let p = &self.proto;
        let (setup, grant, wire) = (p.write_setup, p.write_grant_bytes, p.data_out);
        let mut t = now;
        let mut left = len;
        while left > 0 {
            let g = left.min(grant);
            if setup > SimTime::ZERO {
                t = self.reserve(Chan::Status, t, setup).1 + self.latency;
            }
            t = self.reserve(Chan::DataOut, t, wire.time(g)).1;
            left -= g;
        }
        t + self.latency
    }

    /// The device completes `cmd` at `t`: its status message, the interrupt (or the poll that
    /// finds it), and the host's completion work.
    #[inline(never)]
    pub(crate) fn complete(
        &mut self,
        t: SimTime,
        cmd: u32,
        cmds: &Slab<Cmd>,
        cpu: &mut HostCpu,
        q: &mut EventQueue<Event>,
    ) {
        let (status, host_status) = (self.proto.status, self.proto.host_status);
        let (_, sent) = self.reserve(Chan::Status, t, status);
        let (at, cost) = cpu.completion(
            self.interrupt,
            sent + self.latency,
            self.interrupt_latency,
            host_status,
        );
        let (_, end) = cpu.reserve(cmds.get(cmd).core, at, cost);
        q.push(end, Event::HostComplete { cmd });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SsdConfig;

    fn queued(over: &[&str]) -> Queued {
        let ov: Vec<String> = over.iter().map(|s| s.to_string()).collect();
        let cfg = SsdConfig::resolve("small-tlc", &ov).unwrap();
        Queued::new(Proto::from_config(&cfg).unwrap(), &cfg.interface)
    }

    fn sata(ncq: bool) -> Queued {
        let depth = if ncq { 32 } else { 1 };
        queued(&[
            "interface.kind=\"sata\"",
            "interface.link=\"sata3\"",
            "interface.io_queues=1",
            &format!("interface.queue_depth={depth}"),
            "interface.interrupt=\"pin\"",
            &format!("interface.ata.ncq={ncq}"),
        ])
    }

    fn add(cmds: &mut Slab<Cmd>, op: Op) -> u32 {
        cmds.insert(Cmd::new(
            0,
            op,
            0,
            if op == Op::Flush { 0 } else { 4096 },
            0,
            0,
        ))
    }

    /// The commands the device received so far, in order.
    fn sent(q: &mut EventQueue<Event>) -> Vec<u32> {
        let mut out = Vec::new();
        while let Some((_, ev)) = q.pop() {
            let Event::Submit { cmd } = ev else {
                panic!("{ev:?}")
            };
            out.push(cmd);
        }
        out
    }

    #[test]
    fn commands_beyond_the_device_slots_wait_in_the_host() {
        // SATA without NCQ: one command at a time.
        let mut p = sata(false);
        let mut cmds = Slab::default();
        let mut q = EventQueue::new();
        let a = add(&mut cmds, Op::Read);
        let b = add(&mut cmds, Op::Read);
        p.queue(a, SimTime::ZERO);
        p.queue(b, SimTime::ZERO);
        p.issue(SimTime::ZERO, &cmds, &mut q);
        assert_eq!(sent(&mut q), vec![a]);
        p.release(SimTime::from_us(100), &cmds, &mut q);
        assert_eq!(sent(&mut q), vec![b]);
    }

    /// Under NCQ a flush is non-queued: it waits until no command is outstanding and holds the
    /// device alone until it completes.
    #[test]
    fn an_ncq_flush_waits_for_the_queue_to_drain_and_holds_it() {
        let mut p = sata(true);
        let mut cmds = Slab::default();
        let mut q = EventQueue::new();
        let r1 = add(&mut cmds, Op::Read);
        let r2 = add(&mut cmds, Op::Read);
        let f = add(&mut cmds, Op::Flush);
        let r3 = add(&mut cmds, Op::Read);
        for c in [r1, r2, f, r3] {
            p.queue(c, SimTime::ZERO);
        }
        p.issue(SimTime::ZERO, &cmds, &mut q);
        assert_eq!(sent(&mut q), vec![r1, r2]);
        p.release(SimTime::from_us(10), &cmds, &mut q);
        assert!(sent(&mut q).is_empty(), "one read still outstanding");
        p.release(SimTime::from_us(20), &cmds, &mut q);
        assert_eq!(sent(&mut q), vec![f], "the flush goes alone");
        p.release(SimTime::from_us(30), &cmds, &mut q);
        assert_eq!(sent(&mut q), vec![r3]);
    }

    /// UFS moves write data in grants of 64 KiB, each after its own READY TO TRANSFER.
    #[test]
    fn ufs_write_data_moves_in_grants_each_after_its_set_up() {
        let mut p = queued(&[
            "interface.kind=\"ufs\"",
            "interface.link=\"hs-g3x2\"",
            "interface.io_queues=1",
            "interface.queue_depth=32",
            "interface.interrupt=\"pin\"",
        ]);
        let proto = p.proto().clone();
        assert_eq!(proto.write_grant_bytes, 64 * 1024);
        assert!(proto.write_setup > SimTime::ZERO);
        let lat = p.latency;
        let end = p.pull_write_data(SimTime::ZERO, 128 * 1024);
        // Two grants: set-up, latency, 64 KiB of data — twice — then the last latency.
        let grant = proto.write_setup + lat + proto.data_out.time(64 * 1024);
        assert_eq!(end, grant + grant + lat);
        let (up, down) = p.link_busy();
        assert_eq!(up, proto.write_setup * 2, "RTTs go up");
        assert_eq!(down, proto.data_out.time(64 * 1024) * 2, "data goes down");
    }
}
