//! What a point's runs add up to: the goodput a summary uses for a flow
//! (over a window, by batch means), the per-point summaries with the
//! documents' metrics, and the random pairs the runs drew.

use super::{Results, RunOutcome};
use crate::metrics::{self, SampleStats};
use crate::spec::BatchMeans;
use meshbed_sim::report::goodput_bps;
use meshbed_sim::{FlowResult, RouteLogEvent, RouteLogSide, TraceKind};
use serde::Serialize;

/// Goodput of a flow inside `[from, to]` seconds from its delivery trace,
/// for flows that overlap only part of the run (seed 001 Table 5.1 counts
/// the time when all three flows are active).
pub fn windowed_goodput_bps(flow: &FlowResult, from_s: f64, to_s: f64) -> Option<f64> {
    let mut any = false;
    let mut bytes = 0;
    for t in flow.trace.iter().filter(|t| t.kind == TraceKind::DeliveredBytes) {
        any = true;
        if t.t_s > from_s && t.t_s <= to_s {
            // A delivered-bytes sample is a byte count (an integer in an f64).
            bytes += t.value as u64;
        }
    }
    (any || flow.bytes_delivered == 0).then(|| goodput_bps(bytes, to_s - from_s))
}

/// The goodput a summary uses for a flow: over the experiment's window if
/// one is set, else over the flow's own duration.
pub fn flow_goodput_bps(results: &Results, flow: &FlowResult) -> f64 {
    match results.experiment.config.window_s {
        Some([a, b]) => windowed_goodput_bps(flow, a, b).unwrap_or(flow.goodput_bps),
        None => flow.goodput_bps,
    }
}

/// A flow's goodput by the batch-means method (seed 004 §IV).
#[derive(Clone, Debug, PartialEq)]
pub enum BatchGoodput {
    /// `batch_durations_s`: how long each kept batch took to deliver, in
    /// order; `goodput_bps`: a batch's bits over their mean; `ci95_bps`: the
    /// 95% half-width of that goodput (NaN when the batches took no time).
    Estimate { batch_durations_s: Vec<f64>, goodput_bps: f64, ci95_bps: f64 },
    /// The flow delivered `reached` of the `needed` batches when the run
    /// ended (or recorded none: `batch_bytes` unset).
    Short { reached: usize, needed: usize },
    /// Every kept batch was handed up at one instant: no time to divide by.
    NoTime,
}

impl BatchGoodput {
    /// The estimate in bit/s, `None` for a flow without one.
    pub fn estimate_bps(&self) -> Option<f64> {
        match self {
            BatchGoodput::Estimate { goodput_bps, .. } => Some(*goodput_bps),
            _ => None,
        }
    }
}

/// The batch-means goodput of a flow that started at `start_s` and
/// delivered batch k (of `batch_bytes` bytes) at `milestones_s[k]`: batch k
/// lasts from the previous milestone (the start for the first) to its own;
/// the first `discard` batches are dropped and the next `batches − discard`
/// kept (later milestones, from a longer transfer, are not used).
///
/// The batch means are of the time a batch takes (the per-packet delivery
/// time summed over a batch), the measure that adds up: the goodput is
/// `batch_bytes · 8` over their mean, i.e. the kept batches' bytes over
/// their time, and its interval is the mean time's Student-t interval
/// carried over by the delta method (half-width = goodput × half-width of
/// the time / mean time). Averaging the batches' rates instead would
/// overweight short batches (Jensen): a receiver that hands up a batch in
/// one burst after a hole is filled gives a batch of almost no time and an
/// enormous rate (seen with ATP at 54 Mbit/s, docs/PROTOCOLS.md).
pub fn batch_goodput(start_s: f64, milestones_s: &[f64], batch_bytes: Option<u64>, b: &BatchMeans) -> BatchGoodput {
    let needed = b.batches as usize;
    let Some(batch_bytes) = batch_bytes.filter(|_| milestones_s.len() >= needed) else {
        return BatchGoodput::Short { reached: milestones_s.len().min(needed), needed };
    };
    let batch_durations_s: Vec<f64> = (b.discard as usize..needed)
        .map(|k| milestones_s[k] - if k == 0 { start_s } else { milestones_s[k - 1] })
        .collect();
    let time = metrics::sample_stats(&batch_durations_s);
    if time.mean <= 0.0 {
        return BatchGoodput::NoTime;
    }
    let goodput_bps = goodput_bps(batch_bytes, time.mean);
    BatchGoodput::Estimate { batch_durations_s, goodput_bps, ci95_bps: goodput_bps * time.ci95 / time.mean }
}

