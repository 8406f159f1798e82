use super::*;
use meshbed_proto::Protocol;
use std::path::Path;

fn err_of(text: &str) -> String {
    Scenario::from_toml(text).unwrap_err().in_file("s.toml").to_string()
}

#[test]
fn a_transport_that_needs_path_info_needs_olsr_with_etx() {
    let file = |routing: &str, protocol: &str| {
        format!("duration_s = 2\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200\n{routing}[[flows]]\nsrc = 0\ndst = 2\nprotocol = \"{protocol}\"\nbytes = 1000\n")
    };
    assert!(needs_path_info(Protocol::Mtl));
    assert!(Protocol::ALL.iter().all(|&p| needs_path_info(p) == (p == Protocol::Mtl)));
    let e = err_of(&file("", "mtl"));
    assert!(
        e.contains("routing.kind = \"shortest-path\"") && e.contains("expected \"olsr\" with metric = \"etx\""),
        "{e}"
    );
    assert!(e.contains("flows[0].protocol = \"mtl\""), "{e}");
    let e = err_of(&file("[routing]\nkind = \"aodv\"\n", "mtl"));
    assert!(e.contains("routing.kind = \"aodv\""), "{e}");
    let e = err_of(&file("[routing]\nkind = \"olsr\"\n", "mtl"));
    assert!(e.contains("routing.metric = \"hop-count\"") && e.contains("expected \"etx\""), "{e}");
    // With OLSR-ETX the routing check passes (what follows is the
    // protocol's own); other transports run over any routing.
    assert!(Scenario::from_toml(&file("[routing]\nkind = \"olsr\"\nmetric = \"etx\"\n", "mtl")).is_ok());
    for routing in ["", "[routing]\nkind = \"olsr\"\n", "[routing]\nkind = \"aodv\"\n"] {
        assert!(Scenario::from_toml(&file(routing, "tcp-newreno")).is_ok(), "{routing}");
    }
}

#[test]
fn minimal_file_parses_with_defaults() {
    let s = Scenario::from_toml(
        "duration_s = 2\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200\n[[flows]]\nsrc = 0\ndst = 2\n",
    )
    .unwrap();
    assert_eq!(s.seed, 1);
    assert_eq!(s.flows[0].packet_bytes(), 1500);
    assert_eq!(s.node_radios()[2].x_m, 400.0);
}

#[test]
fn mistakes_name_key_value_and_expectation() {
    let base = "duration_s = 2\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200\n";
    let e = err_of(&format!("{base}[[flows]]\nsrc = 0\ndst = 7\n"));
    assert!(e.contains("s.toml") && e.contains("flows[0].dst = 7") && e.contains("below 3"), "{e}");
    let e = err_of(&format!("{base}[radio]\ndata_rate_kbps = 23000\n"));
    assert!(e.contains("radio.data_rate_kbps = 23000") && e.contains("24000"), "{e}");
    let e = err_of(&format!("{base}[radio]\nstandard = \"802.11n\"\n"));
    assert!(e.contains("radio.standard = \"802.11n\": expected one of `802.11a`"), "{e}");
    // A value of the wrong form anywhere in [radio] is named by its own key
    // and value, never as the whole table (found by the scenario_toml fuzz
    // target: `radio = [radio] standard = … : expected …`).
    for (kv, says) in [
        ("[radio]\nstandard = \"802.11a802.11a\"", "radio.standard = \"802.11a802.11a\": expected one of"),
        ("[radio.mac]\nqueue_packets = -1", "radio.mac.queue_packets = -1: expected u32"),
        ("[radio.propagation]\nmodel = \"nope\"", "radio.propagation.model = \"nope\": expected one of `friis`"),
        ("[radio]\nbasic_rates_kbps = [6000, -2]", "radio.basic_rates_kbps[1] = -2: expected u32"),
    ] {
        let e = err_of(&format!("{base}{kv}\n"));
        assert!(e.contains(says) && !e.contains("radio = "), "{kv}: {e}");
    }
    let e = err_of(&format!("{base}[[flows]]\nsrc = 0\ndst = 2\ntraffic = \"cbr\"\n"));
    assert!(e.contains("flows[0].rate_kbps") && e.contains("missing"), "{e}");
    let e = err_of(&format!("{base}colour = 3\n"));
    assert!(e.contains("colour"), "{e}");
    // A key that is not a bare key is quoted, the empty one too (found by
    // the scenario_toml fuzz target: `: unknown key`).
    for (key, path) in [("\"\"", "\"\""), ("\"a b\"", "\"a b\""), ("\"q\\\"\"", "\"q\\\"\"")] {
        let e = err_of(&format!("{key} = 1\n{base}"));
        assert!(e.contains(&format!(": {path}: unknown key; expected seed")), "{key}: {e}");
        let e = err_of(&format!("{base}[radio]\n{key} = 1\n"));
        assert!(e.contains(&format!("radio.{path}: unknown key")), "{key}: {e}");
    }
    let e = err_of("duration_s = -1\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200\n");
    assert!(e.contains("duration_s = -1"), "{e}");
    let e = err_of("duration_s = 1\n[topology]\nkind = \"ring\"\n");
    assert!(e.contains("ring"), "{e}");
}

