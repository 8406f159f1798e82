//! Radio and MAC configuration, as written in a scenario's `[radio]` table.
//!
//! Ranges are what users think in: `tx_range_m` and `cs_range_m` (the classic
//! 250 m / 550 m) are turned into a receiver sensitivity and a carrier-sense
//! threshold through the chosen propagation model at the configured transmit
//! power. Thresholds may also be given directly in dBm.

use crate::phy::Standard;
use crate::propagation::{Fading, Floors, Propagation};
use crate::rate_control::RateControl;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How a frame's fate is decided from the SINR it saw.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
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
        /// How steeply the bit error rate falls above the rate's threshold,
        /// dB of SINR per decade.
        #[serde(default = "default_db_per_decade")]
        #[schemars(extend("exclusiveMinimum" = 0.0), range(max = MAX_DB_PER_DECADE))]
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchedCompletion {
    /// Frames per TXDESC interrupt when the queue does not drain first.
    #[serde(default = "default_batch_frames")]
    #[schemars(range(min = *BATCH_FRAMES.start(), max = *BATCH_FRAMES.end()))]
    pub max_frames: u32,
}

fn default_batch_frames() -> u32 {
    4
}

/// The DCF MAC's parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct MacConfig {
    /// Drop-tail interface queue length in packets.
    #[schemars(range(min = 1, max = MAX_QUEUE_PACKETS))]
    pub queue_packets: u32,
    /// Retransmissions (not attempts) allowed for frames up to the RTS
    /// threshold and for RTS frames; 0 means one attempt (the thesis testbed,
    /// seed 001 §4.2).
    #[schemars(range(max = MAX_RETRY_LIMIT))]
    pub short_retry_limit: u32,
    /// Retransmissions allowed for frames above the RTS threshold.
    #[schemars(range(max = MAX_RETRY_LIMIT))]
    pub long_retry_limit: u32,
    /// MPDUs longer than this many bytes are preceded by RTS/CTS; absent: off.
    #[schemars(range(max = MAX_RTS_THRESHOLD_BYTES))]
    pub rts_threshold_bytes: Option<u32>,
    /// The contention window's minimum, slots, instead of the standard's
    /// (0 < cw_min <= cw_max).
    #[schemars(range(min = 1, max = MAX_CW))]
    pub cw_min: Option<u32>,
    /// The contention window's maximum, slots, instead of the standard's.
    #[schemars(range(min = 1, max = MAX_CW))]
    pub cw_max: Option<u32>,
    /// Model the driver's batched completion reporting (seed 001 §3.1,
    /// appendix A.6: one TX interrupt for a group of frames); absent: off.
    pub batched_completion: Option<BatchedCompletion>,
    /// Transport feedback (ATP's feedback, TCP's pure ACKs) goes ahead of
    /// data in the interface queue, behind earlier priority packets, as
    /// routing control packets do. Off by default, as on the testbed (seed
    /// 000 §V.A.2: "we do not use a priority queue for feedback packets").
    // The MAC only sees `Payload::priority`; the host says which packets
    // are feedback.
    #[serde(skip_serializing_if = "is_false")]
    #[schemars(!skip_serializing_if)]
    pub feedback_priority: bool,
    /// How each node picks the rate of its unicast DATA frames:
    /// `"fixed"` (the configured rate), `"arf"`, `"aarf"` or
    /// `"minstrel"`; the configured rate is then the highest one used.
    #[serde(skip_serializing_if = "RateControl::is_fixed")]
    #[schemars(!skip_serializing_if)]
    pub rate_control: RateControl,
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
            feedback_priority: false,
            rate_control: RateControl::Fixed,
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Everything about the radio that is the same for all nodes unless a node
/// overrides it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RadioConfig {
    /// The PHY standard, which fixes timings and the set of rates.
    pub standard: Standard,
    /// Data rate of every node (rate control off, seed 001 §4.1), one of
    /// the standard's rates.
    #[schemars(schema_with = "rate_kbps_schema")]
    pub data_rate_kbps: u32,
    /// Basic rate set (control frames); absent: the standard's mandatory
    /// rates.
    #[schemars(schema_with = "basic_rates_schema")]
    pub basic_rates_kbps: Option<Vec<u32>>,
    /// Transmit power of every node.
    #[schemars(range(min = *TX_POWER_DBM.start(), max = *TX_POWER_DBM.end()))]
    pub tx_power_dbm: f64,
    /// The large-scale path loss model.
    pub propagation: Propagation,
    /// A building's floors (`[radio.floors] height_m, loss_db`): nodes then
    /// say their `floor`. Absent: every node on one plane.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub floors: Option<Floors>,
    /// Distance at which a frame is just decodable: sets the receiver
    /// sensitivity (preamble lock-on threshold) at `tx_power_dbm`. Give
    /// this or `rx_sensitivity_dbm`, not both; with neither, the default
    /// (ns-2's).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(default = "default_tx_range_m", extend("exclusiveMinimum" = 0.0), range(max = MAX_RANGE_M))]
    pub tx_range_m: Option<f64>,
    /// Distance up to which a transmission is sensed: sets the energy
    /// carrier-sense threshold at `tx_power_dbm`, at least as far as the
    /// transmission range. Give this or `cs_threshold_dbm`, not both; with
    /// neither, the default (ns-2's).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(default = "default_cs_range_m", extend("exclusiveMinimum" = 0.0), range(max = MAX_RANGE_M))]
    pub cs_range_m: Option<f64>,
    /// The receiver sensitivity (preamble lock-on threshold) itself,
    /// instead of `tx_range_m`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = *POWER_LEVEL_DBM.start(), max = *POWER_LEVEL_DBM.end()))]
    pub rx_sensitivity_dbm: Option<f64>,
    /// The energy carrier-sense threshold itself, instead of `cs_range_m`;
    /// at most the receiver sensitivity.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = *POWER_LEVEL_DBM.start(), max = *POWER_LEVEL_DBM.end()))]
    pub cs_threshold_dbm: Option<f64>,
    /// The receiver's noise figure, added to the thermal noise of the
    /// standard's bandwidth.
    #[schemars(range(min = *NOISE_FIGURE_DB.start(), max = *NOISE_FIGURE_DB.end()))]
    pub noise_figure_db: f64,
    /// Standard deviation of static per-link log-normal shadowing (0 = off).
    #[schemars(range(min = *SHADOWING_SIGMA_DB.start(), max = *SHADOWING_SIGMA_DB.end()))]
    pub shadowing_sigma_db: f64,
    /// Per-frame small-scale fading of the received power.
    pub fading: Fading,
    /// How a frame's fate is decided from the SINR it saw.
    pub error_model: ErrorModel,
    /// Per-rate SINR threshold overrides, dB, keyed by a rate of the
    /// standard in kbit/s (`"24000" = 12.0`); absent rates keep the
    /// standard's.
    #[schemars(schema_with = "sinr_thresholds_schema")]
    pub sinr_threshold_db: BTreeMap<String, f64>,
    /// Signals weaker than this (mean, before fading) are not modelled at all.
    #[schemars(range(min = *POWER_LEVEL_DBM.start(), max = *POWER_LEVEL_DBM.end()))]
    pub interference_floor_dbm: f64,
    /// Raise the interference floor to the carrier-sense threshold: a
    /// signal the receiver cannot sense is not modelled at all, neither as
    /// energy nor as interference, as ns-2's `WirelessPhy::sendUp` discards
    /// a signal below `CSThresh_` (the `ns2-54g` preset: seed 004 §IV's
    /// "interference range of 550m"). Carrier sense then reports busy
    /// exactly when one signal alone is at or above the threshold, as in
    /// ns-2, instead of when the sum of the signals is.
    #[serde(default)]
    pub interference_floor_at_carrier_sense: bool,
    /// The DCF MAC's parameters.
    pub mac: MacConfig,
}

