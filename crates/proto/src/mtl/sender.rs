//! The MTL sender: the sending buffer, EGN-driven retransmission, the
//! explicit EGN request and the rate of eqs. 6–10 (seed 004 §III.C), as the
//! [`SendControl`] of the shared [`Sender`] skeleton.

use super::config::MtlConfig;
use super::{fhd_average_s, fhd_from_queueing_s, fhd_s, queueing_delay_s, rate_pps};
use crate::engine::{EngineEvent, PathInfo, TraceSample, Transmit};
use crate::engine_core::Phase;
use crate::segments::Segments;
use crate::sender_core::{acks_unsent, Screen, SendControl, Sender, SenderCore, SenderTimer, StreamEnd};
use crate::stream::SendBuffer;
use crate::timer::TimerId;
use crate::wire::{Control, ProtocolId, Repr};
use meshbed_core::{Duration, Instant};

/// Where the sender is in its life.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MtlSenderState {
    /// Sending a SYN (with SACK-REQ) every `syn_interval` until any EGN
    /// answers.
    Connecting,
    Established,
    /// Every byte and the FIN confirmed received.
    Finished,
    Failed,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Timer {
    /// Nothing heard for `idle_timeout` while waiting for an answer.
    Idle,
    /// Every byte acknowledged: the commit confirmation is due by now.
    Confirm,
    /// Nothing heard for `unresponsive_after`: tell the routing module.
    Unresponsive,
    /// The next datagram may leave (pacing, SYN, request or FIN repeat);
    /// served by `poll_transmit`.
    Send,
}

impl TimerId for Timer {
    const ALL: &'static [Timer] = &[Timer::Idle, Timer::Confirm, Timer::Unresponsive, Timer::Send];
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
    /// The explicit EGN request (header only, SACK-REQ), the held packet
    /// kept back.
    Request,
    Fin,
}

/// The sending side of one MTL connection.
///
/// Created with all the data ([`MtlSender::new`]) or with a window the
/// application refills ([`MtlSender::streaming`]). The driver calls the
/// [`Engine`](crate::Engine) methods in the order of [`crate::engine`], and
/// [`Engine::handle_path_info`](crate::Engine::handle_path_info) whenever the routing module's view of the
/// path changes. Reports `Connected` when the SYN is answered, `Finished`
/// when an EGN answering the FIN acknowledges every byte,
/// `PeerUnresponsive` once per silence of `unresponsive_after`, and
/// `Failed(PeerUnreachable)` after `idle_timeout` of silence.
///
/// * Sending buffer (§III.C.1): bytes sent and not covered by the
///   cumulative ack, at most `send_buffer_bytes`. The packet that would
///   overflow it is held back.
/// * Lifetime of the current buffer: the time since its oldest packet (the
///   first not cumulatively acknowledged) was first sent. If the buffer is
///   full (or everything written is sent and the stream is not finished)
///   and no EGN arrived within that lifetime, the sender sends an explicit
///   EGN request at once; after an EGN, or an unanswered request, it asks
///   again `max(min_request_interval, 2·SRTT)` later. The answer releases
///   the buffer up to its ack, and the held packet goes at once.
/// * Early request (`MtlConfig::early_request_fill`, a host's): the first
///   transmission that fills the buffer to that fraction asks for an EGN
///   (SACK-REQ, not held back), one unanswered at a time.
/// * Retransmission: exactly the gaps an EGN names, each packet at most
///   once per `retransmit_guard_rtts` × SRTT, before new data, paced.
/// * RTT samples (Karn): from an RTT probe — SACK-REQ on a first
///   transmission, at most one per `rtt_probe_interval` — to the EGN that
///   echoes its sequence number, and from the SYN to its answer when only
///   one SYN was sent. Each sample gives an FHD (eqs. 7–8) averaged into
///   FHD̄ (eq. 10), and the inter-packet gap is 1/R = FHD̄ · (1 + P_max)
///   (eq. 9); before the first sample it is `initial_interval`.
/// * Path: h, P_max and b from [`PathInfo`]; without one (no routing
///   module, e.g. real UDP) h = 1, P_max = 0 and b = `link_rate_bps`.
pub type MtlSender = Sender<MtlSendControl>;

