//! `[[flows]]`: what each flow sends (`flow_checks.rs` checks its keys).
//!
//! A flow is a sum type ([`FlowKind`]): UDP traffic, echo, a transport
//! transfer, or a transfer over the Linux kernel's TCP, each with only its
//! own keys. The file keeps its flat table
//! (`protocol = "..."`, `bytes`, `traffic = "cbr"`, `[flows.atp]`);
//! `flow_file.rs` reads and writes that form.

use super::kernel_tcp::KernelTcpFlow;
use super::limits::*;
use super::Scenario;
use meshbed_proto::wire::HEADER_LEN as TRANSPORT_HEADER_BYTES;
use meshbed_proto::Protocol;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One flow: from `src` to `dst`, starting at `start_s` (seconds of
/// simulated time), sending what its `kind` says.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowSpec {
    pub src: u32,
    pub dst: u32,
    pub start_s: f64,
    pub kind: FlowKind,
}

/// What a flow sends.
#[derive(Clone, Debug, PartialEq)]
pub enum FlowKind {
    /// UDP datagrams, saturated or at a constant bit rate.
    Udp(UdpFlow),
    /// Adaptive ping ([`Traffic::Echo`]).
    Echo(EchoFlow),
    /// A transport transfer (`protocol = "..."`).
    Transport(TransportFlow),
    /// A transfer over the Linux kernel's own TCP (`protocol =
    /// "kernel-tcp"`): the emulator runs it between the two nodes'
    /// namespaces; the simulator, which has no kernel, refuses it
    /// ([`crate::backend::Simulator`]).
    KernelTcp(KernelTcpFlow),
}

/// A UDP source (`traffic = "saturated"` or `"cbr"`).
#[derive(Clone, Debug, PartialEq)]
pub struct UdpFlow {
    pub rate: UdpRate,
    /// IP packet size in bytes (20-byte IP and 8-byte UDP headers included).
    pub packet_bytes: u32,
    /// Stop sending at this time (default: the end of the run).
    pub stop_s: Option<f64>,
}

/// How fast a UDP source sends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum UdpRate {
    /// Keeps the source's interface queue full.
    Saturated,
    /// Constant bit rate in kbit/s of IP packets.
    Cbr { rate_kbps: f64 },
}

/// Adaptive ping (`traffic = "echo"`, seed 003 §5.4; [`crate::echo`]).
#[derive(Clone, Debug, PartialEq)]
pub struct EchoFlow {
    /// The IP packet of a request and of its reply: ping's `-s` payload plus 28.
    pub packet_bytes: u32,
    /// `echo_timeout_s`: seconds after which an unanswered request is
    /// given up and the next one sent (default [`DEFAULT_ECHO_TIMEOUT_S`]).
    pub timeout_s: Option<f64>,
    /// Stop sending at this time (default: the end of the run).
    pub stop_s: Option<f64>,
    /// Keep the RTT samples (`rtt_s`) in the flow's result.
    pub trace: bool,
}

/// A transport transfer: `protocol` moves `amount` from `src` to `dst`.
#[derive(Clone, Debug, PartialEq)]
pub struct TransportFlow {
    /// One of [`Protocol::ALL`], by its scenario name (`atp-default` … `mtl`).
    pub protocol: Protocol,
    pub amount: Amount,
    /// A full data packet: IP + UDP + 36-byte transport header + payload
    /// (default 1500, which gives the engines' 1436-byte segments).
    pub packet_bytes: u32,
    /// Keep the engines' trace samples (D_max, D_avg, D_s, cwnd,
    /// retransmissions) in the flow's result.
    pub trace: bool,
    /// Record the times at which the data handed up crossed each multiple
    /// of this many full data packets (`TransferResult::delivery_milestones_s`),
    /// for the batch-means method (seed 004 §IV: batches of 5,000 packets);
    /// set by an experiment's `batch_means`.
    pub batch_packets: Option<u32>,
    /// `[flows.atp]` or `[flows.tcp]`: what differs from the protocol's preset.
    pub settings: TransportSettings,
    /// A slow reader at the destination (seed 002 §4.2.3); `None`: the
    /// application takes everything as it arrives.
    pub reader: Option<SlowReader>,
}

