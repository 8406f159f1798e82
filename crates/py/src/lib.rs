//! meshbed from Python: the native module `meshbed._meshbed`, under the
//! pure-Python package in `python/meshbed` that turns what it returns into
//! pandas DataFrames.
//!
//! Every function returns plain data (strings, tuples, lists): scenarios and
//! experiments travel as their TOML text, a simulation report as the JSON
//! `meshbed sim --json` prints, a sweep's rows as the text of `flows.csv`.
//! Plain text pickles, so Python can hand a run to a thread or to a Ray
//! worker on another machine. Simulations run without the GIL
//! ([`Python::detach`]), so threads of one process run them in parallel.
//! An invalid scenario or experiment raises `meshbed.ScenarioError` (a
//! `ValueError`) with the message the CLI prints after `error: `.

use meshbed_experiment::run::{flows_csv_text, Results, RunOutcome};
use meshbed_experiment::spec::Point;
use meshbed_experiment::store::Provenance;
use meshbed_experiment::{builtin, Experiment, ExperimentError};
use meshbed_sim::Scenario;
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::sync::{Arc, Mutex};

create_exception!(
    meshbed._meshbed,
    ScenarioError,
    PyValueError,
    "An invalid scenario or experiment, or a run it cannot make; the message is the CLI's."
);

/// The CLI's text for an error (`main` prints `error: {e:#}`).
fn to_py(e: impl Into<anyhow::Error>) -> PyErr {
    ScenarioError::new_err(format!("{:#}", e.into()))
}

/// The built-in experiments: (name, description), in `meshbed experiment list` order.
#[pyfunction]
fn experiments() -> Vec<(String, String)> {
    builtin::NAMES
        .iter()
        .filter_map(|name| builtin::get(name).map(|e| (name.to_string(), e.config.description)))
        .collect()
}

/// A scenario as TOML: `default` (`meshbed scenario default`), or a built-in
/// experiment's base scenario (before its sweep is applied).
#[pyfunction]
fn scenario_builtin(name: &str) -> PyResult<String> {
    if name == "default" {
        return scenario_text(&Scenario::builtin_default());
    }
    let e = builtin::get(name).ok_or_else(|| {
        ScenarioError::new_err(format!(
            "unknown built-in scenario `{name}`; expected `default` or a built-in experiment: {}",
            builtin::NAMES.join(", ")
        ))
    })?;
    let text = toml::to_string(&e.base).map_err(to_py)?;
    Scenario::from_toml(&text).map_err(|err| to_py(err.in_file(&e.file)))?;
    Ok(text)
}

fn scenario_text(s: &Scenario) -> PyResult<String> {
    toml::to_string(s).map_err(|e| to_py(anyhow::Error::new(e).context("serialising the scenario")))
}

/// Parses and checks scenario text (as `meshbed sim` would); returns it as
/// meshbed writes it.
#[pyfunction]
fn scenario_from_text(text: &str) -> PyResult<String> {
    scenario_text(&Scenario::from_toml(text).map_err(to_py)?)
}

/// Reads and checks a scenario file (as `meshbed sim FILE`); errors name the file.
#[pyfunction]
fn scenario_from_file(path: &str) -> PyResult<String> {
    scenario_text(&Scenario::from_file(std::path::Path::new(path)).map_err(to_py)?)
}

/// Runs a scenario in the simulator without the GIL; returns the report as
/// `meshbed sim --json [--seed N]` prints it.
#[pyfunction]
#[pyo3(signature = (scenario_toml, seed=None))]
fn run_scenario(py: Python<'_>, scenario_toml: &str, seed: Option<u64>) -> PyResult<String> {
    let mut s = Scenario::from_toml(scenario_toml).map_err(to_py)?;
    if let Some(seed) = seed {
        s.seed = seed;
    }
    let report = py.detach(|| meshbed_sim::run(&s)).map_err(to_py)?;
    serde_json::to_string(&report).map_err(to_py)
}

/// An experiment given as a built-in name, a file or TOML text: (its TOML,
/// the name errors give it, its name). The pair (TOML, file) is what
/// [`plan`] and [`run_point`] take.
#[pyfunction]
fn experiment_resolve(source: &str) -> PyResult<(String, String, String)> {
    let e = match builtin::get(source) {
        Some(e) => e,
        None if !source.contains('\n') && std::path::Path::new(source).exists() => {
            Experiment::from_file(std::path::Path::new(source)).map_err(to_py)?
        }
        None if source.contains('[') => Experiment::from_toml(source, "<experiment text>").map_err(to_py)?,
        None => {
            return Err(ScenarioError::new_err(format!(
                "`{source}` is neither a built-in experiment ({}) nor an existing file",
                builtin::NAMES.join(", ")
            )))
        }
    };
    Ok((e.to_toml(), e.file.clone(), e.config.name.clone()))
}

/// An experiment parsed once per process, with its points.
struct Prepared {
    experiment: Experiment,
    points: Vec<Point>,
}

