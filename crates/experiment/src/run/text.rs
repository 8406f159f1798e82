//! The per-point summary as plain text: the goodput table that
//! `meshbed experiment run` prints, and the diagnostic tables that
//! `summary.txt` adds after it (on the terminal with `--verbose`).

use super::{PointSummary, Results};
use crate::metrics::SampleStats;

/// The per-point summary as a plain-text table: [`goodput_table`], then
/// [`diagnostic_tables`] (what `summary.txt` holds).
pub fn summary_table(results: &Results, summaries: &[PointSummary]) -> String {
    goodput_table(results, summaries) + &diagnostic_tables(results, summaries)
}

/// The width of the point column.
fn label_width(summaries: &[PointSummary]) -> usize {
    summaries.iter().map(|x| x.label.len()).max().unwrap_or(5).max(5)
}

/// The headline: each point's goodput (and, with several flows, aggregate
/// and fairness), retransmissions and incomplete flows, one row per point.
pub fn goodput_table(results: &Results, summaries: &[PointSummary]) -> String {
    use std::fmt::Write;
    let multi = results.points.iter().any(|p| p.scenario.flow_count() > 1);
    let mut s = String::new();
    let width = label_width(summaries);
    // Mean ± sd, then the median (seed 003 reports medians; the CSV also
    // has min, max and the 95% confidence interval).
    let _ = write!(s, "{:<width$}  {:>4}  {:>17}  {:>7}", "point", "runs", "goodput Mb/s", "median");
    if multi {
        let _ = write!(
            s,
            "  {:>17}  {:>7}  {:>13}  {:>13}  {:>7}",
            "aggregate Mb/s", "median", "unfairness", "log utility", "starved"
        );
    }
    let _ = writeln!(s, "  {:>10}  {:>10}  {:>6}", "retx/run", "incomplete", "failed");
    for x in summaries {
        let _ = write!(
            s,
            "{:<width$}  {:>4}  {:>8.3} ± {:>6.3}  {:>7.3}",
            x.label,
            x.runs,
            x.flow_goodput_bps.mean / 1e6,
            x.flow_goodput_bps.sd / 1e6,
            x.flow_goodput_bps.median / 1e6
        );
        if multi {
            let _ = write!(
                s,
                "  {:>8.3} ± {:>6.3}  {:>7.3}  {:>5.3} ± {:>5.3}  {:>5.2} ± {:>5.2}  {:>7}",
                x.aggregate_goodput_bps.mean / 1e6,
                x.aggregate_goodput_bps.sd / 1e6,
                x.aggregate_goodput_bps.median / 1e6,
                x.unfairness.mean,
                x.unfairness.sd,
                x.log_utility.mean,
                x.log_utility.sd,
                x.starved_flows
            );
        }
        let _ = writeln!(s, "  {:>10.1}  {:>10}  {:>6}", x.retransmissions.mean, x.incomplete_flows, x.failed_flows);
    }
    s
}

