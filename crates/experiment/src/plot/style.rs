//! How a series looks: its colour, marker and line dash. A figure gets a
//! series' look from the caller ([`crate::palette`] gives each protocol
//! its one look, the same in every figure and in the Python example), or
//! else from the position of the series ([`indexed`]).

/// A colour, 8 bits per channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl Rgb {
    /// `#rrggbb`, as matplotlib and SVG take it.
    pub fn hex(self) -> String {
        format!("#{:02x}{:02x}{:02x}", self.0, self.1, self.2)
    }
}

/// The shape of a series' markers. Each has a matplotlib marker code
/// ([`MarkerShape::matplotlib`]), so that a Python figure draws the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MarkerShape {
    Circle,
    Square,
    TriangleUp,
    Diamond,
    TriangleDown,
    TriangleLeft,
    TriangleRight,
    Pentagon,
    Hexagon,
    Star,
    /// A filled "x".
    Cross,
    /// A filled "+".
    Plus,
    Octagon,
    /// A diamond half as wide as it is tall.
    ThinDiamond,
    /// A hexagon standing on a corner's side (matplotlib's "H").
    Hexagon2,
}

impl MarkerShape {
    pub const ALL: [MarkerShape; 15] = [
        MarkerShape::Circle,
        MarkerShape::Square,
        MarkerShape::TriangleUp,
        MarkerShape::Diamond,
        MarkerShape::TriangleDown,
        MarkerShape::TriangleLeft,
        MarkerShape::TriangleRight,
        MarkerShape::Pentagon,
        MarkerShape::Hexagon,
        MarkerShape::Star,
        MarkerShape::Cross,
        MarkerShape::Plus,
        MarkerShape::Octagon,
        MarkerShape::ThinDiamond,
        MarkerShape::Hexagon2,
    ];

    /// matplotlib's code for the same marker (`plt.plot(..., marker=code)`).
    pub fn matplotlib(self) -> &'static str {
        match self {
            MarkerShape::Circle => "o",
            MarkerShape::Square => "s",
            MarkerShape::TriangleUp => "^",
            MarkerShape::Diamond => "D",
            MarkerShape::TriangleDown => "v",
            MarkerShape::TriangleLeft => "<",
            MarkerShape::TriangleRight => ">",
            MarkerShape::Pentagon => "p",
            MarkerShape::Hexagon => "h",
            MarkerShape::Star => "*",
            MarkerShape::Cross => "X",
            MarkerShape::Plus => "P",
            MarkerShape::Octagon => "8",
            MarkerShape::ThinDiamond => "d",
            MarkerShape::Hexagon2 => "H",
        }
    }
}

/// How a line is stroked: series that share a colour and marker (one
/// protocol at several values of another swept key) differ by dash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Dash {
    #[default]
    Solid,
    Dashed,
    Dotted,
    DashDot,
}

impl Dash {
    pub const ALL: [Dash; 4] = [Dash::Solid, Dash::Dashed, Dash::Dotted, Dash::DashDot];

    /// The on/off lengths of the pattern in units of the line width;
    /// empty for a solid line.
    pub(super) fn pattern(self) -> &'static [f64] {
        match self {
            Dash::Solid => &[],
            Dash::Dashed => &[4.0, 2.5],
            Dash::Dotted => &[1.0, 2.0],
            Dash::DashDot => &[4.0, 2.0, 1.0, 2.0],
        }
    }

    /// matplotlib's `linestyle` of the same dash.
    pub fn matplotlib(self) -> &'static str {
        match self {
            Dash::Solid => "-",
            Dash::Dashed => "--",
            Dash::Dotted => ":",
            Dash::DashDot => "-.",
        }
    }
}

/// The look of one series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SeriesStyle {
    pub color: Rgb,
    pub marker: MarkerShape,
    pub dash: Dash,
}

/// matplotlib's "tab10": what a reader of papers expects, for series that
/// are not protocols (flows, packet sizes).
pub const TAB10: [Rgb; 10] = [
    Rgb(0x1f, 0x77, 0xb4),
    Rgb(0xff, 0x7f, 0x0e),
    Rgb(0x2c, 0xa0, 0x2c),
    Rgb(0xd6, 0x27, 0x28),
    Rgb(0x94, 0x67, 0xbd),
    Rgb(0x8c, 0x56, 0x4b),
    Rgb(0xe3, 0x77, 0xc2),
    Rgb(0x7f, 0x7f, 0x7f),
    Rgb(0xbc, 0xbd, 0x22),
    Rgb(0x17, 0xbe, 0xcf),
];

/// The look of the `i`-th series that has no look of its own: tab10's
/// colours, and markers that advance once more after each round of
/// colours, so that colour and shape together stay distinct for many
/// series.
pub fn indexed(i: usize) -> SeriesStyle {
    let shapes = &MarkerShape::ALL[..5];
    SeriesStyle {
        color: TAB10[i % TAB10.len()],
        marker: shapes[(i + i / TAB10.len()) % shapes.len()],
        dash: Dash::Solid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn indexed_styles_stay_distinct_beyond_the_palette() {
        let styles: HashSet<SeriesStyle> = (0..50).map(indexed).collect();
        assert_eq!(styles.len(), 50);
    }

    #[test]
    fn every_marker_and_dash_has_its_own_matplotlib_code() {
        let markers: HashSet<&str> = MarkerShape::ALL.iter().map(|m| m.matplotlib()).collect();
        assert_eq!(markers.len(), MarkerShape::ALL.len());
        let dashes: HashSet<&str> = Dash::ALL.iter().map(|d| d.matplotlib()).collect();
        assert_eq!(dashes.len(), Dash::ALL.len());
        assert_eq!(Rgb(0x1f, 0x77, 0xb4).hex(), "#1f77b4");
    }
}
