//! Quantities over time: the two stacked panels of a thesis-style trace
//! figure (in-order delivery above; ATP's delay feedback or TCP's
//! congestion window below), and one line per flow. Counts per time window
//! are drawn as steps, one per window: nothing is interpolated between
//! windows.

use plotters::prelude::*;

use super::axes::{
    axis_range, chart, extent, round_up_end, unit, usable_points, AxisRule, Frame, Mesh, Ticks, FIGURE, PANEL,
};
use super::identical::{merge_time_series, IDENTICAL_NOTE};
use super::legend::{rgb, split_off_strip, Entry, Legend, Marker, Place, Polyline};
use super::render::{titled, Drawn, Figure, Quirks, Root};
use super::style::{indexed, Dash, MarkerShape, SeriesStyle};
use super::{MultiTraceChart, TraceChart, TracePanel, Windows, W};

const D_MAX_COLOR: RGBColor = RGBColor(0x1a, 0x9e, 0x1a);
const D_S_COLOR: RGBColor = RGBColor(0x1f, 0x4e, 0xd8);
const D_AVG_COLOR: RGBColor = RGBColor(0xe0, 0x1e, 0xb4);
/// Light blue, as seed 000 Fig. 7b draws D_avg′.
const D_AVG_RECEIVED_COLOR: RGBColor = RGBColor(0x3c, 0xc8, 0xf0);
const GOODPUT_COLOR: RGBColor = RGBColor(0x1f, 0x3a, 0x93);
const CWND_COLOR: RGBColor = RGBColor(0xd6, 0x27, 0x28);
const ROUTE_FAILURE_COLOR: RGBColor = RGBColor(0xe6, 0x7e, 0x00);

/// Series with at most this many points get markers too.
const MARKER_MAX_POINTS: usize = 40;

/// What a panel draws of one series.
enum Layer {
    /// A line, `width` pixels wide, in a dash, with markers if given.
    Line { points: Vec<(f64, f64)>, color: RGBColor, width: u32, dash: Dash, marker: Option<(MarkerShape, i32)> },
    /// Points alone.
    Points { points: Vec<(f64, f64)>, color: RGBColor, radius: i32 },
}

impl Layer {
    fn points(&self) -> &[(f64, f64)] {
        match self {
            Layer::Line { points, .. } | Layer::Points { points, .. } => points,
        }
    }

    /// A solid line without markers.
    fn line(points: Vec<(f64, f64)>, color: RGBColor) -> Layer {
        Layer::Line { points, color, width: 2, dash: Dash::Solid, marker: None }
    }
}

/// One plot over time: its axes, its series and their legend.
struct Panel<'a> {
    x_desc: &'a str,
    y_desc: &'a str,
    y_labels: usize,
    layers: Vec<Layer>,
    legend: Legend,
    /// A y range shared with other panels (one per flow, compared by
    /// eye), instead of the panel's own.
    y_fixed: Option<(f64, f64)>,
}

