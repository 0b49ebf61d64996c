//! One client connection: the fixed-newstyle handshake, then a reader that turns requests into
//! messages for the simulation thread and a writer that sends the replies it gets back.
//!
//! Nothing a client claims is allocated before it is bounded: option payloads up to
//! `MAX_OPTION_BYTES`, write payloads up to `MAX_REQUEST_BYTES`, and a connection holds at most
//! `MAX_IN_FLIGHT_BYTES` of requests in the model before its reader waits (a client that never
//! reads its replies stalls itself, not the server).

use super::access::Refusal;
use super::data::Lent;
use super::proto::*;
use std::collections::VecDeque;
use std::io::{self, IoSlice, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

mod requests;
pub use requests::{read_requests, Deliver, Parsed, RequestReader};

/// What the server offers: one export.
#[derive(Clone, Debug)]
pub struct Export {
    pub name: String,
    pub description: String,
    pub size: u64,
    pub read_only: bool,
    /// INFO_BLOCK_SIZE: minimum (the logical sector), preferred (the FTL's map unit), maximum
    /// (the largest request taken).
    pub block_min: u32,
    pub block_preferred: u32,
    pub block_max: u32,
}

impl Export {
    /// The flags sent to a client; `structured`: it negotiated structured replies.
    pub fn transmission_flags(&self, structured: bool) -> u16 {
        let mut f = TFLAG_HAS_FLAGS
            | TFLAG_SEND_FLUSH
            | TFLAG_SEND_FUA
            | TFLAG_SEND_TRIM
            | TFLAG_SEND_WRITE_ZEROES
            | TFLAG_SEND_FAST_ZERO
            | TFLAG_SEND_CACHE
            // All connections share one device and one data store.
            | TFLAG_CAN_MULTI_CONN;
        // The protocol: the server MUST NOT set NBD_FLAG_SEND_DF unless structured replies
        // were negotiated (DF only means something for a structured read).
        if structured {
            f |= TFLAG_SEND_DF;
        }
        if self.read_only {
            f |= TFLAG_READ_ONLY;
        }
        f
    }

    /// Whether a client's export name is this export's: exactly its name (the default name
    /// `""` only when the export has no other).
    fn names(&self, name: &[u8]) -> bool {
        name == self.name.as_bytes()
    }
}

/// How the handshake ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Handshake {
    /// Go on to transmission; `structured` if the client asked for structured replies,
    /// `block_status` if it chose the `base:allocation` metadata context.
    Transmission {
        structured: bool,
        block_status: bool,
    },
    /// NBD_OPT_STARTTLS was acknowledged: the TLS handshake follows at once, then the options
    /// go on over TLS ([`Negotiation::tls_established`]).
    StartTls,
    /// The client aborted or left: close the connection.
    Closed,
    /// The server turned the client away: close the connection.
    Refused(Refusal),
}

/// TLS as a connection's negotiation stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsPhase {
    /// The server has no TLS: STARTTLS is unsupported.
    Off,
    /// TLS is on offer; plaintext options are answered too.
    Offered,
    /// Until TLS is up every option but STARTTLS and ABORT is answered NBD_REP_ERR_TLS_REQD,
    /// and NBD_OPT_EXPORT_NAME (which cannot be answered with an error) closes.
    Required,
    /// The options run over TLS.
    Established,
}

fn read_u32(s: &mut impl Read) -> io::Result<u32> {
    let mut b = [0u8; 4];
    s.read_exact(&mut b)?;
    Ok(u32::from_be_bytes(b))
}

