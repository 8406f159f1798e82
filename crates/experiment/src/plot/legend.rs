//! Legend and markers: the palette, marker shapes (filled, or hollow for
//! points to be read with care), wide lines, and the legend,
//! which goes into a corner of the plot that hides no data, or else to the
//! right of the plot.

use plotters::coord::Shift;
use plotters::element::{Drawable, PointCollection};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters_backend::{BackendCoord, DrawingErrorKind};

use super::axes::Frame;
use super::render::{draw_no_data, Drawn, Quirks, Root, FONT, LEGEND_SIZE};

/// The palette of matplotlib's "tab10": what a reader of papers expects.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
];

pub(super) fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// The marker of series `i`: shapes advance once more after each round of
/// colours, so that colour and shape together stay distinct for 50 series.
pub(super) fn shape(i: usize) -> Shape {
    SHAPES[(i + i / PALETTE.len()) % SHAPES.len()]
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Shape {
    Circle,
    Square,
    Triangle,
    Diamond,
    InvTriangle,
}

const SHAPES: [Shape; 5] = [Shape::Circle, Shape::Square, Shape::Triangle, Shape::Diamond, Shape::InvTriangle];

/// A marker of a fixed pixel size at a data point: filled, or hollow (a
/// white inside with a coloured outline).
pub(super) struct Marker<C> {
    at: C,
    shape: Shape,
    radius: i32,
    color: RGBColor,
    hollow: bool,
}

impl<C> Marker<C> {
    pub(super) fn new(at: C, shape: Shape, radius: i32, color: RGBColor) -> Self {
        Marker { at, shape, radius, color, hollow: false }
    }

    pub(super) fn hollow(self, hollow: bool) -> Self {
        Marker { hollow, ..self }
    }
}

impl<'a, C: 'a> PointCollection<'a, C> for &'a Marker<C> {
    type Point = &'a C;
    type IntoIter = std::iter::Once<&'a C>;
    fn point_iter(self) -> Self::IntoIter {
        std::iter::once(&self.at)
    }
}

/// The corners of a marker's polygon around (x, y); `None` for a circle.
fn outline(shape: Shape, (x, y): BackendCoord, r: i32) -> Option<Vec<BackendCoord>> {
    let s = (r * 85) / 100;
    match shape {
        Shape::Circle => None,
        Shape::Square => Some(vec![(x - s, y - s), (x + s, y - s), (x + s, y + s), (x - s, y + s)]),
        Shape::Triangle => Some(vec![(x, y - r - 1), (x - r - 1, y + r), (x + r + 1, y + r)]),
        Shape::InvTriangle => Some(vec![(x, y + r + 1), (x - r - 1, y - r), (x + r + 1, y - r)]),
        Shape::Diamond => Some(vec![(x, y - r - 1), (x + r + 1, y), (x, y + r + 1), (x - r - 1, y)]),
    }
}

impl<C, DB: DrawingBackend> Drawable<DB> for Marker<C> {
    fn draw<I: Iterator<Item = BackendCoord>>(
        &self,
        mut pos: I,
        backend: &mut DB,
        _: (u32, u32),
    ) -> Result<(), DrawingErrorKind<DB::ErrorType>> {
        let Some(at) = pos.next() else {
            return Ok(());
        };
        let fill = if self.hollow { WHITE.filled() } else { self.color.filled() };
        match outline(self.shape, at, self.radius) {
            None => backend.draw_circle(at, self.radius as u32, &fill, true)?,
            Some(corners) => backend.fill_polygon(corners, &fill)?,
        }
        if !self.hollow {
            return Ok(());
        }
        let stroke = self.color.stroke_width(2);
        match outline(self.shape, at, self.radius) {
            None => backend.draw_circle(at, self.radius as u32, &stroke, false),
            Some(corners) => {
                // Each side on its own: plotters joins thick paths with
                // unbounded miters (see `Polyline`).
                for (i, &a) in corners.iter().enumerate() {
                    backend.draw_line(a, corners[(i + 1) % corners.len()], &stroke)?;
                }
                Ok(())
            }
        }
    }
}

/// A line through data points, `width` pixels wide.
///
/// plotters strokes a wide path as one polygon with unbounded miter joins,
/// so on the bitmap backend a noisy trace grows long spikes at its sharp
/// turns (they poke out below the x axis of the trace figures); the SVG
/// backend hands the path to the viewer, which bounds its joins. With
/// [`Quirks::split_wide_paths`] each segment is drawn on its own with a
/// round dot at the joints, which has no spikes.
pub(super) struct Polyline {
    points: Vec<(f64, f64)>,
    color: RGBColor,
    width: u32,
    split: bool,
}

impl Polyline {
    pub(super) fn new(points: impl IntoIterator<Item = (f64, f64)>, color: RGBColor, width: u32, q: Quirks) -> Self {
        Polyline { points: points.into_iter().collect(), color, width, split: q.split_wide_paths }
    }
}

impl<'a> PointCollection<'a, (f64, f64)> for &'a Polyline {
    type Point = &'a (f64, f64);
    type IntoIter = std::slice::Iter<'a, (f64, f64)>;
    fn point_iter(self) -> Self::IntoIter {
        self.points.iter()
    }
}

