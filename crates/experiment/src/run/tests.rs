//! The job loop, the summaries and the tables together, on small experiments.

use super::*;
use crate::spec::Experiment;
use meshbed_sim::backend::Refusal;
use meshbed_sim::{FlowResult, RouteLogEvent, RouteLogSide, Scenario, SimReport};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A runner's check refuses before anything runs; its parallelism
/// caps the worker threads.
#[test]
fn the_runner_decides_what_runs_and_how_many_at_once() {
    #[derive(Debug, Default)]
    struct Counting {
        runs: AtomicUsize,
        at_once: AtomicUsize,
        most_at_once: AtomicUsize,
        refuse: bool,
    }
    impl Runner for Counting {
        fn max_parallel(&self) -> Option<usize> {
            Some(1)
        }
        fn supports(&self, _scenario: &Scenario) -> Result<(), Refusal> {
            let mut r = Refusal::new("the counting backend");
            if self.refuse {
                r.add("topology.nodes", "3", "it counts only");
            }
            r.into_result()
        }
        fn run(&self, scenario: &Scenario) -> Result<SimReport, RunError> {
            let now = self.at_once.fetch_add(1, Ordering::SeqCst) + 1;
            self.most_at_once.fetch_max(now, Ordering::SeqCst);
            self.runs.fetch_add(1, Ordering::SeqCst);
            let r = SimRunner.run(scenario);
            self.at_once.fetch_sub(1, Ordering::SeqCst);
            r
        }
    }
    let text = "duration_s = 0.5\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200.0\n\
        [[flows]]\nsrc = 0\ndst = 2\n\
        [experiment]\nname = \"t\"\nrepetitions = 3\n";
    let e = Experiment::from_toml(text, "e.toml").unwrap();
    let refusing = Arc::new(Counting { refuse: true, ..Counting::default() });
    let options = RunOptions { runner: refusing.clone(), jobs: 4, ..RunOptions::default() };
    assert_eq!(
        run(&e, &options).unwrap_err().to_string(),
        "e.toml: the counting backend cannot run topology.nodes = 3 (it counts only); nothing was started"
    );
    assert_eq!(refusing.runs.load(Ordering::SeqCst), 0, "nothing ran");

    let counting = Arc::new(Counting::default());
    let options = RunOptions { runner: counting.clone(), jobs: 4, ..RunOptions::default() };
    let results = run(&e, &options).unwrap();
    assert_eq!(results.runs.len(), 3);
    assert_eq!(counting.runs.load(Ordering::SeqCst), 3);
    assert_eq!(counting.most_at_once.load(Ordering::SeqCst), 1);
    assert!(results.runs.iter().all(|r| r.report.flows[0].bytes_delivered > 0));
}

/// The simulator refuses a kernel TCP point by its key before any point
/// runs (its runner asks `Simulator::supports`).
#[test]
fn the_simulator_refuses_an_experiment_with_a_kernel_tcp_point_before_anything_runs() {
    let text = "duration_s = 0.5\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200.0\n\
        [[flows]]\nsrc = 0\ndst = 2\nprotocol = \"tcp-reno\"\nbytes = 1000\n\
        [experiment]\nname = \"t\"\n[[experiment.sweep]]\nkey = \"protocol\"\nvalues = [\"tcp-reno\", \"kernel-tcp\"]\n";
    let e = Experiment::from_toml(text, "e.toml").unwrap();
    let err = run(&e, &RunOptions::default()).unwrap_err().to_string();
    assert!(
        err.starts_with(
            "e.toml: the simulator cannot run flows[0].protocol = \"kernel-tcp\" (the simulator has no kernel TCP;"
        ),
        "{err}"
    );
    assert!(err.contains("--backend emu") && err.ends_with("nothing was started"), "{err}");
}

