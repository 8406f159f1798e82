//! `[routing]`: how next hops are chosen, and [`Tagged`], the key-by-key
//! reader of a table tagged with `kind` that `[topology]` uses too.

use super::error::{brief, invalid, ScenarioError};
use super::limits::SS_THRESHOLD_DBM;
use super::unknown_key::{under_table, unknown_key};
use super::Scenario;
use meshbed_proto::Protocol;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How next hops are chosen.
// Read by [`Tagged`], so that a wrong value names its key; the schema says
// what it reads, defaults included: every key of the kind, no other.
#[derive(Clone, Debug, Default, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub enum Routing {
    /// Fewest hops over links both ends can decode (interference-free, no
    /// fading), ties broken towards the lowest node index.
    #[default]
    ShortestPath,
    /// Explicit paths; each path installs next hops in both directions for
    /// every node on it, so that replies follow the same path.
    Static {
        /// The paths, each a list of node numbers from one end to the other
        /// (2 nodes or more, none twice).
        paths: Vec<Vec<u32>>,
    },
    /// DSR (seed 002 §5.1, ns-2's; RFC 4728), a routing engine per node:
    /// routes are discovered as packets need them.
    Dsr {
        /// Routing control packets go ahead of data in the interface queue
        /// (ns-2's CMU priority queue, which the documents' ns-2 runs used).
        #[schemars(default = "default_control_priority")]
        control_priority: bool,
    },
    /// AODV (RFC 3561; seed 003's AODV-UU), with seed 003's
    /// signal-strength filter if `ss_threshold_dbm` is given.
    Aodv {
        /// Control packets from neighbours whose averaged signal is below
        /// this are ignored (seed 003 §3.2); absent: no filter.
        #[schemars(range(min = *SS_THRESHOLD_DBM.start(), max = *SS_THRESHOLD_DBM.end()))]
        ss_threshold_dbm: Option<f64>,
        /// A MAC retry-limit failure breaks the link at once; false: only
        /// missed HELLOs do (AODV-UU's default).
        #[schemars(default = "default_link_layer_feedback")]
        link_layer_feedback: bool,
        /// HELLO messages every second, and a neighbour silent for two of
        /// them lost (RFC 3561); false: neither, links break only on MAC
        /// failures (ns-2's `AODV_LINK_LAYER_DETECTION`, the ATP paper's
        /// AODV; needs `link_layer_feedback`).
        #[schemars(default = "default_hello")]
        hello: bool,
        /// Route requests search outwards with growing TTLs (RFC 3561
        /// §6.4) instead of flooding the whole network at once.
        #[schemars(default)]
        expanding_ring_search: bool,
        /// Routing control packets go ahead of data in the interface queue
        /// (ns-2's CMU priority queue, which the documents' ns-2 runs used).
        #[schemars(default = "default_control_priority")]
        control_priority: bool,
    },
    /// OLSR (RFC 3626), proactive: periodic HELLO and TC messages build
    /// every node's routes (at RFC 3626 §18.2's intervals).
    Olsr {
        /// The route metric: `"hop-count"`, or `"etx"`, the expected
        /// transmission count from probes (seed 004 §III.B: MTL's routing).
        // Written as the key it is read from, so that a scenario written
        // out (an experiment's base) reads back.
        #[serde(rename = "metric", serialize_with = "olsr_metric")]
        #[schemars(default, schema_with = "olsr_metric_schema")]
        etx: bool,
        /// A MAC retry-limit failure declares the link lost at once (RFC
        /// 3626 §13); false: links are lost when HELLOs stop.
        #[schemars(default)]
        link_layer_notification: bool,
        /// Routing control packets go ahead of data in the interface queue
        /// (ns-2's CMU priority queue, which the documents' ns-2 runs used).
        #[schemars(default = "default_control_priority")]
        control_priority: bool,
    },
}

/// `[routing] metric` of OLSR: `"etx"` or `"hop-count"`.
fn olsr_metric<S: serde::Serializer>(etx: &bool, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(if *etx { "etx" } else { "hop-count" })
}

