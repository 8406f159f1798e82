//! OLSR's neighbourhood (RFC 3626 §4.2–4.3, §7, §8): the link set kept by
//! HELLO link sensing (with RFC 3626 §13's link-layer notification), the
//! 2-hop neighbour set, the MPR set (§8.3.1 heuristic) and the MPR selector
//! set, and the ETX of each link measured with probes (seed 004 §III.B; De
//! Couto et al.): what this node's HELLOs and probes say, and what it
//! learns from its neighbours'.

use super::edges::ReadInto;
use super::mpr::select_mprs;
use super::packet::{HelloEntry, ASYM_LINK, LOST_LINK, METRIC_INFINITE, MPR_NEIGH, NOT_NEIGH, SYM_LINK, SYM_NEIGH};
use super::two_hop::TwoHopSet;
use super::{Metric, METRIC_UNIT};
use crate::NodeId;
use meshbed_core::{Duration, Instant};
use std::cell::OnceCell;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Probes are jittered by up to a tenth of their period so that
/// neighbours do not stay synchronised (De Couto et al. §4).
const ETX_PROBE_JITTER_DIVISOR: u64 = 10;

/// The most a probe is sent early, for a probe every `probe_interval`.
pub(super) fn probe_jitter(probe_interval: Duration) -> Duration {
    Duration::from_nanos(probe_interval.as_nanos() / ETX_PROBE_JITTER_DIVISOR)
}

/// RFC 3626 §4.2.1 link tuple (one interface per node, so also the
/// neighbour tuple of §4.3.1).
#[derive(Clone, Debug)]
struct Link {
    /// L_ASYM_time: until then the neighbour is heard.
    asym_until: Instant,
    /// L_SYM_time: until then the link is symmetric.
    sym_until: Instant,
    /// L_time: until then the tuple is kept (advertised as lost after
    /// the symmetric time).
    until: Instant,
    /// L_LOST_LINK_time (RFC 3626 §13): after a link-layer failure the
    /// link counts as lost until then, whatever HELLOs say.
    lost_until: Option<Instant>,
    willingness: u8,
    /// Symmetric at the last recompute (to report a break once).
    was_sym: bool,
}

impl Link {
    fn is_sym(&self, now: Instant) -> bool {
        self.sym_until > now && self.lost_until.is_none_or(|t| t <= now)
    }
    fn is_heard(&self, now: Instant) -> bool {
        self.asym_until > now && self.lost_until.is_none_or(|t| t <= now)
    }
}

/// ETX bookkeeping of one neighbour (seed 004 §III.B).
#[derive(Clone, Debug, Default)]
struct ProbeRecord {
    /// When its probes arrived, within the window.
    received_at: VecDeque<Instant>,
    /// How many of our probes it last reported receiving.
    forward_count: u8,
}

