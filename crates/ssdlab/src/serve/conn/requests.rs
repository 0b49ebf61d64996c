//! A connection's requests as its bytes arrive: [`RequestReader`] keeps what it has read of a
//! header or a write's payload between reads, so that it can be fed from a blocking stream (a
//! TLS connection's reader thread, [`read_requests`]) or from a socket read without waiting
//! (the simulation thread's own reading of plain sockets, `serve::inbound`). Both give the
//! same requests for the same bytes, however the bytes are cut.

use super::{Credit, Export, ToSim};
use crate::serve::proto::{
    check_request, parse_request, RequestHeader, CMD_DISC, CMD_READ, CMD_WRITE, MAX_REQUEST_BYTES,
    MAX_SKIP_BYTES,
};
use std::io::{self, Read};
use std::sync::mpsc::Sender;

/// Bytes read from the stream at once (a write's payload at least this large is read into its
/// own buffer instead, a MiB at most per read).
const BUFFER_BYTES: usize = 64 << 10;

/// A request header on the wire.
const HEADER_BYTES: usize = 28;

/// Where parsing stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parsed {
    /// Every whole request read is parsed: more bytes are needed.
    NeedBytes,
    /// The next request's header is read but the connection's credit does not have room for
    /// its `u64` bytes: the connection waits (unread) until replies give credit back.
    NeedCredit(u64),
    /// The connection ends here: DISC, a header out of step, a payload beyond what may be
    /// skipped, or the connection's credit closed (its writer ended). Nothing more is parsed.
    End,
}

/// A write whose payload is arriving (kept, or skipped when it is beyond the largest taken).
struct Payload {
    header: RequestHeader,
    check: Result<(), u32>,
    credit: u64,
    /// The payload's bytes so far (empty when skipped).
    data: Vec<u8>,
    /// Bytes of the payload read so far.
    have: u64,
    /// Bytes the header announced.
    want: u64,
    skip: bool,
}

/// One connection's request parser over the bytes read so far.
pub struct RequestReader {
    conn: u32,
    size: u64,
    read_only: bool,
    block_status: bool,
    /// Bytes read and not yet parsed: `buf[at..end]`.
    buf: Box<[u8]>,
    at: usize,
    end: usize,
    /// A write whose payload has not all arrived.
    payload: Option<Payload>,
    ended: bool,
}

impl RequestReader {
    /// The parser of connection `conn`'s requests to `export` (`block_status`: a metadata
    /// context was negotiated).
    pub fn new(conn: u32, export: &Export, block_status: bool) -> RequestReader {
        RequestReader {
            conn,
            size: export.size,
            read_only: export.read_only,
            block_status,
            buf: vec![0; BUFFER_BYTES].into_boxed_slice(),
            at: 0,
            end: 0,
            payload: None,
            ended: false,
        }
    }

    /// Whether a write's payload has begun to arrive and not all of it: the stream ending
    /// here breaks a request.
    pub fn in_payload(&self) -> bool {
        self.payload.is_some()
    }

    /// One read from `s` (a short one, as it comes): Ok(0) at the end of the stream. A read that
    /// would wait is the stream's error (`WouldBlock` on a socket read without waiting).
    pub fn read_from(&mut self, s: &mut impl Read) -> io::Result<usize> {
        if let Some(p) = &mut self.payload {
            let rest = p.want - p.have;
            if !p.skip && self.at == self.end && rest >= BUFFER_BYTES as u64 {
                // A large payload goes straight into its own buffer, grown as it arrives.
                let before = p.data.len();
                let r = s.take(rest.min(1 << 20)).read_to_end(&mut p.data);
                let n = p.data.len() - before;
                p.have += n as u64;
                return match r {
                    Err(e) if n == 0 => Err(e),
                    _ => Ok(n),
                };
            }
        }
        // What is left unparsed (less than a header) goes to the front.
        self.buf.copy_within(self.at..self.end, 0);
        self.end -= self.at;
        self.at = 0;
        let n = s.read(&mut self.buf[self.end..])?;
        self.end += n;
        Ok(n)
    }

