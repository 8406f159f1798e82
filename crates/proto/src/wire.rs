//! The ATP/TCP-over-UDP header (seed 001 §3.3 and Fig. 3.2; seed 000 §V.A.3).
//!
//! A zero-copy view [`Packet`] over any byte buffer, a `check_len` after which
//! no accessor can panic, and a [`Repr`] with `parse`/`emit`/`buffer_len`
//! (smoltcp `wire`). Untrusted bytes only enter through [`Packet::new_checked`].
//!
//! Layout, all integers big-endian (also in docs/PROTOCOLS.md):
//!
//! ```text
//!  0        1        2        3        4               6               8
//! +--------+--------+--------+--------+-------+-------+-------+-------+
//! |proto id|version |control | N_h    |   SACK len    |   reserved    |
//! +--------+--------+--------+--------+-------+-------+-------+-------+
//!  8                12                                20
//! +-----------------+---------------------------------+
//! | connection id   | sequence number (bytes, u64)    |
//! +-----------------+---------------------------------+
//!  20                                28               32               36
//! +---------------------------------+----------------+----------------+
//! | acknowledgement number (u64)    | D_max (us,u32) | D_s (us, u32)  |
//! +---------------------------------+----------------+----------------+
//!  36
//! +-------------------------------------------+------------------------
//! | SACK blocks: SACK len / 16 × (start u64, end u64), byte ranges     | data ...
//! +-------------------------------------------+------------------------
//! ```
//!
//! On ATP feedback, whose sequence number the documents leave unused, it
//! carries a [`FeedbackEcho`]; on ATP data a host's driver numbers each
//! transmission in the acknowledgement number, which ATP data leaves
//! unused (zero in the simulator).
//!
//! Sequence and acknowledgement numbers are 64-bit byte offsets so that a
//! transfer never wraps (the thesis used TCP's 32 bits; a 1 GiB benchmark
//! would wrap those). The delays are microseconds, the resolution of the
//! thesis' `/proc` export (seed 001 appendix A.6).

use thiserror::Error;

/// Protocol identifier (the first byte).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ProtocolId {
    Atp = 1,
    Tcp = 2,
}

/// What ATP feedback's sequence number carries (the documents leave it
/// unused; docs/PROTOCOLS.md §6, "`e2e` estimate" and "ATP's rate on a
/// host"): the receiver's view of its newest data arrival, which D_s dates.
/// `transmission`: the low 32 bits of that packet's acknowledgement number,
/// where a host's sender numbered it (zero when unnumbered), so the sender
/// can time that arrival exactly, retransmissions included; `arrivals`: the
/// data packets received so far, that one included, modulo 2^32, so the
/// sender can tell the rate they arrive at, whatever the SACK blocks name.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct FeedbackEcho {
    pub transmission: u32,
    pub arrivals: u32,
}

impl FeedbackEcho {
    /// The sequence number that carries it: `transmission` in the high half.
    pub fn to_seq(self) -> u64 {
        (u64::from(self.transmission) << 32) | u64::from(self.arrivals)
    }
    pub fn from_seq(seq: u64) -> Self {
        FeedbackEcho { transmission: (seq >> 32) as u32, arrivals: seq as u32 }
    }
}

/// The only version this code speaks.
pub const VERSION: u8 = 1;
/// Bytes before the SACK blocks.
pub const HEADER_LEN: usize = 36;
/// Bytes per SACK block.
pub const SACK_BLOCK_LEN: usize = 16;
/// The header bytes a relay rewrites on the way (the hop count N_h and
/// D_max, seed 002 §4.1); everything else crosses the path unchanged. In
/// header order, not overlapping.
pub const RELAY_WRITTEN: [core::ops::Range<usize>; 2] = [field::HOP_COUNT..field::HOP_COUNT + 1, field::D_MAX];
/// The most SACK blocks a feedback packet carries (seed 002 §4.3.3: 20).
pub const MAX_SACK_BLOCKS: usize = 20;

