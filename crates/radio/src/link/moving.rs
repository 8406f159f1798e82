//! The link budget of moving nodes: where each node is when a frame is
//! sent, and who hears it above the interference floor (issue 11 §1),
//! found through a spatial grid. The link rule itself is the static
//! budget's ([`super::rx_mw`]): only the positions come from here.

use super::{light_delay_ns, round_half_away, rx_mw, Neighbour, NodeId};
use crate::grid::Grid;
use crate::propagation::{Floors, PathLoss, Place};
use meshbed_core::{Duration, Instant};
use meshbed_mobility::{Point, Segment, Trajectory};

/// How often the grid is rebuilt, at most. Between rebuilds a node can have
/// moved at most `max_speed · REFRESH` from where the grid has it, so a
/// query widens its search by twice that; a shorter interval costs more
/// rebuilds (O(nodes) each), a longer one more candidates per frame.
const GRID_REFRESH: Duration = Duration::from_millis(100);

/// The link budget of moving nodes, computed from their positions when a
/// frame is sent (issue 11 §1).
#[derive(Clone, Debug)]
pub(super) struct Moving {
    pub(super) trajectories: Vec<Trajectory>,
    /// Each node's stretch of its trajectory last asked about: frames come
    /// in time order, so the legs are searched only when a node starts a
    /// new one ([`Moving::position`]).
    pub(super) segments: Vec<Segment>,
    /// Each node's floor: nodes move within their floor.
    pub(super) floors_of: Vec<u32>,
    pub(super) floors: Option<Floors>,
    pub(super) path_loss: PathLoss,
    pub(super) interference_floor_mw: f64,
    /// Static shadowing per unordered link (`None` without shadowing).
    pub(super) shadow_db: Option<Vec<Vec<f64>>>,
    /// The farthest a frame can be heard above the floor: the cell size.
    pub(super) reach_m: f64,
    pub(super) max_speed_mps: f64,
    pub(super) grid: Grid,
    /// The last neighbour list computed (returned by reference).
    pub(super) scratch: Vec<Neighbour>,
    pub(super) candidates: Vec<NodeId>,
    /// A search's candidates within reach, and their links' power and
    /// delay: [`Search::run`]'s passes.
    pub(super) search_scratch: SearchScratch,
}

/// What one neighbour search keeps between its passes.
#[derive(Clone, Debug, Default)]
pub(super) struct SearchScratch {
    /// The candidates within reach, and where each is.
    near: Vec<(NodeId, Point)>,
    /// For each of them: the link's mean power and light's delay in
    /// (fractional) nanoseconds.
    links: Vec<(f64, f64)>,
}

impl Moving {
    /// Where `node` is at `now`: [`Trajectory::position`], through the
    /// node's segment.
    #[inline]
    fn position(segments: &mut [Segment], trajectories: &[Trajectory], node: NodeId, now: Instant) -> Point {
        let segment = &mut segments[node as usize];
        if !segment.covers(now) {
            *segment = trajectories[node as usize].segment(now);
        }
        segment.position(now)
    }

    /// The distance and mean received power (path loss and shadowing, no
    /// fading) of a frame sent at `tx_power_mw` by node `from` at its
    /// position to node `to` at its position, by [`rx_mw`]. Always inlined:
    /// the call was a fifth of a moving sender's neighbour search
    /// (issue 28), and inlined the floor and shadowing tests fold away.
    #[inline(always)]
    pub(super) fn rx_mw(
        &self,
        tx_power_mw: f64,
        (from, here): (NodeId, Point),
        (to, there): (NodeId, Point),
    ) -> (f64, f64) {
        let (a, b) = (self.floors_of[from as usize], self.floors_of[to as usize]);
        rx_mw(
            &self.path_loss,
            self.floors.as_ref(),
            self.shadow_db.as_deref(),
            tx_power_mw,
            (from as usize, Place { x_m: here.x_m, y_m: here.y_m, floor: a }),
            (to as usize, Place { x_m: there.x_m, y_m: there.y_m, floor: b }),
        )
    }