/// Read and drop `n` bytes.
fn skip(s: &mut impl Read, n: u64) -> io::Result<()> {
    let copied = io::copy(&mut s.take(n), &mut io::sink())?;
    if copied < n {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(())
}

/// The server's side of the fixed-newstyle handshake without TLS.
pub fn handshake<S: Read + Write>(s: &mut S, export: &Export) -> io::Result<Handshake> {
    Negotiation::greet(s, TlsPhase::Off)?.options(s, export)
}

/// One connection's option haggling, which a TLS upgrade interrupts and resumes.
#[derive(Debug)]
pub struct Negotiation {
    client_flags: u32,
    tls: TlsPhase,
    structured: bool,
    block_status: bool,
    /// What the client was last refused (a client that then leaves was turned away by it).
    refused: Option<Refusal>,
}

impl Negotiation {
    /// Send the greeting and read the client's flags.
    pub fn greet<S: Read + Write>(s: &mut S, tls: TlsPhase) -> io::Result<Negotiation> {
        let mut hello = Vec::with_capacity(18);
        hello.extend_from_slice(&NBD_MAGIC.to_be_bytes());
        hello.extend_from_slice(&OPTS_MAGIC.to_be_bytes());
        hello.extend_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
        s.write_all(&hello)?;
        Ok(Negotiation {
            client_flags: read_u32(s)?,
            tls,
            structured: false,
            block_status: false,
            refused: None,
        })
    }

    /// What the client was last refused, if anything: why a client that left was turned away.
    pub fn refused(&self) -> Option<Refusal> {
        self.refused
    }

    /// The TLS handshake after STARTTLS succeeded. What was negotiated in plaintext is
    /// forgotten: the client negotiates again where no one can have changed its options.
    pub fn tls_established(&mut self) {
        self.tls = TlsPhase::Established;
        self.structured = false;
        self.block_status = false;
        self.refused = None;
    }

    /// Options until the client chooses the export, asks for TLS, leaves or is turned away.
    pub fn options<S: Read + Write>(
        &mut self,
        s: &mut S,
        export: &Export,
    ) -> io::Result<Handshake> {
        if self.client_flags & !(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES) != 0 {
            // Flags we do not know: the protocol says to close.
            return Ok(Handshake::Refused(Refusal::ProtocolError));
        }
        if self.tls == TlsPhase::Required && self.client_flags & FLAG_C_FIXED_NEWSTYLE == 0 {
            // TLS needs fixed newstyle; such a client can only choose an export in plaintext.
            return Ok(Handshake::Refused(Refusal::TlsRequired));
        }
        let no_zeroes = self.client_flags & FLAG_C_NO_ZEROES != 0;
        for _ in 0..MAX_OPTIONS {
            let mut head = [0u8; 16];
            s.read_exact(&mut head)?;
            if u64::from_be_bytes(head[0..8].try_into().unwrap()) != OPTS_MAGIC {
                return Ok(Handshake::Refused(Refusal::ProtocolError));
            }
            let option = u32::from_be_bytes(head[8..12].try_into().unwrap());
            let len = u32::from_be_bytes(head[12..16].try_into().unwrap());
            let reply = |s: &mut S, kind: u32, payload: &[u8]| reply(s, option, kind, payload);
            if self.tls == TlsPhase::Required
                && !matches!(option, OPT_STARTTLS | OPT_ABORT)
                && len <= MAX_OPTION_DISCARD
            {
                if option == OPT_EXPORT_NAME {
                    // Cannot be answered with an error: the session ends.
                    return Ok(Handshake::Refused(Refusal::TlsRequired));
                }
                skip(s, len as u64)?;
                self.refused = Some(Refusal::TlsRequired);
                reply(
                    s,
                    REP_ERR_TLS_REQD,
                    b"TLS is required: send NBD_OPT_STARTTLS first",
                )?;
                continue;
            }
            if len > MAX_OPTION_BYTES {
                if option == OPT_EXPORT_NAME || len > MAX_OPTION_DISCARD {
                    return Ok(Handshake::Refused(Refusal::ProtocolError));
                }
                skip(s, len as u64)?;
                reply(s, REP_ERR_TOO_BIG, b"option too long")?;
                continue;
            }
            let mut data = vec![0u8; len as usize];
            s.read_exact(&mut data)?;
            let chosen = match option {
                OPT_EXPORT_NAME => Some(self.export_name(s, export, &data, no_zeroes)?),
                OPT_ABORT => {
                    reply(s, REP_ACK, &[])?;
                    Some(match self.refused {
                        Some(why) => Handshake::Refused(why),
                        None => Handshake::Closed,
                    })
                }
                OPT_STARTTLS => self.starttls(s, &data)?,
                OPT_LIST => {
                    if data.is_empty() {
                        let mut p = Vec::new();
                        p.extend_from_slice(&(export.name.len() as u32).to_be_bytes());
                        p.extend_from_slice(export.name.as_bytes());
                        reply(s, REP_SERVER, &p)?;
                        reply(s, REP_ACK, &[])?;
                    } else {
                        reply(s, REP_ERR_INVALID, b"NBD_OPT_LIST takes no data")?;
                    }
                    None
                }
                OPT_INFO | OPT_GO => self.info(s, export, option, &data)?,
                OPT_STRUCTURED_REPLY => {
                    if data.is_empty() {
                        self.structured = true;
                        reply(s, REP_ACK, &[])?;
                    } else {
                        reply(
                            s,
                            REP_ERR_INVALID,
                            b"NBD_OPT_STRUCTURED_REPLY takes no data",
                        )?;
                    }
                    None
                }
                OPT_LIST_META_CONTEXT | OPT_SET_META_CONTEXT => {
                    self.meta_context(s, export, option, &data)?;
                    None
                }
                OPT_EXTENDED_HEADERS => {
                    reply(s, REP_ERR_UNSUP, b"extended headers are not supported")?;
                    None
                }
                _ => {
                    reply(s, REP_ERR_UNSUP, b"unknown option")?;
                    None
                }
            };
            if let Some(handshake) = chosen {
                return Ok(handshake);
            }
        }
        // Too many options: a client that never chooses an export.
        Ok(Handshake::Refused(Refusal::ProtocolError))
    }

    /// NBD_OPT_EXPORT_NAME: the export's size and flags, and transmission. It cannot be
    /// answered with an error: an unknown name closes.
    fn export_name<S: Write>(
        &self,
        s: &mut S,
        export: &Export,
        name: &[u8],
        no_zeroes: bool,
    ) -> io::Result<Handshake> {
        if !export.names(name) {
            return Ok(Handshake::Refused(Refusal::UnknownExport));
        }
        let mut out = Vec::with_capacity(10 + 124);
        out.extend_from_slice(&export.size.to_be_bytes());
        out.extend_from_slice(&export.transmission_flags(self.structured).to_be_bytes());
        if !no_zeroes {
            out.extend_from_slice(&[0u8; 124]);
        }
        s.write_all(&out)?;
        Ok(self.transmission())
    }

    /// NBD_OPT_STARTTLS: Some(StartTls) when the server offers TLS and the client may take it.
    fn starttls<S: Write>(&self, s: &mut S, data: &[u8]) -> io::Result<Option<Handshake>> {
        let reply = |s: &mut S, kind: u32, payload: &[u8]| reply(s, OPT_STARTTLS, kind, payload);
        if !data.is_empty() {
            reply(s, REP_ERR_INVALID, b"NBD_OPT_STARTTLS takes no data")?;
            return Ok(None);
        }
        match self.tls {
            TlsPhase::Off => reply(s, REP_ERR_UNSUP, b"TLS is not configured")?,
            TlsPhase::Established => reply(s, REP_ERR_INVALID, b"TLS is already on")?,
            TlsPhase::Offered | TlsPhase::Required => {
                if self.client_flags & FLAG_C_FIXED_NEWSTYLE == 0 {
                    reply(s, REP_ERR_UNSUP, b"TLS needs fixed newstyle")?;
                } else {
                    reply(s, REP_ACK, &[])?;
                    return Ok(Some(Handshake::StartTls));
                }
            }
        }
        Ok(None)
    }

    /// NBD_OPT_INFO and NBD_OPT_GO: the export's information as asked; GO then starts
    /// transmission.
    fn info<S: Write>(
        &mut self,
        s: &mut S,
        export: &Export,
        option: u32,
        data: &[u8],
    ) -> io::Result<Option<Handshake>> {
        let reply = |s: &mut S, kind: u32, payload: &[u8]| reply(s, option, kind, payload);
        let Some(req) = parse_info_request(data) else {
            reply(s, REP_ERR_INVALID, b"malformed information request")?;
            return Ok(None);
        };
        if !export.names(&req.name) {
            self.refused = Some(Refusal::UnknownExport);
            reply(s, REP_ERR_UNKNOWN, b"no such export")?;
            return Ok(None);
        }
        let mut info = Vec::new();
        info.extend_from_slice(&INFO_EXPORT.to_be_bytes());
        info.extend_from_slice(&export.size.to_be_bytes());
        info.extend_from_slice(&export.transmission_flags(self.structured).to_be_bytes());
        reply(s, REP_INFO, &info)?;
        if req.infos.contains(&INFO_NAME) {
            let mut p = INFO_NAME.to_be_bytes().to_vec();
            p.extend_from_slice(export.name.as_bytes());
            reply(s, REP_INFO, &p)?;
        }
        if req.infos.contains(&INFO_DESCRIPTION) {
            let mut p = INFO_DESCRIPTION.to_be_bytes().to_vec();
            p.extend_from_slice(export.description.as_bytes());
            reply(s, REP_INFO, &p)?;
        }
        let mut p = INFO_BLOCK_SIZE.to_be_bytes().to_vec();
        p.extend_from_slice(&export.block_min.to_be_bytes());
        p.extend_from_slice(&export.block_preferred.to_be_bytes());
        p.extend_from_slice(&export.block_max.to_be_bytes());
        reply(s, REP_INFO, &p)?;
        reply(s, REP_ACK, &[])?;
        Ok((option == OPT_GO).then(|| self.transmission()))
    }

    /// NBD_OPT_LIST_META_CONTEXT and NBD_OPT_SET_META_CONTEXT. One context is served:
    /// base:allocation. A list with no query, or the query "base:", names it; set chooses it
    /// only when asked for by its full name.
    fn meta_context<S: Write>(
        &mut self,
        s: &mut S,
        export: &Export,
        option: u32,
        data: &[u8],
    ) -> io::Result<()> {
        let reply = |s: &mut S, kind: u32, payload: &[u8]| reply(s, option, kind, payload);
        if !self.structured {
            return reply(s, REP_ERR_INVALID, b"meta contexts need structured replies");
        }
        let Some(req) = parse_meta_request(data) else {
            return reply(s, REP_ERR_INVALID, b"malformed metadata context request");
        };
        if !export.names(&req.name) {
            self.refused = Some(Refusal::UnknownExport);
            return reply(s, REP_ERR_UNKNOWN, b"no such export");
        }
        let set = option == OPT_SET_META_CONTEXT;
        let matched = req
            .queries
            .iter()
            .any(|q| q == BASE_ALLOCATION.as_bytes() || (!set && q.as_slice() == b"base:"))
            || (!set && req.queries.is_empty());
        if set {
            self.block_status = matched;
        }
        if matched {
            let mut p = BASE_ALLOCATION_ID.to_be_bytes().to_vec();
            p.extend_from_slice(BASE_ALLOCATION.as_bytes());
            reply(s, REP_META_CONTEXT, &p)?;
        }
        reply(s, REP_ACK, &[])
    }

    fn transmission(&self) -> Handshake {
        Handshake::Transmission {
            structured: self.structured,
            block_status: self.block_status,
        }
    }
}

/// Answer option `option` with reply type `kind`.
fn reply<S: Write>(s: &mut S, option: u32, kind: u32, payload: &[u8]) -> io::Result<()> {
    s.write_all(&option_reply(option, kind, payload))
}

/// An `eventfd` that wakes the simulation thread from its wait: rung after a message is sent
/// on the channel (`serve::inbound::Inbox`), and when a writer gives credit back to a connection whose
/// reading waits for it ([`Credit`]). Made here, waited on in `serve::inbound`.
pub struct Bell(OwnedFd);

impl Bell {
    pub fn new() -> io::Result<Bell> {
        // SAFETY: eventfd with constant flags; the descriptor is owned at once.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a new descriptor nothing else owns.
        Ok(Bell(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    pub fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    pub fn ring(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: an 8-byte write from a live buffer to our eventfd. It fails only when the
        // count is at its maximum, when the bell is rung already.
        unsafe { libc::write(self.0.as_raw_fd(), one.as_ptr() as *const libc::c_void, 8) };
    }

    /// Silence it (the count back to zero) once woken.
    pub fn hush(&self) {
        let mut count = [0u8; 8];
        // SAFETY: an 8-byte read into a live buffer from our non-blocking eventfd.
        unsafe {
            libc::read(
                self.0.as_raw_fd(),
                count.as_mut_ptr() as *mut libc::c_void,
                8,
            )
        };
    }
}

/// A plain connection for the simulation thread to read: its socket, the parser of its
/// requests and its credit.
pub struct Plain {
    pub fd: OwnedFd,
    pub reader: RequestReader,
    pub credit: Arc<Credit>,
}

/// Bytes of requests a connection may have in the model at once before its reader waits.
pub const MAX_IN_FLIGHT_BYTES: u64 = 64 * 1024 * 1024;

/// A connection's requests in flight, in bytes: the reader takes credit, the writer gives it
/// back when the reply is sent. Counted without a lock (the reader and the writer touch it for
/// every batch); the lock and the condition variable are for a reader that must wait.
pub struct Credit {
    used: AtomicU64,
    closed: AtomicBool,
    /// Readers waiting for credit: a giver takes the lock and wakes them only when there are.
    waiting: AtomicU32,
    lock: Mutex<()>,
    freed: Condvar,
    limit: u64,
    /// Rung when credit comes back to a reader that waits without blocking (the simulation
    /// thread's reading of a plain socket, `serve::inbound`).
    bell: Option<Arc<Bell>>,
}

impl Default for Credit {
    fn default() -> Credit {
        Credit::with_limit(MAX_IN_FLIGHT_BYTES)
    }
}

impl Credit {
    /// An allowance of `limit` bytes (the fuzz target, which has no writer, takes u64::MAX).
    pub fn with_limit(limit: u64) -> Credit {
        Credit {
            used: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            waiting: AtomicU32::new(0),
            lock: Mutex::new(()),
            freed: Condvar::new(),
            limit,
            bell: None,
        }
    }

    /// An allowance of `limit` bytes whose giving back rings `bell` when a reader is parked.
    pub fn with_bell(limit: u64, bell: Arc<Bell>) -> Credit {
        Credit {
            bell: Some(bell),
            ..Credit::with_limit(limit)
        }
    }

    /// A reader that does not block, out of credit for `bytes`: registered as waiting (a giver
    /// rings the bell) and true, or false (not registered) if they fit after all.
    pub fn park(&self, bytes: u64) -> bool {
        // Registered before the check, as `wait` does: a giver after the check sees it.
        self.waiting.fetch_add(1, Ordering::SeqCst);
        if self.fits(bytes) {
            self.waiting.fetch_sub(1, Ordering::SeqCst);
            return false;
        }
        true
    }

    /// A parked reader: true (and no longer waiting) if `bytes` fit now.
    pub fn unpark(&self, bytes: u64) -> bool {
        if !self.fits(bytes) {
            return false;
        }
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        true
    }

    /// Whether `bytes` more fit now (or the connection closed: the reader stops waiting).
    fn fits(&self, bytes: u64) -> bool {
        let used = self.used.load(Ordering::SeqCst);
        self.closed.load(Ordering::SeqCst) || used == 0 || used.saturating_add(bytes) <= self.limit
    }

    /// Whether the connection closed (its writer ended): its reader stops.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Take `bytes` if they fit now: false (nothing taken) if they do not. One reader takes:
    /// the credit in use only falls between its check and its taking.
    pub fn try_take(&self, bytes: u64) -> bool {
        if !self.fits(bytes) {
            return false;
        }
        // Saturating, as the lock's count was: u64::MAX allowances never wrap.
        let _ = self
            .used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |u| {
                Some(u.saturating_add(bytes))
            });
        true
    }

    /// Wait until `bytes` fit (a request larger than the whole allowance waits for an empty
    /// connection) or the connection closes.
    pub fn wait(&self, bytes: u64) {
        if self.fits(bytes) {
            return;
        }
        // Registered before the check under the lock: a giver that frees credit after that
        // check sees the waiter and must take the lock to wake it, which it can only do once
        // the waiter sleeps.
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let mut g = self.lock.lock().unwrap();
        while !self.fits(bytes) {
            g = self.freed.wait(g).unwrap();
        }
        drop(g);
        self.waiting.fetch_sub(1, Ordering::SeqCst);
    }

    pub fn give(&self, bytes: u64) {
        let _ = self
            .used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |u| {
                Some(u.saturating_sub(bytes))
            });
        self.wake();
    }

    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.wake();
    }

    fn wake(&self) {
        if self.waiting.load(Ordering::SeqCst) > 0 {
            let g = self.lock.lock().unwrap();
            self.freed.notify_all();
            drop(g);
            if let Some(bell) = &self.bell {
                bell.ring();
            }
        }
    }
}

/// What a connection sends the simulation thread.
pub enum ToSim {
    Open {
        conn: u32,
        structured: bool,
        /// Large reads may lend the memory store's pages to their replies (not over TLS,
        /// which seals a copy into records anyway: lent pages only add a gathering pass).
        lend: bool,
        replies: Replies,
        /// A plain socket the simulation thread reads itself (None: a reader thread sends its
        /// requests, as a TLS connection's does).
        plain: Option<Box<Plain>>,
    },
    Request {
        conn: u32,
        header: RequestHeader,
        /// A write's payload.
        data: Vec<u8>,
        /// Bytes of credit this request holds (given back with its reply).
        credit: u64,
    },
    /// A request refused before the model saw it.
    Refused {
        conn: u32,
        header: RequestHeader,
        error: u32,
        credit: u64,
    },
    Closed {
        conn: u32,
    },
    /// A connection's requests and refusals read together, in order (`read_requests`).
    Batch(Vec<ToSim>),
}

/// Reply buffers of large reads, given back by the writers once sent and taken again by the
/// simulation thread: a fresh 1 MiB buffer is a fresh mapping, 256 page faults to fill it and
/// an unmapping to free it (measured: a tenth of the server's time at 1 MiB reads).
#[derive(Default)]
pub struct Buffers {
    /// The buffers kept, and the bytes of capacity they hold.
    free: Mutex<(Vec<Vec<u8>>, usize)>,
}

impl Buffers {
    /// Buffers smaller than this come from the allocator as they are.
    const MIN_BYTES: usize = 64 << 10;
    /// Most capacity kept: a few queues' worth of 1 MiB reads.
    const MAX_BYTES: usize = 64 << 20;

    /// An empty buffer with room for `bytes`.
    pub fn take(&self, bytes: usize) -> Vec<u8> {
        if bytes >= Buffers::MIN_BYTES {
            let mut g = self.free.lock().unwrap();
            if let Some(i) = g.0.iter().rposition(|b| b.capacity() >= bytes) {
                let b = g.0.swap_remove(i);
                g.1 -= b.capacity();
                return b;
            }
        }
        Vec::with_capacity(bytes)
    }

    /// A buffer sent: kept for another reply if it is large and there is room.
    pub fn give(&self, mut b: Vec<u8>) {
        if b.capacity() < Buffers::MIN_BYTES {
            return;
        }
        b.clear();
        let mut g = self.free.lock().unwrap();
        if g.1 + b.capacity() <= Buffers::MAX_BYTES {
            g.1 += b.capacity();
            g.0.push(b);
        }
    }
}

/// One reply's bytes, and the credit it gives back when written.
pub struct Reply {
    pub bytes: Vec<u8>,
    /// Pages of the memory store sent from where they lie, each put in at its place in `bytes`
    /// (a large read's data; empty otherwise).
    pub lent: Lent,
    pub credit: u64,
}

impl Reply {
    /// A reply of `bytes` alone.
    pub fn new(bytes: Vec<u8>, credit: u64) -> Reply {
        Reply {
            bytes,
            lent: Vec::new(),
            credit,
        }
    }

    /// Its length on the wire.
    pub fn wire_len(&self) -> usize {
        let lent: usize = self.lent.iter().map(|(_, p)| p.bytes().len()).sum();
        self.bytes.len() + lent
    }

    /// Its bytes as they go out, in order, appended to `out` (no empty slice).
    pub fn slices<'a>(&'a self, out: &mut Vec<IoSlice<'a>>) {
        let mut at = 0;
        let mut push = |b: &'a [u8]| {
            if !b.is_empty() {
                out.push(IoSlice::new(b));
            }
        };
        for (place, page) in &self.lent {
            push(&self.bytes[at..*place]);
            push(page.bytes());
            at = *place;
        }
        push(&self.bytes[at..]);
    }
}

