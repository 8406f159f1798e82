//! Delivery rate estimation (draft-cheng-iccrg-delivery-rate-estimation-02,
//! Linux `tcp_rate.c`): how fast the path delivered data over the last
//! round trip, from the ACKs alone. BBR ([`super::bbr`]) builds its model
//! of the bottleneck from these samples.
//!
//! Each transmission records a snapshot of the connection's delivery
//! counters ([`RateSnapshot`], kept with RACK's per-segment record,
//! [`super::rack`]); when it is delivered (cumulatively or SACKed), the
//! bytes delivered since that snapshot over the time they took make one
//! sample. The interval is the longer of the send and the ACK intervals
//! (§3.3: the send interval alone overestimates when ACKs are compressed,
//! the ACK interval alone when sends were).
//!
//! meshbed counts bytes where Linux counts packets (`tp->delivered`); with
//! full-sized segments the two differ by the segment size only.

use meshbed_core::{Duration, Instant};

/// A transmission's snapshot of the connection's delivery state (§3.2,
/// `P.delivered`, `P.delivered_time`, `P.first_sent_time`,
/// `P.is_app_limited`), plus when it was sent.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct RateSnapshot {
    pub delivered_bytes: u64,
    pub delivered_time: Instant,
    pub first_sent_time: Instant,
    pub is_app_limited: bool,
}

/// A transmission that was just delivered, as the estimator needs it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DeliveredSegment {
    pub bytes: u64,
    /// When this transmission left (`P.sent_time`).
    pub sent_at: Instant,
    /// Sent more than once: its ACK's round trip is ambiguous (Karn).
    pub retransmitted: bool,
    pub snapshot: RateSnapshot,
}

/// One ACK's rate sample (§3.3's `rs`, Linux `struct rate_sample`).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct RateSample {
    /// Bytes delivered over `interval` (`rs.delivered`).
    pub delivered_bytes: u64,
    /// `rs.interval`: max(send interval, ACK interval); `None` when the
    /// sample is not usable (no delivery, or an interval shorter than the
    /// minimum RTT, which only ACK compression produces, §3.3).
    pub interval: Option<Duration>,
    /// `rs.prior_delivered`: the connection's delivered count when the
    /// newest delivered transmission left. A round trip ends once this
    /// passes the count at the round's start (BBR's round counting).
    pub prior_delivered_bytes: u64,
    /// Bytes newly delivered by this ACK, cumulatively or SACKed
    /// (`rs.acked_sacked`).
    pub acked_sacked_bytes: u64,
    /// Whether the newest delivered transmission left while the sender
    /// was application-limited: its rate says little about the path.
    pub is_app_limited: bool,
    /// The round trip of the most recently sent transmission this ACK
    /// delivered, if it was sent only once (`rs.rtt_us`).
    pub rtt: Option<Duration>,
    /// The pipe before this ACK was processed (`rs.prior_in_flight`).
    pub prior_in_flight_bytes: u64,
}

impl RateSample {
    /// The delivery rate in bytes per second, for a usable sample.
    pub fn rate_bytes_per_s(&self) -> Option<f64> {
        let interval = self.interval?;
        Some(self.delivered_bytes as f64 * 1e9 / interval.as_nanos() as f64)
    }
}

/// The connection's delivery counters (§3.1: `C.delivered`,
/// `C.delivered_time`, `C.first_sent_time`, `C.app_limited`).
#[derive(Clone, Debug, Default)]
pub struct DeliveryRate {
    delivered_bytes: u64,
    delivered_time: Instant,
    first_sent_time: Instant,
    /// `C.app_limited`: 0, or the delivered count past which the
    /// application-limited period is over (the bytes then in flight).
    app_limited_until: u64,
}

impl DeliveryRate {
    /// Bytes delivered so far (`C.delivered`).
    pub fn delivered_bytes(&self) -> u64 {
        self.delivered_bytes
    }

    /// Whether the sender is in an application-limited period.
    pub fn is_app_limited(&self) -> bool {
        self.app_limited_until != 0
    }

    /// When the delivered count last moved (`C.delivered_time`).
    pub fn delivered_time(&self) -> Instant {
        self.delivered_time
    }

