//! The MTL receiver: in-order delivery and Explicit Gap Notifications
//! (seed 004 §III.C.1).

use super::config::MtlConfig;
use crate::engine::{Engine, EngineEvent, FailReason, ReceiveBuffer, Stats, Transmit};
use crate::reorder::{Offer, ReorderBuffer};
use crate::stream::{CommitConfirmation, CommitToken, FinAck, ReceiveStream};
use crate::timer::{TimerId, TimerTable};
use crate::wire::{self, Control, ProtocolId, Repr};
use meshbed_core::Instant;
use std::collections::VecDeque;

/// Where the receiver is in its life.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MtlReceiverState {
    /// Waiting for the sender's first packet.
    Listening,
    Established,
    /// Every byte up to the FIN delivered; lingering to answer repeated FINs.
    Finished,
    Closed,
    Failed,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Timer {
    /// A rate-limited EGN for a new gap, or the repeat of an open gap's EGN.
    Egn,
    /// Nothing heard from the sender for `idle_timeout`.
    Idle,
    /// A finished receiver closes `linger` after the last packet.
    Linger,
}

impl TimerId for Timer {
    const ALL: &'static [Timer] = &[Timer::Egn, Timer::Idle, Timer::Linger];
}

/// One EGN waiting to be written.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct PendingEgn {
    /// The sequence number of the packet that asked for it (echoed).
    echo_seq: u64,
    /// It answers an explicit request (SACK-REQ) or the SYN.
    requested: bool,
}

/// The receiving side of one MTL connection.
///
/// The driver calls the [`Engine`] methods in the order of [`crate::engine`];
/// the application takes in-order bytes with [`MtlReceiver::take_delivered`].
/// EGN rules (the paper leaves their timing open; see [`MtlConfig`]):
/// * a data packet beyond every byte the sender is known to have sent opens
///   a gap: an EGN goes at once, or `egn_min_interval` after the previous
///   unsolicited one;
/// * while any gap is open, the EGN is repeated `egn_repeat_interval` after
///   the last EGN;
/// * a packet carrying SACK-REQ (the SYN, an RTT probe, the sender's
///   explicit request) and every FIN are answered at once.
///
/// Every EGN is cumulative: the ack and every gap known, up to
/// `max_gaps_per_egn`.
#[derive(Debug)]
pub struct MtlReceiver {
    config: MtlConfig,
    connection_id: u32,
    state: MtlReceiverState,
    /// Cumulative ack: bytes `[0, ack)` delivered in order.
    ack: u64,
    out_of_order: ReorderBuffer,
    delivered: ReceiveBuffer,
    /// One past the highest byte the sender is known to have sent (data
    /// seen, or the `seq` of a request or FIN): everything in `[ack,
    /// known_end)` not held is a gap.
    known_end: u64,
    fin_seq: Option<u64>,
    /// A requested EGN or FIN answer, sent at the next `poll_transmit`.
    answer: Option<PendingEgn>,
    /// An unsolicited EGN is due (at the Egn timer).
    gap_egn_due: Option<Instant>,
    last_egn_sent: Option<Instant>,
    /// The last unsolicited EGN (for a new gap or a repeat).
    last_gap_egn_sent: Option<Instant>,
    last_heard: Instant,
    commit: CommitConfirmation,
    timers: TimerTable<Timer>,
    events: VecDeque<EngineEvent>,
    stats: Stats,
}

impl MtlReceiver {
    /// A receiver listening for connection `connection_id`.
    pub fn new(config: MtlConfig, connection_id: u32, now: Instant) -> Self {
        let config = config.sanitized();
        MtlReceiver {
            out_of_order: ReorderBuffer::new(config.max_reorder_bytes),
            config,
            connection_id,
            state: MtlReceiverState::Listening,
            ack: 0,
            delivered: ReceiveBuffer::default(),
            known_end: 0,
            fin_seq: None,
            answer: None,
            gap_egn_due: None,
            last_egn_sent: None,
            last_gap_egn_sent: None,
            last_heard: now,
            commit: CommitConfirmation::default(),
            timers: TimerTable::default(),
            events: VecDeque::new(),
            stats: Stats::default(),
        }
    }

    pub fn config(&self) -> &MtlConfig {
        &self.config
    }
    pub fn state(&self) -> MtlReceiverState {
        self.state
    }
    /// Bytes delivered in order.
    pub fn ack(&self) -> u64 {
        self.ack
    }
    /// The memory the out-of-order bytes are charged ([`crate::reorder`]).
    pub fn reorder_charge(&self) -> u64 {
        self.out_of_order.charge()
    }
    /// Lowers the out-of-order limit below `config.max_reorder_bytes`.
    pub fn set_reorder_limit(&mut self, bytes: u64) {
        self.out_of_order.set_limit(bytes.min(self.config.max_reorder_bytes));
    }
    /// Takes every in-order byte not yet read.
    pub fn take_delivered(&mut self) -> Vec<u8> {
        self.delivered.take_all()
    }

