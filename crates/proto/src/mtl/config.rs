//! MTL transport settings (seed 004 §III.C). Every value the paper gives is
//! its default; every value it leaves open is a field with the reason for
//! its default (also listed in docs/PROTOCOLS.md, "MTL's transport module").

use crate::tcp::TcpConfig;
use crate::wire::HEADER_LEN;
use meshbed_core::Duration;

/// Parameters shared by the MTL sender and receiver.
#[derive(Clone, Debug, PartialEq)]
pub struct MtlConfig {
    /// Application bytes per data packet. Default 1436, TCP's: a 1500-byte
    /// IP packet (the paper's 1,460-byte transport packets, §IV, are set by
    /// the scenario's packet size).
    pub max_payload: usize,
    /// Bytes below the meshbed header that count in s_data and s_EGN of eq. 7
    /// (IPv4 + UDP: 28), so that the sizes are what the interface sends.
    pub lower_header_bytes: usize,
    /// The sending buffer: bytes sent and not yet known received (§III.C.1:
    /// "200 kbytes by default").
    pub send_buffer_bytes: u64,
    /// The interface bandwidth b of eqs. 7–8 while no routing module says
    /// otherwise ([`crate::PathInfo::link_rate_bps`]). Default 54 Mbit/s,
    /// the 802.11g rate of §IV.
    pub link_rate_bps: u64,
    /// EWMA weight α of the old FHD̄ (eq. 10: 0.7).
    pub alpha: f64,
    /// Inter-packet gap before the first FHD sample. The paper is silent on
    /// start-up; one packet per 10 ms (≈ 1.2 Mbit/s at 1460 bytes) lasts one
    /// round trip, until the first probe is answered.
    pub initial_interval: Duration,
    /// At most one RTT probe (an explicit EGN request on a first-transmission
    /// data packet) per this interval. §III.C.2.b takes FHD from RTT
    /// measurements without saying which packets; 100 ms gives a few
    /// samples per second at little feedback cost.
    pub rtt_probe_interval: Duration,
    /// A gap is retransmitted again only after this many smoothed RTTs since
    /// its last copy (the retransmission could not have arrived earlier).
    pub retransmit_guard_rtts: f64,
    /// The receiver sends an unsolicited EGN for a new gap at most once per
    /// this interval (a burst of losses makes one EGN, not one per packet).
    /// Requested EGNs and FIN answers are never delayed.
    pub egn_min_interval: Duration,
    /// While a gap stays unfilled the receiver repeats its EGN this long
    /// after the last one (a lost EGN or a lost retransmission is recovered
    /// without waiting for the buffer to fill).
    pub egn_repeat_interval: Duration,
    /// The most gaps one EGN names (≤ [`crate::wire::MAX_SACK_BLOCKS`], 20).
    pub max_gaps_per_egn: usize,
    /// An unanswered explicit EGN request (buffer full, or nothing new to
    /// send) is repeated after max(this, 2·SRTT).
    pub min_request_interval: Duration,
    /// SYN probes repeat this often until answered.
    pub syn_interval: Duration,
    /// The sender reports [`crate::EngineEvent::PeerUnresponsive`] once the
    /// receiver has been silent this long while something waits for an
    /// answer (§III.B: "in case a peer is not responding, the routing
    /// module is notified"). Shorter than `idle_timeout`.
    pub unresponsive_after: Duration,
    /// Silence after which a side gives up with `PeerUnreachable`.
    pub idle_timeout: Duration,
    /// A finished receiver answers repeated FINs this long after the last
    /// packet from the sender, then closes.
    pub linger: Duration,
    /// The receiver's memory guard for out-of-order data ([`crate::reorder`]).
    pub max_reorder_bytes: u64,
    /// Emit trace samples (rate, FHD, RTT, retransmissions).
    pub trace: bool,
    /// How late the pacing schedule may run before it restarts, as ATP's
    /// (`AtpConfig::pacing_burst`): zero in the simulator, whose timers are
    /// exact; a little on a host, whose timers wake late.
    pub pacing_burst: Duration,
    /// For gaps shorter than `pacing_burst_gaps_below` the allowed burst
    /// also covers this many gaps, as ATP's (`AtpConfig::pacing_burst_gaps`):
    /// zero in the simulator.
    pub pacing_burst_gaps: u32,
    pub pacing_burst_gaps_below: Duration,
    /// On a host (the UDP runtime), the round trip holds the hosts' own
    /// latencies (wake-ups, the send loop's bursts), which eq. 7 would take
    /// for queueing. Non-zero: eq. 7 takes each RTT sample less this, and
    /// b grows with what the path delivers ([`MtlConfig::delivery_growth`]).
    /// Zero (the presets, the simulator): eqs. 7–10 as the paper writes them.
    /// Not in the paper (docs/PROTOCOLS.md §6, "MTL's rate on a host").
    pub host_resolution: Duration,
    /// With a host resolution: b is at least this many times the bits per
    /// second the cumulative ack advanced over the last measurement (at
    /// least a smoothed RTT between EGNs), so that a path faster than the
    /// configured b (a wired or loopback hop) is not held to it, as ATP's
    /// rate cap grows (`AtpConfig::delivery_growth`).
    pub delivery_growth: f64,
    /// Ask for an EGN early: the first transmission that fills the sending
    /// buffer to this fraction of `send_buffer_bytes` carries SACK-REQ (not
    /// held back), at most one unanswered at a time, re-asked after the
    /// request interval. The answer releases the buffer while the rest of it
    /// is still being sent, so a sender whose buffer lasts about a round
    /// trip (200 KB on a host's Gbit/s paths: some 200 µs) does not stop at
    /// every full buffer and wait for the receiver to catch up. Zero (the
    /// presets, the simulator): only the paper's request on a full buffer
    /// (§III.C.1). Not in the paper (docs/PROTOCOLS.md §6, "MTL's rate on a
    /// host").
    pub early_request_fill: f64,
}

