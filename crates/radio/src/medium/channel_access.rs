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

use super::{NodeId, RadioEvent, RadioTimer, Scheduler};
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

/// In this order, with the random stream out of line: what every
/// arrival's carrier-sense update reads first, together.
#[repr(C)]
pub(super) struct ChannelAccess {
    /// The medium as last seen by [`ChannelAccess::update`].
    busy: bool,
    access_scheduled: bool,
    /// The last frame was received in error: wait EIFS instead of DIFS.
    use_eifs: bool,
    backoff_slots: u32,
    nav_until: Instant,
    idle_since: Instant,
    /// When the current countdown started (after the IFS).
    count_start: Instant,
    cw: u32,
    access_gen: u32,
    nav_gen: u32,
    /// Backoff draws.
    rng: Box<StreamRng>,
}

impl ChannelAccess {
    pub fn new(cw_min: u32, rng: StreamRng) -> Self {
        ChannelAccess {
            busy: false,
            access_scheduled: false,
            use_eifs: false,
            backoff_slots: 0,
            nav_until: Instant::ZERO,
            idle_since: Instant::ZERO,
            count_start: Instant::ZERO,
            cw: cw_min,
            access_gen: 0,
            nav_gen: 0,
            rng: Box::new(rng),
        }
    }

    /// Draws a backoff uniformly from `0..=CW`.
    #[inline]
    pub fn draw_backoff(&mut self) {
        self.backoff_slots = self.rng.gen_range(0..=self.cw);
    }

    /// A frame that finds the medium busy and no backoff pending starts a
    /// backoff (802.11-2016 §10.3.4.2); one that finds it idle long enough
    /// goes at once.
    #[inline]
    pub fn backoff_if_none_pending(&mut self) {
        if self.backoff_slots == 0 && !self.access_scheduled {
            self.draw_backoff();
        }
    }

    /// Slots of backoff left (post-transmission backoff counts too).
    #[inline]
    pub fn backoff_pending(&self) -> bool {
        self.backoff_slots > 0
    }

    /// After a success or a given-up packet.
    #[inline]
    pub fn reset_cw(&mut self, params: &AccessParams) {
        self.cw = params.cw_min;
    }

    /// After a failed attempt: CW ← 2·CW + 1, capped.
    #[inline]
    pub fn grow_cw(&mut self, params: &AccessParams) {
        self.cw = (2 * self.cw + 1).min(params.cw_max);
    }

    #[inline]
    pub fn set_eifs(&mut self, use_eifs: bool) {
        self.use_eifs = use_eifs;
    }

    /// An access event fired: true if it is the current one, which ends the
    /// countdown.
    #[inline]
    pub fn access_granted(&mut self, gen: u32) -> bool {
        if gen != self.access_gen || !self.access_scheduled {
            return false;
        }
        self.access_scheduled = false;
        self.backoff_slots = 0;
        true
    }

    /// The medium as the last [`ChannelAccess::update`] saw it: busy
    /// again, `update` changes nothing.
    #[inline]
    pub fn is_busy(&self) -> bool {
        self.busy
    }

    /// Whether the NAV reserves the medium at `now`.
    #[inline]
    pub fn nav_busy(&self, now: Instant) -> bool {
        self.nav_until > now
    }

    /// Sets the NAV to `now + nav` unless it already reaches further.
    pub fn set_nav(&mut self, node: NodeId, now: Instant, nav: Duration, sched: &mut impl Scheduler) {
        let until = now + nav;
        if until > self.nav_until {
            self.nav_until = until;
            self.nav_gen = self.nav_gen.wrapping_add(1);
            sched.set_timer(until, RadioEvent::NavEnd { node, gen: self.nav_gen });
        }
    }

    /// A NAV-end event fired: true if no later NAV replaced it.
    #[inline]
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
                    sched.cancel_timer(node, RadioTimer::Access);
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
            sched.set_timer(at, RadioEvent::Access { node, gen: self.access_gen });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use meshbed_core::{stream_rng, StreamId, StreamKind};

    #[derive(Default)]
    struct Record(Vec<(Instant, RadioEvent)>);
    impl Scheduler for Record {
        fn schedule(&mut self, at: Instant, event: RadioEvent) {
            self.0.push((at, event));
        }
    }

