//! `[topology]`: where the nodes are, and the positions, node count and
//! PHY rates a scenario derives from it.

use super::error::{invalid, within, ScenarioError};
use super::limits::*;
use super::routing::Tagged;
use super::Scenario;
use meshbed_core::limits::Bounded;
use meshbed_radio::NodeRadio;
use serde::{Deserialize, Serialize};

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
        Ok(())
    }
}
