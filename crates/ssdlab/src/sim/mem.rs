//! Large tables (the FTL's maps: a gigabyte each for a 1 TiB drive) are read at random; with
//! 4 KiB pages nearly every access also misses the TLB. On Linux we ask for transparent huge
//! pages before the table is first touched. Elsewhere, or if the kernel says no, it is a plain
//! vector: only speed differs, never results.

/// A vector of `n` copies of `value`, backed by huge pages where the OS allows.
pub fn big_vec<T: Copy>(n: usize, value: T) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(n);
    advise_huge(v.as_mut_ptr() as *mut u8, n * std::mem::size_of::<T>());
    v.resize(n, value);
    v
}

#[cfg(target_os = "linux")]
fn advise_huge(ptr: *mut u8, bytes: usize) {
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
fn advise_huge(_ptr: *mut u8, _bytes: usize) {}

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
