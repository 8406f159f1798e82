//! meshbed from Python: the native module `meshbed._meshbed`, under the
//! pure-Python package in `python/meshbed` that turns what it returns into
//! pandas DataFrames.
//!
//! Scenarios and experiments travel as their TOML text, a simulation report
//! as the JSON `meshbed sim --json` prints, a finished run of a sweep as
//! opaque bytes (CBOR), and a sweep's rows as one Arrow record batch (a
//! `pyarrow.RecordBatch`, typed as `flows.parquet`). Text and bytes pickle,
//! so Python can hand a job to a thread or to a Ray worker on another
//! machine. A sweep's jobs run through the experiment crate's own job runner
//! ([`meshbed_experiment::run::plan`], [`run_job`](meshbed_experiment::run::run_job)):
//! the CLI's checks, seeds and result store. Simulations run without the GIL
//! ([`Python::detach`]), so threads of one process run them in parallel.
//! An invalid scenario or experiment raises `meshbed.ScenarioError` (a
//! `ValueError`) with the message the CLI prints after `error: `.

use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray, UInt64Array};
use arrow_pyarrow::ToPyArrow;
use arrow_schema::{Field, Schema};
use meshbed_experiment::run::{self, flows_table, Job, Planned, Results, RunOutcome};
use meshbed_experiment::spec::{get_path, set_path, Point};
use meshbed_experiment::table::{Column, Table};
use meshbed_experiment::{builtin, Experiment, ExperimentError, RunOptions, SimRunner, Store, StoreTally};
use meshbed_sim::Scenario;
use pyo3::create_exception;
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
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

