//! ATP parameters and the three presets (seed 001 Table 2.1, seed 000 §V.A).
//!
//! Every number is a pub field so that a scenario can sweep it. Where the
//! documents disagree or are silent the choice is written next to the field,
//! with the reason; docs/PROTOCOLS.md carries the same list.

use crate::engine::Protocol;
use crate::relay::{EtaRule, RelayConfig};
use meshbed_core::Duration;

/// Adaptive ATP's immediate-feedback triggers (seed 000 §V.A.3, seed 001
/// §5.1.3): the receiver sends feedback at once, without waiting for the
/// epoch, when one of them fires.
#[derive(Clone, Debug, PartialEq)]
pub struct AdaptiveFeedback {
    /// Feedback when this many dropped packets were detected since the last
    /// feedback (seed 000: "two dropped packets").
    pub drops: u32,
    /// Feedback after this many consecutive data packets with D_max > D_s
    /// (sender too fast), or with D_max < (1 − φ)·D_s (too slow). Seed 000: 10.
    pub consecutive: u32,
}

impl Default for AdaptiveFeedback {
    fn default() -> Self {
        AdaptiveFeedback { drops: 2, consecutive: 10 }
    }
}

/// Parameters shared by an ATP sender, its receiver and the relays' stamping.
#[derive(Clone, Debug, PartialEq)]
pub struct AtpConfig {
    /// Epoch E: the receiver's feedback period (seed 002 §4.2, seed 001
    /// Table 2.1: 1 s; aggressive and adaptive: 0.04 s, seed 000 §V.A.2).
    pub epoch: Duration,
    /// Relay EWMA weight α (seed 002 §4.1, seed 001 §2.1: 0.75).
    pub alpha: f64,
    /// Receiver EWMA weight β of D_avg. Seed 002 §4.2.1 uses 0.75, seed 001
    /// §2.2 / Table 2.1 and seed 000 §II.B use 0.85; we take 0.85 because
    /// meshbed reproduces the testbed study (000/001), which says its defaults
    /// are the ATP paper's and lists 0.85.
    pub beta: f64,
    /// Idle multiplier η (seed 002 §4.1, seed 001 §2.1: 3).
    pub eta: f64,
    /// Adaptive ATP's η = eta + eta_per_hop·(h − 1) from the hop count
    /// (seed 000 §V.A.3: 0.5). `None`: a fixed η.
    pub eta_per_hop: Option<f64>,
    /// Increase threshold: the sender increases when R > (1 + φ)·S (seed 002
    /// §4.3.2 Fig. 7 line 12: S < R − φ·S; seed 001 §2.3 writes the same as
    /// "φ = 1.1 times greater"). Also the adaptive "too slow" margin (seed 000
    /// §V.A.3: D_max < (1 − φ)·D_s).
    pub phi: f64,
    /// Increase factor κ: S += κ·(R − S) (seed 002 §4.3.2: 1/k with k = 5;
    /// seed 001 Table 2.1: 0.2; aggressive 0.5, seed 000 §V.A.2).
    pub kappa: f64,
    /// The sender expects feedback every `feedback_timeout_factor · E` (seed
    /// 001 §3.3: 1.1·E, "the additional 10% ... for the feedback to travel").
    pub feedback_timeout_factor: f64,
    /// Multiplicative rate decrease per missed feedback, for the first
    /// `missed_feedback_probe − 1` misses (seed 002 §4.3.2 says "a
    /// multiplicative decrease ... up to a maximum of two epochs" but not the
    /// factor). We halve, TCP's multiplicative decrease: two misses leave a
    /// quarter of the rate, which is conservative while the reverse path may be
    /// broken but still sends enough to keep the receiver's SACKs useful.
    pub missed_feedback_decrease: f64,
    /// At this many consecutive missed feedbacks the sender restarts
    /// quick-start, one probe per epoch (seed 002 §4.3.2: the third; seed 001
    /// §2.3: "misses three consecutive feedback packets").
    pub missed_feedback_probe: u32,
    /// SACK-MORE after this fraction of E without data (seed 001 §3.3: half).
    pub sack_more_fraction: f64,
    /// SACK blocks per feedback (seed 002 §4.2.2: 20). Clamped to the wire's
    /// [`crate::wire::MAX_SACK_BLOCKS`].
    pub max_sack_blocks: usize,
    /// Smallest per-packet delay the sender uses: the rate is at most
    /// 1/min_delay. Guards D = 0 (a path with no stamped delay yet, e.g. a
    /// quick-start probe through nodes that never transmitted). Not in the
    /// documents; 100 us (10 000 packets/s, ~115 Mbit/s of 1436-byte payloads)
    /// is above anything 802.11a/g carries, so it only guards, never limits.
    pub min_delay: Duration,
    /// The rate cap grows with what the path delivers: at most this many
    /// times the packets per second that arrived at the receiver between
    /// the last two feedbacks (its count, `wire::FeedbackEcho`), when that
    /// is above `1/min_delay`. A path faster than
    /// `1/min_delay` (a wired or loopback hop, an 802.11ac/ax link; its D is
    /// below the wire's 1 µs resolution, or a few µs the host can hardly
    /// measure) then doubles the cap each epoch it fills it, as slow start
    /// doubles a window; an 802.11a/g path (at most ~4,700 packets/s) never
    /// lifts it, so the simulator's 802.11 runs are unchanged. Not in the
    /// documents (docs/PROTOCOLS.md, "ATP's rate cap").
    pub delivery_growth: f64,
    /// Zero (the presets): R = 1/D as the documents give it. Above zero,
    /// for a sender whose D measures only queueing (a host's end-to-end
    /// estimate): once a feedback has reported a hole, R = 1/(D + T), T the
    /// bottleneck's service time, one packet at (1 + `service_time_probe`/E)
    /// times the fastest delivery of the last 10 s, as a node's D holds its
    /// transmission delay (seed 002 §4.1). The factor above 1 is how an
    /// empty path still asks for more than it delivered: at most this much
    /// queue per epoch E if the path is full (10 ms: ×1.25 for adaptive
    /// ATP's 40 ms, ×1.01 for default ATP's 1 s, close to TCP's one segment
    /// per round trip). `net` sets it. Not in the documents
    /// (docs/PROTOCOLS.md §6, "ATP's rate on a host").
    pub service_time_probe: Duration,
    /// How late the pacing schedule may run before it restarts: a driver
    /// that wakes this much after a packet was due sends every packet due
    /// since, at once, instead of one and a new schedule from now. Zero (the
    /// simulator's, whose timers are exact): no catching up, no burst after
    /// a quiet spell. A host's timers wake tens of microseconds late, more
    /// than the gap between packets at hundreds of Mbit/s, so the UDP
    /// runtime allows a little (`net::conn::EngineOptions`). Not in the
    /// documents (docs/PROTOCOLS.md, "ATP's rate cap").
    pub pacing_burst: Duration,
    /// For a pacing gap shorter than `pacing_burst_gaps_below`, the allowed
    /// burst also covers this many gaps, the larger of the two ruling: at a
    /// few hundred Mbit/s a host's send loop sleeps for a batch of gaps,
    /// longer than `pacing_burst` alone would let it catch up on, while at
    /// several Gbit/s a burst of that duration is already thousands of
    /// packets, and at 802.11 rates (gaps of 0.3 ms and more) the loop does
    /// not batch. Zero in the simulator and the presets.
    pub pacing_burst_gaps: u32,
    pub pacing_burst_gaps_below: Duration,
    /// A streaming sender's window follows what its rate sends between two
    /// feedbacks, up to this many bytes: at each feedback it becomes twice
    /// the rate just set times the interval since the previous feedback
    /// (what [`AtpConfig::send_window_bytes`] sizes at the cap's floor and
    /// two epochs), never below the window it was created with. The
    /// interval is measured, not the epoch, and the rate is the one set, not
    /// the cap (twice what was delivered): default ATP's one feedback per
    /// 1 s epoch no longer holds it at window / epoch (28.7 MB per second,
    /// 230 Mbit/s) whatever the cap. Only for periodic feedback (default
    /// and aggressive ATP): adaptive ATP's immediate feedback releases its
    /// bytes as it goes (one run at 4.4 Gbit/s in its 8 MiB), and where it
    /// did not, ten transfers at once to one receiver, a window that grew
    /// overran the receiver's reorder allowance after losses (2.7 against
    /// 5.2 Gbit/s together, 2.2 GB held against 181 MiB). Zero (the presets and the
    /// simulator, whose 802.11 paths never lift the cap): the window stays
    /// as created. Not in the documents (docs/PROTOCOLS.md §6, "Window
    /// size").
    pub max_send_window_bytes: u64,
    /// Largest inter-packet delay: the rate never falls below 1/max_delay,
    /// however many feedbacks are missed. Not in the documents; 1 s keeps a
    /// probe-like trickle that lets feedback resume.
    pub max_delay: Duration,
    /// Application bytes per data packet: 1500 − 20 (IP) − 8 (UDP) − 36 (ATP
    /// header) = 1436, so a datagram fits a 1500-byte IP packet.
    pub max_payload: usize,
    /// Silence (nothing heard from the peer) after which an established or
    /// connecting engine fails with `PeerUnreachable`. Not in the documents
    /// (ATP has no retransmission timeout, seed 002 §4.2.2); 10 s is ten
    /// default epochs of missed feedback.
    pub idle_timeout: Duration,
    /// How long a finished receiver stays to answer retransmitted FINs after
    /// the last packet from the sender (like TCP's TIME-WAIT). Equal to the
    /// sender's idle timeout, so a sender whose FIN answers were lost always
    /// finds the receiver still there before it would give up.
    pub linger: Duration,
    /// A hole is retransmitted only if its last transmission is at least
    /// `retransmit_guard_factor · RTT` old (RTT smoothed over quick-start
    /// probes and the newest once-sent segment each feedback reports).
    /// Feedback is periodic, not per packet, so a hole reported in a feedback
    /// generated before the retransmission arrived must not trigger another
    /// copy. Not in the documents (seed 002 §4.3.3 only says "just as in TCP
    /// by maintaining a SACK scoreboard").
    pub retransmit_guard_factor: f64,
    /// The relay's idle detector (see [`RelayConfig::idle_after`]).
    pub relay_idle_after: Duration,
    /// A fresh node's assumed delay (see [`RelayConfig::prior_delay`]); radio
    /// dependent, so zero here and set by the scenario.
    pub relay_prior_delay: Duration,
    /// How often a relay reads its node's delay (see
    /// [`RelayConfig::delay_read_interval`]); zero, per packet.
    pub relay_delay_read_interval: Duration,
    /// Immediate-feedback triggers of adaptive ATP; `None` for default and
    /// aggressive.
    pub adaptive: Option<AdaptiveFeedback>,
    /// The receiver's memory guard against hostile input: data ending more
    /// than this far beyond the cumulative ack is dropped, and what it holds
    /// out of order may be charged at most this much, per-piece overhead
    /// included ([`crate::reorder`]; a driver may lower the charge limit per
    /// connection). 256 MiB is never reached by an honest sender at
    /// simulated rates, so simulations are unaffected; `meshbed recv` sets a
    /// mesh-sized limit of its own.
    pub max_reorder_bytes: u64,
    /// What the sender does on a "route failed" notice (ELFN, seed 002
    /// §4.3.3); see [`RouteFailureReaction`].
    pub route_failure: RouteFailureReaction,
    /// While the route is reported down (a "route failed" notice not yet
    /// followed by "re-established"), silence is a route outage, not a dead
    /// peer: either side gives up only after this much of it, if longer
    /// than `idle_timeout`. Not in the documents; 100 s as TCP's R2 (RFC
    /// 1122 §4.2.3.5), which meshbed's TCP uses for the same reason.
    pub route_outage_timeout: Duration,
    /// Emit `EngineEvent::Trace` samples.
    pub trace: bool,
}

