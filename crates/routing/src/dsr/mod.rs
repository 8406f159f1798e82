//! DSR, the Dynamic Source Routing protocol, as the ATP paper ran it (seed
//! 002 §2, §5.1: ns-2's DSR agent under 802.11b with random waypoint
//! movement), with RFC 4728 for what the paper leaves open. Deterministic,
//! no I/O: the driver passes `now` in and carries out what the engine asks.
//!
//! * Route discovery (RFC 4728 §8.2): a Route Request (RREQ) floods with the
//!   route record accumulated hop by hop; the target (or, as ns-2 does by
//!   default, a node with a cached route) answers with a Route Reply (RREP)
//!   unicast back along the reverse of the record. As ns-2, the first request
//!   is non-propagating (neighbours only), then propagating requests back off
//!   exponentially.
//! * The route cache is a path cache (RFC 4728 §4.1): whole paths from this
//!   node, learnt from RREQs, RREPs and the source routes of packets it
//!   forwards.
//! * Data packets carry the whole source route in their routing header
//!   ([`SourceRoute`]); it counts in airtime because the driver carries it.
//! * Route maintenance (RFC 4728 §8.3) from link-layer failure: the link
//!   leaves the cache, a Route Error (RERR) goes back to the node that wrote
//!   the source route, and the node that saw the break salvages the packet
//!   over another cached route (RFC 4728 §8.3.6), at most `max_salvage_count`
//!   times.
//!
//! Driver contract for salvaging: the engine remembers the packets it
//! forwarded to each neighbour for `maintenance_window` (RFC 4728 §4.5's
//! maintenance buffer; a frame heard from the neighbour confirms what was
//! sent to it before). Each [`RoutingEngine::on_link_failure`] report for
//! that neighbour stands for one failed frame: the oldest unconfirmed packet
//! is re-sent by id with [`RouteEvent::Release`] (a new next hop and
//! header), as if it had been held. A driver keeps the bytes of a data
//! packet whose frame failed until it has reported the failure, and reports
//! one failure per failed frame. The RERR goes to the node that wrote the
//! source route (the source, or the last salvaging node), not always to the
//! original source as RFC 4728 §8.3.4 asks.
//!
//! Left out: gratuitous route replies and automatic route shortening
//! (§3.4.3), reply-storm prevention (§8.2.5), passive acknowledgements
//! beyond the frame-heard hint, flow state (§3.5), caching overheard routes
//! (§3.3.1; the driver reports no promiscuous reception).
//!
//! The order of calls is the one of every [`RoutingEngine`]: feed input
//! (`handle_control`, `route`, `on_link_failure`, `handle_timeout` once
//! `poll_timeout` has passed), then drain `poll_transmit` and `poll_event`,
//! then ask `poll_timeout` again.
//!
//! The files follow ns-3's `dsr` module: `packet` is the wire format
//! (`dsr-option-header`), `tables` the route cache (`dsr-rcache`), `queue`
//! the send buffer, the discoveries and the request table (`dsr-rsendbuff`,
//! `dsr-rreq-table`), `maintenance` the maintenance buffer
//! (`dsr-maintain-buff`), and `engine` the [`RoutingEngine`] that ties them
//! (`dsr-routing`). DSR keeps no neighbour table: a link is known from the
//! routes that cross it and confirmed by hearing the neighbour.

mod engine;
mod maintenance;
mod packet;
mod queue;
mod tables;

pub use engine::Dsr;
pub use packet::{Control, SourceRoute, WireError, MAX_ROUTE_LEN};

#[cfg(doc)]
use crate::{RouteEvent, RoutingEngine};
use meshbed_core::Duration;

/// RFC 4728 §9 DiscoveryHopLimit: the largest hop limit of a propagating RREQ.
pub const DISCOVERY_HOP_LIMIT: u8 = 255;
/// RFC 4728 §9 BroadcastJitter: rebroadcast RREQs wait a jitter uniform in
/// [0, this] (RFC 5148 §5, `common::jitter`).
pub const BROADCAST_JITTER: Duration = Duration::from_millis(10);
/// RFC 4728 §9 RouteCacheTimeout: a path unused this long is forgotten.
pub const ROUTE_CACHE_TIMEOUT: Duration = Duration::from_secs(300);
/// RFC 4728 §9 SendBufferTimeout (ns-2's `send_timeout`, 30 s).
pub const SEND_BUFFER_TIMEOUT: Duration = Duration::from_secs(30);
/// ns-2 dsragent `SEND_BUF_SIZE`: packets held while discovering.
pub const SEND_BUFFER_SIZE: usize = 64;
/// RFC 4728 §9 RequestTableSize: initiators remembered for duplicate suppression.
pub const REQUEST_TABLE_SIZE: usize = 64;
/// RFC 4728 §9 RequestTableIds: request ids remembered per initiator.
pub const REQUEST_TABLE_IDS: usize = 16;
/// RFC 4728 §9 MaxRequestRexmt: propagating RREQs for one target before giving up.
pub const MAX_REQUEST_REXMT: u32 = 16;
/// RFC 4728 §9 RequestPeriod: wait after the first propagating RREQ (doubles).
pub const REQUEST_PERIOD: Duration = Duration::from_millis(500);
/// RFC 4728 §9 MaxRequestPeriod: the cap of the exponential backoff.
pub const MAX_REQUEST_PERIOD: Duration = Duration::from_secs(10);
/// RFC 4728 §9 NonpropRequestTimeout: wait after the non-propagating RREQ
/// (ns-2 sends this TTL-0 ring first).
pub const NONPROP_REQUEST_TIMEOUT: Duration = Duration::from_millis(30);
/// RFC 4728 §9 MaxSalvageCount: how often one packet may be salvaged.
pub const MAX_SALVAGE_COUNT: u8 = 15;
/// How long a packet handed to a neighbour counts as unconfirmed and is
/// salvaged if the link to it breaks (RFC 4728 §4.5 maintenance buffer).
/// Our own bound: longer than the 802.11 retry sequence (7 tries of a
/// 1500-byte frame at 1 Mb/s with backoff, ~100 ms) so the failed frame is
/// still there when the MAC gives up.
pub const MAINTENANCE_WINDOW: Duration = Duration::from_millis(200);
/// Paths kept in the route cache: ns-2's path cache (`MobiCache`) keeps 30
/// primary and 64 secondary routes; we keep one list of the same total.
pub const ROUTE_CACHE_SIZE: usize = 94;
/// How much the wait between propagating requests grows: RFC 4728 §8.2.1
/// doubles it. (ns-2's `BackOffTest` waits 2^(2n) periods, a factor 4.)
pub const REQUEST_BACKOFF_FACTOR: u64 = 2;

