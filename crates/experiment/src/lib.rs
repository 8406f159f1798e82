//! The experiment layer of meshbed: from a scenario file with a sweep to
//! tables and figures.
//!
//! * [`metrics`]: the documents' metrics (goodput, sliding-window goodput,
//!   unfairness, log utility, starvation, Jain's index, mean ± sd).
//! * [`plot`]: figures as PNG and SVG.

pub mod metrics;
pub mod plot;
