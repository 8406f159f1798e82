//! Goodput (or any y) against x: one line with markers per series, with
//! interval bars, hollow markers for points to read with care, and a log y
//! axis when the values span many decades.

use plotters::prelude::*;

use super::axes::{
    axis_range, chart, extent, integer_label_count, log_coord, log_range, unit, usable, wants_log_scale, AxisRule,
    Coord, Mesh, Ticks, FIGURE,
};
use super::identical::{merge_series, IDENTICAL_NOTE};
use super::legend::{rgb, Legend, Marker, Polyline};
use super::legend_key::{self, identical_groups_note};
use super::render::{titled, Drawn, Figure, Quirks, Root};
use super::style::{indexed, SeriesStyle};
use super::{LineChart, Series, YScale};

/// The colour of the legend's hollow-marker entry: no series' colour.
const NOTE_COLOR: RGBColor = RGBColor(0x50, 0x50, 0x50);

/// Half the width of an error bar's caps, in pixels.
const BAR_CAP_PX: i32 = 7;

/// On a log axis, bar ends further than this factor below the lowest
/// point are not drawn to scale (they would squash every point into the
/// top of the plot): the bar ends in an arrowhead at the axis instead.
const LOG_BAR_FLOOR_FACTOR: f64 = 10.0;

/// The caption line of a figure with arrowheads at its bars' ends.
const OPEN_BAR_NOTE: &str =
    "\u{25bc} at the foot of a bar: the interval reaches below the axis (to zero or below), drawn open-ended";

/// On an integer x axis, series whose bars would hide each other are set
/// apart sideways by this much in all (x units), at most [`DODGE_STEP`]
/// between neighbours.
const DODGE_SPREAD: f64 = 0.3;
const DODGE_STEP: f64 = 0.06;

/// One usable point: x, y, the interval's (lower, upper) end, hollow.
type Point = (f64, f64, Option<(f64, f64)>, bool);

pub(super) struct LineFigure<'a>(pub &'a LineChart);

/// The series of a chart with identical ones merged, each with its look.
struct Prepared {
    series: Vec<Series>,
    cleaned: Vec<Vec<Point>>,
    merged: bool,
    /// The sideways offset between neighbouring series (0: none), in x
    /// units, or in octaves on a log2 x axis.
    dodge: f64,
    /// The x values are counts that double from point to point (1, 2, 4…
    /// flows): a logarithmic x axis labelled at them, so that each step
    /// gets the same width and the small counts are not crammed together.
    log2_x: bool,
}

/// Whether integer x values are powers of two spanning at least three
/// doublings, with at least four of them: drawn on a log2 axis.
pub(super) fn doubling_x(xs: impl IntoIterator<Item = f64>, integer_x: bool) -> bool {
    let mut distinct: Vec<f64> = xs.into_iter().collect();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    let power_of_two = |x: &f64| *x >= 1.0 && x.fract() == 0.0 && (*x as u64).is_power_of_two();
    integer_x
        && distinct.len() >= 4
        && distinct.iter().all(power_of_two)
        && distinct[distinct.len() - 1] / distinct[0] >= 8.0
}

/// How far a log2 x axis reaches beyond the outer points, in octaves.
const LOG2_X_PAD_OCTAVES: f64 = 0.3;

/// The sideways offset between neighbouring series of `n` on an integer x
/// axis with bars, 0 when there is nothing to set apart.
pub(super) fn dodge_step(n: usize, integer_x: bool, bars: bool) -> f64 {
    if !integer_x || !bars || n < 2 {
        return 0.0;
    }
    (DODGE_SPREAD / (n - 1) as f64).min(DODGE_STEP)
}