/// The ranges the schema shows for a file that gives neither a range nor a
/// threshold ([`RadioConfig::resolve`] uses the constants).
fn default_tx_range_m() -> Option<f64> {
    Some(DEFAULT_TX_RANGE_M)
}
fn default_cs_range_m() -> Option<f64> {
    Some(DEFAULT_CS_RANGE_M)
}

/// `data_rate_kbps`: an integer, one of the rates of some standard (which
/// of them [`RadioConfig::resolve`] checks against `standard`).
pub fn rate_kbps_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut rates: Vec<u32> =
        [Standard::A, Standard::B, Standard::G].iter().flat_map(|s| s.rates_kbps()).copied().collect();
    rates.sort_unstable();
    rates.dedup();
    schemars::json_schema!({ "type": "integer", "enum": rates })
}

fn basic_rates_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let items = rate_kbps_schema(generator);
    schemars::json_schema!({ "type": ["array", "null"], "items": items, "minItems": 1 })
}

/// `sinr_threshold_db`: a table from rate (kbit/s, as a key) to dB.
fn sinr_thresholds_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "propertyNames": { "pattern": "^[0-9]+$" },
        // The placeholder of its keys in meshbed's key reference (docs/KEYS.md).
        "x-key": "<rate_kbps>",
        "additionalProperties": {
            "description": "The SINR threshold of the rate the key names.",
            "type": "number",
            "minimum": *SINR_THRESHOLD_DB.start(),
            "maximum": *SINR_THRESHOLD_DB.end(),
        },
    })
}

