//! One connection's engine, whichever protocol it runs: the one place that
//! turns a [`Protocol`] and its settings into a sender or receiver engine,
//! for the simulator and the UDP runtime alike.
//!
//! [`EngineConfig`] is a protocol with its settings; [`SenderEngine`] and
//! [`ReceiverEngine`] are built from it and hand out the [`Engine`] surface
//! (and the application side, [`SendStream`] / [`ReceiveStream`]) by static
//! dispatch.
//!
//! The UDP runtime also needs a receiver to learn the ATP preset a sender
//! runs, though the wire header only says "ATP" or "TCP": a sender puts its
//! protocol in the top four bits of the connection id ([`connection_id`]),
//! the other 28 bits are random, and a receiver reads the preset from the
//! SYN's id ([`protocol_of`]).

use crate::atp::{AtpConfig, AtpReceiver, AtpSender};
use crate::engine::{Engine, Protocol};
use crate::mtl::{MtlConfig, MtlReceiver, MtlSender};
use crate::stream::{ReceiveStream, SendStream};
use crate::tcp::{TcpConfig, TcpReceiver, TcpSender, TcpSenderStats, TcpVariant};
use crate::wire::ProtocolId;
use meshbed_core::{Duration, Instant};

/// Protocol code in a connection id's top four bits: 1 + index in
/// [`Protocol::ALL`] (1 atp-default … 6 tcp-newreno, 7 tcp-newreno-elfn,
/// 8 tcp-reno-paced, 9 tcp-newreno-paced, 10 mtl, 11 tcp-cubic, 12 tcp-sack,
/// 13 tcp-bbr); 0, 14 and 15 are unused.
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

/// The protocol id the wire header carries for `protocol`'s family. MTL
/// rides TCP's id: relays stamp ATP's D_max on ATP's id only, and MTL has
/// no use for it; the connection id tells an MTL receiver from a TCP one.
pub fn wire_id(protocol: Protocol) -> ProtocolId {
    if protocol.is_atp() {
        ProtocolId::Atp
    } else {
        ProtocolId::Tcp
    }
}

/// Whether the wire protocol id matches the protocol's family.
pub fn wire_matches(protocol: Protocol, wire: ProtocolId) -> bool {
    wire_id(protocol) == wire
}

/// A protocol with the settings both ends of a connection run.
#[derive(Clone, Debug)]
pub enum EngineConfig {
    /// One of the ATP presets, as configured.
    Atp(AtpConfig),
    Tcp {
        variant: TcpVariant,
        config: TcpConfig,
    },
    /// MTL's transport module.
    Mtl(MtlConfig),
}

impl EngineConfig {
    /// `protocol` with the ATP settings `atp` makes from its preset, or the
    /// TCP settings `tcp` gives. For TCP the protocol name decides
    /// [`TcpConfig::elfn`] (on for `tcp-newreno-elfn` only), whatever `tcp`
    /// set: plain TCP ignores route notices (issue 12); likewise
    /// [`TcpConfig::pacing`] (on for the `-paced` protocols only, issue 13).
    /// MTL takes its segment size, idle timeout and reorder limit from the
    /// TCP settings ([`MtlConfig::from_tcp`]), everything else from its
    /// defaults; a driver wanting more builds [`EngineConfig::Mtl`] itself.
    pub fn new(
        protocol: Protocol,
        atp: impl FnOnce(AtpConfig) -> AtpConfig,
        tcp: impl FnOnce() -> TcpConfig,
    ) -> EngineConfig {
        if protocol == Protocol::Mtl {
            return EngineConfig::Mtl(MtlConfig::from_tcp(&tcp()));
        }
        match TcpVariant::from_protocol(protocol) {
            Some(variant) => {
                let config = TcpConfig {
                    elfn: protocol == Protocol::TcpNewRenoElfn,
                    pacing: protocol.is_paced(),
                    sack: variant.uses_sack(),
                    timestamps: variant.uses_sack(),
                    ..tcp()
                };
                EngineConfig::Tcp { variant, config }
            }
            None => EngineConfig::Atp(atp(AtpConfig::for_protocol(protocol).expect("an ATP protocol"))),
        }
    }

    /// The silence after which a connection with these settings fails.
    pub fn idle_timeout(&self) -> Duration {
        match self {
            EngineConfig::Atp(c) => c.idle_timeout,
            EngineConfig::Tcp { config, .. } => config.idle_timeout,
            EngineConfig::Mtl(c) => c.idle_timeout,
        }
    }
}

/// The sending engine of one connection.
pub enum SenderEngine {
    Atp(AtpSender),
    Tcp(TcpSender),
    Mtl(MtlSender),
}

