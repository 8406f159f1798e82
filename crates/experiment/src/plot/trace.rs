//! Quantities over time: the two stacked panels of a thesis-style trace
//! figure (goodput above; ATP's delay feedback or TCP's congestion window
//! below), and one line per flow.

use plotters::prelude::*;

use super::axes::{axis_range, chart, extent, round_up_end, unit, usable_points, AxisRule, Frame, Mesh, FIGURE, PANEL};
use super::legend::{color, shape, split_off_column, Entry, Legend, Marker, Place, Polyline, Shape};
use super::render::{titled, Drawn, Figure, Quirks, Root};
use super::{TraceChart, TracePanel, W};

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
    /// A line, `width` pixels wide, with markers if given.
    Line { points: Vec<(f64, f64)>, color: RGBColor, width: u32, marker: Option<(Shape, i32)> },
    /// Points alone.
    Points { points: Vec<(f64, f64)>, color: RGBColor, radius: i32 },
}

impl Layer {
    fn points(&self) -> &[(f64, f64)] {
        match self {
            Layer::Line { points, .. } | Layer::Points { points, .. } => points,
        }
    }
}

/// One plot over time: its axes, its series and their legend.
struct Panel<'a> {
    x_desc: &'a str,
    y_desc: &'a str,
    y_labels: usize,
    layers: Vec<Layer>,
    legend: Legend,
}

impl Panel<'_> {
    fn y_range(&self) -> (f64, f64) {
        let ys = self.layers.iter().flat_map(|l| l.points().iter().map(|p| p.1));
        axis_range(extent(ys), AxisRule { pad: 0.06, zero_floor: true, integer: false })
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
        (place, column): (Place, Option<&Root<DB>>),
        q: Quirks,
    ) -> Drawn<DB> {
        let y = self.y_range();
        let mesh = Mesh { x_desc: self.x_desc, y_desc: self.y_desc, x_integer: None, y_labels: self.y_labels };
        let mut chart = chart(area, frame, t.0..t.1, y.0..y.1, &mesh, q)?;
        for layer in &self.layers {
            match layer {
                Layer::Line { points, color, width, marker } => {
                    chart.draw_series(std::iter::once(Polyline::new(points.iter().copied(), *color, *width, q)))?;
                    if let Some((shape, r)) = *marker {
                        chart.draw_series(points.iter().map(|&p| Marker::new(p, shape, r, *color)))?;
                    }
                }
                Layer::Points { points, color, radius } => {
                    chart.draw_series(points.iter().map(|&p| Marker::new(p, Shape::Circle, *radius, *color)))?;
                }
            }
        }
        let empty = self.layers.iter().all(|l| l.points().is_empty());
        self.legend.finish(chart.plotting_area(), empty, place, column, q)
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

pub(super) struct TraceFigure<'a>(pub &'a TraceChart);

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
                    legend: Legend(
                        delays.iter().map(|d| Entry::new(d.0, d.2, false, Some((Shape::Circle, 5)))).collect(),
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
                legend: Legend(vec![Entry::new("cwnd", CWND_COLOR, true, None)]),
                layers: vec![Layer::Line {
                    points: steps(&usable_points(&c.cwnd_segments)),
                    color: CWND_COLOR,
                    width: 2,
                    marker: None,
                }],
            },
        }
    }
}

impl Figure for TraceFigure<'_> {
    const SIZE: (u32, u32) = (W, 1000);

    fn draw<DB: DrawingBackend>(&self, root: &Root<DB>, q: Quirks) -> Drawn<DB> {
        let c = self.0;
        let mut upper = Panel {
            x_desc: "Time (s)",
            y_desc: "Goodput (Mbit/s)",
            y_labels: 8,
            legend: Legend(vec![Entry::new("Instantaneous goodput", GOODPUT_COLOR, true, None)]),
            layers: vec![Layer::Line {
                points: usable_points(&c.goodput),
                color: GOODPUT_COLOR,
                width: 2,
                marker: None,
            }],
        };
        if !c.route_failures.is_empty() {
            // On the time axis, as seed 002 Figs. 8–9 mark them.
            let points = usable_points(&c.route_failures.iter().map(|&t| (t, 0.0)).collect::<Vec<_>>());
            upper.legend.0.push(Entry::new("Route failure", ROUTE_FAILURE_COLOR, false, Some((Shape::Circle, 5))));
            upper.layers.push(Layer::Points { points, color: ROUTE_FAILURE_COLOR, radius: 5 });
        }
        let lower = self.lower_panel();
        // Both panels share the time axis, and so the width of the plots:
        // if either legend has no free corner, both go into one column.
        let t = time_axis(&[&upper, &lower]);
        let body = titled(root, &c.title)?;
        let half = body.dim_in_pixel().1 / 2;
        let (probe, _) = body.split_vertically(half);
        let places = [upper.place(&probe, PANEL, t), lower.place(&probe, PANEL, t)];
        let width = if places.contains(&Place::Right) {
            upper.legend.column_width(&body).max(lower.legend.column_width(&body))
        } else {
            0
        };
        let (plots, column) = split_off_column(&body, width);
        let (top, bottom) = plots.split_vertically(half);
        let columns = column.map(|c| {
            let (a, b) = c.split_vertically(half);
            [a.margin(PANEL.margin, 0, 0, 0), b.margin(PANEL.margin, 0, 0, 0)]
        });
        let place = |i: usize| if columns.is_some() { Place::Right } else { places[i] };
        upper.draw(&top, PANEL, t, (place(0), columns.as_ref().map(|c| &c[0])), q)?;
        lower.draw(&bottom, PANEL, t, (place(1), columns.as_ref().map(|c| &c[1])), q)
    }
}

pub(super) struct MultiTraceFigure<'a> {
    pub title: &'a str,
    pub series: &'a [(String, Vec<(f64, f64)>)],
    pub x_label: &'a str,
    pub y_label: &'a str,
}

impl Figure for MultiTraceFigure<'_> {
    fn draw<DB: DrawingBackend>(&self, root: &Root<DB>, q: Quirks) -> Drawn<DB> {
        let mut panel =
            Panel { x_desc: self.x_label, y_desc: self.y_label, y_labels: 10, layers: vec![], legend: Legend(vec![]) };
        for (i, (label, points)) in self.series.iter().enumerate() {
            let points = usable_points(points);
            let marker = (points.len() <= MARKER_MAX_POINTS).then_some((shape(i), 5));
            panel.legend.0.push(Entry::new(label, color(i), true, marker));
            panel.layers.push(Layer::Line { points, color: color(i), width: 2, marker });
        }
        let t = time_axis(&[&panel]);
        let body = titled(root, self.title)?;
        let (place, plot, column) = panel.legend.layout(&body, FIGURE, &panel.unit_lines(t));
        panel.draw(&plot, FIGURE, t, (place, column.as_ref()), q)
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
    fn a_window_holds_its_value_until_the_next_change() {
        assert!(steps(&[]).is_empty());
        assert_eq!(steps(&[(0.0, 1.0)]), vec![(0.0, 1.0)]);
        let st = steps(&[(0.0, 1.0), (2.0, 4.0), (3.0, 2.0)]);
        assert_eq!(st, vec![(0.0, 1.0), (2.0, 1.0), (2.0, 4.0), (3.0, 4.0), (3.0, 2.0)]);
    }
}
