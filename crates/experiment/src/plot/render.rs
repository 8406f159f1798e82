//! Rendering to files: one [`Figure`] drawn on the bitmap backend (encoded
//! as PNG here, so that I/O errors name the file) and on the SVG backend,
//! the embedded font, titles and captions, and what differs between the
//! two backends ([`Quirks`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{register_font, FontStyle};

use super::{PlotError, H, W};

pub(super) const FONT: &str = "sans-serif";
pub(super) const TITLE_SIZE: u32 = 30;
pub(super) const DESC_SIZE: u32 = 24;
pub(super) const TICK_SIZE: u32 = 20;
pub(super) const LEGEND_SIZE: u32 = 20;
pub(super) const CAPTION_SIZE: u32 = 18;
/// The height of one caption line, and the space around the caption.
const CAPTION_LINE_PX: u32 = CAPTION_SIZE + 7;
const CAPTION_PAD_PX: u32 = 12;
/// The caption's left and right margin.
const CAPTION_SIDE_PX: u32 = 24;

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

/// The whole picture of a figure, on some backend.
pub(super) type Root<DB> = DrawingArea<DB, Shift>;
/// What drawing on a backend returns.
pub(super) type Drawn<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// Something that can draw itself on any backend.
pub(super) trait Figure {
    /// Width and height in pixels of the figure without its caption.
    const SIZE: (u32, u32) = (W, H);
    /// This figure's size: [`Figure::SIZE`] unless its content sets it
    /// (one panel per flow grows the figure, not the flows' panels).
    fn size(&self) -> (u32, u32) {
        Self::SIZE
    }
    /// The caption lines under the figure (before wrapping).
    fn caption(&self) -> Vec<String>;
    /// Draws the figure on `root`, the area above the caption.
    fn draw<DB: DrawingBackend>(&self, root: &Root<DB>, fix: Quirks) -> Drawn<DB>;
}

/// What differs between the backends.
///
/// plotters' ab_glyph text layout puts vertically centred text (y tick
/// labels, legend entries) about a fifth of the font size too high in the
/// bitmap backend; the SVG backend leaves the placement to the viewer and
/// gets it right. The bitmap figures move the y tick labels down and the
/// legend glyphs up by this much to line them up again. And the bitmap
/// backend strokes wide paths with spikes at sharp turns (see
/// `legend::Polyline`).
#[derive(Clone, Copy, Default)]
pub(super) struct Quirks {
    /// Pixels to move y tick labels down.
    pub y_label_dy: i32,
    /// Pixels to move legend glyphs up.
    pub legend_dy: i32,
    /// Draw each segment of a wide line on its own.
    pub split_wide_paths: bool,
}

impl Quirks {
    const BITMAP: Quirks = Quirks {
        y_label_dy: (TICK_SIZE as i32 * 22 + 50) / 100,
        legend_dy: (LEGEND_SIZE as i32 * 22 + 50) / 100,
        split_wide_paths: true,
    };
    pub(super) const SVG: Quirks = Quirks { y_label_dy: 0, legend_dy: 0, split_wide_paths: false };
}

/// Titles smaller than this are wrapped onto two lines instead.
const MIN_TITLE_SIZE: u32 = 22;
/// Space above the title and between its lines, in pixels.
const TITLE_GAP: u32 = 10;

/// The font size and lines of a title `width_px` wide: one line at
/// [`TITLE_SIZE`] if it fits, else one line as large as fits down to
/// [`MIN_TITLE_SIZE`], else two lines split at the space nearest the
/// middle, as large as fits. `measure(text, size)` is a text's width.
fn title_lines(title: &str, width_px: u32, measure: impl Fn(&str, u32) -> u32) -> (u32, Vec<String>) {
    let fits = |lines: &[&str], size: u32| lines.iter().all(|l| measure(l, size) <= width_px);
    let largest = |lines: &[&str], smallest: u32| (smallest..=TITLE_SIZE).rev().find(|&s| fits(lines, s));
    if let Some(size) = largest(&[title], MIN_TITLE_SIZE) {
        return (size, vec![title.to_string()]);
    }
    let middle = title.len() / 2;
    let split = title.match_indices(' ').map(|(i, _)| i).min_by_key(|&i| i.abs_diff(middle));
    match split {
        Some(i) => {
            let (a, b) = (title[..i].trim_end(), title[i..].trim_start());
            (largest(&[a, b], 8).unwrap_or(8), vec![a.to_string(), b.to_string()])
        }
        None => (largest(&[title], 8).unwrap_or(8), vec![title.to_string()]),
    }
}

