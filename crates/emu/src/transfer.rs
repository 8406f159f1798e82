//! One transport flow of a scenario as a real transfer on the emulator:
//! `meshbed-net`'s receiver and sender in the two end nodes' namespaces,
//! the file verified byte for byte, both engines' trace samples placed in
//! the run's time (`crate::traffic` runs the scenario around it).

use crate::plumbing;
use crate::sys;
use crate::traffic::{flow_port, Running};
use meshbed_sim::scenario::{Amount, FlowKind};
use meshbed_sim::transport::Side;
use meshbed_sim::Scenario;
use std::net::SocketAddrV4;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// What a transport flow did on the emulator.
pub struct TransferOutcome {
    pub verified: bool,
    /// Not finished by the run's `duration_s`: the bytes acknowledged when
    /// the run's time was up, and when it finished (s from the run's
    /// start), or `None` if it was stopped there (a kernel TCP flow).
    pub after_end: Option<(u64, Option<f64>)>,
    pub error: Option<String>,
    pub bytes_delivered: u64,
    pub goodput_bps: f64,
    pub duration_s: f64,
    pub retransmissions: u64,
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    pub feedback_packets: u64,
    /// Both engines' trace samples, in the run's time (with `trace = true`).
    pub trace: Vec<meshbed_sim::transport::TraceRecord>,
    /// Every attempt of the sender that failed, as `meshbed send` reports
    /// it (a later attempt starts again from byte 0).
    pub failed_attempts: Vec<String>,
    /// How the sender's loop kept the engine's schedule.
    pub pacing: Option<meshbed_sim::report::SenderPacing>,
    /// What each end heard from its node's routing daemon (with daemons),
    /// as `meshbed send` and `meshbed recv` report it.
    pub routing_sender: Option<meshbed_net::notice::RoutingSeen>,
    pub routing_receiver: Option<meshbed_net::notice::RoutingSeen>,
}

impl TransferOutcome {
    pub(crate) fn failed(why: impl Into<String>) -> Self {
        TransferOutcome {
            verified: false,
            after_end: None,
            error: Some(why.into()),
            bytes_delivered: 0,
            goodput_bps: 0.0,
            duration_s: 0.0,
            retransmissions: 0,
            datagrams_sent: 0,
            datagrams_received: 0,
            feedback_packets: 0,
            trace: Vec::new(),
            failed_attempts: Vec::new(),
            pacing: None,
            routing_sender: None,
            routing_receiver: None,
        }
    }
}

