//! The receiver skeleton ATP, MTL and TCP share, as [`crate::sender_core`]
//! is the senders': [`Receiver`] is the one [`Engine`] and [`ReceiveStream`]
//! implementation of every receiver, and a protocol plugs in what it
//! decides for itself through `ReceiveControl`: what its feedback says and
//! when it goes (ATP's epochs and D_avg, MTL's EGNs, TCP's ACKs).
//!
//! `ReceiverCore` is what the skeleton owns and lends to the control: the
//! state every engine keeps (`engine_core::EngineCore`: the lifecycle, the
//! timer table, the event queue, the counters) with the byte stream being
//! put back together (`Reassembly`: the cumulative ack, the out-of-order
//! store, the bytes the application has not read, the FIN, and the
//! receiver's side of the commit confirmation). Of the timers the skeleton
//! runs `ReceiverTimer::IDLE` itself and, for a protocol that lingers after
//! finishing, `ReceiverTimer::LINGER`. The traits are crate-private: only
//! this crate's protocols implement a receiver.
//!
//! # The commit confirmation (issue 9; docs/PROTOCOLS.md §6)
//!
//! Every acknowledgement of the FIN (with every byte before it) carries the
//! token the application gave ([`ReceiveStream::set_commit_token`]); while
//! the application holds it back ([`ReceiveStream::hold_fin_ack_for_commit`])
//! the FIN is not acknowledged at all, so the sender cannot finish before
//! the receiver committed. `ReceiverCore::fin_ack` is that rule.

use crate::engine::{Engine, EngineEvent, FailReason, RouteNotice, Stats, Transmit};
use crate::engine_core::{EngineCore, Phase};
use crate::reorder::{Offer, ReorderBuffer};
use crate::stream::{CommitToken, ReceiveStream};
use crate::timer::TimerId;
use crate::wire::{Control, Repr};
use meshbed_core::Instant;
use std::collections::VecDeque;

/// Where a receiver is in its life, whatever its protocol (ATP's
/// `ReceiverState`, MTL's `MtlReceiverState`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ReceiverState {
    /// Waiting for the sender's first packet (no idle timeout while
    /// listening).
    Listening,
    Established,
    /// Every byte up to the FIN delivered; lingering to answer repeated FINs.
    Finished,
    /// Lingered long enough; nothing more will happen.
    Closed,
    Failed,
}

/// The timers every receiver has: slots of its protocol's timer enum.
pub(crate) trait ReceiverTimer: TimerId {
    /// Nothing heard from the sender for as long as the protocol allows.
    const IDLE: Self;
    /// A finished receiver closes (`None`: the protocol does not linger,
    /// its receiver is closed once finished).
    const LINGER: Option<Self>;
}

/// In-order bytes a receiver delivered that the application has not read yet.
#[derive(Clone, Debug, Default)]
pub(crate) struct ReceiveBuffer(VecDeque<u8>);

impl ReceiveBuffer {
    /// Copies up to `buf.len()` bytes into `buf`, returning how many (a
    /// slice copy: byte by byte it took an eighth of a loopback receiver's
    /// CPU).
    pub(crate) fn read(&mut self, buf: &mut [u8]) -> usize {
        let n = buf.len().min(self.0.len());
        let (front, back) = self.0.as_slices();
        let from_front = n.min(front.len());
        buf[..from_front].copy_from_slice(&front[..from_front]);
        buf[from_front..n].copy_from_slice(&back[..n - from_front]);
        self.0.drain(..n);
        n
    }
    /// Takes every byte not yet read, keeping the buffer's capacity.
    pub(crate) fn take_all(&mut self) -> Vec<u8> {
        let (front, back) = self.0.as_slices();
        let mut all = Vec::with_capacity(front.len() + back.len());
        all.extend_from_slice(front);
        all.extend_from_slice(back);
        self.0.clear();
        all
    }
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
}

/// The byte stream a receiver puts back together.
#[derive(Debug)]
pub(crate) struct Reassembly {
    /// The next byte expected in order (ATP's and MTL's cumulative ack,
    /// TCP's `rcv_nxt`, which also counts the SYN and the FIN).
    pub(crate) next: u64,
    /// Bytes held beyond `next`, charged for their memory ([`crate::reorder`]).
    pub(crate) out_of_order: ReorderBuffer,
    /// In-order bytes not yet read by the application.
    pub(crate) delivered: ReceiveBuffer,
    /// Where the FIN sits, once seen.
    pub(crate) fin_seq: Option<u64>,
    /// Unread in-order bytes plus those held out of order span at most this
    /// many bytes past the last byte read (ATP's and TCP's
    /// `set_receive_buffer`).
    pub(crate) receive_buffer_bytes: u64,
    /// The configured out-of-order limit, which a driver may only lower.
    max_reorder_bytes: u64,
    /// Whether the FIN's acknowledgement waits for a commit token, and the
    /// token once the application gave it.
    commit: CommitConfirmation,
}

