//! The network layer's counters (issue 11 §4): per node, per flow, and the
//! route discoveries under way. Every drop, hold and release of a data
//! packet is counted here, once, by the call that carries it out.

use crate::dynamic::CONTROL_FLOW;
use crate::Packet;
use meshbed_core::Instant;
use meshbed_radio::NodeId;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// A fingerprint of the nodes a packet went through, in order, kept both
/// ways: two packets that went through the same nodes in the same order
/// have the same [`PathPrint::forward`], and a packet that went through
/// them in the opposite order has it as its [`PathPrint::reversed`] — so a
/// flow's destination can tell when its data started to take another path
/// (seed 002 §2.3, Fig. 4b), and whether its feedback comes back along the
/// data's path (§2.5 (ii)). A polynomial hash over node ids: forward is
/// Σ c(aᵢ)·Pᵏ⁻ⁱ (Horner), reversed Σ c(aᵢ)·Pⁱ, which for the nodes in the
/// other order is the same sum.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PathPrint {
    forward: u64,
    reversed: u64,
    /// Pᵏ⁺¹ for a path of k + 1 nodes: the weight of the next node in `reversed`.
    weight: u64,
}

/// The polynomial's base (odd, so every power is a distinct odd number).
const PATH_BASE: u64 = 0x0000_0100_0000_01b3;

impl PathPrint {
    /// The path of a packet at its source.
    pub fn start(src: NodeId) -> PathPrint {
        let c = Self::code(src);
        PathPrint { forward: c, reversed: c, weight: PATH_BASE }
    }

    /// The path extended by `node`.
    #[must_use]
    pub fn step(self, node: NodeId) -> PathPrint {
        let c = Self::code(node);
        PathPrint {
            forward: self.forward.wrapping_mul(PATH_BASE).wrapping_add(c),
            reversed: self.reversed.wrapping_add(c.wrapping_mul(self.weight)),
            weight: self.weight.wrapping_mul(PATH_BASE),
        }
    }

    /// The fingerprint of the nodes in the order the packet went through them.
    pub fn forward(self) -> u64 {
        self.forward
    }

    /// The fingerprint of the same nodes in the opposite order: the
    /// `forward` of a packet that went back along this path.
    pub fn reversed(self) -> u64 {
        self.reversed
    }

    /// Node 0 counts (a zero term would make `[0, 1]` and `[1]` alike).
    fn code(node: NodeId) -> u64 {
        u64::from(node) + 1
    }
}

/// Why the network layer lost a data packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Loss {
    /// No route, and routing does not discover one (static tables,
    /// proactive routing), or discovery gave up.
    NoRoute,
    /// Held longer than the discovery buffer allows.
    DiscoveryTimeout,
    /// The discovery buffer was full.
    DiscoveryOverflow,
    /// Its hop limit ran out (a routing loop).
    TtlExpired,
    /// The interface queue was full.
    QueueOverflow,
    /// The MAC gave up at its retry limit (and routing did not salvage it).
    RetryLimit,
}

/// Who saw the data packets that [`NetCounters::forwarded`] and
/// [`NetCounters::drops`] count: what is not seen is not measured, and a
/// report shows it as such rather than as a 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DataPathCounting {
    /// The simulator's network layer: every data packet at every node,
    /// every loss by its cause.
    Simulator,
    /// Routing daemons that hold the data path (the emulator's AODV, on an
    /// NFQUEUE): the packets they forward and their routing decisions'
    /// drops (no route, discovery timeout or overflow). The kernel's and the
    /// MAC's losses (TTL, queue overflow, retry limit) go unseen.
    RoutingDaemons,
    /// Nobody: the kernel forwarded and dropped on the routes it was given
    /// (the emulator's static routes, OLSR's kernel routes).
    Kernel,
}

impl DataPathCounting {
    /// Whether [`NetCounters::forwarded`] counted the packets forwarded.
    pub fn counts_forwarded(self) -> bool {
        self != DataPathCounting::Kernel
    }

