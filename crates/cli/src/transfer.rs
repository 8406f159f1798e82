//! `meshbed send`, `meshbed recv` and `meshbed bench-transfer`: files over
//! UDP with the same engines the simulator runs (meshbed-net).

use crate::out;
use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use meshbed_net::{send, DelaySpec, Payload, ReceiveOptions, Receiver, ReceiverEvent, SendOptions, SinkKind};
use meshbed_proto::Protocol;
use serde_json::json;
use std::io::IsTerminal;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// A positive duration of at most one day with its unit (`10s`, `500ms`,
/// `2min`), read by the one parser, [`meshbed_core::time::parse_duration`].
pub fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    let d = Duration::from(meshbed_core::time::parse_duration(s)?);
    if d.is_zero() || d > Duration::from_secs(86_400) {
        return Err(format!("`{s}`: expected a duration between 0 and one day"));
    }
    Ok(d)
}

/// `--atp-min-delay`: a duration with its unit (`5us`), as a fixed delay.
pub fn parse_min_delay(s: &str) -> Result<DelaySpec, String> {
    meshbed_core::time::parse_duration(s).map(DelaySpec::Fixed)
}

pub fn parse_delay(s: &str) -> Result<DelaySpec, String> {
    s.parse()
}

/// HOST:PORT, HOST a name or an address: `send`'s target and `recv --listen`.
pub fn resolve(target: &str) -> Result<SocketAddr, String> {
    target
        .to_socket_addrs()
        .map_err(|e| format!("`{target}`: expected HOST:PORT (e.g. 10.0.0.2:7411): {e}"))?
        .next()
        .ok_or_else(|| format!("`{target}` resolves to no address"))
}

/// Largest `bench-transfer --size-mib`: the sender holds the data in memory.
pub const MAX_BENCH_MIB: u64 = 4096;

fn progress_bar(total: u64, quiet: bool) -> Option<ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta} {msg}")
            .expect("valid template"),
    );
    Some(bar)
}

