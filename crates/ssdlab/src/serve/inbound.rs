//! The simulation thread's own reading of plain (not TLS) sockets.
//!
//! A connection's reader thread had handed each burst of requests to the simulation thread
//! over a channel: per turn a `futex` pair and two context switches, the largest cost in the
//! server's profile at 4 KiB reads (`finish_task_switch` 20–30 % of its samples;
//! docs/live-device.md, "Speed"). Now, once a plain connection's handshake is done, its socket
//! goes to the simulation thread ([`Plain`], in `ToSim::Open`), which waits in `epoll` for its
//! sockets, for messages from the other threads (a TLS connection's reader, which stays, and
//! every connection's opening) and for credit given back, and reads a ready socket itself
//! without waiting: each turn reads at most [`MAX_READS`] times from each of at most
//! [`MAX_EVENTS`] ready sockets (the rest stay ready for the next turn: `epoll` is level-
//! triggered here). The requests are parsed by the same [`RequestReader`] as a TLS reader's,
//! which keeps a partial header or payload between reads.
//!
//! `epoll` through the libc crate the server already uses (its `sendmsg`, `setsockopt`,
//! `prctl`), rather than `mio` or `polling`: one set of sockets, read-readiness only, and a
//! timeout in nanoseconds (`epoll_pwait2`), where those crates' waits round to milliseconds or
//! need a timer descriptor; the realtime clock wakes 50 µs before a reply is due.

use super::conn::{Bell, Parsed, Plain, ToSim};
use std::collections::HashMap;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Duration;

/// Most ready descriptors taken from one wait (more stay ready for the next).
const MAX_EVENTS: usize = 64;
/// Most reads from one socket in one turn.
const MAX_READS: usize = 16;
/// The bell's token in the `epoll` set (a connection's is its number).
const BELL: u64 = u64::MAX;

/// A sender of messages to the simulation thread that rings its bell.
#[derive(Clone)]
pub struct Inbox {
    tx: Sender<ToSim>,
    bell: Arc<Bell>,
}

impl Inbox {
    pub fn new(tx: Sender<ToSim>, bell: Arc<Bell>) -> Inbox {
        Inbox { tx, bell }
    }

    pub fn bell(&self) -> &Arc<Bell> {
        &self.bell
    }

    /// False if the simulation thread has gone.
    pub fn send(&self, m: ToSim) -> bool {
        let sent = self.tx.send(m).is_ok();
        if sent {
            self.bell.ring();
        }
        sent
    }
}

impl super::conn::Deliver for Inbox {
    fn deliver(&self, m: ToSim) -> bool {
        self.send(m)
    }
}

/// A socket read without waiting (`MSG_DONTWAIT`: the descriptor's own mode is shared with the
/// connection's writer, which blocks).
struct DontWait<'a>(&'a OwnedFd);

impl Read for DontWait<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: recv into a live buffer of its length, on a socket we hold.
        let n = unsafe {
            libc::recv(
                self.0.as_raw_fd(),
                buf.as_mut_ptr() as *mut libc::c_void,
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }
}

struct Polled {
    plain: Plain,
    /// Out of credit: the bytes its next request needs (its socket is out of the `epoll` set).
    parked: Option<u64>,
}

/// The plain connections the simulation thread reads, and what it waits on.
pub struct Inbound {
    epoll: OwnedFd,
    bell: Arc<Bell>,
    conns: HashMap<u32, Polled>,
    parked: usize,
    /// Connections to read this turn.
    ready: Vec<u32>,
    events: Vec<libc::epoll_event>,
    /// What a turn read ([`Inbound::read_turn`]), kept for the next turn's.
    turn: Vec<ToSim>,
    /// `epoll_pwait2` is there (Linux 5.11); otherwise waits round down to milliseconds.
    fine_timeout: bool,
}

impl Inbound {
    pub fn new() -> io::Result<Inbound> {
        // SAFETY: epoll_create1 with a constant flag; the descriptor is owned at once.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a new descriptor nothing else owns.
        let epoll = unsafe { OwnedFd::from_raw_fd(fd) };
        let inbound = Inbound {
            epoll,
            bell: Arc::new(Bell::new()?),
            conns: HashMap::new(),
            parked: 0,
            ready: Vec::new(),
            events: vec![libc::epoll_event { events: 0, u64: 0 }; MAX_EVENTS],
            turn: Vec::new(),
            fine_timeout: true,
        };
        inbound.control(libc::EPOLL_CTL_ADD, inbound.bell.as_raw_fd(), BELL, true)?;
        Ok(inbound)
    }

    /// The bell that wakes this thread.
    pub fn bell(&self) -> Arc<Bell> {
        self.bell.clone()
    }

