//! The live device: a simulated drive served over the Network Block Device protocol to real,
//! unmodified clients (qemu-img, qemu-io, nbdcopy, fio, a QEMU guest).
//!
//! Why a server of our own: the NBD servers on crates.io implement part of the protocol
//! (no structured replies or INFO_BLOCK_SIZE) and trust a client's lengths; this one bounds
//! every length before it allocates (`proto`, `conn`).
//!
//! Threads: one accepts connections; each connection has a thread that runs its handshake and
//! then writes its replies; one simulation thread — the caller's — owns the [`Device`] and its
//! data store, reads the requests of plain connections from their sockets itself, without
//! waiting (`inbound`: `epoll`), submits each request through the device boundary, runs the
//! model, and puts each turn's replies in their connection's outlet (`conn::Outlet`): on a plain
//! socket that the writer is not using, small replies are sent from this thread at once, without
//! blocking; the writer sends the rest. A client that asks for TLS (NBD_OPT_STARTTLS) has its
//! stream wrapped in TLS (`tls`) before the options go on, and a reader thread of its own that
//! hands its requests over a channel; who may connect at all is `access`'s.
//!
//! Two clocks: `realtime` maps simulated time onto the wall clock (a reply leaves when the wall
//! clock reaches its simulated completion, times `time_scale`), `logical` replies as soon as the
//! model has finished the request.

mod accept;
pub mod access;
mod commands;
pub mod conn;
pub mod cut;
pub mod data;
pub mod inbound;
pub mod net;
mod options;
pub mod proto;
pub mod session;
pub mod tls;

use crate::config::SsdConfig;
use crate::device::{Completion, Device, Driver, Flags, Request, Status};
use crate::error::{says, Error, Invalid, Result};
use crate::request::Op;
use crate::sim::SimTime;
use crate::stats::result::RunResult;
use crate::stats::LatencyStats;
use accept::{client_address, close_connections, spawn_acceptor, Shared};
use access::Door;
use commands::take_message;
use conn::{Export, Reply, ToSim};
use data::{Data, Lent};
use inbound::{Inbound, Inbox};
pub use net::Listen;
use net::Listener;
pub(crate) use options::check_servable;
use options::{check_options, session_job};
pub use options::{Clock, ServeOptions, Tick, DEFAULT_MAX_CONNECTIONS, MAX_CONNECTIONS};
use proto::*;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU32};
use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tls::Tls;

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
    /// Where its replies go out: the replies of one turn are put there together.
    replies: conn::Replies,
    /// Replies sent this turn, put in the outlet together at the turn's end (`Outbox::hand_over`).
    batch: Vec<Reply>,
    structured: bool,
    /// Large reads lend the memory store's pages to their replies (`ToSim::Open`).
    lend: bool,
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
            c.replies.put(std::mem::take(&mut c.batch));
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
        let (structured, lend) = (c.structured, c.lend);
        let mut lent = Vec::new();
        let read = match (&self.data, p.kind, error) {
            (Some(data), CMD_READ, 0) => {
                let lent = lend.then_some(&mut lent);
                read_reply(data, structured, &p, &self.buffers, lent)
            }
            _ => None,
        };
        let bytes = if let Some(bytes) = read {
            self.reads += 1;
            bytes
        } else {
            lent.clear();
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
                lent,
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
        self.reply(now, conn, Reply::new(bytes, credit));
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
/// A read of at least [`LEND_BYTES`] from the memory store lends it the store's pages (into
/// `lent`, where given) rather than copying them.
fn read_reply(
    data: &Data,
    structured: bool,
    p: &Pending,
    buffers: &conn::Buffers,
    lent: Option<&mut Lent>,
) -> Option<Vec<u8>> {
    let mut runs = if structured {
        data.extents(p.offset, p.len)
    } else {
        Vec::new()
    };
    if runs.len() > MAX_READ_CHUNKS || runs.iter().all(|r| r.2) {
        runs = vec![(p.offset, p.len, true)];
    }
    let headers = 20 * runs.len() + 16;
    // Only the memory store lends, and only a large read (below LEND_BYTES a copy costs less).
    let mut lend = lent.filter(|_| matches!(data, Data::Memory(_)) && p.len >= LEND_BYTES);
    // Lent pages leave the buffer the headers, holes and fill pages alone.
    let mut out = buffers.take(if lend.is_some() {
        headers
    } else {
        p.len as usize + headers
    });
    if !structured {
        out.extend_from_slice(&simple_reply(0, p.handle));
        data.read_into(p.offset, p.len, &mut out, lend).ok()?;
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
            data.read_into(offset, len, &mut out, lend.as_deref_mut())
                .ok()?;
        } else {
            out.extend_from_slice(&chunk_header(flags, REPLY_TYPE_OFFSET_HOLE, p.handle, 12));
            out.extend_from_slice(&offset.to_be_bytes());
            out.extend_from_slice(&(len as u32).to_be_bytes());
        }
    }
    Some(out)
}

