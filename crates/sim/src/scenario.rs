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
//! kind = "chain"               # chain | grid | explicit | random (nodes, width_m, height_m)
//!                              # | stack (flows, row_spacing_m, link_m)
//! nodes = 7
//! spacing_m = 200.0
//!
//! [routing]
//! kind = "shortest-path"       # shortest-path | static (paths) | dsr | aodv | olsr
//!                              # aodv: ss_threshold_dbm, link_layer_feedback (true),
//!                              #   expanding_ring_search (false)
//!                              # olsr: metric = "hop-count" | "etx", link_layer_notification (false)
//!                              # dsr, aodv, olsr: control_priority (true)
//!
//! [[flows]]
//! src = 0
//! dst = 6
//! traffic = "saturated"        # saturated | cbr | echo (adaptive ping,
//!                              #   echo_timeout_s = 1.0)
//! packet_bytes = 1500          # IP packet size
//!
//! [[flows]]                    # a transport transfer
//! src = 0
//! dst = 6
//! protocol = "atp-adaptive"    # atp-default | atp-aggressive | atp-adaptive
//!                              # | tcp-tahoe | tcp-reno | tcp-newreno
//!                              # | tcp-newreno-elfn | tcp-reno-paced
//!                              # | tcp-newreno-paced
//! bytes = 2_000_000            # application bytes to deliver
//! start_s = 1.0
//! trace = false                # keep D_max/D_avg/D_s/cwnd samples in the result
//! [flows.atp]                  # optional overrides of the preset
//! epoch_s = 0.04
//! kappa = 0.5
//! ```
//!
//! Every mistake is reported with the key, the value and what was expected.

use meshbed_core::limits::Bounded;
use meshbed_core::InvalidValue;
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
    /// `[radio]`, optionally starting from a named preset (`preset =
    /// "ns2"`) whose values the table's other keys override.
    #[serde(default, deserialize_with = "radio_with_preset")]
    pub radio: RadioConfig,
    pub topology: Topology,
    #[serde(default)]
    pub routing: Routing,
    #[serde(default)]
    pub flows: Vec<FlowSpec>,
    /// How the nodes move (`None`: they stay where the topology puts them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mobility: Option<crate::mobility::MobilitySpec>,
    /// `count` more flows between random source/destination pairs, drawn
    /// from the seed's own stream after the listed `flows` (issue 11 §5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub random_flows: Option<RandomFlows>,
}

/// `[random_flows]`: `count` flows like the `flow` template, each between a
/// source and a different destination drawn uniformly from the nodes, from
/// the run seed's own stream ([`meshbed_core::StreamKind::FlowPairs`]): two
/// runs with the same seed and nodes draw the same pairs, whatever their
/// routing or protocol, so that protocols are compared on the same traffic.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RandomFlows {
    pub count: u32,
    /// Each flow starts at a time drawn uniformly in `[a, b)` seconds
    /// (Broch et al. start their CBR sources at random); without it, at the
    /// template's `start_s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_window_s: Option<[f64; 2]>,
    /// Any key of a `[[flows]]` entry but `src` and `dst`.
    #[serde(default)]
    pub flow: toml::Table,
    /// How many of `flows`, at the end, were drawn from this (0 until
    /// drawn), and for which seed.
    #[serde(skip)]
    pub drawn: usize,
    #[serde(skip)]
    pub drawn_for_seed: Option<u64>,
}

/// Reads `[radio]`: a preset's values (`preset = "ns2"`), then the table's
/// own keys over them.
fn radio_with_preset<'de, D: serde::Deserializer<'de>>(d: D) -> Result<RadioConfig, D::Error> {
    use serde::de::Error;
    let mut table = toml::Table::deserialize(d)?;
    let Some(preset) = table.remove("preset") else {
        return RadioConfig::deserialize(toml::Value::Table(table)).map_err(D::Error::custom);
    };
    let names = meshbed_radio::config::PRESETS.map(|p| format!("\"{p}\"")).join(", ");
    let base = preset
        .as_str()
        .and_then(RadioConfig::preset)
        .ok_or_else(|| D::Error::custom(format!("radio.preset = {preset}: expected one of {names}")))?;
    let mut merged = toml::Table::try_from(&base).map_err(D::Error::custom)?;
    overlay(&mut merged, table);
    RadioConfig::deserialize(toml::Value::Table(merged)).map_err(D::Error::custom)
}

/// Puts `over`'s keys into `base`; `mac` (a plain struct) key by key, any
/// other value (a propagation or error model, whose kind decides its keys)
/// whole.
fn overlay(base: &mut toml::Table, over: toml::Table) {
    // A threshold the table gives replaces the preset's range for it (a
    // range and a threshold together are refused).
    for (direct, range) in [("rx_sensitivity_dbm", "tx_range_m"), ("cs_threshold_dbm", "cs_range_m")] {
        if over.contains_key(direct) {
            base.remove(range);
        }
    }
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) if k == "mac" => {
                for (mk, mv) in o {
                    b.insert(mk, mv);
                }
            }
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

fn default_seed() -> u64 {
    1
}

/// Where the nodes are. (Read by [`Tagged`], so that a wrong value names its key.)
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Topology {
    /// `nodes` nodes on a line, `spacing_m` apart, node 0 at the origin.
    Chain { nodes: u32, spacing_m: f64 },
    /// `rows` × `cols` nodes, row-major numbering.
    Grid { rows: u32, cols: u32, spacing_m: f64 },
    /// Explicit coordinates, optionally per-node power and rate.
    Explicit { nodes: Vec<NodeSpec> },
    /// `nodes` nodes placed uniformly at random in `width_m` × `height_m`,
    /// each from its own stream of the seed.
    Random { nodes: u32, width_m: f64, height_m: f64 },
    /// The stack topology (seed 001 §5.4, Fig. 5.8): `flows` one-hop links
    /// of `link_m` in parallel rows `row_spacing_m` apart, senders at x = 0
    /// and receivers at x = `link_m`. Flow i's sender is node 2i, its
    /// receiver node 2i + 1. The outer rows come first, from y = 0 up, and
    /// the middle row's flow last, as the thesis numbers them ("flow 3" is
    /// the middle one of three). [`stack_rows`] gives the order.
    Stack { flows: u32, row_spacing_m: f64, link_m: f64 },
}

