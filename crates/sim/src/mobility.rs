//! `[mobility]`: how the nodes of a scenario move (issue 11 §1).
//!
//! ```toml
//! [mobility]                      # ns-2 setdest's random waypoint
//! model = "random-waypoint"
//! width_m = 1500.0                # the area; default: a random topology's
//! height_m = 300.0
//! min_speed_mps = 1.0             # > 0: a minimum of 0 makes the mean speed decay
//! max_speed_mps = 20.0
//! pause_s = 0.0
//! warmup_s = 0.0                  # movement discarded before t = 0 (steady state)
//!
//! [mobility]                      # waypoints per node; the others stay put
//! model = "scripted"
//! [[mobility.nodes]]
//! node = 1
//! waypoints = [[10.0, 300.0, 0.0, 1.0]]   # [leave at s, to x m, to y m, speed m/s]
//!
//! [mobility]                      # files users already have
//! model = "ns2"                   # or "bonnmotion" (uncompressed .movements), dimensions = 2|3
//! file = "scen-50-0.tcl"          # relative to the scenario file
//! ```
//!
//! Nodes start where the topology puts them (`kind = "random"` places them
//! uniformly in an area from their own stream); an ns-2 or BonnMotion file
//! gives its own start positions. Routes (`shortest-path`, `static`) are
//! still computed once, from the positions at time zero: routing that reacts
//! to movement comes with the routing engines.

use crate::scenario::{Scenario, ScenarioError, MAX_COORDINATE_M, MAX_DURATION_S, MAX_NODES};
use meshbed_core::{Duration, Instant};
use meshbed_mobility::{bonnmotion, ns2, random_waypoint, Area, MobilityError, Point, RandomWaypoint, Trajectory};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The fastest a node may be told to move, m/s (a car on a motorway is 40).
pub const MAX_SPEED_MPS: f64 = 1_000.0;

/// One scripted node: `[leave_s, x_m, y_m, speed_mps]` per waypoint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScriptedNode {
    /// The node's number (each node scripted once).
    pub node: u32,
    /// Its waypoints, each `[leave at s, to x m, to y m, speed m/s]`: it
    /// leaves its place at that time and walks to (x, y) at that speed.
    pub waypoints: Vec<[f64; 4]>,
}

/// The `[mobility]` table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "model", rename_all = "kebab-case", deny_unknown_fields)]
pub enum MobilitySpec {
    /// ns-2 setdest's random waypoint: every node picks a point in the
    /// area and a speed, walks there, pauses, and again.
    RandomWaypoint {
        /// The area's width; absent: a random topology's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(extend("exclusiveMinimum" = 0.0), range(max = MAX_COORDINATE_M))]
        width_m: Option<f64>,
        /// The area's height; absent: a random topology's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(extend("exclusiveMinimum" = 0.0), range(max = MAX_COORDINATE_M))]
        height_m: Option<f64>,
        /// The slowest speed, above 0 (a minimum of 0 makes the mean speed
        /// decay over the run).
        #[schemars(extend("exclusiveMinimum" = 0.0), range(max = MAX_SPEED_MPS))]
        min_speed_mps: f64,
        /// The fastest speed, at least `min_speed_mps`.
        #[schemars(extend("exclusiveMinimum" = 0.0), range(max = MAX_SPEED_MPS))]
        max_speed_mps: f64,
        /// The pause at every waypoint.
        #[serde(default)]
        #[schemars(range(min = 0.0, max = MAX_DURATION_S))]
        pause_s: f64,
        /// Movement simulated before the run and discarded, so that the run
        /// starts in the model's steady state.
        #[serde(default)]
        #[schemars(range(min = 0.0, max = MAX_DURATION_S))]
        warmup_s: f64,
    },
    /// Waypoints per node (`[[mobility.nodes]]`); the other nodes stay put.
    Scripted {
        /// The scripted nodes.
        nodes: Vec<ScriptedNode>,
    },
    /// One node starts at (`from_x_m`, `from_y_m`), leaves at `start_s` and
    /// walks in a straight line at `speed_mps` to its place in the topology,
    /// where it stays (seed 003 §5.1, Table 1: a client walks from next to
    /// the server to the far end of the chain). Every other node is static.
    /// With a `hops` sweep over a chain, a walker that is the last node
    /// stays the last node.
    Walk {
        /// The walking node's number.
        node: u32,
        /// Where it starts, x.
        #[schemars(range(min = -MAX_COORDINATE_M, max = MAX_COORDINATE_M))]
        from_x_m: f64,
        /// Where it starts, y.
        #[schemars(range(min = -MAX_COORDINATE_M, max = MAX_COORDINATE_M))]
        from_y_m: f64,
        /// When it leaves.
        #[serde(default)]
        #[schemars(range(min = 0.0, max = MAX_DURATION_S))]
        start_s: f64,
        /// How fast it walks.
        #[schemars(extend("exclusiveMinimum" = 0.0), range(max = MAX_SPEED_MPS))]
        speed_mps: f64,
    },
    /// An ns-2 movement file (setdest's `$node_(i) setdest x y speed`).
    Ns2 {
        /// The movement file, relative to the scenario file; it gives the
        /// nodes' start positions too.
        file: PathBuf,
    },
    /// A BonnMotion `.movements` file (uncompressed).
    Bonnmotion {
        /// The movement file, relative to the scenario file; it gives the
        /// nodes' start positions too.
        file: PathBuf,
        /// Values per waypoint besides the time: 2 (`t x y`) or 3 (`t x y
        /// z`, z ignored).
        #[serde(default = "two")]
        #[schemars(range(
            min = *meshbed_mobility::bonnmotion::DIMENSIONS.start(),
            max = *meshbed_mobility::bonnmotion::DIMENSIONS.end()
        ))]
        dimensions: usize,
    },
}

