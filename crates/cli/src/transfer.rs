//! `meshbed send`, `meshbed recv` and `meshbed bench-transfer`: files over
//! UDP with the same engines the simulator runs (meshbed-net).

use crate::out;
use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use meshbed_net::interval::{self, Interval, IntervalMeter, IntervalSum};
use meshbed_net::{send, DelaySpec, Payload, SendOptions, SendReport};
use meshbed_proto::Protocol;
use serde_json::json;
use std::io::IsTerminal;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
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
    /// The file to send (streamed from disk; memory does not grow with its size); leave it out with --time.
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// The receiver, HOST:PORT.
    #[arg(value_name = "HOST:PORT")]
    pub target: Option<String>,
    /// Send generated data for this long instead of a file (e.g. 10s, 1min), as iperf3 -t: every byte is
    /// checked by the receiver, nothing is written there; exactly one of FILE or --time.
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration)]
    pub time: Option<Duration>,
    /// Print a line per interval (e.g. 1s): bytes acknowledged, goodput, retransmissions (iperf3 -i);
    /// with --json they are in the report instead.
    #[arg(long, value_name = "DURATION", value_parser = parse_interval)]
    pub interval: Option<Duration>,
    /// Streams at once, each its own connection to the receiver (iperf3 -P), with --time; at most the
    /// receiver's default --max-per-peer.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = parse_parallel)]
    pub parallel: usize,
    /// Any transport: atp-default, atp-aggressive, atp-adaptive, tcp-tahoe, tcp-reno, tcp-newreno,
    /// tcp-newreno-elfn (no route notices over UDP: behaves as NewReno), tcp-reno-paced, tcp-newreno-paced,
    /// mtl (without a routing module: one hop, no link loss assumed), or today's TCPs with SACK, RACK-TLP
    /// and timestamps: tcp-sack, tcp-cubic, tcp-bbr (BBR v1, paced at its own rate).
    #[arg(long, value_enum, default_value_t = Protocol::AtpAdaptive)]
    pub protocol: meshbed_proto::Protocol,
    /// This node's delay D for ATP: `e2e` (end-to-end estimate), `fixed:2ms`, or `file:PATH` (µs, like /proc/ath5k/Da).
    #[arg(long, default_value = "e2e", value_parser = parse_delay)]
    pub delay: meshbed_net::DelaySpec,
    /// Give up after this long without hearing from the receiver (e.g. 10s, 500ms).
    #[arg(long, default_value = "10s", value_parser = parse_positive_duration)]
    pub timeout: std::time::Duration,
    /// Start over on a new connection this many times after a failure. A receiver that answers "busy" is
    /// asked again anyway, the wait doubling up to 4 s, for as long as --timeout allows; only a receiver
    /// busy for all of it counts as a failure.
    #[arg(long, default_value_t = 0)]
    pub retries: u32,
    /// Wait between attempts (and the first wait after a "busy" answer).
    #[arg(long, default_value = "500ms", value_parser = parse_positive_duration)]
    pub retry_delay: std::time::Duration,
    /// A fixed rate cap for ATP: at most one packet per this delay. Default: one per 100us (10 000 packets/s),
    /// raised to twice what the path delivered per feedback interval when that is more.
    #[arg(long, value_parser = parse_min_delay)]
    pub atp_min_delay: Option<meshbed_net::DelaySpec>,
    /// A TCP sender's initial congestion window, segments (1-64; default 1, the presets'; Linux's is 10,
    /// RFC 6928). The tcp-* protocols only.
    #[arg(long, value_name = "SEGMENTS", value_parser = clap::value_parser!(u32).range(1..=MAX_TCP_WINDOW_SEGMENTS))]
    pub tcp_initial_window: Option<u32>,
    /// Seal every datagram with the pre-shared key in this file (the receiver needs the same key); default: the key in $MESHBED_PSK, if set.
    #[arg(long, value_name = "FILE")]
    pub psk: Option<PathBuf>,
    /// Without a key to a peer that is not on loopback: send unauthenticated and unencrypted (anyone on
    /// the path can read the data and forge or reset the transfer). Off loopback a key is the default.
    #[arg(long)]
    pub insecure: bool,
    /// The node's routing daemon (`meshbed routed --notice-socket`): route notices and path information reach the engine (ATP re-probes, TCP-ELFN stands by, MTL takes h and P_max); default: $MESHBED_ROUTED_SOCKET, set inside an emulated node that runs daemons.
    #[arg(long, value_name = "SOCKET")]
    pub routed: Option<PathBuf>,
    /// Print the summary as JSON (also on failure).
    #[arg(long)]
    pub json: bool,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Receive instead of send (iperf3 -R), with --time: ask the receiver (started with
    /// `meshbed recv --allow-reverse`) to send a timed test stream here for that long; --protocol,
    /// --psk, --timeout and --interval apply to it.
    #[arg(long)]
    pub reverse: bool,
}

