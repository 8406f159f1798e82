//! Bounds of configuration values.
//!
//! Every key of a scenario or experiment file has its bound next to the code
//! that validates it (and a line in docs/PROTOCOLS.md, "Scenario limits");
//! this module only words the expectation the same way everywhere.

use std::ops::RangeInclusive;

/// A value with bounds, and how an error shows it.
pub trait Bounded: PartialOrd + Copy {
    /// The value as an error shows it: as written for ordinary numbers,
    /// in exponent form for huge or tiny ones (`1e308`, not 309 digits).
    fn text(self) -> String;
}

impl Bounded for f64 {
    fn text(self) -> String {
        if self != 0.0 && self.is_finite() && (self.abs() >= 1e15 || self.abs() < 1e-4) {
            format!("{self:e}")
        } else {
            self.to_string()
        }
    }
}

macro_rules! bounded_integer {
    ($($t:ty),*) => {$(
        impl Bounded for $t {
            fn text(self) -> String {
                self.to_string()
            }
        }
    )*};
}
bounded_integer!(u32, u64, usize);

/// `Ok` if `value` lies in `range`, else the expectation to report, e.g.
/// "a transmit power in dBm from -30 to 40". NaN is in no range.
pub fn within<T: Bounded>(value: T, range: RangeInclusive<T>, what: &str) -> Result<(), String> {
    if range.contains(&value) {
        Ok(())
    } else {
        Err(format!("{what} from {} to {}", range.start().text(), range.end().text()))
    }
}

#[cfg(test)]
mod tests {
    use super::{within, Bounded};

    #[test]
    fn boundary_pairs_and_nan() {
        assert_eq!(within(1.0, 1.0..=2.0, "x"), Ok(()));
        assert_eq!(within(2.0, 1.0..=2.0, "x"), Ok(()));
        assert_eq!(within(2.000001, 1.0..=2.0, "a size in m"), Err("a size in m from 1 to 2".into()));
        assert!(within(f64::NAN, f64::MIN..=f64::MAX, "x").is_err());
        assert!(within(0u32, 1..=10, "x").is_err());
        assert_eq!(1e308.text(), "1e308");
        assert_eq!(1e-12.text(), "1e-12");
        assert_eq!(0.001.text(), "0.001");
        assert_eq!(200.0.text(), "200");
    }
}
