//! Paired comparisons (`[experiment] compare_against`): each value of the
//! series axis against a reference value over the same seeds, so that the
//! seed's own luck (the fading draws, the random pairs, the movement) is
//! common to both sides and cancels.
//!
//! For a point and its reference point (the same values of every other
//! axis), repetition k of both ran with the same seed; their goodputs
//! `g` and `g_ref` (a run's flows summed) give the ratio `g / g_ref`. The
//! comparison is the geometric mean of the ratios, with the 95% Student-t
//! interval of the mean log-ratio carried back through `exp`: a ratio is
//! symmetric on a log scale (2× and ½× are equally far from 1), which an
//! arithmetic mean of ratios is not. Pairs with a zero goodput on either
//! side have no log-ratio: they are counted, never averaged in.

use super::summary::flow_goodput_bps;
use super::Results;
use crate::spec::value_text;
use meshbed_core::stats::sample_stats;
use serde::Serialize;

/// The comparison of one point with its reference point.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PairedRatio {
    /// The point's label (`hops=3 protocol=tcp-sack`).
    pub point: String,
    /// Its value of the compared axis, and the reference value.
    pub value: String,
    pub reference: String,
    /// Repetitions run on both sides.
    pub pairs: usize,
    /// Pairs left out because a side delivered nothing.
    pub zero_pairs: usize,
    /// Geometric mean of the ratios and its 95% interval (NaN with fewer
    /// than two usable pairs).
    pub ratio: f64,
    pub ci95_low: f64,
    pub ci95_high: f64,
}

/// The geometric mean of `ratios` (all positive) and its 95% interval.
pub fn geometric_mean_ci95(ratios: &[f64]) -> (f64, f64, f64) {
    let logs: Vec<f64> = ratios.iter().map(|r| r.ln()).collect();
    if logs.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    let s = sample_stats(&logs);
    (s.mean.exp(), (s.mean - s.ci95).exp(), (s.mean + s.ci95).exp())
}

/// Every point's comparison with its reference point, in point order; none
/// without `compare_against`.
pub fn paired_ratios(results: &Results) -> Vec<PairedRatio> {
    let config = &results.experiment.config;
    let (Some(reference), Some(axis)) = (config.compare_against.as_deref(), config.compared_axis()) else {
        return Vec::new();
    };
    let run_goodput = |point: usize, rep: u32| -> Option<f64> {
        let run = results.runs.iter().find(|r| r.point == point && r.rep == rep)?;
        Some(run.report.flows.iter().map(|f| flow_goodput_bps(results, f)).sum())
    };
    let mut out = Vec::new();
    for point in &results.points {
        let Some(value) = point.value(axis).map(value_text) else { continue };
        if value == reference {
            continue;
        }
        // The reference point: the same values of every other axis.
        let Some(base) = results.points.iter().find(|q| {
            q.values
                .iter()
                .zip(&point.values)
                .all(|((k, v), (_, w))| if k == axis { value_text(v) == reference } else { v == w })
        }) else {
            continue;
        };
        let reps: Vec<u32> = results.runs.iter().filter(|r| r.point == point.index).map(|r| r.rep).collect();
        let (mut ratios, mut pairs, mut zero_pairs) = (Vec::new(), 0, 0);
        for rep in reps {
            let (Some(g), Some(g_ref)) = (run_goodput(point.index, rep), run_goodput(base.index, rep)) else {
                continue;
            };
            pairs += 1;
            if g > 0.0 && g_ref > 0.0 {
                ratios.push(g / g_ref);
            } else {
                zero_pairs += 1;
            }
        }
        let (ratio, ci95_low, ci95_high) = geometric_mean_ci95(&ratios);
        out.push(PairedRatio {
            point: point.label(),
            value,
            reference: reference.to_string(),
            pairs,
            zero_pairs,
            ratio,
            ci95_low,
            ci95_high,
        });
    }
    out
}

/// The comparisons as the table `summary.txt` shows.
pub fn paired_table(ratios: &[PairedRatio]) -> String {
    use std::fmt::Write;
    let Some(first) = ratios.first() else { return String::new() };
    let width = ratios.iter().map(|r| r.point.len()).max().unwrap_or(5).max(5);
    let mut s = format!(
        "\nGoodput against {} over the same seeds (geometric mean of the per-seed ratios, 95% CI):\n",
        first.reference
    );
    let _ = writeln!(s, "{:<width$}  {:>5}  {:>8}  {:>19}  {:>10}", "point", "pairs", "ratio", "95% CI", "zero pairs");
    for r in ratios {
        let _ = writeln!(
            s,
            "{:<width$}  {:>5}  {:>8.3}  [{:>7.3}, {:>7.3}]  {:>10}",
            r.point, r.pairs, r.ratio, r.ci95_low, r.ci95_high, r.zero_pairs
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// By hand: ratios 1 and 4 have log-ratios 0 and ln 4, mean ln 2 (the
    /// geometric mean 2), sd ln 4/√2 = 0.98026; t(0.975, 1) = 12.7062, so
    /// the half-width is 12.7062 · 0.98026/√2 = 8.8074 and the interval
    /// [2·e^−8.8074, 2·e^8.8074] = [0.000300, 13 331].
    #[test]
    fn the_interval_is_students_t_on_the_log_ratios() {
        let (gm, lo, hi) = geometric_mean_ci95(&[1.0, 4.0]);
        assert!((gm - 2.0).abs() < 1e-12);
        assert!((lo - 2.0 * (-8.8074f64).exp()).abs() / lo < 1e-3, "{lo}");
        assert!((hi - 2.0 * 8.8074f64.exp()).abs() / hi < 1e-3, "{hi}");
        // Identical ratios: no spread, the interval is the point.
        let (gm, lo, hi) = geometric_mean_ci95(&[1.5, 1.5, 1.5]);
        assert!([gm, lo, hi].iter().all(|v| (v - 1.5).abs() < 1e-12), "{gm} {lo} {hi}");
        // One pair: no interval.
        let (gm, lo, _) = geometric_mean_ci95(&[3.0]);
        assert!((gm - 3.0).abs() < 1e-12 && lo.is_nan());
    }
}
