//! Interference and SINR reception at one receiver (ns-3
//! `InterferenceHelper` with the PHY's reception decision).
//!
//! A [`Receiver`] owns the set of signals on the air at its node, the total
//! energy they put there, and the frame its PHY has locked onto. It is told
//! when a signal starts and ends, and whether its own node is transmitting;
//! it answers whether the medium is busy to energy detection and, at the end
//! of the locked frame, whether that frame was received.
//!
//! SINR is tracked in chunks: between two changes of the signal set the
//! interference is constant, so the chunk's SINR is one number. The
//! threshold model keeps the minimum over the frame; the curve model sums
//! the log success probability of each chunk's bits.

use super::FrameId;
use crate::config::{ErrorModel, RadioConfig, Resolved};
use crate::propagation::dbm_to_mw;
use meshbed_core::{Instant, StreamRng};
use rand::Rng;

struct RateParams {
    rate_kbps: u32,
    threshold_linear: f64,
}

/// What every receiver is told about the PHY: thresholds, noise and the
/// error model.
pub(super) struct RxParams {
    rx_sensitivity_mw: f64,
    cs_threshold_mw: f64,
    noise_mw: f64,
    error_model: ErrorModel,
    rates: Vec<RateParams>,
    /// Per-bit error rate at the threshold SINR (10% loss of 8000 bits).
    ber_at_threshold: f64,
    /// The curve model's recent `ln(1 − BER)` by SINR ratio to the
    /// threshold ([`chunk_ln_success_per_bit`]) and `exp(ln success)`.
    chunk_memo: Memo,
    exp_memo: Memo,
    /// Whether a reception asks for its random stream as it locks: only
    /// where the nodes' state outgrows the caches (`Medium::prefetch_pays`).
    pub prefetch_streams: bool,
}

impl RxParams {
    pub fn new(config: &RadioConfig, resolved: &Resolved) -> Self {
        let rates = config
            .standard
            .rates_kbps()
            .iter()
            .map(|&r| {
                let thr = config.sinr_threshold_for(r);
                RateParams { rate_kbps: r, threshold_linear: libm::pow(10.0, thr / 10.0) }
            })
            .collect();
        let ber_at_threshold = 1.0 - libm::pow(0.9, 1.0 / 8000.0);
        RxParams {
            rx_sensitivity_mw: dbm_to_mw(resolved.rx_sensitivity_dbm),
            cs_threshold_mw: dbm_to_mw(resolved.cs_threshold_dbm),
            noise_mw: dbm_to_mw(resolved.noise_dbm),
            error_model: config.error_model,
            rates,
            ber_at_threshold,
            chunk_memo: Memo::new(|ratio| chunk_ln_success_per_bit(ratio, ber_at_threshold, config.error_model)),
            exp_memo: Memo::new(libm::exp),
            prefetch_streams: false,
        }
    }

    #[inline]
    fn rate(&self, rate_kbps: u32) -> &RateParams {
        self.rates.iter().find(|r| r.rate_kbps == rate_kbps).unwrap_or(&self.rates[0])
    }
}

/// Recent arguments of a pure function and its results, so that the same
/// argument again costs a comparison instead of the call: on a chain every
/// one-hop link has the same power, so most chunks have one of a few SINRs
/// and most frames one of a few success probabilities (issue 28: `log1p`
/// and `exp` were 6–8% of a `perf` profile of a chain run; the BER's power
/// of the SINR ratio before `log1p`, remembered with it, most of a chain's
/// SINR chunk). The result is the function's, bit for bit.
struct Memo([std::cell::Cell<(u64, f64)>; MEMO_SLOTS]);

/// Slots of a [`Memo`], chosen by the argument's bits (a power of two).
const MEMO_SLOTS: usize = 16;

impl Memo {
    fn new(f: impl Fn(f64) -> f64) -> Self {
        let at_zero = f(0.0);
        Memo(std::array::from_fn(|_| std::cell::Cell::new((0f64.to_bits(), at_zero))))
    }

