//! The per-segment bookkeeping of a rate-paced sender that cuts its byte
//! stream into fixed-size packets: ATP's sender (seed 002 §4.3.3) and MTL's
//! (seed 004 §III.C.1) keep the same scoreboard, so it lives here once.
//!
//! Segment `i` is stream bytes `[i·payload, (i+1)·payload)`, cut at the
//! stream's end. A segment gets a scoreboard entry when first sent and loses
//! it once the cumulative ack covers it; its bytes are then released from
//! the send buffer and it is never sent again. What counts as a hole or a
//! gap, and when a segment is queued again, is each protocol's rule and
//! stays in its sender.

use crate::stream::SendBuffer;

use meshbed_core::{Duration, Instant};
use std::collections::{BTreeSet, VecDeque};

/// Scoreboard entry of one sent, not yet cumulatively acknowledged segment.
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct Segment {
    /// When its first copy left (MTL's buffer lifetime, seed 004 §III.C.1).
    pub(crate) first_sent: Option<Instant>,
    /// When its last copy left.
    pub(crate) last_sent: Option<Instant>,
    /// The receiver holds it (an ATP SACK block covers it).
    pub(crate) sacked: bool,
    /// It waits in the retransmission queue.
    pub(crate) queued: bool,
}

impl Segment {
    /// Whether its last copy left at least `guard` before `now` (a segment
    /// never sent is not old enough): a copy younger than the guard may
    /// still be on its way, so it is not sent again yet.
    pub(crate) fn sent_at_least_ago(&self, guard: Duration, now: Instant) -> bool {
        self.last_sent.is_some_and(|t| t + guard <= now)
    }
}

/// The segments of one sender's stream: the send buffer, the scoreboard of
/// the segments in flight, the cumulative ack and the retransmission queue.
#[derive(Debug)]
pub(crate) struct Segments {
    /// The bytes not yet acknowledged, and what the application wrote.
    buf: SendBuffer,
    /// Payload bytes per segment (at least 1).
    payload_bytes: u64,
    /// Segment `base + k` is `entries[k]`; earlier ones are acknowledged.
    entries: VecDeque<Segment>,
    base: usize,
    /// Index of the first segment never sent.
    next_new: usize,
    /// Cumulative ack: bytes `[0, acked)` are delivered.
    acked: u64,
    /// Segments to send again, lowest first (seed 002 §4.3.3: retransmissions
    /// go before new data; MTL does the same).
    retx: BTreeSet<usize>,
    /// When the newest copy of anything the receiver is known to hold (SACKed
    /// or cumulatively acknowledged) left: over a path that keeps order, a
    /// segment whose last copy left before it and is still missing is lost.
    newest_delivered_sent: Option<Instant>,
    /// The newest first send among segments sent once and found delivered
    /// since [`Segments::take_clean_delivery`] last took it: an RTT sample
    /// without Karn's ambiguity.
    clean_delivery: Option<Instant>,
}

impl Segments {
    /// Bookkeeping for the stream in `buf`, cut into `payload_bytes`-sized
    /// segments (0 counts as 1).
    pub(crate) fn new(buf: SendBuffer, payload_bytes: usize) -> Self {
        Segments {
            buf,
            payload_bytes: payload_bytes.max(1) as u64,
            entries: VecDeque::new(),
            base: 0,
            next_new: 0,
            acked: 0,
            retx: BTreeSet::new(),
            newest_delivered_sent: None,
            clean_delivery: None,
        }
    }

    /// The send buffer (to read the stream's end, the room left, or copy a
    /// segment's bytes out).
    pub(crate) fn buf(&self) -> &SendBuffer {
        &self.buf
    }
    /// The send buffer, for the application's writes and its end
    /// ([`crate::sender_core`]'s `SendStream`).
    pub(crate) fn buf_mut(&mut self) -> &mut SendBuffer {
        &mut self.buf
    }

    /// Bytes written (the stream's length once finished).
    pub(crate) fn len(&self) -> u64 {
        self.buf.written_end()
    }
    /// Cumulative ack: bytes `[0, acked)` are delivered.
    pub(crate) fn acked(&self) -> u64 {
        self.acked
    }
    /// Index of the first segment never sent.
    pub(crate) fn next_new(&self) -> usize {
        self.next_new
    }
    /// Index of the oldest segment still on the scoreboard.
    pub(crate) fn base(&self) -> usize {
        self.base
    }