/// MTL's part of [`MtlSender`]: the sending buffer, the EGN request and the
/// rate (see [`MtlSender`] for the rules).
#[derive(Debug)]
pub struct MtlSendControl {
    config: MtlConfig,
    /// The sending buffer cut into `max_payload` packets: scoreboard,
    /// cumulative ack and retransmission queue.
    segs: Segments,
    next_send: Instant,
    hop_count: u32,
    max_link_loss: f64,
    link_rate_bps: u64,
    fhd_avg_s: Option<f64>,
    srtt: Option<Duration>,
    /// The outstanding RTT probe: sequence number and send time.
    probe: Option<(u64, Instant)>,
    last_probe_at: Option<Instant>,
    syn_next_at: Instant,
    syn_sent_at: Option<Instant>,
    syns_sent: u32,
    request_sent_at: Option<Instant>,
    /// The last early request (`MtlConfig::early_request_fill`).
    early_request_at: Option<Instant>,
    last_egn_at: Option<Instant>,
    /// When the sender last began waiting for an answer after having none
    /// outstanding: silence is counted from the later of this and the time
    /// the receiver was last heard.
    waiting_since: Instant,
    unresponsive_reported: bool,
    /// On a host (`MtlConfig::host_resolution`): its state.
    host: HostRate,
}

/// What MTL's rate on a host keeps (see `MtlConfig::host_resolution`).
#[derive(Debug, Default)]
struct HostRate {
    /// Eq. 10's average, of the per-hop queueing t_q: with b and h fixed it
    /// is FHD̄ / h − s_data/b, and b may grow between samples.
    t_q_avg_s: Option<f64>,
    /// Where the last delivery measurement began: when, and the cumulative
    /// ack then.
    delivery_from: Option<(Instant, u64)>,
    /// Bits per second the cumulative ack advanced over the last measurement.
    delivered_bps: f64,
}

impl MtlSender {
    /// A sender that will deliver `data` to the receiver of `connection_id`.
    pub fn new(config: MtlConfig, connection_id: u32, data: Vec<u8>, now: Instant) -> Self {
        Self::with_buffer(config, connection_id, SendBuffer::complete(data), now)
    }

    /// A sender whose application writes the stream through
    /// [`SendStream`](crate::stream::SendStream), holding at most
    /// `window_bytes` unacknowledged and unsent bytes.
    pub fn streaming(config: MtlConfig, connection_id: u32, window_bytes: usize, now: Instant) -> Self {
        Self::with_buffer(config, connection_id, SendBuffer::new(window_bytes), now)
    }

    fn with_buffer(config: MtlConfig, connection_id: u32, buf: SendBuffer, now: Instant) -> Self {
        let config = config.sanitized();
        let core =
            SenderCore::new(ProtocolId::Tcp, connection_id, now, config.trace, StreamEnd::new(config.idle_timeout));
        let control = MtlSendControl {
            link_rate_bps: config.link_rate_bps,
            segs: Segments::new(buf, config.max_payload),
            config,
            next_send: now,
            hop_count: 1,
            max_link_loss: 0.0,
            fhd_avg_s: None,
            srtt: None,
            probe: None,
            last_probe_at: None,
            syn_next_at: now,
            syn_sent_at: None,
            syns_sent: 0,
            request_sent_at: None,
            early_request_at: None,
            last_egn_at: None,
            waiting_since: now,
            unresponsive_reported: false,
            host: HostRate::default(),
        };
        Sender::with_parts(core, control)
    }

    pub fn config(&self) -> &MtlConfig {
        &self.control.config
    }
    pub fn state(&self) -> MtlSenderState {
        match self.core.phase() {
            Phase::Connecting => MtlSenderState::Connecting,
            Phase::Established => MtlSenderState::Established,
            // A sender does not linger: it is never closed.
            Phase::Finished | Phase::Closed => MtlSenderState::Finished,
            Phase::Failed => MtlSenderState::Failed,
        }
    }
    /// Bytes the receiver acknowledged cumulatively.
    pub fn bytes_acked(&self) -> u64 {
        self.control.segs.acked()
    }
    /// Bytes in the sending buffer: sent and not known received.
    pub fn buffered_bytes(&self) -> u64 {
        self.control.buffered_bytes()
    }
    /// FHD̄ of eq. 10, once measured.
    pub fn fhd_avg(&self) -> Option<Duration> {
        self.control.fhd_now_s().map(Duration::from_secs_f64)
    }
    /// The smoothed RTT, once measured.
    pub fn srtt(&self) -> Option<Duration> {
        self.control.srtt
    }
    /// The inter-packet gap in use: FHD̄ · (1 + P_max) (eq. 9), or
    /// `initial_interval` before the first sample.
    pub fn interval(&self) -> Duration {
        self.control.interval()
    }
    /// The rate R in packets per second (eq. 9).
    pub fn rate_pps(&self) -> f64 {
        self.control.rate_pps()
    }
    /// Packets waiting for retransmission.
    pub fn retransmit_queue_len(&self) -> usize {
        self.control.segs.retransmit_queue_len()
    }
    /// Whether a packet is held back because the sending buffer is full.
    pub fn is_holding(&self) -> bool {
        let segs = &self.control.segs;
        self.core.phase() == Phase::Established
            && segs.next_new() < segs.sendable_segments()
            && !self.control.fits(segs.next_new())
    }
}

