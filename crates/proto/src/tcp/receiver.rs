//! The receiving side: answers the SYN, reassembles data, acknowledges
//! cumulatively and hands the bytes to the application in order.

use super::{TcpConfig, Timer, TimerTable};
use crate::engine::{Engine, EngineEvent, FailReason, ReceiveBuffer, Stats, Transmit};
use crate::reorder::{Offer, ReorderBuffer};
use crate::stream::{CommitConfirmation, CommitToken, FinAck, ReceiveStream};
use crate::wire::{parse_datagram, Control, ProtocolId, Repr, HEADER_LEN};
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

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum State {
    Listen,
    SynReceived,
    Established,
    Finished,
    Failed,
}

/// Receives one transfer on one connection.
///
/// Driver contract (see [`crate::engine`]): feed datagrams with
/// `handle_input`, call `poll_transmit` until `None`, drain `poll_event`,
/// sleep until `poll_timeout`. Take the data with [`TcpReceiver::read`] or
/// [`TcpReceiver::take_delivered`] whenever convenient.
#[derive(Debug)]
pub struct TcpReceiver {
    config: TcpConfig,
    connection_id: u32,
    state: State,
    /// Next sequence number expected in order.
    rcv_nxt: u64,
    /// Bytes beyond a hole.
    out_of_order: ReorderBuffer,
    /// The FIN's sequence number once a FIN was seen (= 1 + transfer length).
    fin_seq: Option<u64>,
    /// In-order bytes the application has not read yet.
    delivered: ReceiveBuffer,
    /// Unread in-order bytes plus what is held out of order span at most
    /// this many bytes past the last byte read ([`TcpReceiver::set_receive_buffer`]).
    receive_buffer_bytes: u64,
    synack_pending: bool,
    pending_acks: VecDeque<u64>,
    /// In-order segments received since the last ACK (delayed ACKs only).
    unacked_segments: u32,
    timers: TimerTable,
    last_heard: Instant,
    /// Whether the FIN's acknowledgement waits for a commit token, and the
    /// token once the application gave it ([`crate::stream`]).
    commit: CommitConfirmation,
    events: VecDeque<EngineEvent>,
    stats: Stats,
}

impl TcpReceiver {
    /// How long the receiver waits without hearing from the sender: the idle
    /// time plus `max_unanswered_rtos` maximum RTOs, because a sender in
    /// exponential backoff legitimately stays silent for up to `max_rto`
    /// between retransmissions and gets that many before it gives up itself.
    fn idle_limit(&self) -> Duration {
        self.config.idle_timeout + self.config.max_rto * self.config.max_unanswered_rtos as u64
    }

    /// A receiver listening for the SYN of `connection_id`. It waits for the
    /// SYN indefinitely; the idle timer starts with it.
    pub fn new(config: TcpConfig, connection_id: u32, now: Instant) -> Self {
        TcpReceiver {
            out_of_order: ReorderBuffer::new(config.max_reorder_bytes),
            config: config.sanitized(),
            connection_id,
            state: State::Listen,
            rcv_nxt: DATA_START,
            fin_seq: None,
            delivered: ReceiveBuffer::default(),
            receive_buffer_bytes: config.max_reorder_bytes,
            synack_pending: false,
            pending_acks: VecDeque::new(),
            unacked_segments: 0,
            timers: TimerTable::default(),
            last_heard: now,
            commit: CommitConfirmation::default(),
            events: VecDeque::new(),
            stats: Stats::default(),
        }
    }

    pub fn connection_id(&self) -> u32 {
        self.connection_id
    }

    /// Copies up to `buf.len()` delivered bytes into `buf`, returning how many.
    pub fn read(&mut self, buf: &mut [u8]) -> usize {
        self.delivered.read(buf)
    }

    /// All delivered bytes not yet read.
    pub fn take_delivered(&mut self) -> Vec<u8> {
        self.delivered.take_all()
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
        self.receive_buffer_bytes = bytes.max(1);
    }

    /// The window: how far past the last in-order byte a conforming
    /// sender sends (`TcpConfig::max_cwnd_segments` segments).
    pub fn receive_window_bytes(&self) -> u64 {
        self.config.receive_window_bytes()
    }

    /// Out-of-order pieces held for reassembly (a segment that continues
    /// the piece before it joins that piece).
    pub fn buffered_segments(&self) -> usize {
        self.out_of_order.pieces()
    }

    /// The memory the out-of-order bytes are charged (see [`crate::reorder`]).
    pub fn reorder_charge(&self) -> u64 {
        self.out_of_order.charge()
    }