/// What `meshbed send` moves: a file, or generated data for a time.
#[derive(Clone, Debug)]
pub enum SendWhat {
    File(PathBuf),
    Timed(Duration),
}

/// `meshbed send`'s operands and flags, checked together.
pub struct SendPlan {
    pub what: SendWhat,
    pub target: String,
}

impl SendArgs {
    /// The combinations clap cannot express (an optional FILE before a
    /// required HOST:PORT): a message naming the flags and what is expected.
    pub fn plan(&self) -> Result<SendPlan, (clap::error::ErrorKind, String)> {
        use clap::error::ErrorKind;
        let usage = "expected `meshbed send FILE HOST:PORT` or `meshbed send --time DURATION HOST:PORT`";
        let (what, target) = match (&self.file, &self.target, self.time) {
            (Some(file), Some(_), Some(t)) => {
                return Err((
                    ErrorKind::ArgumentConflict,
                    format!(
                        "--time {} and FILE `{}` together: {usage} (exactly one of FILE or --time)",
                        humantime(t),
                        file.display()
                    ),
                ))
            }
            (Some(file), Some(target), None) => (SendWhat::File(file.clone()), target.clone()),
            // With --time the one operand is the receiver.
            (Some(target), None, Some(t)) => (SendWhat::Timed(t), target.display().to_string()),
            (Some(one), None, None) => {
                return Err((
                    ErrorKind::MissingRequiredArgument,
                    format!(
                        "`{}` alone: {usage} (a FILE needs HOST:PORT after it; a test without a file needs --time)",
                        one.display()
                    ),
                ))
            }
            (None, _, _) => return Err((ErrorKind::MissingRequiredArgument, format!("HOST:PORT missing: {usage}"))),
        };
        if let (SendWhat::File(file), n @ 2..) = (&what, self.parallel) {
            return Err((
                ErrorKind::ArgumentConflict,
                format!(
                    "--parallel {n} with FILE `{}`: parallel streams send generated data; expected --parallel with --time instead of FILE (docs/PROTOCOLS.md §6, \"Timed tests\")",
                    file.display()
                ),
            ));
        }
        if self.reverse {
            let refuse = |why: String| Err((ErrorKind::ArgumentConflict, why));
            match &what {
                SendWhat::File(file) => {
                    return refuse(format!(
                        "--reverse with FILE `{}`: a reverse test receives a timed test stream; expected `meshbed send --reverse --time DURATION HOST:PORT`",
                        file.display()
                    ))
                }
                SendWhat::Timed(_) if self.parallel > 1 => {
                    return refuse(format!("--reverse with --parallel {}: a reverse test is one stream", self.parallel))
                }
                SendWhat::Timed(_) => {}
            }
        }
        Ok(SendPlan { what, target })
    }
}

fn humantime(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}

/// The receiver's default limit on transfers from one address
/// (`meshbed recv --max-per-peer`): more parallel streams would be refused.
fn max_parallel() -> usize {
    meshbed_proto::endpoint::EndpointConfig::default().max_connections_per_peer
}

