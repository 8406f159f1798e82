//! The thesis' randomized flows (seed 001 §5.5, seed 000 §V.E, Figs.
//! 5.10–5.12 / 14–16): transfers between random pairs of a two-floor
//! building mesh running OLSR, at 2 dBm and 6 Mbit/s ("To obtain longer
//! routes, we reduce the power to 2 dBm and use a bit rate of 6 Mbps. This
//! provides a maximum path length of 4 hops in our mesh").
//!
//! **The building is modelled, not copied.** The documents show the
//! testbed's nodes on the first and second floors (seed 001 Figs. 4.1–4.2,
//! seed 000 Figs. 3–4) without coordinates. meshbed places ten nodes on each
//! of two floors of a 41 m × 14 m wing, offices either side of a corridor:
//! [`FIRST_FLOOR`] and [`SECOND_FLOOR`], the second floor's nodes offset by
//! a few metres from the first's, as routers in different offices would be.
//! The radio is testbed B's (the 1st-floor testbed at 6 Mbit/s: the same
//! indoor log-distance loss, exponent 3.3, Nakagami m = 3, MAC retries and
//! RTS/CTS off as in every testbed experiment, seed 001 §4.2) at 2 dBm, with
//! a floor 4 m high whose slab costs [`FLOOR_LOSS_DB`] (ITU-R P.1238's floor
//! penetration factor for an office at 5.2 GHz). A same-floor link reaches
//! about 20 m; a link between floors only joins nodes within about 5 m of
//! each other across. Of the 380 ordered pairs, 114 are 1 hop apart, 154
//! are 2, 96 are 3 and 16 are 4 (the `building_routes_are_at_most_four_hops`
//! test counts them): the longest route is 4 hops, as the text says.
//!
//! **The same random flows for every protocol.** Each repetition draws its
//! pairs from its own seed (`[random_flows]`, the flow-pair stream of
//! `seed + repetition`), and nothing else in a point changes that stream:
//! every protocol of a repetition runs on the same pairs, and a load of n
//! flows has the first n of the pairs a larger load has (the
//! `random_pairs_are_the_same_for_every_protocol` test checks it in
//! `flows.csv`).

use super::{ints, protocols, testbed_b_radio};
use crate::spec::{Experiment, ExperimentConfig};
use meshbed_proto::Protocol;
use meshbed_radio::{Floors, RadioConfig};
use meshbed_sim::scenario::{
    Amount, FlowKind, FlowSpec, NodeSpec, RandomFlows, Routing, Scenario, Topology, TransportFlow,
};

/// The protocols of Figs. 5.10–5.12 (Tahoe and the three ATP variants),
/// and NewReno.
pub const PROTOCOLS: [Protocol; 5] =
    [Protocol::TcpTahoe, Protocol::AtpDefault, Protocol::AtpAggressive, Protocol::AtpAdaptive, Protocol::TcpNewReno];

/// The loads of Figs. 5.10–5.12: simultaneous flows.
pub const FLOW_COUNTS: [i64; 6] = [1, 2, 4, 8, 16, 32];

/// Nodes on the first floor, (x, y) in metres: five offices along each
/// side of the corridor (y = 7), one node in the corridor.
pub const FIRST_FLOOR: [(f64, f64); 10] = [
    (0.0, 0.0),
    (11.5, 0.0),
    (23.0, 0.0),
    (34.5, 0.0),
    (41.0, 4.0),
    (4.5, 14.0),
    (16.0, 14.0),
    (27.5, 14.0),
    (38.0, 14.0),
    (19.5, 7.0),
];

/// Nodes on the second floor, numbered after the first floor's.
pub const SECOND_FLOOR: [(f64, f64); 10] = [
    (2.5, 2.0),
    (14.0, 1.0),
    (25.5, 2.0),
    (39.0, 1.0),
    (0.0, 12.0),
    (10.5, 14.0),
    (22.0, 13.0),
    (32.0, 14.0),
    (41.0, 12.0),
    (30.0, 7.0),
];

