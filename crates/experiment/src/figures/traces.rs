//! The per-point trace figures of an experiment: for each traced point,
//! its first repetition's flows over time (seed 001 Figs. 5.2/5.3, 5.9;
//! seed 002 Figs. 1, 8–10). Points whose runs traced exactly the same
//! (Tahoe, Reno and NewReno often do, where no loss reaches fast
//! retransmit) get one figure that says which points it stands for,
//! instead of several pixel-identical ones.

use super::palette::flow_style;
use super::{caption, delivered_over_time, instantaneous_goodput, trace_chart_of, GOODPUT_WINDOWS};
use crate::plot::{self, same_label, MultiTraceChart, PlotError, TimeSeries, TraceChart};
use crate::run::{Results, RunOutcome};
use crate::spec::{value_text, Point};
use std::path::{Path, PathBuf};

/// What one traced point draws, before its title and caption.
#[derive(Clone, PartialEq)]
enum Drawing {
    /// One flow: the two-panel trace, and with moving nodes the data
    /// delivered over time.
    Single { trace: Box<TraceChart>, progress: Option<Vec<TimeSeries>> },
    /// Several flows: each one's in-order delivery over time.
    Flows(Vec<TimeSeries>),
}

/// A point's file name tag: its label with anything but letters, digits,
/// `-` and `.` as `_`.
fn tag(p: &Point) -> String {
    p.label().chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '_' }).collect()
}

/// What run `r` (a first repetition with traced flows) draws.
fn drawing(r: &RunOutcome, p: &Point) -> Option<Drawing> {
    let end_s = p.scenario.duration_s;
    let flows = &r.report.flows;
    if p.scenario.flow_count() > 1 {
        let series = flows
            .iter()
            .enumerate()
            .map(|(i, f)| TimeSeries {
                label: format!("flow {} ({})", f.flow + 1, f.protocol_name()),
                points: instantaneous_goodput(f, end_s),
                style: Some(flow_style(i)),
            })
            .collect();
        return Some(Drawing::Flows(series));
    }
    let f = flows.first()?;
    // Seed 002 Fig. 1: the data a flow over moving nodes delivered as time
    // goes on (stalls and bursts at each route failure).
    let progress = p.scenario.mobility.is_some().then(|| {
        vec![TimeSeries {
            label: format!("flow 1 ({})", f.protocol_name()),
            points: delivered_over_time(f),
            style: Some(flow_style(0)),
        }]
    });
    Some(Drawing::Single { trace: Box::new(trace_chart_of(f, String::new(), end_s)), progress })
}

