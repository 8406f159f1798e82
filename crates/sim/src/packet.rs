//! The network-layer packet the simulator carries: its flow, ends, size,
//! the transport datagram it holds, and the path it took.

use crate::net_stats;
use bytes::{Bytes, BytesMut};
use meshbed_core::Instant;
use meshbed_radio::{NodeId, Payload};

/// A network-layer packet as the simulator carries it.
#[derive(Clone, Debug)]
pub struct Packet {
    pub src: NodeId,
    pub dst: NodeId,
    pub flow: u32,
    pub seq: u64,
    /// IP packet size (the MSDU).
    pub size_bytes: u32,
    pub created_at: Instant,
    /// Hops left before the packet is discarded (a guard against loops in
    /// hand-written static routes).
    pub ttl: u8,
    /// The ATP/TCP datagram (the UDP payload) of a transport flow, or a
    /// routing control packet's bytes; empty for UDP traffic, whose payload
    /// bytes are not modelled. Shared: the MAC's every attempt and every
    /// receiver's copy of a frame hold the same bytes (copying them was
    /// 7% of a TCP chain's run, issue 28); [`Packet::stamp_datagram`]
    /// copies them only where a relay writes to them.
    pub datagram: Bytes,
    /// A routing engine's handle for the packet (0 until one sees it).
    pub id: u64,
    /// The neighbour it came from (`None` at its source).
    pub prev_hop: Option<NodeId>,
    /// The neighbour it was last sent to (a link failure names it).
    pub next_hop: NodeId,
    /// A routing header (DSR's source route), counted in `size_bytes`.
    /// A boxed slice, not a `Vec`: 8 bytes fewer make the packet 128
    /// bytes, which a move copies inline instead of calling `memcpy`
    /// (issue 28: `memmove` was 8% of a `perf` profile of the UDP chain,
    /// most of it packets moved into and out of the MAC's queues).
    pub routing_header: Box<[u8]>,
    /// A routing control packet rather than data.
    pub control: bool,
    /// Queued ahead of data at the MAC (routing control packets, unless the
    /// scenario says `[routing] control_priority = false`; transport
    /// feedback with `[radio.mac] feedback_priority = true`).
    pub priority: bool,
    /// A fingerprint of the nodes it went through so far (its source
    /// first; the node that holds it last stepped it on), so that a flow's
    /// destination can tell when its packets started to take another path
    /// (seed 002 §2.3, Fig. 4b), and whether feedback returns along it.
    pub path: net_stats::PathPrint,
}

// Moved inline, not by a call to `memcpy`, at 128 bytes or less (see
// `routing_header`): a field added past that is a slower simulator.
const _: () = assert!(std::mem::size_of::<Packet>() <= 128);

/// The hop limit a data packet starts with (IPv4's usual 64).
pub const INITIAL_TTL: u8 = 64;

impl Packet {
    /// Runs `write` on the datagram's bytes as this packet's own (copied
    /// first if another packet or frame shares them).
    pub fn stamp_datagram<R>(&mut self, write: impl FnOnce(&mut [u8]) -> R) -> R {
        let mut own =
            std::mem::take(&mut self.datagram).try_into_mut().unwrap_or_else(|shared| BytesMut::from(&shared[..]));
        let written = write(&mut own);
        self.datagram = own.freeze();
        written
    }

    /// Hops it has taken so far: its source and every relay take one off
    /// its TTL as they send it on (as IP counts them), so at its
    /// destination this is the length of the path it took.
    pub fn hops_taken(&self) -> u32 {
        u32::from(INITIAL_TTL.saturating_sub(self.ttl))
    }

    /// A data packet created at `src` at `created_at`.
    pub fn data(
        src: NodeId,
        dst: NodeId,
        flow: u32,
        seq: u64,
        size_bytes: u32,
        created_at: Instant,
        datagram: Vec<u8>,
    ) -> Self {
        Packet {
            src,
            dst,
            flow,
            seq,
            size_bytes,
            created_at,
            ttl: INITIAL_TTL,
            datagram: Bytes::from(datagram),
            id: 0,
            prev_hop: None,
            next_hop: src,
            routing_header: Box::default(),
            control: false,
            priority: false,
            path: net_stats::PathPrint::start(src),
        }
    }
}

impl Payload for Packet {
    fn msdu_bytes(&self) -> u32 {
        self.size_bytes
    }
    fn priority(&self) -> bool {
        self.priority
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stamp writes this packet's bytes and nobody else's: a copy made
    /// before (a frame still on the air, the MAC's queued packet) keeps
    /// what it had, and a packet that alone holds its bytes is written in
    /// place.
    #[test]
    fn stamping_a_shared_datagram_leaves_the_other_holders_as_they_were() {
        let mut pkt = Packet::data(0, 3, 1, 7, 60, Instant::ZERO, vec![1, 2, 3, 4]);
        let on_the_air = pkt.clone();
        pkt.stamp_datagram(|bytes| bytes[0] = 9);
        assert_eq!(&pkt.datagram[..], [9, 2, 3, 4]);
        assert_eq!(&on_the_air.datagram[..], [1, 2, 3, 4]);
        drop(on_the_air);
        let before = pkt.datagram.as_ptr();
        let read = pkt.stamp_datagram(|bytes| {
            bytes[3] = 0;
            bytes.len()
        });
        assert_eq!((read, &pkt.datagram[..]), (4, &[9, 2, 3, 0][..]));
        assert_eq!(pkt.datagram.as_ptr(), before, "written in place when not shared");
    }
}