/// Floor-to-floor height of an office building.
pub const FLOOR_HEIGHT_M: f64 = 4.0;

/// ITU-R P.1238 (Table 3): floor penetration loss factor L_f = 16 dB for
/// one floor of an office building at 5.2 GHz.
pub const FLOOR_LOSS_DB: f64 = 16.0;

/// The testbed's power for these experiments (seed 001 §5.5).
pub const TX_POWER_DBM: f64 = 2.0;

/// Flows start once OLSR has converged (HELLOs every 2 s, TCs every 5 s,
/// RFC 3626 §18.2), within half a second of each other: "we
/// simultaneously initiate" them (§5.5), as a script starting one process
/// per pair would.
pub const START_WINDOW_S: [f64; 2] = [20.0, 20.5];

/// Seconds a file transfer may take before the run ends. A transfer not
/// done by then counts with the bytes it delivered over this time: 1 MB
/// would take 8,000 s at the starvation threshold (1 kbit/s), so a flow
/// starved by that definition never completes, and a run must stop.
pub const TRANSFER_LIMIT_S: f64 = 300.0;

/// §5.5: "a 1 MB file transfer".
pub const TRANSFER_BYTES: u64 = 1_000_000;

/// §5.5: backlogged transfers "terminate ... after 30 seconds".
pub const STREAMING_S: f64 = 30.0;

/// The radio of the building: testbed B's at 2 dBm, with floors.
pub fn building_radio() -> RadioConfig {
    RadioConfig {
        tx_power_dbm: TX_POWER_DBM,
        floors: Some(Floors { height_m: FLOOR_HEIGHT_M, loss_db: FLOOR_LOSS_DB }),
        ..testbed_b_radio()
    }
}

/// The twenty nodes of the two floors.
pub fn building_nodes() -> Vec<NodeSpec> {
    let on = |floor: u32| move |&(x_m, y_m): &(f64, f64)| NodeSpec { floor, ..NodeSpec::at(x_m, y_m) };
    FIRST_FLOOR.iter().map(on(0)).chain(SECOND_FLOOR.iter().map(on(1))).collect()
}

/// The building with `[random_flows]` drawing pairs for `flow`.
fn building(flow: FlowSpec, end_s: f64) -> Scenario {
    Scenario {
        seed: 1,
        duration_s: end_s,
        radio: building_radio(),
        topology: Topology::Explicit { nodes: building_nodes() },
        // RFC 3626 OLSR, hop count (the documents cite OLSR itself, [21]/[24]).
        routing: Routing::olsr(false),
        flows: Vec::new(),
        mobility: None,
        random_flows: Some(RandomFlows::like(1, Some(START_WINDOW_S), &flow)),
    }
}

fn randomized(name: &str, description: &str, scenario: &Scenario) -> Experiment {
    Experiment::new(
        scenario,
        ExperimentConfig {
            name: name.into(),
            description: description.into(),
            // §5.5: "We repeat each experiment 10 times with different
            // random flows."
            repetitions: 10,
            sweep: vec![ints("random_flows.count", FLOW_COUNTS), protocols(&PROTOCOLS)],
            x_axis: Some("random_flows.count".into()),
            series_axis: Some("protocol".into()),
            window_s: None,
            batch_means: None,
            compare_against: None,
        },
    )
}

/// §5.5.1, Figs. 5.10–5.11: 1 MB transfers between random pairs.
pub fn transfer_experiment(name: &str) -> Experiment {
    let flow = FlowSpec::transfer(0, 1, Protocol::TcpTahoe, TRANSFER_BYTES);
    randomized(
        name,
        "Seed 001 §5.5.1 Figs. 5.10-5.11 / seed 000 Figs. 14-15: 1-32 simultaneous 1 MB transfers between random pairs of a two-floor building mesh, OLSR, 2 dBm, 6 Mbit/s; the same pairs for every protocol of a repetition.",
        &building(flow, START_WINDOW_S[1] + TRANSFER_LIMIT_S),
    )
}

