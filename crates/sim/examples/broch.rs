//! The classic routing comparison setting (Broch et al., MobiCom 1998),
//! `examples/broch.toml`: 50 nodes in 1500 m × 300 m, random waypoint up to
//! 20 m/s, 20 CBR sources of 4 packets/s × 64 B between random pairs
//! (`[random_flows]`: the same pairs for every protocol under one seed),
//! 900 s, for DSR, AODV and OLSR (with and without link-layer
//! notification) at pause times 0 and 900 s. Prints, over
//! the seeds, the packet delivery ratio and the routing overhead (control
//! packets sent per data packet delivered) as mean ± sd, the mean delay,
//! and the network layer's drops by cause.
//!
//! `cargo run --release -p meshbed-sim --example broch -- [SECONDS] [SEEDS] [PROTOCOL]`

use meshbed_sim::mobility::MobilitySpec;
use meshbed_sim::scenario::{Routing, Scenario};

fn mean_sd(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = if x.len() > 1 { x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0) } else { 0.0 };
    (mean, var.sqrt())
}

fn main() {
    let base = Scenario::from_toml(include_str!("../../../examples/broch.toml")).expect("examples/broch.toml");
    let args: Vec<String> = std::env::args().collect();
    let seconds: f64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(900.0);
    let seeds: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(5);
    let only = args.get(3).cloned();
    println!("{seconds} s, seeds 1..={seeds}");
    println!(
        "{:<6} {:>7} {:>15} {:>15} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}",
        "proto", "pause s", "PDR", "overhead", "delay ms", "no route", "disc. t/o", "link", "queue", "wall s"
    );
    // OLSR twice: as olsrd runs it (no link-layer notification, the
    // default) and with RFC 3626 §13's notification.
    let olsr_lln = Routing::Olsr { etx: false, link_layer_notification: true, control_priority: true };
    let protocols = [
        ("dsr", Routing::dsr()),
        ("aodv", Routing::aodv(None)),
        ("olsr", Routing::olsr(false)),
        ("olsr-lln", olsr_lln),
    ];
    for (name, routing) in protocols.into_iter().filter(|(n, _)| only.as_deref().is_none_or(|o| o == *n)) {
        for pause_s in [0.0, 900.0] {
            let (mut pdr, mut overhead, mut delay) = (vec![], vec![], vec![]);
            let mut drops = meshbed_sim::Drops::default();
            let t0 = std::time::Instant::now();
            for seed in 1..=seeds {
                let mut s = base.clone();
                s.seed = seed;
                s.duration_s = seconds;
                s.routing = routing.clone();
                s.mobility = Some(MobilitySpec::random_waypoint(0.1, 20.0, pause_s));
                let r = meshbed_sim::run(&s).expect("valid scenario");
                let sent: u64 = r.flows.iter().map(|f| f.sent_packets).sum();
                let got: u64 = r.flows.iter().map(|f| f.received_packets).sum();
                pdr.push(got as f64 / sent.max(1) as f64);
                overhead.push(r.routing_overhead_ratio.unwrap_or(0.0));
                // A flow without a delay received nothing: it weighs nothing.
                let weighted: f64 =
                    r.flows.iter().filter_map(|f| Some(f.mean_delay_s? * f.received_packets as f64)).sum();
                delay.push(weighted / got.max(1) as f64 * 1e3);
                drops.add(&r.net_total.drops);
            }
            let ((p, psd), (o, osd), (d, _)) = (mean_sd(&pdr), mean_sd(&overhead), mean_sd(&delay));
            println!(
                "{name:<6} {pause_s:>7.0} {:>15} {:>15} {d:>9.1} {:>9} {:>9} {:>9} {:>9} {:>8.1}",
                format!("{p:.3} ± {psd:.3}"),
                format!("{o:.2} ± {osd:.2}"),
                drops.no_route,
                drops.discovery_timeout + drops.discovery_overflow,
                drops.retry_limit,
                drops.queue_overflow,
                t0.elapsed().as_secs_f64()
            );
        }
    }
}
