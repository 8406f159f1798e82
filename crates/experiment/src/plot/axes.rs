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

/// How every tick label of one axis is written: one notation per axis, so
/// that no axis shows `5e-4` beside `0.001`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Notation {
    /// Decimals, the same number of them on every label (`0.0`, `0.5`,
    /// `1.0`): a linear axis.
    Fixed(usize),
    /// Decimals, as few as each value needs (`0.0005`, `0.001`, `20`): a
    /// log axis whose labels are all between 10⁻⁴ and 10⁶.
    Plain,
    /// Powers of ten (`2×10⁻⁵`, `10⁻⁴`): an axis reaching beyond those.
    Scientific,
}

/// The smallest and largest magnitude written in [`Notation::Plain`] or
/// [`Notation::Fixed`].
const PLAIN_MIN: f64 = 1e-4;
const PLAIN_MAX: f64 = 1e6;

/// The decimals `v` needs (at most six): 0.25 → 2, 3.0 → 0.
fn decimals(v: f64) -> usize {
    let s = format!("{:.6}", v.abs());
    trim_zeros(&s).split_once('.').map_or(0, |(_, d)| d.len())
}

/// `v` in `notation`, without floating-point noise.
pub(super) fn format_tick(v: f64, notation: Notation) -> String {
    if !v.is_finite() {
        return String::new();
    }
    if v == 0.0 {
        return match notation {
            Notation::Fixed(d) => format!("{:.*}", d, 0.0),
            Notation::Plain | Notation::Scientific => "0".into(),
        };
    }
    match notation {
        Notation::Fixed(d) => format!("{v:.d$}"),
        Notation::Plain => trim_zeros(&format!("{v:.6}")).to_string(),
        Notation::Scientific => {
            let mut e = v.abs().log10().floor() as i32;
            let mut m = v / 10f64.powi(e);
            // 9.999… rounds up to the next power of ten.
            if (m.abs() * 100.0).round() >= 1000.0 {
                e += 1;
                m /= 10.0;
            }
            let power = format!("10{}", superscript(e));
            let m = trim_zeros(&format!("{m:.2}")).to_string();
            match m.as_str() {
                "1" => power,
                "-1" => format!("\u{2212}{power}"),
                _ => format!("{}\u{d7}{power}", m.replace('-', "\u{2212}")),
            }
        }
    }
}

/// An exponent in superscript digits (`-4` → `⁻⁴`).
fn superscript(e: i32) -> String {
    const DIGITS: [char; 10] = ['⁰', '¹', '²', '³', '⁴', '⁵', '⁶', '⁷', '⁸', '⁹'];
    let digits: String = e.unsigned_abs().to_string().bytes().map(|b| DIGITS[usize::from(b - b'0')]).collect();
    if e < 0 {
        format!("\u{207b}{digits}")
    } else {
        digits
    }
}

/// The notation of a log axis labelled at `ticks`.
pub(super) fn log_notation(ticks: &[f64]) -> Notation {
    if ticks.iter().all(|t| (PLAIN_MIN..PLAIN_MAX).contains(&t.abs())) {
        Notation::Plain
    } else {
        Notation::Scientific
    }
}

/// The notation of a linear axis labelled at `ticks`: as many decimals on
/// every label as the finest needs, or powers of ten if a label is huge
/// or every label tiny.
pub(super) fn linear_notation(ticks: &[f64]) -> Notation {
    let largest = ticks.iter().fold(0f64, |m, t| m.max(t.abs()));
    if largest >= PLAIN_MAX || (largest > 0.0 && largest < PLAIN_MIN * 10.0) {
        return Notation::Scientific;
    }
    Notation::Fixed(ticks.iter().map(|&t| decimals(t)).max().unwrap_or(0))
}

