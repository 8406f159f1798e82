//! Congestion control for the TCP sender: Tahoe, Reno and NewReno behind one
//! trait (quinn-proto `congestion.rs`, smoltcp `socket/tcp/congestion.rs`).
//! NewReno's loss recovery is generic over [`WindowGrowth`], the rule that
//! grows the window and says how far a loss cuts it (Linux's split between
//! `tcp_congestion_ops` and the recovery in `tcp_input.c`): [`Aimd`] gives
//! RFC 5681's NewReno, [`super::cubic::Cubic`] gives CUBIC (RFC 9438).
//!
//! The sender does loss *detection* (counting duplicate ACKs, running the
//! retransmission timer, RFC 5681 §3.2 and RFC 6298) and tells the controller
//! what happened; the controller owns `cwnd`, `ssthresh` and its recovery
//! state and answers with what to retransmit. The window is kept in segments
//! as `f64` (RFC 5681's byte arithmetic divided by SMSS), which is what the
//! traces report.

use super::bbr::Bbr;
use super::sack::SackRecovery;
use meshbed_core::{Duration, Instant};

/// What the sender knows about an arriving acknowledgement.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct AckSample {
    /// The cumulative acknowledgement number it carries.
    pub ack: u64,
    /// Bytes of sequence space it newly acknowledged (0 for a duplicate).
    pub acked_bytes: u64,
    /// Sequence space sent and not yet acknowledged, after this ACK
    /// (RFC 5681's FlightSize: `snd_max - snd_una`).
    pub flight_bytes: u64,
    /// One past the highest sequence number sent so far.
    pub snd_max: u64,
    /// Consecutive duplicate ACKs including this one (0 for a new ACK).
    pub dupacks: u32,
    /// The sender's smoothed RTT (RFC 6298), `None` before the first
    /// sample: CUBIC aims its window one RTT ahead (RFC 9438 §4.2).
    pub srtt: Option<Duration>,
    /// With SACK, whether the scoreboard counts the first unacknowledged
    /// byte as lost (RFC 6675 `IsLost(HighACK + 1)`, a reason to enter
    /// recovery before the third duplicate ACK); always false without.
    pub head_lost: bool,
    /// The RTT sample this ACK gave, if it gave one (HyStart++'s
    /// `currentRTT`, RFC 9406 §4.2).
    pub rtt_sample: Option<Duration>,
}

/// What the controller asks the sender to retransmit.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Retransmit {
    /// Nothing beyond what the window allows anyway.
    #[default]
    None,
    /// Send the segment at `snd_una` once, regardless of the window, and then
    /// carry on from `snd_nxt` (fast retransmit, NewReno's partial ACK).
    Head,
    /// Go back: resend everything from `snd_una` as the window allows (an RTO,
    /// and Tahoe's fast retransmit).
    GoBackN,
}

/// The controller's answer to an ACK.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Response {
    pub retransmit: Retransmit,
    /// Whether to restart the retransmission timer with the current RTO.
    /// For a new ACK the sender restarts it anyway unless this is `false`
    /// (RFC 6298 §5.3; NewReno's "Impatient" variant keeps it running).
    pub restart_timer: bool,
}

impl Response {
    /// A new ACK with nothing special: restart the timer (RFC 6298 §5.3).
    pub const NEW_ACK: Response = Response { retransmit: Retransmit::None, restart_timer: true };
    /// A duplicate ACK that changes nothing about timing.
    pub const NOTHING: Response = Response { retransmit: Retransmit::None, restart_timer: false };
}

/// A snapshot for traces and tests.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct CcMetrics {
    /// The congestion window in segments, including fast-recovery inflation.
    pub cwnd_segments: f64,
    pub ssthresh_segments: f64,
    /// In fast recovery (Reno, NewReno) or, for Tahoe, inside the window that
    /// was outstanding at the last loss (where further dupacks are ignored).
    pub in_recovery: bool,
}

/// The hooks a congestion controller implements. Hooks with a default do
/// nothing, so a new controller overrides only what it reacts to.
pub trait CongestionControl {
    /// An ACK acknowledged new data.
    fn on_ack(&mut self, now: Instant, ack: &AckSample) -> Response;