/// A connection's replies on their way out. The simulation thread puts each turn's replies
/// here ([`Outlet::put`]) and the connection's writer thread sends them ([`write_replies`]).
/// On a plain socket, when nothing is queued and the writer is not sending, the simulation
/// thread sends the turn's replies itself, without blocking: only what the socket does not
/// take at once is left to the writer. A reply that fits in the socket's buffer (every small
/// one) then leaves without waking another thread: the hand-off to the writer had been a
/// wake-up and a context switch for each turn's replies (docs/live-device.md, "Speed").
pub struct Outlet {
    state: Mutex<Outgoing>,
    /// The writer waits here for replies.
    ready: Condvar,
    credit: Arc<Credit>,
    buffers: Arc<Buffers>,
    /// A descriptor of the plain socket (not TLS, whose records the writer seals) that the
    /// simulation thread sends on.
    direct: Option<OwnedFd>,
}

/// What an [`Outlet`] holds.
#[derive(Default)]
struct Outgoing {
    /// Replies waiting for the writer, in order.
    queue: VecDeque<Reply>,
    /// Bytes of the first reply queued that were sent already (by the simulation thread).
    sent: usize,
    /// The writer took replies and is sending them: nothing else may go on the socket.
    busy: bool,
    /// The writer sleeps on `ready`.
    waiting: bool,
    /// No more replies come: the writer sends what is queued and ends.
    closed: bool,
    /// A send failed (the client stopped reading): replies are dropped.
    broken: bool,
}