    fn params() -> AccessParams {
        let t = crate::Standard::A.timing();
        AccessParams { slot: t.slot, difs: t.difs(), eifs: t.difs() * 3, cw_min: t.cw_min, cw_max: t.cw_max }
    }

    fn us(x: u64) -> Instant {
        Instant::ZERO + Duration::from_micros(x)
    }

    /// A node with a backoff of at least `min_slots` (drawn, seeded).
    fn with_backoff(min_slots: u32) -> ChannelAccess {
        (0..)
            .map(|i| {
                let mut a = ChannelAccess::new(params().cw_min, stream_rng(i, StreamId::new(StreamKind::Mac, 0)));
                a.draw_backoff();
                a
            })
            .find(|a| a.backoff_slots >= min_slots)
            .expect("some seed draws it")
    }

    #[test]
    fn backoff_freezes_when_the_medium_turns_busy_and_resumes_after_difs() {
        let p = params();
        let mut a = with_backoff(5);
        let slots = a.backoff_slots;
        let mut s = Record::default();
        a.update(0, us(0), false, true, &p, &mut s);
        // Idle since 0: access at DIFS + slots·slot.
        let (at, ev) = s.0[0];
        assert_eq!(at, us(0) + p.difs + p.slot * slots as u64);
        let RadioEvent::Access { gen, .. } = ev else { panic!("{ev:?}") };
        // Busy 3.5 slots into the countdown: 3 whole slots are spent.
        let busy_at = us(0) + p.difs + p.slot * 3 + Duration::from_nanos(p.slot.as_nanos() / 2);
        a.update(0, busy_at, true, true, &p, &mut s);
        assert_eq!(a.backoff_slots, slots - 3);
        assert!(!a.access_granted(gen), "the frozen countdown's event is stale");
        // Idle again: the rest of the countdown after a fresh DIFS.
        let idle_at = busy_at + Duration::from_micros(100);
        a.update(0, idle_at, false, true, &p, &mut s);
        let (at, RadioEvent::Access { gen, .. }) = s.0[1] else { panic!() };
        assert_eq!(at, idle_at + p.difs + p.slot * (slots - 3) as u64);
        assert!(a.access_granted(gen));
        assert!(!a.backoff_pending());
    }

    #[test]
    fn eifs_replaces_difs_after_an_error() {
        let p = params();
        let mut a = ChannelAccess::new(p.cw_min, stream_rng(0, StreamId::new(StreamKind::Mac, 0)));
        let mut s = Record::default();
        a.set_eifs(true);
        a.update(0, us(0), false, true, &p, &mut s);
        assert_eq!(s.0[0].0, us(0) + p.eifs);
    }

    #[test]
    fn the_nav_only_grows_and_each_extension_supersedes_the_last_end() {
        let mut a = ChannelAccess::new(params().cw_min, stream_rng(0, StreamId::new(StreamKind::Mac, 0)));
        let mut s = Record::default();
        a.set_nav(0, us(0), Duration::from_micros(100), &mut s);
        a.set_nav(0, us(10), Duration::from_micros(50), &mut s);
        assert_eq!(s.0.len(), 1, "a shorter NAV is ignored");
        a.set_nav(0, us(20), Duration::from_micros(200), &mut s);
        let gens: Vec<u32> =
            s.0.iter()
                .map(|(_, e)| match e {
                    RadioEvent::NavEnd { gen, .. } => *gen,
                    e => panic!("{e:?}"),
                })
                .collect();
        assert!(!a.nav_end_current(gens[0]) && a.nav_end_current(gens[1]));
        assert!(a.nav_busy(us(219)) && !a.nav_busy(us(220)));
    }

    #[test]
    fn the_contention_window_doubles_to_its_cap_and_resets() {
        let p = params();
        let mut a = ChannelAccess::new(p.cw_min, stream_rng(0, StreamId::new(StreamKind::Mac, 0)));
        let mut seen = vec![a.cw];
        for _ in 0..8 {
            a.grow_cw(&p);
            seen.push(a.cw);
        }
        assert_eq!(seen, vec![15, 31, 63, 127, 255, 511, 1023, 1023, 1023]);
        a.reset_cw(&p);
        assert_eq!(a.cw, p.cw_min);
    }
}
