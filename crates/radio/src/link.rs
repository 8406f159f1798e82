//! Link budget and neighbour table: the mean power every node receives from
//! every other, and from it who can decode, sense or merely be disturbed by
//! whom.
//!
//! It owns the node positions, transmit powers and data rates, the path loss
//! and the static shadowing draws; it is told nothing else. It needs no MAC,
//! so mobility, routing and the emulator can ask it about links on their own
//! (the [`Medium`](crate::Medium) builds one and keeps it).

use crate::config::{ConfigError, RadioConfig, Resolved};
use crate::propagation::{
    db_to_linear, dbm_to_mw, link_gain, mw_to_dbm, standard_normal, Floors, PathLoss, Place, Propagation,
    SPEED_OF_LIGHT_M_PER_S,
};

/// The highest floor a node may be on: taller than any building.
pub const MAX_FLOOR: u32 = 200;
use crate::grid::Grid;
use crate::rate_control::RateControl;
use meshbed_core::{stream_rng, Duration, Instant, StreamId, StreamKind};
use meshbed_mobility::{Point, Trajectory};

mod moving;
mod table;
use moving::Moving;
pub use table::Neighbour;
use table::NeighbourTable;

pub type NodeId = u32;

/// Where a node is and what it overrides.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeRadio {
    pub x_m: f64,
    pub y_m: f64,
    pub tx_power_dbm: Option<f64>,
    pub data_rate_kbps: Option<u32>,
    /// This node's rate control instead of `[radio.mac] rate_control`.
    pub rate_control: Option<RateControl>,
    /// The building floor the node is on (0 without `RadioConfig::floors`).
    pub floor: u32,
}

impl NodeRadio {
    pub fn at(x_m: f64, y_m: f64) -> Self {
        NodeRadio { x_m, y_m, tx_power_dbm: None, data_rate_kbps: None, rate_control: None, floor: 0 }
    }

    fn place(&self) -> Place {
        Place { x_m: self.x_m, y_m: self.y_m, floor: self.floor }
    }
}

/// Whether a node may be on `floor` under the radio's `floors`: only the
/// ground floor without a floor model, and no higher than [`MAX_FLOOR`].
/// `Err` holds what was expected.
pub fn check_floor(floor: u32, floors: Option<&Floors>) -> Result<(), String> {
    if floor > 0 && floors.is_none() {
        return Err("0, or a building's floors given as [radio.floors] height_m and loss_db".into());
    }
    if floor > MAX_FLOOR {
        return Err(format!("a floor number from 0 to {MAX_FLOOR}"));
    }
    Ok(())
}

/// Mean received powers between every pair of nodes and, per transmitter,
/// the nodes its frames reach.
#[derive(Clone, Debug)]
pub struct LinkBudget {
    tx_power_dbm: Vec<f64>,
    tx_power_mw: Vec<f64>,
    /// Each node's floor (all 0 without `RadioConfig::floors`).
    floor: Vec<u32>,
    data_rate_kbps: Vec<u32>,
    /// SINR threshold (dB) of each node's data rate (of the standard's
    /// lowest rate for a node under rate control).
    decode_threshold_db: Vec<f64>,
    /// Where each node is (at time zero, for moving nodes).
    places: Vec<Place>,
    path_loss: PathLoss,
    floors: Option<Floors>,
    /// Static shadowing per ordered pair (symmetric), `None` without
    /// shadowing: the only table that grows with the square of the nodes,
    /// and only when shadowing is on (issue 28: set-up linear otherwise).
    shadow_db: Option<Vec<Vec<f64>>>,
    neighbours: NeighbourTable,
    rx_sensitivity_dbm: f64,
    cs_threshold_dbm: f64,
    noise_dbm: f64,
    interference_floor_dbm: f64,
    /// Moving nodes: their trajectories and the spatial index that finds a
    /// transmitter's neighbours when it sends. `None`: the nodes stay where
    /// `nodes` put them and the tables above are final.
    moving: Option<Moving>,
}

/// Who may hear a static node above the interference floor (a superset,
/// in no particular order): every node, or those within `reach_m` by the
/// grid. Symmetric: `j` is a candidate of `i` exactly when `i` is one of
/// `j`'s (every node's query has the same radius, and cells are as far
/// from each other both ways).
enum Candidates {
    All(usize),
    Near { grid: Grid, reach_m: f64 },
}

impl Candidates {
    fn fill(&self, i: usize, out: &mut Vec<NodeId>) {
        match self {
            Candidates::All(n) => {
                out.clear();
                out.extend(0..*n as NodeId);
            }
            // The 0.1% margin leaves the floor test below the only judge
            // near the edge (a 3-D distance across floors is longer and a
            // slab only adds loss, so the plane distance never excludes a
            // node the floor test would keep).
            Candidates::Near { grid, reach_m } => grid.near_unordered(grid.position(i), reach_m * 1.001, out),
        }
    }

