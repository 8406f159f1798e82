//! RACK-TLP (RFC 8985): time-based loss detection for the SACK senders
//! (`tcp-sack`, `tcp-cubic`), as Linux runs it by default
//! (`net.ipv4.tcp_recovery = 1`: RACK, and no duplicate-ACK threshold).
//!
//! - **RACK** (§6): a segment is lost once a segment *sent after it* has
//!   been delivered (cumulatively or SACKed) and more than `RACK.rtt +
//!   RACK.reo_wnd` has passed since it was sent. Time, not a count of
//!   duplicate ACKs, decides: a lost retransmission is found the same way
//!   (RFC 6675 needs a timeout for it), and reordering shorter than the
//!   reordering window is tolerated.
//! - **TLP** (§7): when the tail of a flight may be lost, no later segment
//!   is delivered to trigger RACK; a probe timeout (PTO, about two round
//!   trips) sends one segment, new data or the last one again, whose ACK
//!   (or SACK) lets RACK find the loss instead of waiting for the RTO.
//!
//! [`Rack`] keeps what RACK needs per segment (§5.2: when it was last
//! sent, whether it was retransmitted, whether it is lost) for every
//! segment sent and not yet delivered; the sender ([`super::sender`])
//! decides what to send from it, and the congestion side stays RFC 6675's
//! [`SackRecovery`](super::sack::SackRecovery), entered when RACK marks a
//! loss.
//!
//! Choices where the RFC leaves room (docs/PROTOCOLS.md):
//! - meshbed's receiver sends no D-SACK (RFC 2883), so the reordering
//!   window's D-SACK adaptation (§6.2 step 4, `reo_wnd_mult`) never
//!   triggers: `reo_wnd` is `min(RACK.min_RTT / 4, SRTT)`, RFC 8985's value
//!   with a multiplier of 1, and 0 while no reordering was seen and the
//!   sender is in recovery or holds DupThresh SACKed segments.
//! - A retransmitted segment's delivery updates `RACK.rtt` only when it
//!   came at least `RACK.min_RTT` after the retransmission (§6.2 step 2's
//!   second test; the TSecr test is left out: the echo is that of the
//!   segment that moved the receiver's edge, RFC 7323 §4.3, not always of
//!   the segment delivered).
//! - An RTO ends a TLP episode (RFC 8985 leaves it open; Linux's RTO path
//!   starts loss recovery, which no probe outlives).

use super::delivery_rate::{DeliveredSegment, RateSnapshot};
use meshbed_core::{Duration, Instant};
use std::collections::BTreeMap;

/// RFC 8985 §7.2's WCDelAckT: the worst-case delayed-ACK timer a probe of
/// a one-segment flight waits for (200 ms, as RFC 5681 allows up to 500 ms
/// but common stacks use 200 ms).
pub const WORST_CASE_DELAYED_ACK: Duration = Duration::from_millis(200);

/// The PTO before any RTT sample (§7.2: 1 s).
pub const PTO_WITHOUT_RTT: Duration = Duration::from_secs(1);

/// One segment sent and not yet delivered (RFC 8985 §5.2's per-segment
/// variables).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Sent {
    end: u64,
    /// `Segment.xmit_ts`: when it was last sent.
    xmit_ts: Instant,
    /// `Segment.retransmitted`: sent more than once.
    retransmitted: bool,
    /// `Segment.lost`: RACK (or an RTO) marked this transmission lost.
    lost: bool,
    /// Marked lost and sent again since: the retransmission is in flight
    /// (Linux's `TCPCB_SACKED_RETRANS`), until RACK finds it lost too.
    rexmit_in_flight: bool,
    /// The delivery counters when it was last sent, for BBR's rate
    /// samples ([`super::delivery_rate`]; zero for the other TCPs).
    rate: RateSnapshot,
}

impl Sent {
    /// Whether RACK still watches this transmission: not lost, or lost and
    /// sent again (§6.2 marks a lost one with an infinite xmit_ts instead).
    fn watched(&self) -> bool {
        !self.lost || self.rexmit_in_flight
    }