    /// `f(x)`, `f` being the function this memo was made for.
    #[inline]
    fn get(&self, x: f64, f: impl FnOnce(f64) -> f64) -> f64 {
        let bits = x.to_bits();
        let h = bits ^ (bits >> 17) ^ (bits >> 31);
        let slot = &self.0[(h as usize) & (MEMO_SLOTS - 1)];
        let (key, y) = slot.get();
        if key == bits {
            return y;
        }
        let y = f(x);
        slot.set((bits, y));
        y
    }
}

/// The curve model's `ln(1 − BER)` of one bit at `ratio`, the SINR over
/// the rate's threshold, given the BER there: BER = BER(threshold) ·
/// 10^(−(SINR_dB − threshold_dB) / dB per decade) = BER(threshold) ·
/// ratio^(−10 / dB per decade), one power of the linear ratio, by
/// multiplications at the default 1 dB per decade (no logarithm per
/// chunk), at most ½. (0 for the threshold model, which has no BER.)
fn chunk_ln_success_per_bit(ratio: f64, ber_at_threshold: f64, error_model: ErrorModel) -> f64 {
    let ErrorModel::Curve { db_per_decade } = error_model else { return 0.0 };
    let ber = (ber_at_threshold * ratio_power(ratio, db_per_decade)).min(0.5);
    libm::log1p(-ber)
}

/// `ratio^(−10 / db_per_decade)`: at 1 dB per decade `ratio⁻¹⁰` by four
/// multiplications and a division (IEEE operations: the same on every
/// machine), else `libm::pow`.
#[inline]
fn ratio_power(ratio: f64, db_per_decade: f64) -> f64 {
    if db_per_decade == 1.0 {
        let r2 = ratio * ratio;
        let r4 = r2 * r2;
        1.0 / (r4 * r4 * r2)
    } else {
        libm::pow(ratio, -10.0 / db_per_decade)
    }
}

#[derive(Copy, Clone, Debug, Default)]
struct Arrival {
    frame: FrameId,
    power_mw: f64,
}

/// How many signals on the air at a receiver its slots hold; more go to
/// its spill. Eight hold 99.3% of a 400-node grid's arrivals and all but a
/// few of a 100-node network's.
const SIGNAL_SLOTS: usize = 8;

/// A receiver's first signals on the air, in an array the medium keeps
/// for all receivers, node by node: where a receiver's signals are follows
/// from its number alone, so the driver asks for them ahead of its arrival
/// without first reading the receiver's state (issue 28: reading the
/// address of each receiver's own vector out of its state, still on its
/// way from memory, was about 12% of a 6400-node grid's run).
#[derive(Copy, Clone, Debug, Default)]
#[repr(C, align(64))]
pub(super) struct SignalSlots([Arrival; SIGNAL_SLOTS]);

impl SignalSlots {
    /// Asks the CPU for the first of these signals (a hint:
    /// [`meshbed_core::hint`]).
    #[inline]
    pub fn prefetch(&self) {
        meshbed_core::hint::prefetch_read(self, 1);
    }
}

/// A reception in progress: the preamble was detected and the PHY follows it.
struct Lock {
    frame: FrameId,
    rate_kbps: u32,
    /// The rate's SINR threshold, linear.
    threshold_linear: f64,
    power_mw: f64,
    interference_mw: f64,
    /// Start of the current chunk.
    since: Instant,
    min_sinr: f64,
    /// ln of the probability that every chunk so far was received.
    ln_success: f64,
}

/// What became of a signal reaching the receiver.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum ArrivalFate {
    /// The node was sending or already locked onto another frame: interference.
    Busy,
    /// The PHY locked onto it.
    Locked,
    /// Too weak to detect: only energy.
    BelowSensitivity,
}

/// The signals on the air at one node and its PHY's reception state.
/// In this order, with the random stream out of line: what every arrival
/// touches first, together (issue 28: a 6400-node grid's receivers
/// outgrow the caches).
///
/// The signals on the air are, in order, the first `SIGNAL_SLOTS` in the
/// receiver's [`SignalSlots`] (which every method that changes them is
/// handed) and the rest in `spill`: one sequence, kept as a vector would
/// keep it, so that their energy is summed in the same order.
#[repr(C)]
pub(super) struct Receiver {
    energy_mw: f64,
    lock: Option<Lock>,
    /// How many signals are on the air here.
    signals: u32,
    /// Those beyond the slots.
    spill: Vec<Arrival>,
    /// Draws of the curve error model.
    rng: Box<StreamRng>,
}

