//! Large-scale path loss, static shadowing and per-frame fading.
//!
//! All transcendental functions come from `libm`, a pure-Rust port of musl's,
//! so that results are bit-identical on every machine (the platform libm may
//! differ in the last place between systems).

use meshbed_core::StreamRng;
use rand::Rng;
use serde::{Deserialize, Serialize};

pub const SPEED_OF_LIGHT_M_PER_S: f64 = 299_792_458.0;

/// Deterministic-path-loss models.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "model", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Propagation {
    /// Free space.
    Friis,
    /// ns-2's two-ray ground reflection: Friis up to the crossover distance
    /// 4π·h_t·h_r/λ, d⁻⁴ beyond it. With 1.5 m antennas this is the model
    /// behind the classic 250 m / 550 m ranges.
    TwoRayGround {
        /// The height of every antenna (transmitter's and receiver's).
        #[serde(default = "default_antenna_height_m")]
        #[schemars(extend("exclusiveMinimum" = 0.0), range(max = crate::config::MAX_PROPAGATION_HEIGHT_OR_DISTANCE_M))]
        antenna_height_m: f64,
    },
    /// PL(d) = PL(d₀) + 10·n·log₁₀(d/d₀), PL(d₀) from Friis unless given.
    LogDistance {
        /// The path-loss exponent n (2 in free space, 2.7–5 indoors and in cities).
        #[schemars(extend("exclusiveMinimum" = 0.0, "exclusiveMaximum" = crate::config::MAX_PATH_LOSS_EXPONENT))]
        exponent: f64,
        /// The reference distance d₀.
        #[serde(default = "default_reference_distance_m")]
        #[schemars(extend("exclusiveMinimum" = 0.0), range(max = crate::config::MAX_PROPAGATION_HEIGHT_OR_DISTANCE_M))]
        reference_distance_m: f64,
        /// The path loss PL(d₀) at the reference distance; absent: Friis's.
        #[serde(default)]
        #[schemars(range(min = *crate::config::REFERENCE_LOSS_DB.start(), max = *crate::config::REFERENCE_LOSS_DB.end()))]
        reference_loss_db: Option<f64>,
    },
}

fn default_antenna_height_m() -> f64 {
    1.5
}
fn default_reference_distance_m() -> f64 {
    1.0
}

impl Default for Propagation {
    fn default() -> Self {
        Propagation::TwoRayGround { antenna_height_m: default_antenna_height_m() }
    }
}

impl Propagation {
    /// Path loss in dB at `distance_m` (clamped below at 1 cm).
    pub fn loss_db(&self, distance_m: f64, frequency_hz: f64) -> f64 {
        PathLoss::new(self, frequency_hz).loss_db(distance_m)
    }

    /// The distance at which the loss first reaches `loss_db` (bisection; the
    /// models are monotone in distance). Used to report ranges.
    pub fn distance_for_loss_m(&self, loss_db: f64, frequency_hz: f64) -> f64 {
        let (mut lo, mut hi) = (0.01f64, 1.0e6f64);
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if self.loss_db(mid, frequency_hz) < loss_db {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        hi
    }
}

/// A propagation model at one frequency, with the terms that do not
/// depend on the distance computed once (issue 28: a moving network asks
/// for a path loss per frame per receiver).
///
/// The simulator works with the linear path gain of a squared distance,
/// [`PathLoss::gain`]: products and one division, where the loss in dB
/// costs a hypotenuse, a logarithm and, back to milliwatts, a power per
/// frame per receiver (a third of a moving 100-node run's time before;
/// model revision 2026-11-29.4). The two forms are the same formula; they
/// differ in the last bits of a double (tested: within 1e-12 relative).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PathLoss {
    Friis {
        wavelength_m: f64,
        /// (λ/4π)²: the Friis gain at 1 m².
        friis_gain_m2: f64,
    },
    TwoRayGround {
        wavelength_m: f64,
        /// 4π·h_t·h_r / λ: Friis below it, d⁻⁴ beyond.
        crossover_m: f64,
        crossover_sq_m2: f64,
        /// 20·log10(h_t·h_r).
        height_term_db: f64,
        friis_gain_m2: f64,
        /// (h_t·h_r)²: the d⁻⁴ gain at 1 m⁴.
        two_ray_gain_m4: f64,
    },
    LogDistance {
        exponent: f64,
        reference_distance_m: f64,
        reference_loss_db: f64,
        reference_sq_m2: f64,
        /// 10^(−PL(d₀)/10).
        reference_gain: f64,
    },
}