    /// Bytes of it in the network (RFC 6675's pipe, per segment): the
    /// original unless lost, and the retransmission while in flight.
    fn pipe_bytes(&self, start: u64) -> u64 {
        (self.end - start) * (u64::from(!self.lost) + u64::from(self.rexmit_in_flight))
    }
}

/// `RACK_sent_after` (§6.2): whether (t1, seq1) was sent after (t2, seq2);
/// segments sent at the same instant are ordered by their end.
fn sent_after(t1: Instant, seq1: u64, t2: Instant, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

/// A tail loss probe in flight (§7.3's `TLP.end_seq`, `TLP.is_retrans`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Probe {
    pub end_seq: u64,
    pub is_retrans: bool,
}

/// What a probe's acknowledgement said (§7.4).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ProbeOutcome {
    /// Not acknowledged yet, or no probe out.
    Pending,
    /// The episode ended without a loss (new data delivered, or a
    /// duplicate ACK showing the original had arrived).
    NoLoss,
    /// The probe's retransmission repaired a loss: the congestion
    /// controller reacts as to any loss (§7.4.2).
    Repaired,
}

/// RACK-TLP's state for one connection.
#[derive(Clone, Debug, Default)]
pub struct Rack {
    /// Every segment sent and not yet delivered, by first byte.
    sent: BTreeMap<u64, Sent>,
    /// `RACK.xmit_ts` and `RACK.end_seq`: the most recently sent segment
    /// among those delivered.
    latest: Option<(Instant, u64)>,
    /// `RACK.rtt`: the RTT of that segment.
    rtt: Duration,
    /// `RACK.min_RTT`: the smallest RTT seen on the connection.
    min_rtt: Option<Duration>,
    /// `RACK.fack`: the highest end of a delivered segment.
    fack: u64,
    /// `RACK.reordering_seen`.
    reordering_seen: bool,
    /// The probe in flight, if any.
    probe: Option<Probe>,
    pub stats: RackStats,
}

/// What RACK-TLP did, for the sender's statistics.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RackStats {
    /// Segments RACK marked lost (a retransmission found lost counts again).
    pub lost_segments: u64,
    /// Tail loss probes sent, and those whose retransmission repaired a loss.
    pub probes: u64,
    pub probes_repaired: u64,
}

impl Rack {
    /// A segment `[start, end)` left at `now`; `retransmission` when any of
    /// it had been sent before. Records are split where a transmission
    /// does not line up with earlier ones (a retransmission cut short at a
    /// SACKed block).
    pub fn on_transmit(&mut self, start: u64, end: u64, now: Instant, retransmission: bool) {
        self.on_transmit_sampled(start, end, now, retransmission, RateSnapshot::default());
    }

    /// [`Rack::on_transmit`] keeping the delivery-rate `snapshot` with
    /// the transmission.
    pub fn on_transmit_sampled(
        &mut self,
        start: u64,
        end: u64,
        now: Instant,
        retransmission: bool,
        snapshot: RateSnapshot,
    ) {
        if start >= end {
            return;
        }
        self.split_at(start);
        self.split_at(end);
        let mut at = start;
        let covered: Vec<u64> = self.sent.range(start..end).map(|(&s, _)| s).collect();
        for s in covered {
            if s > at {
                self.sent.insert(at, Sent::fresh(s, now, retransmission, snapshot));
            }
            let seg = self.sent.get_mut(&s).expect("a key just listed");
            seg.xmit_ts = now;
            seg.retransmitted = true;
            seg.rate = snapshot;
            if seg.lost {
                seg.rexmit_in_flight = true;
            }
            at = seg.end;
        }
        if at < end {
            self.sent.insert(at, Sent::fresh(end, now, retransmission, snapshot));
        }
    }

    fn split_at(&mut self, seq: u64) {
        let Some((&start, &seg)) = self.sent.range(..seq).next_back() else { return };
        if seg.end > seq {
            self.sent.insert(start, Sent { end: seq, ..seg });
            self.sent.insert(seq, seg);
        }
    }

    /// An RTT measured by the sender (RFC 6298's sample), for `RACK.min_RTT`.
    pub fn on_rtt_sample(&mut self, rtt: Duration) {
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
    }

