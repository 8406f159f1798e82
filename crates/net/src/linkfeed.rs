//! Link-layer feedback from a node's radio to its routing daemon.
//!
//! The simulator hands a node's routing engine two things its MAC knows:
//! a frame that reached the retry limit (a link break,
//! `RoutingEngine::on_link_failure`) and the power every frame arrived with
//! (`RoutingEngine::on_frame_heard`, which seed 003 §3.2's signal filter
//! averages). Outside the simulator these cross a process boundary: the
//! emulator's medium process sends them, one Unix datagram per batch, to
//! the socket the node's daemon (`meshbed routed --link-feed PATH`) binds.
//! On a real host the daemon reads the same records from the kernel
//! instead (`meshbed routed --host-link-feed`: neighbour reachability and
//! nl80211 station statistics); without either it learns of breaks from
//! missed HELLOs, as AODV-UU did by default (docs/PROTOCOLS.md).
//!
//! A datagram is a sequence of fixed-size records, nothing else: a kind
//! byte, the neighbour (u32, big-endian) and the power in dBm (f64,
//! big-endian; 0 for a failure). [`decode`] refuses anything else whole —
//! the socket is local, but a record read wrongly would steer routing.

/// One thing the MAC reports about a neighbour.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum LinkFeed {
    /// A frame from `neighbour` was decoded at `rx_power_dbm`.
    Heard { neighbour: u32, rx_power_dbm: f64 },
    /// A unicast frame to `neighbour` reached the MAC's retry limit.
    Failed { neighbour: u32 },
}

/// Bytes of one record.
pub const RECORD_BYTES: usize = 13;
/// Most records in one datagram (a datagram stays well under a page).
pub const MAX_RECORDS: usize = 256;

const KIND_HEARD: u8 = 1;
const KIND_FAILED: u8 = 2;

/// Appends `feed`'s record to `out`.
pub fn encode(feed: LinkFeed, out: &mut Vec<u8>) {
    let (kind, neighbour, power) = match feed {
        LinkFeed::Heard { neighbour, rx_power_dbm } => (KIND_HEARD, neighbour, rx_power_dbm),
        LinkFeed::Failed { neighbour } => (KIND_FAILED, neighbour, 0.0),
    };
    out.push(kind);
    out.extend_from_slice(&neighbour.to_be_bytes());
    out.extend_from_slice(&power.to_be_bytes());
}

/// Why a datagram was refused.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum LinkFeedError {
    #[error("a link-feed datagram of {0} bytes is not a whole number of {RECORD_BYTES}-byte records")]
    Length(usize),
    #[error("a link-feed datagram of {0} records is over the limit of {MAX_RECORDS}")]
    TooMany(usize),
    #[error("unknown link-feed record kind {0}")]
    Kind(u8),
    #[error("a link-feed power of {0} dBm is not a finite number")]
    Power(f64),
}

/// The records of one datagram, in order; an error refuses the whole of it.
pub fn decode(datagram: &[u8]) -> Result<Vec<LinkFeed>, LinkFeedError> {
    if !datagram.len().is_multiple_of(RECORD_BYTES) {
        return Err(LinkFeedError::Length(datagram.len()));
    }
    let n = datagram.len() / RECORD_BYTES;
    if n > MAX_RECORDS {
        return Err(LinkFeedError::TooMany(n));
    }
    datagram
        .chunks_exact(RECORD_BYTES)
        .map(|r| {
            let neighbour = u32::from_be_bytes(r[1..5].try_into().expect("4 bytes"));
            let power = f64::from_be_bytes(r[5..13].try_into().expect("8 bytes"));
            match r[0] {
                KIND_HEARD if power.is_finite() => Ok(LinkFeed::Heard { neighbour, rx_power_dbm: power }),
                KIND_HEARD => Err(LinkFeedError::Power(power)),
                KIND_FAILED => Ok(LinkFeed::Failed { neighbour }),
                k => Err(LinkFeedError::Kind(k)),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn records_round_trip_in_order() {
        let feeds = [
            LinkFeed::Heard { neighbour: 3, rx_power_dbm: -71.25 },
            LinkFeed::Failed { neighbour: 70_000 },
            LinkFeed::Heard { neighbour: 0, rx_power_dbm: -90.0 },
        ];
        let mut buf = Vec::new();
        feeds.iter().for_each(|&f| encode(f, &mut buf));
        assert_eq!(buf.len(), 3 * RECORD_BYTES);
        assert_eq!(decode(&buf).unwrap(), feeds);
    }

    #[test]
    fn malformed_datagrams_are_refused_whole() {
        let mut buf = Vec::new();
        encode(LinkFeed::Failed { neighbour: 1 }, &mut buf);
        assert_eq!(decode(&buf[..12]), Err(LinkFeedError::Length(12)));
        let mut bad = buf.clone();
        bad[0] = 9;
        assert_eq!(decode(&bad), Err(LinkFeedError::Kind(9)));
        let mut nan = Vec::new();
        encode(LinkFeed::Heard { neighbour: 1, rx_power_dbm: f64::NAN }, &mut nan);
        assert!(matches!(decode(&nan), Err(LinkFeedError::Power(p)) if p.is_nan()));
        let many = buf.repeat(MAX_RECORDS + 1);
        assert_eq!(decode(&many), Err(LinkFeedError::TooMany(MAX_RECORDS + 1)));
        assert_eq!(decode(&[]), Ok(vec![]));
    }

    proptest! {
        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode(&bytes);
        }
    }
}
