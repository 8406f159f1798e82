//! `meshbed emu ...` (the real-time namespace emulator) and `meshbed relay`
//! (the delay-collection daemon that runs inside a node).

use crate::out;
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use meshbed_core::Duration;
use meshbed_emu::plumbing::{self, find_running, node_env, EmuState};
use meshbed_emu::realtime::{MediumLoop, TapBackend};
use meshbed_emu::relay::RelayOptions;
use meshbed_emu::traffic::{self, EmuOptions};
use meshbed_emu::{sys, Emulation};
use meshbed_proto::relay::EtaRule;
use meshbed_radio::NodeId;
use meshbed_sim::Scenario;
use std::path::PathBuf;

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct EmuArgs {
    #[command(subcommand)]
    command: Option<EmuCommand>,
    /// Scenario file (TOML, the simulator's format): builds a namespace per
    /// node and runs the medium in the foreground until Ctrl-C.
    #[arg(required = true)]
    scenario: Option<PathBuf>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Args, Clone)]
struct RunArgs {
    /// Stop after this long, with its unit, e.g. 30s or 2min (default: until Ctrl-C).
    #[arg(long, value_parser = crate::transfer::parse_positive_duration)]
    duration: Option<std::time::Duration>,
    /// Do not start `meshbed relay` in the nodes.
    #[arg(long)]
    no_relays: bool,
    /// Route with Debian's babeld in every node instead (an independent reference; the scenario's routing must be shortest-path or static, which it replaces).
    #[arg(long)]
    babeld: bool,
    /// Write what the radio carried into DIR, one pcap per node (`n<i>.pcap`, 802.11 with radiotap, the model's time).
    #[arg(long, value_name = "DIR")]
    pcap: Option<PathBuf>,
    #[command(flatten)]
    medium: MediumArgs,
}

