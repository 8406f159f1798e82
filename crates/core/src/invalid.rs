//! The one error value for "this key has a value that makes no sense":
//! every validation of every layer (radio, mobility, scenario, experiment)
//! returns an [`InvalidValue`], and a layer that reads a part of a bigger
//! file prefixes the key path once, in one place ([`InvalidValue::under`]):
//! `data_rate_kbps` → `radio.data_rate_kbps`, `bytes` → `flows[2].bytes`.
//! The CLI and Python print its text as it is.

use std::fmt;

/// `key = value: expected …`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidValue {
    /// The key's dotted path in the file (`radio.data_rate_kbps`,
    /// `flows[2].atp.kappa`), as far as the layer that made it knows it.
    pub key: String,
    /// The value as the file wrote it (strings quoted), or a description
    /// in parentheses (`(missing)`, `(given)`).
    pub value: String,
    /// What would have been accepted.
    pub expected: String,
}

impl InvalidValue {
    pub fn new(key: impl Into<String>, value: impl ToString, expected: impl Into<String>) -> Self {
        InvalidValue { key: key.into(), value: value.to_string(), expected: expected.into() }
    }

    /// The same error, its key inside `table` (`radio`, `flows[2]`,
    /// `random_flows.flow`): `table.key`.
    pub fn under(mut self, table: &str) -> Self {
        if !table.is_empty() {
            self.key = if self.key.is_empty() { table.to_string() } else { format!("{table}.{}", self.key) };
        }
        self
    }
}

impl fmt::Display for InvalidValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {}: expected {}", self.key, self.value, self.expected)
    }
}

impl std::error::Error for InvalidValue {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_prefixed_once_per_enclosing_table() {
        let e = InvalidValue::new("kappa", 2.0, "an increase factor in (0, 1]").under("atp").under("flows[2]");
        assert_eq!(e.to_string(), "flows[2].atp.kappa = 2: expected an increase factor in (0, 1]");
        assert_eq!(InvalidValue::new("x", 1, "y").under("").key, "x");
    }
}
