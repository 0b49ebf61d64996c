//! The live device: a simulated drive served over the Network Block Device protocol to real,
//! unmodified clients (qemu-img, qemu-io, nbdcopy, fio, a QEMU guest).
//!
//! Why a server of our own: the NBD servers on crates.io implement part of the protocol
//! (no structured replies or INFO_BLOCK_SIZE) and trust a client's lengths; this one bounds
//! every length before it allocates (`proto`, `conn`).
//!
//! Threads: one accepts connections; each connection has a reader (requests in) and a writer
//! (replies out); one simulation thread — the caller's — owns the [`Device`] and its data store,
//! submits each request through the device boundary, runs the model, and hands replies to the
//! writers. A client that asks for TLS (NBD_OPT_STARTTLS) has its stream wrapped in TLS
//! (`tls`) before the options go on; who may connect at all is `access`'s.
//!
//! Two clocks: `realtime` maps simulated time onto the wall clock (a reply leaves when the wall
//! clock reaches its simulated completion, times `time_scale`), `logical` replies as soon as the
//! model has finished the request.

pub mod access;
pub mod conn;
pub mod cut;
pub mod data;
pub mod net;
pub mod proto;
pub mod session;
pub mod tls;

use crate::config::{BackendKind, SsdConfig};
use crate::device::{Completion, Device, Driver, Flags, Request, Status};
use crate::error::{got, Invalid};
use crate::error::{Error, Result};
use crate::request::Op;
use crate::sim::SimTime;
use crate::stats::result::RunResult;
use crate::stats::LatencyStats;
use access::{Door, Refusal, HANDSHAKE_LIMIT_S};
use conn::{Export, Handshake, Negotiation, Reply, TlsPhase, ToSim};
use data::{Data, DataSpec};
pub use net::Listen;
use net::{Listener, Stream};
use proto::*;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tls::{Credentials, Tls, TlsMode};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    Realtime,
    Logical,
}

impl Clock {
    pub fn parse(text: &str) -> Result<Clock> {
        match text {
            "realtime" => Ok(Clock::Realtime),
            "logical" => Ok(Clock::Logical),
            _ => Err(Error::bad_config(Invalid::option(
                "--clock",
                format!("{text:?}"),
                "realtime or logical",
            ))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Clock::Realtime => "realtime",
            Clock::Logical => "logical",
        }
    }
}

#[derive(Clone, Debug)]
pub struct ServeOptions {
    pub listen: Listen,
    pub export_name: String,
    pub read_only: bool,
    pub clock: Clock,
    /// Wall seconds per simulated second (realtime clock): 2 plays the drive at half speed.
    pub time_scale: f64,
    pub seed: u64,
    /// Where the drive's bytes live.
    pub data: DataSpec,
    /// Write the session log here (`ssdlab run --trace` replays it).
    pub log: Option<PathBuf>,
    /// With `log`: write each logged write's bytes here, in the log's order.
    pub log_data: Option<PathBuf>,
    /// TLS: off, on or required; None is `require` with credentials, else off.
    pub tls: Option<TlsMode>,
    pub tls_credentials: Option<Credentials>,
    /// Most connections at once (1 to [`MAX_CONNECTIONS`]); more are closed at once.
    pub max_connections: usize,
    /// Serve an address other machines reach without TLS and client authentication.
    pub insecure_network: bool,
    /// Arm the drive's power-loss model (page-mapped FTL only), so that the session can be
    /// cut: [`Tick::PowerCut`] (SIGUSR1 to `ssdlab serve`) or `power_cut_event`.
    pub power_cuts: bool,
    /// Cut the power once the device has handled this many events (logical clock only: on the
    /// realtime clock the events depend on the wall clock).
    pub power_cut_event: Option<u64>,
}

impl ServeOptions {
    /// TLS as asked, or by default: required when credentials are given, off otherwise.
    fn tls_mode(&self) -> TlsMode {
        self.tls.unwrap_or(match self.tls_credentials {
            Some(_) => TlsMode::Require,
            None => TlsMode::Off,
        })
    }
}

/// What the live figures' callback asks of the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tick {
    Go,
    Stop,
    /// Cut the drive's power now (`ServeOptions::power_cuts`), then serve the recovered drive.
    PowerCut,
}

/// The default of `--max-connections`: a few clients with a few connections each (nbdcopy
/// opens four, QEMU one). Each connection is two threads.
pub const DEFAULT_MAX_CONNECTIONS: usize = 16;
/// The most `--max-connections` may be.
pub const MAX_CONNECTIONS: usize = 1024;

