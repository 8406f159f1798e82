//! The `meshbed` command line.
//!
//! * `meshbed` with no arguments runs the main job on the built-in default.
//! * `meshbed sim [SCENARIO] [--json] [--seed N]` runs a scenario file.
//! * `meshbed scenario default` prints the built-in default scenario as TOML.
//! * `meshbed bench` measures simulator speed.

mod bench;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use meshbed_sim::Scenario;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "meshbed",
    version,
    about = "Which transport protocol works on this mesh, and why: simulate multi-hop 802.11 and the transports that run over it."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario in the discrete-event simulator and print per-flow goodput and MAC counters.
    Sim {
        /// Scenario file (TOML). Without it, the built-in default runs.
        scenario: Option<PathBuf>,
        /// Print the report as JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Override the scenario's seed.
        #[arg(long)]
        seed: Option<u64>,
    },
    /// Print a built-in scenario as TOML, to copy and edit.
    Scenario {
        /// Which one: `default`.
        name: String,
    },
    /// Measure simulator speed on a saturated 6-hop 802.11a 24 Mbit/s chain.
    Bench {
        /// Simulated seconds per repetition.
        #[arg(long, default_value_t = 20.0)]
        sim_seconds: f64,
        /// Repetitions (the median is reported).
        #[arg(long, default_value_t = 5)]
        repetitions: u32,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Writes to stdout; a closed pipe (`meshbed ... | head`) ends quietly.
pub(crate) fn out(text: &str) -> Result<()> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing to standard output"),
    }
}

fn builtin(name: &str) -> Result<Scenario> {
    match name {
        "default" => Ok(Scenario::builtin_default()),
        other => anyhow::bail!("unknown built-in scenario `{other}`; expected one of: default"),
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        None => {
            let s = Scenario::builtin_default();
            out("meshbed: simulating the built-in default scenario (`meshbed scenario default` prints it)\n\n")?;
            let report = meshbed_sim::run(&s)?;
            out(&report.to_table())
        }
        Some(Command::Sim { scenario, json, seed }) => {
            let mut s = match &scenario {
                Some(path) => Scenario::from_file(path)?,
                None => Scenario::builtin_default(),
            };
            if let Some(seed) = seed {
                s.seed = seed;
            }
            let report = meshbed_sim::run(&s)?;
            if json {
                out(&(serde_json::to_string_pretty(&report).context("serialising the report")? + "\n"))
            } else {
                out(&report.to_table())
            }
        }
        Some(Command::Scenario { name }) => {
            let s = builtin(&name)?;
            out(&toml::to_string(&s).context("serialising the scenario")?)
        }
        Some(Command::Bench { sim_seconds, repetitions, json }) => {
            anyhow::ensure!(
                sim_seconds > 0.0 && sim_seconds.is_finite(),
                "--sim-seconds {sim_seconds}: expected a positive number of simulated seconds"
            );
            anyhow::ensure!(repetitions >= 1, "--repetitions 0: expected at least one repetition");
            bench::run(sim_seconds, repetitions, json)
        }
    }
}
