//! Running an experiment: every point × repetition on all cores, then one
//! row per flow per run, and a summary per point with the documents' metrics.

use crate::metrics::{self, SampleStats};
use crate::spec::{value_text, BatchMeans, Experiment, ExperimentError, Point};
use crate::store::{Lookup, Provenance, Store, StoreTally};
use crate::table::TableWriter;
use indicatif::{ProgressBar, ProgressStyle};
use meshbed_sim::backend::{Refusal, ScenarioBackend, Simulator};
use meshbed_sim::{FlowResult, RouteLogEvent, RouteLogSide, Scenario, ScenarioError, SimReport, TraceKind};
use serde::Serialize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// One simulation of one point.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    pub point: usize,
    pub rep: u32,
    pub seed: u64,
    pub report: SimReport,
    /// The build that ran it (this one, or the one that stored it).
    pub provenance: Provenance,
}

/// Everything an experiment produced.
#[derive(Clone, Debug)]
pub struct Results {
    pub experiment: Experiment,
    pub points: Vec<Point>,
    /// Ordered by (point, repetition) whatever order the threads finished in.
    pub runs: Vec<RunOutcome>,
    /// With a result store: what ran, what was reused, what was not usable.
    pub store: Option<StoreTally>,
}

/// Where the points run: the simulator ([`SimRunner`]), or any backend that
/// reports a run in the simulator's shape (the CLI plugs in the real-time
/// emulator; this crate does not depend on it).
pub trait Runner: Send + Sync + std::fmt::Debug {
    /// How many runs may go at once (`None`: as many as the options ask;
    /// the emulator: one, it runs in wall-clock time on this machine).
    fn max_parallel(&self) -> Option<usize> {
        None
    }
    /// Whether this backend can run `scenario` as written (its
    /// [`ScenarioBackend::supports`]); [`run`] asks it of every point before
    /// anything runs and refuses the experiment naming every refused key.
    fn supports(&self, scenario: &Scenario) -> Result<(), Refusal>;
    /// Runs one repetition of one point (the scenario's seed is the
    /// repetition's).
    fn run(&self, scenario: &Scenario) -> Result<SimReport, RunError>;
    /// The name its runs are kept under in a result store ([`Store`]), for
    /// a backend whose report is a function of the scenario alone; `None`
    /// (the default): its runs are neither stored nor reused.
    fn store_name(&self) -> Option<&str> {
        None
    }
}

/// Why a [`Runner`] could not run a point.
#[derive(Debug)]
pub enum RunError {
    /// The scenario is invalid for this run (e.g. a seed without routes).
    Scenario(ScenarioError),
    /// The backend failed (the emulator's namespaces, its processes...).
    Backend(String),
}

/// The discrete-event simulator: as fast as possible, deterministic.
#[derive(Clone, Copy, Debug, Default)]
pub struct SimRunner;

impl Runner for SimRunner {
    fn supports(&self, scenario: &Scenario) -> Result<(), Refusal> {
        Simulator.supports(scenario)
    }
    fn run(&self, scenario: &Scenario) -> Result<SimReport, RunError> {
        meshbed_sim::run(scenario).map_err(RunError::Scenario)
    }
    fn store_name(&self) -> Option<&str> {
        Some("sim")
    }
}

/// How to run.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Overrides the experiment's repetitions.
    pub repetitions: Option<u32>,
    /// Worker threads; 0 = all cores (capped by the runner's [`Runner::max_parallel`]).
    pub jobs: usize,
    pub progress: bool,
    pub runner: Arc<dyn Runner>,
    /// Run an experiment larger than the bounds of [`Experiment::plan`].
    pub force: bool,
    /// Reuse the finished runs kept here and keep the new ones (a runner
    /// without a [`Runner::store_name`] ignores it). `None`: run everything.
    pub store: Option<Arc<Store>>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            repetitions: None,
            jobs: 0,
            progress: false,
            runner: Arc::new(SimRunner),
            force: false,
            store: None,
        }
    }
}

/// meshbed's progress bar on stderr (hidden unless `show`): `message`,
/// a bar, `pos/len unit`, elapsed time and an estimate of what is left.
pub fn progress_bar(show: bool, len: u64, unit: &str, message: String) -> ProgressBar {
    let bar = if show { ProgressBar::new(len) } else { ProgressBar::hidden() };
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{{msg}} [{{bar:40}}] {{pos}}/{{len}} {unit}, {{elapsed}} elapsed, ~{{eta}} left"
        ))
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar.set_message(message);
    bar
}

/// Shadowing draws each link from the seed, so a point whose flows have
/// routes with its base seed may lose them with another repetition's seed:
/// checked for every repetition before any runs.
fn check_routes_for_every_seed(file: &str, points: &[Point], reps: u32) -> Result<(), ExperimentError> {
    for p in points.iter().filter(|p| p.scenario.radio.shadowing_sigma_db > 0.0) {
        for rep in 1..reps {
            let mut scenario = p.scenario.clone();
            scenario.seed = scenario.seed.wrapping_add(rep as u64);
            meshbed_sim::check_routes(&scenario).map_err(|error| ExperimentError::Point {
                file: file.into(),
                point: format!("{} (repetition {rep}, seed {})", p.label(), scenario.seed),
                error: Box::new(error),
            })?;
        }
    }
    Ok(())
}

/// Asks the runner about every point before anything runs: a refusal names
/// each key any point asked for, once.
fn refuse_unsupported(file: &str, points: &[Point], runner: &dyn Runner) -> Result<(), ExperimentError> {
    let mut refused: Option<Refusal> = None;
    for p in points {
        if let Err(r) = runner.supports(&p.scenario) {
            refused.get_or_insert_with(|| Refusal::new(r.backend)).merge(r);
        }
    }
    match refused {
        Some(refusal) => Err(ExperimentError::Refused { file: file.into(), refusal }),
        None => Ok(()),
    }
}

/// Runs every point and repetition.
pub fn run(experiment: &Experiment, options: &RunOptions) -> Result<Results, ExperimentError> {
    let file = &experiment.file;
    let reps = options.repetitions.unwrap_or(experiment.config.repetitions).max(1);
    let threads = match options.jobs {
        0 => std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        n => n,
    };
    let threads = options.runner.max_parallel().map_or(threads, |m| threads.min(m.max(1)));
    let plan = experiment.plan(file, reps, threads, options.force)?;
    let points = plan.points;
    refuse_unsupported(file, &points, &*options.runner)?;
    check_routes_for_every_seed(file, &points, reps)?;
    // Job i is repetition i % reps of point i / reps.
    let job_count = points.len() * reps as usize;
    let threads = threads.min(job_count.max(1));
    let bar = progress_bar(options.progress, job_count as u64, "runs", experiment.config.name.clone());
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<RunOutcome>>> = Mutex::new(vec![None; job_count]);
    let failure: Mutex<Option<ExperimentError>> = Mutex::new(None);
    let store = options.store.as_deref().zip(options.runner.store_name());
    let tally = Mutex::new(StoreTally {
        dir: store.map(|(s, _)| s.dir().to_path_buf()).unwrap_or_default(),
        ..StoreTally::default()
    });
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= job_count {
                    break;
                }
                let (p, rep) = (i / reps as usize, (i % reps as usize) as u32);
                let mut scenario = points[p].scenario.clone();
                // Common random numbers: repetition r of every point uses the same seed.
                scenario.seed = scenario.seed.wrapping_add(rep as u64);
                let seed = scenario.seed;
                let key = store.map(|(store, runner)| store.key(runner, &scenario));
                if let (Some((store, _)), Some(key)) = (store, &key) {
                    let lookup = store.load(key);
                    let mut t = tally.lock().expect("no thread panics while holding the lock");
                    match lookup {
                        Lookup::Hit(report, provenance) => {
                            t.reused += 1;
                            t.reused_from_other_revisions +=
                                usize::from(provenance.git_revision != crate::store::GIT_REVISION);
                            drop(t);
                            slots.lock().expect("no thread panics while holding the lock")[i] =
                                Some(RunOutcome { point: p, rep, seed, report: *report, provenance });
                            bar.inc(1);
                            continue;
                        }
                        Lookup::Missing => {}
                        Lookup::Stale(why) => t.stale.push(why),
                        Lookup::Corrupt(why) => t.corrupt.push(why),
                    }
                }
                let run = options.runner.run(&scenario).map_err(|e| match e {
                    RunError::Scenario(error) => ExperimentError::Point {
                        file: file.clone(),
                        point: format!("{} (repetition {rep}, seed {seed})", points[p].label()),
                        error: Box::new(error),
                    },
                    RunError::Backend(why) => ExperimentError::Backend(why),
                });
                // A finished run is kept at once, so that a sweep killed
                // later resumes after it.
                let run = run.and_then(|report| match (store, &key) {
                    (Some((store, _)), Some(key)) => {
                        store.save(key, &report).map(|()| report).map_err(|e| ExperimentError::Backend(e.to_string()))
                    }
                    _ => Ok(report),
                });
                match run {
                    Ok(report) => {
                        tally.lock().expect("no thread panics while holding the lock").executed += 1;
                        slots.lock().expect("no thread panics while holding the lock")[i] =
                            Some(RunOutcome { point: p, rep, seed, report, provenance: Provenance::this_build() })
                    }
                    Err(e) => {
                        failure.lock().expect("no thread panics while holding the lock").get_or_insert(e);
                        // Stop handing out work.
                        next.store(job_count, Ordering::Relaxed);
                        break;
                    }
                }
                bar.inc(1);
            });
        }
    });
    bar.finish_and_clear();
    if let Some(e) = failure.into_inner().expect("threads joined") {
        return Err(e);
    }
    let runs = slots.into_inner().expect("threads joined").into_iter().map(|o| o.expect("every job ran")).collect();
    let mut tally = tally.into_inner().expect("threads joined");
    // Threads finish in any order: the reasons sorted, so that the report
    // does not depend on which finished first.
    tally.stale.sort();
    tally.corrupt.sort();
    Ok(Results { experiment: experiment.clone(), points, runs, store: store.map(|_| tally) })
}

