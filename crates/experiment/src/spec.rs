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
//! `[flows.atp]` or `[flows.tcp]` table of the protocol it runs, so a base
//! scenario may carry both), `flow_count` (copies of the first flow), or
//! any dotted path into the
//! scenario such as `radio.data_rate_kbps`, `flows[*].atp.epoch_s` (every
//! flow) or `flows[1].start_s`. The points are the Cartesian product of the
//! axes. Repetition `r` of every point runs with seed `seed + r` (common
//! random numbers: points differ only by what the sweep changed).

use meshbed_sim::{Scenario, ScenarioError};
use serde::{Deserialize, Serialize};
use thiserror::Error;
use toml::Value;

/// The `[experiment]` table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentConfig {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default = "default_repetitions")]
    pub repetitions: u32,
    #[serde(default)]
    pub sweep: Vec<Axis>,
    #[serde(default)]
    pub x_axis: Option<String>,
    #[serde(default)]
    pub series_axis: Option<String>,
    /// For per-flow goodput tables of flows that overlap in time: only the
    /// deliveries inside [from, to] seconds count (needs `trace = true`).
    #[serde(default)]
    pub window_s: Option<[f64; 2]>,
    /// Goodput by the batch-means method (seed 004 §IV): every transport
    /// flow records when each batch of `batch_packets` packets was
    /// delivered; the first `discard` batches are dropped and the rest give
    /// the estimate and its 95% confidence interval ([`BatchMeans`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_means: Option<BatchMeans>,
}

fn default_repetitions() -> u32 {
    10
}

/// `[experiment] batch_means = { batch_packets = 5000, batches = 11,
/// discard = 1 }`: seed 004 §IV's "FTP connections until 55,000 packets are
/// successfully transmitted, ... split ... in 11 batches, each 5,000
/// packets in size. The first batch is discarded as initial transient ...
/// 95% confidence intervals by the batch means method". Each key defaults
/// to the paper's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchMeans {
    /// Full data packets per batch.
    #[serde(default = "default_batch_packets")]
    pub batch_packets: u32,
    /// Batches in all, the discarded ones included.
    #[serde(default = "default_batches")]
    pub batches: u32,
    /// Leading batches dropped as the initial transient.
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
        if !(2..=MAX_BATCHES).contains(&self.batches) {
            return Err(invalid(file, key("batches"), self.batches, format!("2 to {MAX_BATCHES} batches")));
        }
        // A confidence interval needs two kept batches.
        if self.discard + 2 > self.batches {
            return Err(invalid(
                file,
                key("discard"),
                self.discard,
                format!(
                    "at most {} (batches − 2): two batches must remain for a confidence interval",
                    self.batches - 2
                ),
            ));
        }
        Ok(())
    }
}

/// One sweep axis.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Axis {
    pub key: String,
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

impl Experiment {
    /// Reads an experiment file.
    pub fn from_file(path: &std::path::Path) -> Result<Experiment, ExperimentError> {
        let file = path.display().to_string();
        let text = meshbed_sim::scenario::read_input_file(path)
            .map_err(|err| ExperimentError::Io { file: file.clone(), err })?;
        Experiment::from_toml(&text, &file)
    }

    /// Parses experiment text; `file` names it in errors.
    pub fn from_toml(text: &str, file: &str) -> Result<Experiment, ExperimentError> {
        let mut base: toml::Table =
            toml::from_str(text).map_err(|e| ExperimentError::Parse { file: file.into(), message: e.to_string() })?;
        let Some(exp) = base.remove("experiment") else {
            return Err(invalid(file, "experiment", "(missing)", "an [experiment] table with at least a name"));
        };
        let config: ExperimentConfig = exp.try_into().map_err(|e: toml::de::Error| ExperimentError::Parse {
            file: file.into(),
            message: format!("[experiment]: {e}"),
        })?;
        let e = Experiment { config, base, file: file.into() };
        e.validate(file)?;
        Ok(e)
    }

