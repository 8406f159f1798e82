#![forbid(unsafe_code)]
//! The `meshbed` command line.
//!
//! * `meshbed` with no arguments runs the main job: the single-flow
//!   comparison of every protocol on testbed A, leaving a table on the
//!   terminal and figures on disk.
//! * `meshbed experiment run NAME|FILE`, `experiment list`, `experiment show NAME`.
//! * `meshbed sim [SCENARIO] [--json] [--seed N]` runs a scenario file.
//! * `meshbed scenario default` prints the built-in default scenario as TOML.
//! * `meshbed bench` measures simulator speed.
//! * `meshbed send FILE HOST:PORT` / `meshbed recv` move files over UDP with
//!   any protocol (`recv --rate LIMIT`: a slow application, seed 002
//!   §4.2.3's flow control); `meshbed bench-transfer` compares ATP with
//!   kernel TCP.

mod bench;
mod emu;
mod emu_runner;
mod routed;
mod transfer;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use meshbed_experiment::{builtin, Experiment, RunOptions};
use meshbed_sim::Scenario;
use std::path::{Path, PathBuf};
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
        /// Write what the radio carried into DIR, one pcap per node
        /// (`n<i>.pcap`: 802.11 with radiotap, simulated time; for Wireshark
        /// with contrib/wireshark/meshbed.lua). DIR is created if missing.
        #[arg(long, value_name = "DIR")]
        pcap: Option<PathBuf>,
    },
    /// Print a built-in scenario as TOML, to copy and edit.
    Scenario {
        /// Which one: `default`.
        name: String,
    },
    /// Run an experiment (a built-in name or a file), list or print the built-in ones.
    Experiment {
        #[command(subcommand)]
        command: ExperimentCommand,
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
    /// Send a file over UDP to a `meshbed recv` with ATP or TCP (the simulator's engines).
    Send(transfer::SendArgs),
    /// Receive files sent with `meshbed send`, several at once; each appears under its name only when complete and verified.
    Recv(transfer::RecvArgs),
    /// The real-time emulator: a network namespace per node, frames through the 802.11 model against the wall clock (needs root).
    Emu(emu::EmuArgs),
    /// The delay-collection daemon inside an emulated node: stamps forwarded ATP packets' D_max and N_h via NFQUEUE.
    Relay(emu::RelayArgs),
    /// A node's routing daemon: AODV (UDP 654, NFQUEUE) or OLSR/OLSR-ETX (UDP 698), the simulator's engines over real sockets, routes into the kernel (needs root).
    Routed(routed::RoutedArgs),
    /// Benchmark: a large loopback transfer with ATP and with the kernel's TCP, goodput and CPU time side by side.
    BenchTransfer {
        /// Bytes to move, in MiB (1 to 4096).
        #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=transfer::MAX_BENCH_MIB))]
        size_mib: u64,
        /// Engine protocols to run (comma-separated).
        #[arg(long, value_delimiter = ',', default_value = "atp-adaptive,atp-default", value_enum)]
        protocols: Vec<meshbed_proto::Protocol>,
        /// Also run each ATP protocol with this rate cap (e.g. 5us), besides the preset's 100us.
        #[arg(long, value_parser = transfer::parse_min_delay)]
        atp_min_delay: Option<meshbed_net::DelaySpec>,
        /// Also run each protocol with every datagram sealed (`--psk`, a key made for the run), side by side.
        #[arg(long)]
        psk: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum ExperimentCommand {
    /// Run every point × repetition on all cores; write CSV, a summary and figures.
    Run {
        /// A built-in experiment name (see `meshbed experiment list`) or an experiment file.
        experiment: String,
        /// Repetitions per point (default: the experiment's own).
        #[arg(long)]
        repetitions: Option<u32>,
        /// Output directory (default: results/NAME).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Worker threads (default: all cores).
        #[arg(long, default_value_t = 0)]
        jobs: usize,
        /// Where the points run: `sim` (the simulator) or `emu` (the real-time
        /// namespace emulator; root, wall-clock time, one run at a time).
        #[arg(long, default_value = "sim", value_parser = ["sim", "emu"])]
        backend: String,
        /// Run an experiment larger than the usual bounds (more than 20 000
        /// runs or about 4 GiB of estimated memory).
        #[arg(long)]
        force: bool,
        /// The result store: finished runs are kept here and reused, so a
        /// rerun or an extended sweep runs only what is missing and a sweep
        /// killed halfway resumes (default: OUT/store; the simulator only).
        #[arg(long, conflicts_with = "no_store")]
        store: Option<PathBuf>,
        /// Run every point again, neither reading nor writing a store.
        #[arg(long)]
        no_store: bool,
    },
    /// List the built-in experiments.
    List,
    /// Print a built-in experiment as a TOML file, to copy and edit.
    Show { name: String },
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

/// Where the experiment's finished runs are kept: `--store`, or `OUT/store`.
enum StoreChoice {
    Default,
    At(PathBuf),
    Off,
}

fn run_experiment(e: &Experiment, dir: Option<PathBuf>, mut options: RunOptions, store: StoreChoice) -> Result<()> {
    let dir = dir.unwrap_or_else(|| PathBuf::from("results").join(&e.config.name));
    let store_dir = match &store {
        StoreChoice::Default => Some(dir.join("store")),
        StoreChoice::At(path) => Some(path.clone()),
        StoreChoice::Off => None,
    };
    match (options.runner.store_name(), store_dir) {
        (Some(_), Some(store_dir)) => {
            options.store = Some(std::sync::Arc::new(meshbed_experiment::Store::open(&store_dir)?))
        }
        // Emulated runs depend on the machine and the wall clock, not on
        // the scenario alone: nothing to key them by.
        (None, Some(store_dir)) if matches!(store, StoreChoice::At(_)) => anyhow::bail!(
            "--store {}: this backend's runs are not kept in a result store (only the simulator's are)",
            store_dir.display()
        ),
        _ => {}
    }
    let t0 = std::time::Instant::now();
    let outcome = meshbed_experiment::execute(e, &options, &dir)?;
    out(&outcome.table)?;
    // The few summary figures by name; the per-point trace figures (one per
    // traced point, 36 for the default experiment; a second, the data
    // delivered over time, for a point with moving nodes) as a count.
    let pngs = outcome.files.iter().filter(|p| p.extension().is_some_and(|x| x == "png"));
    let (traces, summary): (Vec<&PathBuf>, Vec<&PathBuf>) =
        pngs.partition(|p| meshbed_experiment::figures::is_trace_figure(p));
    let mut figure_list: Vec<String> = summary.iter().map(|p| p.display().to_string()).collect();
    if !traces.is_empty() {
        figure_list.push(format!("{} trace figures (per traced point) in {}/", traces.len(), dir.display()));
    }
    let runs = match &outcome.results.store {
        Some(tally) => tally.summary_line(),
        None => format!("{} runs executed (no result store)", outcome.results.runs.len()),
    };
    out(&format!(
        "\n{runs}; {:.1} s. Results in {}/ (flows.csv, summary.csv, summary.txt; Parquet beside the CSV); figures (PNG, SVG beside):\n  {}\n",
        t0.elapsed().as_secs_f64(),
        dir.display(),
        figure_list.join("\n  ")
    ))
}

fn stderr_is_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal()
}

/// Runs a scenario, with a progress bar in simulated seconds if `progress`,
/// and a capture into `pcap` if given. Scenario errors name `file`.
fn simulate(s: &Scenario, progress: bool, pcap: Option<&Path>, file: Option<&Path>) -> Result<meshbed_sim::SimReport> {
    let in_file = |e: meshbed_sim::ScenarioError| match file {
        Some(path) => e.in_file(&path.display().to_string()),
        None => e,
    };
    let bar =
        meshbed_experiment::run::progress_bar(progress, s.duration_s.ceil() as u64, "simulated s", "simulating".into());
    let mut tick = |now: meshbed_core::Instant| bar.set_position(now.as_secs_f64() as u64);
    let report = match pcap {
        None => meshbed_sim::run_with_progress(s, &mut tick).map_err(in_file)?,
        Some(dir) => {
            let sim = meshbed_sim::Sim::new(s).map_err(in_file)?;
            let (report, counts) = sim.run_with_pcap_dir(dir, &mut tick).with_context(|| {
                format!("--pcap {}: expected a directory that can be created and written to", dir.display())
            })?;
            let frames: u64 = counts.sent.iter().chain(&counts.heard).sum();
            eprintln!("wrote {} pcap files ({frames} frames) to {}", counts.sent.len(), dir.display());
            report
        }
    };
    bar.finish_and_clear();
    Ok(report)
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
            out(&format!(
                "meshbed: comparing every protocol on the built-in `{}` experiment\n(`meshbed experiment show {}` prints it; `meshbed --help` lists the other commands)\n\n",
                builtin::DEFAULT,
                builtin::DEFAULT
            ))?;
            let e = builtin::get(builtin::DEFAULT).expect("the default exists");
            run_experiment(
                &e,
                None,
                RunOptions { progress: stderr_is_terminal(), ..RunOptions::default() },
                StoreChoice::Default,
            )
        }
        Some(Command::Experiment { command }) => match command {
            ExperimentCommand::List => {
                let mut s = String::new();
                for name in builtin::NAMES {
                    let e = builtin::get(name).expect("listed");
                    s.push_str(&format!("{name:<22} {}\n", e.config.description));
                }
                out(&s)
            }
            ExperimentCommand::Show { name } => {
                let e = builtin::get(&name).with_context(|| {
                    format!("unknown built-in experiment `{name}`; expected one of: {}", builtin::NAMES.join(", "))
                })?;
                out(&e.to_toml())
            }
            ExperimentCommand::Run { experiment, repetitions, out: dir, jobs, backend, force, store, no_store } => {
                let runner: std::sync::Arc<dyn meshbed_experiment::Runner> = match backend.as_str() {
                    "emu" => std::sync::Arc::new(emu_runner::EmuRunner { daemon_exe: std::env::current_exe().ok() }),
                    _ => std::sync::Arc::new(meshbed_experiment::SimRunner),
                };
                anyhow::ensure!(repetitions != Some(0), "--repetitions 0: expected at least one repetition");
                let e = match builtin::get(&experiment) {
                    Some(e) => e,
                    None if std::path::Path::new(&experiment).exists() => {
                        Experiment::from_file(std::path::Path::new(&experiment))?
                    }
                    None => anyhow::bail!(
                        "`{experiment}` is neither a built-in experiment ({}) nor an existing file",
                        builtin::NAMES.join(", ")
                    ),
                };
                let store = match (store, no_store) {
                    (_, true) => StoreChoice::Off,
                    (Some(path), false) => StoreChoice::At(path),
                    (None, false) => StoreChoice::Default,
                };
                let options =
                    RunOptions { repetitions, jobs, progress: stderr_is_terminal(), runner, force, store: None };
                run_experiment(&e, dir, options, store)
            }
        },
        Some(Command::Sim { scenario, json, seed, pcap }) => {
            let mut s = match &scenario {
                Some(path) => Scenario::from_file(path)?,
                None => Scenario::builtin_default(),
            };
            if let Some(seed) = seed {
                s.seed = seed;
            }
            // A --seed can change the links (shadowing): errors name the file too.
            let report = simulate(&s, !json && stderr_is_terminal(), pcap.as_deref(), scenario.as_deref())?;
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
            let longest = meshbed_sim::scenario::MAX_DURATION_S;
            anyhow::ensure!(
                sim_seconds > 0.0 && sim_seconds <= longest,
                "--sim-seconds {sim_seconds}: expected a positive number of simulated seconds, at most {longest}"
            );
            anyhow::ensure!(repetitions >= 1, "--repetitions 0: expected at least one repetition");
            bench::run(sim_seconds, repetitions, json)
        }
        Some(Command::Send(args)) => transfer::run_send(args),
        Some(Command::Recv(args)) => transfer::run_recv(args),
        Some(Command::Emu(args)) => emu::run(args),
        Some(Command::Relay(args)) => emu::relay(args),
        Some(Command::Routed(args)) => routed::run(args),
        Some(Command::BenchTransfer { size_mib, protocols, atp_min_delay, psk, json }) => {
            transfer::run_bench(size_mib, &protocols, atp_min_delay, psk, json)
        }
    }
}
