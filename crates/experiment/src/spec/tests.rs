use super::*;

const BASE: &str = r#"
duration_s = 30.0
[topology]
kind = "chain"
nodes = 4
spacing_m = 200.0
[[flows]]
src = 0
dst = 3
protocol = "atp-default"
bytes = 100000
"#;

fn with(exp: &str) -> Result<Experiment, ExperimentError> {
    Experiment::from_toml(&format!("{BASE}{exp}"), "e.toml")
}

#[test]
fn a_protocol_point_keeps_only_its_own_family_settings() {
    let text = format!(
        "{BASE}[flows.atp]\nbeta = 0.75\n[flows.tcp]\nmin_rto_s = 1.0\n\
         [random_flows]\ncount = 2\n[random_flows.flow]\nprotocol = \"atp-default\"\nbytes = 1000\n[random_flows.flow.atp]\nbeta = 0.75\n\
         [experiment]\nname = \"t\"\n[[experiment.sweep]]\nkey = \"protocol\"\nvalues = [\"atp-default\", \"tcp-newreno\"]\n"
    );
    // The base itself is not a valid scenario (a TCP table on an ATP
    // flow), but every point is.
    let pts = Experiment::from_toml(&text, "e.toml").unwrap().points("e.toml").unwrap();
    let atp = &pts[0].scenario;
    let t = atp.flows[0].transport().unwrap();
    assert_eq!(t.atp().and_then(|a| a.beta), Some(0.75));
    assert!(t.tcp().is_none());
    let tcp = &pts[1].scenario;
    let t = tcp.flows[0].transport().unwrap();
    assert!(t.atp().is_none());
    assert_eq!(t.tcp().and_then(|t| t.min_rto_s), Some(1.0));
    let template = &tcp.random_flows.as_ref().unwrap().flow;
    assert_eq!(template.get("protocol").and_then(|p| p.as_str()), Some("tcp-newreno"));
    assert!(!template.contains_key("atp"));
}

#[test]
fn an_mtl_point_keeps_its_mtl_table_and_a_tcp_point_its_tcp_table() {
    let text = format!(
        "{}[flows.tcp]\nmin_rto_s = 1.0\n[flows.mtl]\nalpha = 0.5\n[routing]\nkind = \"olsr\"\nmetric = \"etx\"\n\
         [experiment]\nname = \"t\"\n[[experiment.sweep]]\nkey = \"protocol\"\nvalues = [\"tcp-newreno\", \"mtl\"]\n",
        BASE.replace("atp-default", "tcp-newreno")
    );
    let pts = Experiment::from_toml(&text, "e.toml").unwrap().points("e.toml").unwrap();
    let t = pts[0].scenario.flows[0].transport().unwrap();
    assert_eq!((t.tcp().and_then(|t| t.min_rto_s), t.mtl()), (Some(1.0), None));
    let m = pts[1].scenario.flows[0].transport().unwrap();
    assert_eq!((m.tcp(), m.mtl().and_then(|m| m.alpha)), (None, Some(0.5)));
}

#[test]
fn a_kernel_tcp_point_drops_the_engines_tables_and_an_engine_point_the_congestion_control() {
    let text = format!(
        "{BASE}congestion_control = \"reno\"\n[flows.tcp]\nmin_rto_s = 1.0\n\
         [experiment]\nname = \"t\"\n[[experiment.sweep]]\nkey = \"protocol\"\nvalues = [\"tcp-newreno\", \"kernel-tcp\"]\n"
    );
    let pts = Experiment::from_toml(&text, "e.toml").unwrap().points("e.toml").unwrap();
    let t = pts[0].scenario.flows[0].transport().unwrap();
    assert_eq!(t.tcp().and_then(|t| t.min_rto_s), Some(1.0));
    let k = pts[1].scenario.flows[0].kernel_tcp().unwrap();
    assert_eq!((k.congestion_control.as_str(), k.amount.bytes()), ("reno", Some(100_000)));
    assert_eq!(pts[1].label(), "protocol=kernel-tcp");
}

