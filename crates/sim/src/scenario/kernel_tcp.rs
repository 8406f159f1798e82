//! `protocol = "kernel-tcp"`: a transfer over the Linux kernel's own TCP
//! with a chosen congestion control (`cubic`, `reno`, `bbr`, ...), which the
//! emulator runs between the two end nodes' namespaces.
//!
//! It is not one of meshbed's transport engines ([`meshbed_proto::Protocol`]
//! is the list of those, which every backend runs), so it is a flow kind of
//! its own ([`super::FlowKind::KernelTcp`]) with only its own keys: the
//! kernel sizes its segments, keeps no engine trace and has no ATP or TCP
//! overrides of meshbed's. The simulator, which has no kernel, refuses it by
//! key ([`crate::backend::Simulator`]).

use super::error::{invalid, ScenarioError};
use super::flows::Amount;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Kernel TCP's name in a flow's `protocol` key and in results.
pub const KERNEL_TCP: &str = "kernel-tcp";

/// A transfer over the kernel's TCP from `src` to `dst` of a [`super::FlowSpec`].
#[derive(Clone, Debug, PartialEq)]
pub struct KernelTcpFlow {
    /// `congestion_control` (default `cubic`, Linux's own default).
    pub congestion_control: CongestionControl,
    /// `bytes`: a file moved and verified; or `stop_s`: a backlogged
    /// sender until then.
    pub amount: Amount,
}

impl KernelTcpFlow {
    /// A transfer of `amount` with Linux's default congestion control.
    pub fn new(amount: Amount) -> Self {
        KernelTcpFlow { congestion_control: CongestionControl::default(), amount }
    }

    /// Checks of kernel TCP flow `i` (endpoints, start and stop times
    /// already checked; the name of its congestion control when it was read).
    pub(super) fn validate(&self, i: usize) -> Result<(), ScenarioError> {
        // No upper bound: the data is generated as it is sent, never held.
        if self.amount == Amount::Bytes(0) {
            return Err(invalid(format!("flows[{i}].bytes"), 0, "a transfer of at least one byte"));
        }
        Ok(())
    }
}

/// A Linux TCP congestion control algorithm by its kernel name, as
/// `TCP_CONGESTION` takes it: 1 to [`CongestionControl::MAX_LEN`]
/// characters of `a`–`z`, `0`–`9` and `_` (the kernel's names: `cubic`,
/// `reno`, `bbr`, `htcp`, `westwood`...). Whether the kernel has it is the
/// emulator's check, on the host that runs it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct CongestionControl(String);

impl CongestionControl {
    /// Linux's `TCP_CA_NAME_MAX` is 16 bytes with the terminating NUL.
    pub const MAX_LEN: usize = 15;
    /// What a name must look like, for errors.
    pub const EXPECTED: &'static str =
        "a Linux TCP congestion control name (cubic, reno, bbr, ...): 1 to 15 characters of a-z, 0-9 and _";

    /// The algorithm called `name`, or [`Self::EXPECTED`] if no kernel
    /// could have one by that name.
    pub fn new(name: &str) -> Result<Self, &'static str> {
        let ok = (1..=Self::MAX_LEN).contains(&name.len())
            && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if ok {
            Ok(CongestionControl(name.to_string()))
        } else {
            Err(Self::EXPECTED)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl schemars::JsonSchema for CongestionControl {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CongestionControl".into()
    }

    /// A name as [`CongestionControl::new`] takes it.
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let pattern = format!("^[a-z0-9_]{{1,{}}}$", Self::MAX_LEN);
        schemars::json_schema!({ "type": "string", "pattern": pattern })
    }
}

impl Default for CongestionControl {
    /// `cubic`, Linux's default since 2.6.19.
    fn default() -> Self {
        CongestionControl("cubic".into())
    }
}

impl fmt::Display for CongestionControl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for CongestionControl {
    type Error = String;
    fn try_from(name: String) -> Result<Self, String> {
        CongestionControl::new(&name).map_err(|expected| format!("congestion_control = {name:?}: expected {expected}"))
    }
}

impl From<CongestionControl> for String {
    fn from(c: CongestionControl) -> String {
        c.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_1_to_15_lowercase_letters_digits_or_underscores() {
        for good in ["cubic", "reno", "bbr", "h_tcp2", "a", "abcdefghijklmno"] {
            assert_eq!(CongestionControl::new(good).unwrap().as_str(), good);
        }
        for bad in ["", "abcdefghijklmnop", "Cubic", "bbr-2", "cu bic", "cubic\n", "../reno", "réno"] {
            assert_eq!(CongestionControl::new(bad), Err(CongestionControl::EXPECTED), "{bad:?}");
        }
        assert_eq!(CongestionControl::default().as_str(), "cubic");
    }

    #[test]
    fn it_reads_and_writes_as_its_name_and_refuses_a_bad_one() {
        let c: CongestionControl = serde_json::from_str("\"bbr\"").unwrap();
        assert_eq!(serde_json::to_string(&c).unwrap(), "\"bbr\"");
        let e = serde_json::from_str::<CongestionControl>("\"BBR\"").unwrap_err().to_string();
        assert!(e.starts_with("congestion_control = \"BBR\": expected a Linux TCP congestion control name"), "{e}");
    }
}
