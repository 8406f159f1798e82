//! What a SACK sender (`tcp-sack`, `tcp-cubic`) sends next: RFC 6675's
//! `NextSeg` inside recovery, go-back-N that skips SACKed data after a
//! timeout, new data otherwise; always while `cwnd − pipe` leaves room
//! for the segment (the scoreboard's `SetPipe`, not the flight).
//!
//! Limited transmit (RFC 3042) needs no rule of its own here: the first
//! and second duplicate ACKs carry SACK blocks, which take the SACKed
//! segments out of the pipe and so let as many new segments out.

use super::{Core, TcpSendControl, Timer};
use crate::engine::Transmit;
use crate::tcp::cc::CongestionControl;
use meshbed_core::Instant;

impl TcpSendControl {
    pub(super) fn poll_sack(&mut self, core: &mut Core, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        let (mss, dup_thresh) = (self.config.mss_bytes as u64, self.config.dupack_threshold);
        let (snd_una, snd_max) = (self.snd_una, self.snd_max);
        let cwnd_bytes = self.send_window_bytes();
        let scoreboard = self.sack.as_deref()?;
        if self.retransmit_head {
            // Recovery's first retransmission (RFC 6675 §5 step 4.3), or a
            // reset challenge's: the segment at snd_una, whatever the window.
            self.retransmit_head = false;
            let cap = scoreboard.next_sacked_start(snd_una).unwrap_or(u64::MAX);
            return self.emit_segment(core, now, snd_una, cap, buf);
        }
        let pipe = scoreboard.pipe(snd_una, snd_max, mss, dup_thresh);
        let room = |space: u64| pipe == 0 || pipe + space <= cwnd_bytes;
        if self.cc.metrics().in_recovery {
            // §5 step (C): while cwnd − pipe ≥ 1 SMSS, NextSeg.
            if !room(mss) {
                return None;
            }
            if let Some((seq, end)) = scoreboard.next_lost(snd_una, snd_max, mss, dup_thresh) {
                return self.emit_segment(core, now, seq, end, buf);
            }
            // Rule 2: new data.
            if self.fin_end().is_none_or(|fin_end| snd_max < fin_end) {
                let (len, fin) = self.segment_at(snd_max, buf.len());
                if len > 0 || fin {
                    return self.emit_segment(core, now, snd_max, u64::MAX, buf);
                }
            }
            // Rule 3: an unSACKed segment not yet retransmitted.
            if let Some((seq, end)) = scoreboard.next_unsacked(snd_una, snd_max, mss, dup_thresh) {
                return self.emit_segment(core, now, seq, end, buf);
            }
            // Rule 4: one rescue retransmission per recovery.
            let recovery_point = self.sack_recovery_point;
            let (seq, end) = self.sack.as_deref_mut()?.rescue(snd_una, snd_max, mss, recovery_point)?;
            return self.emit_segment(core, now, seq, end, buf);
        }
        // Outside recovery: from snd_nxt (below snd_max only after a
        // timeout), stepping over what the receiver holds.
        let mut seq = self.snd_nxt;
        while let Some(end) = scoreboard.sacked_end(seq) {
            seq = end;
        }
        self.snd_nxt = seq;
        if self.fin_end().is_some_and(|fin_end| seq >= fin_end) {
            return None;
        }
        let cap = if seq < snd_max { scoreboard.next_sacked_start(seq).unwrap_or(u64::MAX) } else { u64::MAX };
        let (len, fin) = self.segment_at(seq, buf.len());
        let space = (len as u64 + fin as u64).min(cap - seq);
        if space == 0 || !room(space) {
            return None;
        }
        if let Some(at) = self.next_paced_send().filter(|&at| at > now) {
            core.timers.set(Timer::Pace, at);
            return None;
        }
        self.emit_segment(core, now, seq, cap, buf)
    }
}
