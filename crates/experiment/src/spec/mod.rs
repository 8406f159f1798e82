//! The experiment file: a scenario plus an `[experiment]` table that names
//! the experiment, how often each point repeats, and which fields to sweep.
//!
//! ```toml
//! duration_s = 200.0
//! # ... a whole scenario, as for `meshbed sim` ...
//!
//! [experiment]
//! name = "chain"
//! repetitions = 10
//! x_axis = "hops"          # the x of the line figures (default: first numeric axis)
//! series_axis = "protocol" # one line per value (default: "protocol" when swept)
//!
//! [[experiment.sweep]]
//! key = "hops"             # special: chain length; moves flow endpoints along
//! values = [1, 2, 3, 4, 5, 6]
//!
//! [[experiment.sweep]]
//! key = "protocol"         # special: every flow's protocol
//! values = ["atp-default", "tcp-tahoe"]
//! ```
//!
//! Sweep keys: `hops` (a chain's length; flows ending at the last node move
//! with it, so does a walker that is the last node, and a static path along
//! the chain is extended), `protocol` (every
//! flow and the `[random_flows]` template; a point keeps only the
//! `[flows.atp]`, `[flows.tcp]` or `[flows.mtl]` table of the protocol it runs, so a base
//! scenario may carry both), `flow_count` (copies of the first flow), or
//! any dotted path into the
//! scenario such as `radio.data_rate_kbps`, `flows[*].atp.epoch_s` (every
//! flow) or `flows[1].start_s`. The points are the Cartesian product of the
//! axes. Repetition `r` of every point runs with seed `seed + r` (common
//! random numbers: points differ only by what the sweep changed).

use meshbed_sim::{Scenario, ScenarioError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use thiserror::Error;
use toml::Value;

mod parse;
mod plan;
pub mod reference;
mod sweep;
#[cfg(test)]
mod tests;

pub use sweep::{get_path, set_path};

/// The `[experiment]` table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExperimentConfig {
    /// The experiment's name: its results go to `results/NAME/`.
    #[schemars(extend("pattern" = NAME_PATTERN))]
    pub name: String,
    /// What it compares, in a sentence (`meshbed experiment list` shows it).
    #[serde(default)]
    pub description: String,
    /// Runs of every point, with seeds `seed`, `seed + 1` and so on.
    #[serde(default = "default_repetitions")]
    #[schemars(range(min = 1, max = MAX_REPETITIONS))]
    pub repetitions: u32,
    /// The sweep axes, each a `[[experiment.sweep]]` table; every point of
    /// their Cartesian product runs.
    #[serde(default)]
    pub sweep: Vec<Axis>,
    /// The axis on the x of the line figures (the key of a sweep axis);
    /// absent: the first numeric axis.
    #[serde(default)]
    pub x_axis: Option<String>,
    /// The axis drawn as one line per value (the key of a sweep axis);
    /// absent: `protocol` when it is swept.
    #[serde(default)]
    pub series_axis: Option<String>,
    /// For per-flow goodput tables of flows that overlap in time: only the
    /// deliveries inside `[from, to]` seconds count (needs `trace = true`).
    #[serde(default)]
    pub window_s: Option<[f64; 2]>,
    /// Goodput by the batch-means method (seed 004 §IV): every transport
    /// flow records when each batch of `batch_packets` packets was
    /// delivered; the first `discard` batches are dropped and the rest give
    /// the estimate and its 95% confidence interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_means: Option<BatchMeans>,
    /// A value of the series axis (`series_axis`, else `protocol`) every
    /// other value is compared with over the same seeds: for each point, the
    /// ratio of a run's goodput to that of the run with the same seed and
    /// the same other axis values, as a geometric mean with its 95%
    /// confidence interval (`summary.txt`, `paired.csv`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compare_against: Option<String>,
}

impl ExperimentConfig {
    /// The axis whose values are compared ([`ExperimentConfig::compare_against`]):
    /// `series_axis`, else `protocol` when it is swept.
    pub fn compared_axis(&self) -> Option<&str> {
        self.series_axis.as_deref().or_else(|| self.sweep.iter().find(|a| a.key == "protocol").map(|a| a.key.as_str()))
    }
}

fn default_repetitions() -> u32 {
    10
}

/// Most repetitions of a point.
pub const MAX_REPETITIONS: u32 = 10_000;

/// What an experiment's name is made of (it names a directory).
pub const NAME_PATTERN: &str = "^[A-Za-z0-9_-]+$";

/// `[experiment] batch_means = { batch_packets = 5000, batches = 11,
/// discard = 1 }`: seed 004 §IV's "FTP connections until 55,000 packets are
/// successfully transmitted, ... split ... in 11 batches, each 5,000
/// packets in size. The first batch is discarded as initial transient ...
/// 95% confidence intervals by the batch means method". Each key defaults
/// to the paper's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchMeans {
    /// Full data packets per batch.
    #[serde(default = "default_batch_packets")]
    #[schemars(range(min = 1, max = meshbed_sim::scenario::MAX_BATCH_PACKETS))]
    pub batch_packets: u32,
    /// Batches in all, the discarded ones included.
    #[serde(default = "default_batches")]
    #[schemars(range(min = MIN_BATCHES, max = MAX_BATCHES))]
    pub batches: u32,
    /// Leading batches dropped as the initial transient (at most
    /// `batches` − 2: two must remain for a confidence interval).
    #[serde(default = "default_discard")]
    pub discard: u32,
}

fn default_batch_packets() -> u32 {
    5_000
}
fn default_batches() -> u32 {
    11
}
fn default_discard() -> u32 {
    1
}

