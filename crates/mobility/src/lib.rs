//! Node movement: every node's position is an exact function of time.
//!
//! A [`Trajectory`] is a sequence of straight, constant-speed legs (ns-2's
//! `setdest` semantics: a node moves from where it is towards a destination
//! at a speed, and stops there). Positions are computed when asked
//! ([`Trajectory::position`]); nothing is stepped, so a simulator needs no
//! per-node position-update events and a run does not depend on how often
//! positions are looked at.
//!
//! Where trajectories come from:
//! * [`random_waypoint`]: ns-2's `setdest` model (seed 002 §5.1 runs it with
//!   DSR): a uniform destination in the area, a speed uniform in
//!   `[min, max]`, a pause, again. Each node draws from its own random stream
//!   (`StreamKind::Mobility`, index = node), so adding a node changes no
//!   other node's path.
//! * [`Trajectory::scripted`]: waypoints given per node, e.g. seed 003 §5.1
//!   Table 1's client walking away from its access point at 0.33 or 1 m/s.
//! * [`random_placement`]: static positions uniform in an area, from their
//!   own stream (`StreamKind::Placement`).
//! * [`ns2`] and [`bonnmotion`]: the movement files users already have.
//!
//! No I/O besides the importers' text input, no clock.
#![forbid(unsafe_code)]

pub mod bonnmotion;
pub mod ns2;

use meshbed_core::{stream_rng, Duration, Instant, StreamId, StreamKind};
use rand::Rng;

/// A position in metres.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Point {
    pub x_m: f64,
    pub y_m: f64,
}

impl Point {
    pub const fn new(x_m: f64, y_m: f64) -> Self {
        Point { x_m, y_m }
    }

    /// `libm`'s hypot, as the radio's static link budget computes
    /// distances: the same on every platform, and a node that does not move
    /// gets exactly the powers of a static one.
    pub fn distance_m(self, other: Point) -> f64 {
        libm::hypot(self.x_m - other.x_m, self.y_m - other.y_m)
    }
}

/// One straight move at constant speed: at `start` the node is at `from`,
/// at `arrive` at `to`, and it stays there until the next leg starts.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Leg {
    pub start: Instant,
    pub from: Point,
    pub to: Point,
    pub arrive: Instant,
}

/// A stretch of a [`Trajectory`] over which one leg decides where the node
/// is (from [`Trajectory::segment`]): a caller that asks for positions at
/// times moving forward keeps it while it covers them, instead of searching
/// the legs each time (the radio asks for every receiver of every frame,
/// issue 28). [`Segment::position`] is the trajectory's own position.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Segment {
    since: Instant,
    /// The next leg's start (`None`: the last leg, which lasts).
    until: Option<Instant>,
    leg: Leg,
    /// The leg's duration in nanoseconds and its displacement, as the
    /// position computes them, once per segment instead of once per
    /// position asked (issue 28: the radio asks for every receiver of every
    /// frame).
    span_ns: f64,
    step: Point,
}

impl Segment {
    /// Whether the segment holds `t`.
    #[inline]
    pub fn covers(&self, t: Instant) -> bool {
        self.since <= t && self.until.is_none_or(|until| t < until)
    }

    /// Where the node is at `t`, for `t` the segment covers.
    #[inline]
    pub fn position(&self, t: Instant) -> Point {
        debug_assert!(self.covers(t));
        let leg = &self.leg;
        if t >= leg.arrive {
            return leg.to;
        }
        let done = nanos_f64(t.saturating_since(leg.start).as_nanos()) / self.span_ns;
        Point::new(leg.from.x_m + self.step.x_m * done, leg.from.y_m + self.step.y_m * done)
    }

    fn of(since: Instant, until: Option<Instant>, leg: Leg) -> Segment {
        let span_ns = nanos_f64(leg.arrive.saturating_since(leg.start).as_nanos());
        let step = Point::new(leg.to.x_m - leg.from.x_m, leg.to.y_m - leg.from.y_m);
        Segment { since, until, leg, span_ns, step }
    }
}