/// Goodput of a flow inside `[from, to]` seconds from its delivery trace,
/// for flows that overlap only part of the run (seed 001 Table 5.1 counts
/// the time when all three flows are active).
pub fn windowed_goodput_bps(flow: &FlowResult, from_s: f64, to_s: f64) -> Option<f64> {
    let mut any = false;
    let mut bytes = 0.0;
    for t in flow.trace.iter().filter(|t| t.kind == TraceKind::DeliveredBytes) {
        any = true;
        if t.t_s > from_s && t.t_s <= to_s {
            bytes += t.value;
        }
    }
    (any || flow.bytes_delivered == 0).then(|| bytes * 8.0 / (to_s - from_s))
}

/// The goodput a summary uses for a flow: over the experiment's window if
/// one is set, else over the flow's own duration.
pub fn flow_goodput_bps(results: &Results, flow: &FlowResult) -> f64 {
    match results.experiment.config.window_s {
        Some([a, b]) => windowed_goodput_bps(flow, a, b).unwrap_or(flow.goodput_bps),
        None => flow.goodput_bps,
    }
}

/// A flow's goodput by the batch-means method (seed 004 §IV).
#[derive(Clone, Debug, PartialEq)]
pub enum BatchGoodput {
    /// `batch_durations_s`: how long each kept batch took to deliver, in
    /// order; `goodput_bps`: a batch's bits over their mean; `ci95_bps`: the
    /// 95% half-width of that goodput (NaN when the batches took no time).
    Estimate { batch_durations_s: Vec<f64>, goodput_bps: f64, ci95_bps: f64 },
    /// The flow delivered `reached` of the `needed` batches when the run
    /// ended (or recorded none: `batch_bytes` unset).
    Short { reached: usize, needed: usize },
    /// Every kept batch was handed up at one instant: no time to divide by.
    NoTime,
}

impl BatchGoodput {
    /// The estimate in bit/s, `None` for a flow without one.
    pub fn estimate_bps(&self) -> Option<f64> {
        match self {
            BatchGoodput::Estimate { goodput_bps, .. } => Some(*goodput_bps),
            _ => None,
        }
    }
}

/// The batch-means goodput of a flow that started at `start_s` and
/// delivered batch k (of `batch_bytes` bytes) at `milestones_s[k]`: batch k
/// lasts from the previous milestone (the start for the first) to its own;
/// the first `discard` batches are dropped and the next `batches − discard`
/// kept (later milestones, from a longer transfer, are not used).
///
/// The batch means are of the time a batch takes (the per-packet delivery
/// time summed over a batch), the measure that adds up: the goodput is
/// `batch_bytes · 8` over their mean, i.e. the kept batches' bytes over
/// their time, and its interval is the mean time's Student-t interval
/// carried over by the delta method (half-width = goodput × half-width of
/// the time / mean time). Averaging the batches' rates instead would
/// overweight short batches (Jensen): a receiver that hands up a batch in
/// one burst after a hole is filled gives a batch of almost no time and an
/// enormous rate (seen with ATP at 54 Mbit/s, docs/PROTOCOLS.md).
pub fn batch_goodput(start_s: f64, milestones_s: &[f64], batch_bytes: Option<u64>, b: &BatchMeans) -> BatchGoodput {
    let needed = b.batches as usize;
    let Some(batch_bytes) = batch_bytes.filter(|_| milestones_s.len() >= needed) else {
        return BatchGoodput::Short { reached: milestones_s.len().min(needed), needed };
    };
    let batch_durations_s: Vec<f64> = (b.discard as usize..needed)
        .map(|k| milestones_s[k] - if k == 0 { start_s } else { milestones_s[k - 1] })
        .collect();
    let time = metrics::sample_stats(&batch_durations_s);
    if time.mean <= 0.0 {
        return BatchGoodput::NoTime;
    }
    let goodput_bps = batch_bytes as f64 * 8.0 / time.mean;
    BatchGoodput::Estimate { batch_durations_s, goodput_bps, ci95_bps: goodput_bps * time.ci95 / time.mean }
}

/// A flow's [`batch_goodput`] under the experiment's `batch_means`.
pub fn flow_batch_goodput(flow: &FlowResult, b: &BatchMeans) -> BatchGoodput {
    batch_goodput(flow.start_s, &flow.delivery_milestones_s, flow.batch_bytes, b)
}

/// A point's batch-means goodput (seed 004 §IV), over its runs.
#[derive(Clone, Debug, Serialize)]
pub struct BatchSummary {
    /// The batch-means estimate of every flow of every run that has one:
    /// their mean, and the spread and confidence interval across them.
    pub goodput_bps: SampleStats,
    /// The batch-means 95% half-width (within a run, across its batches),
    /// averaged over those flows: with one run and one flow, the paper's
    /// interval.
    pub batch_ci95_bps: f64,
    /// Per run whose flows all have an estimate: their sum, and Jain's index.
    pub aggregate_bps: Option<SampleStats>,
    pub jain_index: Option<SampleStats>,
    /// Mean estimate of flow i (by index) over the runs where it has one.
    pub per_flow_mean_bps: Vec<Option<f64>>,
    /// Flows of all runs, and those without an estimate (short of the
    /// packet count, or a zero-length batch): reported, never averaged in.
    pub flows: usize,
    pub short_flows: usize,
}

impl BatchSummary {
    fn of(runs: &[&RunOutcome], nflows: usize, b: &BatchMeans) -> BatchSummary {
        let (mut all, mut cis, mut agg, mut jain) = (vec![], vec![], vec![], vec![]);
        let mut per_flow: Vec<Vec<f64>> = vec![Vec::new(); nflows];
        let (mut flows, mut short) = (0, 0);
        for r in runs {
            let mut run_estimates = Vec::new();
            for (i, f) in r.report.flows.iter().enumerate() {
                flows += 1;
                match flow_batch_goodput(f, b) {
                    BatchGoodput::Estimate { goodput_bps, ci95_bps, .. } => {
                        all.push(goodput_bps);
                        if ci95_bps.is_finite() {
                            cis.push(ci95_bps);
                        }
                        if let Some(v) = per_flow.get_mut(i) {
                            v.push(goodput_bps);
                        }
                        run_estimates.push(goodput_bps);
                    }
                    _ => short += 1,
                }
            }
            if !run_estimates.is_empty() && run_estimates.len() == r.report.flows.len() {
                agg.push(run_estimates.iter().sum());
                jain.push(metrics::jain_index(&run_estimates));
            }
        }
        let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
        BatchSummary {
            goodput_bps: metrics::sample_stats(&all),
            batch_ci95_bps: mean(&cis).unwrap_or(f64::NAN),
            aggregate_bps: stats_of(agg.into_iter()),
            jain_index: stats_of(jain.into_iter()),
            per_flow_mean_bps: per_flow.iter().map(|v| mean(v)).collect(),
            flows,
            short_flows: short,
        }
    }
}

/// Per-point summary over its repetitions.
#[derive(Clone, Debug, Serialize)]
pub struct PointSummary {
    pub point: usize,
    pub label: String,
    pub runs: usize,
    /// Per-flow goodput, every flow of every run.
    pub flow_goodput_bps: SampleStats,
    /// Sum over the flows of a run.
    pub aggregate_goodput_bps: SampleStats,
    /// Normalised standard deviation of the flows' goodput in a run.
    pub unfairness: SampleStats,
    pub log_utility: SampleStats,
    pub jain_index: SampleStats,
    pub starved_flows: usize,
    pub flows: usize,
    /// Transport flows that did not complete (failed ones included).
    pub incomplete_flows: usize,
    /// Of those, flows that failed (an engine gave up, or bytes differed).
    pub failed_flows: usize,
    /// Mean goodput of flow i (by index) over the repetitions.
    pub per_flow_mean_bps: Vec<f64>,
    pub retransmissions: SampleStats,
    /// Seed 002 §2's quantities (Figs. 2–5), per flow over every run.
    pub routes: RouteSummary,
    /// Seed 003 §5.2 Table 2: one sample per run with a completed route
    /// discovery, the run's mean discovery time (from the first held packet
    /// to the route; one per run in the discovery experiment). `None`
    /// without discoveries.
    pub route_discovery_s: Option<SampleStats>,
    /// Seed 003 §5.3 Table 3: the run's routing overhead ratio (control
    /// packets per data packet delivered), one sample per run.
    pub routing_overhead_ratio: Option<SampleStats>,
    /// Seed 003 §5.4 Table 4: every echo RTT of every run, pooled.
    pub echo_rtt_s: Option<SampleStats>,
    /// Goodput by batch means, with `[experiment] batch_means` only.
    pub batch_means: Option<BatchSummary>,
    /// How feedback reached the senders and what D_max the relays stamped.
    pub delays: DelaySummary,
}

/// Per flow over every run of a point: how the transport feedback reached
/// the sender (seed 000 §V.A.2, Fig. 7b; [`meshbed_sim::report::FeedbackTiming`])
/// and the D_max the relays stamped on ATP's data (seed 001 §3.1, appendix
/// A.6: what batched completion interrupts bias). `None` where no flow of
/// the point has the quantity.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DelaySummary {
    /// Mean time from the receiver to the sender of a flow's feedback, s.
    pub feedback_delay_s: Option<SampleStats>,
    /// Coefficient of variation of the gaps between feedback packets as
    /// sent and as received, and the share of arrivals clustered.
    pub feedback_sent_gap_cv: Option<SampleStats>,
    pub feedback_arrival_gap_cv: Option<SampleStats>,
    pub feedback_clustered_share: Option<SampleStats>,
    /// A flow's mean D_max over the ATP data packets that reached the
    /// receiver, µs.
    pub d_max_mean_us: Option<SampleStats>,
    /// A traced flow's median D_max over the same packets, µs.
    pub d_max_median_us: Option<SampleStats>,
}