impl Reassembly {
    /// An empty stream expecting byte `next` first, holding at most
    /// `max_reorder_bytes` out of order (and, by default, as receive buffer).
    pub(crate) fn new(next: u64, max_reorder_bytes: u64) -> Self {
        Reassembly {
            next,
            out_of_order: ReorderBuffer::new(max_reorder_bytes),
            delivered: ReceiveBuffer::default(),
            fin_seq: None,
            receive_buffer_bytes: max_reorder_bytes,
            max_reorder_bytes,
            commit: CommitConfirmation::default(),
        }
    }

    /// Takes `[seq, seq + data.len())`: delivers what became in order
    /// (counted in `stats`) and holds the rest within the reorder limit.
    pub(crate) fn offer(&mut self, stats: &mut Stats, seq: u64, data: &[u8]) -> Offer {
        let delivered = &mut self.delivered;
        let offer = self.out_of_order.offer(self.next, seq, data, |bytes| delivered.0.extend(bytes));
        if let Offer::Accepted { delivered } = offer {
            self.next += delivered;
            stats.bytes_delivered += delivered;
        }
        offer
    }

    /// The first byte the application has not read: the receive buffer
    /// starts there, so a reader that falls behind shrinks what is accepted
    /// (memory stays bounded).
    pub(crate) fn read_upto(&self) -> u64 {
        self.next - self.delivered.len() as u64
    }

    pub(crate) fn set_receive_buffer(&mut self, bytes: u64) {
        self.receive_buffer_bytes = bytes.max(1);
    }
}

/// A receiver's side of the commit confirmation: whether the FIN's
/// acknowledgement waits for the application, and the token it carries.
#[derive(Copy, Clone, Debug, Default)]
struct CommitConfirmation {
    hold: bool,
    token: Option<CommitToken>,
}

/// How a receiver acknowledges a FIN it has, with every byte before it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum FinAck {
    /// Acknowledge it, carrying the token.
    Confirmed(CommitToken),
    /// Acknowledge it plainly (nobody asked for a confirmation).
    Plain,
    /// Do not acknowledge it yet: the application has not committed. The
    /// acknowledgement of the data carries how far it has read (a drain
    /// report, [`crate::stream::DRAIN_REPORT_LEN`]).
    Held { read_upto: u64 },
}

/// What the skeleton lends a receiver's control: the [`EngineCore`] every
/// engine keeps, with the stream it puts back together.
pub(crate) type ReceiverCore<T> = EngineCore<T, Reassembly>;

impl<T: ReceiverTimer> ReceiverCore<T> {
    /// Whether the connection is over: closed or failed, or finished for a
    /// protocol that does not linger.
    pub(crate) fn is_closed(&self) -> bool {
        match self.phase() {
            Phase::Closed | Phase::Failed => true,
            Phase::Finished => T::LINGER.is_none(),
            Phase::Connecting | Phase::Established => false,
        }
    }

    /// How to acknowledge what the receiver has: `None` unless the
    /// acknowledgement covers the FIN with every byte before it
    /// (`covers_fin`), else what the application's commit allows.
    pub(crate) fn fin_ack(&self, covers_fin: bool) -> Option<FinAck> {
        let commit = self.stream.commit;
        let fin_ack = match (commit.token, commit.hold) {
            (Some(token), _) => FinAck::Confirmed(token),
            (None, false) => FinAck::Plain,
            (None, true) => FinAck::Held { read_upto: self.stream.read_upto() },
        };
        covers_fin.then_some(fin_ack)
    }
}

/// Writes `repr` into `buf` with the payload `fin_ack` asks for: the commit
/// token, a drain report, or none; `None` if `buf` is too short.
pub(crate) fn emit_ack(mut repr: Repr, fin_ack: Option<FinAck>, buf: &mut [u8]) -> Option<Transmit> {
    let report;
    let payload: &[u8] = match &fin_ack {
        Some(FinAck::Confirmed(token)) => token,
        Some(FinAck::Held { read_upto }) => {
            report = read_upto.to_be_bytes();
            &report
        }
        Some(FinAck::Plain) | None => &[],
    };
    repr.payload_len = payload.len();
    let len = repr.buffer_len();
    if buf.len() < len {
        return None;
    }
    repr.emit(buf);
    buf[repr.header_len()..len].copy_from_slice(payload);
    Some(Transmit { len })
}

