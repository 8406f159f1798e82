//! The SACK sender with RACK-TLP (RFC 8985, [`crate::tcp::rack`]): when
//! RACK looks for losses, when the probe timer runs, and what goes next.
//!
//! What to send follows RFC 6675's NextSeg with RACK's `IsLost`: the first
//! segment RACK marked lost and not yet resent, then new data, while
//! `cwnd − pipe` leaves room (pipe from RACK's marks). The same holds after
//! a timeout, when RACK has marked the outstanding data lost (§6.3), so
//! nothing is resent that RACK still believes in flight. RFC 6675's rules 3
//! and 4 (resending unSACKed data not known lost) are left to the probe.

use super::{Core, TcpSendControl, Timer};
use crate::engine::Transmit;
use crate::tcp::rack::{ProbeOutcome, Rack};
use meshbed_core::Instant;

impl TcpSendControl {
    /// `RACK_detect_loss_and_arm_timer` (§6.2 step 5, §6.3), after an ACK
    /// or when the RACK timer fires; recovery begins if it marked a loss.
    pub(super) fn rack_detect_loss(&mut self, core: &mut Core, now: Instant) {
        let (mss, dup_thresh) = (self.config.mss_bytes as u64, self.config.dupack_threshold);
        let in_loss_recovery = self.cc.in_loss_recovery(self.snd_una);
        let segs_sacked = self.sack.as_ref().map_or(0, |s| s.sacked_segments(mss));
        let srtt = self.rtt.srtt();
        let Some(rack) = self.rack.as_deref_mut() else { return };
        let reo_wnd = rack.reo_wnd(in_loss_recovery, segs_sacked, dup_thresh, srtt);
        let (marked, due) = rack.detect_loss(now, reo_wnd);
        match due {
            Some(at) => core.timers.set(Timer::Rack, at),
            None => core.timers.stop(Timer::Rack),
        }
        if marked > 0 && !in_loss_recovery && core.phase() == crate::engine_core::Phase::Established {
            let sample = self.ack_sample(self.snd_una, 0);
            let response = self.cc.on_loss_detected(now, &sample);
            self.apply(core, now, response);
            self.window_changed(core, now, false);
            // Recovery has begun: no probes in it (§7.1).
            core.timers.stop(Timer::Tlp);
            self.tlp_due = false;
        }
    }

    /// RFC 8985 §7.1–7.2: (re)starts the probe timer after new data went
    /// out or new data was acknowledged, when there is data in flight, no
    /// probe out and no recovery; PTO capped at the RTO's expiry.
    pub(super) fn arm_probe_timer(&mut self, core: &mut Core, now: Instant) {
        let Some(rack) = self.rack.as_deref() else { return };
        let flight = self.snd_max - self.snd_una;
        if flight == 0
            || rack.probe().is_some()
            || self.cc.in_loss_recovery(self.snd_una)
            || core.phase() != crate::engine_core::Phase::Established
        {
            core.timers.stop(Timer::Tlp);
            return;
        }
        let mut at = now + Rack::pto(self.rtt.srtt(), flight, self.config.mss_bytes as u64);
        if let Some(rto_at) = core.timers.get(Timer::Retransmit) {
            at = at.min(rto_at);
        }
        core.timers.set(Timer::Tlp, at);
    }

    /// `TLP_process_ack` (§7.4): a probe whose retransmission repaired a
    /// loss cuts the window as a loss would.
    pub(super) fn on_ack_for_probe(&mut self, now: Instant, ack: u64, pure_dupack: bool) {
        let Some(rack) = self.rack.as_deref_mut() else { return };
        if rack.on_ack_for_probe(ack, pure_dupack) == ProbeOutcome::Repaired {
            self.cc.on_probe_repaired_loss(now, self.snd_max - self.snd_una);
        }
    }

    /// §7.3: the probe, new data if there is any (whatever the window),
    /// else the last segment sent again; then the RTO runs again.
    fn send_probe(&mut self, core: &mut Core, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        let snd_max = self.snd_max;
        let (len, fin) = self.segment_at(snd_max, buf.len());
        let new_data = (len > 0 || fin) && self.fin_end().is_none_or(|fin_end| snd_max < fin_end);
        let transmit = if new_data {
            self.emit_segment(core, now, snd_max, u64::MAX, buf)
        } else {
            let (seq, end) = self.rack.as_deref()?.last_segment()?;
            self.emit_segment(core, now, seq, end, buf)
        }?;
        let end_seq = self.snd_max;
        self.rack.as_deref_mut()?.on_probe_sent(end_seq, !new_data);
        core.timers.stop(Timer::Tlp);
        core.timers.set(Timer::Retransmit, now + self.rtt.rto());
        Some(transmit)
    }

    pub(super) fn poll_rack(&mut self, core: &mut Core, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        let mss = self.config.mss_bytes as u64;
        if std::mem::take(&mut self.tlp_due) {
            if let Some(transmit) = self.send_probe(core, now, buf) {
                return Some(transmit);
            }
        }
        if self.retransmit_head {
            // Recovery's first retransmission (RFC 6675 §5 step 4.3) when
            // RACK marked the head lost, or a reset challenge's: the segment
            // at snd_una, whatever the window, up to the next SACKed byte.
            self.retransmit_head = false;
            let snd_una = self.snd_una;
            let cap = self.sack.as_deref()?.next_sacked_start(snd_una).unwrap_or(u64::MAX);
            return self.emit_segment(core, now, snd_una, cap, buf);
        }
        let cwnd_bytes = self.send_window_bytes();
        let rack = self.rack.as_deref()?;
        let pipe = rack.pipe();
        let room = |space: u64| pipe == 0 || pipe + space <= cwnd_bytes;
        if let Some((seq, end)) = rack.next_lost() {
            if !room(end - seq) {
                return None;
            }
            if self.bbr_paces() {
                if let Some(at) = self.next_paced_send().filter(|&at| at > now) {
                    core.timers.set(Timer::Pace, at);
                    return None;
                }
            }
            return self.emit_segment(core, now, seq, end, buf);
        }
        let seq = self.snd_max;
        let (len, fin) = self.segment_at(seq, buf.len());
        let all_sent = self.fin_end().is_some_and(|fin_end| seq >= fin_end);
        let space = if all_sent { 0 } else { len as u64 + fin as u64 };
        if space == 0 {
            // Nothing to send while the window has room: the application
            // limits the flow, not the path.
            if room(mss) {
                self.bbr_app_limited(pipe);
            }
            return None;
        }
        if !room(space) {
            return None;
        }
        if let Some(at) = self.next_paced_send().filter(|&at| at > now) {
            core.timers.set(Timer::Pace, at);
            return None;
        }
        self.emit_segment(core, now, seq, u64::MAX, buf)
    }
}
