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
//! The rule itself is [`Stamper::stamp`], the one copy every driver calls:
//! the simulator through [`Relay`], the emulator's netfilter daemon and a
//! real sender (meshbed-emu, meshbed-net) with their own [`DelaySource`]
//! (the node's exported delay file, a constant). It does no I/O and reads no
//! clock; what counts as channel activity is defined once, on
//! [`ChannelActivity`].
//!
//! [`Relay`] is the simulator's node: a [`Stamper`] whose delay source is
//! the node's average of tx reports ([`DelayAverage`]). A driver (simulator
//! MAC, emulator) calls, on each node:
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
    /// The rule of the ATP preset the datagram's connection id names: a
    /// meshbed sender puts its protocol in the id's top four bits
    /// ([`crate::connection::protocol_of`]), so a relay that cannot tell the
    /// variant from the header still applies adaptive ATP's per-hop η to
    /// adaptive flows and η = 3 to default and aggressive ones, as the
    /// simulator's per-flow relays do. An id that names no ATP preset gets
    /// default ATP's rule (seed 002 §4.1).
    ByConnectionId,
}

impl EtaRule {
    /// The multiplier for a packet carrying `hop_count` hops (after this
    /// node) on connection `connection_id`.
    pub fn eta(self, hop_count: u8, connection_id: u32) -> f64 {
        match self {
            EtaRule::Fixed(eta) => eta,
            EtaRule::ByHopCount { base, per_hop } => base + per_hop * f64::from(hop_count.max(1) - 1),
            EtaRule::ByConnectionId => {
                let preset =
                    crate::connection::protocol_of(connection_id).and_then(crate::atp::AtpConfig::for_protocol);
                match preset.unwrap_or_default().relay_config().eta {
                    EtaRule::ByConnectionId => unreachable!("a preset names its own rule"),
                    rule => rule.eta(hop_count, connection_id),
                }
            }
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
    /// How often the stamping reads the node's average: zero (the default)
    /// reads it at each packet's own instant, as seed 002's simulation does;
    /// seed 001's testbed read `/proc/ath5k/Da` from user space (§3.1, A.6),
    /// and meshbed's emulator exports each node's average at most every
    /// 10 ms to relays that re-read it at most every 10 ms, so there a
    /// stamp may be up to 20 ms stale. A positive value holds each reading
    /// that long: the simulator's sensitivity check of that staleness.
    pub delay_read_interval: Duration,
}

impl Default for RelayConfig {
    fn default() -> Self {
        RelayConfig {
            alpha: 0.75,
            eta: EtaRule::Fixed(3.0),
            idle_after: Duration::from_millis(100),
            prior_delay: Duration::ZERO,
            delay_read_interval: Duration::ZERO,
        }
    }
}

/// What [`Stamper::stamp`] did to a datagram.
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

/// Where a node's delay D comes from: the simulator's and emulator's
/// average of MAC tx reports ([`DelayAverage`]), a real node's `/proc`
/// export or a constant (meshbed-net), or a plain [`Duration`].
///
/// [`Stamper::stamp`] asks only when it writes D_max (ATP data, SYN, FIN),
/// so a source that reads a file is not read for other datagrams.
pub trait DelaySource {
    /// The node's delay D at `now`.
    fn delay(&mut self, now: Instant) -> Duration;

    /// What the node offers when its channel is idle: η·D (seed 002 §4.1).
    /// A source overrides this only to scale a finer value than its whole
    /// nanoseconds ([`DelayAverage`]) or when η does not apply to it (an
    /// end-to-end estimate already measures the flow's own contention).
    fn idle_delay(&mut self, now: Instant, eta: f64) -> Duration {
        eta_times(eta, self.delay(now).as_nanos() as f64)
    }
}

/// A constant delay.
impl DelaySource for Duration {
    fn delay(&mut self, _now: Instant) -> Duration {
        *self
    }
}

/// η·D for a delay of `delay_ns` nanoseconds, rounded to whole nanoseconds.
/// The one place η meets D, so every driver scales alike.
pub fn eta_times(eta: f64, delay_ns: f64) -> Duration {
    Duration::from_secs_f64(eta * delay_ns / 1e9)
}

/// When a node last saw its channel in use, for the idle test of seed 002
/// §4.1 ("when there is no other traffic around the node ... when the node
/// observes an idle channel", η·D instead of D; the documents give no
/// further definition).
///
/// Channel activity, the same for every driver: the node transmits a
/// datagram (every datagram offered to [`Stamper::stamp`], whether it
/// parses or not, whatever protocol it carries: the node sends it either
/// way), the MAC reports a frame finished ([`Relay::on_tx_report`]), or the
/// driver sees the channel busy (an overheard frame, carrier sense:
/// [`Stamper::note_channel_busy`]). A driver that only sees the packets it
/// forwards (a netfilter daemon, a user-level sender) reports those.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelActivity {
    idle_after: Duration,
    last: Option<Instant>,
}

impl ChannelActivity {
    /// A node that has seen nothing yet is idle; it stays busy for
    /// `idle_after` after each activity.
    pub fn new(idle_after: Duration) -> Self {
        ChannelActivity { idle_after, last: None }
    }