impl Default for RadioConfig {
    fn default() -> Self {
        RadioConfig {
            standard: Standard::A,
            data_rate_kbps: 24_000,
            basic_rates_kbps: None,
            tx_power_dbm: 20.0,
            propagation: Propagation::default(),
            floors: None,
            // Neither a range nor a threshold: DEFAULT_TX_RANGE_M and
            // DEFAULT_CS_RANGE_M. (A default range here would come back on
            // every file read and override a threshold the file gives.)
            tx_range_m: None,
            cs_range_m: None,
            rx_sensitivity_dbm: None,
            cs_threshold_dbm: None,
            noise_figure_db: 7.0,
            shadowing_sigma_db: 0.0,
            fading: Fading::None,
            error_model: ErrorModel::default(),
            sinr_threshold_db: BTreeMap::new(),
            interference_floor_dbm: -102.0,
            interference_floor_at_carrier_sense: false,
            mac: MacConfig::default(),
        }
    }
}

/// The transmission range when neither `tx_range_m` nor
/// `rx_sensitivity_dbm` is given: the classic 250 m of ns-2's 802.11.
pub const DEFAULT_TX_RANGE_M: f64 = 250.0;

/// The carrier-sense range when neither `cs_range_m` nor
/// `cs_threshold_dbm` is given: ns-2's 550 m.
pub const DEFAULT_CS_RANGE_M: f64 = 550.0;

/// ns-2's capture threshold `CPThresh_`, dB: a frame survives interference
/// this much weaker than it (the ns-2 presets' SINR threshold at every rate).
pub const NS2_CAPTURE_DB: f64 = 10.0;

/// The named presets a scenario can start from (`[radio] preset = "…"`).
pub const PRESETS: [&str; 2] = ["ns2", "ns2-54g"];

impl RadioConfig {
    /// ns-2's 802.11 as the ATP paper ran it (seed 002 §5.1) and as CMU's
    /// wireless extensions set it up: 802.11b DSSS at 2 Mbit/s (basic rate
    /// 1 Mbit/s), two-ray ground with 1.5 m antennas, 250 m transmission and
    /// 550 m carrier-sense ranges, RTS/CTS before every unicast data frame
    /// (ns-2's `RTSThreshold_` 0), ns-2's retry limits (7 RTS attempts, 4
    /// data attempts), a 50-packet interface queue (routing packets go
    /// first: `[routing] control_priority`, on by default), and ns-2's
    /// threshold reception with a 10 dB capture ratio instead of a BER curve.
    pub fn ns2() -> RadioConfig {
        RadioConfig {
            standard: Standard::B,
            data_rate_kbps: 2_000,
            basic_rates_kbps: Some(vec![1_000]),
            propagation: Propagation::TwoRayGround { antenna_height_m: 1.5 },
            tx_range_m: Some(250.0),
            cs_range_m: Some(550.0),
            error_model: ErrorModel::Threshold,
            sinr_threshold_db: [("1000".to_string(), NS2_CAPTURE_DB), ("2000".to_string(), NS2_CAPTURE_DB)]
                .into_iter()
                .collect(),
            mac: MacConfig {
                queue_packets: 50,
                short_retry_limit: 6,
                long_retry_limit: 3,
                rts_threshold_bytes: Some(0),
                ..MacConfig::default()
            },
            ..RadioConfig::default()
        }
    }