impl Outlet {
    /// The outlet of a connection with this credit; `direct`: its plain socket's descriptor.
    pub fn new(credit: Arc<Credit>, buffers: Arc<Buffers>, direct: Option<OwnedFd>) -> Outlet {
        Outlet {
            state: Mutex::default(),
            ready: Condvar::new(),
            credit,
            buffers,
            direct,
        }
    }

    /// A turn's replies for this connection: sent now when the socket is free and takes
    /// them, queued for the writer otherwise.
    pub fn put(&self, mut replies: Vec<Reply>) {
        let mut g = self.state.lock().unwrap();
        if g.broken || g.closed {
            return;
        }
        if let (Some(fd), false, true) = (&self.direct, g.busy, g.queue.is_empty()) {
            // The small replies in front: a large one is the writer's, whose copy into the
            // socket overlaps the simulation of what comes next (sent here, 1 MiB reads over
            // TCP lost a fifth of their rate).
            let mut bytes = 0;
            let small = replies
                .iter()
                .take_while(|r| {
                    bytes += r.wire_len();
                    bytes <= DIRECT_BYTES
                })
                .count();
            // An error is left to the writer, which meets it again and ends the connection.
            let mut n = send_now(fd.as_raw_fd(), &replies[..small]).unwrap_or(0);
            let whole = replies
                .iter()
                .take_while(|r| {
                    let len = r.wire_len();
                    let sent = n >= len;
                    if sent {
                        n -= len;
                    }
                    sent
                })
                .count();
            self.done(replies.drain(..whole));
            g.sent = n;
        }
        if !replies.is_empty() {
            g.queue.extend(replies);
            if g.waiting {
                self.ready.notify_one();
            }
        }
    }

