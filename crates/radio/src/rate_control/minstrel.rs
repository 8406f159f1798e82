//! Minstrel: a success-probability estimate per rate, look-around frames
//! and a retry chain per frame (see [`Minstrel`]).

use meshbed_core::{Duration, Instant, StreamRng};
use rand::Rng;

/// Minstrel's constants (Linux `rc80211_minstrel`, ns-3's attribute defaults).
pub const MINSTREL_UPDATE_INTERVAL: Duration = Duration::from_millis(100);
/// Weight of the old value in the success-probability EWMA, percent.
pub const MINSTREL_EWMA_LEVEL_PERCENT: u32 = 75;
/// Share of frames that look around at another rate, percent.
pub const MINSTREL_LOOKAROUND_PERCENT: u64 = 10;
/// Columns of the look-around table.
pub const MINSTREL_SAMPLE_COLUMNS: usize = 10;
/// The retries of one rate must fit in this much airtime.
pub const MINSTREL_SEGMENT: Duration = Duration::from_millis(6);
/// MPDU length of the "perfect" transmission time the throughput is
/// estimated from (Linux and ns-3: 1200 bytes).
pub const MINSTREL_REFERENCE_BYTES: u32 = 1200;

/// The MAC timings Minstrel derives its per-rate retry counts from.
#[derive(Clone, Debug, PartialEq)]
pub struct MinstrelTiming {
    /// DATA of [`MINSTREL_REFERENCE_BYTES`] + SIFS + ACK, per rate (ascending).
    pub perfect_tx_time: Vec<Duration>,
    pub ack_timeout: Duration,
    pub slot: Duration,
    pub cw_min: u32,
    pub cw_max: u32,
}

impl MinstrelTiming {
    /// The retry count of `rate` (ns-3 `retryCount`, Linux
    /// `minstrel_rate_init`): the most retransmissions, 2 to 10, that with
    /// the first try and the mean backoffs fit in [`MINSTREL_SEGMENT`], or 1
    /// if 2 do not. A chain stage at this rate makes that many attempts.
    fn retry_count(&self, rate: usize) -> u32 {
        let per_try = self.perfect_tx_time[rate] + self.ack_timeout;
        let mut best = 1;
        for retries in 2..=10u32 {
            let mut total = per_try;
            let mut cw = self.cw_min;
            for _ in 0..retries {
                total = total + per_try + self.slot * u64::from(cw / 2);
                cw = (2 * (cw + 1) - 1).min(self.cw_max);
            }
            if total > MINSTREL_SEGMENT {
                break;
            }
            best = retries;
        }
        best
    }
}

#[derive(Clone, Debug, PartialEq)]
struct MinstrelRate {
    perfect_tx_time: Duration,
    retry_count: u32,
    adjusted_retry_count: u32,
    /// This interval's attempts and successes.
    attempts: u32,
    successes: u32,
    /// Successes over all past intervals (0: the next EWMA starts afresh).
    success_history: u64,
    ewma_prob: f64,
    /// Successful frames per second at this rate (`ewma_prob` / perfect time).
    throughput: f64,
    samples_skipped: u32,
    /// Look-around frames still allowed this interval; `None`: no limit.
    sample_limit: Option<u32>,
}

/// How the current frame looks around.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Sampling {
    No,
    /// The look-around rate goes first.
    Direct,
    /// The look-around rate is slower than the best: second in the chain.
    Deferred,
}

/// Minstrel: per-rate success probability (EWMA, 75% old) updated every
/// 100 ms, throughput estimate per rate, 10% look-around frames, and a
/// retry chain per frame: best throughput, second best throughput, best
/// probability, lowest rate, each for its own number of attempts.
#[derive(Clone, Debug, PartialEq)]
pub struct Minstrel {
    rates: Vec<MinstrelRate>,
    next_update: Instant,
    max_tp: usize,
    max_tp2: usize,
    max_prob: usize,
    total_frames: u64,
    sample_frames: u64,
    samples_deferred: u64,
    /// `MINSTREL_SAMPLE_COLUMNS` random permutations of the rate indices.
    sample_table: Vec<u8>,
    sample_pos: usize,
    sampling: Sampling,
    sample_rate: usize,
    /// The current frame's chain: (rate index, attempts) per stage.
    chain: [(usize, u32); 4],
}