    /// Builds from a scenario and a configuration (for built-in experiments).
    pub fn new(base: &Scenario, config: ExperimentConfig) -> Experiment {
        let base = toml::Table::try_from(base).expect("a scenario serialises to a TOML table");
        let file = format!("built-in experiment {}", config.name);
        Experiment { config, base, file }
    }

    fn validate(&self, file: &str) -> Result<(), ExperimentError> {
        let c = &self.config;
        if c.name.is_empty() || !c.name.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '-' || ch == '_') {
            return Err(invalid(file, "experiment.name", &c.name, "a non-empty name of letters, digits, - and _"));
        }
        if !(1..=10_000).contains(&c.repetitions) {
            return Err(invalid(file, "experiment.repetitions", c.repetitions, "1 to 10000 repetitions"));
        }
        for (i, a) in c.sweep.iter().enumerate() {
            if a.values.is_empty() {
                return Err(invalid(file, format!("experiment.sweep[{i}].values"), "[]", "at least one value"));
            }
            if c.sweep[..i].iter().any(|b| b.key == a.key) {
                return Err(invalid(file, format!("experiment.sweep[{i}].key"), &a.key, "a key not swept twice"));
            }
        }
        for (k, name) in [(&c.x_axis, "experiment.x_axis"), (&c.series_axis, "experiment.series_axis")] {
            if let Some(k) = k {
                if !c.sweep.iter().any(|a| &a.key == k) {
                    return Err(invalid(file, name, k, "the key of one of the sweep axes"));
                }
            }
        }
        if let Some([a, b]) = c.window_s {
            let longest = meshbed_sim::scenario::MAX_DURATION_S;
            if !(a >= 0.0 && b > a && b <= longest) {
                return Err(invalid(
                    file,
                    "experiment.window_s",
                    format!("[{a}, {b}]"),
                    format!("[from, to] with 0 <= from < to <= {longest} s"),
                ));
            }
        }
        if let Some(b) = &c.batch_means {
            b.validate(file)?;
        }
        // Every point must give a valid scenario whose flows have routes;
        // building them checks that. A sweep too large to build at once is
        // checked by `run` once --force allows it (see `plan`).
        let count = self.point_count(file)?;
        if count <= MAX_RUNS {
            for index in 0..count as usize {
                self.point(file, index)?;
            }
        }
        Ok(())
    }

    /// The number of points: the product of the axes' lengths, at most
    /// [`MAX_POINTS`] (each point's scenario is held in memory).
    pub fn point_count(&self, file: &str) -> Result<u64, ExperimentError> {
        let lengths: Vec<String> = self.config.sweep.iter().map(|a| a.values.len().to_string()).collect();
        let count = self.config.sweep.iter().try_fold(1u64, |n, a| n.checked_mul(a.values.len() as u64));
        match count {
            Some(n) if n <= MAX_POINTS => Ok(n),
            _ => Err(invalid(
                file,
                "experiment.sweep",
                format!(
                    "{} values = {} points",
                    lengths.join(" × "),
                    count.map_or_else(|| "more than 2^64".to_string(), |n| n.to_string())
                ),
                format!("at most {MAX_POINTS} points (every point's scenario is held in memory; --force does not lift this)"),
            )),
        }
    }

    /// The points to run and what running them takes, checked before
    /// anything is allocated for the runs: over [`MAX_RUNS`] runs (points ×
    /// repetitions) or [`MAX_MEMORY_BYTES`] of estimated memory it needs
    /// `force`; over [`MAX_RUNS_FORCED`] runs it is refused. The estimate is
    /// rough: each point's scenario and every run's report (flows, per-node
    /// counters, trace samples) are kept until the end, and each running
    /// simulation holds its radio model, routes and transport data.
    pub fn plan(&self, file: &str, repetitions: u32, threads: usize, force: bool) -> Result<Plan, ExperimentError> {
        let count = self.point_count(file)?;
        let runs = count * u64::from(repetitions); // ≤ 100 000 × u32::MAX: no overflow
        let too_large = |what: String, hint: &str| ExperimentError::TooLarge {
            file: file.into(),
            message: format!("{count} points × {repetitions} repetitions = {runs} runs{what}: {hint}"),
        };
        if runs > MAX_RUNS_FORCED {
            return Err(too_large(
                String::new(),
                &format!("more than the {MAX_RUNS_FORCED} runs any experiment may take, even with --force"),
            ));
        }
        let ask = format!(
            "more than the {MAX_RUNS} runs or {} GiB of memory an experiment may take without --force; pass --force to run it anyway",
            MAX_MEMORY_BYTES >> 30
        );
        if runs > MAX_RUNS && !force {
            return Err(too_large(String::new(), &ask));
        }
        // Built one at a time, adding up the estimate, so that an
        // experiment over the bound is refused before it is all in memory.
        let at_once = (threads as u64).clamp(1, runs.max(1)); // no more simulations at once than runs
        let (mut points, mut kept, mut running_max, mut memory_bytes) = (Vec::new(), 0u64, 0u64, 0u64);
        for index in 0..count as usize {
            let p = self.point(file, index)?;
            let s = &*p.scenario.with_random_flows_drawn().map_err(|error| ExperimentError::Point {
                file: file.into(),
                point: p.label(),
                error: Box::new(error),
            })?;
            let nodes = u64::from(s.node_count());
            let flows = s.flows.len() as u64;
            let report = 1024 + 1024 * flows + 256 * nodes + traced_bytes(s);
            kept = kept
                .saturating_add(1024 + 256 * flows + 64 * nodes)
                .saturating_add(report.saturating_mul(u64::from(repetitions)));
            let data: u64 = (0..s.flows.len()).map(|i| s.sender_data_bytes(i)).sum();
            running_max = running_max.max(32 * nodes * nodes + data);
            memory_bytes = kept.saturating_add(running_max.saturating_mul(at_once));
            if memory_bytes > MAX_MEMORY_BYTES && !force {
                let so_far = if index + 1 < count as usize { "at least " } else { "" };
                return Err(too_large(
                    format!(", {so_far}about {:.1} GiB of memory", memory_bytes as f64 / (1u64 << 30) as f64),
                    &ask,
                ));
            }
            points.push(p);
        }
        Ok(Plan { points, runs, memory_bytes })
    }

    /// Every point of the sweep, validated.
    pub fn points(&self, file: &str) -> Result<Vec<Point>, ExperimentError> {
        let total = self.point_count(file)? as usize;
        (0..total).map(|index| self.point(file, index)).collect()
    }

    /// Point `index` of the sweep (the last axis varies fastest), validated,
    /// with its flows' routes checked.
    fn point(&self, file: &str, index: usize) -> Result<Point, ExperimentError> {
        let axes = &self.config.sweep;
        // Mixed radix: the last axis varies fastest.
        let mut rest = index;
        let mut choice = vec![0; axes.len()];
        for (i, a) in axes.iter().enumerate().rev() {
            choice[i] = rest % a.values.len();
            rest /= a.values.len();
        }
        let mut tree = self.base.clone();
        let mut values = Vec::new();
        for (i, a) in axes.iter().enumerate() {
            let v = a.values[choice[i]].clone();
            apply(&mut tree, &a.key, &v).map_err(|expected| {
                invalid(file, format!("experiment.sweep[{i}]"), format!("{} = {}", a.key, v), expected)
            })?;
            values.push((a.key.clone(), v));
        }
        if let Some(b) = &self.config.batch_means {
            set_batch_packets(&mut tree, b.batch_packets);
        }
        let label = Point { index, values: values.clone(), scenario: Scenario::builtin_default() }.label();
        let point_error =
            |error| ExperimentError::Point { file: file.into(), point: label.clone(), error: Box::new(error) };
        let scenario = Scenario::from_tree(tree).map_err(point_error)?;
        meshbed_sim::check_routes(&scenario).map_err(point_error)?;
        if let Some(b) = &self.config.batch_means {
            check_batch_transfers(&scenario, b).map_err(point_error)?;
        }
        Ok(Point { index, values, scenario })
    }

    /// The experiment as a TOML file (scenario plus `[experiment]`).
    pub fn to_toml(&self) -> String {
        let mut t = self.base.clone();
        t.insert("experiment".into(), Value::try_from(&self.config).expect("serialisable"));
        toml::to_string(&t).expect("serialisable")
    }
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

