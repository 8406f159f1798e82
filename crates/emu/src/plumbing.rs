//! Namespaces, TAP devices, addresses, routes, and the state that lets
//! `meshbed emu clean` undo a crashed emulation.
//!
//! An emulation has a random 16-bit id, chosen by creating
//! `/run/meshbed/<id>/` (creation fails if another emulation holds it, so
//! two emulations never share an id). Everything it creates carries the id:
//! namespaces `mb<id>-n<i>`, TAP devices `mb<id>t<i>` (renamed `mesh0` once
//! inside their namespace), MAC addresses `02:6d:<id>:<i>`. Node i is
//! `10.0.<i / 250>.<i % 250 + 1>` inside its own namespace; emulations
//! never share a namespace, so the same addresses in two of them do not clash.
//!
//! The state file `/run/meshbed/<id>/state.json` is written before anything
//! is created and names the medium's process (pid and start time) and the
//! namespaces. The TAP devices disappear with the medium process (their
//! descriptors close); namespaces, the processes inside them and their
//! iptables rules are what `clean` removes.

use crate::realtime::{node_mac, DelayExport};
use crate::sys;
use meshbed_radio::{Medium, NodeId, Payload};
use meshbed_sim::routing::RouteTable;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::net::Ipv4Addr;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use thiserror::Error;

/// Where emulations keep their state.
pub const STATE_ROOT: &str = "/run/meshbed";
/// The interface name of every node's radio inside its namespace.
pub const IFNAME: &str = "mesh0";
/// Most nodes in one emulation (the address plan's limit).
pub const MAX_NODES: usize = 250 * 250;

