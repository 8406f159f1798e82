//! Hints to the hardware and the kernel: they change how fast memory
//! answers, never what a program computes.
//!
//! **Prefetch: ask the CPU for a cache line before it is read.** A frame
//! in a large network reaches hundreds of receivers scattered over the
//! nodes' state; each arrival would otherwise wait on memory (issue 28).
//! The simulator knows the next arrivals (a frame's batch in the event
//! queue), so it asks for their receivers' state a few events ahead.
//!
//! **Huge pages: ask the kernel to back a large table with 2 MiB pages.**
//! In a 6400-node grid every event reads a different node's state, so
//! nearly every one needs a translation the TLB does not hold (about 1,700
//! pages of 4 KiB for the nodes alone). Backed by huge pages, the 6400-node
//! grid ran about 4% faster (glibc's `glibc.malloc.hugetlb=1`, issue 28).
//!
//! Stable Rust offers both only as `unsafe` (`_mm_prefetch` takes a raw
//! pointer, `core::hint::prefetch_read` is nightly-only; `madvise` takes an
//! address range, as some of its advice frees memory), so this module is
//! the crate's one exception to `unsafe_code`: a prefetch never
//! dereferences its address, cannot fault and changes no value any load
//! returns; `MADV_HUGEPAGE` changes only which pages back a range, never
//! what it holds; and here both addresses come from a reference or an
//! allocation the caller owns. Elsewhere than x86_64 (prefetch) and Linux
//! (huge pages) they do nothing.

#![allow(unsafe_code)]