/// The link set, 2-hop set, MPR and MPR selector sets and ETX probes of
/// one node.
#[derive(Clone, Debug, Default)]
pub(super) struct Neighbours {
    links: BTreeMap<NodeId, Link>,
    two_hop: TwoHopSet,
    /// Selected from `mpr_inputs` when first read (a HELLO is built), not
    /// each time they change: only HELLOs carry it, and the same inputs
    /// give the same set whenever it is selected (issue 28: selecting at
    /// every change was a sixth of a 100-node OLSR run).
    mpr_set: OnceCell<BTreeSet<NodeId>>,
    mpr_selectors: BTreeMap<NodeId, Instant>,
    probes: BTreeMap<NodeId, ProbeRecord>,
    /// What the MPR set was last selected from.
    mpr_inputs: Option<MprInputs>,
    /// Counts every change of what MPR selection and the 2-hop check read
    /// (a link added, removed, turning symmetric or not, its willingness;
    /// a 2-hop tuple added or removed): `update` looks at the sets again
    /// only when it moved (issue 28: reading them after every control
    /// message was a quarter of a 100-node OLSR run).
    changes: u64,
    /// A link stopped being symmetric or left the set since the 2-hop set
    /// and the MPR selectors were last checked against the links: only
    /// then can either hold a tuple through a link that is not symmetric
    /// (both are added only through symmetric ones), so `update` looks only
    /// then (issue 28: the lookups after every control message were a
    /// sixth of a 100-node OLSR run).
    check_due: bool,
    /// `changes` when the MPR inputs were last compared.
    mpr_checked_at: Option<u64>,
    /// Counts every change of a link cost the routes read beyond
    /// `changes`: a 2-hop tuple's advertised metric, an ETX probe heard
    /// or aged out. With `changes` it versions the routing table's inputs
    /// from this set ([`Neighbours::version`]).
    cost_changes: u64,
    /// No link, 2-hop or MPR selector tuple expires before this (a lower
    /// bound, lowered at every write of an expiry time, made exact at each
    /// scan): `expire` scans the sets only once one may be due, not on
    /// every packet (issue 28: the scans were a quarter of a 100-node OLSR
    /// run). `None`: no tuple.
    earliest_until: Option<Instant>,
    /// Counts every write and removal of a time [`Neighbours::expiry_times`]
    /// yields, so that [`Neighbours::next_time_after`] can keep its answer
    /// while none happened (issue 28: scanning every tuple's times after
    /// each control packet was a sixth of a 100-node OLSR run).
    times_written: u64,
    /// The last answer of `next_time_after`: (`times_written` then, the
    /// time asked about, the answer).
    next_time: Option<(u64, Instant, Option<Instant>)>,
    /// When `update` last looked for links turning symmetric or not:
    /// (`times_written` then, the first time after it at which a link's
    /// symmetry can change, if any). Until either moves no link's can, and
    /// `update` does not look (issue 28: the look after every control
    /// message was a twentieth of a 100-node OLSR run).
    sym_checked: Option<(u64, Option<Instant>)>,
}

/// Everything MPR selection reads (RFC 3626 §8.3.1): the symmetric
/// neighbours with their willingness, and the 2-hop tuples. Selection runs
/// again only when these change: same inputs, same MPR set (issue 28: it
/// was most of OLSR's cost, run on every control packet).
#[derive(Clone, Debug, PartialEq)]
struct MprInputs {
    /// The node itself (not in N2).
    me: NodeId,
    symmetric: Vec<(NodeId, u8)>,
    /// The 2-hop set as it was at this count of its changes: the set
    /// itself is read when the MPRs are selected, and no tuple is added or
    /// removed between `update` and a HELLO (the engine runs `update`
    /// after every change). A copy of its ~570 keys at each change of a
    /// 100-node network was a twelfth of an OLSR run (issue 28).
    two_hop_at: u64,
}

impl Neighbours {
    pub(super) fn mpr_set(&self) -> &BTreeSet<NodeId> {
        self.mpr_set.get_or_init(|| match &self.mpr_inputs {
            None => BTreeSet::new(),
            Some(inputs) => {
                debug_assert_eq!(inputs.two_hop_at, self.two_hop.changes(), "2-hop set changed after `update`");
                select_mprs(inputs.me, &inputs.symmetric, self.two_hop.keys())
            }
        })
    }

    /// Changes whenever the first hops, their costs or the 2-hop links
    /// may have (once `update` has run at the time asked about): the same
    /// version, the same inputs to the routing table from this set.
    pub(super) fn version(&self) -> (u64, u64) {
        (self.changes, self.cost_changes)
    }

    /// Symmetric 1-hop neighbours at `now`.
    pub(super) fn symmetric(&self, now: Instant) -> Vec<NodeId> {
        self.symmetric_at(now).collect()
    }

