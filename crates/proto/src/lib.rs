#![forbid(unsafe_code)]
//! meshbed's transport protocols as sans-IO engines.
//!
//! Every engine here is a deterministic state machine: it never reads a clock,
//! never touches a socket and draws no randomness of its own (a connection id
//! or initial sequence number is passed in by the driver, which takes it from
//! its own seeded stream). The simulator, the real-time emulator and the UDP
//! runtime all drive this same code through the [`Engine`] surface.
//!
//! * [`wire`]: the ATP/TCP-over-UDP header (seed 001 Fig. 3.2, seed 000 Fig. 2).
//! * [`relay`]: an intermediate node's delay averaging and stamping (seed 002 §4.1).
//! * [`atp`]: the ATP sender and receiver with default, aggressive and adaptive
//!   presets (seed 002 §4.2–4.3, seed 001 §2–3, seed 000 §V.A).
//! * [`tcp`]: TCP Tahoe, Reno and NewReno over the same encapsulation.
//! * [`mtl`]: MTL's transport module: Explicit Gap Notifications, a 200 KB
//!   sending buffer and the four-hop-delay rate (seed 004 §III.C).
//! * [`segments`]: the per-segment bookkeeping ATP's and MTL's senders
//!   share: the scoreboard, the cumulative ack, the retransmission queue.
//! * [`sender_core`] and [`receiver_core`]: the one sender and the one
//!   receiver skeleton (lifecycle, FIN and commit confirmation, idle timers,
//!   events, counters, the application's stream) that the ATP, MTL and TCP
//!   engines are, each with its protocol's control plugged in (quinn-proto's
//!   `Connection` and `congestion::Controller`).
//! * [`stream`]: the application side of the engines: a sender's bounded
//!   window refilled as data is acknowledged, and the commit confirmation.
//! * [`reorder`]: the out-of-order store both receivers share, charged for
//!   the memory it takes.
//! * [`connection`]: one connection's sender or receiver engine, built from
//!   a protocol and its settings, whichever protocol it runs.
//! * [`endpoint`]: a receiving endpoint's connection table: which datagram
//!   goes to which connection, which new one is accepted, evicted or refused,
//!   and which stray datagram is answered with a (rate-limited) reset.

pub mod atp;
pub mod connection;
pub mod endpoint;
pub mod engine;
mod engine_core;
mod filter;
/// Test and tool code, not part of the protocol: the library ships it only
/// with the `harness` feature (dev-dependencies turn it on).
#[cfg(any(test, feature = "harness"))]
pub mod harness;
pub mod mtl;
mod protocol_names;
pub mod receiver_core;
pub mod relay;
pub mod reorder;
pub mod segments;
pub mod sender_core;
pub mod stream;
pub mod tcp;
mod timer;
pub mod wire;

pub use engine::{Engine, EngineEvent, FailReason, PathInfo, Protocol, RouteNotice, Transmit};
pub use stream::{CommitToken, ReceiveStream, SendStream, COMMIT_TOKEN_LEN};
