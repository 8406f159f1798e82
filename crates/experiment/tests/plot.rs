//! The figures: each kind writes a real PNG (decodable, not one flat colour,
//! with text drawn) and an SVG (text with the title and legend labels);
//! output is deterministic; odd data (empty, single, equal, NaN/inf) is drawn
//! without panicking; I/O errors name the file.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use meshbed_experiment::plot::{
    cdf_chart, line_chart, multi_trace_chart, trace_chart, CdfChart, CdfSeries, Dash, LineChart, MarkerShape,
    MultiTraceChart, PlotError, Rgb, Series, SeriesStyle, TimeSeries, TraceChart, TracePanel, Windows, YScale,
};

/// A CDF chart of labelled sample sets.
fn cdf(title: &str, x_label: &str, series: &[(String, Vec<f64>)]) -> CdfChart {
    CdfChart {
        title: title.into(),
        x_label: x_label.into(),
        series: series.iter().map(|(l, v)| CdfSeries { label: l.clone(), samples: v.clone(), style: None }).collect(),
        key: None,
        caption: vec![],
    }
}

/// A chart of labelled series over time.
fn over_time(title: &str, series: &[(String, Vec<(f64, f64)>)], x_label: &str, y_label: &str) -> MultiTraceChart {
    MultiTraceChart {
        title: title.into(),
        x_label: x_label.into(),
        y_label: y_label.into(),
        series: series.iter().map(|(l, p)| TimeSeries { label: l.clone(), points: p.clone(), style: None }).collect(),
        windows: None,
        caption: vec![],
    }
}

/// Intervals of ± `errors` around the points' y (none where missing).
fn around(points: &[(f64, f64)], errors: Option<Vec<f64>>) -> Vec<Option<(f64, f64)>> {
    let errors = errors.unwrap_or_default();
    points.iter().enumerate().map(|(i, p)| errors.get(i).map(|e| (p.1 - e, p.1 + e))).collect()
}

const PNG_MAGIC: [u8; 8] = [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];

/// A decoded RGB PNG.
struct Image {
    width: usize,
    height: usize,
    rgb: Vec<u8>,
}

impl Image {
    fn pixel(&self, x: usize, y: usize) -> [u8; 3] {
        let i = (y * self.width + x) * 3;
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }

    fn distinct_colours(&self) -> usize {
        self.rgb.chunks(3).map(|c| [c[0], c[1], c[2]]).collect::<HashSet<_>>().len()
    }

    /// Dark (text-like) pixels in the rows `y0..y1`.
    fn dark_pixels_in_rows(&self, y0: usize, y1: usize) -> usize {
        (y0..y1.min(self.height))
            .flat_map(|y| (0..self.width).map(move |x| (x, y)))
            .filter(|&(x, y)| self.pixel(x, y).iter().all(|&c| c < 90))
            .count()
    }

    fn has_colour_near(&self, target: [u8; 3]) -> bool {
        self.rgb.chunks(3).any(|c| c.iter().zip(target).all(|(&a, b)| (a as i32 - b as i32).abs() <= 12))
    }
}

fn decode_png(path: &Path) -> Image {
    let bytes = std::fs::read(path).unwrap();
    assert!(bytes.len() > 1000, "{} is tiny", path.display());
    assert_eq!(bytes[..8], PNG_MAGIC, "{} is not a PNG", path.display());
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    assert_eq!(info.bit_depth, png::BitDepth::Eight);
    buf.truncate(info.buffer_size());
    Image { width: info.width as usize, height: info.height as usize, rgb: buf }
}

fn read_svg(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.starts_with("<svg"), "{} is not an SVG", path.display());
    assert!(text.trim_end().ends_with("</svg>"));
    text
}

