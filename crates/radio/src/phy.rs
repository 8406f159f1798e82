//! 802.11a/b/g PHY parameters and frame airtime.
//!
//! The testbeds fixed the data rate per node (seed 001 §4.1, rate control
//! "minstrel" turned off), so by default a node has one data rate (with
//! `rate_control` on it is the highest, see [`crate::rate_control`]); control responses
//! (ACK, CTS) go at the highest basic rate not above the rate of the frame
//! they answer (IEEE 802.11-2016 §10.6.6.5), and RTS at the basic rate below
//! the data rate by the same rule.

use meshbed_core::Duration;
use serde::{Deserialize, Serialize};

/// The PHY standard, which fixes timings and the set of rates.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Standard {
    /// OFDM at 5 GHz, 6–54 Mbit/s.
    #[serde(rename = "802.11a")]
    A,
    /// DSSS/CCK at 2.4 GHz, 1–11 Mbit/s, long preamble.
    #[serde(rename = "802.11b")]
    B,
    /// ERP-OFDM at 2.4 GHz, 6–54 Mbit/s, short slot, 6 µs signal extension.
    /// (DSSS rates in a g network are modelled by choosing 802.11b.)
    #[serde(rename = "802.11g")]
    G,
}

/// MAC and PHY timing of a standard (IEEE 802.11-2016 Tables 17-21, 16-4, 18-5).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Timing {
    pub slot: Duration,
    pub sifs: Duration,
    pub cw_min: u32,
    pub cw_max: u32,
    /// PLCP preamble + header (SIGNAL field): the time before the first data bit.
    pub preamble_header: Duration,
    /// Silence appended to every ERP-OFDM frame (802.11g only).
    pub signal_extension: Duration,
}

impl Timing {
    pub fn difs(&self) -> Duration {
        self.sifs + self.slot * 2
    }
}

/// Bytes of the MAC framing around an MSDU in a data frame: 24-byte header,
/// 8-byte LLC/SNAP, 4-byte FCS.
pub const DATA_OVERHEAD_BYTES: u32 = 24 + 8 + 4;
pub const ACK_BYTES: u32 = 14;
pub const CTS_BYTES: u32 = 14;
pub const RTS_BYTES: u32 = 20;

impl Standard {
    pub fn name(self) -> &'static str {
        match self {
            Standard::A => "802.11a",
            Standard::B => "802.11b",
            Standard::G => "802.11g",
        }
    }

    pub fn timing(self) -> Timing {
        match self {
            Standard::A => Timing {
                slot: Duration::from_micros(9),
                sifs: Duration::from_micros(16),
                cw_min: 15,
                cw_max: 1023,
                preamble_header: Duration::from_micros(20),
                signal_extension: Duration::ZERO,
            },
            Standard::B => Timing {
                slot: Duration::from_micros(20),
                sifs: Duration::from_micros(10),
                cw_min: 31,
                cw_max: 1023,
                preamble_header: Duration::from_micros(192),
                signal_extension: Duration::ZERO,
            },
            Standard::G => Timing {
                slot: Duration::from_micros(9),
                sifs: Duration::from_micros(10),
                cw_min: 15,
                cw_max: 1023,
                preamble_header: Duration::from_micros(20),
                signal_extension: Duration::from_micros(6),
            },
        }
    }

    /// Every rate the standard defines, in kbit/s, ascending.
    pub fn rates_kbps(self) -> &'static [u32] {
        match self {
            Standard::A | Standard::G => &[6_000, 9_000, 12_000, 18_000, 24_000, 36_000, 48_000, 54_000],
            Standard::B => &[1_000, 2_000, 5_500, 11_000],
        }
    }

    /// The mandatory rates, used as the default basic rate set.
    pub fn default_basic_rates_kbps(self) -> &'static [u32] {
        match self {
            Standard::A | Standard::G => &[6_000, 12_000, 24_000],
            Standard::B => &[1_000, 2_000],
        }
    }

    /// Centre frequency used by the propagation models (channel 36 / 1).
    pub fn frequency_hz(self) -> f64 {
        match self {
            Standard::A => 5.18e9,
            Standard::B | Standard::G => 2.412e9,
        }
    }

    /// Channel bandwidth for the thermal noise floor.
    pub fn bandwidth_hz(self) -> f64 {
        match self {
            Standard::A | Standard::G => 20e6,
            Standard::B => 22e6,
        }
    }

    /// Default SINR (dB) at which a 1000-byte frame is lost 10% of the time.
    /// The steps between rates follow the minimum receiver sensitivities of
    /// IEEE 802.11-2016 Table 17-18 (OFDM: −82, −81, −79, −77, −74, −70, −66,
    /// −65 dBm), anchored at 5 dB for BPSK ½; DSSS/CCK steps follow the
    /// usual 3/5/7/10 dB figures. See docs/PROTOCOLS.md.
    pub fn default_sinr_threshold_db(self, rate_kbps: u32) -> Option<f64> {
        let t = match (self, rate_kbps) {
            (Standard::A | Standard::G, 6_000) => 5.0,
            (Standard::A | Standard::G, 9_000) => 6.0,
            (Standard::A | Standard::G, 12_000) => 8.0,
            (Standard::A | Standard::G, 18_000) => 10.0,
            (Standard::A | Standard::G, 24_000) => 13.0,
            (Standard::A | Standard::G, 36_000) => 17.0,
            (Standard::A | Standard::G, 48_000) => 21.0,
            (Standard::A | Standard::G, 54_000) => 22.0,
            (Standard::B, 1_000) => 3.0,
            (Standard::B, 2_000) => 5.0,
            (Standard::B, 5_500) => 7.0,
            (Standard::B, 11_000) => 10.0,
            _ => return None,
        };
        Some(t)
    }

    /// Airtime of a PPDU carrying `bytes` of MPDU at `rate_kbps`.
    pub fn frame_duration(self, bytes: u32, rate_kbps: u32) -> Duration {
        let t = self.timing();
        match self {
            Standard::A | Standard::G => {
                // 16 service bits + payload + 6 tail bits, in 4 µs symbols of
                // N_DBPS data bits (N_DBPS = rate in Mbit/s × 4).
                let ndbps = (rate_kbps / 1000) * 4;
                let bits = 16 + 8 * bytes + 6;
                let symbols = bits.div_ceil(ndbps);
                t.preamble_header + Duration::from_micros(4 * symbols as u64) + t.signal_extension
            }
            Standard::B => {
                // Long preamble, then the PSDU at the data rate, rounded up to
                // a whole microsecond (IEEE 802.11-2016 §16.3.4: LENGTH field).
                let ns = (8 * bytes as u64 * 1_000_000).div_ceil(rate_kbps as u64);
                t.preamble_header + Duration::from_micros(ns.div_ceil(1000))
            }
        }
    }
}