/// The row of each flow of a stack of `flows` rows (an odd number): the
/// rows other than the middle one in order, then the middle one, so that
/// the middle flow is numbered last (seed 001 §5.4: "the flow in the middle
/// (flow 3)").
pub fn stack_rows(flows: u32) -> impl Iterator<Item = u32> {
    let middle = flows / 2;
    (0..flows).filter(move |&r| r != middle).chain((flows > 0).then_some(middle))
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
    /// This node's rate control (`"fixed"`, `"arf"`, `"aarf"`, `"minstrel"`)
    /// instead of `[radio.mac] rate_control` (issue 13).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_control: Option<String>,
    /// The building floor the node is on, counted from 0; needs
    /// `[radio.floors]` (issue 15: the thesis' two-floor testbed).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub floor: u32,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

impl NodeSpec {
    /// A node at (`x_m`, `y_m`) on the ground floor, with the radio's settings.
    pub fn at(x_m: f64, y_m: f64) -> NodeSpec {
        NodeSpec { x_m, y_m, tx_power_dbm: None, data_rate_kbps: None, rate_control: None, floor: 0 }
    }
}

/// How next hops are chosen. (Read by [`Tagged`], so that a wrong value names its key.)
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Routing {
    /// Fewest hops over links both ends can decode (interference-free, no
    /// fading), ties broken towards the lowest node index.
    #[default]
    ShortestPath,
    /// Explicit paths; each path installs next hops in both directions for
    /// every node on it, so that replies follow the same path.
    Static { paths: Vec<Vec<u32>> },
    /// DSR (seed 002 §5.1, ns-2's; RFC 4728), a `meshbed_routing` engine
    /// per node: routes are discovered as packets need them.
    Dsr { control_priority: bool },
    /// AODV (RFC 3561; seed 003's AODV-UU); with `ss_threshold_dbm`, seed
    /// 003's signal-strength filter (§3.2: control packets from neighbours
    /// whose averaged signal is below it are ignored). `link_layer_feedback`
    /// (default true): a MAC retry-limit failure breaks the link at once;
    /// false: only missed HELLOs do (AODV-UU's default).
    Aodv {
        ss_threshold_dbm: Option<f64>,
        link_layer_feedback: bool,
        expanding_ring_search: bool,
        control_priority: bool,
    },
    /// OLSR (RFC 3626), proactive; `metric = "etx"` (seed 004 §III.B) or
    /// `"hop-count"` (the default); `link_layer_notification` (RFC 3626 §13,
    /// default false).
    Olsr {
        // Written as the key it is read from, so that a scenario written
        // out (an experiment's base) reads back.
        #[serde(rename = "metric", serialize_with = "olsr_metric")]
        etx: bool,
        link_layer_notification: bool,
        control_priority: bool,
    },
}

/// `[routing] metric` of OLSR: `"etx"` or `"hop-count"`.
fn olsr_metric<S: serde::Serializer>(etx: &bool, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(if *etx { "etx" } else { "hop-count" })
}

impl Routing {
    /// Whether routing engines find routes during the run (rather than a
    /// table computed at time zero).
    pub fn is_dynamic(&self) -> bool {
        matches!(self, Routing::Dsr { .. } | Routing::Aodv { .. } | Routing::Olsr { .. })
    }

    /// Whether routing control packets go ahead of data in the interface
    /// queue (`control_priority`, default true: ns-2's CMU priority queue,
    /// which the documents' ns-2 runs used).
    pub fn control_priority(&self) -> bool {
        match *self {
            Routing::Dsr { control_priority }
            | Routing::Aodv { control_priority, .. }
            | Routing::Olsr { control_priority, .. } => control_priority,
            Routing::ShortestPath | Routing::Static { .. } => false,
        }
    }

    /// DSR with its defaults.
    pub fn dsr() -> Routing {
        Routing::Dsr { control_priority: true }
    }

    /// AODV with its defaults (link-layer feedback, no expanding ring
    /// search) and an optional signal-strength threshold.
    pub fn aodv(ss_threshold_dbm: Option<f64>) -> Routing {
        Routing::Aodv {
            ss_threshold_dbm,
            link_layer_feedback: true,
            expanding_ring_search: false,
            control_priority: true,
        }
    }

    /// The `kind` this routing has in a scenario file.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Routing::ShortestPath => "shortest-path",
            Routing::Static { .. } => "static",
            Routing::Dsr { .. } => "dsr",
            Routing::Aodv { .. } => "aodv",
            Routing::Olsr { .. } => "olsr",
        }
    }

    /// OLSR with its defaults (no link-layer notification), hop count or ETX.
    pub fn olsr(etx: bool) -> Routing {
        Routing::Olsr { etx, link_layer_notification: false, control_priority: true }
    }
}

/// Whether the transport `protocol` takes path information from routing
/// (`meshbed_proto::Engine::handle_path_info`) and so needs a routing module
/// that measures links: MTL (seed 004 §III).
pub fn needs_path_info(protocol: Protocol) -> bool {
    protocol == Protocol::Mtl
}

/// Reads a table tagged with `kind = "..."` key by key. Serde's tagged
/// enums buffer the table and then report a wrong value by its type alone
/// ("invalid type: string, expected u32"); here every error names the key,
/// the value and what was expected.
struct Tagged<'a> {
    section: &'static str,
    table: &'a toml::Table,
}

impl<'a> Tagged<'a> {
    fn kind(&self, kinds: &[&str]) -> Result<&'a str, String> {
        let expected = kinds.iter().map(|k| format!("\"{k}\"")).collect::<Vec<_>>().join(", ");
        match self.table.get("kind") {
            Some(toml::Value::String(k)) if kinds.contains(&k.as_str()) => Ok(k),
            Some(v) => Err(format!("{}.kind = {}: expected one of {expected}", self.section, brief(v))),
            None => Err(format!("{}.kind = (missing): expected one of {expected}", self.section)),
        }
    }

    /// An optional key: absent is `None`.
    fn get_opt<T: serde::de::DeserializeOwned>(&self, key: &str, what: &str) -> Result<Option<T>, String> {
        match self.table.contains_key(key) {
            true => self.get(key, what).map(Some),
            false => Ok(None),
        }
    }

    fn get<T: serde::de::DeserializeOwned>(&self, key: &str, what: &str) -> Result<T, String> {
        let Some(v) = self.table.get(key) else {
            return Err(format!("{}.{key} = (missing): expected {what}", self.section));
        };
        T::deserialize(v.clone()).map_err(|e| {
            // Inside an array or table serde's words locate the problem; for
            // a single value they would only repeat the expectation.
            let detail = match v {
                toml::Value::Array(_) | toml::Value::Table(_) => format!(" ({})", e.to_string().trim_end()),
                _ => String::new(),
            };
            format!("{}.{key} = {}: expected {what}{detail}", self.section, brief(v))
        })
    }

    /// Refuses keys the kind does not have.
    fn only(&self, keys: &[&str]) -> Result<(), String> {
        match self.table.keys().find(|k| k.as_str() != "kind" && !keys.contains(&k.as_str())) {
            Some(k) => Err(format!(
                "{}.{k}: unknown key for kind = {}; expected {}",
                self.section,
                self.table.get("kind").map_or(String::new(), brief),
                if keys.is_empty() { "no other key".to_string() } else { keys.join(", ") }
            )),
            None => Ok(()),
        }
    }
}

/// A value as the file wrote it, cut short if long (an array of nodes).
fn brief(v: &toml::Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(60) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

impl<'de> Deserialize<'de> for Topology {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let table = toml::Table::deserialize(d)?;
        let t = Tagged { section: "topology", table: &table };
        let read = || -> Result<Topology, String> {
            let topology = match t.kind(&["chain", "grid", "explicit", "random", "stack"])? {
                "chain" => Topology::Chain {
                    nodes: t.get("nodes", "a whole number of nodes")?,
                    spacing_m: t.get("spacing_m", "a distance in metres")?,
                },
                "grid" => Topology::Grid {
                    rows: t.get("rows", "a whole number of rows")?,
                    cols: t.get("cols", "a whole number of columns")?,
                    spacing_m: t.get("spacing_m", "a distance in metres")?,
                },
                "random" => Topology::Random {
                    nodes: t.get("nodes", "a whole number of nodes")?,
                    width_m: t.get("width_m", "a size in metres")?,
                    height_m: t.get("height_m", "a size in metres")?,
                },
                "stack" => Topology::Stack {
                    flows: t.get("flows", "a whole, odd number of flows")?,
                    row_spacing_m: t.get("row_spacing_m", "a distance in metres")?,
                    link_m: t.get("link_m", "a distance in metres")?,
                },
                _ => Topology::Explicit { nodes: t.get("nodes", "an array of { x_m, y_m } tables")? },
            };
            t.only(match topology {
                Topology::Chain { .. } => &["nodes", "spacing_m"],
                Topology::Grid { .. } => &["rows", "cols", "spacing_m"],
                Topology::Explicit { .. } => &["nodes"],
                Topology::Random { .. } => &["nodes", "width_m", "height_m"],
                Topology::Stack { .. } => &["flows", "row_spacing_m", "link_m"],
            })?;
            Ok(topology)
        };
        read().map_err(serde::de::Error::custom)
    }
}