#[derive(clap::Args)]
pub struct SendArgs {
    /// The file to send (streamed from disk; memory does not grow with its size).
    pub file: PathBuf,
    /// The receiver, HOST:PORT.
    pub target: String,
    /// Any transport: atp-default, atp-aggressive, atp-adaptive, tcp-tahoe, tcp-reno, tcp-newreno,
    /// tcp-newreno-elfn (no route notices over UDP: behaves as NewReno), tcp-reno-paced, tcp-newreno-paced
    /// or mtl (without a routing module: one hop, no link loss assumed).
    #[arg(long, value_enum, default_value_t = Protocol::AtpAdaptive)]
    pub protocol: meshbed_proto::Protocol,
    /// This node's delay D for ATP: `e2e` (end-to-end estimate), `fixed:2ms`, or `file:PATH` (µs, like /proc/ath5k/Da).
    #[arg(long, default_value = "e2e", value_parser = parse_delay)]
    pub delay: meshbed_net::DelaySpec,
    /// Give up after this long without hearing from the receiver (e.g. 10s, 500ms).
    #[arg(long, default_value = "10s", value_parser = parse_positive_duration)]
    pub timeout: std::time::Duration,
    /// Start over on a new connection this many times after a failure.
    #[arg(long, default_value_t = 0)]
    pub retries: u32,
    /// Wait between attempts.
    #[arg(long, default_value = "500ms", value_parser = parse_positive_duration)]
    pub retry_delay: std::time::Duration,
    /// ATP's smallest inter-packet delay, i.e. its rate cap (default 100us = 10 000 packets/s).
    #[arg(long, value_parser = parse_min_delay)]
    pub atp_min_delay: Option<meshbed_net::DelaySpec>,
    /// Seal every datagram with the pre-shared key in this file (the receiver needs the same key); default: the key in $MESHBED_PSK, if set.
    #[arg(long, value_name = "FILE")]
    pub psk: Option<PathBuf>,
    /// The node's routing daemon (`meshbed routed --notice-socket`): route notices and path information reach the engine (ATP re-probes, TCP-ELFN stands by, MTL takes h and P_max); default: $MESHBED_ROUTED_SOCKET, set inside an emulated node that runs daemons.
    #[arg(long, value_name = "SOCKET")]
    pub routed: Option<PathBuf>,
    /// Print the summary as JSON (also on failure).
    #[arg(long)]
    pub json: bool,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// `--routed SOCKET`, else $MESHBED_ROUTED_SOCKET, else none.
pub fn routed_socket(arg: &Option<PathBuf>) -> Option<PathBuf> {
    arg.clone().or_else(|| std::env::var_os("MESHBED_ROUTED_SOCKET").map(PathBuf::from))
}

/// The pre-shared key of `--psk FILE`, else of $MESHBED_PSK, else none.
fn load_psk(file: &Option<PathBuf>) -> Result<Option<meshbed_net::auth::Psk>> {
    let psk = match file {
        Some(path) => meshbed_net::auth::Psk::from_file(path).map(Some),
        None => meshbed_net::auth::Psk::from_env(),
    };
    psk.map_err(|e| anyhow::anyhow!("--psk: {e}"))
}

fn min_delay(spec: &Option<DelaySpec>) -> Result<Option<Duration>> {
    match spec {
        None => Ok(None),
        Some(DelaySpec::Fixed(d)) if !d.is_zero() => Ok(Some(Duration::from_nanos(d.as_nanos()))),
        Some(other) => bail!("--atp-min-delay {other}: expected a positive duration such as 100us"),
    }
}

pub fn run_send(a: SendArgs) -> Result<()> {
    let peer = resolve(&a.target).map_err(anyhow::Error::msg)?;
    // Hashing a large file takes seconds: show it.
    let hash_bar = progress_bar(0, a.quiet);
    if let Some(bar) = &hash_bar {
        bar.set_message("hashing");
    }
    let mut on_hash = |done: u64, total: u64| {
        if let Some(bar) = &hash_bar {
            bar.set_length(total);
            bar.set_position(done);
        }
    };
    let payload = Payload::from_file_with_progress(&a.file, &mut on_hash);
    if let Some(bar) = &hash_bar {
        bar.finish_and_clear();
    }
    // The error names the file and the cause once (its source is the same cause).
    let payload = payload.map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut options = SendOptions::new(a.protocol);
    options.delay = a.delay;
    options.timeout = a.timeout;
    options.retries = a.retries;
    options.retry_delay = a.retry_delay;
    options.atp_min_delay = min_delay(&a.atp_min_delay)?;
    options.psk = load_psk(&a.psk)?;
    options.routed = routed_socket(&a.routed);
    let bar = progress_bar(payload.stream_len(), a.quiet);
    let mut on_progress = |p: &meshbed_net::SendProgress| {
        if let Some(bar) = &bar {
            bar.set_position(p.acked);
            if p.attempt > 1 {
                bar.set_message(format!("attempt {}", p.attempt));
            }
        }
    };
    let result = send(payload, peer, &options, &mut on_progress);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let report = match &result {
        Ok(r) => Some(r),
        Err(e) => e.report(),
    };
    if let Some(r) = report {
        if a.json {
            out(&(serde_json::to_string_pretty(r).context("serialising the report")? + "\n"))?;
        } else if r.ok {
            out(&r.to_text())?;
        }
    }
    result.map(|_| ()).map_err(|e| anyhow::anyhow!("sending `{}` to {peer}: {e}", a.file.display()))
}

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
    #[arg(long, default_value_t = 64)]
    pub max_active: usize,
    /// Transfers in progress from one IP address at most.
    #[arg(long, default_value_t = 8)]
    pub max_per_peer: usize,
    /// One JSON object per transfer, one per line.
    #[arg(long)]
    pub json: bool,
    /// No listening notice or progress.
    #[arg(long)]
    pub quiet: bool,
    /// Accept only datagrams sealed with the pre-shared key in this file; default: the key in $MESHBED_PSK, if set.
    #[arg(long, value_name = "FILE")]
    pub psk: Option<PathBuf>,
    /// Read each transfer at most LIMIT bits per second (e.g. 200k, 1.5M, 2000000; k, M, G are powers of
    /// 1000), a slow application: ATP's sender is told the read rate, TCP's finds the receive buffer full.
    /// MTL transfers have no flow control and are read as they arrive.
    #[arg(long, value_name = "LIMIT", value_parser = parse_rate_bps)]
    pub rate: Option<u64>,
    /// The node's routing daemon (`meshbed routed --notice-socket`): each transfer hears of its sender's route; default: $MESHBED_ROUTED_SOCKET, set inside an emulated node that runs daemons.
    #[arg(long, value_name = "SOCKET")]
    pub routed: Option<PathBuf>,
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

pub fn run_recv(a: RecvArgs) -> Result<()> {
    if std::fs::metadata(&a.dir).is_ok_and(|m| !m.is_dir()) {
        bail!("--dir {}: not a directory; expected a directory for the received files", a.dir.display());
    }
    let mut options = ReceiveOptions::new(a.listen, SinkKind::Directory { dir: a.dir.clone(), overwrite: a.overwrite });
    options.timeout = a.timeout;
    options.linger = a.linger;
    options.max_transfers = a.count;
    options.psk = load_psk(&a.psk)?;
    options.read_rate_bps = a.rate;
    options.routed = routed_socket(&a.routed);
    options.max_connections = a.max_active;
    options.max_connections_per_peer = a.max_per_peer;
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
    let mut last: Option<(Instant, u64)> = None;
    let mut failed = 0u64;
    let mut write_error = None;
    let stop = AtomicBool::new(false);
    let counters = receiver.run(&stop, &mut |event| match event {
        ReceiverEvent::Progress(list) => {
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
            let line = if a.json {
                serde_json::to_string(report).map(|s| s + "\n").unwrap_or_default()
            } else {
                report.to_text()
            };
            let written = match &bar {
                Some(bar) => bar.suspend(|| out(&line)),
                None => out(&line),
            };
            if let Err(e) = written {
                write_error.get_or_insert(e);
            }
        }
    })?;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
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

/// One measured transfer of the benchmark.
struct BenchRow {
    name: String,
    bytes: u64,
    wall_s: f64,
    cpu_s: f64,
    retransmissions: Option<u64>,
}

fn bench_engine(
    protocol: Protocol,
    bytes: usize,
    atp_min_delay: Option<Duration>,
    psk: Option<&meshbed_net::auth::Psk>,
) -> Result<BenchRow> {
    let mut ro = ReceiveOptions::new("127.0.0.1:0".parse().expect("addr"), SinkKind::Discard);
    ro.psk = psk.cloned();
    ro.max_transfers = Some(1);
    ro.linger = Duration::from_millis(200);
    ro.timeout = Duration::from_secs(10);
    let mut receiver = Receiver::bind(ro)?;
    let addr = receiver.local_addr()?;
    let rx = std::thread::spawn(move || receiver.run(&AtomicBool::new(false), &mut |_| {}));
    let payload = Payload::unchecked("bench.bin", bytes as u64);
    let mut so = SendOptions::new(protocol);
    so.atp_min_delay = atp_min_delay;
    so.psk = psk.cloned();
    let cpu0 = meshbed_net::udp::process_cpu_time();
    let t0 = Instant::now();
    let report = send(payload, addr, &so, &mut |_| {}).map_err(|e| anyhow::anyhow!("{protocol}: {e}"))?;
    let wall_s = t0.elapsed().as_secs_f64();
    let cpu_s = (meshbed_net::udp::process_cpu_time() - cpu0).as_secs_f64();
    rx.join().expect("receiver thread")?;
    let mut name = match atp_min_delay {
        Some(d) if protocol.is_atp() => format!("{protocol} (min delay {} us)", d.as_micros()),
        _ => protocol.name().to_string(),
    };
    if psk.is_some() {
        name.push_str(" +psk");
    }
    Ok(BenchRow { name, bytes: bytes as u64, wall_s, cpu_s, retransmissions: Some(report.retransmissions) })
}

fn bench_kernel_tcp(bytes: usize) -> Result<BenchRow> {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let data = vec![0x5au8; 1 << 20];
    let cpu0 = meshbed_net::udp::process_cpu_time();
    let t0 = Instant::now();
    let reader = std::thread::spawn(move || -> std::io::Result<u64> {
        let (mut s, _) = listener.accept()?;
        let mut buf = vec![0u8; 256 << 10];
        let mut total = 0u64;
        loop {
            let n = s.read(&mut buf)?;
            if n == 0 {
                return Ok(total);
            }
            total += n as u64;
        }
    });
    let mut s = std::net::TcpStream::connect(addr)?;
    let mut left = bytes;
    while left > 0 {
        let n = left.min(data.len());
        s.write_all(&data[..n])?;
        left -= n;
    }
    drop(s);
    let got = reader.join().expect("reader thread")?;
    let wall_s = t0.elapsed().as_secs_f64();
    let cpu_s = (meshbed_net::udp::process_cpu_time() - cpu0).as_secs_f64();
    anyhow::ensure!(got == bytes as u64, "kernel TCP delivered {got} of {bytes} bytes");
    Ok(BenchRow { name: "kernel TCP".into(), bytes: bytes as u64, wall_s, cpu_s, retransmissions: None })
}

pub fn run_bench(
    size_mib: u64,
    protocols: &[Protocol],
    atp_min_delay: Option<DelaySpec>,
    compare_psk: bool,
    json_out: bool,
) -> Result<()> {
    let bytes = size_mib.checked_mul(1 << 20).and_then(|b| usize::try_from(b).ok()).context("--size-mib too large")?;
    let min_delay = min_delay(&atp_min_delay)?;
    let mut rows = Vec::new();
    for &p in protocols {
        if !json_out {
            eprintln!("bench-transfer: {p}, {size_mib} MiB over loopback ...");
        }
        // With and without the seal back to back, so that the ratio is
        // measured under the same machine load.
        let key = meshbed_net::auth::Psk::from_bytes(b"a benchmark key, made for this run").expect("long enough");
        let keys: &[Option<&meshbed_net::auth::Psk>] = if compare_psk { &[None, Some(&key)] } else { &[None] };
        for &k in keys {
            rows.push(bench_engine(p, bytes, None, k)?);
            if let (Some(d), true) = (min_delay, p.is_atp()) {
                rows.push(bench_engine(p, bytes, Some(d), k)?);
            }
        }
    }
    if !json_out {
        eprintln!("bench-transfer: kernel TCP, {size_mib} MiB over loopback ...");
    }
    rows.push(bench_kernel_tcp(bytes)?);
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    if json_out {
        let list: Vec<_> = rows
            .iter()
            .map(|r| {
                json!({
                    "transport": r.name,
                    "bytes": r.bytes,
                    "wall_s": r.wall_s,
                    "goodput_mbps": r.bytes as f64 * 8.0 / r.wall_s / 1e6,
                    "cpu_s": r.cpu_s,
                    "cpu_s_per_gib": r.cpu_s / gib(r.bytes),
                    "retransmissions": r.retransmissions,
                })
            })
            .collect();
        return out(&(serde_json::to_string_pretty(&json!({ "size_mib": size_mib, "results": list }))? + "\n"));
    }
    let mut s = format!(
        "{size_mib} MiB over loopback, one process (sender + receiver threads), CPU = user + system of the process\n\n{:<32} {:>14} {:>9} {:>8} {:>12} {:>8}\n",
        "transport", "goodput Mbit/s", "wall s", "CPU s", "CPU s / GiB", "retx"
    );
    for r in &rows {
        s.push_str(&format!(
            "{:<32} {:>14.1} {:>9.2} {:>8.2} {:>12.2} {:>8}\n",
            r.name,
            r.bytes as f64 * 8.0 / r.wall_s / 1e6,
            r.wall_s,
            r.cpu_s,
            r.cpu_s / gib(r.bytes),
            r.retransmissions.map_or("-".to_string(), |n| n.to_string())
        ));
    }
    out(&s)
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
