//! AODV's wire format (RFC 3561 §5, node ids in the address fields): RREQ,
//! RREP (a HELLO is a RREP about its sender) and RERR, parsed from
//! untrusted bytes without panicking and emitted back. There is no IP
//! header here, so the IP TTL that AODV reads and decrements (RFC 3561
//! §6.4, §6.5) rides in byte 2, which RFC 3561 reserves (RREQ) or gives to
//! the prefix size (RREP, unused here). All integers are big-endian.

use crate::NodeId;

/// Message types (RFC 3561 §5).
const TYPE_RREQ: u8 = 1;
const TYPE_RREP: u8 = 2;
const TYPE_RERR: u8 = 3;
/// RREQ: 1 type, 1 flags, 1 TTL, 1 hop count, 4 RREQ ID, 4+4 destination and
/// its sequence number, 4+4 originator and its sequence number (RFC 3561 §5.1).
pub const RREQ_LEN: usize = 24;
/// RREP: 1 type, 1 flags, 1 TTL, 1 hop count, 4+4 destination and its
/// sequence number, 4 originator, 4 lifetime in ms (RFC 3561 §5.2).
pub const RREP_LEN: usize = 20;
/// RERR: 1 type, 1 flags, 1 reserved, 1 destination count, then 8 bytes per
/// unreachable destination (RFC 3561 §5.3).
pub const RERR_HEADER_LEN: usize = 4;
const RERR_ENTRY_LEN: usize = 8;
/// RREQ flag U: the destination sequence number is unknown (RFC 3561 §5.1).
const RREQ_FLAG_UNKNOWN_SEQ: u8 = 0x08;
/// RREQ flag D: only the destination may reply (RFC 3561 §5.1).
const RREQ_FLAG_DEST_ONLY: u8 = 0x10;
/// RERR flag N: no delete (RFC 3561 §5.3).
const RERR_FLAG_NO_DELETE: u8 = 0x80;

/// Why a control packet could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("empty packet")]
    Empty,
    #[error("unknown AODV message type {0}")]
    UnknownType(u8),
    #[error("{kind} is {got} bytes, expected {expected}")]
    BadLength { kind: &'static str, got: usize, expected: usize },
    #[error("RERR lists no destination")]
    NoDestinations,
}

/// Route Request (RFC 3561 §5.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rreq {
    pub ttl: u8,
    pub hop_count: u8,
    pub rreq_id: u32,
    pub dest: NodeId,
    /// `None`: the U flag (unknown sequence number).
    pub dest_seq: Option<u32>,
    pub dest_only: bool,
    pub orig: NodeId,
    pub orig_seq: u32,
}

/// Route Reply (RFC 3561 §5.2); a HELLO is a RREP about its sender with hop
/// count 0 and TTL 1 (RFC 3561 §6.9).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rrep {
    pub ttl: u8,
    pub hop_count: u8,
    pub dest: NodeId,
    pub dest_seq: u32,
    pub orig: NodeId,
    pub lifetime_ms: u32,
}

impl Rrep {
    /// A HELLO from `sender`: a RREP about itself, hop count 0, TTL 1
    /// (RFC 3561 §6.9).
    pub fn is_hello_from(&self, sender: NodeId) -> bool {
        self.hop_count == 0 && self.dest == sender && self.ttl == 1
    }
}

/// Route Error (RFC 3561 §5.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rerr {
    pub no_delete: bool,
    /// Unreachable destinations and their sequence numbers.
    pub unreachable: Vec<(NodeId, u32)>,
}

/// An AODV control message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    Rreq(Rreq),
    Rrep(Rrep),
    Rerr(Rerr),
}

