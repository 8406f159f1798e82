//! Radio and MAC configuration, as written in a scenario's `[radio]` table.
//!
//! Ranges are what users think in: `tx_range_m` and `cs_range_m` (the classic
//! 250 m / 550 m) are turned into a receiver sensitivity and a carrier-sense
//! threshold through the chosen propagation model at the configured transmit
//! power. Thresholds may also be given directly in dBm.

use crate::phy::Standard;
use crate::propagation::{Fading, Propagation};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use thiserror::Error;

/// How a frame's fate is decided from the SINR it saw.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ErrorModel {
    /// Lost if the SINR ever fell below the rate's threshold while the frame
    /// was on the air (ns-2 style; deterministic).
    Threshold,
    /// Per-bit error rate falling `db_per_decade` dB per decade above the
    /// rate's threshold, where the threshold is the SINR giving 10% loss of a
    /// 1000-byte frame; each interval of constant interference ("chunk", as
    /// in ns-3's InterferenceHelper) contributes its own success probability.
    Curve {
        #[serde(default = "default_db_per_decade")]
        db_per_decade: f64,
    },
}

fn default_db_per_decade() -> f64 {
    1.0
}

impl Default for ErrorModel {
    fn default() -> Self {
        ErrorModel::Curve { db_per_decade: default_db_per_decade() }
    }
}

/// Batched completion reporting (seed 001 §3.1, appendix A.6): the ath5k
/// driver raised a TX interrupt only at the end of the queue (TXEOL) or for a
/// group of descriptors (TXDESC), so under load only the last frame of a
/// batch got a completion time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchedCompletion {
    /// Frames per TXDESC interrupt when the queue does not drain first.
    #[serde(default = "default_batch_frames")]
    pub max_frames: u32,
}

fn default_batch_frames() -> u32 {
    4
}

/// DCF parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MacConfig {
    /// Drop-tail interface queue length in packets.
    pub queue_packets: u32,
    /// Retransmissions (not attempts) allowed for frames up to the RTS
    /// threshold and for RTS frames; 0 means one attempt (the thesis testbed,
    /// seed 001 §4.2).
    pub short_retry_limit: u32,
    /// Retransmissions allowed for frames above the RTS threshold.
    pub long_retry_limit: u32,
    /// MPDUs longer than this many bytes are preceded by RTS/CTS; `None` = off.
    pub rts_threshold_bytes: Option<u32>,
    /// Override the standard's CWmin/CWmax.
    pub cw_min: Option<u32>,
    pub cw_max: Option<u32>,
    /// Model the driver's batched completion reporting (off by default).
    pub batched_completion: Option<BatchedCompletion>,
}

impl Default for MacConfig {
    fn default() -> Self {
        MacConfig {
            queue_packets: 50,
            // dot11ShortRetryLimit = 7 and dot11LongRetryLimit = 4 count
            // attempts; we count retransmissions.
            short_retry_limit: 6,
            long_retry_limit: 3,
            rts_threshold_bytes: None,
            cw_min: None,
            cw_max: None,
            batched_completion: None,
        }
    }
}

/// Everything about the radio that is the same for all nodes unless a node
/// overrides it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RadioConfig {
    pub standard: Standard,
    /// Data rate of every node, kbit/s (rate control off, seed 001 §4.1).
    pub data_rate_kbps: u32,
    /// Basic rate set; defaults to the standard's mandatory rates.
    pub basic_rates_kbps: Option<Vec<u32>>,
    pub tx_power_dbm: f64,
    pub propagation: Propagation,
    /// Distance at which a frame is just decodable: sets the receiver
    /// sensitivity (preamble lock-on threshold) at `tx_power_dbm`.
    pub tx_range_m: Option<f64>,
    /// Distance up to which a transmission is sensed: sets the energy
    /// carrier-sense threshold at `tx_power_dbm`.
    pub cs_range_m: Option<f64>,
    /// Direct thresholds; used when the matching range is not given.
    pub rx_sensitivity_dbm: Option<f64>,
    pub cs_threshold_dbm: Option<f64>,
    pub noise_figure_db: f64,
    /// Standard deviation of static per-link log-normal shadowing (0 = off).
    pub shadowing_sigma_db: f64,
    pub fading: Fading,
    pub error_model: ErrorModel,
    /// Per-rate SINR threshold overrides, keyed by rate in kbit/s.
    pub sinr_threshold_db: BTreeMap<String, f64>,
    /// Signals weaker than this (mean, before fading) are not modelled at all.
    pub interference_floor_dbm: f64,
    pub mac: MacConfig,
}