/// A flow's [`batch_goodput`] under the experiment's `batch_means`.
pub fn flow_batch_goodput(flow: &FlowResult, b: &BatchMeans) -> BatchGoodput {
    let (milestones_s, batch_bytes) =
        flow.transfer.as_ref().map_or((&[][..], None), |t| (&t.delivery_milestones_s[..], t.batch_bytes));
    batch_goodput(flow.start_s, milestones_s, batch_bytes, b)
}

/// A point's batch-means goodput (seed 004 §IV), over its runs.
#[derive(Clone, Debug, Serialize)]
pub struct BatchSummary {
    /// The batch-means estimate of every flow of every run that has one:
    /// their mean, and the spread and confidence interval across them.
    pub goodput_bps: SampleStats,
    /// The batch-means 95% half-width (within a run, across its batches),
    /// averaged over those flows: with one run and one flow, the paper's
    /// interval.
    pub batch_ci95_bps: f64,
    /// Per run whose flows all have an estimate: their sum, and Jain's index.
    pub aggregate_bps: Option<SampleStats>,
    pub jain_index: Option<SampleStats>,
    /// Mean estimate of flow i (by index) over the runs where it has one.
    pub per_flow_mean_bps: Vec<Option<f64>>,
    /// Flows of all runs, and those without an estimate (short of the
    /// packet count, or a zero-length batch): reported, never averaged in.
    pub flows: usize,
    pub short_flows: usize,
}

impl BatchSummary {
    pub(super) fn of(runs: &[&RunOutcome], nflows: usize, b: &BatchMeans) -> BatchSummary {
        let (mut all, mut cis, mut agg, mut jain) = (vec![], vec![], vec![], vec![]);
        let mut per_flow: Vec<Vec<f64>> = vec![Vec::new(); nflows];
        let (mut flows, mut short) = (0, 0);
        for r in runs {
            let mut run_estimates = Vec::new();
            for (i, f) in r.report.flows.iter().enumerate() {
                flows += 1;
                match flow_batch_goodput(f, b) {
                    BatchGoodput::Estimate { goodput_bps, ci95_bps, .. } => {
                        all.push(goodput_bps);
                        if ci95_bps.is_finite() {
                            cis.push(ci95_bps);
                        }
                        if let Some(v) = per_flow.get_mut(i) {
                            v.push(goodput_bps);
                        }
                        run_estimates.push(goodput_bps);
                    }
                    _ => short += 1,
                }
            }
            if !run_estimates.is_empty() && run_estimates.len() == r.report.flows.len() {
                agg.push(run_estimates.iter().sum());
                jain.push(metrics::jain_index(&run_estimates));
            }
        }
        let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
        BatchSummary {
            goodput_bps: metrics::sample_stats(&all),
            batch_ci95_bps: mean(&cis).unwrap_or(f64::NAN),
            aggregate_bps: stats_of(agg.into_iter()),
            jain_index: stats_of(jain.into_iter()),
            per_flow_mean_bps: per_flow.iter().map(|v| mean(v)).collect(),
            flows,
            short_flows: short,
        }
    }
}