fn friis_loss_db(distance_m: f64, wavelength_m: f64) -> f64 {
    20.0 * libm::log10(4.0 * core::f64::consts::PI * distance_m / wavelength_m)
}

/// The distance below which every model is taken at 1 cm (a node on top
/// of another), squared.
const MIN_DISTANCE_SQ_M2: f64 = 0.01 * 0.01;

impl PathLoss {
    pub fn new(model: &Propagation, frequency_hz: f64) -> PathLoss {
        let wavelength_m = SPEED_OF_LIGHT_M_PER_S / frequency_hz;
        let k = wavelength_m / (4.0 * core::f64::consts::PI);
        let friis_gain_m2 = k * k;
        match *model {
            Propagation::Friis => PathLoss::Friis { wavelength_m, friis_gain_m2 },
            Propagation::TwoRayGround { antenna_height_m: h } => {
                let crossover_m = 4.0 * core::f64::consts::PI * h * h / wavelength_m;
                PathLoss::TwoRayGround {
                    wavelength_m,
                    crossover_m,
                    crossover_sq_m2: crossover_m * crossover_m,
                    height_term_db: 20.0 * libm::log10(h * h),
                    friis_gain_m2,
                    two_ray_gain_m4: (h * h) * (h * h),
                }
            }
            Propagation::LogDistance { exponent, reference_distance_m, reference_loss_db } => {
                let reference_loss_db =
                    reference_loss_db.unwrap_or_else(|| friis_loss_db(reference_distance_m, wavelength_m));
                PathLoss::LogDistance {
                    exponent,
                    reference_distance_m,
                    reference_loss_db,
                    reference_sq_m2: reference_distance_m * reference_distance_m,
                    reference_gain: db_to_linear(-reference_loss_db),
                }
            }
        }
    }

    /// Path loss in dB at `distance_m` (clamped below at 1 cm): ranges,
    /// reach and reports. The simulator's powers come from [`PathLoss::gain`].
    #[inline]
    pub fn loss_db(&self, distance_m: f64) -> f64 {
        let d = distance_m.max(0.01);
        match *self {
            PathLoss::Friis { wavelength_m, .. } => friis_loss_db(d, wavelength_m),
            PathLoss::TwoRayGround { wavelength_m, crossover_m, height_term_db, .. } => {
                if d < crossover_m {
                    friis_loss_db(d, wavelength_m)
                } else {
                    40.0 * libm::log10(d) - height_term_db
                }
            }
            PathLoss::LogDistance { exponent, reference_distance_m: d0, reference_loss_db: pl0, .. } => {
                if d <= d0 {
                    pl0
                } else {
                    pl0 + 10.0 * exponent * libm::log10(d / d0)
                }
            }
        }
    }

    /// The linear path gain (received over sent power) at a squared
    /// distance `distance_sq_m2` (clamped below at 1 cm): 10^(−loss_db/10),
    /// without a logarithm (Friis λ²/(4πd)², two-ray h⁴/d⁴, log-distance
    /// 10^(−PL(d₀)/10)·(d₀/d)ⁿ).
    #[inline]
    pub fn gain(&self, distance_sq_m2: f64) -> f64 {
        let d_sq = distance_sq_m2.max(MIN_DISTANCE_SQ_M2);
        match *self {
            PathLoss::Friis { friis_gain_m2, .. } => friis_gain_m2 / d_sq,
            PathLoss::TwoRayGround { crossover_sq_m2, friis_gain_m2, two_ray_gain_m4, .. } => {
                if d_sq < crossover_sq_m2 {
                    friis_gain_m2 / d_sq
                } else {
                    two_ray_gain_m4 / (d_sq * d_sq)
                }
            }
            PathLoss::LogDistance { exponent, reference_sq_m2, reference_gain, .. } => {
                if d_sq <= reference_sq_m2 {
                    reference_gain
                } else {
                    reference_gain * libm::pow(reference_sq_m2 / d_sq, 0.5 * exponent)
                }
            }
        }
    }
}