impl DelaySummary {
    fn of<'a>(flows: impl Iterator<Item = &'a FlowResult> + Clone) -> DelaySummary {
        let feedback = |get: fn(&meshbed_sim::report::FeedbackTiming) -> Option<f64>| {
            stats_of(flows.clone().filter_map(|f| f.feedback.as_ref()).filter_map(get))
        };
        let atp_data = flows.clone().filter_map(|f| f.path.as_ref()).filter(|p| p.data_packets > 0);
        DelaySummary {
            feedback_delay_s: feedback(|t| Some(t.mean_delay_s)),
            feedback_sent_gap_cv: feedback(|t| t.sent_gap_cv),
            feedback_arrival_gap_cv: feedback(|t| t.arrival_gap_cv),
            feedback_clustered_share: feedback(|t| Some(t.clustered_share)),
            d_max_mean_us: stats_of(atp_data.map(|p| p.d_max_mean_us)),
            d_max_median_us: stats_of(flows.filter_map(|f| metrics::trace_median(&f.trace, TraceKind::DMaxUs))),
        }
    }
}

/// Per-point means of what seed 002 §2 measures (Figs. 2–5): the TCP
/// senders' slow starts, time in slow start, timeouts and largest RTO;
/// the share of the flows' network-layer losses that were link failures
/// (retry-limit drops); routes recomputed after failures and the share of
/// them over a new path; route failures seen by the data's route (at the
/// sender) and the reverse route (at the receiver). `None` where no flow of
/// the point has the quantity (no TCP flow, no loss, no recomputed route).
#[derive(Clone, Debug, Default, Serialize)]
pub struct RouteSummary {
    /// TCP flows counted (mean over them of the next four).
    pub tcp_flows: usize,
    pub slow_starts: Option<f64>,
    /// Time in slow start over the flow's duration.
    pub slow_start_share: Option<f64>,
    pub timeouts: Option<f64>,
    pub max_rto_s: Option<f64>,
    /// Σ retry-limit drops / Σ all drops, over the point's flows.
    pub link_loss_share: Option<f64>,
    /// Mean per flow.
    pub routes_recomputed: f64,
    /// Σ new routes / Σ recomputed routes.
    pub routes_new_share: Option<f64>,
    /// Mean "route failed" notices per flow at its sender and receiver.
    pub route_failed_at_sender: f64,
    pub route_failed_at_receiver: f64,
    pub path_changes: f64,
}

impl RouteSummary {
    fn of<'a>(flows: impl Iterator<Item = &'a FlowResult> + Clone) -> RouteSummary {
        let mean = |v: Vec<f64>| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
        let ratio = |a: u64, b: u64| (b > 0).then(|| a as f64 / b as f64);
        let tcp: Vec<(&FlowResult, &meshbed_sim::report::TcpDetail)> =
            flows.clone().filter_map(|f| f.sender.as_ref().and_then(|d| d.tcp.as_ref()).map(|t| (f, t))).collect();
        let n = flows.clone().count().max(1) as f64;
        let failed_at = |side: RouteLogSide| {
            flows
                .clone()
                .flat_map(|f| &f.route_log)
                .filter(|e| e.side == side && e.event == RouteLogEvent::RouteFailed)
                .count() as f64
                / n
        };
        let (link, drops) =
            flows.clone().fold((0, 0), |(l, d), f| (l + f.net.drops.retry_limit, d + f.net.drops.total()));
        let (recomputed, new) = flows.clone().fold((0, 0), |(r, w), f| (r + f.routes_recomputed, w + f.routes_new));
        RouteSummary {
            tcp_flows: tcp.len(),
            slow_starts: mean(tcp.iter().map(|(_, t)| t.slow_start_entries as f64).collect()),
            slow_start_share: mean(
                tcp.iter()
                    .filter(|(f, _)| f.duration_s > 0.0)
                    .map(|(f, t)| t.slow_start_time_s / f.duration_s)
                    .collect(),
            ),
            timeouts: mean(tcp.iter().map(|(_, t)| t.timeouts as f64).collect()),
            max_rto_s: mean(tcp.iter().map(|(_, t)| t.max_rto_s).collect()),
            link_loss_share: ratio(link, drops),
            routes_recomputed: recomputed as f64 / n,
            routes_new_share: ratio(new, recomputed),
            route_failed_at_sender: failed_at(RouteLogSide::Sender),
            route_failed_at_receiver: failed_at(RouteLogSide::Receiver),
            path_changes: flows.map(|f| f.path_changes as f64).sum::<f64>() / n,
        }
    }
}

/// Statistics of the values, `None` for none.
fn stats_of(values: impl Iterator<Item = f64>) -> Option<SampleStats> {
    let v: Vec<f64> = values.collect();
    (!v.is_empty()).then(|| metrics::sample_stats(&v))
}

pub fn summarize(results: &Results) -> Vec<PointSummary> {
    results
        .points
        .iter()
        .map(|p| {
            let runs: Vec<&RunOutcome> = results.runs.iter().filter(|r| r.point == p.index).collect();
            let mut all = Vec::new();
            let (mut agg, mut unfair, mut util, mut jain, mut retx) = (vec![], vec![], vec![], vec![], vec![]);
            let nflows = p.scenario.flow_count();
            let mut per_flow = vec![0.0; nflows];
            let (mut incomplete, mut failed) = (0, 0);
            for r in &runs {
                let g: Vec<f64> = r.report.flows.iter().map(|f| flow_goodput_bps(results, f)).collect();
                for (i, x) in g.iter().enumerate() {
                    per_flow[i] += x / runs.len() as f64;
                }
                all.extend_from_slice(&g);
                agg.push(g.iter().sum());
                unfair.push(metrics::unfairness(&g));
                util.push(metrics::log_utility(&g));
                jain.push(metrics::jain_index(&g));
                retx.push(r.report.flows.iter().map(|f| f.retransmissions as f64).sum());
                incomplete += r.report.flows.iter().filter(|f| f.protocol.is_some() && !f.completed).count();
                failed += r.report.flows.iter().filter(|f| f.failed).count();
            }
            PointSummary {
                point: p.index,
                label: p.label(),
                runs: runs.len(),
                flow_goodput_bps: metrics::sample_stats(&all),
                aggregate_goodput_bps: metrics::sample_stats(&agg),
                unfairness: metrics::sample_stats(&unfair),
                log_utility: metrics::sample_stats(&util),
                jain_index: metrics::sample_stats(&jain),
                starved_flows: metrics::starved_count(&all),
                flows: all.len(),
                incomplete_flows: incomplete,
                failed_flows: failed,
                per_flow_mean_bps: per_flow,
                retransmissions: metrics::sample_stats(&retx),
                routes: RouteSummary::of(runs.iter().flat_map(|r| &r.report.flows)),
                route_discovery_s: stats_of(runs.iter().filter_map(|r| {
                    let d = &r.report.net_total.discoveries;
                    (d.completed > 0).then(|| d.total_ns as f64 / d.completed as f64 / 1e9)
                })),
                routing_overhead_ratio: stats_of(runs.iter().filter_map(|r| r.report.routing_overhead_ratio)),
                echo_rtt_s: stats_of(
                    runs.iter()
                        .flat_map(|r| &r.report.flows)
                        .filter_map(|f| f.echo.as_ref())
                        .flat_map(|e| e.rtt_samples_s.iter().copied()),
                ),
                batch_means: results.experiment.config.batch_means.map(|b| BatchSummary::of(&runs, nflows, &b)),
                delays: DelaySummary::of(runs.iter().flat_map(|r| &r.report.flows)),
            }
        })
        .collect()
}

/// The per-point summary as a plain-text table.
/// The random pairs an experiment's runs drew (`[random_flows]`): whether
/// every point of a repetition drew the same pair for each flow index (what
/// comparing protocols on identical pairs needs), and the hop counts of the
/// distinct pairs (seed 001 §5.5: "a maximum path length of 4 hops").
#[derive(Clone, Debug, PartialEq)]
pub struct RandomPairs {
    /// Distinct (seed, flow index) pairs drawn.
    pub pairs: usize,
    /// Whether every point of a repetition drew the same pair for a flow index.
    pub same_in_every_point: bool,
    /// `(hops, pairs)`, by hops; `None` hops: no route at time zero.
    pub hops: Vec<(Option<u32>, usize)>,
}

/// The random pairs of `results`, if any point draws them.
pub fn random_pairs(results: &Results) -> Option<RandomPairs> {
    use std::collections::BTreeMap;
    if !results.points.iter().any(|p| p.scenario.random_flows.is_some()) {
        return None;
    }
    let mut drawn: BTreeMap<(u64, u32), (u32, u32, Option<u32>)> = BTreeMap::new();
    let mut same = true;
    for r in &results.runs {
        let Some(rf) = &results.points[r.point].scenario.random_flows else { continue };
        // The drawn flows are the last `count` of the run's flows.
        let first = r.report.flows.len().saturating_sub(rf.count as usize);
        for (i, f) in r.report.flows[first..].iter().enumerate() {
            let pair = (f.src, f.dst, f.hops);
            match drawn.entry((r.seed, i as u32)) {
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert(pair);
                }
                std::collections::btree_map::Entry::Occupied(o) => same &= *o.get() == pair,
            }
        }
    }
    let mut hops: BTreeMap<Option<u32>, usize> = BTreeMap::new();
    for &(_, _, h) in drawn.values() {
        *hops.entry(h).or_default() += 1;
    }
    Some(RandomPairs { pairs: drawn.len(), same_in_every_point: same, hops: hops.into_iter().collect() })
}