type Core = SenderCore<Timer>;

impl MtlSendControl {
    fn buffered_bytes(&self) -> u64 {
        self.segs.sent_end() - self.segs.acked()
    }
    /// Whether the host rule applies (`MtlConfig::host_resolution`).
    fn on_host(&self) -> bool {
        !self.config.host_resolution.is_zero()
    }
    /// b of eqs. 7–8: the routing module's or the configured, and on a host
    /// at least `delivery_growth` × what the path delivered.
    fn link_rate_now(&self) -> u64 {
        if self.on_host() {
            let grown = self.config.delivery_growth * self.host.delivered_bps;
            self.link_rate_bps.max(grown.min(u64::MAX as f64) as u64)
        } else {
            self.link_rate_bps
        }
    }
    /// FHD̄: eq. 10's average; on a host, eq. 8 from the averaged t_q and
    /// today's b.
    fn fhd_now_s(&self) -> Option<f64> {
        if self.on_host() {
            let b = self.link_rate_now();
            self.host.t_q_avg_s.map(|t_q| fhd_from_queueing_s(t_q, self.hop_count, b, self.config.data_packet_bytes()))
        } else {
            self.fhd_avg_s
        }
    }
    fn interval(&self) -> Duration {
        match self.fhd_now_s() {
            Some(fhd) => Duration::from_secs_f64(1.0 / rate_pps(fhd, self.max_link_loss)).max(Duration::from_nanos(1)),
            None => self.config.initial_interval,
        }
    }
    fn rate_pps(&self) -> f64 {
        1.0 / self.interval().as_secs_f64()
    }

    /// Whether segment `i`, sent now, stays within the sending buffer (one
    /// packet always fits an empty buffer).
    fn fits(&self, i: usize) -> bool {
        let in_buffer = self.buffered_bytes();
        in_buffer == 0 || in_buffer + (self.segs.seg_end(i) - self.segs.seg_start(i)) <= self.config.send_buffer_bytes
    }
    /// Whether the sender waits for an answer (silence then counts).
    fn waiting(&self, core: &Core) -> bool {
        match core.phase() {
            Phase::Connecting => self.syns_sent > 0,
            Phase::Established => self.segs.acked() < self.segs.sent_end() || core.fin_sent_at().is_some(),
            _ => false,
        }
    }
    fn silence_since(&self, core: &Core) -> Instant {
        core.last_heard.max(self.waiting_since)
    }
    /// Unanswered requests and FINs repeat this often.
    fn request_interval(&self) -> Duration {
        self.config.min_request_interval.max(self.srtt.unwrap_or(Duration::ZERO) * 2)
    }
    fn retransmit_guard(&self) -> Duration {
        let rtt = self.srtt.unwrap_or(Duration::ZERO).as_secs_f64();
        Duration::from_secs_f64(rtt * self.config.retransmit_guard_rtts)
    }

    /// Whether first transmission `i`, sent at `now`, asks for an EGN
    /// early: it fills the buffer to `early_request_fill` and no early
    /// request is unanswered, or the last is a request interval old.
    fn asks_early(&self, now: Instant, i: usize) -> bool {
        let fill = self.config.early_request_fill;
        if fill <= 0.0 {
            return false;
        }
        let after = self.buffered_bytes() + (self.segs.seg_end(i) - self.segs.seg_start(i));
        let unanswered = self.early_request_at.filter(|&r| self.last_egn_at.is_none_or(|e| e <= r));
        after as f64 >= fill * self.config.send_buffer_bytes as f64
            && unanswered.is_none_or(|r| r + self.request_interval() <= now)
    }