/// The ATP sender's reaction to an explicit link-failure notification.
///
/// Seed 002 §4.3.3: "the ATP sender immediately enters the connection
/// initiation phase ... for every epoch, sends a probe packet to the
/// receiver ... piggybacked on the next in-sequence data packet", and §5.2
/// (Figs. 8–9): "it does not decrease its rate on route failures". The text
/// does not say whether paced data goes on while the sender probes.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum RouteFailureReaction {
    /// Connection initiation: only the probes go, one per epoch, each on the
    /// next in-sequence packet, until feedback sets the rate on the new
    /// route; the rate is kept meanwhile (the default: connection
    /// initiation sends nothing but probes, §4.3.1, and data sent into a
    /// broken route is lost).
    #[default]
    Probe,
    /// Keep sending at the current rate and piggyback a probe on the next
    /// in-sequence packet every epoch.
    ProbeWhileSending,
    /// Ignore the notice (as if routing gave none): missed feedback still
    /// leads to probing after `missed_feedback_probe` epochs (§4.3.2).
    Ignore,
}

impl Default for AtpConfig {
    /// Default ATP: the ATP paper's parameters as listed in seed 001 Table 2.1.
    fn default() -> Self {
        AtpConfig {
            epoch: Duration::from_secs(1),
            alpha: 0.75,
            beta: 0.85,
            eta: 3.0,
            eta_per_hop: None,
            phi: 0.1,
            kappa: 0.2,
            feedback_timeout_factor: 1.1,
            missed_feedback_decrease: 0.5,
            missed_feedback_probe: 3,
            sack_more_fraction: 0.5,
            max_sack_blocks: crate::wire::MAX_SACK_BLOCKS,
            min_delay: Duration::from_micros(100),
            delivery_growth: 2.0,
            service_time_probe: Duration::ZERO,
            pacing_burst: Duration::ZERO,
            pacing_burst_gaps: 0,
            pacing_burst_gaps_below: Duration::ZERO,
            max_send_window_bytes: 0,
            max_delay: Duration::from_secs(1),
            max_payload: 1500 - 20 - 8 - crate::wire::HEADER_LEN,
            idle_timeout: Duration::from_secs(10),
            linger: Duration::from_secs(10),
            retransmit_guard_factor: 1.0,
            relay_idle_after: Duration::from_millis(100),
            relay_prior_delay: Duration::ZERO,
            relay_delay_read_interval: Duration::ZERO,
            adaptive: None,
            max_reorder_bytes: 256 << 20,
            route_failure: RouteFailureReaction::Probe,
            route_outage_timeout: Duration::from_secs(100),
            trace: true,
        }
    }
}

