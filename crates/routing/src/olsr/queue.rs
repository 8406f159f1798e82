//! OLSR's flooding bookkeeping (RFC 3626 §3.4): the duplicate set, so that
//! a message is processed and retransmitted at most once. The messages
//! waiting out their forwarding jitter (§3.5) are an
//! [`Outbox`](crate::common::Outbox) of the engine's, emptied into one
//! packet when due; its tests are here.

use crate::NodeId;
use meshbed_core::{Duration, Instant};
use std::collections::HashMap;

/// RFC 3626 §3.4 duplicate tuple.
#[derive(Clone, Debug)]
struct Duplicate {
    until: Instant,
    retransmitted: bool,
}

/// The duplicate set, keyed by (originator, message sequence number).
#[derive(Clone, Debug, Default)]
pub(super) struct DuplicateSet {
    /// A hash map: every TC heard is looked up here, and a tree of ~600
    /// tuples per node cost several cache misses a lookup (issue 28: a
    /// twentieth of the ATP paper's network over OLSR). Its order is never
    /// read (only `retain` and a minimum), so the per-process random seed,
    /// which keeps crafted keys from colliding, changes no result.
    tuples: HashMap<(NodeId, u16), Duplicate, foldhash::fast::RandomState>,
    /// No tuple expires before this (a lower bound: a refresh only moves
    /// a tuple's time later), so that `expire` skips the scan until then.
    earliest: Option<Instant>,
}

/// How long an expired tuple may stay in the set before a scan removes it:
/// `seen` and `record` treat it as gone from its time on, so the set
/// behaves as if removed at once, and one scan per second at most removes
/// what expired meanwhile (issue 28: a scan of the ~600 tuples each time
/// the earliest one expired, nearly every control packet in a 100-node
/// network, was a twentieth of an OLSR run).
const PURGE_AFTER: Duration = Duration::from_secs(1);

impl DuplicateSet {
    /// `None` if the message was not seen (or its tuple expired by
    /// `now`), else whether it was retransmitted.
    #[cfg(test)]
    pub(super) fn seen(&self, now: Instant, originator: NodeId, seq: u16) -> Option<bool> {
        self.tuples.get(&(originator, seq)).filter(|d| d.until > now).map(|d| d.retransmitted)
    }

    /// Records the message as seen until `until`, and as retransmitted if
    /// `retransmitted` (once retransmitted, always, while its tuple lasts).
    #[cfg(test)]
    pub(super) fn record(&mut self, now: Instant, originator: NodeId, seq: u16, until: Instant, retransmitted: bool) {
        self.see(now, originator, seq, until, |_| retransmitted);
    }

    /// `seen`, then `record` with what
    /// `retransmit` decides from it, in one lookup: every TC heard is looked
    /// up (about 1.3 million in the ATP paper's 100 s network over OLSR,
    /// most of them duplicates; issue 28). Returns what `seen` gives and
    /// the decision.
    pub(super) fn see(
        &mut self,
        now: Instant,
        originator: NodeId,
        seq: u16,
        until: Instant,
        retransmit: impl FnOnce(Option<bool>) -> bool,
    ) -> (Option<bool>, bool) {
        // A new tuple starts expired: not seen, not retransmitted.
        let dup = self.tuples.entry((originator, seq)).or_insert(Duplicate { until: now, retransmitted: false });
        let seen = (dup.until > now).then_some(dup.retransmitted);
        if seen.is_none() {
            // Expired, not yet removed: a new tuple.
            dup.retransmitted = false;
        }
        let retransmitted = retransmit(seen);
        dup.until = until;
        dup.retransmitted |= retransmitted;
        self.earliest = Some(self.earliest.map_or(until, |e| e.min(until)));
        (seen, retransmitted)
    }

    /// Drops expired tuples: a scan only once one expired at least
    /// [`PURGE_AFTER`] ago (until then they count as gone, see `seen`).
    pub(super) fn expire(&mut self, now: Instant) {
        if self.earliest.is_none_or(|e| e + PURGE_AFTER > now) {
            return;
        }
        self.tuples.retain(|_, d| d.until > now);
        self.earliest = self.tuples.values().map(|d| d.until).min();
    }
}

#[cfg(test)]
mod tests {
    use super::super::packet::{Body, HelloEntry, Packet, MPR_NEIGH, SYM_LINK, SYM_NEIGH};
    use super::super::testing::{make, packet};
    use super::super::{
        encode_vtime, OlsrConfig, OlsrEngine, Route, HELLO_INTERVAL, MAXJITTER, METRIC_UNIT, WILL_DEFAULT,
    };
    use crate::harness::Net;
    use crate::{NodeId, RouteEvent, RoutingEngine};
    use meshbed_core::{Duration, Instant};