    /// When the explicit EGN request is due, if the sender is blocked (the
    /// buffer full, or everything written sent with the stream open) with
    /// data not known received. See [`MtlSender`] for the rule.
    fn request_due_at(&self) -> Option<Instant> {
        let next_new = self.segs.next_new();
        let all_sent = next_new >= self.segs.sendable_segments();
        let blocked = (all_sent && self.segs.buf().end().is_none()) || (!all_sent && !self.fits(next_new));
        if !blocked || self.segs.acked() >= self.segs.sent_end() {
            return None;
        }
        let oldest_sent = self.segs.oldest_first_sent()?;
        // An EGN at the request's own instant came before it (no answer
        // takes no time): the request is unanswered. Counting it as the
        // answer made the request due again at once, and a host sender that
        // filled its buffer at the instant an EGN arrived sent requests in
        // a loop that never ended.
        let unanswered = self.request_sent_at.filter(|&r| self.last_egn_at.is_none_or(|e| e <= r));
        if let Some(r) = unanswered {
            return Some(r + self.request_interval());
        }
        match self.last_egn_at {
            // An EGN within the buffer's lifetime: give the next one time.
            // (One that came at the instant the oldest packet left knew
            // nothing of it.)
            Some(e) if e > oldest_sent => Some(e + self.request_interval()),
            _ => Some(oldest_sent),
        }
    }

    /// The next datagram and the earliest time it may leave.
    fn next_packet(&self, core: &Core) -> Option<(Next, Instant)> {
        match core.phase() {
            Phase::Connecting => Some((Next::Syn, self.syn_next_at)),
            Phase::Established => {
                if let Some(i) = self.segs.next_retransmission() {
                    return Some((Next::Segment(i), self.next_send));
                }
                let next_new = self.segs.next_new();
                if next_new < self.segs.sendable_segments() && self.fits(next_new) {
                    return Some((Next::Segment(next_new), self.next_send));
                }
                if next_new >= self.segs.sendable_segments() && self.segs.buf().end().is_some() {
                    let at = core.fin_sent_at().map_or(self.next_send, |t| t + self.request_interval());
                    return Some((Next::Fin, at));
                }
                self.request_due_at().map(|at| (Next::Request, at))
            }
            Phase::Finished | Phase::Closed | Phase::Failed => None,
        }
    }

    /// One RTT sample: SRTT for the guard, and FHD (eqs. 7–8) into FHD̄ (eq. 10).
    fn on_rtt_sample(&mut self, core: &mut Core, now: Instant, rtt: Duration) {
        self.srtt = Some(match self.srtt {
            None => rtt,
            // RFC 6298's 7/8 smoothing, for the retransmission guard only.
            Some(s) => Duration::from_nanos(s.as_nanos() / 8 * 7 + rtt.as_nanos() / 8),
        });
        let fhd = if self.on_host() {
            self.on_host_rtt_sample(rtt)
        } else {
            let sample = fhd_s(
                rtt.as_secs_f64(),
                self.hop_count,
                self.link_rate_bps,
                self.config.data_packet_bytes(),
                self.config.egn_packet_bytes(),
            );
            fhd_average_s(self.fhd_avg_s, sample, self.config.alpha)
        };
        self.fhd_avg_s = Some(fhd);
        core.trace(TraceSample::RttSample { at: now, rtt });
        core.trace(TraceSample::Fhd { at: now, fhd: Duration::from_secs_f64(fhd) });
        let rate_pps = self.rate_pps();
        core.trace(TraceSample::MtlRate { at: now, rate_pps });
    }

    /// A host's RTT sample (`MtlConfig::host_resolution`): eq. 7 takes the
    /// RTT less the host's resolution, so that the hosts' own latencies are
    /// not counted as queueing, and eq. 10 averages t_q (with b and h fixed,
    /// the same as averaging FHD). Returns FHD̄ with today's b.
    fn on_host_rtt_sample(&mut self, rtt: Duration) -> f64 {
        let rtt_s = rtt.saturating_sub(self.config.host_resolution).as_secs_f64();
        let b = self.link_rate_now();
        let (data, egn) = (self.config.data_packet_bytes(), self.config.egn_packet_bytes());
        let t_q = queueing_delay_s(rtt_s, self.hop_count, b, data, egn);
        let t_q_avg = fhd_average_s(self.host.t_q_avg_s, t_q, self.config.alpha);
        self.host.t_q_avg_s = Some(t_q_avg);
        fhd_from_queueing_s(t_q_avg, self.hop_count, b, data)
    }

