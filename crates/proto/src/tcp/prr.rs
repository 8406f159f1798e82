//! Proportional Rate Reduction (RFC 6937), the window of a SACK sender in
//! loss recovery as Linux runs it (`tcp_cwnd_reduction` in `tcp_input.c`),
//! behind [`TcpConfig::prr`](super::TcpConfig::prr).
//!
//! RFC 6675 as written sets cwnd to ssthresh when recovery begins and
//! sends only while pipe is below it: after heavy loss the sender waits
//! for the pipe to drain, and with a window of a few segments the ACKs
//! that would let it send may never come, so the retransmission timer
//! ends the recovery. PRR instead spreads the reduction over the recovery:
//! while pipe is above ssthresh it sends `ssthresh / RecoverFS` of what the
//! receiver reports delivered, and below ssthresh it grows back towards
//! ssthresh no faster than slow start (the slow start reduction bound,
//! SSRB, RFC 6937 §3.1's recommended variant and Linux's).
//!
//! All quantities are segments, as in Linux (which counts packets) and
//! RFC 6937's examples: counted in bytes, the proportional step would let
//! out half a segment per delivered one, which the sending rule (a whole
//! segment of room) never sends. The rule has no clock.

/// One recovery's PRR state (RFC 6937 §3.1's variables, in segments).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prr {
    /// RecoverFS: the flight when recovery began (snd.nxt − snd.una).
    recover_fs: u64,
    /// prr_delivered: segments the receiver reported delivered in recovery.
    delivered: u64,
    /// prr_out: segments sent in recovery.
    out: u64,
}

impl Prr {
    /// Recovery begins with `flight` segments outstanding.
    pub fn new(flight: u64) -> Self {
        // A zero flight cannot start a recovery; 1 keeps the ratio defined.
        Prr { recover_fs: flight.max(1), delivered: 0, out: 0 }
    }

    /// RFC 6937 §3.1, on every ACK in recovery: `delivered` is
    /// DeliveredData (the cumulative ACK's advance plus the change in SACKed
    /// data), `pipe` RFC 6675's pipe after the ACK, `ssthresh` the
    /// controller's. Returns cwnd (pipe + sndcnt): the sender sends while
    /// a segment fits under it.
    pub fn on_ack(&mut self, delivered: u64, pipe: u64, ssthresh: u64) -> u64 {
        self.delivered += delivered;
        let sndcnt = if pipe > ssthresh {
            // Proportional: CEIL(prr_delivered · ssthresh / RecoverFS) − prr_out.
            let target = (u128::from(self.delivered) * u128::from(ssthresh)).div_ceil(u128::from(self.recover_fs));
            (target.min(u128::from(u64::MAX)) as u64).saturating_sub(self.out)
        } else {
            // SSRB: MIN(ssthresh − pipe, MAX(prr_delivered − prr_out, DeliveredData) + 1).
            let limit = self.delivered.saturating_sub(self.out).max(delivered) + 1;
            (ssthresh - pipe).min(limit)
        };
        pipe + sndcnt
    }

    /// RFC 6937 §3.1: `prr_out += (data sent)` for every segment sent in
    /// recovery, retransmissions and new data alike.
    pub fn on_sent(&mut self, segments: u64) {
        self.out += segments;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6937 §5's first example: a window of 20 segments, ssthresh 10,
    /// one segment delivered per ACK while pipe stays above ssthresh. PRR
    /// sends one segment on every other ACK (sndcnt 1, 0, 1, 0, …:
    /// CEIL(1 · 10 / 20) = 1, CEIL(2 · 10 / 20) − 1 = 0, …), so the flight
    /// falls to ssthresh by the end of the round trip.
    #[test]
    fn above_ssthresh_sends_in_proportion_to_what_is_delivered() {
        let mut prr = Prr::new(20);
        let mut pipe = 19; // one segment lost
        let mut sent = Vec::new();
        for _ in 0..8 {
            pipe -= 1; // the ACK reports a segment delivered
            let sndcnt = prr.on_ack(1, pipe, 10) - pipe;
            sent.push(sndcnt);
            prr.on_sent(sndcnt);
            pipe += sndcnt;
        }
        assert_eq!(sent, [1, 0, 1, 0, 1, 0, 1, 0]);
        // CEIL(8 · 10 / 20) = 4 segments sent for 8 delivered.
        assert_eq!(prr.out, 4);
    }

    /// Below ssthresh, SSRB: MIN(ssthresh − pipe, MAX(prr_delivered −
    /// prr_out, DeliveredData) + 1), by hand: prr_delivered 12, prr_out
    /// 5, pipe 4, ssthresh 10, this ACK 3 → MIN(6, MAX(7, 3) + 1) = 6
    /// segments; with pipe 8 → MIN(2, 8) = 2.
    #[test]
    fn below_ssthresh_grows_back_no_faster_than_slow_start() {
        let mut prr = Prr::new(20);
        prr.on_ack(9, 15, 10);
        prr.on_sent(5);
        let at_pipe = |pipe: u64| prr.clone().on_ack(3, pipe, 10) - pipe;
        assert_eq!(at_pipe(4), 6);
        assert_eq!(at_pipe(8), 2);
        // With more sent than delivered, the bound is this ACK's delivery
        // + 1 segment: slow start's pace.
        let mut prr = Prr::new(20);
        prr.on_sent(30);
        assert_eq!(prr.on_ack(2, 0, 10), 3);
    }

    /// Heavy loss: one ACK in the whole window. Where RFC 6675 (cwnd =
    /// ssthresh = 7 of a 10-segment flight with pipe 8) sends nothing, PRR
    /// sends CEIL(1 · 7 / 10) = 1 segment; once the pipe is under ssthresh
    /// it refills towards it, bounded by SSRB.
    #[test]
    fn heavy_loss_keeps_the_ack_clock_going() {
        let mut prr = Prr::new(10);
        assert_eq!(prr.on_ack(1, 8, 7), 9);
        prr.on_sent(1);
        // The pipe collapsed to 1 (RACK marked the rest lost): sndcnt =
        // MIN(7 − 1, MAX(2 − 1, 1) + 1) = 2.
        assert_eq!(prr.on_ack(1, 1, 7), 3);
    }
}