/// `nanos as f64`, by the signed conversion (one instruction on x86-64,
/// where the unsigned one takes a branch and several) for every count below
/// 2^63 ns, 292 years: the same value either way.
#[inline]
fn nanos_f64(nanos: u64) -> f64 {
    match i64::try_from(nanos) {
        Ok(signed) => signed as f64,
        Err(_) => nanos as f64,
    }
}

/// Why a movement description was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MobilityError {
    /// The one error value; its key is relative to the movement
    /// description (`waypoints[2].speed_mps`, `line 7`), and the scenario
    /// puts it under its own key ([`meshbed_core::InvalidValue::under`]).
    #[error(transparent)]
    Invalid(#[from] meshbed_core::InvalidValue),
}

fn invalid(what: impl Into<String>, value: impl ToString, expected: impl Into<String>) -> MobilityError {
    MobilityError::Invalid(meshbed_core::InvalidValue::new(what, value, expected))
}

/// A node's path: where it starts, then its legs in time order.
#[derive(Clone, Debug, PartialEq)]
pub struct Trajectory {
    initial: Point,
    legs: Vec<Leg>,
}

impl Trajectory {
    /// A node that never moves.
    pub fn stationary(at: Point) -> Self {
        Trajectory { initial: at, legs: Vec::new() }
    }

    /// The legs, in time order.
    pub fn legs(&self) -> &[Leg] {
        &self.legs
    }

    /// Whether the node ever moves.
    pub fn is_static(&self) -> bool {
        self.legs.iter().all(|l| l.from == l.to)
    }

    /// From `at`, move towards `to` at `speed_mps` (ns-2's `setdest`): the
    /// node leaves from wherever it is at `at`, which cuts short a move still
    /// under way. A speed of zero (or a destination where the node already
    /// is) leaves it where it is. `at` must not be before the last command.
    pub fn set_destination(&mut self, at: Instant, to: Point, speed_mps: f64) -> Result<(), MobilityError> {
        if !(speed_mps.is_finite() && speed_mps >= 0.0) {
            return Err(invalid("speed", speed_mps, "a speed in m/s, ≥ 0"));
        }
        if !(to.x_m.is_finite() && to.y_m.is_finite()) {
            return Err(invalid("destination", format!("({}, {})", to.x_m, to.y_m), "finite coordinates in metres"));
        }
        if let Some(last) = self.legs.last() {
            if at < last.start {
                return Err(invalid("time", at, format!("a time at or after the previous command's ({})", last.start)));
            }
        }
        let from = self.position(at);
        // Cut a leg still under way at `at`: the node turns where it is.
        if let Some(last) = self.legs.last_mut() {
            if last.arrive > at {
                last.to = from;
                last.arrive = at;
            }
        }
        let distance_m = from.distance_m(to);
        if speed_mps == 0.0 || distance_m == 0.0 {
            return Ok(());
        }
        let travel = Duration::from_secs_f64(distance_m / speed_mps);
        self.legs.push(Leg { start: at, from, to, arrive: at + travel });
        Ok(())
    }

    /// A node that starts at `start` and then walks through `waypoints`
    /// (time to leave, destination, speed), each leg from where it is then.
    pub fn scripted(start: Point, waypoints: &[(Instant, Point, f64)]) -> Result<Self, MobilityError> {
        let mut t = Trajectory::stationary(start);
        for (i, &(at, to, speed)) in waypoints.iter().enumerate() {
            t.set_destination(at, to, speed)
                .map_err(|MobilityError::Invalid(e)| MobilityError::Invalid(e.under(&format!("waypoints[{i}]"))))?;
        }
        Ok(t)
    }