/// A rough bound on the trace samples a run keeps of its traced flows: a
/// few 48-byte samples per data packet, the packets being those of `bytes`
/// sent twice over, or for a flow that runs for a duration its source's PHY
/// rate for the whole run.
fn traced_bytes(s: &Scenario) -> u64 {
    s.flows
        .iter()
        .filter(|f| f.trace())
        .map(|f| {
            let packet_bytes = f.packet_bytes();
            let packets = match f.transport().and_then(|t| t.amount.bytes()) {
                Some(bytes) => 2 * bytes / u64::from(packet_bytes.max(1)),
                None => {
                    let per_s = f64::from(s.data_rate_kbps(f.src)) * 1000.0 / (f64::from(packet_bytes) * 8.0);
                    (s.duration_s * per_s) as u64
                }
            };
            packets.saturating_mul(4 * 48)
        })
        .sum()
}

fn as_u32(v: &Value) -> Result<u32, String> {
    v.as_integer().and_then(|i| u32::try_from(i).ok()).ok_or_else(|| "a non-negative integer".to_string())
}

/// `batch_packets` on every listed flow and the `[random_flows]` template,
/// from `[experiment] batch_means` (the scenario's check refuses it on a
/// UDP flow, naming the flow).
fn set_batch_packets(tree: &mut toml::Table, batch_packets: u32) {
    let v = Value::Integer(i64::from(batch_packets));
    for f in tree.get_mut("flows").and_then(Value::as_array_mut).into_iter().flatten() {
        if let Some(f) = f.as_table_mut() {
            f.insert("batch_packets".into(), v.clone());
        }
    }
    let template = tree.get_mut("random_flows").and_then(|r| r.get_mut("flow")).and_then(Value::as_table_mut);
    if let Some(f) = template {
        f.insert("batch_packets".into(), v);
    }
}

