//! What the daemon counts: the simulator's network-layer counters for one
//! node ([`NetCounters`]: control packets and bytes, held packets,
//! discoveries and their times, route changes, drops by cause) and what
//! only a daemon has (the kernel's routes, the link feed, the notice
//! socket). Written as JSON at exit and on request (SIGUSR1).

use crate::kernel::KernelCounters;
use crate::notices::NoticeCounters;
use meshbed_routing::RoutingStats;
use meshbed_sim::net_stats::NetCounters;
use serde::Serialize;
use std::net::Ipv4Addr;

/// Most discovery times kept one by one (the counters keep them all).
pub const MAX_DISCOVERY_TIMES: usize = 10_000;

/// Data packets through the queue (on-demand routing only).
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct DataCounters {
    /// Forwarded or sent on a route.
    pub forwarded: u64,
    /// Held packets sent once a route was found.
    pub released: u64,
    /// Packets not between two mesh nodes, let through untouched.
    pub passed: u64,
    /// Forwarded packets from a link-layer address no neighbour has.
    pub unknown_prev_hop: u64,
    pub reinject_errors: u64,
}

#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct LinkFeedCounters {
    pub heard: u64,
    pub failed: u64,
    /// Datagrams (the emulator's socket) or netlink messages (the host's
    /// feed) refused as malformed.
    pub malformed: u64,
    /// The host's feed: times the kernel dropped neighbour events because
    /// the daemon read them too slowly.
    pub events_lost: u64,
    /// The host's feed: nl80211 station dumps taken, and failed.
    pub station_dumps: u64,
    pub station_dump_errors: u64,
    /// The host's feed: station records with news whose MAC maps to no
    /// mesh node (not in the neighbour table yet, or not a node).
    pub stations_unknown: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct InstalledRoute {
    pub dst: Ipv4Addr,
    pub next_hop: Ipv4Addr,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct RoutedReport {
    pub node: u32,
    pub address: Option<Ipv4Addr>,
    /// The `[routing] kind` (and metric) the daemon runs.
    pub protocol: String,
    pub uptime_s: f64,
    /// The simulator's counters of a node.
    pub net: NetCounters,
    /// Each completed discovery's time, ms, in order (at most
    /// [`MAX_DISCOVERY_TIMES`]).
    pub discovery_times_ms: Vec<f64>,
    /// The engine's own counters.
    pub engine: RoutingStats,
    pub data: DataCounters,
    pub held_now: u64,
    pub kernel: KernelCounters,
    pub link_feed: LinkFeedCounters,
    pub notices: NoticeCounters,
    pub peer_unresponsive: u64,
    /// Control packets from addresses that are not mesh nodes.
    pub control_from_strangers: u64,
    pub control_send_errors: u64,
    pub last_error: Option<String>,
    /// What runs other than asked, said once at start (a threshold with
    /// no signal to apply it to).
    pub warnings: Vec<String>,
    /// The kernel routes installed when the report was taken.
    pub routes: Vec<InstalledRoute>,
}
