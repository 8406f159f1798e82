//! OLSR (RFC 3626) as a sans-IO [`RoutingEngine`], with hop count or the
//! ETX metric of seed 004 §III.B (eq. 1) for route computation.
//!
//! What it keeps (RFC 3626 §4): the link set (link sensing with HELLO,
//! §7), the 2-hop neighbour set (§8.2), the MPR set (§8.3.1 heuristic) and
//! the MPR selector set (§8.4), the topology set learnt from TC messages
//! flooded through MPRs (§9, §3.4 with its duplicate set), and a routing
//! table computed from all of them (§10; here Dijkstra so that summed ETX
//! works as well as hop count).
//!
//! ETX (seed 004 §III.B; De Couto et al., seed 004 ref. [3]): every node
//! broadcasts a probe every `probe_interval`; a probe carries how many
//! probes its sender received from each neighbour in the last `window`.
//! The reverse delivery ratio d_r of a link is what this node received from
//! the neighbour, the forward ratio d_f what the neighbour reports it
//! received from us; link ETX = 1 / (d_f · d_r), a route's metric is the sum
//! over its links. ETX travels in HELLOs (per neighbour) and TCs (per
//! advertised link), as olsrd's link-quality extension carries it.
//!
//! MPR selection stays hop based (§8.3.1) with either metric: MPRs exist to
//! cut flooding, and the hop-based heuristic keeps its guarantee (every
//! 2-hop neighbour reached through an MPR). With ETX the TC advertises every
//! symmetric neighbour (TC_REDUNDANCY 2, RFC 3626 §15.1), not only the MPR
//! selectors, so that every node knows the ETX of every link and Dijkstra
//! can find the best-ETX path, which need not run through MPRs.
//!
//! MTL's routing module (seed 004 §III.B) is this engine with ETX: it hands
//! the transport the hop count and the link ETX of a route
//! ([`RoutingEngine::path_info`], walking the route back from the
//! destination through the last link Dijkstra chose, so the first hop's ETX
//! comes from this node's link set and the others' from the 2-hop and
//! topology sets, as HELLOs and TCs advertised them), and takes from it the
//! peers that stopped answering ([`RoutingEngine::peer_unresponsive`]). Such
//! a peer is labelled inaccessible: data this node originates for it is
//! dropped ([`DropReason::PeerInaccessible`]) until a HELLO or TC that the
//! peer originated arrives (it is still part of the network); if none
//! arrives within `top_hold_time` (the time a TC's information lasts), the
//! peer is taken to have left and is deleted from the routing table until
//! one does.
//!
//! Left out: multiple interfaces (MID), HNA, link hysteresis (§14; the
//! link-layer notification of §13 is in), the optional MPR optimisation
//! step, TCs sent early on a change (§9.3 allows them), forwarding of
//! unknown message types (§3.4: parsed and skipped), and signal strength
//! (heard, not used). One message per HELLO, TC or probe packet; forwarded
//! messages due together are piggybacked (§3.5).
//!
//! Driver order: after constructing, call [`RoutingEngine::poll_transmit`],
//! [`RoutingEngine::poll_event`] until `None` and arm a timer for
//! [`RoutingEngine::poll_timeout`]; after every `handle_*`/`on_*` call do
//! the same. `route` never holds: OLSR is proactive.
//!
//! The files follow ns-3's `olsr` module and babeld's split: `packet` is
//! the wire format (`olsr-header`), `neighbours` the link set, 2-hop set,
//! MPR and MPR selector sets with HELLO link sensing and ETX probes
//! (`olsr-state`'s neighbour half; babeld `neighbour.c`), `tables` the
//! topology set and the routing table computed from everything (`olsr-state`,
//! `olsr-routing-protocol`'s route computation; babeld `route.c`), `queue`
//! the duplicate set and the messages waiting to be forwarded (RFC 3626
//! §3.4–3.5), and `engine` the [`RoutingEngine`] that ties them.

mod edges;
mod engine;
mod mpr;
mod neighbours;
mod node_set;
mod packet;
mod queue;
mod tables;
mod topology;
mod two_hop;