    /// No more replies come: the writer sends what is queued and ends.
    pub fn close(&self) {
        let mut g = self.state.lock().unwrap();
        g.closed = true;
        if g.waiting {
            self.ready.notify_one();
        }
    }

    /// Replies sent: their credit given back, their buffers kept for others.
    fn done(&self, sent: impl Iterator<Item = Reply>) {
        let mut credit = 0;
        for r in sent {
            credit += r.credit;
            self.buffers.give(r.bytes);
        }
        if credit > 0 {
            self.credit.give(credit);
        }
    }
}

/// Most bytes of replies the simulation thread sends itself in a turn (a queue's worth of
/// 4 KiB reads); the rest wait for the writer.
const DIRECT_BYTES: usize = 256 << 10;

/// Send what the socket `fd` takes of `replies` now, without waiting: the bytes sent.
fn send_now(fd: RawFd, replies: &[Reply]) -> io::Result<usize> {
    let mut slices: Vec<IoSlice> = Vec::new();
    for r in replies {
        r.slices(&mut slices);
    }
    let mut rest = &mut slices[..];
    let mut total = 0;
    while !rest.is_empty() {
        let n = rest.len().min(MAX_IOVECS);
        // SAFETY: an msghdr of `n` IoSlices, which are iovecs on Unix (ABI compatible, as
        // std documents), alive for the call; no address, no control data.
        let sent = unsafe {
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_iov = rest.as_mut_ptr() as *mut libc::iovec;
            msg.msg_iovlen = n as _;
            libc::sendmsg(fd, &msg, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL)
        };
        if sent < 0 {
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::Interrupted => continue,
                io::ErrorKind::WouldBlock => return Ok(total),
                _ if total > 0 => return Ok(total),
                _ => return Err(e),
            }
        }
        total += sent as usize;
        IoSlice::advance_slices(&mut rest, sent as usize);
    }
    Ok(total)
}

