//! The nodes' routing daemons (`meshbed routed`, [`meshbed_routed`]): one
//! per node, started with the scenario's `[routing]` and seed, fed the
//! medium's link-layer feedback ([`crate::linkfeed`]), and stopped before
//! the namespaces go so that their counters can be read.

use crate::linkfeed::LinkFeedExport;
use crate::plumbing::{node_addr, EmuError, Emulation, NodeRouting, Result};
use crate::realtime::MediumLoop;
use crate::sys;
use meshbed_radio::NodeId;
use meshbed_routed::RoutedConfig;
use meshbed_sim::net_stats::NetCounters;
use meshbed_sim::routing::RouteTable;
use meshbed_sim::scenario::Routing;
use meshbed_sim::Scenario;
use std::path::{Path, PathBuf};

/// Where node `node`'s daemon listens for the node's transports.
pub fn notice_socket(dir: &Path, node: NodeId) -> PathBuf {
    dir.join(format!("n{node}")).join("routed.sock")
}

fn report_path(dir: &Path, node: NodeId) -> PathBuf {
    dir.join(format!("n{node}")).join("routed.json")
}

/// What one daemon reported when it stopped.
#[derive(Clone, Debug)]
pub struct RouterReport {
    /// The simulator's network-layer counters of the node.
    pub net: NetCounters,
    /// Each completed discovery's time, ms.
    pub discovery_times_ms: Vec<f64>,
    /// The whole report, as the daemon wrote it.
    pub json: serde_json::Value,
}

/// Starts the routing daemons of a scenario whose routing is dynamic
/// (nothing otherwise): the medium sends them its link feed, queues their
/// control packets ahead of data when `control_priority` asks for it, and
/// each node's daemon gets its node's data rate as bandwidth.
pub fn start_routing(
    emulation: &mut Emulation,
    medium_loop: &mut MediumLoop,
    scenario: &Scenario,
    exe: &Path,
) -> Result<()> {
    if !scenario.routing.is_dynamic() {
        return Ok(());
    }
    medium_loop.feed_links_to(&emulation.dir()).map_err(|err| EmuError::Io { what: "the link feed".into(), err })?;
    if let (true, Some(port)) = (scenario.routing.control_priority(), meshbed_routed::control_port(&scenario.routing)) {
        medium_loop.prioritise_udp_ports(&[port]);
    }
    let medium = medium_loop.medium();
    let rates = (0..medium.node_count() as NodeId).map(|n| u64::from(medium.data_rate_kbps(n)) * 1000).collect();
    emulation.start_routers(exe, &scenario.routing, scenario.seed, rates)
}

impl<'a> NodeRouting<'a> {
    /// Daemons for dynamic routing, else the static table `routes`.
    pub fn for_scenario(scenario: &Scenario, routes: &'a RouteTable) -> Self {
        if scenario.routing.is_dynamic() {
            NodeRouting::Daemons
        } else {
            NodeRouting::Static(routes)
        }
    }
}

/// Babel's configuration for every node: the mesh's IPv4 addresses (each
/// node's /32) announced, nothing else, over `mesh0` as a wireless link
/// (RFC 8966 §A.2.2's ETX-like cost, since `type wireless` uses link
/// quality).
fn babeld_conf(prefix: std::net::Ipv4Addr, len: u8) -> String {
    format!(
        "# meshbed: babeld as an independent reference routing daemon\n\
         interface mesh0 type wireless\n\
         redistribute local ip {prefix}/{len} ge 32 allow\n\
         redistribute local deny\n\
         redistribute deny\n"
    )
}

