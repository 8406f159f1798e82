//! The receiving side: answers the SYN, reassembles data, acknowledges
//! cumulatively and hands the bytes to the application in order, as the
//! `ReceiveControl` of the shared [`Receiver`] skeleton.

use super::sack::MAX_TCP_SACK_BLOCKS;
use super::{TcpConfig, Timer};
use crate::engine::Transmit;
use crate::engine_core::Phase;
use crate::receiver_core::{emit_ack, FinAck, Reassembly, ReceiveControl, Receiver, ReceiverCore};
use crate::reorder::Offer;
use crate::wire::{Control, ProtocolId, Repr, HEADER_LEN};
use meshbed_core::{Duration, Instant};
use std::collections::VecDeque;

/// The first sequence number after the SYN, on both sides.
const DATA_START: u64 = 1;

/// ACKs queued but not yet written out. Each arriving segment queues its own
/// ACK (a burst of out-of-order segments must produce as many duplicate ACKs
/// for fast retransmit to work), so this is a queue of acknowledgement
/// numbers, not a flag. Bounded so that a flood cannot grow it without limit;
/// when full the oldest is dropped, the newest carries the most information.
const MAX_PENDING_ACKS: usize = 1024;

/// Receives one transfer on one connection.
///
/// Driver contract (see [`crate::engine`]): feed datagrams with
/// `handle_input`, call `poll_transmit` until `None`, drain `poll_event`,
/// sleep until `poll_timeout`. Take the data with [`TcpReceiver::read`] or
/// [`TcpReceiver::take_delivered`] whenever convenient. TCP does not linger:
/// the receiver is closed once finished, though it still acknowledges
/// retransmitted FINs for as long as its driver keeps it.
pub type TcpReceiver = Receiver<TcpReceiveControl>;

/// TCP's part of [`TcpReceiver`]: the handshake, the window and the ACKs.
#[derive(Debug)]
pub struct TcpReceiveControl {
    config: TcpConfig,
    /// A SYN was answered (TCP's SYN-RECEIVED) while the phase is still
    /// connecting: the handshake's ACK completes it.
    syn_received: bool,
    synack_pending: bool,
    pending_acks: VecDeque<u64>,
    /// In-order segments received since the last ACK (delayed ACKs only).
    unacked_segments: u32,
    /// SACK: the blocks reported, most recent first (RFC 2018 §4), each
    /// named by a byte it holds; the ACK reports the ranges that hold them
    /// now.
    sack_recent: Vec<u64>,
    /// Timestamps (RFC 7323 §4.3): TS.Recent, the TSval to echo, and
    /// Last.ACK.sent, which decides which segment's TSval that is.
    ts_recent: u32,
    last_ack_sent: u64,
}

/// What a segment from the sender is, in the receiver's state.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Segment {
    /// A copy of the SYN (answered every time: the sender retransmits it
    /// until a SYN-ACK gets through, so the receiver needs no timer of its
    /// own for the handshake).
    Syn,
    /// The handshake's ACK, completing it (the first data segment).
    HandshakeAck,
    /// Data, a FIN or a pure ACK after the handshake.
    Data,
}

impl TcpReceiver {
    /// A receiver listening for the SYN of `connection_id`. It waits for the
    /// SYN indefinitely; the idle timer starts with it.
    pub fn new(config: TcpConfig, connection_id: u32, now: Instant) -> Self {
        let stream = Reassembly::new(DATA_START, config.max_reorder_bytes);
        let core = ReceiverCore::new(ProtocolId::Tcp, connection_id, now, true, stream);
        let control = TcpReceiveControl {
            config: config.sanitized(),
            syn_received: false,
            synack_pending: false,
            pending_acks: VecDeque::new(),
            unacked_segments: 0,
            sack_recent: Vec::new(),
            ts_recent: 0,
            last_ack_sent: DATA_START,
        };
        Receiver::with_parts(core, control)
    }