impl AtpConfig {
    /// How long silence may last before either side gives up: the idle
    /// timeout, or while the route is reported down the route-outage one.
    pub fn silence_allowed(&self, route_down: bool) -> Duration {
        if route_down {
            self.idle_timeout.max(self.route_outage_timeout)
        } else {
            self.idle_timeout
        }
    }

    /// Aggressive ATP: E = 0.04 s, κ = 0.5 (seed 000 §V.A.2, seed 001 §5.1.2).
    pub fn aggressive() -> Self {
        AtpConfig { epoch: Duration::from_millis(40), kappa: 0.5, ..AtpConfig::default() }
    }

    /// Adaptive ATP: aggressive plus immediate feedback on two drops or ten
    /// consecutive packets whose D_max says the sender is too fast or too slow,
    /// and η from the hop count (seed 000 §V.A.3, seed 001 §5.1.3).
    pub fn adaptive() -> Self {
        AtpConfig { eta_per_hop: Some(0.5), adaptive: Some(AdaptiveFeedback::default()), ..AtpConfig::aggressive() }
    }

    /// Bytes a streaming sender must be able to hold to keep sending at its
    /// rate cap (one `max_payload` packet per `min_delay`): cumulative
    /// acknowledgements arrive with the periodic feedback, once per epoch
    /// (seed 002 §4.2), so bytes stay unreleased for up to an epoch plus the
    /// feedback's way back; two epochs cover both. Default ATP (E = 1 s)
    /// needs 28.7 MB, aggressive and adaptive (E = 40 ms) 1.1 MB.
    pub fn send_window_bytes(&self) -> u64 {
        let rate_bytes_per_s = self.payload_per_packet() as f64 / self.min_delay.as_secs_f64().max(1e-9);
        (rate_bytes_per_s * 2.0 * self.epoch.as_secs_f64()).ceil() as u64
    }