    /// Segments that may be sent: every full one written, and the last
    /// partial one only once the stream is finished (so segment boundaries
    /// do not depend on how the application's writes were cut).
    pub(crate) fn sendable_segments(&self) -> usize {
        let n = match self.buf.end() {
            Some(end) => end.div_ceil(self.payload_bytes),
            None => self.len() / self.payload_bytes,
        };
        usize::try_from(n).unwrap_or(usize::MAX)
    }
    /// First byte of segment `i`.
    pub(crate) fn seg_start(&self, i: usize) -> u64 {
        (i as u64).saturating_mul(self.payload_bytes)
    }
    /// One past the last byte of segment `i` (cut at the bytes written).
    pub(crate) fn seg_end(&self, i: usize) -> u64 {
        self.seg_start(i + 1).min(self.len())
    }
    /// Index of the segment holding byte `offset` (may be past the end).
    pub(crate) fn seg_of(&self, offset: u64) -> usize {
        usize::try_from(offset / self.payload_bytes).unwrap_or(usize::MAX)
    }
    /// One past the last byte ever sent.
    pub(crate) fn sent_end(&self) -> u64 {
        if self.next_new == 0 {
            0
        } else {
            self.seg_end(self.next_new - 1)
        }
    }
    /// Whether the stream is finished and every byte of it acknowledged.
    pub(crate) fn all_acked(&self) -> bool {
        self.buf.end().is_some_and(|end| self.acked >= end)
    }
    /// First segment not fully covered by the cumulative ack.
    pub(crate) fn first_unacked(&self) -> usize {
        if self.all_acked() {
            self.sendable_segments()
        } else {
            self.seg_of(self.acked)
        }
    }

    /// The sequences an RST is judged by (RFC 5961 §3,
    /// `SendControl::reset_window`): the cumulative ack and the sent end.
    pub(crate) fn reset_window(&self) -> (u64, u64) {
        (self.acked(), self.sent_end())
    }
    /// Sends the oldest unacknowledged segment again: the challenge an RST
    /// inside the window draws (`SendControl::on_reset_challenge`).
    pub(crate) fn queue_challenge(&mut self) {
        let first = self.first_unacked();
        if first < self.next_new() {
            self.queue_retransmission(first);
        }
    }
    /// The scoreboard entry of sent segment `i` (`base <= i < next_new`).
    pub(crate) fn segment(&self, i: usize) -> &Segment {
        &self.entries[i - self.base]
    }
    fn segment_mut(&mut self, i: usize) -> &mut Segment {
        &mut self.entries[i - self.base]
    }
    /// When the oldest segment not cumulatively acknowledged was first sent.
    pub(crate) fn oldest_first_sent(&self) -> Option<Instant> {
        self.entries.front().and_then(|s| s.first_sent)
    }

    /// The lowest segment waiting for retransmission.
    pub(crate) fn next_retransmission(&self) -> Option<usize> {
        self.retx.first().copied()
    }
    /// Segments waiting for retransmission.
    pub(crate) fn retransmit_queue_len(&self) -> usize {
        self.retx.len()
    }
    /// Queues sent segment `i` for retransmission (no-op if queued).
    pub(crate) fn queue_retransmission(&mut self, i: usize) {
        let seg = self.segment_mut(i);
        if !seg.queued {
            seg.queued = true;
            self.retx.insert(i);
        }
    }
    fn dequeue(&mut self, i: usize) {
        let seg = self.segment_mut(i);
        if seg.queued {
            seg.queued = false;
            self.retx.remove(&i);
        }
    }
    /// The receiver holds sent segment `i`: it is not sent again.
    pub(crate) fn mark_sacked(&mut self, i: usize) {
        let seg = *self.segment(i);
        if !seg.sacked {
            self.note_delivered(&seg);
        }
        let last_sent = seg.last_sent;
        self.newest_delivered_sent = self.newest_delivered_sent.max(last_sent);
        self.segment_mut(i).sacked = true;
        self.dequeue(i);
    }

    fn note_delivered(&mut self, seg: &Segment) {
        if seg.first_sent.is_some() && seg.first_sent == seg.last_sent {
            self.clean_delivery = self.clean_delivery.max(seg.first_sent);
        }
    }

    /// The newest first send of a once-sent segment found delivered since
    /// the last call (see the field), and forgets it.
    pub(crate) fn take_clean_delivery(&mut self) -> Option<Instant> {
        self.clean_delivery.take()
    }

    /// When the newest copy of anything known delivered left (see the field).
    pub(crate) fn newest_delivered_sent(&self) -> Option<Instant> {
        self.newest_delivered_sent
    }