    /// A duplicate ACK arrived (RFC 5681 §2's definition, checked by the sender).
    fn on_duplicate_ack(&mut self, _now: Instant, _ack: &AckSample) -> Response {
        Response::NOTHING
    }

    /// The retransmission timer expired with data outstanding. `first` is
    /// false when the segment at `snd_una` had already been resent by the
    /// timer: RFC 5681 §3.1 then keeps ssthresh as it is.
    fn on_retransmission_timeout(&mut self, now: Instant, flight_bytes: u64, snd_max: u64, first: bool);

    /// The SYN had to be retransmitted (RFC 5681 §3.1: the window after the
    /// handshake is then one segment).
    fn on_syn_retransmitted(&mut self) {
        self.window_mut().cwnd_segments = 1.0;
    }

    /// cwnd and ssthresh.
    fn window(&self) -> &Window;
    fn window_mut(&mut self) -> &mut Window;

    /// In fast recovery (see [`CcMetrics::in_recovery`]).
    fn in_recovery(&self) -> bool;

    /// In slow start (RFC 5681 §3.1: cwnd < ssthresh), fast recovery
    /// excepted even when partial ACKs deflate cwnd below ssthresh.
    fn in_slow_start(&self) -> bool {
        let window = self.window();
        window.cwnd_segments < window.ssthresh_segments && !self.in_recovery()
    }

    /// The congestion window in segments, as the sender uses it.
    fn window_segments(&self) -> f64 {
        self.window().cwnd_segments
    }

    fn metrics(&self) -> CcMetrics {
        self.window().metrics(self.in_recovery())
    }
}

/// The [`CongestionControl`] accessors of a controller whose fields are
/// `window` and `in_recovery`.
macro_rules! window_state {
    () => {
        fn window(&self) -> &Window {
            &self.window
        }
        fn window_mut(&mut self) -> &mut Window {
            &mut self.window
        }
        fn in_recovery(&self) -> bool {
            self.in_recovery
        }
    };
}
pub(crate) use window_state;

/// cwnd and ssthresh, and the slow start / congestion avoidance rules every
/// variant shares (RFC 5681 §3.1).
#[derive(Clone, Debug)]
pub struct Window {
    pub cwnd_segments: f64,
    pub ssthresh_segments: f64,
    max_cwnd_segments: f64,
    mss_bytes: f64,
}

impl Window {
    pub fn new(
        initial_cwnd_segments: f64,
        initial_ssthresh_segments: f64,
        max_cwnd_segments: f64,
        mss_bytes: u64,
    ) -> Self {
        Window {
            cwnd_segments: initial_cwnd_segments,
            ssthresh_segments: initial_ssthresh_segments,
            max_cwnd_segments,
            mss_bytes: mss_bytes.max(1) as f64,
        }
    }

    /// Opens the window for an ACK of `acked_bytes` new bytes. Slow start
    /// while cwnd < ssthresh: + min(N, SMSS) per ACK, i.e. one segment per
    /// ACK of a full segment, which doubles cwnd every RTT (RFC 5681 (2)).
    /// Otherwise congestion avoidance: + SMSS*SMSS/cwnd per ACK, i.e. 1/cwnd
    /// segments (RFC 5681 (3)), about one segment per RTT. Growth stops at
    /// the maximum window, which stands in for the receiver's window.
    pub fn open(&mut self, acked_bytes: u64) {
        if self.cwnd_segments < self.ssthresh_segments {
            self.cwnd_segments += (acked_bytes as f64).min(self.mss_bytes) / self.mss_bytes;
        } else {
            self.cwnd_segments += 1.0 / self.cwnd_segments;
        }
        self.cwnd_segments = self.cwnd_segments.min(self.max_cwnd_segments);
    }

    /// RFC 5681 (4): ssthresh = max(FlightSize / 2, 2*SMSS).
    pub fn halve_ssthresh(&mut self, flight_bytes: u64) {
        self.ssthresh_segments = (self.segments(flight_bytes) / 2.0).max(2.0);
    }

