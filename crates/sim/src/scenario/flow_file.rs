//! The flat form of a `[[flows]]` entry and its conversion to and from the
//! typed [`FlowSpec`]: the one place that decides which keys go with which
//! kind of flow.

use super::error::{invalid, ScenarioError};
use super::flows::*;
use super::kernel_tcp::{CongestionControl, KernelTcpFlow, KERNEL_TCP};
use super::limits::*;
use meshbed_proto::Protocol;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A flow as the file writes it: one flat table whose keys the kind of
/// flow decides (UDP traffic without `protocol`, a transport transfer with
/// it). [`FlowSpec`] reads and writes itself through this form, so that
/// files, experiment trees and sweep keys (`flows[*].atp.epoch_s`) keep
/// their shape; [`FlowFile::into_spec`] refuses a key of another kind.
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
///
/// A kernel TCP flow (`protocol = "kernel-tcp"`, [`KernelTcpFlow`]) takes
/// `bytes` or `stop_s` as a transport flow does, and `congestion_control`
/// (default `cubic`); every key of UDP traffic and of meshbed's engines
/// (`traffic`, `rate_kbps`, `packet_bytes`, `trace`, `batch_packets`,
/// `[flows.atp]`, `[flows.tcp]`, the slow reader's) is refused by name, and
/// `congestion_control` on any other flow too.
///
/// Its doc comments are the `[[flows]]` keys' reference (`docs/KEYS.md`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "Flow")]
pub(super) struct FlowFile {
    /// The source node's number (below the node count).
    src: u32,
    /// The destination node's number (below the node count, not `src`).
    dst: u32,
    /// UDP traffic: `"saturated"` (the source's interface queue kept
    /// full), `"cbr"` (at `rate_kbps`) or `"echo"` (adaptive ping). A
    /// transport flow paces itself and ignores it.
    // An `Option` so that a kernel TCP flow can tell it was given; written
    // for every other kind, as always.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(default = "default_traffic")]
    traffic: Option<Traffic>,
    /// The IP packet size (20-byte IP and 8-byte UDP headers included); of
    /// a transport flow, the size of a full data packet, at least 65 (with
    /// the 36-byte transport header: 1500 gives 1436-byte segments). Not
    /// for kernel TCP.
    // An `Option` as `traffic`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(default = "default_packet_bytes", range(min = IP_UDP_HEADER_BYTES + 1, max = MAX_PACKET_BYTES))]
    packet_bytes: Option<u32>,
    /// The rate of CBR traffic in IP packets, at most the source's PHY data
    /// rate (`traffic = "cbr"` only, where it is required).
    #[serde(default)]
    #[schemars(range(min = MIN_CBR_RATE_KBPS))]
    rate_kbps: Option<f64>,
    /// When the flow starts, simulated seconds from the run's start (before
    /// `duration_s`).
    #[serde(default)]
    #[schemars(range(min = 0.0, max = MAX_DURATION_S))]
    start_s: f64,
    /// When the flow stops sending (after `start_s`): UDP traffic sends
    /// until then (absent: the end of the run); a transport flow with it
    /// instead of `bytes` runs from `start_s` until then with a backlogged
    /// sender.
    #[serde(default)]
    stop_s: Option<f64>,
    /// Echo traffic: seconds after which an unanswered request is given up
    /// and the next one sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(
        default = "default_echo_timeout_s",
        range(min = *ENGINE_PERIOD_S.start(), max = *ENGINE_PERIOD_S.end())
    )]
    echo_timeout_s: Option<f64>,
    /// The transport that moves the data: `"atp-default"`,
    /// `"atp-aggressive"`, `"atp-adaptive"` (seed 002's ATP), the TCPs,
    /// `"mtl"` (seed 004's Mesh Transmission Layer, over `[routing] kind =
    /// "olsr"` with `metric = "etx"`), or `"kernel-tcp"` (the Linux
    /// kernel's TCP, on the emulator only). Absent: UDP traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    protocol: Option<ProtocolKey>,
    /// Kernel TCP's congestion control by its Linux name (`cubic`, `reno`,
    /// `bbr`, ...; `protocol = "kernel-tcp"` only).
    // Checked as [`CongestionControl`] once the kind is known, so that the
    // error names this key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(default = "default_congestion_control", with = "Option<CongestionControl>")]
    congestion_control: Option<String>,
    /// Application bytes a transport flow delivers: it runs until every
    /// byte is acknowledged, or the run ends and it is reported incomplete.
    /// A transport flow needs this or `stop_s`. A simulated sender holds
    /// at most 4 MiB of it at once, whatever the size; the emulator holds
    /// a transfer whole, at most 1 GiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = MAX_FLOW_BYTES))]
    bytes: Option<u64>,
    /// Keep the engines' trace samples (D_max, D_avg, D_s, cwnd,
    /// retransmissions) in the flow's result. Transport flows, and echo
    /// flows (their RTT samples, `rtt_s`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[schemars(!skip_serializing_if)]
    trace: bool,
    /// Record the times at which the data handed up crossed each multiple
    /// of this many full data packets, for the batch-means method (seed 004
    /// §IV: batches of 5,000 packets). Transport flows only; an
    /// experiment's `batch_means` sets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = MAX_BATCH_PACKETS))]
    batch_packets: Option<u32>,
    /// Overrides of the ATP preset (ATP protocols only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    atp: Option<AtpOverrides>,
    /// Overrides of the TCP defaults (TCP protocols only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tcp: Option<TcpOverrides>,
    /// Overrides of the MTL defaults (`mtl` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mtl: Option<MtlOverrides>,
    /// A slow reader (seed 002 §4.2.3): the application at the destination
    /// reads at most this many bits per second from the flow's start (0
    /// stalls it). Absent: it takes everything as it arrives. ATP and TCP
    /// flows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = MAX_READ_RATE_BPS))]
    read_rate_bps: Option<u64>,
    /// Changes of the reader's rate during the run, each `{ at_s, rate_bps
    /// }`, in time order. Needs `read_rate_bps`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    read_rate_steps: Vec<ReadRateStep>,
    /// With a reader rate: the bytes the receiver holds unread or out of
    /// order at most, at least one full packet's payload (beyond it data
    /// is dropped). Absent: 1 MiB for ATP (an epoch of quick-start), the
    /// window for TCP (`tcp.max_cwnd_segments` segments).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = MAX_RECEIVE_BUFFER_BYTES))]
    receive_buffer_bytes: Option<u64>,
}