/// Every table after the headline, each where the points have its
/// quantities: routing (seed 002 §2), seed 003's Tables 2–4, feedback
/// timing and D_max, batch means (seed 004 §IV), per-flow goodput.
pub fn diagnostic_tables(results: &Results, summaries: &[PointSummary]) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let width = label_width(summaries);
    // Over routing that reacts: seed 002 §2's quantities per point.
    if results.points.iter().any(|p| p.scenario.routing.is_dynamic()) {
        let opt = |v: Option<f64>, prec: usize| v.map_or("-".to_string(), |x| format!("{x:.prec$}"));
        let _ = writeln!(
            s,
            "\nper flow, mean over runs (seed 002 §2): TCP slow starts, share of time in slow start, timeouts, \
             largest RTO; share of losses that were link failures; routes recomputed after a failure and the share \
             over a new path; route failures seen at the sender / the receiver; path changes"
        );
        let _ = writeln!(
            s,
            "{:<width$}  {:>7}  {:>6}  {:>8}  {:>7}  {:>9}  {:>10}  {:>9}  {:>15}  {:>7}",
            "point",
            "slow st",
            "in ss",
            "timeouts",
            "max RTO",
            "link loss",
            "recomputed",
            "new route",
            "failed snd/rcv",
            "paths"
        );
        for x in summaries {
            let r = &x.routes;
            let _ = writeln!(
                s,
                "{:<width$}  {:>7}  {:>6}  {:>8}  {:>7}  {:>9}  {:>10.2}  {:>9}  {:>7.2}/{:<7.2}  {:>7.2}",
                x.label,
                opt(r.slow_starts, 1),
                opt(r.slow_start_share, 2),
                opt(r.timeouts, 1),
                opt(r.max_rto_s, 1),
                opt(r.link_loss_share, 2),
                r.routes_recomputed,
                opt(r.routes_new_share, 2),
                r.route_failed_at_sender,
                r.route_failed_at_receiver,
                r.path_changes
            );
        }
    }
    // Seed 003 Tables 2–4: min, median, max, mean and sd over runs (or
    // over every RTT), where the point has them.
    let extra: [(&str, f64, Get); 4] = [
        ("route discovery time (ms; one sample per run)", 1e3, |x| x.route_discovery_s),
        ("routing overhead ratio (control packets per data packet delivered; per run)", 1.0, |x| {
            x.routing_overhead_ratio
        }),
        ("echo RTT (ms; every reply of every run)", 1e3, |x| x.echo_rtt_s),
        ("feedback delay, receiver to sender (ms; per flow)", 1e3, |x| x.delays.feedback_delay_s),
    ];
    for (what, scale, get) in extra {
        stats_table(&mut s, width, summaries, what, scale, get);
    }
    feedback_gap_table(&mut s, width, summaries);
    let extra: [(&str, f64, Get); 3] = [
        ("feedback clustered at the sender: share of arrival gaps under 1/4 of the sending gap (per flow)", 1.0, |x| {
            x.delays.feedback_clustered_share
        }),
        ("D_max at the receiver, mean over a flow's ATP data (ms; per flow)", 1e-3, |x| x.delays.d_max_mean_us),
        ("D_max at the receiver, median over a traced flow's ATP data (ms; per flow)", 1e-3, |x| {
            x.delays.d_max_median_us
        }),
    ];
    for (what, scale, get) in extra {
        stats_table(&mut s, width, summaries, what, scale, get);
    }
    if let Some(b) = results.experiment.config.batch_means {
        let _ = writeln!(
            s,
            "\ngoodput by batch means (seed 004 §IV: {} batches of {} packets, the first {} discarded; Mb/s): \
             mean estimate ± the batches' 95% half-width, the CI across runs, aggregate, Jain, per flow; \
             flows without an estimate (short of {} packets) are counted, not averaged",
            b.batches,
            b.batch_packets,
            b.discard,
            b.packets()
        );
        let _ = writeln!(
            s,
            "{:<width$}  {:>17}  {:>9}  {:>9}  {:>6}  {:>5}  per flow",
            "point", "goodput ± batch", "runs CI", "aggregate", "Jain", "none"
        );
        let mbps = |v: Option<f64>| v.filter(|x| x.is_finite()).map_or("-".to_string(), |x| format!("{:.3}", x / 1e6));
        for x in summaries {
            let Some(m) = &x.batch_means else { continue };
            let has = m.goodput_bps.n > 0;
            let flows: Vec<String> =
                m.per_flow_mean_bps.iter().enumerate().map(|(i, g)| format!("{}: {}", i + 1, mbps(*g))).collect();
            let _ = writeln!(
                s,
                "{:<width$}  {:>8} ± {:>6}  {:>9}  {:>9}  {:>6}  {:>5}  {}",
                x.label,
                mbps(has.then_some(m.goodput_bps.mean)),
                mbps(has.then_some(m.batch_ci95_bps)),
                mbps(has.then_some(m.goodput_bps.ci95)),
                mbps(m.aggregate_bps.map(|a| a.mean)),
                m.jain_index.map_or("-".to_string(), |j| format!("{:.3}", j.mean)),
                format!("{}/{}", m.short_flows, m.flows),
                flows.join("  ")
            );
        }
    }
    // Flows with different roles (start times, paths): each flow's own mean,
    // as in seed 001 Table 5.1.
    let distinct_roles = results.points.iter().any(|p| {
        p.scenario
            .flows
            .windows(2)
            .any(|w| w[0].src != w[1].src || w[0].dst != w[1].dst || w[0].start_s != w[1].start_s)
    });
    if distinct_roles {
        let window =
            results.experiment.config.window_s.map_or(String::new(), |[a, b]| format!(", counted over [{a}, {b}] s"));
        let _ = writeln!(s, "\nper-flow mean goodput (Mb/s{window}):");
        for x in summaries {
            let flows: Vec<String> = x
                .per_flow_mean_bps
                .iter()
                .enumerate()
                .map(|(i, g)| format!("flow {}: {:.3}", i + 1, g / 1e6))
                .collect();
            let _ = writeln!(s, "{:<width$}  {}", x.label, flows.join("  "));
        }
    }
    s
}