/// Per-point summary over its repetitions.
#[derive(Clone, Debug, Serialize)]
pub struct PointSummary {
    pub point: usize,
    pub label: String,
    pub runs: usize,
    /// Per-flow goodput, every flow of every run.
    pub flow_goodput_bps: SampleStats,
    /// Sum over the flows of a run.
    pub aggregate_goodput_bps: SampleStats,
    /// Normalised standard deviation of the flows' goodput in a run.
    pub unfairness: SampleStats,
    pub log_utility: SampleStats,
    pub jain_index: SampleStats,
    pub starved_flows: usize,
    pub flows: usize,
    /// Transport flows that did not complete (failed ones included).
    pub incomplete_flows: usize,
    /// Of those, flows that failed (an engine gave up, or bytes differed).
    pub failed_flows: usize,
    /// Mean goodput of flow i (by index) over the repetitions.
    pub per_flow_mean_bps: Vec<f64>,
    pub retransmissions: SampleStats,
    /// Seed 002 §2's quantities (Figs. 2–5), per flow over every run.
    pub routes: RouteSummary,
    /// Seed 003 §5.2 Table 2: one sample per run with a completed route
    /// discovery, the run's mean discovery time (from the first held packet
    /// to the route; one per run in the discovery experiment). `None`
    /// without discoveries.
    pub route_discovery_s: Option<SampleStats>,
    /// Seed 003 §5.3 Table 3: the run's routing overhead ratio (control
    /// packets per data packet delivered), one sample per run.
    pub routing_overhead_ratio: Option<SampleStats>,
    /// Seed 003 §5.4 Table 4: every echo RTT of every run, pooled.
    pub echo_rtt_s: Option<SampleStats>,
    /// Goodput by batch means, with `[experiment] batch_means` only.
    pub batch_means: Option<BatchSummary>,
    /// How feedback reached the senders and what D_max the relays stamped.
    pub delays: DelaySummary,
}

/// Per flow over every run of a point: how the transport feedback reached
/// the sender (seed 000 §V.A.2, Fig. 7b; [`meshbed_sim::report::FeedbackTiming`])
/// and the D_max the relays stamped on ATP's data (seed 001 §3.1, appendix
/// A.6: what batched completion interrupts bias). `None` where no flow of
/// the point has the quantity.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DelaySummary {
    /// Mean time from the receiver to the sender of a flow's feedback, s.
    pub feedback_delay_s: Option<SampleStats>,
    /// Coefficient of variation of the gaps between feedback packets as
    /// sent and as received, and the share of arrivals clustered.
    pub feedback_sent_gap_cv: Option<SampleStats>,
    pub feedback_arrival_gap_cv: Option<SampleStats>,
    pub feedback_clustered_share: Option<SampleStats>,
    /// A flow's mean D_max over the ATP data packets that reached the
    /// receiver, µs.
    pub d_max_mean_us: Option<SampleStats>,
    /// A traced flow's median D_max over the same packets, µs.
    pub d_max_median_us: Option<SampleStats>,
}

impl DelaySummary {
    fn of<'a>(flows: impl Iterator<Item = &'a FlowResult> + Clone) -> DelaySummary {
        let feedback = |get: fn(&meshbed_sim::report::FeedbackTiming) -> Option<f64>| {
            stats_of(flows.clone().filter_map(|f| f.transfer.as_ref()?.feedback.as_ref()).filter_map(get))
        };
        let atp_data = flows.clone().filter_map(|f| f.transfer.as_ref()?.path.as_ref()).filter(|p| p.data_packets > 0);
        DelaySummary {
            feedback_delay_s: feedback(|t| Some(t.mean_delay_s)),
            feedback_sent_gap_cv: feedback(|t| t.sent_gap_cv),
            feedback_arrival_gap_cv: feedback(|t| t.arrival_gap_cv),
            feedback_clustered_share: feedback(|t| Some(t.clustered_share)),
            d_max_mean_us: stats_of(atp_data.map(|p| p.d_max_mean_us)),
            d_max_median_us: stats_of(flows.filter_map(|f| metrics::trace_median(&f.trace, TraceKind::DMaxUs))),
        }
    }
}