/// Asks for every cache line that holds one of the first `bytes` bytes
/// of `*value` (at least its first), for reading, into every cache level.
/// A hint: it changes nothing a program computes.
#[inline(always)]
pub fn prefetch_read<T: ?Sized>(value: &T, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let start = (value as *const T).cast::<i8>();
        for line in 0..lines_holding(start as usize, bytes) {
            // SAFETY: `prefetcht0` never dereferences its operand, cannot
            // fault on any address and has no architectural effect;
            // `wrapping_add` makes no claim about the address either.
            unsafe {
                core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                    start.wrapping_add(line * CACHE_LINE_BYTES),
                );
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (value, bytes);
}

/// The span of a huge page on x86_64 and arm64 Linux (the default size).
const HUGE_PAGE_BYTES: usize = 2 << 20;

/// Asks the kernel to back the whole 2 MiB spans of `table` with huge
/// pages, now and from then on: `madvise(MADV_HUGEPAGE)`, then
/// `MADV_COLLAPSE` (Linux 6.1 and later), which moves pages already in use
/// onto huge ones (a table is usually built in memory the allocator had
/// already handed out, whose small pages the first advice alone would leave
/// as they are). A kernel without either leaves the table as it was. For
/// tables of megabytes read all over at every event; only whole spans are
/// named, so a smaller one gains nothing.
pub fn move_to_huge_pages<T>(table: &mut [T]) {
    #[cfg(target_os = "linux")]
    {
        let (start, bytes) = (table.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(table));
        let Some((skip, span)) = whole_huge_pages(start as usize, bytes) else { return };
        let first = start.wrapping_add(skip).cast::<libc::c_void>();
        for advice in [libc::MADV_HUGEPAGE, libc::MADV_COLLAPSE] {
            // SAFETY: neither advice changes what the range holds or
            // whether it may be accessed, only which pages back it (a
            // collapse copies the contents onto a huge page and maps it in
            // their place, atomically for every reader); the range lies
            // inside `table`, which the caller holds exclusively. Advice
            // the kernel refuses (huge pages off, an older kernel, no free
            // huge page) leaves the table on the pages it had.
            let _ = unsafe { libc::madvise(first, span, advice) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = table;
}

/// The whole huge pages inside `bytes` bytes from `address`: how far the
/// first starts from `address`, and how many bytes they span together.
fn whole_huge_pages(address: usize, bytes: usize) -> Option<(usize, usize)> {
    let first = address.checked_next_multiple_of(HUGE_PAGE_BYTES)?;
    let end = address.checked_add(bytes)? / HUGE_PAGE_BYTES * HUGE_PAGE_BYTES;
    (end > first).then(|| (first - address, end - first))
}

/// The cache line of today's x86 cores.
pub const CACHE_LINE_BYTES: usize = 64;

/// How many cache lines hold the `bytes` bytes from `address` (at least
/// one: the line of `address` itself).
fn lines_holding(address: usize, bytes: usize) -> usize {
    (address % CACHE_LINE_BYTES + bytes.max(1)).div_ceil(CACHE_LINE_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lines_asked_for_run_from_the_first_byte_s_to_the_last_byte_s() {
        assert_eq!(lines_holding(0, 64), 1);
        assert_eq!(lines_holding(0, 65), 2);
        assert_eq!(lines_holding(32, 64), 2);
        assert_eq!(lines_holding(63, 1), 1);
        assert_eq!(lines_holding(63, 2), 2);
        assert_eq!(lines_holding(128, 0), 1);
        // A node's first 176 bytes: 3 lines from a line's start, 4 from
        // its middle.
        assert_eq!(lines_holding(4096, 176), 3);
        assert_eq!(lines_holding(4096 + 32, 176), 4);
    }

    #[test]
    fn huge_pages_are_asked_for_only_where_whole_ones_fit() {
        const H: usize = HUGE_PAGE_BYTES;
        assert_eq!(whole_huge_pages(0, H), Some((0, H)));
        assert_eq!(whole_huge_pages(0, H - 1), None);
        assert_eq!(whole_huge_pages(16, 3 * H), Some((H - 16, 2 * H)));
        assert_eq!(whole_huge_pages(16, 2 * H - 16), Some((H - 16, H)));
        assert_eq!(whole_huge_pages(16, 2 * H - 17), None);
        assert_eq!(whole_huge_pages(usize::MAX - 10, 5), None);
    }

    /// A table moved to huge pages holds what it held; on Linux its
    /// memory's mapping carries the advice (`hg` among the flags in
    /// `/proc/self/smaps`; whether a collapse found a free huge page is
    /// up to the machine).
    #[test]
    fn a_table_moved_to_huge_pages_holds_what_it_held_and_carries_the_advice() {
        let count = (5 * HUGE_PAGE_BYTES) / 8;
        let mut values: Vec<u64> = (0..count as u64).collect();
        move_to_huge_pages(&mut values);
        assert!(values.iter().enumerate().all(|(i, &v)| v == i as u64));
        #[cfg(target_os = "linux")]
        if std::path::Path::new("/sys/kernel/mm/transparent_hugepage").exists() {
            let (skip, _) = whole_huge_pages(values.as_ptr() as usize, count * 8).expect("five spans hold a whole one");
            let inside = values.as_ptr() as usize + skip;
            let smaps = std::fs::read_to_string("/proc/self/smaps").expect("Linux has /proc/self/smaps");
            let flags = mapping_flags(&smaps, inside).expect("the table's memory is mapped");
            assert!(flags.split_whitespace().any(|f| f == "hg"), "no huge-page advice: {flags}");
        } else {
            eprintln!("skipped the advice check: this kernel has no transparent huge pages");
        }
    }

    /// The `VmFlags` line of the mapping that holds `address` in a
    /// `/proc/<pid>/smaps` text.
    #[cfg(target_os = "linux")]
    fn mapping_flags(smaps: &str, address: usize) -> Option<String> {
        let mut inside = false;
        for line in smaps.lines() {
            let range = line.split_whitespace().next().and_then(|r| r.split_once('-'));
            let bounds =
                range.and_then(|(a, b)| Some((usize::from_str_radix(a, 16).ok()?, usize::from_str_radix(b, 16).ok()?)));
            if let Some((start, end)) = bounds.filter(|_| !line.starts_with("VmFlags")) {
                inside = (start..end).contains(&address);
            } else if inside && line.starts_with("VmFlags:") {
                return Some(line.to_string());
            }
        }
        None
    }

    #[test]
    fn a_prefetch_leaves_every_value_as_it_was() {
        let values: Vec<u64> = (0..1024).collect();
        // Past the end too: the hint may name lines the value does not own.
        prefetch_read(&values[1020], 256);
        prefetch_read(values.as_slice(), 3 * CACHE_LINE_BYTES);
        assert_eq!(values, (0..1024).collect::<Vec<u64>>());
    }
}