/// `--parallel N`: 1 up to the receiver's default per-address limit.
pub fn parse_parallel(s: &str) -> Result<usize, String> {
    let limit = max_parallel();
    match s.parse::<usize>() {
        Ok(n) if (1..=limit).contains(&n) => Ok(n),
        _ => Err(format!(
            "`{s}`: expected 1 to {limit} streams; a receiver takes at most {limit} transfers from one address (`meshbed recv --max-per-peer`, default {limit})"
        )),
    }
}

/// `--interval`: a duration of at least 100 ms (the sender's progress
/// samples come every 100 ms).
pub fn parse_interval(s: &str) -> Result<Duration, String> {
    let d = parse_positive_duration(s)?;
    if d < Duration::from_millis(100) {
        return Err(format!("`{s}`: expected at least 100ms (the sender samples its progress every 100 ms)"));
    }
    Ok(d)
}

/// `--routed SOCKET`, else $MESHBED_ROUTED_SOCKET, else none.
pub fn routed_socket(arg: &Option<PathBuf>) -> Option<PathBuf> {
    arg.clone().or_else(|| std::env::var_os("MESHBED_ROUTED_SOCKET").map(PathBuf::from))
}

/// The pre-shared key of `--psk FILE`, else of $MESHBED_PSK; without one,
/// the one rule of issue 26: on loopback nothing is needed, anywhere else
/// `--insecure` must say so, and then a warning says it plainly. `addr` is
/// the peer (`send`) or the listening address (`recv`: an unspecified
/// address such as 0.0.0.0 is not loopback); `who` names the command.
pub(crate) fn load_psk(
    file: &Option<PathBuf>,
    insecure: bool,
    addr: SocketAddr,
    who: &str,
) -> Result<Option<meshbed_net::auth::Psk>> {
    let psk = match file {
        Some(path) => meshbed_net::auth::Psk::from_file(path).map(Some),
        None => meshbed_net::auth::Psk::from_env(),
    };
    let psk = psk.map_err(|e| anyhow::anyhow!("--psk: {e}"))?;
    match (&psk, insecure) {
        (Some(_), true) => bail!(
            "--insecure with a key (--psk or ${}): expected one of them; the key seals every datagram, --insecure sends them unsealed",
            meshbed_net::auth::ENV_KEY
        ),
        (Some(_), false) => {}
        (None, _) if addr.ip().is_loopback() => {}
        (None, true) => eprintln!(
            "meshbed {who}: --insecure: {addr} is not a loopback address and these transfers are neither authenticated nor encrypted: anyone on the path can read them, and forge or reset them"
        ),
        (None, false) => bail!(
            "meshbed {who}: {addr} is not a loopback address and no key was given: off loopback, send and recv authenticate and encrypt every datagram by default. Give both ends the same key (`meshbed keygen mesh.key`, copy it, then `--psk mesh.key`, or the key in ${}), or say --insecure to go unauthenticated and unencrypted (anyone on the path can then read the data and forge or reset the transfer)",
            meshbed_net::auth::ENV_KEY
        ),
    }
    Ok(psk)
}

pub(crate) fn min_delay(spec: &Option<DelaySpec>) -> Result<Option<Duration>> {
    match spec {
        None => Ok(None),
        Some(DelaySpec::Fixed(d)) if !d.is_zero() => Ok(Some(Duration::from_nanos(d.as_nanos()))),
        Some(other) => bail!("--atp-min-delay {other}: expected a positive duration such as 100us"),
    }
}