/// Runs flow `index` as a real transfer: `meshbed-net`'s receiver in the
/// destination's namespace writing into a scratch directory, its sender in
/// the source's namespace with the source node's exported delay (ATP stamps
/// it; the relays stamp on the way). The file is the flow's own pseudo-random
/// bytes, and it counts only if what was committed equals them byte for byte.
pub(crate) fn start_transfer(
    running: &Running,
    scenario: &Scenario,
    index: usize,
    protocol: meshbed_proto::Protocol,
    amount: Amount,
    t0: std::time::Instant,
) -> std::thread::JoinHandle<TransferOutcome> {
    use rand::RngCore;
    let f = &scenario.flows[index];
    // A flow until `stop_s` sends the simulator's backlog (what its link
    // could carry in the time, more than it will deliver) and is stopped
    // there, as the simulator stops it.
    let bytes = match amount {
        Amount::Bytes(bytes) => bytes,
        Amount::Until { .. } => scenario.sender_data_bytes(index),
    };
    // Every flow stops at the run's end at the latest, as the simulator's
    // do: a transfer not finished by then is incomplete, with the bytes
    // acknowledged by then (its partial file checked). Running on would
    // only keep a stalled transfer's run waiting out its idle timeout.
    let stop_at = t0
        + std::time::Duration::from_secs_f64(match amount {
            Amount::Bytes(_) => scenario.duration_s,
            Amount::Until { stop_s } => stop_s.min(scenario.duration_s),
        });
    let of_bytes = matches!(amount, Amount::Bytes(_));
    let mut data = vec![0u8; bytes as usize];
    meshbed_core::stream_rng(
        scenario.seed,
        meshbed_core::StreamId::new(meshbed_core::StreamKind::Transport, index as u64),
    )
    .fill_bytes(&mut data);
    let dst_addr = std::net::SocketAddr::V4(SocketAddrV4::new(plumbing::node_addr(f.dst), flow_port(index)));
    let (src_ns, dst_ns) = (running.netns(f.src).to_string(), running.netns(f.dst).to_string());
    let delay_file = crate::realtime::DelayExport::path(&running.emulation.dir(), f.src);
    // With routing daemons the sender hears its node's route notices and
    // path information, as the simulator's transports do.
    let routed_at =
        |node| running.emulation.state.routed.then(|| crate::routers::notice_socket(&running.emulation.dir(), node));
    let (routed, routed_rx) = (routed_at(f.src), routed_at(f.dst));
    let scratch = std::env::temp_dir().join(format!("meshbed-emu-{}-flow{index}", running.emulation.id()));
    let start = std::time::Duration::from_secs_f64(f.start_s);
    let run_end = std::time::Duration::from_secs_f64(scenario.duration_s);
    let trace = matches!(&f.kind, FlowKind::Transport(t) if t.trace);
    let tcp = match &f.kind {
        FlowKind::Transport(t) => crate::support::tcp_tuning(&t.settings),
        _ => Default::default(),
    };
    std::thread::spawn(move || {
        let outcome =
            (|| -> std::result::Result<TransferOutcome, String> {
                std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
                // Receiver first, in the destination's namespace.
                let stop = Arc::new(AtomicBool::new(false));
                let (stop2, dir) = (stop.clone(), scratch.clone());
                // The receiver's last ended transfer: a failed attempt and
                // the sender's retry each end one, and the receiver keeps
                // listening until the sender is done (it is stopped then),
                // so a retry always finds it.
                let last_report: Arc<Mutex<Option<meshbed_net::TransferReport>>> = Arc::default();
                let reports = last_report.clone();
                let (bound_tx, bound_rx) = std::sync::mpsc::channel::<std::result::Result<(), String>>();
                let receiver = std::thread::spawn(move || -> std::result::Result<(), String> {
                    let bound = (|| {
                        sys::enter_netns(&dst_ns).map_err(|e| format!("entering {dst_ns}: {e}"))?;
                        let mut options = meshbed_net::ReceiveOptions::new(
                            dst_addr,
                            meshbed_net::SinkKind::Directory { dir, overwrite: false },
                        );
                        options.linger = std::time::Duration::from_millis(500);
                        // No Retry round trip before the SYN, as in the
                        // simulator: its two packets would mark every node
                        // on the path busy, so the probe that follows is
                        // stamped with D instead of an idle node's η·D
                        // (seed 002 §4.1) and ATP's first epoch runs at 3×
                        // the simulator's rate (issue 24: 5× the source's
                        // queue losses). The peers are the emulation's own
                        // processes in its own namespaces.
                        options.validate_addresses = false;
                        options.routed = routed_rx;
                        options.trace = trace;
                        options.tcp = tcp;
                        meshbed_net::Receiver::bind(options).map_err(|e| format!("receiver: {e}"))
                    })();
                    let mut rx = match bound {
                        Ok(rx) => {
                            let _ = bound_tx.send(Ok(()));
                            rx
                        }
                        Err(e) => {
                            let _ = bound_tx.send(Err(e.clone()));
                            return Err(e);
                        }
                    };
                    rx.run(&stop2, &mut |ev| {
                        if let meshbed_net::ReceiverEvent::Ended(r) = ev {
                            *reports.lock().expect("not poisoned") = Some(r.clone());
                        }
                    })
                    .map_err(|e| format!("receiver: {e}"))?;
                    Ok(())
                });
                // The sender starts only once the receiver listens: the
                // emulation's setup may already have taken longer than the
                // flow's start_s.
                match bound_rx.recv_timeout(std::time::Duration::from_secs(10)) {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => return Err(e),
                    Err(_) => {
                        stop.store(true, Ordering::Relaxed);
                        return Err("the receiver did not start listening within 10 s".into());
                    }
                }
                let el = t0.elapsed();
                if el < start {
                    std::thread::sleep(start - el);
                }
                sys::enter_netns(&src_ns).map_err(|e| format!("entering {src_ns}: {e}"))?;
                let name = format!("flow{index}.bin");
                let payload = meshbed_net::Payload::from_bytes(&name, &data).map_err(|e| e.to_string())?;
                let mut options = meshbed_net::SendOptions::new(protocol);
                options.delay = format!("file:{}", delay_file.display()).parse::<meshbed_net::DelaySpec>()?;
                options.routed = routed;
                options.trace = trace;
                options.tcp = tcp;
                options.stop_at = Some(stop_at);
                // A failed attempt (a route not there yet) is retried.
                options.retries = 2;
                // The simulator's engines wait out a silence as long as
                // their presets say (TCP and MTL 100 s, ATP 10 s) before a
                // flow fails; the runtime's default (10 s for all) would
                // end, and restart from byte 0, a TCP transfer across a
                // route repair the simulator's flow rides out.
                options.timeout = meshbed_net::clock::to_std(preset_idle_timeout(protocol));
                // What the receiver had acknowledged when the run's time was
                // up (sampled every 100 ms): the simulator stops there, so a
                // transfer that finishes later is reported incomplete with
                // these bytes, never as completed.
                let mut acked_at_end = None;
                let sent = meshbed_net::send(payload, dst_addr, &options, &mut |p| {
                    if acked_at_end.is_none() && t0.elapsed() >= run_end {
                        // Stream bytes: the header, then the file.
                        acked_at_end = Some(p.acked.saturating_sub(p.total - bytes));
                    }
                });
                if let Some(stopped) = sent.as_ref().ok().or_else(|| sent.as_ref().err()?.report()) {
                    if stopped.stopped {
                        // The receiver still holds the partial file: check
                        // it before it is abandoned.
                        let mut outcome = stopped_outcome(&scratch, &data, stopped, start, stop_at, t0);
                        if of_bytes && outcome.verified {
                            // Not finished by the run's end: incomplete, not failed.
                            outcome.after_end = Some((outcome.bytes_delivered, None));
                        }
                        stop.store(true, Ordering::Relaxed);
                        let _ = receiver.join();
                        return Ok(outcome);
                    }
                }
                // A committed transfer's report is made as the receiver
                // confirms the commit; give it a moment to be handed over.
                let waited = std::time::Instant::now();
                while sent.is_ok()
                    && last_report.lock().expect("not poisoned").is_none()
                    && waited.elapsed() < std::time::Duration::from_secs(2)
                {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                stop.store(true, Ordering::Relaxed);
                match receiver.join() {
                    Ok(r) => r?,
                    Err(_) => return Err("receiver thread panicked".into()),
                }
                let rx_report = last_report.lock().expect("not poisoned").take();
                let rx_trace = rx_report.as_ref().and_then(|r| r.trace.as_ref());
                let routing_receiver = rx_report.as_ref().and_then(|r| r.routing.clone());
                let report = match &sent {
                    Ok(r) => r.clone(),
                    Err(e) => match e.report() {
                        Some(r) => r.clone(),
                        None => return Err(e.to_string()),
                    },
                };
                let committed = scratch.join(&name);
                let verified = report.ok && std::fs::read(&committed).map(|got| got == data).unwrap_or(false);
                let error =
                    if verified {
                        None
                    } else {
                        Some(report.error.clone().unwrap_or_else(|| {
                            format!("{} missing or differs from the data sent", committed.display())
                        }))
                    };
                let trace = run_trace(t0, [(Side::Sender, report.trace.as_ref()), (Side::Receiver, rx_trace)]);
                let finished_s = start.as_secs_f64() + report.duration_s;
                let late = finished_s > run_end.as_secs_f64();
                Ok(TransferOutcome {
                    verified,
                    after_end: late.then(|| (acked_at_end.unwrap_or(0), Some(finished_s))),
                    error,
                    bytes_delivered: if verified { bytes } else { 0 },
                    goodput_bps: if verified { report.goodput_bps } else { 0.0 },
                    duration_s: report.duration_s,
                    retransmissions: report.retransmissions,
                    datagrams_sent: report.datagrams_sent,
                    datagrams_received: rx_report.map_or(0, |r| r.datagrams_received),
                    feedback_packets: report.feedback_packets,
                    trace,
                    failed_attempts: report.failed_attempts.iter().map(ToString::to_string).collect(),
                    pacing: Some(report.pacing.clone()),
                    routing_sender: report.routing.clone(),
                    routing_receiver,
                })
            })();
        let _ = std::fs::remove_dir_all(&scratch);
        outcome.unwrap_or_else(TransferOutcome::failed)
    })
}

/// The silence after which the simulator's engine for `protocol` fails
/// (its preset, without the runtime's changes).
fn preset_idle_timeout(protocol: meshbed_proto::Protocol) -> meshbed_core::Duration {
    meshbed_proto::connection::EngineConfig::new(protocol, |atp| atp, meshbed_proto::tcp::TcpConfig::default)
        .idle_timeout()
}

/// A flow stopped at its `stop_s` (or a transfer at the run's end): the file bytes the receiver had
/// acknowledged, and whether what it wrote so far (its partial file in
/// `scratch`) equals the start of the data.
fn stopped_outcome(
    scratch: &std::path::Path,
    data: &[u8],
    report: &meshbed_net::SendReport,
    start: std::time::Duration,
    stop_at: std::time::Instant,
    t0: std::time::Instant,
) -> TransferOutcome {
    let written = std::fs::read_dir(scratch)
        .into_iter()
        .flatten()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().ends_with(meshbed_net::framing::TEMP_SUFFIX))
        .and_then(|e| std::fs::read(e.path()).ok())
        .unwrap_or_default();
    let verified = written.len() <= data.len() && written[..] == data[..written.len()];
    let active_s = (stop_at.saturating_duration_since(t0).as_secs_f64() - start.as_secs_f64()).max(0.0);
    let bytes = report.acked_file_bytes;
    TransferOutcome {
        verified,
        after_end: None,
        error: (!verified).then(|| "the bytes the receiver wrote differ from the data sent".to_string()),
        bytes_delivered: bytes,
        goodput_bps: meshbed_sim::report::goodput_bps(bytes, active_s),
        duration_s: active_s,
        retransmissions: report.retransmissions,
        datagrams_sent: report.datagrams_sent,
        datagrams_received: report.datagrams_received,
        feedback_packets: report.feedback_packets,
        trace: run_trace(t0, [(Side::Sender, report.trace.as_ref()), (Side::Receiver, None)]),
        // The last attempt was stopped at the flow's stop_s, as the
        // simulator stops it: that is how such a flow ends, not a failure.
        failed_attempts: report.failed_attempts[..report.failed_attempts.len().saturating_sub(1)]
            .iter()
            .map(ToString::to_string)
            .collect(),
        pacing: Some(report.pacing.clone()),
        routing_sender: report.routing.clone(),
        routing_receiver: None,
    }
}