pub fn summary_table(results: &Results, summaries: &[PointSummary]) -> String {
    use std::fmt::Write;
    let multi = results.points.iter().any(|p| p.scenario.flow_count() > 1);
    let mut s = String::new();
    let width = summaries.iter().map(|x| x.label.len()).max().unwrap_or(5).max(5);
    // Mean ± sd, then the median (seed 003 reports medians; the CSV also
    // has min, max and the 95% confidence interval).
    let _ = write!(s, "{:<width$}  {:>4}  {:>17}  {:>7}", "point", "runs", "goodput Mb/s", "median");
    if multi {
        let _ = write!(
            s,
            "  {:>17}  {:>7}  {:>13}  {:>13}  {:>7}",
            "aggregate Mb/s", "median", "unfairness", "log utility", "starved"
        );
    }
    let _ = writeln!(s, "  {:>10}  {:>10}  {:>6}", "retx/run", "incomplete", "failed");
    for x in summaries {
        let _ = write!(
            s,
            "{:<width$}  {:>4}  {:>8.3} ± {:>6.3}  {:>7.3}",
            x.label,
            x.runs,
            x.flow_goodput_bps.mean / 1e6,
            x.flow_goodput_bps.sd / 1e6,
            x.flow_goodput_bps.median / 1e6
        );
        if multi {
            let _ = write!(
                s,
                "  {:>8.3} ± {:>6.3}  {:>7.3}  {:>5.3} ± {:>5.3}  {:>5.2} ± {:>5.2}  {:>7}",
                x.aggregate_goodput_bps.mean / 1e6,
                x.aggregate_goodput_bps.sd / 1e6,
                x.aggregate_goodput_bps.median / 1e6,
                x.unfairness.mean,
                x.unfairness.sd,
                x.log_utility.mean,
                x.log_utility.sd,
                x.starved_flows
            );
        }
        let _ = writeln!(s, "  {:>10.1}  {:>10}  {:>6}", x.retransmissions.mean, x.incomplete_flows, x.failed_flows);
    }
    // Over routing that reacts: seed 002 §2's quantities per point.
    if results.points.iter().any(|p| p.scenario.routing.is_dynamic()) {
        let opt = |v: Option<f64>, prec: usize| v.map_or("-".to_string(), |x| format!("{x:.prec$}"));
        let _ = writeln!(
            s,
            "\nper flow, mean over runs (seed 002 §2): TCP slow starts, share of time in slow start, timeouts, \
             largest RTO; share of losses that were link failures; routes recomputed after a failure and the share \
             over a new path; route failures seen at the sender / the receiver; path changes"
        );
        let _ = writeln!(
            s,
            "{:<width$}  {:>7}  {:>6}  {:>8}  {:>7}  {:>9}  {:>10}  {:>9}  {:>15}  {:>7}",
            "point",
            "slow st",
            "in ss",
            "timeouts",
            "max RTO",
            "link loss",
            "recomputed",
            "new route",
            "failed snd/rcv",
            "paths"
        );
        for x in summaries {
            let r = &x.routes;
            let _ = writeln!(
                s,
                "{:<width$}  {:>7}  {:>6}  {:>8}  {:>7}  {:>9}  {:>10.2}  {:>9}  {:>7.2}/{:<7.2}  {:>7.2}",
                x.label,
                opt(r.slow_starts, 1),
                opt(r.slow_start_share, 2),
                opt(r.timeouts, 1),
                opt(r.max_rto_s, 1),
                opt(r.link_loss_share, 2),
                r.routes_recomputed,
                opt(r.routes_new_share, 2),
                r.route_failed_at_sender,
                r.route_failed_at_receiver,
                r.path_changes
            );
        }
    }
    // Seed 003 Tables 2–4: min, median, max, mean and sd over runs (or
    // over every RTT), where the point has them.
    type Get = fn(&PointSummary) -> Option<SampleStats>;
    let extra: [(&str, f64, Get); 9] = [
        ("route discovery time (ms; one sample per run)", 1e3, |x| x.route_discovery_s),
        ("routing overhead ratio (control packets per data packet delivered; per run)", 1.0, |x| {
            x.routing_overhead_ratio
        }),
        ("echo RTT (ms; every reply of every run)", 1e3, |x| x.echo_rtt_s),
        ("feedback delay, receiver to sender (ms; per flow)", 1e3, |x| x.delays.feedback_delay_s),
        ("feedback gaps as sent: coefficient of variation (per flow)", 1.0, |x| x.delays.feedback_sent_gap_cv),
        ("feedback gaps at the sender: coefficient of variation (per flow)", 1.0, |x| x.delays.feedback_arrival_gap_cv),
        ("feedback clustered at the sender: share of arrival gaps under 1/4 of the sending gap (per flow)", 1.0, |x| {
            x.delays.feedback_clustered_share
        }),
        ("D_max at the receiver, mean over a flow's ATP data (ms; per flow)", 1e-3, |x| x.delays.d_max_mean_us),
        ("D_max at the receiver, median over a traced flow's ATP data (ms; per flow)", 1e-3, |x| {
            x.delays.d_max_median_us
        }),
    ];
    for (what, scale, get) in extra {
        if summaries.iter().any(|x| get(x).is_some()) {
            let _ = writeln!(s, "\n{what}");
            let _ = writeln!(
                s,
                "{:<width$}  {:>6}  {:>9}  {:>9}  {:>9}  {:>9}  {:>9}",
                "point", "n", "min", "median", "max", "mean", "sd"
            );
            for x in summaries {
                if let Some(m) = get(x) {
                    let _ = writeln!(
                        s,
                        "{:<width$}  {:>6}  {:>9.3}  {:>9.3}  {:>9.3}  {:>9.3}  {:>9.3}",
                        x.label,
                        m.n,
                        m.min * scale,
                        m.median * scale,
                        m.max * scale,
                        m.mean * scale,
                        m.sd * scale
                    );
                }
            }
        }
    }
    if let Some(b) = results.experiment.config.batch_means {
        let _ = writeln!(
            s,
            "\ngoodput by batch means (seed 004 §IV: {} batches of {} packets, the first {} discarded; Mb/s): \
             mean estimate ± the batches' 95% half-width, the CI across runs, aggregate, Jain, per flow; \
             flows without an estimate (short of {} packets) are counted, not averaged",
            b.batches,
            b.batch_packets,
            b.discard,
            b.packets()
        );
        let _ = writeln!(
            s,
            "{:<width$}  {:>17}  {:>9}  {:>9}  {:>6}  {:>5}  per flow",
            "point", "goodput ± batch", "runs CI", "aggregate", "Jain", "none"
        );
        let mbps = |v: Option<f64>| v.filter(|x| x.is_finite()).map_or("-".to_string(), |x| format!("{:.3}", x / 1e6));
        for x in summaries {
            let Some(m) = &x.batch_means else { continue };
            let has = m.goodput_bps.n > 0;
            let flows: Vec<String> =
                m.per_flow_mean_bps.iter().enumerate().map(|(i, g)| format!("{}: {}", i + 1, mbps(*g))).collect();
            let _ = writeln!(
                s,
                "{:<width$}  {:>8} ± {:>6}  {:>9}  {:>9}  {:>6}  {:>5}  {}",
                x.label,
                mbps(has.then_some(m.goodput_bps.mean)),
                mbps(has.then_some(m.batch_ci95_bps)),
                mbps(has.then_some(m.goodput_bps.ci95)),
                mbps(m.aggregate_bps.map(|a| a.mean)),
                m.jain_index.map_or("-".to_string(), |j| format!("{:.3}", j.mean)),
                format!("{}/{}", m.short_flows, m.flows),
                flows.join("  ")
            );
        }
    }
    // Flows with different roles (start times, paths): each flow's own mean,
    // as in seed 001 Table 5.1.
    let distinct_roles = results.points.iter().any(|p| {
        p.scenario
            .flows
            .windows(2)
            .any(|w| w[0].src != w[1].src || w[0].dst != w[1].dst || w[0].start_s != w[1].start_s)
    });
    if distinct_roles {
        let window =
            results.experiment.config.window_s.map_or(String::new(), |[a, b]| format!(", counted over [{a}, {b}] s"));
        let _ = writeln!(s, "\nper-flow mean goodput (Mb/s{window}):");
        for x in summaries {
            let flows: Vec<String> = x
                .per_flow_mean_bps
                .iter()
                .enumerate()
                .map(|(i, g)| format!("flow {}: {:.3}", i + 1, g / 1e6))
                .collect();
            let _ = writeln!(s, "{:<width$}  {}", x.label, flows.join("  "));
        }
    }
    s
}

/// An f64 in a CSV cell as Rust's `Display` writes it: the shortest
/// decimal that reads back to the same value, without an exponent and
/// without a trailing `.0` (`0`, `2.746248449`), as the CSVs have always
/// been written. (The csv crate's own float format would write `0.0` and
/// `1e16`.) A format that is not for people (Parquet's cells) gets the f64.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Decimal(f64);

impl Serialize for Decimal {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match s.is_human_readable() {
            true => s.collect_str(&self.0),
            false => s.serialize_f64(self.0),
        }
    }
}

/// The last columns of every row of `flows`, `network`, `rates` and
/// `summary`: the build that produced the row's run(s) (issue 16, like
/// SEM's commit pinning).
#[derive(Serialize, Default)]
struct ProvenanceCsv<'a> {
    meshbed_version: &'a str,
    git_revision: &'a str,
}

impl<'a> ProvenanceCsv<'a> {
    fn of(p: &'a Provenance) -> ProvenanceCsv<'a> {
        ProvenanceCsv { meshbed_version: &p.meshbed_version, git_revision: &p.git_revision }
    }
}

/// The columns of `flows.csv` before the sweep's axes.
#[derive(Serialize, Default)]
struct FlowCsvKey<'a> {
    experiment: &'a str,
    point: usize,
}

/// The columns of `flows.csv` after the sweep's axes: one flow of one run.
#[derive(Serialize, Default)]
struct FlowCsvRow<'a> {
    rep: u32,
    seed: u64,
    flow: u32,
    protocol: &'a str,
    src: u32,
    dst: u32,
    /// The flow's route length (a sweep may also have a `hops` axis, the
    /// point's parameter, which is a column of its own).
    route_hops: Option<u32>,
    start_s: Decimal,
    /// Empty for a flow that did not complete.
    end_s: Option<Decimal>,
    duration_s: Decimal,
    bytes_delivered: u64,
    goodput_bps: Decimal,
    retransmissions: u64,
    feedback_packets: u64,
    completed: bool,
    verified: bool,
    failed: bool,
    mac_drop_queue_overflow: u64,
    mac_drop_retry_limit: u64,
    mac_rx_collision_or_corruption: u64,
    mac_rx_while_busy: u64,
    mac_rx_below_sensitivity: u64,
    mac_retransmissions: u64,
    /// UDP: received / sent; empty for a transport flow.
    delivery_ratio: Option<Decimal>,
    mean_delay_s: Decimal,
    /// Routing (issue 11 §4): how often the data's path changed, the ELFN
    /// notices its ends got, the route discoveries its packets waited for.
    path_changes: u64,
    /// Route failures at the source followed by arrivals, and of those the
    /// ones over a new path (seed 002 Fig. 4(b)).
    routes_recomputed: u64,
    routes_new: u64,
    route_failed_notices: u64,
    route_reestablished_notices: u64,
    /// Of the "route failed" notices, those at the sender (the data's
    /// route) and at the receiver (the ACKs' or feedback's route; seed 002
    /// §2, Fig. 5: "the forward and reverse paths experience the same order
    /// of magnitude of failures").
    route_failed_at_sender: u64,
    route_failed_at_receiver: u64,
    route_discoveries: u64,
    route_discovery_mean_s: Option<Decimal>,
    /// The flow's packets lost in the network layer, by cause.
    drop_no_route: u64,
    drop_discovery_timeout: u64,
    drop_discovery_overflow: u64,
    drop_ttl_expired: u64,
    drop_queue_overflow: u64,
    drop_retry_limit: u64,
    /// The sender's protocol-specific counts (empty where they do not
    /// apply): TCP's slow starts, timeouts and largest RTO (seed 002 §2),
    /// TCP-ELFN's standbys, ATP's probes after route failures.
    slow_start_entries: Option<u64>,
    slow_start_time_s: Option<Decimal>,
    timeouts: Option<u64>,
    max_rto_s: Option<Decimal>,
    elfn_standbys: Option<u64>,
    route_failure_probes: Option<u64>,
    error: &'a str,
}

