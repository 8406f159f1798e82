//! The ATP sender (seed 002 §4.3; seed 001 §2.3 and §3.3).

use super::config::{AtpConfig, RouteFailureReaction};
use super::rate_adjustment;
use crate::engine::{Engine, EngineEvent, FailReason, RouteNotice, Stats, TraceSample, Transmit};
use crate::relay::duration_to_us;
use crate::segments::Segments;
use crate::stream::{CommitToken, SendBuffer};
use crate::timer::{TimerId, TimerTable};
use crate::wire::{self, Control, ProtocolId, Repr, HEADER_LEN};
use meshbed_core::{Duration, Instant};
use std::collections::VecDeque;

/// Where the sender is in its life.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SenderState {
    /// Sending a SYN probe (with SACK-REQ) every epoch until the receiver
    /// answers (seed 002 §4.3.1).
    Connecting,
    /// Quick-start again after `missed_feedback_probe` missed feedbacks or a
    /// "route failed" notice: one probe per epoch, piggybacked on the next
    /// in-sequence packet, until any feedback arrives (seed 002 §4.3.2 and
    /// §4.3.3).
    Probing,
    /// Paced transmission at rate S.
    Established,
    /// Every byte and the FIN acknowledged.
    Finished,
    Failed,
}

/// Timers, indexing the sender's [`TimerTable`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Timer {
    /// The next paced transmission (only while something can be sent).
    Pacing,
    /// The next SYN or quick-start probe.
    Probe,
    /// Feedback expected by now (1.1·E after the last one).
    Feedback,
    /// Nothing heard from the receiver for `idle_timeout`.
    Idle,
    /// Everything acknowledged: the commit confirmation is due by now.
    Confirm,
}

impl TimerId for Timer {
    const ALL: &'static [Timer] = &[Timer::Pacing, Timer::Probe, Timer::Feedback, Timer::Idle, Timer::Confirm];
}

/// What the next datagram carries.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Next {
    Syn,
    Segment(usize),
    Fin,
}

/// The sending side of one ATP connection.
///
/// Created with all the data to send ([`AtpSender::new`]), or with an empty
/// window the application refills through [`SendStream`]
/// ([`AtpSender::streaming`]). A driver calls
/// [`Engine::handle_input`] for each feedback datagram and
/// [`Engine::handle_timeout`] when [`Engine::poll_timeout`] is due, then
/// [`Engine::poll_transmit`] until `None`, then [`Engine::poll_event`]; see
/// [`crate::engine`]. The sender reports `Connected` when quick-start is
/// answered, `Finished` once every byte and the FIN are acknowledged, and
/// `Failed(PeerUnreachable)` after `idle_timeout` of silence.
///
/// Pacing and probe deadlines are served by `poll_transmit`: after
/// `handle_timeout` at such a deadline the driver must call `poll_transmit`
/// (as the calling order says) for the deadline to move on.
#[derive(Debug)]
pub struct AtpSender {
    config: AtpConfig,
    connection_id: u32,
    state: SenderState,
    /// S in packets per second.
    rate_pps: f64,
    /// The send buffer cut into `payload_per_packet` segments: scoreboard,
    /// cumulative ack and retransmission queue.
    segs: Segments,
    /// Earliest time of the next paced transmission.
    next_send: Instant,
    /// When the next SYN/probe may go.
    probe_next_at: Instant,
    probe_sent_at: Option<Instant>,
    fin_sent_at: Option<Instant>,
    feedback_deadline: Option<Instant>,
    missed_feedback: u32,
    /// Smoothed round-trip time of quick-start exchanges.
    rtt: Option<Duration>,
    /// What the acknowledgement of the FIN must carry (issue 9).
    commit_token: Option<CommitToken>,
    /// When the commit confirmation is due (every byte acknowledged).
    confirm_deadline: Option<Instant>,
    last_heard: Instant,
    /// A "route failed" notice not yet followed by "re-established".
    route_down: bool,
    /// "Route failed" notices that sent the sender back to probing.
    route_failure_probes: u64,
    timers: TimerTable<Timer>,
    events: VecDeque<EngineEvent>,
    stats: Stats,
}

