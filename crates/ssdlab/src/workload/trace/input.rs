//! Opening a trace file: gzip, bzip2 and xz are recognised by their magic bytes and decoded as a
//! stream, and lines are read with a length cap so that no input, however long or malformed,
//! makes the reader hold more than a bounded buffer.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};

/// Longest line a reader accepts; a longer one is an error (or a skipped line).
pub const MAX_LINE: usize = 64 * 1024;

/// Most of an over-long line that is read past and dropped (so that a reader skipping bad
/// lines goes on at the next one): an input with no line break for this long (`/dev/zero`, a
/// binary file) is not text, and reading it ends with an error instead of never.
const MAX_DROPPED: usize = 16 << 20;

const BUF_BYTES: usize = 256 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Bzip2,
    Xz,
}

impl Compression {
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Bzip2 => "bzip2",
            Compression::Xz => "xz",
        }
    }

    /// By the first bytes of the file (RFC 1952, the bzip2 stream header, the xz header magic).
    pub fn sniff(head: &[u8]) -> Compression {
        if head.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if head.len() >= 4 && head.starts_with(b"BZh") && (b'1'..=b'9').contains(&head[3]) {
            Compression::Bzip2
        } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
            Compression::Xz
        } else {
            Compression::None
        }
    }
}

/// A decoded byte stream of the trace.
pub type Input = Box<dyn BufRead + Send>;

/// Wrap `raw` in the decoder its first bytes ask for.
pub fn decode(raw: Box<dyn Read + Send>) -> io::Result<(Input, Compression)> {
    let mut buf = BufReader::with_capacity(BUF_BYTES, raw);
    let head = buf.fill_buf()?;
    let kind = Compression::sniff(head);
    let input: Input = match kind {
        Compression::None => Box::new(buf),
        Compression::Gzip => Box::new(BufReader::with_capacity(
            BUF_BYTES,
            flate2::bufread::MultiGzDecoder::new(buf),
        )),
        Compression::Bzip2 => Box::new(BufReader::with_capacity(
            BUF_BYTES,
            bzip2::bufread::MultiBzDecoder::new(buf),
        )),
        Compression::Xz => Box::new(BufReader::with_capacity(
            BUF_BYTES,
            liblzma::bufread::XzDecoder::new_multi_decoder(buf),
        )),
    };
    Ok((input, kind))
}

/// Open a file and wrap it in its decoder.
pub fn open(path: &str) -> io::Result<(Input, Compression)> {
    let f = File::open(path)?;
    decode(Box::new(f))
}

/// Read one line (without its `\n` and any `\r` before it) into `buf`. Returns `Ok(None)` at the
/// end of the input, `Ok(Some(true))` when the line was longer than [`MAX_LINE`] (the rest of
/// it is read and dropped; `buf` holds its start), `Ok(Some(false))` otherwise; an error when
/// the line runs on for more than [`MAX_DROPPED`] bytes.
pub fn read_line(input: &mut dyn BufRead, buf: &mut Vec<u8>) -> io::Result<Option<bool>> {
    buf.clear();
    let mut any = false;
    let mut too_long = false;
    let mut dropped = 0usize;
    loop {
        let chunk = match input.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            break;
        }
        any = true;
        let (take, done) = match memchr(b'\n', chunk) {
            Some(i) => (i, Some(i + 1)),
            None => (chunk.len(), None),
        };
        let room = MAX_LINE.saturating_sub(buf.len());
        if take > room {
            too_long = true;
            dropped = dropped.saturating_add(take - room);
            if dropped > MAX_DROPPED {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "no line break in {} MiB, expected text lines (is it a binary file or a device?)",
                        MAX_DROPPED >> 20
                    ),
                ));
            }
        }
        buf.extend_from_slice(&chunk[..take.min(room)]);
        let used = done.unwrap_or(take);
        input.consume(used);
        if done.is_some() {
            break;
        }
    }
    if !any {
        return Ok(None);
    }
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    Ok(Some(too_long))
}

#[inline]
fn memchr(needle: u8, hay: &[u8]) -> Option<usize> {
    hay.iter().position(|&b| b == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    #[test]
    fn lines_are_split_and_capped() {
        let mut text = b"a\r\nbb\n\nccc".to_vec();
        text.extend(std::iter::repeat_n(b'x', MAX_LINE + 10));
        text.extend_from_slice(b"\nlast");
        let mut input = Cursor::new(text);
        let mut buf = Vec::new();
        let mut got = Vec::new();
        while let Some(long) = read_line(&mut input, &mut buf).unwrap() {
            got.push((buf.len(), long));
        }
        assert_eq!(
            got,
            vec![
                (1, false),
                (2, false),
                (0, false),
                (MAX_LINE, true),
                (4, false)
            ]
        );
    }

    #[test]
    fn an_input_with_no_line_break_ends_in_an_error_not_an_endless_read() {
        let mut input = BufReader::new(io::repeat(0));
        let mut buf = Vec::new();
        let e = read_line(&mut input, &mut buf).unwrap_err();
        assert!(e.to_string().contains("no line break in 16 MiB"), "{e}");
        assert!(buf.len() <= MAX_LINE);
    }

    #[test]
    fn compressed_streams_are_recognised() {
        use std::io::Write;
        let text = b"1 0 8 8 1\n2 0 16 8 0\n".to_vec();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&text).unwrap();
        let mut bz = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
        bz.write_all(&text).unwrap();
        let mut xz = liblzma::write::XzEncoder::new(Vec::new(), 1);
        xz.write_all(&text).unwrap();
        for (bytes, kind) in [
            (text.clone(), Compression::None),
            (gz.finish().unwrap(), Compression::Gzip),
            (bz.finish().unwrap(), Compression::Bzip2),
            (xz.finish().unwrap(), Compression::Xz),
        ] {
            let (mut input, got) = decode(Box::new(Cursor::new(bytes))).unwrap();
            assert_eq!(got, kind);
            let mut out = Vec::new();
            input.read_to_end(&mut out).unwrap();
            assert_eq!(out, text);
        }
    }
}
