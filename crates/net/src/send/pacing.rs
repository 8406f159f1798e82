//! How closely the send loop kept the engine's schedule: a paced sender
//! (ATP's inter-packet delay, seed 002 §4.2; the paced TCPs) asks to be
//! woken at an instant, and a user-space loop wakes late by the timer's
//! slack and the scheduler's latency, then sends what is due in one batch.
//! The simulator's senders transmit at the instant itself; this says how far
//! a real one was from that (the emulator-vs-simulator question of
//! docs/RESULTS.md, issue 24).

pub use meshbed_core::stats::SenderPacing as Pacing;
use std::time::Duration;

/// Sub-buckets per power of two of the lateness histogram: a percentile is
/// known within 2^(1/4) ≈ 19%.
const PER_OCTAVE: u32 = 4;
/// Buckets: 0 µs, then octaves up to 2^40 µs (about 12 days).
const BUCKETS: usize = 1 + 40 * PER_OCTAVE as usize;

/// Lateness of the wake-ups at an engine deadline, and the datagrams each
/// wake-up sent.
#[derive(Clone, Debug)]
pub(crate) struct PacingMeter {
    late_us: [u64; BUCKETS],
    wakes: u64,
    max_late: Duration,
    /// Wake-ups (at a deadline or not) that sent at least one datagram, and
    /// those that sent more than one.
    sending_wakes: u64,
    burst_wakes: u64,
    burst_datagrams: u64,
    max_burst: u64,
}

impl Default for PacingMeter {
    fn default() -> Self {
        PacingMeter {
            late_us: [0; BUCKETS],
            wakes: 0,
            max_late: Duration::ZERO,
            sending_wakes: 0,
            burst_wakes: 0,
            burst_datagrams: 0,
            max_burst: 0,
        }
    }
}

fn bucket(us: u64) -> usize {
    if us == 0 {
        return 0;
    }
    // ⌊PER_OCTAVE · log2(us)⌋ + 1, in integers: the octave, then the
    // quarter within it from the next two bits.
    let octave = 63 - us.leading_zeros();
    let fraction = if octave >= 2 { (us >> (octave - 2)) & 3 } else { (us << (2 - octave)) & 3 };
    (1 + octave * PER_OCTAVE + fraction as u32).min(BUCKETS as u32 - 1) as usize
}

/// The smallest lateness, µs, that bucket `b` holds.
fn bucket_floor_us(b: usize) -> u64 {
    if b == 0 {
        return 0;
    }
    let k = (b - 1) as u32;
    let (octave, fraction) = (k / PER_OCTAVE, u64::from(k % PER_OCTAVE));
    if octave >= 2 {
        (4 + fraction) << (octave - 2)
    } else {
        ((4 + fraction) >> (2 - octave)).max(1)
    }
}

impl PacingMeter {
    /// The loop woke `late` after an engine deadline it waited for.
    pub(crate) fn on_deadline_wake(&mut self, late: Duration) {
        self.wakes += 1;
        self.max_late = self.max_late.max(late);
        self.late_us[bucket(u64::try_from(late.as_micros()).unwrap_or(u64::MAX))] += 1;
    }

    /// One pass of the loop sent `datagrams`.
    pub(crate) fn on_sent(&mut self, datagrams: u64) {
        if datagrams == 0 {
            return;
        }
        self.sending_wakes += 1;
        if datagrams > 1 {
            self.burst_wakes += 1;
            self.burst_datagrams += datagrams;
        }
        self.max_burst = self.max_burst.max(datagrams);
    }

    /// The lateness at quantile `q` (a bucket's lower bound), µs.
    fn quantile_us(&self, q: f64) -> Option<u64> {
        if self.wakes == 0 {
            return None;
        }
        let rank = ((q * self.wakes as f64).ceil() as u64).clamp(1, self.wakes);
        let mut seen = 0;
        for (b, &n) in self.late_us.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Some(bucket_floor_us(b));
            }
        }
        None
    }

    pub(crate) fn report(&self) -> Pacing {
        Pacing {
            deadline_wakes: self.wakes,
            late_p50_us: self.quantile_us(0.5),
            late_p99_us: self.quantile_us(0.99),
            late_max_us: u64::try_from(self.max_late.as_micros()).unwrap_or(u64::MAX),
            sending_wakes: self.sending_wakes,
            burst_wakes: self.burst_wakes,
            burst_datagrams: self.burst_datagrams,
            max_burst: self.max_burst,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_quarter_octaves_and_their_floors_are_in_them() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(1), 1);
        assert_eq!(bucket_floor_us(bucket(1)), 1);
        // 64–79 µs share a bucket, 80 starts the next (a quarter octave).
        assert_eq!(bucket(64), bucket(79));
        assert_eq!(bucket(80), bucket(64) + 1);
        assert_eq!(bucket_floor_us(bucket(64)), 64);
        assert_eq!(bucket_floor_us(bucket(80)), 80);
        for us in [1u64, 2, 3, 5, 7, 100, 1_000, 123_456, 10_000_000] {
            let floor = bucket_floor_us(bucket(us));
            assert!(floor <= us && us < floor * 2, "{us} µs in a bucket from {floor}");
            assert!(bucket(floor) == bucket(us), "{us}");
        }
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn quantiles_and_bursts_are_what_was_recorded() {
        let mut m = PacingMeter::default();
        assert_eq!(m.report().late_p50_us, None);
        for _ in 0..98 {
            m.on_deadline_wake(Duration::from_micros(50));
        }
        m.on_deadline_wake(Duration::from_micros(900));
        m.on_deadline_wake(Duration::from_millis(3));
        for n in [0, 1, 1, 4, 2] {
            m.on_sent(n);
        }
        let r = m.report();
        assert_eq!(r.deadline_wakes, 100);
        assert_eq!(r.late_p50_us, Some(48), "50 µs lies in the bucket from 48");
        assert_eq!(r.late_p99_us, Some(896), "the 99th of 100 is the 900 µs wake");
        assert_eq!(r.late_max_us, 3_000);
        assert_eq!((r.sending_wakes, r.burst_wakes, r.burst_datagrams, r.max_burst), (4, 2, 6, 4));
    }
}
