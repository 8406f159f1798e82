//! The result tables: one serde row struct per table (`flows`, `network`,
//! `rates`, `traces`, `summary`), written as CSV and as Parquet beside it.

use super::{flow_goodput_bps, BatchSummary, PointSummary, Results};
use crate::metrics::SampleStats;
use crate::spec::{value_text, Point};
use crate::store::Provenance;
use crate::table::{Table, TableWriter};
use meshbed_sim::net_stats::Loss;
use meshbed_sim::{RouteLogEvent, RouteLogSide};
use serde::Serialize;

/// An f64 in a CSV cell as Rust's `Display` writes it: the shortest
/// decimal that reads back to the same value, without an exponent and
/// without a trailing `.0` (`0`, `2.746248449`), as the CSVs have always
/// been written. (The csv crate's own float format would write `0.0` and
/// `1e16`.) A format that is not for people (Parquet's cells) gets the f64.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Decimal(f64);

impl Serialize for Decimal {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match s.is_human_readable() {
            true => s.collect_str(&self.0),
            false => s.serialize_f64(self.0),
        }
    }
}

/// The last columns of every row of `flows`, `network`, `rates` and
/// `summary`: the build that produced the row's run(s) (issue 16, like
/// SEM's commit pinning).
#[derive(Serialize, Default)]
struct ProvenanceCsv<'a> {
    meshbed_version: &'a str,
    git_revision: &'a str,
}

impl<'a> ProvenanceCsv<'a> {
    fn of(p: &'a Provenance) -> ProvenanceCsv<'a> {
        ProvenanceCsv { meshbed_version: &p.meshbed_version, git_revision: &p.git_revision }
    }
}

/// The columns of `flows.csv` before the sweep's axes.
#[derive(Serialize, Default)]
struct FlowCsvKey<'a> {
    experiment: &'a str,
    point: usize,
}

/// The columns of `flows.csv` after the sweep's axes: one flow of one run.
#[derive(Serialize, Default)]
struct FlowCsvRow<'a> {
    rep: u32,
    seed: u64,
    flow: u32,
    protocol: &'a str,
    src: u32,
    dst: u32,
    /// The flow's route length (a sweep may also have a `hops` axis, the
    /// point's parameter, which is a column of its own).
    route_hops: Option<u32>,
    start_s: Decimal,
    /// Empty for a flow that did not complete.
    end_s: Option<Decimal>,
    duration_s: Decimal,
    bytes_delivered: u64,
    goodput_bps: Decimal,
    retransmissions: u64,
    feedback_packets: u64,
    completed: bool,
    verified: bool,
    failed: bool,
    mac_drop_queue_overflow: u64,
    mac_drop_retry_limit: u64,
    mac_rx_collision_or_corruption: u64,
    mac_rx_while_busy: u64,
    mac_rx_below_sensitivity: u64,
    mac_retransmissions: u64,
    /// UDP: received / sent; empty for a transport flow.
    delivery_ratio: Option<Decimal>,
    /// Empty where nothing measured it (no packet arrived; the emulator).
    mean_delay_s: Option<Decimal>,
    /// Routing (issue 11 §4): how often the data's path changed, the ELFN
    /// notices its ends got, the route discoveries its packets waited for.
    path_changes: u64,
    /// Route failures at the source followed by arrivals, and of those the
    /// ones over a new path (seed 002 Fig. 4(b)).
    routes_recomputed: u64,
    routes_new: u64,
    route_failed_notices: u64,
    route_reestablished_notices: u64,
    /// Of the "route failed" notices, those at the sender (the data's
    /// route) and at the receiver (the ACKs' or feedback's route; seed 002
    /// §2, Fig. 5: "the forward and reverse paths experience the same order
    /// of magnitude of failures").
    route_failed_at_sender: u64,
    route_failed_at_receiver: u64,
    route_discoveries: u64,
    route_discovery_mean_s: Option<Decimal>,
    /// The flow's packets lost in the network layer, by cause.
    drop_no_route: u64,
    drop_discovery_timeout: u64,
    drop_discovery_overflow: u64,
    drop_ttl_expired: u64,
    drop_queue_overflow: u64,
    drop_retry_limit: u64,
    /// The sender's protocol-specific counts (empty where they do not
    /// apply): TCP's slow starts, timeouts and largest RTO (seed 002 §2),
    /// TCP-ELFN's standbys, ATP's probes after route failures.
    slow_start_entries: Option<u64>,
    slow_start_time_s: Option<Decimal>,
    timeouts: Option<u64>,
    max_rto_s: Option<Decimal>,
    elfn_standbys: Option<u64>,
    route_failure_probes: Option<u64>,
    error: &'a str,
}

