//! ns-2 movement files, as `setdest` and most MANET tools write them:
//!
//! ```text
//! $node_(0) set X_ 150.0
//! $node_(0) set Y_ 93.9
//! $node_(0) set Z_ 0.0
//! $ns_ at 2.0 "$node_(0) setdest 90.4 10.3 12.5"
//! ```
//!
//! `set X_`/`Y_` give a node's start, `setdest X Y SPEED` at time T sends it
//! from where it is then towards (X, Y) at SPEED m/s (ns-2's
//! `MobileNode::set_destination`: a new `setdest` cuts the current move
//! short). `Z_`, `$god_` lines and `#` comments are read and ignored. A node
//! is any index that appears; each must have its start position.

use crate::{MobilityError, Point, Trajectory};
use meshbed_core::limits::Bounded;
use meshbed_core::{Duration, Instant};

/// Why a movement file was refused: the file, the line, what was wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct FileError {
    pub file: String,
    pub line: usize,
    pub message: String,
}

/// What a movement file may say: the same bounds as the scenario's own
/// mobility keys (the scenario passes its limits), so that a file cannot
/// move a node where no distance is finite or at a speed no event loop
/// keeps up with (`setdest 300 0 1e300` once spun the simulator forever).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Bounds {
    /// Largest |x| and |y|, metres.
    pub max_coordinate_m: f64,
    /// Fastest speed, m/s (given, or implied by two waypoints).
    pub max_speed_mps: f64,
    /// Latest time, seconds.
    pub max_time_s: f64,
}

impl Bounds {
    pub(crate) fn coordinate(&self, v: f64, what: &str) -> Result<(), String> {
        if v.abs() <= self.max_coordinate_m {
            return Ok(());
        }
        Err(format!(
            "{what} {}: expected a coordinate from -{} to {} m",
            v.text(),
            self.max_coordinate_m,
            self.max_coordinate_m
        ))
    }
    pub(crate) fn speed(&self, v: f64, what: &str) -> Result<(), String> {
        if (0.0..=self.max_speed_mps).contains(&v) {
            return Ok(());
        }
        Err(format!("{what} {}: expected a speed from 0 to {} m/s", v.text(), self.max_speed_mps))
    }
    pub(crate) fn time(&self, v: f64, what: &str) -> Result<(), String> {
        if (0.0..=self.max_time_s).contains(&v) {
            return Ok(());
        }
        Err(format!("{what} {}: expected a time from 0 to {} s", v.text(), self.max_time_s))
    }
}

