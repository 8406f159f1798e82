//! The order a frame reaches its sender's neighbours in: the nearest first,
//! equal times in node order (the order the events always ran in). The
//! medium schedules a frame's arrivals in this order, which the event queue
//! keeps together as one sorted batch.
//!
//! Static nodes keep their neighbours, and the link budget keeps each
//! sender's list in this order (`LinkBudget::neighbours`), so a static
//! sender's order is the list's own: `0, 1, 2, …`, one slice for every
//! sender (issue 28: sorting every frame's arrivals was 7% of a grid's
//! run, and then an order kept beside each sender's list, 5 MB in a
//! 6400-node grid, a read of its own; the medium reads either kind of
//! order with the same code).
//! A moving sender's neighbours move, and come from the spatial grid in
//! cell order; but between two of its frames they move little, so its
//! next order starts from its last one and is usually sorted already,
//! which the sort checks in one pass (issue 28: sorting ~100 neighbours
//! from grid order for each frame was 6% of the instructions of the ATP
//! paper's 100-node network). Most often they even come in the same cell
//! order as at its last frame (the grid is rebuilt every 100 ms, and a
//! sender rarely changes cells or gains or loses a neighbour between two
//! frames): then its last order is checked against the new delays and,
//! when it still sorts them, handed out as it is (issue 28: making the
//! order afresh was 7% of a 100-node AODV run's instructions).

use crate::link::Neighbour;
use crate::NodeId;

/// A slot of `ArrivalOrders::slot_of` for a node that is not a neighbour.
const NOT_HERE: u32 = u32::MAX;

/// Each moving sender's arrival order, kept from frame to frame.
#[derive(Debug)]
pub(super) struct ArrivalOrders {
    /// Each sender's last frame: its neighbours then, as node ids in the
    /// order they came in, and their arrival order (indices into them).
    /// Empty while the nodes stay where they are.
    last: Vec<LastFrame>,
    /// `0, 1, 2, …`: a static sender's order, as long as the longest list
    /// asked about.
    in_place: Vec<u32>,
    /// The order being made: (delay, node) as one word, the index.
    keys: Vec<(u64, u32)>,
    /// A sender without a kept order (an id past the node count): the
    /// order handed out (indices into neighbours).
    order: Vec<u32>,
    /// Per node, its index among the sender's neighbours (`NOT_HERE`
    /// between frames).
    slot_of: Vec<u32>,
}

/// A moving sender's neighbours at its last frame, and their arrival
/// order.
#[derive(Debug, Default, Clone)]
struct LastFrame {
    nodes: Vec<NodeId>,
    order: Vec<u32>,
}

impl ArrivalOrders {
    pub(super) fn new(nodes: usize, moving: bool) -> Self {
        ArrivalOrders {
            last: if moving { vec![LastFrame::default(); nodes] } else { Vec::new() },
            in_place: Vec::new(),
            keys: Vec::new(),
            order: Vec::new(),
            slot_of: vec![NOT_HERE; nodes],
        }
    }

    /// The nodes move from now on.
    pub(super) fn set_moving(&mut self) {
        self.last = vec![LastFrame::default(); self.slot_of.len()];
    }

    /// The order a frame of `sender` reaches `neighbours` (its neighbours
    /// now, each node once, ids below the node count), as indices into
    /// `neighbours`. While the nodes stay where they are, their lists are
    /// in arrival order already: the order is the list's own.
    pub(super) fn order(&mut self, sender: NodeId, neighbours: &[Neighbour]) -> &[u32] {
        if self.last.is_empty() {
            debug_assert!(neighbours.is_sorted_by_key(Neighbour::arrival_key), "a static list in arrival order");
            let count = neighbours.len();
            if self.in_place.len() < count {
                self.in_place.extend(self.in_place.len() as u32..count as u32);
            }
            return &self.in_place[..count];
        }
        let Some(last) = self.last.get_mut(sender as usize) else {
            arrival_order(neighbours, &mut self.keys, &mut self.order);
            return &self.order;
        };
        // The same neighbours in the same order as at the last frame, and
        // the last order still sorts their delays: it is the order (keys
        // are distinct, so the sorted order is the only one).
        let same_nodes = last.nodes.len() == neighbours.len()
            && last.nodes.iter().zip(neighbours).all(|(&node, nb)| node == nb.node);
        if same_nodes && sorts(&last.order, neighbours) {
            return &last.order;
        }
        // The neighbours still there in their last order, then the new
        // ones: usually in order already.
        let slot_of = &mut self.slot_of;
        for (k, nb) in neighbours.iter().enumerate() {
            slot_of[nb.node as usize] = k as u32;
        }
        self.keys.clear();
        let keys = &mut self.keys;
        let mut take = |node: NodeId| {
            let k = std::mem::replace(&mut slot_of[node as usize], NOT_HERE);
            if k != NOT_HERE {
                keys.push((neighbours[k as usize].arrival_key(), k));
            }
        };
        last.order.iter().for_each(|&k| take(last.nodes[k as usize]));
        neighbours.iter().for_each(|nb| take(nb.node));
        debug_assert_eq!(keys.len(), neighbours.len(), "each neighbour once");
        sort_nearly_sorted(keys);
        if !same_nodes {
            last.nodes.clear();
            last.nodes.extend(neighbours.iter().map(|nb| nb.node));
        }
        last.order.clear();
        last.order.extend(keys.iter().map(|&(_, k)| k));
        &last.order
    }
}

