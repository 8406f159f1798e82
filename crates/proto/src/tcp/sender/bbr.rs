//! The `tcp-bbr` sender's part of BBR ([`crate::tcp::bbr`]): the delivery
//! rate samples it feeds the model, and pacing at the model's rate.
//!
//! Pacing follows Linux's earliest departure time (`tcp_wstamp_ns`,
//! `tcp_update_skb_after_send`): every data segment, retransmissions
//! included, moves the next departure `len / pacing_rate` later, with
//! `len` the segment's bytes on the wire (header and payload); new data
//! and RACK's retransmissions wait for it, while the first retransmission
//! of a recovery, a timeout's and a tail loss probe leave at once, as in
//! Linux. As in Linux (which follows `sch_fq`), the first ten data
//! segments are not paced, and a segment sent late (after the window held
//! it) shortens the next gap by up to half.

use super::{Core, TcpSendControl};
use crate::tcp::bbr::BbrAck;
use crate::tcp::delivery_rate::{DeliveredSegment, DeliveryRate, RateSample, RateSnapshot};
use meshbed_core::{Duration, Instant};

/// Data segments sent before pacing begins (Linux: `data_segs_out >= 10`).
const UNPACED_SEGMENTS: u64 = 10;

#[derive(Debug)]
pub(crate) struct BbrSending {
    rate: DeliveryRate,
    /// The sample of the ACK being processed, until BBR has taken it.
    sample: Option<RateSample>,
    /// The earliest departure of the next paced segment.
    next_send_at: Instant,
    data_segments_sent: u64,
}

impl BbrSending {
    pub(super) fn new(now: Instant) -> Self {
        BbrSending { rate: DeliveryRate::default(), sample: None, next_send_at: now, data_segments_sent: 0 }
    }

    /// An ACK delivered `delivered` (RACK's records of them).
    pub(super) fn on_delivered(
        &mut self,
        now: Instant,
        delivered: &[DeliveredSegment],
        prior_pipe_bytes: u64,
        min_rtt: Option<Duration>,
    ) {
        self.sample = Some(self.rate.on_ack(now, delivered, prior_pipe_bytes, min_rtt));
    }

    pub(super) fn next_send_at(&self) -> Option<Instant> {
        Some(self.next_send_at)
    }
}

impl TcpSendControl {
    /// Segments RACK has marked lost so far.
    pub(super) fn rack_lost_segments(&self) -> u64 {
        self.rack.as_ref().map_or(0, |rack| rack.stats.lost_segments)
    }

    /// After an ACK and its loss detection: BBR updates its model, pacing
    /// rate and window from the ACK's rate sample (Linux's `cong_control`
    /// runs after `tcp_fastretrans_alert`). `lost_before` is RACK's count
    /// of lost segments before the detection.
    pub(super) fn bbr_after_ack(&mut self, core: &mut Core, now: Instant, lost_before: u64) {
        let (Some(sending), Some(bbr)) = (self.bbr.as_deref_mut(), self.cc.bbr_mut()) else { return };
        let Some(rate) = sending.sample.take() else { return };
        let (pipe_bytes, lost_now) =
            self.rack.as_ref().map_or((0, lost_before), |rack| (rack.pipe(), rack.stats.lost_segments));
        let ack = BbrAck {
            rate,
            delivered_bytes: sending.rate.delivered_bytes(),
            delivered_time: sending.rate.delivered_time(),
            pipe_bytes,
            lost_segments: lost_now - lost_before,
            srtt: self.rtt.srtt(),
        };
        bbr.on_bbr_ack(now, &ack);
        if bbr.in_probe_rtt() {
            // Linux marks ProbeRTT's samples application-limited.
            sending.rate.on_app_limited(pipe_bytes);
        }
        self.window_changed(core, now, false);
    }

    /// A data segment of `wire_bytes` leaves: its delivery-rate snapshot
    /// (the default for the other TCPs), BBR's restart after an idle
    /// application-limited period, and the next paced departure.
    pub(super) fn bbr_on_transmit(&mut self, now: Instant, wire_bytes: usize) -> RateSnapshot {
        let pipe_bytes = self.rack.as_ref().map_or(0, |rack| rack.pipe());
        let (Some(sending), Some(bbr)) = (self.bbr.as_deref_mut(), self.cc.bbr_mut()) else {
            return RateSnapshot::default();
        };
        if pipe_bytes == 0 && sending.rate.is_app_limited() {
            bbr.on_restart_from_idle(now);
        }
        let snapshot = sending.rate.on_transmit(now, pipe_bytes);
        let prior = sending.next_send_at;
        sending.next_send_at = sending.next_send_at.max(now);
        sending.data_segments_sent += 1;
        let rate = bbr.pacing_rate_bytes_per_s();
        if sending.data_segments_sent >= UNPACED_SEGMENTS && rate > 0.0 {
            let len_ns = (wire_bytes as f64 * 1e9 / rate) as u64;
            let credit_ns = sending.next_send_at.saturating_since(prior).as_nanos();
            sending.next_send_at += Duration::from_nanos(len_ns - (len_ns / 2).min(credit_ns));
        }
        snapshot
    }

    /// The sender had nothing to send while the window had room (Linux's
    /// `tcp_rate_check_app_limited`): the samples of what is in flight say
    /// nothing about the path's capacity.
    pub(super) fn bbr_app_limited(&mut self, pipe_bytes: u64) {
        if let Some(sending) = self.bbr.as_deref_mut() {
            sending.rate.on_app_limited(pipe_bytes);
        }
    }

    /// Whether BBR's pacing holds back a retransmission RACK asks for.
    pub(super) fn bbr_paces(&self) -> bool {
        self.bbr.is_some()
    }
}
