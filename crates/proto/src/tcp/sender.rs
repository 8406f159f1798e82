//! The sending side: handshake, segmentation, loss detection and the
//! retransmission timer, as the [`SendControl`] of the shared [`Sender`]
//! skeleton (which keeps the lifecycle, the commit confirmation, the idle
//! clock, events and counters). Window arithmetic is delegated to
//! [`super::cc`].

use super::bbr::Bbr;
use super::cc::{
    AckSample, Aimd, CcMetrics, CongestionControl, Controller, NewReno, Reno, Response, Retransmit, Tahoe, Window,
};
use super::cubic::Cubic;
use super::rack::Rack;
use super::rtt::RttEstimator;
use super::sack::{SackRecovery, Scoreboard};
use super::{TcpConfig, TcpVariant, Timer};
use crate::engine::{RouteNotice, TraceSample, Transmit};
use crate::engine_core::Phase;
use crate::sender_core::{Screen, SendControl, Sender, SenderCore, StreamEnd};
use crate::stream::SendBuffer;
use crate::wire::{Control, ProtocolId, Repr, HEADER_LEN};
use elfn::Standby;
use meshbed_core::{Duration, Instant};

mod bbr;
mod elfn;
mod emit;
mod prr;
mod rack;
mod sack;
mod window;

/// The sequence number of the first application byte (the SYN occupies 0).
const DATA_START: u64 = 1;

/// A segment being timed for an RTT sample (one at a time, as in BSD TCP
/// without timestamps): the sample is taken when `end_seq` is acknowledged,
/// and dropped if this segment is retransmitted or the retransmission timer
/// fires (Karn's rule, RFC 6298 §3: the ACK of a retransmitted segment is
/// ambiguous). A retransmission of an *earlier* hole does not drop it: the
/// cumulative ACK then waits for the hole to fill, which can only lengthen
/// the sample (a larger, safer RTO). Dropping the sample on any
/// retransmission, as BSD does, starves a lossy path of samples, so a
/// backed-off RTO never collapses (seen on the lossy testbed-A chains).
#[derive(Copy, Clone, Debug)]
struct RttProbe {
    start_seq: u64,
    end_seq: u64,
    sent_at: Instant,
}

/// What the TCP sender reports beyond [`Stats`](crate::engine::Stats): the quantities of seed 002
/// §2's Figs. 2–3 (timeouts, RTO, slow start) and of TCP-ELFN's standby.
/// [`TcpSender::tcp_stats`] takes a snapshot.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TcpSenderStats {
    /// Times slow start began (seed 002 §2.2, Fig. 3(a)): when the connection
    /// is established, at every restart from the loss window (each RTO, and
    /// Tahoe's fast retransmit) even if cwnd was already below ssthresh, and
    /// whenever cwnd otherwise drops below ssthresh (NewReno leaving fast
    /// recovery with little in flight). Fast recovery itself is not slow
    /// start, even when partial ACKs deflate cwnd below ssthresh.
    pub slow_start_entries: u64,
    /// Time spent in slow start (cwnd < ssthresh, RFC 5681 §3.1) since the
    /// connection was established (seed 002 §2.2, Fig. 3(b)). ELFN standby
    /// time is included when the frozen window was in slow start; subtract
    /// `elfn_standby_time` for the time spent probing for bandwidth.
    pub slow_start_time: Duration,
    /// Retransmission timer expirations, the SYN's included.
    pub timeouts: u64,
    /// RTT measurements fed to the estimator (each also a
    /// [`TraceSample::RttSample`]).
    pub rtt_samples: u64,
    /// The largest RTO computed from RTT samples or backed off (seed 002
    /// §2.1, Fig. 2(c)): the largest [`TraceSample::Rto`]. The configured
    /// initial RTO counts only once a timeout has backed it off; zero until
    /// the first sample or timeout.
    pub max_rto: Duration,
    /// TCP-ELFN: standby periods entered, their total length, and the probes
    /// sent during them.
    pub elfn_standbys: u64,
    pub elfn_standby_time: Duration,
    pub elfn_probes: u64,
    /// RACK-TLP (`tcp-sack`, `tcp-cubic`): segments RACK marked lost, tail
    /// loss probes sent, and probes whose retransmission repaired a loss.
    pub rack_lost_segments: u64,
    pub tlp_probes: u64,
    pub tlp_repaired_losses: u64,
}

