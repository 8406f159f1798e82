//! Snapshot tests: integer summaries of a handful of fixed scenarios (event
//! count, event-trace hash, and per node the frames sent, received and
//! dropped), compared with `tests/snapshots/runs.txt`.
//!
//! "The same seed reproduces a run bit for bit on any machine" is tested
//! across commits and machines here: only integers are compared (no
//! floating-point formatting), and an unintended change of the radio model,
//! the event ordering or an engine fails loudly, naming the scenario and the
//! first line that differs. After an intended model change, regenerate the
//! file with `MESHBED_UPDATE_SNAPSHOTS=1 cargo test -p meshbed-sim --test
//! snapshot` and say in the commit why the numbers moved; then bump the
//! result store's `MODEL_REVISION` (crates/experiment/tests/model_revision.rs
//! fails until you do), so that stored runs of the old model are not reused.

use meshbed_proto::Protocol;
use meshbed_sim::scenario::{FlowSpec, Scenario, Topology};
use std::fmt::Write;

const SNAPSHOT: &str = "tests/snapshots/runs.txt";

/// The fixed scenarios: UDP and every transport family, chains and a grid
/// with hidden terminals and crossing flows, shadowing drawn from the seed.
fn scenarios() -> Vec<(&'static str, Scenario)> {
    let mut v = vec![("default: saturated UDP, 4-hop chain, 10 s", Scenario::builtin_default())];

    let mut s = Scenario::chain(6, 200.0, 5.0);
    s.seed = 7;
    s.flows[0] = FlowSpec::cbr(0, 6, 800.0, 512);
    v.push(("CBR 800 kb/s 512 B, 6-hop chain, seed 7", s));

    for (name, protocol, hops) in [
        ("atp-adaptive 300 kB, 4 hops", Protocol::AtpAdaptive, 4),
        ("atp-default 300 kB, 2 hops", Protocol::AtpDefault, 2),
        ("tcp-newreno 300 kB, 3 hops", Protocol::TcpNewReno, 3),
        ("tcp-tahoe 300 kB, 1 hop", Protocol::TcpTahoe, 1),
        // The modern TCPs (issue 27): SACK recovery, timestamps, CUBIC
        // with HyStart++.
        ("tcp-sack 300 kB, 2 hops", Protocol::TcpSack, 2),
        ("tcp-cubic 300 kB, 4 hops", Protocol::TcpCubic, 4),
    ] {
        let mut s = Scenario::chain(hops, 200.0, 30.0);
        s.flows = vec![FlowSpec::transfer(0, hops, protocol, 300_000)];
        v.push((name, s));
    }

    // A 3×3 grid, 200 m apart, with shadowing: two crossing transfers and a
    // CBR UDP flow, so hidden terminals, capture and seed-drawn links
    // all take part.
    let mut s = Scenario::chain(2, 200.0, 8.0);
    s.seed = 3;
    s.radio.shadowing_sigma_db = 4.0;
    s.topology = Topology::Grid { rows: 3, cols: 3, spacing_m: 200.0 };
    s.flows = vec![
        FlowSpec::transfer(0, 8, Protocol::AtpAggressive, 200_000),
        FlowSpec::transfer(2, 6, Protocol::TcpReno, 200_000),
        FlowSpec::cbr(3, 5, 1000.0, 1500),
    ];
    v.push(("3x3 grid, shadowing 4 dB, seed 3: ATP + TCP crossing, UDP", s));
    v.extend(cross_layer());
    v
}

