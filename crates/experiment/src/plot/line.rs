//! Goodput (or any y) against x: one line with markers per series, with
//! ± error bars.

use plotters::prelude::*;

use super::axes::{axis_range, chart, extent, integer_label_count, usable, AxisRule, Mesh, FIGURE};
use super::legend::{color, draw_legend, legend_corner, legend_glyph, shape, ErrorBarElement, Marker};
use super::render::{draw_no_data, Drawn, Figure, Root, TextFix};
use super::LineChart;

pub(super) struct LineFigure<'a>(pub &'a LineChart);

impl Figure for LineFigure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &Root<DB>, fix: TextFix) -> Drawn<DB> {
        let c = self.0;
        // Clean points, keeping each point's error.
        let cleaned: Vec<Vec<(f64, f64, Option<f64>)>> = c
            .series
            .iter()
            .map(|s| {
                s.points
                    .iter()
                    .enumerate()
                    .filter(|(_, &(x, y))| usable(x) && usable(y))
                    .map(|(i, &(x, y))| {
                        let e = s
                            .error
                            .as_ref()
                            .and_then(|e| e.get(i).copied())
                            .map(f64::abs)
                            .filter(|e| usable(*e) && usable(y - e) && usable(y + e));
                        (x, y, e)
                    })
                    .collect()
            })
            .collect();
        let xs = cleaned.iter().flatten().map(|p| p.0);
        let ys = cleaned.iter().flatten().flat_map(|&(_, y, e)| [y - e.unwrap_or(0.0), y + e.unwrap_or(0.0)]);
        let x = axis_range(extent(xs), AxisRule { pad: 0.03, zero_floor: false, integer: c.x_integer_ticks });
        let y = axis_range(extent(ys), AxisRule { pad: 0.06, zero_floor: true, integer: false });

        let mesh = Mesh {
            x_desc: &c.x_label,
            y_desc: &c.y_label,
            x_integer: c.x_integer_ticks.then(|| integer_label_count(x.0, x.1)),
            y_labels: 10,
        };
        let mut chart = chart(root, Some(&c.title), FIGURE, x, y.0..y.1, &mesh, fix)?;

        for (i, (s, pts)) in c.series.iter().zip(&cleaned).enumerate() {
            let col = color(i);
            let shape = shape(i);
            // Error bars first, so that lines and markers sit on top.
            chart.draw_series(pts.iter().filter_map(|&(px, py, e)| {
                e.filter(|e| *e > 0.0).map(|e| ErrorBarElement {
                    ends: [(px, py - e), (px, py + e)],
                    cap: 7,
                    style: col.stroke_width(2),
                })
            }))?;
            chart.draw_series(LineSeries::new(pts.iter().map(|&(px, py, _)| (px, py)), col.stroke_width(3)))?;
            chart
                .draw_series(pts.iter().map(|&(px, py, _)| Marker::new((px, py), shape, 6, col)))?
                .label(s.label.as_str())
                .legend(move |(px, py)| legend_glyph((px, py - fix.legend_dy), col, true, Some((shape, 6))));
        }

        if cleaned.iter().all(|p| p.is_empty()) {
            draw_no_data(chart.plotting_area())?;
        }
        if !c.series.is_empty() {
            let lines: Vec<Vec<(f64, f64)>> =
                cleaned.iter().map(|p| p.iter().map(|&(x, y, _)| (x, y)).collect()).collect();
            let labels: Vec<&str> = c.series.iter().map(|s| s.label.as_str()).collect();
            let pos = legend_corner(&lines, x, y, &labels, chart.plotting_area().dim_in_pixel());
            draw_legend(&mut chart, pos)?;
        }
        Ok(())
    }
}
