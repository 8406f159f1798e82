//! The MTL receiver: in-order delivery and Explicit Gap Notifications
//! (seed 004 §III.C.1), as the `ReceiveControl` of the shared [`Receiver`]
//! skeleton.

use super::config::MtlConfig;
use crate::engine::Transmit;
use crate::engine_core::Phase;
use crate::receiver_core::{
    emit_ack, FinAck, Reassembly, ReceiveControl, Receiver, ReceiverCore, ReceiverState, ReceiverTimer,
};
use crate::reorder::Offer;
use crate::timer::TimerId;
use crate::wire::{Control, ProtocolId, Repr};
use meshbed_core::Instant;

/// Where the receiver is in its life: the lifecycle every receiver shares.
pub type MtlReceiverState = ReceiverState;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Timer {
    /// Nothing heard from the sender for `idle_timeout`.
    Idle,
    /// A finished receiver closes `linger` after the last packet.
    Linger,
    /// A rate-limited EGN for a new gap, or the repeat of an open gap's EGN.
    Egn,
}

impl TimerId for Timer {
    const ALL: &'static [Timer] = &[Timer::Idle, Timer::Linger, Timer::Egn];
}

impl ReceiverTimer for Timer {
    const IDLE: Timer = Timer::Idle;
    const LINGER: Option<Timer> = Some(Timer::Linger);
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
/// The driver calls the [`Engine`](crate::Engine) methods in the order of [`crate::engine`];
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
pub type MtlReceiver = Receiver<MtlReceiveControl>;

/// MTL's part of [`MtlReceiver`]: which gaps are known and when an EGN goes.
#[derive(Debug)]
pub struct MtlReceiveControl {
    config: MtlConfig,
    /// One past the highest byte the sender is known to have sent (data
    /// seen, or the `seq` of a request or FIN): everything in `[ack,
    /// known_end)` not held is a gap.
    known_end: u64,
    /// A requested EGN or FIN answer, sent at the next `poll_transmit`.
    answer: Option<PendingEgn>,
    /// An unsolicited EGN is due (at the Egn timer).
    gap_egn_due: Option<Instant>,
    last_egn_sent: Option<Instant>,
    /// The last unsolicited EGN (for a new gap or a repeat).
    last_gap_egn_sent: Option<Instant>,
}

impl MtlReceiver {
    /// A receiver listening for connection `connection_id`.
    pub fn new(config: MtlConfig, connection_id: u32, now: Instant) -> Self {
        let config = config.sanitized();
        let stream = Reassembly::new(0, config.max_reorder_bytes);
        let core = ReceiverCore::new(ProtocolId::Tcp, connection_id, now, config.trace, stream);
        let control = MtlReceiveControl {
            config,
            known_end: 0,
            answer: None,
            gap_egn_due: None,
            last_egn_sent: None,
            last_gap_egn_sent: None,
        };
        Receiver::with_parts(core, control)
    }

    pub fn config(&self) -> &MtlConfig {
        &self.control.config
    }
    /// Bytes delivered in order.
    pub fn ack(&self) -> u64 {
        self.core.stream.next
    }