/// Draws `title` centred across the top of `area`, sized to fit
/// ([`title_lines`]), and returns the area below it.
pub(super) fn titled<DB: DrawingBackend>(
    area: &Root<DB>,
    title: &str,
) -> Result<Root<DB>, DrawingAreaErrorKind<DB::ErrorType>> {
    let (w, _) = area.dim_in_pixel();
    let measure = |text: &str, size: u32| {
        let font = (FONT, size, FontStyle::Bold).into_font().color(&BLACK);
        area.estimate_text_size(text, &font).map_or(u32::MAX, |s| s.0)
    };
    let (size, lines) = title_lines(title, w.saturating_sub(32), measure);
    let font = (FONT, size, FontStyle::Bold).into_font().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Top));
    let mut y = TITLE_GAP;
    for line in &lines {
        area.draw_text(line, &font, ((w / 2) as i32, y as i32))?;
        y += size + TITLE_GAP;
    }
    Ok(area.margin(y, 0, 0, 0))
}

/// `lines` wrapped at spaces so that each fits `width_px`
/// (`measure(text)` is a text's width); a word longer than the width gets
/// a line of its own.
fn wrap(lines: &[String], width_px: u32, measure: impl Fn(&str) -> u32) -> Vec<String> {
    let mut out = Vec::new();
    for line in lines {
        let mut current = String::new();
        for word in line.split(' ') {
            let candidate = if current.is_empty() { word.to_string() } else { format!("{current} {word}") };
            if measure(&candidate) <= width_px || current.is_empty() {
                current = candidate;
            } else {
                out.push(std::mem::replace(&mut current, word.to_string()));
            }
        }
        out.push(current);
    }
    out
}

/// The caption font.
fn caption_font() -> FontDesc<'static> {
    (FONT, CAPTION_SIZE).into_font()
}

/// A caption's lines wrapped to a figure `width_px` wide.
fn caption_lines(lines: &[String], width_px: u32) -> Vec<String> {
    let font = caption_font();
    let measure = |text: &str| font.box_size(text).map_or(text.chars().count() as u32 * CAPTION_SIZE * 6 / 10, |b| b.0);
    wrap(lines, width_px.saturating_sub(2 * CAPTION_SIDE_PX), measure)
}

/// The height of a figure `width_px` wide with the caption `lines`.
fn caption_height(lines: &[String], width_px: u32) -> u32 {
    match caption_lines(lines, width_px).len() {
        0 => 0,
        n => n as u32 * CAPTION_LINE_PX + 2 * CAPTION_PAD_PX,
    }
}

/// Draws the caption `lines` across the bottom of `root` (left-aligned,
/// under a thin rule) and returns the area above it.
fn captioned<DB: DrawingBackend>(
    root: &Root<DB>,
    lines: &[String],
) -> Result<Root<DB>, DrawingAreaErrorKind<DB::ErrorType>> {
    let (w, h) = root.dim_in_pixel();
    let height = caption_height(lines, w);
    if height == 0 {
        return Ok(root.clone());
    }
    let (above, below) = root.split_vertically(h.saturating_sub(height));
    let side = CAPTION_SIDE_PX as i32;
    below.draw(&PathElement::new(vec![(side, 2), (w as i32 - side, 2)], RGBColor(0xb0, 0xb0, 0xb0)))?;
    let font = caption_font().color(&RGBColor(0x30, 0x30, 0x30)).pos(Pos::new(HPos::Left, VPos::Top));
    for (i, line) in caption_lines(lines, w).iter().enumerate() {
        below.draw_text(line, &font, (side, (CAPTION_PAD_PX + i as u32 * CAPTION_LINE_PX) as i32))?;
    }
    Ok(above)
}

/// Writes "No data" in the middle of an empty plotting area.
pub(super) fn draw_no_data<DB: DrawingBackend, X: Ranged, Y: Ranged>(
    area: &DrawingArea<DB, Cartesian2d<X, Y>>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let (w, h) = area.dim_in_pixel();
    let style =
        (FONT, DESC_SIZE).into_font().color(&RGBColor(0x80, 0x80, 0x80)).pos(Pos::new(HPos::Center, VPos::Center));
    area.strip_coord_spec().draw_text("No data", &style, (w as i32 / 2, h as i32 / 2))
}

