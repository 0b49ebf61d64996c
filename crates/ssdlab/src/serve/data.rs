//! The bytes a served drive holds: in memory (sparse, gone when the server stops) or in a file
//! (`--data file:PATH`, so that data outlives the server). The device model times each
//! request; this store keeps what was written, changed when the model completes a request.

mod index;

use crate::device::store::push_extent;
use crate::error::Invalid;
use crate::error::{Error, Result};
use index::PageIndex;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

/// Where the data lives, as `--data` names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DataSpec {
    /// `memory`: sparse, in 512-byte blocks.
    Memory,
    /// `file:PATH`: a file of exactly the export's size (created sparse if missing or empty).
    File(PathBuf),
}

impl DataSpec {
    pub fn parse(text: &str) -> Result<DataSpec> {
        if text == "memory" {
            return Ok(DataSpec::Memory);
        }
        if let Some(path) = text.strip_prefix("file:") {
            if !path.is_empty() {
                return Ok(DataSpec::File(PathBuf::from(path)));
            }
        }
        Err(Error::bad_serve(Invalid::option(
            "--data",
            format!("{text:?}"),
            "memory or file:PATH",
        )))
    }
}

pub enum Data {
    Memory(Pages),
    File(File),
}

/// The grain of what the memory store reports as written (BLOCK_STATUS, a structured read's
/// holes): the export's smallest block (INFO_BLOCK_SIZE minimum).
pub const BLOCK_BYTES: u64 = 512;
/// The memory store's page: a 1 MiB read is 256 page copies, not 2,048 block look-ups.
const PAGE_BYTES: u64 = 4096;
const BLOCKS_PER_PAGE: u64 = PAGE_BYTES / BLOCK_BYTES;
const ALL_WRITTEN: u8 = u8::MAX;

/// A page's bytes, shared with the replies that send them (`Arc`): a write to a page that a
/// reply still holds copies the page first, so the reply sends what was read.
type PageBytes = [u8; PAGE_BYTES as usize];

/// One page of the memory store. The bytes of a block never written (or deallocated) are
/// zeros.
enum Page {
    /// Every block written, every byte this value (a page of zeros or of a fill pattern costs
    /// no page of memory).
    Fill(u8),
    /// `written`: bit k for block k.
    Bytes { written: u8, bytes: Arc<PageBytes> },
}

/// Bytes `start .. end` of a memory store's page, lent to a reply and sent from where they lie
/// (a large read is not copied out of the store: the copy was a third of the server's time at
/// 1 MiB reads).
pub struct PageSlice {
    page: Arc<PageBytes>,
    start: u16,
    end: u16,
}

impl PageSlice {
    pub fn bytes(&self) -> &[u8] {
        &self.page[self.start as usize..self.end as usize]
    }
}

/// Pages lent to a reply, each with the length its buffer had when the page's bytes came: the
/// reply's bytes on the wire are the buffer's, with each page's put in at its place.
pub type Lent = Vec<(usize, PageSlice)>;

/// The sparse memory store: pages that hold data, with which of their 512-byte blocks were
/// written. Its bytes and its extents are those of `device::store::Store` at 512-byte blocks
/// (a write marks every block it touches, a zero deallocates the whole blocks it covers and
/// writes zeros into the partial ones), which the tests check it against.
#[derive(Default)]
pub struct Pages {
    pages: PageIndex<Page>,
}

impl Pages {
    /// Append `len` bytes from `offset` to `out` (no zeroing pass before the copy).
    pub fn read_into(&self, offset: u64, len: u64, out: &mut Vec<u8>) {
        out.reserve(len as usize);
        self.read_with(offset, len, out, |out, bytes, a, b| {
            out.extend_from_slice(&bytes[a..b])
        });
    }

    /// [`Pages::read_into`], but the written pages are lent (into `lent`, at the length `out`
    /// had then) rather than copied: only holes and fill pages go into `out`.
    pub fn read_lent(&self, offset: u64, len: u64, out: &mut Vec<u8>, lent: &mut Lent) {
        self.read_with(offset, len, out, |out, bytes, a, b| {
            // A page is 4,096 bytes: its offsets fit in u16.
            let slice = PageSlice {
                page: Arc::clone(bytes),
                start: a as u16,
                end: b as u16,
            };
            lent.push((out.len(), slice));
        });
    }

