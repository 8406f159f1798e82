//! AODV (RFC 3561) as a sans-IO [`RoutingEngine`], with the signal-strength
//! filter of seed 003 (§3.2, §3.4, §3.5): the documents ran AODV-UU (seed 003
//! §3.3), modified to ignore HELLO and control packets from neighbours whose
//! smoothed signal strength is below a threshold, so that routes avoid links
//! at the edge of the coverage range.
//!
//! What it owns: the route table (destination sequence numbers, hop counts,
//! lifetimes, precursor lists), the neighbour table (last heard, smoothed
//! signal strength), the RREQ duplicate cache, the discoveries in progress
//! and the ids of the data packets held for them.
//!
//! A driver calls, in any order, [`RoutingEngine::handle_control`],
//! [`RoutingEngine::on_frame_heard`], [`RoutingEngine::on_link_failure`] and
//! [`RoutingEngine::route`] as things happen, [`RoutingEngine::handle_timeout`]
//! when [`RoutingEngine::poll_timeout`] is due, and after each of these drains
//! [`RoutingEngine::poll_transmit`] and [`RoutingEngine::poll_event`] and asks
//! for the next deadline again.
//!
//! Left out (all optional in RFC 3561): local repair (§6.12), gratuitous RREPs
//! (§6.6.3), RREP-ACK (§5.4), and the TTL of a rediscovery starting from the
//! last known hop count (§6.4).
//!
//! The files follow ns-3's `aodv` module: `packet` is the wire format
//! (`aodv-packet`), `tables` the route table (`aodv-rtable`), `neighbours`
//! the neighbour table with its signal-strength filter and the HELLOs
//! (`aodv-neighbor`), `queue` the held packets, the discoveries and the RREQ
//! duplicate cache (`aodv-rqueue`, `aodv-id-cache`), and `engine` the
//! [`RoutingEngine`] that ties them (`aodv-routing-protocol`).

mod engine;
mod neighbours;
mod packet;
mod queue;
mod tables;

pub use engine::{Aodv, AodvCounters};
pub use packet::{Message, Rerr, Rrep, Rreq, WireError, RERR_HEADER_LEN, RREP_LEN, RREQ_LEN};

#[cfg(doc)]
use crate::RoutingEngine;
use meshbed_core::Duration;

/// AODV's parameters, with the defaults of RFC 3561 §10 unless said otherwise.
#[derive(Clone, Debug, PartialEq)]
pub struct AodvConfig {
    /// ACTIVE_ROUTE_TIMEOUT (RFC 3561 §10: 3000 ms).
    pub active_route_timeout: Duration,
    /// HELLO_INTERVAL (RFC 3561 §10: 1000 ms; seed 003 §3.1: "once per second").
    pub hello_interval: Duration,
    /// ALLOWED_HELLO_LOSS (RFC 3561 §10: 2).
    pub allowed_hello_loss: u32,
    /// NET_DIAMETER in hops (RFC 3561 §10: 35).
    pub net_diameter: u8,
    /// NODE_TRAVERSAL_TIME (RFC 3561 §10: 40 ms).
    pub node_traversal_time: Duration,
    /// RREQ_RETRIES (RFC 3561 §10: 2).
    pub rreq_retries: u32,
    /// The wait before a RREQ is repeated when expanding ring search is off
    /// (seed 003 §5.2: "the time interval before repeating the RREQ was 320
    /// msec"; that is RFC 3561's RING_TRAVERSAL_TIME for a TTL of 2,
    /// 2 · 40 ms · (2 + TIMEOUT_BUFFER)). Fixed, not doubled per retry: the
    /// seed reports one interval.
    pub rreq_retry_wait: Duration,
    /// Data packets held while routes are discovered, at most (ns-2
    /// `aodv_rqueue.h` AODV_RTQ_MAX_LEN: 64); the oldest is dropped first.
    pub discovery_buffer_packets: usize,
    /// How long a data packet may be held (ns-2 `aodv_rqueue.h`
    /// AODV_RTQ_TIMEOUT: 30 s).
    pub discovery_buffer_timeout: Duration,
    /// Expanding ring search (RFC 3561 §6.4); off by default: seed 003 §5.2
    /// reports a fixed retry interval.
    pub expanding_ring_search: bool,
    /// TTL_START (RFC 3561 §10: 1).
    pub ttl_start: u8,
    /// TTL_INCREMENT (RFC 3561 §10: 2).
    pub ttl_increment: u8,
    /// TTL_THRESHOLD (RFC 3561 §10: 7).
    pub ttl_threshold: u8,
    /// TIMEOUT_BUFFER (RFC 3561 §10: 2).
    pub timeout_buffer: u8,
    /// K of DELETE_PERIOD = K · max(ACTIVE_ROUTE_TIMEOUT, HELLO_INTERVAL)
    /// (RFC 3561 §10: 5).
    pub delete_period_k: u32,
    /// MAXJITTER: the RREQs this node relays and the RERRs it broadcasts
    /// wait a jitter uniform in [0, this], and each HELLO comes that much
    /// before its interval is up, so that neighbours that heard the same
    /// packet do not all send at once (RFC 5148 §5, `common::jitter`; ns-2
    /// `aodv.cc` jitters broadcasts by up to 10 ms; RFC 3561 leaves it
    /// open).
    pub broadcast_jitter: Duration,
    /// Seed 003 §3.2/§3.4's HELLO STRENGTH THRESHOLD: control packets from a
    /// neighbour whose smoothed signal strength is below it are not processed.
    /// `None` is plain AODV.
    pub ss_threshold_dbm: Option<f64>,
    /// The weight of the newest sample in the signal-strength average (seed
    /// 003 §3.5: α = 0.25).
    pub ss_alpha: f64,
    /// A frame the MAC gave up on breaks the link to its next hop at once
    /// (RFC 3561 §6.11's link-layer notification; ns-2's AODV, which the
    /// issue's retry-limit detection follows). `false`: links break only
    /// when nothing is heard for ALLOWED_HELLO_LOSS · HELLO_INTERVAL, as
    /// AODV-UU runs by default (seed 003 §3.3's implementation).
    pub link_layer_feedback: bool,
    /// HELLO messages every `hello_interval`, and a neighbour not heard for
    /// ALLOWED_HELLO_LOSS of them lost (RFC 3561 §6.9, §6.11). `false`:
    /// neither, as ns-2's AODV runs with `AODV_LINK_LAYER_DETECTION` (the
    /// ATP paper's, seed 002 §5.1) and ns-3's with its default of no
    /// HELLOs when link-layer feedback is on: links break only on the
    /// MAC's retry-limit failures, so it needs `link_layer_feedback`.
    pub hellos: bool,
}