impl AtpSender {
    /// A sender that will deliver `data` to the receiver of `connection_id`.
    /// The first SYN probe goes out at the first `poll_transmit`.
    pub fn new(config: AtpConfig, connection_id: u32, data: Vec<u8>, now: Instant) -> Self {
        Self::with_buffer(config, connection_id, SendBuffer::complete(data), now)
    }

    /// A sender whose application writes the stream through [`SendStream`],
    /// holding at most `window_bytes` unacknowledged and unsent bytes.
    pub fn streaming(config: AtpConfig, connection_id: u32, window_bytes: usize, now: Instant) -> Self {
        Self::with_buffer(config, connection_id, SendBuffer::new(window_bytes), now)
    }

    fn with_buffer(config: AtpConfig, connection_id: u32, buf: SendBuffer, now: Instant) -> Self {
        let mut sender = AtpSender {
            rate_pps: 1.0 / config.max_delay.as_secs_f64().max(1e-9),
            segs: Segments::new(buf, config.payload_per_packet()),
            config,
            connection_id,
            state: SenderState::Connecting,
            next_send: now,
            probe_next_at: now,
            probe_sent_at: None,
            fin_sent_at: None,
            feedback_deadline: None,
            missed_feedback: 0,
            rtt: None,
            commit_token: None,
            confirm_deadline: None,
            last_heard: now,
            route_down: false,
            route_failure_probes: 0,
            timers: TimerTable::default(),
            events: VecDeque::new(),
            stats: Stats::default(),
        };
        sender.refresh_timers();
        sender
    }

    pub fn config(&self) -> &AtpConfig {
        &self.config
    }
    pub fn connection_id(&self) -> u32 {
        self.connection_id
    }
    pub fn state(&self) -> SenderState {
        self.state
    }
    /// Current sending rate S in packets per second.
    pub fn rate_pps(&self) -> f64 {
        self.rate_pps
    }
    /// Current inter-packet delay D_s = 1/S.
    pub fn d_s(&self) -> Duration {
        Duration::from_secs_f64(1.0 / self.rate_pps)
    }
    /// Bytes the receiver has acknowledged cumulatively.
    pub fn bytes_acked(&self) -> u64 {
        self.segs.acked()
    }
    /// The stream's length once the application finished it, else the bytes
    /// written so far.
    pub fn total_bytes(&self) -> u64 {
        self.segs.len()
    }
    /// Consecutive epochs without feedback so far.
    pub fn missed_feedback(&self) -> u32 {
        self.missed_feedback
    }
    /// Whether the route is reported down (ELFN).
    pub fn route_down(&self) -> bool {
        self.route_down
    }
    /// How many "route failed" notices sent the sender back to probing.
    pub fn route_failure_probes(&self) -> u64 {
        self.route_failure_probes
    }
    /// Smoothed round-trip time of the quick-start exchanges, if measured.
    pub fn rtt(&self) -> Option<Duration> {
        self.rtt
    }
    /// Segments waiting for retransmission.
    pub fn retransmit_queue_len(&self) -> usize {
        self.segs.retransmit_queue_len()
    }

    fn is_closed_state(&self) -> bool {
        matches!(self.state, SenderState::Finished | SenderState::Failed)
    }

    fn trace(&mut self, sample: TraceSample) {
        if self.config.trace {
            self.events.push_back(EngineEvent::Trace(sample));
        }
    }

    /// Clamps and installs a new rate, tracing D_s when it changed.
    fn set_rate(&mut self, now: Instant, rate_pps: f64) {
        let max_rate = 1.0 / self.config.min_delay.as_secs_f64().max(1e-9);
        let min_rate = 1.0 / self.config.max_delay.as_secs_f64().max(1e-9);
        let rate = if rate_pps.is_nan() { min_rate } else { rate_pps.clamp(min_rate, max_rate) };
        if rate != self.rate_pps {
            self.rate_pps = rate;
            let d_s = self.d_s();
            self.trace(TraceSample::Ds { at: now, d_s });
        }
    }