    /// Whether `b` may be above the floor at `a`: false only for a
    /// candidate of the grid's cells farther than the reach in the plane
    /// (with the same margin as `fill`), which the floor test would drop
    /// after a path-loss computation. A grid's block of 3 × 3 cells as wide
    /// as the reach holds about 2.9 times the nodes within it.
    #[inline]
    fn may_reach(&self, a: Place, b: Place) -> bool {
        match self {
            Candidates::All(_) => true,
            Candidates::Near { reach_m, .. } => {
                let (dx, dy) = (a.x_m - b.x_m, a.y_m - b.y_m);
                let r = reach_m * 1.001;
                dx * dx + dy * dy <= r * r
            }
        }
    }
}

impl LinkBudget {
    /// Builds the link budget of `nodes` under `config`. Shadowing comes
    /// from `seed` and each link's own stream, as in the [`Medium`](crate::Medium)
    /// built with the same arguments.
    pub fn new(config: &RadioConfig, nodes: &[NodeRadio], seed: u64) -> Result<Self, ConfigError> {
        let resolved = config.resolve()?;
        Self::with_resolved(config, &resolved, nodes, seed)
    }

    /// As [`LinkBudget::new`], for a caller that has already resolved `config`.
    pub(crate) fn with_resolved(
        config: &RadioConfig,
        resolved: &Resolved,
        nodes: &[NodeRadio],
        seed: u64,
    ) -> Result<Self, ConfigError> {
        let standard = config.standard;
        for (i, n) in nodes.iter().enumerate() {
            if let Some(r) = n.data_rate_kbps {
                if !standard.rates_kbps().contains(&r) {
                    return Err(ConfigError::new(
                        format!("topology.nodes[{i}].data_rate_kbps"),
                        r,
                        format!("one of the {} rates {:?}", standard.name(), standard.rates_kbps()),
                    ));
                }
            }
            if let Err(expected) = check_floor(n.floor, config.floors.as_ref()) {
                return Err(ConfigError::new(format!("topology.nodes[{i}].floor"), n.floor, expected));
            }
            if !(n.x_m.is_finite() && n.y_m.is_finite()) {
                return Err(ConfigError::new(
                    format!("topology.nodes[{i}].position"),
                    format!("({}, {})", n.x_m, n.y_m),
                    "finite coordinates in metres",
                ));
            }
        }
        let path_loss = PathLoss::new(&config.propagation, standard.frequency_hz());
        let n = nodes.len();
        let places: Vec<Place> = nodes.iter().map(NodeRadio::place).collect();
        let shadow_db = (config.shadowing_sigma_db > 0.0).then(|| shadow_matrix(config, n, seed));
        let tx_power: Vec<f64> = nodes.iter().map(|a| a.tx_power_dbm.unwrap_or(config.tx_power_dbm)).collect();
        let tx_power_mw: Vec<f64> = tx_power.iter().map(|&p| dbm_to_mw(p)).collect();
        let floor_mw = dbm_to_mw(resolved.interference_floor_dbm);
        let data_rate: Vec<u32> = nodes.iter().map(|a| a.data_rate_kbps.unwrap_or(config.data_rate_kbps)).collect();
        // Who can be above the floor: without shadowing only the nodes
        // within the strongest sender's reach, found through a grid of
        // cells that wide, so that building the lists costs in proportion
        // to the links, not to the square of the nodes; with shadowing
        // (a draw per link, any of which may favour it) every pair.
        let candidates = match &shadow_db {
            Some(_) => Candidates::All(n),
            None => {
                let max_tx_dbm = tx_power.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let reach_m = reach_for_loss(
                    &config.propagation,
                    standard.frequency_hz(),
                    max_tx_dbm - resolved.interference_floor_dbm,
                );
                let points: Vec<Point> = places.iter().map(|p| Point { x_m: p.x_m, y_m: p.y_m }).collect();
                Candidates::Near { grid: Grid::of(points, reach_m.max(1.0)), reach_m }
            }
        };
        // Sender by sender, each list sorted into arrival order as it is
        // made (a sender's candidates come in the grid's cell order).
        let mut near = Vec::new();
        let neighbours = NeighbourTable::build(n, |i, list| {
            candidates.fill(i, &mut near);
            for &j in &near {
                let j = j as usize;
                if i == j || !candidates.may_reach(places[i], places[j]) {
                    continue;
                }
                let (d, power_mw) = rx_mw(
                    &path_loss,
                    config.floors.as_ref(),
                    shadow_db.as_deref(),
                    tx_power_mw[i],
                    (i, places[i]),
                    (j, places[j]),
                );
                if power_mw >= floor_mw {
                    let node = j as NodeId;
                    list.push(Neighbour { node, mean_power_mw: power_mw, propagation_delay: light_delay(d) });
                }
            }
        });
        Ok(LinkBudget {
            decode_threshold_db: nodes
                .iter()
                .zip(&data_rate)
                .map(|(a, &r)| {
                    // Under rate control a link works if its lowest rate does.
                    let adaptive = !a.rate_control.unwrap_or(config.mac.rate_control).is_fixed();
                    let lowest = standard.rates_kbps()[0];
                    config.sinr_threshold_for(if adaptive { lowest } else { r })
                })
                .collect(),
            tx_power_dbm: tx_power,
            tx_power_mw,
            floor: nodes.iter().map(|n| n.floor).collect(),
            data_rate_kbps: data_rate,
            places,
            path_loss,
            floors: config.floors,
            shadow_db,
            neighbours,
            rx_sensitivity_dbm: resolved.rx_sensitivity_dbm,
            cs_threshold_dbm: resolved.cs_threshold_dbm,
            noise_dbm: resolved.noise_dbm,
            interference_floor_dbm: resolved.interference_floor_dbm,
            moving: None,
        })
    }

