//! The network layer at a node that sends or forwards a packet: a relay
//! stamps a transport datagram (seed 002 §4.1) and hands it to its MAC
//! towards the next hop, or to the routing engine; with `[flows.atp]
//! relay_forwarding_delay_s` it holds the packet that long first (a
//! user-space relay daemon's round trip, seed 001 §3.2). The same slots
//! hold a packet at its destination for `[flows.tcp] endpoint_delay_s`.

use crate::net_stats::{Loss, NetStats};
use crate::{Net, Packet, Routed, Router};
use meshbed_core::Instant;
use meshbed_radio::{Addr, NodeId};

/// Packets relays hold before forwarding them (`[flows.atp]
/// relay_forwarding_delay_s`), or destinations before their engine takes
/// them (`[flows.tcp] endpoint_delay_s`), in slots that their `Forward`
/// events name;
/// a freed slot is reused, so memory stays at the most held at once.
#[derive(Default)]
pub(crate) struct HeldForwards {
    slots: Vec<Option<(NodeId, Packet)>>,
    free: Vec<u32>,
}

impl HeldForwards {
    pub(crate) fn hold(&mut self, node: NodeId, pkt: Packet) -> u32 {
        match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some((node, pkt));
                slot
            }
            None => {
                self.slots.push(Some((node, pkt)));
                (self.slots.len() - 1) as u32
            }
        }
    }

    pub(crate) fn take(&mut self, slot: u32) -> Option<(NodeId, Packet)> {
        let held = self.slots.get_mut(slot as usize)?.take();
        if held.is_some() {
            self.free.push(slot);
        }
        held
    }
}
/// Hands `pkt` to `node`'s MAC towards its next hop, or to routing.
pub(crate) fn route_out(
    net: &mut Net,
    router: &mut Router,
    stats: &mut NetStats,
    now: Instant,
    node: NodeId,
    mut pkt: Packet,
) -> Routed {
    if pkt.ttl == 0 {
        stats.lost(node, &pkt, Loss::TtlExpired);
        return Routed::Dropped;
    }
    pkt.ttl -= 1;
    if let Some(d) = &mut router.dynamic {
        return d.route(net, stats, now, node, pkt);
    }
    match router.table.next_hop(node, pkt.dst) {
        Some(next) => match net.enqueue(now, node, Addr::Unicast(next), pkt) {
            true => Routed::Queued,
            false => Routed::Dropped,
        },
        None => {
            stats.lost(node, &pkt, Loss::NoRoute);
            Routed::Dropped
        }
    }
}

/// Whether a transport datagram is feedback (`proto::wire`'s rule).
pub(crate) fn is_feedback(datagram: &[u8]) -> bool {
    meshbed_proto::wire::Packet::new_checked(datagram).is_ok_and(|p| p.is_feedback())
}

/// Stamps a transport datagram that `node` is about to queue, with the
/// node's relay of the flow's class (seed 002 §4.1). The node's other
/// relays only learn that the channel is in use.
pub(crate) fn stamp(
    net: &mut Net,
    now: Instant,
    node: NodeId,
    class: usize,
    datagram: &mut [u8],
) -> Result<(), String> {
    let relays = net.relays_mut(node);
    let stamped = relays[class].stamp(now, datagram).map(|_| ());
    for (k, relay) in relays.iter_mut().enumerate() {
        if k != class {
            relay.note_channel_busy(now);
        }
    }
    // Our own engines wrote the datagram: a parse failure is a bug.
    stamped.map_err(|e| format!("node {node} could not stamp a datagram: {e}"))
}