/// Control flags (seed 001 Fig. 3.2(c)): ATP's three SACK flags, then TCP's.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Control(pub u8);

impl Control {
    /// The receiver has seen no data for E/2: retransmit everything unacked.
    pub const SACK_MORE: u8 = 0x80;
    /// The packet carries SACK blocks rather than data.
    pub const SACK_OPT: u8 = 0x40;
    /// Quick-start probe: answer with feedback at once.
    pub const SACK_REQ: u8 = 0x20;
    pub const ACK: u8 = 0x10;
    pub const RST: u8 = 0x04;
    pub const SYN: u8 = 0x02;
    pub const FIN: u8 = 0x01;
    const KNOWN: u8 = 0xf7;

    pub fn contains(self, flag: u8) -> bool {
        self.0 & flag == flag
    }
    pub fn with(self, flag: u8) -> Control {
        Control(self.0 | flag)
    }
}

/// Why a datagram was rejected.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Error)]
pub enum WireError {
    #[error("datagram of {len} bytes is shorter than the {HEADER_LEN}-byte header")]
    Truncated { len: usize },
    #[error("unknown protocol id {0}")]
    UnknownProtocol(u8),
    #[error("unsupported version {0} (this build speaks version {VERSION})")]
    UnsupportedVersion(u8),
    #[error("unknown control bits {0:#04x}")]
    UnknownFlags(u8),
    #[error("SACK length {sack_len} is not a multiple of {SACK_BLOCK_LEN} or exceeds {MAX_SACK_BLOCKS} blocks")]
    BadSackLen { sack_len: usize },
    #[error("SACK length {sack_len} runs past the end of a {len}-byte datagram")]
    SackPastEnd { sack_len: usize, len: usize },
    #[error("SACK block [{start}, {end}) is empty or reversed")]
    BadSackBlock { start: u64, end: u64 },
    #[error("a feedback (SACK-OPT) packet carries {0} bytes of data")]
    DataInFeedback(usize),
}

mod field {
    use core::ops::Range;
    pub const PROTO: usize = 0;
    pub const VERSION: usize = 1;
    pub const CONTROL: usize = 2;
    pub const HOP_COUNT: usize = 3;
    pub const SACK_LEN: Range<usize> = 4..6;
    pub const RESERVED: Range<usize> = 6..8;
    pub const CONN_ID: Range<usize> = 8..12;
    pub const SEQ: Range<usize> = 12..20;
    pub const ACK: Range<usize> = 20..28;
    pub const D_MAX: Range<usize> = 28..32;
    pub const D_S: Range<usize> = 32..36;
}