/// Sends one application byte stream over one connection: a whole buffer
/// given at construction ([`TcpSender::new`]), or a bounded window the
/// application refills through [`SendStream`](crate::stream::SendStream)
/// ([`TcpSender::streaming`]).
///
/// Driver contract (see [`crate::engine`]): after construction, and after
/// every `handle_input`/`handle_timeout`, call `poll_transmit` until it
/// returns `None`, drain `poll_event`, then sleep until `poll_timeout`. The
/// SYN goes out on the first `poll_transmit`.
///
/// # Route failures (TCP-ELFN)
///
/// Plain TCP ignores [`Engine::handle_route_notice`](crate::Engine::handle_route_notice). With
/// [`TcpConfig::elfn`] the sender follows Holland & Vaidya (MobiCom 1999, as
/// seed 002 §2.4 describes it: "the state of the TCP sender is frozen till a
/// new route is computed"):
/// - [`RouteNotice::Failed`] puts it in *standby*: it saves cwnd, ssthresh
///   and the RTO, stops the retransmission timer (so no timeout and no
///   backoff) and the give-up clocks (a route outage is not a dead peer),
///   and sends nothing but one probe every
///   [`TcpConfig::elfn_probe_interval`].
/// - The probe is the first unacknowledged segment (the SYN during the
///   handshake; the next new segment when nothing is outstanding), as
///   Holland & Vaidya probed with a packet of the window, rather than a
///   1-byte zero-window-style probe: whether it fills the hole at `snd_una`
///   or the receiver already had it, the answer acknowledges new data, which
///   is what ends standby. A 1-byte probe of new data behind a hole would
///   only draw a duplicate ACK, indistinguishable from one sent before the
///   failure. It costs one segment per interval.
/// - [`RouteNotice::Reestablished`], or an ACK of new data (which proves a
///   route exists), ends standby: the saved cwnd, ssthresh and RTO are
///   restored, the retransmission timer and the give-up clock re-armed. On a
///   notice the first unacknowledged segment is resent at once, as the probe
///   would have been: what was in flight at the failure was most likely
///   dropped at the broken link (seed 002 §2.3), and its ACK says what got
///   through.
///
/// Duplicate ACKs during standby change nothing (the state is frozen), and
/// a second failure notice during standby keeps the first one's saved state.
///
/// # Rate-based pacing
///
/// With [`TcpConfig::pacing`] (`tcp-reno-paced`, `tcp-newreno-paced`; seed
/// 003 §6) a data segment that the window admits still waits until
/// `InterPacketDelay = SRTT / (V · cwnd)` has passed since the previous data
/// segment left, V being [`TcpConfig::pacing_v`]. Seed 003's typesetting of
/// the formula is lost; this is the rule of its reference [8] (Visweswaraiah
/// & Heidemann 1997, rate-based pacing: one window per round trip, so
/// segments at the connection's estimated rate cwnd / RTT), with V in the
/// denominator as §6 says. Choices the paper leaves open:
/// - RTT is the smoothed RTT of RFC 6298 (what the sender has; ns-2's
///   `t_srtt_`). Before the first RTT sample (a retransmitted SYN leaves
///   none) nothing is paced: there is no rate to pace at, and [8] falls
///   back to ordinary TCP without an estimate.
/// - cwnd is the current window, the same (capped) one the window check
///   uses, read when the next segment is due, not when the previous one
///   left: a window cut by a loss widens the gap at once.
/// - A fast retransmission (and NewReno's partial-ACK retransmission) is
///   not held back: RFC 5681 §3.2 sends it at once, and delaying the repair
///   of the hole every later segment waits for only lengthens recovery. It
///   counts as a departure, so the next segment is spaced after it.
///   Segments resent by go-back-N after a timeout go through the window
///   check and are paced like new data (cwnd is then one segment, so
///   they leave one SRTT apart at most, as the window allows anyway).
/// - The SYN and ELFN probes are not paced.
///
/// The held-back segment's time is the `Pace` timer, so a driver that
/// sleeps until [`Engine::poll_timeout`](crate::Engine::poll_timeout) paces without knowing about it.
pub type TcpSender = Sender<TcpSendControl>;

