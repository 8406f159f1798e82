//! Frames on the air: what a transmitter puts in a frame, and the table that
//! keeps each frame alive until the last receiver has seen its end.

use super::{Addr, FrameId, NodeId, Payload};
use crate::phy;
use meshbed_core::Duration;

/// The four frame types of the DCF exchange.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FrameKind {
    Data,
    Ack,
    Rts,
    Cts,
}

/// One MAC frame as sent (what a capture sees of it: [`super::AirEvent`]).
#[derive(Clone, Debug)]
pub struct Frame<P> {
    pub kind: FrameKind,
    pub tx: NodeId,
    pub rx: Addr,
    /// NAV duration announced in the frame.
    pub nav: Duration,
    pub seq: u16,
    pub retry: bool,
    pub rate_kbps: u32,
    pub payload: Option<P>,
}

impl<P: Payload> Frame<P> {
    /// An ACK or CTS from `tx` to `to`: no sequence number, never a retry.
    pub(super) fn control(kind: FrameKind, tx: NodeId, to: NodeId, nav: Duration, rate_kbps: u32) -> Self {
        Frame { kind, tx, rx: Addr::Unicast(to), nav, seq: 0, retry: false, rate_kbps, payload: None }
    }

    pub fn mpdu_bytes(&self) -> u32 {
        match self.kind {
            FrameKind::Data => self.payload.as_ref().map_or(0, |p| p.msdu_bytes()) + phy::DATA_OVERHEAD_BYTES,
            FrameKind::Ack => phy::ACK_BYTES,
            FrameKind::Cts => phy::CTS_BYTES,
            FrameKind::Rts => phy::RTS_BYTES,
        }
    }
}

struct OnAir<P> {
    frame: Frame<P>,
    /// Outstanding references: one per scheduled RxEnd plus one for TxEnd.
    refs: u32,
}

/// Frames in flight, indexed by [`FrameId`]; freed ids are reused.
pub(super) struct FrameTable<P> {
    slots: Vec<Option<OnAir<P>>>,
    free: Vec<FrameId>,
}

impl<P> FrameTable<P> {
    pub fn new() -> Self {
        FrameTable { slots: Vec::new(), free: Vec::new() }
    }

    /// Stores `frame` until `refs` releases.
    pub fn insert(&mut self, frame: Frame<P>, refs: u32) -> FrameId {
        let entry = Some(OnAir { frame, refs });
        if let Some(id) = self.free.pop() {
            self.slots[id as usize] = entry;
            id
        } else {
            self.slots.push(entry);
            (self.slots.len() - 1) as FrameId
        }
    }

    /// Drops one reference (an arrival's end, or the sender's): called
    /// for every receiver of every frame, so always inline (as a plain
    /// `#[inline]` the release build still called it, 2% of the ATP
    /// paper's OLSR run).
    #[inline(always)]
    pub fn release(&mut self, id: FrameId) {
        let slot = &mut self.slots[id as usize];
        let f = slot.as_mut().expect("live frame");
        f.refs -= 1;
        if f.refs == 0 {
            *slot = None;
            self.free.push(id);
        }
    }

    pub fn get(&self, id: FrameId) -> &Frame<P> {
        &self.slots[id as usize].as_ref().expect("live frame").frame
    }
}