impl Default for MtlConfig {
    fn default() -> Self {
        MtlConfig {
            max_payload: 1500 - 20 - 8 - HEADER_LEN,
            lower_header_bytes: 28,
            send_buffer_bytes: 200_000,
            link_rate_bps: 54_000_000,
            alpha: 0.7,
            initial_interval: Duration::from_millis(10),
            rtt_probe_interval: Duration::from_millis(100),
            retransmit_guard_rtts: 1.0,
            egn_min_interval: Duration::from_millis(5),
            egn_repeat_interval: Duration::from_millis(100),
            max_gaps_per_egn: crate::wire::MAX_SACK_BLOCKS,
            min_request_interval: Duration::from_millis(20),
            syn_interval: Duration::from_millis(500),
            unresponsive_after: Duration::from_secs(2),
            idle_timeout: Duration::from_secs(100),
            linger: Duration::from_secs(5),
            max_reorder_bytes: 256 << 20,
            trace: false,
            pacing_burst: Duration::ZERO,
            pacing_burst_gaps: 0,
            pacing_burst_gaps_below: Duration::ZERO,
            host_resolution: Duration::ZERO,
            delivery_growth: 2.0,
            early_request_fill: 0.0,
        }
    }
}

impl MtlConfig {
    /// The settings a driver that only knows TCP's gives MTL: the segment
    /// size, the idle timeout and the reorder limit are the transport's, not
    /// TCP's own ([`crate::connection::EngineConfig::new`]).
    pub fn from_tcp(tcp: &TcpConfig) -> MtlConfig {
        MtlConfig {
            max_payload: tcp.mss_bytes,
            max_reorder_bytes: tcp.max_reorder_bytes,
            // As the TCP engines do: every sample is emitted and the driver
            // keeps the flow's if it traces it (the default's `false` left
            // every MTL flow untraced whatever the scenario asked).
            trace: true,
            ..MtlConfig::default()
        }
        .with_idle_timeout(tcp.idle_timeout)
    }

    /// These settings giving up after `idle_timeout` of silence, and
    /// reporting the peer unresponsive at half of it if that comes before
    /// the default's report (the routing module hears before the
    /// connection fails, §III.B).
    pub fn with_idle_timeout(self, idle_timeout: Duration) -> MtlConfig {
        let unresponsive_after =
            MtlConfig::default().unresponsive_after.min(Duration::from_nanos(idle_timeout.as_nanos() / 2));
        MtlConfig { idle_timeout, unresponsive_after, ..self }
    }

    /// Replaces values that would stall or loop an engine (zero sizes and
    /// intervals, α outside [0, 1)) with the smallest workable ones.
    pub(crate) fn sanitized(&self) -> MtlConfig {
        let one_ns = Duration::from_nanos(1);
        let default = MtlConfig::default();
        MtlConfig {
            max_payload: self.max_payload.max(1),
            lower_header_bytes: self.lower_header_bytes,
            send_buffer_bytes: self.send_buffer_bytes.max(1),
            link_rate_bps: if self.link_rate_bps == 0 { default.link_rate_bps } else { self.link_rate_bps },
            alpha: if (0.0..1.0).contains(&self.alpha) { self.alpha } else { default.alpha },
            initial_interval: self.initial_interval.max(one_ns),
            rtt_probe_interval: self.rtt_probe_interval.max(one_ns),
            retransmit_guard_rtts: if self.retransmit_guard_rtts.is_finite() {
                self.retransmit_guard_rtts.max(0.0)
            } else {
                default.retransmit_guard_rtts
            },
            egn_min_interval: self.egn_min_interval,
            egn_repeat_interval: self.egn_repeat_interval.max(one_ns),
            max_gaps_per_egn: self.max_gaps_per_egn.clamp(1, crate::wire::MAX_SACK_BLOCKS),
            min_request_interval: self.min_request_interval.max(one_ns),
            syn_interval: self.syn_interval.max(one_ns),
            unresponsive_after: self.unresponsive_after.max(one_ns),
            idle_timeout: self.idle_timeout.max(one_ns),
            linger: self.linger,
            max_reorder_bytes: self.max_reorder_bytes,
            trace: self.trace,
            pacing_burst: self.pacing_burst,
            pacing_burst_gaps: self.pacing_burst_gaps,
            pacing_burst_gaps_below: self.pacing_burst_gaps_below,
            host_resolution: self.host_resolution,
            delivery_growth: if self.delivery_growth.is_finite() { self.delivery_growth.max(0.0) } else { 0.0 },
            // Not a number, or at most zero: no early request.
            early_request_fill: if self.early_request_fill.is_finite() {
                self.early_request_fill.max(0.0)
            } else {
                0.0
            },
        }
    }

    /// s_data of eq. 7: a full data packet as the interface sends it, bytes.
    pub fn data_packet_bytes(&self) -> u64 {
        (self.max_payload + HEADER_LEN + self.lower_header_bytes) as u64
    }

    /// s_EGN of eq. 7: an EGN naming no gap (what answers a probe), bytes.
    pub fn egn_packet_bytes(&self) -> u64 {
        (HEADER_LEN + self.lower_header_bytes) as u64
    }
}
