//! A request into the device: the checks it must pass (its space, its bytes, its stream, the
//! ops only some back ends take), the host's split into commands and their way into the
//! interface queues, one system call's batch through the block layer, the host CPU's work a
//! driver charges, and the map prefetches a driver may start before it submits. Apart from
//! `mod.rs` (the device's parts and what is read of them) and `dispatch.rs` (what happens
//! once a command is in): everything here runs on the driver's call, before an event.

use super::{map_unit, Device};
use crate::config::BackendKind;
use crate::ctrl::backend::Scheme;
use crate::error::{got, says, Error, Invalid, Problem, Result};
use crate::ftl::{Ftl, Translation};
use crate::media::nand::Geometry;
use crate::request::{Flags, Op, Request};
use crate::sim::SimTime;

/// [`Device::prefetch_map`] on the page FTL `ftl`.
#[inline(always)]
fn prefetch_entry<M: Translation>(geo: &Geometry, ftl: &Ftl<M>, offset: u64) {
    if let Some(lpn) = map_unit(geo, ftl, offset) {
        ftl.prefetch(lpn);
    }
}

/// [`Device::prefetch_map_target`] on the page FTL `ftl`.
#[inline(always)]
fn prefetch_target<M: Translation>(geo: &Geometry, ftl: &Ftl<M>, op: Op, offset: u64) {
    if let Some(lpn) = map_unit(geo, ftl, offset) {
        match op {
            Op::Read => ftl.prefetch_read_target(lpn),
            Op::Write => ftl.prefetch_target(lpn),
            _ => {}
        }
    }
}

impl Device {
    /// Submit `r` at the simulated time `now` (not before the device's present): the host
    /// splits it into commands and sends each. Returns its id, named again in its
    /// [`Completion`](super::Completion). A request beyond the logical space (a raw device: the
    /// physical one; a fusion device: the space `Flags::PCM` names), a read or write of no
    /// bytes, and an erase on a device with an FTL or of PCM are refused.
    #[inline]
    pub fn submit(&mut self, now: SimTime, r: Request) -> Result<u32> {
        let r = self.check_request(r)?;
        let now = now.max(self.q.now());
        if self.idle_after != SimTime::ZERO {
            self.host_returns()?;
        }
        let Device {
            q,
            cmds,
            host,
            cpu,
            link,
            ..
        } = self;
        let cores = cpu.cores();
        let id = host.split(&r, cores, |c| {
            let core = c.core;
            let c_len = c.len;
            let cmd = cmds.insert(c);
            let ready = cpu.submit(core, now, c_len);
            link.send(cmd, ready, q);
        });
        link.issue(now, cmds, cpu, q);
        Ok(id)
    }

    /// Submit the requests of one system call together (fio's `iodepth_batch`): the block
    /// layer merges those that touch and orders them by its scheduler (`host::blk`), then
    /// each goes as [`Device::submit`] sends one. A merged request completes as each of the
    /// requests it was made of, one `on_complete` each.
    pub fn submit_batch(&mut self, now: SimTime, reqs: &[Request]) -> Result<()> {
        for r in reqs {
            self.check_request(*r)?;
        }
        let rules = crate::host::blk::PlugRules {
            max_bytes: self.host.max_cmd_bytes(),
            nomerges: self.cfg.host.nomerges,
            scheduler: self
                .cfg
                .host
                .scheduler
                .unwrap_or(crate::config::Scheduler::None),
        };
        for p in crate::host::blk::plug(reqs, rules) {
            // Through `submit` itself (its check passes again): a second copy of its body would
            // move the per-command closure out of line on the default path.
            let id = self.submit(now, p.req)?;
            if p.parts.len() > 1 {
                self.host.set_parts(id, p.parts.into_boxed_slice());
            }
        }
        Ok(())
    }

    /// One system call of a driver's I/O engine on the core of `queue`, from `now` (work
    /// submitted afterwards on that core waits for it).
    pub fn host_syscall(&mut self, now: SimTime, queue: u32) {
        let (core, now) = self.host_core(now, queue);
        self.cpu.syscall(core, now);
    }

    /// The host core of interface queue `queue`, and `now` brought up to the present.
    #[inline]
    fn host_core(&self, now: SimTime, queue: u32) -> (u32, SimTime) {
        (queue % self.cpu.cores(), now.max(self.q.now()))
    }

    /// Whether the map is larger than a processor's caches
    /// ([`PREFETCH_MIN_UNITS`](super::PREFETCH_MIN_UNITS)), so that a driver gains by
    /// [`Device::prefetch_map`]: on a smaller one the entries are at hand and prefetches cost
    /// instructions for nothing.
    #[inline(always)]
    pub fn map_outgrows_caches(&self) -> bool {
        self.map_outgrows_caches
    }

    /// Start the cache misses of the map entry of the data at byte `offset` (no effect on the
    /// simulation): for a driver that knows a request before it submits it.
    #[inline(always)]
    pub fn prefetch_map(&self, offset: u64) {
        if let Some(n) = self.backend.nand() {
            match &n.scheme {
                Scheme::Page(ftl, _) => prefetch_entry(&n.geo, ftl, offset),
                Scheme::Cached(ftl) => prefetch_entry(&n.geo, ftl, offset),
                _ => {}
            }
        }
    }

