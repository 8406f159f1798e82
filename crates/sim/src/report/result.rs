//! One flow's result, in parts: what every flow has ([`FlowResult`]'s own
//! fields), and what only some have — a transport transfer
//! ([`TransferResult`]), UDP traffic ([`UdpResult`]), a run with routing
//! engines ([`RoutingResult`]), echo traffic ([`EchoResult`]), the
//! kernel's TCP ([`KernelTcpResult`]). A part is
//! `None` where it does not apply, so a reader never mistakes "not
//! measured" for zero; the convenience methods on [`FlowResult`] give the
//! one value callers ask for most (false, 0 or `None` where it does not
//! apply), each rule written once here.

use crate::net_stats::FlowNet;
use crate::scenario::{CongestionControl, FlowKind, FlowSpec, Traffic, KERNEL_TCP};
use crate::trace_kind::{RouteLogEvent, RouteLogSide};
use crate::transport::{PathObservation, TraceRecord};
pub use meshbed_core::stats::SenderPacing;
use meshbed_core::Instant;
use meshbed_proto::Protocol;
use serde::{Deserialize, Serialize};

/// One flow of a run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FlowResult {
    pub flow: u32,
    pub src: u32,
    pub dst: u32,
    /// Route length in hops (`None` when there is no route).
    pub hops: Option<u32>,
    /// When the flow starts, seconds.
    pub start_s: f64,
    /// What carried the flow: UDP, a transport engine or the kernel's
    /// TCP. Written as the engine's scenario name (`atp-default`, ...),
    /// `udp` or `kernel-tcp`, as files always had it.
    pub protocol: FlowProtocol,
    /// UDP packets, or datagrams the transport sender sent (retransmissions
    /// included).
    pub sent_packets: u64,
    /// Packets that reached the destination node (for a transport flow: the
    /// sender's datagrams, duplicates and retransmissions included).
    pub received_packets: u64,
    /// Useful bits per second, `bytes_delivered` over `duration_s`.
    pub goodput_bps: f64,
    /// Mean one-way network delay of the packets counted in
    /// `received_packets`; `None` where nothing measured it: no packet
    /// arrived, or the emulator, whose stacks' packets carry no send time
    /// (written as null, never as a 0 that reads as a measurement).
    pub mean_delay_s: Option<f64>,
    pub out_of_order: u64,
    /// Application bytes the receiver handed up in order (each checked
    /// against the data sent), or UDP payload bytes received.
    pub bytes_delivered: u64,
    /// Transport: start to the sender's `Finished` when complete, start to
    /// the end of the run otherwise. UDP: the active (sending) time.
    pub duration_s: f64,
    /// The network layer's losses of the flow's packets by cause, and the
    /// route discoveries they waited for.
    pub net: FlowNet,
    /// Engine trace samples (an echo flow's `rtt_s`, a transport's
    /// windows and rates), kept only when the flow sets `trace = true`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trace: Vec<TraceRecord>,
    /// A transport flow's transfer; `None` for UDP and echo traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transfer: Option<TransferResult>,
    /// UDP traffic (saturated, CBR or echo); `None` for a transport flow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<UdpResult>,
    /// The flow's route history; `None` when the run had no routing
    /// engines (static or shortest-path routes, the emulator), where routes
    /// never fail or change and every count would be zero.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routing: Option<RoutingResult>,
    /// Echo traffic (adaptive ping, seed 003 §5.4): requests, losses and
    /// the RTT statistics; `None` for other flows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub echo: Option<EchoResult>,
    /// A transfer over the kernel's TCP (its `transfer` part says how it
    /// went); `None` for other flows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_tcp: Option<KernelTcpResult>,
}

/// What carried a flow's data, as results name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowProtocol {
    /// UDP traffic: saturated, CBR or echo ([`FlowResult::traffic`]).
    Udp,
    /// One of meshbed's transport engines.
    Engine(Protocol),
    /// The Linux kernel's TCP (the emulator's `kernel-tcp` flows).
    KernelTcp,
}

