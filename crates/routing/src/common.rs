//! What more than one engine does alike, written once.
//!
//! * [`jitter`]: the random wait of a control packet (RFC 5148), one draw
//!   rule for every engine; each chooses only its MAXJITTER.
//! * [`Outbox`]: the control packets an engine sends, each queued with the
//!   time it is due and handed out by `poll_transmit` in (due time, queue
//!   order); OLSR also queues the messages it forwards in one, to send
//!   together what is due together.
//! * [`seq_newer`]: sequence numbers that wrap around (RFC 3561 §6.1, RFC
//!   3626 §19).
//! * [`HeldPackets`]: the data packets a reactive protocol holds while it
//!   discovers a route (AODV's discovery buffer, ns-2 `aodv_rqueue`; DSR's
//!   send buffer, RFC 4728 §4.2): by the driver's id, oldest first, at most
//!   so many (a full buffer drops its oldest), for at most so long.

use crate::{NodeId, RoutingStats, Transmit};
use meshbed_core::{Duration, Instant, StreamRng};
use rand::Rng;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// The jitter of a control packet: uniform in [0, `max`], `max` included,
/// in whole nanoseconds from the engine's stream `rng` (no draw when `max`
/// is zero).
///
/// RFC 5148 §5 gives MANET protocols one rule: a jitter is a random value
/// uniformly distributed between 0 and MAXJITTER. A periodic message goes
/// out its interval minus a jitter after the previous one, never later, so
/// that a neighbour's hold time is not missed by jitter alone (§5.1); a
/// triggered or forwarded message waits a jitter (§5.2, §5.3), so that
/// neighbours that heard the same packet do not all send at once and
/// collide. Every engine draws here and chooses only its MAXJITTER: AODV's
/// `broadcast_jitter` (ns-2's 10 ms; also the start of its first HELLO
/// within HELLO_INTERVAL), DSR's BroadcastJitter (RFC 4728 §9: 10 ms),
/// OLSR's MAXJITTER (RFC 3626 §18: HELLO_INTERVAL / 4) and a tenth of the
/// ETX probe period.
///
/// The interval is closed, as RFC 5148 writes it and as DSR and OLSR drew
/// it. AODV alone drew from [0, max): a nanosecond less at most, but
/// another range, hence other numbers from the same stream.
pub(crate) fn jitter(rng: &mut StreamRng, max: Duration) -> Duration {
    if max.is_zero() {
        return Duration::ZERO;
    }
    Duration::from_nanos(rng.gen_range(0..=max.as_nanos()))
}

/// What an engine has to send, each item with the time it is due: now, or
/// later by a jitter. Items go out in (due time, queue order): a packet
/// queued now goes after the packets already due, before those still
/// waiting out their jitter.
///
/// An engine queues every control packet here and answers
/// [`RoutingEngine::poll_transmit`](crate::RoutingEngine::poll_transmit)
/// with [`Outbox::poll_transmit`]; its
/// [`RoutingEngine::poll_timeout`](crate::RoutingEngine::poll_timeout)
/// includes [`Outbox::next_due`], so a driver that drains the outbox after
/// each call and wakes at the deadline sends every packet when it is due.
#[derive(Clone, Debug)]
pub(crate) struct Outbox<T> {
    queue: BTreeMap<(Instant, u64), T>,
    queued: u64,
}

impl<T> Default for Outbox<T> {
    fn default() -> Self {
        Outbox { queue: BTreeMap::new(), queued: 0 }
    }
}

impl<T> Outbox<T> {
    /// Queues `item`, due at `due`.
    pub(crate) fn push(&mut self, due: Instant, item: T) {
        self.queue.insert((due, self.queued), item);
        self.queued += 1;
    }

    /// The first item due at `now`, if any.
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<T> {
        if self.queue.first_key_value()?.0 .0 > now {
            return None;
        }
        self.queue.pop_first().map(|(_, item)| item)
    }

    /// Every item due at `now`, in order.
    pub(crate) fn take_due(&mut self, now: Instant) -> Vec<T> {
        std::iter::from_fn(|| self.pop_due(now)).collect()
    }

    /// When the first item is due (it may be due already).
    pub(crate) fn next_due(&self) -> Option<Instant> {
        self.queue.first_key_value().map(|(&(due, _), _)| due)
    }
}

impl Outbox<Transmit> {
    /// The next control packet due at `now`, counted in `stats` as sent:
    /// an engine counts what it hands to the driver.
    pub(crate) fn poll_transmit(&mut self, now: Instant, stats: &mut RoutingStats) -> Option<Transmit> {
        let tx = self.pop_due(now)?;
        stats.control_packets_sent += 1;
        stats.control_bytes_sent += tx.bytes.len() as u64;
        Some(tx)
    }
}