/// Per-point means of what seed 002 §2 measures (Figs. 2–5): the TCP
/// senders' slow starts, time in slow start, timeouts and largest RTO;
/// the share of the flows' network-layer losses that were link failures
/// (retry-limit drops); routes recomputed after failures and the share of
/// them over a new path; route failures seen by the data's route (at the
/// sender) and the reverse route (at the receiver). `None` where no flow of
/// the point has the quantity (no TCP flow, no loss, no recomputed route).
#[derive(Clone, Debug, Default, Serialize)]
pub struct RouteSummary {
    /// TCP flows counted (mean over them of the next four).
    pub tcp_flows: usize,
    pub slow_starts: Option<f64>,
    /// Time in slow start over the flow's duration.
    pub slow_start_share: Option<f64>,
    pub timeouts: Option<f64>,
    pub max_rto_s: Option<f64>,
    /// Σ retry-limit drops / Σ all drops, over the point's flows.
    pub link_loss_share: Option<f64>,
    /// Mean per flow.
    pub routes_recomputed: f64,
    /// Σ new routes / Σ recomputed routes.
    pub routes_new_share: Option<f64>,
    /// Mean "route failed" notices per flow at its sender and receiver.
    pub route_failed_at_sender: f64,
    pub route_failed_at_receiver: f64,
    pub path_changes: f64,
}

impl RouteSummary {
    pub(super) fn of<'a>(flows: impl Iterator<Item = &'a FlowResult> + Clone) -> RouteSummary {
        let mean = |v: Vec<f64>| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
        let ratio = |a: u64, b: u64| (b > 0).then(|| a as f64 / b as f64);
        let tcp: Vec<(&FlowResult, &meshbed_sim::report::TcpDetail)> =
            flows.clone().filter_map(|f| f.tcp().map(|t| (f, t))).collect();
        let n = flows.clone().count().max(1) as f64;
        let failed_at = |side: RouteLogSide| {
            flows
                .clone()
                .flat_map(|f| &f.routing_or_zero().route_log)
                .filter(|e| e.side == side && e.event == RouteLogEvent::RouteFailed)
                .count() as f64
                / n
        };
        let (link, drops) =
            flows.clone().fold((0, 0), |(l, d), f| (l + f.net.drops.retry_limit, d + f.net.drops.total()));
        let (recomputed, new) = flows.clone().fold((0, 0), |(r, w), f| {
            let routing = f.routing_or_zero();
            (r + routing.routes_recomputed, w + routing.routes_new)
        });
        RouteSummary {
            tcp_flows: tcp.len(),
            slow_starts: mean(tcp.iter().map(|(_, t)| t.slow_start_entries as f64).collect()),
            slow_start_share: mean(
                tcp.iter()
                    .filter(|(f, _)| f.duration_s > 0.0)
                    .map(|(f, t)| t.slow_start_time_s / f.duration_s)
                    .collect(),
            ),
            timeouts: mean(tcp.iter().map(|(_, t)| t.timeouts as f64).collect()),
            max_rto_s: mean(tcp.iter().map(|(_, t)| t.max_rto_s).collect()),
            link_loss_share: ratio(link, drops),
            routes_recomputed: recomputed as f64 / n,
            routes_new_share: ratio(new, recomputed),
            route_failed_at_sender: failed_at(RouteLogSide::Sender),
            route_failed_at_receiver: failed_at(RouteLogSide::Receiver),
            path_changes: flows.map(|f| f.routing_or_zero().path_changes as f64).sum::<f64>() / n,
        }
    }
}

/// Statistics of the values, `None` for none.
fn stats_of(values: impl Iterator<Item = f64>) -> Option<SampleStats> {
    let v: Vec<f64> = values.collect();
    (!v.is_empty()).then(|| metrics::sample_stats(&v))
}