/// Routing engines, moving nodes, route notices, MTL's path information and
/// echo traffic: written as scenario files, the interface users write, so
/// that they read the same whatever the structs behind them become.
fn cross_layer() -> Vec<(&'static str, Scenario)> {
    let chain = |nodes: u32| format!("[topology]\nkind = \"chain\"\nnodes = {nodes}\nspacing_m = 200.0\n");
    let files: Vec<(&'static str, String)> = vec![
        (
            "aodv (signal filter -80 dBm), 30 nodes random waypoint 1-5 m/s, tcp-newreno 1 MB, seed 2",
            "seed = 2\nduration_s = 40.0\n[topology]\nkind = \"random\"\nnodes = 30\nwidth_m = 800.0\nheight_m = 300.0\n\
             [routing]\nkind = \"aodv\"\nss_threshold_dbm = -80.0\n\
             [[flows]]\nsrc = 0\ndst = 1\nprotocol = \"tcp-newreno\"\nbytes = 1_000_000\nstart_s = 1.0\n\
             [mobility]\nmodel = \"random-waypoint\"\nmin_speed_mps = 1.0\nmax_speed_mps = 5.0\npause_s = 10.0\n"
                .into(),
        ),
        (
            "dsr, 3-hop chain, tcp-reno 300 kB and atp-default 300 kB back",
            format!(
                "seed = 5\nduration_s = 30.0\n{}[routing]\nkind = \"dsr\"\n\
                 [[flows]]\nsrc = 0\ndst = 3\nprotocol = \"tcp-reno\"\nbytes = 300_000\nstart_s = 1.0\n\
                 [[flows]]\nsrc = 3\ndst = 0\nprotocol = \"atp-default\"\nbytes = 300_000\nstart_s = 1.5\n",
                chain(4)
            ),
        ),
        (
            "olsr-etx, 4-hop chain: mtl 300 kB after convergence",
            format!(
                "seed = 3\nduration_s = 40.0\n{}[routing]\nkind = \"olsr\"\nmetric = \"etx\"\n\
                 [[flows]]\nsrc = 0\ndst = 4\nprotocol = \"mtl\"\nbytes = 300_000\nstart_s = 12.0\n",
                chain(5)
            ),
        ),
        (
            "olsr hop count, relay 1 walks away at 50 m/s: tcp-newreno-elfn and atp-adaptive",
            "seed = 4\nduration_s = 40.0\n[topology]\nkind = \"explicit\"\nnodes = [\n\
             { x_m = 0.0, y_m = 0.0 }, { x_m = 150.0, y_m = 40.0 }, { x_m = 300.0, y_m = 0.0 }, { x_m = 150.0, y_m = -40.0 }]\n\
             [routing]\nkind = \"olsr\"\n\
             [[flows]]\nsrc = 0\ndst = 2\nprotocol = \"tcp-newreno-elfn\"\nbytes = 2_000_000\nstart_s = 15.0\n\
             [[flows]]\nsrc = 2\ndst = 0\nprotocol = \"atp-adaptive\"\nbytes = 2_000_000\nstart_s = 15.5\n\
             [mobility]\nmodel = \"scripted\"\n[[mobility.nodes]]\nnode = 1\nwaypoints = [[16.0, 150.0, 3000.0, 50.0]]\n\
             [[mobility.nodes]]\nnode = 3\nwaypoints = [[25.0, 150.0, -3000.0, 50.0]]\n"
                .into(),
        ),
        (
            "aodv, client walking away along a 3-relay chain at 10 m/s: tcp-newreno-paced for 60 s",
            "seed = 1\nduration_s = 60.0\n[topology]\nkind = \"explicit\"\nnodes = [\n\
             { x_m = 0.0, y_m = 0.0 }, { x_m = 200.0, y_m = 0.0 }, { x_m = 400.0, y_m = 0.0 }, { x_m = 600.0, y_m = 0.0 },\n\
             { x_m = 10.0, y_m = 20.0 }]\n[routing]\nkind = \"aodv\"\nss_threshold_dbm = -80.0\n\
             [[flows]]\nsrc = 4\ndst = 0\nprotocol = \"tcp-newreno-paced\"\nstop_s = 58.0\nstart_s = 1.0\n\
             [mobility]\nmodel = \"scripted\"\n[[mobility.nodes]]\nnode = 4\nwaypoints = [[2.0, 700.0, 20.0, 10.0]]\n"
                .into(),
        ),
        (
            // Both flows hold more than a sender's window (4 MiB): the
            // simulator writes their data as the window frees.
            "atp-adaptive for 20 s over 1 hop and atp-default for 20 s over 3 hops, beside each other",
            format!(
                "seed = 8\nduration_s = 22.0\n{}[[flows]]\nsrc = 0\ndst = 1\nprotocol = \"atp-adaptive\"\nstop_s = 21.0\nstart_s = 1.0\n\
                 [[flows]]\nsrc = 3\ndst = 0\nprotocol = \"atp-default\"\nstop_s = 21.0\nstart_s = 1.0\n",
                chain(4)
            ),
        ),
        (
            // Seed 004's radio: interference only from what is sensed
            // (ns-2's rule, model revision 2026-12-04.2); a 200 m chain
            // of 8 nodes has senders beyond the 550 m it cuts at.
            "ns2-54g, 7-hop chain: tcp-newreno 2 MB",
            format!(
                "seed = 9\nduration_s = 10.0\n[radio]\npreset = \"ns2-54g\"\n{}\
                 [[flows]]\nsrc = 0\ndst = 7\nprotocol = \"tcp-newreno\"\nbytes = 2_000_000\nstart_s = 1.0\n",
                chain(8)
            ),
        ),
        (
            "echo 1052 B over a 3-hop chain, shortest path, 10 s",
            format!(
                "seed = 6\nduration_s = 10.0\n{}[[flows]]\nsrc = 0\ndst = 3\ntraffic = \"echo\"\npacket_bytes = 1052\n",
                chain(4)
            ),
        ),
    ];
    let mut v: Vec<(&'static str, Scenario)> = files
        .into_iter()
        .map(|(name, text)| (name, Scenario::from_toml(&text).unwrap_or_else(|e| panic!("{name}: {e}"))))
        .collect();
    // ns-2 movement, read from the shipped example and its .tcl file.
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/ns2-movement.toml");
    let s = Scenario::from_file(&example).unwrap_or_else(|e| panic!("{}: {e}", example.display()));
    v.push(("examples/ns2-movement.toml: 3 nodes from an ns-2 file, CBR 200 kb/s", s));
    v
}

/// One scenario's integers, one line each.
fn summarise(name: &str, s: &Scenario) -> String {
    let r = meshbed_sim::run(s).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut out = format!("== {name}\nevents {}\ntrace_hash {}\n", r.events, r.trace_hash_text());
    for (i, f) in r.flows.iter().enumerate() {
        writeln!(
            out,
            "flow {i}: sent {} received {} bytes_delivered {} completed {} retransmissions {}",
            f.sent_packets,
            f.received_packets,
            f.bytes_delivered,
            f.completed(),
            f.retransmissions()
        )
        .unwrap();
    }
    for (n, (c, net)) in r.mac_per_node.iter().zip(&r.net_per_node).enumerate() {
        writeln!(
            out,
            "node {n}: data_tx {} acked {} delivered {} drop_queue {} drop_retry {} rx_collision {} forwarded {}",
            c.data_tx_attempts,
            c.acked,
            c.delivered,
            c.drop_queue_overflow,
            c.drop_retry_limit,
            c.rx_collision_or_corruption,
            net.forwarded
        )
        .unwrap();
    }
    out
}

#[test]
fn fixed_scenarios_reproduce_their_snapshot_bit_for_bit() {
    let got: String = scenarios().iter().map(|(name, s)| summarise(name, s)).collect();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(SNAPSHOT);
    if std::env::var_os("MESHBED_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, &got).expect("write the snapshot");
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (generate it with MESHBED_UPDATE_SNAPSHOTS=1)", path.display()));
    let mut scenario = "";
    for (k, (g, w)) in got.lines().zip(want.lines()).enumerate() {
        if w.starts_with("== ") {
            scenario = w;
        }
        assert_eq!(g, w, "{SNAPSHOT} line {}: scenario {scenario} changed", k + 1);
    }
    assert_eq!(got.lines().count(), want.lines().count(), "{SNAPSHOT}: a different number of lines");
}

/// The snapshot covers work: every scenario moved data, and the run is a
/// function of the seed (another seed gives another trace).
#[test]
fn snapshot_scenarios_move_data_and_depend_on_their_seed() {
    for (name, s) in scenarios().into_iter().take(3) {
        let a = meshbed_sim::run(&s).unwrap();
        assert!(a.flows.iter().all(|f| f.bytes_delivered > 0), "{name}: a flow delivered nothing");
        let mut other = s.clone();
        other.seed += 1;
        let b = meshbed_sim::run(&other).unwrap();
        assert_ne!(a.trace_hash, b.trace_hash, "{name}: seed {} and {} gave the same trace", s.seed, other.seed);
    }
}
