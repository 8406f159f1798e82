//! Moving nodes in the simulator: a node that walks out of range stops
//! receiving when the link budget says so, a run with movement is a
//! function of its seed, and every mistake in `[mobility]` names its key.

use meshbed_sim::scenario::Scenario;

fn run(s: &Scenario) -> meshbed_sim::SimReport {
    meshbed_sim::run(s).expect("valid scenario")
}

/// Node 1 starts 200 m from node 0 and walks away at 10 m/s from t = 2 s:
/// it leaves the 250 m decode range at 7 s. A 100 packet/s CBR flow gets
/// through until then and not after (static routes: nothing else to try).
#[test]
fn a_node_walking_out_of_range_stops_receiving_when_it_leaves() {
    let text = r#"
        duration_s = 10.0
        [topology]
        kind = "chain"
        nodes = 2
        spacing_m = 200.0
        [[flows]]
        src = 0
        dst = 1
        traffic = "cbr"
        rate_kbps = 400.0
        packet_bytes = 500
        [mobility]
        model = "scripted"
        [[mobility.nodes]]
        node = 1
        waypoints = [[2.0, 2200.0, 0.0, 10.0]]
    "#;
    let s = Scenario::from_toml(text).unwrap();
    let r = run(&s);
    let f = &r.flows[0];
    assert_eq!(f.sent_packets, 1000);
    // 7 s of 100 packets/s, give or take the last retries near the edge.
    assert!((660..=720).contains(&f.received_packets), "{} received", f.received_packets);
    assert!(r.mac_total.drop_retry_limit > 0);
    // Without the walk every packet arrives.
    let mut still = s.clone();
    still.mobility = None;
    assert_eq!(run(&still).flows[0].received_packets, 1000);
}

fn random_waypoint(seed: u64) -> Scenario {
    let text = format!(
        r#"
        seed = {seed}
        duration_s = 20.0
        [topology]
        kind = "random"
        nodes = 30
        width_m = 1000.0
        height_m = 300.0
        [[flows]]
        src = 0
        dst = 1
        traffic = "cbr"
        rate_kbps = 16.0
        packet_bytes = 64
        [mobility]
        model = "random-waypoint"
        min_speed_mps = 1.0
        max_speed_mps = 20.0
        pause_s = 1.0
    "#
    );
    toml::from_str(&text).unwrap()
}

/// Same seed with movement: the same trace; another seed: another one.
#[test]
fn movement_is_a_function_of_the_seed() {
    // Nodes 0 and 1 may start out of each other's reach on some seed, so
    // routes are not required: build the run without check_routes' refusal
    // by picking seeds where they reach (checked below).
    let seeds: Vec<u64> = (1..40).filter(|&s| meshbed_sim::check_routes(&random_waypoint(s)).is_ok()).take(2).collect();
    assert_eq!(seeds.len(), 2, "two seeds with a route at time zero");
    let a = run(&random_waypoint(seeds[0]));
    let b = run(&random_waypoint(seeds[0]));
    assert_eq!(a.trace_hash, b.trace_hash);
    assert_eq!(a.events, b.events);
    let c = run(&random_waypoint(seeds[1]));
    assert_ne!(a.trace_hash, c.trace_hash);
    assert!(a.mac_total.delivered > 0);
}

fn error_of(text: &str) -> String {
    Scenario::from_toml(text).unwrap_err().to_string()
}