pub use engine::OlsrEngine;
pub use packet::{decode_vtime, encode_vtime, Body, HelloEntry, Message, MessageView, Packet, PacketView, ParseError};
pub use tables::Route;

#[cfg(doc)]
use crate::{DropReason, RoutingEngine};
use meshbed_core::Duration;

/// RFC 3626 §18.2.
pub const HELLO_INTERVAL: Duration = Duration::from_secs(2);
/// RFC 3626 §18.2.
pub const TC_INTERVAL: Duration = Duration::from_secs(5);
/// RFC 3626 §18.3: 3 × HELLO_INTERVAL.
pub const NEIGHB_HOLD_TIME: Duration = Duration::from_secs(6);
/// RFC 3626 §18.3: 3 × TC_INTERVAL.
pub const TOP_HOLD_TIME: Duration = Duration::from_secs(15);
/// RFC 3626 §18.3.
pub const DUP_HOLD_TIME: Duration = Duration::from_secs(30);
/// RFC 3626 §3.5/§18: MAXJITTER = HELLO_INTERVAL / 4.
pub const MAXJITTER: Duration = Duration::from_millis(500);
/// ETX probe period τ = 1 s (De Couto et al., seed 004 ref. [3]; seed 004
/// §III.B says "fixed time intervals" and leaves the value open).
pub const ETX_PROBE_INTERVAL: Duration = Duration::from_secs(1);
/// ETX window w = 10 s (De Couto et al.; seed 004 §III.B's "last x
/// seconds").
pub const ETX_WINDOW: Duration = Duration::from_secs(10);

/// RFC 3626 §18.8.
pub const WILL_NEVER: u8 = 0;
pub const WILL_DEFAULT: u8 = 3;
pub const WILL_ALWAYS: u8 = 7;

/// One unit of link cost is 1/256 ETX, so that hop count (256 per link)
/// and ETX share the same integer Dijkstra; also the wire's metric unit.
pub const METRIC_UNIT: u32 = 256;

/// How routes are weighted.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Metric {
    /// RFC 3626 §10: shortest path in hops.
    HopCount,
    /// Seed 004 §III.B: summed link ETX, measured with probes.
    Etx { probe_interval: Duration, window: Duration },
}

/// Protocol parameters (defaults from RFC 3626 §18).
#[derive(Clone, Debug)]
pub struct OlsrConfig {
    pub hello_interval: Duration,
    pub tc_interval: Duration,
    pub neighb_hold_time: Duration,
    pub top_hold_time: Duration,
    pub dup_hold_time: Duration,
    /// Each periodic message goes out `interval − U[0, max_jitter]` after
    /// the previous one (RFC 3626 §18, §3.5).
    pub max_jitter: Duration,
    /// RFC 3626 §18.8: WILL_NEVER … WILL_ALWAYS.
    pub willingness: u8,
    pub metric: Metric,
    /// `true`: TCs are retransmitted only by MPRs (RFC 3626 §3.4.1);
    /// `false`: by every node once (pure flooding, the baseline MPRs
    /// improve on).
    pub mpr_flooding: bool,
    /// RFC 3626 §13: use the MAC's link failures (a frame that reached the
    /// retry limit) to declare a link lost at once, for NEIGHB_HOLD_TIME.
    /// The RFC makes it optional and olsrd leaves it off; off by default
    /// here too: under load a busy link's retry-limit drops are not breaks,
    /// and holding a working link down for 6 s stalls every flow over it
    /// (docs/PROTOCOLS.md). Links are then lost when HELLOs stop.
    pub link_layer_notification: bool,
}

impl Default for OlsrConfig {
    fn default() -> Self {
        OlsrConfig {
            hello_interval: HELLO_INTERVAL,
            tc_interval: TC_INTERVAL,
            neighb_hold_time: NEIGHB_HOLD_TIME,
            top_hold_time: TOP_HOLD_TIME,
            dup_hold_time: DUP_HOLD_TIME,
            max_jitter: MAXJITTER,
            willingness: WILL_DEFAULT,
            metric: Metric::HopCount,
            mpr_flooding: true,
            link_layer_notification: false,
        }
    }
}