/// The defaults the schema shows for keys whose absence the reader
/// resolves by kind ([`FlowFile::into_spec`]): UDP traffic is saturated,
/// packets are [`DEFAULT_PACKET_BYTES`], echo requests time out after
/// [`DEFAULT_ECHO_TIMEOUT_S`], kernel TCP runs `cubic`.
fn default_traffic() -> Option<Traffic> {
    Some(Traffic::Saturated)
}
fn default_packet_bytes() -> Option<u32> {
    Some(DEFAULT_PACKET_BYTES)
}
fn default_echo_timeout_s() -> Option<f64> {
    Some(DEFAULT_ECHO_TIMEOUT_S)
}
fn default_congestion_control() -> Option<CongestionControl> {
    Some(CongestionControl::default())
}

impl JsonSchema for FlowSpec {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Flow".into()
    }

    /// The flat table it is read from ([`FlowFile`]).
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        FlowFile::json_schema(generator)
    }
}

/// `[random_flows.flow]`'s schema: a `[[flows]]` table's keys but `src` and
/// `dst`, which are drawn.
pub(super) fn flow_template_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut schema = FlowFile::json_schema(generator);
    for ends in ["src", "dst"] {
        if let Some(serde_json::Value::Object(p)) = schema.get_mut("properties") {
            p.remove(ends);
        }
        if let Some(serde_json::Value::Array(required)) = schema.get_mut("required") {
            required.retain(|k| k != ends);
        }
    }
    schema.remove("title");
    schema
}

/// `protocol` as the file writes it: one of meshbed's transport engines, or
/// the kernel's TCP (which is not one of them: [`KERNEL_TCP`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ProtocolKey {
    Engine(Protocol),
    KernelTcp,
}

impl Serialize for ProtocolKey {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ProtocolKey::Engine(p) => p.serialize(s),
            ProtocolKey::KernelTcp => s.serialize_str(KERNEL_TCP),
        }
    }
}

impl JsonSchema for ProtocolKey {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Protocol".into()
    }

    /// Every engine's name ([`Protocol::ALL`]) and [`KERNEL_TCP`].
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = Protocol::ALL.iter().map(|p| p.name()).chain([KERNEL_TCP]).collect();
        schemars::json_schema!({ "type": "string", "enum": names })
    }
}

