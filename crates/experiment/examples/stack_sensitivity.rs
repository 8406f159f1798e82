//! Seed 001 §5.4's two stack-topology observations across the sensitivity
//! built-ins (issue 15): runs each (default: all three) on one worker thread and
//! prints, per setting, the middle flow's share of the outer flows'
//! goodput, the share of time its instantaneous goodput was starved, and
//! whether each observation holds.
//!
//! `cargo run --release -p meshbed-experiment --example stack_sensitivity -- [--jobs N] [NAME ...]`

use meshbed_experiment::builtin::{self, stack_sensitivity};
use meshbed_experiment::{run, RunOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut jobs = 1;
    let mut names = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--jobs" => jobs = args.next().ok_or("--jobs needs a number")?.parse()?,
            _ => names.push(a),
        }
    }
    if names.is_empty() {
        names = [stack_sensitivity::GEOMETRY, stack_sensitivity::GEOMETRY_RETRIES, stack_sensitivity::RADIO]
            .map(String::from)
            .to_vec();
    }
    for name in names {
        let e = builtin::get(&name).ok_or_else(|| format!("{name}: no such built-in experiment"))?;
        // Wall time of the runs, for the notes: not part of any result.
        let started = std::time::Instant::now();
        let results = run::run(&e, &RunOptions { jobs, progress: true, ..Default::default() })?;
        let wall_s = started.elapsed().as_secs_f64();
        println!(
            "## {name}: {} points x {} repetitions, {} runs in {wall_s:.1} s on {jobs} thread(s)\n",
            results.points.len(),
            e.config.repetitions,
            results.runs.len()
        );
        println!("{}", stack_sensitivity::report(&results));
    }
    Ok(())
}
