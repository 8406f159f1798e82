//! The real clock mapped onto the engines' integer-nanosecond time.
//!
//! Engines take [`meshbed_core::Instant`]; a driver maps its own clock onto
//! it (STYLE.md "Time, randomness, determinism"). Here the origin is the
//! moment the [`Clock`] was made, and time is the monotonic
//! [`std::time::Instant`] since then, so engine time never goes backwards.

use meshbed_core::{Duration, Instant};

/// Wall-clock time as engine time.
#[derive(Copy, Clone, Debug)]
pub struct Clock {
    origin: std::time::Instant,
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

impl Clock {
    pub fn new() -> Self {
        Clock { origin: std::time::Instant::now() }
    }

    /// Now, as engine time.
    pub fn now(&self) -> Instant {
        self.to_engine(std::time::Instant::now())
    }

    /// A real instant as engine time (saturating at the origin).
    pub fn to_engine(&self, t: std::time::Instant) -> Instant {
        let ns = t.saturating_duration_since(self.origin).as_nanos();
        Instant::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX))
    }

    /// An engine deadline as a real instant.
    pub fn to_real(&self, t: Instant) -> std::time::Instant {
        self.origin + std::time::Duration::from_nanos(t.as_nanos())
    }
}

/// An engine duration as a std one.
pub fn to_std(d: Duration) -> std::time::Duration {
    std::time::Duration::from_nanos(d.as_nanos())
}

/// A std duration as an engine one (saturating).
pub fn from_std(d: std::time::Duration) -> Duration {
    Duration::from_nanos(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_moves_forward() {
        let clock = Clock::new();
        let a = clock.now();
        let b = clock.now();
        assert!(b >= a);
        let later = a + Duration::from_millis(5);
        assert_eq!(clock.to_engine(clock.to_real(later)), later);
    }
}