impl Panel<'_> {
    /// From zero (rates, delays, windows and byte counts are never
    /// negative, and a rate axis that starts elsewhere misleads) to a
    /// little above the largest value.
    fn y_range(&self) -> (f64, f64) {
        if let Some(y) = self.y_fixed {
            return y;
        }
        let ys = self.layers.iter().flat_map(|l| l.points().iter().map(|p| p.1));
        let (lo, hi) = axis_range(extent(ys.clone()), AxisRule { pad: 0.06, zero_floor: true, integer: false });
        if extent(ys).is_some_and(|(dlo, _)| dlo >= 0.0) {
            (0.0, hi)
        } else {
            (lo, hi)
        }
    }

    /// Every series in plot units (see [`Legend::place`]).
    fn unit_lines(&self, t: (f64, f64)) -> Vec<Vec<(f64, f64)>> {
        let y = self.y_range();
        self.layers
            .iter()
            .map(|l| l.points().iter().map(|&(px, py)| (unit(px, t, false), unit(py, y, false))).collect())
            .collect()
    }

    /// Where its legend goes on `area` with `frame`.
    fn place<DB: DrawingBackend>(&self, area: &Root<DB>, frame: Frame, t: (f64, f64)) -> Place {
        Legend::place(self.legend.size(area), &self.unit_lines(t), frame.plot_px(area.dim_in_pixel()))
    }

    fn draw<DB: DrawingBackend>(
        &self,
        area: &Root<DB>,
        frame: Frame,
        t: (f64, f64),
        (place, strip): (Place, Option<&Root<DB>>),
        q: Quirks,
    ) -> Drawn<DB> {
        let y = self.y_range();
        let mesh = Mesh {
            x_desc: self.x_desc,
            y_desc: self.y_desc,
            x: Ticks::Linear(t, 10),
            y: Ticks::Linear(y, self.y_labels),
        };
        let mut chart = chart(area, frame, t.0..t.1, y.0..y.1, &mesh, q)?;
        for layer in &self.layers {
            match layer {
                Layer::Line { points, color, width, dash, marker } => {
                    let line = Polyline::new(points.iter().copied(), *color, *width, q).dashed(*dash);
                    chart.draw_series(std::iter::once(line))?;
                    if let Some((shape, r)) = *marker {
                        chart.draw_series(points.iter().map(|&p| Marker::new(p, shape, r, *color)))?;
                    }
                }
                Layer::Points { points, color, radius } => {
                    chart.draw_series(points.iter().map(|&p| Marker::new(p, MarkerShape::Circle, *radius, *color)))?;
                }
            }
        }
        let empty = self.layers.iter().all(|l| l.points().is_empty());
        self.legend.finish(chart.plotting_area(), empty, place, strip, q)
    }
}

/// A time axis covering every panel's points.
fn time_axis(panels: &[&Panel]) -> (f64, f64) {
    let ts = panels.iter().flat_map(|p| p.layers.iter().flat_map(|l| l.points().iter().map(|p| p.0)));
    round_up_end(axis_range(extent(ts), AxisRule { pad: 0.0, zero_floor: true, integer: false }))
}

/// A step line through (t, value) changes: each value holds until the next.
fn steps(changes: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(2 * changes.len());
    for (i, &(t, v)) in changes.iter().enumerate() {
        if i > 0 {
            out.push((t, changes[i - 1].1));
        }
        out.push((t, v));
    }
    out
}

/// The step line of values counted per window ending at their time: each
/// value held flat over the `step_s` before its time (never before zero),
/// the next one joined by a vertical rise or fall. A line through the
/// values themselves would invent rates between windows.
pub(super) fn window_steps(values: &[(f64, f64)], step_s: f64) -> Vec<(f64, f64)> {
    if step_s.is_nan() || step_s <= 0.0 {
        return values.to_vec();
    }
    values.iter().flat_map(|&(t, v)| [((t - step_s).max(0.0), v), (t, v)]).collect()
}

/// What a windowed series' legend entry says.
fn windowed_label(what: &str, windows: Option<Windows>) -> String {
    match windows {
        Some(w) => format!("{what} ({})", w.describe()),
        None => what.to_string(),
    }
}

/// The points of a series over time as drawn: steps per window, or as
/// given.
fn drawn(points: &[(f64, f64)], windows: Option<Windows>) -> Vec<(f64, f64)> {
    let points = usable_points(points);
    match windows {
        Some(w) => window_steps(&points, w.step_s),
        None => points,
    }
}

pub(super) struct TraceFigure<'a>(pub &'a TraceChart);

/// What the delay panel's symbols mean (seed 001 §2.2, Fig. 5.2; seed 000
/// Fig. 7b), once per figure.
pub(super) const DELAY_SYMBOLS: &str =
    "D_max: the largest per-hop delay (queueing + transmission, \u{d7}\u{3b7} when the \
    channel was idle) stamped into a data packet along its path, as it arrived; D_s: the sender's packet spacing \
    (rate 1/D_s); D_avg: the receiver's moving average of D_max, fed back once per epoch; D_avg': that feedback as \
    it reached the sender.";

