//! The retransmission timeout estimator of RFC 6298.
//!
//! All arithmetic is in integer nanoseconds so that the simulator, the
//! emulator and the socket runtime compute bit-identical timeouts from the same
//! samples. The gains α = 1/8 and β = 1/4 and K = 4 are RFC 6298 §2's.

use meshbed_core::Duration;

/// K in RFC 6298 (2.2)/(2.3): how many RTTVARs the RTO adds to SRTT.
const K: u128 = 4;

/// SRTT, RTTVAR and the RTO derived from them (RFC 6298 §2), plus the
/// exponential backoff of §5.5 that stays in force until the next valid sample
/// (Karn's algorithm, RFC 6298 §3).
#[derive(Clone, Debug)]
pub struct RttEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
    rto: Duration,
    min_rto: Duration,
    max_rto: Duration,
    clock_granularity: Duration,
}

impl RttEstimator {
    /// RFC 6298 §2.1: before the first sample, RTO is the initial value.
    pub fn new(initial_rto: Duration, min_rto: Duration, max_rto: Duration, clock_granularity: Duration) -> Self {
        let max_rto = max_rto.max(min_rto);
        RttEstimator {
            srtt: None,
            rttvar: Duration::ZERO,
            rto: initial_rto.max(min_rto).min(max_rto),
            min_rto,
            max_rto,
            clock_granularity,
        }
    }

    /// Feeds one RTT measurement `r` taken from a segment that was sent only
    /// once (the caller enforces Karn's rule). Recomputes the RTO, which also
    /// discards any backoff (RFC 6298 §5.7 keeps the backed-off value only
    /// until a valid sample arrives).
    pub fn on_sample(&mut self, r: Duration) {
        let r_ns = r.as_nanos() as u128;
        let (srtt_ns, rttvar_ns) = match self.srtt {
            // (2.2): SRTT <- R, RTTVAR <- R/2.
            None => (r_ns, r_ns / 2),
            // (2.3): RTTVAR first, from the *old* SRTT, then SRTT.
            Some(srtt) => {
                let srtt_ns = srtt.as_nanos() as u128;
                let rttvar_ns = self.rttvar.as_nanos() as u128;
                let err_ns = srtt_ns.abs_diff(r_ns);
                ((7 * srtt_ns + r_ns) / 8, (3 * rttvar_ns + err_ns) / 4)
            }
        };
        let srtt = Duration::from_nanos(clamp_u64(srtt_ns));
        self.rttvar = Duration::from_nanos(clamp_u64(rttvar_ns));
        self.srtt = Some(srtt);
        // RTO <- SRTT + max(G, K*RTTVAR), then (2.4) the floor and (2.5) the cap.
        let var_term = (K * rttvar_ns).max(self.clock_granularity.as_nanos() as u128);
        let rto = Duration::from_nanos(clamp_u64(srtt_ns + var_term));
        self.rto = rto.max(self.min_rto).min(self.max_rto);
    }

    /// RFC 6298 §5.5: the timer expired, double the RTO (up to the maximum).
    pub fn back_off(&mut self) {
        self.rto = (self.rto * 2).min(self.max_rto);
    }

    pub fn rto(&self) -> Duration {
        self.rto
    }

    /// The smoothed RTT, `None` before the first valid sample.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }
}

fn clamp_u64(x: u128) -> u64 {
    x.min(u64::MAX as u128) as u64
}
