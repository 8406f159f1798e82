//! What the `movement_files` fuzz target does with one input; shared with
//! `tests/fuzz_corpus.rs`, which replays the seed corpus through it.
//!
//! Byte 0 picks the reader and its limits: bit 0 BonnMotion (`t x y`, or
//! `t x y z` with bit 1) instead of ns-2, bit 2 small bounds (500 m, 20 m/s,
//! 600 s, 8 nodes) instead of the scenario's (`meshbed_sim`'s
//! MAX_COORDINATE_M, MAX_SPEED_MPS, MAX_DURATION_S and MAX_NODES). The rest
//! is the file: its bytes for BonnMotion, as text (invalid UTF-8 replaced)
//! for ns-2.
//!
//! For every trajectory a reader accepts, oracles besides "no panic":
//! its legs are in time order and do not overlap; each leg starts where the
//! node is (no jump); at the start of time, at every leg's start, middle
//! and end, at instants spread over the whole span and far after it, the
//! position is finite and within the bounds (a hair of rounding allowed)
//! and the speed finite and not negative.

#![allow(dead_code)]

use meshbed_core::{Duration, Instant};
use meshbed_mobility::ns2::{self, Bounds, FileError};
use meshbed_mobility::{bonnmotion, Point, Trajectory};

/// The scenario's bounds (meshbed_sim::scenario's MAX_COORDINATE_M,
/// mobility's MAX_SPEED_MPS, MAX_DURATION_S; MAX_NODES).
pub const SCENARIO_BOUNDS: Bounds = Bounds { max_coordinate_m: 2.0e7, max_speed_mps: 1000.0, max_time_s: 86_400.0 };
pub const SCENARIO_MAX_NODES: u32 = 2000;
/// A small area, for files that fit it.
pub const SMALL_BOUNDS: Bounds = Bounds { max_coordinate_m: 500.0, max_speed_mps: 20.0, max_time_s: 600.0 };
pub const SMALL_MAX_NODES: u32 = 8;

/// Legs evaluated per trajectory, at most (a file may have thousands).
const MAX_LEGS_CHECKED: usize = 256;
/// Instants spread over a trajectory's span.
const SPREAD: u64 = 16;

/// Runs one input: the reader's verdict, with the nodes it read.
pub fn drive(data: &[u8]) -> Result<usize, FileError> {
    let Some((&selector, file)) = data.split_first() else {
        return Ok(0);
    };
    let (bounds, max_nodes) =
        if selector & 4 != 0 { (SMALL_BOUNDS, SMALL_MAX_NODES) } else { (SCENARIO_BOUNDS, SCENARIO_MAX_NODES) };
    let paths = if selector & 1 != 0 {
        let dimensions = if selector & 2 != 0 { 3 } else { 2 };
        bonnmotion::parse(file, "fuzz.movements", dimensions, max_nodes, bounds)?
    } else {
        ns2::parse(&String::from_utf8_lossy(file), "fuzz.tcl", max_nodes, bounds)?
    };
    assert!(!paths.is_empty() && paths.len() <= max_nodes as usize, "{} nodes", paths.len());
    for (node, path) in paths.iter().enumerate() {
        check(node, path, &bounds);
    }
    Ok(paths.len())
}

fn check(node: usize, path: &Trajectory, bounds: &Bounds) {
    let legs = path.legs();
    for pair in legs.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(a.start <= b.start && a.arrive <= b.start, "node {node}: legs overlap: {a:?} then {b:?}");
        assert_eq!(a.to, b.from, "node {node}: a jump between legs: {a:?} then {b:?}");
    }
    let mut instants = vec![Instant::ZERO, Instant::from_nanos(u64::MAX)];
    for leg in legs.iter().take(MAX_LEGS_CHECKED) {
        assert!(leg.start <= leg.arrive, "node {node}: a leg arrives before it starts: {leg:?}");
        let middle = leg.start + Duration::from_nanos((leg.arrive.as_nanos() - leg.start.as_nanos()) / 2);
        instants.extend([leg.start, middle, leg.arrive]);
        check_point(node, leg.from, bounds, "a leg's start");
        check_point(node, leg.to, bounds, "a leg's end");
    }
    let end = legs.iter().map(|l| l.arrive).max().unwrap_or(Instant::ZERO);
    instants.extend(
        (0..=SPREAD)
            .map(|k| Instant::from_nanos((u128::from(end.as_nanos()) * u128::from(k) / u128::from(SPREAD)) as u64)),
    );
    for t in instants {
        check_point(node, path.position(t), bounds, &format!("the position at {t}"));
        let speed = path.speed_mps(t);
        assert!(speed.is_finite() && speed >= 0.0, "node {node}: speed {speed} at {t}");
    }
    if let Some(first) = legs.first() {
        // Where the node waits before it first moves.
        assert_eq!(path.position(first.start), first.from, "node {node}: not where its first leg starts");
    }
}

fn check_point(node: usize, p: Point, bounds: &Bounds, what: &str) {
    // Interpolation may round past a bound by an ulp or so, never more.
    let limit = bounds.max_coordinate_m * (1.0 + 1e-12);
    assert!(
        p.x_m.is_finite() && p.y_m.is_finite() && p.x_m.abs() <= limit && p.y_m.abs() <= limit,
        "node {node}: {what} is ({}, {}), out of bounds ±{}",
        p.x_m,
        p.y_m,
        bounds.max_coordinate_m
    );
}
