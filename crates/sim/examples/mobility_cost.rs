//! Benchmark (not a test): what a frame costs as the network grows at a
//! constant density, with every node moving (random waypoint up to 20 m/s).
//!
//! 100, 400 and 1600 nodes in a square whose area grows with the node count
//! (100 nodes per 1000 m × 1000 m), one CBR flow (8 packets/s × 512 B)
//! from every fifth node to its nearest neighbour at time zero, 10 simulated
//! seconds. With the grid of `LinkBudget::neighbours_at`, a frame's cost
//! depends on its neighbourhood (every node above the interference floor
//! gets its reception events), not the network: the table prints events per
//! attempt (≈ 2 × receivers) next to the wall time per event and per attempt.
//! At this density the default radio's interference floor (−102 dBm) reaches
//! about 1.4 km, so the neighbourhood itself grows until the square is
//! several times wider than that (scenarios stop at 10 000 nodes); two more
//! series put the floor at −92 dBm and at −85 dBm (a reach nearer the
//! carrier-sense range), where the neighbourhood stops growing within the
//! sizes run. Routes are computed once at time zero, so flows whose
//! nodes drift apart retry and drop, which still costs frames.
//!
//! `cargo run --release -p meshbed-sim --example mobility_cost [-- NODES...]`
//! (default 100 400 1600)

use meshbed_sim::mobility::MobilitySpec;
use meshbed_sim::scenario::{FlowSpec, Scenario, Topology};

fn scenario(nodes: u32, floor_dbm: f64) -> Scenario {
    let side_m = 1000.0 * (nodes as f64 / 100.0).sqrt();
    let mut s = Scenario::chain(1, 200.0, 10.0);
    s.radio.interference_floor_dbm = floor_dbm;
    s.seed = 11;
    s.topology = Topology::Random { nodes, width_m: side_m, height_m: side_m };
    s.mobility = Some(MobilitySpec::random_waypoint(1.0, 20.0, 0.0));
    let at = s.node_radios();
    s.flows = (0..nodes)
        .step_by(5)
        .filter_map(|src| {
            let a = &at[src as usize];
            let (dst, d) = (0..nodes)
                .filter(|&j| j != src)
                .map(|j| (j, libm::hypot(a.x_m - at[j as usize].x_m, a.y_m - at[j as usize].y_m)))
                .min_by(|x, y| x.1.total_cmp(&y.1))?;
            (d < 200.0).then_some(FlowSpec::cbr(src, dst, 8.0 * 512.0 * 8.0 / 1000.0, 512))
        })
        .collect();
    s
}

fn main() {
    let mut sizes: Vec<u32> = std::env::args().skip(1).map(|a| a.parse().expect("node counts")).collect();
    if sizes.is_empty() {
        sizes = vec![100, 400, 1600];
    }
    println!(
        "{:>6} {:>6} {:>6} {:>12} {:>12} {:>10} {:>16} {:>14} {:>12}",
        "floor",
        "nodes",
        "flows",
        "events",
        "tx attempts",
        "wall s",
        "events/attempt",
        "ns per attempt",
        "ns per event"
    );
    for (floor_dbm, nodes) in [-102.0, -92.0, -85.0].into_iter().flat_map(|f| sizes.iter().map(move |&n| (f, n))) {
        let s = scenario(nodes, floor_dbm);
        let t0 = std::time::Instant::now();
        let r = meshbed_sim::run(&s).expect("valid scenario");
        let wall = t0.elapsed().as_secs_f64();
        let attempts = r.mac_total.data_tx_attempts + r.mac_total.acks_sent;
        println!(
            "{:>6} {:>6} {:>6} {:>12} {:>12} {:>10.3} {:>16.0} {:>14.0} {:>12.0}",
            floor_dbm,
            nodes,
            s.flows.len(),
            r.events,
            attempts,
            wall,
            r.events as f64 / attempts as f64,
            wall * 1e9 / attempts as f64,
            wall * 1e9 / r.events as f64
        );
    }
}