/// The summary's median, extremes and confidence interval are computed
/// over the runs and reach summary.csv: a runner whose flow reports
/// 1, 2, 3, 4 kbit/s for seeds 1–4.
#[test]
fn summaries_give_median_extremes_and_confidence_interval() {
    #[derive(Debug)]
    struct BySeed;
    impl Runner for BySeed {
        fn supports(&self, scenario: &Scenario) -> Result<(), Refusal> {
            SimRunner.supports(scenario)
        }
        fn run(&self, scenario: &Scenario) -> Result<SimReport, RunError> {
            let mut r = SimRunner.run(scenario)?;
            r.flows[0].goodput_bps = scenario.seed as f64 * 1000.0;
            Ok(r)
        }
    }
    let text = "duration_s = 0.2\n[topology]\nkind = \"chain\"\nnodes = 2\nspacing_m = 100.0\n\
        [[flows]]\nsrc = 0\ndst = 1\n[experiment]\nname = \"t\"\nrepetitions = 4\n";
    let e = Experiment::from_toml(text, "e.toml").unwrap();
    let results = run(&e, &RunOptions { runner: Arc::new(BySeed), ..RunOptions::default() }).unwrap();
    let s = &summarize(&results)[0].flow_goodput_bps;
    assert_eq!((s.n, s.min, s.median, s.max, s.mean), (4, 1000.0, 2500.0, 4000.0, 2500.0));
    // sd = √(5/3)·1000; t(0.975, 3) = 3.1824: half-width 3.1824·sd/2.
    let sd = (5.0f64 / 3.0).sqrt() * 1000.0;
    assert!((s.ci95 - 3.1824 * sd / 2.0).abs() < 0.5, "{}", s.ci95);
    let dir = tempfile::tempdir().unwrap();
    write_csv(&results, &summarize(&results), dir.path()).unwrap();
    let mut summary = ::csv::Reader::from_path(dir.path().join("summary.csv")).unwrap();
    let header = summary.headers().unwrap().clone();
    let row = summary.records().next().unwrap().unwrap();
    let cell = |name: &str| row[header.iter().position(|h| h == name).unwrap()].parse::<f64>().unwrap();
    assert_eq!(cell("goodput_median_bps"), 2500.0);
    assert_eq!((cell("goodput_min_bps"), cell("goodput_max_bps")), (1000.0, 4000.0));
    assert!((cell("goodput_ci95_bps") - s.ci95).abs() < 1e-6);
}

/// Seed 003's tables: route discovery time and overhead ratio per run,
/// echo RTTs pooled over runs, in the summary and its CSV.
#[test]
fn discovery_overhead_and_echo_rtt_are_summarised_over_runs() {
    let text = "duration_s = 6.0\n[topology]\nkind = \"chain\"\nnodes = 4\nspacing_m = 200.0\n\
        [routing]\nkind = \"aodv\"\n\
        [[flows]]\nsrc = 0\ndst = 3\ntraffic = \"echo\"\npacket_bytes = 92\nstart_s = 3.0\n\
        [experiment]\nname = \"t\"\nrepetitions = 3\n";
    let e = Experiment::from_toml(text, "e.toml").unwrap();
    let results = run(&e, &RunOptions::default()).unwrap();
    let x = &summarize(&results)[0];
    // Three hops: every run discovers its route once.
    let d = x.route_discovery_s.expect("discoveries");
    assert_eq!(d.n, 3);
    assert!(d.min > 0.0 && d.max < 1.0, "{d:?}");
    assert_eq!(x.routing_overhead_ratio.map(|o| o.n), Some(3));
    let samples: usize =
        results.runs.iter().map(|r| r.report.flows[0].echo.as_ref().unwrap().rtt_samples_s.len()).sum();
    let rtt = x.echo_rtt_s.expect("replies");
    assert_eq!(rtt.n, samples);
    assert!(rtt.n > 100 && rtt.min <= rtt.median && rtt.median <= rtt.max, "{rtt:?}");
    let table = summary_table(&results, &summarize(&results));
    assert!(table.contains("route discovery time") && table.contains("echo RTT"), "{table}");
    let dir = tempfile::tempdir().unwrap();
    write_csv(&results, &summarize(&results), dir.path()).unwrap();
    let mut summary = ::csv::Reader::from_path(dir.path().join("summary.csv")).unwrap();
    let header = summary.headers().unwrap().clone();
    let row = summary.records().next().unwrap().unwrap();
    let cell = |name: &str| row[header.iter().position(|h| h == name).unwrap()].parse::<f64>().unwrap();
    assert_eq!(cell("echo_rtt_median_s"), rtt.median);
    assert_eq!(cell("route_discovery_max_s"), d.max);
}