impl LineFigure<'_> {
    fn prepare(&self) -> Prepared {
        let (series, merged) = merge_series(&self.0.series);
        let mut cleaned: Vec<Vec<Point>> = series.iter().map(cleaned).collect();
        let bars = cleaned.iter().flatten().any(|p| p.2.is_some_and(|(lo, hi)| hi > lo));
        let dodge = dodge_step(cleaned.len(), self.0.x_integer_ticks, bars);
        let log2_x = doubling_x(cleaned.iter().flatten().map(|p| p.0), self.0.x_integer_ticks);
        let middle = (cleaned.len() as f64 - 1.0) / 2.0;
        for (i, pts) in cleaned.iter_mut().enumerate() {
            for p in pts.iter_mut() {
                let offset = (i as f64 - middle) * dodge;
                p.0 = if log2_x { p.0 * offset.exp2() } else { p.0 + offset };
            }
        }
        Prepared { series, cleaned, merged, dodge, log2_x }
    }

    fn legend(&self, p: &Prepared) -> Legend {
        let c = self.0;
        let looks: Vec<(String, SeriesStyle)> =
            p.series.iter().enumerate().map(|(i, s)| (s.label.clone(), style(s, i))).collect();
        let mut entries = legend_key::entries(&looks, c.key.as_ref(), true);
        if let Some(label) = c.hollow_label.as_ref().filter(|_| p.cleaned.iter().flatten().any(|p| p.3)) {
            entries.push(legend_key::hollow_entry(label, NOTE_COLOR));
        }
        Legend(entries)
    }

    /// Draws the series on an x axis `x_coord` (linear, or log2 when
    /// `p.log2_x`) over `x` and a y axis `y` (linear or log) over
    /// `y_range`; on a log y axis, a bar whose lower end is below the axis
    /// ends at the axis in an arrowhead.
    #[allow(clippy::too_many_arguments)]
    fn draw_on<DB: DrawingBackend, X: Coord, Y: Coord>(
        &self,
        body: &Root<DB>,
        p: &Prepared,
        x_coord: X,
        x: (f64, f64),
        y: Y,
        y_range: (f64, f64),
        log: bool,
        q: Quirks,
    ) -> Drawn<DB> {
        let c = self.0;
        let legend = self.legend(p);
        let floor = |v: f64| if log { v.max(y_range.0) } else { v };
        // The lines, and each error bar as a line of its own, in plot units.
        let to_unit = |px: f64, py: f64| (unit(px, x, p.log2_x), unit(py, y_range, log));
        let bars = p
            .cleaned
            .iter()
            .flatten()
            .filter_map(|&(px, _, e, _)| e.map(|(lo, hi)| vec![to_unit(px, floor(lo)), to_unit(px, hi)]));
        let unit_lines: Vec<Vec<(f64, f64)>> =
            p.cleaned.iter().map(|p| p.iter().map(|&(px, py, _, _)| to_unit(px, py)).collect()).chain(bars).collect();
        let (place, area, strip) = legend.layout(body, FIGURE, &unit_lines);
        let mesh = Mesh {
            x_desc: &c.x_label,
            y_desc: &c.y_label,
            x: match (p.log2_x, c.x_integer_ticks) {
                (true, _) => Ticks::Integer(log2_key_points(x).len()),
                (false, true) => Ticks::Integer(integer_label_count(x.0, x.1)),
                (false, false) => Ticks::Linear(x, 10),
            },
            y: if log { Ticks::Log(y_range) } else { Ticks::Linear(y_range, 10) },
        };
        let mut chart = chart(&area, FIGURE, x_coord, y, &mesh, q)?;
        for (i, (s, pts)) in p.series.iter().zip(&p.cleaned).enumerate() {
            let look = style(s, i);
            let col = rgb(look.color);
            // Bars first, so that lines and markers sit on top: a vertical
            // line with caps of a fixed pixel width, or an arrowhead where
            // the interval reaches below a log axis. (plotters' `ErrorBar`
            // also draws a dot at the mean, which would hide the markers.)
            let bars: Vec<(f64, f64, f64)> = pts
                .iter()
                .filter_map(|&(px, _, e, _)| e.filter(|(lo, hi)| hi > lo).map(|(lo, hi)| (px, lo, hi)))
                .collect();
            let bar_style = col.stroke_width(2);
            chart.draw_series(
                bars.iter().map(|&(px, lo, hi)| PathElement::new(vec![(px, floor(lo)), (px, hi)], bar_style)),
            )?;
            let cap = |&(px, v): &(f64, f64)| {
                EmptyElement::at((px, v)) + PathElement::new(vec![(-BAR_CAP_PX, 0), (BAR_CAP_PX, 0)], bar_style)
            };
            let open = |lo: f64| log && lo < y_range.0;
            let caps: Vec<(f64, f64)> = bars
                .iter()
                .flat_map(|&(px, lo, hi)| [(!open(lo)).then_some((px, lo)), Some((px, hi))])
                .flatten()
                .collect();
            chart.draw_series(caps.iter().map(cap))?;
            let arrow = |&(px, _, _): &(f64, f64, f64)| {
                EmptyElement::at((px, y_range.0)) + Polygon::new(vec![(-6, -10), (6, -10), (0, 0)], col.filled())
            };
            chart.draw_series(bars.iter().filter(|b| open(b.1)).map(arrow))?;
            let line = Polyline::new(pts.iter().map(|p| (p.0, p.1)), col, 3, q).dashed(look.dash);
            chart.draw_series(std::iter::once(line))?;
            chart.draw_series(
                pts.iter().map(|&(px, py, _, hollow)| Marker::new((px, py), look.marker, 6, col).hollow(hollow)),
            )?;
        }
        let empty = p.cleaned.iter().all(|p| p.is_empty());
        legend.finish(chart.plotting_area(), empty, place, strip.as_ref(), q)
    }

    /// The y range of a log axis: the points and their bars' upper ends,
    /// and the lower ends that are above zero and not far below every
    /// point ([`LOG_BAR_FLOOR_FACTOR`]).
    fn log_y_range(cleaned: &[Vec<Point>]) -> (f64, f64) {
        let points = || cleaned.iter().flatten();
        let lowest = points().map(|p| p.1).filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
        let ends = points().flat_map(|&(_, y, e, _)| {
            let (lo, hi) = e.unwrap_or((y, y));
            [y, hi, if lo > 0.0 && lo >= lowest / LOG_BAR_FLOOR_FACTOR { lo } else { y }]
        });
        log_range(extent(ends.filter(|v| *v > 0.0)))
    }

    /// Whether some bar reaches below a log axis over `y_range`.
    fn open_bars(cleaned: &[Vec<Point>], y_range: (f64, f64)) -> bool {
        cleaned.iter().flatten().any(|&(_, _, e, _)| e.is_some_and(|(lo, hi)| hi > lo && lo < y_range.0))
    }

    /// Whether the chart is drawn on a log y axis.
    fn log_axis(&self, cleaned: &[Vec<Point>]) -> bool {
        self.0.y_scale == YScale::Auto && wants_log_scale(cleaned.iter().flatten().map(|p| p.1))
    }
}