/// The columns of `network.csv` after the sweep's axes: the network layer
/// of one run, all nodes together (seed 003 §5.2–5.3; issue 11 §4).
#[derive(Serialize, Default)]
struct NetworkCsvRow {
    rep: u32,
    seed: u64,
    data_packets_delivered: u64,
    /// This and the `drop_` columns are empty where nobody counted them
    /// (`SimReport::data_path`: the emulator's kernel forwarding).
    forwarded: Option<u64>,
    control_packets_sent: u64,
    control_bytes_sent: u64,
    /// Control packets sent per data packet delivered (empty without
    /// routing engines).
    routing_overhead_ratio: Option<Decimal>,
    link_failures: u64,
    route_changes: u64,
    routes_lost: u64,
    held_for_discovery: u64,
    route_discoveries: u64,
    route_discoveries_failed: u64,
    route_discovery_mean_s: Option<Decimal>,
    route_discovery_max_s: Decimal,
    drop_no_route: Option<u64>,
    drop_discovery_timeout: Option<u64>,
    drop_discovery_overflow: Option<u64>,
    drop_ttl_expired: Option<u64>,
    drop_queue_overflow: Option<u64>,
    drop_retry_limit: Option<u64>,
}

/// One row of `rates.csv`: the DATA frames one link sent at one rate in
/// one run (issue 13: rate selection's histogram per link).
#[derive(Serialize, Default)]
struct RateCsvRow<'a> {
    rep: u32,
    seed: u64,
    tx: u32,
    rx: u32,
    rate_control: &'a str,
    rate_kbps: u32,
    /// DATA attempts with a known outcome, and the acknowledged ones.
    attempts: u64,
    successes: u64,
}

/// One row of `traces.csv`: one sample of a traced flow.
#[derive(Serialize, Default)]
struct TraceCsvRow<'a> {
    point: usize,
    rep: u32,
    flow: u32,
    protocol: &'a str,
    t_s: Decimal,
    side: &'a str,
    kind: &'a str,
    value: Decimal,
}

/// One row of `routes.csv`: one entry of a flow's route log (seed 002
/// §2.3: a route lost or found again at either end, the data's path
/// changed at the destination).
#[derive(Serialize, Default)]
struct RouteCsvRow<'a> {
    point: usize,
    rep: u32,
    seed: u64,
    flow: u32,
    protocol: &'a str,
    t_s: Decimal,
    side: &'a str,
    event: &'a str,
}

/// The columns of `summary.csv` before the sweep's axes.
#[derive(Serialize, Default)]
struct SummaryCsvKey {
    point: usize,
}