    fn grid_links(w: u32, h: u32) -> Vec<(NodeId, NodeId)> {
        let mut links = Vec::new();
        for y in 0..h {
            for x in 0..w {
                let n = y * w + x;
                if x + 1 < w {
                    links.push((n, n + 1));
                }
                if y + 1 < h {
                    links.push((n, n + w));
                }
            }
        }
        links
    }

    fn tc_retransmissions_on_grid(mpr_flooding: bool) -> (u64, u64) {
        let config = OlsrConfig { mpr_flooding, ..OlsrConfig::default() };
        let mut net = Net::new(25, &grid_links(5, 5), make(config));
        net.run_for(Duration::from_secs(60));
        for a in 0..25 {
            assert_eq!(net.engines[a].routes().len(), 24, "node {a} lacks routes (mpr_flooding {mpr_flooding})");
        }
        let retransmitted = net.engines.iter().map(|e| e.tc_retransmissions()).sum();
        (retransmitted, net.control_sent.iter().sum())
    }

    /// Once retransmitted, a message stays marked while its tuple lasts,
    /// whatever later copies decide (RFC 3626 §3.4.1: a message is
    /// retransmitted at most once); a new tuple starts unmarked.
    #[test]
    fn a_refresh_keeps_the_retransmitted_mark() {
        let at = |ms: u64| Instant::ZERO + Duration::from_millis(ms);
        let mut dups = super::DuplicateSet::default();
        assert_eq!(dups.see(at(0), 4, 2, at(100), |seen| seen.is_none()), (None, true));
        assert_eq!(dups.see(at(10), 4, 2, at(120), |_| false), (Some(true), false));
        assert_eq!(dups.seen(at(119), 4, 2), Some(true), "refreshed to 120 ms, still marked");
        assert_eq!(dups.see(at(130), 4, 2, at(200), |_| false), (None, false), "expired: a new tuple");
        assert_eq!(dups.seen(at(150), 4, 2), Some(false));
    }

    /// A duplicate tuple lasts until its time, a refresh moves that time
    /// (later or earlier), and the retransmitted mark stays (RFC 3626 §3.4);
    /// an expired tuple counts as gone at once, whether or not a scan has
    /// removed it yet, and is removed by the first scan a second later.
    #[test]
    fn duplicates_expire_at_their_latest_time() {
        let at = |ms: u64| Instant::ZERO + Duration::from_millis(ms);
        let mut dups = super::DuplicateSet::default();
        dups.record(at(0), 1, 7, at(100), false);
        dups.record(at(0), 2, 7, at(50), true);
        dups.record(at(0), 3, 9, at(300), false);
        // Refreshed: 1's until 200, 3's until 80.
        dups.record(at(10), 1, 7, at(200), false);
        dups.record(at(10), 3, 9, at(80), false);
        let seen = |dups: &super::DuplicateSet, ms| {
            (dups.seen(at(ms), 1, 7), dups.seen(at(ms), 2, 7), dups.seen(at(ms), 3, 9))
        };
        for expire in [false, true] {
            let mut dups = dups.clone();
            let mut check = |ms, expected| {
                if expire {
                    dups.expire(at(ms));
                }
                assert_eq!(seen(&dups, ms), expected, "at {ms} ms (scanned: {expire})");
            };
            check(49, (Some(false), Some(true), Some(false)));
            check(50, (Some(false), None, Some(false)));
            check(150, (Some(false), None, None));
        }
        // Expired (at 50 ms) but not yet removed: recorded again, it is a
        // new tuple, not retransmitted.
        dups.record(at(150), 2, 7, at(400), false);
        assert_eq!(dups.seen(at(150), 2, 7), Some(false));
        dups.record(at(150), 1, 7, at(250), true);
        dups.expire(at(200));
        assert_eq!(dups.seen(at(200), 1, 7), Some(true), "1 refreshed to 250 ms, and retransmitted");
        assert_eq!(dups.seen(at(250), 1, 7), None);
        dups.expire(at(1049));
        assert_eq!(dups.tuples.len(), 3, "nothing expired a second ago yet (the first at 50 ms)");
        dups.expire(at(1050));
        assert!(dups.tuples.is_empty(), "the scan removes all that expired");
    }

    #[test]
    fn mpr_flooding_retransmits_fewer_tcs_than_pure_flooding_on_a_grid() {
        let (mpr, mpr_packets) = tc_retransmissions_on_grid(true);
        let (pure, pure_packets) = tc_retransmissions_on_grid(false);
        assert!(mpr > 0);
        assert!(mpr < pure, "MPR {mpr} vs pure {pure} TC retransmissions");
        assert!(mpr_packets < pure_packets, "MPR {mpr_packets} vs pure {pure_packets} control packets");
    }