    /// Bytes `offset .. offset + len` in order: holes and fill pages appended to `out`, and
    /// bytes `a .. b` of each written page handed to `page(out, the page, a, b)`.
    fn read_with(
        &self,
        offset: u64,
        len: u64,
        out: &mut Vec<u8>,
        mut page_bytes: impl FnMut(&mut Vec<u8>, &Arc<PageBytes>, usize, usize),
    ) {
        let end = offset + len;
        let mut at = offset;
        for (page, p) in self.written_in(offset, end) {
            let start = (page * PAGE_BYTES).max(offset);
            let stop = ((page + 1) * PAGE_BYTES).min(end);
            out.resize(out.len() + (start - at) as usize, 0);
            let (a, b) = (
                (start % PAGE_BYTES) as usize,
                (stop - page * PAGE_BYTES) as usize,
            );
            match p {
                Page::Fill(v) => out.resize(out.len() + (b - a), *v),
                Page::Bytes { bytes, .. } => page_bytes(out, bytes, a, b),
            }
            at = stop;
        }
        out.resize(out.len() + (end - at) as usize, 0);
    }

    /// The pages that hold data among those bytes `offset .. end` touch, in order. A span
    /// inside one page is one look-up of the index.
    fn written_in(&self, offset: u64, end: u64) -> impl Iterator<Item = (u64, &Page)> {
        let pages = offset / PAGE_BYTES..end.div_ceil(PAGE_BYTES);
        let (one, many) = if pages.end - pages.start == 1 {
            let page = pages.start;
            (self.pages.get(page).map(|p| (page, p)), None)
        } else {
            (None, Some(self.pages.range(pages)))
        };
        one.into_iter().chain(many.into_iter().flatten())
    }

    pub fn read(&self, offset: u64, out: &mut [u8]) {
        let mut v = Vec::with_capacity(out.len());
        self.read_into(offset, out.len() as u64, &mut v);
        out.copy_from_slice(&v);
    }

    /// Change `offset .. offset + len` page by page: `f(page, first byte, end byte, bytes
    /// done before this page)`.
    fn each_page(offset: u64, len: u64, mut f: impl FnMut(u64, usize, usize, usize)) {
        let end = offset + len;
        let mut at = offset;
        while at < end {
            let page = at / PAGE_BYTES;
            let stop = ((page + 1) * PAGE_BYTES).min(end);
            let base = page * PAGE_BYTES;
            f(
                page,
                (at - base) as usize,
                (stop - base) as usize,
                (at - offset) as usize,
            );
            at = stop;
        }
    }

    /// The blocks of a page that bytes `a .. b` touch, as a bitmap.
    fn touched(a: usize, b: usize) -> u8 {
        let first = a as u64 / BLOCK_BYTES;
        let last = (b as u64 - 1) / BLOCK_BYTES;
        let bits = (1u16 << (last + 1)) - (1u16 << first);
        bits as u8
    }

    /// The page's bytes to change, made a `Bytes` page if it was not one.
    /// A page a reply still holds is copied first (`Arc::make_mut`).
    fn bytes_of(&mut self, page: u64) -> (&mut u8, &mut [u8]) {
        let p = self.pages.get_or_insert_with(page, || Page::Bytes {
            written: 0,
            bytes: Arc::new([0u8; PAGE_BYTES as usize]),
        });
        if let Page::Fill(v) = *p {
            *p = Page::Bytes {
                written: ALL_WRITTEN,
                bytes: Arc::new([v; PAGE_BYTES as usize]),
            };
        }
        match p {
            Page::Bytes { written, bytes } => (written, &mut Arc::make_mut(bytes)[..]),
            Page::Fill(_) => unreachable!("made bytes above"),
        }
    }

    pub fn write(&mut self, offset: u64, data: &[u8]) {
        Pages::each_page(offset, data.len() as u64, |page, a, b, done| {
            let src = &data[done..done + (b - a)];
            if b - a == PAGE_BYTES as usize {
                let first = src[0];
                if src.iter().all(|&x| x == first) {
                    self.pages.insert(page, Page::Fill(first));
                    return;
                }
            }
            let (written, bytes) = self.bytes_of(page);
            bytes[a..b].copy_from_slice(src);
            *written |= Pages::touched(a, b);
        });
    }