/// The columns of `summary.csv` after the sweep's axes: one point.
#[derive(Serialize, Default)]
struct SummaryCsvRow {
    runs: usize,
    goodput_mean_bps: Decimal,
    goodput_sd_bps: Decimal,
    aggregate_mean_bps: Decimal,
    aggregate_sd_bps: Decimal,
    unfairness_mean: Decimal,
    unfairness_sd: Decimal,
    log_utility_mean: Decimal,
    log_utility_sd: Decimal,
    jain_mean: Decimal,
    /// Median, extremes and the 95% confidence interval's half-width
    /// (empty for one run) of the same quantities (seed 003's tables give
    /// median, min and max; issue 15).
    goodput_median_bps: Decimal,
    goodput_min_bps: Decimal,
    goodput_max_bps: Decimal,
    goodput_ci95_bps: Option<Decimal>,
    aggregate_median_bps: Decimal,
    aggregate_min_bps: Decimal,
    aggregate_max_bps: Decimal,
    aggregate_ci95_bps: Option<Decimal>,
    unfairness_median: Decimal,
    unfairness_ci95: Option<Decimal>,
    log_utility_median: Decimal,
    log_utility_ci95: Option<Decimal>,
    /// Seed 002 §2's quantities ([`RouteSummary`]; empty where none).
    tcp_slow_starts: Option<Decimal>,
    tcp_slow_start_share: Option<Decimal>,
    tcp_timeouts: Option<Decimal>,
    tcp_max_rto_s: Option<Decimal>,
    link_loss_share: Option<Decimal>,
    routes_recomputed: Decimal,
    routes_new_share: Option<Decimal>,
    route_failed_at_sender: Decimal,
    route_failed_at_receiver: Decimal,
    path_changes: Decimal,
    /// Seed 003 Tables 2–4 (empty where the point has none).
    route_discovery_min_s: Option<Decimal>,
    route_discovery_median_s: Option<Decimal>,
    route_discovery_max_s: Option<Decimal>,
    route_discovery_mean_s: Option<Decimal>,
    route_discovery_sd_s: Option<Decimal>,
    routing_overhead_ratio_mean: Option<Decimal>,
    routing_overhead_ratio_median: Option<Decimal>,
    routing_overhead_ratio_sd: Option<Decimal>,
    echo_rtt_min_s: Option<Decimal>,
    echo_rtt_median_s: Option<Decimal>,
    echo_rtt_max_s: Option<Decimal>,
    echo_rtt_mean_s: Option<Decimal>,
    echo_rtt_sd_s: Option<Decimal>,
    /// [`DelaySummary`], means over the flows (empty where none).
    feedback_delay_mean_s: Option<Decimal>,
    feedback_sent_gap_cv_mean: Option<Decimal>,
    feedback_arrival_gap_cv_mean: Option<Decimal>,
    feedback_clustered_share_mean: Option<Decimal>,
    d_max_mean_us: Option<Decimal>,
    d_max_median_us: Option<Decimal>,
    starved_flows: usize,
    flows: usize,
    incomplete_flows: usize,
    failed_flows: usize,
}

/// The columns of `summary.csv` after [`SummaryCsvRow`]'s, only with
/// `[experiment] batch_means` ([`BatchSummary`]; empty where the point has
/// no flow with an estimate).
#[derive(Serialize, Default)]
struct BatchCsvRow {
    batch_goodput_mean_bps: Option<Decimal>,
    /// The batches' 95% half-width, averaged over the flows.
    batch_goodput_ci95_bps: Option<Decimal>,
    /// The 95% half-width across the flows' estimates (over runs).
    batch_goodput_runs_ci95_bps: Option<Decimal>,
    batch_aggregate_mean_bps: Option<Decimal>,
    batch_aggregate_ci95_bps: Option<Decimal>,
    batch_jain_mean: Option<Decimal>,
    batch_flows: usize,
    batch_short_flows: usize,
}

impl BatchCsvRow {
    fn of(m: &BatchSummary) -> BatchCsvRow {
        let finite = |x: f64| x.is_finite().then_some(Decimal(x));
        let has = m.goodput_bps.n > 0;
        BatchCsvRow {
            batch_goodput_mean_bps: has.then_some(Decimal(m.goodput_bps.mean)),
            batch_goodput_ci95_bps: finite(m.batch_ci95_bps),
            batch_goodput_runs_ci95_bps: finite(m.goodput_bps.ci95),
            batch_aggregate_mean_bps: m.aggregate_bps.map(|a| Decimal(a.mean)),
            batch_aggregate_ci95_bps: m.aggregate_bps.and_then(|a| finite(a.ci95)),
            batch_jain_mean: m.jain_index.map(|j| Decimal(j.mean)),
            batch_flows: m.flows,
            batch_short_flows: m.short_flows,
        }
    }
}

/// The column names serde gives a row struct, in order. (The csv crate
/// writes them only as the header of a first row: one default row is
/// written to memory and its header kept. Field names never need quoting.)
fn csv_columns<T: Serialize + Default>() -> Vec<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.serialize(T::default()).expect("a row struct of plain named fields serialises");
    let text = String::from_utf8(w.into_inner().expect("writing to memory")).expect("field names are UTF-8");
    text.lines().next().unwrap_or_default().split(',').map(String::from).collect()
}

/// A table (CSV, and Parquet beside it) whose header is `K`'s columns, then
/// the sweep's axes, then `R`'s columns, then the provenance's;
/// [`write_row`] writes one row in the same order.
fn csv_with_axes<K: Serialize + Default, R: Serialize + Default>(
    path: &std::path::Path,
    axes: &[&str],
) -> csv::Result<TableWriter> {
    csv_with_axes_and::<K, R>(path, axes, Vec::new())
}

