//! HyStart++ (RFC 9406): slow start that watches the round's smallest RTT
//! and, when it rises by a threshold over the last round's, leaves standard
//! slow start for Conservative Slow Start (CSS) — a quarter of the growth
//! for up to `CSS_ROUNDS` rounds — before congestion avoidance; a CSS round
//! whose RTT falls back below the baseline was a spurious exit, and slow
//! start resumes. `tcp-cubic` runs it in its initial slow start (RFC 9406
//! §4.3 recommends exactly that: later slow starts stop at the ssthresh a
//! loss set).
//!
//! Choices the RFC leaves to the implementation, and what meshbed does:
//! - The per-ACK increase is `min(N, SMSS)` (RFC 5681 without appropriate
//!   byte counting, as every engine here grows its window), so RFC 9406's
//!   `L · SMSS` cap (L = 8 unpaced) never binds; CSS adds a quarter of it.
//! - `currentRTT` is the RTT sample the ACK gave (with RFC 7323 timestamps
//!   every ACK of new data gives one); an ACK without a sample grows the
//!   window but is not counted in `rttSampleCount`.
//! - A round ends when an ACK reaches `windowEnd`, set to the highest
//!   sequence sent (`SND.NXT`) when the round began (§4.2).

use super::cc::{AckSample, Window};
use meshbed_core::Duration;

/// §4.3's constants.
pub const MIN_RTT_THRESH: Duration = Duration::from_millis(4);
pub const MAX_RTT_THRESH: Duration = Duration::from_millis(16);
pub const MIN_RTT_DIVISOR: u64 = 8;
pub const N_RTT_SAMPLE: u32 = 8;
pub const CSS_GROWTH_DIVISOR: f64 = 4.0;
pub const CSS_ROUNDS: u32 = 5;

/// Where slow start stands.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Standard slow start, watching for a delay increase.
    SlowStart,
    /// Conservative Slow Start since a delay increase at
    /// `baseline_min_rtt`, `rounds` rounds of it completed.
    Css { baseline_min_rtt: Duration, rounds: u32 },
    /// CSS ran its rounds: congestion avoidance from here (ssthresh = cwnd).
    Done,
}

/// HyStart++'s state over one slow start.
#[derive(Clone, Debug)]
pub struct HyStartPlusPlus {
    phase: Phase,
    /// `windowEnd`: the round ends when this is acknowledged; `None` before
    /// the first ACK.
    window_end: Option<u64>,
    last_round_min_rtt: Option<Duration>,
    current_round_min_rtt: Option<Duration>,
    rtt_sample_count: u32,
    /// Times a delay increase moved slow start into CSS, and times CSS
    /// found that spurious and went back.
    pub css_entries: u64,
    pub spurious_exits: u64,
}

impl Default for HyStartPlusPlus {
    fn default() -> Self {
        HyStartPlusPlus {
            phase: Phase::SlowStart,
            window_end: None,
            last_round_min_rtt: None,
            current_round_min_rtt: None,
            rtt_sample_count: 0,
            css_entries: 0,
            spurious_exits: 0,
        }
    }
}

/// §4.2: `RttThresh = max(MIN_RTT_THRESH, min(lastRoundMinRTT /
/// MIN_RTT_DIVISOR, MAX_RTT_THRESH))`.
pub fn rtt_thresh(last_round_min_rtt: Duration) -> Duration {
    Duration::from_nanos(last_round_min_rtt.as_nanos() / MIN_RTT_DIVISOR).clamp(MIN_RTT_THRESH, MAX_RTT_THRESH)
}

