//! The job loop: every point × repetition of an experiment, on a pool of
//! threads, through a [`Runner`] and the result store.

use crate::spec::{Experiment, ExperimentError, Point};
use crate::store::{Lookup, Provenance, Store, StoreTally};
use indicatif::{ProgressBar, ProgressStyle};
use meshbed_sim::backend::{Refusal, ScenarioBackend, Simulator};
use meshbed_sim::{Scenario, ScenarioError, SimReport};
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
