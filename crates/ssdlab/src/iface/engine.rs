//! The engine's side of every interface but NVMe: the host's queue of commands waiting for a
//! device slot, link reservations per channel, data phases and completion. NVMe keeps its
//! queue-pair path in `host` and `ctrl::hil`; the DRAM interface's host work is in
//! `host::dramif`.

use super::{Chan, Kind};
use crate::config::InterruptMode;
use crate::sim::SimTime;
use crate::system::{Cmd, Event, System};
use crate::workload::Op;

impl System {
    /// Reserve `dur` on the timeline that carries `ch`, from `at`.
    #[inline]
    pub(crate) fn chan_reserve(
        &mut self,
        ch: Chan,
        at: SimTime,
        dur: SimTime,
    ) -> (SimTime, SimTime) {
        let up = self.proto.as_ref().is_some_and(|p| p.on_up[ch as usize]);
        let tl = if up {
            &mut self.link_up
        } else {
            &mut self.link_down
        };
        tl.reserve(at, dur)
    }

    /// Send waiting commands while the device has free slots.
    #[inline(never)]
    pub(crate) fn issue_queued(&mut self, now: SimTime) {
        let Some(p) = self.proto.as_ref() else {
            return;
        };
        if p.kind == Kind::Dram {
            return self.dram_issue(now);
        }
        let (slots, prep, cmd_t, ack) = (p.slots, p.cmd_prep, p.cmd, p.ack);
        // Under NCQ, FLUSH CACHE and DATA SET MANAGEMENT (TRIM) are non-queued commands: the
        // host waits until no queued command is outstanding, and sends nothing else meanwhile
        // (Serial ATA 3.x, 13.6; queued TRIM is an optional later addition, not modelled).
        let ncq = p.kind == Kind::Sata && self.cfg.interface.ata.ncq;
        let lat = self.link.latency;
        while self.dev_inflight < slots && !self.exclusive {
            let Some(&(cmd, ready)) = self.host_q.front() else {
                break;
            };
            if ncq && matches!(self.cmds.get(cmd).op, Op::Flush | Op::Trim) {
                if self.dev_inflight > 0 {
                    break;
                }
                self.exclusive = true;
            }
            self.host_q.pop_front();
            self.dev_inflight += 1;
            let (_, sent) = self.chan_reserve(Chan::Cmd, now.max(ready) + prep, cmd_t);
            let arrived = sent + lat;
            if ack > SimTime::ZERO {
                self.chan_reserve(Chan::Status, arrived, ack);
            }
            self.q.push(arrived, Event::Submit { cmd });
        }
    }

    /// The host finished a command: free its slot (and buffer space) and send the next.
    #[inline(never)]
    pub(crate) fn release_slot(&mut self, now: SimTime, c: &Cmd) {
        self.dev_inflight -= 1;
        // A non-queued command is the only one in flight: its end frees the device.
        self.exclusive = false;
        if let Some(d) = self.dramif.as_mut() {
            if matches!(c.op, Op::Read | Op::Write) {
                d.buddy.free(c.buf);
            }
        }
        self.issue_queued(now);
    }

    /// Move `bytes` of a read command's data to the host from `at` (`pos`: their offset within
    /// the command); returns when they are in host memory (or, for the DRAM interface, in the
    /// shared buffer).
    #[inline]
    pub(crate) fn read_data_out(&mut self, at: SimTime, cmd: u32, bytes: u64, pos: u64) -> SimTime {
        if self.proto.is_none() {
            return self.link_up.reserve(at, self.link.wire_time(bytes)).1;
        }
        self.read_data_out_other(at, cmd, bytes, pos)
    }

    /// `read_data_out` for every interface but NVMe. Kept out of line so that the NVMe path,
    /// inlined into the event loop, stays small (measured: inlining it costs NVMe runs ~4 %).
    #[inline(never)]
    fn read_data_out_other(&mut self, at: SimTime, cmd: u32, bytes: u64, pos: u64) -> SimTime {
        if let Some(d) = self.dramif.as_mut() {
            if self.cfg.controller.skip_media {
                // Firmware answers at once: no data is moved into the buffer.
                return at;
            }
            let buf = self.cmds.get(cmd).buf;
            return d.controller_access(at, buf + pos, bytes);
        }
        let p = self.proto.as_ref().expect("not NVMe");
        let (setup, wire) = (p.read_setup, p.data_in.time(bytes));
        let lat = self.link.latency;
        let c = self.cmds.get_mut(cmd);
        let mut t = at;
        if !c.data_started {
            c.data_started = true;
            if setup > SimTime::ZERO {
                t = self.chan_reserve(Chan::Status, t, setup).1 + lat;
            }
        }
        self.chan_reserve(Chan::DataIn, t, wire).1
    }

    /// A write command's data phase from `now`: returns when all its data is in the controller.
    #[inline(never)]
    pub(crate) fn write_data_in(&mut self, now: SimTime, cmd: u32) -> SimTime {
        let c = self.cmds.get(cmd);
        let (len, buf) = (c.len, c.buf);
        if let Some(d) = self.dramif.as_mut() {
            if self.cfg.controller.skip_media {
                return now;
            }
            // The data is already in the shared buffer: the controller reads it from the banks.
            return d.controller_access(now, buf, len);
        }
        let p = self.proto.as_ref().expect("not NVMe");
        let (setup, grant, wire) = (p.write_setup, p.write_grant_bytes, p.data_out);
        let lat = self.link.latency;
        let mut t = now;
        let mut left = len;
        while left > 0 {
            let g = left.min(grant);
            if setup > SimTime::ZERO {
                t = self.chan_reserve(Chan::Status, t, setup).1 + lat;
            }
            t = self.chan_reserve(Chan::DataOut, t, wire.time(g)).1;
            left -= g;
        }
        t + lat
    }

    /// The device completes a command at `t`: its status message, the interrupt (or the poll
    /// that finds it), and the host's completion work.
    #[inline(never)]
    pub(crate) fn complete_other(&mut self, t: SimTime, cmd: u32) {
        if self.dramif.is_some() {
            return self.dram_complete(t, cmd);
        }
        let p = self.proto.as_ref().expect("not NVMe");
        let (status, host_status) = (p.status, p.host_status);
        let lat = self.link.latency;
        let (_, sent) = self.chan_reserve(Chan::Status, t, status);
        let (at, cost) = self.host_completion(sent + lat, host_status);
        let core = self.core_of_cmd(cmd);
        let (_, end) = self.cores[core].reserve(at, cost);
        self.q.push(end, Event::HostComplete { cmd });
    }

    /// A completion the host can see from `seen`: when its completion work starts and what it
    /// costs on the core. With an interrupt (a local line: pin, GPIO) the handler runs
    /// `interrupt_latency` later; with polling, at once for one poll more. `handler_extra` is
    /// the protocol's own work in the handler (status registers, the CQ entry).
    pub(crate) fn host_completion(
        &self,
        seen: SimTime,
        handler_extra: SimTime,
    ) -> (SimTime, SimTime) {
        let host = &self.cfg.host;
        let cost = host.complete_cost.0 + handler_extra;
        match self.interrupt {
            InterruptMode::Polling => (seen, host.poll_cost.0 + cost),
            _ => (seen + self.cfg.interface.interrupt_latency.0, cost),
        }
    }

    #[inline]
    pub(crate) fn core_of_cmd(&self, cmd: u32) -> usize {
        let req = self.cmds.get(cmd).req;
        self.insts[self.reqs.get(req).inst as usize].core as usize
    }
}