impl<DB: DrawingBackend> Drawable<DB> for Polyline {
    fn draw<I: Iterator<Item = BackendCoord>>(
        &self,
        pos: I,
        backend: &mut DB,
        _: (u32, u32),
    ) -> Result<(), DrawingErrorKind<DB::ErrorType>> {
        let style = self.color.stroke_width(self.width);
        if !self.split || self.width <= 1 {
            return backend.draw_path(pos, &style);
        }
        let points: Vec<BackendCoord> = pos.collect();
        for w in points.windows(2) {
            backend.draw_line(w[0], w[1], &style)?;
        }
        if self.width >= 3 {
            for &p in points.iter().skip(1).take(points.len().saturating_sub(2)) {
                backend.draw_circle(p, self.width / 2, &self.color.filled(), true)?;
            }
        }
        Ok(())
    }
}

/// One entry of a legend: a glyph (a short line, a marker, or both) and
/// its label.
#[derive(Clone, Debug)]
pub(super) struct Entry {
    pub label: String,
    pub color: RGBColor,
    pub line: bool,
    pub marker: Option<(Shape, i32)>,
    pub hollow: bool,
}

impl Entry {
    pub(super) fn new(label: impl Into<String>, color: RGBColor, line: bool, marker: Option<(Shape, i32)>) -> Self {
        Entry { label: label.into(), color, line, marker, hollow: false }
    }
}

/// Where a legend goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Place {
    /// Inside the plot, in the corner (right?, upper?).
    Corner { right: bool, upper: bool },
    /// In a column to the right of the plot: no corner was free.
    Right,
}

const ROW_PX: i32 = LEGEND_SIZE as i32 + 8;
const PAD_PX: i32 = 10;
const GLYPH_PX: i32 = 40;
/// The gap between the plot and a legend inside it.
const INSET_PX: i32 = 12;

/// The legend of one plot.
pub(super) struct Legend(pub Vec<Entry>);

impl Legend {
    /// The legend box in pixels.
    pub(super) fn size<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> (i32, i32) {
        let font = (FONT, LEGEND_SIZE).into_font().color(&BLACK);
        let text = self.0.iter().map(|e| area.estimate_text_size(&e.label, &font).map_or(0, |s| s.0 as i32));
        (2 * PAD_PX + GLYPH_PX + text.max().unwrap_or(0), 2 * PAD_PX + ROW_PX * self.0.len() as i32)
    }

    /// The width a legend column to the right of a plot takes.
    pub(super) fn column_width<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> u32 {
        (self.size(area).0 + 2 * INSET_PX) as u32
    }

    /// The corner of a `plot_px` plot whose box hides no point of `lines`
    /// (nor the lines between them), given in plot units ([0, 1]² from the
    /// lower left); else [`Place::Right`]. Upper right, upper left, lower
    /// right, lower left is the order of preference.
    pub(super) fn place(box_px: (i32, i32), lines: &[Vec<(f64, f64)>], plot_px: (u32, u32)) -> Place {
        let box_w = ((box_px.0 + INSET_PX) as f64 / plot_px.0.max(1) as f64).min(1.0);
        let box_h = ((box_px.1 + INSET_PX) as f64 / plot_px.1.max(1) as f64).min(1.0);
        let corners = [(true, true), (false, true), (true, false), (false, false)];
        let hides = |(right, upper): (bool, bool), (u, v): (f64, f64)| {
            (if right { u >= 1.0 - box_w } else { u <= box_w }) && (if upper { v >= 1.0 - box_h } else { v <= box_h })
        };
        let free = |corner: (bool, bool)| {
            lines.iter().all(|line| {
                line.iter().enumerate().all(|(i, &(u, v))| {
                    let next = line.get(i + 1).copied().unwrap_or((u, v));
                    (0..8).all(|k| {
                        let t = k as f64 / 8.0;
                        !hides(corner, (u + (next.0 - u) * t, v + (next.1 - v) * t))
                    })
                })
            })
        };
        corners.into_iter().find(|&c| free(c)).map_or(Place::Right, |(right, upper)| Place::Corner { right, upper })
    }

    /// Where the legend of a plot with `frame` on `body` goes (see
    /// [`Legend::place`]), the area for the chart, and the legend's column
    /// if it goes to the right.
    pub(super) fn layout<DB: DrawingBackend>(
        &self,
        body: &Root<DB>,
        frame: Frame,
        unit_lines: &[Vec<(f64, f64)>],
    ) -> (Place, Root<DB>, Option<Root<DB>>) {
        let place = Legend::place(self.size(body), unit_lines, frame.plot_px(body.dim_in_pixel()));
        let width = if place == Place::Right { self.column_width(body) } else { 0 };
        let (plot, column) = split_off_column(body, width);
        (place, plot, column.map(|c| c.margin(frame.margin, 0, 0, 0)))
    }

