//! The device's event loop: [`Device::run`] and its variants (up to a time, to idle, to an
//! event), one event's step (a driver's wake-up, a request's completion, background GC's idle
//! check), and the dispatch `match` that routes a device event to the layer that owns it —
//! one handler per medium and FTL scheme (the page-mapped FTL's inlined into the loop, a
//! scheme with its own map and a PCM-only device each out of line), each handing the NAND
//! layers one `ctrl::Ports` built for the event, then a die's phase ends and a read's sensed
//! units. Apart from `submit.rs` (what a driver's call does before any
//! event): everything here runs as the queue's events come due.

use super::{map_unit, Device, Driver, Finished};
use crate::ctrl::backend::{Backend, NandBackend, Scheme};
use crate::ctrl::buffer::{BufferManager, Lines};
use crate::ctrl::datacheck::DataCheck;
use crate::ctrl::fil::{Fil, NoPageGc, Step};
use crate::ctrl::hil::{Hil, MapOwner, MapWork};
use crate::ctrl::pcm::PcmCtrl;
use crate::ctrl::{FlashPort, Ports};
use crate::error::Result;
use crate::event::Event;
use crate::ftl::mapping_cache::Stage;
use crate::ftl::{Ftl, Translation};
use crate::host::Part;
use crate::iface::{HostPort, Interface};
use crate::media::nand::Geometry;
use crate::request::{Completion, Op, Space};
use crate::sim::{EventQueue, SimTime};

/// A fusion device's PCM controller, for a PCM event on a device with NAND (of the NAND
/// schemes, only the fusion device has PCM to raise one).
fn fusion_pcm(scheme: &mut Scheme) -> &mut PcmCtrl {
    match scheme {
        Scheme::Fusion { pcm, .. } => pcm,
        _ => unreachable!("PCM events come from PCM"),
    }
}

/// The host has left the device idle: background GC may start in the page FTL `ftl`, its work
/// handed to the dies.
fn start_idle_gc<M: Translation>(
    now: SimTime,
    ftl: &mut Ftl<M>,
    fil: &mut Fil,
    check: Option<&mut DataCheck>,
    q: &mut EventQueue<Event>,
) -> Result<()> {
    ftl.set_idle(true)?;
    fil.drain_gc(now, ftl, check, q);
    Ok(())
}

/// With `interface.controller_slots`: the NVMe controller posted a completion entry, and the
/// arbiter fills the free slot (whatever the medium).
#[inline]
fn slot_freed(now: SimTime, link: &mut Interface, q: &mut EventQueue<Event>) {
    let Interface::Nvme(n) = link else {
        unreachable!("only NVMe bounds its commands")
    };
    n.slot_freed(now, q);
}

/// A driver that only collects completions, for [`Device::run_to_idle`].
#[derive(Default)]
struct Collect(Finished);

impl Driver for Collect {
    fn on_complete(&mut self, _dev: &mut Device, now: SimTime, done: Completion) {
        self.0.push((done.id, now, done.status));
    }
}

