//! The run recorder (issue 25): what a playback of a run needs that the
//! report does not keep — each flow's path as routing sent its data, the
//! data delivered over time, and where the nodes were and which of them
//! were in range of each other.
//!
//! It is an observer, off by default ([`crate::Sim::run_recorded`] turns
//! it on): while it is off the simulator only tests an `Option` where a
//! recorder could be told something. It draws no random number, schedules
//! no event and changes no packet, so a recorded run has the event trace
//! and the report of the same run unrecorded (tested below by trace hash).
//!
//! * Paths: with routing engines, every decision the driver carries out
//!   for a flow's data packet (forward to a next hop, hold, drop, a held
//!   packet released, a link broken at the retry limit) updates the flow's
//!   next hop at that node; the flow's path is the walk from its source
//!   along those next hops, logged when it changes. That is the routing
//!   state the run actually used — AODV's and OLSR's tables, DSR's source
//!   routes and salvaging alike. With static routes the path is the route
//!   table's, fixed from the flow's start.
//! * Delivery: the bytes each flow delivered (a transport's bytes handed
//!   up in order, UDP payload bytes at the sink) per bin of [`bin_width_s`].
//! * Space: positions every [`position_step_s`] and the links in range by
//!   the radio model's own decoding rule (`LinkBudget::can_decode_at`, both
//!   ways, as routes use links), sampled after the run from the same
//!   trajectories; bounded in size ([`MAX_NODE_SAMPLES`], [`MAX_LINK_CHECKS`]).

use crate::routing::RouteTable;
use crate::{FlowKind, Packet, World};
use meshbed_core::{Duration, Instant};
use meshbed_radio::{LinkBudget, NodeId, NodeRadio};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// The finest position step, s.
pub const MIN_POSITION_STEP_S: f64 = 0.1;
/// At most this many position samples over a run (a step of duration/1000).
pub const MAX_POSITION_SAMPLES: usize = 1001;
/// At most this many (sample, node) positions in a recording: more nodes
/// make the step coarser.
pub const MAX_NODE_SAMPLES: usize = 250_000;
/// At most this many link tests (sample × ordered pair) to find the links
/// in range: many nodes make the step coarser still.
pub const MAX_LINK_CHECKS: u64 = 20_000_000;
/// At most this many links (coming up or going down) in a recording's
/// link changes: past it, links are no longer recorded (a dense network).
pub const MAX_LINK_ENTRIES: usize = 500_000;
/// A flow's path log stops after this many changes (a flapping route).
pub const MAX_PATH_CHANGES: usize = 10_000;
/// About this many delivery bins over a run.
const TARGET_BINS: f64 = 200.0;

/// The position step of a run of `duration_s`: 100 ms or duration/1000,
/// whichever is coarser (before the bounds on nodes and links).
pub fn position_step_s(duration_s: f64) -> f64 {
    (duration_s / (MAX_POSITION_SAMPLES - 1) as f64).max(MIN_POSITION_STEP_S)
}

/// The delivery bin of a run of `duration_s`: about a two-hundredth of the
/// run, at least 100 ms, rounded up to 1, 2 or 5 times a power of ten so
/// that the label reads well.
pub fn bin_width_s(duration_s: f64) -> f64 {
    let want = (duration_s / TARGET_BINS).max(0.1);
    let decade = 10f64.powf(want.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * decade).find(|w| *w >= want * (1.0 - 1e-9)).unwrap_or(10.0 * decade)
}

/// What a recorded run adds to its report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Recording {
    pub duration_s: f64,
    pub space: Space,
    /// One per flow, in the report's order.
    pub flows: Vec<FlowRecording>,
}

