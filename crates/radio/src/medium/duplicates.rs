//! Receiver-side duplicate detection (ns-3 `MacRxMiddle`): a retransmitted
//! DATA frame whose ACK was lost must not be delivered twice.
//!
//! It owns the last sequence number heard from each transmitter; it is told
//! every DATA frame addressed to its node that was received correctly.

use super::NodeId;

#[derive(Default)]
pub(super) struct DuplicateCache {
    /// Last sequence number received from each transmitter, in first-heard order.
    last_seq_from: Vec<(NodeId, u16)>,
}

impl DuplicateCache {
    /// Records a DATA frame from `tx` and says whether it repeats the last
    /// one: the retry bit set and the same sequence number
    /// (IEEE 802.11-2016 §10.3.2.14).
    #[inline]
    pub fn is_duplicate(&mut self, tx: NodeId, seq: u16, retry: bool) -> bool {
        let dup = retry && self.last_seq_from.iter().any(|&(s, q)| s == tx && q == seq);
        match self.last_seq_from.iter_mut().find(|(s, _)| *s == tx) {
            Some(e) => e.1 = seq,
            None => self.last_seq_from.push((tx, seq)),
        }
        dup
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_retry_of_the_last_sequence_number_is_a_duplicate() {
        let mut c = DuplicateCache::default();
        assert!(!c.is_duplicate(1, 7, false));
        assert!(c.is_duplicate(1, 7, true), "retransmission of the frame just received");
        assert!(!c.is_duplicate(1, 7, false), "without the retry bit it is a new frame (sequence wrapped)");
        assert!(!c.is_duplicate(1, 8, true), "a retry of a frame never received is new");
        assert!(!c.is_duplicate(1, 7, true), "only the last number is remembered");
    }

    #[test]
    fn transmitters_are_tracked_apart() {
        let mut c = DuplicateCache::default();
        assert!(!c.is_duplicate(1, 3, false));
        assert!(!c.is_duplicate(2, 3, true), "the same number from another sender is new");
        assert!(c.is_duplicate(1, 3, true));
        assert!(c.is_duplicate(2, 3, true));
    }
}
