//! The SACK sender's window in fast recovery with PRR (RFC 6937,
//! [`crate::tcp::prr`], [`TcpConfig::prr`](crate::tcp::TcpConfig::prr)):
//! the rule is `Prr`'s; here is when it starts, what each ACK hands it,
//! and where the sending rules read the window it gives.

use super::TcpSendControl;
use crate::tcp::cc::CongestionControl;
use crate::tcp::prr::Prr;

/// snd_una and the SACKed bytes before an ACK, from which the ACK's
/// DeliveredData is measured (RFC 6937 §3.1).
#[derive(Copy, Clone, Debug)]
pub(super) struct DeliveryMark {
    snd_una: u64,
    sacked_bytes: u64,
}

impl TcpSendControl {
    fn sacked_bytes(&self) -> u64 {
        self.sack.as_ref().map_or(0, |s| s.sacked_bytes())
    }

    pub(super) fn delivery_mark(&self) -> DeliveryMark {
        DeliveryMark { snd_una: self.snd_una, sacked_bytes: self.sacked_bytes() }
    }

    /// Fast recovery began (RFC 6937 §3.1: RecoverFS = snd.nxt − snd.una,
    /// prr_delivered = prr_out = 0). A recovery RACK's timer starts has no
    /// ACK: its window is the rule's with nothing delivered yet.
    pub(super) fn prr_enter(&mut self) {
        if !self.config.prr || self.sack.is_none() || self.bbr.is_some() {
            return;
        }
        let mss = self.config.mss_bytes as u64;
        self.prr = Some(Prr::new((self.snd_max - self.snd_una).div_ceil(mss)));
        self.prr_step(0);
    }

    /// After an ACK: the rule's step while fast recovery lasts; PRR ends
    /// with it (cwnd is then ssthresh, the controller's own exit).
    pub(super) fn prr_after_ack(&mut self, before: DeliveryMark) {
        if self.prr.is_none() {
            return;
        }
        if !self.cc.metrics().in_recovery {
            self.prr = None;
            return;
        }
        // Bytes the cumulative ACK passed plus the change in SACKed bytes
        // (which falls by what the cumulative ACK swallowed).
        let delivered = (self.snd_una - before.snd_una + self.sacked_bytes()).saturating_sub(before.sacked_bytes);
        self.prr_step(delivered);
    }

    /// The rule's step, counted in segments as Linux counts packets (a
    /// partial segment counts whole).
    fn prr_step(&mut self, delivered_bytes: u64) {
        let (mss, dup_thresh) = (self.config.mss_bytes as u64, self.config.dupack_threshold);
        let pipe = match (&self.rack, &self.sack) {
            (Some(rack), _) => rack.pipe(),
            (None, Some(scoreboard)) => scoreboard.pipe(self.snd_una, self.snd_max, mss, dup_thresh),
            (None, None) => return,
        };
        let ssthresh = self.cc.metrics().ssthresh_segments.floor() as u64;
        if let Some(prr) = &mut self.prr {
            let cwnd = prr.on_ack(delivered_bytes.div_ceil(mss), pipe.div_ceil(mss), ssthresh);
            self.prr_cwnd_bytes = cwnd * mss;
        }
    }

    /// RFC 6937's prr_out: every segment sent while PRR runs.
    pub(super) fn prr_on_sent(&mut self) {
        if let Some(prr) = &mut self.prr {
            prr.on_sent(1);
        }
    }

    /// The window the SACK senders' sending rules hold pipe to: PRR's in
    /// fast recovery when it runs, the controller's cwnd otherwise (both
    /// capped by the largest window).
    pub(super) fn send_window_bytes(&self) -> u64 {
        let mss = self.config.mss_bytes as u64;
        let cwnd_bytes = (self.window_segments() * mss as f64).floor() as u64;
        match self.prr {
            Some(_) => self.prr_cwnd_bytes.min(self.config.max_cwnd_segments as u64 * mss),
            None => cwnd_bytes,
        }
    }
}
