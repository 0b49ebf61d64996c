//! The server's driver of the device (`Outbox`): what each request in the model came from, the
//! requests waiting for queue room, and the replies it produced, due at their simulated
//! completion, handed to the connections' writers.

use super::accept::Shared;
use super::conn::{self, Reply};
use super::cut;
use super::data::Data;
use super::proto::*;
use super::session;
use crate::config::SsdConfig;
use crate::device::{Completion, Device, Driver, Flags, Request, Status};
use crate::request::Op;
use crate::sim::SimTime;
use crate::stats::LatencyStats;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Instant;

/// A request in the model.
pub(super) struct Pending {
    pub(super) conn: u32,
    pub(super) handle: u64,
    pub(super) kind: u16,
    pub(super) offset: u64,
    pub(super) len: u64,
    pub(super) data: Vec<u8>,
    /// A FUA write: a flush follows it before the reply.
    pub(super) fua: bool,
    pub(super) credit: u64,
    /// What it did to the cut journal (a session whose power can be cut).
    pub(super) ticket: cut::Ticket,
}

impl Pending {
    /// A request read back from a session log: no connection to answer, no data to keep.
    pub(super) fn replayed(r: &Request, fua: bool) -> Pending {
        let kind = match r.op {
            Op::Read => CMD_READ,
            Op::Write => CMD_WRITE,
            Op::Trim => CMD_TRIM,
            _ => CMD_FLUSH,
        };
        Pending {
            conn: r.queue,
            handle: 0,
            kind,
            offset: r.offset,
            len: r.len,
            data: Vec::new(),
            fua,
            credit: 0,
            ticket: cut::Ticket::None,
        }
    }
}

pub(super) struct ConnState {
    /// The writer's queue: the replies of one turn go in one message (one wake-up).
    pub(super) replies: Sender<Vec<Reply>>,
    /// Replies sent this turn, handed to the writer at the turn's end (`Outbox::hand_over`).
    pub(super) batch: Vec<Reply>,
    pub(super) structured: bool,
    /// Requests taken whose reply has not gone to the writer yet.
    pub(super) outstanding: u32,
    /// The client disconnected (DISC or end of stream): the connection goes once its
    /// outstanding replies are sent, as the protocol asks for a soft disconnect.
    pub(super) closing: bool,
}

/// A reply due at a simulated time (realtime clock: held until the wall clock gets there).
pub(super) struct Due {
    pub(super) at: SimTime,
    pub(super) seq: u64,
    pub(super) conn: u32,
    pub(super) reply: Reply,
}

impl PartialEq for Due {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Due {
    /// Earliest first in a max-heap.
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (o.at, o.seq).cmp(&(self.at, self.seq))
    }
}

/// The server's driver of the device: what each request in the model came from, and the
/// replies it produced.
pub(super) struct Outbox {
    pub(super) pending: HashMap<u32, Pending>,
    pub(super) conns: HashMap<u32, ConnState>,
    pub(super) due: BinaryHeap<Due>,
    pub(super) seq: u64,
    /// Requests waiting for room in their interface queue.
    pub(super) backlog: VecDeque<(Request, Pending)>,
    pub(super) reads: u64,
    pub(super) writes: u64,
    pub(super) errors: u64,
    /// The FTL's map unit: the grain of what BLOCK_STATUS reports as a hole.
    pub(super) unit_bytes: u64,
    /// The session log being written.
    pub(super) log: Option<session::SessionWriter>,
    /// The bytes the drive holds (none in a session replay).
    pub(super) data: Option<Data>,
    /// Realtime clock: how late each reply left against the wall time of its simulated
    /// completion (the server's lag behind real time), in wall picoseconds.
    pub(super) lag: LatencyStats,
    /// A session whose power can be cut: the bytes each unit's versions hold
    /// (`cut::Journal`), and the first error reading the store for it.
    pub(super) journal: Option<cut::Journal>,
    pub(super) journal_error: Option<String>,
    /// Connections numbered below this were open at the last power cut: what they still
    /// send is dropped.
    pub(super) dead_below: u32,
    /// Connections with replies in their batch.
    pub(super) unsent: Vec<u32>,
    /// Where read replies' buffers come from (the writers give them back).
    pub(super) buffers: Arc<conn::Buffers>,
}

impl Outbox {
    pub(super) fn new(
        unit_bytes: u64,
        log: Option<session::SessionWriter>,
        data: Option<Data>,
    ) -> Outbox {
        Outbox {
            pending: HashMap::new(),
            conns: HashMap::new(),
            due: BinaryHeap::new(),
            seq: 0,
            backlog: VecDeque::new(),
            reads: 0,
            writes: 0,
            errors: 0,
            unit_bytes,
            log,
            data,
            lag: LatencyStats::default(),
            journal: None,
            journal_error: None,
            dead_below: 0,
            unsent: Vec::new(),
            buffers: Arc::default(),
        }
    }

