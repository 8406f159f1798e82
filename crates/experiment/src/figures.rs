//! The figures an experiment leaves on disk, chosen from its shape:
//!
//! * with a numeric x axis (e.g. `hops`): goodput vs x with the 95%
//!   confidence interval of the mean over repetitions, one line per series
//!   value (e.g. protocol), as seed 001 Fig. 5.1; and with several flows,
//!   unfairness vs x (Fig. 5.4(c));
//! * a CDF of per-flow goodput per series at the largest x (Fig. 5.4(b));
//! * for traced flows, in-order delivery (200 ms sliding window) and delay
//!   traces of the first repetition in the style of Fig. 5.2/5.3, and with
//!   several flows, every flow's in-order delivery over time (Fig. 5.9;
//!   seed 002 Fig. 10): [`traces`].
//!
//! Every figure carries a caption ([`caption`]: repetitions, seeds, the
//! settings its points share, what the bars mean), and a protocol has the
//! same look in every figure ([`palette`]).

mod caption;
pub mod palette;
mod traces;

use crate::metrics::{self, INSTANT_WINDOW};
use crate::plot::{
    self, CdfChart, CdfSeries, FactoredKey, LineChart, PlotError, Series, SeriesStyle, TraceChart, TracePanel, Windows,
    YScale,
};
use crate::run::{flow_batch_goodput, flow_goodput_bps, PointSummary, Results};
use crate::spec::value_text;
use meshbed_core::{Duration, Instant};
use meshbed_sim::transport::TraceRecord;
use meshbed_sim::{FlowResult, RouteLogEvent, RouteLogSide, TraceKind};
use std::path::{Path, PathBuf};

/// The step of the in-order delivery traces (a 200 ms window every 100 ms).
const INSTANT_STEP: Duration = Duration::from_millis(100);

/// The windows of [`instantaneous_goodput`], as the figures describe them.
pub const GOODPUT_WINDOWS: Windows =
    Windows { length_s: INSTANT_WINDOW.as_nanos() as f64 / 1e9, step_s: INSTANT_STEP.as_nanos() as f64 / 1e9 };

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
    let keys: Vec<&str> = p.values.iter().map(|(k, _)| k.as_str()).collect();
    let parts: Vec<String> = p
        .values
        .iter()
        .filter(|(k, _)| Some(k.as_str()) != x)
        .map(
            |(k, v)| {
                if k == "protocol" {
                    value_text(v)
                } else {
                    format!("{}={}", short_key(k, &keys), value_text(v))
                }
            },
        )
        .collect();
    if parts.is_empty() {
        results.experiment.config.name.clone()
    } else {
        parts.join(", ")
    }
}

/// A swept key as a legend names it: its last part
/// (`radio.mac.feedback_priority` → `feedback_priority`) unless another
/// of `keys` ends the same.
fn short_key<'a>(key: &'a str, keys: &[&str]) -> &'a str {
    let last = |k: &'a str| k.rsplit(['.', ']']).next().unwrap_or(k);
    let short = last(key);
    if keys.iter().filter(|k| k.rsplit(['.', ']']).next() == Some(short)).count() == 1 {
        short
    } else {
        key
    }
}

/// An axis title for a swept key: the documents' words for the usual
/// ones, else the key's last part with the unit its name ends in.
fn x_label(key: &str) -> String {
    match key {
        "hops" => return "Path length (hops)".into(),
        "flow_count" | "random_flows.count" => return "Number of flows".into(),
        _ => {}
    }
    let last = key.rsplit(['.', ']']).next().unwrap_or(key);
    let units = [
        ("_mps", "m/s"),
        ("_dbm", "dBm"),
        ("_db", "dB"),
        ("_kbps", "kbit/s"),
        ("_bytes", "B"),
        ("_m", "m"),
        ("_s", "s"),
    ];
    for (suffix, unit) in units {
        if let Some(name) = last.strip_suffix(suffix) {
            let name = name.replace('_', " ");
            // `packet_bytes`: a size.
            return if unit == "B" { format!("{name} size ({unit})") } else { format!("{name} ({unit})") };
        }
    }
    last.replace('_', " ")
}

