//! BBR v1 (draft-cardwell-iccrg-bbr-congestion-control-00 and Linux
//! `net/ipv4/tcp_bbr.c`, which the draft describes): `tcp-bbr`.
//!
//! BBR does not read loss as congestion. It keeps a model of the path,
//! the bottleneck bandwidth `BtlBw` (the largest delivery rate of the last
//! ten round trips, [`super::delivery_rate`]) and the round-trip
//! propagation time `RTprop` (the smallest RTT of the last 10 s), and
//! paces at `pacing_gain · BtlBw` with at most `cwnd_gain · BtlBw · RTprop`
//! in flight. A state machine sets the gains:
//!
//! - **Startup**: gains 2/ln 2 ≈ 2.885, doubling the rate every round trip,
//!   until three round trips in a row raise BtlBw by less than 25%;
//! - **Drain**: pacing gain ln 2 / 2, until the queue Startup built is gone
//!   (in flight ≤ one BDP);
//! - **ProbeBW**: pacing gain cycling through 5/4, 3/4, 1, 1, 1, 1, 1, 1,
//!   one phase per RTprop, starting at a random phase other than 3/4;
//!   cwnd gain 2;
//! - **ProbeRTT**: when RTprop was not refreshed for 10 s, cwnd 4 segments
//!   for 200 ms and a round trip, to measure the path without its queue.
//!
//! Loss recovery (which segments go again) is RFC 6675's with RACK-TLP,
//! as in Linux; in recovery BBR conserves packets for the first round trip
//! (cwnd = in flight + delivered), then grows again, and restores the
//! window it had when recovery ends.
//!
//! Where this follows Linux rather than the draft (the fidelity anchor is
//! the kernel, docs/PROTOCOLS.md "BBR"): the send quantum (`3 ·
//! tso_segs_goal`, cwnd rounded up to even, +2 in the 5/4 phase), the ACK
//! aggregation allowance added to cwnd (`bbr_update_ack_aggregation`,
//! Linux 4.20+), the 1% pacing margin, packet conservation ending at the
//! next round start, and the losses of an ACK taken off cwnd. Left out:
//! the long-term bandwidth (token-bucket policer) detection, which a mesh
//! has no policer for, and the `is_ack_delayed` exemption of the RTprop
//! filter (the engine's samples do not say which ACKs were delayed).

use super::cc::{AckSample, CongestionControl, Response, Retransmit, Window};
use super::delivery_rate::RateSample;
use crate::filter::MaxFilter;
use meshbed_core::{Duration, Instant, StreamRng};
use rand::{Rng, SeedableRng};

/// `bbr_high_gain`: 2/ln 2 (Linux 2885/1000, rounded up by one unit),
/// the smallest gain that doubles the delivery rate every round trip.
pub const HIGH_GAIN: f64 = 2.885;
/// `bbr_drain_gain`: its inverse, to drain Startup's queue in a round trip.
pub const DRAIN_GAIN: f64 = 1.0 / 2.885;
/// `bbr_cwnd_gain` in ProbeBW.
pub const CWND_GAIN: f64 = 2.0;
/// `bbr_pacing_gain[]`: ProbeBW's cycle of eight phases.
pub const PACING_GAIN_CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// `bbr_bw_rtts`: BtlBw is the maximum over this many round trips.
pub const BTL_BW_FILTER_ROUNDS: u64 = 10;
/// `bbr_min_rtt_win_sec`: RTprop's window.
pub const RTPROP_FILTER: Duration = Duration::from_secs(10);
/// `bbr_probe_rtt_mode_ms`: how long ProbeRTT holds the window down.
pub const PROBE_RTT_DURATION: Duration = Duration::from_millis(200);
/// `bbr_cwnd_min_target`: the smallest cwnd, and ProbeRTT's, in segments.
pub const MIN_PIPE_CWND_SEGMENTS: u64 = 4;
/// `bbr_full_bw_thresh` and `bbr_full_bw_cnt`: Startup ends after this
/// many round trips without BtlBw growing by this factor.
pub const FULL_BW_THRESHOLD: f64 = 1.25;
pub const FULL_BW_ROUNDS: u32 = 3;
/// `bbr_pacing_margin_percent`: pace 1% below the estimate, so that the
/// bottleneck queue drains rather than holding steady.
pub const PACING_MARGIN: f64 = 0.01;
/// `TCP_INIT_CWND` (Linux's constant, whatever the route's initial
/// window): cwnd keeps growing while fewer segments than this were
/// delivered, and the BDP before any RTT sample.
pub const TCP_INIT_CWND_SEGMENTS: u64 = 10;
/// `bbr_extra_acked_win_rtts` and `bbr_extra_acked_max_us`: the ACK
/// aggregation allowance is the largest excess of the last 5–10 round
/// trips, at most 100 ms at BtlBw.
pub const EXTRA_ACKED_WINDOW_ROUNDS: u32 = 5;
pub const EXTRA_ACKED_MAX: Duration = Duration::from_millis(100);
/// `bbr_min_tso_rate`: below 1.2 Mbit/s the send quantum is one segment.
const MIN_TSO_RATE_BYTES_PER_S: f64 = 1_200_000.0 / 8.0;