    /// The nodes `from`'s frame sent at `now` at `tx_power_mw` reaches
    /// above the interference floor, from their positions then, in no
    /// particular order ([`super::LinkBudget::neighbours_at`]).
    pub(super) fn neighbours_at(&mut self, from: NodeId, now: Instant, tx_power_mw: f64) -> &[Neighbour] {
        let stale = self.grid.built_at().is_none_or(|t| now.saturating_since(t) > GRID_REFRESH || now < t);
        if stale {
            self.grid.rebuild(&self.trajectories, now);
        }
        let since = now.saturating_since(self.grid.built_at().expect("built"));
        let slack_m = 2.0 * self.max_speed_mps * since.as_secs_f64();
        let here = Moving::position(&mut self.segments, &self.trajectories, from, now);
        self.grid.near_unordered(self.grid.position(from as usize), self.reach_m + slack_m, &mut self.candidates);
        self.scratch.clear();
        // Beyond the reach nobody is above the floor (reach_m is for the
        // strongest sender and the most favourable shadowing): skip the
        // logarithm for the grid cells' far corners. The 0.1% margin keeps
        // the floor test below the only judge near the edge.
        let skip_beyond_sq_m2 = (self.reach_m * 1.001) * (self.reach_m * 1.001);
        let search = Search { from, here, now, skip_beyond_sq_m2, floor_mw: self.interference_floor_mw };
        let Moving {
            trajectories,
            segments,
            floors_of,
            floors,
            path_loss,
            shadow_db,
            scratch,
            candidates,
            search_scratch,
            ..
        } = self;
        let (floors, shadow_db) = (floors.as_ref(), shadow_db.as_deref());
        let (segments, candidates) = (&mut segments[..], &candidates[..]);
        // Each receiver's power by `rx_mw`, the one rule. Without floors
        // and shadowing (the usual moving network) the rule is handed them
        // as constants, and a copy of the path loss whose kind the arm
        // fixes, so the tests they decide leave the loop (issue 28: they
        // were about a sixth of a moving sender's neighbour search).
        // The search with the rule as each arm hands it: where a node is
        // found, its floor, and the link's power.
        macro_rules! search_by {
            ($floor_of:expr, $path_loss:expr, $floors:expr, $shadow_db:expr) => {
                search.run(trajectories, segments, candidates, scratch, search_scratch, $floor_of, |a, b| {
                    rx_mw($path_loss, $floors, $shadow_db, tx_power_mw, a, b)
                })
            };
        }
        match (floors, shadow_db, *path_loss) {
            (None, None, pl @ PathLoss::TwoRayGround { .. }) => search_by!(|_| 0, &pl, None, None),
            (None, None, pl @ PathLoss::Friis { .. }) => search_by!(|_| 0, &pl, None, None),
            _ => search_by!(|n| floors_of[n as usize], path_loss, floors, shadow_db),
        }
        scratch
    }
}

/// One moving sender's neighbour search, at one time: the candidates
/// above the interference floor by `rx`, the link rule ([`rx_mw`]) as the
/// caller specialises it.
struct Search {
    from: NodeId,
    here: Point,
    now: Instant,
    /// Beyond this nobody is above the floor (see `neighbours_at`).
    skip_beyond_sq_m2: f64,
    floor_mw: f64,
}

impl Search {
    /// In three passes, each a plain loop over the last one's output: where
    /// the candidates are (a new leg is looked up now and then), the link
    /// rule for those within reach, then the floor and the rounding of the
    /// delay. The same operations on the same values as one pass, so the
    /// same bits; but the link rule's square root and divisions, a chain
    /// of ~50 cycles per receiver, now overlap from receiver to receiver
    /// instead of waiting behind each one's branches and push (issue 28:
    /// half of the search's time, a tenth of a 100-node AODV run's).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn run(
        &self,
        trajectories: &[Trajectory],
        segments: &mut [Segment],
        candidates: &[NodeId],
        out: &mut Vec<Neighbour>,
        scratch: &mut SearchScratch,
        floor_of: impl Fn(NodeId) -> u32,
        rx: impl Fn((usize, Place), (usize, Place)) -> (f64, f64),
    ) {
        let place = |node: NodeId, p: Point| (node as usize, Place { x_m: p.x_m, y_m: p.y_m, floor: floor_of(node) });
        let here = place(self.from, self.here);
        let SearchScratch { near, links } = scratch;
        near.clear();
        for &j in candidates {
            if j == self.from {
                continue;
            }
            let there = Moving::position(segments, trajectories, j, self.now);
            let (dx, dy) = (self.here.x_m - there.x_m, self.here.y_m - there.y_m);
            if dx * dx + dy * dy <= self.skip_beyond_sq_m2 {
                near.push((j, there));
            }
        }
        links.clear();
        links.extend(near.iter().map(|&(j, there)| {
            let (d, power_mw) = rx(here, place(j, there));
            (power_mw, light_delay_ns(d))
        }));
        for (&(node, _), &(power_mw, delay_ns)) in near.iter().zip(links.iter()) {
            if power_mw >= self.floor_mw {
                let propagation_delay = Duration::from_nanos(round_half_away(delay_ns));
                out.push(Neighbour { node, mean_power_mw: power_mw, propagation_delay });
            }
        }
    }
}