/// Instantaneous goodput of one flow over a 200 ms sliding window (seed 001
/// §5.1.1): (end of the window in s, Mbit/s handed to the application in
/// order in it), every 100 ms.
pub fn instantaneous_goodput(flow: &FlowResult, end_s: f64) -> Vec<(f64, f64)> {
    let deliveries: Vec<(Instant, u64)> = flow
        .trace
        .iter()
        .filter(|t| t.kind == TraceKind::DeliveredBytes)
        .map(|t| (Instant::ZERO + Duration::from_secs_f64(t.t_s), t.value as u64))
        .collect();
    metrics::sliding_window_goodput(
        &deliveries,
        INSTANT_WINDOW,
        INSTANT_STEP,
        Instant::ZERO,
        Instant::ZERO + Duration::from_secs_f64(end_s),
    )
    .into_iter()
    .map(|(t, g)| (t.as_secs_f64(), g / 1e6))
    .collect()
}

/// (t in s, kB handed to the application in order so far) of a traced flow.
pub fn delivered_over_time(flow: &FlowResult) -> Vec<(f64, f64)> {
    let mut total = 0.0;
    flow.trace
        .iter()
        .filter(|t| t.kind == TraceKind::DeliveredBytes)
        .map(|t| {
            total += t.value;
            (t.t_s, total / 1e3)
        })
        .collect()
}

/// (t in s, value × `scale`) of a flow's trace records of one kind.
fn trace_points(flow: &FlowResult, kind: TraceKind, scale: f64) -> Vec<(f64, f64)> {
    flow.trace.iter().filter(|t| t.kind == kind).map(|t| (t.t_s, t.value * scale)).collect()
}

/// The delay feedback an ATP flow traces (µs): D_max at the receiver, D_s,
/// D_avg as the receiver sent it and as the sender received it (seed 000
/// Fig. 7b).
const DELAY_KINDS: [TraceKind; 4] =
    [TraceKind::DMaxUs, TraceKind::DSUs, TraceKind::DAvgSentUs, TraceKind::DAvgReceivedUs];

/// The lower panel of a flow's trace figure, from its trace records: the
/// delay feedback if the flow traced any (ATP), else the congestion window
/// if it traced one (TCP), else the (empty) delay panel.
pub fn trace_panel(trace: &[TraceRecord]) -> TracePanel {
    let traced = |kind: TraceKind| trace.iter().any(|t| t.kind == kind);
    if !DELAY_KINDS.iter().any(|&k| traced(k)) && traced(TraceKind::CwndSegments) {
        TracePanel::Cwnd
    } else {
        TracePanel::Delay
    }
}

/// The trace figure of one traced flow of a run that ended at `end_s`.
pub fn trace_chart_of(f: &FlowResult, title: String, end_s: f64) -> TraceChart {
    let [d_max, d_s, d_avg, d_avg_received] = DELAY_KINDS.map(|k| trace_points(f, k, 1e-3));
    TraceChart {
        title,
        goodput: instantaneous_goodput(f, f.completion_time_s().unwrap_or(end_s)),
        goodput_windows: Some(GOODPUT_WINDOWS),
        d_max,
        d_s,
        d_avg,
        d_avg_received,
        cwnd_segments: trace_points(f, TraceKind::CwndSegments, 1.0),
        lower: trace_panel(&f.trace),
        route_failures: f
            .routing_or_zero()
            .route_log
            .iter()
            .filter(|e| e.side == RouteLogSide::Sender && e.event == RouteLogEvent::RouteFailed)
            .map(|e| e.t_s)
            .collect(),
        caption: Vec::new(),
    }
}

/// Whether every transfer of a point was incomplete: its goodput is then
/// bytes delivered over the run's duration, not a transfer's goodput, and
/// the figure draws it hollow.
pub fn every_transfer_incomplete(s: &PointSummary) -> bool {
    s.flows > 0 && s.incomplete_flows == s.flows
}

/// The legend entry of the hollow points.
const INCOMPLETE_LABEL: &str = "hollow: every transfer incomplete";

/// The file name prefixes of the per-point trace figures.
const TRACE_PREFIXES: [&str; 3] = ["trace_", "flows_over_time_", "progress_"];

/// Whether `path` is one of the per-point trace figures (one per traced
/// point), as opposed to the few summary figures of an experiment.
pub fn is_trace_figure(path: &Path) -> bool {
    path.file_name().and_then(|n| n.to_str()).is_some_and(|n| TRACE_PREFIXES.iter().any(|p| n.starts_with(p)))
}