/// What a receiver protocol decides for itself; [`Receiver`] does the rest.
/// Each hook gets the [`ReceiverCore`] to read the lifecycle and the
/// stream, and to count, trace, arm timers and report through.
pub(crate) trait ReceiveControl {
    type Timer: ReceiverTimer;

    /// Whether a datagram (`ours`: this connection's protocol and id) is
    /// taken now; one that is not is counted as dropped.
    fn screen(&self, core: &ReceiverCore<Self::Timer>, ours: bool, repr: &Repr) -> bool;
    /// A datagram taken, other than RST (which fails the connection).
    fn on_packet(&mut self, core: &mut ReceiverCore<Self::Timer>, now: Instant, repr: &Repr, payload: &[u8]);
    /// Re-arms the protocol's timers from its state after each packet; a
    /// protocol that arms them as it goes does nothing.
    fn refresh_timers(&mut self, _core: &mut ReceiverCore<Self::Timer>) {}
    /// One of the protocol's own timers fired (after it, the control
    /// re-arms what it needs: the skeleton does not refresh).
    fn on_timer(&mut self, core: &mut ReceiverCore<Self::Timer>, now: Instant, timer: Self::Timer);
    fn poll_transmit(&mut self, core: &mut ReceiverCore<Self::Timer>, now: Instant, buf: &mut [u8])
        -> Option<Transmit>;
    /// A route notice (see [`Engine::handle_route_notice`]); ignored by
    /// default.
    fn on_route_notice(&mut self, _core: &mut ReceiverCore<Self::Timer>, _now: Instant, _notice: RouteNotice) {}
    /// The connection failed or closed: drop what was waiting to be sent.
    fn on_close(&mut self) {}
    /// The application read `n` bytes and left `unread`.
    fn on_read(&mut self, _n: usize, _unread: usize) {}
    /// The sender should hear now how the end of the stream stands: the
    /// application gave its commit token, or read more of a stream whose
    /// FIN waits for it (a drain report is due).
    fn on_commit_progress(&mut self, _core: &mut ReceiverCore<Self::Timer>) {}
}

/// One connection's receiver: the shared skeleton around a protocol's
/// `ReceiveControl` (the ATP, MTL and TCP receivers are this type).
///
/// Driver contract (see [`crate::engine`]): feed datagrams with
/// `handle_input`, call `poll_transmit` until `None`, drain `poll_event`,
/// sleep until `poll_timeout`. The application takes in-order bytes with
/// [`Receiver::read`] or [`Receiver::take_delivered`] whenever convenient.
// The control trait is crate-private on purpose: only this crate's
// protocols implement a receiver, through `ReceiverCore`'s crate-private API.
#[allow(private_bounds)]
#[derive(Debug)]
pub struct Receiver<C: ReceiveControl> {
    pub(crate) core: ReceiverCore<C::Timer>,
    pub(crate) control: C,
}

#[allow(private_bounds)]
impl<C: ReceiveControl> Receiver<C> {
    pub(crate) fn with_parts(core: ReceiverCore<C::Timer>, control: C) -> Self {
        Receiver { core, control }
    }

    pub fn connection_id(&self) -> u32 {
        self.core.connection_id()
    }

    pub fn state(&self) -> ReceiverState {
        match self.core.phase() {
            Phase::Connecting => ReceiverState::Listening,
            Phase::Established => ReceiverState::Established,
            Phase::Finished => ReceiverState::Finished,
            Phase::Closed => ReceiverState::Closed,
            Phase::Failed => ReceiverState::Failed,
        }
    }

    /// Copies up to `buf.len()` in-order bytes into `buf`, returning how many.
    pub fn read(&mut self, buf: &mut [u8]) -> usize {
        let delivered = &mut self.core.stream.delivered;
        let n = delivered.read(buf);
        self.control.on_read(n, delivered.len());
        self.report_drain(n);
        n
    }

    /// Takes every in-order byte not yet read.
    pub fn take_delivered(&mut self) -> Vec<u8> {
        let all = self.core.stream.delivered.take_all();
        self.control.on_read(all.len(), 0);
        self.report_drain(all.len());
        all
    }

    /// The application read `n` bytes: if every byte and the FIN are in and
    /// the FIN's acknowledgement waits for the commit, the sender hears how
    /// far it got (its wait for the confirmation restarts).
    fn report_drain(&mut self, n: usize) {
        let commit = self.core.stream.commit;
        let draining = self.core.phase() == Phase::Finished && commit.hold && commit.token.is_none();
        if n > 0 && draining {
            self.control.on_commit_progress(&mut self.core);
        }
    }

