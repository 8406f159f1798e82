//! Routing and mobility in the emulator, as root: `meshbed routed` (the
//! simulator's AODV and OLSR-ETX engines) in every node, the medium's link
//! feed, a relay that walks out of range while transfers cross it, and MTL
//! taking its path information from the daemon.
//!
//! Root only, like the other emulator tests (`#[ignore]`d with the reason
//! for a developer who is not root; CI runs them).

mod common;

use common::*;
use std::io::Read;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A 4-hop chain 0–1–2–3–4, 200 m apart (802.11a at 24 Mbit/s: a hop
/// reaches about 250 m), and a spare relay, node 5, far away. At `leave_s`
/// relay 2 walks off at 50 m/s (out of its neighbours' range about 3 s
/// later); node 5 has just arrived beside it, at (400, 120), within range
/// of 1 and 3: the route must move from 2 to 5.
fn walkaway_scenario(dir: &Path, routing: &str, leave_s: f64) -> PathBuf {
    let p = dir.join("walkaway.toml");
    // Node 5 sets off 5 s before relay 2 leaves (it needs 4.4 s to arrive),
    // so that the first route can only go through relay 2.
    let arrive_s = (leave_s - 5.0).max(1.0);
    std::fs::write(
        &p,
        format!(
            "seed = 3\nduration_s = 120.0\n[radio]\nstandard = \"802.11a\"\ndata_rate_kbps = 24000\n\
             [topology]\nkind = \"explicit\"\nnodes = [\n  {{ x_m = 0.0, y_m = 0.0 }},\n  {{ x_m = 200.0, y_m = 0.0 }},\n\
               {{ x_m = 400.0, y_m = 0.0 }},\n  {{ x_m = 600.0, y_m = 0.0 }},\n  {{ x_m = 800.0, y_m = 0.0 }},\n\
               {{ x_m = 400.0, y_m = 1000.0 }},\n]\n\
             [routing]\n{routing}\n\
             [mobility]\nmodel = \"scripted\"\n\
             [[mobility.nodes]]\nnode = 5\nwaypoints = [[{arrive_s}, 400.0, 120.0, 200.0]]\n\
             [[mobility.nodes]]\nnode = 2\nwaypoints = [[{leave_s}, 400.0, -1000.0, 50.0]]\n"
        ),
    )
    .unwrap();
    p
}

/// The report of node `node`'s routing daemon, as it stands (SIGUSR1).
fn routed_report(emu: &Emu, node: u32) -> serde_json::Value {
    let path = PathBuf::from(format!("/run/meshbed/{}/n{node}/routed.json", emu.id));
    let _ = std::fs::remove_file(&path);
    let pid = Command::new("sh")
        .arg("-c")
        .arg(format!("ip netns pids {} | xargs -r ps -o pid=,args= -p | grep 'meshbed routed' | grep -v grep | awk '{{print $1}}'", emu.netns(node)))
        .output()
        .unwrap();
    let pid: u32 = String::from_utf8_lossy(&pid.stdout).trim().parse().expect("the routing daemon's pid");
    meshbed_emu::sys::signal(pid, 10); // SIGUSR1
    let t0 = std::time::Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(&path) {
            return serde_json::from_str(&text).unwrap();
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "node {node}'s daemon wrote no report");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every node's routes, addresses and daemon log, for a failure message.
fn routing_state(emu: &Emu) -> String {
    let mut out = String::new();
    for node in 0..6 {
        for cmd in [&["ip", "route"][..], &["ip", "-6", "addr", "show", "dev", "mesh0"], &["ip", "-6", "route"]] {
            let o = emu.exec(node, cmd);
            out += &format!(
                "node {node}: {}:\n{}{}",
                cmd.join(" "),
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
        }
        let log = PathBuf::from(format!("/run/meshbed/{}/n{node}/spawned.log", emu.id));
        out += &format!("node {node}: {}:\n{}\n", log.display(), std::fs::read_to_string(&log).unwrap_or_default());
    }
    out
}

/// The next hop node `node`'s kernel uses towards `dst`.
fn next_hop(emu: &Emu, node: u32, dst: &str) -> String {
    let o = emu.exec(node, &["ip", "route", "get", dst]);
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    let words: Vec<&str> = text.split_whitespace().collect();
    match words.iter().position(|w| *w == "via") {
        Some(i) => words[i + 1].to_string(),
        None => dst.to_string(),
    }
}

/// Sends `data` with `meshbed send --protocol PROTOCOL` from node 0 to
/// node 4's `meshbed recv`, and returns the sender's JSON report and what
/// was committed.
fn start_send(
    emu: &Emu,
    dir: &Path,
    protocol: &str,
    data: &[u8],
) -> (std::process::Child, std::process::Child, PathBuf) {
    let file = dir.join(format!("{protocol}.bin"));
    std::fs::write(&file, data).unwrap();
    let rx_dir = dir.join(format!("rx-{protocol}"));
    std::fs::create_dir_all(&rx_dir).unwrap();
    let recv = emu.spawn(
        4,
        &[
            MESHBED,
            "recv",
            "--listen",
            "10.0.0.5:7411",
            // Namespaces this test made, no one else on the path.
            "--insecure",
            "--dir",
            rx_dir.to_str().unwrap(),
            "--count",
            "1",
            // As long as the sender waits: OLSR takes seconds to route around a
            // lost relay, and a receiver that gave up would end its count.
            "--timeout",
            "60s",
            "--quiet",
            "--json",
        ],
    );
    // Until the receiver listens (a refused first datagram ends a transfer).
    let t0 = std::time::Instant::now();
    while !String::from_utf8_lossy(&emu.exec(4, &["ss", "-Hlun", "sport = :7411"]).stdout).contains("7411") {
        assert!(t0.elapsed() < Duration::from_secs(10), "meshbed recv did not start listening");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The routing daemon's socket comes from the node's environment.
    let send = emu.spawn(
        0,
        &[
            "sh",
            "-c",
            &format!(
                "{MESHBED} send {} 10.0.0.5:7411 --insecure --protocol {protocol} --timeout 60s --quiet --json",
                file.display()
            ),
        ],
    );
    (send, recv, rx_dir.join(format!("{protocol}.bin")))
}

/// The sender's and the receiver's JSON reports.
fn finish_send(
    emu: &Emu,
    mut send: std::process::Child,
    mut recv: std::process::Child,
    limit: Duration,
) -> (serde_json::Value, serde_json::Value) {
    let status = wait_timeout(&mut send, limit);
    let mut out = String::new();
    send.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    let mut err = String::new();
    send.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let Some(status) = status else {
        // Killed by the wait: what it and the daemons had got to.
        panic!("meshbed send did not finish in {limit:?}: {out}{err}\n{}", routing_state(emu));
    };
    if !status.success() {
        // What the receiver said is half the story.
        wait_timeout(&mut recv, Duration::from_secs(5));
        let mut recv_out = String::new();
        let _ = recv.stdout.take().unwrap().read_to_string(&mut recv_out);
        let _ = recv.stderr.take().unwrap().read_to_string(&mut recv_out);
        panic!("meshbed send failed: {out}{err}\nmeshbed recv: {recv_out}");
    }
    wait_timeout(&mut recv, Duration::from_secs(20)).expect("meshbed recv did not finish");
    let mut recv_out = String::new();
    recv.stdout.take().unwrap().read_to_string(&mut recv_out).unwrap();
    let line = recv_out
        .lines()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("meshbed recv reported nothing: {recv_out}"));
    (serde_json::from_str(&out).unwrap(), serde_json::from_str(line).unwrap())
}

/// Seed 003's situation on a 4-hop chain: the route is found on demand,
/// then a relay walks away mid-transfer, and the transfers survive the
/// repair byte for byte.
/// One emulated mesh at a time in this file: each is a real-time radio
/// model whose daemons time HELLOs and routes on the wall clock, and four at
/// once on two cores (with the rest of the test suite beside them) lost
/// enough of babeld's multicast that its walk never rerouted within 180 s
/// in one CI run, though it passes alone in 140 s. A poisoned lock (a test
/// that failed) still serializes.
static ONE_MESH_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_mesh_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_MESH_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `send_within`: how long the ATP transfer may take, the repair included.
fn relay_walks_away(
    routing: &str,
    name: &str,
    leave_s: f64,
    converge_within: Duration,
    send_within: Duration,
    emu_args: &[&str],
) {
    let _mesh = one_mesh_at_a_time();
    require_emulator_support();
    let dir = scratch(name);
    let scenario = walkaway_scenario(&dir, routing, leave_s);
    let emu = Emu::start(&scenario, emu_args);
    // meshbed's own daemons report; babeld is judged by its routes alone.
    let meshbed_daemons = emu_args.is_empty();
    let started = std::time::Instant::now();

    // An end-to-end ping: discovery (AODV) or convergence (OLSR) first.
    let t0 = std::time::Instant::now();
    loop {
        let o = emu.exec(0, &["ping", "-c", "1", "-W", "1", "10.0.0.5"]);
        if o.status.success() {
            assert!(
                String::from_utf8_lossy(&o.stdout).contains("ttl=61"),
                "4 hops: {}",
                String::from_utf8_lossy(&o.stdout)
            );
            break;
        }
        if t0.elapsed() > converge_within {
            panic!("no route to node 4 after {converge_within:?}\n{}", routing_state(&emu));
        }
    }
    println!("{name}: first end-to-end ping after {:.1} s", t0.elapsed().as_secs_f64());
    let report = if meshbed_daemons { routed_report(&emu, 0) } else { serde_json::Value::Null };
    println!("{name}: node 0 after the first ping: {}", report["net"]);
    if routing.contains("aodv") {
        let discoveries = report["net"]["discoveries"]["completed"].as_u64().unwrap();
        assert!(discoveries >= 1, "node 0 timed no discovery: {report}");
        let times = report["discovery_times_ms"].as_array().unwrap();
        println!("{name}: discovery time {} ms", times[0]);
        assert!(times[0].as_f64().unwrap() > 0.0);
    }
    assert_eq!(next_hop(&emu, 1, "10.0.0.5"), "10.0.0.3", "node 1 forwards through relay 2 at first");

    // ATP (meshbed send/recv) and the kernel's TCP across the walk: started
    // shortly before relay 2 leaves, so that they are running when it does.
    assert!(started.elapsed() < Duration::from_secs_f64(leave_s - 1.0), "too slow to start before the walk");
    let start_at = Duration::from_secs_f64(leave_s - 3.0);
    if let Some(wait) = start_at.checked_sub(started.elapsed()) {
        std::thread::sleep(wait);
    }
    // Sizes for the chain's ~0.9 Mbit/s (ATP alone, simulated): both
    // transfers are still running when relay 2 leaves.
    let atp_data = content(2_000_000, 11);
    let (send, recv, committed) = start_send(&emu, &dir, "atp-default", &atp_data);
    let tcp_data = content(1_000_000, 12);
    let tcp = {
        let emu_id = emu.id.clone();
        let data = tcp_data.clone();
        std::thread::spawn(move || {
            let e = Emu { child: Command::new("true").spawn().unwrap(), id: emu_id };
            kernel_tcp_transfer(&e, 0, 4, Ipv4Addr::new(10, 0, 0, 5), "cubic", data)
        })
    };
    let (atp_report, _) = finish_send(&emu, send, recv, send_within);
    println!("{name}: ATP done {:.1} s after the start: {atp_report}", started.elapsed().as_secs_f64());
    let got = std::fs::read(&committed).expect("the ATP file");
    assert!(got == atp_data, "ATP delivered different bytes ({} of {})", got.len(), atp_data.len());
    let tcp_got = tcp.join().expect("kernel TCP");
    assert!(tcp_got == tcp_data, "kernel TCP delivered different bytes ({} of {})", tcp_got.len(), tcp_data.len());
    let ended = started.elapsed().as_secs_f64();
    println!("{name}: transfers done {ended:.1} s after the start; ATP: {}", atp_report["routing"]);
    assert!(
        ended > leave_s + 3.0,
        "the transfers ended at {ended:.1} s, before relay 2 left range: nothing was tested"
    );

    // The route moved to the spare relay (AODV's may have expired since
    // the transfers ended: a ping finds it again, through node 5).
    ping(&emu, 0, "10.0.0.5");
    assert_eq!(next_hop(&emu, 1, "10.0.0.5"), "10.0.0.6", "node 1 forwards through node 5 after the walk");
    // ATP heard the daemon: the route failed and came back, and it probed again.
    let seen = &atp_report["routing"];
    if routing.contains("aodv") {
        assert!(seen["route_failed_notices"].as_u64().unwrap() >= 1, "ATP heard no route failure: {seen}");
        assert!(seen["route_reestablished_notices"].as_u64().unwrap() >= 1, "{seen}");
        assert!(seen["route_failure_probes"].as_u64().unwrap() >= 1, "ATP did not re-probe on the notice: {seen}");
    }
    if meshbed_daemons {
        let report = routed_report(&emu, 1);
        println!("{name}: node 1 at the end: {}", report["net"]);
        assert!(report["net"]["route_changes"].as_u64().unwrap() >= 2, "{report}");
    }

    let id = emu.id.clone();
    let status = emu.interrupt();
    assert!(status.success(), "meshbed emu exited with {status}");
    assert!(namespaces_of(&id).is_empty(), "left behind: {:?}", namespaces_of(&id));
}

#[test]
#[ignore = "needs root, /dev/net/tun, iproute2 and iptables: run scripts/test as root (CI does)"]
fn aodv_finds_a_four_hop_route_on_demand_and_repairs_it_when_a_relay_walks_away() {
    // The transfers' limit guards against a hang, not a speed: alone they
    // end in 27–42 s, but while relay 2 is at the edge of its neighbours'
    // range AODV's route breaks and returns again and again (a CI run as
    // root, the machine's two cores busy with the other tests, once saw
    // ten route-failure notices and a complete, verified ATP transfer
    // that took 201 s). So 300 s, as for babeld below.
    relay_walks_away("kind = \"aodv\"", "aodv-walk", 6.0, Duration::from_secs(20), Duration::from_secs(300), &[]);
}

#[test]
#[ignore = "needs root, /dev/net/tun, iproute2 and iptables: run scripts/test as root (CI does)"]
fn olsr_etx_converges_on_a_four_hop_chain_and_reroutes_when_a_relay_walks_away() {
    // OLSR needs a few HELLO and TC rounds to converge first.
    relay_walks_away(
        "kind = \"olsr\"\nmetric = \"etx\"",
        "olsr-walk",
        16.0,
        Duration::from_secs(15),
        Duration::from_secs(180),
        &[],
    );
}

/// The same walk with Debian's babeld in every node instead of meshbed's
/// daemons: an independent reference for convergence and for kernel TCP
/// over a moving mesh (the scenario's own routing is the default shortest
/// path, which babeld replaces).
#[test]
#[ignore = "needs root, /dev/net/tun, iproute2, iptables and babeld: run scripts/test as root (CI does)"]
fn babeld_converges_and_reroutes_when_a_relay_walks_away() {
    // Babel's own timers on a wireless interface: a HELLO every 4 s, an IHU
    // every 12 s, a full update every 16 s (babeld(8)). Its start-up burst
    // usually converges the chain in under a second, but when that burst is
    // lost (it is sent as the medium starts, and multicast frames are never
    // retried) convergence waits for the periodic messages: up to an IHU
    // and a full update interval, hop by hop (CI once saw no route after
    // 20 s). So 40 s, and the walk after it. The repair takes as long:
    // babeld lets a lost neighbour's link cost rise over several missed
    // HELLOs before the spare relay's route wins (`scripts/emu-reroute
    // babeld` measured 26 s without a reply), and the transfers back off
    // meanwhile: 300 s for ATP (locally 77–102 s; CI once saw more than
    // 180 s).
    relay_walks_away(
        "kind = \"shortest-path\"",
        "babeld-walk",
        45.0,
        Duration::from_secs(40),
        Duration::from_secs(300),
        &["--babeld"],
    );
}

#[test]
#[ignore = "needs root, /dev/net/tun, iproute2 and iptables: run scripts/test as root (CI does)"]
fn mtl_moves_a_file_over_four_emulated_hops_with_h_from_olsr_etx() {
    let _mesh = one_mesh_at_a_time();
    require_emulator_support();
    let dir = scratch("mtl");
    let scenario = dir.join("chain.toml");
    std::fs::write(
        &scenario,
        "seed = 3\nduration_s = 60.0\n[radio]\nstandard = \"802.11a\"\ndata_rate_kbps = 24000\n\
         [topology]\nkind = \"chain\"\nnodes = 5\nspacing_m = 200.0\n[routing]\nkind = \"olsr\"\nmetric = \"etx\"\n",
    )
    .unwrap();
    let emu = Emu::start(&scenario, &[]);
    let t0 = std::time::Instant::now();
    while !emu.exec(0, &["ping", "-c", "1", "-W", "1", "10.0.0.5"]).status.success() {
        assert!(t0.elapsed() < Duration::from_secs(30), "OLSR-ETX found no route to node 4 in 30 s");
    }
    let data = content(500_000, 21);
    let (send, recv, committed) = start_send(&emu, &dir, "mtl", &data);
    let (report, rx_report) = finish_send(&emu, send, recv, Duration::from_secs(180));
    assert!(std::fs::read(&committed).unwrap() == data, "MTL delivered different bytes");
    assert_eq!(report["routing"]["path"]["hop_count"], 4, "the sender's h: {}", report["routing"]);
    assert_eq!(rx_report["routing"]["path"]["hop_count"], 4, "the receiver's h: {}", rx_report["routing"]);
    let p_max = report["routing"]["path"]["max_link_loss"].as_f64().unwrap();
    assert!((0.0..1.0).contains(&p_max), "P_max {p_max}");
    emu.interrupt();
}
