//! Figures as PNG and SVG.
//!
//! Plain data in, files out: nothing here depends on the simulator's types.
//! Every function takes a *path stem* (`out/fig3`) and writes `out/fig3.png`
//! and `out/fig3.svg`, creating the parent directories, and returns the two
//! paths written (PNG first).
//!
//! * [`line_chart`]: one line with markers per series, optional interval
//!   bars (e.g. the 95% confidence interval of the mean over repetitions,
//!   computed by the caller in linear space), hollow markers for points to
//!   read with care, and a log y axis when the values span many decades.
//! * [`cdf_chart`]: empirical CDFs as step lines, on a log x axis when the
//!   samples are all positive and span more than 1.5 decades.
//! * [`trace_chart`]: the two stacked panels of the ATP thesis (Fig. 5.2/5.3):
//!   in-order delivery per time window above (steps, one per window), the
//!   delay feedback (D_max, D_s, D_avg) or a congestion window over time
//!   below.
//! * [`multi_trace_chart`]: a quantity of several flows over time.
//!
//! What every figure does alike: series with identical data are drawn
//! once, under one legend entry naming them all (`a = b`); a series
//! keeps the look its caller gives it ([`SeriesStyle`]: one per protocol,
//! from [`crate::palette`]); tick labels of an axis share one notation;
//! the legend goes where it hides no data, else beside the plot; and the
//! caller's caption lines (repetitions, seeds, settings, symbols) are
//! printed under the plot.
//!
//! The modules: `render` (backends and files, titles, captions), `axes`
//! (ranges, ticks, the one chart set-up), `legend` (markers, lines, the
//! legend and where it goes), `style` (colours, markers, dashes),
//! `identical` (series drawn once), and one module per figure kind
//! (`line`, `cdf`, `trace`).
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
mod identical;
mod legend;
mod legend_key;
mod line;
mod render;
mod style;
mod trace;

pub use identical::{same_label, IDENTICAL_NOTE};
pub use legend_key::identical_groups_note;
pub use style::{indexed, Dash, MarkerShape, Rgb, SeriesStyle, TAB10};

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
    /// The interval drawn as a bar through each point, (lower, upper) in
    /// the y axis' units (e.g. the 95% confidence interval of the mean
    /// over repetitions); a missing or non-finite entry draws no bar. On a
    /// log axis a bar whose lower end is at or below zero (or far below
    /// the data) ends in an arrowhead at the axis, and the caption says so.
    pub interval: Vec<Option<(f64, f64)>>,
    /// Points drawn with a hollow marker (e.g. every transfer of the point
    /// was incomplete, so its "goodput" is bytes delivered over the run's
    /// duration); a missing entry is `false`. See [`LineChart::hollow_label`].
    pub hollow: Vec<bool>,
    /// Colour, marker and dash; `None`: by the series' position
    /// ([`indexed`]).
    pub style: Option<SeriesStyle>,
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
    /// A legend by factor instead of one entry per series.
    pub key: Option<FactoredKey>,
    /// Lines printed under the plot (what was run, how often, with which
    /// seeds and settings; what the bars and symbols mean).
    pub caption: Vec<String>,
}

/// One sample set of a [`CdfChart`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CdfSeries {
    pub label: String,
    pub samples: Vec<f64>,
    pub style: Option<SeriesStyle>,
}

/// Empirical CDFs of sample sets.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CdfChart {
    pub title: String,
    /// The x axis description, with its unit.
    pub x_label: String,
    pub series: Vec<CdfSeries>,
    /// A legend by factor instead of one entry per series.
    pub key: Option<FactoredKey>,
    pub caption: Vec<String>,
}

/// A legend by factor, for series that are every combination of a
/// protocol (a colour and marker) and the values of other swept keys (a
/// dash): one entry per protocol and one per dash, instead of one per
/// combination.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FactoredKey {
    /// (label, look) of each colour and marker, drawn solid.
    pub looks: Vec<(String, SeriesStyle)>,
    /// (label, dash) of each dash, drawn in grey.
    pub dashes: Vec<(String, Dash)>,
}

/// Time windows a binned series was counted over: each value covers the
/// `length_s` before its time; one value every `step_s` (a sliding window
/// when the step is shorter than the window). Drawn as steps, one per
/// value, each held over the `step_s` before its time: the value is not
/// interpolated between windows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Windows {
    pub length_s: f64,
    pub step_s: f64,
}

impl Windows {
    /// "200 ms windows, every 100 ms" (or "200 ms windows" when they do
    /// not overlap).
    pub fn describe(self) -> String {
        let ms = |s: f64| format!("{} ms", (s * 1e3 * 1e3).round() / 1e3);
        if (self.length_s - self.step_s).abs() < 1e-12 {
            format!("{} windows", ms(self.length_s))
        } else {
            format!("{} windows, every {}", ms(self.length_s), ms(self.step_s))
        }
    }
}

/// One line of a [`MultiTraceChart`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TimeSeries {
    pub label: String,
    /// (time in s, value).
    pub points: Vec<(f64, f64)>,
    pub style: Option<SeriesStyle>,
}

/// A quantity of several flows over time.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MultiTraceChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<TimeSeries>,
    /// The series are counts per time window: drawn as steps.
    pub windows: Option<Windows>,
    pub caption: Vec<String>,
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
    /// (time in s, Mbit/s handed to the application in order in the
    /// window ending then): "instantaneous goodput" in the thesis' words.
    /// In-order delivery can exceed the link rate when a hole is filled and
    /// the data held behind it is released at once.
    pub goodput: Vec<(f64, f64)>,
    /// The windows of `goodput` (drawn as steps); `None`: a line through
    /// the samples.
    pub goodput_windows: Option<Windows>,
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
    /// Lines printed under the panels.
    pub caption: Vec<String>,
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
pub fn cdf_chart(chart: &CdfChart, path_stem: &Path) -> Result<Vec<PathBuf>, PlotError> {
    render(&CdfFigure(chart), path_stem)
}

/// Writes `stem.png` and `stem.svg` with the two stacked panels of a trace
/// figure: in-order delivery (Mbit/s) over time above; below, per [`TraceChart::lower`],
/// delay (ms) over time with D_max (green), D_s (blue), D_avg as sent
/// (magenta) and as received (light blue) as points, or the congestion
/// window (segments) as a step line.
pub fn trace_chart(chart: &TraceChart, path_stem: &Path) -> Result<Vec<PathBuf>, PlotError> {
    render(&TraceFigure(chart), path_stem)
}

/// Writes `stem.png` and `stem.svg` with one line per flow over time (e.g.
/// the goodput of each flow of the stack topology).
pub fn multi_trace_chart(chart: &MultiTraceChart, path_stem: &Path) -> Result<Vec<PathBuf>, PlotError> {
    render(&MultiTraceFigure(chart), path_stem)
}