    /// The gaps an EGN names now: the ranges of `[ack, known_end)` not held,
    /// lowest first, at most `max_gaps_per_egn`.
    pub fn gaps(&self) -> Vec<(u64, u64)> {
        self.control.gaps(&self.core)
    }
}

type Core = ReceiverCore<Timer>;

impl MtlReceiveControl {
    fn gaps(&self, core: &Core) -> Vec<(u64, u64)> {
        let mut gaps = Vec::new();
        let mut cursor = core.stream.next;
        for (start, end) in core.stream.out_of_order.ranges() {
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

    fn has_gap(&self, core: &Core) -> bool {
        core.stream.next < self.known_end
    }

    /// Asks for an unsolicited EGN for a new gap, at once or when the
    /// minimum interval since the last EGN has passed.
    fn schedule_gap_egn(&mut self, now: Instant) {
        let earliest = self.last_gap_egn_sent.map_or(now, |t| (t + self.config.egn_min_interval).max(now));
        self.gap_egn_due = Some(self.gap_egn_due.map_or(earliest, |d| d.min(earliest)));
    }

    fn refresh(&mut self, core: &mut Core) {
        let established = core.phase() == Phase::Established;
        // An open gap's EGN repeats; a new gap's EGN may be due sooner.
        let repeat = (established && self.has_gap(core))
            .then(|| self.last_egn_sent.map(|t| t + self.config.egn_repeat_interval))
            .flatten();
        let egn = [self.gap_egn_due.filter(|_| established), repeat].into_iter().flatten().min();
        let idle = established.then(|| core.last_heard + self.config.idle_timeout);
        let linger = (core.phase() == Phase::Finished).then(|| core.last_heard + self.config.linger);
        let timers = &mut core.timers;
        timers.set(Timer::Egn, egn);
        timers.set(Timer::Idle, idle);
        timers.set(Timer::Linger, linger);
    }

    /// Delivers what the FIN ends, once every byte before it is in.
    fn check_finished(&mut self, core: &mut Core) {
        if core.phase() == Phase::Established && core.stream.fin_seq == Some(core.stream.next) {
            core.finish();
            self.gap_egn_due = None;
        }
    }
}

impl ReceiveControl for MtlReceiveControl {
    type Timer = Timer;

    /// EGNs travel the other way; TCP's ACK flag is not MTL's.
    fn screen(&self, core: &Core, ours: bool, repr: &Repr) -> bool {
        let from_sender = !repr.control.contains(Control::SACK_OPT) && !repr.control.contains(Control::ACK);
        ours && !core.is_closed() && from_sender
    }

    fn on_packet(&mut self, core: &mut Core, now: Instant, repr: &Repr, payload: &[u8]) {
        if core.phase() == Phase::Connecting {
            core.establish();
        }
        let end = repr.seq.saturating_add(payload.len() as u64);
        if !payload.is_empty() {
            // A packet beyond every byte known to be sent opens a gap.
            let opens_gap = repr.seq > self.known_end.max(core.stream.next);
            match core.stream.offer(&mut core.stats, repr.seq, payload) {
                Offer::Accepted { .. } => {}
                Offer::Duplicate => core.stats.dropped_datagrams += 1,
                Offer::OverLimit => core.stats.dropped_over_buffer_limit += 1,
            }
            if opens_gap && core.phase() == Phase::Established {
                self.schedule_gap_egn(now);
            }
        }
        // A request's or FIN's seq says the sender sent everything before it.
        let fin = repr.control.contains(Control::FIN);
        let fin_seq = core.stream.fin_seq;
        if fin {
            // A FIN below bytes already seen is not this stream's end.
            if end >= self.known_end.max(core.stream.next) && fin_seq.is_none_or(|f| f == repr.seq) {
                core.stream.fin_seq = Some(repr.seq);
            } else {
                core.stats.protocol_violations += 1;
            }
        }
        if core.stream.fin_seq.is_none_or(|f| end <= f) {
            self.known_end = self.known_end.max(end);
        }
        self.check_finished(core);
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
    }

    fn refresh_timers(&mut self, core: &mut Core) {
        self.refresh(core);
    }

    fn on_timer(&mut self, _core: &mut Core, now: Instant, timer: Timer) {
        if timer == Timer::Egn {
            // Served by poll_transmit: the EGN goes now.
            self.gap_egn_due = Some(now);
        }
    }

    fn poll_transmit(&mut self, core: &mut Core, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        if core.is_closed() {
            return None;
        }
        let (echo_seq, requested) = match self.answer {
            Some(a) => (a.echo_seq, a.requested),
            None => {
                let due = self.gap_egn_due.is_some_and(|t| t <= now)
                    || (self.has_gap(core)
                        && self.last_egn_sent.is_some_and(|t| t + self.config.egn_repeat_interval <= now));
                if core.phase() != Phase::Established || !self.has_gap(core) {
                    // The gap was filled before its EGN went: nothing to say.
                    self.gap_egn_due = None;
                    self.refresh(core);
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
        let stream = &core.stream;
        let fin_ack = core.fin_ack(stream.fin_seq == Some(stream.next));
        if matches!(fin_ack, Some(FinAck::Confirmed(_) | FinAck::Plain)) {
            control = control.with(Control::FIN);
        }
        let mut repr = core.header(control, echo_seq, stream.next);
        repr.sack_blocks = self.gaps(core);
        let sent = emit_ack(repr, fin_ack, buf)?;
        if self.answer.take().is_none() {
            self.gap_egn_due = None;
            self.last_gap_egn_sent = Some(now);
        }
        self.last_egn_sent = Some(now);
        core.stats.datagrams_sent += 1;
        core.stats.feedback_packets += 1;
        self.refresh(core);
        Some(sent)
    }

    fn on_close(&mut self) {
        self.answer = None;
        self.gap_egn_due = None;
    }
}