impl FlowProtocol {
    /// As files name it: the engine's scenario name, `udp` or `kernel-tcp`.
    pub fn name(self) -> &'static str {
        match self {
            FlowProtocol::Udp => "udp",
            FlowProtocol::Engine(p) => p.name(),
            FlowProtocol::KernelTcp => KERNEL_TCP,
        }
    }

    /// The engine, `None` for UDP and kernel TCP.
    pub fn engine(self) -> Option<Protocol> {
        match self {
            FlowProtocol::Engine(p) => Some(p),
            FlowProtocol::Udp | FlowProtocol::KernelTcp => None,
        }
    }

    /// What carries `spec`'s data.
    pub fn of(spec: &FlowSpec) -> FlowProtocol {
        match &spec.kind {
            FlowKind::Udp(_) | FlowKind::Echo(_) => FlowProtocol::Udp,
            FlowKind::Transport(t) => FlowProtocol::Engine(t.protocol),
            FlowKind::KernelTcp(_) => FlowProtocol::KernelTcp,
        }
    }
}

impl Serialize for FlowProtocol {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for FlowProtocol {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        match name.as_str() {
            "udp" => Ok(FlowProtocol::Udp),
            KERNEL_TCP => Ok(FlowProtocol::KernelTcp),
            other => other.parse().map(FlowProtocol::Engine).map_err(serde::de::Error::custom),
        }
    }
}

/// What only a kernel TCP flow has.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KernelTcpResult {
    /// The congestion control the sender's socket ran (`TCP_CONGESTION`).
    pub congestion_control: CongestionControl,
}

/// What only a transport flow has: whether its transfer completed and
/// arrived intact, and what its two ends did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TransferResult {
    /// The transfer size (the flow's `bytes`); `None` for a transfer that
    /// sends until `stop_s`.
    pub size_bytes: Option<u64>,
    /// The sender finished and the receiver handed up exactly the data sent.
    pub completed: bool,
    /// Every byte handed up so far equals the data sent.
    pub verified: bool,
    /// Stopped by an engine failure or a byte mismatch, as opposed to cut
    /// short by the end of the run.
    pub failed: bool,
    /// Simulated time at which the flow completed.
    pub completion_time_s: Option<f64>,
    /// Segments the sender sent again.
    pub retransmissions: u64,
    /// Feedback packets (ATP) or ACKs (TCP) the receiver sent.
    pub feedback_packets: u64,
    /// Why the transfer did not complete (engine failure, byte mismatch,
    /// or the run ended first); `None` when it completed.
    pub error: Option<String>,
    /// Header fields of the sender's datagrams as they reached the
    /// destination node (what the relays wrote on the way); `None` before
    /// any arrived.
    pub path: Option<PathObservation>,
    /// What the sender did that only its protocol has (`None` where the
    /// backend does not know: the emulator).
    pub sender: Option<SenderDetail>,
    /// With `batch_packets` set on the flow: the bytes of one batch, and the
    /// times, seconds, at which the data handed up first reached 1, 2, ...
    /// batches (seed 004 §IV's batch-means method); empty otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delivery_milestones_s: Vec<f64>,
    /// When the feedback (ATP's feedback, TCP's ACKs) left the receiver and
    /// reached the sender, summarised (seed 000 §V.A.2, Fig. 7b: feedback
    /// arriving in clusters); `None` with fewer than three arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<FeedbackTiming>,
    /// What routing told the ends of their paths and what they told
    /// routing (MTL's cross-layer exchange, seed 004 §III.B); `None` when
    /// nothing was exchanged (static routing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_info: Option<PathInfoResult>,
    /// The emulator's transfers (`meshbed send`) retry a failed attempt
    /// from byte 0: each failed attempt, when and why, also when a later
    /// one completed. Empty in the simulator, whose flows make one attempt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_attempts: Vec<String>,
    /// The emulator's senders (`meshbed send`): how late their loop woke
    /// for the engine's deadlines and how many datagrams it sent at once.
    /// `None` in the simulator, whose senders transmit at the instant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_pacing: Option<SenderPacing>,
}

/// What only UDP traffic has.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UdpResult {
    /// Saturated, CBR or echo.
    pub traffic: Traffic,
    /// Packets received over packets sent; `None` before any was sent. (A
    /// transport flow has none: its `received_packets` count
    /// retransmissions.)
    pub delivery_ratio: Option<f64>,
}

