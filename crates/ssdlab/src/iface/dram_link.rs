//! The DRAM-interface protocol of seed 000 as the engine runs it (the buffer, DMA engine and
//! banks are `dramif::DramIf`): space in the shared data buffer before submission, write data
//! copied in before the SQ entry and doorbell, the controller's accesses to the SRAM banks,
//! read data copied out in the completion handler, and the buffer freed when the host is done.

use super::dramif::DramIf;
use super::Proto;
use crate::config::{InterfaceConfig, InterruptMode};
use crate::event::Event;
use crate::host::HostCpu;
use crate::request::Cmd;
use crate::request::Op;
use crate::sim::{EventQueue, SimTime, Slab};
use std::collections::VecDeque;

/// Bytes of an SQ entry plus the doorbell register write, and of a CQ entry plus its head update.
const SUBMIT_BYTES: u64 = 64 + 4;
const COMPLETE_BYTES: u64 = 16 + 4;

pub struct DramLink {
    proto: Proto,
    pub(crate) dramif: DramIf,
    latency: SimTime,
    /// Commands waiting in the host for an SQ entry or buffer space, with when the driver had
    /// them ready.
    host_q: VecDeque<(u32, SimTime)>,
    inflight: u32,
    /// CPU time of one access to the shared buffer's queue area (an SQ/CQ entry, a register).
    entry_access: SimTime,
    interrupt: InterruptMode,
    interrupt_latency: SimTime,
    /// `controller.skip_media`: the firmware answers at once and no data moves in the buffer.
    skip_media: bool,
}

impl DramLink {
    pub fn new(proto: Proto, i: &InterfaceConfig, skip_media: bool) -> DramLink {
        DramLink {
            proto,
            dramif: DramIf::new(i),
            latency: i.link_latency.0,
            host_q: VecDeque::new(),
            inflight: 0,
            entry_access: i.dram.entry_access.0,
            interrupt: i.interrupt,
            interrupt_latency: i.interrupt_latency.0,
            skip_media,
        }
    }

    pub fn proto(&self) -> &Proto {
        &self.proto
    }

    pub fn dramif(&self) -> &DramIf {
        &self.dramif
    }

    #[inline(never)]
    pub(crate) fn queue(&mut self, cmd: u32, ready: SimTime) {
        self.host_q.push_back((cmd, ready));
    }

    /// Submit waiting commands, in order, while the SQ has room and the buffer has space for
    /// the command at the head (which otherwise waits, and everything behind it).
    #[inline(never)]
    pub(crate) fn issue(
        &mut self,
        now: SimTime,
        cmds: &mut Slab<Cmd>,
        cpu: &mut HostCpu,
        q: &mut EventQueue<Event>,
    ) {
        let slots = self.proto.slots;
        let entry = self.entry_access;
        let d = &mut self.dramif;
        d.forget_host_windows(q.now());
        while self.inflight < slots {
            let Some(&(cmd, ready)) = self.host_q.front() else {
                break;
            };
            let c = cmds.get(cmd);
            let (op, len, core) = (c.op, c.len, c.core);
            let mut buf = 0;
            if matches!(op, Op::Read | Op::Write) {
                match d.buddy.alloc(len) {
                    Some(off) => buf = off,
                    None => {
                        if d.counted_wait != cmd {
                            d.counted_wait = cmd;
                            d.stats.buffer_waits += 1;
                            if d.buddy.free_bytes() >= d.buddy.block_for(len) {
                                d.stats.fragmentation_waits += 1;
                            }
                        }
                        break;
                    }
                }
                let used = d.buddy.total_bytes() - d.buddy.free_bytes();
                d.stats.peak_buffer_bytes = d.stats.peak_buffer_bytes.max(used);
            }
            d.counted_wait = u32::MAX;
            self.host_q.pop_front();
            self.inflight += 1;
            cmds.get_mut(cmd).buf = buf;
            let at = now.max(ready);
            // Write data must be in the buffer before the command is submitted (seed 000 §3).
            let t = if op == Op::Write {
                d.host_copy(at, cpu.core_mut(core), buf, len, false)
            } else {
                at
            };
            d.count_entry(SUBMIT_BYTES);
            let (_, rung) = cpu.reserve(core, t, entry * 2);
            q.push(rung + self.latency, Event::Submit { cmd });
        }
    }

    /// The host finished a command: free its slot and buffer space, and send the next.
    #[inline(never)]
    pub(crate) fn release(
        &mut self,
        now: SimTime,
        c: &Cmd,
        cmds: &mut Slab<Cmd>,
        cpu: &mut HostCpu,
        q: &mut EventQueue<Event>,
    ) {
        self.inflight -= 1;
        if matches!(c.op, Op::Read | Op::Write) {
            self.dramif.buddy.free(c.buf);
        }
        self.issue(now, cmds, cpu, q);
    }

    /// The controller puts `bytes` of read data into the banks at `pos` within the command's
    /// buffer space from `at`; returns when they are there.
    #[inline(never)]
    pub(crate) fn push_read_data(&mut self, at: SimTime, c: &Cmd, bytes: u64, pos: u64) -> SimTime {
        if self.skip_media {
            // Firmware answers at once: no data is moved into the buffer.
            return at;
        }
        self.dramif.controller_access(at, c.buf + pos, bytes)
    }

    /// The data is already in the shared buffer: the controller reads it from the banks.
    #[inline(never)]
    pub(crate) fn pull_write_data(&mut self, now: SimTime, c: &Cmd) -> SimTime {
        if self.skip_media {
            return now;
        }
        self.dramif.controller_access(now, c.buf, c.len)
    }

    /// The device posted the completion at `t`: GPIO interrupt (or a poll), the handler reads
    /// the CQ entry, and a read's data is copied out of the buffer.
    #[inline(never)]
    pub(crate) fn complete(
        &mut self,
        t: SimTime,
        cmd: u32,
        cmds: &Slab<Cmd>,
        cpu: &mut HostCpu,
        q: &mut EventQueue<Event>,
    ) {
        let (at, cost) =
            cpu.completion(self.interrupt, t, self.interrupt_latency, self.entry_access);
        let c = cmds.get(cmd);
        let (op, buf, len, core) = (c.op, c.buf, c.len, c.core);
        let (_, mut end) = cpu.reserve(core, at, cost);
        let d = &mut self.dramif;
        d.count_entry(COMPLETE_BYTES);
        if op == Op::Read {
            end = d.host_copy(end, cpu.core_mut(core), buf, len, true);
        }
        q.push(end, Event::HostComplete { cmd });
    }
}