impl Minstrel {
    /// A fresh table at `now`: every rate unknown, the lowest rate best (as
    /// in Linux and ns-3), the look-around table drawn from `rng`.
    pub fn new(now: Instant, timing: &MinstrelTiming, rng: &mut StreamRng) -> Self {
        let n = timing.perfect_tx_time.len();
        let rates = (0..n)
            .map(|i| {
                let retry_count = timing.retry_count(i);
                MinstrelRate {
                    perfect_tx_time: timing.perfect_tx_time[i],
                    retry_count,
                    adjusted_retry_count: retry_count,
                    attempts: 0,
                    successes: 0,
                    success_history: 0,
                    ewma_prob: 0.0,
                    throughput: 0.0,
                    samples_skipped: 0,
                    sample_limit: None,
                }
            })
            .collect();
        let mut sample_table = Vec::with_capacity(n * MINSTREL_SAMPLE_COLUMNS);
        for _ in 0..MINSTREL_SAMPLE_COLUMNS {
            let start = sample_table.len();
            sample_table.extend(0..n as u8);
            // Fisher–Yates: each column visits every rate once, in random order.
            for i in (1..n).rev() {
                let j = rng.gen_range(0..=i);
                sample_table.swap(start + i, start + j);
            }
        }
        let mut m = Minstrel {
            rates,
            next_update: now + MINSTREL_UPDATE_INTERVAL,
            max_tp: 0,
            max_tp2: 0,
            max_prob: 0,
            total_frames: 0,
            sample_frames: 0,
            samples_deferred: 0,
            sample_table,
            sample_pos: 0,
            sampling: Sampling::No,
            sample_rate: 0,
            chain: [(0, 1); 4],
        };
        m.chain = m.normal_chain();
        m
    }

    /// A new frame: update the statistics if an interval has passed, decide
    /// whether it looks around, and set its retry chain.
    pub fn start_frame(&mut self, now: Instant) {
        if now >= self.next_update {
            self.update_stats();
            self.next_update = now + MINSTREL_UPDATE_INTERVAL;
        }
        self.sampling = Sampling::No;
        self.chain = self.normal_chain();
        if self.total_frames == 0 {
            return;
        }
        let n = self.rates.len() as i64;
        let due = (self.total_frames * MINSTREL_LOOKAROUND_PERCENT / 100) as i64
            - (self.sample_frames + self.samples_deferred / 2) as i64;
        if due < 0 {
            return;
        }
        if due > 2 * n {
            // Linux: with a sampling backlog on a worsening link, minstrel
            // would burst look-around frames; forgive all but 2n of them.
            self.sample_frames += (due - 2 * n) as u64;
        }
        let idx = self.next_sample();
        self.sample_rate = idx;
        let best = self.max_tp;
        let best_time = self.rates[best].perfect_tx_time;
        let r = &mut self.rates[idx];
        if r.perfect_tx_time > best_time && r.samples_skipped < 20 {
            // A slower rate is only tried if the best one failed first.
            self.sampling = Sampling::Deferred;
            self.samples_deferred += 1;
            self.chain = [self.stage(best), self.stage(idx), self.stage(self.max_prob), self.stage(0)];
        } else if r.sample_limit != Some(0) {
            if let Some(l) = &mut r.sample_limit {
                *l -= 1;
            }
            self.sampling = Sampling::Direct;
            self.chain = [self.stage(idx), self.stage(best), self.stage(self.max_prob), self.stage(0)];
        }
    }

    /// Index of the rate for the attempt after `data_failures` failed DATA
    /// attempts of the current frame: its stage of the chain, and the lowest
    /// rate once the chain is used up (the MAC's retry limit, not Minstrel's
    /// chain, decides when the frame is dropped).
    pub fn rate_index(&self, data_failures: u32) -> usize {
        let mut left = data_failures;
        for &(rate, attempts) in &self.chain {
            if left < attempts {
                return rate;
            }
            left -= attempts;
        }
        0
    }