/// [`csv_with_axes`] with `more` columns between `R`'s and the provenance's.
fn csv_with_axes_and<K: Serialize + Default, R: Serialize + Default>(
    path: &std::path::Path,
    axes: &[&str],
    more: Vec<String>,
) -> csv::Result<TableWriter> {
    let (header, typed) = header_with_axes::<K, R>(axes, more);
    TableWriter::create(path, header, typed)
}

/// The header [`csv_with_axes_and`] gives a table, and where its axes are.
fn header_with_axes<K: Serialize + Default, R: Serialize + Default>(
    axes: &[&str],
    more: Vec<String>,
) -> (Vec<String>, std::ops::Range<usize>) {
    let mut header = csv_columns::<K>();
    let first_axis = header.len();
    header.extend(axes.iter().map(|a| a.to_string()));
    header.extend(csv_columns::<R>());
    header.extend(more);
    header.extend(csv_columns::<ProvenanceCsv>());
    (header, first_axis..first_axis + axes.len())
}

fn write_row<K: Serialize, R: Serialize>(
    w: &mut TableWriter,
    key: K,
    axis_values: &[String],
    row: R,
    provenance: &Provenance,
) -> csv::Result<()> {
    w.serialize((key, axis_values, row, ProvenanceCsv::of(provenance)))
}

/// The builds that produced a point's runs: each of the versions and of
/// the git revisions once, in order, joined by `+` (more than one only when
/// runs of the same model revision came from the store).
fn point_provenance(results: &Results, point: usize) -> Provenance {
    let mut versions: Vec<&str> = Vec::new();
    let mut revisions: Vec<&str> = Vec::new();
    for r in results.runs.iter().filter(|r| r.point == point) {
        if !versions.contains(&r.provenance.meshbed_version.as_str()) {
            versions.push(&r.provenance.meshbed_version);
        }
        if !revisions.contains(&r.provenance.git_revision.as_str()) {
            revisions.push(&r.provenance.git_revision);
        }
    }
    versions.sort_unstable();
    revisions.sort_unstable();
    Provenance { meshbed_version: versions.join("+"), git_revision: revisions.join("+") }
}

/// The point's values on the given axes, as CSV text.
fn axis_values(p: &Point, axes: &[&str]) -> Vec<String> {
    p.values.iter().filter(|(k, _)| axes.contains(&k.as_str())).map(|(_, v)| value_text(v)).collect()
}

/// A `protocol` axis sets every flow's protocol, which the per-flow
/// `protocol` column already gives: flows.csv names it once.
fn flow_axes(results: &Results) -> Vec<&str> {
    results.experiment.config.sweep.iter().map(|a| a.key.as_str()).filter(|a| *a != "protocol").collect()
}