/// A read/write view of a datagram.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps without checking; accessors may panic on a short buffer.
    pub fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }

    /// Wraps and validates everything the accessors rely on.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let p = Packet { buffer };
        p.check_len()?;
        Ok(p)
    }

    /// After this returns `Ok`, no accessor panics.
    pub fn check_len(&self) -> Result<(), WireError> {
        let b = self.buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(WireError::Truncated { len: b.len() });
        }
        let sack_len = self.sack_len();
        if !sack_len.is_multiple_of(SACK_BLOCK_LEN) || sack_len > MAX_SACK_BLOCKS * SACK_BLOCK_LEN {
            return Err(WireError::BadSackLen { sack_len });
        }
        if HEADER_LEN + sack_len > b.len() {
            return Err(WireError::SackPastEnd { sack_len, len: b.len() });
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }
    fn u16_at(&self, r: core::ops::Range<usize>) -> u16 {
        let b = &self.buffer.as_ref()[r];
        u16::from_be_bytes([b[0], b[1]])
    }
    fn u32_at(&self, r: core::ops::Range<usize>) -> u32 {
        let b = &self.buffer.as_ref()[r];
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }
    fn u64_at(&self, r: core::ops::Range<usize>) -> u64 {
        let mut x = [0u8; 8];
        x.copy_from_slice(&self.buffer.as_ref()[r]);
        u64::from_be_bytes(x)
    }
    pub fn protocol_raw(&self) -> u8 {
        self.buffer.as_ref()[field::PROTO]
    }
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VERSION]
    }
    pub fn control(&self) -> Control {
        Control(self.buffer.as_ref()[field::CONTROL])
    }
    pub fn hop_count(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_COUNT]
    }
    pub fn sack_len(&self) -> usize {
        self.u16_at(field::SACK_LEN) as usize
    }
    pub fn connection_id(&self) -> u32 {
        self.u32_at(field::CONN_ID)
    }
    pub fn seq(&self) -> u64 {
        self.u64_at(field::SEQ)
    }
    pub fn ack(&self) -> u64 {
        self.u64_at(field::ACK)
    }
    pub fn d_max_us(&self) -> u32 {
        self.u32_at(field::D_MAX)
    }
    pub fn d_s_us(&self) -> u32 {
        self.u32_at(field::D_S)
    }
    /// The `i`-th SACK block as `(start, end)`.
    pub fn sack_block(&self, i: usize) -> (u64, u64) {
        let at = HEADER_LEN + i * SACK_BLOCK_LEN;
        (self.u64_at(at..at + 8), self.u64_at(at + 8..at + 16))
    }
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN + self.sack_len()..]
    }

    /// Whether the datagram is transport feedback, what a receiver sends
    /// back to its sender: ATP's and MTL's SACK-OPT feedback (seed 001 Fig.
    /// 3.2(c)), or a pure TCP acknowledgement (ACK without data, SYN, FIN or
    /// RST). The one rule a queue that favours feedback asks (seed 000
    /// §V.A.2: clustering "occurs because we do not use a priority queue for
    /// feedback packets").
    pub fn is_feedback(&self) -> bool {
        let c = self.control();
        let pure_tcp_ack = self.protocol_raw() == ProtocolId::Tcp as u8
            && c.contains(Control::ACK)
            && c.0 & (Control::SYN | Control::FIN | Control::RST) == 0
            && self.payload().is_empty();
        c.contains(Control::SACK_OPT) || pure_tcp_ack
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn put(&mut self, r: core::ops::Range<usize>, bytes: &[u8]) {
        self.buffer.as_mut()[r].copy_from_slice(bytes);
    }
    pub fn set_hop_count(&mut self, n_h: u8) {
        self.buffer.as_mut()[field::HOP_COUNT] = n_h;
    }
    pub fn set_d_max_us(&mut self, d_max_us: u32) {
        self.put(field::D_MAX, &d_max_us.to_be_bytes());
    }
    pub fn set_d_s_us(&mut self, d_s_us: u32) {
        self.put(field::D_S, &d_s_us.to_be_bytes());
    }
    /// Only a host's driver writes it, on ATP data, whose `ack` is unused
    /// (the transmission number an ATP receiver echoes; net's `delay`).
    pub fn set_ack(&mut self, ack: u64) {
        self.put(field::ACK, &ack.to_be_bytes());
    }
}

/// The parsed form of a header. `sack_blocks` are half-open byte ranges
/// `[start, end)` of data the receiver *holds* beyond `ack` (seed 002 §4.3.3);
/// the holes between them are what the sender retransmits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Repr {
    pub protocol: ProtocolId,
    pub control: Control,
    pub hop_count: u8,
    pub connection_id: u32,
    pub seq: u64,
    pub ack: u64,
    pub d_max_us: u32,
    pub d_s_us: u32,
    pub sack_blocks: Vec<(u64, u64)>,
    /// Length of the data that follows the header (data is not copied).
    pub payload_len: usize,
}

