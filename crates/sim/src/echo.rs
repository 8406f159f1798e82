//! The echo application: adaptive ping (seed 003 §5.4, "RTT was measured
//! using adaptive ping so that there was never more than one unanswered
//! ping"), as `ping -A` does it.
//!
//! [`Pinger`] is the source's state machine, sans-IO like the transport
//! engines: the driver asks it for the next request ([`Pinger::poll_request`]),
//! hands it the replies that come back ([`Pinger::on_reply`]) and wakes it at
//! [`Pinger::poll_timeout`] ([`Pinger::handle_timeout`]). The rules:
//! - at most one request is outstanding; the next leaves as soon as the
//!   reply to the current one arrives;
//! - a reply is matched by its sequence number: only the reply to the
//!   outstanding request is an RTT sample, any other (a late reply to a
//!   request already given up, a duplicate) is counted as stale and ignored;
//! - a request unanswered after the timeout is given up (counted lost) and
//!   the next request leaves. `ping -A` waits for a reply this long when
//!   none comes; 1 s is its default interval, and the scenario default
//!   (`echo_timeout_s`).
//!
//! The destination answers each request at once with a reply of the same
//! size, as ICMP echo does; that side needs no state (the simulator turns a
//! request around where it arrives).

use meshbed_core::{Duration, Instant};

/// The source of one echo flow.
#[derive(Clone, Debug)]
pub struct Pinger {
    timeout: Duration,
    next_seq: u64,
    /// The request awaiting its reply: sequence number and when it left.
    outstanding: Option<(u64, Instant)>,
    /// Round-trip times of the requests answered, in the order answered.
    pub rtts: Vec<Duration>,
    /// Requests sent.
    pub requests: u64,
    /// Requests given up at the timeout.
    pub lost: u64,
    /// Replies that matched no outstanding request.
    pub stale_replies: u64,
}

impl Pinger {
    /// A source that gives a request up after `timeout`.
    pub fn new(timeout: Duration) -> Self {
        Pinger { timeout, next_seq: 0, outstanding: None, rtts: Vec::new(), requests: 0, lost: 0, stale_replies: 0 }
    }

    /// The sequence number of a request to send at `now`, or `None` while
    /// one is outstanding.
    pub fn poll_request(&mut self, now: Instant) -> Option<u64> {
        if self.outstanding.is_some() {
            return None;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.requests += 1;
        self.outstanding = Some((seq, now));
        Some(seq)
    }

    /// A reply with sequence number `seq` arrived at `now`: the RTT sample
    /// if it answers the outstanding request, else `None` (stale, ignored).
    pub fn on_reply(&mut self, now: Instant, seq: u64) -> Option<Duration> {
        match self.outstanding {
            Some((want, sent_at)) if want == seq => {
                self.outstanding = None;
                let rtt = now.saturating_since(sent_at);
                self.rtts.push(rtt);
                Some(rtt)
            }
            _ => {
                self.stale_replies += 1;
                None
            }
        }
    }

    /// When the outstanding request will be given up, if one is.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.outstanding.map(|(_, sent_at)| sent_at + self.timeout)
    }

    /// Gives the outstanding request up if its time has come; an early call
    /// does nothing.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.poll_timeout().is_some_and(|at| at <= now) {
            self.outstanding = None;
            self.lost += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(ms: u64) -> Instant {
        Instant::from_nanos(ms * 1_000_000)
    }

    #[test]
    fn at_most_one_request_is_outstanding_and_the_reply_releases_the_next() {
        let mut p = Pinger::new(Duration::from_secs(1));
        assert_eq!(p.poll_request(ms(0)), Some(0));
        assert_eq!(p.poll_request(ms(0)), None);
        assert_eq!(p.poll_request(ms(500)), None);
        assert_eq!(p.poll_timeout(), Some(ms(1000)));
        assert_eq!(p.on_reply(ms(30), 0), Some(Duration::from_millis(30)));
        assert_eq!(p.poll_timeout(), None);
        assert_eq!(p.poll_request(ms(30)), Some(1));
        assert_eq!(p.poll_request(ms(31)), None);
        assert_eq!(p.requests, 2);
    }

    #[test]
    fn an_unanswered_request_is_given_up_at_the_timeout_and_the_next_leaves() {
        let mut p = Pinger::new(Duration::from_millis(1000));
        assert_eq!(p.poll_request(ms(0)), Some(0));
        p.handle_timeout(ms(999));
        assert_eq!(p.poll_request(ms(999)), None, "an early wake-up changes nothing");
        assert_eq!(p.lost, 0);
        p.handle_timeout(ms(1000));
        assert_eq!(p.lost, 1);
        assert_eq!(p.poll_timeout(), None);
        assert_eq!(p.poll_request(ms(1000)), Some(1));
        assert_eq!(p.poll_timeout(), Some(ms(2000)));
    }

    #[test]
    fn replies_are_matched_by_sequence_number_and_stale_ones_ignored() {
        let mut p = Pinger::new(Duration::from_millis(100));
        p.poll_request(ms(0));
        p.handle_timeout(ms(100));
        assert_eq!(p.poll_request(ms(100)), Some(1));
        // The reply to request 0 comes late: no sample, request 1 still waits.
        assert_eq!(p.on_reply(ms(120), 0), None);
        assert_eq!(p.poll_request(ms(120)), None);
        assert_eq!(p.on_reply(ms(140), 1), Some(Duration::from_millis(40)));
        // A duplicate of that reply is stale too.
        assert_eq!(p.on_reply(ms(141), 1), None);
        assert_eq!((p.stale_replies, p.lost, p.rtts.len()), (2, 1, 1));
    }
}