    /// Sets the receive buffer: the bytes the application has not read and
    /// those held out of order together span at most `bytes` past the last
    /// byte read (RFC 9293 §3.8.6: the window is the buffer space left), on
    /// top of the window a conforming sender keeps to. The header has no
    /// advertised-window field (see `TcpConfig::max_cwnd_segments`), so a
    /// sender that runs ahead of a slow reader is not told to stop: segments
    /// beyond the buffer are dropped without an answer and counted in
    /// `Stats::dropped_over_buffer_limit`. Unanswered, the sender times out
    /// and backs off, and its retransmissions after each timeout probe the
    /// buffer as a zero-window probe would (RFC 9293 §3.8.6.1). An answer
    /// would be worse: without a window field the ACK of a zero window reads
    /// as a duplicate ACK, whose fast retransmits and window inflation send
    /// more into the full buffer (on loopback: 16 000 retransmissions of a
    /// 600 kB transfer instead of 180). The receiver never holds more than
    /// this.
    /// Default `config.max_reorder_bytes` (what an application that reads
    /// everything at once always had); a driver whose application reads at
    /// its own pace sets it, e.g. to the window.
    pub fn set_receive_buffer(&mut self, bytes: u64) {
        self.core.stream.set_receive_buffer(bytes);
    }

    /// The window: how far past the last in-order byte a conforming
    /// sender sends (`TcpConfig::max_cwnd_segments` segments).
    pub fn receive_window_bytes(&self) -> u64 {
        self.control.config.receive_window_bytes()
    }

    /// Out-of-order pieces held for reassembly (a segment that continues
    /// the piece before it joins that piece).
    pub fn buffered_segments(&self) -> usize {
        self.core.stream.out_of_order.pieces()
    }
}

type Core = ReceiverCore<Timer>;

impl TcpReceiveControl {
    /// How long the receiver waits without hearing from the sender: the idle
    /// time plus `max_unanswered_rtos` maximum RTOs, because a sender in
    /// exponential backoff legitimately stays silent for up to `max_rto`
    /// between retransmissions and gets that many before it gives up itself.
    fn idle_limit(&self) -> Duration {
        self.config.idle_timeout + self.config.max_rto * self.config.max_unanswered_rtos as u64
    }

    /// What `repr` is in `phase`, or `None` for what no correct peer sends
    /// now: data before the handshake, a stale SYN after it, or a segment
    /// without ACK.
    fn classify(&self, phase: Phase, repr: &Repr) -> Option<Segment> {
        let syn = repr.control.contains(Control::SYN);
        let ack = repr.control.contains(Control::ACK);
        let handshake = phase == Phase::Connecting && self.syn_received;
        match phase {
            Phase::Connecting if syn && !ack => Some(Segment::Syn),
            _ if handshake && ack && !syn && repr.ack == DATA_START => Some(Segment::HandshakeAck),
            Phase::Established | Phase::Finished if ack && !syn => Some(Segment::Data),
            _ => None,
        }
    }

    fn ack_now(&mut self, core: &mut Core) {
        if self.pending_acks.len() >= MAX_PENDING_ACKS {
            self.pending_acks.pop_front();
        }
        self.pending_acks.push_back(core.stream.next);
        self.unacked_segments = 0;
        core.timers.stop(Timer::DelayedAck);
    }

    /// An in-order segment that neither fills a hole nor ends the transfer:
    /// ACK it at once, or with delayed ACKs every second segment or when the
    /// timer fires (RFC 5681 §4.2, RFC 1122 §4.2.3.2).
    fn ack_in_order(&mut self, core: &mut Core, now: Instant) {
        if !self.config.delayed_acks {
            self.ack_now(core);
            return;
        }
        self.unacked_segments += 1;
        if self.unacked_segments >= 2 {
            self.ack_now(core);
        } else if core.timers.get(Timer::DelayedAck).is_none() {
            core.timers.set(Timer::DelayedAck, now + self.config.delayed_ack_timeout);
        }
    }

