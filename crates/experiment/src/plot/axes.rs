//! Axes: which values can be drawn, the range an axis covers, tick labels,
//! and the one set-up of a chart (frame, coordinates, mesh) every figure
//! uses.

use plotters::coord::combinators::{LogCoord, WithKeyPoints};
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

use super::render::{Quirks, Root, DESC_SIZE, FONT, TICK_SIZE};

/// Values beyond this magnitude are treated like infinities.
const HUGE: f64 = 1e300;

const GRID_COLOR: RGBColor = RGBColor(0xdc, 0xdc, 0xdc);
const FINE_GRID_COLOR: RGBColor = RGBColor(0xf0, 0xf0, 0xf0);

pub(super) fn usable(v: f64) -> bool {
    v.is_finite() && v.abs() <= HUGE
}

pub(super) fn usable_points(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    points.iter().copied().filter(|&(x, y)| usable(x) && usable(y)).collect()
}

/// The smallest and largest usable value, if any.
pub(super) fn extent(values: impl IntoIterator<Item = f64>) -> Option<(f64, f64)> {
    values.into_iter().filter(|v| usable(*v)).fold(None, |acc, v| match acc {
        None => Some((v, v)),
        Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
    })
}

/// How an axis range is derived from the data extent.
#[derive(Clone, Copy)]
pub(super) struct AxisRule {
    /// Fraction of the span added on each side.
    pub pad: f64,
    /// Non-negative data (goodput, delay): never show negative values, and
    /// start at zero when the data's minimum is near it.
    pub zero_floor: bool,
    /// Pad by at least half a unit (integer x values).
    pub integer: bool,
}

pub(super) fn axis_range(extent: Option<(f64, f64)>, rule: AxisRule) -> (f64, f64) {
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
pub(super) fn round_up_end((lo, hi): (f64, f64)) -> (f64, f64) {
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
pub(super) fn integer_label_count(lo: f64, hi: f64) -> usize {
    let n = (hi.floor() - lo.ceil()) + 1.0;
    if n.is_finite() && n >= 1.0 {
        (n as usize).clamp(1, 12)
    } else {
        2
    }
}

/// A y axis on a log scale when its values are all positive and span more
/// than this many decades: then the small values (TCP's goodput over many
/// hops next to ATP's) are not pressed flat onto zero. Over fewer decades a
/// linear axis reads better and shows ± sd bars symmetric.
pub(super) const LOG_SCALE_DECADES: f64 = 1.5;

/// Whether a y axis of `values` is better on a log scale (see
/// [`LOG_SCALE_DECADES`]). Unusable values are ignored; a value of zero or
/// below keeps the axis linear, since a log axis cannot show it.
pub(super) fn wants_log_scale(values: impl IntoIterator<Item = f64>) -> bool {
    let values: Vec<f64> = values.into_iter().filter(|v| usable(*v)).collect();
    match extent(values.iter().copied()) {
        Some((lo, hi)) if lo > 0.0 => (hi / lo).log10() > LOG_SCALE_DECADES,
        _ => false,
    }
}

/// The range of a log axis over positive `extent`: widened by 5 % of its
/// decades on each side.
pub(super) fn log_range(extent: Option<(f64, f64)>) -> (f64, f64) {
    match extent {
        Some((lo, hi)) if lo > 0.0 && hi > lo => {
            let pad = 10f64.powf((hi / lo).log10() * 0.05);
            (lo / pad, hi * pad)
        }
        Some((v, _)) if v > 0.0 => (v / 2.0, v * 2.0),
        _ => (0.1, 1.0),
    }
}

/// Tick values of a log axis over `range`: 1, 2 and 5 times each power of
/// ten inside it, so that even a range of two or three decades has labels
/// near every value; only the powers of ten if that would be more than
/// `max` labels. The second list is every multiple 1..9 of each power of ten
/// (the fine grid).
pub(super) fn log_ticks((lo, hi): (f64, f64), max: usize) -> (Vec<f64>, Vec<f64>) {
    if !(lo > 0.0 && hi > lo && hi.is_finite()) {
        return (vec![], vec![]);
    }
    let decades = lo.log10().floor() as i32..=hi.log10().ceil() as i32;
    let multiples = |ks: &[f64]| -> Vec<f64> {
        decades
            .clone()
            .flat_map(|d| ks.iter().map(move |k| k * 10f64.powi(d)))
            .filter(|v| (lo..=hi).contains(v))
            .collect()
    };
    let labelled = multiples(&[1.0, 2.0, 5.0]);
    let labelled = if labelled.len() > max { multiples(&[1.0]) } else { labelled };
    (labelled, multiples(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]))
}

/// The position of `v` along an axis `range`, from 0 at its start to 1 at
/// its end, on a linear or log scale.
pub(super) fn unit(v: f64, range: (f64, f64), log: bool) -> f64 {
    if log {
        (v.max(range.0).log10() - range.0.log10()) / (range.1.log10() - range.0.log10())
    } else {
        (v - range.0) / (range.1 - range.0)
    }
}

/// The space around one plotting area.
#[derive(Clone, Copy)]
pub(super) struct Frame {
    pub margin: u32,
    pub x_label_area: u32,
}

impl Frame {
    /// The plotting area's size in pixels on an area `dim` large.
    pub(super) fn plot_px(self, dim: (u32, u32)) -> (u32, u32) {
        (
            dim.0.saturating_sub(self.margin + RIGHT_MARGIN + Y_LABEL_AREA),
            dim.1.saturating_sub(2 * self.margin + self.x_label_area),
        )
    }
}

const RIGHT_MARGIN: u32 = 36;
const Y_LABEL_AREA: u32 = 110;

/// A figure of its own.
pub(super) const FIGURE: Frame = Frame { margin: 20, x_label_area: 80 };
/// One of the stacked panels of a trace figure.
pub(super) const PANEL: Frame = Frame { margin: 16, x_label_area: 70 };

/// What the axes say: descriptions and how many labels.
pub(super) struct Mesh<'a> {
    pub x_desc: &'a str,
    pub y_desc: &'a str,
    /// Label the x axis at integers only, with this many labels.
    pub x_integer: Option<usize>,
    pub y_labels: usize,
}

