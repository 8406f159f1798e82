//! Empirical CDFs as step lines, on a log x axis when the samples span
//! many decades.

use plotters::prelude::*;

use super::axes::{
    axis_range, chart, extent, log_coord, log_range, unit, usable, wants_log_scale, AxisRule, Coord, Mesh, FIGURE,
};
use super::legend::{color, Entry, Legend, Polyline};
use super::render::{titled, Drawn, Figure, Quirks, Root};

/// At most this many steps per CDF (quantiles of larger samples).
const CDF_MAX_STEPS: usize = 2000;

/// The corners of an empirical CDF's step line, without the horizontal
/// lead-in and tail.
pub(super) fn cdf_steps(samples: &[f64]) -> Vec<(f64, f64)> {
    let mut v: Vec<f64> = samples.iter().copied().filter(|x| usable(*x)).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        return Vec::new();
    }
    // The indices of the sorted samples where the CDF is evaluated.
    let idx: Vec<usize> = if n <= CDF_MAX_STEPS {
        (0..n).collect()
    } else {
        (0..=CDF_MAX_STEPS).map(|k| ((k as f64) * (n - 1) as f64 / CDF_MAX_STEPS as f64).round() as usize).collect()
    };
    let mut out = Vec::with_capacity(2 * idx.len());
    let mut prev_y = 0.0;
    for (j, &i) in idx.iter().enumerate() {
        // Ties: the CDF at a value is the fraction of samples <= it.
        if j + 1 < idx.len() && v[idx[j + 1]] == v[i] {
            continue;
        }
        let mut last = i;
        while last + 1 < n && v[last + 1] == v[i] {
            last += 1;
        }
        let y = (last + 1) as f64 / n as f64;
        out.push((v[i], prev_y));
        out.push((v[i], y));
        prev_y = y;
    }
    out
}

pub(super) struct CdfFigure<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub series: &'a [(String, Vec<f64>)],
}

impl CdfFigure<'_> {
    /// Draws the step lines on an x axis `x_coord` (linear or log) over
    /// `x`.
    fn draw_on<DB: DrawingBackend, X: Coord>(
        &self,
        body: &Root<DB>,
        steps: &[Vec<(f64, f64)>],
        x_coord: X,
        x: (f64, f64),
        log: bool,
        q: Quirks,
    ) -> Drawn<DB> {
        let y = (-0.02, 1.04);
        // Lead-in at 0 from the left edge, tail at 1 to the right edge.
        let lines: Vec<Vec<(f64, f64)>> = steps
            .iter()
            .map(|st| match st.last() {
                Some(last) => std::iter::once((x.0, 0.0)).chain(st.iter().copied()).chain([(x.1, last.1)]).collect(),
                None => Vec::new(),
            })
            .collect();
        let legend =
            Legend(self.series.iter().enumerate().map(|(i, (l, _))| Entry::new(l, color(i), true, None)).collect());
        let unit_lines: Vec<Vec<(f64, f64)>> =
            lines.iter().map(|l| l.iter().map(|&(px, py)| (unit(px, x, log), unit(py, y, false))).collect()).collect();
        let (place, area, column) = legend.layout(body, FIGURE, &unit_lines);
        let mesh = Mesh { x_desc: self.x_label, y_desc: "Empirical CDF", x_integer: None, y_labels: 12 };
        let mut chart = chart(&area, FIGURE, x_coord, y.0..y.1, &mesh, q)?;
        for (i, line) in lines.into_iter().enumerate() {
            chart.draw_series(std::iter::once(Polyline::new(line, color(i), 3, q)))?;
        }
        let empty = steps.iter().all(|p| p.is_empty());
        legend.finish(chart.plotting_area(), empty, place, column.as_ref(), q)
    }
}

impl Figure for CdfFigure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &Root<DB>, q: Quirks) -> Drawn<DB> {
        let steps: Vec<Vec<(f64, f64)>> = self.series.iter().map(|(_, s)| cdf_steps(s)).collect();
        let xs = || steps.iter().flatten().map(|p| p.0);
        let body = titled(root, self.title)?;
        // Samples spanning decades (ATP's and TCP's goodput over many hops)
        // on a log axis, so that the small ones are not one vertical line.
        if wants_log_scale(xs()) {
            let x = log_range(extent(xs()));
            return self.draw_on(&body, &steps, log_coord(x), x, true, q);
        }
        let x = axis_range(extent(xs()), AxisRule { pad: 0.04, zero_floor: false, integer: false });
        self.draw_on(&body, &steps, x.0..x.1, x, false, q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdf_steps_are_the_empirical_cdf() {
        assert!(cdf_steps(&[]).is_empty());
        assert!(cdf_steps(&[f64::NAN, f64::INFINITY]).is_empty());
        assert_eq!(cdf_steps(&[2.0]), vec![(2.0, 0.0), (2.0, 1.0)]);
        // Ties jump at once; NaN skipped; unsorted input.
        assert_eq!(
            cdf_steps(&[3.0, 1.0, f64::NAN, 1.0, 2.0]),
            vec![(1.0, 0.0), (1.0, 0.5), (2.0, 0.5), (2.0, 0.75), (3.0, 0.75), (3.0, 1.0)]
        );
    }

    #[test]
    fn cdf_steps_of_large_samples_are_bounded_and_monotone() {
        let v: Vec<f64> = (0..100_000).rev().map(|i| i as f64).collect();
        let st = cdf_steps(&v);
        assert!(st.len() <= 2 * (CDF_MAX_STEPS + 1));
        assert_eq!(st.first().unwrap().0, 0.0);
        assert_eq!(*st.last().unwrap(), (99_999.0, 1.0));
        assert!(st.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
    }
}