    /// §3.2 `OnPacketSent`: the snapshot a transmission carries.
    /// `pipe_bytes` is the pipe before it leaves: a transmission into an
    /// empty pipe starts a new send interval, so that idle time is not
    /// counted as sending time.
    pub fn on_transmit(&mut self, now: Instant, pipe_bytes: u64) -> RateSnapshot {
        if pipe_bytes == 0 {
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        RateSnapshot {
            delivered_bytes: self.delivered_bytes,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            is_app_limited: self.app_limited_until != 0,
        }
    }

    /// §3.4: the sender had nothing to send while the window allowed
    /// more: samples until what is now in flight is delivered are
    /// application-limited.
    pub fn on_app_limited(&mut self, pipe_bytes: u64) {
        self.app_limited_until = (self.delivered_bytes + pipe_bytes).max(1);
    }

    /// §3.3 `UpdateRateSample` for every transmission an ACK delivered,
    /// then `GenerateRateSample`. `min_rtt` is the connection's smallest
    /// RTT, below which an interval is not believed.
    pub fn on_ack(
        &mut self,
        now: Instant,
        delivered: &[DeliveredSegment],
        prior_in_flight_bytes: u64,
        min_rtt: Option<Duration>,
    ) -> RateSample {
        let mut newest: Option<&DeliveredSegment> = None;
        let mut acked_sacked_bytes = 0;
        let mut rtt: Option<(Instant, Duration)> = None;
        for seg in delivered {
            self.delivered_bytes += seg.bytes;
            self.delivered_time = now;
            acked_sacked_bytes += seg.bytes;
            // The most recently sent transmission decides (the largest
            // P.delivered; equal counts, the later send).
            let newer = newest
                .is_none_or(|n| (seg.snapshot.delivered_bytes, seg.sent_at) > (n.snapshot.delivered_bytes, n.sent_at));
            if newer {
                newest = Some(seg);
            }
            if !seg.retransmitted && rtt.is_none_or(|(sent_at, _)| seg.sent_at > sent_at) {
                rtt = Some((seg.sent_at, now.saturating_since(seg.sent_at)));
            }
        }
        if self.app_limited_until != 0 && self.delivered_bytes > self.app_limited_until {
            self.app_limited_until = 0;
        }
        let rtt = rtt.map(|(_, r)| r);
        let Some(newest) = newest else {
            return RateSample {
                delivered_bytes: 0,
                interval: None,
                prior_delivered_bytes: 0,
                acked_sacked_bytes,
                is_app_limited: self.app_limited_until != 0,
                rtt,
                prior_in_flight_bytes,
            };
        };
        let snap = newest.snapshot;
        // §3.3: the next send interval starts with this transmission.
        self.first_sent_time = newest.sent_at;
        let send_elapsed = newest.sent_at.saturating_since(snap.first_sent_time);
        let ack_elapsed = self.delivered_time.saturating_since(snap.delivered_time);
        let interval = send_elapsed.max(ack_elapsed);
        let usable = interval > Duration::ZERO && min_rtt.is_none_or(|m| interval >= m);
        RateSample {
            delivered_bytes: self.delivered_bytes - snap.delivered_bytes,
            interval: usable.then_some(interval),
            prior_delivered_bytes: snap.delivered_bytes,
            acked_sacked_bytes,
            is_app_limited: snap.is_app_limited,
            rtt,
            prior_in_flight_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Instant {
        Instant::from_nanos(n * 1_000_000)
    }

    fn seg(bytes: u64, sent_at: Instant, snapshot: RateSnapshot) -> DeliveredSegment {
        DeliveredSegment { bytes, sent_at, retransmitted: false, snapshot }
    }

    #[test]
    fn a_steady_flow_measures_its_delivery_rate() {
        // Ten 1000-byte segments sent 10 ms apart into an empty pipe, each
        // delivered 100 ms after it left: 1000 bytes per 10 ms = 100 kB/s.
        let mut rate = DeliveryRate::default();
        let mut snaps = Vec::new();
        for i in 0..10 {
            snaps.push(rate.on_transmit(ms(10 * i), i * 1000));
        }
        let mut last = None;
        for i in 0..10u64 {
            let s = rate.on_ack(ms(100 + 10 * i), &[seg(1000, ms(10 * i), snaps[i as usize])], 10_000, None);
            last = Some(s);
        }
        let s = last.unwrap();
        // The last segment's snapshot: nothing delivered when it left
        // (sent at 90 ms, first delivery at 100 ms), first_sent_time 0.
        // Send interval 90 ms, ACK interval 190 − 0 (delivered_time was the
        // first transmission's) = 190 ms: 10,000 bytes over 190 ms.
        assert_eq!(s.delivered_bytes, 10_000);
        assert_eq!(s.interval, Some(Duration::from_millis(190)));
        assert_eq!(s.acked_sacked_bytes, 1000);
        assert_eq!(s.rtt, Some(Duration::from_millis(100)));
        // A segment sent after the first deliveries sees the steady rate.
        let snap = rate.on_transmit(ms(200), 0);
        let s = rate.on_ack(ms(300), &[seg(1000, ms(200), snap)], 1000, None);
        assert_eq!((s.delivered_bytes, s.interval), (1000, Some(Duration::from_millis(100))));
        assert_eq!(s.rate_bytes_per_s(), Some(10_000.0));
    }

    #[test]
    fn the_send_interval_counts_when_acks_come_compressed() {
        // Two segments sent 50 ms apart; their ACKs arrive together: the
        // ACK interval is short, the send interval (50 ms) decides.
        let mut rate = DeliveryRate::default();
        let a = rate.on_transmit(ms(0), 0);
        let s = rate.on_ack(ms(100), &[seg(1000, ms(0), a)], 1000, None);
        assert_eq!(s.interval, Some(Duration::from_millis(100)));
        let b = rate.on_transmit(ms(110), 0);
        let c = rate.on_transmit(ms(160), 1000);
        let s = rate.on_ack(ms(261), &[seg(1000, ms(110), b), seg(1000, ms(160), c)], 2000, None);
        // Newest: c, with snapshot delivered 1000 at t=110 (reset by b's
        // transmission into an empty pipe), first_sent 110. Send interval
        // 50 ms, ACK interval 261 − 110 = 151 ms.
        assert_eq!(s.prior_delivered_bytes, 1000);
        assert_eq!(s.delivered_bytes, 2000);
        assert_eq!(s.interval, Some(Duration::from_millis(151)));
    }

    #[test]
    fn intervals_below_the_minimum_rtt_are_not_samples() {
        let mut rate = DeliveryRate::default();
        let a = rate.on_transmit(ms(0), 0);
        let s = rate.on_ack(ms(20), &[seg(1000, ms(0), a)], 1000, Some(Duration::from_millis(30)));
        assert_eq!(s.interval, None);
        assert_eq!(s.rate_bytes_per_s(), None);
        assert_eq!(s.acked_sacked_bytes, 1000, "what was delivered still counts");
    }

    #[test]
    fn an_application_limited_period_marks_samples_until_its_data_is_delivered() {
        let mut rate = DeliveryRate::default();
        let a = rate.on_transmit(ms(0), 0);
        rate.on_app_limited(1000);
        let b = rate.on_transmit(ms(1), 1000);
        assert!(!a.is_app_limited && b.is_app_limited);
        // a's delivery reaches the mark (1000) but does not pass it.
        rate.on_ack(ms(50), &[seg(1000, ms(0), a)], 2000, None);
        let c = rate.on_transmit(ms(51), 1000);
        assert!(c.is_app_limited);
        let s = rate.on_ack(ms(60), &[seg(1000, ms(1), b)], 2000, None);
        assert!(s.is_app_limited, "b left application-limited");
        let d = rate.on_transmit(ms(61), 1000);
        assert!(!d.is_app_limited, "past the mark the period is over");
    }

    #[test]
    fn retransmissions_give_no_rtt_but_still_a_rate() {
        let mut rate = DeliveryRate::default();
        let a = rate.on_transmit(ms(0), 0);
        let s = rate.on_ack(
            ms(500),
            &[DeliveredSegment { bytes: 1000, sent_at: ms(300), retransmitted: true, snapshot: a }],
            1000,
            None,
        );
        assert_eq!(s.rtt, None);
        assert_eq!(s.delivered_bytes, 1000);
        assert_eq!(s.interval, Some(Duration::from_millis(500)));
    }
}