    /// On a host, what the path delivered: the cumulative ack's advance
    /// over at least a smoothed RTT, in bits per second of whole packets
    /// (headers included, as b is the interface's rate).
    fn measure_delivery(&mut self, now: Instant) {
        let acked = self.segs.acked();
        let span = self.srtt.unwrap_or(Duration::ZERO).max(Duration::from_micros(1));
        match self.host.delivery_from {
            Some((then, acked_then)) => {
                let elapsed = now.saturating_since(then);
                if elapsed >= span {
                    // In packets as the interface sends them, as b counts.
                    let packets = acked.saturating_sub(acked_then) as f64 / self.config.max_payload as f64;
                    let bits = packets * self.config.data_packet_bytes() as f64 * 8.0;
                    self.host.delivered_bps = bits / elapsed.as_secs_f64();
                    self.host.delivery_from = Some((now, acked));
                }
            }
            None => self.host.delivery_from = Some((now, acked)),
        }
    }

    /// Queues the packets of gap `[start, end)` whose last copy is older than
    /// the guard.
    fn queue_gap(&mut self, now: Instant, start: u64, end: u64) {
        let start = start.max(self.segs.acked());
        let end = end.min(self.segs.sent_end());
        if end <= start {
            return;
        }
        let guard = self.retransmit_guard();
        let first = self.segs.seg_of(start).max(self.segs.base());
        let last = self.segs.seg_of(end - 1).min(self.segs.next_new() - 1);
        for i in first..=last {
            let seg = self.segs.segment(i);
            if !seg.queued && seg.sent_at_least_ago(guard, now) {
                self.segs.queue_retransmission(i);
            }
        }
    }

    /// Applies an EGN: the cumulative ack releases the buffer, the gaps are
    /// retransmitted.
    fn on_egn(&mut self, core: &mut Core, now: Instant, repr: &Repr) {
        let had_request = self.request_sent_at.is_some_and(|r| self.last_egn_at.is_none_or(|e| e < r));
        self.last_egn_at = Some(now);
        if self.segs.ack_to(repr.ack) {
            core.stats.bytes_delivered = self.segs.acked();
        }
        if self.on_host() {
            self.measure_delivery(now);
        }
        for &(start, end) in &repr.sack_blocks {
            self.queue_gap(now, start, end);
        }
        if had_request {
            // §III.C.1: "once the requested EGN has been received, the sender
            // transmits the held packet".
            self.next_send = self.next_send.min(now);
        }
    }
}

