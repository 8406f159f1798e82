//! When a sender asks a busy receiver again.

use meshbed_proto::wire::{parse_datagram, retry_token, Control, RETRY_TOKEN_LEN};
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

/// The sender's side of address validation (`crate::auth::token`): a
/// receiver answers a plain SYN from an unproven address with a Retry
/// carrying a token, and the SYN goes again with the token as its payload.
/// The engines never see either: this is the driver's, like the seal.
#[derive(Debug, Default)]
pub struct AddressProof {
    /// The token of the last Retry taken.
    token: Option<[u8; RETRY_TOKEN_LEN]>,
    /// The engine's last SYN (plain, before the token), to send again at
    /// once when a Retry comes.
    last_syn: Option<Vec<u8>>,
    /// A Retry came and the SYN has not gone again since.
    resend: bool,
    /// Retries taken (a receiver that keeps answering with them is
    /// reported by the attempt's timeout).
    pub retries: u64,
}

/// At most this many Retries are followed per attempt: a receiver (or a
/// forger) that answers every SYN with one cannot keep a sender busy.
const MAX_RETRIES_FOLLOWED: u64 = 8;

impl AddressProof {
    /// A datagram received for `connection_id` (opened, plain): `true` if
    /// it is a Retry this sender takes (then the engine must not see it):
    /// before the handshake ends, naming the SYN's sequence (0).
    pub fn on_received(&mut self, datagram: &[u8], connection_id: u32, connected: bool) -> bool {
        let Ok((repr, payload)) = parse_datagram(datagram) else { return false };
        let Some(token) = retry_token(payload) else { return false };
        if repr.connection_id != connection_id || !repr.control.contains(Control::RST) {
            return false;
        }
        // A Retry after the handshake, or beyond the limit, is dropped
        // here too: it must not reach the engine as a reset.
        if !connected && repr.ack == 0 && self.retries < MAX_RETRIES_FOLLOWED {
            self.retries += 1;
            self.token = Some(token);
            self.resend = true;
        }
        true
    }

    /// The engine wrote `len` bytes into `buf` (with room after them): an
    /// opening SYN is remembered and gets the token, if there is one.
    /// Returns the datagram's length.
    pub fn on_transmit(&mut self, buf: &mut [u8], len: usize) -> usize {
        let Ok((repr, payload)) = parse_datagram(&buf[..len]) else { return len };
        if !repr.opens_connection() || !payload.is_empty() {
            return len;
        }
        self.last_syn = Some(buf[..len].to_vec());
        self.resend = false;
        match self.token {
            Some(token) if buf.len() >= len + RETRY_TOKEN_LEN => {
                buf[len..len + RETRY_TOKEN_LEN].copy_from_slice(&token);
                len + RETRY_TOKEN_LEN
            }
            _ => len,
        }
    }

    /// After a Retry: the last SYN with the token, written into `buf`, to
    /// send at once; `None` if nothing is due.
    pub fn poll_resend(&mut self, buf: &mut [u8]) -> Option<usize> {
        if !self.resend {
            return None;
        }
        let syn = self.last_syn.as_ref()?;
        let token = self.token?;
        let len = syn.len() + RETRY_TOKEN_LEN;
        if buf.len() < len {
            return None;
        }
        buf[..syn.len()].copy_from_slice(syn);
        buf[syn.len()..len].copy_from_slice(&token);
        self.resend = false;
        Some(len)
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
