//! Figures as PNG and SVG.
//!
//! Plain data in, files out: nothing here depends on the simulator's types.
//! Every function takes a *path stem* (`out/fig3`) and writes `out/fig3.png`
//! and `out/fig3.svg`, creating the parent directories, and returns the two
//! paths written (PNG first).
//!
//! * [`line_chart`]: one line with markers per series, optional ± error bars
//!   (mean ± sd over runs).
//! * [`cdf_chart`]: empirical CDFs as step lines.
//! * [`trace_chart`]: the two stacked panels of the ATP thesis (Fig. 5.2/5.3):
//!   instantaneous goodput over time above, the delay feedback (D_max, D_s,
//!   D_avg) over time below.
//! * [`multi_trace_chart`]: goodput of several flows over time.
//!
//! Rendering is deterministic: the same data gives byte-identical files.
//! Text in the PNG is rasterised from DejaVu Sans, embedded in the binary
//! (crate `dejavu`), so no system font or font library is needed; the SVG
//! names the `sans-serif` family and leaves the font to the viewer.
//!
//! Robustness: NaN, infinite and absurdly large (|v| > 1e300) values are
//! skipped, empty series and single points are drawn (or left out) without
//! error, and a zero-width range is padded so that the axis has a width.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::element::{Drawable, PointCollection};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{register_font, FontStyle};
use plotters_backend::{BackendCoord, DrawingErrorKind};

/// One curve of a [`LineChart`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Series {
    /// The legend entry.
    pub label: String,
    /// (x, y) points, drawn in the given order.
    pub points: Vec<(f64, f64)>,
    /// ± half-width of the error bar of each point (e.g. the standard
    /// deviation over runs); a missing or non-finite entry draws no bar.
    pub error: Option<Vec<f64>>,
}

/// A line chart: one line with markers per series.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LineChart {
    pub title: String,
    /// The x axis description, with its unit, e.g. `"Number of hops"`.
    pub x_label: String,
    /// The y axis description, with its unit, e.g. `"Goodput (Mbit/s)"`.
    pub y_label: String,
    pub series: Vec<Series>,
    /// Label the x axis at integers only (hop counts, flow counts).
    pub x_integer_ticks: bool,
}

/// The data of a thesis-style trace figure (ATP thesis Fig. 5.2/5.3).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TraceChart {
    pub title: String,
    /// (time in s, instantaneous goodput in Mbit/s).
    pub goodput: Vec<(f64, f64)>,
    /// (time in s, D_max in ms).
    pub d_max: Vec<(f64, f64)>,
    /// (time in s, D_s in ms).
    pub d_s: Vec<(f64, f64)>,
    /// (time in s, D_avg in ms).
    pub d_avg: Vec<(f64, f64)>,
}

/// Why a figure was not written. Every variant names the file concerned.
#[derive(thiserror::Error, Debug)]
pub enum PlotError {
    #[error("cannot create directory {path}: {source}")]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot encode PNG {path}: {message}")]
    Encode { path: PathBuf, message: String },
    #[error("cannot draw {path}: {message}")]
    Draw { path: PathBuf, message: String },
}

/// Writes `stem.png` and `stem.svg` with a line chart.
pub fn line_chart(chart: &LineChart, path_stem: &Path) -> Result<Vec<PathBuf>, PlotError> {
    render(&LineFigure(chart), path_stem)
}

/// Writes `stem.png` and `stem.svg` with the empirical CDF of each sample
/// set, as step lines with y in [0, 1].
pub fn cdf_chart(
    title: &str,
    x_label: &str,
    series: &[(String, Vec<f64>)],
    path_stem: &Path,
) -> Result<Vec<PathBuf>, PlotError> {
    render(&CdfFigure { title, x_label, series }, path_stem)
}

/// Writes `stem.png` and `stem.svg` with the two stacked panels of a trace
/// figure: goodput (Mbit/s) over time above, delay (ms) over time below with
/// D_max (green), D_s (blue) and D_avg (magenta) as points.
pub fn trace_chart(chart: &TraceChart, path_stem: &Path) -> Result<Vec<PathBuf>, PlotError> {
    render(&TraceFigure(chart), path_stem)
}

