//! Seed 004's setting and the batch-means method (§IV): the 54 Mbit/s ns-2
//! preset's range, delivery milestones recorded by the simulator, batch
//! goodputs from hand-made milestones, and the summary's batch columns.

use meshbed_experiment::run::{batch_goodput, summarize, summary_table, write_csv, BatchGoodput, RunError, Runner};
use meshbed_experiment::spec::BatchMeans;
use meshbed_experiment::{builtin, Experiment, RunOptions, SimRunner};
use meshbed_radio::RadioConfig;
use meshbed_sim::scenario::{FlowSpec, Routing, Scenario, Topology};
use meshbed_sim::SimReport;
use std::sync::Arc;

const B: BatchMeans = BatchMeans { batch_packets: 1000, batches: 4, discard: 1 };

/// t(0.975, 2), for three kept batches.
const T_2: f64 = 4.302_652_7;

#[test]
fn batch_goodputs_from_hand_made_milestones_drop_the_first_batch() {
    // Batches of 1000 bytes = 8000 bits, the flow starting at 2 s: the
    // first batch (2 → 3 s) is dropped; the others take 2, 4 and 1 s.
    let milestones_s = [3.0, 5.0, 9.0, 10.0];
    let BatchGoodput::Estimate { batch_durations_s, goodput_bps, ci95_bps } =
        batch_goodput(2.0, &milestones_s, Some(1000), &B)
    else {
        panic!("four batches delivered")
    };
    assert_eq!(batch_durations_s, vec![2.0, 4.0, 1.0]);
    // 3 × 8000 bits in 7 s, not the mean of 4000, 2000 and 8000 bit/s.
    assert!((goodput_bps - 24_000.0 / 7.0).abs() < 1e-9, "{goodput_bps}");
    // The mean time's half-width: sd(2, 4, 1) = 1.527525, × t / √3; as a
    // share of the mean time (7/3 s), the same share of the goodput.
    let time_ci_s = T_2 * 1.527_525_2 / 3f64.sqrt();
    assert!((ci95_bps - goodput_bps * time_ci_s / (7.0 / 3.0)).abs() < 0.01, "{ci95_bps}");
    // Milestones past the needed batches (a longer transfer) are not used.
    let longer = [3.0, 5.0, 9.0, 10.0, 100.0];
    assert_eq!(batch_goodput(2.0, &longer, Some(1000), &B).estimate_bps(), Some(goodput_bps));
}

#[test]
fn a_flow_short_of_its_batches_is_reported_and_a_burst_still_counts() {
    assert_eq!(batch_goodput(0.0, &[1.0, 2.0, 3.0], Some(1000), &B), BatchGoodput::Short { reached: 3, needed: 4 });
    assert_eq!(batch_goodput(0.0, &[], None, &B), BatchGoodput::Short { reached: 0, needed: 4 });
    // One delivery crossed two boundaries at 2 s: that batch took no time,
    // and the estimate is still the bytes over the time.
    let burst = batch_goodput(0.0, &[1.0, 2.0, 2.0, 4.0], Some(1000), &B).estimate_bps();
    assert!(burst.is_some_and(|g| (g - 24_000.0 / 3.0).abs() < 1e-9), "{burst:?}");
    assert_eq!(batch_goodput(0.0, &[1.0, 1.0, 1.0, 1.0], Some(1000), &B), BatchGoodput::NoTime);
    // The discarded first batch may be anything.
    assert!(batch_goodput(0.0, &[0.0, 2.0, 3.0, 4.0], Some(1000), &B).estimate_bps().is_some());
}

/// A two-hop TCP transfer of `bytes` with `batch_packets` set.
fn two_hop_transfer(bytes: u64, batch_packets: Option<u32>) -> Scenario {
    let mut s = Scenario::chain(2, 200.0, 20.0);
    let mut f = FlowSpec::transfer(0, 2, meshbed_proto::Protocol::TcpNewReno, bytes);
    f.transport_mut().unwrap().batch_packets = batch_packets;
    s.flows = vec![f];
    s
}

#[test]
fn the_simulator_stamps_each_batch_of_delivered_packets_when_asked() {
    // 1500-byte packets carry 1436 bytes of data: 7 batches of 10 packets
    // and a few bytes more.
    let batch_bytes = 10 * 1436;
    let r = meshbed_sim::run(&two_hop_transfer(7 * batch_bytes + 5, Some(10))).unwrap();
    let f = &r.flows[0];
    assert!(f.completed(), "{f:?}");
    let t = f.transfer.as_ref().expect("a transfer");
    assert_eq!(t.batch_bytes, Some(batch_bytes));
    let m = &t.delivery_milestones_s;
    assert_eq!(m.len(), 7, "{m:?}");
    assert!(m[0] > f.start_s && m.windows(2).all(|w| w[0] <= w[1]), "{m:?}");
    assert!(*m.last().unwrap() <= f.completion_time_s().unwrap());
    // Off by default: nothing recorded, nothing in the JSON.
    let r = meshbed_sim::run(&two_hop_transfer(7 * batch_bytes + 5, None)).unwrap();
    let t = r.flows[0].transfer.as_ref().expect("a transfer");
    assert!(t.delivery_milestones_s.is_empty() && t.batch_bytes.is_none());
    assert!(!serde_json::to_string(&r).unwrap().contains("milestones"));
}

