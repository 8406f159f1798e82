//! AODV's route table (RFC 3561 §2, §6.2): per destination its sequence
//! number, hop count, next hop, lifetime and precursors, and the rules that
//! create, refresh, invalidate and expire an entry. It is told what the
//! control packets and data packets say; the route events it causes go to
//! the engine's event queue it is handed.

use crate::common::seq_newer;
use crate::{NodeId, RouteEvent};
use meshbed_core::Instant;
use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// A route table entry (RFC 3561 §2).
#[derive(Clone, Debug)]
pub(super) struct Route {
    /// `None`: no valid destination sequence number (RFC 3561 §6.2).
    pub(super) dest_seq: Option<u32>,
    pub(super) valid: bool,
    pub(super) hop_count: u8,
    pub(super) next_hop: NodeId,
    /// Valid: when the route expires. Invalid: when it is deleted.
    pub(super) lifetime: Instant,
    /// Neighbours that forward through this route (RFC 3561 §6.2), who are
    /// told by RERR when it breaks.
    pub(super) precursors: BTreeSet<NodeId>,
}

/// The route table of one node, by destination.
#[derive(Clone, Debug)]
pub(super) struct RouteTable {
    /// The node whose table it is: it holds no route to itself.
    node: NodeId,
    routes: BTreeMap<NodeId, Route>,
    /// The earliest lifetime of `routes` (`None` inside: no route), kept
    /// from one change to the next; `None`: to be found again. The engine
    /// asks for its next timer after every packet, and finding it in the
    /// whole table each time was 3–4% of a 100-node AODV run (issue 28);
    /// a refresh moves a lifetime later, which leaves the earliest
    /// standing unless it was that one.
    earliest: Cell<Option<Option<Instant>>>,
}

impl RouteTable {
    pub(super) fn new(node: NodeId) -> Self {
        RouteTable { node, routes: BTreeMap::new(), earliest: Cell::new(Some(None)) }
    }

    /// Keeps `earliest` true as one route's lifetime goes from `old` to
    /// `new` (`None`: the route is not, or no longer, in the table). Every
    /// change of a lifetime comes through here.
    fn lifetime_changed(&self, old: Option<Instant>, new: Option<Instant>) {
        let Some(earliest) = self.earliest.get() else { return };
        if old.is_some() && old == earliest && new != old {
            // The earliest moved or left: the next ask looks again.
            self.earliest.set(None);
            return;
        }
        let earliest = match (earliest, new) {
            (Some(e), Some(n)) => Some(e.min(n)),
            (e, n) => e.or(n),
        };
        self.earliest.set(Some(earliest));
    }

    pub(super) fn get(&self, dst: NodeId) -> Option<&Route> {
        self.routes.get(&dst)
    }

    /// The next hop and hop count of the valid route to `dst`, if any.
    pub(super) fn route_to(&self, dst: NodeId) -> Option<(NodeId, u8)> {
        self.routes.get(&dst).filter(|r| r.valid).map(|r| (r.next_hop, r.hop_count))
    }

    /// The last known sequence number of `dst`, valid route or not.
    pub(super) fn dest_seq(&self, dst: NodeId) -> Option<u32> {
        self.routes.get(&dst).and_then(|r| r.dest_seq)
    }

    /// Adds `precursor` to the route to `dst`, if there is an entry.
    pub(super) fn add_precursor(&mut self, dst: NodeId, precursor: NodeId) {
        if let Some(r) = self.routes.get_mut(&dst) {
            r.precursors.insert(precursor);
        }
    }

    /// The valid routes whose next hop is `neighbour`, by destination.
    pub(super) fn valid_through(&self, neighbour: NodeId) -> Vec<NodeId> {
        self.routes.iter().filter(|(_, r)| r.valid && r.next_hop == neighbour).map(|(&d, _)| d).collect()
    }

    /// When the next entry expires (valid) or is deleted (invalid).
    pub(super) fn next_lifetime(&self) -> Option<Instant> {
        if let Some(earliest) = self.earliest.get() {
            return earliest;
        }
        let earliest = self.routes.values().map(|r| r.lifetime).min();
        self.earliest.set(Some(earliest));
        earliest
    }

    /// Creates or updates the route to `dst` (never to this node) if the
    /// news is fresher (RFC 3561 §6.2); says whether it changed the route.
    /// A route that becomes usable is `Found`, one that moves to another
    /// next hop `Changed`.
    pub(super) fn update(
        &mut self,
        dst: NodeId,
        next_hop: NodeId,
        hop_count: u8,
        dest_seq: Option<u32>,
        lifetime: Instant,
        events: &mut VecDeque<RouteEvent>,
    ) -> bool {
        if dst == self.node {
            return false;
        }
        // The route's next hop and lifetime before, if it had an entry.
        let (accept, was_valid, before) = match self.routes.get(&dst) {
            None => (true, false, None),
            Some(r) => {
                let accept = match (dest_seq, r.dest_seq) {
                    // A route to a neighbour learnt from any packet of its
                    // own carries no sequence number: always taken (§6.2).
                    (None, _) => true,
                    (Some(_), None) => true,
                    (Some(new), Some(old)) => {
                        seq_newer(new, old) || (new == old && (!r.valid || hop_count < r.hop_count))
                    }
                };
                (accept, r.valid, Some((r.next_hop, r.lifetime)))
            }
        };
        if !accept {
            return false;
        }
        let r = self.routes.entry(dst).or_insert(Route {
            dest_seq: None,
            valid: false,
            hop_count,
            next_hop,
            lifetime,
            precursors: BTreeSet::new(),
        });
        if dest_seq.is_some() {
            r.dest_seq = dest_seq;
        }
        r.lifetime = if r.valid { r.lifetime.max(lifetime) } else { lifetime };
        let new_lifetime = r.lifetime;
        r.valid = true;
        r.next_hop = next_hop;
        r.hop_count = hop_count;
        let hop_count = hop_count as u32;
        self.lifetime_changed(before.map(|(_, lifetime)| lifetime), Some(new_lifetime));
        if !was_valid {
            events.push_back(RouteEvent::Found { dst, next_hop, hop_count });
        } else if before.map(|(next, _)| next) != Some(next_hop) {
            events.push_back(RouteEvent::Changed { dst, next_hop, hop_count });
        }
        true
    }