impl MobilitySpec {
    /// The `model` this table has in a scenario file.
    pub fn model_name(&self) -> &'static str {
        match self {
            MobilitySpec::RandomWaypoint { .. } => "random-waypoint",
            MobilitySpec::Scripted { .. } => "scripted",
            MobilitySpec::Walk { .. } => "walk",
            MobilitySpec::Ns2 { .. } => "ns2",
            MobilitySpec::Bonnmotion { .. } => "bonnmotion",
        }
    }
    /// Random waypoint over the random topology's area, no warm-up.
    pub fn random_waypoint(min_speed_mps: f64, max_speed_mps: f64, pause_s: f64) -> Self {
        MobilitySpec::RandomWaypoint {
            width_m: None,
            height_m: None,
            min_speed_mps,
            max_speed_mps,
            pause_s,
            warmup_s: 0.0,
        }
    }
}

fn two() -> usize {
    2
}

fn invalid(key: impl Into<String>, value: impl ToString, expected: impl Into<String>) -> ScenarioError {
    ScenarioError::Invalid { file: String::new(), invalid: meshbed_core::InvalidValue::new(key, value, expected) }
}

fn seconds(key: &str, s: f64, max_s: f64) -> Result<Duration, ScenarioError> {
    if !(s.is_finite() && (0.0..=max_s).contains(&s)) {
        return Err(invalid(key, s, format!("a time in seconds, 0 to {max_s}")));
    }
    Ok(Duration::from_secs_f64(s))
}

