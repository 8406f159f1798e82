//! `[[flows]]`: what each flow sends, and the checks of its keys.

use super::error::{invalid, within, ScenarioError};
use super::limits::*;
use super::Scenario;
use meshbed_proto::wire::HEADER_LEN as TRANSPORT_HEADER_BYTES;
use meshbed_proto::Protocol;
use serde::{Deserialize, Serialize};

/// What a flow sends.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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

/// One flow: UDP traffic (no `protocol`) or a transport transfer.
///
/// A UDP flow is described by `traffic`, `rate_kbps`, `packet_bytes`,
/// `start_s` and `stop_s`. A transport flow names its `protocol` and either
/// moves `bytes` application bytes from `src` to `dst` starting at `start_s`
/// (it runs until every byte is acknowledged, or the run ends and it is
/// reported incomplete), or runs from `start_s` until `stop_s` with a
/// backlogged sender. For a transport flow `packet_bytes` is the size of a
/// full data packet (IP + UDP + 36-byte transport header + payload, default
/// 1500, which gives the engines' default 1436-byte segments); `traffic` is
/// ignored and `rate_kbps` is rejected.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    pub src: u32,
    pub dst: u32,
    #[serde(default = "default_traffic")]
    pub traffic: Traffic,
    /// IP packet size in bytes (20-byte IP and 8-byte UDP headers included).
    #[serde(default = "default_packet_bytes")]
    pub packet_bytes: u32,
    /// CBR rate in kbit/s of IP packets (CBR only).
    #[serde(default)]
    pub rate_kbps: Option<f64>,
    #[serde(default)]
    pub start_s: f64,
    /// Stop sending at this time: for UDP, default the end of the run; for a
    /// transport flow, instead of `bytes`, it runs for a duration.
    #[serde(default)]
    pub stop_s: Option<f64>,
    /// Echo traffic: seconds after which an unanswered request is given up
    /// and the next one sent (default 1, [`crate::echo`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub echo_timeout_s: Option<f64>,
    /// Transport protocol (one of [`Protocol::ALL`], by its scenario name,
    /// `atp-default` … `mtl`). Absent: UDP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    /// Application bytes a transport flow transfers (required with `protocol`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// Keep the engines' trace samples (D_max, D_avg, D_s, cwnd,
    /// retransmissions) in the flow's result. Transport flows, and echo
    /// flows (their RTT samples, `rtt_s`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trace: bool,
    /// Record the times at which the data handed up crossed each multiple
    /// of this many full data packets (`FlowResult::delivery_milestones_s`),
    /// for the batch-means method (seed 004 §IV: batches of 5,000 packets).
    /// Transport flows only; set by an experiment's `batch_means`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_packets: Option<u32>,
    /// Overrides of the ATP preset (ATP protocols only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub atp: Option<AtpOverrides>,
    /// Overrides of the TCP defaults (TCP protocols only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<TcpOverrides>,
    /// A slow reader (seed 002 §4.2.3): the application at the destination
    /// reads at most this many bits per second from the flow's start.
    /// Absent: it takes everything as it arrives. ATP and TCP flows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_rate_bps: Option<u64>,
    /// Changes of the reader's rate during the run, `{ at_s, rate_bps }`
    /// (simulated seconds; rate 0 stalls the reader). Needs `read_rate_bps`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_rate_steps: Vec<ReadRateStep>,
    /// With a reader rate: the bytes the receiver holds unread or out of
    /// order at most (ATP's and TCP's receive buffer; beyond it data is
    /// dropped). Default: 1 MiB for ATP (an epoch of quick-start,
    /// `meshbed_proto::connection::ATP_READER_BUFFER_BYTES`), the window
    /// for TCP (`tcp.max_cwnd_segments` segments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receive_buffer_bytes: Option<u64>,
}

/// One change of a slow reader's rate ([`FlowSpec::read_rate_steps`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadRateStep {
    /// When the rate changes, seconds of simulated time.
    pub at_s: f64,
    pub rate_bps: u64,
}