/// Where the nodes were, and the links in range, over the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Space {
    pub nodes: usize,
    /// Whether any node moves (without, one sample holds for the run).
    pub moving: bool,
    /// Seconds between samples; sample `k` is at `k · step_s`.
    pub step_s: f64,
    /// `positions[k][node]`: `[x_m, y_m]` at sample `k`, to the centimetre.
    pub positions: Vec<Vec<[f64; 2]>>,
    /// The links in range at sample 0, then what changed at later samples.
    pub links: Vec<LinkChange>,
    /// The sample from which no links were recorded, when there were more
    /// than [`MAX_LINK_ENTRIES`] (0: too many links in range to record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub links_cut_at_sample: Option<usize>,
    /// The step 100 ms or duration/1000 would have been, when the bounds
    /// on the recording's size made [`Space::step_s`] coarser.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coarsened_from_step_s: Option<f64>,
}

/// Links that came into range (`up`) or left it (`down`) at a sample. A
/// link `[a, b]` (`a < b`) is in range when each node decodes the other's
/// frames (data one way, the MAC ACK the other).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkChange {
    pub sample: usize,
    pub up: Vec<[NodeId; 2]>,
    pub down: Vec<[NodeId; 2]>,
}

/// What one flow's data did over the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FlowRecording {
    pub flow: u32,
    pub src: NodeId,
    pub dst: NodeId,
    /// Each path the flow's data took from its source, from the time it
    /// was first taken.
    pub paths: Vec<PathSample>,
    /// The log stopped at [`MAX_PATH_CHANGES`] changes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paths_truncated: bool,
    pub delivery: Delivery,
}

/// A flow's path from a time on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PathSample {
    pub t_s: f64,
    /// From the source along each node's next hop for the flow; it ends
    /// short of the destination where a node held or dropped the flow's
    /// last packet or lost the link to its next hop.
    pub nodes: Vec<NodeId>,
    /// It reaches the destination.
    pub complete: bool,
}

/// What a flow's delivery counts.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeliveryKind {
    /// A transport's bytes handed up to the application in order.
    InOrder,
    /// UDP payload bytes that reached the sink (any order).
    UdpPayload,
}

/// A flow's bytes delivered per bin.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Delivery {
    pub kind: DeliveryKind,
    pub bin_s: f64,
    /// Bin `i` covers `[i · bin_s, (i + 1) · bin_s)`; the last one also
    /// the run's end.
    pub bytes: Vec<u64>,
    /// The total counted so far (to turn running totals into increments).
    #[serde(skip)]
    total: u64,
}

impl Delivery {
    pub(crate) fn new(kind: DeliveryKind, duration_s: f64) -> Self {
        let bin_s = bin_width_s(duration_s);
        let bins = ((duration_s / bin_s).ceil() as usize).max(1);
        Delivery { kind, bin_s, bytes: vec![0; bins], total: 0 }
    }

    /// The flow has delivered `total_bytes` in all by `now`.
    pub(crate) fn record_total(&mut self, now: Instant, total_bytes: u64) {
        let new = total_bytes.saturating_sub(self.total);
        if new == 0 {
            return;
        }
        self.total = total_bytes;
        let i = ((now.as_secs_f64() / self.bin_s) as usize).min(self.bytes.len() - 1);
        self.bytes[i] += new;
    }
}

/// One flow's next hops and path log while a run is recorded.
#[derive(Clone, Debug)]
struct FlowPaths {
    src: NodeId,
    dst: NodeId,
    /// Where each node last sent (or would send) the flow's data; a node
    /// absent holds, dropped, or lost the link.
    next: BTreeMap<NodeId, NodeId>,
    log: Vec<PathSample>,
    truncated: bool,
}

impl FlowPaths {
    /// The walk from the source along the next hops, logged if it changed.
    fn update(&mut self, now: Instant) {
        let mut nodes = vec![self.src];
        let mut at = self.src;
        while at != self.dst {
            match self.next.get(&at) {
                // A loop of stale next hops ends the walk where it closes.
                Some(&n) if !nodes.contains(&n) => {
                    nodes.push(n);
                    at = n;
                }
                _ => break,
            }
        }
        if self.log.last().is_some_and(|p| p.nodes == nodes) || self.truncated {
            return;
        }
        if self.log.len() == MAX_PATH_CHANGES {
            self.truncated = true;
            return;
        }
        let complete = at == self.dst;
        self.log.push(PathSample { t_s: now.as_secs_f64(), nodes, complete });
    }
}