impl HyStartPlusPlus {
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// One ACK of new data in slow start (cwnd < ssthresh): grows `window`
    /// as the phase says and moves between the phases (§4.2). When CSS has
    /// run its rounds, ssthresh becomes cwnd, so the next ACK is congestion
    /// avoidance.
    pub fn on_ack(&mut self, window: &mut Window, ack: &AckSample) {
        if self.phase == Phase::Done {
            window.open(ack.acked_bytes);
            return;
        }
        // The round's end comes first: this ACK belongs to the new round.
        let round_ended = self.window_end.is_none_or(|end| ack.ack >= end);
        if round_ended {
            self.window_end = Some(ack.snd_max);
            self.last_round_min_rtt = self.current_round_min_rtt;
            self.current_round_min_rtt = None;
            self.rtt_sample_count = 0;
            if let Phase::Css { baseline_min_rtt, rounds } = self.phase {
                let rounds = rounds + 1;
                self.phase = Phase::Css { baseline_min_rtt, rounds };
                if rounds >= CSS_ROUNDS {
                    // §4.2: into congestion avoidance, ssthresh = cwnd.
                    self.phase = Phase::Done;
                    window.ssthresh_segments = window.cwnd_segments;
                    return;
                }
            }
        }
        if let Some(rtt) = ack.rtt_sample {
            self.current_round_min_rtt = Some(self.current_round_min_rtt.map_or(rtt, |m| m.min(rtt)));
            self.rtt_sample_count += 1;
        }
        // min(N, SMSS), as `Window::open` grows in slow start.
        let increase = window.segments(ack.acked_bytes).min(1.0);
        match self.phase {
            Phase::SlowStart => {
                window.set_cwnd_segments(window.cwnd_segments + increase);
                if let (true, Some(current), Some(last)) =
                    (self.rtt_sample_count >= N_RTT_SAMPLE, self.current_round_min_rtt, self.last_round_min_rtt)
                {
                    if current >= last + rtt_thresh(last) {
                        self.phase = Phase::Css { baseline_min_rtt: current, rounds: 0 };
                        self.css_entries += 1;
                    }
                }
            }
            Phase::Css { baseline_min_rtt, .. } => {
                window.set_cwnd_segments(window.cwnd_segments + increase / CSS_GROWTH_DIVISOR);
                if let (true, Some(current)) = (self.rtt_sample_count >= N_RTT_SAMPLE, self.current_round_min_rtt) {
                    if current < baseline_min_rtt {
                        // The delay increase was spurious: standard slow
                        // start again, HyStart++ included.
                        self.phase = Phase::SlowStart;
                        self.spurious_exits += 1;
                    }
                }
            }
            Phase::Done => unreachable!("handled above"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn ack(ack: u64, snd_max: u64, rtt_ms: Option<u64>) -> AckSample {
        AckSample {
            ack,
            acked_bytes: MSS,
            flight_bytes: snd_max - ack,
            snd_max,
            dupacks: 0,
            srtt: None,
            head_lost: false,
            rtt_sample: rtt_ms.map(Duration::from_millis),
        }
    }

    #[test]
    fn the_threshold_is_an_eighth_of_the_last_rounds_rtt_within_4_and_16_ms() {
        assert_eq!(rtt_thresh(Duration::from_millis(10)), Duration::from_millis(4));
        assert_eq!(rtt_thresh(Duration::from_millis(80)), Duration::from_millis(10));
        assert_eq!(rtt_thresh(Duration::from_millis(400)), Duration::from_millis(16));
    }

    /// A 10-segment window with ssthresh far above it, at the start of
    /// HyStart++'s first round.
    fn fresh() -> (Window, HyStartPlusPlus) {
        (Window::new(10.0, 1000.0, 1000.0, MSS), HyStartPlusPlus::default())
    }

    /// Drives one round of `acks` ACKs, each of one segment with the given
    /// RTT, the round ending at `end` (the next round's window end is
    /// `end + acks` segments further).
    fn round(h: &mut HyStartPlusPlus, w: &mut Window, start_seq: u64, acks: u64, rtt_ms: u64) -> u64 {
        let snd_max = start_seq + 2 * acks * MSS;
        for i in 1..=acks {
            h.on_ack(w, &ack(start_seq + i * MSS, snd_max, Some(rtt_ms)));
        }
        snd_max
    }

    #[test]
    fn a_delay_increase_moves_to_css_which_grows_a_quarter_and_ends_in_congestion_avoidance() {
        let (mut w, mut h) = fresh();
        // Round 1 (the first ACK starts it): 40 ms, standard growth, 1 per ACK.
        let mut seq = round(&mut h, &mut w, 0, 10, 40);
        assert_eq!(h.phase(), Phase::SlowStart);
        assert_eq!(w.cwnd_segments, 20.0);
        // Round 2 at 43 ms: below 40 + max(4, 40/8 = 5) = 45 ms, still slow start.
        seq = round(&mut h, &mut w, seq, 10, 43);
        assert_eq!(h.phase(), Phase::SlowStart);
        assert_eq!(w.cwnd_segments, 30.0);
        // Round 3 at 49 ms: 49 ≥ 43 + 5.375 = 48.375 ms once 8 samples are
        // in: the first 8 ACKs grow by 1, the 8th moves to CSS, the last two
        // grow by a quarter each.
        seq = round(&mut h, &mut w, seq, 10, 49);
        assert_eq!(h.phase(), Phase::Css { baseline_min_rtt: Duration::from_millis(49), rounds: 0 });
        assert_eq!(w.cwnd_segments, 30.0 + 8.0 + 0.5);
        assert_eq!(h.css_entries, 1);
        // CSS rounds 1-4 at the same RTT: a quarter per ACK.
        for r in 1..=4 {
            seq = round(&mut h, &mut w, seq, 4, 49);
            assert_eq!(h.phase(), Phase::Css { baseline_min_rtt: Duration::from_millis(49), rounds: r });
        }
        assert_eq!(w.cwnd_segments, 38.5 + 4.0 * 4.0 * 0.25);
        assert!(w.ssthresh_segments > w.cwnd_segments);
        // The first ACK of the fifth round ends CSS: ssthresh = cwnd.
        h.on_ack(&mut w, &ack(seq + MSS, seq + 10 * MSS, Some(49)));
        assert_eq!(h.phase(), Phase::Done);
        assert_eq!(w.ssthresh_segments, 42.5);
        assert_eq!(w.cwnd_segments, 42.5);
    }

    #[test]
    fn a_css_round_whose_rtt_falls_below_the_baseline_resumes_slow_start() {
        let (mut w, mut h) = fresh();
        let mut seq = round(&mut h, &mut w, 0, 10, 40);
        seq = round(&mut h, &mut w, seq, 10, 60);
        assert!(matches!(h.phase(), Phase::Css { .. }), "{:?}", h.phase());
        // The next round's RTT is back under the baseline of 60 ms: after
        // N_RTT_SAMPLE samples, slow start again.
        let before = w.cwnd_segments;
        round(&mut h, &mut w, seq, 10, 41);
        assert_eq!(h.phase(), Phase::SlowStart);
        assert_eq!(h.spurious_exits, 1);
        // Eight ACKs at a quarter, then two at a whole segment.
        assert_eq!(w.cwnd_segments, before + 8.0 * 0.25 + 2.0);
    }

    #[test]
    fn too_few_samples_or_no_last_round_never_leave_slow_start() {
        let (mut w, mut h) = fresh();
        // Seven samples per round: never N_RTT_SAMPLE, whatever the delay.
        let mut seq = round(&mut h, &mut w, 0, 7, 40);
        seq = round(&mut h, &mut w, seq, 7, 400);
        assert_eq!(h.phase(), Phase::SlowStart);
        // ACKs without an RTT sample grow the window and count nothing.
        let snd_max = seq + 40 * MSS;
        for i in 1..=20 {
            h.on_ack(&mut w, &ack(seq + i * MSS, snd_max, None));
        }
        assert_eq!(h.phase(), Phase::SlowStart);
        assert_eq!(w.cwnd_segments, 10.0 + 14.0 + 20.0);
    }
}