const CHAIN: &str = "duration_s = 2\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200\n";

fn chain_with(flow: &str) -> String {
    format!("{CHAIN}[[flows]]\nsrc = 0\ndst = 2\n{flow}")
}

#[test]
fn a_wrong_value_in_a_tagged_table_names_its_key() {
    let e = err_of("duration_s = 2\n[topology]\nkind = \"chain\"\nnodes = \"three\"\nspacing_m = 200\n");
    assert!(e.contains("topology.nodes = \"three\": expected a whole number of nodes"), "{e}");
    let e = err_of(&format!("{CHAIN}[routing]\nkind = \"static\"\npaths = 5\n"));
    assert!(e.contains("routing.paths = 5: expected"), "{e}");
    let e = err_of("duration_s = 2\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200\nrows = 2\n");
    assert!(e.contains("topology.rows: unknown key"), "{e}");
    // The printed default still reads back the same.
    let s = Scenario::builtin_default();
    assert_eq!(Scenario::from_toml(&toml::to_string(&s).unwrap()).unwrap(), s);
}

#[test]
fn errors_without_a_file_have_no_empty_prefix_and_protocols_are_listed_once() {
    let e = Scenario::from_toml(&chain_with("protocol = \"tcp-vegas\"\nbytes = 10\n")).unwrap_err().to_string();
    assert!(e.starts_with("flows[0].protocol = \"tcp-vegas\": expected one of atp-default,"), "{e}");
    assert_eq!(e.matches("expected").count(), 1, "{e}");
}

#[test]
fn grid_size_overflow_is_refused_not_wrapped() {
    let e = err_of("duration_s = 2\n[topology]\nkind = \"grid\"\nrows = 2147483649\ncols = 2\nspacing_m = 200\n");
    assert!(e.contains("topology.rows = 2147483649 (cols = 2, 4294967298 nodes)") && e.contains("10000"), "{e}");
}

/// Beyond 2000 nodes the two features that keep a table per pair of nodes
/// are refused by their keys; the same network without them is accepted.
#[test]
fn pair_tables_are_refused_beyond_their_node_limit() {
    let grid = |rows: u32, extra: &str| {
        format!("duration_s = 1\n{extra}[topology]\nkind = \"grid\"\nrows = {rows}\ncols = 50\nspacing_m = 200\n")
    };
    let shadowed = "[radio]\nshadowing_sigma_db = 4\n";
    assert!(Scenario::from_toml(&grid(40, shadowed)).is_ok(), "2000 nodes with shadowing");
    let e = err_of(&grid(41, shadowed));
    assert!(e.contains("radio.shadowing_sigma_db = 4: expected 0 with 2050 nodes"), "{e}");
    assert!(Scenario::from_toml(&grid(41, "")).is_ok(), "2050 nodes without shadowing");
    let e = err_of(&(grid(41, "") + "[routing]\nkind = \"static\"\npaths = [[0, 1]]\n"));
    assert!(e.contains("routing.kind = \"static\": expected another routing with 2050 nodes"), "{e}");
}