fn be32(b: &[u8], at: usize) -> u32 {
    // Callers check the length first; `get` keeps even a wrong caller from panicking.
    b.get(at..at + 4).map_or(0, |s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

fn check_len(kind: &'static str, got: usize, expected: usize) -> Result<(), WireError> {
    if got == expected {
        Ok(())
    } else {
        Err(WireError::BadLength { kind, got, expected })
    }
}

impl Message {
    /// Parses untrusted bytes; never panics.
    pub fn parse(b: &[u8]) -> Result<Message, WireError> {
        let &kind = b.first().ok_or(WireError::Empty)?;
        match kind {
            TYPE_RREQ => {
                check_len("RREQ", b.len(), RREQ_LEN)?;
                let flags = b[1];
                Ok(Message::Rreq(Rreq {
                    ttl: b[2],
                    hop_count: b[3],
                    rreq_id: be32(b, 4),
                    dest: be32(b, 8),
                    dest_seq: (flags & RREQ_FLAG_UNKNOWN_SEQ == 0).then(|| be32(b, 12)),
                    dest_only: flags & RREQ_FLAG_DEST_ONLY != 0,
                    orig: be32(b, 16),
                    orig_seq: be32(b, 20),
                }))
            }
            TYPE_RREP => {
                check_len("RREP", b.len(), RREP_LEN)?;
                Ok(Message::Rrep(Rrep {
                    ttl: b[2],
                    hop_count: b[3],
                    dest: be32(b, 4),
                    dest_seq: be32(b, 8),
                    orig: be32(b, 12),
                    lifetime_ms: be32(b, 16),
                }))
            }
            TYPE_RERR => {
                if b.len() < RERR_HEADER_LEN {
                    return Err(WireError::BadLength { kind: "RERR", got: b.len(), expected: RERR_HEADER_LEN });
                }
                let count = b[3] as usize;
                if count == 0 {
                    return Err(WireError::NoDestinations);
                }
                check_len("RERR", b.len(), RERR_HEADER_LEN + RERR_ENTRY_LEN * count)?;
                let unreachable = (0..count)
                    .map(|i| {
                        let at = RERR_HEADER_LEN + RERR_ENTRY_LEN * i;
                        (be32(b, at), be32(b, at + 4))
                    })
                    .collect();
                Ok(Message::Rerr(Rerr { no_delete: b[1] & RERR_FLAG_NO_DELETE != 0, unreachable }))
            }
            other => Err(WireError::UnknownType(other)),
        }
    }

    /// The bytes of this message. A RERR lists at most 255 destinations (the
    /// count is one byte); the rest are left out.
    pub fn emit(&self) -> Vec<u8> {
        match self {
            Message::Rreq(m) => {
                let mut flags = 0;
                if m.dest_seq.is_none() {
                    flags |= RREQ_FLAG_UNKNOWN_SEQ;
                }
                if m.dest_only {
                    flags |= RREQ_FLAG_DEST_ONLY;
                }
                let mut b = vec![TYPE_RREQ, flags, m.ttl, m.hop_count];
                for v in [m.rreq_id, m.dest, m.dest_seq.unwrap_or(0), m.orig, m.orig_seq] {
                    b.extend_from_slice(&v.to_be_bytes());
                }
                b
            }
            Message::Rrep(m) => {
                let mut b = vec![TYPE_RREP, 0, m.ttl, m.hop_count];
                for v in [m.dest, m.dest_seq, m.orig, m.lifetime_ms] {
                    b.extend_from_slice(&v.to_be_bytes());
                }
                b
            }
            Message::Rerr(m) => {
                let entries = &m.unreachable[..m.unreachable.len().min(u8::MAX as usize)];
                let flags = if m.no_delete { RERR_FLAG_NO_DELETE } else { 0 };
                let mut b = vec![TYPE_RERR, flags, 0, entries.len() as u8];
                for &(dest, seq) in entries {
                    b.extend_from_slice(&dest.to_be_bytes());
                    b.extend_from_slice(&seq.to_be_bytes());
                }
                b
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn wire_rreq_rrep_rerr_from_fixed_bytes() {
        let rreq_bytes = [1, 0x08, 35, 2, 0, 0, 0, 9, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 7];
        let rreq =
            Rreq { ttl: 35, hop_count: 2, rreq_id: 9, dest: 4, dest_seq: None, dest_only: false, orig: 1, orig_seq: 7 };
        assert_eq!(Message::parse(&rreq_bytes), Ok(Message::Rreq(rreq.clone())));
        assert_eq!(Message::Rreq(rreq).emit(), rreq_bytes);
        let rrep_bytes = [2, 0, 1, 0, 0, 0, 0, 3, 0, 0, 0, 5, 0, 0, 0, 3, 0, 0, 0x07, 0xd0];
        let hello = Rrep { ttl: 1, hop_count: 0, dest: 3, dest_seq: 5, orig: 3, lifetime_ms: 2000 };
        assert_eq!(Message::parse(&rrep_bytes), Ok(Message::Rrep(hello.clone())));
        assert_eq!(Message::Rrep(hello).emit(), rrep_bytes);
        let rerr_bytes = [3, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 6, 0, 0, 0, 8, 0, 0, 0, 1];
        let rerr = Rerr { no_delete: false, unreachable: vec![(4, 6), (8, 1)] };
        assert_eq!(Message::parse(&rerr_bytes), Ok(Message::Rerr(rerr.clone())));
        assert_eq!(Message::Rerr(rerr).emit(), rerr_bytes);
        // Boundaries: one byte short or long, no destinations, unknown type.
        assert!(matches!(Message::parse(&rreq_bytes[..23]), Err(WireError::BadLength { .. })));
        assert!(matches!(Message::parse(&[&rrep_bytes[..], &[0]].concat()), Err(WireError::BadLength { .. })));
        assert!(matches!(Message::parse(&rerr_bytes[..19]), Err(WireError::BadLength { .. })));
        assert_eq!(Message::parse(&[3, 0, 0, 0]), Err(WireError::NoDestinations));
        assert_eq!(Message::parse(&[4]), Err(WireError::UnknownType(4)));
        assert_eq!(Message::parse(&[]), Err(WireError::Empty));
    }

    proptest! {
        #[test]
        fn parse_inverts_emit(ttl: u8, hop_count: u8, id: u32, dest: u32, seq: Option<u32>, orig: u32, oseq: u32,
                              entries in proptest::collection::vec((any::<u32>(), any::<u32>()), 1..10)) {
            let msgs = [
                Message::Rreq(Rreq { ttl, hop_count, rreq_id: id, dest, dest_seq: seq, dest_only: ttl % 2 == 0, orig, orig_seq: oseq }),
                Message::Rrep(Rrep { ttl, hop_count, dest, dest_seq: oseq, orig, lifetime_ms: id }),
                Message::Rerr(Rerr { no_delete: hop_count % 2 == 0, unreachable: entries }),
            ];
            for m in msgs {
                prop_assert_eq!(Message::parse(&m.emit()), Ok(m));
            }
        }
    }
}
