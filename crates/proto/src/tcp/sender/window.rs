//! The window and pacing as the sender sees them: whether the window
//! admits a segment, when pacing lets the next one leave (seed 003 §6's
//! rule, or BBR's rate), and the traces and slow-start bookkeeping of
//! seed 002 §2.2 that follow every change of the window or the RTO.

use super::{Core, TcpSendControl};
use crate::engine::TraceSample;
use crate::engine_core::Phase;
use crate::tcp::cc::CongestionControl;
use meshbed_core::{Duration, Instant};

impl TcpSendControl {
    pub(super) fn pacing_interval(&self) -> Option<Duration> {
        if !self.config.pacing {
            return None;
        }
        let srtt = self.rtt.srtt()?;
        // An empty pipe always admits one segment: the window is never less.
        let window = self.window_segments().max(1.0);
        let gap_ns = (srtt.as_nanos() as f64 / (self.config.pacing_v * window)).round();
        Some(Duration::from_nanos(gap_ns as u64))
    }

    pub(super) fn next_paced_send(&self) -> Option<Instant> {
        if let Some(bbr) = &self.bbr {
            return bbr.next_send_at();
        }
        Some(self.last_data_sent_at? + self.pacing_interval()?)
    }

    /// Traces cwnd if it changed and keeps the slow-start bookkeeping of
    /// seed 002 §2.2 (Fig. 3). `restart` says that the window was just
    /// reset to the loss window (an RTO, Tahoe's fast retransmit): slow
    /// start begins anew even when cwnd was already below ssthresh.
    pub(super) fn window_changed(&mut self, core: &mut Core, now: Instant, restart: bool) {
        let metrics = self.cc.metrics();
        let cwnd = metrics.cwnd_segments;
        if cwnd != self.last_traced_cwnd {
            self.last_traced_cwnd = cwnd;
            core.trace(TraceSample::Cwnd { at: now, cwnd_segments: cwnd });
        }
        if core.phase() != Phase::Established {
            // The window means nothing before the handshake completes.
            return;
        }
        // RFC 5681 §3.1: slow start while cwnd < ssthresh, fast recovery
        // excepted ([`CongestionControl::in_slow_start`]; BBR's Startup).
        let in_slow_start = self.cc.in_slow_start();
        match (self.slow_start_since, in_slow_start) {
            (None, true) => {
                self.slow_start_since = Some(now);
                self.tcp_stats.slow_start_entries += 1;
                core.trace(TraceSample::SlowStart { at: now, entered: true });
            }
            (Some(_), true) if restart => {
                self.tcp_stats.slow_start_entries += 1;
                core.trace(TraceSample::SlowStart { at: now, entered: true });
            }
            (Some(since), false) => {
                self.slow_start_since = None;
                self.tcp_stats.slow_start_time += now.saturating_since(since);
                core.trace(TraceSample::SlowStart { at: now, entered: false });
            }
            _ => {}
        }
    }

    /// Traces the RTO if it changed and keeps its maximum (seed 002 §2.1).
    pub(super) fn rto_changed(&mut self, core: &mut Core, now: Instant) {
        let rto = self.rtt.rto();
        if Some(rto) != self.last_traced_rto {
            self.last_traced_rto = Some(rto);
            self.tcp_stats.max_rto = self.tcp_stats.max_rto.max(rto);
            core.trace(TraceSample::Rto { at: now, rto });
        }
    }

    /// Whether the window admits a segment occupying `space` more sequence
    /// numbers. An empty pipe always admits one segment, so a window below one
    /// segment cannot deadlock the connection.
    pub(super) fn window_allows(&self, space: u64) -> bool {
        let flight = self.snd_nxt - self.snd_una;
        if flight == 0 {
            return true;
        }
        let window_bytes = (self.window_segments() * self.config.mss_bytes as f64).floor() as u64;
        flight + space <= window_bytes
    }

    /// cwnd in segments, capped by the largest window.
    pub(super) fn window_segments(&self) -> f64 {
        self.cc.window_segments().min(self.config.max_cwnd_segments as f64)
    }
}