    fn on_segment(&mut self, core: &mut Core, now: Instant, repr: &Repr, data: &[u8]) {
        let fin = repr.control.contains(Control::FIN);
        if data.is_empty() && !fin {
            // A pure ACK (the handshake's third segment): nothing to answer.
            return;
        }
        if core.phase() == Phase::Finished {
            // Everything is here; whatever this is, repeat the final ACK.
            core.stats.dropped_datagrams += 1;
            self.ack_now(core);
            return;
        }
        let seq = repr.seq;
        let Some(data_end) = seq.checked_add(data.len() as u64) else {
            core.stats.dropped_datagrams += 1;
            return;
        };
        let seg_end = data_end.saturating_add(fin as u64);
        if self.config.timestamps && seq <= self.last_ack_sent && self.last_ack_sent < seg_end {
            // RFC 7323 §4.3: the segment at the edge last acknowledged (an
            // in-order one, or the retransmission that fills the hole) sets
            // the echo; one beyond a hole does not, so the ACKs it draws
            // time the wait for the hole too, and with delayed ACKs the
            // earlier of two segments is timed.
            self.ts_recent = repr.d_max_us;
        }
        let stream = &mut core.stream;
        if seg_end <= stream.next {
            // Entirely old: a retransmission whose ACK was lost, or a
            // duplicate. RFC 5681 §4.2 / RFC 793: ACK at once so that the
            // sender learns where we are.
            core.stats.dropped_datagrams += 1;
            self.ack_now(core);
            return;
        }
        let window_end = stream.next.saturating_add(self.config.receive_window_bytes());
        if seq >= window_end {
            // Beyond anything a conforming sender sends: refuse to buffer it.
            core.stats.dropped_datagrams += 1;
            self.ack_now(core);
            return;
        }
        // Unread bytes count against the receive buffer: a sender ahead of
        // a slow reader finds it full, and is not answered (see
        // `set_receive_buffer`).
        let window_end = window_end.min(stream.read_upto().saturating_add(stream.receive_buffer_bytes));
        if seq >= window_end {
            core.stats.dropped_over_buffer_limit += 1;
            return;
        }
        if fin && stream.fin_seq.is_none() {
            stream.fin_seq = Some(data_end);
        }
        // Keep only [max(seq, rcv_nxt), min(data_end, window_end)).
        let from = stream.next.saturating_sub(seq).min(data.len() as u64) as usize;
        let to = (window_end.min(data_end) - seq) as usize;
        let start = seq + from as u64;
        let bytes = &data[from..to.max(from)];

        let filled_hole = !stream.out_of_order.is_empty();
        let out_of_order = start > stream.next;
        let offer = stream.offer(&mut core.stats, start, bytes);
        if out_of_order && self.config.sack && offer != Offer::OverLimit {
            // RFC 2018 §4: the first block is the one holding the segment
            // that triggered this ACK.
            self.sack_recent.retain(|&s| s != start);
            self.sack_recent.insert(0, start);
            self.sack_recent.truncate(MAX_TCP_SACK_BLOCKS * 4);
        }
        if out_of_order {
            // Out of order: hold it (within the limit) and send a duplicate
            // ACK at once (RFC 5681 §4.2), which drives the sender's fast
            // retransmit.
            if offer == Offer::OverLimit {
                core.stats.dropped_over_buffer_limit += 1;
            }
            self.ack_now(core);
            return;
        }
        if core.stream.fin_seq == Some(core.stream.next) {
            // The FIN is next in sequence: every byte is here.
            core.stream.next += 1;
            self.ack_now(core);
            core.finish();
            core.timers.stop_all();
        } else if filled_hole {
            // RFC 5681 §4.2: ACK at once a segment that fills (part of) a gap.
            self.ack_now(core);
        } else {
            self.ack_in_order(core, now);
        }
    }

    /// An acknowledgement of `ack`: the one that covers the FIN carries the
    /// commit token; while the application has not given it, it
    /// acknowledges only the data.
    fn emit(&self, core: &Core, buf: &mut [u8], control: u8, seq: u64, ack: u64) -> Option<Transmit> {
        let covers_fin = core.stream.fin_seq.is_some_and(|fin| ack > fin);
        let fin_ack = core.fin_ack(covers_fin);
        let ack = if matches!(fin_ack, Some(FinAck::Held { .. })) { ack - 1 } else { ack };
        let mut repr = core.header(Control(control), seq, ack);
        if self.config.sack {
            repr.sack_blocks = self.sack_blocks(core, ack);
        }
        if self.config.timestamps {
            repr.d_s_us = self.ts_recent;
        }
        emit_ack(repr, fin_ack, buf)
    }

    /// The SACK blocks for an ACK of `ack` (RFC 2018 §4): the ranges held
    /// above it, those of the most recent segments first, then the lowest
    /// others, at most [`MAX_TCP_SACK_BLOCKS`].
    fn sack_blocks(&self, core: &Core, ack: u64) -> Vec<(u64, u64)> {
        let held: Vec<(u64, u64)> = core.stream.out_of_order.ranges().filter(|&(_, end)| end > ack).collect();
        if held.is_empty() {
            return Vec::new();
        }
        let holding = |seq: u64| held.iter().copied().find(|&(s, e)| s <= seq && seq < e);
        let mut blocks: Vec<(u64, u64)> = Vec::with_capacity(MAX_TCP_SACK_BLOCKS);
        for range in self.sack_recent.iter().filter_map(|&s| holding(s)).chain(held.iter().copied()) {
            if blocks.len() == MAX_TCP_SACK_BLOCKS {
                break;
            }
            if !blocks.contains(&range) {
                blocks.push(range);
            }
        }
        blocks
    }
}