/// The checks every figure passes: two files, PNG first; a real picture
/// with text in the title band; an SVG naming every expected string.
fn check_outputs(paths: &[PathBuf], stem: &Path, svg_must_contain: &[&str]) -> Image {
    assert_eq!(paths.len(), 2);
    assert_eq!(paths[0], stem.with_extension("png"));
    assert_eq!(paths[1], stem.with_extension("svg"));
    let img = decode_png(&paths[0]);
    assert!(img.width >= 800 && img.height >= 600);
    assert!(img.distinct_colours() > 20, "flat image: {} colours", img.distinct_colours());
    // The title is rasterised text: dark anti-aliased pixels at the top.
    assert!(img.dark_pixels_in_rows(0, 60) > 300, "no title text drawn in {}", paths[0].display());
    let svg = read_svg(&paths[1]);
    for s in svg_must_contain {
        assert!(svg.contains(s), "{} lacks {s:?}", paths[1].display());
    }
    img
}

fn sample_line_chart() -> LineChart {
    LineChart {
        title: "Goodput vs hops".into(),
        x_label: "Number of hops".into(),
        y_label: "Goodput (Mbit/s)".into(),
        series: vec![
            Series {
                label: "ATP".into(),
                points: (1..=6).map(|h| (h as f64, 2.0 / h as f64)).collect(),
                interval: (1..=6).map(|h| Some((1.9 / h as f64, 2.1 / h as f64))).collect(),
                ..Default::default()
            },
            Series {
                label: "TCP NewReno".into(),
                points: (1..=6).map(|h| (h as f64, 1.6 / h as f64)).collect(),
                ..Default::default()
            },
        ],
        x_integer_ticks: true,
        ..Default::default()
    }
}

#[test]
fn line_chart_writes_png_and_svg() {
    let dir = tempfile::tempdir().unwrap();
    let stem = dir.path().join("line");
    let paths = line_chart(&sample_line_chart(), &stem).unwrap();
    let img =
        check_outputs(&paths, &stem, &["Goodput vs hops", "Number of hops", "Goodput (Mbit/s)", "ATP", "TCP NewReno"]);
    // The series colours (tab10 blue and orange) are on the picture.
    assert!(img.has_colour_near([0x1f, 0x77, 0xb4]));
    assert!(img.has_colour_near([0xff, 0x7f, 0x0e]));
    // Integer ticks only: no "0.5"-style x labels. The y labels are nice
    // numbers without floating-point noise.
    let svg = std::fs::read_to_string(&paths[1]).unwrap();
    assert!(!svg.contains("0000000"), "noisy tick label");
}

#[test]
fn cdf_chart_writes_png_and_svg() {
    let dir = tempfile::tempdir().unwrap();
    let stem = dir.path().join("cdf");
    let series = vec![
        ("ATP".to_string(), vec![3.0, 1.0, 2.0, 2.0, 5.0]),
        ("TCP".to_string(), (0..500).map(|i| (i as f64).sqrt()).collect()),
    ];
    let paths = cdf_chart(&cdf("Flow goodput CDF", "Goodput (kbit/s)", &series), &stem).unwrap();
    check_outputs(&paths, &stem, &["Flow goodput CDF", "Goodput (kbit/s)", "Empirical CDF", "ATP", "TCP"]);
}

#[test]
fn cdf_of_a_large_sample_stays_small() {
    let dir = tempfile::tempdir().unwrap();
    let stem = dir.path().join("big_cdf");
    let series = vec![("delay".to_string(), (0..200_000).map(|i| (i % 977) as f64).collect())];
    let paths = cdf_chart(&cdf("Delay", "Delay (ms)", &series), &stem).unwrap();
    let svg_len = std::fs::metadata(&paths[1]).unwrap().len();
    assert!(svg_len < 400_000, "SVG of {svg_len} bytes");
}

fn sample_trace() -> TraceChart {
    let t = |k: usize| k as f64 * 0.2;
    TraceChart {
        title: "ATP trace".into(),
        goodput: (0..100).map(|k| (t(k), 0.8 + 0.1 * ((k % 7) as f64))).collect(),
        d_max: (0..100).map(|k| (t(k), 60.0 + (k % 5) as f64)).collect(),
        d_s: (0..100).map(|k| (t(k), 40.0 + (k % 9) as f64)).collect(),
        d_avg: (0..100).map(|k| (t(k), 45.0 + (k % 3) as f64)).collect(),
        ..Default::default()
    }
}