#[test]
fn batch_packets_belongs_to_transport_flows_and_is_at_least_one() {
    let s = two_hop_transfer(100_000, Some(0));
    let e = s.validate().unwrap_err().to_string();
    assert!(e.contains("flows[0].batch_packets = 0"), "{e}");
    // A UDP flow has no batch_packets: the file's reader refuses the key.
    let udp = "duration_s = 10\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200\n\
               [[flows]]\nsrc = 0\ndst = 2\nbatch_packets = 10\n";
    let e = Scenario::from_toml(udp).unwrap_err().to_string();
    assert!(e.contains("flows[0].batch_packets") && e.contains("transport flows"), "{e}");
}

fn experiment(batch_means: &str, bytes: u64) -> Result<Experiment, meshbed_experiment::ExperimentError> {
    let text = format!(
        "duration_s = 20.0\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200.0\n\
         [[flows]]\nsrc = 0\ndst = 2\nprotocol = \"tcp-newreno\"\nbytes = {bytes}\n\
         [experiment]\nname = \"b\"\nrepetitions = 2\nbatch_means = {batch_means}\n"
    );
    Experiment::from_toml(&text, "b.toml")
}

#[test]
fn batch_means_keys_are_checked_with_their_names() {
    let ok = experiment("{ batch_packets = 10, batches = 3, discard = 1 }", 30 * 1436).unwrap();
    assert_eq!(ok.config.batch_means, Some(BatchMeans { batch_packets: 10, batches: 3, discard: 1 }));
    assert_eq!(
        ok.points("b").unwrap()[0].scenario.flows[0].transport().unwrap().batch_packets,
        Some(10),
        "set on every flow"
    );
    // Each key defaults to the paper's value (§IV: 11 batches of 5,000, one discarded).
    let paper = experiment("{}", 55_000 * 1436).unwrap();
    assert_eq!(paper.config.batch_means, Some(BatchMeans { batch_packets: 5000, batches: 11, discard: 1 }));
    for (table, key) in [
        ("{ batch_packets = 0 }", "experiment.batch_means.batch_packets = 0"),
        ("{ batches = 1, discard = 0 }", "experiment.batch_means.batches = 1"),
        ("{ batches = 3, discard = 2 }", "experiment.batch_means.discard = 2: expected at most 1"),
    ] {
        let e = experiment(table, 10_000_000).unwrap_err().to_string();
        assert!(e.contains(key), "{table}: {e}");
    }
    // Just inside: two kept batches, and exactly 3 × 5000 packets of 1436 bytes.
    assert!(experiment("{ batches = 3, discard = 1 }", 3 * 5000 * 1436).is_ok());
    let e = experiment("{ batch = 3 }", 10_000_000).unwrap_err().to_string();
    assert!(e.contains("batch"), "{e}");
    // A transfer one byte short of 3 × 10 packets cannot give the estimate.
    let e = experiment("{ batch_packets = 10, batches = 3 }", 30 * 1436 - 1).unwrap_err().to_string();
    assert!(e.contains("flows[0].bytes = 43079") && e.contains("at least 43080"), "{e}");
}

/// The simulator, with flow 0's milestones replaced by hand-made ones:
/// seed 1 every batch (taking 2, 4 and 1 s after the discarded one),
/// seed 2 one batch short.
#[derive(Debug)]
struct HandMade;

impl Runner for HandMade {
    fn supports(&self, scenario: &Scenario) -> Result<(), meshbed_sim::backend::Refusal> {
        SimRunner.supports(scenario)
    }
    fn run(&self, scenario: &Scenario) -> Result<SimReport, RunError> {
        let mut r = SimRunner.run(scenario)?;
        let f = &mut r.flows[0];
        f.start_s = 2.0;
        let t = f.transfer.as_mut().expect("a transfer");
        t.batch_bytes = Some(1000);
        t.delivery_milestones_s = match scenario.seed {
            1 => vec![3.0, 5.0, 9.0, 10.0],
            _ => vec![3.0, 5.0, 9.0],
        };
        Ok(r)
    }
}