/// The trajectories of nodes `0..=max index` in an ns-2 movement file's
/// `text` (`file` names it in errors); at most `max_nodes` nodes, every
/// value within `bounds`.
pub fn parse(text: &str, file: &str, max_nodes: u32, bounds: Bounds) -> Result<Vec<Trajectory>, FileError> {
    let err = |line: usize, message: String| FileError { file: file.to_string(), line, message };
    let mut start: Vec<[Option<f64>; 2]> = Vec::new();
    // (time, line, node, destination, speed), applied per node in time order.
    let mut moves: Vec<(Instant, usize, u32, Point, f64)> = Vec::new();
    for (k, raw) in text.lines().enumerate() {
        let line = k + 1;
        let l = raw.trim();
        if l.is_empty() || l.starts_with('#') || l.starts_with("$god_") {
            continue;
        }
        let words: Vec<&str> = l.split_whitespace().collect();
        let node_of = |w: &str| -> Result<u32, FileError> {
            let n = w
                .strip_prefix("$node_(")
                .and_then(|r| r.strip_suffix(')'))
                .and_then(|i| i.parse::<u32>().ok())
                .ok_or_else(|| err(line, format!("`{w}`: expected a node as $node_(INDEX)")))?;
            if n >= max_nodes {
                return Err(err(
                    line,
                    format!("node {n}: expected at most {max_nodes} nodes (indices 0..{max_nodes})"),
                ));
            }
            Ok(n)
        };
        let number = |w: &str, what: &str| -> Result<f64, FileError> {
            w.parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| err(line, format!("{what} `{w}`: expected a number")))
        };
        match words.as_slice() {
            [node, "set", axis @ ("X_" | "Y_" | "Z_"), value] => {
                let n = node_of(node)? as usize;
                let v = number(value, axis)?;
                bounds.coordinate(v, axis).map_err(|m| err(line, m))?;
                if start.len() <= n {
                    start.resize(n + 1, [None, None]);
                }
                match *axis {
                    "X_" => start[n][0] = Some(v),
                    "Y_" => start[n][1] = Some(v),
                    _ => {}
                }
            }
            ["$ns_", "at", time, rest @ ..] => {
                let t = number(time, "time")?;
                bounds.time(t, "time").map_err(|m| err(line, m))?;
                let cmd = rest.join(" ");
                let cmd = cmd.trim_matches('"');
                let parts: Vec<&str> = cmd.split_whitespace().collect();
                // Other scheduled commands (traffic, `stop`...) are not
                // movement; a `setdest` of the wrong shape is a mistake.
                match parts.as_slice() {
                    [node, "setdest", x, y, speed] => {
                        let n = node_of(node)?;
                        let (x, y) = (number(x, "x")?, number(y, "y")?);
                        bounds.coordinate(x, "x").and(bounds.coordinate(y, "y")).map_err(|m| err(line, m))?;
                        let v = number(speed, "speed")?;
                        bounds.speed(v, "speed").map_err(|m| err(line, m))?;
                        moves.push((Instant::ZERO + Duration::from_secs_f64(t), line, n, Point::new(x, y), v));
                    }
                    [_, "setdest", ..] => {
                        return Err(err(line, format!("`{l}`: expected `$ns_ at T \"$node_(I) setdest X Y SPEED\"`")))
                    }
                    _ => {}
                }
            }
            _ => {
                return Err(err(
                    line,
                    format!(
                        "`{l}`: expected `$node_(I) set X_|Y_|Z_ V` or `$ns_ at T \"$node_(I) setdest X Y SPEED\"`"
                    ),
                ))
            }
        }
    }
    let nodes = start.len().max(moves.iter().map(|m| m.2 as usize + 1).max().unwrap_or(0));
    if nodes == 0 {
        return Err(err(0, "no node positions: expected `$node_(I) set X_ ...` lines".into()));
    }
    start.resize(nodes, [None, None]);
    let mut paths = Vec::with_capacity(nodes);
    for (n, s) in start.iter().enumerate() {
        let [Some(x), Some(y)] = *s else {
            return Err(err(0, format!("node {n} has no start position: expected `$node_({n}) set X_` and `Y_`")));
        };
        paths.push(Trajectory::stationary(Point::new(x, y)));
    }
    // Stable: commands at the same time keep their order in the file.
    moves.sort_by_key(|m| (m.2, m.0));
    // Two destinations for one node at one instant: which one is meant?
    if let Some(w) = moves.windows(2).find(|w| w[0].2 == w[1].2 && w[0].0 == w[1].0) {
        let (first, second) = (w[0].1.min(w[1].1), w[0].1.max(w[1].1));
        return Err(err(
            second,
            format!(
                "node {} is sent to two destinations at {} s (lines {first} and {second}): expected one `setdest` per node and instant",
                w[0].2,
                w[0].0.as_secs_f64()
            ),
        ));
    }
    for (at, line, n, to, speed) in moves {
        paths[n as usize].set_destination(at, to, speed).map_err(|e: MobilityError| err(line, e.to_string()))?;
    }
    Ok(paths)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The scenario's bounds (sim's MAX_COORDINATE_M, MAX_SPEED_MPS, MAX_DURATION_S).
    pub(crate) const B: Bounds = Bounds { max_coordinate_m: 2.0e7, max_speed_mps: 1000.0, max_time_s: 86_400.0 };

    fn s(secs: f64) -> Instant {
        Instant::ZERO + Duration::from_secs_f64(secs)
    }

    const SETDEST: &str = r#"#
