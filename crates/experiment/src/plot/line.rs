//! Goodput (or any y) against x: one line with markers per series, with
//! ± error bars, hollow markers for points to read with care, and a log y
//! axis when the values span many decades.

use plotters::prelude::*;

use super::axes::{
    axis_range, chart, extent, integer_label_count, log_coord, log_range, unit, usable, wants_log_scale, AxisRule,
    Coord, Mesh, FIGURE,
};
use super::legend::{color, shape, Entry, Legend, Marker, Polyline, Shape};
use super::render::{titled, Drawn, Figure, Quirks, Root};
use super::{LineChart, YScale};

/// The colour of the legend's hollow-marker entry: no series' colour.
const NOTE_COLOR: RGBColor = RGBColor(0x50, 0x50, 0x50);

/// Half the width of an error bar's caps, in pixels.
const BAR_CAP_PX: i32 = 7;

/// One usable point: x, y, the error bar's half-width, hollow.
type Point = (f64, f64, Option<f64>, bool);

pub(super) struct LineFigure<'a>(pub &'a LineChart);

impl LineFigure<'_> {
    /// Usable points of every series, each with its error and hollowness.
    fn cleaned(&self) -> Vec<Vec<Point>> {
        self.0
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
                        (x, y, e, s.hollow.get(i).copied().unwrap_or(false))
                    })
                    .collect()
            })
            .collect()
    }

    fn legend(&self, cleaned: &[Vec<Point>]) -> Legend {
        let c = self.0;
        let mut entries: Vec<Entry> = c
            .series
            .iter()
            .enumerate()
            .map(|(i, s)| Entry::new(&s.label, color(i), true, Some((shape(i), 6))))
            .collect();
        if let Some(label) = c.hollow_label.as_ref().filter(|_| cleaned.iter().flatten().any(|p| p.3)) {
            entries.push(Entry { hollow: true, ..Entry::new(label, NOTE_COLOR, false, Some((Shape::Circle, 6))) });
        }
        Legend(entries)
    }

    /// Draws the series on a y axis `y` (linear or log) over `y_range`;
    /// on a log axis, error bars that reach zero or below end at its floor.
    #[allow(clippy::too_many_arguments)]
    fn draw_on<DB: DrawingBackend, Y: Coord>(
        &self,
        body: &Root<DB>,
        cleaned: &[Vec<Point>],
        x: (f64, f64),
        y: Y,
        y_range: (f64, f64),
        log: bool,
        q: Quirks,
    ) -> Drawn<DB> {
        let c = self.0;
        let legend = self.legend(cleaned);
        let floor = |v: f64| if log { v.max(y_range.0) } else { v };
        // The lines, and each error bar as a line of its own, in plot units.
        let to_unit = |px: f64, py: f64| (unit(px, x, false), unit(py, y_range, log));
        let bars = cleaned
            .iter()
            .flatten()
            .filter_map(|&(px, py, e, _)| e.map(|e| vec![to_unit(px, floor(py - e)), to_unit(px, py + e)]));
        let unit_lines: Vec<Vec<(f64, f64)>> =
            cleaned.iter().map(|p| p.iter().map(|&(px, py, _, _)| to_unit(px, py)).collect()).chain(bars).collect();
        let (place, area, column) = legend.layout(body, FIGURE, &unit_lines);
        let mesh = Mesh {
            x_desc: &c.x_label,
            y_desc: &c.y_label,
            x_integer: c.x_integer_ticks.then(|| integer_label_count(x.0, x.1)),
            y_labels: 10,
        };
        let mut chart = chart(&area, FIGURE, x.0..x.1, y, &mesh, q)?;
        for (i, pts) in cleaned.iter().enumerate() {
            let (col, shape) = (color(i), shape(i));
            // Error bars first, so that lines and markers sit on top: a
            // vertical line with caps of a fixed pixel width. (plotters'
            // `ErrorBar` also draws a dot at the mean, which would hide the
            // markers.)
            let bars: Vec<[(f64, f64); 2]> = pts
                .iter()
                .filter_map(|&(px, py, e, _)| e.filter(|e| *e > 0.0).map(|e| [(px, floor(py - e)), (px, py + e)]))
                .collect();
            let style = col.stroke_width(2);
            chart.draw_series(bars.iter().map(|ends| PathElement::new(ends.to_vec(), style)))?;
            let cap = |&end: &(f64, f64)| {
                EmptyElement::at(end) + PathElement::new(vec![(-BAR_CAP_PX, 0), (BAR_CAP_PX, 0)], style)
            };
            chart.draw_series(bars.iter().flatten().map(cap))?;
            chart.draw_series(std::iter::once(Polyline::new(pts.iter().map(|p| (p.0, p.1)), col, 3, q)))?;
            chart.draw_series(
                pts.iter().map(|&(px, py, _, hollow)| Marker::new((px, py), shape, 6, col).hollow(hollow)),
            )?;
        }
        let empty = cleaned.iter().all(|p| p.is_empty());
        legend.finish(chart.plotting_area(), empty, place, column.as_ref(), q)
    }
}

impl Figure for LineFigure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &Root<DB>, q: Quirks) -> Drawn<DB> {
        let c = self.0;
        let cleaned = self.cleaned();
        let points = || cleaned.iter().flatten();
        let x = axis_range(
            extent(points().map(|p| p.0)),
            AxisRule { pad: 0.03, zero_floor: false, integer: c.x_integer_ticks },
        );
        let body = titled(root, &c.title)?;
        if c.y_scale == YScale::Auto && wants_log_scale(points().map(|p| p.1)) {
            let ends = points().flat_map(|&(_, y, e, _)| [y, y + e.unwrap_or(0.0), y - e.unwrap_or(0.0)]);
            let y = log_range(extent(ends.filter(|v| *v > 0.0)));
            return self.draw_on(&body, &cleaned, x, log_coord(y), y, true, q);
        }
        let ends = points().flat_map(|&(_, y, e, _)| [y - e.unwrap_or(0.0), y + e.unwrap_or(0.0)]);
        let y = axis_range(extent(ends), AxisRule { pad: 0.06, zero_floor: true, integer: false });
        self.draw_on(&body, &cleaned, x, y.0..y.1, y, false, q)
    }
}
