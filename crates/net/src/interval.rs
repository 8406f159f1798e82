//! Per-interval reports, as iperf3 prints them, at both ends: the sender's
//! (`meshbed send --interval`: what the receiver acknowledged in each
//! interval, the goodput and the retransmissions, from the [`SendProgress`]
//! samples the sender hands out every 100 ms) and the receiver's (`meshbed
//! recv --interval`: the file bytes delivered in order, from its progress
//! every 100 ms; a receiver cannot count retransmissions, so it shows none
//! rather than a zero). Socket-free: the caller feeds the samples and
//! prints what comes out.
//!
//! An interval closes at the first sample at or past its nominal end, so
//! its times are the samples' (within 100 ms of the nominal ones) and its
//! goodput is its bytes over its own length. The intervals of one attempt
//! add up to the bytes the receiver acknowledged in it: nothing is dropped
//! but a final sliver that carries no byte and no retransmission.

use crate::send::SendProgress;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// One interval of one stream (or their sum).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Interval {
    /// Which nominal interval: `[index·I, (index+1)·I)` of the attempt.
    pub index: u64,
    pub start_s: f64,
    pub end_s: f64,
    /// File bytes the receiver acknowledged (or, at the receiver,
    /// delivered in order) in the interval.
    pub bytes: u64,
    pub goodput_bps: f64,
    /// Datagrams sent again; `None` at the receiver, which cannot tell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmissions: Option<u64>,
}

impl Interval {
    /// iperf3's line: `[  1]   0.00-1.00 s   1234 bytes   0.010 Mbit/s   0 retx`.
    pub fn to_line(&self, label: &str) -> String {
        format!(
            "[{label:>3}] {:>6.2}-{:<6.2} s {:>14} bytes {:>11.3} Mbit/s {:>7} retx\n",
            self.start_s,
            self.end_s,
            self.bytes,
            self.goodput_bps / 1e6,
            self.retransmissions.map_or("-".to_string(), |n| n.to_string())
        )
    }

    /// The receiver's line: as [`Interval::to_line`] without the Retr column.
    pub fn to_received_line(&self, label: &str) -> String {
        format!(
            "[{label:>3}] {:>6.2}-{:<6.2} s {:>14} bytes {:>11.3} Mbit/s\n",
            self.start_s,
            self.end_s,
            self.bytes,
            self.goodput_bps / 1e6
        )
    }
}

/// The column heads above [`Interval::to_line`]'s lines.
pub const HEADING: &str = "[ ID] Interval                Transfer              Goodput      Retr\n";
/// The column heads above [`Interval::to_received_line`]'s lines.
pub const RECEIVED_HEADING: &str = "[ ID] Interval                Received              Goodput\n";

/// A final piece shorter than this share of the interval joins the one
/// before it rather than make a line of its own.
const SLIVER_SHARE: f64 = 0.1;

/// The reading at one sample.
#[derive(Copy, Clone, Debug)]
struct Reading {
    elapsed: Duration,
    acked: u64,
    retransmissions: Option<u64>,
}

/// Cuts one stream's progress samples into intervals.
#[derive(Debug)]
pub struct IntervalMeter {
    interval: Duration,
    attempt: u32,
    /// Where the open interval started, and its index.
    start: Reading,
    index: u64,
    last: Reading,
    /// A closed interval held back one sample, so that a sliver at the end
    /// can join it.
    held: Option<Interval>,
}

impl IntervalMeter {
    /// `interval` must be positive.
    pub fn new(interval: Duration) -> Self {
        assert!(!interval.is_zero(), "an interval must be positive");
        let zero = Reading { elapsed: Duration::ZERO, acked: 0, retransmissions: Some(0) };
        IntervalMeter { interval, attempt: 1, start: zero, index: 0, last: zero, held: None }
    }

    /// A receiver's meter, fed by [`IntervalMeter::sample_received`]: its
    /// intervals count no retransmissions. `interval` must be positive.
    pub fn for_receiver(interval: Duration) -> Self {
        let mut meter = IntervalMeter::new(interval);
        meter.start.retransmissions = None;
        meter.last.retransmissions = None;
        meter
    }

    fn closed(&self, index: u64, from: Reading, to: Reading) -> Interval {
        let secs = (to.elapsed.saturating_sub(from.elapsed)).as_secs_f64();
        let bytes = to.acked.saturating_sub(from.acked);
        Interval {
            index,
            start_s: from.elapsed.as_secs_f64(),
            end_s: to.elapsed.as_secs_f64(),
            bytes,
            goodput_bps: if secs > 0.0 { bytes as f64 * 8.0 / secs } else { 0.0 },
            retransmissions: to.retransmissions.map(|to| to.saturating_sub(from.retransmissions.unwrap_or(0))),
        }
    }

    /// Takes a sample; returns the intervals now final (at most two: one
    /// held back, and the previous attempt's last when a retry starts).
    pub fn sample(&mut self, p: &SendProgress) -> Vec<Interval> {
        let mut out = Vec::new();
        if p.attempt != self.attempt {
            // A retry starts the stream, and its clock, from zero.
            out.extend(self.finish());
            *self = IntervalMeter::new(self.interval);
            self.attempt = p.attempt;
        }
        out.extend(self.take(Reading {
            elapsed: p.elapsed,
            acked: p.acked_file_bytes,
            retransmissions: Some(p.retransmissions),
        }));
        out
    }