/// The rows of `flows.csv`, one per flow per run in the order of
/// `results.runs`.
fn write_flows(results: &Results, flow_axes: &[&str], w: &mut TableWriter) -> csv::Result<()> {
    let name = &results.experiment.config.name;
    for r in &results.runs {
        let p = &results.points[r.point];
        let m = &r.report.mac_total;
        let values = axis_values(p, flow_axes);
        for f in &r.report.flows {
            let tcp = f.tcp();
            let routing = f.routing_or_zero();
            let failed_at = |side: RouteLogSide| {
                routing.route_log.iter().filter(|e| e.side == side && e.event == RouteLogEvent::RouteFailed).count()
                    as u64
            };
            let row = FlowCsvRow {
                rep: r.rep,
                seed: r.seed,
                flow: f.flow,
                protocol: f.protocol_name(),
                src: f.src,
                dst: f.dst,
                route_hops: f.hops,
                start_s: Decimal(f.start_s),
                end_s: f.completion_time_s().map(Decimal),
                duration_s: Decimal(f.duration_s),
                bytes_delivered: f.bytes_delivered,
                goodput_bps: Decimal(flow_goodput_bps(results, f)),
                retransmissions: f.retransmissions(),
                feedback_packets: f.feedback_packets(),
                completed: f.completed(),
                verified: f.verified(),
                failed: f.failed(),
                mac_drop_queue_overflow: m.drop_queue_overflow,
                mac_drop_retry_limit: m.drop_retry_limit,
                mac_rx_collision_or_corruption: m.rx_collision_or_corruption,
                mac_rx_while_busy: m.rx_while_busy,
                mac_rx_below_sensitivity: m.rx_below_sensitivity,
                mac_retransmissions: m.retransmissions,
                delivery_ratio: f.delivery_ratio().map(Decimal),
                mean_delay_s: f.mean_delay_s.map(Decimal),
                path_changes: routing.path_changes,
                routes_recomputed: routing.routes_recomputed,
                routes_new: routing.routes_new,
                route_failed_notices: routing.route_failed_notices,
                route_reestablished_notices: routing.route_reestablished_notices,
                route_failed_at_sender: failed_at(RouteLogSide::Sender),
                route_failed_at_receiver: failed_at(RouteLogSide::Receiver),
                route_discoveries: f.net.discoveries.completed,
                route_discovery_mean_s: f.net.discoveries.mean_s().map(Decimal),
                drop_no_route: f.net.drops.no_route,
                drop_discovery_timeout: f.net.drops.discovery_timeout,
                drop_discovery_overflow: f.net.drops.discovery_overflow,
                drop_ttl_expired: f.net.drops.ttl_expired,
                drop_queue_overflow: f.net.drops.queue_overflow,
                drop_retry_limit: f.net.drops.retry_limit,
                slow_start_entries: tcp.map(|t| t.slow_start_entries),
                slow_start_time_s: tcp.map(|t| Decimal(t.slow_start_time_s)),
                timeouts: tcp.map(|t| t.timeouts),
                max_rto_s: tcp.map(|t| Decimal(t.max_rto_s)),
                elfn_standbys: tcp.map(|t| t.elfn_standbys),
                route_failure_probes: f.sender().and_then(|d| d.route_failure_probes),
                error: f.error().unwrap_or_default(),
            };
            write_row(w, FlowCsvKey { experiment: name, point: p.index }, &values, row, &r.provenance)?;
        }
    }
    Ok(())
}

