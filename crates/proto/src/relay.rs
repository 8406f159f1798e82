//! A node's delay averaging and D_max stamping (seed 002 §4.1, seed 001 §2.1
//! and §3.1–3.2, seed 000 §II.A and §III.A–B).
//!
//! Every node keeps one exponentially weighted average of the time a frame
//! spends from entering its transmit queue until the MAC reports it sent:
//! `D = α·D + (1−α)·(tx_done − enqueued)`, α = 0.75 (seed 001 §3.1 eq. 3.1;
//! the thesis measures the sum Q_sample + T_sample in the driver because the
//! two parts cannot be told apart once the hardware dequeues; keeping one
//! average of the sum is equivalent to keeping two and adding them). The
//! average is per node, over all frames, whatever flow they belong to (seed
//! 002 §4.1: "maintained on a per-node basis, and not on a per-flow basis").
//!
//! When an ATP data packet (or probe, SYN or FIN) passes through, the node
//! raises the packet's D_max to its own D if D is larger, and increments the
//! hop count N_h (seed 000 §V.A.3). When the node's channel looks idle it
//! offers `η·D` instead of `D`, because the flow that is about to start will
//! contend with itself at up to η neighbouring hops (seed 002 §4.1: η = 3
//! for CSMA/CA; seed 000 §V.A.3: η = 3 + 0.5·(h − 1) for adaptive ATP).
//!
//! [`Relay`] is sans-IO and has no clock: a driver (simulator MAC, emulator,
//! or a real node's netfilter hook) calls, on each node:
//!
//! 1. [`Relay::stamp`] on every ATP/TCP datagram the node is about to put into
//!    its transmit queue, *including the ones it originates* (so the first hop's
//!    contention is counted too and N_h ends up equal to the number of hops at
//!    the receiver; with intermediate-node stamping only, a one-hop path would
//!    always carry D_max = 0);
//! 2. [`Relay::on_tx_report`] whenever the MAC reports a frame (any frame, any
//!    protocol) finished, with its enqueue time and completion time;
//! 3. optionally [`Relay::note_channel_busy`] when the driver can tell the
//!    channel around the node is in use (an overheard frame, carrier sense),
//!    which refines the idle detector.
//!
//! [`Relay::current_delay`] is what a real node exports (the thesis'
//! `/proc` entry, seed 001 appendix A.6).

use crate::wire::{Control, Packet, ProtocolId, Repr, WireError};
use meshbed_core::{Duration, Instant};

/// How a node chooses its idle multiplier η.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum EtaRule {
    /// One η for every packet (seed 002 §4.1, seed 001 Table 2.1: 3).
    Fixed(f64),
    /// `η = base + per_hop·(h − 1)` from the hop count `h` the packet carries
    /// once this node has counted its own hop (seed 000 §V.A.3: 3 + 0.5·(h−1)).
    /// A node near the sender only knows the hops so far, not the whole path,
    /// so it projects less contention than one near the receiver.
    ByHopCount { base: f64, per_hop: f64 },
}

impl EtaRule {
    /// The multiplier for a packet carrying `hop_count` hops (after this node).
    pub fn eta(self, hop_count: u8) -> f64 {
        match self {
            EtaRule::Fixed(eta) => eta,
            EtaRule::ByHopCount { base, per_hop } => base + per_hop * f64::from(hop_count.max(1) - 1),
        }
    }
}

/// Parameters of a node's delay averaging and stamping.
#[derive(Clone, Debug, PartialEq)]
pub struct RelayConfig {
    /// EWMA weight of the old average (seed 002 §4.1, seed 001 §2.1: 0.75).
    pub alpha: f64,
    /// Idle multiplier rule (seed 002 §4.1: η = 3).
    pub eta: EtaRule,
    /// The channel counts as idle when the node has neither forwarded a packet,
    /// nor had a frame reported sent, nor been told the channel was busy, for
    /// longer than this. The documents say only "when the node observes an
    /// idle channel" (seed 002 §4.1); seed 002 Fig. 6 line 3 treats a node
    /// whose average is still ~0 (no traffic yet) as idle, which this rule
    /// covers (a node that never sent anything is idle).
    pub idle_after: Duration,
    /// The delay a node assumes before its first complete tx report. Seed 002
    /// Fig. 6 lines 9–11 stamp a probe on an idle node with η × the probe's
    /// own queueing + transmission delay; a node stamping at enqueue time cannot
    /// know that yet, so a driver can give the one-frame service time of its
    /// radio (DIFS + mean backoff + airtime + SIFS + ACK) here. Zero (the
    /// default) leaves a fresh path at D = 0 and the sender at its rate cap.
    pub prior_delay: Duration,
}