/// BBR's state machine (draft §3.4).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BbrState {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// Linux's congestion-avoidance states as BBR sees them: whether the
/// sender is in fast recovery or recovering from a timeout.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum CaState {
    Open,
    Recovery,
    Loss,
}

/// What one ACK told the sender, beyond the [`AckSample`]: the delivery
/// rate sample and the state after loss detection (Linux calls
/// `cong_control` after `tcp_fastretrans_alert`).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct BbrAck {
    pub rate: RateSample,
    /// `C.delivered` and `C.delivered_time` after this ACK.
    pub delivered_bytes: u64,
    pub delivered_time: Instant,
    /// The pipe after this ACK and its loss detection.
    pub pipe_bytes: u64,
    /// Segments this ACK's loss detection marked lost (`rs.losses`).
    pub lost_segments: u64,
    pub srtt: Option<Duration>,
}

/// What BBR did, for the sender's statistics.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BbrStats {
    /// Times ProbeRTT was entered.
    pub probe_rtt_entries: u64,
    /// When Startup ended (the pipe was found full), if it did.
    pub startup_ended_at: Option<Instant>,
}

/// BBR v1 for one connection.
#[derive(Clone, Debug)]
pub struct Bbr {
    /// cwnd in whole segments; ssthresh only marks where Startup ended.
    pub window: Window,
    mss_bytes: u64,
    state: BbrState,
    pacing_gain: f64,
    cwnd_gain: f64,
    btl_bw: MaxFilter,
    rt_prop: Option<Duration>,
    rt_prop_stamp: Instant,
    pacing_rate_bytes_per_s: f64,
    has_seen_rtt: bool,
    round_count: u64,
    next_round_delivered: u64,
    round_start: bool,
    full_bw_bytes_per_s: f64,
    full_bw_count: u32,
    full_bw_reached: bool,
    cycle_index: usize,
    cycle_stamp: Instant,
    probe_rtt_done_stamp: Option<Instant>,
    probe_rtt_round_done: bool,
    idle_restart: bool,
    prior_cwnd_segments: u64,
    packet_conservation: bool,
    ca_state: CaState,
    prev_ca_state: CaState,
    /// One past the highest byte sent when recovery (or the timeout's
    /// loss state) began; it ends when the cumulative ACK covers it.
    recovery_point: u64,
    extra_acked_bytes: [u64; 2],
    extra_acked_index: usize,
    extra_acked_window_rounds: u32,
    ack_epoch_stamp: Instant,
    ack_epoch_acked_bytes: u64,
    /// ProbeBW's random starting phase (`bbr_cycle_rand`), drawn from a
    /// stream seeded by the connection id, which the driver drew from the
    /// run's seed.
    rng: StreamRng,
    pub stats: BbrStats,
}

