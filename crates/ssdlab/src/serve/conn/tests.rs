use super::*;
use std::collections::VecDeque;
use std::io::Cursor;

/// A scripted client: what it sends, and what the server wrote back.
struct Duplex {
    input: Cursor<Vec<u8>>,
    output: Vec<u8>,
}

impl Read for Duplex {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.input.read(buf)
    }
}

impl Write for Duplex {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.output.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn export() -> Export {
    Export {
        name: "ssd".into(),
        description: "test".into(),
        size: 1 << 30,
        read_only: false,
        block_min: 512,
        block_preferred: 4096,
        block_max: 1 << 25,
    }
}

fn option(code: u32, data: &[u8]) -> Vec<u8> {
    let mut v = OPTS_MAGIC.to_be_bytes().to_vec();
    v.extend_from_slice(&code.to_be_bytes());
    v.extend_from_slice(&(data.len() as u32).to_be_bytes());
    v.extend_from_slice(data);
    v
}

fn go(name: &[u8]) -> Vec<u8> {
    let mut d = (name.len() as u32).to_be_bytes().to_vec();
    d.extend_from_slice(name);
    d.extend_from_slice(&0u16.to_be_bytes());
    option(OPT_GO, &d)
}

fn run(script: Vec<u8>) -> (io::Result<Handshake>, Vec<u8>) {
    let mut d = Duplex {
        input: Cursor::new(script),
        output: Vec::new(),
    };
    let r = handshake(&mut d, &export());
    (r, d.output)
}

/// The option replies in `out` after the 18-byte greeting: (option, type, payload length).
fn replies(out: &[u8]) -> Vec<(u32, u32, u32)> {
    let mut v = Vec::new();
    let mut at = 18;
    while at + 20 <= out.len() {
        assert_eq!(&out[at..at + 8], &OPTION_REPLY_MAGIC.to_be_bytes());
        let opt = u32::from_be_bytes(out[at + 8..at + 12].try_into().unwrap());
        let kind = u32::from_be_bytes(out[at + 12..at + 16].try_into().unwrap());
        let len = u32::from_be_bytes(out[at + 16..at + 20].try_into().unwrap());
        v.push((opt, kind, len));
        at += 20 + len as usize;
    }
    v
}

fn flags(f: u32) -> Vec<u8> {
    f.to_be_bytes().to_vec()
}

fn meta(name: &[u8], queries: &[&[u8]]) -> Vec<u8> {
    let mut d = (name.len() as u32).to_be_bytes().to_vec();
    d.extend_from_slice(name);
    d.extend_from_slice(&(queries.len() as u32).to_be_bytes());
    for q in queries {
        d.extend_from_slice(&(q.len() as u32).to_be_bytes());
        d.extend_from_slice(q);
    }
    d
}

#[test]
fn base_allocation_is_listed_and_chosen_only_by_its_name() {
    let mut s = flags(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES);
    // Before structured replies: refused.
    s.extend(option(
        OPT_SET_META_CONTEXT,
        &meta(b"ssd", &[b"base:allocation"]),
    ));
    s.extend(option(OPT_STRUCTURED_REPLY, &[]));
    s.extend(option(OPT_LIST_META_CONTEXT, &meta(b"ssd", &[])));
    s.extend(option(OPT_LIST_META_CONTEXT, &meta(b"ssd", &[b"qemu:"])));
    s.extend(option(
        OPT_SET_META_CONTEXT,
        &meta(b"nope", &[b"base:allocation"]),
    ));
    s.extend(option(
        OPT_SET_META_CONTEXT,
        &meta(b"ssd", &[b"base:allocation"]),
    ));
    s.extend(go(b"ssd"));
    let (r, out) = run(s);
    assert_eq!(
        r.unwrap(),
        Handshake::Transmission {
            structured: true,
            block_status: true
        }
    );
    let kinds: Vec<_> = replies(&out).iter().map(|r| (r.0, r.1)).collect();
    assert_eq!(
        kinds[..7],
        [
            (OPT_SET_META_CONTEXT, REP_ERR_INVALID),
            (OPT_STRUCTURED_REPLY, REP_ACK),
            (OPT_LIST_META_CONTEXT, REP_META_CONTEXT),
            (OPT_LIST_META_CONTEXT, REP_ACK),
            (OPT_LIST_META_CONTEXT, REP_ACK),
            (OPT_SET_META_CONTEXT, REP_ERR_UNKNOWN),
            (OPT_SET_META_CONTEXT, REP_META_CONTEXT),
        ]
    );
}

#[test]
fn go_with_structured_replies_enters_transmission() {
    let mut s = flags(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES);
    s.extend(option(OPT_STRUCTURED_REPLY, &[]));
    s.extend(option(OPT_LIST, &[]));
    s.extend(option(OPT_STARTTLS, &[]));
    s.extend(option(4242, b"x"));
    s.extend(go(b"ssd"));
    let (r, out) = run(s);
    assert_eq!(
        r.unwrap(),
        Handshake::Transmission {
            structured: true,
            block_status: false
        }
    );
    assert_eq!(&out[0..8], &NBD_MAGIC.to_be_bytes());
    let kinds: Vec<_> = replies(&out).iter().map(|r| (r.0, r.1)).collect();
    assert_eq!(
        kinds,
        vec![
            (OPT_STRUCTURED_REPLY, REP_ACK),
            (OPT_LIST, REP_SERVER),
            (OPT_LIST, REP_ACK),
            (OPT_STARTTLS, REP_ERR_UNSUP),
            (4242, REP_ERR_UNSUP),
            (OPT_GO, REP_INFO),
            (OPT_GO, REP_INFO),
            (OPT_GO, REP_ACK),
        ]
    );
}

#[test]
fn export_name_answers_size_and_flags_with_or_without_zeroes() {
    let mut s = flags(FLAG_C_FIXED_NEWSTYLE);
    s.extend(option(OPT_EXPORT_NAME, b"ssd"));
    let (r, out) = run(s);
    assert_eq!(
        r.unwrap(),
        Handshake::Transmission {
            structured: false,
            block_status: false
        }
    );
    assert_eq!(out.len(), 18 + 8 + 2 + 124);
    assert_eq!(&out[18..26], &(1u64 << 30).to_be_bytes());
    let mut s = flags(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES);
    s.extend(option(OPT_EXPORT_NAME, b"ssd"));
    assert_eq!(run(s).1.len(), 18 + 10);
    // An unknown name cannot be answered with an error: the connection closes. The default
    // name "" is not this export's, which has a name of its own.
    for name in [&b"other"[..], b""] {
        let mut s = flags(FLAG_C_FIXED_NEWSTYLE);
        s.extend(option(OPT_EXPORT_NAME, name));
        assert_eq!(
            run(s).0.unwrap(),
            Handshake::Refused(Refusal::UnknownExport)
        );
    }
}

#[test]
fn hostile_handshakes_are_refused_without_allocating_what_they_claim() {
    // Unknown client flags, a wrong option magic, a 4 GiB option, a 5,000-byte name.
    let protocol = Handshake::Refused(Refusal::ProtocolError);
    assert_eq!(run(flags(1 << 7)).0.unwrap(), protocol);
    let mut s = flags(FLAG_C_FIXED_NEWSTYLE);
    s.extend_from_slice(&[0u8; 16]);
    assert_eq!(run(s).0.unwrap(), protocol);
    let mut s = flags(FLAG_C_FIXED_NEWSTYLE);
    s.extend_from_slice(&OPTS_MAGIC.to_be_bytes());
    s.extend_from_slice(&OPT_GO.to_be_bytes());
    s.extend_from_slice(&u32::MAX.to_be_bytes());
    assert_eq!(run(s).0.unwrap(), protocol);
    // Unknown names, then an abort: the client was turned away by the name.
    let mut s = flags(FLAG_C_FIXED_NEWSTYLE);
    s.extend(go(&[b'a'; 5000]));
    s.extend(go(b"nope"));
    s.extend(option(OPT_ABORT, &[]));
    let (r, out) = run(s);
    assert_eq!(r.unwrap(), Handshake::Refused(Refusal::UnknownExport));
    let kinds: Vec<_> = replies(&out).iter().map(|r| r.1).collect();
    assert_eq!(kinds, vec![REP_ERR_UNKNOWN, REP_ERR_UNKNOWN, REP_ACK]);
    // A truncated handshake is an I/O error, not a panic.
    let mut s = flags(FLAG_C_FIXED_NEWSTYLE);
    s.extend_from_slice(&OPTS_MAGIC.to_be_bytes()[..5]);
    assert!(run(s).0.is_err());
    // Ten thousand options: answered up to the limit, then closed.
    let mut s = flags(FLAG_C_FIXED_NEWSTYLE);
    for _ in 0..10_000 {
        s.extend(option(OPT_LIST, &[]));
    }
    let (r, out) = run(s);
    assert_eq!(r.unwrap(), protocol);
    assert_eq!(replies(&out).len(), 2 * MAX_OPTIONS as usize);
    // An abort with nothing refused before is the client's own choice.
    let mut s = flags(FLAG_C_FIXED_NEWSTYLE);
    s.extend(option(OPT_ABORT, &[]));
    assert_eq!(run(s).0.unwrap(), Handshake::Closed);
}

#[test]
fn an_oversized_option_is_skipped_and_refused() {
    let mut s = flags(FLAG_C_FIXED_NEWSTYLE);
    s.extend(option(OPT_INFO, &vec![0u8; MAX_OPTION_BYTES as usize + 1]));
    s.extend(go(b"ssd"));
    let (r, out) = run(s);
    assert_eq!(
        r.unwrap(),
        Handshake::Transmission {
            structured: false,
            block_status: false
        }
    );
    assert_eq!(replies(&out)[0].1, REP_ERR_TOO_BIG);
}

/// A script run against a negotiation in `phase`: how it ended and the option replies.
fn run_in(phase: TlsPhase, script: Vec<u8>) -> (io::Result<Handshake>, Vec<(u32, u32, u32)>) {
    let mut d = Duplex {
        input: Cursor::new(script),
        output: Vec::new(),
    };
    let r = Negotiation::greet(&mut d, phase).and_then(|mut n| n.options(&mut d, &export()));
    (r, replies(&d.output))
}

#[test]
fn required_tls_refuses_every_option_but_starttls_and_abort() {
    let mut s = flags(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES);
    s.extend(option(OPT_LIST, &[]));
    s.extend(option(OPT_STRUCTURED_REPLY, &[]));
    s.extend(go(b"ssd"));
    s.extend(option(OPT_STARTTLS, b"x"));
    s.extend(option(OPT_STARTTLS, &[]));
    let (r, kinds) = run_in(TlsPhase::Required, s);
    assert_eq!(r.unwrap(), Handshake::StartTls);
    assert_eq!(
        kinds.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(),
        [
            (OPT_LIST, REP_ERR_TLS_REQD),
            (OPT_STRUCTURED_REPLY, REP_ERR_TLS_REQD),
            (OPT_GO, REP_ERR_TLS_REQD),
            (OPT_STARTTLS, REP_ERR_INVALID),
            (OPT_STARTTLS, REP_ACK),
        ]
    );
    // EXPORT_NAME cannot be refused with an error: the session ends.
    let mut s = flags(FLAG_C_FIXED_NEWSTYLE);
    s.extend(option(OPT_EXPORT_NAME, b"ssd"));
    let (r, kinds) = run_in(TlsPhase::Required, s);
    assert_eq!(r.unwrap(), Handshake::Refused(Refusal::TlsRequired));
    assert!(kinds.is_empty());
    // A client refused, then aborting, was turned away by the requirement; a client
    // without fixed newstyle cannot start TLS at all.
    let mut s = flags(FLAG_C_FIXED_NEWSTYLE);
    s.extend(go(b"ssd"));
    s.extend(option(OPT_ABORT, &[]));
    let (r, _) = run_in(TlsPhase::Required, s);
    assert_eq!(r.unwrap(), Handshake::Refused(Refusal::TlsRequired));
    let (r, _) = run_in(TlsPhase::Required, flags(0));
    assert_eq!(r.unwrap(), Handshake::Refused(Refusal::TlsRequired));
    // A refused option's payload is skipped: the next option is read in step.
    let mut s = flags(FLAG_C_FIXED_NEWSTYLE);
    s.extend(option(OPT_INFO, &[7u8; 5000]));
    s.extend(option(OPT_STARTTLS, &[]));
    let (r, _) = run_in(TlsPhase::Required, s);
    assert_eq!(r.unwrap(), Handshake::StartTls);
}

#[test]
fn starttls_is_offered_once_and_only_with_tls() {
    // Offered: plaintext options work, STARTTLS upgrades.
    let mut s = flags(FLAG_C_FIXED_NEWSTYLE);
    s.extend(option(OPT_LIST, &[]));
    s.extend(option(OPT_STARTTLS, &[]));
    let (r, _) = run_in(TlsPhase::Offered, s);
    assert_eq!(r.unwrap(), Handshake::StartTls);
    // Off: unsupported; established: invalid (STARTTLS twice), and the session goes on.
    for (phase, kind) in [
        (TlsPhase::Off, REP_ERR_UNSUP),
        (TlsPhase::Established, REP_ERR_INVALID),
    ] {
        let mut s = flags(FLAG_C_FIXED_NEWSTYLE);
        s.extend(option(OPT_STARTTLS, &[]));
        s.extend(go(b"ssd"));
        let (r, kinds) = run_in(phase, s);
        assert!(matches!(r.unwrap(), Handshake::Transmission { .. }));
        assert_eq!((kinds[0].0, kinds[0].1), (OPT_STARTTLS, kind));
    }
    // Without fixed newstyle a client cannot have TLS.
    let mut s = flags(0);
    s.extend(option(OPT_STARTTLS, &[]));
    s.extend(go(b"ssd"));
    let (r, kinds) = run_in(TlsPhase::Offered, s);
    assert!(matches!(r.unwrap(), Handshake::Transmission { .. }));
    assert_eq!(kinds[0].1, REP_ERR_UNSUP);
}

#[test]
fn what_was_negotiated_before_tls_is_forgotten_after_it() {
    let mut d = Duplex {
        input: Cursor::new({
            let mut s = flags(FLAG_C_FIXED_NEWSTYLE);
            s.extend(option(OPT_STRUCTURED_REPLY, &[]));
            s.extend(option(OPT_STARTTLS, &[]));
            s.extend(go(b"ssd"));
            s
        }),
        output: Vec::new(),
    };
    let mut n = Negotiation::greet(&mut d, TlsPhase::Offered).unwrap();
    assert_eq!(n.options(&mut d, &export()).unwrap(), Handshake::StartTls);
    n.tls_established();
    assert_eq!(
        n.options(&mut d, &export()).unwrap(),
        Handshake::Transmission {
            structured: false,
            block_status: false
        }
    );
}

#[test]
fn send_df_is_advertised_only_with_structured_replies() {
    // The protocol: NBD_FLAG_SEND_DF MUST NOT be set unless structured replies were
    // negotiated; it was set for every client (issue 45, defect 8).
    let mut s = flags(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES);
    s.extend(option(OPT_EXPORT_NAME, b"ssd"));
    let out = run(s).1;
    let f = u16::from_be_bytes(out[26..28].try_into().unwrap());
    assert_eq!(f & TFLAG_SEND_DF, 0, "{f:#x}");
    for structured in [false, true] {
        let mut s = flags(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES);
        if structured {
            s.extend(option(OPT_STRUCTURED_REPLY, &[]));
        }
        s.extend(go(b"ssd"));
        let out = run(s).1;
        // The INFO_EXPORT reply: its 20-byte header, the info type (2), size (8), flags.
        let at = 18 + if structured { 20 } else { 0 } + 20 + 2 + 8;
        let f = u16::from_be_bytes(out[at..at + 2].try_into().unwrap());
        assert_eq!(f & TFLAG_SEND_DF != 0, structured, "{f:#x}");
        assert_ne!(f & TFLAG_HAS_FLAGS, 0);
    }
}

/// A stream that takes at most `limit` bytes and `IOV_MAX` buffers per write.
struct Trickle {
    out: Vec<u8>,
    limit: usize,
    calls: usize,
}

impl Write for Trickle {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_vectored(&[IoSlice::new(buf)])
    }
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        assert!(
            bufs.len() <= MAX_IOVECS,
            "{} buffers in one write",
            bufs.len()
        );
        self.calls += 1;
        let mut n = 0;
        for b in bufs {
            let take = b.len().min(self.limit - n);
            self.out.extend_from_slice(&b[..take]);
            n += take;
            if n == self.limit {
                break;
            }
        }
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Replies whose data is lent by the memory store go out whole and in order, however the
/// stream cuts the writes and however many buffers they take (more than IOV_MAX here: five
/// 1 MiB reads of 4 KiB pages each, between replies of bytes alone).
#[test]
fn lent_pages_leave_in_order_across_short_writes_and_many_buffers() {
    use super::super::data::{Data, Pages};
    let mut store = Data::Memory(Pages::default());
    let data: Vec<u8> = (0..6u64 << 20).map(|i| (i * 7 % 253) as u8).collect();
    store.write(0, &data).unwrap();
    let mut batch = Vec::new();
    let mut want = Vec::new();
    for k in 0..5u64 {
        let (offset, len) = (k * (1 << 20) + 100 * k, 1 << 20);
        let mut head = vec![k as u8; 16];
        let mut lent = Lent::new();
        store
            .read_into(offset, len, &mut head, Some(&mut lent))
            .unwrap();
        assert!(lent.len() >= 256);
        want.extend_from_slice(&[k as u8; 16]);
        want.extend_from_slice(&data[offset as usize..(offset + len) as usize]);
        batch.push(Reply {
            bytes: head,
            lent,
            credit: 0,
        });
        batch.push(Reply::new(vec![0xEE; 3], 0));
        want.extend_from_slice(&[0xEE; 3]);
    }
    assert_eq!(batch.iter().map(Reply::wire_len).sum::<usize>(), want.len());
    let mut s = Trickle {
        out: Vec::new(),
        limit: 300_001,
        calls: 0,
    };
    write_all_vectored(&mut s, &batch, 0).unwrap();
    assert_eq!(s.out, want);
    assert!(
        s.calls > want.len() / 300_001,
        "short writes taken up again"
    );
}

/// Replies put in an outlet reach the client whole and in the order they were put, whether the
/// simulation thread sent them itself, the socket took only part of them (replies larger than
/// its buffer, and more of them than the client has read), or the writer sent the rest; their
/// credit all comes back, and once the outlet is let go the writer ends.
#[test]
fn an_outlet_sends_every_reply_in_order_directly_or_through_its_writer() {
    use std::os::unix::net::UnixStream;
    let (server, mut client) = UnixStream::pair().unwrap();
    let credit = Arc::new(Credit::default());
    let direct = Some(OwnedFd::from(server.try_clone().unwrap()));
    let outlet = Arc::new(Outlet::new(credit.clone(), Arc::default(), direct));
    let mut writer = server;
    let writer_outlet = outlet.clone();
    let writer_thread = std::thread::spawn(move || write_replies(&mut writer, &writer_outlet));
    let replies = Replies(outlet);
    // Turns of small replies (sent at once), of a reply larger than the socket's buffer (the
    // writer's), and a mix, with the client reading only after all were put.
    let mut want = Vec::new();
    for turn in 0..40u64 {
        let mut batch = Vec::new();
        for k in 0..(turn % 7 + 1) {
            let len = if (turn + k) % 5 == 0 { 300_000 } else { 4_112 };
            let bytes: Vec<u8> = (0..len).map(|i| (i as u64 * 31 + turn + k) as u8).collect();
            want.extend_from_slice(&bytes);
            assert!(credit.try_take(10));
            batch.push(Reply::new(bytes, 10));
        }
        replies.put(batch);
    }
    drop(replies);
    let mut got = Vec::new();
    client.read_to_end(&mut got).unwrap();
    writer_thread.join().unwrap();
    assert_eq!(got.len(), want.len());
    assert!(got == want, "the bytes arrive as put");
    assert_eq!(
        credit.used.load(Ordering::SeqCst),
        0,
        "all credit given back"
    );
}

/// A request's 28-byte header.
fn request(kind: u16, handle: u64, offset: u64, length: u32) -> Vec<u8> {
    let mut b = Vec::with_capacity(28);
    b.extend_from_slice(&REQUEST_MAGIC.to_be_bytes());
    b.extend_from_slice(&0u16.to_be_bytes());
    b.extend_from_slice(&kind.to_be_bytes());
    b.extend_from_slice(&handle.to_be_bytes());
    b.extend_from_slice(&offset.to_be_bytes());
    b.extend_from_slice(&length.to_be_bytes());
    b
}

/// A client whose bytes arrive in `chunks` (a read takes at most the rest of one), and which
/// notes at each read how many messages the reader had sent the simulation thread by then.
struct Bursts {
    chunks: VecDeque<Vec<u8>>,
    sent: std::sync::mpsc::Receiver<ToSim>,
    /// Every message sent so far, as (handle, payload) per request, a list per batch.
    got: Vec<Vec<(u64, Vec<u8>)>>,
    /// Batches sent by the time of each read.
    seen_at_read: Vec<usize>,
}

impl Bursts {
    fn collect(&mut self) {
        while let Ok(m) = self.sent.try_recv() {
            let ToSim::Batch(list) = m else {
                panic!("the reader sends batches")
            };
            let batch = list
                .into_iter()
                .map(|m| match m {
                    ToSim::Request { header, data, .. } => (header.handle, data),
                    ToSim::Refused { header, .. } => (header.handle, b"refused".to_vec()),
                    _ => panic!("a reader sends requests and refusals"),
                })
                .collect();
            self.got.push(batch);
        }
    }
}

impl Read for Bursts {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.collect();
        self.seen_at_read.push(self.got.len());
        Ok(next_bytes(&mut self.chunks, buf).0)
    }
}