    /// Takes a receiver's sample: `delivered` file bytes in order,
    /// `elapsed` since the transfer's SYN. The intervals now final.
    /// (A meter made by [`IntervalMeter::for_receiver`].)
    pub fn sample_received(&mut self, elapsed: Duration, delivered: u64) -> Vec<Interval> {
        self.take(Reading { elapsed, acked: delivered, retransmissions: None })
    }

    fn take(&mut self, now: Reading) -> Vec<Interval> {
        let mut out = Vec::new();
        self.last = now;
        let nominal_end = self.interval.saturating_mul((self.index + 1).min(u32::MAX as u64) as u32);
        if now.elapsed >= nominal_end {
            out.extend(self.held.take());
            self.held = Some(self.closed(self.index, self.start, now));
            self.start = now;
            // A sample late by more than an interval skips the indexes it
            // covered.
            self.index = (now.elapsed.as_nanos() / self.interval.as_nanos()) as u64;
        } else if now.elapsed > self.start.elapsed {
            out.extend(self.held.take());
        }
        out
    }

    /// The stream ended (after its last sample): the intervals still open.
    pub fn finish(&mut self) -> Vec<Interval> {
        let tail = self.closed(self.index, self.start, self.last);
        let sliver = tail.end_s - tail.start_s < self.interval.as_secs_f64() * SLIVER_SHARE;
        let mut out = Vec::new();
        match self.held.take() {
            Some(mut held) if sliver => {
                held.end_s = tail.end_s;
                held.bytes += tail.bytes;
                held.retransmissions = match (held.retransmissions, tail.retransmissions) {
                    (Some(a), Some(b)) => Some(a + b),
                    _ => None,
                };
                let secs = held.end_s - held.start_s;
                held.goodput_bps = if secs > 0.0 { held.bytes as f64 * 8.0 / secs } else { 0.0 };
                out.push(held);
            }
            held => {
                out.extend(held);
                if !sliver || tail.bytes > 0 || tail.retransmissions.unwrap_or(0) > 0 {
                    out.push(tail);
                }
            }
        }
        self.start = self.last;
        out
    }
}

/// The intervals of parallel streams, summed by index once every stream
/// has reported that index or ended (iperf3's `[SUM]` lines).
#[derive(Debug)]
pub struct IntervalSum {
    rows: BTreeMap<u64, Vec<Interval>>,
    /// Per stream: the highest index it reported, and whether it ended.
    reported: Vec<Option<u64>>,
    ended: Vec<bool>,
}

impl IntervalSum {
    pub fn new(streams: usize) -> Self {
        IntervalSum { rows: BTreeMap::new(), reported: vec![None; streams], ended: vec![false; streams] }
    }

    pub fn add(&mut self, stream: usize, interval: &Interval) {
        self.reported[stream] = self.reported[stream].max(Some(interval.index));
        self.rows.entry(interval.index).or_default().push(interval.clone());
    }

    /// `stream` will report nothing more.
    pub fn end(&mut self, stream: usize) {
        self.ended[stream] = true;
    }

    /// The sums that are complete, in index order, each once.
    pub fn ready(&mut self) -> Vec<Interval> {
        let mut out = Vec::new();
        while let Some((&index, _)) = self.rows.first_key_value() {
            let complete =
                self.reported.iter().zip(&self.ended).all(|(r, &ended)| ended || r.is_some_and(|r| r >= index));
            if !complete {
                break;
            }
            let row = self.rows.remove(&index).expect("first key");
            out.push(sum(index, &row));
        }
        out
    }
}