impl TraceFigure<'_> {
    fn lower_panel(&self) -> Panel<'static> {
        let c = self.0;
        match c.lower {
            TracePanel::Delay => {
                let delays = [
                    ("D_max", usable_points(&c.d_max), D_MAX_COLOR),
                    ("D_s", usable_points(&c.d_s), D_S_COLOR),
                    ("D_avg", usable_points(&c.d_avg), D_AVG_COLOR),
                    ("D_avg' (at sender)", usable_points(&c.d_avg_received), D_AVG_RECEIVED_COLOR),
                ];
                let dense = delays.iter().map(|d| d.1.len()).max().unwrap_or(0) > 400;
                let radius = if dense { 2 } else { 3 };
                Panel {
                    x_desc: "Time (s)",
                    y_desc: "Delay (ms)",
                    y_labels: 8,
                    y_fixed: None,
                    legend: Legend(
                        delays.iter().map(|d| Entry::new(d.0, d.2, false, Some((MarkerShape::Circle, 5)))).collect(),
                    ),
                    layers: delays
                        .into_iter()
                        .map(|(_, points, color)| Layer::Points { points, color, radius })
                        .collect(),
                }
            }
            TracePanel::Cwnd => Panel {
                x_desc: "Time (s)",
                y_desc: "Congestion window (segments)",
                y_labels: 8,
                y_fixed: None,
                legend: Legend(vec![Entry::new("cwnd", CWND_COLOR, true, None)]),
                layers: vec![Layer::line(steps(&usable_points(&c.cwnd_segments)), CWND_COLOR)],
            },
        }
    }
}

impl Figure for TraceFigure<'_> {
    const SIZE: (u32, u32) = (W, 1000);

    fn caption(&self) -> Vec<String> {
        let mut lines = self.0.caption.clone();
        if self.0.lower == TracePanel::Delay {
            lines.push(DELAY_SYMBOLS.into());
        }
        lines
    }

    fn draw<DB: DrawingBackend>(&self, root: &Root<DB>, q: Quirks) -> Drawn<DB> {
        let c = self.0;
        let label = windowed_label("in-order delivery", c.goodput_windows);
        let mut upper = Panel {
            x_desc: "Time (s)",
            y_desc: "In-order delivery (Mbit/s)",
            y_labels: 8,
            y_fixed: None,
            legend: Legend(vec![Entry::new(label, GOODPUT_COLOR, true, None)]),
            layers: vec![Layer::line(drawn(&c.goodput, c.goodput_windows), GOODPUT_COLOR)],
        };
        if !c.route_failures.is_empty() {
            // On the time axis, as seed 002 Figs. 8–9 mark them.
            let points = usable_points(&c.route_failures.iter().map(|&t| (t, 0.0)).collect::<Vec<_>>());
            upper.legend.0.push(Entry::new(
                "Route failure",
                ROUTE_FAILURE_COLOR,
                false,
                Some((MarkerShape::Circle, 5)),
            ));
            upper.layers.push(Layer::Points { points, color: ROUTE_FAILURE_COLOR, radius: 5 });
        }
        let lower = self.lower_panel();
        // Both panels share the time axis and the width of their plots; if
        // either legend has no free corner, both legends go in strips of
        // one height above their plots, so that the plots stay alike.
        let t = time_axis(&[&upper, &lower]);
        let body = titled(root, &c.title)?;
        let half = body.dim_in_pixel().1 / 2;
        let (top, bottom) = body.split_vertically(half);
        let places = [upper.place(&top, PANEL, t), lower.place(&bottom, PANEL, t)];
        let strip = if places.contains(&Place::Above) {
            let width = PANEL.plot_px(top.dim_in_pixel()).0;
            upper.legend.strip_height(&top, width).max(lower.legend.strip_height(&bottom, width))
        } else {
            0
        };
        for (panel, area, place) in [(&upper, top, places[0]), (&lower, bottom, places[1])] {
            let (strip, plot) = split_off_strip(&area, strip, PANEL);
            let place = if strip.is_some() { Place::Above } else { place };
            panel.draw(&plot, PANEL, t, (place, strip.as_ref()), q)?;
        }
        Ok(())
    }
}