impl Repr {
    /// Whether this is a sender's opening SYN (not a SYN-ACK, not a
    /// receiver's answer): the one datagram that may open a connection at
    /// a receiver, and the one that carries a Retry's token.
    pub fn opens_connection(&self) -> bool {
        let c = self.control;
        c.contains(Control::SYN) && !c.contains(Control::ACK) && !c.contains(Control::SACK_OPT)
    }

    /// Validates semantics on top of [`Packet::check_len`].
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr, WireError> {
        packet.check_len()?;
        let protocol = match packet.protocol_raw() {
            1 => ProtocolId::Atp,
            2 => ProtocolId::Tcp,
            other => return Err(WireError::UnknownProtocol(other)),
        };
        if packet.version() != VERSION {
            return Err(WireError::UnsupportedVersion(packet.version()));
        }
        let control = packet.control();
        if control.0 & !Control::KNOWN != 0 {
            return Err(WireError::UnknownFlags(control.0 & !Control::KNOWN));
        }
        let n = packet.sack_len() / SACK_BLOCK_LEN;
        let mut sack_blocks = Vec::with_capacity(n);
        for i in 0..n {
            let (start, end) = packet.sack_block(i);
            if end <= start {
                return Err(WireError::BadSackBlock { start, end });
            }
            sack_blocks.push((start, end));
        }
        let payload_len = packet.payload().len();
        // Feedback carries no data; the exceptions are the commit
        // confirmation on a feedback that acknowledges the FIN, and the
        // drain report on one that acknowledges the data while the FIN
        // waits for the commit ([`crate::stream`]).
        let fin = control.contains(Control::FIN);
        let commit_token = fin && payload_len == crate::stream::COMMIT_TOKEN_LEN;
        let drain_report = !fin && payload_len == crate::stream::DRAIN_REPORT_LEN;
        if control.contains(Control::SACK_OPT) && payload_len != 0 && !commit_token && !drain_report {
            return Err(WireError::DataInFeedback(payload_len));
        }
        Ok(Repr {
            protocol,
            control,
            hop_count: packet.hop_count(),
            connection_id: packet.connection_id(),
            seq: packet.seq(),
            ack: packet.ack(),
            d_max_us: packet.d_max_us(),
            d_s_us: packet.d_s_us(),
            sack_blocks,
            payload_len,
        })
    }

    /// Header plus SACK blocks (not the data).
    pub fn header_len(&self) -> usize {
        HEADER_LEN + self.sack_blocks.len().min(MAX_SACK_BLOCKS) * SACK_BLOCK_LEN
    }

    /// Header, SACK blocks and data.
    pub fn buffer_len(&self) -> usize {
        self.header_len() + self.payload_len
    }

    /// Writes the header and SACK blocks into the front of `buf`, which must be
    /// at least [`Repr::header_len`] long; the caller writes the data after it.
    /// At most [`MAX_SACK_BLOCKS`] blocks are written.
    pub fn emit(&self, buf: &mut [u8]) {
        let blocks = &self.sack_blocks[..self.sack_blocks.len().min(MAX_SACK_BLOCKS)];
        let sack_len = blocks.len() * SACK_BLOCK_LEN;
        buf[field::PROTO] = self.protocol as u8;
        buf[field::VERSION] = VERSION;
        buf[field::CONTROL] = self.control.0;
        buf[field::HOP_COUNT] = self.hop_count;
        buf[field::SACK_LEN].copy_from_slice(&(sack_len as u16).to_be_bytes());
        buf[field::RESERVED].copy_from_slice(&[0, 0]);
        buf[field::CONN_ID].copy_from_slice(&self.connection_id.to_be_bytes());
        buf[field::SEQ].copy_from_slice(&self.seq.to_be_bytes());
        buf[field::ACK].copy_from_slice(&self.ack.to_be_bytes());
        buf[field::D_MAX].copy_from_slice(&self.d_max_us.to_be_bytes());
        buf[field::D_S].copy_from_slice(&self.d_s_us.to_be_bytes());
        for (i, (start, end)) in blocks.iter().enumerate() {
            let at = HEADER_LEN + i * SACK_BLOCK_LEN;
            buf[at..at + 8].copy_from_slice(&start.to_be_bytes());
            buf[at + 8..at + 16].copy_from_slice(&end.to_be_bytes());
        }
    }
}

