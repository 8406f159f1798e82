//! What the path delivers, as an ATP sender measures it from its
//! receiver's count of arrivals ([`FeedbackEcho`]): the rate cap's growth
//! (`AtpConfig::delivery_growth`) and, on a host, the bottleneck's service
//! time that an end-to-end D leaves out (`AtpConfig::service_time_probe`).
//! Neither is in the documents (docs/PROTOCOLS.md §6, "ATP's rate cap on
//! fast links" and "ATP's rate on a host").

use crate::filter::MaxFilter;
use crate::wire::FeedbackEcho;
use meshbed_core::{Duration, Instant};

/// A delivery sample spans at least one epoch E of the receiver's time
/// (the receiver's own averaging period; 40 ms for adaptive ATP) and this
/// many packets. Shorter samples read bursts as the path's rate, and the
/// maximum of the samples keeps them: the way back adds jitter to each
/// feedback's dating (tens of µs on a host), a link that was idle delivers
/// what its shaper or aggregation held at once (a token bucket's 64 kB is
/// 26 ms of a 20 Mbit/s link), and a sample of a few packets is off by one
/// packet in a few. With 2 ms spans adaptive ATP moved 31–33 Mbit/s over a
/// 100 Mbit/s link with a 20 ms token-bucket queue; with 20, 50 and 100 ms
/// spans 68, 80 and 83 (docs/PROTOCOLS.md §6, "ATP's rate on a host").
pub(crate) const MIN_SAMPLE_PACKETS: u32 = 16;

/// The bottleneck's rate is the largest sample of the last 10 s, as the
/// end-to-end estimate's minimum RTT is the smallest (BBR keeps ten round
/// trips). A sample the sender's own rate held below the estimate does not
/// count (see `on_feedback`), so a slow spell after a queue does not age
/// the path's rate out: with a 250 ms window and no such rule, a 20 Mbit/s
/// link's sender that had slowed to a few packets per second took this for
/// the path and climbed back for 3 s. A path that became slower meanwhile
/// is found by the queue it then builds, which D measures, and by the
/// samples of a sender that sends at the estimate.
const WINDOW: Duration = Duration::from_secs(10);

#[derive(Clone, Debug, Default)]
pub(crate) struct DeliveryMeter {
    /// The previous feedback's newest arrival: when it arrived, in the
    /// sender's clock less the way back (feedback arrival less D_s), and
    /// the arrivals counted then; after the quick-start answer, the answer's
    /// arrival and no data counted.
    previous: Option<(Instant, u32)>,
    /// The arrivals counted then, unwrapped: never more than the sender
    /// sent.
    counted: u64,
    /// The arrival the bottleneck's sample being gathered starts at.
    anchor: Option<(Instant, u32)>,
    /// When the feedback that set the anchor came, and the datagrams the
    /// sender had sent by then: what it sent over the sample's span.
    anchor_sent: (Instant, u64),
    /// Packets per second that arrived between the last two feedbacks (0
    /// before, or when none did): what the cap grows with.
    last_pps: f64,
    /// The largest samples of the window, keyed by nanoseconds.
    bottleneck: MaxFilter,
}