/// A quantity of a point, as [`SampleStats`] where it has one.
type Get = fn(&PointSummary) -> Option<SampleStats>;

/// One quantity's min, median, max, mean and sd per point (times `scale`),
/// titled `what`; nothing if no point has it.
fn stats_table(s: &mut String, width: usize, summaries: &[PointSummary], what: &str, scale: f64, get: Get) {
    use std::fmt::Write;
    if !summaries.iter().any(|x| get(x).is_some()) {
        return;
    }
    let _ = writeln!(s, "\n{what}");
    let _ = writeln!(
        s,
        "{:<width$}  {:>6}  {:>9}  {:>9}  {:>9}  {:>9}  {:>9}",
        "point", "n", "min", "median", "max", "mean", "sd"
    );
    for x in summaries {
        if let Some(m) = get(x) {
            let _ = writeln!(
                s,
                "{:<width$}  {:>6}  {:>9.3}  {:>9.3}  {:>9.3}  {:>9.3}  {:>9.3}",
                x.label,
                m.n,
                m.min * scale,
                m.median * scale,
                m.max * scale,
                m.mean * scale,
                m.sd * scale
            );
        }
    }
}

/// The feedback gaps' coefficient of variation as the receiver sent them
/// and as they reached the sender, side by side in one table: the second
/// says something only against the first (the reverse path clusters
/// feedback when it is larger, seed 000 §V.A.2 Fig. 7b), and as two
/// tables they read as the same table twice. Min and max are left out to
/// keep it to a line per point; `summary.csv` has both means.
fn feedback_gap_table(s: &mut String, width: usize, summaries: &[PointSummary]) {
    use std::fmt::Write;
    let sides = |x: &PointSummary| (x.delays.feedback_sent_gap_cv, x.delays.feedback_arrival_gap_cv);
    if !summaries.iter().any(|x| matches!(sides(x), (Some(_), _) | (_, Some(_)))) {
        return;
    }
    let _ = writeln!(
        s,
        "\nfeedback gaps: coefficient of variation as sent and at the sender (per flow; larger at the sender: \
         clustered on the reverse path)"
    );
    let _ = writeln!(
        s,
        "{:<width$}  {:>7}  {:>9}  {:>9}  {:>9}  {:>11}  {:>11}  {:>11}",
        "point", "n", "sent med", "sent mean", "sent sd", "at snd med", "at snd mean", "at snd sd"
    );
    let three = |m: Option<SampleStats>| {
        m.map_or(["-".to_string(), "-".to_string(), "-".to_string()], |m| {
            [format!("{:.3}", m.median), format!("{:.3}", m.mean), format!("{:.3}", m.sd)]
        })
    };
    for x in summaries {
        let (sent, arrival) = sides(x);
        if sent.is_none() && arrival.is_none() {
            continue;
        }
        // A side has no CV for a flow whose gaps average zero: n can differ.
        let n = match (sent.map(|m| m.n), arrival.map(|m| m.n)) {
            (Some(a), Some(b)) if a == b => a.to_string(),
            (a, b) => format!("{}/{}", a.unwrap_or(0), b.unwrap_or(0)),
        };
        let [sm, sa, sd] = three(sent);
        let [am, aa, ad] = three(arrival);
        let _ = writeln!(s, "{:<width$}  {n:>7}  {sm:>9}  {sa:>9}  {sd:>9}  {am:>11}  {aa:>11}  {ad:>11}", x.label);
    }
}