/// The columns of `network.csv` after the sweep's axes: the network layer
/// of one run, all nodes together (seed 003 §5.2–5.3; issue 11 §4).
#[derive(Serialize, Default)]
struct NetworkCsvRow {
    rep: u32,
    seed: u64,
    data_packets_delivered: u64,
    forwarded: u64,
    control_packets_sent: u64,
    control_bytes_sent: u64,
    /// Control packets sent per data packet delivered (empty without
    /// routing engines).
    routing_overhead_ratio: Option<Decimal>,
    link_failures: u64,
    route_changes: u64,
    routes_lost: u64,
    held_for_discovery: u64,
    route_discoveries: u64,
    route_discoveries_failed: u64,
    route_discovery_mean_s: Option<Decimal>,
    route_discovery_max_s: Decimal,
    drop_no_route: u64,
    drop_discovery_timeout: u64,
    drop_discovery_overflow: u64,
    drop_ttl_expired: u64,
    drop_queue_overflow: u64,
    drop_retry_limit: u64,
}

/// One row of `rates.csv`: the DATA frames one link sent at one rate in
/// one run (issue 13: rate selection's histogram per link).
#[derive(Serialize, Default)]
struct RateCsvRow<'a> {
    rep: u32,
    seed: u64,
    tx: u32,
    rx: u32,
    rate_control: &'a str,
    rate_kbps: u32,
    /// DATA attempts with a known outcome, and the acknowledged ones.
    attempts: u64,
    successes: u64,
}

/// One row of `traces.csv`: one sample of a traced flow.
#[derive(Serialize, Default)]
struct TraceCsvRow<'a> {
    point: usize,
    rep: u32,
    flow: u32,
    protocol: &'a str,
    t_s: Decimal,
    side: &'a str,
    kind: &'a str,
    value: Decimal,
}

/// The columns of `summary.csv` before the sweep's axes.
#[derive(Serialize, Default)]
struct SummaryCsvKey {
    point: usize,
}

/// The columns of `summary.csv` after the sweep's axes: one point.
#[derive(Serialize, Default)]
struct SummaryCsvRow {
    runs: usize,
    goodput_mean_bps: Decimal,
    goodput_sd_bps: Decimal,
    aggregate_mean_bps: Decimal,
    aggregate_sd_bps: Decimal,
    unfairness_mean: Decimal,
    unfairness_sd: Decimal,
    log_utility_mean: Decimal,
    log_utility_sd: Decimal,
    jain_mean: Decimal,
    /// Median, extremes and the 95% confidence interval's half-width
    /// (empty for one run) of the same quantities (seed 003's tables give
    /// median, min and max; issue 15).
    goodput_median_bps: Decimal,
    goodput_min_bps: Decimal,
    goodput_max_bps: Decimal,
    goodput_ci95_bps: Option<Decimal>,
    aggregate_median_bps: Decimal,
    aggregate_min_bps: Decimal,
    aggregate_max_bps: Decimal,
    aggregate_ci95_bps: Option<Decimal>,
    unfairness_median: Decimal,
    unfairness_ci95: Option<Decimal>,
    log_utility_median: Decimal,
    log_utility_ci95: Option<Decimal>,
    /// Seed 002 §2's quantities ([`RouteSummary`]; empty where none).
    tcp_slow_starts: Option<Decimal>,
    tcp_slow_start_share: Option<Decimal>,
    tcp_timeouts: Option<Decimal>,
    tcp_max_rto_s: Option<Decimal>,
    link_loss_share: Option<Decimal>,
    routes_recomputed: Decimal,
    routes_new_share: Option<Decimal>,
    route_failed_at_sender: Decimal,
    route_failed_at_receiver: Decimal,
    path_changes: Decimal,
    /// Seed 003 Tables 2–4 (empty where the point has none).
    route_discovery_min_s: Option<Decimal>,
    route_discovery_median_s: Option<Decimal>,
    route_discovery_max_s: Option<Decimal>,
    route_discovery_mean_s: Option<Decimal>,
    route_discovery_sd_s: Option<Decimal>,
    routing_overhead_ratio_mean: Option<Decimal>,
    routing_overhead_ratio_median: Option<Decimal>,
    routing_overhead_ratio_sd: Option<Decimal>,
    echo_rtt_min_s: Option<Decimal>,
    echo_rtt_median_s: Option<Decimal>,
    echo_rtt_max_s: Option<Decimal>,
    echo_rtt_mean_s: Option<Decimal>,
    echo_rtt_sd_s: Option<Decimal>,
    /// [`DelaySummary`], means over the flows (empty where none).
    feedback_delay_mean_s: Option<Decimal>,
    feedback_sent_gap_cv_mean: Option<Decimal>,
    feedback_arrival_gap_cv_mean: Option<Decimal>,
    feedback_clustered_share_mean: Option<Decimal>,
    d_max_mean_us: Option<Decimal>,
    d_max_median_us: Option<Decimal>,
    starved_flows: usize,
    flows: usize,
    incomplete_flows: usize,
    failed_flows: usize,
}

/// The columns of `summary.csv` after [`SummaryCsvRow`]'s, only with
/// `[experiment] batch_means` ([`BatchSummary`]; empty where the point has
/// no flow with an estimate).
#[derive(Serialize, Default)]
struct BatchCsvRow {
    batch_goodput_mean_bps: Option<Decimal>,
    /// The batches' 95% half-width, averaged over the flows.
    batch_goodput_ci95_bps: Option<Decimal>,
    /// The 95% half-width across the flows' estimates (over runs).
    batch_goodput_runs_ci95_bps: Option<Decimal>,
    batch_aggregate_mean_bps: Option<Decimal>,
    batch_aggregate_ci95_bps: Option<Decimal>,
    batch_jain_mean: Option<Decimal>,
    batch_flows: usize,
    batch_short_flows: usize,
}

impl BatchCsvRow {
    fn of(m: &BatchSummary) -> BatchCsvRow {
        let finite = |x: f64| x.is_finite().then_some(Decimal(x));
        let has = m.goodput_bps.n > 0;
        BatchCsvRow {
            batch_goodput_mean_bps: has.then_some(Decimal(m.goodput_bps.mean)),
            batch_goodput_ci95_bps: finite(m.batch_ci95_bps),
            batch_goodput_runs_ci95_bps: finite(m.goodput_bps.ci95),
            batch_aggregate_mean_bps: m.aggregate_bps.map(|a| Decimal(a.mean)),
            batch_aggregate_ci95_bps: m.aggregate_bps.and_then(|a| finite(a.ci95)),
            batch_jain_mean: m.jain_index.map(|j| Decimal(j.mean)),
            batch_flows: m.flows,
            batch_short_flows: m.short_flows,
        }
    }
}

/// The column names serde gives a row struct, in order. (The csv crate
/// writes them only as the header of a first row: one default row is
/// written to memory and its header kept. Field names never need quoting.)
fn csv_columns<T: Serialize + Default>() -> Vec<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.serialize(T::default()).expect("a row struct of plain named fields serialises");
    let text = String::from_utf8(w.into_inner().expect("writing to memory")).expect("field names are UTF-8");
    text.lines().next().unwrap_or_default().split(',').map(String::from).collect()
}

/// A table (CSV, and Parquet beside it) whose header is `K`'s columns, then
/// the sweep's axes, then `R`'s columns, then the provenance's;
/// [`write_row`] writes one row in the same order.
fn csv_with_axes<K: Serialize + Default, R: Serialize + Default>(
    path: &std::path::Path,
    axes: &[&str],
) -> csv::Result<TableWriter> {
    csv_with_axes_and::<K, R>(path, axes, Vec::new())
}

/// [`csv_with_axes`] with `more` columns between `R`'s and the provenance's.
fn csv_with_axes_and<K: Serialize + Default, R: Serialize + Default>(
    path: &std::path::Path,
    axes: &[&str],
    more: Vec<String>,
) -> csv::Result<TableWriter> {
    let mut header = csv_columns::<K>();
    let first_axis = header.len();
    header.extend(axes.iter().map(|a| a.to_string()));
    header.extend(csv_columns::<R>());
    header.extend(more);
    header.extend(csv_columns::<ProvenanceCsv>());
    TableWriter::create(path, header, first_axis..first_axis + axes.len())
}

fn write_row<K: Serialize, R: Serialize>(
    w: &mut TableWriter,
    key: K,
    axis_values: &[String],
    row: R,
    provenance: &Provenance,
) -> csv::Result<()> {
    w.serialize((key, axis_values, row, ProvenanceCsv::of(provenance)))
}

/// The builds that produced a point's runs: each of the versions and of
/// the git revisions once, in order, joined by `+` (more than one only when
/// runs of the same model revision came from the store).
fn point_provenance(results: &Results, point: usize) -> Provenance {
    let mut versions: Vec<&str> = Vec::new();
    let mut revisions: Vec<&str> = Vec::new();
    for r in results.runs.iter().filter(|r| r.point == point) {
        if !versions.contains(&r.provenance.meshbed_version.as_str()) {
            versions.push(&r.provenance.meshbed_version);
        }
        if !revisions.contains(&r.provenance.git_revision.as_str()) {
            revisions.push(&r.provenance.git_revision);
        }
    }
    versions.sort_unstable();
    revisions.sort_unstable();
    Provenance { meshbed_version: versions.join("+"), git_revision: revisions.join("+") }
}