    /// Node 0 with a symmetric neighbour 1 that has chosen it as MPR and
    /// has a symmetric neighbour 7.
    fn node_0_with_mpr_selector_1() -> OlsrEngine {
        let mut e = make(OlsrConfig::default())(0);
        let entry =
            |neighbour, neigh_type| HelloEntry { neighbour, link_code: (neigh_type << 2) | SYM_LINK, metric: 256 };
        let hello = Body::Hello {
            htime: encode_vtime(HELLO_INTERVAL),
            willingness: WILL_DEFAULT,
            neighbours: vec![entry(0, MPR_NEIGH), entry(7, SYM_NEIGH)],
        };
        e.handle_control(Instant::ZERO, 1, -60.0, &packet(1, 1, 0, hello));
        assert_eq!(e.symmetric_neighbours(), vec![1]);
        assert_eq!(e.routes()[&7].hop_count, 2);
        e
    }

    fn tc(ansn: u16, advertised: &[NodeId]) -> Body {
        Body::Tc { ansn, advertised: advertised.iter().map(|&n| (n, 256)).collect() }
    }

    #[test]
    fn tc_processing_keeps_the_newest_ansn_and_forwards_once_for_mpr_selectors() {
        let mut e = node_0_with_mpr_selector_1();
        let t = Instant::from_nanos(1_000_000);
        // Packets that carry forwarded messages (from originator 7), and
        // those messages.
        let forwarded = |e: &mut OlsrEngine, at: Instant| {
            let packets: Vec<_> = std::iter::from_fn(|| e.poll_transmit(at))
                .map(|tx| Packet::parse(&tx.bytes).expect("valid").messages)
                .filter(|ms| ms.iter().any(|m| m.originator == 7))
                .collect();
            (packets.len(), packets.concat())
        };
        while e.poll_transmit(t).is_some() {}
        e.handle_control(t, 1, -60.0, &packet(7, 254, 10, tc(5, &[8])));
        assert_eq!(e.routes()[&8], Route { next_hop: 1, hop_count: 3, metric: 3 * METRIC_UNIT });
        // Retransmitted once, after its jitter, with TTL − 1 and hop count + 1.
        let due = e.poll_timeout().expect("forward timer");
        assert!(due <= t + MAXJITTER);
        e.handle_timeout(t + MAXJITTER);
        let (_, fwd_tcs) = forwarded(&mut e, t + MAXJITTER);
        assert_eq!(fwd_tcs.len(), 1);
        assert_eq!((fwd_tcs[0].originator, fwd_tcs[0].ttl, fwd_tcs[0].hop_count, fwd_tcs[0].seq), (7, 253, 1, 10));
        // The same message again: neither processed nor retransmitted.
        e.handle_control(t, 1, -60.0, &packet(7, 254, 10, tc(9, &[9])));
        assert!(!e.routes().contains_key(&9));
        // An older ANSN in a new message is ignored (RFC 3626 §9.5 step 2).
        e.handle_control(t, 1, -60.0, &packet(7, 254, 11, tc(4, &[9])));
        assert!(!e.routes().contains_key(&9));
        assert!(e.routes().contains_key(&8));
        // A newer one replaces the old tuples: 8 is lost, 9 found.
        e.handle_control(t, 1, -60.0, &packet(7, 254, 12, tc(6, &[9])));
        assert!(e.routes().contains_key(&9));
        assert!(!e.routes().contains_key(&8));
        let events: Vec<_> = std::iter::from_fn(|| e.poll_event()).collect();
        assert!(events.contains(&RouteEvent::Lost { dst: 8 }));
        e.handle_timeout(t + MAXJITTER + MAXJITTER);
        let (packets, messages) = forwarded(&mut e, t + MAXJITTER + MAXJITTER);
        assert_eq!(packets, 1, "the two new messages piggybacked in one packet");
        let mut seqs: Vec<_> = messages.iter().map(|m| m.seq).collect();
        seqs.sort();
        assert_eq!(seqs, vec![11, 12]);
        // A TTL of 1 is not retransmitted; a TC from a non-neighbour is not
        // processed.
        e.handle_control(t, 1, -60.0, &packet(7, 1, 13, tc(7, &[9, 10])));
        e.handle_control(t, 3, -60.0, &packet(7, 254, 14, tc(8, &[11])));
        assert!(e.routes().contains_key(&10));
        assert!(!e.routes().contains_key(&11));
        e.handle_timeout(t + MAXJITTER * 3);
        assert_eq!(forwarded(&mut e, t + MAXJITTER * 3).0, 0);
    }
}