/// The rate for a control response to a frame sent at `rate_kbps`: the
/// highest basic rate not above it, or the lowest basic rate.
pub fn control_rate_kbps(basic_rates_kbps: &[u32], rate_kbps: u32) -> u32 {
    basic_rates_kbps
        .iter()
        .copied()
        .filter(|&r| r <= rate_kbps)
        .max()
        .or_else(|| basic_rates_kbps.iter().copied().min())
        .unwrap_or(rate_kbps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ofdm_durations_match_the_standard() {
        // 1536-byte MPDU (1500-byte IP packet) at 6 Mbit/s:
        // (16 + 12288 + 6) / 24 = 512.9 → 513 symbols → 2052 + 20 µs.
        assert_eq!(Standard::A.frame_duration(1536, 6_000), Duration::from_micros(2072));
        // ACK (14 bytes) at 24 Mbit/s: 134 bits / 96 → 2 symbols → 28 µs.
        assert_eq!(Standard::A.frame_duration(ACK_BYTES, 24_000), Duration::from_micros(28));
        // ACK at 6 Mbit/s: 134 / 24 → 6 symbols → 44 µs.
        assert_eq!(Standard::A.frame_duration(ACK_BYTES, 6_000), Duration::from_micros(44));
        // 802.11g adds the 6 µs signal extension.
        assert_eq!(Standard::G.frame_duration(ACK_BYTES, 6_000), Duration::from_micros(50));
    }

    #[test]
    fn dsss_durations_match_the_standard() {
        // 1536 bytes at 11 Mbit/s: 12288 / 11 = 1117.09 → 1118 µs + 192 µs.
        assert_eq!(Standard::B.frame_duration(1536, 11_000), Duration::from_micros(1310));
        // ACK at 1 Mbit/s: 112 µs + 192 µs.
        assert_eq!(Standard::B.frame_duration(ACK_BYTES, 1_000), Duration::from_micros(304));
    }

    #[test]
    fn difs_is_sifs_plus_two_slots() {
        assert_eq!(Standard::A.timing().difs(), Duration::from_micros(34));
        assert_eq!(Standard::B.timing().difs(), Duration::from_micros(50));
        assert_eq!(Standard::G.timing().difs(), Duration::from_micros(28));
    }

    #[test]
    fn control_rate_is_highest_basic_rate_not_above_data_rate() {
        let basic = Standard::A.default_basic_rates_kbps();
        assert_eq!(control_rate_kbps(basic, 54_000), 24_000);
        assert_eq!(control_rate_kbps(basic, 18_000), 12_000);
        assert_eq!(control_rate_kbps(basic, 6_000), 6_000);
        assert_eq!(control_rate_kbps(&[12_000], 6_000), 12_000);
    }
}
