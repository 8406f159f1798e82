//! Link budget and neighbour table: the mean power every node receives from
//! every other, and from it who can decode, sense or merely be disturbed by
//! whom.
//!
//! It owns the node positions, transmit powers and data rates, the path loss
//! and the static shadowing draws; it is told nothing else. It needs no MAC,
//! so mobility, routing and the emulator can ask it about links on their own
//! (the [`Medium`](crate::Medium) builds one and keeps it).

use crate::config::{ConfigError, RadioConfig, Resolved};
use crate::propagation::{dbm_to_mw, standard_normal, SPEED_OF_LIGHT_M_PER_S};
use meshbed_core::{stream_rng, Duration, StreamId, StreamKind};

pub type NodeId = u32;

/// Where a node is and what it overrides.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeRadio {
    pub x_m: f64,
    pub y_m: f64,
    pub tx_power_dbm: Option<f64>,
    pub data_rate_kbps: Option<u32>,
}

impl NodeRadio {
    pub fn at(x_m: f64, y_m: f64) -> Self {
        NodeRadio { x_m, y_m, tx_power_dbm: None, data_rate_kbps: None }
    }
}

/// A node that receives a transmitter's energy above the interference floor.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Neighbour {
    pub node: NodeId,
    /// Mean received power (path loss and shadowing, no fading).
    pub mean_power_mw: f64,
    pub propagation_delay: Duration,
}

/// Mean received powers between every pair of nodes and, per transmitter,
/// the nodes its frames reach.
#[derive(Clone, Debug)]
pub struct LinkBudget {
    tx_power_dbm: Vec<f64>,
    data_rate_kbps: Vec<u32>,
    /// SINR threshold (dB) of each node's data rate.
    decode_threshold_db: Vec<f64>,
    /// `mean_rx_dbm[from][to]`; −∞ on the diagonal.
    mean_rx_dbm: Vec<Vec<f64>>,
    neighbours: Vec<Vec<Neighbour>>,
    rx_sensitivity_dbm: f64,
    cs_threshold_dbm: f64,
    noise_dbm: f64,
}

impl LinkBudget {
    /// Builds the link budget of `nodes` under `config`. Shadowing comes
    /// from `seed` and each link's own stream, as in the [`Medium`](crate::Medium)
    /// built with the same arguments.
    pub fn new(config: &RadioConfig, nodes: &[NodeRadio], seed: u64) -> Result<Self, ConfigError> {
        let resolved = config.resolve()?;
        Self::with_resolved(config, &resolved, nodes, seed)
    }