    /// Records that segment `i` (sent before, or `next_new`) left at `now`,
    /// taking it off the retransmission queue. Returns whether this was its
    /// first copy.
    pub(crate) fn record_send(&mut self, i: usize, now: Instant) -> bool {
        let first = i == self.next_new;
        if first {
            self.entries.push_back(Segment { first_sent: Some(now), ..Segment::default() });
            self.next_new += 1;
        }
        self.segment_mut(i).last_sent = Some(now);
        self.dequeue(i);
        first
    }

    /// Applies cumulative ack `ack` (clamped to the bytes written): the
    /// segments it covers leave the scoreboard and the retransmission queue
    /// and their bytes are released, as they are never sent again. Returns
    /// whether the ack moved forward.
    pub(crate) fn ack_to(&mut self, ack: u64) -> bool {
        let ack = ack.min(self.len());
        if ack <= self.acked {
            return false;
        }
        self.acked = ack;
        let first = self.first_unacked();
        self.retx = self.retx.split_off(&first);
        let done = first.min(self.next_new).saturating_sub(self.base).min(self.entries.len());
        let (mut clean, mut newest) = (None, None);
        for seg in self.entries.drain(..done).filter(|s| !s.sacked) {
            if seg.first_sent.is_some() && seg.first_sent == seg.last_sent {
                clean = clean.max(seg.first_sent);
            }
            newest = newest.max(seg.last_sent);
        }
        self.clean_delivery = self.clean_delivery.max(clean);
        self.newest_delivered_sent = self.newest_delivered_sent.max(newest);
        self.base += done;
        self.buf.release(self.seg_start(self.base));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::at_ms as at;

    #[test]
    fn segments_are_cut_at_the_payload_and_the_stream_end() {
        let mut s = Segments::new(SendBuffer::new(100), 10);
        assert_eq!(s.buf_mut().write(&[7; 25]), 25);
        // The partial third segment waits for the stream's end.
        assert_eq!(s.sendable_segments(), 2);
        assert_eq!((s.seg_start(2), s.seg_end(2), s.seg_of(25)), (20, 25, 2));
        s.buf_mut().finish();
        assert_eq!(s.sendable_segments(), 3);
        assert_eq!(s.sent_end(), 0);
    }

    #[test]
    fn a_send_is_first_once_and_leaves_the_queue() {
        let mut s = Segments::new(SendBuffer::complete(vec![0; 30]), 10);
        assert!(s.record_send(0, at(1)));
        assert!(s.record_send(1, at(2)));
        assert_eq!((s.next_new(), s.sent_end()), (2, 20));
        s.queue_retransmission(0);
        s.queue_retransmission(0);
        assert_eq!((s.retransmit_queue_len(), s.next_retransmission()), (1, Some(0)));
        assert!(!s.record_send(0, at(5)), "a copy of a sent segment is not its first");
        assert_eq!(s.retransmit_queue_len(), 0);
        let seg = s.segment(0);
        assert_eq!((seg.first_sent, seg.last_sent), (Some(at(1)), Some(at(5))));
        assert!(seg.sent_at_least_ago(Duration::from_millis(2), at(7)));
        assert!(!seg.sent_at_least_ago(Duration::from_millis(3), at(7)));
        s.queue_retransmission(1);
        s.mark_sacked(1);
        assert!(s.segment(1).sacked);
        assert_eq!(s.next_retransmission(), None);
    }

    #[test]
    fn the_cumulative_ack_drains_the_scoreboard_and_releases_bytes() {
        let mut s = Segments::new(SendBuffer::complete(vec![0; 30]), 10);
        for i in 0..3 {
            s.record_send(i, at(i as u64));
        }
        s.queue_retransmission(0);
        s.queue_retransmission(2);
        // Part of segment 1 is acknowledged: segment 0 goes, 1 stays.
        assert!(s.ack_to(15));
        assert!(!s.ack_to(12), "an older ack changes nothing");
        assert_eq!((s.acked(), s.base(), s.first_unacked()), (15, 1, 1));
        assert!(!s.all_acked());
        assert_eq!(s.oldest_first_sent(), Some(at(1)));
        assert_eq!((s.retransmit_queue_len(), s.next_retransmission()), (1, Some(2)));
        // An ack past the end is clamped to it; everything goes.
        assert!(s.ack_to(99));
        assert_eq!((s.acked(), s.base(), s.first_unacked()), (30, 3, 3));
        assert!(s.all_acked());
        assert_eq!((s.oldest_first_sent(), s.retransmit_queue_len()), (None, 0));
    }
}
