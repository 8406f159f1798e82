//! SACK (RFC 2018) at the sender: the scoreboard and the conservative
//! loss recovery of RFC 6675 built on it, for `tcp-sack` and `tcp-cubic`.
//!
//! The receiver reports the byte ranges it holds above the cumulative ACK
//! ([`super::receiver`]); the [`Scoreboard`] keeps them, decides which
//! holes are lost (`IsLost`, RFC 6675 §4), how much is in the network
//! (`SetPipe`) and what to send next (`NextSeg`). [`SackRecovery`] is the
//! congestion side: when to enter and leave recovery, and the window, which
//! a [`WindowGrowth`] rule grows and cuts ([`Aimd`](super::cc::Aimd) for
//! `tcp-sack`, [`Cubic`](super::cubic::Cubic) for `tcp-cubic`).
//!
//! Sequence numbers here are the sender's (`snd_una`, `snd_max`); RFC
//! 6675's HighACK is `snd_una`, HighData `snd_max`, and HighRxt is kept as
//! one past the highest retransmitted byte, `rxt_end`.

use super::cc::{AckSample, CongestionControl, Response, Retransmit, Window, WindowGrowth};
use meshbed_core::Instant;
use std::collections::BTreeMap;

/// The most SACK blocks a TCP receiver reports per ACK: three, what fits
/// in TCP's 40 option bytes beside the timestamps option Linux always
/// sends (RFC 2018 §3). meshbed's header has room for more
/// ([`crate::wire::MAX_SACK_BLOCKS`]); three keeps TCP's information.
pub const MAX_TCP_SACK_BLOCKS: usize = 3;

/// What the receiver has reported holding above `snd_una`, and what the
/// sender has retransmitted since it last entered recovery.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scoreboard {
    /// SACKed ranges `start → end`, disjoint, not touching, above `snd_una`.
    sacked: BTreeMap<u64, u64>,
    /// HighRxt (RFC 6675 §2) as one past the highest byte retransmitted.
    rxt_end: u64,
    /// RescueRxt (§4 NextSeg rule 4): the recovery point of the last
    /// rescue retransmission.
    rescue_rxt: Option<u64>,
    /// After a timeout every byte sent before it and not SACKed is lost
    /// (Linux's `tcp_enter_loss`): the bytes below this.
    lost_below: u64,
}

/// A hole: unSACKed bytes `[start, end)` below `snd_max`, and whether they
/// count as lost. Every byte of a hole has the same SACKed bytes above it,
/// so `IsLost` is the same for all of them.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Hole {
    pub start: u64,
    pub end: u64,
    pub lost: bool,
}

impl Scoreboard {
    /// Takes the SACK blocks of an ACK whose cumulative acknowledgement
    /// moved `snd_una` to where it is. Blocks at or below `snd_una`
    /// (D-SACK, RFC 2883, or old news) are ignored; blocks past `snd_max`
    /// acknowledge data never sent and are refused (counted by the
    /// caller). Returns (bytes newly SACKed, blocks refused).
    pub fn on_ack(&mut self, snd_una: u64, snd_max: u64, blocks: &[(u64, u64)]) -> (u64, usize) {
        self.forget_below(snd_una);
        let before = self.sacked_bytes();
        let mut refused = 0;
        for &(start, end) in blocks {
            if end > snd_max || start >= end {
                refused += 1;
                continue;
            }
            if end <= snd_una {
                continue;
            }
            self.insert(start.max(snd_una), end);
        }
        (self.sacked_bytes() - before, refused)
    }

    fn forget_below(&mut self, snd_una: u64) {
        while let Some((&start, &end)) = self.sacked.first_key_value() {
            if start >= snd_una {
                break;
            }
            self.sacked.remove(&start);
            if end > snd_una {
                self.sacked.insert(snd_una, end);
                break;
            }
        }
        self.rxt_end = self.rxt_end.max(snd_una);
    }

    fn insert(&mut self, mut start: u64, mut end: u64) {
        // Merge with every range that overlaps or touches [start, end).
        let touching: Vec<(u64, u64)> =
            self.sacked.range(..=end).rev().take_while(|&(_, &e)| e >= start).map(|(&s, &e)| (s, e)).collect();
        for (s, e) in touching {
            self.sacked.remove(&s);
            start = start.min(s);
            end = end.max(e);
        }
        self.sacked.insert(start, end);
    }

    /// SACKed bytes in total.
    pub fn sacked_bytes(&self) -> u64 {
        self.sacked.iter().map(|(s, e)| e - s).sum()
    }

    /// SACKed segments in total, a short range counting as one (RACK's
    /// `segs_sacked`, RFC 8985 §6.2).
    pub fn sacked_segments(&self, mss: u64) -> u64 {
        self.sacked.iter().map(|(s, e)| (e - s).div_ceil(mss.max(1))).sum()
    }

