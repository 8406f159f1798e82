//! Legend and markers: marker shapes (filled, or hollow for points to be
//! read with care), wide and dashed lines, and the legend, which goes into
//! a corner of the plot that hides no data, or else in rows above the plot.

use plotters::coord::Shift;
use plotters::element::{Drawable, PointCollection};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters_backend::{BackendCoord, DrawingErrorKind};

use super::axes::Frame;
use super::render::{draw_no_data, Drawn, Quirks, Root, FONT, LEGEND_SIZE};
use super::style::{Dash, MarkerShape, Rgb, SeriesStyle};

/// A marker of a fixed pixel size at a data point: filled, or hollow (a
/// white inside with a coloured outline).
pub(super) struct Marker<C> {
    at: C,
    shape: MarkerShape,
    radius: i32,
    color: RGBColor,
    hollow: bool,
}

impl<C> Marker<C> {
    pub(super) fn new(at: C, shape: MarkerShape, radius: i32, color: RGBColor) -> Self {
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
fn outline(shape: MarkerShape, (x, y): BackendCoord, r: i32) -> Option<Vec<BackendCoord>> {
    let s = (r * 85) / 100;
    // Corners at `radius` and angles (degrees, clockwise from straight up
    // on the screen, whose y grows downwards).
    let around = |corners: &[(f64, f64)]| {
        let at = |(radius, deg): (f64, f64)| {
            let a = deg.to_radians();
            (x + (radius * a.sin()).round() as i32, y - (radius * a.cos()).round() as i32)
        };
        Some(corners.iter().map(|&c| at(c)).collect())
    };
    let (rf, big) = (r as f64, r as f64 + 1.0);
    // The outline of a "+" with arms `arm` wide, turned by `turn` degrees.
    let plus = |turn: f64| {
        let (e, a) = (big + 0.5, (rf * 0.4).max(1.5));
        let quarter = [(a, -e), (a, -a), (e, -a)];
        let corners: Vec<(f64, f64)> = (0..4)
            .flat_map(|q| {
                quarter.iter().map(move |&(u, v)| {
                    let (u, v) = match q {
                        0 => (u, v),
                        1 => (-v, u),
                        2 => (-u, -v),
                        _ => (v, -u),
                    };
                    ((u * u + v * v).sqrt(), u.atan2(-v).to_degrees() + turn)
                })
            })
            .collect();
        around(&corners)
    };
    match shape {
        MarkerShape::Circle => None,
        MarkerShape::Square => Some(vec![(x - s, y - s), (x + s, y - s), (x + s, y + s), (x - s, y + s)]),
        MarkerShape::TriangleUp => Some(vec![(x, y - r - 1), (x - r - 1, y + r), (x + r + 1, y + r)]),
        MarkerShape::TriangleDown => Some(vec![(x, y + r + 1), (x - r - 1, y - r), (x + r + 1, y - r)]),
        MarkerShape::TriangleLeft => Some(vec![(x - r - 1, y), (x + r, y - r - 1), (x + r, y + r + 1)]),
        MarkerShape::TriangleRight => Some(vec![(x + r + 1, y), (x - r, y - r - 1), (x - r, y + r + 1)]),
        MarkerShape::Diamond => Some(vec![(x, y - r - 1), (x + r + 1, y), (x, y + r + 1), (x - r - 1, y)]),
        MarkerShape::ThinDiamond => {
            let half = (r + 1) / 2 + 1;
            Some(vec![(x, y - r - 2), (x + half, y), (x, y + r + 2), (x - half, y)])
        }
        MarkerShape::Pentagon => around(&[0.0, 72.0, 144.0, 216.0, 288.0].map(|d| (big, d))),
        MarkerShape::Hexagon => around(&[0.0, 60.0, 120.0, 180.0, 240.0, 300.0].map(|d| (big, d))),
        MarkerShape::Hexagon2 => around(&[30.0, 90.0, 150.0, 210.0, 270.0, 330.0].map(|d| (big, d))),
        MarkerShape::Star => {
            let corners: Vec<(f64, f64)> =
                (0..10).map(|k| (if k % 2 == 0 { big + 1.5 } else { (big + 1.5) * 0.45 }, k as f64 * 36.0)).collect();
            around(&corners)
        }
        MarkerShape::Octagon => around(&[22.5, 67.5, 112.5, 157.5, 202.5, 247.5, 292.5, 337.5].map(|d| (big, d))),
        MarkerShape::Plus => plus(0.0),
        MarkerShape::Cross => plus(45.0),
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

/// A line through data points, `width` pixels wide, solid or dashed.
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
    dash: Dash,
}

impl Polyline {
    pub(super) fn new(points: impl IntoIterator<Item = (f64, f64)>, color: RGBColor, width: u32, q: Quirks) -> Self {
        Polyline { points: points.into_iter().collect(), color, width, split: q.split_wide_paths, dash: Dash::Solid }
    }

    pub(super) fn dashed(self, dash: Dash) -> Self {
        Polyline { dash, ..self }
    }

    fn stroke<DB: DrawingBackend>(
        &self,
        points: &[BackendCoord],
        backend: &mut DB,
    ) -> Result<(), DrawingErrorKind<DB::ErrorType>> {
        let style = self.color.stroke_width(self.width);
        if !self.split || self.width <= 1 {
            return backend.draw_path(points.iter().copied(), &style);
        }
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

/// The "on" pieces of a dashed line through `points` (pixels), with the
/// pattern's lengths in pixels, on first; the whole line for an empty
/// pattern.
pub(super) fn dash_pieces(points: &[BackendCoord], pattern_px: &[f64]) -> Vec<Vec<BackendCoord>> {
    if pattern_px.is_empty() || pattern_px.iter().any(|l| l.is_nan() || *l <= 0.0) {
        return vec![points.to_vec()];
    }
    let mut pieces: Vec<Vec<BackendCoord>> = Vec::new();
    let (mut k, mut left) = (0usize, pattern_px[0]);
    let on = |k: usize| k.is_multiple_of(2);
    let round = |(x, y): (f64, f64)| (x.round() as i32, y.round() as i32);
    if let Some(&first) = points.first() {
        pieces.push(vec![first]);
    }
    for w in points.windows(2) {
        let (a, b) = ((w[0].0 as f64, w[0].1 as f64), (w[1].0 as f64, w[1].1 as f64));
        let len = ((b.0 - a.0).powi(2) + (b.1 - a.1).powi(2)).sqrt();
        let mut done = 0.0;
        while len - done > left {
            done += left;
            let t = done / len;
            let p = round((a.0 + (b.0 - a.0) * t, a.1 + (b.1 - a.1) * t));
            if on(k) {
                pieces.last_mut().expect("a piece is open while on").push(p);
            } else {
                pieces.push(vec![p]);
            }
            k += 1;
            left = pattern_px[k % pattern_px.len()];
        }
        left -= len - done;
        if on(k) {
            pieces.last_mut().expect("a piece is open while on").push(w[1]);
        }
    }
    pieces.retain(|p| p.len() > 1);
    pieces
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
        let points: Vec<BackendCoord> = pos.collect();
        let pattern: Vec<f64> = self.dash.pattern().iter().map(|l| l * self.width.max(1) as f64).collect();
        for piece in dash_pieces(&points, &pattern) {
            self.stroke(&piece, backend)?;
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
    pub marker: Option<(MarkerShape, i32)>,
    pub hollow: bool,
    pub dash: Dash,
}

impl Entry {
    pub(super) fn new(
        label: impl Into<String>,
        color: RGBColor,
        line: bool,
        marker: Option<(MarkerShape, i32)>,
    ) -> Self {
        Entry { label: label.into(), color, line, marker, hollow: false, dash: Dash::Solid }
    }

    /// The entry of a series drawn in `style`: its line (in its dash) and,
    /// if `marker_px` is given, its marker of that radius.
    pub(super) fn styled(label: impl Into<String>, style: SeriesStyle, marker_px: Option<i32>) -> Self {
        let marker = marker_px.map(|r| (style.marker, r));
        Entry { dash: style.dash, ..Entry::new(label, rgb(style.color), true, marker) }
    }
}

/// plotters' colour of an [`Rgb`].
pub(super) fn rgb(c: Rgb) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

/// Where a legend goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Place {
    /// Inside the plot, in the corner (right?, upper?).
    Corner { right: bool, upper: bool },
    /// In a strip above the plot, its entries in rows: no corner was free.
    /// The plot keeps its full width (panels of one figure stay aligned).
    Above,
}

const ROW_PX: i32 = LEGEND_SIZE as i32 + 8;
const PAD_PX: i32 = 10;
const GLYPH_PX: i32 = 40;
/// The space between two entries of a row above the plot.
const ENTRY_GAP_PX: i32 = 28;
/// The gap between the plot and a legend inside it.
const INSET_PX: i32 = 12;

/// The legend of one plot.
pub(super) struct Legend(pub Vec<Entry>);

impl Legend {
    /// Each entry's width in pixels (glyph and label).
    fn entry_widths<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Vec<i32> {
        let font = (FONT, LEGEND_SIZE).into_font().color(&BLACK);
        self.0.iter().map(|e| GLYPH_PX + area.estimate_text_size(&e.label, &font).map_or(0, |s| s.0 as i32)).collect()
    }

    /// The legend box in pixels.
    pub(super) fn size<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> (i32, i32) {
        let widest = self.entry_widths(area).into_iter().max().unwrap_or(GLYPH_PX);
        (2 * PAD_PX + widest, 2 * PAD_PX + ROW_PX * self.0.len() as i32)
    }

    /// The entries in rows of at most `width_px` (an entry wider than that
    /// gets a row of its own).
    fn rows(widths: &[i32], width_px: i32) -> Vec<Vec<usize>> {
        let mut rows: Vec<Vec<usize>> = Vec::new();
        let mut used = 0;
        for (i, &w) in widths.iter().enumerate() {
            match rows.last_mut() {
                Some(row) if used + ENTRY_GAP_PX + w <= width_px => {
                    row.push(i);
                    used += ENTRY_GAP_PX + w;
                }
                _ => {
                    rows.push(vec![i]);
                    used = w;
                }
            }
        }
        rows
    }

    /// The height of the strip above a plot `width_px` wide that holds the
    /// legend (0 for no entries).
    pub(super) fn strip_height<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>, width_px: u32) -> u32 {
        match Legend::rows(&self.entry_widths(area), width_px as i32).len() {
            0 => 0,
            n => (n as i32 * ROW_PX + PAD_PX) as u32,
        }
    }

    /// The corner of a `plot_px` plot whose box hides no point of `lines`
    /// (nor the lines between them), given in plot units ([0, 1]² from the
    /// lower left); else [`Place::Above`]. Upper right, upper left, lower
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
        corners.into_iter().find(|&c| free(c)).map_or(Place::Above, |(right, upper)| Place::Corner { right, upper })
    }

    /// Where the legend of a plot with `frame` on `body` goes (see
    /// [`Legend::place`]), the area for the chart, and the legend's strip
    /// if it goes above.
    pub(super) fn layout<DB: DrawingBackend>(
        &self,
        body: &Root<DB>,
        frame: Frame,
        unit_lines: &[Vec<(f64, f64)>],
    ) -> (Place, Root<DB>, Option<Root<DB>>) {
        let place = Legend::place(self.size(body), unit_lines, frame.plot_px(body.dim_in_pixel()));
        let height =
            if place == Place::Above { self.strip_height(body, frame.plot_px(body.dim_in_pixel()).0) } else { 0 };
        let (strip, plot) = split_off_strip(body, height, frame);
        (place, plot, strip)
    }

    /// Finishes a plot: "No data" if it is `empty`, and the legend.
    pub(super) fn finish<DB: DrawingBackend, X: Ranged, Y: Ranged>(
        &self,
        plot: &DrawingArea<DB, Cartesian2d<X, Y>>,
        empty: bool,
        place: Place,
        strip: Option<&Root<DB>>,
        q: Quirks,
    ) -> Drawn<DB> {
        if empty {
            draw_no_data(plot)?;
        }
        match (place, strip) {
            (Place::Above, Some(strip)) => self.draw_rows(strip, q),
            (Place::Corner { right, upper }, _) => self.draw_box(&plot.strip_coord_spec(), right, upper, q),
            // No strip was made for it: the upper right corner.
            (Place::Above, None) => self.draw_box(&plot.strip_coord_spec(), true, true, q),
        }
    }

    /// Draws entry `e`'s glyph and label with the glyph's left end at
    /// (x, y), vertically centred on y.
    fn draw_entry<DB: DrawingBackend>(
        area: &DrawingArea<DB, Shift>,
        e: &Entry,
        (x, y): (i32, i32),
        q: Quirks,
    ) -> Drawn<DB> {
        let font = (FONT, LEGEND_SIZE).into_font().color(&BLACK).pos(Pos::new(HPos::Left, VPos::Center));
        let gy = y - q.legend_dy;
        if e.line {
            let pattern: Vec<f64> = e.dash.pattern().iter().map(|l| l * 3.0).collect();
            for piece in dash_pieces(&[(x, gy), (x + 28, gy)], &pattern) {
                area.draw(&PathElement::new(piece, e.color.stroke_width(3)))?;
            }
        }
        if let Some((shape, r)) = e.marker {
            area.draw(&Marker::new((x + 14, gy), shape, r, e.color).hollow(e.hollow))?;
        }
        area.draw_text(&e.label, &font, (x + GLYPH_PX, y))
    }

    /// Draws the legend as a box in a corner of `plot`.
    fn draw_box<DB: DrawingBackend>(
        &self,
        plot: &DrawingArea<DB, Shift>,
        right: bool,
        upper: bool,
        q: Quirks,
    ) -> Drawn<DB> {
        if self.0.is_empty() {
            return Ok(());
        }
        let (w, h) = self.size(plot);
        let (pw, ph) = plot.dim_in_pixel();
        let x0 = if right { pw as i32 - w - INSET_PX } else { INSET_PX };
        let y0 = if upper { INSET_PX } else { ph as i32 - h - INSET_PX };
        plot.draw(&Rectangle::new([(x0, y0), (x0 + w, y0 + h)], WHITE.mix(0.88).filled()))?;
        plot.draw(&Rectangle::new([(x0, y0), (x0 + w, y0 + h)], BLACK.mix(0.5)))?;
        for (i, e) in self.0.iter().enumerate() {
            Legend::draw_entry(plot, e, (x0 + PAD_PX, y0 + PAD_PX + ROW_PX * i as i32 + ROW_PX / 2), q)?;
        }
        Ok(())
    }

    /// Draws the legend in rows across `strip`, the area above the plot.
    fn draw_rows<DB: DrawingBackend>(&self, strip: &DrawingArea<DB, Shift>, q: Quirks) -> Drawn<DB> {
        let widths = self.entry_widths(strip);
        for (r, row) in Legend::rows(&widths, strip.dim_in_pixel().0 as i32).iter().enumerate() {
            let mut x = 0;
            for &i in row {
                Legend::draw_entry(strip, &self.0[i], (x, PAD_PX / 2 + ROW_PX * r as i32 + ROW_PX / 2), q)?;
                x += widths[i] + ENTRY_GAP_PX;
            }
        }
        Ok(())
    }
}

/// Splits a strip `height` pixels high off the top of `body` for a legend
/// above a plot with `frame`, its left and right edges at the plot's (none
/// if `height` is 0); returns the strip and the rest.
pub(super) fn split_off_strip<DB: DrawingBackend>(
    body: &Root<DB>,
    height: u32,
    frame: Frame,
) -> (Option<Root<DB>>, Root<DB>) {
    if height == 0 {
        return (None, body.clone());
    }
    let (top, rest) = body.split_vertically(height + frame.margin);
    let (left, right) = frame.plot_sides_px();
    (Some(top.margin(frame.margin, 0, left, right)), rest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn every_marker_has_an_outline_inside_its_box() {
        for shape in MarkerShape::ALL {
            match outline(shape, (100, 100), 6) {
                None => assert_eq!(shape, MarkerShape::Circle),
                Some(corners) => {
                    assert!(corners.len() >= 3, "{shape:?}");
                    assert!(corners.iter().all(|&(x, y)| x.abs_diff(100) <= 9 && y.abs_diff(100) <= 9), "{shape:?}");
                    let distinct: HashSet<BackendCoord> = corners.iter().copied().collect();
                    assert_eq!(distinct.len(), corners.len(), "{shape:?}: {corners:?}");
                }
            }
        }
        // A star has ten corners, alternately far and near.
        let star = outline(MarkerShape::Star, (0, 0), 6).unwrap();
        assert_eq!(star.len(), 10);
        assert!(star[0].1 < -7 && star[1].1 > -7);
    }

    #[test]
    fn dashes_alternate_on_and_off_along_the_line() {
        let line = [(0, 0), (30, 0)];
        assert_eq!(dash_pieces(&line, &[]), vec![line.to_vec()]);
        // 4 on, 2 off, over 30 px: on at 0-4, 6-10, 12-16, 18-22, 24-28.
        let pieces = dash_pieces(&line, &[4.0, 2.0]);
        assert_eq!(pieces.len(), 5);
        assert_eq!(pieces[0], vec![(0, 0), (4, 0)]);
        assert_eq!(pieces[4], vec![(24, 0), (28, 0)]);
        // A dash that goes round a corner keeps the corner.
        let corner = dash_pieces(&[(0, 0), (3, 0), (3, 10)], &[6.0, 2.0]);
        assert_eq!(corner[0], vec![(0, 0), (3, 0), (3, 3)]);
        assert_eq!(corner[1][0], (3, 5));
    }

    #[test]
    fn a_legend_above_the_plot_fills_rows_left_to_right() {
        assert!(Legend::rows(&[], 100).is_empty());
        assert_eq!(Legend::rows(&[40, 40, 40], 200), vec![vec![0, 1, 2]]);
        // 40 + 28 + 40 = 108 fits 110, a third does not.
        assert_eq!(Legend::rows(&[40, 40, 40], 110), vec![vec![0, 1], vec![2]]);
        // Too wide for any row: a row of its own.
        assert_eq!(Legend::rows(&[300, 40], 110), vec![vec![0], vec![1]]);
    }

    #[test]
    fn legend_goes_to_a_free_corner_or_else_above_the_plot() {
        let plot = (1000, 600);
        let small = (200, 100);
        // Nothing in the way: upper right.
        assert_eq!(Legend::place(small, &[vec![(0.0, 0.0)]], plot), Place::Corner { right: true, upper: true });
        // A line ending in the upper right: another corner.
        let rising = vec![(0.0, 0.0), (0.5, 0.2), (0.9, 0.95), (1.0, 1.0)];
        assert_eq!(Legend::place(small, &[rising], plot), Place::Corner { right: false, upper: true });
        // A CDF-like step through every corner region: beside the plot.
        let steps = vec![(0.0, 0.0), (0.02, 0.0), (0.02, 1.0), (1.0, 1.0), (0.5, 0.0), (1.0, 0.0)];
        assert_eq!(Legend::place(small, &[steps], plot), Place::Above);
        // A line crossing the lower right corner's box between two far
        // points counts as hiding data.
        let diagonal = vec![(0.0, 1.0), (1.0, 0.0)];
        let place = Legend::place(small, &[diagonal, vec![(0.0, 0.0), (0.05, 0.05)]], plot);
        assert_eq!(place, Place::Corner { right: true, upper: true });
    }
}