impl Bbr {
    pub fn new(window: Window, mss_bytes: u64, seed: u64, now: Instant) -> Self {
        let mut bbr = Bbr {
            window,
            mss_bytes: mss_bytes.max(1),
            state: BbrState::Startup,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            btl_bw: MaxFilter::default(),
            rt_prop: None,
            rt_prop_stamp: now,
            pacing_rate_bytes_per_s: 0.0,
            has_seen_rtt: false,
            round_count: 0,
            next_round_delivered: 0,
            round_start: false,
            full_bw_bytes_per_s: 0.0,
            full_bw_count: 0,
            full_bw_reached: false,
            cycle_index: 0,
            cycle_stamp: now,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            idle_restart: false,
            prior_cwnd_segments: 0,
            packet_conservation: false,
            ca_state: CaState::Open,
            prev_ca_state: CaState::Open,
            recovery_point: 0,
            extra_acked_bytes: [0; 2],
            extra_acked_index: 0,
            extra_acked_window_rounds: 0,
            ack_epoch_stamp: now,
            ack_epoch_acked_bytes: 0,
            rng: StreamRng::seed_from_u64(seed),
            stats: BbrStats::default(),
        };
        bbr.window.ssthresh_segments = f64::INFINITY;
        bbr.init_pacing_rate(None);
        bbr
    }

    pub fn state(&self) -> BbrState {
        self.state
    }

    /// The rate to pace at, bytes per second.
    pub fn pacing_rate_bytes_per_s(&self) -> f64 {
        self.pacing_rate_bytes_per_s
    }

    /// BtlBw, bytes per second (0 before the first sample).
    pub fn btl_bw_bytes_per_s(&self) -> f64 {
        self.btl_bw.get()
    }

    /// RTprop, once measured.
    pub fn rt_prop(&self) -> Option<Duration> {
        self.rt_prop
    }

    pub fn pacing_gain(&self) -> f64 {
        self.pacing_gain
    }

    pub fn cwnd_gain(&self) -> f64 {
        self.cwnd_gain
    }

    fn cwnd(&self) -> u64 {
        self.window.cwnd_segments as u64
    }

    fn set_cwnd(&mut self, segments: u64) {
        self.window.set_cwnd_segments(segments.max(1) as f64);
    }

    /// Whether the sender is recovering from a loss or a timeout.
    pub fn in_loss_recovery(&self) -> bool {
        self.ca_state != CaState::Open
    }

    /// ProbeRTT holds the flow down on purpose: its samples are
    /// application-limited (Linux marks `tp->app_limited` in ProbeRTT).
    pub fn in_probe_rtt(&self) -> bool {
        self.state == BbrState::ProbeRtt
    }

    /// `bbr_init_pacing_rate_from_rtt`: before a bandwidth sample, pace
    /// the initial window over the smoothed RTT (1 ms without one) at the
    /// high gain.
    fn init_pacing_rate(&mut self, srtt: Option<Duration>) {
        let rtt_s = match srtt {
            Some(srtt) => {
                self.has_seen_rtt = true;
                (srtt.as_nanos().max(1_000) as f64) / 1e9
            }
            None => 1e-3,
        };
        let bw = self.window.cwnd_segments * self.mss_bytes as f64 / rtt_s;
        self.pacing_rate_bytes_per_s = bw * HIGH_GAIN * (1.0 - PACING_MARGIN);
    }

    /// `bbr_bdp`: the window `gain · BtlBw · RTprop` asks for, rounded up
    /// to whole segments; [`TCP_INIT_CWND_SEGMENTS`] before any RTT.
    fn bdp_segments(&self, bw_bytes_per_s: f64, gain: f64) -> u64 {
        let Some(rt_prop) = self.rt_prop else { return TCP_INIT_CWND_SEGMENTS };
        let bytes = bw_bytes_per_s * rt_prop.as_nanos() as f64 / 1e9 * gain;
        (bytes / self.mss_bytes as f64).ceil() as u64
    }

    /// The first smoothed RTT (the handshake's, when Linux initialises BBR
    /// at the connection's establishment) replaces the 1 ms the initial
    /// pacing rate assumed.
    pub fn on_rtt_known(&mut self, srtt: Option<Duration>) {
        if !self.has_seen_rtt && srtt.is_some() {
            self.init_pacing_rate(srtt);
        }
    }