/// The chart type every figure draws on: x and y coordinates (linear or
/// logarithmic) of f64 values.
pub(super) type Chart<'a, DB, X, Y> = ChartContext<'a, DB, Cartesian2d<X, Y>>;

/// An axis of f64 values whose ticks can be labelled: a linear range or a
/// [`log_coord`].
pub(super) trait Coord: AsRangedCoord<Value = f64, CoordDescType: ValueFormatter<f64>> {}

impl<T: AsRangedCoord<Value = f64, CoordDescType: ValueFormatter<f64>>> Coord for T {}

/// What [`chart`] returns.
pub(super) type Built<'a, DB, X, Y> = Result<
    Chart<'a, DB, <X as AsRangedCoord>::CoordDescType, <Y as AsRangedCoord>::CoordDescType>,
    DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>,
>;

/// Sets up a chart on `area`: the frame, the coordinates `x` × `y` and the
/// mesh.
pub(super) fn chart<'a, DB: DrawingBackend, X: Coord, Y: Coord>(
    area: &'a Root<DB>,
    frame: Frame,
    x: X,
    y: Y,
    mesh: &Mesh,
    fix: Quirks,
) -> Built<'a, DB, X, Y> {
    let mut chart = ChartBuilder::on(area)
        .margin(frame.margin)
        .margin_right(RIGHT_MARGIN)
        .x_label_area_size(frame.x_label_area)
        .y_label_area_size(Y_LABEL_AREA)
        .build_cartesian_2d(x, y)?;
    draw_mesh(&mut chart, mesh, fix)?;
    Ok(chart)
}

/// A log axis coordinate over `range`, labelled by [`log_ticks`].
pub(super) fn log_coord(range: (f64, f64)) -> WithKeyPoints<LogCoord<f64>> {
    let (labels, fine) = log_ticks(range, 16);
    (range.0..range.1).log_scale().with_key_points(labels).with_light_points(fine)
}

