//! `meshbed bench`: simulator speed, measured on this machine.
//!
//! Speed targets live here, never in tests: the numbers depend on the machine.

use crate::out;
use anyhow::Result;
use meshbed_sim::Scenario;
use serde_json::json;

pub fn run(sim_seconds: f64, repetitions: u32, json_out: bool) -> Result<()> {
    // A saturated UDP flow along a 6-hop 802.11a 24 Mbit/s chain (200 m spacing,
    // 250 m / 550 m ranges): the reference workload.
    let mut s = Scenario::chain(6, 200.0, sim_seconds);
    s.radio.data_rate_kbps = 24_000;
    let mut samples = Vec::new();
    for rep in 0..repetitions {
        s.seed = 1 + rep as u64;
        let t0 = std::time::Instant::now();
        let report = meshbed_sim::run(&s)?;
        let wall_s = t0.elapsed().as_secs_f64();
        samples.push((report.events as f64 / wall_s, wall_s / sim_seconds, report.events, wall_s));
        if !json_out {
            out(&format!(
                "rep {rep}: {} events in {:.3} s wall = {:.2} M events/s, {:.4} wall s per simulated s\n",
                report.events,
                wall_s,
                report.events as f64 / wall_s / 1e6,
                wall_s / sim_seconds
            ))?;
        }
    }
    let mut rates: Vec<f64> = samples.iter().map(|s| s.0).collect();
    let mut ratios: Vec<f64> = samples.iter().map(|s| s.1).collect();
    rates.sort_by(f64::total_cmp);
    ratios.sort_by(f64::total_cmp);
    let median = |v: &[f64]| v[v.len() / 2];
    if json_out {
        out(&format!(
            "{}\n",
            json!({
                "workload": "saturated UDP, 6-hop chain, 802.11a 24 Mbit/s, 200 m spacing",
                "simulated_seconds": sim_seconds,
                "repetitions": repetitions,
                "events_per_wall_second_median": median(&rates),
                "wall_seconds_per_simulated_second_median": median(&ratios),
                "events_per_repetition": samples.iter().map(|s| s.2).collect::<Vec<_>>(),
            })
        ))
    } else {
        out(&format!(
            "median over {repetitions}: {:.2} M events/s on one core, {:.4} wall s per simulated s ({:.0}x faster than real time)\n",
            median(&rates) / 1e6,
            median(&ratios),
            1.0 / median(&ratios)
        ))
    }
}