impl<'de> Deserialize<'de> for ProtocolKey {
    /// A misspelling is refused with every name, the engines' and `kernel-tcp`.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        if name == KERNEL_TCP {
            return Ok(ProtocolKey::KernelTcp);
        }
        name.parse().map(ProtocolKey::Engine).map_err(|_| {
            let names: Vec<&str> = Protocol::ALL.iter().map(|p| p.name()).chain([KERNEL_TCP]).collect();
            serde::de::Error::invalid_value(
                serde::de::Unexpected::Str(&name),
                &format!("one of {}", names.join(", ")).as_str(),
            )
        })
    }
}

/// "nothing: …" for a key that another kind of flow takes.
fn not_for(key: &str, value: impl ToString, belongs: &str) -> ScenarioError {
    invalid(key, value, format!("nothing: this key belongs to {belongs}"))
}

impl FlowFile {
    /// The typed flow, or the first key that its kind does not take (the
    /// key relative to the flow: `rate_kbps`, `atp`; the caller prefixes
    /// `flows[i].` or `random_flows.flow.`). Numeric bounds are
    /// [`crate::scenario::Scenario::validate`]'s.
    pub(super) fn into_spec(self) -> Result<FlowSpec, ScenarioError> {
        let f = self;
        if f.protocol != Some(ProtocolKey::KernelTcp) {
            if let Some(c) = &f.congestion_control {
                return Err(not_for(
                    "congestion_control",
                    format!("{c:?}"),
                    "kernel TCP flows (protocol = \"kernel-tcp\")",
                ));
            }
        }
        let kind = match f.protocol {
            Some(ProtocolKey::Engine(protocol)) => FlowKind::Transport(f.transport_flow(protocol)?),
            Some(ProtocolKey::KernelTcp) => FlowKind::KernelTcp(f.kernel_tcp_flow()?),
            None => f.udp_kind()?,
        };
        Ok(FlowSpec { src: f.src, dst: f.dst, start_s: f.start_s, kind })
    }

    fn udp_kind(&self) -> Result<FlowKind, ScenarioError> {
        let f = self;
        for (k, given) in [
            ("bytes", f.bytes.is_some()),
            ("atp", f.atp.is_some()),
            ("tcp", f.tcp.is_some()),
            ("mtl", f.mtl.is_some()),
            ("batch_packets", f.batch_packets.is_some()),
            ("read_rate_bps", f.read_rate_bps.is_some()),
            ("read_rate_steps", !f.read_rate_steps.is_empty()),
            ("receive_buffer_bytes", f.receive_buffer_bytes.is_some()),
        ] {
            if given {
                return Err(invalid(k, "(given)", "nothing: this key belongs to transport flows (set `protocol`)"));
            }
        }
        let traffic = f.traffic.unwrap_or(Traffic::Saturated);
        // Echo flows trace their RTT samples.
        if f.trace && traffic != Traffic::Echo {
            return Err(not_for("trace", "(given)", "transport and echo flows (set `protocol` or traffic = \"echo\")"));
        }
        let (packet_bytes, stop_s) = (f.packet_bytes.unwrap_or(DEFAULT_PACKET_BYTES), f.stop_s);
        let rate = match (traffic, f.rate_kbps) {
            (Traffic::Cbr, None) => return Err(invalid("rate_kbps", "(missing)", "a CBR rate in kbit/s")),
            (Traffic::Cbr, Some(rate_kbps)) => UdpRate::Cbr { rate_kbps },
            (Traffic::Saturated, Some(r)) => {
                return Err(invalid(
                    "rate_kbps",
                    r,
                    "no rate: a saturated source sends as fast as the MAC takes packets",
                ))
            }
            (Traffic::Echo, Some(r)) => {
                return Err(invalid(
                    "rate_kbps",
                    r,
                    "no rate: an echo source sends its next request when the reply arrives",
                ))
            }
            (Traffic::Saturated, None) => UdpRate::Saturated,
            (Traffic::Echo, None) => {
                let timeout_s = f.echo_timeout_s;
                return Ok(FlowKind::Echo(EchoFlow { packet_bytes, timeout_s, stop_s, trace: f.trace }));
            }
        };
        if let Some(t) = f.echo_timeout_s {
            return Err(not_for("echo_timeout_s", t, "echo flows"));
        }
        Ok(FlowKind::Udp(UdpFlow { rate, packet_bytes, stop_s }))
    }