    /// Whether byte `seq` was SACKed; if so, where its range ends.
    pub fn sacked_end(&self, seq: u64) -> Option<u64> {
        self.sacked.range(..=seq).next_back().filter(|&(_, &e)| e > seq).map(|(_, &e)| e)
    }

    /// Where the next SACKed range above `seq` starts, if any.
    pub fn next_sacked_start(&self, seq: u64) -> Option<u64> {
        self.sacked.range(seq + 1..).next().map(|(&s, _)| s)
    }

    /// `IsLost(seq)` (RFC 6675 §4): more than `(dup_thresh − 1) · mss`
    /// bytes SACKed above `seq`, or `dup_thresh` segments' worth
    /// ("discontiguous SACKed sequences": a short segment counts as one).
    /// And, after a timeout, every unSACKed byte sent before it.
    pub fn is_lost(&self, seq: u64, mss: u64, dup_thresh: u32) -> bool {
        if seq < self.lost_below && self.sacked_end(seq).is_none() {
            return true;
        }
        let (mut bytes, mut segments) = (0u64, 0u64);
        for (&s, &e) in self.sacked.range(seq + 1..) {
            bytes += e - s;
            segments += (e - s).div_ceil(mss.max(1));
        }
        bytes > u64::from(dup_thresh.saturating_sub(1)) * mss || segments >= u64::from(dup_thresh)
    }

    /// The holes in `[snd_una, snd_max)`, in order.
    pub fn holes(&self, snd_una: u64, snd_max: u64, mss: u64, dup_thresh: u32) -> Vec<Hole> {
        let mut holes = Vec::new();
        let mut at = snd_una;
        let mut push = |start: u64, end: u64| {
            if start >= end {
                return;
            }
            // Split at `lost_below`: below it the timeout made it lost.
            let cut = self.lost_below.clamp(start, end);
            if cut > start {
                holes.push(Hole { start, end: cut, lost: true });
            }
            if end > cut {
                holes.push(Hole { start: cut, end, lost: self.is_lost(cut, mss, dup_thresh) });
            }
        };
        for (&s, &e) in self.sacked.range(snd_una..) {
            push(at, s.min(snd_max));
            at = e;
        }
        push(at, snd_max);
        holes
    }

    /// `SetPipe` (RFC 6675 §4): the bytes in the network — every unSACKed
    /// byte not lost, and every retransmitted one again.
    pub fn pipe(&self, snd_una: u64, snd_max: u64, mss: u64, dup_thresh: u32) -> u64 {
        self.holes(snd_una, snd_max, mss, dup_thresh)
            .iter()
            .map(|h| {
                let outstanding = if h.lost { 0 } else { h.end - h.start };
                let retransmitted = self.rxt_end.clamp(h.start, h.end) - h.start;
                outstanding + retransmitted
            })
            .sum()
    }

    /// `NextSeg` rule 1 (RFC 6675 §4): the first lost byte not yet
    /// retransmitted, with the end of its hole.
    pub fn next_lost(&self, snd_una: u64, snd_max: u64, mss: u64, dup_thresh: u32) -> Option<(u64, u64)> {
        self.holes(snd_una, snd_max, mss, dup_thresh)
            .into_iter()
            .filter(|h| h.lost && h.end > self.rxt_end)
            .map(|h| (h.start.max(self.rxt_end), h.end))
            .next()
    }

    /// `NextSeg` rule 3: with nothing new to send, the first unSACKed byte
    /// not yet retransmitted, lost or not.
    pub fn next_unsacked(&self, snd_una: u64, snd_max: u64, mss: u64, dup_thresh: u32) -> Option<(u64, u64)> {
        self.holes(snd_una, snd_max, mss, dup_thresh)
            .into_iter()
            .filter(|h| h.end > self.rxt_end)
            .map(|h| (h.start.max(self.rxt_end), h.end))
            .next()
    }

    /// `NextSeg` rule 4, the rescue retransmission: once per recovery
    /// (`recovery_point`), the last segment's worth below the highest
    /// unSACKed byte, when `snd_una` has moved past the last rescue.
    pub fn rescue(&mut self, snd_una: u64, snd_max: u64, mss: u64, recovery_point: u64) -> Option<(u64, u64)> {
        if self.rescue_rxt.is_some_and(|r| snd_una <= r) {
            return None;
        }
        let mut end = snd_max;
        while let Some(start) = self.sacked.range(..end).next_back().filter(|&(_, &e)| e >= end).map(|(&s, _)| s) {
            end = start;
        }
        if end <= snd_una {
            return None;
        }
        self.rescue_rxt = Some(recovery_point);
        Some((end.saturating_sub(mss).max(snd_una), end))
    }

    /// A retransmission of `[start, end)` went out: HighRxt moves up.
    pub fn retransmitted(&mut self, end: u64) {
        self.rxt_end = self.rxt_end.max(end);
    }