/// A flow's route history, in a run with routing engines.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RoutingResult {
    /// Route-failure and re-establishment notices the flow's transport ends
    /// got from routing (ELFN); zero for UDP, which has no ends to tell.
    pub route_failed_notices: u64,
    pub route_reestablished_notices: u64,
    /// The flow's route history in time order: notices to either end
    /// (`route-failed`, `route-reestablished`), the moments its packets
    /// reached the destination over a new path (`path-changed`), and for a
    /// transport flow when its feedback started or stopped coming back
    /// along its data's path (`paths-symmetric`, `paths-asymmetric`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub route_log: Vec<RouteLogEntry>,
    /// How often the path of the packets reaching the destination changed
    /// from one packet to the next (seed 002 §2.3, Fig. 4b's "different
    /// route").
    pub path_changes: u64,
    /// Route failures at the source after which packets arrived again, and
    /// how many of those arrived over another path than before the failure
    /// (seed 002 §2.3, Fig. 4(b): "about 90% of the time, a different route
    /// is chosen").
    pub routes_recomputed: u64,
    pub routes_new: u64,
    /// The fewest and most hops the flow's data packets took to reach the
    /// destination over the run (counted as IP counts them, by the TTL
    /// each hop takes off); `None` before any arrived. Without routing
    /// engines the route never changes and `FlowResult::hops` is all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hops_observed: Option<HopRange>,
}

/// The routing part of a flow of a run without routing engines: nothing
/// failed or changed.
static NO_ROUTING: RoutingResult = RoutingResult {
    route_failed_notices: 0,
    route_reestablished_notices: 0,
    route_log: Vec::new(),
    path_changes: 0,
    routes_recomputed: 0,
    routes_new: 0,
    hops_observed: None,
};

/// The fewest and most hops of something observed over a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HopRange {
    pub min: u32,
    pub max: u32,
}

impl HopRange {
    /// The range widened to take in `hops`, or just `hops` for none yet.
    pub fn with(range: Option<HopRange>, hops: u32) -> HopRange {
        match range {
            Some(r) => HopRange { min: r.min.min(hops), max: r.max.max(hops) },
            None => HopRange { min: hops, max: hops },
        }
    }
}

/// One entry of a flow's route history.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RouteLogEntry {
    pub t_s: f64,
    pub side: RouteLogSide,
    pub event: RouteLogEvent,
}

/// An echo flow's requests and round-trip times ([`crate::echo`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EchoResult {
    /// Requests sent.
    pub requests: u64,
    /// Requests given up unanswered after `echo_timeout_s`.
    pub lost: u64,
    /// Replies that came after their request was given up (ignored).
    pub stale_replies: u64,
    /// RTT statistics in seconds over the answered requests (seed 003
    /// Table 4: min, median, max, mean, sd); `None` when none was answered.
    pub rtt_s: Option<meshbed_core::stats::SampleStats>,
    /// Every RTT, seconds, in order (for statistics pooled over runs; not
    /// in the JSON, where `trace = true` gives them as trace samples).
    #[serde(skip)]
    pub rtt_samples_s: Vec<f64>,
}

/// A transport sender's protocol-specific counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SenderDetail {
    /// ATP: "route failed" notices that sent it back to probing.
    pub route_failure_probes: Option<u64>,
    /// TCP: slow starts, timeouts, RTOs, ELFN standbys.
    pub tcp: Option<TcpDetail>,
}

/// A TCP sender's counts for seed 002 §2 (Figs. 2–3) and TCP-ELFN.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TcpDetail {
    pub slow_start_entries: u64,
    pub slow_start_time_s: f64,
    pub timeouts: u64,
    pub rtt_samples: u64,
    pub max_rto_s: f64,
    pub elfn_standbys: u64,
    pub elfn_standby_time_s: f64,
    pub elfn_probes: u64,
    /// RACK-TLP (`tcp-sack`, `tcp-cubic`): segments RACK marked lost, tail
    /// loss probes, and probes that repaired a loss (absent in results
    /// stored before them: 0).
    #[serde(default)]
    pub rack_lost_segments: u64,
    #[serde(default)]
    pub tlp_probes: u64,
    #[serde(default)]
    pub tlp_repaired_losses: u64,
}

/// A transport flow's cross-layer exchange with routing: path information
/// goes only to the engines that read it (MTL's, `scenario::needs_path_info`),
/// so another transport's report has none.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PathInfoResult {
    /// Path information delivered to either end (each a change).
    pub updates: u64,
    /// The last delivered to the sender (path to the receiver) and to the
    /// receiver (path back), if any.
    pub sender: Option<PathInfoSample>,
    pub receiver: Option<PathInfoSample>,
    /// `PeerUnresponsive` events the ends passed to their node's routing.
    pub peer_unresponsive_events: u64,
}