    /// RFC 5681 §3.1 after a retransmission timeout: ssthresh from
    /// FlightSize (only on the `first` timeout), cwnd to the loss window of
    /// one segment.
    pub fn on_timeout(&mut self, flight_bytes: u64, first: bool) {
        if first {
            self.halve_ssthresh(flight_bytes);
        }
        self.cwnd_segments = 1.0;
    }

    /// RFC 5681 §3.2 steps 2 and 3: halve ssthresh and inflate cwnd by the
    /// `dupacks` segments that have left the network.
    pub fn enter_fast_recovery(&mut self, flight_bytes: u64, dupacks: u32) {
        self.halve_ssthresh(flight_bytes);
        self.cwnd_segments = self.ssthresh_segments + dupacks as f64;
    }

    /// Sets cwnd, capped at the largest window as growth always is.
    pub fn set_cwnd_segments(&mut self, cwnd_segments: f64) {
        self.cwnd_segments = cwnd_segments.min(self.max_cwnd_segments);
    }

    pub fn segments(&self, bytes: u64) -> f64 {
        bytes as f64 / self.mss_bytes
    }

    pub fn metrics(&self, in_recovery: bool) -> CcMetrics {
        CcMetrics { cwnd_segments: self.cwnd_segments, ssthresh_segments: self.ssthresh_segments, in_recovery }
    }
}

/// TCP Tahoe (Jacobson 1988; RFC 5681 without fast recovery): on the third
/// duplicate ACK retransmit, set cwnd to one segment and slow-start again from
/// `snd_una`, as on a timeout. Going back N rather than resending only the
/// one segment is how 4.3BSD-Tahoe behaves as described by Fall & Floyd
/// (1996) and modelled by ns-2; the receiver's buffered data makes the
/// cumulative ACK skip whatever already arrived.
#[derive(Clone, Debug)]
pub struct Tahoe {
    pub window: Window,
    dupack_threshold: u32,
    /// One past the highest sequence number sent when loss was last detected.
    /// Duplicate ACKs below it come from segments of the same lossy window
    /// that were already in flight, so they must not trigger another fast
    /// retransmit (the "recover" guard of RFC 6582 §3.2 step 1, which ns-2's
    /// Tahoe also applies).
    recover: u64,
    last_ack: u64,
}

impl Tahoe {
    pub fn new(window: Window, dupack_threshold: u32) -> Self {
        Tahoe { window, dupack_threshold, recover: 0, last_ack: 0 }
    }
}

impl CongestionControl for Tahoe {
    fn on_ack(&mut self, _now: Instant, ack: &AckSample) -> Response {
        self.last_ack = ack.ack;
        self.window.open(ack.acked_bytes);
        Response::NEW_ACK
    }

    fn on_duplicate_ack(&mut self, _now: Instant, ack: &AckSample) -> Response {
        self.last_ack = ack.ack;
        if ack.dupacks != self.dupack_threshold || ack.ack < self.recover {
            return Response::NOTHING;
        }
        self.window.halve_ssthresh(ack.flight_bytes);
        self.window.cwnd_segments = 1.0;
        self.recover = ack.snd_max;
        Response { retransmit: Retransmit::GoBackN, restart_timer: true }
    }

    fn on_retransmission_timeout(&mut self, _now: Instant, flight_bytes: u64, snd_max: u64, first: bool) {
        self.window.on_timeout(flight_bytes, first);
        self.recover = snd_max;
    }

    fn window(&self) -> &Window {
        &self.window
    }

    fn window_mut(&mut self) -> &mut Window {
        &mut self.window
    }

    fn in_recovery(&self) -> bool {
        self.last_ack < self.recover
    }

    /// Tahoe has no fast recovery: its `in_recovery` only marks the window
    /// outstanding at the loss, which slow-starts from one segment.
    fn in_slow_start(&self) -> bool {
        self.window.cwnd_segments < self.window.ssthresh_segments
    }
}

