//! One connection's engine and the runtime's protocol settings.
//!
//! The receiver must run the same ATP preset as the sender (the epoch and
//! adaptive feedback live at the receiver), but the wire header only says
//! "ATP" or "TCP". The sender therefore puts its protocol in the top four
//! bits of the connection id ([`connection_id`]); the other 28 bits are
//! random. A receiver reads the preset from the SYN's connection id.

use crate::auth::{self, AuthError, Direction, Opener, Psk, Sealer};
use meshbed_core::{Duration, Instant};
use meshbed_proto::atp::{AtpConfig, AtpReceiver, AtpSender};
use meshbed_proto::tcp::{TcpConfig, TcpReceiver, TcpSender, TcpVariant};
use meshbed_proto::wire::ProtocolId;
use meshbed_proto::{Engine, Protocol, ReceiveStream, SendStream};

/// Protocol code in a connection id's top four bits: 1 + index in
/// [`Protocol::ALL`] (1 atp-default … 6 tcp-newreno); 0 and 7–15 are unused.
pub fn protocol_code(protocol: Protocol) -> u32 {
    Protocol::ALL.iter().position(|&p| p == protocol).expect("listed") as u32 + 1
}

/// A connection id for `protocol` with 28 random bits.
pub fn connection_id(protocol: Protocol, random: u32) -> u32 {
    (protocol_code(protocol) << 28) | (random & 0x0fff_ffff)
}

/// The protocol a connection id names, if any.
pub fn protocol_of(connection_id: u32) -> Option<Protocol> {
    let code = (connection_id >> 28) as usize;
    code.checked_sub(1).and_then(|i| Protocol::ALL.get(i).copied())
}

/// Whether the wire protocol id matches the protocol's family.
pub fn wire_matches(protocol: Protocol, wire: ProtocolId) -> bool {
    protocol.is_atp() == (wire == ProtocolId::Atp)
}

/// 32 unpredictable bits for a connection id (std's per-process random hash
/// keys, the clock and the process id; not a simulation seed: ids only need
/// to differ between connections).
pub fn random_u32() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    h.write_u128(now.as_nanos());
    h.write_u32(std::process::id());
    h.finish() as u32
}

/// Engine settings the runtime changes from the presets.
#[derive(Clone, Debug)]
pub struct EngineOptions {
    /// Silence after which a connection fails (both protocols).
    pub timeout: Duration,
    /// How long a finished ATP receiver answers repeated FINs.
    pub linger: Duration,
    /// ATP's smallest inter-packet delay (the rate cap); `None` keeps the
    /// preset's 100 µs.
    pub atp_min_delay: Option<Duration>,
    /// Bytes each datagram carries beyond what the engine writes (the
    /// `--psk` seal): the engines' segments shrink by as much, so a sealed
    /// datagram is no larger than a plain one.
    pub datagram_overhead: usize,
}

/// Bytes a sender holds at least (unacknowledged plus written, not yet
/// sent): what `meshbed send` needs in memory whatever the file's size. It
/// must exceed the most a sender has unacknowledged: TCP's 64 segments, and
/// for ATP what its rate cap sends between two feedbacks
/// ([`AtpConfig::send_window_bytes`], 28.7 MB for default ATP's 1 s epoch,
/// which then sets the window).
pub const SEND_WINDOW_BYTES: usize = 8 << 20;
/// The most a sender holds, whatever the ATP settings (`--atp-min-delay`
/// lowers the rate cap's delay and so raises the need).
pub const MAX_SEND_WINDOW_BYTES: usize = 256 << 20;

impl EngineOptions {
    pub fn atp(&self, protocol: Protocol) -> Option<AtpConfig> {
        let mut c = AtpConfig::for_protocol(protocol)?;
        c.idle_timeout = self.timeout;
        c.linger = self.linger;
        c.trace = false;
        if let Some(d) = self.atp_min_delay {
            c.min_delay = d;
        }
        c.max_payload = c.max_payload.saturating_sub(self.datagram_overhead).max(1);
        Some(c)
    }

    /// TCP with the unreachable bound equal to `timeout`: no extra
    /// unanswered RTOs, and the RTO capped at a quarter of the timeout so
    /// that a silent peer is asked several times before the sender gives up.
    pub fn tcp(&self) -> TcpConfig {
        let mut c = TcpConfig { idle_timeout: self.timeout, max_unanswered_rtos: 0, ..TcpConfig::default() };
        c.mss_bytes = c.mss_bytes.saturating_sub(self.datagram_overhead).max(1);
        c.max_rto = Duration::from_nanos(self.timeout.as_nanos() / 4).max(c.min_rto).min(c.max_rto);
        c
    }
}

/// How one connection's datagrams cross the network: as the engines write
/// them, or sealed with the pre-shared key ([`crate::auth`]).
pub enum Protection {
    Plain,
    Sealed { sealer: Sealer, opener: Opener },
}

impl Protection {
    /// One side of `connection_id`: it seals what it sends `outgoing` and
    /// opens what comes the other way.
    pub fn new(psk: Option<&Psk>, connection_id: u32, outgoing: Direction) -> Result<Self, AuthError> {
        let Some(psk) = psk else { return Ok(Protection::Plain) };
        let incoming = match outgoing {
            Direction::ToReceiver => Direction::ToSender,
            Direction::ToSender => Direction::ToReceiver,
        };
        Ok(Protection::Sealed {
            sealer: psk.sealer(connection_id, outgoing)?,
            opener: psk.opener(connection_id, incoming),
        })
    }