pub(super) struct MultiTraceFigure<'a>(pub &'a MultiTraceChart);

/// Windowed series (rates per window, which jump between zero and bursts)
/// of this many flows get a panel each, one above the other on one time
/// axis and one y scale (seed 001 Fig. 5.9 draws its stacked flows so):
/// drawn over each other, their steps hide one another.
const STACKED_SERIES: std::ops::RangeInclusive<usize> = 2..=6;
/// The height of one flow's panel, in pixels.
const STACKED_PANEL_PX: u32 = 240;
/// The height above the panels (the title), in pixels.
const STACKED_TITLE_PX: u32 = 70;
/// Below a stacked panel that is not the last: its time tick labels.
const STACKED_TICKS_PX: u32 = 36;

impl MultiTraceFigure<'_> {
    /// Each series after merging identical ones, in its look.
    fn layers(&self) -> Vec<(Entry, Layer)> {
        let c = self.0;
        let (series, _) = merge_time_series(&c.series);
        series
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let look: SeriesStyle = s.style.unwrap_or_else(|| indexed(i));
                let points = drawn(&s.points, c.windows);
                // Markers on a few points given as such; none on steps.
                let marker = (c.windows.is_none() && s.points.len() <= MARKER_MAX_POINTS).then_some((look.marker, 5));
                let color = rgb(look.color);
                let entry = Entry { dash: look.dash, ..Entry::new(&s.label, color, true, marker) };
                (entry, Layer::Line { points, color, width: 2, dash: look.dash, marker })
            })
            .collect()
    }

    /// How many panels it draws stacked, if it stacks them.
    fn stacked(&self) -> Option<usize> {
        let n = merge_time_series(&self.0.series).0.len();
        (self.0.windows.is_some() && STACKED_SERIES.contains(&n)).then_some(n)
    }

    /// One panel per series, sharing the time axis and the y range.
    fn draw_stacked<DB: DrawingBackend>(&self, root: &Root<DB>, n: usize, q: Quirks) -> Drawn<DB> {
        let c = self.0;
        // A panel is too short for the whole y label: its unit, the part
        // in parentheses ("In-order delivery (Mbit/s)"); the title says what.
        let unit = c.y_label.rsplit_once('(').and_then(|(_, u)| u.strip_suffix(')')).unwrap_or(&c.y_label);
        let panels: Vec<Panel> = self
            .layers()
            .into_iter()
            .map(|(entry, layer)| Panel {
                x_desc: &c.x_label,
                y_desc: unit,
                y_labels: 5,
                layers: vec![layer],
                legend: Legend(vec![entry]),
                y_fixed: None,
            })
            .collect();
        let refs: Vec<&Panel> = panels.iter().collect();
        let t = time_axis(&refs);
        let ys = panels.iter().map(Panel::y_range);
        let y = (0.0, ys.map(|r| r.1).fold(0.0, f64::max).max(f64::MIN_POSITIVE));
        let body = titled(root, &c.title)?;
        // The time axis is named once, under the last panel; the others
        // keep their tick labels only, and the room a name would take.
        let upper = Frame { x_label_area: STACKED_TICKS_PX, ..PANEL };
        for (i, (mut panel, area)) in panels.into_iter().zip(body.split_evenly((n, 1))).enumerate() {
            panel.y_fixed = Some(y);
            let frame = if i + 1 < n {
                panel.x_desc = "";
                upper
            } else {
                PANEL
            };
            let place = panel.place(&area, frame, t);
            let height = if place == Place::Above {
                panel.legend.strip_height(&area, frame.plot_px(area.dim_in_pixel()).0)
            } else {
                0
            };
            let (strip, plot) = split_off_strip(&area, height, frame);
            panel.draw(&plot, frame, t, (place, strip.as_ref()), q)?;
        }
        Ok(())
    }
}