/// §5.5.2, Fig. 5.12: backlogged transfers between random pairs, stopped
/// after 30 s.
pub fn streaming_experiment(name: &str) -> Experiment {
    // Every flow stops 30 s after the window opens: a flow started up to
    // half a second late sends for 29.5 s, and its goodput is over its own
    // time.
    let stop_s = START_WINDOW_S[0] + STREAMING_S;
    let flow = FlowSpec {
        kind: FlowKind::Transport(TransportFlow::new(Protocol::TcpTahoe, Amount::Until { stop_s })),
        ..FlowSpec::default()
    };
    randomized(
        name,
        "Seed 001 §5.5.2 Fig. 5.12 / seed 000 Fig. 16: 1-32 backlogged flows between random pairs of the two-floor building mesh, each stopped after 30 s; the same pairs for every protocol of a repetition.",
        &building(flow, START_WINDOW_S[0] + STREAMING_S + 1.0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use meshbed_radio::{LinkBudget, NodeId};

    /// Hop counts between every ordered pair over links whose mean power
    /// decodes both ways (the links a routing protocol can hold).
    fn hop_counts(s: &Scenario) -> Vec<u32> {
        let b = LinkBudget::new(&s.radio, &s.node_radios(), s.seed).unwrap();
        let n = s.node_count() as usize;
        let link =
            |u: usize, v: usize| b.can_decode(u as NodeId, v as NodeId) && b.can_decode(v as NodeId, u as NodeId);
        let mut out = Vec::new();
        for src in 0..n {
            let mut dist = vec![u32::MAX; n];
            dist[src] = 0;
            let mut queue = std::collections::VecDeque::from([src]);
            while let Some(v) = queue.pop_front() {
                for u in 0..n {
                    if u != v && dist[u] == u32::MAX && link(v, u) {
                        dist[u] = dist[v] + 1;
                        queue.push_back(u);
                    }
                }
            }
            out.extend(dist.iter().enumerate().filter(|&(d, _)| d != src).map(|(_, &h)| h));
        }
        out
    }

    #[test]
    fn building_routes_are_at_most_four_hops() {
        let s = transfer_experiment("t").points("b").unwrap()[0].scenario.clone();
        let hops = hop_counts(&s);
        let count = |h: u32| hops.iter().filter(|&&x| x == h).count();
        assert_eq!(hops.len(), 380);
        assert_eq!([count(1), count(2), count(3), count(4)], [114, 154, 96, 16]);
        // Without the slab loss the floors would merge into one plane with
        // far more links and no 4-hop route.
        let mut flat = s.clone();
        flat.radio.floors = Some(Floors { height_m: FLOOR_HEIGHT_M, loss_db: 0.0 });
        let flat_hops = hop_counts(&flat);
        assert!(flat_hops.iter().all(|&h| h <= 3), "{:?}", flat_hops.iter().max());
        assert!(flat_hops.iter().filter(|&&h| h == 1).count() > 114);
    }

    #[test]
    fn both_experiments_sweep_loads_and_protocols_on_the_building() {
        for e in [transfer_experiment("t"), streaming_experiment("s")] {
            let points = e.points("b").unwrap();
            assert_eq!(points.len(), FLOW_COUNTS.len() * PROTOCOLS.len());
            assert_eq!(e.config.repetitions, 10);
            let s = &points[points.len() - 1].scenario;
            assert_eq!(s.flow_count(), 32);
            assert_eq!((s.radio.tx_power_dbm, s.radio.data_rate_kbps), (2.0, 6_000));
            assert_eq!((s.radio.mac.short_retry_limit, s.radio.mac.rts_threshold_bytes), (0, None));
            assert!(matches!(s.routing, Routing::Olsr { .. }));
            assert_eq!(s.node_radios().iter().filter(|n| n.floor == 1).count(), 10);
        }
    }
}