#[test]
fn mistakes_in_mobility_name_their_key() {
    let base =
        "duration_s = 5.0\n[topology]\nkind = \"chain\"\nnodes = 3\nspacing_m = 200.0\n[[flows]]\nsrc = 0\ndst = 2\n";
    let e = error_of(&format!(
        "{base}[mobility]\nmodel = \"random-waypoint\"\nwidth_m = 500.0\nheight_m = 500.0\nmin_speed_mps = 0.0\nmax_speed_mps = 5.0\n"
    ));
    assert!(e.contains("mobility.min_speed_mps = 0: expected a speed above 0 m/s"), "{e}");
    let e =
        error_of(&format!("{base}[mobility]\nmodel = \"random-waypoint\"\nmin_speed_mps = 1.0\nmax_speed_mps = 5.0\n"));
    assert!(e.contains("mobility.width_m = (missing)"), "{e}");
    let e = error_of(&format!("{base}[mobility]\nmodel = \"teleport\"\n"));
    assert!(e.contains("teleport") && e.contains("random-waypoint"), "{e}");
    let e =
        error_of(&format!("{base}[mobility]\nmodel = \"scripted\"\n[[mobility.nodes]]\nnode = 7\nwaypoints = []\n"));
    assert!(e.contains("mobility.nodes[0].node = 7: expected a node of the topology (0 to 2)"), "{e}");
    let e = error_of(&format!(
        "{base}[mobility]\nmodel = \"scripted\"\n[[mobility.nodes]]\nnode = 1\nwaypoints = [[5.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 1.0]]\n"
    ));
    assert!(e.contains("mobility.nodes[0].waypoints[1].time"), "{e}");
    let e = error_of(&format!("{base}[mobility]\nmodel = \"ns2\"\nfile = \"/nonexistent/scen.tcl\"\n"));
    assert!(e.contains("mobility.file = /nonexistent/scen.tcl: expected a readable movement file"), "{e}");
    let e = error_of("duration_s = 5.0\n[topology]\nkind = \"random\"\nnodes = 3\nwidth_m = -1.0\nheight_m = 10.0\n");
    assert!(e.contains("topology.width_m = -1"), "{e}");
}

/// `model = "walk"`: the node starts where it is told, leaves at `start_s`
/// and reaches its place in the topology at the speed given; a 2-node CBR
/// flow from 300 m away gets nothing until the walker is within the 250 m
/// decode range (from 3 + 50/10 = 8 s), then nearly everything (AODV
/// finds the route when the walker comes in range).
#[test]
fn a_walker_comes_in_range_when_its_walk_says_and_mistakes_name_their_key() {
    let base = "duration_s = 12.0\n[topology]\nkind = \"chain\"\nnodes = 2\nspacing_m = 100.0\n\
        [routing]\nkind = \"aodv\"\n\
        [[flows]]\nsrc = 0\ndst = 1\ntraffic = \"cbr\"\nrate_kbps = 400.0\npacket_bytes = 500\n";
    let walk = |extra: &str| {
        format!("{base}[mobility]\nmodel = \"walk\"\nnode = 1\nfrom_x_m = 300.0\nfrom_y_m = 0.0\n{extra}")
    };
    let s = Scenario::from_toml(&walk("start_s = 3.0\nspeed_mps = 10.0\n")).unwrap();
    let r = run(&s);
    // 100 packets/s from 8 s (in range, 250 m) to 12 s.
    let got = r.flows[0].received_packets;
    // (Plus the packets AODV held for the discovery that succeeded.)
    assert!((300..=470).contains(&got), "{got} received");
    let mut still = s.clone();
    still.mobility = None;
    assert!(run(&still).flows[0].received_packets > 1100, "static at 100 m: all but the first discovery's");
    let e = error_of(&walk("speed_mps = 0.0\n"));
    assert!(e.contains("mobility.speed_mps = 0: expected a speed in m/s, above 0"), "{e}");
    let e = error_of(&walk("speed_mps = 1.0\nstart_s = -1.0\n"));
    assert!(e.contains("mobility.start_s = -1"), "{e}");
    let e = error_of(&format!(
        "{base}[mobility]\nmodel = \"walk\"\nnode = 5\nfrom_x_m = 0.0\nfrom_y_m = 0.0\nspeed_mps = 1.0\n"
    ));
    assert!(e.contains("mobility.node = 5: expected a node of the topology (0 to 1)"), "{e}");
}