#[derive(Debug, Error)]
pub enum EmuError {
    #[error("the emulator needs root (network namespaces, TAP devices, netfilter); run it with sudo")]
    NotRoot,
    #[error("/dev/net/tun is missing: load the tun module (modprobe tun)")]
    NoTun,
    #[error("{what}: {err}")]
    Io { what: String, err: std::io::Error },
    #[error("`{cmd}` failed: {stderr}")]
    Command { cmd: String, stderr: String },
    /// The scenario asks for something the emulator cannot run
    /// ([`crate::support::Emulator`]); nothing was started.
    #[error(transparent)]
    Refused(#[from] meshbed_sim::backend::Refusal),
    /// The scenario is invalid, or a flow has no route.
    #[error(transparent)]
    Scenario(#[from] meshbed_sim::ScenarioError),
    #[error("{0}")]
    Other(String),
}

pub type Result<T> = std::result::Result<T, EmuError>;

fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> EmuError {
    let what = what.into();
    move |err| EmuError::Io { what, err }
}

/// Checks the emulator can run here.
pub fn preflight() -> Result<()> {
    if !sys::is_root() {
        return Err(EmuError::NotRoot);
    }
    if !Path::new("/dev/net/tun").exists() {
        return Err(EmuError::NoTun);
    }
    Ok(())
}

/// Runs a command to completion; its stderr is the error.
pub fn run_cmd(program: &str, args: &[&str]) -> Result<String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(io_err(format!("running {program} (is it installed?)")))?;
    if !out.status.success() {
        return Err(EmuError::Command {
            cmd: format!("{program} {}", args.join(" ")),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `ip -n NS -batch -` with `lines` on its standard input.
fn ip_batch(netns: &str, lines: &[String]) -> Result<()> {
    let mut child = Command::new("ip")
        .args(["-n", netns, "-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(io_err("running ip (install iproute2)"))?;
    child.stdin.take().expect("piped").write_all(lines.join("\n").as_bytes()).map_err(io_err("writing to ip"))?;
    let out = child.wait_with_output().map_err(io_err("waiting for ip"))?;
    if !out.status.success() {
        return Err(EmuError::Command {
            cmd: format!("ip -n {netns} -batch - <<< {lines:?}"),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(())
}

/// Node `i`'s address.
pub fn node_addr(i: NodeId) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, (i / 250) as u8, (i % 250 + 1) as u8)
}

/// The namespace of node `i` in emulation `id`.
pub fn netns_name(id: u16, i: NodeId) -> String {
    format!("mb{id:04x}-n{i}")
}

/// The emulation id a namespace name belongs to, if it is one of ours.
pub fn netns_emu_id(name: &str) -> Option<u16> {
    let rest = name.strip_prefix("mb")?;
    let (hex, node) = rest.split_once("-n")?;
    if hex.len() != 4 || node.is_empty() || !node.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    u16::from_str_radix(hex, 16).ok()
}

fn tap_name(id: u16, i: NodeId) -> String {
    format!("mb{id:04x}t{i}")
}

/// The state file's content.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct EmuState {
    pub id: u16,
    /// The medium's process and its start time (to tell a reused pid).
    pub pid: u32,
    pub pid_start_ticks: Option<u64>,
    pub nodes: Vec<NodeState>,
    /// Set once every node is configured.
    pub ready: bool,
    /// Whether every node runs a routing daemon (`meshbed routed`), whose
    /// notice socket programs in the node then find in their environment.
    #[serde(default)]
    pub routed: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct NodeState {
    pub netns: String,
    pub addr: Ipv4Addr,
    pub mac: String,
    /// The node's average delay D (µs), rewritten by the medium.
    pub delay_file: PathBuf,
}

impl EmuState {
    pub fn dir(id: u16) -> PathBuf {
        Path::new(STATE_ROOT).join(format!("{id:04x}"))
    }
    fn write(&self) -> Result<()> {
        let dir = Self::dir(self.id);
        let tmp = dir.join("state.json.tmp");
        std::fs::write(&tmp, serde_json::to_string_pretty(self).expect("serialisable"))
            .map_err(io_err(format!("writing {}", tmp.display())))?;
        std::fs::rename(&tmp, dir.join("state.json")).map_err(io_err("renaming the state file"))
    }
    pub fn read(id: u16) -> Result<EmuState> {
        let path = Self::dir(id).join("state.json");
        let text = std::fs::read_to_string(&path).map_err(io_err(format!("reading {}", path.display())))?;
        serde_json::from_str(&text).map_err(|e| EmuError::Other(format!("{}: {e}", path.display())))
    }
    /// Whether the medium process that owns this emulation is still running.
    pub fn alive(&self) -> bool {
        sys::process_alive(self.pid) && sys::process_start_ticks(self.pid) == self.pid_start_ticks
    }
}

/// Every emulation with a state directory, by id.
pub fn list() -> Vec<EmuState> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(STATE_ROOT) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Ok(id) = u16::from_str_radix(&name, 16) {
                if name.len() == 4 {
                    if let Ok(s) = EmuState::read(id) {
                        out.push(s);
                    }
                }
            }
        }
    }
    out.sort_by_key(|s| s.id);
    out
}

/// The running emulation to use: `id` if given, else the only running one.
pub fn find_running(id: Option<u16>) -> Result<EmuState> {
    let running: Vec<EmuState> = list().into_iter().filter(|s| s.alive() && s.ready).collect();
    match id {
        Some(id) => running
            .into_iter()
            .find(|s| s.id == id)
            .ok_or_else(|| EmuError::Other(format!("no running emulation with id {id:04x} (`meshbed emu list`)"))),
        None => match running.len() {
            0 => Err(EmuError::Other("no emulation is running (start one with `meshbed emu SCENARIO`)".into())),
            1 => Ok(running.into_iter().next().expect("one")),
            _ => Err(EmuError::Other(format!(
                "{} emulations are running ({}): choose one with --emu ID",
                running.len(),
                running.iter().map(|s| format!("{:04x}", s.id)).collect::<Vec<_>>().join(", ")
            ))),
        },
    }
}

/// Namespace names in `ip netns list`.
pub fn netns_list() -> Vec<String> {
    run_cmd("ip", &["netns", "list"])
        .map(|s| s.lines().filter_map(|l| l.split_whitespace().next().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// Kills every process in namespace `netns` (SIGTERM, then SIGKILL after
/// `grace`), so that it can be deleted cleanly.
pub fn kill_netns_processes(netns: &str, grace: std::time::Duration) {
    let pids = |ns: &str| -> Vec<u32> {
        run_cmd("ip", &["netns", "pids", ns])
            .map(|s| s.split_whitespace().filter_map(|p| p.parse().ok()).collect())
            .unwrap_or_default()
    };
    let me = std::process::id();
    let first = pids(netns);
    for &p in first.iter().filter(|&&p| p != me) {
        sys::signal(p, libc::SIGTERM);
    }
    let t0 = std::time::Instant::now();
    while t0.elapsed() < grace && pids(netns).iter().any(|&p| p != me) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for p in pids(netns).into_iter().filter(|&p| p != me) {
        sys::signal(p, libc::SIGKILL);
    }
}

/// Removes a namespace and everything in it (processes; its interfaces and
/// netfilter rules go with it).
fn delete_netns(netns: &str) {
    kill_netns_processes(netns, std::time::Duration::from_millis(1500));
    let _ = run_cmd("ip", &["netns", "del", netns]);
}

/// What [`clean`] removed.
#[derive(Debug, Default)]
pub struct Cleaned {
    pub emulations: Vec<u16>,
    pub namespaces: Vec<String>,
    /// Emulations left alone because their medium is still running.
    pub running: Vec<u16>,
}

/// Removes what crashed emulations left (namespaces and the processes in
/// them, state directories) and namespaces of ours with no live owner.
/// Running emulations are left alone unless `include_running` (then their
/// medium process is killed too). `only`: just that emulation.
pub fn clean(only: Option<u16>, include_running: bool) -> Result<Cleaned> {
    preflight()?;
    let mut cleaned = Cleaned::default();
    let mut live = Vec::new();
    for s in list() {
        if only.is_some_and(|id| id != s.id) {
            if s.alive() {
                live.push(s.id);
            }
            continue;
        }
        if s.alive() {
            if !include_running {
                cleaned.running.push(s.id);
                live.push(s.id);
                continue;
            }
            sys::signal(s.pid, libc::SIGKILL);
        }
        for n in &s.nodes {
            delete_netns(&n.netns);
            cleaned.namespaces.push(n.netns.clone());
        }
        let _ = std::fs::remove_dir_all(EmuState::dir(s.id));
        cleaned.emulations.push(s.id);
    }
    // Namespaces of ours whose state is gone (a crash before the state file
    // was complete, or a removed /run).
    for ns in netns_list() {
        if let Some(id) = netns_emu_id(&ns) {
            if only.is_some_and(|o| o != id) || live.contains(&id) {
                continue;
            }
            delete_netns(&ns);
            cleaned.namespaces.push(ns);
        }
    }
    cleaned.namespaces.sort();
    cleaned.namespaces.dedup();
    Ok(cleaned)
}

/// A running emulation's namespaces and TAP devices. Dropping it tears
/// everything down.
pub struct Emulation {
    pub state: EmuState,
    taps: Option<Vec<OwnedFd>>,
    pub(crate) children: Vec<std::process::Child>,
    /// Indices in `children` of the routing daemons.
    pub(crate) routers: Vec<usize>,
    torn_down: bool,
}

/// How the nodes' kernels get their routes.
#[derive(Copy, Clone, Debug)]
pub enum NodeRouting<'a> {
    /// One static table, installed at creation (the simulator's
    /// shortest-path or static routes over the same medium).
    Static(&'a RouteTable),
    /// Each node's routing daemon (`meshbed routed`) installs and removes
    /// its own.
    Daemons,
    /// Another routing daemon does (babeld, [`crate::routers`]): as
    /// `Daemons`, and IPv6 link-local addresses on `mesh0`, which Babel
    /// speaks over (RFC 8966 §4), with router solicitations, DAD and router
    /// advertisements off so that only the daemon's own packets cross the
    /// medium.
    External,
}

impl Emulation {
    /// Creates a namespace per node with a TAP device `mesh0` (MAC and
    /// address from the plan above), IP forwarding on, reverse-path
    /// filtering, ICMP redirects and IPv6 off, and the static routes of
    /// `routes` (the simulator's, built over the same medium), with
    /// permanent neighbour entries for every next hop so that no ARP crosses
    /// the medium (the simulator carries none either). With
    /// [`NodeRouting::Daemons`] no route is installed (the nodes' routing
    /// daemons install theirs, [`crate::routers`]) and every node gets a
    /// permanent neighbour entry for every other node, since any of them
    /// may become a next hop.
    pub fn create<P: Payload>(medium: &Medium<P>, routing: NodeRouting<'_>) -> Result<Emulation> {
        preflight()?;
        let n = medium.node_count();
        if n > MAX_NODES {
            return Err(EmuError::Other(format!("{n} nodes: the emulator handles at most {MAX_NODES}")));
        }
        std::fs::create_dir_all(STATE_ROOT).map_err(io_err(format!("creating {STATE_ROOT}")))?;
        // The medium rewrites every node's delay file up to 100 times a
        // second from its event loop: on a disk file system a write can
        // wait for the journal for tens of milliseconds, stalling the
        // medium. Where /run is not a tmpfs (some VMs and containers),
        // mount one, while no emulation has state there.
        if !sys::is_tmpfs(Path::new(STATE_ROOT)) && std::fs::read_dir(STATE_ROOT).is_ok_and(|mut d| d.next().is_none())
        {
            let _ = run_cmd("mount", &["-t", "tmpfs", "-o", "size=64m,mode=0755", "meshbed", STATE_ROOT]);
        }
        // A fresh id: creating its directory is the lock.
        let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let mut id = ((seed as u64 ^ (u64::from(std::process::id()) << 20)) % 0xffff) as u16;
        let mut tries = 0;
        loop {
            let taken = netns_list().iter().any(|ns| netns_emu_id(ns) == Some(id));
            if !taken && std::fs::create_dir(EmuState::dir(id)).is_ok() {
                break;
            }
            tries += 1;
            if tries > 1000 {
                return Err(EmuError::Other(format!("no free emulation id under {STATE_ROOT}")));
            }
            id = id.wrapping_mul(31421).wrapping_add(6927);
        }
        let dir = EmuState::dir(id);
        let pid = std::process::id();
        let state = EmuState {
            id,
            pid,
            pid_start_ticks: sys::process_start_ticks(pid),
            nodes: (0..n as NodeId)
                .map(|i| NodeState {
                    netns: netns_name(id, i),
                    addr: node_addr(i),
                    mac: mac_string(node_mac(id, i)),
                    delay_file: DelayExport::path(&dir, i),
                })
                .collect(),
            ready: false,
            routed: matches!(routing, NodeRouting::Daemons),
        };
        state.write()?;
        let mut emu =
            Emulation { state, taps: Some(Vec::new()), children: Vec::new(), routers: Vec::new(), torn_down: false };
        emu.configure(routing)?;
        emu.state.ready = true;
        emu.state.write()?;
        Ok(emu)
    }

    fn configure(&mut self, routing: NodeRouting<'_>) -> Result<()> {
        let id = self.state.id;
        let n = self.state.nodes.len() as NodeId;
        for i in 0..n {
            let ns = netns_name(id, i);
            run_cmd("ip", &["netns", "add", &ns])?;
            // Before the device arrives, so it takes these defaults.
            let ipv6: &[(&str, &str)] = match routing {
                // No router solicitations, DAD or MLD on the medium.
                NodeRouting::Static(_) | NodeRouting::Daemons => {
                    &[("net/ipv6/conf/all/disable_ipv6", "1"), ("net/ipv6/conf/default/disable_ipv6", "1")]
                }
                NodeRouting::External => &[
                    ("net/ipv6/conf/all/disable_ipv6", "0"),
                    ("net/ipv6/conf/default/disable_ipv6", "0"),
                    ("net/ipv6/conf/default/accept_dad", "0"),
                    ("net/ipv6/conf/default/router_solicitations", "0"),
                    ("net/ipv6/conf/default/accept_ra", "0"),
                ],
            };
            sys::in_netns(&ns, move || -> std::io::Result<()> {
                for &(key, value) in [
                    ("net/ipv4/ip_forward", "1"),
                    ("net/ipv4/conf/all/rp_filter", "0"),
                    ("net/ipv4/conf/default/rp_filter", "0"),
                    // A relay forwards out of the interface the packet came in
                    // on; redirects would tell the source to skip it.
                    ("net/ipv4/conf/all/send_redirects", "0"),
                    ("net/ipv4/conf/default/send_redirects", "0"),
                    ("net/ipv4/conf/all/accept_redirects", "0"),
                    ("net/ipv4/conf/default/accept_redirects", "0"),
                ]
                .iter()
                .chain(ipv6)
                {
                    std::fs::write(Path::new("/proc/sys").join(key), value)?;
                }
                Ok(())
            })
            .and_then(|r| r)
            .map_err(io_err(format!("setting sysctls in {ns}")))?;
            let tap = tap_name(id, i);
            let fd = sys::open_tap(&tap).map_err(io_err(format!("creating TAP {tap}")))?;
            self.taps.as_mut().expect("not torn down").push(fd);
            run_cmd("ip", &["link", "set", "dev", &tap, "address", &mac_string(node_mac(id, i)), "netns", &ns])?;
            let me = node_addr(i);
            let mut lines = vec![
                format!("link set dev {tap} name {IFNAME}"),
                "link set dev lo up".to_string(),
                format!("link set dev {IFNAME} mtu 1500 up"),
                format!("addr add {me}/32 dev {IFNAME}"),
            ];
            let mut next_hops = Vec::new();
            let routes = match routing {
                NodeRouting::Static(routes) => routes,
                NodeRouting::Daemons | NodeRouting::External => {
                    next_hops.extend((0..n).filter(|&d| d != i));
                    &RouteTable::empty(n as usize)
                }
            };
            for dst in (0..n).filter(|&d| d != i) {
                match routes.next_hop(i, dst) {
                    Some(nh) if nh == dst => lines.push(format!("route add {}/32 dev {IFNAME}", node_addr(dst))),
                    Some(nh) => {
                        lines.push(format!("route add {}/32 via {} dev {IFNAME} onlink", node_addr(dst), node_addr(nh)))
                    }
                    None => continue,
                }
                let nh = routes.next_hop(i, dst).expect("matched");
                if !next_hops.contains(&nh) {
                    next_hops.push(nh);
                }
            }
            for nh in next_hops {
                lines.push(format!(
                    "neigh replace {} lladdr {} dev {IFNAME} nud permanent",
                    node_addr(nh),
                    mac_string(node_mac(id, nh))
                ));
            }
            ip_batch(&ns, &lines)?;
        }
        Ok(())
    }

    pub fn id(&self) -> u16 {
        self.state.id
    }
    pub fn dir(&self) -> PathBuf {
        EmuState::dir(self.state.id)
    }

    /// Hands the TAP descriptors to the medium loop (node order).
    pub fn take_taps(&mut self) -> Vec<OwnedFd> {
        self.taps.take().unwrap_or_default()
    }

    /// Starts `program args...` inside node `node`'s namespace with the
    /// node's environment ([`node_env`]); the emulation stops it at teardown.
    pub fn spawn_in(&mut self, node: NodeId, program: &Path, args: &[String]) -> Result<()> {
        let ns = &self.state.nodes[node as usize].netns;
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", ns]).arg(program).args(args).stdin(Stdio::null());
        // Their chatter goes to a log beside the node's delay file, not the
        // operator's terminal (the state directory is removed at teardown).
        let log_path = self.dir().join(format!("n{node}")).join("spawned.log");
        if let Ok(log) = std::fs::OpenOptions::new().create(true).append(true).open(&log_path) {
            if let Ok(err) = log.try_clone() {
                cmd.stdout(log).stderr(err);
            }
        }
        for (k, v) in node_env(&self.state, node) {
            cmd.env(k, v);
        }
        let child = cmd.spawn().map_err(io_err(format!("starting {} in {ns}", program.display())))?;
        self.children.push(child);
        Ok(())
    }

    /// Starts `EXE relay` (the delay-collection daemon) in every node, each
    /// with its node's delay file, and waits until every one has its
    /// queue and iptables rule in place. Each writes its counters to
    /// `n<i>/relay.json` in the state directory when it stops.
    pub fn start_relays(&mut self, exe: &Path) -> Result<()> {
        let dir = self.dir();
        for node in 0..self.state.nodes.len() as NodeId {
            let nd = dir.join(format!("n{node}"));
            std::fs::create_dir_all(&nd).map_err(io_err(format!("creating {}", nd.display())))?;
            let args = vec![
                "relay".to_string(),
                "--delay-file".into(),
                self.state.nodes[node as usize].delay_file.display().to_string(),
                "--ready-file".into(),
                nd.join("relay.ready").display().to_string(),
                "--report".into(),
                nd.join("relay.json").display().to_string(),
            ];
            self.spawn_in(node, exe, &args)?;
        }
        let t0 = std::time::Instant::now();
        for node in 0..self.state.nodes.len() {
            let ready = dir.join(format!("n{node}")).join("relay.ready");
            while !ready.exists() {
                let exited = self.children.iter_mut().any(|c| matches!(c.try_wait(), Ok(Some(_))));
                if exited || t0.elapsed() > std::time::Duration::from_secs(10) || sys::stop_requested() {
                    return Err(EmuError::Other(format!(
                        "the relay in node {node} did not start (is iptables installed? see its error above)"
                    )));
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
        Ok(())
    }

    /// Stops the processes started in the nodes, removes the namespaces,
    /// closes the TAPs and removes the state directory.
    pub fn teardown(&mut self) {
        if self.torn_down {
            return;
        }
        self.torn_down = true;
        for c in &self.children {
            sys::signal(c.id(), libc::SIGTERM);
        }
        let t0 = std::time::Instant::now();
        for c in &mut self.children {
            while t0.elapsed() < std::time::Duration::from_secs(3) {
                if let Ok(Some(_)) = c.try_wait() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        for node in &self.state.nodes {
            delete_netns(&node.netns);
        }
        self.taps = None;
        let _ = std::fs::remove_dir_all(self.dir());
    }
}

impl Drop for Emulation {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// The environment a process inside node `node` gets: its node index, the
/// emulation id, its address and its delay file (usable as
/// `meshbed send --delay file:$MESHBED_DELAY_FILE`), its routing daemon's
/// notice socket when the nodes run daemons (`MESHBED_ROUTED_SOCKET`), and
/// each node's address as `MESHBED_NODE_<j>`.
pub fn node_env(state: &EmuState, node: NodeId) -> Vec<(String, String)> {
    let me = &state.nodes[node as usize];
    let mut env = vec![
        ("MESHBED_EMU".to_string(), format!("{:04x}", state.id)),
        ("MESHBED_NODE".to_string(), node.to_string()),
        ("MESHBED_ADDR".to_string(), me.addr.to_string()),
        ("MESHBED_DELAY_FILE".to_string(), me.delay_file.display().to_string()),
    ];
    if state.routed {
        // `meshbed send/recv` find their node's routing daemon here.
        let socket = crate::routers::notice_socket(&EmuState::dir(state.id), node);
        env.push(("MESHBED_ROUTED_SOCKET".to_string(), socket.display().to_string()));
    }
    for (j, n) in state.nodes.iter().enumerate() {
        env.push((format!("MESHBED_NODE_{j}"), n.addr.to_string()));
    }
    env
}

fn mac_string(m: [u8; 6]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_emulation_id() {
        assert_eq!(netns_name(0x0a1f, 12), "mb0a1f-n12");
        assert_eq!(netns_emu_id("mb0a1f-n12"), Some(0x0a1f));
        for other in ["mb0a1f-n", "mb0a1-n1", "mbzzzz-n1", "foo", "mb0a1f-nx"] {
            assert_eq!(netns_emu_id(other), None, "{other}");
        }
        assert!(tap_name(0xffff, 249).len() <= 15);
        assert_eq!(node_addr(0), Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(node_addr(250), Ipv4Addr::new(10, 0, 1, 1));
        assert_eq!(mac_string(node_mac(0x0a1f, 3)), "02:6d:0a:1f:00:03");
    }
}
