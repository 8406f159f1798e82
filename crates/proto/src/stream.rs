//! The application side of a sender: the bytes it holds and the commit
//! confirmation that ends a transfer.
//!
//! A sender does not own a whole transfer: it holds a bounded window of the
//! byte stream, `[released, written)`, that the application refills with
//! [`SendStream::write`] as the peer acknowledges data, and the stream's end
//! once the application calls [`SendStream::finish`] (quinn-proto's
//! `SendStream`). Memory is then bounded by the window, not by the
//! transfer: `meshbed send` streams a 10 GiB file through a few MiB, and the
//! simulator, which writes a whole flow at once, keeps its old behaviour.
//!
//! A commit confirmation ([`COMMIT_TOKEN_LEN`] bytes, carried as the payload
//! of the acknowledgement that covers the FIN) lets a receiver prove that it
//! committed what it received: the file runtime's receiver puts the SHA-256
//! it computed over the received bytes there, and the sender reports
//! `Finished` only when the token equals the hash it announced. Without the
//! data nobody can produce the token, so a forged final acknowledgement
//! cannot end a transfer in success (issue 9; docs/PROTOCOLS.md §6).
//!
//! While the application has not committed yet (a slow reader still
//! drains the receive buffer: `meshbed recv --rate`), each acknowledgement
//! that would cover the FIN covers only the data and carries a drain report
//! instead ([`DRAIN_REPORT_LEN`] bytes: how far the application has read),
//! so that the sender's wait for the confirmation runs from the reader's
//! last progress rather than from the last byte's arrival (issue 26: the
//! sender had reported failure for a file its receiver then committed).

use crate::engine::Engine;
use meshbed_core::{Duration, Instant};
use std::collections::VecDeque;

/// Bytes of a commit confirmation token.
pub const COMMIT_TOKEN_LEN: usize = 32;

/// A commit confirmation token.
pub type CommitToken = [u8; COMMIT_TOKEN_LEN];

/// Bytes of a drain report: the stream offset the application has read up
/// to, big-endian.
pub const DRAIN_REPORT_LEN: usize = 8;

/// The offset a drain report carries, if `payload` is one.
pub(crate) fn drain_report(payload: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(payload.try_into().ok()?))
}

/// What a driver can do with a sender besides the [`Engine`] surface.
pub trait SendStream: Engine {
    /// Appends bytes to the stream; returns how many were taken (fewer than
    /// `data.len()` when the window is full; none once finished).
    fn write(&mut self, data: &[u8]) -> usize;
    /// Marks the end of the stream: the FIN follows the last written byte.
    fn finish(&mut self);
    /// Bytes `write` would take now.
    fn write_room(&self) -> usize;
    /// Requires the acknowledgement of the FIN to carry exactly `token`;
    /// until it does the transfer is not finished, and a wrong token is a
    /// protocol violation (counted, ignored).
    fn require_commit_token(&mut self, token: CommitToken);
    /// What an RST from this sender to its receiver names: one past the
    /// highest sequence sent (the receiver takes it only within its window).
    fn reset_at(&self) -> crate::wire::ResetAt;
}

/// What a driver can do with a receiver besides the [`Engine`] surface.
pub trait ReceiveStream: Engine {
    /// Takes every in-order byte not yet read.
    fn take_delivered(&mut self) -> Vec<u8>;
    /// Copies up to `buf.len()` in-order bytes into `buf`, returning how
    /// many: an application that reads at its own pace (unread bytes count
    /// against the receiver's buffer, and ATP feeds the read rate back).
    fn read(&mut self, buf: &mut [u8]) -> usize;
    /// Holds back the acknowledgement of the FIN until [`Self::set_commit_token`].
    fn hold_fin_ack_for_commit(&mut self);
    /// The token every acknowledgement of the FIN carries from now on.
    fn set_commit_token(&mut self, token: CommitToken);
}

/// The bytes a sender holds: stream offsets `[base, base + bytes.len())`.
#[derive(Clone, Debug)]
pub(crate) struct SendBuffer {
    base: u64,
    bytes: VecDeque<u8>,
    /// The most bytes held at once.
    capacity: usize,
    /// The stream's length, once the application finished it.
    end: Option<u64>,
}