/// Writes `flows.csv` (one row per flow per run), `network.csv` (one row
/// per run: the network layer's totals), `traces.csv` (per-packet
/// samples of the traced flows of each point's first repetition),
/// `routes.csv` (every flow's route log, every run; only when routing
/// logged anything) and `summary.csv` into `dir`, each with a `.parquet`
/// twin beside it.
pub fn write_csv(
    results: &Results,
    summaries: &[PointSummary],
    dir: &std::path::Path,
) -> csv::Result<Vec<std::path::PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let axes: Vec<&str> = results.experiment.config.sweep.iter().map(|a| a.key.as_str()).collect();
    let flow_axes = flow_axes(results);
    let flows_path = dir.join("flows.csv");
    let mut w = csv_with_axes::<FlowCsvKey, FlowCsvRow>(&flows_path, &flow_axes)?;
    write_flows(results, &flow_axes, &mut w)?;
    let name = &results.experiment.config.name;
    let mut written = w.finish()?;

    let network_path = dir.join("network.csv");
    let mut w = csv_with_axes::<FlowCsvKey, NetworkCsvRow>(&network_path, &axes)?;
    for r in &results.runs {
        let p = &results.points[r.point];
        let n = &r.report.net_total;
        let counting = r.report.data_path;
        let dropped = |loss: Loss, count: u64| counting.counts(loss).then_some(count);
        let row = NetworkCsvRow {
            rep: r.rep,
            seed: r.seed,
            data_packets_delivered: r.report.flows.iter().map(|f| f.received_packets).sum(),
            forwarded: counting.counts_forwarded().then_some(n.forwarded),
            control_packets_sent: n.control_packets_sent,
            control_bytes_sent: n.control_bytes_sent,
            routing_overhead_ratio: r.report.routing_overhead_ratio.map(Decimal),
            link_failures: n.link_failures,
            route_changes: n.route_changes,
            routes_lost: n.routes_lost,
            held_for_discovery: n.held,
            route_discoveries: n.discoveries.completed,
            route_discoveries_failed: n.discoveries.failed,
            route_discovery_mean_s: n.discoveries.mean_s().map(Decimal),
            route_discovery_max_s: Decimal(n.discoveries.max_ns as f64 / 1e9),
            drop_no_route: dropped(Loss::NoRoute, n.drops.no_route),
            drop_discovery_timeout: dropped(Loss::DiscoveryTimeout, n.drops.discovery_timeout),
            drop_discovery_overflow: dropped(Loss::DiscoveryOverflow, n.drops.discovery_overflow),
            drop_ttl_expired: dropped(Loss::TtlExpired, n.drops.ttl_expired),
            drop_queue_overflow: dropped(Loss::QueueOverflow, n.drops.queue_overflow),
            drop_retry_limit: dropped(Loss::RetryLimit, n.drops.retry_limit),
        };
        write_row(&mut w, FlowCsvKey { experiment: name, point: p.index }, &axis_values(p, &axes), row, &r.provenance)?;
    }
    written.extend(w.finish()?);

    // Rate selection's histogram, per link per rate, where a node ran it.
    if results.runs.iter().any(|r| !r.report.rate_histogram.is_empty()) {
        let path = dir.join("rates.csv");
        let mut w = csv_with_axes::<FlowCsvKey, RateCsvRow>(&path, &axes)?;
        for r in &results.runs {
            let p = &results.points[r.point];
            let values = axis_values(p, &axes);
            for link in &r.report.rate_histogram {
                for c in &link.rates {
                    let row = RateCsvRow {
                        rep: r.rep,
                        seed: r.seed,
                        tx: link.tx,
                        rx: link.rx,
                        rate_control: link.rate_control.name(),
                        rate_kbps: c.rate_kbps,
                        attempts: c.attempts,
                        successes: c.successes,
                    };
                    write_row(&mut w, FlowCsvKey { experiment: name, point: p.index }, &values, row, &r.provenance)?;
                }
            }
        }
        written.extend(w.finish()?);
    }

    // Per-packet traces of the first repetition of each point only: every
    // repetition's would make the file hundreds of megabytes.
    if results.runs.iter().any(|r| r.rep == 0 && r.report.flows.iter().any(|f| !f.trace.is_empty())) {
        let path = dir.join("traces.csv");
        let mut w = TableWriter::create(&path, csv_columns::<TraceCsvRow>(), 0..0)?;
        for r in results.runs.iter().filter(|r| r.rep == 0) {
            for f in &r.report.flows {
                for t in &f.trace {
                    w.serialize(TraceCsvRow {
                        point: r.point,
                        rep: r.rep,
                        flow: f.flow,
                        protocol: f.protocol_name(),
                        t_s: Decimal(t.t_s),
                        side: t.side.name(),
                        kind: t.kind.name(),
                        value: Decimal(t.value),
                    })?;
                }
            }
        }
        written.extend(w.finish()?);
    }

    // Route logs are a few entries per route failure, so every run's are
    // kept: with traces.csv's time stamps they place a flow's losses,
    // timeouts and rate changes against its route failures (seed 002
    // §2.4, §5.2.1).
    let logged =
        |r: &&super::runner::RunOutcome| r.report.flows.iter().any(|f| !f.routing_or_zero().route_log.is_empty());
    if results.runs.iter().any(|r| logged(&r)) {
        let path = dir.join("routes.csv");
        let mut w = TableWriter::create(&path, csv_columns::<RouteCsvRow>(), 0..0)?;
        for r in results.runs.iter().filter(logged) {
            for f in &r.report.flows {
                for e in &f.routing_or_zero().route_log {
                    w.serialize(RouteCsvRow {
                        point: r.point,
                        rep: r.rep,
                        seed: r.seed,
                        flow: f.flow,
                        protocol: f.protocol_name(),
                        t_s: Decimal(e.t_s),
                        side: e.side.name(),
                        event: e.event.name(),
                    })?;
                }
            }
        }
        written.extend(w.finish()?);
    }

    let path = dir.join("summary.csv");
    let ci = |m: &SampleStats| m.ci95.is_finite().then_some(Decimal(m.ci95));
    // Batch-means columns only when the experiment asks for them, so that
    // other experiments' summary.csv keeps its columns.
    let batch_columns = match results.experiment.config.batch_means {
        Some(_) => csv_columns::<BatchCsvRow>(),
        None => Vec::new(),
    };
    let mut w = csv_with_axes_and::<SummaryCsvKey, SummaryCsvRow>(&path, &axes, batch_columns)?;
    for x in summaries {
        let row = SummaryCsvRow {
            runs: x.runs,
            goodput_mean_bps: Decimal(x.flow_goodput_bps.mean),
            goodput_sd_bps: Decimal(x.flow_goodput_bps.sd),
            aggregate_mean_bps: Decimal(x.aggregate_goodput_bps.mean),
            aggregate_sd_bps: Decimal(x.aggregate_goodput_bps.sd),
            unfairness_mean: Decimal(x.unfairness.mean),
            unfairness_sd: Decimal(x.unfairness.sd),
            log_utility_mean: Decimal(x.log_utility.mean),
            log_utility_sd: Decimal(x.log_utility.sd),
            jain_mean: Decimal(x.jain_index.mean),
            goodput_median_bps: Decimal(x.flow_goodput_bps.median),
            goodput_min_bps: Decimal(x.flow_goodput_bps.min),
            goodput_max_bps: Decimal(x.flow_goodput_bps.max),
            goodput_ci95_bps: ci(&x.flow_goodput_bps),
            aggregate_median_bps: Decimal(x.aggregate_goodput_bps.median),
            aggregate_min_bps: Decimal(x.aggregate_goodput_bps.min),
            aggregate_max_bps: Decimal(x.aggregate_goodput_bps.max),
            aggregate_ci95_bps: ci(&x.aggregate_goodput_bps),
            unfairness_median: Decimal(x.unfairness.median),
            unfairness_ci95: ci(&x.unfairness),
            log_utility_median: Decimal(x.log_utility.median),
            log_utility_ci95: ci(&x.log_utility),
            tcp_slow_starts: x.routes.slow_starts.map(Decimal),
            tcp_slow_start_share: x.routes.slow_start_share.map(Decimal),
            tcp_timeouts: x.routes.timeouts.map(Decimal),
            tcp_max_rto_s: x.routes.max_rto_s.map(Decimal),
            link_loss_share: x.routes.link_loss_share.map(Decimal),
            routes_recomputed: Decimal(x.routes.routes_recomputed),
            routes_new_share: x.routes.routes_new_share.map(Decimal),
            route_failed_at_sender: Decimal(x.routes.route_failed_at_sender),
            route_failed_at_receiver: Decimal(x.routes.route_failed_at_receiver),
            path_changes: Decimal(x.routes.path_changes),
            route_discovery_min_s: x.route_discovery_s.map(|m| Decimal(m.min)),
            route_discovery_median_s: x.route_discovery_s.map(|m| Decimal(m.median)),
            route_discovery_max_s: x.route_discovery_s.map(|m| Decimal(m.max)),
            route_discovery_mean_s: x.route_discovery_s.map(|m| Decimal(m.mean)),
            route_discovery_sd_s: x.route_discovery_s.map(|m| Decimal(m.sd)),
            routing_overhead_ratio_mean: x.routing_overhead_ratio.map(|m| Decimal(m.mean)),
            routing_overhead_ratio_median: x.routing_overhead_ratio.map(|m| Decimal(m.median)),
            routing_overhead_ratio_sd: x.routing_overhead_ratio.map(|m| Decimal(m.sd)),
            echo_rtt_min_s: x.echo_rtt_s.map(|m| Decimal(m.min)),
            echo_rtt_median_s: x.echo_rtt_s.map(|m| Decimal(m.median)),
            echo_rtt_max_s: x.echo_rtt_s.map(|m| Decimal(m.max)),
            echo_rtt_mean_s: x.echo_rtt_s.map(|m| Decimal(m.mean)),
            echo_rtt_sd_s: x.echo_rtt_s.map(|m| Decimal(m.sd)),
            feedback_delay_mean_s: x.delays.feedback_delay_s.map(|m| Decimal(m.mean)),
            feedback_sent_gap_cv_mean: x.delays.feedback_sent_gap_cv.map(|m| Decimal(m.mean)),
            feedback_arrival_gap_cv_mean: x.delays.feedback_arrival_gap_cv.map(|m| Decimal(m.mean)),
            feedback_clustered_share_mean: x.delays.feedback_clustered_share.map(|m| Decimal(m.mean)),
            // The mean of the flows' means, and the median of their medians.
            d_max_mean_us: x.delays.d_max_mean_us.map(|m| Decimal(m.mean)),
            d_max_median_us: x.delays.d_max_median_us.map(|m| Decimal(m.median)),
            starved_flows: x.starved_flows,
            flows: x.flows,
            incomplete_flows: x.incomplete_flows,
            failed_flows: x.failed_flows,
        };
        let key = SummaryCsvKey { point: x.point };
        let values = axis_values(&results.points[x.point], &axes);
        let provenance = point_provenance(results, x.point);
        match &x.batch_means {
            Some(m) => w.serialize((key, &values, row, BatchCsvRow::of(m), ProvenanceCsv::of(&provenance)))?,
            None => write_row(&mut w, key, &values, row, &provenance)?,
        }
    }
    written.extend(w.finish()?);
    Ok(written)
}

