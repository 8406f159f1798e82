//! Kernel TCP flows (`protocol = "kernel-tcp"`) on the emulator, as root:
//! the kernel's own TCP between two namespaces of a static chain, with the
//! congestion control each flow names, verified byte for byte and reported
//! as the simulator reports a transfer (`meshbed emu run --json`).

mod common;

/// A 2-hop static chain (802.11a at 24 Mbit/s, 200 m apart): two 1 MB
/// transfers from node 0 to node 2, one with cubic and one with reno,
/// then one backlogged flow back from node 2 until `stop_s`, after them,
/// and last a transfer too large to finish before the run's end at 20 s.
fn scenario() -> String {
    common::chain_toml(1, 20.0, 2) + FLOWS
}

const FLOWS: &str = r#"
[routing]
kind = "static"
paths = [[0, 1, 2]]

[[flows]]
src = 0
dst = 2
protocol = "kernel-tcp"
congestion_control = "cubic"
bytes = 1000000
start_s = 0.5

[[flows]]
src = 0
dst = 2
protocol = "kernel-tcp"
congestion_control = "reno"
bytes = 1000000
start_s = 0.5

[[flows]]
src = 2
dst = 0
protocol = "kernel-tcp"
stop_s = 16.0
start_s = 12.0

[[flows]]
src = 0
dst = 2
protocol = "kernel-tcp"
bytes = 40000000
start_s = 17.0
"#;

#[test]
#[ignore = "needs root, /dev/net/tun, iproute2 and iptables: run scripts/test as root (CI does)"]
fn kernel_tcp_flows_with_cubic_and_reno_arrive_verified_and_one_until_stop_s_delivers() {
    let v = common::emu_run_json("chain-kernel-tcp", &scenario());
    let flows = v["run"]["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 4, "{v}");
    for (f, cc) in flows.iter().zip(["cubic", "reno"]) {
        assert_eq!(f["protocol"], "kernel-tcp", "{f}");
        assert_eq!(f["kernel_tcp"]["congestion_control"], cc, "{f}");
        assert_eq!(f["hops"], 2, "{f}");
        let t = &f["transfer"];
        assert_eq!(t["size_bytes"], 1_000_000, "{f}");
        assert_eq!((&t["completed"], &t["verified"], &t["failed"]), (&true.into(), &true.into(), &false.into()), "{f}");
        assert!(t["error"].is_null(), "{f}");
        assert_eq!(f["bytes_delivered"], 1_000_000, "{f}");
        assert!(f["goodput_bps"].as_f64().unwrap() > 100_000.0, "{f}");
        let done_s = t["completion_time_s"].as_f64().unwrap();
        assert!(done_s > 0.5 && done_s < 20.0, "{f}");
        // The kernel's counters: data segments out, and ACKs back.
        assert!(f["sent_packets"].as_u64().unwrap() >= 1_000_000 / 1448, "{f}");
        assert!(f["received_packets"].as_u64().unwrap() > 0 && t["feedback_packets"].as_u64().unwrap() > 0, "{f}");
    }
    // Until stop_s: what arrived in order by then, over its 4 s.
    let f = &flows[2];
    assert_eq!(f["kernel_tcp"]["congestion_control"], "cubic", "{f}");
    let t = &f["transfer"];
    assert!(t["size_bytes"].is_null(), "{f}");
    assert_eq!((&t["verified"], &t["failed"]), (&true.into(), &false.into()), "{f}");
    assert!(f["bytes_delivered"].as_u64().unwrap() > 100_000, "{f}");
    assert!(f["goodput_bps"].as_f64().unwrap() > 100_000.0, "{f}");
    assert!((f["duration_s"].as_f64().unwrap() - 4.0).abs() < 1e-9, "{f}");
    // Not finished by the run's end: stopped there and reported
    // incomplete with what was read (and checked) by then, as the
    // simulator reports it, not run on until it finishes or stalls.
    let f = &flows[3];
    let t = &f["transfer"];
    assert_eq!((&t["completed"], &t["failed"]), (&false.into(), &false.into()), "{f}");
    assert!(t["completion_time_s"].is_null(), "{f}");
    let delivered = f["bytes_delivered"].as_u64().unwrap();
    assert!(delivered > 10_000 && delivered < 40_000_000, "{f}");
    assert!(
        t["error"]
            .as_str()
            .unwrap()
            .starts_with("not finished by duration_s = 20 s (stopped then, every byte received"),
        "{f}"
    );
    assert!((f["duration_s"].as_f64().unwrap() - 3.0).abs() < 1e-9, "{f}");
    // The same file on the simulator, which has no kernel: refused by key.
    let dir = common::scratch("kernel-tcp-sim");
    let file = dir.join("chain-kernel-tcp.toml");
    std::fs::write(&file, scenario()).unwrap();
    let o = std::process::Command::new(common::MESHBED)
        .args(["sim", file.to_str().unwrap()])
        .output()
        .expect("run meshbed");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("the simulator cannot run flows[0].protocol = \"kernel-tcp\""),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