    /// `bbr_tso_segs_goal`: about a millisecond of data at the pacing
    /// rate, at least one segment below 1.2 Mbit/s and two above.
    fn send_quantum_segments(&self) -> u64 {
        let min = if self.pacing_rate_bytes_per_s < MIN_TSO_RATE_BYTES_PER_S { 1 } else { 2 };
        // sk_pacing_shift = 10: rate >> 10 bytes, about 1 ms.
        let bytes = (self.pacing_rate_bytes_per_s / 1024.0) as u64;
        (bytes / self.mss_bytes).max(min).min(0x7f)
    }

    /// `bbr_quantization_budget`: room for three send quanta, rounded up
    /// to an even number of segments, and two more in the 5/4 phase.
    fn quantization_budget(&self, cwnd: u64) -> u64 {
        let mut cwnd = cwnd + 3 * self.send_quantum_segments();
        cwnd = (cwnd + 1) & !1;
        if self.state == BbrState::ProbeBw && self.cycle_index == 0 {
            cwnd += 2;
        }
        cwnd
    }

    /// `bbr_inflight`: the data in flight `gain` asks for.
    fn inflight_segments(&self, bw: f64, gain: f64) -> u64 {
        self.quantization_budget(self.bdp_segments(bw, gain))
    }

    fn save_cwnd(&mut self) {
        if self.prev_ca_state < CaState::Recovery && self.state != BbrState::ProbeRtt {
            self.prior_cwnd_segments = self.cwnd();
        } else {
            self.prior_cwnd_segments = self.prior_cwnd_segments.max(self.cwnd());
        }
    }

    /// The sender starts sending again after an idle, application-limited
    /// period (`CA_EVENT_TX_START`): pace at BtlBw, not above it.
    pub fn on_restart_from_idle(&mut self, now: Instant) {
        self.idle_restart = true;
        self.ack_epoch_stamp = now;
        self.ack_epoch_acked_bytes = 0;
        match self.state {
            BbrState::ProbeBw => self.set_pacing_rate(self.btl_bw.get(), 1.0),
            BbrState::ProbeRtt => self.check_probe_rtt_done(now),
            _ => {}
        }
    }

    /// RACK marked a loss outside recovery: fast recovery begins
    /// (`tcp_enter_recovery`, whose `ssthresh` hook saves cwnd). The
    /// window itself is set at the ACK's [`Bbr::on_bbr_ack`].
    pub fn on_loss_detected(&mut self, _now: Instant, ack: &AckSample) -> Response {
        if self.in_loss_recovery() {
            return Response::NOTHING;
        }
        self.save_cwnd();
        self.recovery_point = ack.snd_max;
        self.ca_state = CaState::Recovery;
        Response { retransmit: Retransmit::Head, restart_timer: true }
    }

    /// `bbr_main`: update the model from one ACK, then the pacing rate
    /// and cwnd.
    pub fn on_bbr_ack(&mut self, now: Instant, ack: &BbrAck) {
        self.update_model(now, ack);
        self.on_rtt_known(ack.srtt);
        let bw = self.btl_bw.get();
        self.set_pacing_rate(bw, self.pacing_gain);
        self.update_cwnd(ack, bw);
    }

    fn update_model(&mut self, now: Instant, ack: &BbrAck) {
        self.update_bw(ack);
        self.update_ack_aggregation(ack);
        if self.state == BbrState::ProbeBw && self.is_next_cycle_phase(ack) {
            self.advance_cycle_phase(ack.delivered_time);
        }
        self.check_full_bw_reached(now, &ack.rate);
        self.check_drain(ack);
        self.update_rt_prop(now, ack);
        self.update_gains();
    }

