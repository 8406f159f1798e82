//! The bytes a receiver holds beyond a hole, and what they cost in memory.
//!
//! Both receivers (ATP's cumulative ack, TCP's `rcv_nxt`) keep data that
//! arrived out of order until the hole before it is filled. A peer decides
//! what arrives, so the store must be bounded by the memory it really uses,
//! not by the bytes alone: a million one-byte pieces cost far more than a
//! megabyte (issue 9 item 2 measured ~129 bytes of memory per byte held).
//! [`ReorderBuffer`] therefore *charges* each held piece its bytes (the
//! allocation's capacity) plus [`PIECE_OVERHEAD`], refuses whatever would
//! take the charge beyond its limit, and never refuses bytes that continue
//! the in-order stream (they free memory rather than take it).
//!
//! Pieces never overlap. A piece that starts exactly where the previous one
//! ends is appended to it (the common case: everything after one hole), so
//! a long run costs one allocation; a piece arriving just *before* another
//! stays separate, because joining it would copy the later piece and a peer
//! could make every arrival copy megabytes. [`ReorderBuffer::ranges`] joins
//! touching pieces when it reports what is held.
//!
//! The limit is set by whoever owns the memory: an engine's configuration
//! bounds it, and a driver running many connections may lower it before
//! each input ([`ReorderBuffer::set_limit`]) to share one budget.

use std::collections::BTreeMap;

/// What one held piece costs beyond its bytes: its map entry (key, vector
/// header, B-tree node share) and the allocator's chunk header and rounding.
/// Measured on x86-64 glibc, a one-byte piece costs about 100 bytes; 128 is
/// rounded up so that the charge never undercounts.
pub const PIECE_OVERHEAD: u64 = 128;

/// What [`ReorderBuffer::offer`] did with some data.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Offer {
    /// Every byte was already delivered or held.
    Duplicate,
    /// Holding the new bytes would take the charge beyond the limit: nothing
    /// was stored (the sender retransmits them like a loss).
    OverLimit,
    /// New bytes were taken; `delivered` bytes became in order and were
    /// handed out (zero when everything was held).
    Accepted { delivered: u64 },
}

/// Out-of-order bytes beyond a receiver's next expected byte, charged for
/// the memory they take. See the module doc.
#[derive(Clone, Debug)]
pub struct ReorderBuffer {
    /// Held pieces, start → bytes; non-overlapping, possibly touching.
    pieces: BTreeMap<u64, Vec<u8>>,
    held_bytes: u64,
    /// Σ (capacity + [`PIECE_OVERHEAD`]) over the pieces.
    charge: u64,
    limit: u64,
}

impl ReorderBuffer {
    pub fn new(limit: u64) -> Self {
        ReorderBuffer { pieces: BTreeMap::new(), held_bytes: 0, charge: 0, limit }
    }