/// A sequence number of `BITS` bits that wraps around.
pub(crate) trait SequenceNumber: Copy {
    /// `self − other` modulo 2^BITS, read as a signed integer of BITS bits.
    fn signed_distance(self, other: Self) -> i64;
}

macro_rules! sequence_number {
    ($($unsigned:ty => $signed:ty),*) => {$(
        impl SequenceNumber for $unsigned {
            fn signed_distance(self, other: Self) -> i64 {
                i64::from(self.wrapping_sub(other) as $signed)
            }
        }
    )*};
}

sequence_number!(u16 => i16, u32 => i32);

/// `a` is newer than `b`: `a − b`, modulo 2^n and read as a signed n-bit
/// integer, is positive. One rule for AODV's 32-bit destination sequence
/// numbers (RFC 3561 §6.1 states it this way) and OLSR's 16-bit ANSNs
/// (RFC 3626 §19 states it with comparisons): RFC 1982 §3.2's serial
/// number arithmetic, newer within half the circle ahead.
///
/// The two texts part only at exactly half the circle (2^(n−1) apart),
/// where RFC 1982 leaves the comparison undefined: the signed difference
/// makes neither number newer, RFC 3626 §19's comparisons (with
/// MAXVALUE/2 = 32767) the numerically smaller one. OLSR keeps the signed
/// difference too: a node's ANSN would have to change 32768 times within
/// a TC's hold time for the case to arise.
pub(crate) fn seq_newer<S: SequenceNumber>(a: S, b: S) -> bool {
    a.signed_distance(b) > 0
}

/// A data packet held for a route, by the driver's id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Held {
    pub(crate) id: u64,
    pub(crate) dst: NodeId,
    since: Instant,
}

/// The data packets held while routes are discovered, oldest first.
#[derive(Clone, Debug, Default)]
pub(crate) struct HeldPackets {
    held: VecDeque<Held>,
}

impl HeldPackets {
    pub(crate) fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Holds packet `id` for `dst` from `now`; if `capacity` packets are
    /// held already, the oldest makes room and is returned (ns-2
    /// `aodv_rqueue.cc`, DSR's send buffer: a full buffer drops its oldest
    /// packet).
    pub(crate) fn push(&mut self, now: Instant, id: u64, dst: NodeId, capacity: usize) -> Option<Held> {
        let dropped = if self.held.len() >= capacity { self.held.pop_front() } else { None };
        self.held.push_back(Held { id, dst, since: now });
        dropped
    }

    /// The `i`-th packet, oldest first.
    pub(crate) fn get(&self, i: usize) -> Option<&Held> {
        self.held.get(i)
    }

    /// Takes the `i`-th packet out.
    pub(crate) fn remove(&mut self, i: usize) -> Option<Held> {
        self.held.remove(i)
    }

    /// Takes, oldest first, the packets whose destination `next_hop` finds
    /// a next hop for, each with it. (Where releasing one packet may give
    /// the next its route, as a DSR source touching its route cache can, a
    /// caller walks the packets with [`HeldPackets::get`] and
    /// [`HeldPackets::remove`] instead.)
    pub(crate) fn take_routable(&mut self, next_hop: impl Fn(NodeId) -> Option<NodeId>) -> Vec<(Held, NodeId)> {
        let mut routable = Vec::new();
        let mut kept = VecDeque::new();
        while let Some(h) = self.held.pop_front() {
            match next_hop(h.dst) {
                Some(hop) => routable.push((h, hop)),
                None => kept.push_back(h),
            }
        }
        self.held = kept;
        routable
    }

    /// Takes every packet held for `dst`, oldest first.
    pub(crate) fn take_for(&mut self, dst: NodeId) -> Vec<Held> {
        let (taken, kept): (Vec<Held>, Vec<Held>) = self.held.drain(..).partition(|h| h.dst == dst);
        self.held = kept.into();
        taken
    }

    /// Takes the packets held `max_hold` or longer at `now`, oldest first.
    pub(crate) fn expire(&mut self, now: Instant, max_hold: Duration) -> Vec<Held> {
        let (expired, kept): (Vec<Held>, Vec<Held>) = self.held.drain(..).partition(|h| h.since + max_hold <= now);
        self.held = kept.into();
        expired
    }

    /// Whether a packet is held for `dst`.
    pub(crate) fn holds_for(&self, dst: NodeId) -> bool {
        self.held.iter().any(|h| h.dst == dst)
    }

    /// The destinations something is held for.
    pub(crate) fn destinations(&self) -> BTreeSet<NodeId> {
        self.held.iter().map(|h| h.dst).collect()
    }