    /// `bbr_update_bw`: count round trips, and feed BtlBw's filter with
    /// samples that are not application-limited (or beat it anyway).
    fn update_bw(&mut self, ack: &BbrAck) {
        self.round_start = false;
        let Some(bw) = ack.rate.rate_bytes_per_s() else { return };
        if ack.rate.prior_delivered_bytes >= self.next_round_delivered {
            self.next_round_delivered = ack.delivered_bytes;
            self.round_count += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        if !ack.rate.is_app_limited || bw >= self.btl_bw.get() {
            self.btl_bw.update(self.round_count, bw, BTL_BW_FILTER_ROUNDS);
        }
    }

    /// `bbr_update_ack_aggregation`: how far deliveries ran ahead of
    /// BtlBw since the current ACK epoch began (an 802.11 link that holds
    /// ACKs during contention and releases them together, or a receiver
    /// that delays them); cwnd gets that much extra so that the sender is
    /// not starved while the ACKs are held.
    fn update_ack_aggregation(&mut self, ack: &BbrAck) {
        let rs = &ack.rate;
        if rs.acked_sacked_bytes == 0 || rs.interval.is_none() {
            return;
        }
        if self.round_start {
            self.extra_acked_window_rounds = (self.extra_acked_window_rounds + 1).min(0x1f);
            if self.extra_acked_window_rounds >= EXTRA_ACKED_WINDOW_ROUNDS {
                self.extra_acked_window_rounds = 0;
                self.extra_acked_index ^= 1;
                self.extra_acked_bytes[self.extra_acked_index] = 0;
            }
        }
        let epoch = ack.delivered_time.saturating_since(self.ack_epoch_stamp);
        let mut expected = (self.btl_bw.get() * epoch.as_nanos() as f64 / 1e9) as u64;
        // Linux: `bbr_ack_epoch_acked_reset_thresh`, 2^20 segments.
        let reset_threshold = (1u64 << 20) * self.mss_bytes;
        if self.ack_epoch_acked_bytes <= expected
            || self.ack_epoch_acked_bytes + rs.acked_sacked_bytes >= reset_threshold
        {
            self.ack_epoch_acked_bytes = 0;
            self.ack_epoch_stamp = ack.delivered_time;
            expected = 0;
        }
        self.ack_epoch_acked_bytes += rs.acked_sacked_bytes;
        let extra = (self.ack_epoch_acked_bytes - expected).min(self.cwnd() * self.mss_bytes);
        let slot = &mut self.extra_acked_bytes[self.extra_acked_index];
        *slot = (*slot).max(extra);
    }

    /// `bbr_ack_aggregation_cwnd`, in segments (only once the pipe was
    /// found full).
    fn ack_aggregation_segments(&self) -> u64 {
        if !self.full_bw_reached {
            return 0;
        }
        let max_bytes = self.btl_bw.get() * EXTRA_ACKED_MAX.as_nanos() as f64 / 1e9;
        let extra = self.extra_acked_bytes[0].max(self.extra_acked_bytes[1]) as f64;
        (extra.min(max_bytes) / self.mss_bytes as f64) as u64
    }

    /// `bbr_is_next_cycle_phase`: a phase lasts at least RTprop; the 5/4
    /// phase until it lost something or filled 5/4 of the BDP, the 3/4
    /// phase until the flight fell to one BDP.
    fn is_next_cycle_phase(&self, ack: &BbrAck) -> bool {
        let full_length =
            self.rt_prop.is_some_and(|rt_prop| ack.delivered_time.saturating_since(self.cycle_stamp) > rt_prop);
        let bw = self.btl_bw.get();
        let inflight = ack.rate.prior_in_flight_bytes.div_ceil(self.mss_bytes);
        if self.pacing_gain == 1.0 {
            full_length
        } else if self.pacing_gain > 1.0 {
            full_length && (ack.lost_segments > 0 || inflight >= self.inflight_segments(bw, self.pacing_gain))
        } else {
            full_length || inflight <= self.inflight_segments(bw, 1.0)
        }
    }

    fn advance_cycle_phase(&mut self, delivered_time: Instant) {
        self.cycle_index = (self.cycle_index + 1) % PACING_GAIN_CYCLE.len();
        self.cycle_stamp = delivered_time;
    }

    /// `bbr_reset_probe_bw_mode`: ProbeBW from a random phase other than
    /// 3/4 (the phase before the drawn one is 1..=7, so the first phase is
    /// one of 2..=7 or 0).
    fn enter_probe_bw(&mut self, delivered_time: Instant) {
        self.state = BbrState::ProbeBw;
        self.cycle_index = PACING_GAIN_CYCLE.len() - 1 - self.rng.gen_range(0..7usize);
        self.advance_cycle_phase(delivered_time);
    }

    /// `bbr_check_full_bw_reached`: Startup's exit test, once per round.
    fn check_full_bw_reached(&mut self, now: Instant, rs: &RateSample) {
        if self.full_bw_reached || !self.round_start || rs.is_app_limited {
            return;
        }
        let bw = self.btl_bw.get();
        if bw >= self.full_bw_bytes_per_s * FULL_BW_THRESHOLD {
            self.full_bw_bytes_per_s = bw;
            self.full_bw_count = 0;
            return;
        }
        self.full_bw_count += 1;
        self.full_bw_reached = self.full_bw_count >= FULL_BW_ROUNDS;
        if self.full_bw_reached && self.stats.startup_ended_at.is_none() {
            self.stats.startup_ended_at = Some(now);
        }
    }

    /// `bbr_check_drain`: Startup → Drain once the pipe is full; Drain →
    /// ProbeBW once the flight is down to one BDP.
    fn check_drain(&mut self, ack: &BbrAck) {
        let bw = self.btl_bw.get();
        if self.state == BbrState::Startup && self.full_bw_reached {
            self.state = BbrState::Drain;
            self.window.ssthresh_segments = self.inflight_segments(bw, 1.0) as f64;
        }
        if self.state == BbrState::Drain && ack.pipe_bytes.div_ceil(self.mss_bytes) <= self.inflight_segments(bw, 1.0) {
            self.enter_probe_bw(ack.delivered_time);
        }
    }

    /// `bbr_update_min_rtt`: RTprop's filter, ProbeRTT's entry and exit.
    fn update_rt_prop(&mut self, now: Instant, ack: &BbrAck) {
        let expired = now > self.rt_prop_stamp + RTPROP_FILTER;
        if let Some(rtt) = ack.rate.rtt {
            if self.rt_prop.is_none_or(|m| rtt < m) || expired {
                self.rt_prop = Some(rtt);
                self.rt_prop_stamp = now;
            }
        }
        if expired && !self.idle_restart && self.state != BbrState::ProbeRtt {
            self.state = BbrState::ProbeRtt;
            self.stats.probe_rtt_entries += 1;
            self.save_cwnd();
            self.probe_rtt_done_stamp = None;
        }
        if self.state == BbrState::ProbeRtt {
            if self.probe_rtt_done_stamp.is_none() && ack.pipe_bytes <= MIN_PIPE_CWND_SEGMENTS * self.mss_bytes {
                self.probe_rtt_done_stamp = Some(now + PROBE_RTT_DURATION);
                self.probe_rtt_round_done = false;
                self.next_round_delivered = ack.delivered_bytes;
            } else if self.probe_rtt_done_stamp.is_some() {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(now);
                }
            }
        }
        if ack.rate.delivered_bytes > 0 {
            self.idle_restart = false;
        }
    }