    /// The preset for an ATP protocol name; `None` for TCP.
    pub fn for_protocol(protocol: Protocol) -> Option<Self> {
        match protocol {
            Protocol::AtpDefault => Some(AtpConfig::default()),
            Protocol::AtpAggressive => Some(AtpConfig::aggressive()),
            Protocol::AtpAdaptive => Some(AtpConfig::adaptive()),
            _ => None,
        }
    }

    /// The stamping parameters every node on the path should use.
    pub fn relay_config(&self) -> RelayConfig {
        let eta = match self.eta_per_hop {
            None => EtaRule::Fixed(self.eta),
            Some(per_hop) => EtaRule::ByHopCount { base: self.eta, per_hop },
        };
        RelayConfig {
            alpha: self.alpha,
            eta,
            idle_after: self.relay_idle_after,
            prior_delay: self.relay_prior_delay,
            delay_read_interval: self.relay_delay_read_interval,
        }
    }

    /// How long the sender waits for feedback: 1.1·E.
    /// The factor over the fastest delivery that R may reach on an empty
    /// path with `service_time_probe` (zero: off).
    pub fn service_time_gain(&self) -> f64 {
        if self.service_time_probe.is_zero() {
            return 0.0;
        }
        1.0 + self.service_time_probe.as_secs_f64() / self.epoch.as_secs_f64().max(1e-9)
    }

    pub fn feedback_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.epoch.as_secs_f64() * self.feedback_timeout_factor)
    }

    /// Silence after which the receiver sets SACK-MORE: E/2.
    pub fn sack_more_after(&self) -> Duration {
        Duration::from_secs_f64(self.epoch.as_secs_f64() * self.sack_more_fraction)
    }

    /// The packet size the rate is counted in, never zero.
    pub(crate) fn payload_per_packet(&self) -> usize {
        self.max_payload.max(1)
    }
}
