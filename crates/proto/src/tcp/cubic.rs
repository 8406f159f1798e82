//! CUBIC's window growth (RFC 9438), the default congestion control of
//! Linux, Windows and macOS: after a loss the window follows
//! `W_cubic(t) = C·(t − K)³ + W_max` (§4.2), concave up to the window of the
//! last loss and convex beyond it, and never grows slower than Reno would
//! (the Reno-friendly region, §4.3). RFC 9438 §4.6 leaves loss recovery
//! to the sender: `tcp-cubic` recovers with SACK as RFC 6675 has it
//! ([`super::sack::SackRecovery`]), as Linux does; [`CubicNewReno`] is
//! CUBIC for a sender without SACK (RFC 6582's recovery).
//!
//! Choices RFC 9438 leaves open, each as Linux `tcp_cubic.c` makes it:
//! - `K` when the window at the start of congestion avoidance
//!   (`cwnd_epoch`) is already at or above `W_max` (slow start overshot it,
//!   or no loss happened yet): `K = 0` and `W_max = cwnd_epoch`, i.e. convex
//!   growth from where the window is (Linux's `bic_origin_point`); the
//!   formula would give a negative `K`. After a timeout §4.8 asks for the
//!   same, and a timeout forgets `W_max` (Linux's `bictcp_reset` on
//!   `TCP_CA_Loss`).
//! - The epoch starts with the first ACK in congestion avoidance: after
//!   slow start ends, or after fast recovery (and any slow start that
//!   follows it).
//! - "RTT" in `W_cubic(t + RTT)` is the smoothed RTT (§4.2 says so); before
//!   the first sample it is 0.
//!
//! - Slow start (§4.10): the initial one is HyStart++ (RFC 9406,
//!   [`super::hystart`]), as RFC 9438 §4.10 recommends and Windows runs it
//!   (Linux runs its older HyStart, delay and ACK-train based); later ones,
//!   after a loss set ssthresh, are RFC 5681's. `Cubic::hystart = false`
//!   gives RFC 5681's throughout.
//!
//! Not modelled: the application-limited epoch reset and spurious-loss undo
//! (§4.9).
//! Windows are in segments, as `f64`, like every controller here.

use super::cc::{AckSample, NewReno, Window, WindowGrowth};
use super::hystart::HyStartPlusPlus;
use meshbed_core::Instant;

/// `C`, the window's growth constant in segments per second³ (§5.1).
pub const C: f64 = 0.4;
/// `β_cubic`, the multiplicative decrease factor (§4.6).
pub const BETA_CUBIC: f64 = 0.7;
/// `α_cubic` of the Reno-friendly region, `3·(1 − β)/(1 + β)` (§4.3): the
/// additive increase that gives CUBIC Reno's average window.
pub const ALPHA_CUBIC: f64 = 3.0 * (1.0 - BETA_CUBIC) / (1.0 + BETA_CUBIC);

/// CUBIC with NewReno's loss recovery (no protocol name uses it; kept as
/// the growth rule's check against the recovery it was first built on).
pub type CubicNewReno = NewReno<Cubic>;

/// `K` (§4.2, Figure 2): the seconds `W_cubic` takes from `cwnd_epoch`
/// back to `w_max`.
pub fn k_seconds(w_max: f64, cwnd_epoch: f64) -> f64 {
    ((w_max - cwnd_epoch) / C).cbrt()
}

/// `W_cubic(t)` (§4.2, Figure 1) in segments, `t_s` seconds into the epoch.
pub fn w_cubic(t_s: f64, k_s: f64, w_max: f64) -> f64 {
    C * (t_s - k_s).powi(3) + w_max
}

/// One congestion-avoidance stage (§4.2): where `W_cubic` starts from and
/// the Reno-friendly estimate that runs beside it.
#[derive(Copy, Clone, Debug, PartialEq)]
struct Epoch {
    /// `t_epoch`.
    start: Instant,
    /// The plateau `W_cubic` heads for.
    w_max: f64,
    k_s: f64,
    /// `W_est` (§4.3), starting at `cwnd_epoch`.
    w_est: f64,
}

/// CUBIC's growth rule and state between losses (see the module).
#[derive(Clone, Debug)]
pub struct Cubic {
    /// Fast convergence (§4.7): a loss below the previous `W_max` lowers
    /// the new one further, releasing bandwidth to newer flows. On by
    /// default, as in Linux.
    pub fast_convergence: bool,
    /// `W_max` of the last loss; `None` before one and after a timeout.
    w_max: Option<f64>,
    /// `cwnd_prior`: the window when ssthresh was last set by a loss
    /// (§4.3: `α_cubic` becomes 1 once `W_est` reaches it).
    cwnd_prior: f64,
    epoch: Option<Epoch>,
    /// HyStart++ over the initial slow start (RFC 9406 §4.3); `None` once
    /// a loss or a timeout ended it, or when switched off.
    hystart: Option<HyStartPlusPlus>,
}

