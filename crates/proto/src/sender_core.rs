//! The sender skeleton ATP, MTL and TCP share (quinn-proto's `Connection`
//! with its `congestion::Controller`; smoltcp's `socket/tcp` with
//! `congestion`): [`Sender`] is the one [`Engine`] and [`SendStream`]
//! implementation of every sender, and a protocol plugs in what it decides
//! for itself through `SendControl`: which datagram goes next and when
//! (ATP's and MTL's rates, TCP's window), and what the peer's feedback means.
//!
//! `SenderCore` is what the skeleton owns and lends to the control: the
//! state every engine keeps (`engine_core::EngineCore`: the lifecycle, the
//! timer table, the event queue, the counters) with the sender's end of the
//! stream (`StreamEnd`: the FIN and the commit confirmation). Of the timers
//! the skeleton runs two itself, `SenderTimer::IDLE` and
//! `SenderTimer::CONFIRM`. The traits are crate-private: only this crate's
//! protocols implement a sender.
//!
//! # The commit confirmation (issue 9; docs/PROTOCOLS.md §6)
//!
//! The rule is written once, here: when the application required a token
//! ([`SendStream::require_commit_token`]), an acknowledgement of the FIN
//! counts only if it carries exactly that token (`SenderCore::confirms_fin`;
//! a wrong non-empty one is a protocol violation). Once every byte is
//! acknowledged the bytes are released, so the confirmation must follow
//! within the idle time (`SenderCore::await_confirmation`), else the
//! transfer fails with [`FailReason::Unconfirmed`]: a forged acknowledgement
//! would otherwise leave the sender repeating its FIN forever.

use crate::engine::{Engine, EngineEvent, FailReason, PathInfo, RouteNotice, Stats, TraceSample, Transmit};
use crate::engine_core::{EngineCore, Phase};
use crate::stream::{drain_report, CommitToken, SendBuffer, SendStream};
use crate::timer::TimerId;
use crate::wire::{Control, Repr, ResetAt};
use meshbed_core::{Duration, Instant};

/// The timers every sender has: slots of its protocol's timer enum.
pub(crate) trait SenderTimer: TimerId {
    /// Nothing heard from the peer for as long as the protocol allows.
    const IDLE: Self;
    /// Every byte acknowledged: the commit confirmation is due by now.
    const CONFIRM: Self;
}

/// What the control makes of a parsed datagram before the skeleton takes it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Screen {
    /// From the peer and expected now.
    Accept,
    /// Another connection's, the wrong kind, or the connection is over:
    /// counted as dropped.
    Stray,
    /// What no conforming peer sends (feedback about bytes never sent):
    /// dropped and counted as a protocol violation.
    Forged,
}

/// Whether feedback acknowledges (cumulatively or in a block) bytes at or
/// beyond `sent_end`, which were never sent: no conforming receiver does
/// that (issue 9: a forged ack must not end a transfer).
pub(crate) fn acks_unsent(repr: &Repr, sent_end: u64) -> bool {
    repr.ack > sent_end || repr.sack_blocks.iter().any(|&(_, end)| end > sent_end)
}

/// A sender's end of the byte stream: when the FIN left, and the commit
/// confirmation it must be acknowledged with.
#[derive(Debug)]
pub(crate) struct StreamEnd {
    /// When the FIN last left.
    fin_sent_at: Option<Instant>,
    /// What the acknowledgement of the FIN must carry (issue 9).
    commit_token: Option<CommitToken>,
    /// How long the commit confirmation may take once every byte is
    /// acknowledged: the idle time.
    confirm_wait: Duration,
    /// When an RST inside the window last drew a challenge.
    last_challenge: Option<Instant>,
    /// The furthest the receiver's application had read, by its last drain
    /// report.
    drained_to: Option<u64>,
}

impl StreamEnd {
    /// A stream whose commit confirmation, once required, may take
    /// `confirm_wait` after every byte is acknowledged.
    pub(crate) fn new(confirm_wait: Duration) -> Self {
        StreamEnd { fin_sent_at: None, commit_token: None, confirm_wait, last_challenge: None, drained_to: None }
    }
}

/// What the skeleton lends a sender's control: the [`EngineCore`] every
/// engine keeps, with the sender's end of the stream.
pub(crate) type SenderCore<T> = EngineCore<T, StreamEnd>;

impl<T: SenderTimer> SenderCore<T> {
    /// Finished or failed (a sender does not linger: it is never closed
    /// otherwise).
    pub(crate) fn is_closed(&self) -> bool {
        matches!(self.phase(), Phase::Finished | Phase::Closed | Phase::Failed)
    }