/// TCP's part of [`TcpSender`]: sequence numbers, the congestion window,
/// RFC 6298's timer, ELFN standby and pacing.
#[derive(Debug)]
pub struct TcpSendControl {
    config: TcpConfig,
    variant: TcpVariant,
    /// The bytes not yet acknowledged, and what the application wrote.
    buf: SendBuffer,
    /// Oldest unacknowledged sequence number.
    snd_una: u64,
    /// Next sequence number to send; below `snd_max` after a go-back-N.
    snd_nxt: u64,
    /// One past the highest sequence number ever sent.
    snd_max: u64,
    dupacks: u32,
    /// Set by fast retransmit and NewReno's partial ACKs: send the segment at
    /// `snd_una` next, regardless of the window.
    retransmit_head: bool,
    syn_pending: bool,
    syn_sent: bool,
    /// Consecutive timer expirations without the ACK of new data.
    rto_expirations: u32,
    /// Retransmission timeouts since the peer was last heard from.
    unanswered_rtos: u32,
    cc: Controller,
    rtt: RttEstimator,
    rtt_probe: Option<RttProbe>,
    last_traced_cwnd: f64,
    /// `None` until the first RTO is computed, which is always traced.
    last_traced_rto: Option<Duration>,
    /// Set while in slow start (see [`TcpSenderStats::slow_start_entries`]).
    slow_start_since: Option<Instant>,
    /// TCP-ELFN: set while the route is down.
    standby: Option<Standby>,
    /// TCP-ELFN: the probe timer fired and the probe is not sent yet.
    probe_due: bool,
    /// Pacing: when the last data segment left.
    last_data_sent_at: Option<Instant>,
    tcp_stats: TcpSenderStats,
    /// SACK (`tcp-sack`, `tcp-cubic`): what the receiver reported holding;
    /// `None` for the TCPs without it.
    sack: Option<Box<Scoreboard>>,
    /// SACK: RecoveryPoint of the current or last recovery (RFC 6675 §5),
    /// for the rescue retransmission.
    sack_recovery_point: u64,
    /// RACK-TLP (RFC 8985) with SACK and [`TcpConfig::rack_tlp`]: what was
    /// sent when, and what is lost; `None` otherwise.
    rack: Option<Box<Rack>>,
    /// TLP: the probe timer fired and the probe is not sent yet.
    tlp_due: bool,
    /// BBR (`tcp-bbr`): the delivery counters, the rate sample of the ACK
    /// being processed, and pacing at BBR's rate ([`bbr`]).
    bbr: Option<Box<bbr::BbrSending>>,
    /// PRR (RFC 6937, [`TcpConfig::prr`]) while in fast recovery, and the
    /// window it gave at the last ACK ([`prr`]).
    pub(super) prr: Option<crate::tcp::prr::Prr>,
    prr_cwnd_bytes: u64,
}

impl TcpSender {
    /// A sender that will transfer `data` on `connection_id` (drawn by the
    /// driver from its seeded stream). `now` starts the idle timer.
    pub fn new(config: TcpConfig, variant: TcpVariant, connection_id: u32, data: Vec<u8>, now: Instant) -> Self {
        Self::with_buffer(config, variant, connection_id, SendBuffer::complete(data), now)
    }

    /// A sender whose application writes the stream through
    /// [`SendStream`](crate::stream::SendStream), holding at most
    /// `window_bytes` unacknowledged and unsent bytes.
    pub fn streaming(
        config: TcpConfig,
        variant: TcpVariant,
        connection_id: u32,
        window_bytes: usize,
        now: Instant,
    ) -> Self {
        Self::with_buffer(config, variant, connection_id, SendBuffer::new(window_bytes), now)
    }