    /// Whether [`Drops`] counted the losses of cause `loss`.
    pub fn counts(self, loss: Loss) -> bool {
        match self {
            DataPathCounting::Simulator => true,
            DataPathCounting::RoutingDaemons => {
                matches!(loss, Loss::NoRoute | Loss::DiscoveryTimeout | Loss::DiscoveryOverflow)
            }
            DataPathCounting::Kernel => false,
        }
    }
}

/// Data packets lost, by cause.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Drops {
    pub no_route: u64,
    pub discovery_timeout: u64,
    pub discovery_overflow: u64,
    pub ttl_expired: u64,
    pub queue_overflow: u64,
    pub retry_limit: u64,
}

impl Drops {
    pub fn count(&mut self, loss: Loss) {
        let c = match loss {
            Loss::NoRoute => &mut self.no_route,
            Loss::DiscoveryTimeout => &mut self.discovery_timeout,
            Loss::DiscoveryOverflow => &mut self.discovery_overflow,
            Loss::TtlExpired => &mut self.ttl_expired,
            Loss::QueueOverflow => &mut self.queue_overflow,
            Loss::RetryLimit => &mut self.retry_limit,
        };
        *c += 1;
    }

    pub fn total(&self) -> u64 {
        self.no_route
            + self.discovery_timeout
            + self.discovery_overflow
            + self.ttl_expired
            + self.queue_overflow
            + self.retry_limit
    }

    pub fn add(&mut self, o: &Drops) {
        self.no_route += o.no_route;
        self.discovery_timeout += o.discovery_timeout;
        self.discovery_overflow += o.discovery_overflow;
        self.ttl_expired += o.ttl_expired;
        self.queue_overflow += o.queue_overflow;
        self.retry_limit += o.retry_limit;
    }
}

/// Route discoveries timed as seed 003 §5.2 times them, from the driver's
/// side so that every reactive protocol is timed alike: from the first
/// packet held for a destination to the release of a packet for it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Discoveries {
    /// Discoveries that ended with a route.
    pub completed: u64,
    /// Discoveries whose held packets were all dropped.
    pub failed: u64,
    pub total_ns: u64,
    pub max_ns: u64,
}

impl Discoveries {
    pub fn record(&mut self, took_ns: u64) {
        self.completed += 1;
        self.total_ns += took_ns;
        self.max_ns = self.max_ns.max(took_ns);
    }

    /// Mean time of the completed discoveries, seconds.
    pub fn mean_s(&self) -> Option<f64> {
        (self.completed > 0).then(|| self.total_ns as f64 / self.completed as f64 / 1e9)
    }

    pub fn add(&mut self, o: &Discoveries) {
        self.completed += o.completed;
        self.failed += o.failed;
        self.total_ns += o.total_ns;
        self.max_ns = self.max_ns.max(o.max_ns);
    }
}

/// Network-layer counters of one node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NetCounters {
    pub forwarded: u64,
    /// Data packets this node lost, by cause (`retry_limit`: the MAC gave
    /// up on them and routing, if any, did not salvage them).
    pub drops: Drops,
    /// Data packets a routing engine held while it discovered a route.
    pub held: u64,
    /// Route discoveries this node waited for, and how long.
    pub discoveries: Discoveries,
    /// Routing control packets and their bytes sent by this node.
    pub control_packets_sent: u64,
    pub control_bytes_sent: u64,
    /// Frames the MAC gave up on (retry limit) with routing engines: link failures.
    pub link_failures: u64,
    /// Routes found or changed, and routes lost, at this node.
    pub route_changes: u64,
    pub routes_lost: u64,
}

impl NetCounters {
    /// Routing control packets sent per data packet delivered (Broch et
    /// al.'s normalised routing load); `None` with nothing delivered. One
    /// formula for the simulator's report and the emulator's.
    pub fn control_per_delivered(&self, delivered_packets: u64) -> Option<f64> {
        (delivered_packets > 0).then(|| self.control_packets_sent as f64 / delivered_packets as f64)
    }

    /// Adds `o`'s counts (a total over nodes; `discoveries.max_ns` is the
    /// larger of the two).
    pub fn add(&mut self, o: &NetCounters) {
        self.forwarded += o.forwarded;
        self.drops.add(&o.drops);
        self.held += o.held;
        self.discoveries.add(&o.discoveries);
        self.control_packets_sent += o.control_packets_sent;
        self.control_bytes_sent += o.control_bytes_sent;
        self.link_failures += o.link_failures;
        self.route_changes += o.route_changes;
        self.routes_lost += o.routes_lost;
    }
}