/// How the medium runs and reports, for every command that runs one.
#[derive(Args, Clone)]
struct MediumArgs {
    /// Spin instead of sleeping for waits shorter than this many µs (costs a core; lowers the timing error).
    #[arg(long, default_value_t = 0)]
    spin_us: u64,
    /// Do not raise the medium to real-time priority (SCHED_FIFO).
    #[arg(long)]
    no_rt: bool,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

impl MediumArgs {
    fn options(&self, relay_exe: Option<PathBuf>) -> EmuOptions {
        EmuOptions {
            daemon_exe: relay_exe,
            spin: Duration::from_micros(self.spin_us),
            realtime: !self.no_rt,
            relays: true,
        }
    }
}

#[derive(Subcommand)]
enum EmuCommand {
    /// Run a program inside a node of a running emulation: `meshbed emu exec 0 -- ping 10.0.0.4`.
    Exec {
        /// Which emulation (see `meshbed emu list`); needed when several run.
        #[arg(long)]
        emu: Option<String>,
        /// The node's index.
        node: NodeId,
        /// The program and its arguments.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Remove what crashed emulations left behind (namespaces, their processes and rules, state).
    Clean {
        /// Only this emulation.
        #[arg(long)]
        emu: Option<String>,
        /// Also stop running emulations.
        #[arg(long)]
        all: bool,
    },
    /// List emulations: id, state, nodes with their namespaces and addresses.
    List,
    /// Run a scenario's flows on the emulator (UDP saturated/CBR, transport flows with `bytes` as verified transfers, and kernel TCP flows with their congestion control) and report like `meshbed sim`.
    Run {
        scenario: PathBuf,
        /// Do not start `meshbed relay` in the nodes: forwarded datagrams
        /// cross the kernel alone, as kernel TCP's do (ATP flows, which need
        /// the relays' stamping, are refused).
        #[arg(long)]
        no_relays: bool,
        #[command(flatten)]
        medium: MediumArgs,
    },
    /// Emulated vs simulated goodput on the 6-hop 24 Mbit/s chain, timing error, and the frame rate sustained in real time.
    Bench {
        /// Wall-clock seconds per run.
        #[arg(long, default_value_t = 10.0)]
        seconds: f64,
        #[command(flatten)]
        medium: MediumArgs,
    },
}

#[derive(Args)]
pub struct RelayArgs {
    /// The node's delay file, µs (default: $MESHBED_DELAY_FILE, set by `meshbed emu exec`).
    #[arg(long)]
    delay_file: Option<PathBuf>,
    /// NFQUEUE number.
    #[arg(long, default_value_t = 0)]
    queue: u16,
    /// Idle multiplier η: `auto` (each flow's ATP preset, named by its connection id: adaptive ATP's η = 3 + 0.5·(h − 1) from the datagram's hop count, seed 000 §V.A.3, else 3, seed 002 §4.1), `adaptive` (the per-hop rule for every flow) or a fixed number ≥ 1.
    #[arg(long, default_value = "auto", value_parser = meshbed_emu::relay::parse_eta)]
    eta: EtaRule,
    /// Observe ATP data delivered to this node (INPUT) instead of stamping forwarded packets.
    #[arg(long)]
    observe: bool,
    /// Write the counters as JSON here on exit.
    #[arg(long)]
    report: Option<PathBuf>,
    /// Create this file once the queue and the iptables rule are in place.
    #[arg(long)]
    ready_file: Option<PathBuf>,
}

fn parse_id(s: &Option<String>) -> Result<Option<u16>> {
    s.as_deref()
        .map(|s| u16::from_str_radix(s, 16).with_context(|| format!("--emu {s}: expected a 4-digit hex id")))
        .transpose()
}

pub fn run(args: EmuArgs) -> Result<()> {
    match args.command {
        None => foreground(&args.scenario.expect("required"), &args.run),
        Some(EmuCommand::Exec { emu, node, command }) => exec(parse_id(&emu)?, node, &command),
        Some(EmuCommand::Clean { emu, all }) => {
            let c = meshbed_emu::clean(parse_id(&emu)?, all)?;
            let mut s = String::new();
            for id in &c.emulations {
                s += &format!("removed emulation {id:04x}\n");
            }
            for ns in &c.namespaces {
                s += &format!("removed namespace {ns}\n");
            }
            for id in &c.running {
                s += &format!("left running emulation {id:04x} (use --all to stop it)\n");
            }
            if s.is_empty() {
                s = "nothing to clean\n".into();
            }
            out(&s)
        }
        Some(EmuCommand::List) => {
            let mut s = String::new();
            for e in plumbing::list() {
                s += &format!(
                    "{:04x}  {}  pid {}\n",
                    e.id,
                    if e.alive() { "running" } else { "dead (meshbed emu clean)" },
                    e.pid
                );
                for (i, n) in e.nodes.iter().enumerate() {
                    s += &format!("  node {i}: {}  {}  {}\n", n.netns, n.addr, n.mac);
                }
            }
            out(if s.is_empty() { "no emulations\n" } else { &s })
        }
        Some(EmuCommand::Run { scenario, no_relays, medium }) => {
            let s = Scenario::from_file(&scenario)?;
            sys::install_stop_handlers();
            let options = EmuOptions { relays: !no_relays, ..medium.options(Some(relay_exe()?)) };
            let report = traffic::run_scenario(&s, &options)?;
            if medium.json {
                out(&(serde_json::to_string_pretty(&report)? + "\n"))
            } else {
                out(&report.to_table())
            }
        }
        Some(EmuCommand::Bench { seconds, medium }) => {
            anyhow::ensure!(seconds > 0.0 && seconds.is_finite(), "--seconds {seconds}: expected a positive number");
            sys::install_stop_handlers();
            let rows = traffic::bench(seconds, &medium.options(None))?;
            let spin_us = medium.spin_us;
            if medium.json {
                return out(&(serde_json::to_string_pretty(&rows)? + "\n"));
            }
            let mut s = format!(
                "{seconds} s per run, spin {spin_us} µs\n{:<46} {:>10} {:>10} {:>7} {:>9} {:>9} {:>22} {:>22}\n",
                "workload",
                "sim kb/s",
                "emu kb/s",
                "error",
                "sim fr/s",
                "emu fr/s",
                "delivery late p50/p99",
                "event late p50/p99"
            );
            for r in &rows {
                s += &format!(
                    "{:<46} {:>10.0} {:>10.0} {:>6.1}% {:>9.0} {:>9.0} {:>12.0}/{:<6.0} µs {:>12.0}/{:<6.0} µs\n",
                    r.workload,
                    r.sim_goodput_kbps,
                    r.emu_goodput_kbps,
                    r.goodput_error * 100.0,
                    r.sim_frames_per_s,
                    r.emu_frames_per_s,
                    r.delivery_lateness.p50_us,
                    r.delivery_lateness.p99_us,
                    r.event_lateness.p50_us,
                    r.event_lateness.p99_us
                );
            }
            out(&s)
        }
    }
}

/// The `meshbed` binary, to start relays with.
fn relay_exe() -> Result<PathBuf> {
    std::env::current_exe().context("finding the meshbed binary")
}

fn foreground(path: &std::path::Path, a: &RunArgs) -> Result<()> {
    let scenario = Scenario::from_file(path)?;
    sys::install_stop_handlers();
    // Programs run in this network, not the file's flows: only the network
    // itself must be what the file says.
    let (medium, routes) = traffic::build_medium(&scenario, false)?;
    let pcap_error = |dir: &std::path::Path| {
        format!("--pcap {}: expected a directory that can be created and written to", dir.display())
    };
    if let Some(dir) = &a.pcap {
        std::fs::create_dir_all(dir).with_context(|| pcap_error(dir))?;
    }
    let node_routing = if a.babeld {
        anyhow::ensure!(
            !scenario.routing.is_dynamic(),
            "--babeld: {} has routing.kind = \"{}\"; babeld replaces the scenario's routes, so give a scenario with kind = \"shortest-path\" (the default)",
            path.display(),
            scenario.routing.kind_name()
        );
        meshbed_emu::NodeRouting::External
    } else {
        meshbed_emu::NodeRouting::for_scenario(&scenario, &routes)
    };
    let mut emulation = Emulation::create(&medium, node_routing)?;
    let mut medium_loop =
        MediumLoop::new(medium, emulation.id(), Some(emulation.dir())).context("writing the nodes' delay files")?;
    if let Some(dir) = &a.pcap {
        if let Err(e) = medium_loop.capture_to(dir) {
            emulation.teardown();
            return Err(e).with_context(|| pcap_error(dir));
        }
    }
    let mut backend = TapBackend::new(emulation.take_taps());
    backend.set_spin(Duration::from_micros(a.medium.spin_us));
    if !a.no_relays {
        emulation.start_relays(&relay_exe()?)?;
    }
    meshbed_emu::routers::start_routing(&mut emulation, &mut medium_loop, &scenario, &relay_exe()?)?;
    if a.babeld {
        emulation.start_babeld()?;
    }
    let mut s = format!(
        "emulation {:04x}: {} nodes, {} (seed {}); Ctrl-C to stop\n",
        emulation.id(),
        emulation.state.nodes.len(),
        path.display(),
        scenario.seed
    );
    for (i, n) in emulation.state.nodes.iter().enumerate() {
        s += &format!("  node {i}: {}  {}  delay {}\n", n.netns, n.addr, n.delay_file.display());
    }
    s += &format!("run programs in a node with `meshbed emu exec [--emu {:04x}] NODE -- CMD`\n", emulation.id());
    out(&s)?;
    if !a.medium.no_rt {
        // After the relays started, so they do not inherit it.
        let _ = sys::set_realtime_priority(10);
    }
    let until = a.duration.map(traffic::instant_from);
    let result = medium_loop.run(&mut backend, until, &sys::stop_requested);
    drop(backend);
    let routers = emulation.stop_routers();
    emulation.teardown();
    result.context("the medium loop")?;
    for (node, r) in routers.iter().enumerate() {
        match r {
            Some(r) => eprintln!(
                "node {node} routing: {} control packets ({} bytes) sent, {} discoveries completed ({} failed), {} route changes, {} lost",
                r.net.control_packets_sent,
                r.net.control_bytes_sent,
                r.net.discoveries.completed,
                r.net.discoveries.failed,
                r.net.route_changes,
                r.net.routes_lost
            ),
            None => eprintln!("node {node} routing: its daemon wrote no report"),
        }
    }
    let summary = medium_loop.stats.summary();
    if a.medium.json {
        out(&(serde_json::to_string_pretty(&summary)? + "\n"))
    } else {
        out(&format!(
            "emulation {:04x} ended after {:.1} s: {} radio events, {} frames in, {} delivered ({:.0}/s), {} MAC queue drops, {} retry drops\ntiming error: events p50 {:.0} µs p99 {:.0} µs; deliveries p50 {:.0} µs p99 {:.0} µs max {:.0} µs\n",
            emulation.id(),
            summary.elapsed_s,
            summary.counters.events,
            summary.counters.frames_in,
            summary.counters.frames_delivered,
            summary.delivered_frames_per_s,
            summary.counters.mac_queue_drops,
            summary.counters.mac_retry_drops,
            summary.event_lateness.p50_us,
            summary.event_lateness.p99_us,
            summary.delivery_lateness.p50_us,
            summary.delivery_lateness.p99_us,
            summary.delivery_lateness.max_us
        ))
    }
}

fn exec(id: Option<u16>, node: NodeId, command: &[String]) -> Result<()> {
    use std::os::unix::process::CommandExt;
    let state: EmuState = find_running(id)?;
    let n = state
        .nodes
        .get(node as usize)
        .with_context(|| format!("node {node}: emulation {:04x} has nodes 0 to {}", state.id, state.nodes.len() - 1))?;
    let mut cmd = std::process::Command::new("ip");
    cmd.args(["netns", "exec", &n.netns]).args(command);
    for (k, v) in node_env(&state, node) {
        cmd.env(k, v);
    }
    let err = cmd.exec();
    Err(err).context("running ip netns exec")
}

pub fn relay(a: RelayArgs) -> Result<()> {
    let delay_file = match a.delay_file {
        Some(p) => p,
        None => std::env::var_os("MESHBED_DELAY_FILE").map(PathBuf::from).context(
            "no --delay-file and no $MESHBED_DELAY_FILE (run it with `meshbed emu exec NODE -- meshbed relay`)",
        )?,
    };
    sys::install_stop_handlers();
    let mut options = RelayOptions::new(delay_file);
    options.queue_num = a.queue;
    options.eta = a.eta;
    options.observe = a.observe;
    let ready_file = a.ready_file.clone();
    let counters = meshbed_emu::relay::run(&options, || {
        if let Some(p) = &ready_file {
            let _ = std::fs::write(p, "ready\n");
        }
    })
    .context("the relay daemon (needs root, iptables and the nfnetlink_queue module)")?;
    let json = serde_json::to_string_pretty(&counters)?;
    if let Some(p) = &a.report {
        std::fs::write(p, &json).with_context(|| format!("writing {}", p.display()))?;
    }
    eprintln!(
        "meshbed relay: {} packets, {} stamped ({} raised D_max), {} passed",
        counters.packets, counters.stamped, counters.raised, counters.passed
    );
    Ok(())
}
