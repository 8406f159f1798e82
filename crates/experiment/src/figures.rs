//! The figures an experiment leaves on disk, chosen from its shape:
//!
//! * with a numeric x axis (e.g. `hops`): goodput vs x with error bars (mean
//!   ± sd over repetitions), one line per series value (e.g. protocol), as
//!   seed 001 Fig. 5.1; and with several flows, unfairness vs x (Fig. 5.4(c));
//! * a CDF of per-flow goodput per series at the largest x (Fig. 5.4(b));
//! * for traced flows, goodput (200 ms sliding window) and delay traces of the
//!   first repetition in the style of Fig. 5.2/5.3, and with several flows,
//!   every flow's instantaneous goodput over time (Fig. 5.9; seed 002 Fig. 10).

use crate::metrics::{self, INSTANT_WINDOW};
use crate::plot::{self, LineChart, PlotError, Series, TraceChart};
use crate::run::{flow_goodput_bps, PointSummary, Results};
use crate::spec::value_text;
use meshbed_core::{Duration, Instant};
use meshbed_sim::FlowResult;
use std::path::{Path, PathBuf};

fn numeric(v: &toml::Value) -> Option<f64> {
    v.as_integer().map(|i| i as f64).or_else(|| v.as_float())
}

/// The x axis: the configured one, else the first axis with numeric values.
pub fn x_axis(results: &Results) -> Option<String> {
    let c = &results.experiment.config;
    c.x_axis
        .clone()
        .or_else(|| c.sweep.iter().find(|a| a.values.iter().all(|v| numeric(v).is_some())).map(|a| a.key.clone()))
}

/// The series axis: the configured one, else `protocol` if swept.
pub fn series_axis(results: &Results, x: Option<&str>) -> Option<String> {
    let c = &results.experiment.config;
    c.series_axis
        .clone()
        .or_else(|| c.sweep.iter().find(|a| a.key == "protocol" && Some(a.key.as_str()) != x).map(|a| a.key.clone()))
}

/// The label of a point's series: the values of every axis but x.
fn series_label(results: &Results, point: usize, x: Option<&str>) -> String {
    let p = &results.points[point];
    let parts: Vec<String> = p
        .values
        .iter()
        .filter(|(k, _)| Some(k.as_str()) != x)
        .map(|(k, v)| if k == "protocol" { value_text(v) } else { format!("{k}={}", value_text(v)) })
        .collect();
    if parts.is_empty() {
        results.experiment.config.name.clone()
    } else {
        parts.join(", ")
    }
}

fn x_label(key: &str) -> String {
    match key {
        "hops" => "Path length (hops)".into(),
        "flow_count" => "Number of flows".into(),
        other => other.into(),
    }
}

/// Instantaneous goodput of one flow over a 200 ms sliding window (seed 001 §5.1.1).
pub fn instantaneous_goodput(flow: &FlowResult, end_s: f64) -> Vec<(f64, f64)> {
    let deliveries: Vec<(Instant, u64)> = flow
        .trace
        .iter()
        .filter(|t| t.kind == "delivered_bytes")
        .map(|t| (Instant::ZERO + Duration::from_secs_f64(t.t_s), t.value as u64))
        .collect();
    metrics::sliding_window_goodput(
        &deliveries,
        INSTANT_WINDOW,
        Duration::from_millis(100),
        Instant::ZERO,
        Instant::ZERO + Duration::from_secs_f64(end_s),
    )
    .into_iter()
    .map(|(t, g)| (t.as_secs_f64(), g / 1e6))
    .collect()
}

fn trace_points(flow: &FlowResult, kind: &str) -> Vec<(f64, f64)> {
    flow.trace.iter().filter(|t| t.kind == kind).map(|t| (t.t_s, t.value / 1e3)).collect()
}