/// Why a receiver refused a connection, carried as an RST's payload of
/// exactly one byte (docs/PROTOCOLS.md §6). An RST without a payload, or
/// with any other payload, is a plain reset.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ResetReason {
    /// The receiver is at its transfer limit: try again later.
    Busy = 1,
    /// The receiver has no room for the file: the file system's free space
    /// (less a reserve) or the sender's quota would not hold it, or a write
    /// found the disk full.
    NoSpace = 2,
    /// The receiver holds a pre-shared key and could not verify the SYN
    /// with it (sent plain, always: it has no key in common with the
    /// sender). Tells nothing but that a key is needed and this one is not
    /// it (docs/PROTOCOLS.md §6, "Threat model").
    KeyMismatch = 3,
    /// Prove your address first (QUIC's Retry, RFC 9000 §8.1.2): the RST's
    /// payload is this byte and a [`RETRY_TOKEN_LEN`]-byte token, which the
    /// sender's next SYN carries as its payload ([`Repr::emit_retry`],
    /// [`retry_token`]). Not a failure.
    Retry = 4,
}

/// Bytes of an address validation token.
pub const RETRY_TOKEN_LEN: usize = 16;

/// The token a Retry RST carries, if `payload` is one.
pub fn retry_token(payload: &[u8]) -> Option<[u8; RETRY_TOKEN_LEN]> {
    match payload.split_first() {
        Some((&code, token)) if code == ResetReason::Retry as u8 => token.try_into().ok(),
        _ => None,
    }
}

impl ResetReason {
    pub fn from_u8(code: u8) -> Option<ResetReason> {
        match code {
            1 => Some(ResetReason::Busy),
            2 => Some(ResetReason::NoSpace),
            3 => Some(ResetReason::KeyMismatch),
            4 => Some(ResetReason::Retry),
            _ => None,
        }
    }

    /// The reason an RST's payload carries, if it is one known byte.
    pub fn from_payload(payload: &[u8]) -> Option<ResetReason> {
        match payload {
            &[code] => ResetReason::from_u8(code),
            _ => None,
        }
    }
}

/// The sequence numbers an RST names, so that its receiver can tell it from
/// a blind forgery (RFC 5961 §3): a receiver's RST to a sender names, in
/// `ack`, the next byte it expects (for a connection it has) or the `seq` of
/// the datagram it answers (for one it does not); a sender's RST to a
/// receiver names, in `seq`, one past the highest sequence it sent.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ResetAt {
    pub seq: u64,
    pub ack: u64,
}

impl ResetAt {
    /// From a receiver: the sequence the sender must hold exactly.
    pub fn to_sender(ack: u64) -> ResetAt {
        ResetAt { seq: 0, ack }
    }
    /// From a sender: one past the highest sequence it sent.
    pub fn to_receiver(seq: u64) -> ResetAt {
        ResetAt { seq, ack: 0 }
    }
}

impl Repr {
    /// An RST for `connection_id` at `at` (docs/PROTOCOLS.md §6, "Resets":
    /// RFC 5961 §3's check of the sequence an RST names); with a reason, its
    /// payload is the one reason byte ([`Repr::emit_reset`] writes it).
    pub fn reset(protocol: ProtocolId, connection_id: u32, at: ResetAt, reason: Option<ResetReason>) -> Repr {
        Repr {
            protocol,
            control: Control(Control::RST),
            hop_count: 0,
            connection_id,
            seq: at.seq,
            ack: at.ack,
            d_max_us: 0,
            d_s_us: 0,
            sack_blocks: Vec::new(),
            payload_len: usize::from(reason.is_some()),
        }
    }