    /// The most the held pieces may be charged. A limit below the current
    /// charge holds nothing new until deliveries bring the charge down;
    /// nothing held is dropped.
    pub fn set_limit(&mut self, limit: u64) {
        self.limit = limit;
    }
    pub fn limit(&self) -> u64 {
        self.limit
    }
    /// What the held pieces are charged: bytes allocated plus
    /// [`PIECE_OVERHEAD`] per piece.
    pub fn charge(&self) -> u64 {
        self.charge
    }
    /// Bytes held.
    pub fn held_bytes(&self) -> u64 {
        self.held_bytes
    }
    /// Pieces held (each charged [`PIECE_OVERHEAD`]).
    pub fn pieces(&self) -> usize {
        self.pieces.len()
    }
    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }
    /// The end of the highest byte held.
    pub fn end(&self) -> Option<u64> {
        self.pieces.last_key_value().map(|(&s, v)| s + v.len() as u64)
    }

    /// Held byte ranges `[start, end)` in order, touching pieces joined
    /// (what SACK blocks report).
    pub fn ranges(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let mut pieces = self.pieces.iter().map(|(&s, v)| (s, s + v.len() as u64)).peekable();
        std::iter::from_fn(move || {
            let (start, mut end) = pieces.next()?;
            while let Some(&(s, e)) = pieces.peek() {
                if s != end {
                    break;
                }
                end = e;
                pieces.next();
            }
            Some((start, end))
        })
    }

    /// The parts of `[start, end)` not held, in order.
    fn gaps(&self, start: u64, end: u64) -> Vec<(u64, u64)> {
        let overlapping: Vec<(u64, u64)> = self
            .pieces
            .range(..end)
            .rev()
            .map(|(&s, v)| (s, s + v.len() as u64))
            .take_while(|&(_, e)| e > start)
            .collect();
        let mut gaps = Vec::new();
        let mut cursor = start;
        for &(s, e) in overlapping.iter().rev() {
            if s > cursor {
                gaps.push((cursor, s));
            }
            cursor = cursor.max(e);
        }
        if cursor < end {
            gaps.push((cursor, end));
        }
        gaps
    }

    /// Offers `data`, which starts at sequence number `seq`, to a receiver
    /// whose next in-order byte is `next`. Bytes before `next` are old. If
    /// new bytes start at `next`, they and every held piece they reach are
    /// handed to `deliver` in order (never refused); otherwise the new bytes
    /// are held if the charge stays within the limit, else none of them is.
    pub fn offer(&mut self, next: u64, seq: u64, data: &[u8], mut deliver: impl FnMut(&[u8])) -> Offer {
        let Some(end) = seq.checked_add(data.len() as u64) else {
            return Offer::Duplicate;
        };
        let start = seq.max(next);
        if end <= start {
            return Offer::Duplicate;
        }
        let gaps = self.gaps(start, end);
        if gaps.is_empty() {
            return Offer::Duplicate;
        }
        if start == next {
            deliver(&data[(start - seq) as usize..]);
            let mut cursor = end;
            while let Some(entry) = self.pieces.first_entry() {
                if *entry.key() > cursor {
                    break;
                }
                let (s, bytes) = entry.remove_entry();
                self.held_bytes -= bytes.len() as u64;
                self.charge -= bytes.capacity() as u64 + PIECE_OVERHEAD;
                let piece_end = s + bytes.len() as u64;
                if piece_end > cursor {
                    deliver(&bytes[(cursor - s) as usize..]);
                    cursor = piece_end;
                }
            }
            return Offer::Accepted { delivered: cursor - next };
        }
        let costs: Vec<u64> = gaps.iter().map(|&(s, e)| self.cost(s, e - s)).collect();
        let mut needed: u64 = costs.iter().sum();
        if self.charge.saturating_add(needed) > self.limit {
            return Offer::OverLimit;
        }
        for ((s, e), cost) in gaps.into_iter().zip(costs) {
            needed -= cost;
            // Room for growing an appended piece's allocation ahead of need,
            // beyond what the rest of this offer takes.
            let spare = self.limit.saturating_sub(self.charge + cost + needed);
            self.hold(s, &data[(s - seq) as usize..(e - seq) as usize], spare);
        }
        Offer::Accepted { delivered: 0 }
    }

    /// The piece that ends exactly at `s`, which bytes at `s` extend.
    fn piece_ending_at(&mut self, s: u64) -> Option<&mut Vec<u8>> {
        let (&start, v) = self.pieces.range_mut(..s).next_back()?;
        (start + v.len() as u64 == s).then_some(v)
    }

    /// What holding `len` new bytes at `s` adds to the charge at least.
    fn cost(&self, s: u64, len: u64) -> u64 {
        match self.pieces.range(..s).next_back() {
            Some((&start, v)) if start + v.len() as u64 == s => len.saturating_sub((v.capacity() - v.len()) as u64),
            _ => len + PIECE_OVERHEAD,
        }
    }

    /// Stores `bytes` (not held, not touching the in-order point) at `s`:
    /// appended to the piece that ends at `s`, else as a new piece.
    fn hold(&mut self, s: u64, bytes: &[u8], spare: u64) {
        self.held_bytes += bytes.len() as u64;
        match self.piece_ending_at(s) {
            Some(v) => {
                let before = v.capacity();
                if before - v.len() < bytes.len() {
                    // Grow geometrically, so that a run of appends copies each
                    // byte O(1) times, but never beyond the limit.
                    let slack = (v.len() as u64).min(spare) as usize;
                    v.reserve_exact(bytes.len() + slack);
                }
                v.extend_from_slice(bytes);
                let grown = (v.capacity() - before) as u64;
                self.charge += grown;
            }
            None => {
                let v = bytes.to_vec();
                self.charge += v.capacity() as u64 + PIECE_OVERHEAD;
                self.pieces.insert(s, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(buf: &mut ReorderBuffer, next: u64, seq: u64, data: &[u8]) -> (Offer, Vec<u8>) {
        let mut out = Vec::new();
        let offer = buf.offer(next, seq, data, |b| out.extend_from_slice(b));
        (offer, out)
    }

    #[test]
    fn holds_beyond_a_hole_and_delivers_when_it_fills() {
        let mut b = ReorderBuffer::new(u64::MAX);
        assert_eq!(collect(&mut b, 0, 4, b"efgh"), (Offer::Accepted { delivered: 0 }, vec![]));
        assert_eq!(collect(&mut b, 0, 8, b"ij"), (Offer::Accepted { delivered: 0 }, vec![]));
        // Appended to the piece before it: one piece, one range.
        assert_eq!((b.pieces(), b.ranges().collect::<Vec<_>>()), (1, vec![(4, 10)]));
        // Just before a held piece: separate piece, joined in the ranges.
        assert_eq!(collect(&mut b, 0, 2, b"cd").0, Offer::Accepted { delivered: 0 });
        assert_eq!((b.pieces(), b.ranges().collect::<Vec<_>>()), (2, vec![(2, 10)]));
        assert_eq!(collect(&mut b, 0, 4, b"ef").0, Offer::Duplicate);
        assert_eq!(b.held_bytes(), 8);
        // The hole fills: everything comes out in order.
        let (offer, out) = collect(&mut b, 0, 0, b"abc");
        assert_eq!((offer, out.as_slice()), (Offer::Accepted { delivered: 10 }, &b"abcdefghij"[..]));
        assert!(b.is_empty());
        assert_eq!((b.charge(), b.held_bytes()), (0, 0));
        // Bytes before `next` are old.
        assert_eq!(collect(&mut b, 10, 5, b"fghij").0, Offer::Duplicate);
    }

    #[test]
    fn partly_new_data_fills_only_the_gaps() {
        let mut b = ReorderBuffer::new(u64::MAX);
        collect(&mut b, 0, 3, b"D");
        collect(&mut b, 0, 6, b"G");
        // [2, 8) overlaps both: only 2, 4–5 and 7 are new.
        assert_eq!(collect(&mut b, 0, 2, b"cdefgh").0, Offer::Accepted { delivered: 0 });
        assert_eq!(b.ranges().collect::<Vec<_>>(), vec![(2, 8)]);
        assert_eq!(b.held_bytes(), 6);
        let (_, out) = collect(&mut b, 0, 0, b"ab");
        // Held bytes win over a later copy of the same range.
        assert_eq!(out, b"abcDefGh");
    }

    #[test]
    fn the_charge_counts_pieces_and_refuses_beyond_the_limit_but_never_in_order_data() {
        // Room for exactly two one-byte pieces.
        let mut b = ReorderBuffer::new(2 * (1 + PIECE_OVERHEAD));
        assert_eq!(collect(&mut b, 0, 2, b"x").0, Offer::Accepted { delivered: 0 });
        assert_eq!(collect(&mut b, 0, 4, b"y").0, Offer::Accepted { delivered: 0 });
        assert_eq!(b.charge(), 2 * (1 + PIECE_OVERHEAD));
        assert_eq!(collect(&mut b, 0, 6, b"z").0, Offer::OverLimit);
        assert_eq!(b.pieces(), 2);
        // In-order data is taken even at the limit, and frees what it reaches.
        let (offer, out) = collect(&mut b, 0, 0, b"ab");
        assert_eq!((offer, out.as_slice()), (Offer::Accepted { delivered: 3 }, &b"abx"[..]));
        assert_eq!(b.charge(), 1 + PIECE_OVERHEAD);
        assert_eq!(collect(&mut b, 3, 6, b"z").0, Offer::Accepted { delivered: 0 });
    }

    #[test]
    fn appends_never_grow_past_the_limit() {
        let limit = 10_000;
        let mut b = ReorderBuffer::new(limit);
        let mut seq = 1;
        loop {
            match collect(&mut b, 0, seq, &[7; 100]).0 {
                Offer::Accepted { .. } => seq += 100,
                Offer::OverLimit => break,
                Offer::Duplicate => unreachable!(),
            }
            assert!(b.charge() <= limit, "{} > {limit}", b.charge());
        }
        assert_eq!(b.pieces(), 1);
        assert!(b.held_bytes() + PIECE_OVERHEAD + 100 > limit, "filled up to the limit: {}", b.held_bytes());
        // A lowered limit holds nothing new but drops nothing held.
        b.set_limit(0);
        assert_eq!(collect(&mut b, 0, seq + 50, b"q").0, Offer::OverLimit);
        assert_eq!(collect(&mut b, 0, 0, b"a").0, Offer::Accepted { delivered: seq });
    }

    #[test]
    fn one_byte_pieces_at_every_other_offset_stop_at_the_limit() {
        let limit = 1 << 20;
        let mut b = ReorderBuffer::new(limit);
        let mut refused = 0;
        for k in 0..100_000u64 {
            if collect(&mut b, 0, 2 * k + 1, b"p").0 == Offer::OverLimit {
                refused += 1;
            }
        }
        assert!(b.charge() <= limit);
        assert_eq!(b.pieces() as u64, limit / (1 + PIECE_OVERHEAD));
        assert_eq!(refused, 100_000 - b.pieces());
    }
}