    /// Keeps a valid route alive until at least `until` (RFC 3561 §6.2).
    pub(super) fn refresh(&mut self, dst: NodeId, until: Instant) {
        if let Some(r) = self.routes.get_mut(&dst).filter(|r| r.valid) {
            let old = r.lifetime;
            r.lifetime = old.max(until);
            let new = r.lifetime;
            self.lifetime_changed(Some(old), Some(new));
        }
    }

    /// Makes the valid route to `dst` invalid, to be deleted at
    /// `delete_at`, with `dest_seq` if given (RFC 3561 §6.11); it is `Lost`.
    pub(super) fn invalidate(
        &mut self,
        dst: NodeId,
        dest_seq: Option<u32>,
        delete_at: Instant,
        events: &mut VecDeque<RouteEvent>,
    ) {
        if let Some(r) = self.routes.get_mut(&dst).filter(|r| r.valid) {
            r.valid = false;
            let old = std::mem::replace(&mut r.lifetime, delete_at);
            if dest_seq.is_some() {
                r.dest_seq = dest_seq;
            }
            self.lifetime_changed(Some(old), Some(delete_at));
            events.push_back(RouteEvent::Lost { dst });
        }
    }

    /// Route lifetimes (RFC 3561 §6.11): a valid route whose lifetime is
    /// over becomes invalid (deleted at `delete_at`), an invalid one is
    /// deleted.
    pub(super) fn expire(&mut self, now: Instant, delete_at: Instant, events: &mut VecDeque<RouteEvent>) {
        if self.next_lifetime().is_none_or(|t| t > now) {
            return;
        }
        let due: Vec<(NodeId, bool)> =
            self.routes.iter().filter(|(_, r)| r.lifetime <= now).map(|(&d, r)| (d, r.valid)).collect();
        for (dst, valid) in due {
            if valid {
                self.invalidate(dst, None, delete_at, events);
            } else if let Some(r) = self.routes.remove(&dst) {
                self.lifetime_changed(Some(r.lifetime), None);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{events_at, net};
    use super::*;
    use crate::aodv::AodvConfig;
    use crate::harness::Fate;
    use crate::RoutingEngine;
    use meshbed_core::Duration;

    proptest::proptest! {
        /// Whatever the table is told, the earliest lifetime it keeps (when
        /// it keeps one) is the earliest of its routes, and so is what it
        /// answers: created, refreshed, invalidated, expired and deleted
        /// routes, with the answer asked for only now and then.
        #[test]
        fn the_earliest_lifetime_kept_is_the_tables(
            ops in proptest::collection::vec((0u8..5, 0u32..6, 0u64..60), 0..120),
        ) {
            let mut table = RouteTable::new(9);
            let mut events = VecDeque::new();
            let at = Instant::from_nanos;
            for (op, dst, t) in ops {
                match op {
                    0 => {
                        table.update(dst, dst % 3, (t % 4) as u8 + 1, (t % 3 > 0).then_some(t as u32 / 7), at(t), &mut events);
                    }
                    1 => table.refresh(dst, at(t)),
                    2 => table.invalidate(dst, None, at(t), &mut events),
                    3 => table.expire(at(t), at(t + 10), &mut events),
                    _ => {
                        table.next_lifetime();
                    }
                }
                let scan = table.routes.values().map(|r| r.lifetime).min();
                if let Some(kept) = table.earliest.get() {
                    proptest::prop_assert_eq!(kept, scan);
                }
                if op == 4 {
                    proptest::prop_assert_eq!(table.next_lifetime(), scan);
                }
            }
        }
    }

    #[test]
    fn data_keeps_a_route_alive_and_an_idle_route_expires() {
        let config = AodvConfig::default();
        let active = config.active_route_timeout;
        let mut net = net(3, &[(0, 1), (1, 2)], config);
        // A packet a second for ten seconds: longer than the RREP's
        // MY_ROUTE_TIMEOUT, so only refreshes by data keep the route.
        for _ in 0..10 {
            let id = net.send(0, 2);
            net.run_for(Duration::from_secs(1));
            assert!(matches!(net.fate(id), Fate::Delivered { hops: 2, .. }));
        }
        let last_send = net.now() - Duration::from_secs(1);
        assert!(!events_at(&net, 0).iter().any(|(_, e)| *e == RouteEvent::Lost { dst: 2 }));
        assert_eq!(net.engines[0].stats().route_discoveries, 1);
        // Idle: the route lives ACTIVE_ROUTE_TIMEOUT past its last use.
        net.run_until(last_send + active - Duration::from_nanos(1));
        assert_eq!(net.engines[0].route_to(2), Some((1, 2)));
        net.run_until(last_send + active);
        assert_eq!(net.engines[0].route_to(2), None);
        assert!(events_at(&net, 0).contains(&(last_send + active, RouteEvent::Lost { dst: 2 })));
    }
}
