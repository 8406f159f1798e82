//! What every engine of one connection keeps, sender or receiver, whatever
//! its protocol: [`EngineCore`] is the state [`crate::sender_core`] and
//! [`crate::receiver_core`] build their skeletons on, lent to a protocol's
//! control with each hook.
//!
//! It owns the connection's identity (protocol id and connection id, for
//! screening datagrams and writing headers), its lifecycle ([`Phase`]), the
//! timer table, the event queue, the counters, and when the peer was last
//! heard from; plus, in `stream`, the role's own part of the byte stream: a
//! sender's end of it (FIN, commit confirmation), a receiver's reassembly.

use crate::engine::{EngineEvent, FailReason, Stats, TraceSample};
use crate::timer::{TimerId, TimerTable};
use crate::wire::{self, Control, ProtocolId, Repr};
use meshbed_core::Instant;
use std::collections::VecDeque;

/// Where a connection is in its life, whatever its protocol and role.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// No handshake yet: a sender waits for its SYN or probe to be answered
    /// (ATP's quick-start, MTL's and TCP's SYN), a receiver for the sender's
    /// first packet (no idle timeout while listening).
    Connecting,
    Established,
    /// Every byte and the FIN are through. A receiver of a protocol that
    /// lingers still answers repeated FINs until its linger time passes.
    Finished,
    /// A lingering receiver lingered long enough; nothing more will happen.
    Closed,
    Failed,
}

/// The state every engine of one connection keeps; `S` is its role's part
/// of the byte stream.
#[derive(Debug)]
pub(crate) struct EngineCore<T, S> {
    protocol: ProtocolId,
    connection_id: u32,
    phase: Phase,
    pub(crate) timers: TimerTable<T>,
    events: VecDeque<EngineEvent>,
    pub(crate) stats: Stats,
    /// Whether trace samples are queued as events.
    trace: bool,
    /// When the peer was last heard from (any datagram the control took).
    pub(crate) last_heard: Instant,
    pub(crate) stream: S,
}

impl<T: TimerId, S> EngineCore<T, S> {
    /// A connecting engine of `connection_id` (the header's `protocol`).
    pub(crate) fn new(protocol: ProtocolId, connection_id: u32, now: Instant, trace: bool, stream: S) -> Self {
        EngineCore {
            protocol,
            connection_id,
            phase: Phase::Connecting,
            timers: TimerTable::default(),
            events: VecDeque::new(),
            stats: Stats::default(),
            trace,
            last_heard: now,
            stream,
        }
    }

    pub(crate) fn connection_id(&self) -> u32 {
        self.connection_id
    }
    pub(crate) fn phase(&self) -> Phase {
        self.phase
    }

    /// Counts a datagram that arrived and parses it, with whether it is this
    /// connection's (its protocol and id); a malformed one is counted as
    /// dropped.
    pub(crate) fn receive<'d>(&mut self, datagram: &'d [u8]) -> Option<(Repr, &'d [u8], bool)> {
        self.stats.datagrams_received += 1;
        let Ok((repr, payload)) = wire::parse_datagram(datagram) else {
            self.stats.dropped_datagrams += 1;
            return None;
        };
        let ours = repr.protocol == self.protocol && repr.connection_id == self.connection_id;
        Some((repr, payload, ours))
    }

    /// The header of this connection's next datagram: `control`, `seq` and
    /// `ack`, everything else zero (the caller sets what its protocol
    /// carries).
    pub(crate) fn header(&self, control: Control, seq: u64, ack: u64) -> Repr {
        Repr {
            protocol: self.protocol,
            control,
            hop_count: 0,
            connection_id: self.connection_id,
            seq,
            ack,
            d_max_us: 0,
            d_s_us: 0,
            sack_blocks: Vec::new(),
            payload_len: 0,
        }
    }

    pub(crate) fn push_event(&mut self, event: EngineEvent) {
        self.events.push_back(event);
    }
    pub(crate) fn poll_event(&mut self) -> Option<EngineEvent> {
        self.events.pop_front()
    }
    /// Queues a trace sample, if the connection traces.
    pub(crate) fn trace(&mut self, sample: TraceSample) {
        if self.trace {
            self.events.push_back(EngineEvent::Trace(sample));
        }
    }

    /// The handshake completed.
    pub(crate) fn establish(&mut self) {
        self.phase = Phase::Established;
        self.events.push_back(EngineEvent::Connected);
    }
    /// Every byte and the FIN are through.
    pub(crate) fn finish(&mut self) {
        self.phase = Phase::Finished;
        self.events.push_back(EngineEvent::Finished);
    }
    /// A lingering receiver is done lingering.
    pub(crate) fn close(&mut self) {
        self.phase = Phase::Closed;
        self.timers.stop_all();
    }
    /// The connection gives up; nothing more will happen.
    pub(crate) fn fail(&mut self, reason: FailReason) {
        self.phase = Phase::Failed;
        self.timers.stop_all();
        self.events.push_back(EngineEvent::Failed(reason));
    }
}