/// What every stream of a `meshbed send` to `peer` shares.
fn send_options(a: &SendArgs, peer: SocketAddr) -> Result<SendOptions> {
    let mut options = SendOptions::new(a.protocol);
    options.delay = a.delay.clone();
    options.timeout = a.timeout;
    options.retries = a.retries;
    options.retry_delay = a.retry_delay;
    options.atp_min_delay = min_delay(&a.atp_min_delay)?;
    if let Some(w) = a.tcp_initial_window {
        if meshbed_proto::tcp::TcpVariant::from_protocol(a.protocol).is_none() {
            bail!(
                "--tcp-initial-window {w} with --protocol {}: expected a tcp-* protocol (the window is TCP's)",
                a.protocol
            );
        }
        options.tcp.initial_cwnd_segments = Some(w);
    }
    options.psk = load_psk(&a.psk, a.insecure, peer, "send")?;
    options.routed = routed_socket(&a.routed);
    Ok(options)
}

/// The runtime's largest TCP window, segments (`TcpConfig`'s default): an
/// initial window beyond it would be cut to it.
const MAX_TCP_WINDOW_SEGMENTS: i64 = 64;

/// The name a timed test stream announces (the receiver shows it).
const TIMED_NAME: &str = "timed-test";

/// Hashes the file with a bar (a large file takes seconds).
fn file_payload(file: &std::path::Path, quiet: bool) -> Result<Payload> {
    let hash_bar = progress_bar(0, quiet);
    if let Some(bar) = &hash_bar {
        bar.set_message("hashing");
    }
    let mut on_hash = |done: u64, total: u64| {
        if let Some(bar) = &hash_bar {
            bar.set_length(total);
            bar.set_position(done);
        }
    };
    let payload = Payload::from_file_with_progress(file, &mut on_hash);
    if let Some(bar) = &hash_bar {
        bar.finish_and_clear();
    }
    // The error names the file and the cause once (its source is the same cause).
    payload.map_err(|e| anyhow::anyhow!("{e}"))
}

/// A timed run's bar counts seconds, a file's bytes.
fn send_bar(what: &SendWhat, payload: &Payload, quiet: bool) -> Option<ProgressBar> {
    match what {
        SendWhat::File(_) => progress_bar(payload.stream_len(), quiet),
        SendWhat::Timed(t) => {
            let bar = progress_bar(t.as_millis() as u64, quiet)?;
            bar.set_style(ProgressStyle::with_template("{bar:30} {msg}").expect("valid template"));
            Some(bar)
        }
    }
}

/// Prints a line above the bar (stdout).
fn print_line(bar: &Option<ProgressBar>, line: &str) -> Result<()> {
    match bar {
        Some(bar) => bar.suspend(|| out(line)),
        None => out(line),
    }
}

