//! What the receiver tells its caller: its counters, a report per ended
//! transfer, progress while transfers run.

use serde::Serialize;
use std::net::SocketAddr;

/// Receiver-wide counters.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ReceiverCounters {
    pub datagrams: u64,
    /// Would not parse (truncated header, bad version, flags, SACK length…),
    /// or longer than any engine datagram.
    pub malformed: u64,
    /// Well-formed but for no connection here (unknown id and not a SYN, or a
    /// known id from another address), or a SYN whose id names no protocol
    /// or the other protocol family.
    pub stray: u64,
    /// SYNs refused (answered with a busy RST) because every slot, or the
    /// peer's share, was taken by transfers that could not be evicted.
    pub over_capacity: u64,
    /// Transfers ended to make room for a new one (half-open or stalled).
    pub evicted: u64,
    /// Plain SYNs answered with a Retry: their address not yet proven
    /// (`ReceiveOptions::validate_addresses`); nothing was kept for them.
    pub address_retries: u64,
    /// Finished transfers dropped before their linger ended because the
    /// lingering table was full.
    pub lingering_evicted: u64,
    /// RSTs sent, busy refusals included.
    pub resets_sent: u64,
    /// Data datagrams dropped because holding them would have exceeded a
    /// reorder limit.
    pub dropped_over_buffer_limit: u64,
    /// What the out-of-order bytes of all transfers are charged now, and at
    /// most so far (per-piece overhead included).
    pub reorder_bytes: u64,
    pub reorder_peak_bytes: u64,
    /// Temporary files of dead receivers removed at start.
    pub stale_temporaries_removed: u64,
    /// With `--psk`: datagrams that failed verification (forged, replayed,
    /// another key), dropped before any engine saw them.
    pub unauthenticated: u64,
    /// With `--routed`: transfers that could not reach the routing daemon
    /// (or lost it), and ran without its notices.
    pub routed_unreachable: u64,
    pub transfers_completed: u64,
    pub transfers_failed: u64,
}

/// One ended transfer.
#[derive(Clone, Debug, Serialize)]
pub struct TransferReport {
    pub ok: bool,
    pub error: Option<String>,
    pub connection_id: String,
    pub peer: String,
    pub protocol: String,
    pub file: Option<String>,
    /// A timed test stream (`meshbed send --time`): `file_bytes` were
    /// checked against the generated stream as they came, and nothing was
    /// written; it ends, successfully, when its sender stops.
    pub timed: bool,
    /// A reverse test request (`meshbed send --reverse`), taken: the caller
    /// now sends the stream ([`crate::reverse`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reverse: Option<crate::reverse::ReverseRequest>,
    /// The committed file, when `ok` and writing to a directory.
    pub path: Option<String>,
    pub file_bytes: u64,
    pub stream_bytes: u64,
    pub sha256: Option<String>,
    pub duration_s: f64,
    pub goodput_bps: f64,
    pub datagrams_received: u64,
    pub feedback_packets: u64,
    /// Datagrams this connection's engine dropped: duplicates, beyond the
    /// window or the FIN, or malformed for it.
    pub dropped_datagrams: u64,
    /// Data datagrams dropped because of the reorder limits.
    pub dropped_over_buffer_limit: u64,
    /// The most its out-of-order bytes were charged.
    pub reorder_peak_bytes: u64,
    /// The receiver's counters when this transfer ended.
    pub receiver: ReceiverCounters,
    /// What the routing daemon told this transfer's engine (with `--routed`).
    pub routing: Option<crate::notice::RoutingSeen>,
    /// The engine's trace, with `ReceiveOptions::trace`.
    #[serde(skip)]
    pub trace: Option<crate::conn::EngineTrace>,
}

impl TransferReport {
    /// What a completed transfer's line ends with, a file's or a timed
    /// stream's: goodput, datagrams, feedback, drops and the counters.
    fn rates_text(&self) -> String {
        format!(
            "{:.3} Mbit/s, {} datagrams, {} feedback, {} dropped{}\n",
            self.goodput_bps / 1e6,
            self.datagrams_received,
            self.feedback_packets,
            self.dropped_datagrams,
            self.counters_note(),
        )
    }

    pub fn to_text(&self) -> String {
        let what = self.file.as_deref().unwrap_or("(no header)");
        match &self.error {
            None if self.reverse.is_some() => format!(
                "reverse test requested by {} with {}: {:.3} s to port {}\n",
                self.peer,
                self.protocol,
                self.reverse.map_or(0.0, |r| r.duration.as_secs_f64()),
                self.reverse.map_or(0, |r| r.port),
            ),
            None if self.timed => format!(
                "received a timed test stream from {} with {}: {} bytes in {:.3} s, every one as generated: {}",
                self.peer,
                self.protocol,
                self.file_bytes,
                self.duration_s,
                self.rates_text(),
            ),
            None => format!(
                "received {} ({} bytes, sha256 {}) from {} with {} in {:.3} s: {}",
                self.path.as_deref().unwrap_or(what),
                self.file_bytes,
                self.sha256.as_deref().unwrap_or("-"),
                self.peer,
                self.protocol,
                self.duration_s,
                self.rates_text(),
            ),
            Some(e) => format!(
                "FAILED {what} from {} with {} (connection {}) after {} bytes: {e}{}\n",
                self.peer,
                self.protocol,
                self.connection_id,
                self.file_bytes,
                self.counters_note()
            ),
        }
    }

    fn counters_note(&self) -> String {
        let c = &self.receiver;
        if c.malformed + c.stray + c.over_capacity + c.evicted + c.dropped_over_buffer_limit == 0 {
            String::new()
        } else {
            format!(
                " (receiver so far: {} malformed, {} stray, {} refused busy, {} evicted, {} over the reorder limit)",
                c.malformed, c.stray, c.over_capacity, c.evicted, c.dropped_over_buffer_limit
            )
        }
    }
}

/// A transfer in progress, for progress displays.
#[derive(Clone, Debug)]
pub struct TransferProgress {
    pub connection_id: u32,
    pub peer: SocketAddr,
    /// Since its SYN arrived (the clock of its report's `duration_s`).
    pub elapsed: std::time::Duration,
    pub file: Option<String>,
    pub received: u64,
    pub total: Option<u64>,
}

/// What the receiver tells its caller.
pub enum ReceiverEvent<'a> {
    /// Every ~100 ms while transfers run (the sender samples its progress
    /// as often, so `--interval` has the same floor at both ends).
    Progress(&'a [TransferProgress]),
    /// A transfer ended.
    Ended(&'a TransferReport),
}
