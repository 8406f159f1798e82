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

use crate::engine::Engine;
use std::collections::VecDeque;

/// Bytes of a commit confirmation token.
pub const COMMIT_TOKEN_LEN: usize = 32;

/// A commit confirmation token.
pub type CommitToken = [u8; COMMIT_TOKEN_LEN];

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

/// A receiver's side of the commit confirmation: whether the FIN's
/// acknowledgement waits for the application, and the token it carries.
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct CommitConfirmation {
    hold: bool,
    token: Option<CommitToken>,
}

/// How a receiver acknowledges a FIN it has, with every byte before it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum FinAck {
    /// Acknowledge it, carrying the token.
    Confirmed(CommitToken),
    /// Acknowledge it plainly (nobody asked for a confirmation).
    Plain,
    /// Do not acknowledge it yet: the application has not committed.
    Held,
}

impl CommitConfirmation {
    pub(crate) fn hold(&mut self) {
        self.hold = true;
    }
    pub(crate) fn set_token(&mut self, token: CommitToken) {
        self.token = Some(token);
    }
    pub(crate) fn fin_ack(&self) -> FinAck {
        match (self.token, self.hold) {
            (Some(token), _) => FinAck::Confirmed(token),
            (None, false) => FinAck::Plain,
            (None, true) => FinAck::Held,
        }
    }
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

    pub(crate) fn write(&mut self, data: &[u8]) -> usize {
        let n = data.len().min(self.room());
        self.bytes.extend(&data[..n]);
        n
    }

    pub(crate) fn room(&self) -> usize {
        if self.end.is_some() {
            0
        } else {
            self.capacity - self.bytes.len()
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
}