    /// Lowers the out-of-order limit below `config.max_reorder_bytes` (a
    /// driver sharing one budget among connections sets it before each
    /// input); segments beyond it are dropped, answered with a duplicate
    /// ACK and counted in `Stats::dropped_over_buffer_limit`.
    pub fn set_reorder_limit(&mut self, bytes: u64) {
        self.out_of_order.set_limit(bytes.min(self.config.max_reorder_bytes));
    }

    fn fail(&mut self, reason: FailReason) {
        self.state = State::Failed;
        self.timers.stop_all();
        self.pending_acks.clear();
        self.synack_pending = false;
        self.events.push_back(EngineEvent::Failed(reason));
    }

    fn ack_now(&mut self) {
        if self.pending_acks.len() >= MAX_PENDING_ACKS {
            self.pending_acks.pop_front();
        }
        self.pending_acks.push_back(self.rcv_nxt);
        self.unacked_segments = 0;
        self.timers.stop(Timer::DelayedAck);
    }

    /// An in-order segment that neither fills a hole nor ends the transfer:
    /// ACK it at once, or with delayed ACKs every second segment or when the
    /// timer fires (RFC 5681 §4.2, RFC 1122 §4.2.3.2).
    fn ack_in_order(&mut self, now: Instant) {
        if !self.config.delayed_acks {
            self.ack_now();
            return;
        }
        self.unacked_segments += 1;
        if self.unacked_segments >= 2 {
            self.ack_now();
        } else if self.timers.get(Timer::DelayedAck).is_none() {
            self.timers.set(Timer::DelayedAck, now + self.config.delayed_ack_timeout);
        }
    }

    fn on_segment(&mut self, now: Instant, repr: &Repr, data: &[u8]) {
        let fin = repr.control.contains(Control::FIN);
        if data.is_empty() && !fin {
            // A pure ACK (the handshake's third segment): nothing to answer.
            return;
        }
        if self.state == State::Finished {
            // Everything is here; whatever this is, repeat the final ACK.
            self.stats.dropped_datagrams += 1;
            self.ack_now();
            return;
        }
        let seq = repr.seq;
        let Some(data_end) = seq.checked_add(data.len() as u64) else {
            self.stats.dropped_datagrams += 1;
            return;
        };
        let seg_end = data_end.saturating_add(fin as u64);
        if seg_end <= self.rcv_nxt {
            // Entirely old: a retransmission whose ACK was lost, or a
            // duplicate. RFC 5681 §4.2 / RFC 793: ACK at once so that the
            // sender learns where we are.
            self.stats.dropped_datagrams += 1;
            self.ack_now();
            return;
        }
        let window_end = self.rcv_nxt.saturating_add(self.config.receive_window_bytes());
        if seq >= window_end {
            // Beyond anything a conforming sender sends: refuse to buffer it.
            self.stats.dropped_datagrams += 1;
            self.ack_now();
            return;
        }
        // Unread bytes count against the receive buffer: a sender ahead of
        // a slow reader finds it full, and is not answered (see
        // `set_receive_buffer`).
        let read_upto = self.rcv_nxt - self.delivered.len() as u64;
        let window_end = window_end.min(read_upto.saturating_add(self.receive_buffer_bytes));
        if seq >= window_end {
            self.stats.dropped_over_buffer_limit += 1;
            return;
        }
        if fin && self.fin_seq.is_none() {
            self.fin_seq = Some(data_end);
        }
        // Keep only [max(seq, rcv_nxt), min(data_end, window_end)).
        let from = self.rcv_nxt.saturating_sub(seq).min(data.len() as u64) as usize;
        let to = (window_end.min(data_end) - seq) as usize;
        let start = seq + from as u64;
        let bytes = &data[from..to.max(from)];

        let filled_hole = !self.out_of_order.is_empty();
        let delivered = &mut self.delivered;
        let offer = self.out_of_order.offer(self.rcv_nxt, start, bytes, |b| delivered.extend(b));
        if start > self.rcv_nxt {
            // Out of order: hold it (within the limit) and send a duplicate
            // ACK at once (RFC 5681 §4.2), which drives the sender's fast
            // retransmit.
            if offer == Offer::OverLimit {
                self.stats.dropped_over_buffer_limit += 1;
            }
            self.ack_now();
            return;
        }
        if let Offer::Accepted { delivered } = offer {
            self.rcv_nxt += delivered;
            self.stats.bytes_delivered += delivered;
        }
        if self.fin_seq == Some(self.rcv_nxt) {
            // The FIN is next in sequence: every byte is here.
            self.rcv_nxt += 1;
            self.ack_now();
            self.state = State::Finished;
            self.timers.stop_all();
            self.events.push_back(EngineEvent::Finished);
        } else if filled_hole {
            // RFC 5681 §4.2: ACK at once a segment that fills (part of) a gap.
            self.ack_now();
        } else {
            self.ack_in_order(now);
        }
    }