impl Device {
    /// Handle events until none is left, calling `driver` on completions and wake-ups; false
    /// if `progress(completed, expected)`, called every `check_every` events, asked to stop.
    pub fn run<D: Driver>(
        &mut self,
        driver: &mut D,
        check_every: u64,
        progress: &mut dyn FnMut(u64, u64) -> bool,
    ) -> Result<bool> {
        let mut next_check = self.q.handled.saturating_add(check_every);
        while let Some((now, ev)) = self.q.pop() {
            self.step(driver, now, ev)?;
            if self.q.handled >= next_check {
                next_check = next_check.saturating_add(check_every);
                if !progress(self.host.completed(), driver.expected_requests()) {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// Handle the events due at or before `limit`, calling `driver` as [`Device::run`] does,
    /// and stop: the model's clock is then at its last event, at most `limit`. For a driver
    /// whose requests arrive in wall-clock time: it submits what arrived, runs the model up to
    /// the present, answers what completed, and sleeps until [`Device::next_event_time`] or its
    /// next input.
    pub fn run_until<D: Driver>(&mut self, driver: &mut D, limit: SimTime) -> Result<()> {
        while self.q.peek_time().is_some_and(|t| t <= limit) {
            let (now, ev) = self.q.pop().expect("peeked");
            self.step(driver, now, ev)?;
        }
        Ok(())
    }

    /// When the next event is due; None when the device is idle.
    pub fn next_event_time(&self) -> Option<SimTime> {
        self.q.peek_time()
    }

    /// One event: the driver's own, a request's completion (which may call the driver), or a
    /// device event.
    #[inline]
    fn step<D: Driver>(&mut self, driver: &mut D, now: SimTime, ev: Event) -> Result<()> {
        match ev {
            Event::Wake { token } => driver.on_wake(self, now, token),
            Event::HostComplete { cmd } => {
                if let Some(done) = self.on_host_complete(now, cmd) {
                    // A merged request completes as each submitted request it was made of,
                    // each counted by the host and reported. One loop for both cases: a
                    // second copy would keep the compiler from inlining the driver's
                    // `on_complete` and the histogram's record on the default path.
                    let merged = self.host.take_parts(done.id);
                    let one = [Part {
                        offset: done.offset,
                        len: done.len,
                        arrival: done.arrival,
                    }];
                    for p in merged.as_deref().unwrap_or(&one) {
                        self.host.count(now, done.op, p, done.status, done.queue);
                        let each = Completion {
                            offset: p.offset,
                            len: p.len,
                            arrival: p.arrival,
                            ..done
                        };
                        driver.on_complete(self, now, each);
                    }
                }
                if self.idle_after != SimTime::ZERO {
                    self.arm_idle_check(now);
                }
            }
            Event::IdleCheck { submissions } => {
                if submissions == self.submissions && !driver.finished(now) {
                    self.host_leaves(now)?;
                }
            }
            _ => self.handle(now, ev)?,
        }
        Ok(())
    }

    /// Run until no event is pending; returns each request finished since the last call with
    /// its completion time and status, in completion order.
    pub fn run_to_idle(&mut self) -> Result<Finished> {
        Ok(self.run_to_idle_or_event(u64::MAX)?.0)
    }

    /// [`Device::run_to_idle`], stopping early once the device has handled `event` events in
    /// all (a power cut armed at that event); the flag says whether it stopped there.
    pub fn run_to_idle_or_event(&mut self, event: u64) -> Result<(Finished, bool)> {
        let left = event.saturating_sub(self.q.handled);
        if left == 0 {
            return Ok((Vec::new(), true));
        }
        let mut c = Collect::default();
        let idle = self.run(&mut c, left, &mut |_, _| false)?;
        Ok((c.0, !idle))
    }

    /// Handle one device event. Always inlined into the event loop (its one caller): as a call
    /// it saved and restored six registers and re-derived the layers' addresses per event
    /// (callgrind, `profile_run 200000 small-tlc`: 919,440,804 -> 890,621,125 instructions).
    #[inline(always)]
    fn handle(&mut self, now: SimTime, ev: Event) -> Result<()> {
        let Device {
            q,
            cmds,
            cpu,
            link,
            cache,
            backend,
            check,
            ..
        } = self;
        let nand = match backend {
            Backend::Nand(n) => n,
            Backend::Pcm(p) => {
                let up = &mut HostPort { q, cmds, link, cpu };
                return Self::handle_pcm(now, ev, p, up, cache.buffer_mut(), check);
            }
        };
        let NandBackend {
            geo,
            hil,
            fil,
            scheme,
        } = nand;
        let (ftl, ahead) = match scheme {
            Scheme::Page(ftl, ahead) => (ftl, ahead),
            Scheme::Cached(ftl) => {
                let up = HostPort { q, cmds, link, cpu };
                let cache = cache.buffer_mut();
                // No read-ahead with a cached map (`MapWork::Ahead`).
                let ahead = &mut ();
                return Self::handle_page(now, ev, geo, hil, fil, ftl, ahead, up, cache, check);
            }
            other => {
                let up = HostPort { q, cmds, link, cpu };
                let cache = cache.buffer_mut();
                return Self::handle_own_map(now, ev, hil, fil, other, up, cache, check);
            }
        };
        let up = HostPort { q, cmds, link, cpu };
        let cache = cache.buffer_mut();
        Self::handle_page(now, ev, geo, hil, fil, ftl, ahead, up, cache, check)
    }

    /// Handle one event of the page-mapped FTL whose map is `M` (`ftl::Translation`): the
    /// whole map or a mapping cache, each scheme's path compiled for its own map and both
    /// inlined into the event loop (callgrind, `profile_run 200000 small-tlc`: 883,001,602 ->
    /// 880,340,859 instructions; with `ftl.mapping = "cached"` and a 256 KiB cache,
    /// 1,557,438,856 -> 1,513,782,024 against the cached path out of line: its call, per event,
    /// saved and restored registers).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn handle_page<M: MapWork>(
        now: SimTime,
        ev: Event,
        geo: &Geometry,
        hil: &mut Hil,
        fil: &mut Fil,
        ftl: &mut Ftl<M>,
        ahead: &mut M::Ahead,
        up: HostPort,
        cache: Option<&mut BufferManager>,
        check: &mut Option<DataCheck>,
    ) -> Result<()> {
        let HostPort { q, cmds, link, cpu } = up;
        match ev {
            Event::Submit { cmd } => {
                // The command is dispatched a fetch and some firmware time from now: start the
                // map look-up's cache misses early (the simulated time is unaffected).
                let c = cmds.get(cmd);
                if let Some(first) = map_unit(geo, ftl, c.offset) {
                    ftl.prefetch(first);
                }
                match link {
                    Interface::Nvme(n) => n.on_doorbell(now, cmd, c.sq, q),
                    // The command came over the interface itself: no queue to fetch from.
                    _ => hil.accept(now, cmd, c.len, &ftl.stats, q),
                }
            }
            Event::FetchDone { sq } => {
                let Interface::Nvme(n) = link else {
                    unreachable!("only NVMe fetches")
                };
                let count = n.fetch_done(sq);
                for _ in 0..count {
                    let cmd = n.fetched(sq);
                    let c = cmds.get(cmd);
                    if c.op == Op::Read {
                        if let Some(lpn) = map_unit(geo, ftl, c.offset) {
                            ftl.prefetch_read_target(lpn);
                        }
                    }
                    hil.accept(now, cmd, c.len, &ftl.stats, q);
                }
                n.fetch_more(now, sq, q);
            }
            Event::SlotFree => slot_freed(now, link, q),
            // The rest reach past the HIL: through the ports.
            _ => {
                let p = &mut Ports {
                    up: HostPort { q, cmds, link, cpu },
                    flash: FlashPort::new(fil, ftl, check),
                    cache,
                };
                match ev {
                    Event::Dispatch { cmd } => hil.dispatch(now, cmd, ahead, p)?,
                    Event::WriteDataIn { cmd } => hil.write_data_in(now, cmd, p)?,
                    Event::RmwDone { cmd } => hil.write_units(now, cmd, p)?,
                    Event::MapReady { cmd, write } => {
                        let stage = if write { Stage::Write } else { Stage::Read };
                        hil.map_resume(now, cmd, stage, p)?
                    }
                    Event::DieStep { die } => Self::die_step_page(now, die, hil, p)?,
                    _ => unreachable!("driver events are handled in Device::step, PCM's are PCM's"),
                }
            }
        }
        Ok(())
    }

    /// Handle one event of a NAND scheme with its own map (block-mapped, raw, fusion, zoned):
    /// no page FTL, so no map entry to warm and no page-FTL GC work to charge to the firmware
    /// core; the flash port carries `NoPageGc`. Never inlined (as the PCM-only handler): the
    /// page FTL's event loop stays as small as without these schemes.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn handle_own_map(
        now: SimTime,
        ev: Event,
        hil: &mut Hil,
        fil: &mut Fil,
        scheme: &mut Scheme,
        up: HostPort,
        cache: Option<&mut BufferManager>,
        check: &mut Option<DataCheck>,
    ) -> Result<()> {
        let no_page_gc = crate::ftl::FtlStats::default();
        match ev {
            Event::Submit { cmd } => {
                let c = up.cmds.get(cmd);
                match up.link {
                    Interface::Nvme(n) => n.on_doorbell(now, cmd, c.sq, up.q),
                    // The command came over the interface itself: no queue to fetch from.
                    // A fusion device's commands all go through the one firmware core.
                    _ => hil.accept(now, cmd, c.len, &no_page_gc, up.q),
                }
            }
            Event::FetchDone { sq } => {
                let Interface::Nvme(n) = up.link else {
                    unreachable!("only NVMe fetches")
                };
                for _ in 0..n.fetch_done(sq) {
                    let cmd = n.fetched(sq);
                    hil.accept(now, cmd, up.cmds.get(cmd).len, &no_page_gc, up.q);
                }
                n.fetch_more(now, sq, up.q);
            }
            Event::SlotFree => slot_freed(now, up.link, up.q),
            // The rest reach past the HIL: through the ports.
            _ => {
                let mut owner = NoPageGc;
                let p = &mut Ports {
                    up,
                    flash: FlashPort::new(fil, &mut owner, check),
                    cache,
                };
                match ev {
                    Event::Dispatch { cmd } => match scheme {
                        Scheme::BlockMapped(h) => hil.dispatch_block(now, cmd, h, p)?,
                        // The fusion firmware's command distribution (`ctrl::fusion`).
                        Scheme::Fusion { pcm, .. } if p.up.cmds.get(cmd).space == Space::Pcm => {
                            pcm.dispatch(now, cmd, &mut p.up, None, p.flash.check)?
                        }
                        Scheme::Raw(raw) | Scheme::Fusion { raw, .. } => {
                            hil.dispatch_raw(now, cmd, raw, p)
                        }
                        Scheme::Zoned(z) => hil.dispatch_zoned(now, cmd, z, p)?,
                        Scheme::Page(_, _) | Scheme::Cached(_) => unreachable!("the page FTL's"),
                    },
                    Event::WriteDataIn { cmd } => match scheme {
                        Scheme::BlockMapped(h) => hil.write_data_in_block(now, cmd, h, p)?,
                        Scheme::Raw(raw) | Scheme::Fusion { raw, .. } => {
                            hil.write_data_in_raw(now, cmd, raw, p)
                        }
                        Scheme::Zoned(z) => hil.write_data_in_zoned(now, cmd, z, p)?,
                        Scheme::Page(_, _) | Scheme::Cached(_) => unreachable!("the page FTL's"),
                    },
                    // A fusion device's PCM events, handled as a PCM-only device's: the NAND
                    // path above never asks which medium it serves.
                    Event::PcmDispatch { .. }
                    | Event::PcmDataIn { .. }
                    | Event::PcmWriteEnd { .. }
                    | Event::PcmFlushEnd { .. } => {
                        let Ports { up, flash, cache } = p;
                        let pcm = fusion_pcm(scheme);
                        Self::handle_pcm(now, ev, pcm, up, cache.as_deref_mut(), flash.check)?
                    }
                    // Only a block-mapped FTL reads before it writes, of these schemes.
                    Event::RmwDone { cmd } => match scheme {
                        Scheme::BlockMapped(h) => Hil::write_units_block(now, cmd, h, p)?,
                        _ => unreachable!("a read-modify-write of a scheme without a map"),
                    },
                    Event::DieStep { die } => Self::die_step_own_map(now, die, hil, scheme, p)?,
                    // No translation pages: no map to wait for.
                    _ => unreachable!("driver events are handled in Device::step"),
                }
            }
        }
        Ok(())
    }

    /// Handle one event of a PCM-only device: its PCM controller takes every command (it has
    /// no NAND layer); a fusion device's PCM events come here too. Never inlined, and cold for
    /// the NAND event loop's layout: that loop stays as small as without PCM.
    #[cold]
    #[inline(never)]
    fn handle_pcm(
        now: SimTime,
        ev: Event,
        p: &mut PcmCtrl,
        up: &mut HostPort,
        cache: Option<&mut BufferManager>,
        check: &mut Option<DataCheck>,
    ) -> Result<()> {
        match ev {
            Event::Submit { cmd } => match up.link {
                Interface::Nvme(n) => n.on_doorbell(now, cmd, up.cmds.get(cmd).sq, up.q),
                // The command came over the interface itself: no queue to fetch from.
                _ => p.accept(now, cmd, up.q),
            },
            Event::FetchDone { sq } => {
                let Interface::Nvme(n) = up.link else {
                    unreachable!("only NVMe fetches")
                };
                // No map to warm.
                for _ in 0..n.fetch_done(sq) {
                    p.accept(now, n.fetched(sq), up.q);
                }
                n.fetch_more(now, sq, up.q);
            }
            Event::SlotFree => slot_freed(now, up.link, up.q),
            Event::PcmDispatch { cmd } => p.dispatch(now, cmd, up, cache, check)?,
            Event::PcmDataIn { cmd } => p.write_data_in(now, cmd, up, cache, check)?,
            Event::PcmWriteEnd { write } => p.write_end(now, write, up, cache, check)?,
            Event::PcmFlushEnd { slot } => p.flush_end(now, slot, up, cache, check)?,
            _ => unreachable!("a PCM-only device raises no NAND event, nor a driver's here"),
        }
        Ok(())
    }

    /// A die's phase ended, on the page FTL: the FIL handles GC phases itself and returns the
    /// reads and programs that ended, which the HIL finishes one by one before the die takes
    /// its next operation.
    #[inline]
    fn die_step_page<M: MapWork>(
        now: SimTime,
        die: u32,
        hil: &mut Hil,
        p: &mut Ports<Ftl<M>>,
    ) -> Result<()> {
        let (flash, q) = (&mut p.flash, &mut *p.up.q);
        match flash
            .fil
            .die_step(now, die, flash.ftl, flash.check.as_mut(), q)?
        {
            Step::Sensed(op) => Self::sensed(now, die, op, hil, p)?,
            Step::Programmed(op) => {
                for &t in &op {
                    hil.program_done(now, t, p)?;
                }
                p.flash.fil.finish_op(now, die, op, p.flash.ftl, p.up.q);
            }
            // The page FTL's erases are its GC's, which the FIL finishes itself.
            Step::Erased(_) => unreachable!("a block erase on the page FTL"),
            Step::Done => {}
        }
        // With a cached map, GC started by an erase moved units: their translation pages need
        // updates.
        hil.pump_map(now, p)
    }

    /// A die's phase ended, under a scheme with its own map: its reads, programs and erases
    /// go back to the HIL's handlers of the scheme.
    fn die_step_own_map(
        now: SimTime,
        die: u32,
        hil: &mut Hil,
        scheme: &mut Scheme,
        p: &mut Ports<NoPageGc>,
    ) -> Result<()> {
        let (flash, q) = (&mut p.flash, &mut *p.up.q);
        match flash
            .fil
            .die_step(now, die, flash.ftl, flash.check.as_mut(), q)?
        {
            Step::Sensed(op) => match (&p.cache, scheme) {
                // A cache buffer keeps what a read brought in if the map of the scheme behind
                // it still points there.
                (Some(_), Scheme::BlockMapped(h)) => {
                    Self::sensed(now, die, op, hil, &mut p.with_blocks(h))?
                }
                (Some(_), Scheme::Zoned(z)) => {
                    Self::sensed(now, die, op, hil, &mut p.with_zoned(z))?
                }
                _ => Self::sensed(now, die, op, hil, p)?,
            },
            Step::Programmed(op) => {
                match scheme {
                    Scheme::BlockMapped(h) => {
                        let p = &mut p.with_blocks(h);
                        for &t in &op {
                            hil.program_done_block(now, t, p)?;
                        }
                    }
                    // A zoned drive's flushes and written-through blocks go back to the cache
                    // buffer in front of it.
                    Scheme::Zoned(z) => {
                        let p = &mut p.with_zoned(z);
                        for &t in &op {
                            hil.program_done_by(now, t, |_| {}, p)?;
                        }
                    }
                    // The raw firmware's pages were taken when the program was accepted.
                    Scheme::Raw(_) | Scheme::Fusion { .. } => {
                        for &t in &op {
                            hil.program_done_by(now, t, |_| {}, p)?;
                        }
                    }
                    Scheme::Page(_, _) | Scheme::Cached(_) => unreachable!("the page FTL's"),
                }
                p.flash.fil.finish_op(now, die, op, p.flash.ftl, p.up.q);
            }
            Step::Erased(op) => {
                for &t in &op {
                    hil.erase_done(now, t, p);
                }
                p.flash.fil.finish_op(now, die, op, p.flash.ftl, p.up.q);
            }
            Step::Done => {}
        }
        Ok(())
    }

    /// A read's units were sensed: each goes out on the channel and to the HIL, then the die is
    /// free. What the cache buffer, if any, keeps of them follows the map the flash port
    /// carries.
    #[inline(always)]
    fn sensed<O: MapOwner>(
        now: SimTime,
        die: u32,
        op: Vec<u32>,
        hil: &mut Hil,
        p: &mut Ports<O>,
    ) -> Result<()>
    where
        for<'b> FlashPort<'b, O>: Lines,
    {
        let mut last = now;
        for &t in &op {
            let (out, ready) = p.flash.fil.read_out(now, die);
            last = out;
            hil.read_done(ready, t, p)?;
        }
        p.flash
            .fil
            .finish_read(now, die, last, op, p.flash.ftl, p.up.q);
        Ok(())
    }

    /// With nothing in flight, check again once the idle time has passed.
    #[inline]
    #[cold]
    fn arm_idle_check(&mut self, now: SimTime) {
        if self.cmds.is_empty() {
            let at = now + self.idle_after;
            self.q.push(
                at,
                Event::IdleCheck {
                    submissions: self.submissions,
                },
            );
        }
    }

    /// The host has sent nothing for the idle time: background GC may start.
    #[cold]
    fn host_leaves(&mut self, now: SimTime) -> Result<()> {
        if let Backend::Nand(n) = &mut self.backend {
            let (check, q) = (self.check.as_mut(), &mut self.q);
            match &mut n.scheme {
                Scheme::Page(ftl, _) => start_idle_gc(now, ftl, &mut n.fil, check, q)?,
                Scheme::Cached(ftl) => start_idle_gc(now, ftl, &mut n.fil, check, q)?,
                _ => {}
            }
        }
        Ok(())
    }

    /// The host finished the completion work of `cmd`: free its slot, and on its request's
    /// last command report the request.
    ///
    /// (Always inlined: as a call of its own it cost 1.3 % of profile_run's instructions.)
    #[inline(always)]
    fn on_host_complete(&mut self, now: SimTime, cmd: u32) -> Option<Completion> {
        let c = self.cmds.remove(cmd);
        self.link
            .release(now, &c, &mut self.cmds, &mut self.cpu, &mut self.q);
        let (id, r) = self.host.command_finished(now, c.req, c.sq, c.status)?;
        if c.op == Op::Append {
            // The zoned firmware set the command's offset to where its data went.
            self.note_append(id, c.offset);
        }
        Some(Completion {
            id,
            op: r.op,
            offset: r.offset,
            len: r.len,
            queue: r.queue,
            arrival: r.arrival,
            done: now,
            status: r.status,
        })
    }
}
