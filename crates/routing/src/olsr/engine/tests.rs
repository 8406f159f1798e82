//! The OLSR engine's tests.

use super::super::packet::HELLO_MESSAGE;
use super::super::testing::{chain_seen_from_0, hear_chain, make, packet};
use super::super::{OlsrConfig, METRIC_UNIT, TOP_HOLD_TIME};
use super::*;
use crate::harness::{Fate, Net};
use proptest::prelude::*;

#[test]
fn no_route_before_convergence_drops() {
    let mut net = Net::chain(3, make(OlsrConfig::default()));
    let id = net.send(0, 2);
    assert_eq!(net.fate(id), &Fate::Dropped(DropReason::NoRoute));
}

#[test]
fn poll_timeout_moves_forward() {
    for config in [OlsrConfig::default(), OlsrConfig::etx()] {
        let mut e = make(config)(0);
        let mut last = Instant::ZERO;
        for _ in 0..200 {
            let t = e.poll_timeout().expect("periodic timers");
            assert!(t >= last);
            e.handle_timeout(t);
            while e.poll_transmit(t).is_some() {}
            assert!(e.poll_timeout().expect("periodic timers") > t);
            last = t;
        }
        // An early call is a no-op.
        let before = e.stats().control_packets_sent;
        e.handle_timeout(last);
        assert_eq!(e.poll_transmit(last), None);
        assert_eq!(e.stats().control_packets_sent, before);
    }
}

fn data(src: NodeId, dst: NodeId, prev_hop: Option<NodeId>) -> DataPacket<'static> {
    DataPacket { id: 1, src, dst, prev_hop, header: &[] }
}

#[test]
fn an_unresponsive_peer_is_inaccessible_until_a_tc_of_its_own_arrives() {
    let mut e = chain_seen_from_0(OlsrConfig::etx(), 10, 10, METRIC_UNIT as u16);
    let t = Instant::ZERO + Duration::from_secs(10);
    let forward = Decision::Forward { next_hop: 1, header: None };
    assert_eq!(e.route(t, data(0, 3, None)), forward);
    e.peer_unresponsive(t, 3);
    assert_eq!(e.route(t, data(0, 3, None)), Decision::Drop(DropReason::PeerInaccessible));
    // Only this node's own data: what it forwards for others goes on.
    assert_eq!(e.route(t, data(5, 3, Some(1))), forward);
    // The route itself stays, and so does its quality.
    assert_eq!(e.path_info(3).map(|q| q.hop_count), Some(3));
    // Node 2's TCs do not speak for node 3; node 3's own TC does.
    hear_chain(&mut e, t, 100, METRIC_UNIT as u16, Some(10));
    assert_eq!(e.route(t, data(0, 3, None)), Decision::Drop(DropReason::PeerInaccessible));
    let tc = Body::Tc { ansn: 1, advertised: vec![(2, METRIC_UNIT as u16)] };
    e.handle_control(t, 1, -60.0, &packet(3, 253, 0, tc));
    assert_eq!(e.route(t, data(0, 3, None)), forward);
}

#[test]
fn an_unresponsive_peer_silent_for_a_tc_hold_time_is_deleted_from_the_routing_table() {
    let mut e = chain_seen_from_0(OlsrConfig::etx(), 10, 10, METRIC_UNIT as u16);
    while e.poll_event().is_some() {}
    let labelled_at = Instant::ZERO + Duration::from_secs(10);
    e.peer_unresponsive(labelled_at, 3);
    // The engine asks to wake up when the label's time is up.
    assert!(e.poll_timeout().is_some_and(|t| t <= labelled_at + TOP_HOLD_TIME));
    // Nodes 1 and 2 keep talking (node 2 keeps advertising node 3);
    // node 3 originates nothing.
    let mut seq = 200;
    let mut t = labelled_at;
    let mut lost_at = None;
    while t < labelled_at + TOP_HOLD_TIME + Duration::from_secs(2) {
        t += Duration::from_millis(250);
        while let Some(due) = e.poll_timeout().filter(|&d| d <= t) {
            e.handle_timeout(due);
            while e.poll_transmit(due).is_some() {}
        }
        if seq % 4 == 0 {
            hear_chain(&mut e, t, seq, METRIC_UNIT as u16, Some(10));
        }
        seq += 1;
        if lost_at.is_none() && std::iter::from_fn(|| e.poll_event()).any(|ev| ev == RouteEvent::Lost { dst: 3 }) {
            lost_at = Some(t);
        }
        if t < labelled_at + TOP_HOLD_TIME {
            assert!(e.routes().contains_key(&3), "deleted early, at {t}");
        }
    }
    assert!(lost_at.is_some_and(|at| at >= labelled_at + TOP_HOLD_TIME), "{lost_at:?}");
    assert!(!e.routes().contains_key(&3));
    assert_eq!(e.path_info(3), None);
    assert!(e.routes().contains_key(&2));
    // Node 3 speaks again: validated, routed again.
    let tc = Body::Tc { ansn: 1, advertised: vec![(2, METRIC_UNIT as u16)] };
    e.handle_control(t, 1, -60.0, &packet(3, 253, 0, tc));
    assert_eq!(e.routes()[&3].hop_count, 3);
    assert_eq!(e.route(t, data(0, 3, None)), Decision::Forward { next_hop: 1, header: None });
}