#[test]
fn numeric_bounds_just_inside_pass_just_outside_fail() {
    let ok = |text: &str| Scenario::from_toml(text).map(|_| ()).map_err(|e| e.to_string());
    let fails_on = |text: &str, key: &str| {
        let e = ok(text).unwrap_err();
        assert!(e.starts_with(&format!("{key} = ")), "expected an error on {key}: {e}");
    };
    let with_duration = |d: &str| CHAIN.replace("duration_s = 2", &format!("duration_s = {d}"));
    ok(&with_duration("86400")).unwrap();
    fails_on(&with_duration("86400.001"), "duration_s");
    let chain = |nodes: u32, spacing: &str| {
        format!("duration_s = 1\n[topology]\nkind = \"chain\"\nnodes = {nodes}\nspacing_m = {spacing}\n")
    };
    ok(&chain(MAX_NODES, "200")).unwrap();
    fails_on(&chain(MAX_NODES + 1, "200"), "topology.nodes");
    ok(&chain(3, "10000")).unwrap();
    fails_on(&chain(3, "10000.5"), "topology.spacing_m");
    fails_on(&chain(3, "1e308"), "topology.spacing_m");
    let explicit = |x: &str| {
        format!("duration_s = 1\n[topology]\nkind = \"explicit\"\nnodes = [{{ x_m = 0, y_m = 0 }}, {{ x_m = {x}, y_m = 0 }}]\n")
    };
    ok(&explicit("2e7")).unwrap();
    fails_on(&explicit("2.1e7"), "topology.nodes[1].x_m");
    let radio = |kv: &str| format!("{CHAIN}[radio.mac]\n{kv}\n");
    ok(&radio("queue_packets = 10000")).unwrap();
    fails_on(&radio("queue_packets = 4294967295"), "radio.mac.queue_packets");
    let atp = |epoch: &str| {
        chain_with(&format!("protocol = \"atp-default\"\nbytes = 1000\n[flows.atp]\nepoch_s = {epoch}\n"))
    };
    ok(&atp("0.001")).unwrap();
    fails_on(&atp("0.000999"), "flows[0].atp.epoch_s");
    fails_on(&atp("1e-12"), "flows[0].atp.epoch_s");
    let tcp = |kv: &str| chain_with(&format!("protocol = \"tcp-reno\"\nbytes = 1000\n[flows.tcp]\n{kv}\n"));
    ok(&tcp("max_cwnd_segments = 65535")).unwrap();
    fails_on(&tcp("max_cwnd_segments = 65536"), "flows[0].tcp.max_cwnd_segments");
    fails_on(&tcp("min_rto_s = 1e-9"), "flows[0].tcp.min_rto_s");
    // CBR: up to the source's PHY rate (24 Mbit/s by default).
    let cbr = |rate: &str| chain_with(&format!("traffic = \"cbr\"\nrate_kbps = {rate}\n"));
    ok(&cbr("24000")).unwrap();
    fails_on(&cbr("24000.5"), "flows[0].rate_kbps");
    fails_on(&cbr("1e300"), "flows[0].rate_kbps");
    fails_on(&cbr("1e-300"), "flows[0].rate_kbps");
}

#[test]
fn flows_and_paths_are_bounded_and_senders_hold_a_window() {
    let flows = "[[flows]]\nsrc = 0\ndst = 2\n".repeat(MAX_FLOWS + 1);
    let e = err_of(&format!("{CHAIN}{flows}"));
    assert!(e.contains("flows = (1001 flows): expected at most 1000 flows"), "{e}");
    let e = err_of(&format!("{CHAIN}[routing]\nkind = \"static\"\npaths = [[0, 1, 0]]\n"));
    assert!(e.contains("routing.paths[0][2] = 0") && e.contains("no loops"), "{e}");
    // A flow that runs for a day at 54 Mbit/s has 583 GB to send, and its
    // simulated sender holds 4 MiB of it at a time (issue 28: it once held
    // all of it, and such a flow was refused).
    let day = "duration_s = 86400\n[radio]\ndata_rate_kbps = 54000\n[topology]\nkind = \"chain\"\nnodes = 2\nspacing_m = 20\n[[flows]]\nsrc = 0\ndst = 1\nprotocol = \"atp-default\"\nstop_s = 86400\n";
    let s = Scenario::from_toml(day).unwrap();
    assert_eq!(s.sender_data_bytes(0), 86_400 * 54_000_000 / 8 + 1);
    assert_eq!(s.sender_held_bytes(0), 4 << 20);
    // A small transfer is held whole.
    assert_eq!(
        Scenario::from_toml(&chain_with("protocol = \"atp-default\"\nbytes = 1000\n")).unwrap().sender_held_bytes(0),
        1000
    );
    // Sizes up to 1 TiB, flow by flow however many there are; not above.
    let big = |bytes: u64| {
        chain_with(&format!(
            "protocol = \"atp-default\"\nbytes = {bytes}\n[[flows]]\nsrc = 0\ndst = 2\nprotocol = \"atp-default\"\nbytes = {bytes}\n"
        ))
    };
    let s = Scenario::from_toml(&big(MAX_FLOW_BYTES)).unwrap();
    assert_eq!((s.sender_held_bytes(0), s.sender_held_bytes(1)), (4 << 20, 4 << 20));
    let e = err_of(&big(MAX_FLOW_BYTES + 1));
    assert!(e.contains(&format!("flows[0].bytes = {}: expected a transfer size in bytes", MAX_FLOW_BYTES + 1)), "{e}");
    let e = err_of(&chain_with("protocol = \"atp-default\"\nbytes = 0\n"));
    assert!(e.contains("flows[0].bytes = 0: expected a transfer size in bytes"), "{e}");
}

