//! Empirical CDFs as step lines, on a log x axis when the samples span
//! many decades.

use plotters::prelude::*;

use super::axes::{
    axis_range, chart, extent, log_coord, log_range, unit, usable, wants_log_scale, AxisRule, Coord, Mesh, Ticks,
    FIGURE,
};
use super::identical::{merge_cdf, IDENTICAL_NOTE};
use super::legend::{rgb, Legend, Marker, Polyline};
use super::legend_key::{self, identical_groups_note};
use super::render::{titled, Drawn, Figure, Quirks, Root};
use super::style::{indexed, SeriesStyle};
use super::{CdfChart, CdfSeries};

/// At most this many markers on a CDF (at the tops of its rises, spread
/// evenly), enough to tell the lines apart without a colour.
const CDF_MARKERS: usize = 6;

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

/// Where a CDF's markers go: the tops of its rises (the odd corners of
/// [`cdf_steps`]), at most [`CDF_MARKERS`] of them, spread evenly.
pub(super) fn marker_points(steps: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let tops: Vec<(f64, f64)> = steps.iter().skip(1).step_by(2).copied().collect();
    if tops.len() <= CDF_MARKERS {
        return tops;
    }
    (0..CDF_MARKERS).map(|k| tops[(k * (tops.len() - 1) + (CDF_MARKERS - 1) / 2) / (CDF_MARKERS - 1)]).collect()
}

pub(super) struct CdfFigure<'a>(pub &'a CdfChart);

impl CdfFigure<'_> {
    /// Draws the step lines of `series` on an x axis `x_coord` (linear or
    /// log) over `x`.
    #[allow(clippy::too_many_arguments)]
    fn draw_on<DB: DrawingBackend, X: Coord>(
        &self,
        body: &Root<DB>,
        series: &[CdfSeries],
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
        let looks: Vec<_> = series.iter().enumerate().map(|(i, s)| s.style.unwrap_or_else(|| indexed(i))).collect();
        let labelled: Vec<(String, SeriesStyle)> = series.iter().map(|s| s.label.clone()).zip(looks.clone()).collect();
        let legend = Legend(legend_key::entries(&labelled, self.0.key.as_ref(), true));
        let unit_lines: Vec<Vec<(f64, f64)>> =
            lines.iter().map(|l| l.iter().map(|&(px, py)| (unit(px, x, log), unit(py, y, false))).collect()).collect();
        let (place, area, strip) = legend.layout(body, FIGURE, &unit_lines);
        let mesh = Mesh {
            x_desc: &self.0.x_label,
            y_desc: "Empirical CDF",
            x: if log { Ticks::Log(x) } else { Ticks::Linear(x, 10) },
            y: Ticks::Linear(y, 12),
        };
        let mut chart = chart(&area, FIGURE, x_coord, y.0..y.1, &mesh, q)?;
        for ((line, st), look) in lines.into_iter().zip(steps).zip(&looks) {
            let col = rgb(look.color);
            chart.draw_series(std::iter::once(Polyline::new(line, col, 3, q).dashed(look.dash)))?;
            chart.draw_series(marker_points(st).into_iter().map(|p| Marker::new(p, look.marker, 6, col)))?;
        }
        let empty = steps.iter().all(|p| p.is_empty());
        legend.finish(chart.plotting_area(), empty, place, strip.as_ref(), q)
    }
}

impl Figure for CdfFigure<'_> {
    fn caption(&self) -> Vec<String> {
        let mut lines = self.0.caption.clone();
        let (series, merged) = merge_cdf(&self.0.series);
        if merged {
            match &self.0.key {
                None => lines.push(IDENTICAL_NOTE.into()),
                Some(_) => {
                    lines.extend(identical_groups_note(&series.iter().map(|s| s.label.as_str()).collect::<Vec<_>>()))
                }
            }
        }
        lines
    }

    fn draw<DB: DrawingBackend>(&self, root: &Root<DB>, q: Quirks) -> Drawn<DB> {
        let (series, _) = merge_cdf(&self.0.series);
        let steps: Vec<Vec<(f64, f64)>> = series.iter().map(|s| cdf_steps(&s.samples)).collect();
        let xs = || steps.iter().flatten().map(|p| p.0);
        let body = titled(root, &self.0.title)?;
        // Samples spanning decades (ATP's and TCP's goodput over many hops)
        // on a log axis, so that the small ones are not one vertical line.
        if wants_log_scale(xs()) {
            let x = log_range(extent(xs()));
            return self.draw_on(&body, &series, &steps, log_coord(x), x, true, q);
        }
        let x = axis_range(extent(xs()), AxisRule { pad: 0.04, zero_floor: false, integer: false });
        self.draw_on(&body, &series, &steps, x.0..x.1, x, false, q)
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
    fn a_cdf_has_a_few_markers_on_its_rises() {
        assert!(marker_points(&[]).is_empty());
        // Two samples: a marker on each rise's top.
        let st = cdf_steps(&[1.0, 2.0]);
        assert_eq!(marker_points(&st), vec![(1.0, 0.5), (2.0, 1.0)]);
        // Many: at most CDF_MARKERS, on the line, the last at the top.
        let st = cdf_steps(&(0..100).map(f64::from).collect::<Vec<_>>());
        let m = marker_points(&st);
        assert_eq!(m.len(), CDF_MARKERS);
        assert!(m.iter().all(|p| st.contains(p)));
        assert_eq!(m.last(), Some(&(99.0, 1.0)));
        assert!(m.windows(2).all(|w| w[0].0 < w[1].0));
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