/// The sum of intervals of one index: the widest span, the bytes and
/// retransmissions added, and the goodputs added (each stream's over its
/// own span, as the streams' samples do not fall at the same instants).
fn sum(index: u64, row: &[Interval]) -> Interval {
    Interval {
        index,
        start_s: row.iter().map(|i| i.start_s).fold(f64::INFINITY, f64::min),
        end_s: row.iter().map(|i| i.end_s).fold(0.0, f64::max),
        bytes: row.iter().map(|i| i.bytes).sum(),
        goodput_bps: row.iter().map(|i| i.goodput_bps).sum(),
        retransmissions: row.iter().map(|i| i.retransmissions).sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64, acked: u64, retx: u64, attempt: u32) -> SendProgress {
        SendProgress {
            acked: acked + 50,
            total: 1 << 40,
            acked_file_bytes: acked,
            retransmissions: retx,
            elapsed: Duration::from_millis(ms),
            attempt,
        }
    }

    /// Samples every 100 ms (+3 ms of lateness), 1000 bytes each, one
    /// retransmission every 500 ms; the run ends at `end_ms`.
    fn run(meter: &mut IntervalMeter, end_ms: u64) -> Vec<Interval> {
        let mut out = Vec::new();
        let mut ms = 0;
        while ms < end_ms {
            out.extend(meter.sample(&at(ms, ms * 10, ms / 500, 1)));
            ms += 103;
        }
        out.extend(meter.sample(&at(end_ms, end_ms * 10, end_ms / 500, 1)));
        out.extend(meter.finish());
        out
    }

    #[test]
    fn a_three_second_run_gives_three_intervals_that_add_up() {
        let mut meter = IntervalMeter::new(Duration::from_secs(1));
        let got = run(&mut meter, 2_999);
        assert_eq!(got.iter().map(|i| i.index).collect::<Vec<_>>(), [0, 1, 2], "{got:?}");
        assert_eq!(got.iter().map(|i| i.bytes).sum::<u64>(), 29_990);
        assert_eq!(got.iter().map(|i| i.retransmissions.unwrap()).sum::<u64>(), 5);
        // Each interval starts where the one before it ended.
        assert_eq!(got[0].start_s, 0.0);
        for w in got.windows(2) {
            assert_eq!(w[0].end_s, w[1].start_s);
        }
        assert!((got[0].goodput_bps - 80_000.0).abs() < 1.0, "{}", got[0].goodput_bps);
    }

    #[test]
    fn a_sliver_at_the_end_joins_the_last_interval_and_a_longer_rest_stands_alone() {
        // The last sample lands just past 3 s: 3 intervals, not 4.
        let mut meter = IntervalMeter::new(Duration::from_secs(1));
        let got = run(&mut meter, 3_005);
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(got.iter().map(|i| i.bytes).sum::<u64>(), 30_050);
        assert_eq!(got[2].end_s, 3.005);
        // 2.5 s: the half interval is a line of its own.
        let mut meter = IntervalMeter::new(Duration::from_secs(1));
        let got = run(&mut meter, 2_500);
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(got.iter().map(|i| i.bytes).sum::<u64>(), 25_000);
    }

    #[test]
    fn a_retry_closes_the_first_attempt_and_starts_over() {
        let mut meter = IntervalMeter::new(Duration::from_secs(1));
        let mut got = Vec::new();
        for ms in (0..=1_500).step_by(100) {
            got.extend(meter.sample(&at(ms, ms, 0, 1)));
        }
        got.extend(meter.sample(&at(0, 0, 0, 2)));
        assert_eq!(got.iter().map(|i| i.bytes).sum::<u64>(), 1_500, "{got:?}");
        for ms in (100..=500).step_by(100) {
            got.extend(meter.sample(&at(ms, ms * 2, 0, 2)));
        }
        got.extend(meter.finish());
        assert_eq!(got.last().unwrap().bytes, 1_000);
        assert_eq!(got.last().unwrap().start_s, 0.0);
    }

    #[test]
    fn a_receivers_intervals_add_up_to_what_it_delivered_and_count_no_retransmissions() {
        let mut meter = IntervalMeter::for_receiver(Duration::from_millis(500));
        let mut got = Vec::new();
        // Progress every 100 ms (+7 ms), 2000 bytes each, for 1.3 s.
        let mut ms = 0;
        while ms <= 1_300 {
            got.extend(meter.sample_received(Duration::from_millis(ms), ms * 20));
            ms += 107;
        }
        got.extend(meter.sample_received(Duration::from_millis(1_350), 27_000));
        got.extend(meter.finish());
        assert_eq!(got.iter().map(|i| i.index).collect::<Vec<_>>(), [0, 1, 2], "{got:?}");
        assert_eq!(got.iter().map(|i| i.bytes).sum::<u64>(), 27_000);
        assert!(got.iter().all(|i| i.retransmissions.is_none()), "{got:?}");
        let line = got[0].to_received_line("1");
        assert!(line.starts_with("[  1]   0.00-0.54 ") && line.trim_end().ends_with("Mbit/s"), "{line}");
        // Nothing about retransmissions in its JSON either.
        assert!(!serde_json::to_string(&got[0]).unwrap().contains("retransmissions"));
    }

    #[test]
    fn sums_wait_for_every_stream_and_stop_waiting_for_ended_ones() {
        let iv = |index, bytes| Interval {
            index,
            start_s: index as f64,
            end_s: index as f64 + 1.0,
            bytes,
            goodput_bps: bytes as f64 * 8.0,
            retransmissions: Some(1),
        };
        let mut sum = IntervalSum::new(2);
        sum.add(0, &iv(0, 10));
        assert!(sum.ready().is_empty());
        sum.add(1, &iv(0, 5));
        let ready = sum.ready();
        assert_eq!(ready.len(), 1);
        assert_eq!((ready[0].bytes, ready[0].retransmissions, ready[0].goodput_bps), (15, Some(2), 120.0));
        sum.add(0, &iv(1, 7));
        sum.add(0, &iv(2, 7));
        assert!(sum.ready().is_empty());
        sum.end(1);
        assert_eq!(sum.ready().iter().map(|i| (i.index, i.bytes)).collect::<Vec<_>>(), [(1, 7), (2, 7)]);
        assert!(sum.ready().is_empty());
    }
}
