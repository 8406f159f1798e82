//! Address validation tokens (issue 26): a receiver answers a plain SYN
//! from an address it has not seen prove itself with a Retry carrying a
//! token, and keeps nothing; the sender's next SYN carries the token back.
//! A blind spoofer of another host's address never sees the token, so it
//! cannot open a transfer (take a slot, create a file) in that host's name.
//! QUIC's Retry (RFC 9000 §8.1.2) and TCP's SYN cookies (RFC 4987 §3.6) are
//! the models. Sealed SYNs (`--psk`) need no token: only a key holder can
//! make one.
//!
//! A token is HKDF-SHA256-Expand, keyed with 32 random bytes drawn when the
//! receiver starts, over the peer's address and port, the connection id and
//! the current 10-second epoch: stateless, unforgeable without the key,
//! valid for the epoch it was made in and the next (10–20 s), and useless
//! for another address, port or connection.

use hkdf::Hkdf;
use meshbed_core::Instant;
use meshbed_proto::wire::RETRY_TOKEN_LEN;
use sha2::Sha256;
use std::net::SocketAddr;
use zeroize::Zeroizing;

/// How long a token's epoch lasts.
const EPOCH_NS: u64 = 10_000_000_000;

/// A receiver's token maker and checker.
pub struct AddressTokens {
    prk: Zeroizing<[u8; 32]>,
}

impl AddressTokens {
    /// With a fresh random key: from the kernel, or if that fails from the
    /// standard library's per-process random hash keys (themselves seeded
    /// by the kernel once).
    pub fn random() -> AddressTokens {
        let mut prk = Zeroizing::new([0u8; 32]);
        if getrandom::fill(&mut prk[..]).is_err() {
            use std::hash::{BuildHasher, Hasher};
            for chunk in prk.chunks_mut(8) {
                let mut h = std::collections::hash_map::RandomState::new().build_hasher();
                h.write_u64(0x6d65_7368_6265_6400);
                chunk.copy_from_slice(&h.finish().to_le_bytes());
            }
        }
        AddressTokens { prk }
    }

    /// With `key` (tests).
    pub fn with_key(key: [u8; 32]) -> AddressTokens {
        AddressTokens { prk: Zeroizing::new(key) }
    }

    fn token_in(&self, peer: SocketAddr, connection_id: u32, epoch: u64) -> [u8; RETRY_TOKEN_LEN] {
        let hkdf = Hkdf::<Sha256>::from_prk(&self.prk[..]).expect("32 bytes is a valid PRK");
        let mut info = Vec::with_capacity(40);
        info.extend_from_slice(b"meshbed address token");
        match peer.ip() {
            std::net::IpAddr::V4(v4) => info.extend_from_slice(&v4.to_ipv6_mapped().octets()),
            std::net::IpAddr::V6(v6) => info.extend_from_slice(&v6.octets()),
        }
        info.extend_from_slice(&peer.port().to_be_bytes());
        info.extend_from_slice(&connection_id.to_be_bytes());
        info.extend_from_slice(&epoch.to_be_bytes());
        let mut token = [0u8; RETRY_TOKEN_LEN];
        hkdf.expand(&info, &mut token).expect("16 bytes is a valid length");
        token
    }

    /// The token a SYN from `peer` for `connection_id` must carry at `now`.
    pub fn token(&self, peer: SocketAddr, connection_id: u32, now: Instant) -> [u8; RETRY_TOKEN_LEN] {
        self.token_in(peer, connection_id, now.as_nanos() / EPOCH_NS)
    }

    /// Whether `carried` is the token of `peer` and `connection_id` in this
    /// epoch or the one before (compared in constant time).
    pub fn check(&self, peer: SocketAddr, connection_id: u32, now: Instant, carried: &[u8]) -> bool {
        let epoch = now.as_nanos() / EPOCH_NS;
        let same = |t: [u8; RETRY_TOKEN_LEN]| {
            carried.len() == RETRY_TOKEN_LEN && carried.iter().zip(t).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
        };
        same(self.token_in(peer, connection_id, epoch))
            || (epoch > 0 && same(self.token_in(peer, connection_id, epoch - 1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_holds_for_its_address_port_id_and_two_epochs_only() {
        let tokens = AddressTokens::with_key([9; 32]);
        let peer: SocketAddr = "10.0.0.2:4000".parse().unwrap();
        let t0 = Instant::from_nanos(25_000_000_000); // epoch 2
        let token = tokens.token(peer, 7, t0);
        assert!(tokens.check(peer, 7, t0, &token));
        assert!(tokens.check(peer, 7, Instant::from_nanos(39_999_999_999), &token), "the next epoch");
        assert!(!tokens.check(peer, 7, Instant::from_nanos(40_000_000_000), &token), "two epochs on");
        assert!(!tokens.check("10.0.0.3:4000".parse().unwrap(), 7, t0, &token), "another address");
        assert!(!tokens.check("10.0.0.2:4001".parse().unwrap(), 7, t0, &token), "another port");
        assert!(!tokens.check(peer, 8, t0, &token), "another connection");
        assert!(!tokens.check(peer, 7, t0, &token[..15]), "too short");
        assert!(!AddressTokens::with_key([1; 32]).check(peer, 7, t0, &token), "another key");
        let mut flipped = token;
        flipped[15] ^= 1;
        assert!(!tokens.check(peer, 7, t0, &flipped));
    }
}