    /// Feedback rate R = 1/D_avg, with D floored at `min_delay`.
    fn feedback_rate(&self, d_avg: Duration) -> f64 {
        1.0 / d_avg.max(self.config.min_delay).as_secs_f64()
    }

    /// Retransmissions wait at least this long after the previous copy.
    fn retransmit_guard(&self) -> Duration {
        let rtt = self.rtt.unwrap_or(Duration::ZERO).as_secs_f64();
        Duration::from_secs_f64(rtt * self.config.retransmit_guard_factor)
    }

    /// A FIN is repeated at most once per this interval while unanswered.
    fn fin_interval(&self) -> Duration {
        self.config.epoch.max(self.rtt.unwrap_or(Duration::ZERO) * 2)
    }

    fn fail(&mut self, reason: FailReason) {
        self.state = SenderState::Failed;
        self.events.push_back(EngineEvent::Failed(reason));
        self.timers.stop_all();
    }

    /// The next thing to send in the current state at `now`, if any; only
    /// reads state.
    fn next_packet(&self, now: Instant) -> Option<Next> {
        match self.state {
            SenderState::Connecting => (self.probe_next_at <= now).then_some(Next::Syn),
            SenderState::Probing => {
                if self.probe_next_at > now {
                    // Between probes only `ProbeWhileSending` sends, paced.
                    let sending = self.config.route_failure == RouteFailureReaction::ProbeWhileSending
                        && self.route_down
                        && self.next_send <= now;
                    return if sending { self.next_in_sequence() } else { None };
                }
                // seed 002 §4.3.3: the probe rides on the next in-sequence
                // packet; with everything already sent, on the FIN, or, while
                // the application has not finished the stream, on the first
                // unacknowledged segment.
                let first_unacked = self.segs.first_unacked();
                self.next_in_sequence()
                    .or_else(|| self.segs.buf().end().is_some().then_some(Next::Fin))
                    .or_else(|| (first_unacked < self.segs.next_new()).then_some(Next::Segment(first_unacked)))
            }
            SenderState::Established => {
                if self.next_send > now {
                    return None;
                }
                if let Some(next) = self.next_in_sequence() {
                    return Some(next);
                }
                // Everything written is sent; without the stream's end the
                // application owes more.
                self.segs.buf().end()?;
                let fin_due = match self.fin_sent_at {
                    None => true,
                    Some(sent) => sent + self.fin_interval() <= now,
                };
                fin_due.then_some(Next::Fin)
            }
            SenderState::Finished | SenderState::Failed => None,
        }
    }

    /// A queued retransmission, else new data.
    fn next_in_sequence(&self) -> Option<Next> {
        if let Some(i) = self.segs.next_retransmission() {
            return Some(Next::Segment(i));
        }
        let next_new = self.segs.next_new();
        (next_new < self.segs.sendable_segments()).then_some(Next::Segment(next_new))
    }

    /// When the pacing timer should fire, if anything waits to be sent.
    fn pacing_deadline(&self) -> Option<Instant> {
        if self.state != SenderState::Established {
            return None;
        }
        if self.next_in_sequence().is_some() {
            return Some(self.next_send);
        }
        self.segs.buf().end()?;
        match self.fin_sent_at {
            None => Some(self.next_send),
            Some(t) => Some(self.next_send.max(t + self.fin_interval())),
        }
    }

    fn refresh_timers(&mut self) {
        if self.is_closed_state() {
            self.timers.stop_all();
            return;
        }
        let probing = matches!(self.state, SenderState::Connecting | SenderState::Probing);
        let established = self.state == SenderState::Established;
        self.timers.set(Timer::Pacing, self.pacing_deadline());
        self.timers.set(Timer::Probe, probing.then_some(self.probe_next_at));
        self.timers.set(Timer::Feedback, if established { self.feedback_deadline } else { None });
        let pacing_while_probing = self.state == SenderState::Probing
            && self.route_down
            && self.config.route_failure == RouteFailureReaction::ProbeWhileSending
            && self.next_in_sequence().is_some();
        if pacing_while_probing {
            self.timers.set(Timer::Pacing, self.next_send);
        }
        self.timers.set(Timer::Idle, self.last_heard + self.config.silence_allowed(self.route_down));
        self.timers.set(Timer::Confirm, self.confirm_deadline);
    }

