#![forbid(unsafe_code)]
//! The multi-hop IEEE 802.11 model of meshbed.
//!
//! * [`phy`]: 802.11a/b/g timings, rates and airtime.
//! * [`propagation`]: log-distance, Friis and two-ray ground path loss, static
//!   log-normal shadowing, per-frame Rayleigh/Nakagami fading.
//! * [`config`]: the `[radio]` configuration and its validation.
//! * [`link`]: the link budget and neighbour table (who hears whom), usable
//!   without a MAC.
//! * [`rate_control`]: automatic rate selection (ARF, AARF, Minstrel), one
//!   state machine per link, off by default.
//! * [`medium`]: every node's PHY (SINR with cumulative interference,
//!   preamble lock-on, energy carrier sense) and DCF MAC, one module per
//!   concern behind the [`Medium`] façade.
//!
//! The model is a pure function of its events and its seed: it reads no
//! clock, so the simulator can run it as fast as possible and the emulator
//! against the wall clock.

pub mod config;
mod grid;
pub mod link;
pub mod medium;
pub mod phy;
pub mod propagation;
pub mod rate_control;

pub use config::{BatchedCompletion, ConfigError, ErrorModel, MacConfig, RadioConfig};
pub use link::{LinkBudget, Neighbour};
pub use medium::{
    Addr, AirEvent, AirFrame, DropCause, FrameKind, Indication, LinkRates, MacCounters, Medium, NodeId, NodeRadio,
    Payload, RadioEvent, RadioTimer, RateCount, Scheduler, TxOutcome, TxReport,
};
pub use phy::Standard;
pub use propagation::{Fading, Floors, Propagation};
pub use rate_control::RateControl;