/// An ns-2 movement file gives the start positions and the moves.
#[test]
fn an_ns2_movement_file_moves_the_nodes() {
    let dir = std::env::temp_dir().join(format!("meshbed-mobility-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("scen.tcl");
    std::fs::write(
        &file,
        "$node_(0) set X_ 0.0\n$node_(0) set Y_ 0.0\n$node_(1) set X_ 100.0\n$node_(1) set Y_ 0.0\n\
         $ns_ at 1.0 \"$node_(1) setdest 5000.0 0.0 100.0\"\n",
    )
    .unwrap();
    let text = format!(
        "duration_s = 5.0\n[topology]\nkind = \"chain\"\nnodes = 2\nspacing_m = 500.0\n\
         [[flows]]\nsrc = 0\ndst = 1\ntraffic = \"cbr\"\nrate_kbps = 400.0\npacket_bytes = 500\n\
         [mobility]\nmodel = \"ns2\"\nfile = {:?}\n",
        file.display().to_string()
    );
    // The chain puts node 1 out of range (500 m); the file's start (100 m) is used.
    let r = run(&Scenario::from_toml(&text).unwrap());
    // In range from 100 m until 250 m: 1 s + 1.5 s at 100 m/s.
    let got = r.flows[0].received_packets;
    assert!((230..=270).contains(&got), "{got}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Movement files that once spun the simulator forever (a node sent to
/// 1e300 m, at 1e300 m/s, or at 1e300 s) and a truncated `setdest` are
/// refused at load time, within a second, naming the key, file and line.
#[test]
fn movement_files_that_would_hang_the_simulator_are_refused_naming_file_and_line() {
    let dir = std::env::temp_dir().join(format!("meshbed-mobility-hang-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let start = "$node_(0) set X_ 0.0\n$node_(0) set Y_ 0.0\n$node_(1) set X_ 100.0\n$node_(1) set Y_ 0.0\n";
    let cases = [
        ("ns2", format!("{start}$ns_ at 1 \"$node_(1) setdest 300 0 1e300\"\n"), ":5: speed 1e300"),
        ("ns2", format!("{start}$ns_ at 1 \"$node_(1) setdest 1e300 0 10\"\n"), ":5: x 1e300"),
        ("ns2", format!("{start}$ns_ at 1e300 \"$node_(1) setdest 3 0 10\"\n"), ":5: time 1e300"),
        ("ns2", format!("{start}$ns_ at 1 \"$node_(1) setdest 3 0\"\n"), ":5: `$ns_ at 1"),
        ("bonnmotion", "0 0 0\n0 100 0 1e300 200 0\n".to_string(), ":2: time 1e300"),
        ("bonnmotion", "0 0 0\n0 100 0 1 1e300 0\n".to_string(), ":2: x 1e300"),
        ("bonnmotion", "0 0 0\n0 100 0 1 200 0 1 300 0\n".to_string(), ":2: waypoints 2 and 3 both at 1 s"),
    ];
    for (i, (model, movement, says)) in cases.iter().enumerate() {
        let file = dir.join(format!("m{i}"));
        std::fs::write(&file, movement).unwrap();
        let text = format!(
            "duration_s = 5.0\n[topology]\nkind = \"chain\"\nnodes = 2\nspacing_m = 100.0\n\
             [[flows]]\nsrc = 0\ndst = 1\n[mobility]\nmodel = \"{model}\"\nfile = {:?}\n",
            file.display().to_string()
        );
        let t0 = std::time::Instant::now();
        let e = error_of(&text);
        assert!(t0.elapsed() < std::time::Duration::from_secs(1), "{model} case {i}: refused late");
        assert!(e.contains("mobility.file") && e.contains(&format!("m{i}{says}")), "{model} case {i}: {e}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every shipped scenario example loads and runs (its first five seconds).
#[test]
fn the_example_files_load_and_run() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut names: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    names.sort();
    assert!(names.len() >= 6, "{names:?}");
    for path in names {
        let name = path.display();
        let mut s = Scenario::from_file(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        // chain.toml is the static first file (README); the others show movement.
        let first_file = path.file_name().is_some_and(|f| f == "chain.toml");
        assert_eq!(s.mobility.is_some(), !first_file, "{name}: every example but chain.toml moves its nodes");
        s.duration_s = s.duration_s.min(5.0);
        if let Some(r) = &mut s.random_flows {
            r.start_window_s = Some([0.0, 1.0]);
        }
        let r = meshbed_sim::run(&s).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(r.flows.len(), s.flow_count(), "{name}");
        assert!(r.events > 1000, "{name}: {} events", r.events);
    }
}