#[test]
fn sweep_is_the_cartesian_product_last_axis_fastest() {
    let e = with(
        "[experiment]\nname = \"t\"\nrepetitions = 2\n[[experiment.sweep]]\nkey = \"hops\"\nvalues = [1, 2]\n[[experiment.sweep]]\nkey = \"protocol\"\nvalues = [\"atp-default\", \"tcp-tahoe\", \"tcp-reno\"]\n",
    )
    .unwrap();
    let pts = e.points("e.toml").unwrap();
    assert_eq!(pts.len(), 6);
    assert_eq!(pts[0].label(), "hops=1 protocol=atp-default");
    assert_eq!(pts[5].label(), "hops=2 protocol=tcp-reno");
    // `hops` resizes the chain and moves the flow's far end with it.
    assert_eq!(pts[4].scenario.node_count(), 3);
    assert_eq!(pts[4].scenario.flows[0].dst, 2);
    assert_eq!(pts[4].scenario.flows[0].protocol(), Some(meshbed_proto::Protocol::TcpTahoe));
}

#[test]
fn dotted_paths_and_flow_count() {
    let e = with(
        "[experiment]\nname = \"t\"\n[[experiment.sweep]]\nkey = \"flow_count\"\nvalues = [3]\n[[experiment.sweep]]\nkey = \"flows[*].atp.kappa\"\nvalues = [0.5]\n[[experiment.sweep]]\nkey = \"radio.mac.short_retry_limit\"\nvalues = [0]\n[[experiment.sweep]]\nkey = \"flows[2].start_s\"\nvalues = [4.0]\n",
    )
    .unwrap();
    let p = &e.points("e.toml").unwrap()[0];
    assert_eq!(p.scenario.flows.len(), 3);
    assert!(p.scenario.flows.iter().all(|f| f.transport().and_then(|t| t.atp()).and_then(|a| a.kappa) == Some(0.5)));
    assert_eq!(p.scenario.radio.mac.short_retry_limit, 0);
    assert_eq!(p.scenario.flows[2].start_s, 4.0);
    assert_eq!(p.scenario.flows[0].start_s, 0.0);
}