    /// Writes a Retry (an RST with [`ResetReason::Retry`] and `token`) into
    /// `buf`, which must be at least `HEADER_LEN + 1 + RETRY_TOKEN_LEN`
    /// bytes; returns its length.
    pub fn emit_retry(
        buf: &mut [u8],
        protocol: ProtocolId,
        connection_id: u32,
        at: ResetAt,
        token: &[u8; RETRY_TOKEN_LEN],
    ) -> usize {
        let mut repr = Repr::reset(protocol, connection_id, at, Some(ResetReason::Retry));
        repr.payload_len = 1 + RETRY_TOKEN_LEN;
        repr.emit(buf);
        let at = repr.header_len();
        buf[at] = ResetReason::Retry as u8;
        buf[at + 1..at + 1 + RETRY_TOKEN_LEN].copy_from_slice(token);
        repr.buffer_len()
    }

    /// Writes a whole RST (header and reason byte) into `buf`, which must be
    /// at least `HEADER_LEN + 1` bytes; returns its length.
    pub fn emit_reset(
        buf: &mut [u8],
        protocol: ProtocolId,
        connection_id: u32,
        at: ResetAt,
        reason: Option<ResetReason>,
    ) -> usize {
        let repr = Repr::reset(protocol, connection_id, at, reason);
        repr.emit(buf);
        if let Some(reason) = reason {
            buf[repr.header_len()] = reason as u8;
        }
        repr.buffer_len()
    }
}

