//! MTL's cross-layer wiring in the simulator (issue 14, seed 004 §III.B):
//! routing's path information reaches both ends of a transport flow over
//! OLSR-ETX, with the route's hop count and the loss probability of its
//! worst link. Only the engines that read it (MTL's) are told; a TCP
//! flow's report has none.

use meshbed_core::Instant;
use meshbed_routing::olsr::{Body, Packet};
use meshbed_routing::{
    DataPacket, Decision, OlsrConfig, OlsrEngine, PathQuality, RouteEvent, RoutingEngine, RoutingStats, Transmit,
};
use meshbed_sim::report::FlowResult;
use meshbed_sim::scenario::{FlowSpec, Routing, Scenario};
use meshbed_sim::Sim;

/// OLSR-ETX at one node that loses every `every`-th ETX probe heard from
/// `from` (none with `every = 0`): a link whose probe delivery ratio is
/// 1 − 1/every in that direction, whatever the medium does besides.
struct LossyProbes {
    inner: OlsrEngine,
    from: u32,
    every: u32,
    probes_seen: u32,
}

impl RoutingEngine for LossyProbes {
    fn node(&self) -> u32 {
        self.inner.node()
    }
    fn handle_control(&mut self, now: Instant, from: u32, rx_power_dbm: f64, bytes: &[u8]) {
        let probe = Packet::parse(bytes).is_ok_and(|p| p.messages.iter().any(|m| matches!(m.body, Body::Probe { .. })));
        if probe && from == self.from && self.every > 0 {
            self.probes_seen += 1;
            if self.probes_seen.is_multiple_of(self.every) {
                return;
            }
        }
        self.inner.handle_control(now, from, rx_power_dbm, bytes)
    }
    fn handle_timeout(&mut self, now: Instant) {
        self.inner.handle_timeout(now)
    }
    fn route(&mut self, now: Instant, packet: DataPacket<'_>) -> Decision {
        self.inner.route(now, packet)
    }
    fn on_link_failure(&mut self, now: Instant, neighbour: u32) {
        self.inner.on_link_failure(now, neighbour)
    }
    fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        self.inner.poll_transmit(now)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.inner.poll_timeout()
    }
    fn poll_event(&mut self) -> Option<RouteEvent> {
        self.inner.poll_event()
    }
    fn stats(&self) -> &RoutingStats {
        self.inner.stats()
    }
    fn path_info(&self, dst: u32) -> Option<PathQuality> {
        self.inner.path_info(dst)
    }
    fn peer_unresponsive(&mut self, now: Instant, peer: u32) {
        self.inner.peer_unresponsive(now, peer)
    }
}

const SEED: u64 = 7;
const DATA_RATE_BPS: u64 = 24_000_000;

/// A `protocol` transfer along the 3-hop chain 0 – 1 – 2 – 3 over
/// OLSR-ETX, started once routes have converged; with `lossy`, node 2
/// loses every 5th probe of node 1 and node 1 every 10th of node 2, so
/// that link 1 – 2 has d_f · d_r = 0.8 · 0.9 and ETX 1/0.72 (seed 004
/// eq. 1).
fn transfer_over_chain(lossy: bool, protocol: meshbed_proto::Protocol) -> FlowResult {
    let mut s = Scenario::chain(3, 200.0, 40.0);
    s.seed = SEED;
    s.routing = Routing::olsr(true);
    s.flows = vec![FlowSpec { start_s: 20.0, ..FlowSpec::transfer(0, 3, protocol, 300_000) }];
    let make = |node: u32| -> Box<dyn RoutingEngine> {
        let (from, every) = match (lossy, node) {
            (true, 2) => (1, 5),
            (true, 1) => (2, 10),
            _ => (0, 0),
        };
        let inner = OlsrEngine::new(node, OlsrConfig::etx(), meshbed_routing::node_rng(SEED, node));
        Box::new(LossyProbes { inner, from, every, probes_seen: 0 })
    };
    let r = Sim::with_routing(&s, &make).expect("a valid scenario").run();
    r.flows[0].clone()
}

#[test]
fn both_ends_get_the_hop_count_and_the_worst_link_loss_of_their_route() {
    use meshbed_proto::Protocol;
    let lossy = transfer_over_chain(true, Protocol::Mtl);
    assert!(lossy.completed(), "{lossy:?}");
    let p = lossy.transfer.as_ref().and_then(|t| t.path_info.clone()).expect("path information delivered");
    assert!(p.updates >= 2, "{p:?}");
    assert_eq!(p.peer_unresponsive_events, 0, "the receiver answered throughout");
    for q in [p.sender.as_ref().expect("sender's path"), p.receiver.as_ref().expect("receiver's path")] {
        assert_eq!(q.hop_count, 3, "{p:?}");
        assert_eq!(q.link_rate_bps, DATA_RATE_BPS);
        // P_max = 1 − 1/ETX of link 1 – 2 (eq. 4), nominally 1 − 0.8 · 0.9
        // = 0.28. A 10 s window holds 10 or 11 jittered probes, so each
        // count can be one above nominal (capped at 10): 9 · 10 gives 0.10.
        // The medium may lose a probe more.
        assert!((0.09..=0.35).contains(&q.max_link_loss), "{p:?}");
    }
    // The same chain without the lossy link: the worst link is better.
    let clean = transfer_over_chain(false, Protocol::Mtl);
    let c = clean.transfer.as_ref().and_then(|t| t.path_info.clone()).expect("path information delivered");
    let (cs, ls) = (c.sender.as_ref().expect("sender's path"), p.sender.as_ref().expect("sender's path"));
    assert_eq!(cs.hop_count, 3);
    assert!(cs.max_link_loss < ls.max_link_loss, "clean {c:?} lossy {p:?}");
    // TCP does not read the path: it is not told, and its report has none.
    let tcp = transfer_over_chain(true, Protocol::TcpNewReno);
    assert!(tcp.completed(), "{tcp:?}");
    assert_eq!(tcp.transfer.as_ref().map(|t| &t.path_info), Some(&None));
}

/// Static routing has no routing module: nothing is exchanged, and the
/// report says so by leaving the field out.
#[test]
fn static_routes_give_no_path_information() {
    let mut s = Scenario::chain(2, 200.0, 20.0);
    s.flows = vec![FlowSpec::transfer(0, 2, meshbed_proto::Protocol::TcpNewReno, 100_000)];
    let r = meshbed_sim::run(&s).unwrap();
    assert!(r.flows[0].completed());
    assert_eq!(r.flows[0].transfer.as_ref().map(|t| &t.path_info), Some(&None));
    let json = serde_json::to_string(&r.flows[0]).unwrap();
    assert!(!json.contains("path_info"), "{json}");
}
