//! `meshbed recv`: the receiving end of `meshbed send` (meshbed-net's
//! receiver), with a progress line and, as iperf3's server prints them,
//! per-interval reports of what each transfer delivered.

use crate::out;
use crate::transfer::{load_psk, parse_interval, parse_positive_duration, resolve, routed_socket};
use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use meshbed_net::interval::{self, Interval, IntervalMeter};
use meshbed_net::{ReceiveOptions, Receiver, ReceiverEvent, SinkKind, TransferProgress, TransferReport};
use std::collections::HashMap;
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// The receiver's limits: their defaults have one home, the endpoint.
static LIMITS: std::sync::LazyLock<meshbed_proto::endpoint::EndpointConfig> =
    std::sync::LazyLock::new(meshbed_proto::endpoint::EndpointConfig::default);

#[derive(clap::Args)]
pub struct RecvArgs {
    /// Address (or host name) and port to listen on.
    #[arg(long, default_value = "0.0.0.0:7411", value_parser = resolve)]
    pub listen: SocketAddr,
    /// Directory for the received files.
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// Replace an existing file of the same name.
    #[arg(long)]
    pub overwrite: bool,
    /// A transfer fails after this long without hearing from its sender.
    #[arg(long, default_value = "10s", value_parser = parse_positive_duration)]
    pub timeout: std::time::Duration,
    /// Keep a finished transfer this long to answer a sender that missed the last acknowledgement.
    #[arg(long, default_value = "10s", value_parser = parse_positive_duration)]
    pub linger: std::time::Duration,
    /// Exit after this many transfers ended (exit code 2 if any failed). Default: run until killed.
    #[arg(long)]
    pub count: Option<u64>,
    /// Transfers in progress at most (finished ones do not count); beyond it a sender is refused as busy.
    #[arg(long, default_value_t = LIMITS.max_connections, value_parser = at_least_one)]
    pub max_active: usize,
    /// Transfers in progress from one IP address at most.
    #[arg(long, default_value_t = LIMITS.max_connections_per_peer, value_parser = at_least_one)]
    pub max_per_peer: usize,
    /// Transfers in progress from one address prefix (an IPv4 /24, an IPv6 /64) at most.
    #[arg(long, default_value_t = LIMITS.max_connections_per_prefix, value_parser = at_least_one)]
    pub max_per_prefix: usize,
    /// When no slot is free, a transfer older than 5 s that averaged less than this many bits per
    /// second (e.g. 8k, 1.5M) gives way to a new sender, the slowest first, as do half-open and
    /// stalled ones: a trickle cannot hold a slot.
    #[arg(long, value_name = "RATE", default_value_t = LIMITS.min_rate_bps, value_parser = parse_rate_bps)]
    pub min_rate: u64,
    /// Disk space left free whatever senders announce (e.g. 500M, 2G; k, M, G are powers of 1024);
    /// default: 5% of the file system, at most 1 GiB. A file that does not fit in the free space less
    /// this and less what transfers in progress announced is refused: its sender hears "receiver out
    /// of space".
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub reserve: Option<u64>,
    /// Bytes one IP address may have committed in this run plus announced in transfers in progress
    /// (e.g. 10G); default: no quota.
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub quota_per_peer: Option<u64>,
    /// One JSON object per transfer, one per line.
    #[arg(long)]
    pub json: bool,
    /// No listening notice or progress.
    #[arg(long)]
    pub quiet: bool,
    /// Print a line per interval (e.g. 1s) for each transfer: the bytes it delivered in order and their
    /// goodput (iperf3 -i on the server); with --json they are in each transfer's report instead.
    #[arg(long, value_name = "DURATION", value_parser = parse_interval)]
    pub interval: Option<std::time::Duration>,
    /// Run reverse tests (`meshbed send --reverse`, iperf3 -R): send a timed test stream, at most 1 hour,
    /// to a client that asks, at the address it asked from (at most 4 at once). Off by default: it makes
    /// this receiver a sender for whoever can reach it (and holds the --psk key, with one).
    #[arg(long)]
    pub allow_reverse: bool,
    /// Accept only datagrams sealed with the pre-shared key in this file; default: the key in $MESHBED_PSK, if set.
    #[arg(long, value_name = "FILE")]
    pub psk: Option<PathBuf>,
    /// Without a key on an address that is not loopback: accept unauthenticated, unencrypted transfers
    /// (anyone who can reach it can then send files, and read, forge or reset transfers on the path).
    /// Off loopback a key is the default.
    #[arg(long)]
    pub insecure: bool,
    /// Read each transfer at most LIMIT bits per second (e.g. 200k, 1.5M, 2000000; k, M, G are powers of
    /// 1000), a slow application: ATP's sender is told the read rate, TCP's finds the receive buffer full.
    /// MTL transfers have no flow control and are read as they arrive.
    #[arg(long, value_name = "LIMIT", value_parser = parse_rate_bps)]
    pub rate: Option<u64>,
    /// TCP transfers' receivers delay their ACKs: one per second segment, or after 200 ms (RFC 1122
    /// §4.2.3.2), as Linux's do; by default every segment is acknowledged, as the presets do.
    #[arg(long)]
    pub tcp_delayed_acks: bool,
    /// With --tcp-delayed-acks: how long a delayed ACK waits for a second segment (default 200ms; Linux's
    /// delayed-ACK timer is its ATO, 40ms for a bulk receiver); 1ms to 500ms (RFC 5681 §4.2).
    #[arg(long, value_name = "DURATION", requires = "tcp_delayed_acks", value_parser = parse_delayed_ack_timeout)]
    pub tcp_delayed_ack_timeout: Option<std::time::Duration>,
    /// The node's routing daemon (`meshbed routed --notice-socket`): each transfer hears of its sender's route; default: $MESHBED_ROUTED_SOCKET, set inside an emulated node that runs daemons.
    #[arg(long, value_name = "SOCKET")]
    pub routed: Option<PathBuf>,
}