impl DeliveryMeter {
    /// A feedback arrived at `now`, `d_s` after its newest data arrival;
    /// `epoch`: the shortest span a bottleneck sample covers; `sent`: the
    /// datagrams the sender has sent. A count of more arrivals than that,
    /// or of fewer than before (a feedback the network reordered), did not
    /// come from this receiver as it is now and says nothing: as a forged
    /// acknowledgement of bytes never sent is refused (`acks_unsent`), an
    /// arrival count must not lift the cap past what the sender sent.
    pub(crate) fn on_feedback(&mut self, now: Instant, d_s: Duration, echo: FeedbackEcho, epoch: Duration, sent: u64) {
        let arrived_at = Instant::from_nanos(now.as_nanos().saturating_sub(d_s.as_nanos()));
        let here = (arrived_at, echo.arrivals);
        let Some((then, count_then)) = self.previous else {
            if u64::from(echo.arrivals) <= sent {
                (self.previous, self.anchor, self.counted) = (Some(here), Some(here), u64::from(echo.arrivals));
                self.anchor_sent = (now, sent);
            }
            return;
        };
        let packets = echo.arrivals.wrapping_sub(count_then);
        let counted = self.counted + u64::from(packets);
        if packets > u32::MAX / 2 || counted > sent {
            return;
        }
        (self.previous, self.counted) = (Some(here), counted);
        if packets == 0 {
            // Nothing arrived since: the path delivers nothing now.
            self.last_pps = 0.0;
            (self.anchor, self.anchor_sent) = (Some(here), (now, sent));
            return;
        }
        let span = arrived_at.saturating_since(then);
        if !span.is_zero() {
            self.last_pps = f64::from(packets) / span.as_secs_f64();
        }
        let (start, count_start) = self.anchor.unwrap_or(here);
        let packets = echo.arrivals.wrapping_sub(count_start);
        let span = arrived_at.saturating_since(start);
        if span >= epoch && packets >= MIN_SAMPLE_PACKETS {
            let pps = f64::from(packets) / span.as_secs_f64();
            // A sample the sender's own rate held below the bottleneck's
            // measures the sender, not the path (BBR's application-limited
            // samples, Linux `bbr_update_bw`): it may raise the estimate but
            // not replace it, and the window's older, faster samples stay.
            // Without this, a slow spell longer than the window (a queue's
            // D, halvings for missed feedback, an outage) became the path's
            // rate, and R = 1/(D + T) grows only by the probe's gain an
            // epoch: ×1.01 for default ATP. One emulated babeld walk's
            // default-ATP sender sat at 15 packets/s of a ~170 packets/s
            // path for the 25 s until its transfer ended.
            let (sent_then_at, sent_then) = self.anchor_sent;
            let sent_span = now.saturating_since(sent_then_at).as_secs_f64();
            let sender_limited = (sent.saturating_sub(sent_then) as f64) < self.bottleneck.get() * sent_span;
            if !sender_limited || pps > self.bottleneck.get() {
                self.bottleneck.update(now.as_nanos(), pps, WINDOW.as_nanos());
            }
            (self.anchor, self.anchor_sent) = (Some(here), (now, sent));
        }
    }

    /// Measuring starts again at the next feedback (a quick-start answer):
    /// the span since the last one, a silence the sender probed through,
    /// is not the path's delivery. What was measured before stays: the
    /// cap's last sample until the next feedback replaces it, and the
    /// bottleneck's samples until their window passes, so the answer asks
    /// for the rate the path had.
    pub(crate) fn restart(&mut self) {
        (self.previous, self.anchor) = (None, None);
    }

    /// Packets per second that arrived between the last two feedbacks.
    pub(crate) fn last_pps(&self) -> f64 {
        self.last_pps
    }

