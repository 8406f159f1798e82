//! Statistics of a sample, the kinds the documents report (used by the
//! simulator's echo RTTs and the experiment layer's summaries alike).

use serde::{Deserialize, Serialize};

/// A sample's statistics, the kinds the documents report: mean ± sample
/// standard deviation (seed 001 ch. 5's error bars), median, min and max
/// (seed 003 Tables 1–4 report median, min, max, mean and sd over runs), and
/// the half-width of the 95% confidence interval of the mean (Student's t
/// with n − 1 degrees of freedom; seed 004 §IV's intervals; issue 15).
#[derive(Copy, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SampleStats {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n − 1); 0 for fewer than two values.
    pub sd: f64,
    pub min: f64,
    pub median: f64,
    pub max: f64,
    /// Half-width of the 95% confidence interval of the mean: t(0.975,
    /// n − 1) · sd / √n. NaN for fewer than two values (no interval).
    pub ci95: f64,
}

/// [`SampleStats`] of `x` (all zero, `ci95` NaN, for an empty sample).
/// Non-finite values are kept: a NaN in the input shows in the output
/// rather than being silently dropped.
pub fn sample_stats(x: &[f64]) -> SampleStats {
    let n = x.len();
    if n == 0 {
        return SampleStats { n, mean: 0.0, sd: 0.0, min: 0.0, median: 0.0, max: 0.0, ci95: f64::NAN };
    }
    let mean = x.iter().sum::<f64>() / n as f64;
    let sd = if n > 1 { (x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt() } else { 0.0 };
    let mut sorted = x.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 };
    SampleStats { n, mean, sd, min: sorted[0], median, max: sorted[n - 1], ci95: ci95_half_width(sd, n) }
}

/// t(0.975, n − 1) · sd / √n, NaN for n < 2.
pub fn ci95_half_width(sd: f64, n: usize) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    if n < 2 {
        return f64::NAN;
    }
    let t = StudentsT::new(0.0, 1.0, (n - 1) as f64).expect("n ≥ 2 gives positive degrees of freedom");
    t.inverse_cdf(0.975) * sd / (n as f64).sqrt()
}

/// How a real sender kept its engine's schedule: the lateness of its
/// loop's wake-ups at the engine's deadlines, and the datagrams it sent at
/// once (`meshbed send`'s report, measured by `net::send`'s pacing meter;
/// the emulator's flows carry it). The simulator's senders transmit at the
/// instant itself and have none.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SenderPacing {
    /// Wake-ups at a deadline the engine set (a pacing slot, a timer).
    pub deadline_wakes: u64,
    /// How late those wake-ups were, µs: median and 99th percentile (each
    /// within 19%, the lower bound of its histogram bucket) and the worst.
    pub late_p50_us: Option<u64>,
    pub late_p99_us: Option<u64>,
    pub late_max_us: u64,
    /// Passes of the send loop that sent datagrams; those that sent more
    /// than one at once, with how many; the largest such burst.
    pub sending_wakes: u64,
    pub burst_wakes: u64,
    pub burst_datagrams: u64,
    pub max_burst: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn sample_stats_use_sample_deviation_and_middle_median() {
        let m = sample_stats(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert!(close(m.mean, 5.0));
        // Sample (n − 1) deviation: Σ(x − 5)² = 32 over 7.
        assert!(close(m.sd, (32.0f64 / 7.0).sqrt()));
        // Even count: the mean of the two middle values (4 and 5).
        assert!(close(m.median, 4.5));
        assert_eq!((m.min, m.max), (2.0, 9.0));
        // Odd count, unsorted input: the middle value.
        assert_eq!(sample_stats(&[9.0, 1.0, 3.0]).median, 3.0);
        assert_eq!(sample_stats(&[3.0]).sd, 0.0);
        assert!(sample_stats(&[3.0]).ci95.is_nan());
        assert_eq!(sample_stats(&[]).n, 0);
    }

    #[test]
    fn ci95_uses_students_t() {
        // t(0.975, 9) = 2.2622 (standard tables): sd 1, n 10 → 2.2622/√10.
        assert!((ci95_half_width(1.0, 10) - 2.2622 / 10f64.sqrt()).abs() < 1e-4);
        // Two values: t(0.975, 1) = 12.706.
        assert!((ci95_half_width(1.0, 2) - 12.7062 / 2f64.sqrt()).abs() < 1e-3);
        // Many values approach the normal quantile 1.96.
        assert!((ci95_half_width(1.0, 10_001) * 100.0 - 1.9602).abs() < 1e-3);
    }
}
