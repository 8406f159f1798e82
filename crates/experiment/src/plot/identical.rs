//! Series with identical data are drawn once, under one legend entry that
//! names them all ("tcp-tahoe = tcp-reno = tcp-newreno"), so that a reader
//! is told, not left to guess, why a legend entry has no line of its own.

use super::style::{indexed, SeriesStyle};
use super::{CdfSeries, Series, TimeSeries};

/// The caption line of a figure where series were merged.
pub const IDENTICAL_NOTE: &str = "\"a = b\" in the legend: a and b gave identical results, drawn once";

/// The one legend entry of identical series.
pub fn same_label<S: AsRef<str>>(labels: &[S]) -> String {
    labels.iter().map(|l| l.as_ref()).collect::<Vec<_>>().join(" = ")
}

/// The groups of `0..n` whose members are `same`, each in order, the
/// groups in the order of their first member.
pub(super) fn groups(n: usize, same: impl Fn(usize, usize) -> bool) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    for i in 0..n {
        match out.iter_mut().find(|g| same(g[0], i)) {
            Some(g) => g.push(i),
            None => out.push(vec![i]),
        }
    }
    out
}

/// What [`merge`] needs of an item: its label and look, and how to set
/// them.
trait Named: Clone {
    fn label(&self) -> &str;
    fn style(&self) -> Option<SeriesStyle>;
    fn set(&mut self, label: String, style: SeriesStyle);
}

macro_rules! named {
    ($t:ty) => {
        impl Named for $t {
            fn label(&self) -> &str {
                &self.label
            }
            fn style(&self) -> Option<SeriesStyle> {
                self.style
            }
            fn set(&mut self, label: String, style: SeriesStyle) {
                (self.label, self.style) = (label, Some(style));
            }
        }
    };
}
named!(Series);
named!(CdfSeries);
named!(TimeSeries);

/// One item per group of `same` items: the first, its label naming the
/// group, its look fixed before the merge (its own, or its position's, so
/// that no series changes colour because another merged); and whether any
/// group had more than one item.
fn merge<T: Named>(items: &[T], same: impl Fn(usize, usize) -> bool) -> (Vec<T>, bool) {
    let groups = groups(items.len(), same);
    let merged = groups.iter().any(|g| g.len() > 1);
    let out = groups
        .iter()
        .map(|g| {
            let mut first = items[g[0]].clone();
            let name = same_label(&g.iter().map(|&i| items[i].label()).collect::<Vec<_>>());
            let look = first.style().unwrap_or_else(|| indexed(g[0]));
            first.set(name, look);
            first
        })
        .collect();
    (out, merged)
}

/// Line chart series with the same points, intervals and hollow markers
/// (and at least one point) merged.
pub(super) fn merge_series(series: &[Series]) -> (Vec<Series>, bool) {
    merge(series, |i, j| {
        let (a, b) = (&series[i], &series[j]);
        !a.points.is_empty() && a.points == b.points && a.interval == b.interval && a.hollow == b.hollow
    })
}

/// CDF sample sets that are the same multiset (and not empty) merged.
pub(super) fn merge_cdf(series: &[CdfSeries]) -> (Vec<CdfSeries>, bool) {
    let sorted: Vec<Vec<f64>> = series
        .iter()
        .map(|s| {
            let mut v = s.samples.clone();
            v.sort_by(f64::total_cmp);
            v
        })
        .collect();
    merge(series, |i, j| !sorted[i].is_empty() && sorted[i] == sorted[j])
}

/// Time series with the same points (and at least one) merged.
pub(super) fn merge_time_series(series: &[TimeSeries]) -> (Vec<TimeSeries>, bool) {
    merge(series, |i, j| !series[i].points.is_empty() && series[i].points == series[j].points)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::style::{Dash, MarkerShape, Rgb};

    fn series(label: &str, ys: &[f64]) -> Series {
        Series {
            label: label.into(),
            points: ys.iter().enumerate().map(|(i, &y)| (i as f64 + 1.0, y)).collect(),
            interval: ys.iter().map(|&y| Some((y * 0.9, y * 1.1))).collect(),
            ..Series::default()
        }
    }

    #[test]
    fn identical_series_are_drawn_once_under_every_name() {
        // testbed-a-single: Tahoe, Reno and NewReno never differ.
        let tcp = [0.5, 0.11, 0.01, 0.004];
        let input = vec![
            series("atp-default", &[5.0, 3.9, 1.9, 0.9]),
            series("tcp-tahoe", &tcp),
            series("tcp-reno", &tcp),
            series("tcp-newreno", &tcp),
        ];
        let (out, merged) = merge_series(&input);
        assert!(merged);
        let labels: Vec<&str> = out.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["atp-default", "tcp-tahoe = tcp-reno = tcp-newreno"]);
        assert_eq!(out[1].points, input[1].points);
        // Each keeps the colour of its position before the merge.
        assert_eq!(out[1].style, Some(indexed(1)));
        assert_eq!(out[0].style, Some(indexed(0)));
    }

    #[test]
    fn series_that_differ_anywhere_stay_apart() {
        let a = series("tcp-reno", &[0.5, 0.11]);
        // One point's mean differs in the last digit.
        let b = series("tcp-newreno", &[0.5, 0.110_000_000_000_000_01 + 1e-12]);
        // Same means, another interval.
        let mut c = series("tcp-tahoe", &[0.5, 0.11]);
        c.interval[0] = Some((0.4, 0.6));
        // Same means and intervals, one point hollow.
        let mut d = series("mtl", &[0.5, 0.11]);
        d.hollow = vec![false, true];
        let (out, merged) = merge_series(&[a, b, c, d]);
        assert!(!merged);
        assert_eq!(out.len(), 4);
        // Two series without points are not "identical results".
        let (out, merged) = merge_series(&[series("x", &[]), series("y", &[])]);
        assert!(!merged);
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn a_merged_series_keeps_its_own_look() {
        let style = SeriesStyle { color: Rgb(1, 2, 3), marker: MarkerShape::Star, dash: Dash::Dotted };
        let mut a = series("a", &[1.0]);
        a.style = Some(style);
        let (out, _) = merge_series(&[series("z", &[2.0]), a.clone(), a]);
        assert_eq!(out[1].style, Some(style));
        assert_eq!(out[1].label, "a = a");
    }

    #[test]
    fn cdfs_of_the_same_samples_in_any_order_are_one() {
        let s = |label: &str, samples: Vec<f64>| CdfSeries { label: label.into(), samples, style: None };
        let input = [
            s("tcp-tahoe", vec![3.0, 1.0, 2.0]),
            s("atp-default", vec![5.0]),
            s("tcp-reno", vec![1.0, 2.0, 3.0]),
            s("tcp-newreno", vec![1.0, 2.0, 3.0, 3.0]),
        ];
        let (out, merged) = merge_cdf(&input);
        assert!(merged);
        let labels: Vec<&str> = out.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["tcp-tahoe = tcp-reno", "atp-default", "tcp-newreno"]);
        assert_eq!(out[2].style, Some(indexed(3)));
    }

    #[test]
    fn time_series_merge_on_equal_points() {
        let t = |label: &str, points: Vec<(f64, f64)>| TimeSeries { label: label.into(), points, style: None };
        let (out, merged) = merge_time_series(&[t("f1", vec![(0.1, 2.0)]), t("f2", vec![(0.1, 2.0)])]);
        assert!(merged);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].label, "f1 = f2");
    }
}