/// Writes `stem.png` and `stem.svg` with one line per flow over time (e.g.
/// the goodput of each flow of the stack topology).
pub fn multi_trace_chart(
    title: &str,
    series: &[(String, Vec<(f64, f64)>)],
    x_label: &str,
    y_label: &str,
    path_stem: &Path,
) -> Result<Vec<PathBuf>, PlotError> {
    render(&MultiTraceFigure { title, series, x_label, y_label }, path_stem)
}

// ---------------------------------------------------------------------------
// Rendering to files.

const FONT: &str = "sans-serif";
const TITLE_SIZE: u32 = 30;
const DESC_SIZE: u32 = 24;
const TICK_SIZE: u32 = 20;
const LEGEND_SIZE: u32 = 20;

/// Values beyond this magnitude are treated like infinities.
const HUGE: f64 = 1e300;

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

const D_MAX_COLOR: RGBColor = RGBColor(0x1a, 0x9e, 0x1a);
const D_S_COLOR: RGBColor = RGBColor(0x1f, 0x4e, 0xd8);
const D_AVG_COLOR: RGBColor = RGBColor(0xe0, 0x1e, 0xb4);
const GOODPUT_COLOR: RGBColor = RGBColor(0x1f, 0x3a, 0x93);
const GRID_COLOR: RGBColor = RGBColor(0xdc, 0xdc, 0xdc);
const FINE_GRID_COLOR: RGBColor = RGBColor(0xf0, 0xf0, 0xf0);

fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// The marker of series `i`: shapes advance once more after each round of
/// colours, so that colour and shape together stay distinct for 50 series.
fn shape(i: usize) -> Shape {
    SHAPES[(i + i / PALETTE.len()) % SHAPES.len()]
}

/// Writes "No data" in the middle of an empty plotting area.
fn draw_no_data<DB: DrawingBackend, X: Ranged, Y: Ranged>(
    area: &DrawingArea<DB, Cartesian2d<X, Y>>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let (w, h) = area.dim_in_pixel();
    let style =
        (FONT, DESC_SIZE).into_font().color(&RGBColor(0x80, 0x80, 0x80)).pos(Pos::new(HPos::Center, VPos::Center));
    area.strip_coord_spec().draw_text("No data", &style, (w as i32 / 2, h as i32 / 2))
}

/// Registers the embedded DejaVu Sans as the `sans-serif` family (once).
fn ensure_fonts() {
    static FONTS: Once = Once::new();
    FONTS.call_once(|| {
        // The bytes are a valid TrueType font; a failure would leave text
        // undrawn and show up as a drawing error, not a panic.
        let _ = register_font(FONT, FontStyle::Normal, dejavu::sans::regular());
        let _ = register_font(FONT, FontStyle::Bold, dejavu::sans::bold());
    });
}

/// Something that can draw itself on any backend.
trait Figure {
    fn size(&self) -> (u32, u32);
    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        fix: TextFix,
    ) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>;
}

/// Backend-specific nudges of vertically centred text.
///
/// plotters' ab_glyph text layout puts vertically centred text (y tick
/// labels, legend entries) about a fifth of the font size too high in the
/// bitmap backend; the SVG backend leaves the placement to the viewer and
/// gets it right. The bitmap figures move the y tick labels down and the
/// legend glyphs up by this much to line them up again.
#[derive(Clone, Copy, Default)]
struct TextFix {
    /// Pixels to move y tick labels down.
    y_label_dy: i32,
    /// Pixels to move legend glyphs up.
    legend_dy: i32,
}

impl TextFix {
    const BITMAP: TextFix =
        TextFix { y_label_dy: (TICK_SIZE as i32 * 22 + 50) / 100, legend_dy: (LEGEND_SIZE as i32 * 22 + 50) / 100 };
    const SVG: TextFix = TextFix { y_label_dy: 0, legend_dy: 0 };
}

