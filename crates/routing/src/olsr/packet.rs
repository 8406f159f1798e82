//! OLSR's wire format (RFC 3626 §3.3, §6.1, §9.1, §18): a packet header,
//! then messages (HELLO, TC, and the ETX probe) each with its own header,
//! node ids in the address fields; every length is checked before it is
//! used, so untrusted bytes never panic. Validity times travel as RFC 3626
//! §18.3's mantissa and exponent.

use crate::NodeId;
use meshbed_core::Duration;

/// RFC 3626 §18.5 link types.
pub(super) const ASYM_LINK: u8 = 1;
pub(super) const SYM_LINK: u8 = 2;
pub(super) const LOST_LINK: u8 = 3;
/// RFC 3626 §18.6 neighbour types.
pub(super) const NOT_NEIGH: u8 = 0;
pub(super) const SYM_NEIGH: u8 = 1;
pub(super) const MPR_NEIGH: u8 = 2;

/// RFC 3626 §18.4 message types; the probe takes a type outside the RFC's
/// range, as olsrd's link-quality messages do.
pub(super) const HELLO_MESSAGE: u8 = 1;
pub(super) const TC_MESSAGE: u8 = 2;
pub(super) const PROBE_MESSAGE: u8 = 201;
/// RFC 3626 §3.3.2: TTL 255 for flooded messages, 1 for HELLO (§6.1).
pub(super) const MAX_TTL: u8 = 255;
/// A link metric that says "not usable" (ETX unknown or infinite).
pub(super) const METRIC_INFINITE: u16 = u16::MAX;

/// Why a control packet was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("packet shorter than its header or its stated length")]
    Truncated,
    #[error("message size {0} is shorter than the message header or runs past the packet")]
    BadMessageSize(usize),
    #[error("message body of type {0} has a bad length")]
    BadBody(u8),
}

/// RFC 3626 §3.3: packet header = packet length (2) + sequence number (2).
const PACKET_HEADER_LEN: usize = 4;
/// RFC 3626 §3.3.2: type, vtime, size (2), originator (4 here: node ids,
/// not IPv4 addresses), TTL, hop count, message sequence number (2).
const MESSAGE_HEADER_LEN: usize = 12;
/// HELLO: reserved (2), htime, willingness (RFC 3626 §6.1), then a count
/// (2) of neighbour entries.
const HELLO_FIXED_LEN: usize = 6;
/// A HELLO neighbour entry: address (4), link code, link metric (2). A flat
/// list instead of the RFC's link-code groups: one entry per neighbour is
/// what olsrd's LQ HELLO carries too, and the metric rides along.
const HELLO_ENTRY_LEN: usize = 7;
/// TC: ANSN (2), reserved (2) (RFC 3626 §9.1).
const TC_FIXED_LEN: usize = 4;
/// A TC entry: advertised neighbour (4), link metric (2).
const TC_ENTRY_LEN: usize = 6;
/// A probe entry: neighbour (4), probes received from it in the window.
const PROBE_ENTRY_LEN: usize = 5;

/// RFC 3626 §18.3: the scaling constant C of validity times, 1/16 s.
const VTIME_C_NS: u64 = 62_500_000;

/// RFC 3626 §18.3: a time as mantissa a (high nibble) and exponent b (low
/// nibble), value = C·(1 + a/16)·2^b. Rounds down; saturates.
pub fn encode_vtime(t: Duration) -> u8 {
    let ratio = t.as_nanos() / VTIME_C_NS;
    if ratio == 0 {
        return 0;
    }
    let b = (63 - ratio.leading_zeros() as u64).min(15);
    let a = ((16 * t.as_nanos()) / (VTIME_C_NS << b)).saturating_sub(16).min(15);
    ((a as u8) << 4) | b as u8
}