/// Reads from this size up send the memory store's pages from where they lie: below it a
/// copy costs less than sharing the pages with the writer's thread (measured at 4 KiB and
/// 1 MiB; docs/live-device.md, "Speed").
const LEND_BYTES: u64 = 64 << 10;

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
    // The back end's writes as the result counts them (with `--power-cuts` the map
    // checkpoints' programs count too).
    let gc = dev.backend().gc_counts();
    let (gc_runs, waf) = (gc.runs, gc.write_amplification());
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
    let mut inbound = Inbound::new()
        .map_err(|e| Error::serve(format!("waiting for the connections' sockets: {e}")))?;
    let (to_sim, from_conns) = mpsc::channel::<ToSim>();
    let acceptor = spawn_acceptor(
        listener,
        &shared,
        opts.max_connections,
        Inbox::new(to_sim, inbound.bell()),
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
        let first = match next_message(&from_conns, &mut inbound, opts.clock, wake) {
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
        take_messages(&mut out, &dev, first, &from_conns, &mut inbound, now_sim);
        out.submit_backlog(&mut dev, now_sim);
        let cut_now = advance(&mut dev, &mut out, opts, &cuts, sim_now(start))?;
        if cut_now {
            cuts.cut(&mut dev, &mut out, cfg, opts, &open, &next_conn, start)?;
            inbound.clear();
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
                    inbound.clear();
                    next_tick = Instant::now();
                }
                Tick::PowerCut => {
                    cuts.refused += 1;
                }
            }
        }
    };
    inbound.clear();
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

/// Queue `first` and what else has arrived: the channel's messages (a plain connection's
/// opening hands its socket to `inbound`), then what the plain sockets ready hold. The session
/// log marks a turn that queued.
fn take_messages(
    out: &mut Outbox,
    dev: &Device,
    first: Option<ToSim>,
    from_conns: &Receiver<ToSim>,
    inbound: &mut Inbound,
    now: SimTime,
) {
    for mut msg in first
        .into_iter()
        .chain(std::iter::from_fn(|| from_conns.try_recv().ok()))
    {
        let mut unread = None;
        if let ToSim::Open { conn, plain, .. } = &mut msg {
            // One opened before a power cut is gone with the drive (take_message drops it).
            if let (Some(p), true) = (plain.take(), *conn >= out.dead_below) {
                if !inbound.add(*conn, *p) {
                    // A socket that cannot be waited on ends as a closed one does.
                    unread = Some(ToSim::Closed { conn: *conn });
                }
            }
        }
        take_message(out, dev, msg, now);
        if let Some(closed) = unread {
            take_message(out, dev, closed, now);
        }
    }
    for msg in inbound.read_turn() {
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
            return Err(Error::bad_serve(Invalid::unnamed(
                "--log-data",
                says("expected --log too (the bytes belong to the log's writes)"),
            )))
        }
        None => None,
    })
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

/// The next message from a connection's thread, waited for until `wake` along with the plain
/// sockets (Ok(None): none came; a socket may be ready to read); Err when every connection's
/// sender has gone.
fn next_message(
    from_conns: &Receiver<ToSim>,
    inbound: &mut Inbound,
    clock: Clock,
    wake: Instant,
) -> std::result::Result<Option<ToSim>, ()> {
    let taken = |from_conns: &Receiver<ToSim>| match from_conns.try_recv() {
        Ok(m) => Ok(Some(m)),
        Err(TryRecvError::Empty) => Ok(None),
        Err(TryRecvError::Disconnected) => Err(()),
    };
    // Every sender rings the bell after it sends: a message that comes after this look ends
    // the wait below.
    if let m @ (Ok(Some(_)) | Err(())) = taken(from_conns) {
        return m;
    }
    if inbound.ready_now() {
        return Ok(None);
    }
    let timeout = wake.saturating_duration_since(Instant::now());
    if clock == Clock::Realtime && timeout < SPIN_BEFORE_DUE {
        // The last stretch before a reply is due is waited out awake: a sleeping thread
        // wakes a scheduler's latency late (measured: p99 lag 49 µs at QD32, sleeping).
        // Yielding lets the connections' threads run meanwhile on a busy core.
        loop {
            inbound.wait(Duration::ZERO);
            if let m @ (Ok(Some(_)) | Err(())) = taken(from_conns) {
                return m;
            }
            if inbound.ready_now() || Instant::now() >= wake {
                return Ok(None);
            }
            std::thread::yield_now();
        }
    }
    let sleep = match clock {
        Clock::Realtime => timeout - SPIN_BEFORE_DUE,
        Clock::Logical => timeout,
    };
    inbound.wait(sleep);
    taken(from_conns)
}

/// How long before a reply is due (realtime clock) the simulation thread stops sleeping and
/// waits awake, so that the reply leaves on time rather than a wake-up late.
const SPIN_BEFORE_DUE: Duration = Duration::from_micros(50);

#[cfg(test)]
mod tests;