    /// The outcome of one DATA attempt at rate `rate`.
    pub fn report(&mut self, rate: usize, success: bool) {
        let r = &mut self.rates[rate];
        r.attempts += 1;
        if success {
            r.successes += 1;
        }
    }

    /// The current frame is done (acknowledged or given up) after
    /// `data_failures` failed DATA attempts.
    pub fn end_frame(&mut self, data_failures: u32) {
        self.total_frames += 1;
        // A deferred look-around frame only counts if the chain reached it.
        let reached = match self.sampling {
            Sampling::No => false,
            Sampling::Direct => true,
            Sampling::Deferred => data_failures >= self.chain[0].1,
        };
        if reached {
            self.sample_frames += 1;
        }
        self.samples_deferred = self.samples_deferred.saturating_sub(1);
        self.sampling = Sampling::No;
    }

    fn stage(&self, rate: usize) -> (usize, u32) {
        (rate, self.rates[rate].adjusted_retry_count)
    }

    fn normal_chain(&self) -> [(usize, u32); 4] {
        [self.stage(self.max_tp), self.stage(self.max_tp2), self.stage(self.max_prob), self.stage(0)]
    }

    fn next_sample(&mut self) -> usize {
        let idx = self.sample_table[self.sample_pos] as usize;
        self.sample_pos = (self.sample_pos + 1) % self.sample_table.len();
        idx
    }

    /// The 100 ms statistics update (ns-3 `UpdateStats`).
    fn update_stats(&mut self) {
        let old = MINSTREL_EWMA_LEVEL_PERCENT as f64 / 100.0;
        for r in &mut self.rates {
            if r.attempts > 0 {
                r.samples_skipped = 0;
                let p = r.successes as f64 / r.attempts as f64;
                r.ewma_prob = if r.success_history == 0 { p } else { (1.0 - old) * p + old * r.ewma_prob };
                r.throughput = r.ewma_prob / r.perfect_tx_time.as_secs_f64();
            } else {
                r.samples_skipped += 1;
            }
            r.success_history += r.successes as u64;
            r.attempts = 0;
            r.successes = 0;
            // Rates that (almost) never or (almost) always work: at most two
            // attempts per chain stage and four look-arounds per interval.
            if r.ewma_prob > 0.95 || r.ewma_prob < 0.10 {
                r.adjusted_retry_count = r.retry_count.min(2);
                r.sample_limit = Some(4);
            } else {
                r.adjusted_retry_count = r.retry_count;
                r.sample_limit = None;
            }
        }
        let n = self.rates.len();
        let tp = |i: usize| self.rates[i].throughput;
        // Highest throughput, ties to the lower rate; then the best other.
        let max_tp = (0..n).fold(0, |b, i| if tp(i) > tp(b) { i } else { b });
        let max_tp2 = (0..n).filter(|&i| i != max_tp).fold(None, |b: Option<usize>, i| match b {
            Some(b) if tp(i) <= tp(b) => Some(b),
            _ => Some(i),
        });
        // Best probability: among rates at 95% or more the fastest in
        // throughput; otherwise the most likely to succeed (ties upwards).
        let prob = |i: usize| self.rates[i].ewma_prob;
        let reliable = (0..n).filter(|&i| prob(i) >= 0.95).fold(None, |b: Option<usize>, i| match b {
            Some(b) if tp(i) < tp(b) => Some(b),
            _ => Some(i),
        });
        let max_prob = reliable.unwrap_or_else(|| (0..n).fold(0, |b, i| if prob(i) >= prob(b) { i } else { b }));
        self.max_tp = max_tp;
        self.max_tp2 = max_tp2.unwrap_or(max_tp);
        self.max_prob = max_prob;
    }

    /// The rates of the chain's stages, for reports and tests: best
    /// throughput, second best, best probability, lowest.
    pub fn best_rates(&self) -> (usize, usize, usize) {
        (self.max_tp, self.max_tp2, self.max_prob)
    }