    fn control(&self, op: libc::c_int, fd: i32, token: u64, read: bool) -> io::Result<()> {
        let mut event = libc::epoll_event {
            events: if read { libc::EPOLLIN as u32 } else { 0 },
            u64: token,
        };
        // SAFETY: epoll_ctl on our epoll descriptor with a live event.
        if unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), op, fd, &mut event) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Read connection `conn` from now on (first in this turn: its client may have sent
    /// requests already). False if its socket cannot be waited on (it is dropped: its
    /// connection ends as a closed socket does).
    pub fn add(&mut self, conn: u32, plain: Plain) -> bool {
        if self
            .control(libc::EPOLL_CTL_ADD, plain.fd.as_raw_fd(), conn as u64, true)
            .is_err()
        {
            return false;
        }
        self.conns.insert(
            conn,
            Polled {
                plain,
                parked: None,
            },
        );
        self.ready.push(conn);
        true
    }

    fn remove(&mut self, conn: u32) {
        if let Some(c) = self.conns.remove(&conn) {
            if c.parked.is_some() {
                self.parked -= 1;
            }
            // Out of the set before its descriptor closes (a parked one is out already).
            if c.parked.is_none() {
                let _ = self.control(libc::EPOLL_CTL_DEL, c.plain.fd.as_raw_fd(), 0, false);
            }
        }
    }

    /// Connections out of credit whose credit came back go back to the wait, and are read
    /// this turn. True if there is a connection to read now.
    pub fn ready_now(&mut self) -> bool {
        if self.parked > 0 {
            let mut back = Vec::new();
            for (&conn, c) in &mut self.conns {
                if let Some(cost) = c.parked {
                    if c.plain.credit.unpark(cost) {
                        c.parked = None;
                        back.push(conn);
                    }
                }
            }
            for conn in back {
                self.parked -= 1;
                let fd = self.conns[&conn].plain.fd.as_raw_fd();
                // Read this turn whether or not it can go back in the wait.
                let _ = self.control(libc::EPOLL_CTL_ADD, fd, conn as u64, true);
                self.ready.push(conn);
            }
        }
        !self.ready.is_empty()
    }

    /// Wait up to `timeout` for a socket to read or the bell; the sockets ready are read in the
    /// next [`Inbound::read`]. False if nothing came.
    pub fn wait(&mut self, timeout: Duration) -> bool {
        let n = self.epoll_wait(timeout);
        for e in &self.events[..n] {
            let token = e.u64;
            if token == BELL {
                self.bell.hush();
            } else if let Ok(conn) = u32::try_from(token) {
                self.ready.push(conn);
            }
        }
        n > 0
    }

    fn epoll_wait(&mut self, timeout: Duration) -> usize {
        let (fd, events) = (self.epoll.as_raw_fd(), self.events.as_mut_ptr());
        if self.fine_timeout {
            let t = libc::timespec {
                tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t,
                tv_nsec: timeout.subsec_nanos() as libc::c_long,
            };
            // SAFETY: epoll_pwait2(fd, events, maxevents, timeout, sigmask NULL, sigsetsize
            // 0) with our epoll descriptor, a buffer of MAX_EVENTS events and a live timespec.
            let n = unsafe {
                libc::syscall(
                    libc::SYS_epoll_pwait2,
                    fd,
                    events,
                    MAX_EVENTS as libc::c_int,
                    &t as *const libc::timespec,
                    std::ptr::null::<libc::sigset_t>(),
                    0usize,
                )
            };
            if n >= 0 {
                return n as usize;
            }
            if io::Error::last_os_error().raw_os_error() != Some(libc::ENOSYS) {
                return 0; // interrupted: the caller's loop comes back
            }
            self.fine_timeout = false;
        }
        let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
        // SAFETY: epoll_wait with our epoll descriptor and a buffer of MAX_EVENTS events.
        let n = unsafe { libc::epoll_wait(fd, events, MAX_EVENTS as libc::c_int, ms) };
        n.max(0) as usize
    }

    /// Read the connections ready: their requests and refusals, in order, and `Closed` for each
    /// that ended (DISC, end of stream, a broken one, a header out of step, its writer gone).
    pub fn read(&mut self, out: &mut Vec<ToSim>) {
        self.ready_now();
        for conn in std::mem::take(&mut self.ready) {
            let Some(c) = self.conns.get_mut(&conn) else {
                continue;
            };
            if c.parked.is_some() {
                continue;
            }
            match pump(&mut c.plain, out) {
                Pumped::Open => {}
                Pumped::Parked(cost) => {
                    c.parked = Some(cost);
                    self.parked += 1;
                    // Out of the wait until credit comes back (its bytes stay readable; a hang-up
                    // would be reported to a socket in the set whatever it waits for).
                    let fd = c.plain.fd.as_raw_fd();
                    let _ = self.control(libc::EPOLL_CTL_DEL, fd, 0, false);
                }
                Pumped::Ended => {
                    self.remove(conn);
                    out.push(ToSim::Closed { conn });
                }
            }
        }
    }

    /// Stop reading every connection (a power cut: they are closed).
    /// [`Inbound::read`] into a buffer kept from turn to turn (no allocation a turn).
    pub fn read_turn(&mut self) -> std::vec::Drain<'_, ToSim> {
        let mut turn = std::mem::take(&mut self.turn);
        self.read(&mut turn);
        self.turn = turn;
        self.turn.drain(..)
    }

    pub fn clear(&mut self) {
        let conns: Vec<u32> = self.conns.keys().copied().collect();
        for conn in conns {
            self.remove(conn);
        }
        self.ready.clear();
    }
}