#[test]
fn only_regular_files_of_bounded_size_are_read() {
    let dir = std::env::temp_dir().join(format!("meshbed-read-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let e = read_input_file(&dir).unwrap_err().to_string();
    assert!(e.contains("a directory"), "{e}");
    let e = read_input_file(Path::new("/dev/zero")).unwrap_err().to_string();
    assert!(e.contains("a device"), "{e}");
    // A FIFO without a writer: refused at once, never opened (opening blocks).
    let fifo = dir.join("fifo");
    let _ = std::fs::remove_file(&fifo);
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().map(|s| s.success()).unwrap_or(false);
    if made {
        let e = read_input_file(&fifo).unwrap_err().to_string();
        assert!(e.contains("a FIFO"), "{e}");
    }
    let big = dir.join("big.toml");
    std::fs::write(&big, vec![b'#'; MAX_FILE_BYTES as usize + 1]).unwrap();
    let e = read_input_file(&big).unwrap_err().to_string();
    assert!(e.contains(&format!("{} bytes; expected a file of at most", MAX_FILE_BYTES + 1)), "{e}");
    let fits = dir.join("fits.toml");
    std::fs::write(&fits, vec![b'#'; MAX_FILE_BYTES as usize]).unwrap();
    assert_eq!(read_input_file(&fits).unwrap().len(), MAX_FILE_BYTES as usize);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_radio_preset_is_a_base_the_table_overrides() {
    let text = |radio: &str| {
        format!("duration_s = 1.0\n[radio]\n{radio}\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200.0\n")
    };
    let s = Scenario::from_toml(&text("preset = \"ns2\"")).unwrap();
    assert_eq!(s.radio, RadioConfig::ns2());
    assert_eq!(s.radio.mac.rts_threshold_bytes, Some(0));
    assert_eq!((s.radio.data_rate_kbps, s.radio.mac.queue_packets), (2_000, 50));
    // A key of the table wins; `mac` is overridden key by key.
    let s = Scenario::from_toml(&text(
        "preset = \"ns2\"\ndata_rate_kbps = 1000\n[radio.mac]\nqueue_packets = 20\n[radio.propagation]\nmodel = \"friis\"",
    ))
    .unwrap();
    assert_eq!(s.radio.data_rate_kbps, 1_000);
    assert_eq!(s.radio.mac.queue_packets, 20);
    assert_eq!(s.radio.mac.rts_threshold_bytes, Some(0), "the rest of the preset's mac stays");
    assert_eq!(s.radio.propagation, meshbed_radio::propagation::Propagation::Friis);
    assert_eq!(s.radio.standard, RadioConfig::ns2().standard);
    let e = Scenario::from_toml(&text("preset = \"ns3\"")).unwrap_err().to_string();
    assert!(e.contains("radio.preset = \"ns3\": expected one of \"ns2\""), "{e}");
    let e = Scenario::from_toml(&text("preset = \"ns2\"\ncolour = 1")).unwrap_err().to_string();
    assert!(e.contains("radio.colour: unknown key; expected standard"), "{e}");
}

#[test]
fn nodes_on_floors_need_the_radio_s_floors_and_each_floor_costs_its_slab() {
    let building = |floors: &str, floor: &str| {
        format!(
            "duration_s = 1\n[radio]\nstandard = \"802.11a\"\ndata_rate_kbps = 6000\ntx_power_dbm = 2\n{floors}\n\
             [radio.propagation]\nmodel = \"log-distance\"\nexponent = 3.3\n\
             [topology]\nkind = \"explicit\"\nnodes = [{{ x_m = 0, y_m = 0 }}, {{ x_m = 3, y_m = 0, floor = {floor} }}]\n"
        )
    };
    let floors = "[radio.floors]\nheight_m = 4\nloss_db = 16";
    let e = err_of(&building("", "1"));
    assert!(e.contains("topology.nodes[1].floor = 1: expected 0, or a building's floors"), "{e}");
    let e = err_of(&building(&floors.replace("height_m = 4", "height_m = 0"), "1"));
    assert!(e.contains("floors.height_m = 0") && e.contains("floor-to-floor height"), "{e}");
    let e = err_of(&building(&floors.replace("loss_db = 16", "loss_db = -3"), "1"));
    assert!(e.contains("floors.loss_db = -3"), "{e}");
    // The same pair on one floor and one floor apart: the slab and the
    // 3-D distance (5 m instead of 3 m) are the only difference.
    let received_dbm = |floor: &str| {
        let s = Scenario::from_toml(&building(floors, floor)).unwrap();
        let b = meshbed_radio::LinkBudget::new(&s.radio, &s.node_radios(), s.seed).unwrap();
        b.mean_rx_dbm(0, 1)
    };
    let (same, above) = (received_dbm("0"), received_dbm("1"));
    let expected_db = 16.0 + 33.0 * (5f64 / 3.0).log10();
    assert!((same - above - expected_db).abs() < 1e-9, "{same} {above}");
    // A scenario file round-trips with its floors.
    let s = Scenario::from_toml(&building(floors, "1")).unwrap();
    assert_eq!(Scenario::from_toml(&toml::to_string(&s).unwrap()).unwrap(), s);
}

#[test]
fn a_threshold_in_the_file_is_the_threshold_used_and_a_range_with_it_is_refused() {
    let text = |radio: &str| {
        format!("duration_s = 1\n[topology]\nkind = \"chain\"\nnodes = 2\nspacing_m = 10\n[radio]\n{radio}\n")
    };
    let resolved = |radio: &str| Scenario::from_toml(&text(radio)).unwrap().radio.resolve().unwrap();
    // Regression: a default range used to come back on reading and
    // override the thresholds a file (or a built-in) gave.
    let r = resolved("rx_sensitivity_dbm = -70.0\ncs_threshold_dbm = -72.0");
    assert_eq!((r.rx_sensitivity_dbm, r.cs_threshold_dbm), (-70.0, -72.0));
    // Neither: the default ranges; a written-out scenario reads back the same.
    let s = Scenario::from_toml(&text("cs_threshold_dbm = -80.0")).unwrap();
    let back = Scenario::from_toml(&toml::to_string(&s).unwrap()).unwrap();
    assert_eq!(back.radio.resolve().unwrap().cs_threshold_dbm, -80.0);
    let r = resolved("");
    let at_250_m = s.radio.tx_power_dbm - s.radio.propagation.loss_db(250.0, s.radio.standard.frequency_hz());
    assert!((r.rx_sensitivity_dbm - at_250_m).abs() < 1e-9);
    // Both for one threshold: refused, naming both.
    let e = err_of(&text("tx_range_m = 200.0\nrx_sensitivity_dbm = -80.0"));
    assert!(e.contains("radio.rx_sensitivity_dbm = -80: expected either radio.tx_range_m or radio.rx_sensitivity_dbm, not both (radio.tx_range_m = 200)"), "{e}");
    // A preset's range gives way to the file's threshold.
    let r = resolved("preset = \"ns2\"\nrx_sensitivity_dbm = -70.0");
    assert_eq!(r.rx_sensitivity_dbm, -70.0);
}

#[test]
fn a_flow_reads_and_writes_the_flat_table_of_its_kind() {
    let flows = [
        "src = 0\ndst = 2\ntraffic = \"cbr\"\nrate_kbps = 64.0\npacket_bytes = 256\nstart_s = 1.0\nstop_s = 5.0\n",
        "src = 0\ndst = 2\ntraffic = \"echo\"\npacket_bytes = 92\necho_timeout_s = 0.5\ntrace = true\n",
        "src = 0\ndst = 2\nprotocol = \"atp-adaptive\"\nbytes = 1000\nbatch_packets = 2\n[flows.atp]\nepoch_s = 0.04\n",
        "src = 2\ndst = 0\nprotocol = \"tcp-reno\"\nstop_s = 5.0\nread_rate_bps = 8000\nreceive_buffer_bytes = 4000\n\
         read_rate_steps = [{ at_s = 2.0, rate_bps = 0 }]\n[flows.tcp]\ndelayed_acks = true\n",
    ];
    let text = |flow: &str| {
        format!("duration_s = 10\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200\n[[flows]]\n{flow}")
    };
    let kinds: Vec<_> = flows.iter().map(|f| Scenario::from_toml(&text(f)).unwrap().flows.remove(0)).collect();
    assert!(
        matches!(kinds[0].kind, FlowKind::Udp(UdpFlow { rate: UdpRate::Cbr { rate_kbps }, .. }) if rate_kbps == 64.0)
    );
    assert!(matches!(&kinds[1].kind, FlowKind::Echo(EchoFlow { timeout_s: Some(_), trace: true, .. })));
    let t = kinds[2].transport().unwrap();
    assert_eq!(
        (t.amount, t.batch_packets, t.atp().and_then(|a| a.epoch_s)),
        (Amount::Bytes(1000), Some(2), Some(0.04))
    );
    let t = kinds[3].transport().unwrap();
    assert_eq!(t.amount, Amount::Until { stop_s: 5.0 });
    assert_eq!(
        t.reader.as_ref().map(|r| (r.rate_bps, r.steps.len(), r.receive_buffer_bytes)),
        Some((8000, 1, Some(4000)))
    );
    for (flow, spec) in flows.iter().zip(&kinds) {
        // Written back as the same flat keys (the defaults spelt out), and read again as the same flow.
        let written = toml::Table::try_from(spec).unwrap();
        let given: toml::Table = toml::from_str(&flow.replace("[flows.", "[")).unwrap();
        for (k, v) in &given {
            let w = &written[k];
            assert!(w == v || w.as_float().is_some_and(|f| v.as_integer() == Some(f as i64)), "{k}: {w} vs {v}");
        }
        assert_eq!(&FlowSpec::deserialize(toml::Value::Table(written)).unwrap(), spec);
    }
    // Serialising keeps the keys experiments sweep (`flows[*].protocol`, `flows[*].atp.epoch_s`).
    let written = toml::Table::try_from(&kinds[2]).unwrap();
    assert_eq!(written["protocol"].as_str(), Some("atp-adaptive"));
    assert_eq!(written["traffic"].as_str(), Some("saturated"));
    assert!(written["atp"].as_table().is_some_and(|a| a.contains_key("epoch_s")));
}

#[test]
fn a_key_of_another_kind_of_flow_in_the_random_flows_template_names_the_template_key() {
    let text = "duration_s = 10\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200\n\
                [random_flows]\ncount = 2\n[random_flows.flow]\ntraffic = \"echo\"\nrate_kbps = 5\n";
    let e = err_of(text);
    assert!(e.contains("random_flows.flow.rate_kbps = 5: expected no rate"), "{e}");
    let e = err_of(&chain_with("protocol = \"tcp-reno\"\nbytes = 1000\n[flows.atp]\nkappa = 0.5\n"));
    assert_eq!(
        e,
        "s.toml: flows[0].atp = (given): expected no [flows.atp] table: tcp-reno takes its settings from [flows.tcp]"
    );
    // MTL's settings are its own table: TCP's keys would be ignored by it.
    let mtl_with = |flow: &str| {
        format!("{CHAIN}[routing]\nkind = \"olsr\"\nmetric = \"etx\"\n[[flows]]\nsrc = 0\ndst = 2\n{flow}")
    };
    let e = err_of(&mtl_with("protocol = \"mtl\"\nbytes = 1000\n[flows.tcp]\ndelayed_acks = true\n"));
    assert!(
        e.contains("flows[0].tcp = (given): expected no [flows.tcp] table: mtl takes its settings from [flows.mtl]"),
        "{e}"
    );
    let e = err_of(&chain_with("protocol = \"tcp-sack\"\nbytes = 1000\n[flows.mtl]\nalpha = 0.5\n"));
    assert!(e.contains("flows[0].mtl = (given): expected no [flows.mtl] table: tcp-sack takes"), "{e}");
    let e = err_of(&mtl_with("protocol = \"mtl\"\nbytes = 1000\n[flows.mtl]\nalpha = 1.0\n"));
    assert!(e.contains("flows[0].mtl.alpha = 1") && e.contains("a weight in [0, 1)"), "{e}");
    let e = err_of(&mtl_with("protocol = \"mtl\"\nbytes = 1000\n[flows.mtl]\nsend_buffer_bytes = 10\n"));
    assert!(e.contains("flows[0].mtl.send_buffer_bytes = 10"), "{e}");
    let e = err_of(&chain_with("traffic = \"cbr\"\nrate_kbps = 10\n[flows.mtl]\nalpha = 0.5\n"));
    assert!(e.contains("flows[0].mtl = (given)"), "{e}");
}

#[test]
fn a_kernel_tcp_flow_takes_bytes_or_stop_s_and_a_congestion_control() {
    let s = Scenario::from_toml(&chain_with("protocol = \"kernel-tcp\"\nbytes = 1000000\n")).unwrap();
    let k = s.flows[0].kernel_tcp().unwrap();
    assert_eq!((k.congestion_control.as_str(), k.amount), ("cubic", Amount::Bytes(1_000_000)));
    assert!(s.flows[0].transport().is_none() && s.flows[0].protocol().is_none() && s.flows[0].traffic().is_none());
    assert!(s.flows[0].needs_route_back());
    let s = Scenario::from_toml(&chain_with(
        "protocol = \"kernel-tcp\"\ncongestion_control = \"bbr\"\nstart_s = 0.5\nstop_s = 1.5\n",
    ))
    .unwrap();
    let f = &s.flows[0];
    let k = f.kernel_tcp().unwrap();
    assert_eq!((k.congestion_control.as_str(), k.amount), ("bbr", Amount::Until { stop_s: 1.5 }));
    assert_eq!((f.stop_s(), f.trace(), s.sender_data_bytes(0)), (Some(1.5), false, 0));
    // Written back with its own keys only, and read again as the same flow.
    let written = toml::Table::try_from(f).unwrap();
    let mut keys: Vec<&str> = written.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(keys, ["congestion_control", "dst", "protocol", "src", "start_s", "stop_s"]);
    assert_eq!(written["protocol"].as_str(), Some("kernel-tcp"));
    assert_eq!(&FlowSpec::deserialize(toml::Value::Table(written)).unwrap(), f);
    // A whole scenario round-trips too.
    assert_eq!(Scenario::from_toml(&toml::to_string(&s).unwrap()).unwrap(), s);
}

#[test]
fn every_key_a_kernel_tcp_flow_does_not_take_is_refused_by_name() {
    let kernel = |extra: &str| chain_with(&format!("protocol = \"kernel-tcp\"\nbytes = 1000\n{extra}"));
    for (extra, key) in [
        ("traffic = \"cbr\"\n", "traffic = \"cbr\""),
        ("traffic = \"saturated\"\n", "traffic = \"saturated\""),
        ("rate_kbps = 100.0\n", "rate_kbps = 100"),
        ("packet_bytes = 1500\n", "packet_bytes = 1500"),
        ("echo_timeout_s = 1.0\n", "echo_timeout_s = 1"),
        ("trace = true\n", "trace = true"),
        ("batch_packets = 10\n", "batch_packets = 10"),
        ("read_rate_bps = 8000\n", "read_rate_bps = 8000"),
        ("read_rate_steps = [{ at_s = 1.0, rate_bps = 0 }]\n", "read_rate_steps = (given)"),
        ("receive_buffer_bytes = 4000\n", "receive_buffer_bytes = 4000"),
        ("[flows.atp]\nkappa = 0.5\n", "atp = (given)"),
        ("[flows.tcp]\nmax_cwnd_segments = 8\n", "tcp = (given)"),
    ] {
        let e = err_of(&kernel(extra));
        assert!(
            e.starts_with(&format!("s.toml: flows[0].{key}: expected nothing on a kernel-tcp flow: ")),
            "{extra}: {e}"
        );
    }
    let e = err_of(&kernel("[flows.tcp]\nmax_cwnd_segments = 8\n"));
    assert!(e.contains("congestion_control"), "{e}");
    // The amount, as for a transport flow.
    let e = err_of(&chain_with("protocol = \"kernel-tcp\"\n"));
    assert!(e.contains("flows[0].bytes = (missing): expected the transfer size in bytes of a kernel-tcp flow"), "{e}");
    let e = err_of(&chain_with("protocol = \"kernel-tcp\"\nbytes = 10\nstop_s = 1.0\n"));
    assert!(e.contains("flows[0].stop_s = 1: expected either bytes or stop_s for a kernel-tcp flow"), "{e}");
    let e = err_of(&chain_with("protocol = \"kernel-tcp\"\nbytes = 0\n"));
    assert!(e.contains("flows[0].bytes = 0: expected a transfer of at least one byte"), "{e}");
    let e = err_of(&chain_with("protocol = \"kernel-tcp\"\nstop_s = 0.0\nstart_s = 0.5\n"));
    assert!(e.contains("flows[0].stop_s = 0: expected a stop time after start_s"), "{e}");
}

#[test]
fn a_congestion_control_is_a_kernel_name_and_only_on_kernel_tcp() {
    for bad in ["", "Cubic", "bbr-2", "abcdefghijklmnop", "cu bic"] {
        let e =
            err_of(&chain_with(&format!("protocol = \"kernel-tcp\"\nbytes = 1000\ncongestion_control = \"{bad}\"\n")));
        assert!(
            e.starts_with(&format!(
                "s.toml: flows[0].congestion_control = \"{bad}\": expected a Linux TCP congestion control name"
            )),
            "{e}"
        );
    }
    let e = err_of(&chain_with("protocol = \"kernel-tcp\"\nbytes = 1000\ncongestion_control = 3\n"));
    assert!(e.contains("congestion_control") && e.contains("string"), "{e}");
    for other in ["", "traffic = \"cbr\"\nrate_kbps = 10.0\n", "protocol = \"tcp-reno\"\nbytes = 1000\n"] {
        let e = err_of(&chain_with(&format!("{other}congestion_control = \"reno\"\n")));
        assert!(
            e.starts_with("s.toml: flows[0].congestion_control = \"reno\": expected nothing: this key belongs to kernel TCP flows"),
            "{other}: {e}"
        );
    }
    // The list of protocols names kernel-tcp too.
    let e = err_of(&chain_with("protocol = \"kernel-tpc\"\nbytes = 10\n"));
    assert!(
        e.contains("flows[0].protocol = \"kernel-tpc\": expected one of atp-default,")
            && e.contains("tcp-bbr, kernel-tcp"),
        "{e}"
    );
}

#[test]
fn the_random_flows_template_takes_kernel_tcp_and_names_its_wrong_keys() {
    let template = |flow: &str| {
        format!("duration_s = 10\n[topology]\nkind = \"chain\"\nnodes = 4\nspacing_m = 200\n[random_flows]\ncount = 3\n[random_flows.flow]\n{flow}")
    };
    let s = Scenario::from_toml(&template("protocol = \"kernel-tcp\"\ncongestion_control = \"reno\"\nbytes = 5000\n"))
        .unwrap();
    let drawn = s.with_random_flows_drawn().unwrap();
    assert_eq!(drawn.flows.len(), 3);
    assert!(drawn.flows.iter().all(|f| f.kernel_tcp().is_some_and(|k| k.congestion_control.as_str() == "reno")));
    let e = err_of(&template("protocol = \"kernel-tcp\"\nbytes = 5000\npacket_bytes = 600\n"));
    assert!(e.contains("random_flows.flow.packet_bytes = 600: expected nothing on a kernel-tcp flow"), "{e}");
    let e = err_of(&template("protocol = \"kernel-tcp\"\nbytes = 5000\ncongestion_control = \"BBR\"\n"));
    assert!(e.contains("random_flows.flow.congestion_control = \"BBR\""), "{e}");
}

/// A misspelt key is reported at its own line and column, by its whole
/// path, with the key it was probably meant to be: in a table read whole
/// (`[topology]`, `[radio.mac]`), in `[[flows]]` entries and their tables,
/// in an explicit node and in `[random_flows.flow]`.
#[test]
fn a_misspelt_key_is_reported_at_its_own_line_and_column() {
    let base = "duration_s = 5\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200\n";
    let flows =
        "[[flows]]\nsrc = 0\ndst = 2\n\n[[flows]]\nsrc = 0\ndst = 2\nprotocol = \"atp-default\"\nbytes = 1000\n";
    let cases: [(String, &str, (usize, usize), &str); 7] = [
        (base.replace("spacing_m", "spacing"), "topology.spacing", (5, 1), "spacing_m"),
        (format!("{base}[radio.mac]\nqueue_packets = 5\n  short_retry = 3\n"), "radio.mac.short_retry", (8, 3), "short_retry_limit"),
        (format!("{base}{flows}start = 1.0\n"), "flows[1].start", (15, 1), "start_s"),
        (format!("{base}{flows}[flows.atp]\nepoch = 0.1\n"), "flows[1].atp.epoch", (16, 1), "epoch_s"),
        // A key of another kind, beside a kind that has no keys of its own.
        (format!("{base}[radio.propagation]\nmodel = \"friis\"\nexponent = 2\n"), "radio.propagation.exponent", (8, 1), ""),
        (
            "duration_s = 5\n[topology]\nkind = \"explicit\"\nnodes = [{ x_m = 0.0, y_m = 0.0 }, { x_m = 9.0, ym = 0.0 }]\n"
                .to_string(),
            "topology.nodes[1].ym",
            (4, 49),
            "y_m",
        ),
        (
            format!("{base}[random_flows]\ncount = 2\n[random_flows.flow]\nprotocol = \"tcp-reno\"\nbytes = 100\nbatch = 3\n"),
            "random_flows.flow.batch",
            (11, 1),
            "batch_packets",
        ),
    ];
    for (text, key, (line, column), meant) in cases {
        let e = Scenario::from_toml(&text).unwrap_err();
        let ScenarioError::UnknownKey { key: k, location: Some(at), .. } = &e else { panic!("{key}: {e}") };
        assert_eq!((k.as_str(), at.line, at.column), (key, line, column), "{text}");
        let shown = e.in_file("s.toml").to_string();
        assert!(shown.starts_with(&format!("s.toml:{line}:{column}: {key}: unknown key")), "{shown}");
        let bad = key.rsplit(['.', ']']).next().unwrap();
        assert!(shown.contains(&format!("{line} | {}", text.lines().nth(line - 1).unwrap())), "{shown}");
        assert!(shown.contains(&format!("| {}{}", " ".repeat(column - 1), "^".repeat(bad.len()))), "{shown}");
        if !meant.is_empty() {
            assert!(shown.contains(&format!("(did you mean `{meant}`?)")), "{shown}");
        }
    }
}
