//! The rate of each unicast DATA attempt of one node (issue 13): one
//! [`Controller`] per receiver, and per link a histogram of DATA attempts
//! and successes by rate (ns-3 keeps a `WifiRemoteStation` per peer in its
//! `WifiRemoteStationManager` the same way).
//!
//! A [`NodeRates`] exists only when some node of the medium runs rate
//! control; a medium of fixed-rate nodes has none, and does exactly what it
//! did before rate control existed. It is told the outcome of every DATA
//! attempt and when a frame is done; it answers the rate of every attempt.

use super::NodeId;
use crate::rate_control::{Controller, MinstrelTiming, RateControl};
use meshbed_core::{Instant, StreamRng};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// DATA attempts of one link at one rate, and how many were acknowledged.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateCount {
    pub rate_kbps: u32,
    pub attempts: u64,
    pub successes: u64,
}

/// The rates one link's DATA frames went at (transmitter → receiver).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkRates {
    pub tx: NodeId,
    pub rx: NodeId,
    pub rate_control: RateControl,
    /// Rates with at least one attempt, ascending.
    pub rates: Vec<RateCount>,
}

struct LinkState {
    ctrl: Controller,
    /// Per rate index: DATA attempts with a known outcome, and successes.
    attempts: Vec<u64>,
    successes: Vec<u64>,
}

/// One node's rate controllers, one per receiver it has sent to.
pub(super) struct NodeRates {
    kind: RateControl,
    /// The rates the node may use, ascending; the last is its configured rate.
    rates_kbps: Vec<u32>,
    timing: MinstrelTiming,
    rng: StreamRng,
    links: BTreeMap<NodeId, LinkState>,
}

impl NodeRates {
    pub fn new(kind: RateControl, rates_kbps: Vec<u32>, timing: MinstrelTiming, rng: StreamRng) -> Self {
        NodeRates { kind, rates_kbps, timing, rng, links: BTreeMap::new() }
    }

    /// The rate for the attempt after `data_failures` failed DATA attempts of
    /// the current frame to `rx`; `first` when the frame has not asked before.
    pub fn attempt_rate_kbps(&mut self, now: Instant, rx: NodeId, data_failures: u32, first: bool) -> u32 {
        let n = self.rates_kbps.len();
        let (kind, timing, rng) = (self.kind, &self.timing, &mut self.rng);
        let link = self.links.entry(rx).or_insert_with(|| LinkState {
            ctrl: Controller::new(kind, now, timing, rng),
            attempts: vec![0; n],
            successes: vec![0; n],
        });
        if first {
            link.ctrl.start_frame(now);
        }
        self.rates_kbps[link.ctrl.rate_index(data_failures)]
    }

    /// A DATA attempt to `rx` at `rate_kbps` was acknowledged (or not).
    pub fn report(&mut self, rx: NodeId, rate_kbps: u32, success: bool) {
        let Some(i) = self.rates_kbps.iter().position(|&r| r == rate_kbps) else { return };
        let Some(link) = self.links.get_mut(&rx) else { return };
        link.ctrl.report(i, success);
        link.attempts[i] += 1;
        link.successes[i] += u64::from(success);
    }

    /// The frame to `rx` is done after `data_failures` failed DATA attempts.
    pub fn end_frame(&mut self, rx: NodeId, data_failures: u32) {
        if let Some(link) = self.links.get_mut(&rx) {
            link.ctrl.end_frame(data_failures);
        }
    }

    /// This node's links with at least one DATA attempt, by receiver.
    pub fn histogram(&self, tx: NodeId) -> impl Iterator<Item = LinkRates> + '_ {
        self.links.iter().filter_map(move |(&rx, l)| {
            let rates: Vec<RateCount> = (0..self.rates_kbps.len())
                .filter(|&i| l.attempts[i] > 0)
                .map(|i| RateCount {
                    rate_kbps: self.rates_kbps[i],
                    attempts: l.attempts[i],
                    successes: l.successes[i],
                })
                .collect();
            (!rates.is_empty()).then_some(LinkRates { tx, rx, rate_control: self.kind, rates })
        })
    }
}