/// Whether `order` (indices into `neighbours`, each once) puts their
/// arrival keys in increasing order.
fn sorts(order: &[u32], neighbours: &[Neighbour]) -> bool {
    let mut keys = order.iter().map(|&k| neighbours[k as usize].arrival_key());
    let Some(mut before) = keys.next() else { return true };
    keys.all(|key| {
        let sorted = before < key;
        before = key;
        sorted
    })
}

/// Sorts `keys` (distinct) by key, made for an input in order or nearly:
/// moving neighbours swap places a few at a time between two frames of a
/// sender (adjacent ones are a few metres apart and close in at up to
/// twice the top speed), and new ones come at the end. An insertion sort
/// costs a pass plus a step per place moved, where the library's sort
/// finds a sorted input in a pass but sorts one swap from scratch (most
/// frames in the ATP paper's network have one); past a few passes' worth
/// of moves (a sender's first frame) the library's sort takes over.
fn sort_nearly_sorted(keys: &mut [(u64, u32)]) {
    let budget = 4 * keys.len();
    let mut moved = 0;
    for i in 1..keys.len() {
        let mut j = i;
        while j > 0 && keys[j - 1].0 > keys[j].0 {
            keys.swap(j - 1, j);
            j -= 1;
        }
        moved += i - j;
        if moved > budget {
            keys.sort_unstable_by_key(|&(key, _)| key);
            return;
        }
    }
}

/// The order a frame reaches `neighbours` in, as indices into
/// `neighbours`, sorted from scratch.
fn arrival_order(neighbours: &[Neighbour], keys: &mut Vec<(u64, u32)>, order: &mut Vec<u32>) {
    keys.clear();
    keys.extend(neighbours.iter().enumerate().map(|(k, nb)| (nb.arrival_key(), k as u32)));
    keys.sort_unstable_by_key(|&(key, _)| key);
    order.clear();
    order.extend(keys.iter().map(|&(_, k)| k));
}

#[cfg(test)]
mod tests {
    use super::*;
    use meshbed_core::{stream_rng, Duration, StreamId, StreamKind};
    use proptest::strategy::Strategy;
    use rand::{seq::SliceRandom, Rng};

    /// Indices into `neighbours` sorted by (delay, node): what every
    /// order must be.
    fn expected(neighbours: &[Neighbour]) -> Vec<u32> {
        let mut expected: Vec<u32> = (0..neighbours.len() as u32).collect();
        expected.sort_by_key(|&k| (neighbours[k as usize].propagation_delay, neighbours[k as usize].node));
        expected
    }

    fn neighbour(node: NodeId, delay_ns: u64) -> Neighbour {
        Neighbour { node, mean_power_mw: 1e-9, propagation_delay: Duration::from_nanos(delay_ns) }
    }

    /// Receivers in time order, equal times in node order, whatever order
    /// the neighbours come in (a moving sender's come in grid order).
    #[test]
    fn arrivals_are_ordered_by_delay_then_node() {
        let mut rng = stream_rng(7, StreamId::new(StreamKind::Experiment, 0));
        let (mut keys, mut order) = (Vec::new(), Vec::new());
        for _ in 0..200 {
            let mut nodes: Vec<NodeId> = (0..64).collect();
            nodes.shuffle(&mut rng);
            nodes.truncate(rng.gen_range(1..=64));
            // Few distinct delays, so that ties are common.
            let neighbours: Vec<Neighbour> = nodes.iter().map(|&node| neighbour(node, rng.gen_range(0..4))).collect();
            arrival_order(&neighbours, &mut keys, &mut order);
            assert_eq!(order, expected(&neighbours));
        }
    }