    /// An ACK arrived: every segment now below `snd_una` or wholly inside
    /// a SACKed range (`sacked_end(seq)`: where the SACKed range holding
    /// `seq` ends) is delivered. Updates `RACK.xmit_ts`, `RACK.rtt` (§6.2
    /// step 2, in the order the segments were sent, so that `RACK.rtt` is
    /// the most recently sent one's) and the reordering flag (step 3, in
    /// sequence order), and forgets them. Returns them, for the delivery
    /// rate.
    pub fn on_ack(
        &mut self,
        now: Instant,
        snd_una: u64,
        sacked_end: impl Fn(u64) -> Option<u64>,
    ) -> Vec<DeliveredSegment> {
        self.split_at(snd_una);
        let mut delivered: Vec<(u64, Sent)> = self
            .sent
            .iter()
            .filter(|&(&s, seg)| seg.end <= snd_una || sacked_end(s).is_some_and(|e| e >= seg.end))
            .map(|(&s, &seg)| (s, seg))
            .collect();
        for (start, seg) in &delivered {
            self.sent.remove(start);
            // Step 3: delivered below the highest delivered end, never
            // retransmitted: it arrived out of order.
            if seg.end > self.fack {
                self.fack = seg.end;
            } else if !seg.retransmitted {
                self.reordering_seen = true;
            }
        }
        delivered.sort_by_key(|&(_, seg)| (seg.xmit_ts, seg.end));
        for &(_, seg) in &delivered {
            self.on_delivered(now, seg);
        }
        delivered
            .into_iter()
            .map(|(start, seg)| DeliveredSegment {
                bytes: seg.end - start,
                sent_at: seg.xmit_ts,
                retransmitted: seg.retransmitted,
                snapshot: seg.rate,
            })
            .collect()
    }

    /// `RACK.min_RTT`: the smallest RTT seen on the connection.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    /// §6.2 step 2 for one delivered segment.
    fn on_delivered(&mut self, now: Instant, seg: Sent) {
        let rtt = now.saturating_since(seg.xmit_ts);
        // An ACK that may be for the original of a retransmitted segment
        // says nothing about the retransmission.
        if seg.retransmitted && self.min_rtt.is_some_and(|m| rtt < m) {
            return;
        }
        self.rtt = rtt;
        self.on_rtt_sample(rtt);
        if self.latest.is_none_or(|(t, e)| sent_after(seg.xmit_ts, seg.end, t, e)) {
            self.latest = Some((seg.xmit_ts, seg.end));
        }
    }

    /// `RACK.reo_wnd` (§6.2 step 4, with `reo_wnd_mult` = 1: no D-SACK).
    /// `segs_sacked` is the number of SACKed segments the scoreboard holds.
    pub fn reo_wnd(&self, in_recovery: bool, segs_sacked: u64, dup_thresh: u32, srtt: Option<Duration>) -> Duration {
        if !self.reordering_seen && (in_recovery || segs_sacked >= u64::from(dup_thresh)) {
            return Duration::ZERO;
        }
        let quarter = self.min_rtt.map_or(Duration::ZERO, |m| Duration::from_nanos(m.as_nanos() / 4));
        srtt.map_or(quarter, |s| quarter.min(s))
    }

    /// `RACK_detect_loss` (§6.2 step 5): marks lost every watched segment
    /// sent before `RACK.xmit_ts` whose time `RACK.rtt + reo_wnd` after its
    /// transmission has passed. Returns the segments newly marked and, if
    /// some are not yet due, when the next one is (the RACK timer, §6.3).
    pub fn detect_loss(&mut self, now: Instant, reo_wnd: Duration) -> (u64, Option<Instant>) {
        let Some((latest_ts, latest_end)) = self.latest else { return (0, None) };
        let (mut marked, mut due) = (0, None::<Instant>);
        for seg in self.sent.values_mut().filter(|s| s.watched()) {
            if !sent_after(latest_ts, latest_end, seg.xmit_ts, seg.end) {
                continue;
            }
            let deadline = seg.xmit_ts + self.rtt + reo_wnd;
            if deadline <= now {
                seg.lost = true;
                seg.rexmit_in_flight = false;
                marked += 1;
            } else {
                due = Some(due.map_or(deadline, |d| d.max(deadline)));
            }
        }
        self.stats.lost_segments += marked;
        (marked, due)
    }

