//! The world's timers in the network's queue (issue 28): one per event
//! kind whose every new event makes the last one stale, so the queue keeps
//! one pending event for each instead of every stale one
//! (`EventQueue::set_timer`).

use crate::transport::{Side, Timer};
use crate::{Net, SimEvent};
use meshbed_core::{Instant, TimerId};
use meshbed_radio::NodeId;

/// Schedules a transport timer the engines asked for; time never goes
/// backwards, even for a deadline already past. A new timer of a side
/// replaces its last (whose generation it made stale).
pub(crate) fn schedule_timer(net: &mut Net, now: Instant, flow: u32, timer: Option<Timer>) {
    if let Some(Timer { side, at, gen }) = timer {
        let id = host_timer(net.medium().node_count(), HostTimer::Transport { flow, side });
        net.set_timer(id, at.max(now), SimEvent::Transport { flow, side, gen });
    }
}

/// Whose timer.
#[derive(Copy, Clone, Debug)]
pub(crate) enum HostTimer {
    /// A node's routing engine.
    Routing { node: NodeId },
    /// One side of a transport flow.
    Transport { flow: u32, side: Side },
}

/// `timer`'s number among the world's timers in a network of `nodes`: the
/// routing engines first, then each flow's two sides.
pub(crate) fn host_timer(nodes: usize, timer: HostTimer) -> TimerId {
    TimerId(match timer {
        HostTimer::Routing { node } => node,
        HostTimer::Transport { flow, side } => nodes as u32 + 2 * flow + side as u32,
    })
}