impl Receiver {
    pub fn new(rng: StreamRng) -> Self {
        Receiver { energy_mw: 0.0, lock: None, signals: 0, spill: Vec::new(), rng: Box::new(rng) }
    }

    /// Adds a signal at the end of the sequence.
    #[inline]
    fn push_signal(&mut self, slots: &mut SignalSlots, arrival: Arrival) {
        let at = self.signals as usize;
        if at < SIGNAL_SLOTS {
            slots.0[at] = arrival;
        } else {
            self.spill.push(arrival);
        }
        self.signals += 1;
    }

    /// Removes `frame`'s signal, if here, as `Vec::swap_remove` would: the
    /// last signal takes its place.
    #[inline]
    fn remove_signal(&mut self, slots: &mut SignalSlots, frame: FrameId) {
        let count = self.signals as usize;
        let inline = count.min(SIGNAL_SLOTS);
        let found = match slots.0[..inline].iter().position(|a| a.frame == frame) {
            Some(at) => Some(at),
            None => self.spill.iter().position(|a| a.frame == frame).map(|k| SIGNAL_SLOTS + k),
        };
        let Some(at) = found else { return };
        let last = if count > SIGNAL_SLOTS { self.spill.pop().expect("counted") } else { slots.0[count - 1] };
        self.signals -= 1;
        if at < count - 1 {
            if at < SIGNAL_SLOTS {
                slots.0[at] = last;
            } else {
                self.spill[at - SIGNAL_SLOTS] = last;
            }
        }
    }

    /// The energy of every signal on the air, summed in their order.
    #[inline]
    fn signal_energy_mw(&self, slots: &SignalSlots) -> f64 {
        let inline = (self.signals as usize).min(SIGNAL_SLOTS);
        slots.0[..inline].iter().chain(&self.spill).map(|a| a.power_mw).sum()
    }

    /// Whether the PHY is following a frame.
    #[inline]
    pub fn is_locked(&self) -> bool {
        self.lock.is_some()
    }

    /// The received power of the frame the PHY follows (fading included).
    #[inline]
    pub fn locked_power_mw(&self) -> Option<f64> {
        self.lock.as_ref().map(|l| l.power_mw)
    }

    /// Clear channel assessment: busy while locked or while the energy on
    /// the air reaches the carrier-sense threshold.
    #[inline]
    pub fn cca_busy(&self, params: &RxParams) -> bool {
        self.lock.is_some() || self.energy_mw >= params.cs_threshold_mw
    }

    /// Closes the SINR chunk of the locked frame at `now`. Most arrivals
    /// find nothing locked: that test inline, the chunk's work out of line
    /// (issue 28: as a call it was 3% of the ATP paper's AODV run, most of
    /// it the call itself).
    #[inline(always)]
    fn close_chunk(&mut self, now: Instant, params: &RxParams) {
        if self.lock.is_some() {
            self.close_locked_chunk(now, params);
        }
    }

    fn close_locked_chunk(&mut self, now: Instant, params: &RxParams) {
        let Some(lock) = &mut self.lock else { return };
        let dur = now.saturating_since(lock.since);
        lock.since = now;
        if dur.is_zero() {
            return;
        }
        let sinr = lock.power_mw / (params.noise_mw + lock.interference_mw);
        lock.min_sinr = lock.min_sinr.min(sinr);
        if let ErrorModel::Curve { .. } = params.error_model {
            let ratio = sinr / lock.threshold_linear;
            let bits = dur.as_nanos() as f64 * lock.rate_kbps as f64 / 1e6;
            let per_bit = params
                .chunk_memo
                .get(ratio, |r| chunk_ln_success_per_bit(r, params.ber_at_threshold, params.error_model));
            lock.ln_success += bits * per_bit;
        }
    }