/// `control_priority` of a dynamic routing kind (default true).
fn control_priority(t: &Tagged<'_>) -> Result<bool, String> {
    Ok(t.get_opt("control_priority", "true or false")?.unwrap_or(true))
}

impl<'de> Deserialize<'de> for Routing {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let table = toml::Table::deserialize(d)?;
        let t = Tagged { section: "routing", table: &table };
        let read = || -> Result<Routing, String> {
            Ok(match t.kind(&["shortest-path", "static", "dsr", "aodv", "olsr"])? {
                "shortest-path" => {
                    t.only(&[])?;
                    Routing::ShortestPath
                }
                "dsr" => {
                    t.only(&["control_priority"])?;
                    Routing::Dsr { control_priority: control_priority(&t)? }
                }
                "aodv" => {
                    t.only(&["ss_threshold_dbm", "link_layer_feedback", "expanding_ring_search", "control_priority"])?;
                    let ss_threshold_dbm: Option<f64> = t.get_opt("ss_threshold_dbm", "a signal strength in dBm")?;
                    if let Some(v) = ss_threshold_dbm {
                        if !(-150.0..=0.0).contains(&v) {
                            return Err(format!(
                                "routing.ss_threshold_dbm = {v}: expected a signal strength in dBm, -150 to 0"
                            ));
                        }
                    }
                    Routing::Aodv {
                        ss_threshold_dbm,
                        link_layer_feedback: t.get_opt("link_layer_feedback", "true or false")?.unwrap_or(true),
                        expanding_ring_search: t.get_opt("expanding_ring_search", "true or false")?.unwrap_or(false),
                        control_priority: control_priority(&t)?,
                    }
                }
                "olsr" => {
                    t.only(&["metric", "link_layer_notification", "control_priority"])?;
                    let metric: Option<String> = t.get_opt("metric", "`hop-count` or `etx`")?;
                    let etx = match metric.as_deref() {
                        None | Some("hop-count") => false,
                        Some("etx") => true,
                        Some(other) => {
                            return Err(format!("routing.metric = \"{other}\": expected \"hop-count\" or \"etx\""))
                        }
                    };
                    Routing::Olsr {
                        etx,
                        link_layer_notification: t
                            .get_opt("link_layer_notification", "true or false")?
                            .unwrap_or(false),
                        control_priority: control_priority(&t)?,
                    }
                }
                _ => {
                    let paths = t.get("paths", "an array of paths, each an array of node indices")?;
                    t.only(&["paths"])?;
                    Routing::Static { paths }
                }
            })
        };
        read().map_err(serde::de::Error::custom)
    }
}

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

/// Fastest reader rate, bit/s: 10 Gbit/s, beyond any radio's.
pub const MAX_READ_RATE_BPS: u64 = 10_000_000_000;
/// Largest receive buffer: ATP's and TCP's memory guard (`max_reorder_bytes`).
pub const MAX_RECEIVE_BUFFER_BYTES: u64 = 256 << 20;
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
/// Largest IP packet the simulator carries (an 802.11 MSDU is ≤ 2304 bytes).
pub const MAX_PACKET_BYTES: u32 = 2304;

// The bounds of the scenario's numeric keys (docs/PROTOCOLS.md, "Scenario
// limits"). Each is checked once, in `Scenario::validate`.

/// Longest run, simulated seconds: one day. A saturated 6-hop chain
/// simulates about 100 s per wall second, so a day takes minutes, with
/// progress shown by `meshbed sim`.
pub const MAX_DURATION_S: f64 = 86_400.0;
/// Most nodes in a topology. The radio model and the route table keep
/// n × n tables (about 24 bytes per pair: 100 MB at 2000 nodes) and every
/// frame is offered to every node within the interference floor.
pub const MAX_NODES: u32 = 2000;
/// Largest chain or grid spacing: 10 km is beyond any 802.11 link at up to
/// 40 dBm, so a wider spacing could only disconnect the nodes.
pub const MAX_SPACING_M: f64 = 10_000.0;
/// Largest |x| or |y| of an explicit node: 20 000 km, the span of the
/// longest chain at the largest spacing; it keeps distances finite.
pub const MAX_COORDINATE_M: f64 = 2.0e7;
/// Most flows in a scenario (also the bound of the `flow_count` sweep).
pub const MAX_FLOWS: usize = 1000;
/// Slowest CBR rate, kbit/s (1 bit/s: one 1500-byte packet every 3 h 20 min);
/// the fastest is the source node's PHY data rate, all the MAC could carry.
pub const MIN_CBR_RATE_KBPS: f64 = 0.001;
/// The data every transport sender holds in memory (the engines own what
/// they send), summed over a scenario's flows: `bytes`, or for a flow that
/// runs for a duration its source's PHY rate × its running time. 4 GiB.
pub const MAX_SENDER_DATA_BYTES: u64 = 1 << 32;
/// `batch_packets`: seed 004 §IV's batches are 5,000 packets; ten million
/// packets of even 100 bytes are more than all senders may hold
/// ([`MAX_SENDER_DATA_BYTES`]), so no batch could complete.
pub const MAX_BATCH_PACKETS: u32 = 10_000_000;
/// Timer-like durations of the engines (ATP's epoch, TCP's minimum RTO):
/// at least 1 ms, else a timer fires millions of times per simulated
/// second; at most a minute (TCP's maximum RTO).
pub const ENGINE_PERIOD_S: std::ops::RangeInclusive<f64> = 0.001..=60.0;
/// Idle timeouts: from 1 ms to the longest run.
pub const IDLE_TIMEOUT_S: std::ops::RangeInclusive<f64> = 0.001..=MAX_DURATION_S;
/// TCP windows, segments: 65 535 segments is gigabytes in flight, more than
/// any wireless path's bandwidth-delay product.
pub const MAX_CWND_SEGMENTS: u32 = 65_535;
/// Largest scenario or experiment file: far above any hand-written one
/// (the explicit topology of 2000 nodes is about 100 kB).
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// A scenario that cannot be run, with where and why. `file` is empty for a
/// scenario that did not come from a file (a sweep point names its own).
#[derive(Debug, Error)]
pub enum ScenarioError {
    #[error("{file}: cannot read: {err}")]
    Io { file: String, err: std::io::Error },
    #[error("{}{message}", prefix(file))]
    Parse { file: String, message: String },
    /// The one error value ([`InvalidValue`]), in a file.
    #[error("{}{invalid}", prefix(file))]
    Invalid { file: String, invalid: InvalidValue },
}