/// What the network layer did to one flow's packets.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowNet {
    /// Its data packets (both directions) lost, by cause.
    pub drops: Drops,
    /// Route discoveries its packets waited for (at either end).
    pub discoveries: Discoveries,
}

/// The counters of a run.
#[derive(Default)]
pub(crate) struct NetStats {
    pub nodes: Vec<NetCounters>,
    pub flows: Vec<FlowNet>,
    /// Discoveries under way: (node, destination) → when the first packet
    /// was held, and its flow.
    discovering: HashMap<(NodeId, NodeId), (Instant, u32)>,
}

impl NetStats {
    pub fn new(nodes: usize, flows: usize) -> Self {
        NetStats {
            nodes: vec![NetCounters::default(); nodes],
            flows: vec![FlowNet::default(); flows],
            ..Default::default()
        }
    }

    fn flow_mut(&mut self, flow: u32) -> Option<&mut FlowNet> {
        (flow != CONTROL_FLOW).then(|| self.flows.get_mut(flow as usize)).flatten()
    }

    /// `node` lost data packet `pkt` for `loss`.
    pub fn lost(&mut self, node: NodeId, pkt: &Packet, loss: Loss) {
        if pkt.control {
            return;
        }
        self.nodes[node as usize].drops.count(loss);
        if let Some(f) = self.flow_mut(pkt.flow) {
            f.drops.count(loss);
        }
    }

    /// Routing at `node` holds `pkt` while it discovers a route.
    pub fn held(&mut self, now: Instant, node: NodeId, pkt: &Packet) {
        self.nodes[node as usize].held += 1;
        self.discovering.entry((node, pkt.dst)).or_insert((now, pkt.flow));
    }

    /// Routing at `node` released a held packet: a discovery under way for
    /// its destination ends.
    pub fn released(&mut self, now: Instant, node: NodeId, pkt: &Packet) {
        if let Some((since, flow)) = self.discovering.remove(&(node, pkt.dst)) {
            let took_ns = now.saturating_since(since).as_nanos();
            self.nodes[node as usize].discoveries.record(took_ns);
            if let Some(f) = self.flow_mut(flow) {
                f.discoveries.record(took_ns);
            }
        }
    }

    /// Routing at `node` dropped a held packet; if it was the last one held
    /// for its destination, the discovery failed.
    pub fn dropped_held(&mut self, node: NodeId, pkt: &Packet, loss: Loss, still_held_for_dst: bool) {
        self.lost(node, pkt, loss);
        if !still_held_for_dst {
            if let Some((_, flow)) = self.discovering.remove(&(node, pkt.dst)) {
                self.nodes[node as usize].discoveries.failed += 1;
                if let Some(f) = self.flow_mut(flow) {
                    f.discoveries.failed += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_backwards_has_the_forward_print_of_the_path() {
        let print = |nodes: &[NodeId]| nodes[1..].iter().fold(PathPrint::start(nodes[0]), |p, &n| p.step(n));
        let there = print(&[0, 4, 7, 2]);
        assert_eq!(there.reversed(), print(&[2, 7, 4, 0]).forward());
        assert_eq!(there.forward(), print(&[2, 7, 4, 0]).reversed());
        assert_eq!(there, print(&[0, 4, 7, 2]));
        // Another path, another order, a prefix: other prints.
        for other in [&[0, 5, 7, 2][..], &[0, 7, 4, 2], &[0, 4, 7], &[4, 7, 2]] {
            assert_ne!(print(other).forward(), there.forward(), "{other:?}");
            assert_ne!(print(other).forward(), there.reversed(), "{other:?}");
        }
        // A palindrome is its own reverse; a single node too.
        assert_eq!(print(&[3, 1, 3]).forward(), print(&[3, 1, 3]).reversed());
        assert_eq!(PathPrint::start(9).forward(), PathPrint::start(9).reversed());
    }
}
