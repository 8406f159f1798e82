//! UDP traffic: constant-bit-rate and saturated sources. Their packets carry
//! no bytes (only their size is modelled); the destination counts them in
//! the flow's [`Arrivals`](crate::report::Arrivals).

use crate::scenario::{FlowSpec, UdpFlow, UdpRate};
use crate::{Flow, Packet};
use meshbed_core::{Duration, Instant};
use meshbed_radio::{Medium, NodeId};

/// One UDP flow's source.
pub(crate) struct UdpSource {
    /// Between two CBR packets (zero for a saturated source).
    pub interval: Duration,
    pub next_seq: u64,
    pub sent_packets: u64,
}

impl UdpSource {
    pub(crate) fn new(spec: &UdpFlow) -> Self {
        let interval = match spec.rate {
            UdpRate::Cbr { rate_kbps } => {
                Duration::from_secs_f64(spec.packet_bytes as f64 * 8.0 / (rate_kbps * 1000.0))
            }
            UdpRate::Saturated => Duration::ZERO,
        };
        UdpSource { interval, next_seq: 0, sent_packets: 0 }
    }

    /// The flow's next packet, created at its source at `now`.
    pub(crate) fn next_packet(&mut self, spec: &FlowSpec, flow: u32, now: Instant) -> Packet {
        let pkt = Packet::data(spec.src, spec.dst, flow, self.next_seq, spec.packet_bytes(), now, Vec::new());
        self.next_seq += 1;
        self.sent_packets += 1;
        pkt
    }
}

/// The saturated flows of every node, refilled round-robin.
pub(crate) struct SaturatedSources {
    by_node: Vec<Vec<u32>>,
    next: Vec<usize>,
}

impl SaturatedSources {
    pub(crate) fn new(nodes: usize) -> Self {
        SaturatedSources { by_node: vec![Vec::new(); nodes], next: vec![0; nodes] }
    }

    pub(crate) fn add(&mut self, node: NodeId, flow: u32) {
        self.by_node[node as usize].push(flow);
    }

    /// When `node`'s MAC took a packet: the saturated flow (round-robin
    /// among those active at `now`) that tops its queue up, if its queue has
    /// room.
    pub(crate) fn next_to_refill<P: meshbed_radio::Payload>(
        &mut self,
        node: NodeId,
        medium: &Medium<P>,
        flows: &[Flow],
        now: Instant,
    ) -> Option<u32> {
        let list = &self.by_node[node as usize];
        let k = list.len();
        for i in 0..k {
            let idx = (self.next[node as usize] + i) % k;
            let flow = list[idx];
            let f = &flows[flow as usize];
            if now >= f.start && now < f.stop && medium.queue_len(node) < medium.queue_capacity() {
                self.next[node as usize] = (idx + 1) % k;
                return Some(flow);
            }
        }
        None
    }
}
