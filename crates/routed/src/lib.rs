#![forbid(unsafe_code)]
//! `meshbed routed`: a node's routing daemon. It drives the same sans-IO
//! routing engines the simulator drives ([`meshbed_routing`], built by the
//! one constructor [`meshbed_sim::scenario::Routing::engine`]) over real
//! sockets and the real clock, in an emulated node's namespace or on a
//! real mesh host:
//!
//! * [`control`]: the protocol's packets on its UDP port (AODV 654, OLSR
//!   698), broadcast or to one neighbour, IP TTL 1;
//! * [`kernel`]: the engine's routes mirrored into the kernel's table
//!   through netlink, removed at exit;
//! * [`queue`]: on-demand routing's data path — every data packet to a
//!   mesh address through an NFQUEUE, held in user space while a route is
//!   discovered (AODV-UU's design, seed 003 §3.3–3.4);
//! * link-layer feedback ([`meshbed_net::linkfeed`]) from the emulator's
//!   medium: frames heard with their power (seed 003 §3.2's signal filter)
//!   and retry-limit failures (link breaks); on a real host, the same
//!   records read from the kernel ([`hostfeed`]: neighbour reachability,
//!   nl80211 station statistics);
//! * [`notices`]: route notices and path information to the transports on
//!   the node ([`meshbed_net::notice`]; ELFN, seed 002 §4.3; MTL, seed 004
//!   §III.B);
//! * [`node`]: the engine and what carries out its requests; [`daemon`]:
//!   the event loop; [`report`]: the counters.
//!
//! DSR is not here: its data packets carry a source route the Linux
//! kernel neither reads nor forwards by (docs/PROTOCOLS.md), so it stays
//! in the simulator and [`RoutedOptions::check`] refuses it.

pub mod control;
pub mod daemon;
pub mod hostfeed;
pub mod kernel;
pub mod node;
pub mod notices;
pub mod queue;
pub mod report;

pub use daemon::{run, Flags};
pub use node::{NodeId, NodeMap};

use meshbed_core::InvalidValue;
use meshbed_sim::scenario::Routing;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// AODV's port (RFC 3561 §1).
pub const AODV_PORT: u16 = 654;
/// OLSR's port (RFC 3626 §3.1).
pub const OLSR_PORT: u16 = 698;

/// The UDP port of `routing`'s control packets; `None` for routing that
/// runs no daemon (static, shortest path) or cannot (DSR).
pub fn control_port(routing: &Routing) -> Option<u16> {
    match routing {
        Routing::Aodv { .. } => Some(AODV_PORT),
        Routing::Olsr { .. } => Some(OLSR_PORT),
        Routing::Dsr { .. } | Routing::ShortestPath | Routing::Static { .. } => None,
    }
}

/// Whether the daemon of `routing` holds the data path: on-demand routing
/// (AODV) takes every data packet to a mesh address through an NFQUEUE
/// ([`queue`]) and decides it, so the daemon sees (and counts) what it
/// forwards and drops; a proactive one (OLSR) installs routes and the
/// kernel forwards unseen.
pub fn holds_data_path(routing: &Routing) -> bool {
    matches!(routing, Routing::Aodv { .. })
}

/// Who counts the data packets of a mesh routed by `routing`'s daemons (or,
/// for routing that runs none, by the kernel's static routes).
pub fn data_path_counting(routing: &Routing) -> meshbed_sim::DataPathCounting {
    if holds_data_path(routing) {
        meshbed_sim::DataPathCounting::RoutingDaemons
    } else {
        meshbed_sim::DataPathCounting::Kernel
    }
}

/// Why DSR runs only in the simulator.
pub const DSR_REFUSAL: &str = "aodv or olsr: DSR's data packets carry a source route that the Linux kernel does not forward by, so DSR runs only in the simulator";

/// A mesh's routing as every daemon of it reads it (`meshbed routed
/// --config FILE`, TOML): what the emulator writes for its nodes, and what
/// an operator writes once for a real mesh.
///
/// ```toml
/// seed = 1
/// addresses = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
/// link_rate_bps = [11000000, 11000000, 11000000]
/// [routing]
/// kind = "olsr"
/// metric = "etx"
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutedConfig {
    /// The engines' seed: node i's engine draws from the simulator's
    /// stream of node i for this seed.
    pub seed: u64,
    /// Every node's address, in node order.
    pub addresses: Vec<std::net::Ipv4Addr>,
    /// Each node's interface bandwidth (MTL's b, seed 004 eqs. 7–8).
    pub link_rate_bps: Vec<u64>,
    /// The scenario's `[routing]` table.
    pub routing: Routing,
}