    /// A path through positions at given times, straight and at constant
    /// speed between consecutive ones (BonnMotion's waypoint lists). The
    /// times must not decrease; the node is at the first position until its
    /// time.
    pub fn through(points: &[(Instant, Point)]) -> Result<Self, MobilityError> {
        let Some(&(_, first)) = points.first() else {
            return Err(invalid("waypoints", "none", "at least one (time, x, y)"));
        };
        let mut t = Trajectory::stationary(first);
        for (i, pair) in points.windows(2).enumerate() {
            let ((t0, p0), (t1, p1)) = (pair[0], pair[1]);
            if t1 < t0 {
                return Err(invalid(format!("waypoints[{}].time", i + 1), t1, format!("a time at or after {t0}")));
            }
            if !(p1.x_m.is_finite() && p1.y_m.is_finite()) {
                return Err(invalid(
                    format!("waypoints[{}]", i + 1),
                    format!("({}, {})", p1.x_m, p1.y_m),
                    "finite coordinates",
                ));
            }
            if p0 != p1 {
                t.legs.push(Leg { start: t0, from: p0, to: p1, arrive: t1 });
            }
        }
        Ok(t)
    }

    /// Where the node is at `t`.
    pub fn position(&self, t: Instant) -> Point {
        self.segment(t).position(t)
    }

    /// The stretch of the trajectory that holds `t`: from the last leg that
    /// started by `t` (legs do not overlap) to the next leg's start, or the
    /// node's rest at its initial point before its first leg.
    pub fn segment(&self, t: Instant) -> Segment {
        let k = self.legs.partition_point(|l| l.start <= t);
        let until = self.legs.get(k).map(|l| l.start);
        match k.checked_sub(1).map(|i| self.legs[i]) {
            Some(leg) => Segment::of(leg.start, until, leg),
            None => Segment::of(
                Instant::ZERO,
                until,
                Leg { start: Instant::ZERO, from: self.initial, to: self.initial, arrive: Instant::ZERO },
            ),
        }
    }
    /// The node's speed at `t` in m/s (0 when pausing).
    pub fn speed_mps(&self, t: Instant) -> f64 {
        let k = self.legs.partition_point(|l| l.start <= t);
        match k.checked_sub(1).map(|i| &self.legs[i]) {
            Some(leg) if t < leg.arrive => {
                leg.from.distance_m(leg.to) / leg.arrive.saturating_since(leg.start).as_secs_f64()
            }
            _ => 0.0,
        }
    }
}

/// A rectangle `[0, width_m] × [0, height_m]`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Area {
    pub width_m: f64,
    pub height_m: f64,
}

impl Area {
    pub fn check(&self) -> Result<(), MobilityError> {
        for (what, v) in [("width_m", self.width_m), ("height_m", self.height_m)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(invalid(what, v, "a positive size in metres"));
            }
        }
        Ok(())
    }

    fn uniform_point(&self, rng: &mut impl Rng) -> Point {
        Point::new(rng.gen::<f64>() * self.width_m, rng.gen::<f64>() * self.height_m)
    }
}

/// ns-2 `setdest`'s random waypoint model.
#[derive(Clone, Debug, PartialEq)]
pub struct RandomWaypoint {
    pub area: Area,
    /// Speeds are uniform in `[min_speed_mps, max_speed_mps]`. `min` must be
    /// above zero: with ns-2's original `setdest` (min = 0) the average speed
    /// decays towards zero over the run, as nodes get stuck on slow legs
    /// (Yoon, Liu & Noble, INFOCOM 2003).
    pub min_speed_mps: f64,
    pub max_speed_mps: f64,
    /// Pause at each destination (and at the start, as `setdest` does).
    pub pause: Duration,
    /// Movement generated and thrown away before time zero, so that the run
    /// starts nearer the model's steady state (BonnMotion's `-i` skip). Off
    /// (zero) by default: the documents' runs used ns-2's `setdest`, which
    /// starts every node paused at a uniform position, and comparing with
    /// them needs that start. The setting says it; it is never silent.
    pub warmup: Duration,
}

