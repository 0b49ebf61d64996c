//! The host side of the DRAM-interface protocol (seed 000, `iface::dramif`): space in the data
//! buffer before submission, write data copied in before the SQ entry and doorbell, read data
//! copied out in the completion handler, and the buffer freed when the host is done.

use crate::sim::SimTime;
use crate::system::{Event, System};
use crate::workload::Op;

/// Bytes of an SQ entry plus the doorbell register write, and of a CQ entry plus its head update.
const SUBMIT_BYTES: u64 = 64 + 4;
const COMPLETE_BYTES: u64 = 16 + 4;

impl System {
    /// Submit waiting commands, in order, while the SQ has room and the buffer has space for
    /// the command at the head (which otherwise waits, and everything behind it).
    pub(crate) fn dram_issue(&mut self, now: SimTime) {
        let slots = self.proto.as_ref().expect("DRAM interface").slots;
        let entry = self.cfg.interface.dram.entry_access.0;
        let t = self.q.now();
        self.dramif
            .as_mut()
            .expect("DRAM interface")
            .forget_host_windows(t);
        while self.dev_inflight < slots {
            let Some(&(cmd, ready)) = self.host_q.front() else {
                break;
            };
            let c = self.cmds.get(cmd);
            let (op, len) = (c.op, c.len);
            let core = self.core_of_cmd(cmd);
            let d = self.dramif.as_mut().expect("DRAM interface");
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
            self.dev_inflight += 1;
            self.cmds.get_mut(cmd).buf = buf;
            let at = now.max(ready);
            // Write data must be in the buffer before the command is submitted (seed 000 §3).
            let t = if op == Op::Write {
                d.host_copy(at, &mut self.cores[core], buf, len)
            } else {
                at
            };
            d.count_entry(SUBMIT_BYTES);
            let (_, rung) = self.cores[core].reserve(t, entry * 2);
            self.q.push(rung + self.link.latency, Event::Submit { cmd });
        }
    }

    /// The device posted the completion at `t`: GPIO interrupt (or a poll), the handler reads
    /// the CQ entry, and a read's data is copied out of the buffer.
    pub(crate) fn dram_complete(&mut self, t: SimTime, cmd: u32) {
        // The handler reads the CQ entry.
        let (at, cost) = self.host_completion(t, self.cfg.interface.dram.entry_access.0);
        let core = self.core_of_cmd(cmd);
        let (_, mut end) = self.cores[core].reserve(at, cost);
        let c = self.cmds.get(cmd);
        let (op, buf, len) = (c.op, c.buf, c.len);
        let d = self.dramif.as_mut().expect("DRAM interface");
        d.count_entry(COMPLETE_BYTES);
        if op == Op::Read {
            end = d.host_copy(end, &mut self.cores[core], buf, len);
        }
        self.q.push(end, Event::HostComplete { cmd });
    }
}