    /// Bytes a datagram grows by when sealed.
    pub fn overhead(psk: Option<&Psk>) -> usize {
        if psk.is_some() {
            auth::OVERHEAD
        } else {
            0
        }
    }

    /// The plain datagram in `buf`: as it is, or opened in place (an error
    /// for anything not sealed by the peer, or seen before).
    pub fn open<'a>(&mut self, buf: &'a mut [u8]) -> Result<&'a [u8], AuthError> {
        match self {
            Protection::Plain => Ok(buf),
            Protection::Sealed { opener, .. } => {
                let n = opener.open(buf)?;
                Ok(&buf[..n])
            }
        }
    }

    /// The peer instance's salt once one of its datagrams was opened (sealed
    /// connections only).
    pub fn peer_salt(&self) -> Option<[u8; 16]> {
        match self {
            Protection::Plain => None,
            Protection::Sealed { opener, .. } => opener.peer_salt(),
        }
    }

    /// Seals the datagram in `buf[..len]` in place; returns its length.
    pub fn seal(&mut self, buf: &mut [u8], len: usize) -> Result<usize, AuthError> {
        match self {
            Protection::Plain => Ok(len),
            Protection::Sealed { sealer, .. } => sealer.seal(buf, len),
        }
    }
}

/// The sending engine of one transfer; the application writes the stream
/// into it through [`SendStream`] as the window allows.
pub enum SenderEngine {
    Atp(AtpSender),
    Tcp(TcpSender),
}

impl SenderEngine {
    pub fn new(protocol: Protocol, options: &EngineOptions, connection_id: u32, now: Instant) -> Self {
        match TcpVariant::from_protocol(protocol) {
            Some(variant) => {
                let window = SEND_WINDOW_BYTES;
                SenderEngine::Tcp(TcpSender::streaming(options.tcp(), variant, connection_id, window, now))
            }
            None => {
                let config = options.atp(protocol).expect("ATP");
                let need = usize::try_from(config.send_window_bytes()).unwrap_or(usize::MAX);
                let window = need.clamp(SEND_WINDOW_BYTES, MAX_SEND_WINDOW_BYTES);
                SenderEngine::Atp(AtpSender::streaming(config, connection_id, window, now))
            }
        }
    }
    pub fn engine(&mut self) -> &mut dyn SendStream {
        match self {
            SenderEngine::Atp(e) => e,
            SenderEngine::Tcp(e) => e,
        }
    }
    pub fn engine_ref(&self) -> &dyn Engine {
        match self {
            SenderEngine::Atp(e) => e,
            SenderEngine::Tcp(e) => e,
        }
    }
}

/// The receiving engine of one transfer. Few exist at once, so the size
/// difference between the variants does not matter.
#[allow(clippy::large_enum_variant)]
pub enum ReceiverEngine {
    Atp(AtpReceiver),
    Tcp(TcpReceiver),
}

impl ReceiverEngine {
    pub fn new(protocol: Protocol, options: &EngineOptions, connection_id: u32, now: Instant) -> Self {
        match options.atp(protocol) {
            Some(config) => ReceiverEngine::Atp(AtpReceiver::new(config, connection_id, now)),
            None => ReceiverEngine::Tcp(TcpReceiver::new(options.tcp(), connection_id, now)),
        }
    }
    pub fn engine(&mut self) -> &mut dyn ReceiveStream {
        match self {
            ReceiverEngine::Atp(e) => e,
            ReceiverEngine::Tcp(e) => e,
        }
    }
    pub fn engine_ref(&self) -> &dyn Engine {
        match self {
            ReceiverEngine::Atp(e) => e,
            ReceiverEngine::Tcp(e) => e,
        }
    }
    /// In-order bytes not yet taken.
    pub fn take_delivered(&mut self) -> Vec<u8> {
        self.engine().take_delivered()
    }
    /// The memory its out-of-order bytes are charged.
    pub fn reorder_charge(&self) -> u64 {
        match self {
            ReceiverEngine::Atp(e) => e.reorder_charge(),
            ReceiverEngine::Tcp(e) => e.reorder_charge(),
        }
    }
    /// The most its out-of-order bytes may be charged from now on.
    pub fn set_reorder_limit(&mut self, bytes: u64) {
        match self {
            ReceiverEngine::Atp(e) => e.set_reorder_limit(bytes),
            ReceiverEngine::Tcp(e) => e.set_reorder_limit(bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_ids_carry_the_protocol() {
        for p in Protocol::ALL {
            for r in [0, 1, 0x0fff_ffff, u32::MAX] {
                assert_eq!(protocol_of(connection_id(p, r)), Some(p));
            }
        }
        assert_eq!(protocol_of(0x0123_4567), None);
        assert_eq!(protocol_of(0x7123_4567), None);
    }

    #[test]
    fn tcp_gives_up_at_the_timeout() {
        let o = EngineOptions {
            timeout: Duration::from_secs(4),
            linger: Duration::from_secs(1),
            atp_min_delay: None,
            datagram_overhead: 0,
        };
        let c = o.tcp();
        assert_eq!(
            (c.idle_timeout, c.max_unanswered_rtos, c.max_rto),
            (Duration::from_secs(4), 0, Duration::from_secs(1))
        );
    }
}