#[test]
fn trace_chart_has_both_panels_and_the_three_delays() {
    let dir = tempfile::tempdir().unwrap();
    let stem = dir.path().join("trace");
    let paths = trace_chart(&sample_trace(), &stem).unwrap();
    let img = check_outputs(
        &paths,
        &stem,
        &["ATP trace", "In-order delivery (Mbit/s)", "Delay (ms)", "Time (s)", "D_max", "D_s", "D_avg"],
    );
    // D_max green, D_s blue, D_avg magenta points.
    assert!(img.has_colour_near([0x1a, 0x9e, 0x1a]), "no green D_max");
    assert!(img.has_colour_near([0x1f, 0x4e, 0xd8]), "no blue D_s");
    assert!(img.has_colour_near([0xe0, 0x1e, 0xb4]), "no magenta D_avg");
    // Two panels: the y descriptions are two separate texts.
    let svg = std::fs::read_to_string(&paths[1]).unwrap();
    assert_eq!(svg.matches("Time (s)").count(), 2);
}

#[test]
fn multi_trace_chart_writes_png_and_svg() {
    let dir = tempfile::tempdir().unwrap();
    let stem = dir.path().join("multi");
    let series: Vec<(String, Vec<(f64, f64)>)> = (0..4)
        .map(|f| {
            let pts = (0..300).map(|k| (k as f64 * 0.1, (f + 1) as f64 * 0.1 + (k % 4) as f64 * 0.01)).collect();
            (format!("Flow {f}"), pts)
        })
        .collect();
    let paths =
        multi_trace_chart(&over_time("Stack topology", &series, "Time (s)", "Goodput (Mbit/s)"), &stem).unwrap();
    check_outputs(&paths, &stem, &["Stack topology", "Time (s)", "Goodput (Mbit/s)", "Flow 0", "Flow 3"]);
}

#[test]
fn output_is_deterministic() {
    let dir = tempfile::tempdir().unwrap();
    let a = line_chart(&sample_line_chart(), &dir.path().join("a")).unwrap();
    let b = line_chart(&sample_line_chart(), &dir.path().join("b")).unwrap();
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(std::fs::read(x).unwrap(), std::fs::read(y).unwrap());
    }
    let a = trace_chart(&sample_trace(), &dir.path().join("ta")).unwrap();
    let b = trace_chart(&sample_trace(), &dir.path().join("tb")).unwrap();
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(std::fs::read(x).unwrap(), std::fs::read(y).unwrap());
    }
}

#[test]
fn parent_directories_are_created_and_dots_in_the_stem_kept() {
    let dir = tempfile::tempdir().unwrap();
    let stem = dir.path().join("deep/er/fig.v2");
    let paths = line_chart(&sample_line_chart(), &stem).unwrap();
    assert_eq!(paths[0], dir.path().join("deep/er/fig.v2.png"));
    assert_eq!(paths[1], dir.path().join("deep/er/fig.v2.svg"));
    assert!(paths.iter().all(|p| p.is_file()));
}

#[test]
fn io_errors_name_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not_a_dir");
    std::fs::write(&file, b"x").unwrap();
    let err = line_chart(&sample_line_chart(), &file.join("fig")).unwrap_err();
    assert!(matches!(err, PlotError::CreateDir { .. }), "{err:?}");
    assert!(err.to_string().contains("not_a_dir"), "{err}");

    // Writing onto a directory fails with the file's name.
    std::fs::create_dir(dir.path().join("taken.png")).unwrap();
    let err = line_chart(&sample_line_chart(), &dir.path().join("taken")).unwrap_err();
    assert!(matches!(err, PlotError::Write { .. }), "{err:?}");
    assert!(err.to_string().contains("taken.png"), "{err}");
}

#[test]
fn special_characters_are_escaped_in_svg() {
    let dir = tempfile::tempdir().unwrap();
    let mut chart = sample_line_chart();
    chart.title = "A <b> & \"c\"".into();
    chart.series[0].label = "x<y".into();
    let paths = line_chart(&chart, &dir.path().join("esc")).unwrap();
    let svg = read_svg(&paths[1]);
    assert!(svg.contains("A &lt;b&gt; &amp; &quot;c&quot;"));
    assert!(svg.contains("x&lt;y"));
}

