//! The static neighbour table: every sender's neighbours in one array,
//! each sender's in the order its frames reach them.
//!
//! A frame's arrivals are scheduled in arrival order (the nearest
//! receiver first, equal delays in node order: the order the events always
//! ran in). Kept in that order, a sender's list is read front to back as
//! its frame goes out, with no order of indices beside it; kept in one
//! array, the table is a few allocations the kernel can back with huge
//! pages (issue 28: a 6400-node grid's lists are 31 MB, read a sender at a
//! time all over at every frame).

use super::NodeId;
use meshbed_core::Duration;

/// A node that receives a transmitter's energy above the interference floor.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Neighbour {
    pub node: NodeId,
    /// Mean received power (path loss and shadowing, no fading).
    pub mean_power_mw: f64,
    pub propagation_delay: Duration,
}

impl Neighbour {
    /// This neighbour's place in the order a frame reaches its sender's
    /// neighbours, as one word: its delay, then its id (the nearest first,
    /// equal delays in node order: the order the arrival events always ran
    /// in).
    #[inline]
    pub fn arrival_key(&self) -> u64 {
        debug_assert!(self.propagation_delay.as_nanos() < 1 << 32, "light crosses any scenario in 4 s");
        self.propagation_delay.as_nanos() << 32 | u64::from(self.node)
    }
}

/// Every static sender's neighbours above the interference floor.
#[derive(Clone, Debug)]
pub(super) struct NeighbourTable {
    /// Sender by sender, each sender's in arrival order.
    all: Vec<Neighbour>,
    /// Where each sender's neighbours begin in `all`, and one past the
    /// last sender's end.
    start: Vec<usize>,
}

impl NeighbourTable {
    /// The table of `senders` senders, `find(sender, list)` pushing each
    /// sender's neighbours onto `list` in any order.
    pub(super) fn build(senders: usize, mut find: impl FnMut(usize, &mut Vec<Neighbour>)) -> Self {
        let mut all = Vec::new();
        let mut start = Vec::with_capacity(senders + 1);
        start.push(0);
        for sender in 0..senders {
            let from = all.len();
            find(sender, &mut all);
            all[from..].sort_unstable_by_key(Neighbour::arrival_key);
            start.push(all.len());
        }
        all.shrink_to_fit();
        meshbed_core::hint::move_to_huge_pages(&mut all);
        NeighbourTable { all, start }
    }

    /// `from`'s neighbours, in arrival order.
    #[inline]
    pub(super) fn of(&self, from: NodeId) -> &[Neighbour] {
        let from = from as usize;
        &self.all[self.start[from]..self.start[from + 1]]
    }

    /// How many senders the table has.
    pub(super) fn senders(&self) -> usize {
        self.start.len() - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn neighbour(node: NodeId, delay_ns: u64) -> Neighbour {
        Neighbour { node, mean_power_mw: f64::from(node), propagation_delay: Duration::from_nanos(delay_ns) }
    }

    /// Each sender gets exactly what was found for it, nearest first and
    /// equal delays in node order, empty lists included.
    #[test]
    fn each_sender_gets_its_own_in_arrival_order() {
        let found: Vec<Vec<Neighbour>> = vec![
            vec![neighbour(5, 30), neighbour(2, 10), neighbour(7, 10), neighbour(1, 20)],
            vec![],
            vec![neighbour(0, 3)],
            vec![neighbour(9, 8), neighbour(3, 8)],
        ];
        let table = NeighbourTable::build(found.len(), |sender, list| list.extend(found[sender].iter().copied()));
        assert_eq!(table.senders(), 4);
        let nodes = |from: NodeId| table.of(from).iter().map(|nb| nb.node).collect::<Vec<_>>();
        assert_eq!(nodes(0), [2, 7, 1, 5]);
        assert_eq!(nodes(1), [] as [NodeId; 0]);
        assert_eq!(nodes(2), [0]);
        assert_eq!(nodes(3), [3, 9]);
        assert!(table.of(0).iter().all(|nb| nb.mean_power_mw == f64::from(nb.node)), "each entry kept whole");
    }
}
