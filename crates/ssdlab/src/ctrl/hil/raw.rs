//! The HIL's entry points of a raw device (`ftl.kind = "none"`, `ctrl::raw`): reads sense the
//! units a command names, programs and erases are checked against the media's rules first and
//! then issued where the command puts them, trims are refused; and an erase's end.

use super::Hil;
use crate::ctrl::fil::{NoPageGc, Queue, TxnKind};
use crate::ctrl::raw::RawNand;
use crate::ctrl::{units_of, Ports};
use crate::event::Event;
use crate::iface::HostPort;
use crate::request::{Op, Status};
use crate::sim::SimTime;

impl Hil {
    /// A raw device's command: reads sense the units named, programs and erases are checked
    /// against the media's rules first (a refused one ends at once with its status, having
    /// changed nothing), trims are not done.
    #[inline(never)]
    pub(crate) fn dispatch_raw(
        &mut self,
        now: SimTime,
        cmd: u32,
        raw: &mut RawNand,
        p: &mut Ports<NoPageGc>,
    ) {
        let Ports { up, flash, .. } = p;
        let c = up.cmds.get(cmd);
        let (op, offset, len) = (c.op, c.offset, c.len);
        let refuse = |up: &mut HostPort, status| up.refuse(now, cmd, status);
        match op {
            Op::Read => {
                // The device's work vector: only its capacity outlives the call.
                let txns = &mut raw.txns;
                txns.clear();
                txns.extend(
                    units_of(self.geo.unit_bytes, offset, len).map(|(pun, covered)| {
                        let t =
                            self.read_txn(TxnKind::HostRead, cmd, pun as u32, covered as u32, pun);
                        flash.fil.add_txn(t)
                    }),
                );
                self.counters.host_units_read += txns.len() as u64;
                up.cmds.get_mut(cmd).txns_left = txns.len() as u32;
                flash
                    .fil
                    .enqueue_all(now, txns, Queue::HostRead, flash.ftl, up.q);
            }
            Op::Write => match raw.program(offset, len) {
                Status::Ok => {
                    let end = up.link.pull_write_data(now, up.cmds.get(cmd));
                    up.q.push(end, Event::WriteDataIn { cmd });
                }
                refused => refuse(up, refused),
            },
            Op::Erase => {
                let Some(blocks) = raw.blocks_of(offset, len) else {
                    return refuse(up, Status::Misaligned);
                };
                up.cmds.get_mut(cmd).txns_left = blocks.len() as u32;
                for block in blocks {
                    raw.erased(block);
                    let t = flash.fil.add_txn(self.raw_txn(
                        TxnKind::Erase,
                        cmd,
                        block * self.geo.units_per_block(),
                        0,
                        0,
                    ));
                    flash.fil.enqueue(now, t, Queue::HostWrite, flash.ftl, up.q);
                }
            }
            Op::Trim => refuse(up, Status::Unsupported),
            Op::Flush => up.complete(now, cmd),
            Op::Append
            | Op::ZoneReset
            | Op::ZoneFinish
            | Op::ZoneOpen
            | Op::ZoneClose
            | Op::ZoneOffline => unreachable!("the device refuses zone commands without zones"),
        }
    }

    /// A raw device's program has its data: program every unit where the request names it.
    fn program_raw(&mut self, now: SimTime, cmd: u32, raw: &mut RawNand, p: &mut Ports<NoPageGc>) {
        let Ports { up, flash, .. } = p;
        let c = up.cmds.get(cmd);
        let (offset, len) = (c.offset, c.len);
        let unit = self.geo.unit_bytes;
        let txns = &mut raw.txns;
        txns.clear();
        txns.extend(units_of(unit, offset, len).map(|(pun, covered)| {
            let pun = pun as u32;
            flash
                .fil
                .add_txn(self.raw_txn(TxnKind::HostWrite, cmd, pun, covered as u32, pun))
        }));
        up.cmds.get_mut(cmd).txns_left = txns.len() as u32;
        flash
            .fil
            .enqueue_all(now, txns, Queue::HostWrite, flash.ftl, up.q);
    }

    /// A driver's block erase finished (a raw device).
    pub(crate) fn erase_done(&mut self, now: SimTime, txn: u32, p: &mut Ports<NoPageGc>) {
        let t = p.flash.fil.remove_txn(txn);
        if t.cmd == crate::ftl::NONE {
            // A merge's erase for a cache buffer's flush: no command waits for it.
            return;
        }
        let c = p.up.cmds.get_mut(t.cmd);
        c.txns_left -= 1;
        if c.txns_left == 0 {
            p.up.complete(now, t.cmd);
        }
    }

    /// A raw device's write command's data is in the controller: program it.
    #[inline(never)]
    pub(crate) fn write_data_in_raw(
        &mut self,
        now: SimTime,
        cmd: u32,
        raw: &mut RawNand,
        p: &mut Ports<NoPageGc>,
    ) {
        if !self.write_skips_media(now, cmd, &mut p.up) {
            self.program_raw(now, cmd, raw, p);
        }
    }
}
