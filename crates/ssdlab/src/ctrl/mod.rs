//! The controller: the host interface layer (`hil`: firmware time, the split of commands into
//! map units, data movement), the cache buffer (`buffer` over `cache`'s lines), and the flash
//! interface layer (`fil`: per-die queues and NAND operations, the die model in `die`).
//!
//! Controller handlers reach the rest of the device through two ports, each a bundle of the
//! layers on one side: [`HostPort`] up to the host (the interface that moves data and posts
//! completions, the host CPU that handles them, the command table, the event queue) and
//! [`FlashPort`] down to flash (the FIL, the FTL, and the test oracle that watches both).

pub mod backend;
pub mod buffer;
pub mod cache;
pub mod datacheck;
pub mod die;
pub mod fil;
pub mod fusion;
pub mod hil;
pub mod hybrid;
pub mod pcm;
pub mod raw;
#[cfg(test)]
pub(crate) mod test_rig;

use crate::event::Event;
use crate::ftl::Ftl;
use crate::host::HostCpu;
use crate::iface::Interface;
use crate::request::Cmd;
use crate::sim::{EventQueue, SimTime, Slab};
use datacheck::DataCheck;
use fil::Fil;

/// The controller's way up to the host.
pub(crate) struct HostPort<'a> {
    pub q: &'a mut EventQueue<Event>,
    pub cmds: &'a mut Slab<Cmd>,
    pub link: &'a mut Interface,
    pub cpu: &'a mut HostCpu,
}

impl HostPort<'_> {
    /// Command `cmd` is done in the controller at `t`: status to the host.
    #[inline]
    pub fn complete(&mut self, t: SimTime, cmd: u32) {
        self.link.complete(t, cmd, self.cmds, self.cpu, self.q);
    }

    /// `bytes` of read command `cmd`'s data, at `pos` within it, go up from `at`; returns when
    /// they are in host memory.
    #[inline]
    pub fn push_read_data(&mut self, at: SimTime, cmd: u32, bytes: u64, pos: u64) -> SimTime {
        self.link
            .push_read_data(at, self.cmds.get_mut(cmd), bytes, pos)
    }

    /// A read command's media reads are queued: it waits for `txns` of them, and
    /// `direct_bytes` (units with no media read: unmapped, or still in the controller) go up
    /// from `direct_at`. With no media read it completes once that data is up. (Always inlined:
    /// on the read path a call of its own cost 0.4 % of profile_run's instructions.)
    #[inline(always)]
    pub fn reads_dispatched(
        &mut self,
        now: SimTime,
        cmd: u32,
        txns: u32,
        direct_bytes: u64,
        direct_at: SimTime,
    ) {
        self.cmds.get_mut(cmd).txns_left = txns;
        if direct_bytes > 0 {
            let end = self.push_read_data(direct_at, cmd, direct_bytes, 0);
            let c = self.cmds.get_mut(cmd);
            c.data_done = c.data_done.max(end);
        }
        if txns == 0 {
            let done = self.cmds.get(cmd).data_done.max(now);
            self.complete(done, cmd);
        }
    }
}

/// The controller's way down to flash.
pub(crate) struct FlashPort<'a> {
    pub fil: &'a mut Fil,
    pub ftl: &'a mut Ftl,
    /// Tests only: the data-placement oracle.
    pub check: &'a mut Option<DataCheck>,
}

impl FlashPort<'_> {
    /// Hand the GC work the FTL emitted to the dies of its planes.
    #[inline]
    pub fn drain_gc(&mut self, now: SimTime, q: &mut EventQueue<Event>) {
        self.fil.drain_gc(now, self.ftl, self.check.as_mut(), q);
    }
}