impl SenderEngine {
    /// A sender that holds all of `data` from the start (the simulator's flows).
    pub fn with_data(config: &EngineConfig, connection_id: u32, data: Vec<u8>, now: Instant) -> Self {
        match config {
            EngineConfig::Atp(c) => SenderEngine::Atp(AtpSender::new(c.clone(), connection_id, data, now)),
            EngineConfig::Tcp { variant, config } => {
                SenderEngine::Tcp(TcpSender::new(config.clone(), *variant, connection_id, data, now))
            }
            EngineConfig::Mtl(c) => SenderEngine::Mtl(MtlSender::new(c.clone(), connection_id, data, now)),
        }
    }
    /// A sender the application writes into through [`SendStream`], holding
    /// at most `window_bytes` (unacknowledged plus written, not yet sent).
    pub fn streaming(config: &EngineConfig, connection_id: u32, window_bytes: usize, now: Instant) -> Self {
        match config {
            EngineConfig::Atp(c) => {
                SenderEngine::Atp(AtpSender::streaming(c.clone(), connection_id, window_bytes, now))
            }
            EngineConfig::Tcp { variant, config } => {
                SenderEngine::Tcp(TcpSender::streaming(config.clone(), *variant, connection_id, window_bytes, now))
            }
            EngineConfig::Mtl(c) => {
                SenderEngine::Mtl(MtlSender::streaming(c.clone(), connection_id, window_bytes, now))
            }
        }
    }
    /// The engine with its application side (writing the stream).
    pub fn engine(&mut self) -> &mut dyn SendStream {
        match self {
            SenderEngine::Atp(e) => e,
            SenderEngine::Tcp(e) => e,
            SenderEngine::Mtl(e) => e,
        }
    }
    /// The gap between two paced packets at the current rate: ATP's D_s,
    /// MTL's 1/R; `None` for TCP (its window releases packets, not a
    /// clock). A driver that wakes in ticks sizes its batches from it.
    pub fn pacing_gap(&self) -> Option<Duration> {
        match self {
            SenderEngine::Atp(e) => Some(e.d_s()),
            SenderEngine::Tcp(_) => None,
            SenderEngine::Mtl(e) => Some(e.interval()),
        }
    }
    /// The bare engine surface, for a driver that keeps `&mut dyn Engine`.
    pub fn engine_mut(&mut self) -> &mut dyn Engine {
        match self {
            SenderEngine::Atp(e) => e,
            SenderEngine::Tcp(e) => e,
            SenderEngine::Mtl(e) => e,
        }
    }
    pub fn engine_ref(&self) -> &dyn Engine {
        match self {
            SenderEngine::Atp(e) => e,
            SenderEngine::Tcp(e) => e,
            SenderEngine::Mtl(e) => e,
        }
    }
    /// The TCP sender's own counters (slow starts, RTO, ELFN standby) up to
    /// `now`; `None` for ATP and MTL.
    pub fn tcp_stats(&self, now: Instant) -> Option<TcpSenderStats> {
        match self {
            SenderEngine::Atp(_) | SenderEngine::Mtl(_) => None,
            SenderEngine::Tcp(e) => Some(e.tcp_stats(now)),
        }
    }
}

/// ATP's receive buffer for an application that reads at its own pace,
/// unless its driver chooses one: 1 MiB. ATP's feedback comes once per epoch,
/// so the buffer must hold an epoch's data at the rate the sender probed
/// (seed 002 §4.3.1's quick-start): on a 3-hop 802.11a chain the first epoch
/// alone brings about 700 kB, and a 92 kB buffer (TCP's window) drops so
/// much of it that even a reader that keeps up loses half the goodput.
pub const ATP_READER_BUFFER_BYTES: u64 = 1 << 20;

/// The receiving engine of one connection. Few exist at once, so the size
/// difference between the variants does not matter.
#[allow(clippy::large_enum_variant)]
pub enum ReceiverEngine {
    Atp(AtpReceiver),
    Tcp(TcpReceiver),
    Mtl(MtlReceiver),
}