    /// Symmetric 1-hop neighbours at `now`, in order.
    pub(super) fn symmetric_at(&self, now: Instant) -> impl Iterator<Item = NodeId> + '_ {
        self.links.iter().filter(move |(_, l)| l.is_sym(now)).map(|(&n, _)| n)
    }

    /// Whether the link to `neighbour` is symmetric at `now`.
    pub(super) fn is_symmetric(&self, now: Instant, neighbour: NodeId) -> bool {
        self.links.get(&neighbour).is_some_and(|l| l.is_sym(now))
    }

    /// Whether `neighbour` chose this node as an MPR.
    pub(super) fn is_mpr_selector(&self, neighbour: NodeId) -> bool {
        self.mpr_selectors.contains_key(&neighbour)
    }

    /// The neighbours that chose this node as an MPR.
    pub(super) fn mpr_selectors(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.mpr_selectors.keys().copied()
    }

    /// The link ETX to `neighbour` in [`METRIC_UNIT`]s (256 = ETX 1), or
    /// `None` when a delivery ratio is zero; [`METRIC_UNIT`] with hop count.
    pub(super) fn link_etx(&self, metric: Metric, neighbour: NodeId) -> Option<u32> {
        let Metric::Etx { probe_interval, window } = metric else {
            return Some(METRIC_UNIT);
        };
        let expected = (window.as_nanos() / probe_interval.as_nanos().max(1)).max(1) as u32;
        let p = self.probes.get(&neighbour)?;
        // Jittered probes can put one more than `expected` in a window; a
        // delivery ratio is at most 1.
        let d_r = (p.received_at.len() as u32).min(expected);
        let d_f = (p.forward_count as u32).min(expected);
        if d_r == 0 || d_f == 0 {
            return None;
        }
        // Seed 004 eq. (1): ETX = 1 / (d_f · d_r), in 1/256 units.
        Some(METRIC_UNIT * expected * expected / (d_f * d_r))
    }

    /// The cost of the link to `neighbour` under `metric`.
    pub(super) fn link_cost(&self, metric: Metric, neighbour: NodeId) -> Option<u32> {
        match metric {
            Metric::HopCount => Some(METRIC_UNIT),
            Metric::Etx { .. } => self.link_etx(metric, neighbour),
        }
    }

    /// The link cost to `neighbour` as HELLOs and TCs carry it.
    pub(super) fn wire_metric(&self, metric: Metric, neighbour: NodeId) -> u16 {
        self.link_cost(metric, neighbour).map_or(METRIC_INFINITE, |c| c.min(METRIC_INFINITE as u32 - 1) as u16)
    }

    /// RFC 3626 §6.2: one HELLO entry per link with its link and neighbour
    /// type.
    pub(super) fn hello_entries(&self, now: Instant, metric: Metric) -> Vec<HelloEntry> {
        self.links
            .iter()
            .map(|(&n, l)| {
                let (link_type, neigh_type) = if l.is_sym(now) {
                    (SYM_LINK, if self.mpr_set().contains(&n) { MPR_NEIGH } else { SYM_NEIGH })
                } else if l.is_heard(now) {
                    (ASYM_LINK, NOT_NEIGH)
                } else {
                    (LOST_LINK, NOT_NEIGH)
                };
                HelloEntry {
                    neighbour: n,
                    link_code: (neigh_type << 2) | link_type,
                    metric: self.wire_metric(metric, n),
                }
            })
            .collect()
    }

    /// What this node's probe reports: how many probes it received from
    /// each neighbour in the window.
    pub(super) fn probe_report(&self) -> Vec<(NodeId, u8)> {
        self.probes
            .iter()
            .filter(|(_, p)| !p.received_at.is_empty())
            .map(|(&n, p)| (n, p.received_at.len().min(u8::MAX as usize) as u8))
            .collect()
    }

    /// A HELLO from neighbour `from` at `now`, heard by `node`: RFC 3626
    /// §7.1.1 link sensing and §8.1.1, §8.2.1, §8.4.1; a symmetric link is
    /// kept `hold` (NEIGHB_HOLD_TIME) past its symmetric time.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn process_hello(
        &mut self,
        now: Instant,
        node: NodeId,
        hold: Duration,
        from: NodeId,
        vtime: Duration,
        willingness: u8,
        neighbours: &[HelloEntry],
    ) {
        self.times_written += 1;
        let changes = &mut self.changes;
        let link = self.links.entry(from).or_insert_with(|| {
            *changes += 1;
            Link { asym_until: now, sym_until: now, until: now + vtime, lost_until: None, willingness, was_sym: false }
        });
        link.asym_until = now + vtime;
        if link.willingness != willingness {
            link.willingness = willingness;
            *changes += 1;
        }
        if let Some(me) = neighbours.iter().find(|e| e.neighbour == node) {
            match me.link_code & 0b11 {
                LOST_LINK => link.sym_until = now,
                SYM_LINK | ASYM_LINK => {
                    link.sym_until = now + vtime;
                    link.until = link.sym_until + hold;
                }
                _ => {}
            }
        }
        link.until = link.until.max(link.asym_until);
        let (until, sym) = (link.until, link.is_sym(now));
        self.note_until(until);
        if !sym {
            // What `update` would drop at once (a HELLO saying the link is
            // lost): nothing reads these in between.
            self.check_due = true;
            return;
        }
        // This node's own entry says whether the sender chose it as MPR;
        // the others are the sender's 2-hop tuples, held or removed in the
        // HELLO's order.
        for e in neighbours.iter().filter(|e| e.neighbour == node) {
            if e.link_code >> 2 == MPR_NEIGH {
                self.mpr_selectors.insert(from, now + vtime);
                self.note_until(now + vtime);
            } else {
                self.mpr_selectors.remove(&from);
            }
        }
        let two_hop = neighbours.iter().filter(|e| e.neighbour != node).map(|e| match e.link_code >> 2 {
            SYM_NEIGH | MPR_NEIGH => (e.neighbour, Some(e.metric)),
            _ => (e.neighbour, None),
        });
        let applied = self.two_hop.apply_hello(from, now + vtime, two_hop);
        self.changes += applied.new + applied.removed;
        self.cost_changes += applied.recosted;
        if applied.held > 0 {
            self.note_until(now + vtime);
        }
    }

    /// A probe from neighbour `from` at `now`, reporting how many of each
    /// node's probes it received (seed 004 §III.B).
    pub(super) fn record_probe(&mut self, now: Instant, me: NodeId, from: NodeId, received: &[(NodeId, u8)]) {
        self.cost_changes += 1;
        let p = self.probes.entry(from).or_default();
        p.received_at.push_back(now);
        p.forward_count = received.iter().find(|(n, _)| *n == me).map_or(0, |(_, c)| *c);
    }

    /// An expiry time was written: keep `earliest_until` a lower bound.
    fn note_until(&mut self, until: Instant) {
        self.earliest_until = Some(self.earliest_until.map_or(until, |e| e.min(until)));
    }

    /// RFC 3626 §13: a link-layer failure at `now` makes the link to
    /// `neighbour` lost at once, for `hold`, whatever HELLOs say meanwhile.
    pub(super) fn link_failure(&mut self, now: Instant, neighbour: NodeId, hold: Duration) {
        if let Some(l) = self.links.get_mut(&neighbour) {
            self.changes += 1;
            self.times_written += 1;
            self.check_due = true;
            l.lost_until = Some(now + hold);
            l.until = l.until.max(now + hold);
            let until = l.until;
            self.note_until(until);
        }
    }

    /// Drops expired tuples (RFC 3626 §4) and probes older than the ETX
    /// window.
    pub(super) fn expire(&mut self, now: Instant, metric: Metric) {
        if self.earliest_until.is_some_and(|e| e <= now) {
            self.times_written += 1;
            let links_before = self.links.len();
            self.links.retain(|_, l| l.until > now);
            let two_hop_expired = self.two_hop.expire(now);
            if self.links.len() != links_before || two_hop_expired {
                self.changes += 1;
            }
            if self.links.len() != links_before {
                self.check_due = true;
            }
            self.mpr_selectors.retain(|_, &mut t| t > now);
            self.earliest_until = self
                .links
                .values()
                .map(|l| l.until)
                .chain(self.two_hop.earliest())
                .chain(self.mpr_selectors.values().copied())
                .min();
        }
        if let Metric::Etx { window, .. } = metric {
            for p in self.probes.values_mut() {
                while p.received_at.front().is_some_and(|&t| t + window <= now) {
                    p.received_at.pop_front();
                    self.cost_changes += 1;
                }
            }
            self.probes.retain(|_, p| !p.received_at.is_empty());
        }
    }

    /// Brings the derived sets up to date at `now`: links no longer
    /// symmetric (returned, each reported once), MPR selectors and 2-hop
    /// tuples only through symmetric links (RFC 3626 §8.5), the MPR set.
    pub(super) fn update(&mut self, now: Instant, me: NodeId) -> Vec<NodeId> {
        let mut broken = Vec::new();
        let quiet = self
            .sym_checked
            .is_some_and(|(written, next)| written == self.times_written && next.is_none_or(|t| now < t));
        debug_assert!(
            !quiet || self.links.values().all(|l| l.was_sym == l.is_sym(now)),
            "a link's symmetry moved unseen"
        );
        if !quiet {
            let mut next_change: Option<Instant> = None;
            for (&n, l) in self.links.iter_mut() {
                let sym = l.is_sym(now);
                if l.was_sym && !sym {
                    broken.push(n);
                }
                if l.was_sym != sym {
                    self.changes += 1;
                    self.check_due |= !sym;
                }
                l.was_sym = sym;
                // `is_sym` can change only at these times.
                for t in [Some(l.sym_until), l.lost_until].into_iter().flatten().filter(|&t| t > now) {
                    next_change = Some(next_change.map_or(t, |c| c.min(t)));
                }
            }
            self.sym_checked = Some((self.times_written, next_change));
        }
        if std::mem::take(&mut self.check_due) {
            for (&n, l) in self.links.iter() {
                if !l.is_sym(now) && self.mpr_selectors.remove(&n).is_some() {
                    self.times_written += 1;
                }
            }
            self.drop_two_hop_through_asymmetric(now);
        }
        if self.mpr_checked_at != Some(self.changes) {
            // Compared in place: the vectors are built only when they changed.
            let symmetric = || self.links.iter().filter(|(_, l)| l.is_sym(now)).map(|(&n, l)| (n, l.willingness));
            let two_hop_at = self.two_hop.changes();
            let same = self
                .mpr_inputs
                .as_ref()
                .is_some_and(|old| old.two_hop_at == two_hop_at && old.symmetric.iter().copied().eq(symmetric()));
            if !same {
                self.mpr_inputs = Some(MprInputs { me, symmetric: symmetric().collect(), two_hop_at });
                self.mpr_set = OnceCell::new();
            }
            self.mpr_checked_at = Some(self.changes);
        }
        broken
    }

    /// Keeps 2-hop tuples only through symmetric links (RFC 3626 §8.5):
    /// checks each neighbour the set goes through once, and removes only
    /// through one that is not symmetric — what a `retain` over the set
    /// removed (a fifth of an OLSR run's time when it ran after every
    /// control message, issue 28; reading every key for the neighbours,
    /// a fortieth).
    fn drop_two_hop_through_asymmetric(&mut self, now: Instant) {
        let links = &self.links;
        let through_asymmetric: Vec<NodeId> =
            self.two_hop.vias().filter(|via| !links.get(via).is_some_and(|l| l.is_sym(now))).collect();
        for via in through_asymmetric {
            self.two_hop.remove_via(via);
            self.changes += 1;
            self.times_written += 1;
        }
    }

    /// The first of [`Neighbours::expiry_times`] after `now`. The last
    /// answer stands while no time was written or removed and `now` has
    /// not reached it: no time lay between the instant it was asked about
    /// and the answer.
    pub(super) fn next_time_after(&mut self, now: Instant) -> Option<Instant> {
        if let Some((written, asked, next)) = self.next_time {
            if written == self.times_written && asked <= now && next.is_none_or(|t| now < t) {
                return next;
            }
        }
        let next = self.expiry_times().filter(|&t| t > now).chain(self.two_hop.next_until_after(now)).min();
        self.next_time = Some((self.times_written, now, next));
        next
    }

    /// Every time at which a link or MPR selector tuple changes or
    /// expires (the 2-hop set keeps its own times).
    fn expiry_times(&self) -> impl Iterator<Item = Instant> + '_ {
        let link_times = self
            .links
            .values()
            .flat_map(|l| [Some(l.asym_until), Some(l.sym_until), Some(l.until), l.lost_until])
            .flatten();
        link_times.chain(self.mpr_selectors.values().copied())
    }

    /// The symmetric neighbours at `now` with the cost of the link to each.
    /// (Written into `out`, emptied first: a buffer handed back, so that
    /// reads do not allocate.)
    pub(super) fn first_hops(&self, now: Instant, metric: Metric, mut out: Vec<(NodeId, u32)>) -> Vec<(NodeId, u32)> {
        out.clear();
        out.extend(
            self.links
                .iter()
                .filter(|(_, l)| l.is_sym(now))
                .filter_map(|(&n, _)| self.link_cost(metric, n).map(|c| (n, c))),
        );
        out
    }

    /// The links from symmetric neighbours to their neighbours as edges
    /// (neighbour, 2-hop neighbour, `cost` of the metric it advertised; a
    /// link whose cost is `None` left out), sorted: the 2-hop set's
    /// [`TwoHopSet::edges`].
    pub(super) fn two_hop_edges(
        &mut self,
        into: ReadInto<'_>,
        cost: impl Fn(u16) -> Option<u32>,
    ) -> Option<Vec<NodeId>> {
        self.two_hop.edges(into, cost)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{make, CONVERGENCE, SEED};
    use super::super::{
        OlsrConfig, OlsrEngine, Route, ETX_PROBE_INTERVAL, ETX_WINDOW, METRIC_UNIT, NEIGHB_HOLD_TIME, TOP_HOLD_TIME,
    };
    use crate::harness::{Fate, Net};
    use crate::{RouteEvent, RoutingEngine};
    use meshbed_core::{stream_rng, Duration, Instant, StreamId, StreamKind};

    /// 0 – 1 – 2 is the short way, 0 – 3 – 4 – 2 the long one; link 1 – 2
    /// breaks. With link-layer notification node 1 drops the link at the
    /// MAC's failure, without it when HELLOs have been missing for
    /// NEIGHB_HOLD_TIME; either way node 0 reconverges to the long path.
    fn broken_link_reconverges_to_the_other_path(link_layer_notification: bool) {
        let links = [(0, 1), (1, 2), (0, 3), (3, 4), (4, 2)];
        let mut net = Net::new(5, &links, make(OlsrConfig { link_layer_notification, ..OlsrConfig::default() }));
        net.run_for(CONVERGENCE);
        assert_eq!(net.engines[0].routes()[&2], Route { next_hop: 1, hop_count: 2, metric: 2 * METRIC_UNIT });
        net.set_link(1, 2, false);
        let broken_at = net.now();
        let lost = net.send(0, 2);
        net.run_for(Duration::from_millis(10));
        assert_eq!(net.fate(lost), &Fate::LostOnLink { from: 1, to: 2 });
        let broken = |net: &Net<OlsrEngine>| {
            net.events.iter().find(|(_, n, e)| *n == 1 && *e == RouteEvent::LinkBroken { neighbour: 2 }).map(|e| e.0)
        };
        if link_layer_notification {
            // The MAC's failure drops the link at node 1 at once (RFC 3626 §13).
            assert!(broken(&net).is_some_and(|t| t < broken_at + Duration::from_millis(10)));
            assert!(!net.engines[1].symmetric_neighbours().contains(&2));
        } else {
            assert_eq!(broken(&net), None);
            assert!(net.engines[1].symmetric_neighbours().contains(&2));
        }
        net.run_for(NEIGHB_HOLD_TIME + TOP_HOLD_TIME);
        assert!(broken(&net).is_some_and(|t| t <= broken_at + NEIGHB_HOLD_TIME));
        assert_eq!(net.engines[0].routes()[&2].next_hop, 3);
        assert_eq!(net.engines[0].routes()[&2].hop_count, 3);
        assert!(net
            .events
            .iter()
            .any(|(_, n, e)| *n == 0 && matches!(e, RouteEvent::Changed { dst: 2, next_hop: 3, .. })));
        let id = net.send(0, 2);
        net.run_for(Duration::from_millis(100));
        assert!(matches!(net.fate(id), Fate::Delivered { hops: 3, .. }), "{:?}", net.fate(id));
    }

    #[test]
    fn broken_link_reconverges_with_and_without_link_layer_notification() {
        broken_link_reconverges_to_the_other_path(true);
        broken_link_reconverges_to_the_other_path(false);
    }

    #[test]
    fn link_failure_drops_the_link_at_once_with_link_layer_notification() {
        let config = OlsrConfig { link_layer_notification: true, ..OlsrConfig::default() };
        let mut net = Net::chain(3, make(config));
        net.run_for(CONVERGENCE);
        while net.engines[1].poll_event().is_some() {}
        let now = net.now();
        net.engines[1].on_link_failure(now, 2);
        assert!(!net.engines[1].routes().contains_key(&2));
        let events: Vec<_> = std::iter::from_fn(|| net.engines[1].poll_event()).collect();
        assert!(events.contains(&RouteEvent::LinkBroken { neighbour: 2 }));
        assert!(events.contains(&RouteEvent::Lost { dst: 2 }));
        assert_eq!(net.engines[1].stats().link_failures, 1);
    }

    #[test]
    fn without_link_layer_notification_a_mac_failure_is_only_counted() {
        let mut net = Net::chain(3, make(OlsrConfig::default()));
        net.run_for(CONVERGENCE);
        while net.engines[1].poll_event().is_some() {}
        let now = net.now();
        net.engines[1].on_link_failure(now, 2);
        assert_eq!(net.engines[1].routes()[&2].next_hop, 2);
        assert_eq!(net.engines[1].poll_event(), None);
        assert_eq!(net.engines[1].stats().link_failures, 1);
    }

    /// Diamond 0 – {1, 3} – 2 plus a direct 0 – 2 link that is up in only
    /// 40 % of 100 ms slots, drawn at random (a lossy link, emulated by
    /// toggling it; random rather than periodic so that periodic probes do
    /// not alias with it): about 40 % of its probes and HELLOs get through.
    /// Samples, at the start of up slots after warm-up: whether 0 – 2 is a
    /// symmetric link at node 0, and node 0's route to 2. A packet sent
    /// then must arrive.
    fn routes_0_to_2_on_lossy_diamond(config: OlsrConfig) -> Vec<(bool, Route)> {
        const SLOT: Duration = Duration::from_millis(100);
        let links = [(0, 1), (1, 2), (0, 3), (3, 2), (0, 2)];
        let mut net = Net::new(4, &links, make(config));
        let mut loss = stream_rng(SEED, StreamId::new(StreamKind::Experiment, 0));
        let mut seen = Vec::new();
        for slot in 0..600 {
            let up = rand::Rng::gen_bool(&mut loss, 0.4);
            net.set_link(0, 2, up);
            if up && slot >= 300 {
                let direct_sym = net.engines[0].symmetric_neighbours().contains(&2);
                seen.push((direct_sym, net.engines[0].routes().get(&2).cloned().expect("a route to 2")));
                let id = net.send(0, 2);
                net.run_for(Duration::from_millis(10));
                assert!(matches!(net.fate(id), Fate::Delivered { .. }), "{:?}", net.fate(id));
            }
            net.run_until(Instant::ZERO + SLOT * (slot + 1));
        }
        seen
    }

    #[test]
    fn etx_takes_two_good_links_where_hop_count_takes_the_lossy_one() {
        let etx = routes_0_to_2_on_lossy_diamond(OlsrConfig::etx());
        // Even while the direct link is up and symmetric, its ETX (≈ 1/0.4²)
        // loses to two loss-free links (1 + 1).
        assert!(etx.iter().filter(|(sym, _)| *sym).count() >= 10, "{etx:?}");
        assert!(etx.iter().all(|(_, r)| r.hop_count == 2 && r.next_hop != 2), "ETX routes {etx:?}");
        assert!(etx.iter().all(|(_, r)| r.metric == 2 * METRIC_UNIT), "ETX routes {etx:?}");
        // Hop count takes the direct link whenever HELLOs keep it
        // symmetric (a good part of the time; lost HELLOs break it now and
        // then).
        let hops = routes_0_to_2_on_lossy_diamond(OlsrConfig::default());
        assert!(hops.iter().filter(|(sym, _)| *sym).count() >= 10, "{hops:?}");
        for (sym, r) in &hops {
            assert_eq!(*sym, r.next_hop == 2 && r.hop_count == 1, "hop-count routes {hops:?}");
        }
    }

    #[test]
    fn etx_of_a_clean_link_is_one() {
        let mut net = Net::chain(2, make(OlsrConfig::etx()));
        net.run_for(CONVERGENCE);
        assert_eq!(net.engines[0].link_etx(1), Some(METRIC_UNIT));
        assert_eq!(net.engines[0].routes()[&1].metric, METRIC_UNIT);
        // Probes stop: after the window (and the next probe timer, when
        // the engine next looks) the ratios are zero, the link has no ETX
        // and (with HELLOs gone too) no route.
        net.set_link(0, 1, false);
        net.run_for(ETX_WINDOW + ETX_PROBE_INTERVAL);
        assert_eq!(net.engines[0].link_etx(1), None);
        assert!(net.engines[0].routes().is_empty());
    }

    proptest::proptest! {
        /// Reading the 2-hop links again only for the neighbours whose
        /// tuples changed gives what reading every tuple gives, after any
        /// run of HELLOs, link failures and expiries, and every link that
        /// changed since the last read is out of a touched neighbour.
        #[test]
        fn two_hop_edges_read_again_only_where_changed_are_all_of_them(
            ops in proptest::collection::vec(
                (1u32..6, 1u64..4, proptest::collection::vec((0u32..8, 0u8..12, 0u16..3), 0..5), 0u8..8),
                1..40,
            ),
        ) {
            use super::super::packet::HelloEntry;
            use super::super::edges::{check_reread, ReadInto, SortedEdges};
            let cost = |m: u16| (m > 0).then_some(u32::from(m) * 256);
            let mut n = super::Neighbours::default();
            let (mut edges, mut kept) = (SortedEdges::default(), false);
            for (step, (from, vtime_s, entries, what)) in ops.into_iter().enumerate() {
                let now = Instant::ZERO + Duration::from_millis(700 * step as u64);
                match what {
                    0 => n.expire(now, super::Metric::HopCount),
                    1 => n.link_failure(now, from, Duration::from_secs(1)),
                    _ => {
                        let entries: Vec<HelloEntry> = entries
                            .into_iter()
                            .map(|(neighbour, link_code, metric)| HelloEntry { neighbour, link_code, metric })
                            .collect();
                        let hold = Duration::from_secs(3);
                        n.process_hello(now, 0, hold, from, Duration::from_secs(vtime_s), 3, &entries);
                    }
                }
                n.update(now, 0);
                let mut all = SortedEdges::from(vec![(9, 9, 9)]);
                n.clone().two_hop_edges(ReadInto { edges: &mut all, kept: false, replaced: &mut Vec::new() }, cost);
                let (before, mut replaced) = (edges.as_slice().to_vec(), vec![(9, 9, 9)]);
                let touched = n.two_hop_edges(ReadInto { edges: &mut edges, kept, replaced: &mut replaced }, cost);
                proptest::prop_assert_eq!(edges.as_slice(), all.as_slice());
                check_reread(&before, &edges, kept, touched.as_deref(), &replaced)?;
                kept = true;
            }
        }
    }
}