    /// Queues the not-yet-held segments overlapping `[start, end)` whose last
    /// copy is older than the retransmission guard.
    fn mark_hole(&mut self, now: Instant, start: u64, end: u64) {
        if end <= start {
            return;
        }
        let guard = self.retransmit_guard();
        let next_new = self.segs.next_new();
        let first = self.segs.seg_of(start).max(self.segs.first_unacked());
        let last = self.segs.seg_of(end - 1).min(next_new.saturating_sub(1));
        if next_new == 0 || first > last {
            return;
        }
        for i in first..=last {
            let seg = self.segs.segment(i);
            if !seg.sacked && !seg.queued && seg.sent_at_least_ago(guard, now) {
                self.segs.queue_retransmission(i);
            }
        }
    }

    /// Applies the reliability part of a feedback packet (seed 002 §4.3.3;
    /// seed 001 §3.3): cumulative ack, SACK blocks (ranges the receiver
    /// holds), holes between them, and SACK-MORE.
    fn on_reliability(&mut self, now: Instant, repr: &Repr) {
        if self.segs.ack_to(repr.ack) {
            self.stats.bytes_delivered = self.segs.acked();
        }
        let mut prev = self.segs.acked();
        let mut blocks = repr.sack_blocks.clone();
        blocks.sort_unstable();
        for &(start, end) in &blocks {
            if end <= prev {
                continue;
            }
            let start = start.max(prev);
            self.mark_hole(now, prev, start);
            // Segments wholly inside the block are held by the receiver.
            let first = self.segs.seg_of(start).max(self.segs.first_unacked());
            let stop = self.segs.seg_of(end).min(self.segs.next_new());
            for i in first..stop {
                if self.segs.seg_start(i) >= start && self.segs.seg_end(i) <= end {
                    self.segs.mark_sacked(i);
                }
            }
            prev = prev.max(end);
        }
        // A receiver that saw the FIN knows where the data ends, so the gap
        // after its last block is a hole too, unless the block list was cut
        // at its maximum and more blocks may follow.
        let control = repr.control;
        if control.contains(Control::FIN)
            && self.fin_sent_at.is_some()
            && blocks.len() < wire::MAX_SACK_BLOCKS.min(self.config.max_sack_blocks.max(1))
        {
            self.mark_hole(now, prev, self.segs.len());
        }
        // seed 001 §3.3: SACK-MORE asks for everything not yet acknowledged.
        if control.contains(Control::SACK_MORE) {
            self.mark_hole(now, self.segs.acked(), self.segs.sent_end());
        }
    }

    /// Quick-start answer: S = R = 1/D_max of the probe (seed 002 §4.3.1 Fig.
    /// 6 lines 14–18; seed 001 §2.3).
    fn on_quick_start_answer(&mut self, now: Instant, d_avg: Duration) {
        if let Some(sent) = self.probe_sent_at.take() {
            let sample = now.saturating_since(sent);
            self.rtt = Some(match self.rtt {
                None => sample,
                // TCP's 7/8 smoothing (RFC 6298).
                Some(rtt) => Duration::from_nanos((rtt.as_nanos() / 8) * 7 + sample.as_nanos() / 8),
            });
        }
        match self.state {
            SenderState::Connecting => self.events.push_back(EngineEvent::Connected),
            SenderState::Probing => self.trace(TraceSample::Probing { at: now, entered: false, route_failure: false }),
            _ => {}
        }
        self.state = SenderState::Established;
        let rate = self.feedback_rate(d_avg);
        // Force a trace of the first D_s even if the clamp leaves it equal.
        self.rate_pps = f64::NAN;
        self.set_rate(now, rate);
        self.next_send = now;
    }
}