    /// The channel was in use at `now`.
    pub fn note(&mut self, now: Instant) {
        self.last = Some(self.last.map_or(now, |t| t.max(now)));
    }

    /// Whether the channel counts as idle at `now`: no activity for longer
    /// than `idle_after` (a node that never saw any is idle).
    pub fn is_idle(&self, now: Instant) -> bool {
        match self.last {
            None => true,
            Some(t) => now.saturating_since(t) > self.idle_after,
        }
    }
}

/// The stamping rule of every driver (simulator, emulator relay daemon, a
/// real sender): the node's η rule and idle state. The delay comes from a
/// [`DelaySource`] passed to each call.
#[derive(Clone, Debug, PartialEq)]
pub struct Stamper {
    eta: EtaRule,
    activity: ChannelActivity,
}

impl Stamper {
    pub fn new(eta: EtaRule, idle_after: Duration) -> Self {
        Stamper { eta, activity: ChannelActivity::new(idle_after) }
    }

    pub fn eta(&self) -> EtaRule {
        self.eta
    }

    /// The driver saw the channel around the node busy; only feeds the idle
    /// detector.
    pub fn note_channel_busy(&mut self, now: Instant) {
        self.activity.note(now);
    }

    /// Whether the node would treat its channel as idle at `now`.
    pub fn is_idle(&self, now: Instant) -> bool {
        self.activity.is_idle(now)
    }