/// The flows' paths as routing engines decide them, while a run is
/// recorded (kept by [`crate::dynamic::Dynamic`], which carries out the
/// decisions).
#[derive(Clone, Debug)]
pub(crate) struct PathRecorder {
    flows: Vec<FlowPaths>,
}

impl PathRecorder {
    /// For flows with these (source, destination) pairs, in flow order.
    pub(crate) fn new(ends: impl IntoIterator<Item = (NodeId, NodeId)>) -> Self {
        let flows = ends
            .into_iter()
            .map(|(src, dst)| FlowPaths { src, dst, next: BTreeMap::new(), log: Vec::new(), truncated: false })
            .collect();
        PathRecorder { flows }
    }

    /// Routing at `node` sends `pkt` to `next_hop` (`None`: holds or drops
    /// it). Only a flow's data from its source to its destination counts:
    /// not control packets, not feedback or echo replies.
    pub(crate) fn decided(&mut self, now: Instant, node: NodeId, pkt: &Packet, next_hop: Option<NodeId>) {
        if pkt.control {
            return;
        }
        let Some(f) = self.flows.get_mut(pkt.flow as usize) else { return };
        if (pkt.src, pkt.dst) != (f.src, f.dst) {
            return;
        }
        match next_hop {
            Some(n) => f.next.insert(node, n),
            None => f.next.remove(&node),
        };
        f.update(now);
    }

    /// The MAC at `node` gave up on a frame to `neighbour`: every flow that
    /// went that way has no next hop there until routing decides again.
    pub(crate) fn link_broke(&mut self, now: Instant, node: NodeId, neighbour: NodeId) {
        for f in &mut self.flows {
            if f.next.get(&node) == Some(&neighbour) {
                f.next.remove(&node);
                f.update(now);
            }
        }
    }

    /// Each flow's path log (and whether it was cut short), in flow order.
    pub(crate) fn into_logs(self) -> Vec<(Vec<PathSample>, bool)> {
        self.flows.into_iter().map(|f| (f.log, f.truncated)).collect()
    }
}

/// A static route's one path from `start`, or none without a route.
fn static_path(table: &RouteTable, src: NodeId, dst: NodeId, start: Instant) -> Vec<PathSample> {
    let Some(hops) = table.hop_count(src, dst) else { return Vec::new() };
    let mut nodes = vec![src];
    while nodes.len() <= hops as usize {
        let at = *nodes.last().expect("starts with the source");
        nodes.push(table.next_hop(at, dst).expect("hop_count found a route"));
    }
    vec![PathSample { t_s: start.as_secs_f64(), nodes, complete: true }]
}

/// Turns the recorder on for a run of `duration_s` (before it starts).
pub(crate) fn start(world: &mut World, duration_s: f64) {
    for f in &mut world.flows {
        let kind = match f.kind {
            FlowKind::Transport(_) => DeliveryKind::InOrder,
            FlowKind::Udp(_) | FlowKind::Echo(_) => DeliveryKind::UdpPayload,
        };
        f.delivery = Some(Delivery::new(kind, duration_s));
    }
    if let Some(d) = &mut world.router.dynamic {
        let ends = world.flows.iter().map(|f| (f.spec.src, f.spec.dst));
        d.paths = Some(Box::new(PathRecorder::new(ends)));
    }
}

/// What the recorder gathered over a run of `duration_s` that has ended,
/// with the positions and links in range sampled from `links`.
pub(crate) fn finish(world: &mut World, links: &LinkBudget, radios: &[NodeRadio], duration_s: f64) -> Recording {
    let logs = match world.router.dynamic.as_mut().and_then(|d| d.paths.take()) {
        Some(paths) => paths.into_logs(),
        None => (world.flows.iter())
            .map(|f| (static_path(&world.router.table, f.spec.src, f.spec.dst, f.start), false))
            .collect(),
    };
    let flows = (world.flows.iter_mut().zip(logs).enumerate())
        .map(|(i, (f, (paths, paths_truncated)))| FlowRecording {
            flow: i as u32,
            src: f.spec.src,
            dst: f.spec.dst,
            paths,
            paths_truncated,
            delivery: f.delivery.take().expect("set when the recorder started"),
        })
        .collect();
    Recording { duration_s, space: sample_space(links, radios, duration_s), flows }
}