    fn with_buffer(config: TcpConfig, variant: TcpVariant, connection_id: u32, buf: SendBuffer, now: Instant) -> Self {
        let config = config.sanitized();
        let window = Window::new(
            config.initial_cwnd_segments as f64,
            config.initial_ssthresh_segments as f64,
            config.max_cwnd_segments as f64,
            config.mss_bytes as u64,
        );
        let threshold = config.dupack_threshold;
        // BBR always runs RACK-TLP ([`TcpConfig::rack_tlp`]).
        let rack = (variant.uses_sack() && (config.rack_tlp || variant == TcpVariant::Bbr)).then(Box::<Rack>::default);
        // With RACK no count of duplicate ACKs starts recovery: a segment
        // RACK marks lost does (RFC 8985 §6.2; Linux's `tcp_time_to_recover`
        // skips the DupThresh rule when RACK is on).
        let sack_threshold = if rack.is_some() { u32::MAX } else { threshold };
        let cc = match variant {
            TcpVariant::Tahoe => Controller::Tahoe(Tahoe::new(window, threshold)),
            TcpVariant::Reno => Controller::Reno(Reno::new(window, threshold)),
            TcpVariant::NewReno => Controller::NewReno(NewReno::new(window, threshold)),
            TcpVariant::Sack => Controller::Sack(Box::new(SackRecovery::new(window, sack_threshold, Aimd))),
            TcpVariant::Cubic => {
                Controller::Cubic(Box::new(SackRecovery::new(window, sack_threshold, Cubic::new(config.hystart))))
            }
            TcpVariant::Bbr => {
                Controller::Bbr(Box::new(Bbr::new(window, config.mss_bytes as u64, u64::from(connection_id), now)))
            }
        };
        let rtt = RttEstimator::new(config.initial_rto, config.min_rto, config.max_rto, config.clock_granularity);
        // TCP traces always; its idle clock runs from construction.
        let mut core = SenderCore::new(ProtocolId::Tcp, connection_id, now, true, StreamEnd::new(config.idle_timeout));
        core.timers.set(Timer::Idle, now + config.idle_timeout);
        let control = TcpSendControl {
            config,
            variant,
            buf,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            dupacks: 0,
            retransmit_head: false,
            syn_pending: true,
            syn_sent: false,
            rto_expirations: 0,
            unanswered_rtos: 0,
            cc,
            rtt,
            rtt_probe: None,
            last_traced_cwnd: f64::NAN,
            last_traced_rto: None,
            slow_start_since: None,
            standby: None,
            probe_due: false,
            last_data_sent_at: None,
            tcp_stats: TcpSenderStats::default(),
            sack: variant.uses_sack().then(Box::default),
            sack_recovery_point: 0,
            rack,
            tlp_due: false,
            bbr: (variant == TcpVariant::Bbr).then(|| Box::new(bbr::BbrSending::new(now))),
            prr: None,
            prr_cwnd_bytes: 0,
        };
        Sender::with_parts(core, control)
    }

    pub fn variant(&self) -> TcpVariant {
        self.control.variant
    }

    /// cwnd, ssthresh and whether the sender is recovering from a loss.
    pub fn cc_metrics(&self) -> CcMetrics {
        self.control.cc.metrics()
    }

    /// BBR's model and state, for a `tcp-bbr` sender.
    pub fn bbr(&self) -> Option<&Bbr> {
        self.control.cc.bbr()
    }

    /// Pacing: the gap the rule puts between two data segments now,
    /// SRTT / (V · cwnd); `None` without pacing or before the first RTT
    /// sample (see the type's "Rate-based pacing").
    pub fn pacing_interval(&self) -> Option<Duration> {
        self.control.pacing_interval()
    }

    /// Pacing: the earliest time the next data segment may leave, `None`
    /// when pacing does not hold it back (off, no RTT sample, nothing sent).
    pub fn next_paced_send(&self) -> Option<Instant> {
        self.control.next_paced_send()
    }

    /// The RTT estimator (SRTT, RTTVAR, current RTO).
    pub fn rtt(&self) -> &RttEstimator {
        &self.control.rtt
    }

    /// Slow starts, timeouts, RTT samples, maximum RTO and ELFN standby so
    /// far, with the periods still open counted up to `now` (or to the
    /// connection's close, after which nothing changes).
    pub fn tcp_stats(&self, now: Instant) -> TcpSenderStats {
        let control = &self.control;
        let mut stats = control.tcp_stats.clone();
        if let Some(since) = control.slow_start_since {
            stats.slow_start_time += now.saturating_since(since);
        }
        if let Some(standby) = &control.standby {
            stats.elfn_standby_time += now.saturating_since(standby.entered_at);
        }
        if let Some(rack) = &control.rack {
            stats.rack_lost_segments = rack.stats.lost_segments;
            stats.tlp_probes = rack.stats.probes;
            stats.tlp_repaired_losses = rack.stats.probes_repaired;
        }
        stats
    }

