//! The transport module of MTL, the Mesh Transmission Layer (seed 004
//! §III.C), as two sans-IO engines:
//!
//! * [`MtlSender`] keeps every packet sent in a 200 KB sending buffer until
//!   the receiver's cumulative ack covers it, retransmits exactly the gaps an
//!   Explicit Gap Notification (EGN) names, holds back a packet and asks for
//!   an EGN when the buffer is full and no EGN came within its lifetime
//!   (§III.C.1), and paces packets at R = 1 / (FHD̄ · (1 + P_max)) (eqs. 6–10)
//!   from its RTT samples and the routing module's [`crate::PathInfo`].
//! * [`MtlReceiver`] delivers in order and sends EGNs: at once for a new gap
//!   (rate-limited), repeated while a gap stays open, and at once when asked.
//!
//! Wire: the meshbed header of [`crate::wire`] in the TCP family's protocol
//! id (so that relays never stamp ATP's D_max on it; the connection id's top
//! bits name MTL, [`crate::connection::protocol_of`]). An EGN is a SACK-OPT
//! packet whose `ack` is the cumulative ack and whose SACK blocks are the
//! *missing* ranges `[start, end)` beyond it, lowest first (the gaps the
//! paper's EGN names, not the held ranges ATP reports); its `seq` echoes the
//! sequence number of the packet that triggered it. SACK-REQ on a sender
//! packet is the explicit EGN request; an EGN answering one carries
//! SACK-REQ too. FIN on an EGN answers the FIN.
//!
//! The equations are the free functions below, so that their tests pin
//! them to hand-computed numbers.

mod config;
mod receiver;
mod sender;

pub use config::MtlConfig;
pub use receiver::{MtlReceiveControl, MtlReceiver, MtlReceiverState};
pub use sender::{MtlSendControl, MtlSender, MtlSenderState};

/// Eq. 3: a link's loss probability from its ETX, p_link = 1 − 1/ETX. An
/// ETX below 1 (or not finite) is no measurement: loss 0.
pub fn link_loss_from_etx(etx: f64) -> f64 {
    if etx.is_finite() && etx >= 1.0 {
        1.0 - 1.0 / etx
    } else {
        0.0
    }
}

/// Eq. 4: P_max, the highest link loss probability on a path of links with
/// these ETX values (0 for an empty path).
pub fn max_link_loss(etx: impl IntoIterator<Item = f64>) -> f64 {
    etx.into_iter().map(link_loss_from_etx).fold(0.0, f64::max)
}

/// Eq. 7: the average per-hop queueing delay t_q in seconds from a round
/// trip `rtt_s` over `hops` hops at `link_rate_bps` with data and EGN
/// packets of `data_bytes` and `egn_bytes`. Clamped at 0: an RTT shorter
/// than the transmission times alone (a sample from small packets, or
/// a rate b above what the link achieves) means no queueing, not a negative
/// delay that would shrink FHD below the transmission time.
pub fn queueing_delay_s(rtt_s: f64, hops: u32, link_rate_bps: u64, data_bytes: u64, egn_bytes: u64) -> f64 {
    let h = f64::from(hops.max(1));
    (0.5 * (rtt_s / h - transmission_s(link_rate_bps, data_bytes, egn_bytes))).max(0.0)
}

/// Eq. 7's t_tx: one data packet and one EGN at `link_rate_bps`, seconds.
pub fn transmission_s(link_rate_bps: u64, data_bytes: u64, egn_bytes: u64) -> f64 {
    (data_bytes + egn_bytes) as f64 * 8.0 / link_rate_bps.max(1) as f64
}

/// Eq. 8: the 4-hop propagation delay FHD = 4 (t_q + s_data/b) in seconds;
/// for paths of h < 4 hops the h-hop delay h (t_q + s_data/b) (§III.C.2.b:
/// "for network paths with h < 4, R_max is computed using the h-hop
/// propagation delay").
pub fn fhd_s(rtt_s: f64, hops: u32, link_rate_bps: u64, data_bytes: u64, egn_bytes: u64) -> f64 {
    let t_q = queueing_delay_s(rtt_s, hops, link_rate_bps, data_bytes, egn_bytes);
    fhd_from_queueing_s(t_q, hops, link_rate_bps, data_bytes)
}

/// Eq. 8 from a per-hop queueing delay `t_q_s` already known.
pub fn fhd_from_queueing_s(t_q_s: f64, hops: u32, link_rate_bps: u64, data_bytes: u64) -> f64 {
    let t_data = data_bytes as f64 * 8.0 / link_rate_bps.max(1) as f64;
    f64::from(hops.clamp(1, 4)) * (t_q_s + t_data)
}

/// Eq. 10: FHD̄ = α · FHD̄_old + (1 − α) · FHD; the first sample stands alone.
pub fn fhd_average_s(old_s: Option<f64>, sample_s: f64, alpha: f64) -> f64 {
    match old_s {
        None => sample_s,
        Some(old) => alpha * old + (1.0 - alpha) * sample_s,
    }
}

/// Eq. 9: the transmission rate R = 1 / (FHD̄ · (1 + P_max)) in packets per
/// second.
pub fn rate_pps(fhd_avg_s: f64, p_max: f64) -> f64 {
    1.0 / (fhd_avg_s * (1.0 + p_max))
}

#[cfg(test)]
mod tests;
