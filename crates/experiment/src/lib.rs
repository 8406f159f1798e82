#![forbid(unsafe_code)]
//! The experiment layer of meshbed: from a scenario file with a sweep to
//! tables and figures.
//!
//! * [`spec`]: the experiment file (a scenario plus `[experiment]`) and its sweep.
//! * [`run`]: every point × repetition on all cores; rows, summaries, CSV.
//! * [`store`]: finished runs kept on disk, keyed by scenario, seed and
//!   model revision, so that a rerun or an extended sweep runs only what is
//!   missing.
//! * [`table`]: each result table as CSV and as Parquet, from one row struct.
//! * [`metrics`]: the documents' metrics (goodput, sliding-window goodput,
//!   unfairness, log utility, starvation, Jain's index, mean ± sd).
//! * [`figures`] and [`plot`]: the figures, as PNG and SVG.
//! * [`builtin`]: the documents' experiments, runnable by name.

pub mod builtin;
pub mod figures;
pub mod metrics;
pub mod plot;
pub mod run;
pub mod spec;
pub mod store;
pub mod table;

pub use run::{PointSummary, Results, RunError, RunOptions, Runner, SimRunner};
pub use spec::{Experiment, ExperimentError};
pub use store::{Provenance, Store, StoreTally};

use std::path::{Path, PathBuf};

/// What [`execute`] leaves behind.
pub struct Outcome {
    pub results: Results,
    pub summaries: Vec<PointSummary>,
    /// What the experiment is, the goodput table and, with random pairs,
    /// whether every point drew the same ones: what a terminal shows.
    pub headline: String,
    /// The tables after it ([`run::diagnostic_tables`]).
    pub diagnostics: String,
    /// Both, as `summary.txt` holds them.
    pub table: String,
    pub files: Vec<PathBuf>,
}

/// Runs an experiment (reusing the runs of `options.store`, if set) and
/// writes `experiment.toml`, `flows.csv`, `traces.csv` (if any flow is
/// traced), `summary.csv`, with `compare_against` `paired.csv` (each table
/// also as `.parquet`), `summary.txt` and the figures into `out_dir`.
pub fn execute(experiment: &Experiment, options: &RunOptions, out_dir: &Path) -> anyhow::Result<Outcome> {
    use anyhow::Context;
    let results = run::run(experiment, options)?;
    let summaries = run::summarize(&results);
    let reps = options.repetitions.unwrap_or(experiment.config.repetitions);
    let mut headline = format!(
        "{}: {} points × {} repetitions, seeds {}..{}\n{}\n\n",
        experiment.config.name,
        results.points.len(),
        reps,
        results.points.first().map_or(1, |p| p.scenario.seed),
        results.points.first().map_or(1, |p| p.scenario.seed) + reps as u64 - 1,
        experiment.config.description
    );
    headline.push_str(&run::goodput_table(&results, &summaries));
    let paired = run::paired_ratios(&results);
    headline.push_str(&run::paired_table(&paired));
    if let Some(p) = run::random_pairs(&results) {
        use std::fmt::Write;
        let hops: Vec<String> = p
            .hops
            .iter()
            .map(|(h, n)| format!("{}: {n}", h.map_or("no route".to_string(), |h| format!("{h} hops"))))
            .collect();
        let _ = writeln!(
            headline,
            "\nRandom pairs: {} drawn (flow index × seed), {}; route length at the start: {}",
            p.pairs,
            if p.same_in_every_point {
                "the same pair for a flow index in every point of a repetition"
            } else {
                "NOT the same in every point of a repetition (an axis changes the draw)"
            },
            hops.join(", ")
        );
    }
    let diagnostics = run::diagnostic_tables(&results, &summaries);
    let table = format!("{headline}{diagnostics}");
    std::fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let mut files = Vec::new();
    let spec_path = out_dir.join("experiment.toml");
    std::fs::write(&spec_path, experiment.to_toml()).with_context(|| format!("writing {}", spec_path.display()))?;
    files.push(spec_path);
    let table_path = out_dir.join("summary.txt");
    std::fs::write(&table_path, &table).with_context(|| format!("writing {}", table_path.display()))?;
    files.push(table_path);
    files.extend(
        run::write_csv(&results, &summaries, out_dir)
            .with_context(|| format!("writing CSV and Parquet into {}", out_dir.display()))?,
    );
    if !paired.is_empty() {
        let path = out_dir.join("paired.csv");
        let header = ["point", "value", "reference", "pairs", "zero_pairs", "ratio", "ci95_low", "ci95_high"];
        let write = || -> csv::Result<Vec<PathBuf>> {
            let mut w = table::TableWriter::create(&path, header.iter().map(|h| h.to_string()).collect(), 0..0)?;
            for r in &paired {
                w.serialize(r)?;
            }
            w.finish()
        };
        files.extend(write().with_context(|| format!("writing {}", path.display()))?);
    }
    files.extend(figures::draw(&results, &summaries, out_dir)?);
    Ok(Outcome { results, summaries, headline, diagnostics, table, files })
}
