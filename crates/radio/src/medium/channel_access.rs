//! DCF channel access of one node (ns-3 `ChannelAccessManager` with the
//! backoff state of `Txop`): DIFS/EIFS, the backoff countdown, the contention
//! window and the NAV.
//!
//! A [`ChannelAccess`] owns the backoff counter, the contention window, the
//! NAV and the pending access event. It is told whether the medium is busy
//! (physically or virtually) and whether its node wants to send, and
//! schedules an [`RadioEvent::Access`] when the node may.
//!
//! Backoff countdowns are never stepped slot by slot: when the medium goes
//! idle one access event is scheduled at `idle + IFS + slots·slot`; when it
//! goes busy before then the elapsed whole slots are subtracted (the
//! countdown freezes) and the event is invalidated by a generation counter.

use super::{NodeId, RadioEvent, Scheduler};
use meshbed_core::{Duration, Instant, StreamRng};
use rand::Rng;

/// What every node's channel access is told: slot, IFS and CW bounds.
pub(super) struct AccessParams {
    pub slot: Duration,
    pub difs: Duration,
    pub eifs: Duration,
    pub cw_min: u32,
    pub cw_max: u32,
}

pub(super) struct ChannelAccess {
    cw: u32,
    backoff_slots: u32,
    /// The medium as last seen by [`ChannelAccess::update`].
    busy: bool,
    idle_since: Instant,
    /// When the current countdown started (after the IFS).
    count_start: Instant,
    access_scheduled: bool,
    access_gen: u32,
    nav_until: Instant,
    nav_gen: u32,
    /// The last frame was received in error: wait EIFS instead of DIFS.
    use_eifs: bool,
    /// Backoff draws.
    rng: StreamRng,
}

impl ChannelAccess {
    pub fn new(cw_min: u32, rng: StreamRng) -> Self {
        ChannelAccess {
            cw: cw_min,
            backoff_slots: 0,
            busy: false,
            idle_since: Instant::ZERO,
            count_start: Instant::ZERO,
            access_scheduled: false,
            access_gen: 0,
            nav_until: Instant::ZERO,
            nav_gen: 0,
            use_eifs: false,
            rng,
        }
    }

    /// Draws a backoff uniformly from `0..=CW`.
    pub fn draw_backoff(&mut self) {
        self.backoff_slots = self.rng.gen_range(0..=self.cw);
    }

    /// A frame that finds the medium busy and no backoff pending starts a
    /// backoff (802.11-2016 §10.3.4.2); one that finds it idle long enough
    /// goes at once.
    pub fn backoff_if_none_pending(&mut self) {
        if self.backoff_slots == 0 && !self.access_scheduled {
            self.draw_backoff();
        }
    }

    /// Slots of backoff left (post-transmission backoff counts too).
    pub fn backoff_pending(&self) -> bool {
        self.backoff_slots > 0
    }

    /// After a success or a given-up packet.
    pub fn reset_cw(&mut self, params: &AccessParams) {
        self.cw = params.cw_min;
    }

    /// After a failed attempt: CW ← 2·CW + 1, capped.
    pub fn grow_cw(&mut self, params: &AccessParams) {
        self.cw = (2 * self.cw + 1).min(params.cw_max);
    }

    pub fn set_eifs(&mut self, use_eifs: bool) {
        self.use_eifs = use_eifs;
    }

    /// An access event fired: true if it is the current one, which ends the
    /// countdown.
    pub fn access_granted(&mut self, gen: u32) -> bool {
        if gen != self.access_gen || !self.access_scheduled {
            return false;
        }
        self.access_scheduled = false;
        self.backoff_slots = 0;
        true
    }

    /// Whether the NAV reserves the medium at `now`.
    pub fn nav_busy(&self, now: Instant) -> bool {
        self.nav_until > now
    }

    /// Sets the NAV to `now + nav` unless it already reaches further.
    pub fn set_nav(&mut self, node: NodeId, now: Instant, nav: Duration, sched: &mut impl Scheduler) {
        let until = now + nav;
        if until > self.nav_until {
            self.nav_until = until;
            self.nav_gen = self.nav_gen.wrapping_add(1);
            sched.schedule(until, RadioEvent::NavEnd { node, gen: self.nav_gen });
        }
    }

    /// A NAV-end event fired: true if no later NAV replaced it.
    pub fn nav_end_current(&self, gen: u32) -> bool {
        gen == self.nav_gen
    }

    /// Re-evaluates the medium: freezes the backoff when it turns busy,
    /// schedules access when it is idle and the node `wants` to send.
    pub fn update(
        &mut self,
        node: NodeId,
        now: Instant,
        busy: bool,
        wants: bool,
        params: &AccessParams,
        sched: &mut impl Scheduler,
    ) {
        let slot = params.slot;
        if busy {
            if !self.busy {
                self.busy = true;
                if self.access_scheduled {
                    let elapsed = now.saturating_since(self.count_start).as_nanos() / slot.as_nanos();
                    self.backoff_slots -= (elapsed as u32).min(self.backoff_slots);
                    self.access_scheduled = false;
                    self.access_gen = self.access_gen.wrapping_add(1);
                }
            }
            return;
        }
        if self.busy {
            self.busy = false;
            self.idle_since = now;
        }
        if wants && !self.access_scheduled {
            let ifs = if self.use_eifs { params.eifs } else { params.difs };
            self.count_start = (self.idle_since + ifs).max(now);
            let at = self.count_start + slot * self.backoff_slots as u64;
            self.access_gen = self.access_gen.wrapping_add(1);
            self.access_scheduled = true;
            sched.schedule(at, RadioEvent::Access { node, gen: self.access_gen });
        }
    }
}
