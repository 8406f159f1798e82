//! Benchmark (not a test), issue 11: 100 nodes in 1000 m × 1000 m moving by
//! random waypoint at up to 20 m/s, 25 TCP NewReno transfers of 2 MB between
//! random pairs (`[random_flows]`), 100 simulated seconds, with DSR and
//! with AODV: wall time on one core and events per second.
//!
//! `cargo run --release -p meshbed-sim --example manet_bench`

use meshbed_proto::Protocol;
use meshbed_sim::mobility::MobilitySpec;
use meshbed_sim::scenario::{FlowSpec, RandomFlows, Routing, Scenario, Topology};

fn scenario(routing: Routing) -> Scenario {
    let mut s = Scenario::chain(1, 200.0, 100.0);
    s.seed = 5;
    s.topology = Topology::Random { nodes: 100, width_m: 1000.0, height_m: 1000.0 };
    s.routing = routing;
    s.mobility = Some(MobilitySpec::random_waypoint(1.0, 20.0, 0.0));
    // 25 pairs from the seed's own stream, the same for both protocols.
    let transfer = FlowSpec::transfer(0, 1, Protocol::TcpNewReno, 2_000_000);
    s.flows.clear();
    s.random_flows = Some(RandomFlows::like(25, Some([0.0, 5.0]), &transfer));
    s
}

fn main() {
    println!(
        "{:<6} {:>10} {:>12} {:>12} {:>10} {:>14}",
        "", "wall s", "events", "M events/s", "completed", "goodput Mb/s"
    );
    for (name, routing) in [("dsr", Routing::dsr()), ("aodv", Routing::aodv(None))] {
        let s = scenario(routing);
        let t0 = std::time::Instant::now();
        let r = meshbed_sim::run(&s).expect("valid scenario");
        let wall = t0.elapsed().as_secs_f64();
        let done = r.flows.iter().filter(|f| f.completed()).count();
        let goodput: f64 = r.flows.iter().map(|f| f.goodput_bps).sum::<f64>() / 1e6;
        println!(
            "{name:<6} {wall:>10.2} {:>12} {:>12.2} {:>7}/25 {goodput:>14.2}",
            r.events,
            r.events as f64 / wall / 1e6,
            done
        );
    }
}