    /// Counts the `len` bytes at `seq` a datagram carried: new bytes the
    /// first time, a retransmission (and its trace) otherwise.
    pub(crate) fn count_payload(&mut self, now: Instant, seq: u64, len: usize, first: bool) {
        if first {
            self.stats.bytes_sent += len as u64;
        } else {
            self.count_retransmission(now, seq, len);
        }
    }
    /// Counts and traces the retransmission of `len` bytes at `seq`.
    pub(crate) fn count_retransmission(&mut self, now: Instant, seq: u64, len: usize) {
        self.stats.retransmissions += 1;
        self.stats.retransmitted_bytes += len as u64;
        self.trace(TraceSample::Retransmit { at: now, seq, len });
    }

    /// The FIN left at `now`.
    pub(crate) fn fin_sent(&mut self, now: Instant) {
        self.stream.fin_sent_at = Some(now);
    }
    /// When the FIN last left, if it has.
    pub(crate) fn fin_sent_at(&self) -> Option<Instant> {
        self.stream.fin_sent_at
    }

    /// Whether an acknowledgement of the FIN carrying `payload` confirms
    /// the commit: always, unless a token is required, and then only with
    /// exactly that token. Any other non-empty payload is a protocol
    /// violation (counted; the caller ignores the FIN's acknowledgement).
    pub(crate) fn confirms_fin(&mut self, payload: &[u8]) -> bool {
        let confirmed = self.stream.commit_token.as_ref().is_none_or(|token| payload == token.as_slice());
        if !confirmed && !payload.is_empty() {
            self.stats.protocol_violations += 1;
        }
        confirmed
    }
    /// Every byte is acknowledged (and released): with a token required,
    /// the confirmation is due within the idle time from the first time
    /// this is so.
    pub(crate) fn await_confirmation(&mut self, now: Instant) {
        if self.stream.commit_token.is_some() && self.timers.get(T::CONFIRM).is_none() {
            self.timers.set(T::CONFIRM, now + self.stream.confirm_wait);
        }
    }
    /// A drain report (the receiver's application has read up to
    /// `read_upto` of a stream whose FIN waits for its commit): while the
    /// confirmation is awaited, progress of at least [`DRAIN_STEP_BYTES`]
    /// restarts its clock, so that a slow reader's receiver is not taken for
    /// a forger (issue 26). Bounded: one `confirm_wait` per
    /// `DRAIN_STEP_BYTES` of the stream at most, so forged reports stretch a
    /// sender's wait that far at worst, and never make it succeed.
    pub(crate) fn on_drain_report(&mut self, now: Instant, read_upto: u64) {
        let Some(deadline) = self.timers.get(T::CONFIRM) else { return };
        if self.stream.drained_to.is_some_and(|d| read_upto < d.saturating_add(DRAIN_STEP_BYTES)) {
            return;
        }
        self.stream.drained_to = Some(read_upto);
        let extended = now + self.stream.confirm_wait;
        if extended > deadline {
            self.timers.set(T::CONFIRM, extended);
        }
    }
    /// The end of a feedback packet for a protocol that reports the FIN
    /// with a flag (ATP, MTL): `fin_acked` when it acknowledges the FIN
    /// and every byte, `every_byte_acked` when the finished stream is
    /// acknowledged up to its end. Finishes on a confirmed FIN.
    pub(crate) fn on_end_acked(&mut self, now: Instant, fin_acked: bool, every_byte_acked: bool, payload: &[u8]) {
        if fin_acked && self.confirms_fin(payload) {
            self.finish();
        } else if every_byte_acked {
            self.await_confirmation(now);
        }
    }
    /// Stops the confirmation's clock (TCP-ELFN standby: a route outage is
    /// not a missing confirmation); returns whether it was running.
    pub(crate) fn suspend_confirmation(&mut self) -> bool {
        let armed = self.timers.get(T::CONFIRM).is_some();
        self.timers.stop(T::CONFIRM);
        armed
    }
    /// Restarts the confirmation's clock in full at `now`.
    pub(crate) fn resume_confirmation(&mut self, now: Instant) {
        self.timers.set(T::CONFIRM, now + self.stream.confirm_wait);
    }
}

/// What a sender protocol decides for itself; [`Sender`] does the rest.
/// Each hook gets the [`SenderCore`] to read the lifecycle and to count,
/// trace, arm timers and report through.
pub(crate) trait SendControl {
    type Timer: SenderTimer;