/// Seed 002 §2's per-point quantities, against hand-computed numbers
/// for two TCP flows and one UDP flow.
#[test]
fn route_summary_averages_tcp_flows_and_pools_ratios() {
    use meshbed_sim::report::{RouteLogEntry, RoutingResult, SenderDetail, TcpDetail, TransferResult};
    use meshbed_sim::scenario::FlowSpec;
    let spec = FlowSpec { src: 0, dst: 1, ..FlowSpec::default() };
    let failed = |side| RouteLogEntry { t_s: 1.0, side, event: RouteLogEvent::RouteFailed };
    let tcp = |ss: u64, ss_s: f64, rto: f64| {
        let mut f = FlowResult::blank(0, &spec, None, 100.0);
        let tcp = TcpDetail { slow_start_entries: ss, slow_start_time_s: ss_s, max_rto_s: rto, ..Default::default() };
        let sender = Some(SenderDetail { tcp: Some(tcp), ..Default::default() });
        f.transfer = Some(TransferResult { sender, ..Default::default() });
        f
    };
    let mut a = tcp(2, 50.0, 4.0);
    a.net.drops.retry_limit = 3;
    a.net.drops.queue_overflow = 1;
    a.routing = Some(RoutingResult {
        routes_recomputed: 3,
        routes_new: 1,
        route_log: vec![failed(RouteLogSide::Sender), failed(RouteLogSide::Sender), failed(RouteLogSide::Receiver)],
        ..Default::default()
    });
    let mut b = tcp(4, 10.0, 8.0);
    b.net.drops.no_route = 4;
    b.routing = Some(RoutingResult { routes_recomputed: 1, routes_new: 1, path_changes: 6, ..Default::default() });
    let udp = FlowResult::blank(2, &spec, None, 100.0);
    let r = RouteSummary::of([&a, &b, &udp].into_iter());
    assert_eq!(r.tcp_flows, 2);
    assert_eq!((r.slow_starts, r.slow_start_share, r.max_rto_s), (Some(3.0), Some(0.3), Some(6.0)));
    // Pooled: 3 link drops of 8; 2 new of 4 recomputed.
    assert_eq!((r.link_loss_share, r.routes_new_share), (Some(0.375), Some(0.5)));
    // Per flow over all three flows.
    assert_eq!((r.route_failed_at_sender, r.route_failed_at_receiver), (2.0 / 3.0, 1.0 / 3.0));
    assert_eq!((r.routes_recomputed, r.path_changes), (4.0 / 3.0, 2.0));
    // No TCP flow, no loss, nothing recomputed: nothing to say.
    let none = RouteSummary::of([&udp].into_iter());
    assert_eq!((none.slow_starts, none.link_loss_share, none.routes_new_share), (None, None, None));
}

/// Routing metrics reach the CSVs: a `protocol`-free sweep over AODV
/// and DSR with random CBR pairs, two repetitions (other seeds, other
/// pairs; the same pairs for both protocols under one seed).
#[test]
fn routing_metrics_and_random_pairs_reach_the_csvs() {
    let text = "duration_s = 30.0\n[topology]\nkind = \"random\"\nnodes = 20\nwidth_m = 600.0\nheight_m = 300.0\n\
        [routing]\nkind = \"aodv\"\n\
        [random_flows]\ncount = 4\nstart_window_s = [1.0, 3.0]\n[random_flows.flow]\ntraffic = \"cbr\"\nrate_kbps = 2.048\npacket_bytes = 64\n\
        [experiment]\nname = \"t\"\nrepetitions = 2\n\
        [[experiment.sweep]]\nkey = \"routing.kind\"\nvalues = [\"aodv\", \"dsr\"]\n";
    let e = Experiment::from_toml(text, "e.toml").unwrap();
    let results = run(&e, &RunOptions::default()).unwrap();
    let summaries = summarize(&results);
    assert!(summaries.iter().all(|x| x.flows == 8 && x.per_flow_mean_bps.len() == 4));
    let dir = tempfile::tempdir().unwrap();
    write_csv(&results, &summaries, dir.path()).unwrap();
    let mut flows = ::csv::Reader::from_path(dir.path().join("flows.csv")).unwrap();
    let header = flows.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<::csv::StringRecord> = flows.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 16);
    let pair =
        |r: &::csv::StringRecord| (r[col("rep")].to_string(), r[col("src")].to_string(), r[col("dst")].to_string());
    let (aodv, dsr): (Vec<_>, Vec<_>) = rows.iter().partition(|r| &r[col("routing.kind")] == "aodv");
    assert_eq!(aodv.iter().map(|r| pair(r)).collect::<Vec<_>>(), dsr.iter().map(|r| pair(r)).collect::<Vec<_>>());
    assert_ne!(
        aodv.iter().filter(|r| &r[col("rep")] == "0").map(|r| pair(r).1).collect::<Vec<_>>(),
        aodv.iter().filter(|r| &r[col("rep")] == "1").map(|r| pair(r).1).collect::<Vec<_>>()
    );
    for r in &rows {
        let ratio: f64 = r[col("delivery_ratio")].parse().unwrap();
        assert!(ratio > 0.5 && ratio <= 1.0, "{r:?}");
    }
    // A flow to a neighbour needs no discovery (AODV's HELLOs, DSR's
    // one-hop request): some flows wait for one, and its time is given.
    let discovered =
        rows.iter().filter(|r| r[col("route_discoveries")].parse::<u64>().unwrap() >= 1).collect::<Vec<_>>();
    assert!(discovered.len() >= 4, "{} of 16 flows waited for a discovery", discovered.len());
    assert!(discovered.iter().all(|r| r[col("route_discovery_mean_s")].parse::<f64>().unwrap() > 0.0));
    let mut network = ::csv::Reader::from_path(dir.path().join("network.csv")).unwrap();
    let header = network.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<::csv::StringRecord> = network.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 4);
    for r in &rows {
        assert!(r[col("control_packets_sent")].parse::<u64>().unwrap() > 0, "{r:?}");
        assert!(r[col("routing_overhead_ratio")].parse::<f64>().unwrap() > 0.0, "{r:?}");
    }
}