/// One delivery of path information (`meshbed_proto::PathInfo`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PathInfoSample {
    pub hop_count: u32,
    /// P_max = max over the route's links of 1 − 1/ETX (seed 004 eq. 4).
    pub max_link_loss: f64,
    pub link_rate_bps: u64,
}

impl From<meshbed_proto::PathInfo> for PathInfoSample {
    fn from(p: meshbed_proto::PathInfo) -> Self {
        PathInfoSample { hop_count: p.hop_count, max_link_loss: p.max_link_loss, link_rate_bps: p.link_rate_bps }
    }
}

/// How a flow's feedback packets were spaced when the receiver sent them
/// and when they reached the sender (seed 000 §V.A.2, Fig. 7b: "a cluster
/// of feedback packets received at 0.15 seconds ... occurs because we do
/// not use a priority queue for feedback packets"). Gaps are between
/// consecutive arrivals, each with the gap between the same two packets'
/// departures, so the two sides compare the same packets.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FeedbackTiming {
    /// Feedback packets that reached the sender.
    pub packets: u64,
    /// Mean time from the receiver to the sender, seconds.
    pub mean_delay_s: f64,
    /// Coefficient of variation (sd / mean) of the gaps between
    /// consecutive feedback packets as the receiver sent them, and as they
    /// reached the sender: the network clusters feedback when the second is
    /// larger. `None` when the gaps' mean is zero.
    pub sent_gap_cv: Option<f64>,
    pub arrival_gap_cv: Option<f64>,
    /// Share of consecutive arrivals less than [`CLUSTER_GAP_FRACTION`] of
    /// their sending gap apart: feedback held back on the reverse path and
    /// then delivered together with the next one (ack compression).
    pub clustered_share: f64,
}

/// An arrival gap below this fraction of its sending gap counts as
/// clustered: a quarter keeps the epoch-driven spacing of ATP's feedback
/// (E = 40 ms for the aggressive and adaptive variants) clear of
/// contention jitter of a frame or two (~1 ms per 1500-byte frame at 24
/// Mbit/s) while catching Fig. 7b's pile-ups.
pub const CLUSTER_GAP_FRACTION: f64 = 0.25;

impl FeedbackTiming {
    /// The timing of feedback packets, each `(sent_at, arrived_at)`, in
    /// arrival order; `None` for fewer than three (two gaps).
    pub fn of(feedback: &[(Instant, Instant)]) -> Option<FeedbackTiming> {
        if feedback.len() < 3 {
            return None;
        }
        // Whole nanoseconds, exact in an f64 (2^53 ns is 104 days).
        let ns = |later: Instant, earlier: Instant| later.saturating_since(earlier).as_nanos() as f64;
        let (sent, arrived): (Vec<f64>, Vec<f64>) =
            feedback.windows(2).map(|w| (ns(w[1].0, w[0].0), ns(w[1].1, w[0].1))).unzip();
        let cv = |gaps: &[f64]| {
            let m = meshbed_core::stats::sample_stats(gaps);
            (m.mean > 0.0).then(|| m.sd / m.mean)
        };
        let clustered = sent.iter().zip(&arrived).filter(|(s, a)| **a < CLUSTER_GAP_FRACTION * **s).count();
        let delays: Vec<f64> = feedback.iter().map(|&(s, a)| ns(a, s) / 1e9).collect();
        Some(FeedbackTiming {
            packets: feedback.len() as u64,
            mean_delay_s: meshbed_core::stats::sample_stats(&delays).mean,
            sent_gap_cv: cv(&sent),
            arrival_gap_cv: cv(&arrived),
            clustered_share: clustered as f64 / sent.len() as f64,
        })
    }
}