impl Default for Cubic {
    fn default() -> Self {
        Cubic::new(true)
    }
}

impl Cubic {
    /// CUBIC, with HyStart++ in its initial slow start or without.
    pub fn new(hystart: bool) -> Self {
        Cubic {
            fast_convergence: true,
            w_max: None,
            cwnd_prior: 0.0,
            epoch: None,
            hystart: hystart.then(HyStartPlusPlus::default),
        }
    }

    /// HyStart++'s state while the initial slow start lasts.
    pub fn hystart(&self) -> Option<&HyStartPlusPlus> {
        self.hystart.as_ref()
    }

    /// `W_max` of the last loss (`None` before one and after a timeout).
    pub fn w_max(&self) -> Option<f64> {
        self.w_max
    }

    /// `K` of the current congestion-avoidance epoch, `None` outside one.
    pub fn k_seconds(&self) -> Option<f64> {
        self.epoch.map(|e| e.k_s)
    }

    /// `W_est` of the current epoch (§4.3), `None` outside one.
    pub fn w_est(&self) -> Option<f64> {
        self.epoch.map(|e| e.w_est)
    }

    /// §4.6: ssthresh = FlightSize · β_cubic, at least two segments, and
    /// the window before the loss remembered as `cwnd_prior`.
    fn reduce_ssthresh(&mut self, window: &mut Window, flight_bytes: u64) {
        self.cwnd_prior = window.cwnd_segments;
        window.ssthresh_segments = (window.segments(flight_bytes) * BETA_CUBIC).max(2.0);
        self.epoch = None;
        // RFC 9406 §4.2: a loss in slow start or CSS ends them; later slow
        // starts stop at this ssthresh (§4.3).
        self.hystart = None;
    }
}

impl WindowGrowth for Cubic {
    fn on_ack(&mut self, now: Instant, window: &mut Window, ack: &AckSample) {
        if window.cwnd_segments < window.ssthresh_segments {
            match &mut self.hystart {
                Some(h) => h.on_ack(window, ack),
                // §4.10: slow start as RFC 5681 has it.
                None => window.open(ack.acked_bytes),
            }
            return;
        }
        let cwnd = window.cwnd_segments;
        let epoch = self.epoch.get_or_insert_with(|| {
            // §4.2; `K = 0` from where the window is when it is already
            // past the last loss's W_max (see the module).
            let w_max = self.w_max.filter(|&w| w > cwnd).unwrap_or(cwnd);
            Epoch { start: now, w_max, k_s: k_seconds(w_max, cwnd), w_est: cwnd }
        });
        // §4.3: W_est grows as Reno's window would, by α_cubic per window
        // of acknowledged segments, and by 1 once past cwnd_prior.
        let alpha = if epoch.w_est >= self.cwnd_prior { 1.0 } else { ALPHA_CUBIC };
        epoch.w_est += alpha * window.segments(ack.acked_bytes) / cwnd;
        let t_s = now.saturating_since(epoch.start).as_secs_f64();
        let next = if w_cubic(t_s, epoch.k_s, epoch.w_max) < epoch.w_est {
            // The Reno-friendly region: at least what Reno would have.
            epoch.w_est
        } else {
            // §4.4–4.5: aim at W_cubic one RTT ahead, no less than cwnd
            // and no more than 1.5·cwnd, and close 1/cwnd of the gap per ACK.
            let rtt_s = ack.srtt.map_or(0.0, |d| d.as_secs_f64());
            let target = w_cubic(t_s + rtt_s, epoch.k_s, epoch.w_max).clamp(cwnd, 1.5 * cwnd);
            cwnd + (target - cwnd) / cwnd
        };
        window.set_cwnd_segments(next);
    }

    fn on_congestion(&mut self, _now: Instant, window: &mut Window, flight_bytes: u64) {
        let cwnd = window.cwnd_segments;
        // §4.7: a loss before regaining the last W_max means a new flow
        // took bandwidth: plateau lower, halfway between the two.
        let w_max = match self.w_max {
            Some(last) if self.fast_convergence && cwnd < last => cwnd * (1.0 + BETA_CUBIC) / 2.0,
            _ => cwnd,
        };
        self.w_max = Some(w_max);
        self.reduce_ssthresh(window, flight_bytes);
    }