/// TCP Reno: fast retransmit and fast recovery as in RFC 5681 §3.2. Recovery
/// ends with the first ACK of new data, even a partial one; a second loss in
/// the same window then needs three more dupacks (and halves cwnd again) or a
/// timeout, which is the behaviour NewReno was designed to fix.
#[derive(Clone, Debug)]
pub struct Reno {
    pub window: Window,
    dupack_threshold: u32,
    in_recovery: bool,
}

impl Reno {
    pub fn new(window: Window, dupack_threshold: u32) -> Self {
        Reno { window, dupack_threshold, in_recovery: false }
    }
}

impl CongestionControl for Reno {
    fn on_ack(&mut self, _now: Instant, ack: &AckSample) -> Response {
        if self.in_recovery {
            // RFC 5681 §3.2 step 6: deflate the window to ssthresh.
            self.window.cwnd_segments = self.window.ssthresh_segments;
            self.in_recovery = false;
        } else {
            self.window.open(ack.acked_bytes);
        }
        Response::NEW_ACK
    }

    fn on_duplicate_ack(&mut self, _now: Instant, ack: &AckSample) -> Response {
        if self.in_recovery {
            // Step 4: each further dupack means a segment left the network.
            self.window.cwnd_segments += 1.0;
            return Response::NOTHING;
        }
        if ack.dupacks != self.dupack_threshold {
            return Response::NOTHING;
        }
        // Steps 2 and 3: halve, retransmit, inflate by the three segments
        // the dupacks say have left the network.
        self.window.enter_fast_recovery(ack.flight_bytes, self.dupack_threshold);
        self.in_recovery = true;
        Response { retransmit: Retransmit::Head, restart_timer: true }
    }

    fn on_retransmission_timeout(&mut self, _now: Instant, flight_bytes: u64, _snd_max: u64, first: bool) {
        self.window.on_timeout(flight_bytes, first);
        self.in_recovery = false;
    }

    window_state!();
}

/// How the window grows outside loss recovery and how far a loss cuts it:
/// the part of a congestion controller that NewReno's recovery
/// ([`NewReno`]) leaves open. Slow start is in here too, since CUBIC's
/// HyStart++ changes it.
pub trait WindowGrowth: Clone + std::fmt::Debug {
    /// An ACK of `ack.acked_bytes` new bytes outside recovery.
    fn on_ack(&mut self, now: Instant, window: &mut Window, ack: &AckSample);
    /// A loss detected by duplicate ACKs: set ssthresh (the recovery then
    /// sets cwnd from it). `window.cwnd_segments` is still the window before
    /// the loss.
    fn on_congestion(&mut self, now: Instant, window: &mut Window, flight_bytes: u64);
    /// A retransmission timeout with data outstanding (see
    /// [`CongestionControl::on_retransmission_timeout`] for `first`).
    fn on_timeout(&mut self, now: Instant, window: &mut Window, flight_bytes: u64, first: bool);
    /// Fast recovery ended: the next ACKs are congestion avoidance again.
    fn on_recovery_end(&mut self, _now: Instant) {}
}

/// RFC 5681's additive increase, multiplicative decrease: slow start,
/// one segment per RTT in congestion avoidance, ssthresh to half the
/// flight on a loss.
#[derive(Clone, Debug, Default)]
pub struct Aimd;

impl WindowGrowth for Aimd {
    fn on_ack(&mut self, _now: Instant, window: &mut Window, ack: &AckSample) {
        window.open(ack.acked_bytes);
    }
    fn on_congestion(&mut self, _now: Instant, window: &mut Window, flight_bytes: u64) {
        window.halve_ssthresh(flight_bytes);
    }
    fn on_timeout(&mut self, _now: Instant, window: &mut Window, flight_bytes: u64, first: bool) {
        window.on_timeout(flight_bytes, first);
    }
}