#[test]
fn malformed_packets_are_counted_and_ignored() {
    let mut e = make(OlsrConfig::default())(0);
    e.handle_control(Instant::ZERO, 1, -60.0, &[0, 3, 0]);
    e.handle_control(Instant::ZERO, 1, -60.0, &[0, 16, 0, 0, HELLO_MESSAGE, 0, 0, 12, 0, 0, 0, 1, 1, 0, 0, 0]);
    assert_eq!(e.stats().control_packets_received, 2);
    assert_eq!(e.stats().control_packets_ignored, 2);
    assert!(e.routes().is_empty());
}

/// One step of [`skipping_a_settled_recompute_changes_nothing`].
#[derive(Clone, Debug)]
enum Step {
    /// A HELLO from `from` listing node 0 with `code_0`, then
    /// (neighbour, link code) pairs.
    Hello {
        from: NodeId,
        code_0: u8,
        entries: Vec<(NodeId, u8)>,
        short: bool,
    },
    /// A TC of `originator` (message `seq`) relayed by `from`.
    Tc {
        from: NodeId,
        originator: NodeId,
        seq: u16,
        ttl: u8,
        advertised: Vec<NodeId>,
        short: bool,
    },
    Wait {
        ms: u64,
    },
    LinkFailure {
        neighbour: NodeId,
    },
    Unresponsive {
        peer: NodeId,
    },
}

fn step() -> impl Strategy<Value = Step> {
    use super::super::packet::{ASYM_LINK, LOST_LINK, MPR_NEIGH, NOT_NEIGH, SYM_LINK, SYM_NEIGH};
    let code = prop_oneof![
        Just((SYM_NEIGH << 2) | SYM_LINK),
        Just((MPR_NEIGH << 2) | SYM_LINK),
        Just((NOT_NEIGH << 2) | ASYM_LINK),
        Just((NOT_NEIGH << 2) | LOST_LINK),
    ];
    prop_oneof![
        3 => (1..6u32, code.clone(), proptest::collection::vec((1..9u32, code), 0..5), any::<bool>())
            .prop_map(|(from, code_0, entries, short)| Step::Hello { from, code_0, entries, short }),
        4 => (1..6u32, 1..9u32, 0..4u16, 1..4u8, proptest::collection::vec(0..9u32, 0..4), any::<bool>())
            .prop_map(|(from, originator, seq, ttl, advertised, short)| Step::Tc { from, originator, seq, ttl, advertised, short }),
        3 => (0..4000u64).prop_map(|ms| Step::Wait { ms }),
        1 => (1..6u32).prop_map(|neighbour| Step::LinkFailure { neighbour }),
        1 => (1..9u32).prop_map(|peer| Step::Unresponsive { peer }),
    ]
}

/// What a node shows the world: its routes, what it advertises, its
/// timers and the events and packets it has to hand out.
fn observe(e: &mut OlsrEngine) -> String {
    let events: Vec<RouteEvent> = std::iter::from_fn(|| e.poll_event()).collect();
    let sent: Vec<Transmit> = std::iter::from_fn(|| e.poll_transmit(e.now)).collect();
    // Each destination's route and last link (the table's scratch
    // buffers are not what it shows).
    let routes: Vec<_> = (0..10).map(|dst| (e.routes.route(dst).cloned(), e.path_info(dst))).collect();
    format!(
        "{:?} {:?} {} {:?} {:?} {:?} {:?} {:?}",
        routes,
        e.advertised,
        e.ansn,
        e.advertised_nonempty_at,
        e.timers,
        e.poll_timeout(),
        events,
        sent
    )
}