    /// Zeros over `offset .. offset + len`: whole blocks deallocated, partial ones written
    /// with zeros (as `Store::zero_bytes`).
    pub fn zero(&mut self, offset: u64, len: u64) {
        let end = offset + len;
        let (first_whole, end_whole) = (offset.div_ceil(PAGE_BYTES), end / PAGE_BYTES);
        if first_whole > end_whole {
            // Inside one page.
            return Pages::each_page(offset, len, |page, a, b, _| self.zero_in_page(page, a, b));
        }
        // The whole pages hold nothing afterwards: the index drops them by whole leaves and
        // tables where it can, stepping over what it does not hold (a trim of a whole 1 TiB
        // export would otherwise visit 2^28 pages), then the partial pages at either end.
        self.pages.remove_range(first_whole..end_whole);
        let head_end = first_whole * PAGE_BYTES;
        Pages::each_page(offset, head_end - offset, |page, a, b, _| {
            self.zero_in_page(page, a, b)
        });
        let tail = end_whole * PAGE_BYTES;
        Pages::each_page(tail, end - tail, |page, a, b, _| {
            self.zero_in_page(page, a, b)
        });
    }

    /// [`Pages::zero`] of bytes `a .. b` of one page.
    fn zero_in_page(&mut self, page: u64, a: usize, b: usize) {
        if b - a == PAGE_BYTES as usize {
            self.pages.remove(page);
            return;
        }
        if self.pages.get(page).is_none()
            && (a as u64).is_multiple_of(BLOCK_BYTES)
            && (b as u64).is_multiple_of(BLOCK_BYTES)
        {
            return; // whole blocks of a page never written: nothing to deallocate
        }
        let touched = Pages::touched(a, b);
        // Blocks wholly inside a..b are deallocated; the partial ones at either end are
        // written (with zeros).
        let whole_first = (a as u64).div_ceil(BLOCK_BYTES);
        let whole_end = b as u64 / BLOCK_BYTES;
        let whole = if whole_end > whole_first {
            ((1u16 << whole_end) - (1u16 << whole_first)) as u8
        } else {
            0
        };
        let (written, bytes) = self.bytes_of(page);
        bytes[a..b].fill(0);
        *written = (*written & !whole) | (touched & !whole);
        if *written == 0 {
            self.pages.remove(page);
        }
    }

    /// `offset .. offset + len` as runs of written blocks (true) and holes (false), in order,
    /// cut at block boundaries (the first and last run may be partial), as `Store::extents`.
    pub fn extents(&self, offset: u64, len: u64) -> Vec<(u64, u64, bool)> {
        let end = offset + len;
        let mut runs: Vec<(u64, u64, bool)> = Vec::new();
        let mut push = |start, stop, written| push_extent(&mut runs, start, stop, written);
        let mut at = offset;
        for (page, p) in self.written_in(offset, end) {
            let written = match p {
                Page::Fill(_) => ALL_WRITTEN,
                Page::Bytes { written, .. } => *written,
            };
            let base = page * PAGE_BYTES;
            push(at, base.max(offset), false);
            at = ((page + 1) * PAGE_BYTES).min(end);
            if written == ALL_WRITTEN {
                push(base.max(offset), at, true);
                continue;
            }
            for k in 0..BLOCKS_PER_PAGE {
                let start = (base + k * BLOCK_BYTES).max(offset);
                let stop = (base + (k + 1) * BLOCK_BYTES).min(end);
                push(start, stop, written & (1 << k) != 0);
            }
        }
        push(at, end, false);
        runs
    }
}

