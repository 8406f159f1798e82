//! Renders one example of each figure kind, with made-up but plausible data,
//! to look at: `cargo run -p meshbed-experiment --example plot_gallery [DIR]`
//! (default DIR: /tmp/plot-examples).

use std::path::PathBuf;

use meshbed_experiment::plot::{
    cdf_chart, line_chart, multi_trace_chart, trace_chart, CdfChart, CdfSeries, LineChart, MultiTraceChart, Series,
    TimeSeries, TraceChart, TracePanel, Windows, YScale,
};

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

    // Goodput against chain length, the mean and an interval over runs. TCP's falls by
    // decades, so the axis is logarithmic; where every transfer was
    // incomplete (the last hops) its points are hollow.
    let protocols = [("ATP", 2.1, 0.55), ("TCP NewReno", 1.7, 2.5), ("TCP Vegas", 1.9, 0.5)];
    let series = protocols
        .iter()
        .map(|&(name, g1, decay)| {
            let points: Vec<(f64, f64)> =
                (1..=8).map(|h| (h as f64, g1 * (h as f64).powf(-decay) * (1.0 + 0.05 * rng.next()))).collect();
            let interval = points
                .iter()
                .map(|p| {
                    let e = p.1 * (0.05 + 0.1 * rng.next());
                    Some((p.1 - e, p.1 + e))
                })
                .collect();
            let hollow = points.iter().map(|p| p.1 < 0.02).collect();
            Series { label: name.to_string(), points, interval, hollow, style: None }
        })
        .collect();
    let chart = LineChart {
        title: "Goodput over a chain, 802.11b at 2 Mbit/s".to_string(),
        x_label: "Number of hops".to_string(),
        y_label: "Goodput (Mbit/s)".to_string(),
        series,
        x_integer_ticks: true,
        y_scale: YScale::Auto,
        hollow_label: Some("hollow: every transfer incomplete".to_string()),
        key: None,
        caption: vec![
            "n = 10 repetitions per point (seeds 1\u{2013}10). Bars: 95% confidence interval of the mean.".into()
        ],
    };
    for p in line_chart(&chart, &dir.join("line_goodput_vs_hops"))? {
        println!("{}", p.display());
    }

    // CDF of per-flow goodput.
    let series: Vec<CdfSeries> = [("ATP", 420.0, 60.0), ("TCP NewReno", 300.0, 200.0)]
        .iter()
        .map(|&(name, mean, spread)| {
            let samples = (0..60).map(|_| (mean + spread * (rng.next() + rng.next() - 1.0)).max(0.0)).collect();
            CdfSeries { label: name.to_string(), samples, style: None }
        })
        .collect();
    let cdf = CdfChart {
        title: "Per-flow goodput, 30 random topologies".into(),
        x_label: "Goodput (kbit/s)".into(),
        series,
        key: None,
        caption: vec![],
    };
    for p in cdf_chart(&cdf, &dir.join("cdf_flow_goodput"))? {
        println!("{}", p.display());
    }

    // ATP trace: goodput and delay feedback over time.
    let windows = Some(Windows { length_s: 0.2, step_s: 0.1 });
    let mut trace =
        TraceChart { title: "ATP over a 4-hop chain".to_string(), goodput_windows: windows, ..Default::default() };
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

    // TCP trace: goodput and the congestion window (a saw-tooth of halvings).
    let mut tcp = TraceChart {
        title: "TCP NewReno over a 4-hop chain, a title long enough that it has to be set smaller to fit".to_string(),
        lower: TracePanel::Cwnd,
        goodput_windows: windows,
        ..Default::default()
    };
    let mut cwnd = 1.0;
    for k in 0..600 {
        let t = k as f64 * 0.1;
        tcp.goodput.push((t, (cwnd / 12.0 + 0.1 * (rng.next() - 0.5)).max(0.0)));
        cwnd = if rng.next() < 0.04 { (cwnd / 2.0f64).floor().max(1.0) } else { cwnd + 1.0 / cwnd };
        tcp.cwnd_segments.push((t, cwnd));
    }
    for p in trace_chart(&tcp, &dir.join("trace_tcp_4hop"))? {
        println!("{}", p.display());
    }

    // Stack topology: three flows over time.
    let flows: Vec<TimeSeries> = (0..3)
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
            TimeSeries { label: format!("Flow {}", f + 1), points: pts, style: None }
        })
        .collect();
    let stack = MultiTraceChart {
        title: "Stack topology: flows joining every 10 s".into(),
        x_label: "Time (s)".into(),
        y_label: "In-order delivery (Mbit/s)".into(),
        series: flows,
        windows,
        caption: vec![],
    };
    for p in multi_trace_chart(&stack, &dir.join("multi_trace_stack"))? {
        println!("{}", p.display());
    }

    // Degenerate inputs: they should still give a sensible, labelled frame.
    let edge = |label: &str, points: Vec<(f64, f64)>, error: Option<Vec<f64>>| Series {
        label: label.to_string(),
        interval: points.iter().zip(error.unwrap_or_default()).map(|(p, e)| Some((p.1 - e, p.1 + e))).collect(),
        points,
        ..Default::default()
    };
    let edges = [
        (
            "edge_single_point",
            "Edge case: one point, NaN skipped",
            "Number of flows",
            "Jain's fairness index",
            vec![edge("ATP", vec![(4.0, 0.93), (f64::NAN, 1.0)], Some(vec![0.04]))],
            true,
        ),
        (
            "edge_empty",
            "Edge case: no data",
            "Number of hops",
            "Goodput (Mbit/s)",
            vec![edge("ATP", vec![], None)],
            true,
        ),
        (
            "edge_many_flat",
            "Edge case: 12 series, all flat",
            "Offered load (Mbit/s)",
            "Goodput (Mbit/s)",
            (0..12).map(|i| edge(&format!("Flow {i}"), vec![(0.5, 1.0), (1.0, 1.0), (1.5, 1.0)], None)).collect(),
            false,
        ),
    ];
    for (stem, title, x_label, y_label, series, x_integer_ticks) in edges {
        let chart = LineChart {
            title: title.to_string(),
            x_label: x_label.to_string(),
            y_label: y_label.to_string(),
            series,
            x_integer_ticks,
            ..Default::default()
        };
        line_chart(&chart, &dir.join(stem))?;
    }
    Ok(())
}
