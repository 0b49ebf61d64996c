//! The binary form of a saved drive state (docs/state.md): little-endian numbers and arrays
//! written and read in bulk, with a running CRC-32 over every byte. Every read is bounded by
//! what the caller expects of its config (a table's length, a list's most entries), never by
//! what the file claims, so a truncated, corrupt or foreign file is one clear error, never a
//! panic or an allocation the file chose.
//!
//! Large tables that the OS backs only where written (`sim::mem::zeroed_vec`: the maps) are
//! written sparsely, as the chunks that hold anything but zeros: a drive whose map was laid out
//! in closed form saves and loads in time proportional to what was written, not to its size.

use crate::error::{Error, Invalid, Result};

/// The origin of a state file's errors: `state file {path}: ...` (the path is the value).
pub const STATE_FILE: &str = "state file";
use crate::sim::mem::{zeroed_vec, Zeroed};
use std::io::{Read, Write};

/// A sparse table's chunk: 4 KiB, one OS page of the table.
const CHUNK_BYTES: usize = 4096;
/// Bytes read at once: large enough that reads bypass the buffered reader's copy.
const PIECE_BYTES: usize = 1 << 20;

/// A fixed-size little-endian number, the element of an array section.
pub trait Plain: Zeroed + PartialEq {
    const SIZE: usize;
    fn put(self, out: &mut Vec<u8>);
    fn get(bytes: &[u8]) -> Self;
}

macro_rules! plain {
    ($($t:ty),*) => {$(
        impl Plain for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            #[inline]
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            #[inline]
            fn get(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes.try_into().expect("a slice of the type's size"))
            }
        }
    )*};
}
plain!(u8, u32, u64);

/// Writes sections, counting the CRC; [`StateWriter::finish`] appends it.
pub struct StateWriter<W: Write> {
    out: W,
    crc: crc32fast::Hasher,
    buf: Vec<u8>,
}

impl<W: Write> StateWriter<W> {
    pub fn new(out: W) -> StateWriter<W> {
        StateWriter {
            out,
            crc: crc32fast::Hasher::new(),
            buf: Vec::with_capacity(1 << 16),
        }
    }

    fn flush_buf(&mut self) -> std::io::Result<()> {
        self.crc.update(&self.buf);
        self.out.write_all(&self.buf)?;
        self.buf.clear();
        Ok(())
    }

    fn room(&mut self) -> std::io::Result<()> {
        if self.buf.len() >= 1 << 16 {
            self.flush_buf()?;
        }
        Ok(())
    }

    pub fn bytes(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.buf.extend_from_slice(b);
        self.room()
    }

    pub fn u8(&mut self, v: u8) -> std::io::Result<()> {
        self.bytes(&[v])
    }

    pub fn u32(&mut self, v: u32) -> std::io::Result<()> {
        self.bytes(&v.to_le_bytes())
    }

    pub fn u64(&mut self, v: u64) -> std::io::Result<()> {
        self.bytes(&v.to_le_bytes())
    }

    pub fn f64(&mut self, v: f64) -> std::io::Result<()> {
        self.u64(v.to_bits())
    }

    /// A length-prefixed string (at most a reader's bound).
    pub fn str(&mut self, s: &str) -> std::io::Result<()> {
        self.u64(s.len() as u64)?;
        self.bytes(s.as_bytes())
    }

    /// An array: its length, then every element.
    pub fn array<T: Plain>(&mut self, values: &[T]) -> std::io::Result<()> {
        self.u64(values.len() as u64)?;
        for chunk in values.chunks(CHUNK_BYTES) {
            for &v in chunk {
                v.put(&mut self.buf);
            }
            self.room()?;
        }
        Ok(())
    }

    /// A table mostly zero: its length, then each run of chunks holding anything but zeros as
    /// its first chunk's index, its chunk count and its elements, then the end mark
    /// (`u64::MAX`).
    pub fn sparse<T: Plain>(&mut self, values: &[T]) -> std::io::Result<()> {
        self.u64(values.len() as u64)?;
        let per_chunk = CHUNK_BYTES / T::SIZE;
        let zero = |c: &[T]| c.iter().all(|&v| v == T::ZERO);
        let chunks: Vec<&[T]> = values.chunks(per_chunk).collect();
        let mut i = 0;
        while i < chunks.len() {
            if zero(chunks[i]) {
                i += 1;
                continue;
            }
            let first = i;
            while i < chunks.len() && !zero(chunks[i]) {
                i += 1;
            }
            self.u64(first as u64)?;
            self.u64((i - first) as u64)?;
            for chunk in &chunks[first..i] {
                for &v in *chunk {
                    v.put(&mut self.buf);
                }
                self.room()?;
            }
        }
        self.u64(u64::MAX)
    }

