//! Empirical CDFs as step lines.

use plotters::prelude::*;

use super::axes::{axis_range, chart, extent, usable, AxisRule, Mesh, FIGURE};
use super::legend::{color, draw_legend, legend_corner, legend_glyph};
use super::render::{draw_no_data, Drawn, Figure, Root, TextFix};

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

impl Figure for CdfFigure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &Root<DB>, fix: TextFix) -> Drawn<DB> {
        let steps: Vec<Vec<(f64, f64)>> = self.series.iter().map(|(_, s)| cdf_steps(s)).collect();
        let x = axis_range(
            extent(steps.iter().flatten().map(|p| p.0)),
            AxisRule { pad: 0.04, zero_floor: false, integer: false },
        );
        let y = (-0.02, 1.04);
        let mesh = Mesh { x_desc: self.x_label, y_desc: "Empirical CDF", x_integer: None, y_labels: 12 };
        let mut chart = chart(root, Some(self.title), FIGURE, x, y.0..y.1, &mesh, fix)?;

        let mut lines = Vec::new();
        for (i, ((label, _), st)) in self.series.iter().zip(&steps).enumerate() {
            let col = color(i);
            // Lead-in at 0 from the left edge, tail at 1 to the right edge.
            let mut line = Vec::with_capacity(st.len() + 2);
            if let Some(last) = st.last() {
                line.push((x.0, 0.0));
                line.extend_from_slice(st);
                line.push((x.1, last.1));
            }
            chart
                .draw_series(LineSeries::new(line.iter().copied(), col.stroke_width(3)))?
                .label(label.as_str())
                .legend(move |(px, py)| legend_glyph((px, py - fix.legend_dy), col, true, None));
            lines.push(line);
        }
        if steps.iter().all(|p| p.is_empty()) {
            draw_no_data(chart.plotting_area())?;
        }
        if !self.series.is_empty() {
            let labels: Vec<&str> = self.series.iter().map(|(l, _)| l.as_str()).collect();
            let pos = legend_corner(&lines, x, y, &labels, chart.plotting_area().dim_in_pixel());
            draw_legend(&mut chart, pos)?;
        }
        Ok(())
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