impl Default for BatchMeans {
    /// Seed 004 §IV's: 11 batches of 5,000 packets, the first discarded.
    fn default() -> Self {
        BatchMeans { batch_packets: default_batch_packets(), batches: default_batches(), discard: default_discard() }
    }
}

/// Fewest batches: two must remain for a confidence interval.
pub const MIN_BATCHES: u32 = 2;

/// Most batches an experiment may ask for: the per-flow record is one
/// time per batch, and ten thousand are far past any confidence interval's need.
pub const MAX_BATCHES: u32 = 10_000;

impl BatchMeans {
    /// Packets a flow must deliver for a full estimate.
    pub fn packets(&self) -> u64 {
        u64::from(self.batch_packets) * u64::from(self.batches)
    }

    /// Checks the three keys; errors name `experiment.batch_means.<key>`.
    fn validate(&self, file: &str) -> Result<(), ExperimentError> {
        let key = |k: &str| format!("experiment.batch_means.{k}");
        let max_packets = meshbed_sim::scenario::MAX_BATCH_PACKETS;
        if !(1..=max_packets).contains(&self.batch_packets) {
            return Err(invalid(
                file,
                key("batch_packets"),
                self.batch_packets,
                format!("1 to {max_packets} packets per batch"),
            ));
        }
        if !(MIN_BATCHES..=MAX_BATCHES).contains(&self.batches) {
            return Err(invalid(file, key("batches"), self.batches, format!("{MIN_BATCHES} to {MAX_BATCHES} batches")));
        }
        // A confidence interval needs two kept batches.
        if self.discard + MIN_BATCHES > self.batches {
            return Err(invalid(
                file,
                key("discard"),
                self.discard,
                format!(
                    "at most {} (batches − {MIN_BATCHES}): two batches must remain for a confidence interval",
                    self.batches - MIN_BATCHES
                ),
            ));
        }
        Ok(())
    }
}

/// One sweep axis.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Axis {
    /// What the axis sets: `hops` (a chain's length; flows ending at the
    /// last node move with it), `protocol` (every flow's), `flow_count`
    /// (copies of the first flow), or any dotted key of the scenario
    /// (`radio.data_rate_kbps`, `flows[*].atp.epoch_s` for every flow,
    /// `flows[1].start_s`).
    pub key: String,
    /// The values it takes, one point each.
    #[schemars(with = "Vec<serde_json::Value>", length(min = 1))]
    pub values: Vec<Value>,
}

/// An experiment: the base scenario (as a TOML tree, so that any field can
/// be swept) and its configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Experiment {
    pub config: ExperimentConfig,
    pub base: toml::Table,
    /// Where it came from, for errors: the file, or the built-in's name.
    pub file: String,
}

/// One point of the sweep: the axis values and the scenario they give.
#[derive(Clone, Debug)]
pub struct Point {
    pub index: usize,
    pub values: Vec<(String, Value)>,
    pub scenario: Scenario,
}

impl Point {
    /// `hops=3 protocol=atp-default`, or `base` for an experiment with no sweep.
    pub fn label(&self) -> String {
        if self.values.is_empty() {
            return "base".into();
        }
        self.values.iter().map(|(k, v)| format!("{k}={}", value_text(v))).collect::<Vec<_>>().join(" ")
    }
    pub fn value(&self, key: &str) -> Option<&Value> {
        self.values.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

/// A value as plain text (strings without quotes).
pub fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[derive(Debug, Error)]
pub enum ExperimentError {
    #[error("{file}: cannot read: {err}")]
    Io { file: String, err: std::io::Error },
    #[error("{file}: {message}")]
    Parse { file: String, message: String },
    /// The one error value ([`meshbed_core::InvalidValue`]), in a file.
    #[error("{file}: {invalid}")]
    Invalid { file: String, invalid: meshbed_core::InvalidValue },
    /// `error` carries no file of its own (and is not a `source`, so that
    /// an error chain does not print it twice).
    #[error("{file}: sweep point `{point}`: {error}")]
    Point { file: String, point: String, error: Box<ScenarioError> },
    #[error("{file}: {message}")]
    TooLarge { file: String, message: String },
    /// A key the file's types do not have, at its line and column
    /// ([`ScenarioError::UnknownKey`], in the file).
    #[error("{0}")]
    UnknownKey(Box<ScenarioError>),
    /// The backend cannot run part of the experiment (every point's refused
    /// keys, each once); nothing was started.
    #[error("{file}: {refusal}")]
    Refused { file: String, refusal: meshbed_sim::backend::Refusal },
    #[error("{0}")]
    Backend(String),
}

fn invalid(file: &str, key: impl Into<String>, value: impl ToString, expected: impl Into<String>) -> ExperimentError {
    ExperimentError::Invalid { file: file.into(), invalid: meshbed_core::InvalidValue::new(key, value, expected) }
}

/// Most points a sweep may have, even with --force: each point's scenario
/// is built and held in memory before the first run.
pub const MAX_POINTS: u64 = 100_000;
/// Runs (points × repetitions) an experiment may take without --force: at a
/// second per run on one core, about a day.
pub const MAX_RUNS: u64 = 20_000;
/// Runs an experiment may take even with --force.
pub const MAX_RUNS_FORCED: u64 = 10_000_000;
/// Estimated memory an experiment may take without --force.
pub const MAX_MEMORY_BYTES: u64 = 4 << 30;

/// The points of an experiment and what running them takes, from
/// [`Experiment::plan`].
#[derive(Clone, Debug)]
pub struct Plan {
    pub points: Vec<Point>,
    pub runs: u64,
    /// The rough estimate the bound was checked against.
    pub memory_bytes: u64,
}