/// Parsing an experiment validates every point; a worker running many of
/// its runs does that once. A few experiments at a time are kept.
fn prepared(toml_text: &str, file: &str) -> Result<Arc<Prepared>, ExperimentError> {
    static CACHE: Mutex<Vec<(String, String, Arc<Prepared>)>> = Mutex::new(Vec::new());
    const KEPT: usize = 8;
    let lock = |c: &'static Mutex<_>| c.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((.., p)) = lock(&CACHE).iter().find(|(t, f, _)| t == toml_text && f == file) {
        return Ok(p.clone());
    }
    let experiment = Experiment::from_toml(toml_text, file)?;
    let points = experiment.points(file)?;
    let p = Arc::new(Prepared { experiment, points });
    let mut cache = lock(&CACHE);
    if cache.len() >= KEPT {
        cache.remove(0);
    }
    cache.push((toml_text.to_string(), file.to_string(), p.clone()));
    Ok(p)
}

/// Checks that an experiment can run with `repetitions` (the experiment's
/// own when `None`), with the CLI's bounds and messages; returns (points,
/// repetitions, name).
#[pyfunction]
#[pyo3(signature = (toml_text, file, repetitions=None, force=false))]
fn plan(
    py: Python<'_>,
    toml_text: &str,
    file: &str,
    repetitions: Option<u32>,
    force: bool,
) -> PyResult<(usize, u32, String)> {
    if repetitions == Some(0) {
        return Err(ScenarioError::new_err("repetitions = 0: expected at least one repetition"));
    }
    py.detach(|| {
        let p = prepared(toml_text, file)?;
        let reps = repetitions.unwrap_or(p.experiment.config.repetitions).max(1);
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let plan = p.experiment.plan(file, reps, threads, force)?;
        Ok::<_, ExperimentError>((plan.points.len(), reps, p.experiment.config.name.clone()))
    })
    .map_err(to_py)
}

/// Runs repetition `rep` of point `point` without the GIL, exactly as
/// `meshbed experiment run` does (seed = the point's seed + `rep`), and
/// returns (that run's `flows.csv` text, its trace hash).
#[pyfunction]
fn run_point(py: Python<'_>, toml_text: &str, file: &str, point: usize, rep: u32) -> PyResult<(String, String)> {
    py.detach(|| {
        let p = prepared(toml_text, file).map_err(anyhow::Error::new)?;
        let Some(at) = p.points.get(point) else {
            anyhow::bail!("{file}: point {point}: expected a point index below {}", p.points.len());
        };
        let mut scenario = at.scenario.clone();
        // Common random numbers, as the experiment runner: repetition r of
        // every point uses the same seed.
        scenario.seed = scenario.seed.wrapping_add(u64::from(rep));
        let seed = scenario.seed;
        let report = meshbed_sim::run(&scenario).map_err(|error| ExperimentError::Point {
            file: file.to_string(),
            point: format!("{} (repetition {rep}, seed {seed})", at.label()),
            error: Box::new(error),
        })?;
        let trace_hash = report.trace_hash_text();
        let results = Results {
            experiment: p.experiment.clone(),
            points: p.points.clone(),
            runs: vec![RunOutcome { point, rep, seed, report, provenance: Provenance::this_build() }],
            store: None,
        };
        Ok((flows_csv_text(&results)?, trace_hash))
    })
    .map_err(to_py)
}

/// (point, repetition, trace hash) of one run.
type RunHash = (usize, u32, String);

/// The trace hash of every run of the experiment's Rust runner, ordered by
/// (point, repetition), and its `flows.csv` text: the reference the Python
/// sweeps are checked against.
#[pyfunction]
#[pyo3(signature = (toml_text, file, repetitions=None))]
fn run_experiment(
    py: Python<'_>,
    toml_text: &str,
    file: &str,
    repetitions: Option<u32>,
) -> PyResult<(String, Vec<RunHash>)> {
    py.detach(|| {
        let p = prepared(toml_text, file)?;
        let options = meshbed_experiment::RunOptions { repetitions, ..Default::default() };
        let results = meshbed_experiment::run::run(&p.experiment, &options)?;
        let hashes = results.runs.iter().map(|r| (r.point, r.rep, r.report.trace_hash_text())).collect();
        Ok::<_, anyhow::Error>((flows_csv_text(&results)?, hashes))
    })
    .map_err(to_py)
}

/// The same module for every process: the version it was built from.
#[pymodule]
fn _meshbed(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(experiments, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_builtin, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_from_text, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_from_file, m)?)?;
    m.add_function(wrap_pyfunction!(run_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(experiment_resolve, m)?)?;
    m.add_function(wrap_pyfunction!(plan, m)?)?;
    m.add_function(wrap_pyfunction!(run_point, m)?)?;
    m.add_function(wrap_pyfunction!(run_experiment, m)?)?;
    Ok(())
}