    /// The second stage of [`Device::prefetch_map`], once the entry has arrived: the records
    /// of the unit it points to that a read or write of it touches.
    #[inline(always)]
    pub fn prefetch_map_target(&self, op: Op, offset: u64) {
        if let Some(n) = self.backend.nand() {
            match &n.scheme {
                Scheme::Page(ftl, _) => prefetch_target(&n.geo, ftl, op, offset),
                Scheme::Cached(ftl) => prefetch_target(&n.geo, ftl, op, offset),
                _ => {}
            }
        }
    }

    /// One request of a driver through the kernel's layers above the block driver (file
    /// system, block layer, I/O scheduler: `host.fs_cost`, `block_cost`, `sched_cost`) on the
    /// core of `queue`, from `now`. The conventional drivers (jobs, trace replay) call it once
    /// per request; a host-side FTL that calls the driver directly (HFSL) does not.
    #[inline]
    pub fn host_kernel_request(&mut self, now: SimTime, queue: u32) {
        let cost = self.cpu.request_cost();
        if cost != SimTime::ZERO {
            self.host_work(now, queue, cost);
        }
    }

    /// Host CPU work of `dur` on the core of interface queue `queue` from `now` (a host-side
    /// driver's own work, e.g. HFSL's map): what that core does next queues behind it.
    /// Returns when the work is done (`now` for no work).
    pub fn host_work(&mut self, now: SimTime, queue: u32, dur: SimTime) -> SimTime {
        if dur == SimTime::ZERO {
            return now;
        }
        let (core, now) = self.host_core(now, queue);
        self.cpu.reserve(core, now, dur).1
    }

    /// Refuse a request the device cannot take, with a one-line reason; the request as the
    /// device takes it (a zone management command for all zones is addressed to the end of the
    /// namespace, where no zone starts: `ctrl::zoned` reads it so).
    #[inline(always)]
    fn check_request(&self, r: Request) -> Result<Request> {
        let space = crate::request::Space::of(r.flags);
        crate::ctrl::fusion::check_space(space, r.op, r.offset, r.len, self.capacity, || {
            self.backend.pcm_space_bytes()
        })?;
        if !matches!(r.op, Op::Read | Op::Write) {
            return self.check_other_op(r);
        }
        if r.len == 0 {
            return Err(Self::no_bytes(&r));
        }
        self.check_stream(&r)?;
        Ok(r)
    }

    #[cold]
    fn no_bytes(r: &Request) -> Error {
        Error::bad_job(Invalid::new(
            format!("{} request at byte {}", r.op.name(), r.offset),
            "len",
            got("0 bytes", "at least 1 byte"),
        ))
    }

    /// The stream a request carries, if any, is one the FTL has.
    #[inline(always)]
    fn check_stream(&self, r: &Request) -> Result<()> {
        if r.flags.stream() != 0 {
            if let Err(p) = self.check_stream_id(r.flags.stream()) {
                return Err(Error::bad_job(Invalid::new(
                    format!("{} request at byte {}", r.op.name(), r.offset),
                    "stream",
                    p,
                )));
            }
        }
        Ok(())
    }

    /// Whether write stream `stream` exists (`Backend::check_stream`). The one-line refusal
    /// names the field.
    pub fn check_stream_id(&self, stream: u8) -> std::result::Result<(), Problem> {
        self.backend.check_stream(stream)
    }

    /// The checks of the ops other than reads and writes (out of the common path): erases
    /// only on a raw device, appends and zone management only on a zoned drive.
    #[cold]
    #[inline(never)]
    fn check_other_op(&self, mut r: Request) -> Result<Request> {
        if r.len == 0 && !r.op.moves_no_data() {
            return Err(Self::no_bytes(&r));
        }
        self.check_stream(&r)?;
        let kind = self.backend.kind();
        if r.op == Op::Erase && kind == BackendKind::Pcm {
            return Err(Error::bad_job(Invalid::unnamed(
                "erase",
                says("this device is PCM, updated in place; it has no erase"),
            )));
        }
        let zoned = kind == BackendKind::Zoned;
        if (r.op == Op::Append || r.op.is_zone_management()) && !zoned {
            return Err(Error::bad_job(Invalid::unnamed(
                r.op.name(),
                says("this device has no zones (a zoned drive has a [zns] section)"),
            )));
        }
        if r.op == Op::Erase && zoned {
            return Err(Error::bad_job(Invalid::unnamed(
                "erase",
                says("this is a zoned drive; its blocks are erased by zone resets (zone_reset)"),
            )));
        }
        if r.op == Op::Erase && self.backend.raw().is_none() {
            return Err(Error::bad_job(Invalid::unnamed(
                "erase",
                says(
                    "this device has an FTL that erases for itself; erases are for a raw device \
                     (ftl.kind = \"none\")",
                ),
            )));
        }
        if r.op.is_zone_management() && r.flags.contains(Flags::ALL_ZONES) {
            r.offset = self.capacity;
        }
        Ok(r)
    }

    /// A host request arrives: an idle period, if any, ends (background GC starts no new
    /// victims) and a pending idle check is void.
    #[inline]
    fn host_returns(&mut self) -> Result<()> {
        self.submissions = self.submissions.wrapping_add(1);
        match self.backend.page_ftl_mut() {
            Some(ftl) => ftl.set_idle(false),
            // No page-FTL GC to hold back.
            None => Ok(()),
        }
    }
}