#[test]
fn the_summary_reports_the_batch_means_estimate_and_the_short_flows() {
    let e = experiment("{ batch_packets = 1, batches = 4, discard = 1 }", 10 * 1436).unwrap();
    let options = RunOptions { runner: Arc::new(HandMade), jobs: 1, ..RunOptions::default() };
    let results = meshbed_experiment::run::run(&e, &options).unwrap();
    let summaries = summarize(&results);
    let m = summaries[0].batch_means.as_ref().expect("batch means on");
    assert_eq!((m.flows, m.short_flows, m.goodput_bps.n), (2, 1, 1), "the short flow is counted, not averaged");
    let goodput_bps = 24_000.0 / 7.0;
    assert!((m.goodput_bps.mean - goodput_bps).abs() < 1e-9, "{}", m.goodput_bps.mean);
    let time_ci_s = T_2 * 1.527_525_2 / 3f64.sqrt();
    assert!((m.batch_ci95_bps - goodput_bps * time_ci_s / (7.0 / 3.0)).abs() < 0.01);
    assert!(m.aggregate_bps.is_some_and(|a| a.n == 1), "only the run whose flows all have an estimate");
    let table = summary_table(&results, &summaries);
    assert!(table.contains("goodput by batch means") && table.contains("1/2"), "{table}");
    let dir = tempfile::tempdir().unwrap();
    write_csv(&results, &summaries, dir.path()).unwrap();
    let mut csv = csv::Reader::from_path(dir.path().join("summary.csv")).unwrap();
    let header = csv.headers().unwrap().clone();
    let row = csv.records().next().unwrap().unwrap();
    let col = |name: &str| &row[header.iter().position(|h| h == name).unwrap_or_else(|| panic!("{name}"))];
    assert_eq!(col("batch_short_flows"), "1");
    assert_eq!(col("batch_flows"), "2");
    assert!((col("batch_goodput_mean_bps").parse::<f64>().unwrap() - goodput_bps).abs() < 1e-6);
    // Without batch means, summary.csv has no batch columns.
    let plain = Experiment::from_toml(
        "duration_s = 1.0\n[topology]\nkind = \"chain\"\nnodes = 2\nspacing_m = 200.0\n[[flows]]\nsrc = 0\ndst = 1\n\
         [experiment]\nname = \"p\"\nrepetitions = 1\n",
        "p.toml",
    )
    .unwrap();
    let results = meshbed_experiment::run::run(&plain, &RunOptions::default()).unwrap();
    write_csv(&results, &summarize(&results), dir.path()).unwrap();
    let text = std::fs::read_to_string(dir.path().join("summary.csv")).unwrap();
    assert!(!text.lines().next().unwrap().contains("batch"), "{text}");
}

#[test]
fn ns2_54g_reaches_250_m_and_not_beyond() {
    let hop = |spacing_m: f64| Scenario {
        radio: RadioConfig::preset("ns2-54g").unwrap(),
        topology: Topology::Chain { nodes: 2, spacing_m },
        routing: Routing::ShortestPath,
        ..Scenario::chain(1, spacing_m, 0.2)
    };
    let r = meshbed_sim::run(&hop(245.0)).unwrap();
    assert!(r.flows[0].received_packets > 100, "{:?}", r.flows[0]);
    assert!(meshbed_sim::run(&hop(255.0)).is_err(), "no link beyond 250 m");
}

#[test]
fn the_seed004_builtins_run_the_papers_setting() {
    for name in ["seed004-chain", "seed004-parallel", "seed004-grid"] {
        let e = builtin::get(name).unwrap();
        let b = e.config.batch_means.expect("batch means on");
        let (batches, discard) = (b.batches, b.discard);
        assert_eq!((batches, discard), (11, 1), "{name}: §IV's 11 batches, the first discarded");
        let protocols = &e.config.sweep.iter().find(|a| a.key == "protocol").unwrap().values;
        assert_eq!(protocols.len(), builtin::seed004::PROTOCOLS.len(), "{name}");
        for p in e.points(name).unwrap() {
            let s = p.scenario.with_random_flows_drawn().unwrap();
            assert_eq!(s.radio, RadioConfig::ns2_54g(), "{name}");
            assert_eq!(s.routing, Routing::olsr(true), "{name}");
            for f in s.flows.iter().map(|f| f.transport().expect("a transfer")) {
                assert_eq!(f.payload_bytes(), 1460, "{name}: 1460 bytes of data per packet");
                assert_eq!(f.batch_packets, Some(b.batch_packets), "{name}");
                assert_eq!(f.amount.bytes(), Some(b.packets() * 1460), "{name}: exactly the packets batch means needs");
            }
        }
    }
    // Two chains 400 m apart: every node out of the other chain's 250 m.
    let e = builtin::get("seed004-parallel").unwrap();
    let s = &e.points("p").unwrap()[0].scenario;
    assert_eq!(s.flows.iter().map(|f| (f.src, f.dst)).collect::<Vec<_>>(), [(0, 5), (6, 11)]);
}