/// Both ends' engine samples as the simulator reports them, in seconds
/// from the run's start `t0` (each engine counts from its own clock's
/// origin), in time order.
fn run_trace(
    t0: std::time::Instant,
    ends: [(Side, Option<&meshbed_net::conn::EngineTrace>); 2],
) -> Vec<meshbed_sim::transport::TraceRecord> {
    let mut records = Vec::new();
    for (side, trace) in ends {
        let Some(trace) = trace else { continue };
        let offset_s = trace.origin.saturating_duration_since(t0).as_secs_f64();
        records.extend(trace.samples.iter().map(|sample| {
            let mut r = meshbed_sim::transport::TraceRecord::new(side, sample);
            r.t_s += offset_s;
            r
        }));
    }
    records.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
    records
}

#[cfg(test)]
mod tests {
    use super::*;
    use meshbed_core::{Duration, Instant};
    use meshbed_sim::TraceKind;

    #[test]
    fn transfers_wait_out_a_silence_as_long_as_the_simulators_presets() {
        use meshbed_proto::Protocol;
        assert_eq!(preset_idle_timeout(Protocol::TcpNewReno), Duration::from_secs(100));
        assert_eq!(preset_idle_timeout(Protocol::Mtl), Duration::from_secs(100));
        assert_eq!(preset_idle_timeout(Protocol::AtpDefault), Duration::from_secs(10));
    }

