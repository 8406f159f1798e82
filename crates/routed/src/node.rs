//! One node's routing engine and everything that carries out what it asks:
//! control packets on the control socket, routes in the kernel, held data
//! packets, notices to the node's transports, and the counters. The
//! simulator's `meshbed_sim::dynamic` does the same on the simulated
//! medium; the rules (which event is which notice, which drop which loss)
//! are the same functions.

use crate::control::ControlSocket;
use crate::kernel::KernelRoutes;
use crate::notices::{NoticeServer, Request};
use crate::queue::{self, Reinjector};
use crate::report::{RoutedReport, MAX_DISCOVERY_TIMES};
use meshbed_core::Instant;
use meshbed_net::linkfeed::LinkFeed;
use meshbed_routing::{DataPacket, Decision, Dest, RouteEvent, RoutingEngine};
use meshbed_sim::dynamic;
use std::collections::HashMap;
use std::io;
use std::net::Ipv4Addr;

pub type NodeId = u32;

/// The mesh's nodes: node i is `addrs[i]`.
#[derive(Clone, Debug)]
pub struct NodeMap {
    addrs: Vec<Ipv4Addr>,
    by_addr: HashMap<Ipv4Addr, NodeId>,
}

impl NodeMap {
    pub fn new(addrs: Vec<Ipv4Addr>) -> Self {
        let by_addr = addrs.iter().enumerate().map(|(i, a)| (*a, i as NodeId)).collect();
        NodeMap { addrs, by_addr }
    }
    pub fn addr(&self, node: NodeId) -> Option<Ipv4Addr> {
        self.addrs.get(node as usize).copied()
    }
    pub fn node(&self, addr: Ipv4Addr) -> Option<NodeId> {
        self.by_addr.get(&addr).copied()
    }
    pub fn addrs(&self) -> &[Ipv4Addr] {
        &self.addrs
    }
}

/// What to do with a queued data packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Let it go; `reroute`: mark it so that the kernel routes it again.
    Accept {
        reroute: bool,
    },
    Drop,
}

/// A held packet: its destination and bytes.
struct Held {
    dst: NodeId,
    ip: Vec<u8>,
}

pub struct Node {
    engine: Box<dyn RoutingEngine + Send>,
    me: NodeId,
    nodes: NodeMap,
    control: ControlSocket,
    kernel: KernelRoutes,
    reinjector: Option<Reinjector>,
    notices: Option<NoticeServer>,
    held: HashMap<u64, Held>,
    next_id: u64,
    /// The power the last frame from each neighbour arrived with (the
    /// link feed), given with its control packets (seed 003 §3.2).
    last_power_dbm: HashMap<NodeId, f64>,
    /// The link feed reports each neighbour's power: without one there is
    /// no power to give.
    feed_power: bool,
    macs: HashMap<Vec<u8>, Option<NodeId>>,
    /// Discoveries under way: destination → when the first packet was held.
    discovering: HashMap<NodeId, Instant>,
    link_rate_bps: u64,
    start: std::time::Instant,
    pub report: RoutedReport,
}

