//! `meshbed bench-transfer`: a loopback transfer with each engine and with
//! the kernel's TCP, goodput and CPU time side by side, on this machine.
//!
//! Speed figures live here, never in tests: they depend on the machine.

use crate::out;
use crate::transfer::min_delay;
use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use meshbed_core::stats::sample_stats;
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
    /// The whole process: sender and receiver.
    cpu_s: f64,
    /// The receiving thread alone, where the system counts it.
    rx_cpu_s: Option<f64>,
    retransmissions: Option<u64>,
}

impl BenchRow {
    /// The run in one line, as it ends (the table comes at the end).
    fn line(&self) -> String {
        let gib = self.bytes as f64 / (1u64 << 30) as f64;
        let rx = self.rx_cpu_s.map_or(String::new(), |r| format!(" (receiver {:.2})", r / gib));
        format!(
            "{}: {:.1} Mbit/s, {:.2} s, {:.2} CPU s / GiB{rx}",
            self.name,
            self.bytes as f64 * 8.0 / self.wall_s / 1e6,
            self.wall_s,
            self.cpu_s / gib
        )
    }
}

/// Runs `f` and adds the CPU time this thread spent in it.
fn thread_cpu<T>(f: impl FnOnce() -> T) -> (T, Option<f64>) {
    let before = meshbed_net::udp::thread_cpu_time();
    let out = f();
    let spent = meshbed_net::udp::thread_cpu_time().zip(before).map(|(after, before)| (after - before).as_secs_f64());
    (out, spent)
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
    let rx = std::thread::spawn(move || thread_cpu(|| receiver.run(&AtomicBool::new(false), &mut |_| {})));
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
    let (received, rx_cpu_s) = rx.join().expect("receiver thread");
    received?;
    Ok(BenchRow { name, bytes: bytes as u64, wall_s, cpu_s, rx_cpu_s, retransmissions: Some(report.retransmissions) })
}

