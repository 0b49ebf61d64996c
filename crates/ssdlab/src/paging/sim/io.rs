//! The paging simulation's swap I/O: a batch of slots submitted as requests of consecutive
//! slots, the discards the swap area asked for, and completions (the frames a read or a write
//! frees, and the waits a completion ends).

use super::*;

impl<'w, B: SwapBackend> PagingSim<'w, B> {
    /// Submit `slots` (ascending, with their frames) as requests of consecutive slots, each
    /// at most `max_io` (the block layer merging adjacent bios).
    pub(super) fn submit_runs(&mut self, op: Op, slots: &[(u32, u32)], now: SimTime) -> Result<()> {
        // A request holds one page at least, even where `max_io` is below a page.
        let max_pages = ((self.cfg.max_io.0 / PAGE_BYTES) as usize).max(1);
        let mut rest = slots;
        while let Some(&(first, _)) = rest.first() {
            // The run: the slots that follow one another from `first`, at most `max_pages`.
            let window = &rest[..rest.len().min(max_pages)];
            let n = 1 + window
                .windows(2)
                .take_while(|w| w[1].0 == w[0].0 + 1)
                .count();
            let (run, after) = rest.split_at(n);
            self.submit(op, first, n as u32, run.iter().map(|p| p.1), now)?;
            rest = after;
        }
        Ok(())
    }

    fn submit(
        &mut self,
        op: Op,
        slot: u32,
        n: u32,
        frames: impl IntoIterator<Item = u32>,
        now: SimTime,
    ) -> Result<()> {
        let offset = self.cfg.swap_offset.0 + slot as u64 * PAGE_BYTES;
        let len = n as u64 * PAGE_BYTES;
        let id = self.dev.submit(now, op, offset, len)?;
        let code = match op {
            Op::Read => 0,
            Op::Write => 1,
            _ => 2,
        };
        if code == 1 {
            self.writes_in_flight += 1;
        }
        self.trace.push(IoRecord {
            op: code,
            offset,
            len,
            submit_ps: now.0,
            done_ps: 0,
        });
        self.ios.insert(id, code, self.trace.len() - 1, frames)
    }

    pub(super) fn reads_in_flight(&self) -> usize {
        self.ios.values().filter(|i| i.op == 0).count()
    }

    /// Send the discards the swap area asked for, as TRIMs. Called after every fault and
    /// reclaim batch, and mostly with none: the check is inline, the sending out of line.
    #[inline]
    pub(super) fn flush_trims_at(&mut self, now: SimTime) -> Result<()> {
        if self.area.trims.is_empty() {
            return Ok(());
        }
        self.send_trims_at(now)
    }

    #[inline(never)]
    fn send_trims_at(&mut self, now: SimTime) -> Result<()> {
        for (first, n) in std::mem::take(&mut self.area.trims) {
            self.submit(Op::Trim, first, n, [], now)?;
        }
        Ok(())
    }

    pub(super) fn complete(&mut self, id: u32, t: SimTime) -> Result<()> {
        let Some(io) = self.ios.take(id) else {
            return Err(Error::bad_device(Invalid::unnamed(
                "paging",
                says(format!("completion of unknown request {id}")),
            )));
        };
        self.trace[io.rec].done_ps = t.0;
        match io.op {
            0 => {
                // The frame the application waits for (NONE, never a frame, if it waits for
                // none): is it one of this read's? Found in the pass that ends their reads.
                let waited = match self.app {
                    App::Frame(f) => f,
                    _ => NONE,
                };
                let mut ends_wait = false;
                for &f in self.ios.frames_of(&io) {
                    self.mem.frames[f as usize].flags &= !READING;
                    ends_wait |= f == waited;
                }
                if ends_wait {
                    if let Some(p) = &mut self.pending {
                        self.bd[2] += (t - p.blocked_at).0;
                    }
                    self.app = App::Run;
                    self.app_t = self.app_t.max(t);
                }
            }
            1 => {
                self.writes_in_flight -= 1;
                let frames = self.ios.frames_of(&io);
                // Every page of the write ends its writeback.
                self.mem.writeback -= frames.len() as u64;
                self.pages_written_back += frames.len() as u64;
                for &f in frames {
                    self.mem.frames[f as usize].flags &= !WRITEBACK;
                    let fl = self.mem.frames[f as usize].flags;
                    // The page was not faulted back while it was written: it is freed now (the
                    // rotation to the inactive tail and the next scan, at once).
                    if fl & (MAPPED | DIRTY | READING) == 0 {
                        let s = self.mem.frames[f as usize].slot;
                        self.slots[s as usize].cache = NONE;
                        self.mem.release(f);
                        self.res.reclaim.freed_after_writeback += 1;
                    }
                }
            }
            _ => {}
        }
        self.ios.retire();
        self.wake_waiters(t, io.op == 1);
        Ok(())
    }

    fn wake_waiters(&mut self, t: SimTime, write_done: bool) {
        let off = self.congestion_off;
        let any_write_wakes = self.cfg.congestion_wake == CongestionWake::Completion;
        let (inflight, written) = (self.writes_in_flight, self.pages_written_back);
        let wakes = |w: &mut Wait| {
            let wake = match w.kind {
                // Any completion: a read may also free the application to go on.
                WaitKind::NextWrite => true,
                WaitKind::Congestion { congested } => {
                    (congested || (any_write_wakes && write_done)) && inflight < off
                }
                WaitKind::Throttle { written_at_start } => {
                    written - written_at_start > SWAP_CLUSTER_MAX_PAGES
                }
                WaitKind::NoProgress => false,
            };
            if wake && w.until > t {
                w.until = t;
            }
        };
        if let App::Wait(w) = &mut self.app {
            wakes(w);
        }
        if let Kswapd::Wait(w) = &mut self.kswapd {
            wakes(w);
        }
    }
}