    /// Lets the nodes move along `trajectories` (one per node; the positions
    /// in the tables above become their positions at time zero). From then
    /// on [`LinkBudget::neighbours_at`] computes each frame's receivers from
    /// where the nodes are when it is sent, through a grid of cells as wide as
    /// the farthest reach above the interference floor, so that a frame
    /// costs in proportion to the nodes near its sender, not to the network.
    pub fn set_trajectories(
        &mut self,
        config: &RadioConfig,
        trajectories: Vec<Trajectory>,
        seed: u64,
    ) -> Result<(), ConfigError> {
        if trajectories.len() != self.node_count() {
            return Err(ConfigError::new(
                "mobility",
                format!("{} trajectories", trajectories.len()),
                format!("one per node ({})", self.node_count()),
            ));
        }
        let n = trajectories.len();
        // The same draws as the static links get.
        let shadow_db = (config.shadowing_sigma_db > 0.0).then(|| shadow_matrix(config, n, seed));
        let frequency_hz = config.standard.frequency_hz();
        // The strongest sender with the most favourable shadowing draw.
        let max_tx_dbm = self.tx_power_dbm.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let max_gain_db = shadow_db.as_ref().map_or(0.0, |m| m.iter().flatten().map(|s| -s).fold(0.0, f64::max));
        let budget_db = max_tx_dbm + max_gain_db - self.interference_floor_dbm;
        let reach_m = reach_for_loss(&config.propagation, frequency_hz, budget_db);
        let max_speed_mps = trajectories
            .iter()
            .flat_map(|t| t.legs().iter())
            .map(|l| l.from.distance_m(l.to) / l.arrive.saturating_since(l.start).as_secs_f64().max(1e-9))
            .fold(0.0, f64::max);
        let segments = trajectories.iter().map(|t| t.segment(Instant::ZERO)).collect();
        let moving = Moving {
            trajectories,
            segments,
            floors_of: self.floor.clone(),
            floors: config.floors,
            path_loss: PathLoss::new(&config.propagation, frequency_hz),
            interference_floor_mw: dbm_to_mw(self.interference_floor_dbm),
            shadow_db,
            reach_m,
            max_speed_mps,
            grid: Grid::empty(reach_m.max(1.0)),
            scratch: Vec::new(),
            candidates: Vec::new(),
            search_scratch: Default::default(),
        };
        self.moving = Some(moving);
        Ok(())
    }

    /// Whether the nodes move.
    pub fn is_moving(&self) -> bool {
        self.moving.is_some()
    }

    /// Where `node` is at `now`.
    pub fn position_at(&self, node: NodeId, now: Instant) -> Option<Point> {
        self.moving.as_ref().map(|m| m.trajectories[node as usize].position(now))
    }

    /// The nodes `from`'s frame sent at `now` reaches above the interference
    /// floor: the static table (in arrival order), or for moving nodes the
    /// one computed from their positions at `now` (in no particular order;
    /// the medium orders those arrivals itself).
    pub fn neighbours_at(&mut self, from: NodeId, now: Instant) -> &[Neighbour] {
        match self.moving.as_mut() {
            Some(m) => m.neighbours_at(from, now, self.tx_power_mw[from as usize]),
            None => self.neighbours.of(from),
        }
    }

