//! The ATP sender (seed 002 §4.3; seed 001 §2.3 and §3.3): quick-start,
//! the rate S from D_avg feedback and SACK retransmission, as the
//! [`SendControl`] of the shared [`Sender`] skeleton.

use super::config::{AtpConfig, RouteFailureReaction};
use super::delivery::DeliveryMeter;
use super::rate_adjustment;
use crate::engine::{RouteNotice, TraceSample, Transmit};
use crate::engine_core::Phase;
use crate::relay::duration_to_us;
use crate::segments::Segments;
use crate::sender_core::{acks_unsent, Screen, SendControl, Sender, SenderCore, SenderTimer, StreamEnd};
use crate::stream::SendBuffer;
use crate::timer::TimerId;
use crate::wire::{self, Control, FeedbackEcho, ProtocolId, Repr, HEADER_LEN};
use meshbed_core::{Duration, Instant};

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

/// Timers, indexing the sender's [`TimerTable`](crate::timer::TimerTable).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Timer {
    /// Nothing heard from the receiver for `idle_timeout`. Checked first,
    /// so that a sender that gives up does nothing else at that instant.
    Idle,
    /// Everything acknowledged: the commit confirmation is due by now.
    Confirm,
    /// The next paced transmission (only while something can be sent).
    Pacing,
    /// The next SYN or quick-start probe.
    Probe,
    /// Feedback expected by now (1.1·E after the last one).
    Feedback,
}

impl TimerId for Timer {
    const ALL: &'static [Timer] = &[Timer::Idle, Timer::Confirm, Timer::Pacing, Timer::Probe, Timer::Feedback];
}

impl SenderTimer for Timer {
    const IDLE: Timer = Timer::Idle;
    const CONFIRM: Timer = Timer::Confirm;
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
/// window the application refills through
/// [`SendStream`](crate::stream::SendStream) ([`AtpSender::streaming`]). A
/// driver calls the [`Engine`](crate::Engine) methods in the order of
/// [`crate::engine`]: `handle_input` for each feedback datagram and
/// `handle_timeout` when `poll_timeout` is due, then `poll_transmit` until
/// `None`, then `poll_event`. The sender reports `Connected` when
/// quick-start is answered, `Finished` once every byte and the FIN are
/// acknowledged, and `Failed(PeerUnreachable)` after `idle_timeout` of
/// silence.
///
/// Pacing and probe deadlines are served by `poll_transmit`: after
/// `handle_timeout` at such a deadline the driver must call `poll_transmit`
/// (as the calling order says) for the deadline to move on.
pub type AtpSender = Sender<AtpSendControl>;

/// ATP's part of [`AtpSender`]: quick-start probing, the rate S and the
/// SACK scoreboard.
#[derive(Debug)]
pub struct AtpSendControl {
    config: AtpConfig,
    /// Quick-start again while established ([`SenderState::Probing`]).
    probing: bool,
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
    feedback_deadline: Option<Instant>,
    missed_feedback: u32,
    /// Smoothed round-trip time of quick-start exchanges.
    rtt: Option<Duration>,
    /// When the last feedback came (the interval the window follows).
    last_feedback_at: Option<Instant>,
    /// What the path delivers, from the receiver's arrivals.
    delivery: DeliveryMeter,
    /// The rate cap the last delivery sample allows (packets per second;
    /// 0 until measured): `AtpConfig::delivery_growth`.
    delivery_cap_pps: f64,
    /// A feedback since the connection opened reported a hole: slow start
    /// is over (`adjusted_on`), and the path's service time counts in R
    /// (`path_rate`).
    loss_seen: bool,
    /// The window the streaming sender was created with: the least
    /// `AtpConfig::max_send_window_bytes` lets it follow the cap down to.
    created_window_bytes: usize,
    /// A "route failed" notice not yet followed by "re-established".
    route_down: bool,
    /// "Route failed" notices that sent the sender back to probing.
    route_failure_probes: u64,
}

impl AtpSender {
    /// A sender that will deliver `data` to the receiver of `connection_id`.
    /// The first SYN probe goes out at the first `poll_transmit`.
    pub fn new(config: AtpConfig, connection_id: u32, data: Vec<u8>, now: Instant) -> Self {
        Self::with_buffer(config, connection_id, SendBuffer::complete(data), now)
    }