    /// The gaps an EGN names now: the ranges of `[ack, known_end)` not held,
    /// lowest first, at most `max_gaps_per_egn`.
    pub fn gaps(&self) -> Vec<(u64, u64)> {
        let mut gaps = Vec::new();
        let mut cursor = self.ack;
        for (start, end) in self.out_of_order.ranges() {
            if start > cursor {
                gaps.push((cursor, start));
            }
            cursor = cursor.max(end);
        }
        if cursor < self.known_end {
            gaps.push((cursor, self.known_end));
        }
        gaps.truncate(self.config.max_gaps_per_egn);
        gaps
    }

    fn has_gap(&self) -> bool {
        self.ack < self.known_end
    }

    fn fail(&mut self, reason: FailReason) {
        self.state = MtlReceiverState::Failed;
        self.events.push_back(EngineEvent::Failed(reason));
        self.answer = None;
        self.gap_egn_due = None;
        self.timers.stop_all();
    }

    /// Asks for an unsolicited EGN for a new gap, at once or when the
    /// minimum interval since the last EGN has passed.
    fn schedule_gap_egn(&mut self, now: Instant) {
        let earliest = self.last_gap_egn_sent.map_or(now, |t| (t + self.config.egn_min_interval).max(now));
        self.gap_egn_due = Some(self.gap_egn_due.map_or(earliest, |d| d.min(earliest)));
    }

    fn refresh_timers(&mut self) {
        let established = self.state == MtlReceiverState::Established;
        // An open gap's EGN repeats; a new gap's EGN may be due sooner.
        let repeat = (established && self.has_gap())
            .then(|| self.last_egn_sent.map(|t| t + self.config.egn_repeat_interval))
            .flatten();
        let egn = [self.gap_egn_due.filter(|_| established), repeat].into_iter().flatten().min();
        self.timers.set(Timer::Egn, egn);
        self.timers.set(Timer::Idle, established.then(|| self.last_heard + self.config.idle_timeout));
        let linger = (self.state == MtlReceiverState::Finished).then(|| self.last_heard + self.config.linger);
        self.timers.set(Timer::Linger, linger);
    }

    /// Delivers what the FIN ends, once every byte before it is in.
    fn check_finished(&mut self) {
        if self.state == MtlReceiverState::Established && self.fin_seq == Some(self.ack) {
            self.state = MtlReceiverState::Finished;
            self.gap_egn_due = None;
            self.events.push_back(EngineEvent::Finished);
        }
    }
}

impl Engine for MtlReceiver {
    fn handle_input(&mut self, now: Instant, datagram: &[u8]) {
        self.stats.datagrams_received += 1;
        let Ok((repr, payload)) = wire::parse_datagram(datagram) else {
            self.stats.dropped_datagrams += 1;
            return;
        };
        let ours = repr.protocol == ProtocolId::Tcp && repr.connection_id == self.connection_id;
        let closed = matches!(self.state, MtlReceiverState::Closed | MtlReceiverState::Failed);
        // EGNs travel the other way; TCP's ACK flag is not MTL's.
        let from_sender = !repr.control.contains(Control::SACK_OPT) && !repr.control.contains(Control::ACK);
        if !ours || closed || !from_sender {
            self.stats.dropped_datagrams += 1;
            return;
        }
        self.last_heard = now;
        if repr.control.contains(Control::RST) {
            self.fail(FailReason::Reset);
            return;
        }
        if self.state == MtlReceiverState::Listening {
            self.state = MtlReceiverState::Established;
            self.events.push_back(EngineEvent::Connected);
        }
        let end = repr.seq.saturating_add(payload.len() as u64);
        if !payload.is_empty() {
            // A packet beyond every byte known to be sent opens a gap.
            let opens_gap = repr.seq > self.known_end.max(self.ack);
            let delivered = &mut self.delivered;
            match self.out_of_order.offer(self.ack, repr.seq, payload, |bytes| delivered.extend(bytes)) {
                Offer::Accepted { delivered } => {
                    self.ack += delivered;
                    self.stats.bytes_delivered = self.ack;
                }
                Offer::Duplicate => self.stats.dropped_datagrams += 1,
                Offer::OverLimit => self.stats.dropped_over_buffer_limit += 1,
            }
            if opens_gap && self.state == MtlReceiverState::Established {
                self.schedule_gap_egn(now);
            }
        }
        // A request's or FIN's seq says the sender sent everything before it.
        let fin = repr.control.contains(Control::FIN);
        if fin {
            // A FIN below bytes already seen is not this stream's end.
            if end >= self.known_end.max(self.ack) && self.fin_seq.is_none_or(|f| f == repr.seq) {
                self.fin_seq = Some(repr.seq);
            } else {
                self.stats.protocol_violations += 1;
            }
        }
        if self.fin_seq.is_none_or(|f| end <= f) {
            self.known_end = self.known_end.max(end);
        }
        self.check_finished();
        if fin || repr.control.contains(Control::SACK_REQ) || repr.control.contains(Control::SYN) {
            let answer = PendingEgn {
                echo_seq: repr.seq,
                requested: repr.control.contains(Control::SACK_REQ) || repr.control.contains(Control::SYN),
            };
            // One answer says everything (EGNs are cumulative): requests
            // arriving before it leaves share it, echoing the latest, so a
            // flood of requests cannot queue a flood of answers.
            let requested = answer.requested || self.answer.is_some_and(|a| a.requested);
            self.answer = Some(PendingEgn { requested, ..answer });
        }
        self.refresh_timers();
    }