impl Default for RelayConfig {
    fn default() -> Self {
        RelayConfig {
            alpha: 0.75,
            eta: EtaRule::Fixed(3.0),
            idle_after: Duration::from_millis(100),
            prior_delay: Duration::ZERO,
        }
    }
}

/// What [`Relay::stamp`] did to a datagram.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct StampOutcome {
    pub protocol: ProtocolId,
    /// N_h after this node's increment.
    pub hop_count: u8,
    /// Whether the node considered its channel idle (η applied).
    pub idle: bool,
    /// The delay this node offered (D, or η·D when idle), or `None` when the
    /// datagram's D_max was left alone (TCP, or ATP feedback whose D_max field
    /// carries the receiver's D_avg).
    pub offered: Option<Duration>,
    /// The datagram's D_max field after stamping.
    pub d_max: Duration,
    /// Whether this node raised D_max.
    pub raised: bool,
}

/// One node's delay average and stamping state. See the module doc for the
/// calling order.
#[derive(Clone, Debug)]
pub struct Relay {
    config: RelayConfig,
    /// The EWMA in nanoseconds; `None` until the first complete tx report.
    d_ns: Option<f64>,
    /// Last time the node saw its channel in use.
    last_activity: Option<Instant>,
    samples: u64,
    skipped_reports: u64,
}

impl Relay {
    pub fn new(config: RelayConfig) -> Self {
        Relay { config, d_ns: None, last_activity: None, samples: 0, skipped_reports: 0 }
    }

    pub fn config(&self) -> &RelayConfig {
        &self.config
    }

    /// The MAC finished a frame that entered the transmit queue at
    /// `enqueued_at`. `tx_done_at` is `None` when the MAC gave no completion
    /// time for this frame: ath5k reports a batch of frames with one
    /// descriptor interrupt, timing only the last (seed 001 §3.1), so the
    /// others have no sample and are skipped rather than given a made-up one.
    /// Either way the report shows the channel in use.
    pub fn on_tx_report(&mut self, now: Instant, enqueued_at: Instant, tx_done_at: Option<Instant>) {
        self.note_channel_busy(now);
        let Some(done) = tx_done_at else {
            self.skipped_reports += 1;
            return;
        };
        // seed 001 §3.1 eq. 3.1: the sample is Q_sample + T_sample = tx_done − enqueue.
        let sample = done.saturating_since(enqueued_at).as_nanos() as f64;
        let alpha = self.config.alpha;
        self.d_ns = Some(match self.d_ns {
            // The first sample seeds the average; starting from 0 would make a
            // fresh node report a quarter of its real delay for a while.
            None => sample,
            Some(d) => alpha * d + (1.0 - alpha) * sample,
        });
        self.samples += 1;
    }

    /// The driver saw the channel around the node busy (an overheard frame,
    /// carrier sense); only feeds the idle detector.
    pub fn note_channel_busy(&mut self, now: Instant) {
        self.last_activity = Some(self.last_activity.map_or(now, |t| t.max(now)));
    }

    /// The node's current average D = Q_t + T_t (`prior_delay` before any
    /// sample).
    pub fn current_delay(&self) -> Duration {
        match self.d_ns {
            None => self.config.prior_delay,
            Some(d_ns) => Duration::from_secs_f64(d_ns / 1e9),
        }
    }

    /// Whether the node would treat its channel as idle at `now`.
    pub fn is_idle(&self, now: Instant) -> bool {
        match self.last_activity {
            None => true,
            Some(t) => now.saturating_since(t) > self.config.idle_after,
        }
    }

    /// Complete tx reports averaged so far.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Tx reports without a completion time (batched interrupts), skipped.
    pub fn skipped_reports(&self) -> u64 {
        self.skipped_reports
    }

