//! `[topology]`: where the nodes are, and the positions, node count and
//! PHY rates a scenario derives from it.

use super::error::{invalid, within, ScenarioError};
use super::limits::*;
use super::routing::Tagged;
use super::Scenario;
use meshbed_core::limits::Bounded;
use meshbed_radio::NodeRadio;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where the nodes are.
// Read by [`Tagged`], so that a wrong value names its key; the schema says
// what it reads: every key of the kind, no other.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[schemars(deny_unknown_fields)]
pub enum Topology {
    /// `nodes` nodes on a line, `spacing_m` apart, node 0 at the origin.
    Chain {
        /// The number of nodes (a chain of `nodes` − 1 hops).
        #[schemars(range(min = MIN_NODES, max = MAX_NODES))]
        nodes: u32,
        /// The distance between neighbouring nodes.
        #[schemars(extend("exclusiveMinimum" = 0.0), range(max = MAX_SPACING_M))]
        spacing_m: f64,
    },
    /// `rows` × `cols` nodes, row-major numbering.
    Grid {
        /// Rows of the grid (rows × cols is 2 to 10000 nodes).
        #[schemars(range(min = 1, max = MAX_NODES))]
        rows: u32,
        /// Columns of the grid.
        #[schemars(range(min = 1, max = MAX_NODES))]
        cols: u32,
        /// The distance between neighbouring nodes in a row or a column.
        #[schemars(extend("exclusiveMinimum" = 0.0), range(max = MAX_SPACING_M))]
        spacing_m: f64,
    },
    /// Explicit coordinates, optionally per-node power and rate.
    Explicit {
        /// The nodes, in the order of their numbers, each a
        /// `[[topology.nodes]]` table or `{ x_m = …, y_m = … }`.
        #[schemars(length(min = MIN_NODES, max = MAX_NODES))]
        nodes: Vec<NodeSpec>,
    },
    /// `nodes` nodes placed uniformly at random in `width_m` × `height_m`,
    /// each from its own stream of the seed.
    Random {
        /// The number of nodes.
        #[schemars(range(min = MIN_NODES, max = MAX_NODES))]
        nodes: u32,
        /// The area's width (x).
        #[schemars(extend("exclusiveMinimum" = 0.0), range(max = MAX_COORDINATE_M))]
        width_m: f64,
        /// The area's height (y).
        #[schemars(extend("exclusiveMinimum" = 0.0), range(max = MAX_COORDINATE_M))]
        height_m: f64,
    },
    /// The stack topology (seed 001 §5.4, Fig. 5.8): `flows` one-hop links
    /// of `link_m` in parallel rows `row_spacing_m` apart, senders at x = 0
    /// and receivers at x = `link_m`. Flow i's sender is node 2i, its
    /// receiver node 2i + 1. The outer rows come first, from y = 0 up, and
    /// the middle row's flow last, as the thesis numbers them ("flow 3" is
    /// the middle one of three).
    // [`stack_rows`] gives the order.
    Stack {
        /// The number of rows, one flow each: odd, so that one is the middle one.
        #[schemars(range(min = MIN_STACK_FLOWS, max = MAX_NODES / 2))]
        flows: u32,
        /// The distance between neighbouring rows.
        #[schemars(extend("exclusiveMinimum" = 0.0), range(max = MAX_SPACING_M))]
        row_spacing_m: f64,
        /// The length of every row's link, sender to receiver.
        #[schemars(extend("exclusiveMinimum" = 0.0), range(max = MAX_SPACING_M))]
        link_m: f64,
    },
}

/// The row of each flow of a stack of `flows` rows (an odd number): the
/// rows other than the middle one in order, then the middle one, so that
/// the middle flow is numbered last (seed 001 §5.4: "the flow in the middle
/// (flow 3)").
pub fn stack_rows(flows: u32) -> impl Iterator<Item = u32> {
    let middle = flows / 2;
    (0..flows).filter(move |&r| r != middle).chain((flows > 0).then_some(middle))
}

