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
//!
//! [[flows]]                    # the Linux kernel's TCP (emulator only)
//! src = 0
//! dst = 6
//! protocol = "kernel-tcp"
//! congestion_control = "cubic" # any the kernel has: reno, bbr, ...
//! bytes = 1_000_000            # or stop_s, a backlogged sender until then
//! ```
//!
//! Every mistake is reported with the key, the value and what was expected.
//!
//! The module follows the file's seams: [`topology`] (where the nodes
//! are), [`routing`] (how next hops are chosen), [`flows`] (what is sent),
//! [`limits`] (the bounds of its numbers), [`error`] (what a mistake
//! reports) and [`file`] (reading it, and drawing `[random_flows]`).

mod error;
mod file;
mod flow_file;
mod flows;
mod kernel_tcp;
mod limits;
mod routing;
#[cfg(test)]
mod tests;
mod topology;

pub use error::{read_input_file, ScenarioError};
pub use file::RandomFlows;
pub use flows::*;
pub use kernel_tcp::{CongestionControl, KernelTcpFlow, KERNEL_TCP};
pub use limits::*;
pub use routing::{needs_path_info, Routing};
pub use topology::{stack_rows, NodeSpec, Topology};

use error::invalid;
use meshbed_core::limits::Bounded;
use meshbed_radio::RadioConfig;
use serde::{Deserialize, Serialize};

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

impl Scenario {
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
        self.validate_topology()?;
        self.validate_static_paths()?;
        self.validate_flows()
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