/// Positions and links in range over `duration_s`, from `links` (with the
/// trajectories of moving nodes) and `radios` (where static nodes are).
pub fn sample_space(links: &LinkBudget, radios: &[NodeRadio], duration_s: f64) -> Space {
    let n = links.node_count();
    let moving = links.is_moving();
    let wanted_step_s = position_step_s(duration_s);
    // The tolerance keeps 900 s / 0.9 s at 1000 steps despite rounding.
    let wanted = (duration_s / wanted_step_s + 1e-9).floor() as usize + 1;
    let pairs = (n as u64 * n.saturating_sub(1) as u64).max(1);
    let allowed = (MAX_NODE_SAMPLES / n.max(1)).min((MAX_LINK_CHECKS / pairs) as usize).max(2);
    let (samples, step_s) = match moving {
        false => (1, wanted_step_s),
        true if wanted <= allowed => (wanted, wanted_step_s),
        true => (allowed, duration_s / (allowed - 1) as f64),
    };
    let coarsened_from_step_s = (moving && wanted > allowed).then_some(wanted_step_s);
    let centimetre = |v: f64| (v * 100.0).round() / 100.0;
    let mut positions = Vec::with_capacity(samples);
    let mut changes = Vec::new();
    let mut in_range: BTreeSet<[NodeId; 2]> = BTreeSet::new();
    let (mut link_entries, mut links_cut_at_sample) = (0, None);
    for k in 0..samples {
        let now = Instant::ZERO + Duration::from_secs_f64((k as f64 * step_s).min(duration_s));
        positions.push(
            (0..n)
                .map(|i| match links.position_at(i as NodeId, now) {
                    Some(p) => [centimetre(p.x_m), centimetre(p.y_m)],
                    None => [centimetre(radios[i].x_m), centimetre(radios[i].y_m)],
                })
                .collect(),
        );
        if links_cut_at_sample.is_some() {
            continue;
        }
        let mut now_in_range = BTreeSet::new();
        for a in 0..n as NodeId {
            for b in a + 1..n as NodeId {
                if links.can_decode_at(a, b, now) && links.can_decode_at(b, a, now) {
                    now_in_range.insert([a, b]);
                }
            }
        }
        let up: Vec<_> = now_in_range.difference(&in_range).copied().collect();
        let down: Vec<_> = in_range.difference(&now_in_range).copied().collect();
        link_entries += up.len() + down.len();
        if link_entries > MAX_LINK_ENTRIES {
            links_cut_at_sample = Some(k);
        } else if k == 0 || !up.is_empty() || !down.is_empty() {
            changes.push(LinkChange { sample: k, up, down });
        }
        in_range = now_in_range;
    }
    Space { nodes: n, moving, step_s, positions, links: changes, links_cut_at_sample, coarsened_from_step_s }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    fn at(s: f64) -> Instant {
        Instant::ZERO + Duration::from_secs_f64(s)
    }

    fn data(src: NodeId, dst: NodeId, flow: u32) -> Packet {
        Packet::data(src, dst, flow, 0, 1000, Instant::ZERO, Vec::new())
    }

    #[test]
    fn a_path_is_logged_when_it_changes_and_cut_where_routing_holds_or_a_link_breaks() {
        let mut r = PathRecorder::new([(4, 0)]);
        let pkt = data(4, 0, 0);
        // The direct link first.
        r.decided(at(1.0), 4, &pkt, Some(0));
        r.decided(at(1.1), 4, &pkt, Some(0));
        // Feedback the other way and control packets do not count.
        r.decided(at(1.2), 0, &data(0, 4, 0), Some(3));
        let mut control = data(4, 0, 0);
        control.control = true;
        r.decided(at(1.3), 4, &control, Some(2));
        // Through node 1: first only the source's decision (incomplete
        // until node 1 forwards), then the whole path.
        r.decided(at(5.0), 4, &pkt, Some(1));
        r.decided(at(5.001), 1, &pkt, Some(0));
        // The link 1 → 0 breaks; routing at 1 then holds the packet.
        r.link_broke(at(7.0), 1, 0);
        r.decided(at(7.1), 1, &pkt, None);
        // A link nobody uses breaks: nothing changes.
        r.link_broke(at(7.2), 3, 2);
        r.decided(at(8.0), 1, &pkt, Some(2));
        r.decided(at(8.0), 2, &pkt, Some(0));
        let (log, truncated) = r.into_logs().remove(0);
        assert!(!truncated);
        let got: Vec<(f64, Vec<NodeId>, bool)> = log.into_iter().map(|p| (p.t_s, p.nodes, p.complete)).collect();
        assert_eq!(
            got,
            vec![
                (1.0, vec![4, 0], true),
                (5.0, vec![4, 1], false),
                (5.001, vec![4, 1, 0], true),
                (7.0, vec![4, 1], false),
                (8.0, vec![4, 1, 2], false),
                (8.0, vec![4, 1, 2, 0], true),
            ]
        );
    }

    #[test]
    fn stale_next_hops_that_loop_end_the_walk_and_the_log_is_bounded() {
        let mut r = PathRecorder::new([(0, 3)]);
        let pkt = data(0, 3, 0);
        r.decided(at(1.0), 1, &pkt, Some(0));
        r.decided(at(1.0), 0, &pkt, Some(1));
        let mut r2 = r.clone();
        assert_eq!(r.into_logs()[0].0.last().unwrap().nodes, vec![0, 1]);
        for i in 0..=MAX_PATH_CHANGES as u64 {
            r2.decided(at(2.0 + i as f64), 0, &pkt, Some(if i % 2 == 0 { 2 } else { 1 }));
        }
        let (log, truncated) = r2.into_logs().remove(0);
        assert!(truncated);
        assert_eq!(log.len(), MAX_PATH_CHANGES);
    }

    #[test]
    fn delivery_bins_count_increments_of_running_totals_in_the_bin_of_their_time() {
        assert_eq!(bin_width_s(900.0), 5.0);
        assert_eq!(bin_width_s(120.0), 1.0);
        assert_eq!(bin_width_s(200.0), 1.0);
        assert_eq!(bin_width_s(201.0), 2.0);
        assert_eq!(bin_width_s(1.0), 0.1);
        let mut d = Delivery::new(DeliveryKind::InOrder, 10.0);
        assert_eq!((d.bin_s, d.bytes.len()), (0.1, 100));
        d.record_total(at(0.05), 1000);
        d.record_total(at(0.09), 1000);
        d.record_total(at(0.15), 1500);
        d.record_total(at(10.0), 1600);
        assert_eq!(&d.bytes[..3], &[1000, 500, 0]);
        assert_eq!(d.bytes[99], 100, "the end of the run counts in the last bin");
        assert_eq!(d.bytes.iter().sum::<u64>(), 1600);
    }

    #[test]
    fn a_walking_node_is_sampled_where_its_trajectory_has_it_and_links_change_as_it_leaves() {
        let s = Scenario::from_toml(include_str!("../../../examples/walk-away.toml")).unwrap();
        let (medium, _) = crate::build_network::<Packet>(&s, false).unwrap();
        let space = sample_space(medium.links(), &s.node_radios(), s.duration_s);
        assert!(space.moving);
        assert_eq!(space.step_s, 0.9, "duration/1000 is coarser than 100 ms");
        assert_eq!(space.positions.len(), 1001);
        assert_eq!(space.coarsened_from_step_s, None);
        // The walker (node 4) leaves at 2 s from (10, 20) at 1 m/s towards
        // (700, 20); the relays stay put.
        for (k, x) in [(0, 10.0), (100, 10.0 + 90.0 - 2.0), (500, 10.0 + 450.0 - 2.0), (1000, 700.0)] {
            assert_eq!(space.positions[k][4], [x, 20.0], "sample {k}");
            assert_eq!(space.positions[k][2], [400.0, 0.0]);
        }
        // At first the walker is in range of the server (0) and of node 1;
        // the chain's own links never change; at the end it is next to node 3.
        let first = &space.links[0];
        assert_eq!(first.sample, 0);
        assert!(first.up.contains(&[0, 4]) && first.up.contains(&[0, 1]) && first.down.is_empty());
        let mut now: BTreeSet<[NodeId; 2]> = BTreeSet::new();
        for c in &space.links {
            now.extend(&c.up);
            for l in &c.down {
                assert!(now.remove(l), "{l:?} goes down after it came up");
                assert!(l.contains(&4), "only the walker's links change: {l:?}");
            }
        }
        assert!(!now.contains(&[0, 4]) && now.contains(&[3, 4]) && now.contains(&[0, 1]), "{now:?}");
    }

    #[test]
    fn static_nodes_take_one_sample_and_many_nodes_a_coarser_step() {
        let s = Scenario::chain(3, 200.0, 30.0);
        let (medium, table) = crate::build_network::<Packet>(&s, true).unwrap();
        let space = sample_space(medium.links(), &s.node_radios(), s.duration_s);
        assert!(!space.moving);
        assert_eq!(space.positions, vec![vec![[0.0, 0.0], [200.0, 0.0], [400.0, 0.0], [600.0, 0.0]]]);
        assert_eq!(space.links.len(), 1);
        assert_eq!(space.links[0].up, vec![[0, 1], [1, 2], [2, 3]]);
        assert_eq!(space.links_cut_at_sample, None);
        let path = static_path(&table, 0, 3, at(1.0));
        assert_eq!(path, vec![PathSample { t_s: 1.0, nodes: vec![0, 1, 2, 3], complete: true }]);

        let mut big = Scenario::from_toml(include_str!("../../../examples/aodv-random-waypoint.toml")).unwrap();
        big.topology = crate::scenario::Topology::Random { nodes: 400, width_m: 800.0, height_m: 300.0 };
        let (medium, _) = crate::build_network::<Packet>(&big, false).unwrap();
        let space = sample_space(medium.links(), &big.node_radios(), big.duration_s);
        // 20 000 000 link tests over 400 × 399 ordered pairs: 125 samples.
        assert_eq!(space.positions.len(), 125);
        assert_eq!(space.coarsened_from_step_s, Some(0.12));
        assert!((space.step_s - 120.0 / 124.0).abs() < 1e-12);
        let entries: usize = space.links.iter().map(|c| c.up.len() + c.down.len()).sum();
        assert!(entries <= MAX_LINK_ENTRIES && entries > 10_000, "{entries}");

        // 1200 nodes in 200 m × 200 m: nearly all of the 719 400 pairs in
        // range, too many links to record from the first sample on.
        let mut dense = Scenario::chain(3, 200.0, 10.0);
        dense.topology = crate::scenario::Topology::Random { nodes: 1200, width_m: 200.0, height_m: 200.0 };
        let (medium, _) = crate::build_network::<Packet>(&dense, false).unwrap();
        let space = sample_space(medium.links(), &dense.node_radios(), dense.duration_s);
        assert_eq!((space.links_cut_at_sample, space.links.len()), (Some(0), 0));
        assert_eq!(space.positions[0].len(), 1200);
    }
}

