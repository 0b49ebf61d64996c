//! The page FTL's host writes: a unit written (or, with `[reliability]`, refused) in its write
//! stream, the old place let go of (its block counting the overwrite in flight until the new
//! program is done), trims, a cached map's translation pages written, and the write streams'
//! choice, counters and checks.

use super::{fdp, Ftl, Refusal, StreamStats, Translation, NONE, UNMAPPED};
use crate::error::{got, Problem, Result};

impl<M: Translation + ?Sized> Ftl<M> {
    /// Write one logical unit; returns the physical unit that receives it.
    #[inline]
    pub fn write(&mut self, lpn: u64) -> Result<u32> {
        self.write_in(lpn, 0)
    }

    /// Write one logical unit in host write stream `stream` (below `ftl.streams`; the hint is
    /// passed over with `stream_policy = "hot-cold"`, which chooses itself); returns the
    /// physical unit that receives it.
    pub fn write_in(&mut self, lpn: u64, stream: u8) -> Result<u32> {
        self.clock += 1;
        let stream = self.stream_of(lpn, stream);
        self.overwrote = self.invalidate_overwritten(lpn);
        let pun = self.alloc_striped(lpn, stream)?;
        self.map(lpn, pun);
        self.stats.host_units_written += 1;
        self.stream_written(lpn, stream);
        if self.instant {
            self.mark_programmed(pun);
            if self.overwrote != NONE {
                self.overwrite_programmed(self.overwrote);
                self.overwrote = NONE;
            }
        } else {
            self.translation.entry_changed(lpn);
        }
        Ok(pun)
    }

    /// Write one logical unit on a drive with `[reliability]`: a worn-out drive refuses it,
    /// and a unit that cannot be placed keeps its old data (the new place is found before the
    /// old one is let go, so a refusal loses nothing).
    pub fn write_checked(&mut self, lpn: u64) -> Result<std::result::Result<u32, Refusal>> {
        self.write_checked_in(lpn, 0)
    }

    /// [`Ftl::write_checked`] in host write stream `stream` (see [`Ftl::write_in`]).
    pub fn write_checked_in(
        &mut self,
        lpn: u64,
        stream: u8,
    ) -> Result<std::result::Result<u32, Refusal>> {
        if self.read_only() {
            return Ok(Err(Refusal::ReadOnly));
        }
        self.clock += 1;
        let stream = self.stream_of(lpn, stream);
        let Some(pun) = self.alloc_striped_opt(lpn, stream)? else {
            // Nothing could take it: no room is left where the data landed.
            if let Some(w) = self.wear.as_mut() {
                w.read_only = true;
            }
            return Ok(Err(Refusal::NoSpace));
        };
        // GC may have moved the old data while the place was found: let go of where it is now.
        self.overwrote = self.invalidate_overwritten(lpn);
        self.map(lpn, pun);
        self.stats.host_units_written += 1;
        self.stream_written(lpn, stream);
        if self.instant {
            self.mark_programmed(pun);
            if self.overwrote != NONE {
                self.overwrite_programmed(self.overwrote);
                self.overwrote = NONE;
            }
        } else {
            self.translation.entry_changed(lpn);
        }
        Ok(Ok(pun))
    }

    /// The stream a host write of `lpn` goes to, with `hint` from the host. The clock has
    /// counted this write.
    #[inline]
    pub(super) fn stream_of(&mut self, lpn: u64, hint: u8) -> u8 {
        let Some(st) = self.streams.as_deref_mut() else {
            return 0;
        };
        let s = if st.stamp.is_empty() {
            debug_assert!((hint as u32) < st.count, "stream {hint} not validated");
            hint
        } else {
            // Hot-cold: hot when the unit was written within the window (the stamp keeps the
            // clock's low 32 bits, so the distance is taken modulo 2^32).
            let now = self.clock as u32;
            let last = std::mem::replace(&mut st.stamp[lpn as usize], now);
            u8::from(last != 0 && (now.wrapping_sub(last) as u64) <= st.hot_window)
        };
        s
    }

    /// `lpn` was written in `stream` (and its old place let go of): counted there, and GC will
    /// count moving it there too.
    #[inline]
    pub(super) fn stream_written(&mut self, lpn: u64, stream: u8) {
        if let Some(st) = self.streams.as_deref_mut() {
            st.lpn_stream[lpn as usize] = stream;
            st.stats[stream as usize].host_units_written += 1;
        }
    }