/// Every node's trajectory for `scenario` (which has a `[mobility]`),
/// starting from `starts`, covering the run.
pub fn trajectories(
    scenario: &Scenario,
    spec: &MobilitySpec,
    starts: &[Point],
) -> Result<Vec<Trajectory>, ScenarioError> {
    let end = Instant::ZERO + Duration::from_secs_f64(scenario.duration_s);
    let n = starts.len();
    let paths = match spec {
        MobilitySpec::RandomWaypoint { width_m, height_m, min_speed_mps, max_speed_mps, pause_s, warmup_s } => {
            let area_of_topology = scenario.topology.area();
            let side = |key: &str, own: Option<f64>, of_topology: Option<f64>| {
                let v = own.or(of_topology).ok_or_else(|| {
                    invalid(
                        format!("mobility.{key}"),
                        "(missing)",
                        "the area's size in metres (or a random topology's)",
                    )
                })?;
                if !(v.is_finite() && v > 0.0 && v <= MAX_COORDINATE_M) {
                    return Err(invalid(
                        format!("mobility.{key}"),
                        v,
                        format!("a size in metres, above 0, at most {MAX_COORDINATE_M}"),
                    ));
                }
                Ok(v)
            };
            let model = RandomWaypoint {
                area: Area {
                    width_m: side("width_m", *width_m, area_of_topology.map(|a| a.0))?,
                    height_m: side("height_m", *height_m, area_of_topology.map(|a| a.1))?,
                },
                min_speed_mps: *min_speed_mps,
                max_speed_mps: *max_speed_mps,
                pause: seconds("mobility.pause_s", *pause_s, crate::scenario::MAX_DURATION_S)?,
                warmup: seconds("mobility.warmup_s", *warmup_s, crate::scenario::MAX_DURATION_S)?,
            };
            if *max_speed_mps > MAX_SPEED_MPS {
                return Err(invalid("mobility.max_speed_mps", max_speed_mps, format!("at most {MAX_SPEED_MPS} m/s")));
            }
            random_waypoint(&model, starts, scenario.seed, end).map_err(|e| keyed("mobility", e))?
        }
        MobilitySpec::Scripted { nodes } => {
            let mut paths: Vec<Trajectory> = starts.iter().map(|&p| Trajectory::stationary(p)).collect();
            for (k, sn) in nodes.iter().enumerate() {
                let key = format!("mobility.nodes[{k}]");
                if sn.node as usize >= n {
                    return Err(invalid(
                        format!("{key}.node"),
                        sn.node,
                        format!("a node of the topology (0 to {})", n - 1),
                    ));
                }
                if nodes[..k].iter().any(|o| o.node == sn.node) {
                    return Err(invalid(format!("{key}.node"), sn.node, "a node scripted once"));
                }
                let mut waypoints = Vec::new();
                for (i, &[t, x, y, v]) in sn.waypoints.iter().enumerate() {
                    let at = seconds(&format!("{key}.waypoints[{i}][0]"), t, crate::scenario::MAX_DURATION_S)?;
                    for (j, c) in [(1, x), (2, y)] {
                        if !(c.is_finite() && c.abs() <= MAX_COORDINATE_M) {
                            return Err(invalid(format!("{key}.waypoints[{i}][{j}]"), c, "a coordinate in metres"));
                        }
                    }
                    if !(v.is_finite() && (0.0..=MAX_SPEED_MPS).contains(&v)) {
                        return Err(invalid(
                            format!("{key}.waypoints[{i}][3]"),
                            v,
                            format!("a speed in m/s, 0 to {MAX_SPEED_MPS}"),
                        ));
                    }
                    waypoints.push((Instant::ZERO + at, Point::new(x, y), v));
                }
                paths[sn.node as usize] =
                    Trajectory::scripted(starts[sn.node as usize], &waypoints).map_err(|e| keyed(&key, e))?;
            }
            paths
        }
        MobilitySpec::Walk { node, from_x_m, from_y_m, start_s, speed_mps } => {
            if *node as usize >= n {
                return Err(invalid("mobility.node", node, format!("a node of the topology (0 to {})", n - 1)));
            }
            for (key, c) in [("mobility.from_x_m", from_x_m), ("mobility.from_y_m", from_y_m)] {
                if !(c.is_finite() && c.abs() <= MAX_COORDINATE_M) {
                    return Err(invalid(key, c, "a coordinate in metres"));
                }
            }
            if !(speed_mps.is_finite() && *speed_mps > 0.0 && *speed_mps <= MAX_SPEED_MPS) {
                return Err(invalid(
                    "mobility.speed_mps",
                    speed_mps,
                    format!("a speed in m/s, above 0, at most {MAX_SPEED_MPS}"),
                ));
            }
            let leave = Instant::ZERO + seconds("mobility.start_s", *start_s, crate::scenario::MAX_DURATION_S)?;
            let mut paths: Vec<Trajectory> = starts.iter().map(|&p| Trajectory::stationary(p)).collect();
            let home = starts[*node as usize];
            paths[*node as usize] =
                Trajectory::scripted(Point::new(*from_x_m, *from_y_m), &[(leave, home, *speed_mps)])
                    .map_err(|e| keyed("mobility", e))?;
            paths
        }
        MobilitySpec::Ns2 { file } | MobilitySpec::Bonnmotion { file, .. } => {
            let name = file.display().to_string();
            let bytes = crate::scenario::read_input_file(file)
                .map_err(|e| invalid("mobility.file", &name, format!("a readable movement file ({e})")))?;
            // The bounds of the scenario's own mobility keys.
            let bounds = ns2::Bounds {
                max_coordinate_m: MAX_COORDINATE_M,
                max_speed_mps: MAX_SPEED_MPS,
                max_time_s: crate::scenario::MAX_DURATION_S,
            };
            let parsed = match spec {
                MobilitySpec::Ns2 { .. } => ns2::parse(&bytes, &name, MAX_NODES, bounds),
                MobilitySpec::Bonnmotion { dimensions, .. } => {
                    bonnmotion::parse(bytes.as_bytes(), &name, *dimensions, MAX_NODES, bounds)
                }
                _ => unreachable!("matched above"),
            };
            let paths = parsed.map_err(|e| invalid("mobility.file", &name, format!("a valid movement file: {e}")))?;
            if paths.len() != n {
                return Err(invalid(
                    "mobility.file",
                    &name,
                    format!("movement for the topology's {n} nodes (the file moves {})", paths.len()),
                ));
            }
            paths
        }
    };
    Ok(paths)
}

/// A mobility error under the scenario key `section`.
fn keyed(section: &str, e: MobilityError) -> ScenarioError {
    let MobilityError::Invalid(e) = e;
    e.under(section).into()
}