/// A limit of transfers: zero would refuse every sender.
fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("`{s}`: expected a whole number of transfers, at least 1 (0 would refuse every sender)")),
    }
}

/// A rate in bits per second: a number with an optional k, M or G (powers
/// of 1000), e.g. `200k`, `1.5M`, `2000000`; more than zero.
pub fn parse_rate_bps(s: &str) -> Result<u64, String> {
    let expected =
        "expected a rate in bits per second above zero, like 200k, 1.5M or 2000000 (k, M, G: powers of 1000)";
    let (number, scale) = match s.strip_suffix(['k', 'K']) {
        Some(n) => (n, 1e3),
        None => match s.strip_suffix('M') {
            Some(n) => (n, 1e6),
            None => match s.strip_suffix('G') {
                Some(n) => (n, 1e9),
                None => (s, 1.0),
            },
        },
    };
    let value = number
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && number.chars().all(|c| c.is_ascii_digit() || c == '.'))
        .map(|v| (v * scale).round())
        .filter(|&bps| (1.0..=1e12).contains(&bps))
        .ok_or_else(|| format!("`{s}`: {expected}"))?;
    Ok(value as u64)
}

/// A size in bytes: a whole number with an optional k, M, G or T (powers
/// of 1024), e.g. `500M`, `2G`, `1048576`.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let expected = "expected a size in bytes, like 500M, 2G or 1048576 (k, M, G, T: powers of 1024)";
    let (number, shift) = match s.char_indices().last() {
        Some((i, 'k' | 'K')) => (&s[..i], 10),
        Some((i, 'M')) => (&s[..i], 20),
        Some((i, 'G')) => (&s[..i], 30),
        Some((i, 'T')) => (&s[..i], 40),
        _ => (s, 0),
    };
    number
        .parse::<u64>()
        .ok()
        .filter(|_| number.chars().all(|c| c.is_ascii_digit()))
        .and_then(|n| n.checked_mul(1u64 << shift))
        .ok_or_else(|| format!("`{s}`: {expected}"))
}

