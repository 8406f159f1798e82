//! ARF and AARF: up after a run of successes or a timer, down after two
//! failures (see [`Arf`]).

/// ARF's and AARF's thresholds (ns-3's attribute defaults, which are the
/// papers' values).
pub const ARF_SUCCESS_THRESHOLD: u32 = 10;
pub const ARF_TIMER_THRESHOLD: u32 = 15;
/// AARF: a failed probe multiplies the success threshold by this, up to
/// [`AARF_MAX_SUCCESS_THRESHOLD`]; the timer threshold follows as
/// `max(ARF_TIMER_THRESHOLD, AARF_TIMER_FACTOR · success threshold)`.
pub const AARF_SUCCESS_FACTOR: u32 = 2;
pub const AARF_MAX_SUCCESS_THRESHOLD: u32 = 50;
pub const AARF_TIMER_FACTOR: u32 = 2;

/// ARF, or AARF when `adaptive`.
///
/// Up one rate after [`ARF_SUCCESS_THRESHOLD`] consecutive successes or
/// when the timer (attempts since the last change) reaches
/// [`ARF_TIMER_THRESHOLD`] on a success; the first attempt after an
/// increase is a probe, and a failed probe goes straight back down; otherwise
/// down after two consecutive failures. Starts at the highest rate, as ns-3
/// does. The probe ends with its outcome: after a failed probe the next
/// failures count afresh (ns-3 stays in recovery until a success, so that
/// there no second fallback happens before one; Kamerman & Monteban describe
/// only the immediate fallback).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arf {
    adaptive: bool,
    top: usize,
    rate: usize,
    successes: u32,
    failures: u32,
    timer: u32,
    probing: bool,
    success_threshold: u32,
    timer_threshold: u32,
}

impl Arf {
    /// ARF (`adaptive = false`) or AARF over `n_rates` rates, at the highest.
    pub fn new(n_rates: usize, adaptive: bool) -> Self {
        let top = n_rates.saturating_sub(1);
        Arf {
            adaptive,
            top,
            rate: top,
            successes: 0,
            failures: 0,
            timer: 0,
            probing: false,
            success_threshold: ARF_SUCCESS_THRESHOLD,
            timer_threshold: ARF_TIMER_THRESHOLD,
        }
    }

    /// Index of the rate for the next attempt.
    pub fn rate_index(&self) -> usize {
        self.rate
    }

    /// Consecutive successes needed to go up (10 for ARF; 10 to 50 for AARF).
    pub fn success_threshold(&self) -> u32 {
        self.success_threshold
    }

    /// Whether the next attempt is the probe after an increase.
    pub fn probing(&self) -> bool {
        self.probing
    }

    /// The outcome of one DATA attempt.
    pub fn report(&mut self, success: bool) {
        self.timer += 1;
        if success {
            self.successes += 1;
            self.failures = 0;
            self.probing = false;
            let due = self.successes >= self.success_threshold || self.timer >= self.timer_threshold;
            if due && self.rate < self.top {
                self.rate += 1;
                self.successes = 0;
                self.timer = 0;
                self.probing = true;
            }
            return;
        }
        self.failures += 1;
        self.successes = 0;
        if self.probing {
            // The probe failed: back down at once; AARF waits longer before
            // the next probe (Lacage et al. 2004 §3.2).
            if self.adaptive {
                self.success_threshold = (self.success_threshold * AARF_SUCCESS_FACTOR).min(AARF_MAX_SUCCESS_THRESHOLD);
                self.timer_threshold = ARF_TIMER_THRESHOLD.max(self.success_threshold * AARF_TIMER_FACTOR);
            }
            self.fall_back();
        } else if self.failures >= 2 {
            if self.adaptive {
                self.success_threshold = ARF_SUCCESS_THRESHOLD;
                self.timer_threshold = ARF_TIMER_THRESHOLD;
            }
            self.fall_back();
        }
    }