    /// What a transport or kernel TCP flow (`what`) moves: `bytes`, or
    /// until `stop_s` (issue 3: "move a number of bytes or run for a
    /// duration").
    fn amount(&self, what: &str) -> Result<Amount, ScenarioError> {
        match (self.bytes, self.stop_s) {
            (None, None) => Err(invalid(
                "bytes",
                "(missing)",
                format!("the transfer size in bytes of a {what}, or a stop_s for a flow that runs for a duration"),
            )),
            (Some(_), Some(stop)) => {
                Err(invalid("stop_s", stop, format!("either bytes or stop_s for a {what}, not both")))
            }
            (Some(bytes), None) => Ok(Amount::Bytes(bytes)),
            (None, Some(stop_s)) => Ok(Amount::Until { stop_s }),
        }
    }

    fn transport_flow(&self, protocol: Protocol) -> Result<TransportFlow, ScenarioError> {
        let f = self;
        let amount = f.amount("transport flow")?;
        if let Some(traffic @ (Traffic::Cbr | Traffic::Echo)) = f.traffic {
            let kind = if traffic == Traffic::Cbr { "\"cbr\"" } else { "\"echo\"" };
            return Err(invalid("traffic", kind, format!("no traffic kind: {protocol} paces itself")));
        }
        if let Some(t) = f.echo_timeout_s {
            return Err(not_for("echo_timeout_s", t, "echo flows"));
        }
        if let Some(r) = f.rate_kbps {
            return Err(invalid("rate_kbps", r, format!("no rate: {protocol} chooses its own")));
        }
        // Each family has its own table (`settings_table`); another's keys
        // would be ignored, so they are refused.
        let own = settings_table(protocol.name()).unwrap_or("tcp");
        for (table, given) in [("atp", f.atp.is_some()), ("tcp", f.tcp.is_some()), ("mtl", f.mtl.is_some())] {
            if given && table != own {
                return Err(invalid(
                    table,
                    "(given)",
                    format!("no [flows.{table}] table: {protocol} takes its settings from [flows.{own}]"),
                ));
            }
        }
        let settings = match (&f.atp, &f.tcp, &f.mtl) {
            (Some(a), _, _) => TransportSettings::Atp(Box::new(a.clone())),
            (_, Some(t), _) => TransportSettings::Tcp(t.clone()),
            (_, _, Some(m)) => TransportSettings::Mtl(m.clone()),
            (None, None, None) => TransportSettings::Preset,
        };
        let reader = match f.read_rate_bps {
            Some(rate_bps) => Some(SlowReader {
                rate_bps,
                steps: f.read_rate_steps.clone(),
                receive_buffer_bytes: f.receive_buffer_bytes,
            }),
            None => {
                for (k, given) in [
                    ("read_rate_steps", !f.read_rate_steps.is_empty()),
                    ("receive_buffer_bytes", f.receive_buffer_bytes.is_some()),
                ] {
                    if given {
                        return Err(invalid(
                            k,
                            "(given)",
                            "nothing without read_rate_bps (the reader's rate from the flow's start)",
                        ));
                    }
                }
                None
            }
        };
        Ok(TransportFlow {
            protocol,
            amount,
            packet_bytes: f.packet_bytes.unwrap_or(DEFAULT_PACKET_BYTES),
            trace: f.trace,
            batch_packets: f.batch_packets,
            settings,
            reader,
        })
    }
}

