#![forbid(unsafe_code)]
//! The `meshbed` command line.
//!
//! * `meshbed` with no arguments runs the main job: the single-flow
//!   comparison of every protocol on testbed A, leaving a table on the
//!   terminal and figures on disk.
//! * `meshbed experiment run NAME|FILE`, `experiment list`, `experiment show NAME`.
//! * `meshbed sim [SCENARIO] [--json] [--seed N]` runs a scenario file.
//! * `meshbed view SCENARIO [-o FILE]` runs it and writes a page that plays
//!   the run back (`meshbed sim --html FILE` writes the same page).
//! * `meshbed scenario default` prints the built-in default scenario as a
//!   commented file; `scenario keys` / `scenario schema` the reference of
//!   every key (docs/KEYS.md) and the JSON schema.
//! * `meshbed completions SHELL`, `meshbed man`: shell completions and the
//!   man page; `meshbed --version` names the git revision.
//! * `meshbed bench` measures simulator speed.
//! * `meshbed send FILE HOST:PORT` / `meshbed recv` move files over UDP with
//!   any protocol (`recv --rate LIMIT`: a slow application, seed 002
//!   §4.2.3's flow control); `meshbed bench-transfer` compares ATP with
//!   kernel TCP.

mod bench;
mod bench_peers;
mod bench_suite;
mod bench_transfer;
mod emu;
mod emu_runner;
mod recv;
mod reference;
mod reverse;
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
    version = reference::version(),
    about = "Which transport protocol works on this mesh, and why: simulate multi-hop 802.11 and the transports that run over it."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// The main job: also print the diagnostic tables (they are always in summary.txt).
    #[arg(long)]
    verbose: bool,
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
        /// Also write a page that plays the run back (as `meshbed view`).
        #[arg(long, value_name = "FILE", conflicts_with = "pcap")]
        html: Option<PathBuf>,
    },
    /// Run a scenario and write one self-contained HTML page that plays it back: nodes moving, links in range, each flow's route, route breaks and repairs, goodput over time.
    View {
        /// Scenario file (TOML).
        scenario: PathBuf,
        /// Override the scenario's seed.
        #[arg(long)]
        seed: Option<u64>,
        /// The page to write (default: the scenario's name with `.html`, in the current directory).
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Print the built-in default scenario as a commented file, or the reference of every key.
    Scenario {
        #[command(subcommand)]
        command: reference::ScenarioCommand,
    },
    /// Run an experiment (a built-in name or a file), list or print the built-in ones.
    Experiment {
        #[command(subcommand)]
        command: ExperimentCommand,
    },
    /// Print a shell completion script (e.g. `meshbed completions bash > /etc/bash_completion.d/meshbed`).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (`meshbed man > meshbed.1`), or write a page per command into a directory.
    Man {
        /// Write meshbed.1 and a page per command (meshbed-sim.1, ...) into DIR instead.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Measure simulator speed on a saturated 6-hop 802.11a 24 Mbit/s chain.
    Bench {
        /// Simulated seconds per repetition (the chain; the suite's workloads have their own).
        #[arg(long, default_value_t = 20.0, conflicts_with = "suite")]
        sim_seconds: f64,
        /// Repetitions (the median is reported) [default: 5, with --suite 1].
        #[arg(long)]
        repetitions: Option<u32>,
        /// The suite of issue 28's workloads: matched runs against ns-3, static grids, the ATP paper's network; wall time, events/s and peak memory of each.
        #[arg(long)]
        suite: bool,
        /// With --suite: only these workloads (repeatable).
        #[arg(long, value_name = "WORKLOAD", requires = "suite", value_parser = clap::builder::PossibleValuesParser::new(bench_suite::workload_names()))]
        only: Vec<String>,
        /// With --suite: also run each workload with another meshbed binary (an older build), both as child processes in turn, and print both wall times and the speed-up.
        #[arg(long, value_name = "BINARY", requires = "suite")]
        baseline: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Send a file over UDP to a `meshbed recv` with ATP or TCP (the simulator's engines), or test for a time as iperf3 does (--time, --interval, --parallel).
    Send(transfer::SendArgs),
    /// Receive files sent with `meshbed send`, several at once; each appears under its name only when complete and verified.
    Recv(recv::RecvArgs),
    /// Write a new random pre-shared key for `send`/`recv --psk` (64 hex digits, mode 0600); never over an existing file.
    Keygen {
        /// Where to write it (must not exist).
        file: std::path::PathBuf,
    },
    /// The real-time emulator: a network namespace per node, frames through the 802.11 model against the wall clock (needs root).
    Emu(emu::EmuArgs),
    /// The delay-collection daemon inside an emulated node: stamps forwarded ATP packets' D_max and N_h via NFQUEUE.
    Relay(emu::RelayArgs),
    /// A node's routing daemon: AODV (UDP 654, NFQUEUE) or OLSR/OLSR-ETX (UDP 698), the simulator's engines over real sockets, routes into the kernel (needs root).
    Routed(routed::RoutedArgs),
    /// Benchmark: a large loopback transfer with ATP and with the kernel's TCP, goodput and CPU time side by side.
    BenchTransfer {
        /// Bytes to move per run, in MiB (1 to 4096); the default run ends within about a minute on 2 cores.
        #[arg(long, default_value_t = bench_transfer::DEFAULT_BENCH_MIB, value_parser = clap::value_parser!(u64).range(1..=bench_transfer::MAX_BENCH_MIB))]
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
        /// Run every row this many times (1 to 100), alternating, and report means with 95% intervals (and the seal's paired cost).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=bench_transfer::MAX_REPEAT as i64))]
        repeat: u32,
        /// A soak instead: this many transfers of --size-mib each at once to one receiver, per protocol
        /// (2 to 64), every byte checked by the receiver; exit 2 unless every one is verified in full.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(2..=bench_peers::MAX_PEERS))]
        peers: Option<u64>,
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
        /// With `--backend emu`: start no `meshbed relay` in the nodes, so
        /// forwarded datagrams cross the kernel alone as kernel TCP's do (a
        /// sensitivity check of the relays' forwarding delay; ATP flows,
        /// which need the relays' stamping, are refused).
        #[arg(long)]
        no_relays: bool,
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
        /// Also print the diagnostic tables (they are always in summary.txt).
        #[arg(long)]
        verbose: bool,
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

fn run_experiment(
    e: &Experiment,
    dir: Option<PathBuf>,
    mut options: RunOptions,
    store: StoreChoice,
    verbose: bool,
) -> Result<()> {
    let dir = dir.unwrap_or_else(|| PathBuf::from("results").join(&e.config.name));
    // Refuse what cannot run (too large without --force, a key the backend
    // cannot run) before the store's directory and lock are made.
    meshbed_experiment::run::runner::plan(e, &options)?;
    let store_dir = match &store {
        StoreChoice::Default => Some(dir.join("store")),
        StoreChoice::At(path) => Some(path.clone()),
        StoreChoice::Off => None,
    };
    let mut _store_lock = None;
    match (options.runner.store_name(), store_dir) {
        (Some(_), Some(store_dir)) => {
            let store = meshbed_experiment::Store::open(&store_dir)?;
            // One run at a time per store: a second waits, then reuses.
            _store_lock = Some(store.lock(|| {
                eprintln!(
                    "meshbed: another run is using the store {}; waiting for it, then reusing what it kept",
                    store_dir.display()
                )
            })?);
            options.store = Some(std::sync::Arc::new(store))
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
    // The goodput table last, just above the list of files, so that it is
    // what the terminal shows when the run ends; the diagnostics above it.
    if verbose && !outcome.diagnostics.trim().is_empty() {
        out(&format!("{}\n\n", outcome.diagnostics.trim()))?;
    }
    out(&outcome.headline)?;
    let runs = match &outcome.results.store {
        Some(tally) => tally.summary_line(),
        None => format!("{} runs executed (no result store)", outcome.results.runs.len()),
    };
    out(&format!("\n{runs}; {:.1} s. Wrote:\n{}", t0.elapsed().as_secs_f64(), written(&outcome.files, &dir, verbose)))
}

/// What an experiment wrote, a path per line: the tables and summary.txt,
/// the few summary figures by name; the per-point trace figures (one per
/// traced point, 36 for the default experiment; a second, the data
/// delivered over time, for a point with moving nodes) as a count. The
/// Parquet and SVG twins of each CSV and PNG are mentioned, not listed.
fn written(files: &[PathBuf], dir: &Path, verbose: bool) -> String {
    let is = |p: &PathBuf, ext: &str| p.extension().is_some_and(|x| x == ext);
    let twin = |p: &PathBuf, ext: &str| {
        if files.contains(&p.with_extension(ext)) {
            format!("   (and .{ext})")
        } else {
            String::new()
        }
    };
    let mut lines = Vec::new();
    for p in files.iter().filter(|p| !is(p, "png") && !is(p, "svg") && !is(p, "parquet")) {
        let note = match p.file_name().and_then(|n| n.to_str()) {
            Some("summary.txt") if !verbose => "   (with the diagnostic tables; --verbose prints them)".to_string(),
            Some(n) if n.ends_with(".csv") => twin(p, "parquet"),
            _ => String::new(),
        };
        lines.push(format!("  {}{note}", p.display()));
    }
    let pngs = files.iter().filter(|p| is(p, "png"));
    let (traces, summary): (Vec<&PathBuf>, Vec<&PathBuf>) =
        pngs.partition(|p| meshbed_experiment::figures::is_trace_figure(p));
    lines.extend(summary.iter().map(|p| format!("  {}{}", p.display(), twin(p, "svg"))));
    if !traces.is_empty() {
        lines.push(format!("  {} trace figures (per traced point, PNG and SVG) in {}/", traces.len(), dir.display()));
    }
    lines.join("\n") + "\n"
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

/// Runs a scenario with the recorder on (a progress bar as [`simulate`])
/// and writes the page that plays it back to `page`, titled after `file`.
fn simulate_to_page(s: &Scenario, progress: bool, file: Option<&Path>, page: &Path) -> Result<meshbed_sim::SimReport> {
    let bar =
        meshbed_experiment::run::progress_bar(progress, s.duration_s.ceil() as u64, "simulated s", "simulating".into());
    let mut tick = |now: meshbed_core::Instant| bar.set_position(now.as_secs_f64() as u64);
    let sim = meshbed_sim::Sim::new(s).map_err(|e| match file {
        Some(path) => e.in_file(&path.display().to_string()),
        None => e,
    })?;
    let (report, recording) = sim.run_recorded(&mut tick);
    bar.finish_and_clear();
    let title =
        file.and_then(Path::file_name).map_or_else(|| "built-in default scenario".into(), |n| n.to_string_lossy());
    let html = meshbed_view::page(&title, s, &report, &recording);
    std::fs::write(page, &html)
        .with_context(|| format!("{}: expected a file that can be created and written to", page.display()))?;
    eprintln!("wrote {} ({} kB): open it in a web browser", page.display(), html.len().div_ceil(1000));
    Ok(report)
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
                cli.verbose,
            )
        }
        Some(Command::Experiment { command }) => match command {
            ExperimentCommand::List => {
                let mut s = String::new();
                let width = builtin::NAMES.iter().map(|n| n.len()).max().unwrap_or(0);
                for name in builtin::NAMES {
                    let e = builtin::get(name).expect("listed");
                    s.push_str(&format!("{name:<width$}  {}\n", e.config.description));
                }
                out(&s)
            }
            ExperimentCommand::Show { name } => {
                let e = builtin::get(&name).with_context(|| {
                    format!("unknown built-in experiment `{name}`; expected one of: {}", builtin::NAMES.join(", "))
                })?;
                out(&e.to_toml())
            }
            ExperimentCommand::Run {
                experiment,
                repetitions,
                out: dir,
                jobs,
                backend,
                no_relays,
                force,
                store,
                no_store,
                verbose,
            } => {
                anyhow::ensure!(
                    !no_relays || backend == "emu",
                    "--no-relays: only with --backend emu (the simulator's relays forward at once; \
                     [flows.tcp] relay_forwarding_delay_s sets a delay there)"
                );
                let runner: std::sync::Arc<dyn meshbed_experiment::Runner> = match backend.as_str() {
                    "emu" => std::sync::Arc::new(emu_runner::EmuRunner {
                        daemon_exe: std::env::current_exe().ok(),
                        relays: !no_relays,
                    }),
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
                run_experiment(&e, dir, options, store, verbose)
            }
        },
        Some(Command::Sim { scenario, json, seed, pcap, html }) => {
            let mut s = match &scenario {
                Some(path) => Scenario::from_file(path)?,
                None => Scenario::builtin_default(),
            };
            if let Some(seed) = seed {
                s.seed = seed;
            }
            // A --seed can change the links (shadowing): errors name the file too.
            let progress = !json && stderr_is_terminal();
            let report = match &html {
                Some(page) => simulate_to_page(&s, progress, scenario.as_deref(), page)?,
                None => simulate(&s, progress, pcap.as_deref(), scenario.as_deref())?,
            };
            if json {
                out(&(serde_json::to_string_pretty(&report).context("serialising the report")? + "\n"))
            } else {
                out(&report.to_table())
            }
        }
        Some(Command::View { scenario, seed, output }) => {
            let mut s = Scenario::from_file(&scenario)?;
            if let Some(seed) = seed {
                s.seed = seed;
            }
            let page = output.unwrap_or_else(|| {
                let stem = scenario.file_stem().map_or_else(|| "run".into(), |n| n.to_string_lossy().into_owned());
                PathBuf::from(stem + ".html")
            });
            simulate_to_page(&s, stderr_is_terminal(), Some(&scenario), &page).map(|_| ())
        }
        Some(Command::Scenario { command }) => reference::scenario(command),
        Some(Command::Completions { shell }) => reference::completions(shell),
        Some(Command::Man { dir }) => reference::man(dir.as_deref()),
        Some(Command::Bench { sim_seconds, repetitions, suite, only, baseline, json }) => {
            let longest = meshbed_sim::scenario::MAX_DURATION_S;
            anyhow::ensure!(
                sim_seconds > 0.0 && sim_seconds <= longest,
                "--sim-seconds {sim_seconds}: expected a positive number of simulated seconds, at most {longest}"
            );
            anyhow::ensure!(repetitions != Some(0), "--repetitions 0: expected at least one repetition");
            if suite {
                bench_suite::run(&only, repetitions.unwrap_or(1), baseline.as_deref(), json)
            } else {
                bench::run(sim_seconds, repetitions.unwrap_or(5), json)
            }
        }
        Some(Command::Send(args)) => {
            // What clap cannot check alone (FILE or --time), reported as clap reports.
            let plan = args.plan().unwrap_or_else(|(kind, message)| {
                let mut cli = <Cli as clap::CommandFactory>::command();
                cli.build();
                let send = cli.find_subcommand_mut("send").expect("the send subcommand").clone();
                send.bin_name("meshbed send").error(kind, message).exit()
            });
            transfer::run_send(args, plan)
        }
        Some(Command::Recv(args)) => recv::run_recv(args),
        Some(Command::Keygen { file }) => {
            meshbed_net::auth::Psk::generate_file(&file).map_err(|e| anyhow::anyhow!("keygen: {e}"))?;
            eprintln!("wrote a new key to {} (mode 0600): give both ends `--psk {}`", file.display(), file.display());
            Ok(())
        }
        Some(Command::Emu(args)) => emu::run(args),
        Some(Command::Relay(args)) => emu::relay(args),
        Some(Command::Routed(args)) => routed::run(args),
        Some(Command::BenchTransfer { size_mib, protocols, atp_min_delay, psk, repeat, peers, json }) => {
            if let Some(peers) = peers {
                if atp_min_delay.is_some() || psk || repeat > 1 {
                    anyhow::bail!(
                        "--peers {peers} with --atp-min-delay, --psk or --repeat: expected --peers with --size-mib, --protocols and --json only"
                    );
                }
                return bench_peers::run_soak(&protocols, peers, size_mib, json);
            }
            let plan =
                bench_transfer::BenchPlan { size_mib, protocols: &protocols, atp_min_delay, compare_psk: psk, repeat };
            bench_transfer::run_bench(&plan, json)
        }
    }
}