    /// As [`LinkBudget::new`], for a caller that has already resolved `config`.
    pub(crate) fn with_resolved(
        config: &RadioConfig,
        resolved: &Resolved,
        nodes: &[NodeRadio],
        seed: u64,
    ) -> Result<Self, ConfigError> {
        let standard = config.standard;
        for (i, n) in nodes.iter().enumerate() {
            if let Some(r) = n.data_rate_kbps {
                if !standard.rates_kbps().contains(&r) {
                    return Err(ConfigError {
                        key: format!("nodes[{i}].data_rate_kbps"),
                        value: r.to_string(),
                        expected: format!("one of the {} rates {:?}", standard.name(), standard.rates_kbps()),
                    });
                }
            }
            if !(n.x_m.is_finite() && n.y_m.is_finite()) {
                return Err(ConfigError {
                    key: format!("nodes[{i}].position"),
                    value: format!("({}, {})", n.x_m, n.y_m),
                    expected: "finite coordinates in metres".into(),
                });
            }
        }
        let f = standard.frequency_hz();
        let n = nodes.len();
        let mut mean_rx_dbm = vec![vec![f64::NEG_INFINITY; n]; n];
        // Static log-normal shadowing, one draw per unordered link from the
        // link's own stream, so that links are reciprocal and independent.
        let mut shadow_db = vec![vec![0.0; n]; n];
        if config.shadowing_sigma_db > 0.0 {
            // Indices, not iterators: the pair (i, j) fills both [i][j] and [j][i].
            #[allow(clippy::needless_range_loop)]
            for i in 0..n {
                for j in (i + 1)..n {
                    let mut rng = stream_rng(seed, StreamId::pair(StreamKind::Shadowing, i as u32, j as u32));
                    let s = config.shadowing_sigma_db * standard_normal(&mut rng);
                    shadow_db[i][j] = s;
                    shadow_db[j][i] = s;
                }
            }
        }
        let mut tx_power = Vec::with_capacity(n);
        let mut data_rate = Vec::with_capacity(n);
        let mut neighbours = Vec::with_capacity(n);
        for (i, a) in nodes.iter().enumerate() {
            let tx_power_dbm = a.tx_power_dbm.unwrap_or(config.tx_power_dbm);
            let mut heard_by = Vec::new();
            for (j, b) in nodes.iter().enumerate() {
                if i == j {
                    continue;
                }
                let d = libm::hypot(a.x_m - b.x_m, a.y_m - b.y_m);
                let rx_dbm = tx_power_dbm - config.propagation.loss_db(d, f) - shadow_db[i][j];
                mean_rx_dbm[i][j] = rx_dbm;
                if rx_dbm >= config.interference_floor_dbm {
                    let propagation_delay = Duration::from_nanos(libm::round(d / SPEED_OF_LIGHT_M_PER_S * 1e9) as u64);
                    heard_by.push(Neighbour { node: j as NodeId, mean_power_mw: dbm_to_mw(rx_dbm), propagation_delay });
                }
            }
            tx_power.push(tx_power_dbm);
            data_rate.push(a.data_rate_kbps.unwrap_or(config.data_rate_kbps));
            neighbours.push(heard_by);
        }
        Ok(LinkBudget {
            decode_threshold_db: data_rate.iter().map(|&r| config.sinr_threshold_for(r)).collect(),
            tx_power_dbm: tx_power,
            data_rate_kbps: data_rate,
            mean_rx_dbm,
            neighbours,
            rx_sensitivity_dbm: resolved.rx_sensitivity_dbm,
            cs_threshold_dbm: resolved.cs_threshold_dbm,
            noise_dbm: resolved.noise_dbm,
        })
    }