/// How much a transport or kernel TCP flow moves.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Amount {
    /// `bytes`: application bytes to deliver; the flow runs until every
    /// byte is acknowledged, or the run ends and it is reported incomplete.
    Bytes(u64),
    /// `stop_s`: a backlogged sender from `start_s` until this time.
    Until { stop_s: f64 },
}

impl Amount {
    /// The transfer size, `None` for a flow that runs until a time.
    pub fn bytes(self) -> Option<u64> {
        match self {
            Amount::Bytes(b) => Some(b),
            Amount::Until { .. } => None,
        }
    }
}

/// The overrides of a transport flow's preset.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum TransportSettings {
    /// The protocol's preset as it is.
    #[default]
    Preset,
    /// `[flows.atp]` (ATP protocols only). Boxed: a dozen optional numbers
    /// would make every flow of a scenario as large.
    Atp(Box<AtpOverrides>),
    /// `[flows.tcp]` (TCP protocols only).
    Tcp(TcpOverrides),
    /// `[flows.mtl]` (`mtl` only).
    Mtl(MtlOverrides),
}

/// The per-flow settings tables of a flow file, one per protocol family:
/// a flow takes the one [`settings_table`] names and no other (a sweep over
/// protocols keeps that one and drops the rest).
pub const SETTINGS_TABLES: [&str; 4] = ["atp", "tcp", "mtl", "congestion_control"];

/// The settings table of the protocol named `name` (`atp`, `tcp`, `mtl`,
/// or kernel TCP's `congestion_control`); `None` for an unknown name.
pub fn settings_table(name: &str) -> Option<&'static str> {
    if name == crate::scenario::KERNEL_TCP {
        return Some("congestion_control");
    }
    let protocol: Protocol = name.parse().ok()?;
    Some(if protocol.is_atp() {
        "atp"
    } else if protocol == Protocol::Mtl {
        "mtl"
    } else {
        "tcp"
    })
}

/// A slow reader (seed 002 §4.2.3): the application at the destination
/// reads at most `rate_bps` from the flow's start. ATP and TCP flows.
#[derive(Clone, Debug, PartialEq)]
pub struct SlowReader {
    /// `read_rate_bps`.
    pub rate_bps: u64,
    /// `read_rate_steps`: changes of the rate during the run, `{ at_s,
    /// rate_bps }` (simulated seconds; rate 0 stalls the reader).
    pub steps: Vec<ReadRateStep>,
    /// `receive_buffer_bytes`: the bytes the receiver holds unread or out
    /// of order at most (beyond it data is dropped). Default: 1 MiB for
    /// ATP (an epoch of quick-start,
    /// `meshbed_proto::connection::ATP_READER_BUFFER_BYTES`), the window
    /// for TCP (`tcp.max_cwnd_segments` segments).
    pub receive_buffer_bytes: Option<u64>,
}

/// What a flow sends, by the name of `traffic` (a transport flow has none).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Traffic {
    /// Keeps the source's interface queue full (a saturating UDP source).
    Saturated,
    /// Constant bit rate UDP at `rate_kbps`.
    Cbr,
    /// Adaptive ping (seed 003 §5.4; [`crate::echo`]): a request of
    /// `packet_bytes`, answered at once by a reply of the same size, the
    /// next request when the reply arrives or after `echo_timeout_s`.
    /// `packet_bytes` is the IP packet: ping's `-s` payload plus 28 (the
    /// ICMP header is as long as the UDP header it stands for).
    Echo,
}