fn with_extension(stem: &Path, ext: &str) -> PathBuf {
    let mut s: OsString = stem.as_os_str().to_owned();
    s.push(".");
    s.push(ext);
    PathBuf::from(s)
}

fn render(fig: &impl Figure, stem: &Path) -> Result<Vec<PathBuf>, PlotError> {
    ensure_fonts();
    if let Some(parent) = stem.parent() {
        if !parent.as_os_str().is_empty() {
            std::fs::create_dir_all(parent)
                .map_err(|source| PlotError::CreateDir { path: parent.to_path_buf(), source })?;
        }
    }
    let (w, h) = fig.size();
    let png_path = with_extension(stem, "png");
    let svg_path = with_extension(stem, "svg");

    // PNG: draw into an RGB buffer, then encode it ourselves.
    let mut buf = vec![255u8; (w as usize) * (h as usize) * 3];
    {
        let root = BitMapBackend::with_buffer(&mut buf, (w, h)).into_drawing_area();
        draw_all(fig, &root, TextFix::BITMAP).map_err(|message| PlotError::Draw { path: png_path.clone(), message })?;
    }
    let png = encode_png(&buf, w, h).map_err(|message| PlotError::Encode { path: png_path.clone(), message })?;
    std::fs::write(&png_path, png).map_err(|source| PlotError::Write { path: png_path.clone(), source })?;

    // SVG: draw into a string.
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area();
        draw_all(fig, &root, TextFix::SVG).map_err(|message| PlotError::Draw { path: svg_path.clone(), message })?;
    }
    std::fs::write(&svg_path, svg).map_err(|source| PlotError::Write { path: svg_path.clone(), source })?;
    Ok(vec![png_path, svg_path])
}

fn draw_all<DB: DrawingBackend>(fig: &impl Figure, root: &DrawingArea<DB, Shift>, fix: TextFix) -> Result<(), String> {
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    fig.draw(root, fix).map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())
}

fn encode_png(rgb: &[u8], w: u32, h: u32) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_compression(png::Compression::Best);
        enc.set_filter(png::FilterType::Paeth);
        enc.set_adaptive_filter(png::AdaptiveFilterType::Adaptive);
        let mut writer = enc.write_header().map_err(|e| e.to_string())?;
        writer.write_image_data(rgb).map_err(|e| e.to_string())?;
        writer.finish().map_err(|e| e.to_string())?;
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// Data cleaning, ranges and ticks.

fn usable(v: f64) -> bool {
    v.is_finite() && v.abs() <= HUGE
}

fn usable_points(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    points.iter().copied().filter(|&(x, y)| usable(x) && usable(y)).collect()
}

/// The smallest and largest usable value, if any.
fn extent(values: impl IntoIterator<Item = f64>) -> Option<(f64, f64)> {
    values.into_iter().filter(|v| usable(*v)).fold(None, |acc, v| match acc {
        None => Some((v, v)),
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
    })
}

/// How an axis range is derived from the data extent.
#[derive(Clone, Copy)]
struct AxisRule {
    /// Fraction of the span added on each side.
    pad: f64,
    /// Non-negative data (goodput, delay): never show negative values, and
    /// start at zero when the data's minimum is near it.
    zero_floor: bool,
    /// Pad by at least half a unit (integer x values).
    integer: bool,
}

fn axis_range(extent: Option<(f64, f64)>, rule: AxisRule) -> (f64, f64) {
    let Some((dlo, dhi)) = extent else {
        return (0.0, 1.0);
    };
    let span = dhi - dlo;
    let scale = dlo.abs().max(dhi.abs());
    let (mut lo, mut hi) = if span <= scale * 1e-9 || span == 0.0 {
        // All values (nearly) equal: give the axis a width around them.
        let p = if scale == 0.0 { 1.0 } else { scale * 0.1 };
        (dlo - p, dhi + p)
    } else {
        (dlo - span * rule.pad, dhi + span * rule.pad)
    };
    if rule.integer {
        lo = lo.min(dlo - 0.5);
        hi = hi.max(dhi + 0.5);
    }
    if rule.zero_floor && dlo >= 0.0 && (lo < 0.0 || dlo <= 0.4 * dhi) {
        lo = 0.0;
    }
    if !(hi - lo).is_finite() || hi <= lo {
        return (dlo.min(0.0), dhi.max(dlo + 1.0));
    }
    (lo, hi)
}