impl Default for AodvConfig {
    fn default() -> Self {
        AodvConfig {
            active_route_timeout: Duration::from_millis(3000),
            hello_interval: Duration::from_millis(1000),
            allowed_hello_loss: 2,
            net_diameter: 35,
            node_traversal_time: Duration::from_millis(40),
            rreq_retries: 2,
            rreq_retry_wait: Duration::from_millis(320),
            discovery_buffer_packets: 64,
            discovery_buffer_timeout: Duration::from_secs(30),
            expanding_ring_search: false,
            ttl_start: 1,
            ttl_increment: 2,
            ttl_threshold: 7,
            timeout_buffer: 2,
            delete_period_k: 5,
            broadcast_jitter: Duration::from_millis(10),
            ss_threshold_dbm: None,
            ss_alpha: 0.25,
            link_layer_feedback: true,
            hellos: true,
        }
    }
}

impl AodvConfig {
    /// NET_TRAVERSAL_TIME = 2 · NODE_TRAVERSAL_TIME · NET_DIAMETER (RFC 3561 §10).
    pub fn net_traversal_time(&self) -> Duration {
        self.node_traversal_time * (2 * self.net_diameter as u64)
    }
    /// PATH_DISCOVERY_TIME = 2 · NET_TRAVERSAL_TIME (RFC 3561 §10): how long
    /// a RREQ stays in the duplicate cache.
    pub fn path_discovery_time(&self) -> Duration {
        self.net_traversal_time() * 2
    }
    /// MY_ROUTE_TIMEOUT = 2 · ACTIVE_ROUTE_TIMEOUT (RFC 3561 §10).
    pub fn my_route_timeout(&self) -> Duration {
        self.active_route_timeout * 2
    }
    /// DELETE_PERIOD (RFC 3561 §10).
    pub fn delete_period(&self) -> Duration {
        let longer = if self.active_route_timeout > self.hello_interval {
            self.active_route_timeout
        } else {
            self.hello_interval
        };
        longer * self.delete_period_k as u64
    }
    /// How long a neighbour stays without being heard:
    /// ALLOWED_HELLO_LOSS · HELLO_INTERVAL (RFC 3561 §6.11).
    pub fn neighbour_timeout(&self) -> Duration {
        self.hello_interval * self.allowed_hello_loss as u64
    }
    /// RING_TRAVERSAL_TIME = 2 · NODE_TRAVERSAL_TIME · (TTL + TIMEOUT_BUFFER)
    /// (RFC 3561 §10).
    pub fn ring_traversal_time(&self, ttl: u8) -> Duration {
        self.node_traversal_time * (2 * (ttl as u64 + self.timeout_buffer as u64))
    }
}

/// What the tests of every file here share: engines on the toy network.
#[cfg(test)]
mod testing {
    use super::{Aodv, AodvConfig};
    use crate::harness::Net;
    use crate::{NodeId, RouteEvent};
    use meshbed_core::Instant;

    pub(super) fn engine(node: NodeId, config: &AodvConfig) -> Aodv {
        Aodv::new(node, config.clone(), crate::node_rng(1, node))
    }

    pub(super) fn net(n: usize, links: &[(NodeId, NodeId)], config: AodvConfig) -> Net<Aodv> {
        Net::new(n, links, |node| engine(node, &config))
    }

    pub(super) fn events_at(net: &Net<Aodv>, node: NodeId) -> Vec<(Instant, RouteEvent)> {
        net.events.iter().filter(|(_, n, _)| *n == node).map(|(t, _, e)| (*t, e.clone())).collect()
    }
}