pub fn run_send(a: SendArgs, plan: SendPlan) -> Result<()> {
    let peer = resolve(&plan.target).map_err(anyhow::Error::msg)?;
    if let (true, SendWhat::Timed(t)) = (a.reverse, &plan.what) {
        return crate::reverse::run_reverse(&a, *t, peer);
    }
    let mut options = send_options(&a, peer)?;
    let payload = match &plan.what {
        SendWhat::File(file) => file_payload(file, a.quiet)?,
        SendWhat::Timed(_) => Payload::timed(TIMED_NAME).map_err(|e| anyhow::anyhow!("{e}"))?,
    };
    if let SendWhat::Timed(t) = plan.what {
        options.stop_at = Some(Instant::now() + t);
    }
    if a.parallel > 1 {
        return run_parallel(&a, &plan, payload, peer, &options);
    }
    let bar = send_bar(&plan.what, &payload, a.quiet);
    let mut meter = a.interval.map(IntervalMeter::new);
    let mut intervals = Vec::new();
    let mut print_error = None;
    let mut on_interval = |iv: Interval, bar: &Option<ProgressBar>| {
        if !a.json {
            if intervals.is_empty() {
                print_error = print_line(bar, interval::HEADING).err().or(print_error.take());
            }
            print_error = print_line(bar, &iv.to_line("1")).err().or(print_error.take());
        }
        intervals.push(iv);
    };
    let mut on_progress = |p: &meshbed_net::SendProgress| {
        if let Some(bar) = &bar {
            match plan.what {
                SendWhat::File(_) => bar.set_position(p.acked),
                SendWhat::Timed(t) => {
                    bar.set_position(p.elapsed.as_millis() as u64);
                    bar.set_message(format!(
                        "{:.1}/{:.1} s, {:.1} MB acknowledged",
                        p.elapsed.as_secs_f64(),
                        t.as_secs_f64(),
                        p.acked_file_bytes as f64 / 1e6
                    ));
                }
            }
            if p.attempt > 1 {
                bar.set_message(format!("attempt {}", p.attempt));
            }
        }
        if let Some(m) = &mut meter {
            for iv in m.sample(p) {
                on_interval(iv, &bar);
            }
        }
    };
    let result = send(payload, peer, &options, &mut on_progress);
    if let Some(m) = &mut meter {
        for iv in m.finish() {
            on_interval(iv, &bar);
        }
    }
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    if let Some(e) = print_error {
        return Err(e);
    }
    let report = match &result {
        Ok(r) => Some(r),
        Err(e) => e.report(),
    };
    if let Some(r) = report {
        if a.json {
            let mut v = serde_json::to_value(r).context("serialising the report")?;
            if a.interval.is_some() {
                v["intervals"] = serde_json::to_value(&intervals)?;
            }
            out(&(serde_json::to_string_pretty(&v)? + "\n"))?;
        } else if r.ok {
            out(&r.to_text())?;
        }
    }
    let what = match &plan.what {
        SendWhat::File(file) => format!("`{}`", file.display()),
        SendWhat::Timed(t) => format!("a timed test ({})", humantime(*t)),
    };
    result.map(|_| ()).map_err(|e| anyhow::anyhow!("sending {what} to {peer}: {e}"))
}

/// What one of several parallel streams tells the main thread.
enum StreamNews {
    Progress(usize, meshbed_net::SendProgress),
    Ended(usize, Box<Result<SendReport, meshbed_net::SendError>>),
}

/// A stream's whole run as one line: its bytes, goodput and retransmissions.
fn whole_run(r: &SendReport) -> Interval {
    Interval {
        index: 0,
        start_s: 0.0,
        end_s: r.duration_s,
        bytes: r.acked_file_bytes,
        goodput_bps: r.acked_file_bytes as f64 * 8.0 / r.duration_s.max(1e-9),
        retransmissions: Some(r.retransmissions),
    }
}