/// The point's values on the given axes, as CSV text.
fn axis_values(p: &Point, axes: &[&str]) -> Vec<String> {
    p.values.iter().filter(|(k, _)| axes.contains(&k.as_str())).map(|(_, v)| value_text(v)).collect()
}

/// Writes `flows.csv` (one row per flow per run), `network.csv` (one row
/// per run: the network layer's totals), `traces.csv` (per-packet
/// samples of the traced flows of each point's first repetition) and
/// `summary.csv` into `dir`, each with a `.parquet` twin beside it.
pub fn write_csv(
    results: &Results,
    summaries: &[PointSummary],
    dir: &std::path::Path,
) -> csv::Result<Vec<std::path::PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let axes: Vec<&str> = results.experiment.config.sweep.iter().map(|a| a.key.as_str()).collect();
    // A `protocol` axis sets every flow's protocol, which the per-flow
    // `protocol` column already gives: flows.csv names it once.
    let flow_axes: Vec<&str> = axes.iter().copied().filter(|a| *a != "protocol").collect();
    let flows_path = dir.join("flows.csv");
    let mut w = csv_with_axes::<FlowCsvKey, FlowCsvRow>(&flows_path, &flow_axes)?;
    let name = &results.experiment.config.name;
    for r in &results.runs {
        let p = &results.points[r.point];
        let m = &r.report.mac_total;
        let values = axis_values(p, &flow_axes);
        for f in &r.report.flows {
            let tcp = f.sender.as_ref().and_then(|d| d.tcp.as_ref());
            let failed_at = |side: RouteLogSide| {
                f.route_log.iter().filter(|e| e.side == side && e.event == RouteLogEvent::RouteFailed).count() as u64
            };
            let row = FlowCsvRow {
                rep: r.rep,
                seed: r.seed,
                flow: f.flow,
                protocol: f.protocol_name(),
                src: f.src,
                dst: f.dst,
                route_hops: f.hops,
                start_s: Decimal(f.start_s),
                end_s: f.completion_time_s.map(Decimal),
                duration_s: Decimal(f.duration_s),
                bytes_delivered: f.bytes_delivered.max(f.received_payload_bytes),
                goodput_bps: Decimal(flow_goodput_bps(results, f)),
                retransmissions: f.retransmissions,
                feedback_packets: f.feedback_packets,
                completed: f.completed,
                verified: f.verified,
                failed: f.failed,
                mac_drop_queue_overflow: m.drop_queue_overflow,
                mac_drop_retry_limit: m.drop_retry_limit,
                mac_rx_collision_or_corruption: m.rx_collision_or_corruption,
                mac_rx_while_busy: m.rx_while_busy,
                mac_rx_below_sensitivity: m.rx_below_sensitivity,
                mac_retransmissions: m.retransmissions,
                delivery_ratio: f.delivery_ratio.map(Decimal),
                mean_delay_s: Decimal(f.mean_delay_s),
                path_changes: f.path_changes,
                routes_recomputed: f.routes_recomputed,
                routes_new: f.routes_new,
                route_failed_notices: f.route_failed_notices,
                route_reestablished_notices: f.route_reestablished_notices,
                route_failed_at_sender: failed_at(RouteLogSide::Sender),
                route_failed_at_receiver: failed_at(RouteLogSide::Receiver),
                route_discoveries: f.net.discoveries.completed,
                route_discovery_mean_s: f.net.discoveries.mean_s().map(Decimal),
                drop_no_route: f.net.drops.no_route,
                drop_discovery_timeout: f.net.drops.discovery_timeout,
                drop_discovery_overflow: f.net.drops.discovery_overflow,
                drop_ttl_expired: f.net.drops.ttl_expired,
                drop_queue_overflow: f.net.drops.queue_overflow,
                drop_retry_limit: f.net.drops.retry_limit,
                slow_start_entries: tcp.map(|t| t.slow_start_entries),
                slow_start_time_s: tcp.map(|t| Decimal(t.slow_start_time_s)),
                timeouts: tcp.map(|t| t.timeouts),
                max_rto_s: tcp.map(|t| Decimal(t.max_rto_s)),
                elfn_standbys: tcp.map(|t| t.elfn_standbys),
                route_failure_probes: f.sender.as_ref().and_then(|d| d.route_failure_probes),
                error: f.error.as_deref().unwrap_or_default(),
            };
            write_row(&mut w, FlowCsvKey { experiment: name, point: p.index }, &values, row, &r.provenance)?;
        }
    }
    let mut written = w.finish()?;

    let network_path = dir.join("network.csv");
    let mut w = csv_with_axes::<FlowCsvKey, NetworkCsvRow>(&network_path, &axes)?;
    for r in &results.runs {
        let p = &results.points[r.point];
        let n = &r.report.net_total;
        let row = NetworkCsvRow {
            rep: r.rep,
            seed: r.seed,
            data_packets_delivered: r.report.flows.iter().map(|f| f.received_packets).sum(),
            forwarded: n.forwarded,
            control_packets_sent: n.control_packets_sent,
            control_bytes_sent: n.control_bytes_sent,
            routing_overhead_ratio: r.report.routing_overhead_ratio.map(Decimal),
            link_failures: n.link_failures,
            route_changes: n.route_changes,
            routes_lost: n.routes_lost,
            held_for_discovery: n.held,
            route_discoveries: n.discoveries.completed,
            route_discoveries_failed: n.discoveries.failed,
            route_discovery_mean_s: n.discoveries.mean_s().map(Decimal),
            route_discovery_max_s: Decimal(n.discoveries.max_ns as f64 / 1e9),
            drop_no_route: n.drops.no_route,
            drop_discovery_timeout: n.drops.discovery_timeout,
            drop_discovery_overflow: n.drops.discovery_overflow,
            drop_ttl_expired: n.drops.ttl_expired,
            drop_queue_overflow: n.drops.queue_overflow,
            drop_retry_limit: n.drops.retry_limit,
        };
        write_row(&mut w, FlowCsvKey { experiment: name, point: p.index }, &axis_values(p, &axes), row, &r.provenance)?;
    }
    written.extend(w.finish()?);

    // Rate selection's histogram, per link per rate, where a node ran it.
    if results.runs.iter().any(|r| !r.report.rate_histogram.is_empty()) {
        let path = dir.join("rates.csv");
        let mut w = csv_with_axes::<FlowCsvKey, RateCsvRow>(&path, &axes)?;
        for r in &results.runs {
            let p = &results.points[r.point];
            let values = axis_values(p, &axes);
            for link in &r.report.rate_histogram {
                for c in &link.rates {
                    let row = RateCsvRow {
                        rep: r.rep,
                        seed: r.seed,
                        tx: link.tx,
                        rx: link.rx,
                        rate_control: link.rate_control.name(),
                        rate_kbps: c.rate_kbps,
                        attempts: c.attempts,
                        successes: c.successes,
                    };
                    write_row(&mut w, FlowCsvKey { experiment: name, point: p.index }, &values, row, &r.provenance)?;
                }
            }
        }
        written.extend(w.finish()?);
    }

    // Per-packet traces of the first repetition of each point only: every
    // repetition's would make the file hundreds of megabytes.
    if results.runs.iter().any(|r| r.rep == 0 && r.report.flows.iter().any(|f| !f.trace.is_empty())) {
        let path = dir.join("traces.csv");
        let mut w = TableWriter::create(&path, csv_columns::<TraceCsvRow>(), 0..0)?;
        for r in results.runs.iter().filter(|r| r.rep == 0) {
            for f in &r.report.flows {
                for t in &f.trace {
                    w.serialize(TraceCsvRow {
                        point: r.point,
                        rep: r.rep,
                        flow: f.flow,
                        protocol: f.protocol_name(),
                        t_s: Decimal(t.t_s),
                        side: t.side.name(),
                        kind: t.kind.name(),
                        value: Decimal(t.value),
                    })?;
                }
            }
        }
        written.extend(w.finish()?);
    }

    let path = dir.join("summary.csv");
    let ci = |m: &SampleStats| m.ci95.is_finite().then_some(Decimal(m.ci95));
    // Batch-means columns only when the experiment asks for them, so that
    // other experiments' summary.csv keeps its columns.
    let batch_columns = match results.experiment.config.batch_means {
        Some(_) => csv_columns::<BatchCsvRow>(),
        None => Vec::new(),
    };
    let mut w = csv_with_axes_and::<SummaryCsvKey, SummaryCsvRow>(&path, &axes, batch_columns)?;
    for x in summaries {
        let row = SummaryCsvRow {
            runs: x.runs,
            goodput_mean_bps: Decimal(x.flow_goodput_bps.mean),
            goodput_sd_bps: Decimal(x.flow_goodput_bps.sd),
            aggregate_mean_bps: Decimal(x.aggregate_goodput_bps.mean),
            aggregate_sd_bps: Decimal(x.aggregate_goodput_bps.sd),
            unfairness_mean: Decimal(x.unfairness.mean),
            unfairness_sd: Decimal(x.unfairness.sd),
            log_utility_mean: Decimal(x.log_utility.mean),
            log_utility_sd: Decimal(x.log_utility.sd),
            jain_mean: Decimal(x.jain_index.mean),
            goodput_median_bps: Decimal(x.flow_goodput_bps.median),
            goodput_min_bps: Decimal(x.flow_goodput_bps.min),
            goodput_max_bps: Decimal(x.flow_goodput_bps.max),
            goodput_ci95_bps: ci(&x.flow_goodput_bps),
            aggregate_median_bps: Decimal(x.aggregate_goodput_bps.median),
            aggregate_min_bps: Decimal(x.aggregate_goodput_bps.min),
            aggregate_max_bps: Decimal(x.aggregate_goodput_bps.max),
            aggregate_ci95_bps: ci(&x.aggregate_goodput_bps),
            unfairness_median: Decimal(x.unfairness.median),
            unfairness_ci95: ci(&x.unfairness),
            log_utility_median: Decimal(x.log_utility.median),
            log_utility_ci95: ci(&x.log_utility),
            tcp_slow_starts: x.routes.slow_starts.map(Decimal),
            tcp_slow_start_share: x.routes.slow_start_share.map(Decimal),
            tcp_timeouts: x.routes.timeouts.map(Decimal),
            tcp_max_rto_s: x.routes.max_rto_s.map(Decimal),
            link_loss_share: x.routes.link_loss_share.map(Decimal),
            routes_recomputed: Decimal(x.routes.routes_recomputed),
            routes_new_share: x.routes.routes_new_share.map(Decimal),
            route_failed_at_sender: Decimal(x.routes.route_failed_at_sender),
            route_failed_at_receiver: Decimal(x.routes.route_failed_at_receiver),
            path_changes: Decimal(x.routes.path_changes),
            route_discovery_min_s: x.route_discovery_s.map(|m| Decimal(m.min)),
            route_discovery_median_s: x.route_discovery_s.map(|m| Decimal(m.median)),
            route_discovery_max_s: x.route_discovery_s.map(|m| Decimal(m.max)),
            route_discovery_mean_s: x.route_discovery_s.map(|m| Decimal(m.mean)),
            route_discovery_sd_s: x.route_discovery_s.map(|m| Decimal(m.sd)),
            routing_overhead_ratio_mean: x.routing_overhead_ratio.map(|m| Decimal(m.mean)),
            routing_overhead_ratio_median: x.routing_overhead_ratio.map(|m| Decimal(m.median)),
            routing_overhead_ratio_sd: x.routing_overhead_ratio.map(|m| Decimal(m.sd)),
            echo_rtt_min_s: x.echo_rtt_s.map(|m| Decimal(m.min)),
            echo_rtt_median_s: x.echo_rtt_s.map(|m| Decimal(m.median)),
            echo_rtt_max_s: x.echo_rtt_s.map(|m| Decimal(m.max)),
            echo_rtt_mean_s: x.echo_rtt_s.map(|m| Decimal(m.mean)),
            echo_rtt_sd_s: x.echo_rtt_s.map(|m| Decimal(m.sd)),
            feedback_delay_mean_s: x.delays.feedback_delay_s.map(|m| Decimal(m.mean)),
            feedback_sent_gap_cv_mean: x.delays.feedback_sent_gap_cv.map(|m| Decimal(m.mean)),
            feedback_arrival_gap_cv_mean: x.delays.feedback_arrival_gap_cv.map(|m| Decimal(m.mean)),
            feedback_clustered_share_mean: x.delays.feedback_clustered_share.map(|m| Decimal(m.mean)),
            // The mean of the flows' means, and the median of their medians.
            d_max_mean_us: x.delays.d_max_mean_us.map(|m| Decimal(m.mean)),
            d_max_median_us: x.delays.d_max_median_us.map(|m| Decimal(m.median)),
            starved_flows: x.starved_flows,
            flows: x.flows,
            incomplete_flows: x.incomplete_flows,
            failed_flows: x.failed_flows,
        };
        let key = SummaryCsvKey { point: x.point };
        let values = axis_values(&results.points[x.point], &axes);
        let provenance = point_provenance(results, x.point);
        match &x.batch_means {
            Some(m) => w.serialize((key, &values, row, BatchCsvRow::of(m), ProvenanceCsv::of(&provenance)))?,
            None => write_row(&mut w, key, &values, row, &provenance)?,
        }
    }
    written.extend(w.finish()?);
    Ok(written)
}