    /// The success-probability estimate of `rate` (0 to 1).
    pub fn ewma_prob(&self, rate: usize) -> f64 {
        self.rates[rate].ewma_prob
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meshbed_core::{stream_rng, StreamId, StreamKind};

    const B_RATES: usize = 4; // 1, 2, 5.5, 11 Mbit/s

    fn b_timing() -> MinstrelTiming {
        // 802.11b, 1200-byte DATA + SIFS + ACK at the control rate.
        let std = crate::Standard::B;
        let t = std.timing();
        let perfect_tx_time = std
            .rates_kbps()
            .iter()
            .map(|&r| {
                let ack = crate::phy::control_rate_kbps(std.default_basic_rates_kbps(), r);
                std.frame_duration(MINSTREL_REFERENCE_BYTES, r)
                    + t.sifs
                    + std.frame_duration(crate::phy::ACK_BYTES, ack)
            })
            .collect();
        MinstrelTiming {
            perfect_tx_time,
            ack_timeout: t.sifs + t.slot + t.preamble_header,
            slot: t.slot,
            cw_min: t.cw_min,
            cw_max: t.cw_max,
        }
    }

    fn rng() -> StreamRng {
        stream_rng(7, StreamId::new(StreamKind::RateControl, 0))
    }

    #[test]
    fn minstrel_retry_counts_fit_six_milliseconds() {
        let t = b_timing();
        // 11 Mbit/s: 1200 B = 873 µs + 192 = 1065 µs, SIFS 10, ACK at
        // 2 Mbit/s 56 + 192 = 248 µs: 1323 µs; ACK timeout 222 µs: 1545 µs
        // per try. Three tries (2 retries) with backoffs of 15 and 31 slots
        // (20 µs): 3 · 1545 + 920 = 5555 µs ≤ 6 ms; four tries add
        // 1545 + 63 · 20 → 8360 µs > 6 ms.
        assert_eq!(t.perfect_tx_time[3], Duration::from_micros(1323));
        assert_eq!(t.retry_count(3), 2);
        // 1 Mbit/s: one try is already 9600 + 192 + 10 + 304 = 10106 µs.
        assert_eq!(t.retry_count(0), 1);
    }

    #[test]
    fn minstrel_ewma_after_an_interval_matches_hand_computation() {
        let t0 = Instant::ZERO;
        let mut m = Minstrel::new(t0, &b_timing(), &mut rng());
        // First interval at 5.5 Mbit/s: 8 of 10 → the raw ratio, 0.8.
        for i in 0..10 {
            m.report(2, i < 8);
        }
        m.start_frame(t0 + MINSTREL_UPDATE_INTERVAL);
        assert!((m.ewma_prob(2) - 0.8).abs() < 1e-12);
        // Second interval: 2 of 10 → 0.25 · 0.2 + 0.75 · 0.8 = 0.65.
        for i in 0..10 {
            m.report(2, i < 2);
        }
        m.start_frame(t0 + MINSTREL_UPDATE_INTERVAL * 2 - Duration::from_nanos(1));
        assert!((m.ewma_prob(2) - 0.8).abs() < 1e-12, "no update before the interval is over");
        m.start_frame(t0 + MINSTREL_UPDATE_INTERVAL * 2);
        assert!((m.ewma_prob(2) - 0.65).abs() < 1e-12, "{}", m.ewma_prob(2));
        // An interval without attempts leaves the estimate alone.
        m.start_frame(t0 + MINSTREL_UPDATE_INTERVAL * 3);
        assert!((m.ewma_prob(2) - 0.65).abs() < 1e-12);
    }

    #[test]
    fn minstrel_chain_is_best_throughput_second_best_best_probability_lowest() {
        let t0 = Instant::ZERO;
        let mut m = Minstrel::new(t0, &b_timing(), &mut rng());
        // 11 Mbit/s: 60% → 0.6 / 1323 µs ≈ 454 frames/s; 5.5: 100% → 1 /
        // (1745 + 10 + 248) µs ≈ 499/s; 2 Mbit/s: 100% ≈ 1/(4992+10+248 µs)
        // ≈ 190/s; 1 Mbit/s untried.
        for (rate, ok, n) in [(3, 6, 10), (2, 10, 10), (1, 10, 10)] {
            for i in 0..n {
                m.report(rate, i < ok);
            }
        }
        m.start_frame(t0 + MINSTREL_UPDATE_INTERVAL);
        assert_eq!(m.best_rates(), (2, 3, 2));
        let (tp, tp2, prob) = m.best_rates();
        // Normal frame (the first frames of a station never look around,
        // so force a normal chain): stages in order, then the lowest rate.
        m.sampling = Sampling::No;
        m.chain = m.normal_chain();
        let c = m.rates.iter().map(|r| r.adjusted_retry_count).collect::<Vec<_>>();
        // 5.5 Mbit/s: 1938 + 10 + 248 µs, + 222 µs timeout = 2418 µs per
        // try: three tries and backoffs of 15 and 31 slots pass 6 ms, so
        // the count stays at 1.
        assert_eq!(c[2], 1);
        // 11 Mbit/s at 60% keeps its own count (2 tries).
        assert_eq!(c[3], 2);
        let mut expected = Vec::new();
        for (rate, tries) in [(tp, c[tp]), (tp2, c[tp2]), (prob, c[prob]), (0, c[0])] {
            expected.extend(std::iter::repeat_n(rate, tries as usize));
        }
        let chosen: Vec<usize> = (0..expected.len() as u32 + 3).map(|f| m.rate_index(f)).collect();
        assert_eq!(&chosen[..expected.len()], &expected[..]);
        assert!(chosen[expected.len()..].iter().all(|&r| r == 0), "past the chain: the lowest rate");
    }

    /// Runs `frames` frames through `m`, one every `gap`, where a frame at
    /// rate index `r` succeeds iff `works(r)`; returns how many frames went
    /// first at each rate.
    fn drive(m: &mut Minstrel, frames: u32, gap: Duration, works: impl Fn(usize) -> bool) -> Vec<u64> {
        let mut first = vec![0u64; B_RATES];
        let mut now = Instant::ZERO;
        for _ in 0..frames {
            now += gap;
            m.start_frame(now);
            first[m.rate_index(0)] += 1;
            let mut failures = 0;
            loop {
                let r = m.rate_index(failures);
                let ok = works(r);
                m.report(r, ok);
                if ok || failures == 6 {
                    break;
                }
                failures += 1;
            }
            m.end_frame(failures);
        }
        first
    }

    #[test]
    fn minstrel_settles_on_the_fastest_working_rate_and_looks_around_a_tenth_of_the_time() {
        let mut m = Minstrel::new(Instant::ZERO, &b_timing(), &mut rng());
        // 5.5 Mbit/s and below work, 11 Mbit/s never does; 20 000 frames
        // over 20 s (200 statistics intervals).
        let first = drive(&mut m, 20_000, Duration::from_millis(1), |r| r <= 2);
        assert_eq!(m.best_rates().0, 2);
        let total: u64 = first.iter().sum();
        // Look-around share: Minstrel aims at 10% of frames.
        let share = m.sample_frames as f64 / m.total_frames as f64;
        assert!((0.08..=0.12).contains(&share), "look-around share {share}");
        // The faster, failing rate is tried first only on look-around frames.
        let at_11 = first[3] as f64 / total as f64;
        assert!(at_11 > 0.0 && at_11 <= 0.12, "first attempts at 11 Mbit/s: {at_11}");
        assert!(first[2] as f64 / total as f64 > 0.85, "{first:?}");
    }

    #[test]
    fn minstrel_is_a_function_of_its_seed() {
        let run = |seed| {
            let mut m = Minstrel::new(
                Instant::ZERO,
                &b_timing(),
                &mut stream_rng(seed, StreamId::new(StreamKind::RateControl, 0)),
            );
            drive(&mut m, 3_000, Duration::from_millis(1), |r| r <= 1)
        };
        assert_eq!(run(1), run(1));
    }
}