impl RandomWaypoint {
    pub fn check(&self) -> Result<(), MobilityError> {
        self.area.check()?;
        if !(self.min_speed_mps.is_finite() && self.min_speed_mps > 0.0) {
            return Err(invalid(
                "min_speed_mps",
                self.min_speed_mps,
                "a speed above 0 m/s (a minimum of 0 makes the mean speed decay during the run)",
            ));
        }
        if !(self.max_speed_mps.is_finite() && self.max_speed_mps >= self.min_speed_mps) {
            return Err(invalid(
                "max_speed_mps",
                self.max_speed_mps,
                format!("a speed ≥ min_speed_mps ({})", self.min_speed_mps),
            ));
        }
        Ok(())
    }
}

/// The most legs random waypoint may generate for one run, all nodes
/// together (≈ 50 bytes each, 250 MB at most): a tiny area with fast nodes over a long run
/// would otherwise need unbounded memory.
pub const MAX_RANDOM_WAYPOINT_LEGS: usize = 5_000_000;

/// Random waypoint trajectories covering `[0, until]` for nodes starting at
/// `starts` (e.g. [`random_placement`], as `setdest` places its nodes
/// uniformly), node i drawing from its own stream of `seed`.
pub fn random_waypoint(
    model: &RandomWaypoint,
    starts: &[Point],
    seed: u64,
    until: Instant,
) -> Result<Vec<Trajectory>, MobilityError> {
    model.check()?;
    let horizon = until + model.warmup;
    let mut legs = 0usize;
    let mut paths = Vec::with_capacity(starts.len());
    for (node, &start) in starts.iter().enumerate() {
        let mut rng = stream_rng(seed, StreamId::new(StreamKind::Mobility, node as u64));
        // Generated on a clock that starts `warmup` early, then shifted.
        let mut t = Trajectory::stationary(start);
        let mut at = Instant::ZERO + model.pause;
        while at <= horizon {
            let to = model.area.uniform_point(&mut rng);
            let speed = model.min_speed_mps + rng.gen::<f64>() * (model.max_speed_mps - model.min_speed_mps);
            t.set_destination(at, to, speed).expect("checked model");
            let arrive = t.legs.last().map_or(at, |l| l.arrive);
            at = arrive + model.pause;
            legs += 1;
            if legs > MAX_RANDOM_WAYPOINT_LEGS {
                return Err(invalid(
                    "max_speed_mps",
                    model.max_speed_mps,
                    format!(
                        "nodes that move less often: more than {MAX_RANDOM_WAYPOINT_LEGS} moves in the run (a larger area, lower speeds, longer pauses or a shorter run)"
                    ),
                ));
            }
        }
        paths.push(shift_back(t, model.warmup));
    }
    Ok(paths)
}

/// The same path on a clock `by` later: what happened before `by` is
/// folded into the start position.
fn shift_back(t: Trajectory, by: Duration) -> Trajectory {
    if by == Duration::ZERO {
        return t;
    }
    let origin = Instant::ZERO + by;
    let initial = t.position(origin);
    let mut legs = Vec::new();
    for l in &t.legs {
        if l.arrive <= origin {
            continue;
        }
        let (start, from) = if l.start < origin { (origin, t.position(origin)) } else { (l.start, l.from) };
        legs.push(Leg {
            start: Instant::ZERO + start.saturating_since(origin),
            from,
            to: l.to,
            arrive: Instant::ZERO + l.arrive.saturating_since(origin),
        });
    }
    Trajectory { initial, legs }
}