impl ReceiverEngine {
    pub fn new(config: &EngineConfig, connection_id: u32, now: Instant) -> Self {
        match config {
            EngineConfig::Atp(c) => ReceiverEngine::Atp(AtpReceiver::new(c.clone(), connection_id, now)),
            EngineConfig::Tcp { config, .. } => {
                ReceiverEngine::Tcp(TcpReceiver::new(config.clone(), connection_id, now))
            }
            EngineConfig::Mtl(c) => ReceiverEngine::Mtl(MtlReceiver::new(c.clone(), connection_id, now)),
        }
    }
    /// The engine with its application side (reading the stream, the
    /// commit confirmation).
    pub fn engine(&mut self) -> &mut dyn ReceiveStream {
        match self {
            ReceiverEngine::Atp(e) => e,
            ReceiverEngine::Tcp(e) => e,
            ReceiverEngine::Mtl(e) => e,
        }
    }
    /// The bare engine surface, for a driver that keeps `&mut dyn Engine`.
    pub fn engine_mut(&mut self) -> &mut dyn Engine {
        match self {
            ReceiverEngine::Atp(e) => e,
            ReceiverEngine::Tcp(e) => e,
            ReceiverEngine::Mtl(e) => e,
        }
    }
    pub fn engine_ref(&self) -> &dyn Engine {
        match self {
            ReceiverEngine::Atp(e) => e,
            ReceiverEngine::Tcp(e) => e,
            ReceiverEngine::Mtl(e) => e,
        }
    }
    /// In-order bytes not yet taken.
    pub fn take_delivered(&mut self) -> Vec<u8> {
        self.engine().take_delivered()
    }
    /// The next byte it expects in order (the cumulative ack; TCP's
    /// `rcv_nxt`): what a reset to its sender names.
    pub fn next_expected(&self) -> u64 {
        match self {
            ReceiverEngine::Atp(e) => e.next_expected(),
            ReceiverEngine::Tcp(e) => e.next_expected(),
            ReceiverEngine::Mtl(e) => e.next_expected(),
        }
    }
    /// The memory its out-of-order bytes are charged ([`crate::reorder`]).
    pub fn reorder_charge(&self) -> u64 {
        match self {
            ReceiverEngine::Atp(e) => e.reorder_charge(),
            ReceiverEngine::Tcp(e) => e.reorder_charge(),
            ReceiverEngine::Mtl(e) => e.reorder_charge(),
        }
    }
    /// The receive buffer for an application that reads at its own pace:
    /// [`ATP_READER_BUFFER_BYTES`] for ATP, the window for TCP; `None` for
    /// MTL, whose receiver has no flow control (its application must read
    /// everything as it arrives).
    pub fn reader_receive_buffer(&self) -> Option<u64> {
        match self {
            ReceiverEngine::Atp(_) => Some(ATP_READER_BUFFER_BYTES),
            ReceiverEngine::Tcp(e) => Some(e.receive_window_bytes()),
            ReceiverEngine::Mtl(_) => None,
        }
    }

    /// Bounds what the application leaves unread (with what is held out of
    /// order) to `bytes`: ATP's and TCP's `set_receive_buffer`; MTL has no
    /// such bound ([`ReceiverEngine::reader_receive_buffer`] says `None`).
    pub fn set_receive_buffer(&mut self, bytes: u64) {
        match self {
            ReceiverEngine::Atp(e) => e.set_receive_buffer(bytes),
            ReceiverEngine::Tcp(e) => e.set_receive_buffer(bytes),
            ReceiverEngine::Mtl(_) => {}
        }
    }
    /// The most its out-of-order bytes may be charged from now on.
    pub fn set_reorder_limit(&mut self, bytes: u64) {
        match self {
            ReceiverEngine::Atp(e) => e.set_reorder_limit(bytes),
            ReceiverEngine::Tcp(e) => e.set_reorder_limit(bytes),
            ReceiverEngine::Mtl(e) => e.set_reorder_limit(bytes),
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
        assert_eq!(protocol_of(0x8123_4567), Some(Protocol::TcpRenoPaced));
        assert_eq!(protocol_of(0xa123_4567), Some(Protocol::Mtl));
        assert_eq!(protocol_of(0xb123_4567), Some(Protocol::TcpCubic));
        assert_eq!(protocol_of(0xc123_4567), Some(Protocol::TcpSack));
        assert_eq!(protocol_of(0xd123_4567), Some(Protocol::TcpBbr));
        assert_eq!(protocol_of(0xe123_4567), None);
    }

    #[test]
    fn each_protocol_builds_engines_of_its_family() {
        for p in Protocol::ALL {
            let config = EngineConfig::new(p, |c| c, TcpConfig::default);
            let receiver = ReceiverEngine::new(&config, connection_id(p, 1), Instant::ZERO);
            let sender = SenderEngine::with_data(&config, connection_id(p, 1), vec![1; 10], Instant::ZERO);
            assert_eq!(matches!(receiver, ReceiverEngine::Atp(_)), p.is_atp(), "{p}");
            assert_eq!(matches!(sender, SenderEngine::Atp(_)), p.is_atp(), "{p}");
            assert_eq!(matches!(receiver, ReceiverEngine::Mtl(_)), p == Protocol::Mtl, "{p}");
            assert_eq!(matches!(sender, SenderEngine::Mtl(_)), p == Protocol::Mtl, "{p}");
            assert!(
                wire_matches(p, wire_id(p))
                    && !wire_matches(p, if p.is_atp() { ProtocolId::Tcp } else { ProtocolId::Atp })
            );
        }
    }
}
