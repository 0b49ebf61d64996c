//! The NBD wire format (the protocol document of the NetworkBlockDevice project, "proto.md"):
//! magics, option and command numbers, and the parsing of what a client sends. Everything here
//! is checked against bounds before anything is allocated: a client's lengths are claims.

/// "NBDMAGIC", the first eight bytes a server sends.
pub const NBD_MAGIC: u64 = 0x4e42_444d_4147_4943;
/// "IHAVEOPT": newstyle negotiation, and the magic of every option a client sends.
pub const OPTS_MAGIC: u64 = 0x4948_4156_454f_5054;
pub const OPTION_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;
pub const STRUCTURED_REPLY_MAGIC: u32 = 0x668e_33ef;

// Handshake flags (server) and client flags.
pub const FLAG_FIXED_NEWSTYLE: u16 = 1 << 0;
pub const FLAG_NO_ZEROES: u16 = 1 << 1;
pub const FLAG_C_FIXED_NEWSTYLE: u32 = 1 << 0;
pub const FLAG_C_NO_ZEROES: u32 = 1 << 1;

// Options.
pub const OPT_EXPORT_NAME: u32 = 1;
pub const OPT_ABORT: u32 = 2;
pub const OPT_LIST: u32 = 3;
pub const OPT_STARTTLS: u32 = 5;
pub const OPT_INFO: u32 = 6;
pub const OPT_GO: u32 = 7;
pub const OPT_STRUCTURED_REPLY: u32 = 8;
pub const OPT_LIST_META_CONTEXT: u32 = 9;
pub const OPT_SET_META_CONTEXT: u32 = 10;
pub const OPT_EXTENDED_HEADERS: u32 = 11;

// Option replies.
pub const REP_ACK: u32 = 1;
pub const REP_SERVER: u32 = 2;
pub const REP_INFO: u32 = 3;
pub const REP_META_CONTEXT: u32 = 4;
pub const REP_ERR_UNSUP: u32 = 0x8000_0001;
pub const REP_ERR_POLICY: u32 = 0x8000_0002;
pub const REP_ERR_INVALID: u32 = 0x8000_0003;
pub const REP_ERR_TLS_REQD: u32 = 0x8000_0005;
pub const REP_ERR_UNKNOWN: u32 = 0x8000_0006;
pub const REP_ERR_TOO_BIG: u32 = 0x8000_0009;

// Information types of NBD_REP_INFO.
pub const INFO_EXPORT: u16 = 0;
pub const INFO_NAME: u16 = 1;
pub const INFO_DESCRIPTION: u16 = 2;
pub const INFO_BLOCK_SIZE: u16 = 3;

// Transmission flags.
pub const TFLAG_HAS_FLAGS: u16 = 1 << 0;
pub const TFLAG_READ_ONLY: u16 = 1 << 1;
pub const TFLAG_SEND_FLUSH: u16 = 1 << 2;
pub const TFLAG_SEND_FUA: u16 = 1 << 3;
pub const TFLAG_SEND_TRIM: u16 = 1 << 5;
pub const TFLAG_SEND_WRITE_ZEROES: u16 = 1 << 6;
pub const TFLAG_SEND_DF: u16 = 1 << 7;
pub const TFLAG_CAN_MULTI_CONN: u16 = 1 << 8;
pub const TFLAG_SEND_CACHE: u16 = 1 << 10;
pub const TFLAG_SEND_FAST_ZERO: u16 = 1 << 11;

// Commands.
pub const CMD_READ: u16 = 0;
pub const CMD_WRITE: u16 = 1;
pub const CMD_DISC: u16 = 2;
pub const CMD_FLUSH: u16 = 3;
pub const CMD_TRIM: u16 = 4;
pub const CMD_CACHE: u16 = 5;
pub const CMD_WRITE_ZEROES: u16 = 6;
pub const CMD_BLOCK_STATUS: u16 = 7;

// Command flags.
pub const CMD_FLAG_FUA: u16 = 1 << 0;
pub const CMD_FLAG_NO_HOLE: u16 = 1 << 1;
pub const CMD_FLAG_DF: u16 = 1 << 2;
pub const CMD_FLAG_REQ_ONE: u16 = 1 << 3;
pub const CMD_FLAG_FAST_ZERO: u16 = 1 << 4;
const KNOWN_CMD_FLAGS: u16 =
    CMD_FLAG_FUA | CMD_FLAG_NO_HOLE | CMD_FLAG_DF | CMD_FLAG_REQ_ONE | CMD_FLAG_FAST_ZERO;

/// The one metadata context served, and its id.
pub const BASE_ALLOCATION: &str = "base:allocation";
pub const BASE_ALLOCATION_ID: u32 = 1;
pub const STATE_HOLE: u32 = 1 << 0;
pub const STATE_ZERO: u32 = 1 << 1;

