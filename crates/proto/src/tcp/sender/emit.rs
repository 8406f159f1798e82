//! Building the segments the sender puts on the wire: where a segment
//! ends, the data segment itself (with everything its transmission
//! changes: the retransmission count, the RTT probe, RACK's transmit
//! times, the timers), and the SYN.

use super::{Core, RttProbe, TcpSendControl, Timer, DATA_START};
use crate::engine::Transmit;
use crate::wire::{Control, HEADER_LEN};
use meshbed_core::Instant;

impl TcpSendControl {
    /// The segment starting at `seq`: (data length, whether it carries FIN).
    /// Until the stream is finished only full segments go out, so segment
    /// boundaries do not depend on how the application's writes were cut.
    pub(super) fn segment_at(&self, seq: u64, buf_len: usize) -> (usize, bool) {
        let room = buf_len.saturating_sub(HEADER_LEN).min(self.config.mss_bytes);
        let left = self.written_end().saturating_sub(seq);
        let len = (left.min(room as u64)) as usize;
        match self.fin_seq() {
            Some(fin_seq) => (len, seq + len as u64 == fin_seq),
            None if len < room => (0, false),
            None => (len, false),
        }
    }

    /// Sends the segment at `seq`, cut short at `cap_end` (a retransmission
    /// stops where the receiver's SACKed data begins).
    pub(super) fn emit_segment(
        &mut self,
        core: &mut Core,
        now: Instant,
        seq: u64,
        cap_end: u64,
        buf: &mut [u8],
    ) -> Option<Transmit> {
        let (mut len, mut fin) = self.segment_at(seq, buf.len());
        if seq + len as u64 + fin as u64 > cap_end {
            len = cap_end.saturating_sub(seq).min(len as u64) as usize;
            fin = false;
        }
        if len == 0 && !fin {
            return None;
        }
        let end = seq + len as u64 + fin as u64;
        let control = if fin { Control(Control::ACK | Control::FIN) } else { Control(Control::ACK) };
        let mut repr = core.header(control, seq, DATA_START);
        if self.config.timestamps {
            repr.d_max_us = crate::tcp::tsval(now);
        }
        repr.payload_len = len;
        let total = repr.buffer_len();
        repr.emit(buf);
        if len > 0 {
            self.buf.copy_out(seq - DATA_START, &mut buf[HEADER_LEN..total]);
        }

        let snapshot = self.bbr_on_transmit(now, total);
        if let Some(rack) = &mut self.rack {
            rack.on_transmit_sampled(seq, end, now, seq < self.snd_max, snapshot);
        }
        self.prr_on_sent();
        let new_data = end > self.snd_max;
        if seq < self.snd_max {
            core.count_retransmission(now, seq, len);
            if let Some(scoreboard) = &mut self.sack {
                scoreboard.retransmitted(end);
            }
            if self.rtt_probe.is_some_and(|p| seq < p.end_seq && end > p.start_seq) {
                self.rtt_probe = None;
            }
        } else if self.rtt_probe.is_none() && self.standby.is_none() && !self.config.timestamps {
            // An ELFN probe is not timed: its answer may come with the route.
            self.rtt_probe = Some(RttProbe { start_seq: seq, end_seq: end, sent_at: now });
        }
        if fin {
            core.fin_sent(now);
        }
        if end > self.snd_max {
            let new_from = seq.max(self.snd_max);
            core.stats.bytes_sent += end.min(self.written_end()).saturating_sub(new_from);
            self.snd_max = end;
        }
        self.snd_nxt = self.snd_nxt.max(end);
        core.stats.datagrams_sent += 1;
        if self.config.pacing {
            self.last_data_sent_at = Some(now);
        }
        // RFC 6298 §5.1: a data segment goes out and the timer is not running
        // (in ELFN standby it stays off: the probe is not timed out).
        if core.timers.get(Timer::Retransmit).is_none() && self.standby.is_none() {
            core.timers.set(Timer::Retransmit, now + self.rtt.rto());
        }
        if new_data {
            // RFC 8985 §7.1: new data (re)starts the probe timer.
            self.arm_probe_timer(core, now);
        }
        Some(Transmit { len: total })
    }

    pub(super) fn emit_syn(&mut self, core: &mut Core, now: Instant, buf: &mut [u8]) -> Transmit {
        let repr = core.header(Control(Control::SYN), 0, 0);
        repr.emit(buf);
        self.syn_pending = false;
        if self.syn_sent {
            core.count_retransmission(now, 0, 0);
        } else {
            self.syn_sent = true;
            self.rtt_probe = Some(RttProbe { start_seq: 0, end_seq: DATA_START, sent_at: now });
        }
        self.snd_max = DATA_START;
        core.stats.datagrams_sent += 1;
        if core.timers.get(Timer::Retransmit).is_none() && self.standby.is_none() {
            core.timers.set(Timer::Retransmit, now + self.rtt.rto());
        }
        Transmit { len: repr.buffer_len() }
    }
}
