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
use crate::sim::time::Timeline;
use crate::sim::{EventQueue, SimTime, Slab};
use crate::workload::Op;
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