    /// Whether the sender is in TCP-ELFN standby (the route is down).
    pub fn in_standby(&self) -> bool {
        self.control.standby.is_some()
    }

    /// Bytes sent and not yet acknowledged (sequence space, incl. SYN/FIN).
    pub fn flight_bytes(&self) -> u64 {
        self.control.snd_max - self.control.snd_una
    }
}

type Core = SenderCore<Timer>;

impl TcpSendControl {
    /// One past the last application byte written so far.
    fn written_end(&self) -> u64 {
        DATA_START + self.buf.written_end()
    }

    /// The FIN's sequence number, once the application finished the stream.
    fn fin_seq(&self) -> Option<u64> {
        self.buf.end().map(|len| DATA_START + len)
    }

    /// One past the FIN: everything is acknowledged when `snd_una` reaches it.
    fn fin_end(&self) -> Option<u64> {
        self.fin_seq().map(|f| f + 1)
    }

    fn on_rtt_sample(&mut self, core: &mut Core, now: Instant, rtt: Duration) {
        self.rtt.on_sample(rtt);
        if let Some(rack) = &mut self.rack {
            rack.on_rtt_sample(rtt);
        }
        self.tcp_stats.rtt_samples += 1;
        core.trace(TraceSample::RttSample { at: now, rtt });
        self.rto_changed(core, now);
    }

    fn on_syn_ack(&mut self, core: &mut Core, now: Instant, repr: &Repr) {
        if !(repr.control.contains(Control::SYN | Control::ACK) && repr.ack == DATA_START) {
            core.stats.dropped_datagrams += 1;
            return;
        }
        // The SYN-ACK proves a route: an ELFN standby ends.
        self.leave_standby(core, now, false);
        self.snd_una = DATA_START;
        self.snd_nxt = DATA_START;
        self.snd_max = DATA_START;
        self.rto_expirations = 0;
        core.timers.stop(Timer::Retransmit);
        core.establish();
        if let Some(probe) = self.rtt_probe.take() {
            self.on_rtt_sample(core, now, now.saturating_since(probe.sent_at));
        }
        if let Some(bbr) = self.cc.bbr_mut() {
            bbr.on_rtt_known(self.rtt.srtt());
        }
        self.window_changed(core, now, false);
    }

