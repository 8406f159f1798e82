//! `meshbed bench-transfer`: a loopback transfer with each engine and with
//! the kernel's TCP, goodput and CPU time side by side, on this machine.
//!
//! Speed figures live here, never in tests: they depend on the machine.

use crate::out;
use crate::transfer::min_delay;
use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use meshbed_net::{send, DelaySpec, Payload, ReceiveOptions, Receiver, SendOptions, SinkKind};
use meshbed_proto::Protocol;
use serde_json::json;
use std::io::IsTerminal;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// Largest `--size-mib`: the kernel TCP run holds a buffer, the engines
/// generate their bytes, but a larger run only takes longer.
pub const MAX_BENCH_MIB: u64 = 4096;

/// The default `--size-mib`: small enough that the default run (two ATP
/// presets and the kernel's TCP) ends within about a minute on a 2-core
/// machine, large enough that start-up costs vanish in the figures.
pub const DEFAULT_BENCH_MIB: u64 = 256;

/// A bar for one run, on a terminal only (and never with `--json`).
fn run_bar(show: bool, name: &str, bytes: u64) -> Option<ProgressBar> {
    if !show || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(bytes);
    bar.set_style(
        ProgressStyle::with_template("{prefix:<28} {bar:30} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}")
            .expect("valid template"),
    );
    bar.set_prefix(name.to_string());
    Some(bar)
}

fn row_name(protocol: Protocol, atp_min_delay: Option<Duration>, sealed: bool) -> String {
    let mut name = match atp_min_delay {
        Some(d) if protocol.is_atp() => format!("{protocol} (min delay {} us)", d.as_micros()),
        _ => protocol.name().to_string(),
    };
    if sealed {
        name.push_str(" +psk");
    }
    name
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
    show_bar: bool,
) -> Result<BenchRow> {
    let name = row_name(protocol, atp_min_delay, psk.is_some());
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
    let bar = run_bar(show_bar, &name, bytes as u64);
    let mut on_progress = |p: &meshbed_net::SendProgress| {
        if let Some(bar) = &bar {
            bar.set_position(p.acked_file_bytes);
        }
    };
    let sent = send(payload, addr, &so, &mut on_progress);
    let wall_s = t0.elapsed().as_secs_f64();
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let report = sent.map_err(|e| anyhow::anyhow!("{protocol}: {e}"))?;
    let cpu_s = (meshbed_net::udp::process_cpu_time() - cpu0).as_secs_f64();
    rx.join().expect("receiver thread")?;
    Ok(BenchRow { name, bytes: bytes as u64, wall_s, cpu_s, retransmissions: Some(report.retransmissions) })
}

fn bench_kernel_tcp(bytes: usize, show_bar: bool) -> Result<BenchRow> {
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
    let bar = run_bar(show_bar, "kernel TCP", bytes as u64);
    let mut left = bytes;
    while left > 0 {
        let n = left.min(data.len());
        s.write_all(&data[..n])?;
        left -= n;
        if let Some(bar) = &bar {
            bar.inc(n as u64);
        }
    }
    drop(s);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
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
        let key = meshbed_net::auth::Psk::random()?;
        let keys: &[Option<&meshbed_net::auth::Psk>] = if compare_psk { &[None, Some(&key)] } else { &[None] };
        for &k in keys {
            rows.push(bench_engine(p, bytes, None, k, !json_out)?);
            if let (Some(d), true) = (min_delay, p.is_atp()) {
                rows.push(bench_engine(p, bytes, Some(d), k, !json_out)?);
            }
        }
    }
    if !json_out {
        eprintln!("bench-transfer: kernel TCP, {size_mib} MiB over loopback ...");
    }
    rows.push(bench_kernel_tcp(bytes, !json_out)?);
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