impl Default for RadioConfig {
    fn default() -> Self {
        RadioConfig {
            standard: Standard::A,
            data_rate_kbps: 24_000,
            basic_rates_kbps: None,
            tx_power_dbm: 20.0,
            propagation: Propagation::default(),
            tx_range_m: Some(250.0),
            cs_range_m: Some(550.0),
            rx_sensitivity_dbm: None,
            cs_threshold_dbm: None,
            noise_figure_db: 7.0,
            shadowing_sigma_db: 0.0,
            fading: Fading::None,
            error_model: ErrorModel::default(),
            sinr_threshold_db: BTreeMap::new(),
            interference_floor_dbm: -102.0,
            mac: MacConfig::default(),
        }
    }
}

/// A configuration value that makes no sense.
#[derive(Clone, Debug, PartialEq, Error)]
#[error("radio.{key} = {value}: {expected}")]
pub struct ConfigError {
    pub key: String,
    pub value: String,
    pub expected: String,
}

fn err(key: &str, value: impl ToString, expected: impl ToString) -> ConfigError {
    ConfigError { key: key.into(), value: value.to_string(), expected: expected.to_string() }
}

/// Derived, validated radio parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved {
    pub rx_sensitivity_dbm: f64,
    pub cs_threshold_dbm: f64,
    pub noise_dbm: f64,
    pub basic_rates_kbps: Vec<u32>,
    pub cw_min: u32,
    pub cw_max: u32,
}