/// What a read of `buf` takes from the front of `chunks` (at most the rest of one chunk): its
/// length, and whether that chunk is used up.
fn next_bytes(chunks: &mut VecDeque<Vec<u8>>, buf: &mut [u8]) -> (usize, bool) {
    let Some(chunk) = chunks.front_mut() else {
        return (0, false);
    };
    let n = chunk.len().min(buf.len());
    buf[..n].copy_from_slice(&chunk[..n]);
    chunk.drain(..n);
    let used_up = chunk.is_empty();
    if used_up {
        chunks.pop_front();
    }
    (n, used_up)
}

/// The requests a client sent together reach the simulation thread as one batch, in order and
/// with their payloads, and a batch leaves before the reader reads again (so a request never
/// waits for the client's next burst): a burst of reads, a write and a refused request; a write
/// whose payload comes in the next bursts; then the rest after it, then DISC.
#[test]
fn requests_sent_together_reach_the_simulation_as_one_batch_before_the_next_read() {
    const READ: u16 = CMD_READ;
    let payload: Vec<u8> = (0..10_000u32).map(|i| (i * 7) as u8).collect();
    let mut burst1 = Vec::new();
    for h in 0..5 {
        burst1.extend(request(READ, h, h * 4096, 4096));
    }
    burst1.extend(request(CMD_WRITE, 5, 0, 100));
    burst1.extend(&payload[..100]);
    // Past the export's end: refused, in its place.
    burst1.extend(request(READ, 6, 1 << 30, 4096));
    burst1.extend(request(READ, 7, 0, 512));
    let mut burst2 = request(CMD_WRITE, 8, 8192, payload.len() as u32);
    burst2.extend(&payload[..3_000]);
    let mut burst3 = payload[3_000..].to_vec();
    burst3.extend(request(READ, 9, 0, 4096));
    burst3.extend(request(CMD_FLUSH, 10, 0, 0));
    let burst4 = request(CMD_DISC, 11, 0, 0);
    let (tx, rx) = std::sync::mpsc::channel();
    let client = Bursts {
        chunks: [burst1, burst2, burst3, burst4].into(),
        sent: rx,
        got: Vec::new(),
        seen_at_read: Vec::new(),
    };
    let mut client = client;
    let credit = Credit::default();
    read_requests(&mut client, 3, &export(), false, &credit, &tx).unwrap();
    drop(tx);
    client.collect();
    let handles: Vec<Vec<u64>> = client
        .got
        .iter()
        .map(|b| b.iter().map(|r| r.0).collect())
        .collect();
    assert_eq!(
        handles,
        vec![vec![0, 1, 2, 3, 4, 5, 6, 7], vec![8, 9, 10]],
        "a batch per burst read, in order, DISC ending the last"
    );
    assert_eq!(client.got[0][5].1, payload[..100].to_vec());
    assert_eq!(client.got[0][6].1, b"refused".to_vec());
    assert_eq!(client.got[1][0].1, payload, "a payload across reads, whole");
    // Reads: the first burst, the second, the rest of the payload (the third burst, its two
    // requests then taken from the buffer), the fourth. Each batch was sent before the read
    // that followed it; the second write went only once its payload had come.
    assert_eq!(client.seen_at_read, vec![0, 1, 1, 2]);
    // Each request holds its credit (no replies here to give it back): 64 bytes each, and a
    // read's or a write's length.
    let lengths = 7 * 4096 + 512 + 100 + 10_000;
    assert_eq!(credit.used.load(Ordering::SeqCst), 11 * 64 + lengths);
}