#[test]
fn mistakes_name_the_file_the_key_and_the_point() {
    let e = with("").unwrap_err().to_string();
    assert!(e.contains("e.toml") && e.contains("experiment") && e.contains("missing"), "{e}");
    let e = with("[experiment]\nname = \"t\"\nrepetitions = 0\n").unwrap_err().to_string();
    assert!(e.contains("experiment.repetitions = 0"), "{e}");
    let e = with("[experiment]\nname = \"t\"\n[[experiment.sweep]]\nkey = \"protocol\"\nvalues = [\"tcp-vegas\"]\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("protocol=tcp-vegas") && e.contains("flows[0].protocol"), "{e}");
    let e = with("[experiment]\nname = \"t\"\n[[experiment.sweep]]\nkey = \"flows[5].start_s\"\nvalues = [1.0]\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("experiment.sweep[0]") && e.contains("below 1"), "{e}");
    let e = with("[experiment]\nname = \"t\"\nx_axis = \"hops\"\n").unwrap_err().to_string();
    assert!(e.contains("experiment.x_axis = hops"), "{e}");
    let e = with("[experiment]\nname = \"t\"\ncolour = 1\n").unwrap_err().to_string();
    assert!(e.contains("colour"), "{e}");
}

#[test]
fn round_trips_through_toml() {
    let e = with("[experiment]\nname = \"t\"\n[[experiment.sweep]]\nkey = \"hops\"\nvalues = [1, 2]\n").unwrap();
    let again = Experiment::from_toml(&e.to_toml(), "again.toml").unwrap();
    assert_eq!(again.config, e.config);
    assert_eq!(again.points("x").unwrap().len(), 2);
}

fn axis(key: &str, values: impl Iterator<Item = String>) -> String {
    format!("[[experiment.sweep]]\nkey = \"{key}\"\nvalues = [{}]\n", values.collect::<Vec<_>>().join(", "))
}

#[test]
fn huge_sweeps_are_refused_before_anything_is_built() {
    let e =
        with(&format!("[experiment]\nname = \"t\"\n{}", axis("flow_count", ["4000000000".to_string()].into_iter())))
            .unwrap_err()
            .to_string();
    assert!(e.contains("flow_count = 4000000000: expected a number of flows from 1 to 1000"), "{e}");
    // 3 axes × 2000 values: 8e9 points.
    let axes: String = ["radio.mac.short_retry_limit", "radio.mac.long_retry_limit", "radio.mac.queue_packets"]
        .iter()
        .map(|k| axis(k, (1..=2000).map(|v| v.to_string())))
        .collect();
    let e = with(&format!("[experiment]\nname = \"t\"\n{axes}")).unwrap_err().to_string();
    assert!(e.contains("experiment.sweep = 2000 × 2000 × 2000 values = 8000000000 points"), "{e}");
    assert!(e.contains(&format!("at most {MAX_POINTS} points")), "{e}");
    let e = with(&format!("[experiment]\nname = \"t\"\n{}", axis("hops", ["20000".to_string()].into_iter())))
        .unwrap_err()
        .to_string();
    assert!(e.contains("hops = 20000: expected a chain length from 1 to 9999 hops"), "{e}");
}

#[test]
fn more_runs_or_memory_than_the_bounds_asks_for_force() {
    // 2001 points × 10 repetitions: parsed (too many to check at once), then refused without --force.
    let e = with(&format!(
        "[experiment]\nname = \"t\"\n{}",
        axis("flows[0].start_s", (0..=2000).map(|v| format!("{:?}", v as f64 / 100.0)))
    ))
    .unwrap();
    let err = e.plan("e.toml", 10, 1, false).unwrap_err().to_string();
    assert!(err.contains("2001 points × 10 repetitions = 20010 runs") && err.contains("--force"), "{err}");
    assert!(e.plan("e.toml", 9, 1, false).is_ok());
    assert_eq!(e.plan("e.toml", 10, 1, true).unwrap().runs, 20_010);
    // Memory: a simulated sender holds at most its 4 MiB window of its
    // data, so two senders of 2 GiB each are 8 MiB, not 4 GiB (issue 28).
    let big = BASE
        .replace("bytes = 100000", &format!("bytes = {}", 1u64 << 31))
        .replace("[[flows]]", "[[flows]]\nsrc = 0\ndst = 3\nprotocol = \"tcp-reno\"\nbytes = 2147483648\n[[flows]]");
    let e = Experiment::from_toml(&format!("{big}[experiment]\nname = \"t\"\n"), "e.toml").unwrap();
    let memory = e.plan("e.toml", 2, 2, false).unwrap().memory_bytes;
    assert!((2 * (8 << 20)..1 << 30).contains(&memory), "{memory}");
    // A thousand such senders, two runs at once, are about 8 GiB: --force.
    let flow = "[[flows]]\nsrc = 0\ndst = 3\nprotocol = \"tcp-reno\"\nbytes = 8388608\n";
    let many = BASE.replace("[[flows]]", &format!("{}[[flows]]", flow.repeat(999)));
    let e = Experiment::from_toml(&format!("{many}[experiment]\nname = \"t\"\n"), "e.toml").unwrap();
    let err = e.plan("e.toml", 2, 2, false).unwrap_err().to_string();
    assert!(err.contains("GiB of memory") && err.contains("--force"), "{err}");
    assert!(e.plan("e.toml", 2, 2, true).unwrap().memory_bytes >= 2 * 999 * (4 << 20));
    assert!(e.plan("e.toml", 2, 1, false).is_ok(), "one run at a time: about 4 GB, under the bound");
}

#[test]
fn a_sweep_point_error_names_file_point_and_key_once() {
    let e = with(&format!(
        "[experiment]\nname = \"t\"\n{}",
        axis("flows[*].atp.epoch_s", ["1e-12".to_string()].into_iter())
    ))
    .unwrap_err();
    let text = format!("{:#}", anyhow::Error::from(e));
    assert!(text.starts_with("e.toml: sweep point `flows[*].atp.epoch_s="), "{text}");
    assert!(text.contains("`: flows[0].atp.epoch_s = 1e-12: expected an epoch in seconds from 0.001 to 60"), "{text}");
    assert!(!text.contains(": :") && text.matches("expected").count() == 1, "{text}");
    // A point whose flow has no route is refused like a scenario.
    let e = with(&format!(
        "[experiment]\nname = \"t\"\n{}",
        axis("topology.spacing_m", ["200.0".to_string(), "5000.0".to_string()].into_iter())
    ))
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("sweep point `topology.spacing_m=5000.0`: flows[0].dst = 3: expected a node with a route"),
        "{e}"
    );
}

/// Found by the experiment_toml fuzz target: a `hops` sweep over a chain
/// whose `nodes` is the most negative integer overflowed (a panic in a
/// debug build) instead of being refused with the key.
#[test]
fn a_hops_sweep_over_a_chain_of_no_nodes_is_refused_by_name() {
    for nodes in ["-9223372036854775808", "0", "-1"] {
        let text = BASE.replace("nodes = 4", &format!("nodes = {nodes}"))
            + "[experiment]\nname = \"t\"\n[[experiment.sweep]]\nkey = \"hops\"\nvalues = [2]\n";
        let e = Experiment::from_toml(&text, "e.toml").unwrap_err().to_string();
        assert!(e.contains("hops") && e.contains("topology.nodes of at least 1"), "{nodes}: {e}");
    }
}