impl RadioConfig {
    /// Checks every value and derives thresholds; errors name the key.
    pub fn resolve(&self) -> Result<Resolved, ConfigError> {
        let std = self.standard;
        self.check_rate("data_rate_kbps", self.data_rate_kbps)?;
        let basic = match &self.basic_rates_kbps {
            Some(v) if v.is_empty() => return Err(err("basic_rates_kbps", "[]", "at least one rate")),
            Some(v) => {
                for &r in v {
                    self.check_rate("basic_rates_kbps", r)?;
                }
                v.clone()
            }
            None => std.default_basic_rates_kbps().to_vec(),
        };
        if !self.tx_power_dbm.is_finite() || !(-30.0..=40.0).contains(&self.tx_power_dbm) {
            return Err(err("tx_power_dbm", self.tx_power_dbm, "a power between -30 and 40 dBm"));
        }
        match self.propagation {
            Propagation::TwoRayGround { antenna_height_m } if !(antenna_height_m > 0.0) => {
                return Err(err("propagation.antenna_height_m", antenna_height_m, "a positive height in metres"))
            }
            Propagation::LogDistance { exponent, reference_distance_m, .. } => {
                if !(exponent > 0.0 && exponent < 10.0) {
                    return Err(err("propagation.exponent", exponent, "a path-loss exponent between 0 and 10"));
                }
                if !(reference_distance_m > 0.0) {
                    return Err(err("propagation.reference_distance_m", reference_distance_m, "a positive distance"));
                }
            }
            _ => {}
        }
        let f = std.frequency_hz();
        let threshold_at = |key: &str, range: Option<f64>, direct: Option<f64>| -> Result<f64, ConfigError> {
            match (range, direct) {
                (Some(r), _) if !(r > 0.0 && r.is_finite()) => Err(err(key, r, "a positive distance in metres")),
                (Some(r), _) => Ok(self.tx_power_dbm - self.propagation.loss_db(r, f)),
                (None, Some(d)) if d.is_finite() => Ok(d),
                (None, Some(d)) => Err(err(key, d, "a finite power in dBm")),
                (None, None) => Err(err(key, "(missing)", "a range in metres or a threshold in dBm")),
            }
        };
        let rx = threshold_at("tx_range_m", self.tx_range_m, self.rx_sensitivity_dbm)?;
        let cs = threshold_at("cs_range_m", self.cs_range_m, self.cs_threshold_dbm)?;
        if cs > rx {
            return Err(err(
                "cs_range_m",
                format!("{:?} (threshold {cs:.1} dBm)", self.cs_range_m),
                format!("a carrier-sense range at least the transmission range (sensitivity {rx:.1} dBm)"),
            ));
        }
        if !(0.0..=30.0).contains(&self.noise_figure_db) {
            return Err(err("noise_figure_db", self.noise_figure_db, "a noise figure between 0 and 30 dB"));
        }
        if !(0.0..=30.0).contains(&self.shadowing_sigma_db) {
            return Err(err("shadowing_sigma_db", self.shadowing_sigma_db, "a standard deviation between 0 and 30 dB"));
        }
        if let Fading::Nakagami { m } = self.fading {
            if !(m >= 0.5 && m.is_finite()) {
                return Err(err("fading.m", m, "a Nakagami shape m >= 0.5"));
            }
        }
        if let ErrorModel::Curve { db_per_decade } = self.error_model {
            if !(db_per_decade > 0.0 && db_per_decade.is_finite()) {
                return Err(err("error_model.db_per_decade", db_per_decade, "a positive number of dB"));
            }
        }
        for (k, v) in &self.sinr_threshold_db {
            let key = format!("sinr_threshold_db.{k}");
            let rate: u32 = k.parse().map_err(|_| err(&key, k, "a rate in kbit/s as the key, e.g. \"24000\""))?;
            self.check_rate(&key, rate)?;
            if !v.is_finite() {
                return Err(err(&key, v, "a finite SINR in dB"));
            }
        }
        let bw = std.bandwidth_hz();
        let noise_dbm = -174.0 + 10.0 * libm::log10(bw) + self.noise_figure_db;
        let t = std.timing();
        let cw_min = self.mac.cw_min.unwrap_or(t.cw_min);
        let cw_max = self.mac.cw_max.unwrap_or(t.cw_max);
        if cw_min == 0 || cw_min > cw_max || cw_max > 65_535 {
            return Err(err("mac.cw_min", format!("{cw_min} (cw_max {cw_max})"), "0 < cw_min <= cw_max <= 65535"));
        }
        if self.mac.queue_packets == 0 {
            return Err(err("mac.queue_packets", 0, "a queue of at least one packet"));
        }
        if let Some(b) = self.mac.batched_completion {
            if b.max_frames == 0 {
                return Err(err("mac.batched_completion.max_frames", 0, "at least one frame per interrupt"));
            }
        }
        Ok(Resolved {
            rx_sensitivity_dbm: rx,
            cs_threshold_dbm: cs,
            noise_dbm,
            basic_rates_kbps: basic,
            cw_min,
            cw_max,
        })
    }

    fn check_rate(&self, key: &str, rate: u32) -> Result<(), ConfigError> {
        let rates = self.standard.rates_kbps();
        if rates.contains(&rate) {
            Ok(())
        } else {
            Err(err(key, rate, format!("one of the {} rates {:?} (kbit/s)", self.standard.name(), rates)))
        }
    }

    /// SINR threshold for a rate: the override or the standard's default.
    pub fn sinr_threshold_for(&self, rate_kbps: u32) -> f64 {
        self.sinr_threshold_db
            .get(&rate_kbps.to_string())
            .copied()
            .or_else(|| self.standard.default_sinr_threshold_db(rate_kbps))
            .unwrap_or(10.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classic_ranges_give_ordered_thresholds() {
        let r = RadioConfig::default().resolve().unwrap();
        assert!(r.cs_threshold_dbm < r.rx_sensitivity_dbm);
        assert!((r.noise_dbm - (-93.99)).abs() < 0.01, "{}", r.noise_dbm);
    }

    #[test]
    fn bad_values_name_their_key() {
        let c = RadioConfig { data_rate_kbps: 25_000, ..Default::default() };
        let e = c.resolve().unwrap_err();
        assert_eq!(e.key, "data_rate_kbps");
        assert!(e.to_string().contains("24000"), "{e}");

        let c = RadioConfig { cs_range_m: Some(100.0), ..Default::default() };
        assert_eq!(c.resolve().unwrap_err().key, "cs_range_m");

        let mut c = RadioConfig::default();
        c.sinr_threshold_db.insert("fast".into(), 3.0);
        assert_eq!(c.resolve().unwrap_err().key, "sinr_threshold_db.fast");
    }
}