/// One change of a slow reader's rate ([`SlowReader::steps`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadRateStep {
    /// When the rate changes, simulated seconds (after the flow's start
    /// and the step before).
    #[schemars(extend("exclusiveMinimum" = 0.0), range(max = MAX_DURATION_S))]
    pub at_s: f64,
    /// The reader's rate from then on (0 stalls it).
    #[schemars(range(max = MAX_READ_RATE_BPS))]
    pub rate_bps: u64,
}

impl Default for FlowSpec {
    /// A saturated 1500-byte UDP flow from node 0 to node 1 for the whole run.
    fn default() -> Self {
        FlowSpec::udp(0, 1, UdpRate::Saturated)
    }
}

impl FlowSpec {
    /// A UDP flow of `rate` in [`DEFAULT_PACKET_BYTES`] packets from `src`
    /// to `dst` for the whole run.
    pub fn udp(src: u32, dst: u32, rate: UdpRate) -> Self {
        let kind = FlowKind::Udp(UdpFlow { rate, packet_bytes: DEFAULT_PACKET_BYTES, stop_s: None });
        FlowSpec { src, dst, start_s: 0.0, kind }
    }

    /// A CBR flow of `rate_kbps` in `packet_bytes` packets from `src` to
    /// `dst` for the whole run.
    pub fn cbr(src: u32, dst: u32, rate_kbps: f64, packet_bytes: u32) -> Self {
        let kind = FlowKind::Udp(UdpFlow { rate: UdpRate::Cbr { rate_kbps }, packet_bytes, stop_s: None });
        FlowSpec { src, dst, start_s: 0.0, kind }
    }

    /// An echo flow of `packet_bytes` requests from `src` to `dst`.
    pub fn echo(src: u32, dst: u32, packet_bytes: u32) -> Self {
        let kind = FlowKind::Echo(EchoFlow { packet_bytes, timeout_s: None, stop_s: None, trace: false });
        FlowSpec { src, dst, start_s: 0.0, kind }
    }

    /// A transport transfer of `bytes` from `src` to `dst` starting at 0.
    pub fn transfer(src: u32, dst: u32, protocol: Protocol, bytes: u64) -> Self {
        let kind = FlowKind::Transport(TransportFlow::new(protocol, Amount::Bytes(bytes)));
        FlowSpec { src, dst, start_s: 0.0, kind }
    }

    /// The flow starting at `start_s`.
    pub fn starting_at(self, start_s: f64) -> Self {
        FlowSpec { start_s, ..self }
    }

    /// The transport transfer, if the flow is one.
    pub fn transport(&self) -> Option<&TransportFlow> {
        match &self.kind {
            FlowKind::Transport(t) => Some(t),
            _ => None,
        }
    }

    /// The transport transfer, if the flow is one, to change.
    pub fn transport_mut(&mut self) -> Option<&mut TransportFlow> {
        match &mut self.kind {
            FlowKind::Transport(t) => Some(t),
            _ => None,
        }
    }

    /// The kernel TCP transfer, if the flow is one.
    pub fn kernel_tcp(&self) -> Option<&KernelTcpFlow> {
        match &self.kind {
            FlowKind::KernelTcp(k) => Some(k),
            _ => None,
        }
    }

    /// Whether the destination answers the source (a transport's feedback
    /// and ACKs, the kernel's ACKs), so that the flow needs a route back.
    pub fn needs_route_back(&self) -> bool {
        match &self.kind {
            FlowKind::Transport(_) | FlowKind::KernelTcp(_) => true,
            FlowKind::Udp(_) | FlowKind::Echo(_) => false,
        }
    }

    /// The transport engine; `None` for UDP, echo and kernel TCP (which
    /// is not one of meshbed's engines: [`FlowSpec::kernel_tcp`]).
    pub fn protocol(&self) -> Option<Protocol> {
        self.transport().map(|t| t.protocol)
    }

