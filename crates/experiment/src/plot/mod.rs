//! Figures as PNG and SVG.
//!
//! Plain data in, files out: nothing here depends on the simulator's types.
//! Every function takes a *path stem* (`out/fig3`) and writes `out/fig3.png`
//! and `out/fig3.svg`, creating the parent directories, and returns the two
//! paths written (PNG first).
//!
//! * [`line_chart`]: one line with markers per series, optional ± error bars
//!   (mean ± sd over runs), hollow markers for points to read with care,
//!   and a log y axis when the values span many decades.
//! * [`cdf_chart`]: empirical CDFs as step lines, on a log x axis when the
//!   samples are all positive and span more than 1.5 decades.
//! * [`trace_chart`]: the two stacked panels of the ATP thesis (Fig. 5.2/5.3):
//!   instantaneous goodput over time above, the delay feedback (D_max, D_s,
//!   D_avg) or a congestion window over time below.
//! * [`multi_trace_chart`]: goodput of several flows over time.
//!
//! The modules: `render` (backends and files, titles), `axes`
//! (ranges, ticks, the one chart set-up), `legend` (markers, lines, the
//! legend and where it goes), and one module per figure kind (`line`,
//! `cdf`, `trace`).
//!
//! Rendering is deterministic: the same data gives byte-identical files.
//! Text in the PNG is rasterised from DejaVu Sans, embedded in the binary
//! (crate `dejavu`), so no system font or font library is needed; the SVG
//! names the `sans-serif` family and leaves the font to the viewer.
//!
//! Robustness: NaN, infinite and absurdly large (|v| > 1e300) values are
//! skipped, empty series and single points are drawn (or left out) without
//! error, and a zero-width range is padded so that the axis has a width.

use std::path::{Path, PathBuf};

mod axes;
mod cdf;
mod legend;
mod line;
mod render;
mod trace;

use cdf::CdfFigure;
use line::LineFigure;
use render::render;
use trace::{MultiTraceFigure, TraceFigure};

/// The size of a figure with one chart, in pixels.
const W: u32 = 1200;
const H: u32 = 800;

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
    /// Points drawn with a hollow marker (e.g. every transfer of the point
    /// was incomplete, so its "goodput" is bytes delivered over the run's
    /// duration); a missing entry is `false`. See [`LineChart::hollow_label`].
    pub hollow: Vec<bool>,
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
    /// The y axis scale.
    pub y_scale: YScale,
    /// The legend entry of the hollow markers, shown when a point is hollow.
    pub hollow_label: Option<String>,
}

/// The scale of a y axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum YScale {
    #[default]
    Linear,
    /// Logarithmic when the values are all positive and span more than
    /// 1.5 decades (then a linear axis presses the small ones onto zero),
    /// linear otherwise.
    Auto,
}

/// What the lower panel of a [`TraceChart`] shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TracePanel {
    /// ATP's delay feedback: D_max, D_s and D_avg as points.
    #[default]
    Delay,
    /// A window-based sender's congestion window (TCP), as a step line.
    Cwnd,
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
    /// (time in s, D_avg in ms) as the receiver sent it.
    pub d_avg: Vec<(f64, f64)>,
    /// (time in s, D_avg in ms) as it reached the sender (seed 000 Fig. 7b's
    /// D_avg′).
    pub d_avg_received: Vec<(f64, f64)>,
    /// (time in s, congestion window in segments), each a new value that
    /// holds until the next.
    pub cwnd_segments: Vec<(f64, f64)>,
    /// Which of the two the lower panel shows.
    pub lower: TracePanel,
    /// Times (s) the sender was told its route failed (seed 002 Figs. 8–9
    /// mark them), drawn on the goodput panel's time axis.
    pub route_failures: Vec<f64>,
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
/// set, as step lines with y in [0, 1]; x on a log axis when the samples
/// are all positive and span more than 1.5 decades.
pub fn cdf_chart(
    title: &str,
    x_label: &str,
    series: &[(String, Vec<f64>)],
    path_stem: &Path,
) -> Result<Vec<PathBuf>, PlotError> {
    render(&CdfFigure { title, x_label, series }, path_stem)
}

/// Writes `stem.png` and `stem.svg` with the two stacked panels of a trace
/// figure: goodput (Mbit/s) over time above; below, per [`TraceChart::lower`],
/// delay (ms) over time with D_max (green), D_s (blue), D_avg as sent
/// (magenta) and as received (light blue) as points, or the congestion
/// window (segments) as a step line.
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
