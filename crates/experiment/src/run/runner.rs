//! The job loop: every point × repetition of an experiment, on a pool of
//! threads, through a [`Runner`] and the result store.

use crate::spec::{Experiment, ExperimentError, Point};
use crate::store::{Lookup, Provenance, Store, StoreTally};
use indicatif::{ProgressBar, ProgressStyle};
use meshbed_sim::backend::{Refusal, ScenarioBackend, Simulator};
use meshbed_sim::{Scenario, ScenarioError, SimReport};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// One simulation of one point (serialisable: the Python module hands it
/// from the process that ran it to the one that gathers the sweep).
#[derive(Clone, Debug, Serialize, Deserialize)]
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

/// An experiment ready to run: its points (every one checked, the runner
/// asked about each, every repetition's seed checked for routes), the
/// repetitions, and the worker threads.
#[derive(Clone, Debug)]
pub struct Planned {
    pub points: Vec<Point>,
    pub reps: u32,
    pub threads: usize,
}

/// Checks an experiment before anything runs: the size bounds of
/// [`Experiment::plan`], the runner's [`Runner::supports`] for every point
/// and the routes under every repetition's seed. [`run`] and the Python
/// module's sweeps both start here.
pub fn plan(experiment: &Experiment, options: &RunOptions) -> Result<Planned, ExperimentError> {
    let file = &experiment.file;
    let reps = options.repetitions.unwrap_or(experiment.config.repetitions).max(1);
    let threads = match options.jobs {
        0 => std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        n => n,
    };
    let threads = options.runner.max_parallel().map_or(threads, |m| threads.min(m.max(1)));
    let points = experiment.plan(file, reps, threads, options.force)?.points;
    refuse_unsupported(file, &points, &*options.runner)?;
    check_routes_for_every_seed(file, &points, reps)?;
    Ok(Planned { points, reps, threads })
}

/// Repetition `rep` of point `point`: the scenario it runs, with its seed.
#[derive(Clone, Debug)]
pub struct Job {
    pub point: usize,
    pub rep: u32,
    pub seed: u64,
    pub scenario: Scenario,
}

impl Job {
    /// Repetition `rep` of `point`. Common random numbers: repetition r of
    /// every point uses the same seed, the point's seed + r.
    pub fn new(point: &Point, rep: u32) -> Job {
        let mut scenario = point.scenario.clone();
        scenario.seed = scenario.seed.wrapping_add(u64::from(rep));
        Job { point: point.index, rep, seed: scenario.seed, scenario }
    }
}

/// Every job of `points` × `reps`, ordered by (point, repetition): job i is
/// repetition i % reps of point i / reps.
pub fn jobs(points: &[Point], reps: u32) -> impl Iterator<Item = Job> + '_ {
    points.iter().flat_map(move |p| (0..reps).map(move |rep| Job::new(p, rep)))
}

/// Runs one job: reuses its run from `store` if kept there (and the runner
/// has a [`Runner::store_name`]), else runs it with `runner` and keeps it at
/// once, so that a sweep killed later resumes after it. Returns the run and
/// what the store did for it. The one place a job runs: [`run`]'s threads
/// and the Python module's sweeps (threads or Ray tasks) call it.
pub fn run_job(
    file: &str,
    point: &Point,
    job: Job,
    runner: &dyn Runner,
    store: Option<&Store>,
) -> Result<(RunOutcome, StoreTally), ExperimentError> {
    let Job { point: p, rep, seed, scenario } = job;
    let store = store.zip(runner.store_name());
    let mut tally =
        StoreTally { dir: store.map(|(s, _)| s.dir().to_path_buf()).unwrap_or_default(), ..StoreTally::default() };
    let key = store.map(|(store, runner)| store.key(runner, &scenario));
    // Held until the run is kept: another process on the same store waits
    // for it, then finds the run kept (`Store::claim`).
    let mut _claim = None;
    if let (Some((store, _)), Some(key)) = (store, &key) {
        // Looked up before the claim (the usual hit costs no lock) and
        // again after it (another process may have kept it meanwhile).
        for claimed in [false, true] {
            match store.load(key) {
                Lookup::Hit(report, provenance) => {
                    tally.reused += 1;
                    tally.reused_from_other_revisions +=
                        usize::from(provenance.git_revision != crate::store::GIT_REVISION);
                    return Ok((RunOutcome { point: p, rep, seed, report: *report, provenance }, tally));
                }
                Lookup::Missing => {}
                Lookup::Stale(why) if !claimed => tally.stale.push(why),
                Lookup::Corrupt(why) if !claimed => tally.corrupt.push(why),
                Lookup::Stale(_) | Lookup::Corrupt(_) => {}
            }
            if !claimed {
                // A claim that cannot be taken only costs the sharing.
                match store.claim(key) {
                    Ok(file) => _claim = Some(file),
                    Err(e) => {
                        tally.unsaved.push(e.to_string());
                        break;
                    }
                }
            }
        }
    }
    let report = runner.run(&scenario).map_err(|e| match e {
        RunError::Scenario(error) => ExperimentError::Point {
            file: file.into(),
            point: format!("{} (repetition {rep}, seed {seed})", point.label()),
            error: Box::new(error),
        },
        RunError::Backend(why) => ExperimentError::Backend(why),
    })?;
    if let (Some((store, _)), Some(key)) = (store, &key) {
        // A run that cannot be kept is still a result: said, never fatal.
        if let Err(e) = store.save(key, &report) {
            tally.unsaved.push(e.to_string());
        }
    }
    tally.executed += 1;
    Ok((RunOutcome { point: p, rep, seed, report, provenance: Provenance::this_build() }, tally))
}

/// Runs every point and repetition on [`Planned::threads`] threads, each
/// job through [`run_job`].
pub fn run(experiment: &Experiment, options: &RunOptions) -> Result<Results, ExperimentError> {
    let file = &experiment.file;
    let Planned { points, reps, threads } = plan(experiment, options)?;
    let job_count = points.len() * reps as usize;
    let threads = threads.min(job_count.max(1));
    let bar = progress_bar(options.progress, job_count as u64, "runs", experiment.config.name.clone());
    let next = AtomicUsize::new(0);
    let slots: Mutex<Vec<Option<RunOutcome>>> = Mutex::new(vec![None; job_count]);
    let failure: Mutex<Option<ExperimentError>> = Mutex::new(None);
    let store = options.store.as_deref().filter(|_| options.runner.store_name().is_some());
    let tally = Mutex::new(StoreTally {
        dir: store.map(|s| s.dir().to_path_buf()).unwrap_or_default(),
        ..StoreTally::default()
    });
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= job_count {
                    break;
                }
                let point = &points[i / reps as usize];
                let job = Job::new(point, (i % reps as usize) as u32);
                match run_job(file, point, job, &*options.runner, store) {
                    Ok((outcome, t)) => {
                        tally.lock().expect("no thread panics while holding the lock").add(t);
                        slots.lock().expect("no thread panics while holding the lock")[i] = Some(outcome);
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
    let tally = tally.into_inner().expect("threads joined");
    Ok(Results { experiment: experiment.clone(), points, runs, store: store.map(|_| tally.sorted()) })
}