fn olsr_metric_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": "string", "enum": ["hop-count", "etx"] })
}

/// `control_priority` of a dynamic routing kind when absent: true, as in
/// the documents' ns-2 runs.
fn default_control_priority() -> bool {
    true
}

/// AODV's `hello` when absent: true (RFC 3561, AODV-UU).
fn default_hello() -> bool {
    true
}

/// AODV's `link_layer_feedback` when absent: true (ns-2's AODV).
fn default_link_layer_feedback() -> bool {
    true
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
        Routing::Dsr { control_priority: default_control_priority() }
    }

    /// AODV with its defaults (link-layer feedback, no expanding ring
    /// search) and an optional signal-strength threshold.
    pub fn aodv(ss_threshold_dbm: Option<f64>) -> Routing {
        Routing::Aodv {
            ss_threshold_dbm,
            link_layer_feedback: default_link_layer_feedback(),
            hello: default_hello(),
            expanding_ring_search: false,
            control_priority: default_control_priority(),
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

    /// The routing engine of `node` in a run with `seed`, for the kinds
    /// that run engines (`None` for shortest-path and static routes). The
    /// one place a `[routing]` table becomes an engine: the simulator and
    /// the routing daemon (`meshbed routed`) both build theirs here, so a
    /// scenario routes alike in every world.
    pub fn engine(&self, node: u32, seed: u64) -> Option<Box<dyn meshbed_routing::RoutingEngine + Send>> {
        let stream = meshbed_routing::node_rng(seed, node);
        Some(match *self {
            Routing::Dsr { .. } => {
                Box::new(meshbed_routing::dsr::Dsr::new(node, meshbed_routing::dsr::DsrConfig::default(), stream))
            }
            Routing::Aodv { ss_threshold_dbm, link_layer_feedback, hello, expanding_ring_search, .. } => {
                let config = meshbed_routing::AodvConfig {
                    ss_threshold_dbm,
                    link_layer_feedback,
                    hellos: hello,
                    expanding_ring_search,
                    ..meshbed_routing::AodvConfig::default()
                };
                Box::new(meshbed_routing::Aodv::new(node, config, stream))
            }
            Routing::Olsr { .. } => Box::new(meshbed_routing::OlsrEngine::new(node, self.olsr_config()?, stream)),
            Routing::ShortestPath | Routing::Static { .. } => return None,
        })
    }

    /// The configuration of OLSR's engines (`None` for other kinds): its
    /// intervals, and the metric's.
    pub fn olsr_config(&self) -> Option<meshbed_routing::OlsrConfig> {
        let Routing::Olsr { etx, link_layer_notification, .. } = *self else { return None };
        let base = if etx { meshbed_routing::OlsrConfig::etx() } else { meshbed_routing::OlsrConfig::default() };
        Some(meshbed_routing::OlsrConfig { link_layer_notification, ..base })
    }

    /// OLSR with its defaults (no link-layer notification), hop count or ETX.
    pub fn olsr(etx: bool) -> Routing {
        Routing::Olsr { etx, link_layer_notification: false, control_priority: default_control_priority() }
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
pub(super) struct Tagged<'a> {
    pub(super) section: &'static str,
    pub(super) table: &'a toml::Table,
}

impl<'a> Tagged<'a> {
    pub(super) fn kind(&self, kinds: &[&str]) -> Result<&'a str, String> {
        let expected = kinds.iter().map(|k| format!("\"{k}\"")).collect::<Vec<_>>().join(", ");
        match self.table.get("kind") {
            Some(toml::Value::String(k)) if kinds.contains(&k.as_str()) => Ok(k),
            Some(v) => Err(format!("{}.kind = {}: expected one of {expected}", self.section, brief(v))),
            None => Err(format!("{}.kind = (missing): expected one of {expected}", self.section)),
        }
    }

    /// An optional key: absent is `None`.
    pub(super) fn get_opt<T: serde::de::DeserializeOwned>(&self, key: &str, what: &str) -> Result<Option<T>, String> {
        match self.table.contains_key(key) {
            true => self.get(key, what).map(Some),
            false => Ok(None),
        }
    }

    pub(super) fn get<T: serde::de::DeserializeOwned>(&self, key: &str, what: &str) -> Result<T, String> {
        let Some(v) = self.table.get(key) else {
            return Err(format!("{}.{key} = (missing): expected {what}", self.section));
        };
        serde_path_to_error::deserialize(v.clone()).map_err(|e: serde_path_to_error::Error<toml::de::Error>| {
            let path = e.path().clone();
            let e = e.into_inner();
            // A misspelt key inside (an explicit node's) is reported as itself.
            if let Some(unknown) = under_table(&format!("{}.{key}", self.section), &path, e.message()) {
                return unknown;
            }
            // Inside an array or table serde's words locate the problem; for
            // a single value they would only repeat the expectation.
            let detail = match v {
                toml::Value::Array(_) | toml::Value::Table(_) => format!(" ({})", e.to_string().trim_end()),
                _ => String::new(),
            };
            format!("{}.{key} = {}: expected {what}{detail}", self.section, brief(v))
        })
    }

    /// Refuses keys the kind does not have (asked before any key is read,
    /// so that a misspelt key is reported as itself, not as the key it
    /// should have been reported missing).
    pub(super) fn only(&self, keys: &[&str]) -> Result<(), String> {
        match self.table.keys().find(|k| k.as_str() != "kind" && !keys.contains(&k.as_str())) {
            Some(k) => Err(unknown_key(
                &format!("{}.{k}", self.section),
                &format!(" for kind = {}", self.table.get("kind").map_or(String::new(), brief)),
                keys,
            )),
            None => Ok(()),
        }
    }
}

/// A value as the file wrote it, cut short if long (an array of nodes).
/// `control_priority` of a dynamic routing kind.
fn control_priority(t: &Tagged<'_>) -> Result<bool, String> {
    Ok(t.get_opt("control_priority", "true or false")?.unwrap_or_else(default_control_priority))
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
                    t.only(&[
                        "ss_threshold_dbm",
                        "link_layer_feedback",
                        "hello",
                        "expanding_ring_search",
                        "control_priority",
                    ])?;
                    let ss_threshold_dbm: Option<f64> = t.get_opt("ss_threshold_dbm", "a signal strength in dBm")?;
                    if let Some(v) = ss_threshold_dbm {
                        if !SS_THRESHOLD_DBM.contains(&v) {
                            return Err(format!(
                                "routing.ss_threshold_dbm = {v}: expected a signal strength in dBm, {} to {}",
                                SS_THRESHOLD_DBM.start(),
                                SS_THRESHOLD_DBM.end()
                            ));
                        }
                    }
                    let link_layer_feedback: bool =
                        t.get_opt("link_layer_feedback", "true or false")?.unwrap_or_else(default_link_layer_feedback);
                    let hello: bool = t.get_opt("hello", "true or false")?.unwrap_or_else(default_hello);
                    if !hello && !link_layer_feedback {
                        return Err("routing.hello = false: expected true when link_layer_feedback = false (without \
                                    HELLOs and without link-layer feedback no link would ever break)"
                            .to_string());
                    }
                    Routing::Aodv {
                        ss_threshold_dbm,
                        link_layer_feedback,
                        hello,
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
                    t.only(&["paths"])?;
                    Routing::Static { paths: t.get("paths", "an array of paths, each an array of node indices")? }
                }
            })
        };
        read().map_err(serde::de::Error::custom)
    }
}

impl Scenario {
    /// Checks of a static routing's paths against the node count.
    pub(super) fn validate_static_paths(&self) -> Result<(), ScenarioError> {
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
        Ok(())
    }

    /// A transport that takes its rate from the routing module's path
    /// information needs that module: MTL's is OLSR with ETX (seed 004
    /// §III.B), the only engine here whose path information measures link
    /// quality. Names the routing key that must change.
    pub(super) fn check_path_info_source(&self, i: usize, protocol: Protocol) -> Result<(), ScenarioError> {
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
}