# nodes: 2, pause: 2.00, max speed: 10.00, max x: 500.00, max y: 500.00
#
$node_(0) set X_ 100.000000000000
$node_(0) set Y_ 100.000000000000
$node_(0) set Z_ 0.000000000000
$node_(1) set X_ 0.0
$node_(1) set Y_ 0.0
$node_(1) set Z_ 0.000000000000
$god_ set-dist 0 1 1
$ns_ at 2.000000000000 "$node_(0) setdest 400.0 100.0 10.0"
$ns_ at 12.000000000000 "$node_(0) setdest 200.0 100.0 5.0"
$ns_ at 5.0 "$node_(1) setdest 0.0 300.0 20.0"
$ns_ at 20.0 "$god_ set-dist 0 1 2"
"#;

    #[test]
    fn a_setdest_file_moves_each_node_from_where_it_is() {
        let p = parse(SETDEST, "scen.tcl", 100, B).unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].position(s(1.0)), Point::new(100.0, 100.0));
        assert_eq!(p[0].position(s(7.0)), Point::new(150.0, 100.0));
        // At 12 s node 0 is at x = 200 (10 s at 10 m/s) and turns back: it is already there.
        assert_eq!(p[0].position(s(12.0)), Point::new(200.0, 100.0));
        assert_eq!(p[0].position(s(30.0)), Point::new(200.0, 100.0));
        assert_eq!(p[1].position(s(10.0)), Point::new(0.0, 100.0));
        assert_eq!(p[1].position(s(60.0)), Point::new(0.0, 300.0));
    }

    #[test]
    fn mistakes_name_the_file_and_line() {
        let e = parse("$node_(0) set X_ 1\n$node_(0) set Y_ oops\n", "m.tcl", 10, B).unwrap_err().to_string();
        assert_eq!(e, "m.tcl:2: Y_ `oops`: expected a number");
        let e =
            parse("$node_(0) set X_ 1\n$node_(0) set Y_ 1\n$ns_ at 1 \"$node_(0) setdest 1 1 -3\"\n", "m.tcl", 10, B)
                .unwrap_err()
                .to_string();
        assert_eq!(e, "m.tcl:3: speed -3: expected a speed from 0 to 1000 m/s");
        let e = parse("$node_(0) set X_ 1\n$node_(0) set Y_ 1\n$node_(1) set X_ 1\n", "m.tcl", 10, B)
            .unwrap_err()
            .to_string();
        assert!(e.contains("node 1 has no start position"), "{e}");
        let e = parse("$node_(50) set X_ 1\n", "m.tcl", 10, B).unwrap_err().to_string();
        assert!(e.starts_with("m.tcl:1: node 50: expected at most 10 nodes"), "{e}");
        let e = parse("hello world\n", "m.tcl", 10, B).unwrap_err().to_string();
        assert!(e.starts_with("m.tcl:1: `hello world`: expected"), "{e}");
        assert!(parse("# only comments\n", "m.tcl", 10, B).is_err());
    }

    #[test]
    fn values_that_would_hang_the_simulator_are_refused_with_file_and_line() {
        let start = "$node_(0) set X_ 1\n$node_(0) set Y_ 1\n";
        for (line, says) in [
            (
                "$ns_ at 1 \"$node_(0) setdest 300 0 1e300\"",
                "m.tcl:3: speed 1e300: expected a speed from 0 to 1000 m/s",
            ),
            (
                "$ns_ at 1 \"$node_(0) setdest 1e300 0 10\"",
                "m.tcl:3: x 1e300: expected a coordinate from -20000000 to 20000000 m",
            ),
            ("$ns_ at 1e300 \"$node_(0) setdest 3 0 10\"", "m.tcl:3: time 1e300: expected a time from 0 to 86400 s"),
            (
                "$ns_ at 1 \"$node_(0) setdest 3 0\"",
                "m.tcl:3: `$ns_ at 1 \"$node_(0) setdest 3 0\"`: expected `$ns_ at T \"$node_(I) setdest X Y SPEED\"`",
            ),
        ] {
            let t0 = std::time::Instant::now();
            let e = parse(&format!("{start}{line}\n"), "m.tcl", 10, B).unwrap_err().to_string();
            assert_eq!(e, says);
            assert!(t0.elapsed() < std::time::Duration::from_secs(1));
        }
        let e = parse("$node_(0) set X_ -3e7\n", "m.tcl", 10, B).unwrap_err().to_string();
        assert_eq!(e, "m.tcl:1: X_ -30000000: expected a coordinate from -20000000 to 20000000 m");
        // Two destinations at one instant.
        let twice = format!("{start}$ns_ at 2 \"$node_(0) setdest 3 0 1\"\n$ns_ at 2 \"$node_(0) setdest 5 0 1\"\n");
        let e = parse(&twice, "m.tcl", 10, B).unwrap_err().to_string();
        assert!(e.starts_with("m.tcl:4: node 0 is sent to two destinations at 2 s (lines 3 and 4)"), "{e}");
        // Other scheduled commands are still not movement.
        assert!(parse(&format!("{start}$ns_ at 5 \"$cbr_(0) start\"\n"), "m.tcl", 10, B).is_ok());
    }
}