    /// The bytes the application wrote and the peer has not acknowledged.
    fn send_buffer(&self) -> &SendBuffer;
    fn send_buffer_mut(&mut self) -> &mut SendBuffer;

    /// Whether a datagram (`ours`: this connection's protocol and id) is
    /// taken; screened before anything else, in the protocol's own order.
    fn screen(&self, core: &SenderCore<Self::Timer>, ours: bool, repr: &Repr) -> Screen;
    /// The sequences an RST is judged by (RFC 5961 §3): the oldest one not
    /// acknowledged, and one past the highest sent (TCP's `snd_una` and
    /// `snd_max`; ATP's and MTL's cumulative ack and sent end).
    fn reset_window(&self) -> (u64, u64);
    /// An RST in the window but not at its start: send the sequence at its
    /// start again now (RFC 5961 §3.2's challenge), so that a receiver that
    /// really lost the connection answers with an RST naming it exactly.
    fn on_reset_challenge(&mut self, core: &mut SenderCore<Self::Timer>, now: Instant);
    /// The peer was heard from (an accepted datagram, RST included).
    fn on_heard(&mut self, _core: &mut SenderCore<Self::Timer>, _now: Instant) {}
    /// An accepted datagram other than RST.
    fn on_feedback(&mut self, core: &mut SenderCore<Self::Timer>, now: Instant, repr: &Repr, payload: &[u8]);

    /// The idle timer fired: when the silence that ends the connection
    /// began, or `None` to wait on (the control re-armed the timer).
    fn on_idle_timeout(&mut self, core: &mut SenderCore<Self::Timer>, now: Instant) -> Option<Instant>;
    /// Another of the protocol's timers fired.
    fn on_timer(&mut self, core: &mut SenderCore<Self::Timer>, now: Instant, timer: Self::Timer);
    /// Re-arms the protocol's timers from its state, after every input,
    /// timeout and write; a protocol that arms them as it goes does nothing.
    fn refresh_timers(&mut self, _core: &mut SenderCore<Self::Timer>) {}

    fn poll_transmit(&mut self, core: &mut SenderCore<Self::Timer>, now: Instant, buf: &mut [u8]) -> Option<Transmit>;

    /// A route notice for a connection not yet over (see
    /// [`Engine::handle_route_notice`]); ignored by default.
    fn on_route_notice(&mut self, _core: &mut SenderCore<Self::Timer>, _now: Instant, _notice: RouteNotice) {}
    /// The routing module's view of the path ([`Engine::handle_path_info`]);
    /// ignored by default.
    fn on_path_info(&mut self, _core: &mut SenderCore<Self::Timer>, _now: Instant, _info: PathInfo) {}
    /// The connection finished or failed at `now`: close what is measured
    /// over time.
    fn on_close(&mut self, _now: Instant) {}
}

/// One connection's sender: the shared skeleton around a protocol's
/// `SendControl` (the ATP, MTL and TCP senders are this type).
///
/// Driver contract (see [`crate::engine`]): after construction, and after
/// every `handle_input`/`handle_timeout`, call `poll_transmit` until it
/// returns `None`, drain `poll_event`, then sleep until `poll_timeout`.
/// Deadlines of the protocol's sending (pacing, probes) are served by
/// `poll_transmit`: after `handle_timeout` at such a deadline the driver
/// must call `poll_transmit` for it to move on.
// The control trait is crate-private on purpose: only this crate's
// protocols implement a sender, through `SenderCore`'s crate-private API.
#[allow(private_bounds)]
#[derive(Debug)]
pub struct Sender<C: SendControl> {
    pub(crate) core: SenderCore<C::Timer>,
    pub(crate) control: C,
}

#[allow(private_bounds)]
impl<C: SendControl> Sender<C> {
    /// A sender of `core` and `control`, its timers armed.
    pub(crate) fn with_parts(mut core: SenderCore<C::Timer>, mut control: C) -> Self {
        control.refresh_timers(&mut core);
        Sender { core, control }
    }

    pub fn connection_id(&self) -> u32 {
        self.core.connection_id()
    }

    fn fail(&mut self, now: Instant, reason: FailReason) {
        self.core.fail(reason);
        self.control.on_close(now);
    }
}