pub fn run_recv(a: RecvArgs) -> Result<()> {
    if std::fs::metadata(&a.dir).is_ok_and(|m| !m.is_dir()) {
        bail!("--dir {}: not a directory; expected a directory for the received files", a.dir.display());
    }
    let mut options = ReceiveOptions::new(a.listen, SinkKind::Directory { dir: a.dir.clone(), overwrite: a.overwrite });
    options.timeout = a.timeout;
    options.linger = a.linger;
    options.max_transfers = a.count;
    options.psk = load_psk(&a.psk, a.insecure, a.listen, "recv")?;
    options.read_rate_bps = a.rate;
    options.routed = routed_socket(&a.routed);
    options.max_connections = a.max_active;
    options.max_connections_per_peer = a.max_per_peer;
    options.max_connections_per_prefix = a.max_per_prefix;
    options.min_rate_bps = a.min_rate;
    options.space = meshbed_net::SpaceLimits { reserve_bytes: a.reserve, quota_per_peer_bytes: a.quota_per_peer };
    options.allow_reverse = a.allow_reverse;
    options.tcp.delayed_acks = a.tcp_delayed_acks.then_some(true);
    options.tcp.delayed_ack_timeout =
        a.tcp_delayed_ack_timeout.map(|t| meshbed_core::Duration::from_nanos(t.as_nanos() as u64));
    let mut reverse = crate::reverse::ReverseSenders::new(options.psk.clone(), a.timeout, a.json);
    let mut receiver = Receiver::bind(options).with_context(|| format!("listening on {}", a.listen))?;
    let local = receiver.local_addr()?;
    if !a.quiet {
        eprintln!("meshbed recv: listening on {local}, writing to {}", a.dir.display());
        let stale = receiver.counters().stale_temporaries_removed;
        if stale > 0 {
            eprintln!("meshbed recv: removed {stale} temporary files left by receivers that died");
        }
    }
    let bar = if a.quiet || !std::io::stderr().is_terminal() {
        None
    } else {
        let bar = ProgressBar::new_spinner();
        bar.set_style(ProgressStyle::with_template("{spinner} {msg}").expect("valid template"));
        Some(bar)
    };
    let mut meters = a.interval.map(Meters::new);
    let mut last: Option<(Instant, u64)> = None;
    let mut failed = 0u64;
    let mut write_error = None;
    let stop = AtomicBool::new(false);
    let counters = receiver.run(&stop, &mut |event| match event {
        ReceiverEvent::Progress(list) => {
            if let Some(meters) = &mut meters {
                let lines = meters.progress(list, !a.json);
                if let Err(e) = print_line(&bar, &lines) {
                    write_error.get_or_insert(e);
                }
            }
            let Some(bar) = &bar else { return };
            if list.is_empty() {
                bar.set_message("waiting for transfers");
                return;
            }
            let received: u64 = list.iter().map(|p| p.received).sum();
            let now = Instant::now();
            let rate = match last {
                Some((t, b)) if now > t => (received.saturating_sub(b)) as f64 / (now - t).as_secs_f64(),
                _ => 0.0,
            };
            last = Some((now, received));
            let files: Vec<String> = list
                .iter()
                .map(|p| match (&p.file, p.total) {
                    (Some(f), Some(t)) => format!("{f} {:.1}/{:.1} MB", p.received as f64 / 1e6, t as f64 / 1e6),
                    _ => format!("{:08x} starting", p.connection_id),
                })
                .collect();
            bar.set_message(format!("{:.2} MB/s  {}", rate / 1e6, files.join(", ")));
            bar.tick();
        }
        ReceiverEvent::Ended(report) => {
            if !report.ok {
                failed += 1;
            }
            if let Some(request) = report.reverse.filter(|_| report.ok) {
                if let Some(line) = reverse.start(report, request) {
                    if let Err(e) = print_line(&bar, &line) {
                        write_error.get_or_insert(e);
                    }
                }
            }
            let intervals = meters.as_mut().map(|m| m.ended(report));
            let line = if a.json {
                let mut v = serde_json::to_value(report).unwrap_or_default();
                if let Some((_, intervals)) = intervals {
                    v["intervals"] = serde_json::to_value(intervals).unwrap_or_default();
                }
                v.to_string() + "\n"
            } else {
                intervals.map(|(lines, _)| lines).unwrap_or_default() + &report.to_text()
            };
            let written = print_line(&bar, &line);
            if let Err(e) = written {
                write_error.get_or_insert(e);
            }
        }
    })?;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    // The reverse tests it started run to their end.
    reverse.join();
    if let Some(e) = write_error {
        return Err(e);
    }
    if failed > 0 {
        bail!(
            "{failed} of {} transfers failed ({} malformed, {} stray datagrams dropped)",
            counters.transfers_completed + counters.transfers_failed,
            counters.malformed,
            counters.stray
        );
    }
    Ok(())
}

fn print_line(bar: &Option<ProgressBar>, line: &str) -> Result<()> {
    match (line.is_empty(), bar) {
        (true, _) => Ok(()),
        (false, Some(bar)) => bar.suspend(|| out(line)),
        (false, None) => out(line),
    }
}

/// `--interval`: a meter per running transfer, each labelled by a number
/// in the order the transfers arrived (iperf3's `[  5]`), announced with
/// its peer and connection id on its first line.
pub(crate) struct Meters {
    interval: std::time::Duration,
    running: HashMap<u32, Metered>,
    next_label: u32,
}

struct Metered {
    label: String,
    meter: IntervalMeter,
    intervals: Vec<Interval>,
}

impl Meters {
    pub(crate) fn new(interval: std::time::Duration) -> Self {
        Meters { interval, running: HashMap::new(), next_label: 1 }
    }

    /// The lines of the intervals that closed by this progress report (none
    /// when `text` is off: they go in the transfer's JSON at its end).
    pub(crate) fn progress(&mut self, list: &[TransferProgress], text: bool) -> String {
        let mut lines = String::new();
        for p in list {
            let m = match self.running.get_mut(&p.connection_id) {
                Some(m) => m,
                None => {
                    let label = self.next_label.to_string();
                    self.next_label += 1;
                    if text {
                        lines += &format!(
                            "[{label:>3}] connection {:08x} from {}\n{}",
                            p.connection_id,
                            p.peer,
                            interval::RECEIVED_HEADING
                        );
                    }
                    let fresh =
                        Metered { label, meter: IntervalMeter::for_receiver(self.interval), intervals: Vec::new() };
                    self.running.entry(p.connection_id).or_insert(fresh)
                }
            };
            for iv in m.meter.sample_received(p.elapsed, p.received) {
                if text {
                    lines += &iv.to_received_line(&m.label);
                }
                m.intervals.push(iv);
            }
        }
        lines
    }