    fn on_ack(&mut self, core: &mut Core, now: Instant, repr: &Repr, payload: &[u8]) {
        if repr.control.contains(Control::SYN) || !repr.control.contains(Control::ACK) {
            // A duplicate SYN-ACK (the receiver answers every copy of our
            // SYN), or something that is not an acknowledgement at all.
            core.stats.dropped_datagrams += 1;
            return;
        }
        core.stats.feedback_packets += 1;
        let mut ack = repr.ack;
        if ack > self.snd_max {
            // Acknowledges data never sent: no conforming receiver does that
            // (issue 9: a forged ack must not end a transfer).
            core.stats.dropped_datagrams += 1;
            core.stats.protocol_violations += 1;
            return;
        }
        if let Some(fin_end) = self.fin_end() {
            if ack >= fin_end && !core.confirms_fin(payload) {
                // The FIN counts as acknowledged only with the receiver's
                // commit confirmation; without one this acks the data.
                ack = fin_end - 1;
            }
        }
        if ack < self.snd_una {
            // An old ACK overtaken by a newer one: carries no information.
            core.stats.dropped_datagrams += 1;
            return;
        }
        if let Some(scoreboard) = &mut self.sack {
            // Blocks past snd_max acknowledge data never sent: refused,
            // like such a cumulative ACK above.
            let (_, refused) = scoreboard.on_ack(ack, self.snd_max, &repr.sack_blocks);
            core.stats.protocol_violations += refused as u64;
            if let Some(rack) = &mut self.rack {
                let prior_pipe_bytes = rack.pipe();
                let delivered = rack.on_ack(now, ack, |seq| scoreboard.sacked_end(seq));
                if let Some(bbr) = &mut self.bbr {
                    bbr.on_delivered(now, &delivered, prior_pipe_bytes, rack.min_rtt());
                }
            }
        }
        if self.rack.is_some() {
            let pure_dupack = ack == self.snd_una && repr.sack_blocks.is_empty() && repr.payload_len == 0;
            self.on_ack_for_probe(now, ack, pure_dupack);
        }
        if ack == self.snd_una {
            // RFC 5681 §2: a duplicate ACK acknowledges nothing new, carries
            // no data and arrives while data is outstanding.
            // In ELFN standby the state is frozen: dupacks change nothing.
            if self.snd_una < self.snd_max && repr.payload_len == 0 && self.standby.is_none() {
                self.dupacks = self.dupacks.saturating_add(1);
                let sample = self.ack_sample(ack, 0);
                let response = self.cc.on_duplicate_ack(now, &sample);
                self.apply(core, now, response);
                self.window_changed(core, now, response.retransmit == Retransmit::GoBackN);
            }
            let lost_before = self.rack_lost_segments();
            self.rack_detect_loss(core, now);
            self.bbr_after_ack(core, now, lost_before);
            return;
        }

        // New data acknowledged, which proves a route exists: an ELFN standby
        // ends, and the ACK is then taken as usual.
        self.leave_standby(core, now, false);
        let acked_bytes = ack - self.snd_una;
        self.snd_una = ack;
        self.snd_nxt = self.snd_nxt.max(ack);
        self.dupacks = 0;
        self.rto_expirations = 0;
        core.stats.bytes_delivered = (ack - DATA_START).min(self.buf.written_end());
        self.buf.release(ack - DATA_START);
        let mut rtt_sample = None;
        if let Some(probe) = self.rtt_probe {
            if ack >= probe.end_seq {
                let rtt = now.saturating_since(probe.sent_at);
                self.on_rtt_sample(core, now, rtt);
                rtt_sample = Some(rtt);
                self.rtt_probe = None;
            }
        }
        if self.config.timestamps && repr.d_s_us != 0 {
            // RFC 7323 §4: the echo of the TSval of the segment that moved
            // the receiver's edge, retransmitted or not. An echo from the
            // future (more than 2³¹ µs ahead once wrapped) is no sample.
            let rtt_us = super::tsval(now).wrapping_sub(repr.d_s_us);
            if rtt_us < 1 << 31 {
                let rtt = Duration::from_micros(u64::from(rtt_us));
                self.on_rtt_sample(core, now, rtt);
                rtt_sample = Some(rtt);
            }
        }
        if self.fin_seq().is_some_and(|fin| ack >= fin) {
            // Every byte is acknowledged (and released).
            core.await_confirmation(now);
        }
        let sample = AckSample { rtt_sample, ..self.ack_sample(ack, acked_bytes) };
        let response = self.cc.on_ack(now, &sample);
        if self.fin_end().is_some_and(|fin_end| self.snd_una >= fin_end) {
            // The skeleton then closes the slow-start and standby periods.
            self.window_changed(core, now, false);
            core.finish();
            return;
        }
        // RFC 6298 §5.3: restart the timer when new data is acknowledged
        // (unless the controller keeps it running); §5.2 would stop it when
        // nothing is outstanding, which cannot happen before the FIN's ACK.
        if response.restart_timer || core.timers.get(Timer::Retransmit).is_none() {
            core.timers.set(Timer::Retransmit, now + self.rtt.rto());
        }
        self.apply(core, now, Response { restart_timer: false, ..response });
        self.window_changed(core, now, false);
        let lost_before = self.rack_lost_segments();
        self.rack_detect_loss(core, now);
        self.bbr_after_ack(core, now, lost_before);
        // RFC 8985 §7.1: an ACK of new data restarts the probe timer.
        self.arm_probe_timer(core, now);
    }

    fn ack_sample(&self, ack: u64, acked_bytes: u64) -> AckSample {
        AckSample {
            ack,
            acked_bytes,
            flight_bytes: self.snd_max - self.snd_una,
            snd_max: self.snd_max,
            dupacks: self.dupacks,
            srtt: self.rtt.srtt(),
            // With RACK, RACK's marks start recovery, not this rule.
            head_lost: self.rack.is_none()
                && self.sack.as_ref().is_some_and(|s| {
                    self.snd_una < self.snd_max
                        && s.is_lost(self.snd_una, self.config.mss_bytes as u64, self.config.dupack_threshold)
                }),
            rtt_sample: None,
        }
    }