/// `flows.csv` of `results` as text (header, then one row per flow per
/// run, in the order of `results.runs`): the per-run rows that the Python
/// package fans out over threads or a Ray cluster, byte for byte what
/// [`write_csv`] writes. It goes through [`write_csv`] in a scratch
/// directory so that the columns and their formatting have one home.
/// `results.points` must hold every point a run names (rows carry the
/// point's index and axis values).
pub fn flows_csv_text(results: &Results) -> std::io::Result<String> {
    static SCRATCH: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "meshbed-flows-{}-{}",
        std::process::id(),
        SCRATCH.fetch_add(1, Ordering::Relaxed)
    ));
    // No summaries: summary.csv keeps only its header; flows.csv is read back.
    let text = write_csv(results, &[], &dir)
        .map_err(std::io::Error::other)
        .and_then(|_| std::fs::read_to_string(dir.join("flows.csv")))
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", dir.join("flows.csv").display())));
    let _ = std::fs::remove_dir_all(&dir);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_columns_come_from_the_row_structs_in_order() {
        assert_eq!(csv_columns::<FlowCsvKey>(), ["experiment", "point"]);
        let flow = csv_columns::<FlowCsvRow>();
        assert_eq!(flow[..4], ["rep", "seed", "flow", "protocol"]);
        assert_eq!(flow.last().map(String::as_str), Some("error"));
        assert_eq!(flow.len(), 47);
        assert!(flow.contains(&"route_discovery_mean_s".to_string()) && flow.contains(&"drop_retry_limit".to_string()));
        let network = csv_columns::<NetworkCsvRow>();
        assert_eq!(network[..3], ["rep", "seed", "data_packets_delivered"]);
        assert!(network.contains(&"routing_overhead_ratio".to_string()));
        assert_eq!(csv_columns::<TraceCsvRow>(), ["point", "rep", "flow", "protocol", "t_s", "side", "kind", "value"]);
        let summary = csv_columns::<SummaryCsvRow>();
        assert_eq!(summary[..3], ["runs", "goodput_mean_bps", "goodput_sd_bps"]);
        assert_eq!(summary.last().map(String::as_str), Some("failed_flows"));
    }

    #[test]
    fn csv_rows_follow_the_header_with_the_axes_between() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.csv");
        let mut w = csv_with_axes::<SummaryCsvKey, SummaryCsvRow>(&path, &["hops", "protocol"]).unwrap();
        let row = SummaryCsvRow {
            runs: 3,
            goodput_mean_bps: Decimal(1e16),
            unfairness_sd: Decimal(0.25),
            ..Default::default()
        };
        let provenance = Provenance::this_build();
        write_row(&mut w, SummaryCsvKey { point: 7 }, &["2".to_string(), "tcp-reno".to_string()], row, &provenance)
            .unwrap();
        drop(w);
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        assert_eq!(header[..4], ["point", "hops", "protocol", "runs"]);
        let row: Vec<&str> = lines.next().unwrap().split(',').collect();
        assert_eq!(row.len(), header.len());
        // Floats as `Display` writes them: no exponent, no trailing `.0`.
        assert_eq!(row[..6], ["7", "2", "tcp-reno", "3", "10000000000000000", "0"]);
        assert_eq!(row[header.iter().position(|h| *h == "unfairness_sd").unwrap()], "0.25");
    }

    #[test]
    fn an_absent_value_is_an_empty_cell() {
        let mut w = csv::WriterBuilder::new().has_headers(false).from_writer(Vec::new());
        w.serialize(FlowCsvRow { route_hops: None, end_s: None, start_s: Decimal(0.5), ..Default::default() }).unwrap();
        let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
        let cells: Vec<&str> = text.trim_end().split(',').collect();
        let columns = csv_columns::<FlowCsvRow>();
        let cell = |name: &str| cells[columns.iter().position(|c| c == name).unwrap()];
        assert_eq!((cell("route_hops"), cell("start_s"), cell("end_s"), cell("completed")), ("", "0.5", "", "false"));
    }

    /// A runner's check refuses before anything runs; its parallelism
    /// caps the worker threads.
    #[test]
    fn the_runner_decides_what_runs_and_how_many_at_once() {
        #[derive(Debug, Default)]
        struct Counting {
            runs: AtomicUsize,
            at_once: AtomicUsize,
            most_at_once: AtomicUsize,
            refuse: bool,
        }
        impl Runner for Counting {
            fn max_parallel(&self) -> Option<usize> {
                Some(1)
            }
            fn supports(&self, _scenario: &Scenario) -> Result<(), Refusal> {
                let mut r = Refusal::new("the counting backend");
                if self.refuse {
                    r.add("topology.nodes", "3", "it counts only");
                }
                r.into_result()
            }
            fn run(&self, scenario: &Scenario) -> Result<SimReport, RunError> {
                let now = self.at_once.fetch_add(1, Ordering::SeqCst) + 1;
                self.most_at_once.fetch_max(now, Ordering::SeqCst);
                self.runs.fetch_add(1, Ordering::SeqCst);
                let r = SimRunner.run(scenario);
                self.at_once.fetch_sub(1, Ordering::SeqCst);
                r
            }
        }
        let text = "duration_s = 0.5\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200.0\n\
            [[flows]]\nsrc = 0\ndst = 2\n\
            [experiment]\nname = \"t\"\nrepetitions = 3\n";
        let e = Experiment::from_toml(text, "e.toml").unwrap();
        let refusing = Arc::new(Counting { refuse: true, ..Counting::default() });
        let options = RunOptions { runner: refusing.clone(), jobs: 4, ..RunOptions::default() };
        assert_eq!(
            run(&e, &options).unwrap_err().to_string(),
            "e.toml: the counting backend cannot run topology.nodes = 3 (it counts only); nothing was started"
        );
        assert_eq!(refusing.runs.load(Ordering::SeqCst), 0, "nothing ran");

        let counting = Arc::new(Counting::default());
        let options = RunOptions { runner: counting.clone(), jobs: 4, ..RunOptions::default() };
        let results = run(&e, &options).unwrap();
        assert_eq!(results.runs.len(), 3);
        assert_eq!(counting.runs.load(Ordering::SeqCst), 3);
        assert_eq!(counting.most_at_once.load(Ordering::SeqCst), 1);
        assert!(results.runs.iter().all(|r| r.report.flows[0].bytes_delivered > 0));
    }

    /// The summary's median, extremes and confidence interval are computed
    /// over the runs and reach summary.csv: a runner whose flow reports
    /// 1, 2, 3, 4 kbit/s for seeds 1–4.
    #[test]
    fn summaries_give_median_extremes_and_confidence_interval() {
        #[derive(Debug)]
        struct BySeed;
        impl Runner for BySeed {
            fn supports(&self, scenario: &Scenario) -> Result<(), Refusal> {
                SimRunner.supports(scenario)
            }
            fn run(&self, scenario: &Scenario) -> Result<SimReport, RunError> {
                let mut r = SimRunner.run(scenario)?;
                r.flows[0].goodput_bps = scenario.seed as f64 * 1000.0;
                Ok(r)
            }
        }
        let text = "duration_s = 0.2\n[topology]\nkind = \"chain\"\nnodes = 2\nspacing_m = 100.0\n\
            [[flows]]\nsrc = 0\ndst = 1\n[experiment]\nname = \"t\"\nrepetitions = 4\n";
        let e = Experiment::from_toml(text, "e.toml").unwrap();
        let results = run(&e, &RunOptions { runner: Arc::new(BySeed), ..RunOptions::default() }).unwrap();
        let s = &summarize(&results)[0].flow_goodput_bps;
        assert_eq!((s.n, s.min, s.median, s.max, s.mean), (4, 1000.0, 2500.0, 4000.0, 2500.0));
        // sd = √(5/3)·1000; t(0.975, 3) = 3.1824: half-width 3.1824·sd/2.
        let sd = (5.0f64 / 3.0).sqrt() * 1000.0;
        assert!((s.ci95 - 3.1824 * sd / 2.0).abs() < 0.5, "{}", s.ci95);
        let dir = tempfile::tempdir().unwrap();
        write_csv(&results, &summarize(&results), dir.path()).unwrap();
        let mut summary = csv::Reader::from_path(dir.path().join("summary.csv")).unwrap();
        let header = summary.headers().unwrap().clone();
        let row = summary.records().next().unwrap().unwrap();
        let cell = |name: &str| row[header.iter().position(|h| h == name).unwrap()].parse::<f64>().unwrap();
        assert_eq!(cell("goodput_median_bps"), 2500.0);
        assert_eq!((cell("goodput_min_bps"), cell("goodput_max_bps")), (1000.0, 4000.0));
        assert!((cell("goodput_ci95_bps") - s.ci95).abs() < 1e-6);
    }

    /// Seed 003's tables: route discovery time and overhead ratio per run,
    /// echo RTTs pooled over runs, in the summary and its CSV.
    #[test]
    fn discovery_overhead_and_echo_rtt_are_summarised_over_runs() {
        let text = "duration_s = 6.0\n[topology]\nkind = \"chain\"\nnodes = 4\nspacing_m = 200.0\n\
            [routing]\nkind = \"aodv\"\n\
            [[flows]]\nsrc = 0\ndst = 3\ntraffic = \"echo\"\npacket_bytes = 92\nstart_s = 3.0\n\
            [experiment]\nname = \"t\"\nrepetitions = 3\n";
        let e = Experiment::from_toml(text, "e.toml").unwrap();
        let results = run(&e, &RunOptions::default()).unwrap();
        let x = &summarize(&results)[0];
        // Three hops: every run discovers its route once.
        let d = x.route_discovery_s.expect("discoveries");
        assert_eq!(d.n, 3);
        assert!(d.min > 0.0 && d.max < 1.0, "{d:?}");
        assert_eq!(x.routing_overhead_ratio.map(|o| o.n), Some(3));
        let samples: usize =
            results.runs.iter().map(|r| r.report.flows[0].echo.as_ref().unwrap().rtt_samples_s.len()).sum();
        let rtt = x.echo_rtt_s.expect("replies");
        assert_eq!(rtt.n, samples);
        assert!(rtt.n > 100 && rtt.min <= rtt.median && rtt.median <= rtt.max, "{rtt:?}");
        let table = summary_table(&results, &summarize(&results));
        assert!(table.contains("route discovery time") && table.contains("echo RTT"), "{table}");
        let dir = tempfile::tempdir().unwrap();
        write_csv(&results, &summarize(&results), dir.path()).unwrap();
        let mut summary = csv::Reader::from_path(dir.path().join("summary.csv")).unwrap();
        let header = summary.headers().unwrap().clone();
        let row = summary.records().next().unwrap().unwrap();
        let cell = |name: &str| row[header.iter().position(|h| h == name).unwrap()].parse::<f64>().unwrap();
        assert_eq!(cell("echo_rtt_median_s"), rtt.median);
        assert_eq!(cell("route_discovery_max_s"), d.max);
    }

    /// Seed 002 §2's per-point quantities, against hand-computed numbers
    /// for two TCP flows and one UDP flow.
    #[test]
    fn route_summary_averages_tcp_flows_and_pools_ratios() {
        use meshbed_sim::report::{RouteLogEntry, SenderDetail, TcpDetail};
        use meshbed_sim::scenario::FlowSpec;
        let spec = FlowSpec { src: 0, dst: 1, ..FlowSpec::default() };
        let failed = |side| RouteLogEntry { t_s: 1.0, side, event: RouteLogEvent::RouteFailed };
        let tcp = |ss: u64, ss_s: f64, rto: f64| {
            let mut f = FlowResult::blank(0, &spec, None, 100.0);
            let tcp =
                TcpDetail { slow_start_entries: ss, slow_start_time_s: ss_s, max_rto_s: rto, ..Default::default() };
            f.sender = Some(SenderDetail { tcp: Some(tcp), ..Default::default() });
            f
        };
        let mut a = tcp(2, 50.0, 4.0);
        a.net.drops.retry_limit = 3;
        a.net.drops.queue_overflow = 1;
        a.routes_recomputed = 3;
        a.routes_new = 1;
        a.route_log = vec![failed(RouteLogSide::Sender), failed(RouteLogSide::Sender), failed(RouteLogSide::Receiver)];
        let mut b = tcp(4, 10.0, 8.0);
        b.net.drops.no_route = 4;
        b.routes_recomputed = 1;
        b.routes_new = 1;
        b.path_changes = 6;
        let udp = FlowResult::blank(2, &spec, None, 100.0);
        let r = RouteSummary::of([&a, &b, &udp].into_iter());
        assert_eq!(r.tcp_flows, 2);
        assert_eq!((r.slow_starts, r.slow_start_share, r.max_rto_s), (Some(3.0), Some(0.3), Some(6.0)));
        // Pooled: 3 link drops of 8; 2 new of 4 recomputed.
        assert_eq!((r.link_loss_share, r.routes_new_share), (Some(0.375), Some(0.5)));
        // Per flow over all three flows.
        assert_eq!((r.route_failed_at_sender, r.route_failed_at_receiver), (2.0 / 3.0, 1.0 / 3.0));
        assert_eq!((r.routes_recomputed, r.path_changes), (4.0 / 3.0, 2.0));
        // No TCP flow, no loss, nothing recomputed: nothing to say.
        let none = RouteSummary::of([&udp].into_iter());
        assert_eq!((none.slow_starts, none.link_loss_share, none.routes_new_share), (None, None, None));
    }

    /// Routing metrics reach the CSVs: a `protocol`-free sweep over AODV
    /// and DSR with random CBR pairs, two repetitions (other seeds, other
    /// pairs; the same pairs for both protocols under one seed).
    #[test]
    fn routing_metrics_and_random_pairs_reach_the_csvs() {
        let text = "duration_s = 30.0\n[topology]\nkind = \"random\"\nnodes = 20\nwidth_m = 600.0\nheight_m = 300.0\n\
            [routing]\nkind = \"aodv\"\n\
            [random_flows]\ncount = 4\nstart_window_s = [1.0, 3.0]\n[random_flows.flow]\ntraffic = \"cbr\"\nrate_kbps = 2.048\npacket_bytes = 64\n\
            [experiment]\nname = \"t\"\nrepetitions = 2\n\
            [[experiment.sweep]]\nkey = \"routing.kind\"\nvalues = [\"aodv\", \"dsr\"]\n";
        let e = Experiment::from_toml(text, "e.toml").unwrap();
        let results = run(&e, &RunOptions::default()).unwrap();
        let summaries = summarize(&results);
        assert!(summaries.iter().all(|x| x.flows == 8 && x.per_flow_mean_bps.len() == 4));
        let dir = tempfile::tempdir().unwrap();
        write_csv(&results, &summaries, dir.path()).unwrap();
        let mut flows = csv::Reader::from_path(dir.path().join("flows.csv")).unwrap();
        let header = flows.headers().unwrap().clone();
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        let rows: Vec<csv::StringRecord> = flows.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), 16);
        let pair =
            |r: &csv::StringRecord| (r[col("rep")].to_string(), r[col("src")].to_string(), r[col("dst")].to_string());
        let (aodv, dsr): (Vec<_>, Vec<_>) = rows.iter().partition(|r| &r[col("routing.kind")] == "aodv");
        assert_eq!(aodv.iter().map(|r| pair(r)).collect::<Vec<_>>(), dsr.iter().map(|r| pair(r)).collect::<Vec<_>>());
        assert_ne!(
            aodv.iter().filter(|r| &r[col("rep")] == "0").map(|r| pair(r).1).collect::<Vec<_>>(),
            aodv.iter().filter(|r| &r[col("rep")] == "1").map(|r| pair(r).1).collect::<Vec<_>>()
        );
        for r in &rows {
            let ratio: f64 = r[col("delivery_ratio")].parse().unwrap();
            assert!(ratio > 0.5 && ratio <= 1.0, "{r:?}");
        }
        // A flow to a neighbour needs no discovery (AODV's HELLOs, DSR's
        // one-hop request): some flows wait for one, and its time is given.
        let discovered =
            rows.iter().filter(|r| r[col("route_discoveries")].parse::<u64>().unwrap() >= 1).collect::<Vec<_>>();
        assert!(discovered.len() >= 4, "{} of 16 flows waited for a discovery", discovered.len());
        assert!(discovered.iter().all(|r| r[col("route_discovery_mean_s")].parse::<f64>().unwrap() > 0.0));
        let mut network = csv::Reader::from_path(dir.path().join("network.csv")).unwrap();
        let header = network.headers().unwrap().clone();
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        let rows: Vec<csv::StringRecord> = network.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), 4);
        for r in &rows {
            assert!(r[col("control_packets_sent")].parse::<u64>().unwrap() > 0, "{r:?}");
            assert!(r[col("routing_overhead_ratio")].parse::<f64>().unwrap() > 0.0, "{r:?}");
        }
    }
}
