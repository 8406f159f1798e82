#![deny(unsafe_code)] // sys.rs allows it for the few system calls nix has no safe wrapper for.
//! meshbed's real-time mesh emulator.
//!
//! Every mesh node is a Linux network namespace with a real kernel IP stack
//! and one TAP interface, `mesh0`: the kernel itself does ARP, routing and
//! forwarding, and any program (`meshbed send/recv`, iperf3, ping, the
//! kernel's TCP) runs unchanged inside a node. The frames the stacks send
//! cross one user-space model of the shared 802.11 medium — the simulator's
//! own radio and MAC model ([`meshbed_radio::Medium`]) — run against the
//! wall clock by the medium process.
//!
//! * [`realtime`]: the event loop behind a clock abstraction (wall clock and
//!   TAPs, or a virtual clock for tests), timing-error statistics, and the
//!   per-node delay export (seed 001 §3.1's driver change).
//! * [`forwarding`]: how long the relays' stacks take to forward a packet
//!   (what the simulator's relays do at once).
//! * [`plumbing`]: namespaces, TAP devices, addresses, static routes, state
//!   under `/run/meshbed/<id>/`, teardown and `clean`.
//! * [`linkfeed`]: each node's link-layer feedback (frames heard and their
//!   power, retry-limit failures) sent to its routing daemon.
//! * [`relay`]: the delay-collection daemon on NFQUEUE (seed 001 §3.2).
//! * [`routers`]: the nodes' routing daemons (`meshbed routed`), started
//!   and stopped with the emulation.
//! * [`traffic`]: running a scenario's flows on the emulator (the
//!   experiment layer's hook) and the speed bench; [`transfer`]: one
//!   transport flow as a real, verified transfer; [`kernel_tcp`]: one
//!   flow over the kernel's own TCP with its congestion control.
//! * [`support`]: what the emulator can run, and the refusal of the rest.
//! * [`sys`]: the Linux calls underneath.
//!
//! The emulator needs root: namespaces, TAP devices and netfilter.

pub mod forwarding;
pub mod kernel_tcp;
pub mod linkfeed;
pub mod plumbing;
pub mod realtime;
pub mod relay;
pub mod routers;
pub mod support;
pub mod sys;
pub mod traffic;
pub mod transfer;

pub use plumbing::{clean, EmuError, EmuState, Emulation, NodeRouting};
pub use realtime::{Backend, LoopSummary, MediumLoop, TapBackend, VirtualBackend};
pub use support::Emulator;
pub use traffic::{run_scenario, EmuOptions, EmuReport};