/// Renders and checks the basics (files exist, PNG decodes, SVG is text).
fn renders(paths: Result<Vec<PathBuf>, PlotError>) {
    let paths = paths.unwrap();
    let img = decode_png(&paths[0]);
    assert!(img.distinct_colours() > 2);
    read_svg(&paths[1]);
}

#[test]
fn line_chart_edge_cases_do_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let s = |label: &str, points: Vec<(f64, f64)>, error: Option<Vec<f64>>| Series {
        label: label.into(),
        interval: around(&points, error),
        points,
        ..Default::default()
    };
    let chart = |series: Vec<Series>, ints: bool| LineChart {
        title: "Edge".into(),
        x_label: "x".into(),
        y_label: "y".into(),
        series,
        x_integer_ticks: ints,
        ..Default::default()
    };
    let nan = f64::NAN;
    let inf = f64::INFINITY;
    let cases = vec![
        chart(vec![], false),
        chart(vec![], true),
        chart(vec![s("empty", vec![], None)], false),
        chart(vec![s("one", vec![(3.0, 7.0)], Some(vec![0.5]))], true),
        chart(vec![s("zero", vec![(0.0, 0.0)], None)], false),
        chart(vec![s("flat", vec![(1.0, 5.0), (2.0, 5.0), (3.0, 5.0)], None)], true),
        chart(vec![s("vertical", vec![(2.0, 1.0), (2.0, 3.0)], None)], false),
        chart(
            vec![s(
                "nan",
                vec![(1.0, nan), (nan, 2.0), (2.0, inf), (-inf, 1.0), (3.0, 1.0), (4.0, 2.0)],
                Some(vec![nan, 0.1, inf, 0.2]),
            )],
            false,
        ),
        chart(vec![s("all nan", vec![(nan, nan), (inf, -inf)], Some(vec![nan]))], true),
        chart(vec![s("negative", vec![(-5.0, -3.0), (-1.0, -10.0)], Some(vec![-1.0, 2.0]))], false),
        chart(vec![s("huge", vec![(0.0, 1e308), (1.0, -1e308), (2.0, 1.0)], None)], false),
        chart(vec![s("tiny", vec![(1e-12, 1e-15), (2e-12, 3e-15)], None)], false),
        chart(vec![s("large ints", vec![(0.0, 1.0), (1e6, 2.0)], None)], true),
        chart(
            (0..25).map(|i| s(&format!("series {i}"), vec![(i as f64, 1.0), (i as f64 + 1.0, 2.0)], None)).collect(),
            false,
        ),
    ];
    for (i, c) in cases.iter().enumerate() {
        renders(line_chart(c, &d.join(format!("edge{i}"))));
        // The same with a log axis where the data asks for one, and every
        // point hollow.
        let hollow = |s: &Series| Series { hollow: vec![true; s.points.len()], ..s.clone() };
        let auto = LineChart {
            y_scale: YScale::Auto,
            hollow_label: Some("hollow".into()),
            series: c.series.iter().map(hollow).collect(),
            ..c.clone()
        };
        renders(line_chart(&auto, &d.join(format!("edge_auto{i}"))));
    }
}

#[test]
fn cdf_edge_cases_do_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cases: Vec<Vec<(String, Vec<f64>)>> = vec![
        vec![],
        vec![("empty".into(), vec![])],
        vec![("one".into(), vec![4.2])],
        vec![("equal".into(), vec![1.0; 50])],
        vec![("nan".into(), vec![f64::NAN, f64::INFINITY, 1.0, f64::NEG_INFINITY])],
        vec![("all nan".into(), vec![f64::NAN])],
        vec![("a".into(), vec![0.0]), ("b".into(), vec![])],
    ];
    for (i, c) in cases.iter().enumerate() {
        renders(cdf_chart(&cdf("CDF", "x (units)", c), &d.join(format!("cdf{i}"))));
    }
}