/// The label of a group of points: each axis' value, or the values joined
/// by " = " where the points differ (`hops=3 tcp-tahoe = tcp-reno`).
fn group_label(points: &[&Point]) -> String {
    let Some(first) = points.first() else { return String::new() };
    if first.values.is_empty() {
        return first.label();
    }
    first
        .values
        .iter()
        .map(|(k, _)| {
            let mut values: Vec<String> = Vec::new();
            for p in points {
                let text = p.value(k).map(value_text).unwrap_or_default();
                if !values.contains(&text) {
                    values.push(text);
                }
            }
            match values.as_slice() {
                [one] => format!("{k}={one}"),
                many => format!("{k}: {}", same_label(many)),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Draws the trace figures of every traced point's first repetition, one
/// per group of identical ones, into `dir`.
pub(super) fn draw(results: &Results, dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
    let name = &results.experiment.config.name;
    let mut groups: Vec<(Drawing, Vec<&Point>)> = Vec::new();
    for r in results.runs.iter().filter(|r| r.rep == 0) {
        let p = &results.points[r.point];
        if !r.report.flows.iter().any(|f| !f.trace.is_empty()) {
            continue;
        }
        let Some(d) = drawing(r, p) else { continue };
        match groups.iter_mut().find(|(other, _)| *other == d) {
            Some((_, members)) => members.push(p),
            None => groups.push((d, vec![p])),
        }
    }
    let mut out = Vec::new();
    for (d, members) in groups {
        let label = group_label(&members);
        let indices: Vec<usize> = members.iter().map(|p| p.index).collect();
        let mut lines = vec![caption::run_line(results, members[0].index, 0)];
        lines.extend(caption::settings_line(results, &indices));
        if members.len() > 1 {
            let tags: Vec<String> = members[1..].iter().map(|p| tag(p)).collect();
            remove_stale(dir, &tags)?;
            lines.push(format!(
                "These {} points traced identically and are drawn once (no figures of their own for {}).",
                members.len(),
                tags.join(", ")
            ));
        }
        let stem = tag(members[0]);
        match d {
            Drawing::Single { trace, progress } => {
                let mut trace_lines = lines.clone();
                trace_lines.push(delivery_note(members[0]));
                let chart = TraceChart { title: format!("{name} [{label}]"), caption: trace_lines, ..*trace };
                out.extend(plot::trace_chart(&chart, &dir.join(format!("trace_{stem}")))?);
                if let Some(series) = progress {
                    let chart = MultiTraceChart {
                        title: format!("{name} [{label}]: data delivered in order"),
                        x_label: "Time (s)".into(),
                        y_label: "Delivered in order (kB)".into(),
                        series,
                        windows: None,
                        caption: lines,
                    };
                    out.extend(plot::multi_trace_chart(&chart, &dir.join(format!("progress_{stem}")))?);
                }
            }
            Drawing::Flows(series) => {
                lines.push(delivery_note(members[0]));
                lines.push("Colours here tell the flows apart; they are not the protocols' colours.".into());
                let chart = MultiTraceChart {
                    title: format!("{name} [{label}]: in-order delivery per flow"),
                    x_label: "Time (s)".into(),
                    y_label: "In-order delivery (Mbit/s)".into(),
                    series,
                    windows: Some(GOODPUT_WINDOWS),
                    caption: lines,
                };
                out.extend(plot::multi_trace_chart(&chart, &dir.join(format!("flows_over_time_{stem}")))?);
            }
        }
    }
    Ok(out)
}

/// Removes the trace figures an earlier run into `dir` left for the
/// points `tags` that this run draws as part of another's: a figure of
/// their own would contradict the caption that says there is none.
fn remove_stale(dir: &Path, tags: &[String]) -> Result<(), PlotError> {
    for tag in tags {
        for prefix in super::TRACE_PREFIXES {
            for ext in ["png", "svg"] {
                let path = dir.join(format!("{prefix}{tag}.{ext}"));
                match std::fs::remove_file(&path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(PlotError::Write { path, source: e });
                    }
                    _ => {}
                }
            }
        }
    }
    Ok(())
}

/// What the in-order delivery curve is, and why it can exceed the link
/// rate (seed 001 §5.1.1 calls it "instantaneous goodput").
fn delivery_note(p: &Point) -> String {
    let rate = f64::from(p.scenario.radio.data_rate_kbps) / 1e3;
    format!(
        "In-order delivery (the thesis' \"instantaneous goodput\"): data handed to the application in order in each of \
         the {}, in Mbit/s. A burst of data held behind a hole is handed over when the hole fills, so a window can \
         exceed the {rate} Mbit/s link rate.",
        GOODPUT_WINDOWS.describe()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_traces_are_drawn_once_and_say_for_whom() {
        // A short transfer that loses nothing: Tahoe and Reno trace alike
        // (as testbed-a-single's TCP variants do), NewReno over a longer
        // chain does not.
        let text = r#"
            duration_s = 3.0
            seed = 5
            [experiment]
            name = "same"
            repetitions = 1
            [[experiment.sweep]]
            key = "protocol"
            values = ["tcp-tahoe", "tcp-reno", "atp-default"]
            [topology]
            kind = "chain"
            nodes = 3
            spacing_m = 150.0
            [[flows]]
            src = 0
            dst = 2
            protocol = "tcp-newreno"
            bytes = 30000
            trace = true
        "#;
        let e = crate::Experiment::from_toml(text, "same.toml").expect("valid");
        let results = crate::run::run(&e, &crate::RunOptions::default()).expect("runs");
        let dir = tempfile::tempdir().unwrap();
        // A figure of Reno's own from an earlier run goes: this run says
        // there is none.
        let stale = dir.path().join("trace_protocol_tcp-reno.png");
        std::fs::write(&stale, b"old").unwrap();
        let files = draw(&results, dir.path()).unwrap();
        assert!(!stale.exists());
        let names: Vec<String> = files
            .iter()
            .filter(|p| p.extension().is_some_and(|x| x == "png"))
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["trace_protocol_tcp-tahoe.png", "trace_protocol_atp-default.png"]);
        let svg = std::fs::read_to_string(dir.path().join("trace_protocol_tcp-tahoe.svg")).unwrap();
        assert!(svg.contains("protocol: tcp-tahoe = tcp-reno"), "the title names both");
        assert!(svg.contains("drawn once") && svg.contains("protocol_tcp-reno"), "the caption says for whom");
        assert!(svg.contains("seed 5"), "the caption names the seed");
        let atp = std::fs::read_to_string(dir.path().join("trace_protocol_atp-default.svg")).unwrap();
        assert!(!atp.contains("drawn once"));
        assert!(atp.contains("D_max: the largest per-hop delay"), "the symbols are explained");
    }

    #[test]
    fn a_group_label_joins_the_values_that_differ() {
        let e = crate::builtin::get("testbed-a-single").expect("built-in");
        let points = e.points("testbed-a-single").expect("valid");
        // hops=1 with tcp-tahoe, tcp-reno, tcp-newreno (points 3, 4, 5).
        let group: Vec<&Point> = points[3..6].iter().collect();
        assert_eq!(group_label(&group), "hops=1 protocol: tcp-tahoe = tcp-reno = tcp-newreno");
        assert_eq!(group_label(&group[..1]), "hops=1 protocol=tcp-tahoe");
    }
}