    /// `bbr_check_probe_rtt_done`: after 200 ms and a round trip at the
    /// small window, RTprop counts as fresh and the window comes back.
    fn check_probe_rtt_done(&mut self, now: Instant) {
        if self.probe_rtt_done_stamp.is_none_or(|done| now <= done) {
            return;
        }
        self.rt_prop_stamp = now;
        let restored = self.cwnd().max(self.prior_cwnd_segments);
        self.set_cwnd(restored);
        if self.full_bw_reached {
            self.enter_probe_bw(now);
        } else {
            self.state = BbrState::Startup;
        }
    }

    /// `bbr_update_gains`.
    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.state {
            BbrState::Startup => (HIGH_GAIN, HIGH_GAIN),
            BbrState::Drain => (DRAIN_GAIN, HIGH_GAIN),
            BbrState::ProbeBw => (PACING_GAIN_CYCLE[self.cycle_index], CWND_GAIN),
            BbrState::ProbeRtt => (1.0, 1.0),
        };
    }

    /// `bbr_set_pacing_rate`: gain · BtlBw less the margin; in Startup
    /// the rate only rises (a low early sample must not slow the start).
    fn set_pacing_rate(&mut self, bw: f64, gain: f64) {
        let rate = bw * gain * (1.0 - PACING_MARGIN);
        if self.full_bw_reached || rate > self.pacing_rate_bytes_per_s {
            self.pacing_rate_bytes_per_s = rate;
        }
    }

    /// `bbr_set_cwnd` with `bbr_set_cwnd_to_recover_or_restore`.
    fn update_cwnd(&mut self, ack: &BbrAck, bw: f64) {
        let acked = ack.rate.acked_sacked_bytes.div_ceil(self.mss_bytes);
        let in_flight = ack.pipe_bytes.div_ceil(self.mss_bytes);
        let mut cwnd = self.cwnd();
        if acked > 0 {
            // Losses come off the window, whatever the state.
            if ack.lost_segments > 0 {
                cwnd = cwnd.saturating_sub(ack.lost_segments).max(1);
            }
            let conserving = if self.ca_state == CaState::Recovery && self.prev_ca_state != CaState::Recovery {
                // Recovery begins: one round trip of packet conservation.
                self.packet_conservation = true;
                self.next_round_delivered = ack.delivered_bytes;
                cwnd = in_flight + acked;
                true
            } else {
                if self.prev_ca_state >= CaState::Recovery && self.ca_state < CaState::Recovery {
                    // Recovery (or the timeout's loss state) is over.
                    cwnd = cwnd.max(self.prior_cwnd_segments);
                    self.packet_conservation = false;
                }
                self.packet_conservation
            };
            self.prev_ca_state = self.ca_state;
            if conserving {
                cwnd = cwnd.max(in_flight + acked);
            } else {
                let target =
                    self.quantization_budget(self.bdp_segments(bw, self.cwnd_gain) + self.ack_aggregation_segments());
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || ack.delivered_bytes < TCP_INIT_CWND_SEGMENTS * self.mss_bytes {
                    cwnd += acked;
                }
                cwnd = cwnd.max(MIN_PIPE_CWND_SEGMENTS);
            }
        }
        if self.state == BbrState::ProbeRtt {
            cwnd = cwnd.min(MIN_PIPE_CWND_SEGMENTS);
        }
        self.set_cwnd(cwnd);
    }
}