/// `--parallel N`: N threads, each the one-stream `send`, to the same
/// receiver; a line per stream and their sum, as iperf3 -P prints them.
fn run_parallel(
    a: &SendArgs,
    plan: &SendPlan,
    payload: Payload,
    peer: SocketAddr,
    options: &SendOptions,
) -> Result<()> {
    let n = a.parallel;
    let bar = send_bar(&plan.what, &payload, a.quiet);
    let (tx, rx) = std::sync::mpsc::channel();
    let threads: Vec<_> = (0..n)
        .map(|i| {
            let (tx, payload, options) = (tx.clone(), payload.clone(), options.clone());
            std::thread::spawn(move || {
                let progress_tx = tx.clone();
                let mut on_progress = |p: &meshbed_net::SendProgress| {
                    let _ = progress_tx.send(StreamNews::Progress(i, p.clone()));
                };
                let result = send(payload, peer, &options, &mut on_progress);
                let _ = tx.send(StreamNews::Ended(i, Box::new(result)));
            })
        })
        .collect();
    drop(tx);
    let mut meters: Vec<Option<IntervalMeter>> = (0..n).map(|_| a.interval.map(IntervalMeter::new)).collect();
    let mut sums = IntervalSum::new(n);
    let mut all_intervals: Vec<serde_json::Value> = Vec::new();
    let mut sum_intervals = Vec::new();
    let mut results: Vec<Option<Result<SendReport, meshbed_net::SendError>>> = (0..n).map(|_| None).collect();
    let mut acked = vec![0u64; n];
    let mut heading_printed = false;
    for news in rx {
        let (i, closed) = match news {
            StreamNews::Progress(i, p) => {
                acked[i] = p.acked_file_bytes;
                if let (Some(bar), SendWhat::Timed(t)) = (&bar, &plan.what) {
                    bar.set_position(p.elapsed.as_millis() as u64);
                    let total: u64 = acked.iter().sum();
                    bar.set_message(format!(
                        "{:.1}/{:.1} s, {n} streams, {:.1} MB acknowledged",
                        p.elapsed.as_secs_f64(),
                        t.as_secs_f64(),
                        total as f64 / 1e6
                    ));
                }
                (i, meters[i].as_mut().map(|m| m.sample(&p)).unwrap_or_default())
            }
            StreamNews::Ended(i, result) => {
                results[i] = Some(*result);
                let closed = meters[i].as_mut().map(|m| m.finish()).unwrap_or_default();
                (i, closed)
            }
        };
        let mut lines = String::new();
        for iv in closed {
            sums.add(i, &iv);
            lines.push_str(&iv.to_line(&(i + 1).to_string()));
            let mut v = serde_json::to_value(&iv)?;
            v["stream"] = json!(i + 1);
            all_intervals.push(v);
        }
        if results[i].is_some() {
            sums.end(i);
        }
        for sum in sums.ready() {
            lines.push_str(&sum.to_line("SUM"));
            sum_intervals.push(sum);
        }
        if !a.json && !lines.is_empty() {
            if !heading_printed {
                lines.insert_str(0, interval::HEADING);
                heading_printed = true;
            }
            print_line(&bar, &lines)?;
        }
    }
    for t in threads {
        t.join().map_err(|_| anyhow::anyhow!("a sending thread panicked"))?;
    }
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let results: Vec<_> = results.into_iter().map(|r| r.expect("every stream ends")).collect();
    let reports: Vec<Option<&SendReport>> =
        results.iter().map(|r| r.as_ref().ok().or_else(|| r.as_ref().err()?.report())).collect();
    let failures: Vec<(usize, String)> =
        results.iter().enumerate().filter_map(|(i, r)| r.as_ref().err().map(|e| (i + 1, e.to_string()))).collect();
    let lines: Vec<Interval> = reports.iter().flatten().map(|r| whole_run(r)).collect();
    let mut total = IntervalSum::new(1);
    for line in &lines {
        total.add(0, line);
    }
    total.end(0);
    let sum = total.ready().pop();
    if a.json {
        let streams: Vec<serde_json::Value> = results
            .iter()
            .map(|r| match r {
                Ok(report) => serde_json::to_value(report).unwrap_or_default(),
                Err(e) => match e.report() {
                    Some(report) => serde_json::to_value(report).unwrap_or_default(),
                    None => json!({ "ok": false, "error": e.to_string() }),
                },
            })
            .collect();
        let mut v = json!({ "ok": failures.is_empty(), "streams": streams, "sum": sum });
        if a.interval.is_some() {
            v["intervals"] = json!(all_intervals);
            v["sum_intervals"] = serde_json::to_value(&sum_intervals)?;
        }
        out(&(serde_json::to_string_pretty(&v)? + "\n"))?;
    } else {
        let mut text = format!("{}- - - - - - - - - - - - -\n", interval::HEADING);
        for (i, r) in reports.iter().enumerate() {
            match r {
                Some(r) => text.push_str(&whole_run(r).to_line(&(i + 1).to_string())),
                None => text.push_str(&format!("[{:>3}] no report\n", i + 1)),
            }
        }
        if let Some(sum) = &sum {
            text.push_str(&sum.to_line("SUM"));
        }
        out(&text)?;
    }
    if !failures.is_empty() {
        let each: Vec<String> = failures.iter().map(|(i, e)| format!("stream {i}: {e}")).collect();
        bail!("{} of {n} streams to {peer} failed: {}", failures.len(), each.join("; "));
    }
    Ok(())
}