/// A time axis ends at a round number (60 s, not 59.9 s) when that adds
/// little.
fn round_up_end((lo, hi): (f64, f64)) -> (f64, f64) {
    let span = hi - lo;
    if span.is_nan() || span <= 0.0 || !span.is_finite() {
        return (lo, hi);
    }
    let step = 10f64.powf(span.log10().floor()) / 2.0;
    let end = (hi / step).ceil() * step;
    if end.is_finite() && end >= hi && end - lo <= span * 1.1 {
        (lo, end)
    } else {
        (lo, hi)
    }
}

/// A tick label: short, no floating-point noise.
fn fmt_tick(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return "0".to_string();
    }
    let a = v.abs();
    if !(1e-3..1e6).contains(&a) {
        let s = format!("{v:.2e}");
        // 1.50e3 -> 1.5e3
        if let Some((m, e)) = s.split_once('e') {
            let m = trim_zeros(m);
            return format!("{m}e{e}");
        }
        return s;
    }
    trim_zeros(&format!("{v:.4}")).to_string()
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

fn fmt_int_tick(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{}", v.round() as i64)
    } else {
        String::new()
    }
}

/// The number of x labels for integer ticks: at most one per unit.
fn integer_label_count(lo: f64, hi: f64) -> usize {
    let n = (hi.floor() - lo.ceil()) + 1.0;
    if n.is_finite() && n >= 1.0 {
        (n as usize).clamp(1, 12)
    } else {
        2
    }
}

// ---------------------------------------------------------------------------
// Markers, a legend that avoids the data.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    Circle,
    Square,
    Triangle,
    Diamond,
    InvTriangle,
}

const SHAPES: [Shape; 5] = [Shape::Circle, Shape::Square, Shape::Triangle, Shape::Diamond, Shape::InvTriangle];

/// A filled marker of a fixed pixel size at a data point.
struct Marker<C> {
    at: C,
    shape: Shape,
    radius: i32,
    style: ShapeStyle,
}

