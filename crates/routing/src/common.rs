//! What more than one engine keeps alike, written once.
//!
//! * [`HeldPackets`]: the data packets a reactive protocol holds while it
//!   discovers a route (AODV's discovery buffer, ns-2 `aodv_rqueue`; DSR's
//!   send buffer, RFC 4728 §4.2): by the driver's id, oldest first, at most
//!   so many (a full buffer drops its oldest), for at most so long.

use crate::NodeId;
use meshbed_core::{Duration, Instant};
use std::collections::{BTreeSet, VecDeque};

/// A data packet held for a route, by the driver's id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Held {
    pub(crate) id: u64,
    pub(crate) dst: NodeId,
    since: Instant,
}

/// The data packets held while routes are discovered, oldest first.
#[derive(Clone, Debug, Default)]
pub(crate) struct HeldPackets {
    held: VecDeque<Held>,
}

impl HeldPackets {
    pub(crate) fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Holds packet `id` for `dst` from `now`; if `capacity` packets are
    /// held already, the oldest makes room and is returned (ns-2
    /// `aodv_rqueue.cc`, DSR's send buffer: a full buffer drops its oldest
    /// packet).
    pub(crate) fn push(&mut self, now: Instant, id: u64, dst: NodeId, capacity: usize) -> Option<Held> {
        let dropped = if self.held.len() >= capacity { self.held.pop_front() } else { None };
        self.held.push_back(Held { id, dst, since: now });
        dropped
    }

    /// The `i`-th packet, oldest first.
    pub(crate) fn get(&self, i: usize) -> Option<&Held> {
        self.held.get(i)
    }

    /// Takes the `i`-th packet out.
    pub(crate) fn remove(&mut self, i: usize) -> Option<Held> {
        self.held.remove(i)
    }

    /// Takes, oldest first, the packets whose destination `next_hop` finds
    /// a next hop for, each with it. (Where releasing one packet may give
    /// the next its route, as a DSR source touching its route cache can, a
    /// caller walks the packets with [`HeldPackets::get`] and
    /// [`HeldPackets::remove`] instead.)
    pub(crate) fn take_routable(&mut self, next_hop: impl Fn(NodeId) -> Option<NodeId>) -> Vec<(Held, NodeId)> {
        let mut routable = Vec::new();
        let mut kept = VecDeque::new();
        while let Some(h) = self.held.pop_front() {
            match next_hop(h.dst) {
                Some(hop) => routable.push((h, hop)),
                None => kept.push_back(h),
            }
        }
        self.held = kept;
        routable
    }

    /// Takes every packet held for `dst`, oldest first.
    pub(crate) fn take_for(&mut self, dst: NodeId) -> Vec<Held> {
        let (taken, kept): (Vec<Held>, Vec<Held>) = self.held.drain(..).partition(|h| h.dst == dst);
        self.held = kept.into();
        taken
    }

    /// Takes the packets held `max_hold` or longer at `now`, oldest first.
    pub(crate) fn expire(&mut self, now: Instant, max_hold: Duration) -> Vec<Held> {
        let (expired, kept): (Vec<Held>, Vec<Held>) = self.held.drain(..).partition(|h| h.since + max_hold <= now);
        self.held = kept.into();
        expired
    }

    /// Whether a packet is held for `dst`.
    pub(crate) fn holds_for(&self, dst: NodeId) -> bool {
        self.held.iter().any(|h| h.dst == dst)
    }

    /// The destinations something is held for.
    pub(crate) fn destinations(&self) -> BTreeSet<NodeId> {
        self.held.iter().map(|h| h.dst).collect()
    }

    /// When the first packet will have been held `max_hold`.
    pub(crate) fn next_expiry(&self, max_hold: Duration) -> Option<Instant> {
        self.held.iter().map(|h| h.since + max_hold).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(n)
    }

    #[test]
    fn held_packets_drop_the_oldest_when_full_and_expire_at_their_hold_time() {
        let mut h = HeldPackets::default();
        assert_eq!(h.push(ms(0), 1, 7, 2), None);
        assert_eq!(h.push(ms(1), 2, 8, 2), None);
        assert_eq!(h.push(ms(2), 3, 7, 2).map(|d| d.id), Some(1), "full: the oldest goes");
        assert_eq!(h.next_expiry(Duration::from_millis(10)), Some(ms(11)));
        // Just inside the hold time, then at it.
        assert!(h.expire(ms(10), Duration::from_millis(10) + Duration::from_nanos(1)).is_empty());
        assert_eq!(h.expire(ms(11), Duration::from_millis(10)).iter().map(|d| d.id).collect::<Vec<_>>(), vec![2]);
        assert!(h.holds_for(7) && !h.holds_for(8));
        assert_eq!(h.take_for(7).iter().map(|d| d.id).collect::<Vec<_>>(), vec![3]);
        assert!(h.is_empty());
    }

    #[test]
    fn held_packets_release_in_order_those_with_a_route() {
        let mut h = HeldPackets::default();
        for (id, dst) in [(1, 5), (2, 6), (3, 5)] {
            h.push(ms(0), id, dst, 8);
        }
        let released = h.take_routable(|dst| (dst == 5).then_some(9));
        assert_eq!(released.iter().map(|(p, hop)| (p.id, *hop)).collect::<Vec<_>>(), vec![(1, 9), (3, 9)]);
        assert_eq!(h.destinations(), BTreeSet::from([6]));
        assert_eq!(h.get(0).map(|p| p.id), Some(2));
        assert_eq!(h.remove(0).map(|p| p.id), Some(2));
        assert!(h.is_empty());
    }
}