/// The floors of a building: nodes on different floors are `height_m` apart
/// vertically per floor, and every floor slab between them costs `loss_db`
/// on top of the distance loss — the floor penetration loss factor L_f of
/// ITU-R P.1238's indoor model (§3 there: about 16 dB through one floor of an
/// office at 5.2 GHz). Issue 15 models the thesis' two-floor testbed with it
/// (seed 001 §5.5: flows "in both the 1st and 2nd floors").
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Floors {
    /// Floor-to-floor height.
    #[schemars(extend("exclusiveMinimum" = 0.0), range(max = crate::config::MAX_FLOOR_HEIGHT_M))]
    pub height_m: f64,
    /// The loss through one floor slab (ITU-R P.1238's L_f).
    #[schemars(range(min = *crate::config::FLOOR_LOSS_DB.start(), max = *crate::config::FLOOR_LOSS_DB.end()))]
    pub loss_db: f64,
}

/// Where a node is, for the path loss between two nodes: its position in
/// the plane and its floor (0 when the model has no floors).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Place {
    pub x_m: f64,
    pub y_m: f64,
    pub floor: u32,
}

/// The distance and the linear path gain between two places: the one rule
/// both the static link budget and moving nodes use. Across floors the
/// distance is three-dimensional and each slab crossed costs
/// `Floors::loss_db`.
#[inline(always)]
pub fn link_gain(path_loss: &PathLoss, floors: Option<&Floors>, a: Place, b: Place) -> (f64, f64) {
    let (dx, dy) = (a.x_m - b.x_m, a.y_m - b.y_m);
    let horizontal_sq_m2 = dx * dx + dy * dy;
    let slabs = a.floor.abs_diff(b.floor);
    match floors {
        Some(f) if slabs > 0 => {
            let v = f.height_m * slabs as f64;
            let d_sq = horizontal_sq_m2 + v * v;
            (d_sq.sqrt(), path_loss.gain(d_sq) * db_to_linear(-f.loss_db * slabs as f64))
        }
        _ => (horizontal_sq_m2.sqrt(), path_loss.gain(horizontal_sq_m2)),
    }
}

/// Per-frame small-scale fading of received power.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "model", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Fading {
    /// No fading: every frame gets the mean power.
    #[default]
    None,
    /// Power gain ~ Exp(1).
    Rayleigh,
    /// Power gain ~ Gamma(m, 1/m); m = 1 is Rayleigh, large m approaches none.
    Nakagami {
        /// The shape m.
        #[schemars(range(min = *crate::config::NAKAGAMI_M.start(), max = *crate::config::NAKAGAMI_M.end()))]
        m: f64,
    },
}

impl Fading {
    /// A linear power gain with mean 1.
    pub fn sample_gain(&self, rng: &mut StreamRng) -> f64 {
        self.sample_gain_from(|| rng)
    }

    /// [`Fading::sample_gain`] from a stream asked for only when a gain is
    /// drawn: without fading the stream's owner is not touched (issue 28:
    /// a frame's hundreds of receivers, each a cache line, in a
    /// 6,400-node grid).
    #[inline]
    pub fn sample_gain_from<'a>(&self, rng: impl FnOnce() -> &'a mut StreamRng) -> f64 {
        match *self {
            Fading::None => 1.0,
            Fading::Rayleigh => exponential(rng()),
            Fading::Nakagami { m } => gamma(rng(), m) / m,
        }
    }
}

/// Uniform in (0, 1], so that logarithms are finite.
fn open_unit(rng: &mut StreamRng) -> f64 {
    1.0 - rng.gen::<f64>()
}

fn exponential(rng: &mut StreamRng) -> f64 {
    -libm::log(open_unit(rng))
}

/// Standard normal by Box–Muller.
pub fn standard_normal(rng: &mut StreamRng) -> f64 {
    let u1 = open_unit(rng);
    let u2 = rng.gen::<f64>();
    libm::sqrt(-2.0 * libm::log(u1)) * libm::cos(2.0 * core::f64::consts::PI * u2)
}

