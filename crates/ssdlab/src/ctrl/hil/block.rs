//! The HIL's entry points of a block-mapped or log-block FTL (`ftl.kind = "block" | "bast" |
//! "fast"`, `ctrl::hybrid`): a command dispatched (reads and trims are the FTL's, writes pull
//! their data, flushes go to the cache buffer), a write's data in (its read-modify-write reads,
//! then its pages placed by the block map or put into a write-back buffer), and a program's end
//! (a merge copy counted for its command).

use super::Hil;
use crate::ctrl::fil::{NoPageGc, TxnKind};
use crate::ctrl::hybrid::HybridCtrl;
use crate::ctrl::{Behind, Ports};
use crate::error::Result;
use crate::event::Event;
use crate::request::{Op, Status};
use crate::sim::SimTime;

impl Hil {
    /// The firmware is done with a command of a block-mapped FTL: reads and trims are the
    /// FTL's; writes pull their data, flushes go to the cache buffer, as on the page FTL.
    /// Never inlined, nor are the other back ends' handlers: inlined, they would make
    /// `Device::handle` too big to be inlined into the event loop with the page FTL's path.
    #[inline(never)]
    pub(crate) fn dispatch_block(
        &mut self,
        now: SimTime,
        cmd: u32,
        h: &mut HybridCtrl,
        p: &mut Ports<NoPageGc>,
    ) -> Result<()> {
        if self.refuse_protected(now, cmd, &mut p.up) {
            return Ok(());
        }
        let c = p.up.cmds.get(cmd);
        let (op, offset, len) = (c.op, c.offset, c.len);
        match op {
            // With `skip_media` the firmware answers reads at once, whatever the FTL.
            Op::Read if !self.skip_media => h.read(now, cmd, &mut self.counters, p),
            Op::Trim => {
                if h.ftl.read_only() {
                    // As on the page FTL: a worn-out drive changes nothing.
                    p.up.cmds.get_mut(cmd).status = Status::ReadOnly;
                } else {
                    h.trim(offset, len, p);
                }
                p.up.complete(now, cmd);
                Ok(())
            }
            Op::Flush => match p.cache.as_deref_mut() {
                Some(bm) if bm.write_back() => {
                    bm.flush_command(now, cmd, &mut p.up, &mut p.flash.with_blocks(h))
                }
                _ => {
                    p.up.complete(now, cmd);
                    Ok(())
                }
            },
            Op::Read => {
                // `skip_media`: the firmware answers at once, only the data phase remains.
                let end = p.up.push_read_data(now, cmd, len, 0);
                p.up.complete(end, cmd);
                Ok(())
            }
            Op::Write => {
                // Its data first; the block map places it (`write_data_in_block`).
                let end = p.up.link.pull_write_data(now, p.up.cmds.get(cmd));
                p.up.q.push(end, Event::WriteDataIn { cmd });
                Ok(())
            }
            // The device refuses erases and zone commands of a mapped device at submission.
            Op::Erase => unreachable!("an erase on a device with an FTL"),
            Op::Append
            | Op::ZoneReset
            | Op::ZoneFinish
            | Op::ZoneOpen
            | Op::ZoneClose
            | Op::ZoneOffline => unreachable!("a zone command on a device without zones"),
        }
    }

    /// A block-mapped FTL's write command's data is in the controller: its read-modify-write
    /// reads first, else its units.
    #[inline(never)]
    pub(crate) fn write_data_in_block(
        &mut self,
        now: SimTime,
        cmd: u32,
        h: &mut HybridCtrl,
        p: &mut Ports<NoPageGc>,
    ) -> Result<()> {
        if self.write_skips_media(now, cmd, &mut p.up) {
            return Ok(());
        }
        let rmw = h.rmw_reads(now, cmd, p);
        if rmw > 0 {
            p.up.cmds.get_mut(cmd).rmw_left = rmw;
            return Ok(());
        }
        Self::write_units_block(now, cmd, h, p)
    }

    /// A block-mapped FTL's write command's data is in and its old data read: a write-back
    /// buffer takes its pages (flushed to the block map later), else they are placed now.
    #[inline(never)]
    pub(crate) fn write_units_block(
        now: SimTime,
        cmd: u32,
        h: &mut HybridCtrl,
        p: &mut Ports<NoPageGc>,
    ) -> Result<()> {
        if h.ftl.read_only() {
            // A worn-out drive takes nothing new, into its buffer or onto NAND.
            p.up.refuse(now, cmd, Status::ReadOnly);
            return Ok(());
        }
        match p.cache.as_deref_mut() {
            Some(bm) if bm.write_back() && p.up.cmds.get(cmd).status == Status::Ok => {
                bm.write(now, cmd, &mut p.up, &mut p.flash.with_blocks(h))
            }
            _ => h.write_units(now, cmd, p),
        }
    }

    /// A program transaction of a block-mapped FTL finished at `now`: recorded in its map, then
    /// a merge copy counts for its write command (none: a flush's merge), a flush's program
    /// goes back to the cache buffer, a host page to its command. The flash port (`p.flash`)
    /// holds the FTL.
    #[inline(never)]
    pub(crate) fn program_done_block(
        &mut self,
        now: SimTime,
        txn: u32,
        p: &mut Ports<NoPageGc>,
    ) -> Result<()> {
        let t = p.flash.fil.remove_txn(txn);
        let Behind::Blocks(h) = &mut p.flash.behind else {
            unreachable!("the block-mapped FTL in the port")
        };
        h.program_done(&t);
        if t.kind == TxnKind::Copy {
            if t.cmd != crate::ftl::NONE {
                let c = p.up.cmds.get_mut(t.cmd);
                c.txns_left -= 1;
                if c.txns_left == 0 {
                    p.up.complete(now, t.cmd);
                }
            }
            return Ok(());
        }
        self.programmed(now, t, p)
    }
}