    fn on_timeout(&mut self, _now: Instant, window: &mut Window, flight_bytes: u64, first: bool) {
        // §4.8: ssthresh as for a loss (on the first timeout of a series,
        // RFC 5681 §3.1), cwnd to one segment, and the next epoch grows
        // from its own start (K = 0).
        if first {
            self.reduce_ssthresh(window, flight_bytes);
        }
        self.hystart = None;
        self.w_max = None;
        self.epoch = None;
        window.cwnd_segments = 1.0;
    }

    fn on_recovery_end(&mut self, _now: Instant) {
        self.epoch = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::cc::{CongestionControl, Retransmit};
    use meshbed_core::Duration;

    const MSS: u64 = 1000;

    fn window(cwnd: f64) -> Window {
        let mut w = Window::new(cwnd, 1000.0, 1000.0, MSS);
        w.cwnd_segments = cwnd;
        w
    }

    fn ack(acked_segments: u64, srtt_ms: u64) -> AckSample {
        AckSample {
            ack: 0,
            acked_bytes: acked_segments * MSS,
            flight_bytes: 0,
            snd_max: 0,
            dupacks: 0,
            srtt: Some(Duration::from_millis(srtt_ms)),
            head_lost: false,
            rtt_sample: None,
        }
    }

    fn at(ms: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(ms)
    }

    /// §4.2 by hand: from W_max = 100 and cwnd_epoch = 70 (β = 0.7),
    /// K = ∛(30 / 0.4) = ∛75 = 4.2171633265 s; W_cubic(0) = 70,
    /// W_cubic(K) = 100, W_cubic(2) = 100 + 0.4·(−2.2171633265)³ =
    /// 95.6403357 and W_cubic(6) = 100 + 0.4·1.7828366735³ = 102.2667033.
    #[test]
    fn w_cubic_and_k_are_the_rfcs_formulas() {
        let k = k_seconds(100.0, 70.0);
        assert!((k - 4.217_163_326_5).abs() < 1e-9, "{k}");
        assert!((w_cubic(0.0, k, 100.0) - 70.0).abs() < 1e-9);
        assert!((w_cubic(k, k, 100.0) - 100.0).abs() < 1e-12);
        assert!((w_cubic(2.0, k, 100.0) - 95.640_335_7).abs() < 1e-6, "{}", w_cubic(2.0, k, 100.0));
        assert!((w_cubic(6.0, k, 100.0) - 102.266_703_3).abs() < 1e-6, "{}", w_cubic(6.0, k, 100.0));
        assert!((ALPHA_CUBIC - 0.529_411_764_7).abs() < 1e-9);
    }

    /// §4.6–4.7: a loss at 100 segments sets ssthresh 70 and W_max 100; a
    /// second loss at 90, below that W_max, sets W_max = 90·1.7/2 = 76.5
    /// with fast convergence and 90 without; ssthresh = 0.7·flight.
    #[test]
    fn a_loss_sets_ssthresh_to_beta_times_flight_and_fast_convergence_lowers_w_max() {
        for (fast, second_w_max) in [(true, 76.5), (false, 90.0)] {
            let mut cubic = Cubic { fast_convergence: fast, ..Cubic::default() };
            let mut w = window(100.0);
            cubic.on_congestion(at(0), &mut w, 100 * MSS);
            assert_eq!((w.ssthresh_segments, cubic.w_max()), (70.0, Some(100.0)));
            w.cwnd_segments = 90.0;
            cubic.on_congestion(at(1000), &mut w, 80 * MSS);
            assert!((w.ssthresh_segments - 56.0).abs() < 1e-9, "{}", w.ssthresh_segments);
            assert!((cubic.w_max().unwrap() - second_w_max).abs() < 1e-9, "{fast}: {:?}", cubic.w_max());
        }
        // ssthresh never below two segments.
        let mut w = window(2.0);
        Cubic::default().on_congestion(at(0), &mut w, MSS);
        assert_eq!(w.ssthresh_segments, 2.0);
    }

    /// §4.3–4.5 ACK by ACK after a loss at 100 segments (cwnd_epoch 70,
    /// K = 4.2171633 s), SRTT 100 ms, one segment per ACK:
    /// - t = 0: W_est = 70 + 0.5294118/70 = 70.0075630 > W_cubic(0) = 70,
    ///   so the Reno-friendly region: cwnd = W_est.
    /// - t = 2 s: W_est = 70.0075630 + 0.5294118/70.0075630 = 70.0151251,
    ///   below W_cubic(2) = 95.64: target = W_cubic(2.1) = 100 +
    ///   0.4·(−2.1171633)³ = 96.2040273, and cwnd grows by (target −
    ///   cwnd)/cwnd = 26.1964643/70.0075630 = 0.3741944 to 70.3817578.
    #[test]
    fn congestion_avoidance_follows_reno_friendly_then_the_cubic_target() {
        let mut cubic = Cubic::default();
        let mut w = window(100.0);
        cubic.on_congestion(at(0), &mut w, 100 * MSS);
        w.cwnd_segments = w.ssthresh_segments;
        cubic.on_ack(at(500), &mut w, &ack(1, 100));
        assert!((w.cwnd_segments - 70.007_563_0).abs() < 1e-6, "{}", w.cwnd_segments);
        assert!((cubic.k_seconds().unwrap() - 4.217_163_3).abs() < 1e-6);
        cubic.on_ack(at(2500), &mut w, &ack(1, 100));
        assert!((cubic.w_est().unwrap() - 70.015_125_1).abs() < 1e-6, "{:?}", cubic.w_est());
        assert!((w.cwnd_segments - 70.381_757_8).abs() < 1e-6, "{}", w.cwnd_segments);
    }

    /// The target is capped at 1.5·cwnd (§4.5), far in the convex region.
    #[test]
    fn the_target_is_at_most_one_and_a_half_windows() {
        let mut cubic = Cubic::default();
        let mut w = window(100.0);
        cubic.on_congestion(at(0), &mut w, 100 * MSS);
        w.cwnd_segments = 70.0;
        cubic.on_ack(at(0), &mut w, &ack(1, 100));
        let cwnd = w.cwnd_segments;
        // 60 s later W_cubic is far above 1.5·cwnd: + (0.5·cwnd)/cwnd = 0.5.
        cubic.on_ack(at(60_000), &mut w, &ack(1, 100));
        assert!((w.cwnd_segments - (cwnd + 0.5)).abs() < 1e-9, "{} {}", cwnd, w.cwnd_segments);
    }

    /// Without a loss (or after a timeout) the epoch grows convexly from
    /// cwnd_epoch (K = 0, W_max = cwnd_epoch), as Linux does.
    #[test]
    fn without_a_previous_loss_the_epoch_starts_convex_from_the_window() {
        let mut cubic = Cubic::default();
        let mut w = Window::new(10.0, 10.0, 1000.0, MSS);
        cubic.on_ack(at(0), &mut w, &ack(1, 0));
        assert_eq!(cubic.k_seconds(), Some(0.0));
        // A timeout forgets W_max and restarts from one segment.
        cubic.on_congestion(at(1), &mut w, 10 * MSS);
        cubic.on_timeout(at(2), &mut w, 10 * MSS, true);
        assert_eq!((cubic.w_max(), w.cwnd_segments), (None, 1.0));
        assert!((w.ssthresh_segments - 7.0).abs() < 1e-9);
    }

    /// The whole controller: three dupacks enter NewReno recovery with
    /// CUBIC's ssthresh (0.7·flight) and the window inflated by three; the
    /// full ACK ends it at ssthresh and a new epoch starts.
    #[test]
    fn cubic_newreno_recovers_with_beta_0_7() {
        let mut cc = CubicNewReno::with_growth(window(20.0), 3, Cubic::default());
        let dup = |dupacks| AckSample {
            ack: 1,
            acked_bytes: 0,
            flight_bytes: 20 * MSS,
            snd_max: 20 * MSS + 1,
            dupacks,
            srtt: None,
            head_lost: false,
            rtt_sample: None,
        };
        assert_eq!(cc.on_duplicate_ack(at(0), &dup(1)).retransmit, Retransmit::None);
        cc.on_duplicate_ack(at(0), &dup(2));
        assert_eq!(cc.on_duplicate_ack(at(0), &dup(3)).retransmit, Retransmit::Head);
        let m = cc.metrics();
        assert_eq!((m.ssthresh_segments, m.cwnd_segments, m.in_recovery), (14.0, 17.0, true));
        let full = AckSample {
            ack: 20 * MSS + 1,
            acked_bytes: 20 * MSS,
            flight_bytes: 14 * MSS,
            snd_max: 34 * MSS,
            dupacks: 0,
            srtt: None,
            head_lost: false,
            rtt_sample: None,
        };
        cc.on_ack(at(10), &full);
        let m = cc.metrics();
        assert_eq!((m.cwnd_segments, m.in_recovery), (14.0, false));
        assert_eq!(cc.growth.w_max(), Some(20.0));
    }
}