    /// A request for the model: logged, then queued behind those waiting for room.
    pub(super) fn enqueue(&mut self, r: Request, p: Pending) {
        if let Some(log) = &mut self.log {
            log.request(&r, p.fua);
            if r.op == Op::Write {
                let bytes = (p.kind == CMD_WRITE).then_some(p.data.as_slice());
                log.payload(bytes, p.len);
            }
        }
        self.backlog.push_back((r, p));
    }

    /// A reply for its connection's writer, handed over with the turn's others.
    pub(super) fn send(&mut self, conn: u32, reply: Reply) {
        let Some(c) = self.conns.get_mut(&conn) else {
            return;
        };
        if c.batch.is_empty() {
            self.unsent.push(conn);
        }
        c.batch.push(reply);
        c.outstanding = c.outstanding.saturating_sub(1);
    }

    /// Send every reply due by `limit`, and hand them to the writers. On the realtime clock
    /// (`wall_of`: the wall time of a simulated time) each reply's lag is recorded.
    pub(super) fn send_due(
        &mut self,
        limit: SimTime,
        wall_of: Option<&dyn Fn(SimTime) -> Instant>,
    ) {
        while self.due.peek().is_some_and(|d| d.at <= limit) {
            let d = self.due.pop().expect("peeked");
            if let Some(wall_of) = wall_of {
                let late = Instant::now().saturating_duration_since(wall_of(d.at));
                self.lag
                    .record((late.as_nanos() as u64).saturating_mul(1000), 0);
            }
            self.send(d.conn, d.reply);
        }
        self.hand_over();
    }

    /// Hand each connection's batch to its writer; a closing connection goes with its last.
    pub(super) fn hand_over(&mut self) {
        for conn in std::mem::take(&mut self.unsent) {
            let Some(c) = self.conns.get_mut(&conn) else {
                continue;
            };
            let _ = c.replies.send(std::mem::take(&mut c.batch));
            if c.closing && c.outstanding == 0 {
                self.conns.remove(&conn);
            }
        }
    }

    pub(super) fn reply(&mut self, at: SimTime, conn: u32, reply: Reply) {
        self.seq += 1;
        self.due.push(Due {
            at,
            seq: self.seq,
            conn,
            reply,
        });
    }

    /// The reply to a request, with its data for a read.
    pub(super) fn finish(&mut self, at: SimTime, p: Pending, status: Status) {
        let mut error = errno_of(status);
        // The device did the work whether or not its client is still there to hear of it.
        // (A session replay keeps no data.)
        if let (0, Some(data)) = (error, &mut self.data) {
            let stored = match p.kind {
                CMD_WRITE => data.write(p.offset, &p.data),
                // Trimmed data reads as zeros, as the device's unmapped units do.
                CMD_TRIM | CMD_WRITE_ZEROES => data.zero(p.offset, p.len),
                CMD_FLUSH => data.sync(),
                _ => Ok(()),
            };
            if stored.is_err() {
                error = EIO;
            }
        }
        let Some(c) = self.conns.get(&p.conn) else {
            if error != 0 {
                self.errors += 1;
            }
            return; // The client has gone.
        };
        let structured = c.structured;
        let read = match (&self.data, p.kind, error) {
            (Some(data), CMD_READ, 0) => read_reply(data, structured, &p, &self.buffers),
            _ => None,
        };
        let bytes = if let Some(bytes) = read {
            self.reads += 1;
            bytes
        } else {
            if p.kind == CMD_READ {
                error = EIO;
            }
            if error != 0 {
                self.errors += 1;
            } else if p.kind == CMD_WRITE {
                self.writes += 1;
            }
            error_reply(
                structured,
                p.kind,
                p.handle,
                error,
                "the device reported an error",
            )
        };
        self.reply(
            at,
            p.conn,
            Reply {
                bytes,
                credit: p.credit,
            },
        );
    }

    /// A reply with no data, due now: a refusal, or a request answered without the model.
    pub(super) fn answer(
        &mut self,
        now: SimTime,
        conn: u32,
        h: &RequestHeader,
        error: u32,
        message: &str,
        credit: u64,
    ) {
        let structured = self.conns.get(&conn).is_some_and(|c| c.structured);
        let bytes = error_reply(structured, h.kind, h.handle, error, message);
        self.reply(now, conn, Reply { bytes, credit });
    }

    /// A request of `conn` was taken: its reply is owed.
    pub(super) fn taken(&mut self, conn: u32) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.outstanding += 1;
        }
    }

    /// Submit what waits for queue room, in order, while there is room.
    pub(super) fn submit_backlog(&mut self, dev: &mut Device, now: SimTime) {
        while let Some((r, _)) = self.backlog.front() {
            if !dev.queue_has_room(r.queue, r.op, r.offset, r.len) {
                break;
            }
            let (mut r, mut p) = self.backlog.pop_front().expect("front");
            r.arrival = r.arrival.min(now);
            match dev.submit(now, r) {
                Ok(id) => {
                    if let (Some(j), Some(data)) = (&mut self.journal, &self.data) {
                        let ticket = match r.op {
                            Op::Write if p.kind == CMD_WRITE => {
                                j.write(data, p.offset, p.len, Some(&p.data))
                            }
                            Op::Write => j.write(data, p.offset, p.len, None),
                            Op::Trim => j.trim(data, p.offset, p.len),
                            Op::Flush => Ok(j.flush()),
                            _ => Ok(cut::Ticket::None),
                        };
                        match ticket {
                            Ok(t) => p.ticket = t,
                            Err(e) => {
                                self.journal_error.get_or_insert(format!(
                                    "reading the data store for the cut journal: {e}"
                                ));
                            }
                        }
                    }
                    self.pending.insert(id, p);
                }
                Err(_) => self.finish(now, p, Status::Unsupported),
            }
        }
    }
}