/// One node of an explicit topology.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    /// The node's x coordinate.
    #[schemars(range(min = -MAX_COORDINATE_M, max = MAX_COORDINATE_M))]
    pub x_m: f64,
    /// The node's y coordinate.
    #[schemars(range(min = -MAX_COORDINATE_M, max = MAX_COORDINATE_M))]
    pub y_m: f64,
    /// This node's transmit power instead of `radio.tx_power_dbm`.
    #[serde(default)]
    #[schemars(range(
        min = *meshbed_radio::config::TX_POWER_DBM.start(),
        max = *meshbed_radio::config::TX_POWER_DBM.end()
    ))]
    pub tx_power_dbm: Option<f64>,
    /// This node's data rate instead of `radio.data_rate_kbps`, one of the
    /// standard's rates.
    #[serde(default)]
    #[schemars(schema_with = "optional_rate_schema")]
    pub data_rate_kbps: Option<u32>,
    /// This node's rate control (`"fixed"`, `"arf"`, `"aarf"`, `"minstrel"`)
    /// instead of `[radio.mac] rate_control`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<meshbed_radio::RateControl>")]
    pub rate_control: Option<String>,
    /// The building floor the node is on, counted from 0; needs
    /// `[radio.floors]` (the thesis' two-floor testbed, seed 001 §5.5).
    #[serde(default, skip_serializing_if = "is_zero")]
    #[schemars(!skip_serializing_if, range(max = meshbed_radio::link::MAX_FLOOR))]
    pub floor: u32,
}

/// A node's own `data_rate_kbps`: a rate, or absent.
fn optional_rate_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let rate = meshbed_radio::config::rate_kbps_schema(generator);
    schemars::json_schema!({ "anyOf": [rate, { "type": "null" }] })
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

impl<'de> Deserialize<'de> for Topology {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let table = toml::Table::deserialize(d)?;
        let t = Tagged { section: "topology", table: &table };
        let read = || -> Result<Topology, String> {
            let kind = t.kind(&["chain", "grid", "explicit", "random", "stack"])?;
            t.only(match kind {
                "chain" => &["nodes", "spacing_m"],
                "grid" => &["rows", "cols", "spacing_m"],
                "random" => &["nodes", "width_m", "height_m"],
                "stack" => &["flows", "row_spacing_m", "link_m"],
                _ => &["nodes"],
            })?;
            let topology = match kind {
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
            Ok(topology)
        };
        read().map_err(serde::de::Error::custom)
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

    /// Checks of `[topology]` and its nodes.
    pub(super) fn validate_topology(&self) -> Result<(), ScenarioError> {
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
                within("topology.nodes", *nodes, MIN_NODES..=MAX_NODES, "a number of nodes")?;
                spacing(*spacing_m)?;
            }
            Topology::Grid { rows, cols, spacing_m } => {
                match rows.checked_mul(*cols) {
                    Some(n) if (MIN_NODES..=MAX_NODES).contains(&n) => {}
                    product => {
                        return Err(invalid(
                            "topology.rows",
                            format!(
                                "{rows} (cols = {cols}, {} nodes)",
                                product.map_or_else(|| (*rows as u64 * *cols as u64).to_string(), |n| n.to_string())
                            ),
                            format!("a grid of {MIN_NODES} to {MAX_NODES} nodes"),
                        ))
                    }
                }
                spacing(*spacing_m)?;
            }
            Topology::Explicit { nodes } => {
                if !(MIN_NODES as usize..=MAX_NODES as usize).contains(&nodes.len()) {
                    return Err(invalid(
                        "topology.nodes",
                        format!("({} entries)", nodes.len()),
                        format!("a list of {MIN_NODES} to {MAX_NODES} nodes"),
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
                within("topology.nodes", *nodes, MIN_NODES..=MAX_NODES, "a number of nodes")?;
                within("topology.width_m", *width_m, f64::MIN_POSITIVE..=MAX_COORDINATE_M, "a size in metres")?;
                within("topology.height_m", *height_m, f64::MIN_POSITIVE..=MAX_COORDINATE_M, "a size in metres")?;
            }
            Topology::Stack { flows, row_spacing_m, link_m } => {
                // An odd count, so that one row is the middle one.
                if !(flows % 2 == 1 && (MIN_STACK_FLOWS..=MAX_NODES / 2).contains(flows)) {
                    return Err(invalid(
                        "topology.flows",
                        flows,
                        format!("an odd number of flows from {MIN_STACK_FLOWS} to {} (two nodes each)", MAX_NODES / 2),
                    ));
                }
                let distance = "a positive distance in metres";
                within("topology.row_spacing_m", *row_spacing_m, f64::MIN_POSITIVE..=MAX_SPACING_M, distance)?;
                within("topology.link_m", *link_m, f64::MIN_POSITIVE..=MAX_SPACING_M, distance)?;
            }
        }
        Ok(())
    }
}