    /// ns-2's 802.11 as seed 004 §IV ran it: "ns-2, 802.11g at 54 Mbit/s,
    /// 250 m transmission, 550 m carrier-sense and interference range,
    /// RTS/CTS off". Everything else is [`RadioConfig::ns2`]'s (two-ray
    /// ground, threshold reception, retry limits, 50-packet queue); the
    /// basic rates are 802.11g's mandatory OFDM rates (the paper does not
    /// give them), so ACKs of 54 Mbit/s frames go at 24 Mbit/s. ns-2's
    /// threshold model decodes any frame above `RXThresh_` (the 250 m range)
    /// whose power is `CPThresh_` (10 dB) above the interference, whatever
    /// the rate: every OFDM rate gets that 10 dB, so the 250 m range holds
    /// at 54 Mbit/s (with two-ray ground and 1.5 m antennas a frame from
    /// 250 m is about 25 dB above thermal noise, above 802.11g's own
    /// 22 dB for 54 Mbit/s too). The paper's interference range is its
    /// carrier-sense range, as in ns-2, which discards a signal below
    /// `CSThresh_`: the interference floor is the carrier-sense threshold.
    pub fn ns2_54g() -> RadioConfig {
        let ns2 = RadioConfig::ns2();
        RadioConfig {
            // "a carrier sensing range as well as an interference range of
            // 550m" (seed 004 §IV): nothing beyond carrier sense interferes.
            interference_floor_at_carrier_sense: true,
            standard: Standard::G,
            data_rate_kbps: 54_000,
            basic_rates_kbps: None,
            sinr_threshold_db: Standard::G.rates_kbps().iter().map(|r| (r.to_string(), NS2_CAPTURE_DB)).collect(),
            mac: MacConfig { rts_threshold_bytes: None, ..ns2.mac.clone() },
            ..ns2
        }
    }

    /// The preset called `name` (one of [`PRESETS`]).
    pub fn preset(name: &str) -> Option<RadioConfig> {
        match name {
            "ns2" => Some(RadioConfig::ns2()),
            "ns2-54g" => Some(RadioConfig::ns2_54g()),
            _ => None,
        }
    }
}

/// A configuration value that makes no sense: the one error value, its key
/// under `radio` (a node's own radio setting under `topology.nodes[i]`).
pub type ConfigError = meshbed_core::InvalidValue;

fn err(key: &str, value: impl ToString, expected: impl ToString) -> ConfigError {
    ConfigError::new(key, value, expected.to_string()).under("radio")
}

/// `value` must lie in `range` (docs/PROTOCOLS.md, "Scenario limits").
fn within<T: meshbed_core::limits::Bounded>(
    key: &str,
    value: T,
    range: std::ops::RangeInclusive<T>,
    what: &str,
) -> Result<(), ConfigError> {
    meshbed_core::limits::within(value, range, what).map_err(|expected| err(key, value.text(), expected))
}