/// A connection as the accepting thread keeps it: a handle to close it by, and where its
/// handshake stands.
struct Open {
    /// A clone of the socket (shutting it down ends both of the connection's threads).
    stream: Stream,
    started: Instant,
    state: AtomicU8,
}

// `Open::state`.
const NEGOTIATING: u8 = 0;
const SERVING: u8 = 1;
const TIMED_OUT: u8 = 2;
const ENDED: u8 = 3;

/// What every connection shares.
struct Shared {
    export: Export,
    tls: Option<Tls>,
    door: Door,
    /// Large reply buffers, sent and ready for another reply.
    buffers: Arc<conn::Buffers>,
}

/// Accept connections until `stop`, each with a thread that runs the handshake and then reads
/// requests (and one that writes replies). Connections beyond `max_connections` are closed at
/// once, and handshakes beyond the time limit are cut off.
fn accept_loop(
    listener: Listener,
    shared: Arc<Shared>,
    max_connections: usize,
    to_sim: Sender<ToSim>,
    open: Arc<Mutex<Vec<Arc<Open>>>>,
    next_conn: Arc<AtomicU32>,
    stop: Arc<AtomicBool>,
) {
    let limit = Duration::from_secs(HANDSHAKE_LIMIT_S);
    while !stop.load(Ordering::Relaxed) {
        let live = {
            let mut open = open.lock().unwrap();
            open.retain(|c| c.state.load(Ordering::Acquire) != ENDED);
            for c in open.iter() {
                let late = c.started.elapsed() > limit;
                if late
                    && c.state
                        .compare_exchange(
                            NEGOTIATING,
                            TIMED_OUT,
                            Ordering::AcqRel,
                            Ordering::Acquire,
                        )
                        .is_ok()
                {
                    c.stream.shutdown();
                }
            }
            open.len()
        };
        let stream = match listener.accept() {
            Ok(s) => s,
            // Nothing waiting, or no descriptor to take one with (EMFILE): wait a turn rather
            // than spin.
            Err(_) => {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        shared.door.connected();
        if live >= max_connections {
            shared.door.refuse(Refusal::TooManyConnections);
            stream.shutdown();
            continue;
        }
        let Ok(handle) = stream.try_clone() else {
            continue;
        };
        let conn = {
            // Numbered and listed at once: a power cut closes every connection listed.
            let mut open = open.lock().unwrap();
            let conn = next_conn.fetch_add(1, Ordering::Relaxed);
            open.push(Arc::new(Open {
                stream: handle,
                started: Instant::now(),
                state: AtomicU8::new(NEGOTIATING),
            }));
            conn
        };
        let entry = open.lock().unwrap().last().expect("just pushed").clone();
        let (shared, to_sim) = (shared.clone(), to_sim.clone());
        std::thread::spawn(move || {
            serve_connection(stream, conn, &shared, &entry, &to_sim);
            entry.stream.shutdown();
            entry.state.store(ENDED, Ordering::Release);
        });
    }
}

/// The handshake, through a TLS upgrade if the client asks for one: the stream to serve and
/// what was negotiated, or why the client was turned away (None: it left of its own accord).
fn negotiate(
    mut stream: Stream,
    export: &Export,
    tls: Option<&Tls>,
) -> std::result::Result<(Stream, bool, bool), Option<Refusal>> {
    let phase = match tls.map(|t| t.mode) {
        None | Some(TlsMode::Off) => TlsPhase::Off,
        Some(TlsMode::On) => TlsPhase::Offered,
        Some(TlsMode::Require) => TlsPhase::Required,
    };
    let mut n = Negotiation::greet(&mut stream, phase).map_err(|_| None)?;
    loop {
        match n.options(&mut stream, export) {
            Ok(Handshake::Transmission {
                structured,
                block_status,
            }) => return Ok((stream, structured, block_status)),
            Ok(Handshake::StartTls) => {
                let tls = tls.expect("STARTTLS is acknowledged only with TLS");
                let tls_stream = tls
                    .accept(stream)
                    .map_err(|_| Some(Refusal::TlsHandshakeFailed))?;
                stream = Stream::Tls(tls_stream);
                n.tls_established();
            }
            Ok(Handshake::Refused(why)) => return Err(Some(why)),
            Ok(Handshake::Closed) => return Err(None),
            // The client went away (after a refusal, turned away by it).
            Err(_) => return Err(n.refused()),
        }
    }
}

fn serve_connection(
    stream: Stream,
    conn: u32,
    shared: &Shared,
    open: &Open,
    to_sim: &Sender<ToSim>,
) {
    let negotiated = negotiate(stream, &shared.export, shared.tls.as_ref());
    // The accepting thread may have cut the handshake off meanwhile.
    let in_time = open
        .state
        .compare_exchange(NEGOTIATING, SERVING, Ordering::AcqRel, Ordering::Acquire)
        .is_ok();
    let (mut stream, structured, block_status) = match negotiated {
        Ok(n) if in_time => n,
        Ok((stream, ..)) => {
            stream.shutdown();
            shared.door.refuse(Refusal::HandshakeTimeout);
            return;
        }
        Err(why) => {
            if !in_time {
                shared.door.refuse(Refusal::HandshakeTimeout);
            } else if let Some(why) = why {
                shared.door.refuse(why);
            }
            return;
        }
    };
    shared.door.served();
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let (replies_tx, replies_rx) = mpsc::channel::<Vec<Reply>>();
    let credit = Arc::new(conn::Credit::default());
    let writer_credit = credit.clone();
    let buffers = shared.buffers.clone();
    let writer_thread = std::thread::spawn(move || {
        conn::write_replies(&mut writer, replies_rx, &writer_credit, &buffers);
        writer.shutdown();
    });
    if to_sim
        .send(ToSim::Open {
            conn,
            structured,
            replies: replies_tx,
        })
        .is_ok()
    {
        // Buffered from here (the handshake read exactly what it needed): a header is not a
        // system call of its own.
        let mut reader = io::BufReader::with_capacity(64 << 10, &mut stream);
        let export = &shared.export;
        let _ = conn::read_requests(&mut reader, conn, export, block_status, &credit, to_sim);
        let _ = to_sim.send(ToSim::Closed { conn });
    }
    credit.close();
    let _ = writer_thread.join();
}

/// A request in the model.
struct Pending {
    conn: u32,
    handle: u64,
    kind: u16,
    offset: u64,
    len: u64,
    data: Vec<u8>,
    /// A FUA write: a flush follows it before the reply.
    fua: bool,
    credit: u64,
    /// What it did to the cut journal (a session whose power can be cut).
    ticket: cut::Ticket,
}

impl Pending {
    /// A request read back from a session log: no connection to answer, no data to keep.
    fn replayed(r: &Request, fua: bool) -> Pending {
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

struct ConnState {
    /// The writer's queue: the replies of one turn go in one message (one wake-up).
    replies: Sender<Vec<Reply>>,
    /// Replies sent this turn, handed to the writer at the turn's end (`Outbox::hand_over`).
    batch: Vec<Reply>,
    structured: bool,
    /// Requests taken whose reply has not gone to the writer yet.
    outstanding: u32,
    /// The client disconnected (DISC or end of stream): the connection goes once its
    /// outstanding replies are sent, as the protocol asks for a soft disconnect.
    closing: bool,
}

/// A reply due at a simulated time (realtime clock: held until the wall clock gets there).
struct Due {
    at: SimTime,
    seq: u64,
    conn: u32,
    reply: Reply,
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
struct Outbox {
    pending: HashMap<u32, Pending>,
    conns: HashMap<u32, ConnState>,
    due: BinaryHeap<Due>,
    seq: u64,
    /// Requests waiting for room in their interface queue.
    backlog: VecDeque<(Request, Pending)>,
    reads: u64,
    writes: u64,
    errors: u64,
    /// The FTL's map unit: the grain of what BLOCK_STATUS reports as a hole.
    unit_bytes: u64,
    /// The session log being written.
    log: Option<session::SessionWriter>,
    /// The bytes the drive holds (none in a session replay).
    data: Option<Data>,
    /// Realtime clock: how late each reply left against the wall time of its simulated
    /// completion (the server's lag behind real time), in wall picoseconds.
    lag: LatencyStats,
    /// A session whose power can be cut: the bytes each unit's versions hold
    /// (`cut::Journal`), and the first error reading the store for it.
    journal: Option<cut::Journal>,
    journal_error: Option<String>,
    /// Connections numbered below this were open at the last power cut: what they still
    /// send is dropped.
    dead_below: u32,
    /// Connections with replies in their batch.
    unsent: Vec<u32>,
    /// Where read replies' buffers come from (the writers give them back).
    buffers: Arc<conn::Buffers>,
}

impl Outbox {
    fn new(unit_bytes: u64, log: Option<session::SessionWriter>, data: Option<Data>) -> Outbox {
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
    fn enqueue(&mut self, r: Request, p: Pending) {
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
    fn send(&mut self, conn: u32, reply: Reply) {
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
    fn send_due(&mut self, limit: SimTime, wall_of: Option<&dyn Fn(SimTime) -> Instant>) {
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
    fn hand_over(&mut self) {
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

    fn reply(&mut self, at: SimTime, conn: u32, reply: Reply) {
        self.seq += 1;
        self.due.push(Due {
            at,
            seq: self.seq,
            conn,
            reply,
        });
    }

    /// The reply to a request, with its data for a read.
    fn finish(&mut self, at: SimTime, p: Pending, status: Status) {
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
    fn answer(
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
    fn taken(&mut self, conn: u32) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.outstanding += 1;
        }
    }

    /// Submit what waits for queue room, in order, while there is room.
    fn submit_backlog(&mut self, dev: &mut Device, now: SimTime) {
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
const MAX_READ_CHUNKS: usize = 64;

/// A read's reply: a simple reply with the data, or structured chunks — data where something
/// was written, holes (no bytes sent) where nothing was. None if the store could not be read.
fn read_reply(
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
fn error_reply(structured: bool, kind: u16, handle: u64, error: u32, message: &str) -> Vec<u8> {
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

/// Figures of a live session, for the live display.
fn live_json(
    dev: &Device,
    out: &Outbox,
    connections: usize,
    wall_s: f64,
    clock: Clock,
    cuts: &cut::Cuts,
) -> String {
    let host = dev.host();
    let lat = |op: Op| {
        let l = host.latency(op);
        let s = l.summary();
        serde_json::json!({"count": l.count, "bytes": l.bytes, "mean_us": s.mean,
                           "p50_us": s.p50, "p99_us": s.p99})
    };
    // The page FTL's counts, where it keeps the map (none elsewhere); with `--power-cuts` the
    // map checkpoints' programs count too.
    let (host_units, moved, gc_runs) = dev.ftl().map_or((0, 0, 0), |f| {
        (
            f.stats.host_units_written,
            f.stats.gc_units_moved + f.stats.checkpoint_units_written,
            f.stats.gc_runs,
        )
    });
    let waf = if host_units > 0 {
        (host_units + moved) as f64 / host_units as f64
    } else {
        0.0
    };
    serde_json::json!({
        "wall_s": wall_s,
        "simulated_s": dev.now().as_secs_f64(),
        "connections": connections,
        "requests": host.completed(),
        "in_flight": out.pending.len() + out.backlog.len(),
        "read": lat(Op::Read),
        "write": lat(Op::Write),
        "errors": out.errors,
        "write_amplification": waf,
        "gc_runs": gc_runs,
        // The realtime clock's lag behind real time (null on the logical clock).
        "lag": (clock == Clock::Realtime).then(|| {
            let s = out.lag.summary();
            serde_json::json!({"count": out.lag.count, "mean_us": s.mean, "p99_us": s.p99,
                               "max_us": s.max})
        }),
        // Each power cut so far (SIGUSR1 or --power-cut-event), with its recovery.
        "power_cuts": cuts.list,
        "power_cuts_refused": cuts.refused,
    })
    .to_string()
}

/// The calling thread's timer slack at 1 ns while it lives, as it was after. Linux lets a
/// sleeping thread wake up to 50 µs late by default: on the real-time clock each reply would
/// leave that much after its simulated completion (measured: fio's QD1 latency at scale 1 fell
/// from 180–206 µs to 144–153 µs with it).
struct TimerSlack(Option<u64>);

impl TimerSlack {
    #[cfg(target_os = "linux")]
    fn fine() -> TimerSlack {
        // SAFETY: prctl with PR_GET/SET_TIMERSLACK reads or sets a number of the calling
        // thread; no memory is passed.
        let old = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK) };
        if old <= 0 || unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) } != 0 {
            return TimerSlack(None);
        }
        TimerSlack(Some(old as u64))
    }

    #[cfg(not(target_os = "linux"))]
    fn fine() -> TimerSlack {
        TimerSlack(None)
    }
}

impl Drop for TimerSlack {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        if let Some(old) = self.0 {
            // SAFETY: as in `fine`.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, old as libc::c_ulong) };
        }
    }
}

/// Refuse a drive NBD cannot carry: a zoned drive's host must write at write pointers and
/// reset zones, and NBD has no zone commands (no report, no reset, no append); a raw device
/// (or seed 002's fusion device, raw NAND under a host-side FTL) has no logical blocks.
pub(crate) fn check_servable(cfg: &SsdConfig) -> Result<()> {
    if cfg.backend_kind() == BackendKind::Zoned {
        return Err(Error::config(format!(
            "serve: {} is a zoned drive ([zns]): NBD has no zones (no write pointers, resets or \
             reports), so a block client could not write it; serve a conventional config",
            cfg.meta.name
        )));
    }
    if matches!(cfg.backend_kind(), BackendKind::Raw | BackendKind::Fusion) {
        return Err(Error::config(
            "serve: a raw device (ftl.kind = \"none\") has no logical blocks to export".into(),
        ));
    }
    Ok(())
}

/// Serve `cfg` until `tick` (called about four times a second with the live figures as JSON)
/// returns false; returns the session's result. `ready` is called once with the address
/// clients connect to.
pub fn serve(
    cfg: &SsdConfig,
    opts: &ServeOptions,
    ready: &mut dyn FnMut(&str, &str),
    tick: &mut dyn FnMut(&str) -> Tick,
) -> Result<RunResult> {
    check_servable(cfg)?;
    check_options(opts)?;
    let tls_mode = opts.tls_mode();
    let tls = Tls::new(tls_mode, opts.tls_credentials.as_ref())?;
    let network = access::check_exposure(&opts.listen, tls.as_ref(), opts.insecure_network)?;
    let mut dev = Device::new(cfg, opts.seed)?;
    // The data and the log are opened before the server listens: a client never meets a
    // server that is about to fail.
    let log = open_log(cfg, opts)?;
    let data = Data::open(&opts.data, dev.capacity_bytes(), opts.read_only)?;
    let pre_s = crate::run::precondition(&mut dev, cfg, opts.seed)?;
    let power_cuts = opts.power_cuts || opts.power_cut_event.is_some();
    if power_cuts {
        dev.enable_power_loss("--power-cuts")?;
    }
    let export = export_of(cfg, opts, &dev);
    let listener = Listener::bind(&opts.listen)?;
    let _slack = TimerSlack::fine();
    ready(
        &client_address(&listener, tls.as_ref()),
        &access::who_can_connect(&opts.listen, network, tls.as_ref(), opts.max_connections),
    );
    let tls_auth = tls.as_ref().map(|t| t.auth.name());
    let shared = Arc::new(Shared {
        export,
        tls,
        door: Door::default(),
        buffers: Arc::default(),
    });

    let stop = Arc::new(AtomicBool::new(false));
    let open = Arc::new(Mutex::new(Vec::new()));
    let next_conn = Arc::new(AtomicU32::new(0));
    let (to_sim, from_conns) = mpsc::channel::<ToSim>();
    let acceptor = spawn_acceptor(
        listener,
        &shared,
        opts.max_connections,
        to_sim,
        &open,
        &next_conn,
        &stop,
    );

    let mut out = outbox(cfg, &dev, log, data, &shared, power_cuts);
    let mut cuts = cut::Cuts::default();
    let start = Instant::now();
    let scale = opts.time_scale;
    // The simulated time the wall clock has reached (realtime clock).
    let sim_now =
        |start: Instant| SimTime::from_ps((start.elapsed().as_secs_f64() / scale * 1e12) as u64);
    let wall_of = |t: SimTime| start + Duration::from_secs_f64(t.as_secs_f64() * scale);
    let tick_every = Duration::from_millis(250);
    let mut next_tick = Instant::now() + tick_every;
    let result = loop {
        // Wait for a request, the next reply due, the next model event or the next tick.
        let wake = match opts.clock {
            Clock::Realtime => [out.due.peek().map(|d| d.at), dev.next_event_time()]
                .into_iter()
                .flatten()
                .map(wall_of)
                .fold(next_tick, Instant::min),
            Clock::Logical => next_tick,
        };
        let first = match next_message(&from_conns, opts.clock, wake) {
            Ok(m) => m,
            Err(()) => break Ok(()),
        };
        let now_sim = match opts.clock {
            Clock::Realtime => sim_now(start).max(dev.now()),
            Clock::Logical => dev.now(),
        };
        // One turn: the model runs to now, what arrived is queued, what waits is submitted
        // while there is room. The session log records each turn that queues or submits.
        if let Some(log) = &mut out.log {
            log.turn(now_sim);
        }
        if opts.clock == Clock::Realtime {
            dev.run_until(&mut out, now_sim)?;
            // What fell due leaves before the turn takes new requests in: it is late already
            // by the time this thread woke.
            out.send_due(now_sim, Some(&wall_of));
        }
        take_messages(&mut out, &dev, first, &from_conns, now_sim);
        out.submit_backlog(&mut dev, now_sim);
        let cut_now = advance(&mut dev, &mut out, opts, &cuts, sim_now(start))?;
        if cut_now {
            cuts.cut(&mut dev, &mut out, cfg, opts, &open, &next_conn, start)?;
            next_tick = Instant::now();
        }
        // Send what is due.
        match opts.clock {
            Clock::Realtime => out.send_due(sim_now(start), Some(&wall_of)),
            Clock::Logical => out.send_due(SimTime::MAX, None),
        }
        if Instant::now() >= next_tick {
            next_tick = Instant::now() + tick_every;
            let figures = live_json(
                &dev,
                &out,
                out.conns.len(),
                start.elapsed().as_secs_f64(),
                opts.clock,
                &cuts,
            );
            match tick(&figures) {
                Tick::Go => {}
                Tick::Stop => break Ok(()),
                Tick::PowerCut if power_cuts => {
                    cuts.cut(&mut dev, &mut out, cfg, opts, &open, &next_conn, start)?;
                    next_tick = Instant::now();
                }
                Tick::PowerCut => {
                    cuts.refused += 1;
                }
            }
        }
    };
    close_connections(&stop, acceptor, &open, &mut out, from_conns);
    result?;
    // The model finishes what it accepted (its clients have gone): the session's figures are
    // those of whole requests, as a replay of its log gives them.
    dev.run_until(&mut out, SimTime::MAX)?;
    if let Some(log) = out.log.take() {
        log.finish()?;
    }
    let wall = start.elapsed().as_secs_f64();
    let job = session_job(
        opts,
        tls_mode,
        tls_auth,
        &shared.door,
        power_cuts.then(|| cuts.json()),
    );
    let mut result =
        crate::run::build_result(&dev, cfg, job, opts.seed, "server stopped", wall, pre_s);
    save_state_back(&mut dev, cfg, opts, &mut result)?;
    if opts.clock == Clock::Realtime {
        result.wall.reply_lag_us = Some(out.lag.summary());
    }
    result.power_loss = cuts.last.take();
    Ok(result)
}

/// Queue `first` and what else has arrived; the session log marks a turn that queued.
fn take_messages(
    out: &mut Outbox,
    dev: &Device,
    first: Option<ToSim>,
    from_conns: &Receiver<ToSim>,
    now: SimTime,
) {
    for msg in first
        .into_iter()
        .chain(std::iter::from_fn(|| from_conns.try_recv().ok()))
    {
        take_message(out, dev, msg, now);
    }
    if !out.backlog.is_empty() {
        if let Some(log) = &mut out.log {
            log.mark_turn();
        }
    }
}

/// The session log's writer (`--log`, with the written bytes too under `--log-data`).
fn open_log(cfg: &SsdConfig, opts: &ServeOptions) -> Result<Option<session::SessionWriter>> {
    Ok(match &opts.log {
        Some(path) => Some(session::SessionWriter::create(
            path,
            opts.log_data.as_deref(),
            cfg,
            opts.seed,
            opts.clock,
        )?),
        None if opts.log_data.is_some() => {
            return Err(Error::config(
                "--log-data: expected --log too (the bytes belong to the log's writes)".into(),
            ))
        }
        None => None,
    })
}

/// The thread that accepts connections until `stop` (see [`accept_loop`]).
fn spawn_acceptor(
    listener: Listener,
    shared: &Arc<Shared>,
    max_connections: usize,
    to_sim: Sender<ToSim>,
    open: &Arc<Mutex<Vec<Arc<Open>>>>,
    next_conn: &Arc<AtomicU32>,
    stop: &Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    let (shared, stop, open) = (shared.clone(), stop.clone(), open.clone());
    let next_conn = next_conn.clone();
    std::thread::spawn(move || {
        accept_loop(
            listener,
            shared,
            max_connections,
            to_sim,
            open,
            next_conn,
            stop,
        )
    })
}

/// Where replies wait to be sent, with the session log, the data, and (power cuts) the
/// journal of writes not yet durable.
fn outbox(
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

/// The model's part of a turn, after the requests were submitted: run to `wall_now` (realtime
/// clock), or until nothing is left or the power-cut event is reached (logical clock). True
/// when the power is to be cut now.
fn advance(
    dev: &mut Device,
    out: &mut Outbox,
    opts: &ServeOptions,
    cuts: &cut::Cuts,
    wall_now: SimTime,
) -> Result<bool> {
    let mut cut_now = false;
    match opts.clock {
        Clock::Realtime => dev.run_until(out, wall_now.max(dev.now()))?,
        Clock::Logical => match opts.power_cut_event.filter(|_| cuts.list.is_empty()) {
            Some(n) => {
                let handled = dev.events();
                if handled < n {
                    dev.run(out, n - handled, &mut |_, _| false)?;
                }
                cut_now = dev.events() >= n;
            }
            None => dev.run_until(out, SimTime::MAX)?,
        },
    }
    Ok(cut_now)
}

/// A server started from a saved state writes the drive's state back over it at a clean stop,
/// so that the next start goes on from here (docs/state.md).
fn save_state_back(
    dev: &mut Device,
    cfg: &SsdConfig,
    opts: &ServeOptions,
    result: &mut RunResult,
) -> Result<()> {
    // After the result (the flush of a cache buffer it may need is the shutdown's, not the
    // session's), written whole to a temporary file and renamed, so that a server killed
    // meanwhile leaves the old state intact.
    if let (Some(path), false) = (&cfg.precondition.state, opts.read_only) {
        let made_by = serde_json::json!({
            "ssdlab": env!("CARGO_PKG_VERSION"),
            "serve": {"from": path, "seed": opts.seed},
        })
        .to_string();
        dev.flush_for_save()?;
        let saved = dev.save_state(cfg, std::path::Path::new(path), &made_by)?;
        result.job["serve"]["state_saved"] = serde_json::to_value(saved).expect("json");
    }
    Ok(())
}

/// The options' own checks, before anything is built: one line naming the option, the value
/// and what was expected.
fn check_options(opts: &ServeOptions) -> Result<()> {
    if opts.power_cut_event.is_some() && opts.clock != Clock::Logical {
        return Err(Error::config(
            "--power-cut-event: expected --clock logical (on the realtime clock the events a \
             session reaches depend on the wall clock; SIGUSR1 cuts a realtime session)"
                .into(),
        ));
    }
    if opts.power_cut_event == Some(0) {
        return Err(Error::bad_config(Invalid::unnamed(
            "--power-cut-event",
            got(
                "0",
                "at least 1 (the device event after which the power fails)",
            ),
        )));
    }
    if !(opts.time_scale.is_finite() && opts.time_scale > 0.0 && opts.time_scale <= 1e6) {
        return Err(Error::bad_config(Invalid::option(
            "--time-scale",
            opts.time_scale,
            "a number above 0, at most 1e6",
        )));
    }
    if opts.export_name.len() > 4096 {
        return Err(Error::config(format!(
            "--export-name: {} bytes, expected at most 4096",
            opts.export_name.len()
        )));
    }
    if !(1..=MAX_CONNECTIONS).contains(&opts.max_connections) {
        return Err(Error::bad_config(Invalid::option(
            "--max-connections",
            opts.max_connections,
            format!("1 to {MAX_CONNECTIONS}"),
        )));
    }
    Ok(())
}

/// What the server offers its clients: the drive's size, and the block sizes it prefers.
fn export_of(cfg: &SsdConfig, opts: &ServeOptions, dev: &Device) -> Export {
    let max_cmd = dev.max_cmd_bytes().min(MAX_REQUEST_BYTES as u64) as u32;
    Export {
        name: opts.export_name.clone(),
        description: format!("ssdlab {} ({})", env!("CARGO_PKG_VERSION"), cfg.meta.name),
        size: dev.capacity_bytes(),
        read_only: opts.read_only,
        block_min: 512,
        block_preferred: cfg.map_unit_bytes().min(1 << 20) as u32,
        block_max: MAX_REQUEST_BYTES.max(max_cmd),
    }
}

/// The next message from a connection, waited for until `wake` (Ok(None): none came); Err when
/// every connection's sender has gone.
fn next_message(
    from_conns: &Receiver<ToSim>,
    clock: Clock,
    wake: Instant,
) -> std::result::Result<Option<ToSim>, ()> {
    let timeout = wake.saturating_duration_since(Instant::now());
    if clock == Clock::Realtime && timeout < SPIN_BEFORE_DUE {
        // The last stretch before a reply is due is waited out awake: a sleeping thread
        // wakes a scheduler's latency late (measured: p99 lag 49 µs at QD32, sleeping).
        // Yielding lets the connections' threads run meanwhile on a busy core.
        match spin_until(from_conns, wake) {
            Ok(m) => Ok(m),
            Err(()) => Err(()),
        }
    } else {
        let sleep = match clock {
            Clock::Realtime => timeout - SPIN_BEFORE_DUE,
            Clock::Logical => timeout,
        };
        match from_conns.recv_timeout(sleep) {
            Ok(m) => Ok(Some(m)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(()),
        }
    }
}

/// Stop: no new connections; close the ones there are, and wait (a few seconds at most) for
/// their threads to end, so that the door's counts are final.
fn close_connections(
    stop: &AtomicBool,
    acceptor: std::thread::JoinHandle<()>,
    open: &Mutex<Vec<Arc<Open>>>,
    out: &mut Outbox,
    from_conns: Receiver<ToSim>,
) {
    // Their readers end, and their writers when their senders go.
    stop.store(true, Ordering::Relaxed);
    let _ = acceptor.join();
    for c in open.lock().unwrap().iter() {
        c.stream.shutdown();
    }
    out.conns.clear();
    // Messages not taken yet hold writers' senders too.
    drop(from_conns);
    // The connection threads end once their sockets are shut; the door's counts are final when
    // they have (a client answered a moment ago is counted).
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline
        && open
            .lock()
            .unwrap()
            .iter()
            .any(|c| c.state.load(Ordering::Acquire) != ENDED)
    {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The session's settings and connections, as the result's `job`.
fn session_job(
    opts: &ServeOptions,
    tls_mode: TlsMode,
    tls_auth: Option<&str>,
    door: &Door,
    power_cuts: Option<serde_json::Value>,
) -> serde_json::Value {
    serde_json::json!({"serve": {
        "listen": opts.listen.text(),
        "tls": tls_mode.name(),
        "tls_auth": tls_auth,
        "max_connections": opts.max_connections,
        "insecure_network": opts.insecure_network,
        "connections": door.json(),
        "export_name": opts.export_name,
        "read_only": opts.read_only,
        "clock": opts.clock.name(),
        "time_scale": opts.time_scale,
        "log": opts.log.as_ref().map(|p| p.display().to_string()),
        "power_cuts": power_cuts,
    }})
}

/// How long before a reply is due (realtime clock) the simulation thread stops sleeping and
/// waits awake, so that the reply leaves on time rather than a wake-up late.
const SPIN_BEFORE_DUE: Duration = Duration::from_micros(50);

/// A message from a connection, or none by `wake`, waited for without sleeping;
/// Err if every connection's sender has gone.
fn spin_until(
    from_conns: &mpsc::Receiver<ToSim>,
    wake: Instant,
) -> std::result::Result<Option<ToSim>, ()> {
    loop {
        match from_conns.try_recv() {
            Ok(m) => return Ok(Some(m)),
            Err(mpsc::TryRecvError::Disconnected) => return Err(()),
            Err(mpsc::TryRecvError::Empty) => {}
        }
        if Instant::now() >= wake {
            return Ok(None);
        }
        std::thread::yield_now();
    }
}

/// The URI a libnbd client connects with: `nbds` when TLS is required, with the PSK file's
/// first user and the file itself when clients authenticate by key.
fn client_address(listener: &Listener, tls: Option<&Tls>) -> String {
    let Some(tls) = tls.filter(|t| t.mode == TlsMode::Require) else {
        return listener.address("nbd");
    };
    let address = listener.address("nbds");
    let tls::ClientAuth::Psk { file, users } = &tls.auth else {
        return address;
    };
    let file = std::fs::canonicalize(file).unwrap_or_else(|_| file.clone());
    let user = uri_escape(users[0].as_bytes(), b"");
    let with_user = address.replacen("://", &format!("://{user}@"), 1);
    let joiner = if with_user.contains('?') { "&" } else { "/?" };
    let file = uri_escape(file.as_os_str().as_encoded_bytes(), b"/");
    format!("{with_user}{joiner}tls-psk-file={file}")
}

/// Text for a URI: bytes other than unreserved characters and `keep` percent-encoded.
fn uri_escape(text: &[u8], keep: &[u8]) -> String {
    text.iter()
        .map(|&b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ if keep.contains(&b) => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// One message from a connection.
fn take_message(out: &mut Outbox, dev: &Device, msg: ToSim, now: SimTime) {
    let (ToSim::Open { conn, .. }
    | ToSim::Closed { conn }
    | ToSim::Refused { conn, .. }
    | ToSim::Request { conn, .. }) = &msg;
    if *conn < out.dead_below {
        // Open at a power cut: gone with the drive.
        return;
    }
    match msg {
        ToSim::Open {
            conn,
            structured,
            replies,
        } => {
            out.conns.insert(
                conn,
                ConnState {
                    replies,
                    batch: Vec::new(),
                    structured,
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
                    out.reply(now, conn, Reply { bytes, credit });
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
fn allocation(
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

/// The NBD error of a request the model ended with `status`. The model decides, the protocol
/// reports: a read it could not decode is EIO, a write to a worn-out (read-only) drive or into
/// a protected range EPERM, a write it found no room for ENOSPC.
fn errno_of(status: Status) -> u32 {
    match status {
        Status::Ok => 0,
        Status::ReadOnly | Status::WriteProtected => EPERM,
        Status::NoSpace => ENOSPC,
        // Zone statuses never come: serve refuses a zoned drive at start.
        _ => EIO,
    }
}

#[cfg(test)]
mod tests;