impl RoutedConfig {
    /// The options of node `node` of this mesh.
    pub fn options(&self, node: NodeId, ifname: &str) -> Result<RoutedOptions, InvalidValue> {
        if self.link_rate_bps.len() != self.addresses.len() {
            return Err(InvalidValue::new(
                "link_rate_bps",
                format!("({} values)", self.link_rate_bps.len()),
                format!("one bandwidth per address ({})", self.addresses.len()),
            ));
        }
        let link_rate_bps = *self.link_rate_bps.get(node as usize).ok_or_else(|| {
            InvalidValue::new("--node", node, format!("a node of the {} addresses", self.addresses.len()))
        })?;
        let options = RoutedOptions {
            routing: self.routing.clone(),
            seed: self.seed,
            node,
            nodes: NodeMap::new(self.addresses.clone()),
            ifname: ifname.to_string(),
            link_feed: LinkFeedSource::None,
            notice_socket: None,
            queue_num: 1,
            link_rate_bps,
        };
        Ok(options)
    }
}

/// Where a daemon's link-layer feedback comes from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum LinkFeedSource {
    /// Nowhere: links break when HELLOs go missing.
    #[default]
    None,
    /// The emulator's medium, on the Unix datagram socket bound at this
    /// path (`--link-feed PATH`).
    Socket(PathBuf),
    /// The host's kernel (`--host-link-feed`, [`hostfeed`]): neighbour
    /// reachability, and on a Wi-Fi interface nl80211 station statistics
    /// dumped every `station_interval`.
    Host { station_interval: Duration },
}

impl LinkFeedSource {
    /// The host's feed with its default dump interval.
    pub fn host() -> Self {
        LinkFeedSource::Host { station_interval: hostfeed::DEFAULT_STATION_INTERVAL }
    }
}

/// How one daemon runs.
#[derive(Clone, Debug)]
pub struct RoutedOptions {
    /// The scenario's `[routing]`.
    pub routing: Routing,
    /// The run's seed: the engine's random stream is the simulator's for
    /// the same node and seed.
    pub seed: u64,
    pub node: NodeId,
    pub nodes: NodeMap,
    /// The mesh interface.
    pub ifname: String,
    /// Where the radio's link feed comes from.
    pub link_feed: LinkFeedSource,
    /// The Unix stream socket to listen on for the node's transports.
    pub notice_socket: Option<PathBuf>,
    /// The NFQUEUE number of on-demand routing's data path.
    pub queue_num: u16,
    /// The interface's bandwidth, for MTL's path information.
    pub link_rate_bps: u64,
}

impl RoutedOptions {
    /// Refuses what the daemon cannot run as asked, naming the key.
    pub fn check(&self) -> Result<(), InvalidValue> {
        match &self.routing {
            Routing::Dsr { .. } => return Err(InvalidValue::new("routing.kind", "\"dsr\"", DSR_REFUSAL)),
            Routing::ShortestPath | Routing::Static { .. } => {
                return Err(InvalidValue::new(
                    "routing.kind",
                    format!("\"{}\"", self.routing.kind_name()),
                    "aodv or olsr: static routes need no daemon",
                ))
            }
            Routing::Aodv { ss_threshold_dbm: Some(t), .. } if self.link_feed == LinkFeedSource::None => {
                return Err(InvalidValue::new(
                    "routing.ss_threshold_dbm",
                    t,
                    "no threshold without a link feed (--link-feed or --host-link-feed): nothing reports signal strength here",
                ))
            }
            _ => {}
        }
        if let LinkFeedSource::Host { station_interval } = self.link_feed {
            if station_interval.is_zero() {
                return Err(InvalidValue::new("--station-dump-ms", 0, "a positive interval"));
            }
        }
        if self.nodes.addr(self.node).is_none() {
            return Err(InvalidValue::new(
                "--node",
                self.node,
                format!("a node of the mesh's {} addresses", self.nodes.addrs().len()),
            ));
        }
        Ok(())
    }

    /// The protocol as the report names it.
    pub fn protocol_name(&self) -> String {
        match &self.routing {
            Routing::Olsr { etx: true, .. } => "olsr-etx".into(),
            r => r.kind_name().into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(routing: Routing, link_feed: LinkFeedSource) -> RoutedOptions {
        let config = RoutedConfig {
            seed: 1,
            addresses: vec!["10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap()],
            link_rate_bps: vec![11_000_000; 2],
            routing,
        };
        RoutedOptions { link_feed, ..config.options(0, "mesh0").unwrap() }
    }

    #[test]
    fn a_signal_threshold_needs_a_feed_that_can_report_signal() {
        let threshold = Routing::aodv(Some(-80.0));
        let err = options(threshold.clone(), LinkFeedSource::None).check().unwrap_err();
        assert_eq!(err.key, "routing.ss_threshold_dbm");
        assert!(err.expected.contains("--host-link-feed"), "{err}");
        options(threshold.clone(), LinkFeedSource::Socket("/run/feed".into())).check().unwrap();
        options(threshold, LinkFeedSource::host()).check().unwrap();
        options(Routing::aodv(None), LinkFeedSource::None).check().unwrap();
    }

    #[test]
    fn the_station_interval_must_be_positive() {
        let at = |ms| LinkFeedSource::Host { station_interval: Duration::from_millis(ms) };
        let err = options(Routing::olsr(true), at(0)).check().unwrap_err();
        assert_eq!((err.key.as_str(), err.value.as_str()), ("--station-dump-ms", "0"));
        options(Routing::olsr(true), at(1)).check().unwrap();
    }
}
