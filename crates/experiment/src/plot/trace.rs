//! Quantities over time: the two stacked panels of a thesis-style trace
//! figure, and one line per flow.

use plotters::prelude::*;

use super::axes::{axis_range, chart, extent, round_up_end, usable_points, AxisRule, Mesh, FIGURE, PANEL};
use super::legend::{color, draw_legend, legend_corner, legend_glyph, shape, Marker, Shape};
use super::render::{draw_no_data, title_font, Drawn, Figure, Root, TextFix};
use super::{TraceChart, W};

const D_MAX_COLOR: RGBColor = RGBColor(0x1a, 0x9e, 0x1a);
const D_S_COLOR: RGBColor = RGBColor(0x1f, 0x4e, 0xd8);
const D_AVG_COLOR: RGBColor = RGBColor(0xe0, 0x1e, 0xb4);
const GOODPUT_COLOR: RGBColor = RGBColor(0x1f, 0x3a, 0x93);

pub(super) struct TraceFigure<'a>(pub &'a TraceChart);

impl Figure for TraceFigure<'_> {
    const SIZE: (u32, u32) = (W, 1000);

    fn draw<DB: DrawingBackend>(&self, root: &Root<DB>, fix: TextFix) -> Drawn<DB> {
        let c = self.0;
        let goodput = usable_points(&c.goodput);
        let delays = [
            ("D_max", usable_points(&c.d_max), D_MAX_COLOR, Shape::Circle),
            ("D_s", usable_points(&c.d_s), D_S_COLOR, Shape::Circle),
            ("D_avg", usable_points(&c.d_avg), D_AVG_COLOR, Shape::Circle),
        ];
        // Both panels share the time axis.
        let t = round_up_end(axis_range(
            extent(goodput.iter().chain(delays.iter().flat_map(|d| d.1.iter())).map(|p| p.0)),
            AxisRule { pad: 0.0, zero_floor: true, integer: false },
        ));
        let gy =
            axis_range(extent(goodput.iter().map(|p| p.1)), AxisRule { pad: 0.06, zero_floor: true, integer: false });
        let dy = axis_range(
            extent(delays.iter().flat_map(|d| d.1.iter().map(|p| p.1))),
            AxisRule { pad: 0.06, zero_floor: true, integer: false },
        );

        let body = root.margin(12, 0, 0, 0).titled(&c.title, title_font())?;
        let (upper, lower) = body.split_vertically(body.dim_in_pixel().1 / 2);

        let mesh = Mesh { x_desc: "Time (s)", y_desc: "Goodput (Mbit/s)", x_integer: None, y_labels: 8 };
        let mut top = chart(&upper, None, PANEL, t, gy.0..gy.1, &mesh, fix)?;
        top.draw_series(LineSeries::new(goodput.iter().copied(), GOODPUT_COLOR.stroke_width(2)))?
            .label("Instantaneous goodput")
            .legend(move |(px, py)| legend_glyph((px, py - fix.legend_dy), GOODPUT_COLOR, true, None));
        if goodput.is_empty() {
            draw_no_data(top.plotting_area())?;
        }
        let pos = legend_corner(
            std::slice::from_ref(&goodput),
            t,
            gy,
            &["Instantaneous goodput"],
            top.plotting_area().dim_in_pixel(),
        );
        draw_legend(&mut top, pos)?;

        let mesh = Mesh { x_desc: "Time (s)", y_desc: "Delay (ms)", x_integer: None, y_labels: 8 };
        let mut bottom = chart(&lower, None, PANEL, t, dy.0..dy.1, &mesh, fix)?;
        let dense = delays.iter().map(|d| d.1.len()).max().unwrap_or(0) > 400;
        let radius = if dense { 2 } else { 3 };
        for (label, pts, col, shape) in &delays {
            let (col, shape) = (*col, *shape);
            bottom
                .draw_series(pts.iter().map(|&p| Marker::new(p, shape, radius, col)))?
                .label(*label)
                .legend(move |(px, py)| legend_glyph((px, py - fix.legend_dy), col, false, Some((shape, 5))));
        }
        let lines: Vec<Vec<(f64, f64)>> = delays.iter().map(|d| d.1.clone()).collect();
        let labels: Vec<&str> = delays.iter().map(|d| d.0).collect();
        if lines.iter().all(|p| p.is_empty()) {
            draw_no_data(bottom.plotting_area())?;
        }
        let pos = legend_corner(&lines, t, dy, &labels, bottom.plotting_area().dim_in_pixel());
        draw_legend(&mut bottom, pos)?;
        Ok(())
    }
}

pub(super) struct MultiTraceFigure<'a> {
    pub title: &'a str,
    pub series: &'a [(String, Vec<(f64, f64)>)],
    pub x_label: &'a str,
    pub y_label: &'a str,
}

/// Series with at most this many points get markers too.
const MARKER_MAX_POINTS: usize = 40;

impl Figure for MultiTraceFigure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &Root<DB>, fix: TextFix) -> Drawn<DB> {
        let cleaned: Vec<Vec<(f64, f64)>> = self.series.iter().map(|(_, p)| usable_points(p)).collect();
        let x = round_up_end(axis_range(
            extent(cleaned.iter().flatten().map(|p| p.0)),
            AxisRule { pad: 0.0, zero_floor: true, integer: false },
        ));
        let y = axis_range(
            extent(cleaned.iter().flatten().map(|p| p.1)),
            AxisRule { pad: 0.06, zero_floor: true, integer: false },
        );
        let mesh = Mesh { x_desc: self.x_label, y_desc: self.y_label, x_integer: None, y_labels: 10 };
        let mut chart = chart(root, Some(self.title), FIGURE, x, y.0..y.1, &mesh, fix)?;
        for (i, ((label, _), pts)) in self.series.iter().zip(&cleaned).enumerate() {
            let col = color(i);
            let shape = shape(i);
            let marked = pts.len() <= MARKER_MAX_POINTS;
            chart.draw_series(LineSeries::new(pts.iter().copied(), col.stroke_width(2)))?.label(label.as_str()).legend(
                move |(px, py)| legend_glyph((px, py - fix.legend_dy), col, true, marked.then_some((shape, 5))),
            );
            if marked {
                chart.draw_series(pts.iter().map(|&p| Marker::new(p, shape, 5, col)))?;
            }
        }
        if cleaned.iter().all(|p| p.is_empty()) {
            draw_no_data(chart.plotting_area())?;
        }
        if !self.series.is_empty() {
            let labels: Vec<&str> = self.series.iter().map(|(l, _)| l.as_str()).collect();
            let pos = legend_corner(&cleaned, x, y, &labels, chart.plotting_area().dim_in_pixel());
            draw_legend(&mut chart, pos)?;
        }
        Ok(())
    }
}