    /// Updates a datagram the node is about to transmit at `now`, in place.
    ///
    /// * Every ATP or TCP datagram: N_h += 1, saturating at 255 (seed 000
    ///   §V.A.3: "the data collection portion of ATP updates this field as the
    ///   packet is forwarded"). TCP datagrams get nothing else: TCP never reads
    ///   D_max, and leaving it alone keeps the relay from changing TCP's
    ///   behaviour while N_h still gives both protocols the same path-length
    ///   statistic.
    /// * ATP packets other than feedback (data, SYN probe, FIN):
    ///   D_max = max(D_max, D), with D = η·D when idle (seed 002 §4.1
    ///   and Fig. 6/7; seed 001 §3.2), η from the rule and N_h after this
    ///   node's increment.
    /// * ATP feedback (SACK-OPT) keeps its D_max: there the field carries the
    ///   receiver's D_avg back to the sender (seed 002 §4.2.1), which a relay
    ///   must not overwrite.
    ///
    /// A malformed datagram is left untouched and the error returned; it still
    /// counts as channel activity, since the node does transmit it.
    pub fn stamp(
        &mut self,
        now: Instant,
        datagram: &mut [u8],
        source: &mut (impl DelaySource + ?Sized),
    ) -> Result<StampOutcome, WireError> {
        // Idle is judged before this packet counts as activity.
        let idle = self.activity.is_idle(now);
        self.activity.note(now);
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
        let offered =
            if idle { source.idle_delay(now, self.eta.eta(hop_count, repr.connection_id)) } else { source.delay(now) };
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

/// A node's average of its MAC's tx reports, seed 001 §3.1 eq. 3.1: the
/// delay source of the simulator and the emulator.
#[derive(Clone, Debug)]
pub struct DelayAverage {
    alpha: f64,
    prior_delay: Duration,
    /// The EWMA in nanoseconds; `None` until the first complete tx report.
    /// Kept unrounded between samples, as the average is defined.
    d_ns: Option<f64>,
    samples: u64,
    skipped_reports: u64,
}

impl DelayAverage {
    pub fn new(alpha: f64, prior_delay: Duration) -> Self {
        DelayAverage { alpha, prior_delay, d_ns: None, samples: 0, skipped_reports: 0 }
    }

    /// A frame that entered the transmit queue at `enqueued_at` finished at
    /// `tx_done_at` (`None`: no completion time, see [`Relay::on_tx_report`]).
    pub fn on_tx_report(&mut self, enqueued_at: Instant, tx_done_at: Option<Instant>) {
        let Some(done) = tx_done_at else {
            self.skipped_reports += 1;
            return;
        };
        // seed 001 §3.1 eq. 3.1: the sample is Q_sample + T_sample = tx_done − enqueue.
        let sample = done.saturating_since(enqueued_at).as_nanos() as f64;
        let alpha = self.alpha;
        self.d_ns = Some(match self.d_ns {
            // The first sample seeds the average; starting from 0 would make a
            // fresh node report a quarter of its real delay for a while.
            None => sample,
            Some(d) => alpha * d + (1.0 - alpha) * sample,
        });
        self.samples += 1;
    }

    fn d_ns(&self) -> f64 {
        self.d_ns.unwrap_or(self.prior_delay.as_nanos() as f64)
    }

    /// The current average D = Q_t + T_t (`prior_delay` before any sample).
    pub fn current(&self) -> Duration {
        match self.d_ns {
            None => self.prior_delay,
            Some(d_ns) => Duration::from_secs_f64(d_ns / 1e9),
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
}

impl DelaySource for DelayAverage {
    fn delay(&mut self, _now: Instant) -> Duration {
        self.current()
    }

    /// η times the unrounded average, so that rounding happens once, after
    /// scaling (what the simulator has always computed).
    fn idle_delay(&mut self, _now: Instant, eta: f64) -> Duration {
        eta_times(eta, self.d_ns())
    }
}

/// One node's delay average and stamping state: [`Stamper`] with a
/// [`DelayAverage`] as its source. See the module doc for the calling order.
#[derive(Clone, Debug)]
pub struct Relay {
    config: RelayConfig,
    average: DelayAverage,
    stamper: Stamper,
    /// The last reading of the average and when it was taken, with a
    /// positive [`RelayConfig::delay_read_interval`].
    read: Option<(Instant, Duration)>,
}

impl Relay {
    pub fn new(config: RelayConfig) -> Self {
        let average = DelayAverage::new(config.alpha, config.prior_delay);
        let stamper = Stamper::new(config.eta, config.idle_after);
        Relay { config, average, stamper, read: None }
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
        self.stamper.note_channel_busy(now);
        self.average.on_tx_report(enqueued_at, tx_done_at);
    }

    /// The driver saw the channel around the node busy (an overheard frame,
    /// carrier sense); only feeds the idle detector.
    pub fn note_channel_busy(&mut self, now: Instant) {
        self.stamper.note_channel_busy(now);
    }

    /// The node's current average D = Q_t + T_t (`prior_delay` before any
    /// sample).
    pub fn current_delay(&self) -> Duration {
        self.average.current()
    }

    /// Whether the node would treat its channel as idle at `now`.
    pub fn is_idle(&self, now: Instant) -> bool {
        self.stamper.is_idle(now)
    }

    /// Complete tx reports averaged so far.
    pub fn samples(&self) -> u64 {
        self.average.samples()
    }

    /// Tx reports without a completion time (batched interrupts), skipped.
    pub fn skipped_reports(&self) -> u64 {
        self.average.skipped_reports()
    }

    /// [`Stamper::stamp`] with this node's average as the delay: read now,
    /// or as last read if that was less than the read interval ago.
    pub fn stamp(&mut self, now: Instant, datagram: &mut [u8]) -> Result<StampOutcome, WireError> {
        let interval = self.config.delay_read_interval;
        if interval.is_zero() {
            return self.stamper.stamp(now, datagram, &mut self.average);
        }
        let mut held = match self.read {
            Some((at, d)) if now < at + interval => d,
            _ => {
                let d = self.average.current();
                self.read = Some((now, d));
                d
            }
        };
        self.stamper.stamp(now, datagram, &mut held)
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
    use crate::Protocol;

    fn t(ms: u64) -> Instant {
        Instant::from_nanos(ms * 1_000_000)
    }

    #[test]
    fn eta_by_hop_count_follows_seed_000() {
        let rule = EtaRule::ByHopCount { base: 3.0, per_hop: 0.5 };
        assert_eq!(rule.eta(1, 0), 3.0);
        assert_eq!(rule.eta(2, 0), 3.5);
        assert_eq!(rule.eta(5, 0), 5.0);
        // A zero hop count (never incremented) is treated as one hop.
        assert_eq!(rule.eta(0, 0), 3.0);
    }

    #[test]
    fn eta_by_connection_id_is_the_rule_of_the_flows_preset() {
        use crate::connection::connection_id;
        let rule = EtaRule::ByConnectionId;
        let adaptive = connection_id(Protocol::AtpAdaptive, 0x5eed);
        assert_eq!(rule.eta(1, adaptive), 3.0);
        assert_eq!(rule.eta(3, adaptive), 4.0);
        for fixed in [Protocol::AtpDefault, Protocol::AtpAggressive, Protocol::TcpReno] {
            assert_eq!(rule.eta(3, connection_id(fixed, 0x5eed)), 3.0, "{fixed}");
        }
        // No protocol code (the simulator's random ids, other senders).
        assert_eq!(rule.eta(3, 0x0000_5eed), 3.0);
        assert_eq!(rule.eta(3, 0xf000_5eed), 3.0);
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

    /// With a read interval, a stamp uses the average as last read until
    /// the interval has passed (the emulator's and seed 001's testbed's
    /// staleness), then reads it again; without one, the average of the
    /// packet's own instant.
    #[test]
    fn a_read_interval_holds_the_delay_a_relay_stamps() {
        let d_max = |relay: &mut Relay, at: Instant| {
            let mut packet = atp_data();
            relay.stamp(at, &mut packet).unwrap();
            Packet::new_checked(&packet[..]).unwrap().d_max_us()
        };
        let held = RelayConfig { delay_read_interval: Duration::from_millis(10), ..RelayConfig::default() };
        let (mut relay, mut fresh) = (Relay::new(held), Relay::new(RelayConfig::default()));
        for r in [&mut relay, &mut fresh] {
            r.on_tx_report(t(100), t(99), Some(t(100))); // D = 1 ms
        }
        // Busy (a packet just sent): no idle multiplier.
        assert_eq!(d_max(&mut relay, t(100)), 1_000);
        for r in [&mut relay, &mut fresh] {
            r.on_tx_report(t(104), t(100), Some(t(104))); // D = 0.75·1 + 0.25·4 = 1.75 ms
        }
        assert_eq!(d_max(&mut fresh, t(105)), 1_750, "read at the packet's instant");
        assert_eq!(d_max(&mut relay, t(105)), 1_000, "held: read 5 ms ago");
        assert_eq!(d_max(&mut relay, t(110)), 1_750, "read again after 10 ms");
    }

    /// What a relay rewrites is exactly `wire::RELAY_WRITTEN` (the emulator
    /// matches a forwarded packet to its reception by the other bytes).
    #[test]
    fn a_stamp_writes_only_the_relay_written_bytes() {
        let mut relay = Relay::new(RelayConfig::default());
        relay.on_tx_report(t(100), t(99), Some(t(100)));
        let before = atp_data();
        let mut after = before.clone();
        relay.stamp(t(100), &mut after).unwrap();
        let changed: Vec<usize> = (0..before.len()).filter(|&i| before[i] != after[i]).collect();
        let written = |i: &usize| crate::wire::RELAY_WRITTEN.iter().any(|r| r.contains(i));
        assert!(changed.iter().all(written), "{changed:?}");
        // Both fields did change: N_h 0 → 1, D_max 0 → 1,000 µs.
        assert!(changed.contains(&3) && changed.iter().any(|i| (28..32).contains(i)), "{changed:?}");
    }

    /// An ATP data packet with 10 bytes of data, N_h = 0 and D_max = 0.
    fn atp_data() -> Vec<u8> {
        let repr = Repr {
            protocol: ProtocolId::Atp,
            control: Control(0),
            hop_count: 0,
            connection_id: 1,
            seq: 0,
            ack: 0,
            d_max_us: 0,
            d_s_us: 0,
            sack_blocks: vec![],
            payload_len: 10,
        };
        let mut buf = vec![0; repr.buffer_len()];
        repr.emit(&mut buf);
        buf
    }

    /// Counts how often the rule asks for the node's delay.
    struct Counting(u32);
    impl DelaySource for Counting {
        fn delay(&mut self, _now: Instant) -> Duration {
            self.0 += 1;
            Duration::from_micros(2_000)
        }
    }

    #[test]
    fn the_source_is_asked_only_when_d_max_is_written() {
        let mut stamper = Stamper::new(EtaRule::Fixed(3.0), Duration::from_millis(100));
        let mut source = Counting(0);
        let mut tcp = atp_data();
        tcp[0] = ProtocolId::Tcp as u8;
        stamper.stamp(t(1), &mut tcp, &mut source).unwrap();
        assert!(stamper.stamp(t(2), &mut [0u8; 7], &mut source).is_err());
        assert_eq!(source.0, 0);
        let out = stamper.stamp(t(3), &mut atp_data(), &mut source).unwrap();
        assert_eq!((source.0, out.d_max), (1, Duration::from_millis(2)));
    }

    #[test]
    fn activity_of_any_datagram_keeps_the_node_busy() {
        let mut stamper = Stamper::new(EtaRule::Fixed(3.0), Duration::from_millis(100));
        // An unparsable datagram is still sent: activity.
        assert!(stamper.stamp(t(1_000), &mut [0u8; 7], &mut Duration::from_micros(1)).is_err());
        let out = stamper.stamp(t(1_100), &mut atp_data(), &mut Duration::from_micros(1_000)).unwrap();
        assert!(!out.idle);
        assert_eq!(out.d_max, Duration::from_millis(1));
        let out = stamper.stamp(t(1_201), &mut atp_data(), &mut Duration::from_micros(1_000)).unwrap();
        assert!(out.idle);
        assert_eq!(out.d_max, Duration::from_millis(3));
    }

    #[test]
    fn relay_scales_the_unrounded_average_when_idle() {
        // Samples 166 833 ns then 166 834 ns: D = 166 833.25 ns. η·D =
        // 500 499.75 ns → 500 500 ns → 501 µs; scaling the rounded D
        // (166 833 ns) would give 500 499 ns → 500 µs. The simulator has
        // always scaled the unrounded average.
        let mut relay = Relay::new(RelayConfig::default());
        relay.on_tx_report(t(1), t(1) - Duration::from_nanos(166_833), Some(t(1)));
        relay.on_tx_report(t(2), t(2) - Duration::from_nanos(166_834), Some(t(2)));
        assert_eq!(relay.current_delay(), Duration::from_nanos(166_833));
        let out = relay.stamp(t(500), &mut atp_data()).unwrap();
        assert!(out.idle);
        assert_eq!(out.d_max, Duration::from_micros(501));
    }

    #[test]
    fn idle_detector_boundary() {
        let mut relay = Relay::new(RelayConfig::default());
        relay.on_tx_report(t(1_000), t(999), Some(t(1_000)));
        assert!(!relay.is_idle(t(1_100)), "exactly idle_after later is still busy");
        assert!(relay.is_idle(t(1_101)));
    }
}