pub fn decode_vtime(v: u8) -> Duration {
    let a = (v >> 4) as u64;
    let b = (v & 0x0f) as u64;
    Duration::from_nanos(VTIME_C_NS * (16 + a) * (1 << b) / 16)
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HelloEntry {
    pub neighbour: NodeId,
    /// RFC 3626 §6.1.1: neighbour type << 2 | link type.
    pub link_code: u8,
    pub metric: u16,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    Hello {
        htime: u8,
        willingness: u8,
        neighbours: Vec<HelloEntry>,
    },
    Tc {
        ansn: u16,
        advertised: Vec<(NodeId, u16)>,
    },
    Probe {
        received: Vec<(NodeId, u8)>,
    },
    /// A type this engine does not know (kept so the rest of the packet
    /// still parses; not forwarded).
    Unknown(u8),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub vtime: u8,
    pub originator: NodeId,
    pub ttl: u8,
    pub hop_count: u8,
    pub seq: u16,
    pub body: Body,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    pub seq: u16,
    pub messages: Vec<Message>,
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// A control packet checked whole (every length, every body) without
/// copying anything out of it: its messages are read one at a time, and a
/// message's body only when it is wanted ([`MessageView::body`]). A node
/// gets most TCs several times, and the copies are duplicates that only
/// the header decides on (issue 28: parsing each whole was 1.8% of the ATP
/// paper's OLSR run, with two allocations per packet).
#[derive(Clone, Copy, Debug)]
pub struct PacketView<'a> {
    bytes: &'a [u8],
}

/// One message of a [`PacketView`]: its header fields, and its body as
/// bytes already checked.
#[derive(Clone, Copy, Debug)]
pub struct MessageView<'a> {
    /// The whole message, header included (`size` bytes).
    bytes: &'a [u8],
}

impl<'a> PacketView<'a> {
    /// Checks untrusted bytes as [`Packet::parse`] does (the same errors):
    /// every length is checked before it is used.
    pub fn new(bytes: &'a [u8]) -> Result<PacketView<'a>, ParseError> {
        if bytes.len() < PACKET_HEADER_LEN || (be16(bytes, 0) as usize) != bytes.len() {
            return Err(ParseError::Truncated);
        }
        let mut at = PACKET_HEADER_LEN;
        while at < bytes.len() {
            if bytes.len() - at < MESSAGE_HEADER_LEN {
                return Err(ParseError::Truncated);
            }
            let m = &bytes[at..];
            let size = be16(m, 2) as usize;
            if size < MESSAGE_HEADER_LEN || size > m.len() {
                return Err(ParseError::BadMessageSize(size));
            }
            check_body(m[0], &m[MESSAGE_HEADER_LEN..size])?;
            at += size;
        }
        Ok(PacketView { bytes })
    }

    pub fn seq(&self) -> u16 {
        be16(self.bytes, 2)
    }

    /// The messages in order.
    pub fn messages(&self) -> impl Iterator<Item = MessageView<'a>> {
        let bytes = self.bytes;
        let mut at = PACKET_HEADER_LEN;
        std::iter::from_fn(move || {
            let m = bytes.get(at..).filter(|m| !m.is_empty())?;
            let size = be16(m, 2) as usize;
            at += size;
            Some(MessageView { bytes: &m[..size] })
        })
    }
}

impl MessageView<'_> {
    /// The message type (`HELLO_MESSAGE`, `TC_MESSAGE`, …).
    pub fn kind(&self) -> u8 {
        self.bytes[0]
    }
    pub fn vtime(&self) -> u8 {
        self.bytes[1]
    }
    pub fn originator(&self) -> NodeId {
        be32(self.bytes, 4)
    }
    pub fn ttl(&self) -> u8 {
        self.bytes[8]
    }
    pub fn hop_count(&self) -> u8 {
        self.bytes[9]
    }
    pub fn seq(&self) -> u16 {
        be16(self.bytes, 10)
    }

    /// The body, copied out (checked by [`PacketView::new`]).
    pub fn body(&self) -> Body {
        let (kind, body) = (self.kind(), &self.bytes[MESSAGE_HEADER_LEN..]);
        let all = |fixed: usize, entry: usize| body[fixed..].chunks_exact(entry);
        match kind {
            HELLO_MESSAGE => Body::Hello {
                htime: body[2],
                willingness: body[3],
                neighbours: all(HELLO_FIXED_LEN, HELLO_ENTRY_LEN)
                    .map(|e| HelloEntry { neighbour: be32(e, 0), link_code: e[4], metric: be16(e, 5) })
                    .collect(),
            },
            TC_MESSAGE => Body::Tc {
                ansn: be16(body, 0),
                advertised: all(TC_FIXED_LEN, TC_ENTRY_LEN).map(|e| (be32(e, 0), be16(e, 4))).collect(),
            },
            PROBE_MESSAGE => Body::Probe { received: all(0, PROBE_ENTRY_LEN).map(|e| (be32(e, 0), e[4])).collect() },
            other => Body::Unknown(other),
        }
    }

    /// The whole message, copied out.
    pub fn message(&self) -> Message {
        Message {
            vtime: self.vtime(),
            originator: self.originator(),
            ttl: self.ttl(),
            hop_count: self.hop_count(),
            seq: self.seq(),
            body: self.body(),
        }
    }
}