impl Emulation {
    /// Starts Debian's `babeld` in every node (created with
    /// [`NodeRouting::External`]) as an independent reference for meshbed's
    /// own daemons, and waits until each has written its pid file.
    pub fn start_babeld(&mut self) -> Result<()> {
        let dir = self.dir();
        let n = self.state.nodes.len() as NodeId;
        let addrs: Vec<_> = (0..n).map(node_addr).collect();
        let (prefix, len) = meshbed_routed::kernel::covering_prefix(&addrs);
        let conf = dir.join("babeld.conf");
        std::fs::write(&conf, babeld_conf(prefix, len))
            .map_err(|err| EmuError::Io { what: format!("writing {}", conf.display()), err })?;
        let babeld = Path::new("/usr/sbin/babeld");
        if !babeld.exists() {
            return Err(EmuError::Other("babeld is not installed (Debian: apt-get install babeld)".into()));
        }
        for node in 0..n {
            let nd = dir.join(format!("n{node}"));
            std::fs::create_dir_all(&nd)
                .map_err(|err| EmuError::Io { what: format!("creating {}", nd.display()), err })?;
            let args: Vec<String> = vec![
                "-c".into(),
                conf.display().to_string(),
                "-I".into(),
                nd.join("babeld.pid").display().to_string(),
                "-S".into(),
                nd.join("babeld.state").display().to_string(),
                "-d".into(),
                "0".into(),
            ];
            self.spawn_in(node, babeld, &args)?;
        }
        let t0 = std::time::Instant::now();
        for node in 0..n {
            let pid = dir.join(format!("n{node}")).join("babeld.pid");
            while !pid.exists() {
                if t0.elapsed() > std::time::Duration::from_secs(10) || sys::stop_requested() {
                    let log =
                        std::fs::read_to_string(dir.join(format!("n{node}")).join("spawned.log")).unwrap_or_default();
                    return Err(EmuError::Other(format!("babeld in node {node} did not start: {}", log.trim())));
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
        Ok(())
    }

    /// Starts `EXE routed` in every node with `routing` and `seed` (each
    /// node's bandwidth from `link_rate_bps`), and waits until every one
    /// has its sockets, routes and rules in place.
    pub fn start_routers(&mut self, exe: &Path, routing: &Routing, seed: u64, link_rate_bps: Vec<u64>) -> Result<()> {
        let dir = self.dir();
        let n = self.state.nodes.len() as NodeId;
        let config =
            RoutedConfig { seed, addresses: (0..n).map(node_addr).collect(), link_rate_bps, routing: routing.clone() };
        let config_path = dir.join("routed.toml");
        let text = toml::to_string(&config).map_err(|e| EmuError::Other(format!("writing routed.toml: {e}")))?;
        std::fs::write(&config_path, text)
            .map_err(|err| EmuError::Io { what: format!("writing {}", config_path.display()), err })?;
        for node in 0..n {
            let nd = dir.join(format!("n{node}"));
            std::fs::create_dir_all(&nd)
                .map_err(|err| EmuError::Io { what: format!("creating {}", nd.display()), err })?;
            let args: Vec<String> = vec![
                "routed".into(),
                "--config".into(),
                config_path.display().to_string(),
                "--node".into(),
                node.to_string(),
                "--link-feed".into(),
                LinkFeedExport::path(&dir, node).display().to_string(),
                "--notice-socket".into(),
                notice_socket(&dir, node).display().to_string(),
                "--report".into(),
                report_path(&dir, node).display().to_string(),
                "--ready-file".into(),
                nd.join("routed.ready").display().to_string(),
            ];
            self.spawn_in(node, exe, &args)?;
            self.routers.push(self.children.len() - 1);
        }
        let t0 = std::time::Instant::now();
        for node in 0..n {
            let ready = dir.join(format!("n{node}")).join("routed.ready");
            while !ready.exists() {
                let exited = self.routers.iter().any(|&i| matches!(self.children[i].try_wait(), Ok(Some(_))));
                if exited || t0.elapsed() > std::time::Duration::from_secs(20) || sys::stop_requested() {
                    let log =
                        std::fs::read_to_string(dir.join(format!("n{node}")).join("spawned.log")).unwrap_or_default();
                    return Err(EmuError::Other(format!(
                        "the routing daemon in node {node} did not start (needs iptables and the nfnetlink_queue module): {}",
                        log.trim()
                    )));
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
        Ok(())
    }

    /// Stops the routing daemons (each removes its routes and rules and
    /// writes its counters) and returns what each reported, in node order
    /// (`None` for a daemon that wrote nothing).
    pub fn stop_routers(&mut self) -> Vec<Option<RouterReport>> {
        let dir = self.dir();
        for &i in &self.routers {
            sys::signal(self.children[i].id(), libc::SIGTERM);
        }
        let t0 = std::time::Instant::now();
        for &i in &self.routers {
            while t0.elapsed() < std::time::Duration::from_secs(5) {
                if let Ok(Some(_)) = self.children[i].try_wait() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
        let reports = (0..self.routers.len() as NodeId)
            .map(|node| {
                let text = std::fs::read_to_string(report_path(&dir, node)).ok()?;
                let json: serde_json::Value = serde_json::from_str(&text).ok()?;
                let net = serde_json::from_value(json.get("net")?.clone()).ok()?;
                let discovery_times_ms = serde_json::from_value(json.get("discovery_times_ms")?.clone()).ok()?;
                Some(RouterReport { net, discovery_times_ms, json })
            })
            .collect();
        self.routers.clear();
        reports
    }
}
