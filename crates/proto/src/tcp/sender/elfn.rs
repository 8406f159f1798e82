//! TCP-ELFN's standby (Holland & Vaidya 1999; seed 002 §2.4: "the state of
//! the TCP sender is frozen till a new route is computed"): what the sender
//! freezes on a route failure, the probes it sends meanwhile, and how it
//! resumes. The rules are on [`TcpSender`](super::TcpSender)'s "Route
//! failures".

use super::{Core, TcpSendControl, Timer};
use crate::engine::{TraceSample, Transmit};
use crate::engine_core::Phase;
use crate::tcp::cc::Controller;
use crate::tcp::rtt::RttEstimator;
use meshbed_core::Instant;

/// What TCP-ELFN freezes when the route fails, to resume with on its return
/// (Holland & Vaidya 1999 restore the pre-failure state; seed 002 §2.4: "the
/// state of the TCP sender is frozen till a new route is computed").
#[derive(Clone, Debug)]
pub(super) struct Standby {
    pub(super) entered_at: Instant,
    /// cwnd, ssthresh and the recovery state.
    cc: Controller,
    /// SRTT, RTTVAR and the RTO, with any backoff in force at the failure.
    rtt: RttEstimator,
    /// Whether the commit confirmation was awaited: its give-up clock
    /// restarts with the route.
    confirm_armed: bool,
}

impl TcpSendControl {
    /// TCP-ELFN, [`RouteNotice::Failed`](crate::RouteNotice::Failed): freeze.
    pub(super) fn enter_standby(&mut self, core: &mut Core, now: Instant) {
        if self.standby.is_some() {
            return;
        }
        self.standby = Some(Standby {
            entered_at: now,
            cc: self.cc.clone(),
            rtt: self.rtt.clone(),
            confirm_armed: core.suspend_confirmation(),
        });
        // No retransmission timer, hence no timeout and no backoff; no
        // give-up clock either: a route outage is not a dead peer.
        core.timers.stop(Timer::Retransmit);
        core.timers.stop(Timer::Idle);
        core.timers.set(Timer::ElfnProbe, now + self.config.elfn_probe_interval);
        self.probe_due = false;
        // A sample spanning the outage would measure the outage, not the path.
        self.rtt_probe = None;
        self.tcp_stats.elfn_standbys += 1;
        core.trace(TraceSample::Standby { at: now, entered: true });
    }

    /// TCP-ELFN: the route is back (a notice, `resend_head`, or an ACK of
    /// new data): restore the frozen state and re-arm the timers.
    pub(super) fn leave_standby(&mut self, core: &mut Core, now: Instant, resend_head: bool) {
        let Some(frozen) = self.standby.take() else {
            return;
        };
        self.cc = frozen.cc;
        self.rtt = frozen.rtt;
        self.tcp_stats.elfn_standby_time += now.saturating_since(frozen.entered_at);
        core.timers.stop(Timer::ElfnProbe);
        self.probe_due = false;
        // The outage explains the silence: the peer gets a full allowance
        // of retransmissions on the new route.
        self.unanswered_rtos = 0;
        core.timers.set(Timer::Idle, now + self.config.idle_timeout);
        if frozen.confirm_armed {
            core.resume_confirmation(now);
        }
        match core.phase() {
            Phase::Connecting => {
                self.syn_pending |= resend_head;
                core.timers.set(Timer::Retransmit, now + self.rtt.rto());
            }
            Phase::Established if self.snd_una < self.snd_max => {
                self.retransmit_head |= resend_head;
                core.timers.set(Timer::Retransmit, now + self.rtt.rto());
            }
            _ => {}
        }
        core.trace(TraceSample::Standby { at: now, entered: false });
        self.rto_changed(core, now);
        self.window_changed(core, now, false);
    }

    /// In standby only the probe goes out, once per probe interval.
    pub(super) fn poll_probe(&mut self, core: &mut Core, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        if !self.probe_due {
            return None;
        }
        let sent = match core.phase() {
            Phase::Connecting => Some(self.emit_syn(core, now, buf)),
            Phase::Established => {
                let seq = self.snd_una;
                self.emit_segment(core, now, seq, u64::MAX, buf)
            }
            Phase::Finished | Phase::Closed | Phase::Failed => None,
        };
        // With nothing to send (a stream the application has not written
        // to yet) the probe stays due until there is.
        if sent.is_some() {
            self.probe_due = false;
            self.tcp_stats.elfn_probes += 1;
        }
        sent
    }
}