impl FlowFile {
    /// A kernel TCP flow: `bytes` or `stop_s`, and `congestion_control`;
    /// every key of UDP traffic or of meshbed's engines is refused by name
    /// (the kernel runs its own TCP, with its own segments and buffers).
    fn kernel_tcp_flow(&self) -> Result<KernelTcpFlow, ScenarioError> {
        let f = self;
        let amount = f.amount("kernel-tcp flow")?;
        let given: [(&str, Option<String>, &str); 12] = [
            (
                "traffic",
                f.traffic.map(|t| format!("{:?}", traffic_name(t))),
                "the kernel's congestion control paces it",
            ),
            ("rate_kbps", f.rate_kbps.map(|r| r.to_string()), "the kernel's congestion control chooses its rate"),
            ("packet_bytes", f.packet_bytes.map(|b| b.to_string()), "the kernel sizes its segments to the path's MTU"),
            ("echo_timeout_s", f.echo_timeout_s.map(|t| t.to_string()), "this key belongs to echo flows"),
            ("trace", f.trace.then(|| "true".to_string()), "the kernel's TCP keeps no engine trace samples"),
            (
                "batch_packets",
                f.batch_packets.map(|n| n.to_string()),
                "no delivery milestones are recorded for the kernel's TCP",
            ),
            (
                "atp",
                f.atp.as_ref().map(|_| "(given)".to_string()),
                "[flows.atp] sets meshbed's ATP engines; the kernel's TCP takes only congestion_control",
            ),
            (
                "tcp",
                f.tcp.as_ref().map(|_| "(given)".to_string()),
                "[flows.tcp] sets meshbed's TCP engines; the kernel's TCP takes only congestion_control",
            ),
            (
                "mtl",
                f.mtl.as_ref().map(|_| "(given)".to_string()),
                "[flows.mtl] sets meshbed's MTL engine; the kernel's TCP takes only congestion_control",
            ),
            ("read_rate_bps", f.read_rate_bps.map(|r| r.to_string()), "the kernel's receiver reads at full speed"),
            (
                "read_rate_steps",
                (!f.read_rate_steps.is_empty()).then(|| "(given)".to_string()),
                "the kernel's receiver reads at full speed",
            ),
            (
                "receive_buffer_bytes",
                f.receive_buffer_bytes.map(|b| b.to_string()),
                "the kernel sizes its own receive buffer",
            ),
        ];
        if let Some((k, Some(value), why)) = given.into_iter().find(|(_, v, _)| v.is_some()) {
            return Err(invalid(k, value, format!("nothing on a kernel-tcp flow: {why}")));
        }
        let congestion_control = match &f.congestion_control {
            None => CongestionControl::default(),
            Some(name) => CongestionControl::new(name)
                .map_err(|expected| invalid("congestion_control", format!("{name:?}"), expected))?,
        };
        Ok(KernelTcpFlow { congestion_control, amount })
    }
}

/// `traffic` as the file writes it.
fn traffic_name(t: Traffic) -> &'static str {
    match t {
        Traffic::Saturated => "saturated",
        Traffic::Cbr => "cbr",
        Traffic::Echo => "echo",
    }
}

impl From<&FlowSpec> for FlowFile {
    /// The flat form, key for key as the files have always written it.
    fn from(s: &FlowSpec) -> FlowFile {
        let mut f = FlowFile {
            src: s.src,
            dst: s.dst,
            traffic: Some(Traffic::Saturated),
            packet_bytes: Some(s.packet_bytes()),
            rate_kbps: None,
            start_s: s.start_s,
            stop_s: s.stop_s(),
            echo_timeout_s: None,
            protocol: None,
            congestion_control: None,
            bytes: None,
            trace: false,
            batch_packets: None,
            atp: None,
            tcp: None,
            mtl: None,
            read_rate_bps: None,
            read_rate_steps: Vec::new(),
            receive_buffer_bytes: None,
        };
        match &s.kind {
            FlowKind::Udp(u) => {
                if let UdpRate::Cbr { rate_kbps } = u.rate {
                    f.traffic = Some(Traffic::Cbr);
                    f.rate_kbps = Some(rate_kbps);
                }
            }
            FlowKind::Echo(e) => {
                f.traffic = Some(Traffic::Echo);
                f.echo_timeout_s = e.timeout_s;
                f.trace = e.trace;
            }
            FlowKind::Transport(t) => {
                f.protocol = Some(ProtocolKey::Engine(t.protocol));
                f.bytes = t.amount.bytes();
                f.trace = t.trace;
                f.batch_packets = t.batch_packets;
                match &t.settings {
                    TransportSettings::Preset => {}
                    TransportSettings::Atp(a) => f.atp = Some(a.as_ref().clone()),
                    TransportSettings::Tcp(o) => f.tcp = Some(o.clone()),
                    TransportSettings::Mtl(m) => f.mtl = Some(m.clone()),
                }
                if let Some(r) = &t.reader {
                    f.read_rate_bps = Some(r.rate_bps);
                    f.read_rate_steps = r.steps.clone();
                    f.receive_buffer_bytes = r.receive_buffer_bytes;
                }
            }
            // Only its own keys, so that it reads back.
            FlowKind::KernelTcp(k) => {
                f.traffic = None;
                f.packet_bytes = None;
                f.protocol = Some(ProtocolKey::KernelTcp);
                f.congestion_control = Some(k.congestion_control.to_string());
                f.bytes = k.amount.bytes();
            }
        }
        f
    }
}

impl Serialize for FlowSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        FlowFile::from(self).serialize(s)
    }
}

impl<'de> Deserialize<'de> for FlowSpec {
    /// Through the flat form; a key of another kind of flow is an error
    /// naming the key (relative to the flow: the scenario's reader,
    /// `Scenario::parse`, names the whole path).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<FlowSpec, D::Error> {
        FlowFile::deserialize(d)?.into_spec().map_err(serde::de::Error::custom)
    }
}