impl Data {
    /// Open the store for an export of `size` bytes.
    pub fn open(spec: &DataSpec, size: u64, read_only: bool) -> Result<Data> {
        let path = match spec {
            DataSpec::Memory => return Ok(Data::Memory(Pages::default())),
            DataSpec::File(p) => p,
        };
        let err = |what: String| {
            Error::bad_serve(Invalid::option_says(
                "--data",
                format!("file:{}", path.display()),
                what,
            ))
        };
        let dangling = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
            && !path.exists();
        if dangling {
            // Opening it would create the link's target, a file the user did not name.
            let target = std::fs::read_link(path).unwrap_or_default();
            return Err(err(format!(
                "a symbolic link to {}, which does not exist: expected an existing file or a new path",
                target.display()
            )));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(!read_only)
            .create(!read_only)
            .truncate(false)
            .open(path)
            .map_err(|e| err(e.to_string()))?;
        lock(&file)
            .map_err(|e| err(format!("cannot lock it ({e}): is another server using it?")))?;
        let meta = file.metadata().map_err(|e| err(e.to_string()))?;
        if !meta.is_file() {
            // A directory opens read-only; a device would report no length.
            return Err(err("not a regular file: expected a file path".into()));
        }
        let len = meta.len();
        if len == 0 && !read_only {
            file.set_len(size).map_err(|e| err(e.to_string()))?;
        } else if len != size {
            return Err(err(format!(
                "the file holds {len} bytes, the device {size}: expected a file of exactly the device's size, or a new one"
            )));
        }
        Ok(Data::File(file))
    }

    pub fn write(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        match self {
            Data::Memory(s) => {
                s.write(offset, data);
                Ok(())
            }
            Data::File(f) => f.write_all_at(data, offset),
        }
    }

    /// Zeros over `offset .. offset + len`: a hole in the file where the file system can punch
    /// one, written zeros where it cannot.
    pub fn zero(&mut self, offset: u64, len: u64) -> io::Result<()> {
        match self {
            Data::Memory(s) => {
                s.zero(offset, len);
                Ok(())
            }
            Data::File(f) => {
                if punch_hole(f, offset, len).is_ok() {
                    return Ok(());
                }
                let zeros = vec![0u8; len.min(1 << 20) as usize];
                let mut at = offset;
                while at < offset + len {
                    let n = (offset + len - at).min(zeros.len() as u64) as usize;
                    f.write_all_at(&zeros[..n], at)?;
                    at += n as u64;
                }
                Ok(())
            }
        }
    }

    pub fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        match self {
            Data::Memory(s) => {
                s.read(offset, out);
                Ok(())
            }
            Data::File(f) => f.read_exact_at(out, offset),
        }
    }

    /// Append `len` bytes from `offset` to `out`: a reply's data read straight into the reply.
    /// The memory store lends its written pages (into `lent`, see [`Pages::read_lent`]) where
    /// `lend` is set, and otherwise copies each page once, with no zeroing pass first.
    pub fn read_into(
        &self,
        offset: u64,
        len: u64,
        out: &mut Vec<u8>,
        lend: Option<&mut Lent>,
    ) -> io::Result<()> {
        match self {
            Data::Memory(s) => {
                match lend {
                    Some(lent) => s.read_lent(offset, len, out, lent),
                    None => s.read_into(offset, len, out),
                }
                Ok(())
            }
            Data::File(f) => {
                let at = out.len();
                out.resize(at + len as usize, 0);
                f.read_exact_at(&mut out[at..], offset)
            }
        }
    }

    /// Make what was written durable (a FLUSH the model completed).
    pub fn sync(&self) -> io::Result<()> {
        match self {
            Data::Memory(_) => Ok(()),
            Data::File(f) => f.sync_data(),
        }
    }

    /// `offset .. offset + len` as runs of written data (true) and holes (false). A file
    /// reports its file system's holes (a block partly written counts as data).
    pub fn extents(&self, offset: u64, len: u64) -> Vec<(u64, u64, bool)> {
        match self {
            Data::Memory(s) => s.extents(offset, len),
            Data::File(f) => {
                file_extents(f, offset, len).unwrap_or_else(|_| vec![(offset, len, true)])
            }
        }
    }
}