/// Transmit power, dBm: from a low-power sensor radio to the highest EIRP
/// any regulator allows (36 dBm) with margin.
pub const TX_POWER_DBM: std::ops::RangeInclusive<f64> = -30.0..=40.0;
/// `tx_range_m`, `cs_range_m`: 100 km is beyond any 802.11 link; the bound
/// only keeps the derived thresholds finite.
pub const MAX_RANGE_M: f64 = 100_000.0;
/// `rx_sensitivity_dbm`, `cs_threshold_dbm`, `interference_floor_dbm`: far
/// below thermal noise (about -101 dBm for 20 MHz) up to a strong signal.
pub const POWER_LEVEL_DBM: std::ops::RangeInclusive<f64> = -200.0..=40.0;
/// `mac.queue_packets`: 10 000 packets of 1500 bytes are seconds of
/// queueing at 802.11a/g rates (Linux defaults to 1000); a saturated source
/// fills its queue at once, so the bound is also the memory it can take.
pub const MAX_QUEUE_PACKETS: u32 = 10_000;
/// Retry limits count retransmissions; dot11ShortRetryLimit and
/// dot11LongRetryLimit count attempts, 1 to 255 (802.11-2016 Annex C).
pub const MAX_RETRY_LIMIT: u32 = 254;
/// `mac.rts_threshold_bytes`: dot11RTSThreshold's range (802.11-2016 Annex C).
pub const MAX_RTS_THRESHOLD_BYTES: u32 = 65_535;
/// `mac.cw_min`, `mac.cw_max`: a 16-bit contention window.
pub const MAX_CW: u32 = 65_535;
/// `mac.batched_completion.max_frames`: one frame (every frame timed) to a
/// thousand, past any driver's descriptor ring.
pub const BATCH_FRAMES: std::ops::RangeInclusive<u32> = 1..=1000;
/// `noise_figure_db`: a perfect receiver to a very poor one.
pub const NOISE_FIGURE_DB: std::ops::RangeInclusive<f64> = 0.0..=30.0;
/// `shadowing_sigma_db`: off to far beyond measured indoor values (~12 dB).
pub const SHADOWING_SIGMA_DB: std::ops::RangeInclusive<f64> = 0.0..=30.0;
/// `fading.m`: Nakagami's shape, 0.5 (its smallest) up to nearly no fading.
pub const NAKAGAMI_M: std::ops::RangeInclusive<f64> = 0.5..=1000.0;
/// `error_model.db_per_decade`: above 0, at most this.
pub const MAX_DB_PER_DECADE: f64 = 100.0;
/// `sinr_threshold_db` values, dB.
pub const SINR_THRESHOLD_DB: std::ops::RangeInclusive<f64> = -20.0..=60.0;
/// `propagation.antenna_height_m` and `propagation.reference_distance_m`:
/// above 0, at most this.
pub const MAX_PROPAGATION_HEIGHT_OR_DISTANCE_M: f64 = 1000.0;
/// `propagation.exponent`: strictly between 0 and this.
pub const MAX_PATH_LOSS_EXPONENT: f64 = 10.0;
/// `propagation.reference_loss_db`.
pub const REFERENCE_LOSS_DB: std::ops::RangeInclusive<f64> = 0.0..=200.0;
/// `floors.height_m`: above 0 (two floors at one height would be one
/// floor), at most this.
pub const MAX_FLOOR_HEIGHT_M: f64 = 100.0;
/// `floors.loss_db`, per floor slab.
pub const FLOOR_LOSS_DB: std::ops::RangeInclusive<f64> = 0.0..=100.0;

/// Checks a transmit power (the radio's or a node's); `key` names it.
pub fn check_tx_power_dbm(key: &str, dbm: f64) -> Result<(), ConfigError> {
    within(key, dbm, TX_POWER_DBM, "a transmit power in dBm")
}

/// Derived, validated radio parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved {
    pub rx_sensitivity_dbm: f64,
    pub cs_threshold_dbm: f64,
    pub noise_dbm: f64,
    /// The floor below which a signal is not modelled: `interference_floor_dbm`,
    /// raised to the carrier-sense threshold with
    /// `interference_floor_at_carrier_sense`.
    pub interference_floor_dbm: f64,
    pub basic_rates_kbps: Vec<u32>,
    pub cw_min: u32,
    pub cw_max: u32,
}