    /// Mean received power at `to` of a frame `from` sends at `now` (path
    /// loss and shadowing, no fading): for moving nodes at their positions
    /// then, by the computation [`LinkBudget::neighbours_at`] makes for
    /// each frame; otherwise [`LinkBudget::mean_rx_dbm`].
    pub fn mean_rx_dbm_at(&self, from: NodeId, to: NodeId, now: Instant) -> f64 {
        match &self.moving {
            Some(m) if from != to => {
                let at = |node: NodeId| (node, m.trajectories[node as usize].position(now));
                mw_to_dbm(m.rx_mw(self.tx_power_mw[from as usize], at(from), at(to)).1)
            }
            _ => self.mean_rx_dbm(from, to),
        }
    }

    /// [`LinkBudget::can_decode`] at the nodes' positions at `now` (the
    /// same rule; for static nodes the same answer).
    pub fn can_decode_at(&self, from: NodeId, to: NodeId, now: Instant) -> bool {
        from != to && self.decodes(from, self.mean_rx_dbm_at(from, to, now))
    }

    #[inline]
    pub fn node_count(&self) -> usize {
        self.neighbours.senders()
    }
    #[inline]
    pub fn tx_power_dbm(&self, node: NodeId) -> f64 {
        self.tx_power_dbm[node as usize]
    }
    #[inline]
    pub fn data_rate_kbps(&self, node: NodeId) -> u32 {
        self.data_rate_kbps[node as usize]
    }
    /// Mean received power at `to` of a transmission by `from` (no fading).
    #[inline]
    pub fn mean_rx_dbm(&self, from: NodeId, to: NodeId) -> f64 {
        mw_to_dbm(self.mean_rx_mw(from, to))
    }
    /// [`LinkBudget::mean_rx_dbm`] in mW, as the neighbour lists hold it.
    #[inline]
    pub fn mean_rx_mw(&self, from: NodeId, to: NodeId) -> f64 {
        if from == to {
            return 0.0;
        }
        let (from, to) = (from as usize, to as usize);
        rx_mw(
            &self.path_loss,
            self.floors.as_ref(),
            self.shadow_db.as_deref(),
            self.tx_power_mw[from],
            (from, self.places[from]),
            (to, self.places[to]),
        )
        .1
    }
    /// The nodes `from`'s frames reach above the interference floor, in
    /// the order they reach them ([`Neighbour::arrival_key`]).
    #[inline]
    pub fn neighbours(&self, from: NodeId) -> &[Neighbour] {
        self.neighbours.of(from)
    }
    /// Whether `to` can decode `from`'s data frames without interference and
    /// fading: above the sensitivity and above the SINR threshold of the rate
    /// (of the lowest rate when `from` runs rate control).
    #[inline]
    pub fn can_decode(&self, from: NodeId, to: NodeId) -> bool {
        from != to && self.decodes(from, self.mean_rx_dbm(from, to))
    }
    /// Every node that can decode `from`'s frames ([`LinkBudget::can_decode`]
    /// of each), in node order: read off `from`'s neighbour list, whose
    /// powers are the ones `can_decode` computes, when the interference
    /// floor is at or below the sensitivity; else a test of every node.
    /// (Issue 28: computing each link's power again, twice per direction,
    /// was a fifth of a 6400-node grid's set-up.)
    pub fn decodable_from(&self, from: NodeId) -> Vec<NodeId> {
        if self.interference_floor_dbm <= self.rx_sensitivity_dbm {
            // Most of a list is far below the sensitivity: those are passed
            // over without a logarithm (a millionth below it in mW is well
            // clear of any rounding of the dB test itself).
            let clearly_below_mw = dbm_to_mw(self.rx_sensitivity_dbm) * (1.0 - 1e-6);
            let list = self.neighbours.of(from).iter().filter(|nb| nb.mean_power_mw >= clearly_below_mw);
            let mut decoding: Vec<NodeId> =
                list.filter(|nb| self.decodes(from, mw_to_dbm(nb.mean_power_mw))).map(|nb| nb.node).collect();
            decoding.sort_unstable();
            decoding
        } else {
            (0..self.node_count() as NodeId).filter(|&to| self.can_decode(from, to)).collect()
        }
    }

    fn decodes(&self, from: NodeId, rx_dbm: f64) -> bool {
        rx_dbm >= self.rx_sensitivity_dbm && rx_dbm - self.noise_dbm >= self.decode_threshold_db[from as usize]
    }
    /// Whether `to`'s carrier sense finds the medium busy while `from`
    /// sends (mean power at or above the carrier-sense threshold).
    #[inline]
    pub fn can_sense(&self, from: NodeId, to: NodeId) -> bool {
        from != to && self.mean_rx_dbm(from, to) >= self.cs_threshold_dbm
    }
}