    /// The first energy of `frame` (sent at `rate_kbps`) arrives at
    /// `power_mw`. `transmitting`: the node is sending (half duplex).
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn signal_start(
        &mut self,
        slots: &mut SignalSlots,
        now: Instant,
        frame: FrameId,
        rate_kbps: u32,
        power_mw: f64,
        transmitting: bool,
        params: &RxParams,
    ) -> ArrivalFate {
        self.close_chunk(now, params);
        self.push_signal(slots, Arrival { frame, power_mw });
        self.energy_mw += power_mw;
        if transmitting {
            ArrivalFate::Busy
        } else if let Some(lock) = &mut self.lock {
            lock.interference_mw += power_mw;
            ArrivalFate::Busy
        } else if power_mw >= params.rx_sensitivity_mw {
            // Preamble lock-on: the PHY follows the first decodable frame;
            // later frames, however strong, are interference.
            self.lock = Some(Lock {
                frame,
                rate_kbps,
                threshold_linear: params.rate(rate_kbps).threshold_linear,
                power_mw,
                interference_mw: (self.energy_mw - power_mw).max(0.0),
                since: now,
                min_sinr: f64::INFINITY,
                ln_success: 0.0,
            });
            // The reception's end draws from this stream, out of line and
            // by then long out of cache in a large network (issue 28: that
            // read was ~4% of a 6400-node grid's run); asked for now, it is
            // fetched while the frame is on the air. In a small one it is
            // in cache already, and the asking cost ~1%.
            if params.prefetch_streams {
                meshbed_core::hint::prefetch_read(&*self.rng, std::mem::size_of::<StreamRng>());
            }
            ArrivalFate::Locked
        } else {
            ArrivalFate::BelowSensitivity
        }
    }

    /// The last energy of `frame` leaves. Returns the reception decision
    /// (`Some(true)`: received) if the PHY was locked onto it.
    #[inline]
    pub fn signal_end(
        &mut self,
        slots: &mut SignalSlots,
        now: Instant,
        frame: FrameId,
        params: &RxParams,
    ) -> Option<bool> {
        self.close_chunk(now, params);
        self.remove_signal(slots, frame);
        // Re-sum rather than subtract, so rounding never leaves phantom energy.
        self.energy_mw = self.signal_energy_mw(slots);
        if self.lock.as_ref().is_some_and(|l| l.frame == frame) {
            let lock = self.lock.take().expect("checked");
            Some(match params.error_model {
                ErrorModel::Threshold => lock.min_sinr >= lock.threshold_linear,
                ErrorModel::Curve { .. } => {
                    let p = params.exp_memo.get(lock.ln_success, libm::exp);
                    p >= 1.0 || self.rng.gen::<f64>() < p
                }
            })
        } else {
            if let Some(lock) = &mut self.lock {
                lock.interference_mw = (self.energy_mw - lock.power_mw).max(0.0);
            }
            None
        }
    }