/// Whole runs: the recorder changes nothing, and records what happened.
#[cfg(test)]
mod run_tests {
    use super::*;
    use crate::scenario::{Routing, Scenario};
    use crate::{Sim, SimReport};

    fn both(s: &Scenario) -> (SimReport, SimReport, Recording) {
        let plain = Sim::new(s).unwrap().run();
        let (recorded, recording) = Sim::new(s).unwrap().run_recorded(&mut |_| {});
        (plain, recorded, recording)
    }

    /// The same events in the same order, the same report, with routing
    /// engines (AODV, DSR, OLSR) and with static routes.
    #[test]
    fn a_recorded_run_has_the_trace_and_report_of_the_same_run_unrecorded() {
        let mut walk = Scenario::from_toml(include_str!("../../../examples/walk-away.toml")).unwrap();
        walk.duration_s = 120.0;
        let mut rwp = Scenario::from_toml(include_str!("../../../examples/aodv-random-waypoint.toml")).unwrap();
        rwp.duration_s = 40.0;
        let mut dsr = rwp.clone();
        dsr.routing = Routing::Dsr { control_priority: true };
        let mut olsr = Scenario::from_toml(include_str!("../../../examples/olsr-etx.toml")).unwrap();
        olsr.duration_s = 40.0;
        for s in [walk, rwp, dsr, olsr, Scenario::chain(3, 200.0, 10.0)] {
            let (plain, recorded, recording) = both(&s);
            assert_eq!(plain.trace_hash, recorded.trace_hash);
            assert_eq!(plain.events, recorded.events);
            assert_eq!(serde_json::to_value(&plain).unwrap(), serde_json::to_value(&recorded).unwrap());
            assert_eq!(recording.flows.len(), plain.flows.len());
            for (f, r) in recording.flows.iter().zip(&plain.flows) {
                // Every byte the report counts is in a bin.
                assert_eq!(f.delivery.bytes.iter().sum::<u64>(), r.bytes_delivered, "flow {}", f.flow);
                for p in &f.paths {
                    assert_eq!(p.nodes[0], f.src);
                    assert_eq!(p.complete, p.nodes.last() == Some(&f.dst), "{p:?}");
                }
                assert!(f.paths.windows(2).all(|w| w[0].t_s <= w[1].t_s && w[0].nodes != w[1].nodes));
            }
        }
    }