/// A transport flow that moves `bytes` must move at least the packets
/// batch means needs; one that runs until `stop_s` is judged when it ends
/// (a flow short of the count is reported, never averaged).
fn check_batch_transfers(scenario: &Scenario, b: &BatchMeans) -> Result<(), ScenarioError> {
    let drawn = scenario.with_random_flows_drawn()?;
    for (i, f) in drawn.flows.iter().enumerate() {
        let Some(t) = f.transport() else { continue };
        let Some(bytes) = t.amount.bytes() else { continue };
        let needed = b.packets() * t.payload_bytes();
        if bytes < needed {
            return Err(ScenarioError::from(meshbed_core::InvalidValue::new(
                format!("flows[{i}].bytes"),
                bytes,
                format!(
                    "at least {needed} bytes: experiment.batch_means needs {} batches × {} packets of {} bytes",
                    b.batches,
                    b.batch_packets,
                    t.payload_bytes()
                ),
            )));
        }
    }
    Ok(())
}

/// Applies one sweep assignment to the scenario tree.
fn apply(tree: &mut toml::Table, key: &str, v: &Value) -> Result<(), String> {
    match key {
        "hops" => {
            let hops = as_u32(v)?;
            let max_hops = meshbed_sim::scenario::MAX_NODES - 1;
            if !(1..=max_hops).contains(&hops) {
                return Err(format!("a chain length from 1 to {max_hops} hops"));
            }
            let topo = tree.get_mut("topology").and_then(Value::as_table_mut).ok_or("a [topology] table")?;
            if topo.get("kind").and_then(Value::as_str) != Some("chain") {
                return Err("a chain topology for the `hops` axis".into());
            }
            let old_last = topo.get("nodes").and_then(Value::as_integer).ok_or("topology.nodes")? - 1;
            topo.insert("nodes".into(), Value::Integer(hops as i64 + 1));
            if let Some(flows) = tree.get_mut("flows").and_then(Value::as_array_mut) {
                for f in flows.iter_mut().filter_map(Value::as_table_mut) {
                    for end in ["src", "dst"] {
                        if f.get(end).and_then(Value::as_integer) == Some(old_last) {
                            f.insert(end.into(), Value::Integer(hops as i64));
                        }
                    }
                }
            }
            // A walker (`[mobility] model = "walk"`) that is the last node
            // stays the last node, walking to the new chain end.
            if let Some(m) = tree.get_mut("mobility").and_then(Value::as_table_mut) {
                if m.get("model").and_then(Value::as_str) == Some("walk")
                    && m.get("node").and_then(Value::as_integer) == Some(old_last)
                {
                    m.insert("node".into(), Value::Integer(hops as i64));
                }
            }
            // A static path along the whole chain follows it.
            if let Some(paths) = tree
                .get_mut("routing")
                .and_then(Value::as_table_mut)
                .and_then(|r| r.get_mut("paths"))
                .and_then(Value::as_array_mut)
            {
                let is_whole_chain = |p: &Value| {
                    p.as_array().is_some_and(|a| {
                        a.len() as i64 == old_last + 1
                            && a.iter().enumerate().all(|(i, v)| v.as_integer() == Some(i as i64))
                    })
                };
                for p in paths.iter_mut().filter(|p| is_whole_chain(p)) {
                    *p = Value::Array((0..=hops as i64).map(Value::Integer).collect());
                }
            }
            Ok(())
        }
        "protocol" => {
            if !v.is_str() {
                return Err("a protocol name".into());
            }
            if tree.get("random_flows").and_then(Value::as_table).is_some() {
                set_path(tree, "random_flows.flow.protocol", v)?;
            }
            set_path(tree, "flows[*].protocol", v)?;
            // A base scenario may carry settings for each family
            // (`[flows.atp]` and `[flows.tcp]`): a point keeps those of
            // the protocol it runs.
            let atp = v.as_str().and_then(|p| p.parse::<meshbed_proto::Protocol>().ok()).is_some_and(|p| p.is_atp());
            let other = if atp { "tcp" } else { "atp" };
            for f in tree.get_mut("flows").and_then(Value::as_array_mut).into_iter().flatten() {
                if let Some(f) = f.as_table_mut() {
                    f.remove(other);
                }
            }
            let template = tree.get_mut("random_flows").and_then(|r| r.get_mut("flow")).and_then(Value::as_table_mut);
            if let Some(f) = template {
                f.remove(other);
            }
            Ok(())
        }
        "flow_count" => {
            let n = as_u32(v)?;
            let max = meshbed_sim::scenario::MAX_FLOWS;
            // Checked before the copies are made.
            if !(1..=max).contains(&(n as usize)) {
                return Err(format!("a number of flows from 1 to {max}"));
            }
            let flows = tree.get_mut("flows").and_then(Value::as_array_mut).ok_or("at least one flow to copy")?;
            let first = flows.first().cloned().ok_or("at least one flow to copy")?;
            *flows = vec![first; n as usize];
            Ok(())
        }
        path => set_path(tree, path, v),
    }
}

