//! A toy network to test routing engines without the radio model: links
//! are up or down (and carry a signal strength), every control packet and
//! data hop takes `hop_delay`, a unicast over a down link (or to a node
//! outside the network, which forged control packets can name) comes back to
//! the sender as a link failure. Virtual time, deterministic; the same
//! [`RoutingEngine`] surface the simulator drives.

use crate::{DataPacket, Decision, Dest, DropReason, NodeId, RouteEvent, RoutingEngine};
use meshbed_core::{Duration, EventQueue, Instant};
use std::collections::HashMap;

/// What the network did with a data packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fate {
    InFlight,
    Held,
    Delivered {
        at: Instant,
        hops: u32,
    },
    Dropped(DropReason),
    /// Sent over a link that is down (the MAC would have given up).
    LostOnLink {
        from: NodeId,
        to: NodeId,
    },
    /// More hops than nodes: a loop.
    Looped,
}

#[derive(Clone, Debug)]
struct Data {
    src: NodeId,
    dst: NodeId,
    header: Vec<u8>,
    hops: u32,
}

#[derive(Clone, Debug)]
enum Ev {
    Control { to: NodeId, from: NodeId, bytes: Vec<u8> },
    LinkFailure { at_node: NodeId, neighbour: NodeId },
    DataArrives { id: u64, at_node: NodeId, from: NodeId },
    Timer { node: NodeId },
}

/// `n` engines on a graph of links.
pub struct Net<E: RoutingEngine> {
    pub engines: Vec<E>,
    /// `up[a][b]`: b hears a.
    pub up: Vec<Vec<bool>>,
    /// Signal strength b receives from a, dBm.
    pub rx_power_dbm: Vec<Vec<f64>>,
    pub hop_delay: Duration,
    queue: EventQueue<Ev>,
    now: Instant,
    data: HashMap<u64, Data>,
    pub fates: HashMap<u64, Fate>,
    next_id: u64,
    /// Every event every engine reported, with its node and time.
    pub events: Vec<(Instant, NodeId, RouteEvent)>,
    /// Control packets sent, per node.
    pub control_sent: Vec<u64>,
    /// The timer each node has in the queue (one at a time).
    timer_at: Vec<Option<Instant>>,
}

impl<E: RoutingEngine> Net<E> {
    /// Engines built by `make(node)`; links up between the pairs `links`
    /// (both ways) at −60 dBm.
    pub fn new(n: usize, links: &[(NodeId, NodeId)], make: impl Fn(NodeId) -> E) -> Self {
        let mut up = vec![vec![false; n]; n];
        for &(a, b) in links {
            up[a as usize][b as usize] = true;
            up[b as usize][a as usize] = true;
        }
        let mut net = Net {
            engines: (0..n as NodeId).map(make).collect(),
            up,
            rx_power_dbm: vec![vec![-60.0; n]; n],
            hop_delay: Duration::from_millis(1),
            queue: EventQueue::new(),
            now: Instant::ZERO,
            data: HashMap::new(),
            fates: HashMap::new(),
            next_id: 0,
            events: Vec::new(),
            control_sent: vec![0; n],
            timer_at: vec![None; n],
        };
        for node in 0..n as NodeId {
            net.flush(node);
        }
        net
    }

    /// A chain 0 – 1 – … – (n − 1).
    pub fn chain(n: usize, make: impl Fn(NodeId) -> E) -> Self {
        let links: Vec<_> = (1..n as NodeId).map(|i| (i - 1, i)).collect();
        Self::new(n, &links, make)
    }

    pub fn now(&self) -> Instant {
        self.now
    }

    /// Sets the link between `a` and `b` (both ways).
    pub fn set_link(&mut self, a: NodeId, b: NodeId, up: bool) {
        self.up[a as usize][b as usize] = up;
        self.up[b as usize][a as usize] = up;
    }