/// The look of each series of the experiment's figures, by label, and the
/// legend by factor when there is one.
#[derive(Default)]
struct Looks {
    by_label: Vec<(String, SeriesStyle)>,
    key: Option<FactoredKey>,
}

impl Looks {
    fn of(&self, label: &str) -> Option<SeriesStyle> {
        self.by_label.iter().find(|(l, _)| l == label).map(|(_, s)| *s)
    }
}

/// When the series are protocols, each protocol's own look ([`palette`]),
/// with a dash per value of the other axes if a protocol has several
/// series (up to four, and then a legend by factor: the protocols, and
/// the dashes); beyond four, and for series that are not protocols, none:
/// by position.
fn series_looks(results: &Results, x: Option<&str>) -> Looks {
    let mut rests: Vec<String> = Vec::new();
    let mut protocols: Vec<(String, SeriesStyle)> = Vec::new();
    let mut looks: Vec<(String, SeriesStyle, usize)> = Vec::new();
    for p in &results.points {
        let Some(protocol) = p.value("protocol").map(value_text).and_then(|n| palette::protocol_named(&n)) else {
            return Looks::default();
        };
        let keys: Vec<&str> = p.values.iter().map(|(k, _)| k.as_str()).collect();
        let rest: Vec<String> = p
            .values
            .iter()
            .filter(|(k, _)| k != "protocol" && Some(k.as_str()) != x)
            .map(|(k, v)| format!("{}={}", short_key(k, &keys), value_text(v)))
            .collect();
        let rest = rest.join(", ");
        let k = rests.iter().position(|r| *r == rest).unwrap_or_else(|| {
            rests.push(rest);
            rests.len() - 1
        });
        let style = palette::protocol_style(protocol);
        if !protocols.iter().any(|(n, _)| n == protocol.name()) {
            protocols.push((protocol.name().to_string(), style));
        }
        looks.push((series_label(results, p.index, x), style, k));
    }
    if rests.len() > plot::Dash::ALL.len() {
        return Looks::default();
    }
    let key = (rests.len() > 1).then(|| FactoredKey {
        looks: protocols,
        dashes: rests.into_iter().enumerate().map(|(k, r)| (r, plot::Dash::ALL[k])).collect(),
    });
    Looks { by_label: looks.into_iter().map(|(label, style, k)| (label, palette::with_dash(style, k))).collect(), key }
}

/// The 95% confidence interval of the mean over `values` (one per
/// repetition) around `mean`, times `scale`; `None` for fewer than two
/// values.
fn ci95(mean: f64, values: &[f64], scale: f64) -> Option<(f64, f64)> {
    let half = metrics::sample_stats(values).ci95;
    half.is_finite().then_some(((mean - half) * scale, (mean + half) * scale))
}

/// The per-run values of a point's summary figures: the mean goodput of a
/// flow, the aggregate goodput, unfairness and log utility of each run.
fn per_run(results: &Results, point: usize) -> [Vec<f64>; 4] {
    let mut out: [Vec<f64>; 4] = Default::default();
    for r in results.runs.iter().filter(|r| r.point == point) {
        let g: Vec<f64> = r.report.flows.iter().map(|f| flow_goodput_bps(results, f)).collect();
        if g.is_empty() {
            continue;
        }
        let values =
            [g.iter().sum::<f64>() / g.len() as f64, g.iter().sum(), metrics::unfairness(&g), metrics::log_utility(&g)];
        for (o, v) in out.iter_mut().zip(values) {
            o.push(v);
        }
    }
    out
}