/// A receive or carrier-sense threshold and the key it came from.
struct Threshold {
    key: &'static str,
    value: f64,
    dbm: f64,
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
        check_tx_power_dbm("tx_power_dbm", self.tx_power_dbm)?;
        match self.propagation {
            Propagation::TwoRayGround { antenna_height_m } => {
                if !(antenna_height_m > 0.0 && antenna_height_m <= MAX_PROPAGATION_HEIGHT_OR_DISTANCE_M) {
                    return Err(err(
                        "propagation.antenna_height_m",
                        antenna_height_m,
                        format!("a positive height in metres, at most {MAX_PROPAGATION_HEIGHT_OR_DISTANCE_M}"),
                    ));
                }
            }
            Propagation::LogDistance { exponent, reference_distance_m, reference_loss_db } => {
                if !(exponent > 0.0 && exponent < MAX_PATH_LOSS_EXPONENT) {
                    return Err(err(
                        "propagation.exponent",
                        exponent,
                        format!("a path-loss exponent between 0 and {MAX_PATH_LOSS_EXPONENT}"),
                    ));
                }
                if !(reference_distance_m > 0.0 && reference_distance_m <= MAX_PROPAGATION_HEIGHT_OR_DISTANCE_M) {
                    return Err(err(
                        "propagation.reference_distance_m",
                        reference_distance_m,
                        format!("a positive distance in metres, at most {MAX_PROPAGATION_HEIGHT_OR_DISTANCE_M}"),
                    ));
                }
                if let Some(l) = reference_loss_db {
                    within("propagation.reference_loss_db", l, REFERENCE_LOSS_DB, "a path loss in dB")?;
                }
            }
            Propagation::Friis => {}
        }
        if let Some(f) = self.floors {
            // Above 0: two floors at one height would be one floor.
            if !(f.height_m > 0.0 && f.height_m <= MAX_FLOOR_HEIGHT_M) {
                return Err(err(
                    "floors.height_m",
                    f.height_m,
                    format!("a positive floor-to-floor height in metres, at most {MAX_FLOOR_HEIGHT_M}"),
                ));
            }
            within("floors.loss_db", f.loss_db, FLOOR_LOSS_DB, "a loss per floor slab in dB")?;
        }
        let f = std.frequency_hz();
        // Each threshold comes from a range (through the propagation model)
        // or is given directly; `Threshold::key` names whichever was used.
        let threshold_at = |range_key: &'static str,
                            range: Option<f64>,
                            direct_key: &'static str,
                            direct: Option<f64>,
                            default_range_m: f64|
         -> Result<Threshold, ConfigError> {
            match (range, direct) {
                (Some(r), Some(d)) => Err(err(
                    direct_key,
                    d,
                    format!("either radio.{range_key} or radio.{direct_key}, not both (radio.{range_key} = {r})"),
                )),
                (Some(r), None) if !(r > 0.0 && r <= MAX_RANGE_M) => {
                    Err(err(range_key, r, format!("a positive distance in metres, at most {MAX_RANGE_M}")))
                }
                (None, Some(d)) => {
                    within(direct_key, d, POWER_LEVEL_DBM, "a power in dBm")?;
                    Ok(Threshold { key: direct_key, value: d, dbm: d })
                }
                (r, None) => {
                    let r = r.unwrap_or(default_range_m);
                    Ok(Threshold { key: range_key, value: r, dbm: self.tx_power_dbm - self.propagation.loss_db(r, f) })
                }
            }
        };
        let rx = threshold_at(
            "tx_range_m",
            self.tx_range_m,
            "rx_sensitivity_dbm",
            self.rx_sensitivity_dbm,
            DEFAULT_TX_RANGE_M,
        )?;
        let cs =
            threshold_at("cs_range_m", self.cs_range_m, "cs_threshold_dbm", self.cs_threshold_dbm, DEFAULT_CS_RANGE_M)?;
        // A node that decodes a frame it does not sense would transmit over
        // it: carrier sense must reach at least as far as reception.
        if cs.dbm > rx.dbm {
            return Err(err(
                cs.key,
                cs.value,
                format!(
                    "a carrier-sense reach at least the transmission range radio.{} = {} (here the carrier-sense threshold {:.1} dBm is above the receiver sensitivity {:.1} dBm)",
                    rx.key, rx.value, cs.dbm, rx.dbm
                ),
            ));
        }
        within("noise_figure_db", self.noise_figure_db, NOISE_FIGURE_DB, "a noise figure in dB")?;
        within("shadowing_sigma_db", self.shadowing_sigma_db, SHADOWING_SIGMA_DB, "a standard deviation in dB")?;
        if let Fading::Nakagami { m } = self.fading {
            within("fading.m", m, NAKAGAMI_M, "a Nakagami shape m")?;
        }
        if let ErrorModel::Curve { db_per_decade } = self.error_model {
            if !(db_per_decade > 0.0 && db_per_decade <= MAX_DB_PER_DECADE) {
                return Err(err(
                    "error_model.db_per_decade",
                    db_per_decade,
                    format!("a positive number of dB, at most {MAX_DB_PER_DECADE}"),
                ));
            }
        }
        for (k, v) in &self.sinr_threshold_db {
            let key = format!("sinr_threshold_db.{k}");
            let rate: u32 = k.parse().map_err(|_| err(&key, k, "a rate in kbit/s as the key, e.g. \"24000\""))?;
            self.check_rate(&key, rate)?;
            within(&key, *v, SINR_THRESHOLD_DB, "an SINR in dB")?;
        }
        within("interference_floor_dbm", self.interference_floor_dbm, POWER_LEVEL_DBM, "a power in dBm")?;
        let bw = std.bandwidth_hz();
        let noise_dbm = -174.0 + 10.0 * libm::log10(bw) + self.noise_figure_db;
        let t = std.timing();
        let cw_min = self.mac.cw_min.unwrap_or(t.cw_min);
        let cw_max = self.mac.cw_max.unwrap_or(t.cw_max);
        if cw_min == 0 || cw_min > cw_max || cw_max > MAX_CW {
            return Err(err(
                "mac.cw_min",
                format!("{cw_min} (cw_max {cw_max})"),
                format!("0 < cw_min <= cw_max <= {MAX_CW}"),
            ));
        }
        within("mac.queue_packets", self.mac.queue_packets, 1..=MAX_QUEUE_PACKETS, "a queue length in packets")?;
        within(
            "mac.short_retry_limit",
            self.mac.short_retry_limit,
            0..=MAX_RETRY_LIMIT,
            "a number of retransmissions",
        )?;
        within("mac.long_retry_limit", self.mac.long_retry_limit, 0..=MAX_RETRY_LIMIT, "a number of retransmissions")?;
        if let Some(r) = self.mac.rts_threshold_bytes {
            within("mac.rts_threshold_bytes", r, 0..=MAX_RTS_THRESHOLD_BYTES, "an MPDU size in bytes")?;
        }
        if let Some(b) = self.mac.batched_completion {
            within(
                "mac.batched_completion.max_frames",
                b.max_frames,
                BATCH_FRAMES,
                "a number of frames per interrupt",
            )?;
        }
        Ok(Resolved {
            rx_sensitivity_dbm: rx.dbm,
            cs_threshold_dbm: cs.dbm,
            noise_dbm,
            interference_floor_dbm: if self.interference_floor_at_carrier_sense {
                self.interference_floor_dbm.max(cs.dbm)
            } else {
                self.interference_floor_dbm
            },
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
    fn ns2_54g_is_ns2_at_54_mbit_without_rts_and_ns2_is_unchanged() {
        let g = RadioConfig::preset("ns2-54g").unwrap();
        assert_eq!((g.standard, g.data_rate_kbps, g.mac.rts_threshold_bytes), (Standard::G, 54_000, None));
        assert_eq!((g.tx_range_m, g.cs_range_m, g.error_model), (Some(250.0), Some(550.0), ErrorModel::Threshold));
        assert_eq!(g.sinr_threshold_db.get("54000"), Some(&NS2_CAPTURE_DB));
        let ns2 = RadioConfig::ns2();
        assert_eq!((&g.propagation, g.mac.queue_packets), (&ns2.propagation, ns2.mac.queue_packets));
        assert_eq!((ns2.standard, ns2.mac.rts_threshold_bytes), (Standard::B, Some(0)));
        assert!(g.resolve().is_ok());
    }

    #[test]
    fn the_floor_at_carrier_sense_is_the_higher_of_the_two() {
        let plain = RadioConfig::default().resolve().unwrap();
        assert_eq!(plain.interference_floor_dbm, -102.0);
        let at_cs = RadioConfig { interference_floor_at_carrier_sense: true, ..Default::default() };
        let r = at_cs.resolve().unwrap();
        assert_eq!(r.interference_floor_dbm, r.cs_threshold_dbm);
        assert!(r.cs_threshold_dbm > -102.0);
        // A floor the file sets above carrier sense stays where it is.
        let high = RadioConfig { interference_floor_dbm: -60.0, ..at_cs.clone() }.resolve().unwrap();
        assert_eq!(high.interference_floor_dbm, -60.0);
        // The ns-2 presets: seed 004's stated 550 m interference range; the
        // ATP paper's preset keeps the -102 dBm floor (docs/PROTOCOLS.md).
        let g = RadioConfig::ns2_54g().resolve().unwrap();
        assert_eq!(g.interference_floor_dbm, g.cs_threshold_dbm);
        assert_eq!(RadioConfig::ns2().resolve().unwrap().interference_floor_dbm, -102.0);
    }

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
        assert_eq!(e.key, "radio.data_rate_kbps");
        assert!(e.to_string().contains("24000"), "{e}");

        let c = RadioConfig { cs_range_m: Some(100.0), ..Default::default() };
        assert_eq!(c.resolve().unwrap_err().key, "radio.cs_range_m");

        let mut c = RadioConfig::default();
        c.sinr_threshold_db.insert("fast".into(), 3.0);
        assert_eq!(c.resolve().unwrap_err().key, "radio.sinr_threshold_db.fast");
    }

    #[test]
    fn carrier_sense_shorter_than_reception_names_both_keys() {
        let c = RadioConfig { tx_range_m: Some(400.0), cs_range_m: Some(300.0), ..Default::default() };
        let e = c.resolve().unwrap_err().to_string();
        assert!(e.starts_with("radio.cs_range_m = 300: expected"), "{e}");
        assert!(e.contains("radio.tx_range_m = 400") && !e.contains("Some("), "{e}");
        let c = RadioConfig { cs_range_m: None, cs_threshold_dbm: Some(-60.0), ..Default::default() };
        let e = c.resolve().unwrap_err().to_string();
        assert!(e.starts_with("radio.cs_threshold_dbm = -60: expected") && e.contains("radio.tx_range_m = 250"), "{e}");
    }

    #[test]
    fn numeric_keys_have_bounds_just_inside_passes_just_outside_fails() {
        let mac = |queue_packets| RadioConfig {
            mac: MacConfig { queue_packets, ..Default::default() },
            ..Default::default()
        };
        assert!(mac(MAX_QUEUE_PACKETS).resolve().is_ok());
        for q in [MAX_QUEUE_PACKETS + 1, u32::MAX] {
            let e = mac(q).resolve().unwrap_err();
            assert_eq!(e.key, "radio.mac.queue_packets");
            assert!(e.expected.contains("1 to 10000"), "{e}");
        }
        let retry = |short_retry_limit| MacConfig { short_retry_limit, ..Default::default() };
        assert!(RadioConfig { mac: retry(254), ..Default::default() }.resolve().is_ok());
        assert_eq!(
            RadioConfig { mac: retry(255), ..Default::default() }.resolve().unwrap_err().key,
            "radio.mac.short_retry_limit"
        );
        for floor in [f64::NAN, 40.5, f64::INFINITY] {
            let c = RadioConfig { interference_floor_dbm: floor, ..Default::default() };
            assert_eq!(c.resolve().unwrap_err().key, "radio.interference_floor_dbm");
        }
        assert!(RadioConfig { tx_range_m: Some(1e6), cs_range_m: Some(1e6), ..Default::default() }.resolve().is_err());
        let c = RadioConfig {
            propagation: Propagation::LogDistance {
                exponent: 3.0,
                reference_distance_m: 1.0,
                reference_loss_db: Some(f64::NAN),
            },
            ..Default::default()
        };
        assert_eq!(c.resolve().unwrap_err().key, "radio.propagation.reference_loss_db");
    }
}
