//! The model's events and where it puts them: what a driver's queue
//! stores and hands back to [`super::Medium::handle`].

use super::{FrameId, NodeId};
use meshbed_core::Instant;

/// The model's events. The driver stores them and hands each back to
/// [`super::Medium::handle`] at its time.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum RadioEvent {
    /// The first energy of `frame` reaches `node` at `power_mw` (after fading).
    RxStart { node: NodeId, frame: FrameId, power_mw: f64 },
    /// The last energy of `frame` leaves `node`.
    RxEnd { node: NodeId, frame: FrameId },
    /// `node` finished putting its current frame on the air.
    TxEnd { node: NodeId },
    /// IFS plus the backoff countdown of `node` have elapsed.
    Access { node: NodeId, gen: u32 },
    /// ACK or CTS timeout of `node`.
    Timeout { node: NodeId, gen: u32 },
    /// SIFS after a frame that needs an answer: send it.
    Respond { node: NodeId },
    /// The NAV of `node` may have expired.
    NavEnd { node: NodeId, gen: u32 },
}

/// A node's events of which at most one is current: each new one makes
/// the last stale (its generation), so a queue may keep one per node.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RadioTimer {
    Access,
    Timeout,
    NavEnd,
}

impl RadioTimer {
    /// Timers per node.
    pub const PER_NODE: u32 = 3;

    /// `node`'s timer as one number, dense over the nodes: `0..PER_NODE ×
    /// nodes`.
    #[inline]
    pub fn index(self, node: NodeId) -> u32 {
        node * Self::PER_NODE + self as u32
    }
}

impl RadioEvent {
    /// The timer this event is kept in, if it is one.
    #[inline]
    pub fn timer(&self) -> Option<RadioTimer> {
        match self {
            RadioEvent::Access { .. } => Some(RadioTimer::Access),
            RadioEvent::Timeout { .. } => Some(RadioTimer::Timeout),
            RadioEvent::NavEnd { .. } => Some(RadioTimer::NavEnd),
            _ => None,
        }
    }

    pub fn node(&self) -> NodeId {
        match *self {
            RadioEvent::RxStart { node, .. }
            | RadioEvent::RxEnd { node, .. }
            | RadioEvent::TxEnd { node }
            | RadioEvent::Access { node, .. }
            | RadioEvent::Timeout { node, .. }
            | RadioEvent::Respond { node }
            | RadioEvent::NavEnd { node, .. } => node,
        }
    }
    /// A small stable code per variant, for trace hashes.
    pub fn code(&self) -> u64 {
        match self {
            RadioEvent::RxStart { .. } => 1,
            RadioEvent::RxEnd { .. } => 2,
            RadioEvent::TxEnd { .. } => 3,
            RadioEvent::Access { .. } => 4,
            RadioEvent::Timeout { .. } => 5,
            RadioEvent::Respond { .. } => 6,
            RadioEvent::NavEnd { .. } => 7,
        }
    }
}

/// Where the model puts its future events.
pub trait Scheduler {
    fn schedule(&mut self, at: Instant, event: RadioEvent);
    /// Schedules `event`, one of a node's [`RadioTimer`]s, in place of the
    /// event that timer held: a queue that keeps timers drops the old one
    /// unrun (issue 28: stale access and NAV-end events were ~6% of
    /// a TCP chain's events). By default a plain [`Scheduler::schedule`]:
    /// each event's generation makes the old one stale all the same, so
    /// the model runs the same either way.
    #[inline]
    fn set_timer(&mut self, at: Instant, event: RadioEvent) {
        self.schedule(at, event);
    }
    /// Takes away the event `node`'s `timer` holds, which its generation
    /// has just made stale; by default nothing (it runs and does nothing).
    #[inline]
    fn cancel_timer(&mut self, node: NodeId, timer: RadioTimer) {
        let _ = (node, timer);
    }
    /// Schedules `events` as [`Scheduler::schedule`] on each in turn would
    /// (the same order among themselves and with every other event): a
    /// frame's arrivals at its neighbours, which a queue may keep together.
    fn schedule_batch(&mut self, events: impl Iterator<Item = (Instant, RadioEvent)>) {
        for (at, event) in events {
            self.schedule(at, event);
        }
    }
}
