//! How long the nodes' stacks take to forward a packet: from the end of its
//! reception at a relay (the model delivers it to the relay's TAP) to the
//! moment the relay's stack hands it back to the medium towards the next
//! hop. The simulator's relays forward at once; the emulator's cross the
//! kernel, netfilter's queue and the user-space relay daemon (seed 001
//! §3.2's relay path), and the difference changes what the MAC does with
//! the frame (docs/RESULTS.md, issue 24). `[flows.atp]
//! relay_forwarding_delay_s` gives the simulator such a delay; this
//! measures the emulator's, so the two can be set side by side.
//!
//! A forwarded packet is matched to its reception by what a relay does not
//! rewrite: the IP addresses, protocol and length, and the IP payload
//! except the bytes a relay stamps (`wire::RELAY_WRITTEN`, under UDP).

use crate::realtime::{Histogram, ETH_HEADER_BYTES};
use meshbed_core::Instant;
use meshbed_radio::NodeId;
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::net::Ipv4Addr;

/// Receptions waiting for their forward, at most this many: a relay that
/// drops what it received (no route, a full queue) leaves its entry behind,
/// so the table is emptied when it is full rather than grown without bound.
const MAX_PENDING: usize = 1 << 16;

/// Receptions at relays, and the measured forwarding delays.
#[derive(Clone, Debug, Default)]
pub struct ForwardingDelay {
    pending: HashMap<(NodeId, u64), Instant>,
    /// Reception end → handed back to the medium, every matched forward.
    pub delay: Histogram,
    /// Times the table was full and emptied (its receptions then go
    /// unmatched).
    pub flushes: u64,
}

impl ForwardingDelay {
    /// `frame` reached `node` at `at`; if it is addressed past `node`
    /// (`node_addr` is the node's own IP address), a forward may follow.
    pub fn delivered(&mut self, node: NodeId, node_addr: Ipv4Addr, at: Instant, frame: &[u8]) {
        let Some((dst, key)) = ip_key(frame) else { return };
        if dst == node_addr || dst.is_broadcast() || dst.is_multicast() {
            return;
        }
        if self.pending.len() >= MAX_PENDING {
            self.pending.clear();
            self.flushes += 1;
        }
        self.pending.insert((node, key), at);
    }

    /// `node`'s stack sent `frame` at `at`: if it is a packet the node
    /// received, its forwarding delay is recorded.
    pub fn sent(&mut self, node: NodeId, at: Instant, frame: &[u8]) {
        let Some((_, key)) = ip_key(frame) else { return };
        if let Some(received) = self.pending.remove(&(node, key)) {
            self.delay.record(at.saturating_since(received));
        }
    }
}

