//! DSR's wire format, modelled on RFC 4728 §6 options: one type byte, then
//! fixed fields, then a one-byte count of 32-bit addresses (big-endian).
//! The control packets (RREQ, RREP, RERR) and the source-route header a
//! data packet carries, parsed from untrusted bytes without panicking and
//! emitted back.

use crate::NodeId;

/// The most addresses a route can hold: the one-byte count of the wire
/// format (RFC 4728 §6.2's Opt Data Len bounds a route record the same way).
pub const MAX_ROUTE_LEN: usize = u8::MAX as usize;

/// Option types (RFC 4728 §6.2, §6.3, §6.4, §6.7 assign 1, 2, 3, 96).
const TYPE_RREQ: u8 = 1;
const TYPE_RREP: u8 = 2;
const TYPE_RERR: u8 = 3;
const TYPE_SOURCE_ROUTE: u8 = 96;

/// Why bytes are not a DSR packet.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("truncated")]
    Truncated,
    #[error("unknown option type {0}")]
    UnknownType(u8),
    #[error("trailing bytes")]
    Trailing,
    #[error("route too short")]
    RouteTooShort,
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn u8(&mut self) -> Result<u8, WireError> {
        let (&b, rest) = self.bytes.split_first().ok_or(WireError::Truncated)?;
        self.bytes = rest;
        Ok(b)
    }
    fn u16(&mut self) -> Result<u16, WireError> {
        Ok(u16::from_be_bytes([self.u8()?, self.u8()?]))
    }
    fn u32(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_be_bytes([self.u8()?, self.u8()?, self.u8()?, self.u8()?]))
    }
    fn addrs(&mut self) -> Result<Vec<NodeId>, WireError> {
        let n = self.u8()? as usize;
        if self.bytes.len() < 4 * n {
            return Err(WireError::Truncated);
        }
        (0..n).map(|_| self.u32()).collect()
    }
    fn end(self) -> Result<(), WireError> {
        if self.bytes.is_empty() {
            Ok(())
        } else {
            Err(WireError::Trailing)
        }
    }
}

fn put_addrs(out: &mut Vec<u8>, addrs: &[NodeId]) {
    // Routes are bounded by the hop limit (≤ 255) when built; a longer one
    // could only come from a bug, and is cut rather than mis-encoded.
    let n = addrs.len().min(MAX_ROUTE_LEN);
    out.push(n as u8);
    for a in &addrs[..n] {
        out.extend_from_slice(&a.to_be_bytes());
    }
}

/// A DSR control packet (RFC 4728 §6.2–6.4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Control {
    /// Route Request: `initiator` looks for `target`; `record` holds the
    /// nodes it crossed after the initiator (RFC 4728 §6.2).
    Rreq { id: u16, hop_limit: u8, initiator: NodeId, target: NodeId, record: Vec<NodeId> },
    /// Route Reply: the whole route, initiator first and target last; it
    /// travels back towards the initiator (RFC 4728 §6.3).
    Rrep { route: Vec<NodeId> },
    /// Route Error: the link `error_source` → `unreachable` broke; `route`
    /// is the way back, from the error source to the node being told
    /// (RFC 4728 §6.4).
    Rerr { error_source: NodeId, unreachable: NodeId, route: Vec<NodeId> },
}

impl Control {
    pub fn parse(bytes: &[u8]) -> Result<Control, WireError> {
        let mut r = Reader { bytes };
        let c = match r.u8()? {
            TYPE_RREQ => Control::Rreq {
                id: r.u16()?,
                hop_limit: r.u8()?,
                initiator: r.u32()?,
                target: r.u32()?,
                record: r.addrs()?,
            },
            TYPE_RREP => {
                let route = r.addrs()?;
                if route.len() < 2 {
                    return Err(WireError::RouteTooShort);
                }
                Control::Rrep { route }
            }
            TYPE_RERR => {
                let (error_source, unreachable) = (r.u32()?, r.u32()?);
                let route = r.addrs()?;
                if route.is_empty() {
                    return Err(WireError::RouteTooShort);
                }
                Control::Rerr { error_source, unreachable, route }
            }
            t => return Err(WireError::UnknownType(t)),
        };
        r.end()?;
        Ok(c)
    }

