//! Bounds of configuration values.
//!
//! Every key of a scenario or experiment file has its bound next to the code
//! that validates it (and a line in docs/PROTOCOLS.md, "Scenario limits");
//! this module only words the expectation the same way everywhere.

use std::fmt::Display;
use std::ops::RangeInclusive;

/// `Ok` if `value` lies in `range`, else the expectation to report, e.g.
/// "a transmit power in dBm from -30 to 40". NaN is in no range.
pub fn within<T: PartialOrd + Display>(value: T, range: RangeInclusive<T>, what: &str) -> Result<(), String> {
    if range.contains(&value) {
        Ok(())
    } else {
        Err(format!("{what} from {} to {}", range.start(), range.end()))
    }
}

#[cfg(test)]
mod tests {
    use super::within;

    #[test]
    fn boundary_pairs_and_nan() {
        assert_eq!(within(1.0, 1.0..=2.0, "x"), Ok(()));
        assert_eq!(within(2.0, 1.0..=2.0, "x"), Ok(()));
        assert_eq!(within(2.000001, 1.0..=2.0, "a size in m"), Err("a size in m from 1 to 2".into()));
        assert!(within(f64::NAN, f64::MIN..=f64::MAX, "x").is_err());
        assert!(within(0u32, 1..=10, "x").is_err());
    }
}
