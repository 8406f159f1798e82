//! OLSR's topology set (RFC 3626 §4.4, §9.5: the links TC messages
//! advertise, newest ANSN per originator) and the routing table computed
//! from the neighbourhood and the topology set (§10; here Dijkstra, so that
//! summed ETX works as well as hop count), with each route's last link, so
//! that the quality of a whole route can be walked back (seed 004 §III.B).

use super::packet::METRIC_INFINITE;
use super::{Metric, METRIC_UNIT};
use crate::common::seq_newer;
use crate::{NodeId, PathQuality, RouteEvent};
use meshbed_core::{Duration, Instant};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

/// RFC 3626 §4.4 topology tuple.
#[derive(Clone, Debug)]
struct Topology {
    seq: u16,
    until: Instant,
    metric: u16,
}

/// The topology set, keyed by (T_last, T_dest).
#[derive(Clone, Debug, Default)]
pub(super) struct TopologySet {
    tuples: BTreeMap<(NodeId, NodeId), Topology>,
    /// Bumped whenever the advertised links (T_last, T_dest, metric)
    /// change, not when a TC only refreshes them: the routing table is
    /// recomputed only then (RFC 3626 §10: "when a change is detected").
    links_version: u64,
    /// The tuples' expiry times, as a multiset (time → tuples), so that the
    /// next expiry is found, and an `expire` with nothing due skipped,
    /// without a scan of the set.
    untils: BTreeMap<Instant, u32>,
}

fn add_until(untils: &mut BTreeMap<Instant, u32>, at: Instant) {
    *untils.entry(at).or_insert(0) += 1;
}

fn remove_until(untils: &mut BTreeMap<Instant, u32>, at: Instant) {
    if let Some(n) = untils.get_mut(&at) {
        *n -= 1;
        if *n == 0 {
            untils.remove(&at);
        }
    }
}

impl TopologySet {
    /// A TC of `originator` at `now` (RFC 3626 §9.5): ignored if a newer
    /// ANSN is known; else it replaces the originator's older tuples.
    pub(super) fn process_tc(
        &mut self,
        now: Instant,
        originator: NodeId,
        vtime: Duration,
        ansn: u16,
        advertised: &[(NodeId, u16)],
    ) {
        let from_originator = self.tuples.range((originator, 0)..=(originator, NodeId::MAX));
        if from_originator.clone().any(|(_, t)| seq_newer(t.seq, ansn)) {
            return; // out of order: a newer set is known
        }
        let before = self.links_of(originator);
        let stale: Vec<_> = from_originator.filter(|(_, t)| t.seq != ansn).map(|(&k, _)| k).collect();
        for k in stale {
            if let Some(t) = self.tuples.remove(&k) {
                remove_until(&mut self.untils, t.until);
            }
        }
        let until = now + vtime;
        for &(dest, metric) in advertised {
            if let Some(old) = self.tuples.insert((originator, dest), Topology { seq: ansn, until, metric }) {
                remove_until(&mut self.untils, old.until);
            }
            add_until(&mut self.untils, until);
        }
        if self.links_of(originator) != before {
            self.links_version += 1;
        }
    }

    /// The links `originator` advertises: (T_dest, metric), in order.
    fn links_of(&self, originator: NodeId) -> Vec<(NodeId, u16)> {
        self.tuples.range((originator, 0)..=(originator, NodeId::MAX)).map(|(&(_, dest), t)| (dest, t.metric)).collect()
    }

    /// Drops expired tuples (RFC 3626 §4.4).
    pub(super) fn expire(&mut self, now: Instant) {
        if self.untils.first_key_value().is_none_or(|(&at, _)| at > now) {
            return; // nothing due
        }
        self.tuples.retain(|_, t| t.until > now);
        // The times left are exactly those after `now`.
        self.untils = self.untils.split_off(&(now + Duration::from_nanos(1)));
        self.links_version += 1;
    }