/// TCP NewReno (RFC 6582): fast recovery lasts until everything outstanding at
/// the time of the loss (`recover`) is acknowledged; each partial ACK in
/// between retransmits the next hole at once. `G` grows the window and
/// sets ssthresh at a loss: [`Aimd`] is RFC 6582's NewReno; with
/// [`super::cubic::Cubic`] it is CUBIC over NewReno recovery, which is what
/// RFC 9438 §4.6 asks of a sender without SACK.
#[derive(Clone, Debug)]
pub struct NewReno<G = Aimd> {
    pub window: Window,
    pub growth: G,
    dupack_threshold: u32,
    in_recovery: bool,
    /// RFC 6582's `recover`, stored as one past the highest sequence number
    /// sent (so "covers more than recover" reads `ack >= recover`).
    recover: u64,
    /// Whether a partial ACK was already seen in this recovery episode.
    seen_partial_ack: bool,
}

impl NewReno {
    pub fn new(window: Window, dupack_threshold: u32) -> Self {
        NewReno::with_growth(window, dupack_threshold, Aimd)
    }
}

impl<G: WindowGrowth> NewReno<G> {
    pub fn with_growth(window: Window, dupack_threshold: u32, growth: G) -> Self {
        NewReno { window, growth, dupack_threshold, in_recovery: false, recover: 0, seen_partial_ack: false }
    }
}

impl<G: WindowGrowth> CongestionControl for NewReno<G> {
    fn on_ack(&mut self, now: Instant, ack: &AckSample) -> Response {
        if !self.in_recovery {
            self.growth.on_ack(now, &mut self.window, ack);
            return Response::NEW_ACK;
        }
        if ack.ack >= self.recover {
            // RFC 6582 §3.2 step 3, full ACK, option (1): cwnd =
            // min(ssthresh, max(FlightSize, SMSS) + SMSS), which avoids the
            // burst option (2) can cause when little is left in flight.
            let flight = self.window.segments(ack.flight_bytes).max(1.0);
            self.window.cwnd_segments = self.window.ssthresh_segments.min(flight + 1.0);
            self.in_recovery = false;
            self.growth.on_recovery_end(now);
            return Response::NEW_ACK;
        }
        // Step 3, partial ACK: retransmit the first unacknowledged segment,
        // deflate by the amount acknowledged, add one SMSS back if at least
        // one SMSS was acknowledged, and stay in recovery.
        let acked = self.window.segments(ack.acked_bytes);
        self.window.cwnd_segments -= acked;
        if acked >= 1.0 {
            self.window.cwnd_segments += 1.0;
        }
        self.window.cwnd_segments = self.window.cwnd_segments.max(1.0);
        // "For the first partial ACK that arrives during fast recovery, also
        // reset the retransmit timer" (the Impatient variant, RFC 6582 §4):
        // with many holes a timeout then ends the slow one-hole-per-RTT repair.
        let restart_timer = !self.seen_partial_ack;
        self.seen_partial_ack = true;
        Response { retransmit: Retransmit::Head, restart_timer }
    }

    fn on_duplicate_ack(&mut self, now: Instant, ack: &AckSample) -> Response {
        if self.in_recovery {
            self.window.cwnd_segments += 1.0;
            return Response::NOTHING;
        }
        // Step 1: only when the ACK covers everything outstanding at the last
        // loss, so dupacks from the tail of a repaired window do not start a
        // second recovery.
        if ack.dupacks != self.dupack_threshold || ack.ack < self.recover {
            return Response::NOTHING;
        }
        self.recover = ack.snd_max;
        // RFC 5681 §3.2 steps 2 and 3 with the growth rule's ssthresh:
        // inflate by the dupacks' segments that have left the network.
        self.growth.on_congestion(now, &mut self.window, ack.flight_bytes);
        self.window.cwnd_segments = self.window.ssthresh_segments + self.dupack_threshold as f64;
        self.in_recovery = true;
        self.seen_partial_ack = false;
        Response { retransmit: Retransmit::Head, restart_timer: true }
    }

    fn on_retransmission_timeout(&mut self, now: Instant, flight_bytes: u64, snd_max: u64, first: bool) {
        // RFC 6582 §3.2 step 4: record recover and leave fast recovery.
        self.growth.on_timeout(now, &mut self.window, flight_bytes, first);
        self.recover = snd_max;
        self.in_recovery = false;
    }

    window_state!();
}