    /// Finishes a plot: "No data" if it is `empty`, and the legend.
    pub(super) fn finish<DB: DrawingBackend, X: Ranged, Y: Ranged>(
        &self,
        plot: &DrawingArea<DB, Cartesian2d<X, Y>>,
        empty: bool,
        place: Place,
        column: Option<&Root<DB>>,
        q: Quirks,
    ) -> Drawn<DB> {
        if empty {
            draw_no_data(plot)?;
        }
        self.draw(place, &plot.strip_coord_spec(), column, q)
    }

    /// Draws the legend into `plot` (the plotting area, for a corner) or
    /// into `column` (for [`Place::Right`]).
    fn draw<DB: DrawingBackend>(
        &self,
        place: Place,
        plot: &DrawingArea<DB, Shift>,
        column: Option<&DrawingArea<DB, Shift>>,
        q: Quirks,
    ) -> Drawn<DB> {
        if self.0.is_empty() {
            return Ok(());
        }
        let (w, h) = self.size(plot);
        let (pw, ph) = plot.dim_in_pixel();
        let (area, x0, y0) = match (place, column) {
            (Place::Corner { right, upper }, _) => (
                plot,
                if right { pw as i32 - w - INSET_PX } else { INSET_PX },
                if upper { INSET_PX } else { ph as i32 - h - INSET_PX },
            ),
            (Place::Right, Some(column)) => (column, INSET_PX, 0),
            (Place::Right, None) => (plot, pw as i32 - w - INSET_PX, INSET_PX),
        };
        area.draw(&Rectangle::new([(x0, y0), (x0 + w, y0 + h)], WHITE.mix(0.88).filled()))?;
        area.draw(&Rectangle::new([(x0, y0), (x0 + w, y0 + h)], BLACK.mix(0.5)))?;
        let font = (FONT, LEGEND_SIZE).into_font().color(&BLACK).pos(Pos::new(HPos::Left, VPos::Center));
        for (i, e) in self.0.iter().enumerate() {
            let y = y0 + PAD_PX + ROW_PX * i as i32 + ROW_PX / 2;
            let gy = y - q.legend_dy;
            let gx = x0 + PAD_PX;
            if e.line {
                area.draw(&PathElement::new(vec![(gx, gy), (gx + 28, gy)], e.color.stroke_width(3)))?;
            }
            if let Some((shape, r)) = e.marker {
                area.draw(&Marker::new((gx + 14, gy), shape, r, e.color).hollow(e.hollow))?;
            }
            area.draw_text(&e.label, &font, (gx + GLYPH_PX, y))?;
        }
        Ok(())
    }
}

/// Splits a column `width` pixels wide off the right of `body` (none if
/// `width` is 0).
pub(super) fn split_off_column<DB: DrawingBackend>(body: &Root<DB>, width: u32) -> (Root<DB>, Option<Root<DB>>) {
    if width == 0 {
        return (body.clone(), None);
    }
    let (left, right) = body.split_horizontally(body.dim_in_pixel().0.saturating_sub(width));
    (left, Some(right))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn markers_stay_distinct_beyond_the_palette() {
        let styles: HashSet<(usize, usize)> = (0..50).map(|i| (i % PALETTE.len(), shape(i) as usize)).collect();
        assert_eq!(styles.len(), 50);
    }

    #[test]
    fn legend_goes_to_a_free_corner_or_else_beside_the_plot() {
        let plot = (1000, 600);
        let small = (200, 100);
        // Nothing in the way: upper right.
        assert_eq!(Legend::place(small, &[vec![(0.0, 0.0)]], plot), Place::Corner { right: true, upper: true });
        // A line ending in the upper right: another corner.
        let rising = vec![(0.0, 0.0), (0.5, 0.2), (0.9, 0.95), (1.0, 1.0)];
        assert_eq!(Legend::place(small, &[rising], plot), Place::Corner { right: false, upper: true });
        // A CDF-like step through every corner region: beside the plot.
        let steps = vec![(0.0, 0.0), (0.02, 0.0), (0.02, 1.0), (1.0, 1.0), (0.5, 0.0), (1.0, 0.0)];
        assert_eq!(Legend::place(small, &[steps], plot), Place::Right);
        // A line crossing the lower right corner's box between two far
        // points counts as hiding data.
        let diagonal = vec![(0.0, 1.0), (1.0, 0.0)];
        let place = Legend::place(small, &[diagonal, vec![(0.0, 0.0), (0.05, 0.05)]], plot);
        assert_eq!(place, Place::Corner { right: true, upper: true });
    }
}
