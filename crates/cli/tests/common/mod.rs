//! What the CLI's end-to-end tests share: the binary, scratch directories
//! and free ports; for the emulator's, starting `meshbed emu` in the
//! background, running programs in its nodes, and the checks every test
//! needs (root, /dev/net/tun, the tools).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub const MESHBED: &str = env!("CARGO_BIN_EXE_meshbed");

pub fn require_emulator_support() {
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

/// `meshbed` as a command to add arguments to.
pub fn meshbed() -> Command {
    Command::new(MESHBED)
}

/// A UDP port on loopback that nothing listens on now.
pub fn free_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

pub use meshbed_proto::harness::ScratchDir as Scratch;

/// A fresh, empty directory for one test named after `name`, removed when
/// dropped.
pub fn scratch(name: &str) -> Scratch {
    Scratch::new(&format!("meshbed-cli-test-{name}-"))
}

/// Writes `text` as `name` in a fresh scratch directory and runs it with
/// `meshbed emu run FILE --json`, which must succeed: its report.
pub fn emu_run_json(name: &str, text: &str) -> serde_json::Value {
    require_emulator_support();
    let dir = scratch(name);
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, text).unwrap();
    let o = Command::new(MESHBED).args(["emu", "run", file.to_str().unwrap(), "--json"]).output().expect("run meshbed");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let _ = std::fs::remove_dir_all(&dir);
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The text of a scenario: a chain of `hops` hops, 802.11a at 24 Mbit/s,
/// 200 m apart, without flows (a test appends its own tables).
pub fn chain_toml(seed: u64, duration_s: f64, hops: u32) -> String {
    format!(
        "seed = {seed}\nduration_s = {duration_s:?}\n[radio]\nstandard = \"802.11a\"\ndata_rate_kbps = 24000\n\
         [topology]\nkind = \"chain\"\nnodes = {}\nspacing_m = 200.0\n",
        hops + 1
    )
}

/// A chain of `hops` hops, 802.11a at 24 Mbit/s, 200 m apart.
pub fn chain_scenario(dir: &Path, hops: u32) -> PathBuf {
    let p = dir.join(format!("chain{hops}.toml"));
    std::fs::write(&p, chain_toml(3, 10.0, hops)).unwrap();
    p
}

/// `meshbed emu SCENARIO` in the background.
pub struct Emu {
    pub child: Child,
    pub id: String,
}

impl Emu {
    /// Starts an emulation and waits until its nodes (and relays) are up.
    pub fn start(scenario: &Path, extra: &[&str]) -> Emu {
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

    pub fn exec(&self, node: u32, cmd: &[&str]) -> std::process::Output {
        Command::new(MESHBED)
            .args(["emu", "exec", "--emu", &self.id, &node.to_string(), "--"])
            .args(cmd)
            .output()
            .expect("meshbed emu exec")
    }

    pub fn spawn(&self, node: u32, cmd: &[&str]) -> Child {
        Command::new(MESHBED)
            .args(["emu", "exec", "--emu", &self.id, &node.to_string(), "--"])
            .args(cmd)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("meshbed emu exec")
    }

    pub fn netns(&self, node: u32) -> String {
        format!("mb{}-n{node}", self.id)
    }

    /// Ctrl-C, and the emulator's own teardown.
    pub fn interrupt(mut self) -> std::process::ExitStatus {
        meshbed_emu::sys::signal(self.child.id(), libc_sigint());
        wait_timeout(&mut self.child, Duration::from_secs(20)).expect("meshbed emu did not stop on SIGINT")
    }
}

impl Drop for Emu {
    /// A test that failed half-way still takes its emulation down.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            meshbed_emu::sys::signal(self.child.id(), libc_sigint());
            let _ = wait_timeout(&mut self.child, Duration::from_secs(20));
        }
    }
}

pub fn libc_sigint() -> i32 {
    2
}

pub fn wait_timeout(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
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

/// Waits (bounded) for a child and collects its output; kills it if it
/// overstays.
pub fn wait_bounded(mut child: Child, limit: Duration) -> std::process::Output {
    wait_timeout(&mut child, limit);
    child.wait_with_output().unwrap()
}

pub fn namespaces_of(id: &str) -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&format!("mb{id}-")))
        .map(str::to_string)
        .collect()
}

pub fn ping(emu: &Emu, from: u32, to: &str) {
    let o = emu.exec(from, &["ping", "-c", "3", "-i", "0.2", "-W", "2", to]);
    assert!(
        o.status.success(),
        "ping {to} from node {from} failed:\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[allow(unused_imports)] // Not every test file that shares this module uses it.
pub use meshbed_proto::harness::test_bytes as content;

/// Moves `data` over the kernel's TCP with congestion control `cc` from
/// node `from` to node `to` (threads inside the two namespaces) and
/// returns what arrived.
pub fn kernel_tcp_transfer(
    emu: &Emu,
    from: u32,
    to: u32,
    to_addr: Ipv4Addr,
    cc: &'static str,
    data: Vec<u8>,
) -> Vec<u8> {
    let port = 5001;
    let (tx, rx) = std::sync::mpsc::channel();
    let ns_to = emu.netns(to);
    let server = std::thread::spawn(move || {
        meshbed_emu::sys::enter_netns(&ns_to).unwrap();
        let l = TcpListener::bind(SocketAddrV4::new(to_addr, port)).unwrap();
        tx.send(()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        // After a route outage the kernel's RTO has backed off (1, 2, 4, …
        // 64 s): a silence of 30 s is legitimate (CI saw it on the babeld
        // walk), so wait up to two backed-off RTOs.
        s.set_read_timeout(Some(Duration::from_secs(150))).unwrap();
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
        s.set_write_timeout(Some(Duration::from_secs(150))).unwrap();
        s.write_all(&data).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
    });
    client.join().expect("TCP sender failed");
    server.join().expect("TCP receiver failed")
}
