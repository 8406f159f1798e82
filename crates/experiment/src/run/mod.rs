//! Running an experiment: every point × repetition on all cores, then one
//! row per flow per run, and a summary per point with the documents' metrics.
//!
//! * [`runner`]: the [`Runner`] trait, [`SimRunner`], [`RunOptions`] and the
//!   job loop over points × repetitions with the result store.
//! * [`summary`]: a flow's goodput as a summary uses it, the per-point
//!   summaries ([`PointSummary`], [`RouteSummary`]) and the random pairs.
//! * [`text`]: the summary as plain-text tables: the goodput headline and the diagnostics.
//! * [`csv`]: the result tables' row structs and their writers.
//! * [`paired`]: each series value against a reference over the same seeds
//!   (`[experiment] compare_against`).

pub mod csv;
pub mod paired;
pub mod runner;
pub mod summary;
pub mod text;

pub use self::csv::{flows_table, write_csv};
pub use paired::{paired_ratios, paired_table, PairedRatio};
pub use runner::{
    jobs, plan, progress_bar, run, run_job, Job, Planned, Results, RunError, RunOptions, RunOutcome, Runner, SimRunner,
};
pub use summary::{
    batch_goodput, flow_batch_goodput, flow_goodput_bps, random_pairs, summarize, windowed_goodput_bps, BatchGoodput,
    BatchSummary, DelaySummary, PointSummary, RandomPairs, RouteSummary,
};
pub use text::{diagnostic_tables, goodput_table, summary_table};

#[cfg(test)]
mod tests;