/// `flows.csv` of `results` as typed columns (what `flows.parquet`
/// holds): one row per flow per run, in the order of `results.runs`. The
/// Python module hands it over as an Arrow record batch. `results.points`
/// must hold every point a run names (rows carry the point's index and
/// axis values).
pub fn flows_table(results: &Results) -> csv::Result<Table> {
    let flow_axes = flow_axes(results);
    let (header, typed) = header_with_axes::<FlowCsvKey, FlowCsvRow>(&flow_axes, Vec::new());
    let mut w = TableWriter::in_memory(header, typed);
    write_flows(results, &flow_axes, &mut w)?;
    Ok(w.into_table())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_columns_come_from_the_row_structs_in_order() {
        assert_eq!(csv_columns::<FlowCsvKey>(), ["experiment", "point"]);
        let flow = csv_columns::<FlowCsvRow>();
        assert_eq!(flow[..4], ["rep", "seed", "flow", "protocol"]);
        assert_eq!(flow.last().map(String::as_str), Some("error"));
        assert_eq!(flow.len(), 47);
        assert!(flow.contains(&"route_discovery_mean_s".to_string()) && flow.contains(&"drop_retry_limit".to_string()));
        let network = csv_columns::<NetworkCsvRow>();
        assert_eq!(network[..3], ["rep", "seed", "data_packets_delivered"]);
        assert!(network.contains(&"routing_overhead_ratio".to_string()));
        assert_eq!(csv_columns::<TraceCsvRow>(), ["point", "rep", "flow", "protocol", "t_s", "side", "kind", "value"]);
        let summary = csv_columns::<SummaryCsvRow>();
        assert_eq!(summary[..3], ["runs", "goodput_mean_bps", "goodput_sd_bps"]);
        assert_eq!(summary.last().map(String::as_str), Some("failed_flows"));
    }

    #[test]
    fn csv_rows_follow_the_header_with_the_axes_between() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.csv");
        let mut w = csv_with_axes::<SummaryCsvKey, SummaryCsvRow>(&path, &["hops", "protocol"]).unwrap();
        let row = SummaryCsvRow {
            runs: 3,
            goodput_mean_bps: Decimal(1e16),
            unfairness_sd: Decimal(0.25),
            ..Default::default()
        };
        let provenance = Provenance::this_build();
        write_row(&mut w, SummaryCsvKey { point: 7 }, &["2".to_string(), "tcp-reno".to_string()], row, &provenance)
            .unwrap();
        drop(w);
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        assert_eq!(header[..4], ["point", "hops", "protocol", "runs"]);
        let row: Vec<&str> = lines.next().unwrap().split(',').collect();
        assert_eq!(row.len(), header.len());
        // Floats as `Display` writes them: no exponent, no trailing `.0`.
        assert_eq!(row[..6], ["7", "2", "tcp-reno", "3", "10000000000000000", "0"]);
        assert_eq!(row[header.iter().position(|h| *h == "unfairness_sd").unwrap()], "0.25");
    }

    #[test]
    fn an_absent_value_is_an_empty_cell() {
        let mut w = csv::WriterBuilder::new().has_headers(false).from_writer(Vec::new());
        w.serialize(FlowCsvRow { route_hops: None, end_s: None, start_s: Decimal(0.5), ..Default::default() }).unwrap();
        let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
        let cells: Vec<&str> = text.trim_end().split(',').collect();
        let columns = csv_columns::<FlowCsvRow>();
        let cell = |name: &str| cells[columns.iter().position(|c| c == name).unwrap()];
        assert_eq!((cell("route_hops"), cell("start_s"), cell("end_s"), cell("completed")), ("", "0.5", "", "false"));
    }
}