    /// The first expiry after `now`.
    pub(super) fn next_expiry(&self, now: Instant) -> Option<Instant> {
        self.untils.range(now + Duration::from_nanos(1)..).next().map(|(&at, _)| at)
    }

    /// Changes with the advertised links (see the field).
    pub(super) fn links_version(&self) -> u64 {
        self.links_version
    }

    /// When each tuple expires.
    /// The advertised links: (T_last, T_dest, metric).
    pub(super) fn links(&self) -> impl Iterator<Item = (NodeId, NodeId, u16)> + '_ {
        self.tuples.iter().map(|(&(last, dest), t)| (last, dest, t.metric))
    }
}

/// A routing table entry (RFC 3626 §10).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route {
    pub next_hop: NodeId,
    pub hop_count: u32,
    /// Summed link cost in [`METRIC_UNIT`]s (hops × 256 with hop count).
    pub metric: u32,
}

/// The routing table, with each route's last link.
#[derive(Clone, Debug, Default)]
pub(super) struct RoutingTable {
    routes: BTreeMap<NodeId, Route>,
    /// Per destination, the last link of its route: the node before it and
    /// the link's cost (walked back by `path_info`).
    last_links: BTreeMap<NodeId, (NodeId, u32)>,
}

impl RoutingTable {
    pub(super) fn routes(&self) -> &BTreeMap<NodeId, Route> {
        &self.routes
    }

    /// Recomputes every route of `node` (RFC 3626 §10 with link costs: 256
    /// per hop, or link ETX): Dijkstra from its symmetric neighbours
    /// `first_hops` (with their link cost) over the advertised `links`
    /// (2-hop and topology links with their wire metric), leaving out the
    /// destinations that `has_left`. Routes found, changed and lost are
    /// reported to `events`.
    pub(super) fn compute(
        &mut self,
        node: NodeId,
        metric: Metric,
        first_hops: Vec<(NodeId, u32)>,
        links: impl Iterator<Item = (NodeId, NodeId, u16)>,
        has_left: impl Fn(NodeId) -> bool,
        events: &mut VecDeque<RouteEvent>,
    ) {
        let hop = matches!(metric, Metric::HopCount);
        // An ETX is at least 1 (seed 004 eq. 1: the delivery ratios are at
        // most 1): a smaller cost, which no node measures but a damaged or
        // forged HELLO or TC can carry, counts as a loss-free link, so that
        // no link is cheaper than a perfect one and a path's quality never
        // reports an ETX below 1.
        let edge_cost = |m: u16| -> Option<u32> {
            if hop {
                Some(METRIC_UNIT)
            } else if m == METRIC_INFINITE {
                None
            } else {
                Some(u32::from(m).max(METRIC_UNIT))
            }
        };
        // Dense indices for the nodes seen (sorted ids, found by binary
        // search) so that Dijkstra's bookkeeping is arrays, not maps: this
        // runs after most TCs in a moving network (issue 28). Ids come from
        // the network, so they are never used as indices themselves.
        let links: Vec<(NodeId, NodeId, u32)> =
            links.filter_map(|(from, to, m)| edge_cost(m).map(|c| (from, to, c))).collect();
        let mut ids: Vec<NodeId> = links.iter().flat_map(|&(from, to, _)| [from, to]).collect();
        ids.extend(first_hops.iter().map(|&(n, _)| n));
        ids.push(node);
        ids.sort_unstable();
        ids.dedup();
        let index = |n: NodeId| ids.binary_search(&n).expect("every node seen has an index");
        // Each node's outgoing links in the order `links` gave them (a
        // counting sort), as the map of vectors before kept them.
        let mut start = vec![0usize; ids.len() + 1];
        for &(from, _, _) in &links {
            start[index(from) + 1] += 1;
        }
        for i in 1..start.len() {
            start[i] += start[i - 1];
        }
        let mut fill = start.clone();
        let mut edges = vec![(0, 0); links.len()];
        for &(from, to, c) in &links {
            let i = index(from);
            edges[fill[i]] = (to, c);
            fill[i] += 1;
        }
        let mut heap = BinaryHeap::new();
        for (n, c) in first_hops {
            heap.push(Reverse((c, 1u32, n, n, node, c)));
        }
        // The last two fields only break ties between equal routes, so the
        // routes themselves do not depend on them.
        let mut found: Vec<Option<(Route, (NodeId, u32))>> = vec![None; ids.len()];
        while let Some(Reverse((metric, hop_count, n, next_hop, prev, cost))) = heap.pop() {
            let i = index(n);
            if n == node || found[i].is_some() || has_left(n) {
                continue;
            }
            found[i] = Some((Route { next_hop, hop_count, metric }, (prev, cost)));
            for &(m, c) in &edges[start[i]..start[i + 1]] {
                if m != node && found[index(m)].is_none() {
                    heap.push(Reverse((metric.saturating_add(c), hop_count + 1, m, next_hop, n, c)));
                }
            }
        }
        let mut routes = BTreeMap::new();
        let mut last_links = BTreeMap::new();
        for (&n, f) in ids.iter().zip(found) {
            if let Some((route, last)) = f {
                routes.insert(n, route);
                last_links.insert(n, last);
            }
        }
        self.update(routes, last_links, events);
    }