/// Whether a body of type `kind` is well formed: its length is its fixed
/// part plus whole entries, and a HELLO's count matches its entries.
fn check_body(kind: u8, body: &[u8]) -> Result<(), ParseError> {
    let whole = |fixed: usize, entry: usize| body.len() >= fixed && (body.len() - fixed).is_multiple_of(entry);
    let ok = match kind {
        HELLO_MESSAGE => {
            whole(HELLO_FIXED_LEN, HELLO_ENTRY_LEN)
                && be16(body, 4) as usize == (body.len() - HELLO_FIXED_LEN) / HELLO_ENTRY_LEN
        }
        TC_MESSAGE => whole(TC_FIXED_LEN, TC_ENTRY_LEN),
        PROBE_MESSAGE => whole(0, PROBE_ENTRY_LEN),
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(ParseError::BadBody(kind))
    }
}

impl Packet {
    /// Parses untrusted bytes; every length is checked before it is used
    /// ([`PacketView::new`]).
    pub fn parse(bytes: &[u8]) -> Result<Packet, ParseError> {
        let view = PacketView::new(bytes)?;
        Ok(Packet { seq: view.seq(), messages: view.messages().map(|m| m.message()).collect() })
    }

    /// The packet's length on the wire, as `emit` writes it.
    fn wire_len(&self) -> usize {
        let body = |b: &Body| match b {
            Body::Hello { neighbours, .. } => HELLO_FIXED_LEN + HELLO_ENTRY_LEN * neighbours.len(),
            Body::Tc { advertised, .. } => TC_FIXED_LEN + TC_ENTRY_LEN * advertised.len(),
            Body::Probe { received } => PROBE_ENTRY_LEN * received.len(),
            Body::Unknown(_) => 0,
        };
        PACKET_HEADER_LEN + self.messages.iter().map(|m| MESSAGE_HEADER_LEN + body(&m.body)).sum::<usize>()
    }