pub fn summarize(results: &Results) -> Vec<PointSummary> {
    results
        .points
        .iter()
        .map(|p| {
            let runs: Vec<&RunOutcome> = results.runs.iter().filter(|r| r.point == p.index).collect();
            let mut all = Vec::new();
            let (mut agg, mut unfair, mut util, mut jain, mut retx) = (vec![], vec![], vec![], vec![], vec![]);
            let nflows = p.scenario.flow_count();
            let mut per_flow = vec![0.0; nflows];
            let (mut incomplete, mut failed) = (0, 0);
            for r in &runs {
                let g: Vec<f64> = r.report.flows.iter().map(|f| flow_goodput_bps(results, f)).collect();
                for (i, x) in g.iter().enumerate() {
                    per_flow[i] += x / runs.len() as f64;
                }
                all.extend_from_slice(&g);
                agg.push(g.iter().sum());
                unfair.push(metrics::unfairness(&g));
                util.push(metrics::log_utility(&g));
                jain.push(metrics::jain_index(&g));
                retx.push(r.report.flows.iter().map(|f| f.retransmissions() as f64).sum());
                incomplete += r.report.flows.iter().filter(|f| f.incomplete()).count();
                failed += r.report.flows.iter().filter(|f| f.failed()).count();
            }
            PointSummary {
                point: p.index,
                label: p.label(),
                runs: runs.len(),
                flow_goodput_bps: metrics::sample_stats(&all),
                aggregate_goodput_bps: metrics::sample_stats(&agg),
                unfairness: metrics::sample_stats(&unfair),
                log_utility: metrics::sample_stats(&util),
                jain_index: metrics::sample_stats(&jain),
                starved_flows: metrics::starved_count(&all),
                flows: all.len(),
                incomplete_flows: incomplete,
                failed_flows: failed,
                per_flow_mean_bps: per_flow,
                retransmissions: metrics::sample_stats(&retx),
                routes: RouteSummary::of(runs.iter().flat_map(|r| &r.report.flows)),
                route_discovery_s: stats_of(runs.iter().filter_map(|r| {
                    let d = &r.report.net_total.discoveries;
                    (d.completed > 0).then(|| d.total_ns as f64 / d.completed as f64 / 1e9)
                })),
                routing_overhead_ratio: stats_of(runs.iter().filter_map(|r| r.report.routing_overhead_ratio)),
                echo_rtt_s: stats_of(
                    runs.iter()
                        .flat_map(|r| &r.report.flows)
                        .filter_map(|f| f.echo.as_ref())
                        .flat_map(|e| e.rtt_samples_s.iter().copied()),
                ),
                batch_means: results.experiment.config.batch_means.map(|b| BatchSummary::of(&runs, nflows, &b)),
                delays: DelaySummary::of(runs.iter().flat_map(|r| &r.report.flows)),
            }
        })
        .collect()
}

/// The random pairs an experiment's runs drew (`[random_flows]`): whether
/// every point of a repetition drew the same pair for each flow index (what
/// comparing protocols on identical pairs needs), and the hop counts of the
/// distinct pairs (seed 001 §5.5: "a maximum path length of 4 hops").
#[derive(Clone, Debug, PartialEq)]
pub struct RandomPairs {
    /// Distinct (seed, flow index) pairs drawn.
    pub pairs: usize,
    /// Whether every point of a repetition drew the same pair for a flow index.
    pub same_in_every_point: bool,
    /// `(hops, pairs)`, by hops; `None` hops: no route at time zero.
    pub hops: Vec<(Option<u32>, usize)>,
}

/// The random pairs of `results`, if any point draws them.
pub fn random_pairs(results: &Results) -> Option<RandomPairs> {
    use std::collections::BTreeMap;
    if !results.points.iter().any(|p| p.scenario.random_flows.is_some()) {
        return None;
    }
    let mut drawn: BTreeMap<(u64, u32), (u32, u32, Option<u32>)> = BTreeMap::new();
    let mut same = true;
    for r in &results.runs {
        let Some(rf) = &results.points[r.point].scenario.random_flows else { continue };
        // The drawn flows are the last `count` of the run's flows.
        let first = r.report.flows.len().saturating_sub(rf.count as usize);
        for (i, f) in r.report.flows[first..].iter().enumerate() {
            let pair = (f.src, f.dst, f.hops);
            match drawn.entry((r.seed, i as u32)) {
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert(pair);
                }
                std::collections::btree_map::Entry::Occupied(o) => same &= *o.get() == pair,
            }
        }
    }
    let mut hops: BTreeMap<Option<u32>, usize> = BTreeMap::new();
    for &(_, _, h) in drawn.values() {
        *hops.entry(h).or_default() += 1;
    }
    Some(RandomPairs { pairs: drawn.len(), same_in_every_point: same, hops: hops.into_iter().collect() })
}
