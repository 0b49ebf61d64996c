//! Large tables (the FTL's maps: a gigabyte each for a 1 TiB drive) are read at random; with
//! 4 KiB pages nearly every access also misses the TLB. On Linux we ask for transparent huge
//! pages before the table is first touched. Elsewhere, or if the kernel says no, it is a plain
//! vector: only speed differs, never results.

/// A vector of `n` copies of `value`, backed by huge pages where the OS allows.
pub fn big_vec<T: Copy>(n: usize, value: T) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(n);
    advise_huge_range(v.as_mut_ptr() as *mut u8, n * std::mem::size_of::<T>());
    v.resize(n, value);
    v
}

/// A vector of `n` zeros, allocated zeroed so that the OS backs a page with memory only when
/// it is first written (reads of untouched pages share the zero page).
pub fn zeroed_vec<T: Zeroed>(n: usize) -> Vec<T> {
    // `vec![0; n]` of an integer type asks the allocator for zeroed memory (calloc), which for
    // a large block is a fresh mapping left untouched.
    vec![T::ZERO; n]
}

/// Types for which all zero bytes are a valid value (the one a fresh table holds), the ones
/// [`zero_bytes_vec`] takes.
///
/// # Safety
/// Every field must be an integer, or an enum whose zero discriminant is a variant.
pub unsafe trait ZeroBytes: Copy {}

/// [`zeroed_vec`] for a record type: `n` values of all zero bytes, allocated zeroed so that the
/// OS backs a page with memory only when it is first written.
pub fn zero_bytes_vec<T: ZeroBytes>(n: usize) -> Vec<T> {
    let layout = std::alloc::Layout::array::<T>(n).expect("a table that fits the address space");
    if layout.size() == 0 {
        return Vec::new();
    }
    // SAFETY: the layout is a non-empty array of `n` T, as a `Vec<T>` of capacity `n` has;
    // the memory is zeroed, which `ZeroBytes` says is a valid T; a null pointer is handled.
    unsafe {
        let ptr = std::alloc::alloc_zeroed(layout) as *mut T;
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        Vec::from_raw_parts(ptr, n, n)
    }
}

/// Back the pages of `v` not yet touched by huge pages where the OS allows: faster random
/// access, but memory grows 2 MiB at a time.
pub fn advise_huge<T>(v: &mut [T]) {
    advise_huge_range(v.as_mut_ptr() as *mut u8, std::mem::size_of_val(v));
}

/// Integer types whose zero is all zero bytes, the ones [`zeroed_vec`] takes.
pub trait Zeroed: Copy {
    const ZERO: Self;
}
impl Zeroed for u8 {
    const ZERO: Self = 0;
}
impl Zeroed for u32 {
    const ZERO: Self = 0;
}
impl Zeroed for u64 {
    const ZERO: Self = 0;
}