    /// A moving sender's order, started from its last one, is the sorted
    /// order whatever changed since: delays moved a little or a lot,
    /// neighbours gone and new ones come, in any order; each sender keeps
    /// its own.
    #[test]
    fn a_moving_senders_order_from_its_last_is_the_sorted_order() {
        let mut rng = stream_rng(8, StreamId::new(StreamKind::Experiment, 0));
        let mut orders = ArrivalOrders::new(64, false);
        orders.set_moving();
        let mut delays: Vec<Vec<u64>> = (0..3).map(|_| (0..64).map(|_| rng.gen_range(0..2000)).collect()).collect();
        for step in 0..600 {
            let sender = step % 3;
            for d in delays[sender].iter_mut() {
                // Mostly small moves (few swaps), sometimes a jump.
                let jump = if rng.gen_bool(0.05) { 1000 } else { 20 };
                *d = (*d + rng.gen_range(0..jump)).saturating_sub(rng.gen_range(0..jump)) % 2000;
            }
            let mut nodes: Vec<NodeId> = (0..64).filter(|&n| n != sender as u32).collect();
            nodes.shuffle(&mut rng);
            nodes.truncate(rng.gen_range(40..=63));
            let neighbours: Vec<Neighbour> =
                nodes.iter().map(|&node| neighbour(node, delays[sender][node as usize])).collect();
            let order = orders.order(sender as NodeId, &neighbours).to_vec();
            assert_eq!(order, expected(&neighbours), "step {step}");
        }
        assert!(orders.slot_of.iter().all(|&s| s == NOT_HERE), "slots left set between frames");
    }

    /// A moving sender whose neighbours come in the same order frame
    /// after frame (the grid not rebuilt, no neighbour gained or lost):
    /// its last order is handed out while it still sorts their delays, and
    /// the sorted order is made again when two of them pass each other,
    /// the grid's order changes or a neighbour comes or goes.
    #[test]
    fn neighbours_in_their_last_order_get_the_sorted_order() {
        let mut rng = stream_rng(9, StreamId::new(StreamKind::Experiment, 0));
        let mut orders = ArrivalOrders::new(64, false);
        orders.set_moving();
        let mut nodes: Vec<NodeId> = (1..64).collect();
        nodes.shuffle(&mut rng);
        let mut delays: Vec<u64> = (0..64).map(|_| rng.gen_range(0..400)).collect();
        let mut reused = 0;
        for step in 0..2000 {
            // Light crosses 0.3 m a nanosecond: between two frames a few
            // delays change, by a little, and now and then two neighbours
            // pass each other.
            for _ in 0..rng.gen_range(0..4) {
                let d = &mut delays[rng.gen_range(0..64)];
                *d = (*d + rng.gen_range(0..20)).saturating_sub(rng.gen_range(0..20));
            }
            if rng.gen_bool(0.02) {
                nodes.shuffle(&mut rng);
            }
            let count = if rng.gen_bool(0.03) { rng.gen_range(50..=63) } else { 63 };
            let neighbours: Vec<Neighbour> =
                nodes[..count].iter().map(|&node| neighbour(node, delays[node as usize])).collect();
            let before = orders.last[0].order.clone();
            let order = orders.order(0, &neighbours).to_vec();
            assert_eq!(order, expected(&neighbours), "step {step}");
            reused += usize::from(order == before);
        }
        assert!(reused > 500, "the last order was handed out again only {reused} times");
    }

    proptest::proptest! {
        /// Any distinct keys, in order, nearly or not at all, come out
        /// sorted.
        #[test]
        fn nearly_sorted_keys_come_out_sorted(
            mut keys in proptest::collection::btree_set(0u64..5000, 0..300)
                .prop_map(|s| s.into_iter().map(|k| (k, (k % 7) as u32)).collect::<Vec<_>>()),
            swaps in proptest::collection::vec((0usize..300, 0usize..300), 0..40),
        ) {
            let sorted = keys.clone();
            let n = keys.len();
            for (a, b) in swaps.into_iter().filter(|_| n > 0) {
                keys.swap(a % n, b % n);
            }
            sort_nearly_sorted(&mut keys);
            proptest::prop_assert_eq!(keys, sorted);
        }
    }

    /// A static sender's list is its order (the link budget keeps it so),
    /// however long; once the nodes move, an order is made.
    #[test]
    fn a_static_senders_list_is_its_order() {
        let mut orders = ArrivalOrders::new(8, false);
        let sorted = vec![neighbour(2, 10), neighbour(7, 10), neighbour(5, 30)];
        assert_eq!(orders.order(0, &sorted), &[0, 1, 2]);
        assert_eq!(orders.order(1, &sorted[..1]), &[0]);
        let longer: Vec<Neighbour> = (0..6).map(|k| neighbour(k, 10 * u64::from(k))).collect();
        assert_eq!(orders.order(2, &longer), &[0, 1, 2, 3, 4, 5]);
        orders.set_moving();
        let neighbours = vec![neighbour(5, 30), neighbour(2, 10), neighbour(7, 10)];
        assert_eq!(orders.order(0, &neighbours), &[1, 2, 0]);
    }
}