impl OlsrConfig {
    /// The defaults with the ETX metric at De Couto et al.'s probe period
    /// and window.
    pub fn etx() -> Self {
        OlsrConfig { metric: Metric::Etx { probe_interval: ETX_PROBE_INTERVAL, window: ETX_WINDOW }, ..Self::default() }
    }
}

/// What the tests of every file here share: engines on the toy network and
/// the packets their neighbours would send.
#[cfg(test)]
mod testing {
    use super::packet::{Body, HelloEntry, Message, Packet, SYM_LINK, SYM_NEIGH};
    use super::{encode_vtime, OlsrConfig, OlsrEngine, HELLO_INTERVAL, METRIC_UNIT, TOP_HOLD_TIME, WILL_DEFAULT};
    use crate::{NodeId, RoutingEngine};
    use meshbed_core::{Duration, Instant};

    pub(super) const SEED: u64 = 4;

    pub(super) fn make(config: OlsrConfig) -> impl Fn(NodeId) -> OlsrEngine {
        move |n| OlsrEngine::new(n, config.clone(), crate::node_rng(SEED, n))
    }

    /// A few HELLO and TC intervals: links turn symmetric after two
    /// HELLOs, TCs cross the network within one TC interval.
    pub(super) const CONVERGENCE: Duration = Duration::from_secs(20);

    pub(super) fn packet(originator: NodeId, ttl: u8, seq: u16, body: Body) -> Vec<u8> {
        let vtime = encode_vtime(TOP_HOLD_TIME);
        Packet { seq, messages: vec![Message { vtime, originator, ttl, hop_count: 0, seq, body }] }.emit()
    }

    /// What node 0 of the chain 0 – 1 – 2 – 3 hears in one second at `t`:
    /// node 1's probe reporting `probes_from_0` of node 0's probes (if
    /// `probe`), node 1's HELLO (0 and 2 symmetric, link 1 – 2 at
    /// `metric_1_2`) and node 2's TC (links 2 – 1 at `metric_1_2`, 2 – 3 at
    /// ETX 1), relayed by node 1; `seq` numbers the TC message.
    pub(super) fn hear_chain(e: &mut OlsrEngine, t: Instant, seq: u16, metric_1_2: u16, probe: Option<u8>) {
        if let Some(probes_from_0) = probe {
            e.handle_control(t, 1, -60.0, &packet(1, 1, seq, Body::Probe { received: vec![(0, probes_from_0)] }));
        }
        let entry = |neighbour, metric| HelloEntry { neighbour, link_code: (SYM_NEIGH << 2) | SYM_LINK, metric };
        let hello = Body::Hello {
            htime: encode_vtime(HELLO_INTERVAL),
            willingness: WILL_DEFAULT,
            neighbours: vec![entry(0, METRIC_UNIT as u16), entry(2, metric_1_2)],
        };
        e.handle_control(t, 1, -60.0, &packet(1, 1, seq, hello));
        let tc = Body::Tc { ansn: 1, advertised: vec![(1, metric_1_2), (3, METRIC_UNIT as u16)] };
        e.handle_control(t, 1, -60.0, &packet(2, 254, seq, tc));
    }

    /// Node 0 after one ETX window (10 probes of node 1, one a second) of
    /// which it received `probes_from_1`, node 1 reporting `probes_from_0`
    /// of node 0's.
    pub(super) fn chain_seen_from_0(
        config: OlsrConfig,
        probes_from_1: u16,
        probes_from_0: u8,
        metric_1_2: u16,
    ) -> OlsrEngine {
        let mut e = make(config)(0);
        for k in 0..10u16 {
            let t = Instant::ZERO + Duration::from_millis(500 + 1000 * u64::from(k));
            hear_chain(&mut e, t, k, metric_1_2, (k < probes_from_1).then_some(probes_from_0));
        }
        e
    }
}