    fn apply(&mut self, core: &mut Core, now: Instant, response: Response) {
        match response.retransmit {
            Retransmit::None => {}
            Retransmit::Head => {
                // With RACK the head goes first only if RACK found it lost;
                // otherwise NextSeg sends what it marked.
                self.retransmit_head = self.rack.as_ref().is_none_or(|rack| rack.is_lost(self.snd_una));
                if let Some(scoreboard) = &mut self.sack {
                    // Only SACK recovery's entry answers Head with SACK on.
                    scoreboard.enter_recovery(self.snd_una);
                    self.sack_recovery_point = self.snd_max;
                    self.prr_enter();
                }
            }
            Retransmit::GoBackN => {
                self.snd_nxt = self.snd_una;
                self.retransmit_head = false;
            }
        }
        if response.restart_timer {
            core.timers.set(Timer::Retransmit, now + self.rtt.rto());
        }
    }

    fn on_retransmission_timeout(&mut self, core: &mut Core, now: Instant) {
        // RFC 6298 §5.5–5.6: back off, restart the timer, retransmit.
        self.rtt.back_off();
        self.tcp_stats.timeouts += 1;
        self.rto_changed(core, now);
        self.rto_expirations = self.rto_expirations.saturating_add(1);
        self.unanswered_rtos = self.unanswered_rtos.saturating_add(1);
        self.rtt_probe = None;
        // A timeout ends fast recovery, and PRR with it (RFC 6937 covers
        // fast recovery only; after a timeout the sender slow-starts).
        self.prr = None;
        match core.phase() {
            Phase::Connecting => {
                self.syn_pending = true;
                self.cc.on_syn_retransmitted();
            }
            Phase::Established if self.snd_una < self.snd_max => {
                // RFC 5681 §3.1: ssthresh from FlightSize on the first
                // timeout only, cwnd to the loss window of one segment; then
                // go back N and slow-start through the unacknowledged data.
                let first = self.rto_expirations == 1;
                self.cc.on_retransmission_timeout(now, self.snd_max - self.snd_una, self.snd_max, first);
                if let Some(scoreboard) = &mut self.sack {
                    scoreboard.on_timeout(self.snd_una, self.snd_max);
                }
                if let Some(rack) = &mut self.rack {
                    rack.on_timeout(now);
                    core.timers.stop(Timer::Rack);
                    core.timers.stop(Timer::Tlp);
                    self.tlp_due = false;
                }
                self.snd_nxt = self.snd_una;
                // RFC 6298 §5.4: the earliest segment goes again at once.
                // Go-back-N does that through the emptied flight; RACK's
                // pipe may still count segments sent less than RACK.rtt
                // ago, so the head is forced (Linux `tcp_retransmit_timer`).
                self.retransmit_head = self.rack.is_some();
                self.dupacks = 0;
                self.window_changed(core, now, true);
            }
            _ => return,
        }
        core.timers.set(Timer::Retransmit, now + self.rtt.rto());
    }
}

impl SendControl for TcpSendControl {
    type Timer = Timer;

    fn send_buffer(&self) -> &SendBuffer {
        &self.buf
    }
    fn send_buffer_mut(&mut self) -> &mut SendBuffer {
        &mut self.buf
    }

    fn reset_window(&self) -> (u64, u64) {
        (self.snd_una, self.snd_max)
    }
    fn on_reset_challenge(&mut self, _core: &mut Core, _now: Instant) {
        if self.snd_una < self.snd_max {
            self.retransmit_head = true;
        }
    }

    fn screen(&self, core: &Core, ours: bool, _repr: &Repr) -> Screen {
        if !ours || core.is_closed() {
            return Screen::Stray;
        }
        Screen::Accept
    }

    fn on_heard(&mut self, core: &mut Core, now: Instant) {
        self.unanswered_rtos = 0;
        if self.standby.is_none() {
            core.timers.set(Timer::Idle, now + self.config.idle_timeout);
        }
    }

