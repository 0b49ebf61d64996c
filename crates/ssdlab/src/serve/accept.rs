//! The server's connections: the thread that accepts them (at most `max_connections`, each
//! handshake within its time limit), each connection's threads (its writer; a TLS connection's
//! reader too: a plain socket is read by the simulation thread, `inbound`), the address a
//! client connects with, and closing them all at the end.

use super::access::{Door, Refusal, HANDSHAKE_LIMIT_S};
use super::conn::{self, Export, Handshake, Negotiation, TlsPhase, ToSim};
use super::inbound::Inbox;
use super::net::{Listener, Stream};
use super::tls::{self, Tls, TlsMode};
use super::Outbox;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A connection as the accepting thread keeps it: a handle to close it by, and where its
/// handshake stands.
pub(super) struct Open {
    /// A clone of the socket (shutting it down ends both of the connection's threads).
    pub(super) stream: Stream,
    pub(super) started: Instant,
    pub(super) state: AtomicU8,
}

// `Open::state`.
pub(super) const NEGOTIATING: u8 = 0;
pub(super) const SERVING: u8 = 1;
pub(super) const TIMED_OUT: u8 = 2;
pub(super) const ENDED: u8 = 3;

/// What every connection shares.
pub(super) struct Shared {
    pub(super) export: Export,
    pub(super) tls: Option<Tls>,
    pub(super) door: Door,
    /// Large reply buffers, sent and ready for another reply.
    pub(super) buffers: Arc<conn::Buffers>,
}

/// Accept connections until `stop`, each with a thread that runs the handshake and then writes
/// replies (and, for TLS, reads requests, with another that writes). Connections beyond `max_connections` are closed at
/// once, and handshakes beyond the time limit are cut off.
pub(super) fn accept_loop(
    listener: Listener,
    shared: Arc<Shared>,
    max_connections: usize,
    to_sim: Inbox,
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
pub(super) fn negotiate(
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

pub(super) fn serve_connection(
    stream: Stream,
    conn: u32,
    shared: &Shared,
    open: &Open,
    to_sim: &Inbox,
) {
    let negotiated = negotiate(stream, &shared.export, shared.tls.as_ref());
    // The accepting thread may have cut the handshake off meanwhile.
    let in_time = open
        .state
        .compare_exchange(NEGOTIATING, SERVING, Ordering::AcqRel, Ordering::Acquire)
        .is_ok();
    let (stream, structured, block_status) = match negotiated {
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
    if stream.is_tls() {
        serve_tls(stream, conn, shared, structured, block_status, to_sim);
        return;
    }
    // A plain socket: the simulation thread reads it (`inbound`) and sends small replies on it
    // itself (`conn::Outlet`); this thread is its writer for the rest.
    let (Ok(reading), Ok(direct), Ok(mut writer)) =
        (stream.try_clone(), stream.try_clone(), stream.try_clone())
    else {
        return;
    };
    let (Some(reading), Some(direct)) = (reading.into_fd(), direct.into_fd()) else {
        return;
    };
    let credit = Arc::new(conn::Credit::with_bell(
        conn::MAX_IN_FLIGHT_BYTES,
        to_sim.bell().clone(),
    ));
    let outlet = Arc::new(conn::Outlet::new(
        credit.clone(),
        shared.buffers.clone(),
        Some(direct),
    ));
    let plain = conn::Plain {
        fd: reading,
        reader: conn::RequestReader::new(conn, &shared.export, block_status),
        credit,
    };
    if to_sim.send(ToSim::Open {
        conn,
        structured,
        lend: true,
        replies: conn::Replies(outlet.clone()),
        plain: Some(Box::new(plain)),
    }) {
        // Until the simulation thread lets go of the connection (its client left, or the
        // server stops) or the client stops reading.
        conn::write_replies(&mut writer, &outlet);
    }
    writer.shutdown();
}

/// A TLS connection: this thread reads its requests (through the TLS session) and hands them
/// to the simulation thread; a writer thread seals and sends every reply.
fn serve_tls(
    mut stream: Stream,
    conn: u32,
    shared: &Shared,
    structured: bool,
    block_status: bool,
    to_sim: &Inbox,
) {
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let credit = Arc::new(conn::Credit::default());
    let outlet = Arc::new(conn::Outlet::new(
        credit.clone(),
        shared.buffers.clone(),
        None,
    ));
    let writer_outlet = outlet.clone();
    let writer_thread = std::thread::spawn(move || {
        conn::write_replies(&mut writer, &writer_outlet);
        writer.shutdown();
    });
    if to_sim.send(ToSim::Open {
        conn,
        structured,
        lend: false,
        replies: conn::Replies(outlet),
        plain: None,
    }) {
        let export = &shared.export;
        let _ = conn::read_requests(&mut stream, conn, export, block_status, &credit, to_sim);
        to_sim.send(ToSim::Closed { conn });
    }
    credit.close();
    let _ = writer_thread.join();
}

/// The thread that accepts connections until `stop` (see [`accept_loop`]).
pub(super) fn spawn_acceptor(
    listener: Listener,
    shared: &Arc<Shared>,
    max_connections: usize,
    to_sim: Inbox,
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

/// Stop: no new connections; close the ones there are, and wait (a few seconds at most) for
/// their threads to end, so that the door's counts are final.
pub(super) fn close_connections(
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

/// The URI a libnbd client connects with: `nbds` when TLS is required, with the PSK file's
/// first user and the file itself when clients authenticate by key.
pub(super) fn client_address(listener: &Listener, tls: Option<&Tls>) -> String {
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
pub(super) fn uri_escape(text: &[u8], keep: &[u8]) -> String {
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