impl Engine for AtpSender {
    fn handle_input(&mut self, now: Instant, datagram: &[u8]) {
        self.stats.datagrams_received += 1;
        let (repr, payload) = match wire::parse_datagram(datagram) {
            Ok(parsed) => parsed,
            Err(_) => {
                self.stats.dropped_datagrams += 1;
                return;
            }
        };
        let ours = repr.protocol == ProtocolId::Atp && repr.connection_id == self.connection_id;
        // Feedback about bytes never sent did not come from our receiver:
        // ignore all of it (issue 9: a forged ack must not end a transfer).
        let sent_end = self.segs.sent_end();
        let beyond_sent = repr.ack > sent_end || repr.sack_blocks.iter().any(|&(_, end)| end > sent_end);
        if ours && repr.control.contains(Control::SACK_OPT) && beyond_sent {
            self.stats.dropped_datagrams += 1;
            self.stats.protocol_violations += 1;
            return;
        }
        // The sender only expects feedback; anything else is stray.
        let feedback = repr.control.contains(Control::SACK_OPT);
        if !ours || self.is_closed_state() || !(feedback || repr.control.contains(Control::RST)) {
            self.stats.dropped_datagrams += 1;
            return;
        }
        self.last_heard = now;
        if repr.control.contains(Control::RST) {
            self.fail(FailReason::of_reset(datagram));
            return;
        }
        self.stats.feedback_packets += 1;
        let d_avg = Duration::from_micros(u64::from(repr.d_max_us));
        self.trace(TraceSample::DAvgReceived { at: now, d_avg });
        self.missed_feedback = 0;
        self.feedback_deadline = Some(now + self.config.feedback_timeout());
        match self.state {
            // seed 002 §4.3.2: "once it hears from the receiver, it will use
            // the rate on the feedback packet ... as part of its quick-start".
            SenderState::Connecting | SenderState::Probing => self.on_quick_start_answer(now, d_avg),
            _ => {
                let r = self.feedback_rate(d_avg);
                let (_, s) = rate_adjustment(self.config.phi, self.config.kappa, self.rate_pps, r);
                self.set_rate(now, s);
            }
        }
        self.on_reliability(now, &repr);
        let all_acked =
            repr.control.contains(Control::FIN) && self.fin_sent_at.is_some() && self.segs.acked() == self.segs.len();
        let confirmed = match &self.commit_token {
            None => true,
            Some(token) => payload == token.as_slice(),
        };
        if all_acked && !confirmed && !payload.is_empty() {
            self.stats.protocol_violations += 1;
        }
        if all_acked && confirmed {
            self.state = SenderState::Finished;
            self.events.push_back(EngineEvent::Finished);
        } else if self.commit_token.is_some() && self.segs.all_acked() && self.confirm_deadline.is_none() {
            // Every byte is acknowledged and released: the confirmation must
            // follow within the idle time, or a forged ack would leave the
            // sender repeating its FIN forever.
            self.confirm_deadline = Some(now + self.config.idle_timeout);
        }
        self.refresh_timers();
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.is_closed_state() {
            return;
        }
        if self.timers.is_expired(Timer::Idle, now) {
            let silent_for = now.saturating_since(self.last_heard);
            self.fail(FailReason::PeerUnreachable { silent_for });
            return;
        }
        if self.timers.is_expired(Timer::Confirm, now) {
            self.fail(FailReason::Unconfirmed { waited: self.config.idle_timeout });
            return;
        }
        if self.timers.is_expired(Timer::Feedback, now) {
            // seed 002 §4.3.2: a multiplicative decrease for each epoch
            // without feedback, up to two; at the third, quick-start again.
            self.missed_feedback += 1;
            if self.missed_feedback >= self.config.missed_feedback_probe {
                self.state = SenderState::Probing;
                self.trace(TraceSample::Probing { at: now, entered: true, route_failure: false });
                self.probe_next_at = now;
                self.feedback_deadline = None;
            } else {
                let rate = self.rate_pps * self.config.missed_feedback_decrease;
                self.set_rate(now, rate);
                self.feedback_deadline = Some(now + self.config.feedback_timeout());
            }
        }
        // Pacing and Probe deadlines are served by poll_transmit.
        self.refresh_timers();
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        let next = self.next_packet(now)?;
        // A probe when one is due; `ProbeWhileSending`'s paced data between
        // probes goes as usual.
        let probing = matches!(self.state, SenderState::Connecting | SenderState::Probing) && self.probe_next_at <= now;
        let (seq, payload, mut control) = match next {
            Next::Syn => (0, 0..0, Control(Control::SYN)),
            Next::Segment(i) => {
                let (s, e) = (self.segs.seg_start(i), self.segs.seg_end(i));
                (s, s as usize..e as usize, Control(0))
            }
            Next::Fin => (self.segs.len(), 0..0, Control(Control::FIN)),
        };
        if probing {
            // seed 001 §3.3: SACK-REQ asks for feedback at once.
            control = control.with(Control::SACK_REQ);
        }
        let repr = Repr {
            protocol: ProtocolId::Atp,
            control,
            hop_count: 0,
            connection_id: self.connection_id,
            seq,
            ack: 0,
            d_max_us: 0,
            // seed 000 §V.A.3: every packet carries the sender's current D_s.
            d_s_us: duration_to_us(self.d_s()),
            sack_blocks: Vec::new(),
            payload_len: payload.len(),
        };
        let len = repr.buffer_len();
        if buf.len() < len {
            return None;
        }
        repr.emit(buf);
        if !payload.is_empty() {
            self.segs.buf().copy_out(seq, &mut buf[HEADER_LEN..len]);
        }

        self.stats.datagrams_sent += 1;
        match next {
            Next::Syn => {}
            Next::Segment(i) => {
                if self.segs.record_send(i, now) {
                    self.stats.bytes_sent += payload.len() as u64;
                } else {
                    self.stats.retransmissions += 1;
                    self.stats.retransmitted_bytes += payload.len() as u64;
                    let sample = TraceSample::Retransmit { at: now, seq, len: payload.len() };
                    self.trace(sample);
                }
            }
            Next::Fin => self.fin_sent_at = Some(now),
        }
        if probing {
            self.probe_sent_at = Some(now);
            self.probe_next_at = now + self.config.epoch;
        } else {
            // Pace: keep the schedule when a little late, restart it when
            // more than one interval late (no bursts after a quiet spell).
            let d_s = self.d_s();
            let scheduled = self.next_send + d_s;
            self.next_send = if scheduled <= now { now + d_s } else { scheduled };
        }
        self.refresh_timers();
        Some(Transmit { len })
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next()
    }