/// Each protocol's look in the CLI's figures: (name, `#rrggbb`, matplotlib
/// marker), from the one table the figures draw with
/// (`meshbed_experiment::figures::palette`).
#[pyfunction]
fn protocol_styles() -> Vec<(String, String, String)> {
    meshbed_experiment::figures::palette::protocol_style_table()
        .into_iter()
        .map(|(name, color, marker)| (name.to_string(), color, marker.to_string()))
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

fn scenario_tree(text: &str) -> PyResult<toml::Table> {
    toml::from_str(text).map_err(to_py)
}

/// The value at a dotted key of a scenario (`radio.data_rate_kbps`,
/// `flows[0].protocol`), as JSON text; `KeyError` where there is none.
#[pyfunction]
fn scenario_get(scenario_toml: &str, key: &str) -> PyResult<String> {
    let tree = scenario_tree(scenario_toml)?;
    let v = get_path(&tree, key).ok_or_else(|| PyKeyError::new_err(key.to_string()))?;
    serde_json::to_string(v).map_err(to_py)
}

/// The scenario with `key` set to `value_json` (JSON text), checked as
/// `meshbed sim` checks a file (the same message, without a file name);
/// returns it as meshbed writes it.
#[pyfunction]
fn scenario_set(scenario_toml: &str, key: &str, value_json: &str) -> PyResult<String> {
    let value: toml::Value = serde_json::from_str(value_json)
        .map_err(|e| ScenarioError::new_err(format!("{key} = {value_json}: expected a TOML value ({e})")))?;
    let mut tree = scenario_tree(scenario_toml)?;
    set_path(&mut tree, key, &value)
        .map_err(|expected| to_py(meshbed_core::InvalidValue::new(key, &value, expected)))?;
    scenario_from_text(&toml::to_string(&tree).map_err(to_py)?)
}

/// Runs a scenario in the simulator without the GIL; returns the report as
/// `meshbed sim --json [--seed N]` prints it. `progress`, if given, is
/// called with the simulated time in seconds every
/// [`meshbed_sim::PROGRESS_EVERY_EVENTS`] events (a few times per wall
/// second, never in a short run), taking the GIL only for that call; the
/// first exception it raises stops the calls and is raised when the run
/// ends (the simulator cannot be stopped midway).
#[pyfunction]
#[pyo3(signature = (scenario_toml, seed=None, progress=None))]
fn run_scenario(
    py: Python<'_>,
    scenario_toml: &str,
    seed: Option<u64>,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let mut s = Scenario::from_toml(scenario_toml).map_err(to_py)?;
    if let Some(seed) = seed {
        s.seed = seed;
    }
    let mut raised: Option<PyErr> = None;
    let report = py
        .detach(|| match &progress {
            None => meshbed_sim::run(&s),
            Some(callback) => meshbed_sim::run_with_progress(&s, &mut |now| {
                if raised.is_none() {
                    raised = Python::attach(|py| callback.call1(py, (now.as_secs_f64(),)).err());
                }
            }),
        })
        .map_err(to_py)?;
    if let Some(err) = raised {
        return Err(err);
    }
    serde_json::to_string(&report).map_err(to_py)
}

/// A built-in experiment by its name: (its TOML, its file name, its name).
#[pyfunction]
fn experiment_builtin(name: &str) -> PyResult<(String, String, String)> {
    let e = builtin::get(name).ok_or_else(|| {
        ScenarioError::new_err(format!(
            "`{name}`: expected the name of a built-in experiment ({}); for a file use Experiment.from_file(path), \
             for text Experiment.from_toml(text)",
            builtin::NAMES.join(", ")
        ))
    })?;
    Ok((e.to_toml(), e.file.clone(), e.config.name.clone()))
}

/// An experiment file by its path (never a name or text).
#[pyfunction]
fn experiment_from_file(path: std::path::PathBuf) -> PyResult<(String, String, String)> {
    let e = Experiment::from_file(&path).map_err(to_py)?;
    Ok((e.to_toml(), e.file.clone(), e.config.name.clone()))
}

/// Experiment text (never a name or a path); `file` names it in errors.
#[pyfunction]
fn experiment_from_toml(text: &str, file: &str) -> PyResult<(String, String, String)> {
    let e = Experiment::from_toml(text, file).map_err(to_py)?;
    Ok((e.to_toml(), e.file.clone(), e.config.name.clone()))
}

/// An experiment parsed once per process, with its points.
struct Prepared {
    experiment: Experiment,
    points: Vec<Point>,
}

/// Parsing an experiment validates every point; a worker running many of
/// its jobs does that once. A few experiments at a time are kept.
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

/// The options of a sweep in the simulator, with the result store in
/// `store` if given.
fn options(repetitions: Option<u32>, force: bool, store: Option<&str>) -> Result<RunOptions, anyhow::Error> {
    let store = store.map(|dir| Store::open(std::path::Path::new(dir))).transpose()?.map(Arc::new);
    Ok(RunOptions { repetitions, force, store, runner: Arc::new(SimRunner), ..RunOptions::default() })
}

/// Checks an experiment as `meshbed experiment run` does before anything
/// runs ([`run::plan`]: its bounds, every point, every repetition's routes);
/// returns (points, repetitions, name).
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
        let Planned { points, reps, .. } = run::plan(&p.experiment, &options(repetitions, force, None)?)?;
        Ok::<_, anyhow::Error>((points.len(), reps, p.experiment.config.name.clone()))
    })
    .map_err(to_py)
}

/// Runs repetition `rep` of point `point` without the GIL through the
/// experiment crate's [`run::run_job`] (the CLI's seed, the result store in
/// `store` if given) and returns the finished run as bytes for [`flows`].
#[pyfunction]
#[pyo3(signature = (toml_text, file, point, rep, store=None))]
fn run_job<'py>(
    py: Python<'py>,
    toml_text: &str,
    file: &str,
    point: usize,
    rep: u32,
    store: Option<&str>,
) -> PyResult<Bound<'py, PyBytes>> {
    let bytes = py
        .detach(|| {
            let p = prepared(toml_text, file)?;
            let Some(at) = p.points.get(point) else {
                anyhow::bail!("{file}: point {point}: expected a point index below {}", p.points.len());
            };
            let options = options(None, false, store)?;
            let done = run::run_job(file, at, Job::new(at, rep), &*options.runner, options.store.as_deref())?;
            let mut bytes = Vec::new();
            ciborium::into_writer(&done, &mut bytes)?;
            Ok(bytes)
        })
        .map_err(to_py)?;
    Ok(PyBytes::new(py, &bytes))
}

/// (point, repetition, trace hash) of one run.
type RunHash = (usize, u32, String);

/// A typed column as an Arrow array.
fn arrow_array(column: &Column) -> ArrayRef {
    match column {
        Column::Bool(v) => Arc::new(BooleanArray::from(v.clone())),
        Column::U64(v) => Arc::new(UInt64Array::from(v.clone())),
        Column::I64(v) => Arc::new(Int64Array::from(v.clone())),
        Column::F64(v) => Arc::new(Float64Array::from(v.clone())),
        Column::Str(v) => Arc::new(StringArray::from(v.clone())),
    }
}