impl SendBuffer {
    /// An empty, open stream holding at most `capacity` bytes at once.
    pub(crate) fn new(capacity: usize) -> Self {
        SendBuffer { base: 0, bytes: VecDeque::new(), capacity: capacity.max(1), end: None }
    }

    /// A finished stream of exactly `data` (no copy).
    pub(crate) fn complete(data: Vec<u8>) -> Self {
        let len = data.len();
        SendBuffer { base: 0, bytes: VecDeque::from(data), capacity: len.max(1), end: Some(len as u64) }
    }

    /// Holds up to `capacity` bytes from now on (at least one). A window
    /// set below what it already holds takes no writes until acknowledgements
    /// bring it under; nothing held is dropped.
    pub(crate) fn set_capacity(&mut self, capacity: usize) {
        if self.end.is_none() {
            self.capacity = capacity.max(1);
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    pub(crate) fn write(&mut self, data: &[u8]) -> usize {
        let n = data.len().min(self.room());
        self.bytes.extend(&data[..n]);
        n
    }

    pub(crate) fn room(&self) -> usize {
        if self.end.is_some() {
            0
        } else {
            self.capacity.saturating_sub(self.bytes.len())
        }
    }

    pub(crate) fn finish(&mut self) {
        if self.end.is_none() {
            self.end = Some(self.written_end());
        }
    }

    /// One past the last byte written.
    pub(crate) fn written_end(&self) -> u64 {
        self.base + self.bytes.len() as u64
    }

    /// The stream's length, once finished.
    pub(crate) fn end(&self) -> Option<u64> {
        self.end
    }

    /// Copies stream bytes `[offset, offset + dst.len())` into `dst`. The
    /// range must be held (released bytes are gone): an engine asking for
    /// anything else has a bug, and panics.
    pub(crate) fn copy_out(&self, offset: u64, dst: &mut [u8]) {
        assert!(
            offset >= self.base && offset + dst.len() as u64 <= self.written_end(),
            "send buffer holds [{}, {}), asked for [{offset}, +{})",
            self.base,
            self.written_end(),
            dst.len()
        );
        let from = (offset - self.base) as usize;
        let (a, b) = self.bytes.as_slices();
        let mut at = 0;
        if from < a.len() {
            let n = (a.len() - from).min(dst.len());
            dst[..n].copy_from_slice(&a[from..from + n]);
            at = n;
        }
        if at < dst.len() {
            let from_b = (from + at) - a.len();
            let n = dst.len() - at;
            dst[at..].copy_from_slice(&b[from_b..from_b + n]);
        }
    }

    /// Forgets every byte before `offset` (acknowledged: never sent again).
    pub(crate) fn release(&mut self, offset: u64) {
        let upto = offset.min(self.written_end());
        if upto > self.base {
            self.bytes.drain(..(upto - self.base) as usize);
            self.base = upto;
        }
    }
}

/// One byte of read allowance in the unit [`ReadLimit`] counts in: bit·ns
/// per second (a rate in bit/s times nanoseconds, divided by 10⁹ per bit).
const ALLOWANCE_PER_BYTE: u128 = 8 * 1_000_000_000;

/// The burst of a [`ReadLimit`] that reads smoothly: never more than 100 ms
/// of reading at once after it found nothing to read.
pub const READ_BURST: Duration = Duration::from_millis(100);

/// An application that reads at most a given rate, in the caller's time:
/// the slow reader of seed 002 §4.2.3's flow control. The rate may change at
/// given instants (a schedule of steps); the allowance accrues at the rate
/// in force, up to `burst` worth of reading, so a reader that found nothing
/// to read does not read faster than its rate afterwards by more than that.
/// It starts with a full burst. Integer arithmetic only: the simulator's
/// runs stay bit-exact.
#[derive(Clone, Debug)]
pub struct ReadLimit {
    /// (from, rate in bit/s), ascending; before the first, the first's rate.
    steps: Vec<(Instant, u64)>,
    burst: Duration,
    /// Allowance in [`ALLOWANCE_PER_BYTE`] units, accrued up to `at`.
    allowance: u128,
    at: Instant,
}

impl ReadLimit {
    /// A reader at `rate_bps` from `start` on, then at each step's rate
    /// from its instant (steps in any order; equal instants: the last wins).
    pub fn new(start: Instant, rate_bps: u64, steps: &[(Instant, u64)], burst: Duration) -> Self {
        let mut all = vec![(start, rate_bps)];
        all.extend(steps.iter().copied());
        all.sort_by_key(|&(t, _)| t);
        let mut limit = ReadLimit { steps: all, burst, allowance: 0, at: start };
        limit.allowance = limit.cap(rate_bps);
        limit
    }

    /// The rate in force at `t`, bit/s.
    pub fn rate_at(&self, t: Instant) -> u64 {
        self.steps.iter().take_while(|&&(from, _)| from <= t).last().unwrap_or(&self.steps[0]).1
    }

    /// Most allowance held at `rate_bps`: `burst` worth, at least one byte.
    fn cap(&self, rate_bps: u64) -> u128 {
        (u128::from(rate_bps) * u128::from(self.burst.as_nanos())).max(ALLOWANCE_PER_BYTE)
    }

    /// Time from `self.at` on, cut where the rate changes: (start, end or
    /// `None` for the last piece, rate).
    fn pieces(&self) -> Vec<(Instant, Option<Instant>, u64)> {
        let mut out = Vec::new();
        let mut from = self.at;
        for &(t, _) in self.steps.iter().filter(|&&(t, _)| t > self.at) {
            out.push((from, Some(t), self.rate_at(from)));
            from = t;
        }
        out.push((from, None, self.rate_at(from)));
        out
    }

    /// Accrues the allowance up to `now`.
    fn accrue(&mut self, now: Instant) {
        if now <= self.at {
            return;
        }
        for (from, to, rate) in self.pieces() {
            if from >= now {
                break;
            }
            let ns = to.map_or(now, |to| to.min(now)).saturating_since(from).as_nanos();
            self.allowance = (self.allowance + u128::from(rate) * u128::from(ns)).min(self.cap(rate));
        }
        self.at = now;
    }

    /// Bytes the application may read at `now`.
    pub fn allowance(&mut self, now: Instant) -> u64 {
        self.accrue(now);
        u64::try_from(self.allowance / ALLOWANCE_PER_BYTE).unwrap_or(u64::MAX)
    }

    /// When at least `bytes` (or a full burst, if that is less) may be read,
    /// if ever: `None` while the rate stays zero.
    pub fn when_allowed(&self, bytes: u64) -> Option<Instant> {
        for (from, to, rate) in self.pieces() {
            let want = (u128::from(bytes) * ALLOWANCE_PER_BYTE).min(self.cap(rate));
            if self.allowance >= want {
                return Some(from);
            }
            if rate == 0 {
                continue;
            }
            let ns = (want - self.allowance).div_ceil(u128::from(rate));
            let at = from.saturating_add(Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX)));
            if to.is_none_or(|to| at <= to) {
                return Some(at);
            }
        }
        None
    }