    /// Append the CRC of everything written; returns the writer.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.flush_buf()?;
        let crc = self.crc.clone().finalize();
        self.out.write_all(&crc.to_le_bytes())?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Reads sections, counting the CRC; every error names the file and what was read.
pub struct StateReader<R: Read> {
    inp: R,
    crc: crc32fast::Hasher,
    /// The file's name, for messages.
    name: String,
    offset: u64,
    /// The bytes last read are `buf[..len]` (the buffer only grows, so small reads between
    /// large ones do not clear it again).
    buf: Vec<u8>,
    len: usize,
}

impl<R: Read> StateReader<R> {
    pub fn new(inp: R, name: &str) -> StateReader<R> {
        StateReader {
            inp,
            crc: crc32fast::Hasher::new(),
            name: name.to_string(),
            offset: 0,
            buf: Vec::new(),
            len: 0,
        }
    }

    /// An error about this file: `what` was found wrong here.
    pub fn error(&self, what: &str) -> Error {
        Error::bad_config(Invalid::option_says(
            STATE_FILE,
            &self.name,
            format!(
                "{what} (at byte {}); the file is not a drive state this version of ssdlab \
                 wrote, or it was damaged: make it again with `ssdlab precondition --save`",
                self.offset
            ),
        ))
    }

    /// Read exactly `n` bytes into the scratch buffer (counted in the CRC).
    fn fill(&mut self, n: usize, what: &str) -> Result<()> {
        if self.buf.len() < n {
            self.buf.resize(n, 0);
        }
        self.len = n;
        match self.inp.read_exact(&mut self.buf[..n]) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                return Err(self.error(&format!("{what}: the file ends early (truncated)")))
            }
            Err(e) => return Err(self.error(&format!("{what}: {e}"))),
        }
        self.crc.update(&self.buf[..n]);
        self.offset += n as u64;
        Ok(())
    }

    pub fn bytes(&mut self, n: usize, what: &str) -> Result<&[u8]> {
        self.fill(n, what)?;
        Ok(&self.buf[..self.len])
    }

    pub fn u8(&mut self, what: &str) -> Result<u8> {
        self.fill(1, what)?;
        Ok(self.buf[0])
    }

    pub fn u32(&mut self, what: &str) -> Result<u32> {
        self.fill(4, what)?;
        Ok(u32::get(&self.buf[..4]))
    }

    pub fn u64(&mut self, what: &str) -> Result<u64> {
        self.fill(8, what)?;
        Ok(u64::get(&self.buf[..8]))
    }

    pub fn f64(&mut self, what: &str) -> Result<f64> {
        Ok(f64::from_bits(self.u64(what)?))
    }

    /// A number that must be below `bound` (a count, an index).
    pub fn below(&mut self, what: &str, bound: u64) -> Result<u64> {
        let v = self.u64(what)?;
        if v >= bound {
            return Err(self.error(&format!("{what}: got {v}, expected below {bound}")));
        }
        Ok(v)
    }

    /// A string of at most `most` bytes.
    pub fn str(&mut self, what: &str, most: u64) -> Result<String> {
        let n = self.below(what, most + 1)? as usize;
        let b = self.bytes(n, what)?.to_vec();
        String::from_utf8(b).map_err(|_| self.error(&format!("{what}: not UTF-8")))
    }

    /// The length prefix of an array that must hold exactly `len` elements.
    fn length(&mut self, what: &str, len: usize) -> Result<()> {
        let got = self.u64(what)?;
        if got != len as u64 {
            return Err(self.error(&format!(
                "{what}: got {got} entries, expected {len} (the config's)"
            )));
        }
        Ok(())
    }

    /// An array written by [`StateWriter::array`] of exactly `len` elements.
    pub fn array<T: Plain>(&mut self, what: &str, len: usize) -> Result<Vec<T>> {
        self.length(what, len)?;
        let mut out = Vec::with_capacity(len);
        let per_piece = PIECE_BYTES / T::SIZE;
        let mut left = len;
        while left > 0 {
            let n = left.min(per_piece);
            self.fill(n * T::SIZE, what)?;
            out.extend(self.buf[..self.len].chunks_exact(T::SIZE).map(T::get));
            left -= n;
        }
        Ok(out)
    }

    /// Exactly `count` records of `size` bytes (after a count prefix that must be `count`),
    /// each handed to `each` with its index, read in large pieces straight from the file.
    pub fn records(
        &mut self,
        what: &str,
        count: usize,
        size: usize,
        mut each: impl FnMut(usize, &[u8]) -> std::result::Result<(), String>,
    ) -> Result<()> {
        self.length(what, count)?;
        let per_piece = (PIECE_BYTES / size).max(1);
        let mut at = 0;
        while at < count {
            let n = (count - at).min(per_piece);
            self.fill(n * size, what)?;
            let buf = std::mem::take(&mut self.buf);
            let outcome = buf[..self.len]
                .chunks_exact(size)
                .enumerate()
                .try_for_each(|(k, rec)| each(at + k, rec));
            self.buf = buf;
            if let Err(e) = outcome {
                return Err(self.error(&format!("{what}: {e}")));
            }
            at += n;
        }
        Ok(())
    }

    /// An array of at most `most` elements (a list whose length the state decides).
    pub fn array_upto<T: Plain>(&mut self, what: &str, most: usize) -> Result<Vec<T>> {
        let len = self.below(what, most as u64 + 1)? as usize;
        let mut out = Vec::with_capacity(len);
        for _ in 0..len {
            self.fill(T::SIZE, what)?;
            out.push(T::get(&self.buf[..T::SIZE]));
        }
        Ok(out)
    }

    /// A table written by [`StateWriter::sparse`] into `out`, which must be all zeros and of
    /// the length written (the OS then backs only the chunks the file holds); each element read
    /// must pass `ok`.
    pub fn sparse_into<T: Plain>(
        &mut self,
        what: &str,
        out: &mut [T],
        ok: impl Fn(T) -> bool,
    ) -> Result<()> {
        let len = out.len();
        self.length(what, len)?;
        let per_chunk = CHUNK_BYTES / T::SIZE;
        let chunks = len.div_ceil(per_chunk) as u64;
        let mut next = 0u64;
        loop {
            let first = self.u64(what)?;
            if first == u64::MAX {
                return Ok(());
            }
            let count = self.u64(what)?;
            if first < next || count == 0 || count > chunks - first.min(chunks) {
                return Err(self.error(&format!(
                    "{what}: chunks {first} (and {count} on) out of order or past the table's \
                     {chunks} chunks"
                )));
            }
            next = first + count;
            let mut at = first as usize * per_chunk;
            let end = (next as usize * per_chunk).min(len);
            while at < end {
                let n = (end - at).min(PIECE_BYTES / T::SIZE);
                self.fill(n * T::SIZE, what)?;
                for (k, (slot, b)) in out[at..at + n]
                    .iter_mut()
                    .zip(self.buf[..self.len].chunks_exact(T::SIZE))
                    .enumerate()
                {
                    let v = T::get(b);
                    if !ok(v) {
                        return Err(self.error(&format!("{what}: entry {} out of range", at + k)));
                    }
                    *slot = v;
                }
                at += n;
            }
        }
    }

    /// [`StateReader::sparse_into`] a new zeroed table of `len` elements.
    pub fn sparse<T: Plain>(&mut self, what: &str, len: usize) -> Result<Vec<T>> {
        let mut out: Vec<T> = zeroed_vec(len);
        self.sparse_into(what, &mut out, |_| true)?;
        Ok(out)
    }

    /// Check the CRC that ends the file, and that nothing follows it.
    pub fn finish(mut self) -> Result<()> {
        let want = self.crc.clone().finalize();
        let mut trailer = [0u8; 4];
        if self.inp.read_exact(&mut trailer).is_err() {
            return Err(self.error("checksum: the file ends early (truncated)"));
        }
        let got = u32::from_le_bytes(trailer);
        if got != want {
            return Err(self.error(&format!(
                "checksum: got {got:#010x}, expected {want:#010x} (the file was changed or damaged)"
            )));
        }
        let mut extra = [0u8; 1];
        if matches!(self.inp.read(&mut extra), Ok(n) if n > 0) {
            return Err(self.error("bytes after the checksum (the file was changed)"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_read_back_as_written() {
        let mut w = StateWriter::new(Vec::new());
        w.u32(7).unwrap();
        w.str("key").unwrap();
        let dense: Vec<u32> = (0..5000).collect();
        w.array(&dense).unwrap();
        let mut sparse = vec![0u32; 100_000];
        sparse[3] = 1;
        sparse[70_000] = 9;
        w.sparse(&sparse).unwrap();
        w.array(&[1u8, 2, 3]).unwrap();
        let bytes = w.finish().unwrap();
        // Two chunks of the sparse table, not 400 KB.
        assert!(bytes.len() < 20_000 + 2 * 4096 + 100, "{}", bytes.len());
        let mut r = StateReader::new(&bytes[..], "t");
        assert_eq!(r.u32("a").unwrap(), 7);
        assert_eq!(r.str("b", 10).unwrap(), "key");
        assert_eq!(r.array::<u32>("c", 5000).unwrap(), dense);
        assert_eq!(r.sparse::<u32>("d", 100_000).unwrap(), sparse);
        assert_eq!(r.array_upto::<u8>("e", 3).unwrap(), vec![1, 2, 3]);
        r.finish().unwrap();
    }

    #[test]
    fn a_length_the_caller_did_not_expect_is_refused_before_allocating() {
        let mut w = StateWriter::new(Vec::new());
        w.array(&[1u32, 2]).unwrap();
        let bytes = w.finish().unwrap();
        let e = StateReader::new(&bytes[..], "f")
            .array::<u32>("blocks", 3)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("state file f: blocks: got 2 entries, expected 3"),
            "{e}"
        );
        let e = StateReader::new(&bytes[..], "f")
            .array_upto::<u32>("free", 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("got 2, expected below 2"), "{e}");
    }
}