    /// The UDP traffic kind; `None` for a transport or kernel TCP flow.
    pub fn traffic(&self) -> Option<Traffic> {
        match &self.kind {
            FlowKind::Udp(UdpFlow { rate: UdpRate::Saturated, .. }) => Some(Traffic::Saturated),
            FlowKind::Udp(UdpFlow { rate: UdpRate::Cbr { .. }, .. }) => Some(Traffic::Cbr),
            FlowKind::Echo(_) => Some(Traffic::Echo),
            FlowKind::Transport(_) | FlowKind::KernelTcp(_) => None,
        }
    }

    /// The IP packet size (a transport flow's full data packet; for kernel
    /// TCP, which sizes its own segments, the nodes' 1500-byte MTU that
    /// they fill).
    pub fn packet_bytes(&self) -> u32 {
        match &self.kind {
            FlowKind::Udp(u) => u.packet_bytes,
            FlowKind::Echo(e) => e.packet_bytes,
            FlowKind::Transport(t) => t.packet_bytes,
            FlowKind::KernelTcp(_) => DEFAULT_PACKET_BYTES,
        }
    }

    /// The IP packet size, to change; `None` for kernel TCP, which has no
    /// `packet_bytes` key (the kernel sizes its segments).
    pub fn packet_bytes_mut(&mut self) -> Option<&mut u32> {
        match &mut self.kind {
            FlowKind::Udp(u) => Some(&mut u.packet_bytes),
            FlowKind::Echo(e) => Some(&mut e.packet_bytes),
            FlowKind::Transport(t) => Some(&mut t.packet_bytes),
            FlowKind::KernelTcp(_) => None,
        }
    }

    /// When the flow stops sending, if before the end of the run.
    pub fn stop_s(&self) -> Option<f64> {
        match &self.kind {
            FlowKind::Udp(u) => u.stop_s,
            FlowKind::Echo(e) => e.stop_s,
            FlowKind::Transport(TransportFlow { amount, .. }) | FlowKind::KernelTcp(KernelTcpFlow { amount, .. }) => {
                match amount {
                    Amount::Until { stop_s } => Some(*stop_s),
                    Amount::Bytes(_) => None,
                }
            }
        }
    }

    /// Whether the flow keeps trace samples (a transport or echo flow's `trace`).
    pub fn trace(&self) -> bool {
        match &self.kind {
            FlowKind::Udp(_) | FlowKind::KernelTcp(_) => false,
            FlowKind::Echo(e) => e.trace,
            FlowKind::Transport(t) => t.trace,
        }
    }

    /// The bytes of one batch of `batch_packets` full data packets, `None`
    /// when the flow records no delivery milestones.
    pub fn batch_bytes(&self) -> Option<u64> {
        self.transport().and_then(TransportFlow::batch_bytes)
    }
}

impl TransportFlow {
    /// A transfer with the protocol's preset and [`DEFAULT_PACKET_BYTES`] packets.
    pub fn new(protocol: Protocol, amount: Amount) -> Self {
        TransportFlow {
            protocol,
            amount,
            packet_bytes: DEFAULT_PACKET_BYTES,
            trace: false,
            batch_packets: None,
            settings: TransportSettings::Preset,
            reader: None,
        }
    }

    /// Application bytes in one full data packet.
    pub fn payload_bytes(&self) -> u64 {
        u64::from(self.packet_bytes.saturating_sub(IP_UDP_HEADER_BYTES + TRANSPORT_HEADER_BYTES as u32))
    }

    /// The bytes of one batch of `batch_packets` full data packets, `None`
    /// when the flow records no delivery milestones.
    pub fn batch_bytes(&self) -> Option<u64> {
        self.batch_packets.map(|n| u64::from(n) * self.payload_bytes())
    }

    /// `[flows.atp]`, if given.
    pub fn atp(&self) -> Option<&AtpOverrides> {
        match &self.settings {
            TransportSettings::Atp(a) => Some(a.as_ref()),
            _ => None,
        }
    }

    /// `[flows.tcp]`, if given.
    pub fn tcp(&self) -> Option<&TcpOverrides> {
        match &self.settings {
            TransportSettings::Tcp(t) => Some(t),
            _ => None,
        }
    }