    /// A sender whose application writes the stream through
    /// [`SendStream`](crate::stream::SendStream), holding at most
    /// `window_bytes` unacknowledged and unsent bytes.
    pub fn streaming(config: AtpConfig, connection_id: u32, window_bytes: usize, now: Instant) -> Self {
        Self::with_buffer(config, connection_id, SendBuffer::new(window_bytes), now)
    }

    fn with_buffer(config: AtpConfig, connection_id: u32, buf: SendBuffer, now: Instant) -> Self {
        let created_window_bytes = buf.capacity();
        let core =
            SenderCore::new(ProtocolId::Atp, connection_id, now, config.trace, StreamEnd::new(config.idle_timeout));
        let control = AtpSendControl {
            rate_pps: 1.0 / config.max_delay.as_secs_f64().max(1e-9),
            segs: Segments::new(buf, config.payload_per_packet()),
            config,
            probing: false,
            next_send: now,
            probe_next_at: now,
            probe_sent_at: None,
            feedback_deadline: None,
            missed_feedback: 0,
            rtt: None,
            last_feedback_at: None,
            delivery: DeliveryMeter::default(),
            delivery_cap_pps: 0.0,
            loss_seen: false,
            created_window_bytes,
            route_down: false,
            route_failure_probes: 0,
        };
        Sender::with_parts(core, control)
    }

    pub fn config(&self) -> &AtpConfig {
        &self.control.config
    }
    pub fn state(&self) -> SenderState {
        self.control.state(&self.core)
    }
    /// The most bytes a streaming sender holds (unacknowledged and
    /// written): see `AtpConfig::max_send_window_bytes`.
    pub fn window_bytes(&self) -> usize {
        self.control.segs.buf().capacity()
    }
    /// Current sending rate S in packets per second.
    pub fn rate_pps(&self) -> f64 {
        self.control.rate_pps
    }
    /// Current inter-packet delay D_s = 1/S.
    pub fn d_s(&self) -> Duration {
        self.control.d_s()
    }
    /// Bytes the receiver has acknowledged cumulatively.
    pub fn bytes_acked(&self) -> u64 {
        self.control.segs.acked()
    }
    /// The stream's length once the application finished it, else the bytes
    /// written so far.
    pub fn total_bytes(&self) -> u64 {
        self.control.segs.len()
    }
    /// Consecutive epochs without feedback so far.
    pub fn missed_feedback(&self) -> u32 {
        self.control.missed_feedback
    }
    /// Whether the route is reported down (ELFN).
    pub fn route_down(&self) -> bool {
        self.control.route_down
    }
    /// How many "route failed" notices sent the sender back to probing.
    pub fn route_failure_probes(&self) -> u64 {
        self.control.route_failure_probes
    }
    /// Smoothed round-trip time of the quick-start exchanges, if measured.
    pub fn rtt(&self) -> Option<Duration> {
        self.control.rtt
    }
    /// Segments waiting for retransmission.
    pub fn retransmit_queue_len(&self) -> usize {
        self.control.segs.retransmit_queue_len()
    }
}

type Core = SenderCore<Timer>;

/// How [`AtpSendControl::mark_hole`] decides that a hole's segment is lost.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Lost {
    /// Something sent after its last copy was delivered.
    ByOrder,
    /// Its last copy is older than the retransmission guard.
    ByAge,
}

impl AtpSendControl {
    fn state(&self, core: &Core) -> SenderState {
        match core.phase() {
            Phase::Connecting => SenderState::Connecting,
            Phase::Established if self.probing => SenderState::Probing,
            Phase::Established => SenderState::Established,
            // A sender does not linger: it is never closed.
            Phase::Finished | Phase::Closed => SenderState::Finished,
            Phase::Failed => SenderState::Failed,
        }
    }

    fn d_s(&self) -> Duration {
        Duration::from_secs_f64(1.0 / self.rate_pps)
    }