/// A table as one Arrow record batch, every column nullable.
fn record_batch(table: &Table) -> Result<RecordBatch, arrow_schema::ArrowError> {
    let arrays: Vec<ArrayRef> = table.columns.iter().map(arrow_array).collect();
    let fields: Vec<Field> =
        table.header.iter().zip(&arrays).map(|(name, a)| Field::new(name, a.data_type().clone(), true)).collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)
}

/// The rows of `results` as `flows.parquet` types them, a
/// `pyarrow.RecordBatch`, and each run's trace hash.
fn flows_of<'py>(py: Python<'py>, results: &Results) -> PyResult<(Bound<'py, PyAny>, Vec<RunHash>)> {
    let batch = flows_table(results).map_err(to_py).and_then(|t| record_batch(&t).map_err(to_py))?;
    let hashes = results.runs.iter().map(|r| (r.point, r.rep, r.report.trace_hash_text())).collect();
    Ok((batch.to_pyarrow(py)?, hashes))
}

/// Gathers the finished runs [`run_job`] returned, in the order given
/// (a sweep gives them by point and repetition): (the rows of `flows.csv`
/// as a `pyarrow.RecordBatch`, the trace hash of each run, what the result
/// store did as `meshbed experiment run` reports it, or `None` without one).
#[pyfunction]
fn flows<'py>(
    py: Python<'py>,
    toml_text: &str,
    file: &str,
    runs: Vec<Vec<u8>>,
) -> PyResult<(Bound<'py, PyAny>, Vec<RunHash>, Option<String>)> {
    let p = prepared(toml_text, file).map_err(to_py)?;
    let mut tally: Option<StoreTally> = None;
    let mut outcomes = Vec::with_capacity(runs.len());
    for bytes in &runs {
        let (outcome, t): (RunOutcome, StoreTally) = ciborium::from_reader(bytes.as_slice())
            .map_err(|e| to_py(anyhow::anyhow!("a finished run that does not decode: {e}")))?;
        // A run without a store has no directory in its tally.
        if !t.dir.as_os_str().is_empty() {
            tally.get_or_insert_with(|| StoreTally { dir: t.dir.clone(), ..StoreTally::default() }).add(t);
        }
        outcomes.push(outcome);
    }
    let results = Results { experiment: p.experiment.clone(), points: p.points.clone(), runs: outcomes, store: None };
    let (batch, hashes) = flows_of(py, &results)?;
    Ok((batch, hashes, tally.map(|t| t.sorted().summary_line())))
}

/// The rows (`pyarrow.RecordBatch`) and the trace hash of every run of the
/// experiment crate's own thread pool ([`run::run`]), ordered by (point,
/// repetition): the reference the Python sweeps are checked against.
#[pyfunction]
#[pyo3(signature = (toml_text, file, repetitions=None))]
fn run_experiment<'py>(
    py: Python<'py>,
    toml_text: &str,
    file: &str,
    repetitions: Option<u32>,
) -> PyResult<(Bound<'py, PyAny>, Vec<RunHash>)> {
    let results = py
        .detach(|| {
            let p = prepared(toml_text, file)?;
            Ok::<_, anyhow::Error>(run::run(&p.experiment, &options(repetitions, false, None)?)?)
        })
        .map_err(to_py)?;
    flows_of(py, &results)
}

/// The same module for every process: the version it was built from.
#[pymodule]
fn _meshbed(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(experiments, m)?)?;
    m.add_function(wrap_pyfunction!(protocol_styles, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_builtin, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_from_text, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_from_file, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_get, m)?)?;
    m.add_function(wrap_pyfunction!(scenario_set, m)?)?;
    m.add_function(wrap_pyfunction!(run_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(experiment_builtin, m)?)?;
    m.add_function(wrap_pyfunction!(experiment_from_file, m)?)?;
    m.add_function(wrap_pyfunction!(experiment_from_toml, m)?)?;
    m.add_function(wrap_pyfunction!(plan, m)?)?;
    m.add_function(wrap_pyfunction!(run_job, m)?)?;
    m.add_function(wrap_pyfunction!(flows, m)?)?;
    m.add_function(wrap_pyfunction!(run_experiment, m)?)?;
    Ok(())
}