fn bench_kernel_tcp(bytes: usize, show_bar: bool) -> Result<BenchRow> {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let data = vec![0x5au8; 1 << 20];
    let cpu0 = meshbed_net::udp::process_cpu_time();
    let t0 = Instant::now();
    let reader = std::thread::spawn(move || {
        thread_cpu(|| -> std::io::Result<u64> {
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
        })
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
    let (got, rx_cpu_s) = reader.join().expect("reader thread");
    let got = got?;
    let wall_s = t0.elapsed().as_secs_f64();
    let cpu_s = (meshbed_net::udp::process_cpu_time() - cpu0).as_secs_f64();
    anyhow::ensure!(got == bytes as u64, "kernel TCP delivered {got} of {bytes} bytes");
    Ok(BenchRow { name: "kernel TCP".into(), bytes: bytes as u64, wall_s, cpu_s, rx_cpu_s, retransmissions: None })
}

/// The anchor row's name: iperf3's UDP test at full speed, what a
/// well-optimised user-space sender moves without any reliability.
const IPERF3_ROW: &str = "iperf3 -u (no reliability)";
/// The smallest run the anchor row is measured for (16 MiB).
const IPERF3_MIN_BYTES: usize = 16 << 20;

/// `iperf3 -u -b 0` moving `bytes` of 1436-byte datagrams over loopback
/// (its server a child process too), if `iperf3` is on the PATH: goodput
/// is what its server received, CPU both ends' (as iperf3 reports them).
fn bench_iperf3_udp(bytes: usize) -> Result<Option<BenchRow>> {
    use std::process::{Command, Stdio};
    // Below this iperf3's UDP test ends before its counters settle (1 MiB
    // went in 3 ms and was reported received once in two runs).
    if bytes < IPERF3_MIN_BYTES {
        return Ok(None);
    }
    if Command::new("iperf3").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_err() {
        return Ok(None);
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port().to_string();
    let mut server = Command::new("iperf3")
        .args(["-s", "-B", "127.0.0.1", "-p", &port, "--forceflush"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("starting iperf3 -s")?;
    // Until the server says it listens, at most 5 s. Not by connecting to
    // its control port: iperf3 takes any connection for a test, and while it
    // shrugs off the probe's the client's attempt is refused (it was, once
    // in a few runs: "unable to connect to server: Connection refused").
    let stdout = server.stdout.take().context("iperf3 -s's output")?;
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        // Read to the end, so the server never blocks on a full pipe.
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if line.starts_with("Server listening") {
                let _ = ready_tx.send(());
            }
        }
    });
    if ready_rx.recv_timeout(Duration::from_secs(5)).is_err() {
        let _ = server.kill();
        let _ = server.wait();
        anyhow::bail!("iperf3 -s did not say it listens on port {port} within 5 s");
    }
    let client = Command::new("iperf3")
        .args(["-u", "-c", "127.0.0.1", "-p", &port, "-b", "0", "-l", "1436", "-n", &bytes.to_string(), "--json"])
        .output()
        .context("running iperf3 -u")?;
    let _ = server.kill();
    let _ = server.wait();
    let v: serde_json::Value = serde_json::from_slice(&client.stdout).context("iperf3's --json output")?;
    let end = &v["end"];
    let number = |x: &serde_json::Value, what: &str| {
        x.as_f64().with_context(|| format!("iperf3's JSON has no {what}: {}", String::from_utf8_lossy(&client.stdout)))
    };
    let wall_s = number(&end["sum"]["seconds"], "end.sum.seconds")?;
    let received_bps = number(&end["sum_received"]["bits_per_second"], "end.sum_received.bits_per_second")?;
    let cpu = &end["cpu_utilization_percent"];
    let (host, remote) = (number(&cpu["host_total"], "host_total")?, number(&cpu["remote_total"], "remote_total")?);
    anyhow::ensure!(received_bps > 0.0 && wall_s > 0.0, "iperf3 -u reported nothing received in {wall_s} s");
    Ok(Some(BenchRow {
        name: IPERF3_ROW.into(),
        bytes: (received_bps * wall_s / 8.0) as u64,
        wall_s,
        cpu_s: (host + remote) / 100.0 * wall_s,
        rx_cpu_s: Some(remote / 100.0 * wall_s),
        retransmissions: None,
    }))
}

/// Most `--repeat`: each repetition runs every row again.
pub const MAX_REPEAT: u32 = 100;

/// What `bench-transfer` measures: the size of each run, the engines, the
/// extra ATP rate cap, whether each engine also runs sealed, and how many
/// times every row runs.
pub struct BenchPlan<'a> {
    pub size_mib: u64,
    pub protocols: &'a [Protocol],
    pub atp_min_delay: Option<DelaySpec>,
    pub compare_psk: bool,
    pub repeat: u32,
}

/// The runs of one row of the table (a transport, maybe sealed), one per
/// repetition; `plain` is the row's unsealed twin (for the paired cost of
/// the seal).
struct RowRuns {
    name: String,
    runs: Vec<BenchRow>,
    plain: Option<usize>,
}

impl RowRuns {
    fn goodput_mbps(&self) -> Vec<f64> {
        self.runs.iter().map(|r| r.bytes as f64 * 8.0 / r.wall_s / 1e6).collect()
    }
    fn cpu_s_per_gib(&self) -> Vec<f64> {
        self.runs.iter().map(|r| r.cpu_s / (r.bytes as f64 / (1u64 << 30) as f64)).collect()
    }
    /// The receiving thread's share, if every run measured it.
    fn rx_cpu_s_per_gib(&self) -> Option<Vec<f64>> {
        self.runs.iter().map(|r| Some(r.rx_cpu_s? / (r.bytes as f64 / (1u64 << 30) as f64))).collect()
    }
}

/// The index of the row named `name`, added (with its plain twin) if new.
fn row(rows: &mut Vec<RowRuns>, name: &str, plain: Option<usize>) -> usize {
    match rows.iter().position(|r| r.name == name) {
        Some(i) => i,
        None => {
            rows.push(RowRuns { name: name.to_string(), runs: Vec::new(), plain });
            rows.len() - 1
        }
    }
}

/// A sealed row's goodput over its plain twin's, run by run (each pair ran
/// back to back, under the same machine load).
fn paired_ratios(sealed: &RowRuns, plain: &RowRuns) -> Vec<f64> {
    sealed.goodput_mbps().iter().zip(plain.goodput_mbps()).map(|(s, p)| s / p).collect()
}

pub fn run_bench(plan: &BenchPlan, json_out: bool) -> Result<()> {
    let BenchPlan { size_mib, protocols, compare_psk, repeat, .. } = *plan;
    let bytes = size_mib.checked_mul(1 << 20).and_then(|b| usize::try_from(b).ok()).context("--size-mib too large")?;
    anyhow::ensure!((1..=MAX_REPEAT).contains(&repeat), "--repeat {repeat}: expected 1 to {MAX_REPEAT} repetitions");
    let min_delay = min_delay(&plan.atp_min_delay)?;
    let mut rows: Vec<RowRuns> = Vec::new();
    let key = meshbed_net::auth::Psk::random()?;
    for rep in 1..=repeat {
        for &p in protocols {
            if !json_out {
                let of = if repeat > 1 { format!(" (repetition {rep} of {repeat})") } else { String::new() };
                eprintln!("bench-transfer: {p}, {size_mib} MiB over loopback{of} ...");
            }
            // With and without the seal back to back, so that each pair is
            // measured under the same machine load.
            for d in std::iter::once(None).chain(min_delay.filter(|_| p.is_atp()).map(Some)) {
                let plain = bench_engine(p, bytes, d, None, !json_out)?;
                say(json_out, &plain);
                let i = row(&mut rows, &plain.name, None);
                rows[i].runs.push(plain);
                if compare_psk {
                    let sealed = bench_engine(p, bytes, d, Some(&key), !json_out)?;
                    say(json_out, &sealed);
                    let j = row(&mut rows, &sealed.name, Some(i));
                    rows[j].runs.push(sealed);
                }
            }
        }
        if !json_out {
            eprintln!("bench-transfer: kernel TCP, {size_mib} MiB over loopback ...");
        }
        let kernel = bench_kernel_tcp(bytes, !json_out)?;
        say(json_out, &kernel);
        let i = row(&mut rows, &kernel.name, None);
        rows[i].runs.push(kernel);
        match bench_iperf3_udp(bytes)? {
            Some(anchor) => {
                say(json_out, &anchor);
                let i = row(&mut rows, &anchor.name, None);
                rows[i].runs.push(anchor);
            }
            None if !json_out && rep == 1 => eprintln!(
                "bench-transfer: no anchor row (iperf3 -u): iperf3 is not on the PATH (apt-get install iperf3), or the run is under 16 MiB"
            ),
            None => {}
        }
    }
    if json_out {
        let list: Vec<_> = rows
            .iter()
            .map(|r| {
                let goodput = sample_stats(&r.goodput_mbps());
                let cpu = sample_stats(&r.cpu_s_per_gib());
                let first = &r.runs[0];
                let mut entry = json!({
                    "transport": r.name,
                    "bytes": first.bytes,
                    "runs": r.runs.len(),
                    "wall_s": r.runs.iter().map(|x| x.wall_s).sum::<f64>() / r.runs.len() as f64,
                    "goodput_mbps": goodput.mean,
                    "goodput_mbps_ci95": finite(goodput.ci95),
                    "goodput_mbps_runs": r.goodput_mbps(),
                    "cpu_s": r.runs.iter().map(|x| x.cpu_s).sum::<f64>() / r.runs.len() as f64,
                    "cpu_s_per_gib": cpu.mean,
                    "cpu_s_per_gib_ci95": finite(cpu.ci95),
                    "receiver_cpu_s_per_gib": r.rx_cpu_s_per_gib().map(|v| sample_stats(&v).mean),
                    "retransmissions": first.retransmissions.map(|_| r.runs.iter().filter_map(|x| x.retransmissions).sum::<u64>()),
                });
                if let Some(p) = r.plain {
                    let ratio = sample_stats(&paired_ratios(r, &rows[p]));
                    entry["goodput_ratio_to_plain"] = json!(ratio.mean);
                    entry["goodput_ratio_to_plain_ci95"] = json!(finite(ratio.ci95));
                }
                entry
            })
            .collect();
        return out(&(serde_json::to_string_pretty(
            &json!({ "size_mib": size_mib, "repeat": repeat, "results": list }),
        )? + "\n"));
    }
    out(&table(size_mib, repeat, &rows))
}

/// A run's line on stderr as it ends (not with `--json`).
fn say(json_out: bool, run: &BenchRow) {
    if !json_out {
        eprintln!("bench-transfer: {}", run.line());
    }
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// The table `bench-transfer` prints: each row's mean (± the 95% interval
/// of the mean over the repetitions, when there are several), then the
/// seal's paired cost.
fn table(size_mib: u64, repeat: u32, rows: &[RowRuns]) -> String {
    let runs = if repeat > 1 { format!(", mean ± 95% CI of {repeat} runs") } else { String::new() };
    let mut s = format!(
        "{size_mib} MiB over loopback{runs}, one process (sender + receiver threads), CPU = user + system of the process; the receiver's = its thread's\n\n{:<32} {:>20} {:>9} {:>8} {:>16} {:>13} {:>8}\n",
        "transport", "goodput Mbit/s", "wall s", "CPU s", "CPU s / GiB", "receiver's", "retx"
    );
    let pm = |st: &meshbed_core::stats::SampleStats, decimals: usize| {
        if st.ci95.is_finite() {
            format!("{:.*} ± {:.*}", decimals, st.mean, decimals, st.ci95)
        } else {
            format!("{:.*}", decimals, st.mean)
        }
    };
    for r in rows {
        let n = r.runs.len() as f64;
        let retx: Option<u64> =
            r.runs[0].retransmissions.map(|_| r.runs.iter().filter_map(|x| x.retransmissions).sum());
        s.push_str(&format!(
            "{:<32} {:>20} {:>9.2} {:>8.2} {:>16} {:>13} {:>8}\n",
            r.name,
            pm(&sample_stats(&r.goodput_mbps()), 1),
            r.runs.iter().map(|x| x.wall_s).sum::<f64>() / n,
            r.runs.iter().map(|x| x.cpu_s).sum::<f64>() / n,
            pm(&sample_stats(&r.cpu_s_per_gib()), 2),
            r.rx_cpu_s_per_gib().map_or("-".to_string(), |v| format!("{:.2}", sample_stats(&v).mean)),
            retx.map_or("-".to_string(), |n| n.to_string())
        ));
    }
    let sealed: Vec<_> = rows.iter().filter_map(|r| r.plain.map(|p| (r, &rows[p]))).collect();
    if !sealed.is_empty() {
        s.push_str("\nThe seal's cost: sealed goodput over plain, paired run by run");
        s.push_str(if repeat > 1 { " (mean, 95% CI)\n" } else { " (one run: no interval; --repeat N gives one)\n" });
        for (r, p) in sealed {
            let ratio = sample_stats(&paired_ratios(r, p));
            let interval = if ratio.ci95.is_finite() {
                format!(
                    " [{:+.1}%, {:+.1}%]",
                    (ratio.mean - ratio.ci95 - 1.0) * 100.0,
                    (ratio.mean + ratio.ci95 - 1.0) * 100.0
                )
            } else {
                String::new()
            };
            s.push_str(&format!("{:<32} {:>+7.1}%{interval}\n", r.name, (ratio.mean - 1.0) * 100.0));
        }
    }
    s
}