    /// A retransmission timeout (§6.3): the first outstanding segment is
    /// lost (it was sent an RTO ago), and every other one sent at least
    /// `RACK.rtt` ago. The probe episode ends.
    pub fn on_timeout(&mut self, now: Instant) {
        let rtt = self.rtt;
        let mut first = true;
        for seg in self.sent.values_mut().filter(|s| s.watched()) {
            if first || seg.xmit_ts + rtt <= now {
                seg.lost = true;
                seg.rexmit_in_flight = false;
                self.stats.lost_segments += 1;
            }
            first = false;
        }
        self.probe = None;
    }

    /// Whether any segment is marked lost and not yet sent again.
    pub fn has_lost(&self) -> bool {
        self.sent.values().any(|s| s.lost && !s.rexmit_in_flight)
    }

    /// Whether the segment starting at `seq` is marked lost.
    pub fn is_lost(&self, seq: u64) -> bool {
        self.sent.get(&seq).is_some_and(|s| s.lost && !s.rexmit_in_flight)
    }

    /// The first segment marked lost and not yet sent again (NextSeg rule
    /// 1 with RACK's `IsLost`).
    pub fn next_lost(&self) -> Option<(u64, u64)> {
        self.sent.iter().find(|(_, s)| s.lost && !s.rexmit_in_flight).map(|(&start, s)| (start, s.end))
    }

    /// RFC 6675's pipe from RACK's marks: every byte sent and neither
    /// delivered nor lost, and every retransmission in flight.
    pub fn pipe(&self) -> u64 {
        self.sent.iter().map(|(&start, s)| s.pipe_bytes(start)).sum()
    }

    /// The last segment sent (by sequence), which a probe resends when
    /// there is no new data (§7.3).
    pub fn last_segment(&self) -> Option<(u64, u64)> {
        self.sent.last_key_value().map(|(&start, s)| (start, s.end))
    }

    /// The probe timeout (§7.2): two smoothed RTTs, plus the worst-case
    /// delayed ACK when one segment is in flight (its ACK may be delayed);
    /// 1 s before any RTT sample. The caller caps it at the RTO's expiry.
    pub fn pto(srtt: Option<Duration>, flight_bytes: u64, mss_bytes: u64) -> Duration {
        match srtt {
            Some(srtt) if flight_bytes <= mss_bytes => srtt * 2 + WORST_CASE_DELAYED_ACK,
            Some(srtt) => srtt * 2,
            None => PTO_WITHOUT_RTT,
        }
    }

    /// The probe in flight.
    pub fn probe(&self) -> Option<Probe> {
        self.probe
    }

    /// A probe ending at `end_seq` went out (§7.3).
    pub fn on_probe_sent(&mut self, end_seq: u64, is_retrans: bool) {
        self.probe = Some(Probe { end_seq, is_retrans });
        self.stats.probes += 1;
    }

    /// `TLP_process_ack` (§7.4.2) for an ACK of `ack`; `pure_dupack`: it
    /// acknowledged nothing new and carried no SACK block.
    pub fn on_ack_for_probe(&mut self, ack: u64, pure_dupack: bool) -> ProbeOutcome {
        let Some(probe) = self.probe else { return ProbeOutcome::Pending };
        if ack < probe.end_seq {
            return ProbeOutcome::Pending;
        }
        if !probe.is_retrans {
            self.probe = None;
            ProbeOutcome::NoLoss
        } else if ack > probe.end_seq {
            self.probe = None;
            self.stats.probes_repaired += 1;
            ProbeOutcome::Repaired
        } else if pure_dupack {
            self.probe = None;
            ProbeOutcome::NoLoss
        } else {
            ProbeOutcome::Pending
        }
    }
}

impl Sent {
    fn fresh(end: u64, now: Instant, retransmitted: bool, rate: RateSnapshot) -> Sent {
        Sent { end, xmit_ts: now, retransmitted, lost: false, rexmit_in_flight: false, rate }
    }
}

#[cfg(test)]
#[path = "rack_tests.rs"]
mod tests;
