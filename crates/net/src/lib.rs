#![forbid(unsafe_code)]
//! meshbed's UDP runtime: the same sans-IO engines the simulator drives
//! ([`meshbed_proto`]), driven over real UDP sockets with the real clock, to
//! move files between hosts as the thesis ran ATP between real machines
//! (seed 001 §3.3).
//!
//! * [`clock`]: the monotonic clock as engine time.
//! * [`udp`]: a non-blocking socket with `recvmmsg`/`sendmmsg` batching and
//!   nanosecond `ppoll` waits.
//! * [`framing`]: the transfer header (name, size, SHA-256) in front of a
//!   file's bytes, and the [`framing::Sink`] that writes a temporary file
//!   and gives it its name only when complete and verified.
//! * [`delay`]: where the sender's own node (or a relay) gets its delay D
//!   (a `/proc`-style file, a fixed value, or an end-to-end estimate), and
//!   the stamping of D_max and N_h.
//! * [`conn`]: protocol presets on the wire (the connection id's top bits)
//!   and the engine wrappers.
//! * [`send`] and [`recv`]: the two event loops, one per process.
//! * [`linkfeed`]: link-layer feedback (frames heard and their power, retry
//!   failures) from the emulator's medium to a node's routing daemon.
//! * [`notice`]: route notices and path information from a node's routing
//!   daemon to the transports on the node, over a local socket.
//!
//! Everything here is I/O glue; no protocol decision is made in this crate.

pub mod auth;
pub mod clock;
pub mod conn;
pub mod delay;
pub mod framing;
pub mod generated;
pub mod interval;
pub mod linkfeed;
pub mod notice;
pub mod recv;
pub mod reverse;
pub mod send;
pub mod udp;

pub use delay::DelaySpec;
pub use framing::SinkKind;
pub use recv::{
    ReceiveOptions, Receiver, ReceiverCounters, ReceiverEvent, SpaceLimits, TransferProgress, TransferReport,
};
pub use send::{send, FailedAttempt, Payload, SendError, SendOptions, SendProgress, SendReport};