/// A reader out of credit sends what it has read before it waits for credit, which only
/// replies to those requests give back: holding them would wait forever.
#[test]
fn a_reader_out_of_credit_sends_its_batch_before_it_waits() {
    let mut input = Vec::new();
    for h in 0..5 {
        input.extend(request(CMD_READ, h, h * 4096, 4096));
    }
    // Room for three reads.
    let credit = Arc::new(Credit::with_limit(3 * (4096 + 64)));
    let (tx, rx) = std::sync::mpsc::channel();
    let reader_credit = credit.clone();
    let reader = std::thread::spawn(move || {
        let mut s = Cursor::new(input);
        read_requests(&mut s, 0, &export(), false, &reader_credit, &tx)
    });
    let handles = |m: ToSim| match m {
        ToSim::Batch(list) => list
            .iter()
            .map(|m| match m {
                ToSim::Request { header, .. } => header.handle,
                _ => panic!("reads only"),
            })
            .collect::<Vec<_>>(),
        _ => panic!("the reader sends batches"),
    };
    // A reader that held its batch would never send it: the test fails here rather than hang.
    let first = rx.recv_timeout(std::time::Duration::from_secs(60));
    let Ok(first) = first else {
        credit.close();
        panic!("the reader waited for credit holding the requests that would give it back");
    };
    assert_eq!(handles(first), vec![0, 1, 2]);
    // Their replies sent: the credit comes back and the rest follow.
    credit.give(3 * (4096 + 64));
    assert_eq!(handles(rx.recv().unwrap()), vec![3, 4]);
    reader.join().unwrap().unwrap();
    assert!(rx.recv().is_err(), "nothing more");
}