/// The distance and mean received power in mW (path loss and shadowing,
/// no fading) at `to` of a frame `from` sends at `tx_power_mw`: the one
/// computation for the static tables, [`LinkBudget::mean_rx_dbm`] and moving
/// nodes. In the linear domain ([`PathLoss::gain`]): a frame per receiver
/// costs no logarithm unless shadowing or a floor is in the way.
#[inline(always)]
fn rx_mw(
    path_loss: &PathLoss,
    floors: Option<&Floors>,
    shadow_db: Option<&[Vec<f64>]>,
    tx_power_mw: f64,
    (from, here): (usize, Place),
    (to, there): (usize, Place),
) -> (f64, f64) {
    let (d, gain) = link_gain(path_loss, floors, here, there);
    let shadow = shadow_db.map_or(1.0, |s| db_to_linear(-s[from][to]));
    (d, tx_power_mw * gain * shadow)
}

/// The time light takes over `distance_m`, to the nanosecond.
#[inline]
fn light_delay(distance_m: f64) -> Duration {
    Duration::from_nanos(round_half_away(light_delay_ns(distance_m)))
}

/// The time light takes over `distance_m`, in nanoseconds before
/// rounding: [`light_delay`] in two steps, for a search that rounds later.
#[inline(always)]
fn light_delay_ns(distance_m: f64) -> f64 {
    distance_m / SPEED_OF_LIGHT_M_PER_S * 1e9
}

/// `libm::round` of a non-negative `x` below 2^63, as an integer, without
/// its bit manipulation (a moving sender rounds a delay per receiver per
/// frame, issue 28): the cast truncates, and `x` less its whole part is
/// exact (the whole part is a multiple of `x`'s last bit), so comparing it
/// with ½ rounds as `round` does, halves away from zero. Through `i64`,
/// whose conversions are single instructions on x86-64 where `u64`'s take
/// several: the same values below 2^63.
#[inline]
fn round_half_away(x: f64) -> u64 {
    debug_assert!((0.0..9.2e18).contains(&x), "{x}");
    let whole = x as i64;
    whole as u64 + u64::from(x - whole as f64 >= 0.5)
}

/// Static log-normal shadowing of `n` nodes in dB, one draw per unordered
/// link from the link's own stream, so that links are reciprocal and
/// independent; all zero without shadowing.
fn shadow_matrix(config: &RadioConfig, n: usize, seed: u64) -> Vec<Vec<f64>> {
    let mut shadow_db = vec![vec![0.0; n]; n];
    if config.shadowing_sigma_db > 0.0 {
        // Indices, not iterators: the pair (i, j) fills both [i][j] and [j][i].
        #[allow(clippy::needless_range_loop)]
        for i in 0..n {
            for j in (i + 1)..n {
                let mut rng = stream_rng(seed, StreamId::pair(StreamKind::Shadowing, i as u32, j as u32));
                let s = config.shadowing_sigma_db * standard_normal(&mut rng);
                shadow_db[i][j] = s;
                shadow_db[j][i] = s;
            }
        }
    }
    shadow_db
}