/// Static dispatch over the variants.
#[derive(Clone, Debug)]
pub enum Controller {
    Tahoe(Tahoe),
    Reno(Reno),
    NewReno(NewReno),
    /// RFC 6675 recovery with RFC 5681's window: `tcp-sack`. Boxed, like
    /// CUBIC, so that the 2003 TCPs' senders stay as small as they were.
    Sack(Box<SackRecovery<Aimd>>),
    /// CUBIC over RFC 6675 recovery: `tcp-cubic`.
    Cubic(Box<SackRecovery<super::cubic::Cubic>>),
    /// BBR v1 with RACK-TLP's recovery: `tcp-bbr`.
    Bbr(Box<Bbr>),
}

macro_rules! dispatch {
    ($self:ident, $c:ident => $e:expr) => {
        match $self {
            Controller::Tahoe($c) => $e,
            Controller::Reno($c) => $e,
            Controller::NewReno($c) => $e,
            Controller::Sack($c) => $e,
            Controller::Cubic($c) => $e,
            Controller::Bbr($c) => $e,
        }
    };
}

/// RFC 6675 recovery's entry points beyond [`CongestionControl`], which
/// RACK-TLP ([`super::rack`]) drives; the 2003 TCPs have no SACK and so
/// never see them.
impl Controller {
    /// In fast recovery, or after a timeout until what was outstanding at
    /// it is acknowledged.
    pub fn in_loss_recovery(&self, snd_una: u64) -> bool {
        match self {
            Controller::Sack(c) => c.in_loss_recovery(snd_una),
            Controller::Cubic(c) => c.in_loss_recovery(snd_una),
            Controller::Bbr(c) => c.in_loss_recovery(),
            _ => self.in_recovery(),
        }
    }

    /// RACK marked a segment lost: recovery begins (unless under way).
    pub fn on_loss_detected(&mut self, now: Instant, ack: &AckSample) -> Response {
        match self {
            Controller::Sack(c) => c.on_loss_detected(now, ack),
            Controller::Cubic(c) => c.on_loss_detected(now, ack),
            Controller::Bbr(c) => c.on_loss_detected(now, ack),
            _ => Response::NOTHING,
        }
    }

    /// A tail loss probe repaired a loss: the window is cut (BBR does not
    /// read loss as congestion; Linux's CWR state leaves its window alone).
    pub fn on_probe_repaired_loss(&mut self, now: Instant, flight_bytes: u64) {
        match self {
            Controller::Sack(c) => c.on_probe_repaired_loss(now, flight_bytes),
            Controller::Cubic(c) => c.on_probe_repaired_loss(now, flight_bytes),
            _ => {}
        }
    }

    /// BBR's state, for a `tcp-bbr` sender.
    pub fn bbr(&self) -> Option<&Bbr> {
        match self {
            Controller::Bbr(c) => Some(c),
            _ => None,
        }
    }

    pub fn bbr_mut(&mut self) -> Option<&mut Bbr> {
        match self {
            Controller::Bbr(c) => Some(c),
            _ => None,
        }
    }
}

impl CongestionControl for Controller {
    fn on_ack(&mut self, now: Instant, ack: &AckSample) -> Response {
        dispatch!(self, c => c.on_ack(now, ack))
    }
    fn on_duplicate_ack(&mut self, now: Instant, ack: &AckSample) -> Response {
        dispatch!(self, c => c.on_duplicate_ack(now, ack))
    }
    fn on_retransmission_timeout(&mut self, now: Instant, flight_bytes: u64, snd_max: u64, first: bool) {
        dispatch!(self, c => c.on_retransmission_timeout(now, flight_bytes, snd_max, first))
    }
    fn window(&self) -> &Window {
        dispatch!(self, c => c.window())
    }
    fn window_mut(&mut self) -> &mut Window {
        dispatch!(self, c => c.window_mut())
    }
    fn in_recovery(&self) -> bool {
        dispatch!(self, c => c.in_recovery())
    }
    fn in_slow_start(&self) -> bool {
        dispatch!(self, c => c.in_slow_start())
    }
}
