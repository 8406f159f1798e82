#![deny(unsafe_code)]
//! Shared foundations of meshbed.
//!
//! * [`time`]: `Instant` and `Duration` as integer nanoseconds. Every driver
//!   (simulator, real-time emulator, socket runtime) maps its clock onto them;
//!   nothing in this crate reads a clock.
//! * [`rng`]: one run seed, one independent random stream per component
//!   (ns-3 `AssignStreams`): adding a node never changes the draws of another.
//! * [`queue`]: the event queue ordered by `(time, insertion sequence)` so that
//!   simultaneous events run in the order they were scheduled (ns-3 `scheduler.h`).
//! * [`trace`]: a stable 64-bit hash of an event trace, for determinism checks.
//! * [`invalid`]: [`InvalidValue`], the one "key = value: expected …" error.
//! * [`limits`]: how a value outside its documented bounds is reported.
//! * [`stats`]: a sample's mean, sd, median, extremes and 95% confidence
//!   interval, for every report that summarises samples.
//!
//! This crate does no I/O and keeps no global state.

pub mod hint;
pub mod invalid;
pub mod limits;
pub mod queue;
pub mod rng;
pub mod stats;
pub mod time;
pub mod trace;

pub use invalid::InvalidValue;
pub use queue::{EventQueue, TimerId};
pub use rng::{stream_rng, StreamId, StreamKind, StreamRng};
pub use time::{Duration, Instant};
pub use trace::TraceHash;
