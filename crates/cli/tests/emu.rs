//! The emulator end to end, as root: real namespaces, TAPs, the kernel's
//! stacks, `meshbed relay` on NFQUEUE, `meshbed send/recv` and kernel TCP.
//!
//! These tests need root, /dev/net/tun, iproute2 and iptables, so they are
//! `#[ignore]`d with that reason: `cargo test --workspace` reports them as
//! ignored for a developer who is not root. `scripts/test` as root (CI)
//! installs the tools and runs them with `--include-ignored`; then a missing
//! piece FAILS with the reason rather than passing as a green test.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const MESHBED: &str = env!("CARGO_BIN_EXE_meshbed");

fn require_emulator_support() {
    assert!(
        meshbed_emu::sys::is_root(),
        "the emulator tests need root (network namespaces, TAP devices, netfilter): run scripts/test as root, as CI does"
    );
    assert!(Path::new("/dev/net/tun").exists(), "the emulator tests need /dev/net/tun (modprobe tun)");
    for tool in ["ip", "iptables"] {
        let found = Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().unwrap().status.success();
        assert!(found, "the emulator tests need `{tool}`: apt-get install iproute2 iptables (.ci/run does)");
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("meshbed-emu-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A chain of `hops` hops, 802.11a at 24 Mbit/s, 200 m apart.
fn chain_scenario(dir: &Path, hops: u32) -> PathBuf {
    let p = dir.join(format!("chain{hops}.toml"));
    std::fs::write(
        &p,
        format!(
            "seed = 3\nduration_s = 10.0\n[radio]\nstandard = \"802.11a\"\ndata_rate_kbps = 24000\n\
             [topology]\nkind = \"chain\"\nnodes = {}\nspacing_m = 200.0\n",
            hops + 1
        ),
    )
    .unwrap();
    p
}

/// `meshbed emu SCENARIO` in the background.
struct Emu {
    child: Child,
    id: String,
}

impl Emu {
    /// Starts an emulation and waits until its nodes (and relays) are up.
    fn start(scenario: &Path, extra: &[&str]) -> Emu {
        let mut child = Command::new(MESHBED)
            .arg("emu")
            .arg(scenario)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start meshbed emu");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next().expect("meshbed emu printed nothing").unwrap();
        let id = first
            .strip_prefix("emulation ")
            .and_then(|r| r.split(':').next())
            .unwrap_or_else(|| panic!("unexpected first line: {first}"))
            .to_string();
        for line in lines.by_ref() {
            if line.unwrap().starts_with("run programs") {
                break;
            }
        }
        // Keep draining stdout so the emulator never blocks on it.
        std::thread::spawn(move || for _ in lines {});
        Emu { child, id }
    }

    fn exec(&self, node: u32, cmd: &[&str]) -> std::process::Output {
        Command::new(MESHBED)
            .args(["emu", "exec", "--emu", &self.id, &node.to_string(), "--"])
            .args(cmd)
            .output()
            .expect("meshbed emu exec")
    }

    fn spawn(&self, node: u32, cmd: &[&str]) -> Child {
        Command::new(MESHBED)
            .args(["emu", "exec", "--emu", &self.id, &node.to_string(), "--"])
            .args(cmd)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("meshbed emu exec")
    }

    fn netns(&self, node: u32) -> String {
        format!("mb{}-n{node}", self.id)
    }

    /// Ctrl-C, and the emulator's own teardown.
    fn interrupt(mut self) -> std::process::ExitStatus {
        meshbed_emu::sys::signal(self.child.id(), libc_sigint());
        wait_timeout(&mut self.child, Duration::from_secs(20)).expect("meshbed emu did not stop on SIGINT")
    }
}

fn libc_sigint() -> i32 {
    2
}

fn wait_timeout(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let t0 = std::time::Instant::now();
    while t0.elapsed() < limit {
        if let Some(s) = child.try_wait().unwrap() {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    None
}

fn namespaces_of(id: &str) -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&format!("mb{id}-")))
        .map(str::to_string)
        .collect()
}

fn ping(emu: &Emu, from: u32, to: &str) {
    let o = emu.exec(from, &["ping", "-c", "3", "-i", "0.2", "-W", "2", to]);
    assert!(
        o.status.success(),
        "ping {to} from node {from} failed:\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

use meshbed_proto::harness::test_bytes as content;

/// Moves `data` over the kernel's TCP with congestion control `cc` from
/// node `from` to node `to` (threads inside the two namespaces) and
/// returns what arrived.
fn kernel_tcp_transfer(emu: &Emu, from: u32, to: u32, to_addr: Ipv4Addr, cc: &'static str, data: Vec<u8>) -> Vec<u8> {
    let port = 5001;
    let (tx, rx) = std::sync::mpsc::channel();
    let ns_to = emu.netns(to);
    let server = std::thread::spawn(move || {
        meshbed_emu::sys::enter_netns(&ns_to).unwrap();
        let l = TcpListener::bind(SocketAddrV4::new(to_addr, port)).unwrap();
        tx.send(()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).unwrap();
        got
    });
    rx.recv().unwrap();
    let ns_from = emu.netns(from);
    let client = std::thread::spawn(move || {
        meshbed_emu::sys::enter_netns(&ns_from).unwrap();
        let sock =
            std::net::TcpStream::connect_timeout(&SocketAddrV4::new(to_addr, port).into(), Duration::from_secs(10));
        let mut s: TcpStream = sock.unwrap();
        // TCP_CONGESTION can be changed on a connected socket too.
        meshbed_emu::sys::set_tcp_congestion(&s, cc).unwrap();
        assert_eq!(meshbed_emu::sys::tcp_congestion(&s).unwrap(), cc);
        s.set_write_timeout(Some(Duration::from_secs(30))).unwrap();
        s.write_all(&data).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
    });
    client.join().expect("TCP sender failed");
    server.join().expect("TCP receiver failed")
}

#[test]
#[ignore = "needs root, /dev/net/tun, iproute2 and iptables: run scripts/test as root (CI does)"]
fn three_hop_chain_carries_ping_kernel_tcp_and_relay_stamped_atp_then_leaves_nothing() {
    require_emulator_support();
    let dir = scratch("chain");
    let scenario = chain_scenario(&dir, 3);
    let emu = Emu::start(&scenario, &[]);
    let dst = "10.0.0.4";

    // The kernel forwards through nodes 1 and 2 (TTL 64 − 2 hops).
    ping(&emu, 0, dst);
    let o = emu.exec(0, &["ping", "-c", "1", dst]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("ttl=62"), "{}", String::from_utf8_lossy(&o.stdout));

    // Kernel TCP, reno and cubic, every byte checked.
    for (cc, seed) in [("reno", 1), ("cubic", 2)] {
        let data = content(1_000_000, seed);
        let got = kernel_tcp_transfer(&emu, 0, 3, Ipv4Addr::new(10, 0, 0, 4), cc, data.clone());
        assert_eq!(got.len(), data.len(), "kernel TCP ({cc}) delivered {} of {} bytes", got.len(), data.len());
        assert!(got == data, "kernel TCP ({cc}) delivered different bytes");
    }

    // ATP with `meshbed send/recv`, stamped by the relays in nodes 1 and 2;
    // an observer on node 3's INPUT chain records what arrives.
    let file = dir.join("payload.bin");
    let data = content(600_000, 3);
    std::fs::write(&file, &data).unwrap();
    let rx_dir = dir.join("rx");
    std::fs::create_dir_all(&rx_dir).unwrap();
    let ready = dir.join("observer.ready");
    let report = dir.join("observer.json");
    let mut observer = emu.spawn(
        3,
        &[
            MESHBED,
            "relay",
            "--observe",
            "--queue",
            "1",
            "--ready-file",
            ready.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
        ],
    );
    let t0 = std::time::Instant::now();
    while !ready.exists() {
        assert!(t0.elapsed() < Duration::from_secs(10), "the observer did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut recv = emu.spawn(
        3,
        &[
            MESHBED,
            "recv",
            "--listen",
            "10.0.0.4:7411",
            "--dir",
            rx_dir.to_str().unwrap(),
            "--count",
            "1",
            "--json",
            "--quiet",
        ],
    );
    std::thread::sleep(Duration::from_millis(300));
    let send = emu.exec(
        0,
        &[
            "sh",
            "-c",
            &format!(
                "{MESHBED} send {} 10.0.0.4:7411 --protocol atp-default --delay file:$MESHBED_DELAY_FILE --quiet --json",
                file.display()
            ),
        ],
    );
    assert!(
        send.status.success(),
        "meshbed send failed:\n{}{}",
        String::from_utf8_lossy(&send.stdout),
        String::from_utf8_lossy(&send.stderr)
    );
    let status = wait_timeout(&mut recv, Duration::from_secs(30)).expect("meshbed recv did not finish");
    let mut recv_out = String::new();
    recv.stdout.take().unwrap().read_to_string(&mut recv_out).unwrap();
    assert!(status.success(), "meshbed recv: {recv_out}");
    let got = std::fs::read(rx_dir.join("payload.bin")).expect("the received file");
    assert!(got == data, "ATP delivered different bytes ({} of {})", got.len(), data.len());
    meshbed_emu::sys::signal(observer.id(), 15);
    wait_timeout(&mut observer, Duration::from_secs(10)).expect("observer did not stop");
    let counters: meshbed_emu::relay::RelayCounters =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("observer report")).unwrap();
    let seen = &counters.observed;
    assert!(seen.atp_data_packets >= (600_000 / 1436) as u64, "{seen:?}");
    // The sender stamps its own hop, each relay one more: 3 hops.
    assert_eq!((seen.hop_count_min, seen.hop_count_max), (Some(3), Some(3)), "N_h at the receiver: {seen:?}");
    assert!(seen.d_max_us_min.is_some_and(|d| d > 0), "D_max at the receiver: {seen:?}");

    let id = emu.id.clone();
    let status = emu.interrupt();
    assert!(status.success(), "meshbed emu exited with {status}");
    // Relays wrote their counters and took their rules out: the forwarding ones stamped.
    assert!(namespaces_of(&id).is_empty(), "left behind: {:?}", namespaces_of(&id));
    assert!(!Path::new(&format!("/run/meshbed/{id}")).exists(), "state directory left behind");
}

#[test]
#[ignore = "needs root, /dev/net/tun, iproute2 and iptables: run scripts/test as root (CI does)"]
fn side_by_side_emulations_do_not_clash_and_clean_removes_a_killed_one() {
    require_emulator_support();
    let dir = scratch("pair");
    let scenario = chain_scenario(&dir, 2);
    let a = Emu::start(&scenario, &["--no-relays"]);
    let b = Emu::start(&scenario, &["--no-relays"]);
    assert_ne!(a.id, b.id);
    // Same addresses, separate namespaces: each reaches its own far end.
    ping(&a, 0, "10.0.0.3");
    ping(&b, 0, "10.0.0.3");

    // kill -9: no teardown ran; the namespaces stay until `clean`.
    let (a_id, mut a_child) = (a.id.clone(), a.child);
    a_child.kill().unwrap();
    a_child.wait().unwrap();
    assert_eq!(namespaces_of(&a_id).len(), 3, "a killed emulation keeps its namespaces until cleaned");
    let o = Command::new(MESHBED).args(["emu", "clean"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(namespaces_of(&a_id).is_empty(), "clean left {:?}", namespaces_of(&a_id));
    assert!(!Path::new(&format!("/run/meshbed/{a_id}")).exists());
    // The running one was left alone.
    assert_eq!(namespaces_of(&b.id).len(), 3);
    ping(&b, 0, "10.0.0.3");

    let b_id = b.id.clone();
    assert!(b.interrupt().success());
    assert!(namespaces_of(&b_id).is_empty());
}
