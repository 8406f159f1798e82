//! The entries of a legend: one per series, or by factor
//! ([`FactoredKey`]: a protocol's colour and marker, another key's dash).

use plotters::prelude::*;

use super::legend::Entry;
use super::style::{MarkerShape, SeriesStyle};
use super::FactoredKey;

/// The grey of the dash entries of a factored legend: no series' colour.
const DASH_COLOR: RGBColor = RGBColor(0x50, 0x50, 0x50);

/// The radius of the markers in legends.
pub(super) const MARKER_PX: i32 = 6;

/// The legend entries of `series` ((label, look) each): one per series, or
/// with a `key`, one per look and one per dash.
pub(super) fn entries(series: &[(String, SeriesStyle)], key: Option<&FactoredKey>, markers: bool) -> Vec<Entry> {
    let marker = markers.then_some(MARKER_PX);
    match key {
        None => series.iter().map(|(label, look)| Entry::styled(label, *look, marker)).collect(),
        Some(k) => k
            .looks
            .iter()
            .map(|(label, look)| Entry::styled(label, SeriesStyle { dash: Default::default(), ..*look }, marker))
            .chain(
                k.dashes.iter().map(|(label, dash)| Entry { dash: *dash, ..Entry::new(label, DASH_COLOR, true, None) }),
            )
            .collect(),
    }
}

/// With a factored legend the "a = b" names of merged series have no
/// entry of their own: the caption names them instead.
pub fn identical_groups_note(merged_labels: &[&str]) -> Option<String> {
    let groups: Vec<&str> = merged_labels.iter().copied().filter(|l| l.contains(" = ")).collect();
    (!groups.is_empty()).then(|| format!("Identical results, drawn once: {}.", groups.join("; ")))
}

/// The hollow-marker entry of a line chart.
pub(super) fn hollow_entry(label: &str, color: RGBColor) -> Entry {
    Entry { hollow: true, ..Entry::new(label, color, false, Some((MarkerShape::Circle, MARKER_PX))) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::style::{indexed, Dash};

    #[test]
    fn a_factored_legend_has_an_entry_per_factor_not_per_series() {
        let (a, b) = (indexed(0), indexed(1));
        let series: Vec<(String, SeriesStyle)> = [
            ("v=1, atp", a),
            ("v=1, tcp", b),
            ("v=2, atp", SeriesStyle { dash: Dash::Dashed, ..a }),
            ("v=2, tcp", SeriesStyle { dash: Dash::Dashed, ..b }),
        ]
        .iter()
        .map(|(l, s)| (l.to_string(), *s))
        .collect();
        assert_eq!(entries(&series, None, true).len(), 4);
        let key = FactoredKey {
            looks: vec![("atp".into(), a), ("tcp".into(), b)],
            dashes: vec![("v=1".into(), Dash::Solid), ("v=2".into(), Dash::Dashed)],
        };
        let e = entries(&series, Some(&key), true);
        let labels: Vec<&str> = e.iter().map(|e| e.label.as_str()).collect();
        assert_eq!(labels, ["atp", "tcp", "v=1", "v=2"]);
        assert!(e[0].marker.is_some() && e[2].marker.is_none());
        assert_eq!(e[3].dash, Dash::Dashed);
        assert_eq!(
            identical_groups_note(&["atp", "tcp = mtl"]).as_deref(),
            Some("Identical results, drawn once: tcp = mtl.")
        );
        assert_eq!(identical_groups_note(&["atp"]), None);
    }
}