    fn emit(&self, buf: &mut [u8], control: u8, seq: u64, ack: u64) -> Option<Transmit> {
        // The acknowledgement of the FIN carries the commit token; while the
        // application has not given it, acknowledge only the data.
        let covers_fin = self.fin_seq.is_some_and(|fin| ack > fin);
        let (ack, token) = match self.commit.fin_ack() {
            FinAck::Confirmed(token) if covers_fin => (ack, Some(token)),
            FinAck::Held if covers_fin => (ack - 1, None),
            _ => (ack, None),
        };
        let repr = Repr {
            protocol: ProtocolId::Tcp,
            control: Control(control),
            hop_count: 0,
            connection_id: self.connection_id,
            seq,
            ack,
            d_max_us: 0,
            d_s_us: 0,
            sack_blocks: Vec::new(),
            payload_len: token.map_or(0, |t| t.len()),
        };
        let len = repr.buffer_len();
        if buf.len() < len {
            return None;
        }
        repr.emit(buf);
        if let Some(token) = token {
            buf[repr.header_len()..len].copy_from_slice(&token);
        }
        Some(Transmit { len })
    }
}

impl Engine for TcpReceiver {
    fn handle_input(&mut self, now: Instant, datagram: &[u8]) {
        self.stats.datagrams_received += 1;
        let Ok((repr, data)) = parse_datagram(datagram) else {
            self.stats.dropped_datagrams += 1;
            return;
        };
        if repr.protocol != ProtocolId::Tcp || repr.connection_id != self.connection_id || self.state == State::Failed {
            self.stats.dropped_datagrams += 1;
            return;
        }
        let syn = repr.control.contains(Control::SYN);
        let ack = repr.control.contains(Control::ACK);
        if repr.control.contains(Control::RST) {
            if self.state == State::Finished {
                self.stats.dropped_datagrams += 1;
            } else {
                self.fail(FailReason::Reset);
            }
            return;
        }
        match self.state {
            State::Listen | State::SynReceived if syn && !ack => {
                // Answer every copy of the SYN: the sender retransmits it
                // until a SYN-ACK gets through, so the receiver needs no
                // timer of its own for the handshake.
                self.state = State::SynReceived;
                self.synack_pending = true;
            }
            State::SynReceived if ack && !syn && repr.ack == DATA_START => {
                self.state = State::Established;
                self.events.push_back(EngineEvent::Connected);
                self.on_segment(now, &repr, data);
            }
            State::Established | State::Finished if ack && !syn => self.on_segment(now, &repr, data),
            _ => {
                // Data before the handshake, a stale SYN after it, or a
                // segment without ACK: nothing a correct peer sends now.
                self.stats.dropped_datagrams += 1;
                return;
            }
        }
        self.last_heard = now;
        if self.state != State::Finished {
            self.timers.set(Timer::Idle, now + self.idle_limit());
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        while let Some(timer) = self.timers.take_expired(now) {
            match timer {
                Timer::Idle => {
                    let silent_for = now.saturating_since(self.last_heard);
                    self.fail(FailReason::PeerUnreachable { silent_for });
                    return;
                }
                Timer::DelayedAck => self.ack_now(),
                Timer::Retransmit | Timer::Confirm | Timer::ElfnProbe | Timer::Pace => {}
            }
        }
    }

    fn poll_transmit(&mut self, _now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        if buf.len() < HEADER_LEN {
            return None;
        }
        if self.synack_pending {
            let t = self.emit(buf, Control::SYN | Control::ACK, 0, DATA_START)?;
            self.synack_pending = false;
            self.stats.datagrams_sent += 1;
            return Some(t);
        }
        let ack = *self.pending_acks.front()?;
        let t = self.emit(buf, Control::ACK, DATA_START, ack)?;
        self.pending_acks.pop_front();
        self.stats.datagrams_sent += 1;
        self.stats.feedback_packets += 1;
        Some(t)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next()
    }

    fn poll_event(&mut self) -> Option<EngineEvent> {
        self.events.pop_front()
    }

    fn stats(&self) -> &Stats {
        &self.stats
    }

    fn is_closed(&self) -> bool {
        matches!(self.state, State::Finished | State::Failed)
    }
}

impl ReceiveStream for TcpReceiver {
    fn take_delivered(&mut self) -> Vec<u8> {
        TcpReceiver::take_delivered(self)
    }
    fn read(&mut self, buf: &mut [u8]) -> usize {
        TcpReceiver::read(self, buf)
    }
    fn hold_fin_ack_for_commit(&mut self) {
        self.commit.hold();
    }
    fn set_commit_token(&mut self, token: CommitToken) {
        self.commit.set_token(token);
        // Tell the sender at once.
        if self.state == State::Finished {
            self.ack_now();
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