#[allow(private_bounds)]
impl<C: SendControl> Engine for Sender<C> {
    fn handle_input(&mut self, now: Instant, datagram: &[u8]) {
        let core = &mut self.core;
        let Some((repr, payload, ours)) = core.receive(datagram) else {
            return;
        };
        match self.control.screen(core, ours, &repr) {
            Screen::Accept => {}
            Screen::Stray => {
                core.stats.dropped_datagrams += 1;
                return;
            }
            Screen::Forged => {
                core.stats.dropped_datagrams += 1;
                core.stats.protocol_violations += 1;
                return;
            }
        }
        if repr.control.contains(Control::RST) {
            // docs/PROTOCOLS.md §6, "Resets": only an RST naming exactly the
            // oldest unacknowledged sequence ends the connection; one inside
            // the window draws a challenge, at most one per RTT-scale
            // interval (RFC 5961 §7 limits challenges too).
            let (una, max) = self.control.reset_window();
            if repr.ack != una {
                core.stats.dropped_datagrams += 1;
                core.stats.resets_ignored += 1;
                let in_window = repr.ack > una && repr.ack <= max;
                let due = core.stream.last_challenge.is_none_or(|t| now.saturating_since(t) >= CHALLENGE_INTERVAL);
                if in_window && due {
                    core.stream.last_challenge = Some(now);
                    core.stats.reset_challenges += 1;
                    self.control.on_reset_challenge(core, now);
                    self.control.refresh_timers(&mut self.core);
                }
                return;
            }
            core.last_heard = now;
            self.control.on_heard(core, now);
            self.fail(now, FailReason::of_reset(datagram));
            return;
        }
        core.last_heard = now;
        self.control.on_heard(core, now);
        if let Some(read_upto) = drain_report(payload) {
            core.on_drain_report(now, read_upto);
        }
        // Screening took datagrams for an open connection only, so one
        // closed now finished on this feedback.
        self.control.on_feedback(core, now, &repr, payload);
        if self.core.is_closed() {
            self.core.timers.stop_all();
            self.control.on_close(now);
        }
        self.control.refresh_timers(&mut self.core);
    }

    fn handle_timeout(&mut self, now: Instant) {
        if self.core.is_closed() {
            return;
        }
        // Timers due together run in the enum's `ALL` order; the shared
        // ones come first where a protocol lists them first, so that a
        // connection that gives up does nothing else at that instant.
        let mut ran = 0usize;
        while let Some(timer) = self.core.timers.take_expired(now) {
            // Handlers re-arm only for later instants (`take_expired`); a
            // timer run this often at one instant breaks that rule, which
            // fuzzing should see as a failure rather than a hang.
            ran += 1;
            debug_assert!(ran <= 1024, "timer {timer:?} re-armed at or before {now:?}");
            if timer == C::Timer::IDLE {
                if let Some(since) = self.control.on_idle_timeout(&mut self.core, now) {
                    let silent_for = now.saturating_since(since);
                    self.fail(now, FailReason::PeerUnreachable { silent_for });
                    return;
                }
            } else if timer == C::Timer::CONFIRM {
                let waited = self.core.stream.confirm_wait;
                self.fail(now, FailReason::Unconfirmed { waited });
                return;
            } else {
                self.control.on_timer(&mut self.core, now, timer);
            }
        }
        self.control.refresh_timers(&mut self.core);
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
        if !self.core.is_closed() {
            self.control.on_route_notice(&mut self.core, now, notice);
        }
    }

    fn handle_path_info(&mut self, now: Instant, info: PathInfo) {
        self.control.on_path_info(&mut self.core, now, info);
    }
}

#[allow(private_bounds)]
impl<C: SendControl> SendStream for Sender<C> {
    fn write(&mut self, data: &[u8]) -> usize {
        let n = self.control.send_buffer_mut().write(data);
        if n > 0 {
            // New data may re-arm pacing.
            self.control.refresh_timers(&mut self.core);
        }
        n
    }
    fn finish(&mut self) {
        self.control.send_buffer_mut().finish();
        self.control.refresh_timers(&mut self.core);
    }
    fn write_room(&self) -> usize {
        self.control.send_buffer().room()
    }
    fn require_commit_token(&mut self, token: CommitToken) {
        self.core.stream.commit_token = Some(token);
    }
    fn reset_at(&self) -> ResetAt {
        ResetAt::to_receiver(self.control.reset_window().1)
    }
}

/// The least progress a drain report must show to restart the wait for the
/// commit confirmation: 1 KiB, under what `meshbed recv --rate` reads per
/// wake (a datagram's worth).
const DRAIN_STEP_BYTES: u64 = 1024;

/// At most one challenge (a re-sent oldest sequence answering an RST inside
/// the window) per this long: a flood of forged RSTs costs the sender one
/// retransmission per 100 ms, the receiver's own interval between resets of
/// one connection (`crate::endpoint`).
const CHALLENGE_INTERVAL: Duration = Duration::from_millis(100);