/// Most chunks in a structured read reply: a read more broken up than this is one data chunk.
pub(super) const MAX_READ_CHUNKS: usize = 64;

/// A read's reply: a simple reply with the data, or structured chunks — data where something
/// was written, holes (no bytes sent) where nothing was. None if the store could not be read.
pub(super) fn read_reply(
    data: &Data,
    structured: bool,
    p: &Pending,
    buffers: &conn::Buffers,
) -> Option<Vec<u8>> {
    let mut runs = if structured {
        data.extents(p.offset, p.len)
    } else {
        Vec::new()
    };
    if runs.len() > MAX_READ_CHUNKS || runs.iter().all(|r| r.2) {
        runs = vec![(p.offset, p.len, true)];
    }
    let mut out = buffers.take(p.len as usize + 20 * runs.len() + 16);
    if !structured {
        out.extend_from_slice(&simple_reply(0, p.handle));
        data.read_into(p.offset, p.len, &mut out).ok()?;
        return Some(out);
    }
    let last = runs.len() - 1;
    for (k, &(offset, len, written)) in runs.iter().enumerate() {
        let flags = if k == last { REPLY_FLAG_DONE } else { 0 };
        // Lengths are parts of one read, at most 32 MiB: they fit in the chunk's u32.
        if written {
            out.extend_from_slice(&chunk_header(
                flags,
                REPLY_TYPE_OFFSET_DATA,
                p.handle,
                8 + len as u32,
            ));
            out.extend_from_slice(&offset.to_be_bytes());
            data.read_into(offset, len, &mut out).ok()?;
        } else {
            out.extend_from_slice(&chunk_header(flags, REPLY_TYPE_OFFSET_HOLE, p.handle, 12));
            out.extend_from_slice(&offset.to_be_bytes());
            out.extend_from_slice(&(len as u32).to_be_bytes());
        }
    }
    Some(out)
}

/// A reply that carries no data: an error or a plain success.
pub(super) fn error_reply(
    structured: bool,
    kind: u16,
    handle: u64,
    error: u32,
    message: &str,
) -> Vec<u8> {
    if structured && (error != 0 || kind == CMD_READ) {
        if error == 0 {
            return chunk_header(REPLY_FLAG_DONE, REPLY_TYPE_NONE, handle, 0).to_vec();
        }
        return error_chunk(handle, error, message);
    }
    simple_reply(error, handle).to_vec()
}

impl Driver for Outbox {
    fn on_complete(&mut self, dev: &mut Device, now: SimTime, done: Completion) {
        let Some(mut p) = self.pending.remove(&done.id) else {
            return;
        };
        if let Some(j) = &mut self.journal {
            dev.power_loss_acknowledged(&done);
            j.completed(std::mem::take(&mut p.ticket), done.status == Status::Ok);
        }
        if p.fua && done.status == Status::Ok {
            // Durable before the reply: the flush waits for what the write cache holds.
            p.fua = false;
            let flush = Request {
                op: Op::Flush,
                offset: 0,
                len: 0,
                queue: p.conn,
                flags: Flags::NONE,
                arrival: now,
            };
            self.backlog.push_front((flush, p));
            self.submit_backlog(dev, now);
            return;
        }
        self.finish(now, p, done.status);
        self.submit_backlog(dev, now);
    }
}

/// Where replies wait to be sent, with the session log, the data, and (power cuts) the
/// journal of writes not yet durable.
pub(super) fn outbox(
    cfg: &SsdConfig,
    dev: &Device,
    log: Option<session::SessionWriter>,
    data: Data,
    shared: &Shared,
    power_cuts: bool,
) -> Outbox {
    let mut out = Outbox::new(cfg.map_unit_bytes(), log, Some(data));
    out.buffers = shared.buffers.clone();
    if power_cuts {
        out.journal = Some(cut::Journal::new(
            cfg.map_unit_bytes(),
            dev.capacity_bytes(),
            cut::KEEP_ALL_BYTES,
        ));
    }
    out
}

/// The NBD error of a request the model ended with `status`. The model decides, the protocol
/// reports: a read it could not decode is EIO, a write to a worn-out (read-only) drive or into
/// a protected range EPERM, a write it found no room for ENOSPC.
pub(super) fn errno_of(status: Status) -> u32 {
    match status {
        Status::Ok => 0,
        Status::ReadOnly | Status::WriteProtected => EPERM,
        Status::NoSpace => ENOSPC,
        // Zone statuses never come: serve refuses a zoned drive at start.
        _ => EIO,
    }
}