/// Draws every figure that fits the experiment into `dir`.
pub fn draw(results: &Results, summaries: &[PointSummary], dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
    let mut out = Vec::new();
    let name = &results.experiment.config.name;
    let x = x_axis(results);
    let multi = results.points.iter().any(|p| p.scenario.flow_count() > 1);
    let looks = series_looks(results, x.as_deref());

    if let Some(xk) = &x {
        // Group points into series by the values of the other axes.
        let mut labels: Vec<String> = Vec::new();
        let mut goodput: Vec<Series> = Vec::new();
        let mut unfair: Vec<Series> = Vec::new();
        let mut aggregate: Vec<Series> = Vec::new();
        // Seed 001 Figs. 5.11–5.12 / seed 000 Figs. 15–16: log utility, and
        // Fig. 5.10's starvation as the share of flows below 1 kbit/s.
        let mut utility: Vec<Series> = Vec::new();
        let mut starved: Vec<Series> = Vec::new();
        // Seed 004 Figs. 2 and 4: goodput by batch means ± its 95% interval.
        let mut batch: Vec<Series> = Vec::new();
        // Seed 002 §2 over routing that reacts (Figs. 2(c), 3(b), 4(a),
        // 4(b)): per-point means without error bars, a series only where
        // its points have the quantity (TCP's, for the first two).
        const ROUTE_FIGURES: [(&str, &str, &str); 4] = [
            ("share of time in slow start (TCP, seed 002 Fig. 3)", "Share of time", "slow_start_share"),
            ("largest RTO per flow (TCP, seed 002 Fig. 2)", "RTO (s)", "max_rto"),
            ("share of losses that were link failures (seed 002 Fig. 4(a))", "Share of losses", "link_loss_share"),
            ("share of recomputed routes that are new (seed 002 Fig. 4(b))", "Share of routes", "new_route_share"),
        ];
        let route_figures = results.points.iter().any(|p| p.scenario.routing.is_dynamic());
        let mut routes: [Vec<Series>; 4] = Default::default();
        let mut on_axis: Vec<usize> = Vec::new();
        for s in summaries {
            let p = &results.points[s.point];
            let Some(xv) = p.value(xk).and_then(numeric) else { continue };
            on_axis.push(s.point);
            let label = series_label(results, s.point, Some(xk));
            let i = match labels.iter().position(|l| *l == label) {
                Some(i) => i,
                None => {
                    labels.push(label.clone());
                    let new = || Series { label: label.clone(), style: looks.of(&label), ..Series::default() };
                    for list in [&mut goodput, &mut unfair, &mut aggregate, &mut utility, &mut starved, &mut batch] {
                        list.push(new());
                    }
                    for r in &mut routes {
                        r.push(new());
                    }
                    labels.len() - 1
                }
            };
            let incomplete = every_transfer_incomplete(s);
            let runs = per_run(results, s.point);
            // (Goodput in Mbit/s, aggregate in kbit/s.) The bars: the 95%
            // interval of the mean over the repetitions, computed in linear
            // space from each run's value.
            for ((series, m, scale), values) in [
                (&mut goodput[i], &s.flow_goodput_bps, 1e-6),
                (&mut aggregate[i], &s.aggregate_goodput_bps, 1e-3),
                (&mut unfair[i], &s.unfairness, 1.0),
                (&mut utility[i], &s.log_utility, 1.0),
            ]
            .into_iter()
            .zip(&runs)
            {
                series.points.push((xv, m.mean * scale));
                series.interval.push(ci95(m.mean, values, scale));
                series.hollow.push(incomplete);
            }
            if s.flows > 0 {
                starved[i].points.push((xv, s.starved_flows as f64 / s.flows as f64));
                starved[i].interval.push(None);
                starved[i].hollow.push(incomplete);
            }
            if let Some(m) = s.batch_means.as_ref().filter(|m| m.goodput_bps.n > 0) {
                let ci = m.batch_ci95_bps;
                let mean = m.goodput_bps.mean;
                batch[i].points.push((xv, mean * 1e-6));
                batch[i].interval.push(ci.is_finite().then_some(((mean - ci) * 1e-6, (mean + ci) * 1e-6)));
                batch[i].hollow.push(m.short_flows > 0);
            }
            let r = &s.routes;
            let values = [r.slow_start_share, r.max_rto_s, r.link_loss_share, r.routes_new_share];
            for (series, v) in routes.iter_mut().zip(values) {
                if let Some(v) = v {
                    series[i].points.push((xv, v));
                    series[i].hollow.push(false);
                }
            }
        }
        let integer = results
            .experiment
            .config
            .sweep
            .iter()
            .find(|a| &a.key == xk)
            .is_some_and(|a| a.values.iter().all(|v| v.is_integer()));
        let sample = caption::sample_line(results, &on_axis);
        let settings = caption::settings_line(results, &on_axis);
        let line_chart =
            |what: &str, y_label: &str, series: Vec<Series>, y_scale: YScale, bars: Option<&str>, stem: &str| {
                let mut lines = vec![sample.clone()];
                lines.extend(settings.clone());
                lines.extend(bars.map(String::from));
                let chart = LineChart {
                    title: format!("{name}: {what}"),
                    x_label: x_label(xk),
                    y_label: y_label.into(),
                    series,
                    x_integer_ticks: integer,
                    y_scale,
                    hollow_label: Some(INCOMPLETE_LABEL.into()),
                    key: looks.key.clone(),
                    caption: lines,
                };
                plot::line_chart(&chart, &dir.join(stem))
            };
        let ci = Some(caption::CI_BARS);
        // Goodput over many hops spans decades (ATP's Mbit/s next to TCP's
        // kbit/s): a log axis then, so that no curve lies flat on zero.
        out.extend(line_chart(
            "goodput per flow (mean, 95% CI)",
            "Goodput (Mbit/s)",
            goodput,
            YScale::Auto,
            ci,
            "goodput",
        )?);
        let batch: Vec<Series> = batch.into_iter().filter(|s| !s.points.is_empty()).collect();
        if !batch.is_empty() {
            let what = "goodput by batch means (mean, 95% CI of the batches)";
            let bars = "Bars: 95% confidence interval of the mean over the batches of the runs (seed 004 \u{a7}IV).";
            out.extend(line_chart(what, "Goodput (Mbit/s)", batch, YScale::Auto, Some(bars), "goodput_batch_means")?);
        }
        if multi {
            let what = "unfairness (normalised sd of flow goodput; mean, 95% CI)";
            out.extend(line_chart(what, "Unfairness", unfair, YScale::Linear, ci, "unfairness")?);
            // Seed 002 Fig. 11: the flows' throughput together, kbit/s.
            let what = "aggregate goodput (mean, 95% CI)";
            out.extend(line_chart(what, "Aggregate goodput (kbit/s)", aggregate, YScale::Linear, ci, "aggregate")?);
            let what = "log utility (sum of log10 kbit/s per flow, a starved flow 0; mean, 95% CI)";
            out.extend(line_chart(what, "Log utility", utility, YScale::Linear, ci, "log_utility")?);
            let what = "share of flows starved (below 1 kbit/s)";
            out.extend(line_chart(what, "Share of flows", starved, YScale::Linear, None, "starved_share")?);
        }
        if route_figures {
            for ((what, y_label, stem), series) in ROUTE_FIGURES.into_iter().zip(routes) {
                let series: Vec<Series> = series.into_iter().filter(|s| !s.points.is_empty()).collect();
                if !series.is_empty() {
                    out.extend(line_chart(what, y_label, series, YScale::Linear, None, stem)?);
                }
            }
        }
    }

    // CDF of per-flow goodput per series, at the largest x (or every point
    // without an x axis), and with a few x values one per value as well
    // when runs have several flows (seed 001 Fig. 5.10: a CDF per number of
    // flows).
    let mut xs: Vec<f64> = x
        .as_deref()
        .map(|xk| results.points.iter().filter_map(|p| p.value(xk).and_then(numeric)).collect())
        .unwrap_or_default();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let x_max = xs.last().copied();
    out.extend(goodput_cdf(results, &looks, x.as_deref(), x_max, &dir.join("goodput_cdf"))?);
    if multi && xs.len() > 1 && xs.len() <= CDF_PER_X_MAX {
        for &xv in &xs {
            let stem = format!("goodput_cdf_{}", format!("{xv}").replace('.', "_"));
            out.extend(goodput_cdf(results, &looks, x.as_deref(), Some(xv), &dir.join(stem))?);
        }
    }

    // Traces of the first repetition of every point whose flows were traced.
    out.extend(traces::draw(results, dir)?);
    Ok(out)
}