/// The labelled values of a linear axis over `range` with at most
/// `labels` labels: the ones plotters' mesh draws.
pub(super) fn linear_ticks((lo, hi): (f64, f64), labels: usize) -> Vec<f64> {
    use plotters::coord::types::RangedCoordf64;
    RangedCoordf64::from(lo..hi).key_points(labels)
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
    /// The pixels left and right of the plotting area (the y labels and
    /// the margins).
    pub(super) fn plot_sides_px(self) -> (u32, u32) {
        (self.margin + Y_LABEL_AREA, RIGHT_MARGIN)
    }

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

/// Where an axis is labelled.
#[derive(Clone, Copy, Debug)]
pub(super) enum Ticks {
    /// At integers only, with at most this many labels.
    Integer(usize),
    /// A linear axis over the range with at most this many labels.
    Linear((f64, f64), usize),
    /// A log axis over the range, labelled as [`log_coord`] labels it.
    Log((f64, f64)),
}

impl Ticks {
    /// How many labels, and their one notation (`None`: integers).
    fn labels(self) -> (usize, Option<Notation>) {
        match self {
            Ticks::Integer(n) => (n, None),
            Ticks::Linear(range, n) => (n, Some(linear_notation(&linear_ticks(range, n)))),
            Ticks::Log(range) => {
                let ticks = log_ticks(range, LOG_LABELS_MAX).0;
                (ticks.len().max(1), Some(log_notation(&ticks)))
            }
        }
    }
}

/// What the axes say: descriptions and where the labels go.
pub(super) struct Mesh<'a> {
    pub x_desc: &'a str,
    pub y_desc: &'a str,
    pub x: Ticks,
    pub y: Ticks,
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

/// At most this many labels on a log axis (else powers of ten only).
const LOG_LABELS_MAX: usize = 16;

/// A log axis coordinate over `range`, labelled by [`log_ticks`].
pub(super) fn log_coord(range: (f64, f64)) -> WithKeyPoints<LogCoord<f64>> {
    let (labels, fine) = log_ticks(range, LOG_LABELS_MAX);
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
    let format = |notation: Option<Notation>| {
        move |v: &f64| match notation {
            Some(n) => format_tick(*v, n),
            None => fmt_int_tick(*v),
        }
    };
    let ((x_count, x_notation), (y_count, y_notation)) = (m.x.labels(), m.y.labels());
    let (x_fmt, y_fmt) = (format(x_notation), format(y_notation));
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
        .y_labels(y_count)
        .y_label_formatter(&y_fmt)
        .x_labels(x_count)
        .x_label_formatter(&x_fmt);
    if let Ticks::Integer(_) = m.x {
        mesh.x_max_light_lines(0);
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
    fn tick_labels_have_no_floating_point_noise() {
        assert_eq!(format_tick(0.30000000000000004, Notation::Plain), "0.3");
        assert_eq!(format_tick(0.30000000000000004, Notation::Fixed(1)), "0.3");
        assert_eq!(format_tick(-0.0, Notation::Plain), "0");
        assert_eq!(format_tick(0.0, Notation::Fixed(2)), "0.00");
        assert_eq!(format_tick(-1.25, Notation::Fixed(2)), "-1.25");
        assert_eq!(format_tick(2e-4 * 1.000_000_000_000_1, Notation::Scientific), "2×10⁻⁴");
        assert_eq!(format_tick(0.001, Notation::Scientific), "10⁻³");
        assert_eq!(format_tick(2_000_000.0, Notation::Scientific), "2×10⁶");
        assert_eq!(format_tick(9.999_999e5, Notation::Scientific), "10⁶");
        assert_eq!(format_tick(15.0, Notation::Scientific), "1.5×10¹");
        assert_eq!(format_tick(-0.05, Notation::Scientific), "\u{2212}5×10⁻²");
    }

    #[test]
    fn every_label_of_a_log_axis_has_one_notation() {
        // testbed-a-single's goodput axis reaches 2e-4 Mbit/s, labelled at
        // 1, 2 and 5 times each power of ten. A label below 10^-4 turns
        // every label into powers of ten; none is written as `5e-4`.
        let wide = log_ticks((1.5e-5, 2.5), LOG_LABELS_MAX).0;
        assert_eq!(wide.first().map(|v| format_tick(*v, Notation::Scientific)).as_deref(), Some("2×10⁻⁵"));
        assert_eq!(log_notation(&wide), Notation::Scientific);
        let labels: Vec<String> = wide.iter().map(|&v| format_tick(v, log_notation(&wide))).collect();
        assert!(labels.iter().all(|l| l.contains("10") && !l.contains('e') && !l.contains('.')), "{labels:?}");
        // 1.5e-4 to 25: every label written out in decimals.
        let narrow = log_ticks((1.5e-4, 25.0), LOG_LABELS_MAX).0;
        assert_eq!(log_notation(&narrow), Notation::Plain);
        let labels: Vec<String> = narrow.iter().map(|&v| format_tick(v, Notation::Plain)).collect();
        assert_eq!(labels[..3], ["0.0002", "0.0005", "0.001"]);
        assert!(labels.iter().all(|l| !l.contains('e') && !l.contains('×')), "{labels:?}");
        // Seven decades, labelled at powers of ten only, none below 10^-4.
        let powers = log_ticks((1.5e-5, 25.0), LOG_LABELS_MAX).0;
        assert_eq!(log_notation(&powers), Notation::Plain);
        // Just inside and just outside the plain range.
        assert_eq!(log_notation(&[1e-4, 1e5]), Notation::Plain);
        assert_eq!(log_notation(&[5e-5, 1.0]), Notation::Scientific);
        assert_eq!(log_notation(&[1.0, 1e6]), Notation::Scientific);
    }

    #[test]
    fn every_label_of_a_linear_axis_has_as_many_decimals() {
        assert_eq!(linear_notation(&[0.0, 0.5, 1.0, 1.5]), Notation::Fixed(1));
        let labels: Vec<String> = [0.0, 0.5, 1.0, 1.5].iter().map(|&v| format_tick(v, Notation::Fixed(1))).collect();
        assert_eq!(labels, ["0.0", "0.5", "1.0", "1.5"]);
        assert_eq!(linear_notation(&[0.0, 2000.0, 4000.0]), Notation::Fixed(0));
        assert_eq!(linear_notation(&[0.0, 0.25, 0.30000000000000004]), Notation::Fixed(2));
        assert_eq!(linear_notation(&[0.0, 2e6]), Notation::Scientific);
        assert_eq!(linear_notation(&[0.0, 2e-4, 4e-4]), Notation::Scientific);
        // plotters' own labels of a range, one notation for them all.
        let ticks = linear_ticks((-0.02, 1.04), 12);
        assert!(ticks.len() > 3);
        let n = linear_notation(&ticks);
        let labels: Vec<String> = ticks.iter().map(|&v| format_tick(v, n)).collect();
        let widths: std::collections::HashSet<usize> =
            labels.iter().map(|l| l.split_once('.').map_or(0, |(_, d)| d.len())).collect();
        assert_eq!(widths.len(), 1, "{labels:?}");
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