    /// `[flows.mtl]`, if given.
    pub fn mtl(&self) -> Option<&MtlOverrides> {
        match &self.settings {
            TransportSettings::Mtl(m) => Some(m),
            _ => None,
        }
    }
}

/// `[flows.atp]`: ATP parameters that differ from the protocol's preset
/// (meshbed_proto::atp::AtpConfig documents each); absent keys keep the
/// preset's.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AtpOverrides {
    /// The epoch E: how often the receiver feeds the rate back (seed 002 §4.2).
    #[schemars(range(min = *ENGINE_PERIOD_S.start(), max = *ENGINE_PERIOD_S.end()))]
    pub epoch_s: Option<f64>,
    /// The increase factor κ (seed 002 §4.2.2).
    #[schemars(extend("exclusiveMinimum" = 0.0), range(max = 1.0))]
    pub kappa: Option<f64>,
    /// The increase threshold φ, a margin on the rate (seed 002 §4.2.2).
    #[schemars(range(min = *ATP_PHI.start(), max = *ATP_PHI.end()))]
    pub phi: Option<f64>,
    /// The relays' EWMA weight α of the queueing and transmission delay
    /// (seed 002 §4.1).
    #[schemars(range(min = 0.0), extend("exclusiveMaximum" = 1.0))]
    pub alpha: Option<f64>,
    /// The receiver's EWMA weight β of the delays it is told (seed 002 §4.1).
    #[schemars(range(min = 0.0), extend("exclusiveMaximum" = 1.0))]
    pub beta: Option<f64>,
    /// The idle multiplier η of a relay's delay when it is idle (seed 001
    /// §3.1).
    #[schemars(range(min = *ATP_ETA.start(), max = *ATP_ETA.end()))]
    pub eta: Option<f64>,
    /// Silence after which a connection fails.
    #[schemars(range(min = *IDLE_TIMEOUT_S.start(), max = *IDLE_TIMEOUT_S.end()))]
    pub idle_timeout_s: Option<f64>,
    /// The sender's reaction to a "route failed" notice: `probe` (the
    /// preset's: connection initiation again, seed 002 §4.3.3),
    /// `probe-while-sending`, or `ignore`.
    pub route_failure: Option<RouteFailure>,
    /// Silence allowed while the route is reported down.
    #[schemars(range(min = *IDLE_TIMEOUT_S.start(), max = *IDLE_TIMEOUT_S.end()))]
    pub route_outage_timeout_s: Option<f64>,
    /// How stale the delay a relay stamps may be: it reads its node's
    /// average at most this often (0, the default: at each packet's own
    /// instant, as seed 002's simulation). Seed 001's testbed read it from
    /// `/proc` (§3.1); the emulator's relays read an export up to 20 ms old.
    /// A sensitivity check; the simulator only.
    #[schemars(range(min = *DELAY_READ_INTERVAL_S.start(), max = *DELAY_READ_INTERVAL_S.end()))]
    pub delay_read_interval_s: Option<f64>,
    /// How long, in epochs, the receiver hears no data before it sets
    /// SACK-MORE, which makes the sender resend everything unacknowledged
    /// (seed 001 §3.3: half an epoch). A sensitivity check; the simulator
    /// only.
    #[schemars(range(min = *SACK_MORE_FRACTION.start(), max = *SACK_MORE_FRACTION.end()))]
    pub sack_more_fraction: Option<f64>,
    /// The factor each missed feedback multiplies the sending rate by,
    /// before the third miss restarts quick-start (the engine's 0.5; seed
    /// 002 §4.3.2 names a multiplicative decrease without its factor). A
    /// sensitivity check; the simulator only.
    #[schemars(range(min = *MISSED_FEEDBACK_DECREASE.start(), max = *MISSED_FEEDBACK_DECREASE.end()))]
    pub missed_feedback_decrease: Option<f64>,
    /// How long each relay holds the flow's packets before it stamps them
    /// and hands them to its MAC (0, the default: at once, as seed 002's
    /// simulation). A user-space relay daemon takes a netfilter round
    /// trip (seed 001 §3.2's daemon; the emulator's `meshbed relay`, whose
    /// frames also cross a TAP device): a relay that hands a frame over
    /// after the medium has been idle for a DIFS sends it without a
    /// backoff, so its delay D reads lower. A sensitivity check; the
    /// simulator only.
    #[schemars(range(min = *RELAY_FORWARDING_DELAY_S.start(), max = *RELAY_FORWARDING_DELAY_S.end()))]
    pub relay_forwarding_delay_s: Option<f64>,
}