impl ReceiveControl for TcpReceiveControl {
    type Timer = Timer;

    /// An RST after the transfer finished changes nothing (it is dropped).
    fn screen(&self, core: &Core, ours: bool, repr: &Repr) -> bool {
        if !ours || core.phase() == Phase::Failed {
            return false;
        }
        if repr.control.contains(Control::RST) {
            return core.phase() != Phase::Finished;
        }
        self.classify(core.phase(), repr).is_some()
    }

    fn on_packet(&mut self, core: &mut Core, now: Instant, repr: &Repr, data: &[u8]) {
        match self.classify(core.phase(), repr) {
            Some(Segment::Syn) => {
                self.syn_received = true;
                self.synack_pending = true;
            }
            Some(Segment::HandshakeAck) => {
                core.establish();
                self.on_segment(core, now, repr, data);
            }
            Some(Segment::Data) => self.on_segment(core, now, repr, data),
            None => {}
        }
        if core.phase() != Phase::Finished {
            core.timers.set(Timer::Idle, now + self.idle_limit());
        }
    }

    fn on_timer(&mut self, core: &mut Core, _now: Instant, timer: Timer) {
        if timer == Timer::DelayedAck {
            self.ack_now(core);
        }
    }

    fn poll_transmit(&mut self, core: &mut Core, _now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        if buf.len() < HEADER_LEN {
            return None;
        }
        if self.synack_pending {
            let t = self.emit(core, buf, Control::SYN | Control::ACK, 0, DATA_START)?;
            self.synack_pending = false;
            core.stats.datagrams_sent += 1;
            return Some(t);
        }
        let ack = *self.pending_acks.front()?;
        let t = self.emit(core, buf, Control::ACK, DATA_START, ack)?;
        self.pending_acks.pop_front();
        self.last_ack_sent = self.last_ack_sent.max(ack);
        core.stats.datagrams_sent += 1;
        core.stats.feedback_packets += 1;
        Some(t)
    }

    fn on_close(&mut self) {
        self.pending_acks.clear();
        self.synack_pending = false;
    }

    fn on_commit_progress(&mut self, core: &mut Core) {
        // Tell the sender at once.
        if core.phase() == Phase::Finished {
            self.ack_now(core);
        }
    }
}

#[cfg(test)]
mod slow_reader_tests {
    use super::super::tests::{acks_sent, config, data_segment, listening, ms, seg, MSS};
    use crate::engine::Engine;

    #[test]
    fn unread_bytes_count_against_the_receive_buffer() {
        let mut r = listening(config());
        r.set_receive_buffer(3 * MSS);
        // Three segments fill it; the fourth is dropped, counted and not
        // answered (the sender times out and backs off).
        for k in 0..4 {
            r.handle_input(ms(10 + k), &data_segment(k, false));
        }
        assert_eq!(acks_sent(&mut r, ms(13)), vec![seg(1), seg(2), seg(3)]);
        assert_eq!(r.stats().dropped_over_buffer_limit, 1);
        assert_eq!(r.stats().bytes_delivered, 3 * MSS);
        // Out of order past the buffer's end is refused too.
        r.handle_input(ms(14), &data_segment(5, false));
        assert_eq!((r.buffered_segments(), r.stats().dropped_over_buffer_limit), (0, 2));
        assert!(acks_sent(&mut r, ms(14)).is_empty());
        // Reading one segment makes room for exactly one more.
        let mut buf = vec![0u8; MSS as usize];
        assert_eq!(r.read(&mut buf), MSS as usize);
        r.handle_input(ms(20), &data_segment(3, false));
        r.handle_input(ms(21), &data_segment(4, false));
        assert_eq!(acks_sent(&mut r, ms(21)), vec![seg(4)]);
        assert_eq!(r.stats().dropped_over_buffer_limit, 3);
        // The default buffer (max_reorder_bytes) never binds a window's worth.
        let mut r = listening(config());
        for k in 0..64 {
            r.handle_input(ms(10), &data_segment(k, false));
        }
        assert_eq!((r.stats().bytes_delivered, r.stats().dropped_over_buffer_limit), (64 * MSS, 0));
    }
}
