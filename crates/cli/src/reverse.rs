//! Reverse tests, iperf3's `-R` (meshbed-net's `reverse` module): `meshbed
//! send --reverse --time D HOST:PORT` asks `meshbed recv --allow-reverse`
//! to send it a timed test stream, and receives it; the receiver side
//! starts the stream when the request has arrived whole.

use crate::out;
use crate::recv::Meters;
use crate::transfer::{load_psk, SendArgs};
use anyhow::{bail, Context, Result};
use meshbed_net::reverse::{ReverseRequest, MAX_REVERSE};
use meshbed_net::{send, Payload, ReceiveOptions, Receiver, ReceiverEvent, SendOptions, SinkKind, TransferReport};
use meshbed_proto::Protocol;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The name the receiver's reverse stream announces.
const REVERSE_NAME: &str = "reverse-test";

/// Reverse tests one receiver runs at once; a request beyond them is
/// taken (its sender has its confirmation) but not served, and said so.
pub const MAX_RUNNING: usize = 4;

/// The client: receives the stream it asks `peer` for, for `duration`.
pub fn run_reverse(a: &SendArgs, duration: Duration, peer: SocketAddr) -> Result<()> {
    if duration > MAX_REVERSE {
        bail!(
            "--time {:?} with --reverse: expected at most {} s (a receiver sends no longer)",
            duration,
            MAX_REVERSE.as_secs()
        );
    }
    let psk = load_psk(&a.psk, a.insecure, peer, "send --reverse")?;
    let any: SocketAddr = if peer.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }.parse().expect("an address");
    let mut ro = ReceiveOptions::new(any, SinkKind::TimedOnly);
    // The stream it asked for, from the host it asked, and nothing else.
    ro.only_from = Some(peer.ip());
    ro.max_transfers = Some(1);
    ro.max_connections = 1;
    ro.max_connections_per_peer = 1;
    ro.timeout = a.timeout;
    ro.psk = psk.clone();
    let mut receiver = Receiver::bind(ro).context("binding the reverse test's receiving socket")?;
    let port = receiver.local_addr()?.port();
    let stop = Arc::new(AtomicBool::new(false));
    let (interval, json) = (a.interval, a.json);
    let rx_stop = stop.clone();
    let rx = std::thread::spawn(move || -> Result<Option<(TransferReport, Vec<meshbed_net::interval::Interval>)>> {
        let mut meters = interval.map(Meters::new);
        let mut ended = None;
        let mut print_error = None;
        receiver.run(&rx_stop, &mut |event| match event {
            ReceiverEvent::Progress(list) => {
                if let Some(m) = &mut meters {
                    let lines = m.progress(list, !json);
                    if !lines.is_empty() {
                        print_error = out(&lines).err().or(print_error.take());
                    }
                }
            }
            ReceiverEvent::Ended(report) => {
                let (lines, intervals) = meters.as_mut().map(|m| m.ended(report)).unwrap_or_default();
                if !json && !lines.is_empty() {
                    print_error = out(&lines).err().or(print_error.take());
                }
                ended = Some((report.clone(), intervals));
            }
        })?;
        print_error.map_or(Ok(ended), Err)
    });

    let request = ReverseRequest { port, duration };
    let mut options = SendOptions::new(a.protocol);
    options.timeout = a.timeout;
    options.psk = psk;
    let asked = send(Payload::reverse_request(&request), peer, &options, &mut |_| {});
    if let Err(e) = asked {
        stop.store(true, Ordering::Relaxed);
        let _ = rx.join();
        bail!(
            "the reverse test request to {peer} was not taken: most likely the receiver does not run reverse tests (start it with `meshbed recv --allow-reverse`; with --psk both ends need the same key). What the request's sender saw: {e}"
        );
    }
    // The stream runs for `duration` once the receiver starts it; it fails
    // by itself after --timeout of silence, and this bounds the rest.
    let deadline = Instant::now() + duration + a.timeout + Duration::from_secs(5);
    while !rx.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    let received = rx.join().map_err(|_| anyhow::anyhow!("the reverse test's receiver panicked"))??;
    let Some((report, intervals)) = received else {
        bail!(
            "{peer} took the reverse test request but sent no stream to port {port} within {:.0} s",
            (duration + a.timeout).as_secs_f64()
        );
    };
    if json {
        let mut v = serde_json::to_value(&report)?;
        v["reverse"] = serde_json::json!(true);
        if interval.is_some() {
            v["intervals"] = serde_json::to_value(&intervals)?;
        }
        out(&(v.to_string() + "\n"))?;
    } else if !a.quiet || !report.ok {
        out(&format!("reverse test from {peer}: {}", report.to_text()))?;
    }
    if !report.ok {
        bail!("the reverse test from {peer} failed: {}", report.error.as_deref().unwrap_or("no reason given"));
    }
    Ok(())
}

/// The receiver's side: the streams it sends for the requests it took.
pub struct ReverseSenders {
    psk: Option<meshbed_net::auth::Psk>,
    timeout: Duration,
    json: bool,
    running: Vec<JoinHandle<()>>,
}

impl ReverseSenders {
    pub fn new(psk: Option<meshbed_net::auth::Psk>, timeout: Duration, json: bool) -> Self {
        ReverseSenders { psk, timeout, json, running: Vec::new() }
    }

    /// A request arrived whole in `report` (from its `peer`): sends the
    /// stream to the peer's address at the requested port, in a thread.
    /// The line it prints when done, or why it is not sent.
    pub fn start(&mut self, report: &TransferReport, request: ReverseRequest) -> Option<String> {
        self.running.retain(|t| !t.is_finished());
        let Ok(from) = report.peer.parse::<SocketAddr>() else {
            return Some(format!("reverse test request from {}: not an address, not served\n", report.peer));
        };
        if self.running.len() >= MAX_RUNNING {
            return Some(format!(
                "reverse test request from {from} not served: {MAX_RUNNING} reverse tests are running already\n"
            ));
        }
        let Ok(protocol) = report.protocol.parse::<Protocol>() else {
            return Some(format!("reverse test request from {from} with {}: no such protocol\n", report.protocol));
        };
        let to = SocketAddr::new(from.ip(), request.port);
        let mut options = SendOptions::new(protocol);
        options.timeout = self.timeout;
        options.psk = self.psk.clone();
        options.stop_at = Some(Instant::now() + request.duration);
        let json = self.json;
        self.running.push(std::thread::spawn(move || {
            let payload = Payload::timed(REVERSE_NAME).expect("a valid fixed name");
            let result = send(payload, to, &options, &mut |_| {});
            let line = match (&result, json) {
                (Ok(r), true) => {
                    let mut v = serde_json::to_value(r).unwrap_or_default();
                    v["reverse_to"] = serde_json::json!(to.to_string());
                    v.to_string() + "\n"
                }
                (Ok(r), false) => format!("reverse test to {to}: {}", r.to_text()),
                (Err(e), _) => format!("reverse test to {to} FAILED: {e}\n"),
            };
            let _ = out(&line);
        }));
        None
    }

    /// Waits for every stream still running.
    pub fn join(self) {
        for t in self.running {
            let _ = t.join();
        }
    }
}