    /// Clamps and installs a new rate, tracing D_s when it changed.
    fn set_rate(&mut self, core: &mut Core, now: Instant, rate_pps: f64) {
        let max_rate = self.max_rate_pps();
        let min_rate = 1.0 / self.config.max_delay.as_secs_f64().max(1e-9);
        let rate = if rate_pps.is_nan() { min_rate } else { rate_pps.clamp(min_rate, max_rate) };
        if rate != self.rate_pps {
            self.rate_pps = rate;
            core.trace(TraceSample::Ds { at: now, d_s: self.d_s() });
        }
    }

    /// The rate cap: one packet per `min_delay`, or `delivery_growth`
    /// times what the path delivered over the last feedback interval if
    /// that is more.
    fn max_rate_pps(&self) -> f64 {
        (1.0 / self.config.min_delay.as_secs_f64().max(1e-9)).max(self.delivery_cap_pps)
    }

    /// Feedback rate R = 1/D_avg, at most the rate cap (a D of zero, below
    /// the wire's microsecond, asks for the cap): quick-start's first rate.
    fn feedback_rate(&self, d_avg: Duration) -> f64 {
        self.path_rate(d_avg).min(self.max_rate_pps())
    }

    /// R = 1/D_avg as the path reports it, uncapped: a D below the wire's
    /// one-microsecond resolution counts as that microsecond. With
    /// `service_time_probe`, once a feedback has reported a hole, D is taken
    /// with the bottleneck's service time, one packet at a little more than
    /// the fastest recent delivery: the transmission delay a node's D holds
    /// (seed 002 §4.1, D = queueing + transmission) and an end-to-end D,
    /// which measures only queueing, leaves out. Without it an empty queue
    /// reads D = 0 and R is the cap, twice the delivery or the 10,000
    /// packets/s floor: on a 20 Mbit/s link six times its rate
    /// (docs/PROTOCOLS.md §6, "ATP's rate on a host").
    fn path_rate(&self, d_avg: Duration) -> f64 {
        let d_s = d_avg.max(Duration::from_micros(1)).as_secs_f64();
        let bottleneck = self.delivery.bottleneck_pps();
        let gain = self.config.service_time_gain();
        if gain > 0.0 && self.loss_seen && bottleneck > 0.0 {
            1.0 / (d_avg.as_secs_f64() + 1.0 / (gain * bottleneck))
        } else {
            1.0 / d_s
        }
    }

    /// The R an established sender adjusts its rate on. In slow start, the
    /// path's (`path_rate`), and the cap bounds the rate it yields
    /// (`set_rate`), as a window bounds what slow start sends, so the rate
    /// doubles with the cap; capping R instead lets κ take only part of
    /// each doubling (×1.5 per feedback for κ = 0.5), which is what every
    /// other sender does (`feedback_rate`). Slow start is for adaptive
    /// ATP's immediate feedback (seed 000 §V.A.3), which answers an
    /// overshoot within packets, and ends at the first feedback reporting a
    /// hole; a sender heard once an epoch (1 s for default ATP) would
    /// overshoot for a whole epoch, and ten default-ATP transfers to one
    /// receiver lost more than the ×2 gained (issue 29; docs/PROTOCOLS.md
    /// §6 "ATP's rate cap on fast links").
    fn adjusted_on(&self, d_avg: Duration) -> f64 {
        if self.config.adaptive.is_some() && !self.loss_seen {
            self.path_rate(d_avg)
        } else {
            self.feedback_rate(d_avg)
        }
    }

    /// Measures the delivery from the packets the receiver counts
    /// ([`FeedbackEcho`]; holes do not hold it, as they hold the cumulative
    /// ack) and sets the cap it allows. A feedback reporting a hole (a SACK
    /// block) ends slow start (`adjusted_on`), as TCP's ends at the first
    /// loss (RFC 5681 §3.1).
    /// `d_s`: how long before the feedback left its newest arrival came
    /// (the feedback's D_s, or zero to date the feedback itself).
    fn measure_delivery(&mut self, now: Instant, repr: &Repr, d_s: Duration, sent: u64) {
        let lossless = repr.sack_blocks.is_empty();
        self.loss_seen |= !lossless;
        self.delivery.on_feedback(now, d_s, FeedbackEcho::from_seq(repr.seq), self.config.epoch, sent);
        self.delivery_cap_pps = self.config.delivery_growth * self.delivery.last_pps();
        self.last_feedback_at = Some(now);
    }