    /// Updates a datagram the node is about to transmit, in place.
    ///
    /// * Every ATP or TCP datagram: N_h += 1, saturating at 255 (seed 000
    ///   §V.A.3: "the data collection portion of ATP updates this field as the
    ///   packet is forwarded"). TCP datagrams get nothing else: TCP never reads
    ///   D_max, and leaving it alone keeps the relay from changing TCP's
    ///   behaviour while N_h still gives both protocols the same path-length
    ///   statistic.
    /// * ATP packets other than feedback (data, SYN probe, FIN):
    ///   D_max = max(D_max, D), with D = η·D_avg,node when idle (seed 002 §4.1
    ///   and Fig. 6/7; seed 001 §3.2).
    /// * ATP feedback (SACK-OPT) keeps its D_max: there the field carries the
    ///   receiver's D_avg back to the sender (seed 002 §4.2.1), which a relay
    ///   must not overwrite.
    ///
    /// A malformed datagram is left untouched and the error returned; it still
    /// counts as channel activity, since the node does transmit it.
    pub fn stamp(&mut self, now: Instant, datagram: &mut [u8]) -> Result<StampOutcome, WireError> {
        // Idle is judged before this packet counts as activity.
        let idle = self.is_idle(now);
        self.note_channel_busy(now);
        let repr = Repr::parse(&Packet::new_checked(&*datagram)?)?;
        let hop_count = repr.hop_count.saturating_add(1);
        let mut packet = Packet::new_unchecked(&mut *datagram);
        packet.set_hop_count(hop_count);
        let old_d_max = Duration::from_micros(u64::from(repr.d_max_us));
        let stamps = repr.protocol == ProtocolId::Atp && !repr.control.contains(Control::SACK_OPT);
        if !stamps {
            return Ok(StampOutcome {
                protocol: repr.protocol,
                hop_count,
                idle,
                offered: None,
                d_max: old_d_max,
                raised: false,
            });
        }
        let d_ns = self.d_ns.unwrap_or(self.config.prior_delay.as_nanos() as f64);
        let offered_ns = if idle { self.config.eta.eta(hop_count) * d_ns } else { d_ns };
        let offered = Duration::from_secs_f64(offered_ns / 1e9);
        let offered_us = duration_to_us(offered);
        let raised = offered_us > repr.d_max_us;
        if raised {
            packet.set_d_max_us(offered_us);
        }
        Ok(StampOutcome {
            protocol: repr.protocol,
            hop_count,
            idle,
            offered: Some(offered),
            d_max: Duration::from_micros(u64::from(repr.d_max_us.max(offered_us))),
            raised,
        })
    }
}

/// A duration as whole microseconds for the header, rounded to nearest and
/// clamped to the field (u32 µs is 71 minutes).
pub(crate) fn duration_to_us(d: Duration) -> u32 {
    let us = d.as_nanos().saturating_add(500) / 1_000;
    u32::try_from(us).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> Instant {
        Instant::from_nanos(ms * 1_000_000)
    }

    #[test]
    fn eta_by_hop_count_follows_seed_000() {
        let rule = EtaRule::ByHopCount { base: 3.0, per_hop: 0.5 };
        assert_eq!(rule.eta(1), 3.0);
        assert_eq!(rule.eta(2), 3.5);
        assert_eq!(rule.eta(5), 5.0);
        // A zero hop count (never incremented) is treated as one hop.
        assert_eq!(rule.eta(0), 3.0);
    }

    #[test]
    fn duration_to_us_rounds_and_clamps() {
        assert_eq!(duration_to_us(Duration::from_nanos(1_499)), 1);
        assert_eq!(duration_to_us(Duration::from_nanos(1_500)), 2);
        assert_eq!(duration_to_us(Duration::MAX), u32::MAX);
    }

    #[test]
    fn fresh_node_is_idle_and_offers_zero() {
        let relay = Relay::new(RelayConfig::default());
        assert!(relay.is_idle(t(0)));
        assert_eq!(relay.current_delay(), Duration::ZERO);
    }

    #[test]
    fn prior_delay_stands_in_until_the_first_sample() {
        let config = RelayConfig { prior_delay: Duration::from_micros(400), ..RelayConfig::default() };
        let mut relay = Relay::new(config);
        assert_eq!(relay.current_delay(), Duration::from_micros(400));
        relay.on_tx_report(t(10), t(9), Some(t(10)));
        assert_eq!(relay.current_delay(), Duration::from_millis(1));
    }

    #[test]
    fn idle_detector_boundary() {
        let mut relay = Relay::new(RelayConfig::default());
        relay.on_tx_report(t(1_000), t(999), Some(t(1_000)));
        assert!(!relay.is_idle(t(1_100)), "exactly idle_after later is still busy");
        assert!(relay.is_idle(t(1_101)));
    }
}