/// `[flows.atp] route_failure` (meshbed_proto::atp::RouteFailureReaction).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RouteFailure {
    /// Stop and probe the path as at connection initiation (seed 002 §4.3.3).
    Probe,
    /// Probe the path while still sending at the last rate.
    ProbeWhileSending,
    /// Carry on as if nothing happened.
    Ignore,
}

/// `[flows.tcp]`: TCP parameters that differ from the defaults
/// (meshbed_proto::tcp::TcpConfig documents each); absent keys keep the
/// defaults.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TcpOverrides {
    /// The congestion window at the start, segments.
    #[schemars(range(min = 1, max = MAX_CWND_SEGMENTS))]
    pub initial_cwnd_segments: Option<u32>,
    /// The largest congestion window (and the receiver's window), segments.
    #[schemars(range(min = 1, max = MAX_CWND_SEGMENTS))]
    pub max_cwnd_segments: Option<u32>,
    /// The smallest retransmission timeout.
    #[schemars(range(min = *ENGINE_PERIOD_S.start(), max = *ENGINE_PERIOD_S.end()))]
    pub min_rto_s: Option<f64>,
    /// The receiver delays its ACKs (one per two segments, RFC 1122 §4.2.3.2).
    pub delayed_acks: Option<bool>,
    /// How long a delayed ACK waits for a second segment (absent: 200 ms,
    /// the common value; Linux's timer is its ATO, 40 ms for a bulk
    /// receiver, and at most the smoothed RTT). Needs `delayed_acks`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = *DELAYED_ACK_TIMEOUT_S.start(), max = *DELAYED_ACK_TIMEOUT_S.end()))]
    pub delayed_ack_timeout_s: Option<f64>,
    /// Silence after which a connection fails.
    #[schemars(range(min = *IDLE_TIMEOUT_S.start(), max = *IDLE_TIMEOUT_S.end()))]
    pub idle_timeout_s: Option<f64>,
    /// Pacing aggressiveness V (`tcp-reno-paced` and `tcp-newreno-paced`
    /// only; absent: 1, seed 003 §6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = *PACING_V.start(), max = *PACING_V.end()))]
    pub pacing_v: Option<f64>,
    /// HyStart++ in the initial slow start (RFC 9406; `tcp-cubic` only;
    /// absent: on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hystart: Option<bool>,
    /// RACK-TLP loss detection (RFC 8985; `tcp-sack`, `tcp-cubic` and
    /// `tcp-bbr` only; absent: on, as in Linux); off: RFC 6675's
    /// duplicate-ACK threshold (not for `tcp-bbr`, which always runs it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rack_tlp: Option<bool>,
    /// Proportional Rate Reduction (RFC 6937) as the window in fast
    /// recovery (`tcp-sack` and `tcp-cubic` only; absent: off, RFC 6675's
    /// cwnd = ssthresh for the whole recovery); Linux runs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prr: Option<bool>,
    /// How long each relay holds this flow's packets before queueing them,
    /// as `[flows.atp] relay_forwarding_delay_s` does for ATP: the
    /// emulator's forwarding round trip, set in the simulator to tell the
    /// emulator's timing from the rest (issue 27's Linux anchor). A
    /// sensitivity check; the simulator only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = *RELAY_FORWARDING_DELAY_S.start(), max = *RELAY_FORWARDING_DELAY_S.end()))]
    pub relay_forwarding_delay_s: Option<f64>,
    /// How long each end of the flow holds the flow's packets that reach
    /// it before its engine takes them: the emulator's user-space endpoint
    /// (its socket and the runtime's wake-up), set in the simulator to tell
    /// that timing from the rest, as `relay_forwarding_delay_s` does for
    /// the relays (issue 27's Linux anchor). A sensitivity check; the
    /// simulator only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = *RELAY_FORWARDING_DELAY_S.start(), max = *RELAY_FORWARDING_DELAY_S.end()))]
    pub endpoint_delay_s: Option<f64>,
}