    pub fn emit(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.buffer_len());
        match self {
            Control::Rreq { id, hop_limit, initiator, target, record } => {
                out.push(TYPE_RREQ);
                out.extend_from_slice(&id.to_be_bytes());
                out.push(*hop_limit);
                out.extend_from_slice(&initiator.to_be_bytes());
                out.extend_from_slice(&target.to_be_bytes());
                put_addrs(&mut out, record);
            }
            Control::Rrep { route } => {
                out.push(TYPE_RREP);
                put_addrs(&mut out, route);
            }
            Control::Rerr { error_source, unreachable, route } => {
                out.push(TYPE_RERR);
                out.extend_from_slice(&error_source.to_be_bytes());
                out.extend_from_slice(&unreachable.to_be_bytes());
                put_addrs(&mut out, route);
            }
        }
        out
    }

    pub fn buffer_len(&self) -> usize {
        match self {
            Control::Rreq { record, .. } => 1 + 2 + 1 + 4 + 4 + 1 + 4 * record.len(),
            Control::Rrep { route } => 1 + 1 + 4 * route.len(),
            Control::Rerr { route, .. } => 1 + 4 + 4 + 1 + 4 * route.len(),
        }
    }
}

/// The source-route header of a data packet (RFC 4728 §6.7): the whole
/// path from the node that wrote it (the source, or a salvaging node) to
/// the destination, and how often the packet was salvaged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceRoute {
    pub salvage: u8,
    pub path: Vec<NodeId>,
}

impl SourceRoute {
    pub fn parse(bytes: &[u8]) -> Result<SourceRoute, WireError> {
        let mut r = Reader { bytes };
        let t = r.u8()?;
        if t != TYPE_SOURCE_ROUTE {
            return Err(WireError::UnknownType(t));
        }
        let salvage = r.u8()?;
        let path = r.addrs()?;
        r.end()?;
        if path.len() < 2 {
            return Err(WireError::RouteTooShort);
        }
        Ok(SourceRoute { salvage, path })
    }

    pub fn emit(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.buffer_len());
        out.push(TYPE_SOURCE_ROUTE);
        out.push(self.salvage);
        put_addrs(&mut out, &self.path);
        out
    }

    pub fn buffer_len(&self) -> usize {
        3 + 4 * self.path.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn wire_formats_on_fixed_bytes() {
        let rreq = [1, 0, 7, 3, 0, 0, 0, 1, 0, 0, 0, 9, 2, 0, 0, 0, 2, 0, 0, 0, 3];
        let c = Control::Rreq { id: 7, hop_limit: 3, initiator: 1, target: 9, record: vec![2, 3] };
        assert_eq!(Control::parse(&rreq), Ok(c.clone()));
        assert_eq!(c.emit(), rreq);
        assert_eq!(c.buffer_len(), rreq.len());
        let rrep = [2, 2, 0, 0, 0, 1, 0, 0, 0, 2];
        assert_eq!(Control::parse(&rrep), Ok(Control::Rrep { route: vec![1, 2] }));
        let rerr = [3, 0, 0, 0, 2, 0, 0, 0, 3, 2, 0, 0, 0, 2, 0, 0, 0, 1];
        let c = Control::Rerr { error_source: 2, unreachable: 3, route: vec![2, 1] };
        assert_eq!(Control::parse(&rerr), Ok(c.clone()));
        assert_eq!(c.emit(), rerr);
        let sr = [96, 1, 2, 0, 0, 0, 4, 0, 0, 0, 5];
        let s = SourceRoute { salvage: 1, path: vec![4, 5] };
        assert_eq!(SourceRoute::parse(&sr), Ok(s.clone()));
        assert_eq!(s.emit(), sr);
        assert_eq!(s.buffer_len(), sr.len());
        assert_eq!(Control::parse(&rreq[..rreq.len() - 1]), Err(WireError::Truncated));
        assert_eq!(Control::parse(&[rrep.as_slice(), &[0]].concat()), Err(WireError::Trailing));
        assert_eq!(Control::parse(&[2, 1, 0, 0, 0, 1]), Err(WireError::RouteTooShort));
        assert_eq!(Control::parse(&[4]), Err(WireError::UnknownType(4)));
        assert_eq!(SourceRoute::parse(&[]), Err(WireError::Truncated));
    }

    proptest! {
        #[test]
        fn control_packets_round_trip(id: u16, hop_limit: u8, a: u32, b: u32, record in proptest::collection::vec(any::<u32>(), 0..20)) {
            for c in [
                Control::Rreq { id, hop_limit, initiator: a, target: b, record: record.clone() },
                Control::Rrep { route: [vec![a, b], record.clone()].concat() },
                Control::Rerr { error_source: a, unreachable: b, route: [vec![a], record.clone()].concat() },
            ] {
                prop_assert_eq!(Control::parse(&c.emit()), Ok(c.clone()));
            }
            let s = SourceRoute { salvage: hop_limit, path: [vec![a, b], record].concat() };
            prop_assert_eq!(SourceRoute::parse(&s.emit()), Ok(s));
        }
    }
}
