//! When a sender asks a busy receiver again.

use std::time::Duration as StdDuration;

/// How a sender answers busy refusals (docs/PROTOCOLS.md §6, "Limits"): a
/// busy RST is advisory, so it waits and asks again, the wait doubling from
/// `--retry-delay` up to [`MAX_BUSY_BACKOFF`], for as long as the receiver
/// has been busy for less than the sender's timeout; then it is a failed
/// attempt like any other.
pub(super) struct BusyBackoff {
    since: Option<std::time::Instant>,
    wait: StdDuration,
}

/// The longest wait between two attempts at a busy receiver.
const MAX_BUSY_BACKOFF: StdDuration = StdDuration::from_secs(4);

impl BusyBackoff {
    pub(super) fn new(first: StdDuration) -> Self {
        BusyBackoff { since: None, wait: first.min(MAX_BUSY_BACKOFF) }
    }
    /// After a busy refusal: how long to wait before asking again, or
    /// `None` if the receiver has been busy for `timeout` already.
    pub(super) fn next(&mut self, now: std::time::Instant, timeout: StdDuration) -> Option<StdDuration> {
        let since = *self.since.get_or_insert(now);
        let wait = self.wait;
        if now.saturating_duration_since(since) + wait > timeout {
            return None;
        }
        self.wait = (wait * 2).min(MAX_BUSY_BACKOFF);
        Some(wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_doubles_to_its_cap_until_the_receiver_was_busy_for_the_timeout() {
        let ms = StdDuration::from_millis;
        let start = std::time::Instant::now();
        let mut b = BusyBackoff::new(ms(500));
        let mut at = start;
        let mut waits = Vec::new();
        while let Some(w) = b.next(at, StdDuration::from_secs(12)) {
            waits.push(w.as_millis());
            at += w;
        }
        // Asked again at 0.5, 1.5, 3.5, 7.5 and 11.5 s; another 4 s would
        // end past 12 s.
        assert_eq!(waits, vec![500, 1000, 2000, 4000, 4000]);
        // A first delay above the cap starts at the cap.
        assert_eq!(BusyBackoff::new(StdDuration::from_secs(9)).next(start, StdDuration::from_secs(60)), Some(ms(4000)));
        // A timeout shorter than the first wait: no second attempt.
        assert_eq!(BusyBackoff::new(ms(500)).next(start, ms(400)), None);
    }
}