    /// When the first packet will have been held `max_hold`.
    pub(crate) fn next_expiry(&self, max_hold: Duration) -> Option<Instant> {
        self.held.iter().map(|h| h.since + max_hold).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Dest;

    #[test]
    fn jitter_is_uniform_in_zero_to_max_with_both_ends() {
        let mut rng = crate::node_rng(1, 0);
        assert_eq!(jitter(&mut rng, Duration::ZERO), Duration::ZERO);
        // A MAXJITTER of 1 ns: both 0 and 1 ns come up, nothing else.
        let draws: BTreeSet<u64> = (0..64).map(|_| jitter(&mut rng, Duration::from_nanos(1)).as_nanos()).collect();
        assert_eq!(draws, BTreeSet::from([0, 1]));
        let max = Duration::from_millis(10);
        assert!((0..1000).all(|_| jitter(&mut rng, max) <= max));
    }

    #[test]
    fn outbox_hands_out_what_is_due_in_due_time_then_queue_order() {
        let mut o = Outbox::default();
        let tx = |b: u8| Transmit { dest: Dest::Broadcast, bytes: vec![b] };
        o.push(ms(5), tx(1));
        o.push(ms(2), tx(2));
        o.push(ms(2), tx(3));
        assert_eq!(o.next_due(), Some(ms(2)));
        let mut stats = RoutingStats::default();
        // Just before the first due time nothing goes.
        assert_eq!(o.poll_transmit(ms(2) - Duration::from_nanos(1), &mut stats), None);
        assert_eq!(o.poll_transmit(ms(2), &mut stats), Some(tx(2)));
        assert_eq!(o.poll_transmit(ms(2), &mut stats), Some(tx(3)));
        assert_eq!(o.poll_transmit(ms(2), &mut stats), None);
        assert_eq!((stats.control_packets_sent, stats.control_bytes_sent), (2, 2));
        o.push(ms(4), tx(4));
        assert_eq!(o.take_due(ms(9)), vec![tx(4), tx(1)]);
        assert_eq!(o.next_due(), None);
    }

    #[test]
    fn sequence_numbers_compare_across_wraparound() {
        assert!(seq_newer(1u32, u32::MAX));
        assert!(!seq_newer(u32::MAX, 1u32));
        assert!(!seq_newer(5u32, 5));
        assert!(seq_newer(1u16, 0));
        assert!(seq_newer(0u16, u16::MAX));
        assert!(!seq_newer(0u16, 1));
        assert!(!seq_newer(5u16, 5));
        // Boundary pairs: just under half the circle ahead is newer; at
        // half, neither is (RFC 1982 §3.2 leaves it undefined).
        assert!(seq_newer(0x7fffu16, 0));
        assert!(!seq_newer(0x8000u16, 0) && !seq_newer(0u16, 0x8000));
        assert!(seq_newer(0x7fff_ffffu32, 0));
        assert!(!seq_newer(0x8000_0000u32, 0) && !seq_newer(0u32, 0x8000_0000));
    }

    fn ms(n: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(n)
    }

    #[test]
    fn held_packets_drop_the_oldest_when_full_and_expire_at_their_hold_time() {
        let mut h = HeldPackets::default();
        assert_eq!(h.push(ms(0), 1, 7, 2), None);
        assert_eq!(h.push(ms(1), 2, 8, 2), None);
        assert_eq!(h.push(ms(2), 3, 7, 2).map(|d| d.id), Some(1), "full: the oldest goes");
        assert_eq!(h.next_expiry(Duration::from_millis(10)), Some(ms(11)));
        // Just inside the hold time, then at it.
        assert!(h.expire(ms(10), Duration::from_millis(10) + Duration::from_nanos(1)).is_empty());
        assert_eq!(h.expire(ms(11), Duration::from_millis(10)).iter().map(|d| d.id).collect::<Vec<_>>(), vec![2]);
        assert!(h.holds_for(7) && !h.holds_for(8));
        assert_eq!(h.take_for(7).iter().map(|d| d.id).collect::<Vec<_>>(), vec![3]);
        assert!(h.is_empty());
    }

    #[test]
    fn held_packets_release_in_order_those_with_a_route() {
        let mut h = HeldPackets::default();
        for (id, dst) in [(1, 5), (2, 6), (3, 5)] {
            h.push(ms(0), id, dst, 8);
        }
        let released = h.take_routable(|dst| (dst == 5).then_some(9));
        assert_eq!(released.iter().map(|(p, hop)| (p.id, *hop)).collect::<Vec<_>>(), vec![(1, 9), (3, 9)]);
        assert_eq!(h.destinations(), BTreeSet::from([6]));
        assert_eq!(h.get(0).map(|p| p.id), Some(2));
        assert_eq!(h.remove(0).map(|p| p.id), Some(2));
        assert!(h.is_empty());
    }
}