    /// The bottleneck's rate: the largest recent sample (0 before one).
    pub(crate) fn bottleneck_pps(&self) -> f64 {
        self.bottleneck.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Instant {
        Instant::from_nanos(x * 1_000_000)
    }
    fn echo(arrivals: u32) -> FeedbackEcho {
        FeedbackEcho { transmission: 0, arrivals }
    }
    const E: Duration = Duration::from_millis(40);
    /// Sent so far: more than any count below.
    const ALL: u64 = 1 << 40;
    /// Sent by `t_ms` by a sender at 10,000 packets/s, faster than every
    /// bottleneck below: no sample is the sender's own rate.
    fn fast(t_ms: u64) -> u64 {
        ALL + t_ms * 10
    }

    /// Each feedback measures the arrivals since the one before (the cap's
    /// growth), dated by D_s; a bottleneck sample waits for an epoch and 16
    /// packets of the receiver's time; the bottleneck is the largest sample
    /// of the last 10 s; a feedback that reports no arrival reads zero.
    #[test]
    fn samples_span_an_epoch_and_sixteen_packets_and_the_largest_is_kept() {
        let mut m = DeliveryMeter::default();
        m.on_feedback(ms(100), Duration::ZERO, echo(1_000), E, fast(100));
        // 20 packets in 30 ms: the cap's sample, but too short a span for
        // the bottleneck's.
        m.on_feedback(ms(130), Duration::ZERO, echo(1_020), E, fast(130));
        assert!((m.last_pps() - 20.0 / 0.03).abs() < 1e-6, "{}", m.last_pps());
        assert_eq!(m.bottleneck_pps(), 0.0);
        // 40 packets by 140 ms, the newest of which arrived 10 ms before
        // the feedback left: 40 in 40 ms of the receiver's time.
        m.on_feedback(ms(150), Duration::from_millis(10), echo(1_040), E, fast(150));
        assert_eq!((m.last_pps(), m.bottleneck_pps()), (2_000.0, 1_000.0));
        // Ten packets in a second: too few; then 20 in all over 1.01 s.
        m.on_feedback(ms(1_140), Duration::ZERO, echo(1_050), E, fast(1_140));
        assert!((m.last_pps() - 10.0).abs() < 1e-9, "{}", m.last_pps());
        assert_eq!(m.bottleneck_pps(), 1_000.0);
        m.on_feedback(ms(1_150), Duration::ZERO, echo(1_060), E, fast(1_150));
        assert!((m.last_pps() - 1_000.0).abs() < 1e-6, "{}", m.last_pps());
        assert_eq!(m.bottleneck_pps(), 1_000.0, "the largest of the window");
        // Nothing arrived since: zero, the anchor moves on.
        m.on_feedback(ms(1_300), Duration::ZERO, echo(1_060), E, fast(1_300));
        assert_eq!(m.last_pps(), 0.0);
        // 10 s after the fast sample it has left the window.
        m.on_feedback(ms(10_200), Duration::ZERO, echo(1_080), E, fast(10_200));
        assert!((m.bottleneck_pps() - 20.0 / 1.01).abs() < 1e-9, "{}", m.bottleneck_pps());
        // An older feedback, overtaken on the way, is left out.
        m.on_feedback(ms(10_300), Duration::ZERO, echo(1_070), E, fast(10_300));
        assert!((m.bottleneck_pps() - 20.0 / 1.01).abs() < 1e-9, "{}", m.bottleneck_pps());
        m.on_feedback(ms(10_300), Duration::ZERO, echo(1_100), E, fast(10_300));
        assert!((m.last_pps() - 20.0 / 0.1).abs() < 1e-6, "{}", m.last_pps());
        assert!((m.bottleneck_pps() - 200.0).abs() < 1e-6, "20 in 100 ms, the largest: {}", m.bottleneck_pps());
        // More arrivals than datagrams sent: not this receiver's count.
        let mut f = DeliveryMeter::default();
        f.on_feedback(ms(0), Duration::ZERO, echo(0), E, 10);
        f.on_feedback(ms(100), Duration::ZERO, echo(500), E, 400);
        assert_eq!((f.last_pps(), f.bottleneck_pps()), (0.0, 0.0));
        f.on_feedback(ms(100), Duration::ZERO, echo(300), E, 400);
        assert!((f.last_pps() - 3_000.0).abs() < 1e-6, "{}", f.last_pps());
        // The count wraps.
        let mut w = DeliveryMeter::default();
        w.on_feedback(ms(0), Duration::ZERO, echo(u32::MAX - 9), E, fast(0));
        w.on_feedback(ms(100), Duration::ZERO, echo(10), E, fast(100));
        assert!((w.last_pps() - 200.0).abs() < 1e-9, "{}", w.last_pps());
    }

    /// A sample the sender's own rate held below the bottleneck (it sent
    /// fewer datagrams over the span than the estimate carries) does not
    /// replace the estimate, however long it lasts; it may raise it. A
    /// sample taken while the sender sent at the estimate or more does, once
    /// the faster ones have left the window.
    #[test]
    fn a_sender_limited_sample_does_not_replace_the_bottleneck() {
        let mut m = DeliveryMeter::default();
        let s = Duration::from_secs(1);
        m.on_feedback(ms(0), Duration::ZERO, echo(0), s, 0);
        m.on_feedback(ms(1_000), Duration::ZERO, echo(1_000), s, 1_000);
        assert_eq!(m.bottleneck_pps(), 1_000.0);
        // Twelve seconds at 100 packets/s, all delivered: the sender's
        // rate, not the path's.
        for k in 1..=12u32 {
            let t = 1_000 + u64::from(k) * 1_000;
            m.on_feedback(ms(t), Duration::ZERO, echo(1_000 + 100 * k), s, u64::from(1_000 + 100 * k));
            assert!((m.last_pps() - 100.0).abs() < 1e-9);
        }
        assert_eq!(m.bottleneck_pps(), 1_000.0, "held past its window");
        // 1,200 sent in the next second, 500 delivered: the path's rate.
        m.on_feedback(ms(14_000), Duration::ZERO, echo(2_700), s, 3_400);
        assert!((m.bottleneck_pps() - 500.0).abs() < 1e-9, "{}", m.bottleneck_pps());
        // 400 sent, 600 delivered (a queue draining): more than the
        // estimate, so it counts though the sender sent less.
        m.on_feedback(ms(15_000), Duration::ZERO, echo(3_300), s, 3_800);
        assert!((m.bottleneck_pps() - 600.0).abs() < 1e-9, "{}", m.bottleneck_pps());
    }
}