/// A client's bytes arriving in `chunks`, with a read that would wait between two chunks (as a
/// socket read without waiting meets them).
struct Chunks {
    chunks: VecDeque<Vec<u8>>,
    gap: bool,
}

impl Read for Chunks {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if std::mem::take(&mut self.gap) {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let (n, used_up) = next_bytes(&mut self.chunks, buf);
        self.gap = used_up;
        Ok(n)
    }
}

/// A parsed message as the tests compare it: (refused with, handle, payload, credit).
type Seen = (Option<u32>, u64, Vec<u8>, u64);

/// Feed `chunks` to a [`RequestReader`] as a non-blocking socket would, with `limit` bytes of
/// credit, which replies give back whenever the reader runs out: its messages, and how it ended
/// (true: DISC or another end it parsed; false: the stream ended).
fn parse_chunks(chunks: Vec<Vec<u8>>, limit: u64) -> (Vec<Seen>, bool) {
    // An empty read is the end of the stream: no empty chunks.
    let mut client = Chunks {
        chunks: chunks.into_iter().filter(|c| !c.is_empty()).collect(),
        gap: false,
    };
    let credit = Credit::with_limit(limit);
    let mut reader = RequestReader::new(5, &export(), true);
    let mut out = Vec::new();
    let ended = loop {
        match reader.parse(&credit, &mut out) {
            Parsed::End => break true,
            Parsed::NeedCredit(_) => credit.give(credit.used.load(Ordering::SeqCst)),
            Parsed::NeedBytes => match reader.read_from(&mut client) {
                Ok(0) => break false,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => panic!("{e}"),
            },
        }
    };
    let seen = out
        .into_iter()
        .map(|m| match m {
            ToSim::Request {
                header,
                data,
                credit,
                ..
            } => (None, header.handle, data, credit),
            ToSim::Refused {
                header,
                error,
                credit,
                ..
            } => (Some(error), header.handle, Vec::new(), credit),
            _ => panic!("the parser makes requests and refusals"),
        })
        .collect();
    (seen, ended)
}