impl From<InvalidValue> for ScenarioError {
    fn from(invalid: InvalidValue) -> Self {
        ScenarioError::Invalid { file: String::new(), invalid }
    }
}

fn prefix(file: &str) -> String {
    if file.is_empty() {
        String::new()
    } else {
        format!("{file}: ")
    }
}

fn invalid(key: impl Into<String>, value: impl ToString, expected: impl Into<String>) -> ScenarioError {
    ScenarioError::Invalid { file: String::new(), invalid: InvalidValue::new(key, value, expected) }
}

/// `value` must lie in `range`; the error names `key`.
fn within<T: meshbed_core::limits::Bounded>(
    key: impl Into<String>,
    value: T,
    range: std::ops::RangeInclusive<T>,
    what: &str,
) -> Result<(), ScenarioError> {
    meshbed_core::limits::within(value, range, what).map_err(|expected| invalid(key, value.text(), expected))
}

impl ScenarioError {
    /// Names the file the error came from.
    pub fn in_file(self, name: &str) -> Self {
        match self {
            ScenarioError::Invalid { invalid, .. } => ScenarioError::Invalid { file: name.into(), invalid },
            ScenarioError::Parse { message, .. } => ScenarioError::Parse { file: name.into(), message },
            other => other,
        }
    }
}

/// A value of the wrong form for a typed key (a protocol, a traffic kind, a
/// rate controller: serde's `invalid value … expected …` and `unknown
/// variant … expected …`), as the one error value: `key = value: expected
/// …`, with the key's path from the top of the file. `None` for anything
/// else (a syntax error, a missing key), which the parser's own message
/// reports with its line.
fn typed_value_error(key: &str, value: Option<&str>, message: &str) -> Option<ScenarioError> {
    let typed = message.starts_with("invalid value:") || message.starts_with("unknown variant");
    let (_, expected) = message.split_once(", expected ")?;
    (typed && !key.is_empty() && key != ".").then(|| invalid(key, value.unwrap_or("(given)"), expected))
}

/// The segments of a path as serde_path_to_error writes it (`flows[0].protocol`).
fn e_path_segments(path: &str) -> Vec<String> {
    path.split('.')
        .flat_map(|part| {
            let mut v = Vec::new();
            let mut rest = part;
            if let Some(i) = rest.find('[') {
                v.push(rest[..i].to_string());
                rest = &rest[i..];
                while let Some(end) = rest.find(']') {
                    v.push(rest[..=end].to_string());
                    rest = &rest[end + 1..];
                }
            } else {
                v.push(rest.to_string());
            }
            v
        })
        .filter(|s| !s.is_empty())
        .collect()
}

/// The value at `path` in a TOML tree, if there is one.
fn lookup(value: &toml::Value, path: Vec<String>) -> Option<&toml::Value> {
    path.iter().try_fold(value, |v, seg| match seg.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
        Some(i) => v.as_array()?.get(i.parse::<usize>().ok()?),
        None => v.as_table()?.get(seg),
    })
}

/// Reads a scenario or experiment file: a regular file of at most
/// [`MAX_FILE_BYTES`], in UTF-8. Anything else (a directory, a FIFO, which
/// would block, a device such as /dev/zero, which never ends) is refused
/// before it is opened.
pub fn read_input_file(path: &Path) -> std::io::Result<String> {
    use std::io::{Error, ErrorKind, Read};
    let not_regular = |meta: &std::fs::Metadata| -> Option<&'static str> {
        let t = meta.file_type();
        if t.is_file() {
            return None;
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt;
            if t.is_fifo() {
                return Some("a FIFO");
            }
            if t.is_char_device() || t.is_block_device() {
                return Some("a device");
            }
            if t.is_socket() {
                return Some("a socket");
            }
        }
        Some(if t.is_dir() { "a directory" } else { "not a regular file" })
    };
    let refuse = |what: &str| Error::new(ErrorKind::InvalidInput, format!("{what}; expected a regular TOML file"));
    // Checked before opening: opening a FIFO with no writer blocks.
    if let Some(what) = not_regular(&std::fs::metadata(path)?) {
        return Err(refuse(what));
    }
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if let Some(what) = not_regular(&meta) {
        return Err(refuse(what));
    }
    let too_big = |size: String| {
        Error::new(ErrorKind::InvalidInput, format!("{size} bytes; expected a file of at most {MAX_FILE_BYTES} bytes"))
    };
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_big(meta.len().to_string()));
    }
    // Bounded even if the file grows while it is read.
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(too_big(format!("more than {MAX_FILE_BYTES}")));
    }
    Ok(text)
}

impl RandomFlows {
    /// `count` flows like `flow` (its `src` and `dst` ignored), starting in
    /// `start_window_s` if given.
    pub fn like(count: u32, start_window_s: Option<[f64; 2]>, flow: &FlowSpec) -> RandomFlows {
        let mut template = toml::Table::try_from(flow).expect("a flow serialises to a TOML table");
        template.remove("src");
        template.remove("dst");
        RandomFlows { count, start_window_s, flow: template, drawn: 0, drawn_for_seed: None }
    }
}

impl Topology {
    /// The area of a random topology, `(width_m, height_m)`.
    pub fn area(&self) -> Option<(f64, f64)> {
        match *self {
            Topology::Random { width_m, height_m, .. } => Some((width_m, height_m)),
            _ => None,
        }
    }
}

impl Scenario {
    /// Reads and validates a scenario file.
    pub fn from_file(path: &Path) -> Result<Scenario, ScenarioError> {
        let name = path.display().to_string();
        let text = read_input_file(path).map_err(|err| ScenarioError::Io { file: name.clone(), err })?;
        let mut s = Scenario::parse(&text).map_err(|e| e.in_file(&name))?;
        // A movement file is named relative to the scenario file.
        if let Some(
            crate::mobility::MobilitySpec::Ns2 { file } | crate::mobility::MobilitySpec::Bonnmotion { file, .. },
        ) = &mut s.mobility
        {
            if file.is_relative() {
                *file = path.parent().unwrap_or(Path::new("")).join(&*file);
            }
        }
        crate::check_routes(&s).map_err(|e| e.in_file(&name))?;
        Ok(s)
    }

    /// Parses and validates scenario text, the flows' routes included
    /// ([`crate::check_routes`]); a movement file is named relative to the
    /// working directory.
    pub fn from_toml(text: &str) -> Result<Scenario, ScenarioError> {
        let s = Scenario::parse(text)?;
        crate::check_routes(&s)?;
        Ok(s)
    }

    fn parse(text: &str) -> Result<Scenario, ScenarioError> {
        serde_path_to_error::deserialize(toml::Deserializer::new(text)).map_err(|e| {
            let key = e.path().to_string();
            let inner = e.into_inner();
            let value = inner.span().and_then(|span| text.get(span)).map(str::trim);
            typed_value_error(&key, value, inner.message())
                .unwrap_or_else(|| ScenarioError::Parse { file: String::new(), message: inner.to_string() })
        })
    }