#[test]
fn trace_edge_cases_do_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let nan = f64::NAN;
    let cases = [
        TraceChart::default(),
        TraceChart { title: "goodput only".into(), goodput: vec![(0.0, 1.0)], ..Default::default() },
        TraceChart { title: "delays only".into(), d_s: vec![(1.0, 10.0)], ..Default::default() },
        TraceChart {
            title: "nan".into(),
            goodput: vec![(nan, 1.0), (1.0, nan), (2.0, 0.0)],
            d_max: vec![(nan, nan)],
            d_s: vec![(f64::INFINITY, 3.0)],
            d_avg: vec![(1.0, 0.0), (1.0, 0.0)],
            ..Default::default()
        },
        TraceChart { title: "empty window".into(), lower: TracePanel::Cwnd, ..Default::default() },
        TraceChart {
            title: "window".into(),
            cwnd_segments: vec![(nan, 1.0), (0.0, 2.0), (1.0, f64::INFINITY), (2.0, 1.0)],
            lower: TracePanel::Cwnd,
            ..Default::default()
        },
    ];
    for (i, c) in cases.iter().enumerate() {
        renders(trace_chart(c, &d.join(format!("trace{i}"))));
    }
    type Flows = Vec<(String, Vec<(f64, f64)>)>;
    let multi: Vec<Flows> = vec![
        vec![],
        vec![("empty".into(), vec![])],
        vec![("one".into(), vec![(5.0, 5.0)])],
        vec![("nan".into(), vec![(nan, 1.0), (1.0, f64::NEG_INFINITY)])],
        vec![("flat".into(), vec![(0.0, 0.0), (10.0, 0.0)])],
    ];
    for (i, c) in multi.iter().enumerate() {
        renders(multi_trace_chart(&over_time("m", c, "Time (s)", "Goodput (Mbit/s)"), &d.join(format!("m{i}"))));
    }
}

#[test]
fn a_series_is_drawn_in_the_look_it_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let look = SeriesStyle { color: Rgb(0x12, 0xa4, 0x56), marker: MarkerShape::Star, dash: Dash::Dashed };
    let mut chart = sample_line_chart();
    chart.series[0].style = Some(look);
    let paths = line_chart(&chart, &dir.path().join("look")).unwrap();
    let img = decode_png(&paths[0]);
    assert!(img.has_colour_near([0x12, 0xa4, 0x56]));
    // The second series keeps the colour of its position (tab10 orange).
    assert!(img.has_colour_near([0xff, 0x7f, 0x0e]));
    assert!(!img.has_colour_near([0x1f, 0x77, 0xb4]), "the first series' own look replaces tab10 blue");
}

#[test]
fn captions_and_merged_series_are_written_on_the_figure() {
    let dir = tempfile::tempdir().unwrap();
    let mut chart = sample_line_chart();
    let reno = Series { label: "tcp-reno".into(), ..chart.series[1].clone() };
    chart.series.push(reno);
    chart.caption = vec!["n = 2 repetitions per point (seeds 1\u{2013}2).".into()];
    let paths = line_chart(&chart, &dir.path().join("caption")).unwrap();
    let svg = read_svg(&paths[1]);
    assert!(svg.contains("TCP NewReno = tcp-reno"), "one legend entry for both");
    assert!(svg.contains("n = 2 repetitions per point"), "the caption");
    assert!(svg.contains("identical results, drawn once"), "and what the = means");
    // The caption makes the figure taller, not the plot smaller.
    let plain = line_chart(&sample_line_chart(), &dir.path().join("plain")).unwrap();
    assert!(decode_png(&paths[0]).height > decode_png(&plain[0]).height);
    assert_eq!(decode_png(&paths[0]).width, decode_png(&plain[0]).width);
}

#[test]
fn windowed_traces_say_what_their_windows_are() {
    let dir = tempfile::tempdir().unwrap();
    let mut trace = sample_trace();
    trace.goodput_windows = Some(Windows { length_s: 0.2, step_s: 0.1 });
    let paths = trace_chart(&trace, &dir.path().join("windows")).unwrap();
    let svg = read_svg(&paths[1]);
    assert!(svg.contains("in-order delivery (200 ms windows, every 100 ms)"));
    assert!(
        svg.contains("D_avg&apos;: that feedback as") || svg.contains("D_avg': that feedback as"),
        "symbols explained"
    );
}