    /// A transfer ended: its last intervals (from its report's totals) as
    /// lines, and all of them. A transfer that ended before its first
    /// progress report has one interval, its whole run.
    pub(crate) fn ended(&mut self, report: &TransferReport) -> (String, Vec<Interval>) {
        let id = u32::from_str_radix(&report.connection_id, 16).ok();
        let mut lines = String::new();
        let mut m = match id.and_then(|id| self.running.remove(&id)) {
            Some(m) => m,
            None => {
                let label = self.next_label.to_string();
                self.next_label += 1;
                lines += &format!(
                    "[{label:>3}] connection {} from {}\n{}",
                    report.connection_id,
                    report.peer,
                    interval::RECEIVED_HEADING
                );
                Metered { label, meter: IntervalMeter::for_receiver(self.interval), intervals: Vec::new() }
            }
        };
        let elapsed = std::time::Duration::from_secs_f64(report.duration_s.max(0.0));
        let mut tail = m.meter.sample_received(elapsed, report.file_bytes);
        tail.extend(m.meter.finish());
        lines.extend(tail.iter().map(|iv| iv.to_received_line(&m.label)));
        m.intervals.extend(tail);
        (lines, m.intervals)
    }
}

/// `--tcp-delayed-ack-timeout`: a duration with its unit, 1 ms to 500 ms
/// (RFC 5681 §4.2: a delayed ACK waits less than 0.5 s), the scenario key
/// `[flows.tcp] delayed_ack_timeout_s`'s range.
fn parse_delayed_ack_timeout(s: &str) -> Result<std::time::Duration, String> {
    let d = std::time::Duration::from(meshbed_core::time::parse_duration(s)?);
    if d < std::time::Duration::from_millis(1) || d > std::time::Duration::from_millis(500) {
        return Err(format!("`{s}`: expected a duration from 1ms to 500ms (RFC 5681 §4.2)"));
    }
    Ok(d)
}

#[cfg(test)]
mod rate_tests {
    use super::parse_rate_bps;

    #[test]
    fn rates_take_k_m_g_suffixes_and_bad_ones_say_what_is_expected() {
        assert_eq!(parse_rate_bps("200k"), Ok(200_000));
        assert_eq!(parse_rate_bps("1.5M"), Ok(1_500_000));
        assert_eq!(parse_rate_bps("2000000"), Ok(2_000_000));
        assert_eq!(parse_rate_bps("1G"), Ok(1_000_000_000));
        assert_eq!(parse_rate_bps("1"), Ok(1));
        for bad in ["", "0", "0.4", "-5k", "fast", "1.5m", "2 M", "1e6", "inf", "2000G"] {
            let e = parse_rate_bps(bad).unwrap_err();
            assert!(e.contains(&format!("`{bad}`")) && e.contains("bits per second"), "{bad}: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_bytes, parse_delayed_ack_timeout};

    /// RFC 5681 §4.2's bound, as the scenario key's: 1 ms to 500 ms.
    #[test]
    fn the_delayed_ack_timeout_is_a_duration_within_rfc_5681s_bound() {
        assert_eq!(parse_delayed_ack_timeout("40ms"), Ok(std::time::Duration::from_millis(40)));
        assert_eq!(parse_delayed_ack_timeout("500ms"), Ok(std::time::Duration::from_millis(500)));
        for bad in ["0s", "600ms", "1s", "500us"] {
            let e = parse_delayed_ack_timeout(bad).unwrap_err();
            assert!(e.contains(bad) && e.contains("1ms to 500ms"), "{bad}: {e}");
        }
        assert!(parse_delayed_ack_timeout("forty").is_err());
    }

    #[test]
    fn sizes_take_binary_suffixes_and_refuse_anything_else() {
        assert_eq!(parse_bytes("1048576"), Ok(1 << 20));
        assert_eq!(parse_bytes("500M"), Ok(500 << 20));
        assert_eq!(parse_bytes("2G"), Ok(2 << 30));
        assert_eq!(parse_bytes("64k"), Ok(64 << 10));
        assert_eq!(parse_bytes("1T"), Ok(1 << 40));
        for bad in ["", "G", "1.5G", "-1", "12P", "99999999999999999999", "20000000T"] {
            let err = parse_bytes(bad).unwrap_err();
            assert!(err.contains(&format!("`{bad}`")) && err.contains("size in bytes"), "{bad}: {err}");
        }
    }
}