/// `[flows.mtl]`: MTL parameters that differ from the defaults
/// (meshbed_proto::mtl::MtlConfig documents each); absent keys keep the
/// defaults.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MtlOverrides {
    /// The EWMA weight α of the old forward-hop delay average (seed 004
    /// §III.C.2.c, Eq. 10; absent: the paper's 0.7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.0, max = 1.0))]
    pub alpha: Option<f64>,
    /// The sending buffer: bytes sent and not yet known received (seed 004
    /// §III.C.1; absent: the paper's 200 kbytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = MAX_RECEIVE_BUFFER_BYTES))]
    pub send_buffer_bytes: Option<u64>,
    /// Silence after which a connection fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = *IDLE_TIMEOUT_S.start(), max = *IDLE_TIMEOUT_S.end()))]
    pub idle_timeout_s: Option<f64>,
}

/// Echo traffic's default `echo_timeout_s` ([`crate::echo`]).
pub const DEFAULT_ECHO_TIMEOUT_S: f64 = 1.0;

/// A flow's IP packet size when the file gives none: Ethernet's MTU, which
/// gives the engines' 1436-byte segments (and the UDP runtime's).
pub const DEFAULT_PACKET_BYTES: u32 = 1500;

/// IP + UDP header bytes: the part of a packet that is not goodput.
pub const IP_UDP_HEADER_BYTES: u32 = 28;

impl Scenario {
    /// The data transport flow `i`'s sender has to send: its `bytes`, or
    /// for a flow that runs for a duration more than its source's PHY rate
    /// could carry until its stop, so that it never runs dry. 0 for a UDP
    /// or echo flow, and for kernel TCP, whose data is generated as it is
    /// sent. The emulator holds all of it; the simulator at most
    /// [`Scenario::sender_held_bytes`].
    pub fn sender_data_bytes(&self, i: usize) -> u64 {
        use meshbed_core::{Duration, Instant};
        let f = &self.flows[i];
        match f.transport().map(|t| t.amount) {
            None => 0,
            Some(Amount::Bytes(bytes)) => bytes,
            Some(Amount::Until { stop_s }) => {
                let end = Instant::ZERO + Duration::from_secs_f64(self.duration_s);
                let start = Instant::ZERO + Duration::from_secs_f64(f.start_s);
                let stop = (Instant::ZERO + Duration::from_secs_f64(stop_s)).min(end);
                let rate_bps = self.data_rate_kbps(f.src) as f64 * 1000.0;
                (stop.saturating_since(start).as_secs_f64() * rate_bps / 8.0).ceil() as u64 + 1
            }
        }
    }

    /// The most of transport flow `i`'s data its simulated sender holds at
    /// once: all of it up to the send window, else the window, which it
    /// writes from the flow's stream as acknowledgements free it
    /// (`transport::SEND_WINDOW_BYTES`). It does not grow with the flow's
    /// running time (issue 28: a 100 s flow of the ATP paper's network
    /// once held 25 MB from the start).
    pub fn sender_held_bytes(&self, i: usize) -> u64 {
        self.sender_data_bytes(i).min(crate::transport::SEND_WINDOW_BYTES)
    }
}