    /// The node starts sending: the reception in progress, if any, is lost.
    #[inline]
    pub fn abandon(&mut self) -> Option<FrameId> {
        self.lock.take().map(|l| l.frame)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::propagation::dbm_to_mw;
    use meshbed_core::{stream_rng, Duration, StreamId, StreamKind};

    const RATE_KBPS: u32 = 24_000;

    /// Threshold-model parameters, the config they came from, and the
    /// receiver sensitivity in mW.
    fn threshold_params() -> (RxParams, RadioConfig, f64) {
        let config =
            RadioConfig { error_model: ErrorModel::Threshold, data_rate_kbps: RATE_KBPS, ..Default::default() };
        let resolved = config.resolve().unwrap();
        (RxParams::new(&config, &resolved), config, dbm_to_mw(resolved.rx_sensitivity_dbm))
    }

    fn receiver() -> Receiver {
        Receiver::new(stream_rng(1, StreamId::new(StreamKind::Phy, 0)))
    }

    fn at_us(us: u64) -> Instant {
        Instant::ZERO + Duration::from_micros(us)
    }

    proptest::proptest! {
        /// The signals in the slots and the spill behave as one vector:
        /// the same sequence after any pushes and removals (the last
        /// taking the removed one's place), so their energy is summed in
        /// the same order, to the bit.
        #[test]
        fn slots_and_spill_keep_a_vectors_order(ops in proptest::collection::vec((proptest::bool::ANY, 0u32..24, 1e-12f64..1e-3), 0..200)) {
            let (mut rx, mut slots) = (receiver(), SignalSlots::default());
            let mut reference: Vec<Arrival> = Vec::new();
            for (push, frame, power_mw) in ops {
                let on_air = reference.iter().position(|a| a.frame == frame);
                match (push, on_air) {
                    (true, None) => {
                        rx.push_signal(&mut slots, Arrival { frame, power_mw });
                        reference.push(Arrival { frame, power_mw });
                    }
                    (false, at) => {
                        rx.remove_signal(&mut slots, frame);
                        if let Some(at) = at {
                            reference.swap_remove(at);
                        }
                    }
                    (true, Some(_)) => {}
                }
                let inline = (rx.signals as usize).min(SIGNAL_SLOTS);
                let held: Vec<(FrameId, u64)> =
                    slots.0[..inline].iter().chain(&rx.spill).map(|a| (a.frame, a.power_mw.to_bits())).collect();
                let want: Vec<(FrameId, u64)> = reference.iter().map(|a| (a.frame, a.power_mw.to_bits())).collect();
                proptest::prop_assert_eq!(held, want);
                let sum: f64 = reference.iter().map(|a| a.power_mw).sum();
                proptest::prop_assert_eq!(rx.signal_energy_mw(&slots).to_bits(), sum.to_bits());
            }
        }
    }

    #[test]
    fn locks_onto_the_first_decodable_frame_and_decodes_it_alone() {
        let (p, _, sens_mw) = threshold_params();
        let (mut rx, mut slots) = (receiver(), SignalSlots::default());
        assert_eq!(
            rx.signal_start(&mut slots, at_us(0), 1, RATE_KBPS, sens_mw * 0.5, false, &p),
            ArrivalFate::BelowSensitivity
        );
        assert!(!rx.is_locked());
        assert_eq!(rx.signal_end(&mut slots, at_us(10), 1, &p), None);
        let strong_mw = sens_mw * 1e4;
        assert_eq!(rx.signal_start(&mut slots, at_us(20), 2, RATE_KBPS, strong_mw, false, &p), ArrivalFate::Locked);
        assert!(rx.is_locked() && rx.cca_busy(&p));
        assert_eq!(rx.signal_end(&mut slots, at_us(100), 2, &p), Some(true));
        assert!(!rx.cca_busy(&p), "no phantom energy once every signal has ended");
    }

    #[test]
    fn a_later_stronger_frame_is_interference_that_spoils_the_locked_one() {
        let (p, config, sens_mw) = threshold_params();
        let thr = libm::pow(10.0, config.sinr_threshold_for(RATE_KBPS) / 10.0);
        let (mut rx, mut slots) = (receiver(), SignalSlots::default());
        let first_mw = sens_mw * 1e3;
        assert_eq!(rx.signal_start(&mut slots, at_us(0), 1, RATE_KBPS, first_mw, false, &p), ArrivalFate::Locked);
        // Just strong enough to push the SINR below the threshold.
        let second_mw = first_mw / thr * 1.5;
        assert_eq!(rx.signal_start(&mut slots, at_us(50), 2, RATE_KBPS, second_mw, false, &p), ArrivalFate::Busy);
        assert_eq!(rx.signal_end(&mut slots, at_us(60), 2, &p), None, "not the locked frame");
        assert_eq!(rx.signal_end(&mut slots, at_us(100), 1, &p), Some(false));
        // The same overlap, a little weaker, leaves the SINR above the threshold.
        let (mut rx, mut slots) = (receiver(), SignalSlots::default());
        rx.signal_start(&mut slots, at_us(0), 1, RATE_KBPS, first_mw, false, &p);
        rx.signal_start(&mut slots, at_us(50), 2, RATE_KBPS, first_mw / thr * 0.5, false, &p);
        rx.signal_end(&mut slots, at_us(60), 2, &p);
        assert_eq!(rx.signal_end(&mut slots, at_us(100), 1, &p), Some(true));
    }

    /// The linear form of the curve is the dB form: within 1e-12 relative
    /// for SINRs 30 dB below to 40 dB above the threshold, at the default
    /// slope and another.
    #[test]
    fn the_curve_in_the_linear_domain_is_the_curve_in_db() {
        let thr_db = 10.0;
        let thr = libm::pow(10.0, thr_db / 10.0);
        for db_per_decade in [1.0, 2.5] {
            for k in -300..=400 {
                let sinr_db = thr_db + k as f64 / 10.0;
                let sinr = libm::pow(10.0, sinr_db / 10.0);
                let want = libm::pow(10.0, -(sinr_db - thr_db) / db_per_decade);
                let got = ratio_power(sinr / thr, db_per_decade);
                assert!(((got - want) / want).abs() < 1e-12, "{sinr_db} dB, {db_per_decade}: {got} vs {want}");
            }
        }
    }

    #[test]
    fn sending_makes_every_arrival_interference_and_abandons_the_lock() {
        let (p, _, sens_mw) = threshold_params();
        let (mut rx, mut slots) = (receiver(), SignalSlots::default());
        assert_eq!(rx.signal_start(&mut slots, at_us(0), 1, RATE_KBPS, sens_mw * 10.0, true, &p), ArrivalFate::Busy);
        assert!(!rx.is_locked());
        assert_eq!(rx.signal_start(&mut slots, at_us(5), 2, RATE_KBPS, sens_mw * 10.0, false, &p), ArrivalFate::Locked);
        assert_eq!(rx.abandon(), Some(2));
        assert_eq!(rx.signal_end(&mut slots, at_us(50), 2, &p), None, "an abandoned frame gets no decision");
    }

    /// A chunk's `ln(1 − BER)` per bit is the curve in dB (within 1e-12
    /// relative, BER capped at ½) from 30 dB below the threshold to 40 dB
    /// above it, at the default slope and another; the threshold model has
    /// none.
    #[test]
    fn a_chunks_ln_success_per_bit_is_the_curve_in_db() {
        let ber_thr = 1.0 - libm::pow(0.9, 1.0 / 8000.0);
        for db_per_decade in [1.0, 2.5] {
            let model = ErrorModel::Curve { db_per_decade };
            for k in -300..=400 {
                let above_db = k as f64 / 10.0;
                let ber = (ber_thr * libm::pow(10.0, -above_db / db_per_decade)).min(0.5);
                let want = libm::log1p(-ber);
                let got = chunk_ln_success_per_bit(libm::pow(10.0, above_db / 10.0), ber_thr, model);
                assert!(((got - want) / want).abs() < 1e-12, "{above_db} dB, {db_per_decade}: {got} vs {want}");
            }
        }
        assert_eq!(chunk_ln_success_per_bit(0.5, ber_thr, ErrorModel::Threshold), 0.0);
    }

    proptest::proptest! {
        /// A memo answers what the function would, bit for bit, whatever
        /// its slots held: arguments repeat (hits), share a slot (evictions),
        /// differ in a low bit only (one slot, nearly one key), and include the slots' initial
        /// key, 0.0, and −0.0.
        #[test]
        fn a_memo_answers_what_the_function_would(
            picks in proptest::collection::vec(0usize..40, 1..400),
            pool in proptest::collection::vec(-1e-3f64..1.0, 19),
        ) {
            let mut args: Vec<f64> = pool.iter().flat_map(|&x| [x, f64::from_bits(x.to_bits() ^ 16)]).collect();
            args.extend([0.0, -0.0]);
            for f in [libm::log1p as fn(f64) -> f64, libm::exp] {
                let memo = Memo::new(f);
                for &i in &picks {
                    let x = args[i];
                    proptest::prop_assert_eq!(memo.get(x, f).to_bits(), f(x).to_bits(), "argument {}", x);
                }
            }
        }
    }
}