#[cfg(target_os = "linux")]
fn lock(f: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a file descriptor this File owns.
    let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn lock(_: &File) -> io::Result<()> {
    Ok(())
}

#[cfg(target_os = "linux")]
fn punch_hole(f: &File, offset: u64, len: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let (Ok(o), Ok(l)) = (i64::try_from(offset), i64::try_from(len)) else {
        return Err(io::ErrorKind::InvalidInput.into());
    };
    // SAFETY: fallocate on a file descriptor this File owns; the range is checked above.
    let r = unsafe {
        libc::fallocate(
            f.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            o,
            l,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn punch_hole(_: &File, _: u64, _: u64) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

/// The file's data and holes over a range, by SEEK_DATA / SEEK_HOLE.
#[cfg(target_os = "linux")]
fn file_extents(f: &File, offset: u64, len: u64) -> io::Result<Vec<(u64, u64, bool)>> {
    use std::os::fd::AsRawFd;
    let fd = f.as_raw_fd();
    let end = offset + len;
    let seek = |at: u64, whence| -> io::Result<Option<u64>> {
        let at = i64::try_from(at).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: lseek on a file descriptor this File owns; read_at/write_at take explicit
        // offsets, so moving the file position disturbs nothing.
        let r = unsafe { libc::lseek(fd, at, whence) };
        if r >= 0 {
            return Ok(Some(r as u64));
        }
        let e = io::Error::last_os_error();
        // ENXIO: no data at or after `at`.
        if e.raw_os_error() == Some(libc::ENXIO) {
            Ok(None)
        } else {
            Err(e)
        }
    };
    let mut runs = Vec::new();
    let mut at = offset;
    while at < end {
        let data = seek(at, libc::SEEK_DATA)?.unwrap_or(end).min(end);
        if data > at {
            runs.push((at, data - at, false));
        }
        if data >= end {
            break;
        }
        let hole = seek(data, libc::SEEK_HOLE)?.unwrap_or(end).min(end);
        runs.push((data, hole - data, true));
        at = hole;
    }
    Ok(runs)
}

#[cfg(not(target_os = "linux"))]
fn file_extents(_: &File, offset: u64, len: u64) -> io::Result<Vec<(u64, u64, bool)>> {
    Ok(vec![(offset, len, true)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::store::Store;
    use proptest::prelude::*;

    proptest! {
        /// The page store against the block store it replaced (512-byte blocks): the same
        /// bytes and the same extents after any writes (of one value or of varied bytes) and
        /// zeroes at any alignment, across page boundaries.
        #[test]
        fn pages_read_and_report_extents_as_the_block_store(
            ops in proptest::collection::vec(
                (0u8..4, 0u64..20_000, 1u64..9_000, any::<u8>()), 1..40)
        ) {
            const SIZE: u64 = 24_576;
            let mut pages = Pages::default();
            let mut blocks = Store::new(BLOCK_BYTES as usize);
            for (kind, offset, len, v) in ops {
                let len = len.min(SIZE - offset);
                match kind {
                    // A run of one value (a whole page of it is a fill page).
                    0 => {
                        let data = vec![v; len as usize];
                        pages.write(offset, &data);
                        blocks.write_bytes(offset, &data);
                    }
                    1 => {
                        let data: Vec<u8> = (0..len).map(|i| v.wrapping_add(i as u8)).collect();
                        pages.write(offset, &data);
                        blocks.write_bytes(offset, &data);
                    }
                    2 => {
                        pages.zero(offset, len);
                        blocks.zero_bytes(offset, len);
                    }
                    _ => {
                        let mut want = vec![0u8; len as usize];
                        blocks.read_bytes(offset, &mut want);
                        let mut got = vec![7u8; 3];
                        pages.read_into(offset, len, &mut got);
                        prop_assert_eq!(&got[..3], &[7u8; 3]);
                        prop_assert_eq!(&got[3..], &want[..]);
                        // Lent rather than copied, the same bytes in the same places.
                        let (mut head, mut lent) = (vec![7u8; 3], Lent::new());
                        pages.read_lent(offset, len, &mut head, &mut lent);
                        prop_assert_eq!(joined(&head, &lent), got);
                        prop_assert_eq!(pages.extents(offset, len), blocks.extents(offset, len));
                    }
                }
            }
            let (mut all, mut want) = (vec![0u8; SIZE as usize], vec![0u8; SIZE as usize]);
            pages.read(0, &mut all);
            blocks.read_bytes(0, &mut want);
            prop_assert_eq!(all, want);
            prop_assert_eq!(pages.extents(0, SIZE), blocks.extents(0, SIZE));
            prop_assert_eq!(pages.extents(100, SIZE - 200), blocks.extents(100, SIZE - 200));
        }
    }

    /// A reply's bytes as they go out: `head` with each lent page put in at its place.
    fn joined(head: &[u8], lent: &Lent) -> Vec<u8> {
        let mut out = Vec::new();
        let mut at = 0;
        for (place, page) in lent {
            out.extend_from_slice(&head[at..*place]);
            out.extend_from_slice(page.bytes());
            at = *place;
        }
        out.extend_from_slice(&head[at..]);
        out
    }

    /// A page lent to a reply keeps the bytes it had when it was read: a write, a partial
    /// zero or a trim that comes after, before the reply is sent, changes the store alone.
    #[test]
    fn a_lent_page_keeps_what_was_read_while_the_store_changes() {
        let mut pages = Pages::default();
        let data: Vec<u8> = (0..3 * PAGE_BYTES).map(|i| (i % 251) as u8).collect();
        pages.write(0, &data);
        let (mut head, mut lent) = (Vec::new(), Lent::new());
        pages.read_lent(100, 2 * PAGE_BYTES, &mut head, &mut lent);
        assert_eq!(lent.len(), 3, "three pages lent, none copied");
        assert!(head.is_empty());
        pages.write(200, &[0xAA; 5000]);
        pages.zero(PAGE_BYTES + 10, 20);
        pages.zero(0, 3 * PAGE_BYTES);
        let want = &data[100..(100 + 2 * PAGE_BYTES) as usize];
        assert_eq!(joined(&head, &lent), want);
        let mut now = vec![1u8; 64];
        pages.read(0, &mut now);
        assert_eq!(now, vec![0u8; 64], "the store itself changed");
    }

    /// Zeroing a whole 1 TiB export (a client's trim of the drive) drops what was written, by
    /// the map's range: the whole pages go, the partial ones at either end keep their other
    /// bytes.
    #[test]
    fn zeroing_a_whole_export_drops_what_was_written() {
        let mut pages = Pages::default();
        for at in [0u64, 1 << 30, (1 << 40) - 4096] {
            pages.write(at, &vec![9u8; 8192.min(((1u64 << 40) - at) as usize)]);
        }
        pages.zero(512, (1 << 40) - 1024);
        let mut ends = vec![0u8; 512];
        pages.read(0, &mut ends);
        assert_eq!(ends, vec![9u8; 512]);
        pages.read((1 << 40) - 512, &mut ends);
        assert_eq!(ends, vec![9u8; 512]);
        assert_eq!(
            pages.pages.range(0..u64::MAX).count(),
            2,
            "{:?}",
            pages
                .pages
                .range(0..u64::MAX)
                .map(|(p, _)| p)
                .collect::<Vec<_>>()
        );
        assert_eq!(
            pages.extents(512, (1 << 40) - 1024),
            vec![(512, (1 << 40) - 1024, false)]
        );
    }

    #[test]
    fn a_dangling_symbolic_link_is_refused_and_its_target_not_created() {
        // Issue 45, defect 7: opening it created the link's target, a file the user never named.
        let dir = std::env::temp_dir().join(format!("ssdlab-dangling-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let link = dir.join("disk.img");
        let target = dir.join("elsewhere.img");
        let _ = std::fs::remove_file(&link);
        let _ = std::fs::remove_file(&target);
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let spec = DataSpec::parse(&format!("file:{}", link.display())).unwrap();
        let e = Data::open(&spec, 4 << 20, false).err().unwrap().to_string();
        assert!(
            e.contains("symbolic link") && e.contains("elsewhere.img"),
            "{e}"
        );
        assert!(!target.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_store_keeps_data_across_opens_and_reports_its_holes() {
        let dir = std::env::temp_dir().join(format!("ssdlab-data-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("disk.img");
        let _ = std::fs::remove_file(&path);
        let spec = DataSpec::parse(&format!("file:{}", path.display())).unwrap();
        let size = 4 << 20;
        {
            let mut d = Data::open(&spec, size, false).unwrap();
            // A second server on the same file is refused.
            assert!(Data::open(&spec, size, false).is_err());
            d.write(1 << 20, &[0xab; 8192]).unwrap();
            d.write(3 << 20, &[0xcd; 4096]).unwrap();
            d.zero((3 << 20) + 4096, 4096).unwrap();
            d.sync().unwrap();
        }
        let d = Data::open(&spec, size, true).unwrap();
        let mut b = vec![0u8; 8192];
        d.read(1 << 20, &mut b).unwrap();
        assert!(b.iter().all(|&x| x == 0xab));
        d.read(3 << 20, &mut b).unwrap();
        assert!(b[..4096].iter().all(|&x| x == 0xcd) && b[4096..].iter().all(|&x| x == 0));
        let runs = d.extents(0, size);
        assert_eq!(runs.iter().map(|r| r.1).sum::<u64>(), size);
        assert_eq!(runs[0], (0, 1 << 20, false));
        assert!(runs.iter().any(|&(o, _, data)| data && o == 1 << 20));
        // A file of another size is refused, naming both sizes.
        drop(d);
        let e = Data::open(&spec, size * 2, false)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains(&size.to_string()) && e.contains(&(size * 2).to_string()),
            "{e}"
        );
        assert!(DataSpec::parse("disk:/x").is_err());
        let e = Data::open(&DataSpec::File(dir.clone()), size, true)
            .err()
            .unwrap();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