    fn handle_timeout(&mut self, now: Instant) {
        if matches!(self.state, MtlReceiverState::Closed | MtlReceiverState::Failed) {
            return;
        }
        if self.timers.is_expired(Timer::Idle, now) {
            let silent_for = now.saturating_since(self.last_heard);
            self.fail(FailReason::PeerUnreachable { silent_for });
            return;
        }
        if self.timers.is_expired(Timer::Linger, now) {
            self.state = MtlReceiverState::Closed;
            self.timers.stop_all();
            return;
        }
        if self.timers.is_expired(Timer::Egn, now) {
            // Served by poll_transmit: the EGN goes now.
            self.gap_egn_due = Some(now);
            self.timers.stop(Timer::Egn);
        }
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        if matches!(self.state, MtlReceiverState::Closed | MtlReceiverState::Failed) {
            return None;
        }
        let (echo_seq, requested) = match self.answer {
            Some(a) => (a.echo_seq, a.requested),
            None => {
                let due = self.gap_egn_due.is_some_and(|t| t <= now)
                    || (self.has_gap()
                        && self.last_egn_sent.is_some_and(|t| t + self.config.egn_repeat_interval <= now));
                if self.state != MtlReceiverState::Established || !self.has_gap() {
                    // The gap was filled before its EGN went: nothing to say.
                    self.gap_egn_due = None;
                    self.refresh_timers();
                    return None;
                }
                if !due {
                    return None;
                }
                (self.known_end, false)
            }
        };
        let mut control = Control(Control::SACK_OPT);
        if requested {
            control = control.with(Control::SACK_REQ);
        }
        let mut token = None;
        if self.fin_seq == Some(self.ack) {
            match self.commit.fin_ack() {
                FinAck::Confirmed(t) => {
                    control = control.with(Control::FIN);
                    token = Some(t);
                }
                FinAck::Plain => control = control.with(Control::FIN),
                FinAck::Held => {}
            }
        }
        let repr = Repr {
            protocol: ProtocolId::Tcp,
            control,
            hop_count: 0,
            connection_id: self.connection_id,
            seq: echo_seq,
            ack: self.ack,
            d_max_us: 0,
            d_s_us: 0,
            sack_blocks: self.gaps(),
            payload_len: token.map_or(0, |t| t.len()),
        };
        let len = repr.buffer_len();
        if buf.len() < len {
            return None;
        }
        repr.emit(buf);
        if let Some(t) = token {
            buf[repr.header_len()..len].copy_from_slice(&t);
        }
        if self.answer.take().is_none() {
            self.gap_egn_due = None;
            self.last_gap_egn_sent = Some(now);
        }
        self.last_egn_sent = Some(now);
        self.stats.datagrams_sent += 1;
        self.stats.feedback_packets += 1;
        self.refresh_timers();
        Some(Transmit { len })
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
        matches!(self.state, MtlReceiverState::Closed | MtlReceiverState::Failed)
    }
}

impl ReceiveStream for MtlReceiver {
    fn take_delivered(&mut self) -> Vec<u8> {
        self.delivered.take_all()
    }
    fn read(&mut self, buf: &mut [u8]) -> usize {
        self.delivered.read(buf)
    }
    fn hold_fin_ack_for_commit(&mut self) {
        self.commit.hold();
    }
    fn set_commit_token(&mut self, token: CommitToken) {
        self.commit.set_token(token);
    }
}