enum Pumped {
    /// Read what had come (or its reads for the turn): the socket stays in the wait.
    Open,
    /// Out of credit for a request of these bytes.
    Parked(u64),
    Ended,
}

/// Read and parse one connection's socket for a turn, without waiting.
fn pump(p: &mut Plain, out: &mut Vec<ToSim>) -> Pumped {
    let mut reads = 0;
    loop {
        match p.reader.parse(&p.credit, out) {
            Parsed::End => return Pumped::Ended,
            Parsed::NeedCredit(cost) => {
                if p.credit.park(cost) {
                    return Pumped::Parked(cost);
                }
                // It fits after all (credit came back meanwhile): parse on.
            }
            Parsed::NeedBytes => {
                if reads == MAX_READS {
                    return Pumped::Open;
                }
                reads += 1;
                match p.reader.read_from(&mut DontWait(&p.fd)) {
                    Ok(0) => return Pumped::Ended,
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Pumped::Open,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => return Pumped::Ended,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::conn::{Credit, Export, RequestReader};
    use crate::serve::proto::{CMD_READ, REQUEST_MAGIC};
    use std::io::Write;
    use std::os::unix::net::UnixStream;

    fn read_request(handle: u64) -> Vec<u8> {
        let mut b = REQUEST_MAGIC.to_be_bytes().to_vec();
        b.extend_from_slice(&0u16.to_be_bytes());
        b.extend_from_slice(&CMD_READ.to_be_bytes());
        b.extend_from_slice(&handle.to_be_bytes());
        b.extend_from_slice(&(handle * 4096).to_be_bytes());
        b.extend_from_slice(&4096u32.to_be_bytes());
        b
    }

    fn handles(out: &[ToSim]) -> Vec<Option<u64>> {
        out.iter()
            .map(|m| match m {
                ToSim::Request { header, .. } => Some(header.handle),
                ToSim::Closed { conn } => {
                    assert_eq!(*conn, 7);
                    None
                }
                _ => panic!("requests and the end"),
            })
            .collect()
    }

    /// A connection out of credit leaves its socket unread, and the credit a writer gives back
    /// rings the bell that wakes the wait; its client's end of stream ends it once its requests
    /// are read.
    #[test]
    fn a_connection_out_of_credit_waits_unread_until_the_bell_rings() {
        let export = Export {
            name: String::new(),
            description: String::new(),
            size: 1 << 30,
            read_only: false,
            block_min: 512,
            block_preferred: 4096,
            block_max: 1 << 25,
        };
        let (server, mut client) = UnixStream::pair().unwrap();
        let mut inbound = Inbound::new().unwrap();
        // Room for one 4 KiB read at a time.
        let credit = Arc::new(Credit::with_bell(4096 + 64, inbound.bell()));
        let plain = Plain {
            fd: OwnedFd::from(server),
            reader: RequestReader::new(7, &export, false),
            credit: credit.clone(),
        };
        assert!(inbound.add(7, plain));
        for h in 0..3 {
            client.write_all(&read_request(h)).unwrap();
        }
        client.shutdown(std::net::Shutdown::Write).unwrap();
        let mut out = Vec::new();
        inbound.read(&mut out);
        assert_eq!(handles(&out), vec![Some(0)], "one fits");
        // Out of the wait: its unread bytes do not wake it.
        assert!(!inbound.wait(Duration::ZERO));
        assert!(!inbound.ready_now());
        for expect in [vec![Some(1)], vec![Some(2), None]] {
            let giver = credit.clone();
            std::thread::spawn(move || giver.give(4096 + 64))
                .join()
                .unwrap();
            // The bell, not the timeout, ends the wait (a missed ring fails here, after a minute).
            assert!(inbound.wait(Duration::from_secs(60)), "the bell rang");
            assert!(inbound.ready_now());
            out.clear();
            inbound.read(&mut out);
            assert_eq!(handles(&out), expect);
        }
        assert!(inbound.conns.is_empty(), "ended");
    }
}