    /// Zero the per-stream counters (with the FTL's: the result speaks of the timed run).
    pub fn reset_stream_stats(&mut self) {
        if let Some(st) = self.streams.as_deref_mut() {
            st.stats.fill(StreamStats::default());
        }
        if let Some(f) = self.fdp.as_deref_mut() {
            f.reset_stats();
        }
    }

    /// With `[fdp]`: its reclaim units' bookkeeping (the handles' write counters are
    /// [`Ftl::stream_stats`], handle h being stream h).
    pub fn fdp_units(&self) -> Option<&fdp::FdpUnits> {
        self.fdp.as_deref()
    }

    /// Whether a write may name stream `stream`: below `ftl.streams`, and only with the host
    /// choosing (`ftl.stream_policy = "host"`). The message says what was expected.
    pub fn check_stream(&self, stream: u8) -> std::result::Result<(), Problem> {
        let count = self.streams.as_ref().map_or(1, |st| st.count);
        if stream as u32 >= count {
            let (what, field) = if self.fdp.is_some() {
                ("placement identifier ", "fdp.handles")
            } else {
                ("", "ftl.streams")
            };
            return Err(got(
                format!("{what}{stream}"),
                format!("0 up to {} ({field} = {count})", count - 1),
            ));
        }
        if self.streams.as_ref().is_some_and(|st| !st.stamp.is_empty()) && stream != 0 {
            return Err(got(
                stream,
                "0: with ftl.stream_policy = \"hot-cold\" the device chooses each write's stream",
            ));
        }
        Ok(())
    }

    /// Counters per host write stream, with `ftl.streams` > 1 (None with one stream).
    pub fn stream_stats(&self) -> Option<&[StreamStats]> {
        self.streams.as_ref().map(|st| &st.stats[..])
    }

    /// The stream whose open block `block` was ([`GC_STREAM`] for GC's), with `ftl.streams` > 1.
    pub fn block_stream(&self, block: u32) -> Option<u8> {
        self.streams
            .as_ref()
            .map(|st| st.block_stream[block as usize])
    }

    pub fn trim(&mut self, lpn: u64) {
        if self.l2p_at(lpn) != UNMAPPED {
            if !self.instant {
                self.translation.entry_changed(lpn);
            }
            self.invalidate(lpn);
            self.set_l2p(lpn, UNMAPPED);
            self.stats.trimmed_units += 1;
        }
    }

    /// [`Ftl::invalidate`] for a host write, whose program will replace the data: the old
    /// block counts the write in flight until [`Ftl::overwrite_programmed`]. Returns that
    /// block ([`NONE`] when the unit was unmapped).
    #[inline]
    pub(super) fn invalidate_overwritten(&mut self, lpn: u64) -> u32 {
        let old = self.l2p_at(lpn);
        if old == UNMAPPED {
            return NONE;
        }
        self.set_p2l(old, UNMAPPED);
        let b = self.geo.block_of_unit(old);
        let blk = &mut self.blocks[b as usize];
        blk.valid -= 1;
        blk.overwrites_in_flight += 1;
        b
    }

    /// The block whose data the last host write ([`Ftl::write`] and its kin) replaced, or
    /// [`NONE`]: the program of that write carries it, and reports it when done.
    #[inline]
    pub fn overwrote(&self) -> u32 {
        self.overwrote
    }

    /// The program of a host write that replaced data of `block` has finished (or will never
    /// run).
    #[inline]
    pub fn overwrite_programmed(&mut self, block: u32) {
        self.blocks[block as usize].overwrites_in_flight -= 1;
    }

    /// Cached mapping: program translation page `page` to a new place (the old one turns
    /// stale); returns the new place. Not a host write: `host_units_written` stays.
    pub fn write_translation(&mut self, page: u32) -> Result<u32> {
        let lpn = self.data_units + page as u64;
        self.clock += 1;
        self.invalidate(lpn);
        // Translation pages share stream 0's open blocks (`lpn_stream` keeps its 0).
        let pun = self.alloc_striped(lpn, 0)?;
        self.map(lpn, pun);
        if self.instant {
            self.mark_programmed(pun);
        }
        Ok(pun)
    }
}