    /// Sizes the window for what the rate just set sends until the next
    /// feedback, taken to come `interval` after this one as this one came
    /// after the last, twice over (those bytes wait for that feedback, and
    /// for its way back): never below the window as created, at most
    /// `max_send_window_bytes` (zero: fixed). Nothing at the quick-start
    /// answer (no interval yet), and nothing for a
    /// sender with adaptive ATP's immediate feedback (seed 000 §V.A.3),
    /// whose acknowledgements come as the rate is off, not once an epoch.
    fn follow_window(&mut self, interval: Option<Duration>) {
        let most = self.config.max_send_window_bytes;
        let periodic = self.config.adaptive.is_none();
        let Some(interval) = interval.filter(|_| most > 0 && periodic) else { return };
        let need = self.rate_pps * self.config.payload_per_packet() as f64 * 2.0 * interval.as_secs_f64();
        let want = (need.min(most as f64) as usize).max(self.created_window_bytes);
        self.segs.buf_mut().set_capacity(want);
    }

    /// Retransmissions past the last SACK block (the FIN's tail, SACK-MORE)
    /// wait at least this long after the previous copy. The RTT is the
    /// quick-start probes' and every feedback's newest once-sent delivery
    /// (`on_reliability`), smoothed.
    fn retransmit_guard(&self) -> Duration {
        let rtt = self.rtt.unwrap_or(Duration::ZERO).as_secs_f64();
        Duration::from_secs_f64(rtt * self.config.retransmit_guard_factor)
    }

    /// A FIN is repeated at most once per this interval while unanswered.
    fn fin_interval(&self) -> Duration {
        self.config.epoch.max(self.rtt.unwrap_or(Duration::ZERO) * 2)
    }

    /// Seed 002 §4.3.2–4.3.3: quick-start again, a probe now.
    fn start_probing(&mut self, core: &mut Core, now: Instant, route_failure: bool) {
        self.probing = true;
        core.trace(TraceSample::Probing { at: now, entered: true, route_failure });
        self.probe_next_at = now;
        self.feedback_deadline = None;
    }