    /// Parse what has been read into messages for the simulation thread (appended to `out`,
    /// in order), taking each request's credit, until more bytes or more credit are needed or
    /// the connection ends.
    pub fn parse(&mut self, credit: &Credit, out: &mut Vec<ToSim>) -> Parsed {
        loop {
            if self.ended {
                return Parsed::End;
            }
            if let Some(p) = &mut self.payload {
                let take = ((p.want - p.have) as usize).min(self.end - self.at);
                if !p.skip {
                    p.data.extend_from_slice(&self.buf[self.at..self.at + take]);
                }
                p.have += take as u64;
                self.at += take;
                if p.have < p.want {
                    return Parsed::NeedBytes;
                }
                let p = self.payload.take().expect("a payload");
                out.push(self.message(p.header, p.check, p.data, p.credit));
                continue;
            }
            let Some(bytes) = self.buf[..self.end].get(self.at..self.at + HEADER_BYTES) else {
                return Parsed::NeedBytes;
            };
            let Ok(header) = parse_request(bytes.try_into().expect("a header's bytes")) else {
                // Out of step: nothing that follows can be trusted.
                self.ended = true;
                continue;
            };
            if header.kind == CMD_DISC {
                self.ended = true;
                continue;
            }
            let check = check_request(&header, self.size, self.read_only, self.block_status);
            // Reads hold their reply's bytes, writes their payload's: taken before the payload
            // is read, so that a connection never holds more than its allowance.
            let cost = match header.kind {
                CMD_READ | CMD_WRITE => (header.length as u64).min(MAX_REQUEST_BYTES as u64) + 64,
                _ => 64,
            };
            if credit.is_closed() {
                self.ended = true;
                continue;
            }
            if !credit.try_take(cost) {
                // The header stays unparsed until there is room.
                return Parsed::NeedCredit(cost);
            }
            self.at += HEADER_BYTES;
            let want = if header.kind == CMD_WRITE {
                header.length as u64
            } else {
                0
            };
            if want > MAX_SKIP_BYTES {
                // Beyond what is skipped to stay in step: close.
                self.ended = true;
                continue;
            }
            if want == 0 {
                out.push(self.message(header, check, Vec::new(), cost));
                continue;
            }
            // Skipped beyond the largest payload taken, then refused; grown as the bytes arrive
            // beyond the first MiB otherwise (a client that claims 32 MiB and sends nothing
            // costs little).
            let skip = want > MAX_REQUEST_BYTES as u64;
            let data = match skip {
                true => Vec::new(),
                false => Vec::with_capacity(want.min(1 << 20) as usize),
            };
            self.payload = Some(Payload {
                header,
                check,
                credit: cost,
                data,
                have: 0,
                want,
                skip,
            });
        }
    }

    fn message(
        &self,
        header: RequestHeader,
        check: Result<(), u32>,
        data: Vec<u8>,
        credit: u64,
    ) -> ToSim {
        let conn = self.conn;
        match check {
            Ok(()) => ToSim::Request {
                conn,
                header,
                data,
                credit,
            },
            Err(error) => ToSim::Refused {
                conn,
                header,
                error,
                credit,
            },
        }
    }
}

/// Where a reader's messages go: the simulation thread's channel (`serve::inbound::Inbox`
/// rings its bell too). False if the simulation thread has gone.
pub trait Deliver {
    fn deliver(&self, m: ToSim) -> bool;
}

impl Deliver for Sender<ToSim> {
    fn deliver(&self, m: ToSim) -> bool {
        self.send(m).is_ok()
    }
}

/// The reader half of a connection whose stream blocks (TLS): requests until DISC, end of
/// stream or a broken stream.
///
/// The requests a client sent together go to the simulation thread together, as one
/// [`ToSim::Batch`]: what was read is sent before any read that may wait for the client (the
/// next header or a write's payload not all read) and before waiting for credit (which only
/// replies to what was sent can give back). One message, and at most one wake-up of the
/// simulation thread, for a client's burst: a message each had been a channel operation per
/// request and turns of a request or two while the reader was still reading the burst.
pub fn read_requests<S: Read>(
    s: &mut S,
    conn: u32,
    export: &Export,
    block_status: bool,
    credit: &Credit,
    to_sim: &impl Deliver,
) -> io::Result<()> {
    let mut reader = RequestReader::new(conn, export, block_status);
    // The messages read and not sent yet.
    let mut batch = Vec::new();
    // Send the batch now: false if the simulation thread has gone.
    let send = |batch: &mut Vec<ToSim>| {
        batch.is_empty() || to_sim.deliver(ToSim::Batch(std::mem::take(batch)))
    };
    let read = loop {
        match reader.parse(credit, &mut batch) {
            Parsed::End => break Ok(()),
            Parsed::NeedCredit(cost) => {
                if !send(&mut batch) {
                    return Ok(());
                }
                credit.wait(cost);
            }
            Parsed::NeedBytes => {
                if !send(&mut batch) {
                    return Ok(());
                }
                match reader.read_from(s) {
                    // The end of the stream between requests; within one, a broken stream.
                    Ok(0) if reader.in_payload() => break Err(io::ErrorKind::UnexpectedEof.into()),
                    Ok(0) => break Ok(()),
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => break Err(e),
                }
            }
        }
    };
    // What was read before the end (DISC, a broken stream) is still served: a soft disconnect.
    send(&mut batch);
    read
}
