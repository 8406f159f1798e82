//! Renders one example of each figure kind, with made-up but plausible data,
//! to look at: `cargo run -p meshbed-experiment --example plot_gallery [DIR]`
//! (default DIR: /tmp/plot-examples).

use std::path::PathBuf;

use meshbed_experiment::plot::{cdf_chart, line_chart, multi_trace_chart, trace_chart, LineChart, Series, TraceChart};

/// A small deterministic generator (xorshift), uniform in [0, 1).
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "/tmp/plot-examples".to_string()));
    let mut rng = Noise(0x9e37_79b9_7f4a_7c15);

    // Goodput against chain length, mean ± sd over runs.
    let protocols = [("ATP", 2.1, 0.55), ("TCP NewReno", 1.7, 0.45), ("TCP Vegas", 1.9, 0.5)];
    let series = protocols
        .iter()
        .map(|&(name, g1, decay)| {
            let points: Vec<(f64, f64)> =
                (1..=8).map(|h| (h as f64, g1 * (h as f64).powf(-decay) + 0.05 * rng.next())).collect();
            let error = points.iter().map(|p| p.1 * (0.05 + 0.1 * rng.next())).collect();
            Series { label: name.to_string(), points, error: Some(error) }
        })
        .collect();
    let chart = LineChart {
        title: "Goodput over a chain, 802.11b at 2 Mbit/s".to_string(),
        x_label: "Number of hops".to_string(),
        y_label: "Goodput (Mbit/s)".to_string(),
        series,
        x_integer_ticks: true,
    };
    for p in line_chart(&chart, &dir.join("line_goodput_vs_hops"))? {
        println!("{}", p.display());
    }

    // CDF of per-flow goodput.
    let cdf: Vec<(String, Vec<f64>)> = [("ATP", 420.0, 60.0), ("TCP NewReno", 300.0, 200.0)]
        .iter()
        .map(|&(name, mean, spread)| {
            let v = (0..60).map(|_| (mean + spread * (rng.next() + rng.next() - 1.0)).max(0.0)).collect();
            (name.to_string(), v)
        })
        .collect();
    for p in
        cdf_chart("Per-flow goodput, 30 random topologies", "Goodput (kbit/s)", &cdf, &dir.join("cdf_flow_goodput"))?
    {
        println!("{}", p.display());
    }

    // ATP trace: goodput and delay feedback over time.
    let mut trace = TraceChart { title: "ATP over a 4-hop chain".to_string(), ..Default::default() };
    for k in 0..600 {
        let t = k as f64 * 0.1;
        let g = if t < 1.0 { t * 0.9 } else { 0.9 + 0.25 * (rng.next() - 0.5) };
        trace.goodput.push((t, g));
        let base = 35.0 + 10.0 * (t / 9.0).sin();
        trace.d_max.push((t, base + 25.0 + 10.0 * rng.next()));
        trace.d_s.push((t, base + 15.0 * rng.next()));
        trace.d_avg.push((t, base + 5.0 + 3.0 * rng.next()));
    }
    for p in trace_chart(&trace, &dir.join("trace_atp_4hop"))? {
        println!("{}", p.display());
    }

    // Stack topology: three flows over time.
    let flows: Vec<(String, Vec<(f64, f64)>)> = (0..3)
        .map(|f| {
            let start = 10.0 * f as f64;
            let pts = (0..600)
                .map(|k| {
                    let t = k as f64 * 0.1;
                    let active = (t >= start) as u32 as f64;
                    let share = 1.2 / (1.0 + (t / 10.0).floor().min(2.0));
                    (t, active * (share + 0.15 * (rng.next() - 0.5)).max(0.0))
                })
                .collect();
            (format!("Flow {}", f + 1), pts)
        })
        .collect();
    for p in multi_trace_chart(
        "Stack topology: flows joining every 10 s",
        &flows,
        "Time (s)",
        "Goodput (Mbit/s)",
        &dir.join("multi_trace_stack"),
    )? {
        println!("{}", p.display());
    }

    // Degenerate inputs: they should still give a sensible, labelled frame.
    let edge = |label: &str, points: Vec<(f64, f64)>, error: Option<Vec<f64>>| Series {
        label: label.to_string(),
        points,
        error,
    };
    let single = LineChart {
        title: "Edge case: one point, NaN skipped".to_string(),
        x_label: "Number of flows".to_string(),
        y_label: "Jain's fairness index".to_string(),
        series: vec![edge("ATP", vec![(4.0, 0.93), (f64::NAN, 1.0)], Some(vec![0.04]))],
        x_integer_ticks: true,
    };
    line_chart(&single, &dir.join("edge_single_point"))?;
    let empty = LineChart {
        title: "Edge case: no data".to_string(),
        x_label: "Number of hops".to_string(),
        y_label: "Goodput (Mbit/s)".to_string(),
        series: vec![edge("ATP", vec![], None)],
        x_integer_ticks: true,
    };
    line_chart(&empty, &dir.join("edge_empty"))?;
    let many = LineChart {
        title: "Edge case: 12 series, all flat".to_string(),
        x_label: "Offered load (Mbit/s)".to_string(),
        y_label: "Goodput (Mbit/s)".to_string(),
        series: (0..12).map(|i| edge(&format!("Flow {i}"), vec![(0.5, 1.0), (1.0, 1.0), (1.5, 1.0)], None)).collect(),
        x_integer_ticks: false,
    };
    line_chart(&many, &dir.join("edge_many_flat"))?;
    Ok(())
}