impl Default for FlowSpec {
    /// A saturated 1500-byte UDP flow from node 0 to node 1 for the whole run.
    fn default() -> Self {
        FlowSpec {
            src: 0,
            dst: 1,
            traffic: Traffic::Saturated,
            packet_bytes: 1500,
            rate_kbps: None,
            start_s: 0.0,
            stop_s: None,
            echo_timeout_s: None,
            protocol: None,
            bytes: None,
            trace: false,
            batch_packets: None,
            atp: None,
            tcp: None,
            read_rate_bps: None,
            read_rate_steps: Vec::new(),
            receive_buffer_bytes: None,
        }
    }
}

impl FlowSpec {
    /// A transport transfer of `bytes` from `src` to `dst` starting at 0.
    pub fn transfer(src: u32, dst: u32, protocol: Protocol, bytes: u64) -> Self {
        FlowSpec { src, dst, protocol: Some(protocol), bytes: Some(bytes), ..FlowSpec::default() }
    }

    /// Application bytes in one full data packet of a transport flow.
    pub fn payload_bytes(&self) -> u64 {
        u64::from(self.packet_bytes.saturating_sub(IP_UDP_HEADER_BYTES + TRANSPORT_HEADER_BYTES as u32))
    }

    /// The bytes of one batch of `batch_packets` full data packets, `None`
    /// when the flow records no delivery milestones.
    pub fn batch_bytes(&self) -> Option<u64> {
        self.batch_packets.map(|n| u64::from(n) * self.payload_bytes())
    }
}

/// `[flows.atp]`: ATP parameters that differ from the protocol's preset
/// (meshbed_proto::atp::AtpConfig documents each).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AtpOverrides {
    /// Epoch E, seconds.
    pub epoch_s: Option<f64>,
    /// Increase factor κ.
    pub kappa: Option<f64>,
    /// Increase threshold φ.
    pub phi: Option<f64>,
    /// Relay EWMA weight α.
    pub alpha: Option<f64>,
    /// Receiver EWMA weight β.
    pub beta: Option<f64>,
    /// Idle multiplier η.
    pub eta: Option<f64>,
    /// Silence after which a connection fails, seconds.
    pub idle_timeout_s: Option<f64>,
    /// The sender's reaction to a "route failed" notice: `probe` (the
    /// default: connection initiation, seed 002 §4.3.3),
    /// `probe-while-sending`, or `ignore`.
    pub route_failure: Option<RouteFailure>,
    /// Silence allowed while the route is reported down, seconds.
    pub route_outage_timeout_s: Option<f64>,
}

/// `[flows.atp] route_failure` (meshbed_proto::atp::RouteFailureReaction).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RouteFailure {
    Probe,
    ProbeWhileSending,
    Ignore,
}

/// `[flows.tcp]`: TCP parameters that differ from the defaults
/// (meshbed_proto::tcp::TcpConfig documents each).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcpOverrides {
    pub initial_cwnd_segments: Option<u32>,
    pub max_cwnd_segments: Option<u32>,
    pub min_rto_s: Option<f64>,
    pub delayed_acks: Option<bool>,
    /// Silence after which a connection fails, seconds.
    pub idle_timeout_s: Option<f64>,
    /// Pacing aggressiveness V (paced protocols only; default 1, seed 003 §6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacing_v: Option<f64>,
}

/// Echo traffic's default `echo_timeout_s` ([`crate::echo`]).
pub const DEFAULT_ECHO_TIMEOUT_S: f64 = 1.0;

fn default_traffic() -> Traffic {
    Traffic::Saturated
}
/// A flow's IP packet size when the file gives none: Ethernet's MTU, which
/// gives the engines' 1436-byte segments (and the UDP runtime's).
pub const DEFAULT_PACKET_BYTES: u32 = 1500;

fn default_packet_bytes() -> u32 {
    DEFAULT_PACKET_BYTES
}

/// IP + UDP header bytes: the part of a packet that is not goodput.
pub const IP_UDP_HEADER_BYTES: u32 = 28;

impl Scenario {
    /// The data transport flow `i`'s sender holds: its `bytes`, or for a
    /// flow that runs for a duration more than its source's PHY rate could
    /// carry until its stop, so that it never runs dry.
    pub fn sender_data_bytes(&self, i: usize) -> u64 {
        use meshbed_core::{Duration, Instant};
        let f = &self.flows[i];
        f.bytes.unwrap_or_else(|| {
            let end = Instant::ZERO + Duration::from_secs_f64(self.duration_s);
            let start = Instant::ZERO + Duration::from_secs_f64(f.start_s);
            let stop = f.stop_s.map_or(end, |s| Instant::ZERO + Duration::from_secs_f64(s)).min(end);
            let rate_bps = self.data_rate_kbps(f.src) as f64 * 1000.0;
            (stop.saturating_since(start).as_secs_f64() * rate_bps / 8.0).ceil() as u64 + 1
        })
    }