    /// Seed 003's walking client: its data goes straight to the server at
    /// first, then through more and more relays, as the radio's range says.
    #[test]
    fn the_walking_clients_path_grows_relay_by_relay() {
        let s = Scenario::from_toml(include_str!("../../../examples/walk-away.toml")).unwrap();
        let (report, rec) = Sim::new(&s).unwrap().run_recorded(&mut |_| {});
        let f = &rec.flows[0];
        assert_eq!(f.delivery.kind, DeliveryKind::InOrder);
        assert_eq!(f.delivery.bin_s, 5.0);
        let complete: Vec<&PathSample> = f.paths.iter().filter(|p| p.complete).collect();
        assert_eq!(complete[0].nodes, vec![4, 0]);
        assert!(complete[0].t_s >= 1.0 && complete[0].t_s < 2.0, "the flow starts at 1 s: {}", complete[0].t_s);
        assert_eq!(complete.last().unwrap().nodes, vec![4, 3, 2, 1, 0], "{:?}", f.paths);
        // Each complete path uses links in range when it was taken.
        let space = &rec.space;
        let mut in_range: BTreeSet<[NodeId; 2]> = BTreeSet::new();
        let mut changes = space.links.iter().peekable();
        for p in &complete {
            let k = (p.t_s / space.step_s).floor() as usize;
            while let Some(c) = changes.next_if(|c| c.sample <= k) {
                in_range.extend(&c.up);
                c.down.iter().for_each(|l| assert!(in_range.remove(l)));
            }
            for hop in p.nodes.windows(2) {
                let link = [hop[0].min(hop[1]), hop[0].max(hop[1])];
                assert!(in_range.contains(&link), "{link:?} of {p:?} out of range at sample {k}");
            }
        }
        // The routing part of the report saw the same changes.
        let changes = report.flows[0].routing.as_ref().unwrap().path_changes;
        assert!(changes >= 3, "{changes}");
    }
}