    /// Bytes delivered in order but not yet read.
    pub fn readable(&self) -> usize {
        self.core.stream.delivered.len()
    }

    /// The next byte expected in order ([`Reassembly::next`]).
    pub fn next_expected(&self) -> u64 {
        self.core.stream.next
    }

    /// The memory the out-of-order bytes are charged (see [`crate::reorder`]).
    pub fn reorder_charge(&self) -> u64 {
        self.core.stream.out_of_order.charge()
    }

    /// Lowers the out-of-order limit below the configured
    /// `max_reorder_bytes` (a driver sharing one budget among connections
    /// sets it before each input); data beyond it is dropped and counted in
    /// `Stats::dropped_over_buffer_limit`.
    pub fn set_reorder_limit(&mut self, bytes: u64) {
        let stream = &mut self.core.stream;
        stream.out_of_order.set_limit(bytes.min(stream.max_reorder_bytes));
    }

    fn fail(&mut self, reason: FailReason) {
        self.core.fail(reason);
        self.control.on_close();
    }
}

/// How far beyond the next byte expected a sender's RST may name its
/// highest sequence: what a fast sender may have in flight (64 MiB: a
/// second at 500 Mbit/s).
const RESET_WINDOW_BYTES: u64 = 64 << 20;

#[allow(private_bounds)]
impl<C: ReceiveControl> Engine for Receiver<C> {
    fn handle_input(&mut self, now: Instant, datagram: &[u8]) {
        let core = &mut self.core;
        let Some((repr, payload, ours)) = core.receive(datagram) else {
            return;
        };
        if !self.control.screen(core, ours, &repr) {
            core.stats.dropped_datagrams += 1;
            return;
        }
        if repr.control.contains(Control::RST) {
            // docs/PROTOCOLS.md §6, "Resets": a sender's RST names one past
            // the highest sequence it sent, which is at or beyond the next
            // byte expected and at most a window beyond it (RFC 793 §3.4's
            // window check: the sender that sent it has left, so there is
            // no one to answer RFC 5961's challenge).
            let next = core.stream.next;
            if repr.seq < next || repr.seq - next > RESET_WINDOW_BYTES {
                core.stats.dropped_datagrams += 1;
                core.stats.resets_ignored += 1;
                return;
            }
            core.last_heard = now;
            self.fail(FailReason::Reset);
            return;
        }
        core.last_heard = now;
        self.control.on_packet(core, now, &repr, payload);
        self.control.refresh_timers(&mut self.core);
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.core.is_closed() {
            return;
        }
        // Timers due together run in the enum's `ALL` order, the shared
        // ones first: a receiver that gives up or closes does nothing else
        // at that instant.
        let mut ran = 0usize;
        while let Some(timer) = self.core.timers.take_expired(now) {
            // Handlers re-arm only for later instants (`take_expired`); a
            // timer run this often at one instant breaks that rule, which
            // fuzzing should see as a failure rather than a hang.
            ran += 1;
            debug_assert!(ran <= 1024, "timer {timer:?} re-armed at or before {now:?}");
            if timer == C::Timer::IDLE {
                let silent_for = now.saturating_since(self.core.last_heard);
                self.fail(FailReason::PeerUnreachable { silent_for });
                return;
            }
            if Some(timer) == C::Timer::LINGER {
                self.core.close();
                self.control.on_close();
                return;
            }
            self.control.on_timer(&mut self.core, now, timer);
        }
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        self.control.poll_transmit(&mut self.core, now, buf)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.core.timers.next()
    }

    fn poll_event(&mut self) -> Option<EngineEvent> {
        self.core.poll_event()
    }

    fn stats(&self) -> &Stats {
        &self.core.stats
    }

    fn is_closed(&self) -> bool {
        self.core.is_closed()
    }

    fn handle_route_notice(&mut self, now: Instant, notice: RouteNotice) {
        self.control.on_route_notice(&mut self.core, now, notice);
    }
}

#[allow(private_bounds)]
impl<C: ReceiveControl> ReceiveStream for Receiver<C> {
    fn take_delivered(&mut self) -> Vec<u8> {
        Receiver::take_delivered(self)
    }
    fn read(&mut self, buf: &mut [u8]) -> usize {
        Receiver::read(self, buf)
    }
    fn hold_fin_ack_for_commit(&mut self) {
        self.core.stream.commit.hold = true;
    }
    fn set_commit_token(&mut self, token: CommitToken) {
        self.core.stream.commit.token = Some(token);
        self.control.on_commit_progress(&mut self.core);
    }
}