    fn update(
        &mut self,
        new: BTreeMap<NodeId, Route>,
        last_links: BTreeMap<NodeId, (NodeId, u32)>,
        events: &mut VecDeque<RouteEvent>,
    ) {
        self.last_links = last_links;
        for (&dst, r) in &new {
            match self.routes.get(&dst) {
                None => events.push_back(RouteEvent::Found { dst, next_hop: r.next_hop, hop_count: r.hop_count }),
                Some(old) if old.next_hop != r.next_hop => {
                    events.push_back(RouteEvent::Changed { dst, next_hop: r.next_hop, hop_count: r.hop_count })
                }
                _ => {}
            }
        }
        for &dst in self.routes.keys() {
            if !new.contains_key(&dst) {
                events.push_back(RouteEvent::Lost { dst });
            }
        }
        self.routes = new;
    }

    /// The route to `dst` walked back through each destination's last
    /// link from `node`: the first hop's cost is the node's own link ETX,
    /// the others' what their HELLOs and TCs advertised (with hop count, 1
    /// per link).
    pub(super) fn path_info(&self, node: NodeId, dst: NodeId) -> Option<PathQuality> {
        let route = self.routes.get(&dst)?;
        let mut link_etx = Vec::with_capacity(route.hop_count as usize);
        let mut at = dst;
        while at != node {
            // A route's last links lead back here in hop_count steps; the
            // bound only guards against a table that says otherwise.
            if link_etx.len() >= route.hop_count as usize {
                return None;
            }
            let &(prev, cost) = self.last_links.get(&at)?;
            link_etx.push(f64::from(cost) / f64::from(METRIC_UNIT));
            at = prev;
        }
        link_etx.reverse();
        Some(PathQuality { hop_count: route.hop_count, link_etx })
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{chain_seen_from_0, make, CONVERGENCE};
    use super::super::OlsrConfig;
    use super::*;
    use crate::harness::{Fate, Net};
    use crate::RoutingEngine;

    #[test]
    fn chain_of_six_converges_and_delivers_over_five_hops() {
        let mut net = Net::chain(6, make(OlsrConfig::default()));
        net.run_for(CONVERGENCE);
        for a in 0..6u32 {
            let routes = net.engines[a as usize].routes();
            for b in (0..6u32).filter(|&b| b != a) {
                let r = routes.get(&b).unwrap_or_else(|| panic!("{a} has no route to {b}"));
                assert_eq!(r.hop_count, a.abs_diff(b), "{a} → {b}");
                assert_eq!(r.next_hop, if b > a { a + 1 } else { a - 1 });
            }
        }
        // Middle nodes are MPRs of both their neighbours, the ends of none.
        assert_eq!(net.engines[0].mpr_set().iter().copied().collect::<Vec<_>>(), vec![1]);
        assert!(net.engines[5].mpr_set().contains(&4));
        let id = net.send(0, 5);
        net.run_for(Duration::from_millis(100));
        assert!(matches!(net.fate(id), Fate::Delivered { hops: 5, .. }), "{:?}", net.fate(id));
        assert!(net
            .events
            .iter()
            .any(|(_, n, e)| *n == 0 && *e == RouteEvent::Found { dst: 5, next_hop: 1, hop_count: 5 }));
    }

    /// ETX 1/(0.8 · 0.9) in METRIC_UNITs: 256 · 100 / 72, rounded down
    /// as `link_etx` does.
    const ETX_0_8_0_9: u16 = 355;

    #[test]
    fn path_info_gives_the_hop_count_and_each_links_etx_from_the_link_and_topology_sets() {
        // The lossy link is the first hop, measured by node 0's own probes:
        // d_r = 8/10, d_f = 9/10 (seed 004 eq. 1).
        let e = chain_seen_from_0(OlsrConfig::etx(), 8, 9, METRIC_UNIT as u16);
        assert_eq!(e.link_etx(1), Some(u32::from(ETX_0_8_0_9)));
        let q = e.path_info(3).expect("a route to 3");
        let etx = f64::from(ETX_0_8_0_9) / 256.0;
        assert_eq!(q, PathQuality { hop_count: 3, link_etx: vec![etx, 1.0, 1.0] });
        // P_max = 1 − 1/ETX of the worst link (eqs. 2–4): 1 − 0.72.
        assert!((q.max_link_loss() - 0.28).abs() < 0.002, "{}", q.max_link_loss());
        // The lossy link in the middle, as node 1's HELLO and node 2's TC
        // advertise it; node 0's own link is clean.
        let e = chain_seen_from_0(OlsrConfig::etx(), 10, 10, ETX_0_8_0_9);
        assert_eq!(e.link_etx(1), Some(METRIC_UNIT));
        assert_eq!(e.path_info(3).expect("a route to 3").link_etx, vec![1.0, etx, 1.0]);
        assert_eq!(e.path_info(2).expect("a route to 2").link_etx, vec![1.0, etx]);
        assert_eq!(e.path_info(1), Some(PathQuality { hop_count: 1, link_etx: vec![1.0] }));
        assert!((e.path_info(3).unwrap().max_link_loss() - 0.28).abs() < 0.002);
        // No route, no path.
        assert_eq!(e.path_info(7), None);
        // With hop count nothing is measured: every link counts as ETX 1.
        let e = chain_seen_from_0(OlsrConfig::default(), 8, 9, ETX_0_8_0_9);
        let q = e.path_info(3).expect("a route to 3");
        assert_eq!(q, PathQuality::unmeasured(3));
        assert_eq!(q.max_link_loss(), 0.0);
    }

    /// A HELLO and a TC advertising a link cost below ETX 1 (found by the
    /// `control_packets` fuzz target: an ETX of 0.11 in a path's quality)
    /// count it as a loss-free link: boundary pair 255 (below) and 256.
    #[test]
    fn an_advertised_cost_below_etx_1_counts_as_etx_1() {
        for (advertised, etx) in [(0, 1.0), (29, 1.0), (255, 1.0), (256, 1.0), (257, 257.0 / 256.0)] {
            let e = chain_seen_from_0(OlsrConfig::etx(), 10, 10, advertised);
            let q = e.path_info(3).expect("a route to 3");
            assert_eq!(q.link_etx, vec![1.0, etx, 1.0], "advertised {advertised}");
            assert_eq!(e.routes()[&3].metric, 2 * METRIC_UNIT + (advertised as u32).max(METRIC_UNIT));
        }
    }
}
