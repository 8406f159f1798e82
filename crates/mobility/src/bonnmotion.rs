//! BonnMotion's native movement files (`NAME.movements`, after `gunzip`):
//! one line per node, the node's waypoints as `t x y` triples (or `t x y z`
//! quadruples for 3-D scenarios, when told), times in seconds and
//! non-decreasing; between two waypoints the node moves straight at
//! constant speed.

use crate::ns2::{Bounds, FileError};
use crate::{Point, Trajectory};
use meshbed_core::{Duration, Instant};

/// The values per waypoint besides the time a file may have: `x y`, or
/// `x y z`.
pub const DIMENSIONS: std::ops::RangeInclusive<usize> = 2..=3;

/// The trajectories in a BonnMotion `.movements` file's bytes (`file` names
/// it in errors); `dimensions` is 2 (`t x y`) or 3 (`t x y z`, z ignored); at
/// most `max_nodes` lines, every value within `bounds` (speeds as implied
/// by consecutive waypoints), no two waypoints of a node at one instant.
pub fn parse(
    bytes: &[u8],
    file: &str,
    dimensions: usize,
    max_nodes: u32,
    bounds: Bounds,
) -> Result<Vec<Trajectory>, FileError> {
    let err = |line: usize, message: String| FileError { file: file.to_string(), line, message };
    if bytes.starts_with(&[0x1f, 0x8b]) {
        return Err(err(0, "gzip data: expected the uncompressed .movements text (run gunzip first)".into()));
    }
    let text =
        std::str::from_utf8(bytes).map_err(|e| err(0, format!("not text ({e}): expected lines of `t x y` numbers")))?;
    if !DIMENSIONS.contains(&dimensions) {
        return Err(err(0, format!("dimensions = {dimensions}: expected 2 or 3")));
    }
    let width = dimensions + 1;
    let mut paths = Vec::new();
    for (k, raw) in text.lines().enumerate() {
        let line = k + 1;
        if raw.trim().is_empty() {
            continue;
        }
        if paths.len() as u32 >= max_nodes {
            return Err(err(line, format!("more than {max_nodes} nodes (one line each)")));
        }
        let values = raw
            .split_whitespace()
            .enumerate()
            .map(|(i, w)| {
                w.parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .ok_or_else(|| err(line, format!("field {} `{w}`: expected a number", i + 1)))
            })
            .collect::<Result<Vec<f64>, _>>()?;
        if values.len() % width != 0 {
            return Err(err(
                line,
                format!(
                    "{} numbers: expected waypoints of {width} (t x y{}) each",
                    values.len(),
                    if width == 4 { " z" } else { "" }
                ),
            ));
        }
        let waypoints = values
            .chunks(width)
            .map(|w| {
                bounds.time(w[0], "time").map_err(|m| err(line, m))?;
                bounds.coordinate(w[1], "x").and(bounds.coordinate(w[2], "y")).map_err(|m| err(line, m))?;
                Ok((w[0], Point::new(w[1], w[2])))
            })
            .collect::<Result<Vec<_>, _>>()?;
        for (i, pair) in waypoints.windows(2).enumerate() {
            let ((t0, p0), (t1, p1)) = (pair[0], pair[1]);
            if t1 == t0 {
                return Err(err(
                    line,
                    format!("waypoints {} and {} both at {t0} s: expected increasing times (a node cannot be in two places at once)", i + 1, i + 2),
                ));
            }
            if t1 > t0 {
                let speed = ((p1.x_m - p0.x_m).hypot(p1.y_m - p0.y_m)) / (t1 - t0);
                bounds
                    .speed(speed, &format!("from waypoint {} to {}, a speed of", i + 1, i + 2))
                    .map_err(|m| err(line, m))?;
            }
        }
        let waypoints: Vec<(Instant, Point)> =
            waypoints.into_iter().map(|(t, p)| (Instant::ZERO + Duration::from_secs_f64(t), p)).collect();
        let path = Trajectory::through(&waypoints).map_err(|e| err(line, format!("node {}: {e}", paths.len())))?;
        paths.push(path);
    }
    if paths.is_empty() {
        return Err(err(0, "no nodes: expected one line of `t x y` waypoints per node".into()));
    }
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ns2::tests::B;

    fn s(secs: f64) -> Instant {
        Instant::ZERO + Duration::from_secs_f64(secs)
    }

    #[test]
    fn each_line_is_a_node_moving_between_its_waypoints() {
        let text = "0.0 10.0 10.0 5.0 10.0 10.0 15.0 110.0 10.0\n0.0 0.0 0.0\n";
        let p = parse(text.as_bytes(), "rw.movements", 2, 10, B).unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].position(s(3.0)), Point::new(10.0, 10.0));
        assert_eq!(p[0].position(s(10.0)), Point::new(60.0, 10.0));
        assert_eq!(p[0].speed_mps(s(10.0)), 10.0);
        assert_eq!(p[0].position(s(99.0)), Point::new(110.0, 10.0));
        assert!(p[1].is_static());
        let three_d = parse(b"0 1 2 3 10 1 2 3\n", "x.movements", 3, 10, B).unwrap();
        assert_eq!(three_d[0].position(s(5.0)), Point::new(1.0, 2.0));
    }

    #[test]
    fn mistakes_name_the_file_and_line() {
        let e = parse(b"0 1 2\n0 1\n", "m.movements", 2, 10, B).unwrap_err().to_string();
        assert_eq!(e, "m.movements:2: 2 numbers: expected waypoints of 3 (t x y) each");
        let e = parse(b"0 1 2 5 x 3\n", "m.movements", 2, 10, B).unwrap_err().to_string();
        assert_eq!(e, "m.movements:1: field 5 `x`: expected a number");
        let e = parse(b"5 1 2 1 3 3\n", "m.movements", 2, 10, B).unwrap_err().to_string();
        assert!(e.starts_with("m.movements:1: node 0: waypoints[1].time"), "{e}");
        let e = parse(b"0 1 1\n0 2 2\n", "m.movements", 2, 1, B).unwrap_err().to_string();
        assert_eq!(e, "m.movements:2: more than 1 nodes (one line each)");
        assert!(parse(&[0x1f, 0x8b, 8, 0], "m.movements.gz", 2, 10, B).unwrap_err().to_string().contains("gunzip"));
        assert!(parse(&[0xff, 0xfe, 0], "m.movements", 2, 10, B).unwrap_err().to_string().contains("not text"));
    }

    #[test]
    fn values_that_would_hang_the_simulator_are_refused_with_file_and_line() {
        for (text, says) in [
            ("0 1 1 1 1e300 1\n", "m.movements:1: x 1e300: expected a coordinate from -20000000 to 20000000 m"),
            ("0 1 1 1e300 2 1\n", "m.movements:1: time 1e300: expected a time from 0 to 86400 s"),
            ("0 0 0 1 0 0\n0 0 0 1 0 0 2 5000 0\n", "m.movements:2: from waypoint 2 to 3, a speed of 5000: expected a speed from 0 to 1000 m/s"),
            ("0 0 0 1 0 0 1 5 0\n", "m.movements:1: waypoints 2 and 3 both at 1 s: expected increasing times (a node cannot be in two places at once)"),
        ] {
            let t0 = std::time::Instant::now();
            let e = parse(text.as_bytes(), "m.movements", 2, 10, B).unwrap_err().to_string();
            assert_eq!(e, says);
            assert!(t0.elapsed() < std::time::Duration::from_secs(1));
        }
    }
}