    /// The next thing to send in the current state at `now`, if any; only
    /// reads state.
    fn next_packet(&self, core: &Core, now: Instant) -> Option<Next> {
        match self.state(core) {
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
                let fin_due = match core.fin_sent_at() {
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
    fn pacing_deadline(&self, core: &Core) -> Option<Instant> {
        if self.state(core) != SenderState::Established {
            return None;
        }
        if self.next_in_sequence().is_some() {
            return Some(self.next_send);
        }
        self.segs.buf().end()?;
        match core.fin_sent_at() {
            None => Some(self.next_send),
            Some(t) => Some(self.next_send.max(t + self.fin_interval())),
        }
    }

    /// Queues the not-yet-held segments overlapping `[start, end)` that are
    /// lost. Between SACK blocks (`Lost::ByOrder`) a segment is lost when
    /// something sent after its last copy has been delivered: the path
    /// keeps order, so that copy should have arrived first (RACK's rule,
    /// RFC 8985 §6.2, without its reordering window). A hole reported again
    /// while its retransmission is still on its way is therefore not sent a
    /// third time, however the RTT has grown since it was measured on the
    /// quick-start probes. Past the last block (the FIN's tail, SACK-MORE)
    /// nothing later can have arrived, so there (`Lost::ByAge`) a copy
    /// older than the retransmission guard is lost.
    fn mark_hole(&mut self, now: Instant, start: u64, end: u64, lost: Lost) {
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
        let delivered_after = self.segs.newest_delivered_sent();
        for i in first..=last {
            let seg = self.segs.segment(i);
            let is_lost = match lost {
                Lost::ByOrder => seg.last_sent.is_some_and(|t| delivered_after.is_some_and(|d| t <= d)),
                Lost::ByAge => seg.sent_at_least_ago(guard, now),
            };
            if !seg.sacked && !seg.queued && is_lost {
                self.segs.queue_retransmission(i);
            }
        }
    }

    /// Applies the reliability part of a feedback packet (seed 002 §4.3.3;
    /// seed 001 §3.3): cumulative ack, SACK blocks (ranges the receiver
    /// holds), holes between them, and SACK-MORE.
    fn on_reliability(&mut self, core: &mut Core, now: Instant, repr: &Repr) {
        if self.segs.ack_to(repr.ack) {
            core.stats.bytes_delivered = self.segs.acked();
        }
        let mut blocks = repr.sack_blocks.clone();
        blocks.sort_unstable();
        self.mark_sacked_blocks(&blocks);
        // The newest once-sent segment this feedback reports delivered
        // times the path as it is now (queues included), not as the
        // quick-start probe found it: the age guard of SACK-MORE and the
        // FIN's tail follows the RTT as it grows.
        if let Some(sent) = self.segs.take_clean_delivery() {
            self.fold_rtt(now.saturating_since(sent));
        }
        let mut prev = self.segs.acked();
        for &(start, end) in &blocks {
            if end <= prev {
                continue;
            }
            self.mark_hole(now, prev, start.max(prev), Lost::ByOrder);
            prev = end;
        }
        // A receiver that saw the FIN knows where the data ends, so the gap
        // after its last block is a hole too, unless the block list was cut
        // at its maximum and more blocks may follow.
        let control = repr.control;
        if control.contains(Control::FIN)
            && core.fin_sent_at().is_some()
            && blocks.len() < wire::MAX_SACK_BLOCKS.min(self.config.max_sack_blocks.max(1))
        {
            self.mark_hole(now, prev, self.segs.len(), Lost::ByAge);
        }
        // seed 001 §3.3: SACK-MORE asks for everything not yet acknowledged.
        if control.contains(Control::SACK_MORE) {
            self.mark_hole(now, self.segs.acked(), self.segs.sent_end(), Lost::ByAge);
        }
    }

    /// The segments wholly inside `blocks` (sorted) are held by the
    /// receiver: what tells a hole below them lost (`mark_hole`).
    fn mark_sacked_blocks(&mut self, blocks: &[(u64, u64)]) {
        for &(start, end) in blocks {
            let start = start.max(self.segs.acked());
            if end <= start {
                continue;
            }
            let first = self.segs.seg_of(start).max(self.segs.first_unacked());
            let stop = self.segs.seg_of(end).min(self.segs.next_new());
            for i in first..stop {
                if self.segs.seg_start(i) >= start && self.segs.seg_end(i) <= end {
                    self.segs.mark_sacked(i);
                }
            }
        }
    }

    /// Folds an RTT sample in with TCP's 7/8 smoothing (RFC 6298).
    fn fold_rtt(&mut self, sample: Duration) {
        self.rtt = Some(match self.rtt {
            None => sample,
            Some(rtt) => Duration::from_nanos((rtt.as_nanos() / 8) * 7 + sample.as_nanos() / 8),
        });
    }

    /// Quick-start answer: S = R = 1/D_max of the probe (seed 002 §4.3.1 Fig.
    /// 6 lines 14–18; seed 001 §2.3).
    fn on_quick_start_answer(&mut self, core: &mut Core, now: Instant, d_avg: Duration) {
        if let Some(sent) = self.probe_sent_at.take() {
            self.fold_rtt(now.saturating_since(sent));
        }
        match self.state(core) {
            SenderState::Connecting => core.establish(),
            SenderState::Probing => core.trace(TraceSample::Probing { at: now, entered: false, route_failure: false }),
            _ => {}
        }
        self.probing = false;
        let rate = self.feedback_rate(d_avg);
        // Force a trace of the first D_s even if the clamp leaves it equal.
        self.rate_pps = f64::NAN;
        self.set_rate(core, now, rate);
        self.next_send = now;
    }
}

impl SendControl for AtpSendControl {
    type Timer = Timer;

    fn send_buffer(&self) -> &SendBuffer {
        self.segs.buf()
    }
    fn send_buffer_mut(&mut self) -> &mut SendBuffer {
        self.segs.buf_mut()
    }

    fn reset_window(&self) -> (u64, u64) {
        self.segs.reset_window()
    }
    fn on_reset_challenge(&mut self, _core: &mut Core, _now: Instant) {
        self.segs.queue_challenge();
    }

    fn screen(&self, core: &Core, ours: bool, repr: &Repr) -> Screen {
        // Feedback about bytes never sent did not come from our receiver:
        // ignore all of it (issue 9: a forged ack must not end a transfer).
        let feedback = repr.control.contains(Control::SACK_OPT);
        if ours && feedback && acks_unsent(repr, self.segs.sent_end()) {
            return Screen::Forged;
        }
        // The sender only expects feedback; anything else is stray.
        if !ours || core.is_closed() || !(feedback || repr.control.contains(Control::RST)) {
            return Screen::Stray;
        }
        Screen::Accept
    }

    fn on_feedback(&mut self, core: &mut Core, now: Instant, repr: &Repr, payload: &[u8]) {
        core.stats.feedback_packets += 1;
        let d_avg = Duration::from_micros(u64::from(repr.d_max_us));
        core.trace(TraceSample::DAvgReceived { at: now, d_avg });
        self.missed_feedback = 0;
        self.feedback_deadline = Some(now + self.config.feedback_timeout());
        match self.state(core) {
            // seed 002 §4.3.2: "once it hears from the receiver, it will use
            // the rate on the feedback packet ... as part of its quick-start".
            SenderState::Connecting | SenderState::Probing => {
                // Delivery is measured afresh from each quick-start answer
                // (the first: the receiver has counted no data yet), so the
                // next epoch's feedback already measures it and sizes the
                // window: a sender heard once an epoch (1 s for default
                // ATP) no longer spends its second epoch at the first rate
                // (issue 29). After probing, no sample spans the silence
                // before the answer: one that did read an outage as the
                // path's rate and, with the service-time rule, held the
                // sender near it (docs/PROTOCOLS.md §6 "ATP's rate cap on
                // fast links", "ATP's rate on a host"). Dated as it
                // arrives, when sending starts: its D_s counts from the
                // receiver's first SYN, epochs before if that SYN's answer
                // was lost.
                self.delivery.restart();
                self.measure_delivery(now, repr, Duration::ZERO, core.stats.datagrams_sent);
                self.on_quick_start_answer(core, now, d_avg)
            }
            _ => {
                let feedback_interval = self.last_feedback_at.map(|then| now.saturating_since(then));
                let d_s = Duration::from_micros(u64::from(repr.d_s_us));
                self.measure_delivery(now, repr, d_s, core.stats.datagrams_sent);
                let r = self.adjusted_on(d_avg);
                let (_, s) = rate_adjustment(self.config.phi, self.config.kappa, self.rate_pps, r);
                self.set_rate(core, now, s);
                self.follow_window(feedback_interval);
            }
        }
        self.on_reliability(core, now, repr);
        let fin_acked =
            repr.control.contains(Control::FIN) && core.fin_sent_at().is_some() && self.segs.acked() == self.segs.len();
        core.on_end_acked(now, fin_acked, self.segs.all_acked(), payload);
    }

    fn on_idle_timeout(&mut self, core: &mut Core, _now: Instant) -> Option<Instant> {
        Some(core.last_heard)
    }

    fn on_timer(&mut self, core: &mut Core, now: Instant, timer: Timer) {
        match timer {
            Timer::Feedback => {
                // seed 002 §4.3.2: a multiplicative decrease for each epoch
                // without feedback, up to two; at the third, quick-start again.
                self.missed_feedback += 1;
                if self.missed_feedback >= self.config.missed_feedback_probe {
                    self.start_probing(core, now, false);
                } else {
                    let rate = self.rate_pps * self.config.missed_feedback_decrease;
                    self.set_rate(core, now, rate);
                    self.feedback_deadline = Some(now + self.config.feedback_timeout());
                }
            }
            // Pacing and Probe deadlines are served by poll_transmit.
            Timer::Pacing | Timer::Probe | Timer::Idle | Timer::Confirm => {}
        }
    }

    fn refresh_timers(&mut self, core: &mut Core) {
        if core.is_closed() {
            core.timers.stop_all();
            return;
        }
        let state = self.state(core);
        let probing = matches!(state, SenderState::Connecting | SenderState::Probing);
        let established = state == SenderState::Established;
        let pacing_while_probing = state == SenderState::Probing
            && self.route_down
            && self.config.route_failure == RouteFailureReaction::ProbeWhileSending
            && self.next_in_sequence().is_some();
        let pacing = if pacing_while_probing { Some(self.next_send) } else { self.pacing_deadline(core) };
        let idle = core.last_heard + self.config.silence_allowed(self.route_down);
        let timers = &mut core.timers;
        timers.set(Timer::Pacing, pacing);
        timers.set(Timer::Probe, probing.then_some(self.probe_next_at));
        timers.set(Timer::Feedback, if established { self.feedback_deadline } else { None });
        timers.set(Timer::Idle, idle);
    }

    fn poll_transmit(&mut self, core: &mut Core, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        let next = self.next_packet(core, now)?;
        // A probe when one is due; `ProbeWhileSending`'s paced data between
        // probes goes as usual.
        let probing =
            matches!(self.state(core), SenderState::Connecting | SenderState::Probing) && self.probe_next_at <= now;
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
        let mut repr = core.header(control, seq, 0);
        repr.payload_len = payload.len();
        // seed 000 §V.A.3: every packet carries the sender's current D_s.
        repr.d_s_us = duration_to_us(self.d_s());
        let len = repr.buffer_len();
        if buf.len() < len {
            return None;
        }
        repr.emit(buf);
        if !payload.is_empty() {
            self.segs.buf().copy_out(seq, &mut buf[HEADER_LEN..len]);
        }

        core.stats.datagrams_sent += 1;
        match next {
            Next::Syn => {}
            Next::Segment(i) => {
                let first = self.segs.record_send(i, now);
                core.count_payload(now, seq, payload.len(), first);
            }
            Next::Fin => core.fin_sent(now),
        }
        if probing {
            self.probe_sent_at = Some(now);
            self.probe_next_at = now + self.config.epoch;
        } else {
            // Pace: keep the schedule when a little late, restart it when
            // more than one interval (and the allowed burst) late: no
            // bursts after a quiet spell.
            let d_s = self.d_s();
            let scheduled = self.next_send + d_s;
            let burst = match d_s < self.config.pacing_burst_gaps_below {
                true => self.config.pacing_burst.max(d_s * u64::from(self.config.pacing_burst_gaps)),
                false => self.config.pacing_burst,
            };
            self.next_send = if scheduled + burst <= now { now + d_s } else { scheduled };
        }
        self.refresh_timers(core);
        Some(Transmit { len })
    }

    /// Seed 002 §4.3.3: on a link-failure notification the sender enters
    /// the connection-initiation phase at once — a probe now and every
    /// epoch, each on the next in-sequence packet — without cutting its
    /// rate (§5.2); the feedback to a probe sets the rate on the new route.
    /// On "re-established" while still probing, the next probe goes at once
    /// rather than up to an epoch later (not in the text: the new route is
    /// there to be measured). A sender still connecting keeps sending SYN
    /// probes as it does.
    fn on_route_notice(&mut self, core: &mut Core, now: Instant, notice: RouteNotice) {
        let reacts = self.config.route_failure != RouteFailureReaction::Ignore;
        match notice {
            RouteNotice::Failed => {
                self.route_down = true;
                if reacts && self.state(core) == SenderState::Established {
                    self.start_probing(core, now, true);
                    self.route_failure_probes += 1;
                    self.missed_feedback = 0;
                }
            }
            RouteNotice::Reestablished => {
                self.route_down = false;
                if reacts && self.state(core) == SenderState::Probing {
                    self.probe_next_at = self.probe_next_at.min(now);
                }
            }
        }
        self.refresh_timers(core);
    }
}