    /// Checks of the listed flows (the topology already checked).
    pub(super) fn validate_flows(&self) -> Result<(), ScenarioError> {
        if self.flows.len() > MAX_FLOWS {
            return Err(invalid(
                "flows",
                format!("({} flows)", self.flows.len()),
                format!("at most {MAX_FLOWS} flows"),
            ));
        }
        let n = self.node_count();
        let mut sender_data = 0u64;
        for (i, f) in self.flows.iter().enumerate() {
            let key = |k: &str| format!("flows[{i}].{k}");
            if f.src >= n {
                return Err(invalid(key("src"), f.src, format!("a node index below {n}")));
            }
            if f.dst >= n {
                return Err(invalid(key("dst"), f.dst, format!("a node index below {n}")));
            }
            if f.src == f.dst {
                return Err(invalid(key("dst"), f.dst, "a node other than src"));
            }
            if !(f.start_s >= 0.0 && f.start_s < self.duration_s) {
                return Err(invalid(
                    key("start_s"),
                    f.start_s,
                    format!("a start time in [0, duration_s = {})", self.duration_s),
                ));
            }
            if let Some(stop) = f.stop_s {
                // Finite so that it is a time; beyond duration_s the run's end stops the flow.
                if !(stop > f.start_s && stop.is_finite()) {
                    return Err(invalid(key("stop_s"), stop, "a stop time after start_s"));
                }
            }
            if let Some(protocol) = f.protocol {
                self.check_path_info_source(i, protocol)?;
                f.validate_transport(i, protocol)?;
                sender_data = sender_data.saturating_add(self.sender_data_bytes(i));
                if sender_data > MAX_SENDER_DATA_BYTES {
                    let (k, value) = match (f.bytes, f.stop_s) {
                        (Some(b), _) => ("bytes", b.to_string()),
                        (None, Some(s)) => ("stop_s", s.to_string()),
                        (None, None) => ("bytes", "(missing)".to_string()),
                    };
                    return Err(invalid(
                        key(k),
                        value,
                        format!(
                            "transport data that fits in memory: all senders together hold at most {MAX_SENDER_DATA_BYTES} bytes, and with this flow they hold {sender_data} (a flow with stop_s holds its source's PHY rate × its running time)"
                        ),
                    ));
                }
                continue;
            }
            for (k, given) in [
                ("bytes", f.bytes.is_some()),
                ("atp", f.atp.is_some()),
                ("tcp", f.tcp.is_some()),
                ("batch_packets", f.batch_packets.is_some()),
                ("read_rate_bps", f.read_rate_bps.is_some()),
                ("read_rate_steps", !f.read_rate_steps.is_empty()),
                ("receive_buffer_bytes", f.receive_buffer_bytes.is_some()),
            ] {
                if given {
                    return Err(invalid(
                        key(k),
                        "(given)",
                        "nothing: this key belongs to transport flows (set `protocol`)",
                    ));
                }
            }
            // Echo flows trace their RTT samples.
            if f.trace && f.traffic != Traffic::Echo {
                return Err(invalid(
                    key("trace"),
                    "(given)",
                    "nothing: this key belongs to transport and echo flows (set `protocol` or traffic = \"echo\")",
                ));
            }
            within(
                key("packet_bytes"),
                f.packet_bytes,
                IP_UDP_HEADER_BYTES + 1..=MAX_PACKET_BYTES,
                "an IP packet size in bytes",
            )?;
            match (f.traffic, f.rate_kbps) {
                (Traffic::Cbr, None) => return Err(invalid(key("rate_kbps"), "(missing)", "a CBR rate in kbit/s")),
                (Traffic::Cbr, Some(r)) => {
                    let phy = self.data_rate_kbps(f.src) as f64;
                    within(
                        key("rate_kbps"),
                        r,
                        MIN_CBR_RATE_KBPS..=phy,
                        "a CBR rate in kbit/s (at most the source's PHY data rate)",
                    )?
                }
                (Traffic::Saturated, Some(r)) => {
                    return Err(invalid(
                        key("rate_kbps"),
                        r,
                        "no rate: a saturated source sends as fast as the MAC takes packets",
                    ))
                }
                (Traffic::Echo, Some(r)) => {
                    return Err(invalid(
                        key("rate_kbps"),
                        r,
                        "no rate: an echo source sends its next request when the reply arrives",
                    ))
                }
                _ => {}
            }
            match (f.traffic, f.echo_timeout_s) {
                (Traffic::Echo, Some(t)) => within(key("echo_timeout_s"), t, ENGINE_PERIOD_S, "a timeout in seconds")?,
                (_, Some(t)) => {
                    return Err(invalid(key("echo_timeout_s"), t, "nothing: this key belongs to echo flows"))
                }
                _ => {}
            }
        }
        Ok(())
    }
}