/// `nodes` static positions uniform in `area`, node i from its own stream.
pub fn random_placement(area: &Area, nodes: u32, seed: u64) -> Result<Vec<Point>, MobilityError> {
    area.check()?;
    Ok((0..nodes)
        .map(|node| area.uniform_point(&mut stream_rng(seed, StreamId::new(StreamKind::Placement, u64::from(node)))))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: f64) -> Instant {
        Instant::ZERO + Duration::from_secs_f64(secs)
    }

    /// The signed conversion gives `u64 as f64`'s value at and around
    /// every power of two, up to the largest count.
    #[test]
    fn nanos_convert_as_unsigned_counts_do() {
        for e in 0..64 {
            let p = 1u64 << e;
            for n in [p - 1, p, p + 1, p | (p >> 1), p.wrapping_mul(3) / 2 + 7] {
                assert_eq!(nanos_f64(n).to_bits(), (n as f64).to_bits(), "{n}");
            }
        }
        assert_eq!(nanos_f64(u64::MAX), u64::MAX as f64);
    }

    #[test]
    fn a_walk_away_is_exact_at_every_instant() {
        // Seed 003 Table 1: a client walking away from its AP at 1 m/s.
        let t = Trajectory::scripted(Point::new(0.0, 0.0), &[(s(10.0), Point::new(100.0, 0.0), 1.0)]).unwrap();
        assert_eq!(t.position(s(0.0)), Point::new(0.0, 0.0));
        assert_eq!(t.position(s(10.0)), Point::new(0.0, 0.0));
        assert_eq!(t.position(s(35.5)), Point::new(25.5, 0.0));
        assert_eq!(t.position(s(110.0)), Point::new(100.0, 0.0));
        assert_eq!(t.position(s(500.0)), Point::new(100.0, 0.0));
        assert_eq!(t.speed_mps(s(50.0)), 1.0);
        assert_eq!(t.speed_mps(s(200.0)), 0.0);
    }

    #[test]
    fn a_new_destination_turns_the_node_where_it_is() {
        let mut t = Trajectory::stationary(Point::new(0.0, 0.0));
        t.set_destination(s(0.0), Point::new(100.0, 0.0), 10.0).unwrap();
        // Halfway (5 s in), turn north at 5 m/s.
        t.set_destination(s(5.0), Point::new(50.0, 50.0), 5.0).unwrap();
        assert_eq!(t.legs().len(), 2);
        assert_eq!(t.legs()[0].to, Point::new(50.0, 0.0));
        assert_eq!(t.position(s(5.0)), Point::new(50.0, 0.0));
        assert_eq!(t.position(s(9.0)), Point::new(50.0, 20.0));
        assert_eq!(t.position(s(20.0)), Point::new(50.0, 50.0));
        assert!(t.set_destination(s(4.0), Point::new(0.0, 0.0), 1.0).is_err(), "time going back");
        assert!(t.set_destination(s(30.0), Point::new(0.0, 0.0), -1.0).is_err(), "negative speed");
    }

    #[test]
    fn waypoints_through_times_interpolate_and_refuse_time_going_back() {
        let t = Trajectory::through(&[
            (s(0.0), Point::new(0.0, 0.0)),
            (s(10.0), Point::new(0.0, 0.0)),
            (s(20.0), Point::new(30.0, 40.0)),
        ])
        .unwrap();
        assert_eq!(t.position(s(5.0)), Point::new(0.0, 0.0));
        assert_eq!(t.position(s(15.0)), Point::new(15.0, 20.0));
        assert_eq!(t.speed_mps(s(15.0)), 5.0);
        let e = Trajectory::through(&[(s(5.0), Point::new(0.0, 0.0)), (s(1.0), Point::new(1.0, 0.0))]).unwrap_err();
        assert!(e.to_string().starts_with("waypoints[1].time = 1.000000000s"), "{e}");
    }

    fn starts(nodes: u32, seed: u64) -> Vec<Point> {
        random_placement(&Area { width_m: 1500.0, height_m: 300.0 }, nodes, seed).unwrap()
    }

    fn model(min: f64, max: f64, pause_s: f64, warmup_s: f64) -> RandomWaypoint {
        RandomWaypoint {
            area: Area { width_m: 1500.0, height_m: 300.0 },
            min_speed_mps: min,
            max_speed_mps: max,
            pause: Duration::from_secs_f64(pause_s),
            warmup: Duration::from_secs_f64(warmup_s),
        }
    }

    #[test]
    fn random_waypoint_stays_in_the_area_within_its_speeds_and_pauses() {
        let m = model(1.0, 20.0, 30.0, 0.0);
        let paths = random_waypoint(&m, &starts(20, 7), 7, s(900.0)).unwrap();
        for (i, p) in paths.iter().enumerate() {
            // setdest: every node starts with a pause.
            assert_eq!(p.position(s(0.0)), p.position(s(29.9)), "node {i}");
            assert!(p.legs()[0].start == s(30.0));
            for w in p.legs().windows(2) {
                let gap = w[1].start.saturating_since(w[0].arrive);
                assert_eq!(gap, Duration::from_secs(30), "node {i}: pause between legs");
            }
            for k in 0..=900 {
                let q = p.position(s(k as f64));
                assert!((0.0..=1500.0).contains(&q.x_m) && (0.0..=300.0).contains(&q.y_m), "node {i} at {k} s: {q:?}");
                let v = p.speed_mps(s(k as f64));
                assert!(v == 0.0 || (0.999..=20.001).contains(&v), "node {i} at {k} s: {v} m/s");
            }
            assert!(p.legs().last().unwrap().arrive + Duration::from_secs(30) > s(900.0), "covers the run");
        }
    }

    #[test]
    fn each_node_has_its_own_stream_and_the_seed_decides() {
        let m = model(1.0, 20.0, 0.0, 0.0);
        let a = random_waypoint(&m, &starts(5, 1), 1, s(100.0)).unwrap();
        let b = random_waypoint(&m, &starts(8, 1), 1, s(100.0)).unwrap();
        assert_eq!(a[..], b[..5], "adding nodes changes no one else's path");
        let c = random_waypoint(&m, &starts(5, 2), 2, s(100.0)).unwrap();
        assert_ne!(a, c);
        assert_eq!(a, random_waypoint(&m, &starts(5, 1), 1, s(100.0)).unwrap());
    }

    #[test]
    fn a_warm_up_starts_the_nodes_where_the_longer_run_has_them() {
        let cold = random_waypoint(&model(1.0, 20.0, 0.0, 0.0), &starts(3, 4), 4, s(700.0)).unwrap();
        let warm = random_waypoint(&model(1.0, 20.0, 0.0, 600.0), &starts(3, 4), 4, s(100.0)).unwrap();
        for (c, w) in cold.iter().zip(&warm) {
            for k in 0..=100 {
                let (a, b) = (c.position(s(600.0 + k as f64)), w.position(s(k as f64)));
                assert!(a.distance_m(b) < 1e-6, "{a:?} vs {b:?}");
            }
        }
    }

    #[test]
    fn bad_models_are_refused_naming_the_key() {
        let e = random_waypoint(&model(0.0, 20.0, 0.0, 0.0), &starts(1, 1), 1, s(1.0)).unwrap_err().to_string();
        assert!(e.starts_with("min_speed_mps = 0: expected a speed above 0 m/s"), "{e}");
        let e = random_waypoint(&model(5.0, 2.0, 0.0, 0.0), &starts(1, 1), 1, s(1.0)).unwrap_err().to_string();
        assert!(e.starts_with("max_speed_mps = 2: expected a speed ≥ min_speed_mps (5)"), "{e}");
        // A tiny area crossed at 1000 m/s for a day: refused, not unbounded memory.
        let mut tiny = model(999.0, 1000.0, 0.0, 0.0);
        tiny.area = Area { width_m: 1.0, height_m: 1.0 };
        let e = random_waypoint(&tiny, &[Point::new(0.5, 0.5)], 1, s(86_400.0)).unwrap_err().to_string();
        assert!(e.contains("nodes that move less often"), "{e}");
        let e = random_waypoint(&model(5.0, 2.0, 0.0, 0.0), &starts(1, 1), 1, s(1.0)).unwrap_err().to_string();
        assert!(e.starts_with("max_speed_mps = 2: expected a speed ≥ min_speed_mps (5)"), "{e}");
        let mut m = model(1.0, 2.0, 0.0, 0.0);
        m.area.height_m = f64::NAN;
        assert!(random_waypoint(&m, &starts(1, 1), 1, s(1.0)).unwrap_err().to_string().starts_with("height_m = NaN"));
    }

    #[test]
    fn random_placement_is_uniform_per_node_stream() {
        let area = Area { width_m: 1000.0, height_m: 1000.0 };
        let a = random_placement(&area, 400, 9).unwrap();
        assert!(a.iter().all(|p| (0.0..1000.0).contains(&p.x_m) && (0.0..1000.0).contains(&p.y_m)));
        // Each quadrant gets about a quarter.
        let q = a.iter().filter(|p| p.x_m < 500.0 && p.y_m < 500.0).count();
        assert!((70..=130).contains(&q), "{q}");
        assert_eq!(random_placement(&area, 3, 9).unwrap()[..], a[..3]);
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    /// A node at (500, 500) given `cmds` (time in `unit_ns`, x, y, speed)
    /// in time order.
    fn walk(mut cmds: Vec<(u64, f64, f64, f64)>, unit_ns: u64) -> Trajectory {
        cmds.sort_by_key(|c| c.0);
        let mut t = Trajectory::stationary(Point::new(500.0, 500.0));
        for &(at, x, y, v) in &cmds {
            t.set_destination(Instant::from_nanos(at * unit_ns), Point::new(x, y), v).unwrap();
        }
        t
    }

    proptest! {
        /// Whatever the commands, a node never jumps: between two instants it
        /// covers at most the fastest speed times the time between them.
        #[test]
        fn positions_are_continuous_and_speed_bounded(
            cmds in proptest::collection::vec((0u64..100_000, 0.0f64..1000.0, 0.0f64..1000.0, 0.0f64..30.0), 1..12),
            probes in proptest::collection::vec(0u64..200_000, 2..40),
        ) {
            let t = walk(cmds, 1_000_000);
            let mut probes = probes;
            probes.sort();
            for w in probes.windows(2) {
                let (a, b) = (Instant::from_nanos(w[0] * 1_000_000), Instant::from_nanos(w[1] * 1_000_000));
                let moved = t.position(a).distance_m(t.position(b));
                let bound = 30.0 * b.saturating_since(a).as_secs_f64() + 1e-6;
                prop_assert!(moved <= bound, "{moved} m in {:?}", b.saturating_since(a));
            }
        }

        /// A segment kept while it covers the times asked, times moving
        /// forward (as the radio keeps one per node), gives the point of
        /// the last leg started by then, found by a scan of every leg, and
        /// a segment that no longer applies says so.
        #[test]
        fn a_kept_segment_is_the_last_leg_started(
            cmds in proptest::collection::vec((0u64..100, 0.0f64..1000.0, 0.0f64..1000.0, 0.0f64..30.0), 1..12),
            probes in proptest::collection::vec(0u64..200, 2..60),
        ) {
            let start = Point::new(500.0, 500.0);
            let t = walk(cmds, 1_000_000_000);
            let mut probes: Vec<Instant> = probes.into_iter().map(|s| Instant::from_nanos(s * 500_000_000)).collect();
            // Each leg's start and the instant before it too.
            probes.extend(t.legs().iter().flat_map(|l| [l.start, Instant::from_nanos(l.start.as_nanos().saturating_sub(1))]));
            probes.sort();
            let mut kept = t.segment(Instant::ZERO);
            for &at in &probes {
                if !kept.covers(at) {
                    kept = t.segment(at);
                }
                prop_assert!(kept.covers(at));
                let expected = match t.legs().iter().rev().find(|l| l.start <= at) {
                    None => start,
                    Some(l) if at >= l.arrive => l.to,
                    Some(l) => {
                        let done = at.saturating_since(l.start).as_nanos() as f64
                            / l.arrive.saturating_since(l.start).as_nanos() as f64;
                        Point::new(l.from.x_m + (l.to.x_m - l.from.x_m) * done, l.from.y_m + (l.to.y_m - l.from.y_m) * done)
                    }
                };
                prop_assert_eq!(kept.position(at), expected);
                prop_assert_eq!(t.position(at), expected);
            }
        }
    }
}