/// The usual mesh: grey grid, black axes, labelled axes, nice tick labels.
fn draw_mesh<DB, X, Y>(
    chart: &mut Chart<'_, DB, X, Y>,
    m: &Mesh,
    fix: Quirks,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = f64> + ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let int_fmt = |v: &f64| fmt_int_tick(*v);
    let float_fmt = |v: &f64| fmt_tick(*v);
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(m.x_desc)
        .y_desc(m.y_desc)
        .axis_desc_style((FONT, DESC_SIZE).into_font().color(&BLACK))
        .label_style((FONT, TICK_SIZE).into_font().color(&BLACK))
        .bold_line_style(GRID_COLOR.stroke_width(1))
        .light_line_style(FINE_GRID_COLOR.stroke_width(1))
        .axis_style(BLACK.stroke_width(1))
        .max_light_lines(1)
        .y_label_offset(fix.y_label_dy)
        .y_labels(m.y_labels)
        .y_label_formatter(&float_fmt);
    match m.x_integer {
        Some(n) => {
            mesh.x_labels(n).x_max_light_lines(0).x_label_formatter(&int_fmt);
        }
        None => {
            mesh.x_labels(10).x_label_formatter(&float_fmt);
        }
    }
    mesh.draw()
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: AxisRule = AxisRule { pad: 0.05, zero_floor: false, integer: false };

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
    fn a_log_scale_when_the_values_span_more_than_one_and_a_half_decades() {
        // testbed-a-single's goodput: ATP at 14 Mbit/s, TCP at 0.007.
        assert!(wants_log_scale([14.0, 5.9, 0.63, 0.007]));
        // Just inside and just outside the span.
        assert!(!wants_log_scale([1.0, 31.0]));
        assert!(wants_log_scale([1.0, 32.0]));
        // Zero (or below) cannot be shown on a log axis.
        assert!(!wants_log_scale([0.0, 0.001, 14.0]));
        // No data, or unusable data only.
        assert!(!wants_log_scale([]));
        assert!(!wants_log_scale([f64::NAN, f64::INFINITY]));
        let (lo, hi) = log_range(Some((0.01, 10.0)));
        assert!(lo < 0.01 && lo > 0.005 && hi > 10.0 && hi < 20.0);
        assert_eq!(unit(0.01, (0.01, 10.0), true), 0.0);
        assert!((unit(0.1, (0.01, 10.0), true) - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(unit(5.0, (0.0, 10.0), false), 0.5);
    }

    #[test]
    fn log_axes_are_labelled_at_one_two_and_five() {
        let (labels, fine) = log_ticks((0.003, 20.0), 12);
        assert_eq!(labels.len(), 12);
        assert_eq!(labels.first().copied(), Some(0.005));
        assert!(labels.windows(2).all(|w| w[0] < w[1]));
        for v in [0.01, 0.02, 0.05, 1.0, 2.0, 5.0, 10.0, 20.0] {
            assert!(labels.iter().any(|l| (l / v - 1.0).abs() < 1e-9), "{v} in {labels:?}");
        }
        assert!(fine.len() > labels.len() && fine.iter().all(|v| (0.003..=20.0).contains(v)));
        // Many decades: powers of ten only.
        let (labels, _) = log_ticks((1e-6, 1e6), 12);
        assert_eq!(labels.len(), 13);
        assert!(labels.iter().all(|v| (v.log10() - v.log10().round()).abs() < 1e-9));
        assert_eq!(log_ticks((0.0, 1.0), 12), (vec![], vec![]));
    }

    #[test]
    fn time_axes_end_on_round_numbers() {
        assert_eq!(round_up_end((0.0, 59.9)), (0.0, 60.0));
        assert_eq!(round_up_end((0.0, 300.0)), (0.0, 300.0));
        assert_eq!(round_up_end((0.0, 0.0)), (0.0, 0.0));
        let (_, hi) = round_up_end((0.0, 0.93));
        assert!((hi - 0.95).abs() < 1e-12);
    }
}
