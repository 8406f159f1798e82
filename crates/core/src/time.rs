//! Integer-nanosecond time (STYLE.md "Time, randomness, determinism").
//!
//! `Instant` counts nanoseconds from the start of a run (or from an arbitrary
//! epoch chosen by a real-time driver); `Duration` is a span. Both are `u64`
//! newtypes: 2^64 ns is 584 years, so overflow is not a practical concern, but
//! subtraction saturates rather than panicking so that a late timer can never
//! crash a driver.

use core::fmt;
use core::ops::{Add, AddAssign, Mul, Sub, SubAssign};
use serde::{Deserialize, Serialize};

/// A point in time, in nanoseconds since the driver's epoch.
#[derive(Copy, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Instant(u64);

/// A span of time in nanoseconds.
#[derive(Copy, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Duration(u64);

impl Instant {
    pub const ZERO: Instant = Instant(0);
    pub const MAX: Instant = Instant(u64::MAX);

    pub const fn from_nanos(ns: u64) -> Self {
        Instant(ns)
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// `self - earlier`, or zero when `earlier` is later.
    pub const fn saturating_since(self, earlier: Instant) -> Duration {
        Duration(self.0.saturating_sub(earlier.0))
    }
    pub const fn saturating_add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }
}

impl Duration {
    pub const ZERO: Duration = Duration(0);
    pub const MAX: Duration = Duration(u64::MAX);

    pub const fn from_nanos(ns: u64) -> Self {
        Duration(ns)
    }
    pub const fn from_micros(us: u64) -> Self {
        Duration(us * 1_000)
    }
    pub const fn from_millis(ms: u64) -> Self {
        Duration(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Self {
        Duration(s * 1_000_000_000)
    }
    /// Rounds to the nearest nanosecond; negative and NaN inputs give zero.
    pub fn from_secs_f64(s: f64) -> Self {
        if s.is_nan() || s <= 0.0 {
            Duration(0)
        } else if s >= u64::MAX as f64 / 1e9 {
            Duration(u64::MAX)
        } else {
            Duration((s * 1e9).round() as u64)
        }
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    pub const fn saturating_sub(self, other: Duration) -> Duration {
        Duration(self.0.saturating_sub(other.0))
    }
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.0))
    }
}
impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}
impl Sub<Duration> for Instant {
    type Output = Instant;
    fn sub(self, d: Duration) -> Instant {
        Instant(self.0.saturating_sub(d.0))
    }
}
impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_since(earlier)
    }
}
impl Add for Duration {
    type Output = Duration;
    fn add(self, d: Duration) -> Duration {
        Duration(self.0.saturating_add(d.0))
    }
}
impl AddAssign for Duration {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}
impl Sub for Duration {
    type Output = Duration;
    fn sub(self, d: Duration) -> Duration {
        Duration(self.0.saturating_sub(d.0))
    }
}
impl SubAssign for Duration {
    fn sub_assign(&mut self, d: Duration) {
        *self = *self - d;
    }
}
impl Mul<u64> for Duration {
    type Output = Duration;
    fn mul(self, k: u64) -> Duration {
        Duration(self.0.saturating_mul(k))
    }
}

impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:09}s", self.0 / 1_000_000_000, self.0 % 1_000_000_000)
    }
}
impl fmt::Display for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}
impl fmt::Debug for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 >= 1_000_000_000 {
            write!(f, "{:.6}s", self.as_secs_f64())
        } else if self.0 >= 1_000 {
            write!(f, "{:.3}us", self.0 as f64 / 1e3)
        } else {
            write!(f, "{}ns", self.0)
        }
    }
}
impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// The one parser for durations on command lines and in `fixed:D` delay
/// sources: a number with its unit, `2ms`, `500us`, `10s`, `1.5s`, `2min`,
/// or a sum such as `1s 500ms` (the humantime grammar; units ns, us/µs, ms,
/// s, min, h). A bare number is refused: meshbed once read one as
/// microseconds in delay sources and as seconds in timeouts, so requiring
/// the unit keeps a command line from meaning two things.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    const EXPECTED: &str = "expected a number with a unit, e.g. 2ms, 500us or 10s";
    let t = s.trim();
    match humantime::parse_duration(t) {
        Ok(d) => u64::try_from(d.as_nanos())
            .map(Duration)
            .map_err(|_| format!("`{s}`: too long (at most {} s)", u64::MAX / 1_000_000_000)),
        Err(humantime::DurationError::UnknownUnit { unit, .. }) if unit.is_empty() => {
            Err(format!("`{s}`: a duration needs its unit; {EXPECTED}"))
        }
        Err(e) => Err(format!("`{s}`: {e}; {EXPECTED}")),
    }
}

impl From<Duration> for std::time::Duration {
    fn from(d: Duration) -> Self {
        std::time::Duration::from_nanos(d.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates_instead_of_panicking() {
        let t = Instant::from_nanos(5);
        assert_eq!(t - Duration::from_nanos(10), Instant::ZERO);
        assert_eq!(Instant::ZERO - t, Duration::ZERO);
        assert_eq!(Instant::MAX + Duration::from_secs(1), Instant::MAX);
        assert_eq!(t + Duration::from_micros(1), Instant::from_nanos(1_005));
    }

    #[test]
    fn float_conversion_rounds_and_clamps() {
        assert_eq!(Duration::from_secs_f64(1.5e-9), Duration::from_nanos(2));
        assert_eq!(Duration::from_secs_f64(-1.0), Duration::ZERO);
        assert_eq!(Duration::from_secs_f64(f64::NAN), Duration::ZERO);
        assert_eq!(Duration::from_secs_f64(0.04), Duration::from_millis(40));
    }

    #[test]
    fn parse_duration_requires_a_unit() {
        assert_eq!(parse_duration("2ms"), Ok(Duration::from_millis(2)));
        assert_eq!(parse_duration("500us"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_duration("500µs"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_duration(" 10s "), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("0.5s"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("800ns"), Ok(Duration::from_nanos(800)));
        assert_eq!(parse_duration("2min"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1s 500ms"), Ok(Duration::from_millis(1_500)));
        for bare in ["250", "0.5", "10"] {
            let e = parse_duration(bare).unwrap_err();
            assert!(e.contains(&format!("`{bare}`")), "{e}");
            assert!(e.contains("needs its unit") && e.contains("2ms"), "{e}");
        }
        for bad in ["", "2parsecs", "-1ms", "ms", "fixed:2ms"] {
            let e = parse_duration(bad).unwrap_err();
            assert!(e.contains(&format!("`{bad}`")) && e.contains("e.g. 2ms"), "{e}");
        }
        // Just inside and just outside what a u64 of nanoseconds holds.
        assert_eq!(parse_duration("18446744073s"), Ok(Duration::from_secs(18_446_744_073)));
        assert!(parse_duration("18446744074s").unwrap_err().contains("too long"));
    }

    #[test]
    fn converts_to_std_duration() {
        assert_eq!(std::time::Duration::from(Duration::from_nanos(1_500)), std::time::Duration::from_nanos(1_500));
    }
}