impl CongestionControl for Bbr {
    /// New data acknowledged: recovery or the timeout's loss state ends
    /// once the cumulative ACK covers the recovery point. The window is
    /// set afterwards, from the rate sample ([`Bbr::on_bbr_ack`]).
    fn on_ack(&mut self, _now: Instant, ack: &AckSample) -> Response {
        if self.ca_state != CaState::Open && ack.ack >= self.recovery_point {
            self.ca_state = CaState::Open;
        }
        Response::NEW_ACK
    }

    /// `tcp_enter_loss` with BBR: cwnd saved and set to one segment (what
    /// is in flight, all of it now lost, plus one); the bandwidth probe of
    /// Startup starts over (`full_bw` forgotten).
    fn on_retransmission_timeout(&mut self, _now: Instant, _flight_bytes: u64, snd_max: u64, _first: bool) {
        self.save_cwnd();
        self.prev_ca_state = CaState::Loss;
        self.ca_state = CaState::Loss;
        self.full_bw_bytes_per_s = 0.0;
        self.round_start = true;
        self.recovery_point = snd_max;
        self.set_cwnd(1);
    }

    fn window(&self) -> &Window {
        &self.window
    }
    fn window_mut(&mut self) -> &mut Window {
        &mut self.window
    }
    fn in_recovery(&self) -> bool {
        self.ca_state == CaState::Recovery
    }
    /// Slow start is Startup (BBR has no ssthresh to compare with).
    fn in_slow_start(&self) -> bool {
        self.state == BbrState::Startup
    }
}

#[cfg(test)]
#[path = "bbr_tests.rs"]
mod tests;