impl Figure for MultiTraceFigure<'_> {
    fn size(&self) -> (u32, u32) {
        match self.stacked() {
            Some(n) => (W, STACKED_TITLE_PX + n as u32 * STACKED_PANEL_PX),
            None => Self::SIZE,
        }
    }

    fn caption(&self) -> Vec<String> {
        let mut lines = self.0.caption.clone();
        if merge_time_series(&self.0.series).1 {
            lines.push(IDENTICAL_NOTE.into());
        }
        if self.stacked().is_some() {
            lines.push("One panel per flow, on one time axis and one y scale.".into());
        }
        lines
    }

    fn draw<DB: DrawingBackend>(&self, root: &Root<DB>, q: Quirks) -> Drawn<DB> {
        if let Some(n) = self.stacked() {
            return self.draw_stacked(root, n, q);
        }
        let c = self.0;
        let mut panel = Panel {
            x_desc: &c.x_label,
            y_desc: &c.y_label,
            y_labels: 10,
            layers: vec![],
            legend: Legend(vec![]),
            y_fixed: None,
        };
        for (entry, layer) in self.layers() {
            panel.legend.0.push(entry);
            panel.layers.push(layer);
        }
        let t = time_axis(&[&panel]);
        let body = titled(root, &c.title)?;
        let (place, plot, strip) = panel.legend.layout(&body, FIGURE, &panel.unit_lines(t));
        panel.draw(&plot, FIGURE, t, (place, strip.as_ref()), q)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::render::render;

    /// The RGB pixels of a PNG and its width.
    fn decode(path: &std::path::Path) -> (Vec<u8>, usize) {
        let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).unwrap();
        buf.truncate(info.buffer_size());
        (buf, info.width as usize)
    }

    #[test]
    fn a_wide_noisy_line_stays_above_the_x_axis_in_the_png() {
        // 300 s of 100 ms samples (several to a pixel), mostly zero with
        // short bursts, like a starving TCP flow: mitred joins of the
        // tiny segments used to spike below the axis.
        let goodput = (0..3000).map(|k| (k as f64 * 0.1, if k % 37 < 2 { 0.5 } else { 0.0 })).collect();
        let chart = TraceChart { title: "spikes".into(), goodput, ..Default::default() };
        let dir = tempfile::tempdir().unwrap();
        let paths = render(&TraceFigure(&chart), &dir.path().join("t")).unwrap();
        let (rgb, width) = decode(&paths[0]);
        let row = |y: usize| rgb[y * width * 3..(y + 1) * width * 3].chunks(3);
        // The upper panel's x axis: the row with the most black pixels.
        let upper = 0..(TraceFigure::SIZE.1 as usize / 2);
        let axis = upper.clone().max_by_key(|&y| row(y).filter(|p| p.iter().all(|&c| c < 40)).count()).unwrap();
        let is_line = |p: &[u8]| p.iter().zip([0x1f, 0x3a, 0x93]).all(|(&a, b)| (a as i32 - b).abs() < 30);
        let above = (upper.start..axis).map(|y| row(y).filter(|p| is_line(p)).count()).sum::<usize>();
        let below = (axis + 2..upper.end).map(|y| row(y).filter(|p| is_line(p)).count()).sum::<usize>();
        assert!(above > 1000, "the line is drawn ({above} pixels)");
        assert_eq!(below, 0, "line pixels below the x axis at row {axis}");
    }

    #[test]
    fn route_failures_are_marked_on_the_time_axis() {
        let goodput = (0..100).map(|k| (k as f64 * 0.1, 1.0)).collect::<Vec<_>>();
        let orange = |p: &[u8]| p.iter().zip([0xe6, 0x7e, 0x00]).all(|(&a, b)| (a as i32 - b).abs() < 30);
        let count = |route_failures: Vec<f64>| {
            let chart =
                TraceChart { title: "t".into(), goodput: goodput.clone(), route_failures, ..Default::default() };
            let dir = tempfile::tempdir().unwrap();
            let paths = render(&TraceFigure(&chart), &dir.path().join("t")).unwrap();
            let (rgb, _) = decode(&paths[0]);
            rgb.chunks(3).filter(|p| orange(p)).count()
        };
        assert_eq!(count(vec![]), 0);
        let one = count(vec![5.0]);
        assert!(one > 20, "{one} marker pixels");
        assert!(count(vec![2.0, 5.0, 8.0]) > one, "three markers draw more than one");
    }

    #[test]
    fn d_avg_at_the_sender_is_drawn_in_its_own_colour() {
        let light_blue = |p: &[u8]| p.iter().zip([0x3c, 0xc8, 0xf0]).all(|(&a, b)| (a as i32 - b).abs() < 20);
        let count = |d_avg_received: Vec<(f64, f64)>| {
            let d_avg = vec![(0.1, 3.0), (0.5, 2.0)];
            let chart = TraceChart { title: "t".into(), d_avg, d_avg_received, ..Default::default() };
            let dir = tempfile::tempdir().unwrap();
            let paths = render(&TraceFigure(&chart), &dir.path().join("t")).unwrap();
            let (rgb, _) = decode(&paths[0]);
            rgb.chunks(3).filter(|p| light_blue(p)).count()
        };
        // The legend entry alone, then the legend and two points.
        let legend_only = count(vec![]);
        assert!(count(vec![(0.2, 3.0), (0.3, 1.0)]) > legend_only + 20);
    }

    #[test]
    fn windowed_values_are_drawn_as_flat_steps_without_interpolation() {
        // 200 ms windows every 100 ms, as the trace figures count
        // in-order delivery: each value flat over the 100 ms before its
        // time, rises and falls vertical.
        let values = [(0.1, 2.0), (0.2, 6.0), (0.3, 0.0)];
        let st = window_steps(&values, 0.1);
        assert_eq!(st.len(), 6);
        for pair in st.chunks(2) {
            assert_eq!(pair[0].1, pair[1].1, "flat within a window: {pair:?}");
            assert!((pair[1].0 - pair[0].0 - 0.1).abs() < 1e-12);
        }
        for w in st.windows(2).skip(1).step_by(2) {
            assert!((w[0].0 - w[1].0).abs() < 1e-12, "vertical between windows: {w:?}");
        }
        assert_eq!(st[0], (0.0, 2.0));
        // No value between two windows' values is drawn anywhere.
        assert!(st.iter().all(|p| values.iter().any(|v| v.1 == p.1)));
        // No step given: the values as they are.
        assert_eq!(window_steps(&values, 0.0), values);
        assert_eq!(Windows { length_s: 0.2, step_s: 0.1 }.describe(), "200 ms windows, every 100 ms");
        assert_eq!(
            windowed_label("in-order delivery", Some(Windows { length_s: 0.2, step_s: 0.2 })),
            "in-order delivery (200 ms windows)"
        );
    }

    #[test]
    fn a_window_holds_its_value_until_the_next_change() {
        assert!(steps(&[]).is_empty());
        assert_eq!(steps(&[(0.0, 1.0)]), vec![(0.0, 1.0)]);
        let st = steps(&[(0.0, 1.0), (2.0, 4.0), (3.0, 2.0)]);
        assert_eq!(st, vec![(0.0, 1.0), (2.0, 1.0), (2.0, 4.0), (3.0, 4.0), (3.0, 2.0)]);
    }
}