/// The simulation thread's hold on a connection's [`Outlet`]: when it lets go (the
/// connection closed, or the message that brought it was never taken), the writer sends what
/// is queued and ends.
pub struct Replies(pub Arc<Outlet>);

impl Replies {
    pub fn put(&self, replies: Vec<Reply>) {
        self.0.put(replies);
    }
}

impl Drop for Replies {
    fn drop(&mut self) {
        self.0.close();
    }
}

/// The writer half: send the replies queued, in order, until the simulation lets go of the
/// outlet or the client stops reading.
pub fn write_replies<S: Write>(s: &mut S, outlet: &Outlet) {
    // Replies ready together leave in one vectored write, from their own buffers and the
    // store's pages (a 1 MiB read is not copied again on its way out): one system call for a
    // queue's worth of replies. At most this much at once: credit comes back as it is sent.
    const BATCH_BYTES: usize = 1 << 20;
    const BATCH_REPLIES: usize = 512;
    let mut batch: Vec<Reply> = Vec::new();
    loop {
        let sent = {
            let mut g = outlet.state.lock().unwrap();
            while g.queue.is_empty() && !g.closed {
                g.waiting = true;
                g = outlet.ready.wait(g).unwrap();
                g.waiting = false;
            }
            let mut bytes = 0;
            while bytes < BATCH_BYTES && batch.len() < BATCH_REPLIES {
                let Some(r) = g.queue.pop_front() else {
                    break;
                };
                bytes += r.wire_len();
                batch.push(r);
            }
            if batch.is_empty() {
                break; // closed, and everything sent
            }
            g.busy = true;
            std::mem::take(&mut g.sent)
        };
        let ok = write_all_vectored(s, &batch, sent).is_ok();
        outlet.done(batch.drain(..));
        let mut g = outlet.state.lock().unwrap();
        g.busy = false;
        if !ok {
            g.broken = true;
            g.queue.clear();
            break;
        }
    }
    outlet.credit.close();
}

/// Write every reply of `batch`, in order, in as few system calls as the stream takes them;
/// the first `sent` bytes went already.
fn write_all_vectored<S: Write>(s: &mut S, batch: &[Reply], sent: usize) -> io::Result<()> {
    let mut slices: Vec<IoSlice> = Vec::new();
    for r in batch {
        r.slices(&mut slices);
    }
    let mut rest = &mut slices[..];
    IoSlice::advance_slices(&mut rest, sent);
    while !rest.is_empty() {
        let n = rest.len().min(MAX_IOVECS);
        match s.write_vectored(&rest[..n]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut rest, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    s.flush()
}

/// Most buffers in one vectored write (Linux's IOV_MAX).
const MAX_IOVECS: usize = 1024;

#[cfg(test)]
mod tests;
