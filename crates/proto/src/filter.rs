//! A windowed maximum, shared by BBR's bottleneck bandwidth (keyed by
//! round trip) and ATP's delivery on a host (keyed by time).

use std::collections::VecDeque;

/// A windowed maximum (Linux `minmax_running_max`, kept exactly: a deque of
/// samples, each larger than every later one). `at` is any increasing key:
/// a round-trip count, or nanoseconds.
#[derive(Clone, Debug, Default)]
pub(crate) struct MaxFilter {
    samples: VecDeque<(u64, f64)>,
}

impl MaxFilter {
    /// Takes `value` at `at`, and forgets samples `window` or more before.
    pub(crate) fn update(&mut self, at: u64, value: f64, window: u64) {
        while self.samples.back().is_some_and(|&(_, v)| v <= value) {
            self.samples.pop_back();
        }
        self.samples.push_back((at, value));
        while self.samples.front().is_some_and(|&(r, _)| r + window <= at) {
            self.samples.pop_front();
        }
    }

    /// The largest sample in the window; zero before the first.
    pub(crate) fn get(&self) -> f64 {
        self.samples.front().map_or(0.0, |&(_, v)| v)
    }
}