    /// Seed 002 §4.3.3: on a link-failure notification the sender enters
    /// the connection-initiation phase at once — a probe now and every
    /// epoch, each on the next in-sequence packet — without cutting its
    /// rate (§5.2); the feedback to a probe sets the rate on the new route.
    /// On "re-established" while still probing, the next probe goes at once
    /// rather than up to an epoch later (not in the text: the new route is
    /// there to be measured). A sender still connecting keeps sending SYN
    /// probes as it does.
    fn handle_route_notice(&mut self, now: Instant, notice: RouteNotice) {
        if self.is_closed_state() {
            return;
        }
        match notice {
            RouteNotice::Failed => {
                self.route_down = true;
                if self.config.route_failure != RouteFailureReaction::Ignore && self.state == SenderState::Established {
                    self.state = SenderState::Probing;
                    self.trace(TraceSample::Probing { at: now, entered: true, route_failure: true });
                    self.route_failure_probes += 1;
                    self.probe_next_at = now;
                    self.feedback_deadline = None;
                    self.missed_feedback = 0;
                }
            }
            RouteNotice::Reestablished => {
                self.route_down = false;
                if self.config.route_failure != RouteFailureReaction::Ignore && self.state == SenderState::Probing {
                    self.probe_next_at = self.probe_next_at.min(now);
                }
            }
        }
        self.refresh_timers();
    }

    fn poll_event(&mut self) -> Option<EngineEvent> {
        self.events.pop_front()
    }

    fn stats(&self) -> &Stats {
        &self.stats
    }

    fn is_closed(&self) -> bool {
        self.is_closed_state()
    }
}

crate::segments::segments_send_stream!(AtpSender);