/// The jobs come by (point, repetition) with the CLI's seeds, and a job
/// run through `run_job` with a store is kept, then reused with the same
/// report: what `run`'s threads and the Python module both rely on.
#[test]
fn jobs_are_ordered_and_run_job_keeps_then_reuses_a_run() {
    let text = "duration_s = 0.2\n[topology]\nkind = \"chain\"\nnodes = 2\nspacing_m = 100.0\n\
        [[flows]]\nsrc = 0\ndst = 1\n[experiment]\nname = \"t\"\nrepetitions = 2\n\
        [[experiment.sweep]]\nkey = \"duration_s\"\nvalues = [0.2, 0.3]\n";
    let e = Experiment::from_toml(text, "e.toml").unwrap();
    let planned = plan(&e, &RunOptions::default()).unwrap();
    let order: Vec<(usize, u32, u64)> = jobs(&planned.points, planned.reps).map(|j| (j.point, j.rep, j.seed)).collect();
    let base = planned.points[0].scenario.seed;
    assert_eq!(order, [(0, 0, base), (0, 1, base + 1), (1, 0, base), (1, 1, base + 1)]);

    let dir = tempfile::tempdir().unwrap();
    let store = crate::store::Store::open(dir.path()).unwrap();
    let point = &planned.points[1];
    let (first, tally) = run_job("e.toml", point, Job::new(point, 1), &SimRunner, Some(&store)).unwrap();
    assert_eq!((tally.executed, tally.reused), (1, 0));
    let (again, tally) = run_job("e.toml", point, Job::new(point, 1), &SimRunner, Some(&store)).unwrap();
    assert_eq!((tally.executed, tally.reused), (0, 1));
    assert_eq!((again.point, again.rep, again.seed), (1, 1, base + 1));
    assert_eq!(again.report.trace_hash, first.report.trace_hash);
    // The thread pool gives the same run.
    let results = run(&e, &RunOptions::default()).unwrap();
    assert_eq!(results.runs[3].report.trace_hash, first.report.trace_hash);
}