impl FlowSpec {
    /// Checks of a slow reader's keys (`read_rate_bps`, `read_rate_steps`,
    /// `receive_buffer_bytes`) on transport flow `i`.
    fn validate_reader(&self, i: usize, protocol: Protocol) -> Result<(), ScenarioError> {
        let key = |k: &str| format!("flows[{i}].{k}");
        let Some(rate) = self.read_rate_bps else {
            for (k, given) in [
                ("read_rate_steps", !self.read_rate_steps.is_empty()),
                ("receive_buffer_bytes", self.receive_buffer_bytes.is_some()),
            ] {
                if given {
                    return Err(invalid(
                        key(k),
                        "(given)",
                        "nothing without read_rate_bps (the reader's rate from the flow's start)",
                    ));
                }
            }
            return Ok(());
        };
        if protocol == Protocol::Mtl {
            return Err(invalid(
                key("read_rate_bps"),
                rate,
                "no reader rate: mtl's receiver has no flow control (ATP and TCP flows take one)",
            ));
        }
        let rates = "a reader rate in bit/s (0 stalls the reader)";
        within(key("read_rate_bps"), rate, 0..=MAX_READ_RATE_BPS, rates)?;
        let mut previous_s = self.start_s;
        for (k, step) in self.read_rate_steps.iter().enumerate() {
            let k = |field: &str| key(&format!("read_rate_steps[{k}].{field}"));
            if !(step.at_s.is_finite() && step.at_s > previous_s && step.at_s <= MAX_DURATION_S) {
                return Err(invalid(
                    k("at_s"),
                    step.at_s,
                    format!("a time in seconds after the flow's start and the step before ({previous_s})"),
                ));
            }
            previous_s = step.at_s;
            within(k("rate_bps"), step.rate_bps, 0..=MAX_READ_RATE_BPS, rates)?;
        }
        if let Some(b) = self.receive_buffer_bytes {
            within(
                key("receive_buffer_bytes"),
                b,
                self.payload_bytes().max(1)..=MAX_RECEIVE_BUFFER_BYTES,
                "a receive buffer in bytes, at least one full packet's payload",
            )?;
        }
        Ok(())
    }