impl FlowResult {
    /// Flow `flow` of `spec` before anything is measured: the scenario's
    /// description (protocol, UDP traffic or transfer size, batch size),
    /// `hops` and `duration_s`, every count zero, the parts the flow's kind
    /// has (a transfer or UDP traffic) present, routing and echo absent.
    pub fn blank(flow: u32, spec: &FlowSpec, hops: Option<u32>, duration_s: f64) -> FlowResult {
        FlowResult {
            flow,
            src: spec.src,
            dst: spec.dst,
            hops,
            start_s: spec.start_s,
            protocol: FlowProtocol::of(spec),
            sent_packets: 0,
            received_packets: 0,
            goodput_bps: 0.0,
            mean_delay_s: None,
            out_of_order: 0,
            bytes_delivered: 0,
            duration_s,
            net: FlowNet::default(),
            trace: Vec::new(),
            transfer: match &spec.kind {
                FlowKind::Transport(t) => Some(TransferResult {
                    size_bytes: t.amount.bytes(),
                    batch_bytes: t.batch_bytes(),
                    ..TransferResult::default()
                }),
                FlowKind::KernelTcp(k) => {
                    Some(TransferResult { size_bytes: k.amount.bytes(), ..TransferResult::default() })
                }
                FlowKind::Udp(_) | FlowKind::Echo(_) => None,
            },
            udp: spec.traffic().map(|traffic| UdpResult { traffic, delivery_ratio: None }),
            routing: None,
            echo: None,
            kernel_tcp: spec.kernel_tcp().map(|k| KernelTcpResult { congestion_control: k.congestion_control.clone() }),
        }
    }