/// The powers of two inside `range`: a log2 axis's labels.
fn log2_key_points(range: (f64, f64)) -> Vec<f64> {
    (0..63).map(|k| (1u64 << k) as f64).filter(|v| *v >= range.0 && *v <= range.1).collect()
}

/// A series' look: its own, or its position's.
fn style(s: &Series, i: usize) -> SeriesStyle {
    s.style.unwrap_or_else(|| indexed(i))
}

/// The usable points of a series, each with its interval (if both ends
/// are usable) and hollowness.
fn cleaned(s: &Series) -> Vec<Point> {
    s.points
        .iter()
        .enumerate()
        .filter(|(_, &(x, y))| usable(x) && usable(y))
        .map(|(i, &(x, y))| {
            let e = s.interval.get(i).copied().flatten().filter(|&(lo, hi)| usable(lo) && usable(hi) && lo <= hi);
            (x, y, e, s.hollow.get(i).copied().unwrap_or(false))
        })
        .collect()
}

impl Figure for LineFigure<'_> {
    fn caption(&self) -> Vec<String> {
        let p = self.prepare();
        let mut lines = self.0.caption.clone();
        if p.merged {
            match &self.0.key {
                None => lines.push(IDENTICAL_NOTE.into()),
                Some(_) => {
                    lines.extend(identical_groups_note(&p.series.iter().map(|s| s.label.as_str()).collect::<Vec<_>>()))
                }
            }
        }
        if p.log2_x {
            lines.push("Logarithmic x axis (base 2): each doubling takes the same width.".into());
        }
        if p.dodge > 0.0 && p.log2_x {
            let most = p.dodge * (p.cleaned.len() as f64 - 1.0) / 2.0;
            lines.push(format!(
                "Series shifted sideways by up to \u{b1}{} of a doubling on the x axis so that their bars do not \
                 hide each other; each point belongs to the nearest labelled x.",
                (most * 100.0).round() / 100.0
            ));
        } else if p.dodge > 0.0 {
            let most = p.dodge * (p.cleaned.len() as f64 - 1.0) / 2.0;
            lines.push(format!(
                "Series shifted sideways by up to \u{b1}{} on the x axis so that their bars do not hide each other; \
                 each point belongs to the nearest whole x.",
                (most * 100.0).round() / 100.0
            ));
        }
        if self.log_axis(&p.cleaned) && Self::open_bars(&p.cleaned, Self::log_y_range(&p.cleaned)) {
            lines.push(OPEN_BAR_NOTE.into());
        }
        lines
    }

    fn draw<DB: DrawingBackend>(&self, root: &Root<DB>, q: Quirks) -> Drawn<DB> {
        let c = self.0;
        let p = self.prepare();
        let points = || p.cleaned.iter().flatten();
        let x = if p.log2_x {
            let (lo, hi) = extent(points().map(|p| p.0)).expect("a log2 axis has points");
            (lo * (-LOG2_X_PAD_OCTAVES).exp2(), hi * LOG2_X_PAD_OCTAVES.exp2())
        } else {
            axis_range(
                extent(points().map(|p| p.0)),
                AxisRule { pad: 0.03, zero_floor: false, integer: c.x_integer_ticks },
            )
        };
        let body = titled(root, &c.title)?;
        let log2_coord = || (x.0..x.1).log_scale().with_key_points(log2_key_points(x));
        if self.log_axis(&p.cleaned) {
            let y = Self::log_y_range(&p.cleaned);
            return match p.log2_x {
                true => self.draw_on(&body, &p, log2_coord(), x, log_coord(y), y, true, q),
                false => self.draw_on(&body, &p, x.0..x.1, x, log_coord(y), y, true, q),
            };
        }
        let ends = points().flat_map(|&(_, y, e, _)| {
            let (lo, hi) = e.unwrap_or((y, y));
            [y, lo, hi]
        });
        let y = axis_range(extent(ends), AxisRule { pad: 0.06, zero_floor: true, integer: false });
        match p.log2_x {
            true => self.draw_on(&body, &p, log2_coord(), x, y.0..y.1, y, false, q),
            false => self.draw_on(&body, &p, x.0..x.1, x, y.0..y.1, y, false, q),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(y: f64, lo: f64, hi: f64) -> Point {
        (1.0, y, Some((lo, hi)), false)
    }

    #[test]
    fn a_log_axis_is_not_stretched_by_intervals_that_reach_zero() {
        // TCP at 3 hops: mean 0.01 Mbit/s, its 95% interval from below
        // zero; ATP at 14 Mbit/s.
        let cleaned = vec![vec![point(14.0, 13.0, 15.0)], vec![point(0.01, -0.02, 0.03), point(0.002, 1e-9, 0.004)]];
        let (lo, hi) = LineFigure::log_y_range(&cleaned);
        assert!(lo > 1e-4 && lo < 0.002, "{lo}");
        assert!(hi > 15.0);
        // Both TCP bars reach below the axis: drawn open-ended, and said so.
        assert!(LineFigure::open_bars(&cleaned, (lo, hi)));
        let chart = LineChart {
            series: vec![Series {
                label: "tcp".into(),
                points: vec![(1.0, 14.0), (2.0, 0.01)],
                interval: vec![Some((13.0, 15.0)), Some((-0.02, 0.03))],
                ..Series::default()
            }],
            y_scale: YScale::Auto,
            ..LineChart::default()
        };
        assert!(LineFigure(&chart).caption().iter().any(|l| l == OPEN_BAR_NOTE));
        // Bars inside the range are drawn to scale.
        let inside = vec![vec![point(1.0, 0.5, 2.0), point(0.01, 0.005, 0.02)]];
        let range = LineFigure::log_y_range(&inside);
        assert!(range.0 < 0.005);
        assert!(!LineFigure::open_bars(&inside, range));
    }

    #[test]
    fn series_with_bars_on_an_integer_axis_are_set_apart_and_say_so() {
        assert_eq!(dodge_step(6, true, true), 0.06);
        assert!((dodge_step(2, true, true) - 0.06).abs() < 1e-12);
        assert!((dodge_step(11, true, true) - 0.03).abs() < 1e-12);
        assert_eq!(dodge_step(1, true, true), 0.0);
        assert_eq!(dodge_step(6, false, true), 0.0);
        assert_eq!(dodge_step(6, true, false), 0.0);
        let s = |label: &str, y: f64| Series {
            label: label.into(),
            points: vec![(3.0, y)],
            interval: vec![Some((y - 0.1, y + 0.1))],
            ..Series::default()
        };
        let chart = LineChart {
            series: vec![s("a", 1.0), s("b", 2.0), s("c", 3.0)],
            x_integer_ticks: true,
            ..LineChart::default()
        };
        let fig = LineFigure(&chart);
        let xs: Vec<f64> = fig.prepare().cleaned.iter().map(|p| p[0].0).collect();
        assert_eq!(xs, [2.94, 3.0, 3.06]);
        // The values themselves are unchanged.
        assert_eq!(chart.series[0].points, [(3.0, 1.0)]);
        assert!(fig.caption().iter().any(|l| l.contains("up to \u{b1}0.06 on the x axis")));
    }

    #[test]
    fn doubling_counts_get_a_log2_axis_labelled_at_them() {
        assert!(doubling_x([1.0, 2.0, 4.0, 8.0, 16.0, 32.0], true));
        assert!(doubling_x([2.0, 4.0, 8.0, 16.0], true));
        // Not integers, too few, too narrow, or not doublings: linear.
        assert!(!doubling_x([1.0, 2.0, 4.0, 8.0], false));
        assert!(!doubling_x([1.0, 2.0, 4.0], true));
        assert!(!doubling_x([4.0, 8.0, 16.0, 16.0], true));
        assert!(!doubling_x([1.0, 2.0, 3.0, 4.0, 8.0], true));
        assert!(!doubling_x([0.5, 1.0, 2.0, 4.0], true));
        assert_eq!(log2_key_points((0.8, 40.0)), [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]);
        // Dodged multiplicatively, and the caption says how.
        let s = |label: &str, y: f64| Series {
            label: label.into(),
            points: [1.0, 2.0, 4.0, 8.0].iter().map(|&x| (x, y)).collect(),
            interval: vec![Some((y - 0.1, y + 0.1)); 4],
            ..Series::default()
        };
        let chart = LineChart { series: vec![s("a", 1.0), s("b", 2.0)], x_integer_ticks: true, ..LineChart::default() };
        let fig = LineFigure(&chart);
        let p = fig.prepare();
        assert!(p.log2_x);
        let ratio = p.cleaned[1][3].0 / p.cleaned[0][3].0;
        assert!((ratio - 0.06f64.exp2()).abs() < 1e-9, "{ratio}");
        let caption = fig.caption();
        assert!(caption.iter().any(|l| l.contains("Logarithmic x axis (base 2)")), "{caption:?}");
        assert!(caption.iter().any(|l| l.contains("of a doubling")), "{caption:?}");
        // It draws.
        let mut svg = String::new();
        {
            let root = plotters::backend::SVGBackend::with_string(&mut svg, (800, 600)).into_drawing_area();
            fig.draw(&root, Quirks::SVG).map_err(|e| format!("{e:?}")).unwrap();
        }
        let texts: Vec<&str> = svg.lines().map(str::trim).filter(|l| ["1", "2", "4", "8"].contains(l)).collect();
        assert_eq!(texts, ["1", "2", "4", "8"], "x labelled at the doublings, once each");
    }

    #[test]
    fn intervals_with_an_unusable_or_reversed_end_draw_no_bar() {
        let s = Series {
            label: "s".into(),
            points: vec![(1.0, 1.0), (2.0, 2.0), (3.0, 3.0), (f64::NAN, 4.0)],
            interval: vec![Some((0.5, f64::NAN)), Some((2.5, 1.5)), Some((2.0, 4.0))],
            ..Series::default()
        };
        let c = cleaned(&s);
        assert_eq!(c.len(), 3);
        assert_eq!(c.iter().map(|p| p.2).collect::<Vec<_>>(), [None, None, Some((2.0, 4.0))]);
    }

    #[test]
    fn a_chart_with_identical_series_says_so_in_its_caption() {
        let s = |label: &str| Series { label: label.into(), points: vec![(1.0, 2.0)], ..Series::default() };
        let chart = LineChart { series: vec![s("tcp-reno"), s("tcp-newreno")], ..LineChart::default() };
        let fig = LineFigure(&chart);
        assert_eq!(fig.prepare().series.len(), 1);
        assert!(fig.caption().iter().any(|l| l == IDENTICAL_NOTE));
        let chart = LineChart { series: vec![s("tcp-reno")], caption: vec!["n = 2".into()], ..LineChart::default() };
        assert_eq!(LineFigure(&chart).caption(), ["n = 2"]);
    }
}