    /// Checks of a transport flow (index `i`, protocol already parsed;
    /// endpoints, start and stop times already checked).
    fn validate_transport(&self, i: usize, protocol: Protocol) -> Result<(), ScenarioError> {
        let key = |k: &str| format!("flows[{i}].{k}");
        // A transport flow either moves `bytes` or runs until `stop_s`
        // (issue 3: "move a number of bytes or run for a duration"); the
        // data it holds is bounded with the other flows' (MAX_SENDER_DATA_BYTES).
        match (self.bytes, self.stop_s) {
            (None, None) => {
                return Err(invalid(
                    key("bytes"),
                    "(missing)",
                    "the transfer size in bytes of a transport flow, or a stop_s for a flow that runs for a duration",
                ))
            }
            (Some(_), Some(stop)) => {
                return Err(invalid(key("stop_s"), stop, "either bytes or stop_s for a transport flow, not both"))
            }
            (Some(0), None) => return Err(invalid(key("bytes"), 0, "a transfer of at least one byte")),
            _ => {}
        }
        if let Some(n) = self.batch_packets {
            within(key("batch_packets"), n, 1..=MAX_BATCH_PACKETS, "full data packets per batch")?;
        }
        let min_packet = IP_UDP_HEADER_BYTES + TRANSPORT_HEADER_BYTES as u32 + 1;
        within(
            key("packet_bytes"),
            self.packet_bytes,
            min_packet..=MAX_PACKET_BYTES,
            &format!(
                "a full data packet size in bytes (IP, UDP and the {TRANSPORT_HEADER_BYTES}-byte transport header included)"
            ),
        )?;
        if self.traffic != Traffic::Saturated {
            let kind = if self.traffic == Traffic::Cbr { "\"cbr\"" } else { "\"echo\"" };
            return Err(invalid(key("traffic"), kind, format!("no traffic kind: {protocol} paces itself")));
        }
        if let Some(t) = self.echo_timeout_s {
            return Err(invalid(key("echo_timeout_s"), t, "nothing: this key belongs to echo flows"));
        }
        if let Some(r) = self.rate_kbps {
            return Err(invalid(key("rate_kbps"), r, format!("no rate: {protocol} chooses its own")));
        }
        let check = |k: &str, v: Option<f64>, range: std::ops::RangeInclusive<f64>, what: &str| match v {
            Some(x) => within(key(k), x, range, what),
            None => Ok(()),
        };
        // Fractions in [0, 1): at 1 an average would never move.
        let fraction = |k: &str, v: Option<f64>| match v {
            Some(x) if !(0.0..1.0).contains(&x) => Err(invalid(key(k), x, "a weight in [0, 1)")),
            _ => Ok(()),
        };
        self.validate_reader(i, protocol)?;
        if let Some(a) = &self.atp {
            if !protocol.is_atp() {
                return Err(invalid(key("atp"), "(given)", format!("no [flows.atp] table: {protocol} is not ATP")));
            }
            check("atp.epoch_s", a.epoch_s, ENGINE_PERIOD_S, "an epoch in seconds")?;
            check("atp.idle_timeout_s", a.idle_timeout_s, IDLE_TIMEOUT_S, "a timeout in seconds")?;
            check("atp.route_outage_timeout_s", a.route_outage_timeout_s, IDLE_TIMEOUT_S, "a timeout in seconds")?;
            // η multiplies a node's delay when it is idle (3 in the documents).
            check("atp.eta", a.eta, 0.001..=100.0, "an idle multiplier")?;
            fraction("atp.alpha", a.alpha)?;
            fraction("atp.beta", a.beta)?;
            if let Some(k) = a.kappa {
                if !(k > 0.0 && k <= 1.0) {
                    return Err(invalid(key("atp.kappa"), k, "an increase factor in (0, 1]"));
                }
            }
            // φ is a margin on the rate (0.1 in the documents); 10 would
            // already mean "never increase".
            check("atp.phi", a.phi, 0.0..=10.0, "an increase threshold")?;
        }
        if let Some(t) = &self.tcp {
            if protocol.is_atp() {
                return Err(invalid(key("tcp"), "(given)", format!("no [flows.tcp] table: {protocol} is not TCP")));
            }
            check("tcp.min_rto_s", t.min_rto_s, ENGINE_PERIOD_S, "a minimum RTO in seconds")?;
            check("tcp.idle_timeout_s", t.idle_timeout_s, IDLE_TIMEOUT_S, "a timeout in seconds")?;
            if let Some(v) = t.pacing_v {
                if !protocol.is_paced() {
                    return Err(invalid(
                        key("tcp.pacing_v"),
                        v,
                        format!("nothing: {protocol} does not pace (tcp-reno-paced and tcp-newreno-paced do)"),
                    ));
                }
                // V scales the rate: 0.01 is a hundredth of a window per
                // RTT, 100 a hundred windows, both far past any use.
                check("tcp.pacing_v", Some(v), 0.01..=100.0, "a pacing aggressiveness V")?;
            }
            for (k, v) in
                [("tcp.initial_cwnd_segments", t.initial_cwnd_segments), ("tcp.max_cwnd_segments", t.max_cwnd_segments)]
            {
                if let Some(v) = v {
                    within(key(k), v, 1..=MAX_CWND_SEGMENTS, "a window in segments")?;
                }
            }
        }
        Ok(())
    }
}