impl<C> Marker<C> {
    fn new(at: C, shape: Shape, radius: i32, color: RGBColor) -> Self {
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
struct ErrorBarElement<C> {
    ends: [C; 2],
    /// Half-width of the caps, in pixels.
    cap: i32,
    style: ShapeStyle,
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
struct LegendGlyph {
    at: BackendCoord,
    color: RGBColor,
    line: bool,
    marker: Option<(Shape, i32)>,
}

fn legend_glyph(at: BackendCoord, color: RGBColor, line: bool, marker: Option<(Shape, i32)>) -> LegendGlyph {
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
fn legend_corner(
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

fn title_font() -> TextStyle<'static> {
    // (`FontDesc::style` keeps the regular face's glyphs: name the style
    // when the font is made.)
    (FONT, TITLE_SIZE, FontStyle::Bold).into_font().color(&BLACK)
}

fn draw_legend<'a, DB: DrawingBackend + 'a, CT: plotters::coord::CoordTranslate>(
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

/// The usual mesh: grey grid, black axes, labelled axes, nice tick labels.
#[allow(clippy::too_many_arguments)]
fn draw_mesh<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    x_desc: &str,
    y_desc: &str,
    x_integer: Option<usize>,
    y_labels: usize,
    fix: TextFix,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let int_fmt = |v: &f64| fmt_int_tick(*v);
    let float_fmt = |v: &f64| fmt_tick(*v);
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(x_desc)
        .y_desc(y_desc)
        .axis_desc_style((FONT, DESC_SIZE).into_font().color(&BLACK))
        .label_style((FONT, TICK_SIZE).into_font().color(&BLACK))
        .bold_line_style(GRID_COLOR.stroke_width(1))
        .light_line_style(FINE_GRID_COLOR.stroke_width(1))
        .axis_style(BLACK.stroke_width(1))
        .max_light_lines(1)
        .y_label_offset(fix.y_label_dy)
        .y_labels(y_labels)
        .y_label_formatter(&float_fmt);
    match x_integer {
        Some(n) => {
            mesh.x_labels(n).x_max_light_lines(0).x_label_formatter(&int_fmt);
        }
        None => {
            mesh.x_labels(10).x_label_formatter(&float_fmt);
        }
    }
    mesh.draw()
}

// ---------------------------------------------------------------------------
// The figures.

const W: u32 = 1200;
const H: u32 = 800;

struct LineFigure<'a>(&'a LineChart);

impl Figure for LineFigure<'_> {
    fn size(&self) -> (u32, u32) {
        (W, H)
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        fix: TextFix,
    ) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
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

        let mut chart = ChartBuilder::on(root)
            .caption(&c.title, title_font())
            .margin(20)
            .margin_right(36)
            .x_label_area_size(80)
            .y_label_area_size(110)
            .build_cartesian_2d(x.0..x.1, y.0..y.1)?;
        let int_labels = c.x_integer_ticks.then(|| integer_label_count(x.0, x.1));
        draw_mesh(&mut chart, &c.x_label, &c.y_label, int_labels, 10, fix)?;

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

/// At most this many steps per CDF (quantiles of larger samples).
const CDF_MAX_STEPS: usize = 2000;

/// The corners of an empirical CDF's step line, without the horizontal
/// lead-in and tail.
fn cdf_steps(samples: &[f64]) -> Vec<(f64, f64)> {
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

struct CdfFigure<'a> {
    title: &'a str,
    x_label: &'a str,
    series: &'a [(String, Vec<f64>)],
}

impl Figure for CdfFigure<'_> {
    fn size(&self) -> (u32, u32) {
        (W, H)
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        fix: TextFix,
    ) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
        let steps: Vec<Vec<(f64, f64)>> = self.series.iter().map(|(_, s)| cdf_steps(s)).collect();
        let x = axis_range(
            extent(steps.iter().flatten().map(|p| p.0)),
            AxisRule { pad: 0.04, zero_floor: false, integer: false },
        );
        let y = (-0.02, 1.04);
        let mut chart = ChartBuilder::on(root)
            .caption(self.title, title_font())
            .margin(20)
            .margin_right(36)
            .x_label_area_size(80)
            .y_label_area_size(110)
            .build_cartesian_2d(x.0..x.1, y.0..y.1)?;
        draw_mesh(&mut chart, self.x_label, "Empirical CDF", None, 12, fix)?;

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

struct TraceFigure<'a>(&'a TraceChart);

impl Figure for TraceFigure<'_> {
    fn size(&self) -> (u32, u32) {
        (W, 1000)
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        fix: TextFix,
    ) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
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

        let mut top = ChartBuilder::on(&upper)
            .margin(16)
            .margin_right(36)
            .x_label_area_size(70)
            .y_label_area_size(110)
            .build_cartesian_2d(t.0..t.1, gy.0..gy.1)?;
        draw_mesh(&mut top, "Time (s)", "Goodput (Mbit/s)", None, 8, fix)?;
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

        let mut bottom = ChartBuilder::on(&lower)
            .margin(16)
            .margin_right(36)
            .x_label_area_size(70)
            .y_label_area_size(110)
            .build_cartesian_2d(t.0..t.1, dy.0..dy.1)?;
        draw_mesh(&mut bottom, "Time (s)", "Delay (ms)", None, 8, fix)?;
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

struct MultiTraceFigure<'a> {
    title: &'a str,
    series: &'a [(String, Vec<(f64, f64)>)],
    x_label: &'a str,
    y_label: &'a str,
}

/// Series with at most this many points get markers too.
const MARKER_MAX_POINTS: usize = 40;

impl Figure for MultiTraceFigure<'_> {
    fn size(&self) -> (u32, u32) {
        (W, H)
    }

    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        fix: TextFix,
    ) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
        let cleaned: Vec<Vec<(f64, f64)>> = self.series.iter().map(|(_, p)| usable_points(p)).collect();
        let x = round_up_end(axis_range(
            extent(cleaned.iter().flatten().map(|p| p.0)),
            AxisRule { pad: 0.0, zero_floor: true, integer: false },
        ));
        let y = axis_range(
            extent(cleaned.iter().flatten().map(|p| p.1)),
            AxisRule { pad: 0.06, zero_floor: true, integer: false },
        );
        let mut chart = ChartBuilder::on(root)
            .caption(self.title, title_font())
            .margin(20)
            .margin_right(36)
            .x_label_area_size(80)
            .y_label_area_size(110)
            .build_cartesian_2d(x.0..x.1, y.0..y.1)?;
        draw_mesh(&mut chart, self.x_label, self.y_label, None, 10, fix)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    const RULE: AxisRule = AxisRule { pad: 0.05, zero_floor: false, integer: false };

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

    #[test]
    fn axis_ranges_have_width() {
        assert_eq!(axis_range(None, RULE), (0.0, 1.0));
        let (lo, hi) = axis_range(Some((5.0, 5.0)), RULE);
        assert!(lo < 5.0 && hi > 5.0);
        let (lo, hi) = axis_range(Some((0.0, 0.0)), RULE);
        assert!(lo < 0.0 && hi > 0.0);
        let (lo, hi) = axis_range(Some((1e-300, 1e-300)), RULE);
        assert!(lo < hi);
        let (lo, hi) = axis_range(Some((-1e300, 1e300)), RULE);
        assert!(lo < hi && (hi - lo).is_finite());
    }

    #[test]
    fn non_negative_data_starts_at_zero() {
        let rule = AxisRule { zero_floor: true, ..RULE };
        assert_eq!(axis_range(Some((0.2, 2.0)), rule).0, 0.0);
        assert_eq!(axis_range(Some((0.0, 0.0)), rule), (0.0, 1.0));
        // Far from zero: zoom in, but never below zero.
        let (lo, _) = axis_range(Some((9.0, 10.0)), rule);
        assert!(lo > 8.0 && lo < 9.0);
        // Negative data is left alone.
        assert!(axis_range(Some((-2.0, 1.0)), rule).0 < -2.0);
    }

    #[test]
    fn integer_axes_pad_half_a_unit() {
        let rule = AxisRule { integer: true, ..RULE };
        assert_eq!(axis_range(Some((1.0, 8.0)), rule), (0.5, 8.5));
        assert_eq!(integer_label_count(0.5, 8.5), 8);
        assert_eq!(integer_label_count(0.0, 1e9), 12);
        assert_eq!(fmt_int_tick(3.0), "3");
        assert_eq!(fmt_int_tick(2.5), "");
    }

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(fmt_tick(0.0), "0");
        assert_eq!(fmt_tick(-0.0), "0");
        assert_eq!(fmt_tick(0.30000000000000004), "0.3");
        assert_eq!(fmt_tick(2.5), "2.5");
        assert_eq!(fmt_tick(100.0), "100");
        assert_eq!(fmt_tick(-1.25), "-1.25");
        assert_eq!(fmt_tick(2_000_000.0), "2e6");
        assert_eq!(fmt_tick(0.00015), "1.5e-4");
    }

    #[test]
    fn time_axes_end_on_round_numbers() {
        assert_eq!(round_up_end((0.0, 59.9)), (0.0, 60.0));
        assert_eq!(round_up_end((0.0, 300.0)), (0.0, 300.0));
        assert_eq!(round_up_end((0.0, 0.0)), (0.0, 0.0));
        let (_, hi) = round_up_end((0.0, 0.93));
        assert!((hi - 0.95).abs() < 1e-12);
    }

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

    #[test]
    fn stems_keep_their_dots() {
        assert_eq!(with_extension(Path::new("a/fig.v2"), "png"), PathBuf::from("a/fig.v2.png"));
    }
}