/// The value at a dotted path such as `radio.data_rate_kbps` or
/// `flows[0].protocol`; `None` where there is none.
pub fn get_path<'a>(tree: &'a toml::Table, path: &str) -> Option<&'a Value> {
    let (head, rest) = match path.split_once('.') {
        Some((h, r)) => (h, Some(r)),
        None => (path, None),
    };
    let v = match head.strip_suffix(']').and_then(|h| h.split_once('[')) {
        Some((name, idx)) => tree.get(name)?.as_array()?.get(idx.parse::<usize>().ok()?)?,
        None => tree.get(head)?,
    };
    match rest {
        None => Some(v),
        Some(r) => get_path(v.as_table()?, r),
    }
}

/// Sets a dotted path such as `radio.mac.short_retry_limit`,
/// `flows[*].atp.kappa` or `flows[0].start_s`, creating missing tables.
pub fn set_path(tree: &mut toml::Table, path: &str, v: &Value) -> Result<(), String> {
    let (head, rest) = match path.split_once('.') {
        Some((h, r)) => (h, Some(r)),
        None => (path, None),
    };
    if let Some((name, idx)) = head.strip_suffix(']').and_then(|h| h.split_once('[')) {
        let arr = tree.get_mut(name).and_then(Value::as_array_mut).ok_or_else(|| format!("an array `{name}`"))?;
        let targets: Vec<usize> = if idx == "*" {
            (0..arr.len()).collect()
        } else {
            let i: usize = idx.parse().map_err(|_| format!("an index or * in `{head}`"))?;
            if i >= arr.len() {
                return Err(format!("an index below {} in `{head}`", arr.len()));
            }
            vec![i]
        };
        for i in targets {
            match (rest, &mut arr[i]) {
                (Some(r), Value::Table(t)) => set_path(t, r, v)?,
                (None, slot) => *slot = v.clone(),
                _ => return Err(format!("tables in `{name}`")),
            }
        }
        return Ok(());
    }
    match rest {
        None => {
            tree.insert(head.into(), v.clone());
            Ok(())
        }
        Some(r) => {
            let entry = tree.entry(head).or_insert_with(|| Value::Table(toml::Table::new()));
            let t = entry.as_table_mut().ok_or_else(|| format!("`{head}` to be a table"))?;
            set_path(t, r, v)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"
duration_s = 30.0
[topology]
kind = "chain"
nodes = 4
spacing_m = 200.0
[[flows]]
src = 0
dst = 3
protocol = "atp-default"
bytes = 100000
"#;

    fn with(exp: &str) -> Result<Experiment, ExperimentError> {
        Experiment::from_toml(&format!("{BASE}{exp}"), "e.toml")
    }

    #[test]
    fn a_protocol_point_keeps_only_its_own_family_settings() {
        let text = format!(
            "{BASE}[flows.atp]\nbeta = 0.75\n[flows.tcp]\nmin_rto_s = 1.0\n\
             [random_flows]\ncount = 2\n[random_flows.flow]\nprotocol = \"atp-default\"\nbytes = 1000\n[random_flows.flow.atp]\nbeta = 0.75\n\
             [experiment]\nname = \"t\"\n[[experiment.sweep]]\nkey = \"protocol\"\nvalues = [\"atp-default\", \"tcp-newreno\"]\n"
        );
        // The base itself is not a valid scenario (a TCP table on an ATP
        // flow), but every point is.
        let pts = Experiment::from_toml(&text, "e.toml").unwrap().points("e.toml").unwrap();
        let atp = &pts[0].scenario;
        let t = atp.flows[0].transport().unwrap();
        assert_eq!(t.atp().and_then(|a| a.beta), Some(0.75));
        assert!(t.tcp().is_none());
        let tcp = &pts[1].scenario;
        let t = tcp.flows[0].transport().unwrap();
        assert!(t.atp().is_none());
        assert_eq!(t.tcp().and_then(|t| t.min_rto_s), Some(1.0));
        let template = &tcp.random_flows.as_ref().unwrap().flow;
        assert_eq!(template.get("protocol").and_then(|p| p.as_str()), Some("tcp-newreno"));
        assert!(!template.contains_key("atp"));
    }

    #[test]
    fn sweep_is_the_cartesian_product_last_axis_fastest() {
        let e = with(
            "[experiment]\nname = \"t\"\nrepetitions = 2\n[[experiment.sweep]]\nkey = \"hops\"\nvalues = [1, 2]\n[[experiment.sweep]]\nkey = \"protocol\"\nvalues = [\"atp-default\", \"tcp-tahoe\", \"tcp-reno\"]\n",
        )
        .unwrap();
        let pts = e.points("e.toml").unwrap();
        assert_eq!(pts.len(), 6);
        assert_eq!(pts[0].label(), "hops=1 protocol=atp-default");
        assert_eq!(pts[5].label(), "hops=2 protocol=tcp-reno");
        // `hops` resizes the chain and moves the flow's far end with it.
        assert_eq!(pts[4].scenario.node_count(), 3);
        assert_eq!(pts[4].scenario.flows[0].dst, 2);
        assert_eq!(pts[4].scenario.flows[0].protocol(), Some(meshbed_proto::Protocol::TcpTahoe));
    }

    #[test]
    fn dotted_paths_and_flow_count() {
        let e = with(
            "[experiment]\nname = \"t\"\n[[experiment.sweep]]\nkey = \"flow_count\"\nvalues = [3]\n[[experiment.sweep]]\nkey = \"flows[*].atp.kappa\"\nvalues = [0.5]\n[[experiment.sweep]]\nkey = \"radio.mac.short_retry_limit\"\nvalues = [0]\n[[experiment.sweep]]\nkey = \"flows[2].start_s\"\nvalues = [4.0]\n",
        )
        .unwrap();
        let p = &e.points("e.toml").unwrap()[0];
        assert_eq!(p.scenario.flows.len(), 3);
        assert!(p
            .scenario
            .flows
            .iter()
            .all(|f| f.transport().and_then(|t| t.atp()).and_then(|a| a.kappa) == Some(0.5)));
        assert_eq!(p.scenario.radio.mac.short_retry_limit, 0);
        assert_eq!(p.scenario.flows[2].start_s, 4.0);
        assert_eq!(p.scenario.flows[0].start_s, 0.0);
    }

    #[test]
    fn mistakes_name_the_file_the_key_and_the_point() {
        let e = with("").unwrap_err().to_string();
        assert!(e.contains("e.toml") && e.contains("experiment") && e.contains("missing"), "{e}");
        let e = with("[experiment]\nname = \"t\"\nrepetitions = 0\n").unwrap_err().to_string();
        assert!(e.contains("experiment.repetitions = 0"), "{e}");
        let e =
            with("[experiment]\nname = \"t\"\n[[experiment.sweep]]\nkey = \"protocol\"\nvalues = [\"tcp-vegas\"]\n")
                .unwrap_err()
                .to_string();
        assert!(e.contains("protocol=tcp-vegas") && e.contains("flows[0].protocol"), "{e}");
        let e = with("[experiment]\nname = \"t\"\n[[experiment.sweep]]\nkey = \"flows[5].start_s\"\nvalues = [1.0]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("experiment.sweep[0]") && e.contains("below 1"), "{e}");
        let e = with("[experiment]\nname = \"t\"\nx_axis = \"hops\"\n").unwrap_err().to_string();
        assert!(e.contains("experiment.x_axis = hops"), "{e}");
        let e = with("[experiment]\nname = \"t\"\ncolour = 1\n").unwrap_err().to_string();
        assert!(e.contains("colour"), "{e}");
    }

    #[test]
    fn round_trips_through_toml() {
        let e = with("[experiment]\nname = \"t\"\n[[experiment.sweep]]\nkey = \"hops\"\nvalues = [1, 2]\n").unwrap();
        let again = Experiment::from_toml(&e.to_toml(), "again.toml").unwrap();
        assert_eq!(again.config, e.config);
        assert_eq!(again.points("x").unwrap().len(), 2);
    }

    fn axis(key: &str, values: impl Iterator<Item = String>) -> String {
        format!("[[experiment.sweep]]\nkey = \"{key}\"\nvalues = [{}]\n", values.collect::<Vec<_>>().join(", "))
    }

    #[test]
    fn huge_sweeps_are_refused_before_anything_is_built() {
        let e = with(&format!(
            "[experiment]\nname = \"t\"\n{}",
            axis("flow_count", ["4000000000".to_string()].into_iter())
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("flow_count = 4000000000: expected a number of flows from 1 to 1000"), "{e}");
        // 3 axes × 2000 values: 8e9 points.
        let axes: String = ["radio.mac.short_retry_limit", "radio.mac.long_retry_limit", "radio.mac.queue_packets"]
            .iter()
            .map(|k| axis(k, (1..=2000).map(|v| v.to_string())))
            .collect();
        let e = with(&format!("[experiment]\nname = \"t\"\n{axes}")).unwrap_err().to_string();
        assert!(e.contains("experiment.sweep = 2000 × 2000 × 2000 values = 8000000000 points"), "{e}");
        assert!(e.contains(&format!("at most {MAX_POINTS} points")), "{e}");
        let e = with(&format!("[experiment]\nname = \"t\"\n{}", axis("hops", ["5000".to_string()].into_iter())))
            .unwrap_err()
            .to_string();
        assert!(e.contains("hops = 5000: expected a chain length from 1 to 1999 hops"), "{e}");
    }

    #[test]
    fn more_runs_or_memory_than_the_bounds_asks_for_force() {
        // 2001 points × 10 repetitions: parsed (too many to check at once), then refused without --force.
        let e = with(&format!(
            "[experiment]\nname = \"t\"\n{}",
            axis("flows[0].start_s", (0..=2000).map(|v| format!("{:?}", v as f64 / 100.0)))
        ))
        .unwrap();
        let err = e.plan("e.toml", 10, 1, false).unwrap_err().to_string();
        assert!(err.contains("2001 points × 10 repetitions = 20010 runs") && err.contains("--force"), "{err}");
        assert!(e.plan("e.toml", 9, 1, false).is_ok());
        assert_eq!(e.plan("e.toml", 10, 1, true).unwrap().runs, 20_010);
        // Memory: two senders of 2 GiB each, on 2 threads.
        let big = BASE.replace("bytes = 100000", &format!("bytes = {}", 1u64 << 31)).replace(
            "[[flows]]",
            "[[flows]]\nsrc = 0\ndst = 3\nprotocol = \"tcp-reno\"\nbytes = 2147483648\n[[flows]]",
        );
        let e = Experiment::from_toml(&format!("{big}[experiment]\nname = \"t\"\n"), "e.toml").unwrap();
        let err = e.plan("e.toml", 1, 2, false).unwrap_err().to_string();
        assert!(err.contains("GiB of memory") && err.contains("--force"), "{err}");
        assert!(e.plan("e.toml", 1, 2, true).is_ok());
        assert!(e.plan("e.toml", 1, 1, true).unwrap().memory_bytes >= 1 << 32);
    }

    #[test]
    fn a_sweep_point_error_names_file_point_and_key_once() {
        let e = with(&format!(
            "[experiment]\nname = \"t\"\n{}",
            axis("flows[*].atp.epoch_s", ["1e-12".to_string()].into_iter())
        ))
        .unwrap_err();
        let text = format!("{:#}", anyhow::Error::from(e));
        assert!(text.starts_with("e.toml: sweep point `flows[*].atp.epoch_s="), "{text}");
        assert!(
            text.contains("`: flows[0].atp.epoch_s = 1e-12: expected an epoch in seconds from 0.001 to 60"),
            "{text}"
        );
        assert!(!text.contains(": :") && text.matches("expected").count() == 1, "{text}");
        // A point whose flow has no route is refused like a scenario.
        let e = with(&format!(
            "[experiment]\nname = \"t\"\n{}",
            axis("topology.spacing_m", ["200.0".to_string(), "5000.0".to_string()].into_iter())
        ))
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("sweep point `topology.spacing_m=5000.0`: flows[0].dst = 3: expected a node with a route"),
            "{e}"
        );
    }
}