// Structured reply chunk types and flags.
pub const REPLY_FLAG_DONE: u16 = 1 << 0;
pub const REPLY_TYPE_NONE: u16 = 0;
pub const REPLY_TYPE_OFFSET_DATA: u16 = 1;
pub const REPLY_TYPE_OFFSET_HOLE: u16 = 2;
pub const REPLY_TYPE_BLOCK_STATUS: u16 = 5;
pub const REPLY_TYPE_ERROR: u16 = (1 << 15) + 1;

// Errors, as the protocol numbers them (Linux errno values).
pub const EPERM: u32 = 1;
pub const EIO: u32 = 5;
pub const EINVAL: u32 = 22;
pub const ENOSPC: u32 = 28;
pub const EOVERFLOW: u32 = 75;
pub const ENOTSUP: u32 = 95;
pub const ESHUTDOWN: u32 = 108;

/// The longest option payload read: an export name (at most 4096 bytes by the protocol) with
/// its information requests fits many times over. A longer option is read and discarded up to
/// [`MAX_OPTION_DISCARD`] and answered NBD_REP_ERR_TOO_BIG; beyond that the connection is closed.
pub const MAX_OPTION_BYTES: u32 = 16 * 1024;
pub const MAX_OPTION_DISCARD: u32 = 1 << 20;
/// Options one connection may send before it must choose an export.
pub const MAX_OPTIONS: u32 = 1024;
/// The largest request payload taken (the protocol's usual 32 MiB). A write beyond it is refused
/// with EINVAL after its payload is skipped, up to [`MAX_SKIP_BYTES`]; a larger one closes the
/// connection, as the stream can no longer be trusted to be in step.
pub const MAX_REQUEST_BYTES: u32 = 32 * 1024 * 1024;
pub const MAX_SKIP_BYTES: u64 = 64 * 1024 * 1024;

/// One request header of the transmission phase (28 bytes on the wire).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestHeader {
    pub flags: u16,
    pub kind: u16,
    pub handle: u64,
    pub offset: u64,
    pub length: u32,
}

/// What is wrong with a request header, in the protocol's terms.
#[derive(Debug, PartialEq, Eq)]
pub enum HeaderError {
    /// Not a request: the stream is out of step, the connection must close.
    BadMagic(u32),
}

pub fn parse_request(b: &[u8; 28]) -> Result<RequestHeader, HeaderError> {
    let magic = u32::from_be_bytes(b[0..4].try_into().unwrap());
    if magic != REQUEST_MAGIC {
        return Err(HeaderError::BadMagic(magic));
    }
    Ok(RequestHeader {
        flags: u16::from_be_bytes(b[4..6].try_into().unwrap()),
        kind: u16::from_be_bytes(b[6..8].try_into().unwrap()),
        handle: u64::from_be_bytes(b[8..16].try_into().unwrap()),
        offset: u64::from_be_bytes(b[16..24].try_into().unwrap()),
        length: u32::from_be_bytes(b[24..28].try_into().unwrap()),
    })
}

/// Whether a request is one the server takes, given the export's size and whether it is
/// read-only; the protocol's error number if not. Checked after the header, before the device
/// sees anything.
pub fn check_request(
    h: &RequestHeader,
    size: u64,
    read_only: bool,
    block_status: bool,
) -> Result<(), u32> {
    if h.flags & !KNOWN_CMD_FLAGS != 0 {
        return Err(EINVAL);
    }
    if h.kind == CMD_BLOCK_STATUS && !block_status {
        // Only with a metadata context negotiated.
        return Err(EINVAL);
    }
    match h.kind {
        CMD_READ | CMD_WRITE | CMD_TRIM | CMD_CACHE | CMD_WRITE_ZEROES | CMD_BLOCK_STATUS => {
            let Some(end) = h.offset.checked_add(h.length as u64) else {
                return Err(EOVERFLOW);
            };
            if h.length == 0 {
                return Err(EINVAL);
            }
            if h.length > MAX_REQUEST_BYTES && matches!(h.kind, CMD_READ | CMD_WRITE) {
                return Err(EINVAL);
            }
            if end > size {
                return Err(if h.kind == CMD_WRITE || h.kind == CMD_WRITE_ZEROES {
                    ENOSPC
                } else {
                    EINVAL
                });
            }
            if read_only && matches!(h.kind, CMD_WRITE | CMD_TRIM | CMD_WRITE_ZEROES) {
                return Err(EPERM);
            }
            if h.flags & CMD_FLAG_FAST_ZERO != 0 && h.kind != CMD_WRITE_ZEROES {
                return Err(EINVAL);
            }
            Ok(())
        }
        CMD_FLUSH => {
            if h.offset != 0 || h.length != 0 {
                return Err(EINVAL);
            }
            Ok(())
        }
        _ => Err(EINVAL),
    }
}