    /// Reads from `stream` what the allowance at `now` permits; returns the
    /// bytes and whether the allowance ran out first (more may be waiting;
    /// otherwise the stream had nothing more).
    pub fn read(&mut self, now: Instant, stream: &mut dyn ReceiveStream) -> (Vec<u8>, bool) {
        let mut allowed = self.allowance(now);
        let mut out = Vec::new();
        let mut buf = [0u8; 16 * 1024];
        while allowed > 0 {
            let want = buf.len().min(usize::try_from(allowed).unwrap_or(usize::MAX));
            let n = stream.read(&mut buf[..want]);
            out.extend_from_slice(&buf[..n]);
            allowed -= n as u64;
            self.allowance -= n as u128 * ALLOWANCE_PER_BYTE;
            if n < want {
                return (out, false);
            }
        }
        (out, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_is_refilled_as_bytes_are_released() {
        let mut b = SendBuffer::new(10);
        assert_eq!(b.write(b"0123456789abc"), 10);
        assert_eq!((b.room(), b.written_end(), b.end()), (0, 10, None));
        let mut out = [0u8; 4];
        b.copy_out(3, &mut out);
        assert_eq!(&out, b"3456");
        b.release(6);
        assert_eq!(b.room(), 6);
        assert_eq!(b.write(b"abcdefgh"), 6);
        // The window wraps inside the deque: a copy across the seam.
        let mut out = [0u8; 8];
        b.copy_out(8, &mut out);
        assert_eq!(&out, b"89abcdef");
        b.finish();
        assert_eq!((b.room(), b.end()), (0, Some(16)));
        assert_eq!(b.write(b"x"), 0, "a finished stream takes nothing");
        // Releasing beyond what was written stops at the end.
        b.release(100);
        assert_eq!(b.written_end(), 16);
    }

    #[test]
    #[should_panic(expected = "send buffer holds")]
    fn released_bytes_cannot_be_copied() {
        let mut b = SendBuffer::complete(b"hello".to_vec());
        b.release(2);
        let mut out = [0u8; 2];
        b.copy_out(1, &mut out);
    }

    /// A stream of `len` readable bytes (and an engine's empty counters).
    struct Readable(usize, crate::engine::Stats);
    impl ReceiveStream for Readable {
        fn take_delivered(&mut self) -> Vec<u8> {
            vec![0; std::mem::take(&mut self.0)]
        }
        fn read(&mut self, buf: &mut [u8]) -> usize {
            let n = buf.len().min(self.0);
            self.0 -= n;
            n
        }
        fn hold_fin_ack_for_commit(&mut self) {}
        fn set_commit_token(&mut self, _: CommitToken) {}
    }
    impl Engine for Readable {
        fn handle_input(&mut self, _: Instant, _: &[u8]) {}
        fn handle_timeout(&mut self, _: Instant) {}
        fn poll_transmit(&mut self, _: Instant, _: &mut [u8]) -> Option<crate::engine::Transmit> {
            None
        }
        fn poll_timeout(&self) -> Option<Instant> {
            None
        }
        fn poll_event(&mut self) -> Option<crate::engine::EngineEvent> {
            None
        }
        fn stats(&self) -> &crate::engine::Stats {
            &self.1
        }
        fn is_closed(&self) -> bool {
            false
        }
    }

    fn ms(x: u64) -> Instant {
        Instant::from_nanos(x * 1_000_000)
    }

    #[test]
    fn a_read_limit_reads_at_its_rate_with_steps_and_a_bounded_burst() {
        // 80 kbit/s = 10 000 bytes/s, a 100 ms burst (1 000 bytes), then
        // 800 kbit/s from 2 s and nothing from 3 s.
        let mut l = ReadLimit::new(ms(0), 80_000, &[(ms(2_000), 800_000), (ms(3_000), 0)], Duration::from_millis(100));
        let mut s = Readable(1_000_000, Default::default());
        // A full burst at the start, then 10 bytes per millisecond.
        assert_eq!(l.read(ms(0), &mut s), (vec![0; 1_000], true));
        assert_eq!(l.read(ms(50), &mut s).0.len(), 500);
        // Idle for a second: no more than the burst.
        assert_eq!(l.allowance(ms(1_050)), 1_000);
        assert_eq!(l.when_allowed(500), Some(ms(1_050)));
        assert_eq!(l.read(ms(1_050), &mut s).0.len(), 1_000);
        assert_eq!(l.when_allowed(500), Some(ms(1_100)));
        // Across the step: 950 ms at 10 bytes/ms (capped at 1 000), then
        // 100 ms at 100 bytes/ms (capped at 10 000).
        assert_eq!(l.allowance(ms(2_100)), 10_000);
        assert_eq!(l.read(ms(2_100), &mut s).0.len(), 10_000);
        assert_eq!(l.when_allowed(1_000), Some(ms(2_110)));
        // A stalled reader is never allowed more than what it has.
        assert_eq!(l.allowance(ms(3_000)), 10_000);
        l.read(ms(3_000), &mut s);
        assert_eq!(l.when_allowed(1), None);
        assert_eq!(l.allowance(ms(9_000)), 0);
        // A stream with less than the allowance is read empty.
        let mut l = ReadLimit::new(ms(0), 80_000, &[], Duration::from_millis(100));
        assert_eq!(l.read(ms(0), &mut Readable(300, Default::default())), (vec![0; 300], false));
        assert_eq!(l.allowance(ms(0)), 700);
    }
}
