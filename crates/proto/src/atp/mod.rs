//! ATP, the Ad-hoc Transport Protocol (seed 002 §3–4; seed 001 §2–3; seed
//! 000 §II–III and §V.A), as two sans-IO engines:
//!
//! * [`AtpSender`] owns the data, runs quick-start, paces packets at rate S
//!   (one packet every D_s = 1/S), adjusts S from the receiver's D_avg
//!   feedback (increase / decrease / maintain), retransmits SACK holes within
//!   the same rate, and closes with FIN.
//! * [`AtpReceiver`] averages the D_max stamped on arriving packets into
//!   D_avg, sends feedback every epoch E (plus SACK-MORE after E/2 of silence,
//!   immediate answers to probes and FINs, and adaptive ATP's immediate
//!   triggers), and hands in-order bytes to the application.
//!
//! The per-node delay averaging and stamping is [`crate::relay`]. The three
//! presets are [`AtpConfig::default`], [`AtpConfig::aggressive`] and
//! [`AtpConfig::adaptive`].
//!
//! Rates are counted in packets per second of `max_payload`-byte packets
//! (seed 002 §4.3.2 reasons in packets per second), so D_s is simply the
//! inter-packet delay and the feedback rate is R = 1/D_avg.

mod config;
mod delivery;
mod receiver;
mod sender;

pub use crate::receiver_core::ReceiverState;
pub use config::{AdaptiveFeedback, AtpConfig, RouteFailureReaction};
pub use receiver::{AtpReceiveControl, AtpReceiver};
pub use sender::{AtpSendControl, AtpSender, SenderState};

/// What the sender does with one feedback rate (seed 002 §4.3.2 Fig. 7).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RatePhase {
    Increase,
    Decrease,
    Maintain,
}

/// The rate adjustment of seed 002 §4.3.2 (Fig. 7 lines 12–16) for current
/// rate `s_pps` and feedback rate `r_pps`:
/// * R > (1 + φ)·S: increase, S += κ·(R − S);
/// * R < S: decrease, S = R;
/// * otherwise (R within [S, (1 + φ)·S]): maintain.
pub fn rate_adjustment(phi: f64, kappa: f64, s_pps: f64, r_pps: f64) -> (RatePhase, f64) {
    if r_pps > (1.0 + phi) * s_pps {
        (RatePhase::Increase, s_pps + kappa * (r_pps - s_pps))
    } else if r_pps < s_pps {
        (RatePhase::Decrease, r_pps)
    } else {
        (RatePhase::Maintain, s_pps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_adjustment_phases() {
        // 1.5× the rate: increase by κ(R − S).
        assert_eq!(rate_adjustment(0.1, 0.2, 100.0, 150.0), (RatePhase::Increase, 110.0));
        // Inside [S, 1.1·S]: maintain.
        assert_eq!(rate_adjustment(0.1, 0.2, 100.0, 105.0), (RatePhase::Maintain, 100.0));
        assert_eq!(rate_adjustment(0.1, 0.2, 100.0, 100.0), (RatePhase::Maintain, 100.0));
        // Below S: fall to R.
        assert_eq!(rate_adjustment(0.1, 0.2, 100.0, 60.0), (RatePhase::Decrease, 60.0));
    }
}