/// The distance at which `model` loses `budget_db` (the loss grows with
/// distance), by bisection; 1 km steps up to the first distance beyond it.
fn reach_for_loss(model: &Propagation, frequency_hz: f64, budget_db: f64) -> f64 {
    let (mut lo, mut hi) = (0.0_f64, 1_000.0_f64);
    while model.loss_db(hi, frequency_hz) < budget_db && hi < 1e7 {
        lo = hi;
        hi *= 2.0;
    }
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if model.loss_db(mid, frequency_hz) < budget_db {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::propagation::Propagation;

    /// The same integer as `libm::round` for every binade a delay can take,
    /// halves and the values next to them included.
    #[test]
    fn rounding_a_delay_is_libm_s_round() {
        use rand::Rng;
        let mut rng = stream_rng(5, StreamId::new(StreamKind::Experiment, 0));
        let mut xs = vec![0.0, 0.5, 1.5, 2.5, 0.49999999999999994, 4503599627370495.5, 4503599627370497.0];
        for e in -60..62 {
            let base = 2f64.powi(e);
            xs.extend([base, base * 1.5, f64::from_bits(base.to_bits() - 1)]);
            xs.extend((0..200).map(|_| base * rng.gen_range(1.0..2.0)));
        }
        for k in 0..100_000u64 {
            let half = k as f64 + 0.5;
            xs.extend([half, f64::from_bits(half.to_bits() - 1), f64::from_bits(half.to_bits() + 1)]);
        }
        for x in xs.into_iter().filter(|x| *x < 9.2e18) {
            assert_eq!(round_half_away(x), libm::round(x) as u64, "{x:e}");
        }
    }

    fn line(spacing_m: f64, count: usize) -> Vec<NodeRadio> {
        (0..count).map(|i| NodeRadio::at(i as f64 * spacing_m, 0.0)).collect()
    }

    #[test]
    fn decode_and_sense_follow_distance() {
        let cfg = RadioConfig::default();
        let f = cfg.standard.frequency_hz();
        let r = cfg.resolve().unwrap();
        // Put node 1 just inside the decode range (sensitivity and SINR
        // threshold both met) and node 2 far beyond the sensing range.
        let need_dbm = r.rx_sensitivity_dbm.max(r.noise_dbm + cfg.sinr_threshold_for(cfg.data_rate_kbps));
        let decode_m = cfg.propagation.distance_for_loss_m(cfg.tx_power_dbm - need_dbm, f);
        let sense_m = cfg.propagation.distance_for_loss_m(cfg.tx_power_dbm - r.cs_threshold_dbm, f);
        assert!(sense_m > decode_m);
        let nodes = [NodeRadio::at(0.0, 0.0), NodeRadio::at(0.99 * decode_m, 0.0), NodeRadio::at(3.0 * sense_m, 0.0)];
        let links = LinkBudget::new(&cfg, &nodes, 1).unwrap();
        assert!(links.can_decode(0, 1) && links.can_decode(1, 0));
        assert!(links.can_sense(0, 1));
        assert!(!links.can_decode(0, 2) && !links.can_sense(0, 2));
        assert!(!links.can_decode(0, 0) && !links.can_sense(0, 0));
        // Just outside the decode range, the same pair no longer decodes.
        let nodes = [NodeRadio::at(0.0, 0.0), NodeRadio::at(1.01 * decode_m, 0.0)];
        assert!(!LinkBudget::new(&cfg, &nodes, 1).unwrap().can_decode(0, 1));
    }

    /// The grid search finds exactly the neighbours a test of every pair
    /// finds (issue 28), in arrival order and with the same powers, for
    /// scattered nodes of different powers, across floors, and with
    /// shadowing (every pair); `decodable_from` is exactly the nodes that
    /// decode, with the interference floor below the sensitivity (read off
    /// the lists) and above it (every node tested).
    #[test]
    fn neighbour_lists_are_those_of_every_pair() {
        use rand::Rng;
        let mut rng = stream_rng(3, StreamId::pair(StreamKind::Shadowing, 0, 1));
        let nodes: Vec<NodeRadio> = (0..300)
            .map(|i| NodeRadio {
                tx_power_dbm: (i % 7 == 0).then_some(30.0),
                floor: i % 3,
                ..NodeRadio::at(rng.gen_range(0.0..4000.0), rng.gen_range(0.0..2500.0))
            })
            .collect();
        let floors = Some(Floors { height_m: 4.0, loss_db: 6.0 });
        for (sigma, floors, floor_dbm) in
            [(0.0, None, -102.0), (0.0, floors, -102.0), (6.0, floors, -102.0), (0.0, None, -60.0)]
        {
            let cfg = RadioConfig {
                shadowing_sigma_db: sigma,
                floors,
                interference_floor_dbm: floor_dbm,
                ..Default::default()
            };
            let nodes: Vec<NodeRadio> = nodes
                .iter()
                .map(|n| NodeRadio { floor: if floors.is_some() { n.floor } else { 0 }, ..n.clone() })
                .collect();
            let links = LinkBudget::new(&cfg, &nodes, 11).unwrap();
            // Both ways of finding the decoding nodes are exercised.
            assert_eq!(links.interference_floor_dbm > links.rx_sensitivity_dbm, floor_dbm > -100.0);
            let (mut total, mut decodes) = (0, 0);
            for from in 0..nodes.len() as NodeId {
                let floor_mw = dbm_to_mw(cfg.interference_floor_dbm);
                let brute: Vec<(NodeId, f64)> = (0..nodes.len() as NodeId)
                    .filter(|&to| to != from && links.mean_rx_mw(from, to) >= floor_mw)
                    .map(|to| (to, links.mean_rx_mw(from, to)))
                    .collect();
                let list = links.neighbours(from);
                assert!(list.is_sorted_by_key(Neighbour::arrival_key), "node {from}: not in arrival order");
                let mut listed: Vec<(NodeId, f64)> = list.iter().map(|nb| (nb.node, nb.mean_power_mw)).collect();
                listed.sort_unstable_by_key(|&(node, _)| node);
                assert_eq!(listed, brute, "node {from}, sigma {sigma}, floors {floors:?}");
                total += listed.len();
                let decoding: Vec<NodeId> =
                    (0..nodes.len() as NodeId).filter(|&to| links.can_decode(from, to)).collect();
                assert_eq!(links.decodable_from(from), decoding, "node {from}, sigma {sigma}, floor {floor_dbm}");
                decodes += decoding.len();
            }
            assert!(decodes > 100, "some links decode: {decodes}");
            if floor_dbm < -100.0 {
                assert!(total > 1000 && total < 300 * 299, "a partly connected network: {total} links");
            }
        }
    }

    #[test]
    fn neighbours_are_cut_at_the_interference_floor_and_carry_the_light_delay() {
        let cfg = RadioConfig { propagation: Propagation::Friis, ..Default::default() };
        let f = cfg.standard.frequency_hz();
        let floor_m = cfg.propagation.distance_for_loss_m(cfg.tx_power_dbm - cfg.interference_floor_dbm, f);
        // Spacing such that the next node is heard and the one after is not.
        let spacing = 0.6 * floor_m;
        let links = LinkBudget::new(&cfg, &line(spacing, 4), 7).unwrap();
        let heard: Vec<NodeId> = links.neighbours(1).iter().map(|n| n.node).collect();
        assert_eq!(heard, vec![0, 2]);
        let nb = links.neighbours(1)[1];
        let expected_ns = libm::round(spacing / SPEED_OF_LIGHT_M_PER_S * 1e9) as u64;
        assert_eq!(nb.propagation_delay, Duration::from_nanos(expected_ns));
        assert!((crate::propagation::mw_to_dbm(nb.mean_power_mw) - links.mean_rx_dbm(1, 2)).abs() < 1e-9);
    }

    #[test]
    fn with_the_floor_at_carrier_sense_only_sensed_nodes_are_neighbours() {
        // 200 m spacing, 550 m carrier sense: three nodes either way are
        // above -102 dBm, only two are sensed.
        let plain = RadioConfig::ns2();
        let at_cs = RadioConfig { interference_floor_at_carrier_sense: true, ..RadioConfig::ns2() };
        let heard = |cfg: &RadioConfig| {
            let links = LinkBudget::new(cfg, &line(200.0, 8), 7).unwrap();
            links.neighbours(4).iter().map(|n| n.node).collect::<Vec<NodeId>>()
        };
        // Nearest first, equal distances in node order.
        assert_eq!(heard(&plain), vec![3, 5, 2, 6, 1, 7, 0]);
        assert_eq!(heard(&at_cs), vec![3, 5, 2, 6]);
        let links = LinkBudget::new(&at_cs, &line(200.0, 8), 7).unwrap();
        for nb in links.neighbours(4) {
            assert!(links.mean_rx_dbm(4, nb.node) >= at_cs.resolve().unwrap().cs_threshold_dbm);
        }
    }

    #[test]
    fn shadowed_links_are_reciprocal_and_reproducible() {
        let cfg = RadioConfig { shadowing_sigma_db: 6.0, ..Default::default() };
        let nodes = line(40.0, 5);
        let a = LinkBudget::new(&cfg, &nodes, 11).unwrap();
        let b = LinkBudget::new(&cfg, &nodes, 11).unwrap();
        let c = LinkBudget::new(&cfg, &nodes, 12).unwrap();
        let mut differs = false;
        for i in 0..5 {
            for j in 0..5 {
                if i != j {
                    assert_eq!(a.mean_rx_dbm(i, j), a.mean_rx_dbm(j, i));
                    assert_eq!(a.mean_rx_dbm(i, j), b.mean_rx_dbm(i, j));
                    differs |= a.mean_rx_dbm(i, j) != c.mean_rx_dbm(i, j);
                }
            }
        }
        assert!(differs, "another seed draws other shadowing");
    }

    #[test]
    fn bad_nodes_are_refused_by_key() {
        let cfg = RadioConfig::default();
        let mut nodes = line(10.0, 2);
        nodes[1].data_rate_kbps = Some(5);
        assert_eq!(LinkBudget::new(&cfg, &nodes, 0).unwrap_err().key, "topology.nodes[1].data_rate_kbps");
        let nodes = [NodeRadio::at(f64::NAN, 0.0)];
        assert_eq!(LinkBudget::new(&cfg, &nodes, 0).unwrap_err().key, "topology.nodes[0].position");
    }

    /// The grid finds exactly the receivers a scan of every node finds, at
    /// any time, with and without shadowing, as nodes move at 20 m/s; and
    /// under each path loss the search specialises (two-ray, Friis) or not,
    /// and with the floor at carrier sense.
    #[test]
    fn moving_neighbours_from_the_grid_equal_a_full_scan() {
        use meshbed_mobility::{random_placement, random_waypoint, Area, RandomWaypoint};
        let two_ray = RadioConfig::default().propagation;
        for (sigma, propagation, at_cs) in [
            (0.0, two_ray.clone(), false),
            (4.0, two_ray.clone(), false),
            (0.0, Propagation::Friis, false),
            (0.0, two_ray, true),
        ] {
            let config = RadioConfig {
                shadowing_sigma_db: sigma,
                propagation: propagation.clone(),
                interference_floor_at_carrier_sense: at_cs,
                ..RadioConfig::default()
            };
            let model = RandomWaypoint {
                area: Area { width_m: 3000.0, height_m: 3000.0 },
                min_speed_mps: 1.0,
                max_speed_mps: 20.0,
                pause: Duration::ZERO,
                warmup: Duration::ZERO,
            };
            let end = Instant::ZERO + Duration::from_secs(60);
            let paths = random_waypoint(&model, &random_placement(&model.area, 150, 5).unwrap(), 5, end).unwrap();
            let start: Vec<NodeRadio> = paths
                .iter()
                .map(|t| {
                    let p = t.position(Instant::ZERO);
                    NodeRadio::at(p.x_m, p.y_m)
                })
                .collect();
            let mut links = LinkBudget::new(&config, &start, 5).unwrap();
            assert_eq!(
                links.neighbours_at(3, Instant::ZERO),
                LinkBudget::new(&config, &start, 5).unwrap().neighbours(3),
                "static nodes: the table, in arrival order"
            );
            links.set_trajectories(&config, paths.clone(), 5).unwrap();
            let mut found = 0;
            for step in 0..600u64 {
                let now = Instant::ZERO + Duration::from_millis(step * 97);
                let from = (step % 150) as NodeId;
                // A full scan: the static budget of where everyone is now.
                let here: Vec<NodeRadio> = paths
                    .iter()
                    .map(|t| {
                        let p = t.position(now);
                        NodeRadio::at(p.x_m, p.y_m)
                    })
                    .collect();
                let mut want = LinkBudget::new(&config, &here, 5).unwrap().neighbours(from).to_vec();
                want.sort_unstable_by_key(|nb| nb.node);
                let mut got = links.neighbours_at(from, now).to_vec();
                got.sort_unstable_by_key(|nb| nb.node);
                assert_eq!(got.len(), want.len(), "sigma {sigma}, {propagation:?}, step {step}");
                for (g, w) in got.iter().zip(&want) {
                    assert_eq!(g.node, w.node);
                    assert!((g.mean_power_mw / w.mean_power_mw - 1.0).abs() < 1e-9);
                    assert_eq!(g.propagation_delay, w.propagation_delay);
                }
                found += got.len();
            }
            assert!(found > 600, "the nodes do meet: {found}");
        }
    }

    /// A walker leaving a static node: who decodes whom at a time is what a
    /// static budget of the positions then says, and static nodes answer
    /// as `can_decode` does at any time.
    #[test]
    fn decoding_at_a_time_follows_the_moving_nodes() {
        let config = RadioConfig { shadowing_sigma_db: 3.0, ..RadioConfig::default() };
        let start = [NodeRadio::at(0.0, 0.0), NodeRadio::at(10.0, 0.0)];
        // Node 1 walks from 10 m to 1010 m at 10 m/s from t = 0.
        let walk = Trajectory::through(&[
            (Instant::ZERO, Point::new(10.0, 0.0)),
            (Instant::ZERO + Duration::from_secs(100), Point::new(1010.0, 0.0)),
        ])
        .unwrap();
        let fixed = Trajectory::stationary(Point::new(0.0, 0.0));
        let mut links = LinkBudget::new(&config, &start, 9).unwrap();
        let still = links.clone();
        links.set_trajectories(&config, vec![fixed, walk.clone()], 9).unwrap();
        let mut changed = false;
        for s in 0..=100u64 {
            let now = Instant::ZERO + Duration::from_secs(s);
            let p = walk.position(now);
            let here = LinkBudget::new(&config, &[NodeRadio::at(0.0, 0.0), NodeRadio::at(p.x_m, p.y_m)], 9).unwrap();
            for (a, b) in [(0, 1), (1, 0)] {
                assert_eq!(links.can_decode_at(a, b, now), here.can_decode(a, b), "{a}->{b} at {s} s");
                assert!((links.mean_rx_dbm_at(a, b, now) - here.mean_rx_dbm(a, b)).abs() < 1e-9);
                assert_eq!(still.can_decode_at(a, b, now), still.can_decode(a, b));
            }
            changed |= links.can_decode_at(0, 1, now) != links.can_decode(0, 1);
            assert!(!links.can_decode_at(1, 1, now));
        }
        assert!(changed, "the walker leaves the range");
    }
}
