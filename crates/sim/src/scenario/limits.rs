//! The bounds of the scenario's numeric keys (docs/PROTOCOLS.md, "Scenario
//! limits"). Each is checked once, in `Scenario::validate`.

/// Largest IP packet the simulator carries (an 802.11 MSDU is ≤ 2304 bytes).
pub const MAX_PACKET_BYTES: u32 = 2304;

/// Longest run, simulated seconds: one day. A saturated 6-hop chain
/// simulates about 100 s per wall second, so a day takes minutes, with
/// progress shown by `meshbed sim`.
pub const MAX_DURATION_S: f64 = 86_400.0;
/// Fewest nodes in a topology: a flow needs two ends.
pub const MIN_NODES: u32 = 2;
/// Fewest rows of a stack topology: an odd number with a middle row and
/// one on each side of it (seed 001 §5.4).
pub const MIN_STACK_FLOWS: u32 = 3;
/// Most nodes in a topology. The radio model's and the route table's
/// memory grows with the links and the flows' ends (issue 28), and every
/// frame is offered to every node within the interference floor; 10 000
/// nodes is a city-wide mesh.
pub const MAX_NODES: u32 = 10_000;
/// Most nodes where a table per pair of nodes remains: static shadowing
/// (a draw per link, kept) and explicit static paths (a next hop per
/// pair): about 8 bytes per pair, 32 MB at 2000 nodes.
pub const MAX_NODES_PAIR_TABLES: u32 = 2000;
/// Largest chain or grid spacing: 10 km is beyond any 802.11 link at up to
/// 40 dBm, so a wider spacing could only disconnect the nodes.
pub const MAX_SPACING_M: f64 = 10_000.0;
/// Largest |x| or |y| of an explicit node: 20 000 km, the span of the
/// longest chain at the largest spacing; it keeps distances finite.
pub const MAX_COORDINATE_M: f64 = 2.0e7;
/// Most flows in a scenario (also the bound of the `flow_count` sweep).
pub const MAX_FLOWS: usize = 1000;
/// Slowest CBR rate, kbit/s (1 bit/s: one 1500-byte packet every 3 h 20 min);
/// the fastest is the source node's PHY data rate, all the MAC could carry.
pub const MIN_CBR_RATE_KBPS: f64 = 0.001;
/// Largest `bytes` of a transport flow: 1 TiB, more than a day's run
/// ([`MAX_DURATION_S`]) at 54 Mbit/s could carry (583 GB). It bounds no
/// memory: a simulated sender holds at most its window of the data
/// (`Scenario::sender_held_bytes`), which it writes as the window frees
/// (issue 28); the emulator, which holds a transfer whole, has its own
/// bound and refuses a flow above it by name.
pub const MAX_FLOW_BYTES: u64 = 1 << 40;
/// `batch_packets`: seed 004 §IV's batches are 5,000 packets; ten million
/// packets of even 100 bytes are a gigabyte, and of full packets more than
/// an hour of the fastest link.
pub const MAX_BATCH_PACKETS: u32 = 10_000_000;
/// Timer-like durations of the engines (ATP's epoch, TCP's minimum RTO):
/// at least 1 ms, else a timer fires millions of times per simulated
/// second; at most a minute (TCP's maximum RTO).
pub const ENGINE_PERIOD_S: std::ops::RangeInclusive<f64> = 0.001..=60.0;
/// The delayed-ACK timer: from 1 ms to RFC 5681 §4.2's bound of 500 ms.
pub const DELAYED_ACK_TIMEOUT_S: std::ops::RangeInclusive<f64> = 0.001..=0.5;
/// Idle timeouts: from 1 ms to the longest run.
pub const IDLE_TIMEOUT_S: std::ops::RangeInclusive<f64> = 0.001..=MAX_DURATION_S;
/// TCP windows, segments: 65 535 segments is gigabytes in flight, more than
/// any wireless path's bandwidth-delay product.
pub const MAX_CWND_SEGMENTS: u32 = 65_535;
/// Largest scenario or experiment file: far above any hand-written one
/// (the explicit topology of 10 000 nodes is about 500 kB).
pub const MAX_FILE_BYTES: u64 = 1 << 20;
/// Fastest reader rate, bit/s: 10 Gbit/s, beyond any radio's.
pub const MAX_READ_RATE_BPS: u64 = 10_000_000_000;
/// Largest receive buffer: ATP's and TCP's memory guard (`max_reorder_bytes`).
pub const MAX_RECEIVE_BUFFER_BYTES: u64 = 256 << 20;
/// `[flows.atp] eta`: η multiplies a node's delay when it is idle (3 in
/// the documents, seed 001 §3.1).
pub const ATP_ETA: std::ops::RangeInclusive<f64> = 0.001..=100.0;
/// `[flows.atp] delay_read_interval_s`: from every packet (0) to once a
/// second, beyond which the reading says nothing about the current delay.
pub const DELAY_READ_INTERVAL_S: std::ops::RangeInclusive<f64> = 0.0..=1.0;
/// `[flows.atp] sack_more_fraction`: the receiver's silence before SACK-MORE,
/// in epochs (seed 001 §3.3: one half); from a hundredth to a hundred.
pub const SACK_MORE_FRACTION: std::ops::RangeInclusive<f64> = 0.01..=100.0;
/// `[flows.atp] missed_feedback_decrease`: the factor a missed feedback
/// multiplies the rate by (0.5 in meshbed's engine, seed 002 §4.3.2 gives no
/// number); from a hundredth to 1 (no decrease: the counterfactual of seed
/// 001 §5.4's "severe penalty for a missed feedback packet").
pub const MISSED_FEEDBACK_DECREASE: std::ops::RangeInclusive<f64> = 0.01..=1.0;
/// `[flows.atp] relay_forwarding_delay_s`: from none (0) to 100 ms, far
/// beyond any relay daemon's round trip (the emulator's is tens to hundreds
/// of microseconds).
pub const RELAY_FORWARDING_DELAY_S: std::ops::RangeInclusive<f64> = 0.0..=0.1;
/// `[flows.atp] phi`: φ is a margin on the rate (0.1 in the documents); 10
/// would already mean "never increase".
pub const ATP_PHI: std::ops::RangeInclusive<f64> = 0.0..=10.0;
/// `[flows.tcp] pacing_v`: V scales the rate (seed 003 §6); 0.01 is a
/// hundredth of a window per RTT, 100 a hundred windows, both far past any use.
pub const PACING_V: std::ops::RangeInclusive<f64> = 0.01..=100.0;
/// `[routing] ss_threshold_dbm` (AODV's signal-strength filter, seed 003
/// §3.2): a signal strength in dBm.
pub const SS_THRESHOLD_DBM: std::ops::RangeInclusive<f64> = -150.0..=0.0;