    #[test]
    fn engine_samples_are_placed_in_the_runs_time_in_order() {
        use meshbed_proto::engine::TraceSample;
        let t0 = std::time::Instant::now();
        let at = |ms: u64| Instant::from_nanos(ms * 1_000_000);
        let d = |us| Duration::from_micros(us);
        let mut tx = meshbed_net::conn::EngineTrace::new(t0 + std::time::Duration::from_secs(2));
        tx.push(&TraceSample::Ds { at: at(500), d_s: d(900) });
        let mut rx = meshbed_net::conn::EngineTrace::new(t0 + std::time::Duration::from_millis(1500));
        rx.push(&TraceSample::DMax { at: at(900), d_max: d(300) });
        rx.push(&TraceSample::DAvgSent { at: at(1200), d_avg: d(400) });
        let got: Vec<(f64, Side, TraceKind)> = run_trace(t0, [(Side::Sender, Some(&tx)), (Side::Receiver, Some(&rx))])
            .into_iter()
            .map(|r| ((r.t_s * 1e3).round() / 1e3, r.side, r.kind))
            .collect();
        assert_eq!(
            got,
            [
                (2.4, Side::Receiver, TraceKind::DMaxUs),
                (2.5, Side::Sender, TraceKind::DSUs),
                (2.7, Side::Receiver, TraceKind::DAvgSentUs)
            ]
        );
    }
}
