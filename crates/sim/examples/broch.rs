//! The classic routing comparison setting (Broch et al., MobiCom 1998): 50
//! nodes in 1500 m × 300 m, random waypoint up to 20 m/s, pause times 0 and
//! 900 s, 20 CBR sources of 4 packets/s × 64 B between random pairs (from
//! their own random stream, the same for every protocol), 900 s. Prints the
//! packet delivery ratio and the routing overhead (control packets sent per
//! data packet delivered) per protocol and pause time, mean over the seeds.
//!
//! `cargo run --release -p meshbed-sim --example broch -- [SECONDS] [SEEDS] [PROTOCOL]`

use meshbed_core::{stream_rng, StreamId, StreamKind};
use meshbed_sim::mobility::MobilitySpec;
use meshbed_sim::scenario::{FlowSpec, Routing, Scenario, Topology, Traffic};
use rand::Rng;

fn scenario(routing: Routing, pause_s: f64, seed: u64, seconds: f64) -> Scenario {
    let mut s = Scenario::chain(1, 200.0, seconds);
    s.seed = seed;
    s.topology = Topology::Random { nodes: 50, width_m: 1500.0, height_m: 300.0 };
    s.routing = routing;
    s.mobility = Some(MobilitySpec::random_waypoint(0.1, 20.0, pause_s));
    // 20 sources, each to another random node, from the experiment's stream.
    let mut rng = stream_rng(seed, StreamId::new(StreamKind::Experiment, 0));
    s.flows = (0..20u32)
        .map(|_| {
            let src = rng.gen_range(0..50u32);
            let dst = (src + rng.gen_range(1..50u32)) % 50;
            FlowSpec {
                src,
                dst,
                traffic: Traffic::Cbr,
                rate_kbps: Some(4.0 * 64.0 * 8.0 / 1000.0),
                packet_bytes: 64,
                start_s: rng.gen::<f64>() * 10.0,
                ..FlowSpec::default()
            }
        })
        .collect();
    s
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let seconds: f64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(900.0);
    let seeds: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(5);
    println!("{seconds} s, seeds 1..={seeds}");
    println!("{:<16} {:>7} {:>8} {:>10} {:>10}", "protocol", "pause s", "PDR", "overhead", "wall s");
    let only = args.get(3).cloned();
    let protocols = [("dsr", Routing::dsr()), ("aodv", Routing::aodv(None)), ("olsr", Routing::olsr(false))];
    for (name, routing) in protocols.into_iter().filter(|(n, _)| only.as_deref().is_none_or(|o| o == *n)) {
        for pause_s in [0.0, 900.0] {
            let (mut pdr, mut overhead) = (0.0, 0.0);
            let t0 = std::time::Instant::now();
            for seed in 1..=seeds {
                let r = meshbed_sim::run(&scenario(routing.clone(), pause_s, seed, seconds)).expect("valid scenario");
                let sent: u64 = r.flows.iter().map(|f| f.sent_packets).sum();
                let got: u64 = r.flows.iter().map(|f| f.received_packets).sum();
                let control: u64 = r.net_per_node.iter().map(|c| c.control_packets_sent).sum();
                pdr += got as f64 / sent.max(1) as f64 / seeds as f64;
                overhead += control as f64 / got.max(1) as f64 / seeds as f64;
            }
            println!("{name:<16} {pause_s:>7.0} {pdr:>8.3} {overhead:>10.2} {:>10.1}", t0.elapsed().as_secs_f64());
        }
    }
}
