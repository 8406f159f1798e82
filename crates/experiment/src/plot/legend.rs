//! Legend and markers: the palette, marker shapes, error bars, the legend's
//! glyphs, and where the legend goes so that it hides no data.

use plotters::element::{Drawable, PointCollection};
use plotters::prelude::*;
use plotters_backend::{BackendCoord, DrawingErrorKind};

use super::render::{FONT, LEGEND_SIZE};

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

/// A filled marker of a fixed pixel size at a data point.
pub(super) struct Marker<C> {
    at: C,
    shape: Shape,
    radius: i32,
    style: ShapeStyle,
}

impl<C> Marker<C> {
    pub(super) fn new(at: C, shape: Shape, radius: i32, color: RGBColor) -> Self {
        Marker { at, shape, radius, style: color.filled() }
    }
}

impl<'a, C: 'a> PointCollection<'a, C> for &'a Marker<C> {
    type Point = &'a C;
    type IntoIter = std::iter::Once<&'a C>;
    fn point_iter(self) -> Self::IntoIter {
        std::iter::once(&self.at)
    }
}

impl<C, DB: DrawingBackend> Drawable<DB> for Marker<C> {
    fn draw<I: Iterator<Item = BackendCoord>>(
        &self,
        mut pos: I,
        backend: &mut DB,
        _: (u32, u32),
    ) -> Result<(), DrawingErrorKind<DB::ErrorType>> {
        let Some((x, y)) = pos.next() else {
            return Ok(());
        };
        let r = self.radius;
        match self.shape {
            Shape::Circle => backend.draw_circle((x, y), r as u32, &self.style, true),
            Shape::Square => {
                let s = (r * 85) / 100;
                backend.draw_rect((x - s, y - s), (x + s, y + s), &self.style, true)
            }
            Shape::Triangle => {
                backend.fill_polygon(vec![(x, y - r - 1), (x - r - 1, y + r), (x + r + 1, y + r)], &self.style)
            }
            Shape::InvTriangle => {
                backend.fill_polygon(vec![(x, y + r + 1), (x - r - 1, y - r), (x + r + 1, y - r)], &self.style)
            }
            Shape::Diamond => {
                backend.fill_polygon(vec![(x, y - r - 1), (x + r + 1, y), (x, y + r + 1), (x - r - 1, y)], &self.style)
            }
        }
    }
}

/// A vertical error bar with caps of a fixed pixel width. (plotters'
/// `ErrorBar` also draws a dot at the mean, which would hide our markers.)
pub(super) struct ErrorBarElement<C> {
    pub ends: [C; 2],
    /// Half-width of the caps, in pixels.
    pub cap: i32,
    pub style: ShapeStyle,
}

impl<'a, C: 'a> PointCollection<'a, C> for &'a ErrorBarElement<C> {
    type Point = &'a C;
    type IntoIter = std::slice::Iter<'a, C>;
    fn point_iter(self) -> Self::IntoIter {
        self.ends.iter()
    }
}

impl<C, DB: DrawingBackend> Drawable<DB> for ErrorBarElement<C> {
    fn draw<I: Iterator<Item = BackendCoord>>(
        &self,
        mut pos: I,
        backend: &mut DB,
        _: (u32, u32),
    ) -> Result<(), DrawingErrorKind<DB::ErrorType>> {
        let (Some(a), Some(b)) = (pos.next(), pos.next()) else {
            return Ok(());
        };
        backend.draw_line(a, b, &self.style)?;
        for (x, y) in [a, b] {
            backend.draw_line((x - self.cap, y), (x + self.cap, y), &self.style)?;
        }
        Ok(())
    }
}

/// The legend's glyph: a short line with, optionally, a marker on it.
pub(super) struct LegendGlyph {
    at: BackendCoord,
    color: RGBColor,
    line: bool,
    marker: Option<(Shape, i32)>,
}

pub(super) fn legend_glyph(at: BackendCoord, color: RGBColor, line: bool, marker: Option<(Shape, i32)>) -> LegendGlyph {
    LegendGlyph { at, color, line, marker }
}

