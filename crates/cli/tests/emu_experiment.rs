//! The experiment layer runs a scenario file on the emulator instead of the
//! simulator (`--backend emu`). Needs root, like the other emulator tests.

use std::process::Command;

#[test]
#[ignore = "needs root, /dev/net/tun, iproute2 and iptables: run scripts/test as root (CI does)"]
fn an_experiment_file_runs_on_the_emulator() {
    assert!(
        meshbed_emu::sys::is_root(),
        "the emulator tests need root (network namespaces, TAP devices, netfilter): run scripts/test as root, as CI does"
    );
    let dir = std::env::temp_dir().join(format!("meshbed-emu-experiment-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("e.toml");
    std::fs::write(
        &file,
        r#"
seed = 1
duration_s = 3.0
[radio]
data_rate_kbps = 24000
[topology]
kind = "chain"
nodes = 3
spacing_m = 200.0
[[flows]]
src = 0
dst = 2
traffic = "saturated"
[[flows]]
src = 0
dst = 2
protocol = "atp-default"
bytes = 100000
[experiment]
name = "emu-smoke"
repetitions = 1
"#,
    )
    .unwrap();
    let out = dir.join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_meshbed"))
        .args(["experiment", "run", file.to_str().unwrap(), "--backend", "emu", "--out", out.to_str().unwrap()])
        .output()
        .expect("run meshbed");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = std::fs::read_to_string(out.join("flows.csv")).unwrap();
    let lines: Vec<&str> = rows.lines().collect();
    assert_eq!(lines.len(), 3, "{rows}");
    // The UDP flow ran over the emulated 2-hop chain and delivered.
    let header: Vec<&str> = lines[0].split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let udp: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(udp[col("protocol")], "udp");
    assert_eq!(udp[col("route_hops")], "2");
    assert!(udp[col("goodput_bps")].parse::<f64>().unwrap() > 1e6, "{rows}");
    // The ATP transfer ran through the relays and arrived byte for byte.
    let atp: Vec<&str> = lines[2].split(',').collect();
    assert_eq!(atp[col("protocol")], "atp-default");
    assert_eq!(atp[col("completed")], "true", "{rows}");
    assert_eq!(atp[col("verified")], "true", "{rows}");
    assert_eq!(atp[col("bytes_delivered")], "100000", "{rows}");
    assert!(atp[col("goodput_bps")].parse::<f64>().unwrap() > 0.0, "{rows}");
    let _ = std::fs::remove_dir_all(&dir);
}
