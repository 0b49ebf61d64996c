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

/// Bytes of `v` that are resident in memory: the pages the OS has mapped (`mincore`), so that a
/// zeroed table the run never touched counts nothing. A page only read counts too (Linux maps
/// its shared zero page there, which costs no memory of its own). Where the OS cannot say, the
/// slice's whole size. Pages shared with neighbouring allocations count whole.
pub fn resident_bytes<T>(v: &[T]) -> u64 {
    let bytes = std::mem::size_of_val(v);
    if bytes == 0 {
        return 0;
    }
    resident_range(v.as_ptr() as usize, bytes).unwrap_or(bytes as u64)
}

#[cfg(target_os = "linux")]
fn resident_range(addr: usize, bytes: usize) -> Option<u64> {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let page = usize::try_from(page).ok().filter(|&p| p > 0)?;
    let start = addr / page * page;
    let end = (addr + bytes).div_ceil(page) * page;
    let pages = (end - start) / page;
    let mut vec = vec![0u8; pages];
    // SAFETY: [start, end) covers the pages of a live allocation (the slice's), and `vec` has
    // one byte per page, as mincore writes.
    let rc = unsafe { libc::mincore(start as *mut libc::c_void, end - start, vec.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    let resident = vec.iter().filter(|&&b| b & 1 == 1).count();
    Some((resident * page).min(end - start) as u64)
}

#[cfg(not(target_os = "linux"))]
fn resident_range(_addr: usize, _bytes: usize) -> Option<u64> {
    None
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

/// Whether tables of `need` bytes fit in `available` bytes (always, when the OS does not say);
/// the error names both.
pub fn check_fits(need: u64, available: Option<u64>) -> std::result::Result<(), String> {
    match available {
        Some(avail) if need > avail => Err(format!(
            "the drive's FTL tables (map, reverse map, block records) need about {} ({need} \
             bytes), more than the {} ({avail} bytes) of memory this machine has available \
             (MemAvailable in /proc/meminfo); choose a smaller geometry or a larger \
             ftl.map_unit",
            gib(need),
            gib(avail),
        )),
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
        assert!(e.contains("34.0 GiB") && e.contains("24.0 GiB"), "{e}");
        assert!(e.contains("MemAvailable"), "{e}");
    }
}

#[cfg(all(test, target_os = "linux"))]
mod resident_tests {
    use super::*;

    #[test]
    fn a_zeroed_table_is_resident_only_where_written() {
        // 64 MiB of zeros from calloc: a fresh mapping, nothing resident until written.
        let mut v: Vec<u64> = zeroed_vec(8 << 20);
        let untouched = resident_bytes(&v);
        assert!(untouched < 1 << 20, "{untouched}");
        // Write one word in each of the first 1,000 pages (4 KiB or larger pages).
        for i in 0..1000 {
            v[i * 512] = 1;
        }
        let touched = resident_bytes(&v);
        assert!(touched >= 1000 * 4096, "{touched}");
        assert_eq!(resident_bytes::<u64>(&[]), 0);
    }
}
