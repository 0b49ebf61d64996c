//! An NBD request as the model takes it: a message from a connection opens or closes it, or
//! becomes the model's request (read, write, trim, flush; WRITE_ZEROES as a write or a trim),
//! or is answered at once without the model (BLOCK_STATUS from the map and the data store,
//! CACHE, a refusal).

use super::conn::{Reply, ToSim};
use super::cut;
use super::proto::*;
use super::{ConnState, Outbox, Pending};
use crate::device::{Device, Flags, Request};
use crate::request::Op;
use crate::sim::SimTime;

/// One message from a connection (a batch: each of its messages in order).
pub(super) fn take_message(out: &mut Outbox, dev: &Device, msg: ToSim, now: SimTime) {
    let conn = match &msg {
        ToSim::Open { conn, .. }
        | ToSim::Closed { conn }
        | ToSim::Refused { conn, .. }
        | ToSim::Request { conn, .. } => Some(*conn),
        ToSim::Batch(_) => None,
    };
    if conn.is_some_and(|c| c < out.dead_below) {
        // Open at a power cut: gone with the drive.
        return;
    }
    match msg {
        ToSim::Batch(list) => {
            for msg in list {
                take_message(out, dev, msg, now);
            }
        }
        ToSim::Open {
            conn,
            structured,
            lend,
            replies,
            ..
        } => {
            out.conns.insert(
                conn,
                ConnState {
                    replies,
                    batch: Vec::new(),
                    structured,
                    lend,
                    outstanding: 0,
                    closing: false,
                },
            );
        }
        ToSim::Closed { conn } => {
            if let Some(c) = out.conns.get_mut(&conn) {
                c.closing = true;
                if c.outstanding == 0 {
                    out.conns.remove(&conn);
                }
            }
        }
        ToSim::Refused {
            conn,
            header,
            error,
            credit,
        } => {
            out.taken(conn);
            out.errors += 1;
            out.answer(now, conn, &header, error, "request refused", credit);
        }
        ToSim::Request {
            conn,
            header,
            data,
            credit,
        } => {
            out.taken(conn);
            let h = header;
            let p = Pending {
                conn,
                handle: h.handle,
                kind: h.kind,
                offset: h.offset,
                len: h.length as u64,
                data,
                fua: h.flags & CMD_FLAG_FUA != 0 && h.kind != CMD_FLUSH,
                credit,
                ticket: cut::Ticket::None,
            };
            let op = match h.kind {
                CMD_READ => Op::Read,
                CMD_WRITE => Op::Write,
                CMD_TRIM => Op::Trim,
                CMD_FLUSH => Op::Flush,
                CMD_WRITE_ZEROES => {
                    if h.flags & CMD_FLAG_NO_HOLE != 0 {
                        if h.flags & CMD_FLAG_FAST_ZERO != 0 {
                            // Zeroes that must be written are no faster than a write.
                            let why = "no fast zeroing without holes";
                            out.answer(now, conn, &h, ENOTSUP, why, credit);
                            return;
                        }
                        Op::Write
                    } else if out.journal.is_some() {
                        // With power cuts, zeroes must survive a FLUSH as a write does, and
                        // the model's trims are durable only at a map checkpoint: a write
                        // of zeros.
                        Op::Write
                    } else {
                        // Deallocated units read as zeros (the device's unmapped reads).
                        Op::Trim
                    }
                }
                CMD_BLOCK_STATUS => {
                    // A query of the FTL's map and the data store, not a command to the media:
                    // answered at once.
                    let data = out.data.as_ref().expect("the server keeps data");
                    let descriptors = allocation(
                        h.offset,
                        h.length as u64,
                        h.flags & CMD_FLAG_REQ_ONE != 0,
                        out.unit_bytes,
                        |unit| dev.is_mapped(unit),
                        |o, l| data.extents(o, l),
                    );
                    let mut bytes = chunk_header(
                        REPLY_FLAG_DONE,
                        REPLY_TYPE_BLOCK_STATUS,
                        h.handle,
                        4 + 8 * descriptors.len() as u32,
                    )
                    .to_vec();
                    bytes.extend_from_slice(&BASE_ALLOCATION_ID.to_be_bytes());
                    for (len, flags) in descriptors {
                        bytes.extend_from_slice(&len.to_be_bytes());
                        bytes.extend_from_slice(&flags.to_be_bytes());
                    }
                    out.reply(now, conn, Reply::new(bytes, credit));
                    return;
                }
                // CACHE is advice: answered at once.
                _ => {
                    out.answer(now, conn, &h, 0, "", credit);
                    return;
                }
            };
            let (offset, len) = if op == Op::Flush {
                (0, 0)
            } else {
                (h.offset, h.length as u64)
            };
            let r = Request {
                op,
                offset,
                len,
                queue: conn,
                flags: if p.fua { Flags::FUA } else { Flags::NONE },
                arrival: now,
            };
            out.enqueue(r, p);
        }
    }
}

/// Most descriptors in one BLOCK_STATUS reply; the client asks again for the rest.
pub const MAX_STATUS_DESCRIPTORS: usize = 1024;

/// The `base:allocation` state of `offset .. offset + len` as (length, flags) runs: a hole
/// where the FTL maps no unit and no data was written (`HOLE | ZERO`), zeros where nothing was
/// written to a mapped unit (`ZERO`: preconditioned, or written by the model without data),
/// data elsewhere (0). Data a write put in the store counts even before the FTL maps it (it
/// may sit in the write cache). `one`: the first run only (NBD_CMD_FLAG_REQ_ONE).
pub(super) fn allocation(
    offset: u64,
    len: u64,
    one: bool,
    unit_bytes: u64,
    mapped: impl Fn(u64) -> bool,
    extents: impl Fn(u64, u64) -> Vec<(u64, u64, bool)>,
) -> Vec<(u32, u32)> {
    let cap = if one { 1 } else { MAX_STATUS_DESCRIPTORS };
    let end = offset + len;
    let mut runs: Vec<(u32, u32)> = Vec::new();
    let mut at = offset;
    while at < end {
        let unit = at / unit_bytes;
        let unit_end = ((unit + 1) * unit_bytes).min(end);
        let hole = if mapped(unit) { 0 } else { STATE_HOLE };
        for (_, l, allocated) in extents(at, unit_end - at) {
            let flags = if allocated { 0 } else { STATE_ZERO | hole };
            let full = runs.len() == cap;
            match runs.last_mut() {
                // Runs are bounded by the request's u32 length, so the sum fits.
                Some(last) if last.1 == flags => last.0 += l as u32,
                _ if full => return runs,
                _ => runs.push((l as u32, flags)),
            }
        }
        at = unit_end;
    }
    runs
}