/// Draws every figure that fits the experiment into `dir`.
pub fn draw(results: &Results, summaries: &[PointSummary], dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
    let mut out = Vec::new();
    let name = &results.experiment.config.name;
    let x = x_axis(results);
    let multi = results.points.iter().any(|p| p.scenario.flows.len() > 1);
    let _ = series_axis(results, x.as_deref());

    if let Some(xk) = &x {
        // Group points into series by the values of the other axes.
        let mut labels: Vec<String> = Vec::new();
        let mut goodput: Vec<Series> = Vec::new();
        let mut unfair: Vec<Series> = Vec::new();
        for s in summaries {
            let p = &results.points[s.point];
            let Some(xv) = p.value(xk).and_then(numeric) else { continue };
            let label = series_label(results, s.point, Some(xk));
            let i = match labels.iter().position(|l| *l == label) {
                Some(i) => i,
                None => {
                    labels.push(label.clone());
                    goodput.push(Series { label: label.clone(), points: vec![], error: Some(vec![]) });
                    unfair.push(Series { label, points: vec![], error: Some(vec![]) });
                    labels.len() - 1
                }
            };
            goodput[i].points.push((xv, s.flow_goodput_bps.mean / 1e6));
            goodput[i].error.as_mut().expect("set").push(s.flow_goodput_bps.sd / 1e6);
            unfair[i].points.push((xv, s.unfairness.mean));
            unfair[i].error.as_mut().expect("set").push(s.unfairness.sd);
        }
        let integer = results
            .experiment
            .config
            .sweep
            .iter()
            .find(|a| &a.key == xk)
            .is_some_and(|a| a.values.iter().all(|v| v.is_integer()));
        out.extend(plot::line_chart(
            &LineChart {
                title: format!("{name}: goodput per flow (mean ± sd)"),
                x_label: x_label(xk),
                y_label: "Goodput (Mbit/s)".into(),
                series: goodput,
                x_integer_ticks: integer,
            },
            &dir.join("goodput"),
        )?);
        if multi {
            out.extend(plot::line_chart(
                &LineChart {
                    title: format!("{name}: unfairness (normalised sd of flow goodput)"),
                    x_label: x_label(xk),
                    y_label: "Unfairness".into(),
                    series: unfair,
                    x_integer_ticks: integer,
                },
                &dir.join("unfairness"),
            )?);
        }
    }

    // CDF of per-flow goodput per series, at the largest x (or every point).
    let x_max = x.as_deref().and_then(|xk| {
        results
            .points
            .iter()
            .filter_map(|p| p.value(xk).and_then(numeric))
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
    });
    let mut cdf: Vec<(String, Vec<f64>)> = Vec::new();
    for r in &results.runs {
        let p = &results.points[r.point];
        if let (Some(xk), Some(xm)) = (&x, x_max) {
            if p.value(xk).and_then(numeric) != Some(xm) {
                continue;
            }
        }
        let label = series_label(results, r.point, x.as_deref());
        let entry = match cdf.iter().position(|(l, _)| *l == label) {
            Some(i) => &mut cdf[i].1,
            None => {
                cdf.push((label, vec![]));
                &mut cdf.last_mut().expect("pushed").1
            }
        };
        entry.extend(r.report.flows.iter().map(|f| flow_goodput_bps(results, f) / 1e6));
    }
    let at = match (&x, x_max) {
        (Some(xk), Some(xm)) => format!(" at {xk} = {xm}"),
        _ => String::new(),
    };
    out.extend(plot::cdf_chart(
        &format!("{name}: CDF of per-flow goodput{at}"),
        "Goodput (Mbit/s)",
        &cdf,
        &dir.join("goodput_cdf"),
    )?);

    // Traces of the first repetition of every point whose flows were traced.
    for r in results.runs.iter().filter(|r| r.rep == 0) {
        let p = &results.points[r.point];
        if !r.report.flows.iter().any(|f| !f.trace.is_empty()) {
            continue;
        }
        let tag: String = p
            .label()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' })
            .collect();
        let end_s = p.scenario.duration_s;
        if p.scenario.flows.len() > 1 {
            let series: Vec<(String, Vec<(f64, f64)>)> = r
                .report
                .flows
                .iter()
                .map(|f| (format!("flow {} ({})", f.flow + 1, f.protocol), instantaneous_goodput(f, end_s)))
                .collect();
            out.extend(plot::multi_trace_chart(
                &format!("{name} [{}]: goodput over 200 ms windows", p.label()),
                &series,
                "Time (s)",
                "Goodput (Mbit/s)",
                &dir.join(format!("flows_over_time_{tag}")),
            )?);
        } else if let Some(f) = r.report.flows.first() {
            let end = f.completion_time_s.unwrap_or(end_s);
            out.extend(plot::trace_chart(
                &TraceChart {
                    title: format!("{name} [{}]: goodput and delays, repetition 0", p.label()),
                    goodput: instantaneous_goodput(f, end),
                    d_max: trace_points(f, "d_max_us"),
                    d_s: trace_points(f, "d_s_us"),
                    d_avg: trace_points(f, "d_avg_sent_us"),
                },
                &dir.join(format!("trace_{tag}")),
            )?);
        }
    }
    Ok(out)
}