/// Parses untrusted bytes: header, then the data slice.
pub fn parse_datagram(bytes: &[u8]) -> Result<(Repr, &[u8]), WireError> {
    let packet = Packet::new_checked(bytes)?;
    let repr = Repr::parse(&packet)?;
    let data_at = HEADER_LEN + packet.sack_len();
    Ok((repr, &bytes[data_at..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relay_written_ranges_are_in_order_and_apart() {
        for pair in RELAY_WRITTEN.windows(2) {
            assert!(pair[0].end <= pair[1].start, "{pair:?}");
        }
        assert!(RELAY_WRITTEN.iter().all(|r| r.end <= HEADER_LEN));
    }

    // A feedback packet: ATP, SACK-OPT|ACK, N_h 3, conn 0xdeadbeef, seq 0,
    // ack 1000, D_max 2500 us, D_s 0, one SACK block [2000, 3000).
    static FEEDBACK: [u8; 52] = [
        0x01, 0x01, 0x50, 0x03, 0x00, 0x10, 0x00, 0x00, //
        0xde, 0xad, 0xbe, 0xef, //
        0, 0, 0, 0, 0, 0, 0, 0, //
        0, 0, 0, 0, 0, 0, 0x03, 0xe8, //
        0x00, 0x00, 0x09, 0xc4, 0, 0, 0, 0, //
        0, 0, 0, 0, 0, 0, 0x07, 0xd0, 0, 0, 0, 0, 0, 0, 0x0b, 0xb8,
    ];

    fn feedback_repr() -> Repr {
        Repr {
            protocol: ProtocolId::Atp,
            control: Control(Control::SACK_OPT | Control::ACK),
            hop_count: 3,
            connection_id: 0xdead_beef,
            seq: 0,
            ack: 1000,
            d_max_us: 2500,
            d_s_us: 0,
            sack_blocks: vec![(2000, 3000)],
            payload_len: 0,
        }
    }

    #[test]
    fn deconstruct() {
        let p = Packet::new_checked(&FEEDBACK[..]).unwrap();
        assert_eq!(p.protocol_raw(), 1);
        assert_eq!(p.version(), 1);
        assert!(p.control().contains(Control::SACK_OPT));
        assert!(!p.control().contains(Control::SACK_REQ));
        assert_eq!(p.hop_count(), 3);
        assert_eq!(p.sack_len(), 16);
        assert_eq!(p.connection_id(), 0xdead_beef);
        assert_eq!(p.ack(), 1000);
        assert_eq!(p.d_max_us(), 2500);
        assert_eq!(p.sack_block(0), (2000, 3000));
        assert!(p.payload().is_empty());
    }

    #[test]
    fn parse_and_emit_round_trip() {
        let p = Packet::new_checked(&FEEDBACK[..]).unwrap();
        assert_eq!(Repr::parse(&p).unwrap(), feedback_repr());
        let repr = feedback_repr();
        let mut buf = vec![0xffu8; repr.buffer_len()];
        repr.emit(&mut buf);
        assert_eq!(&buf[..], &FEEDBACK[..]);
    }

    #[test]
    fn relay_fields_are_writable_in_place() {
        let mut bytes = FEEDBACK;
        let mut p = Packet::new_unchecked(&mut bytes[..]);
        p.set_d_max_us(7000);
        p.set_hop_count(4);
        p.set_d_s_us(123);
        let repr = Repr::parse(&Packet::new_checked(&bytes[..]).unwrap()).unwrap();
        assert_eq!((repr.d_max_us, repr.hop_count, repr.d_s_us), (7000, 4, 123));
    }

    #[test]
    fn malformed_datagrams_give_typed_errors() {
        assert_eq!(parse_datagram(&FEEDBACK[..35]).unwrap_err(), WireError::Truncated { len: 35 });
        let mut b = FEEDBACK;
        b[0] = 9;
        assert_eq!(parse_datagram(&b).unwrap_err(), WireError::UnknownProtocol(9));
        let mut b = FEEDBACK;
        b[1] = 2;
        assert_eq!(parse_datagram(&b).unwrap_err(), WireError::UnsupportedVersion(2));
        let mut b = FEEDBACK;
        b[2] |= 0x08;
        assert_eq!(parse_datagram(&b).unwrap_err(), WireError::UnknownFlags(0x08));
        let mut b = FEEDBACK;
        b[5] = 17;
        assert_eq!(parse_datagram(&b).unwrap_err(), WireError::BadSackLen { sack_len: 17 });
        let mut b = FEEDBACK;
        b[5] = 32;
        assert_eq!(parse_datagram(&b).unwrap_err(), WireError::SackPastEnd { sack_len: 32, len: 52 });
        let mut b = FEEDBACK;
        b[51] = 0;
        b[50] = 0;
        assert!(matches!(parse_datagram(&b).unwrap_err(), WireError::BadSackBlock { .. }));
        let mut with_data = FEEDBACK.to_vec();
        with_data.push(0);
        assert_eq!(parse_datagram(&with_data).unwrap_err(), WireError::DataInFeedback(1));
        // A drain report (8 bytes) only without FIN, a commit token (32)
        // only with it.
        let mut report = FEEDBACK.to_vec();
        report.extend_from_slice(&[0; 8]);
        assert!(parse_datagram(&report).is_ok());
        report[2] |= Control::FIN;
        assert_eq!(parse_datagram(&report).unwrap_err(), WireError::DataInFeedback(8));
        let mut token = FEEDBACK.to_vec();
        token.extend_from_slice(&[0; 32]);
        assert_eq!(parse_datagram(&token).unwrap_err(), WireError::DataInFeedback(32));
        token[2] |= Control::FIN;
        assert!(parse_datagram(&token).is_ok());
    }

    #[test]
    fn data_packet_payload_follows_header() {
        let repr = Repr {
            protocol: ProtocolId::Tcp,
            control: Control(Control::ACK),
            hop_count: 0,
            connection_id: 1,
            seq: 1 << 40,
            ack: 0,
            d_max_us: 0,
            d_s_us: 800,
            sack_blocks: vec![],
            payload_len: 3,
        };
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(&mut buf);
        buf[HEADER_LEN..].copy_from_slice(b"abc");
        let (parsed, data) = parse_datagram(&buf).unwrap();
        assert_eq!(parsed, repr);
        assert_eq!(data, b"abc");
    }

    #[test]
    fn a_busy_reset_is_an_rst_with_one_reason_byte() {
        let mut buf = [0xffu8; 64];
        let len =
            Repr::emit_reset(&mut buf, ProtocolId::Tcp, 0x4000_0001, ResetAt::to_sender(7), Some(ResetReason::Busy));
        let mut expected = vec![2, 1, 0x04, 0, 0, 0, 0, 0, 0x40, 0, 0, 1];
        // seq 0, ack 7 (the sequence the sender must hold), no stamps.
        expected.extend_from_slice(&[0; 8]);
        expected.extend_from_slice(&7u64.to_be_bytes());
        expected.extend_from_slice(&[0; 8]);
        expected.push(1);
        assert_eq!(&buf[..len], &expected[..]);
        let (repr, payload) = parse_datagram(&buf[..len]).unwrap();
        assert!(repr.control.contains(Control::RST));
        assert_eq!(ResetReason::from_payload(payload), Some(ResetReason::Busy));
        // A plain RST, an unknown code or a longer payload carry no reason.
        let len = Repr::emit_reset(&mut buf, ProtocolId::Atp, 7, ResetAt::default(), None);
        assert_eq!(len, HEADER_LEN);
        for payload in [&[][..], &[0], &[5], &[1, 1]] {
            assert_eq!(ResetReason::from_payload(payload), None, "{payload:?}");
        }
        assert_eq!(ResetReason::from_payload(&[2]), Some(ResetReason::NoSpace));
    }

    #[test]
    fn emit_caps_sack_blocks_at_twenty() {
        let repr = Repr { sack_blocks: (0..25u64).map(|i| (i * 10 + 1, i * 10 + 2)).collect(), ..feedback_repr() };
        assert_eq!(repr.header_len(), HEADER_LEN + MAX_SACK_BLOCKS * SACK_BLOCK_LEN);
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(&mut buf);
        let (parsed, _) = parse_datagram(&buf).unwrap();
        assert_eq!(parsed.sack_blocks.len(), MAX_SACK_BLOCKS);
    }

    #[test]
    fn feedback_is_sack_opt_or_a_pure_tcp_ack() {
        let is_feedback = |b: &[u8]| Packet::new_checked(b).unwrap().is_feedback();
        // ATP's feedback (SACK-OPT|ACK) is feedback; the same header as ATP
        // data (no SACK-OPT, no SACK blocks) is not.
        assert!(is_feedback(&FEEDBACK));
        let mut data = FEEDBACK[..HEADER_LEN].to_vec();
        data[2] = 0;
        data[5] = 0;
        data.extend_from_slice(b"abc");
        assert!(!is_feedback(&data));
        // TCP: an ACK without data is feedback; with one byte of data, or
        // with SYN, FIN or RST, it is not.
        let tcp = |control: u8, payload_len: usize| {
            let repr = Repr {
                protocol: ProtocolId::Tcp,
                control: Control(control),
                hop_count: 0,
                connection_id: 1,
                seq: 1,
                ack: 1,
                d_max_us: 0,
                d_s_us: 0,
                sack_blocks: vec![],
                payload_len,
            };
            let mut buf = vec![0u8; repr.buffer_len()];
            repr.emit(&mut buf);
            buf
        };
        assert!(is_feedback(&tcp(Control::ACK, 0)));
        assert!(!is_feedback(&tcp(Control::ACK, 1)));
        for extra in [Control::SYN, Control::FIN, Control::RST] {
            assert!(!is_feedback(&tcp(Control::ACK | extra, 0)), "{extra:#x}");
        }
        // MTL rides on TCP's id: its SACK-OPT feedback counts, its data not.
        assert!(is_feedback(&tcp(Control::SACK_OPT, 0)));
        assert!(!is_feedback(&tcp(0, 10)));
    }
}