    #[inline]
    pub fn node_count(&self) -> usize {
        self.neighbours.len()
    }
    #[inline]
    pub fn tx_power_dbm(&self, node: NodeId) -> f64 {
        self.tx_power_dbm[node as usize]
    }
    #[inline]
    pub fn data_rate_kbps(&self, node: NodeId) -> u32 {
        self.data_rate_kbps[node as usize]
    }
    /// Mean received power at `to` of a transmission by `from` (no fading).
    #[inline]
    pub fn mean_rx_dbm(&self, from: NodeId, to: NodeId) -> f64 {
        self.mean_rx_dbm[from as usize][to as usize]
    }
    /// The nodes `from`'s frames reach above the interference floor, in node order.
    #[inline]
    pub fn neighbours(&self, from: NodeId) -> &[Neighbour] {
        &self.neighbours[from as usize]
    }
    /// Whether `to` can decode `from`'s data frames without interference and
    /// fading: above the sensitivity and above the SINR threshold of the rate.
    #[inline]
    pub fn can_decode(&self, from: NodeId, to: NodeId) -> bool {
        if from == to {
            return false;
        }
        let rx = self.mean_rx_dbm(from, to);
        rx >= self.rx_sensitivity_dbm && rx - self.noise_dbm >= self.decode_threshold_db[from as usize]
    }
    /// Whether `to`'s carrier sense finds the medium busy while `from`
    /// sends (mean power at or above the carrier-sense threshold).
    #[inline]
    pub fn can_sense(&self, from: NodeId, to: NodeId) -> bool {
        from != to && self.mean_rx_dbm(from, to) >= self.cs_threshold_dbm
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::propagation::Propagation;

    fn line(spacing_m: f64, count: usize) -> Vec<NodeRadio> {
        (0..count).map(|i| NodeRadio::at(i as f64 * spacing_m, 0.0)).collect()
    }

    #[test]
    fn decode_and_sense_follow_distance() {
        let cfg = RadioConfig::default();
        let f = cfg.standard.frequency_hz();
        let r = cfg.resolve().unwrap();
        // Put node 1 just inside the decode range (sensitivity and SINR
        // threshold both met) and node 2 far beyond the sensing range.
        let need_dbm = r.rx_sensitivity_dbm.max(r.noise_dbm + cfg.sinr_threshold_for(cfg.data_rate_kbps));
        let decode_m = cfg.propagation.distance_for_loss_m(cfg.tx_power_dbm - need_dbm, f);
        let sense_m = cfg.propagation.distance_for_loss_m(cfg.tx_power_dbm - r.cs_threshold_dbm, f);
        assert!(sense_m > decode_m);
        let nodes = [NodeRadio::at(0.0, 0.0), NodeRadio::at(0.99 * decode_m, 0.0), NodeRadio::at(3.0 * sense_m, 0.0)];
        let links = LinkBudget::new(&cfg, &nodes, 1).unwrap();
        assert!(links.can_decode(0, 1) && links.can_decode(1, 0));
        assert!(links.can_sense(0, 1));
        assert!(!links.can_decode(0, 2) && !links.can_sense(0, 2));
        assert!(!links.can_decode(0, 0) && !links.can_sense(0, 0));
        // Just outside the decode range, the same pair no longer decodes.
        let nodes = [NodeRadio::at(0.0, 0.0), NodeRadio::at(1.01 * decode_m, 0.0)];
        assert!(!LinkBudget::new(&cfg, &nodes, 1).unwrap().can_decode(0, 1));
    }

    #[test]
    fn neighbours_are_cut_at_the_interference_floor_and_carry_the_light_delay() {
        let cfg = RadioConfig { propagation: Propagation::Friis, ..Default::default() };
        let f = cfg.standard.frequency_hz();
        let floor_m = cfg.propagation.distance_for_loss_m(cfg.tx_power_dbm - cfg.interference_floor_dbm, f);
        // Spacing such that the next node is heard and the one after is not.
        let spacing = 0.6 * floor_m;
        let links = LinkBudget::new(&cfg, &line(spacing, 4), 7).unwrap();
        let heard: Vec<NodeId> = links.neighbours(1).iter().map(|n| n.node).collect();
        assert_eq!(heard, vec![0, 2]);
        let nb = links.neighbours(1)[1];
        let expected_ns = libm::round(spacing / SPEED_OF_LIGHT_M_PER_S * 1e9) as u64;
        assert_eq!(nb.propagation_delay, Duration::from_nanos(expected_ns));
        assert!((crate::propagation::mw_to_dbm(nb.mean_power_mw) - links.mean_rx_dbm(1, 2)).abs() < 1e-9);
    }

    #[test]
    fn shadowed_links_are_reciprocal_and_reproducible() {
        let cfg = RadioConfig { shadowing_sigma_db: 6.0, ..Default::default() };
        let nodes = line(40.0, 5);
        let a = LinkBudget::new(&cfg, &nodes, 11).unwrap();
        let b = LinkBudget::new(&cfg, &nodes, 11).unwrap();
        let c = LinkBudget::new(&cfg, &nodes, 12).unwrap();
        let mut differs = false;
        for i in 0..5 {
            for j in 0..5 {
                if i != j {
                    assert_eq!(a.mean_rx_dbm(i, j), a.mean_rx_dbm(j, i));
                    assert_eq!(a.mean_rx_dbm(i, j), b.mean_rx_dbm(i, j));
                    differs |= a.mean_rx_dbm(i, j) != c.mean_rx_dbm(i, j);
                }
            }
        }
        assert!(differs, "another seed draws other shadowing");
    }

    #[test]
    fn bad_nodes_are_refused_by_key() {
        let cfg = RadioConfig::default();
        let mut nodes = line(10.0, 2);
        nodes[1].data_rate_kbps = Some(5);
        assert_eq!(LinkBudget::new(&cfg, &nodes, 0).unwrap_err().key, "nodes[1].data_rate_kbps");
        let nodes = [NodeRadio::at(f64::NAN, 0.0)];
        assert_eq!(LinkBudget::new(&cfg, &nodes, 0).unwrap_err().key, "nodes[0].position");
    }
}