    /// Sends a data packet from `src` to `dst` now; its id.
    pub fn send(&mut self, src: NodeId, dst: NodeId) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.data.insert(id, Data { src, dst, header: Vec::new(), hops: 0 });
        self.fates.insert(id, Fate::InFlight);
        self.at_node(id, src, None);
        id
    }

    /// A data packet from `src` to `dst` arriving at `node` from neighbour
    /// `from` with the routing header `header` (as a forwarder sees one,
    /// which need not be honest); its id.
    pub fn arrive(&mut self, src: NodeId, dst: NodeId, node: NodeId, from: NodeId, header: Vec<u8>) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.data.insert(id, Data { src, dst, header, hops: 1 });
        self.fates.insert(id, Fate::InFlight);
        self.at_node(id, node, Some(from));
        id
    }

    /// Calls `f` on `node`'s engine now with something the network does not
    /// make itself (a control packet from outside it or forged, a MAC or
    /// transport notice), then carries out what the engine asks for, as
    /// after any event.
    pub fn with_engine(&mut self, node: NodeId, f: impl FnOnce(&mut E, Instant)) {
        f(&mut self.engines[node as usize], self.now);
        self.flush(node);
    }

    /// Whether `b` hears `a`; never for a node outside the network.
    fn is_up(&self, a: NodeId, b: NodeId) -> bool {
        self.up.get(a as usize).and_then(|row| row.get(b as usize)).copied().unwrap_or(false)
    }

    pub fn fate(&self, id: u64) -> &Fate {
        &self.fates[&id]
    }

    /// Runs until `until` (events at exactly `until` included).
    pub fn run_until(&mut self, until: Instant) {
        while let Some(t) = self.queue.peek_time() {
            if t > until {
                break;
            }
            let (t, ev) = self.queue.pop().expect("peeked");
            self.now = t;
            match ev {
                Ev::Control { to, from, bytes } => {
                    let p = self.rx_power_dbm[from as usize][to as usize];
                    self.engines[to as usize].handle_control(t, from, p, &bytes);
                    self.flush(to);
                }
                Ev::LinkFailure { at_node, neighbour } => {
                    self.engines[at_node as usize].on_link_failure(t, neighbour);
                    self.flush(at_node);
                }
                Ev::DataArrives { id, at_node, from } => {
                    let p = self.rx_power_dbm[from as usize][at_node as usize];
                    self.engines[at_node as usize].on_frame_heard(t, from, p);
                    self.at_node(id, at_node, Some(from));
                }
                Ev::Timer { node } => {
                    if self.timer_at[node as usize] != Some(t) {
                        continue; // moved since it was scheduled
                    }
                    self.timer_at[node as usize] = None;
                    if self.engines[node as usize].poll_timeout().is_some_and(|d| d <= t) {
                        self.engines[node as usize].handle_timeout(t);
                    }
                    self.flush(node);
                }
            }
        }
        self.now = self.now.max(until);
    }

    /// Runs for `d` more.
    pub fn run_for(&mut self, d: Duration) {
        let until = self.now + d;
        self.run_until(until);
    }

    fn at_node(&mut self, id: u64, node: NodeId, from: Option<NodeId>) {
        let d = self.data.get_mut(&id).expect("known packet");
        if node == d.dst {
            self.fates.insert(id, Fate::Delivered { at: self.now, hops: d.hops });
            return;
        }
        if d.hops as usize > self.engines.len() {
            self.fates.insert(id, Fate::Looped);
            return;
        }
        let decision = {
            let packet = DataPacket { id, src: d.src, dst: d.dst, prev_hop: from, header: &d.header };
            self.engines[node as usize].route(self.now, packet)
        };
        match decision {
            Decision::Forward { next_hop, header } => self.hop(id, node, next_hop, header),
            Decision::Hold => {
                self.fates.insert(id, Fate::Held);
            }
            Decision::Drop(r) => {
                self.fates.insert(id, Fate::Dropped(r));
            }
        }
        self.flush(node);
    }

    fn hop(&mut self, id: u64, from: NodeId, to: NodeId, header: Option<Vec<u8>>) {
        let d = self.data.get_mut(&id).expect("known packet");
        if let Some(h) = header {
            d.header = h;
        }
        d.hops += 1;
        let at = self.now + self.hop_delay;
        if self.is_up(from, to) {
            self.fates.insert(id, Fate::InFlight);
            self.queue.schedule(at, Ev::DataArrives { id, at_node: to, from });
        } else {
            self.fates.insert(id, Fate::LostOnLink { from, to });
            self.queue.schedule(at, Ev::LinkFailure { at_node: from, neighbour: to });
        }
    }

    /// Carries out what `node`'s engine asks for: control packets, events,
    /// its next timer.
    fn flush(&mut self, node: NodeId) {
        let now = self.now;
        let at = now + self.hop_delay;
        while let Some(tx) = self.engines[node as usize].poll_transmit(now) {
            self.control_sent[node as usize] += 1;
            match tx.dest {
                Dest::Broadcast => {
                    for to in 0..self.engines.len() as NodeId {
                        if to != node && self.is_up(node, to) {
                            self.queue.schedule(at, Ev::Control { to, from: node, bytes: tx.bytes.clone() });
                        }
                    }
                }
                Dest::Unicast(to) => {
                    if self.is_up(node, to) {
                        self.queue.schedule(at, Ev::Control { to, from: node, bytes: tx.bytes });
                    } else {
                        self.queue.schedule(at, Ev::LinkFailure { at_node: node, neighbour: to });
                    }
                }
            }
        }
        while let Some(ev) = self.engines[node as usize].poll_event() {
            self.events.push((now, node, ev.clone()));
            match ev {
                RouteEvent::Release { id, next_hop, header } => self.hop(id, node, next_hop, header),
                RouteEvent::DropHeld { id, reason } => {
                    self.fates.insert(id, Fate::Dropped(reason));
                }
                _ => {}
            }
        }
        if let Some(at) = self.engines[node as usize].poll_timeout().map(|t| t.max(now)) {
            if Some(at) != self.timer_at[node as usize] {
                self.timer_at[node as usize] = Some(at);
                self.queue.schedule(at, Ev::Timer { node });
            }
        }
    }
}
