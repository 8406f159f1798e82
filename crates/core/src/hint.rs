//! A prefetch hint: ask the CPU for a cache line before it is read.
//!
//! A frame in a large network reaches hundreds of receivers scattered over
//! the nodes' state; each arrival would otherwise wait on memory (issue
//! 28). The simulator knows the next arrivals (a frame's batch in the event
//! queue), so it asks for their receivers' state a few events ahead.
//!
//! Stable Rust offers the instruction only as `unsafe`
//! (`core::arch::x86_64::_mm_prefetch`: it takes a raw pointer;
//! `core::hint::prefetch_read` is nightly-only), so this module is the
//! crate's one exception to `unsafe_code`: a prefetch never dereferences
//! its address, cannot fault and changes no value any load returns, and
//! here the address comes from a reference, so it is even valid. Elsewhere
//! than x86_64 it does nothing.

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
    fn a_prefetch_leaves_every_value_as_it_was() {
        let values: Vec<u64> = (0..1024).collect();
        // Past the end too: the hint may name lines the value does not own.
        prefetch_read(&values[1020], 256);
        prefetch_read(values.as_slice(), 3 * CACHE_LINE_BYTES);
        assert_eq!(values, (0..1024).collect::<Vec<u64>>());
    }
}