impl Node {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        engine: Box<dyn RoutingEngine + Send>,
        nodes: NodeMap,
        control: ControlSocket,
        kernel: KernelRoutes,
        reinjector: Option<Reinjector>,
        notices: Option<NoticeServer>,
        feed_power: bool,
        link_rate_bps: u64,
        report: RoutedReport,
    ) -> Self {
        Node {
            me: engine.node(),
            engine,
            nodes,
            control,
            kernel,
            reinjector,
            notices,
            held: HashMap::new(),
            next_id: 1,
            last_power_dbm: HashMap::new(),
            feed_power,
            macs: HashMap::new(),
            discovering: HashMap::new(),
            link_rate_bps,
            start: std::time::Instant::now(),
            report,
        }
    }

    /// Engine time: nanoseconds since the daemon started.
    pub fn now(&self) -> Instant {
        Instant::from_nanos(self.start.elapsed().as_nanos() as u64)
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        self.engine.poll_timeout()
    }

    pub fn control(&self) -> &ControlSocket {
        &self.control
    }

    pub fn notices(&self) -> Option<&NoticeServer> {
        self.notices.as_ref()
    }

    /// Lets the engine start (first HELLOs).
    pub fn start(&mut self) -> io::Result<()> {
        let now = self.now();
        self.flush(now)
    }

    /// Runs the engine's timers if due.
    pub fn on_timeout(&mut self) -> io::Result<()> {
        let now = self.now();
        if self.engine.poll_timeout().is_some_and(|t| t <= now) {
            self.engine.handle_timeout(now);
        }
        self.flush(now)
    }

    /// A control packet from `from`.
    pub fn on_control(&mut self, from: Ipv4Addr, bytes: &[u8]) -> io::Result<()> {
        let Some(node) = self.nodes.node(from).filter(|&n| n != self.me) else {
            if Some(from) != self.nodes.addr(self.me) {
                self.report.control_from_strangers += 1;
            }
            return Ok(());
        };
        let now = self.now();
        // Without a feed that reports signal strength (none, or the
        // host's on an interface that is not Wi-Fi) there is no filter to
        // apply: the daemon refuses a threshold then, or warns that it is
        // not applied (crate::RoutedOptions::check, crate::daemon).
        let power =
            if self.feed_power { self.last_power_dbm.get(&node).copied().unwrap_or(f64::NEG_INFINITY) } else { 0.0 };
        self.engine.handle_control(now, node, power, bytes);
        self.flush(now)
    }

    /// What the radio reported.
    pub fn on_feed(&mut self, feed: LinkFeed) -> io::Result<()> {
        let now = self.now();
        match feed {
            LinkFeed::Heard { neighbour, rx_power_dbm } => {
                self.report.link_feed.heard += 1;
                self.last_power_dbm.insert(neighbour, rx_power_dbm);
                self.engine.on_frame_heard(now, neighbour, rx_power_dbm);
            }
            LinkFeed::Failed { neighbour } => {
                self.report.link_feed.failed += 1;
                self.report.net.link_failures += 1;
                self.engine.on_link_failure(now, neighbour);
            }
        }
        self.flush(now)
    }

    /// A data packet from the queue: `hook` where it was taken, `hw_addr`
    /// the link-layer source of a received one.
    pub fn on_packet(&mut self, hook: u8, hw_addr: Option<&[u8]>, ip: &[u8]) -> io::Result<Verdict> {
        let Some((src_addr, dst_addr)) = queue::ipv4_ends(ip) else { return Ok(Verdict::Accept { reroute: false }) };
        let (Some(src), Some(dst)) = (self.nodes.node(src_addr), self.nodes.node(dst_addr)) else {
            // Not between two mesh nodes (a broadcast, a stranger): not
            // routing's business.
            self.report.data.passed += 1;
            return Ok(Verdict::Accept { reroute: false });
        };
        let local = hook == queue::NF_INET_LOCAL_OUT;
        let prev_hop = if local { None } else { hw_addr.and_then(|m| self.node_of_mac(m)) };
        if !local && prev_hop.is_none() {
            // A forwarded packet from a neighbour the kernel does not know:
            // routing would take it for this node's own.
            self.report.data.unknown_prev_hop += 1;
            return Ok(Verdict::Drop);
        }
        let now = self.now();
        let id = self.next_id;
        self.next_id += 1;
        let decision = self.engine.route(now, DataPacket { id, src, dst, prev_hop, header: &[] });
        let verdict = match decision {
            Decision::Forward { next_hop, .. } => {
                self.install(dst, next_hop)?;
                self.report.data.forwarded += 1;
                if !local {
                    self.report.net.forwarded += 1;
                }
                Verdict::Accept { reroute: local }
            }
            Decision::Hold => {
                self.report.net.held += 1;
                self.discovering.entry(dst).or_insert(now);
                self.held.insert(id, Held { dst, ip: ip.to_vec() });
                Verdict::Drop
            }
            Decision::Drop(reason) => {
                self.report.net.drops.count(dynamic::loss(reason));
                Verdict::Drop
            }
        };
        self.flush(now)?;
        Ok(verdict)
    }

    /// What the transports asked.
    pub fn on_notice_socket(&mut self) -> io::Result<()> {
        let Some(server) = &mut self.notices else { return Ok(()) };
        server.accept();
        let requests = server.read();
        let now = self.now();
        for r in requests {
            match r {
                Request::PeerUnresponsive(peer) => {
                    if let Some(p) = self.nodes.node(peer) {
                        self.report.peer_unresponsive += 1;
                        self.engine.peer_unresponsive(now, p);
                    }
                }
            }
        }
        self.flush(now)
    }

    /// The node whose link-layer address is `mac`, by the kernel's
    /// neighbour table.
    pub fn node_of_mac(&mut self, mac: &[u8]) -> Option<NodeId> {
        if let Some(n) = self.macs.get(mac) {
            return *n;
        }
        let node = self.kernel.neighbour_by_mac(mac).ok().flatten().and_then(|a| self.nodes.node(a));
        // Unknown MACs are asked again (ARP may learn them); known ones kept.
        if node.is_some() {
            self.macs.insert(mac.to_vec(), node);
        }
        node
    }

    fn install(&mut self, dst: NodeId, next_hop: NodeId) -> io::Result<()> {
        let (Some(d), Some(nh)) = (self.nodes.addr(dst), self.nodes.addr(next_hop)) else { return Ok(()) };
        self.kernel.set(d, nh)
    }

    /// Carries out everything the engine asked for.
    fn flush(&mut self, now: Instant) -> io::Result<()> {
        while let Some(tx) = self.engine.poll_transmit(now) {
            let to = match tx.dest {
                Dest::Broadcast => None,
                Dest::Unicast(n) => self.nodes.addr(n),
            };
            if let Err(e) = self.control.send(to, &tx.bytes) {
                self.report.control_send_errors += 1;
                self.report.last_error = Some(e.to_string());
            }
        }
        while let Some(ev) = self.engine.poll_event() {
            if let Some((peer, notice)) = dynamic::route_notice(&ev) {
                if let (Some(server), Some(addr)) = (&mut self.notices, self.nodes.addr(peer)) {
                    server.route(addr, notice.into());
                }
            }
            match ev {
                RouteEvent::Found { dst, next_hop, .. } | RouteEvent::Changed { dst, next_hop, .. } => {
                    self.report.net.route_changes += 1;
                    self.install(dst, next_hop)?;
                }
                RouteEvent::Lost { dst } => {
                    self.report.net.routes_lost += 1;
                    if let Some(d) = self.nodes.addr(dst) {
                        self.kernel.remove(d)?;
                    }
                }
                RouteEvent::LinkBroken { .. } => {}
                RouteEvent::Release { id, next_hop, .. } => {
                    let Some(h) = self.held.remove(&id) else { continue };
                    self.install(h.dst, next_hop)?;
                    if let Some(since) = self.discovering.remove(&h.dst) {
                        let took_ns = now.saturating_since(since).as_nanos();
                        self.report.net.discoveries.record(took_ns);
                        if self.report.discovery_times_ms.len() < MAX_DISCOVERY_TIMES {
                            self.report.discovery_times_ms.push(took_ns as f64 / 1e6);
                        }
                    }
                    self.report.data.released += 1;
                    match &self.reinjector {
                        Some(r) => {
                            if r.send(&h.ip).is_err() {
                                self.report.data.reinject_errors += 1;
                            }
                        }
                        None => self.report.data.reinject_errors += 1,
                    }
                }
                RouteEvent::DropHeld { id, reason } => {
                    let Some(h) = self.held.remove(&id) else { continue };
                    self.report.net.drops.count(dynamic::loss(reason));
                    if !self.held.values().any(|o| o.dst == h.dst) && self.discovering.remove(&h.dst).is_some() {
                        self.report.net.discoveries.failed += 1;
                    }
                }
            }
        }
        let stats = self.engine.stats();
        self.report.net.control_packets_sent = stats.control_packets_sent;
        self.report.net.control_bytes_sent = stats.control_bytes_sent;
        self.report.engine = stats.clone();
        self.report.kernel = self.kernel.counters.clone();
        if let Some(server) = &mut self.notices {
            let (engine, nodes, rate) = (&self.engine, &self.nodes, self.link_rate_bps);
            server.update_paths(&mut |peer| {
                let p = nodes.node(peer)?;
                engine.path_info(p).map(|q| dynamic::path_info(&q, rate).into())
            });
            self.report.notices = server.counters.clone();
        }
        self.report.held_now = self.held.len() as u64;
        Ok(())
    }

    /// The report as it stands, with the routes installed now.
    pub fn snapshot(&mut self) -> RoutedReport {
        let mut r = self.report.clone();
        r.uptime_s = self.start.elapsed().as_secs_f64();
        r.routes = self
            .kernel
            .installed()
            .iter()
            .map(|(d, nh)| crate::report::InstalledRoute { dst: *d, next_hop: *nh })
            .collect();
        r
    }

    /// Removes the routes this daemon installed.
    pub fn flush_routes(&mut self) {
        self.kernel.flush();
    }
}