/// Gamma(shape, 1) by Marsaglia & Tsang (2000), with the shape < 1 boost.
fn gamma(rng: &mut StreamRng, shape: f64) -> f64 {
    if shape < 1.0 {
        let u = open_unit(rng);
        return gamma(rng, shape + 1.0) * libm::pow(u, 1.0 / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / libm::sqrt(9.0 * d);
    loop {
        let x = standard_normal(rng);
        let v = 1.0 + c * x;
        if v <= 0.0 {
            continue;
        }
        let v = v * v * v;
        let u = open_unit(rng);
        if libm::log(u) < 0.5 * x * x + d - d * v + d * libm::log(v) {
            return d * v;
        }
    }
}

pub fn dbm_to_mw(dbm: f64) -> f64 {
    libm::pow(10.0, dbm / 10.0)
}
/// A ratio in dB as a linear factor.
pub fn db_to_linear(db: f64) -> f64 {
    libm::pow(10.0, db / 10.0)
}
pub fn mw_to_dbm(mw: f64) -> f64 {
    10.0 * libm::log10(mw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use meshbed_core::{stream_rng, StreamId, StreamKind};

    /// The loss of a gain, in dB.
    fn loss_of(gain: f64) -> f64 {
        -10.0 * gain.log10()
    }

    #[test]
    fn a_floor_adds_its_height_and_its_slab_loss() {
        let p = Propagation::LogDistance { exponent: 3.0, reference_distance_m: 1.0, reference_loss_db: Some(40.0) };
        let floors = Floors { height_m: 4.0, loss_db: 16.0 };
        let pl = PathLoss::new(&p, 5e9);
        let at = |x_m, y_m, floor| Place { x_m, y_m, floor };
        // Same floor: the plane distance, no slab.
        let (d, g) = link_gain(&pl, Some(&floors), at(0.0, 0.0, 1), at(3.0, 4.0, 1));
        assert_eq!(d, 5.0);
        assert!((loss_of(g) - (40.0 + 30.0 * 5f64.log10())).abs() < 1e-9);
        // One floor apart, 3 m across: 5 m in 3-D (3-4-5), plus 16 dB.
        let (d, g) = link_gain(&pl, Some(&floors), at(0.0, 0.0, 0), at(3.0, 0.0, 1));
        assert!((d - 5.0).abs() < 1e-12);
        assert!((loss_of(g) - (40.0 + 30.0 * 5f64.log10() + 16.0)).abs() < 1e-9);
        // Two floors straight up: 8 m and two slabs, either direction.
        let (d, g) = link_gain(&pl, Some(&floors), at(0.0, 0.0, 2), at(0.0, 0.0, 0));
        assert!((d - 8.0).abs() < 1e-12);
        assert!((loss_of(g) - (40.0 + 30.0 * 8f64.log10() + 32.0)).abs() < 1e-9);
        // Without a floor model the floor numbers are ignored.
        let (d, g) = link_gain(&pl, None, at(0.0, 0.0, 0), at(3.0, 4.0, 1));
        assert_eq!(d, 5.0);
        assert!((loss_of(g) - p.loss_db(5.0, 5e9)).abs() < 1e-9);
    }

    /// The linear gain is the loss in dB in the other domain: the same
    /// formula to within rounding (1e-12 relative) at every distance of
    /// every model, the two-ray crossover and log-distance's d₀ included
    /// (issue 28, model revision 2026-11-29.4).
    #[test]
    fn the_gain_is_the_loss_in_the_linear_domain() {
        let models = [
            Propagation::Friis,
            Propagation::default(),
            Propagation::TwoRayGround { antenna_height_m: 10.0 },
            Propagation::LogDistance { exponent: 3.0, reference_distance_m: 1.0, reference_loss_db: Some(40.0) },
            Propagation::LogDistance { exponent: 2.7, reference_distance_m: 5.0, reference_loss_db: None },
        ];
        for model in &models {
            for f in [2.412e9, 5.18e9] {
                let pl = PathLoss::new(model, f);
                let mut ds = vec![0.001, 0.01, 0.5, 1.0, 4.99, 5.0, 5.01, 13.0, 100.0, 227.0, 228.0, 250.0, 549.9, 1e4];
                if let PathLoss::TwoRayGround { crossover_m, .. } = pl {
                    ds.extend([crossover_m * (1.0 - 1e-9), crossover_m * (1.0 + 1e-9)]);
                }
                for d in ds {
                    let want = db_to_linear(-pl.loss_db(d));
                    let got = pl.gain(d * d);
                    assert!(((got - want) / want).abs() < 1e-12, "{model:?} at {f} Hz, {d} m: {got} vs {want}");
                }
            }
        }
    }

    #[test]
    fn two_ray_switches_at_crossover() {
        let p = Propagation::default();
        let f = 2.412e9;
        // Crossover for 1.5 m antennas at 2.412 GHz: 4π·2.25/0.1243 = 227.5 m.
        let below = p.loss_db(100.0, f);
        assert!((below - friis_loss_db(100.0, SPEED_OF_LIGHT_M_PER_S / f)).abs() < 1e-9);
        // Beyond: 40·log10(d) − 20·log10(2.25).
        let beyond = p.loss_db(500.0, f);
        assert!((beyond - (40.0 * 500f64.log10() - 20.0 * 2.25f64.log10())).abs() < 1e-9);
    }

    /// The prepared model gives the loss the formula gives, to the bit:
    /// preparing it moved only the distance-free terms (issue 28).
    #[test]
    fn prepared_loss_is_the_formula_to_the_bit() {
        let f = 2.412e9;
        let wavelength_m = SPEED_OF_LIGHT_M_PER_S / f;
        let h = 1.5;
        let two_ray = PathLoss::new(&Propagation::TwoRayGround { antenna_height_m: h }, f);
        let friis = PathLoss::new(&Propagation::Friis, f);
        for d in [0.001_f64, 0.5, 1.0, 13.0, 100.0, 227.0, 228.0, 250.0, 549.9, 1e4] {
            let dd = f64::max(d, 0.01);
            let friis_formula = 20.0 * libm::log10(4.0 * core::f64::consts::PI * dd / wavelength_m);
            let crossover_m = 4.0 * core::f64::consts::PI * h * h / wavelength_m;
            let two_ray_formula =
                if dd < crossover_m { friis_formula } else { 40.0 * libm::log10(dd) - 20.0 * libm::log10(h * h) };
            assert_eq!(friis.loss_db(d).to_bits(), friis_formula.to_bits(), "Friis at {d} m");
            assert_eq!(two_ray.loss_db(d).to_bits(), two_ray_formula.to_bits(), "two-ray at {d} m");
        }
    }

    #[test]
    fn log_distance_follows_exponent() {
        let p = Propagation::LogDistance { exponent: 3.0, reference_distance_m: 1.0, reference_loss_db: Some(40.0) };
        assert!((p.loss_db(10.0, 5e9) - 70.0).abs() < 1e-9);
        assert!((p.loss_db(100.0, 5e9) - 100.0).abs() < 1e-9);
    }

    #[test]
    fn distance_for_loss_inverts_loss() {
        let p = Propagation::default();
        let f = 5.18e9;
        let l = p.loss_db(250.0, f);
        assert!((p.distance_for_loss_m(l, f) - 250.0).abs() < 1e-6);
    }

    #[test]
    fn fading_gains_have_unit_mean() {
        let mut rng = stream_rng(3, StreamId::new(StreamKind::Fading, 0));
        for fading in [Fading::Rayleigh, Fading::Nakagami { m: 3.0 }, Fading::Nakagami { m: 0.7 }] {
            let n = 200_000;
            let mean: f64 = (0..n).map(|_| fading.sample_gain(&mut rng)).sum::<f64>() / n as f64;
            assert!((mean - 1.0).abs() < 0.02, "{fading:?}: mean {mean}");
        }
        assert_eq!(Fading::None.sample_gain(&mut rng), 1.0);
    }

    /// The stream is asked for only when a gain is drawn (the medium then
    /// leaves a receiver's state alone without fading), and a gain drawn
    /// through it is the one `sample_gain` draws from the same stream.
    #[test]
    fn without_fading_the_stream_is_not_asked_for() {
        let mut asked = 0;
        let mut rng = stream_rng(3, StreamId::new(StreamKind::Fading, 0));
        let gain = Fading::None.sample_gain_from(|| {
            asked += 1;
            &mut rng
        });
        assert_eq!((gain, asked), (1.0, 0));
        let mut same = rng.clone();
        for fading in [Fading::Rayleigh, Fading::Nakagami { m: 3.0 }] {
            let lazy = fading.sample_gain_from(|| {
                asked += 1;
                &mut rng
            });
            assert_eq!(lazy, fading.sample_gain(&mut same));
        }
        assert_eq!(asked, 2);
    }
}
