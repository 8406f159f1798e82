//! Automatic rate selection for unicast DATA frames (issue 13; seed 003 §4:
//! the testbed's 802.11b cards ran "automatic rate selection").
//!
//! One small state machine per (transmitter, receiver) pair, told the
//! outcome of every DATA attempt (ACK received: success; ACK timeout:
//! failure) and asked for the rate of every DATA attempt, retries included.
//! None has a clock or a random source of its own: the MAC passes `now`,
//! and Minstrel's look-around table is drawn from the node's stream.
//!
//! The rates an algorithm may use are the standard's rates up to the node's
//! configured data rate, which is the highest; rates are named here by their
//! index in that ascending set.
//!
//! * [`Arf`] with `adaptive = false`: ARF (Kamerman & Monteban 1997, as
//!   ns-3's `ArfWifiManager` describes it);
//! * [`Arf`] with `adaptive = true`: AARF (Lacage, Manshaei & Turletti 2004,
//!   ns-3's `AarfWifiManager`);
//! * [`Minstrel`]: Linux's minstrel as ns-3's `MinstrelWifiManager`
//!   documents it.
//!
//! Files: this one has the choice ([`RateControl`]) and the per-pair
//! [`Controller`]; `arf.rs` ARF and AARF; `minstrel.rs` Minstrel.
//!
//! An RTS that gets no CTS does not move the rate: RTS and CTS go at a basic
//! rate, so a missing CTS says the receiver was busy or the RTS collided, not
//! that the data rate is too high (ns-3's ARF, AARF and Minstrel do the same:
//! their RTS-failure hooks leave the rate alone).

mod arf;
mod minstrel;

pub use arf::{
    Arf, AARF_MAX_SUCCESS_THRESHOLD, AARF_SUCCESS_FACTOR, AARF_TIMER_FACTOR, ARF_SUCCESS_THRESHOLD, ARF_TIMER_THRESHOLD,
};
pub use minstrel::{
    Minstrel, MinstrelTiming, MINSTREL_EWMA_LEVEL_PERCENT, MINSTREL_LOOKAROUND_PERCENT, MINSTREL_REFERENCE_BYTES,
    MINSTREL_SAMPLE_COLUMNS, MINSTREL_SEGMENT, MINSTREL_UPDATE_INTERVAL,
};

use meshbed_core::{Instant, StreamRng};
use serde::{Deserialize, Serialize};

/// Which algorithm picks a node's DATA rate (`[radio.mac] rate_control`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum RateControl {
    /// The configured data rate for every frame (the thesis testbeds, seed
    /// 001 §4.1; today's behaviour).
    #[default]
    Fixed,
    Arf,
    Aarf,
    Minstrel,
}

impl RateControl {
    /// Every algorithm, in the order of [`RateControl::NAMES`].
    pub const ALL: [RateControl; 4] = [RateControl::Fixed, RateControl::Arf, RateControl::Aarf, RateControl::Minstrel];
    /// The names a scenario writes.
    pub const NAMES: [&'static str; 4] = ["fixed", "arf", "aarf", "minstrel"];

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// The algorithm called `name` (one of [`RateControl::NAMES`]).
    pub fn from_name(name: &str) -> Option<RateControl> {
        Self::ALL.into_iter().find(|r| r.name() == name)
    }

    /// The accepted names, quoted, for error messages.
    pub fn expected() -> String {
        let names: Vec<String> = Self::NAMES.iter().map(|n| format!("\"{n}\"")).collect();
        format!("one of {}", names.join(", "))
    }

    pub fn is_fixed(&self) -> bool {
        *self == RateControl::Fixed
    }
}

impl Serialize for RateControl {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl schemars::JsonSchema for RateControl {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RateControl".into()
    }

    /// One of [`RateControl::NAMES`].
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "enum": RateControl::NAMES })
    }
}

impl<'de> Deserialize<'de> for RateControl {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        RateControl::from_name(&name).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "radio.mac.rate_control = \"{name}\": expected {}",
                RateControl::expected()
            ))
        })
    }
}

/// One pair's rate controller (static dispatch over the algorithms).
#[derive(Clone, Debug, PartialEq)]
pub enum Controller {
    /// The highest rate of the set, always.
    Fixed {
        top: usize,
    },
    Arf(Arf),
    Minstrel(Box<Minstrel>),
}

impl Controller {
    /// A controller of kind `kind` over `n_rates` rates at `now`; Minstrel
    /// draws its look-around table from `rng` and its retry counts from `timing`.
    pub fn new(kind: RateControl, now: Instant, timing: &MinstrelTiming, rng: &mut StreamRng) -> Self {
        let n = timing.perfect_tx_time.len();
        match kind {
            RateControl::Fixed => Controller::Fixed { top: n.saturating_sub(1) },
            RateControl::Arf => Controller::Arf(Arf::new(n, false)),
            RateControl::Aarf => Controller::Arf(Arf::new(n, true)),
            RateControl::Minstrel => Controller::Minstrel(Box::new(Minstrel::new(now, timing, rng))),
        }
    }

    /// The first attempt of a new frame is about to be chosen.
    pub fn start_frame(&mut self, now: Instant) {
        if let Controller::Minstrel(m) = self {
            m.start_frame(now);
        }
    }

    /// Index of the rate for the attempt after `data_failures` failed DATA
    /// attempts of the current frame.
    pub fn rate_index(&self, data_failures: u32) -> usize {
        match self {
            Controller::Fixed { top } => *top,
            Controller::Arf(a) => a.rate_index(),
            Controller::Minstrel(m) => m.rate_index(data_failures),
        }
    }

    /// The outcome of one DATA attempt at rate index `rate`.
    pub fn report(&mut self, rate: usize, success: bool) {
        match self {
            Controller::Fixed { .. } => {}
            Controller::Arf(a) => a.report(success),
            Controller::Minstrel(m) => m.report(rate, success),
        }
    }

    /// The frame is done after `data_failures` failed DATA attempts.
    pub fn end_frame(&mut self, data_failures: u32) {
        if let Controller::Minstrel(m) = self {
            m.end_frame(data_failures);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_list_the_accepted_ones() {
        for r in RateControl::ALL {
            assert_eq!(RateControl::from_name(r.name()), Some(r));
        }
        assert_eq!(RateControl::from_name("sample"), None);
        assert_eq!(RateControl::expected(), "one of \"fixed\", \"arf\", \"aarf\", \"minstrel\"");
        assert_eq!(RateControl::default(), RateControl::Fixed);
    }

    #[test]
    fn an_unknown_name_in_a_scenario_names_the_key_the_value_and_the_choices() {
        use serde::de::value::{Error, StrDeserializer};
        let read = |v: &'static str| RateControl::deserialize(StrDeserializer::<Error>::new(v));
        assert_eq!(read("aarf").unwrap(), RateControl::Aarf);
        let e = read("onoe").unwrap_err().to_string();
        assert!(e.contains("radio.mac.rate_control = \"onoe\"") && e.contains("\"minstrel\""), "{e}");
    }
}
