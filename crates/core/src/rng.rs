//! Per-component random streams derived from one run seed.
//!
//! Every component (a node's MAC, its PHY, a link's shadowing, a flow) owns a
//! ChaCha8 generator keyed by the run seed and positioned on its own 64-bit
//! ChaCha *stream*, named by a fixed [`StreamId`]. ChaCha streams are
//! independent by construction, so adding a node or a flow never changes the
//! draws of any other component (ns-3 `AssignStreams`), and ChaCha is specified
//! bit-for-bit, so the same seed gives the same draws on every machine.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The generator every component uses.
pub type StreamRng = ChaCha8Rng;

/// Which kind of component a stream belongs to. The numeric values are part of
/// the reproducibility contract: never renumber them.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum StreamKind {
    /// DCF backoff draws of one node.
    Mac = 1,
    /// Frame-error draws of one receiver.
    Phy = 2,
    /// Per-frame fading of one receiver.
    Fading = 3,
    /// Static log-normal shadowing of one unordered link.
    Shadowing = 4,
    /// A traffic source or application.
    App = 5,
    /// A transport connection (connection ids, initial sequence numbers).
    Transport = 6,
    /// A routing agent.
    Routing = 7,
    /// The experiment layer (choosing seeds of repetitions and the like).
    Experiment = 8,
    /// One node's movement (random waypoint destinations, speeds, pauses).
    Mobility = 9,
    /// Random node placement in an area.
    Placement = 10,
    /// Random source/destination pairs (and start times) of a scenario's
    /// `[random_flows]`.
    FlowPairs = 11,
    /// One node's rate control (Minstrel's look-around table, issue 13).
    RateControl = 12,
}

/// A stream identifier: 16 bits of kind, 48 bits of component index.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct StreamId(u64);

impl StreamId {
    pub fn new(kind: StreamKind, index: u64) -> Self {
        debug_assert!(index < 1 << 48, "stream index {index} exceeds 48 bits");
        StreamId(((kind as u64) << 48) | (index & ((1 << 48) - 1)))
    }
    /// The stream of an unordered pair of nodes (links), independent of order.
    pub fn pair(kind: StreamKind, a: u32, b: u32) -> Self {
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        Self::new(kind, ((lo as u64) << 24) | (hi as u64 & 0xff_ffff))
    }
    pub fn raw(self) -> u64 {
        self.0
    }
}

/// The generator for `stream` in the run seeded with `seed`.
pub fn stream_rng(seed: u64, stream: StreamId) -> StreamRng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream.raw());
    rng
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngCore;

    #[test]
    fn same_seed_and_stream_give_same_draws() {
        let id = StreamId::new(StreamKind::Mac, 3);
        let a: Vec<u64> = (0..4).map(|_| 0).scan(stream_rng(7, id), |r, _| Some(r.next_u64())).collect();
        let b: Vec<u64> = (0..4).map(|_| 0).scan(stream_rng(7, id), |r, _| Some(r.next_u64())).collect();
        assert_eq!(a, b);
    }

    #[test]
    fn streams_and_seeds_are_distinct() {
        let mut m3 = stream_rng(7, StreamId::new(StreamKind::Mac, 3));
        let mut m4 = stream_rng(7, StreamId::new(StreamKind::Mac, 4));
        let mut p3 = stream_rng(7, StreamId::new(StreamKind::Phy, 3));
        let mut s8 = stream_rng(8, StreamId::new(StreamKind::Mac, 3));
        let x = m3.next_u64();
        assert_ne!(x, m4.next_u64());
        assert_ne!(x, p3.next_u64());
        assert_ne!(x, s8.next_u64());
    }

    #[test]
    fn pair_stream_ignores_order() {
        assert_eq!(StreamId::pair(StreamKind::Shadowing, 2, 9), StreamId::pair(StreamKind::Shadowing, 9, 2));
        assert_ne!(StreamId::pair(StreamKind::Shadowing, 2, 9), StreamId::pair(StreamKind::Shadowing, 2, 8));
    }

    #[test]
    fn chacha_output_is_pinned() {
        // Guards the cross-machine contract: if a dependency update changed
        // the generator, every recorded result would silently change.
        let mut r = stream_rng(1, StreamId::new(StreamKind::Mac, 0));
        let first = r.next_u64();
        let mut again = stream_rng(1, StreamId::new(StreamKind::Mac, 0));
        assert_eq!(first, again.next_u64());
        assert_eq!(first, PINNED_FIRST_DRAW);
    }

    const PINNED_FIRST_DRAW: u64 = 16_211_689_357_093_010_036;
}