    /// Reads a scenario from a TOML tree (an experiment's point), as
    /// [`Scenario::parse`] reads text: a value of the wrong form names its
    /// key.
    pub fn from_tree(tree: toml::Table) -> Result<Scenario, ScenarioError> {
        let value = toml::Value::Table(tree);
        serde_path_to_error::deserialize(value.clone()).map_err(|e: serde_path_to_error::Error<toml::de::Error>| {
            let key = e.path().to_string();
            let inner = e.into_inner();
            let found = lookup(&value, e_path_segments(&key)).map(|v| v.to_string());
            typed_value_error(&key, found.as_deref(), inner.message())
                .unwrap_or_else(|| ScenarioError::Parse { file: String::new(), message: inner.message().to_string() })
        })
    }

    /// The flow `[random_flows]` describes, between `src` and `dst`.
    fn random_flow(&self, src: u32, dst: u32) -> Result<FlowSpec, ScenarioError> {
        let Some(r) = &self.random_flows else { unreachable!("called with random flows") };
        if let Some(k) = ["src", "dst"].into_iter().find(|k| r.flow.contains_key(*k)) {
            return Err(invalid(
                format!("random_flows.flow.{k}"),
                r.flow[k].to_string(),
                "no value: sources and destinations are drawn at random",
            ));
        }
        let mut t = r.flow.clone();
        t.insert("src".into(), toml::Value::Integer(src.into()));
        t.insert("dst".into(), toml::Value::Integer(dst.into()));
        t.try_into().map_err(|e: toml::de::Error| ScenarioError::Parse {
            file: String::new(),
            message: format!("random_flows.flow: {}", e.message()),
        })
    }

    /// Checks `[random_flows]`: its count (with the listed flows, at most
    /// [`MAX_FLOWS`]), its start window and its template.
    fn check_random_flows(&self, listed: usize) -> Result<(), ScenarioError> {
        let Some(r) = &self.random_flows else { return Ok(()) };
        within("random_flows.count", r.count as usize, 1..=MAX_FLOWS - listed.min(MAX_FLOWS), "a number of flows")?;
        if let Some([a, b]) = r.start_window_s {
            if !(a >= 0.0 && a < b && b <= self.duration_s) {
                return Err(invalid(
                    "random_flows.start_window_s",
                    format!("[{}, {}]", a.text(), b.text()),
                    format!("[a, b] in seconds with 0 <= a < b <= duration_s = {}", self.duration_s.text()),
                ));
            }
        }
        self.random_flow(0, 1).map(|_| ())
    }

    /// Draws the flows of `[random_flows]` for the scenario's seed: replaces
    /// those drawn before (for another seed) and appends `count` new ones.
    /// Without `[random_flows]` it does nothing.
    fn draw_random_flows(&mut self) -> Result<(), ScenarioError> {
        use rand::Rng;
        let Some(r) = &self.random_flows else { return Ok(()) };
        let (count, window, drawn) = (r.count, r.start_window_s, r.drawn);
        let listed = self.flows.len() - drawn.min(self.flows.len());
        self.flows.truncate(listed);
        self.check_random_flows(listed)?;
        let nodes = self.node_count();
        let template = self.random_flow(0, 1)?;
        let mut rng =
            meshbed_core::stream_rng(self.seed, meshbed_core::StreamId::new(meshbed_core::StreamKind::FlowPairs, 0));
        // With fewer than two nodes there is no pair; the topology's own
        // check reports it.
        for _ in 0..if nodes >= 2 { count } else { 0 } {
            let src = rng.gen_range(0..nodes);
            let dst = (src + rng.gen_range(1..nodes)) % nodes;
            let mut f = FlowSpec { src, dst, ..template.clone() };
            if let Some([a, b]) = window {
                f.start_s = rng.gen_range(a..b);
            }
            self.flows.push(f);
        }
        if let Some(r) = &mut self.random_flows {
            r.drawn = self.flows.len() - listed;
            r.drawn_for_seed = Some(self.seed);
        }
        Ok(())
    }