impl<'a> PointCollection<'a, BackendCoord> for &'a LegendGlyph {
    type Point = &'a BackendCoord;
    type IntoIter = std::iter::Once<&'a BackendCoord>;
    fn point_iter(self) -> Self::IntoIter {
        std::iter::once(&self.at)
    }
}

impl<DB: DrawingBackend> Drawable<DB> for LegendGlyph {
    fn draw<I: Iterator<Item = BackendCoord>>(
        &self,
        mut pos: I,
        backend: &mut DB,
        dim: (u32, u32),
    ) -> Result<(), DrawingErrorKind<DB::ErrorType>> {
        let Some((x, y)) = pos.next() else {
            return Ok(());
        };
        if self.line {
            let style = self.color.stroke_width(3);
            backend.draw_line((x, y), (x + 28, y), &style)?;
        }
        if let Some((shape, r)) = self.marker {
            Marker::new((), shape, r, self.color).draw(std::iter::once((x + 14, y)), backend, dim)?;
        }
        Ok(())
    }
}

/// Picks the corner of the plot whose legend box would hide the fewest data
/// points (and points along the lines between them).
pub(super) fn legend_corner(
    lines: &[Vec<(f64, f64)>],
    x: (f64, f64),
    y: (f64, f64),
    labels: &[&str],
    plot_px: (u32, u32),
) -> SeriesLabelPosition {
    let longest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0) as f64;
    let box_w = ((longest * 0.6 * LEGEND_SIZE as f64 + 70.0) / plot_px.0.max(1) as f64).min(1.0);
    let box_h = ((labels.len() as f64 * (LEGEND_SIZE as f64 + 8.0) + 20.0) / plot_px.1.max(1) as f64).min(1.0);
    let norm = |(px, py): (f64, f64)| ((px - x.0) / (x.1 - x.0), (py - y.0) / (y.1 - y.0));
    let corners = [
        (SeriesLabelPosition::UpperRight, true, true),
        (SeriesLabelPosition::UpperLeft, false, true),
        (SeriesLabelPosition::LowerRight, true, false),
        (SeriesLabelPosition::LowerLeft, false, false),
    ];
    let mut counts = [0usize; 4];
    let mut visit = |u: f64, v: f64| {
        for (i, &(_, right, upper)) in corners.iter().enumerate() {
            let in_x = if right { u >= 1.0 - box_w } else { u <= box_w };
            let in_y = if upper { v >= 1.0 - box_h } else { v <= box_h };
            if in_x && in_y {
                counts[i] += 1;
            }
        }
    };
    for line in lines {
        for (i, &p) in line.iter().enumerate() {
            let (u, v) = norm(p);
            visit(u, v);
            if let Some(&q) = line.get(i + 1) {
                let (u2, v2) = norm(q);
                for k in 1..8 {
                    let t = k as f64 / 8.0;
                    visit(u + (u2 - u) * t, v + (v2 - v) * t);
                }
            }
        }
    }
    let best = (0..4).min_by_key(|&i| (counts[i], i)).unwrap_or(0);
    corners[best].0.clone()
}

pub(super) fn draw_legend<'a, DB: DrawingBackend + 'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    pos: SeriesLabelPosition,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    chart
        .configure_series_labels()
        .position(pos)
        .margin(12)
        .legend_area_size(34)
        .background_style(WHITE.mix(0.88))
        .border_style(BLACK.mix(0.5))
        .label_font((FONT, LEGEND_SIZE).into_font().color(&BLACK))
        .draw()
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
    fn legend_avoids_the_data() {
        // Data in the upper right: the legend goes elsewhere.
        let line = vec![(0.0, 0.0), (0.5, 0.2), (0.9, 0.95), (1.0, 1.0)];
        let pos = legend_corner(&[line], (0.0, 1.0), (0.0, 1.0), &["a"], (1000, 600));
        assert!(!matches!(pos, SeriesLabelPosition::UpperRight));
        // Nothing in the way: upper right.
        let pos = legend_corner(&[vec![(0.0, 0.0)]], (0.0, 1.0), (0.0, 1.0), &["a"], (1000, 600));
        assert!(matches!(pos, SeriesLabelPosition::UpperRight));
    }
}