/// An option reply header and payload.
pub fn option_reply(option: u32, reply: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(20 + payload.len());
    out.extend_from_slice(&OPTION_REPLY_MAGIC.to_be_bytes());
    out.extend_from_slice(&option.to_be_bytes());
    out.extend_from_slice(&reply.to_be_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// A simple reply header (data, for a read, follows it).
pub fn simple_reply(error: u32, handle: u64) -> [u8; 16] {
    let mut out = [0u8; 16];
    out[0..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    out[4..8].copy_from_slice(&error.to_be_bytes());
    out[8..16].copy_from_slice(&handle.to_be_bytes());
    out
}

/// A structured reply chunk header of `len` payload bytes.
pub fn chunk_header(flags: u16, kind: u16, handle: u64, len: u32) -> [u8; 20] {
    let mut out = [0u8; 20];
    out[0..4].copy_from_slice(&STRUCTURED_REPLY_MAGIC.to_be_bytes());
    out[4..6].copy_from_slice(&flags.to_be_bytes());
    out[6..8].copy_from_slice(&kind.to_be_bytes());
    out[8..16].copy_from_slice(&handle.to_be_bytes());
    out[16..20].copy_from_slice(&len.to_be_bytes());
    out
}

/// An error chunk (final) with a message for a person.
pub fn error_chunk(handle: u64, error: u32, message: &str) -> Vec<u8> {
    let msg = &message.as_bytes()[..message.len().min(4096)];
    let mut out = chunk_header(
        REPLY_FLAG_DONE,
        REPLY_TYPE_ERROR,
        handle,
        6 + msg.len() as u32,
    )
    .to_vec();
    out.extend_from_slice(&error.to_be_bytes());
    out.extend_from_slice(&(msg.len() as u16).to_be_bytes());
    out.extend_from_slice(msg);
    out
}

/// The export name and information requests of NBD_OPT_INFO / NBD_OPT_GO.
#[derive(Debug, PartialEq, Eq)]
pub struct InfoRequest {
    pub name: Vec<u8>,
    pub infos: Vec<u16>,
}

pub fn parse_info_request(data: &[u8]) -> Option<InfoRequest> {
    let len = u32::from_be_bytes(data.get(0..4)?.try_into().ok()?) as usize;
    let name_end = 4usize.checked_add(len)?;
    let name = data.get(4..name_end)?.to_vec();
    let count = u16::from_be_bytes(data.get(name_end..name_end + 2)?.try_into().ok()?) as usize;
    let list = data.get(name_end + 2..)?;
    if list.len() != count * 2 {
        return None;
    }
    let infos = list
        .chunks_exact(2)
        .map(|c| u16::from_be_bytes([c[0], c[1]]))
        .collect();
    Some(InfoRequest { name, infos })
}

/// The export name and queries of NBD_OPT_LIST_META_CONTEXT / NBD_OPT_SET_META_CONTEXT.
#[derive(Debug, PartialEq, Eq)]
pub struct MetaRequest {
    pub name: Vec<u8>,
    pub queries: Vec<Vec<u8>>,
}

pub fn parse_meta_request(data: &[u8]) -> Option<MetaRequest> {
    let be32 = |at: usize| -> Option<usize> {
        Some(u32::from_be_bytes(data.get(at..at.checked_add(4)?)?.try_into().ok()?) as usize)
    };
    let len = be32(0)?;
    let name_end = 4usize.checked_add(len)?;
    let name = data.get(4..name_end)?.to_vec();
    let count = be32(name_end)?;
    let mut at = name_end + 4;
    // Each query takes at least 4 bytes: a count beyond that is a lie.
    if count > (data.len() - at) / 4 {
        return None;
    }
    let mut queries = Vec::with_capacity(count);
    for _ in 0..count {
        let qlen = be32(at)?;
        let end = (at + 4).checked_add(qlen)?;
        queries.push(data.get(at + 4..end)?.to_vec());
        at = end;
    }
    (at == data.len()).then_some(MetaRequest { name, queries })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(kind: u16, flags: u16, offset: u64, length: u32) -> RequestHeader {
        RequestHeader {
            flags,
            kind,
            handle: 7,
            offset,
            length,
        }
    }

    #[test]
    fn a_request_header_reads_back_and_a_wrong_magic_is_refused() {
        let mut b = [0u8; 28];
        b[0..4].copy_from_slice(&REQUEST_MAGIC.to_be_bytes());
        b[4..6].copy_from_slice(&CMD_FLAG_FUA.to_be_bytes());
        b[6..8].copy_from_slice(&CMD_WRITE.to_be_bytes());
        b[8..16].copy_from_slice(&0x1122u64.to_be_bytes());
        b[16..24].copy_from_slice(&4096u64.to_be_bytes());
        b[24..28].copy_from_slice(&512u32.to_be_bytes());
        let h = parse_request(&b).unwrap();
        assert_eq!(
            h,
            RequestHeader {
                flags: 1,
                kind: 1,
                handle: 0x1122,
                offset: 4096,
                length: 512
            }
        );
        b[0] = 0;
        assert!(matches!(parse_request(&b), Err(HeaderError::BadMagic(_))));
    }

    fn check_request_(h: &RequestHeader, size: u64, read_only: bool) -> Result<(), u32> {
        check_request(h, size, read_only, false)
    }

    #[test]
    fn block_status_needs_a_metadata_context() {
        let h = header(CMD_BLOCK_STATUS, CMD_FLAG_REQ_ONE, 0, 4096);
        assert_eq!(check_request(&h, 1 << 20, false, false), Err(EINVAL));
        assert_eq!(check_request(&h, 1 << 20, true, true), Ok(()));
    }

    #[test]
    fn meta_context_requests_are_parsed_within_their_bounds() {
        let mut d = Vec::new();
        d.extend_from_slice(&0u32.to_be_bytes());
        d.extend_from_slice(&2u32.to_be_bytes());
        for q in [&b"base:allocation"[..], b"qemu:dirty-bitmap:x"] {
            d.extend_from_slice(&(q.len() as u32).to_be_bytes());
            d.extend_from_slice(q);
        }
        let r = parse_meta_request(&d).unwrap();
        assert_eq!(r.name, b"");
        assert_eq!(
            r.queries,
            vec![b"base:allocation".to_vec(), b"qemu:dirty-bitmap:x".to_vec()]
        );
        // A query count larger than the payload could hold, a query running past it.
        let mut many = d.clone();
        many[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        assert_eq!(parse_meta_request(&many), None);
        assert_eq!(parse_meta_request(&d[..d.len() - 1]), None);
    }

    #[test]
    fn requests_are_checked_against_the_export_before_the_device() {
        let size = 1 << 20;
        assert_eq!(
            check_request_(&header(CMD_READ, 0, 0, 4096), size, false),
            Ok(())
        );
        assert_eq!(
            check_request_(&header(CMD_READ, 0, u64::MAX, 2), size, false),
            Err(EOVERFLOW)
        );
        assert_eq!(
            check_request_(&header(CMD_READ, 0, size, 1), size, false),
            Err(EINVAL)
        );
        assert_eq!(
            check_request_(&header(CMD_WRITE, 0, size - 1, 2), size, false),
            Err(ENOSPC)
        );
        assert_eq!(
            check_request_(&header(CMD_READ, 0, 0, 0), size, false),
            Err(EINVAL)
        );
        assert_eq!(
            check_request_(&header(CMD_WRITE, 0, 0, 512), size, true),
            Err(EPERM)
        );
        assert_eq!(
            check_request_(&header(CMD_READ, 1 << 9, 0, 512), size, false),
            Err(EINVAL)
        );
        assert_eq!(
            check_request_(&header(99, 0, 0, 512), size, false),
            Err(EINVAL)
        );
        assert_eq!(
            check_request_(&header(CMD_FLUSH, 0, 0, 0), size, true),
            Ok(())
        );
        assert_eq!(
            check_request_(&header(CMD_FLUSH, 0, 0, 1), size, false),
            Err(EINVAL)
        );
        assert_eq!(
            check_request_(
                &header(CMD_READ, 0, 0, MAX_REQUEST_BYTES + 1),
                1 << 40,
                false
            ),
            Err(EINVAL)
        );
        assert_eq!(
            check_request_(&header(CMD_WRITE, CMD_FLAG_FAST_ZERO, 0, 512), size, false),
            Err(EINVAL)
        );
    }

    #[test]
    fn info_requests_are_parsed_within_their_bounds() {
        let mut d = Vec::new();
        d.extend_from_slice(&3u32.to_be_bytes());
        d.extend_from_slice(b"abc");
        d.extend_from_slice(&2u16.to_be_bytes());
        d.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
        d.extend_from_slice(&INFO_NAME.to_be_bytes());
        let r = parse_info_request(&d).unwrap();
        assert_eq!(r.name, b"abc");
        assert_eq!(r.infos, vec![INFO_BLOCK_SIZE, INFO_NAME]);
        // A name length past the payload, a count that does not match, a truncated payload.
        let mut long = d.clone();
        long[0..4].copy_from_slice(&u32::MAX.to_be_bytes());
        assert_eq!(parse_info_request(&long), None);
        let mut count = d.clone();
        count[7..9].copy_from_slice(&5u16.to_be_bytes());
        assert_eq!(parse_info_request(&count), None);
        assert_eq!(parse_info_request(&d[..5]), None);
        assert_eq!(parse_info_request(&[]), None);
    }
}