    /// Recovery begins (RFC 6675 §5 step 4.3): HighRxt starts again from
    /// `snd_una`, so that every lost hole is resent once in this episode.
    pub fn enter_recovery(&mut self, snd_una: u64) {
        self.rxt_end = snd_una;
        self.rescue_rxt = None;
    }

    /// A retransmission timeout (§5.1): everything unSACKed sent so far
    /// is lost and goes again; SACK information received since keeps
    /// SACKed data from being resent.
    pub fn on_timeout(&mut self, snd_una: u64, snd_max: u64) {
        self.lost_below = snd_max;
        self.rxt_end = snd_una;
        self.rescue_rxt = None;
    }
}

/// The congestion side of SACK recovery (RFC 6675 §5): recovery starts on
/// the `dup_thresh`-th duplicate ACK or when the scoreboard says the first
/// unacknowledged byte is lost, sets `cwnd = ssthresh` (from the growth
/// rule: half the flight for [`Aimd`](super::cc::Aimd), 0.7 for CUBIC), and
/// lasts until the cumulative ACK covers `recovery_point`; the window does
/// not change inside it. What to send is the sender's, from the scoreboard.
#[derive(Clone, Debug)]
pub struct SackRecovery<G> {
    pub window: Window,
    pub growth: G,
    dup_thresh: u32,
    in_recovery: bool,
    /// RecoveryPoint (§5 step 4.1), one past HighData at entry; also kept
    /// after a timeout so that no recovery starts before it is covered.
    recovery_point: u64,
}

impl<G: WindowGrowth> SackRecovery<G> {
    pub fn new(window: Window, dup_thresh: u32, growth: G) -> Self {
        SackRecovery { window, growth, dup_thresh, in_recovery: false, recovery_point: 0 }
    }

    pub fn recovery_point(&self) -> u64 {
        self.recovery_point
    }
}

impl<G: WindowGrowth> CongestionControl for SackRecovery<G> {
    fn on_ack(&mut self, now: Instant, ack: &AckSample) -> Response {
        if self.in_recovery {
            if ack.ack >= self.recovery_point {
                self.in_recovery = false;
                self.growth.on_recovery_end(now);
            }
            // Inside recovery the scoreboard, not a fixed retransmission,
            // says what goes next; the window holds.
            return Response::NEW_ACK;
        }
        self.growth.on_ack(now, &mut self.window, ack);
        Response::NEW_ACK
    }

    fn on_duplicate_ack(&mut self, now: Instant, ack: &AckSample) -> Response {
        if ack.dupacks < self.dup_thresh && !ack.head_lost {
            return Response::NOTHING;
        }
        self.on_loss_detected(now, ack)
    }

    fn on_retransmission_timeout(&mut self, now: Instant, flight_bytes: u64, snd_max: u64, first: bool) {
        // §5.1: recovery ends, and none starts again before HighACK
        // reaches the HighData of the timeout.
        self.growth.on_timeout(now, &mut self.window, flight_bytes, first);
        self.recovery_point = snd_max;
        self.in_recovery = false;
    }

    super::cc::window_state!();
}

impl<G: WindowGrowth> SackRecovery<G> {
    /// Whether the sender is recovering: in fast recovery, or after a
    /// timeout until the cumulative ACK covers what was sent before it
    /// (RFC 8985's "fast or RTO recovery").
    pub fn in_loss_recovery(&self, snd_una: u64) -> bool {
        self.in_recovery || snd_una < self.recovery_point
    }

    /// A loss was detected (the duplicate-ACK rule above, or RACK marking a
    /// segment, RFC 8985 §6.2): recovery begins unless already under way
    /// or the last timeout's data is not yet all acknowledged.
    pub fn on_loss_detected(&mut self, now: Instant, ack: &AckSample) -> Response {
        if self.in_loss_recovery(ack.ack) {
            return Response::NOTHING;
        }
        // §5 steps 4.1–4.3: RecoveryPoint = HighData, ssthresh and cwnd
        // from the growth rule, resend the first unacknowledged segment.
        self.recovery_point = ack.snd_max;
        self.growth.on_congestion(now, &mut self.window, ack.flight_bytes);
        self.window.cwnd_segments = self.window.ssthresh_segments;
        self.in_recovery = true;
        Response { retransmit: Retransmit::Head, restart_timer: true }
    }

    /// A tail loss probe's retransmission repaired a loss (RFC 8985
    /// §7.4.2): the window is cut as for any loss (ssthresh from the growth
    /// rule, cwnd to it, as Linux's CWR state ends), without a recovery
    /// episode, since nothing is left to retransmit.
    pub fn on_probe_repaired_loss(&mut self, now: Instant, flight_bytes: u64) {
        self.growth.on_congestion(now, &mut self.window, flight_bytes);
        self.window.cwnd_segments = self.window.ssthresh_segments;
    }
}

#[cfg(test)]
#[path = "sack_tests.rs"]
mod tests;