/// What a backend did not measure (the emulator's delay; packets its
/// kernel forwarded) is an empty cell in the CSVs, never a 0.
#[test]
fn what_nothing_measured_is_an_empty_cell() {
    #[derive(Debug)]
    struct KernelForwarded;
    impl Runner for KernelForwarded {
        fn supports(&self, scenario: &Scenario) -> Result<(), Refusal> {
            SimRunner.supports(scenario)
        }
        fn run(&self, scenario: &Scenario) -> Result<SimReport, RunError> {
            let mut r = SimRunner.run(scenario)?;
            r.data_path = meshbed_sim::DataPathCounting::Kernel;
            r.flows[0].mean_delay_s = None;
            Ok(r)
        }
    }
    let text = "duration_s = 0.5\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200.0\n\
        [[flows]]\nsrc = 0\ndst = 2\ntraffic = \"cbr\"\nrate_kbps = 100.0\n[experiment]\nname = \"t\"\nrepetitions = 1\n";
    let e = Experiment::from_toml(text, "e.toml").unwrap();
    let cells = |runner: Arc<dyn Runner>| {
        let results = run(&e, &RunOptions { runner, ..RunOptions::default() }).unwrap();
        let dir = tempfile::tempdir().unwrap();
        write_csv(&results, &summarize(&results), dir.path()).unwrap();
        let cell = |file: &str, name: &str| {
            let mut r = ::csv::Reader::from_path(dir.path().join(file)).unwrap();
            let header = r.headers().unwrap().clone();
            let row = r.records().next().unwrap().unwrap();
            row[header.iter().position(|h| h == name).unwrap()].to_string()
        };
        ["forwarded", "drop_no_route", "drop_retry_limit"]
            .map(|c| cell("network.csv", c))
            .into_iter()
            .chain([cell("flows.csv", "mean_delay_s")])
            .collect::<Vec<_>>()
    };
    // Simulated: node 1 forwarded every packet, each with its delay.
    let simulated = cells(Arc::new(SimRunner));
    assert!(simulated[0].parse::<u64>().unwrap() > 0, "{simulated:?}");
    assert_eq!((simulated[1].as_str(), simulated[2].as_str()), ("0", "0"));
    assert!(simulated[3].parse::<f64>().unwrap() > 0.0, "{simulated:?}");
    assert_eq!(cells(Arc::new(KernelForwarded)), ["", "", "", ""]);
}

/// Every run's route log reaches `routes.csv` (seed 002 §2.4, §5.2.1:
/// losses, timeouts and rates placed against route failures), one row per
/// entry with its run's point, repetition and seed; without any entry
/// there is no file.
#[test]
fn route_logs_reach_routes_csv_and_no_log_writes_no_file() {
    use meshbed_sim::report::{RouteLogEntry, RoutingResult};
    #[derive(Debug)]
    struct Logged;
    impl Runner for Logged {
        fn supports(&self, scenario: &Scenario) -> Result<(), Refusal> {
            SimRunner.supports(scenario)
        }
        fn run(&self, scenario: &Scenario) -> Result<SimReport, RunError> {
            let mut r = SimRunner.run(scenario)?;
            let entry = |t_s, side, event| RouteLogEntry { t_s, side, event };
            r.flows[0].routing = Some(RoutingResult {
                route_log: vec![
                    entry(1.25, RouteLogSide::Sender, RouteLogEvent::RouteFailed),
                    entry(1.5, RouteLogSide::Sender, RouteLogEvent::RouteReestablished),
                    entry(2.0, RouteLogSide::Destination, RouteLogEvent::PathChanged),
                ],
                ..Default::default()
            });
            Ok(r)
        }
    }
    let text = "duration_s = 0.5\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200.0\n\
        [[flows]]\nsrc = 0\ndst = 2\ntraffic = \"cbr\"\nrate_kbps = 100.0\n[experiment]\nname = \"t\"\nrepetitions = 2\n";
    let e = Experiment::from_toml(text, "e.toml").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let results = run(&e, &RunOptions::default()).unwrap();
    write_csv(&results, &summarize(&results), dir.path()).unwrap();
    assert!(!dir.path().join("routes.csv").exists(), "a static chain logs nothing");
    let results = run(&e, &RunOptions { runner: Arc::new(Logged), ..RunOptions::default() }).unwrap();
    let written = write_csv(&results, &summarize(&results), dir.path()).unwrap();
    assert!(written.contains(&dir.path().join("routes.csv")) && dir.path().join("routes.parquet").exists());
    let mut r = ::csv::Reader::from_path(dir.path().join("routes.csv")).unwrap();
    assert_eq!(
        r.headers().unwrap().iter().collect::<Vec<_>>(),
        ["point", "rep", "seed", "flow", "protocol", "t_s", "side", "event"]
    );
    let rows: Vec<Vec<String>> =
        r.records().map(|x| x.unwrap().iter().map(str::to_string).collect::<Vec<_>>()).collect();
    assert_eq!(rows.len(), 6, "three entries in each of two runs");
    assert_eq!(rows[0][1..].join(","), "0,1,0,udp,1.25,sender,route-failed");
    assert_eq!(rows[2][5..].join(","), "2,destination,path-changed");
    assert_eq!(rows[3][1..3].join(","), "1,2", "the second run: repetition 1, seed 2");
}