/// A stream of requests: reads, writes (small, larger than the parser's buffer, and beyond the
/// largest taken, whose payload is skipped), refusals, flushes and block-status queries,
/// `ops` choosing each; DISC at the end if `disc`.
fn request_stream(ops: &[(u8, u32)], disc: bool) -> Vec<u8> {
    let mut s = Vec::new();
    for (h, &(op, n)) in ops.iter().enumerate() {
        let h = h as u64;
        match op % 7 {
            0 => s.extend(request(CMD_READ, h, n as u64 * 512, 4096)),
            1 | 2 => {
                // 1..=300 bytes, or up to 200 KiB: past the 64 KiB buffer.
                let len = if op % 7 == 1 {
                    n % 300 + 1
                } else {
                    n % 200_000 + 1
                };
                s.extend(request(CMD_WRITE, h, 0, len));
                s.extend((0..len).map(|i| (i as u64 * 13 + h) as u8));
            }
            3 => s.extend(request(CMD_READ, h, 1 << 30, 4096)), // past the end: refused
            4 => s.extend(request(CMD_FLUSH, h, 0, 0)),
            5 => s.extend(request(CMD_BLOCK_STATUS, h, 0, n % 65_536 + 1)),
            _ => {
                // A write beyond 32 MiB: its payload skipped, then refused.
                let len = MAX_REQUEST_BYTES + 1 + n % 1000;
                s.extend(request(CMD_WRITE, h, 0, len));
                s.extend(vec![7u8; len as usize]);
            }
        }
    }
    if disc {
        s.extend(request(CMD_DISC, 99, 0, 0));
        s.extend(request(CMD_READ, 100, 0, 4096)); // after DISC: never read
    }
    s
}

