//! The scenario file: what `meshbed sim SCENARIO` reads.
//!
//! ```toml
//! seed = 1
//! duration_s = 10.0
//!
//! [radio]                      # see meshbed_radio::RadioConfig; all optional
//! standard = "802.11a"
//! data_rate_kbps = 24000
//! tx_range_m = 250.0
//! cs_range_m = 550.0
//!
//! [topology]
//! kind = "chain"               # chain | grid | explicit
//! nodes = 7
//! spacing_m = 200.0
//!
//! [routing]
//! kind = "shortest-path"       # shortest-path | static
//!
//! [[flows]]
//! src = 0
//! dst = 6
//! traffic = "saturated"        # saturated | cbr
//! packet_bytes = 1500          # IP packet size
//!
//! [[flows]]                    # a transport transfer
//! src = 0
//! dst = 6
//! protocol = "atp-adaptive"    # atp-default | atp-aggressive | atp-adaptive
//!                              # | tcp-tahoe | tcp-reno | tcp-newreno
//! bytes = 2_000_000            # application bytes to deliver
//! start_s = 1.0
//! trace = false                # keep D_max/D_avg/D_s/cwnd samples in the result
//! [flows.atp]                  # optional overrides of the preset
//! epoch_s = 0.04
//! kappa = 0.5
//! ```
//!
//! Every mistake is reported with the key, the value and what was expected.

use meshbed_proto::wire::HEADER_LEN as TRANSPORT_HEADER_BYTES;
use meshbed_proto::Protocol;
use meshbed_radio::{NodeRadio, RadioConfig};
use serde::{Deserialize, Serialize};
use std::path::Path;
use thiserror::Error;

/// A whole scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Run seed; every random stream of the run derives from it.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Simulated time to run, seconds.
    pub duration_s: f64,
    #[serde(default)]
    pub radio: RadioConfig,
    pub topology: Topology,
    #[serde(default)]
    pub routing: Routing,
    #[serde(default)]
    pub flows: Vec<FlowSpec>,
}

fn default_seed() -> u64 {
    1
}

/// Where the nodes are.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Topology {
    /// `nodes` nodes on a line, `spacing_m` apart, node 0 at the origin.
    Chain { nodes: u32, spacing_m: f64 },
    /// `rows` × `cols` nodes, row-major numbering.
    Grid { rows: u32, cols: u32, spacing_m: f64 },
    /// Explicit coordinates, optionally per-node power and rate.
    Explicit { nodes: Vec<NodeSpec> },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub x_m: f64,
    pub y_m: f64,
    #[serde(default)]
    pub tx_power_dbm: Option<f64>,
    #[serde(default)]
    pub data_rate_kbps: Option<u32>,
}

/// How next hops are chosen.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Routing {
    /// Fewest hops over links both ends can decode (interference-free, no
    /// fading), ties broken towards the lowest node index.
    #[default]
    ShortestPath,
    /// Explicit paths; each path installs next hops in both directions for
    /// every node on it, so that replies follow the same path.
    Static { paths: Vec<Vec<u32>> },
}

/// What a flow sends.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Traffic {
    /// Keeps the source's interface queue full (a saturating UDP source).
    Saturated,
    /// Constant bit rate UDP at `rate_kbps`.
    Cbr,
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
    /// Transport protocol: one of `atp-default`, `atp-aggressive`,
    /// `atp-adaptive`, `tcp-tahoe`, `tcp-reno`, `tcp-newreno`. Absent: UDP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// Application bytes a transport flow transfers (required with `protocol`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// Keep the engines' trace samples (D_max, D_avg, D_s, cwnd,
    /// retransmissions) in the flow's result. Transport flows only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub trace: bool,
    /// Overrides of the ATP preset (ATP protocols only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub atp: Option<AtpOverrides>,
    /// Overrides of the TCP defaults (TCP protocols only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<TcpOverrides>,
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
            protocol: None,
            bytes: None,
            trace: false,
            atp: None,
            tcp: None,
        }
    }
}