impl SendControl for MtlSendControl {
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
        let egn = repr.control.contains(Control::SACK_OPT);
        if !ours || core.is_closed() || !(egn || repr.control.contains(Control::RST)) {
            return Screen::Stray;
        }
        // An EGN about bytes never sent did not come from our receiver.
        if egn && acks_unsent(repr, self.segs.sent_end()) {
            return Screen::Forged;
        }
        Screen::Accept
    }

    fn on_heard(&mut self, _core: &mut Core, _now: Instant) {
        self.unresponsive_reported = false;
    }

    fn on_feedback(&mut self, core: &mut Core, now: Instant, repr: &Repr, payload: &[u8]) {
        core.stats.feedback_packets += 1;
        let answers_request = repr.control.contains(Control::SACK_REQ);
        if core.phase() == Phase::Connecting {
            core.establish();
            self.next_send = now;
            // Karn: only an unambiguous SYN gives a sample. On a host its
            // answer also holds the receiver's setting up of the transfer
            // (a file opened, a slot taken), milliseconds that are not the
            // path's: there it only starts SRTT, and FHD waits for the first
            // data probe's answer, a round trip later.
            if let (true, 1, Some(sent)) = (answers_request, self.syns_sent, self.syn_sent_at) {
                let rtt = now.saturating_since(sent);
                if self.on_host() {
                    self.srtt = Some(rtt);
                } else {
                    self.on_rtt_sample(core, now, rtt);
                }
            }
        } else if let Some((_, sent)) = self.probe.filter(|&(seq, _)| answers_request && repr.seq == seq) {
            self.probe = None;
            self.on_rtt_sample(core, now, now.saturating_since(sent));
        }
        self.on_egn(core, now, repr);
        let fin_acked =
            repr.control.contains(Control::FIN) && core.fin_sent_at().is_some() && self.segs.acked() == self.segs.len();
        core.on_end_acked(now, fin_acked, self.segs.all_acked(), payload);
    }

    fn on_idle_timeout(&mut self, core: &mut Core, _now: Instant) -> Option<Instant> {
        Some(self.silence_since(core))
    }

    fn on_timer(&mut self, core: &mut Core, _now: Instant, timer: Timer) {
        match timer {
            Timer::Unresponsive => {
                // §III.B: the routing module labels the peer inaccessible.
                self.unresponsive_reported = true;
                core.push_event(EngineEvent::PeerUnresponsive);
            }
            // The Send deadline is served by poll_transmit.
            Timer::Send | Timer::Idle | Timer::Confirm => {}
        }
    }

    fn refresh_timers(&mut self, core: &mut Core) {
        if core.is_closed() {
            core.timers.stop_all();
            return;
        }
        let send_at = self.next_packet(core).map(|(_, at)| at);
        let waiting = self.waiting(core);
        let silence = self.silence_since(core);
        let unresponsive = waiting && !self.unresponsive_reported;
        let timers = &mut core.timers;
        timers.set(Timer::Send, send_at);
        timers.set(Timer::Idle, waiting.then(|| silence + self.config.idle_timeout));
        timers.set(Timer::Unresponsive, unresponsive.then(|| silence + self.config.unresponsive_after));
    }

    fn poll_transmit(&mut self, core: &mut Core, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        let (next, at) = self.next_packet(core)?;
        if at > now {
            return None;
        }
        let (probe, early) = match next {
            Next::Segment(i) if i == self.segs.next_new() => {
                (self.last_probe_at.is_none_or(|t| t + self.config.rtt_probe_interval <= now), self.asks_early(now, i))
            }
            _ => (false, false),
        };
        let (seq, payload_len, control) = match next {
            Next::Syn => (0, 0, Control(Control::SYN | Control::SACK_REQ)),
            Next::Segment(i) => {
                let s = self.segs.seg_start(i);
                let control = if probe || early { Control(Control::SACK_REQ) } else { Control(0) };
                (s, (self.segs.seg_end(i) - s) as usize, control)
            }
            Next::Request => (self.segs.sent_end(), 0, Control(Control::SACK_REQ)),
            Next::Fin => (self.segs.len(), 0, Control(Control::FIN)),
        };
        let mut repr = core.header(control, seq, 0);
        repr.payload_len = payload_len;
        let len = repr.buffer_len();
        if buf.len() < len {
            return None;
        }
        repr.emit(buf);
        if payload_len > 0 {
            self.segs.buf().copy_out(seq, &mut buf[repr.header_len()..len]);
        }
        let was_waiting = self.waiting(core);
        core.stats.datagrams_sent += 1;
        match next {
            Next::Syn => {
                self.syns_sent += 1;
                self.syn_sent_at = Some(now);
                self.syn_next_at = now + self.config.syn_interval;
            }
            Next::Segment(i) => {
                let first = self.segs.record_send(i, now);
                core.count_payload(now, seq, payload_len, first);
                if probe {
                    self.probe = Some((seq, now));
                    self.last_probe_at = Some(now);
                }
                if early {
                    self.early_request_at = Some(now);
                }
                // Pace: keep the schedule when a little late, restart it when
                // more than one gap (and the allowed burst) late: no bursts
                // after a pause.
                let gap = self.interval();
                let scheduled = self.next_send + gap;
                let burst = match gap < self.config.pacing_burst_gaps_below {
                    true => self.config.pacing_burst.max(gap * u64::from(self.config.pacing_burst_gaps)),
                    false => self.config.pacing_burst,
                };
                self.next_send = if scheduled + burst <= now { now + gap } else { scheduled };
            }
            Next::Request => self.request_sent_at = Some(now),
            Next::Fin => {
                core.fin_sent(now);
                // The FIN asks for an answer as a request does.
                self.request_sent_at = Some(now);
            }
        }
        if !was_waiting {
            self.waiting_since = now;
        }
        self.refresh_timers(core);
        Some(Transmit { len })
    }

    /// The routing module's h, P_max and b (seed 004 §III.C.2): P_max takes
    /// effect at once (eq. 9), h and b with the next RTT sample (eqs. 7–8).
    /// A hop count of 0 counts as 1; a loss outside [0, 1] is clamped (not
    /// a number: 0); a rate of 0 keeps the configured b.
    fn on_path_info(&mut self, core: &mut Core, now: Instant, info: PathInfo) {
        self.hop_count = info.hop_count.max(1);
        self.max_link_loss = if info.max_link_loss.is_nan() { 0.0 } else { info.max_link_loss.clamp(0.0, 1.0) };
        if info.link_rate_bps > 0 {
            self.link_rate_bps = info.link_rate_bps;
        }
        if self.fhd_now_s().is_some() {
            let rate_pps = self.rate_pps();
            core.trace(TraceSample::MtlRate { at: now, rate_pps });
        }
        self.refresh_timers(core);
    }
}