/// Cut at every byte, a stream of small requests parses to the same messages as the stream
/// whole, and to what the blocking reader makes of it.
#[test]
fn a_request_stream_cut_at_any_byte_parses_as_whole() {
    let ops: Vec<(u8, u32)> = (0..24u32)
        .map(|i| ([0, 1, 3, 4, 5][i as usize % 5], i * 977))
        .collect();
    let stream = request_stream(&ops, true);
    let whole = parse_chunks(vec![stream.clone()], MAX_IN_FLIGHT_BYTES);
    assert_eq!(whole.0.len(), ops.len());
    assert!(whole.1, "DISC ends it");
    for cut in 1..stream.len() {
        let parts = vec![stream[..cut].to_vec(), stream[cut..].to_vec()];
        assert_eq!(
            parse_chunks(parts, MAX_IN_FLIGHT_BYTES),
            whole,
            "cut at {cut}"
        );
    }
    // Byte by byte, and with credit for a request or two at a time.
    let bytes: Vec<Vec<u8>> = stream.iter().map(|&b| vec![b]).collect();
    assert_eq!(parse_chunks(bytes, 5_000), whole);
    let (tx, rx) = std::sync::mpsc::channel();
    let credit = Credit::default();
    read_requests(&mut Cursor::new(stream), 5, &export(), true, &credit, &tx).unwrap();
    drop(tx);
    let blocking: Vec<u64> = rx
        .into_iter()
        .flat_map(|b| match b {
            ToSim::Batch(list) => list,
            _ => panic!("batches"),
        })
        .map(|m| match m {
            ToSim::Request { header, .. } | ToSim::Refused { header, .. } => header.handle,
            _ => panic!("requests"),
        })
        .collect();
    let handles: Vec<u64> = whole.0.iter().map(|s| s.1).collect();
    assert_eq!(blocking, handles);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, .. Default::default() })]

    /// Any stream of requests (but a skipped payload's, which has its own test) cut anywhere, into any number of pieces, with any credit, parses
    /// to the same messages as the stream whole with ample credit.
    #[test]
    fn a_request_stream_cut_anywhere_parses_as_whole(
        ops in proptest::collection::vec((0u8..6, 0u32..1_000_000), 0..12),
        disc: bool,
        cuts in proptest::collection::vec(0usize..100_000_000, 0..40),
        limit in 1u64..300_000,
    ) {
        let stream = request_stream(&ops, disc);
        let whole = parse_chunks(vec![stream.clone()], u64::MAX);
        let mut at: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
        at.sort_unstable();
        at.dedup();
        let mut parts = Vec::new();
        let mut from = 0;
        for c in at.into_iter().chain([stream.len()]) {
            parts.push(stream[from..c].to_vec());
            from = c;
        }
        let cut = parse_chunks(parts, limit);
        proptest::prop_assert_eq!(cut.1, whole.1);
        proptest::prop_assert!(cut.0 == whole.0, "the same messages");
    }
}

/// A write beyond the largest payload taken is skipped and refused wherever its payload is cut,
/// and the requests after it are read in step.
#[test]
fn a_skipped_payload_cut_anywhere_keeps_the_stream_in_step() {
    let stream = request_stream(&[(0, 1), (6, 5), (1, 77), (0, 2)], true);
    let whole = parse_chunks(vec![stream.clone()], MAX_IN_FLIGHT_BYTES);
    let refused: Vec<Option<u32>> = whole.0.iter().map(|s| s.0).collect();
    assert_eq!(refused, vec![None, Some(EINVAL), None, None]);
    let n = stream.len();
    for cuts in [
        vec![28 + 10],
        vec![56, 1 << 20, 3 << 20],
        vec![n - 200, n - 100],
    ] {
        let mut parts = Vec::new();
        let mut from = 0;
        for c in cuts.into_iter().chain([n]) {
            parts.push(stream[from..c].to_vec());
            from = c;
        }
        assert_eq!(parse_chunks(parts, 100_000), whole);
    }
}