impl FlowSpec {
    /// A transport transfer of `bytes` from `src` to `dst` starting at 0.
    pub fn transfer(src: u32, dst: u32, protocol: Protocol, bytes: u64) -> Self {
        FlowSpec { src, dst, protocol: Some(protocol.name().to_string()), bytes: Some(bytes), ..FlowSpec::default() }
    }

    /// The transport protocol, `None` for UDP. Call on a validated scenario
    /// (an unknown name is a validation error).
    pub fn transport(&self) -> Option<Protocol> {
        self.protocol.as_deref().and_then(|p| p.parse().ok())
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
}

fn default_traffic() -> Traffic {
    Traffic::Saturated
}
fn default_packet_bytes() -> u32 {
    1500
}

/// IP + UDP header bytes: the part of a packet that is not goodput.
pub const IP_UDP_HEADER_BYTES: u32 = 28;
/// Largest transport transfer: the simulator holds the data in memory.
pub const MAX_TRANSFER_BYTES: u64 = 1 << 32;
/// Largest IP packet the simulator carries (an 802.11 MSDU is ≤ 2304 bytes).
pub const MAX_PACKET_BYTES: u32 = 2304;

/// A scenario that cannot be run, with where and why.
#[derive(Debug, Error)]
pub enum ScenarioError {
    #[error("{file}: cannot read: {err}")]
    Io { file: String, err: std::io::Error },
    #[error("{file}: {message}")]
    Parse { file: String, message: String },
    #[error("{file}: {key} = {value}: expected {expected}")]
    Invalid { file: String, key: String, value: String, expected: String },
}

fn invalid(key: impl Into<String>, value: impl ToString, expected: impl Into<String>) -> ScenarioError {
    ScenarioError::Invalid { file: String::new(), key: key.into(), value: value.to_string(), expected: expected.into() }
}

impl ScenarioError {
    /// Names the file the error came from.
    pub fn in_file(self, name: &str) -> Self {
        match self {
            ScenarioError::Invalid { key, value, expected, .. } => {
                ScenarioError::Invalid { file: name.into(), key, value, expected }
            }
            ScenarioError::Parse { message, .. } => ScenarioError::Parse { file: name.into(), message },
            other => other,
        }
    }
}

impl Scenario {
    /// Reads and validates a scenario file.
    pub fn from_file(path: &Path) -> Result<Scenario, ScenarioError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|err| ScenarioError::Io { file: name.clone(), err })?;
        Scenario::from_toml(&text).map_err(|e| e.in_file(&name))
    }

    /// Parses and validates scenario text.
    pub fn from_toml(text: &str) -> Result<Scenario, ScenarioError> {
        let s: Scenario =
            toml::from_str(text).map_err(|e| ScenarioError::Parse { file: String::new(), message: e.to_string() })?;
        s.validate()?;
        Ok(s)
    }

    /// Node positions (and per-node overrides) of the topology.
    pub fn node_radios(&self) -> Vec<NodeRadio> {
        match &self.topology {
            Topology::Chain { nodes, spacing_m } => {
                (0..*nodes).map(|i| NodeRadio::at(i as f64 * spacing_m, 0.0)).collect()
            }
            Topology::Grid { rows, cols, spacing_m } => (0..rows * cols)
                .map(|i| NodeRadio::at((i % cols) as f64 * spacing_m, (i / cols) as f64 * spacing_m))
                .collect(),
            Topology::Explicit { nodes } => nodes
                .iter()
                .map(|n| NodeRadio {
                    x_m: n.x_m,
                    y_m: n.y_m,
                    tx_power_dbm: n.tx_power_dbm,
                    data_rate_kbps: n.data_rate_kbps,
                })
                .collect(),
        }
    }

    pub fn node_count(&self) -> u32 {
        match &self.topology {
            Topology::Chain { nodes, .. } => *nodes,
            Topology::Grid { rows, cols, .. } => rows * cols,
            Topology::Explicit { nodes } => nodes.len() as u32,
        }
    }

    /// Semantic checks beyond types; every error names its key.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        if !(self.duration_s > 0.0 && self.duration_s <= 1.0e6) {
            return Err(invalid("duration_s", self.duration_s, "a positive number of seconds (at most 1e6)"));
        }
        self.radio.resolve().map_err(|e| invalid(format!("radio.{}", e.key), e.value, e.expected))?;
        match &self.topology {
            Topology::Chain { nodes, spacing_m } => {
                if !(2..=10_000).contains(nodes) {
                    return Err(invalid("topology.nodes", nodes, "between 2 and 10000 nodes"));
                }
                if !(*spacing_m > 0.0 && spacing_m.is_finite()) {
                    return Err(invalid("topology.spacing_m", spacing_m, "a positive distance in metres"));
                }
            }
            Topology::Grid { rows, cols, spacing_m } => {
                if *rows == 0 || *cols == 0 || rows * cols < 2 || rows * cols > 10_000 {
                    return Err(invalid(
                        "topology.rows",
                        format!("{rows} (cols {cols})"),
                        "a grid of 2 to 10000 nodes",
                    ));
                }
                if !(*spacing_m > 0.0 && spacing_m.is_finite()) {
                    return Err(invalid("topology.spacing_m", spacing_m, "a positive distance in metres"));
                }
            }
            Topology::Explicit { nodes } => {
                if nodes.len() < 2 || nodes.len() > 10_000 {
                    return Err(invalid("topology.nodes", format!("{} entries", nodes.len()), "2 to 10000 nodes"));
                }
                let std = self.radio.standard;
                for (i, n) in nodes.iter().enumerate() {
                    if !(n.x_m.is_finite() && n.y_m.is_finite()) {
                        return Err(invalid(
                            format!("topology.nodes[{i}]"),
                            format!("({}, {})", n.x_m, n.y_m),
                            "finite x_m and y_m",
                        ));
                    }
                    if let Some(p) = n.tx_power_dbm {
                        if !(-30.0..=40.0).contains(&p) {
                            return Err(invalid(
                                format!("topology.nodes[{i}].tx_power_dbm"),
                                p,
                                "a power between -30 and 40 dBm",
                            ));
                        }
                    }
                    if let Some(r) = n.data_rate_kbps {
                        if !std.rates_kbps().contains(&r) {
                            return Err(invalid(
                                format!("topology.nodes[{i}].data_rate_kbps"),
                                r,
                                format!("one of the {} rates {:?}", std.name(), std.rates_kbps()),
                            ));
                        }
                    }
                }
            }
        }
        let n = self.node_count();
        if let Routing::Static { paths } = &self.routing {
            for (p, path) in paths.iter().enumerate() {
                if path.len() < 2 {
                    return Err(invalid(
                        format!("routing.paths[{p}]"),
                        format!("{path:?}"),
                        "a path of at least two nodes",
                    ));
                }
                for (k, &v) in path.iter().enumerate() {
                    if v >= n {
                        return Err(invalid(format!("routing.paths[{p}][{k}]"), v, format!("a node index below {n}")));
                    }
                }
            }
        }
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
            if let Some(name) = &f.protocol {
                let protocol =
                    name.parse::<Protocol>().map_err(|e| invalid(key("protocol"), format!("{name:?}"), e))?;
                f.validate_transport(i, protocol, self.duration_s)?;
                continue;
            }
            for (k, given) in
                [("bytes", f.bytes.is_some()), ("trace", f.trace), ("atp", f.atp.is_some()), ("tcp", f.tcp.is_some())]
            {
                if given {
                    return Err(invalid(
                        key(k),
                        "(given)",
                        "nothing: this key belongs to transport flows (set `protocol`)",
                    ));
                }
            }
            if !(IP_UDP_HEADER_BYTES + 1..=MAX_PACKET_BYTES).contains(&f.packet_bytes) {
                return Err(invalid(
                    key("packet_bytes"),
                    f.packet_bytes,
                    format!("an IP packet size from {} to {MAX_PACKET_BYTES} bytes", IP_UDP_HEADER_BYTES + 1),
                ));
            }
            if !(f.start_s >= 0.0 && f.start_s < self.duration_s) {
                return Err(invalid(
                    key("start_s"),
                    f.start_s,
                    format!("a start time in [0, duration_s = {})", self.duration_s),
                ));
            }
            if let Some(stop) = f.stop_s {
                if !(stop > f.start_s) {
                    return Err(invalid(key("stop_s"), stop, "a stop time after start_s"));
                }
            }
            match (f.traffic, f.rate_kbps) {
                (Traffic::Cbr, None) => return Err(invalid(key("rate_kbps"), "(missing)", "a CBR rate in kbit/s")),
                (Traffic::Cbr, Some(r)) if !(r > 0.0 && r.is_finite()) => {
                    return Err(invalid(key("rate_kbps"), r, "a positive rate in kbit/s"))
                }
                (Traffic::Saturated, Some(r)) => {
                    return Err(invalid(
                        key("rate_kbps"),
                        r,
                        "no rate: a saturated source sends as fast as the MAC takes packets",
                    ))
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The built-in default: one saturated 1500-byte UDP flow along a 4-hop
    /// 802.11a 24 Mbit/s chain with the classic 250 m / 550 m ranges.
    pub fn builtin_default() -> Scenario {
        Scenario::chain(4, 200.0, 10.0)
    }

    /// A saturated UDP flow from node 0 to node `hops` on a chain.
    pub fn chain(hops: u32, spacing_m: f64, duration_s: f64) -> Scenario {
        Scenario {
            seed: 1,
            duration_s,
            radio: RadioConfig::default(),
            topology: Topology::Chain { nodes: hops + 1, spacing_m },
            routing: Routing::ShortestPath,
            flows: vec![FlowSpec { src: 0, dst: hops, ..FlowSpec::default() }],
        }
    }
}

impl FlowSpec {
    /// Checks of a transport flow (index `i`, protocol already parsed).
    fn validate_transport(&self, i: usize, protocol: Protocol, duration_s: f64) -> Result<(), ScenarioError> {
        let key = |k: &str| format!("flows[{i}].{k}");
        // A transport flow either moves `bytes` or runs until `stop_s`
        // (issue 3: "move a number of bytes or run for a duration").
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
            (Some(b), None) if !(1..=MAX_TRANSFER_BYTES).contains(&b) => {
                return Err(invalid(key("bytes"), b, format!("a transfer size from 1 to {MAX_TRANSFER_BYTES} bytes")))
            }
            (None, Some(stop)) if !(stop > self.start_s && stop.is_finite()) => {
                return Err(invalid(key("stop_s"), stop, "a stop time after start_s"))
            }
            _ => {}
        }
        let min_packet = IP_UDP_HEADER_BYTES + TRANSPORT_HEADER_BYTES as u32 + 1;
        if !(min_packet..=MAX_PACKET_BYTES).contains(&self.packet_bytes) {
            return Err(invalid(
                key("packet_bytes"),
                self.packet_bytes,
                format!(
                    "a full data packet size from {min_packet} to {MAX_PACKET_BYTES} bytes (IP, UDP and the {TRANSPORT_HEADER_BYTES}-byte transport header included)"
                ),
            ));
        }
        if self.traffic == Traffic::Cbr {
            return Err(invalid(key("traffic"), "\"cbr\"", format!("no traffic kind: {protocol} paces itself")));
        }
        if let Some(r) = self.rate_kbps {
            return Err(invalid(key("rate_kbps"), r, format!("no rate: {protocol} chooses its own")));
        }
        if !(self.start_s >= 0.0 && self.start_s < duration_s) {
            return Err(invalid(
                key("start_s"),
                self.start_s,
                format!("a start time in [0, duration_s = {duration_s})"),
            ));
        }
        let positive = |k: &str, v: Option<f64>| match v {
            Some(x) if !(x > 0.0 && x.is_finite()) => Err(invalid(key(k), x, "a positive number")),
            _ => Ok(()),
        };
        let fraction = |k: &str, v: Option<f64>| match v {
            Some(x) if !(0.0..1.0).contains(&x) => Err(invalid(key(k), x, "a weight in [0, 1)")),
            _ => Ok(()),
        };
        if let Some(a) = &self.atp {
            if !protocol.is_atp() {
                return Err(invalid(key("atp"), "(given)", format!("no [flows.atp] table: {protocol} is not ATP")));
            }
            positive("atp.epoch_s", a.epoch_s)?;
            positive("atp.idle_timeout_s", a.idle_timeout_s)?;
            positive("atp.eta", a.eta)?;
            fraction("atp.alpha", a.alpha)?;
            fraction("atp.beta", a.beta)?;
            if let Some(k) = a.kappa {
                if !(k > 0.0 && k <= 1.0) {
                    return Err(invalid(key("atp.kappa"), k, "an increase factor in (0, 1]"));
                }
            }
            if let Some(p) = a.phi {
                if !(p >= 0.0 && p.is_finite()) {
                    return Err(invalid(key("atp.phi"), p, "a non-negative threshold"));
                }
            }
        }
        if let Some(t) = &self.tcp {
            if protocol.is_atp() {
                return Err(invalid(key("tcp"), "(given)", format!("no [flows.tcp] table: {protocol} is not TCP")));
            }
            positive("tcp.min_rto_s", t.min_rto_s)?;
            positive("tcp.idle_timeout_s", t.idle_timeout_s)?;
            for (k, v) in
                [("tcp.initial_cwnd_segments", t.initial_cwnd_segments), ("tcp.max_cwnd_segments", t.max_cwnd_segments)]
            {
                if v == Some(0) {
                    return Err(invalid(key(k), 0, "at least one segment"));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err_of(text: &str) -> String {
        Scenario::from_toml(text).unwrap_err().in_file("s.toml").to_string()
    }

    #[test]
    fn minimal_file_parses_with_defaults() {
        let s = Scenario::from_toml(
            "duration_s = 2\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200\n[[flows]]\nsrc = 0\ndst = 2\n",
        )
        .unwrap();
        assert_eq!(s.seed, 1);
        assert_eq!(s.flows[0].packet_bytes, 1500);
        assert_eq!(s.node_radios()[2].x_m, 400.0);
    }

    #[test]
    fn mistakes_name_key_value_and_expectation() {
        let base = "duration_s = 2\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200\n";
        let e = err_of(&format!("{base}[[flows]]\nsrc = 0\ndst = 7\n"));
        assert!(e.contains("s.toml") && e.contains("flows[0].dst = 7") && e.contains("below 3"), "{e}");
        let e = err_of(&format!("{base}[radio]\ndata_rate_kbps = 23000\n"));
        assert!(e.contains("radio.data_rate_kbps = 23000") && e.contains("24000"), "{e}");
        let e = err_of(&format!("{base}[radio]\nstandard = \"802.11n\"\n"));
        assert!(e.contains("802.11n") && e.contains("802.11a"), "{e}");
        let e = err_of(&format!("{base}[[flows]]\nsrc = 0\ndst = 2\ntraffic = \"cbr\"\n"));
        assert!(e.contains("flows[0].rate_kbps") && e.contains("missing"), "{e}");
        let e = err_of(&format!("{base}colour = 3\n"));
        assert!(e.contains("colour"), "{e}");
        let e = err_of("duration_s = -1\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200\n");
        assert!(e.contains("duration_s = -1"), "{e}");
        let e = err_of("duration_s = 1\n[topology]\nkind = \"ring\"\n");
        assert!(e.contains("ring"), "{e}");
    }
}
