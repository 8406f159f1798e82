//! Nodes by cell, to find who may hear a sender without looking at
//! everyone (the link budget's candidates, issue 28).

use crate::link::NodeId;
use meshbed_core::Instant;
use meshbed_mobility::{Point, Trajectory};

/// Nodes by square cell of side `cell_m`, as they were at `built_at`: a
/// dense array over the cells the nodes occupy (issue 28: a hash map of
/// cells cost a hash per cell looked at, 25 per frame in the ATP paper's
/// network, whose square fits in one cell).
/// The most cells per node the array holds (and 1024 more): 384 bytes of
/// empty cells per node at most.
const CELLS_PER_NODE: usize = 16;

#[derive(Clone, Debug, Default)]
pub(crate) struct Grid {
    cell_m: f64,
    built_at: Option<Instant>,
    /// The cell of the occupied area's lowest corner.
    origin: (i64, i64),
    /// The occupied area's size in cells (x, y).
    size: (i64, i64),
    /// Cell (x, y) at `(x − origin.0) · size.1 + (y − origin.1)`; its
    /// nodes in node order.
    cells: Vec<Vec<NodeId>>,
    positions: Vec<Point>,
}

impl Grid {
    /// A grid with no nodes yet, of cells `cell_m` wide.
    pub(crate) fn empty(cell_m: f64) -> Grid {
        Grid { cell_m, ..Grid::default() }
    }

    /// When the moving nodes were placed ([`Grid::rebuild`]).
    pub(crate) fn built_at(&self) -> Option<Instant> {
        self.built_at
    }

    /// Where node `i` was placed.
    pub(crate) fn position(&self, i: usize) -> Point {
        self.positions[i]
    }

    fn cell_of(&self, p: Point) -> (i64, i64) {
        ((p.x_m / self.cell_m).floor() as i64, (p.y_m / self.cell_m).floor() as i64)
    }

    pub(crate) fn rebuild(&mut self, trajectories: &[Trajectory], now: Instant) {
        self.fill(trajectories.iter().map(|t| t.position(now)));
        self.built_at = Some(now);
    }

    /// A grid of static points (`built_at` stays unset).
    pub(crate) fn of(points: Vec<Point>, cell_m: f64) -> Grid {
        let mut grid = Grid::empty(cell_m);
        grid.fill(points);
        grid
    }

    fn fill(&mut self, points: impl IntoIterator<Item = Point>) {
        self.positions.clear();
        self.positions.extend(points);
        // Nodes scattered far apart would ask for far more cells than
        // nodes: wider cells keep the array within 16 cells per node (a
        // query then looks at more nodes, never fewer; clusters far apart
        // are what widens them).
        let (mut lo, mut hi) = ((f64::INFINITY, f64::INFINITY), (f64::NEG_INFINITY, f64::NEG_INFINITY));
        for p in &self.positions {
            lo = (lo.0.min(p.x_m), lo.1.min(p.y_m));
            hi = (hi.0.max(p.x_m), hi.1.max(p.y_m));
        }
        let cap = (CELLS_PER_NODE * self.positions.len() + 1024) as f64;
        while !self.positions.is_empty()
            && ((hi.0 - lo.0) / self.cell_m + 2.0) * ((hi.1 - lo.1) / self.cell_m + 2.0) > cap
        {
            self.cell_m *= 2.0;
        }
        for cell in &mut self.cells {
            cell.clear();
        }
        if self.positions.is_empty() {
            self.size = (0, 0);
            return;
        }
        let (a, b) = (self.cell_of(Point { x_m: lo.0, y_m: lo.1 }), self.cell_of(Point { x_m: hi.0, y_m: hi.1 }));
        self.origin = a;
        self.size = (b.0 - a.0 + 1, b.1 - a.1 + 1);
        let count = (self.size.0 * self.size.1) as usize;
        if self.cells.len() < count {
            self.cells.resize_with(count, Vec::new);
        }
        for i in 0..self.positions.len() {
            let (x, y) = self.cell_of(self.positions[i]);
            let k = ((x - self.origin.0) * self.size.1 + (y - self.origin.1)) as usize;
            self.cells[k].push(i as NodeId);
        }
    }

    /// Every node that may be within `radius_m` of `around` (a superset), in
    /// no particular order (cell by cell).
    pub(crate) fn near_unordered(&self, around: Point, radius_m: f64, out: &mut Vec<NodeId>) {
        out.clear();
        let (cx, cy) = self.cell_of(around);
        let k = (radius_m / self.cell_m).ceil() as i64;
        let (ox, oy) = self.origin;
        let xs = (cx - k).max(ox)..=(cx + k).min(ox + self.size.0 - 1);
        for x in xs {
            let row = (x - ox) * self.size.1;
            for y in (cy - k).max(oy)..=(cy + k).min(oy + self.size.1 - 1) {
                out.extend_from_slice(&self.cells[(row + y - oy) as usize]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meshbed_core::{stream_rng, StreamId, StreamKind};
    use rand::Rng;

    /// Every node within the radius is among the candidates, once, for
    /// nodes close together, spread over a few cells, and scattered so far
    /// apart that the cells must widen.
    #[test]
    fn candidates_hold_every_node_within_the_radius_once() {
        let mut rng = stream_rng(28, StreamId::new(StreamKind::Phy, 0));
        for case in 0..300 {
            let n = rng.gen_range(0..60);
            let span_m = [10.0, 1_000.0, 1e7][case % 3];
            let points: Vec<Point> = (0..n)
                .map(|_| Point { x_m: rng.gen_range(-span_m..span_m), y_m: rng.gen_range(-span_m..span_m) })
                .collect();
            let cell_m = rng.gen_range(1.0..300.0);
            let grid = Grid::of(points.clone(), cell_m);
            assert!(grid.cells.len() <= CELLS_PER_NODE * n + 1024, "case {case}: {} cells", grid.cells.len());
            for (i, &p) in points.iter().enumerate() {
                let radius_m = rng.gen_range(0.0..2.0 * cell_m);
                let mut out = Vec::new();
                grid.near_unordered(p, radius_m, &mut out);
                let mut sorted = out.clone();
                sorted.sort_unstable();
                sorted.dedup();
                assert_eq!(sorted.len(), out.len(), "case {case}: a node twice");
                for (j, q) in points.iter().enumerate() {
                    let (dx, dy) = (p.x_m - q.x_m, p.y_m - q.y_m);
                    if dx * dx + dy * dy <= radius_m * radius_m {
                        assert!(out.contains(&(j as NodeId)), "case {case}: {j} within {radius_m} m of {i} missed");
                    }
                }
            }
        }
    }
}