    fn on_feedback(&mut self, core: &mut Core, now: Instant, repr: &Repr, payload: &[u8]) {
        match core.phase() {
            Phase::Connecting => self.on_syn_ack(core, now, repr),
            Phase::Established => {
                let before = self.delivery_mark();
                self.on_ack(core, now, repr, payload);
                self.prr_after_ack(before);
            }
            Phase::Finished | Phase::Closed | Phase::Failed => {}
        }
    }

    fn on_idle_timeout(&mut self, core: &mut Core, now: Instant) -> Option<Instant> {
        // A backed-off RTO can exceed the idle time: then the silence only
        // says that we have not asked again yet. Give the peer
        // `max_unanswered_rtos` retransmissions to answer before declaring
        // it unreachable; RTOs are capped (max_rto), so the wait stays
        // bounded. The idle check moves past the RTO, and past `now`: when
        // both are due at once (a driver that woke late) the RTO runs
        // first and the check comes again after it (found by fuzzing:
        // re-armed at the due RTO, the idle timer ran forever).
        if self.unanswered_rtos < self.config.max_unanswered_rtos {
            if let Some(rto_at) = core.timers.get(Timer::Retransmit) {
                core.timers.set(Timer::Idle, rto_at.max(now) + Duration::from_nanos(1));
                return None;
            }
        }
        Some(core.last_heard)
    }

    fn on_timer(&mut self, core: &mut Core, now: Instant, timer: Timer) {
        match timer {
            Timer::Retransmit => self.on_retransmission_timeout(core, now),
            Timer::ElfnProbe => {
                self.probe_due = true;
                core.timers.set(Timer::ElfnProbe, now + self.config.elfn_probe_interval);
            }
            // The wake-up itself is the point: the driver now polls the
            // segment pacing held back. (Idle and Confirm are the
            // skeleton's; DelayedAck is the receiver's.)
            Timer::Rack => self.rack_detect_loss(core, now),
            Timer::Tlp => self.tlp_due = self.rack.is_some(),
            Timer::Pace | Timer::DelayedAck | Timer::Idle | Timer::Confirm => {}
        }
    }

    fn poll_transmit(&mut self, core: &mut Core, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        if buf.len() < HEADER_LEN {
            return None;
        }
        if self.standby.is_some() {
            return self.poll_probe(core, now, buf);
        }
        match core.phase() {
            Phase::Connecting if self.syn_pending => Some(self.emit_syn(core, now, buf)),
            Phase::Established if self.rack.is_some() => self.poll_rack(core, now, buf),
            Phase::Established if self.sack.is_some() => self.poll_sack(core, now, buf),
            Phase::Established => {
                if self.retransmit_head {
                    self.retransmit_head = false;
                    let seq = self.snd_una;
                    return self.emit_segment(core, now, seq, u64::MAX, buf);
                }
                let seq = self.snd_nxt;
                if self.fin_end().is_some_and(|fin_end| seq >= fin_end) {
                    return None;
                }
                let (len, fin) = self.segment_at(seq, buf.len());
                if !self.window_allows(len as u64 + fin as u64) {
                    return None;
                }
                if let Some(at) = self.next_paced_send().filter(|&at| at > now) {
                    core.timers.set(Timer::Pace, at);
                    return None;
                }
                self.emit_segment(core, now, seq, u64::MAX, buf)
            }
            _ => None,
        }
    }

    /// TCP-ELFN's reaction (see [`TcpSender`]); plain TCP ignores notices.
    fn on_route_notice(&mut self, core: &mut Core, now: Instant, notice: RouteNotice) {
        if !self.config.elfn {
            return;
        }
        match notice {
            RouteNotice::Failed => self.enter_standby(core, now),
            RouteNotice::Reestablished => self.leave_standby(core, now, true),
        }
    }

    /// Closes the open slow-start and standby periods at `now`, so that
    /// [`TcpSender::tcp_stats`] stops changing.
    fn on_close(&mut self, now: Instant) {
        if let Some(since) = self.slow_start_since.take() {
            self.tcp_stats.slow_start_time += now.saturating_since(since);
        }
        if let Some(standby) = self.standby.take() {
            self.tcp_stats.elfn_standby_time += now.saturating_since(standby.entered_at);
        }
        self.probe_due = false;
    }
}