    pub fn emit(&self) -> Vec<u8> {
        // Sized once: growing it as it was written was 0.4% of the ATP
        // paper's OLSR runs (issue 28).
        let mut out = Vec::with_capacity(self.wire_len());
        out.resize(PACKET_HEADER_LEN, 0);
        out[2..4].copy_from_slice(&self.seq.to_be_bytes());
        for m in &self.messages {
            let start = out.len();
            let kind = match m.body {
                Body::Hello { .. } => HELLO_MESSAGE,
                Body::Tc { .. } => TC_MESSAGE,
                Body::Probe { .. } => PROBE_MESSAGE,
                Body::Unknown(k) => k,
            };
            out.extend_from_slice(&[kind, m.vtime, 0, 0]);
            out.extend_from_slice(&m.originator.to_be_bytes());
            out.extend_from_slice(&[m.ttl, m.hop_count]);
            out.extend_from_slice(&m.seq.to_be_bytes());
            match &m.body {
                Body::Hello { htime, willingness, neighbours } => {
                    out.extend_from_slice(&[0, 0, *htime, *willingness]);
                    out.extend_from_slice(&(neighbours.len() as u16).to_be_bytes());
                    for e in neighbours {
                        out.extend_from_slice(&e.neighbour.to_be_bytes());
                        out.push(e.link_code);
                        out.extend_from_slice(&e.metric.to_be_bytes());
                    }
                }
                Body::Tc { ansn, advertised } => {
                    out.extend_from_slice(&ansn.to_be_bytes());
                    out.extend_from_slice(&[0, 0]);
                    for (n, metric) in advertised {
                        out.extend_from_slice(&n.to_be_bytes());
                        out.extend_from_slice(&metric.to_be_bytes());
                    }
                }
                Body::Probe { received } => {
                    for (n, count) in received {
                        out.extend_from_slice(&n.to_be_bytes());
                        out.push(*count);
                    }
                }
                Body::Unknown(_) => {}
            }
            let size = (out.len() - start) as u16;
            out[start + 2..start + 4].copy_from_slice(&size.to_be_bytes());
        }
        debug_assert_eq!(out.len(), self.wire_len());
        let len = out.len() as u16;
        out[0..2].copy_from_slice(&len.to_be_bytes());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::{DUP_HOLD_TIME, HELLO_INTERVAL, NEIGHB_HOLD_TIME, TC_INTERVAL, TOP_HOLD_TIME, WILL_DEFAULT};
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn hello_packet_on_fixed_bytes() {
        let bytes: [u8; 27] = [
            0,
            27,
            0,
            7, // packet length, packet sequence number
            HELLO_MESSAGE,
            0x86,
            0,
            23,
            0,
            0,
            0,
            9,
            1,
            0,
            0,
            42, // header
            0,
            0,
            0x05,
            3,
            0,
            1, // reserved, htime 2 s, willingness, 1 entry
            0,
            0,
            0,
            4, // neighbour 4
            (MPR_NEIGH << 2) | SYM_LINK,
        ];
        // The entry's metric is missing: refused.
        assert_eq!(Packet::parse(&bytes), Err(ParseError::BadBody(HELLO_MESSAGE)));
        // A packet length that disagrees with the bytes: refused.
        assert_eq!(Packet::parse(&bytes[..26]), Err(ParseError::Truncated));
        let mut full = bytes.to_vec();
        full.extend_from_slice(&[1, 0]); // metric 256 = ETX 1
        full[1] = 29;
        full[7] = 25;
        let p = Packet::parse(&full).expect("valid");
        let want = Packet {
            seq: 7,
            messages: vec![Message {
                vtime: 0x86,
                originator: 9,
                ttl: 1,
                hop_count: 0,
                seq: 42,
                body: Body::Hello {
                    htime: 0x05,
                    willingness: WILL_DEFAULT,
                    neighbours: vec![HelloEntry { neighbour: 4, link_code: (MPR_NEIGH << 2) | SYM_LINK, metric: 256 }],
                },
            }],
        };
        assert_eq!(p, want);
        assert_eq!(want.emit(), full);
        // A count that disagrees with the entries is refused.
        full[21] = 2;
        assert_eq!(Packet::parse(&full), Err(ParseError::BadBody(HELLO_MESSAGE)));
    }

    #[test]
    fn tc_and_probe_round_trip() {
        let p = Packet {
            seq: 65535,
            messages: vec![
                Message {
                    vtime: encode_vtime(TOP_HOLD_TIME),
                    originator: 3,
                    ttl: 255,
                    hop_count: 2,
                    seq: 1,
                    body: Body::Tc { ansn: 9, advertised: vec![(1, 256), (2, METRIC_INFINITE)] },
                },
                Message {
                    vtime: 0,
                    originator: 3,
                    ttl: 1,
                    hop_count: 0,
                    seq: 2,
                    body: Body::Probe { received: vec![(7, 10)] },
                },
            ],
        };
        let bytes = p.emit();
        assert_eq!(bytes.len(), 4 + 12 + 4 + 12 + 12 + 5);
        assert_eq!(Packet::parse(&bytes), Ok(p));
    }

    #[test]
    fn vtime_encodes_the_rfc_hold_times_exactly() {
        // RFC 3626 §18.3: 6 s = C·(1 + 8/16)·2^6, 15 s = C·(1 + 14/16)·2^7.
        assert_eq!(encode_vtime(NEIGHB_HOLD_TIME), 0x86);
        assert_eq!(encode_vtime(TOP_HOLD_TIME), 0xe7);
        assert_eq!(encode_vtime(HELLO_INTERVAL), 0x05);
        for t in [HELLO_INTERVAL, TC_INTERVAL, NEIGHB_HOLD_TIME, TOP_HOLD_TIME, DUP_HOLD_TIME] {
            assert_eq!(decode_vtime(encode_vtime(t)), t);
        }
        // Just under C rounds to the smallest code, just over stays below.
        assert_eq!(encode_vtime(Duration::from_millis(62)), 0);
        assert!(decode_vtime(encode_vtime(Duration::from_millis(70))) <= Duration::from_millis(70));
    }

    proptest! {
        #[test]
        fn mutated_valid_packets_never_panic(at in 0usize..64, value in any::<u8>()) {
            let p = Packet {
                seq: 1,
                messages: vec![Message {
                    vtime: 0x86, originator: 2, ttl: 255, hop_count: 0, seq: 3,
                    body: Body::Tc { ansn: 1, advertised: vec![(0, 256), (5, 300), (6, 1)] },
                }],
            };
            let mut bytes = p.emit();
            let i = at % bytes.len();
            bytes[i] = value;
            // Whatever parses emits back to bytes that parse the same.
            if let Ok(q) = Packet::parse(&bytes) {
                prop_assert_eq!(Packet::parse(&q.emit()), Ok(q));
            }
        }
    }
}