pub(super) fn with_extension(stem: &Path, ext: &str) -> PathBuf {
    let mut s: OsString = stem.as_os_str().to_owned();
    s.push(".");
    s.push(ext);
    PathBuf::from(s)
}

/// Writes `stem.png` and `stem.svg`, creating the parent directories, and
/// returns the two paths (PNG first).
pub(super) fn render<F: Figure>(fig: &F, stem: &Path) -> Result<Vec<PathBuf>, PlotError> {
    ensure_fonts();
    if let Some(parent) = stem.parent() {
        if !parent.as_os_str().is_empty() {
            std::fs::create_dir_all(parent)
                .map_err(|source| PlotError::CreateDir { path: parent.to_path_buf(), source })?;
        }
    }
    let caption = fig.caption();
    let (w, h) = fig.size();
    let h = h + caption_height(&caption, w);
    let png_path = with_extension(stem, "png");
    let svg_path = with_extension(stem, "svg");

    // PNG: draw into an RGB buffer, then encode it ourselves.
    let mut buf = vec![255u8; (w as usize) * (h as usize) * 3];
    {
        let root = BitMapBackend::with_buffer(&mut buf, (w, h)).into_drawing_area();
        draw_all(fig, &caption, &root, Quirks::BITMAP)
            .map_err(|message| PlotError::Draw { path: png_path.clone(), message })?;
    }
    let png = encode_png(&buf, w, h).map_err(|message| PlotError::Encode { path: png_path.clone(), message })?;
    std::fs::write(&png_path, png).map_err(|source| PlotError::Write { path: png_path.clone(), source })?;

    // SVG: draw into a string.
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area();
        draw_all(fig, &caption, &root, Quirks::SVG)
            .map_err(|message| PlotError::Draw { path: svg_path.clone(), message })?;
    }
    std::fs::write(&svg_path, svg).map_err(|source| PlotError::Write { path: svg_path.clone(), source })?;
    Ok(vec![png_path, svg_path])
}

fn draw_all<DB: DrawingBackend>(
    fig: &impl Figure,
    caption: &[String],
    root: &DrawingArea<DB, Shift>,
    fix: Quirks,
) -> Result<(), String> {
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let above = captioned(root, caption).map_err(|e| e.to_string())?;
    fig.draw(&above, fix).map_err(|e| e.to_string())?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A text's width as if every character were 0.6 em wide.
    fn measure(text: &str, size: u32) -> u32 {
        (text.chars().count() as f64 * 0.6 * size as f64) as u32
    }

    #[test]
    fn titles_shrink_then_wrap_to_fit() {
        // Fits at full size.
        assert_eq!(title_lines("short", 1000, measure), (TITLE_SIZE, vec!["short".to_string()]));
        // A little too long: smaller, on one line.
        let t = "x".repeat(60); // 60 × 0.6 × 30 = 1080 px at full size
        let (size, lines) = title_lines(&t, 1000, measure);
        assert_eq!(lines.len(), 1);
        assert!((MIN_TITLE_SIZE..TITLE_SIZE).contains(&size) && measure(&t, size) <= 1000);
        // Far too long: two lines split at a space near the middle, each fits.
        let t = "testbed-a-single [hops=4 protocol=atp-aggressive] goodput and delays, repetition 0 of many";
        let (size, lines) = title_lines(t, 1000, measure);
        assert_eq!(lines.len(), 2);
        assert_eq!(format!("{} {}", lines[0], lines[1]), t);
        assert!(lines.iter().all(|l| measure(l, size) <= 1000));
        assert!(lines[0].len().abs_diff(lines[1].len()) < 12);
    }

    #[test]
    fn captions_wrap_at_spaces_to_fit() {
        let measure = |text: &str| text.chars().count() as u32 * 10;
        let lines = vec!["n = 2 repetitions per point, seeds 1-2".to_string(), "short".to_string()];
        let wrapped = wrap(&lines, 200, measure);
        assert_eq!(wrapped, ["n = 2 repetitions", "per point, seeds 1-2", "short"]);
        assert!(wrapped.iter().all(|l| measure(l) <= 200));
        // A word wider than the line stands alone rather than vanishing.
        assert_eq!(wrap(&["a verylongword b".to_string()], 50, measure), ["a", "verylongword", "b"]);
        assert!(wrap(&[], 100, measure).is_empty());
    }

    #[test]
    fn stems_keep_their_dots() {
        assert_eq!(with_extension(Path::new("a/fig.v2"), "png"), PathBuf::from("a/fig.v2.png"));
    }
}
