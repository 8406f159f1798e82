//! The points of a sweep, built and validated one by one, and the plan
//! (points, runs and a memory estimate) checked before anything runs.

use super::sweep::apply;
use super::{
    invalid, BatchMeans, Experiment, ExperimentError, Plan, Point, MAX_MEMORY_BYTES, MAX_POINTS, MAX_RUNS,
    MAX_RUNS_FORCED,
};
use meshbed_sim::{Scenario, ScenarioError};
use toml::Value;

impl Experiment {
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
            let data: u64 = (0..s.flows.len()).map(|i| s.sender_held_bytes(i)).sum();
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
    pub(super) fn point(&self, file: &str, index: usize) -> Result<Point, ExperimentError> {
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