    fn fall_back(&mut self) {
        self.rate = self.rate.saturating_sub(1);
        self.probing = false;
        self.failures = 0;
        self.timer = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const B_RATES: usize = 4; // 1, 2, 5.5, 11 Mbit/s

    fn arf() -> Arf {
        Arf::new(B_RATES, false)
    }

    #[test]
    fn arf_starts_at_the_highest_rate() {
        assert_eq!(arf().rate_index(), 3);
        assert_eq!(Arf::new(B_RATES, true).rate_index(), 3);
    }

    #[test]
    fn arf_two_consecutive_failures_go_down_one_does_not() {
        let mut a = arf();
        a.report(false);
        assert_eq!(a.rate_index(), 3);
        a.report(true);
        a.report(false);
        assert_eq!(a.rate_index(), 3, "failures must be consecutive");
        a.report(false);
        assert_eq!(a.rate_index(), 2);
        a.report(false);
        assert_eq!(a.rate_index(), 2, "the count restarts after a fallback");
        a.report(false);
        assert_eq!(a.rate_index(), 1);
    }

    #[test]
    fn arf_ten_successes_go_up_and_a_failed_probe_comes_straight_back() {
        let mut a = arf();
        for _ in 0..4 {
            a.report(false);
        }
        assert_eq!(a.rate_index(), 1);
        for i in 0..9 {
            a.report(true);
            assert_eq!(a.rate_index(), 1, "after {} successes", i + 1);
        }
        a.report(true);
        assert_eq!(a.rate_index(), 2);
        assert!(a.probing());
        a.report(false);
        assert_eq!(a.rate_index(), 1, "a failed probe falls back at once");
        // A successful probe stays up.
        for _ in 0..10 {
            a.report(true);
        }
        assert_eq!(a.rate_index(), 2);
        a.report(true);
        assert!(!a.probing());
        a.report(false);
        assert_eq!(a.rate_index(), 2, "one failure after the probe is not a fallback");
    }

    #[test]
    fn arf_timer_of_fifteen_attempts_goes_up_without_ten_successes_in_a_row() {
        let mut a = arf();
        a.report(false);
        a.report(false);
        assert_eq!(a.rate_index(), 2);
        // 15 attempts since the fallback, never 10 successes in a row and
        // never 2 failures in a row: up on the 15th (a success).
        let pattern = [true, true, true, true, true, true, true, false, true, true, true, true, true, true];
        for &ok in &pattern {
            a.report(ok);
            assert_eq!(a.rate_index(), 2);
        }
        a.report(true);
        assert_eq!(a.rate_index(), 3);
    }

    #[test]
    fn arf_stays_within_the_rate_set() {
        let mut a = arf();
        for _ in 0..20 {
            a.report(true);
        }
        assert_eq!(a.rate_index(), 3);
        for _ in 0..20 {
            a.report(false);
        }
        assert_eq!(a.rate_index(), 0);
    }

    /// Goes up from `a`'s rate and fails the probe.
    fn fail_a_probe(a: &mut Arf) {
        let from = a.rate_index();
        for _ in 0..a.success_threshold() {
            a.report(true);
        }
        assert_eq!(a.rate_index(), from + 1);
        a.report(false);
        assert_eq!(a.rate_index(), from);
    }

    #[test]
    fn aarf_failed_probes_double_the_threshold_up_to_fifty() {
        let mut a = Arf::new(B_RATES, true);
        a.report(false);
        a.report(false);
        assert_eq!((a.rate_index(), a.success_threshold()), (2, 10));
        for expected in [20, 40, 50, 50] {
            fail_a_probe(&mut a);
            assert_eq!(a.success_threshold(), expected);
        }
        // The timer follows: 2 × 50 = 100 attempts, so 49 successes do not
        // go up.
        for _ in 0..49 {
            a.report(true);
        }
        assert_eq!(a.rate_index(), 2);
    }

    #[test]
    fn aarf_a_normal_fallback_resets_the_threshold() {
        let mut a = Arf::new(B_RATES, true);
        a.report(false);
        a.report(false);
        fail_a_probe(&mut a);
        fail_a_probe(&mut a);
        assert_eq!(a.success_threshold(), 40);
        a.report(false);
        a.report(false);
        assert_eq!((a.rate_index(), a.success_threshold()), (1, 10));
        // ARF never changes its threshold.
        let mut b = arf();
        b.report(false);
        b.report(false);
        fail_a_probe(&mut b);
        assert_eq!(b.success_threshold(), 10);
    }
}
