//! `meshbed routed`: a node's routing daemon (meshbed_routed).

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use meshbed_routed::LinkFeedSource;
use meshbed_sim::scenario::{Routing, Scenario};
use std::net::Ipv4Addr;
use std::path::PathBuf;

/// The protocol, when no scenario gives it.
#[derive(Copy, Clone, Debug, ValueEnum)]
pub enum RoutedProtocol {
    Aodv,
    Olsr,
    OlsrEtx,
}

#[derive(Args)]
pub struct RoutedArgs {
    /// The mesh's routing configuration (TOML: seed, addresses, link_rate_bps, [routing]); the emulator writes one for its nodes.
    #[arg(long, conflicts_with_all = ["scenario", "protocol"])]
    config: Option<PathBuf>,
    /// The scenario whose `[routing]` this node runs (its seed seeds the engine, as in the simulator).
    #[arg(long, conflicts_with = "protocol")]
    scenario: Option<PathBuf>,
    /// Without a configuration or scenario: the protocol, with its defaults.
    #[arg(long, value_enum, required_unless_present_any = ["scenario", "config"])]
    protocol: Option<RoutedProtocol>,
    /// This node's index (default: $MESHBED_NODE, set inside an emulated node).
    #[arg(long)]
    node: Option<u32>,
    /// Every node's IPv4 address, in node order (default with --scenario: the emulator's address plan).
    #[arg(long, value_delimiter = ',')]
    addresses: Vec<Ipv4Addr>,
    /// The mesh interface.
    #[arg(long, default_value = "mesh0")]
    interface: String,
    /// The Unix datagram socket to bind for the radio's link-layer feedback (the emulator's medium sends it).
    #[arg(long, conflicts_with = "host_link_feed")]
    link_feed: Option<PathBuf>,
    /// On a real host: read link-layer feedback from the kernel instead — a neighbour whose ARP resolution fails (NUD_FAILED) is a link break; on a Wi-Fi interface, nl80211 station statistics too (each station's signal, and a rise of its retry-limit failures, dumped every --station-dump-ms). Allows AODV's ss_threshold_dbm, applied to the nl80211 signal.
    #[arg(long)]
    host_link_feed: bool,
    /// With --host-link-feed: milliseconds between nl80211 station dumps [default: 200].
    #[arg(long, requires = "host_link_feed")]
    station_dump_ms: Option<u64>,
    /// The Unix socket on which transports on this node (`meshbed send/recv --routed`) get route notices and path information.
    #[arg(long)]
    notice_socket: Option<PathBuf>,
    /// The NFQUEUE number of AODV's data path.
    #[arg(long, default_value_t = 1)]
    queue: u16,
    /// The interface's bandwidth for MTL's path information (default with --scenario: the node's data rate).
    #[arg(long)]
    link_rate_bps: Option<u64>,
    /// The engine's seed (default: the scenario's, or 1).
    #[arg(long)]
    seed: Option<u64>,
    /// A file written once the daemon is ready.
    #[arg(long)]
    ready_file: Option<PathBuf>,
    /// Where the counters go as JSON: at exit and on SIGUSR1.
    #[arg(long)]
    report: Option<PathBuf>,
}

pub fn run(a: RoutedArgs) -> Result<()> {
    let node = match a.node {
        Some(n) => n,
        None => std::env::var("MESHBED_NODE")
            .ok()
            .and_then(|v| v.parse().ok())
            .context("no --node and no $MESHBED_NODE (run it inside an emulated node, or give --node)")?,
    };
    let config = match (&a.config, &a.scenario, a.protocol) {
        (Some(path), _, _) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            toml::from_str::<meshbed_routed::RoutedConfig>(&text).with_context(|| format!("{}", path.display()))?
        }
        (None, Some(path), _) => {
            let s = Scenario::from_file(path)?;
            let n = s.node_count();
            anyhow::ensure!(node < n, "--node {node}: expected a node of {} ({n} nodes)", path.display());
            let addresses = if a.addresses.is_empty() {
                (0..n).map(meshbed_emu::plumbing::node_addr).collect()
            } else {
                a.addresses
            };
            let link_rate_bps =
                (0..n).map(|i| a.link_rate_bps.unwrap_or(u64::from(s.data_rate_kbps(i)) * 1000)).collect();
            meshbed_routed::RoutedConfig {
                seed: a.seed.unwrap_or(s.seed),
                addresses,
                link_rate_bps,
                routing: s.routing.clone(),
            }
        }
        (None, None, Some(p)) => {
            anyhow::ensure!(
                !a.addresses.is_empty(),
                "--addresses: expected every node's address when no --scenario gives them"
            );
            let rate = a
                .link_rate_bps
                .context("--link-rate-bps: expected the interface's bandwidth when no --scenario gives it")?;
            let routing = match p {
                RoutedProtocol::Aodv => Routing::aodv(None),
                RoutedProtocol::Olsr => Routing::olsr(false),
                RoutedProtocol::OlsrEtx => Routing::olsr(true),
            };
            let link_rate_bps = vec![rate; a.addresses.len()];
            meshbed_routed::RoutedConfig { seed: a.seed.unwrap_or(1), addresses: a.addresses, link_rate_bps, routing }
        }
        (None, None, None) => unreachable!("clap requires one"),
    };
    let file = a.config.as_ref().or(a.scenario.as_ref()).map(|p| format!("{}: ", p.display())).unwrap_or_default();
    let mut options = config.options(node, &a.interface).map_err(|e| anyhow::anyhow!("{file}{e}"))?;
    options.link_feed = match (a.link_feed, a.host_link_feed) {
        (Some(path), _) => LinkFeedSource::Socket(path),
        (None, true) => match a.station_dump_ms {
            Some(ms) => LinkFeedSource::Host { station_interval: std::time::Duration::from_millis(ms) },
            None => LinkFeedSource::host(),
        },
        (None, false) => LinkFeedSource::None,
    };
    options.notice_socket = a.notice_socket;
    options.queue_num = a.queue;
    options.check().map_err(|e| anyhow::anyhow!("{file}{e}"))?;
    let flags = meshbed_routed::daemon::Flags::from_signals().context("installing the signal handlers")?;
    let ready_file = a.ready_file.clone();
    let report_path = a.report.clone();
    let mut write_report = |r: &meshbed_routed::report::RoutedReport| {
        if let Some(p) = &report_path {
            if let Ok(json) = serde_json::to_string_pretty(r) {
                // Written whole, then renamed: a reader never sees half.
                let tmp = p.with_extension("json.tmp");
                if std::fs::write(&tmp, json).is_ok() {
                    let _ = std::fs::rename(&tmp, p);
                }
            }
        }
    };
    let report = meshbed_routed::run(
        &options,
        &flags,
        || {
            if let Some(p) = &ready_file {
                let _ = std::fs::write(p, "ready\n");
            }
        },
        &mut write_report,
    )
    .context("the routing daemon (needs root, iptables and the nfnetlink_queue module)")?;
    eprintln!(
        "meshbed routed: node {} ({}), {} control packets sent, {} discoveries ({} completed), {} route changes",
        report.node,
        report.protocol,
        report.net.control_packets_sent,
        report.engine.route_discoveries,
        report.net.discoveries.completed,
        report.net.route_changes
    );
    Ok(())
}