    /// Its protocol as files name it ([`FlowProtocol::name`]: `udp` for
    /// UDP, `kernel-tcp` for the kernel's TCP).
    pub fn protocol_name(&self) -> &'static str {
        self.protocol.name()
    }

    /// A transfer that completed; false for UDP, which has no transfer.
    pub fn completed(&self) -> bool {
        self.transfer.as_ref().is_some_and(|t| t.completed)
    }

    /// A transfer that did not complete (failed or cut short by the end of
    /// the run); false for UDP.
    pub fn incomplete(&self) -> bool {
        self.transfer.as_ref().is_some_and(|t| !t.completed)
    }

    /// A transfer whose bytes handed up all equal the data sent; false for UDP.
    pub fn verified(&self) -> bool {
        self.transfer.as_ref().is_some_and(|t| t.verified)
    }

    /// A transfer stopped by a failure; false for UDP.
    pub fn failed(&self) -> bool {
        self.transfer.as_ref().is_some_and(|t| t.failed)
    }

    /// When the transfer completed, seconds; `None` for UDP or an
    /// incomplete transfer.
    pub fn completion_time_s(&self) -> Option<f64> {
        self.transfer.as_ref().and_then(|t| t.completion_time_s)
    }

    /// The transfer's retransmissions; 0 for UDP.
    pub fn retransmissions(&self) -> u64 {
        self.transfer.as_ref().map_or(0, |t| t.retransmissions)
    }

    /// Feedback packets or ACKs the receiver sent; 0 for UDP.
    pub fn feedback_packets(&self) -> u64 {
        self.transfer.as_ref().map_or(0, |t| t.feedback_packets)
    }

    /// Why the transfer did not complete; `None` for UDP.
    pub fn error(&self) -> Option<&str> {
        self.transfer.as_ref().and_then(|t| t.error.as_deref())
    }

    /// The transport sender's protocol-specific counts, if known.
    pub fn sender(&self) -> Option<&SenderDetail> {
        self.transfer.as_ref().and_then(|t| t.sender.as_ref())
    }

    /// A TCP sender's counts; `None` for other flows.
    pub fn tcp(&self) -> Option<&TcpDetail> {
        self.sender().and_then(|d| d.tcp.as_ref())
    }

    /// The UDP traffic kind; `None` for a transport flow.
    pub fn traffic(&self) -> Option<Traffic> {
        self.udp.as_ref().map(|u| u.traffic)
    }

    /// UDP: packets received over packets sent; `None` for a transport flow.
    pub fn delivery_ratio(&self) -> Option<f64> {
        self.udp.as_ref().and_then(|u| u.delivery_ratio)
    }

    /// The route history, all zero and empty for a run without routing
    /// engines (where routes never fail or change).
    pub fn routing_or_zero(&self) -> &RoutingResult {
        self.routing.as_ref().unwrap_or(&NO_ROUTING)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meshbed_proto::Protocol;

    #[test]
    fn a_blank_result_has_exactly_the_parts_of_its_flows_kind() {
        let udp = FlowResult::blank(0, &FlowSpec::cbr(0, 2, 100.0, 512), None, 1.0);
        assert!(udp.transfer.is_none() && udp.routing.is_none() && udp.echo.is_none());
        assert_eq!(udp.traffic(), Some(Traffic::Cbr));
        assert!(!udp.completed() && !udp.incomplete() && !udp.failed() && udp.retransmissions() == 0);
        let t = FlowResult::blank(1, &FlowSpec::transfer(0, 2, Protocol::TcpReno, 5000), Some(2), 1.0);
        assert!(t.udp.is_none() && t.traffic().is_none() && t.delivery_ratio().is_none());
        assert_eq!(t.transfer.as_ref().and_then(|t| t.size_bytes), Some(5000));
        assert!(t.incomplete() && !t.completed());
        assert_eq!(t.routing_or_zero(), &RoutingResult::default());
    }

    #[test]
    fn the_json_has_only_the_parts_a_flow_has() {
        let t = FlowResult::blank(1, &FlowSpec::transfer(0, 2, Protocol::TcpReno, 5000), Some(2), 1.0);
        let json = serde_json::to_value(&t).unwrap();
        assert_eq!(json["protocol"], "tcp-reno");
        assert_eq!(json["transfer"]["size_bytes"], 5000);
        assert!(json.get("udp").is_none() && json.get("routing").is_none() && json.get("echo").is_none());
        let back: FlowResult = serde_json::from_value(json).unwrap();
        assert_eq!(back.transfer, t.transfer);
    }

    #[test]
    fn a_kernel_tcp_flow_is_named_kernel_tcp_with_its_congestion_control_and_a_transfer() {
        use crate::scenario::{Amount, KernelTcpFlow};
        let mut k = KernelTcpFlow::new(Amount::Bytes(1000));
        k.congestion_control = CongestionControl::new("reno").unwrap();
        let spec = FlowSpec { src: 0, dst: 2, start_s: 0.0, kind: FlowKind::KernelTcp(k) };
        let r = FlowResult::blank(0, &spec, Some(2), 1.0);
        assert_eq!((r.protocol, r.protocol_name()), (FlowProtocol::KernelTcp, "kernel-tcp"));
        assert!(r.udp.is_none() && r.traffic().is_none() && r.protocol.engine().is_none());
        assert_eq!(r.transfer.as_ref().and_then(|t| t.size_bytes), Some(1000));
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["protocol"], "kernel-tcp");
        assert_eq!(json["kernel_tcp"]["congestion_control"], "reno");
        let back: FlowResult = serde_json::from_value(json).unwrap();
        assert_eq!((back.protocol, back.kernel_tcp), (FlowProtocol::KernelTcp, r.kernel_tcp));
        // Other flows have no such part, and keep their names.
        let udp = serde_json::to_value(FlowResult::blank(1, &FlowSpec::default(), None, 1.0)).unwrap();
        assert!(udp.get("kernel_tcp").is_none());
        assert_eq!(udp["protocol"], "udp");
    }

    #[test]
    fn feedback_timing_tells_clustered_arrivals_from_evenly_spaced_ones() {
        let ms = |v: u64| Instant::ZERO + meshbed_core::Duration::from_millis(v);
        // Sent every 40 ms (one epoch). Evenly delayed by 5 ms: no cluster.
        let even: Vec<_> = (0..5).map(|k| (ms(40 * k), ms(40 * k + 5))).collect();
        let t = FeedbackTiming::of(&even).unwrap();
        assert_eq!((t.packets, t.clustered_share), (5, 0.0));
        assert!((t.mean_delay_s - 0.005).abs() < 1e-12);
        assert_eq!((t.sent_gap_cv, t.arrival_gap_cv), (Some(0.0), Some(0.0)));
        // The second and third held back until just after the fourth was
        // sent: arrival gaps 115, 1, 1, 43 ms against 40 ms sending gaps.
        let held = [(ms(0), ms(5)), (ms(40), ms(120)), (ms(80), ms(121)), (ms(120), ms(122)), (ms(160), ms(165))];
        let t = FeedbackTiming::of(&held).unwrap();
        assert_eq!(t.clustered_share, 0.5, "2 of 4 gaps under 10 ms");
        assert_eq!(t.sent_gap_cv, Some(0.0));
        assert!(t.arrival_gap_cv.unwrap() > 1.0, "{:?}", t.arrival_gap_cv);
        assert!(t.mean_delay_s > 0.005);
        // A gap of exactly a quarter is not clustered; one just under is.
        let at = |a: u64| FeedbackTiming::of(&[(ms(0), ms(0)), (ms(40), ms(40)), (ms(80), ms(40 + a))]).unwrap();
        assert_eq!(at(10).clustered_share, 0.0);
        assert_eq!(at(9).clustered_share, 0.5);
        // Two packets give one gap: no statistic.
        assert_eq!(FeedbackTiming::of(&held[..2]), None);
    }
}