/// The IPv4 destination of an Ethernet frame, and a hash of what stays the
/// same from hop to hop.
fn ip_key(frame: &[u8]) -> Option<(Ipv4Addr, u64)> {
    if frame.get(12..14)? != meshbed_sim::capture::ETHERTYPE_IPV4.to_be_bytes() {
        return None;
    }
    let ip = frame.get(ETH_HEADER_BYTES..)?;
    if ip.first()? >> 4 != 4 {
        return None;
    }
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([*ip.get(2)?, *ip.get(3)?])).min(ip.len());
    let payload = ip.get(ihl..total)?;
    let protocol = *ip.get(9)?;
    let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
    let mut h = DefaultHasher::new();
    (&ip[12..20], protocol, total).hash(&mut h);
    if protocol == 17 && payload.len() >= 8 {
        // UDP: the ports and the datagram without the bytes relays stamp
        // (the UDP checksum changes with them).
        // The pieces between the written ranges, each hashed whole (this
        // runs for every frame in the medium's loop).
        payload[..4].hash(&mut h);
        let datagram = &payload[8..];
        let mut from = 0;
        for written in meshbed_proto::wire::RELAY_WRITTEN {
            datagram.get(from..written.start.min(datagram.len())).hash(&mut h);
            from = written.end;
        }
        datagram.get(from..).hash(&mut h);
    } else {
        payload.hash(&mut h);
    }
    Some((dst, h.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An Ethernet frame holding a UDP datagram from 10.0.0.1 to `dst`.
    fn udp_frame(dst: [u8; 4], ttl: u8, datagram: &[u8]) -> Vec<u8> {
        let mut f = vec![0u8; ETH_HEADER_BYTES];
        f[12..14].copy_from_slice(&meshbed_sim::capture::ETHERTYPE_IPV4.to_be_bytes());
        let total = (20 + 8 + datagram.len()) as u16;
        let mut ip = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, ttl, 17, 0, 0, 10, 0, 0, 1];
        ip[2..4].copy_from_slice(&total.to_be_bytes());
        ip.extend_from_slice(&dst);
        ip.extend_from_slice(&[0x1f, 0x90, 0x1f, 0x91, 0, (8 + datagram.len()) as u8, 0xab, 0xcd]);
        ip.extend_from_slice(datagram);
        f.extend_from_slice(&ip);
        f
    }

    fn at_us(us: u64) -> Instant {
        Instant::from_nanos(us * 1_000)
    }

    #[test]
    fn a_stamped_forward_is_matched_to_its_reception() {
        let relay_addr = Ipv4Addr::new(10, 0, 0, 2);
        let mut datagram: Vec<u8> = (0..60).collect();
        let mut fd = ForwardingDelay::default();
        fd.delivered(1, relay_addr, at_us(1_000), &udp_frame([10, 0, 0, 5], 64, &datagram));
        // The relay stamps N_h and D_max, the kernel takes one off the TTL
        // and the UDP checksum changes: still the same packet.
        datagram[3] = 1;
        datagram[28..32].copy_from_slice(&[0, 0, 7, 208]);
        let mut forwarded = udp_frame([10, 0, 0, 5], 63, &datagram);
        forwarded[ETH_HEADER_BYTES + 26] = 0x12;
        fd.sent(1, at_us(1_250), &forwarded);
        assert_eq!(fd.delay.count(), 1);
        assert_eq!(fd.delay.quantile_us(0.5), 251.0, "the 250 µs bucket's upper edge");
        // Sent once: a second copy matches nothing.
        fd.sent(1, at_us(1_300), &forwarded);
        assert_eq!(fd.delay.count(), 1);
    }

    #[test]
    fn other_data_another_node_or_a_packet_for_the_relay_itself_do_not_match() {
        let relay_addr = Ipv4Addr::new(10, 0, 0, 2);
        let datagram: Vec<u8> = (0..60).collect();
        let mut fd = ForwardingDelay::default();
        fd.delivered(1, relay_addr, at_us(0), &udp_frame([10, 0, 0, 5], 64, &datagram));
        let mut other = datagram.clone();
        other[40] ^= 1;
        fd.sent(1, at_us(100), &udp_frame([10, 0, 0, 5], 63, &other));
        fd.sent(2, at_us(100), &udp_frame([10, 0, 0, 5], 63, &datagram));
        // Addressed to the relay: delivered there, never forwarded.
        fd.delivered(1, relay_addr, at_us(0), &udp_frame([10, 0, 0, 2], 64, &other));
        fd.sent(1, at_us(100), &udp_frame([10, 0, 0, 2], 64, &other));
        assert_eq!(fd.delay.count(), 0);
        assert_eq!(fd.pending.len(), 1);
    }

    #[test]
    fn the_table_is_bounded() {
        let relay_addr = Ipv4Addr::new(10, 0, 0, 2);
        let mut fd = ForwardingDelay::default();
        for i in 0..(MAX_PENDING as u32 + 10) {
            fd.delivered(1, relay_addr, at_us(0), &udp_frame([10, 0, 0, 5], 64, &i.to_be_bytes().repeat(10)));
        }
        assert!(fd.pending.len() <= MAX_PENDING);
        assert_eq!(fd.flushes, 1);
    }
}