/// Up to this many x values, a CDF of per-flow goodput for each.
const CDF_PER_X_MAX: usize = 8;

/// The CDF of per-flow goodput of every series, over the runs of the
/// points at `at_x` on the x axis `x` (every run without an x axis).
fn goodput_cdf(
    results: &Results,
    looks: &Looks,
    x: Option<&str>,
    at_x: Option<f64>,
    stem: &Path,
) -> Result<Vec<PathBuf>, PlotError> {
    let name = &results.experiment.config.name;
    let mut cdf: Vec<CdfSeries> = Vec::new();
    let mut points: Vec<usize> = Vec::new();
    for r in &results.runs {
        let p = &results.points[r.point];
        if let (Some(xk), Some(xv)) = (x, at_x) {
            if p.value(xk).and_then(numeric) != Some(xv) {
                continue;
            }
        }
        if !points.contains(&r.point) {
            points.push(r.point);
        }
        let label = series_label(results, r.point, x);
        let entry = match cdf.iter().position(|s| s.label == label) {
            Some(i) => &mut cdf[i].samples,
            None => {
                cdf.push(CdfSeries { label: label.clone(), samples: vec![], style: looks.of(&label) });
                &mut cdf.last_mut().expect("pushed").samples
            }
        };
        // With batch means (seed 004 Fig. 7), each flow's estimate; a flow
        // short of the packet count has none and is left out.
        match &results.experiment.config.batch_means {
            Some(b) => entry
                .extend(r.report.flows.iter().filter_map(|f| flow_batch_goodput(f, b).estimate_bps()).map(|g| g / 1e6)),
            None => entry.extend(r.report.flows.iter().map(|f| flow_goodput_bps(results, f) / 1e6)),
        }
    }
    let at = match (x, at_x) {
        (Some(xk), Some(xm)) => format!(" at {xk} = {xm}"),
        _ => String::new(),
    };
    let sizes: std::collections::BTreeSet<usize> = cdf.iter().map(|s| s.samples.len()).collect();
    let n = match (sizes.first(), sizes.last()) {
        (Some(a), Some(b)) if a == b => format!("{a}"),
        (Some(a), Some(b)) => format!("{a}\u{2013}{b}"),
        _ => "0".into(),
    };
    let mut caption = vec![caption::sample_line(results, &points)];
    caption.extend(caption::settings_line(results, &points));
    caption.push(format!("Each curve: the goodput of each flow of its runs, n = {n} flows."));
    let chart = CdfChart {
        title: format!("{name}: CDF of per-flow goodput{at}"),
        x_label: "Goodput (Mbit/s)".into(),
        series: cdf,
        key: looks.key.clone(),
        caption,
    };
    plot::cdf_chart(&chart, stem)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::SampleStats;
    use meshbed_sim::transport::Side;

    fn summary(runs: usize, flows: usize, incomplete_flows: usize) -> PointSummary {
        let m = SampleStats { mean: 1e4, sd: 1e3, n: runs, min: 9e3, median: 1e4, max: 1.1e4, ci95: 1e3 };
        PointSummary {
            point: 0,
            label: "hops=4 protocol=tcp-reno".into(),
            runs,
            flow_goodput_bps: m,
            aggregate_goodput_bps: m,
            unfairness: m,
            log_utility: m,
            jain_index: m,
            starved_flows: 0,
            flows,
            incomplete_flows,
            failed_flows: 0,
            per_flow_mean_bps: vec![1e4],
            retransmissions: m,
            routes: Default::default(),
            route_discovery_s: None,
            routing_overhead_ratio: None,
            echo_rtt_s: None,
            batch_means: None,
            delays: Default::default(),
        }
    }

    #[test]
    fn swept_keys_read_short_on_axes_and_in_legends() {
        assert_eq!(x_label("hops"), "Path length (hops)");
        assert_eq!(x_label("random_flows.count"), "Number of flows");
        assert_eq!(x_label("topology.row_spacing_m"), "row spacing (m)");
        assert_eq!(x_label("radio.tx_power_dbm"), "tx power (dBm)");
        assert_eq!(x_label("mobility.max_speed_mps"), "max speed (m/s)");
        assert_eq!(x_label("flows[0].packet_bytes"), "packet size (B)");
        let keys = ["radio.mac.feedback_priority", "flow_count", "a.count", "b.count"];
        assert_eq!(short_key("radio.mac.feedback_priority", &keys), "feedback_priority");
        assert_eq!(short_key("flow_count", &keys), "flow_count");
        // Two keys end alike: both stay whole.
        assert_eq!(short_key("a.count", &keys), "a.count");
    }

    #[test]
    fn delivered_data_accumulates_in_kilobytes() {
        let mut f = FlowResult::blank(0, &meshbed_sim::scenario::FlowSpec::default(), None, 10.0);
        let rec = |t_s: f64, kind: TraceKind, value: f64| TraceRecord { t_s, side: Side::Receiver, kind, value };
        f.trace = vec![
            rec(1.0, TraceKind::DeliveredBytes, 1000.0),
            rec(1.5, TraceKind::CwndSegments, 4.0),
            rec(2.0, TraceKind::DeliveredBytes, 500.0),
        ];
        assert_eq!(delivered_over_time(&f), vec![(1.0, 1.0), (2.0, 1.5)]);
        assert!(is_trace_figure(Path::new("progress_protocol_tcp-newreno.png")));
    }

    #[test]
    fn a_point_is_incomplete_only_when_every_transfer_was() {
        // testbed-a-single, hops=4 tcp-reno: 10 of 10 incomplete.
        assert!(every_transfer_incomplete(&summary(10, 10, 10)));
        // hops=3 tcp-tahoe: 9 of 10 incomplete, one finished.
        assert!(!every_transfer_incomplete(&summary(10, 10, 9)));
        assert!(!every_transfer_incomplete(&summary(10, 10, 0)));
        // Two flows per run: 10 of 20 incomplete is not every transfer.
        assert!(!every_transfer_incomplete(&summary(10, 20, 10)));
        assert!(every_transfer_incomplete(&summary(10, 20, 20)));
        // No flows at all: nothing to mark.
        assert!(!every_transfer_incomplete(&summary(0, 0, 0)));
    }

    fn record(kind: TraceKind) -> TraceRecord {
        TraceRecord { t_s: 0.5, side: Side::Sender, kind, value: 2.0 }
    }

    #[test]
    fn a_tcp_trace_gets_a_cwnd_panel_and_an_atp_trace_the_delays() {
        let tcp =
            [record(TraceKind::CwndSegments), record(TraceKind::DeliveredBytes), record(TraceKind::RetransmitSeq)];
        assert_eq!(trace_panel(&tcp), TracePanel::Cwnd);
        let atp = [record(TraceKind::DMaxUs), record(TraceKind::DAvgSentUs), record(TraceKind::DeliveredBytes)];
        assert_eq!(trace_panel(&atp), TracePanel::Delay);
        // Both traced: the delay feedback, ATP's own figure.
        assert_eq!(trace_panel(&[record(TraceKind::CwndSegments), record(TraceKind::DSUs)]), TracePanel::Delay);
        assert_eq!(trace_panel(&[record(TraceKind::DeliveredBytes)]), TracePanel::Delay);
    }

    #[test]
    fn an_atp_trace_draws_d_avg_as_sent_and_as_received() {
        // Seed 000 Fig. 7b: the receiver sends D_avg at 0.10 s and 0.14 s;
        // both reach the sender together at 0.15 s.
        let mut f = FlowResult::blank(0, &meshbed_sim::scenario::FlowSpec::default(), None, 1.0);
        let rec = |t_s: f64, side: Side, kind: TraceKind, value: f64| TraceRecord { t_s, side, kind, value };
        f.trace = vec![
            rec(0.10, Side::Receiver, TraceKind::DAvgSentUs, 3000.0),
            rec(0.14, Side::Receiver, TraceKind::DAvgSentUs, 2500.0),
            rec(0.15, Side::Sender, TraceKind::DAvgReceivedUs, 3000.0),
            rec(0.15, Side::Sender, TraceKind::DAvgReceivedUs, 2500.0),
            rec(0.16, Side::Sender, TraceKind::DSUs, 2000.0),
        ];
        let c = trace_chart_of(&f, "t".into(), 1.0);
        assert_eq!(c.lower, TracePanel::Delay);
        assert_eq!(c.d_avg, vec![(0.10, 3.0), (0.14, 2.5)]);
        assert_eq!(c.d_avg_received, vec![(0.15, 3.0), (0.15, 2.5)]);
        assert_eq!(c.d_s, vec![(0.16, 2.0)]);
        assert!(c.d_max.is_empty());
        // A trace of D_avg′ alone is still ATP's delay panel.
        assert_eq!(
            trace_panel(&[record(TraceKind::DAvgReceivedUs), record(TraceKind::CwndSegments)]),
            TracePanel::Delay
        );
    }

    #[test]
    fn trace_figures_are_told_from_summary_figures_by_name() {
        assert!(is_trace_figure(Path::new("results/x/trace_hops_1_protocol_tcp-reno.png")));
        assert!(is_trace_figure(Path::new("flows_over_time_flow_count_2.svg")));
        assert!(!is_trace_figure(Path::new("results/x/goodput.png")));
        assert!(!is_trace_figure(Path::new("results/trace_dir/goodput_cdf.png")));
    }
}