#[cfg(target_os = "linux")]
fn advise_huge_range(ptr: *mut u8, bytes: usize) {
    const HUGE: usize = 2 << 20;
    if bytes < 4 * HUGE {
        return;
    }
    let start = (ptr as usize).next_multiple_of(HUGE);
    let end = (ptr as usize + bytes) / HUGE * HUGE;
    if end > start {
        // SAFETY: the range lies inside the allocation just made for `v`; MADV_HUGEPAGE only
        // changes how the kernel backs it, not its contents or validity.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_range(_ptr: *mut u8, _bytes: usize) {}

/// A table's pages, for counting what it holds: 4 KiB of entries each (whole entries, at
/// least one), counted from the table's start, so that the count does not depend on where
/// the table lies in memory.
const TABLE_PAGE_BYTES: usize = 4096;

/// Bytes of `v` in pages that hold anything a run wrote: the [`TABLE_PAGE_BYTES`] pages of
/// entries with at least one that is not `fresh` (the value the table was allocated with).
/// A zeroed table the run wrote a few entries of counts those entries' pages, whatever the OS
/// maps: a page only read (which Linux maps to its shared zero page, costing no memory) holds
/// nothing written, so it counts nothing. The same on every machine. Pages the OS never backed
/// hold nothing written and are skipped without being read (`mincore`, Linux), so counting a
/// large table the run barely touched is quick and backs nothing.
pub fn written_bytes<T>(v: &[T], fresh: impl Fn(&T) -> bool) -> u64 {
    let size = std::mem::size_of::<T>();
    if size == 0 || v.is_empty() {
        return 0;
    }
    let per_page = (TABLE_PAGE_BYTES / size).max(1);
    let resident = Resident::of(v);
    v.chunks(per_page)
        .filter(|page| resident.as_ref().is_none_or(|r| r.any(page)))
        // In runs of 64 entries, each tested whole (which compiles to vector compares) and the
        // page left at the first run holding anything: an untouched page is read through
        // quickly, a written one mostly at its start.
        .filter(|page| {
            page.chunks(64)
                .any(|run| run.iter().fold(false, |any, e| any | !fresh(e)))
        })
        .map(|page| std::mem::size_of_val(page) as u64)
        .sum()
}

/// Which OS pages of a slice the OS has backed (`mincore`).
struct Resident {
    first_page: usize,
    page: usize,
    pages: Vec<u8>,
}

impl Resident {
    #[cfg(target_os = "linux")]
    fn of<T>(v: &[T]) -> Option<Resident> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        let page = usize::try_from(page).ok().filter(|&p| p > 0)?;
        let addr = v.as_ptr() as usize;
        let start = addr / page * page;
        let end = (addr + std::mem::size_of_val(v)).div_ceil(page) * page;
        let mut pages = vec![0u8; (end - start) / page];
        // SAFETY: [start, end) covers the pages of a live allocation (the slice's), and
        // `pages` has one byte per page, as mincore writes.
        let rc =
            unsafe { libc::mincore(start as *mut libc::c_void, end - start, pages.as_mut_ptr()) };
        (rc == 0).then_some(Resident {
            first_page: start / page,
            page,
            pages,
        })
    }

    #[cfg(not(target_os = "linux"))]
    fn of<T>(_v: &[T]) -> Option<Resident> {
        None
    }

    /// Whether any OS page under `part` is backed.
    fn any<T>(&self, part: &[T]) -> bool {
        let addr = part.as_ptr() as usize;
        let first = addr / self.page - self.first_page;
        let last = (addr + std::mem::size_of_val(part)).div_ceil(self.page) - self.first_page;
        self.pages[first..last].iter().any(|&b| b & 1 == 1)
    }
}

/// Have the OS back every page of `v` now (zeroed, as it would on first touch), in one call
/// rather than one fault per page in the middle of a timed run. For tables a run is about to
/// touch all over. Speed only: a kernel without it (before Linux 5.14) or another OS leaves
/// the pages to be backed on first touch as before.
pub fn prefault<T>(v: &mut [T]) {
    #[cfg(target_os = "linux")]
    {
        // Linux's uapi value (include/uapi/asm-generic/mman-common.h, since 5.14).
        const MADV_POPULATE_WRITE: libc::c_int = 23;
        let page = 4096;
        let start = (v.as_mut_ptr() as usize).next_multiple_of(page);
        let end = (v.as_mut_ptr() as usize + std::mem::size_of_val(v)) / page * page;
        if end > start {
            // SAFETY: the range lies inside `v`'s allocation; populating pages does not change
            // their contents (the zeroes the OS hands out, or what was written) or validity.
            // An error (an old kernel, no memory to back it now) is left to first touch.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, MADV_POPULATE_WRITE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = v;
}

/// Hint that `slice[index]` will be read soon, so its cache line can be on its way while other
/// events run. Out-of-range indices are ignored. No effect on results.
#[inline(always)]
pub fn prefetch<T>(slice: &[T], index: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(item) = slice.get(index) {
        // SAFETY: the pointer comes from a live reference; prefetch never faults.
        unsafe {
            std::arch::x86_64::_mm_prefetch(
                item as *const T as *const i8,
                std::arch::x86_64::_MM_HINT_T0,
            );
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (slice, index);
}

/// Memory this machine can give a new allocation without swapping, in bytes: `MemAvailable`
/// of /proc/meminfo (Linux); None where the OS does not tell it.
pub fn available_bytes() -> Option<u64> {
    proc_kib_field("/proc/meminfo", "MemAvailable:")
}

/// A `KEY: N kB` line of a /proc file (`/proc/meminfo`, `/proc/self/status`), in bytes.
pub fn proc_kib_field(path: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// Tables that do not fit the memory this machine has available: both figures, in bytes.
/// (The engine knows no config: the caller names the tables and what to change.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLarge {
    /// Bytes the tables need.
    pub need: u64,
    /// Bytes available (`MemAvailable` of /proc/meminfo).
    pub available: u64,
}

impl TooLarge {
    /// What the tables need, as a message shows it: `34.0 GiB (36507222016 bytes)`.
    pub fn need_text(&self) -> String {
        format!("{} ({} bytes)", gib(self.need), self.need)
    }

    /// What is available, as a message shows it, and where the figure comes from.
    pub fn available_text(&self) -> String {
        format!(
            "the {} ({} bytes) of memory this machine has available (MemAvailable in \
             /proc/meminfo)",
            gib(self.available),
            self.available
        )
    }
}

/// Whether tables of `need` bytes fit in `available` bytes (always, when the OS does not say);
/// the error holds both.
pub fn check_fits(need: u64, available: Option<u64>) -> std::result::Result<(), TooLarge> {
    match available {
        Some(available) if need > available => Err(TooLarge { need, available }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod fit_tests {
    use super::*;

    #[test]
    fn tables_larger_than_the_available_memory_are_refused_naming_both() {
        assert!(check_fits(1 << 30, Some(2 << 30)).is_ok());
        assert!(check_fits(u64::MAX, None).is_ok());
        let e = check_fits(34 << 30, Some(24 << 30)).unwrap_err();
        assert_eq!((e.need, e.available), (34 << 30, 24 << 30));
        assert_eq!(e.need_text(), "34.0 GiB (36507222016 bytes)");
        let a = e.available_text();
        assert!(a.contains("24.0 GiB (25769803776 bytes)"), "{a}");
        assert!(a.contains("MemAvailable"), "{a}");
    }
}

#[cfg(test)]
mod written_tests {
    use super::*;

    #[test]
    fn a_zeroed_table_counts_only_the_pages_written() {
        // 64 MiB of zeros from calloc: a fresh mapping, nothing written.
        let mut v: Vec<u64> = zeroed_vec(8 << 20);
        let zero = |&w: &u64| w == 0;
        // Reading every 512th word maps pages (the shared zero page) but writes nothing.
        let read: u64 = (0..v.len()).step_by(512).map(|i| v[i]).sum();
        assert_eq!((read, written_bytes(&v, zero)), (0, 0));
        // One word in each of the first 1,000 pages of 512 words, and the last word.
        for i in 0..1000 {
            v[i * 512 + 7] = 1;
        }
        *v.last_mut().unwrap() = 1;
        assert_eq!(written_bytes(&v, zero), 1001 * 4096);
        // A page written back to its fresh value holds nothing.
        v[7] = 0;
        assert_eq!(written_bytes(&v, zero), 1000 * 4096);
        assert_eq!(written_bytes::<u64>(&[], zero), 0);
    }

    #[derive(Clone, Copy, Debug, PartialEq)]
    struct Rec {
        a: u64,
        b: u8,
    }
    // SAFETY: integer fields only.
    unsafe impl ZeroBytes for Rec {}

    #[test]
    fn records_allocated_zeroed_read_as_zero_and_count_whole_records_per_page() {
        let mut v: Vec<Rec> = zero_bytes_vec(1000);
        assert!(v.iter().all(|r| *r == Rec { a: 0, b: 0 }));
        let fresh = |r: &Rec| r.a == 0 && r.b == 0;
        assert_eq!(written_bytes(&v, fresh), 0);
        // 16-byte records, 256 a page: record 900 is in the fourth page, the last (232).
        v[900].b = 1;
        assert_eq!(written_bytes(&v, fresh), 232 * 16);
        v[0].a = 1;
        assert_eq!(written_bytes(&v, fresh), (256 + 232) * 16);
        assert!(zero_bytes_vec::<Rec>(0).is_empty());
    }
}