/// Runs `steps` through a node that skips settled recomputes and one
/// made to recompute after every packet; fails at the first thing they
/// show differently. Returns how many (step, destination) pairs had a
/// route of more than one hop, so the caller can tell the routes were
/// not all empty.
fn run_both(config: &OlsrConfig, steps: &[Step]) -> Result<usize, TestCaseError> {
    use super::super::packet::{Body, HelloEntry, Message};
    use super::super::{encode_vtime, HELLO_INTERVAL, WILL_DEFAULT};
    let mut fast = make(config.clone())(0);
    let mut full = make(config.clone())(0);
    let mut now = Instant::ZERO;
    let mut routed = 0;
    for step in steps {
        for e in [&mut fast, &mut full] {
            let vtime = |short: bool| encode_vtime(if short { Duration::from_secs(3) } else { TOP_HOLD_TIME });
            let emit = |originator, ttl, seq, short, body| {
                let message = Message { vtime: vtime(short), originator, ttl, hop_count: 1, seq, body };
                Packet { seq, messages: vec![message] }.emit()
            };
            match step {
                Step::Hello { from, code_0, entries, short } => {
                    let neighbours = [(0, *code_0)]
                        .iter()
                        .chain(entries)
                        .map(|&(neighbour, link_code)| HelloEntry { neighbour, link_code, metric: METRIC_UNIT as u16 })
                        .collect();
                    let body =
                        Body::Hello { htime: encode_vtime(HELLO_INTERVAL), willingness: WILL_DEFAULT, neighbours };
                    e.handle_control(now, *from, -60.0, &emit(*from, 1, 0, *short, body));
                }
                Step::Tc { from, originator, seq, ttl, advertised, short } => {
                    let advertised = advertised.iter().map(|&n| (n, METRIC_UNIT as u16)).collect();
                    let body = Body::Tc { ansn: *seq, advertised };
                    e.handle_control(now, *from, -60.0, &emit(*originator, *ttl, *seq, *short, body));
                }
                Step::Wait { .. } => {
                    while let Some(t) = e.next_timer().filter(|&t| t <= now) {
                        e.handle_timeout(t);
                    }
                }
                Step::LinkFailure { neighbour } => e.on_link_failure(now, *neighbour),
                Step::Unresponsive { peer } => e.peer_unresponsive(now, *peer),
            }
        }
        // The reference recomputes after every packet, as the engine
        // did before it could skip (a recompute right after another
        // changes nothing: `handle_timeout` makes two in a row).
        if matches!(step, Step::Hello { .. } | Step::Tc { .. }) {
            full.recompute();
        }
        prop_assert_eq!(observe(&mut fast), observe(&mut full), "after {:?}", step);
        routed += (1..9).filter(|&dst| fast.routes.route(dst).is_some_and(|r| r.hop_count > 1)).count();
        if let Step::Wait { ms } = step {
            now += Duration::from_millis(*ms);
        }
    }
    Ok(routed)
}

/// A packet that writes nothing, handled while the node is settled,
/// leaves the node exactly as a recompute would (issue 28): a node
/// that skips it and one made to recompute after every packet agree
/// on everything they show, through HELLOs, TCs seen before and new,
/// expiries, link failures and unresponsive peers — with routes of
/// several hops among them; with RFC 3626's intervals, and with
/// HELLOs and TCs so rare and a hold time so short that the periodic
/// recomputes do not hide a peer leaving the table.
#[test]
fn skipping_a_settled_recompute_changes_nothing() {
    use proptest::test_runner::{Config, TestRunner};
    let rare = OlsrConfig {
        hello_interval: Duration::from_secs(1000),
        tc_interval: Duration::from_secs(1000),
        top_hold_time: Duration::from_secs(2),
        ..OlsrConfig::default()
    };
    for config in [OlsrConfig::default(), rare] {
        let mut runner = TestRunner::new(Config { cases: 300, ..Config::default() });
        let routed = std::cell::Cell::new(0);
        let cases = proptest::collection::vec(step(), 1..120);
        runner
            .run(&cases, |steps| {
                routed.set(routed.get() + run_both(&config, &steps)?);
                Ok(())
            })
            .unwrap();
        assert!(routed.get() > 1000, "multi-hop routes in {} (step, destination) pairs", routed.get());
    }
}

proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = Packet::parse(&bytes);
        let mut e = make(OlsrConfig::etx())(0);
        e.handle_control(Instant::ZERO, 1, -60.0, &bytes);
    }
}