/// DSR parameters; [`Default`] gives the RFC 4728 §9 / ns-2 values above.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DsrConfig {
    pub discovery_hop_limit: u8,
    pub broadcast_jitter: Duration,
    pub route_cache_timeout: Duration,
    pub route_cache_size: usize,
    pub send_buffer_timeout: Duration,
    pub send_buffer_size: usize,
    pub request_table_size: usize,
    pub request_table_ids: usize,
    pub max_request_rexmt: u32,
    pub request_period: Duration,
    pub max_request_period: Duration,
    pub request_backoff_factor: u64,
    /// Send a non-propagating RREQ first (ns-2 does; RFC 4728 §8.2.1 MAY).
    pub nonprop_request_first: bool,
    pub nonprop_request_timeout: Duration,
    pub max_salvage_count: u8,
    pub maintenance_window: Duration,
    /// Intermediate nodes answer RREQs from their cache (RFC 4728 §8.2.3;
    /// ns-2's `dsragent_reply_from_cache_on_request`, on by default).
    pub reply_from_cache: bool,
}

impl Default for DsrConfig {
    fn default() -> Self {
        DsrConfig {
            discovery_hop_limit: DISCOVERY_HOP_LIMIT,
            broadcast_jitter: BROADCAST_JITTER,
            route_cache_timeout: ROUTE_CACHE_TIMEOUT,
            route_cache_size: ROUTE_CACHE_SIZE,
            send_buffer_timeout: SEND_BUFFER_TIMEOUT,
            send_buffer_size: SEND_BUFFER_SIZE,
            request_table_size: REQUEST_TABLE_SIZE,
            request_table_ids: REQUEST_TABLE_IDS,
            max_request_rexmt: MAX_REQUEST_REXMT,
            request_period: REQUEST_PERIOD,
            max_request_period: MAX_REQUEST_PERIOD,
            request_backoff_factor: REQUEST_BACKOFF_FACTOR,
            nonprop_request_first: true,
            nonprop_request_timeout: NONPROP_REQUEST_TIMEOUT,
            max_salvage_count: MAX_SALVAGE_COUNT,
            maintenance_window: MAINTENANCE_WINDOW,
            reply_from_cache: true,
        }
    }
}

/// What the tests of every file here share: engines on the toy network.
#[cfg(test)]
mod testing {
    use super::{Dsr, DsrConfig, SourceRoute};
    use crate::harness::Net;
    use crate::{NodeId, RouteEvent};

    pub(super) const SEED: u64 = 7;

    pub(super) fn dsr(node: NodeId, cfg: &DsrConfig) -> Dsr {
        Dsr::new(node, cfg.clone(), crate::node_rng(SEED, node))
    }

    pub(super) fn net(n: usize, links: &[(NodeId, NodeId)], cfg: DsrConfig) -> Net<Dsr> {
        Net::new(n, links, |node| dsr(node, &cfg))
    }

    pub(super) fn chain(n: usize) -> Net<Dsr> {
        let links: Vec<_> = (1..n as NodeId).map(|i| (i - 1, i)).collect();
        net(n, &links, DsrConfig::default())
    }

    pub(super) fn total_control(net: &Net<Dsr>) -> u64 {
        net.control_sent.iter().sum()
    }

    /// The source route node `node` released packet `id` with.
    pub(super) fn released_path(net: &Net<Dsr>, node: NodeId, id: u64) -> Vec<NodeId> {
        let header = net
            .events
            .iter()
            .find_map(|(_, n, e)| match e {
                RouteEvent::Release { id: i, header: Some(h), .. } if *n == node && *i == id => Some(h.clone()),
                _ => None,
            })
            .expect("released");
        SourceRoute::parse(&header).expect("valid header").path
    }
}