    /// The scenario with its random flows drawn for its current seed (a
    /// copy only if they were drawn for another seed or not yet): what a
    /// run uses, so that `--seed` and an experiment's repetitions draw
    /// their own pairs.
    pub fn with_random_flows_drawn(&self) -> Result<std::borrow::Cow<'_, Scenario>, ScenarioError> {
        match &self.random_flows {
            Some(r) if r.drawn_for_seed != Some(self.seed) => {
                let mut s = self.clone();
                s.draw_random_flows()?;
                Ok(std::borrow::Cow::Owned(s))
            }
            _ => Ok(std::borrow::Cow::Borrowed(self)),
        }
    }

    /// How many flows a run of this scenario has: those listed and those
    /// `[random_flows]` draws (the same for every seed).
    pub fn flow_count(&self) -> usize {
        let listed = self.flows.len() - self.random_flows.as_ref().map_or(0, |r| r.drawn.min(self.flows.len()));
        listed + self.random_flows.as_ref().map_or(0, |r| r.count as usize)
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
                    rate_control: n.rate_control.as_deref().and_then(meshbed_radio::RateControl::from_name),
                    floor: n.floor,
                })
                .collect(),
            Topology::Random { nodes, width_m, height_m } => {
                let area = meshbed_mobility::Area { width_m: *width_m, height_m: *height_m };
                meshbed_mobility::random_placement(&area, *nodes, self.seed)
                    .expect("validated area")
                    .into_iter()
                    .map(|p| NodeRadio::at(p.x_m, p.y_m))
                    .collect()
            }
            Topology::Stack { flows, row_spacing_m, link_m } => stack_rows(*flows)
                .flat_map(|row| {
                    let y_m = row as f64 * row_spacing_m;
                    [NodeRadio::at(0.0, y_m), NodeRadio::at(*link_m, y_m)]
                })
                .collect(),
        }
    }

    /// The number of nodes; call on a validated scenario (a grid's
    /// rows × cols is checked there not to overflow).
    pub fn node_count(&self) -> u32 {
        match &self.topology {
            Topology::Chain { nodes, .. } => *nodes,
            Topology::Grid { rows, cols, .. } => rows.saturating_mul(*cols),
            Topology::Explicit { nodes } => u32::try_from(nodes.len()).unwrap_or(u32::MAX),
            Topology::Random { nodes, .. } => *nodes,
            Topology::Stack { flows, .. } => flows.saturating_mul(2),
        }
    }

    /// The PHY data rate of `node`, kbit/s: its own, or the radio's.
    pub fn data_rate_kbps(&self, node: u32) -> u32 {
        let own = match &self.topology {
            Topology::Explicit { nodes } => nodes.get(node as usize).and_then(|n| n.data_rate_kbps),
            _ => None,
        };
        own.unwrap_or(self.radio.data_rate_kbps)
    }

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

    /// Semantic checks beyond types; every error names its key.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        // A drawn flow's mistake is its template's: name that key.
        let listed = self.flows.len() - self.random_flows.as_ref().map_or(0, |r| r.drawn.min(self.flows.len()));
        self.check_random_flows(listed)?;
        self.validate_flows_as_listed().map_err(|e| match e {
            ScenarioError::Invalid { file, mut invalid } => {
                let drawn = invalid
                    .key
                    .strip_prefix("flows[")
                    .and_then(|k| k.split_once("]."))
                    .filter(|(i, _)| i.parse::<usize>().is_ok_and(|i| i >= listed));
                if let Some((_, k)) = drawn {
                    invalid.key = format!("random_flows.flow.{k}");
                }
                ScenarioError::Invalid { file, invalid }
            }
            e => e,
        })
    }

    fn validate_flows_as_listed(&self) -> Result<(), ScenarioError> {
        if !(self.duration_s > 0.0 && self.duration_s <= MAX_DURATION_S) {
            return Err(invalid(
                "duration_s",
                self.duration_s.text(),
                format!("a positive number of simulated seconds, at most {MAX_DURATION_S} (one day)"),
            ));
        }
        self.radio.resolve()?;
        let spacing = |spacing_m: f64| {
            if spacing_m > 0.0 && spacing_m <= MAX_SPACING_M {
                Ok(())
            } else {
                Err(invalid(
                    "topology.spacing_m",
                    spacing_m.text(),
                    format!("a positive distance in metres, at most {MAX_SPACING_M}"),
                ))
            }
        };
        match &self.topology {
            Topology::Chain { nodes, spacing_m } => {
                within("topology.nodes", *nodes, 2..=MAX_NODES, "a number of nodes")?;
                spacing(*spacing_m)?;
            }
            Topology::Grid { rows, cols, spacing_m } => {
                match rows.checked_mul(*cols) {
                    Some(n) if (2..=MAX_NODES).contains(&n) => {}
                    product => {
                        return Err(invalid(
                            "topology.rows",
                            format!(
                                "{rows} (cols = {cols}, {} nodes)",
                                product.map_or_else(|| (*rows as u64 * *cols as u64).to_string(), |n| n.to_string())
                            ),
                            format!("a grid of 2 to {MAX_NODES} nodes"),
                        ))
                    }
                }
                spacing(*spacing_m)?;
            }
            Topology::Explicit { nodes } => {
                if !(2..=MAX_NODES as usize).contains(&nodes.len()) {
                    return Err(invalid(
                        "topology.nodes",
                        format!("({} entries)", nodes.len()),
                        format!("a list of 2 to {MAX_NODES} nodes"),
                    ));
                }
                let std = self.radio.standard;
                for (i, n) in nodes.iter().enumerate() {
                    for (axis, v) in [("x_m", n.x_m), ("y_m", n.y_m)] {
                        within(
                            format!("topology.nodes[{i}].{axis}"),
                            v,
                            -MAX_COORDINATE_M..=MAX_COORDINATE_M,
                            "a coordinate in metres",
                        )?;
                    }
                    if let Err(expected) = meshbed_radio::link::check_floor(n.floor, self.radio.floors.as_ref()) {
                        return Err(invalid(format!("topology.nodes[{i}].floor"), n.floor, expected));
                    }
                    if let Some(p) = n.tx_power_dbm {
                        let key = format!("topology.nodes[{i}].tx_power_dbm");
                        meshbed_radio::config::check_tx_power_dbm(&key, p)
                            .map_err(|e| invalid(key, e.value, e.expected))?;
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
                    if let Some(r) = n.rate_control.as_deref() {
                        if meshbed_radio::RateControl::from_name(r).is_none() {
                            let key = format!("topology.nodes[{i}].rate_control");
                            return Err(invalid(key, format!("\"{r}\""), meshbed_radio::RateControl::expected()));
                        }
                    }
                }
            }
            Topology::Random { nodes, width_m, height_m } => {
                within("topology.nodes", *nodes, 2..=MAX_NODES, "a number of nodes")?;
                within("topology.width_m", *width_m, f64::MIN_POSITIVE..=MAX_COORDINATE_M, "a size in metres")?;
                within("topology.height_m", *height_m, f64::MIN_POSITIVE..=MAX_COORDINATE_M, "a size in metres")?;
            }
            Topology::Stack { flows, row_spacing_m, link_m } => {
                // An odd count, so that one row is the middle one.
                if !(flows % 2 == 1 && (3..=MAX_NODES / 2).contains(flows)) {
                    return Err(invalid(
                        "topology.flows",
                        flows,
                        format!("an odd number of flows from 3 to {} (two nodes each)", MAX_NODES / 2),
                    ));
                }
                let distance = "a positive distance in metres";
                within("topology.row_spacing_m", *row_spacing_m, f64::MIN_POSITIVE..=MAX_SPACING_M, distance)?;
                within("topology.link_m", *link_m, f64::MIN_POSITIVE..=MAX_SPACING_M, distance)?;
            }
        }
        let n = self.node_count();
        if let Routing::Static { paths } = &self.routing {
            for (p, path) in paths.iter().enumerate() {
                let key = format!("routing.paths[{p}]");
                if !(2..=n as usize).contains(&path.len()) {
                    return Err(invalid(
                        key,
                        format!("{path:?}"),
                        format!("a path of 2 to {n} nodes (the node count)"),
                    ));
                }
                for (k, &v) in path.iter().enumerate() {
                    if v >= n {
                        return Err(invalid(format!("{key}[{k}]"), v, format!("a node index below {n}")));
                    }
                    if path[..k].contains(&v) {
                        return Err(invalid(format!("{key}[{k}]"), v, "a node not already on the path (no loops)"));
                    }
                }
            }
        }
        if self.flows.len() > MAX_FLOWS {
            return Err(invalid(
                "flows",
                format!("({} flows)", self.flows.len()),
                format!("at most {MAX_FLOWS} flows"),
            ));
        }
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

    /// A transport that takes its rate from the routing module's path
    /// information needs that module: MTL's is OLSR with ETX (seed 004
    /// §III.B), the only engine here whose path information measures link
    /// quality. Names the routing key that must change.
    fn check_path_info_source(&self, i: usize, protocol: Protocol) -> Result<(), ScenarioError> {
        if !needs_path_info(protocol) {
            return Ok(());
        }
        let why = format!(
            "because flows[{i}].protocol = \"{protocol}\" takes its rate from the link ETX of its route: its routing module is OLSR with the ETX metric (seed 004 §III.B)"
        );
        match &self.routing {
            Routing::Olsr { etx: true, .. } => Ok(()),
            Routing::Olsr { etx: false, .. } => {
                Err(invalid("routing.metric", "\"hop-count\"", format!("\"etx\" {why}")))
            }
            other => Err(invalid(
                "routing.kind",
                format!("\"{}\"", other.kind_name()),
                format!("\"olsr\" with metric = \"etx\" {why}"),
            )),
        }
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
            mobility: None,
            random_flows: None,
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn err_of(text: &str) -> String {
        Scenario::from_toml(text).unwrap_err().in_file("s.toml").to_string()
    }

    #[test]
    fn a_transport_that_needs_path_info_needs_olsr_with_etx() {
        let file = |routing: &str, protocol: &str| {
            format!("duration_s = 2\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200\n{routing}[[flows]]\nsrc = 0\ndst = 2\nprotocol = \"{protocol}\"\nbytes = 1000\n")
        };
        assert!(needs_path_info(Protocol::Mtl));
        assert!(Protocol::ALL.iter().all(|&p| needs_path_info(p) == (p == Protocol::Mtl)));
        let e = err_of(&file("", "mtl"));
        assert!(
            e.contains("routing.kind = \"shortest-path\"") && e.contains("expected \"olsr\" with metric = \"etx\""),
            "{e}"
        );
        assert!(e.contains("flows[0].protocol = \"mtl\""), "{e}");
        let e = err_of(&file("[routing]\nkind = \"aodv\"\n", "mtl"));
        assert!(e.contains("routing.kind = \"aodv\""), "{e}");
        let e = err_of(&file("[routing]\nkind = \"olsr\"\n", "mtl"));
        assert!(e.contains("routing.metric = \"hop-count\"") && e.contains("expected \"etx\""), "{e}");
        // With OLSR-ETX the routing check passes (what follows is the
        // protocol's own); other transports run over any routing.
        assert!(Scenario::from_toml(&file("[routing]\nkind = \"olsr\"\nmetric = \"etx\"\n", "mtl")).is_ok());
        for routing in ["", "[routing]\nkind = \"olsr\"\n", "[routing]\nkind = \"aodv\"\n"] {
            assert!(Scenario::from_toml(&file(routing, "tcp-newreno")).is_ok(), "{routing}");
        }
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

    const CHAIN: &str = "duration_s = 2\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200\n";

    fn chain_with(flow: &str) -> String {
        format!("{CHAIN}[[flows]]\nsrc = 0\ndst = 2\n{flow}")
    }

    #[test]
    fn a_wrong_value_in_a_tagged_table_names_its_key() {
        let e = err_of("duration_s = 2\n[topology]\nkind = \"chain\"\nnodes = \"three\"\nspacing_m = 200\n");
        assert!(e.contains("topology.nodes = \"three\": expected a whole number of nodes"), "{e}");
        let e = err_of(&format!("{CHAIN}[routing]\nkind = \"static\"\npaths = 5\n"));
        assert!(e.contains("routing.paths = 5: expected"), "{e}");
        let e = err_of("duration_s = 2\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200\nrows = 2\n");
        assert!(e.contains("topology.rows: unknown key"), "{e}");
        // The printed default still reads back the same.
        let s = Scenario::builtin_default();
        assert_eq!(Scenario::from_toml(&toml::to_string(&s).unwrap()).unwrap(), s);
    }

    #[test]
    fn errors_without_a_file_have_no_empty_prefix_and_protocols_are_listed_once() {
        let e = Scenario::from_toml(&chain_with("protocol = \"tcp-vegas\"\nbytes = 10\n")).unwrap_err().to_string();
        assert!(e.starts_with("flows[0].protocol = \"tcp-vegas\": expected one of atp-default,"), "{e}");
        assert_eq!(e.matches("expected").count(), 1, "{e}");
    }

    #[test]
    fn grid_size_overflow_is_refused_not_wrapped() {
        let e = err_of("duration_s = 2\n[topology]\nkind = \"grid\"\nrows = 2147483649\ncols = 2\nspacing_m = 200\n");
        assert!(e.contains("topology.rows = 2147483649 (cols = 2, 4294967298 nodes)") && e.contains("2000"), "{e}");
    }

    #[test]
    fn numeric_bounds_just_inside_pass_just_outside_fail() {
        let ok = |text: &str| Scenario::from_toml(text).map(|_| ()).map_err(|e| e.to_string());
        let fails_on = |text: &str, key: &str| {
            let e = ok(text).unwrap_err();
            assert!(e.starts_with(&format!("{key} = ")), "expected an error on {key}: {e}");
        };
        let with_duration = |d: &str| CHAIN.replace("duration_s = 2", &format!("duration_s = {d}"));
        ok(&with_duration("86400")).unwrap();
        fails_on(&with_duration("86400.001"), "duration_s");
        let chain = |nodes: u32, spacing: &str| {
            format!("duration_s = 1\n[topology]\nkind = \"chain\"\nnodes = {nodes}\nspacing_m = {spacing}\n")
        };
        ok(&chain(MAX_NODES, "200")).unwrap();
        fails_on(&chain(MAX_NODES + 1, "200"), "topology.nodes");
        ok(&chain(3, "10000")).unwrap();
        fails_on(&chain(3, "10000.5"), "topology.spacing_m");
        fails_on(&chain(3, "1e308"), "topology.spacing_m");
        let explicit = |x: &str| {
            format!("duration_s = 1\n[topology]\nkind = \"explicit\"\nnodes = [{{ x_m = 0, y_m = 0 }}, {{ x_m = {x}, y_m = 0 }}]\n")
        };
        ok(&explicit("2e7")).unwrap();
        fails_on(&explicit("2.1e7"), "topology.nodes[1].x_m");
        let radio = |kv: &str| format!("{CHAIN}[radio.mac]\n{kv}\n");
        ok(&radio("queue_packets = 10000")).unwrap();
        fails_on(&radio("queue_packets = 4294967295"), "radio.mac.queue_packets");
        let atp = |epoch: &str| {
            chain_with(&format!("protocol = \"atp-default\"\nbytes = 1000\n[flows.atp]\nepoch_s = {epoch}\n"))
        };
        ok(&atp("0.001")).unwrap();
        fails_on(&atp("0.000999"), "flows[0].atp.epoch_s");
        fails_on(&atp("1e-12"), "flows[0].atp.epoch_s");
        let tcp = |kv: &str| chain_with(&format!("protocol = \"tcp-reno\"\nbytes = 1000\n[flows.tcp]\n{kv}\n"));
        ok(&tcp("max_cwnd_segments = 65535")).unwrap();
        fails_on(&tcp("max_cwnd_segments = 65536"), "flows[0].tcp.max_cwnd_segments");
        fails_on(&tcp("min_rto_s = 1e-9"), "flows[0].tcp.min_rto_s");
        // CBR: up to the source's PHY rate (24 Mbit/s by default).
        let cbr = |rate: &str| chain_with(&format!("traffic = \"cbr\"\nrate_kbps = {rate}\n"));
        ok(&cbr("24000")).unwrap();
        fails_on(&cbr("24000.5"), "flows[0].rate_kbps");
        fails_on(&cbr("1e300"), "flows[0].rate_kbps");
        fails_on(&cbr("1e-300"), "flows[0].rate_kbps");
    }

    #[test]
    fn flows_paths_and_sender_data_are_bounded() {
        let flows = "[[flows]]\nsrc = 0\ndst = 2\n".repeat(MAX_FLOWS + 1);
        let e = err_of(&format!("{CHAIN}{flows}"));
        assert!(e.contains("flows = (1001 flows): expected at most 1000 flows"), "{e}");
        let e = err_of(&format!("{CHAIN}[routing]\nkind = \"static\"\npaths = [[0, 1, 0]]\n"));
        assert!(e.contains("routing.paths[0][2] = 0") && e.contains("no loops"), "{e}");
        // A flow that runs for a day at 54 Mbit/s would hold 583 GB.
        let day = "duration_s = 86400\n[radio]\ndata_rate_kbps = 54000\n[topology]\nkind = \"chain\"\nnodes = 2\nspacing_m = 20\n[[flows]]\nsrc = 0\ndst = 1\nprotocol = \"atp-default\"\nstop_s = 86400\n";
        let e = err_of(day);
        assert!(e.contains("flows[0].stop_s = 86400") && e.contains(&MAX_SENDER_DATA_BYTES.to_string()), "{e}");
        // Two flows of 2 GiB fit; a third byte does not.
        let two = chain_with(&format!(
            "protocol = \"atp-default\"\nbytes = {}\n[[flows]]\nsrc = 0\ndst = 2\nprotocol = \"atp-default\"\nbytes = {}\n",
            1u64 << 31,
            1u64 << 31
        ));
        Scenario::from_toml(&two).unwrap();
        let e =
            err_of(&two.replacen(&format!("bytes = {}\n", 1u64 << 31), &format!("bytes = {}\n", (1u64 << 31) + 1), 1));
        assert!(e.contains("flows[1].bytes = 2147483648"), "{e}");
    }

    #[test]
    fn only_regular_files_of_bounded_size_are_read() {
        let dir = std::env::temp_dir().join(format!("meshbed-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let e = read_input_file(&dir).unwrap_err().to_string();
        assert!(e.contains("a directory"), "{e}");
        let e = read_input_file(Path::new("/dev/zero")).unwrap_err().to_string();
        assert!(e.contains("a device"), "{e}");
        // A FIFO without a writer: refused at once, never opened (opening blocks).
        let fifo = dir.join("fifo");
        let _ = std::fs::remove_file(&fifo);
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().map(|s| s.success()).unwrap_or(false);
        if made {
            let e = read_input_file(&fifo).unwrap_err().to_string();
            assert!(e.contains("a FIFO"), "{e}");
        }
        let big = dir.join("big.toml");
        std::fs::write(&big, vec![b'#'; MAX_FILE_BYTES as usize + 1]).unwrap();
        let e = read_input_file(&big).unwrap_err().to_string();
        assert!(e.contains(&format!("{} bytes; expected a file of at most", MAX_FILE_BYTES + 1)), "{e}");
        let fits = dir.join("fits.toml");
        std::fs::write(&fits, vec![b'#'; MAX_FILE_BYTES as usize]).unwrap();
        assert_eq!(read_input_file(&fits).unwrap().len(), MAX_FILE_BYTES as usize);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_radio_preset_is_a_base_the_table_overrides() {
        let text = |radio: &str| {
            format!("duration_s = 1.0\n[radio]\n{radio}\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200.0\n")
        };
        let s = Scenario::from_toml(&text("preset = \"ns2\"")).unwrap();
        assert_eq!(s.radio, RadioConfig::ns2());
        assert_eq!(s.radio.mac.rts_threshold_bytes, Some(0));
        assert_eq!((s.radio.data_rate_kbps, s.radio.mac.queue_packets), (2_000, 50));
        // A key of the table wins; `mac` is overridden key by key.
        let s = Scenario::from_toml(&text(
            "preset = \"ns2\"\ndata_rate_kbps = 1000\n[radio.mac]\nqueue_packets = 20\n[radio.propagation]\nmodel = \"friis\"",
        ))
        .unwrap();
        assert_eq!(s.radio.data_rate_kbps, 1_000);
        assert_eq!(s.radio.mac.queue_packets, 20);
        assert_eq!(s.radio.mac.rts_threshold_bytes, Some(0), "the rest of the preset's mac stays");
        assert_eq!(s.radio.propagation, meshbed_radio::propagation::Propagation::Friis);
        assert_eq!(s.radio.standard, RadioConfig::ns2().standard);
        let e = Scenario::from_toml(&text("preset = \"ns3\"")).unwrap_err().to_string();
        assert!(e.contains("radio.preset = \"ns3\": expected one of \"ns2\""), "{e}");
        let e = Scenario::from_toml(&text("preset = \"ns2\"\ncolour = 1")).unwrap_err().to_string();
        assert!(e.contains("unknown field `colour`"), "{e}");
    }

    #[test]
    fn nodes_on_floors_need_the_radio_s_floors_and_each_floor_costs_its_slab() {
        let building = |floors: &str, floor: &str| {
            format!(
                "duration_s = 1\n[radio]\nstandard = \"802.11a\"\ndata_rate_kbps = 6000\ntx_power_dbm = 2\n{floors}\n\
                 [radio.propagation]\nmodel = \"log-distance\"\nexponent = 3.3\n\
                 [topology]\nkind = \"explicit\"\nnodes = [{{ x_m = 0, y_m = 0 }}, {{ x_m = 3, y_m = 0, floor = {floor} }}]\n"
            )
        };
        let floors = "[radio.floors]\nheight_m = 4\nloss_db = 16";
        let e = err_of(&building("", "1"));
        assert!(e.contains("topology.nodes[1].floor = 1: expected 0, or a building's floors"), "{e}");
        let e = err_of(&building(&floors.replace("height_m = 4", "height_m = 0"), "1"));
        assert!(e.contains("floors.height_m = 0") && e.contains("floor-to-floor height"), "{e}");
        let e = err_of(&building(&floors.replace("loss_db = 16", "loss_db = -3"), "1"));
        assert!(e.contains("floors.loss_db = -3"), "{e}");
        // The same pair on one floor and one floor apart: the slab and the
        // 3-D distance (5 m instead of 3 m) are the only difference.
        let received_dbm = |floor: &str| {
            let s = Scenario::from_toml(&building(floors, floor)).unwrap();
            let b = meshbed_radio::LinkBudget::new(&s.radio, &s.node_radios(), s.seed).unwrap();
            b.mean_rx_dbm(0, 1)
        };
        let (same, above) = (received_dbm("0"), received_dbm("1"));
        let expected_db = 16.0 + 33.0 * (5f64 / 3.0).log10();
        assert!((same - above - expected_db).abs() < 1e-9, "{same} {above}");
        // A scenario file round-trips with its floors.
        let s = Scenario::from_toml(&building(floors, "1")).unwrap();
        assert_eq!(Scenario::from_toml(&toml::to_string(&s).unwrap()).unwrap(), s);
    }

    #[test]
    fn a_threshold_in_the_file_is_the_threshold_used_and_a_range_with_it_is_refused() {
        let text = |radio: &str| {
            format!("duration_s = 1\n[topology]\nkind = \"chain\"\nnodes = 2\nspacing_m = 10\n[radio]\n{radio}\n")
        };
        let resolved = |radio: &str| Scenario::from_toml(&text(radio)).unwrap().radio.resolve().unwrap();
        // Regression: a default range used to come back on reading and
        // override the thresholds a file (or a built-in) gave.
        let r = resolved("rx_sensitivity_dbm = -70.0\ncs_threshold_dbm = -72.0");
        assert_eq!((r.rx_sensitivity_dbm, r.cs_threshold_dbm), (-70.0, -72.0));
        // Neither: the default ranges; a written-out scenario reads back the same.
        let s = Scenario::from_toml(&text("cs_threshold_dbm = -80.0")).unwrap();
        let back = Scenario::from_toml(&toml::to_string(&s).unwrap()).unwrap();
        assert_eq!(back.radio.resolve().unwrap().cs_threshold_dbm, -80.0);
        let r = resolved("");
        let at_250_m = s.radio.tx_power_dbm - s.radio.propagation.loss_db(250.0, s.radio.standard.frequency_hz());
        assert!((r.rx_sensitivity_dbm - at_250_m).abs() < 1e-9);
        // Both for one threshold: refused, naming both.
        let e = err_of(&text("tx_range_m = 200.0\nrx_sensitivity_dbm = -80.0"));
        assert!(e.contains("radio.rx_sensitivity_dbm = -80: expected either radio.tx_range_m or radio.rx_sensitivity_dbm, not both (radio.tx_range_m = 200)"), "{e}");
        // A preset's range gives way to the file's threshold.
        let r = resolved("preset = \"ns2\"\nrx_sensitivity_dbm = -70.0");
        assert_eq!(r.rx_sensitivity_dbm, -70.0);
    }
}
